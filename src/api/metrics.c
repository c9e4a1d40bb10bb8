/*
 * metrics.c - request counters and latency histograms, Prometheus text format.
 *
 * Series are keyed by (method, route pattern, status); the route is the
 * pattern, never the raw path, so cardinality stays bounded by the table.
 * Unrouted requests are counted under route="unmatched".
 * Locking: one mutex around the series list; held only to update or render.
 *
 * Beside them, counters of what a hostile client causes: 401s without a valid
 * credential by reason, connections cut for their deadlines, requests refused
 * for their framing, and a gauge of open connections.  Their label sets are
 * fixed, so they are plain atomics.  And the log limiter (api__ratelog_*).
 * The scheduler's round histogram (sched_metrics.h) follows them; series that
 * name tenants come only with a bearer token (h_metrics, meter_prometheus).
 */
#include "api_int.h"

#include "../core/strbuf.h"
#include "../gateway/gw_metrics.h"
#include "../sched/sched_metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const double buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
#define NB (sizeof buckets / sizeof buckets[0])
#define LBL "method=\"%s\",route=\"%s\",status=\"%d\""

typedef struct series {
    const char *method, *route; /* static strings (route table or literals) */
    int status;
    uint64_t count;
    uint64_t bucket[NB];
    double sum;
    struct series *next;
} series;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static series *head;

static const char *const refusal_reasons[] = {"missing", "malformed", "invalid", "credentials"};
#define NREFUSAL (sizeof refusal_reasons / sizeof refusal_reasons[0])
static atomic_ullong refusals[NREFUSAL];
static const char *const drop_reasons[] = {"headers", "body", "pressure", "slow_reader"};
#define NDROP (sizeof drop_reasons / sizeof drop_reasons[0])
static atomic_ullong drops[NDROP];
static atomic_ullong malformed;
static const char *const throttle_kinds[] = {"name_and_source", "source"};
#define NTHROTTLE (sizeof throttle_kinds / sizeof throttle_kinds[0])
static atomic_ullong throttled[NTHROTTLE];
static atomic_llong conns_open;
static atomic_llong workers_all, workers_busy;

void api__metrics_auth_refusal(const char *reason) {
    for (size_t i = 0; i < NREFUSAL; i++)
        if (strcmp(reason, refusal_reasons[i]) == 0) atomic_fetch_add(&refusals[i], 1);
}

void api__metrics_conn_dropped(const char *reason) {
    for (size_t i = 0; i < NDROP; i++)
        if (strcmp(reason, drop_reasons[i]) == 0) atomic_fetch_add(&drops[i], 1);
}

void api__metrics_malformed(void) { atomic_fetch_add(&malformed, 1); }

void api__metrics_login_throttled(const char *by) {
    for (size_t i = 0; i < NTHROTTLE; i++)
        if (strcmp(by, throttle_kinds[i]) == 0) atomic_fetch_add(&throttled[i], 1);
}

void api__metrics_conn_open(int delta) { atomic_fetch_add(&conns_open, delta); }

void api__metrics_workers(int dall, int dbusy) {
    atomic_fetch_add(&workers_all, dall);
    atomic_fetch_add(&workers_busy, dbusy);
}

/* The window's length (one second unless set). */
static int64_t rl_len(const api_ratelog *rl) { return rl->window_us > 0 ? rl->window_us : 1000000; }

int api__ratelog_take(api_ratelog *rl, int per_sec, int64_t now_us, long *report) {
    int ok;
    pthread_mutex_lock(&rl->mu);
    *report = 0;
    /* a window starts with the first line after the last one ended, not on a clock boundary:
     * a burst gets per_sec lines, whenever it comes (a clock-aligned window let a burst
     * across its boundary have twice that) */
    if (now_us - rl->window >= rl_len(rl)) {
        *report = rl->suppressed;
        rl->suppressed = 0;
        rl->window = now_us;
        rl->used = 0;
    }
    ok = rl->used < per_sec;
    if (ok) rl->used++;
    else rl->suppressed++;
    pthread_mutex_unlock(&rl->mu);
    return ok;
}

void api__ratelog_flush(api_ratelog *rl, int64_t now_us, long *report) {
    pthread_mutex_lock(&rl->mu);
    *report = 0;
    if (now_us - rl->window >= rl_len(rl) && rl->suppressed) {
        *report = rl->suppressed;
        rl->suppressed = 0;
    }
    pthread_mutex_unlock(&rl->mu);
}

void api__metrics_init(void) {}

void api__metrics_observe(const char *method, const char *route, int status, int64_t dur_us) {
    double sec = (double)dur_us / 1e6;
    pthread_mutex_lock(&mu);
    series *s;
    for (s = head; s; s = s->next)
        if (s->status == status && strcmp(s->route, route) == 0 && strcmp(s->method, method) == 0)
            break;
    if (!s && (s = calloc(1, sizeof *s))) {
        s->method = method;
        s->route = route;
        s->status = status;
        s->next = head;
        head = s;
    }
    if (s) {
        s->count++;
        s->sum += sec;
        for (size_t i = 0; i < NB; i++)
            if (sec <= buckets[i]) s->bucket[i]++;
    }
    pthread_mutex_unlock(&mu);
}

char *api__metrics_render(void) {
    strbuf sb = SB_INIT;
    pthread_mutex_lock(&mu);
    sb_adds(&sb, "# HELP gpupool_http_requests_total HTTP requests by method, route and status.\n"
                 "# TYPE gpupool_http_requests_total counter\n");
    for (series *s = head; s; s = s->next)
        sb_addf(&sb, "gpupool_http_requests_total{method=\"%s\",route=\"%s\",status=\"%d\"} %llu\n",
                s->method, s->route, s->status, (unsigned long long)s->count);
    sb_adds(&sb, "# HELP gpupool_http_request_duration_seconds HTTP request latency.\n"
                 "# TYPE gpupool_http_request_duration_seconds histogram\n");
    for (series *s = head; s; s = s->next) {
        for (size_t i = 0; i < NB; i++) {
            sb_adds(&sb, "gpupool_http_request_duration_seconds_bucket{");
            sb_addf(&sb, LBL, s->method, s->route, s->status);
            sb_addf(&sb, ",le=\"%g\"} %llu\n", buckets[i], (unsigned long long)s->bucket[i]);
        }
        sb_adds(&sb, "gpupool_http_request_duration_seconds_bucket{");
        sb_addf(&sb, LBL, s->method, s->route, s->status);
        sb_addf(&sb, ",le=\"+Inf\"} %llu\n", (unsigned long long)s->count);
        sb_adds(&sb, "gpupool_http_request_duration_seconds_sum{");
        sb_addf(&sb, LBL, s->method, s->route, s->status);
        sb_addf(&sb, "} %.6f\n", s->sum);
        sb_adds(&sb, "gpupool_http_request_duration_seconds_count{");
        sb_addf(&sb, LBL, s->method, s->route, s->status);
        sb_addf(&sb, "} %llu\n", (unsigned long long)s->count);
    }
    pthread_mutex_unlock(&mu);
    sb_adds(&sb, "# HELP gpupool_auth_refusals_total Requests refused 401 without a valid "
                 "credential, by reason.\n"
                 "# TYPE gpupool_auth_refusals_total counter\n");
    for (size_t i = 0; i < NREFUSAL; i++)
        sb_addf(&sb, "gpupool_auth_refusals_total{reason=\"%s\"} %llu\n", refusal_reasons[i],
                (unsigned long long)atomic_load(&refusals[i]));
    sb_adds(&sb, "# HELP gpupool_login_throttled_total Logins refused 429 by the failed-login "
                 "throttle, by what it counted: one name from one source, or one source.\n"
                 "# TYPE gpupool_login_throttled_total counter\n");
    for (size_t i = 0; i < NTHROTTLE; i++)
        sb_addf(&sb, "gpupool_login_throttled_total{by=\"%s\"} %llu\n", throttle_kinds[i],
                (unsigned long long)atomic_load(&throttled[i]));
    sb_adds(&sb, "# HELP gpupool_http_connections_dropped_total Connections cut for a request "
                 "not complete by its deadline, by phase.\n"
                 "# TYPE gpupool_http_connections_dropped_total counter\n");
    for (size_t i = 0; i < NDROP; i++)
        sb_addf(&sb, "gpupool_http_connections_dropped_total{reason=\"%s\"} %llu\n",
                drop_reasons[i], (unsigned long long)atomic_load(&drops[i]));
    sb_addf(&sb, "# HELP gpupool_http_malformed_total Requests refused 400 for their framing "
                 "or target.\n"
                 "# TYPE gpupool_http_malformed_total counter\n"
                 "gpupool_http_malformed_total %llu\n",
            (unsigned long long)atomic_load(&malformed));
    sb_addf(&sb, "# HELP gpupool_http_connections_open Connections open now.\n"
                 "# TYPE gpupool_http_connections_open gauge\n"
                 "gpupool_http_connections_open %lld\n",
            (long long)atomic_load(&conns_open));
    sb_addf(&sb, "# HELP gpupool_http_workers Threads that run request handlers, by state (a "
                 "parked long poll or an idle connection holds none).\n"
                 "# TYPE gpupool_http_workers gauge\n"
                 "gpupool_http_workers{state=\"busy\"} %lld\n"
                 "gpupool_http_workers{state=\"idle\"} %lld\n",
            (long long)atomic_load(&workers_busy),
            (long long)(atomic_load(&workers_all) - atomic_load(&workers_busy)));
    sched_metrics_render_rounds(&sb); /* no tenant names: for anyone */
    return sb_detach(&sb);
}

void api__metrics_free(void) {
    for (size_t i = 0; i < NREFUSAL; i++) atomic_store(&refusals[i], 0);
    for (size_t i = 0; i < NDROP; i++) atomic_store(&drops[i], 0);
    atomic_store(&malformed, 0);
    atomic_store(&conns_open, 0);
    sched_metrics_reset();
    gw_metrics_reset();
    pthread_mutex_lock(&mu);
    while (head) {
        series *n = head->next;
        free(head);
        head = n;
    }
    pthread_mutex_unlock(&mu);
}
