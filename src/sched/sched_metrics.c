/*
 * sched_metrics.c - the scheduler's counters and histograms (see sched_metrics.h).
 *
 * The registry is a flat array of (tenant, priority class) entries searched
 * linearly: it holds at most SCHED_METRICS_MAX_PAIRS + a few overflow
 * entries, and is touched once per placement or preemption, never per job
 * per round.  Round figures are plain fields under the same mutex.
 */
#include "sched_metrics.h"

#include "../core/gtime.h"
#include "share.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double round_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                       0.1,   0.25,   0.5,   1,    2.5,   5, 10};
#define NRB (sizeof round_buckets / sizeof *round_buckets)
static const double wait_buckets[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400};
#define NWB (sizeof wait_buckets / sizeof *wait_buckets)

typedef struct pair {
    char tenant[64], pclass[64];
    uint64_t placed, preempted, reclaimed;
    uint64_t wait_bucket[NWB];
    double wait_sum;
} pair;

/* The overflow entries: (other, class) for each class seen, then (other, other). */
#define MAX_ENTRIES (SCHED_METRICS_MAX_PAIRS + 64)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pair *pairs;
static int npairs;
static uint64_t rounds, rounds_failed, round_bucket[NRB];
static double round_sum;
/* the round's phases (sched_metrics_phases): read, decide, write */
#define NPHASES 3
static const char *const phase_names[NPHASES] = {"read", "decide", "write"};
static uint64_t phase_count[NPHASES], phase_bucket[NPHASES][NRB], stale_total;
static double phase_sum[NPHASES];
static const char *const cluster_sources[] = {"memory", "store", "check"};
static uint64_t cluster_reads[3], cluster_mismatches;

/* Observe `us` microseconds in a round_buckets histogram (mu held). */
static void observe(uint64_t *count, double *sum, uint64_t bucket[NRB], int64_t us) {
    double sec = us > 0 ? (double)us / 1e6 : 0;
    (*count)++;
    *sum += sec;
    for (size_t i = 0; i < NRB; i++)
        if (sec <= round_buckets[i]) bucket[i]++;
}

void sched_metrics_cluster(int source, int mismatch) {
    if (source < 0 || source > 2) return;
    pthread_mutex_lock(&mu);
    cluster_reads[source]++;
    if (mismatch) cluster_mismatches++;
    pthread_mutex_unlock(&mu);
}

void sched_metrics_phases(int64_t read_us, int64_t decide_us, int64_t write_us, int stale) {
    int64_t us[NPHASES] = {read_us, decide_us, write_us};
    pthread_mutex_lock(&mu);
    for (int p = 0; p < NPHASES; p++)
        observe(&phase_count[p], &phase_sum[p], phase_bucket[p], us[p]);
    if (stale > 0) stale_total += (uint64_t)stale;
    pthread_mutex_unlock(&mu);
}

void sched_metrics_round(int64_t took_us, int failed) {
    pthread_mutex_lock(&mu);
    observe(&rounds, &round_sum, round_bucket, took_us);
    if (failed) rounds_failed++;
    pthread_mutex_unlock(&mu);
}

/* The entry for (tenant, pclass), created when there is room; with mu held. NULL: no memory. */
static pair *entry(const char *tenant, const char *pclass) {
    for (int i = 0; i < npairs; i++)
        if (!strcmp(pairs[i].tenant, tenant) && !strcmp(pairs[i].pclass, pclass)) return &pairs[i];
    if (!pairs && !(pairs = calloc(MAX_ENTRIES, sizeof *pairs))) return NULL;
    if (npairs >= MAX_ENTRIES) return NULL;
    pair *p = &pairs[npairs++];
    memset(p, 0, sizeof *p);
    snprintf(p->tenant, sizeof p->tenant, "%s", tenant);
    snprintf(p->pclass, sizeof p->pclass, "%s", pclass);
    return p;
}

/* The entry a new observation goes to: its own, or an overflow one once the cap is reached. */
static pair *slot(const char *tenant, const char *pclass) {
    for (int i = 0; i < npairs; i++)
        if (!strcmp(pairs[i].tenant, tenant) && !strcmp(pairs[i].pclass, pclass)) return &pairs[i];
    int own = 0;
    for (int i = 0; i < npairs; i++) own += strcmp(pairs[i].tenant, "other") != 0;
    if (own < SCHED_METRICS_MAX_PAIRS && strcmp(tenant, "other") != 0) return entry(tenant, pclass);
    if (npairs < MAX_ENTRIES - 1) return entry("other", pclass);
    return entry("other", "other");
}

void sched_metrics_observe_place(const char *tenant, const char *pclass, int64_t wait_us) {
    double sec = wait_us > 0 ? (double)wait_us / 1e6 : 0;
    pthread_mutex_lock(&mu);
    pair *p = slot(tenant ? tenant : "", pclass ? pclass : "");
    if (p) {
        p->placed++;
        p->wait_sum += sec;
        for (size_t i = 0; i < NWB; i++)
            if (sec <= wait_buckets[i]) p->wait_bucket[i]++;
    }
    pthread_mutex_unlock(&mu);
}

void sched_metrics_observe_preempt(const char *tenant, const char *pclass) {
    pthread_mutex_lock(&mu);
    pair *p = slot(tenant ? tenant : "", pclass ? pclass : "");
    if (p) p->preempted++;
    pthread_mutex_unlock(&mu);
}

void sched_metrics_observe_reclaim(const char *tenant, const char *pclass) {
    pthread_mutex_lock(&mu);
    pair *p = slot(tenant ? tenant : "", pclass ? pclass : "");
    if (p) p->reclaimed++;
    pthread_mutex_unlock(&mu);
}

static void label(strbuf *sb, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') sb_addc(sb, '\\');
        if (*v == '\n') sb_adds(sb, "\\n");
        else sb_addc(sb, *v);
    }
}

static void pair_labels(strbuf *sb, const char *tenant, const char *pclass) {
    sb_adds(sb, "tenant=\"");
    label(sb, tenant);
    sb_adds(sb, "\",priority_class=\"");
    label(sb, pclass);
    sb_addc(sb, '"');
}

void sched_metrics_render_rounds(strbuf *out) {
    pthread_mutex_lock(&mu);
    sb_adds(out, "# HELP gpupool_sched_round_duration_seconds How long scheduling rounds took.\n"
                 "# TYPE gpupool_sched_round_duration_seconds histogram\n");
    for (size_t i = 0; i < NRB; i++)
        sb_addf(out, "gpupool_sched_round_duration_seconds_bucket{le=\"%g\"} %llu\n",
                round_buckets[i], (unsigned long long)round_bucket[i]);
    sb_addf(out,
            "gpupool_sched_round_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
            "gpupool_sched_round_duration_seconds_sum %.6f\n"
            "gpupool_sched_round_duration_seconds_count %llu\n"
            "# HELP gpupool_sched_rounds_failed_total Scheduling rounds rolled back.\n"
            "# TYPE gpupool_sched_rounds_failed_total counter\n"
            "gpupool_sched_rounds_failed_total %llu\n",
            (unsigned long long)rounds, round_sum, (unsigned long long)rounds,
            (unsigned long long)rounds_failed);
    sb_adds(out, "# HELP gpupool_sched_round_phase_seconds How long each phase of the scheduling"
                 " rounds took: read (the snapshot's read transaction), decide (the pure round),"
                 " write (its write transactions: the only time a round holds the store's"
                 " writer).\n"
                 "# TYPE gpupool_sched_round_phase_seconds histogram\n");
    for (int p = 0; p < NPHASES; p++) {
        for (size_t i = 0; i < NRB; i++)
            sb_addf(out, "gpupool_sched_round_phase_seconds_bucket{phase=\"%s\",le=\"%g\"} %llu\n",
                    phase_names[p], round_buckets[i], (unsigned long long)phase_bucket[p][i]);
        sb_addf(out,
                "gpupool_sched_round_phase_seconds_bucket{phase=\"%s\",le=\"+Inf\"} %llu\n"
                "gpupool_sched_round_phase_seconds_sum{phase=\"%s\"} %.6f\n"
                "gpupool_sched_round_phase_seconds_count{phase=\"%s\"} %llu\n",
                phase_names[p], (unsigned long long)phase_count[p], phase_names[p], phase_sum[p],
                phase_names[p], (unsigned long long)phase_count[p]);
    }
    sb_addf(out,
            "# HELP gpupool_sched_decisions_stale_total Scheduling decisions skipped at commit"
            " because what they were decided on changed after the round read the store.\n"
            "# TYPE gpupool_sched_decisions_stale_total counter\n"
            "gpupool_sched_decisions_stale_total %llu\n",
            (unsigned long long)stale_total);
    sb_adds(out, "# HELP gpupool_sched_cluster_reads_total Where the scheduler's rounds took the"
                 " cluster from: memory (the leader's copy), store (read: the first round, or the"
                 " cluster changed), check (read to compare with the copy, once a minute).\n"
                 "# TYPE gpupool_sched_cluster_reads_total counter\n");
    for (int i = 0; i < 3; i++)
        sb_addf(out, "gpupool_sched_cluster_reads_total{source=\"%s\"} %llu\n", cluster_sources[i],
                (unsigned long long)cluster_reads[i]);
    sb_addf(out,
            "# HELP gpupool_sched_cluster_mismatches_total Consistency checks that found the"
            " scheduler's copy of the cluster differing from the store (must stay 0).\n"
            "# TYPE gpupool_sched_cluster_mismatches_total counter\n"
            "gpupool_sched_cluster_mismatches_total %llu\n",
            (unsigned long long)cluster_mismatches);
    pthread_mutex_unlock(&mu);
}

/* The queue depth read, by name (STORE_COLS / STORE_COL_ENUM: store.h). */
#define DEPTH_COLUMNS(X) \
    X(DP_TENANT, "t.name") \
    X(DP_CLASS, "p.name") \
    X(DP_DEPTH, "COALESCE(q.n, 0)")
enum { DEPTH_COLUMNS(STORE_COL_ENUM) DP__N };

int sched_metrics_prometheus(store_tx *tx, strbuf *out, gp_err *err) {
    pthread_mutex_lock(&mu);
    sb_adds(out, "# HELP gpupool_sched_placements_total Jobs placed, by tenant and priority "
                 "class.\n# TYPE gpupool_sched_placements_total counter\n");
    for (int i = 0; i < npairs; i++) {
        sb_adds(out, "gpupool_sched_placements_total{");
        pair_labels(out, pairs[i].tenant, pairs[i].pclass);
        sb_addf(out, "} %llu\n", (unsigned long long)pairs[i].placed);
    }
    sb_adds(out, "# HELP gpupool_sched_preemptions_total Jobs preempted by a higher priority "
                 "(reclaims are counted apart), by the victim's tenant and priority class.\n"
                 "# TYPE gpupool_sched_preemptions_total counter\n");
    for (int i = 0; i < npairs; i++) {
        sb_adds(out, "gpupool_sched_preemptions_total{");
        pair_labels(out, pairs[i].tenant, pairs[i].pclass);
        sb_addf(out, "} %llu\n", (unsigned long long)pairs[i].preempted);
    }
    sb_adds(out, "# HELP gpupool_sched_reclaims_total Borrowed jobs stopped to return another "
                 "tenant's guarantee, by the victim's tenant and priority class.\n"
                 "# TYPE gpupool_sched_reclaims_total counter\n");
    for (int i = 0; i < npairs; i++) {
        sb_adds(out, "gpupool_sched_reclaims_total{");
        pair_labels(out, pairs[i].tenant, pairs[i].pclass);
        sb_addf(out, "} %llu\n", (unsigned long long)pairs[i].reclaimed);
    }
    sb_adds(out, "# HELP gpupool_sched_queue_wait_seconds Time placed jobs waited in the queue, "
                 "by tenant and priority class.\n"
                 "# TYPE gpupool_sched_queue_wait_seconds histogram\n");
    for (int i = 0; i < npairs; i++) {
        const pair *p = &pairs[i];
        for (size_t b = 0; b < NWB; b++) {
            sb_adds(out, "gpupool_sched_queue_wait_seconds_bucket{");
            pair_labels(out, p->tenant, p->pclass);
            sb_addf(out, ",le=\"%g\"} %llu\n", wait_buckets[b], (unsigned long long)p->wait_bucket[b]);
        }
        sb_adds(out, "gpupool_sched_queue_wait_seconds_bucket{");
        pair_labels(out, p->tenant, p->pclass);
        sb_addf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)p->placed);
        sb_adds(out, "gpupool_sched_queue_wait_seconds_sum{");
        pair_labels(out, p->tenant, p->pclass);
        sb_addf(out, "} %.6f\n", p->wait_sum);
        sb_adds(out, "gpupool_sched_queue_wait_seconds_count{");
        pair_labels(out, p->tenant, p->pclass);
        sb_addf(out, "} %llu\n", (unsigned long long)p->placed);
    }
    pthread_mutex_unlock(&mu);
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(DEPTH_COLUMNS) " FROM tenants t"
                         " CROSS JOIN priority_classes p LEFT JOIN"
                         " (SELECT tenant_id, priority_class, COUNT(*) AS n FROM jobs"
                         "  WHERE state IN ('queued', 'admitted') GROUP BY tenant_id, priority_class) q"
                         " ON q.tenant_id = t.id AND q.priority_class = p.name ORDER BY 1, 2",
                         "");
    if (rc) return rc;
    sb_adds(out, "# HELP gpupool_sched_queue_depth Jobs queued or admitted now, by tenant and "
                 "priority class.\n# TYPE gpupool_sched_queue_depth gauge\n");
    while ((rc = store_step(s, err)) > 0) {
        sb_adds(out, "gpupool_sched_queue_depth{");
        pair_labels(out, store_text(s, DP_TENANT), store_text(s, DP_CLASS));
        sb_addf(out, "} %lld\n", (long long)store_int(s, DP_DEPTH));
    }
    store_done(s);
    if (rc < 0) return rc;
    /* the longest preemption chain, from the store (every server's rounds, restarts too) */
    share_policy pol;
    int chain = 0;
    if ((rc = share_policy_load(tx, &pol, err)) ||
        (rc = share_chain_max(tx, gt_now_us() - pol.reclaim_window_s * 1000000, &chain, err)))
        return rc;
    sb_addf(out,
            "# HELP gpupool_sched_preemption_chain_max The most times any live job was preempted"
            " or reclaimed within the reclaim window (reclaim_window_seconds, %lld s).\n"
            "# TYPE gpupool_sched_preemption_chain_max gauge\n"
            "gpupool_sched_preemption_chain_max %d\n",
            (long long)pol.reclaim_window_s, chain);
    return GP_OK;
}

int sched_metrics_pairs(void) {
    pthread_mutex_lock(&mu);
    int n = npairs;
    pthread_mutex_unlock(&mu);
    return n;
}

void sched_metrics_reset(void) {
    pthread_mutex_lock(&mu);
    free(pairs);
    pairs = NULL;
    npairs = 0;
    rounds = rounds_failed = 0;
    round_sum = 0;
    memset(round_bucket, 0, sizeof round_bucket);
    memset(phase_count, 0, sizeof phase_count);
    memset(phase_bucket, 0, sizeof phase_bucket);
    memset(phase_sum, 0, sizeof phase_sum);
    stale_total = 0;
    memset(cluster_reads, 0, sizeof cluster_reads);
    cluster_mismatches = 0;
    pthread_mutex_unlock(&mu);
}
