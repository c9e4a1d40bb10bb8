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

/* ---- classes ---- */

static void class_reply(api_req *r, store_tx *tx, const char *name, int status) {
    gp_err err = GP_ERR_INIT;
    health_policy pol;
    json_t *items;
    if (inv_health_policy_load(tx, &pol, &err) ||
        inv_class_list(tx, &pol, name, &items, &err)) {
        api_fail(r, &err);
        return;
    }
    if (!name) {
        api_reply(r, status, api_list(items, NULL));
        return;
    }
    if (json_array_size(items) == 0) api_error(r, 404, "not_found", "not found");
    else api_reply(r, status, json_incref(json_array_get(items, 0)));
    json_decref(items);
}

void h_class_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    api_target(r, "class", NULL, NULL, NULL);
    if (!api_authorize(r, ACT_CLASS_MANAGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    const char *name = json_string_value(json_object_get(body, "name"));
    char nm[64] = "";
    if (name) snprintf(nm, sizeof nm, "%s", name);
    api_target(r, NULL, nm, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (inv_class_create(tx, body, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 201, body)) return;
    if (api_begin(r, STORE_READ, &tx)) return;
    class_reply(r, tx, nm, 201);
    store_rollback(tx);
}

void h_class_list(api_req *r) {
    store_tx *tx;
    if (api_begin(r, STORE_READ, &tx)) return;
    class_reply(r, tx, NULL, 200);
    store_rollback(tx);
}

void h_class_get(api_req *r) {
    store_tx *tx;
    api_target(r, "class", api_param(r, "name"), NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    class_reply(r, tx, api_param(r, "name"), 200);
    store_rollback(tx);
}

void h_class_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_target(r, "class", api_param(r, "name"), NULL, NULL);
    if (!api_authorize(r, ACT_CLASS_MANAGE, NULL, NULL)) return;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_class_delete(tx, api_param(r, "name"), &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, NULL))
        api_reply(r, 200, json_pack("{s:s,s:b}", "name", api_param(r, "name"), "deleted", 1));
}

/* ---- pools ---- */

static void pool_reply(api_req *r, const char *name, int status) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = inv_pool_list(tx, name, &items, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    if (!name) api_reply(r, status, api_list(items, NULL));
    else if (json_array_size(items) == 0) {
        api_error(r, 404, "not_found", "not found");
        json_decref(items);
    } else {
        api_reply(r, status, json_incref(json_array_get(items, 0)));
        json_decref(items);
    }
}

void h_pool_list(api_req *r) {
    if (!api_authorize(r, ACT_NODE_READ, NULL, NULL)) return;
    pool_reply(r, NULL, 200);
}

void h_pool_get(api_req *r) {
    api_target(r, "pool", api_param(r, "name"), NULL, NULL);
    if (!api_authorize(r, ACT_NODE_READ, NULL, NULL)) return;
    pool_reply(r, api_param(r, "name"), 200);
}

static void pool_write(api_req *r, const char *name, int create) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    if (!api_authorize(r, ACT_POOL_MANAGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    char nm[64] = "";
    if (name) snprintf(nm, sizeof nm, "%s", name);
    else if (json_string_value(json_object_get(body, "name")))
        snprintf(nm, sizeof nm, "%s", json_string_value(json_object_get(body, "name")));
    api_target(r, "pool", nm, NULL, NULL);
    if (!nm[0]) {
        json_decref(body);
        api_error(r, 400, "invalid_argument", "field 'name' is required");
        return;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (inv_pool_put(tx, nm, body, create, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, create ? 201 : 200, body)) pool_reply(r, nm, create ? 201 : 200);
}

void h_pool_create(api_req *r) { pool_write(r, NULL, 1); }
void h_pool_put(api_req *r) { pool_write(r, api_param(r, "name"), 0); }

void h_pool_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_target(r, "pool", api_param(r, "name"), NULL, NULL);
    if (!api_authorize(r, ACT_POOL_MANAGE, NULL, NULL)) return;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_pool_delete(tx, api_param(r, "name"), &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, NULL))
        api_reply(r, 200, json_pack("{s:s,s:b}", "name", api_param(r, "name"), "deleted", 1));
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
