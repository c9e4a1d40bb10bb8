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
} gpu_signals;

typedef struct health_policy {
    int fatal_xids[64];
    int nfatal;
    int ignored_xids[64];
    int nignored;
    int64_t corrected_ecc_rise; /* rise in aggregate corrected errors per heartbeat that degrades */
    int temperature_margin_c;   /* degraded at slowdown - margin */
    unsigned allocatable;       /* bit per HEALTH_* state that may take new work */
} health_policy;

/* The default policy. */
void health_policy_default(health_policy *p);

/* Parse a policy from JSON (fields as health_policy_json writes); GP_EINVALID with the reason. */
int health_policy_parse(json_t *j, health_policy *out, gp_err *err);

/* JSON view (new reference). */
json_t *health_policy_json(const health_policy *p);

/* Parse the agent's signals object (missing fields are zero). */
int health_signals_parse(json_t *j, gpu_signals *out, gp_err *err);

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

#endif
