/*
 * health.h - GPU health signals and the policy that turns them into states
 * (pure: structs in, decision out; no I/O).
 *
 * The agent reports signals on every heartbeat; health_eval() maps them, with
 * the previous report, to healthy / degraded / failed and a cause a person
 * can act on.  Defaults follow the research notes: fatal Xids, double-bit ECC,
 * a row-remap failure or a lost GPU fail the card; a pending row remap,
 * retired pages pending, a burst of corrected ECC errors or a temperature at
 * the card's own slowdown threshold degrade it; application Xids are ignored.
 * `failed` is sticky: only an operator's reset clears it.
 */
#ifndef GP_HEALTH_H
#define GP_HEALTH_H

#include "../core/err.h"

#include <jansson.h>
#include <stdint.h>

enum { HEALTH_HEALTHY = 0, HEALTH_DEGRADED = 1, HEALTH_FAILED = 2 };

#define HEALTH_MAX_XIDS 32

typedef struct gpu_signals {
    int64_t ecc_volatile_sbe, ecc_volatile_dbe, ecc_aggregate_sbe, ecc_aggregate_dbe;
    int xids[HEALTH_MAX_XIDS]; /* Xid events since the previous heartbeat */
    int nxids;
    int64_t remapped_correctable, remapped_uncorrectable;
    int remap_pending, remap_failure;
    int64_t retired_pages_pending;
    int temperature_c, slowdown_c; /* slowdown_c 0: unknown */
    int util_gpu, util_memory;
    int lost; /* the GPU is unreachable (fallen off the bus) */
    /* the card's vendor (HEALTH_V_*; the caller sets it from the inventory, 0 = NVIDIA), and
     * the signals only some vendors have */
    int vendor;
    int64_t ecc_deferred;           /* AMD: deferred (poisoned, not yet consumed) errors */
    int64_t bad_pages;              /* AMD: retired / bad VRAM pages */
    int critical[HEALTH_MAX_XIDS];  /* Intel Gaudi: critical event codes since the last beat */
    int ncritical;
} gpu_signals;

/* Vendors, in the order of compat.h's CP_* (nvidia, amd, intel). */
enum { HEALTH_V_NVIDIA = 0, HEALTH_V_AMD = 1, HEALTH_V_INTEL = 2, HEALTH_NV = 3 };

/* What a vendor-specific signal does to a card. */
enum { HEALTH_ACT_IGNORED = 0, HEALTH_ACT_DEGRADED = 1, HEALTH_ACT_FATAL = 2 };

/*
 * One vendor's part of the policy (docs/inventory.md "Health").  Signals a vendor does not
 * have mean nothing for its cards: Xids, row remapping and retired pages pending are NVIDIA's
 * only; deferred errors and bad pages AMD's; critical events Intel Gaudi's.
 *   uncorrectable  an uncorrectable ECC error (NVIDIA: a volatile double-bit error; AMD and
 *                  Gaudi: a volatile uncorrectable count, or a rise of the aggregate one)
 *   deferred       AMD: deferred errors reported (any: the count is kept until a reset)
 *   bad_pages_degraded / bad_pages_fatal
 *                  AMD: at or above this many bad pages the card is degraded / failed (0: off)
 *   critical       Intel Gaudi: a critical event since the last heartbeat
 */
typedef struct health_vendor {
    int uncorrectable, deferred, critical;
    int64_t bad_pages_degraded, bad_pages_fatal;
} health_vendor;

typedef struct health_policy {
    int fatal_xids[64];
    int nfatal;
    int ignored_xids[64];
    int nignored;
    int64_t corrected_ecc_rise; /* rise in aggregate corrected errors per heartbeat that degrades */
    int temperature_margin_c;   /* degraded at slowdown - margin */
    unsigned allocatable;       /* bit per HEALTH_* state that may take new work */
    /* interference on shared GPUs (interfere.c) */
    int interference_action;    /* INTF_ALERT or INTF_STOP (the offender) */
    int contention_samples;     /* consecutive contended heartbeats that make it sustained */
    int contention_margin_pct;  /* SM % above its share before a slice counts as taking more */
    int contention_busy_pct;    /* the card's summed SM % at which it counts as saturated */
    health_vendor vendor[HEALTH_NV]; /* per vendor ("vendors" in JSON) */
} health_policy;

enum { INTF_ALERT = 0, INTF_STOP = 1 };

/* The default policy. */
void health_policy_default(health_policy *p);

/* Parse a policy from JSON (fields as health_policy_json writes); GP_EINVALID with the reason. */
int health_policy_parse(json_t *j, health_policy *out, gp_err *err);

/* JSON view (new reference). */
json_t *health_policy_json(const health_policy *p);

/* Parse the agent's signals object (missing fields are zero; vendor 0: set it after). */
int health_signals_parse(json_t *j, gpu_signals *out, gp_err *err);

/*
 * 1 when `a` and `b` (parsed reports of one card) agree on every figure the
 * health verdict reads across heartbeats or counts: ECC counts, remapped
 * rows, retired pages, deferred errors, bad pages, the slowdown threshold,
 * lost; and neither carries events (Xids, critical events).  Temperature and
 * utilisation are not compared: they are judged on the newest report alone
 * and vary on every one.  Pure.
 */
int health_signals_same(const gpu_signals *a, const gpu_signals *b);

/*
 * Decide the state for `now`, given the previous report (`prev`, may be
 * NULL) and the current state.  OUT: cause text (e.g. "Xid 79: GPU has
 * fallen off the bus"), "" when healthy.
 */
int health_eval(const health_policy *p, const gpu_signals *now, const gpu_signals *prev,
                int current, char *cause, size_t cause_len);

/* "healthy" | "degraded" | "failed"; parse returns -1 when unknown. */
const char *health_name(int state);
int health_parse(const char *name);

/* 1 if a GPU in `state` may take new work under the policy. */
int health_allocatable(const health_policy *p, int state);

/* ---- interference on shared GPUs (interfere.c; pure) ---- */

/*
 * One job's share of a shared GPU, with what its processes used in the
 * latest sample.  A job holding several slices of the card is one entry
 * with their sums.
 */
typedef struct intf_slice {
    const char *job;     /* borrowed */
    int64_t limit_mib;   /* its slices' memory */
    int percent;         /* its slices' compute share */
    int64_t used_mib;    /* its processes' GPU memory; -1 unknown / no process */
    int sm_pct;          /* its processes' SM utilisation; -1 unknown / no process */
    int strikes;         /* IN: consecutive contended samples so far; OUT: with this one */
} intf_slice;

enum { INTF_MEMORY = 1, INTF_CONTENTION = 2 };

/* One offender: slices[offender] breaks its slice, hurting `victims` (indices). */
typedef struct intf_finding {
    int offender;
    int kind;            /* INTF_MEMORY | INTF_CONTENTION */
    int victims[32];
    int nvictims;
    char detail[200];    /* "uses 14336 MiB of its 12288 MiB slice" */
} intf_finding;

/*
 * Judge one shared GPU's sample.  `unbound_sm` is the SM % of processes
 * that belong to no binding (-1 unknown).
 *  - memory: a job using more GPU memory than its slices hold is an
 *    offender at once; every other job on the card is affected.
 *  - contention: while the card is saturated (summed SM % >= busy_pct), a
 *    job above its share by more than margin_pct, while another job with a
 *    process on the card gets less than its own share, takes a strike; any
 *    other sample resets its strikes.  At `contention_samples` strikes it is
 *    an offender, the starved jobs are affected.
 * Updates slices[].strikes.  OUT: up to `max` findings in `out`; RET: how many.
 * Invariant: n <= 32 (a card has at most 32 shared slices here).
 */
int intf_eval(const health_policy *p, intf_slice *slices, int n, int unbound_sm,
              intf_finding *out, int max);

/* "alert" | "stop"; parse returns -1 when unknown. */
const char *intf_action_name(int action);
int intf_action_parse(const char *name);

#endif
