/*
 * meter.c - rate cards, buckets and intervals (see meter.h).  Pure.
 */
#include "meter.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../inventory/inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- rate cards ---- */

int meter_vendor_valid(const char *v) {
    return v && (!strcmp(v, "nvidia") || !strcmp(v, "amd") || !strcmp(v, "intel"));
}

/* A price: a JSON number (not a string, not a boolean) in 0..max. */
static int price_arg(json_t *o, const char *key, double max, double *out, gp_err *err) {
    json_t *v = json_object_get(o, key);
    double x = json_is_number(v) ? json_number_value(v) : -1;
    if (!json_is_number(v) || !(x >= 0) || !(x <= max))
        return gp_err_set(err, GP_EINVALID, "%s must be a number from 0 to %.0f", key, max);
    *out = x;
    return GP_OK;
}

int meter_card_parse(json_t *spec, meter_rate_card *out, gp_err *err) {
    static const char *const fields[] = {"effective_from", "currency", "card_hour", "tokens",
                                         "cpu_hour", "memory_gib_hour", "note", NULL};
    static const char *const pfields[] = {"model", "vendor", "form", "price", NULL};
    static const char *const tfields[] = {"model", "input", "output", NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(spec)) return gp_err_set(err, GP_EINVALID, "a rate card is an object");
    int rc = jx_only_fields(spec, fields, err);
    const char *eff = NULL, *cur = NULL, *note = NULL;
    if (!rc) rc = jx_get_str(spec, "effective_from", 1, &eff, err);
    if (!rc && gt_parse_rfc3339(eff, &out->effective_us) != 0)
        rc = gp_err_set(err, GP_EINVALID, "effective_from must be an RFC 3339 time");
    if (!rc) rc = jx_get_str(spec, "currency", 1, &cur, err);
    if (!rc && (strlen(cur) != 3 || cur[0] < 'A' || cur[0] > 'Z' || cur[1] < 'A' || cur[1] > 'Z' ||
                cur[2] < 'A' || cur[2] > 'Z'))
        rc = gp_err_set(err, GP_EINVALID, "currency must be an ISO 4217 code such as EUR");
    if (!rc) rc = jx_get_str(spec, "note", 0, &note, err);
    if (!rc && json_object_get(spec, "cpu_hour"))
        rc = price_arg(spec, "cpu_hour", METER_MAX_HOST_PRICE, &out->cpu_hour, err);
    if (!rc && json_object_get(spec, "memory_gib_hour"))
        rc = price_arg(spec, "memory_gib_hour", METER_MAX_HOST_PRICE, &out->memory_gib_hour, err);
    if (rc) return rc;
    snprintf(out->currency, sizeof out->currency, "%s", cur);
    json_t *ch = json_object_get(spec, "card_hour"), *tk = json_object_get(spec, "tokens");
    if ((ch && !json_is_array(ch)) || (tk && !json_is_array(tk)) ||
        json_array_size(ch) > METER_MAX_PRICES || json_array_size(tk) > METER_MAX_PRICES)
        return gp_err_set(err, GP_EINVALID, "card_hour and tokens are arrays of at most %d prices",
                          METER_MAX_PRICES);
    size_t i;
    json_t *p;
    json_array_foreach(ch, i, p) {
        meter_card_price *c = &out->card[out->ncard];
        const char *m = NULL, *f = NULL, *vd = NULL;
        if (!json_is_object(p)) return gp_err_set(err, GP_EINVALID, "card_hour[%zu] must be an object", i);
        if ((rc = jx_only_fields(p, pfields, err)) || (rc = jx_get_str(p, "model", 0, &m, err)) ||
            (rc = jx_get_str(p, "vendor", 0, &vd, err)) || (rc = jx_get_str(p, "form", 0, &f, err)) ||
            (rc = price_arg(p, "price", METER_MAX_CARD_HOUR_PRICE, &c->price, err)))
            return rc;
        if (!m) m = "*";
        if (!vd) vd = "*";
        if (!*m || strlen(m) >= sizeof c->model)
            return gp_err_set(err, GP_EINVALID, "card_hour[%zu].model must be 1..63 characters", i);
        if (strcmp(vd, "*") && !meter_vendor_valid(vd))
            return gp_err_set(err, GP_EINVALID, "card_hour[%zu].vendor must be nvidia, amd or intel", i);
        if (f && strcmp(f, "whole") && strcmp(f, "mig") && strcmp(f, "shared") && strcmp(f, "*"))
            return gp_err_set(err, GP_EINVALID, "card_hour[%zu].form must be whole, mig, shared or *", i);
        for (int k = 0; k < out->ncard; k++)
            if (!strcasecmp(out->card[k].model, m) && !strcmp(out->card[k].vendor, vd) &&
                !strcmp(out->card[k].form, f ? f : "*"))
                return gp_err_set(err, GP_EINVALID, "card_hour: %s/%s/%s is priced twice", m, vd,
                                  f ? f : "*");
        snprintf(c->model, sizeof c->model, "%s", m);
        snprintf(c->vendor, sizeof c->vendor, "%s", vd);
        snprintf(c->form, sizeof c->form, "%s", f ? f : "*");
        out->ncard++;
    }
    json_array_foreach(tk, i, p) {
        meter_token_price *t = &out->tok[out->ntok];
        const char *m;
        if (!json_is_object(p)) return gp_err_set(err, GP_EINVALID, "tokens[%zu] must be an object", i);
        if ((rc = jx_only_fields(p, tfields, err)) || (rc = jx_get_str(p, "model", 1, &m, err)) ||
            (rc = price_arg(p, "input", METER_MAX_TOKEN_PRICE, &t->input, err)) ||
            (rc = price_arg(p, "output", METER_MAX_TOKEN_PRICE, &t->output, err)))
            return rc;
        if (!*m || strlen(m) >= sizeof t->model)
            return gp_err_set(err, GP_EINVALID, "tokens[%zu].model must be 1..127 characters", i);
        for (int k = 0; k < out->ntok; k++)
            if (!strcmp(out->tok[k].model, m))
                return gp_err_set(err, GP_EINVALID, "tokens: %s is priced twice", m);
        snprintf(t->model, sizeof t->model, "%s", m);
        out->ntok++;
    }
    return GP_OK;
}

json_t *meter_card_json(const meter_rate_card *c) {
    json_t *ch = json_array(), *tk = json_array();
    for (int i = 0; i < c->ncard; i++) {
        json_t *p = json_pack("{s:s,s:s,s:f}", "model", c->card[i].model, "form", c->card[i].form,
                              "price", c->card[i].price);
        if (strcmp(c->card[i].vendor, "*")) json_object_set_new(p, "vendor", json_string(c->card[i].vendor));
        json_array_append_new(ch, p);
    }
    for (int i = 0; i < c->ntok; i++)
        json_array_append_new(tk, json_pack("{s:s,s:f,s:f}", "model", c->tok[i].model, "input",
                                            c->tok[i].input, "output", c->tok[i].output));
    return json_pack("{s:i,s:o,s:s,s:o,s:o,s:f,s:f}", "version", c->version, "effective_from",
                     jx_time(c->effective_us), "currency", c->currency, "card_hour", ch, "tokens", tk,
                     "cpu_hour", c->cpu_hour, "memory_gib_hour", c->memory_gib_hour);
}

/* "mig:3g.40gb" -> "mig" */
static int form_is(const char *form, const char *kind) {
    size_t n = strlen(kind);
    return !strncmp(form, kind, n) && (form[n] == '\0' || form[n] == ':');
}

double meter_card_hour_price(const meter_rate_card *c, const char *vendor, const char *gpu_model,
                             const char *form) {
    if (!vendor || !*vendor) vendor = "nvidia";
    if (!gpu_model) gpu_model = "";
    if (!form) form = "";
    double best = -1;
    int best_score = -1;
    size_t best_len = 0;
    for (int i = 0; i < c->ncard; i++) {
        const meter_card_price *p = &c->card[i];
        int any_model = !strcmp(p->model, "*"), any_vendor = !strcmp(p->vendor, "*");
        int any_form = !strcmp(p->form, "*");
        if (!any_model && !inv_model_matches(p->model, gpu_model)) continue;
        if (!any_vendor && strcmp(p->vendor, vendor)) continue;
        if (!any_form && !form_is(form, p->form)) continue;
        /* model, then vendor, then form: each level outweighs all below it */
        int score = (any_model ? 0 : 4) + (any_vendor ? 0 : 2) + (any_form ? 0 : 1);
        size_t len = any_model ? 0 : strlen(p->model);
        if (score > best_score || (score == best_score && len > best_len)) {
            best = p->price;
            best_score = score;
            best_len = len;
        }
    }
    return best;
}

int meter_token_prices(const meter_rate_card *c, const char *model, double *in, double *out) {
    int wild = -1;
    for (int i = 0; i < c->ntok; i++) {
        if (!strcmp(c->tok[i].model, model)) {
            *in = c->tok[i].input;
            *out = c->tok[i].output;
            return 0;
        }
        if (!strcmp(c->tok[i].model, "*")) wild = i;
    }
    if (wild >= 0) {
        *in = c->tok[wild].input;
        *out = c->tok[wild].output;
        return 0;
    }
    *in = *out = 0;
    return -1;
}

/* ---- time ---- */

#define HOUR_US 3600000000LL
#define DAY_US (24 * HOUR_US)

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

int64_t meter_bucket_start(int64_t t, int bucket) {
    switch (bucket) {
    case METER_BUCKET_HOUR: return floor_div(t, HOUR_US) * HOUR_US;
    case METER_BUCKET_DAY: return floor_div(t, DAY_US) * DAY_US;
    case METER_BUCKET_MONTH: {
        time_t s = (time_t)floor_div(t, 1000000);
        struct tm tm;
        gmtime_r(&s, &tm);
        tm.tm_mday = 1;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        return (int64_t)timegm(&tm) * 1000000;
    }
    default: return t;
    }
}

int64_t meter_bucket_next(int64_t start, int bucket) {
    switch (bucket) {
    case METER_BUCKET_HOUR: return start + HOUR_US;
    case METER_BUCKET_DAY: return start + DAY_US;
    case METER_BUCKET_MONTH: {
        time_t s = (time_t)floor_div(start, 1000000);
        struct tm tm;
        gmtime_r(&s, &tm);
        tm.tm_mon += 1;
        tm.tm_mday = 1;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        return (int64_t)timegm(&tm) * 1000000;
    }
    default: return INT64_MAX;
    }
}

int meter_bucket_parse(const char *s) {
    if (!s || !*s || !strcmp(s, "none")) return METER_BUCKET_NONE;
    if (!strcmp(s, "hour")) return METER_BUCKET_HOUR;
    if (!strcmp(s, "day")) return METER_BUCKET_DAY;
    if (!strcmp(s, "month")) return METER_BUCKET_MONTH;
    return -1;
}

int64_t meter_overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

int meter_month_range(const char *month, int64_t *from_us, int64_t *to_us, gp_err *err) {
    int y, m;
    char tail;
    if (!month || sscanf(month, "%4d-%2d%c", &y, &m, &tail) != 2 || strlen(month) != 7 || y < 1970 ||
        y > 9999 || m < 1 || m > 12)
        return gp_err_set(err, GP_EINVALID, "month must look like 2026-11");
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = m - 1;
    tm.tm_mday = 1;
    *from_us = (int64_t)timegm(&tm) * 1000000;
    *to_us = meter_bucket_next(*from_us, METER_BUCKET_MONTH);
    return GP_OK;
}

int meter_group_parse(const char *s, unsigned *out, gp_err *err) {
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"tenant", METER_BY_TENANT}, {"project", METER_BY_PROJECT}, {"model", METER_BY_MODEL},
                 {"vendor", METER_BY_VENDOR}, {"accelerator", METER_BY_ACCEL}, {"key", METER_BY_KEY},
                 {"user", METER_BY_USER}};
    *out = 0;
    if (!s || !*s) return GP_OK;
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n)) {
                *out |= names[i].bit;
                found = 1;
            }
        if (!found)
            return gp_err_set(err, GP_EINVALID,
                              "group_by takes tenant, project, model, vendor, accelerator, key, user;"
                              " got '%.*s'",
                              (int)(n > 40 ? 40 : n), p);
        p += n;
        if (*p == ',') p++;
    }
    return GP_OK;
}
