/*
 * h_vendor.c - vendor access: ops-engineers grant a vendor account access to
 * named nodes and work orders until an expiry.
 *
 *   POST   /api/v1/vendor-access         {"user","nodes":[…],"work_orders":[…],"ttl_seconds"}
 *                                        ops-engineer; sensitive operation vendor.create
 *   GET    /api/v1/vendor-access         ops-engineers: all; a vendor: its own
 *   DELETE /api/v1/vendor-access/{id}    ops-engineer: revoke at once
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdlib.h>
#include <string.h>

#define VENDOR_MAX_TTL (90LL * 86400)

/* Validate an optional array of object names; returns its compact JSON text (free) or NULL. */
static char *names_array(json_t *body, const char *key, size_t *count, gp_err *err) {
    json_t *v = json_object_get(body, key);
    *count = 0;
    if (!v) return strdup("[]");
    if (!json_is_array(v) || json_array_size(v) > 100) {
        gp_err_set(err, GP_EINVALID, "%s must be an array of at most 100 names", key);
        return NULL;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || !gp_name_valid(json_string_value(e))) {
            gp_err_set(err, GP_EINVALID, "%s must hold names of lower-case letters, digits and '-'",
                       key);
            return NULL;
        }
    }
    *count = json_array_size(v);
    return jx_dump(v);
}

void h_vendor_create(api_req *r) {
    static const char *const fields[] = {"user", "nodes", "work_orders", "ttl_seconds", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    const char *uname;
    int64_t ttl = 0;
    int present;
    auth_user u;
    size_t nn, nw;
    api_target(r, "vendor-access", NULL, NULL, NULL);
    if (!api_authorize(r, ACT_VENDOR_MANAGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    char *nodes = NULL, *wos = NULL;
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "user", 1, &uname, &err) ||
        jx_get_int(body, "ttl_seconds", 1, &ttl, &present, &err) ||
        !(nodes = names_array(body, "nodes", &nn, &err)) ||
        !(wos = names_array(body, "work_orders", &nw, &err)))
        goto bad;
    if (ttl < 60 || ttl > VENDOR_MAX_TTL) {
        gp_err_set(&err, GP_EINVALID, "ttl_seconds must be between 60 and %lld",
                   (long long)VENDOR_MAX_TTL);
        goto bad;
    }
    if (nn + nw == 0) {
        gp_err_set(&err, GP_EINVALID, "name at least one node or work order");
        goto bad;
    }
    api_target(r, NULL, uname, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) goto out;
    int others = 0, grants = 0;
    int rc = auth_user_find(tx, uname, &u, &err);
    if (rc == GP_ENOTFOUND) gp_err_set(&err, rc, "user '%s' not found", uname);
    if (!rc) rc = auth_user_role_counts(tx, u.id, &others, &grants, &err);
    if (!rc && others > 0)
        rc = gp_err_set(&err, GP_ECONFLICT,
                        "user '%s' holds other roles; vendor access goes to vendor-only accounts",
                        uname);
    store_rollback(tx);
    if (rc) goto bad;
    json_t *nv = json_object_get(body, "nodes"), *wv = json_object_get(body, "work_orders");
    json_t *change = json_pack("{s:s,s:o,s:o,s:I}", "user", uname, "nodes",
                               nv ? json_incref(nv) : json_array(), "work_orders",
                               wv ? json_incref(wv) : json_array(), "ttl_seconds",
                               (json_int_t)ttl);
    int pending = api_needs_approval(r, "vendor.create", NULL, change);
    if (pending) {
        json_decref(change);
        goto out;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(change);
        goto out;
    }
    char id[RND_ID_LEN];
    if (auth_vendor_grant(tx, u.id, nodes, wos, ttl, r->who->user_id, id, &err)) {
        json_decref(change);
        api_abort(r, tx, &err);
        goto out;
    }
    api_target(r, NULL, id, NULL, NULL);
    json_object_set_new(change, "id", json_string(id));
    if (!api_finish(r, tx, 201, change)) {
        char exp[GT_RFC3339_LEN];
        gt_format_us(gt_now_us() + ttl * 1000000, exp, sizeof exp);
        api_reply(r, 201, json_pack("{s:s,s:s,s:s,s:s}", "id", id, "user", uname, "expires_at",
                                    exp, "state", "active"));
    }
    goto out;
bad:
    api_fail(r, &err);
out:
    free(nodes);
    free(wos);
    json_decref(body);
}

void h_vendor_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    authz_target g = {NULL, NULL};
    int64_t now = gt_now_us();
    int ops = authz_check(r->who->bindings, r->who->nbindings, ACT_VENDOR_MANAGE, &g, now) ==
              AUTHZ_ALLOW;
    int vendor = authz_holds(r->who->bindings, r->who->nbindings, ROLE_VENDOR, now);
    api_target(r, "vendor-access", NULL, NULL, NULL);
    if (!ops && !vendor) {
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    if (api_begin(r, STORE_READ, &tx)) return;
    if (auth_vendor_list(tx, ops ? NULL : r->who->user_id, &items, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

void h_vendor_revoke(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    const char *id = api_param(r, "id");
    api_target(r, "vendor-access", id, NULL, NULL);
    if (!api_authorize(r, ACT_VENDOR_MANAGE, NULL, NULL)) return;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (auth_vendor_revoke(tx, id, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, json_pack("{s:s}", "id", id)))
        api_reply(r, 200, json_pack("{s:s,s:s}", "id", id, "state", "revoked"));
}
