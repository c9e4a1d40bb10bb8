/*
 * gw_metrics.h - the gateway's Prometheus series (docs/operations.md,
 * "Metrics"), counted in this process: requests by model, tenant and status
 * class, tokens by model, tenant and kind, and upstream latency and time to
 * first token histograms by model.
 *
 * Label sets are bounded: at most GW_METRICS_MAX_PAIRS distinct (model,
 * tenant) pairs; a pair beyond them counts under model="other" with its
 * tenant (at most GW_METRICS_MAX_PAIRS more of those, then tenant="other"
 * too).  Histograms are by model only, at most GW_METRICS_MAX_MODELS of them
 * (then model="other").  No key, project or request ids.
 * Thread-safe: one mutex around the registry.
 */
#ifndef GP_GATEWAY_GW_METRICS_H
#define GP_GATEWAY_GW_METRICS_H

#include "../core/strbuf.h"

#include <stdint.h>

#define GW_METRICS_MAX_PAIRS 1000
#define GW_METRICS_MAX_MODELS 1000

/*
 * One request that reached the point of being recorded (gw_usage): `model`
 * as the caller named it, the caller's `tenant`, the HTTP `status` answered
 * (counted by class: "2xx", "4xx", "5xx", other codes as "other"), the tokens
 * accounted (negative counts as 0) and the latency from arrival to the end of
 * the answer (observed in gpupool_gateway_upstream_latency_seconds when an
 * upstream was called: status other than 503 without endpoint; the caller
 * says so with `upstream`).
 */
void gw_metrics_request(const char *model, const char *tenant, int status, int64_t prompt_tokens,
                        int64_t completion_tokens, int64_t latency_us, int upstream);

/*
 * Time to first token of a request to `model`: from its arrival
 * (`start_mono_us`) to the upstream's first body byte (`first_mono_us`, 0
 * when none came: nothing is observed).
 */
void gw_metrics_ttft(const char *model, int64_t start_mono_us, int64_t first_mono_us);

/* Monotonic time (gt_mono_us) of a call's first body byte, 0 when none came (proxy.c). */
struct gw_call;
int64_t gw_call_first_byte_mono(const struct gw_call *c);

/*
 * Append gpupool_gateway_requests_total{model,tenant,code},
 * gpupool_gateway_tokens_total{model,tenant,kind} (kind prompt|completion),
 * gpupool_gateway_upstream_latency_seconds{model} and
 * gpupool_gateway_ttft_seconds{model} (histograms).
 */
void gw_metrics_render(strbuf *out);

/*
 * Per-stage time of a gateway request (docs/gateway.md, "Where a request's
 * time goes"): lock-free counters, one histogram per stage, so that timing
 * every request costs two clock reads and a few relaxed atomic adds per
 * stage.  hop: from the body's arrival to the handler's start (0 when the
 * event thread ran it, handing nothing over); key, parse, route, limits:
 * those stages of request.c; upstream: connect, send and wait for the
 * upstream's status and headers; body: the upstream's body read, its usage
 * read and the answer made; meter: the usage record queued (and every
 * counter with it); reply: from the handler's end to the answer written
 * (whole answers only).
 */
typedef enum gw_stage {
    GW_STAGE_HOP,
    GW_STAGE_KEY,
    GW_STAGE_PARSE,
    GW_STAGE_ROUTE,
    GW_STAGE_LIMITS,
    GW_STAGE_UPSTREAM,
    GW_STAGE_BODY,
    GW_STAGE_METER,
    GW_STAGE_REPLY,
    GW_STAGE__N
} gw_stage;

/* Count `us` microseconds spent in `stage` (negative counts as 0). */
void gw_stage_observe(gw_stage stage, int64_t us);

/* Append gpupool_gateway_stage_seconds{stage} (histogram). */
void gw_stage_render(strbuf *out);

/* Distinct (model, tenant) entries held now, overflow entries included (tests). */
int gw_metrics_pairs(void);

/* Forget every figure (tests; server shutdown). */
void gw_metrics_reset(void);

#endif
