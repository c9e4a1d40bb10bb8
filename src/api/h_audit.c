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

/* Authorise reading the audit (whole, or one tenant's with ?tenant=). */
static int authorize_read(api_ctx *c, const char *tenant, int export, gp_err *err) {
    if (!tenant)
        return api_allow(c, export ? ACT_AUDIT_EXPORT : ACT_AUDIT_READ_ALL, NULL, NULL, err);
    tenancy_tenant t;
    int rc = tenancy_tenant_find(c->tx, tenant, &t, err);
    if (rc == GP_ENOTFOUND) return gp_err_set(err, rc, "not found");
    return rc ? rc : api_allow(c, export ? ACT_AUDIT_EXPORT : ACT_AUDIT_READ_TENANT, t.id, NULL,
                               err);
}

/*
 * GET /api/v1/audit/export - the filtered events as JSON Lines.  Exporting is
 * the sensitive operation audit.export (a sensitive route: dispatch checks it
 * by a dry run, then files it): by default it answers 202 with an approval,
 * and the export is produced when a second person approves (the approval's
 * result holds it).  The export itself is recorded, with its size.
 */
int h_audit_export(api_ctx *c, gp_err *err) {
    audit_filter f;
    const char *tenant = api_query(c->r, "tenant");
    api_target(c->r, "audit", "export", tenant, NULL);
    int rc = authorize_read(c, tenant, 1, err);
    if (rc) return rc;
    if (parse_filter(c->r, tenant, &f)) return GP_EINVALID; /* its 400 is set */
    if (c->dry_run) {
        if (tenant) snprintf(c->approval_tenant, sizeof c->approval_tenant, "%s", tenant);
        c->summary = json_pack("{s:s?}", "tenant", tenant);
        return GP_OK;
    }
    strbuf out = SB_INIT;
    f.limit = 1000;
    for (;;) {
        json_t *items;
        int64_t next;
        if ((rc = audit_list(c->tx, &f, &items, &next, err))) {
            sb_release(&out);
            return rc;
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
    if (!sb_ok(&out)) {
        sb_release(&out);
        return gp_err_set(err, GP_ENOMEM, "out of memory");
    }
    c->summary = json_pack("{s:s?,s:I}", "tenant", tenant, "bytes", (json_int_t)out.len);
    api_reply_text(c->r, 200, "application/x-ndjson", out.buf);
    sb_release(&out);
    return GP_OK;
}

/* SC_SIGNED_IN: the whole audit for its readers, one tenant's (?tenant=) for its admins. */
int h_audit_list(api_ctx *c, gp_err *err) {
    const char *tenant = api_query(c->r, "tenant");
    api_target(c->r, "audit", NULL, tenant, NULL);
    int rc = authorize_read(c, tenant, 0, err);
    if (rc) return rc;
    audit_filter f;
    if (parse_filter(c->r, tenant, &f)) return GP_EINVALID; /* its 400 is set */
    json_t *items;
    int64_t next;
    if ((rc = audit_list(c->tx, &f, &items, &next, err))) return rc;
    char cursor[32];
    snprintf(cursor, sizeof cursor, "%" PRId64, next);
    api_reply(c->r, 200, api_list(items, next ? cursor : NULL));
    return GP_OK;
}

/* SC_GLOBAL, ACT_AUDIT_VERIFY; no transaction of the request's: the check reads the whole
 * chain in transactions of its own (audit_verify_signed). */
int h_audit_verify(api_ctx *c, gp_err *err) {
    audit_report rep;
    api_req *r = c->r;
    api_target(r, "audit", "chain", NULL, NULL);
    /* with a signing key, the chain is checked against its signed checkpoints */
    audit_trust trust = {0};
    if (r->cfg && r->cfg->audit_key_id) {
        trust.key_id = r->cfg->audit_key_id;
        trust.checkpoint_file = r->cfg->audit_checkpoint_file;
    }
    int rc = audit_verify_signed(r->store, trust.key_id ? &trust : NULL, &rep, err);
    if (!rc) api_reply(r, 200, audit_report_json(&rep));
    return rc;
}

int h_audit_checkpoints(api_ctx *c, gp_err *err) {
    int64_t after = 0, limit = 100;
    api_target(c->r, "audit", "checkpoints", NULL, NULL);
    if (api_query_int(c->r, "after", 0, INT64_MAX, &after) ||
        api_query_int(c->r, "limit", 1, 1000, &limit))
        return GP_EINVALID; /* its 400 is set */
    json_t *items;
    int64_t next;
    int rc = audit_checkpoint_list(c->tx, after, (int)limit, &items, &next, err);
    if (rc) return rc;
    char cursor[32];
    snprintf(cursor, sizeof cursor, "%" PRId64, next);
    json_t *o = api_list(items, next ? cursor : NULL);
    const char *key = c->r->cfg ? c->r->cfg->audit_key_id : NULL;
    json_object_set_new(o, "key_id", key ? json_string(key) : json_null());
    api_reply(c->r, 200, o);
    return GP_OK;
}
