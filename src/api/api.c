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

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *route_methods[64];
static const char *route_patterns[64];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (size_t i = 0; i < api_nroutes && i < 64; i++) {
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

int api_authorize(api_req *r, int action, const char *tenant_id, const char *project_id) {
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
        .actor = r->who ? r->who->name : "anonymous",
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

json_t *api_list(json_t *items, const char *next) {
    return json_pack("{s:o,s:o}", "items", items, "next", next ? json_string(next) : json_null());
}

/* Audit an outcome the handler did not record itself, in its own transaction. */
static void audit_outcome(api_req *r) {
    const char *result;
    if (r->status == 401 || r->status == 403 || r->status == 404) result = "denied";
    else if (r->status >= 400) result = "error";
    else result = "ok";
    if (!(r->route->flags & ROUTE_MUTATES) && strcmp(result, "denied") != 0) return;
    /* summary: the error code only, never the request body (it may hold secrets) */
    char summary[160] = "{}";
    json_t *e = r->resp ? json_object_get(json_object_get(r->resp, "error"), "code") : NULL;
    if (e && json_is_string(e))
        snprintf(summary, sizeof summary, "{\"error\":\"%.100s\"}", json_string_value(e));
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
    if (!(r->route->flags & ROUTE_PUBLIC)) {
        gp_err err = GP_ERR_INIT;
        int rc = auth_authenticate(r->store, r->authorization, &r->who, &err);
        if (rc) {
            if (rc == GP_EUNAUTH) api_error(r, 401, "unauthenticated", err.msg);
            else api_fail(r, &err);
            audit_outcome(r);
            return;
        }
    }
    r->route->handler(r);
    if (!r->status) {
        gp_err err;
        gp_err_set(&err, GP_EINTERNAL, "handler set no response");
        api_fail(r, &err);
    }
    if (!(r->route->flags & ROUTE_PUBLIC) && !r->audited) audit_outcome(r);
}

void api__req_release(api_req *r) {
    free(r->path);
    free(r->authorization);
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
