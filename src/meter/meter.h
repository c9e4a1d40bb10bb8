/*
 * meter.h - metering: card-hours from the binding timeline, tokens from the
 * gateway's usage records, priced by versioned rate cards; usage and cost
 * reports.
 *
 * Card-hours: a binding held from t0 to t1 (running ones: to now) counts
 * weight x (seconds within the window) / 3600, where weight is the share of
 * its card (1 for a whole card; a MIG slice its share of the card's
 * slices; a shared slice the larger of its memory and compute share), as
 * fixed when it was placed.  Tokens: prompt and completion tokens of each
 * usage record, kept also as hourly rollups (usage_hourly, written with
 * each record) so that long reports read rollups for whole hours and raw
 * records only at the window's edges and at rate-card changes.
 *
 * Rate cards are versioned: a version applies from its effective time
 * until the next version's.  A report prices each piece of usage with the
 * version in force when it happened and lists the versions it used.  A
 * card-hour price may name a model, a vendor (nvidia, amd, intel), both or
 * neither (the default); the most specific price that matches a card wins:
 * model, then vendor, then the default (docs/metering.md).
 *
 * Pure helpers (meter.c) take structs and return decisions; the store side
 * (report.c) reads, aggregates and builds the answer.  Ownership: json_t**
 * outputs are new references.
 */
#ifndef GP_METER_H
#define GP_METER_H

#include "../core/err.h"
#include "../core/strbuf.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdint.h>

#define METER_MAX_PRICES 128
/* Bounds on prices: a card-hour (any currency, IDR and KRW included) and a million tokens. */
#define METER_MAX_CARD_HOUR_PRICE 1e6
#define METER_MAX_TOKEN_PRICE 1e6
/* ... a CPU-hour and a GiB-hour of memory */
#define METER_MAX_HOST_PRICE 1e6

enum { METER_BUCKET_NONE, METER_BUCKET_HOUR, METER_BUCKET_DAY, METER_BUCKET_MONTH };

/* ---- rate cards (meter.c: pure) ---- */

typedef struct meter_card_price {
    char model[64];  /* accelerator model as in resource classes ("A100-80GB"), "*" any */
    char vendor[8];  /* "nvidia" | "amd" | "intel" | "*" any */
    char form[8];    /* "whole" | "mig" | "shared" | "*" */
    double price;    /* per card-hour, 0..METER_MAX_CARD_HOUR_PRICE */
} meter_card_price;

typedef struct meter_token_price {
    char model[128]; /* a model service's name, or "*" */
    double input, output; /* per million tokens */
} meter_token_price;

typedef struct meter_rate_card {
    int version;
    int64_t effective_us;
    char currency[8];
    int ncard, ntok;
    meter_card_price card[METER_MAX_PRICES];
    meter_token_price tok[METER_MAX_PRICES];
    /* per CPU-hour and per GiB-hour of memory a job asked for (its class's per unit x units
     * x run time); 0 when the card names none */
    double cpu_hour, memory_gib_hour;
} meter_rate_card;

/* 1 when `v` is a vendor gpupool knows: "nvidia", "amd" or "intel" (exactly). */
int meter_vendor_valid(const char *v);

/*
 * Parse {"effective_from":RFC3339,"currency":"EUR","card_hour":[{"model"?,"vendor"?,
 * "form"?,"price"}],"tokens":[{"model","input","output"}],"cpu_hour"?,"memory_gib_hour"?,
 * "note"} (version and
 * effective time are filled by the caller when stored).  A card_hour price
 * without model (or "*") is any model's, without vendor (or "*") any vendor's;
 * one with neither is the default.  Prices are numbers in 0..METER_MAX_*; an
 * unknown vendor or form, or one (model, vendor, form) priced twice, is
 * refused.  GP_EINVALID with the reason.
 */
int meter_card_parse(json_t *spec, meter_rate_card *out, gp_err *err);
json_t *meter_card_json(const meter_rate_card *c);

/*
 * Price of a card-hour of a `vendor` card ("" or NULL: nvidia, as before
 * vendors were recorded) of `gpu_model` used as `form` ("whole", "mig:…",
 * "shared:…"), or -1 when the card names none that matches.  A price for a
 * class model matches reported names the way resource classes do
 * (inv_model_matches).  Among the matching prices the most specific wins: one
 * naming the model beats one naming only the vendor, which beats the default;
 * at the same level one naming the vendor too, then an exact form (over "*"),
 * then the longer model name, then the first listed.
 */
double meter_card_hour_price(const meter_rate_card *c, const char *vendor, const char *gpu_model,
                             const char *form);
/* Input/output prices per million tokens of `model`; 0 and -1 if the card names none. */
int meter_token_prices(const meter_rate_card *c, const char *model, double *in, double *out);

/* ---- time (meter.c: pure; UTC) ---- */

/* Start of the bucket holding t; METER_BUCKET_NONE: t itself. */
int64_t meter_bucket_start(int64_t t_us, int bucket);
/* Start of the bucket after the one starting at `start`; NONE: INT64_MAX. */
int64_t meter_bucket_next(int64_t start_us, int bucket);
/* "hour" | "day" | "month" | "" -> METER_BUCKET_*; -1 when unknown. */
int meter_bucket_parse(const char *s);
/* Microseconds two intervals [a0,a1) and [b0,b1) share. */
int64_t meter_overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1);
/* "2026-11" -> [first microsecond, first microsecond of the next month). GP_EINVALID. */
int meter_month_range(const char *month, int64_t *from_us, int64_t *to_us, gp_err *err);

/* ---- the store side (report.c) ---- */

/* Versions, oldest first (new reference). */
int meter_card_list(store_tx *tx, json_t **items, gp_err *err);
/* Store a new version (the next number). OUT: *version. */
int meter_card_add(store_tx *tx, json_t *spec, const char *created_by, int *version,
                   gp_err *err);

/* A tenant's billing mode: "showback" (figures only) or "chargeback" (invoiced). */
int meter_billing_set(store_tx *tx, const char *tenant_id, const char *mode, gp_err *err);
int meter_billing_get(store_tx *tx, const char *tenant_id, char mode[16], gp_err *err);

/* What to group usage by (bits). */
enum {
    METER_BY_TENANT = 1, METER_BY_PROJECT = 2, METER_BY_MODEL = 4, METER_BY_ACCEL = 8,
    METER_BY_KEY = 16, METER_BY_USER = 32, METER_BY_VENDOR = 64
};
/* "tenant,project,model,vendor,accelerator,key,user" -> bits; GP_EINVALID naming an unknown one. */
int meter_group_parse(const char *s, unsigned *out, gp_err *err);

typedef struct meter_query {
    int64_t from_us, to_us, now_us; /* the window [from, to); usage after now is none */
    int bucket;                     /* METER_BUCKET_* */
    unsigned group_by;              /* METER_BY_* */
    const char *tenant_id;          /* only this tenant (NULL: all) */
    const char *project_id;         /* only this project (NULL: all of the tenant) */
    const char *vendor;             /* only cards of this vendor (NULL: all; meter_vendor_valid) */
    const char *accelerator;        /* only cards (and tokens served on them) matching this
                                     * model the way classes match (NULL: all) */
    int idle;                       /* add idle capacity as its own line (platform view) */
} meter_query;

/*
 * The usage report: {from, to, bucket, group_by, filters?:{vendor?, accelerator?}, currency,
 * rate_cards:[versions used], billing:{tenant: mode}, rows:[{bucket?, tenant?, project?,
 * model?, vendor?, accelerator?, form?, key?, user?, card_hours, card_hour_cost, cpu_hours,
 * cpu_cost, memory_gib_hours, memory_cost, requests, prompt_tokens, completion_tokens,
 * token_cost, cost}], totals:{…}, capacity?:{card_hours, allocated, idle, idle_cost}}.
 * CPU- and memory-hours are what the jobs holding the cards asked for: their class's cpus and
 * memory_gib per unit (a whole unit of several cards: its share per card) x run time, priced
 * by the card's cpu_hour and memory_gib_hour.  Idle capacity (card time no binding held) is
 * priced at its card's rate in its mode and charged to the platform's own "(idle)" row; the
 * totals are the tenants' (without it).  Rows come sorted by bucket, then by their group values.  A row's
 * vendor is its cards' (bindings.vendor); tokens take the vendor of the inventory's cards
 * of the accelerator that served them ("" when none is known, e.g. an external URL).
 */
int meter_report(store_tx *tx, const meter_query *q, json_t **out, gp_err *err);

/* The report's rows as CSV text (heap; free). */
char *meter_report_csv(json_t *report);

/*
 * The cost of serving a self-hosted model (endpoints that are jobs) in a
 * window: its serving jobs' card-hours and cost, the tokens it served by
 * calling tenant (named only when `name_callers`, else others are summed as
 * "(other tenants)" next to `own_tenant`), and the cost per million tokens.
 */
int meter_serving_cost(store_tx *tx, const char *tenant_id, const char *model, int64_t from_us,
                       int64_t to_us, int64_t now_us, int name_callers, const char *own_tenant,
                       json_t **out, gp_err *err);

/*
 * Platform gauges in Prometheus text, appended to `out`: GPUs by health and
 * mode, and by vendor, model and health (`gpus`), and when `tenants` is set allocation by tenant and class,
 * queued jobs by reason, and this month's card-hours and tokens by tenant;
 * the per-GPU samples (telemetry.h: with their holders only when `tenants`),
 * and with `tenants` the scheduler's (sched_metrics.h) and gateway's
 * (gw_metrics.h) tenant-labelled series.
 */
int meter_prometheus(store_tx *tx, int64_t now_us, int gpus, int tenants, strbuf *out,
                     gp_err *err);
/* meter_serving_cost in a read transaction of its own, tied to no tenant: a model's callers
 * are other tenants too (GET .../models/{model}/serving-cost). */
int meter_serving_cost_read(store_t *st, const char *tenant_id, const char *model,
                            int64_t from_us, int64_t to_us, int64_t now_us, int name_callers,
                            const char *own_tenant, json_t **out, gp_err *err);
/* The same in a read transaction of its own (/metrics: public, served without one, so that
 * a scrape answers the request metrics even while the store does not). */
int meter_prometheus_read(store_t *st, int64_t now_us, int gpus, int tenants, strbuf *out,
                          gp_err *err);

#endif
