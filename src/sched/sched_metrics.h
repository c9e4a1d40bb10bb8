/*
 * sched_metrics.h - the scheduler's Prometheus series (docs/operations.md,
 * "Metrics"): round durations, placements, preemptions, reclaims and queue waits,
 * counted in this process (the leader's scheduler), and queue depth read from
 * the store at scrape time, with the longest preemption chain.
 *
 * Label sets are bounded: (tenant, priority class) pairs are at most the
 * tenants and classes that exist, and a registry never holds more than
 * SCHED_METRICS_MAX_PAIRS of them (further pairs count under tenant="other"
 * with their class, then priority_class="other" too).  No job ids.
 * Thread-safe: one mutex around the registry.
 */
#ifndef GP_SCHED_METRICS_H
#define GP_SCHED_METRICS_H

#include "../core/err.h"
#include "../core/strbuf.h"
#include "../store/store.h"

#include <stdint.h>

#define SCHED_METRICS_MAX_PAIRS 1000

/* A round ended after `took_us` (failed: it was rolled back). */
void sched_metrics_round(int64_t took_us, int failed);

/*
 * A round's phases took read_us (the snapshot's read transaction), decide_us (the pure
 * round) and write_us (its write transaction: the writer held), and `stale` of its decisions
 * were skipped as changed since the read.  Observed in
 * gpupool_sched_round_phase_seconds{phase} and gpupool_sched_decisions_stale_total.
 */
void sched_metrics_phases(int64_t read_us, int64_t decide_us, int64_t write_us, int stale);

/*
 * Where a round's cluster came from (round_mem.c, "the cluster in memory"): SCHED_CLUSTER_MEMORY
 * (the leader's copy), SCHED_CLUSTER_READ (read from the store: the first round, or it
 * changed) or SCHED_CLUSTER_CHECK (the periodic consistency check read it and compared;
 * `mismatch` 1 when the copy differed).  Observed in gpupool_sched_cluster_reads_total{source}
 * and gpupool_sched_cluster_mismatches_total (which must stay 0).
 */
enum { SCHED_CLUSTER_MEMORY, SCHED_CLUSTER_READ, SCHED_CLUSTER_CHECK };
void sched_metrics_cluster(int source, int mismatch);

/* Job placed after waiting `wait_us` / preempted, of tenant `tenant` and priority class
 * `pclass` (pure registry updates; the round reads the class with its guards). */
void sched_metrics_observe_place(const char *tenant, const char *pclass, int64_t wait_us);
void sched_metrics_observe_preempt(const char *tenant, const char *pclass);
/* Job reclaimed (stopped to return another tenant's guarantee; not counted as preempted). */
void sched_metrics_observe_reclaim(const char *tenant, const char *pclass);

/*
 * Append the series without tenant names: gpupool_sched_round_duration_seconds
 * (histogram), gpupool_sched_rounds_failed_total, gpupool_sched_round_phase_seconds
 * (histogram by phase: read, decide, write), gpupool_sched_decisions_stale_total,
 * gpupool_sched_cluster_reads_total{source} and gpupool_sched_cluster_mismatches_total.
 */
void sched_metrics_render_rounds(strbuf *out);

/*
 * Append the tenant-labelled series: gpupool_sched_placements_total,
 * gpupool_sched_preemptions_total (priority preemption only),
 * gpupool_sched_reclaims_total (counters) and
 * gpupool_sched_queue_wait_seconds (histogram), each by {tenant,
 * priority_class}; gpupool_sched_queue_depth{tenant,priority_class}
 * (jobs queued or admitted now, every tenant x class, from `tx`); and
 * gpupool_sched_preemption_chain_max (gauge, from `tx`: the most times any
 * live job was preempted or reclaimed within the reclaim window).
 */
int sched_metrics_prometheus(store_tx *tx, strbuf *out, gp_err *err);

/* Pairs held in the registry now (tests). */
int sched_metrics_pairs(void);

/* Forget every figure (tests; server shutdown). */
void sched_metrics_reset(void);

#endif
