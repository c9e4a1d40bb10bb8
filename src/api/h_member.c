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
 *
 * Ownership (DESIGN.md "Identities and workloads have owners"): a tenant or
 * project role for a user homed in this tenant is granted at once; for a
 * user homed elsewhere (another tenant, or the platform) the grant becomes
 * an invitation (202 {"invitation": ...}) that the home decides, unless the
 * caller is a platform-admin or an admin of the user's home.  Node accounts
 * take no role from anyone.  A change that touches a user homed in another
 * tenant is audited twice: once in the tenant of the scope, once in the
 * user's home tenant (same action and summary), so both see it.
 *
 *   GET    /api/v1/tenants/{t}/invitations              from or to tenant t (member.read)
 *   POST   /api/v1/tenants/{t}/invitations/{id}/accept  t is the user's home: its tenant-admin
 *   POST   /api/v1/tenants/{t}/invitations/{id}/decline   (or a platform-admin)
 *   DELETE /api/v1/tenants/{t}/invitations/{id}         t invited: the inviter, or whoever may
 *                                                        grant that role there, withdraws it
 *   GET|POST|DELETE /api/v1/invitations[/{id}[/accept|/decline]]   the same for platform-
 *                                                        admins (platform-homed users' home)
 * Accepting re-checks that the inviter may still grant the role; the binding
 * is then granted_by the inviter.  Invitations expire after 7 days.
 */
#include "api_int.h"

#include "../audit/audit.h"
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

/* Is the caller a live global platform-admin? */
static int platform_admin(const api_req *r) {
    return authz_decides_home(r->who->bindings, r->who->nbindings, NULL, gt_now_us());
}

/* May the caller decide for users homed in `home_id` ("" = the platform)? */
static int decides_home(const api_req *r, const char *home_id) {
    return authz_decides_home(r->who->bindings, r->who->nbindings, home_id, gt_now_us());
}

/*
 * Audit the event a second time for tenant `tenant` (a user's home), when it
 * is not the tenant the event already names: one tenant column per event,
 * so every tenant touched gets its own.
 */
static int audit_also(api_req *r, store_tx *tx, const char *tenant, int status,
                      const char *summary, gp_err *err) {
    if (!tenant || !*tenant || strcmp(tenant, r->a_tenant) == 0) return GP_OK;
    audit_event ev = {
        .actor = r->who->name,
        .on_behalf = r->on_behalf,
        .source = r->source,
        .request_id = r->request_id,
        .action = r->route ? r->route->action : "member.grant",
        .target_type = r->a_type,
        .target_id = r->a_id,
        .tenant = tenant,
        .project = "",
        .result = "ok",
        .status = status,
        .summary = summary,
    };
    return audit_append(tx, &ev, NULL, err);
}

/* api_finish, with the same event also in the tenant `home` (see audit_also). */
static int finish_both(api_req *r, store_tx *tx, int status, json_t *change, const char *home) {
    gp_err err = GP_ERR_INIT;
    char *text = jx_dump(change);
    int rc = audit_also(r, tx, home, status, text ? text : "{}", &err);
    free(text);
    if (rc) {
        json_decref(change);
        return api_abort(r, tx, &err);
    }
    return api_finish(r, tx, status, change);
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
    if (!rc && u.node_account)
        rc = gp_err_set(&err, GP_ECONFLICT,
                        "'%s' is a node account; it belongs to its node and holds no role", uname);
    /* a service account's tokens are minted by its administrators: an administrator role on
     * it would let them act as a second administrator (docs/security.md) */
    if (!rc && (role == ROLE_PLATFORM_ADMIN || role == ROLE_SECURITY_ADMIN) &&
        strcmp(u.kind, "service") == 0)
        rc = gp_err_set(&err, GP_ECONFLICT,
                        "'%s' is a service account: %s is a person's role (a service account's "
                        "tokens are minted by others)",
                        uname, authz_role_name(role));
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
    const char *by = r->on_behalf[0] ? r->on_behalf : r->who->name;
    if (scope != SCOPE_GLOBAL &&
        authz_grant_needs_invitation(r->who->bindings, r->who->nbindings, u.home_tenant_id,
                                     c.target.tenant_id, gt_now_us())) {
        /* the user's home decides: an invitation, not a binding */
        auth_invitation inv;
        rc = auth_invitation_create(tx, c.target.tenant_id, c.target.project_id, u.id,
                                    u.home_tenant_id, (authz_role)role, by, 0, &inv, &err);
        if (rc) {
            json_decref(change);
            api_abort(r, tx, &err);
            return;
        }
        json_object_set_new(change, "invitation", json_string(inv.id));
        json_object_set_new(change, "home", u.home[0] ? json_string(u.home) : json_null());
        if (!finish_both(r, tx, 202, change, u.home))
            api_reply(r, 202, json_pack("{s:o,s:s}", "invitation", auth_invitation_json(&inv),
                                        "message",
                                        u.home[0] ? "the user's home tenant decides this grant"
                                                  : "a platform-admin decides this grant"));
        return;
    }
    /* granted by whoever asked (the requester, when this runs on an approval) */
    rc = auth_member_set(tx, u.id, (authz_role)role, scope, c.target.tenant_id,
                         c.target.project_id, by, replaced, &err);
    if (rc) {
        json_decref(change);
        api_abort(r, tx, &err);
        return;
    }
    if (replaced[0]) json_object_set_new(change, "replaced", json_string(replaced));
    /* a second security-admin arms approvals for good (bootstrap rule) */
    int armed = 0;
    if (role == ROLE_SECURITY_ADMIN && (rc = api__approvals_arm(tx, &armed, &err))) {
        json_decref(change);
        api_abort(r, tx, &err);
        return;
    }
    if (armed) json_object_set_new(change, "approvals_armed", json_true());
    if (!finish_both(r, tx, 200, change, scope == SCOPE_GLOBAL ? NULL : u.home))
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
    if (!finish_both(r, tx, 200, change, scope == SCOPE_GLOBAL ? NULL : u.home)) {
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

/* ---- invitations ---- */

/* The {tenant} of an invitation route (NULL on the global routes); 404 when missing. */
static int inv_tenant(api_req *r, store_tx *tx, int global, tenancy_tenant *t) {
    gp_err err = GP_ERR_INIT;
    memset(t, 0, sizeof *t);
    if (global) return 0;
    const char *tn = api_param(r, "tenant");
    api_target(r, NULL, NULL, tn, NULL);
    int rc = tenancy_tenant_find(tx, tn, t, &err);
    if (rc == GP_ENOTFOUND) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

static void inv_list(api_req *r, int global) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    json_t *items;
    api_target(r, "invitation", NULL, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (inv_tenant(r, tx, global, &t)) {
        store_rollback(tx);
        return;
    }
    int ok = global ? api_authorize(r, ACT_USER_READ_ALL, NULL, NULL)
                    : api_authorize(r, ACT_MEMBER_READ, t.id, NULL);
    if (!ok) {
        store_rollback(tx);
        return;
    }
    if (auth_invitation_list(tx, global ? NULL : t.id, &items, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

/*
 * Load {id} for a decision or a withdrawal.  The invitation must concern the
 * path's tenant (as the home or the inviter), else 404.  0, or -1 with the
 * response set and tx rolled back.
 */
static int inv_load(api_req *r, store_tx *tx, int global, tenancy_tenant *t,
                    auth_invitation *v) {
    gp_err err = GP_ERR_INIT;
    const char *id = api_param(r, "id");
    api_target(r, "invitation", id, NULL, NULL);
    if (inv_tenant(r, tx, global, t)) {
        store_rollback(tx);
        return -1;
    }
    int rc = auth_invitation_get(tx, id, v, &err);
    if (rc && rc != GP_ENOTFOUND) return api_abort(r, tx, &err);
    int seen = !rc && (global ? platform_admin(r)
                              : (strcmp(v->home_tenant_id, t->id) == 0 ||
                                 strcmp(v->tenant_id, t->id) == 0));
    authz_target tt = {global ? NULL : t->id, NULL};
    if (seen && !global)
        seen = authz_check(r->who->bindings, r->who->nbindings, ACT_MEMBER_READ, &tt,
                           gt_now_us()) == AUTHZ_ALLOW ||
               decides_home(r, v->home_tenant_id) || strcmp(v->invited_by, r->who->name) == 0;
    if (!seen) {
        store_rollback(tx);
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    return 0;
}

/* The summary of an invitation's event. */
static json_t *inv_change(const auth_invitation *v, const char *decision) {
    return json_pack("{s:s,s:s,s:s,s:s,s:s?,s:s?,s:s}", "invitation", v->id, "user", v->user,
                     "role", v->role, "tenant", v->tenant,
                     "project", v->project_id[0] ? v->project : NULL, "home",
                     v->home_tenant_id[0] ? v->home : NULL, "decision", decision);
}

/* May the inviter still grant the invited role there?  GP_OK, or GP_ECONFLICT. */
static int inviter_still_may(store_tx *tx, const auth_invitation *v, gp_err *err) {
    auth_user inviter;
    authz_binding *b = NULL;
    int n = 0;
    int rc = auth_user_find(tx, v->invited_by, &inviter, err);
    if (rc == GP_ENOTFOUND || (!rc && inviter.disabled))
        return gp_err_set(err, GP_ECONFLICT, "the inviter can no longer grant this role");
    if (rc || (rc = auth_user_bindings(tx, inviter.id, &b, &n, err))) return rc;
    authz_target t = {v->tenant_id, v->project_id[0] ? v->project_id : NULL};
    int role = authz_role_parse(v->role);
    int ok = role >= 0 && authz_can_grant(b, n, (authz_role)role, &t, gt_now_us()) == AUTHZ_ALLOW;
    auth_bindings_free(b, n);
    return ok ? GP_OK
              : gp_err_set(err, GP_ECONFLICT, "the inviter can no longer grant this role");
}

static void inv_decide(api_req *r, int global, const char *state) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    auth_invitation v;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_load(r, tx, global, &t, &v)) return;
    /* the home decides: its tenant-admin (on the home's own route), or a platform-admin */
    int may = global ? platform_admin(r)
                     : strcmp(v.home_tenant_id, t.id) == 0 && decides_home(r, v.home_tenant_id);
    if (!may) {
        store_rollback(tx);
        api_error(r, 403, "forbidden",
                  v.home_tenant_id[0]
                      ? "only an admin of the user's home tenant decides this invitation"
                      : "only a platform-admin decides invitations of platform users");
        return;
    }
    if (strcmp(v.state, "expired") == 0) {
        /* record the expiry (once), then refuse */
        int rc = auth_invitation_decide(tx, v.id, "expired", r->who->name, &err);
        if (rc && rc != GP_ECONFLICT) {
            api_abort(r, tx, &err);
            return;
        }
        if (api_finish(r, tx, 409, inv_change(&v, "expired"))) return;
        api_error(r, 409, "invitation_expired", "the invitation expired before it was decided");
        return;
    }
    if (strcmp(v.state, "pending") != 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "the invitation is already %s", v.state);
        store_rollback(tx);
        api_error(r, 409, "conflict", msg);
        return;
    }
    int rc = GP_OK;
    int accept = strcmp(state, "accepted") == 0;
    if (accept) {
        int others = 0, vendor_grants = 0;
        auth_user u;
        rc = auth_user_find(tx, v.user, &u, &err);
        if (!rc) rc = auth_user_role_counts(tx, u.id, &others, &vendor_grants, &err);
        if (!rc && (vendor_grants || u.node_account))
            rc = gp_err_set(&err, GP_ECONFLICT, "'%s' can hold no such role", v.user);
        if (!rc) rc = inviter_still_may(tx, &v, &err);
    }
    if (!rc) rc = auth_invitation_decide(tx, v.id, state, r->who->name, &err);
    char replaced[32] = "";
    if (!rc && accept)
        rc = auth_member_set(tx, v.user_id, (authz_role)authz_role_parse(v.role),
                             v.project_id[0] ? SCOPE_PROJECT : SCOPE_TENANT, v.tenant_id,
                             v.project_id[0] ? v.project_id : NULL, v.invited_by, replaced, &err);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *change = inv_change(&v, state);
    if (replaced[0]) json_object_set_new(change, "replaced", json_string(replaced));
    /* the event is the home's (this route's tenant); the inviting tenant gets its own */
    if (finish_both(r, tx, 200, change, v.tenant)) return;
    snprintf(v.state, sizeof v.state, "%s", state);
    snprintf(v.decided_by, sizeof v.decided_by, "%s", r->who->name);
    v.decided_us = gt_now_us();
    api_reply(r, 200, auth_invitation_json(&v));
}

static void inv_withdraw(api_req *r, int global) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    auth_invitation v;
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (inv_load(r, tx, global, &t, &v)) return;
    int may = global ? platform_admin(r) : strcmp(v.tenant_id, t.id) == 0;
    if (may && !global && strcmp(v.invited_by, r->who->name) != 0) {
        authz_target tt = {v.tenant_id, v.project_id[0] ? v.project_id : NULL};
        int role = authz_role_parse(v.role);
        may = role >= 0 && authz_can_grant(r->who->bindings, r->who->nbindings, (authz_role)role,
                                           &tt, gt_now_us()) == AUTHZ_ALLOW;
    }
    if (!may) {
        store_rollback(tx);
        api_error(r, 403, "forbidden",
                  "only the inviting tenant (its inviter, or whoever may grant the role there) "
                  "withdraws an invitation");
        return;
    }
    int rc = auth_invitation_decide(tx, v.id, "withdrawn", r->who->name, &err);
    if (rc == GP_ECONFLICT) {
        char msg[96];
        snprintf(msg, sizeof msg, "the invitation is already %s", v.state);
        store_rollback(tx);
        api_error(r, 409, "conflict", msg);
        return;
    }
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    if (finish_both(r, tx, 200, inv_change(&v, "withdrawn"), v.home)) return;
    snprintf(v.state, sizeof v.state, "withdrawn");
    snprintf(v.decided_by, sizeof v.decided_by, "%s", r->who->name);
    v.decided_us = gt_now_us();
    api_reply(r, 200, auth_invitation_json(&v));
}

void h_invitation_tenant_list(api_req *r) { inv_list(r, 0); }
void h_invitation_tenant_accept(api_req *r) { inv_decide(r, 0, "accepted"); }
void h_invitation_tenant_decline(api_req *r) { inv_decide(r, 0, "declined"); }
void h_invitation_tenant_withdraw(api_req *r) { inv_withdraw(r, 0); }
void h_invitation_global_list(api_req *r) { inv_list(r, 1); }
void h_invitation_global_accept(api_req *r) { inv_decide(r, 1, "accepted"); }
void h_invitation_global_decline(api_req *r) { inv_decide(r, 1, "declined"); }
void h_invitation_global_withdraw(api_req *r) { inv_withdraw(r, 1); }
