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
 *
 * Declared routes (routes.c); the serving cost reads its callers after its transaction.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../meter/meter.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

static int allowed(const auth_principal *who, int action, const char *tenant_id,
                   const char *project_id) {
    authz_target t = {tenant_id, project_id};
    return authz_check(who->bindings, who->nbindings, action, &t, gt_now_us()) == AUTHZ_ALLOW;
}

/* The window from ?from=&to= or ?month=; defaults to the current month.  GP_OK, or
 * GP_EINVALID (400) in `err`. */
static int window(api_req *r, int64_t *from, int64_t *to, gp_err *err) {
    const char *f = api_query(r, "from"), *t = api_query(r, "to"), *m = api_query(r, "month");
    if (m && (f || t))
        return gp_err_set(err, GP_EINVALID, "give month, or from and to, not both");
    if (m) return meter_month_range(m, from, to, err);
    int64_t now = gt_now_us();
    *from = meter_bucket_start(now, METER_BUCKET_MONTH);
    *to = meter_bucket_next(*from, METER_BUCKET_MONTH);
    if ((f && gt_parse_rfc3339(f, from)) || (t && gt_parse_rfc3339(t, to)))
        return gp_err_set(err, GP_EINVALID, "from and to must be RFC 3339 times");
    if (*to <= *from) return gp_err_set(err, GP_EINVALID, "to must be after from");
    if (*to - *from > 400LL * 86400 * 1000000)
        return gp_err_set(err, GP_EINVALID, "a report covers at most 400 days");
    return GP_OK;
}

/*
 * Declared, SC_SIGNED_IN: the scope comes from the query (?tenant=, ?project=), and this
 * decides what the caller may read there.  The transaction is not tied to a tenant: a
 * global reader's report spans them all, as it did before.
 */
int h_usage_report(api_ctx *c, gp_err *err) {
    api_req *r = c->r;
    meter_query q;
    memset(&q, 0, sizeof q);
    q.now_us = gt_now_us();
    const char *tn = api_query(r, "tenant"), *pn = api_query(r, "project");
    const char *fmt = api_query(r, "format");
    if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
        return gp_err_set(err, GP_EINVALID, "format must be json or csv");
    if (pn && !tn) return gp_err_set(err, GP_EINVALID, "project needs tenant");
    int global = allowed(c->who, ACT_USAGE_READ, NULL, NULL);
    if (!global && !tn)
        return gp_err_set(err, GP_EFORBIDDEN, "name your tenant: ?tenant=T (and ?project=P)");
    tenancy_tenant t;
    tenancy_project p;
    int rc = GP_OK;
    if (tn) {
        rc = tenancy_tenant_find(c->tx, tn, &t, err);
        if (!rc && pn) rc = tenancy_project_find(c->tx, &t, pn, &p, err);
        if (rc == GP_ENOTFOUND) return gp_err_set(err, GP_ENOTFOUND, "not found");
        if (rc) return rc;
        /* a tenant reader sees the tenant; a project member only with ?project= (403 or
         * 404, as the role there says) */
        if (!global && !allowed(c->who, ACT_USAGE_READ, t.id, NULL) &&
            (rc = api_allow(c, ACT_USAGE_READ, t.id, pn ? p.id : NULL, err)))
            return rc;
        q.tenant_id = t.id;
        q.project_id = pn ? p.id : NULL;
    }
    q.idle = global && !tn;
    if ((rc = window(r, &q.from_us, &q.to_us, err))) return rc;
    q.bucket = meter_bucket_parse(api_query(r, "bucket"));
    if (q.bucket < 0) return gp_err_set(err, GP_EINVALID, "bucket must be hour, day or month");
    if (q.bucket == METER_BUCKET_HOUR && q.to_us - q.from_us > 31LL * 86400 * 1000000)
        return gp_err_set(err, GP_EINVALID, "hourly buckets cover at most 31 days");
    if ((rc = meter_group_parse(api_query(r, "group_by"), &q.group_by, err))) return rc;
    /* filters: within the scope decided above, never widening it */
    q.vendor = api_query(r, "vendor");
    q.accelerator = api_query(r, "accelerator");
    if (q.vendor && !meter_vendor_valid(q.vendor))
        return gp_err_set(err, GP_EINVALID, "vendor must be nvidia, amd or intel");
    if (q.accelerator && (!*q.accelerator || strlen(q.accelerator) > 63))
        return gp_err_set(err, GP_EINVALID, "accelerator must be 1..63 characters");
    json_t *rep;
    if ((rc = meter_report(c->tx, &q, &rep, err))) return rc;
    if (fmt && !strcmp(fmt, "csv")) {
        char *text = meter_report_csv(rep);
        json_decref(rep);
        if (!text) {
            api_error(r, 500, "out_of_memory", "out of memory");
            return GP_ENOMEM;
        }
        api_reply_text(r, 200, "text/csv; charset=utf-8", text);
        free(text);
        return GP_OK;
    }
    api_reply(r, 200, rep);
    return GP_OK;
}

/* ---- rate cards ---- */

/* Declared, SC_SIGNED_IN: every signed-in user reads the rate cards. */
int h_ratecard_list(api_ctx *c, gp_err *err) {
    json_t *items;
    int rc = meter_card_list(c->tx, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* Declared (SC_GLOBAL, ratecard.manage); answers the stored version, read in the
 * transaction that adds it. */
int h_ratecard_create(api_ctx *c, gp_err *err) {
    int version = 0;
    api_target(c->r, "rate_card", NULL, NULL, NULL);
    int rc = meter_card_add(c->tx, c->body, c->who->name, &version, err);
    if (rc) return rc;
    char v[16];
    snprintf(v, sizeof v, "%d", version);
    api_target(c->r, NULL, v, NULL, NULL);
    c->summary = json_pack("{s:i,s:O?,s:O?}", "version", version, "effective_from",
                           json_object_get(c->body, "effective_from"), "currency",
                           json_object_get(c->body, "currency"));
    json_t *items;
    if ((rc = meter_card_list(c->tx, &items, err))) return rc;
    size_t i;
    json_t *card, *mine = NULL;
    json_array_foreach(items, i, card) {
        if (json_integer_value(json_object_get(card, "version")) == version) mine = card;
    }
    api_reply(c->r, 201, mine ? json_incref(mine) : json_pack("{s:i}", "version", version));
    json_decref(items);
    return GP_OK;
}

/* ---- billing modes ---- */

/* Declared (SC_TENANT, usage.read). */
int h_billing_get(api_ctx *c, gp_err *err) {
    char mode[16];
    api_target(c->r, "tenant", c->sc.t.name, NULL, NULL);
    int rc = meter_billing_get(c->tx, c->sc.t.id, mode, err);
    if (rc) return rc;
    api_reply(c->r, 200, json_pack("{s:s,s:s}", "tenant", c->sc.t.name, "mode", mode));
    return GP_OK;
}

/* Declared (SC_TENANT, ratecard.manage). */
int h_billing_put(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"mode", NULL};
    const char *mode;
    api_target(c->r, "tenant", c->sc.t.name, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "mode", 1, &mode, err);
    if (!rc) rc = meter_billing_set(c->tx, c->sc.t.id, mode, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s}", "mode", mode);
    api_reply(c->r, 200, json_pack("{s:s,s:s}", "tenant", c->sc.t.name, "mode", mode));
    return GP_OK;
}

/* ---- serving cost of a self-hosted model ----
 *
 * Legacy on purpose: it counts the tokens the model served to every calling tenant (named
 * for a global usage reader, "(other tenants)" otherwise), which are those tenants'
 * usage_records: a transaction tied to the model's tenant (SC_TENANT) would hide them on
 * PostgreSQL.
 */
/* After the tenant-tied transaction: the serving cost counts the tokens a model served to
 * every calling tenant, from their usage records, which the fence would hide; so it reads
 * in a transaction of the meter's.  after_arg: [tenant id, tenant, model, from, to, all]. */
static int serving_cost_after(api_ctx *c, gp_err *err) {
    json_t *a = c->after_arg, *out;
    int rc = meter_serving_cost_read(
        c->r->store, json_string_value(json_array_get(a, 0)),
        json_string_value(json_array_get(a, 2)), json_integer_value(json_array_get(a, 3)),
        json_integer_value(json_array_get(a, 4)), gt_now_us(),
        (int)json_integer_value(json_array_get(a, 5)), json_string_value(json_array_get(a, 1)),
        &out, err);
    if (!rc) api_reply(c->r, 200, out);
    return rc;
}

/* SC_TENANT, ACT_MODEL_READ: the tenant's model, and the window, checked in the request's
 * transaction; the figures read after it (serving_cost_after). */
int h_serving_cost(api_ctx *c, gp_err *err) {
    int64_t from, to;
    const char *model = api_param(c->r, "model");
    api_target(c->r, "tenant", c->sc.t.name, NULL, NULL);
    store_stmt *s;
    int rc = store_query(c->tx, &s, err,
                         "SELECT COUNT(*) FROM models WHERE tenant_id = ? AND name = ?", "ss",
                         c->sc.t.id, model);
    if (rc) return rc;
    int64_t found = store_step(s, err) > 0 ? store_int(s, 0) : 0;
    store_done(s);
    if (!found) return gp_err_set(err, GP_ENOTFOUND, "model not found");
    if ((rc = window(c->r, &from, &to, err))) return rc;
    /* other tenants' names and figures only for those who may read every tenant's usage */
    c->after_arg = json_pack("[s,s,s,I,I,i]", c->sc.t.id, c->sc.t.name, model, (json_int_t)from,
                             (json_int_t)to, allowed(c->who, ACT_USAGE_READ, NULL, NULL));
    c->after = serving_cost_after;
    return GP_OK;
}
