/*
 * share.h - guaranteed shares, borrowing, reclaim and fair use of idle
 * capacity (issue 23): the arithmetic, pure and deterministic (no I/O, no
 * globals, no allocation but what a caller's arrays hold).
 *
 * Words.  In one pool, for one resource (GPU-equivalents in milli, as
 * admission counts them: src/sched/demand.c), each tenant has
 *   - a GUARANTEE: what it is entitled to whenever it asks;
 *   - a CEILING >= guarantee: what it may use at most, the part above its
 *     guarantee only while others leave capacity idle;
 *   - KEPT <= guarantee: the part of its guarantee never lent, even idle
 *     (lendable = guarantee - kept);
 *   - a WEIGHT (>= 1) and its RECENT borrowing (milli-GPU-seconds, decayed
 *     with the pool's half-life), which order borrowers.
 * A tenant's use up to its guarantee is OWNED; above it, BORROWED.  Borrowed
 * work is preemptible whatever its priority class says.
 *
 * Rules this module decides (docs/scheduling.md, "Guarantees"):
 *   1. Idle for borrowing = capacity - sum over tenants of max(used +
 *      waiting, kept): an idle kept part is not lent, an idle lendable part
 *      is, unless owned work of its tenant waits for it (lending what an
 *      owner waits for would only make the next round reclaim it).
 *   2. A job of a tenant whose use stays within its guarantee is admitted as
 *      owned; above it, as borrowed only while the ceiling and the idle
 *      capacity allow, borrowers served in fair order (rule 4).
 *   3. Reclaim: an owned job that finds no room because its tenant's
 *      guarantee is lent takes it back from borrowed running work - the
 *      borrowers most over their fair share first, then the lowest priority,
 *      then the newest - never taking a borrower below its guarantee, and
 *      only for work that would itself be owned (so nothing preempted to
 *      make room is ever given to borrowed work: no preemption loops).
 *   4. Fair use: among borrowers, the one with the least (recent borrowing +
 *      borrowed now x horizon) / weight goes first; fair shares of the idle
 *      capacity are split by weight, water-filled over what each asks.
 */
#ifndef GP_SCHED_SHARE_H
#define GP_SCHED_SHARE_H

#include <stdint.h>

/* One tenant (or project) in one pool, for one resource. */
typedef struct share_tenant {
    int64_t guarantee; /* >= 0 */
    int64_t ceiling;   /* >= guarantee */
    int64_t kept;      /* 0 .. guarantee: never lent */
    int64_t weight;    /* >= 1 */
    int64_t used;      /* running + admitted now, owned and borrowed */
    int64_t waiting;   /* queued work that would be owned (0 .. guarantee - used): never lent */
    int64_t recent;    /* decayed past borrowing, milli-GPU-seconds */
} share_tenant;

enum { SHARE_OWNED = 0, SHARE_BORROWED = 1, SHARE_NO_ROOM = 2 };

/* Owned part and borrowed part of t's use. */
int64_t share_owned(const share_tenant *t);
int64_t share_borrowed(const share_tenant *t);

/* Rule 1: capacity idle for borrowing in a pool of `capacity` (never below 0). */
int64_t share_idle(const share_tenant *ts, int n, int64_t capacity);

/*
 * What tenant ts[i] may start now without reclaim: the pool less what every
 * other tenant holds (its use, or its kept part while that is larger: kept
 * capacity is never lent, not even to owned work) less ts[i]'s own use.  Its
 * own idle kept part is its own.  Never below 0.
 */
int64_t share_free_for(const share_tenant *ts, int n, int i, int64_t capacity);

/*
 * Rule 2 for one job of `demand` of tenant ts[i]: SHARE_OWNED when its use
 * with the job stays within its guarantee (whether there is room now is the
 * placement's business, and reclaim's), SHARE_BORROWED when above it but
 * within the ceiling and the idle capacity, else SHARE_NO_ROOM.
 */
int share_admit(const share_tenant *ts, int n, int i, int64_t capacity, int64_t demand);

/*
 * Rule 4's order key of a borrower (lower goes first), scaled so integers
 * compare: (recent + borrowed x horizon_s) x 1000 / weight.
 */
int64_t share_borrow_key(const share_tenant *t, int64_t horizon_s);

/*
 * Rule 4's fair shares: split `idle` (plus what borrowers borrow now) among
 * the tenants with want[i] > 0 (what each would borrow in all), by weight,
 * water-filled: nobody is given more than it wants, the rest goes round
 * again.  OUT: fair[0..n) (0 where want is 0).  Sum of fair <= idle +
 * borrowed now.
 */
void share_fair(const share_tenant *ts, int n, const int64_t *want, int64_t idle, int64_t *fair);

/*
 * Which of a tenant's running jobs are borrowed: demand[0..n) in start
 * order (oldest first); a job is borrowed when the tenant's use with it and
 * every older job exceeds the guarantee.  Re-marked every round, so work
 * admitted as borrowed becomes owned once older owned work ends.  OUT:
 * borrowed[0..n) 0/1.  Returns the borrowed amount.
 */
int64_t share_mark(int64_t guarantee, const int64_t *demand, int n, unsigned char *borrowed);

/*
 * share_mark with projects' parts of the guarantee (docs/scheduling.md, "A project's part of
 * the guarantee"): part[0..np) is each project's part (0: none; their sum is clamped to the
 * guarantee), the rest of the guarantee is the tenant's unassigned part.  Job i (start order)
 * of project proj[i] (an index into part, or -1: none) is owned while its project's part has
 * room for it, else for what its part lacks while the work that spilled over the parts so far,
 * with it, fits the unassigned part; otherwise borrowed (from a sibling's idle part or from
 * other tenants).  used[0..np) is scratch.  With no parts (np 0, every proj -1) it is
 * share_mark. Returns the borrowed amount.
 */
int64_t share_mark_parts(int64_t guarantee, const int64_t *part, int np, const int *proj,
                         const int64_t *demand, int n, int64_t *used, unsigned char *borrowed);

/*
 * Which of its tenant's guarantees (domains) a job's work counts against (sched.h steps 6c,
 * 6d, 7a): the tenant's own for work in its reservations in force (in_rsv); else its class's
 * guarantee (cls: that domain, -1 none); else the guarantee of the pool it runs in or was given
 * (pool, likewise); else the tenant's own (-1).  The one rule the round (sched.c dom_of), the
 * store's marks (share_store.c) and the lending audit (round.c) share, each with its own
 * numbering of domains.
 */
int share_domain(int in_rsv, int cls, int pool);

/* The unassigned part of a guarantee: what the projects' parts (their sum) leave of it. */
int64_t share_unassigned(int64_t guarantee, int64_t parts);

/* What job of `demand` spills over its project's part (part, with `used` of it used already:
 * the rest of the job beyond the room left, 0..demand). */
int64_t share_spill(int64_t part, int64_t used, int64_t demand);

/* A running job that reclaim may stop. */
typedef struct share_victim {
    int tenant;        /* index into ts */
    int64_t demand;    /* what it frees */
    int priority;
    int64_t start_us;  /* newest first */
    int borrowed;      /* only borrowed work is ever taken */
} share_victim;

/*
 * Rule 3: the owner ts[owner] needs `need` more than is free for a job that
 * would be owned.  Choose victims among vs[0..nv) (order: fair[] over-share
 * of their tenant high first, then priority low first, then newest first),
 * skipping any whose stop would take its tenant below its guarantee, until
 * what they free covers `need`.  OUT: pick[0..*npick) indexes into vs.
 * Returns 1 when the victims cover the need, 0 when they cannot (then
 * *npick is 0: a partial reclaim would stop work for nothing).  `fair` may
 * be NULL (over-share then is the whole borrowed amount).  `tmp` is scratch
 * of nv ints.
 */
int share_reclaim(const share_tenant *ts, int n, int owner, int64_t need, const share_victim *vs,
                  int nv, const int64_t *fair, int *pick, int *npick, int *tmp);

/*
 * Decay `recent` from `last_us` to `now_us` with the half-life, then add the
 * borrowing of that span (borrowed milli x seconds, taken as constant over
 * it).  half_life_s <= 0: no memory (just the span's).  Saturates instead of
 * overflowing.
 */
int64_t share_decay(int64_t recent, int64_t last_us, int64_t now_us, int64_t half_life_s,
                    int64_t borrowed);

/*
 * What ts[i] lends now (for the views: each tenant sees its own, never to
 * whom).  Borrowing is served first from capacity nobody is guaranteed
 * (capacity - sum of guarantees), then from guarantees left idle: each
 * tenant's idle lendable part, max(0, guarantee - max(used, kept)), lends
 * that rest in proportion to its size.  Never more than its idle part.
 */
int64_t share_lent(const share_tenant *ts, int n, int i, int64_t capacity);

/*
 * Guarantees as the store holds them (share_store.c): the views' side of
 * the scheduler's step 6 (sched.h), counted from open bindings (GPU milli as
 * metering weighs them) in start order, and from the tenants' quotas.  A
 * guarantee applies once any tenant has one; without, everything is owned.
 */
#include "../core/err.h"
#include "../store/store.h"

#include <jansson.h>

/*
 * The reclaim cap (docs/scheduling.md, "Guarantees"): a job stopped by preemption or reclaim
 * `reclaim_cap` times within the last `reclaim_window_s` seconds is no longer a reclaim
 * victim.  An operator sets it with PUT /api/v1/scheduler-policy (`gpupool priority policy`);
 * it is kept in the store (security_policy, key "scheduler_policy"), so every server's round
 * reads the same, and the stops are counted from the store too (bindings that ended
 * `preempted`), so they hold across servers and restarts.
 */
typedef struct share_policy {
    int reclaim_cap;          /* 1 .. SHARE_CAP_MAX; default 3 */
    int64_t reclaim_window_s; /* SHARE_WINDOW_MIN .. SHARE_WINDOW_MAX; default 3600 */
    int64_t half_life_s;      /* fair use (rule 4): the half-life of a tenant's recent
                                 borrowing, SHARE_HALF_LIFE_MIN .. SHARE_HALF_LIFE_MAX (never 0:
                                 fair use that silently does nothing is refused); default
                                 SHARE_HALF_LIFE_DEFAULT */
} share_policy;

#define SHARE_CAP_MAX 1000
#define SHARE_WINDOW_MIN 60
#define SHARE_WINDOW_MAX (30 * 86400)
#define SHARE_HALF_LIFE_MIN 60
#define SHARE_HALF_LIFE_MAX (90 * 86400)
#define SHARE_HALF_LIFE_DEFAULT (6 * 3600)

void share_policy_default(share_policy *p);
/* Apply the fields `j` names ({"reclaim_cap", "reclaim_window_seconds",
 * "borrow_half_life_seconds"}; others refused) to
 * *p, all or nothing: GP_EINVALID with the reason.  Pure. */
int share_policy_apply(json_t *j, share_policy *p, gp_err *err);
json_t *share_policy_json(const share_policy *p); /* new reference */
/* The stored policy (the default when none is stored, or what is stored does not parse). */
int share_policy_load(store_tx *tx, share_policy *out, gp_err *err);
int share_policy_save(store_tx *tx, const share_policy *p, gp_err *err);

/*
 * How many times job `job_id` was stopped by preemption or reclaim since `since_us` (its
 * bindings that ended `preempted` then, one stop per end time).  OUT: *stops.
 */
int share_job_stops(store_tx *tx, const char *job_id, int64_t since_us, int *stops, gp_err *err);

/*
 * The longest preemption chain: the most times any live job (queued, admitted or running)
 * was stopped by preemption or reclaim since `since_us`.  OUT: *max (0 when none).
 */
int share_chain_max(store_tx *tx, int64_t since_us, int *max, gp_err *err);

/*
 * Fair use (rule 4): a tenant's recent borrowing in one pool as stored (table share_usage,
 * one row per tenant and pool): `recent` milli-GPU-seconds decayed to `at_us`, and what it
 * borrowed there from then on (`borrowed`, milli).  The scheduler's round writes it when what
 * the tenant borrows in the pool changes; readers decay it to now (share_usage_now) with the
 * pool's half-life (a pool's borrow_half_life_s, else the scheduler policy's; pool "": what
 * was recorded before borrowing was kept per pool).  A tenant's recent borrowing is the sum
 * over its rows; a tenant without a row has borrowed nothing.
 */
typedef struct share_usage {
    int64_t recent, borrowed, at_us; /* at_us 0: no row */
} share_usage;

int64_t share_usage_now(const share_usage *u, int64_t now_us, int64_t half_life_s);
/* Tenant tenant_id's recent borrowing now: its rows decayed with their pools' half-lives
 * (`policy_half_life_s` where a pool has none of its own). */
int share_recent(store_tx *tx, const char *tenant_id, int64_t now_us, int64_t policy_half_life_s,
                 int64_t *recent, gp_err *err);
/* Fold the span since `was` into recent and record `borrowed` from `now_us` on (a row
 * changed by another writer since `was` was read is left as it is). */
int share_usage_save(store_tx *tx, const char *tenant_id, const char *pool,
                     const share_usage *was, int64_t borrowed, int64_t now_us,
                     int64_t half_life_s, gp_err *err);

/*
 * Every running job's mark now, for the bindings' views: *out {job id: true (borrowed) |
 * false}, the jobs with open bindings (empty when no tenant has a guarantee).  The caller's.
 */
int share_open_marks(store_tx *tx, json_t **out, gp_err *err);

/* Is job `job_id` (running) borrowed now?  *borrowed 0 when it is not running. */
int share_job_borrowed(store_tx *tx, const char *job_id, int *borrowed, gp_err *err);

/*
 * A tenant's share now: {"guaranteed_gpus" (null: none), "kept_gpus", "borrow_weight",
 * "in_use_gpus", "borrowed_gpus", "lent_gpus", "applies" (any tenant has a guarantee)}.
 * Only its own figures: never who borrows from it.  *out is the caller's.
 */
int share_tenant_view(store_tx *tx, const char *tenant_id, json_t **out, gp_err *err);

/*
 * A project's part of its tenant's guarantee now (docs/scheduling.md, "A project's part of
 * the guarantee"):
 * {"guaranteed_gpus" (its part; null: none), "tenant_guaranteed_gpus" (null: none),
 * "in_use_gpus", "borrowed_gpus" (its running work marked borrowed), "applies"}.
 */
int share_project_view(store_tx *tx, const char *tenant_id, const char *project_id, json_t **out,
                       gp_err *err);

#endif
