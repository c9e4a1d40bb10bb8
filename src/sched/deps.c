/*
 * deps.c - job dependencies: a job that starts only once others have ended
 * (`job submit --after JOB[:ok|:any|:notok]`, docs/scheduling.md
 * "Dependencies"), and ends cancelled once they can no longer be met.
 *
 * The rules are pure (jobs_dep_parse, jobs_dep_judge); the rest keeps them in
 * the store.  A dependency is a row of job_deps (the dependent, the job it
 * waits for, the kind), written with the dependent's submit and never
 * changed: whether it is met is read from the other job's state, which only
 * ever moves forward to an end.  The round (round.c) reads no queued job
 * whose dependencies are not all met (JOBS_DEPS_MET_SQL), so such a job holds
 * no quota and is never placed; a round's first step cancels every queued job
 * with a dependency that can never be met, and the jobs that waited on those,
 * in one transaction (jobs_deps_settle).
 *
 *   ok     the other job succeeded (exit 0)
 *   any    the other job ended, however
 *   notok  the other job ended and did not succeed (failed, cancelled, preempted
 *          for good)
 * Only jobs of the same project: another project's job is not found (404).
 */
#include "jobs_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {"ok", "any", "notok"};

static int ended(const char *state) {
    return !strcmp(state, "succeeded") || !strcmp(state, "failed") ||
           !strcmp(state, "cancelled") || !strcmp(state, "preempted");
}

int jobs_dep_judge(int kind, const char *state) {
    if (!ended(state)) return JOBS_DEP_WAITS;
    int ok = !strcmp(state, "succeeded");
    switch (kind) {
    case JOBS_DEP_OK:
        return ok ? JOBS_DEP_MET : JOBS_DEP_NEVER;
    case JOBS_DEP_NOTOK:
        return ok ? JOBS_DEP_NEVER : JOBS_DEP_MET;
    default:
        return JOBS_DEP_MET;
    }
}

const char *jobs_dep_kind_name(int kind) {
    return kind >= 0 && kind < JOBS_DEP__KINDS ? kinds[kind] : "?";
}

int jobs_dep_parse(json_t *after, jobs_dep *out, int *n, gp_err *err) {
    size_t i;
    json_t *v;
    *n = 0;
    if (!after || json_is_null(after)) return GP_OK;
    if (!json_is_array(after) || json_array_size(after) > JOBS_MAX_DEPS)
        return gp_err_set(err, GP_EINVALID,
                          "after must be an array of at most %d \"JOB[:ok|:any|:notok]\"",
                          JOBS_MAX_DEPS);
    json_array_foreach(after, i, v) {
        const char *s = json_string_value(v);
        if (!s) return gp_err_set(err, GP_EINVALID, "after[%zu] must be \"JOB[:ok|:any|:notok]\"", i);
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        jobs_dep *d = &out[*n];
        if (len == 0 || len >= sizeof d->job)
            return gp_err_set(err, GP_EINVALID, "after[%zu]: no job id", i);
        memcpy(d->job, s, len);
        d->job[len] = '\0';
        d->kind = -1;
        for (int k = 0; k < JOBS_DEP__KINDS; k++)
            if (!colon ? k == JOBS_DEP_OK : !strcmp(colon + 1, kinds[k])) d->kind = k;
        if (d->kind < 0)
            return gp_err_set(err, GP_EINVALID,
                              "after[%zu]: '%.40s' is not a dependency kind (ok, any, notok)", i,
                              colon + 1);
        for (int k = 0; k < *n; k++)
            if (!strcmp(out[k].job, d->job))
                return gp_err_set(err, GP_EINVALID, "after names job %.40s twice", d->job);
        (*n)++;
    }
    return GP_OK;
}

int jobs_deps_add(store_tx *tx, const char *job, const char *project_id, const jobs_dep *d, int n,
                  gp_err *err) {
    for (int i = 0; i < n; i++) {
        store_stmt *s;
        char state[16] = "";
        int rc = store_query(tx, &s, err, "SELECT state FROM jobs WHERE id = ? AND project_id = ?",
                             "ss", d[i].job, project_id);
        if (rc) return rc;
        rc = store_step(s, err);
        if (rc > 0) snprintf(state, sizeof state, "%s", store_text(s, 0));
        store_done(s);
        if (rc < 0) return rc;
        if (!rc)
            return gp_err_set(err, GP_ENOTFOUND, "after: no job %.40s in this project", d[i].job);
        if (jobs_dep_judge(d[i].kind, state) == JOBS_DEP_NEVER)
            return gp_err_set(err, GP_ECONFLICT,
                              "after: job %.40s has already %s; %s can never be met", d[i].job,
                              state, jobs_dep_kind_name(d[i].kind));
        if ((rc = store_exec(tx, NULL, err,
                             "INSERT INTO job_deps (job_id, dep_id, kind) VALUES (?, ?, ?)",
                             "sss", job, d[i].job, jobs_dep_kind_name(d[i].kind))))
            return rc;
    }
    return GP_OK;
}

static int kind_of(const char *name) {
    for (int k = 0; k < JOBS_DEP__KINDS; k++)
        if (!strcmp(name, kinds[k])) return k;
    return JOBS_DEP_OK;
}

/* A job's dependency with the state and name of the job it waits for, as jobs_deps_json reads
 * it (STORE_COLS). */
#define DEP_COLUMNS(X)                                                                    \
    X(DC_DEP, "d.dep_id")                                                                 \
    X(DC_KIND, "d.kind")                                                                  \
    X(DC_STATE, "j.state")                                                                \
    X(DC_NAME, "j.name")
enum { DEP_COLUMNS(STORE_COL_ENUM) DC__N };

int jobs_deps_json(store_tx *tx, const char *job, json_t **out, int *waiting, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(DEP_COLUMNS) " FROM job_deps d"
                         " JOIN jobs j ON j.id = d.dep_id WHERE d.job_id = ? ORDER BY d.dep_id",
                         "s", job);
    if (rc) return rc;
    json_t *a = json_array();
    if (waiting) *waiting = 0;
    while ((rc = store_step(s, err)) > 0) {
        int v = jobs_dep_judge(kind_of(store_text(s, DC_KIND)), store_text(s, DC_STATE));
        if (waiting && v == JOBS_DEP_WAITS) (*waiting)++;
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s,s:s}", "job", store_text(s, DC_DEP),
                                           "name", store_text(s, DC_NAME), "kind",
                                           store_text(s, DC_KIND), "state",
                                           store_text(s, DC_STATE), "status",
                                           v == JOBS_DEP_MET     ? "met"
                                           : v == JOBS_DEP_NEVER ? "never"
                                                                 : "waiting"));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(a);
        return rc;
    }
    *out = a;
    return GP_OK;
}

/* One queued job with a dependency that can never be met, and why. */
typedef struct doomed {
    char id[RND_ID_LEN];
    char why[200];
    char tenant[64], project[64];
} doomed;

/* A queued job's dependency that cannot be met, as find_doomed reads it (STORE_COLS). */
#define DOOMED_COLUMNS(X)                                                                 \
    X(DM_JOB, "j.id")                                                                     \
    X(DM_DEP, "d.dep_id")                                                                 \
    X(DM_KIND, "d.kind")                                                                  \
    X(DM_DEP_STATE, "dj.state")                                                           \
    X(DM_TENANT, "t.name")                                                                \
    X(DM_PROJECT, "p.name")
enum { DOOMED_COLUMNS(STORE_COL_ENUM) DM__N };

/* The queued jobs that can never start (their first dependency found that cannot be met),
 * at most `max`.  OUT: *n. */
static int find_doomed(store_tx *tx, doomed *out, int max, int *n, gp_err *err) {
    store_stmt *s;
    *n = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(DOOMED_COLUMNS) " FROM jobs j"
                         " JOIN job_deps d ON d.job_id = j.id JOIN jobs dj ON dj.id = d.dep_id"
                         " JOIN tenants t ON t.id = j.tenant_id JOIN projects p ON p.id = j.project_id"
                         " WHERE j.state = 'queued' AND " JOBS_DEPS_NEVER_SQL " ORDER BY j.id",
                         "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0 && *n < max) {
        if (*n && !strcmp(out[*n - 1].id, store_text(s, DM_JOB))) continue;
        doomed *d = &out[(*n)++];
        snprintf(d->id, sizeof d->id, "%s", store_text(s, DM_JOB));
        snprintf(d->tenant, sizeof d->tenant, "%s", store_text(s, DM_TENANT));
        snprintf(d->project, sizeof d->project, "%s", store_text(s, DM_PROJECT));
        snprintf(d->why, sizeof d->why,
                 "dependency never met: job %.32s %s, and this job ran only after it %s",
                 store_text(s, DM_DEP), store_text(s, DM_DEP_STATE),
                 !strcmp(store_text(s, DM_KIND), "ok") ? "succeeded" : "did not succeed");
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int jobs_deps_doomed(store_tx *tx, int *any, gp_err *err) {
    doomed d;
    int n = 0;
    int rc = find_doomed(tx, &d, 1, &n, err);
    *any = n > 0;
    return rc;
}

#define SETTLE_BATCH 64

int jobs_deps_settle(store_tx *tx, json_t *cancelled, gp_err *err) {
    doomed *ds = malloc(sizeof *ds * SETTLE_BATCH);
    if (!ds) return gp_err_set(err, GP_ENOMEM, NULL);
    int rc = GP_OK, n;
    /* a cancelled job's own dependents may now never be met: again until none is left (each
     * pass ends at least one queued job, so this ends) */
    do {
        if ((rc = find_doomed(tx, ds, SETTLE_BATCH, &n, err))) break;
        for (int i = 0; i < n && !rc; i++) {
            int changes = 0;
            rc = store_exec(tx, &changes, err,
                            "UPDATE jobs SET state = 'cancelled', reason = ?, ended_at = ?"
                            " WHERE id = ? AND state = 'queued'",
                            "sis", ds[i].why, gt_now_us(), ds[i].id);
            if (!rc && changes) rc = jobs__event(tx, ds[i].id, "cancelled", ds[i].why, err);
            if (!rc && changes) {
                /* in its tenant's trail, as the scheduler's */
                json_t *sum = json_pack("{s:s}", "reason", ds[i].why);
                char *text = jx_dump(sum);
                json_decref(sum);
                audit_event ev = {.actor = "scheduler", .action = "job.cancel",
                                  .target_type = "job", .target_id = ds[i].id,
                                  .tenant = ds[i].tenant, .project = ds[i].project,
                                  .result = "ok", .summary = text ? text : "{}"};
                rc = audit_append(tx, &ev, NULL, err);
                free(text);
            }
            if (!rc && changes && cancelled)
                json_array_append_new(cancelled,
                                      json_pack("{s:s,s:s}", "job", ds[i].id, "reason", ds[i].why));
        }
    } while (!rc && n > 0);
    free(ds);
    return rc;
}
