/*
 * h_job.c - jobs, quotas, priority classes and bindings.
 *
 *   POST /tenants/{t}/projects/{p}/jobs               project-users, project-/tenant-admins
 *   GET  /tenants/{t}/projects/{p}/jobs[?state=]      readers of the project
 *   GET  …/jobs/{id} | …/jobs/{id}/explain            readers
 *   POST …/jobs/{id}/cancel, PUT …/jobs/{id}/priority the submitter, or project-/tenant-admins
 *   GET|PUT|PATCH /tenants/{t}/quota                  readers | platform-admin (raise: sensitive)
 *   GET|PUT|PATCH /tenants/{t}/projects/{p}/quota     readers | tenant-admin (within the tenant's)
 *   /priority-classes[/{name}]                        everyone reads; platform-admin changes
 *                                                     (sensitive: priority_class.change)
 *   GET /bindings?gpu=&job=&tenant=&at=               ops/admins: all; tenant readers: ?tenant=
 *
 * A submit, cancel, priority or quota change, or a released binding only
 * wakes the leader's scheduler (sched/loop.h): no round runs on a request
 * thread.  The answer carries the job as committed (queued, "waiting for the
 * scheduler"); the round follows within milliseconds on the leader (from
 * another server: forwarded by NOTIFY, else with the leader's next tick).
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../quota/quota.h"
#include "../sched/jobs.h"
#include "../sched/loop.h"
#include "../sched/share.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

/* Something may move: wake the scheduler (a non-leader forwards the wake to the leader over
 * PostgreSQL NOTIFY, or leaves it to the leader's tick; sched/loop.h). */
static void kick(api_req *r) { sched_wake(r->store, r->leader == 1); }

/* A change that may stop workloads on nodes we do not know at hand: every waiting agent
 * looks again (sched/loop.h). */
static void kick_nodes(api_req *r) {
    sched_node_touch(r->store, NULL);
    kick(r);
}

/* Role names the caller holds over project p of tenant t (for priority-class rules). */
static json_t *roles_over(api_req *r, const api_scope *sc) {
    json_t *out = json_array();
    authz_role roles[ROLE__COUNT * 4];
    authz_target t = {sc->t.id, sc->p.id};
    int64_t now = gt_now_us();
    int cap = (int)(sizeof roles / sizeof *roles);
    int n = authz_roles_covering(r->who->bindings, r->who->nbindings, &t, now, roles, cap);
    authz_role *all = roles;
    if (n > cap && (all = malloc((size_t)n * sizeof *all)))
        authz_roles_covering(r->who->bindings, r->who->nbindings, &t, now, all, n);
    if (!all) all = roles, n = cap; /* out of memory: the first ones */
    for (int i = 0; i < n; i++) json_array_append_new(out, json_string(authz_role_name(all[i])));
    if (all != roles) free(all);
    return out;
}

static void reply_job(api_req *r, const char *id, int status) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *o;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = jobs_get(tx, id, &o, NULL, NULL, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, status, o);
}

void h_job_submit(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body;
    char id[RND_ID_LEN];
    api_target(r, "job", NULL, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (api_load_scope(r, tx, &sc, ACT_JOB_SUBMIT) || api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    json_t *roles = roles_over(r, &sc);
    job_submit js = {.tenant_id = sc.t.id, .tenant = sc.t.name, .project_id = sc.p.id,
                     .project = sc.p.name, .submitter = r->who->name, .spec = body,
                     .submitter_roles = roles, .project_class = sc.p.cls};
    int rc = jobs_submit(tx, &js, id, &err);
    json_decref(roles);
    if (rc) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    api_target(r, NULL, id, NULL, NULL);
    json_t *sum = json_pack("{s:O?,s:O?,s:O?,s:O?}", "name", json_object_get(body, "name"), "class",
                            json_object_get(body, "class"), "units", json_object_get(body, "units"),
                            "priority_class", json_object_get(body, "priority_class"));
    json_decref(body);
    if (api_finish(r, tx, 201, sum)) return;
    kick(r);
    reply_job(r, id, 201);
}

void h_job_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *items;
    const char *state = api_query(r, "state");
    static const char *const states[] = {"queued", "admitted", "running", "succeeded", "failed",
                                         "cancelled", "preempted"};
    int known = !state;
    for (size_t i = 0; state && i < sizeof states / sizeof *states; i++) known |= !strcmp(state, states[i]);
    if (!known) {
        api_error(r, 400, "invalid_argument", "state must be a job state (queued, admitted, running, "
                                              "succeeded, failed, cancelled, preempted)");
        return;
    }
    if (api_begin(r, STORE_READ, &tx)) return;
    if (api_load_scope(r, tx, &sc, ACT_JOB_READ)) {
        store_rollback(tx);
        return;
    }
    int rc = jobs_list(tx, sc.t.id, sc.p.id, state, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

/* Load {id} inside the project; 404 when it is another project's. */
static int load_job(api_req *r, store_tx *tx, api_scope *sc, int action, json_t **job,
                    char submitter[64]) {
    gp_err err = GP_ERR_INIT;
    char pid[RND_ID_LEN];
    if (api_load_scope(r, tx, sc, action)) return -1;
    const char *id = api_param(r, "id");
    api_target(r, "job", id, NULL, NULL);
    int rc = jobs_get(tx, id, job, pid, submitter, &err);
    if (rc == GP_ENOTFOUND || (!rc && strcmp(pid, sc->p.id) != 0)) {
        if (!rc) json_decref(*job);
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

void h_job_get(api_req *r) {
    store_tx *tx;
    api_scope sc;
    json_t *job;
    char sub[64];
    if (api_begin(r, STORE_READ, &tx)) return;
    int ok = !load_job(r, tx, &sc, ACT_JOB_READ, &job, sub), borrowed = 0;
    gp_err err = GP_ERR_INIT;
    /* running above its tenant's guarantee (docs/scheduling.md, Guarantees) */
    if (ok && share_job_borrowed(tx, api_param(r, "id"), &borrowed, &err)) {
        json_decref(job);
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    if (!ok) return;
    json_object_set_new(job, "borrowed", json_boolean(borrowed));
    api_reply(r, 200, job);
}

/* The submitter, or someone who manages jobs in the project. */
static int may_change(api_req *r, const api_scope *sc, const char *submitter) {
    authz_target t = {sc->t.id, sc->p.id};
    if (authz_owner_or(r->who->bindings, r->who->nbindings, r->who->name, submitter,
                       ACT_JOB_MANAGE, &t, gt_now_us()) == AUTHZ_ALLOW)
        return 1;
    return api_authorize(r, ACT_JOB_MANAGE, sc->t.id, sc->p.id); /* the denial, audited */
}

void h_job_cancel(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *job;
    char sub[64];
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (load_job(r, tx, &sc, ACT_JOB_READ, &job, sub)) {
        store_rollback(tx);
        return;
    }
    json_decref(job);
    if (!may_change(r, &sc, sub)) {
        store_rollback(tx);
        return;
    }
    if (jobs_cancel(tx, api_param(r, "id"), r->who->name, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 200, NULL)) return;
    kick_nodes(r);
    reply_job(r, api_param(r, "id"), 200);
}

/*
 * PUT /jobs/{id}/priority {"priority_class", "preemptible"?}: the class, and
 * whether preemption may stop the job.  "preemptible": false needs a role
 * the class lets opt out (prio_may_opt_out); left out, an earlier opt-out is
 * kept only if the caller could make it under the new class, so a job never
 * keeps an immunity its new class or its changer would not give (issue 33
 * item 5).  Audited with what it set.
 */
void h_job_priority(api_req *r) {
    static const char *const fields[] = {"priority_class", "preemptible", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *job, *body;
    char sub[64];
    const char *name;
    prio_class pc;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (load_job(r, tx, &sc, ACT_JOB_READ, &job, sub)) {
        store_rollback(tx);
        return;
    }
    json_decref(job);
    if (!may_change(r, &sc, sub) || api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    int pre = 1, has_pre = 0, opted = 0, now_pre = 0;
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "priority_class", 1, &name, &err) ||
        jx_get_bool(body, "preemptible", 0, &pre, &has_pre, &err) ||
        prio_get(tx, name, &pc, &err)) {
        json_decref(body);
        if (err.code == GP_ENOTFOUND) err.code = GP_EINVALID;
        api_abort(r, tx, &err);
        return;
    }
    json_t *roles = roles_over(r, &sc);
    int rc = prio_allowed(&pc, sc.p.cls, roles, &err);
    if (!rc && has_pre) opted = !pre;
    else if (!rc) rc = jobs_opted_out(tx, api_param(r, "id"), &opted, &err);
    gp_err why = GP_ERR_INIT;
    if (!rc && opted && prio_may_opt_out(&pc, roles, &why)) {
        if (has_pre) rc = gp_err_set(&err, why.code, "%s", why.msg);
        else opted = 0; /* the new class or this caller gives no immunity: dropped */
    }
    json_decref(roles);
    if (!rc) rc = jobs_set_priority(tx, api_param(r, "id"), &pc, opted, r->who->name, &now_pre, &err);
    json_t *sum = json_pack("{s:s,s:i,s:b}", "priority_class", pc.name, "value", pc.value,
                            "preemptible", now_pre);
    prio_release(&pc);
    json_decref(body);
    if (rc) {
        json_decref(sum);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 200, sum)) return;
    kick(r);
    reply_job(r, api_param(r, "id"), 200);
}

void h_job_logs(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *job, *out;
    char sub[64];
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_job(r, tx, &sc, ACT_JOB_READ, &job, sub)) {
        store_rollback(tx);
        return;
    }
    json_decref(job);
    int rc = jobs_logs(tx, api_param(r, "id"), &out, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, out);
}

void h_job_explain(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *job, *classes, *out;
    char sub[64];
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_job(r, tx, &sc, ACT_JOB_READ, &job, sub)) {
        store_rollback(tx);
        return;
    }
    json_decref(job);
    /* the priority classes the submitter's side may use here */
    json_t *roles = roles_over(r, &sc), *allowed = json_array();
    if (prio_list(tx, &classes, &err) == GP_OK) {
        size_t i;
        json_t *c;
        json_array_foreach(classes, i, c) {
            prio_class pc;
            if (prio_get(tx, json_string_value(json_object_get(c, "name")), &pc, NULL) == GP_OK) {
                if (prio_allowed(&pc, sc.p.cls, roles, NULL) == GP_OK)
                    json_array_append(allowed, c);
                prio_release(&pc);
            }
        }
        json_decref(classes);
    }
    json_decref(roles);
    store_rollback(tx);
    int rc = sched_explain(r->store, api_param(r, "id"), allowed, &out, &err);
    json_decref(allowed);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, out);
}

/* ---- quotas ---- */

void h_quota_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    quota_set q;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (api_load_scope(r, tx, &sc, api_param(r, "project") ? ACT_PROJECT_READ : ACT_TENANT_READ)) {
        store_rollback(tx);
        return;
    }
    int rc = quota_load(tx, sc.t.id, sc.has_project ? sc.p.id : NULL, &q, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, quota_json(&q));
}

/* Check `next` against the tenant (project ceilings) or against its projects (tenant ceiling). */
static int quota_consistent(store_tx *tx, const api_scope *sc, int project, const quota_set *next,
                            gp_err *err) {
    quota_set other;
    if (project) {
        if (next->guarantee != QUOTA_NONE || next->kept || next->weight != 1)
            return gp_err_set(err, GP_EINVALID,
                              "guaranteed_gpus, kept_gpus and borrow_weight are a tenant's; a "
                              "project shares its tenant's guarantee");
        int rc = quota_load(tx, sc->t.id, NULL, &other, err);
        return rc ? rc : quota_within(next, &other, err);
    }
    tenancy_project *ps;
    int n, rc = tenancy_project_list(tx, &sc->t, &ps, &n, err);
    for (int i = 0; !rc && i < n; i++) {
        rc = quota_load(tx, sc->t.id, ps[i].id, &other, err);
        if (!rc && quota_within(&other, next, NULL) != GP_OK) {
            /* only ceilings the project actually sets can conflict */
            int conflict = 0;
            for (int d = 0; d < QD__N; d++)
                if (next->v[d] != QUOTA_NONE && other.v[d] != QUOTA_NONE && other.v[d] > next->v[d])
                    conflict = 1;
            if (conflict)
                rc = gp_err_set(err, GP_ECONFLICT,
                                "project %s has a higher ceiling than the new tenant ceiling; "
                                "lower the project's first",
                                ps[i].name);
        }
    }
    free(ps);
    return rc;
}

/* PUT replaces every ceiling; PATCH (`patch`) merges the body over the stored ones
 * (quota_patch()), re-read in the write transaction so concurrent patches all apply. */
static void quota_write(api_req *r, int patch) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body;
    quota_set cur, next;
    int project = api_param(r, "project") != NULL;
    api_target(r, "quota", project ? api_param(r, "project") : api_param(r, "tenant"), NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (api_load_scope(r, tx, &sc, project ? ACT_QUOTA_PROJECT_SET : ACT_QUOTA_TENANT_SET) ||
        api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    int rc = quota_load(tx, sc.t.id, project ? sc.p.id : NULL, &cur, &err);
    if (!rc) rc = patch ? quota_patch(&cur, body, &next, &err) : quota_parse(body, &next, &err);
    if (!rc) rc = quota_consistent(tx, &sc, project, &next, &err);
    store_rollback(tx);
    if (rc) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    /* raising a tenant's ceiling is a sensitive operation */
    if (!project && quota_raises(&cur, &next)) {
        int pending = api_needs_approval(r, "tenant.quota.raise", sc.t.name, body);
        if (pending) {
            json_decref(body);
            return;
        }
    }
    /* the write re-checks consistency in its own transaction (writers are serialised) */
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if ((patch && (quota_load(tx, sc.t.id, project ? sc.p.id : NULL, &cur, &err) ||
                   quota_patch(&cur, body, &next, &err))) ||
        quota_consistent(tx, &sc, project, &next, &err) ||
        quota_save(tx, sc.t.id, project ? sc.p.id : NULL, &next, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:o,s:o}", "from", quota_json(&cur), "to", quota_json(&next));
    json_decref(body);
    if (api_finish(r, tx, 200, sum)) return;
    kick(r); /* new ceilings apply to the next admissions at once */
    api_reply(r, 200, quota_json(&next));
}

void h_quota_put(api_req *r) { quota_write(r, 0); }
void h_quota_patch(api_req *r) { quota_write(r, 1); }

/* ---- priority classes ---- */

void h_prio_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = prio_list(tx, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

static void prio_reply(api_req *r, const char *name, int status) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = prio_list(tx, &items, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    size_t i;
    json_t *c;
    json_array_foreach(items, i, c) if (!strcmp(json_string_value(json_object_get(c, "name")), name)) {
        api_reply(r, status, json_incref(c));
        json_decref(items);
        return;
    }
    json_decref(items);
    api_error(r, 404, "not_found", "not found");
}

void h_prio_get(api_req *r) { prio_reply(r, api_param(r, "name"), 200); }

static void prio_write(api_req *r, int create) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    if (!api_authorize(r, ACT_PRIORITY_MANAGE, NULL, NULL) || api_body(r, &body)) return;
    const char *name = create ? json_string_value(json_object_get(body, "name"))
                              : api_param(r, "name");
    char nm[64] = "";
    if (name) snprintf(nm, sizeof nm, "%s", name);
    api_target(r, "priority-class", nm, NULL, NULL);
    /* validate first (dry run), then ask for approval, then apply */
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    int rc = prio_put(tx, body, create, nm, &err);
    store_rollback(tx);
    if (rc) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    if (api_needs_approval(r, "priority_class.change", NULL, body)) {
        json_decref(body);
        return;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (prio_put(tx, body, create, nm, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, create ? 201 : 200, body)) return;
    prio_reply(r, nm, create ? 201 : 200);
}

void h_prio_create(api_req *r) { prio_write(r, 1); }
void h_prio_put(api_req *r) { prio_write(r, 0); }

void h_prio_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_target(r, "priority-class", api_param(r, "name"), NULL, NULL);
    if (!api_authorize(r, ACT_PRIORITY_MANAGE, NULL, NULL)) return;
    /* dry run first: an approval is only ever for a deletion that can happen */
    if (api_begin(r, STORE_WRITE, &tx)) return;
    int bad = prio_delete(tx, api_param(r, "name"), &err);
    store_rollback(tx);
    if (bad) {
        api_fail(r, &err);
        return;
    }
    if (api_needs_approval(r, "priority_class.change", NULL, NULL)) return;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (prio_delete(tx, api_param(r, "name"), &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, NULL))
        api_reply(r, 200, json_pack("{s:s,s:b}", "name", api_param(r, "name"), "deleted", 1));
}

/* ---- bindings ---- */

void h_binding_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    const char *tenant = api_query(r, "tenant"), *at = api_query(r, "at");
    int64_t at_us = 0;
    if (at && (gt_parse_rfc3339(at, &at_us) != 0 || at_us <= 0)) {
        api_error(r, 400, "invalid_argument", "at must be an RFC 3339 time after 1970");
        return;
    }
    authz_target g = {NULL, NULL};
    int all = authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &g, gt_now_us()) ==
              AUTHZ_ALLOW;
    const char *node = api_query(r, "node");
    if (node) {
        /* the incident view: who was on this node (at that time) - ops and admins only */
        if (!all) {
            api_error(r, 403, "forbidden", "your role does not allow this action here");
            return;
        }
        if (api_begin(r, STORE_READ, &tx)) return;
        int rc = bind_list_node(tx, node, at_us, &items, &err);
        store_rollback(tx);
        if (rc) api_fail(r, &err);
        else api_reply(r, 200, api_list(items, NULL));
        return;
    }
    if (api_begin(r, STORE_READ, &tx)) return;
    tenancy_tenant t;
    const char *tid = NULL;
    if (tenant) {
        int rc = tenancy_tenant_find(tx, tenant, &t, &err);
        if (rc == GP_ENOTFOUND || (!rc && !all && !api_authorize(r, ACT_TENANT_READ, t.id, NULL))) {
            store_rollback(tx);
            if (!r->status) api_error(r, 404, "not_found", "not found");
            return;
        }
        if (rc) {
            api_abort(r, tx, &err);
            return;
        }
        tid = t.id;
    } else if (!all) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "name your tenant: ?tenant=T");
        return;
    }
    int rc = bind_list(tx, api_query(r, "gpu"), api_query(r, "job"), tid, at_us, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

/* POST /api/v1/bindings/{id}/release {"reason"}: ops end a binding by hand. */
void h_binding_release(api_req *r) {
    static const char *const fields[] = {"reason", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    const char *why;
    api_target(r, "binding", api_param(r, "id"), NULL, NULL);
    if (!api_authorize(r, ACT_NODE_MANAGE, NULL, NULL) || api_body(r, &body)) return;
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "reason", 1, &why, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    if (!*why || strlen(why) > 200) {
        json_decref(body);
        api_error(r, 400, "invalid_argument", "a reason (1-200 characters) is required");
        return;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (jobs_release_binding(tx, api_param(r, "id"), why, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 200, body)) return;
    kick_nodes(r);
    api_reply(r, 200, json_pack("{s:s,s:s}", "id", api_param(r, "id"), "state", "released"));
}

/* The leader's tick (and a leader's handler): wake the scheduler thread; never a round here. */
int api__sched_round(store_t *st, gp_err *err) {
    (void)err;
    sched_wake(st, 1);
    return GP_OK;
}

int api__card_hours_enforce(store_t *st, gp_err *err) {
    store_tx *tx;
    int stopped = 0;
    int rc = store_begin(st, STORE_WRITE, &tx, err);
    if (rc) return rc;
    rc = jobs_card_hours_enforce(tx, gt_now_us(), &stopped, err);
    if (rc) {
        store_rollback(tx);
        return rc;
    }
    rc = store_commit(tx, err);
    if (!rc && stopped) sched_node_touch(st, NULL); /* their agents stop them now */
    return rc;
}
