/*
 * h_member.c - role grants at global, tenant and project scope.
 *
 *   GET|PUT|DELETE /api/v1/members[/{user}]                         global roles
 *   GET|PUT|DELETE /api/v1/tenants/{t}/members[/{user}]             tenant roles
 *   GET|PUT|DELETE /api/v1/tenants/{t}/projects/{p}/members[/{user}] project roles
 *
 * PUT {"role": R} grants R (replacing the user's role at a tenant or project
 * scope); DELETE removes it (global: ?role=R).  Escalation is impossible: the
 * caller needs member.manage at the scope *and* a live role there that
 * dominates R (and the role being replaced or removed) - see
 * authz_can_grant().  Granting a global role is the sensitive operation
 * member.grant_global; any other grant is member.grant (not sensitive by
 * default).  The tenant comes from the path, never from the body.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

typedef struct scope_ctx {
    authz_scope scope;
    tenancy_tenant t;
    tenancy_project p;
    authz_target target;
} scope_ctx;

/* Resolve the scope named by the path (tenant/project); 404 when missing. */
static int load_scope(api_req *r, store_tx *tx, authz_scope scope, scope_ctx *c) {
    gp_err err = GP_ERR_INIT;
    memset(c, 0, sizeof *c);
    c->scope = scope;
    if (scope == SCOPE_GLOBAL) return 0;
    const char *tn = api_param(r, "tenant"), *pn = api_param(r, "project");
    api_target(r, NULL, NULL, tn, pn);
    int rc = tenancy_tenant_find(tx, tn, &c->t, &err);
    if (!rc && scope == SCOPE_PROJECT) rc = tenancy_project_find(tx, &c->t, pn, &c->p, &err);
    if (rc == GP_ENOTFOUND) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    c->target.tenant_id = c->t.id;
    c->target.project_id = scope == SCOPE_PROJECT ? c->p.id : NULL;
    return 0;
}

static void list(api_req *r, authz_scope scope) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    scope_ctx c;
    json_t *items;
    api_target(r, "member", NULL, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_scope(r, tx, scope, &c) || !api_authorize(r, ACT_MEMBER_READ, c.target.tenant_id,
                                                      c.target.project_id)) {
        store_rollback(tx);
        return;
    }
    if (auth_member_list(tx, scope, c.target.tenant_id, c.target.project_id, &items, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

/* May the caller grant/revoke `role` here? Sets 403/404 and returns 0 when not. */
static int may_grant(api_req *r, const scope_ctx *c, authz_role role) {
    authz_decision d = authz_can_grant(r->who->bindings, r->who->nbindings, role, &c->target,
                                       gt_now_us());
    if (d == AUTHZ_ALLOW) return 1;
    if (d == AUTHZ_HIDDEN) {
        api_error(r, 404, "not_found", "not found");
    } else {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "you may not grant or revoke %s here: nobody grants a role beyond their own",
                 authz_role_name(role));
        api_error(r, 403, "forbidden", msg);
    }
    return 0;
}

static json_t *member_json(const scope_ctx *c, const char *user, const char *role) {
    json_t *o = json_pack("{s:s,s:s,s:s}", "user", user, "role", role, "scope",
                          authz_scope_name(c->scope));
    if (c->scope != SCOPE_GLOBAL) json_object_set_new(o, "tenant", json_string(c->t.name));
    if (c->scope == SCOPE_PROJECT) json_object_set_new(o, "project", json_string(c->p.name));
    return o;
}

static void put(api_req *r, authz_scope scope) {
    static const char *const fields[] = {"role", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    scope_ctx c;
    auth_user u;
    json_t *body;
    const char *role_name;
    const char *uname = api_param(r, "user");
    api_target(r, "member", uname, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_scope(r, tx, scope, &c) || !api_authorize(r, ACT_MEMBER_MANAGE, c.target.tenant_id,
                                                      c.target.project_id)) {
        store_rollback(tx);
        return;
    }
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "role", 1, &role_name, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    int role = authz_role_parse(role_name);
    if (role < 0 || !authz_role_fits_scope((authz_role)role, scope) || role == ROLE_VENDOR) {
        gp_err_set(&err, GP_EINVALID, "role '%.40s' cannot be granted at %s scope", role_name,
                   authz_scope_name(scope));
        json_decref(body); /* role_name pointed into it */
        api_abort(r, tx, &err);
        return;
    }
    json_decref(body);
    int old = -1;
    int rc = auth_user_find(tx, uname, &u, &err);
    if (!rc) rc = auth_member_role_at(tx, u.id, scope, c.target.tenant_id, c.target.project_id,
                                      &old, &err);
    if (rc == GP_ENOTFOUND) gp_err_set(&err, rc, "user '%s' not found", uname);
    int others = 0, vendor_grants = 0;
    if (!rc) rc = auth_user_role_counts(tx, u.id, &others, &vendor_grants, &err);
    if (!rc && vendor_grants)
        rc = gp_err_set(&err, GP_ECONFLICT, "'%s' is a vendor account; it holds no other role",
                        uname);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    if (!may_grant(r, &c, (authz_role)role)) return;
    if (scope != SCOPE_GLOBAL && old >= 0 && !may_grant(r, &c, (authz_role)old)) return;
    json_t *change = json_pack("{s:s,s:s,s:s}", "user", u.name, "role", authz_role_name(role),
                               "scope", authz_scope_name(scope));
    int pending = api_needs_approval(r, scope == SCOPE_GLOBAL ? "member.grant_global"
                                                              : "member.grant",
                                     scope == SCOPE_GLOBAL ? NULL : c.t.name, change);
    if (pending) {
        json_decref(change);
        return;
    }
    char replaced[32];
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(change);
        return;
    }
    /* granted by whoever asked (the requester, when this runs on an approval) */
    rc = auth_member_set(tx, u.id, (authz_role)role, scope, c.target.tenant_id,
                         c.target.project_id, r->on_behalf[0] ? r->on_behalf : r->who->name,
                         replaced, &err);
    if (rc) {
        json_decref(change);
        api_abort(r, tx, &err);
        return;
    }
    if (replaced[0]) json_object_set_new(change, "replaced", json_string(replaced));
    if (!api_finish(r, tx, 200, change))
        api_reply(r, 200, member_json(&c, u.name, authz_role_name(role)));
}

static void del(api_req *r, authz_scope scope) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    scope_ctx c;
    auth_user u;
    const char *uname = api_param(r, "user");
    const char *qrole = api_query(r, "role");
    api_target(r, "member", uname, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (load_scope(r, tx, scope, &c) || !api_authorize(r, ACT_MEMBER_MANAGE, c.target.tenant_id,
                                                      c.target.project_id)) {
        store_rollback(tx);
        return;
    }
    int role = -1;
    if (qrole && (role = authz_role_parse(qrole)) < 0) {
        gp_err_set(&err, GP_EINVALID, "unknown role '%.40s'", qrole);
        api_abort(r, tx, &err);
        return;
    }
    if (scope == SCOPE_GLOBAL && role < 0) {
        gp_err_set(&err, GP_EINVALID, "removing a global role needs ?role=ROLE");
        api_abort(r, tx, &err);
        return;
    }
    int rc = auth_user_find(tx, uname, &u, &err);
    int held = role;
    if (rc == GP_ENOTFOUND) gp_err_set(&err, rc, "user '%s' not found", uname);
    if (!rc && role < 0)
        rc = auth_member_role_at(tx, u.id, scope, c.target.tenant_id, c.target.project_id, &held,
                                 &err);
    if (!rc && held < 0) rc = gp_err_set(&err, GP_ENOTFOUND, "no such membership");
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    if (!may_grant(r, &c, (authz_role)held)) {
        store_rollback(tx);
        return;
    }
    char removed[32];
    rc = auth_member_remove(tx, u.id, held, scope, c.target.tenant_id, c.target.project_id,
                            removed, &err);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *change = json_pack("{s:s,s:s,s:s}", "user", u.name, "role", removed, "scope",
                               authz_scope_name(scope));
    if (!api_finish(r, tx, 200, change)) {
        json_t *o = member_json(&c, u.name, removed);
        json_object_set_new(o, "removed", json_true());
        api_reply(r, 200, o);
    }
}

void h_member_global_list(api_req *r) { list(r, SCOPE_GLOBAL); }
void h_member_global_put(api_req *r) { put(r, SCOPE_GLOBAL); }
void h_member_global_delete(api_req *r) { del(r, SCOPE_GLOBAL); }
void h_member_tenant_list(api_req *r) { list(r, SCOPE_TENANT); }
void h_member_tenant_put(api_req *r) { put(r, SCOPE_TENANT); }
void h_member_tenant_delete(api_req *r) { del(r, SCOPE_TENANT); }
void h_member_project_list(api_req *r) { list(r, SCOPE_PROJECT); }
void h_member_project_put(api_req *r) { put(r, SCOPE_PROJECT); }
void h_member_project_delete(api_req *r) { del(r, SCOPE_PROJECT); }
