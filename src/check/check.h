/*
 * check.h - invariant checks over a whole store, like fsck (`gpupool check`).
 *
 * check_run() loads rows in one read transaction and runs each check as a
 * pure function over them (the check_* functions below, which the unit
 * tests drive directly too); the audit chain is verified with audit.h's
 * audit_verify(), and SQLite's own integrity_check and foreign_key_check
 * run as queries.  Nothing here writes: open the store with
 * store_open_readonly().
 *
 * The checks (names as printed):
 *   gpu_exclusive   no whole card held by two open bindings, or by one and a
 *                   slice; no MIG slice held twice; the open shared slices of
 *                   a card fit its memory and 100 % compute
 *   job_bindings    every running job holds open bindings for exactly its
 *                   units; no other job (queued, admitted, ended) holds one;
 *                   every open binding belongs to a running job
 *   quota           per tenant and project, the admitted and running jobs'
 *                   demand (GPUs, GPU memory, CPUs, memory, concurrent jobs,
 *                   units per class) fits each ceiling - the dimensions
 *                   admission guarantees (card-hours accrue while running,
 *                   so they are not checked).  Lowering a ceiling never stops
 *                   running work (docs/scheduling.md), so a scope whose
 *                   ceiling changed after its newest admission is skipped
 *                   and counted in the note
 *   audit_chain     audit_verify(): the hash chain and its head; with a
 *                   trusted key (check_run_trusted), also the signed
 *                   checkpoints in the store and the checkpoint file
 *   token_ledger    per scope and month: reserved = the sum of the open
 *                   holds' amounts; where no hold is open, used = the tokens
 *                   of that month's usage records of the scope
 *   usage_hourly    the hourly rollups equal the usage records summed per
 *                   hour, tenant, project, key, model and accelerator
 *   foreign_keys    PRAGMA foreign_key_check finds nothing
 *   integrity       PRAGMA integrity_check says ok
 *
 * Ownership: a check_report owns its results' problem lists; release it
 * with check_report_release().  No locks; no global state.
 */
#ifndef GP_CHECK_H
#define GP_CHECK_H

#include "../audit/audit.h"
#include "../core/err.h"
#include "../quota/quota.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdint.h>

#define CHECK_MAX 16
#define CHECK_MAX_PROBLEMS 50 /* details kept per check (the count is exact) */

/* One check's outcome. */
typedef struct check_result {
    const char *name;  /* "gpu_exclusive" (static) */
    int ok;            /* 1 when the invariant holds */
    int64_t checked;   /* rows or objects examined */
    int64_t nproblems; /* problems found (only the first CHECK_MAX_PROBLEMS kept) */
    json_t *problems;  /* array of strings (owned) */
    char note[256];    /* what was checked, or skipped, in words */
} check_result;

typedef struct check_report {
    int n;
    check_result r[CHECK_MAX];
    int ok; /* every check holds */
} check_report;

/* Start a result named `name` (static string): ok, nothing checked. */
void check_result_init(check_result *r, const char *name);
/* Record a problem (printf-style); sets ok = 0. */
void check_problem(check_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run every check against `st`.  OUT: *out (release it).  Fails only when the store cannot be read. */
int check_run(store_t *st, check_report *out, gp_err *err);

/*
 * check_run(), with the audit chain also checked against its signed
 * checkpoints (audit_verify_signed with `trust`; NULL: the chain alone).  A
 * checkpoint file that exists but cannot be read fails the run (err).
 */
int check_run_trusted(store_t *st, const audit_trust *trust, check_report *out, gp_err *err);
/* Free the problem lists. NULL is a no-op. */
void check_report_release(check_report *rep);
/* {"ok":bool,"checks":[{name,ok,checked,problems:[…],problem_count,note}]} (new reference). */
json_t *check_report_json(const check_report *rep);

/* ---- the pure checks, over loaded rows ---- */

/* An open binding (end_us IS NULL). */
typedef struct check_binding {
    const char *id, *job_id, *gpu_uuid, *slice_uuid, *form;
    int unit;
    int shared_mem_gib, shared_pct;
    const char *node; /* NULL: not known */
} check_binding;

/* A GPU as inventory knows it. */
typedef struct check_gpu {
    const char *uuid;
    int mem_gib;
} check_gpu;

/* Open bindings against cards: `gpus` sorted by uuid (bsearch). */
void check_gpu_exclusive(const check_binding *b, int nb, const check_gpu *gpus, int ngpus,
                         check_result *r);

/* A job: its state and units. */
typedef struct check_job {
    const char *id, *state;
    int units;
    int nodes; /* a job that spans nodes: how many (0: its units go wherever each fits) */
} check_job;

/* Jobs (sorted by id) against the open bindings; a running job that spans nodes holds
 * units / nodes units on each of `nodes` distinct nodes, unit u in rank u / (units / nodes). */
void check_job_bindings(const check_job *jobs, int njobs, const check_binding *b, int nb,
                        check_result *r);

/* A job holding quota (admitted or running), with its demand. */
typedef struct check_hold {
    const char *id, *tenant_id, *project_id, *cls;
    int64_t demand[QD__N]; /* per admission dimension (card-hours 0) */
    int64_t units;
    int64_t admitted_us;   /* a lower bound of its latest admission (0: unknown) */
} check_hold;

/* A quota scope: a tenant (project_id "") or a project, with its ceilings. */
typedef struct check_scope {
    const char *tenant_id, *project_id, *label; /* label: "tenant research" */
    quota_set q;
    int64_t updated_us; /* when the ceilings last changed */
} check_scope;

/* Holding jobs against ceilings. */
void check_quota(const check_hold *h, int nh, const check_scope *sc, int nsc, check_result *r);

/*
 * Keyed sums compared: `a` (what is stored) against `b` (what it must
 * equal), both sorted by key with strcmp, each with `nv` values; a key
 * missing on one side counts as zeros there.  `vnames` names the values.
 */
typedef struct check_sum {
    const char *key;
    int64_t v[3];
} check_sum;

void check_sums(const check_sum *a, int na, const check_sum *b, int nb, int nv,
                const char *const *vnames, const char *what, check_result *r);

#endif
