/*
 * arrays.c - job arrays: many tasks of one spec in one request
 * (`job submit --array 0-999%50`, docs/scheduling.md "Arrays"), Slurm's
 * `sbatch --array`.
 *
 * An array is a row of job_arrays (its name, index range and how many of its
 * tasks may hold cards at once) and one job row per index (array_id,
 * array_index), all written in the submit's one transaction: each task is a
 * job like any other (show, explain, cancel, logs, bindings, usage), and
 * gets GPUPOOL_ARRAY_ID / GPUPOOL_ARRAY_INDEX on its node.  The cap is kept
 * where the round reads its jobs (round.c): of an array's queued tasks only
 * the lowest-indexed `max_running - (its admitted and running tasks)` are
 * read, so the round never places more (jobs_array_allow_load).
 */
#include "jobs_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number at *p (digits only, at most 9 of them), *p moved past it; -1 when none. */
static long long number(const char **p) {
    long long v = 0;
    int n = 0;
    while (**p >= '0' && **p <= '9' && n < 10) {
        v = v * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    return n == 0 || n > 9 ? -1 : v;
}

/* "A-B" or a count "N" (0 .. N-1), then "%M" or nothing; A <= B, at most JOBS_MAX_ARRAY
 * tasks, M >= 1. */
int jobs_array_parse(const char *s, jobs_array_spec *out, gp_err *err) {
    long long a, b, cap = 0;
    const char *p = s ? s : "";
    memset(out, 0, sizeof *out);
    a = number(&p);
    if (a >= 0 && *p == '-') {
        p++;
        b = number(&p);
    } else if (a >= 1) {
        b = a - 1; /* a count */
        a = 0;
    } else {
        b = -1;
    }
    if (a >= 0 && b >= 0 && *p == '%') {
        p++;
        if ((cap = number(&p)) < 1)
            return gp_err_set(err, GP_EINVALID,
                              "array: the part after %% is how many tasks may run at once, at "
                              "least 1");
    }
    if (a < 0 || b < 0 || *p)
        return gp_err_set(err, GP_EINVALID,
                          "array must be \"FIRST-LAST[%%MAX_RUNNING]\" (e.g. 0-999%%50) or a count "
                          "\"N[%%MAX_RUNNING]\"");
    if (b < a) return gp_err_set(err, GP_EINVALID, "array: FIRST-LAST with FIRST <= LAST");
    if (b - a + 1 > JOBS_MAX_ARRAY)
        return gp_err_set(err, GP_EINVALID, "array: at most %d tasks", JOBS_MAX_ARRAY);
    out->first = a;
    out->last = b;
    out->max_running = cap;
    return GP_OK;
}

int jobs_array_add(store_tx *tx, const char *id, const job_submit *js, const char *name,
                   const jobs_array_spec *a, gp_err *err) {
    return store_exec(tx, NULL, err,
                      "INSERT INTO job_arrays (id, tenant_id, project_id, name, first_index,"
                      " last_index, max_running, submitter, created_at)"
                      " VALUES (?,?,?,?,?,?,?,?,?)",
                      "ssssiiisi", id, js->tenant_id, js->project_id, name, a->first, a->last,
                      a->max_running, js->submitter, gt_now_us());
}

/* A job array with its tenant's and project's names, as jobs_array_get reads it (STORE_COLS). */
#define ARRAY_COLUMNS(X)                                                                  \
    X(AC_ID, "a.id")                                                                      \
    X(AC_NAME, "a.name")                                                                  \
    X(AC_FIRST, "a.first_index")                                                          \
    X(AC_LAST, "a.last_index")                                                            \
    X(AC_MAX_RUNNING, "a.max_running")                                                    \
    X(AC_SUBMITTER, "a.submitter")                                                        \
    X(AC_CREATED, "a.created_at")                                                         \
    X(AC_TENANT, "t.name")                                                                \
    X(AC_PROJECT, "p.name")
enum { ARRAY_COLUMNS(STORE_COL_ENUM) AC__N };

/* An array's count of tasks in a state, as jobs_array_get reads it (STORE_COLS). */
#define TASK_STATE_COLUMNS(X)                                                             \
    X(TS_STATE, "state")                                                                  \
    X(TS_COUNT, "COUNT(*)")
enum { TASK_STATE_COLUMNS(STORE_COL_ENUM) TS__N };

int jobs_array_get(store_tx *tx, const char *id, const char *project_id, json_t **out,
                   gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ARRAY_COLUMNS) " FROM job_arrays a"
                         " JOIN tenants t ON t.id = a.tenant_id JOIN projects p ON p.id = a.project_id"
                         " WHERE a.id = ? AND a.project_id = ?",
                         "ss", id, project_id);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *o = NULL;
    if (rc > 0)
        o = json_pack("{s:s,s:s,s:I,s:I,s:I,s:o,s:s,s:o,s:s,s:s}", "id", store_text(s, AC_ID),
                      "name", store_text(s, AC_NAME), "first_index",
                      (json_int_t)store_int(s, AC_FIRST), "last_index",
                      (json_int_t)store_int(s, AC_LAST), "size",
                      (json_int_t)(store_int(s, AC_LAST) - store_int(s, AC_FIRST) + 1),
                      "max_running",
                      store_int(s, AC_MAX_RUNNING) ? json_integer(store_int(s, AC_MAX_RUNNING))
                                                   : json_null(),
                      "submitter", store_text(s, AC_SUBMITTER), "created_at",
                      jx_time(store_int(s, AC_CREATED)), "tenant", store_text(s, AC_TENANT),
                      "project", store_text(s, AC_PROJECT));
    store_done(s);
    if (rc < 0) return rc;
    if (!rc) return gp_err_set(err, GP_ENOTFOUND, "not found");
    /* its tasks by state, and the card-seconds they held (their bindings, open ones to now) */
    json_t *states = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "queued", 0, "admitted", 0,
                               "running", 0, "succeeded", 0, "failed", 0, "cancelled", 0,
                               "preempted", 0);
    json_object_set_new(o, "tasks", states);
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(TASK_STATE_COLUMNS)
                          " FROM jobs WHERE array_id = ? GROUP BY state",
                          "s", id)) == GP_OK) {
        while ((rc = store_step(s, err)) > 0)
            json_object_set_new(states, store_text(s, TS_STATE),
                                json_integer(store_int(s, TS_COUNT)));
        store_done(s);
    }
    int64_t now = gt_now_us();
    if (rc >= 0 && (rc = store_query(tx, &s, err,
                                     "SELECT COALESCE(SUM((COALESCE(b.end_us, ?) - b.start_us)"
                                     " * b.weight_milli), 0) FROM bindings b"
                                     " JOIN jobs j ON j.id = b.job_id WHERE j.array_id = ?",
                                     "is", now, id)) == GP_OK) {
        if ((rc = store_step(s, err)) > 0)
            json_object_set_new(o, "card_seconds",
                                json_real((double)store_int(s, 0) / 1e9)); /* us x milli */
        store_done(s);
    }
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return GP_OK;
}

int jobs_array_cancel(store_tx *tx, const char *id, const char *project_id, const char *actor,
                      int *cancelled, gp_err *err) {
    store_stmt *s;
    json_t *ids = json_array();
    *cancelled = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT j.id FROM jobs j JOIN job_arrays a ON a.id = j.array_id"
                         " WHERE j.array_id = ? AND a.project_id = ?"
                         " AND j.state IN ('queued','admitted','running') ORDER BY j.array_index",
                         "ss", id, project_id);
    if (rc) {
        json_decref(ids);
        return rc;
    }
    while ((rc = store_step(s, err)) > 0) json_array_append_new(ids, json_string(store_text(s, 0)));
    store_done(s);
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        if (rc < 0) break;
        rc = jobs_cancel(tx, json_string_value(v), actor, err);
        if (rc == GP_ECONFLICT) rc = GP_OK; /* it ended meanwhile */
        else if (!rc) (*cancelled)++;
    }
    json_decref(ids);
    return rc < 0 ? rc : GP_OK;
}

/* ---- the round's cap ---- */

struct jobs_array_allow {
    char (*ids)[RND_ID_LEN]; /* the queued tasks the round may read, sorted */
    size_t n, cap;
};

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

/* A capped array and how many more of its tasks may start, as jobs_array_allow_load reads it
 * (STORE_COLS). */
#define ROOM_COLUMNS(X)                                                                   \
    X(RM_ID, "a.id")                                                                      \
    X(RM_ROOM, "a.max_running - (SELECT COUNT(*) FROM jobs r"                             \
              "  WHERE r.array_id = a.id AND r.state IN ('admitted','running'))")
enum { ROOM_COLUMNS(STORE_COL_ENUM) RM__N };

int jobs_array_allow_load(store_tx *tx, jobs_array_allow **out, gp_err *err) {
    store_stmt *s;
    jobs_array_allow *al = calloc(1, sizeof *al);
    if (!al) return gp_err_set(err, GP_ENOMEM, NULL);
    /* the capped arrays with queued tasks, and how many more each may start */
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ROOM_COLUMNS)
                         " FROM job_arrays a WHERE a.max_running > 0 AND EXISTS (SELECT 1 FROM jobs q"
                         "  WHERE q.array_id = a.id AND q.state = 'queued')",
                         "");
    if (rc) {
        free(al);
        return rc;
    }
    json_t *arrays = json_array();
    while ((rc = store_step(s, err)) > 0)
        if (store_int(s, RM_ROOM) > 0)
            json_array_append_new(arrays, json_pack("{s:s,s:I}", "id", store_text(s, RM_ID), "room",
                                                    (json_int_t)store_int(s, RM_ROOM)));
    store_done(s);
    size_t i;
    json_t *a;
    json_array_foreach(arrays, i, a) {
        if (rc < 0) break;
        rc = store_query(tx, &s, err,
                         "SELECT id FROM jobs WHERE array_id = ? AND state = 'queued'"
                         " ORDER BY array_index LIMIT ?",
                         "si", json_string_value(json_object_get(a, "id")),
                         (int64_t)json_integer_value(json_object_get(a, "room")));
        if (rc) break;
        while ((rc = store_step(s, err)) > 0) {
            if (al->n == al->cap) {
                size_t nc = al->cap ? 2 * al->cap : 64;
                void *p = realloc(al->ids, nc * sizeof *al->ids);
                if (!p) {
                    rc = gp_err_set(err, GP_ENOMEM, NULL);
                    break;
                }
                al->ids = p;
                al->cap = nc;
            }
            snprintf(al->ids[al->n++], RND_ID_LEN, "%s", store_text(s, 0));
        }
        store_done(s);
    }
    json_decref(arrays);
    if (rc < 0) {
        jobs_array_allow_free(al);
        return rc;
    }
    if (al->n) qsort(al->ids, al->n, sizeof *al->ids, cmp_id);
    *out = al;
    return GP_OK;
}

int jobs_array_allowed(const jobs_array_allow *al, int capped, const char *job) {
    if (!capped) return 1;
    return al && al->n && bsearch(job, al->ids, al->n, sizeof *al->ids, cmp_id) != NULL;
}

void jobs_array_allow_free(jobs_array_allow *al) {
    if (!al) return;
    free(al->ids);
    free(al);
}

/* A queued task's capped array and its index, as jobs_array_explain reads them (STORE_COLS). */
#define EXPLAIN_COLUMNS(X)                                                                \
    X(EX_ARRAY, "a.id")                                                                   \
    X(EX_MAX_RUNNING, "a.max_running")                                                    \
    X(EX_INDEX, "j.array_index")
enum { EXPLAIN_COLUMNS(STORE_COL_ENUM) EX__N };

int jobs_array_explain(store_tx *tx, const char *job, json_t **out, int *answered, gp_err *err) {
    store_stmt *s;
    char array[RND_ID_LEN] = "";
    int64_t cap = 0, index = 0;
    *answered = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(EXPLAIN_COLUMNS) " FROM jobs j"
                         " JOIN job_arrays a ON a.id = j.array_id"
                         " WHERE j.id = ? AND j.state = 'queued' AND a.max_running > 0",
                         "s", job);
    if (rc) return rc;
    if ((rc = store_step(s, err)) > 0) {
        snprintf(array, sizeof array, "%s", store_text(s, EX_ARRAY));
        cap = store_int(s, EX_MAX_RUNNING);
        index = store_int(s, EX_INDEX);
    }
    store_done(s);
    if (rc <= 0) return rc;
    jobs_array_allow *al;
    if ((rc = jobs_array_allow_load(tx, &al, err))) return rc;
    int allowed = jobs_array_allowed(al, 1, job);
    jobs_array_allow_free(al);
    if (allowed) return GP_OK; /* the round sees it: explained as any queued job */
    char why[200];
    snprintf(why, sizeof why,
             "array_cap: array %s runs at most %lld of its tasks at once; task %lld waits for "
             "one of them to end",
             array, (long long)cap, (long long)index);
    *out = json_pack("{s:s,s:s,s:s,s:b,s:{s:s,s:I,s:I},s:s}", "job", job, "state", "queued",
                     "reason", why, "would_start_now", 0, "array", "id", array, "index",
                     (json_int_t)index, "max_running", (json_int_t)cap, "explanation",
                     "it waits for its array's earlier tasks: the array's cap (max_running) "
                     "holds it, not capacity or quota");
    *answered = 1;
    return GP_OK;
}
