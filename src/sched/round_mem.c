/*
 * round_mem.c - the cluster and the queue in the leader's memory between rounds (issue 38;
 * docs/scheduling.md "The cluster in memory"): what round.c's build() takes instead of
 * reading nodes, cards, classes, tenants, projects and every live job again, kept current by
 * the store's version and change stamps, and checked against the store once a minute.
 */
#include "round_int.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "sched_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cluster in memory (issue 38; docs/scheduling.md "The cluster in memory") ----
 *
 * The leader keeps the cluster part of its last snapshot (rnd_read_cluster) with the store
 * (store_sched_slot) and every round that reads the same cluster_version uses it instead of
 * reading nodes, cards, classes, tenants and projects again: a round reads the queue, the
 * open bindings and the quotas, and what changed.  The version is the store's (triggers,
 * migration 29), read in the round's own read transaction, so a copy is used only for the
 * snapshot it equals - on every server of a PostgreSQL store alike.  Once a minute a round
 * reads the cluster anyway and compares (the consistency check, counted in /metrics: it
 * must find nothing).  A cluster is shared read-only by reference: the slot holds one
 * reference, each snapshot using it another; cl_mu guards the slots and the counts.
 */
typedef struct rnd_cluster {
    snap s;          /* its arena holds it all */
    int64_t version; /* cluster_version.v it was read at */
    int64_t read_us; /* when (gt_now_us) */
    int refs;        /* under cl_mu */
} rnd_cluster;

static pthread_mutex_t cl_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t check_us = 60LL * 1000000; /* under cl_mu: sched_cluster_check_every */

void sched_cluster_check_every(int seconds) {
    pthread_mutex_lock(&cl_mu);
    check_us = (int64_t)(seconds >= 1 ? seconds : 1) * 1000000;
    pthread_mutex_unlock(&cl_mu);
}

void rnd_cluster_drop(rnd_cluster *c) {
    if (!c) return;
    pthread_mutex_lock(&cl_mu);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&cl_mu);
    if (last) {
        rnd_snap_free(&c->s);
        free(c);
    }
}


void rnd_qlist_free(qlist *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->r[i]->stack);
        free(l->r[i]);
    }
    free(l->r);
    memset(l, 0, sizeof *l);
}

typedef struct rnd_mem {
    rnd_cluster *cl; /* under cl_mu */
    rnd_queue q;
} rnd_mem;

static void mem_free(void *p) {
    rnd_mem *m = p;
    rnd_cluster_drop(m->cl);
    rnd_qlist_free(&m->q.rows);
    pthread_mutex_destroy(&m->q.mu);
    free(m);
}

/* st's rnd_mem, made on first use (cl_mu held); NULL when out of memory. */
static rnd_mem *mem_of(store_t *st) {
    store_slot *slot = store_sched_slot(st);
    if (!slot->p) {
        rnd_mem *m = calloc(1, sizeof *m);
        if (!m) return NULL;
        pthread_mutex_init(&m->q.mu, NULL);
        m->q.chg = -1;
        slot->p = m;
        slot->free_fn = mem_free;
    }
    return slot->p;
}

/* The version rows as tx sees them (migrations 29, 30), -1 when there is none. */
static int cluster_version(store_tx *tx, int64_t *v, gp_err *err) {
    return rnd_one_value(tx, "SELECT v FROM cluster_version WHERE id = 1", -1, v, err);
}

/* The cluster read afresh in tx (one reference: the caller's). */
static int cluster_read(store_tx *tx, int64_t v, int64_t now, rnd_cluster **out, gp_err *err) {
    rnd_cluster *c = calloc(1, sizeof *c);
    if (!c) return gp_err_set(err, GP_ENOMEM, NULL);
    int rc = rnd_read_cluster(tx, &c->s, err);
    if (rc) {
        rnd_snap_free(&c->s);
        free(c);
        return rc;
    }
    c->version = v;
    c->read_us = now;
    c->refs = 1;
    *out = c;
    return GP_OK;
}

/* Keep c in st's slot, unless the slot holds a newer version (a round that began earlier
 * read an older one). */
static void cluster_keep(store_t *st, rnd_cluster *c) {
    rnd_cluster *old = NULL;
    pthread_mutex_lock(&cl_mu);
    rnd_mem *m = mem_of(st);
    rnd_cluster *cur = m ? m->cl : NULL;
    if (m && (!cur || cur->version <= c->version)) {
        old = cur;
        c->refs++;
        m->cl = c;
    }
    pthread_mutex_unlock(&cl_mu);
    rnd_cluster_drop(old);
}

/* Whether two clusters read are the same, field by field (why: the first difference). */
static int cluster_same(const snap *a, const snap *b, char *why, size_t wn) {
#define DIFF(...) return snprintf(why, wn, __VA_ARGS__), 0
    const sch_snapshot *A = &a->s, *B = &b->s;
    if (A->nnodes != B->nnodes || A->ngpus != B->ngpus || A->npools != B->npools ||
        A->nmodels != B->nmodels || A->nclasses != B->nclasses || A->ntenants != B->ntenants ||
        A->nprojects != B->nprojects || a->nstored != b->nstored)
        DIFF("counts: %d/%d nodes, %d/%d cards, %d/%d classes, %d/%d tenants, %d/%d projects",
             A->nnodes, B->nnodes, A->ngpus, B->ngpus, A->nclasses, B->nclasses, A->ntenants,
             B->ntenants, A->nprojects, B->nprojects);
    for (int i = 0; i < A->npools; i++)
        if (strcmp(a->pools[i], b->pools[i]) || a->phl[i] != b->phl[i]) DIFF("pool %d", i);
    for (int i = 0; i < A->nmodels; i++)
        if (strcmp(a->models[i], b->models[i])) DIFF("model %d", i);
    for (int i = 0; i < A->nnodes; i++)
        if (memcmp(&a->nodes[i], &b->nodes[i], sizeof a->nodes[i]) ||
            strcmp(a->node_names[i], b->node_names[i]) || strcmp(a->node_pool[i], b->node_pool[i]))
            DIFF("node %s", a->node_names[i]);
    for (int g = 0; g < A->ngpus; g++) {
        const sch_gpu *x = &a->gpus[g], *y = &b->gpus[g];
        if (x->node != y->node || x->model != y->model || x->mode != y->mode ||
            x->allocatable != y->allocatable || x->mem_gib != y->mem_gib || x->numa != y->numa ||
            x->nvgroup != y->nvgroup || x->nslices != y->nslices || x->vendor != y->vendor ||
            strcmp(a->gpu_uuids[g], b->gpu_uuids[g]) || strcmp(a->gpu_ids[g], b->gpu_ids[g]) ||
            strcmp(a->gpu_driver[g], b->gpu_driver[g]) || strcmp(a->gpu_cc[g], b->gpu_cc[g]) ||
            a->gpu_order[g] != b->gpu_order[g])
            DIFF("card %s", a->gpu_uuids[g]);
        for (int k = 0; k < x->nslices; k++) {
            size_t at = (size_t)g * SCH_MAX_SLICES + (size_t)k;
            if (x->slices[k].mem_gib != y->slices[k].mem_gib ||
                strcmp(a->slice_uuids[at], b->slice_uuids[at]) ||
                strcmp(a->slice_prof[at], b->slice_prof[at]))
                DIFF("slice %d of card %s", k, a->gpu_uuids[g]);
        }
    }
    for (int c = 0; c < A->nclasses; c++) {
        const sch_class *x = &a->classes[c], *y = &b->classes[c];
        if (strcmp(a->cnames[c], b->cnames[c]) || strcmp(a->cforms[c], b->cforms[c]) ||
            strcmp(a->cprof[c], b->cprof[c]) || x->form != y->form ||
            x->shared_mem_gib != y->shared_mem_gib || x->shared_pct != y->shared_pct ||
            x->gpus != y->gpus || x->cpus != y->cpus || x->mem_gib != y->mem_gib ||
            x->pool != y->pool || x->topology != y->topology || x->gpu_milli != y->gpu_milli ||
            x->gpu_mem_gib != y->gpu_mem_gib || x->base != y->base || x->nalts != y->nalts ||
            x->alt_vendor != y->alt_vendor || !x->why_none != !y->why_none ||
            (x->why_none && strcmp(x->why_none, y->why_none)) ||
            (x->nalts && memcmp(x->alts, y->alts, (size_t)x->nalts * sizeof *x->alts)) ||
            memcmp(x->model_ok, y->model_ok, (size_t)A->nmodels) ||
            memcmp(x->gpu_ok, y->gpu_ok, (size_t)A->ngpus))
            DIFF("class %s", a->cnames[c]);
    }
    for (int i = 0; i < A->ntenants; i++)
        if (strcmp(a->tids[i], b->tids[i]) || strcmp(a->tnames[i], b->tnames[i]) ||
            memcmp(a->tenants[i].pool_ok, b->tenants[i].pool_ok, (size_t)A->npools))
            DIFF("tenant %s", a->tnames[i]);
    for (int i = 0; i < A->nprojects; i++)
        if (strcmp(a->pids[i], b->pids[i]) || strcmp(a->pnames[i], b->pnames[i]) ||
            a->projects[i].tenant != b->projects[i].tenant ||
            a->projects[i].pclass != b->projects[i].pclass ||
            memcmp(a->projects[i].pool_ok, b->projects[i].pool_ok, (size_t)A->npools))
            DIFF("project %s", a->pnames[i]);
    return 1;
#undef DIFF
}

/* Check c against what tx reads now; counts the check and logs a difference. */
static int cluster_check(store_tx *tx, const rnd_cluster *c, int64_t now, int *same,
                         rnd_cluster **fresh, gp_err *err) {
    int rc = cluster_read(tx, c->version, now, fresh, err);
    if (rc) return rc;
    char why[160] = "";
    *same = cluster_same(&c->s, &(*fresh)->s, why, sizeof why);
    sched_metrics_cluster(SCHED_CLUSTER_CHECK, !*same);
    if (!*same)
        log_msg(LOG_WARN, "scheduler: the cluster in memory differs from the store (%s); read "
                          "again", why);
    return GP_OK;
}

/*
 * The cluster for a snapshot read in tx: the one in memory when it was read at the version
 * tx sees (and checked within the minute), else read now and kept.  OUT: *out, one reference.
 */
int rnd_cluster_take(store_t *st, store_tx *tx, int64_t now, rnd_cluster **out,
                        gp_err *err) {
    int64_t v;
    int rc = cluster_version(tx, &v, err);
    if (rc) return rc;
    pthread_mutex_lock(&cl_mu);
    rnd_mem *m = mem_of(st);
    rnd_cluster *cur = m ? m->cl : NULL;
    int held = cur && cur->version == v && v >= 0;
    if (held) cur->refs++;
    int64_t every = check_us;
    pthread_mutex_unlock(&cl_mu);
    if (held && now - cur->read_us < every) {
        sched_metrics_cluster(SCHED_CLUSTER_MEMORY, 0);
        *out = cur;
        return GP_OK;
    }
    rnd_cluster *c = NULL;
    if (held) { /* due for the consistency check */
        int same;
        rc = cluster_check(tx, cur, now, &same, &c, err);
        rnd_cluster_drop(cur);
    } else {
        rc = cluster_read(tx, v, now, &c, err);
        if (!rc) sched_metrics_cluster(SCHED_CLUSTER_READ, 0);
    }
    if (rc) return rc;
    cluster_keep(st, c);
    *out = c;
    return GP_OK;
}

/* A snapshot's own copies of what a round changes of the cluster's parts: the classes (the
 * derived ones are appended: ccap), tenants and projects (quotas, use).  -1: no memory. */
int rnd_cluster_use(snap *n, int nds) {
    const snap *c = &n->cl->s;
    sch_snapshot *S = &n->s;
    n->pol = c->pol;
    n->nodes = c->nodes;
    n->node_names = c->node_names;
    n->node_pool = c->node_pool;
    n->gpus = c->gpus;
    n->gpu_uuids = c->gpu_uuids;
    n->gpu_ids = c->gpu_ids;
    n->slice_uuids = c->slice_uuids;
    n->slice_prof = c->slice_prof;
    n->models = c->models;
    n->gpu_order = c->gpu_order;
    n->pools = c->pools;
    n->phl = c->phl;
    n->model_ok = c->model_ok;
    n->gpu_ok = c->gpu_ok;
    n->gpu_driver = c->gpu_driver;
    n->gpu_cc = c->gpu_cc;
    n->gpu_stack = c->gpu_stack;
    n->nstored = c->nstored;
    n->ppool_ok = c->ppool_ok;
    n->tnames = c->tnames;
    n->tids = c->tids;
    n->pool_ok = c->pool_ok;
    n->pnames = c->pnames;
    n->pids = c->pids;
    S->nnodes = c->s.nnodes;
    S->ngpus = c->s.ngpus;
    S->npools = c->s.npools;
    S->nmodels = c->s.nmodels;
    S->nclasses = c->s.nclasses;
    S->ntenants = c->s.ntenants;
    S->nprojects = c->s.nprojects;
    /* and room for a class per (stored class, job stack) the live jobs name, each with its
     * single-vendor variants */
    n->ccap = S->nclasses + nds * (1 + CP_NVENDORS);
    if (!ALLOC(n->classes, n->ccap) || !ALLOC(n->cnames, n->ccap) || !ALLOC(n->cprof, n->ccap) ||
        !ALLOC(n->cforms, n->ccap) || !ALLOC(n->crules, n->ccap) || !ALLOC(n->dstack, n->ccap) ||
        !ALLOC(n->tenants, S->ntenants) ||
        !(n->pusage = rnd_alloc(n, (size_t)(S->ntenants + 1) * (size_t)(S->npools + 1),
                               sizeof *n->pusage)) ||
        !ALLOC(n->projects, S->nprojects))
        return -1;
    size_t k = (size_t)S->nclasses;
    memcpy(n->classes, c->classes, k * sizeof *n->classes);
    memcpy(n->cnames, c->cnames, k * sizeof *n->cnames);
    memcpy(n->cprof, c->cprof, k * sizeof *n->cprof);
    memcpy(n->cforms, c->cforms, k * sizeof *n->cforms);
    memcpy(n->crules, c->crules, k * sizeof *n->crules);
    memcpy(n->dstack, c->dstack, k * sizeof *n->dstack);
    for (int i = 0; i < S->nclasses; i++) {
        n->classes[i].name = n->cnames[i];
        n->classes[i].profile = n->cprof[i];
    }
    memcpy(n->tenants, c->tenants, (size_t)S->ntenants * sizeof *n->tenants);
    memcpy(n->projects, c->projects, (size_t)S->nprojects * sizeof *n->projects);
    return 0;
}

void sched_cluster_forget(store_t *st) {
    pthread_mutex_lock(&cl_mu);
    rnd_mem *m = mem_of(st);
    rnd_cluster *cur = m ? m->cl : NULL;
    if (m) m->cl = NULL;
    pthread_mutex_unlock(&cl_mu);
    rnd_cluster_drop(cur);
    if (!m) return;
    pthread_mutex_lock(&m->q.mu);
    rnd_qlist_free(&m->q.rows);
    m->q.chg = -1;
    pthread_mutex_unlock(&m->q.mu);
}

/* ---- the queue in memory (issue 38; docs/scheduling.md "The cluster in memory") ----
 *
 * The leader keeps the live jobs (queued, admitted, running) as the round reads them, in id
 * order, and a round reads only the jobs that changed since: every insert of a job and every
 * update of a column the round reads stamps the row's `chg` with the next job_chg.v in the
 * same transaction (triggers, migration 30; on PostgreSQL the job_chg row's lock orders the
 * stamps as the commits), so `chg > seen` in the round's own snapshot is exactly what changed.
 * A job that ended is dropped.  Which waiting jobs' dependencies are unmet is asked each
 * round, of the jobs that have any.  A snapshot older than the memory (an explain that began
 * before a round moved it on) reads the whole queue instead, and so does the consistency
 * check, which compares (gpupool_sched_cluster_mismatches_total).
 */

#define QROW_COLUMNS(X)                                                                          \
    X(QR_ID, "id")                                                                               \
    X(QR_PROJECT, "project_id")                                                                  \
    X(QR_CLASS, "class")                                                                         \
    X(QR_UNITS, "units")                                                                         \
    X(QR_PRIORITY, "priority")                                                                   \
    X(QR_PREEMPTIBLE, "preemptible")                                                             \
    X(QR_MAY_PREEMPT, "may_preempt")                                                             \
    X(QR_QUEUED, "queued_at")                                                                    \
    X(QR_STARTED, "COALESCE(started_at, 0)")                                                     \
    X(QR_STATE, "state")                                                                         \
    X(QR_RECOVERY, "recovery")                                                                   \
    X(QR_CREDIT, "preempt_credit")                                                               \
    X(QR_REASON, "COALESCE(reason, '')")                                                         \
    X(QR_STACK, "stack")                                                                         \
    /* a task of an array with a cap (arrays.c); an array's cap never changes */                 \
    X(QR_CAP, "COALESCE((SELECT a.max_running FROM job_arrays a WHERE a.id = jobs.array_id), 0)") \
    /* the reservation it names (reservations.c), its time limit */                              \
    X(QR_RSV, "COALESCE(reservation_id, '')")                                                    \
    X(QR_TIME_LIMIT, "time_limit_s")                                                             \
    /* a job that spans nodes (sched.h, step 4a) */                                              \
    X(QR_NODES, "nodes")                                                                         \
    /* whether it waits for other jobs (deps.c: its dependencies are fixed at submit) */         \
    X(QR_DEPS, "EXISTS (SELECT 1 FROM job_deps d WHERE d.job_id = jobs.id)")                      \
    X(QR_CHG, "chg")                                                                             \
    /* what admission gave it (sched.h step 6d) */                                               \
    X(QR_GPOOL, "COALESCE(guarantee_pool, '')")
enum { QROW_COLUMNS(STORE_COL_ENUM) QR__N };
#define QROW_COLS STORE_COLS(QROW_COLUMNS)

static int qstate(const char *t) {
    return !strcmp(t, "queued")     ? SCH_PENDING
           : !strcmp(t, "admitted") ? SCH_ADMITTED
           : !strcmp(t, "running")  ? SCH_RUNNING
                                    : -1;
}

/* The row at s (QROW_COLS), or NULL when out of memory. */
static qrow *qrow_read(store_stmt *s) {
    qrow *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->id, sizeof r->id, "%s", store_text(s, QR_ID));
    snprintf(r->project, sizeof r->project, "%s", store_text(s, QR_PROJECT));
    snprintf(r->cls, sizeof r->cls, "%s", store_text(s, QR_CLASS));
    r->units = (int)store_int(s, QR_UNITS);
    r->priority = (int)store_int(s, QR_PRIORITY);
    r->preemptible = (int)store_int(s, QR_PREEMPTIBLE);
    r->may_preempt = (int)store_int(s, QR_MAY_PREEMPT);
    r->queued_at = store_int(s, QR_QUEUED);
    r->started_at = store_int(s, QR_STARTED);
    r->state = qstate(store_text(s, QR_STATE));
    snprintf(r->recovery, sizeof r->recovery, "%s", store_text(s, QR_RECOVERY));
    r->credit = store_int(s, QR_CREDIT) != 0;
    r->reason = rnd_reason_hash(store_text(s, QR_REASON));
    const char *stk = store_text(s, QR_STACK);
    if (stk[0] && !(r->stack = strdup(stk))) {
        free(r);
        return NULL;
    }
    r->capped = store_int(s, QR_CAP) > 0;
    snprintf(r->rsv, sizeof r->rsv, "%s", store_text(s, QR_RSV));
    r->time_limit_s = store_int(s, QR_TIME_LIMIT);
    r->nodes = (int)store_int(s, QR_NODES);
    r->has_deps = store_int(s, QR_DEPS) != 0;
    r->chg = store_int(s, QR_CHG);
    snprintf(r->gpool, sizeof r->gpool, "%s", store_text(s, QR_GPOOL));
    return r;
}

static int qlist_add(qlist *l, qrow *r) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 256;
        qrow **a = realloc(l->r, (size_t)cap * sizeof *a);
        if (!a) return -1;
        l->r = a;
        l->cap = cap;
    }
    l->r[l->n++] = r;
    return 0;
}

static int by_qid(const void *a, const void *b) {
    return strcmp((*(qrow *const *)a)->id, (*(qrow *const *)b)->id);
}

/* The rows of `where` (SQL after WHERE, one optional integer argument), in id order (sorted
 * here: `chg > ?` then reads the index on chg, not every job ever in id order). */
static int qlist_read(store_tx *tx, const char *where, int64_t arg, int nargs, qlist *out,
                      gp_err *err) {
    store_stmt *s;
    char sql[1600];
    snprintf(sql, sizeof sql, "SELECT " QROW_COLS " FROM jobs WHERE %s", where);
    int rc = store_query(tx, &s, err, sql, nargs ? "i" : "", arg);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        qrow *r = qrow_read(s);
        if (!r || qlist_add(out, r)) {
            if (r) {
                free(r->stack);
                free(r);
            }
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
    }
    store_done(s);
    if (rc < 0) {
        rnd_qlist_free(out);
        return rc;
    }
    if (out->n > 1) qsort(out->r, (size_t)out->n, sizeof *out->r, by_qid);
    return GP_OK;
}

/* Fold the changed rows `d` (any state, id order) into `q` (live, id order); d is emptied.
 * -1: out of memory (q unchanged). */
static int qlist_merge(qlist *q, qlist *d) {
    qlist out = {0};
    out.cap = q->n + d->n + 1;
    if (!(out.r = malloc((size_t)out.cap * sizeof *out.r))) return -1;
    int i = 0, k = 0;
    while (i < q->n || k < d->n) {
        int c = i == q->n ? 1 : k == d->n ? -1 : strcmp(q->r[i]->id, d->r[k]->id);
        qrow *keep = NULL, *gone = NULL;
        if (c < 0) keep = q->r[i++];
        else {
            if (c == 0) gone = q->r[i++];
            qrow *r = d->r[k++];
            if (r->state >= 0) keep = r;
            else {
                free(r->stack);
                free(r);
            }
        }
        if (gone) {
            free(gone->stack);
            free(gone);
        }
        if (keep) out.r[out.n++] = keep;
    }
    free(q->r);
    free(d->r);
    memset(d, 0, sizeof *d);
    *q = out;
    return 0;
}

static int qrow_same(const qrow *a, const qrow *b) {
    return !strcmp(a->id, b->id) && !strcmp(a->project, b->project) && !strcmp(a->rsv, b->rsv) &&
           !strcmp(a->cls, b->cls) && !strcmp(a->recovery, b->recovery) &&
           !strcmp(a->gpool, b->gpool) &&
           !strcmp(a->stack ? a->stack : "", b->stack ? b->stack : "") && a->state == b->state &&
           a->units == b->units && a->nodes == b->nodes && a->priority == b->priority &&
           a->preemptible == b->preemptible && a->may_preempt == b->may_preempt &&
           a->credit == b->credit && a->capped == b->capped && a->has_deps == b->has_deps &&
           a->queued_at == b->queued_at && a->started_at == b->started_at &&
           a->time_limit_s == b->time_limit_s && a->reason == b->reason && a->chg == b->chg;
}

static int job_chg(store_tx *tx, int64_t *v, gp_err *err) {
    return rnd_one_value(tx, "SELECT v FROM job_chg WHERE id = 1", -1, v, err);
}

/* Bring q (holding rows, at an older job_chg) to v, what tx sees, reading what changed.
 * Caller holds q->mu. */
static int queue_sync(store_tx *tx, rnd_queue *q, int64_t v, gp_err *err) {
    if (q->chg < 0 || v <= q->chg) return GP_OK;
    qlist d = {0};
    int rc = qlist_read(tx, "chg > ?", q->chg, 1, &d, err);
    if (!rc && qlist_merge(&q->rows, &d)) {
        rnd_qlist_free(&d);
        rc = gp_err_set(err, GP_ENOMEM, NULL);
    }
    if (rc) {
        rnd_qlist_free(&q->rows); /* (read whole next time) */
        q->chg = -1;
        return rc;
    }
    q->chg = v;
    return GP_OK;
}

/* Read the live jobs whole (tx at job_chg v) and, when q holds rows of the same v, compare
 * (the check: counted, a difference logged; *same 0 then); q then holds what was read.
 * Caller holds q->mu. */
static int queue_check(store_tx *tx, rnd_queue *q, int64_t v, int64_t now, int *same,
                       gp_err *err) {
    qlist all = {0};
    int rc = qlist_read(tx, QLIVE, 0, 0, &all, err);
    *same = 1;
    if (rc) return rc;
    if (q->chg >= 0 && q->chg == v) {
        *same = all.n == q->rows.n;
        for (int i = 0; *same && i < all.n; i++) *same = qrow_same(all.r[i], q->rows.r[i]);
        sched_metrics_cluster(SCHED_CLUSTER_CHECK, !*same);
        if (!*same)
            log_msg(LOG_WARN, "scheduler: the queue in memory differs from the store (%d live "
                              "jobs in memory, %d in the store); read again",
                    q->rows.n, all.n);
    }
    rnd_qlist_free(&q->rows);
    q->rows = all;
    q->chg = v;
    q->read_us = now;
    return GP_OK;
}

/*
 * The live jobs tx sees.  From memory (*held = the queue, locked: the caller fills its
 * snapshot from q->rows and unlocks), brought to tx's job_chg first; or read whole into *own
 * (*held NULL: the caller frees it) when tx is older than the memory.  The first read, and
 * once per check interval a read whole compared with the memory, also renew the memory.
 */
int rnd_queue_take(store_t *st, store_tx *tx, int64_t now, rnd_queue **held, qlist *own,
                      gp_err *err) {
    int64_t v;
    int rc = job_chg(tx, &v, err);
    *held = NULL;
    memset(own, 0, sizeof *own);
    if (rc) return rc;
    pthread_mutex_lock(&cl_mu);
    rnd_mem *m = mem_of(st);
    int64_t every = check_us;
    pthread_mutex_unlock(&cl_mu);
    if (!m || v < 0) return qlist_read(tx, QLIVE, 0, 0, own, err);
    rnd_queue *q = &m->q;
    pthread_mutex_lock(&q->mu);
    if (q->chg >= 0 && v < q->chg) { /* memory is ahead of this snapshot */
        pthread_mutex_unlock(&q->mu);
        return qlist_read(tx, QLIVE, 0, 0, own, err);
    }
    if ((rc = queue_sync(tx, q, v, err))) {
        pthread_mutex_unlock(&q->mu);
        return rc;
    }
    if (q->chg < 0 || now - q->read_us >= every) { /* the first read, or the check */
        int same;
        if ((rc = queue_check(tx, q, v, now, &same, err))) {
            pthread_mutex_unlock(&q->mu);
            return rc;
        }
    }
    *held = q;
    return GP_OK;
}


int sched_cluster_verify(store_t *st, int *same, gp_err *err) {
    store_tx *tx;
    *same = 1;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    int64_t v, now = gt_now_us();
    rnd_cluster *cur = NULL, *fresh = NULL;
    if (!(rc = cluster_version(tx, &v, err))) {
        pthread_mutex_lock(&cl_mu);
        rnd_mem *m = mem_of(st);
        cur = m ? m->cl : NULL;
        if (cur && cur->version == v) cur->refs++;
        else cur = NULL; /* none, or of another version: the next round reads it anyway */
        pthread_mutex_unlock(&cl_mu);
        if (cur) rc = cluster_check(tx, cur, now, same, &fresh, err);
    }
    /* and the queue, brought to what tx sees (when the memory is not ahead of it) */
    int64_t jv;
    if (!rc && !(rc = job_chg(tx, &jv, err))) {
        pthread_mutex_lock(&cl_mu);
        rnd_mem *m = mem_of(st);
        pthread_mutex_unlock(&cl_mu);
        if (m) {
            pthread_mutex_lock(&m->q.mu);
            rc = queue_sync(tx, &m->q, jv, err); /* (as the next round would) */
            if (!rc && m->q.chg >= 0 && m->q.chg == jv) {
                int qsame;
                rc = queue_check(tx, &m->q, jv, now, &qsame, err);
                if (!rc && !qsame) *same = 0;
            }
            pthread_mutex_unlock(&m->q.mu);
        }
    }
    store_rollback(tx);
    rnd_cluster_drop(cur);
    if (fresh) {
        cluster_keep(st, fresh);
        rnd_cluster_drop(fresh);
    }
    return rc;
}
