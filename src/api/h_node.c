/*
 * h_node.c - join tokens, the agent's register/heartbeat calls, nodes, GPUs,
 * the health policy and alarms.
 *
 * Readers: platform-, security-admins and ops-engineers see every node and
 * GPU; a vendor sees the nodes its live grants name (and their GPUs), nothing
 * else; tenant roles see no node at all (403 on lists, 404 on objects).
 * Changes (cordon, drain, modes, health policy, alarm acks, join tokens) are
 * ops-engineers'; moving a node between pools is a platform-admin's.
 * Every state transition is audited with its cause.
 */
#include "api_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../inventory/inventory.h"
#include "../inventory/telemetry.h"
#include "../sched/jobs.h"
#include "../sched/loop.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

/*
 * What may the caller read?  1 with *nodes NULL: everything; 1 with *nodes
 * an array: a vendor's nodes; 0: nothing (no response set).
 */
static int read_scope(api_req *r, store_tx *tx, json_t **nodes) {
    gp_err err = GP_ERR_INIT;
    authz_target g = {NULL, NULL};
    int64_t now = gt_now_us();
    *nodes = NULL;
    if (authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &g, now) == AUTHZ_ALLOW)
        return 1;
    if (!authz_holds(r->who->bindings, r->who->nbindings, ROLE_VENDOR, now)) return 0;
    json_t *wos = NULL;
    if (auth_vendor_scope(tx, r->who->user_id, nodes, &wos, &err)) return 0;
    json_decref(wos);
    return 1;
}

static int name_listed(json_t *names, const char *n) {
    size_t i;
    json_t *v;
    if (!names) return 1;
    json_array_foreach(names, i, v) if (strcmp(json_string_value(v), n) == 0) return 1;
    return 0;
}

/* Audit each transition as its own event, in `tx`. */
static int audit_transitions(api_req *r, store_tx *tx, const inv_transition *t, int n,
                             gp_err *err) {
    for (int i = 0; i < n; i++) {
        json_t *sum = json_pack("{s:s,s:s,s:s,s:s}", "kind", t[i].kind, "from", t[i].from, "to",
                                t[i].to, "cause", t[i].cause);
        char *text = jx_dump(sum);
        json_decref(sum);
        audit_event ev = {.actor = r->who ? r->who->name : "system",
                          .source = r->source,
                          .request_id = r->request_id,
                          .action = t[i].gpu_uuid[0] ? "gpu.transition" : "node.transition",
                          .target_type = t[i].gpu_uuid[0] ? "gpu" : "node",
                          .target_id = t[i].gpu_uuid[0] ? t[i].gpu_uuid : t[i].node,
                          .result = "ok",
                          .summary = text};
        int rc = audit_append(tx, &ev, NULL, err);
        free(text);
        if (rc) return rc;
    }
    return GP_OK;
}

/*
 * Contain the damage of bad transitions: a lost node or a failed GPU ends the
 * bindings of the jobs on it (requeued or failed per their policy), audited
 * with the jobs and tenants hit.
 */
static int contain(api_req *r, store_tx *tx, const inv_transition *t, int n, gp_err *err) {
    for (int i = 0; i < n; i++) {
        int lost = !strcmp(t[i].kind, "node") && !strcmp(t[i].to, "unreachable");
        int failed = !strcmp(t[i].kind, "health") && !strcmp(t[i].to, "failed");
        if (!lost && !failed) continue;
        json_t *hit;
        int rc = jobs_contain(tx, lost ? t[i].node : NULL, failed ? t[i].gpu_uuid : NULL,
                              lost ? "node_lost" : "gpu_failed", &hit, err);
        if (rc) return rc;
        if (json_array_size(hit)) {
            json_t *sum = json_pack("{s:s,s:s,s:o}", "node", t[i].node, "gpu", t[i].gpu_uuid,
                                    "jobs", hit);
            char *text = jx_dump(sum);
            json_decref(sum);
            audit_event ev = {.actor = r->who ? r->who->name : "system",
                              .source = r->source,
                              .request_id = r->request_id,
                              .action = lost ? "node.contain" : "gpu.contain",
                              .target_type = lost ? "node" : "gpu",
                              .target_id = lost ? t[i].node : t[i].gpu_uuid,
                              .result = "ok",
                              .summary = text};
            rc = audit_append(tx, &ev, NULL, err);
            free(text);
            if (rc) return rc;
        } else {
            json_decref(hit);
        }
    }
    return GP_OK;
}

/* Audit each interference alarm; a stopped offender frees capacity (*ended). */
static int audit_interference(api_req *r, store_tx *tx, json_t *events, int *ended, gp_err *err) {
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        char *text = jx_dump(e);
        audit_event ev = {.actor = r->who ? r->who->name : "system",
                          .source = r->source,
                          .request_id = r->request_id,
                          .action = "gpu.interference",
                          .target_type = "gpu",
                          .target_id = json_string_value(json_object_get(e, "gpu")),
                          .result = "ok",
                          .summary = text};
        int rc = audit_append(tx, &ev, NULL, err);
        free(text);
        if (rc) return rc;
        if (!strcmp(json_string_value(json_object_get(e, "action")), "stopped")) (*ended)++;
    }
    return GP_OK;
}

/*
 * Audit what the node's workload report did: each job it ended ("job.end",
 * ok) and each report it was refused ("job.report", denied: a node speaking
 * for a job not placed on it), under the job's tenant and project so that
 * tenant sees them.
 */
static int audit_reports(api_req *r, store_tx *tx, json_t *events, gp_err *err) {
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *tenant = json_string_value(json_object_get(e, "tenant"));
        const char *project = json_string_value(json_object_get(e, "project"));
        const char *result = json_string_value(json_object_get(e, "result"));
        json_t *sum = json_deep_copy(e);
        json_object_del(sum, "action");
        json_object_del(sum, "result");
        json_object_del(sum, "tenant");
        json_object_del(sum, "project");
        char *text = jx_dump(sum);
        json_decref(sum);
        audit_event ev = {.actor = r->who ? r->who->name : "system",
                          .source = r->source,
                          .request_id = r->request_id,
                          .action = json_string_value(json_object_get(e, "action")),
                          .target_type = "job",
                          .target_id = json_string_value(json_object_get(e, "job")),
                          .tenant = tenant && *tenant ? tenant : NULL,
                          .project = project && *project ? project : NULL,
                          .result = result,
                          .status = !strcmp(result, "denied") ? 403 : 0,
                          .summary = text};
        int rc = audit_append(tx, &ev, NULL, err);
        free(text);
        if (rc) return rc;
    }
    return GP_OK;
}

/*
 * Audit each card refused to a node's report (inv_node_report: another node
 * holds it) as a denied "node.report" on that GPU, by `actor` (the node's
 * agent account), in `tx`.
 */
static int audit_refused(api_req *r, store_tx *tx, const char *actor, const char *node,
                         json_t *refused, gp_err *err) {
    size_t i;
    json_t *e;
    json_array_foreach(refused, i, e) {
        const char *gpu = json_string_value(json_object_get(e, "gpu"));
        json_t *sum = json_pack("{s:s,s:s,s:O,s:s}", "node", node, "gpu", gpu, "held_by",
                                json_object_get(e, "held_by"), "error",
                                "the GPU belongs to another node");
        char *text = jx_dump(sum);
        json_decref(sum);
        audit_event ev = {.actor = actor,
                          .source = r->source,
                          .request_id = r->request_id,
                          .action = "node.report",
                          .target_type = "gpu",
                          .target_id = gpu,
                          .result = "denied",
                          .status = 409,
                          .summary = text};
        int rc = audit_append(tx, &ev, NULL, err);
        free(text);
        if (rc) return rc;
    }
    return GP_OK;
}

static int load_policy(api_req *r, store_tx *tx, health_policy *p) {
    gp_err err = GP_ERR_INIT;
    if (inv_health_policy_load(tx, p, &err)) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

/* ---- join tokens ---- */

void h_join_create(api_req *r) {
    static const char *const fields[] = {"ttl_seconds", "node", "max_uses", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    int64_t ttl = 3600, uses = 1;
    const char *nodej = NULL;
    int present;
    store_tx *tx;
    api_target(r, "join-token", NULL, NULL, NULL);
    if (!api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    if (jx_only_fields(body, fields, &err) ||
        jx_get_int(body, "ttl_seconds", 0, &ttl, &present, &err) ||
        jx_get_int(body, "max_uses", 0, &uses, &present, &err) ||
        jx_get_str(body, "node", 0, &nodej, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    char node[64] = "";
    int node_ok = !nodej || !*nodej || (strlen(nodej) < sizeof node && gp_name_valid(nodej));
    if (node_ok && nodej) snprintf(node, sizeof node, "%s", nodej);
    json_decref(body);
    if (ttl < 60 || ttl > 30 * 86400) {
        api_error(r, 400, "invalid_argument", "ttl_seconds must be between 60 and 2592000");
        return;
    }
    if (!node_ok) {
        api_error(r, 400, "invalid_argument",
                  "node must be a node name (lower-case letters, digits, '-')");
        return;
    }
    if (uses < 1 || uses > INV_JOIN_MAX_USES) {
        api_error(r, 400, "invalid_argument", "max_uses must be between 1 and 10000");
        return;
    }
    if (*node && uses != 1) {
        api_error(r, 400, "invalid_argument",
                  "a join token bound to a node is for one use: give node or max_uses");
        return;
    }
    char token[RND_SECRET_LEN], id[RND_ID_LEN];
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_join_create(tx, r->who->user_id, ttl, node, uses, token, id, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    api_target(r, NULL, id, NULL, NULL);
    if (api_finish(r, tx, 201,
                   json_pack("{s:s,s:I,s:s,s:I}", "id", id, "ttl_seconds", (json_int_t)ttl,
                             "node", node, "max_uses", (json_int_t)uses)))
        return;
    char exp[GT_RFC3339_LEN];
    gt_format_us(gt_now_us() + ttl * 1000000, exp, sizeof exp);
    api_reply(r, 201, json_pack("{s:s,s:s,s:s,s:s,s:I}", "id", id, "token", token, "expires_at",
                                exp, "node", node, "max_uses", (json_int_t)uses));
}

void h_join_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    if (!api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) return;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (inv_join_list(tx, &items, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

void h_join_revoke(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_target(r, "join-token", api_param(r, "id"), NULL, NULL);
    if (!api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) return;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_join_revoke(tx, api_param(r, "id"), &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, NULL))
        api_reply(r, 200, json_pack("{s:s,s:s}", "id", api_param(r, "id"), "state", "revoked"));
}

/* ---- the agent ---- */

/*
 * A refused registration, audited in its own transaction with the join
 * token's id (when the secret matched one) and the node's name, then 401.
 */
static void register_refused(api_req *r, const char *token_id, const char *node,
                             const char *why) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *sum = json_pack("{s:s,s:s,s:s}", "join_token", token_id, "node", node, "error", why);
    char *text = jx_dump(sum);
    json_decref(sum);
    if (store_begin(r->store, STORE_WRITE, &tx, &err) == GP_OK) {
        if (api_audit(r, tx, "denied", 401, text, &err) != GP_OK) store_rollback(tx);
        else if (store_commit(tx, &err) == GP_OK) r->audited = 1;
        else r->audited = 0; /* the dispatcher audits it then */
    }
    free(text);
    api_error(r, 401, "unauthenticated", why);
}

void h_agent_register(api_req *r) {
    static const char *const fields[] = {"join_token", "node", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    const char *jt;
    store_tx *tx;
    api_target(r, "node", NULL, NULL, NULL);
    if (api_body(r, &body)) return;
    json_t *node = json_object_get(body, "node");
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "join_token", 1, &jt, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    if (!json_is_object(node)) {
        json_decref(body);
        api_error(r, 400, "invalid_argument", "field 'node' must be an object");
        return;
    }
    const char *name = json_string_value(json_object_get(node, "name"));
    char nname[64] = ""; /* for the audit: a name too long to be valid is cut */
    snprintf(nname, sizeof nname, "%s", name ? name : "");
    api_target(r, NULL, nname, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    char nid[RND_ID_LEN], uid[RND_ID_LEN], token[RND_SECRET_LEN], tid[RND_ID_LEN];
    char jid[RND_ID_LEN] = "";
    int rereg = 0;
    /* one use of the token per registration (a refused one below rolls the use back) */
    int rc = inv_join_use(tx, jt, nname, jid, &err);
    if (rc == GP_EUNAUTH) {
        store_rollback(tx);
        json_decref(body);
        register_refused(r, jid, nname, err.msg);
        return;
    }
    json_t *refused = json_array();
    char agent[80];
    snprintf(agent, sizeof agent, "agent-%s", nname);
    if (!rc) rc = inv_node_register(tx, node, nid, uid, &rereg, refused, &err);
    if (!rc) rc = auth_token_create(tx, uid, "agent", 0, token, tid, &err);
    if (!rc) rc = audit_refused(r, tx, agent, nname, refused, &err);
    if (rc) {
        json_decref(refused);
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:s,s:b,s:I,s:s,s:I}", "node", nname, "reregistered", rereg, "gpus",
                            (json_int_t)json_array_size(json_object_get(node, "gpus")),
                            "join_token", jid, "refused_gpus",
                            (json_int_t)json_array_size(refused));
    json_decref(body);
    if (api_finish(r, tx, 201, sum)) {
        json_decref(refused);
        return;
    }
    /* the node name was validated by inv_node_register and kept in the audit target */
    api_reply(r, 201, json_pack("{s:s,s:s,s:b,s:o}", "node", r->a_id, "token", token,
                                "reregistered", rereg, "refused_gpus", refused));
}

void h_agent_heartbeat(api_req *r) {
    gp_err err = GP_ERR_INIT;
    json_t *body;
    store_tx *tx;
    health_policy pol;
    inv_transition *tr;
    int ntr;
    if (api_body(r, &body)) return;
    const char *nj = json_string_value(json_object_get(body, "node"));
    if (!nj || strlen(nj) > 63) {
        json_decref(body);
        api_error(r, 400, "invalid_argument", "field 'node' is required");
        return;
    }
    char node[64]; /* outlives the body */
    snprintf(node, sizeof node, "%s", nj);
    api_target(r, "node", node, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (load_policy(r, tx, &pol)) {
        store_rollback(tx);
        json_decref(body);
        return;
    }
    /* an agent that (re)starts sends its hardware once with the first heartbeat */
    json_t *report = json_object_get(body, "report");
    json_t *refused = json_array();
    int rc = report ? inv_node_report(tx, node, r->who->user_id, report, refused, &err) : GP_OK;
    /* a card refused to the node (another node holds it): its signals are not the node's */
    if (!rc) rc = inv_drop_foreign(tx, node, json_object_get(body, "gpus"), &err);
    /* the GPU samples bounded before they are stored (at most the node's GPUs, each figure) */
    if (!rc) rc = telemetry_bound_node(tx, node, r->who->user_id, json_object_get(body, "gpus"), &err);
    if (!rc) rc = inv_heartbeat(tx, node, r->who->user_id, body, &pol, &tr, &ntr, &err);
    else tr = NULL, ntr = 0;
    /* what the node's workloads did (exits, output), then what it must run now */
    int ended = 0;
    json_t *assignments = NULL;
    json_t *intf = NULL, *reports = NULL;
    if (!rc)
        rc = jobs_node_report(tx, node, json_object_get(body, "workloads"), &ended, &reports,
                              &err);
    /* per-process figures on shared cards: interference alarms (and stops, per policy) */
    if (!rc) rc = jobs_interference(tx, node, body, &pol, &intf, &err);
    json_decref(body);
    if (rc == GP_EFORBIDDEN) {
        store_rollback(tx);
        json_decref(reports);
        json_decref(refused);
        api_error(r, 404, "not_found", "not found");
        return;
    }
    if (!rc) rc = audit_refused(r, tx, r->who->name, node, refused, &err);
    json_decref(refused);
    if (!rc) rc = audit_reports(r, tx, reports, &err);
    json_decref(reports);
    if (!rc) rc = audit_transitions(r, tx, tr, ntr, &err);
    if (!rc) rc = contain(r, tx, tr, ntr, &err);
    if (!rc) rc = audit_interference(r, tx, intf, &ended, &err);
    json_decref(intf);
    if (!rc) rc = jobs_node_assignments(tx, node, &assignments, &err);
    free(tr);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    if (api_commit(r, tx)) {
        json_decref(assignments);
        return;
    }
    r->audited = 1; /* the transitions were the events worth recording */
    /* capacity came free, or a node or card changed state: wake the leader's scheduler (a
     * wake, never a round here: a heartbeat never waits behind a round's work; another
     * server's tick schedules within a second) */
    if (ended || ntr) sched_wake_freed(r->store, r->leader == 1);
    api_reply(r, 200, json_pack("{s:s,s:o}", "status", "ok", "assignments", assignments));
}

/* A deferred long poll's answer (sched_node_watch's callback). */
static void wait_done(void *arg, int result, int64_t v) {
    api_req *r = arg;
    if (result < 0) api_reply(r, 200, json_pack("{s:b,s:b}", "changed", 0, "events", 0));
    else
        api_reply(r, 200, json_pack("{s:I,s:b,s:b}", "version", (json_int_t)v, "changed",
                                    result == 1, "events", 1));
    api_resume(r);
}

/*
 * POST /api/v1/agent/wait {"node", "seen", "timeout_s"}: the agent's long
 * poll.  Answers {"version", "changed"} as soon as a commit changed the
 * node's assignments (its version differs from `seen`), or after timeout_s
 * (1-25, default 20) with changed false; {"changed": false, "events": false}
 * at once when this server has no notifier (the agent then keeps to its
 * heartbeat interval).  Only the node's own agent (404 for anyone else).  No
 * store transaction is held while it waits, and no thread: the answer is
 * deferred (api_defer) until the notifier, its timer or the quiesce makes it;
 * the agent fetches the assignments with its next heartbeat.
 */
void h_agent_wait(api_req *r) {
    static const char *const fields[] = {"node", "seen", "timeout_s", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    store_tx *tx;
    if (api_body(r, &body)) return;
    const char *nj = json_string_value(json_object_get(body, "node"));
    json_t *seen = json_object_get(body, "seen"), *tmo = json_object_get(body, "timeout_s");
    if (jx_only_fields(body, fields, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    if (!nj || !*nj || strlen(nj) > 63 || (seen && !json_is_integer(seen)) ||
        (tmo && (!json_is_integer(tmo) || json_integer_value(tmo) < 1 ||
                 json_integer_value(tmo) > 25))) {
        json_decref(body);
        api_error(r, 400, "invalid_argument",
                  "want {\"node\": NAME, \"seen\": VERSION, \"timeout_s\": 1-25}");
        return;
    }
    char node[64];
    snprintf(node, sizeof node, "%s", nj);
    int64_t since = seen ? (int64_t)json_integer_value(seen) : -1;
    int timeout_s = tmo ? (int)json_integer_value(tmo) : 20;
    json_decref(body);
    /* the node's own agent only: anyone else is told it does not exist */
    if (api_begin(r, STORE_READ, &tx)) return;
    store_stmt *q;
    int mine = store_query(tx, &q, &err, "SELECT agent_user_id FROM nodes WHERE name = ?", "s",
                           node);
    if (!mine) {
        mine = store_step(q, &err) > 0 && !strcmp(store_text(q, 0), r->who->user_id);
        store_done(q);
    } else {
        mine = 0;
    }
    store_rollback(tx);
    if (mine <= 0) {
        api_error(r, 404, "not_found", "not found");
        return;
    }
    int64_t v;
    if (api_defer(r)) {
        /* no thread waits: answered from the notifier, its timer or the quiesce */
        int rc = sched_node_watch(r->store, node, since, timeout_s * 1000, wait_done, r, &v);
        if (rc == 0) return;
        r->deferred = 0;
        if (rc < 0) api_reply(r, 200, json_pack("{s:b,s:b}", "changed", 0, "events", 0));
        else api_reply(r, 200, json_pack("{s:I,s:b,s:b}", "version", (json_int_t)v, "changed", 1,
                                         "events", 1));
        return;
    }
    int rc = sched_node_wait(r->store, node, since, timeout_s * 1000, &v);
    if (rc < 0) {
        api_reply(r, 200, json_pack("{s:b,s:b}", "changed", 0, "events", 0));
        return;
    }
    api_reply(r, 200, json_pack("{s:I,s:b,s:b}", "version", (json_int_t)v, "changed", rc == 1,
                                "events", 1));
}

/* ---- nodes ---- */

void h_node_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *scope, *items;
    health_policy pol;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!read_scope(r, tx, &scope)) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    int rc = load_policy(r, tx, &pol);
    if (!rc) {
        rc = inv_node_list(tx, &pol, scope, &items, &err);
        if (rc) api_fail(r, &err);
    }
    json_decref(scope);
    if (rc) {
        store_rollback(tx);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

/* Resolve {node} for reading; 404 when missing or out of the caller's reach. */
static int node_visible(api_req *r, store_tx *tx, const char *node) {
    json_t *scope;
    int found = inv_node_exists(tx, node) > 0;
    if (!found || !read_scope(r, tx, &scope) || !name_listed(scope, node)) {
        if (found) json_decref(scope);
        api_error(r, 404, "not_found", "not found");
        return 0;
    }
    json_decref(scope);
    return 1;
}

/* Resolve {uuid}: 404 when missing or on a node out of the caller's reach. */
static int gpu_visible(api_req *r, store_tx *tx, const char *uuid) {
    gp_err err = GP_ERR_INIT;
    char node[64];
    int rc = inv_gpu_node(tx, uuid, node, &err);
    if (rc && rc != GP_ENOTFOUND) {
        api_fail(r, &err);
        return 0;
    }
    if (rc) {
        api_error(r, 404, "not_found", "not found");
        return 0;
    }
    return node_visible(r, tx, node);
}

void h_node_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *out;
    health_policy pol;
    const char *node = api_param(r, "node");
    api_target(r, "node", node, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!node_visible(r, tx, node) || load_policy(r, tx, &pol)) {
        store_rollback(tx);
        return;
    }
    int rc = inv_node_get(tx, &pol, node, &out, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    api_reply(r, 200, out);
}

void h_node_history(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    const char *node = api_param(r, "node");
    api_target(r, "node", node, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!node_visible(r, tx, node)) {
        store_rollback(tx);
        return;
    }
    int rc = inv_history(tx, node, NULL, &items, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    api_reply(r, 200, api_list(items, NULL));
}

/* cordon / uncordon / drain a node or a GPU: visible first (404), then the role (403) */
static void admin_change(api_req *r, int gpu, const char *state) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    inv_transition t;
    const char *key = api_param(r, gpu ? "uuid" : "node");
    api_target(r, gpu ? "gpu" : "node", key, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (!(gpu ? gpu_visible(r, tx, key) : node_visible(r, tx, key)) ||
        !api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) {
        store_rollback(tx);
        return;
    }
    int rc = gpu ? inv_gpu_admin(tx, key, state, r->who->name, &t, &err)
                 : inv_node_admin(tx, key, state, r->who->name, &t, &err);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, json_pack("{s:s,s:s}", "from", t.from, "to", t.to))) {
        sched_wake_freed(r->store, r->leader == 1); /* capacity came or went */
        api_reply(r, 200, json_pack("{s:s,s:s}", gpu ? "uuid" : "name", key, "admin_state", state));
    }
}

void h_node_cordon(api_req *r) { admin_change(r, 0, "cordoned"); }
void h_node_uncordon(api_req *r) { admin_change(r, 0, "none"); }
void h_node_drain(api_req *r) { admin_change(r, 0, "draining"); }
void h_gpu_cordon(api_req *r) { admin_change(r, 1, "cordoned"); }
void h_gpu_uncordon(api_req *r) { admin_change(r, 1, "none"); }
void h_gpu_drain(api_req *r) { admin_change(r, 1, "draining"); }

/*
 * Set one string field of a node or GPU from a body {field: value}: the object
 * must be visible to the caller and the action allowed.  Replies
 * {key: id, field: value}; the audit summary is the same, less the id unless
 * sum_id.
 */
static void set_field(api_req *r, const char *type, const char *id, const char *key,
                      const char *field, int action, int sum_id,
                      int (*visible)(api_req *, store_tx *, const char *),
                      int (*apply)(store_tx *, const char *, const char *, gp_err *)) {
    const char *const fields[] = {field, NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    const char *value;
    api_target(r, type, id, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (!visible(r, tx, id) || !api_authorize(r, action, NULL, NULL) || api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, field, 1, &value, &err) ||
        apply(tx, id, value, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    json_t *reply = json_pack("{s:s,s:s}", key, id, field, value);
    json_t *sum = sum_id ? json_deep_copy(reply) : json_pack("{s:s}", field, value);
    json_decref(body);
    if (!api_finish(r, tx, 200, sum)) {
        sched_wake(r->store, r->leader == 1); /* a pool or mode: what fits where changed */
        api_reply(r, 200, reply);
    } else {
        json_decref(reply);
    }
}

void h_node_pool(api_req *r) {
    set_field(r, "node", api_param(r, "node"), "name", "pool", ACT_POOL_MANAGE, 0, node_visible,
              inv_node_pool);
}

/* ---- GPUs ---- */

void h_gpu_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *scope, *items;
    health_policy pol;
    const char *health = api_query(r, "health");
    if (health && health_parse(health) < 0) {
        api_error(r, 400, "invalid_argument", "health must be healthy, degraded or failed");
        return;
    }
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!read_scope(r, tx, &scope)) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    int rc = load_policy(r, tx, &pol);
    if (!rc) rc = inv_gpu_list(tx, &pol, scope, api_query(r, "node"), health, &items, &err);
    json_decref(scope);
    store_rollback(tx);
    if (rc) {
        if (!r->status) api_fail(r, &err);
        return;
    }
    api_reply(r, 200, api_list(items, NULL));
}

void h_gpu_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *out;
    health_policy pol;
    const char *uuid = api_param(r, "uuid");
    api_target(r, "gpu", uuid, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!gpu_visible(r, tx, uuid) || load_policy(r, tx, &pol)) {
        store_rollback(tx);
        return;
    }
    int rc = inv_gpu_get(tx, &pol, uuid, &out, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, out);
}

void h_gpu_history(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    const char *uuid = api_param(r, "uuid");
    api_target(r, "gpu", uuid, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!gpu_visible(r, tx, uuid)) {
        store_rollback(tx);
        return;
    }
    int rc = inv_history(tx, NULL, uuid, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_gpu_reset(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    inv_transition t;
    const char *uuid = api_param(r, "uuid");
    api_target(r, "gpu", uuid, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (!gpu_visible(r, tx, uuid) || !api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) {
        store_rollback(tx);
        return;
    }
    if (inv_gpu_reset(tx, uuid, r->who->name, &t, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, json_pack("{s:s,s:s}", "from", t.from, "to", "healthy"))) {
        sched_wake(r->store, r->leader == 1);
        api_reply(r, 200, json_pack("{s:s,s:s}", "uuid", uuid, "health", "healthy"));
    }
}

/*
 * POST /api/v1/gpus/{uuid}/move {"node"}: give a card's record to another
 * node (a card moved between machines, or a node rebuilt under a new name).
 * ops-engineer or platform-admin; only once the old node is drained (or
 * lost) and no job holds the card (inv_gpu_move_refusal: 409 otherwise).
 * Until then the new node's report of the card is refused (inv_node_report).
 */
void h_gpu_move(api_req *r) {
    static const char *const fields[] = {"node", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    const char *to;
    char from[64];
    const char *uuid = api_param(r, "uuid");
    api_target(r, "gpu", uuid, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (!gpu_visible(r, tx, uuid) || !api_authorize(r, ACT_GPU_MOVE, NULL, NULL) ||
        api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "node", 1, &to, &err) ||
        inv_gpu_move(tx, uuid, to, from, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    json_t *reply = json_pack("{s:s,s:s,s:s}", "uuid", uuid, "from", from, "node", to);
    json_decref(body);
    if (!api_finish(r, tx, 200, json_pack("{s:s,s:s}", "from", from, "to",
                                          json_string_value(json_object_get(reply, "node"))))) {
        sched_wake(r->store, r->leader == 1); /* the card now counts on its new node */
        api_reply(r, 200, reply);
    } else {
        json_decref(reply);
    }
}

void h_gpu_mode(api_req *r) {
    set_field(r, "gpu", api_param(r, "uuid"), "uuid", "mode", ACT_NODE_MANAGE, 1, gpu_visible,
              inv_gpu_mode);
}

/* ---- health policy ---- */

void h_health_policy_get(api_req *r) {
    store_tx *tx;
    health_policy p;
    if (!api_authorize(r, ACT_NODE_READ, NULL, NULL)) return;
    if (api_begin(r, STORE_READ, &tx)) return;
    int bad = load_policy(r, tx, &p);
    store_rollback(tx);
    if (!bad) api_reply(r, 200, health_policy_json(&p));
}

void h_health_policy_put(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    health_policy p;
    api_target(r, "policy", "health", NULL, NULL);
    if (!api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    if (health_policy_parse(body, &p, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    json_decref(body);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_health_policy_save(tx, &p, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, health_policy_json(&p))) api_reply(r, 200, health_policy_json(&p));
}

/* ---- alarms ---- */

void h_alarm_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    const char *tenant = api_query(r, "tenant");
    authz_target g = {NULL, NULL};
    int all = authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &g, gt_now_us()) ==
              AUTHZ_ALLOW;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (!all) {
        /* members of a tenant see the alarms on GPUs their tenant's work held */
        if (!tenant) {
            store_rollback(tx);
            api_error(r, 403, "forbidden", "name your tenant: ?tenant=T");
            return;
        }
        tenancy_tenant t;
        int rc = tenancy_tenant_find(tx, tenant, &t, &err);
        authz_target tg = {rc ? NULL : t.id, NULL};
        if (rc == GP_ENOTFOUND ||
            (!rc && !authz_visible(r->who->bindings, r->who->nbindings, &tg, gt_now_us()))) {
            store_rollback(tx);
            api_error(r, 404, "not_found", "not found");
            return;
        }
        if (rc) {
            api_abort(r, tx, &err);
            return;
        }
    }
    if (inv_alarm_list(tx, tenant, &items, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

void h_alarm_ack(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_target(r, "alarm", api_param(r, "id"), NULL, NULL);
    if (!api_authorize(r, ACT_NODE_MANAGE, NULL, NULL)) return;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_alarm_ack(tx, api_param(r, "id"), r->who->name, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, NULL))
        api_reply(r, 200, json_pack("{s:s,s:s}", "id", api_param(r, "id"), "acked_by",
                                    r->who->name));
}

/* ---- the reachability sweep (server loop) ---- */

int api__sweep_nodes(store_t *st, int64_t timeout_us, int64_t observed_since_us, int *held,
                     int *stalled, gp_err *err) {
    store_tx *tx;
    inv_transition *tr;
    int ntr;
    if (stalled) *stalled = 0;
    if (held) *held = 0;
    int64_t t0 = gt_mono_us();
    int rc = store_begin(st, STORE_WRITE, &tx, err);
    if (rc) return rc;
    if (gt_mono_us() - t0 > API_STALL_US(timeout_us)) {
        /* heartbeats waited for the lock as long as we did: their silence proves nothing */
        store_rollback(tx);
        if (stalled) *stalled = 1;
        return GP_OK;
    }
    rc = inv_sweep(tx, timeout_us, observed_since_us, &tr, &ntr, held, err);
    if (!rc) {
        api_req sys;
        memset(&sys, 0, sizeof sys);
        rc = audit_transitions(&sys, tx, tr, ntr, err);
        if (!rc) rc = contain(&sys, tx, tr, ntr, err);
        free(tr);
    }
    if (rc) {
        store_rollback(tx);
        return rc;
    }
    return store_commit(tx, err);
}
