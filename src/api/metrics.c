/*
 * metrics.c - request counters and latency histograms, Prometheus text format.
 *
 * Series are keyed by (method, route pattern, status); the route is the
 * pattern, never the raw path, so cardinality stays bounded by the table.
 * Unrouted requests are counted under route="unmatched".
 * Locking: one mutex around the series list; held only to update or render.
 */
#include "api_int.h"

#include "../core/strbuf.h"

#include <pthread.h>
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
    return sb_detach(&sb);
}

void api__metrics_free(void) {
    pthread_mutex_lock(&mu);
    while (head) {
        series *n = head->next;
        free(head);
        head = n;
    }
    pthread_mutex_unlock(&mu);
}
