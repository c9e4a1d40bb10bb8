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

#include "../sched/reservations.h"

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
 * What may the caller read?  GP_OK with *nodes NULL: everything; GP_OK with
 * *nodes an array (owned): a vendor's nodes; GP_EFORBIDDEN: nothing.
 */
static int read_scope(api_ctx *c, json_t **nodes, gp_err *err) {
    authz_target g = {NULL, NULL};
    int64_t now = gt_now_us();
    *nodes = NULL;
    if (authz_check(c->who->bindings, c->who->nbindings, ACT_NODE_READ, &g, now) == AUTHZ_ALLOW)
        return GP_OK;
    json_t *wos = NULL;
    if (!authz_holds(c->who->bindings, c->who->nbindings, ROLE_VENDOR, now) ||
        auth_vendor_scope(c->tx, c->who->user_id, nodes, &wos, NULL))
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    json_decref(wos);
    return GP_OK;
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
static int contain(api_req *r, store_tx *tx, const inv_transition *t, int n, json_t *touch,
                   gp_err *err) {
    for (int i = 0; i < n; i++) {
        int lost = !strcmp(t[i].kind, "node") && !strcmp(t[i].to, "unreachable");
        int failed = !strcmp(t[i].kind, "health") && !strcmp(t[i].to, "failed");
        if (!lost && !failed) continue;
        json_t *hit;
        int rc = jobs_contain(tx, lost ? t[i].node : NULL, failed ? t[i].gpu_uuid : NULL,
                              lost ? "node_lost" : "gpu_failed", &hit, err);
        if (rc) return rc;
        /* the other nodes of a job stopped there (one that spans nodes) stop it now too */
        size_t k, m;
        json_t *h, *nd;
        json_array_foreach(hit, k, h) json_array_foreach(json_object_get(h, "nodes"), m, nd) {
            if (touch && strcmp(json_string_value(nd), t[i].node) != 0)
                json_array_append(touch, nd);
        }
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

/* A node's transitions, audited and contained in `tx` (the heartbeat, the server's sweep);
 * `touch` (may be NULL) gains the other nodes of the jobs containment stopped. */
int api__node_transitions(api_req *r, store_tx *tx, const inv_transition *t, int n,
                          json_t *touch, gp_err *err) {
    int rc = audit_transitions(r, tx, t, n, err);
    return rc ? rc : contain(r, tx, t, n, touch, err);
}

/* ---- join tokens: ops-engineers' (SC_GLOBAL, ACT_NODE_MANAGE) ---- */

int h_join_create(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"ttl_seconds", "node", "max_uses", NULL};
    int64_t ttl = 3600, uses = 1;
    const char *nodej = NULL;
    int present;
    api_target(c->r, "join-token", NULL, NULL, NULL);
    if (jx_only_fields(c->body, fields, err) ||
        jx_get_int(c->body, "ttl_seconds", 0, &ttl, &present, err) ||
        jx_get_int(c->body, "max_uses", 0, &uses, &present, err) ||
        jx_get_str(c->body, "node", 0, &nodej, err))
        return err->code;
    char node[64] = "";
    int node_ok = !nodej || !*nodej || (strlen(nodej) < sizeof node && gp_name_valid(nodej));
    if (node_ok && nodej) snprintf(node, sizeof node, "%s", nodej);
    if (ttl < 60 || ttl > 30 * 86400)
        return gp_err_set(err, GP_EINVALID, "ttl_seconds must be between 60 and 2592000");
    if (!node_ok)
        return gp_err_set(err, GP_EINVALID,
                          "node must be a node name (lower-case letters, digits, '-')");
    if (uses < 1 || uses > INV_JOIN_MAX_USES)
        return gp_err_set(err, GP_EINVALID, "max_uses must be between 1 and 10000");
    if (*node && uses != 1)
        return gp_err_set(err, GP_EINVALID,
                          "a join token bound to a node is for one use: give node or max_uses");
    char token[RND_SECRET_LEN], id[RND_ID_LEN];
    int rc = inv_join_create(c->tx, c->who->user_id, ttl, node, uses, token, id, err);
    if (rc) return rc;
    api_target(c->r, NULL, id, NULL, NULL);
    c->summary = json_pack("{s:s,s:I,s:s,s:I}", "id", id, "ttl_seconds", (json_int_t)ttl, "node",
                           node, "max_uses", (json_int_t)uses);
    char exp[GT_RFC3339_LEN];
    gt_format_us(gt_now_us() + ttl * 1000000, exp, sizeof exp);
    api_reply(c->r, 201, json_pack("{s:s,s:s,s:s,s:s,s:I}", "id", id, "token", token,
                                   "expires_at", exp, "node", node, "max_uses", (json_int_t)uses));
    return GP_OK;
}

int h_join_list(api_ctx *c, gp_err *err) {
    json_t *items;
    int rc = inv_join_list(c->tx, &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

int h_join_revoke(api_ctx *c, gp_err *err) {
    const char *id = api_param(c->r, "id");
    api_target(c->r, "join-token", id, NULL, NULL);
    int rc = inv_join_revoke(c->tx, id, err);
    if (!rc) api_reply(c->r, 200, json_pack("{s:s,s:s}", "id", id, "state", "revoked"));
    return rc;
}

/* ---- the agent ---- */

/*
 * SC_PUBLIC: the join token in the body is the credential.  A refused one
 * rolls back (its use too) and is audited as denied, with the token's id
 * (when the secret matched one) and the node's name (c->summary).
 */
int h_agent_register(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"join_token", "node", NULL};
    const char *jt;
    api_target(c->r, "node", NULL, NULL, NULL);
    json_t *node = json_object_get(c->body, "node");
    if (jx_only_fields(c->body, fields, err) || jx_get_str(c->body, "join_token", 1, &jt, err))
        return err->code;
    if (!json_is_object(node)) return gp_err_set(err, GP_EINVALID, "field 'node' must be an object");
    const char *name = json_string_value(json_object_get(node, "name"));
    char nname[64] = ""; /* for the audit: a name too long to be valid is cut */
    snprintf(nname, sizeof nname, "%s", name ? name : "");
    api_target(c->r, NULL, nname, NULL, NULL);
    char nid[RND_ID_LEN], uid[RND_ID_LEN], token[RND_SECRET_LEN], tid[RND_ID_LEN];
    char jid[RND_ID_LEN] = "";
    int rereg = 0;
    /* one use of the token per registration (a refused one rolls the use back) */
    int rc = inv_join_use(c->tx, jt, nname, jid, err);
    if (rc == GP_EUNAUTH) {
        c->summary = json_pack("{s:s,s:s,s:s}", "join_token", jid, "node", nname, "error",
                               err->msg);
        return rc;
    }
    json_t *refused = json_array();
    char agent[80];
    snprintf(agent, sizeof agent, "agent-%s", nname);
    if (!rc) rc = inv_node_register(c->tx, node, nid, uid, &rereg, refused, err);
    if (!rc) rc = auth_token_create(c->tx, uid, "agent", 0, token, tid, err);
    if (!rc) rc = audit_refused(c->r, c->tx, agent, nname, refused, err);
    if (rc) {
        json_decref(refused);
        return rc;
    }
    c->summary = json_pack("{s:s,s:b,s:I,s:s,s:I}", "node", nname, "reregistered", rereg, "gpus",
                           (json_int_t)json_array_size(json_object_get(node, "gpus")),
                           "join_token", jid, "refused_gpus", (json_int_t)json_array_size(refused));
    /* the node name was validated by inv_node_register and kept in the audit target */
    api_reply(c->r, 201, json_pack("{s:s,s:s,s:b,s:o}", "node", c->r->a_id, "token", token,
                                   "reregistered", rereg, "refused_gpus", refused));
    return GP_OK;
}

/* Capacity came free, or a node or card changed state: wake the leader's scheduler (a wake,
 * never a round here: a heartbeat never waits behind a round's work). */
static void wake_freed(api_req *r) { sched_wake_freed(r->store, r->leader == 1); }

/* After a heartbeat's commit: the nodes in after_arg look at their assignments again. */
static int touch_after(api_ctx *c, gp_err *err) {
    (void)err;
    size_t i;
    json_t *v;
    json_array_foreach(c->after_arg, i, v) sched_node_touch(c->r->store, json_string_value(v));
    return GP_OK;
}

/* SC_AGENT: the domain answers 404 for a node that is not the caller's. */
int h_agent_heartbeat(api_ctx *c, gp_err *err) {
    health_policy pol;
    inv_transition *tr = NULL;
    int ntr = 0;
    const char *nj = json_string_value(json_object_get(c->body, "node"));
    if (!nj || strlen(nj) > 63) return gp_err_set(err, GP_EINVALID, "field 'node' is required");
    char node[64];
    snprintf(node, sizeof node, "%s", nj);
    api_target(c->r, "node", node, NULL, NULL);
    int rc = inv_health_policy_load(c->tx, &pol, err);
    if (rc) return rc;
    const char *uid = c->who->user_id;
    /* an agent that (re)starts sends its hardware once with the first heartbeat */
    json_t *report = json_object_get(c->body, "report");
    json_t *refused = json_array();
    rc = report ? inv_node_report(c->tx, node, uid, report, refused, err) : GP_OK;
    /* a card refused to the node (another node holds it): its signals are not the node's */
    if (!rc) rc = inv_drop_foreign(c->tx, node, json_object_get(c->body, "gpus"), err);
    /* the GPU samples bounded before they are stored (at most the node's GPUs, each figure) */
    if (!rc) rc = telemetry_bound_node(c->tx, node, uid, json_object_get(c->body, "gpus"), err);
    if (!rc) rc = inv_heartbeat(c->tx, node, uid, c->body, &pol, &tr, &ntr, err);
    /* what the node's workloads did (exits, output), then what it must run now */
    int ended = 0;
    json_t *assignments = NULL, *intf = NULL, *reports = NULL, *touch = json_array();
    if (!rc)
        rc = jobs_node_report(c->tx, node, json_object_get(c->body, "workloads"), &ended, touch,
                              &reports, err);
    /* per-process figures on shared cards: interference alarms (and stops, per policy) */
    if (!rc) rc = jobs_interference(c->tx, node, c->body, &pol, &intf, err);
    if (rc == GP_EFORBIDDEN) rc = gp_err_set(err, GP_ENOTFOUND, "not found");
    if (!rc) rc = audit_refused(c->r, c->tx, c->who->name, node, refused, err);
    if (!rc) rc = audit_reports(c->r, c->tx, reports, err);
    if (!rc) rc = api__node_transitions(c->r, c->tx, tr, ntr, touch, err);
    if (!rc) rc = audit_interference(c->r, c->tx, intf, &ended, err);
    if (!rc) rc = jobs_node_assignments(c->tx, node, &assignments, err);
    json_decref(refused);
    json_decref(reports);
    json_decref(intf);
    free(tr);
    if (rc) {
        json_decref(touch);
        return rc;
    }
    if (ended || ntr) c->on_commit = wake_freed;
    /* a job that spans nodes: its other nodes start (rendezvous known) or stop (it ended) now */
    if (json_array_size(touch)) {
        c->after = touch_after;
        c->after_arg = touch;
    } else {
        json_decref(touch);
    }
    api_reply(c->r, 200, json_pack("{s:s,s:o}", "status", "ok", "assignments", assignments));
    return GP_OK;
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

/* After the check's transaction: wait (after_arg: [node, since, timeout_s]).  Nothing may
 * touch the request once it is deferred: the watch's callback may answer it at once. */
static int wait_after(api_ctx *c, gp_err *err) {
    (void)err;
    api_req *r = c->r;
    char node[64];
    snprintf(node, sizeof node, "%s", json_string_value(json_array_get(c->after_arg, 0)));
    int64_t since = json_integer_value(json_array_get(c->after_arg, 1)), v;
    int timeout_s = (int)json_integer_value(json_array_get(c->after_arg, 2));
    if (api_defer(r)) {
        /* no thread waits: answered from the notifier, its timer or the quiesce */
        int rc = sched_node_watch(r->store, node, since, timeout_s * 1000, wait_done, r, &v);
        if (rc == 0) return GP_OK;
        r->deferred = 0;
        if (rc < 0) api_reply(r, 200, json_pack("{s:b,s:b}", "changed", 0, "events", 0));
        else api_reply(r, 200, json_pack("{s:I,s:b,s:b}", "version", (json_int_t)v, "changed", 1,
                                         "events", 1));
        return GP_OK;
    }
    int rc = sched_node_wait(r->store, node, since, timeout_s * 1000, &v);
    if (rc < 0) api_reply(r, 200, json_pack("{s:b,s:b}", "changed", 0, "events", 0));
    else api_reply(r, 200, json_pack("{s:I,s:b,s:b}", "version", (json_int_t)v, "changed",
                                     rc == 1, "events", 1));
    return GP_OK;
}

/*
 * POST /api/v1/agent/wait {"node", "seen", "timeout_s"}: the agent's long
 * poll.  Answers {"version", "changed"} as soon as a commit changed the
 * node's assignments (its version differs from `seen`), or after timeout_s
 * (1-25, default 20) with changed false; {"changed": false, "events": false}
 * at once when this server has no notifier (the agent then keeps to its
 * heartbeat interval).  Only the node's own agent (404 for anyone else).  No
 * store transaction is held while it waits (wait_after runs once it ended),
 * and no thread: the answer is deferred (api_defer) until the notifier, its
 * timer or the quiesce makes it; the agent fetches the assignments with its
 * next heartbeat.
 */
int h_agent_wait(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"node", "seen", "timeout_s", NULL};
    const char *nj = json_string_value(json_object_get(c->body, "node"));
    json_t *seen = json_object_get(c->body, "seen"), *tmo = json_object_get(c->body, "timeout_s");
    int rc = jx_only_fields(c->body, fields, err);
    if (rc) return rc;
    if (!nj || !*nj || strlen(nj) > 63 || (seen && !json_is_integer(seen)) ||
        (tmo && (!json_is_integer(tmo) || json_integer_value(tmo) < 1 ||
                 json_integer_value(tmo) > 25)))
        return gp_err_set(err, GP_EINVALID,
                          "want {\"node\": NAME, \"seen\": VERSION, \"timeout_s\": 1-25}");
    /* the node's own agent only: anyone else is told it does not exist */
    store_stmt *q;
    int mine = 0;
    rc = store_query(c->tx, &q, err, "SELECT agent_user_id FROM nodes WHERE name = ?", "s", nj);
    if (rc) return rc;
    rc = store_step(q, err);
    if (rc > 0) mine = !strcmp(store_text(q, 0), c->who->user_id);
    store_done(q);
    if (rc < 0) return err->code;
    if (!mine) return gp_err_set(err, GP_ENOTFOUND, "not found");
    c->after_arg = json_pack("[s,I,i]", nj, (json_int_t)(seen ? json_integer_value(seen) : -1),
                             tmo ? (int)json_integer_value(tmo) : 20);
    c->after = wait_after;
    return GP_OK;
}

/* May the caller see a tenant's reservation (h_reservation.c's rule)?  The nodes' reservations
 * name only those; the others are there, nameless: the node is held then. */
static int rsv_seen(void *arg, const rsv_holder *h) {
    const api_ctx *c = arg;
    authz_target t = {h->tenant_id, h->project_id[0] ? h->project_id : NULL};
    return authz_visible(c->who->bindings, c->who->nbindings, &t, gt_now_us());
}

/* ---- nodes: readers see all; a vendor its grants' nodes; tenant roles nothing ---- */

int h_node_list(api_ctx *c, gp_err *err) {
    json_t *scope, *items;
    health_policy pol;
    int rc = read_scope(c, &scope, err);
    if (rc) return rc;
    rc = inv_health_policy_load(c->tx, &pol, err);
    if (!rc) rc = inv_node_list(c->tx, &pol, scope, &items, err);
    json_decref(scope);
    /* the maintenance windows ahead of each (docs/scheduling.md, "Reservations") */
    if (!rc && (rc = rsv_node_windows(c->tx, gt_now_us(), items, rsv_seen, c, err)))
        json_decref(items);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

/* {node} for reading: not found when missing or out of the caller's reach. */
static int node_visible(api_ctx *c, const char *node, gp_err *err) {
    json_t *scope;
    if (inv_node_exists(c->tx, node) <= 0 || read_scope(c, &scope, NULL))
        return gp_err_set(err, GP_ENOTFOUND, "not found");
    int seen = name_listed(scope, node);
    json_decref(scope);
    return seen ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
}

/* {uuid}: not found when missing or on a node out of the caller's reach. */
static int gpu_visible(api_ctx *c, const char *uuid, gp_err *err) {
    char node[64];
    int rc = inv_gpu_node(c->tx, uuid, node, err);
    if (rc == GP_ENOTFOUND) return gp_err_set(err, GP_ENOTFOUND, "not found");
    return rc ? rc : node_visible(c, node, err);
}

int h_node_get(api_ctx *c, gp_err *err) {
    json_t *out;
    health_policy pol;
    const char *node = api_param(c->r, "node");
    api_target(c->r, "node", node, NULL, NULL);
    int rc = node_visible(c, node, err);
    if (!rc) rc = inv_health_policy_load(c->tx, &pol, err);
    if (!rc) rc = inv_node_get(c->tx, &pol, node, &out, err);
    if (!rc) {
        json_t *one = json_array();
        json_array_append(one, out);
        rc = rsv_node_windows(c->tx, gt_now_us(), one, rsv_seen, c, err);
        json_decref(one);
        if (rc) json_decref(out);
    }
    if (!rc) api_reply(c->r, 200, out);
    return rc;
}

int h_node_history(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *node = api_param(c->r, "node");
    api_target(c->r, "node", node, NULL, NULL);
    int rc = node_visible(c, node, err);
    if (!rc) rc = inv_history(c->tx, node, NULL, &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

/* A change to a node or card: visible first (404), then the role (403). */
static int visible_then_allowed(api_ctx *c, int gpu, const char *key, int action, gp_err *err) {
    int rc = gpu ? gpu_visible(c, key, err) : node_visible(c, key, err);
    return rc ? rc : api_allow(c, action, NULL, NULL, err);
}

/* A pool, a mode or a card's place changed what fits where: the scheduler looks again. */
static void wake(api_req *r) { sched_wake(r->store, r->leader == 1); }

/* cordon / uncordon / drain a node or a GPU */
static int admin_change(api_ctx *c, int gpu, const char *state, gp_err *err) {
    inv_transition t;
    const char *key = api_param(c->r, gpu ? "uuid" : "node");
    api_target(c->r, gpu ? "gpu" : "node", key, NULL, NULL);
    int rc = visible_then_allowed(c, gpu, key, ACT_NODE_MANAGE, err);
    if (!rc) rc = gpu ? inv_gpu_admin(c->tx, key, state, c->who->name, &t, err)
                      : inv_node_admin(c->tx, key, state, c->who->name, &t, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s}", "from", t.from, "to", t.to);
    c->on_commit = wake_freed; /* capacity came or went */
    api_reply(c->r, 200,
              json_pack("{s:s,s:s}", gpu ? "uuid" : "name", key, "admin_state", state));
    return GP_OK;
}

int h_node_cordon(api_ctx *c, gp_err *err) { return admin_change(c, 0, "cordoned", err); }
int h_node_uncordon(api_ctx *c, gp_err *err) { return admin_change(c, 0, "none", err); }
int h_node_drain(api_ctx *c, gp_err *err) { return admin_change(c, 0, "draining", err); }
int h_gpu_cordon(api_ctx *c, gp_err *err) { return admin_change(c, 1, "cordoned", err); }
int h_gpu_uncordon(api_ctx *c, gp_err *err) { return admin_change(c, 1, "none", err); }
int h_gpu_drain(api_ctx *c, gp_err *err) { return admin_change(c, 1, "draining", err); }

/*
 * Set one string field of a node or GPU from a body {field: value}: the object
 * must be visible to the caller and the action allowed.  Replies
 * {key: id, field: value}; the audit summary is the same, less the id unless
 * sum_id.
 */
static int set_field(api_ctx *c, int gpu, const char *key, const char *field, int action,
                     int sum_id, int (*apply)(store_tx *, const char *, const char *, gp_err *),
                     gp_err *err) {
    const char *const fields[] = {field, NULL};
    const char *value, *id = api_param(c->r, gpu ? "uuid" : "node");
    api_target(c->r, gpu ? "gpu" : "node", id, NULL, NULL);
    int rc = visible_then_allowed(c, gpu, id, action, err);
    if (!rc) rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, field, 1, &value, err);
    if (!rc) rc = apply(c->tx, id, value, err);
    if (rc) return rc;
    json_t *reply = json_pack("{s:s,s:s}", key, id, field, value);
    c->summary = sum_id ? json_deep_copy(reply) : json_pack("{s:s}", field, value);
    c->on_commit = wake;
    api_reply(c->r, 200, reply);
    return GP_OK;
}

int h_node_pool(api_ctx *c, gp_err *err) {
    return set_field(c, 0, "name", "pool", ACT_POOL_MANAGE, 0, inv_node_pool, err);
}

/*
 * PATCH /api/v1/nodes/{node}/labels {"labels": {KEY: VALUE, KEY: null}}: set or remove
 * labels ops keep on a node (over the agent's own); `rack` and `switch` are the topology jobs
 * that span nodes are placed by.  Visible (404), then node.manage (403).  Answers the node.
 */
int h_node_label(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"labels", NULL};
    const char *node = api_param(c->r, "node");
    health_policy pol;
    json_t *out;
    api_target(c->r, "node", node, NULL, NULL);
    int rc = visible_then_allowed(c, 0, node, ACT_NODE_MANAGE, err);
    if (!rc) rc = jx_only_fields(c->body, fields, err);
    json_t *labels = json_object_get(c->body, "labels");
    if (!rc && !labels) rc = gp_err_set(err, GP_EINVALID, "field 'labels' is required");
    if (!rc) rc = inv_node_label(c->tx, node, labels, err);
    if (!rc) rc = inv_health_policy_load(c->tx, &pol, err);
    if (!rc) rc = inv_node_get(c->tx, &pol, node, &out, err);
    if (rc) return rc;
    c->summary = json_pack("{s:O}", "labels", labels);
    c->on_commit = wake; /* where a job that spans nodes goes may change */
    api_reply(c->r, 200, out);
    return GP_OK;
}

int h_gpu_mode(api_ctx *c, gp_err *err) {
    return set_field(c, 1, "uuid", "mode", ACT_NODE_MANAGE, 1, inv_gpu_mode, err);
}

/* ---- GPUs ---- */

int h_gpu_list(api_ctx *c, gp_err *err) {
    json_t *scope, *items;
    health_policy pol;
    const char *health = api_query(c->r, "health");
    if (health && health_parse(health) < 0)
        return gp_err_set(err, GP_EINVALID, "health must be healthy, degraded or failed");
    int rc = read_scope(c, &scope, err);
    if (rc) return rc;
    rc = inv_health_policy_load(c->tx, &pol, err);
    if (!rc) rc = inv_gpu_list(c->tx, &pol, scope, api_query(c->r, "node"), health, &items, err);
    json_decref(scope);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

int h_gpu_get(api_ctx *c, gp_err *err) {
    json_t *out;
    health_policy pol;
    const char *uuid = api_param(c->r, "uuid");
    api_target(c->r, "gpu", uuid, NULL, NULL);
    int rc = gpu_visible(c, uuid, err);
    if (!rc) rc = inv_health_policy_load(c->tx, &pol, err);
    if (!rc) rc = inv_gpu_get(c->tx, &pol, uuid, &out, err);
    if (!rc) api_reply(c->r, 200, out);
    return rc;
}

int h_gpu_history(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *uuid = api_param(c->r, "uuid");
    api_target(c->r, "gpu", uuid, NULL, NULL);
    int rc = gpu_visible(c, uuid, err);
    if (!rc) rc = inv_history(c->tx, NULL, uuid, &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

int h_gpu_reset(api_ctx *c, gp_err *err) {
    inv_transition t;
    const char *uuid = api_param(c->r, "uuid");
    api_target(c->r, "gpu", uuid, NULL, NULL);
    int rc = visible_then_allowed(c, 1, uuid, ACT_NODE_MANAGE, err);
    if (!rc) rc = inv_gpu_reset(c->tx, uuid, c->who->name, &t, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s}", "from", t.from, "to", "healthy");
    c->on_commit = wake;
    api_reply(c->r, 200, json_pack("{s:s,s:s}", "uuid", uuid, "health", "healthy"));
    return GP_OK;
}

/*
 * POST /api/v1/gpus/{uuid}/move {"node"}: give a card's record to another
 * node (a card moved between machines, or a node rebuilt under a new name).
 * ops-engineer or platform-admin; only once the old node is drained (or
 * lost) and no job holds the card (inv_gpu_move_refusal: 409 otherwise).
 * Until then the new node's report of the card is refused (inv_node_report).
 */
int h_gpu_move(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"node", NULL};
    const char *to;
    char from[64];
    const char *uuid = api_param(c->r, "uuid");
    api_target(c->r, "gpu", uuid, NULL, NULL);
    int rc = visible_then_allowed(c, 1, uuid, ACT_GPU_MOVE, err);
    if (!rc) rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "node", 1, &to, err);
    if (!rc) rc = inv_gpu_move(c->tx, uuid, to, from, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s}", "from", from, "to", to);
    c->on_commit = wake; /* the card now counts on its new node */
    api_reply(c->r, 200, json_pack("{s:s,s:s,s:s}", "uuid", uuid, "from", from, "node", to));
    return GP_OK;
}

/* ---- health policy: readers read (SC_GLOBAL, ACT_NODE_READ), ops change ---- */

int h_health_policy_get(api_ctx *c, gp_err *err) {
    health_policy p;
    int rc = inv_health_policy_load(c->tx, &p, err);
    if (!rc) api_reply(c->r, 200, health_policy_json(&p));
    return rc;
}

int h_health_policy_put(api_ctx *c, gp_err *err) {
    health_policy p;
    api_target(c->r, "policy", "health", NULL, NULL);
    int rc = health_policy_parse(c->body, &p, err);
    if (!rc) rc = inv_health_policy_save(c->tx, &p, err);
    if (rc) return rc;
    c->summary = health_policy_json(&p);
    api_reply(c->r, 200, health_policy_json(&p));
    return GP_OK;
}

/* ---- alarms ---- */

/* SC_SIGNED_IN: readers see every alarm; a tenant's members those on GPUs its work held. */
int h_alarm_list(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *tenant = api_query(c->r, "tenant");
    authz_target g = {NULL, NULL};
    int all = authz_check(c->who->bindings, c->who->nbindings, ACT_NODE_READ, &g, gt_now_us()) ==
              AUTHZ_ALLOW;
    if (!all) {
        if (!tenant) return gp_err_set(err, GP_EFORBIDDEN, "name your tenant: ?tenant=T");
        tenancy_tenant t;
        int rc = tenancy_tenant_find(c->tx, tenant, &t, err);
        authz_target tg = {rc ? NULL : t.id, NULL};
        if (rc == GP_ENOTFOUND ||
            (!rc && !authz_visible(c->who->bindings, c->who->nbindings, &tg, gt_now_us())))
            return gp_err_set(err, GP_ENOTFOUND, "not found");
        if (rc) return rc;
    }
    const char *state = api_query(c->r, "state");
    if (state && strcmp(state, "open") && strcmp(state, "acknowledged") && strcmp(state, "resolved"))
        return gp_err_set(err, GP_EINVALID, "state must be open, acknowledged or resolved");
    int rc = inv_alarm_list(c->tx, tenant, &items, err);
    if (rc) return rc;
    if (state) {
        json_t *kept = json_array(), *a;
        size_t i;
        json_array_foreach(items, i, a) if (!strcmp(json_string_value(json_object_get(a, "state")), state))
            json_array_append(kept, a);
        json_decref(items);
        items = kept;
    }
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_alarm_ack(api_ctx *c, gp_err *err) {
    const char *id = api_param(c->r, "id");
    api_target(c->r, "alarm", id, NULL, NULL);
    int rc = inv_alarm_ack(c->tx, id, c->who->name, err);
    if (!rc)
        api_reply(c->r, 200, json_pack("{s:s,s:s}", "id", id, "acked_by", c->who->name));
    return rc;
}
