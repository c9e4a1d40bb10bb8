/*
 * suggest.c - what would start a waiting job (sched.h, sch_suggest).  Pure.
 *
 * The round's reason says what holds the job; this turns it into changes that would start
 * it, and keeps only those that do: each candidate is applied to a copy of the snapshot and
 * a round on the copy must place the job (or preempt for a place).  Candidates by reason:
 *   quota_exceeded, card_hours_exhausted  every ceiling it would pass, raised to what it needs
 *   borrow_limit                          its tenant's guarantee, raised to cover it
 *   no_capacity (CPUs or memory short)    the most CPUs / GiB a unit may ask for (bisected)
 *   no_allowed_pool                       a pool with the class's cards opened to it
 *   no_matching_gpu, no_allowed_pool      a class of the same form and size that would start
 *   a reservation (decision rsv)          wait for its window; a time limit that ends before
 *                                         it; name it (own) or drop it (over, not its holder)
 * and for every reason, the fewest other jobs whose end would start it (queued ones of its
 * priority or higher, which go first; admitted ones holding quota; running ones holding cards
 * or quota: a prefix of them in that order, bisected, then pruned one by one).
 */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scratch {
    const sch_snapshot *base;
    sch_snapshot s;
    sch_job *jobs;
    sch_tenant *tenants;
    sch_project *projects;
    sch_class *classes;
    unsigned char *tpool, *ppool;
    int P;
    int target;
} scratch;

static void scratch_free(scratch *x) {
    free(x->jobs);
    free(x->tenants);
    free(x->projects);
    free(x->classes);
    free(x->tpool);
    free(x->ppool);
}

static int scratch_init(scratch *x, const sch_snapshot *s) {
    memset(x, 0, sizeof *x);
    x->base = s;
    x->P = s->npools > 0 ? s->npools : 1;
    for (int n = 0; n < s->nnodes; n++)
        if (s->nodes[n].pool >= x->P) x->P = s->nodes[n].pool + 1;
    x->jobs = malloc(sizeof *x->jobs * (size_t)(s->njobs + 1));
    x->tenants = malloc(sizeof *x->tenants * (size_t)(s->ntenants + 1));
    x->projects = malloc(sizeof *x->projects * (size_t)(s->nprojects + 1));
    x->classes = malloc(sizeof *x->classes * (size_t)(s->nclasses + 1));
    x->tpool = calloc((size_t)(s->ntenants + 1) * (size_t)x->P, 1);
    x->ppool = calloc((size_t)(s->nprojects + 1) * (size_t)x->P, 1);
    if (!x->jobs || !x->tenants || !x->projects || !x->classes || !x->tpool || !x->ppool) {
        scratch_free(x);
        return -1;
    }
    return 0;
}

/* The snapshot as it is, into the scratch copy. */
static void scratch_reset(scratch *x, int job) {
    const sch_snapshot *s = x->base;
    size_t np = (size_t)(s->npools < x->P ? s->npools : x->P);
    x->s = *s;
    memcpy(x->jobs, s->jobs, sizeof *x->jobs * (size_t)s->njobs);
    memcpy(x->tenants, s->tenants, sizeof *x->tenants * (size_t)s->ntenants);
    memcpy(x->projects, s->projects, sizeof *x->projects * (size_t)s->nprojects);
    memcpy(x->classes, s->classes, sizeof *x->classes * (size_t)s->nclasses);
    for (int t = 0; t < s->ntenants; t++) {
        unsigned char *row = &x->tpool[(size_t)t * (size_t)x->P];
        memset(row, 0, (size_t)x->P);
        if (s->tenants[t].pool_ok) memcpy(row, s->tenants[t].pool_ok, np);
        x->tenants[t].pool_ok = row;
    }
    for (int p = 0; p < s->nprojects; p++) {
        if (!s->projects[p].pool_ok) continue;
        unsigned char *row = &x->ppool[(size_t)p * (size_t)x->P];
        memset(row, 0, (size_t)x->P);
        memcpy(row, s->projects[p].pool_ok, np);
        x->projects[p].pool_ok = row;
    }
    x->s.jobs = x->jobs;
    x->s.tenants = x->tenants;
    x->s.projects = x->projects;
    x->s.classes = x->classes;
    x->target = job;
}

static void set_class_limit(quota_set *q, const char *name, int64_t v) {
    for (int i = 0; i < q->nclass; i++)
        if (!strcmp(q->class_name[i], name)) {
            q->class_units[i] = v;
            return;
        }
    if (q->nclass >= QUOTA_MAX_CLASSES) return;
    snprintf(q->class_name[q->nclass], sizeof q->class_name[0], "%s", name);
    q->class_units[q->nclass++] = v;
}

/* The job's class with one field changed: a class of its own, counted as its stored one. */
static void own_class(scratch *x, int cpus, int mem) {
    sch_job *j = &x->jobs[x->target];
    if (j->cls != x->s.nclasses - 1 || x->s.nclasses == x->base->nclasses) {
        int c = x->s.nclasses++;
        x->classes[c] = x->classes[j->cls];
        x->classes[c].base = SCH_CLASS_BASE(x->classes, j->cls) + 1;
        j->cls = c;
    }
    j->state = SCH_PENDING; /* submitted again: admitted anew, on the new class's demand */
    j->credited = 0;
    if (cpus >= 0) x->classes[j->cls].cpus = cpus;
    if (mem >= 0) x->classes[j->cls].mem_gib = mem;
}

/* Apply a suggestion to the scratch copy (reset first). */
static void apply(scratch *x, int job, const sch_suggestion *g) {
    scratch_reset(x, job);
    for (int i = 0; i < g->nch; i++) {
        const sch_change *c = &g->ch[i];
        sch_job *j = &x->jobs[x->target];
        const sch_project *pj = &x->projects[j->project];
        quota_set *q = NULL;
        if (c->kind == SCH_SG_QUOTA || c->kind == SCH_SG_CLASS_QUOTA)
            q = c->level ? &x->tenants[c->who].quota : &x->projects[c->who].quota;
        switch (c->kind) {
        case SCH_SG_QUOTA: q->v[c->dim] = c->value; break;
        case SCH_SG_CLASS_QUOTA:
            set_class_limit(q, x->classes[SCH_CLASS_BASE(x->classes, j->cls)].name, c->value);
            break;
        case SCH_SG_GUARANTEE: {
            quota_set *tq = &x->tenants[c->who].quota;
            int k = c->dim > 0 ? quota_gclass(tq, x->classes[c->dim - 1].name) : -1;
            if (k >= 0) tq->gclass_g[k] = c->value; /* a class's guarantee (sched.h step 6c) */
            else tq->guarantee = c->value;
            break;
        }
        case SCH_SG_UNIT_CPUS: own_class(x, (int)c->value, -1); break;
        case SCH_SG_UNIT_MEMORY: own_class(x, -1, (int)c->value); break;
        case SCH_SG_OPEN_POOL:
            x->tpool[(size_t)pj->tenant * (size_t)x->P + (size_t)c->who] = 1;
            if (pj->pool_ok) x->ppool[(size_t)j->project * (size_t)x->P + (size_t)c->who] = 1;
            break;
        case SCH_SG_USE_CLASS: /* submitted again: admitted anew */
            j->cls = c->who;
            j->state = SCH_PENDING;
            j->credited = 0;
            break;
        case SCH_SG_TIME_LIMIT: j->time_limit_s = c->value; break;
        case SCH_SG_WAIT_UNTIL: x->s.now_us = c->value; break;
        case SCH_SG_NAME_RSV: j->reservation = c->who + 1; break;
        case SCH_SG_DROP_RSV: j->reservation = 0; break;
        case SCH_SG_WAIT_JOBS: {
            /* the jobs gone: the rest, in order */
            int o = 0, t = x->target;
            for (int k = 0; k < x->s.njobs; k++) {
                int gone = 0;
                for (int m = 0; m < g->njobs; m++) gone |= g->jobs[m] == k;
                if (gone) continue;
                if (k == t) x->target = o;
                x->jobs[o++] = x->jobs[k];
            }
            x->s.njobs = o;
            break;
        }
        }
    }
}

/* 1 when a round on the changed copy places the job or preempts for it; -1 out of memory. */
static int starts(scratch *x, int job, const sch_suggestion *g) {
    apply(x, job, g);
    sch_result r;
    if (sch_round(&x->s, &r)) return -1;
    int ok = 0;
    for (int i = 0; i < r.n; i++)
        if (r.d[i].job == x->target && r.d[i].action != SCH_DO_PREEMPT)
            ok = r.d[i].action == SCH_DO_PLACE || r.d[i].action == SCH_DO_WAIT_PREEMPT;
    sch_result_free(&r);
    return ok;
}

typedef struct out_list {
    sch_suggestion *out;
    int n, max, oom;
} out_list;

/* Keep g when it starts the job. */
static void try_keep(scratch *x, int job, const sch_suggestion *g, out_list *o) {
    if (o->n >= o->max || o->oom || g->nch == 0) return;
    int ok = starts(x, job, g);
    if (ok < 0) o->oom = 1;
    else if (ok) o->out[o->n++] = *g;
}

static sch_suggestion one(int kind, int level, int who, int dim, int64_t value) {
    sch_suggestion g;
    memset(&g, 0, sizeof g);
    g.nch = 1;
    g.ch[0] = (sch_change){kind, level, who, dim, value};
    return g;
}

/* Every ceiling the job would pass, raised to what it needs (one suggestion). */
static void quota_raise(scratch *x, const sch_snapshot *s, int job, out_list *o) {
    const sch_job *j = &s->jobs[job];
    const sch_project *p = &s->projects[j->project];
    sch_suggestion g;
    memset(&g, 0, sizeof g);
    for (int level = 0; level < 2; level++) {
        const quota_set *q = level ? &s->tenants[p->tenant].quota : &p->quota;
        int who = level ? p->tenant : j->project;
        for (int dim = 0; dim < QD__N; dim++) {
            if (q->v[dim] == QUOTA_NONE) continue;
            int64_t use = 0, want;
            if (dim == QD_CARD_HOURS) {
                use = level ? s->tenants[p->tenant].card_hours_used : p->card_hours_used;
                want = use + 1;
            } else {
                for (int i = 0; i < s->njobs; i++) {
                    const sch_job *o2 = &s->jobs[i];
                    if (o2->state == SCH_PENDING || i == job) continue;
                    if (level ? s->projects[o2->project].tenant != p->tenant
                              : o2->project != j->project)
                        continue;
                    use += sch_demand(s, o2, dim);
                }
                want = use + sch_demand(s, j, dim);
            }
            if (want <= q->v[dim]) continue;
            if (g.nch == SCH_SG_MAX_CHANGES) return;
            g.ch[g.nch++] = (sch_change){SCH_SG_QUOTA, level, who, dim, want};
        }
        int bc = SCH_CLASS_BASE(s->classes, j->cls);
        int64_t lim = quota_class_limit(q, s->classes[bc].name), used = 0;
        if (lim == QUOTA_NONE) continue;
        for (int i = 0; i < s->njobs; i++) {
            const sch_job *o2 = &s->jobs[i];
            if (o2->state == SCH_PENDING || i == job || SCH_CLASS_BASE(s->classes, o2->cls) != bc)
                continue;
            if (level ? s->projects[o2->project].tenant != p->tenant : o2->project != j->project)
                continue;
            used += o2->units;
        }
        if (used + j->units <= lim) continue;
        if (g.nch == SCH_SG_MAX_CHANGES) return;
        g.ch[g.nch++] = (sch_change){SCH_SG_CLASS_QUOTA, level, who, 0, used + j->units};
    }
    try_keep(x, job, &g, o);
}

/* The largest v in [0, hi) for which make(v) starts the job, or -1 (fewer CPUs / GiB only
 * ever fit more: bisect). */
static int64_t bisect(scratch *x, int job, int kind, int64_t hi, const sch_change *with,
                      out_list *o) {
    int64_t lo = 0, best = -1;
    hi -= 1;
    while (lo <= hi && !o->oom) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        sch_suggestion g = one(kind, 0, 0, 0, mid);
        if (with) g.ch[g.nch++] = *with;
        int ok = starts(x, job, &g);
        if (ok < 0) o->oom = 1;
        else if (ok) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

static void host_size(scratch *x, const sch_snapshot *s, int job, out_list *o) {
    const sch_class *c = &s->classes[s->jobs[job].cls];
    int64_t cp = c->cpus > 0 ? bisect(x, job, SCH_SG_UNIT_CPUS, c->cpus, NULL, o) : -1;
    if (cp >= 0) {
        sch_suggestion g = one(SCH_SG_UNIT_CPUS, 0, 0, 0, cp);
        try_keep(x, job, &g, o);
    }
    int64_t mp = c->mem_gib > 0 ? bisect(x, job, SCH_SG_UNIT_MEMORY, c->mem_gib, NULL, o) : -1;
    if (mp >= 0) {
        sch_suggestion g = one(SCH_SG_UNIT_MEMORY, 0, 0, 0, mp);
        try_keep(x, job, &g, o);
    }
    if (cp < 0 && mp < 0 && c->cpus > 0 && c->mem_gib > 0) {
        /* both short: the most memory with no CPUs, then the most CPUs with that memory */
        sch_change none = {SCH_SG_UNIT_CPUS, 0, 0, 0, 0};
        int64_t m2 = bisect(x, job, SCH_SG_UNIT_MEMORY, c->mem_gib, &none, o);
        if (m2 < 0) return;
        sch_change mem = {SCH_SG_UNIT_MEMORY, 0, 0, 0, m2};
        int64_t c2 = bisect(x, job, SCH_SG_UNIT_CPUS, c->cpus, &mem, o);
        if (c2 < 0) return;
        sch_suggestion g = one(SCH_SG_UNIT_CPUS, 0, 0, 0, c2);
        g.ch[g.nch++] = mem;
        try_keep(x, job, &g, o);
    }
}

/* Pools holding the class's cards that the job may not use: open one. */
static void open_pool(scratch *x, const sch_snapshot *s, int job, out_list *o) {
    const sch_job *j = &s->jobs[job];
    const sch_class *c = &s->classes[j->cls];
    const sch_project *p = &s->projects[j->project];
    for (int pool = 0; pool < x->P && o->n < o->max; pool++) {
        if (c->pool >= 0 && c->pool != pool) continue;
        int tenant_ok = pool < s->npools && s->tenants[p->tenant].pool_ok &&
                        s->tenants[p->tenant].pool_ok[pool];
        int project_ok = !p->pool_ok || (pool < s->npools && p->pool_ok[pool]);
        if (tenant_ok && project_ok) continue;
        int has = 0;
        for (int g = 0; g < s->ngpus && !has; g++)
            has = s->nodes[s->gpus[g].node].pool == pool && s->gpus[g].allocatable &&
                  c->model_ok[s->gpus[g].model] && (!c->gpu_ok || c->gpu_ok[g]);
        if (!has) continue;
        sch_suggestion g = one(SCH_SG_OPEN_POOL, 0, pool, 0, 0);
        try_keep(x, job, &g, o);
        if (o->n && o->out[o->n - 1].ch[0].kind == SCH_SG_OPEN_POOL) return; /* one is enough */
    }
}

/* Another stored class of the same form and at least the size that would start it. */
static void other_class(scratch *x, const sch_snapshot *s, int job, out_list *o) {
    const sch_job *j = &s->jobs[job];
    int mine = SCH_CLASS_BASE(s->classes, j->cls);
    const sch_class *c = &s->classes[mine];
    for (int k = 0; k < s->nclasses && o->n < o->max; k++) {
        const sch_class *d = &s->classes[k];
        if (k == mine || d->base || d->form != c->form || d->gpus < c->gpus) continue;
        if (d->form == SCH_SHARED && d->shared_mem_gib < c->shared_mem_gib) continue;
        if (d->form == SCH_MIG && d->profile && c->profile && strcmp(d->profile, c->profile))
            continue;
        sch_suggestion g = one(SCH_SG_USE_CLASS, 0, k, 0, 0);
        try_keep(x, job, &g, o);
        if (o->n && o->out[o->n - 1].ch[0].kind == SCH_SG_USE_CLASS) return;
    }
}

static void reservation(scratch *x, const sch_snapshot *s, int job, const sch_decision *d,
                        out_list *o) {
    if (!d->rsv || d->rsv > s->nrsvs) return;
    int i = d->rsv - 1;
    const rsv *r = &s->rsvs[i];
    const sch_job *j = &s->jobs[job];
    int tenant = s->projects[j->project].tenant;
    int64_t now = s->now_us;
    sch_suggestion g;
    switch (d->rsv_code) {
    case RSV_BLOCKED: {
        /* its own tenant's (or project's) reservation: name it */
        if (r->tenant == tenant && (r->project < 0 || r->project == j->project)) {
            g = one(SCH_SG_NAME_RSV, 0, i, 0, 0);
            try_keep(x, job, &g, o);
        }
        /* a time limit that ends before it starts */
        if (now < r->t1_us && (r->t1_us - now) / 1000000 > 0) {
            g = one(SCH_SG_TIME_LIMIT, 0, 0, 0, (r->t1_us - now) / 1000000);
            try_keep(x, job, &g, o);
        }
        rsv_job rj = {tenant, j->project, j->reservation - 1, j->time_limit_s};
        int64_t until = rsv_blocked_until(s->rsvs, i, &rj, now);
        if (until > now) {
            g = one(SCH_SG_WAIT_UNTIL, 0, i, 0, until);
            try_keep(x, job, &g, o);
        }
        break;
    }
    case RSV_NOT_YET:
        g = one(SCH_SG_WAIT_UNTIL, 0, i, 0, r->t1_us);
        try_keep(x, job, &g, o);
        break;
    case RSV_TOO_LONG:
        if ((r->t2_us - now) / 1000000 > 0) {
            g = one(SCH_SG_TIME_LIMIT, 0, 0, 0, (r->t2_us - now) / 1000000);
            try_keep(x, job, &g, o);
        }
        g = one(SCH_SG_DROP_RSV, 0, i, 0, 0); /* or not in it */
        try_keep(x, job, &g, o);
        break;
    case RSV_OVER:
    case RSV_NOT_HOLDER:
    case RSV_OUTSIDE:
        g = one(SCH_SG_DROP_RSV, 0, i, 0, 0);
        try_keep(x, job, &g, o);
        break;
    default: break;
    }
}

/* The other jobs in its way, in the order they are offered: queued ones of its priority or a
 * higher one, admitted ones (they hold quota), running ones (its project's first, then
 * its tenant's, then the rest; the oldest first). */
static int cand_rank(const sch_snapshot *s, const sch_job *j, const sch_job *c) {
    if (c->state == SCH_PENDING) return 0;
    if (c->state == SCH_ADMITTED) return 1;
    if (c->project == j->project) return 2;
    if (s->projects[c->project].tenant == s->projects[j->project].tenant) return 3;
    return 4;
}

typedef struct cand_key {
    int rank, prio;
    int64_t at;
    int job;
} cand_key;

static int cand_cmp(const void *a, const void *b) {
    const cand_key *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->prio != y->prio) return x->prio > y->prio ? -1 : 1;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return x->job - y->job;
}

static void wait_jobs(scratch *x, const sch_snapshot *s, int job, out_list *o) {
    const sch_job *j = &s->jobs[job];
    int *cand = malloc(sizeof *cand * (size_t)(s->njobs + 1)), nc = 0;
    cand_key *keys = malloc(sizeof *keys * (size_t)(s->njobs + 1));
    sch_suggestion *g = malloc(sizeof *g);
    if (!cand || !g || !keys) {
        o->oom = 1;
        goto out;
    }
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *c = &s->jobs[i];
        if (i == job) continue;
        /* (a queued job of a lower priority never goes first) */
        if (c->state == SCH_PENDING && c->priority < j->priority) continue;
        keys[nc++] = (cand_key){cand_rank(s, j, c), c->priority,
                                c->state == SCH_RUNNING ? c->start_us : c->submit_us, i};
    }
    if (!nc) goto out;
    qsort(keys, (size_t)nc, sizeof *keys, cand_cmp);
    for (int i = 0; i < nc; i++) cand[i] = keys[i].job;
    /* does removing the first k start it?  (a scratch suggestion with the prefix) */
#define PREFIX_STARTS(k, res)                                                                    \
    do {                                                                                         \
        scratch_reset(x, job);                                                                   \
        int o2 = 0;                                                                              \
        for (int q = 0; q < s->njobs; q++) {                                                     \
            int gone = 0;                                                                        \
            for (int m = 0; m < (k); m++) gone |= cand[m] == q;                                  \
            if (gone) continue;                                                                  \
            if (q == job) x->target = o2;                                                        \
            x->jobs[o2++] = x->jobs[q];                                                          \
        }                                                                                        \
        x->s.njobs = o2;                                                                         \
        sch_result rr;                                                                           \
        if (sch_round(&x->s, &rr)) {                                                             \
            (res) = -1;                                                                          \
        } else {                                                                                 \
            (res) = 0;                                                                           \
            for (int q = 0; q < rr.n; q++)                                                       \
                if (rr.d[q].job == x->target && rr.d[q].action != SCH_DO_PREEMPT)                \
                    (res) = rr.d[q].action == SCH_DO_PLACE ||                                    \
                            rr.d[q].action == SCH_DO_WAIT_PREEMPT;                               \
            sch_result_free(&rr);                                                                \
        }                                                                                        \
    } while (0)
    int res, k = 1, lo, hi;
    for (;;) {
        if (k > nc) k = nc;
        PREFIX_STARTS(k, res);
        if (res < 0) {
            o->oom = 1;
            goto out;
        }
        if (res) break;
        if (k == nc) goto out; /* even all of them gone would not start it */
        k *= 2;
    }
    /* the shortest prefix: in (k/2, k] */
    lo = k / 2 + 1;
    hi = k;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        PREFIX_STARTS(mid, res);
        if (res < 0) {
            o->oom = 1;
            goto out;
        }
        if (res) hi = mid;
        else lo = mid + 1;
    }
#undef PREFIX_STARTS
    if (hi > SCH_SG_MAX_JOBS) goto out; /* more than a suggestion names: not worth naming */
    memset(g, 0, sizeof *g);
    g->nch = 1;
    g->ch[0].kind = SCH_SG_WAIT_JOBS;
    g->njobs = hi;
    memcpy(g->jobs, cand, sizeof *cand * (size_t)hi);
    /* prune: a job whose end is not needed goes (the last first: the least likely to end) */
    for (int m = g->njobs - 1; m >= 0 && g->njobs > 1; m--) {
        sch_suggestion h = *g;
        memmove(&h.jobs[m], &h.jobs[m + 1], sizeof *h.jobs * (size_t)(h.njobs - m - 1));
        h.njobs--;
        int ok = starts(x, job, &h);
        if (ok < 0) {
            o->oom = 1;
            goto out;
        }
        if (ok) *g = h;
    }
    try_keep(x, job, g, o);
out:
    free(cand);
    free(keys);
    free(g);
}

int sch_suggest(const sch_snapshot *s, int job, sch_suggestion *out, int max) {
    if (job < 0 || job >= s->njobs || s->jobs[job].state == SCH_RUNNING || max <= 0) return 0;
    sch_result r;
    if (sch_round(s, &r)) return -1;
    sch_decision d;
    int have = 0;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < r.n; i++)
        if (r.d[i].job == job && r.d[i].action != SCH_DO_PREEMPT) {
            d = r.d[i];
            d.units = NULL;
            have = 1;
        }
    sch_result_free(&r);
    if (!have || d.action == SCH_DO_PLACE || d.action == SCH_DO_WAIT_PREEMPT) return 0;
    scratch x;
    if (scratch_init(&x, s)) return -1;
    out_list o = {out, 0, max, 0};
    const char *why = d.reason;
    if (!strncmp(why, "quota_exceeded", 14) || !strncmp(why, "card_hours_exhausted", 20))
        quota_raise(&x, s, job, &o);
    if (!strncmp(why, "borrow_limit", 12)) {
        const sch_job *j = &s->jobs[job];
        int tn = s->projects[j->project].tenant, bc = SCH_CLASS_BASE(s->classes, j->cls);
        /* the guarantee its work counts against: its class's own, or the tenant's (the work
         * of every class without one) */
        int own = quota_gclass(&s->tenants[tn].quota, s->classes[bc].name) >= 0;
        int64_t use = 0;
        for (int i = 0; i < s->njobs; i++) {
            const sch_job *w = &s->jobs[i];
            int wc = SCH_CLASS_BASE(s->classes, w->cls);
            if (w->state != SCH_PENDING && i != job && s->projects[w->project].tenant == tn &&
                (own ? wc == bc
                     : quota_gclass(&s->tenants[tn].quota, s->classes[wc].name) < 0))
                use += sch_demand(s, w, QD_GPU_MILLI);
        }
        sch_suggestion g = one(SCH_SG_GUARANTEE, 1, tn, own ? bc + 1 : 0,
                               use + sch_demand(s, j, QD_GPU_MILLI));
        try_keep(&x, job, &g, &o);
    }
    if (!strncmp(why, "no_capacity", 11) && strstr(why, "with their CPUs and memory"))
        host_size(&x, s, job, &o);
    if (!strncmp(why, "no_allowed_pool", 15)) open_pool(&x, s, job, &o);
    if (!strncmp(why, "no_allowed_pool", 15) || !strncmp(why, "no_matching_gpu", 15))
        other_class(&x, s, job, &o);
    reservation(&x, s, job, &d, &o);
    if (!o.oom) wait_jobs(&x, s, job, &o);
    scratch_free(&x);
    return o.oom ? -1 : o.n;
}
