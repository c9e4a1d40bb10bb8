/*
 * sched.h - the scheduler: a snapshot of the cluster and the queue in,
 * decisions out (pure, deterministic, no I/O).
 *
 * One round:
 *   1. Running jobs hold what their placements say; admitted jobs hold quota.
 *   2. Pending jobs are ordered by priority (high first), then the tenant's
 *      dominant-resource share of its quota (low first), then submission time.
 *   3. Each is admitted only if every ceiling it touches (project and tenant,
 *      every dimension, its class, card-hours this month) still has room;
 *      otherwise it stays queued with the exact reason.
 *   4. An admitted job is placed all units or none (gang): only allocatable
 *      GPUs of a compatible model, in a pool its tenant may use, whole cards /
 *      MIG slices / shared slices per its class, a multi-GPU unit on one node
 *      (same NUMA node or NVLink group when the class asks), the node's CPUs
 *      and memory too.  Among places that fit, whole cards and shared slices
 *      go where pack's gpupool policy puts them (pack.h: the least rise of
 *      the cluster's expected fragmentation for this round's queue of job
 *      shapes, then its tie-break; the same pack_node_key the openb bench
 *      ranks nodes by), MIG slices to the tightest fit (the fullest card).
 *   4a. A job that spans nodes (sch_job.nodes = N, K = units / N units per
 *      node: `job submit --nodes N --units-per-node K`) is placed the same
 *      way, all of it or nothing, on N distinct nodes each taking K units
 *      (the tightest fit on each, as above): among the nodes that can take
 *      K units now, N of one rack when a rack has that many (the rack with
 *      the fewest such nodes that still has N: best fit, larger racks stay
 *      whole), else N of one switch (likewise), else the fewest racks (the
 *      largest first, of equal ones those of the larger switch); within the
 *      group the tightest nodes.  Rank r is the r-th chosen node in node order.  It is never
 *      partly placed: no unit of it holds a card until all of them do.
 *   5. If it cannot be placed and may preempt, the fewest, lowest-priority,
 *      newest preemptible jobs of strictly lower priority that free a fitting
 *      place are chosen (at least one: a free place it may not take because a
 *      job of higher priority waits for its class is not a reason to stop
 *      anyone); their resources are reserved for it and it waits for them to
 *      stop.  Strictly lower priority only: two jobs can never preempt each
 *      other in a loop.  What the victims release is the preemptor's: in the
 *      next rounds a credited job (sch_job.credited) is tried before every job
 *      that is not, so the jobs ahead of it that may not preempt cannot take
 *      it and make it stop one more victim each round.  A credited job that
 *      still finds no place (the freed cards went unhealthy, say) is a job
 *      like any other again.
 *   6. Guarantees (share.h; a tenant's quota "guaranteed_gpus"): a running
 *      job of a tenant with a guarantee is BORROWED when its tenant's GPU use,
 *      counted in start order up to and with it, exceeds the guarantee.
 *      Borrowed work is preemptible by priority whatever its class says, and
 *      a job that would be borrowed preempts no other tenant's owned work.  A
 *      job that would be borrowed is admitted only while the capacity idle
 *      for borrowing covers it (others' use, or their idle kept part, is not
 *      lent).  A job its tenant's guarantee covers (owned) that finds no
 *      place reclaims: borrowed running jobs of other tenants are stopped
 *      (most borrowing per weight first, then lowest priority, then newest;
 *      never one whose stop takes its tenant below its guarantee) and it is
 *      credited for them as in step 5.  Only owned work reclaims, and only
 *      borrowed work is reclaimed, so no reclaim ever feeds another.  A job
 *      stopped (by preemption or reclaim) reclaim_cap times within the window
 *      (sch_job.stops) is never a reclaim victim, and is preemptible by
 *      priority only as its class says (no longer because it is borrowed):
 *      when only such jobs could free the place, the owner waits with
 *      "reclaim_capped" and stops nobody.  Once
 *      any tenant has a guarantee, a tenant without one has none (0): all
 *      its work is borrowed.  With no guarantee anywhere, none of this
 *      applies.
 *   6b. Projects' parts (share_mark_parts): a project's quota may hold a part
 *      of its tenant's guarantee.  Inside the tenant a job is owned while its
 *      project's part has room, else while what spilled over the parts fits
 *      the unassigned rest; beyond both it is borrowed (from a sibling's idle
 *      part, or from other tenants), and a project's owned job reclaims a
 *      sibling's borrowed work as it would another tenant's (never taking the
 *      sibling below its own part).
 *   6c. Guarantees per class (quota.h gclass_*): a tenant's guarantee of one
 *      resource class is a domain of its own: the tenant's work of that class
 *      is owned, borrowed, reclaimed and protected against that guarantee
 *      alone, as in step 6, with no projects' parts; the work of its other
 *      classes (and all the work in its reservations in force) against its
 *      own guarantee.  A class bound to a pool makes it a guarantee in that
 *      pool.  What is lendable is counted per domain (its kept part), and a
 *      reclaim never takes a victim's domain below its guarantee.  Fair use
 *      (6a) weighs the tenant over all its domains.
 *   6d. Guarantees per pool (quota.h gpool_*), over every class without a
 *      guarantee of its own: a domain of its tenant too, holding the work
 *      that runs in that pool.  A job of a class that spans pools has no
 *      pool until it is placed, so admission picks one for it (Kueue's
 *      flavor assignment): the first pool, in pool order, with a guarantee
 *      of its tenant that it may use, that has a card its class fits and
 *      where it would be owned; else the tenant's own guarantee if it would
 *      be owned there, kept to the pools without a guarantee of its tenant;
 *      else it is borrowed and goes anywhere, its domain the pool it lands
 *      in.  An owned job is placed, and reclaims, only in what it was given;
 *      admitted and not placed it keeps it (sch_job.gpool, from
 *      sch_decision.gpool) until it runs.
 *   6a. Fair use of idle capacity: a job that would be borrowed is not
 *      tried in the queue's order but after every job that would not (owned
 *      work first: what an owner waits for is never lent), among the other
 *      borrowers by priority (high first), then by its tenant's borrow key
 *      (share_borrow_key: (recent borrowing, decayed with the half-life, +
 *      what it borrows now x the horizon) / borrow weight, least first; it
 *      rises as the round admits the tenant's work, so idle capacity is
 *      shared out by weight and by recent use), then in queue order.
 *   7. Advance reservations (reserve.h; docs/scheduling.md "Reservations"): a
 *      unit goes only where the snapshot's reservations allow it (rsv_allows):
 *      before a reservation's start, work that would still run then (by its
 *      time limit; without one) is kept off what it will hold; in its window
 *      only its holder's work naming it runs there (a count: within it; the
 *      rest of the pool keeps the cards beyond it); a job naming one runs only
 *      in it, ending by its end.  Where some place would have fit but for a
 *      reservation, the job's reason names it (sch_decision.rsv).  The rules
 *      apply to placement, preemption and reclaim alike.
 *   7a. Reservations and guarantees compose: while a tenant's reservation
 *      is in force, what it holds (a count, or its named nodes' cards)
 *      counts against the tenant's guarantee, not on top of it.  The tenant
 *      is entitled to max(guarantee, what its reservations in force hold);
 *      the part its own work there leaves unused counts as used of that (so
 *      it is never lent, and its other work is owned only up to the rest);
 *      its work naming the reservation is owned, marked first, and reclaims
 *      like any owned work.
 *
 * Invariant (checked by sch_check, asserted in debug builds): no GPU, slice
 * or node is ever over-committed and no quota exceeded by a round's result.
 *
 * Ownership: the snapshot is the caller's and is not modified; the result's
 * arrays are freed with sch_result_free().
 */
#ifndef GP_SCHED_H
#define GP_SCHED_H

#include "../quota/quota.h"
#include "reserve.h"

#include <stdint.h>

enum { SCH_WHOLE = 0, SCH_MIG = 1, SCH_SHARED = 2 };
enum { SCH_TOPO_ANY = 0, SCH_TOPO_NVLINK = 1, SCH_TOPO_NUMA = 2 };
enum { SCH_PENDING = 0, SCH_ADMITTED = 1, SCH_RUNNING = 2 };

#define SCH_MAX_SLICES 8 /* NVIDIA MIG: 7; AMD CPX: 8 compute partitions */
#define SCH_MAX_GPUS_PER_UNIT 8

typedef struct sch_slice {
    const char *profile; /* "3g.40gb" */
    int mem_gib;
} sch_slice;

typedef struct sch_gpu {
    int node;          /* index into nodes */
    int model;         /* index into the snapshot's model table */
    int mode;          /* SCH_WHOLE / SCH_MIG / SCH_SHARED */
    int allocatable;   /* healthy (per policy), not cordoned/draining, node ready */
    int mem_gib;
    int numa;          /* -1 unknown */
    int nvgroup;       /* GPUs with the same value on a node share NVLink; -1 none */
    int nslices;
    sch_slice slices[SCH_MAX_SLICES];
    int vendor;        /* compat.h CP_* (0: NVIDIA) */
} sch_gpu;

typedef struct sch_node {
    int pool;          /* index into pools */
    int cpus, mem_gib; /* allocatable totals */
    int gpu0, ngpus;   /* the node's GPUs are gpus[gpu0 .. gpu0+ngpus) */
    int rack, sw;      /* its topology labels `rack` and `switch` as ids (nodes with equal ids
                          share it); 0: none.  Only a job that spans nodes looks at them. */
} sch_node;

typedef struct sch_class {
    const char *name;
    int form;          /* SCH_WHOLE / SCH_MIG / SCH_SHARED */
    const char *profile;           /* SCH_MIG */
    int shared_mem_gib, shared_pct; /* SCH_SHARED */
    int gpus;          /* GPUs per unit (whole) */
    int cpus, mem_gib; /* per unit */
    int pool;          /* -1: any pool */
    int topology;      /* SCH_TOPO_* */
    const unsigned char *model_ok; /* [nmodels]: 1 if the model satisfies it */
    const unsigned char *gpu_ok;   /* [ngpus] or NULL: 0 where a card fails the class's
                                      compatibility rules (vendors, driver minimum per vendor,
                                      stack, compute capability; and its derived job stack) -
                                      precomputed per (class, card) by whoever builds the
                                      snapshot, never re-checked per placement */
    int64_t gpu_milli; /* quota demand per unit */
    int64_t gpu_mem_gib;
    /* Derived classes (docs/scheduling.md "Compatibility rules").  A job whose image names a
     * stack, or a multi-card job of a class spanning vendors, is scheduled on a class derived
     * from its stored class: the same spec with a narrower gpu_ok.  It counts against quota
     * and reasons as the stored class. */
    int base;          /* 1 + index of the stored class it derives from; 0: it is stored */
    const int *alts;   /* [nalts] or NULL: single-vendor classes derived from this one; a job
                          with more than one card is placed all on one of them, tried in order */
    int nalts;
    int alt_vendor;    /* a single-vendor variant: 1 + its compat.h CP_* vendor; else 0 */
    const char *why_none; /* NULL, or why no card passes the rules ("no card offers rocm >= 6.3
                             (newest: 6.2.0 on amd)"), for the job's reason */
} sch_class;

/* The stored class a class (index c of `classes`) counts as: itself, or the one it derives
 * from. */
#define SCH_CLASS_BASE(classes, c) ((classes)[c].base ? (classes)[c].base - 1 : (c))

typedef struct sch_tenant {
    const char *name;
    quota_set quota;
    int64_t card_hours_used; /* milli-hours this month */
    const unsigned char *pool_ok; /* [npools] */
    int64_t recent;    /* its recent borrowing, milli-GPU-seconds decayed to now (step 6a) */
} sch_tenant;

typedef struct sch_project {
    const char *name;
    int tenant;
    int pclass;        /* project class index (production, development, research) */
    const unsigned char *pool_ok; /* [npools] or NULL: pools open to the project's class */
    quota_set quota;
    int64_t card_hours_used;
} sch_project;

/* Where one unit sits: gpus (whole: class.gpus of them; MIG/shared: one) and the MIG slice. */
typedef struct sch_unit {
    int gpu[SCH_MAX_GPUS_PER_UNIT];
    int slice; /* MIG slice index on gpu[0], else -1 */
} sch_unit;

typedef struct sch_job {
    const char *id;
    int project;
    int cls;
    int units;
    int priority;
    int preemptible;
    int may_preempt;
    int64_t submit_us;  /* queue order */
    int64_t start_us;   /* running jobs: when they started (newest are preempted first) */
    int state;          /* SCH_PENDING / SCH_ADMITTED / SCH_RUNNING */
    const sch_unit *place; /* SCH_RUNNING: [units] */
    int credited;       /* SCH_ADMITTED: an earlier round stopped victims for it (its decision
                           was SCH_DO_WAIT_PREEMPT) and they are gone: what they released is
                           its own, see step 5 */
    int stops;          /* times preemption or reclaim stopped it within the snapshot's
                           reclaim window (its bindings that ended `preempted` then): at
                           reclaim_cap or more, reclaim no longer chooses it (step 6) */
    int reservation;    /* 1 + index into the snapshot's rsvs of the reservation it names (it
                           runs only in it, step 7); 0: none */
    int64_t time_limit_s; /* its time limit (0: none): placement ahead of a reservation reads
                           it (step 7) */
    int nodes;          /* 0: each unit goes wherever it fits best.  N >= 1: a job that spans
                           nodes (step 4a): units / N units on each of N distinct nodes, all
                           at once or none; place[r * K .. r * K + K) are rank r's, K =
                           units / N, ranks in node order */
    int gpool;          /* SCH_ADMITTED: what admission gave it (step 6d): 1 + a pool index
                           (its tenant's guarantee there), SCH_GPOOL_REST (its tenant's own
                           guarantee, in the pools without one of their own), or 0 (none:
                           anywhere) */
} sch_job;

#define SCH_GPOOL_REST (-1)

typedef struct sch_snapshot {
    const sch_node *nodes;
    int nnodes;
    const sch_gpu *gpus;
    int ngpus;
    const sch_class *classes;
    int nclasses;
    const sch_tenant *tenants;
    int ntenants;
    const sch_project *projects;
    int nprojects;
    const sch_job *jobs;
    int njobs;
    int nmodels, npools;
    const char *month; /* "2026-12", for reasons */
    /* the reclaim cap (step 6): a job with stops >= reclaim_cap is never a reclaim victim;
     * 0: no cap.  reclaim_window_s: the window its stops were counted in (for reasons). */
    int reclaim_cap;
    int64_t reclaim_window_s;
    /* advance reservations (step 7): for each, the occurrence in force or next (one over:
     * its last, or any span before now), its holder as tenant/project indexes, named nodes
     * or a count; names for reasons (may be NULL).  now_us: the time the round places at. */
    const rsv *rsvs;
    int nrsvs;
    const char *const *rsv_names;
    int64_t now_us;
    /* fair use (step 6a): what borrowing now weighs against recent borrowing, seconds (the
     * scheduler policy's half-life); <= 0: SHARE_HALF_LIFE_DEFAULT */
    int64_t borrow_horizon_s;
    const char (*pool_names)[64]; /* [npools]: the pools' names (guarantees per pool name
                                     them, step 6d); NULL: none (no pool guarantee applies) */
} sch_snapshot;

enum {
    SCH_DO_NOTHING = 0, /* stays as it is (reason may change) */
    SCH_DO_ADMIT,       /* quota reserved; not placed yet */
    SCH_DO_PLACE,       /* bind these units now (admitted too) */
    SCH_DO_PREEMPT,     /* a running victim: stop it */
    SCH_DO_WAIT_PREEMPT /* admitted; waits for its victims to stop */
};

typedef struct sch_decision {
    int job;            /* index into snapshot jobs */
    int action;
    int by;             /* SCH_DO_PREEMPT: the preemptor's index */
    int reclaim;        /* SCH_DO_PREEMPT / SCH_DO_WAIT_PREEMPT: for a guarantee (step 6) */
    int borrowed;       /* SCH_DO_PREEMPT: the victim ran above its tenant's guarantee;
                           SCH_DO_PLACE: placed above it (borrowed, step 6; sch_round only) */
    int capped;         /* a job its guarantee covers that finds no place: how many borrowed
                           jobs, past the reclaim cap, reclaim would otherwise stop for it
                           (its reason says "reclaim_capped"); else 0 */
    int rsv;            /* 1 + the reservation that kept it from a place that would have fit
                           (or that it names and waits for), rsv_code why (RSV_*); 0: none */
    int rsv_code;
    int gpool;          /* SCH_DO_ADMIT / SCH_DO_WAIT_PREEMPT / SCH_DO_NOTHING of a job that
                           waits admitted: what admission gave it (sch_job.gpool) */
    char reason[200];   /* queue reason, or why it was preempted */
    sch_unit *units;    /* SCH_DO_PLACE: [job.units] (owned by the result) */
} sch_decision;

typedef struct sch_result {
    sch_decision *d; /* one per pending/admitted job, plus one per victim */
    int n;
    int placed, preempted;
    int64_t *borrowed; /* [ntenants]: what each tenant borrowed at the round's start (milli,
                          above its guarantee; step 6), for its recent borrowing; NULL when
                          no tenant has a guarantee (or from sch_delta) */
    int64_t *pborrowed; /* [ntenants x npools]: of it, what its borrowed running jobs hold in
                           each pool (a job counts in its first card's pool); with borrowed */
} sch_result;

/* Run one round. Returns 0, or -1 when out of memory. */
int sch_round(const sch_snapshot *s, sch_result *out);
void sch_result_free(sch_result *r);

/*
 * Check a snapshot plus a round's placements: no over-committed GPU, slice
 * or node, and no quota exceeded by running+placed jobs.  Returns 0, or -1
 * with a description in `why`.
 */
int sch_check(const sch_snapshot *s, const sch_result *r, char *why, size_t n);

/*
 * A round after one change, at the cost of the change (pure, like sch_round).
 *
 * A sch_delta holds the usage of a "settled" snapshot: one whose last round's decisions are
 * applied (placed jobs running with their units, admitted ones admitted), so that a full
 * round on it would place, admit and preempt nothing.  After one submit or one exit it
 * decides what a full round on the changed snapshot would: the same placements and
 * admissions (and the submitted job's reason), without visiting every node or job again -
 * a tree of each class's best node answers a unit in O(pools x log nodes), and only the jobs
 * the change can move are tried (the new one; after an exit, admitted jobs of the classes
 * that can use the freed node and queued jobs of the tenant whose quota it frees).  The
 * result holds only decisions that change something (PLACE, ADMIT; for a submit that is not
 * admitted, its NOTHING with the reason); the reasons of jobs that stay waiting are left to
 * the next full round.  The delta then follows its own decisions: apply them to the next
 * snapshot, and pass that one to the next call.
 *
 * Returns 0 with *out, 1 when the change needs a full round (a job that may preempt is
 * involved, a job is credited for its victims, or the tables - nodes, GPUs, classes, projects, tenants, pools - differ; *out is
 * empty and the delta unchanged; rebuild it after that round), or -1 when out of memory
 * (the delta must then be rebuilt).  The snapshots keep the tables and indexes of the one
 * the delta was made from; only the jobs differ.  Owned by the caller; one thread at a time.
 */
typedef struct sch_delta sch_delta;
int sch_delta_new(const sch_snapshot *settled, sch_delta **out);
void sch_delta_free(sch_delta *d);
/* `s`: the settled snapshot plus jobs[job], queued (SCH_PENDING). */
int sch_delta_submit(sch_delta *d, const sch_snapshot *s, int job, sch_result *out);
/* `s`: the settled snapshot without `gone`, a running job that ended (as it was, with its
 * units; its storage is only read during the call). */
int sch_delta_exit(sch_delta *d, const sch_snapshot *s, const sch_job *gone, sch_result *out);

/*
 * The demand formula (demand.c; admission, the overview and metering all use it): one unit
 * of a class of `form` (SCH_WHOLE: `gpus` cards; SCH_MIG: MIG `profile` "3g.40gb"; SCH_SHARED:
 * `shared_mem_gib` GiB and `shared_pct` % of a card) on a card of `card_mem_gib` GiB counts
 *   whole   *milli = 1000 x gpus, *mem_gib = card_mem_gib x gpus
 *   MIG     *milli = 1000 x compute slices / 7 (3g: 428), *mem_gib = the profile's memory;
 *           an AMD compute partition "cpx.24gb": 1000 / partitions (spx 1, dpx 2, tpx 3,
 *           qpx 4, cpx 8: cpx 125), *mem_gib = its memory
 *   shared  *milli = max(1000 x shared_mem_gib / card_mem_gib, 10 x shared_pct),
 *           *mem_gib = shared_mem_gib
 * A binding counts on its own card; a unit not placed yet (admission, an admitted job in the
 * overview) on the class's card, sch_class_card_gib.  card_mem_gib <= 0: 80 GiB.
 */
#define SCH_DEFAULT_CARD_GIB 80
void sch_unit_demand(int form, int gpus, const char *profile, int shared_mem_gib,
                     int shared_pct, int card_mem_gib, int64_t *milli, int64_t *mem_gib);

/*
 * The card a class is counted on before placement: the largest memory (GiB) among the cards
 * models[i] / mem_gib[i] (i < n) whose model satisfies one of `class_models` (a JSON array
 * of model names, inv_model_matches); 80 when none does.
 */
int sch_class_card_gib(json_t *class_models, const char *const *models, const int *mem_gib,
                       int n);

/* Quota demand of a job in one dimension (pure). */
int64_t sch_demand(const sch_snapshot *s, const sch_job *j, int dim);

/*
 * What would start a waiting job (suggest.c, pure; `job explain` and the property test in
 * tests/unit/test_suggest.c).  A suggestion is one or more changes to the snapshot, applied
 * together, or a set of other jobs to wait for; each is checked before it is given: the job
 * is placed (or preempts for a place) in a round on the snapshot so changed.
 *
 *   SCH_SG_QUOTA       ceiling `dim` (QD_*) of project (level 0) or tenant (level 1) `who`
 *                      to `value` (in the ceiling's own unit: GPU milli, GiB, card-hour milli)
 *   SCH_SG_CLASS_QUOTA the per-class ceiling of the job's class at that level to `value` units
 *   SCH_SG_GUARANTEE   tenant `who`'s guaranteed GPUs to `value` milli (dim > 0: its
 *                      guarantee of class dim - 1, step 6c)
 *   SCH_SG_UNIT_CPUS   a unit of the job's class asking for at most `value` CPUs
 *   SCH_SG_UNIT_MEMORY ... at most `value` GiB of memory
 *   SCH_SG_OPEN_POOL   pool `who` opened to the job's tenant and project class
 *   SCH_SG_USE_CLASS   the job submitted with class `who` instead
 *   SCH_SG_TIME_LIMIT  its time limit set to at most `value` seconds
 *   SCH_SG_WAIT_UNTIL  the round at time `value` (us): a reservation's window opens or ends
 *   SCH_SG_NAME_RSV    it names reservation `who` (its own tenant's)
 *   SCH_SG_DROP_RSV    it names no reservation
 *   SCH_SG_WAIT_JOBS   (no change) the jobs in `jobs` gone: running ones ended, admitted and
 *                      higher-priority queued ones started or gone
 */
enum {
    SCH_SG_QUOTA = 1, SCH_SG_CLASS_QUOTA, SCH_SG_GUARANTEE, SCH_SG_UNIT_CPUS, SCH_SG_UNIT_MEMORY,
    SCH_SG_OPEN_POOL, SCH_SG_USE_CLASS, SCH_SG_TIME_LIMIT, SCH_SG_WAIT_UNTIL, SCH_SG_NAME_RSV,
    SCH_SG_DROP_RSV, SCH_SG_WAIT_JOBS
};
#define SCH_SG_MAX_CHANGES 6
#define SCH_SG_MAX_JOBS 16
#define SCH_SG_MAX 8

typedef struct sch_change {
    int kind;  /* SCH_SG_* */
    int level; /* SCH_SG_QUOTA / SCH_SG_CLASS_QUOTA: 0 project, 1 tenant */
    int who;   /* project / tenant / pool / class / reservation index, per kind */
    int dim;   /* SCH_SG_QUOTA: QD_* */
    int64_t value;
} sch_change;

typedef struct sch_suggestion {
    int nch;
    sch_change ch[SCH_SG_MAX_CHANGES];
    int njobs;                 /* SCH_SG_WAIT_JOBS (ch[0]): the jobs to wait for (indexes) */
    int jobs[SCH_SG_MAX_JOBS];
} sch_suggestion;

/*
 * Up to `max` checked suggestions for jobs[job] (pending or admitted, not started by a round
 * on s) into out; returns how many (0: none found), or -1 when out of memory.
 */
int sch_suggest(const sch_snapshot *s, int job, sch_suggestion *out, int max);

#endif
