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
 *      and memory too.  Among places that fit, the tightest (best fit) wins,
 *      which keeps whole cards whole and fractional cards full.
 *   5. If it cannot be placed and may preempt, the fewest, lowest-priority,
 *      newest preemptible jobs of strictly lower priority that free a fitting
 *      place are chosen; their resources are reserved for it and it waits for
 *      them to stop.  Strictly lower priority only: two jobs can never
 *      preempt each other in a loop.
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

#include <stdint.h>

enum { SCH_WHOLE = 0, SCH_MIG = 1, SCH_SHARED = 2 };
enum { SCH_TOPO_ANY = 0, SCH_TOPO_NVLINK = 1, SCH_TOPO_NUMA = 2 };
enum { SCH_PENDING = 0, SCH_ADMITTED = 1, SCH_RUNNING = 2 };

#define SCH_MAX_SLICES 7
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
} sch_gpu;

typedef struct sch_node {
    int pool;          /* index into pools */
    int cpus, mem_gib; /* allocatable totals */
    int gpu0, ngpus;   /* the node's GPUs are gpus[gpu0 .. gpu0+ngpus) */
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
    const unsigned char *gpu_ok;   /* [ngpus] or NULL: 0 where a card's driver / compute
                                      capability is below the class's minimum */
    int64_t gpu_milli; /* quota demand per unit */
    int64_t gpu_mem_gib;
} sch_class;

typedef struct sch_tenant {
    const char *name;
    quota_set quota;
    int64_t card_hours_used; /* milli-hours this month */
    const unsigned char *pool_ok; /* [npools] */
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
} sch_job;

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
    char reason[200];   /* queue reason, or why it was preempted */
    sch_unit *units;    /* SCH_DO_PLACE: [job.units] (owned by the result) */
} sch_decision;

typedef struct sch_result {
    sch_decision *d; /* one per pending/admitted job, plus one per victim */
    int n;
    int placed, preempted;
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

/* Quota demand of a job in one dimension (pure). */
int64_t sch_demand(const sch_snapshot *s, const sch_job *j, int dim);

#endif
