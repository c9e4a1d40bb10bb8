/*
 * h_usage.c - usage and cost reports, rate cards, billing modes, and the
 * serving cost of self-hosted models.  The logic is in src/meter.
 *
 *   GET  /usage?from=&to=|month=&group_by=&bucket=&tenant=&project=&vendor=&accelerator=
 *        &format=json|csv
 *        platform-/security-admins: everything (with idle capacity when no tenant is
 *        named); tenant readers: ?tenant=T; project members: ?tenant=T&project=P.
 *        vendor= and accelerator= only narrow what the caller's scope already shows.
 *   GET  /rate-cards                        every signed-in user
 *   POST /rate-cards                        platform-admin (ratecard.manage)
 *   GET|PUT /tenants/{t}/billing            tenant readers | platform-admin
 *   GET  /tenants/{t}/models/{m}/serving-cost?from=&to=|month=   model readers
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../meter/meter.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

static int allowed(api_req *r, int action, const char *tenant_id, const char *project_id) {
    authz_target t = {tenant_id, project_id};
    return authz_check(r->who->bindings, r->who->nbindings, action, &t, gt_now_us()) == AUTHZ_ALLOW;
}

/* The window from ?from=&to= or ?month=; defaults to the current month. 0, or -1 with a 400. */
static int window(api_req *r, int64_t *from, int64_t *to) {
    gp_err err = GP_ERR_INIT;
    const char *f = api_query(r, "from"), *t = api_query(r, "to"), *m = api_query(r, "month");
    if (m && (f || t)) {
        api_error(r, 400, "invalid_argument", "give month, or from and to, not both");
        return -1;
    }
    if (m) {
        if (meter_month_range(m, from, to, &err)) {
            api_fail(r, &err);
            return -1;
        }
        return 0;
    }
    int64_t now = gt_now_us();
    *from = meter_bucket_start(now, METER_BUCKET_MONTH);
    *to = meter_bucket_next(*from, METER_BUCKET_MONTH);
    if ((f && gt_parse_rfc3339(f, from)) || (t && gt_parse_rfc3339(t, to))) {
        api_error(r, 400, "invalid_argument", "from and to must be RFC 3339 times");
        return -1;
    }
    if (*to <= *from) {
        api_error(r, 400, "invalid_argument", "to must be after from");
        return -1;
    }
    if (*to - *from > 400LL * 86400 * 1000000) {
        api_error(r, 400, "invalid_argument", "a report covers at most 400 days");
        return -1;
    }
    return 0;
}

void h_usage_report(api_req *r) {
    gp_err err = GP_ERR_INIT;
    meter_query q;
    memset(&q, 0, sizeof q);
    q.now_us = gt_now_us();
    const char *tn = api_query(r, "tenant"), *pn = api_query(r, "project");
    const char *fmt = api_query(r, "format");
    if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv")) {
        api_error(r, 400, "invalid_argument", "format must be json or csv");
        return;
    }
    if (pn && !tn) {
        api_error(r, 400, "invalid_argument", "project needs tenant");
        return;
    }
    int global = allowed(r, ACT_USAGE_READ, NULL, NULL);
    if (!global && !tn) {
        api_error(r, 403, "forbidden", "name your tenant: ?tenant=T (and ?project=P)");
        return;
    }
    store_tx *tx;
    if (api_begin(r, STORE_READ, &tx)) return;
    tenancy_tenant t;
    tenancy_project p;
    int rc = GP_OK;
    if (tn) {
        rc = tenancy_tenant_find(tx, tn, &t, &err);
        if (!rc && pn) rc = tenancy_project_find(tx, &t, pn, &p, &err);
        if (rc == GP_ENOTFOUND) {
            store_rollback(tx);
            api_error(r, 404, "not_found", "not found");
            return;
        }
        if (rc) {
            api_abort(r, tx, &err);
            return;
        }
        /* a tenant reader sees the tenant; a project member only with ?project= */
        if (!global && !allowed(r, ACT_USAGE_READ, t.id, NULL) &&
            (!pn || !api_authorize(r, ACT_USAGE_READ, t.id, p.id))) {
            store_rollback(tx);
            if (!pn) api_authorize(r, ACT_USAGE_READ, t.id, NULL); /* 403 or 404, as the role says */
            return;
        }
        q.tenant_id = t.id;
        q.project_id = pn ? p.id : NULL;
    }
    q.idle = global && !tn;
    if (window(r, &q.from_us, &q.to_us)) {
        store_rollback(tx);
        return;
    }
    q.bucket = meter_bucket_parse(api_query(r, "bucket"));
    if (q.bucket < 0) {
        store_rollback(tx);
        api_error(r, 400, "invalid_argument", "bucket must be hour, day or month");
        return;
    }
    if (q.bucket == METER_BUCKET_HOUR && q.to_us - q.from_us > 31LL * 86400 * 1000000) {
        store_rollback(tx);
        api_error(r, 400, "invalid_argument", "hourly buckets cover at most 31 days");
        return;
    }
    if (meter_group_parse(api_query(r, "group_by"), &q.group_by, &err)) {
        store_rollback(tx);
        api_fail(r, &err);
        return;
    }
    /* filters: within the scope decided above, never widening it */
    q.vendor = api_query(r, "vendor");
    q.accelerator = api_query(r, "accelerator");
    if (q.vendor && !meter_vendor_valid(q.vendor)) {
        store_rollback(tx);
        api_error(r, 400, "invalid_argument", "vendor must be nvidia, amd or intel");
        return;
    }
    if (q.accelerator && (!*q.accelerator || strlen(q.accelerator) > 63)) {
        store_rollback(tx);
        api_error(r, 400, "invalid_argument", "accelerator must be 1..63 characters");
        return;
    }
    json_t *rep;
    rc = meter_report(tx, &q, &rep, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    if (fmt && !strcmp(fmt, "csv")) {
        char *text = meter_report_csv(rep);
        json_decref(rep);
        if (!text) {
            api_error(r, 500, "out_of_memory", "out of memory");
            return;
        }
        api_reply_text(r, 200, "text/csv; charset=utf-8", text);
        free(text);
        return;
    }
    api_reply(r, 200, rep);
}

/* ---- rate cards ---- */

void h_ratecard_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = meter_card_list(tx, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_ratecard_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    api_target(r, "rate_card", NULL, NULL, NULL);
    if (!api_authorize(r, ACT_RATECARD_MANAGE, NULL, NULL) || api_body(r, &body)) return;
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    int version = 0;
    int rc = meter_card_add(tx, body, r->who->name, &version, &err);
    if (rc) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    char v[16];
    snprintf(v, sizeof v, "%d", version);
    api_target(r, NULL, v, NULL, NULL);
    json_t *sum = json_pack("{s:i,s:O?,s:O?}", "version", version, "effective_from",
                            json_object_get(body, "effective_from"), "currency",
                            json_object_get(body, "currency"));
    json_decref(body);
    if (api_finish(r, tx, 201, sum)) return;
    /* answer with the stored version */
    json_t *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    rc = meter_card_list(tx, &items, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    size_t i;
    json_t *c, *mine = NULL;
    json_array_foreach(items, i, c) if (json_integer_value(json_object_get(c, "version")) == version) mine = c;
    api_reply(r, 201, mine ? json_incref(mine) : json_pack("{s:i}", "version", version));
    json_decref(items);
}

/* ---- billing modes ---- */

static int tenant_of(api_req *r, store_tx *tx, tenancy_tenant *t) {
    gp_err err = GP_ERR_INIT;
    const char *tn = api_param(r, "tenant");
    api_target(r, "tenant", tn, tn, NULL);
    int rc = tenancy_tenant_find(tx, tn, t, &err);
    if (rc == GP_ENOTFOUND) api_error(r, 404, "not_found", "not found");
    else if (rc) api_fail(r, &err);
    return rc ? -1 : 0;
}

void h_billing_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    char mode[16];
    if (api_begin(r, STORE_READ, &tx)) return;
    if (tenant_of(r, tx, &t) || !api_authorize(r, ACT_USAGE_READ, t.id, NULL)) {
        store_rollback(tx);
        return;
    }
    int rc = meter_billing_get(tx, t.id, mode, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, json_pack("{s:s,s:s}", "tenant", t.name, "mode", mode));
}

void h_billing_put(api_req *r) {
    static const char *const fields[] = {"mode", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    json_t *body;
    const char *mode;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (tenant_of(r, tx, &t) || !api_authorize(r, ACT_RATECARD_MANAGE, t.id, NULL) ||
        api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    int rc = jx_only_fields(body, fields, &err);
    if (!rc) rc = jx_get_str(body, "mode", 1, &mode, &err);
    if (!rc) rc = meter_billing_set(tx, t.id, mode, &err);
    if (rc) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:s}", "mode", mode);
    json_t *out = json_pack("{s:s,s:s}", "tenant", t.name, "mode", mode);
    json_decref(body);
    if (api_finish(r, tx, 200, sum)) {
        json_decref(out);
        return;
    }
    api_reply(r, 200, out);
}

/* ---- serving cost of a self-hosted model ---- */

void h_serving_cost(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    int64_t from, to;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (tenant_of(r, tx, &t) || !api_authorize(r, ACT_MODEL_READ, t.id, NULL)) {
        store_rollback(tx);
        return;
    }
    const char *model = api_param(r, "model");
    store_stmt *s;
    int rc = store_query(tx, &s, &err, "SELECT COUNT(*) FROM models WHERE tenant_id = ? AND name = ?",
                         "ss", t.id, model);
    int64_t found = 0;
    if (!rc) {
        if (store_step(s, &err) > 0) found = store_int(s, 0);
        store_done(s);
    }
    if (!rc && !found) {
        store_rollback(tx);
        api_error(r, 404, "not_found", "model not found");
        return;
    }
    if (rc || window(r, &from, &to)) {
        if (rc) api_abort(r, tx, &err);
        else store_rollback(tx);
        return;
    }
    json_t *out;
    /* other tenants' names and figures only for those who may read every tenant's usage */
    rc = meter_serving_cost(tx, t.id, model, from, to, gt_now_us(),
                            allowed(r, ACT_USAGE_READ, NULL, NULL), t.name, &out, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, out);
}
