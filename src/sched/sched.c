/*
 * sched.c - one scheduling round (see sched.h for the algorithm).
 *
 * The round works on a private copy of the cluster's usage ("st"): which
 * whole cards, MIG slices and shared capacity are taken, node CPUs and
 * memory, and the quota usage of every project and tenant.  take_unit() and
 * release_unit() are the only functions that change it, and they are exact
 * inverses, so trial placements (preemption search) can be undone.  Each of
 * them re-keys the one node it touched in every class's tree of best nodes
 * (see `key` below), so placing a unit never scans the nodes.  The same
 * state, kept across calls, is the round after one change (sch_delta).
 */
#include "sched.h"

#include "pack.h"
#include "share.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st {
    const sch_snapshot *s;
    int *whole;          /* per GPU: 1 when a whole unit holds it */
    int *shm, *spct;     /* per GPU: shared memory / compute taken */
    unsigned char *slice;/* per GPU x SCH_MAX_SLICES: taken */
    int *ncpu, *nmem;    /* per node: taken */
    int64_t *puse, *tuse;/* per project / tenant x QD__N */
    int64_t *pcls, *tcls;/* per project / tenant x class: units */
    unsigned gen;        /* bumped whenever capacity is released */
    unsigned *failgen;   /* per class x tenant: gen+1 at the last failure to place one unit */
    /*
     * The best node for a unit of each class, without a scan: per class and key kind
     * (KEY_FIT: best_on_node's tightest fit; KEY_FGD: pack's gpupool key of a whole-card
     * unit or a shared slice, node_key) every node's key, lower better (KEY_NONE: no unit fits
     * there), in a min-tree over the nodes grouped by pool, so a unit costs one query per
     * allowed pool and a take or release re-keys only its node.  Built when a class first
     * places; NULL before.
     */
    int npools;          /* pools as nodes name them (>= snapshot npools) */
    int *porder;         /* position -> node, nodes grouped by pool, in node order */
    int *ppos;           /* node -> position */
    int *pstart;         /* pool -> first position; [npools + 1] */
    int M;               /* tree leaves: a power of two >= nnodes */
    int64_t **key;       /* [class * 2 + kind]: per node */
    int **tree;          /* [class * 2 + kind]: 2 * M entries, a node index or -1 */
    int *built, nbuilt;  /* which trees exist, to re-key a node in each */
    int oom;             /* an allocation failed mid-round */
    /* per class: free units by pool for reasons, valid while `ops` is unchanged */
    unsigned long ops;   /* bumped by every take and release */
    unsigned long *fuops;
    int64_t *fuval;      /* [class * npools] */
    unsigned char *fumatch; /* [class * npools]: an eligible GPU there */
    unsigned char *pool_used; /* per pool: has a node */
    /* fragmentation-aware packing of whole cards and shared slices (pack.h: gpupool), when
     * the models fit its ids */
    pack_workload *wl;
    int64_t *wweight;    /* per class: the units it was built with */
    pack_supply supply;  /* allocatable cards by pack model (cluster_supply): a table, so a
                            delta keeps it (sched.h: only the jobs differ) */
    pack_norm norm;      /* the cluster's largest node CPU and GPU capacities */
    int big_nodes;       /* a node has more cards than pack sees (PACK_MAX_GPUS) */
    struct kmemo *memo;  /* node keys by the node's free shape (see memo_find) */
    unsigned memo_gen;   /* bumped when the workload changes: every entry stale */
    /* reasons already written, by what decides them (see rc_find) */
    unsigned long charges; /* bumped by every charge */
    struct rcache *rc;
    /* guaranteed shares (share.h; sched.h step 6): set when a tenant has a guarantee.  The
     * arithmetic runs per DOMAIN (step 6c): domain tn < ntenants is tenant tn's work of the
     * classes without a guarantee of their own (and its reservations'), each class guarantee
     * of a tenant (quota.h gclass_*) a domain of its own, ntenants + k. */
    int guarantees;
    int ndom;
    int *cdom;               /* [ntenants x nclasses]: the domain of a tenant's work of a
                                stored class, -1: the tenant's own (NULL: no class guarantee) */
    int *dten;               /* [ndom]: the domain's tenant */
    int *dcls;               /* [ndom]: its class (-1: the tenant's own domain, or a pool's) */
    int *dpool;              /* [ndom]: its pool (step 6d; -1: not a pool's) */
    int *pdom;               /* [ntenants x snapshot npools]: the domain of a tenant's guarantee
                                in a pool, -1: none (NULL: no pool guarantee anywhere) */
    int *jgp;                /* [njobs] with pdom: what admission gave each job that is not
                                running (sch_job.gpool's values; step 6d) */
    int jrestr;              /* the pools the job being placed may use (its jgp; 0: any) */
    int64_t *dg, *dkept;     /* [ndom]: its guarantee (none: 0) and kept part, milli */
    int64_t *duse;           /* [ndom]: GPU use of its charged work, milli */
    int64_t capacity;        /* allocatable GPUs, milli */
    unsigned char *borrowed; /* per job: running above its tenant's guarantee at round start */
    int64_t *tborrowed;      /* per tenant: what it borrows at round start, milli */
    int64_t *dborrowed;      /* per domain: likewise */
    int64_t held;            /* sum over domains of max(GPU use, kept part): not lendable */
    /* a tenant's reservations in force count against its guarantee (step 7a); its own
     * domain's, whatever the class of the work in them */
    int64_t *rheld;          /* per reservation: the cards it holds now for a tenant, milli */
    int64_t *rown;           /* per reservation: its own work's GPU use now, milli */
    int64_t *trsv;           /* per tenant: what its reservations hold now, milli */
    int64_t *tridle;         /* per tenant: of that, what its own work leaves unused, milli */
    /* projects' parts of their tenant's guarantee (share_mark_parts; sched.h step 6b): parts
     * of the tenant's own domain */
    int *dslot;              /* [ndom]: the domain's place among its tenant's: 0 its own, 1 + k
                                its k-th class or pool guarantee (pix) */
    int64_t *ppart;          /* [project x PSLOTS] (pix): its part of each of its tenant's
                                domains, milli (0: none) */
    int64_t *prown;          /* per project: its work in its tenant's reservations in force */
    int64_t *pbase;          /* [project x PSLOTS] (pix): GPU use of its work in each domain */
    int64_t *tparts;         /* per domain: the sum of its projects' parts */
    int64_t *tspill;         /* per domain: its work outside reservations beyond the parts */
    /* advance reservations (reserve.h; sched.h step 7) */
    rsv_count_use *ruse;     /* per reservation: the pool's work against a count */
    unsigned short **rslices; /* per count reservation of a class of slices: [3 x ngpus], the
                               * slices its own / other / other-past-T1 work holds per card */
    unsigned char *rpool;    /* [reservation x npools]: a pool where it holds something */
    int rsv_live;            /* a reservation not over yet */
    int rsv_code, rsv_block; /* why the last placement try was refused by a reservation, which */
    /* jobs that span nodes (place_gang): per node, a version bumped whenever it changes
     * (touch), and whether K units of class gk_cls fit there, kept while it is unchanged */
    unsigned *nver;
    int gk_cls, gk_k;
    unsigned *gk_ver;        /* [node]: nver + 1 when gk_score is valid */
    long long *gk_score;     /* [node]: node_takes' score, -1 none fit */
} st;

/*
 * A queue of 50,000 jobs holds few kinds of waiting job: the reason of one is the reason of
 * every job of the same project, class and units while nothing it depends on changed (quota
 * use: `charges`; free capacity: `ops`), so it is written once (a direct-mapped cache).
 */
#define RC_SLOTS 4096
typedef struct rcache {
    int used, kind, project, cls, units, nodes, by;
    unsigned long gen;
    char reason[200];
} rcache;

static rcache *rc_find(st *t, int kind, const sch_job *j, int by, unsigned long gen, int *hit) {
    unsigned h = (unsigned)kind * 2654435761u ^ (unsigned)j->project * 40503u ^
                 (unsigned)j->cls * 9973u ^ (unsigned)j->units * 131u ^ (unsigned)(by + 1) * 7919u ^
                 (unsigned)j->nodes * 2246822519u;
    rcache *e = t->rc ? &t->rc[h % RC_SLOTS] : NULL;
    *hit = e && e->used && e->kind == kind && e->project == j->project && e->cls == j->cls &&
           e->units == j->units && e->nodes == j->nodes && e->by == by && e->gen == gen;
    return e;
}

static void rc_keep(rcache *e, int kind, const sch_job *j, int by, unsigned long gen,
                    const char *reason) {
    if (!e) return;
    *e = (rcache){1, kind, j->project, j->cls, j->units, j->nodes, by, gen, ""};
    snprintf(e->reason, sizeof e->reason, "%s", reason);
}

enum { KEY_FIT = 0, KEY_FGD = 1 };
#define KEY_NONE INT64_MAX

static void touch(st *t, int node);

/*
 * The FGD key of a node is a pure function of the class and of the node as pack sees it
 * (free CPU, memory, each card's free capacity and model, the cards the class may take): the
 * nodes of a large cluster are mostly in a few such free shapes (empty, full, one card
 * left), so keys are kept by shape in a direct-mapped table and a tree build or a re-key
 * costs a hash where the shape was seen.  Only speed depends on it, never a result.
 */
#define MEMO_SLOTS 8192
typedef struct kmemo {
    unsigned gen;        /* memo_gen + 1 when valid */
    int cls;
    uint32_t allow;
    int64_t cpu, mem;
    int ngpu;
    int16_t free[PACK_MAX_GPUS];
    uint8_t model[PACK_MAX_GPUS];
    int64_t key;         /* KEY_NONE: does not fit */
    int8_t gpus[PACK_MAX_GPUS];
} kmemo;

#define SL(s, g, k) ((s)->slice[(size_t)(g)*SCH_MAX_SLICES + (k)])

int64_t sch_demand(const sch_snapshot *s, const sch_job *j, int d) {
    const sch_class *c = &s->classes[j->cls];
    switch (d) {
    case QD_GPU_MILLI: return c->gpu_milli * j->units;
    case QD_GPU_MEM: return c->gpu_mem_gib * j->units;
    case QD_CPUS: return (int64_t)c->cpus * j->units;
    case QD_MEM: return (int64_t)c->mem_gib * j->units;
    case QD_JOBS: return 1;
    default: return 0; /* card-hours are consumed by running, not reserved */
    }
}

/* ---- reservations (reserve.h; sched.h step 7) ---- */

/* When j ends by its time limit if it runs now (running: since it started); INT64_MAX none. */
static int64_t job_end(const st *t, const sch_job *j) {
    int64_t from = j->state == SCH_RUNNING ? j->start_us : t->s->now_us;
    if (j->time_limit_s <= 0 || j->time_limit_s > (INT64_MAX - from) / 1000000) return INT64_MAX;
    return from + j->time_limit_s * 1000000;
}

/* The cards of unit u of class c into gpus[]; how many. */
static int unit_gpus(const sch_class *c, const sch_unit *u, int *gpus) {
    int k = c->form == SCH_WHOLE ? c->gpus : 1;
    for (int i = 0; i < k; i++) gpus[i] = u->gpu[i];
    return k;
}

/* One slice more (sign 1) or less (-1) on a card: 1 when the card becomes held, -1 when it is
 * no longer, else 0. */
static int bump(unsigned short *v, int sign) {
    if (sign > 0) return (*v)++ == 0;
    assert(*v > 0);
    return --*v == 0 ? -1 : 0;
}

/* Job j takes (sign 1) or gives back (-1) unit u: what count reservations see of it. */
static void rsv_unit(st *t, const sch_job *j, const sch_class *c, const sch_unit *u, int sign) {
    const sch_snapshot *s = t->s;
    if (!t->ruse) return;
    int gpus[SCH_MAX_GPUS_PER_UNIT], k = unit_gpus(c, u, gpus);
    int pool = s->nodes[s->gpus[gpus[0]].node].pool;
    for (int i = 0; i < s->nrsvs; i++) {
        const rsv *r = &s->rsvs[i];
        if (r->node_in || r->pool != pool) continue;
        int m = 0;
        for (int q = 0; q < k; q++) m += r->card_ok[gpus[q]] != 0;
        if (!m) continue;
        unsigned short *sl = t->rslices ? t->rslices[i] : NULL;
        if (sl) {
            /* a slice: its card counts once, while any slice of it is held (reserve.h) */
            int g = gpus[0], own = j->reservation == i + 1;
            int past = !own && job_end(t, j) > r->t1_us;
            unsigned short *cnt = &sl[3 * g];
            if (own) t->ruse[i].busy_own_now += bump(&cnt[0], sign);
            else t->ruse[i].busy_other_now += bump(&cnt[1], sign);
            if (past) t->ruse[i].busy_at_t1 += bump(&cnt[2], sign);
            continue;
        }
        if (j->reservation == i + 1) {
            t->ruse[i].busy_own_now += sign * m;
        } else {
            t->ruse[i].busy_other_now += sign * m;
            if (job_end(t, j) > r->t1_us) t->ruse[i].busy_at_t1 += sign * m;
        }
    }
}

/* The reservations' starting state: matching cards of each count, what running work holds,
 * the pools each one holds something in.  -1 when out of memory. */
static int rsv_init(st *t) {
    const sch_snapshot *s = t->s;
    if (s->nrsvs <= 0) return 0;
    t->ruse = calloc((size_t)s->nrsvs, sizeof *t->ruse);
    t->rpool = calloc((size_t)s->nrsvs * (size_t)(t->npools + 1), 1);
    if (!t->ruse || !t->rpool) return -1;
    for (int i = 0; i < s->nrsvs; i++) {
        const rsv *r = &s->rsvs[i];
        unsigned char *rp = &t->rpool[(size_t)i * (size_t)(t->npools + 1)];
        t->rsv_live |= s->now_us < r->t2_us;
        if (r->node_in) {
            for (int n = 0; n < s->nnodes; n++)
                if (r->node_in[n]) rp[s->nodes[n].pool] = 1;
            continue;
        }
        if (r->pool >= 0 && r->pool < t->npools) rp[r->pool] = 1;
        int slices = 0;
        for (int g = 0; g < s->ngpus; g++) {
            t->ruse[i].cards += s->gpus[g].allocatable && r->card_ok[g] &&
                                s->nodes[s->gpus[g].node].pool == r->pool;
            slices |= r->card_ok[g] && s->gpus[g].mode != SCH_WHOLE;
        }
        if (slices) { /* a class of slices: its cards are counted whole, slice by slice */
            if (!t->rslices && !(t->rslices = calloc((size_t)s->nrsvs, sizeof *t->rslices)))
                return -1;
            if (!(t->rslices[i] = calloc((size_t)s->ngpus * 3 + 1, sizeof **t->rslices)))
                return -1;
            t->ruse[i].slices = t->rslices[i];
        }
    }
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        if (j->state != SCH_RUNNING) continue;
        const sch_class *c = &s->classes[j->cls];
        for (int k = 0; k < j->units; k++) rsv_unit(t, j, c, &j->place[k], +1);
    }
    return 0;
}

static int pool_allowed(const st *t, const sch_class *c, int project, int p);

/* Could a reservation keep job j from a place, or does j name one?  Then its units are
 * placed by rsv_place_unit (each candidate node asked, rsv_allows); otherwise as always. */
static int rsv_affects(const st *t, const sch_job *j) {
    const sch_snapshot *s = t->s;
    if (j->reservation) return 1;
    if (!t->rsv_live) return 0;
    const sch_class *c = &s->classes[j->cls];
    int64_t ends = job_end(t, j);
    for (int i = 0; i < s->nrsvs; i++) {
        const rsv *r = &s->rsvs[i];
        if (s->now_us >= r->t2_us || (s->now_us < r->t1_us && ends <= r->t1_us)) continue;
        const unsigned char *rp = &t->rpool[(size_t)i * (size_t)(t->npools + 1)];
        for (int p = 0; p < t->npools; p++)
            if (rp[p] && pool_allowed(t, c, j->project, p)) return 1;
    }
    return 0;
}

static rsv_job rsv_job_of(const sch_snapshot *s, const sch_job *j) {
    return (rsv_job){s->projects[j->project].tenant, j->project, j->reservation - 1,
                     j->time_limit_s};
}

/* ---- usage ---- */

/* Reservation i's cards its own work leaves unused now (step 7a), milli. */
static int64_t rsv_gap(const st *t, int i) {
    int64_t g = t->rheld[i] - t->rown[i];
    return g > 0 ? g : 0;
}

/* Which reservation in force for its tenant job j runs in (step 7a), else -1. */
static int rsv_in_force(const st *t, const sch_job *j) {
    int i = j->reservation - 1;
    if (!t->rheld || i < 0 || i >= t->s->nrsvs || t->rheld[i] <= 0) return -1;
    return t->s->rsvs[i].tenant == t->s->projects[j->project].tenant ? i : -1;
}

/* Where project p's figures for domain d of its tenant are in ppart and pbase. */
#define PSLOTS (1 + 2 * QUOTA_MAX_GCLASSES)
static size_t pix(const st *t, int p, int d) {
    return (size_t)p * PSLOTS + (size_t)t->dslot[d];
}

/* Project p's work in domain d outside its tenant's reservations in force (they count in its
 * own domain), beyond p's part of d (step 6b). */
static int64_t proj_spill(const st *t, int p, int d) {
    size_t i = pix(t, p, d);
    int64_t out = t->pbase[i] - (d < t->s->ntenants ? t->prown[p] : 0);
    return out > t->ppart[i] ? out - t->ppart[i] : 0;
}

/* The domain of job j's work (step 6c): its class's guarantee of its tenant, else the
 * tenant's own (always for work in its reservations in force: they count against that). */
static int dom_of(const st *t, const sch_job *j) {
    const sch_snapshot *s = t->s;
    int tn = s->projects[j->project].tenant;
    if (!t->cdom && !t->pdom) return tn;
    int cd = t->cdom ? t->cdom[(size_t)tn * s->nclasses + SCH_CLASS_BASE(s->classes, j->cls)] : -1,
        pd = -1;
    if (cd < 0 && t->pdom) { /* step 6d: the pool it runs in, or the one admission gave it */
        int pl = j->state == SCH_RUNNING && j->units > 0
                     ? s->nodes[s->gpus[j->place[0].gpu[0]].node].pool
                     : t->jgp[j - s->jobs] - 1;
        pd = pl >= 0 && pl < s->npools ? t->pdom[(size_t)tn * (size_t)s->npools + (size_t)pl] : -1;
    }
    int d = share_domain(rsv_in_force(t, j) >= 0, cd, pd);
    return d >= 0 ? d : tn;
}

/* What domain d uses of its entitlement (guarantees): its GPU use, and for a tenant's own
 * what its reservations in force hold unused (step 7a). */
static int64_t owned_use(const st *t, int d) {
    return t->duse[d] + (t->tridle && d < t->s->ntenants ? t->tridle[d] : 0);
}

/* What domain d holds from lending (guarantees): owned_use, or its idle kept part. */
static int64_t held_by(const st *t, int d) {
    int64_t use = owned_use(t, d);
    return use > t->dkept[d] ? use : t->dkept[d];
}

static void charge(st *t, const sch_job *j, int sign) {
    const sch_snapshot *s = t->s;
    int p = j->project, tn = s->projects[p].tenant;
    int ri = t->guarantees ? rsv_in_force(t, j) : -1, dm = t->guarantees ? dom_of(t, j) : tn;
    t->charges++;
    if (t->guarantees) t->held -= held_by(t, dm);
    if (t->tspill) t->tspill[dm] -= proj_spill(t, p, dm);
    if (t->guarantees) {
        t->duse[dm] += sch_demand(s, j, QD_GPU_MILLI) * sign;
        if (t->pbase) t->pbase[pix(t, p, dm)] += sch_demand(s, j, QD_GPU_MILLI) * sign;
    }
    if (ri >= 0) {
        t->tridle[tn] -= rsv_gap(t, ri);
        t->rown[ri] += sch_demand(s, j, QD_GPU_MILLI) * sign;
        t->prown[p] += sch_demand(s, j, QD_GPU_MILLI) * sign;
        t->tridle[tn] += rsv_gap(t, ri);
    }
    for (int d = 0; d < QD__N; d++) {
        int64_t v = sch_demand(s, j, d) * sign;
        t->puse[(size_t)p * QD__N + d] += v;
        t->tuse[(size_t)tn * QD__N + d] += v;
    }
    int bc = SCH_CLASS_BASE(s->classes, j->cls);
    t->pcls[(size_t)p * s->nclasses + bc] += j->units * sign;
    t->tcls[(size_t)tn * s->nclasses + bc] += j->units * sign;
    if (t->tspill) t->tspill[dm] += proj_spill(t, p, dm);
    if (t->guarantees) t->held += held_by(t, dm);
}

/* A unit's cards, slice or share and its node's CPUs and memory taken (sign +1) or given back
 * (-1) in the usage arrays alone: nothing re-keyed, no counter moved (place_gang's trials, which
 * always give back what they take, use it directly). */
static void raw_unit(st *t, const sch_class *c, const sch_unit *u, int sign) {
    const sch_snapshot *s = t->s;
    int node = s->gpus[u->gpu[0]].node;
    t->ncpu[node] += c->cpus * sign;
    t->nmem[node] += c->mem_gib * sign;
    if (c->form == SCH_WHOLE) {
        for (int k = 0; k < c->gpus; k++) {
            assert(sign < 0 || !t->whole[u->gpu[k]]);
            t->whole[u->gpu[k]] = sign > 0;
        }
    } else if (c->form == SCH_MIG) {
        assert(sign < 0 || !SL(t, u->gpu[0], u->slice));
        SL(t, u->gpu[0], u->slice) = sign > 0;
    } else {
        t->shm[u->gpu[0]] += c->shared_mem_gib * sign;
        t->spct[u->gpu[0]] += c->shared_pct * sign;
    }
}

static void take_unit(st *t, const sch_class *c, const sch_unit *u) {
    t->ops++;
    raw_unit(t, c, u, +1);
    touch(t, t->s->gpus[u->gpu[0]].node);
}

static void release_unit(st *t, const sch_class *c, const sch_unit *u) {
    t->ops++;
    raw_unit(t, c, u, -1);
    t->gen++;
    touch(t, t->s->gpus[u->gpu[0]].node);
}

/* ---- placement ---- */

static int gpu_eligible(const sch_snapshot *s, const sch_class *c, int g) {
    const sch_gpu *gp = &s->gpus[g];
    return gp->allocatable && gp->mode == c->form && c->model_ok[gp->model] &&
           (!c->gpu_ok || c->gpu_ok[g]);
}

/*
 * Best unit of class c on node n for tenant's work.  Returns a score
 * (lower = tighter fit) and fills *u, or -1 when nothing fits there.
 */
static long long best_on_node(st *t, const sch_class *c, int n, sch_unit *u) {
    const sch_snapshot *s = t->s;
    const sch_node *nd = &s->nodes[n];
    if (nd->cpus - t->ncpu[n] < c->cpus || nd->mem_gib - t->nmem[n] < c->mem_gib) return -1;
    long long best = -1;
    if (c->form == SCH_WHOLE) {
        /* free eligible cards, grouped by the topology the class needs */
        int free_idx[64], nfree = 0;
        for (int g = nd->gpu0; g < nd->gpu0 + nd->ngpus && nfree < 64; g++)
            if (!t->whole[g] && gpu_eligible(s, c, g)) free_idx[nfree++] = g;
        if (nfree < c->gpus) return -1;
        if (c->topology == SCH_TOPO_ANY) {
            for (int k = 0; k < c->gpus; k++) u->gpu[k] = free_idx[k];
            u->slice = -1;
            best = nfree - c->gpus;
        } else {
            /* the smallest group (same NUMA node / NVLink group) that holds the unit */
            for (int a = 0; a < nfree; a++) {
                int key = c->topology == SCH_TOPO_NUMA ? s->gpus[free_idx[a]].numa
                                                       : s->gpus[free_idx[a]].nvgroup;
                if (key < 0) continue;
                int members = 0, first = 1;
                for (int b = 0; b < a; b++) {
                    int kb = c->topology == SCH_TOPO_NUMA ? s->gpus[free_idx[b]].numa
                                                          : s->gpus[free_idx[b]].nvgroup;
                    if (kb == key) first = 0;
                }
                if (!first) continue;
                sch_unit cand;
                memset(&cand, 0, sizeof cand);
                for (int b = a; b < nfree; b++) {
                    int kb = c->topology == SCH_TOPO_NUMA ? s->gpus[free_idx[b]].numa
                                                          : s->gpus[free_idx[b]].nvgroup;
                    if (kb == key) {
                        if (members < c->gpus) cand.gpu[members] = free_idx[b];
                        members++;
                    }
                }
                if (members < c->gpus) continue;
                long long score = (long long)(members - c->gpus) * 1000 + (nfree - c->gpus);
                if (best < 0 || score < best) {
                    best = score;
                    *u = cand;
                    u->slice = -1;
                }
            }
        }
    } else if (c->form == SCH_MIG) {
        /* the free slice of that profile on the card with the fewest free slices */
        for (int g = nd->gpu0; g < nd->gpu0 + nd->ngpus; g++) {
            if (!gpu_eligible(s, c, g)) continue;
            const sch_gpu *gp = &s->gpus[g];
            int pick = -1, free_slices = 0;
            for (int k = 0; k < gp->nslices; k++) {
                if (SL(t, g, k)) continue;
                free_slices++;
                if (pick < 0 && strcmp(gp->slices[k].profile, c->profile) == 0) pick = k;
            }
            if (pick < 0) continue;
            long long score = free_slices;
            if (best < 0 || score < best) {
                best = score;
                u->gpu[0] = g;
                u->slice = pick;
            }
        }
    } else {
        /* the shared card left fullest after this slice */
        for (int g = nd->gpu0; g < nd->gpu0 + nd->ngpus; g++) {
            if (!gpu_eligible(s, c, g)) continue;
            int mfree = s->gpus[g].mem_gib - t->shm[g], pfree = 100 - t->spct[g];
            if (mfree < c->shared_mem_gib || pfree < c->shared_pct) continue;
            long long left_m = (long long)(mfree - c->shared_mem_gib) * 100 / (s->gpus[g].mem_gib ? s->gpus[g].mem_gib : 1);
            long long left_p = pfree - c->shared_pct;
            long long score = left_m > left_p ? left_m : left_p;
            if (best < 0 || score < best) {
                best = score;
                u->gpu[0] = g;
                u->slice = -1;
            }
        }
    }
    if (best < 0) return -1;
    /* then prefer nodes left with less spare CPU: pack */
    return best * 100000 + (nd->cpus - t->ncpu[n] - c->cpus);
}

/* ---- fragmentation-aware choice for shared slices (pack.h) ---- */

/* pack's model id of a card: its model and its mode (so modes never mix). */
static int pack_model(const sch_gpu *g) { return g->model * 3 + g->mode; }

static uint64_t class_mask(const sch_snapshot *s, const sch_class *c) {
    uint64_t m = 0;
    for (int i = 0; i < s->nmodels; i++)
        if (c->model_ok[i]) m |= 1ULL << (i * 3 + c->form);
    return m;
}

/* A class's unit as a pack task (a shared slice as its GPU share). */
static void unit_task(const sch_snapshot *s, const sch_class *c, pack_task *t) {
    memset(t, 0, sizeof *t);
    t->cpu_milli = (int64_t)c->cpus * 1000;
    t->memory_mib = (int64_t)c->mem_gib * 1024;
    t->model_mask = class_mask(s, c);
    if (c->form == SCH_SHARED) {
        t->num_gpu = 1;
        t->gpu_milli = (int)(c->gpu_milli < 1 ? 1 : c->gpu_milli > 999 ? 999 : c->gpu_milli);
    } else if (c->form == SCH_WHOLE) {
        t->num_gpu = c->gpus > PACK_MAX_GPUS ? PACK_MAX_GPUS : c->gpus;
        t->gpu_milli = PACK_MILLI;
    }
}

/* Units of each class waiting in the snapshot's queue (MIG units have no place in pack's
 * model): the weights of its typical shapes.  1 if any waits. */
static int queue_weights(const sch_snapshot *s, int64_t *w) {
    int any = 0;
    memset(w, 0, sizeof *w * (size_t)(s->nclasses + 1));
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        if (j->state == SCH_RUNNING || s->classes[j->cls].form == SCH_MIG) continue;
        w[j->cls] += j->units;
        any = 1;
    }
    return any;
}

/* The cards pack sees (a node's first PACK_MAX_GPUS) that can be allocated, by pack's model
 * id: bound classes weigh by how few of them they accept (pack.h, "Scarcity"). */
static void cluster_supply(const sch_snapshot *s, pack_supply *out) {
    memset(out, 0, sizeof *out);
    for (int n = 0; n < s->nnodes; n++) {
        const sch_node *nd = &s->nodes[n];
        int ng = nd->ngpus > PACK_MAX_GPUS ? PACK_MAX_GPUS : nd->ngpus;
        for (int k = 0; k < ng; k++) {
            const sch_gpu *g = &s->gpus[nd->gpu0 + k];
            if (g->allocatable && pack_model(g) < PACK_MAX_MODELS) out->gpus[pack_model(g)]++;
        }
    }
}

/* The typical shapes of this round's queue, weighted by t->wweight, bound ones also by the
 * cluster's allocatable cards (t->supply). */
static void build_workload(st *t) {
    const sch_snapshot *s = t->s;
    int any = queue_weights(s, t->wweight);
    t->memo_gen++;
    if (s->nmodels * 3 > PACK_MAX_MODELS || s->nclasses == 0) return;
    pack_shape *shapes = calloc((size_t)s->nclasses, sizeof *shapes);
    if (!shapes) return;
    for (int c = 0; c < s->nclasses; c++) {
        unit_task(s, &s->classes[c], &shapes[c].task);
        shapes[c].weight = t->wweight[c];
    }
    if (any && pack_workload_new_supply(shapes, (size_t)s->nclasses, &t->supply, &t->wl) != PACK_OK)
        t->wl = NULL;
    free(shapes);
}

/* A node as pack sees it now. */
static void to_pack(const st *t, int n, pack_node *pn) {
    const sch_snapshot *s = t->s;
    const sch_node *nd = &s->nodes[n];
    memset(pn, 0, sizeof *pn);
    pn->cpu_cap = (int64_t)nd->cpus * 1000;
    pn->mem_cap = (int64_t)nd->mem_gib * 1024;
    pn->cpu_free = (int64_t)(nd->cpus - t->ncpu[n]) * 1000;
    pn->mem_free = (int64_t)(nd->mem_gib - t->nmem[n]) * 1024;
    if (pn->cpu_free < 0) pn->cpu_free = 0;
    if (pn->mem_free < 0) pn->mem_free = 0;
    pn->ngpu = nd->ngpus > PACK_MAX_GPUS ? PACK_MAX_GPUS : nd->ngpus;
    for (int k = 0; k < pn->ngpu; k++) {
        int g = nd->gpu0 + k;
        const sch_gpu *gp = &s->gpus[g];
        int free = 0;
        if (gp->allocatable && gp->mode == SCH_WHOLE) free = t->whole[g] ? 0 : PACK_MILLI;
        else if (gp->allocatable && gp->mode == SCH_SHARED && gp->mem_gib > 0) {
            int by_mem = (gp->mem_gib - t->shm[g]) * 1000 / gp->mem_gib, by_pct = (100 - t->spct[g]) * 10;
            free = by_mem < by_pct ? by_mem : by_pct;
            if (free < 0) free = 0;
        }
        pn->gpu_free[k] = (int16_t)free;
        pn->gpu_model[k] = (uint8_t)pack_model(gp);
    }
}

static uint64_t memo_hash(int ci, uint32_t allow, const pack_node *pn) {
    uint64_t h = 1469598103934665603ULL;
#define MH(x) h = (h ^ (uint64_t)(x)) * 1099511628211ULL
    MH(ci);
    MH(allow);
    MH(pn->cpu_free);
    MH(pn->mem_free);
    MH(pn->ngpu);
    for (int k = 0; k < pn->ngpu; k++) {
        MH(pn->gpu_free[k]);
        MH(pn->gpu_model[k]);
    }
#undef MH
    return h ^ (h >> 29);
}

/* The table's entry for this shape: *hit 1 when it holds its key. */
static kmemo *memo_find(st *t, int ci, uint32_t allow, const pack_node *pn, int *hit) {
    *hit = 0;
    if (!t->memo) return NULL;
    kmemo *e = &t->memo[memo_hash(ci, allow, pn) % MEMO_SLOTS];
    *hit = e->gen == t->memo_gen + 1 && e->cls == ci && e->allow == allow &&
           e->cpu == pn->cpu_free && e->mem == pn->mem_free && e->ngpu == pn->ngpu &&
           !memcmp(e->free, pn->gpu_free, sizeof e->free[0] * (size_t)pn->ngpu) &&
           !memcmp(e->model, pn->gpu_model, (size_t)pn->ngpu);
    return e;
}

/*
 * Key of node n for a unit of class ci (lower better; KEY_NONE: nothing fits) and that unit.
 * KEY_FIT: best_on_node's score.  KEY_FGD (whole cards and shared slices): pack's gpupool key
 * of the node (pack_node_key: the fragmentation gradient, then its tie-break), among the
 * cards the class may take there: eligible and free (whole), holding the slice's memory and
 * compute (shared), the NUMA node or NVLink group best_on_node chose (a class that asks for
 * one) - the node's fragmentation is still measured on all its cards.
 */
static int64_t node_key(st *t, int ci, int kind, int n, sch_unit *u) {
    const sch_snapshot *s = t->s;
    const sch_class *c = &s->classes[ci];
    if (kind == KEY_FIT) {
        long long sc = best_on_node(t, c, n, u);
        return sc < 0 ? KEY_NONE : (int64_t)sc;
    }
    const sch_node *nd = &s->nodes[n];
    if (nd->cpus - t->ncpu[n] < c->cpus || nd->mem_gib - t->nmem[n] < c->mem_gib) return KEY_NONE;
    int ng = nd->ngpus > PACK_MAX_GPUS ? PACK_MAX_GPUS : nd->ngpus;
    uint32_t allow = 0;
    if (c->form == SCH_WHOLE && c->topology != SCH_TOPO_ANY) {
        sch_unit pick;
        if (best_on_node(t, c, n, &pick) < 0) return KEY_NONE;
        for (int k = 0; k < c->gpus; k++) {
            if (pick.gpu[k] - nd->gpu0 >= ng) return KEY_NONE;
            allow |= 1u << (pick.gpu[k] - nd->gpu0);
        }
    } else {
        for (int k = 0; k < ng; k++) {
            int g = nd->gpu0 + k;
            if (!gpu_eligible(s, c, g)) continue;
            if (c->form == SCH_WHOLE ? !t->whole[g]
                                     : s->gpus[g].mem_gib - t->shm[g] >= c->shared_mem_gib &&
                                           100 - t->spct[g] >= c->shared_pct)
                allow |= 1u << k;
        }
    }
    if (!allow) return KEY_NONE;
    pack_node pn;
    to_pack(t, n, &pn);
    int hit, gi[PACK_MAX_GPUS];
    int64_t key;
    kmemo *e = memo_find(t, ci, allow, &pn, &hit);
    if (hit) {
        key = e->key;
        for (int k = 0; k < PACK_MAX_GPUS; k++) gi[k] = e->gpus[k];
    } else {
        pack_task task;
        unit_task(s, c, &task);
        if (pack_node_key(&pn, &task, t->wl, &t->norm, allow, &key, gi) != PACK_OK) key = KEY_NONE;
        if (e) {
            *e = (kmemo){t->memo_gen + 1, ci, allow, pn.cpu_free, pn.mem_free, pn.ngpu, {0}, {0},
                         key, {0}};
            memcpy(e->free, pn.gpu_free, sizeof e->free[0] * (size_t)pn.ngpu);
            memcpy(e->model, pn.gpu_model, (size_t)pn.ngpu);
            for (int k = 0; key != KEY_NONE && k < task.num_gpu; k++) e->gpus[k] = (int8_t)gi[k];
        }
    }
    if (key == KEY_NONE) return KEY_NONE;
    if (c->form == SCH_WHOLE) {
        for (int k = 0; k < c->gpus; k++) u->gpu[k] = nd->gpu0 + gi[k];
    } else {
        u->gpu[0] = nd->gpu0 + gi[0];
    }
    u->slice = -1;
    return key;
}

/* The better of two nodes in tree `k`: the lower key, then the lower node index. */
static int better(const int64_t *key, int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return key[a] < key[b] || (key[a] == key[b] && a < b) ? a : b;
}

static int tree_build(st *t, int idx) {
    const sch_snapshot *s = t->s;
    int ci = idx / 2, kind = idx % 2, M = t->M;
    t->key[idx] = malloc(sizeof **t->key * (size_t)(s->nnodes + 1));
    t->tree[idx] = malloc(sizeof **t->tree * (size_t)(2 * M));
    if (!t->key[idx] || !t->tree[idx]) {
        free(t->key[idx]);
        free(t->tree[idx]);
        t->key[idx] = NULL;
        t->tree[idx] = NULL;
        t->oom = 1;
        return -1;
    }
    int64_t *key = t->key[idx];
    int *tr = t->tree[idx];
    sch_unit u;
    for (int n = 0; n < s->nnodes; n++) key[n] = node_key(t, ci, kind, n, &u);
    for (int i = 0; i < M; i++) tr[M + i] = i < s->nnodes ? t->porder[i] : -1;
    for (int i = M - 1; i >= 1; i--) tr[i] = better(key, tr[2 * i], tr[2 * i + 1]);
    t->built[t->nbuilt++] = idx;
    return 0;
}

/* Node n changed: re-key it in every tree built. */
static void touch(st *t, int n) {
    sch_unit u;
    if (t->nver) t->nver[n]++;
    for (int b = 0; b < t->nbuilt; b++) {
        int idx = t->built[b];
        int64_t *key = t->key[idx];
        int *tr = t->tree[idx];
        key[n] = node_key(t, idx / 2, idx % 2, n, &u);
        for (int i = (t->M + t->ppos[n]) / 2; i >= 1; i /= 2)
            tr[i] = better(key, tr[2 * i], tr[2 * i + 1]);
    }
}

/* Best node in positions [lo, hi) of tree idx, or -1. */
static int tree_query(const st *t, int idx, int lo, int hi) {
    const int64_t *key = t->key[idx];
    const int *tr = t->tree[idx];
    int best = -1;
    for (lo += t->M, hi += t->M; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) best = better(key, best, tr[lo++]);
        if (hi & 1) best = better(key, best, tr[--hi]);
    }
    return best;
}

/* May work of `project` use pool p for class c (by the pools open to it alone)? */
static int pool_open(const sch_snapshot *s, const sch_class *c, int project, int p) {
    const sch_project *pj = &s->projects[project];
    return (c->pool < 0 || c->pool == p) && p < s->npools && s->tenants[pj->tenant].pool_ok[p] &&
           (!pj->pool_ok || pj->pool_ok[p]);
}

/* ... and, for the job being placed, within what admission gave it (t->jrestr, step 6d)? */
static int pool_allowed(const st *t, const sch_class *c, int project, int p) {
    if (!pool_open(t->s, c, project, p)) return 0;
    if (t->jrestr > 0) return p == t->jrestr - 1;
    if (t->jrestr == SCH_GPOOL_REST)
        return t->pdom[(size_t)t->s->projects[project].tenant * (size_t)t->s->npools + (size_t)p] < 0;
    return 1;
}

/* The best node for a unit of class ci by key kind, among the pools the project may use, with
 * its unit in *u; -1 when none fits. */
static int best_node(st *t, int ci, int kind, int project, sch_unit *u) {
    const sch_snapshot *s = t->s;
    int idx = ci * 2 + kind;
    if (!t->tree[idx] && tree_build(t, idx)) return -1;
    int best = -1;
    for (int p = 0; p < t->npools; p++) {
        if (t->pstart[p] == t->pstart[p + 1] || !pool_allowed(t, &s->classes[ci], project, p))
            continue;
        best = better(t->key[idx], best, tree_query(t, idx, t->pstart[p], t->pstart[p + 1]));
    }
    if (best < 0 || t->key[idx][best] == KEY_NONE) return -1;
    node_key(t, ci, kind, best, u);
    return best;
}

/* Does class c place by the fragmentation view (KEY_FGD)? */
static int uses_fgd(const st *t, const sch_class *c) {
    return t->wl && (c->form == SCH_SHARED || (c->form == SCH_WHOLE && c->gpus <= PACK_MAX_GPUS));
}

/*
 * One unit of class c for the project's work: whole cards and shared slices where pack's
 * gpupool policy says (the fragmentation gradient over this round's queue, then its
 * tie-break), MIG slices by the tightest fit; ties to the lowest node index.  The tightest
 * fit also takes what the fragmentation view cannot see: a shared slice where pack's one
 * capacity figure says no but memory and compute fit, whole cards beyond PACK_MAX_GPUS on a
 * node.  0 with *u taken, or -1.
 */
/*
 * place_unit for a job a reservation may touch (rsv_affects): the same keys, each candidate
 * node of the allowed pools asked in turn (no tree: the answer depends on the job), the best
 * key that rsv_allows takes, ties to the lowest node index.  A node that fits but is refused
 * is remembered in t->rsv_code / rsv_block (the first refusal) for the job's reason.
 */
static int rsv_place_unit(st *t, const sch_class *c, const sch_job *j, sch_unit *u) {
    const sch_snapshot *s = t->s;
    int ci = (int)(c - s->classes), fgd = uses_fgd(t, c);
    rsv_job rj = rsv_job_of(s, j);
    for (int pass = 0; pass < 2; pass++) {
        int kind = pass ? KEY_FIT : KEY_FGD;
        if (pass == 0 && !fgd) continue;
        if (pass == 1 && !(!fgd || c->form == SCH_SHARED || t->big_nodes)) continue;
        int best = -1;
        int64_t bk = KEY_NONE;
        for (int p = 0; p < t->npools; p++) {
            if (t->pstart[p] == t->pstart[p + 1] || !pool_allowed(t, c, j->project, p)) continue;
            for (int pos = t->pstart[p]; pos < t->pstart[p + 1]; pos++) {
                int n = t->porder[pos], gpus[SCH_MAX_GPUS_PER_UNIT], blk;
                sch_unit cand;
                int64_t key = node_key(t, ci, kind, n, &cand);
                if (key == KEY_NONE || (best >= 0 && (key > bk || (key == bk && n > best))))
                    continue;
                int k = unit_gpus(c, &cand, gpus);
                int code = rsv_allows(s->rsvs, s->nrsvs, t->ruse, &rj, n, p, gpus, k, s->now_us,
                                      &blk);
                if (code != RSV_OK) {
                    if (!t->rsv_code) {
                        t->rsv_code = code;
                        t->rsv_block = blk >= 0 ? blk : j->reservation - 1;
                    }
                    continue;
                }
                best = n;
                bk = key;
            }
        }
        if (best >= 0) {
            node_key(t, ci, kind, best, u);
            take_unit(t, c, u);
            rsv_unit(t, j, c, u, +1);
            return 0;
        }
    }
    return -1;
}

static int place_unit(st *t, const sch_class *c, const sch_job *j, sch_unit *u) {
    int ci = (int)(c - t->s->classes), fgd = uses_fgd(t, c), project = j->project;
    if (t->s->nrsvs > 0 && rsv_affects(t, j)) return rsv_place_unit(t, c, j, u);
    if ((fgd && best_node(t, ci, KEY_FGD, project, u) >= 0) ||
        ((!fgd || c->form == SCH_SHARED || t->big_nodes) &&
         best_node(t, ci, KEY_FIT, project, u) >= 0)) {
        take_unit(t, c, u);
        rsv_unit(t, j, c, u, +1);
        return 0;
    }
    return -1;
}

/* Job j gives back unit u (take_unit's inverse, reservations included). */
static void job_release_unit(st *t, const sch_job *j, const sch_class *c, const sch_unit *u) {
    release_unit(t, c, u);
    rsv_unit(t, j, c, u, -1);
}

/* A running job (a victim spared or restored) takes its place back. */
static void retake_job(st *t, const sch_job *v) {
    const sch_class *c = &t->s->classes[v->cls];
    for (int k = 0; k < v->units; k++) {
        take_unit(t, c, &v->place[k]);
        rsv_unit(t, v, c, &v->place[k], +1);
    }
}

/* ---- jobs that span nodes (sched.h, step 4a) ---- */

/* Whether the reservations let job j's unit u go on node n (1), or not (0: why noted). */
static int rsv_unit_ok(st *t, const sch_class *c, const sch_job *j, int n, const sch_unit *u) {
    const sch_snapshot *s = t->s;
    if (s->nrsvs <= 0 || !rsv_affects(t, j)) return 1;
    rsv_job rj = rsv_job_of(s, j);
    int gpus[SCH_MAX_GPUS_PER_UNIT], k = unit_gpus(c, u, gpus), blk;
    int code = rsv_allows(s->rsvs, s->nrsvs, t->ruse, &rj, n, s->nodes[n].pool, gpus, k,
                          s->now_us, &blk);
    if (code == RSV_OK) return 1;
    if (!t->rsv_code) {
        t->rsv_code = code;
        t->rsv_block = blk >= 0 ? blk : j->reservation - 1;
    }
    return 0;
}

/*
 * K units of job j's class c on node n, one after the other where best_on_node puts each (and
 * the reservations let it).  take 0: a trial (the usage arrays alone, given back after; out may
 * be NULL); take 1: the units are taken into out[0..K) (nothing when they do not all fit).
 * Returns the node's score (the sum of its units' fit scores, lower tighter), or -1 when K
 * units do not fit there.
 */
static long long node_takes(st *t, const sch_class *c, const sch_job *j, int n, int K, int take,
                            sch_unit *out) {
    const sch_node *nd = &t->s->nodes[n];
    sch_unit tmp[64];
    if (K < 1 || K > 64 || !nd->ngpus || nd->cpus - t->ncpu[n] < (long long)K * c->cpus ||
        nd->mem_gib - t->nmem[n] < (long long)K * c->mem_gib)
        return -1;
    sch_unit *u = out ? out : tmp;
    long long score = 0;
    int k = 0;
    for (; k < K; k++) {
        long long sc = best_on_node(t, c, n, &u[k]);
        if (sc < 0 || !rsv_unit_ok(t, c, j, n, &u[k])) break;
        score += sc;
        if (take) take_unit(t, c, &u[k]);
        else raw_unit(t, c, &u[k], +1);
        rsv_unit(t, j, c, &u[k], +1);
    }
    if (!take || k < K)
        for (int m = k - 1; m >= 0; m--) {
            if (take) release_unit(t, c, &u[m]);
            else raw_unit(t, c, &u[m], -1);
            rsv_unit(t, j, c, &u[m], -1);
        }
    return k < K ? -1 : score;
}

/* node_takes' trial on node n for K units of job j's class ci, kept per node while it is
 * unchanged (not for a job a reservation touches: what fits depends on the job then). */
static long long gang_score(st *t, const sch_job *j, int ci, int K, int n) {
    if (t->s->nrsvs > 0 && rsv_affects(t, j))
        return node_takes(t, &t->s->classes[ci], j, n, K, 0, NULL);
    if (t->gk_cls != ci || t->gk_k != K) {
        memset(t->gk_ver, 0, sizeof *t->gk_ver * (size_t)(t->s->nnodes + 1));
        t->gk_cls = ci;
        t->gk_k = K;
    }
    if (t->gk_ver[n] != t->nver[n] + 1) {
        t->gk_score[n] = node_takes(t, &t->s->classes[ci], j, n, K, 0, NULL);
        t->gk_ver[n] = t->nver[n] + 1;
    }
    return t->gk_score[n];
}

typedef struct gcand {
    int node, rack, sw;
    int nrack, nsw; /* candidates in its rack / switch (0: it has none) */
    long long score;
} gcand;

/* The tightest first, then node order. */
static int gc_by_score(const void *a, const void *b) {
    const gcand *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return x->node - y->node;
}

/* The fewest racks (no switch holds N): the largest rack first (of equal ones, that of the
 * larger switch), nodes without a rack last, then the tightest. */
static int gc_by_spread(const void *a, const void *b) {
    const gcand *x = a, *y = b;
    if (x->nrack != y->nrack) return y->nrack - x->nrack;
    if (x->nsw != y->nsw) return y->nsw - x->nsw;
    if (x->sw != y->sw) return x->sw - y->sw;
    if (x->rack != y->rack) return x->rack - y->rack;
    return gc_by_score(a, b);
}

static int gc_by_node(const void *a, const void *b) {
    return ((const gcand *)a)->node - ((const gcand *)b)->node;
}

/*
 * The nodes that can each take K units of job j's class now (in pools its project may use),
 * into cand[]; their count.  cnt (2 x (nnodes + 1) ints, zeroed) counts them per rack and per
 * switch id.
 */
static int gang_candidates(st *t, const sch_class *c, const sch_job *j, int K, gcand *cand,
                           int *cnt) {
    const sch_snapshot *s = t->s;
    int ci = (int)(c - s->classes), nc = 0, N1 = s->nnodes + 1;
    for (int n = 0; n < s->nnodes; n++) {
        const sch_node *nd = &s->nodes[n];
        if (!pool_allowed(t, c, j->project, nd->pool)) continue;
        long long sc = gang_score(t, j, ci, K, n);
        if (sc < 0) continue;
        int rack = nd->rack > 0 && nd->rack < N1 ? nd->rack : 0;
        int sw = nd->sw > 0 && nd->sw < N1 ? nd->sw : 0;
        cand[nc++] = (gcand){n, rack, sw, 0, 0, sc};
        if (rack) cnt[rack]++;
        if (sw) cnt[N1 + sw]++;
    }
    for (int i = 0; i < nc; i++) {
        cand[i].nrack = cand[i].rack ? cnt[cand[i].rack] : 0;
        cand[i].nsw = cand[i].sw ? cnt[N1 + cand[i].sw] : 0;
    }
    return nc;
}

/*
 * Choose j->nodes of the nc candidates (sched.h, step 4a), moving them to cand[0..N) in node
 * order (rank order).  Pure over cand[].
 */
static void gang_choose(gcand *cand, int nc, int N) {
    for (int level = 0; level < 2; level++) {
        /* the group (rack, then switch) with the fewest candidates that still has N; ties to
         * the lowest id */
        int best = 0, bestn = 0;
        for (int i = 0; i < nc; i++) {
            int id = level ? cand[i].sw : cand[i].rack, cn = level ? cand[i].nsw : cand[i].nrack;
            if (!id || cn < N) continue;
            if (!best || cn < bestn || (cn == bestn && id < best)) {
                best = id;
                bestn = cn;
            }
        }
        if (!best) continue;
        int m = 0;
        for (int i = 0; i < nc; i++)
            if ((level ? cand[i].sw : cand[i].rack) == best) {
                gcand x = cand[m];
                cand[m++] = cand[i];
                cand[i] = x;
            }
        qsort(cand, (size_t)m, sizeof *cand, gc_by_score);
        qsort(cand, (size_t)N, sizeof *cand, gc_by_node);
        return;
    }
    qsort(cand, (size_t)nc, sizeof *cand, gc_by_spread);
    qsort(cand, (size_t)N, sizeof *cand, gc_by_node);
}

/* How many nodes could take K units of j's class now (for reasons). */
static int gang_fitting(st *t, const sch_class *c, const sch_job *j) {
    const sch_snapshot *s = t->s;
    int K = j->nodes > 0 ? j->units / j->nodes : j->units, n = 0;
    int ci = (int)(c - s->classes);
    for (int i = 0; i < s->nnodes; i++)
        if (pool_allowed(t, c, j->project, s->nodes[i].pool) && gang_score(t, j, ci, K, i) >= 0)
            n++;
    return n;
}

/* Place job j, which spans nodes, with class c: all of it (0, units[] taken, rank by rank) or
 * nothing (-1). */
static int place_gang(st *t, const sch_class *c, const sch_job *j, sch_unit *units) {
    const sch_snapshot *s = t->s;
    int N = j->nodes, K = N > 0 ? j->units / N : 0;
    if (N < 1 || K < 1 || N * K != j->units || N > s->nnodes) return -1;
    gcand *cand = malloc(sizeof *cand * (size_t)(s->nnodes + 1));
    int *cnt = calloc(2 * (size_t)(s->nnodes + 1), sizeof *cnt);
    if (!cand || !cnt) {
        free(cand);
        free(cnt);
        t->oom = 1;
        return -1;
    }
    int nc = gang_candidates(t, c, j, K, cand, cnt), rc = -1;
    if (nc >= N) {
        gang_choose(cand, nc, N);
        int r = 0;
        for (; r < N; r++)
            if (node_takes(t, c, j, cand[r].node, K, 1, &units[(size_t)r * (size_t)K]) < 0) break;
        if (r == N) rc = 0;
        else /* cannot happen: the trial said it fits, and the nodes are distinct */
            for (int m = r - 1; m >= 0; m--)
                for (int k = 0; k < K; k++)
                    job_release_unit(t, j, c, &units[(size_t)m * (size_t)K + (size_t)k]);
    }
    free(cand);
    free(cnt);
    return rc;
}

/* Every unit of job j with class c: 0 with units[] taken, or -1 with nothing taken and
 * *first_fails 1 when not even its first unit found a place (a job that spans nodes: 0). */
static int place_all(st *t, const sch_class *c, const sch_job *j, sch_unit *units,
                     int *first_fails) {
    *first_fails = 0;
    if (j->nodes > 0) return place_gang(t, c, j, units);
    int k = 0;
    while (k < j->units && place_unit(t, c, j, &units[k]) == 0) k++;
    if (k == j->units) return 0;
    *first_fails = k == 0;
    for (int m = 0; m < k; m++) job_release_unit(t, j, c, &units[m]);
    return -1;
}

/* Place every unit of job j (gang: all or none). 0 with units[] taken, or -1. */
static int place_job(st *t, const sch_job *j, sch_unit *units) {
    const sch_snapshot *s = t->s;
    const sch_class *c = &s->classes[j->cls];
    unsigned *fg = &t->failgen[(size_t)j->cls * s->nprojects + (size_t)j->project];
    /* a job a reservation touches fails where others would not: it never marks the kind
     * failed (it may read the mark: what fits nowhere fits nowhere for it either) */
    unsigned scratch = t->gen; /* (never gen + 1) */
    if (s->nrsvs > 0 && rsv_affects(t, j)) {
        if (*fg == t->gen + 1) return -1;
        fg = &scratch;
        /* naming a reservation: its window, its holder, its count first (anywhere alike) */
        if (j->reservation) {
            rsv_job rj = rsv_job_of(s, j);
            /* slices: how many cards they take shows only where they go (rsv_allows) */
            int cards = c->form == SCH_WHOLE ? j->units * c->gpus : 0;
            int code = rsv_named_check(s->rsvs, s->nrsvs, t->ruse, &rj, cards, s->now_us);
            if (code != RSV_OK) {
                if (!t->rsv_code) {
                    t->rsv_code = code;
                    t->rsv_block = j->reservation - 1;
                }
                return -1;
            }
        }
    }
    if (*fg == t->gen + 1) return -1; /* nothing was freed since a unit of this kind failed */
    int first_fails = 1, ff;
    /* more than one card, of a class spanning vendors: all of them on one vendor */
    if (c->nalts && (j->units > 1 || (c->form == SCH_WHOLE && c->gpus > 1))) {
        for (int a = 0; a < c->nalts; a++) {
            if (place_all(t, &s->classes[c->alts[a]], j, units, &ff) == 0) return 0;
            first_fails = first_fails && ff;
        }
    } else {
        if (place_all(t, c, j, units, &ff) == 0) return 0;
        first_fails = ff;
    }
    /* (nothing was released on the way: gen is as it was) */
    if (first_fails) *fg = t->gen + 1;
    return -1;
}

static void unplace_job(st *t, const sch_job *j, const sch_unit *units) {
    const sch_class *c = &t->s->classes[j->cls];
    for (int k = 0; k < j->units; k++) job_release_unit(t, j, c, &units[k]);
}

/* ---- admission ---- */

static void fmt_val(int d, int64_t v, char *b, size_t n) {
    if (d == QD_GPU_MILLI || d == QD_CARD_HOURS) snprintf(b, n, "%g", (double)v / 1000.0);
    else snprintf(b, n, "%lld", (long long)v);
}

/* 1 if admissible; otherwise 0 with the reason. */
static int admissible(const st *t, const sch_job *j, char *why, size_t n) {
    const sch_snapshot *s = t->s;
    const sch_project *p = &s->projects[j->project];
    const sch_tenant *tn = &s->tenants[p->tenant];
    const sch_class *c = &s->classes[j->cls];
    for (int level = 0; level < 2; level++) {
        const quota_set *q = level ? &tn->quota : &p->quota;
        const int64_t *use = level ? &t->tuse[(size_t)p->tenant * QD__N]
                                   : &t->puse[(size_t)j->project * QD__N];
        const char *who = level ? "tenant" : "project", *name = level ? tn->name : p->name;
        int64_t ch = level ? tn->card_hours_used : p->card_hours_used;
        if (q->v[QD_CARD_HOURS] != QUOTA_NONE && ch >= q->v[QD_CARD_HOURS]) {
            char a[32], b[32];
            fmt_val(QD_CARD_HOURS, ch, a, sizeof a);
            fmt_val(QD_CARD_HOURS, q->v[QD_CARD_HOURS], b, sizeof b);
            snprintf(why, n, "card_hours_exhausted: %s %s %s/%s for %s", who, name, a, b,
                     s->month ? s->month : "this month");
            return 0;
        }
        for (int d = 0; d < QD__N; d++) {
            if (d == QD_CARD_HOURS || q->v[d] == QUOTA_NONE) continue;
            int64_t need = sch_demand(s, j, d);
            if (use[d] + need > q->v[d]) {
                char a[32], b[32], c3[32];
                fmt_val(d, use[d], a, sizeof a);
                fmt_val(d, q->v[d], b, sizeof b);
                fmt_val(d, need, c3, sizeof c3);
                snprintf(why, n, "quota_exceeded: %s %s %s %s/%s in use (needs %s more)", who,
                         name, quota_dim_name(d), a, b, c3);
                return 0;
            }
        }
        int64_t lim = quota_class_limit(q, c->name);
        int bc = SCH_CLASS_BASE(s->classes, j->cls);
        int64_t cu = level ? t->tcls[(size_t)p->tenant * s->nclasses + bc]
                           : t->pcls[(size_t)j->project * s->nclasses + bc];
        if (lim != QUOTA_NONE && cu + j->units > lim) {
            snprintf(why, n, "quota_exceeded: %s %s gpus(class %s) %lld/%lld in use (needs %d more)",
                     who, name, c->name, (long long)cu, (long long)lim, j->units);
            return 0;
        }
    }
    return 1;
}

/* ---- ordering ---- */

/* A queued job's place in the order, gathered once so the sort reads no other array. */
typedef struct qkey {
    int credit; /* sch_job.credited */
    int prio;
    double share;
    int64_t submit;
    const char *id;
    int job;
} qkey;

/* 1 if x goes before y: credited for its victims (sched.h, step 5), higher priority, lower
 * tenant share, earlier submit, then the id. */
static int q_before(const qkey *x, const qkey *y) {
    if (x->credit != y->credit) return x->credit > y->credit;
    if (x->prio != y->prio) return x->prio > y->prio;
    if (x->share != y->share) return x->share < y->share;
    if (x->submit != y->submit) return x->submit < y->submit;
    return strcmp(x->id, y->id) <= 0;
}

/* Stable bottom-up merge sort of the queue by q_before (a total order: ids are unique).
 * -1 when out of memory. */
static int sort_queue(const sch_snapshot *s, const double *share, int *q, int nq) {
    qkey *k = malloc(sizeof *k * (size_t)(nq ? nq : 1)), *tmp = malloc(sizeof *tmp * (size_t)(nq ? nq : 1));
    if (!k || !tmp) {
        free(k);
        free(tmp);
        return -1;
    }
    for (int i = 0; i < nq; i++) {
        const sch_job *j = &s->jobs[q[i]];
        k[i] = (qkey){j->state == SCH_ADMITTED && j->credited, j->priority,
                      share[s->projects[j->project].tenant], j->submit_us, j->id, q[i]};
    }
    for (int width = 1; width < nq; width *= 2) {
        for (int lo = 0; lo < nq; lo += 2 * width) {
            int mid = lo + width < nq ? lo + width : nq, hi = lo + 2 * width < nq ? lo + 2 * width : nq;
            int a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = q_before(&k[a], &k[b]) ? k[a++] : k[b++];
            while (a < mid) tmp[o++] = k[a++];
            while (b < hi) tmp[o++] = k[b++];
        }
        qkey *x = k;
        k = tmp;
        tmp = x;
    }
    for (int i = 0; i < nq; i++) q[i] = k[i].job;
    free(k);
    free(tmp);
    return 0;
}

/* Dominant share of each tenant: its largest used/ceiling; without ceilings, GPU share. */
static void shares(const st *t, double *share) {
    const sch_snapshot *s = t->s;
    int64_t total_milli = 0;
    for (int g = 0; g < s->ngpus; g++) total_milli += 1000;
    for (int i = 0; i < s->ntenants; i++) {
        double best = 0;
        int any = 0;
        for (int d = 0; d < QD__N; d++) {
            int64_t lim = s->tenants[i].quota.v[d];
            if (lim == QUOTA_NONE || d == QD_JOBS) continue;
            int64_t used = d == QD_CARD_HOURS ? s->tenants[i].card_hours_used
                                              : t->tuse[(size_t)i * QD__N + d];
            double v = lim > 0 ? (double)used / (double)lim : (used > 0 ? 1e9 : 0);
            if (v > best) best = v;
            any = 1;
        }
        if (!any)
            best = total_milli ? (double)t->tuse[(size_t)i * QD__N + QD_GPU_MILLI] / total_milli : 0;
        share[i] = best;
    }
}

/* ---- reasons for jobs that did not get a place ---- */

/* Free units of class c the project's work may use now; *matching: 1 an eligible GPU in a pool
 * it may use, 2 one in a pool it may not.  Counted once per class and pool while nothing is
 * taken or released, then summed over the pools. */
/* Units of class c node n's free cards (or slices) could take, its CPUs and memory aside;
 * *eligible 1 when a card there passes the class's rules. */
static int64_t gpu_units_on(st *t, const sch_class *c, int n, int *eligible) {
    const sch_snapshot *s = t->s;
    const sch_node *nd = &s->nodes[n];
    int64_t on_node = 0;
    for (int g = nd->gpu0; g < nd->gpu0 + nd->ngpus; g++) {
        if (!gpu_eligible(s, c, g)) continue;
        *eligible = 1;
        if (c->form == SCH_WHOLE) on_node += !t->whole[g];
        else if (c->form == SCH_MIG) {
            for (int k = 0; k < s->gpus[g].nslices; k++)
                on_node += !SL(t, g, k) && strcmp(s->gpus[g].slices[k].profile, c->profile) == 0;
        } else {
            int a = (s->gpus[g].mem_gib - t->shm[g]) / (c->shared_mem_gib ? c->shared_mem_gib : 1);
            int b = (100 - t->spct[g]) / (c->shared_pct ? c->shared_pct : 1);
            on_node += a < b ? a : b;
        }
    }
    if (c->form == SCH_WHOLE) on_node /= c->gpus;
    return on_node;
}

/* What the nodes' CPUs and memory leave of the free units of class c (pools project may
 * use): the units that also find a unit's CPUs and memory on their node.  When CPU (memory)
 * is short on a node with free cards, *cpu_short (*mem_short) is set, with the most CPUs
 * (GiB) free on such a node. */
typedef struct host_fit {
    int64_t units;                 /* free units with their CPUs and memory */
    int cpu_short, mem_short;
    long long most_cpus, most_mem; /* on a node short of them */
} host_fit;

static host_fit host_fit_of(st *t, const sch_class *c, int project) {
    const sch_snapshot *s = t->s;
    host_fit h = {0, 0, 0, -1, -1};
    for (int n = 0; n < s->nnodes; n++) {
        const sch_node *nd = &s->nodes[n];
        if (!pool_allowed(t, c, project, nd->pool)) continue;
        int eligible = 0;
        int64_t g = gpu_units_on(t, c, n, &eligible);
        if (g <= 0) continue;
        long long fc = nd->cpus - t->ncpu[n], fm = nd->mem_gib - t->nmem[n];
        int64_t by_cpu = c->cpus > 0 ? (fc > 0 ? fc / c->cpus : 0) : g;
        int64_t by_mem = c->mem_gib > 0 ? (fm > 0 ? fm / c->mem_gib : 0) : g;
        int64_t fit = g < by_cpu ? g : by_cpu;
        if (by_mem < fit) fit = by_mem;
        h.units += fit;
        if (by_cpu < g) {
            h.cpu_short = 1;
            if (fc > h.most_cpus) h.most_cpus = fc;
        }
        if (by_mem < g) {
            h.mem_short = 1;
            if (fm > h.most_mem) h.most_mem = fm;
        }
    }
    return h;
}

static int64_t free_units(st *t, const sch_class *c, int project, int *matching) {
    const sch_snapshot *s = t->s;
    int ci = (int)(c - s->classes), P = t->npools;
    int64_t *byp = &t->fuval[(size_t)ci * (size_t)P];
    unsigned char *elig = &t->fumatch[(size_t)ci * (size_t)P];
    if (t->fuops[ci] != t->ops + 1) {
        memset(byp, 0, sizeof *byp * (size_t)P);
        memset(elig, 0, (size_t)P);
        for (int n = 0; n < s->nnodes; n++) {
            const sch_node *nd = &s->nodes[n];
            int eligible = 0;
            int64_t on_node = gpu_units_on(t, c, n, &eligible);
            if (eligible) elig[nd->pool] = 1;
            byp[nd->pool] += on_node;
        }
        t->fuops[ci] = t->ops + 1;
    }
    int64_t units = 0;
    *matching = 0;
    for (int p = 0; p < P; p++) {
        if (!elig[p]) continue;
        if (pool_allowed(t, c, project, p)) {
            *matching |= 1;
            units += byp[p];
        } else {
            *matching |= 2;
        }
    }
    return units;
}

static void no_place_reason(st *t, const sch_job *j, int blocker, char *why, size_t n) {
    const sch_snapshot *s = t->s;
    const sch_class *c = &s->classes[j->cls];
    int tenant = s->projects[j->project].tenant, matching;
    int64_t fu = free_units(t, c, j->project, &matching);
    if (!(matching & 1)) {
        if (matching & 2)
        {
            /* closed to the tenant, or only to this project's class? */
            static const char *const pcn[] = {"production", "development", "research"};
            const sch_project *pj = &s->projects[j->project];
            int tenant_ok_somewhere = 0;
            /* only the pools where the class's cards are (free_units marked them): a pool
             * the tenant may use but that holds none of them says nothing */
            const unsigned char *elig = &t->fumatch[(size_t)(c - s->classes) * (size_t)t->npools];
            for (int pool = 0; pool < t->npools && !tenant_ok_somewhere; pool++)
                if (elig[pool] && (c->pool < 0 || c->pool == pool) &&
                    s->tenants[tenant].pool_ok[pool])
                    tenant_ok_somewhere = 1;
            if (tenant_ok_somewhere && pj->pool_ok)
                snprintf(why, n, "no_allowed_pool: GPUs of class %s exist only in pools closed to "
                                 "%s projects",
                         c->name, pcn[pj->pclass >= 0 && pj->pclass < 3 ? pj->pclass : 2]);
            else
                snprintf(why, n, "no_allowed_pool: GPUs of class %s exist only in pools tenant %s "
                                 "may not use",
                         c->name, s->tenants[tenant].name);
        }
        else if (c->why_none)
            snprintf(why, n, "no_matching_gpu: %s (class %s)", c->why_none, c->name);
        else
            snprintf(why, n, "no_matching_gpu: no allocatable (healthy) GPU satisfies class %s",
                     c->name);
    } else if (blocker >= 0) {
        /* name the blocking job only to its own tenant */
        int same = s->projects[s->jobs[blocker].project].tenant == tenant;
        snprintf(why, n, "waiting_behind_higher_priority: %s%s (priority %d) waits for the same "
                         "class %s",
                 same ? "job " : "a job of another tenant", same ? s->jobs[blocker].id : "",
                 s->jobs[blocker].priority, c->name);
    } else if (j->nodes > 0) {
        /* a job that spans nodes: N nodes that can each take K units */
        int K = j->units / j->nodes, fit = gang_fitting(t, c, j);
        for (int a = 0; a < c->nalts; a++) {
            int f = gang_fitting(t, &s->classes[c->alts[a]], j);
            if (a == 0 || f > fit) fit = f; /* (all on one vendor) */
        }
        snprintf(why, n, "no_capacity: class %s needs %d node%s with %d free unit%s each, all at "
                         "once; %d node%s can take %d now",
                 c->name, j->nodes, j->nodes == 1 ? "" : "s", K, K == 1 ? "" : "s", fit,
                 fit == 1 ? "" : "s", K);
    } else if (c->nalts && (j->units > 1 || (c->form == SCH_WHOLE && c->gpus > 1))) {
        /* all on one vendor: what the vendor with the most free has */
        static const char *const vn[] = {"nvidia", "amd", "intel"};
        int64_t best = -1;
        int bv = 0, m2;
        for (int a = 0; a < c->nalts; a++) {
            int64_t f = free_units(t, &s->classes[c->alts[a]], j->project, &m2);
            if (f > best) {
                best = f;
                bv = s->classes[c->alts[a]].alt_vendor;
            }
        }
        snprintf(why, n, "no_capacity: class %s needs %d units, %lld free now on one vendor"
                         " (%s; %lld on all, never mixed)",
                 c->name, j->units, (long long)(best < 0 ? 0 : best),
                 bv >= 1 && bv <= 3 ? vn[bv - 1] : "none", (long long)fu);
    } else {
        /* free cards on nodes without a unit's CPUs or memory are not free for this job: say
         * what is short (not "1 free now" of a job that needs 1) */
        /* (only when the cards alone would do: else their count explains the wait, and this
         * walk over every node is not made for each waiting job of a full cluster) */
        host_fit h = {0, 0, 0, -1, -1};
        if (fu >= j->units) h = host_fit_of(t, c, j->project);
        if (fu >= j->units && h.units < j->units && (h.cpu_short || h.mem_short)) {
            char what[200];
            long long mc = h.most_cpus < 0 ? 0 : h.most_cpus, mm = h.most_mem < 0 ? 0 : h.most_mem;
            if (h.cpu_short && h.mem_short)
                snprintf(what, sizeof what, "a unit needs %d CPUs and %d GiB, nodes with a free "
                                            "card have at most %lld CPUs and %lld GiB free",
                         c->cpus, c->mem_gib, mc, mm);
            else if (h.cpu_short)
                snprintf(what, sizeof what, "a unit needs %d CPUs, nodes with a free card have at "
                                            "most %lld free",
                         c->cpus, mc);
            else
                snprintf(what, sizeof what, "a unit needs %d GiB, nodes with a free card have at "
                                            "most %lld GiB free",
                         c->mem_gib, mm);
            char full[400]; /* (written whole, then cut to the reason's size) */
            snprintf(full, sizeof full, "no_capacity: class %s needs %d unit%s, %lld free now "
                                        "with their CPUs and memory (%lld on the cards alone; %s)",
                     c->name, j->units, j->units == 1 ? "" : "s", (long long)h.units,
                     (long long)fu, what);
            size_t len = strlen(full);
            if (n) {
                if (len >= n) len = n - 1;
                memcpy(why, full, len);
                why[len] = '\0';
            }
        } else {
            snprintf(why, n, "no_capacity: class %s needs %d unit%s, %lld free now", c->name,
                     j->units, j->units == 1 ? "" : "s", (long long)fu);
        }
    }
}

/* A reservation as a job's reason names it: maintenance, its own tenant's by name, another
 * tenant's without (as a blocking job of another tenant is not named). */
static void rsv_label(const sch_snapshot *s, const sch_job *j, int i, char *out, size_t n) {
    const rsv *r = &s->rsvs[i];
    const char *name = s->rsv_names && s->rsv_names[i] ? s->rsv_names[i] : "?";
    if (r->tenant < 0) snprintf(out, n, "maintenance window %s", name);
    else if (r->tenant == s->projects[j->project].tenant) snprintf(out, n, "reservation %s", name);
    else snprintf(out, n, "a reservation of another tenant");
}

/* Why job j waits on reservation i (code: rsv_allows's). */
static void rsv_reason(const st *t, const sch_job *j, int i, int code, char *out, size_t outn) {
    const sch_snapshot *s = t->s;
    char why[600]; /* (written whole, then cut to the reason's size) */
    size_t n = sizeof why;
    const rsv *r = &s->rsvs[i];
    char who[128], t1[32], t2[32];
    rsv_label(s, j, i, who, sizeof who);
    rsv_fmt_time(r->t1_us, t1, sizeof t1);
    rsv_fmt_time(r->t2_us, t2, sizeof t2);
    switch (code) {
    case RSV_BLOCKED:
        if (s->now_us >= r->t1_us)
            snprintf(why, n, "reserved: %s holds the cards it could use until %s", who, t2);
        else if (j->time_limit_s > 0)
            snprintf(why, n, "reserved: %s holds the cards it could use from %s to %s; with its "
                             "time limit of %llds it would still run then",
                     who, t1, t2, (long long)j->time_limit_s);
        else
            snprintf(why, n, "reserved: %s holds the cards it could use from %s to %s; without a "
                             "time limit it would still run then",
                     who, t1, t2);
        break;
    case RSV_NOT_YET: snprintf(why, n, "reservation_not_started: %s starts at %s", who, t1); break;
    case RSV_OVER: snprintf(why, n, "reservation_over: %s ended at %s", who, t2); break;
    case RSV_TOO_LONG:
        snprintf(why, n, "reservation_too_long: with its time limit of %llds it would run past "
                         "the end of %s at %s",
                 (long long)j->time_limit_s, who, t2);
        break;
    case RSV_FULL:
        snprintf(why, n, "reservation_full: %s holds %d cards, %d of them taken by its jobs "
                         "(it waits for them)",
                 who, r->count, t->ruse ? t->ruse[i].busy_own_now : 0);
        break;
    case RSV_NOT_HOLDER: snprintf(why, n, "reservation_not_held: %s is not its project's", who); break;
    default:
        snprintf(why, n, "no_capacity: %s has no free place for class %s now", who,
                 s->classes[j->cls].name);
    }
    size_t len = strlen(why);
    if (outn == 0) return;
    if (len >= outn) len = outn - 1;
    memcpy(out, why, len);
    out[len] = '\0';
}

/* ---- guaranteed shares (share.h; sched.h, step 6) ---- */

static int any_guarantee(const sch_snapshot *s) {
    for (int i = 0; i < s->ntenants; i++)
        if (s->tenants[i].quota.guarantee != QUOTA_NONE || s->tenants[i].quota.ngclass ||
            s->tenants[i].quota.ngpool)
            return 1;
    return 0;
}

/* Domain d's guarantee while any tenant has one: none counts as 0 (all its work borrowed). */
static int64_t gtee(const st *t, int d) { return t->dg[d]; }

/* What domain d is entitled to now (step 7a): its guarantee, or for a tenant's own what its
 * reservations in force hold when that is more (a reservation counts against the guarantee,
 * not on top). */
static int64_t geff(const st *t, int d) {
    int64_t g = gtee(t, d), r = t->trsv && d < t->s->ntenants ? t->trsv[d] : 0;
    return r > g ? r : g;
}

/* What domain d's work outside its tenant's reservations in force may own (steps 6b, 7a): the
 * guarantee less what they hold, then less its projects' parts (a tenant's own domain): the
 * unassigned part. */
static int64_t free_part(const st *t, int d) {
    int64_t g = gtee(t, d), r = t->trsv && d < t->s->ntenants ? t->trsv[d] : 0;
    return share_unassigned(g > r ? g - r : 0, t->tparts[d]);
}

/* " for class C" when domain d is a class's guarantee, else "" (for reasons). */
static const char *dom_what(const st *t, int d, char *buf, size_t n) {
    if (d < t->s->ntenants) return "";
    if (t->dpool[d] >= 0)
        snprintf(buf, n, " in pool %.40s",
                 t->s->pool_names ? t->s->pool_names[t->dpool[d]] : "?");
    else
        snprintf(buf, n, " for class %.40s", t->s->classes[t->dcls[d]].name);
    return buf;
}

/*
 * Step 6c's domains: each tenant's own, then one per class guarantee of a tenant whose class
 * the snapshot has (a guarantee naming a class that does not exist holds nothing).  Their
 * guarantees, kept parts and charged work's use.  -1 when out of memory.
 */
static int dom_init(st *t) {
    const sch_snapshot *s = t->s;
    int extra = 0, pextra = 0;
    for (int tn = 0; tn < s->ntenants; tn++) {
        extra += s->tenants[tn].quota.ngclass;
        pextra += s->pool_names && s->npools ? s->tenants[tn].quota.ngpool : 0;
    }
    size_t D = (size_t)s->ntenants + (size_t)extra + (size_t)pextra + 1;
    t->dten = malloc(sizeof *t->dten * D);
    t->dcls = malloc(sizeof *t->dcls * D);
    t->dpool = malloc(sizeof *t->dpool * D);
    t->dslot = malloc(sizeof *t->dslot * D);
    if (!t->dpool || !t->dslot) return -1;
    if (pextra) {
        t->pdom = malloc(sizeof *t->pdom * (size_t)s->ntenants * (size_t)s->npools);
        t->jgp = calloc((size_t)s->njobs + 1, sizeof *t->jgp);
        if (!t->pdom || !t->jgp) return -1;
        for (size_t i = 0; i < (size_t)s->ntenants * (size_t)s->npools; i++) t->pdom[i] = -1;
        for (int i = 0; i < s->njobs; i++) /* admitted: what its admission gave it */
            if (s->jobs[i].state == SCH_ADMITTED && s->jobs[i].gpool >= SCH_GPOOL_REST &&
                s->jobs[i].gpool <= s->npools)
                t->jgp[i] = s->jobs[i].gpool;
    }
    t->dg = calloc(D, sizeof *t->dg);
    t->dkept = calloc(D, sizeof *t->dkept);
    t->duse = calloc(D, sizeof *t->duse);
    t->dborrowed = calloc(D, sizeof *t->dborrowed);
    if (!t->dten || !t->dcls || !t->dg || !t->dkept || !t->duse || !t->dborrowed) return -1;
    if (extra && s->nclasses) {
        t->cdom = malloc(sizeof *t->cdom * (size_t)s->ntenants * (size_t)s->nclasses);
        if (!t->cdom) return -1;
        for (size_t i = 0; i < (size_t)s->ntenants * (size_t)s->nclasses; i++) t->cdom[i] = -1;
    }
    int nd = s->ntenants;
    for (int tn = 0; tn < s->ntenants; tn++) {
        const quota_set *q = &s->tenants[tn].quota;
        int slot = 0;
        t->dten[tn] = tn;
        t->dcls[tn] = -1;
        t->dpool[tn] = -1;
        t->dslot[tn] = slot++;
        t->dg[tn] = q->guarantee == QUOTA_NONE ? 0 : q->guarantee;
        t->dkept[tn] = q->guarantee == QUOTA_NONE ? 0 : q->kept;
        for (int k = 0; t->cdom && k < q->ngclass; k++)
            for (int c = 0; c < s->nclasses; c++) {
                if (s->classes[c].base || strcmp(s->classes[c].name, q->gclass_name[k])) continue;
                t->cdom[(size_t)tn * s->nclasses + c] = nd;
                t->dten[nd] = tn;
                t->dcls[nd] = c;
                t->dpool[nd] = -1;
                t->dslot[nd] = slot++;
                t->dg[nd] = q->gclass_g[k];
                t->dkept[nd] = q->gclass_kept[k];
                nd++;
                break;
            }
        for (int k = 0; t->pdom && k < q->ngpool; k++) /* step 6d */
            for (int p = 0; p < s->npools; p++) {
                if (strcmp(s->pool_names[p], q->gpool_name[k])) continue;
                t->pdom[(size_t)tn * (size_t)s->npools + (size_t)p] = nd;
                t->dten[nd] = tn;
                t->dcls[nd] = -1;
                t->dpool[nd] = p;
                t->dslot[nd] = slot++;
                t->dg[nd] = q->gpool_g[k];
                t->dkept[nd] = q->gpool_kept[k];
                nd++;
                break;
            }
    }
    for (int i = 0; t->pdom && i < s->njobs; i++) /* a pool whose guarantee is gone: nothing */
        if (t->jgp[i] > 0 &&
            t->pdom[(size_t)s->projects[s->jobs[i].project].tenant * (size_t)s->npools +
                    (size_t)(t->jgp[i] - 1)] < 0)
            t->jgp[i] = 0;
    t->ndom = nd;
    return 0;
}

/*
 * Step 6b's state: each project's part of its tenant's guarantee, what its work in
 * reservations in force uses (rsv_share_init has run), and what each tenant's work spills
 * beyond the parts.  -1 when out of memory.
 */
static int parts_init(st *t) {
    const sch_snapshot *s = t->s;
    size_t P = (size_t)s->nprojects + 1, D = (size_t)t->ndom + 1;
    t->ppart = calloc(P * PSLOTS, sizeof *t->ppart);
    t->prown = calloc(P, sizeof *t->prown);
    t->pbase = calloc(P * PSLOTS, sizeof *t->pbase);
    t->tparts = calloc(D, sizeof *t->tparts);
    int64_t *spill = calloc(D, sizeof *spill);
    if (!t->ppart || !t->prown || !t->pbase || !t->tparts || !spill) {
        free(spill);
        return -1;
    }
    for (int p = 0; p < s->nprojects; p++) {
        const quota_set *pq = &s->projects[p].quota;
        int tn = s->projects[p].tenant;
        for (int d = 0; d < t->ndom; d++) {
            if (t->dten[d] != tn) continue;
            int64_t g = QUOTA_NONE;
            int k;
            if (d < s->ntenants) g = pq->guarantee; /* of its tenant's own */
            else if (t->dcls[d] >= 0 && (k = quota_gclass(pq, s->classes[t->dcls[d]].name)) >= 0)
                g = pq->gclass_g[k]; /* of a class's guarantee (step 6c) */
            else if (t->dpool[d] >= 0 &&
                     (k = quota_gpool(pq, s->pool_names[t->dpool[d]])) >= 0)
                g = pq->gpool_g[k]; /* of a pool's (step 6d) */
            t->ppart[pix(t, p, d)] = g == QUOTA_NONE || g < 0 ? 0 : g;
            t->tparts[d] += t->ppart[pix(t, p, d)];
        }
    }
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        if (j->state == SCH_PENDING) continue;
        if (rsv_in_force(t, j) >= 0) t->prown[j->project] += sch_demand(s, j, QD_GPU_MILLI);
        t->pbase[pix(t, j->project, dom_of(t, j))] += sch_demand(s, j, QD_GPU_MILLI);
    }
    for (int p = 0; p < s->nprojects; p++)
        for (int d = 0; d < t->ndom; d++)
            if (t->dten[d] == s->projects[p].tenant) spill[d] += proj_spill(t, p, d);
    t->tspill = spill; /* charge() keeps it from now on */
    return 0;
}

/*
 * Step 7a's state: what each tenant's reservations in force hold (named nodes: their
 * allocatable cards; a count: its count) and what its charged work uses of them.  Only while
 * a tenant has a guarantee and a reservation of a tenant is in force.  -1 when out of memory.
 */
static int rsv_share_init(st *t) {
    const sch_snapshot *s = t->s;
    int any = 0;
    for (int i = 0; i < s->nrsvs; i++)
        any |= s->rsvs[i].tenant >= 0 && s->rsvs[i].tenant < s->ntenants &&
               s->now_us >= s->rsvs[i].t1_us && s->now_us < s->rsvs[i].t2_us;
    if (!any) return 0;
    t->rheld = calloc((size_t)s->nrsvs, sizeof *t->rheld);
    t->rown = calloc((size_t)s->nrsvs, sizeof *t->rown);
    t->trsv = calloc((size_t)s->ntenants, sizeof *t->trsv);
    t->tridle = calloc((size_t)s->ntenants, sizeof *t->tridle);
    if (!t->rheld || !t->rown || !t->trsv || !t->tridle) return -1;
    for (int i = 0; i < s->nrsvs; i++) {
        const rsv *r = &s->rsvs[i];
        if (r->tenant < 0 || r->tenant >= s->ntenants || s->now_us < r->t1_us ||
            s->now_us >= r->t2_us)
            continue;
        int64_t cards = 0;
        if (r->node_in) {
            for (int g = 0; g < s->ngpus; g++)
                cards += r->node_in[s->gpus[g].node] && s->gpus[g].allocatable;
        } else {
            cards = r->count;
        }
        t->rheld[i] = cards * 1000;
        t->trsv[r->tenant] += cards * 1000;
    }
    for (int i = 0; i < s->njobs; i++) { /* the charged work (charge() keeps it from now on) */
        const sch_job *j = &s->jobs[i];
        int ri = j->state != SCH_PENDING ? rsv_in_force(t, j) : -1;
        if (ri >= 0) t->rown[ri] += sch_demand(s, j, QD_GPU_MILLI);
    }
    for (int i = 0; i < s->nrsvs; i++)
        if (t->rheld[i] > 0) t->tridle[s->rsvs[i].tenant] += rsv_gap(t, i);
    return 0;
}

/* A running job, for marking in start order (its reservation's work first). */
typedef struct mark {
    int tenant; /* its domain (step 6c) */
    int inrsv; /* runs in a reservation of its tenant in force */
    int64_t start;
    const char *id;
    int job;
} mark;

static int mark_cmp(const void *a, const void *b) {
    const mark *x = a, *y = b;
    if (x->tenant != y->tenant) return x->tenant - y->tenant;
    if (x->inrsv != y->inrsv) return y->inrsv - x->inrsv;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return strcmp(x->id, y->id);
}

/*
 * Which running jobs are borrowed (share_mark: above their tenant's guarantee, counting in
 * start order, oldest first, the work in its reservations in force before the rest, against
 * its entitlement less what its reservations hold unused: step 7a) and what each tenant
 * borrows.  Only when a tenant has a guarantee; a tenant without one then borrows all it
 * runs (outside its reservations).  -1 when out of memory.
 */
static int mark_borrowed(st *t) {
    const sch_snapshot *s = t->s;
    if (!(t->guarantees = any_guarantee(s))) return 0;
    if (dom_init(t) || rsv_share_init(t) || parts_init(t)) return -1;
    for (int i = 0; i < s->njobs; i++) /* charge() keeps it from now on */
        if (s->jobs[i].state != SCH_PENDING)
            t->duse[dom_of(t, &s->jobs[i])] += sch_demand(s, &s->jobs[i], QD_GPU_MILLI);
    for (int g = 0; g < s->ngpus; g++) t->capacity += s->gpus[g].allocatable ? 1000 : 0;
    for (int d = 0; d < t->ndom; d++) t->held += held_by(t, d); /* charge() keeps it */
    size_t J = (size_t)s->njobs + 1, P = (size_t)s->nprojects + 2;
    t->borrowed = calloc(J, 1);
    t->tborrowed = calloc((size_t)s->ntenants + 1, sizeof *t->tborrowed);
    mark *m = malloc(sizeof *m * J);
    int64_t *dem = malloc(sizeof *dem * J), *parts = malloc(sizeof *parts * P),
            *used = malloc(sizeof *used * P);
    int *proj = malloc(sizeof *proj * J), *pidx = malloc(sizeof *pidx * P);
    unsigned char *out = malloc(J);
    int n = 0, rc = -1;
    if (!t->borrowed || !t->tborrowed || !m || !dem || !parts || !used || !proj || !pidx || !out)
        goto done;
    for (size_t p = 0; p < P; p++) pidx[p] = -1;
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        if (j->state == SCH_RUNNING)
            m[n++] = (mark){dom_of(t, j), rsv_in_force(t, j) >= 0, j->start_us, j->id, i};
    }
    qsort(m, (size_t)n, sizeof *m, mark_cmp);
    for (int lo = 0, hi; lo < n; lo = hi) {
        int dm = m[lo].tenant, k0 = lo, np = 0, own = dm < s->ntenants;
        for (hi = lo; hi < n && m[hi].tenant == dm; hi++) continue;
        for (; k0 < hi && m[k0].inrsv; k0++) t->borrowed[m[k0].job] = 0; /* its reservations' */
        int64_t present = 0;
        for (int k = k0; k < hi; k++) {
            const sch_job *j = &s->jobs[m[k].job];
            int p = j->project;
            dem[k - k0] = sch_demand(s, j, QD_GPU_MILLI);
            int64_t part = t->ppart[pix(t, p, dm)];
            if (part > 0 && pidx[p] < 0) {
                pidx[p] = np;
                parts[np++] = part;
                present += part;
            }
            proj[k - k0] = part > 0 ? pidx[p] : -1;
        }
        parts[np] = t->tparts[dm] - present; /* the idle projects' parts: not unassigned */
        int64_t g = gtee(t, dm), r = t->trsv && own ? t->trsv[dm] : 0;
        t->dborrowed[dm] = share_mark_parts(g > r ? g - r : 0, parts, np + 1, proj, dem, hi - k0,
                                            used, out);
        t->tborrowed[t->dten[dm]] += t->dborrowed[dm];
        for (int k = k0; k < hi; k++) {
            t->borrowed[m[k].job] = out[k - k0];
            pidx[s->jobs[m[k].job].project] = -1;
        }
    }
    rc = 0;
done:
    free(m);
    free(dem);
    free(parts);
    free(used);
    free(proj);
    free(pidx);
    free(out);
    return rc;
}

/*
 * Rule 2 of share.h for a job not charged yet: 1 when it stays within its tenant's guarantee
 * (or no tenant has one), or is borrowed and the capacity idle for borrowing covers it
 * (what every other tenant holds, or keeps while idle, is not lent; share_free_for);
 * otherwise 0 with the reason.  Its ceilings are admissible()'s.
 */
static int would_borrow(const st *t, const sch_job *j);

static int borrow_ok(const st *t, const sch_job *j, char *why, size_t n) {
    const sch_snapshot *s = t->s;
    int tn = s->projects[j->project].tenant;
    if (!would_borrow(t, j)) return 1; /* owned: its reservation's, its part, its guarantee */
    int dm = dom_of(t, j);
    int64_t need = sch_demand(s, j, QD_GPU_MILLI), use = owned_use(t, dm);
    /* what every other domain holds (t->held, kept by charge(), less dm's own part) */
    int64_t idle = t->capacity - (t->held - held_by(t, dm)) - use;
    if (idle >= need) return 1;
    char rsvd[160] = "", cls[52]; /* (dom_what: " for class " and 40 bytes of the name) */
    size_t at = 0;
    if (dm == tn && t->tridle && t->tridle[tn] > 0)
        at = (size_t)snprintf(rsvd, sizeof rsvd, " (%g of it held unused by its reservations)",
                              (double)t->tridle[tn] / 1000.0);
    if (t->ppart[pix(t, j->project, dm)] > 0 && at < sizeof rsvd)
        snprintf(rsvd + at, sizeof rsvd - at, " (project %s's part of it, %g GPUs, in use)",
                 s->projects[j->project].name, (double)t->ppart[pix(t, j->project, dm)] / 1000.0);
    else if (dm == tn && t->pdom && s->tenants[tn].quota.ngpool && at < sizeof rsvd)
        snprintf(rsvd + at, sizeof rsvd - at, " (and its guarantees in the pools open to it)");
    snprintf(why, n,
             "borrow_limit: tenant %s above its guarantee of %g GPUs%s%s borrows only idle "
             "capacity, %g GPUs idle to lend now (needs %g)",
             s->tenants[tn].name, (double)geff(t, dm) / 1000.0, dom_what(t, dm, cls, sizeof cls),
             rsvd, (double)(idle > 0 ? idle : 0) / 1000.0, (double)need / 1000.0);
    return 0;
}

/* Would j, charged already, be owned (its tenant's use within its guarantee)? */
static int owned_now(const st *t, const sch_job *j) {
    const sch_snapshot *s = t->s;
    int tn = s->projects[j->project].tenant, p = j->project;
    if (!t->guarantees) return 0;
    if (rsv_in_force(t, j) >= 0) return 1; /* its reservation's work (step 7a) */
    int dm = dom_of(t, j);
    /* within its project's part of its domain (the tenant's own, a class's or a pool's) */
    if (t->ppart[pix(t, p, dm)] > 0 && proj_spill(t, p, dm) == 0) return 1;
    if (dm == tn && s->tenants[tn].quota.guarantee == QUOTA_NONE && geff(t, tn) <= 0) return 0;
    return t->tspill[dm] <= free_part(t, dm);
}

/* Would j, not charged yet, be borrowed (its tenant's use with it above its guarantee)? */
static int would_borrow(const st *t, const sch_job *j) {
    const sch_snapshot *s = t->s;
    int tn = s->projects[j->project].tenant, p = j->project;
    if (!t->guarantees || rsv_in_force(t, j) >= 0) return 0;
    int64_t d = sch_demand(s, j, QD_GPU_MILLI), over = d;
    int dm = dom_of(t, j);
    size_t pi = pix(t, p, dm);
    if (t->ppart[pi] > 0) {
        over = share_spill(t->ppart[pi], t->pbase[pi] - (dm == tn ? t->prown[p] : 0), d);
        if (over == 0) return 0; /* within its project's part of its domain (step 6b) */
    }
    return t->tspill[dm] + over > free_part(t, dm);
}

/*
 * Step 6d: what admission gives job j, not charged yet, of a tenant with a guarantee in a
 * pool (t->jgp): the first pool, in pool order, with a guarantee of its tenant that is open
 * to it, has a card its class fits and where it would be owned; else the tenant's own
 * guarantee, kept to the pools without one of their own, if it would be owned there and such
 * a pool is open to it; else nothing (borrowed: anywhere).  A job of a class with a
 * guarantee of its own, or in a reservation in force, is given nothing (its domain is not a
 * pool's).
 */
static void assign_pool(st *t, const sch_job *j) {
    const sch_snapshot *s = t->s;
    if (!t->pdom) return;
    int ji = (int)(j - s->jobs), tn = s->projects[j->project].tenant, rest = 0, matching;
    const sch_class *c = &s->classes[j->cls];
    t->jgp[ji] = 0;
    if (!s->tenants[tn].quota.ngpool || rsv_in_force(t, j) >= 0 ||
        (t->cdom && t->cdom[(size_t)tn * s->nclasses + SCH_CLASS_BASE(s->classes, j->cls)] >= 0))
        return;
    (void)free_units(t, c, j->project, &matching); /* (fills fumatch: where its cards are) */
    const unsigned char *elig = &t->fumatch[(size_t)(c - s->classes) * (size_t)t->npools];
    for (int p = 0; p < s->npools; p++) {
        if (!elig[p] || !pool_open(s, c, j->project, p)) continue;
        if (t->pdom[(size_t)tn * (size_t)s->npools + (size_t)p] < 0) {
            rest = 1;
            continue;
        }
        t->jgp[ji] = p + 1;
        if (!would_borrow(t, j)) return;
    }
    t->jgp[ji] = SCH_GPOOL_REST;
    if (rest && !would_borrow(t, j)) return;
    t->jgp[ji] = 0;
}

/* The pools job j may be placed in now (t->jrestr, step 6d): what admission gave it, while
 * it would be owned there. */
static void restrict_to(st *t, const sch_job *j) {
    t->jrestr = t->jgp && j->state != SCH_RUNNING ? t->jgp[j - t->s->jobs] : 0;
}

/* The reason of a job given a pool or the pools without one (step 6d) that finds no place:
 * no_place_reason over them, and which. */
static void gpool_reason(st *t, const sch_job *j, int blocker, char *why, size_t n) {
    const sch_snapshot *s = t->s;
    char base[200];
    no_place_reason(t, j, blocker, base, sizeof base);
    if (t->jrestr > 0)
        snprintf(why, n, "%.110s (in pool %.40s: its tenant's guarantee there)", base,
                 s->pool_names[t->jrestr - 1]);
    else
        snprintf(why, n, "%.130s (in the pools without a guarantee of its tenant's own)", base);
}

/* Step 6a's key of tenant tn now (share_borrow_key over its use so far this round). */
static int64_t borrow_key(const st *t, int tn) {
    const sch_snapshot *s = t->s;
    const quota_set *q = &s->tenants[tn].quota;
    int64_t use = owned_use(t, tn), g = geff(t, tn);
    for (int d = s->ntenants; d < t->ndom; d++) /* its class guarantees' too (step 6c) */
        if (t->dten[d] == tn) {
            use += owned_use(t, d);
            g += geff(t, d);
        }
    share_tenant x = {g, use > g ? use : g, 0, q->weight >= 1 ? q->weight : 1, use, 0,
                      s->tenants[tn].recent > 0 ? s->tenants[tn].recent : 0};
    return share_borrow_key(&x, s->borrow_horizon_s > 0 ? s->borrow_horizon_s
                                                        : SHARE_HALF_LIFE_DEFAULT);
}

/*
 * The jobs step 6a set aside, in queue order, as one list per tenant: the next to try is
 * the head of highest priority, then of the least borrow key, then the first in the queue.
 */
typedef struct deferred {
    int *next;  /* [njobs]: the tenant's next set-aside job, -1 */
    int *head;  /* [ntenants] */
    int *tail;  /* [ntenants] */
    int *order; /* [njobs]: its place in the queue */
    int any;
} deferred;

static void defer_push(deferred *df, const sch_snapshot *s, int ji) {
    int tn = s->projects[s->jobs[ji].project].tenant;
    df->next[ji] = -1;
    if (df->tail[tn] < 0) df->head[tn] = ji;
    else df->next[df->tail[tn]] = ji;
    df->tail[tn] = ji;
    df->any = 1;
}

static int defer_pop(deferred *df, const st *t) {
    const sch_snapshot *s = t->s;
    int best = -1;
    int64_t bkey = 0;
    for (int tn = 0; tn < s->ntenants; tn++) {
        int ji = df->head[tn];
        if (ji < 0) continue;
        int64_t k = borrow_key(t, tn);
        if (best >= 0) {
            const sch_job *a = &s->jobs[ji], *b = &s->jobs[best];
            if (a->priority != b->priority) {
                if (a->priority < b->priority) continue;
            } else if (k != bkey) {
                if (k > bkey) continue;
            } else if (df->order[ji] > df->order[best]) {
                continue;
            }
        }
        best = ji;
        bkey = k;
    }
    if (best >= 0) {
        int tn = s->projects[s->jobs[best].project].tenant;
        df->head[tn] = df->next[best];
        if (df->head[tn] < 0) df->tail[tn] = -1;
    }
    return best;
}

/* ---- preemption ---- */

/* Is v past the reclaim cap (stopped reclaim_cap times within the window)? */
static int capped(const sch_snapshot *s, const sch_job *v) {
    return s->reclaim_cap > 0 && v->stops >= s->reclaim_cap;
}

/* "1h", "90m", "45s": a window for reasons. */
static void fmt_window(int64_t sec, char *out, size_t n) {
    if (sec > 0 && sec % 3600 == 0) snprintf(out, n, "%lldh", (long long)(sec / 3600));
    else if (sec > 0 && sec % 60 == 0) snprintf(out, n, "%lldm", (long long)(sec / 60));
    else snprintf(out, n, "%llds", (long long)(sec > 0 ? sec : 0));
}

typedef struct victim {
    int job;
    int64_t over; /* reclaim: its tenant's borrowing per weight (most over its share first) */
    int prio;
    int64_t start;
} victim;

static int victim_cmp(const void *a, const void *b) {
    const victim *x = a, *y = b;
    if (x->over != y->over) return x->over > y->over ? -1 : 1;
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    if (x->start != y->start) return x->start > y->start ? -1 : 1; /* newest first */
    return x->job - y->job;
}

/*
 * Find the fewest, lowest victims whose release lets j fit.  On success the
 * victims stay released (and uncharged), j is placed into `units`, and the
 * chosen victims (one at least) are listed in out[0..*nout).  On failure
 * (also when j fits with no victim) nothing changes.
 *
 * By priority (reclaim 0): running jobs of strictly lower priority that are
 * preemptible or borrowed (borrowed but past the reclaim cap: only when its class
 * makes it preemptible), lowest priority first, then newest (a job that
 * would be borrowed takes no other tenant's owned work).  Reclaim (1,
 * for a job its tenant's guarantee covers): borrowed running jobs of other
 * tenants whatever their priority, those of the tenants borrowing most per
 * weight first, then lowest priority, then newest, never one whose stop
 * takes its tenant below its guarantee, nor one past the reclaim cap (stops >= reclaim_cap;
 * reclaim 2 ignores the cap: what reclaim would do without it, for the reason).
 */
static int preempt_for(st *t, const sch_job *j, const unsigned char *gone, sch_unit *units,
                       int *out, int *nout, int reclaim) {
    const sch_snapshot *s = t->s;
    victim *cand = malloc(sizeof *cand * (size_t)(s->njobs ? s->njobs : 1));
    int nc = 0, nchosen = 0, ok = 0, me = s->projects[j->project].tenant;
    int borrower = t->guarantees && !owned_now(t, j);
    if (!cand) return -1;
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *v = &s->jobs[i];
        if (v->state != SCH_RUNNING || gone[i]) continue;
        if (t->jrestr) { /* given a pool (step 6d): only what runs there can make room */
            int there = 0;
            for (int k = 0; k < v->units && !there; k++)
                there = pool_allowed(t, &s->classes[j->cls], j->project,
                                     s->nodes[s->gpus[v->place[k].gpu[0]].node].pool);
            if (!there) continue;
        }
        int b = t->borrowed && t->borrowed[i], vt = s->projects[v->project].tenant;
        int64_t over = 0;
        if (reclaim) {
            /* a job given a pool (step 6d) takes back what is lent there: any work there of
             * a domain above its guarantee (the guard below keeps that domain at it; which of
             * its jobs is marked borrowed is only their start order) */
            if (!b && t->jrestr && vt != me && t->dborrowed[dom_of(t, v)] > 0) b = 1;
            /* a sibling project's borrowed work too: it spills over the parts (step 6b) */
            if (!b ||
                (vt == me && (v->project == j->project || dom_of(t, v) != dom_of(t, j) ||
                              !t->tparts[dom_of(t, j)])) ||
                (reclaim == 1 && capped(s, v)))
                continue;
            over = t->tborrowed[vt] * 1000 / (s->tenants[vt].quota.weight > 0
                                                  ? s->tenants[vt].quota.weight : 1);
        } else if ((!v->preemptible && (!b || capped(s, v))) || v->priority >= j->priority ||
                   (borrower && !b && vt != me)) {
            continue; /* (borrowed work never takes another tenant's owned work: it would
                         only be reclaimed) */
        }
        cand[nc++] = (victim){i, over, v->priority, v->start_us};
    }
    qsort(cand, (size_t)nc, sizeof *cand, victim_cmp);
    for (int i = 0; i < nc && !ok; i++) {
        const sch_job *v = &s->jobs[cand[i].job];
        if (reclaim) {
            int vt = s->projects[v->project].tenant, vp = v->project, vd = dom_of(t, v);
            int64_t d = sch_demand(s, v, QD_GPU_MILLI);
            if (vt == me ? t->pbase[pix(t, vp, vd)] - (vd == me ? t->prown[vp] : 0) - d <
                               t->ppart[pix(t, vp, vd)]
                         : owned_use(t, vd) - d < geff(t, vd))
                continue; /* it would take its tenant below its guarantee (its project below
                             its part; a class's guarantee below it) */
        }
        unplace_job(t, v, v->place);
        charge(t, v, -1);
        out[nchosen++] = cand[i].job;
        if (place_job(t, j, units) == 0) {
            unplace_job(t, j, units);
            ok = 1;
        }
    }
    if (!ok) {
        for (int i = nchosen - 1; i >= 0; i--) {
            const sch_job *v = &s->jobs[out[i]];
            retake_job(t, v);
            charge(t, v, +1);
        }
        free(cand);
        return -1;
    }
    /* give back every victim the place does not need (most important first) */
    for (int i = nchosen - 1; i >= 0; i--) {
        const sch_job *v = &s->jobs[out[i]];
        retake_job(t, v);
        charge(t, v, +1);
        if (place_job(t, j, units) == 0) {
            unplace_job(t, j, units);
            out[i] = -1; /* spared */
        } else {
            unplace_job(t, v, v->place);
            charge(t, v, -1);
        }
    }
    int m = 0;
    for (int i = 0; i < nchosen; i++)
        if (out[i] >= 0) out[m++] = out[i];
    *nout = m;
    if (m == 0) {
        /* it fits as things are: only a waiting job of higher priority keeps it (no jumping
         * it), and stopping nobody is no preemption (sched.h, step 5) */
        free(cand);
        return -1;
    }
    /* the place is reserved for j now */
    int rc = place_job(t, j, units);
    assert(rc == 0);
    free(cand);
    return rc;
}

/* Undo a preempt_for that succeeded: j leaves its place, its victims take theirs back. */
static void unpreempt(st *t, const sch_job *j, const sch_unit *units, const int *victims,
                      int nv) {
    const sch_snapshot *s = t->s;
    unplace_job(t, j, units);
    for (int i = 0; i < nv; i++) {
        const sch_job *v = &s->jobs[victims[i]];
        retake_job(t, v);
        charge(t, v, +1);
    }
}

/* ---- the round ---- */

static void st_free(st *t) {
    free(t->whole);
    free(t->shm);
    free(t->spct);
    free(t->slice);
    free(t->ncpu);
    free(t->nmem);
    free(t->puse);
    free(t->tuse);
    free(t->pcls);
    free(t->tcls);
    free(t->failgen);
    for (int i = 0; i < t->nbuilt; i++) {
        free(t->key[t->built[i]]);
        free(t->tree[t->built[i]]);
    }
    free(t->key);
    free(t->tree);
    free(t->built);
    free(t->porder);
    free(t->ppos);
    free(t->pstart);
    free(t->fuops);
    free(t->fuval);
    free(t->fumatch);
    free(t->pool_used);
    free(t->rc);
    free(t->wweight);
    free(t->memo);
    free(t->borrowed);
    free(t->tborrowed);
    free(t->dborrowed);
    free(t->cdom);
    free(t->dten);
    free(t->dcls);
    free(t->dpool);
    free(t->dslot);
    free(t->pdom);
    free(t->jgp);
    free(t->dg);
    free(t->dkept);
    free(t->duse);
    free(t->pbase);
    free(t->rheld);
    free(t->rown);
    free(t->trsv);
    free(t->tridle);
    free(t->ppart);
    free(t->prown);
    free(t->tparts);
    free(t->tspill);
    for (int i = 0; t->rslices && i < t->s->nrsvs; i++) free(t->rslices[i]);
    free(t->rslices);
    free(t->ruse);
    free(t->rpool);
    free(t->nver);
    free(t->gk_ver);
    free(t->gk_score);
    pack_workload_free(t->wl);
}

static int st_init(st *t, const sch_snapshot *s) {
    memset(t, 0, sizeof *t);
    t->s = s;
    size_t G = (size_t)s->ngpus + 1, N = (size_t)s->nnodes + 1, P = (size_t)s->nprojects + 1,
           T = (size_t)s->ntenants + 1, C = (size_t)s->nclasses + 1;
    t->whole = calloc(G, sizeof *t->whole);
    t->shm = calloc(G, sizeof *t->shm);
    t->spct = calloc(G, sizeof *t->spct);
    t->slice = calloc(G * SCH_MAX_SLICES, 1);
    t->ncpu = calloc(N, sizeof *t->ncpu);
    t->nmem = calloc(N, sizeof *t->nmem);
    t->puse = calloc(P * QD__N, sizeof *t->puse);
    t->tuse = calloc(T * QD__N, sizeof *t->tuse);
    t->pcls = calloc(P * C, sizeof *t->pcls);
    t->tcls = calloc(T * C, sizeof *t->tcls);
    t->failgen = calloc(C * P, sizeof *t->failgen);
    t->nver = calloc(N, sizeof *t->nver);
    t->gk_ver = calloc(N, sizeof *t->gk_ver);
    t->gk_score = calloc(N, sizeof *t->gk_score);
    t->gk_cls = -1;
    /* pools: as many as the snapshot names, or its nodes use */
    t->npools = s->npools;
    for (int n = 0; n < s->nnodes; n++)
        if (s->nodes[n].pool >= t->npools) t->npools = s->nodes[n].pool + 1;
    size_t NP = (size_t)t->npools + 1;
    for (t->M = 1; t->M < s->nnodes; t->M *= 2) {
    }
    t->key = calloc(C * 2, sizeof *t->key);
    t->tree = calloc(C * 2, sizeof *t->tree);
    t->built = calloc(C * 2, sizeof *t->built);
    t->porder = calloc(N, sizeof *t->porder);
    t->ppos = calloc(N, sizeof *t->ppos);
    t->pstart = calloc(NP + 1, sizeof *t->pstart);
    t->fuops = calloc(C, sizeof *t->fuops);
    t->fuval = calloc(C * NP, sizeof *t->fuval);
    t->fumatch = calloc(C * NP, sizeof *t->fumatch);
    t->pool_used = calloc(NP, sizeof *t->pool_used);
    /* (a small queue writes its reasons faster than it clears a cache) */
    t->rc = s->njobs >= 1024 ? calloc(RC_SLOTS, sizeof *t->rc) : NULL;
    t->wweight = calloc(C, sizeof *t->wweight);
    /* (a small cluster keys its nodes faster than it clears the table) */
    t->memo = s->nnodes >= 256 ? calloc(MEMO_SLOTS, sizeof *t->memo) : NULL;
    if ((s->nnodes >= 256 && !t->memo) || !t->wweight || (s->njobs >= 1024 && !t->rc) || !t->key || !t->tree || !t->built || !t->porder || !t->ppos || !t->pstart ||
        !t->pool_used || !t->fuops || !t->fuval || !t->fumatch || !t->whole || !t->shm || !t->spct || !t->slice || !t->ncpu || !t->nmem || !t->puse ||
        !t->tuse || !t->pcls || !t->tcls || !t->failgen || !t->nver || !t->gk_ver || !t->gk_score) {
        st_free(t);
        return -1;
    }
    /* nodes grouped by pool (a counting sort: node order within a pool) */
    for (int n = 0; n < s->nnodes; n++) t->pstart[s->nodes[n].pool + 1]++;
    for (int p = 0; p < t->npools; p++) t->pstart[p + 1] += t->pstart[p];
    for (int p = 0; p < t->npools; p++) t->pool_used[p] = t->pstart[p + 1] > t->pstart[p];
    {
        int *at = calloc(NP, sizeof *at);
        if (!at) {
            st_free(t);
            return -1;
        }
        for (int n = 0; n < s->nnodes; n++) {
            int p = s->nodes[n].pool, pos = t->pstart[p] + at[p]++;
            t->porder[pos] = n;
            t->ppos[n] = pos;
        }
        free(at);
    }
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        if (j->state == SCH_RUNNING) {
            const sch_class *c = &s->classes[j->cls];
            for (int k = 0; k < j->units; k++) take_unit(t, c, &j->place[k]);
        }
        if (j->state != SCH_PENDING) charge(t, j, +1);
    }
    if (mark_borrowed(t) || rsv_init(t)) {
        st_free(t);
        return -1;
    }
    t->norm = (pack_norm){1, 1};
    for (int n = 0; n < s->nnodes; n++) {
        int ng = s->nodes[n].ngpus;
        t->big_nodes |= ng > PACK_MAX_GPUS;
        if (ng > PACK_MAX_GPUS) ng = PACK_MAX_GPUS;
        if ((int64_t)s->nodes[n].cpus * 1000 > t->norm.cpu_max)
            t->norm.cpu_max = (int64_t)s->nodes[n].cpus * 1000;
        if ((int64_t)ng * PACK_MILLI > t->norm.gpu_max) t->norm.gpu_max = (int64_t)ng * PACK_MILLI;
    }
    t->gen = 0;
    cluster_supply(s, &t->supply);
    build_workload(t);
    return 0;
}

static sch_decision *add(sch_result *r, int *cap, int job, int action) {
    if (r->n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        sch_decision *nd = realloc(r->d, sizeof *nd * (size_t)nc);
        if (!nd) return NULL;
        r->d = nd;
        *cap = nc;
    }
    sch_decision *d = &r->d[r->n++];
    memset(d, 0, sizeof *d);
    d->job = job;
    d->action = action;
    d->by = -1;
    return d;
}

int sch_round(const sch_snapshot *s, sch_result *r) {
    st t;
    int cap = 0, rc = -1;
    memset(r, 0, sizeof *r);
    if (st_init(&t, s)) return -1;
    double *share = calloc((size_t)s->ntenants + 1, sizeof *share);
    int *q = malloc(sizeof *q * (size_t)(s->njobs + 1));
    int *victims = malloc(sizeof *victims * (size_t)(s->njobs + 1));
    unsigned char *gone = calloc((size_t)s->njobs + 1, 1);
    /* per class: the highest-priority waiting admitted job, for "waiting behind" */
    int *waiting = malloc(sizeof *waiting * (size_t)(s->nclasses + 1));
    deferred df = {0};
    if (!share || !q || !victims || !gone || !waiting) goto out;
    if (t.guarantees) {
        size_t J = (size_t)s->njobs + 1, T = (size_t)s->ntenants + 1;
        df.next = malloc(sizeof *df.next * J);
        df.order = malloc(sizeof *df.order * J);
        df.head = malloc(sizeof *df.head * T);
        df.tail = malloc(sizeof *df.tail * T);
        r->borrowed = malloc(sizeof *r->borrowed * T);
        r->pborrowed = calloc(T * (size_t)(s->npools > 0 ? s->npools : 1), sizeof *r->pborrowed);
        if (!df.next || !df.order || !df.head || !df.tail || !r->borrowed || !r->pborrowed)
            goto out;
        for (int i = 0; i < s->ntenants; i++) {
            df.head[i] = df.tail[i] = -1;
            r->borrowed[i] = t.tborrowed[i];
        }
        for (int i = 0; i < s->njobs; i++) { /* per pool, for fair use's half-life per pool */
            const sch_job *j = &s->jobs[i];
            if (j->state != SCH_RUNNING || !t.borrowed[i] || j->units < 1) continue;
            int pl = s->nodes[s->gpus[j->place[0].gpu[0]].node].pool;
            if (pl >= 0 && pl < s->npools)
                r->pborrowed[(size_t)s->projects[j->project].tenant * (size_t)s->npools +
                             (size_t)pl] += sch_demand(s, j, QD_GPU_MILLI);
        }
    }
    for (int c = 0; c < s->nclasses; c++) waiting[c] = -1;
    shares(&t, share);
    int nq = 0;
    for (int i = 0; i < s->njobs; i++)
        if (s->jobs[i].state != SCH_RUNNING) q[nq++] = i;
    if (sort_queue(s, share, q, nq)) goto out;
    if (nq && !(r->d = malloc(sizeof *r->d * (size_t)nq))) goto out; /* one per queued job */
    cap = nq;
    for (int qi = 0;;) {
        /* the queue in order, then what step 6a set aside, in fair order */
        int ji, later = qi >= nq;
        if (!later) ji = q[qi++];
        else if (!df.any || (ji = defer_pop(&df, &t)) < 0) break;
        const sch_job *j = &s->jobs[ji];
        char why[200];
        int admitted = j->state == SCH_ADMITTED;
        t.jrestr = 0;
        if (!admitted) {
            int hit;
            assign_pool(&t, j); /* step 6d */
            rcache *e = rc_find(&t, 0, j, -1, t.charges, &hit);
            if (!hit && !later && would_borrow(&t, j) && admissible(&t, j, why, sizeof why)) {
                df.order[ji] = qi;
                defer_push(&df, s, ji); /* borrowers after the owners, in fair order */
                continue;
            }
            if (hit || !admissible(&t, j, why, sizeof why) || !borrow_ok(&t, j, why, sizeof why)) {
                if (!hit) rc_keep(e, 0, j, -1, t.charges, why);
                sch_decision *d = add(r, &cap, ji, SCH_DO_NOTHING);
                if (!d) goto out;
                memcpy(d->reason, hit ? e->reason : why, sizeof d->reason);
                continue;
            }
            charge(&t, j, +1);
        }
        sch_unit *units = calloc((size_t)j->units, sizeof *units);
        if (!units) goto out;
        /* a lower-priority job does not jump a waiting higher-priority one of its class (a
         * credited one, tried first, blocks only the jobs below its own priority) */
        int blocker = waiting[j->cls];
        int may_jump = blocker < 0 || s->jobs[blocker].priority <= j->priority;
        t.rsv_code = 0;
        t.rsv_block = -1;
        restrict_to(&t, j);
        if (may_jump && place_job(&t, j, units) == 0) {
            sch_decision *d = add(r, &cap, ji, SCH_DO_PLACE);
            if (!d) {
                free(units);
                goto out;
            }
            d->units = units;
            if (t.pdom && units[0].gpu[0] >= 0) { /* its domain now: the pool it runs in */
                int pl = s->nodes[s->gpus[units[0].gpu[0]].node].pool;
                if (t.jgp[ji] != pl + 1) {
                    charge(&t, j, -1);
                    t.jgp[ji] = pl + 1;
                    charge(&t, j, +1);
                }
            }
            d->borrowed = t.guarantees && !owned_now(&t, j);
            snprintf(d->reason, sizeof d->reason, "placed");
            r->placed++;
            continue;
        }
        /* a reservation kept it from a place that would have fit (or it waits for its own) */
        int rsv_code = t.rsv_code, rsv_block = t.rsv_block;
        int nv = 0, reclaim = 0, owned = owned_now(&t, j);
        /* an owned job takes its tenant's lent guarantee back (step 6), whatever it may
         * preempt; otherwise a job that may preempt stops lower-priority work (step 5) */
        if ((owned && (reclaim = 1, preempt_for(&t, j, gone, units, victims, &nv, 1) == 0)) ||
            (j->may_preempt && (reclaim = 0, preempt_for(&t, j, gone, units, victims, &nv, 0) == 0))) {
            free(units); /* reserved now; bound once the victims have stopped */
            sch_decision *d = add(r, &cap, ji, SCH_DO_WAIT_PREEMPT);
            if (!d) goto out;
            d->reclaim = reclaim;
            d->gpool = t.jgp ? t.jgp[ji] : 0;
            if (reclaim)
                snprintf(d->reason, sizeof d->reason,
                         "waiting_for_reclaim: %d borrowed job%s being stopped to return tenant "
                         "%s's guarantee",
                         nv, nv == 1 ? "" : "s", s->tenants[s->projects[j->project].tenant].name);
            else
                snprintf(d->reason, sizeof d->reason,
                         "waiting_for_preemption: %d lower-priority job%s being stopped", nv,
                         nv == 1 ? "" : "s");
            for (int v = 0; v < nv; v++) {
                const sch_job *vj = &s->jobs[victims[v]];
                int vt = s->projects[vj->project].tenant;
                char cls[52]; /* (dom_what) */
                gone[victims[v]] = 1;
                sch_decision *dv = add(r, &cap, victims[v], SCH_DO_PREEMPT);
                if (!dv) goto out;
                dv->by = ji;
                dv->reclaim = reclaim;
                dv->borrowed = t.borrowed && t.borrowed[victims[v]];
                int same = vt == s->projects[j->project].tenant;
                if (reclaim && same)
                    snprintf(dv->reason, sizeof dv->reason,
                             "reclaimed: it ran above project %s's part of tenant %s's guarantee, "
                             "on a part of it another project of the tenant takes back",
                             s->projects[vj->project].name, s->tenants[vt].name);
                else if (reclaim)
                    snprintf(dv->reason, sizeof dv->reason,
                             "reclaimed: it ran on capacity borrowed above tenant %s's guarantee "
                             "of %g GPUs%s, which another tenant's guarantee takes back",
                             s->tenants[vt].name, (double)geff(&t, dom_of(&t, vj)) / 1000.0,
                             dom_what(&t, dom_of(&t, vj), cls, sizeof cls));
                else
                    snprintf(dv->reason, sizeof dv->reason, "preempted by %s%s (priority %d > %d)%s",
                             same ? "job " : "a job of another tenant", same ? j->id : "",
                             j->priority, vj->priority, dv->borrowed ? ", borrowed" : "");
                r->preempted++;
            }
            continue;
        }
        /* would reclaim have freed a place but for the cap?  Then that is why it waits (the
         * capped jobs stay; nothing is stopped) */
        int ncapped = 0;
        if (owned && s->reclaim_cap > 0 &&
            preempt_for(&t, j, gone, units, victims, &nv, 2) == 0) {
            for (int v = 0; v < nv; v++) ncapped += capped(s, &s->jobs[victims[v]]);
            unpreempt(&t, j, units, victims, nv);
        }
        free(units);
        sch_decision *d = add(r, &cap, ji, admitted ? SCH_DO_NOTHING : SCH_DO_ADMIT);
        if (!d) goto out;
        d->gpool = t.jgp ? t.jgp[ji] : 0;
        /* the reason is written after the round, against its final state */
        d->by = may_jump ? -1 : blocker;
        d->reason[0] = '\0';
        if (rsv_code && rsv_block >= 0) {
            d->rsv = rsv_block + 1;
            d->rsv_code = rsv_code;
        }
        if (ncapped) {
            char win[32];
            fmt_window(s->reclaim_window_s, win, sizeof win);
            d->by = -1;
            d->capped = ncapped;
            snprintf(d->reason, sizeof d->reason,
                     "reclaim_capped: tenant %s's guarantee is lent to %d borrowed job%s "
                     "preempted at least %d times in the last %s, which reclaim no longer stops",
                     s->tenants[s->projects[j->project].tenant].name, ncapped,
                     ncapped == 1 ? "" : "s", s->reclaim_cap, win);
        }
        if (waiting[j->cls] < 0 || s->jobs[waiting[j->cls]].priority < j->priority)
            waiting[j->cls] = ji;
    }
    t.jrestr = 0;
    for (int i = 0; i < r->n; i++) {
        sch_decision *d = &r->d[i];
        if (d->reason[0] || d->action == SCH_DO_PREEMPT) continue;
        if (d->rsv && d->by < 0) { /* (a reason of its own: never cached) */
            rsv_reason(&t, &s->jobs[d->job], d->rsv - 1, d->rsv_code, d->reason, sizeof d->reason);
            continue;
        }
        restrict_to(&t, &s->jobs[d->job]);
        if (t.jrestr) { /* (given a pool, step 6d: a reason of its own, never cached) */
            gpool_reason(&t, &s->jobs[d->job], d->by, d->reason, sizeof d->reason);
            t.jrestr = 0;
            d->by = -1;
            continue;
        }
        int hit;
        rcache *e = rc_find(&t, 1, &s->jobs[d->job], d->by, t.ops, &hit);
        if (!hit) {
            no_place_reason(&t, &s->jobs[d->job], d->by, d->reason, sizeof d->reason);
            rc_keep(e, 1, &s->jobs[d->job], d->by, t.ops, d->reason);
        } else {
            memcpy(d->reason, e->reason, sizeof d->reason);
        }
        d->by = -1;
    }
    rc = t.oom ? -1 : 0;
out:
    if (rc) sch_result_free(r);
    free(df.next);
    free(df.order);
    free(df.head);
    free(df.tail);
    free(share);
    free(q);
    free(victims);
    free(gone);
    free(waiting);
    st_free(&t);
    return rc;
}

/* ---- a round after one change (sched.h: sch_delta) ---- */

struct sch_delta {
    st t;
    int nnodes, ngpus, nclasses, nprojects, ntenants, npools; /* the tables it was built for */
};

int sch_delta_new(const sch_snapshot *s, sch_delta **out) {
    *out = NULL;
    sch_delta *d = calloc(1, sizeof *d);
    if (!d) return -1;
    if (st_init(&d->t, s)) {
        free(d);
        return -1;
    }
    d->nnodes = s->nnodes;
    d->ngpus = s->ngpus;
    d->nclasses = s->nclasses;
    d->nprojects = s->nprojects;
    d->ntenants = s->ntenants;
    d->npools = s->npools;
    *out = d;
    return 0;
}

void sch_delta_free(sch_delta *d) {
    if (!d) return;
    st_free(&d->t);
    free(d);
}

/* Point the state at the next snapshot (same tables, other jobs); refresh the typical shapes
 * when the queue's changed (FGD keys depend on them).  0, 1 (tables differ) or -1. */
static int delta_follow(sch_delta *d, const sch_snapshot *s) {
    st *t = &d->t;
    if (s->nnodes != d->nnodes || s->ngpus != d->ngpus || s->nclasses != d->nclasses ||
        s->nprojects != d->nprojects || s->ntenants != d->ntenants || s->npools != d->npools)
        return 1;
    t->s = s;
    int64_t *w = calloc((size_t)s->nclasses + 1, sizeof *w);
    if (!w) return -1;
    queue_weights(s, w);
    int same = memcmp(w, t->wweight, sizeof *w * (size_t)s->nclasses) == 0;
    free(w);
    if (same) return 0;
    /* new shapes: drop the FGD trees (rebuilt on first use) and the workload */
    int m = 0;
    for (int b = 0; b < t->nbuilt; b++) {
        int idx = t->built[b];
        if (idx % 2 == KEY_FGD) {
            free(t->key[idx]);
            free(t->tree[idx]);
            t->key[idx] = NULL;
            t->tree[idx] = NULL;
        } else {
            t->built[m++] = idx;
        }
    }
    t->nbuilt = m;
    pack_workload_free(t->wl);
    t->wl = NULL;
    build_workload(t);
    return 0;
}

/* The first waiting job of class c before job `ji` in the queue order: admitted in the
 * snapshot and not placed now (placed[]), or admitted now and unplaced (extra[]). */
static int first_waiting(const st *t, const double *share, int c, const unsigned char *placed,
                         const int *extra, int nextra) {
    const sch_snapshot *s = t->s;
    int best = -1;
    qkey kb = {0}, k;
    for (int i = 0; i < s->njobs + nextra; i++) {
        int ji = i < s->njobs ? i : extra[i - s->njobs];
        const sch_job *j = &s->jobs[ji];
        if (j->cls != c) continue;
        if (i < s->njobs && (j->state != SCH_ADMITTED || (placed && placed[ji]))) continue;
        k = (qkey){j->state == SCH_ADMITTED && j->credited, j->priority,
                   share[s->projects[j->project].tenant], j->submit_us, j->id, ji};
        if (best < 0 || q_before(&k, &kb)) {
            best = ji;
            kb = k;
        }
    }
    return best;
}

/*
 * The loop of sch_round over the jobs that may change (q, in queue order).  waitprio[c]: the
 * highest priority of a job of class c that waits ahead of them (INT32_MIN: none).  Decisions
 * that change something (placed, admitted) go to r.  0, or -1 when out of memory.
 */
static int delta_run(st *t, const double *share, const int *q, int nq, int *waitprio,
                     unsigned char *placed, sch_result *r) {
    const sch_snapshot *s = t->s;
    int cap = 0, nextra = 0, rc = -1;
    int *extra = malloc(sizeof *extra * (size_t)(nq + 1)); /* admitted now, not placed */
    if (!extra) goto out;
    for (int qi = 0; qi < nq; qi++) {
        int ji = q[qi];
        const sch_job *j = &s->jobs[ji];
        char why[200];
        int admitted = j->state == SCH_ADMITTED;
        if (!admitted) {
            if (!admissible(t, j, why, sizeof why)) continue; /* stays as it was */
            charge(t, j, +1);
        }
        sch_unit *units = calloc((size_t)j->units, sizeof *units);
        if (!units) goto out;
        int may_jump = waitprio[j->cls] <= j->priority;
        if (may_jump && place_job(t, j, units) == 0) {
            sch_decision *d = add(r, &cap, ji, SCH_DO_PLACE);
            if (!d) {
                free(units);
                goto out;
            }
            d->units = units;
            snprintf(d->reason, sizeof d->reason, "placed");
            r->placed++;
            if (placed) placed[ji] = 1;
            continue;
        }
        free(units);
        if (waitprio[j->cls] < j->priority) waitprio[j->cls] = j->priority;
        if (!admitted) {
            sch_decision *d = add(r, &cap, ji, SCH_DO_ADMIT);
            if (!d) goto out;
            d->by = may_jump ? -1 : -2; /* -2: name the blocker below */
            extra[nextra++] = ji;
        }
    }
    /* reasons against the final state, as sch_round writes them */
    for (int i = 0; i < r->n; i++) {
        sch_decision *d = &r->d[i];
        if (d->action != SCH_DO_ADMIT) continue;
        int by = d->by == -2 ? first_waiting(t, share, s->jobs[d->job].cls, placed, extra, nextra) : -1;
        no_place_reason(t, &s->jobs[d->job], by, d->reason, sizeof d->reason);
        d->by = -1;
    }
    rc = t->oom ? -1 : 0;
out:
    free(extra);
    return rc;
}

int sch_delta_submit(sch_delta *d, const sch_snapshot *s, int job, sch_result *out) {
    memset(out, 0, sizeof *out);
    if (job < 0 || job >= s->njobs || s->jobs[job].state != SCH_PENDING || s->jobs[job].may_preempt ||
        s->jobs[job].nodes > 0 || any_guarantee(s) || s->nrsvs > 0)
        return 1; /* guarantees: borrowing and reclaim weigh every tenant; reservations ask
                   * every node per job; a job that spans nodes: a full round */
    for (int i = 0; i < s->njobs; i++)
        if (s->jobs[i].state == SCH_ADMITTED && s->jobs[i].credited)
            return 1; /* a credited job goes first, whatever its class: a full round */
    int rc = delta_follow(d, s);
    if (rc) return rc;
    st *t = &d->t;
    const sch_job *j = &s->jobs[job];
    double *share = calloc((size_t)s->ntenants + 1, sizeof *share);
    int *waitprio = malloc(sizeof *waitprio * (size_t)(s->nclasses + 1));
    if (!share || !waitprio) {
        free(share);
        free(waitprio);
        return -1;
    }
    shares(t, share);
    for (int c = 0; c < s->nclasses; c++) waitprio[c] = INT32_MIN;
    for (int i = 0; i < s->njobs; i++)
        if (s->jobs[i].state == SCH_ADMITTED && s->jobs[i].cls == j->cls &&
            s->jobs[i].priority > waitprio[j->cls])
            waitprio[j->cls] = s->jobs[i].priority;
    int q[1] = {job};
    rc = delta_run(t, share, q, 1, waitprio, NULL, out);
    if (rc == 0 && out->n == 0) {
        /* not admissible: the reason a full round gives it */
        int cap = 0;
        sch_decision *dd = add(out, &cap, job, SCH_DO_NOTHING);
        if (!dd) rc = -1;
        else (void)admissible(t, j, dd->reason, sizeof dd->reason);
    }
    if (rc) sch_result_free(out);
    free(share);
    free(waitprio);
    return rc;
}

int sch_delta_exit(sch_delta *d, const sch_snapshot *s, const sch_job *gone, sch_result *out) {
    memset(out, 0, sizeof *out);
    if (!gone || gone->state != SCH_RUNNING || !gone->place || gone->nodes > 0 ||
        any_guarantee(s) || s->nrsvs > 0)
        return 1; /* (a job that spans nodes: a full round) */
    st *t = &d->t;
    if (gone->cls < 0 || gone->cls >= s->nclasses || gone->project < 0 ||
        gone->project >= s->nprojects)
        return 1;
    /* the classes a unit of which fits on a node it frees, once freed (any other node only
     * lost room since their jobs last failed), and the tenant whose quota it frees */
    int tenant = s->projects[gone->project].tenant;
    unsigned char *uses = calloc((size_t)s->nclasses + 1, 1);
    if (!uses) return -1;
    {
        const sch_class *c = &s->classes[gone->cls];
        for (int k = 0; k < gone->units; k++) release_unit(t, c, &gone->place[k]);
        for (int k = 0; k < gone->units; k++) {
            int node = s->gpus[gone->place[k].gpu[0]].node;
            for (int ci = 0; ci < s->nclasses; ci++) {
                sch_unit u;
                uses[ci] |= best_on_node(t, &s->classes[ci], node, &u) >= 0;
            }
        }
        for (int k = 0; k < gone->units; k++) take_unit(t, c, &gone->place[k]);
    }
    /* the jobs that may move: admitted ones of those classes, queued ones of that tenant */
    int *q = malloc(sizeof *q * (size_t)(s->njobs + 1));
    int *waitprio = malloc(sizeof *waitprio * (size_t)(s->nclasses + 1));
    double *share = calloc((size_t)s->ntenants + 1, sizeof *share);
    unsigned char *placed = calloc((size_t)s->njobs + 1, 1);
    int nq = 0, rc = -1;
    if (!q || !waitprio || !share || !placed) goto out;
    for (int c = 0; c < s->nclasses; c++) waitprio[c] = INT32_MIN;
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        if (j->state == SCH_RUNNING) continue;
        int cand = (j->state == SCH_ADMITTED && uses[j->cls]) ||
                   (j->state == SCH_PENDING && s->projects[j->project].tenant == tenant);
        if ((cand && (j->may_preempt || j->nodes > 0)) || (j->state == SCH_ADMITTED && j->credited)) {
            rc = 1; /* preemption, a job credited for its victims, or one that spans nodes: a
                       full round */
            goto out;
        }
        if (cand) q[nq++] = i;
        else if (j->state == SCH_ADMITTED && j->priority > waitprio[j->cls])
            waitprio[j->cls] = j->priority; /* waits ahead of (or behind) them, unchanged */
    }
    if ((rc = delta_follow(d, s)) != 0) goto out;
    rc = -1;
    {
        const sch_class *c = &s->classes[gone->cls];
        for (int k = 0; k < gone->units; k++) release_unit(t, c, &gone->place[k]);
        charge(t, gone, -1);
    }
    shares(t, share);
    if (sort_queue(s, share, q, nq)) goto out;
    rc = delta_run(t, share, q, nq, waitprio, placed, out);
out:
    if (rc) sch_result_free(out);
    free(uses);
    free(q);
    free(waitprio);
    free(share);
    free(placed);
    return rc;
}

void sch_result_free(sch_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) free(r->d[i].units);
    free(r->d);
    free(r->borrowed);
    free(r->pborrowed);
    memset(r, 0, sizeof *r);
}

int sch_check(const sch_snapshot *s, const sch_result *r, char *why, size_t n) {
    const sch_decision **byjob = calloc((size_t)s->njobs + 1, sizeof *byjob);
    int *whole = calloc((size_t)s->ngpus + 1, sizeof *whole);
    int *shm = calloc((size_t)s->ngpus + 1, sizeof *shm), *spct = calloc((size_t)s->ngpus + 1, sizeof *spct);
    unsigned char *sl = calloc((size_t)(s->ngpus + 1) * SCH_MAX_SLICES, 1);
    int *cpu = calloc((size_t)s->nnodes + 1, sizeof *cpu), *mem = calloc((size_t)s->nnodes + 1, sizeof *mem);
    int64_t *pu = calloc((size_t)(s->nprojects + 1) * QD__N, sizeof *pu);
    int64_t *tu = calloc((size_t)(s->ntenants + 1) * QD__N, sizeof *tu);
    int bad = -1;
    if (!byjob || !whole || !shm || !spct || !sl || !cpu || !mem || !pu || !tu) {
        snprintf(why, n, "out of memory");
        goto out;
    }
    for (int i = 0; i < r->n; i++) byjob[r->d[i].job] = &r->d[i];
    for (int i = 0; i < s->njobs; i++) {
        const sch_job *j = &s->jobs[i];
        const sch_decision *d = byjob[i];
        const sch_unit *place = NULL;
        int holds_quota = j->state != SCH_PENDING;
        if (j->state == SCH_RUNNING && !(d && d->action == SCH_DO_PREEMPT)) place = j->place;
        if (d && d->action == SCH_DO_PLACE) place = d->units;
        if (d && (d->action == SCH_DO_ADMIT || d->action == SCH_DO_PLACE ||
                  d->action == SCH_DO_WAIT_PREEMPT))
            holds_quota = 1;
        if (d && d->action == SCH_DO_PREEMPT) holds_quota = 0;
        if (holds_quota) {
            int p = j->project, tn = s->projects[p].tenant;
            for (int dd = 0; dd < QD__N; dd++) {
                pu[(size_t)p * QD__N + dd] += sch_demand(s, j, dd);
                tu[(size_t)tn * QD__N + dd] += sch_demand(s, j, dd);
            }
        }
        if (!place) continue;
        const sch_class *c = &s->classes[j->cls];
        int fresh = d && d->action == SCH_DO_PLACE, vendor = s->gpus[place[0].gpu[0]].vendor;
        for (int k = 0; k < j->units; k++) {
            const sch_unit *u = &place[k];
            int node = s->gpus[u->gpu[0]].node;
            /* a new placement: only cards the class's rules accept, all of one vendor */
            for (int m = 0; fresh && m < (c->form == SCH_WHOLE ? c->gpus : 1); m++) {
                int g = u->gpu[m];
                if ((c->gpu_ok && !c->gpu_ok[g]) || s->gpus[g].vendor != vendor) {
                    snprintf(why, n, "job %s: placed on GPU %d that %s", j->id, g,
                             s->gpus[g].vendor != vendor ? "mixes vendors"
                                                         : "fails the class's rules");
                    goto out;
                }
            }
            cpu[node] += c->cpus;
            mem[node] += c->mem_gib;
            if (c->form == SCH_WHOLE) {
                for (int m = 0; m < c->gpus; m++) {
                    int g = u->gpu[m];
                    if (s->gpus[g].node != node) {
                        snprintf(why, n, "job %s: a unit spans nodes", j->id);
                        goto out;
                    }
                    if (whole[g]++ || shm[g] || s->gpus[g].mode != SCH_WHOLE) {
                        snprintf(why, n, "GPU %d over-committed (job %s)", g, j->id);
                        goto out;
                    }
                }
            } else if (c->form == SCH_MIG) {
                if (sl[(size_t)u->gpu[0] * SCH_MAX_SLICES + u->slice]++) {
                    snprintf(why, n, "MIG slice %d/%d over-committed (job %s)", u->gpu[0], u->slice, j->id);
                    goto out;
                }
            } else {
                shm[u->gpu[0]] += c->shared_mem_gib;
                spct[u->gpu[0]] += c->shared_pct;
                if (shm[u->gpu[0]] > s->gpus[u->gpu[0]].mem_gib || spct[u->gpu[0]] > 100 || whole[u->gpu[0]]) {
                    snprintf(why, n, "shared GPU %d over-committed (job %s)", u->gpu[0], j->id);
                    goto out;
                }
            }
            if (cpu[node] > s->nodes[node].cpus || mem[node] > s->nodes[node].mem_gib) {
                snprintf(why, n, "node %d over-committed (job %s)", node, j->id);
                goto out;
            }
        }
        /* a job that spans nodes, placed now: K units on each of N distinct nodes, rank by
         * rank, ranks in node order */
        if (fresh && j->nodes > 0) {
            int N = j->nodes, K = j->units / N, prev = -1;
            if (N * K != j->units) {
                snprintf(why, n, "job %s: %d units do not split over %d nodes", j->id, j->units, N);
                goto out;
            }
            for (int rk = 0; rk < N; rk++) {
                int node = s->gpus[place[rk * K].gpu[0]].node;
                for (int k = 1; k < K; k++)
                    if (s->gpus[place[rk * K + k].gpu[0]].node != node) {
                        snprintf(why, n, "job %s: rank %d spans nodes", j->id, rk);
                        goto out;
                    }
                if (node <= prev) {
                    snprintf(why, n, "job %s: rank %d shares a node or is out of order", j->id, rk);
                    goto out;
                }
                prev = node;
            }
        }
    }
    for (int p = 0; p < s->nprojects; p++)
        for (int d = 0; d < QD__N; d++) {
            int64_t lim = s->projects[p].quota.v[d];
            if (d != QD_CARD_HOURS && lim != QUOTA_NONE && pu[(size_t)p * QD__N + d] > lim) {
                snprintf(why, n, "project %s exceeds its %s ceiling", s->projects[p].name, quota_dim_name(d));
                goto out;
            }
        }
    for (int tn = 0; tn < s->ntenants; tn++)
        for (int d = 0; d < QD__N; d++) {
            int64_t lim = s->tenants[tn].quota.v[d];
            if (d != QD_CARD_HOURS && lim != QUOTA_NONE && tu[(size_t)tn * QD__N + d] > lim) {
                snprintf(why, n, "tenant %s exceeds its %s ceiling", s->tenants[tn].name, quota_dim_name(d));
                goto out;
            }
        }
    bad = 0;
out:
    free(byjob);
    free(whole);
    free(shm);
    free(spct);
    free(sl);
    free(cpu);
    free(mem);
    free(pu);
    free(tu);
    return bad;
}
