/*
 * report.c - rate cards and billing modes in the store, and the usage and
 * cost reports (see meter.h).
 *
 * A report walks three sources and adds into one table of rows keyed by
 * bucket and group values:
 *   - bindings overlapping the window (open ones up to now), each cut at
 *     bucket and rate-card boundaries, card-hours = weight x time;
 *   - usage_hourly for the window's whole hours, except hours in which a
 *     rate card changes;
 *   - usage_records for the rest (the window's partial first and last
 *     hours, and those hours).
 * With `idle`, GPU capacity (time each GPU was registered and not failed)
 * less what bindings held becomes an idle line per bucket, so that
 * allocated + idle = capacity.
 */
#include "meter.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/strbuf.h"
#include "../gateway/gw_metrics.h"
#include "../inventory/inventory.h"
#include "../inventory/telemetry.h"
#include "../sched/reservations.h"
#include "../sched/sched_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HOUR_US 3600000000LL

/* ---- rate cards and billing in the store ---- */

/* A rate card's row as load_cards reads it (STORE_COLS). */
#define CARD_COLUMNS(X) X(RC_VERSION, "version") X(RC_EFFECTIVE, "effective_from") X(RC_SPEC, "spec")
enum { CARD_COLUMNS(STORE_COL_ENUM) RC__N };

static int load_cards(store_tx *tx, meter_rate_card **out, int *n, gp_err *err) {
    store_stmt *s;
    *out = NULL;
    *n = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CARD_COLUMNS) " FROM rate_cards"
                         " ORDER BY effective_from, version",
                         "");
    if (rc) return rc;
    int cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            meter_rate_card *nc = realloc(*out, (size_t)cap * sizeof *nc);
            if (!nc) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            *out = nc;
        }
        json_t *spec = json_loads(store_text(s, RC_SPEC), 0, NULL);
        gp_err e2 = GP_ERR_INIT;
        meter_rate_card *c = &(*out)[*n];
        if (meter_card_parse(spec, c, &e2) == GP_OK) {
            c->version = (int)store_int(s, RC_VERSION);
            c->effective_us = store_int(s, RC_EFFECTIVE);
            (*n)++;
        }
        json_decref(spec);
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    return GP_OK;
}

int meter_card_list(store_tx *tx, json_t **items, gp_err *err) {
    meter_rate_card *cards;
    int n;
    int rc = load_cards(tx, &cards, &n, err);
    if (rc) return rc;
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(arr, meter_card_json(&cards[i]));
    free(cards);
    *items = arr;
    return GP_OK;
}

int meter_card_add(store_tx *tx, json_t *spec, const char *created_by, int *version,
                   gp_err *err) {
    meter_rate_card *c = malloc(sizeof *c), *cards = NULL;
    int n = 0;
    if (!c) return gp_err_set(err, GP_ENOMEM, NULL);
    int rc = meter_card_parse(spec, c, err);
    if (!rc) rc = load_cards(tx, &cards, &n, err);
    if (!rc && n && c->effective_us <= cards[n - 1].effective_us)
        rc = gp_err_set(err, GP_EINVALID,
                        "effective_from must be after the latest version's (version %d)",
                        cards[n - 1].version);
    if (!rc && n && strcmp(c->currency, cards[n - 1].currency))
        rc = gp_err_set(err, GP_EINVALID, "every version is in %s: a report adds them up",
                        cards[n - 1].currency);
    int64_t eff = c->effective_us;
    char cur[8];
    snprintf(cur, sizeof cur, "%s", c->currency);
    free(c);
    free(cards);
    if (rc) return rc;
    store_stmt *s;
    if ((rc = store_query(tx, &s, err, "SELECT COALESCE(MAX(version), 0) + 1 FROM rate_cards", "")))
        return rc;
    rc = store_step(s, err);
    *version = rc > 0 ? (int)store_int(s, 0) : 1;
    store_done(s);
    if (rc < 0) return rc;
    char *text = jx_dump(spec);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO rate_cards (version, effective_from, currency, spec, created_by,"
                    " created_at) VALUES (?,?,?,?,?,?)",
                    "iisssi", (int64_t)*version, eff, cur, text ? text : "{}", created_by,
                    gt_now_us());
    free(text);
    return rc;
}

int meter_billing_set(store_tx *tx, const char *tenant_id, const char *mode, gp_err *err) {
    if (!mode || (strcmp(mode, "showback") && strcmp(mode, "chargeback")))
        return gp_err_set(err, GP_EINVALID, "mode must be showback or chargeback");
    return store_exec(tx, NULL, err,
                      "INSERT INTO tenant_billing (tenant_id, mode, updated_at) VALUES (?,?,?)"
                      " ON CONFLICT (tenant_id) DO UPDATE SET mode = excluded.mode,"
                      " updated_at = excluded.updated_at",
                      "ssi", tenant_id, mode, gt_now_us());
}

int meter_billing_get(store_tx *tx, const char *tenant_id, char mode[16], gp_err *err) {
    store_stmt *s;
    snprintf(mode, 16, "showback");
    int rc = store_query(tx, &s, err, "SELECT mode FROM tenant_billing WHERE tenant_id = ?", "s",
                         tenant_id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(mode, 16, "%s", store_text(s, 0));
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* ---- the aggregation table ---- */

enum { F_TENANT, F_PROJECT, F_MODEL, F_VENDOR, F_ACCEL, F_FORM, F_KEY, F_USER, F__N };
static const char *const fnames[F__N] = {"tenant", "project", "model", "vendor", "accelerator",
                                         "form", "key", "user"};

/* The inventory's card models and their vendors: the vendor of the tokens an accelerator served. */
typedef struct accel_vendor {
    char model[96];
    char vendor[8];
} accel_vendor;

typedef struct row {
    char *key;              /* bucket + group values, the table's key */
    int64_t bucket;
    char *f[F__N];          /* group values (NULL: not grouped by it) */
    double card_hours, card_cost;
    int64_t requests, prompt, completion;
    double token_cost;
    double rsv_hours, rsv_cost; /* reserved but unused, charged to the holder */
    double cpu_hours, cpu_cost, mem_hours, mem_cost; /* what the holding jobs asked for */
} row;

typedef struct agg {
    row **slots;
    size_t cap, n;
    const meter_query *q;
    meter_rate_card *cards;
    int ncards;
    int *used_versions;     /* 1 per card that priced something */
    int unpriced;           /* usage no card priced */
    accel_vendor *av;       /* loaded when the report groups or filters by vendor */
    int nav;
    int reserved;           /* some reserved-but-unused time was counted */
} agg;

static unsigned long hash_str(const char *s) {
    unsigned long h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

static int agg_grow(agg *a) {
    size_t nc = a->cap ? a->cap * 2 : 256;
    row **ns = calloc(nc, sizeof *ns);
    if (!ns) return -1;
    for (size_t i = 0; i < a->cap; i++) {
        if (!a->slots[i]) continue;
        size_t h = hash_str(a->slots[i]->key) & (nc - 1);
        while (ns[h]) h = (h + 1) & (nc - 1);
        ns[h] = a->slots[i];
    }
    free(a->slots);
    a->slots = ns;
    a->cap = nc;
    return 0;
}

/* The row for (bucket, values) - values already blanked where not grouped. NULL: no memory. */
static row *agg_row(agg *a, int64_t bucket, const char *const v[F__N]) {
    char kb[1200];
    size_t n = (size_t)snprintf(kb, sizeof kb, "%020lld", (long long)bucket);
    for (int i = 0; i < F__N && n < sizeof kb; i++)
        n += (size_t)snprintf(kb + n, sizeof kb - n, "\x1f%s", v[i] ? v[i] : "\x1e");
    if (n >= sizeof kb) return NULL; /* values are short names; never this long */
    if ((a->n + 1) * 2 > a->cap && agg_grow(a)) return NULL;
    size_t h = hash_str(kb) & (a->cap - 1);
    while (a->slots[h]) {
        if (!strcmp(a->slots[h]->key, kb)) return a->slots[h];
        h = (h + 1) & (a->cap - 1);
    }
    row *r = calloc(1, sizeof *r);
    if (!r || !(r->key = strdup(kb))) {
        free(r);
        return NULL;
    }
    r->bucket = bucket;
    for (int i = 0; i < F__N; i++) r->f[i] = v[i] ? strdup(v[i]) : NULL;
    a->slots[h] = r;
    a->n++;
    return r;
}

static void agg_free(agg *a) {
    for (size_t i = 0; i < a->cap; i++) {
        row *r = a->slots[i];
        if (!r) continue;
        free(r->key);
        for (int k = 0; k < F__N; k++) free(r->f[k]);
        free(r);
    }
    free(a->slots);
    free(a->used_versions);
    free(a->av);
}

/* A card's model and vendor, as load_accel_vendors and rsv_cards read them (STORE_COLS). */
#define MODEL_VENDOR_COLUMNS(X) X(MV_MODEL, "model") X(MV_VENDOR, "vendor")
#define GPU_MODEL_VENDOR_COLUMNS(X) X(GV_MODEL, "g.model") X(GV_VENDOR, "g.vendor")
enum { MODEL_VENDOR_COLUMNS(STORE_COL_ENUM) MV__N };
enum { GPU_MODEL_VENDOR_COLUMNS(STORE_COL_ENUM) GV__N };

/* Fill a->av from the inventory (one row per model and vendor). */
static int load_accel_vendors(store_tx *tx, agg *a, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT DISTINCT " STORE_COLS(MODEL_VENDOR_COLUMNS)
                         " FROM gpus ORDER BY model, vendor", "");
    if (rc) return rc;
    int cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (a->nav == cap) {
            cap = cap ? cap * 2 : 16;
            accel_vendor *n = realloc(a->av, (size_t)cap * sizeof *n);
            if (!n) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            a->av = n;
        }
        snprintf(a->av[a->nav].model, sizeof a->av[0].model, "%s", store_text(s, MV_MODEL));
        snprintf(a->av[a->nav].vendor, sizeof a->av[0].vendor, "%s", store_text(s, MV_VENDOR));
        a->nav++;
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* The vendor of the cards of `accel` (a class-style model name an endpoint names), "" unknown. */
static const char *tok_vendor(const agg *a, const char *accel) {
    if (!accel || !*accel) return "";
    for (int i = 0; i < a->nav; i++)
        if (!strcasecmp(a->av[i].model, accel) || inv_model_matches(accel, a->av[i].model))
            return a->av[i].vendor;
    return "";
}

/* Does usage on a `vendor` card of `model` pass the report's vendor and accelerator filters? */
static int passes(const meter_query *q, const char *vendor, const char *model) {
    if (q->vendor && strcmp(q->vendor, vendor && *vendor ? vendor : "")) return 0;
    if (q->accelerator && !(model && (!strcasecmp(q->accelerator, model) ||
                                      inv_model_matches(q->accelerator, model))))
        return 0;
    return 1;
}

/* Index of the card in force at t, or -1. */
static int card_at(const agg *a, int64_t t) {
    int lo = 0, hi = a->ncards - 1, best = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a->cards[mid].effective_us <= t) best = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    return best;
}

/* The first rate-card change after t (INT64_MAX: none). */
static int64_t card_change_after(const agg *a, int64_t t) {
    int i = card_at(a, t);
    return i + 1 < a->ncards ? a->cards[i + 1].effective_us : INT64_MAX;
}

static int64_t bucket_of(const agg *a, int64_t t) {
    return a->q->bucket == METER_BUCKET_NONE ? a->q->from_us : meter_bucket_start(t, a->q->bucket);
}

/* Blank the values the report does not group by. */
static void select_fields(unsigned by, const char *v[F__N]) {
    if (!(by & METER_BY_TENANT)) v[F_TENANT] = NULL;
    if (!(by & METER_BY_PROJECT)) v[F_PROJECT] = NULL;
    if (!(by & METER_BY_MODEL)) v[F_MODEL] = NULL;
    if (!(by & METER_BY_VENDOR)) v[F_VENDOR] = NULL;
    if (!(by & METER_BY_ACCEL)) v[F_ACCEL] = v[F_FORM] = NULL;
    if (!(by & METER_BY_KEY)) v[F_KEY] = NULL;
    if (!(by & METER_BY_USER)) v[F_USER] = NULL;
}

/* ---- card-hours ---- */

/* "mig:3g.40gb" -> "mig" */
static void form_kind(const char *form, char out[8]) {
    size_t n = strcspn(form, ":");
    snprintf(out, 8, "%.*s", (int)(n > 7 ? 7 : n), form);
}

/* Add [t0, t1) of a binding of `weight_milli` whose job asked for `cpus` CPUs and `mem_gib`
 * GiB with this card, cut at buckets and rate cards. OUT: *held. */
static int add_held(agg *a, const char *v[F__N], const char *vendor, const char *gpu_model,
                    const char *form, int64_t weight_milli, double cpus, double mem_gib,
                    int64_t t0, int64_t t1, double *held) {
    for (int64_t t = t0; t < t1;) {
        int64_t b = bucket_of(a, t);
        int64_t end = a->q->bucket == METER_BUCKET_NONE ? t1 : meter_bucket_next(b, a->q->bucket);
        int64_t change = card_change_after(a, t);
        if (change < end) end = change;
        if (t1 < end) end = t1;
        double hours = (double)(end - t) / (double)HOUR_US;
        double ch = (double)weight_milli / 1000.0 * hours;
        if (held) *held += ch;
        if (v) {
            row *r = agg_row(a, b, v);
            if (!r) return -1;
            r->card_hours += ch;
            int ci = card_at(a, t);
            r->cpu_hours += cpus * hours;
            r->mem_hours += mem_gib * hours;
            if (ci >= 0) {
                r->cpu_cost += cpus * hours * a->cards[ci].cpu_hour;
                r->mem_cost += mem_gib * hours * a->cards[ci].memory_gib_hour;
                if ((cpus > 0 && a->cards[ci].cpu_hour > 0) ||
                    (mem_gib > 0 && a->cards[ci].memory_gib_hour > 0))
                    a->used_versions[ci] = 1;
            }
            double price =
                ci >= 0 ? meter_card_hour_price(&a->cards[ci], vendor, gpu_model, form) : -1;
            if (price >= 0) {
                r->card_cost += ch * price;
                a->used_versions[ci] = 1;
            } else {
                a->unpriced = 1;
            }
        }
        t = end;
    }
    return 0;
}

/* A binding's row as card_hours reads it, with the CPUs, memory and cards its job's class
 * asked for (STORE_COLS): END, when it ended (an open one's: the first parameter, now), USER,
 * its job's submitter ('' unless the report groups by user: that costs a join). */
#define HELD_COLUMNS_(X, END, USER)                                                       \
    X(HC_TENANT, "b.tenant")                                                              \
    X(HC_PROJECT, "b.project")                                                            \
    X(HC_MODEL, "b.model")                                                                \
    X(HC_FORM, "b.form")                                                                  \
    X(HC_WEIGHT, "b.weight_milli")                                                        \
    X(HC_START, "b.start_us")                                                             \
    X(HC_END, END)                                                                        \
    X(HC_USER, USER)                                                                      \
    X(HC_VENDOR, "b.vendor")                                                              \
    X(HC_CPUS, "COALESCE(c.cpus, 0)")                                                     \
    X(HC_MEMORY, "COALESCE(c.memory_gib, 0)")                                             \
    X(HC_GPUS, "COALESCE(c.gpus, 1)")
#define HELD_OPEN_USER_COLUMNS(X)                                                         \
    HELD_COLUMNS_(X, "COALESCE(b.end_us, ?)", "COALESCE(j.submitter, '')")
#define HELD_ENDED_USER_COLUMNS(X) HELD_COLUMNS_(X, "b.end_us", "COALESCE(j.submitter, '')")
#define HELD_OPEN_COLUMNS(X) HELD_COLUMNS_(X, "COALESCE(b.end_us, ?)", "''")
#define HELD_ENDED_COLUMNS(X) HELD_COLUMNS_(X, "b.end_us", "''")
enum { HELD_OPEN_COLUMNS(STORE_COL_ENUM) HC__N };

static int card_hours(store_tx *tx, agg *a, gp_err *err) {
    const meter_query *q = a->q;
    int64_t to = q->to_us < q->now_us ? q->to_us : q->now_us;
    if (to <= q->from_us) return GP_OK;
    store_stmt *s;
    /* two index ranges: still open, or ended inside/after the window */
    /* the submitter (user) costs a join: only when grouping by it */
    int by_user = (q->group_by & METER_BY_USER) != 0;
    /* the job's class: the CPUs and memory its units asked for (a class gone since: none) */
#define HELD_FROM                                                                              \
    " FROM bindings b LEFT JOIN jobs j ON j.id = b.job_id LEFT JOIN classes c ON c.name = j.class"
    int rc = store_query(
        tx, &s, err,
        by_user
            ? "SELECT " STORE_COLS(HELD_OPEN_USER_COLUMNS) HELD_FROM
              " WHERE b.end_us IS NULL AND b.start_us < ? AND (? IS NULL OR b.tenant_id = ?)"
              " AND (? IS NULL OR b.project_id = ?)"
              " UNION ALL "
              "SELECT " STORE_COLS(HELD_ENDED_USER_COLUMNS) HELD_FROM
              " WHERE b.end_us > ? AND b.start_us < ? AND (? IS NULL OR b.tenant_id = ?)"
              " AND (? IS NULL OR b.project_id = ?)"
            : "SELECT " STORE_COLS(HELD_OPEN_COLUMNS) HELD_FROM
              " WHERE b.end_us IS NULL AND b.start_us < ? AND (? IS NULL OR b.tenant_id = ?)"
              " AND (? IS NULL OR b.project_id = ?)"
              " UNION ALL "
              "SELECT " STORE_COLS(HELD_ENDED_COLUMNS) HELD_FROM
              " WHERE b.end_us > ? AND b.start_us < ? AND (? IS NULL OR b.tenant_id = ?)"
              " AND (? IS NULL OR b.project_id = ?)",
        "iissssiissss", q->now_us, to, q->tenant_id, q->tenant_id, q->project_id, q->project_id,
        q->from_us, to, q->tenant_id, q->tenant_id, q->project_id, q->project_id);
#undef HELD_FROM
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        int64_t t0 = store_int(s, HC_START), t1 = store_int(s, HC_END);
        if (t0 < q->from_us) t0 = q->from_us;
        if (t1 > to) t1 = to;
        if (t1 <= t0) continue;
        const char *vendor = *store_text(s, HC_VENDOR) ? store_text(s, HC_VENDOR) : "nvidia";
        if (!passes(q, vendor, store_text(s, HC_MODEL))) continue;
        char kind[8];
        form_kind(store_text(s, HC_FORM), kind);
        const char *v[F__N] = {store_text(s, HC_TENANT), store_text(s, HC_PROJECT), "", vendor,
                               store_text(s, HC_MODEL), kind, "", store_text(s, HC_USER)};
        select_fields(q->group_by, v);
        /* one binding per card: a whole unit of several cards asked for its CPUs and memory
         * once, so each card carries its share */
        double per = 1;
        if (!strcmp(kind, "whole") && store_int(s, HC_GPUS) > 1)
            per = (double)store_int(s, HC_GPUS);
        if (add_held(a, v, vendor, store_text(s, HC_MODEL), store_text(s, HC_FORM),
                     store_int(s, HC_WEIGHT), (double)store_int(s, HC_CPUS) / per,
                     (double)store_int(s, HC_MEMORY) / per, t0, t1, NULL)) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* ---- reserved but unused (docs/scheduling.md "Reservations"; reserve.h) ---- */

typedef struct rsv_acct {
    char id[RND_ID_LEN], tenant[64], project[64], pool[64], cls[64];
    int64_t count, deleted, created;
    char *nodes;
    rsv_rule rule;
} rsv_acct;

/* The cards a reservation holds (a count, or every card of its named nodes) and a card of
 * them, for its price: model and vendor. */
static int rsv_cards(store_tx *tx, const rsv_acct *r, int64_t *cards, char model[96],
                     char vendor[8], gp_err *err) {
    store_stmt *s;
    int rc;
    *cards = r->count;
    model[0] = vendor[0] = '\0';
    if (r->count) {
        json_t *models = NULL;
        if ((rc = store_query(tx, &s, err, "SELECT gpu_models FROM classes WHERE name = ?", "s",
                              r->cls)))
            return rc;
        if ((rc = store_step(s, err)) > 0) models = json_loads(store_text(s, 0), 0, NULL);
        store_done(s);
        if (rc < 0) return rc;
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(GPU_MODEL_VENDOR_COLUMNS)
                         " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE n.pool = ? ORDER BY n.name, g.idx",
                         "s", r->pool);
        if (rc) {
            json_decref(models);
            return rc;
        }
        while (!model[0] && (rc = store_step(s, err)) > 0) {
            size_t i;
            json_t *m;
            json_array_foreach(models, i, m) {
                if (model[0] || !json_is_string(m) ||
                    !inv_model_matches(json_string_value(m), store_text(s, GV_MODEL)))
                    continue;
                snprintf(model, 96, "%s", store_text(s, GV_MODEL));
                snprintf(vendor, 8, "%s", store_text(s, GV_VENDOR));
            }
        }
        store_done(s);
        json_decref(models);
        return rc < 0 ? rc : GP_OK;
    }
    json_t *names = json_loads(r->nodes, 0, NULL);
    size_t i;
    json_t *v;
    rc = GP_OK;
    json_array_foreach(names, i, v) {
        if (!json_is_string(v)) continue;
        if ((rc = store_query(tx, &s, err,
                              "SELECT " STORE_COLS(GPU_MODEL_VENDOR_COLUMNS)
                              " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                              " WHERE n.name = ? ORDER BY g.idx",
                              "s", json_string_value(v))))
            break;
        while ((rc = store_step(s, err)) > 0) {
            (*cards)++;
            if (!model[0]) {
                snprintf(model, 96, "%s", store_text(s, GV_MODEL));
                snprintf(vendor, 8, "%s", store_text(s, GV_VENDOR));
            }
        }
        store_done(s);
        if (rc < 0) break;
        rc = GP_OK;
    }
    json_decref(names);
    return rc;
}

/* The card intervals its own jobs held in [from, to): one card per card, while any binding
 * held it (a card whose slices its jobs share is used once, whole, as a count holds it). */
/* A reservation's own binding as rsv_spans reads it (STORE_COLS; ?1: now). */
#define SPAN_COLUMNS(X)                                                                   \
    X(SP_START, "b.start_us")                                                             \
    X(SP_END, "COALESCE(b.end_us, ?1)")                                                   \
    X(SP_GPU, "b.gpu_uuid")
enum { SPAN_COLUMNS(STORE_COL_ENUM) SP__N };

static int rsv_spans(store_tx *tx, const char *id, int64_t from, int64_t to, int64_t now,
                     rsv_use_span **out, int *n, gp_err *err) {
    store_stmt *s;
    *out = NULL;
    *n = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SPAN_COLUMNS) " FROM bindings b"
                         " JOIN jobs j ON j.id = b.job_id WHERE j.reservation_id = ?2"
                         " AND b.start_us < ?3 AND COALESCE(b.end_us, ?1) > ?4"
                         " ORDER BY b.gpu_uuid, b.start_us",
                         "isii", now, id, to, from);
    if (rc) return rc;
    int cap = 0;
    char last[128] = "";
    while ((rc = store_step(s, err)) > 0) {
        /* the same card, overlapping or touching the last interval: one longer interval */
        if (*n && !strcmp(last, store_text(s, SP_GPU)) &&
            store_int(s, SP_START) <= (*out)[*n - 1].end_us) {
            if (store_int(s, SP_END) > (*out)[*n - 1].end_us)
                (*out)[*n - 1].end_us = store_int(s, SP_END);
            continue;
        }
        snprintf(last, sizeof last, "%s", store_text(s, SP_GPU));
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            rsv_use_span *ns = realloc(*out, (size_t)cap * sizeof *ns);
            if (!ns) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            *out = ns;
        }
        (*out)[(*n)++] = (rsv_use_span){store_int(s, SP_START), store_int(s, SP_END), 1};
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    return GP_OK;
}

/* Occurrences of one reservation looked at, at most (a window every second for a month). */
#define RSV_MAX_OCCURRENCES 100000

/*
 * The holder's reserved-but-unused card-hours: for each tenant's reservation, each occurrence
 * within the window (from its creation, up to its deletion and now), its cards times the time
 * less what its own jobs' bindings held then (rsv_unused_card_s), cut at buckets and priced as
 * a card-hour of its cards (a whole card of its model and vendor) at the time.  A maintenance
 * window is nobody's: not counted.
 */
/* A reservation's row as reserved_unused reads it (STORE_COLS). */
#define RSV_COLUMNS(X)                                                                    \
    X(RV_ID, "r.id")                                                                      \
    X(RV_TENANT, "t.name")                                                                \
    X(RV_PROJECT, "COALESCE(p.name, '')")                                                 \
    X(RV_COUNT, "r.count")                                                                \
    X(RV_NODES, "r.nodes")                                                                \
    X(RV_POOL, "r.pool")                                                                  \
    X(RV_CLASS, "r.class")                                                                \
    X(RV_START, "r.start_us")                                                             \
    X(RV_END, "r.end_us")                                                                 \
    X(RV_RECURRENCE, "r.recurrence")                                                      \
    X(RV_WEEKDAYS, "r.weekdays")                                                          \
    X(RV_EVERY, "r.every_s")                                                              \
    X(RV_UNTIL, "r.until_us")                                                             \
    X(RV_DELETED, "r.deleted_at")                                                         \
    X(RV_CREATED, "r.created_at")
enum { RSV_COLUMNS(STORE_COL_ENUM) RV__N };

static int reserved_unused(store_tx *tx, agg *a, gp_err *err) {
    const meter_query *q = a->q;
    int64_t to = q->to_us < q->now_us ? q->to_us : q->now_us;
    if (to <= q->from_us) return GP_OK;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(RSV_COLUMNS) " FROM reservations r"
                         " JOIN tenants t ON t.id = r.tenant_id"
                         " LEFT JOIN projects p ON p.id = r.project_id"
                         " WHERE (? IS NULL OR r.tenant_id = ?) AND (? IS NULL OR r.project_id = ?)"
                         " AND r.start_us < ? AND (r.deleted_at = 0 OR r.deleted_at > ?)"
                         " ORDER BY r.id",
                         "ssssii", q->tenant_id, q->tenant_id, q->project_id, q->project_id, to,
                         q->from_us);
    if (rc) return rc;
    rsv_acct *rs = NULL;
    int n = 0, cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            rsv_acct *nr = realloc(rs, (size_t)cap * sizeof *nr);
            if (!nr) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            rs = nr;
        }
        rsv_acct *r = &rs[n];
        memset(r, 0, sizeof *r);
        snprintf(r->id, sizeof r->id, "%s", store_text(s, RV_ID));
        snprintf(r->tenant, sizeof r->tenant, "%s", store_text(s, RV_TENANT));
        snprintf(r->project, sizeof r->project, "%s",
                 store_text(s, RV_PROJECT)[0] ? store_text(s, RV_PROJECT) : "(tenant)");
        r->count = store_int(s, RV_COUNT);
        r->nodes = strdup(store_text(s, RV_NODES));
        snprintf(r->pool, sizeof r->pool, "%s", store_text(s, RV_POOL));
        snprintf(r->cls, sizeof r->cls, "%s", store_text(s, RV_CLASS));
        rsv_rule_from(store_text(s, RV_RECURRENCE), store_int(s, RV_START), store_int(s, RV_END),
                      store_int(s, RV_WEEKDAYS), store_int(s, RV_EVERY), store_int(s, RV_UNTIL),
                      &r->rule);
        r->deleted = store_int(s, RV_DELETED);
        r->created = store_int(s, RV_CREATED);
        n++;
        if (!r->nodes) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
    }
    store_done(s);
    for (int i = 0; rc >= 0 && i < n; i++) {
        rsv_acct *r = &rs[i];
        int64_t from = q->from_us > r->created ? q->from_us : r->created;
        int64_t end = r->deleted && r->deleted < to ? r->deleted : to;
        if (end <= from) continue;
        int64_t cards;
        char model[96], vendor[8];
        if ((rc = rsv_cards(tx, r, &cards, model, vendor, err))) break;
        const char *vd = vendor[0] ? vendor : "nvidia";
        if (cards <= 0 || !passes(q, vd, model)) continue;
        rsv_use_span *spans;
        int ns;
        if ((rc = rsv_spans(tx, r->id, from, end, q->now_us, &spans, &ns, err))) break;
        const char *v[F__N] = {r->tenant, r->project, "", vd, model, "whole", "", ""};
        select_fields(q->group_by, v);
        static const unsigned char named = 1;
        rsv one = {.node_in = r->count ? NULL : &named, .count = (int)r->count};
        rsv_span sp;
        int64_t t = from;
        for (int k = 0; k < RSV_MAX_OCCURRENCES && rsv_current(&r->rule, t, &sp) && sp.t1_us < end;
             k++) {
            one.t1_us = sp.t1_us;
            one.t2_us = sp.t2_us;
            /* cut at buckets and rate-card changes */
            for (int64_t x = sp.t1_us > from ? sp.t1_us : from, stop = sp.t2_us < end ? sp.t2_us : end;
                 x < stop;) {
                int64_t b = bucket_of(a, x);
                int64_t y = q->bucket == METER_BUCKET_NONE ? stop : meter_bucket_next(b, q->bucket);
                int64_t change = card_change_after(a, x);
                if (change < y) y = change;
                if (stop < y) y = stop;
                int64_t secs = rsv_unused_card_s(&one, (int)cards, spans, ns, x, y);
                if (secs > 0) {
                    row *rw = agg_row(a, b, v);
                    if (!rw) {
                        rc = gp_err_set(err, GP_ENOMEM, NULL);
                        break;
                    }
                    double h = (double)secs / 3600.0;
                    rw->rsv_hours += h;
                    a->reserved = 1;
                    int ci = card_at(a, x);
                    double price = ci >= 0 ? meter_card_hour_price(&a->cards[ci], vd, model, "whole") : -1;
                    if (price >= 0) {
                        rw->rsv_cost += h * price;
                        a->used_versions[ci] = 1;
                    } else {
                        a->unpriced = 1;
                    }
                }
                x = y;
            }
            if (rc < 0) break;
            t = sp.t2_us;
        }
        free(spans);
    }
    for (int i = 0; i < n; i++) free(rs[i].nodes);
    free(rs);
    return rc < 0 ? rc : GP_OK;
}

/* ---- tokens ---- */

/* a + b for figures that are never negative: a negative one counts as 0, sums saturate */
static int64_t nn_add(int64_t a, int64_t b) {
    if (a < 0) a = 0;
    if (b < 0) b = 0;
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int add_tokens(agg *a, int64_t at, const char *v[F__N], const char *model, int64_t requests,
                      int64_t prompt, int64_t completion) {
    row *r = agg_row(a, bucket_of(a, at), v);
    if (!r) return -1;
    /* a figure stored negative (a store written before usage was checked) counts as none:
     * no report, cost or bill can go below zero */
    if (prompt < 0) prompt = 0;
    if (completion < 0) completion = 0;
    r->requests = nn_add(r->requests, requests);
    r->prompt = nn_add(r->prompt, prompt);
    r->completion = nn_add(r->completion, completion);
    if (!prompt && !completion) return 0;
    int ci = card_at(a, at);
    double in = 0, out = 0;
    if (ci >= 0 && meter_token_prices(&a->cards[ci], model, &in, &out) == 0) {
        r->token_cost += ((double)prompt * in + (double)completion * out) / 1e6;
        a->used_versions[ci] = 1;
    } else {
        a->unpriced = 1;
    }
    return 0;
}

/* A usage row as tokens_raw (a record: one request) and tokens (an hour's sum) read it
 * (STORE_COLS): TIME, its time or hour; OWNER, the key's owner ('' unless by user);
 * REQUESTS, how many requests. */
#define TOKEN_COLUMNS_(X, P, TIME, OWNER, REQUESTS)                                       \
    X(TK_TIME, TIME)                                                                      \
    X(TK_TENANT, P "tenant")                                                              \
    X(TK_PROJECT, P "project")                                                            \
    X(TK_MODEL, P "model")                                                                \
    X(TK_ACCEL, P "accelerator")                                                          \
    X(TK_KEY, P "key_id")                                                                 \
    X(TK_OWNER, OWNER)                                                                    \
    X(TK_REQUESTS, REQUESTS)                                                              \
    X(TK_PROMPT, P "prompt_tokens")                                                       \
    X(TK_COMPLETION, P "completion_tokens")
#define TOKEN_RAW_COLUMNS(X) TOKEN_COLUMNS_(X, "u.", "u.at", "COALESCE(k.owner, '')", "1")
#define TOKEN_HOUR_USER_COLUMNS(X)                                                        \
    TOKEN_COLUMNS_(X, "u.", "u.hour", "COALESCE(k.owner, '')", "u.requests")
#define TOKEN_HOUR_COLUMNS(X) TOKEN_COLUMNS_(X, "", "hour", "''", "requests")
enum { TOKEN_RAW_COLUMNS(STORE_COL_ENUM) TK__N };

/* Raw records in [t0, t1). */
static int tokens_raw(store_tx *tx, agg *a, int64_t t0, int64_t t1, gp_err *err) {
    const meter_query *q = a->q;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(TOKEN_RAW_COLUMNS)
                         " FROM usage_records u LEFT JOIN api_keys k ON k.id = u.key_id"
                         " WHERE u.at >= ? AND u.at < ? AND (? IS NULL OR u.tenant_id = ?)"
                         " AND (? IS NULL OR u.project_id = ?)",
                         "iissss", t0, t1, q->tenant_id, q->tenant_id, q->project_id,
                         q->project_id);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        const char *vendor = tok_vendor(a, store_text(s, TK_ACCEL));
        if (!passes(q, vendor, store_text(s, TK_ACCEL))) continue;
        const char *v[F__N] = {store_text(s, TK_TENANT), store_text(s, TK_PROJECT),
                               store_text(s, TK_MODEL),  vendor,
                               store_text(s, TK_ACCEL),  "",
                               store_text(s, TK_KEY),    store_text(s, TK_OWNER)};
        select_fields(q->group_by, v);
        if (add_tokens(a, store_int(s, TK_TIME), v, store_text(s, TK_MODEL),
                       store_int(s, TK_REQUESTS), store_int(s, TK_PROMPT),
                       store_int(s, TK_COMPLETION))) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* Does a rate card change strictly inside hour h (not at its start)? */
static int hour_has_change(const agg *a, int64_t h) {
    for (int i = 0; i < a->ncards; i++)
        if (a->cards[i].effective_us > h && a->cards[i].effective_us < h + HOUR_US) return 1;
    return 0;
}

static int tokens(store_tx *tx, agg *a, gp_err *err) {
    const meter_query *q = a->q;
    int64_t from = q->from_us, to = q->to_us;
    int64_t h0 = meter_bucket_start(from, METER_BUCKET_HOUR);
    if (h0 < from) h0 += HOUR_US;                          /* first whole hour */
    int64_t h1 = meter_bucket_start(to, METER_BUCKET_HOUR); /* end of the last whole hour */
    int rc;
    if (h1 <= h0) return tokens_raw(tx, a, from, to, err); /* no whole hour */
    if (from < h0 && (rc = tokens_raw(tx, a, from, h0, err))) return rc;
    if (h1 < to && (rc = tokens_raw(tx, a, h1, to, err))) return rc;
    /* hours in which a rate card changes: from the records */
    for (int i = 0; i < a->ncards; i++) {
        int64_t e = a->cards[i].effective_us, h = meter_bucket_start(e, METER_BUCKET_HOUR);
        if (h >= h0 && h < h1 && e != h && (rc = tokens_raw(tx, a, h, h + HOUR_US, err))) return rc;
    }
    store_stmt *s;
    rc = store_query(tx, &s, err,
                     (q->group_by & METER_BY_USER)
                         ? "SELECT " STORE_COLS(TOKEN_HOUR_USER_COLUMNS)
                           " FROM usage_hourly u LEFT JOIN api_keys k ON k.id = u.key_id"
                           " WHERE u.hour >= ? AND u.hour < ? AND (? IS NULL OR u.tenant_id = ?)"
                           " AND (? IS NULL OR u.project_id = ?)"
                         : "SELECT " STORE_COLS(TOKEN_HOUR_COLUMNS)
                           " FROM usage_hourly WHERE hour >= ?"
                           " AND hour < ? AND (? IS NULL OR tenant_id = ?) AND (? IS NULL OR project_id = ?)",
                     "iissss", h0, h1, q->tenant_id, q->tenant_id, q->project_id, q->project_id);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        int64_t h = store_int(s, TK_TIME);
        if (hour_has_change(a, h)) continue; /* counted from the records above */
        const char *vendor = tok_vendor(a, store_text(s, TK_ACCEL));
        if (!passes(q, vendor, store_text(s, TK_ACCEL))) continue;
        const char *v[F__N] = {store_text(s, TK_TENANT), store_text(s, TK_PROJECT),
                               store_text(s, TK_MODEL),  vendor,
                               store_text(s, TK_ACCEL),  "",
                               store_text(s, TK_KEY),    store_text(s, TK_OWNER)};
        select_fields(q->group_by, v);
        if (add_tokens(a, h, v, store_text(s, TK_MODEL), store_int(s, TK_REQUESTS),
                       store_int(s, TK_PROMPT), store_int(s, TK_COMPLETION))) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* Set o.key_name to the name of API key `id` (none: unchanged). */
static int add_key_name(store_tx *tx, const char *id, json_t *o, gp_err *err) {
    store_stmt *q;
    int rc = store_query(tx, &q, err, "SELECT name FROM api_keys WHERE id = ?", "s", id);
    if (rc) return rc;
    rc = store_step(q, err);
    if (rc > 0) json_object_set_new(o, "key_name", json_string(store_text(q, 0)));
    store_done(q);
    return rc < 0 ? rc : GP_OK;
}

/* ---- capacity and idle ---- */

typedef struct bucket_sum {
    int64_t bucket;
    char accel[64];
    char vendor[8];
    char form[8];   /* the card's mode: whole | mig | shared */
    int card;       /* the rate card in force (-1: none) */
    double capacity, allocated;
} bucket_sum;

typedef struct cap_table {
    bucket_sum *b;
    int n, cap;
} cap_table;

/* (kept per card model, vendor and rate card whatever the grouping: idle time is priced at
 * its own card's rate, then summed into the rows the report groups by) */
static bucket_sum *cap_slot(cap_table *t, int64_t bucket, const char *accel, const char *vendor,
                            const char *form, int card) {
    for (int i = 0; i < t->n; i++)
        if (t->b[i].bucket == bucket && t->b[i].card == card && !strcmp(t->b[i].accel, accel) &&
            !strcmp(t->b[i].vendor, vendor) && !strcmp(t->b[i].form, form))
            return &t->b[i];
    if (t->n == t->cap) {
        int nc = t->cap ? t->cap * 2 : 64;
        bucket_sum *nb = realloc(t->b, (size_t)nc * sizeof *nb);
        if (!nb) return NULL;
        t->b = nb;
        t->cap = nc;
    }
    bucket_sum *s = &t->b[t->n++];
    memset(s, 0, sizeof *s);
    s->bucket = bucket;
    s->card = card;
    snprintf(s->accel, sizeof s->accel, "%s", accel);
    snprintf(s->vendor, sizeof s->vendor, "%s", vendor);
    snprintf(s->form, sizeof s->form, "%s", form);
    return s;
}

/* Add `weight` x the time of [t0, t1) to the table's capacity or allocation, per bucket and
 * rate card. */
static int cap_add(cap_table *t, const agg *a, const char *vendor, const char *accel,
                   const char *form, int64_t t0, int64_t t1, double weight, int allocated) {
    for (int64_t x = t0; x < t1;) {
        int64_t b = bucket_of(a, x);
        int64_t end = a->q->bucket == METER_BUCKET_NONE ? t1 : meter_bucket_next(b, a->q->bucket);
        int64_t change = card_change_after(a, x);
        if (change < end) end = change;
        if (end > t1) end = t1;
        bucket_sum *s = cap_slot(t, b, accel, vendor, form, card_at(a, x));
        if (!s) return -1;
        double h = weight * (double)(end - x) / (double)HOUR_US;
        if (allocated) s->allocated += h;
        else s->capacity += h;
        x = end;
    }
    return 0;
}

/* A GPU as capacity counts it, from its node's registration (STORE_COLS). */
#define CAP_GPU_COLUMNS(X)                                                                \
    X(CG_UUID, "g.uuid")                                                                  \
    X(CG_MODEL, "g.model")                                                                \
    X(CG_SINCE, "n.registered_at")                                                        \
    X(CG_VENDOR, "g.vendor")                                                              \
    X(CG_MODE, "g.mode")
enum { CAP_GPU_COLUMNS(STORE_COL_ENUM) CG__N };

/* A GPU's health transition as capacity walks them (STORE_COLS). */
#define CAP_HEALTH_COLUMNS(X) X(CE_AT, "at") X(CE_FROM, "from_state") X(CE_TO, "to_state")
enum { CAP_HEALTH_COLUMNS(STORE_COL_ENUM) CE__N };

/* A binding as capacity counts what it held (STORE_COLS): END, when it ended (an open
 * one's: the parameter, now). */
#define CAP_HELD_COLUMNS_(X, END)                                                         \
    X(CB_MODEL, "model")                                                                  \
    X(CB_WEIGHT, "weight_milli")                                                          \
    X(CB_START, "start_us")                                                               \
    X(CB_END, END)                                                                        \
    X(CB_VENDOR, "vendor")                                                                \
    X(CB_FORM, "form")
#define CAP_HELD_OPEN_COLUMNS(X) CAP_HELD_COLUMNS_(X, "COALESCE(end_us, ?)")
#define CAP_HELD_ENDED_COLUMNS(X) CAP_HELD_COLUMNS_(X, "end_us")
enum { CAP_HELD_OPEN_COLUMNS(STORE_COL_ENUM) CB__N };

static int capacity(store_tx *tx, agg *a, json_t *report, gp_err *err) {
    const meter_query *q = a->q;
    int64_t to = q->to_us < q->now_us ? q->to_us : q->now_us;
    cap_table t = {0};
    store_stmt *s;
    int rc = GP_OK;
    if (to > q->from_us) {
        /* each GPU from its node's registration, less the time it was failed */
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CAP_GPU_COLUMNS) " FROM gpus g"
                         " JOIN nodes n ON n.id = g.node_id ORDER BY g.uuid",
                         "");
        if (rc) return rc;
        typedef struct gi {
            char uuid[96], model[64], vendor[8], mode[8];
            int64_t since;
        } gi;
        gi *gs = NULL;
        int ng = 0, cg = 0;
        while ((rc = store_step(s, err)) > 0) {
            const char *vendor = *store_text(s, CG_VENDOR) ? store_text(s, CG_VENDOR) : "nvidia";
            if (!passes(q, vendor, store_text(s, CG_MODEL))) continue;
            if (ng == cg) {
                cg = cg ? cg * 2 : 64;
                gi *n2 = realloc(gs, (size_t)cg * sizeof *n2);
                if (!n2) {
                    rc = gp_err_set(err, GP_ENOMEM, NULL);
                    break;
                }
                gs = n2;
            }
            snprintf(gs[ng].uuid, sizeof gs[ng].uuid, "%s", store_text(s, CG_UUID));
            snprintf(gs[ng].model, sizeof gs[ng].model, "%s", store_text(s, CG_MODEL));
            gs[ng].since = store_int(s, CG_SINCE);
            snprintf(gs[ng].vendor, sizeof gs[ng].vendor, "%s", vendor);
            snprintf(gs[ng].mode, sizeof gs[ng].mode, "%s", store_text(s, CG_MODE));
            ng++;
        }
        store_done(s);
        for (int i = 0; i < ng && rc >= 0; i++) {
            int64_t t0 = gs[i].since > q->from_us ? gs[i].since : q->from_us;
            /* walk its health transitions: time spent failed is not capacity */
            rc = store_query(tx, &s, err,
                             "SELECT " STORE_COLS(CAP_HEALTH_COLUMNS)
                             " FROM health_events WHERE gpu_uuid = ?"
                             " AND kind = 'health' AND at < ? ORDER BY at",
                             "si", gs[i].uuid, to);
            if (rc) break;
            int failed = 0;
            int64_t mark = t0;
            while ((rc = store_step(s, err)) > 0) {
                int64_t at = store_int(s, CE_AT);
                int now_failed = !strcmp(store_text(s, CE_TO), "failed");
                if (at > mark && !failed && cap_add(&t, a, gs[i].vendor, gs[i].model, gs[i].mode, mark, at, 1.0, 0)) rc = -1;
                if (at > mark) mark = at;
                failed = now_failed;
            }
            store_done(s);
            if (rc < 0) break;
            if (!failed && mark < to && cap_add(&t, a, gs[i].vendor, gs[i].model, gs[i].mode, mark, to, 1.0, 0)) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
        }
        free(gs);
        if (rc < 0) {
            free(t.b);
            return rc;
        }
        /* what every binding held (whatever the report's filter) */
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CAP_HELD_OPEN_COLUMNS)
                         " FROM bindings WHERE end_us IS NULL AND start_us < ?"
                         " UNION ALL SELECT " STORE_COLS(CAP_HELD_ENDED_COLUMNS)
                         " FROM bindings"
                         " WHERE end_us > ? AND start_us < ?",
                         "iiii", q->now_us, to, q->from_us, to);
        if (rc) {
            free(t.b);
            return rc;
        }
        while ((rc = store_step(s, err)) > 0) {
            int64_t t0 = store_int(s, CB_START) > q->from_us ? store_int(s, CB_START) : q->from_us;
            int64_t t1 = store_int(s, CB_END) < to ? store_int(s, CB_END) : to;
            const char *vendor = *store_text(s, CB_VENDOR) ? store_text(s, CB_VENDOR) : "nvidia";
            if (!passes(q, vendor, store_text(s, CB_MODEL))) continue;
            char kind[8];
            form_kind(store_text(s, CB_FORM), kind);
            if (t1 > t0 && cap_add(&t, a, vendor, store_text(s, CB_MODEL), kind, t0, t1,
                                   (double)store_int(s, CB_WEIGHT) / 1000.0, 1)) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
        }
        store_done(s);
        if (rc < 0) {
            free(t.b);
            return rc;
        }
    }
    /* per row of the report (its bucket, and model and vendor when grouped by them):
     * capacity - allocated is its idle time, as before pricing; each card model's own idle
     * time (per rate card) prices it at that card's rate in its mode, so the row's cost is its
     * idle time at the mean of those rates (a card held though gone from the inventory takes
     * from the idle time, never a negative cost) */
    typedef struct idle_sum {
        row *r;
        double capacity, allocated, fine_idle, fine_cost;
    } idle_sum;
    idle_sum *is = calloc((size_t)(t.n ? t.n : 1), sizeof *is);
    int nis = 0;
    if (!is) {
        free(t.b);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    for (int i = 0; i < t.n; i++) {
        bucket_sum *b = &t.b[i];
        const char *v[F__N] = {"(idle)", NULL, NULL, (q->group_by & METER_BY_VENDOR) ? b->vendor : NULL,
                               (q->group_by & METER_BY_ACCEL) ? b->accel : NULL, NULL, NULL, NULL};
        row *r = agg_row(a, b->bucket, v);
        if (!r) {
            free(t.b);
            free(is);
            return gp_err_set(err, GP_ENOMEM, NULL);
        }
        int k = 0;
        while (k < nis && is[k].r != r) k++;
        if (k == nis) is[nis++].r = r;
        is[k].capacity += b->capacity;
        is[k].allocated += b->allocated;
        double idle = b->capacity - b->allocated;
        double price = b->card >= 0 && idle > 0
                           ? meter_card_hour_price(&a->cards[b->card], b->vendor, b->accel, b->form)
                           : -1;
        if (idle > 0) {
            is[k].fine_idle += idle;
            if (price >= 0) {
                is[k].fine_cost += idle * price;
                a->used_versions[b->card] = 1;
            } else {
                a->unpriced = 1;
            }
        }
    }
    free(t.b);
    double tc = 0, ta = 0, ti = 0, tcost = 0;
    for (int k = 0; k < nis; k++) {
        double idle = is[k].capacity - is[k].allocated;
        if (idle < 0) idle = 0; /* a GPU gone from the inventory while held */
        double cost = is[k].fine_idle > 0 ? idle * is[k].fine_cost / is[k].fine_idle : 0;
        tc += is[k].capacity;
        ta += is[k].allocated;
        ti += idle;
        tcost += cost;
        is[k].r->card_hours += idle;
        is[k].r->card_cost += cost; /* the platform pays for idle cards: its own row */
    }
    free(is);
    json_object_set_new(report, "capacity",
                        json_pack("{s:f,s:f,s:f,s:f}", "card_hours", round(tc * 1e6) / 1e6,
                                  "allocated", round(ta * 1e6) / 1e6, "idle",
                                  round(ti * 1e6) / 1e6, "idle_cost", round(tcost * 1e4) / 1e4));
    return GP_OK;
}

/* ---- the report ---- */

static int cmp_row(const void *pa, const void *pb) {
    const row *a = *(row *const *)pa, *b = *(row *const *)pb;
    return strcmp(a->key, b->key); /* bucket first (zero-padded), then the values */
}

static double r6(double x) { return round(x * 1e6) / 1e6; }
static double r4(double x) { return round(x * 1e4) / 1e4; }

/* A tenant and how it is billed, as meter_report reads them (STORE_COLS). */
#define BILLING_COLUMNS(X) X(BL_TENANT, "t.name") X(BL_MODE, "COALESCE(b.mode, 'showback')")
enum { BILLING_COLUMNS(STORE_COL_ENUM) BL__N };

int meter_report(store_tx *tx, const meter_query *q, json_t **out, gp_err *err) {
    if (q->to_us <= q->from_us) return gp_err_set(err, GP_EINVALID, "to must be after from");
    agg a;
    memset(&a, 0, sizeof a);
    a.q = q;
    int rc = load_cards(tx, &a.cards, &a.ncards, err);
    if (rc) return rc;
    a.used_versions = calloc((size_t)(a.ncards ? a.ncards : 1), sizeof *a.used_versions);
    json_t *report = json_object();
    if (!a.used_versions) rc = gp_err_set(err, GP_ENOMEM, NULL);
    if (!rc && q->vendor && !meter_vendor_valid(q->vendor))
        rc = gp_err_set(err, GP_EINVALID, "vendor must be nvidia, amd or intel");
    if (!rc && q->accelerator && (!*q->accelerator || strlen(q->accelerator) > 63))
        rc = gp_err_set(err, GP_EINVALID, "accelerator must be 1..63 characters");
    if (!rc && ((q->group_by & METER_BY_VENDOR) || q->vendor)) rc = load_accel_vendors(tx, &a, err);
    if (!rc) rc = card_hours(tx, &a, err);
    if (!rc) rc = reserved_unused(tx, &a, err);
    if (!rc) rc = tokens(tx, &a, err);
    if (!rc && q->idle) rc = capacity(tx, &a, report, err);
    if (rc) {
        agg_free(&a);
        free(a.cards);
        json_decref(report);
        return rc;
    }
    /* rows, sorted */
    row **rows = malloc((a.n ? a.n : 1) * sizeof *rows);
    size_t n = 0;
    for (size_t i = 0; i < a.cap && rows; i++)
        if (a.slots[i]) rows[n++] = a.slots[i];
    if (rows) qsort(rows, n, sizeof *rows, cmp_row);
    json_t *arr = json_array(), *billing = json_object();
    double t_ch = 0, t_cc = 0, t_tc = 0, t_rh = 0, t_rc = 0, t_cpu = 0, t_cpuc = 0, t_mem = 0,
           t_memc = 0;
    int64_t t_req = 0, t_p = 0, t_c = 0;
    for (size_t i = 0; rows && i < n; i++) {
        row *r = rows[i];
        json_t *o = json_object();
        if (q->bucket != METER_BUCKET_NONE) json_object_set_new(o, "bucket", jx_time(r->bucket));
        for (int k = 0; k < F__N; k++)
            if (r->f[k]) json_object_set_new(o, fnames[k], json_string(r->f[k]));
        /* a key by its name too (ids alone said nothing; a revoked key keeps its name) */
        if (r->f[F_KEY] && r->f[F_KEY][0] && !rc) rc = add_key_name(tx, r->f[F_KEY], o, err);
        json_object_set_new(o, "card_hours", json_real(r6(r->card_hours)));
        json_object_set_new(o, "card_hour_cost", json_real(r4(r->card_cost)));
        json_object_set_new(o, "cpu_hours", json_real(r6(r->cpu_hours)));
        json_object_set_new(o, "cpu_cost", json_real(r4(r->cpu_cost)));
        json_object_set_new(o, "memory_gib_hours", json_real(r6(r->mem_hours)));
        json_object_set_new(o, "memory_cost", json_real(r4(r->mem_cost)));
        json_object_set_new(o, "requests", json_integer(r->requests));
        json_object_set_new(o, "prompt_tokens", json_integer(r->prompt));
        json_object_set_new(o, "completion_tokens", json_integer(r->completion));
        json_object_set_new(o, "token_cost", json_real(r4(r->token_cost)));
        /* reserved but unused: its own figures, charged to the holder, in its cost */
        json_object_set_new(o, "reserved_unused_card_hours", json_real(r6(r->rsv_hours)));
        json_object_set_new(o, "reserved_unused_cost", json_real(r4(r->rsv_cost)));
        json_object_set_new(o, "cost", json_real(r4(r->card_cost + r->token_cost + r->rsv_cost +
                                                    r->cpu_cost + r->mem_cost)));
        json_array_append_new(arr, o);
        if (!r->f[F_TENANT] || strcmp(r->f[F_TENANT], "(idle)")) {
            t_ch += r->card_hours;
            t_cc += r->card_cost;
            t_tc += r->token_cost;
            t_rh += r->rsv_hours;
            t_rc += r->rsv_cost;
            t_cpu += r->cpu_hours;
            t_cpuc += r->cpu_cost;
            t_mem += r->mem_hours;
            t_memc += r->mem_cost;
            t_req += r->requests;
            t_p += r->prompt;
            t_c += r->completion;
        }
    }
    free(rows);
    if (rc) {
        json_decref(arr);
        json_decref(billing);
        agg_free(&a);
        free(a.cards);
        json_decref(report);
        return rc;
    }
    /* which tenants are invoiced and which only shown their figures */
    store_stmt *s;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(BILLING_COLUMNS) " FROM tenants t"
                     " LEFT JOIN tenant_billing b ON b.tenant_id = t.id WHERE (? IS NULL OR t.id = ?)"
                     " ORDER BY t.name",
                     "ss", q->tenant_id, q->tenant_id);
    if (!rc) {
        while ((rc = store_step(s, err)) > 0)
            json_object_set_new(billing, store_text(s, BL_TENANT),
                                json_string(store_text(s, BL_MODE)));
        store_done(s);
        rc = rc < 0 ? rc : GP_OK;
    }
    json_t *versions = json_array();
    const char *currency = a.ncards ? a.cards[a.ncards - 1].currency : "";
    for (int i = 0; i < a.ncards; i++)
        if (a.used_versions[i])
            json_array_append_new(versions, json_pack("{s:i,s:o}", "version", a.cards[i].version,
                                                      "effective_from",
                                                      jx_time(a.cards[i].effective_us)));
    static const char *const bnames[] = {"none", "hour", "day", "month"};
    json_t *by = json_array();
    static const struct {
        unsigned bit;
        const char *name;
    } gb[] = {{METER_BY_TENANT, "tenant"}, {METER_BY_PROJECT, "project"}, {METER_BY_MODEL, "model"},
              {METER_BY_VENDOR, "vendor"}, {METER_BY_ACCEL, "accelerator"}, {METER_BY_KEY, "key"},
              {METER_BY_USER, "user"}};
    for (size_t i = 0; i < sizeof gb / sizeof gb[0]; i++)
        if (q->group_by & gb[i].bit) json_array_append_new(by, json_string(gb[i].name));
    json_object_set_new(report, "from", jx_time(q->from_us));
    json_object_set_new(report, "to", jx_time(q->to_us));
    json_object_set_new(report, "bucket", json_string(bnames[q->bucket]));
    json_object_set_new(report, "group_by", by);
    if (q->vendor || q->accelerator) {
        json_t *f = json_object();
        if (q->vendor) json_object_set_new(f, "vendor", json_string(q->vendor));
        if (q->accelerator) json_object_set_new(f, "accelerator", json_string(q->accelerator));
        json_object_set_new(report, "filters", f);
    }
    json_object_set_new(report, "currency", json_string(currency));
    json_object_set_new(report, "rate_cards", versions);
    json_object_set_new(report, "unpriced", json_boolean(a.unpriced));
    json_object_set_new(report, "billing", billing);
    json_object_set_new(report, "rows", arr);
    json_object_set_new(report, "reserved", json_boolean(a.reserved));
    json_object_set_new(
        report, "totals",
        json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "card_hours", r6(t_ch),
                  "card_hour_cost", r4(t_cc), "cpu_hours", r6(t_cpu), "cpu_cost", r4(t_cpuc),
                  "memory_gib_hours", r6(t_mem), "memory_cost", r4(t_memc), "requests",
                  (json_int_t)t_req, "prompt_tokens", (json_int_t)t_p, "completion_tokens",
                  (json_int_t)t_c, "token_cost", r4(t_tc), "reserved_unused_card_hours", r6(t_rh),
                  "reserved_unused_cost", r4(t_rc), "cost", r4(t_cc + t_tc + t_rc + t_cpuc + t_memc)));
    agg_free(&a);
    free(a.cards);
    if (rc) {
        json_decref(report);
        return rc;
    }
    *out = report;
    return GP_OK;
}

/* ---- CSV ---- */

static void csv_field(strbuf *sb, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        sb_adds(sb, s);
        return;
    }
    sb_addc(sb, '"');
    for (; *s; s++) {
        if (*s == '"') sb_addc(sb, '"');
        sb_addc(sb, *s);
    }
    sb_addc(sb, '"');
}

char *meter_report_csv(json_t *report) {
    static const char *const cols[] = {"bucket", "tenant", "project", "model", "vendor",
                                       "accelerator", "form", "key", "key_name", "user",
                                       "card_hours", "card_hour_cost", "cpu_hours", "cpu_cost",
                                       "memory_gib_hours", "memory_cost", "requests",
                                       "prompt_tokens", "completion_tokens", "token_cost",
                                       "reserved_unused_card_hours", "reserved_unused_cost",
                                       "cost", "billing", NULL};
    enum { FIRST_FIGURE = 10 }; /* card_hours: the columns from here on are always shown */
    json_t *rows = json_object_get(report, "rows"), *billing = json_object_get(report, "billing");
    int show[32] = {0};
    int grouped_tenant = 0;
    json_t *by = json_object_get(report, "group_by");
    size_t i;
    json_t *v;
    json_array_foreach(by, i, v) if (!strcmp(json_string_value(v), "tenant")) grouped_tenant = 1;
    for (int c = 0; cols[c]; c++) {
        if (!strcmp(cols[c], "bucket")) show[c] = strcmp(json_string_value(json_object_get(report, "bucket")), "none") != 0;
        else if (!strcmp(cols[c], "billing")) show[c] = grouped_tenant;
        else if (!strncmp(cols[c], "reserved_unused", 15))
            show[c] = json_is_true(json_object_get(report, "reserved")); /* only when there is some */
        else if (!strncmp(cols[c], "cpu_", 4) || !strncmp(cols[c], "memory_", 7)) {
            /* only when some job asked for CPUs or memory (older reports read the same) */
            json_t *tot = json_object_get(report, "totals");
            show[c] = json_real_value(json_object_get(tot, "cpu_hours")) > 0 ||
                      json_real_value(json_object_get(tot, "memory_gib_hours")) > 0;
        }
        else if (c >= FIRST_FIGURE) show[c] = 1;
        else {
            const char *g = !strcmp(cols[c], "form")       ? "accelerator"
                            : !strcmp(cols[c], "key_name") ? "key"
                                                           : cols[c];
            json_array_foreach(by, i, v) if (!strcmp(json_string_value(v), g)) show[c] = 1;
            if (!strcmp(cols[c], "tenant") && json_object_get(report, "capacity")) show[c] = 1;
        }
    }
    strbuf sb = SB_INIT;
    int first = 1;
    for (int c = 0; cols[c]; c++)
        if (show[c]) {
            if (!first) sb_addc(&sb, ',');
            sb_adds(&sb, cols[c]);
            first = 0;
        }
    sb_adds(&sb, "\r\n");
    json_t *r;
    json_array_foreach(rows, i, r) {
        first = 1;
        for (int c = 0; cols[c]; c++) {
            if (!show[c]) continue;
            if (!first) sb_addc(&sb, ',');
            first = 0;
            json_t *x = !strcmp(cols[c], "billing")
                            ? json_object_get(billing, json_string_value(json_object_get(r, "tenant")) ? json_string_value(json_object_get(r, "tenant")) : "")
                            : json_object_get(r, cols[c]);
            char num[64];
            if (json_is_string(x)) csv_field(&sb, json_string_value(x));
            else if (json_is_integer(x)) sb_addf(&sb, "%lld", (long long)json_integer_value(x));
            else if (json_is_real(x)) {
                snprintf(num, sizeof num, "%.6f", json_real_value(x));
                sb_adds(&sb, num);
            }
        }
        sb_adds(&sb, "\r\n");
    }
    return sb_ok(&sb) ? sb_detach(&sb) : (sb_release(&sb), NULL);
}

/* ---- self-hosted serving cost ---- */

/* A serving job's binding as meter_serving_cost prices it (STORE_COLS; the first
 * parameter: now, an open one's end). */
#define SERVE_HELD_COLUMNS(X)                                                             \
    X(SH_MODEL, "model")                                                                  \
    X(SH_FORM, "form")                                                                    \
    X(SH_WEIGHT, "weight_milli")                                                          \
    X(SH_START, "start_us")                                                               \
    X(SH_END, "COALESCE(end_us, ?)")                                                      \
    X(SH_VENDOR, "vendor")
enum { SERVE_HELD_COLUMNS(STORE_COL_ENUM) SH__N };

/* The tokens a calling tenant had a model's serving jobs answer (STORE_COLS). */
#define SERVE_CALLER_COLUMNS(X)                                                           \
    X(SC_TENANT, "tenant")                                                                \
    X(SC_PROMPT, "SUM(CASE WHEN prompt_tokens > 0 THEN prompt_tokens ELSE 0 END)")        \
    X(SC_COMPLETION, "SUM(CASE WHEN completion_tokens > 0 THEN completion_tokens ELSE 0 END)") \
    X(SC_REQUESTS, "COUNT(*)")
enum { SERVE_CALLER_COLUMNS(STORE_COL_ENUM) SC__N };

int meter_serving_cost(store_tx *tx, const char *tenant_id, const char *model, int64_t from_us,
                       int64_t to_us, int64_t now_us, int name_callers, const char *own_tenant,
                       json_t **out, gp_err *err) {
    meter_query q = {.from_us = from_us, .to_us = to_us, .now_us = now_us};
    agg a;
    memset(&a, 0, sizeof a);
    a.q = &q;
    int rc = load_cards(tx, &a.cards, &a.ncards, err);
    if (rc) return rc;
    a.used_versions = calloc((size_t)(a.ncards ? a.ncards : 1), sizeof *a.used_versions);
    int64_t to = to_us < now_us ? to_us : now_us;
    double card_hours = 0, cost = 0;
    json_t *jobs = json_array(), *callers = json_object();
    store_stmt *s;
    /* the serving jobs: those its endpoints name */
    rc = store_query(tx, &s, err,
                     "SELECT DISTINCT e.job_id FROM endpoints e JOIN models m ON m.id = e.model_id"
                     " WHERE m.tenant_id = ? AND m.name = ? AND e.job_id <> ''",
                     "ss", tenant_id, model);
    if (!rc) {
        while ((rc = store_step(s, err)) > 0) json_array_append_new(jobs, json_string(store_text(s, 0)));
        store_done(s);
        rc = rc < 0 ? rc : GP_OK;
    }
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        if (rc) break;
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SERVE_HELD_COLUMNS)
                         " FROM bindings WHERE job_id = ? AND start_us < ? AND COALESCE(end_us, ?) > ?",
                         "isiii", now_us, json_string_value(j), to, now_us, from_us);
        if (rc) break;
        while ((rc = store_step(s, err)) > 0) {
            int64_t t0 = store_int(s, SH_START) > from_us ? store_int(s, SH_START) : from_us;
            int64_t t1 = store_int(s, SH_END) < to ? store_int(s, SH_END) : to;
            /* priced piece by piece, like a report */
            for (int64_t t = t0; t < t1;) {
                int64_t end = card_change_after(&a, t);
                if (end > t1) end = t1;
                double ch = (double)store_int(s, SH_WEIGHT) / 1000.0 * (double)(end - t) / (double)HOUR_US;
                int ci = card_at(&a, t);
                double price = ci >= 0 ? meter_card_hour_price(&a.cards[ci], store_text(s, SH_VENDOR),
                                                               store_text(s, SH_MODEL),
                                                               store_text(s, SH_FORM))
                                       : -1;
                card_hours += ch;
                if (price >= 0) cost += ch * price;
                t = end;
            }
        }
        store_done(s);
        rc = rc < 0 ? rc : GP_OK;
    }
    /* the tokens it served, by calling tenant */
    int64_t total = 0;
    if (!rc) {
        char owner[64] = "";
        rc = store_query(tx, &s, err, "SELECT name FROM tenants WHERE id = ?", "s", tenant_id);
        if (!rc) {
            if (store_step(s, err) > 0) snprintf(owner, sizeof owner, "%s", store_text(s, 0));
            store_done(s);
        }
        /* only what its own serving jobs answered: the tokens of an external endpoint of the
         * same model cost its provider, not these card-hours */
        if (!rc)
            rc = store_query(tx, &s, err,
                             "SELECT " STORE_COLS(SERVE_CALLER_COLUMNS)
                             " FROM usage_records WHERE model = ? AND model_tenant = ? AND at >= ?"
                             " AND at < ? AND endpoint_id IN (SELECT e.id FROM endpoints e"
                             " JOIN models m ON m.id = e.model_id WHERE m.tenant_id = ? AND m.name = ?"
                             " AND e.job_id <> '') GROUP BY tenant ORDER BY tenant",
                             "ssiiss", model, owner, from_us, to_us, tenant_id, model);
        if (!rc) {
            while ((rc = store_step(s, err)) > 0) {
                const char *who = store_text(s, SC_TENANT);
                if (!name_callers && strcmp(who, own_tenant ? own_tenant : "")) who = "(other tenants)";
                json_t *c = json_object_get(callers, who);
                if (!c) json_object_set_new(callers, who, c = json_pack("{s:I,s:I,s:I}", "prompt_tokens",
                                                                        (json_int_t)0, "completion_tokens",
                                                                        (json_int_t)0, "requests", (json_int_t)0));
                static const char *const k3[] = {"prompt_tokens", "completion_tokens", "requests"};
                static const int c3[] = {SC_PROMPT, SC_COMPLETION, SC_REQUESTS};
                for (int x = 0; x < 3; x++)
                    json_object_set_new(c, k3[x], json_integer(nn_add(json_integer_value(json_object_get(c, k3[x])),
                                                                      store_int(s, c3[x]))));
                total = nn_add(total, nn_add(store_int(s, SC_PROMPT), store_int(s, SC_COMPLETION)));
            }
            store_done(s);
            rc = rc < 0 ? rc : GP_OK;
        }
    }
    /* what its external endpoints served meanwhile, for comparison (not in the cost) */
    int64_t external = 0;
    if (!rc) {
        rc = store_query(tx, &s, err,
                         "SELECT COALESCE(SUM(CASE WHEN prompt_tokens > 0 THEN prompt_tokens ELSE 0 END)"
                         " + SUM(CASE WHEN completion_tokens > 0 THEN completion_tokens ELSE 0 END), 0)"
                         " FROM usage_records WHERE at >= ? AND at < ? AND endpoint_id IN"
                         " (SELECT e.id FROM endpoints e JOIN models m ON m.id = e.model_id"
                         " WHERE m.tenant_id = ? AND m.name = ? AND e.job_id = '')",
                         "iiss", from_us, to_us, tenant_id, model);
        if (!rc) {
            if ((rc = store_step(s, err)) > 0) external = store_int(s, 0);
            store_done(s);
            rc = rc < 0 ? rc : GP_OK;
        }
    }
    json_t *ext = json_null();
    int ci = card_at(&a, to_us - 1);
    double in, outp;
    if (ci >= 0 && meter_token_prices(&a.cards[ci], model, &in, &outp) == 0)
        ext = json_pack("{s:f,s:f}", "input", in, "output", outp);
    char currency[8];
    snprintf(currency, sizeof currency, "%s", a.ncards ? a.cards[a.ncards - 1].currency : "");
    free(a.cards);
    free(a.used_versions);
    if (rc) {
        json_decref(jobs);
        json_decref(callers);
        json_decref(ext);
        return rc;
    }
    *out = json_pack("{s:s,s:o,s:o,s:o,s:f,s:f,s:s,s:o,s:I,s:o,s:o,s:I}", "model", model, "from",
                     jx_time(from_us), "to", jx_time(to_us), "serving_jobs", jobs, "card_hours",
                     r6(card_hours), "card_hour_cost", r4(cost), "currency", currency, "tokens_by_tenant",
                     callers, "tokens", (json_int_t)total, "cost_per_million_tokens",
                     total ? json_real(r4(cost / ((double)total / 1e6))) : json_null(),
                     "rate_card_price_per_million", ext, "external_tokens", (json_int_t)external);
    return GP_OK;
}

/* ---- Prometheus gauges ---- */

/* A label value with \\, \" and newlines escaped. */
static void label(strbuf *sb, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') sb_addc(sb, '\\');
        if (*v == '\n') sb_adds(sb, "\\n");
        else sb_addc(sb, *v);
    }
}

/* Run `sql` and print one sample per row: label columns, then the value (last column). */
static int gauge(store_tx *tx, strbuf *out, const char *name, const char *help,
                 const char *const *labels, int nlabels, const char *sql, const char *types,
                 int64_t a, int64_t b, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, sql, types, a, b); /* arguments past `types` are not read */
    if (rc) return rc;
    sb_addf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
    while ((rc = store_step(s, err)) > 0) {
        sb_adds(out, name);
        if (nlabels) {
            sb_addc(out, '{');
            for (int i = 0; i < nlabels; i++) {
                sb_addf(out, "%s%s=\"", i ? "," : "", labels[i]);
                label(out, store_text(s, i) ? store_text(s, i) : "");
                sb_addc(out, '"');
            }
            sb_addc(out, '}');
        }
        const char *v = store_text(s, nlabels);
        sb_addf(out, " %s\n", v ? v : "0");
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* A tenant's tokens and clipped records this month, as meter_prometheus reads them
 * (STORE_COLS). */
#define MONTH_TOKEN_COLUMNS(X)                                                            \
    X(MT_TENANT, "tenant")                                                                \
    X(MT_PROMPT, "SUM(CASE WHEN prompt_tokens > 0 THEN prompt_tokens ELSE 0 END)")        \
    X(MT_COMPLETION, "SUM(CASE WHEN completion_tokens > 0 THEN completion_tokens ELSE 0 END)") \
    X(MT_CLIPPED, "SUM(clipped)")
enum { MONTH_TOKEN_COLUMNS(STORE_COL_ENUM) MT__N };

int meter_prometheus(store_tx *tx, int64_t now_us, int gpus, int tenants, strbuf *out,
                     gp_err *err) {
    static const char *const hm[] = {"health", "mode"};
    static const char *const vmh[] = {"vendor", "model", "health"};
    static const char *const tc[] = {"tenant", "class"};
    static const char *const re[] = {"reason"};
    static const char *const te[] = {"tenant"};
    int64_t m0 = meter_bucket_start(now_us, METER_BUCKET_MONTH);
    int rc = GP_OK;
    if (gpus)
        rc = gauge(tx, out, "gpupool_gpus", "GPUs by health state and form", hm, 2,
                   "SELECT health, mode, COUNT(*) FROM gpus GROUP BY 1, 2 ORDER BY 1, 2", "", 0, 0, err);
    if (!rc && gpus)
        rc = gauge(tx, out, "gpupool_gpus_vendor", "GPUs by vendor, model and health state", vmh, 3,
                   "SELECT vendor, model, health, COUNT(*) FROM gpus GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                   "", 0, 0, err);
    if (!rc && tenants)
        rc = gauge(tx, out, "gpupool_allocated_gpus",
                   "GPU-equivalents held now (weighted by slice), by tenant and resource class", tc, 2,
                   store_sql(tx,
                             "SELECT b.tenant, j.class, printf('%.3f', SUM(b.weight_milli) / 1000.0)"
                             " FROM bindings b JOIN jobs j ON j.id = b.job_id WHERE b.end_us IS NULL"
                             " GROUP BY 1, 2 ORDER BY 1, 2",
                             "SELECT b.tenant, j.class, round(SUM(b.weight_milli) / 1000.0, 3)"
                             " FROM bindings b JOIN jobs j ON j.id = b.job_id WHERE b.end_us IS NULL"
                             " GROUP BY 1, 2 ORDER BY 1, 2"),
                   "", 0, 0, err);
    if (!rc && tenants)
        rc = gauge(tx, out, "gpupool_queued_jobs", "queued jobs by the kind of their reason", re, 1,
                   store_sql(tx,
                             "SELECT CASE WHEN instr(reason, ':') > 0"
                             " THEN substr(reason, 1, instr(reason, ':') - 1)"
                             " WHEN reason = '' THEN 'none' ELSE reason END, COUNT(*) FROM jobs"
                             " WHERE state IN ('queued', 'admitted') GROUP BY 1 ORDER BY 1",
                             "SELECT CASE WHEN strpos(reason, ':') > 0"
                             " THEN substr(reason, 1, strpos(reason, ':') - 1)"
                             " WHEN reason = '' THEN 'none' ELSE reason END, COUNT(*) FROM jobs"
                             " WHERE state IN ('queued', 'admitted') GROUP BY 1 ORDER BY 1"),
                   "", 0, 0, err);
    if (!rc && tenants)
        rc = gauge(tx, out, "gpupool_card_seconds_month",
                   "card-seconds used this calendar month, by tenant (/ 3600: card-hours)",
                   te, 1,
                   store_sql(tx,
                             "SELECT tenant, printf('%.6f', SUM(weight_milli * (COALESCE(end_us, ?1) -"
                             " MAX(start_us, ?2)) / 1000.0 / 1000000.0)) FROM bindings"
                             " WHERE COALESCE(end_us, ?1) > ?2 GROUP BY 1 ORDER BY 1",
                             "SELECT tenant, round(SUM(weight_milli * (COALESCE(end_us, ?1) -"
                             " GREATEST(start_us, ?2)) / 1000.0 / 1000000.0), 6) FROM bindings"
                             " WHERE COALESCE(end_us, ?1) > ?2 GROUP BY 1 ORDER BY 1"),
                   "ii", now_us, m0, err);
    /* per-GPU samples (holders with tenant names only for usage readers), scheduler, gateway */
    if (!rc && gpus) rc = telemetry_prometheus(tx, tenants, out, err);
    if (!rc && tenants) rc = sched_metrics_prometheus(tx, out, err);
    if (!rc && tenants) gw_metrics_render(out);
    if (!rc && tenants) {
        store_stmt *s;
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MONTH_TOKEN_COLUMNS)
                         " FROM usage_hourly WHERE hour >= ? GROUP BY 1 ORDER BY 1",
                         "i", m0);
        if (!rc) {
            sb_adds(out, "# HELP gpupool_tokens_month tokens through the gateway this calendar month, by"
                         " tenant\n# TYPE gpupool_tokens_month gauge\n");
            strbuf clipped = SB_INIT;
            sb_adds(&clipped, "# HELP gpupool_usage_clipped_month usage records this calendar month"
                              " whose upstream usage was refused or cut down, by tenant\n"
                              "# TYPE gpupool_usage_clipped_month gauge\n");
            while ((rc = store_step(s, err)) > 0) {
                for (int d = 0; d < 2; d++) {
                    int64_t v = store_int(s, d ? MT_COMPLETION : MT_PROMPT);
                    sb_adds(out, "gpupool_tokens_month{tenant=\"");
                    label(out, store_text(s, MT_TENANT));
                    sb_addf(out, "\",direction=\"%s\"} %lld\n", d ? "output" : "input",
                            (long long)(v < 0 ? 0 : v));
                }
                sb_adds(&clipped, "gpupool_usage_clipped_month{tenant=\"");
                label(&clipped, store_text(s, MT_TENANT));
                sb_addf(&clipped, "\"} %lld\n", (long long)store_int(s, MT_CLIPPED));
            }
            store_done(s);
            if (sb_ok(&clipped)) sb_add(out, clipped.buf, clipped.len);
            sb_release(&clipped);
            rc = rc < 0 ? rc : GP_OK;
        }
    }
    return rc;
}

int meter_prometheus_read(store_t *st, int64_t now_us, int gpus, int tenants, strbuf *out,
                          gp_err *err) {
    store_tx *tx;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = meter_prometheus(tx, now_us, gpus, tenants, out, err);
    store_rollback(tx);
    return rc;
}

int meter_serving_cost_read(store_t *st, const char *tenant_id, const char *model,
                            int64_t from_us, int64_t to_us, int64_t now_us, int name_callers,
                            const char *own_tenant, json_t **out, gp_err *err) {
    store_tx *tx;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = meter_serving_cost(tx, tenant_id, model, from_us, to_us, now_us, name_callers,
                            own_tenant, out, err);
    store_rollback(tx);
    return rc;
}
