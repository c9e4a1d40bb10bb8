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

/* A sensitive route (vendor.create): dispatch validates it by a dry run, then files it. */
int h_vendor_create(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"user", "nodes", "work_orders", "ttl_seconds", NULL};
    const char *uname;
    int64_t ttl = 0;
    int present, others = 0, grants = 0, rc;
    auth_user u;
    size_t nn, nw;
    char *nodes = NULL, *wos = NULL;
    api_target(c->r, "vendor-access", NULL, NULL, NULL);
    if (jx_only_fields(c->body, fields, err) || jx_get_str(c->body, "user", 1, &uname, err) ||
        jx_get_int(c->body, "ttl_seconds", 1, &ttl, &present, err) ||
        !(nodes = names_array(c->body, "nodes", &nn, err)) ||
        !(wos = names_array(c->body, "work_orders", &nw, err))) {
        rc = err->code;
        goto out;
    }
    if (ttl < 60 || ttl > VENDOR_MAX_TTL) {
        rc = gp_err_set(err, GP_EINVALID, "ttl_seconds must be between 60 and %lld",
                        (long long)VENDOR_MAX_TTL);
        goto out;
    }
    if (nn + nw == 0) {
        rc = gp_err_set(err, GP_EINVALID, "name at least one node or work order");
        goto out;
    }
    api_target(c->r, NULL, uname, NULL, NULL);
    rc = auth_user_find(c->tx, uname, &u, err);
    if (rc == GP_ENOTFOUND) gp_err_set(err, rc, "user '%s' not found", uname);
    if (!rc) rc = auth_user_role_counts(c->tx, u.id, &others, &grants, err);
    if (!rc && others > 0)
        rc = gp_err_set(err, GP_ECONFLICT,
                        "user '%s' holds other roles; vendor access goes to vendor-only accounts",
                        uname);
    char id[RND_ID_LEN];
    if (!rc) rc = auth_vendor_grant(c->tx, u.id, nodes, wos, ttl, c->who->user_id, id, err);
    if (rc) goto out;
    json_t *nv = json_object_get(c->body, "nodes"), *wv = json_object_get(c->body, "work_orders");
    c->summary = json_pack("{s:s,s:o,s:o,s:I}", "user", uname, "nodes",
                           nv ? json_incref(nv) : json_array(), "work_orders",
                           wv ? json_incref(wv) : json_array(), "ttl_seconds", (json_int_t)ttl);
    if (c->dry_run) goto out; /* the approval shows the change, not a grant's id */
    api_target(c->r, NULL, id, NULL, NULL);
    json_object_set_new(c->summary, "id", json_string(id));
    char exp[GT_RFC3339_LEN];
    gt_format_us(gt_now_us() + ttl * 1000000, exp, sizeof exp);
    api_reply(c->r, 201, json_pack("{s:s,s:s,s:s,s:s}", "id", id, "user", uname, "expires_at",
                                   exp, "state", "active"));
out:
    free(nodes);
    free(wos);
    return rc;
}

/* SC_SIGNED_IN: ops see every grant, a vendor its own; anyone else 403. */
int h_vendor_list(api_ctx *c, gp_err *err) {
    json_t *items;
    authz_target g = {NULL, NULL};
    int64_t now = gt_now_us();
    int ops = authz_check(c->who->bindings, c->who->nbindings, ACT_VENDOR_MANAGE, &g, now) ==
              AUTHZ_ALLOW;
    int vendor = authz_holds(c->who->bindings, c->who->nbindings, ROLE_VENDOR, now);
    api_target(c->r, "vendor-access", NULL, NULL, NULL);
    if (!ops && !vendor)
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    int rc = auth_vendor_list(c->tx, ops ? NULL : c->who->user_id, &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

int h_vendor_revoke(api_ctx *c, gp_err *err) {
    const char *id = api_param(c->r, "id");
    api_target(c->r, "vendor-access", id, NULL, NULL);
    int rc = auth_vendor_revoke(c->tx, id, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s}", "id", id);
    api_reply(c->r, 200, json_pack("{s:s,s:s}", "id", id, "state", "revoked"));
    return GP_OK;
}
