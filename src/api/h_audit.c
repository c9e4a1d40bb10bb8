/*
 * h_audit.c - reading and verifying the audit chain.
 *
 * GET /api/v1/audit            security-admin: every event; with ?tenant=T,
 *                              tenant-admins of T too (that tenant's events).
 *                              Filters: action (exact, or prefix ending '.'),
 *                              result, after (cursor), limit (1..1000).
 * GET /api/v1/audit/verify     security-admin: recompute the whole chain.
 */
#include "api_int.h"

#include "../audit/audit.h"
#include "../tenancy/tenancy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Parse an optional integer query argument in [lo, hi]; 0 ok, -1 with a 400 set. */
static int query_int(api_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out) {
    const char *v = api_query(r, name);
    if (!v) return 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        char msg[128];
        snprintf(msg, sizeof msg, "query parameter '%s' must be an integer in [%" PRId64
                 ", %" PRId64 "]", name, lo, hi);
        api_error(r, 400, "invalid_argument", msg);
        return -1;
    }
    *out = x;
    return 0;
}

void h_audit_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    const char *tenant = api_query(r, "tenant");
    api_target(r, "audit", NULL, tenant, NULL);
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        api_fail(r, &err);
        return;
    }
    if (tenant) {
        tenancy_tenant t;
        int rc = tenancy_tenant_find(tx, tenant, &t, &err);
        if (rc) {
            store_rollback(tx);
            if (rc == GP_ENOTFOUND) api_error(r, 404, "not_found", "not found");
            else api_fail(r, &err);
            return;
        }
        if (!api_authorize(r, ACT_AUDIT_READ_TENANT, t.id, NULL)) {
            store_rollback(tx);
            return;
        }
    } else if (!api_authorize(r, ACT_AUDIT_READ_ALL, NULL, NULL)) {
        store_rollback(tx);
        return;
    }
    int64_t after = 0, limit = 100;
    if (query_int(r, "after", 0, INT64_MAX, &after) || query_int(r, "limit", 1, 1000, &limit)) {
        store_rollback(tx);
        return;
    }
    audit_filter f = {.tenant = tenant, .action = api_query(r, "action"),
                      .result = api_query(r, "result"), .after_seq = after, .limit = (int)limit};
    json_t *items;
    int64_t next;
    int rc = audit_list(tx, &f, &items, &next, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    char cursor[32];
    snprintf(cursor, sizeof cursor, "%" PRId64, next);
    api_reply(r, 200, api_list(items, next ? cursor : NULL));
}

void h_audit_verify(api_req *r) {
    gp_err err = GP_ERR_INIT;
    audit_report rep;
    api_target(r, "audit", "chain", NULL, NULL);
    if (!api_authorize(r, ACT_AUDIT_VERIFY, NULL, NULL)) return;
    if (audit_verify(r->store, &rep, &err)) {
        api_fail(r, &err);
        return;
    }
    json_t *o = json_pack("{s:b,s:I,s:s}", "ok", rep.ok, "checked", (json_int_t)rep.checked,
                          "head_hash", rep.head_hash);
    if (!rep.ok) {
        json_object_set_new(o, "first_bad_seq", json_integer(rep.bad_seq));
        json_object_set_new(o, "reason", json_string(rep.reason));
    }
    api_reply(r, 200, o);
}
