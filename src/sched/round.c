/*
 * round.c - the scheduler against the store: build a snapshot, run the pure
 * round, commit its decisions; and explain a job with the same machinery.
 */
#include "round_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../core/strbuf.h"
#include "../inventory/inventory.h"
#include "../compat/compat.h"
#include "loop.h"
#include "reservations.h"
#include "sched_metrics.h"
#include "share.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* FNV-1a, 64 bits: a job's reason as a number (an equal hash skips an UPDATE; a collision, at
 * worst, leaves the older reason shown until the next change). */
uint64_t rnd_reason_hash(const char *t) {
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)(t ? t : ""); *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/*
 * What the round reads, by name: each SELECT list read by index is declared once here
 * (STORE_COLS builds the list, STORE_COL_ENUM the indexes: store.h).
 */
#define QUOTA_COLUMNS(X) \
    X(QT_TENANT, "tenant_id") \
    X(QT_PROJECT, "project_id") \
    X(QT_SPEC, "spec")
enum { QUOTA_COLUMNS(STORE_COL_ENUM) QT__N };
#define CARDH_COLUMNS(X) \
    X(CH_TENANT, "tenant_id") \
    X(CH_PROJECT, "project_id") \
    X(CH_MILLI, "COALESCE(SUM(weight_milli * ((CASE WHEN COALESCE(end_us, ?1) < ?1 THEN COALESCE(end_us, ?1) ELSE ?1 END) - (CASE WHEN start_us > ?2 THEN start_us ELSE ?2 END)) / 1000000), 0)")
enum { CARDH_COLUMNS(STORE_COL_ENUM) CH__N };
#define QMARK_COLUMNS(X) \
    X(QM_ROWS, "COUNT(*)") \
    X(QM_AT, "COALESCE(MAX(updated_at), 0)")
enum { QMARK_COLUMNS(STORE_COL_ENUM) QM__N };
#define STOPS_COLUMNS(X) \
    X(SP_JOB, "job_id") \
    X(SP_STOPS, "COUNT(DISTINCT end_us)")
enum { STOPS_COLUMNS(STORE_COL_ENUM) SP__N };
#define RSV_COLUMNS(X) \
    X(RV_ID, "id") \
    X(RV_NAME, "name") \
    X(RV_TENANT, "COALESCE(tenant_id, '')") \
    X(RV_PROJECT, "COALESCE(project_id, '')") \
    X(RV_POOL, "pool") \
    X(RV_CLASS, "class") \
    X(RV_COUNT, "count") \
    X(RV_NODES, "nodes") \
    X(RV_START, "start_us") \
    X(RV_END, "end_us") \
    X(RV_RECURRENCE, "recurrence") \
    X(RV_WEEKDAYS, "weekdays") \
    X(RV_EVERY, "every_s") \
    X(RV_UNTIL, "until_us") \
    X(RV_DELETED, "deleted_at")
enum { RSV_COLUMNS(STORE_COL_ENUM) RV__N };
#define POOL_COLUMNS(X) \
    X(PO_NAME, "name") \
    X(PO_HALF_LIFE, "COALESCE(borrow_half_life_s, 0)")
enum { POOL_COLUMNS(STORE_COL_ENUM) PO__N };
#define NODE_COLUMNS(X) \
    X(ND_NAME, "name") \
    X(ND_CPUS, "cpus") \
    X(ND_MEM, "memory_gib") \
    X(ND_POOL, "pool") \
    X(ND_STATE, "state") \
    X(ND_ADMIN, "admin_state") \
    X(ND_RACK, "CASE WHEN topo_rack = '' THEN 0 ELSE DENSE_RANK() OVER (ORDER BY topo_rack) END") \
    X(ND_SWITCH, "CASE WHEN topo_switch = '' THEN 0 ELSE DENSE_RANK() OVER (ORDER BY topo_switch) END")
enum { NODE_COLUMNS(STORE_COL_ENUM) ND__N };
#define GPU_COLUMNS(X) \
    X(GC_NODE, "n.name") \
    X(GC_UUID, "g.uuid") \
    X(GC_MODEL, "g.model") \
    X(GC_MEM, "g.memory_mib") \
    X(GC_MODE, "g.mode") \
    X(GC_HEALTH, "g.health") \
    X(GC_ADMIN, "g.admin_state") \
    X(GC_NUMA, "g.numa") \
    X(GC_TOPO, "g.topology") \
    X(GC_ID, "g.id") \
    X(GC_DRIVER, "g.driver_version") \
    X(GC_CC, "g.compute_cap") \
    X(GC_VENDOR, "g.vendor") \
    X(GC_STACK, "g.stack")
enum { GPU_COLUMNS(STORE_COL_ENUM) GC__N };
#define SLICE_COLUMNS(X) \
    X(SC_GPU, "gpu_id") \
    X(SC_UUID, "uuid") \
    X(SC_PROFILE, "profile") \
    X(SC_MEM, "memory_mib")
enum { SLICE_COLUMNS(STORE_COL_ENUM) SC__N };
#define CLASS_COLUMNS(X) \
    X(CL_NAME, "name") \
    X(CL_FORM, "form") \
    X(CL_GPUS, "gpus") \
    X(CL_CPUS, "cpus") \
    X(CL_MEM, "memory_gib") \
    X(CL_MODELS, "gpu_models") \
    X(CL_TOPO, "topology") \
    X(CL_POOL, "COALESCE(pool, '')") \
    X(CL_MIN_DRIVER, "min_driver") \
    X(CL_MIN_CC, "min_compute_cap") \
    X(CL_VENDORS, "vendors") \
    X(CL_MIN_DRIVERS, "min_drivers") \
    X(CL_STACK, "stack")
enum { CLASS_COLUMNS(STORE_COL_ENUM) CL__N };
#define TENANT_COLUMNS(X) \
    X(TN_ID, "id") \
    X(TN_NAME, "name")
enum { TENANT_COLUMNS(STORE_COL_ENUM) TN__N };
#define POOL_TENANT_COLUMNS(X) \
    X(PT_NAME, "name") \
    X(PT_TENANTS, "tenants")
enum { POOL_TENANT_COLUMNS(STORE_COL_ENUM) PT__N };
#define PROJECT_COLUMNS(X) \
    X(PJ_ID, "id") \
    X(PJ_TENANT, "tenant_id") \
    X(PJ_NAME, "name") \
    X(PJ_CLASS, "class")
enum { PROJECT_COLUMNS(STORE_COL_ENUM) PJ__N };
#define POOL_PCLASS_COLUMNS(X) \
    X(PC_NAME, "name") \
    X(PC_CLASSES, "project_classes")
enum { POOL_PCLASS_COLUMNS(STORE_COL_ENUM) PC__N };
#define USAGE_COLUMNS(X) \
    X(SU_TENANT, "tenant_id") \
    X(SU_POOL, "pool") \
    X(SU_RECENT, "recent") \
    X(SU_BORROWED, "borrowed") \
    X(SU_AT, "at_us")
enum { USAGE_COLUMNS(STORE_COL_ENUM) SU__N };
#define LOOK_COLUMNS(X) \
    X(LK_STATE, "n.state") \
    X(LK_ADMIN, "n.admin_state") \
    X(LK_CPUS, "n.cpus") \
    X(LK_MEM, "n.memory_gib") \
    X(LK_POOL, "n.pool") \
    X(LK_UUID, "g.uuid") \
    X(LK_ID, "g.id") \
    X(LK_MODE, "g.mode") \
    X(LK_HEALTH, "g.health") \
    X(LK_GADMIN, "g.admin_state") \
    X(LK_GMEM, "g.memory_mib") \
    X(LK_DRIVER, "g.driver_version")
enum { LOOK_COLUMNS(STORE_COL_ENUM) LK__N };
#define NODE_BIND_COLUMNS(X) \
    X(NB_JOB, "b.job_id") \
    X(NB_UNIT, "b.unit") \
    X(NB_GPU, "b.gpu_uuid") \
    X(NB_SLICE, "b.slice_uuid")
enum { NODE_BIND_COLUMNS(STORE_COL_ENUM) NB__N };
#define JOB_NOW_COLUMNS(X) \
    X(JN_STATE, "state") \
    X(JN_PCLASS, "priority_class") \
    X(JN_PRIORITY, "priority") \
    X(JN_PREEMPTIBLE, "preemptible") \
    X(JN_MAY_PREEMPT, "may_preempt")
enum { JOB_NOW_COLUMNS(STORE_COL_ENUM) JN__N };
#define SLICE_NOW_COLUMNS(X) \
    X(SN_GPU, "gpu_id") \
    X(SN_PROFILE, "profile")
enum { SLICE_NOW_COLUMNS(STORE_COL_ENUM) SN__N };
#define JOB_BIND_COLUMNS(X) \
    X(JB_UNIT, "unit") \
    X(JB_GPU, "gpu_uuid") \
    X(JB_SLICE, "slice_uuid") \
    X(JB_NODE, "node")
enum { JOB_BIND_COLUMNS(STORE_COL_ENUM) JB__N };
#define PLACE_COLUMNS(X) \
    X(PB_JOB, "job_id") \
    X(PB_UNIT, "unit") \
    X(PB_GPU, "gpu_uuid") \
    X(PB_SLICE, "slice_uuid")
enum { PLACE_COLUMNS(STORE_COL_ENUM) PB__N };

/* Pool p's borrow half-life (p == npools: pool "", the policy's). */
static int64_t pool_half_life(const snap *n, int p) {
    return p < n->s.npools && n->phl[p] > 0 ? n->phl[p] : n->spol.half_life_s;
}

/* Zeroed room for cnt x size bytes in the snapshot's arena, or NULL. */
void *rnd_alloc(snap *n, size_t cnt, size_t size) {
    if (size && cnt > ((size_t)-1 / 2) / size) return NULL;
    size_t need = (cnt * size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    ar_chunk *c = n->arena;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > AR_CHUNK ? need : AR_CHUNK;
        if (!(c = malloc(sizeof *c + cap))) return NULL;
        c->next = n->arena;
        c->used = 0;
        c->cap = cap;
        n->arena = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += need;
    memset(p, 0, need);
    return p;
}

/* Free everything build() allocated: the arena, in one go, and its hold on the cluster. */
void rnd_snap_free(snap *n) {
    jobs_array_allow_free(n->array_allow);
    n->array_allow = NULL;
    rnd_cluster_drop(n->cl);
    n->cl = NULL;
    for (ar_chunk *c = n->arena, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    n->arena = NULL;
}

/* The one value `sql` reads, `none` when it reads no row. */
int rnd_one_value(store_tx *tx, const char *sql, int64_t none, int64_t *v, gp_err *err) {
    store_stmt *s;
    *v = none;
    int rc = store_query(tx, &s, err, sql, "");
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) *v = store_int(s, 0);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int count(store_tx *tx, const char *sql, int *out, gp_err *err) {
    int64_t v;
    int rc = rnd_one_value(tx, sql, 0, &v, err);
    *out = (int)v;
    return rc;
}

int rnd_find_str(const void *base, size_t stride, int n, const char *key) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp((const char *)base + stride * (size_t)mid, key);
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* A GPU's uuid and index, sorted as a pair: the comparator needs no context (no globals:
 * build() runs on the scheduler thread and on request threads, for explain, at once). */
typedef struct uuid_pair {
    const char *uuid;
    int g;
} uuid_pair;

static int by_uuid(const void *a, const void *b) {
    return strcmp(((const uuid_pair *)a)->uuid, ((const uuid_pair *)b)->uuid);
}

static int gpu_index(const snap *n, const char *uuid) {
    int lo = 0, hi = n->s.ngpus - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, g = n->gpu_order[mid];
        int c = strcmp(n->gpu_uuids[g], uuid);
        if (c == 0) return g;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int model_index(snap *n, const char *model) {
    for (int i = 0; i < n->s.nmodels; i++)
        if (strcmp(n->models[i], model) == 0) return i;
    snprintf(n->models[n->s.nmodels], 96, "%s", model);
    return n->s.nmodels++;
}

/* The project of `project_id` if it belongs to tenant index `t`, else -1. */
static int project_of(const snap *n, int t, const char *project_id) {
    int p = rnd_find_str(n->pids, sizeof *n->pids, n->s.nprojects, project_id);
    return p >= 0 && n->projects[p].tenant == t ? p : -1;
}

/* Every tenant's and project's ceilings, as quota_load reads one scope's (unlimited when none
 * is stored; a stored spec that does not parse fails the round), in one query for all. */
static int load_quotas(store_tx *tx, snap *n, gp_err *err) {
    store_stmt *s;
    for (int i = 0; i < n->s.ntenants; i++) quota_unlimited(&n->tenants[i].quota);
    for (int i = 0; i < n->s.nprojects; i++) quota_unlimited(&n->projects[i].quota);
    int rc = store_query(tx, &s, err, "SELECT " STORE_COLS(QUOTA_COLUMNS) " FROM quotas", "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        int t = rnd_find_str(n->tids, sizeof *n->tids, n->s.ntenants, store_text(s, QT_TENANT));
        const char *pid = store_text(s, QT_PROJECT);
        int p = t >= 0 && pid[0] ? project_of(n, t, pid) : -1;
        quota_set *q = t < 0 ? NULL : !pid[0] ? &n->tenants[t].quota
                                 : p >= 0 ? &n->projects[p].quota : NULL;
        json_t *j = q ? json_loads(store_text(s, QT_SPEC), 0, NULL) : NULL;
        if (j) {
            rc = quota_parse(j, q, err);
            json_decref(j);
            if (rc) break;
        }
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* Card-hours (milli) used this month by every tenant and project: bind_card_hours's sum
 * (jobs.c), grouped by scope in one query; a tenant's is the sum of its groups. */
static int load_card_hours(store_tx *tx, snap *n, gp_err *err) {
    store_stmt *s;
    int64_t m0 = jobs__month_start(n->now, NULL);
    for (int i = 0; i < n->s.ntenants; i++) n->tenants[i].card_hours_used = 0;
    for (int i = 0; i < n->s.nprojects; i++) n->projects[i].card_hours_used = 0;
    /* weight (milli-card) x microseconds held this month / 1e6, summed (/ 3600 below) */
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CARDH_COLUMNS) " FROM bindings WHERE COALESCE(end_us, ?1) > ?2"
                         " GROUP BY tenant_id, project_id",
                         "ii", n->now, m0);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        int t = rnd_find_str(n->tids, sizeof *n->tids, n->s.ntenants, store_text(s, CH_TENANT));
        if (t < 0) continue;
        int64_t v = store_int(s, CH_MILLI);
        n->tenants[t].card_hours_used += v;
        int p = project_of(n, t, store_text(s, CH_PROJECT));
        if (p >= 0) n->projects[p].card_hours_used += v;
    }
    store_done(s);
    if (rc < 0) return rc;
    for (int i = 0; i < n->s.ntenants; i++) n->tenants[i].card_hours_used /= 3600;
    for (int i = 0; i < n->s.nprojects; i++) n->projects[i].card_hours_used /= 3600;
    return GP_OK;
}

/* The card g as the compatibility rules see it. */
static cp_card card_of(const snap *n, int g) {
    return (cp_card){n->gpus[g].vendor, n->gpu_driver[g], &n->gpu_stack[g]};
}

/*
 * A class derived from class `from` (sch_class.base): the same spec, on the cards of `from`
 * that also run the job stack `req` (NULL: any) and are of `vendor` (-1: any).  Its index, or
 * -1 when out of room or memory.
 */
static int derive(snap *n, int from, const cp_req *req, int vendor) {
    sch_snapshot *S = &n->s;
    if (S->nclasses >= n->ccap) return -1;
    unsigned char *gok = rnd_alloc(n, (size_t)S->ngpus + 1, 1);
    if (!gok) return -1;
    int c = S->nclasses++;
    const sch_class *f = &n->classes[from];
    n->classes[c] = *f;
    n->classes[c].base = f->base ? f->base : from + 1;
    n->classes[c].alts = NULL;
    n->classes[c].nalts = 0;
    n->classes[c].alt_vendor = vendor >= 0 ? vendor + 1 : 0;
    n->classes[c].why_none = NULL;
    memcpy(n->cnames[c], n->cnames[from], sizeof n->cnames[c]);
    memcpy(n->cforms[c], n->cforms[from], sizeof n->cforms[c]);
    memcpy(n->cprof[c], n->cprof[from], sizeof n->cprof[c]);
    n->crules[c] = n->crules[from];
    n->classes[c].name = n->cnames[c];
    n->classes[c].profile = n->cprof[c];
    if (req) cp_req_format(req, n->dstack[c], sizeof n->dstack[c]);
    else memcpy(n->dstack[c], n->dstack[from], sizeof n->dstack[c]);
    for (int g = 0; g < S->ngpus; g++) {
        cp_card cd = card_of(n, g);
        gok[g] = (unsigned char)(f->gpu_ok[g] && (vendor < 0 || n->gpus[g].vendor == vendor) &&
                                 (!req || cp_card_check(NULL, req, &cd) == CP_OK));
    }
    n->classes[c].gpu_ok = gok;
    return c;
}

/*
 * Class c is complete but for what depends on its cards: why none passes its rules (when
 * cards of its models exist and all fail), and single-vendor variants when the cards that
 * pass span vendors.  `req`: the job stack it was derived for (NULL: none).  0, or -1 when
 * out of room or memory.
 */
static int finish_class(snap *n, int c, const cp_req *req) {
    const sch_snapshot *S = &n->s;
    unsigned vendors = 0;
    int models = 0, pass = 0;
    for (int g = 0; g < S->ngpus; g++) {
        if (!n->classes[c].model_ok[n->gpus[g].model]) continue;
        models++;
        if (n->classes[c].gpu_ok[g]) {
            pass++;
            vendors |= 1u << n->gpus[g].vendor;
        }
    }
    if (models && !pass) {
        cp_card *cards = malloc(sizeof *cards * (size_t)models);
        char *why = rnd_alloc(n, 160, 1);
        if (!cards || !why) {
            free(cards);
            return -1;
        }
        size_t k = 0;
        for (int g = 0; g < S->ngpus; g++)
            if (n->classes[c].model_ok[n->gpus[g].model]) cards[k++] = card_of(n, g);
        /* (when the compatibility rules pass some card, the compute capability is why) */
        if (cp_why_none(&n->crules[c], req, cards, k, why, 160)) n->classes[c].why_none = why;
        free(cards);
    }
    if (vendors & (vendors - 1)) {
        int *alts = rnd_alloc(n, CP_NVENDORS, sizeof *alts), na = 0;
        if (!alts) return -1;
        for (int v = 0; v < CP_NVENDORS; v++)
            if (vendors & (1u << v)) {
                int a = derive(n, c, NULL, v);
                if (a < 0) return -1;
                alts[na++] = a;
            }
        /* (n->classes is fixed-size: derive never moves class c) */
        n->classes[c].alts = alts;
        n->classes[c].nalts = na;
    }
    return 0;
}

/* Remember an open binding build() leaves out.  0, or 1 when out of memory. */
static int skip_binding(snap *n, const char *job, const char *gpu, int unit) {
    if (n->nskipped == n->capskipped) {
        int cap = n->capskipped ? n->capskipped * 2 : 16;
        skipped *a = rnd_alloc(n, (size_t)cap, sizeof *a);
        if (!a) return 1;
        if (n->nskipped) memcpy(a, n->skipped, (size_t)n->nskipped * sizeof *a);
        n->skipped = a;
        n->capskipped = cap;
    }
    skipped *k = &n->skipped[n->nskipped++];
    snprintf(k->job, sizeof k->job, "%s", job);
    snprintf(k->gpu, sizeof k->gpu, "%s", gpu);
    k->unit = unit;
    return 0;
}

/* How many quota rows there are and when the newest changed (every change stamps now). */
static int quota_mark(store_tx *tx, int64_t *rows, int64_t *at, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(QMARK_COLUMNS) " FROM quotas", "");
    if (rc) return rc;
    *rows = *at = 0;
    if ((rc = store_step(s, err)) > 0) {
        *rows = store_int(s, QM_ROWS);
        *at = store_int(s, QM_AT);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* Each live job's stops within the reclaim window (sch_job.stops): its bindings that ended
 * `preempted` since then, one stop per end time (a stop ends all its bindings at once). */
static int load_stops(store_tx *tx, snap *n, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(STOPS_COLUMNS) " FROM bindings"
                         " WHERE end_reason = 'preempted' AND end_us >= ? GROUP BY job_id",
                         "i", n->now - n->spol.reclaim_window_s * 1000000);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        int ji = rnd_find_str(n->jids, sizeof *n->jids, n->s.njobs, store_text(s, SP_JOB));
        if (ji >= 0) n->jobs[ji].stops = (int)store_int(s, SP_STOPS);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

typedef struct rsv_order {
    int64_t t1;
    int i;
} rsv_order;

static int by_start(const void *a, const void *b) {
    const rsv_order *x = a, *y = b;
    if (x->t1 != y->t1) return x->t1 < y->t1 ? -1 : 1;
    return x->i - y->i;
}

/*
 * The reservations the round weighs (reserve.h): each one not deleted, at its occurrence in
 * force or next (none left: skipped), and any a live job names (deleted or over: at its last
 * occurrence, or a span long past), so that its jobs wait with the reason.  Named nodes by
 * index; a count's cards those of its pool its class accepts (models, form, rules).  Read
 * after the nodes, classes, tenants and projects, before the jobs.  ORDER BY id: jobs find
 * theirs by id.
 */
static int load_reservations(store_tx *tx, snap *n, gp_err *err) {
    sch_snapshot *S = &n->s;
    store_stmt *s;
    int cnt, rc;
    const char *live_refs = "SELECT reservation_id FROM jobs WHERE reservation_id IS NOT NULL"
                            " AND state IN ('queued','admitted','running')";
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM reservations WHERE deleted_at = 0 OR id IN (%s)", live_refs);
    if ((rc = count(tx, sql, &cnt, err))) return rc;
    if (!cnt) return GP_OK;
    if (!ALLOC(n->rsvs, cnt) || !ALLOC(n->rsv_ids, cnt) || !ALLOC(n->rsv_names, cnt) ||
        !ALLOC(n->rsv_name_ptrs, cnt))
        return gp_err_set(err, GP_ENOMEM, NULL);
    snprintf(sql, sizeof sql,
             "SELECT " STORE_COLS(RSV_COLUMNS) " FROM reservations WHERE deleted_at = 0 OR id IN (%s) ORDER BY id",
             live_refs);
    if ((rc = store_query(tx, &s, err, sql, ""))) return rc;
    while ((rc = store_step(s, err)) > 0 && S->nrsvs < cnt) {
        rsv_rule rule;
        rsv_span sp = {0, 1}; /* over long ago */
        int deleted = store_int(s, RV_DELETED) != 0, live = 0;
        rsv_rule_from(store_text(s, RV_RECURRENCE), store_int(s, RV_START), store_int(s, RV_END), store_int(s, RV_WEEKDAYS),
                      store_int(s, RV_EVERY), store_int(s, RV_UNTIL), &rule);
        if (!deleted) {
            live = rsv_current(&rule, n->now, &sp);
            if (!live && !rsv_last(&rule, n->now, &sp)) sp = (rsv_span){0, 1};
        }
        int i = S->nrsvs;
        rsv *r = &n->rsvs[i];
        memset(r, 0, sizeof *r);
        r->t1_us = sp.t1_us;
        r->t2_us = sp.t2_us > sp.t1_us ? sp.t2_us : sp.t1_us + 1;
        r->pool = -1;
        r->project = -1;
        r->tenant = store_text(s, RV_TENANT)[0]
                        ? rnd_find_str(n->tids, sizeof *n->tids, S->ntenants, store_text(s, RV_TENANT))
                        : -1;
        if (store_text(s, RV_TENANT)[0] && r->tenant < 0) live = 0; /* its tenant is gone */
        if (r->tenant >= 0 && store_text(s, RV_PROJECT)[0]) {
            r->project = project_of(n, r->tenant, store_text(s, RV_PROJECT));
            if (r->project < 0) live = 0;
        }
        int64_t count = store_int(s, RV_COUNT);
        if (!count) {
            unsigned char *in = rnd_alloc(n, (size_t)S->nnodes + 1, 1);
            json_t *names = json_loads(store_text(s, RV_NODES), 0, NULL);
            if (!in) {
                json_decref(names);
                store_done(s);
                return gp_err_set(err, GP_ENOMEM, NULL);
            }
            size_t k;
            json_t *v;
            json_array_foreach(names, k, v) {
                int node = json_is_string(v) ? rnd_find_str(n->node_names, sizeof *n->node_names,
                                                        S->nnodes, json_string_value(v))
                                             : -1;
                if (node >= 0) in[node] = 1;
            }
            json_decref(names);
            r->node_in = in;
        } else {
            unsigned char *ok = rnd_alloc(n, (size_t)S->ngpus + 1, 1);
            if (!ok) {
                store_done(s);
                return gp_err_set(err, GP_ENOMEM, NULL);
            }
            r->pool = rnd_find_str(n->pools, sizeof *n->pools, S->npools, store_text(s, RV_POOL));
            int c = rnd_find_str(n->cnames, sizeof *n->cnames, n->nstored, store_text(s, RV_CLASS));
            if (r->pool < 0 || c < 0) live = 0; /* its pool or class is gone: it holds nothing */
            for (int g = 0; c >= 0 && g < S->ngpus; g++)
                ok[g] = (unsigned char)(n->classes[c].model_ok[n->gpus[g].model] &&
                                        n->classes[c].gpu_ok[g] &&
                                        n->gpus[g].mode == n->classes[c].form);
            r->card_ok = ok;
            r->count = (int)(count > 1000000 ? 1000000 : count);
        }
        if (!live && sp.t2_us > n->now) { /* nothing it can hold: over (its jobs wait) */
            r->t1_us = 0;
            r->t2_us = 1;
        }
        snprintf(n->rsv_ids[i], RND_ID_LEN, "%s", store_text(s, RV_ID));
        snprintf(n->rsv_names[i], 64, "%s", store_text(s, RV_NAME));
        n->rsv_name_ptrs[i] = n->rsv_names[i];
        S->nrsvs++;
    }
    store_done(s);
    if (rc < 0) return rc;
    /* in start order (the first one in a job's way is the one its reason names), jobs finding
     * theirs by id through rsv_byid */
    int m = S->nrsvs;
    rsv_order *ord = rnd_alloc(n, (size_t)m + 1, sizeof *ord);
    rsv *rs2 = rnd_alloc(n, (size_t)m + 1, sizeof *rs2);
    name64 *nm2 = rnd_alloc(n, (size_t)m + 1, sizeof *nm2);
    if (!ord || !rs2 || !nm2 || !ALLOC(n->rsv_byid, m)) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < m; i++) ord[i] = (rsv_order){n->rsvs[i].t1_us, i};
    qsort(ord, (size_t)m, sizeof *ord, by_start);
    for (int k = 0; k < m; k++) {
        rs2[k] = n->rsvs[ord[k].i];
        memcpy(nm2[k], n->rsv_names[ord[k].i], sizeof nm2[k]);
        n->rsv_byid[ord[k].i] = k; /* rsv_ids stay in id order */
    }
    memcpy(n->rsvs, rs2, sizeof *rs2 * (size_t)m);
    memcpy(n->rsv_names, nm2, sizeof *nm2 * (size_t)m);
    for (int k = 0; k < m; k++) n->rsv_name_ptrs[k] = n->rsv_names[k];
    S->rsvs = n->rsvs;
    S->rsv_names = n->rsv_name_ptrs;
    return GP_OK;
}

/*
 * The cluster part of a snapshot, read into n's arena: the pools, nodes, cards and slices, the
 * stored classes (with their single-vendor variants), the tenants and projects (names, pools
 * open to them) and the health policy - what changes only when cluster_version moves
 * (migration 29).  Nothing of it is written once read: snapshots share it (rnd_cluster_take).
 */
int rnd_read_cluster(store_tx *tx, snap *n, gp_err *err) {
    store_stmt *s;
    int rc, nn, ng, np, nc, nt, npj;
    if ((rc = inv_health_policy_load(tx, &n->pol, err)) ||
        (rc = count(tx, "SELECT COUNT(*) FROM nodes", &nn, err)) ||
        (rc = count(tx, "SELECT COUNT(*) FROM gpus", &ng, err)) ||
        (rc = count(tx, "SELECT COUNT(*) FROM pools", &np, err)) ||
        (rc = count(tx, "SELECT COUNT(*) FROM classes", &nc, err)) ||
        (rc = count(tx, "SELECT COUNT(*) FROM tenants", &nt, err)) ||
        (rc = count(tx, "SELECT COUNT(*) FROM projects", &npj, err)))
        return rc;
    /* stored classes and each one's single-vendor variants */
    n->ccap = nc * (1 + CP_NVENDORS);
    if (!ALLOC(n->nodes, nn) || !ALLOC(n->node_names, nn) || !ALLOC(n->node_pool, nn) ||
        !ALLOC(n->gpus, ng) ||
        !ALLOC(n->gpu_uuids, ng) || !(n->slice_uuids = rnd_alloc(n, (size_t)(ng + 1) * SCH_MAX_SLICES, sizeof *n->slice_uuids)) ||
        !(n->slice_prof = rnd_alloc(n, (size_t)(ng + 1) * SCH_MAX_SLICES, sizeof *n->slice_prof)) ||
        !ALLOC(n->gpu_ids, ng) ||
        !ALLOC(n->models, ng) || !ALLOC(n->gpu_order, ng) || !ALLOC(n->pools, np) || !ALLOC(n->phl, np) ||
        !ALLOC(n->gpu_driver, ng) || !ALLOC(n->gpu_cc, ng) || !ALLOC(n->gpu_stack, ng) ||
        !ALLOC(n->classes, n->ccap) || !ALLOC(n->cnames, n->ccap) || !ALLOC(n->cprof, n->ccap) ||
        !ALLOC(n->cforms, n->ccap) || !ALLOC(n->crules, n->ccap) || !ALLOC(n->dstack, n->ccap) ||
        !ALLOC(n->tenants, nt) || !ALLOC(n->tnames, nt) ||
        !ALLOC(n->tids, nt) || !ALLOC(n->projects, npj) || !ALLOC(n->pnames, npj) ||
        !ALLOC(n->pids, npj))
        return gp_err_set(err, GP_ENOMEM, NULL);
    sch_snapshot *S = &n->s;
    /* pools */
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(POOL_COLUMNS) " FROM pools ORDER BY name",
                          "")))
        return rc;
    while ((rc = store_step(s, err)) > 0 && S->npools < np) {
        n->phl[S->npools] = store_int(s, PO_HALF_LIFE);
        snprintf(n->pools[S->npools++], 64, "%s", store_text(s, PO_NAME));
    }
    store_done(s);
    if (rc < 0) return rc;
    /* nodes and GPUs */
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(NODE_COLUMNS) " FROM nodes ORDER BY name",
                          "")))
        return rc;
    while ((rc = store_step(s, err)) > 0 && S->nnodes < nn) {
        int i = S->nnodes++;
        snprintf(n->node_names[i], 64, "%s", store_text(s, ND_NAME));
        n->nodes[i].cpus = (int)store_int(s, ND_CPUS);
        n->nodes[i].mem_gib = (int)store_int(s, ND_MEM);
        snprintf(n->node_pool[i], 64, "%s", store_text(s, ND_POOL));
        n->nodes[i].pool = rnd_find_str(n->pools, sizeof *n->pools, S->npools, store_text(s, ND_POOL));
        if (n->nodes[i].pool < 0) n->nodes[i].pool = 0;
        n->nodes[i].rack = (int)store_int(s, ND_RACK);
        n->nodes[i].sw = (int)store_int(s, ND_SWITCH);
        /* node usability folds into each GPU's allocatable flag below */
        n->nodes[i].gpu0 = strcmp(store_text(s, ND_STATE), "ready") == 0 &&
                           strcmp(store_text(s, ND_ADMIN), "none") == 0; /* temporarily: node usable */
    }
    store_done(s);
    if (rc < 0) return rc;
    int *usable = rnd_alloc(n, (size_t)S->nnodes + 1, sizeof *usable);
    if (!usable) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < S->nnodes; i++) usable[i] = n->nodes[i].gpu0;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(GPU_COLUMNS) " FROM gpus g"
                          " JOIN nodes n ON n.id = g.node_id ORDER BY n.name, g.idx",
                          ""))) {
        return rc;
    }
    int cur = -1;
    char last_stack[128] = "";
    cp_stack last_parsed;
    memset(&last_parsed, 0, sizeof last_parsed);
    while ((rc = store_step(s, err)) > 0 && S->ngpus < ng) {
        int node = rnd_find_str(n->node_names, sizeof *n->node_names, S->nnodes, store_text(s, GC_NODE));
        if (node < 0) continue;
        int g = S->ngpus++;
        if (node != cur) {
            n->nodes[node].gpu0 = g;
            n->nodes[node].ngpus = 0;
            cur = node;
        }
        n->nodes[node].ngpus++;
        sch_gpu *gp = &n->gpus[g];
        snprintf(n->gpu_uuids[g], 96, "%s", store_text(s, GC_UUID));
        snprintf(n->gpu_driver[g], 32, "%s", store_text(s, GC_DRIVER));
        snprintf(n->gpu_cc[g], 16, "%s", store_text(s, GC_CC));
        int vendor = cp_vendor_parse(store_text(s, GC_VENDOR));
        gp->vendor = vendor < 0 ? CP_NVIDIA : vendor;
        /* the card's runtimes: cards in a row mostly share them, parsed once */
        const char *stk = store_text(s, GC_STACK);
        if (strcmp(stk, last_stack) != 0) {
            char why[160];
            json_t *sj = json_loads(stk, 0, NULL);
            if (cp_stack_parse(sj, &last_parsed, why, sizeof why))
                memset(&last_parsed, 0, sizeof last_parsed);
            json_decref(sj);
            /* (a text too long to keep is never taken for the next card's) */
            snprintf(last_stack, sizeof last_stack, "%s",
                     strlen(stk) < sizeof last_stack ? stk : "\x01");
        }
        n->gpu_stack[g] = last_parsed;
        gp->node = node;
        gp->model = model_index(n, store_text(s, GC_MODEL));
        gp->mem_gib = (int)(store_int(s, GC_MEM) / 1024);
        const char *mode = store_text(s, GC_MODE);
        gp->mode = !strcmp(mode, "mig") ? SCH_MIG : !strcmp(mode, "shared") ? SCH_SHARED : SCH_WHOLE;
        gp->allocatable = usable[node] && strcmp(store_text(s, GC_ADMIN), "none") == 0 &&
                          health_allocatable(&n->pol, health_parse(store_text(s, GC_HEALTH)));
        gp->numa = (int)store_int(s, GC_NUMA);
        gp->nvgroup = -1;
        json_t *topo = json_loads(store_text(s, GC_TOPO), 0, NULL);
        /* NVLink group: the first earlier card on the node this one is linked to, else itself */
        if (json_object_size(topo)) {
            gp->nvgroup = g;
            for (int k = n->nodes[node].gpu0; k < g; k++) {
                json_t *lv = json_object_get(topo, n->gpu_uuids[k]);
                if (json_is_integer(lv) && json_integer_value(lv) <= 10) {
                    gp->nvgroup = n->gpus[k].nvgroup >= 0 ? n->gpus[k].nvgroup : k;
                    break;
                }
            }
        }
        json_decref(topo);
        snprintf(n->gpu_ids[g], RND_ID_LEN, "%s", store_text(s, GC_ID));
    }
    store_done(s);
    /* slices: one query for all, each to its GPU by id (ids in order, then a search) */
    if (rc >= 0) {
        uuid_pair *ids = rnd_alloc(n, (size_t)S->ngpus + 1, sizeof *ids);
        if (!ids) return gp_err_set(err, GP_ENOMEM, NULL);
        for (int g = 0; g < S->ngpus; g++) ids[g] = (uuid_pair){n->gpu_ids[g], g};
        qsort(ids, (size_t)S->ngpus, sizeof *ids, by_uuid);
        if ((rc = store_query(tx, &s, err,
                              "SELECT " STORE_COLS(SLICE_COLUMNS) " FROM slices"
                              " ORDER BY gpu_id, idx",
                              "")))
            return rc;
        while ((rc = store_step(s, err)) > 0) {
            uuid_pair key = {store_text(s, SC_GPU), -1};
            const uuid_pair *hit = bsearch(&key, ids, (size_t)S->ngpus, sizeof *ids, by_uuid);
            if (!hit) continue;
            sch_gpu *gp = &n->gpus[hit->g];
            if (gp->nslices >= SCH_MAX_SLICES) continue;
            int k = gp->nslices++;
            size_t at = (size_t)hit->g * SCH_MAX_SLICES + (size_t)k;
            snprintf(n->slice_uuids[at], 96, "%s", store_text(s, SC_UUID));
            snprintf(n->slice_prof[at], 24, "%s", store_text(s, SC_PROFILE));
            gp->slices[k].profile = n->slice_prof[at];
            gp->slices[k].mem_gib = (int)(store_int(s, SC_MEM) / 1024);
        }
        store_done(s);
    }
    for (int i = 0; i < S->nnodes; i++)
        if (!n->nodes[i].ngpus) n->nodes[i].gpu0 = 0;
    if (rc < 0) return rc;
    {
        uuid_pair *pairs = rnd_alloc(n, (size_t)S->ngpus + 1, sizeof *pairs);
        if (!pairs) return gp_err_set(err, GP_ENOMEM, NULL);
        for (int g = 0; g < S->ngpus; g++) pairs[g] = (uuid_pair){n->gpu_uuids[g], g};
        qsort(pairs, (size_t)S->ngpus, sizeof *pairs, by_uuid);
        for (int g = 0; g < S->ngpus; g++) n->gpu_order[g] = pairs[g].g;
    }
    /* classes */
    if (!(n->model_ok = rnd_alloc(n, (size_t)(nc + 1) * (size_t)(S->nmodels + 1), 1)) ||
        !(n->gpu_ok = rnd_alloc(n, (size_t)(nc + 1) * (size_t)(S->ngpus + 1), 1)))
        return gp_err_set(err, GP_ENOMEM, NULL);
    /* each model's largest card: the card a class is counted on before placement */
    const char **mnames = rnd_alloc(n, (size_t)S->nmodels + 1, sizeof *mnames);
    int *mgib = rnd_alloc(n, (size_t)S->nmodels + 1, sizeof *mgib);
    if (!mnames || !mgib) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int m = 0; m < S->nmodels; m++) mnames[m] = n->models[m];
    for (int g = 0; g < S->ngpus; g++)
        if (n->gpus[g].mem_gib > mgib[n->gpus[g].model]) mgib[n->gpus[g].model] = n->gpus[g].mem_gib;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(CLASS_COLUMNS) " FROM classes ORDER BY name",
                          "")))
        return rc;
    while ((rc = store_step(s, err)) > 0 && S->nclasses < nc) {
        int c = S->nclasses++;
        sch_class *cl = &n->classes[c];
        inv_form f;
        snprintf(n->cnames[c], 64, "%s", store_text(s, CL_NAME));
        snprintf(n->cforms[c], 64, "%s", store_text(s, CL_FORM));
        inv_form_parse(store_text(s, CL_FORM), &f, NULL);
        cl->name = n->cnames[c];
        cl->form = f.kind == FORM_MIG ? SCH_MIG : f.kind == FORM_SHARED ? SCH_SHARED : SCH_WHOLE;
        snprintf(n->cprof[c], 24, "%s", f.profile);
        cl->profile = n->cprof[c];
        cl->shared_mem_gib = f.memory_gib;
        cl->shared_pct = f.percent;
        cl->gpus = (int)store_int(s, CL_GPUS);
        if (cl->gpus > SCH_MAX_GPUS_PER_UNIT) cl->gpus = SCH_MAX_GPUS_PER_UNIT;
        cl->cpus = (int)store_int(s, CL_CPUS);
        cl->mem_gib = (int)store_int(s, CL_MEM);
        const char *topo = store_text(s, CL_TOPO);
        cl->topology = !strcmp(topo, "nvlink") ? SCH_TOPO_NVLINK
                       : !strcmp(topo, "same-numa") ? SCH_TOPO_NUMA : SCH_TOPO_ANY;
        cl->pool = store_text(s, CL_POOL)[0]
                       ? rnd_find_str(n->pools, sizeof *n->pools, S->npools, store_text(s, CL_POOL))
                       : -1;
        unsigned char *ok = &n->model_ok[(size_t)c * (size_t)(S->nmodels + 1)];
        json_t *models = json_loads(store_text(s, CL_MODELS), 0, NULL);
        for (int m = 0; m < S->nmodels; m++) {
            size_t i;
            json_t *v;
            json_array_foreach(models, i, v) if (inv_model_matches(json_string_value(v), n->models[m])) ok[m] = 1;
        }
        int ref_mem = sch_class_card_gib(models, mnames, mgib, S->nmodels);
        json_decref(models);
        cl->model_ok = ok;
        /* the compatibility rules (compat.h: vendors, driver minimum per vendor, stack) and
         * NVIDIA's compute capability minimum, card by card, once per round */
        {
            char why[160];
            json_t *vj = json_loads(store_text(s, CL_VENDORS), 0, NULL),
                   *mj = json_loads(store_text(s, CL_MIN_DRIVERS), 0, NULL),
                   *sj = json_loads(store_text(s, CL_STACK), 0, NULL);
            if (cp_rules_parse(vj, mj, sj, &n->crules[c], why, sizeof why))
                memset(&n->crules[c], 0, sizeof n->crules[c]);
            json_decref(vj);
            json_decref(mj);
            json_decref(sj);
        }
        unsigned char *gok = &n->gpu_ok[(size_t)c * (size_t)(S->ngpus + 1)];
        for (int g = 0; g < S->ngpus; g++) {
            cp_card cd = card_of(n, g);
            gok[g] = (unsigned char)(cp_card_check(&n->crules[c], NULL, &cd) == CP_OK &&
                                     (n->gpus[g].vendor != CP_NVIDIA ||
                                      inv_version_at_least(n->gpu_cc[g], store_text(s, CL_MIN_CC))));
        }
        cl->gpu_ok = gok;
        sch_unit_demand(cl->form, cl->gpus, f.profile, f.memory_gib, f.percent, ref_mem,
                        &cl->gpu_milli, &cl->gpu_mem_gib);
    }
    store_done(s);
    if (rc < 0) return rc;
    n->nstored = S->nclasses;
    for (int c = 0; c < n->nstored; c++)
        if (finish_class(n, c, NULL)) return gp_err_set(err, GP_ENOMEM, NULL);
    /* tenants and projects */
    if (!(n->pool_ok = rnd_alloc(n, (size_t)(nt + 1) * (size_t)(S->npools + 1), 1)))
        return gp_err_set(err, GP_ENOMEM, NULL);
    if ((rc = store_query(tx, &s, err, "SELECT " STORE_COLS(TENANT_COLUMNS) " FROM tenants ORDER BY id", "")))
        return rc;
    while ((rc = store_step(s, err)) > 0 && S->ntenants < nt) {
        int i = S->ntenants++;
        snprintf(n->tids[i], RND_ID_LEN, "%s", store_text(s, TN_ID));
        snprintf(n->tnames[i], 64, "%s", store_text(s, TN_NAME));
        n->tenants[i].name = n->tnames[i];
    }
    store_done(s);
    if (rc < 0) return rc;
    for (int i = 0; i < S->ntenants; i++)
        n->tenants[i].pool_ok = &n->pool_ok[(size_t)i * (size_t)(S->npools + 1)];
    /* which tenants may use which pool */
    if ((rc = store_query(tx, &s, err, "SELECT " STORE_COLS(POOL_TENANT_COLUMNS) " FROM pools ORDER BY name", "")))
        return rc;
    while ((rc = store_step(s, err)) > 0) {
        int p = rnd_find_str(n->pools, sizeof *n->pools, S->npools, store_text(s, PT_NAME));
        json_t *allowed = json_loads(store_text(s, PT_TENANTS), 0, NULL);
        for (int i = 0; p >= 0 && i < S->ntenants; i++) {
            int ok = json_array_size(allowed) == 0;
            size_t k;
            json_t *v;
            json_array_foreach(allowed, k, v) if (!strcmp(json_string_value(v), n->tnames[i])) ok = 1;
            n->pool_ok[(size_t)i * (size_t)(S->npools + 1) + (size_t)p] = (unsigned char)ok;
        }
        json_decref(allowed);
    }
    store_done(s);
    if (rc < 0) return rc;
    if (!(n->ppool_ok = rnd_alloc(n, (size_t)(npj + 1) * (size_t)(S->npools + 1), 1)))
        return gp_err_set(err, GP_ENOMEM, NULL);
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(PROJECT_COLUMNS) " FROM projects ORDER BY id", "")))
        return rc;
    while ((rc = store_step(s, err)) > 0 && S->nprojects < npj) {
        int i = S->nprojects++;
        snprintf(n->pids[i], RND_ID_LEN, "%s", store_text(s, PJ_ID));
        snprintf(n->pnames[i], 64, "%s", store_text(s, PJ_NAME));
        n->projects[i].name = n->pnames[i];
        n->projects[i].tenant = rnd_find_str(n->tids, sizeof *n->tids, S->ntenants, store_text(s, PJ_TENANT));
        const char *pc = store_text(s, PJ_CLASS);
        n->projects[i].pclass = !strcmp(pc, "production") ? 0 : !strcmp(pc, "development") ? 1 : 2;
    }
    store_done(s);
    if (rc < 0) return rc;
    /* pools open to each project's class */
    static const char *const pclasses[] = {"production", "development", "research"};
    if ((rc = store_query(tx, &s, err, "SELECT " STORE_COLS(POOL_PCLASS_COLUMNS) " FROM pools", ""))) return rc;
    for (int i = 0; i < S->nprojects; i++)
        memset(&n->ppool_ok[(size_t)i * (size_t)(S->npools + 1)], 1, (size_t)S->npools + 1);
    while ((rc = store_step(s, err)) > 0) {
        int pl = rnd_find_str(n->pools, sizeof *n->pools, S->npools, store_text(s, PC_NAME));
        json_t *allowed = json_loads(store_text(s, PC_CLASSES), 0, NULL);
        for (int i = 0; pl >= 0 && json_array_size(allowed) && i < S->nprojects; i++) {
            int ok = 0;
            size_t k;
            json_t *v;
            json_array_foreach(allowed, k, v) if (!strcmp(json_string_value(v), pclasses[n->projects[i].pclass])) ok = 1;
            n->ppool_ok[(size_t)i * (size_t)(S->npools + 1) + (size_t)pl] = (unsigned char)ok;
        }
        json_decref(allowed);
    }
    store_done(s);
    if (rc < 0) return rc;
    for (int i = 0; i < S->nprojects; i++)
        n->projects[i].pool_ok = &n->ppool_ok[(size_t)i * (size_t)(S->npools + 1)];
    S->nmodels = S->nmodels ? S->nmodels : 1;
    return GP_OK;
}

/* Whether the live job of `id` waits for a dependency not met (ids: sorted, unmet). */
static int in_sorted(char (*ids)[RND_ID_LEN], int n, const char *id) {
    return rnd_find_str(ids, RND_ID_LEN, n, id) >= 0;
}

/* The live jobs whose dependencies are not all met, sorted; only when some live job has any. */
static int unmet_deps(store_tx *tx, const qlist *l, char (**out)[RND_ID_LEN], int *n,
                      gp_err *err) {
    *out = NULL;
    *n = 0;
    int any = 0;
    for (int i = 0; i < l->n && !any; i++) any = l->r[i]->has_deps;
    if (!any) return GP_OK;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT DISTINCT d.job_id FROM job_deps d JOIN jobs j ON j.id = d.job_id"
                         " JOIN jobs dj ON dj.id = d.dep_id WHERE j." QLIVE
                         " AND NOT " JOBS_DEPS_MET_SQL " ORDER BY d.job_id",
                         "");
    if (rc) return rc;
    int cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            char(*a)[RND_ID_LEN] = realloc(*out, (size_t)cap * RND_ID_LEN);
            if (!a) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            *out = a;
        }
        snprintf((*out)[(*n)++], RND_ID_LEN, "%s", store_text(s, 0));
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    return GP_OK;
}

/* A (stored class, job stack) pair the live jobs name, for the derived classes. */
typedef struct cstack {
    const char *cls, *stack;
} cstack;

static int by_cstack(const void *a, const void *b) {
    const cstack *x = a, *y = b;
    int c = strcmp(x->cls, y->cls);
    return c ? c : strcmp(x->stack, y->stack);
}


/*
 * Build the snapshot a round decides on, in tx: the cluster (from memory or read:
 * rnd_cluster_take), then what every round reads - the derived classes of the job stacks, the
 * tenants' recent borrowing, quotas, card-hours, reservations, the live jobs, the open
 * bindings and the stops.
 */
static int build_from(store_tx *tx, snap *n, const qlist *live, gp_err *err);

static int build(store_t *st, store_tx *tx, snap *n, gp_err *err) {
    int rc;
    memset(n, 0, sizeof *n);
    if ((rc = quota_mark(tx, &n->quota_rows, &n->quota_at, err))) return rc;
    n->now = gt_now_us();
    {
        time_t t = (time_t)(n->now / 1000000);
        struct tm tm;
        gmtime_r(&t, &tm);
        snprintf(n->month, sizeof n->month, "%04d-%02d", (tm.tm_year + 1900) % 10000,
                 (tm.tm_mon + 1) % 100);
    }
    rnd_queue *q;
    qlist own;
    if ((rc = share_policy_load(tx, &n->spol, err)) ||
        (rc = rnd_cluster_take(st, tx, n->now, &n->cl, err)) ||
        (rc = rnd_queue_take(st, tx, n->now, &q, &own, err)))
        return rc;
    /* (the queue stays locked while the snapshot is filled from it) */
    rc = build_from(tx, n, q ? &q->rows : &own, err);
    if (q) pthread_mutex_unlock(&q->mu);
    rnd_qlist_free(&own);
    return rc;
}

/* The rest of build(), from the live jobs `live`. */
static int build_from(store_tx *tx, snap *n, const qlist *live, gp_err *err) {
    store_stmt *s;
    int rc, nj = live->n, nu = 0, nds = 0;
    /* the (stored class, job stack) pairs the live jobs name, sorted, once each */
    cstack *pairs = malloc(sizeof *pairs * (size_t)(nj + 1));
    if (!pairs) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < nj; i++) {
        const qrow *r = live->r[i];
        if (r->state == SCH_RUNNING) nu += r->units;
        if (r->stack) pairs[nds++] = (cstack){r->cls, r->stack};
        n->any_deps |= r->has_deps;
    }
    qsort(pairs, (size_t)nds, sizeof *pairs, by_cstack);
    int np = 0;
    for (int i = 0; i < nds; i++)
        if (!np || by_cstack(&pairs[np - 1], &pairs[i])) pairs[np++] = pairs[i];
    nds = np;
    if (rnd_cluster_use(n, nds) || !ALLOC(n->jobs, nj) || !ALLOC(n->jids, nj) ||
        !ALLOC(n->jrecovery, nj) || !ALLOC(n->jreason, nj) || !ALLOC(n->places, nu) ||
        !ALLOC(n->place_fill, nu)) {
        free(pairs);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    sch_snapshot *S = &n->s;
    S->month = n->month;
    S->now_us = n->now;
    S->reclaim_cap = n->spol.reclaim_cap;
    S->reclaim_window_s = n->spol.reclaim_window_s;
    S->borrow_horizon_s = n->spol.half_life_s;
    S->pool_names = (const char (*)[64])n->pools;
    /* a class per (stored class, job stack) the live jobs name */
    for (int i = 0; i < nds; i++) {
        int from = rnd_find_str(n->cnames, sizeof *n->cnames, n->nstored, pairs[i].cls);
        cp_req req;
        char why[160];
        if (from < 0 || cp_req_parse(pairs[i].stack, &req, why, sizeof why)) continue;
        int c = derive(n, from, &req, -1);
        if (c < 0 || finish_class(n, c, &req)) {
            free(pairs);
            return gp_err_set(err, GP_ENOMEM, NULL);
        }
    }
    free(pairs);
    /* each tenant's recent borrowing (fair use, step 6a): its rows per pool, each decayed
     * with its pool's half-life (a pool deleted since: the policy's, read only) */
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(USAGE_COLUMNS) " FROM share_usage", "")))
        return rc;
    size_t P1 = (size_t)S->npools + 1;
    while ((rc = store_step(s, err)) > 0) {
        int i = rnd_find_str(n->tids, sizeof *n->tids, S->ntenants, store_text(s, SU_TENANT));
        if (i < 0) continue;
        share_usage u = {store_int(s, SU_RECENT), store_int(s, SU_BORROWED), store_int(s, SU_AT)};
        const char *pn = store_text(s, SU_POOL);
        int p = pn[0] ? rnd_find_str(n->pools, sizeof *n->pools, S->npools, pn) : S->npools;
        if (p >= 0) n->pusage[(size_t)i * P1 + (size_t)p] = u;
        else n->tenants[i].recent += share_usage_now(&u, n->now, n->spol.half_life_s);
    }
    store_done(s);
    if (rc < 0) return rc;
    for (int i = 0; i < S->ntenants; i++)
        for (int p = 0; p <= S->npools; p++)
            n->tenants[i].recent += share_usage_now(&n->pusage[(size_t)i * P1 + (size_t)p], n->now,
                                                    pool_half_life(n, p));
    if ((rc = load_quotas(tx, n, err)) || (rc = load_card_hours(tx, n, err)) ||
        (rc = jobs_array_allow_load(tx, &n->array_allow, err)) ||
        (rc = load_reservations(tx, n, err)))
        return rc;
    /* live jobs (but those waiting for their dependencies: they hold nothing, deps.c), and
     * where the running ones are */
    char(*unmet)[RND_ID_LEN];
    int nunmet;
    if ((rc = unmet_deps(tx, live, &unmet, &nunmet, err))) return rc;
    int used_units = 0;
    for (int li = 0; li < live->n; li++) {
        const qrow *r = live->r[li];
        if (r->has_deps && in_sorted(unmet, nunmet, r->id)) continue;
        /* a queued task of an array at its cap: not this round's (arrays.c) */
        if (r->state == SCH_PENDING && !jobs_array_allowed(n->array_allow, r->capped, r->id))
            continue;
        int cls = rnd_find_str(n->cnames, sizeof *n->cnames, n->nstored, r->cls);
        int prj = rnd_find_str(n->pids, sizeof *n->pids, S->nprojects, r->project);
        if (cls < 0 || prj < 0) continue; /* its class was deleted: it cannot be scheduled */
        /* a job naming its image's stack: the class derived for that stack */
        if (r->stack) {
            cp_req req;
            char canon[CP_VER_MAX + 16], why[160];
            if (cp_req_parse(r->stack, &req, why, sizeof why) == 0) {
                cp_req_format(&req, canon, sizeof canon);
                for (int c = n->nstored; c < S->nclasses; c++)
                    /* (the first: its vendor variants, with the same stack, come after it) */
                    if (n->classes[c].base == cls + 1 && !strcmp(n->dstack[c], canon)) {
                        cls = c;
                        break;
                    }
            }
        }
        int i = S->njobs++;
        sch_job *j = &n->jobs[i];
        memset(j, 0, sizeof *j); /* (a row skipped below leaves its slot to the next) */
        memcpy(n->jids[i], r->id, RND_ID_LEN);
        memcpy(n->jrecovery[i], r->recovery, sizeof n->jrecovery[i]);
        n->jreason[i] = r->reason;
        j->id = n->jids[i];
        j->project = prj;
        j->cls = cls;
        j->units = r->units;
        j->nodes = r->nodes;
        if (j->nodes < 0 || j->nodes > j->units || (j->nodes && j->units % j->nodes))
            j->nodes = 0; /* (cannot happen: the submit checked it) */
        j->priority = r->priority;
        j->preemptible = r->preemptible;
        j->may_preempt = r->may_preempt;
        j->submit_us = r->queued_at;
        j->start_us = r->started_at;
        j->state = r->state;
        j->credited = j->state == SCH_ADMITTED && r->credit;
        j->time_limit_s = r->time_limit_s;
        if (r->gpool[0]) /* what admission gave it (sched.h step 6d) */
            j->gpool = !strcmp(r->gpool, "*")
                           ? SCH_GPOOL_REST
                           : 1 + rnd_find_str(n->pools, sizeof *n->pools, S->npools, r->gpool);
        if (r->rsv[0]) {
            int ri = rnd_find_str(n->rsv_ids, sizeof *n->rsv_ids, S->nrsvs, r->rsv);
            j->reservation = ri >= 0 ? n->rsv_byid[ri] + 1 : 0;
            /* (every reservation a live job names is loaded; should one not be, a waiting job
             * naming it is not this round's rather than free to run anywhere) */
            if (ri < 0 && j->state != SCH_RUNNING) {
                S->njobs--;
                continue;
            }
        }
        if (j->state == SCH_RUNNING) {
            if (used_units + j->units > nu) j->state = SCH_ADMITTED; /* cannot happen; be safe */
            else {
                j->place = &n->places[used_units];
                for (int k = 0; k < j->units; k++) n->places[used_units + k].slice = -1;
                used_units += j->units;
            }
        }
    }
    free(unmet);
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(PLACE_COLUMNS) " FROM bindings"
                          " WHERE end_us IS NULL ORDER BY job_id, unit, start_us, id",
                          "")))
        return rc;
    int fill[SCH_MAX_GPUS_PER_UNIT * 64];
    char last[RND_ID_LEN] = "";
    int ji = -1;
    while ((rc = store_step(s, err)) > 0) {
        if (strcmp(last, store_text(s, PB_JOB)) != 0) {
            snprintf(last, sizeof last, "%s", store_text(s, PB_JOB));
            ji = rnd_find_str(n->jids, sizeof *n->jids, S->njobs, last);
            memset(fill, 0, sizeof fill);
        }
        int unit = (int)store_int(s, PB_UNIT), g = gpu_index(n, store_text(s, PB_GPU));
        if (ji < 0 || n->jobs[ji].state != SCH_RUNNING || unit < 0 ||
            unit >= n->jobs[ji].units || unit >= 64 || g < 0) {
            if ((rc = skip_binding(n, last, store_text(s, PB_GPU), unit))) break;
            continue;
        }
        sch_unit *u = (sch_unit *)&n->jobs[ji].place[unit];
        if (fill[unit] < SCH_MAX_GPUS_PER_UNIT) {
            u->gpu[fill[unit]++] = g;
            n->place_fill[u - n->places] = (unsigned char)fill[unit];
        } else if ((rc = skip_binding(n, last, store_text(s, PB_GPU), unit))) {
            break; /* (one card more than a unit holds: the guards still know it as read) */
        }
        const char *su = store_text(s, PB_SLICE);
        if (su[0])
            for (int k = 0; k < n->gpus[g].nslices; k++)
                if (!strcmp(n->slice_uuids[(size_t)g * SCH_MAX_SLICES + (size_t)k], su)) u->slice = k;
    }
    store_done(s);
    if (rc < 0) return rc;
    if (rc > 0) return gp_err_set(err, GP_ENOMEM, NULL);
    if ((rc = load_stops(tx, n, err))) return rc;
    S->nodes = n->nodes;
    S->gpus = n->gpus;
    S->classes = n->classes;
    S->tenants = n->tenants;
    S->projects = n->projects;
    S->jobs = n->jobs;
    S->nmodels = S->nmodels ? S->nmodels : 1;
    return GP_OK;
}

/* ---- commit ---- */

/* Remember that `node`'s assignments changed in this round. */
static void touched(round_stats *st, const char *node) {
    for (int i = 0; i < st->nnodes; i++)
        if (!strcmp(st->nodes[i], node)) return;
    if (st->nnodes == ROUND_MAX_NODES) {
        st->nodes_overflow = 1;
        return;
    }
    snprintf(st->nodes[st->nnodes++], sizeof st->nodes[0], "%.63s", node);
}

/* A binding's weight (metering: card-hours = weight x time): one card, or the unit's share of
 * its own card, by the demand formula. */
static int weight_of(const snap *n, const sch_class *c, const sch_unit *u) {
    int64_t milli, gib;
    sch_unit_demand(c->form, 1, c->profile, c->shared_mem_gib, c->shared_pct,
                    n->gpus[u->gpu[0]].mem_gib, &milli, &gib);
    return (int)milli;
}

static int audit_job(store_tx *tx, const snap *n, int ji, const char *action, json_t *sum,
                     gp_err *err) {
    const sch_job *j = &n->jobs[ji];
    const sch_project *p = &n->projects[j->project];
    char *text = jx_dump(sum);
    json_decref(sum);
    audit_event ev = {.actor = "scheduler", .action = action, .target_type = "job",
                      .target_id = j->id, .tenant = n->tnames[p->tenant], .project = p->name,
                      .result = "ok", .summary = text};
    int rc = audit_append(tx, &ev, NULL, err);
    free(text);
    return rc;
}

/*
 * The write phase's guards.  The snapshot was read in a read transaction that has ended and
 * the round was decided with none held; the decisions are committed in one write transaction,
 * and each is written only if what it was decided on still holds in the store as it is now
 * (the writer is held: only the round's own writes change it meanwhile).  Each guard compares
 * the store with what build() read, the same way build() read it, so a store nobody changed
 * since passes every guard.  A decision whose guard fails is skipped whole (no row of it is
 * written) and counted stale; the scheduler is woken for another round.
 */
typedef struct guard {
    unsigned char *node;  /* [node]: 0 not looked at yet, 1 as read, 2 changed */
    unsigned char *gpu;   /* [gpu]: 1 as read (valid once its node was looked at) */
    unsigned char *done;  /* [job]: placed by this write phase */
    int quota_moved;      /* a quota changed since the read: no job starts holding quota */
} guard;

/* How many cards a unit of job ji's class holds (a running unit: what its bindings filled). */
static int unit_cards(const snap *n, int ji, int unit) {
    const sch_job *j = &n->jobs[ji];
    if (j->state == SCH_RUNNING) return n->place_fill[&j->place[unit] - n->places];
    const sch_class *c = &n->classes[j->cls];
    return c->form == SCH_WHOLE ? c->gpus : 1;
}

/* Whether an open binding (job, unit, card uuid, slice uuid) is one build() read: a unit of a
 * job running in the snapshot, or one it left out. */
static int binding_as_read(const snap *n, const char *job, int unit, const char *uuid,
                           const char *slice) {
    int ji = rnd_find_str(n->jids, sizeof *n->jids, n->s.njobs, job), g = gpu_index(n, uuid);
    if (ji >= 0 && g >= 0 && n->jobs[ji].state == SCH_RUNNING && unit >= 0 &&
        unit < n->jobs[ji].units && unit < 64) {
        const sch_unit *u = &n->jobs[ji].place[unit];
        int held = 0, k = -1;
        for (int m = 0; m < unit_cards(n, ji, unit); m++) held |= u->gpu[m] == g;
        if (slice[0])
            for (int i = 0; i < n->gpus[g].nslices; i++)
                if (!strcmp(n->slice_uuids[(size_t)g * SCH_MAX_SLICES + (size_t)i], slice)) k = i;
        /* (build sets a unit's slice from any of its bindings that names a known one) */
        if (held && (k < 0 || u->slice == k)) return 1;
    }
    for (int i = 0; i < n->nskipped; i++)
        if (n->skipped[i].unit == unit && !strcmp(n->skipped[i].job, job) &&
            !strcmp(n->skipped[i].gpu, uuid))
            return 1;
    return 0;
}

/* Look at node `node` as it is now: the node still ready, not cordoned or draining, no
 * smaller, in the same pool; which of its cards are still the same cards, in the same mode,
 * allocatable; and every open binding on its cards one the snapshot held or this write phase
 * made (one made since by anyone else changes the node).  Sets gd->node[node], gd->gpu[]. */
static int look_at_node(store_tx *tx, const snap *n, guard *gd, int node, gp_err *err) {
    store_stmt *s;
    int ok = 1, rc;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(LOOK_COLUMNS) " FROM nodes n JOIN gpus g ON g.node_id = n.id WHERE n.name = ?",
                     "s", n->node_names[node]);
    if (rc) return rc;
    int rows = 0;
    while ((rc = store_step(s, err)) > 0) {
        int usable = !strcmp(store_text(s, LK_STATE), "ready") && !strcmp(store_text(s, LK_ADMIN), "none");
        if (!rows++ && (!usable || store_int(s, LK_CPUS) < n->nodes[node].cpus ||
                        store_int(s, LK_MEM) < n->nodes[node].mem_gib ||
                        strcmp(store_text(s, LK_POOL), n->node_pool[node])))
            ok = 0;
        int g = gpu_index(n, store_text(s, LK_UUID));
        if (g < 0 || n->gpus[g].node != node) continue; /* a card new here: not decided on */
        char id[RND_ID_LEN], drv[32];
        snprintf(id, sizeof id, "%s", store_text(s, LK_ID));
        snprintf(drv, sizeof drv, "%s", store_text(s, LK_DRIVER));
        const char *mode = store_text(s, LK_MODE);
        int m = !strcmp(mode, "mig") ? SCH_MIG : !strcmp(mode, "shared") ? SCH_SHARED : SCH_WHOLE;
        gd->gpu[g] = (unsigned char)(usable && !strcmp(store_text(s, LK_GADMIN), "none") &&
                                     health_allocatable(&n->pol, health_parse(store_text(s, LK_HEALTH))) &&
                                     !strcmp(id, n->gpu_ids[g]) && m == n->gpus[g].mode &&
                                     (int)(store_int(s, LK_GMEM) / 1024) == n->gpus[g].mem_gib &&
                                     !strcmp(drv, n->gpu_driver[g]));
    }
    store_done(s);
    if (rc < 0) return rc;
    if (ok) {
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(NODE_BIND_COLUMNS) " FROM nodes n"
                         " JOIN gpus g ON g.node_id = n.id JOIN bindings b ON b.gpu_uuid = g.uuid"
                         " WHERE n.name = ? AND b.end_us IS NULL",
                         "s", n->node_names[node]);
        if (rc) return rc;
        while (ok && (rc = store_step(s, err)) > 0) {
            const char *job = store_text(s, NB_JOB);
            int ji = rnd_find_str(n->jids, sizeof *n->jids, n->s.njobs, job);
            if (ji >= 0 && gd->done[ji]) continue; /* this write phase's own */
            ok = binding_as_read(n, job, (int)store_int(s, NB_UNIT), store_text(s, NB_GPU),
                                 store_text(s, NB_SLICE));
        }
        store_done(s);
        if (rc < 0) return rc;
    }
    gd->node[node] = ok ? 1 : 2;
    return GP_OK;
}

/* Job `id`'s state as it is now ("" when gone), and its priority class. */
static int job_now(store_tx *tx, const char *id, char state[16], char pclass[64], int64_t *prio,
                   int64_t *flag, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(JOB_NOW_COLUMNS) " FROM jobs WHERE id = ?",
                         "s", id);
    if (rc) return rc;
    state[0] = pclass[0] = '\0';
    if ((rc = store_step(s, err)) > 0) {
        snprintf(state, 16, "%s", store_text(s, JN_STATE));
        snprintf(pclass, 64, "%s", store_text(s, JN_PCLASS));
        if (prio) *prio = store_int(s, JN_PRIORITY);
        if (flag) *flag = store_int(s, JN_PREEMPTIBLE) * 2 + store_int(s, JN_MAY_PREEMPT); /* preemptible, may_preempt */
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int waiting(const char *state) {
    return !strcmp(state, "queued") || !strcmp(state, "admitted");
}

/* Whether placement d still holds: the job still waiting; every card it takes the same card,
 * allocatable, on a node that is still as read (look_at_node); its MIG slices still there. */
static int place_holds(store_tx *tx, const snap *n, guard *gd, const sch_decision *d,
                       char pclass[64], int *holds, gp_err *err) {
    const sch_job *j = &n->jobs[d->job];
    const sch_class *c = &n->classes[j->cls];
    char state[16];
    int rc = job_now(tx, j->id, state, pclass, NULL, NULL, err);
    *holds = 0;
    if (rc || !waiting(state)) return rc;
    int ng = c->form == SCH_WHOLE ? c->gpus : 1;
    for (int k = 0; k < j->units; k++)
        for (int m = 0; m < ng; m++) {
            int g = d->units[k].gpu[m], node = n->gpus[g].node;
            if (!gd->node[node] && (rc = look_at_node(tx, n, gd, node, err))) return rc;
            if (gd->node[node] != 1 || !gd->gpu[g]) return GP_OK;
        }
    if (c->form == SCH_MIG)
        for (int k = 0; k < j->units; k++) {
            int g = d->units[k].gpu[0];
            size_t at = (size_t)g * SCH_MAX_SLICES + (size_t)d->units[k].slice;
            store_stmt *s;
            if ((rc = store_query(tx, &s, err, "SELECT " STORE_COLS(SLICE_NOW_COLUMNS) " FROM slices WHERE uuid = ?",
                                  "s", n->slice_uuids[at])))
                return rc;
            int same = 0;
            if ((rc = store_step(s, err)) > 0) {
                char prof[24];
                snprintf(prof, sizeof prof, "%s", store_text(s, SN_PROFILE));
                same = !strcmp(store_text(s, SN_GPU), n->gpu_ids[g]) && !strcmp(prof, n->slice_prof[at]);
            }
            store_done(s);
            if (rc < 0) return rc;
            if (!same) return GP_OK;
        }
    *holds = 1;
    return GP_OK;
}

/* Whether preemption d still holds: the victim still running, on cards the snapshot had it
 * on, preemptible (or borrowed), of lower priority than its preemptor, which still waits and
 * may preempt; for a reclaim, the victim running as read and its beneficiary waiting.
 * OUT: the victim's priority class, and its nodes (touched when it is stopped). */
static int preempt_holds(store_tx *tx, const snap *n, const sch_decision *d, char pclass[64],
                         round_stats *st, int *holds, gp_err *err) {
    const sch_job *j = &n->jobs[d->job];
    char state[16], bstate[16], bclass[64];
    int64_t prio = 0, flag = 0, bprio = 0, bflag = 0;
    int rc = job_now(tx, j->id, state, pclass, &prio, &flag, err);
    if (!rc) rc = job_now(tx, n->jobs[d->by].id, bstate, bclass, &bprio, &bflag, err);
    *holds = 0;
    /* a reclaim (sched.h, step 6) takes borrowed work whatever its priority; borrowed work is
     * preemptible by priority whatever its class says */
    if (rc || strcmp(state, "running") || (!(flag & 2) && !d->borrowed && !d->reclaim) ||
        !waiting(bstate) || (!d->reclaim && (!(bflag & 1) || bprio <= prio)))
        return rc;
    store_stmt *q;
    char nodes[ROUND_MAX_NODES][64];
    int nn = 0, as_read = 1;
    if ((rc = store_query(tx, &q, err,
                          "SELECT " STORE_COLS(JOB_BIND_COLUMNS) " FROM bindings"
                          " WHERE job_id = ? AND end_us IS NULL",
                          "s", j->id)))
        return rc;
    while ((rc = store_step(q, err)) > 0 && as_read) {
        as_read = binding_as_read(n, j->id, (int)store_int(q, JB_UNIT), store_text(q, JB_GPU),
                                  store_text(q, JB_SLICE));
        int seen = 0;
        for (int i = 0; i < nn && !seen; i++) seen = !strcmp(nodes[i], store_text(q, JB_NODE));
        if (!seen && nn < ROUND_MAX_NODES) snprintf(nodes[nn++], 64, "%s", store_text(q, JB_NODE));
        else if (!seen) st->nodes_overflow = 1;
    }
    store_done(q);
    if (rc < 0 || !as_read) return rc < 0 ? rc : GP_OK;
    for (int i = 0; i < nn; i++) touched(st, nodes[i]);
    *holds = 1;
    return GP_OK;
}

static int commit_place(store_tx *tx, const snap *n, const sch_decision *d, const char *pclass,
                        round_stats *st, gp_err *err) {
    const sch_job *j = &n->jobs[d->job];
    const sch_class *c = &n->classes[j->cls];
    const sch_project *p = &n->projects[j->project];
    strbuf nodes = SB_INIT;
    int rc = GP_OK;
    for (int k = 0; k < j->units && !rc; k++) {
        const sch_unit *u = &d->units[k];
        int ng = c->form == SCH_WHOLE ? c->gpus : 1;
        for (int m = 0; m < ng && !rc; m++) {
            int g = u->gpu[m];
            char id[RND_ID_LEN];
            rnd_id(id);
            const char *slice = c->form == SCH_MIG ? n->slice_uuids[(size_t)g * SCH_MAX_SLICES + (size_t)u->slice] : "";
            rc = store_exec(tx, NULL, err,
                            "INSERT INTO bindings (id, job_id, unit, gpu_uuid, slice_uuid, node,"
                            " model, form, shared_mem_gib, shared_pct, weight_milli, tenant_id,"
                            " project_id, tenant, project, start_us, vendor)"
                            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            "ssisssssiiissssis", id, j->id, (int64_t)k, n->gpu_uuids[g], slice,
                            n->node_names[n->gpus[g].node], n->models[n->gpus[g].model],
                            n->cforms[j->cls],
                            (int64_t)(c->form == SCH_SHARED ? c->shared_mem_gib : 0),
                            (int64_t)(c->form == SCH_SHARED ? c->shared_pct : 0),
                            (int64_t)weight_of(n, c, u), n->tids[p->tenant], n->pids[j->project],
                            n->tnames[p->tenant], p->name, n->now,
                            cp_vendor_name(n->gpus[g].vendor));
        }
        const char *node = n->node_names[n->gpus[u->gpu[0]].node];
        touched(st, node);
        if (!strstr(nodes.buf, node)) sb_addf(&nodes, "%s%s", nodes.len ? "," : "", node);
    }
    char reason[200];
    snprintf(reason, sizeof reason, "running on %s", nodes.buf);
    if (!rc)
        rc = store_exec(tx, NULL, err,
                        "UPDATE jobs SET state = 'running', reason = ?, started_at = ?,"
                        " preempt_credit = 0, master_port = NULL WHERE id = ?",
                        "sis", reason, n->now, j->id);
    if (!rc) rc = jobs__event(tx, j->id, "placed", reason, err);
    if (!rc) sched_metrics_observe_place(n->tnames[p->tenant], pclass, n->now - j->submit_us);
    if (!rc)
        rc = audit_job(tx, n, d->job, "job.place",
                       json_pack("{s:s,s:s,s:i,s:b}", "class", c->name, "nodes", nodes.buf,
                                 "units", j->units, "borrowed", d->borrowed),
                       err);
    sb_release(&nodes);
    return rc;
}

static int commit_preempt(store_tx *tx, const snap *n, const sch_decision *d, const char *pclass,
                          gp_err *err) {
    const sch_job *j = &n->jobs[d->job];
    const sch_job *by = &n->jobs[d->by];
    int requeue = !strcmp(n->jrecovery[d->job], "requeue");
    int rc = store_exec(tx, NULL, err,
                        "UPDATE bindings SET end_us = ?, end_reason = 'preempted' WHERE job_id = ?"
                        " AND end_us IS NULL",
                        "is", n->now, j->id);
    char reason[240];
    snprintf(reason, sizeof reason, "%s: %s", requeue ? "requeued" : "ended", d->reason);
    if (!rc)
        rc = requeue ? store_exec(tx, NULL, err,
                                  "UPDATE jobs SET state = 'queued', reason = ?,"
                                  " preemptions = preemptions + 1 WHERE id = ?",
                                  "ss", reason, j->id)
                     : store_exec(tx, NULL, err,
                                  "UPDATE jobs SET state = 'preempted', reason = ?, ended_at = ?,"
                                  " preemptions = preemptions + 1 WHERE id = ?",
                                  "sis", reason, n->now, j->id);
    if (!rc) rc = jobs__event(tx, j->id, "preempted", reason, err);
    if (!rc && d->reclaim)
        sched_metrics_observe_reclaim(n->tnames[n->projects[j->project].tenant], pclass);
    else if (!rc)
        sched_metrics_observe_preempt(n->tnames[n->projects[j->project].tenant], pclass);
    if (!rc)
        rc = audit_job(tx, n, d->job, d->reclaim ? "job.reclaim" : "job.preempt",
                       json_pack("{s:s,s:i,s:i,s:b,s:b}", "why", d->reason, "victim_priority",
                                 j->priority, "preemptor_priority", by->priority, "requeued",
                                 requeue, "borrowed", d->borrowed || d->reclaim),
                       err);
    /* the preemptor's side of the story, in its own tenant's trail */
    if (!rc)
        rc = audit_job(tx, n, d->by, d->reclaim ? "job.reclaim_for" : "job.preempt_for",
                       json_pack("{s:i,s:i}", "victim_priority", j->priority, "preemptor_priority",
                                 by->priority),
                       err);
    return rc;
}

/*
 * Decisions written per write transaction, at most: the writer is released between batches,
 * so a round that places, admits or re-explains thousands of jobs never holds it for long
 * (submits, heartbeats and gateway batches commit in between).  Each decision is guarded on
 * its own, so a batch boundary changes nothing a guard relies on; only what a guard learnt
 * about a node is forgotten (others may write in between), not which jobs this round placed.
 */
#define WRITE_BATCH 64

/* Does decision d write nothing (admitted already, for the same reason and credit; or waiting
 * for the reason it already shows, not credited)?  Those need no transaction. */
static int writes_nothing(const snap *n, const sch_decision *d) {
    const sch_job *j = &n->jobs[d->job];
    switch (d->action) {
    case SCH_DO_PLACE:
    case SCH_DO_PREEMPT:
        return 0;
    case SCH_DO_ADMIT:
    case SCH_DO_WAIT_PREEMPT:
        return j->state == SCH_ADMITTED && j->credited == (d->action == SCH_DO_WAIT_PREEMPT) &&
               j->gpool == d->gpool && n->jreason[d->job] == rnd_reason_hash(d->reason);
    default:
        return n->jreason[d->job] == rnd_reason_hash(d->reason) && !j->credited;
    }
}

/* Write decision d in `tx`, guarded (see guard above); *holds 0: it went stale, skipped. */
static int commit_one(store_tx *tx, snap *n, guard *gd, const sch_decision *d,
                      round_stats *stats, int *holds, gp_err *err) {
    const char *id = n->jobs[d->job].id;
    char pclass[64];
    int rc = GP_OK, changes = 0;
    *holds = 1;
    /* a waiting job that starts holding quota (placed or admitted) was judged against the
     * ceilings as read: stale once any changed (the next round judges it against the new) */
    if (gd->quota_moved && n->jobs[d->job].state == SCH_PENDING &&
        (d->action == SCH_DO_PLACE || d->action == SCH_DO_ADMIT ||
         d->action == SCH_DO_WAIT_PREEMPT)) {
        *holds = 0;
        return GP_OK;
    }
    switch (d->action) {
    case SCH_DO_PLACE:
        rc = place_holds(tx, n, gd, d, pclass, holds, err);
        if (rc || !*holds) break;
        rc = commit_place(tx, n, d, pclass, stats, err);
        gd->done[d->job] = 1;
        break;
    case SCH_DO_PREEMPT:
        rc = preempt_holds(tx, n, d, pclass, stats, holds, err);
        if (rc || !*holds) break;
        rc = commit_preempt(tx, n, d, pclass, err);
        break;
    case SCH_DO_ADMIT:
    case SCH_DO_WAIT_PREEMPT:
        /* waiting for its victims: credited for what they free (sched.h, step 5) */
        rc = store_exec(tx, &changes, err,
                        "UPDATE jobs SET state = 'admitted', reason = ?, preempt_credit = ?,"
                        " guarantee_pool = ? WHERE id = ? AND state IN ('queued','admitted')",
                        "siss", d->reason, (int64_t)(d->action == SCH_DO_WAIT_PREEMPT),
                        d->gpool > 0 && d->gpool <= n->s.npools ? n->pools[d->gpool - 1]
                        : d->gpool == SCH_GPOOL_REST            ? "*"
                                                                : NULL,
                        id);
        *holds = changes > 0;
        if (!rc && *holds && n->jobs[d->job].state == SCH_PENDING)
            rc = jobs__event(tx, id, "admitted", d->reason, err);
        break;
    default:
        /* most waiting jobs wait for the same reason round after round: written once */
        if (n->jreason[d->job] != rnd_reason_hash(d->reason))
            rc = store_exec(tx, NULL, err,
                            "UPDATE jobs SET reason = ? WHERE id = ? AND reason <> ?"
                            " AND state IN ('queued','admitted')",
                            "sss", d->reason, id, d->reason);
        /* credited, and still no place: a waiting job like any other again */
        if (!rc && n->jobs[d->job].credited)
            rc = store_exec(tx, NULL, err,
                            "UPDATE jobs SET preempt_credit = 0 WHERE id = ?"
                            " AND state IN ('queued','admitted')",
                            "s", id);
    }
    return rc;
}

/*
 * Commit the round's decisions, each guarded, in write transactions of at most WRITE_BATCH
 * decisions that write (STORE_WRITE_ALONE: never waiting behind, nor holding up, a shared
 * commit).  Bindings start when their transaction begins, never before one that ended
 * meanwhile on the same card.  *committed: 1 once a batch has committed (a later failure
 * leaves the earlier batches in place).  OUT: the time spent waiting for and holding the
 * writer, in stats.
 */
static int commit_all(store_t *st, snap *n, const sch_result *r, round_stats *stats,
                      int *committed, gp_err *err) {
    guard gd = {rnd_alloc(n, (size_t)n->s.nnodes + 1, 1), rnd_alloc(n, (size_t)n->s.ngpus + 1, 1),
                rnd_alloc(n, (size_t)n->s.njobs + 1, 1)};
    if (!gd.node || !gd.gpu || !gd.done) return gp_err_set(err, GP_ENOMEM, NULL);
    store_tx *tx = NULL;
    int rc = GP_OK, inbatch = 0;
    int64_t since = 0;
    *committed = 0;
    for (int i = 0; i < r->n && !rc; i++) {
        const sch_decision *d = &r->d[i];
        int holds = 1;
        if (!writes_nothing(n, d)) {
            if (!tx) {
                int64_t t = gt_mono_us();
                if ((rc = store_begin(st, STORE_WRITE_ALONE, &tx, err))) break;
                since = gt_mono_us();
                stats->wait_us += since - t;
                n->now = gt_now_us();
                /* what the guards learnt of the nodes held only while the writer was held */
                memset(gd.node, 0, (size_t)n->s.nnodes + 1);
                memset(gd.gpu, 0, (size_t)n->s.ngpus + 1);
                inbatch = 0;
                int64_t qr, qa;
                if ((rc = quota_mark(tx, &qr, &qa, err))) break;
                if (qr != n->quota_rows || qa != n->quota_at) gd.quota_moved = 1;
            }
            rc = commit_one(tx, n, &gd, d, stats, &holds, err);
            if (!rc && ++inbatch >= WRITE_BATCH) {
                rc = store_commit(tx, err);
                tx = NULL;
                stats->write_us += gt_mono_us() - since;
                if (!rc) *committed = 1;
            }
        }
        if (rc) break;
        if (!holds) stats->stale++;
        else if (d->action == SCH_DO_PLACE) stats->placed++;
        else if (d->action == SCH_DO_PREEMPT) stats->preempted++;
        else stats->queued++;
    }
    if (tx) {
        if (rc) store_rollback(tx);
        else if (!(rc = store_commit(tx, err))) *committed = 1;
        stats->write_us += gt_mono_us() - since;
    }
    return rc;
}

/*
 * The guarantee domains of record_shares (sched.h steps 6c, 6d): tenant i's own is i, its
 * class guarantee k is ntenants + off[i] + k, its pool guarantee k ntenants + off[i] +
 * ngclass + k.  The domain job j's work counts against, placed with its first card (u0).
 */
static int share_dom(const snap *n, const int *off, const sch_job *j, const sch_unit *u0) {
    int tn = n->projects[j->project].tenant;
    const quota_set *q = &n->tenants[tn].quota;
    int kc = q->ngclass ? quota_gclass(q, n->classes[SCH_CLASS_BASE(n->classes, j->cls)].name) : -1;
    int pl = u0 && q->ngpool ? n->nodes[n->gpus[u0->gpu[0]].node].pool : -1;
    int kp = pl >= 0 && pl < n->s.npools ? quota_gpool(q, n->pools[pl]) : -1;
    int k = share_domain(j->reservation != 0, kc, kp >= 0 ? q->ngclass + kp : -1);
    return k >= 0 ? n->s.ntenants + off[tn] + k : tn;
}

/*
 * What each tenant lends (share_lent over every domain, as the overview counts it) with
 * running work `use` (GPU milli per domain, share_dom): OUT lent[ntenants].  `ts` is scratch
 * of D domains.
 */
static void lent_by(const snap *n, const int *off, int D, const int64_t *use, share_tenant *ts,
                    int64_t *lent) {
    int64_t capacity = 0;
    int T = n->s.ntenants;
    for (int g = 0; g < n->s.ngpus; g++) capacity += n->gpus[g].allocatable ? 1000 : 0;
    for (int i = 0; i < T; i++) {
        const quota_set *q = &n->tenants[i].quota;
        int64_t g = q->guarantee == QUOTA_NONE ? 0 : q->guarantee;
        ts[i] = (share_tenant){g, g, q->guarantee == QUOTA_NONE ? 0 : q->kept, 1, use[i], 0, 0};
        for (int k = 0; k < q->ngclass; k++)
            ts[T + off[i] + k] = (share_tenant){q->gclass_g[k], q->gclass_g[k], q->gclass_kept[k],
                                                1, use[T + off[i] + k], 0, 0};
        for (int k = 0, b = T + off[i] + q->ngclass; k < q->ngpool; k++)
            ts[b + k] = (share_tenant){q->gpool_g[k], q->gpool_g[k], q->gpool_kept[k], 1,
                                       use[b + k], 0, 0};
    }
    for (int i = 0; i < T; i++) {
        const quota_set *q = &n->tenants[i].quota;
        lent[i] = share_lent(ts, D, i, capacity);
        for (int k = 0; k < q->ngclass + q->ngpool; k++)
            lent[i] += share_lent(ts, D, T + off[i] + k, capacity);
    }
}

/*
 * After a round, while some tenant has a guarantee (r->borrowed set):
 *  - fair use (step 6a): fold each tenant's borrowing since it was last written into its
 *    recent borrowing where what it borrows changed (the round's start figures: what runs);
 *  - lending is audited: a tenant whose idle guarantee this round's borrowed placements
 *    lend more of gets `share.lend` in its own trail ({from, to} GPUs lent; never to whom:
 *    the borrower's `job.place` says `borrowed`).
 * One short write transaction, only when something changed.
 */
static int record_shares(store_t *st, const snap *n, const sch_result *r, gp_err *err) {
    if (!r->borrowed) return GP_OK;
    int T = n->s.ntenants, P = n->s.npools, any = 0, lends = 0;
    /* what each tenant borrows in each pool now (pool "": nothing any more) */
#define PB(i, p) ((p) < P ? r->pborrowed[(size_t)(i) * (size_t)P + (size_t)(p)] : 0)
#define PU(i, p) (&n->pusage[(size_t)(i) * (size_t)(P + 1) + (size_t)(p)])
    for (int i = 0; i < T && !any; i++)
        for (int p = 0; p <= P && !any; p++) any = PB(i, p) != PU(i, p)->borrowed;
    for (int i = 0; i < r->n && !lends; i++) lends = r->d[i].action == SCH_DO_PLACE && r->d[i].borrowed;
    if (!any && !lends) return GP_OK;
    int *off = calloc((size_t)T + 1, sizeof *off), D = T;
    for (int i = 0; off && i < T; i++) {
        off[i] = D - T;
        D += n->tenants[i].quota.ngclass + n->tenants[i].quota.ngpool;
    }
    int64_t *before = calloc((size_t)D + 1, sizeof *before), *after = calloc((size_t)D + 1, sizeof *after);
    int64_t *lb = calloc((size_t)T + 1, sizeof *lb), *la = calloc((size_t)T + 1, sizeof *la);
    share_tenant *ts = calloc((size_t)D + 1, sizeof *ts);
    store_tx *tx = NULL;
    int rc = !off || !before || !after || !lb || !la || !ts ? gp_err_set(err, GP_ENOMEM, NULL)
                                                            : GP_OK;
    if (!rc && lends) {
        for (int i = 0; i < n->s.njobs; i++) {
            const sch_job *j = &n->jobs[i];
            if (j->state == SCH_RUNNING)
                before[share_dom(n, off, j, j->units > 0 ? &j->place[0] : NULL)] +=
                    sch_demand(&n->s, j, QD_GPU_MILLI);
        }
        memcpy(after, before, sizeof *after * (size_t)D);
        for (int i = 0; i < r->n; i++) {
            const sch_decision *d = &r->d[i];
            const sch_job *j = &n->jobs[d->job];
            int sign = d->action == SCH_DO_PLACE ? 1 : d->action == SCH_DO_PREEMPT ? -1 : 0;
            const sch_unit *u0 = d->action == SCH_DO_PLACE && d->units ? &d->units[0]
                                 : j->state == SCH_RUNNING && j->units > 0 ? &j->place[0]
                                                                           : NULL;
            if (sign) after[share_dom(n, off, j, u0)] += sign * sch_demand(&n->s, j, QD_GPU_MILLI);
        }
        lent_by(n, off, D, before, ts, lb);
        lent_by(n, off, D, after, ts, la);
    }
    if (!rc) rc = store_begin(st, STORE_WRITE, &tx, err);
    int64_t now = gt_now_us();
    for (int i = 0; i < T && !rc; i++) {
        for (int p = 0; p <= P && !rc; p++)
            if (PB(i, p) != PU(i, p)->borrowed)
                rc = share_usage_save(tx, n->tids[i], p < P ? n->pools[p] : "", PU(i, p), PB(i, p),
                                      now, pool_half_life(n, p), err);
        if (!rc && lends && la[i] > lb[i]) {
            json_t *sum = json_pack("{s:f,s:f}", "from", (double)lb[i] / 1000.0, "to",
                                    (double)la[i] / 1000.0);
            char *text = sum ? jx_dump(sum) : NULL;
            json_decref(sum);
            audit_event ev = {.actor = "scheduler", .action = "share.lend",
                              .target_type = "share", .target_id = n->tnames[i],
                              .tenant = n->tnames[i], .project = "", .result = "ok",
                              .summary = text};
            rc = text ? audit_append(tx, &ev, NULL, err) : gp_err_set(err, GP_ENOMEM, NULL);
            free(text);
        }
    }
    if (tx) {
        if (rc) store_rollback(tx);
        else rc = store_commit(tx, err);
    }
#undef PB
#undef PU
    free(off);
    free(before);
    free(after);
    free(lb);
    free(la);
    free(ts);
    return rc;
}

int sched_run_between(store_t *st, void (*between)(void *arg), void *arg, round_stats *stats,
                      gp_err *err) {
    store_tx *tx;
    snap n;
    sch_result r;
    memset(stats, 0, sizeof *stats);
    int64_t t0 = gt_mono_us();
    /* 1. read: one consistent snapshot (SQLite WAL: readers never block the writer;
     *    PostgreSQL: REPEATABLE READ), ended before anything is decided */
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    int doomed = 0;
    rc = build(st, tx, &n, err);
    if (!rc && n.any_deps) rc = jobs_deps_doomed(tx, &doomed, err);
    store_rollback(tx);
    if (rc) {
        rnd_snap_free(&n);
        return rc;
    }
    /* queued jobs whose dependencies can never be met end now (deps.c); what waited on them
     * may move: another round */
    if (doomed) {
        json_t *gone = json_array();
        if (!(rc = store_begin(st, STORE_WRITE_ALONE, &tx, err))) {
            rc = jobs_deps_settle(tx, gone, err);
            if (rc) store_rollback(tx);
            else rc = store_commit(tx, err);
        }
        int any = json_array_size(gone) > 0;
        json_decref(gone);
        if (rc) {
            rnd_snap_free(&n);
            return rc;
        }
        if (any) sched_wake_freed(st, 1);
    }
    int64_t t1 = gt_mono_us();
    /* 2. decide, holding nothing */
    if (sch_round(&n.s, &r) != 0) {
        rnd_snap_free(&n);
        return gp_err_set(err, GP_ENOMEM, "scheduler: out of memory");
    }
    int64_t t2 = gt_mono_us();
    if (between) between(arg);
    /* 3. write: short transactions, every decision guarded against what changed since */
    int committed = 0;
    rc = commit_all(st, &n, &r, stats, &committed, err);
    if (!rc) { /* (not the round's failure: the next round folds what this one could not) */
        gp_err e2 = {0};
        (void)record_shares(st, &n, &r, &e2);
    }
    sch_result_free(&r);
    rnd_snap_free(&n);
    stats->read_us = t1 - t0;
    stats->decide_us = t2 - t1;
    if (rc) {
        /* batches written before the failure stay: their agents learn of them from the
         * next heartbeat, or now when the caller wakes every node (nodes_overflow) */
        int some = committed;
        memset(stats, 0, sizeof *stats);
        stats->nodes_overflow = some;
        return rc;
    }
    sched_metrics_phases(stats->read_us, stats->decide_us, stats->write_us, stats->stale);
    /* what went stale changed meanwhile: another round decides on the store as it is now */
    if (stats->stale) sched_wake_freed(st, 1);
    return GP_OK;
}

int sched_run(store_t *st, round_stats *stats, gp_err *err) {
    return sched_run_between(st, NULL, NULL, stats, err);
}

/* ---- explain ---- */

static const sch_decision *decision_of(const sch_result *r, int job) {
    for (int i = 0; i < r->n; i++)
        if (r->d[i].job == job && r->d[i].action != SCH_DO_PREEMPT) return &r->d[i];
    return NULL;
}

static int starts(const sch_decision *d) {
    return d && (d->action == SCH_DO_PLACE || d->action == SCH_DO_WAIT_PREEMPT);
}

/* A queued job waiting for its dependencies (deps.c): what it waits for.  *answered 0 when it
 * waits for none. */
static int explain_deps(store_tx *tx, const char *id, json_t **out, int *answered, gp_err *err) {
    json_t *deps;
    int waiting = 0;
    *answered = 0;
    int rc = jobs_deps_json(tx, id, &deps, &waiting, err);
    if (rc) return rc;
    if (!waiting) {
        json_decref(deps);
        return GP_OK;
    }
    strbuf sb = SB_INIT;
    size_t i;
    json_t *d, *ids = json_array();
    json_array_foreach(deps, i, d) {
        if (strcmp(json_string_value(json_object_get(d, "status")), "waiting")) continue;
        const char *kind = json_string_value(json_object_get(d, "kind"));
        json_array_append(ids, json_object_get(d, "job"));
        sb_addf(&sb, "%sjob %s (%s) to %s", sb.len ? ", " : "",
                json_string_value(json_object_get(d, "job")),
                json_string_value(json_object_get(d, "name")),
                !strcmp(kind, "ok")      ? "succeed"
                : !strcmp(kind, "notok") ? "end without succeeding"
                                         : "end");
    }
    char *why = sb_detach(&sb);
    /* the one thing that starts it: those jobs ending as it asks (then the round decides) */
    json_t *sg = json_pack("{s:s,s:o,s:i,s:s+,s:i}", "change", "wait_for_jobs", "jobs", ids,
                           "other_tenants_jobs", 0, "text", "wait for ",
                           why ? why : "its dependencies", "suggestion", 0);
    *out = json_pack("{s:s,s:s,s:s,s:b,s:o,s:s+,s:[o]}", "job", id, "state", "queued", "reason",
                     "waiting for its dependencies", "would_start_now", 0, "after", deps,
                     "explanation", "it waits for ", why ? why : "its dependencies",
                     "suggestions", sg);
    free(why);
    *answered = 1;
    return GP_OK;
}

/* "1h", "90m", "45s": the reclaim window, for notes. */
static void fmt_secs(int64_t sec, char *out, size_t n) {
    if (sec > 0 && sec % 3600 == 0) snprintf(out, n, "%lldh", (long long)(sec / 3600));
    else if (sec > 0 && sec % 60 == 0) snprintf(out, n, "%lldm", (long long)(sec / 60));
    else snprintf(out, n, "%llds", (long long)(sec > 0 ? sec : 0));
}

/*
 * Guarantees in an explanation (docs/scheduling.md, "Guarantees"), from the baseline round's
 * decision bd of the job: waiting to borrow ("borrow": what it needs, what is idle to lend),
 * waiting for reclaim ("reclaim": how many borrowed jobs it takes back and their GPUs, never
 * whose), or reclaim held back by the cap ("reclaim": how many capped jobs hold its place).
 */
static void explain_share(const snap *n, const sch_result *r, const sch_decision *bd, json_t *o,
                          json_t *notes) {
    if (!bd) return;
    const sch_job *j = &n->jobs[bd->job];
    const char *tenant = n->tnames[n->projects[j->project].tenant];
    char note[240];
    double g = 0, idle = 0, need = 0;
    const char *at;
    if (!strncmp(bd->reason, "borrow_limit", 12) && (at = strstr(bd->reason, "guarantee of ")) &&
        sscanf(at, "guarantee of %lf", &g) == 1 && (at = strstr(at, "capacity, ")) &&
        sscanf(at, "capacity, %lf", &idle) == 1 && (at = strstr(at, "(needs ")) &&
        sscanf(at, "(needs %lf", &need) == 1) {
        const sch_tenant *tn = &n->tenants[n->projects[j->project].tenant];
        double recent = (double)(tn->recent / 3600) / 1000.0;
        json_int_t weight = tn->quota.weight >= 1 ? tn->quota.weight : 1;
        json_t *b = json_pack("{s:f,s:f,s:f,s:I,s:f}", "guaranteed_gpus", g, "needs_gpus", need,
                              "idle_gpus", idle, "borrow_weight", weight,
                              "recent_borrowed_gpu_hours", recent);
        /* its class's own guarantee (sched.h step 6c): the reason says " GPUs for class C" */
        const char *cn = n->classes[SCH_CLASS_BASE(n->classes, j->cls)].name;
        int own = quota_gclass(&tn->quota, cn) >= 0 && !j->reservation;
        if (b && own) json_object_set_new(b, "class", json_string(cn));
        json_object_set_new(o, "borrow", b);
        snprintf(note, sizeof note,
                 "it waits to borrow: tenant %s is above its guarantee of %g GPUs%s%s, so it "
                 "runs only on idle capacity; it needs %g GPUs, %g are idle to lend now",
                 tenant, g, own ? " for class " : "", own ? cn : "", need, idle);
        json_array_append_new(notes, json_string(note));
        snprintf(note, sizeof note,
                 "idle capacity goes to borrowers by weight and recent borrowing: tenant %s has "
                 "weight %lld and borrowed %g GPU-hours recently (half-life %llds)",
                 tenant, (long long)weight, recent, (long long)n->spol.half_life_s);
        json_array_append_new(notes, json_string(note));
    } else if (bd->action == SCH_DO_WAIT_PREEMPT && bd->reclaim) {
        int jobs = 0;
        int64_t milli = 0;
        for (int i = 0; i < r->n; i++)
            if (r->d[i].action == SCH_DO_PREEMPT && r->d[i].by == bd->job) {
                jobs++;
                milli += sch_demand(&n->s, &n->jobs[r->d[i].job], QD_GPU_MILLI);
            }
        json_object_set_new(o, "reclaim", json_pack("{s:i,s:f}", "borrowed_jobs", jobs, "gpus",
                                                    (double)milli / 1000.0));
        snprintf(note, sizeof note,
                 "it waits for reclaim: %d borrowed job%s of other tenants (%g GPUs) being "
                 "stopped to return tenant %s's guarantee; it starts once they have",
                 jobs, jobs == 1 ? "" : "s", (double)milli / 1000.0, tenant);
        json_array_append_new(notes, json_string(note));
    } else if (bd->capped) {
        char win[32];
        fmt_secs(n->s.reclaim_window_s, win, sizeof win);
        json_object_set_new(o, "reclaim", json_pack("{s:i,s:i,s:b}", "borrowed_jobs", 0,
                                                    "capped_jobs", bd->capped, "capped", 1));
        snprintf(note, sizeof note,
                 "reclaim would return tenant %s's guarantee from %d borrowed job%s, but each was "
                 "preempted at least %d times in the last %s: reclaim no longer chooses them, "
                 "it waits for them to end",
                 tenant, bd->capped, bd->capped == 1 ? "" : "s", n->s.reclaim_cap, win);
        json_array_append_new(notes, json_string(note));
    }
}

/*
 * A reservation in an explanation (docs/scheduling.md, "Reservations"), from the baseline
 * round's decision bd: which one keeps the job from a place that would fit (or which it names
 * and waits for) and until when at the latest: its end (one in the way), its start (its own,
 * not begun).  Another tenant's is not named.
 */
static void explain_rsv(const snap *n, const sch_decision *bd, json_t *o, json_t *notes) {
    if (!bd || !bd->rsv || bd->rsv > n->s.nrsvs) return;
    int i = bd->rsv - 1;
    const rsv *r = &n->rsvs[i];
    const sch_job *j = &n->jobs[bd->job];
    int tenant = n->projects[j->project].tenant;
    int maint = r->tenant < 0, mine = !maint && r->tenant == tenant;
    rsv_job rj = {tenant, j->project, j->reservation - 1, j->time_limit_s};
    int64_t until = rsv_blocked_until(n->rsvs, i, &rj, n->now);
    char t1[32], t2[32], u[32], note[320];
    rsv_fmt_time(r->t1_us, t1, sizeof t1);
    rsv_fmt_time(r->t2_us, t2, sizeof t2);
    rsv_fmt_time(until, u, sizeof u);
    const char *who = maint ? "maintenance window" : mine ? "reservation" : NULL;
    json_object_set_new(
        o, "reservation",
        json_pack("{s:o,s:s,s:s,s:s,s:o}", "name",
                  who ? json_string(n->rsv_names[i]) : json_null(), "kind",
                  maint ? "maintenance" : mine ? "own" : "another_tenant", "starts_at", t1,
                  "ends_at", t2, "waits_until", until ? json_string(u) : json_null()));
    if (bd->rsv_code == RSV_BLOCKED)
        snprintf(note, sizeof note,
                 "%s%s%s holds the cards it could use from %s to %s; it waits until %s at the "
                 "latest (or a place elsewhere)",
                 who ? who : "a reservation of another tenant", who ? " " : "",
                 who ? n->rsv_names[i] : "", t1, t2, u);
    else if (bd->rsv_code == RSV_NOT_YET)
        snprintf(note, sizeof note, "it runs in reservation %s, whose window opens at %s",
                 n->rsv_names[i], t1);
    else
        snprintf(note, sizeof note, "it runs in reservation %s (%s to %s): %s", n->rsv_names[i],
                 t1, t2, bd->reason);
    json_array_append_new(notes, json_string(note));
}

/*
 * The checked suggestions (sched.h, sch_suggest) as JSON, appended to `sugg`: each entry has
 * `change`, its figures, `text` (what to do, in words) and `suggestion` (entries with the same
 * number are one suggestion, applied together).  Raised ceilings keep the shape raise_quota
 * always had (level, name, dimension, by) and say `to`.  Another tenant's jobs are counted,
 * never named.  Returns how many suggestions.
 */
static int suggestions_json(const snap *n, int ji, json_t *sugg) {
    sch_suggestion sg[SCH_SG_MAX];
    int ns = sch_suggest(&n->s, ji, sg, SCH_SG_MAX);
    const sch_job *j = &n->jobs[ji];
    int tenant = n->projects[j->project].tenant;
    for (int k = 0; k < ns; k++) {
        for (int c = 0; c < sg[k].nch; c++) {
            const sch_change *ch = &sg[k].ch[c];
            json_t *o = NULL;
            char text[320];
            switch (ch->kind) {
            case SCH_SG_QUOTA:
            case SCH_SG_CLASS_QUOTA: {
                const quota_set *q = ch->level ? &n->tenants[ch->who].quota
                                               : &n->projects[ch->who].quota;
                const char *who = ch->level ? n->tnames[ch->who] : n->pnames[ch->who];
                char dim[96];
                int64_t lim;
                double scale = 1;
                if (ch->kind == SCH_SG_QUOTA) {
                    snprintf(dim, sizeof dim, "%s", quota_dim_name(ch->dim));
                    lim = q->v[ch->dim];
                    if (ch->dim == QD_GPU_MILLI || ch->dim == QD_CARD_HOURS) scale = 1000;
                } else {
                    const char *cn = n->classes[SCH_CLASS_BASE(n->classes, j->cls)].name;
                    snprintf(dim, sizeof dim, "gpus(class %s)", cn);
                    lim = quota_class_limit(q, cn);
                }
                double to = (double)ch->value / scale, by = (double)(ch->value - lim) / scale;
                o = json_pack("{s:s,s:s,s:s,s:s,s:f,s:f}", "change", "raise_quota", "level",
                              ch->level ? "tenant" : "project", "name", who, "dimension", dim,
                              "by", by, "to", to);
                snprintf(text, sizeof text, "raise %s %s's %s ceiling to %g", ch->level ? "tenant" : "project",
                         who, dim, to);
                break;
            }
            case SCH_SG_GUARANTEE:
                o = json_pack("{s:s,s:s,s:f}", "change", "raise_guarantee", "tenant",
                              n->tnames[ch->who], "guaranteed_gpus", (double)ch->value / 1000.0);
                if (ch->dim > 0) /* a class's own guarantee (sched.h step 6c) */
                    json_object_set_new(o, "class", json_string(n->classes[ch->dim - 1].name));
                snprintf(text, sizeof text, "raise tenant %s's guaranteed GPUs%s%s to %g",
                         n->tnames[ch->who], ch->dim > 0 ? " for class " : "",
                         ch->dim > 0 ? n->classes[ch->dim - 1].name : "",
                         (double)ch->value / 1000.0);
                break;
            case SCH_SG_UNIT_CPUS:
            case SCH_SG_UNIT_MEMORY: {
                int cpu = ch->kind == SCH_SG_UNIT_CPUS;
                const sch_class *cl = &n->classes[j->cls];
                o = json_pack("{s:s,s:s,s:I,s:i}", "change", cpu ? "unit_cpus" : "unit_memory",
                              "class", cl->name, cpu ? "cpus" : "memory_gib", (json_int_t)ch->value,
                              cpu ? "class_cpus" : "class_memory_gib", cpu ? cl->cpus : cl->mem_gib);
                snprintf(text, sizeof text,
                         "ask for at most %lld %s per unit (class %s asks %d): a class that "
                         "asks that little would start",
                         (long long)ch->value, cpu ? "CPUs" : "GiB of memory", cl->name,
                         cpu ? cl->cpus : cl->mem_gib);
                break;
            }
            case SCH_SG_OPEN_POOL: {
                const sch_project *pj = &n->projects[j->project];
                int tenant_shut = !n->tenants[tenant].pool_ok || ch->who >= n->s.npools ||
                                  !n->tenants[tenant].pool_ok[ch->who];
                o = json_pack("{s:s,s:s,s:s}", "change", "open_pool", "pool", n->pools[ch->who],
                              "opens_to", tenant_shut ? "tenant" : "project_class");
                if (tenant_shut) json_object_set_new(o, "tenant", json_string(n->tnames[tenant]));
                static const char *const pcn[] = {"production", "development", "research"};
                const char *pc = pcn[pj->pclass >= 0 && pj->pclass < 3 ? pj->pclass : 2];
                if (pj->pool_ok && (ch->who >= n->s.npools || !pj->pool_ok[ch->who]))
                    json_object_set_new(o, "project_class", json_string(pc));
                snprintf(text, sizeof text, "pool %s has the class's cards: open it to %s %s",
                         n->pools[ch->who], tenant_shut ? "tenant" : "", tenant_shut ? n->tnames[tenant] : "");
                if (!tenant_shut)
                    snprintf(text, sizeof text, "pool %s has the class's cards: open it to %s "
                                                "projects", n->pools[ch->who], pc);
                break;
            }
            case SCH_SG_USE_CLASS:
                o = json_pack("{s:s,s:s}", "change", "use_class", "class", n->classes[ch->who].name);
                snprintf(text, sizeof text, "submit it with class %s, which would start",
                         n->classes[ch->who].name);
                break;
            case SCH_SG_TIME_LIMIT:
                o = json_pack("{s:s,s:I}", "change", "time_limit", "seconds", (json_int_t)ch->value);
                snprintf(text, sizeof text,
                         "submit it with --time-limit %llds or less: it ends before the "
                         "reservation in its way",
                         (long long)ch->value);
                break;
            case SCH_SG_WAIT_UNTIL: {
                char at[32];
                rsv_fmt_time(ch->value, at, sizeof at);
                o = json_pack("{s:s,s:s}", "change", "wait_until", "at", at);
                snprintf(text, sizeof text, "wait until %s (the reservation's window)", at);
                break;
            }
            case SCH_SG_NAME_RSV:
                o = json_pack("{s:s,s:s}", "change", "name_reservation", "reservation",
                              n->rsv_names[ch->who]);
                snprintf(text, sizeof text, "submit it with --reservation %s (its own tenant's)",
                         n->rsv_names[ch->who]);
                break;
            case SCH_SG_DROP_RSV:
                o = json_pack("{s:s}", "change", "drop_reservation");
                snprintf(text, sizeof text, "submit it without --reservation");
                break;
            case SCH_SG_WAIT_JOBS: {
                json_t *ids = json_array();
                int others = 0, running = 0;
                strbuf sb = SB_INIT;
                for (int m = 0; m < sg[k].njobs; m++) {
                    const sch_job *x = &n->jobs[sg[k].jobs[m]];
                    running += x->state == SCH_RUNNING;
                    if (n->projects[x->project].tenant != tenant) {
                        others++;
                        continue;
                    }
                    json_array_append_new(ids, json_string(x->id));
                    sb_addf(&sb, "%s%s", sb.len ? ", " : "", x->id);
                }
                o = json_pack("{s:s,s:o,s:i,s:i,s:i}", "change", "wait_for_jobs", "jobs", ids,
                              "other_tenants_jobs", others, "running", running, "queued",
                              sg[k].njobs - running);
                snprintf(text, sizeof text, "wait for %d job%s to end or start%s%s%s%s: then it starts",
                         sg[k].njobs, sg[k].njobs == 1 ? "" : "s", sb.len ? " (" : "",
                         sb.len ? sb.buf : "", sb.len ? ")" : "",
                         others ? (others == sg[k].njobs ? ", all of other tenants"
                                                         : ", the rest of other tenants")
                                : "");
                sb_release(&sb);
                break;
            }
            }
            if (!o) continue;
            json_object_set_new(o, "text", json_string(text));
            json_object_set_new(o, "suggestion", json_integer(k));
            json_array_append_new(sugg, o);
        }
    }
    return ns < 0 ? 0 : ns;
}

int sched_explain(store_t *st, const char *id, json_t *allowed, json_t **out, gp_err *err) {
    store_tx *tx;
    snap n;
    int answered = 0;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    if ((rc = explain_deps(tx, id, out, &answered, err)) || answered ||
        (rc = jobs_array_explain(tx, id, out, &answered, err)) || answered) {
        store_rollback(tx);
        return rc;
    }
    rc = build(st, tx, &n, err);
    if (rc) goto done;
    int ji = rnd_find_str(n.jids, sizeof *n.jids, n.s.njobs, id);
    if (ji < 0) {
        rc = gp_err_set(err, GP_ECONFLICT, "the job is not waiting or running");
        goto done;
    }
    sch_job *j = &n.jobs[ji];
    json_t *o = json_pack("{s:s}", "job", id), *notes = json_array();
    json_object_set_new(o, "notes", notes);
    /* stopped within the window: how often, and whether reclaim may still choose it */
    if (j->stops > 0) {
        char win[32], note[160];
        int capped = n.s.reclaim_cap > 0 && j->stops >= n.s.reclaim_cap;
        fmt_secs(n.s.reclaim_window_s, win, sizeof win);
        json_object_set_new(o, "preempted",
                            json_pack("{s:i,s:I,s:i,s:b}", "times", j->stops, "window_seconds",
                                      (json_int_t)n.s.reclaim_window_s, "reclaim_cap",
                                      n.s.reclaim_cap, "reclaim_victim", !capped));
        if (capped)
            snprintf(note, sizeof note,
                     "preempted %d times in the last %s; reclaim no longer chooses it", j->stops,
                     win);
        else
            snprintf(note, sizeof note,
                     "preempted %d times in the last %s; reclaim stops choosing it at %d",
                     j->stops, win, n.s.reclaim_cap);
        json_array_append_new(notes, json_string(note));
    }
    if (j->state == SCH_RUNNING) {
        json_object_set_new(o, "state", json_string("running"));
        json_object_set_new(o, "explanation", json_string("it is running"));
        *out = o;
        goto done;
    }
    /* where it stands */
    int ahead = 0;
    for (int i = 0; i < n.s.njobs; i++) {
        const sch_job *x = &n.jobs[i];
        if (i == ji || x->state == SCH_RUNNING) continue;
        if (x->priority > j->priority || (x->priority == j->priority && x->submit_us < j->submit_us))
            ahead++;
    }
    json_object_set_new(o, "queue_position", json_integer(ahead + 1));
    sch_result r;
    if (sch_round(&n.s, &r)) {
        json_decref(o);
        rc = gp_err_set(err, GP_ENOMEM, NULL);
        goto done;
    }
    /* keep what the baseline said: its result is freed before the what-if rounds */
    const sch_decision *bd = decision_of(&r, ji);
    char base_reason[200];
    int base_starts = starts(bd), have = bd != NULL;
    snprintf(base_reason, sizeof base_reason, "%s", bd ? bd->reason : "unknown");
    explain_share(&n, &r, bd, o, notes);
    explain_rsv(&n, bd, o, notes);
    sch_result_free(&r);
    json_object_set_new(o, "reason", json_string(base_reason));
    json_object_set_new(o, "would_start_now", json_boolean(base_starts));
    json_t *sugg = json_array();
    /* 1. the checked suggestions (suggest.c): ceilings to raise (and to what), CPUs or memory
     * per unit, a pool to open, another class, a time limit or reservation, the jobs to wait
     * for - each one that would start it */
    if (have && !base_starts) suggestions_json(&n, ji, sugg);
    /* 2. capacity: how many units of the class are missing */
    if (have && !strncmp(base_reason, "no_capacity", 11)) {
        int needu = 0;
        long long freeu = 0;
        const char *at = strstr(base_reason, "needs ");
        const char *fr = at ? strstr(at, ", ") : NULL;
        const char *can = strstr(base_reason, "; ");
        int neednodes = 0, cannodes = 0;
        if (j->nodes > 0 && at && can && sscanf(at, "needs %d node", &neednodes) == 1 &&
            sscanf(can, "; %d node", &cannodes) == 1 && neednodes > cannodes) {
            /* a job that spans nodes: the nodes that cannot take K units yet */
            const sch_class *c = &n.classes[j->cls];
            int K = j->units / j->nodes;
            json_array_append_new(sugg, json_pack("{s:s,s:s,s:i,s:i,s:I}", "change",
                                                  "free_capacity", "class", c->name, "nodes",
                                                  neednodes - cannodes, "units_per_node", K,
                                                  "gpus",
                                                  (json_int_t)(neednodes - cannodes) * K *
                                                      (c->form == SCH_WHOLE ? c->gpus : 1)));
        } else if (at && fr && sscanf(at, "needs %d", &needu) == 1 &&
                   sscanf(fr, ", %lld free", &freeu) == 1 && needu > freeu) {
            /* (a job that fails though as many units are free - fragmentation, one vendor -
             * gets no count that would be false) */
            const sch_class *c = &n.classes[j->cls];
            json_t *sg = json_pack("{s:s,s:s,s:I,s:I}", "change", "free_capacity", "class",
                                   c->name, "units", (json_int_t)(needu - freeu), "gpus",
                                   (json_int_t)((needu - freeu) *
                                                (c->form == SCH_WHOLE ? c->gpus : 1)));
            /* short of CPUs or memory beside free cards: those are what must be freed too */
            if (strstr(base_reason, "with their CPUs and memory")) {
                json_object_set_new(sg, "cpus", json_integer((json_int_t)(needu - freeu) * c->cpus));
                json_object_set_new(sg, "memory_gib",
                                    json_integer((json_int_t)(needu - freeu) * c->mem_gib));
            }
            json_array_append_new(sugg, sg);
        }
    }
    /* 3. a higher priority class the submitter may use */
    if (have && !base_starts) {
        int best = -1;
        const char *best_name = NULL;
        size_t i;
        json_t *v;
        int save_p = j->priority, save_m = j->may_preempt;
        json_array_foreach(allowed, i, v) {
            int val = (int)json_integer_value(json_object_get(v, "value"));
            if (val <= save_p || (best >= 0 && val >= best)) continue;
            j->priority = val;
            j->may_preempt = json_is_true(json_object_get(v, "may_preempt"));
            if (sch_round(&n.s, &r) == 0) {
                if (starts(decision_of(&r, ji))) {
                    best = val;
                    best_name = json_string_value(json_object_get(v, "name"));
                }
                sch_result_free(&r);
            }
        }
        j->priority = save_p;
        j->may_preempt = save_m;
        if (best_name)
            json_array_append_new(sugg, json_pack("{s:s,s:s,s:i}", "change", "priority_class",
                                                  "name", best_name, "value", best));
    }
    json_object_set_new(o, "suggestions", sugg);
    *out = o;
done:
    rnd_snap_free(&n);
    store_rollback(tx);
    return rc;
}
