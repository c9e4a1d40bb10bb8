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

/* Role names the caller holds over the request's project (for priority-class rules). */
static json_t *roles_over(const api_ctx *c) {
    json_t *out = json_array();
    authz_role roles[ROLE__COUNT * 4];
    authz_target t = {c->sc.t.id, c->sc.p.id};
    int64_t now = gt_now_us();
    int cap = (int)(sizeof roles / sizeof *roles);
    int n = authz_roles_covering(c->who->bindings, c->who->nbindings, &t, now, roles, cap);
    authz_role *all = roles;
    if (n > cap && (all = malloc((size_t)n * sizeof *all)))
        authz_roles_covering(c->who->bindings, c->who->nbindings, &t, now, all, n);
    if (!all) all = roles, n = cap; /* out of memory: the first ones */
    for (int i = 0; i < n; i++) json_array_append_new(out, json_string(authz_role_name(all[i])));
    if (all != roles) free(all);
    return out;
}

/* Answer job `id` as the request's transaction sees it: what commits is what is answered. */
static int reply_job(api_ctx *c, const char *id, int status, gp_err *err) {
    json_t *o;
    int rc = jobs_get(c->tx, id, &o, NULL, NULL, err);
    if (!rc) api_reply(c->r, status, o);
    return rc;
}

/* SC_PROJECT, ACT_JOB_SUBMIT, the spec in the body. */
int h_job_submit(api_ctx *c, gp_err *err) {
    char id[RND_ID_LEN];
    api_target(c->r, "job", NULL, NULL, NULL);
    json_t *roles = roles_over(c);
    job_submit js = {.tenant_id = c->sc.t.id, .tenant = c->sc.t.name, .project_id = c->sc.p.id,
                     .project = c->sc.p.name, .submitter = c->who->name, .spec = c->body,
                     .submitter_roles = roles, .project_class = c->sc.p.cls};
    int rc = jobs_submit(c->tx, &js, id, err);
    json_decref(roles);
    if (rc) return rc;
    json_t *array = json_object_get(c->body, "array");
    if (array) api_target(c->r, "job-array", NULL, NULL, NULL);
    api_target(c->r, NULL, id, NULL, NULL);
    c->summary = json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?}", "name", json_object_get(c->body, "name"),
                           "class", json_object_get(c->body, "class"), "units",
                           json_object_get(c->body, "units"), "priority_class",
                           json_object_get(c->body, "priority_class"), "array", array);
    /* a job that spans nodes (gang.c): its shape in the trail too */
    json_t *nodes = json_object_get(c->body, "nodes");
    if (c->summary && nodes) {
        json_object_set(c->summary, "nodes", nodes);
        json_t *per = json_object_get(c->body, "units_per_node");
        if (per) json_object_set(c->summary, "units_per_node", per);
    }
    c->on_commit = kick;
    if (!array) return reply_job(c, id, 201, err);
    /* an array: the array as committed, its tasks by state */
    json_t *o;
    if ((rc = jobs_array_get(c->tx, id, c->sc.p.id, &o, err))) return rc;
    api_reply(c->r, 201, o);
    return GP_OK;
}

/* SC_PROJECT, job.read: an array, its tasks by state and the card-seconds they held. */
int h_array_get(api_ctx *c, gp_err *err) {
    json_t *o;
    const char *id = api_param(c->r, "id");
    api_target(c->r, "job-array", id, NULL, NULL);
    int rc = jobs_array_get(c->tx, id, c->sc.p.id, &o, err);
    if (!rc) api_reply(c->r, 200, o);
    return rc;
}

/* SC_PROJECT: cancel every task of an array that has not ended; its submitter, or who manages
 * the project's jobs (403 for a reader who is neither). */
int h_array_cancel(api_ctx *c, gp_err *err) {
    json_t *o;
    int n = 0;
    const char *id = api_param(c->r, "id");
    api_target(c->r, "job-array", id, NULL, NULL);
    int rc = jobs_array_get(c->tx, id, c->sc.p.id, &o, err);
    if (rc) return rc;
    authz_target t = {c->sc.t.id, c->sc.p.id};
    int own = authz_owner_or(c->who->bindings, c->who->nbindings, c->who->name,
                             json_string_value(json_object_get(o, "submitter")), ACT_JOB_MANAGE,
                             &t, gt_now_us()) == AUTHZ_ALLOW;
    json_decref(o);
    if (!own && (rc = api_allow(c, ACT_JOB_MANAGE, c->sc.t.id, c->sc.p.id, err))) return rc;
    if ((rc = jobs_array_cancel(c->tx, id, c->sc.p.id, c->who->name, &n, err))) return rc;
    c->summary = json_pack("{s:i}", "tasks_cancelled", n);
    c->on_commit = kick_nodes;
    if ((rc = jobs_array_get(c->tx, id, c->sc.p.id, &o, err))) return rc;
    api_reply(c->r, 200, o);
    return GP_OK;
}

int h_job_list(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *state = api_query(c->r, "state");
    static const char *const states[] = {"queued", "admitted", "running", "succeeded", "failed",
                                         "cancelled", "preempted"};
    int known = !state;
    for (size_t i = 0; state && i < sizeof states / sizeof *states; i++)
        known |= !strcmp(state, states[i]);
    if (!known)
        return gp_err_set(err, GP_EINVALID,
                          "state must be a job state (queued, admitted, running, succeeded, "
                          "failed, cancelled, preempted)");
    const char *match = api_query(c->r, "match");
    if (match && !gp_name_valid(match))
        return gp_err_set(err, GP_EINVALID,
                          "match must be a job's name or the start of its id (1-63 lower-case "
                          "letters, digits or '-')");
    int rc = jobs_list(c->tx, c->sc.t.id, c->sc.p.id, state, api_query(c->r, "array"), match,
                       &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

/* The path's {id} in the request's project (another project's job: not found); its
 * submitter in `submitter`, and the job itself in *job when asked (owned). */
static int find_job(api_ctx *c, json_t **job, char submitter[64], gp_err *err) {
    char pid[RND_ID_LEN];
    json_t *o;
    const char *id = api_param(c->r, "id");
    api_target(c->r, "job", id, NULL, NULL);
    int rc = jobs_get(c->tx, id, &o, pid, submitter, err);
    if (rc == GP_ENOTFOUND || (!rc && strcmp(pid, c->sc.p.id) != 0)) {
        if (!rc) json_decref(o);
        return gp_err_set(err, GP_ENOTFOUND, "not found");
    }
    if (rc) return rc;
    if (job) *job = o;
    else json_decref(o);
    return GP_OK;
}

int h_job_get(api_ctx *c, gp_err *err) {
    json_t *job = NULL;
    char sub[64];
    int borrowed = 0;
    int rc = find_job(c, &job, sub, err);
    /* running above its tenant's guarantee (docs/scheduling.md, Guarantees) */
    if (!rc && (rc = share_job_borrowed(c->tx, api_param(c->r, "id"), &borrowed, err)))
        json_decref(job);
    if (rc) return rc;
    json_object_set_new(job, "borrowed", json_boolean(borrowed));
    api_reply(c->r, 200, job);
    return GP_OK;
}

/* The job in the path, which the caller may change: its submitter, or someone who manages
 * jobs in the project (403 for a reader who is neither). */
static int find_own_job(api_ctx *c, gp_err *err) {
    char sub[64];
    int rc = find_job(c, NULL, sub, err);
    if (rc) return rc;
    authz_target t = {c->sc.t.id, c->sc.p.id};
    if (authz_owner_or(c->who->bindings, c->who->nbindings, c->who->name, sub, ACT_JOB_MANAGE,
                       &t, gt_now_us()) == AUTHZ_ALLOW)
        return GP_OK;
    return api_allow(c, ACT_JOB_MANAGE, c->sc.t.id, c->sc.p.id, err); /* 403 or 404 */
}

int h_job_cancel(api_ctx *c, gp_err *err) {
    const char *id = api_param(c->r, "id");
    int rc = find_own_job(c, err);
    if (!rc) rc = jobs_cancel(c->tx, id, c->who->name, err);
    if (rc) return rc;
    c->on_commit = kick_nodes;
    return reply_job(c, id, 200, err);
}

/*
 * PUT /jobs/{id}/priority {"priority_class", "preemptible"?}: the class, and
 * whether preemption may stop the job.  "preemptible": false needs a role
 * the class lets opt out (prio_may_opt_out); left out, an earlier opt-out is
 * kept only if the caller could make it under the new class, so a job never
 * keeps an immunity its new class or its changer would not give (issue 33
 * item 5).  Audited with what it set.
 */
int h_job_priority(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"priority_class", "preemptible", NULL};
    const char *id = api_param(c->r, "id"), *name;
    prio_class pc;
    int pre = 1, has_pre = 0, opted = 0, now_pre = 0;
    int rc = find_own_job(c, err);
    if (rc) return rc;
    if (jx_only_fields(c->body, fields, err) ||
        jx_get_str(c->body, "priority_class", 1, &name, err) ||
        jx_get_bool(c->body, "preemptible", 0, &pre, &has_pre, err) ||
        prio_get(c->tx, name, &pc, err)) {
        if (err->code == GP_ENOTFOUND) err->code = GP_EINVALID;
        return err->code;
    }
    json_t *roles = roles_over(c);
    rc = prio_allowed(&pc, c->sc.p.cls, roles, err);
    if (!rc && has_pre) opted = !pre;
    else if (!rc) rc = jobs_opted_out(c->tx, id, &opted, err);
    gp_err why = GP_ERR_INIT;
    if (!rc && opted && prio_may_opt_out(&pc, roles, &why)) {
        if (has_pre) rc = gp_err_set(err, why.code, "%s", why.msg);
        else opted = 0; /* the new class or this caller gives no immunity: dropped */
    }
    json_decref(roles);
    if (!rc) rc = jobs_set_priority(c->tx, id, &pc, opted, c->who->name, &now_pre, err);
    if (!rc)
        c->summary = json_pack("{s:s,s:i,s:b}", "priority_class", pc.name, "value", pc.value,
                               "preemptible", now_pre);
    prio_release(&pc);
    if (rc) return rc;
    c->on_commit = kick;
    return reply_job(c, id, 200, err);
}

int h_job_logs(api_ctx *c, gp_err *err) {
    json_t *out;
    char sub[64];
    int rc = find_job(c, NULL, sub, err);
    if (!rc) rc = jobs_logs(c->tx, api_param(c->r, "id"), &out, err);
    if (!rc) api_reply(c->r, 200, out);
    return rc;
}

/* After the request's transaction: the explanation simulates the whole cluster's round, which
 * reads every tenant's work, so it has its own transaction (sched_explain), outside the one
 * tied to the caller's tenant.  after_arg: the priority classes the caller may use here. */
static int explain_after(api_ctx *c, gp_err *err) {
    json_t *out;
    int rc = sched_explain(c->r->store, api_param(c->r, "id"), c->after_arg, &out, err);
    if (!rc) api_reply(c->r, 200, out);
    return rc;
}

int h_job_explain(api_ctx *c, gp_err *err) {
    json_t *classes;
    char sub[64];
    int rc = find_job(c, NULL, sub, err);
    if (rc) return rc;
    /* the priority classes the submitter's side may use here */
    json_t *roles = roles_over(c), *allowed = json_array();
    if (prio_list(c->tx, &classes, NULL) == GP_OK) {
        size_t i;
        json_t *cl;
        json_array_foreach(classes, i, cl) {
            prio_class pc;
            if (prio_get(c->tx, json_string_value(json_object_get(cl, "name")), &pc, NULL) ==
                GP_OK) {
                if (prio_allowed(&pc, c->sc.p.cls, roles, NULL) == GP_OK)
                    json_array_append(allowed, cl);
                prio_release(&pc);
            }
        }
        json_decref(classes);
    }
    json_decref(roles);
    c->after = explain_after;
    c->after_arg = allowed;
    return GP_OK;
}

/* ---- quotas ---- */

/* SC_TENANT, ACT_TENANT_READ or SC_PROJECT, ACT_PROJECT_READ (routes.c) */
/* A quota as answered: a project's says what it inherits from its tenant too. */
static int quota_reply(api_ctx *c, const quota_set *q, gp_err *err) {
    json_t *o = quota_json(q);
    if (c->sc.has_project) {
        quota_set t;
        int rc = quota_load(c->tx, c->sc.t.id, NULL, &t, err);
        if (rc) {
            json_decref(o);
            return rc;
        }
        json_object_set_new(o, "inherited", quota_inherited_json(q, &t));
    }
    api_reply(c->r, 200, o);
    return GP_OK;
}

int h_quota_get(api_ctx *c, gp_err *err) {
    quota_set q;
    int rc = quota_load(c->tx, c->sc.t.id, c->sc.has_project ? c->sc.p.id : NULL, &q, err);
    return rc ? rc : quota_reply(c, &q, err);
}

/* What quota q guarantees of one kind (0 its own guaranteed_gpus, 1 class `name`'s, 2 pool
 * `name`'s), QUOTA_NONE when nothing: for a project, its part of its tenant's (step 6b). */
static int64_t part_of(const quota_set *q, int kind, const char *name) {
    int k;
    if (kind == 0) return q->guarantee;
    if (kind == 1) return (k = quota_gclass(q, name)) >= 0 ? q->gclass_g[k] : QUOTA_NONE;
    return (k = quota_gpool(q, name)) >= 0 ? q->gpool_g[k] : QUOTA_NONE;
}

static const char *const part_what[] = {"guarantee", "guarantee of class", "guarantee in pool"};

/* Every project's stored quota of tenant sc->t but `skip` (NULL: none): *out (caller frees). */
static int project_quotas(store_tx *tx, const api_scope *sc, const char *skip, quota_set **out,
                          char (**names)[64], int *nq, gp_err *err) {
    tenancy_project *ps;
    int n, rc;
    *out = NULL;
    *names = NULL;
    *nq = 0;
    if ((rc = tenancy_project_list(tx, &sc->t, &ps, &n, err))) return rc;
    quota_set *qs = calloc((size_t)n + 1, sizeof *qs);
    char(*nm)[64] = calloc((size_t)n + 1, sizeof *nm);
    if (!qs || !nm) rc = gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; !rc && i < n; i++)
        if (!skip || strcmp(ps[i].id, skip)) {
            snprintf(nm[*nq], sizeof nm[0], "%s", ps[i].name);
            rc = quota_load(tx, sc->t.id, ps[i].id, &qs[(*nq)++], err);
        }
    free(ps);
    if (rc) {
        free(qs);
        free(nm);
        *nq = 0;
        return rc;
    }
    *out = qs;
    *names = nm;
    return GP_OK;
}

/*
 * A project's parts of its tenant's guarantees (its own, a class's, a pool's; sched.h steps
 * 6b-6d): each names one its tenant has, and with the other projects' parts of it adds up to
 * it at most.  `tenant` is the tenant's quota, ps[0..n) the other projects'.
 */
static int parts_fit(const api_scope *sc, const quota_set *next, const quota_set *tenant,
                     const quota_set *ps, int n, gp_err *err) {
    int ne = 1 + next->ngclass + next->ngpool;
    for (int e = 0; e < ne; e++) {
        int kind = e == 0 ? 0 : e <= next->ngclass ? 1 : 2;
        const char *name = kind == 1   ? next->gclass_name[e - 1]
                           : kind == 2 ? next->gpool_name[e - 1 - next->ngclass]
                                       : "";
        int64_t mine = part_of(next, kind, name), of = part_of(tenant, kind, name);
        if (mine == QUOTA_NONE) continue;
        if (of == QUOTA_NONE && kind == 0)
            return gp_err_set(err, GP_ECONFLICT,
                              "tenant %s has no guarantee: a project's guaranteed_gpus is a part "
                              "of its tenant's",
                              sc->t.name);
        if (of == QUOTA_NONE)
            return gp_err_set(err, GP_ECONFLICT,
                              "tenant %s has no %s %s: a project's is a part of its tenant's",
                              sc->t.name, part_what[kind], name);
        int64_t parts = mine;
        for (int i = 0; i < n; i++)
            if (part_of(&ps[i], kind, name) != QUOTA_NONE) parts += part_of(&ps[i], kind, name);
        if (parts > of)
            return gp_err_set(err, GP_ECONFLICT,
                              "the projects' parts would add up to %g GPUs, above tenant %s's "
                              "%s%s%s of %g",
                              (double)parts / 1000.0, sc->t.name, part_what[kind],
                              kind ? " " : "", name, (double)of / 1000.0);
    }
    return GP_OK;
}

/* Check `next` against the tenant (project ceilings) or against its projects (tenant ceiling). */
static int quota_consistent(store_tx *tx, const api_scope *sc, int project, const quota_set *next,
                            gp_err *err) {
    quota_set other, *pqs;
    char(*pnames)[64];
    int n, rc;
    if (project) {
        int kept = next->kept != 0;
        for (int i = 0; i < next->ngclass; i++) kept |= next->gclass_kept[i] != 0;
        for (int i = 0; i < next->ngpool; i++) kept |= next->gpool_kept[i] != 0;
        if (kept || next->weight != 1)
            return gp_err_set(err, GP_EINVALID,
                              "kept_gpus and borrow_weight are a tenant's; a project has parts "
                              "of its tenant's guarantees (guaranteed_gpus, class_guarantees, "
                              "pool_guarantees)");
        if ((rc = quota_load(tx, sc->t.id, NULL, &other, err)) ||
            (rc = quota_within(next, &other, err)))
            return rc;
        if (next->guarantee == QUOTA_NONE && !next->ngclass && !next->ngpool) return GP_OK;
        if ((rc = project_quotas(tx, sc, sc->p.id, &pqs, &pnames, &n, err))) return rc;
        rc = parts_fit(sc, next, &other, pqs, n, err);
        free(pqs);
        free(pnames);
        return rc;
    }
    if ((rc = project_quotas(tx, sc, NULL, &pqs, &pnames, &n, err))) return rc;
    for (int i = 0; !rc && i < n; i++) {
        if (quota_within(&pqs[i], next, NULL) != GP_OK) {
            /* only ceilings the project actually sets can conflict */
            int conflict = 0;
            for (int d = 0; d < QD__N; d++)
                if (next->v[d] != QUOTA_NONE && pqs[i].v[d] != QUOTA_NONE && pqs[i].v[d] > next->v[d])
                    conflict = 1;
            if (conflict)
                rc = gp_err_set(err, GP_ECONFLICT,
                                "project %s has a higher ceiling than the new tenant ceiling; "
                                "lower the project's first",
                                pnames[i]);
        }
    }
    /* the projects' parts of each of its guarantees: still within them */
    for (int i = 0; !rc && i < n; i++) {
        int ne = 1 + pqs[i].ngclass + pqs[i].ngpool;
        for (int e = 0; !rc && e < ne; e++) {
            int kind = e == 0 ? 0 : e <= pqs[i].ngclass ? 1 : 2;
            const char *name = kind == 1   ? pqs[i].gclass_name[e - 1]
                               : kind == 2 ? pqs[i].gpool_name[e - 1 - pqs[i].ngclass]
                                           : "";
            if (part_of(&pqs[i], kind, name) == QUOTA_NONE) continue;
            int64_t parts = 0, of = part_of(next, kind, name);
            for (int k = 0; k < n; k++)
                if (part_of(&pqs[k], kind, name) != QUOTA_NONE) parts += part_of(&pqs[k], kind, name);
            if (parts > 0 && (of == QUOTA_NONE || of < parts))
                rc = gp_err_set(err, GP_ECONFLICT,
                                "tenant %s's projects have parts of its %s%s%s adding up to %g "
                                "GPUs; lower theirs first",
                                sc->t.name, part_what[kind], kind ? " " : "", name,
                                (double)parts / 1000.0);
        }
    }
    free(pqs);
    free(pnames);
    return rc;
}

/* PUT replaces every ceiling; PATCH (`patch`) merges the body over the stored ones
 * (quota_patch()), read in the write transaction so concurrent patches all apply.  A
 * tenant's is a sensitive route (tenant.quota.raise): only a change that raises a ceiling
 * waits for approval; the dry run says when it does not (not_sensitive). */
int api_quota_change(api_ctx *c, json_t *body, int patch, quota_set *next, gp_err *err) {
    quota_set cur;
    int project = c->sc.has_project;
    const char *pid = project ? c->sc.p.id : NULL;
    int rc = quota_load(c->tx, c->sc.t.id, pid, &cur, err);
    if (!rc) rc = patch ? quota_patch(&cur, body, next, err) : quota_parse(body, next, err);
    if (!rc) rc = quota_consistent(c->tx, &c->sc, project, next, err);
    if (!rc) rc = quota_save(c->tx, c->sc.t.id, pid, next, err);
    if (rc) return rc;
    if (c->dry_run) {
        c->not_sensitive = project || !quota_raises(&cur, next);
        c->summary = json_incref(c->body);
        return GP_OK;
    }
    c->summary = json_pack("{s:o,s:o}", "from", quota_json(&cur), "to", quota_json(next));
    c->on_commit = kick; /* new ceilings apply to the next admissions at once */
    return GP_OK;
}

static int quota_write(api_ctx *c, int patch, gp_err *err) {
    quota_set next;
    int project = c->sc.has_project;
    api_target(c->r, "quota", project ? c->sc.p.name : c->sc.t.name, NULL, NULL);
    int rc = api_quota_change(c, c->body, patch, &next, err);
    if (rc || c->dry_run) return rc;
    return quota_reply(c, &next, err);
}

int h_quota_put(api_ctx *c, gp_err *err) { return quota_write(c, 0, err); }
int h_quota_patch(api_ctx *c, gp_err *err) { return quota_write(c, 1, err); }

/* ---- priority classes: any signed-in user reads; changes are priority_class.change ---- */

/* Answer every class (name NULL) or one (404 when absent), read in the request's tx. */
static int prio_reply(api_ctx *c, const char *name, int status, gp_err *err) {
    json_t *items, *cl;
    size_t i;
    int rc = prio_list(c->tx, &items, err);
    if (rc) return rc;
    if (!name) {
        api_reply(c->r, status, api_list(items, NULL));
        return GP_OK;
    }
    json_array_foreach(items, i, cl) if (!strcmp(json_string_value(json_object_get(cl, "name")),
                                                 name)) {
        api_reply(c->r, status, json_incref(cl));
        json_decref(items);
        return GP_OK;
    }
    json_decref(items);
    return gp_err_set(err, GP_ENOTFOUND, "not found");
}

int h_prio_list(api_ctx *c, gp_err *err) { return prio_reply(c, NULL, 200, err); }
int h_prio_get(api_ctx *c, gp_err *err) { return prio_reply(c, api_param(c->r, "name"), 200, err); }

/* A sensitive route: dispatch validates it by a dry run, files the approval, applies it. */
static int prio_write(api_ctx *c, int create, gp_err *err) {
    const char *name = create ? json_string_value(json_object_get(c->body, "name"))
                              : api_param(c->r, "name");
    char nm[64] = "";
    if (name) snprintf(nm, sizeof nm, "%s", name);
    api_target(c->r, "priority-class", nm, NULL, NULL);
    int rc = prio_put(c->tx, c->body, create, nm, err);
    if (rc) return rc;
    c->summary = json_incref(c->body);
    return c->dry_run ? GP_OK : prio_reply(c, nm, create ? 201 : 200, err);
}

int h_prio_create(api_ctx *c, gp_err *err) { return prio_write(c, 1, err); }
int h_prio_put(api_ctx *c, gp_err *err) { return prio_write(c, 0, err); }

int h_prio_delete(api_ctx *c, gp_err *err) {
    const char *name = api_param(c->r, "name");
    api_target(c->r, "priority-class", name, NULL, NULL);
    int rc = prio_delete(c->tx, name, err);
    if (!rc) api_reply(c->r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    return rc;
}

/* ---- the scheduler policy: the reclaim cap (share.h); anyone signed in reads it, who
 * manages priority classes changes it ---- */

int h_sched_policy_get(api_ctx *c, gp_err *err) {
    share_policy p;
    int rc = share_policy_load(c->tx, &p, err);
    if (!rc) api_reply(c->r, 200, share_policy_json(&p));
    return rc;
}

/* The fields the body names change; the others stay.  Audited with the policy as set. */
int h_sched_policy_put(api_ctx *c, gp_err *err) {
    share_policy p;
    api_target(c->r, "policy", "scheduler", NULL, NULL);
    int rc = share_policy_load(c->tx, &p, err);
    if (!rc) rc = share_policy_apply(c->body, &p, err);
    if (!rc) rc = share_policy_save(c->tx, &p, err);
    if (rc) return rc;
    c->summary = share_policy_json(&p);
    c->on_commit = kick; /* a job past a new cap may now be reclaimed, or no longer */
    api_reply(c->r, 200, share_policy_json(&p));
    return GP_OK;
}

/* ---- bindings ---- */

/* SC_SIGNED_IN: ops and admins see every binding; a tenant's readers name their tenant. */
int h_binding_list(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *tenant = api_query(c->r, "tenant"), *at = api_query(c->r, "at");
    int64_t at_us = 0;
    if (at && (gt_parse_rfc3339(at, &at_us) != 0 || at_us <= 0))
        return gp_err_set(err, GP_EINVALID, "at must be an RFC 3339 time after 1970");
    authz_target g = {NULL, NULL};
    int all = authz_check(c->who->bindings, c->who->nbindings, ACT_NODE_READ, &g, gt_now_us()) ==
              AUTHZ_ALLOW;
    const char *node = api_query(c->r, "node");
    int rc;
    if (node) {
        /* the incident view: who was on this node (at that time) - ops and admins only */
        if (!all) return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
        rc = bind_list_node(c->tx, node, at_us, &items, err);
    } else {
        tenancy_tenant t;
        const char *tid = NULL;
        if (tenant) {
            rc = tenancy_tenant_find(c->tx, tenant, &t, err);
            if (rc == GP_ENOTFOUND) return gp_err_set(err, rc, "not found");
            if (!rc && !all) rc = api_allow(c, ACT_TENANT_READ, t.id, NULL, err);
            if (rc) return rc;
            tid = t.id;
        } else if (!all) {
            return gp_err_set(err, GP_EFORBIDDEN, "name your tenant: ?tenant=T");
        }
        rc = bind_list(c->tx, api_query(c->r, "gpu"), api_query(c->r, "job"), tid, at_us, &items,
                       err);
    }
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

/* POST /api/v1/bindings/{id}/release {"reason"}: ops end a binding by hand. */
int h_binding_release(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"reason", NULL};
    const char *why, *id = api_param(c->r, "id");
    api_target(c->r, "binding", id, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "reason", 1, &why, err);
    if (rc) return rc;
    if (!*why || strlen(why) > 200)
        return gp_err_set(err, GP_EINVALID, "a reason (1-200 characters) is required");
    if ((rc = jobs_release_binding(c->tx, id, why, err))) return rc;
    c->summary = json_incref(c->body);
    c->on_commit = kick_nodes;
    api_reply(c->r, 200, json_pack("{s:s,s:s}", "id", id, "state", "released"));
    return GP_OK;
}
