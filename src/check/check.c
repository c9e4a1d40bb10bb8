/*
 * check.c - `gpupool check`: load rows, run the pure invariant checks over
 * them (see check.h for the list and what each one means).
 *
 * Loading happens in one read transaction, so every check but the audit
 * chain (audit_verify opens its own) sees one snapshot even while a server
 * writes.  Strings loaded from rows live in a small pool freed at the end.
 */
#include "check.h"

#include "../audit/audit.h"
#include "../inventory/inventory.h"
#include "../sched/sched.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- results ---- */

void check_result_init(check_result *r, const char *name) {
    memset(r, 0, sizeof *r);
    r->name = name;
    r->ok = 1;
}

void check_problem(check_result *r, const char *fmt, ...) {
    r->ok = 0;
    if (r->nproblems++ >= CHECK_MAX_PROBLEMS) return;
    if (!r->problems) r->problems = json_array();
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(r->problems, json_string(buf));
}

void check_report_release(check_report *rep) {
    if (!rep) return;
    for (int i = 0; i < rep->n; i++) json_decref(rep->r[i].problems);
    memset(rep, 0, sizeof *rep);
}

json_t *check_report_json(const check_report *rep) {
    json_t *arr = json_array();
    for (int i = 0; i < rep->n; i++) {
        const check_result *r = &rep->r[i];
        json_array_append_new(
            arr, json_pack("{s:s,s:b,s:I,s:I,s:o,s:s}", "name", r->name, "ok", r->ok, "checked",
                           (json_int_t)r->checked, "problem_count", (json_int_t)r->nproblems,
                           "problems", r->problems ? json_incref(r->problems) : json_array(), "note", r->note));
    }
    return json_pack("{s:b,s:o}", "ok", rep->ok, "checks", arr);
}

/* ---- pure checks ---- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const check_gpu *find_gpu(const check_gpu *gpus, int n, const char *uuid) {
    return bsearch(&uuid, gpus, (size_t)n, sizeof *gpus, cmp_str);
}

static int by_gpu(const void *a, const void *b) {
    const check_binding *x = *(const check_binding *const *)a, *y = *(const check_binding *const *)b;
    int c = strcmp(x->gpu_uuid, y->gpu_uuid);
    return c ? c : strcmp(x->slice_uuid, y->slice_uuid);
}

void check_gpu_exclusive(const check_binding *b, int nb, const check_gpu *gpus, int ngpus,
                         check_result *r) {
    const check_binding **s = calloc((size_t)nb + 1, sizeof *s);
    if (!s) {
        check_problem(r, "out of memory");
        return;
    }
    for (int i = 0; i < nb; i++) s[i] = &b[i];
    qsort(s, (size_t)nb, sizeof *s, by_gpu);
    int cards = 0;
    for (int i = 0; i < nb;) {
        int j = i, whole = 0, mig = 0, shared = 0, mem = 0, pct = 0;
        while (j < nb && strcmp(s[j]->gpu_uuid, s[i]->gpu_uuid) == 0) j++;
        cards++;
        for (int k = i; k < j; k++) {
            const check_binding *x = s[k];
            if (x->slice_uuid[0]) {
                mig++;
                if (k > i && strcmp(s[k - 1]->slice_uuid, x->slice_uuid) == 0)
                    check_problem(r, "MIG slice %s of GPU %s is held by two open bindings (%s, %s)",
                                  x->slice_uuid, x->gpu_uuid, s[k - 1]->id, x->id);
            } else if (strncmp(x->form, "shared:", 7) == 0) {
                shared++;
                mem += x->shared_mem_gib;
                pct += x->shared_pct;
            } else {
                whole++;
            }
        }
        const char *g = s[i]->gpu_uuid;
        if (whole > 1)
            check_problem(r, "GPU %s is held whole by %d open bindings (%s, ...)", g, whole, s[i]->id);
        else if (whole && (mig || shared))
            check_problem(r, "GPU %s is held whole and by %d slice binding(s)", g, mig + shared);
        if (shared) {
            const check_gpu *gp = find_gpu(gpus, ngpus, g);
            if (pct > 100)
                check_problem(r, "shared GPU %s: open bindings take %d%% of its compute", g, pct);
            if (gp && mem > gp->mem_gib)
                check_problem(r, "shared GPU %s: open bindings take %d GiB of its %d GiB", g, mem,
                              gp->mem_gib);
            if (mig) check_problem(r, "GPU %s has both MIG and shared open bindings", g);
        }
        i = j;
    }
    free(s);
    r->checked += nb;
    snprintf(r->note, sizeof r->note, "%d open binding(s) on %d GPU(s)", nb, cards);
}

static int by_job(const void *a, const void *b) {
    const check_binding *x = *(const check_binding *const *)a, *y = *(const check_binding *const *)b;
    int c = strcmp(x->job_id, y->job_id);
    return c ? c : (x->unit > y->unit) - (x->unit < y->unit);
}

static const check_job *find_job(const check_job *jobs, int n, const char *id) {
    return bsearch(&id, jobs, (size_t)n, sizeof *jobs, cmp_str);
}

void check_job_bindings(const check_job *jobs, int njobs, const check_binding *b, int nb,
                        check_result *r) {
    const check_binding **s = calloc((size_t)nb + 1, sizeof *s);
    int *units = calloc((size_t)njobs + 1, sizeof *units);
    unsigned char *split = calloc((size_t)njobs + 1, 1);
    if (!s || !units || !split) {
        free(s);
        free(units);
        free(split);
        check_problem(r, "out of memory");
        return;
    }
    for (int i = 0; i < nb; i++) s[i] = &b[i];
    qsort(s, (size_t)nb, sizeof *s, by_job);
    for (int i = 0; i < nb; i++) {
        const check_job *j = find_job(jobs, njobs, s[i]->job_id);
        if (!j) {
            check_problem(r, "open binding %s names job %s, which does not exist", s[i]->id,
                          s[i]->job_id);
            continue;
        }
        if (strcmp(j->state, "running") != 0) {
            check_problem(r, "open binding %s (GPU %s) belongs to job %s, which is %s", s[i]->id,
                          s[i]->gpu_uuid, j->id, j->state);
            continue;
        }
        /* count distinct units (a multi-GPU unit has one binding per card) */
        if (i == 0 || strcmp(s[i - 1]->job_id, s[i]->job_id) != 0 || s[i - 1]->unit != s[i]->unit)
            units[j - jobs]++;
        /* a job that spans nodes: each rank on one node, no node holding two ranks */
        if (j->nodes > 0 && j->units % j->nodes == 0 && s[i]->node && !split[j - jobs]) {
            int K = j->units / j->nodes, rank = s[i]->unit / K;
            for (int m = i - 1; m >= 0 && !strcmp(s[m]->job_id, s[i]->job_id); m--) {
                if (!s[m]->node) continue;
                int same_node = !strcmp(s[m]->node, s[i]->node), same_rank = s[m]->unit / K == rank;
                if (same_node != same_rank) {
                    check_problem(r, "running job %s spans nodes: rank %d %s node %s with rank %d",
                                  j->id, rank, same_node ? "shares" : "is split from", s[i]->node,
                                  s[m]->unit / K);
                    split[j - jobs] = 1; /* (once per job) */
                    break;
                }
            }
        }
    }
    int running = 0;
    for (int k = 0; k < njobs; k++) {
        if (strcmp(jobs[k].state, "running") != 0) continue;
        running++;
        if (units[k] != jobs[k].units)
            check_problem(r, "running job %s holds open bindings for %d of its %d unit(s)",
                          jobs[k].id, units[k], jobs[k].units);
    }
    free(s);
    free(units);
    free(split);
    r->checked += njobs;
    snprintf(r->note, sizeof r->note, "%d job(s), %d running, %d open binding(s)", njobs, running,
             nb);
}

static void fmt_dim(int d, int64_t v, char *b, size_t n) {
    if (d == QD_GPU_MILLI) snprintf(b, n, "%g", (double)v / 1000.0);
    else snprintf(b, n, "%lld", (long long)v);
}

void check_quota(const check_hold *h, int nh, const check_scope *sc, int nsc, check_result *r) {
    int checked = 0, skipped = 0, with = 0;
    for (int i = 0; i < nsc; i++) {
        const check_scope *c = &sc[i];
        int tenant_level = !c->project_id[0];
        int64_t use[QD__N] = {0}, newest = 0;
        int n = 0;
        for (int k = 0; k < nh; k++) {
            if (strcmp(h[k].tenant_id, c->tenant_id) != 0) continue;
            if (!tenant_level && strcmp(h[k].project_id, c->project_id) != 0) continue;
            n++;
            for (int d = 0; d < QD__N; d++) use[d] += h[k].demand[d];
            if (h[k].admitted_us > newest) newest = h[k].admitted_us;
        }
        if (!n) continue;
        with++;
        /*
         * At the newest admission every job holding now was already held or was
         * that one, and admission fitted them all under the ceiling of that
         * moment.  If the ceiling has not changed since, it must hold now.
         */
        if (newest <= c->updated_us) {
            skipped++;
            continue;
        }
        checked++;
        for (int d = 0; d < QD__N; d++) {
            if (d == QD_CARD_HOURS || c->q.v[d] == QUOTA_NONE || use[d] <= c->q.v[d]) continue;
            char a[32], b[32];
            fmt_dim(d, use[d], a, sizeof a);
            fmt_dim(d, c->q.v[d], b, sizeof b);
            check_problem(r, "%s: %s %s held by %d admitted/running job(s), ceiling %s", c->label,
                          quota_dim_name(d), a, n, b);
        }
        for (int q = 0; q < c->q.nclass; q++) {
            int64_t units = 0;
            for (int k = 0; k < nh; k++) {
                if (strcmp(h[k].tenant_id, c->tenant_id) != 0 ||
                    (!tenant_level && strcmp(h[k].project_id, c->project_id) != 0) ||
                    strcmp(h[k].cls, c->q.class_name[q]) != 0)
                    continue;
                units += h[k].units;
            }
            if (c->q.class_units[q] != QUOTA_NONE && units > c->q.class_units[q])
                check_problem(r, "%s: class %s holds %lld unit(s), ceiling %lld", c->label,
                              c->q.class_name[q], (long long)units,
                              (long long)c->q.class_units[q]);
        }
    }
    r->checked += nsc;
    snprintf(r->note, sizeof r->note,
             "%d scope(s) with ceilings, %d holding quota: %d checked, %d skipped (ceiling changed "
             "after their newest admission)",
             nsc, with, checked, skipped);
}

void check_sums(const check_sum *a, int na, const check_sum *b, int nb, int nv,
                const char *const *vnames, const char *what, check_result *r) {
    int i = 0, j = 0;
    int64_t keys = 0;
    static const int64_t zero[3] = {0, 0, 0};
    while (i < na || j < nb) {
        int c = i >= na ? 1 : j >= nb ? -1 : strcmp(a[i].key, b[j].key);
        const char *key = c <= 0 ? a[i].key : b[j].key;
        const int64_t *va = c <= 0 ? a[i].v : zero, *vb = c >= 0 ? b[j].v : zero;
        for (int v = 0; v < nv; v++)
            if (va[v] != vb[v])
                check_problem(r, "%s %s: %s is %lld, expected %lld", what, key, vnames[v],
                              (long long)va[v], (long long)vb[v]);
        keys++;
        if (c <= 0) i++;
        if (c >= 0) j++;
    }
    r->checked += keys;
}

/* ---- loading ---- */

/* Strings copied out of rows; freed together. */
typedef struct spool {
    char **p;
    int n, cap;
} spool;

static const char *sp(spool *s, const char *text) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 256;
        char **np = realloc(s->p, (size_t)cap * sizeof *np);
        if (!np) return "";
        s->p = np;
        s->cap = cap;
    }
    char *d = strdup(text ? text : "");
    if (!d) return "";
    s->p[s->n++] = d;
    return d;
}

static void spool_free(spool *s) {
    for (int i = 0; i < s->n; i++) free(s->p[i]);
    free(s->p);
}

/* Grow `*arr` (of `size` bytes per item) to hold index n. 0 or -1. */
static int grow(void **arr, int n, int *cap, size_t size) {
    if (n < *cap) return 0;
    int nc = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, (size_t)nc * size);
    if (!p) return -1;
    memset((char *)p + (size_t)*cap * size, 0, (size_t)(nc - *cap) * size);
    *arr = p;
    *cap = nc;
    return 0;
}

#define GROW(arr, n, cap)                                                                         \
    (grow((void **)&(arr), (n), &(cap), sizeof *(arr)) ? gp_err_set(err, GP_ENOMEM, NULL) : 0)

/* An open binding as load_bindings reads it (STORE_COLS). */
#define BINDING_COLUMNS(X)                                                                \
    X(BC_ID, "id")                                                                        \
    X(BC_JOB, "job_id")                                                                   \
    X(BC_GPU, "gpu_uuid")                                                                 \
    X(BC_SLICE, "slice_uuid")                                                             \
    X(BC_FORM, "form")                                                                    \
    X(BC_UNIT, "unit")                                                                    \
    X(BC_SHARED_MEM, "shared_mem_gib")                                                    \
    X(BC_SHARED_PCT, "shared_pct")                                                        \
    X(BC_NODE, "node")
enum { BINDING_COLUMNS(STORE_COL_ENUM) BC__N };

static int load_bindings(store_tx *tx, spool *p, check_binding **out, int *n, gp_err *err) {
    store_stmt *s;
    int cap = 0, rc = store_query(tx, &s, err,
                                  "SELECT " STORE_COLS(BINDING_COLUMNS) " FROM bindings"
                                  " WHERE end_us IS NULL",
                                  "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if ((rc = GROW(*out, *n, cap))) break;
        check_binding *b = &(*out)[(*n)++];
        b->id = sp(p, store_text(s, BC_ID));
        b->job_id = sp(p, store_text(s, BC_JOB));
        b->gpu_uuid = sp(p, store_text(s, BC_GPU));
        b->slice_uuid = sp(p, store_text(s, BC_SLICE));
        b->form = sp(p, store_text(s, BC_FORM));
        b->unit = (int)store_int(s, BC_UNIT);
        b->shared_mem_gib = (int)store_int(s, BC_SHARED_MEM);
        b->shared_pct = (int)store_int(s, BC_SHARED_PCT);
        b->node = sp(p, store_text(s, BC_NODE));
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* A GPU as load_gpus reads it (STORE_COLS). */
#define GPU_COLUMNS(X) X(GC_UUID, "uuid") X(GC_MEMORY, "memory_mib") X(GC_MODEL, "model")
enum { GPU_COLUMNS(STORE_COL_ENUM) GC__N };

/* GPUs sorted by uuid; `ref` (optional) gets every GPU's model too for class demand. */
static int load_gpus(store_tx *tx, spool *p, check_gpu **out, const char ***models, int *n,
                     gp_err *err) {
    store_stmt *s;
    int cap = 0, mcap = 0, rc = store_query(tx, &s, err,
                                            "SELECT " STORE_COLS(GPU_COLUMNS)
                                            " FROM gpus ORDER BY uuid",
                                            "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if ((rc = GROW(*out, *n, cap)) || (rc = GROW(*models, *n, mcap))) break;
        (*out)[*n].uuid = sp(p, store_text(s, GC_UUID));
        (*out)[*n].mem_gib = (int)(store_int(s, GC_MEMORY) / 1024);
        (*models)[*n] = sp(p, store_text(s, GC_MODEL));
        (*n)++;
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* A job as load_jobs reads it (STORE_COLS). */
#define JOB_COLUMNS(X) X(JC_ID, "id") X(JC_STATE, "state") X(JC_UNITS, "units") X(JC_NODES, "nodes")
enum { JOB_COLUMNS(STORE_COL_ENUM) JC__N };

static int load_jobs(store_tx *tx, spool *p, check_job **out, int *n, gp_err *err) {
    store_stmt *s;
    int cap = 0, rc = store_query(tx, &s, err,
                                  "SELECT " STORE_COLS(JOB_COLUMNS) " FROM jobs ORDER BY id", "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if ((rc = GROW(*out, *n, cap))) break;
        check_job *j = &(*out)[(*n)++];
        j->id = sp(p, store_text(s, JC_ID));
        j->state = sp(p, store_text(s, JC_STATE));
        j->units = (int)store_int(s, JC_UNITS);
        j->nodes = (int)store_int(s, JC_NODES);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/*
 * Per-unit quota demand of class `name`, as the scheduler counts it: the demand
 * formula (sch_unit_demand, src/sched/demand.c) on the class's card (the largest
 * matching one, sch_class_card_gib).
 */
/* A class as class_demand reads it (STORE_COLS). */
#define CLASS_COLUMNS(X)                                                                  \
    X(CC_FORM, "form")                                                                    \
    X(CC_GPUS, "gpus")                                                                    \
    X(CC_CPUS, "cpus")                                                                    \
    X(CC_MEMORY, "memory_gib")                                                            \
    X(CC_MODELS, "gpu_models")
enum { CLASS_COLUMNS(STORE_COL_ENUM) CC__N };

static int class_demand(store_tx *tx, const char *name, const check_gpu *gpus,
                        const char *const *models, int ngpus, int64_t d[QD__N], gp_err *err) {
    store_stmt *s;
    memset(d, 0, sizeof(int64_t) * QD__N);
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CLASS_COLUMNS) " FROM classes WHERE name = ?",
                         "s", name);
    if (rc) return rc;
    if ((rc = store_step(s, err)) <= 0) {
        store_done(s);
        return rc; /* a deleted class: nothing known to count */
    }
    inv_form f;
    memset(&f, 0, sizeof f);
    inv_form_parse(store_text(s, CC_FORM), &f, NULL);
    int64_t ngpu = store_int(s, CC_GPUS);
    d[QD_CPUS] = store_int(s, CC_CPUS);
    d[QD_MEM] = store_int(s, CC_MEMORY);
    json_t *ms = json_loads(store_text(s, CC_MODELS), 0, NULL);
    store_done(s);
    int *mem = malloc(sizeof *mem * (size_t)(ngpus > 0 ? ngpus : 1));
    if (!mem) {
        json_decref(ms);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    for (int g = 0; g < ngpus; g++) mem[g] = gpus[g].mem_gib;
    int ref_mem = sch_class_card_gib(ms, models, mem, ngpus);
    free(mem);
    json_decref(ms);
    int form = f.kind == FORM_MIG ? SCH_MIG : f.kind == FORM_SHARED ? SCH_SHARED : SCH_WHOLE;
    sch_unit_demand(form, (int)ngpu, f.profile, f.memory_gib, f.percent, ref_mem,
                    &d[QD_GPU_MILLI], &d[QD_GPU_MEM]);
    return 1;
}

/* An admitted or running job as load_holds reads it, with its last admission and placement
 * (STORE_COLS). */
#define HOLD_COLUMNS(X)                                                                   \
    X(HC_ID, "j.id")                                                                      \
    X(HC_TENANT, "j.tenant_id")                                                           \
    X(HC_PROJECT, "j.project_id")                                                         \
    X(HC_CLASS, "j.class")                                                                \
    X(HC_UNITS, "j.units")                                                                \
    X(HC_ADMITTED, "(SELECT MAX(at) FROM job_events e WHERE e.job_id = j.id"              \
                   " AND e.kind = 'admitted')")                                           \
    X(HC_PLACED, "(SELECT MAX(at) FROM job_events e WHERE e.job_id = j.id"                \
                 " AND e.kind = 'placed')")
enum { HOLD_COLUMNS(STORE_COL_ENUM) HC__N };

static int load_holds(store_tx *tx, spool *p, const check_gpu *gpus, const char *const *models,
                      int ngpus, check_hold **out, int *n, gp_err *err) {
    store_stmt *s;
    int cap = 0, rc = store_query(
                     tx, &s, err,
                     "SELECT " STORE_COLS(HOLD_COLUMNS) " FROM jobs j WHERE j.state IN ('admitted','running') ORDER BY j.class",
                     "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if ((rc = GROW(*out, *n, cap))) break;
        check_hold *h = &(*out)[(*n)++];
        h->id = sp(p, store_text(s, HC_ID));
        h->tenant_id = sp(p, store_text(s, HC_TENANT));
        h->project_id = sp(p, store_text(s, HC_PROJECT));
        h->cls = sp(p, store_text(s, HC_CLASS));
        h->units = store_int(s, HC_UNITS);
        /*
         * The latest admission is the last 'admitted' event (admitted, placed
         * later) or the last 'placed' one (placed at once); the earlier of the
         * two is never after it, so it is a safe lower bound.
         */
        int64_t a = store_isnull(s, HC_ADMITTED) ? 0 : store_int(s, HC_ADMITTED);
        int64_t pl = store_isnull(s, HC_PLACED) ? 0 : store_int(s, HC_PLACED);
        h->admitted_us = a && pl ? (a < pl ? a : pl) : a ? a : pl;
    }
    store_done(s);
    if (rc < 0) return rc;
    /* demand per class (rows are ordered by class: one lookup per class) */
    int64_t d[QD__N] = {0};
    for (int i = 0; i < *n; i++) {
        check_hold *h = &(*out)[i];
        if ((i == 0 || strcmp((*out)[i - 1].cls, h->cls) != 0) &&
            (rc = class_demand(tx, h->cls, gpus, models, ngpus, d, err)) < 0)
            return rc;
        for (int k = 0; k < QD__N; k++) h->demand[k] = k == QD_JOBS ? 1 : d[k] * h->units;
    }
    return GP_OK;
}

/* A quota as load_scopes reads it, with its tenant's and project's names (STORE_COLS). */
#define SCOPE_COLUMNS(X)                                                                  \
    X(SC_TENANT_ID, "q.tenant_id")                                                        \
    X(SC_PROJECT_ID, "q.project_id")                                                      \
    X(SC_SPEC, "q.spec")                                                                  \
    X(SC_UPDATED, "q.updated_at")                                                         \
    X(SC_TENANT, "COALESCE(t.name, q.tenant_id)")                                         \
    X(SC_PROJECT, "COALESCE(p.name, q.project_id)")
enum { SCOPE_COLUMNS(STORE_COL_ENUM) SC__N };

static int load_scopes(store_tx *tx, spool *p, check_scope **out, int *n, gp_err *err) {
    store_stmt *s;
    int cap = 0, rc = store_query(
                     tx, &s, err,
                     "SELECT " STORE_COLS(SCOPE_COLUMNS) " FROM quotas q LEFT JOIN tenants t ON t.id = q.tenant_id"
                     " LEFT JOIN projects p ON p.id = q.project_id",
                     "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        json_t *spec = json_loads(store_text(s, SC_SPEC), 0, NULL);
        quota_set q;
        int bad = quota_parse(spec, &q, NULL);
        json_decref(spec);
        if (bad) continue; /* unreadable ceilings: nothing to compare with */
        if ((rc = GROW(*out, *n, cap))) break;
        check_scope *c = &(*out)[(*n)++];
        c->tenant_id = sp(p, store_text(s, SC_TENANT_ID));
        c->project_id = sp(p, store_text(s, SC_PROJECT_ID));
        char label[200];
        if (c->project_id[0])
            snprintf(label, sizeof label, "project %s/%s", store_text(s, SC_TENANT),
                     store_text(s, SC_PROJECT));
        else snprintf(label, sizeof label, "tenant %s", store_text(s, SC_TENANT));
        c->label = sp(p, label);
        c->q = q;
        c->updated_us = store_int(s, SC_UPDATED);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* A row of the sums load_sums compares, (key, v0, v1, v2) (STORE_COLS): each SQL_* below
 * names its own columns through SUM_COLUMNS_. */
#define SUM_COLUMNS_(X, KEY, V0, V1, V2) X(SM_KEY, KEY) X(SM_V0, V0) X(SM_V1, V1) X(SM_V2, V2)
#define SUM_ENUM_COLUMNS_(X) SUM_COLUMNS_(X, "k", "v0", "v1", "v2")
enum { SUM_ENUM_COLUMNS_(STORE_COL_ENUM) SM__N };

/* Rows of (key, v0, v1, v2) from `sql`, which must order by key. */
static int load_sums(store_tx *tx, spool *p, const char *sql, check_sum **out, int *n,
                     gp_err *err) {
    store_stmt *s;
    int cap = 0, rc = store_query(tx, &s, err, sql, "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if ((rc = GROW(*out, *n, cap))) break;
        check_sum *c = &(*out)[(*n)++];
        static const int vc[3] = {SM_V0, SM_V1, SM_V2};
        c->key = sp(p, store_text(s, SM_KEY));
        for (int v = 0; v < 3; v++) c->v[v] = store_int(s, vc[v]);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* The ledger's keys and the holds/usage sums, as "scope/id/month". */
#define LEDGER_KEY(scope, id, month) "(" scope " || '/' || " id " || '/' || " month ")"

#define LEDGER_RESERVED_COLUMNS(X)                                                        \
    SUM_COLUMNS_(X, LEDGER_KEY("scope", "id", "month") " AS k", "reserved", "0", "0")
static const char SQL_LEDGER_RESERVED[] =
    "SELECT " STORE_COLS(LEDGER_RESERVED_COLUMNS) " FROM token_ledger"
    " WHERE reserved <> 0 ORDER BY k";
#define HOLDS_COLUMNS(X) SUM_COLUMNS_(X, "k", "SUM(amount)", "0", "0")
static const char SQL_HOLDS[] =
    "SELECT " STORE_COLS(HOLDS_COLUMNS) " FROM ("
    " SELECT " LEDGER_KEY("'key'", "key_id", "month") " AS k, amount FROM token_holds"
    " UNION ALL SELECT " LEDGER_KEY("'project'", "project_id", "month") ", amount FROM token_holds"
    " UNION ALL SELECT " LEDGER_KEY("'tenant'", "tenant_id", "month") ", amount FROM token_holds) h"
    " GROUP BY k ORDER BY k";
/* months of usage records, from the record's time in seconds (UTC), in each dialect */
#define UMONTH_SQLITE "strftime('%Y-%m', at / 1000000, 'unixepoch')"
#define UMONTH_PG "to_char(to_timestamp(at / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM')"
#define NO_OPEN_HOLD(scope, col)                                                                  \
    " NOT EXISTS (SELECT 1 FROM token_holds h WHERE h." col " = x.id AND h.month = x.month)"
#define LEDGER_USED_COLUMNS(X)                                                            \
    SUM_COLUMNS_(X, LEDGER_KEY("x.scope", "x.id", "x.month") " AS k", "x.used", "0", "0")
static const char SQL_LEDGER_USED[] =
    "SELECT " STORE_COLS(LEDGER_USED_COLUMNS) " FROM token_ledger x"
    " WHERE x.used <> 0 AND CASE x.scope"
    " WHEN 'key' THEN" NO_OPEN_HOLD("key", "key_id")
    " WHEN 'project' THEN" NO_OPEN_HOLD("project", "project_id")
    " ELSE" NO_OPEN_HOLD("tenant", "tenant_id") " END ORDER BY k";
#define USAGE_USED_COLUMNS(X) SUM_COLUMNS_(X, "k", "SUM(t)", "0", "0")
#define SQL_USAGE_USED(UMONTH)                                                                    \
    "SELECT " STORE_COLS(USAGE_USED_COLUMNS) " FROM (SELECT " LEDGER_KEY("scope", "id", "month") " AS k, * FROM ("  \
    " SELECT 'key' AS scope, key_id AS id, " UMONTH " AS month, prompt_tokens + completion_tokens AS t FROM usage_records" \
    " UNION ALL SELECT 'project', project_id, " UMONTH ", prompt_tokens + completion_tokens FROM usage_records" \
    " UNION ALL SELECT 'tenant', tenant_id, " UMONTH ", prompt_tokens + completion_tokens FROM usage_records) u) x" \
    " WHERE CASE x.scope"                                                                         \
    " WHEN 'key' THEN" NO_OPEN_HOLD("key", "key_id")                                              \
    " WHEN 'project' THEN" NO_OPEN_HOLD("project", "project_id")                                  \
    " ELSE" NO_OPEN_HOLD("tenant", "tenant_id") " END GROUP BY k HAVING SUM(t) <> 0 ORDER BY k"
#define HOURLY_KEY                                                                                \
    "(hour || '/' || tenant_id || '/' || project_id || '/' || key_id || '/' || model || '/' ||"   \
    " accelerator)"
#define HOURLY_COLUMNS(X)                                                                 \
    SUM_COLUMNS_(X, HOURLY_KEY " AS k", "requests", "prompt_tokens", "completion_tokens")
static const char SQL_HOURLY[] =
    "SELECT " STORE_COLS(HOURLY_COLUMNS) " FROM usage_hourly ORDER BY k";
#define HOURLY_RECORDS_COLUMNS(X)                                                         \
    SUM_COLUMNS_(X, HOURLY_KEY " AS k", "COUNT(*)", "SUM(prompt_tokens)", "SUM(completion_tokens)")
static const char SQL_HOURLY_RECORDS[] =
    "SELECT " STORE_COLS(HOURLY_RECORDS_COLUMNS) " FROM"
    " (SELECT at - at % 3600000000 AS hour, * FROM usage_records) r GROUP BY k ORDER BY k";

/* The columns SQLite's PRAGMA foreign_key_check returns (its own, not a list of ours:
 * table, rowid, parent, fkid) and integrity_check's one ("ok", or a problem). */
enum { FK_TABLE, FK_ROWID, FK_PARENT };
enum { IC_MESSAGE };

static int pragma_check(store_tx *tx, const char *sql, int fk, check_result *r, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, sql, "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if (fk)
            check_problem(r, "%s row %lld references a missing %s row", store_text(s, FK_TABLE),
                          (long long)store_int(s, FK_ROWID), store_text(s, FK_PARENT));
        else if (strcmp(store_text(s, IC_MESSAGE) ? store_text(s, IC_MESSAGE) : "", "ok") != 0)
            check_problem(r, "%s", store_text(s, IC_MESSAGE));
        else r->checked++;
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int check_run(store_t *st, check_report *out, gp_err *err) {
    return check_run_trusted(st, NULL, out, err);
}

int check_run_trusted(store_t *st, const audit_trust *trust, check_report *out, gp_err *err) {
    memset(out, 0, sizeof *out);
    spool p = {0};
    check_binding *b = NULL;
    check_gpu *gpus = NULL;
    const char **models = NULL;
    check_job *jobs = NULL;
    check_hold *holds = NULL;
    check_scope *scopes = NULL;
    check_sum *sa = NULL, *sb = NULL;
    int nb = 0, ng = 0, nj = 0, nh = 0, nsc = 0, na = 0, nbb = 0;
    store_tx *tx = NULL;
    /* first: audit_verify takes its own transaction (a read-only store has one connection) */
    audit_report ar;
    int rc = audit_verify_signed(st, trust, &ar, err);
    if (rc || (rc = store_begin(st, STORE_READ, &tx, err))) return rc;
    check_result *r;

    if ((rc = load_bindings(tx, &p, &b, &nb, err)) ||
        (rc = load_gpus(tx, &p, &gpus, &models, &ng, err)) ||
        (rc = load_jobs(tx, &p, &jobs, &nj, err)))
        goto done;
    r = &out->r[out->n++];
    check_result_init(r, "gpu_exclusive");
    check_gpu_exclusive(b, nb, gpus, ng, r);
    r = &out->r[out->n++];
    check_result_init(r, "job_bindings");
    check_job_bindings(jobs, nj, b, nb, r);

    if ((rc = load_holds(tx, &p, gpus, models, ng, &holds, &nh, err)) ||
        (rc = load_scopes(tx, &p, &scopes, &nsc, err)))
        goto done;
    r = &out->r[out->n++];
    check_result_init(r, "quota");
    check_quota(holds, nh, scopes, nsc, r);

    r = &out->r[out->n++];
    check_result_init(r, "audit_chain");
    {
        r->checked = ar.checked;
        if (!ar.ok)
            check_problem(r, "chain broken at seq %lld: %s", (long long)ar.bad_seq, ar.reason);
        if (ar.signed_checked)
            snprintf(r->note, sizeof r->note,
                     "%lld event(s) verified against %lld signed checkpoint(s) (newest at %lld)",
                     (long long)ar.checked, (long long)ar.checkpoints, (long long)ar.signed_seq);
        else
            snprintf(r->note, sizeof r->note, "%lld event(s) verified", (long long)ar.checked);
    }

    r = &out->r[out->n++];
    check_result_init(r, "token_ledger");
    {
        static const char *const rn[] = {"reserved"}, *const un[] = {"used"};
        if ((rc = load_sums(tx, &p, SQL_LEDGER_RESERVED, &sa, &na, err)) ||
            (rc = load_sums(tx, &p, SQL_HOLDS, &sb, &nbb, err)))
            goto done;
        check_sums(sa, na, sb, nbb, 1, rn, "ledger", r);
        int64_t nres = r->checked;
        free(sa);
        free(sb);
        sa = sb = NULL;
        na = nbb = 0;
        if ((rc = load_sums(tx, &p, SQL_LEDGER_USED, &sa, &na, err)) ||
            (rc = load_sums(tx, &p,
                               store_sql(tx, SQL_USAGE_USED(UMONTH_SQLITE), SQL_USAGE_USED(UMONTH_PG)),
                               &sb, &nbb, err)))
            goto done;
        check_sums(sa, na, sb, nbb, 1, un, "ledger", r);
        snprintf(r->note, sizeof r->note,
                 "%lld scope-month(s) with reservations, %lld with use (no hold open) against usage "
                 "records",
                 (long long)nres, (long long)(r->checked - nres));
        free(sa);
        free(sb);
        sa = sb = NULL;
        na = nbb = 0;
    }

    r = &out->r[out->n++];
    check_result_init(r, "usage_hourly");
    {
        static const char *const hn[] = {"requests", "prompt_tokens", "completion_tokens"};
        if ((rc = load_sums(tx, &p, SQL_HOURLY, &sa, &na, err)) ||
            (rc = load_sums(tx, &p, SQL_HOURLY_RECORDS, &sb, &nbb, err)))
            goto done;
        check_sums(sa, na, sb, nbb, 3, hn, "usage_hourly", r);
        snprintf(r->note, sizeof r->note, "%d rollup row(s) against %d group(s) of records", na,
                 nbb);
    }

    r = &out->r[out->n++];
    check_result_init(r, "foreign_keys");
    if (!strcmp(store_tx_backend(tx), "postgres")) {
        /* PostgreSQL enforces every foreign key itself and cannot hold a violating row */
        snprintf(r->note, sizeof r->note, "enforced by PostgreSQL");
    } else {
        if ((rc = pragma_check(tx, "PRAGMA foreign_key_check", 1, r, err))) goto done;
        snprintf(r->note, sizeof r->note, "PRAGMA foreign_key_check: %lld violation(s)",
                 (long long)r->nproblems);
    }

    r = &out->r[out->n++];
    check_result_init(r, "integrity");
    if (!strcmp(store_tx_backend(tx), "postgres")) {
        /* the server checks its pages itself; indexes: the amcheck extension, as a superuser */
        snprintf(r->note, sizeof r->note, "checked by PostgreSQL itself (amcheck for indexes)");
    } else {
        if ((rc = pragma_check(tx, "PRAGMA integrity_check", 0, r, err))) goto done;
        snprintf(r->note, sizeof r->note, "PRAGMA integrity_check: %s", r->ok ? "ok" : "errors");
    }

    out->ok = 1;
    for (int i = 0; i < out->n; i++) out->ok &= out->r[i].ok;
done:
    store_rollback(tx);
    free(b);
    free(gpus);
    free(models);
    free(jobs);
    free(holds);
    free(scopes);
    free(sa);
    free(sb);
    spool_free(&p);
    if (rc) check_report_release(out);
    return rc;
}
