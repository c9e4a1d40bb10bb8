/*
 * gw_metrics.c - the gateway's request, token and latency series (see gw_metrics.h).
 *
 * Two flat registries under one mutex: (model, tenant) pairs with their
 * counters, and models with their histograms.  Each is searched linearly
 * (bounded: a few thousand entries at most) once per request.
 */
#include "gw_metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double lat_buckets[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
#define NLB (sizeof lat_buckets / sizeof *lat_buckets)
static const double ttft_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define NTB (sizeof ttft_buckets / sizeof *ttft_buckets)

static const char *const classes[] = {"2xx", "4xx", "5xx", "other"};
#define NCLS 4

typedef struct gpair {
    char model[128], tenant[64];
    uint64_t req[NCLS];
    uint64_t prompt, completion;
} gpair;

typedef struct hist {
    uint64_t count, bucket[NLB > NTB ? NLB : NTB];
    double sum;
} hist;

typedef struct gmodel {
    char model[128];
    hist lat, ttft;
} gmodel;

/* own pairs, then as many (other, tenant) pairs, then (other, other) */
#define MAX_PAIRS (2 * GW_METRICS_MAX_PAIRS + 1)
#define MAX_MODELS (GW_METRICS_MAX_MODELS + 1)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static gpair *pairs;
static int npairs, nown; /* entries; of which not model="other" */
static gmodel *models;
static int nmodels;

/* The pair counters go to; with mu held.  NULL: out of memory. */
static gpair *pair_slot(const char *model, const char *tenant) {
    if (!pairs && !(pairs = calloc(MAX_PAIRS, sizeof *pairs))) return NULL;
    int other = !strcmp(model, "other");
    for (int pass = 0; pass < 3; pass++) {
        const char *m = pass == 0 ? model : "other";
        const char *t = pass == 2 ? "other" : tenant;
        for (int i = 0; i < npairs; i++)
            if (!strcmp(pairs[i].model, m) && !strcmp(pairs[i].tenant, t)) return &pairs[i];
        int room = pass == 0 ? !other && nown < GW_METRICS_MAX_PAIRS
                 : pass == 1 ? npairs - nown < GW_METRICS_MAX_PAIRS
                             : npairs < MAX_PAIRS;
        if (room && npairs < MAX_PAIRS) {
            gpair *p = &pairs[npairs++];
            memset(p, 0, sizeof *p);
            snprintf(p->model, sizeof p->model, "%s", m);
            snprintf(p->tenant, sizeof p->tenant, "%s", t);
            if (pass == 0 && !other) nown++;
            return p;
        }
    }
    return NULL;
}

/* The model histograms go to; with mu held. */
static gmodel *model_slot(const char *model) {
    if (!models && !(models = calloc(MAX_MODELS, sizeof *models))) return NULL;
    for (int pass = 0; pass < 2; pass++) {
        const char *m = pass ? "other" : model;
        for (int i = 0; i < nmodels; i++)
            if (!strcmp(models[i].model, m)) return &models[i];
        int own = 0;
        for (int i = 0; i < nmodels; i++) own += strcmp(models[i].model, "other") != 0;
        if ((pass == 1 || (own < GW_METRICS_MAX_MODELS && strcmp(m, "other") != 0)) &&
            nmodels < MAX_MODELS) {
            gmodel *g = &models[nmodels++];
            memset(g, 0, sizeof *g);
            snprintf(g->model, sizeof g->model, "%s", m);
            return g;
        }
    }
    return NULL;
}

static void observe(hist *h, const double *b, size_t nb, double sec) {
    h->count++;
    h->sum += sec;
    for (size_t i = 0; i < nb; i++)
        if (sec <= b[i]) h->bucket[i]++;
}

void gw_metrics_request(const char *model, const char *tenant, int status, int64_t prompt_tokens,
                        int64_t completion_tokens, int64_t latency_us, int upstream) {
    if (!model) model = "";
    if (!tenant) tenant = "";
    int c = status >= 200 && status < 300 ? 0 : status >= 400 && status < 500 ? 1
          : status >= 500 && status < 600 ? 2 : 3;
    pthread_mutex_lock(&mu);
    gpair *p = pair_slot(model, tenant);
    if (p) {
        p->req[c]++;
        if (prompt_tokens > 0) p->prompt += (uint64_t)prompt_tokens;
        if (completion_tokens > 0) p->completion += (uint64_t)completion_tokens;
    }
    if (upstream) {
        gmodel *g = model_slot(model);
        if (g) observe(&g->lat, lat_buckets, NLB, latency_us > 0 ? (double)latency_us / 1e6 : 0);
    }
    pthread_mutex_unlock(&mu);
}

void gw_metrics_ttft(const char *model, int64_t start_mono_us, int64_t first_mono_us) {
    if (first_mono_us <= 0) return;
    int64_t d = first_mono_us - start_mono_us;
    pthread_mutex_lock(&mu);
    gmodel *g = model_slot(model ? model : "");
    if (g) observe(&g->ttft, ttft_buckets, NTB, d > 0 ? (double)d / 1e6 : 0);
    pthread_mutex_unlock(&mu);
}

static void label(strbuf *sb, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') sb_addc(sb, '\\');
        if (*v == '\n') sb_adds(sb, "\\n");
        else sb_addc(sb, *v);
    }
}

static void pair_labels(strbuf *sb, const gpair *p) {
    sb_adds(sb, "{model=\"");
    label(sb, p->model);
    sb_adds(sb, "\",tenant=\"");
    label(sb, p->tenant);
    sb_addc(sb, '"');
}

static void render_hist(strbuf *out, const char *name, const char *help, int ttft,
                        const double *b, size_t nb) {
    sb_addf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < nmodels; i++) {
        const hist *h = ttft ? &models[i].ttft : &models[i].lat;
        if (!h->count) continue;
        for (size_t k = 0; k <= nb; k++) {
            sb_addf(out, "%s_bucket{model=\"", name);
            label(out, models[i].model);
            if (k < nb) sb_addf(out, "\",le=\"%g\"} %llu\n", b[k], (unsigned long long)h->bucket[k]);
            else sb_addf(out, "\",le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
        }
        sb_addf(out, "%s_sum{model=\"", name);
        label(out, models[i].model);
        sb_addf(out, "\"} %.6f\n", h->sum);
        sb_addf(out, "%s_count{model=\"", name);
        label(out, models[i].model);
        sb_addf(out, "\"} %llu\n", (unsigned long long)h->count);
    }
}

void gw_metrics_render(strbuf *out) {
    pthread_mutex_lock(&mu);
    sb_adds(out, "# HELP gpupool_gateway_requests_total Gateway requests recorded, by model, the "
                 "caller's tenant and status class.\n"
                 "# TYPE gpupool_gateway_requests_total counter\n");
    for (int i = 0; i < npairs; i++)
        for (int c = 0; c < NCLS; c++) {
            if (!pairs[i].req[c] && c != 0) continue;
            sb_adds(out, "gpupool_gateway_requests_total");
            pair_labels(out, &pairs[i]);
            sb_addf(out, ",code=\"%s\"} %llu\n", classes[c], (unsigned long long)pairs[i].req[c]);
        }
    sb_adds(out, "# HELP gpupool_gateway_tokens_total Tokens accounted by the gateway, by model, "
                 "the caller's tenant and kind.\n"
                 "# TYPE gpupool_gateway_tokens_total counter\n");
    for (int i = 0; i < npairs; i++)
        for (int k = 0; k < 2; k++) {
            sb_adds(out, "gpupool_gateway_tokens_total");
            pair_labels(out, &pairs[i]);
            sb_addf(out, ",kind=\"%s\"} %llu\n", k ? "completion" : "prompt",
                    (unsigned long long)(k ? pairs[i].completion : pairs[i].prompt));
        }
    render_hist(out, "gpupool_gateway_upstream_latency_seconds",
                "Time from a request's arrival to the end of the upstream's answer, by model.", 0,
                lat_buckets, NLB);
    render_hist(out, "gpupool_gateway_ttft_seconds",
                "Time from a request's arrival to the upstream's first byte, by model.", 1,
                ttft_buckets, NTB);
    pthread_mutex_unlock(&mu);
}

int gw_metrics_pairs(void) {
    pthread_mutex_lock(&mu);
    int n = npairs;
    pthread_mutex_unlock(&mu);
    return n;
}

void gw_metrics_reset(void) {
    pthread_mutex_lock(&mu);
    free(pairs);
    free(models);
    pairs = NULL;
    models = NULL;
    npairs = nown = nmodels = 0;
    pthread_mutex_unlock(&mu);
}

/* ---- per-stage time (gw_stage_observe): no lock, relaxed counters ---- */

static const char *const stage_names[GW_STAGE__N] = {"hop",      "key",  "parse", "route", "limits",
                                                     "upstream", "body", "meter", "reply"};
/* upper bounds in microseconds; the last bucket is +Inf */
static const int64_t stage_le_us[] = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10000, 100000};
#define NSB (sizeof stage_le_us / sizeof *stage_le_us)

static struct {
    atomic_ullong count, sum_us, bucket[NSB];
} stages[GW_STAGE__N];

void gw_stage_observe(gw_stage stage, int64_t us) {
    if ((unsigned)stage >= GW_STAGE__N) return;
    if (us < 0) us = 0;
    size_t i = 0;
    while (i < NSB && us > stage_le_us[i]) i++;
    atomic_fetch_add_explicit(&stages[stage].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&stages[stage].sum_us, (unsigned long long)us, memory_order_relaxed);
    if (i < NSB) atomic_fetch_add_explicit(&stages[stage].bucket[i], 1, memory_order_relaxed);
}

void gw_stage_render(strbuf *out) {
    sb_adds(out, "# HELP gpupool_gateway_stage_seconds Time a gateway request spent in each stage"
                 " of this process (docs/gateway.md, \"Where a request's time goes\").\n"
                 "# TYPE gpupool_gateway_stage_seconds histogram\n");
    for (int s = 0; s < GW_STAGE__N; s++) {
        /* every stage, even one not reached yet (a scrape before and after a run compares) */
        unsigned long long n = atomic_load_explicit(&stages[s].count, memory_order_relaxed), cum = 0;
        for (size_t i = 0; i < NSB; i++) {
            cum += atomic_load_explicit(&stages[s].bucket[i], memory_order_relaxed);
            sb_addf(out, "gpupool_gateway_stage_seconds_bucket{stage=\"%s\",le=\"%g\"} %llu\n",
                    stage_names[s], (double)stage_le_us[i] / 1e6, cum);
        }
        if (n < cum) n = cum; /* one counted meanwhile: the buckets never exceed the count */
        sb_addf(out, "gpupool_gateway_stage_seconds_bucket{stage=\"%s\",le=\"+Inf\"} %llu\n"
                     "gpupool_gateway_stage_seconds_sum{stage=\"%s\"} %.6f\n"
                     "gpupool_gateway_stage_seconds_count{stage=\"%s\"} %llu\n",
                stage_names[s], n, stage_names[s],
                (double)atomic_load_explicit(&stages[s].sum_us, memory_order_relaxed) / 1e6,
                stage_names[s], n);
    }
}
