/*
 * h_catalog.c - resource classes, resource pools and work orders.
 *
 *   classes:     any signed-in user lists them (with capacity); platform-admins
 *                create and delete
 *   pools:       platform-, security-admins and ops read; platform-admins change
 *                (pools name the tenants that may use them: not for tenants' eyes)
 *   work orders: ops-engineers open, assign, change and comment; a vendor sees
 *                the ones its grants name or that are assigned to it, and may
 *                change their state and comment on them; everyone else: 404
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../inventory/inventory.h"

#include <stdlib.h>
#include <string.h>

/* ---- classes and pools: declared routes (routes.c), dispatch opens, authorises, audits ---- */

/* The reply: every class (name NULL) or one (404 when absent), read in the request's tx,
 * so what a change answers is what it committed. */
static int class_reply(api_ctx *c, const char *name, int status, gp_err *err) {
    health_policy pol;
    json_t *items;
    int rc = inv_health_policy_load(c->tx, &pol, err);
    if (!rc) rc = inv_class_list(c->tx, &pol, name, &items, err);
    if (rc) return rc;
    if (!name) {
        api_reply(c->r, status, api_list(items, NULL));
        return GP_OK;
    }
    json_t *one = json_incref(json_array_get(items, 0));
    json_decref(items);
    if (!one) return gp_err_set(err, GP_ENOTFOUND, "not found");
    api_reply(c->r, status, one);
    return GP_OK;
}

/* `name` from the body, copied (a class or pool being created), "" when absent */
static void body_name(const api_ctx *c, char nm[64]) {
    const char *name = json_string_value(json_object_get(c->body, "name"));
    snprintf(nm, 64, "%s", name ? name : "");
}

int h_class_create(api_ctx *c, gp_err *err) {
    char nm[64];
    body_name(c, nm);
    api_target(c->r, "class", nm, NULL, NULL);
    int rc = inv_class_create(c->tx, c->body, err);
    if (rc) return rc;
    c->summary = json_incref(c->body);
    return class_reply(c, nm, 201, err);
}

int h_class_list(api_ctx *c, gp_err *err) { return class_reply(c, NULL, 200, err); }

int h_class_get(api_ctx *c, gp_err *err) {
    api_target(c->r, "class", api_param(c->r, "name"), NULL, NULL);
    return class_reply(c, api_param(c->r, "name"), 200, err);
}

int h_class_delete(api_ctx *c, gp_err *err) {
    const char *name = api_param(c->r, "name");
    api_target(c->r, "class", name, NULL, NULL);
    int rc = inv_class_delete(c->tx, name, err);
    if (!rc) api_reply(c->r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    return rc;
}

static int pool_reply(api_ctx *c, const char *name, int status, gp_err *err) {
    json_t *items;
    int rc = inv_pool_list(c->tx, name, &items, err);
    if (rc) return rc;
    if (!name) {
        api_reply(c->r, status, api_list(items, NULL));
        return GP_OK;
    }
    json_t *one = json_incref(json_array_get(items, 0));
    json_decref(items);
    if (!one) return gp_err_set(err, GP_ENOTFOUND, "not found");
    api_reply(c->r, status, one);
    return GP_OK;
}

int h_pool_list(api_ctx *c, gp_err *err) { return pool_reply(c, NULL, 200, err); }

int h_pool_get(api_ctx *c, gp_err *err) {
    api_target(c->r, "pool", api_param(c->r, "name"), NULL, NULL);
    return pool_reply(c, api_param(c->r, "name"), 200, err);
}

static int pool_write(api_ctx *c, const char *name, int create, gp_err *err) {
    char nm[64];
    if (name) snprintf(nm, sizeof nm, "%s", name);
    else body_name(c, nm);
    api_target(c->r, "pool", nm, NULL, NULL);
    if (!nm[0]) return gp_err_set(err, GP_EINVALID, "field 'name' is required");
    int rc = inv_pool_put(c->tx, nm, c->body, create, err);
    if (rc) return rc;
    c->summary = json_incref(c->body);
    return pool_reply(c, nm, create ? 201 : 200, err);
}

int h_pool_create(api_ctx *c, gp_err *err) { return pool_write(c, NULL, 1, err); }
int h_pool_put(api_ctx *c, gp_err *err) { return pool_write(c, api_param(c->r, "name"), 0, err); }

int h_pool_delete(api_ctx *c, gp_err *err) {
    const char *name = api_param(c->r, "name");
    api_target(c->r, "pool", name, NULL, NULL);
    int rc = inv_pool_delete(c->tx, name, err);
    if (!rc) api_reply(c->r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    return rc;
}

/* ---- work orders ---- */

/*
 * The caller's reach: 1 = every work order (ops and admins who read nodes),
 * 2 = a vendor's (OUT: *ids from its grants), 0 = none.
 */
static int wo_scope(api_req *r, store_tx *tx, json_t **ids) {
    gp_err err = GP_ERR_INIT;
    authz_target g = {NULL, NULL};
    int64_t now = gt_now_us();
    *ids = NULL;
    if (authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &g, now) == AUTHZ_ALLOW)
        return 1;
    if (!authz_holds(r->who->bindings, r->who->nbindings, ROLE_VENDOR, now)) return 0;
    json_t *nodes = NULL;
    if (auth_vendor_scope(tx, r->who->user_id, &nodes, ids, &err)) return 0;
    json_decref(nodes);
    return 2;
}

/* Load {id} if the caller may see it (else 404). OUT: *wo (new ref), *vendor. */
static int wo_load(api_req *r, store_tx *tx, json_t **wo, int *vendor) {
    gp_err err = GP_ERR_INIT;
    json_t *ids;
    const char *id = api_param(r, "id");
    api_target(r, "work-order", id, NULL, NULL);
    int scope = wo_scope(r, tx, &ids);
    int rc = scope ? inv_wo_get(tx, id, wo, &err) : GP_ENOTFOUND;
    int visible = rc == GP_OK;
    if (visible && scope == 2) {
        size_t i;
        json_t *v;
        visible = strcmp(json_string_value(json_object_get(*wo, "assignee")), r->who->name) == 0;
        json_array_foreach(ids, i, v) if (strcmp(json_string_value(v), id) == 0) visible = 1;
        if (!visible) json_decref(*wo);
    }
    json_decref(ids);
    *vendor = scope == 2;
    if (rc && rc != GP_ENOTFOUND) {
        api_fail(r, &err);
        return -1;
    }
    if (!visible) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    return 0;
}

void h_wo_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    char id[32];
    api_target(r, "work-order", NULL, NULL, NULL);
    if (!api_authorize(r, ACT_WORKORDER_MANAGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (inv_wo_create(tx, body, r->who->name, id, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    api_target(r, NULL, id, NULL, NULL);
    json_object_set_new(body, "id", json_string(id));
    if (api_finish(r, tx, 201, body)) return;
    json_t *wo;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = inv_wo_get(tx, id, &wo, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 201, wo);
}

void h_wo_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *ids, *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    int scope = wo_scope(r, tx, &ids);
    if (!scope) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    if (scope == 2 && !ids) ids = json_array();
    int rc = inv_wo_list(tx, scope == 2 ? ids : NULL, scope == 2 ? r->who->name : NULL, &items,
                         &err);
    json_decref(ids);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    api_reply(r, 200, api_list(items, NULL));
}

void h_wo_get(api_req *r) {
    store_tx *tx;
    json_t *wo;
    int vendor;
    if (api_begin(r, STORE_READ, &tx)) return;
    int ok = !wo_load(r, tx, &wo, &vendor);
    store_rollback(tx);
    if (ok) api_reply(r, 200, wo);
}

void h_wo_update(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *wo, *body;
    int vendor;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (wo_load(r, tx, &wo, &vendor)) {
        store_rollback(tx);
        return;
    }
    json_decref(wo);
    if (!vendor && !api_authorize(r, ACT_WORKORDER_MANAGE, NULL, NULL)) {
        store_rollback(tx);
        return;
    }
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    /* a vendor moves its work orders along, nothing more */
    if (inv_wo_update(tx, api_param(r, "id"), body, vendor, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 200, body)) return;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = inv_wo_get(tx, api_param(r, "id"), &wo, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, wo);
}

void h_wo_comment(api_req *r) {
    static const char *const fields[] = {"body", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *wo, *body;
    const char *text;
    int vendor;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (wo_load(r, tx, &wo, &vendor)) {
        store_rollback(tx);
        return;
    }
    json_decref(wo);
    if (!vendor && !api_authorize(r, ACT_WORKORDER_MANAGE, NULL, NULL)) {
        store_rollback(tx);
        return;
    }
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "body", 1, &text, &err) ||
        inv_wo_comment(tx, api_param(r, "id"), r->who->name, text, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    json_decref(body);
    if (api_finish(r, tx, 201, json_pack("{s:s}", "comment", "added"))) return;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = inv_wo_get(tx, api_param(r, "id"), &wo, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 201, wo);
}
