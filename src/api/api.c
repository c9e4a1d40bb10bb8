/*
 * api.c - request dispatch and the helpers handlers share (see api_int.h).
 *
 * Nothing here knows about libmicrohttpd: http.c fills an api_req from the
 * connection and sends what dispatch leaves in it, so dispatch can be driven
 * directly by unit tests.
 */
#include "api_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../core/strbuf.h"
#include "../policy/policy.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUTES 256
static const char *route_methods[MAX_ROUTES];
static const char *route_patterns[MAX_ROUTES];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    assert(api_nroutes <= MAX_ROUTES);
    for (size_t i = 0; i < api_nroutes && i < MAX_ROUTES; i++) {
        route_methods[i] = api_routes[i].method;
        route_patterns[i] = api_routes[i].pattern;
    }
}

int api_status_for(int code) {
    switch (code) {
    case GP_OK: return 200;
    case GP_EINVALID:
    case GP_EBADJSON: return 400;
    case GP_EUNAUTH: return 401;
    case GP_EFORBIDDEN: return 403;
    case GP_ENOTFOUND: return 404;
    case GP_EMETHOD: return 405;
    case GP_ECONFLICT: return 409;
    case GP_ETOOLARGE: return 413;
    case GP_EUNSUPPORTED: return 501;
    case GP_EBUSY: return 503;
    default: return 500;
    }
}

void api_reply(api_req *r, int status, json_t *body) {
    json_decref(r->resp);
    free(r->resp_text);
    r->resp_text = NULL;
    r->resp = body;
    r->status = status;
    r->content_type = "application/json";
}

void api_reply_text(api_req *r, int status, const char *ct, const char *text) {
    json_decref(r->resp);
    r->resp = NULL;
    free(r->resp_text);
    r->resp_text = strdup(text);
    r->status = status;
    r->content_type = ct;
}

void api_reply_text_take(api_req *r, int status, const char *ct, char *text) {
    json_decref(r->resp);
    r->resp = NULL;
    free(r->resp_text);
    r->resp_text = text ? text : strdup("");
    r->status = status;
    r->content_type = ct;
}

void api_error(api_req *r, int status, const char *code, const char *message) {
    api_reply(r, status, json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message));
}

void api_fail(api_req *r, const gp_err *err) {
    int status = api_status_for(err->code);
    if (status >= 500) {
        /* details go to the log, keyed by request id; the client gets a generic text */
        log_kv(LOG_ERROR, "request failed", "rid", r->request_id, "code", gp_err_name(err->code),
               "detail", err->msg, (char *)NULL);
        char msg[128];
        snprintf(msg, sizeof msg, "%s (request %s)", gp_err_default_msg(err->code),
                 r->request_id);
        api_error(r, status, gp_err_name(err->code), msg);
        return;
    }
    api_error(r, status, gp_err_name(err->code),
              err->msg[0] ? err->msg : gp_err_default_msg(err->code));
}

const char *api_param(api_req *r, const char *name) { return router_param(&r->match, name); }

const char *api_query(api_req *r, const char *name) {
    for (int i = 0; i < r->nquery; i++)
        if (strcmp(r->query[i].key, name) == 0) return r->query[i].value;
    return NULL;
}

int api_body(api_req *r, json_t **out) {
    gp_err err = GP_ERR_INIT;
    *out = NULL;
    if (!r->body || r->body_len == 0) {
        api_error(r, 400, "invalid_argument", "request body must be a JSON object");
        return -1;
    }
    if (jx_parse(r->body, r->body_len, r->cfg->max_depth, 1, out, &err)) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

static int api_authorize(api_req *r, int action, const char *tenant_id, const char *project_id) {
    authz_target t = {tenant_id, project_id};
    authz_decision d = authz_check(r->who->bindings, r->who->nbindings, (authz_action)action, &t,
                                   gt_now_us());
    if (d == AUTHZ_ALLOW) return 1;
    if (d == AUTHZ_DENY)
        api_error(r, 403, "forbidden", "your role does not allow this action here");
    else
        api_error(r, 404, "not_found", "not found");
    return 0;
}

int api_allow(api_ctx *c, int action, const char *tenant_id, const char *project_id,
              gp_err *err) {
    authz_target t = {tenant_id, project_id};
    authz_decision d = authz_check(c->who->bindings, c->who->nbindings, (authz_action)action, &t,
                                   gt_now_us());
    if (d == AUTHZ_ALLOW) return GP_OK;
    if (d == AUTHZ_DENY)
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    return gp_err_set(err, GP_ENOTFOUND, "not found");
}

int api_decided(int decision, gp_err *err) {
    if (decision == AUTHZ_ALLOW) return GP_OK;
    if (decision == AUTHZ_DENY)
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    return gp_err_set(err, GP_ENOTFOUND, "not found");
}

void api_target(api_req *r, const char *type, const char *id, const char *tenant,
                const char *project) {
    if (type) r->a_type = type;
    if (id) snprintf(r->a_id, sizeof r->a_id, "%s", id);
    if (tenant) snprintf(r->a_tenant, sizeof r->a_tenant, "%s", tenant);
    if (project) snprintf(r->a_project, sizeof r->a_project, "%s", project);
}

int api_audit(api_req *r, store_tx *tx, const char *result, int status, const char *summary,
              gp_err *err) {
    audit_event ev = {
        .actor = r->who ? r->who->name : r->actor[0] ? r->actor : "anonymous",
        .on_behalf = r->on_behalf,
        .source = r->source,
        .request_id = r->request_id,
        .action = r->route ? r->route->action : "http.unrouted",
        .target_type = r->a_type,
        .target_id = r->a_id,
        .tenant = r->a_tenant,
        .project = r->a_project,
        .result = result,
        .status = status,
        .summary = summary,
    };
    int rc = audit_append(tx, &ev, NULL, err);
    if (rc == GP_OK) r->audited = 1;
    return rc;
}

static int api_begin(api_req *r, int mode, store_tx **tx) {
    gp_err err = GP_ERR_INIT;
    if (store_begin(r->store, mode, tx, &err)) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

static int api_commit(api_req *r, store_tx *tx) {
    gp_err err = GP_ERR_INIT;
    if (store_commit(tx, &err)) {
        r->audited = 0; /* the event rolled back with the change */
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

static int api_abort(api_req *r, store_tx *tx, const gp_err *err) {
    store_rollback(tx);
    r->audited = 0;
    api_fail(r, err);
    return -1;
}

int api_query_int(api_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out) {
    const char *v = api_query(r, name);
    if (!v) return 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "query parameter '%s' must be an integer in [%lld, %lld]", name,
                 (long long)lo, (long long)hi);
        api_error(r, 400, "invalid_argument", msg);
        return -1;
    }
    *out = x;
    return 0;
}

/*
 * Approvals arm when a second security-admin exists (docs/governance.md,
 * bootstrap rule): count the distinct live, enabled security-admins, and
 * once there are two or more write "approvals_armed" (for good).  Counting
 * everyone, not "anyone but the requester", matters: with one security-admin
 * a request by somebody else (a tenant-admin's audit export) must not arm
 * approvals that nobody could then ever approve for that one.
 */
/* The live security-admins and whether approvals are armed, as api__approvals_arm reads
 * them (STORE_COLS; the parameter: now). */
#define ARM_COLUMNS(X)                                                                    \
    X(AR_ADMINS, "(SELECT COUNT(DISTINCT b.user_id) FROM role_bindings b"                 \
                 "  JOIN users u ON u.id = b.user_id WHERE b.role = 'security-admin'"     \
                 "  AND b.scope = 'global' AND u.disabled = 0"                            \
                 "  AND (b.expires_at IS NULL OR b.expires_at > ?))")                     \
    X(AR_ARMED, "(SELECT COUNT(*) FROM security_policy WHERE key = 'approvals_armed')")
enum { ARM_COLUMNS(STORE_COL_ENUM) AR__N };

int api__approvals_arm(store_tx *tx, int *armed, gp_err *err) {
    store_stmt *s;
    int total = 0;
    *armed = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ARM_COLUMNS),
                         "i", gt_now_us());
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        total = (int)store_int(s, AR_ADMINS);
        *armed = (int)store_int(s, AR_ARMED) > 0;
    }
    store_done(s);
    if (rc < 0) return rc;
    if (total >= 2 && !*armed) {
        *armed = 1;
        return store_exec(tx, NULL, err,
                          "INSERT INTO security_policy (key, value) VALUES ('approvals_armed', '1')",
                          "");
    }
    return GP_OK;
}

/*
 * Approvers other than the requester: live security-admins.  Until a second
 * one has ever existed ("armed" in the policy table), a sensitive operation
 * cannot be approved by anybody but the one; it then goes ahead and the audit
 * event says the approval was waived.  Once armed, never again.
 */
static int approvers_state(store_tx *tx, const char *requester_id, int *others, int *armed,
                           gp_err *err) {
    store_stmt *s;
    int rc = api__approvals_arm(tx, armed, err);
    if (rc) return rc;
    rc = store_query(tx, &s, err,
                     "SELECT COUNT(DISTINCT b.user_id) FROM role_bindings b"
                     " JOIN users u ON u.id = b.user_id WHERE b.role = 'security-admin'"
                     " AND b.user_id <> ? AND u.disabled = 0"
                     " AND (b.expires_at IS NULL OR b.expires_at > ?)",
                     "si", requester_id, gt_now_us());
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) *others = (int)store_int(s, 0);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int api_needs_approval(api_req *r, const char *operation, const char *tenant, json_t *summary) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    policy pol;
    int others = 0, armed = 0;
    if (r->approval_id) return 0;
    if (api_begin(r, STORE_WRITE, &tx)) return -1;
    if (policy_load(tx, &pol, &err)) return api_abort(r, tx, &err);
    int sensitive = policy_is_sensitive(&pol, operation);
    int64_t ttl = pol.approval_ttl_s;
    policy_release(&pol);
    if (!sensitive) {
        store_rollback(tx);
        return 0;
    }
    if (approvers_state(tx, r->who->user_id, &others, &armed, &err))
        return api_abort(r, tx, &err);
    if (!armed) {
        /* nobody else could ever approve yet: go ahead, and say so in the audit */
        if (api_commit(r, tx)) return -1;
        snprintf(r->approval_note, sizeof r->approval_note,
                 "waived: no second security-admin has existed yet");
        return 0;
    }
    json_t *q = json_array();
    for (int i = 0; i < r->nquery; i++)
        json_array_append_new(q, json_pack("[s,s]", r->query[i].key, r->query[i].value));
    char *qtext = jx_dump(q), *stext = summary ? jx_dump(summary) : NULL;
    json_decref(q);
    char id[RND_ID_LEN];
    strbuf body = SB_INIT;
    if (r->body) sb_add(&body, r->body, r->body_len);
    int rc = approval_create(tx, operation, r->who->user_id, tenant, r->method, r->path, qtext,
                             body.buf, stext ? stext : "{}", ttl, id, &err);
    sb_release(&body);
    free(qtext);
    if (!rc) {
        char *sum = NULL;
        json_t *s = json_pack("{s:s,s:s,s:O?}", "approval", id, "operation", operation, "change",
                              summary);
        sum = jx_dump(s);
        json_decref(s);
        rc = api_audit(r, tx, "ok", 202, sum ? sum : "{}", &err);
        free(sum);
    }
    free(stext);
    if (rc) return api_abort(r, tx, &err);
    approval a;
    rc = approval_get(tx, id, &a, &err);
    if (rc) return api_abort(r, tx, &err);
    if (api_commit(r, tx)) {
        approval_release(&a);
        return -1;
    }
    json_t *o = approval_json(&a, 0);
    approval_release(&a);
    json_object_set_new(o, "message",
                        json_string(others ? "this operation needs a second person's approval"
                                           : "this operation needs a second person's approval; "
                                             "no other security-admin can approve it now"));
    api_reply(r, 202, o);
    return 1;
}

json_t *api_list(json_t *items, const char *next) {
    return json_pack("{s:o,s:o}", "items", items, "next", next ? json_string(next) : json_null());
}

/*
 * Refusals of callers without a valid identity are audited at most
 * ANON_AUDIT_PER_MIN times a minute per server process: a flood of forged
 * tokens must not fill the audit trail nor take the store's write lock for
 * each guess.  Every one is still counted in /metrics
 * (gpupool_auth_refusals_total); the first audited after a suppression says
 * how many went unaudited ("unaudited_before").  Process-wide on purpose:
 * it bounds what one process writes, whoever sends.
 */
#define ANON_AUDIT_PER_MIN 60
static api_ratelog anon_audit = API_RATELOG_INIT_WINDOW(60 * 1000000LL);

/* Append the request's event in a transaction of its own (the change, if any, rolled back). */
static void audit_in_own_tx(api_req *r, const char *result, const char *summary) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    if (store_begin(r->store, STORE_WRITE, &tx, &err) == GP_OK) {
        if (api_audit(r, tx, result, r->status, summary, &err) == GP_OK &&
            store_commit(tx, &err) == GP_OK)
            return;
        store_rollback(tx);
    }
    log_kv(LOG_ERROR, "audit write failed", "rid", r->request_id, "detail", err.msg, (char *)NULL);
}

/* Audit an outcome the handler did not record itself, in its own transaction. */
static void audit_outcome(api_req *r) {
    const char *result;
    json_t *code = r->resp ? json_object_get(json_object_get(r->resp, "error"), "code") : NULL;
    if (r->status == 401 || r->status == 403 || r->status == 404) result = "denied";
    else if (r->status == 429 && json_is_string(code) &&
             strcmp(json_string_value(code), "too_many_attempts") == 0)
        result = "denied"; /* a throttled login */
    else if (r->status >= 400) result = "error";
    else result = "ok";
    int vendor = r->who && authz_holds(r->who->bindings, r->who->nbindings, ROLE_VENDOR, 0);
    if (!(r->route->flags & ROUTE_MUTATES) && strcmp(result, "denied") != 0 && !vendor) return;
    /* summary: the error code only, never the request body (it may hold secrets) */
    long unaudited = 0;
    if (r->fail_summary) {
        /* the handler said what it refused (its own words, never the body) */
        audit_in_own_tx(r, result, r->fail_summary);
        return;
    }
    if (!r->who && r->status == 401 &&
        !api__ratelog_take(&anon_audit, ANON_AUDIT_PER_MIN, gt_mono_us(), &unaudited))
        return;
    char summary[200] = "{}";
    json_t *e = r->resp ? json_object_get(json_object_get(r->resp, "error"), "code") : NULL;
    if (e && json_is_string(e) && unaudited)
        snprintf(summary, sizeof summary, "{\"error\":\"%.100s\",\"unaudited_before\":%ld}",
                 json_string_value(e), unaudited);
    else if (e && json_is_string(e))
        snprintf(summary, sizeof summary, "{\"error\":\"%.100s\"}", json_string_value(e));
    audit_in_own_tx(r, result, summary);
}

/*
 * The pipeline of a declared route, in one place (issue 34): open the
 * route's transaction, resolve and authorise its scope (tying the
 * transaction to the tenant), parse the body, run the handler, append the
 * audit event of a change in the same transaction, commit, then the
 * handler's after-commit step.  Every failure rolls back here: handlers
 * hold no transaction, scope or audit code.
 *
 * A route runs in up to three passes of that pipeline: its `prepare` step
 * (a read transaction: the slow work that must not hold the write lock),
 * a dry run (a sensitive route: rolled back, then filed for approval), and
 * the real one.  Each pass resolves and authorises afresh, so a role
 * revoked between them counts.
 */
enum { PASS_PREPARE, PASS_DRY, PASS_REAL };
typedef struct pass {
    int mode;
    /* the prepare pass's result, lent to the later passes (pass_release frees it) */
    void *prep;
    void (*prep_free)(void *prep);
    /* a dry run's: the change's summary, the approval's tenant ("" none), whether this change
     * is not the sensitive one, and the body the approval keeps (NULL: the request's) */
    json_t *summary;
    char tenant[64];
    int plain;
    json_t *approval_body;
} pass;

static void pass_release(pass *p) {
    if (p->prep && p->prep_free) p->prep_free(p->prep);
    json_decref(p->summary);
    json_decref(p->approval_body);
    memset(p, 0, sizeof *p);
}

static int run_pipeline(api_req *r, pass *p);
static int load_scope(api_req *r, store_tx *tx, api_scope *sc, int action, int span);

/* File a sensitive request for approval: the body the dry run says the approval keeps, if
 * any, in place of the one sent.  1 filed (202), 0 go ahead, -1 answered with an error. */
static int file_approval(api_req *r, const pass *p) {
    const char *body = r->body;
    size_t len = r->body_len;
    char *kept = NULL;
    if (p->approval_body) {
        if (!(kept = jx_dump(p->approval_body))) {
            api_error(r, 500, "internal", "out of memory");
            return -1;
        }
        r->body = kept;
        r->body_len = strlen(kept);
    }
    int pending = api_needs_approval(r, r->route->sensitive, p->tenant[0] ? p->tenant : NULL,
                                     p->summary);
    r->body = body;
    r->body_len = len;
    free(kept);
    return pending;
}

static void run_declared(api_req *r) {
    const api_route *rt = r->route;
    pass p = {.mode = PASS_PREPARE};
    if (rt->prepare && run_pipeline(r, &p)) goto out;
    if (rt->sensitive && !r->approval_id) {
        /* a sensitive change: validated by a dry run, then filed for approval, or (approvals
         * not armed yet, or the policy does not list it) carried out */
        p.mode = PASS_DRY;
        if (run_pipeline(r, &p)) goto out;
        if (!p.plain && file_approval(r, &p)) goto out; /* 202 with the approval, or an error */
    }
    p.mode = PASS_REAL;
    run_pipeline(r, &p);
out:
    pass_release(&p);
}

/* One pass of the pipeline (p->mode); a prepare pass or a dry run rolls back whatever
 * happened and hands its results on in `p`.  0 when the handler succeeded. */
static int run_pipeline(api_req *r, pass *p) {
    const api_route *rt = r->route;
    int dry_run = p->mode == PASS_DRY, prepare = p->mode == PASS_PREPARE;
    api_ctx c = {.r = r, .who = r->who, .dry_run = dry_run, .prep = p->prep};
    gp_err err = GP_ERR_INIT;
    int rc = GP_OK, ok = 0;
    assert(rt->run && rt->scope != SC_NONE);
    assert(!dry_run || rt->tx == API_TX_WRITE);
    assert(!prepare || rt->prepare);
    assert(rt->tx || (rt->scope != SC_TENANT && rt->scope != SC_PROJECT &&
                      rt->scope != SC_TENANT_SPAN));
    if (rt->scope == SC_GLOBAL && !api_authorize(r, rt->act, NULL, NULL)) goto out;
    int mode = rt->tx == API_TX_WRITE && !prepare ? STORE_WRITE : STORE_READ;
    if (rt->tx && (rc = store_begin(r->store, mode, &c.tx, &err))) goto out;
    if ((rt->scope == SC_TENANT || rt->scope == SC_PROJECT || rt->scope == SC_TENANT_SPAN) &&
        load_scope(r, c.tx, &c.sc, rt->act, rt->scope == SC_TENANT_SPAN))
        goto out;
    if ((rt->flags & ROUTE_BODY) && (!(rt->flags & ROUTE_BODY_OPTIONAL) || r->body_len) &&
        api_body(r, &c.body))
        goto out;
    /* the body as docs/openapi.json declares it, before the handler reads it (an approved
     * request's body was checked when it was filed, and is what its approval kept: a
     * password only as its hash) */
    if (c.body && !r->approval_id && (rc = api_schema_route_check(rt, c.body, &err))) goto out;
    if (prepare) {
        rc = rt->prepare(&c, &err);
        /* what it made is the request's now, whatever the outcome */
        p->prep = c.prep;
        p->prep_free = c.prep_free;
        if (rc) goto out;
        ok = 1;
        goto out; /* a read: rolled back below */
    }
    if ((rc = rt->run(&c, &err))) goto out;
    if (dry_run) {
        ok = 1;
        if (!c.approval_tenant[0] && c.sc.t.name[0])
            snprintf(c.approval_tenant, sizeof c.approval_tenant, "%s", c.sc.t.name);
        snprintf(p->tenant, sizeof p->tenant, "%s", c.approval_tenant);
        p->plain = c.not_sensitive;
        p->summary = c.summary;
        c.summary = NULL;
        p->approval_body = c.approval_body;
        c.approval_body = NULL;
        goto out; /* rolled back below */
    }
    if ((rt->flags & ROUTE_MUTATES) && c.tx) {
        if (r->approval_id || r->approval_note[0]) {
            if (!c.summary) c.summary = json_object();
            json_object_set_new(c.summary, "approval",
                                json_string(r->approval_id ? r->approval_id : r->approval_note));
        }
        /* a handler may answer a refusal and still commit what it recorded (a failed
         * login's count): the event says what was answered */
        const char *result = r->status == 401 || r->status == 403 || r->status == 404 ||
                                     r->status == 429
                                 ? "denied"
                             : r->status >= 400 ? "error"
                                                : "ok";
        char *text = c.summary ? jx_dump(c.summary) : NULL;
        rc = api_audit(r, c.tx, result, r->status, text ? text : "{}", &err);
        free(text);
        if (rc) goto out;
    }
    if (c.tx) {
        rc = store_commit(c.tx, &err);
        c.tx = NULL;
        if (rc) goto out;
    }
    if (c.on_commit) c.on_commit(r);
    if (c.after && (rc = c.after(&c, &err))) goto out;
    ok = 1;
out:
    if (c.tx) store_rollback(c.tx);

    if (rc) {
        r->audited = 0; /* an event rolled back with the change */
        if (err.code == GP_OK) gp_err_set(&err, GP_EINTERNAL, "handler failed without a reason");
        if (r->status < 400) api_fail(r, &err); /* a reply set before the failure is void */
        if (c.summary && !dry_run) {
            free(r->fail_summary);
            r->fail_summary = jx_dump(c.summary);
        }
    }
    json_decref(c.body);
    json_decref(c.summary);
    json_decref(c.after_arg);
    json_decref(c.approval_body);
    return ok ? 0 : -1;
}

void api__dispatch(api_req *r) {
    router_match *m = &r->match;
    pthread_once(&tables_once, build_tables);
    int i = router_find(route_methods, route_patterns, api_nroutes, r->method, r->path, m);
    if (i < 0) {
        if (m->path_matched) {
            /* tell the client which methods this path does take */
            static const char *const all[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
            router_match probe;
            size_t at = 0;
            for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
                if (router_find(route_methods, route_patterns, api_nroutes, all[k], r->path,
                                &probe) < 0)
                    continue;
                at += (size_t)snprintf(r->allow_buf + at, sizeof r->allow_buf - at, "%s%s",
                                       at ? ", " : "", all[k]);
            }
            r->allow = r->allow_buf;
            api_error(r, 405, "method_not_allowed", "method not allowed on this path");
        } else {
            api_error(r, 404, "not_found", "no such endpoint");
        }
        return;
    }
    r->route = &api_routes[i];
    if (r->cfg && r->cfg->gateway_only && !(r->route->flags & ROUTE_GATEWAY)) {
        api_error(r, 404, "not_found", "this is a gateway: only /v1 is served here");
        return;
    }
    if (!r->gw && (r->route->flags & ROUTE_GATEWAY) && !strncmp(r->route->pattern, "/v1/", 4)) {
        api_error(r, 404, "not_found", "this server does not serve the gateway");
        return;
    }
    /* a preset principal is the requester of an approved request (h_approval.c) */
    if (!(r->route->flags & ROUTE_PUBLIC) && !r->who) {
        gp_err err = GP_ERR_INIT;
        int rc = auth_authenticate(r->store, r->authorization, &r->who, &err);
        if (rc) {
            if (rc == GP_EUNAUTH) api_error(r, 401, "unauthenticated", err.msg);
            else api_fail(r, &err);
            audit_outcome(r);
            return;
        }
    }
    if (r->route->run) run_declared(r);
    else r->route->handler(r);
    /* deferred (a read: nothing to audit): its answer is made, and sent, elsewhere */
    assert(!r->deferred || !(r->route->flags & ROUTE_MUTATES));
    if (r->deferred) return;
    if (!r->status) {
        gp_err err;
        gp_err_set(&err, GP_EINTERNAL, "handler set no response");
        api_fail(r, &err);
    }
    if (!r->audited && (!(r->route->flags & ROUTE_PUBLIC) || (r->route->flags & ROUTE_MUTATES)))
        audit_outcome(r);
}

void api_header(api_req *r, const char *name, const char *value) {
    if (r->nheaders >= (int)(sizeof r->headers / sizeof r->headers[0])) return;
    r->headers[r->nheaders].key = strdup(name);
    r->headers[r->nheaders].value = strdup(value);
    r->nheaders++;
}

int api_defer(api_req *r) {
    if (!r->resume) return 0;
    r->deferred = 1;
    return 1;
}

void api_resume(api_req *r) {
    assert(r->deferred && r->resume);
    r->resume(r);
}

void api_stream(api_req *r, int status, const char *content_type,
                long (*read)(void *cls, char *buf, size_t max), void (*release)(void *cls),
                void *cls) {
    json_decref(r->resp);
    r->resp = NULL;
    free(r->resp_text);
    r->resp_text = NULL;
    r->status = status;
    r->content_type = content_type;
    r->stream_read = read;
    r->stream_free = release;
    r->stream_cls = cls;
}

void api__req_release(api_req *r) {
    for (int i = 0; i < r->nheaders; i++) {
        free(r->headers[i].key);
        free(r->headers[i].value);
    }
    /* a stream never handed to the server (e.g. the reply could not be queued) */
    if (r->stream_free) r->stream_free(r->stream_cls);
    free(r->path);
    free(r->authorization);
    free(r->fail_summary);
    for (int i = 0; i < r->nquery; i++) {
        free(r->query[i].key);
        free(r->query[i].value);
    }
    free(r->query);
    auth_principal_free(r->who);
    json_decref(r->resp);
    free(r->resp_text);
    memset(r, 0, sizeof *r);
}

/*
 * Resolve the path's {tenant} (and {project} when the route has one) and
 * authorise `action` there: 0, or -1 with the response set (404 for a tenant
 * or project that does not exist or that the caller cannot see, 403 for a
 * role that does not allow the action).  API_ACT_VISIBLE (or API_ACT_NONE
 * outside a span): the scope need only be visible to the caller
 * (authz_visible; a list the handler filters); API_ACT_NONE on a span
 * (SC_TENANT_SPAN): only that the tenant exists, the handler deciding per
 * object.  Records the names for the audit and ties `tx` to the tenant.
 */
static int load_scope(api_req *r, store_tx *tx, api_scope *sc, int action, int span) {
    gp_err err = GP_ERR_INIT;
    const char *tn = api_param(r, "tenant"), *pn = api_param(r, "project");
    memset(sc, 0, sizeof *sc);
    api_target(r, NULL, NULL, tn, pn);
    int rc = tenancy_tenant_find(tx, tn, &sc->t, &err);
    if (!rc && pn) rc = tenancy_project_find(tx, &sc->t, pn, &sc->p, &err);
    if (rc == GP_ENOTFOUND) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    sc->has_project = pn != NULL;
    if (action == API_ACT_VISIBLE || (action == API_ACT_NONE && !span)) {
        /* no one action: the scope need only be visible (a list that shows each caller
         * what it may read there, the handler filtering) */
        authz_target tg = {sc->t.id, pn ? sc->p.id : NULL};
        if (!authz_visible(r->who->bindings, r->who->nbindings, &tg, gt_now_us())) {
            api_error(r, 404, "not_found", "not found");
            return -1;
        }
    } else if (action >= 0 && !api_authorize(r, action, sc->t.id, pn ? sc->p.id : NULL)) {
        return -1;
    }
    /* authorised in this tenant: the rest of the transaction sees its rows only */
    if (store_set_tenant(tx, sc->t.id, &err)) {
        api_fail(r, &err);
        return -1;
    }
    snprintf(r->tied_tenant, sizeof r->tied_tenant, "%s", sc->t.id);
    return 0;
}
