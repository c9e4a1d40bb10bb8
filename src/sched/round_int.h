/*
 * round_int.h - what the two halves of the scheduler against the store share (private to
 * src/sched): round.c builds a snapshot, runs the pure round, commits its decisions and
 * explains a job; round_mem.c keeps the cluster and the queue in the leader's memory between
 * rounds (docs/scheduling.md "The cluster in memory").  The snapshot and its arena, the
 * queue's rows, and the functions each half calls of the other (prefix rnd_).
 */
#ifndef GP_SCHED_ROUND_INT_H
#define GP_SCHED_ROUND_INT_H

#include "jobs_int.h"

#include "../compat/compat.h"
#include "../inventory/inventory.h"
#include "share.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef char name64[64];
typedef char id33[RND_ID_LEN];
typedef char uuid96[96];

/* The snapshot's memory: chunks carved in order, all freed at once (snap_free). */
typedef struct ar_chunk {
    struct ar_chunk *next;
    size_t used, cap;
    max_align_t data[];
} ar_chunk;

#define AR_CHUNK ((size_t)1 << 20)

struct rnd_cluster;

typedef struct snap {
    ar_chunk *arena;
    struct rnd_cluster *cl; /* the cluster part it uses (shared, read-only; see cluster_take) */
    jobs_array_allow *array_allow; /* the queued array tasks this round may read (arrays.c) */
    int any_deps; /* some live job waits for other jobs (deps.c: only then is any doomed) */
    int64_t quota_rows, quota_at; /* the quotas as read: how many rows, the newest change */
    sch_snapshot s;
    health_policy pol;
    share_policy spol; /* the reclaim cap and its window */
    char month[16];
    int64_t now;
    /* nodes, in name order; GPUs grouped by node */
    sch_node *nodes;
    name64 *node_names;
    name64 *node_pool;   /* each node's pool as read (the commit's guard compares it) */
    sch_gpu *gpus;
    uuid96 *gpu_uuids;
    id33 *gpu_ids;       /* the store's ids, for their slices */
    uuid96 *slice_uuids; /* [gpu * SCH_MAX_SLICES + k] */
    char (*slice_prof)[24];
    char (*models)[96];
    int *gpu_order; /* GPU indices sorted by uuid, for lookups */
    name64 *pools;
    int64_t *phl;            /* [pool]: its borrow half-life, seconds (0: the policy's) */
    sch_class *classes;
    name64 *cnames;
    char (*cprof)[24];
    name64 *cforms;
    unsigned char *model_ok;
    unsigned char *gpu_ok;   /* [class x gpu] */
    char (*gpu_driver)[32];
    char (*gpu_cc)[16];
    cp_stack *gpu_stack;     /* each card's runtimes (compat.h) */
    int nstored;             /* classes [0, nstored) are the stored ones, in name order; then the
                                derived ones (sch_class.base) */
    int ccap;                /* room for classes, stored and derived */
    cp_rules *crules;        /* [class]: its compatibility rules */
    char (*dstack)[CP_VER_MAX + 16]; /* [class]: a derived class's job stack ("" none) */
    unsigned char *ppool_ok; /* [project x pool] */
    sch_tenant *tenants;
    share_usage *pusage; /* [tenant x (npools + 1)]: its recent borrowing per pool as read
                            (fair use, step 6a); column npools: pool "" (recorded before) */
    name64 *tnames;
    id33 *tids;
    unsigned char *pool_ok;
    sch_project *projects;
    name64 *pnames;
    id33 *pids;
    sch_job *jobs;
    id33 *jids;
    char (*jrecovery)[8];
    uint64_t *jreason; /* a hash of each job's reason as read: a round rewrites only changed ones */
    sch_unit *places;
    unsigned char *place_fill; /* [unit of places]: how many of its gpu[] the bindings filled */
    /* advance reservations (reservations.c; sched.h step 7), by id */
    rsv *rsvs;
    id33 *rsv_ids;       /* in id order (jobs look theirs up) */
    int *rsv_byid;       /* [id order] -> index in rsvs (start order) */
    name64 *rsv_names;
    const char **rsv_name_ptrs;
    /* the open bindings build() read and left out (a job not running, a unit or card it does
     * not know): the commit's guards know them as read, not as changed */
    struct skipped *skipped;
    int nskipped, capskipped;
} snap;

typedef struct skipped {
    id33 job;
    uuid96 gpu;
    int unit;
} skipped;

#define ALLOC(p, cnt) ((p) = rnd_alloc(n, (size_t)(cnt) + 1, sizeof *(p)))

/* One live job as the round reads it (the queue in memory keeps these; the read of the
 * whole queue makes them too).  State: SCH_PENDING (queued), SCH_ADMITTED, SCH_RUNNING, or -1
 * (ended: no longer live). */
typedef struct qrow {
    char id[RND_ID_LEN], project[RND_ID_LEN], rsv[RND_ID_LEN];
    char cls[64], recovery[8];
    char gpool[64]; /* what admission gave it (sched.h step 6d): a pool, "*", "" nothing */
    char *stack; /* NULL: none */
    int state, units, nodes, priority, preemptible, may_preempt, credit, capped, has_deps;
    int64_t queued_at, started_at, time_limit_s, chg;
    uint64_t reason; /* reason_hash of its reason */
} qrow;

/* A list of rows in id order (each malloc'd, owned by the list). */
typedef struct qlist {
    qrow **r;
    int n, cap;
} qlist;

/* The live jobs' states, in SQL. */
#define QLIVE "state IN ('queued','admitted','running')"

/* The queue in memory (round_mem.c): the live jobs, read whole or by what changed. */

/* What the scheduler keeps with a store (store_sched_slot): the cluster (cl_mu) and the
 * queue (its own mutex, held while a snapshot is filled from it). */
typedef struct rnd_queue {
    pthread_mutex_t mu;
    qlist rows;      /* the live jobs, in id order */
    int64_t chg;     /* job_chg.v they are at; -1: none yet */
    int64_t read_us; /* when they were last read whole (the check) */
} rnd_queue;

/* ---- round.c, for round_mem.c ---- */

/* Zeroed room for cnt x size bytes in the snapshot's arena, or NULL. */
void *rnd_alloc(snap *n, size_t cnt, size_t size);
/* Free everything build() allocated: the arena, in one go, and its hold on the cluster. */
void rnd_snap_free(snap *n);
/* The cluster part of a snapshot, read from the store in tx (nodes, cards, slices, pools,
 * classes, tenants, projects, the pools open to them and the health policy). */
int rnd_read_cluster(store_tx *tx, snap *n, gp_err *err);
/* The one value `sql` reads, `none` when it reads no row. */
int rnd_one_value(store_tx *tx, const char *sql, int64_t none, int64_t *v, gp_err *err);
/* FNV-1a of a job's reason. */
uint64_t rnd_reason_hash(const char *t);
/* Index of `key` in a sorted array of n strings `stride` bytes apart, or -1. */
int rnd_find_str(const void *base, size_t stride, int n, const char *key);

/* ---- round_mem.c, for round.c ---- */

/* Drop a snapshot's reference to its cluster (NULL: none). */
void rnd_cluster_drop(struct rnd_cluster *c);
/* The cluster for a snapshot at now_us in tx: the memory's when it is of tx's version, else
 * read (and kept); the consistency check when it is due.  *out holds a reference. */
int rnd_cluster_take(store_t *st, store_tx *tx, int64_t now_us, struct rnd_cluster **out,
                     gp_err *err);
/* Point snapshot n's cluster fields at n->cl's and make room for nds derived classes; -1 when
 * out of memory. */
int rnd_cluster_use(snap *n, int nds);
/* The live jobs for a snapshot in tx: *q locked (the memory, brought up to tx; the caller
 * unlocks its mu) or, when the memory cannot serve tx, *q NULL and `own` the whole queue
 * read (the caller frees it). */
int rnd_queue_take(store_t *st, store_tx *tx, int64_t now_us, rnd_queue **q, qlist *own,
                   gp_err *err);
void rnd_qlist_free(qlist *l);

#endif
