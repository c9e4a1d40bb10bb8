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

/* ---- work orders: SC_SIGNED_IN, the handler decides who sees which ---- */

/*
 * The caller's reach: 1 = every work order (ops and admins who read nodes),
 * 2 = a vendor's (OUT: *ids from its grants), 0 = none.
 */
static int wo_scope(api_ctx *c, json_t **ids) {
    authz_target g = {NULL, NULL};
    int64_t now = gt_now_us();
    *ids = NULL;
    if (authz_check(c->who->bindings, c->who->nbindings, ACT_NODE_READ, &g, now) == AUTHZ_ALLOW)
        return 1;
    if (!authz_holds(c->who->bindings, c->who->nbindings, ROLE_VENDOR, now)) return 0;
    json_t *nodes = NULL;
    if (auth_vendor_scope(c->tx, c->who->user_id, &nodes, ids, NULL)) return 0;
    json_decref(nodes);
    return 2;
}

/* {id} if the caller may see it (else not found). OUT: *wo (new ref, may be NULL: not
 * wanted), *vendor. */
static int wo_load(api_ctx *c, json_t **wo, int *vendor, gp_err *err) {
    json_t *ids, *o = NULL;
    const char *id = api_param(c->r, "id");
    api_target(c->r, "work-order", id, NULL, NULL);
    int scope = wo_scope(c, &ids);
    int rc = scope ? inv_wo_get(c->tx, id, &o, err) : GP_ENOTFOUND;
    int visible = rc == GP_OK;
    if (visible && scope == 2) {
        size_t i;
        json_t *v;
        visible = strcmp(json_string_value(json_object_get(o, "assignee")), c->who->name) == 0;
        json_array_foreach(ids, i, v) if (strcmp(json_string_value(v), id) == 0) visible = 1;
    }
    json_decref(ids);
    *vendor = scope == 2;
    if (rc && rc != GP_ENOTFOUND) return rc;
    if (!visible) {
        json_decref(o);
        return gp_err_set(err, GP_ENOTFOUND, "not found");
    }
    if (wo) *wo = o;
    else json_decref(o);
    return GP_OK;
}

/* Answer work order `id` as the request's transaction sees it. */
static int wo_reply(api_ctx *c, const char *id, int status, gp_err *err) {
    json_t *wo;
    int rc = inv_wo_get(c->tx, id, &wo, err);
    if (!rc) api_reply(c->r, status, wo);
    return rc;
}

/* SC_GLOBAL, ACT_WORKORDER_MANAGE */
int h_wo_create(api_ctx *c, gp_err *err) {
    char id[32];
    api_target(c->r, "work-order", NULL, NULL, NULL);
    int rc = inv_wo_create(c->tx, c->body, c->who->name, id, err);
    if (rc) return rc;
    api_target(c->r, NULL, id, NULL, NULL);
    c->summary = json_deep_copy(c->body);
    json_object_set_new(c->summary, "id", json_string(id));
    return wo_reply(c, id, 201, err);
}

int h_wo_list(api_ctx *c, gp_err *err) {
    json_t *ids, *items;
    int scope = wo_scope(c, &ids);
    if (!scope) return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    if (scope == 2 && !ids) ids = json_array();
    int rc = inv_wo_list(c->tx, scope == 2 ? ids : NULL, scope == 2 ? c->who->name : NULL,
                         &items, err);
    json_decref(ids);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

int h_wo_get(api_ctx *c, gp_err *err) {
    json_t *wo;
    int vendor;
    int rc = wo_load(c, &wo, &vendor, err);
    if (!rc) api_reply(c->r, 200, wo);
    return rc;
}

/* The work order in the path, which the caller may change: its vendor, or ops. */
static int wo_changeable(api_ctx *c, int *vendor, gp_err *err) {
    int rc = wo_load(c, NULL, vendor, err);
    if (!rc && !*vendor) rc = api_allow(c, ACT_WORKORDER_MANAGE, NULL, NULL, err);
    return rc;
}

int h_wo_update(api_ctx *c, gp_err *err) {
    int vendor;
    const char *id = api_param(c->r, "id");
    int rc = wo_changeable(c, &vendor, err);
    /* a vendor moves its work orders along, nothing more */
    if (!rc) rc = inv_wo_update(c->tx, id, c->body, vendor, err);
    if (rc) return rc;
    c->summary = json_incref(c->body);
    return wo_reply(c, id, 200, err);
}

int h_wo_comment(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"body", NULL};
    const char *text, *id = api_param(c->r, "id");
    int vendor;
    int rc = wo_changeable(c, &vendor, err);
    if (!rc) rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "body", 1, &text, err);
    if (!rc) rc = inv_wo_comment(c->tx, id, c->who->name, text, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s}", "comment", "added");
    return wo_reply(c, id, 201, err);
}
