/*
 * h_audit.c - reading and verifying the audit chain.
 *
 * GET /api/v1/audit            security-admin: every event; with ?tenant=T,
 *                              tenant-admins of T too (that tenant's events).
 *                              Filters: action (exact, or prefix ending '.'),
 *                              result, after (cursor), limit (1..1000).
 * GET /api/v1/audit/verify     security-admin: recompute the whole chain and
 *                              check it against the signed checkpoints (the
 *                              server's key, the table and the file copy).
 * GET /api/v1/audit/checkpoints whoever reads the whole audit: the signed
 *                              checkpoints and the public key (key_id).
 */
#include "api_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/strbuf.h"
#include "../tenancy/tenancy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read the list/export filters from the query; -1 with a 400 set. */
static int parse_filter(api_req *r, const char *tenant, audit_filter *f) {
    int64_t after = 0, limit = 100;
    memset(f, 0, sizeof *f);
    if (api_query_int(r, "after", 0, INT64_MAX, &after) ||
        api_query_int(r, "limit", 1, 1000, &limit))
        return -1;
    static const char *const times[] = {"since", "until"};
    int64_t *dst[] = {&f->since_us, &f->until_us};
    for (int i = 0; i < 2; i++) {
        const char *v = api_query(r, times[i]);
        if (v && gt_parse_rfc3339(v, dst[i]) != 0) {
            char msg[96];
            snprintf(msg, sizeof msg, "query parameter '%s' must be an RFC 3339 time", times[i]);
            api_error(r, 400, "invalid_argument", msg);
            return -1;
        }
    }
    f->tenant = tenant;
    f->action = api_query(r, "action");
    f->result = api_query(r, "result");
    f->actor = api_query(r, "actor");
    f->target = api_query(r, "target");
    f->project = api_query(r, "project");
    f->after_seq = after;
    f->limit = (int)limit;
    return 0;
}

/* Authorise reading the audit (whole, or one tenant's with ?tenant=); 0 when allowed. */
static int authorize_read(api_req *r, store_tx *tx, const char *tenant, int export) {
    gp_err err = GP_ERR_INIT;
    if (tenant) {
        tenancy_tenant t;
        int rc = tenancy_tenant_find(tx, tenant, &t, &err);
        if (rc == GP_ENOTFOUND) {
            api_error(r, 404, "not_found", "not found");
            return -1;
        }
        if (rc) {
            api_fail(r, &err);
            return -1;
        }
        return api_authorize(r, export ? ACT_AUDIT_EXPORT : ACT_AUDIT_READ_TENANT, t.id, NULL)
                   ? 0
                   : -1;
    }
    return api_authorize(r, export ? ACT_AUDIT_EXPORT : ACT_AUDIT_READ_ALL, NULL, NULL) ? 0 : -1;
}

/*
 * GET /api/v1/audit/export - the filtered events as JSON Lines.  Exporting is
 * the sensitive operation audit.export: by default it answers 202 with an
 * approval, and the export is produced when a second person approves (the
 * approval's result holds it).
 */
void h_audit_export(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    audit_filter f;
    const char *tenant = api_query(r, "tenant");
    api_target(r, "audit", "export", tenant, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    int ok = !authorize_read(r, tx, tenant, 1) && !parse_filter(r, tenant, &f);
    store_rollback(tx);
    if (!ok) return;
    json_t *change = json_pack("{s:s?}", "tenant", tenant);
    int pending = api_needs_approval(r, "audit.export", tenant, change);
    json_decref(change);
    if (pending) return;
    strbuf out = SB_INIT;
    f.limit = 1000;
    if (api_begin(r, STORE_READ, &tx)) return;
    for (;;) {
        json_t *items;
        int64_t next;
        if (audit_list(tx, &f, &items, &next, &err)) {
            sb_release(&out);
            api_abort(r, tx, &err);
            return;
        }
        size_t i;
        json_t *e;
        json_array_foreach(items, i, e) {
            char *line = jx_dump(e);
            if (line) sb_adds(&out, line);
            sb_addc(&out, '\n');
            free(line);
        }
        json_decref(items);
        if (!next) break;
        f.after_seq = next;
    }
    store_rollback(tx);
    if (!sb_ok(&out)) {
        sb_release(&out);
        api_error(r, 500, "out_of_memory", "out of memory");
        return;
    }
    /* the export itself is recorded */
    if (api_begin(r, STORE_WRITE, &tx)) {
        sb_release(&out);
        return;
    }
    if (api_finish(r, tx, 200, json_pack("{s:s?,s:I}", "tenant", tenant, "bytes",
                                         (json_int_t)out.len))) {
        sb_release(&out);
        return;
    }
    api_reply_text(r, 200, "application/x-ndjson", out.buf);
    sb_release(&out);
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
    if (authorize_read(r, tx, tenant, 0)) {
        store_rollback(tx);
        return;
    }
    audit_filter f;
    if (parse_filter(r, tenant, &f)) {
        store_rollback(tx);
        return;
    }
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
    /* with a signing key, the chain is checked against its signed checkpoints */
    audit_trust trust = {0};
    if (r->cfg && r->cfg->audit_key_id) {
        trust.key_id = r->cfg->audit_key_id;
        trust.checkpoint_file = r->cfg->audit_checkpoint_file;
    }
    if (audit_verify_signed(r->store, trust.key_id ? &trust : NULL, &rep, &err)) {
        api_fail(r, &err);
        return;
    }
    json_t *o = audit_report_json(&rep);
    api_reply(r, 200, o);
}

void h_audit_checkpoints(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int64_t after = 0, limit = 100;
    api_target(r, "audit", "checkpoints", NULL, NULL);
    if (!api_authorize(r, ACT_AUDIT_READ_ALL, NULL, NULL)) return;
    if (api_query_int(r, "after", 0, INT64_MAX, &after) ||
        api_query_int(r, "limit", 1, 1000, &limit))
        return;
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        api_fail(r, &err);
        return;
    }
    json_t *items;
    int64_t next;
    int rc = audit_checkpoint_list(tx, after, (int)limit, &items, &next, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    char cursor[32];
    snprintf(cursor, sizeof cursor, "%" PRId64, next);
    json_t *o = api_list(items, next ? cursor : NULL);
    const char *key = r->cfg ? r->cfg->audit_key_id : NULL;
    json_object_set_new(o, "key_id", key ? json_string(key) : json_null());
    api_reply(r, 200, o);
}
