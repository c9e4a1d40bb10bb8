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
 *
 * The member routes and the global invitation routes are declared
 * (routes.c): dispatch resolves and authorises the scope, holds the
 * transaction and appends the event; the handlers add the home tenant's
 * copy of it (audit_also).  The tenant invitation routes stay legacy (see
 * "invitations" below).
 */
#include "api_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

/*
 * Where a member route acts: dispatch resolved the path's tenant (and
 * project) and authorised the route's action there; the global routes have
 * neither.
 */
static authz_target target_of(const api_ctx *c, authz_scope scope) {
    authz_target tg = {scope == SCOPE_GLOBAL ? NULL : c->sc.t.id,
                       scope == SCOPE_PROJECT ? c->sc.p.id : NULL};
    return tg;
}

/* Declared (SC_GLOBAL / SC_TENANT / SC_PROJECT, ACT_MEMBER_READ). */
static int list(api_ctx *c, authz_scope scope, gp_err *err) {
    json_t *items;
    authz_target tg = target_of(c, scope);
    api_target(c->r, "member", NULL, NULL, NULL);
    int rc = auth_member_list(c->tx, scope, tg.tenant_id, tg.project_id, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* May the caller grant/revoke `role` at `tg`?  GP_OK, or 403/404 in `err`. */
static int may_grant(const api_ctx *c, const authz_target *tg, authz_role role, gp_err *err) {
    authz_decision d = authz_can_grant(c->who->bindings, c->who->nbindings, role, tg,
                                       gt_now_us());
    if (d == AUTHZ_ALLOW) return GP_OK;
    if (d == AUTHZ_HIDDEN) return gp_err_set(err, GP_ENOTFOUND, "not found");
    return gp_err_set(err, GP_EFORBIDDEN,
                      "you may not grant or revoke %s here: nobody grants a role beyond their own",
                      authz_role_name(role));
}

static json_t *member_json(const api_ctx *c, authz_scope scope, const char *user,
                           const char *role) {
    json_t *o = json_pack("{s:s,s:s,s:s}", "user", user, "role", role, "scope",
                          authz_scope_name(scope));
    if (scope != SCOPE_GLOBAL) json_object_set_new(o, "tenant", json_string(c->sc.t.name));
    if (scope == SCOPE_PROJECT) json_object_set_new(o, "project", json_string(c->sc.p.name));
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

/*
 * A declared route's change: `change` (stolen) is the summary of the event
 * dispatch appends, and the same event goes to tenant `home` too (audit_also),
 * in this transaction.
 */
static int summarise(api_ctx *c, int status, json_t *change, const char *home, gp_err *err) {
    char *text = jx_dump(change);
    int rc = audit_also(c->r, c->tx, home, status, text ? text : "{}", err);
    free(text);
    json_decref(c->summary);
    c->summary = change;
    return rc;
}

/*
 * Declared and sensitive (member.grant_global on the global route, member.grant on the
 * others): dispatch first runs this as a dry run, which checks everything and stops before
 * the change, with the grant asked as the approval's summary; then, approved or not
 * sensitive, for real (an approved one as its requester, who is then `by`).
 */
static int put(api_ctx *c, authz_scope scope, gp_err *err) {
    static const char *const fields[] = {"role", NULL};
    api_req *r = c->r;
    auth_user u;
    const char *role_name;
    const char *uname = api_param(r, "user");
    authz_target tg = target_of(c, scope);
    api_target(r, "member", uname, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "role", 1, &role_name, err);
    if (rc) return rc;
    int role = authz_role_parse(role_name);
    if (role < 0 || !authz_role_fits_scope((authz_role)role, scope) || role == ROLE_VENDOR)
        return gp_err_set(err, GP_EINVALID, "role '%.40s' cannot be granted at %s scope",
                          role_name, authz_scope_name(scope));
    int old = -1;
    rc = auth_user_find(c->tx, uname, &u, err);
    if (!rc)
        rc = auth_member_role_at(c->tx, u.id, scope, tg.tenant_id, tg.project_id, &old, err);
    if (rc == GP_ENOTFOUND) gp_err_set(err, rc, "user '%s' not found", uname);
    int others = 0, vendor_grants = 0;
    if (!rc) rc = auth_user_role_counts(c->tx, u.id, &others, &vendor_grants, err);
    if (!rc && vendor_grants)
        rc = gp_err_set(err, GP_ECONFLICT, "'%s' is a vendor account; it holds no other role",
                        uname);
    if (!rc && u.node_account)
        rc = gp_err_set(err, GP_ECONFLICT,
                        "'%s' is a node account; it belongs to its node and holds no role", uname);
    /* a service account's tokens are minted by its administrators: an administrator role on
     * it would let them act as a second administrator (docs/security.md) */
    if (!rc && (role == ROLE_PLATFORM_ADMIN || role == ROLE_SECURITY_ADMIN) &&
        strcmp(u.kind, "service") == 0)
        rc = gp_err_set(err, GP_ECONFLICT,
                        "'%s' is a service account: %s is a person's role (a service account's "
                        "tokens are minted by others)",
                        uname, authz_role_name(role));
    if (!rc) rc = may_grant(c, &tg, (authz_role)role, err);
    if (!rc && scope != SCOPE_GLOBAL && old >= 0) rc = may_grant(c, &tg, (authz_role)old, err);
    if (rc) return rc;
    json_t *change = json_pack("{s:s,s:s,s:s}", "user", u.name, "role", authz_role_name(role),
                               "scope", authz_scope_name(scope));
    if (c->dry_run) {
        /* what the approval shows: the grant asked, whichever form it then takes */
        c->summary = change;
        return GP_OK;
    }
    const char *by = r->on_behalf[0] ? r->on_behalf : r->who->name;
    if (scope != SCOPE_GLOBAL &&
        authz_grant_needs_invitation(c->who->bindings, c->who->nbindings, u.home_tenant_id,
                                     tg.tenant_id, gt_now_us())) {
        /* the user's home decides: an invitation, not a binding */
        auth_invitation inv;
        rc = auth_invitation_create(c->tx, tg.tenant_id, tg.project_id, u.id, u.home_tenant_id,
                                    (authz_role)role, by, 0, &inv, err);
        if (rc) {
            json_decref(change);
            return rc;
        }
        json_object_set_new(change, "invitation", json_string(inv.id));
        json_object_set_new(change, "home", u.home[0] ? json_string(u.home) : json_null());
        if ((rc = summarise(c, 202, change, u.home, err))) return rc;
        api_reply(r, 202, json_pack("{s:o,s:s}", "invitation", auth_invitation_json(&inv),
                                    "message",
                                    u.home[0] ? "the user's home tenant decides this grant"
                                              : "a platform-admin decides this grant"));
        return GP_OK;
    }
    /* granted by whoever asked (the requester, when this runs on an approval) */
    char replaced[32];
    rc = auth_member_set(c->tx, u.id, (authz_role)role, scope, tg.tenant_id, tg.project_id, by,
                         replaced, err);
    /* a second security-admin arms approvals for good (bootstrap rule) */
    int armed = 0;
    if (!rc && role == ROLE_SECURITY_ADMIN) rc = api__approvals_arm(c->tx, &armed, err);
    if (rc) {
        json_decref(change);
        return rc;
    }
    if (replaced[0]) json_object_set_new(change, "replaced", json_string(replaced));
    if (armed) json_object_set_new(change, "approvals_armed", json_true());
    if ((rc = summarise(c, 200, change, scope == SCOPE_GLOBAL ? NULL : u.home, err))) return rc;
    api_reply(r, 200, member_json(c, scope, u.name, authz_role_name(role)));
    return GP_OK;
}

/* Declared (ACT_MEMBER_MANAGE at the scope); the role removed must be the caller's to grant. */
static int del(api_ctx *c, authz_scope scope, gp_err *err) {
    api_req *r = c->r;
    auth_user u;
    const char *uname = api_param(r, "user");
    const char *qrole = api_query(r, "role");
    authz_target tg = target_of(c, scope);
    api_target(r, "member", uname, NULL, NULL);
    int role = -1;
    if (qrole && (role = authz_role_parse(qrole)) < 0)
        return gp_err_set(err, GP_EINVALID, "unknown role '%.40s'", qrole);
    if (scope == SCOPE_GLOBAL && role < 0)
        return gp_err_set(err, GP_EINVALID, "removing a global role needs ?role=ROLE");
    int rc = auth_user_find(c->tx, uname, &u, err);
    int held = role;
    if (rc == GP_ENOTFOUND) gp_err_set(err, rc, "user '%s' not found", uname);
    if (!rc && role < 0)
        rc = auth_member_role_at(c->tx, u.id, scope, tg.tenant_id, tg.project_id, &held, err);
    if (!rc && held < 0) rc = gp_err_set(err, GP_ENOTFOUND, "no such membership");
    if (!rc) rc = may_grant(c, &tg, (authz_role)held, err);
    char removed[32];
    if (!rc)
        rc = auth_member_remove(c->tx, u.id, held, scope, tg.tenant_id, tg.project_id, removed,
                                err);
    if (rc) return rc;
    json_t *change = json_pack("{s:s,s:s,s:s}", "user", u.name, "role", removed, "scope",
                               authz_scope_name(scope));
    if ((rc = summarise(c, 200, change, scope == SCOPE_GLOBAL ? NULL : u.home, err))) return rc;
    json_t *o = member_json(c, scope, u.name, removed);
    json_object_set_new(o, "removed", json_true());
    api_reply(r, 200, o);
    return GP_OK;
}

int h_member_global_list(api_ctx *c, gp_err *err) { return list(c, SCOPE_GLOBAL, err); }
int h_member_global_put(api_ctx *c, gp_err *err) { return put(c, SCOPE_GLOBAL, err); }
int h_member_global_delete(api_ctx *c, gp_err *err) { return del(c, SCOPE_GLOBAL, err); }
int h_member_tenant_list(api_ctx *c, gp_err *err) { return list(c, SCOPE_TENANT, err); }
int h_member_tenant_put(api_ctx *c, gp_err *err) { return put(c, SCOPE_TENANT, err); }
int h_member_tenant_delete(api_ctx *c, gp_err *err) { return del(c, SCOPE_TENANT, err); }
int h_member_project_list(api_ctx *c, gp_err *err) { return list(c, SCOPE_PROJECT, err); }
int h_member_project_put(api_ctx *c, gp_err *err) { return put(c, SCOPE_PROJECT, err); }
int h_member_project_delete(api_ctx *c, gp_err *err) { return del(c, SCOPE_PROJECT, err); }

/* ---- invitations ----
 *
 * The tenant routes are SC_TENANT_SPAN: their rows are two tenants' by
 * design (the user's home and the inviting tenant), and the transaction is
 * tied to the path's tenant like any tenant route's; the invitation keeps
 * its project's name (migration 24), so the home reads it without reading
 * the other tenant's projects, which the fence hides.  An inviter reaches
 * its own invitation on the home's path without seeing that tenant (403,
 * not 404), so dispatch checks no visibility and the steps below authorise
 * per invitation.  The global routes are SC_SIGNED_IN (a platform-admin
 * decides).  Both shapes share the steps.
 */

/* SC_TENANT_SPAN, member.read there: invitations from or to the path's tenant. */
int h_invitation_tenant_list(api_ctx *c, gp_err *err) {
    json_t *items;
    api_target(c->r, "invitation", NULL, NULL, NULL);
    int rc = auth_invitation_list(c->tx, c->sc.t.id, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* Declared (SC_GLOBAL, ACT_USER_READ_ALL): every invitation. */
int h_invitation_global_list(api_ctx *c, gp_err *err) {
    json_t *items;
    api_target(c->r, "invitation", NULL, NULL, NULL);
    int rc = auth_invitation_list(c->tx, NULL, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/*
 * Load {id} for a decision or a withdrawal.  On a tenant route (`t`) the
 * invitation must concern that tenant (as the home or the inviter) and the
 * caller must read its members, decide for the home or be the inviter; on a
 * global route (`t` NULL) the caller must be a platform-admin.  Else 404.
 */
static int inv_load(api_req *r, store_tx *tx, const tenancy_tenant *t, auth_invitation *v,
                    gp_err *err) {
    const char *id = api_param(r, "id");
    api_target(r, "invitation", id, NULL, NULL);
    int rc = auth_invitation_get(tx, id, v, err);
    if (rc && rc != GP_ENOTFOUND) return rc;
    int seen = !rc && (!t ? platform_admin(r)
                          : (strcmp(v->home_tenant_id, t->id) == 0 ||
                             strcmp(v->tenant_id, t->id) == 0));
    if (seen && t) {
        authz_target tt = {t->id, NULL};
        seen = authz_check(r->who->bindings, r->who->nbindings, ACT_MEMBER_READ, &tt,
                           gt_now_us()) == AUTHZ_ALLOW ||
               decides_home(r, v->home_tenant_id) || strcmp(v->invited_by, r->who->name) == 0;
    }
    return seen ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
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

/*
 * One step on an invitation, in `tx`: `state` is the decision ("accepted",
 * "declined", "withdrawn").  GP_OK with the reply set, *change the event's
 * summary (owned) and `also` (64 bytes) the other tenant the event is for
 * ("" none); or an error code in `err`, nothing to keep.  An expired
 * invitation is recorded as expired and answered 409 with GP_OK: that
 * refusal commits.
 */
typedef int (*inv_step)(api_req *r, store_tx *tx, const tenancy_tenant *t, const char *state,
                        json_t **change, char *also, gp_err *err);

/* The home decides: its tenant-admin (on the home's own route), or a platform-admin. */
static int inv_decide(api_req *r, store_tx *tx, const tenancy_tenant *t, const char *state,
                      json_t **change, char *also, gp_err *err) {
    auth_invitation v;
    *change = NULL;
    also[0] = '\0';
    int rc = inv_load(r, tx, t, &v, err);
    if (rc) return rc;
    int may = !t ? platform_admin(r)
                 : strcmp(v.home_tenant_id, t->id) == 0 && decides_home(r, v.home_tenant_id);
    if (!may)
        return gp_err_set(err, GP_EFORBIDDEN, "%s",
                          v.home_tenant_id[0]
                              ? "only an admin of the user's home tenant decides this invitation"
                              : "only a platform-admin decides invitations of platform users");
    if (strcmp(v.state, "expired") == 0) {
        /* record the expiry (once), then refuse */
        rc = auth_invitation_decide(tx, v.id, "expired", r->who->name, err);
        if (rc && rc != GP_ECONFLICT) return rc;
        *change = inv_change(&v, "expired");
        api_error(r, 409, "invitation_expired", "the invitation expired before it was decided");
        return GP_OK;
    }
    if (strcmp(v.state, "pending") != 0)
        return gp_err_set(err, GP_ECONFLICT, "the invitation is already %s", v.state);
    int accept = strcmp(state, "accepted") == 0;
    if (accept) {
        int others = 0, vendor_grants = 0;
        auth_user u;
        rc = auth_user_find(tx, v.user, &u, err);
        if (!rc) rc = auth_user_role_counts(tx, u.id, &others, &vendor_grants, err);
        if (!rc && (vendor_grants || u.node_account))
            rc = gp_err_set(err, GP_ECONFLICT, "'%s' can hold no such role", v.user);
        if (!rc) rc = inviter_still_may(tx, &v, err);
    }
    if (!rc) rc = auth_invitation_decide(tx, v.id, state, r->who->name, err);
    char replaced[32] = "";
    if (!rc && accept)
        rc = auth_member_set(tx, v.user_id, (authz_role)authz_role_parse(v.role),
                             v.project_id[0] ? SCOPE_PROJECT : SCOPE_TENANT, v.tenant_id,
                             v.project_id[0] ? v.project_id : NULL, v.invited_by, replaced, err);
    if (rc) return rc;
    *change = inv_change(&v, state);
    if (replaced[0]) json_object_set_new(*change, "replaced", json_string(replaced));
    /* the event is the home's (this route's tenant); the inviting tenant gets its own */
    snprintf(also, 64, "%s", v.tenant);
    snprintf(v.state, sizeof v.state, "%s", state);
    snprintf(v.decided_by, sizeof v.decided_by, "%s", r->who->name);
    v.decided_us = gt_now_us();
    api_reply(r, 200, auth_invitation_json(&v));
    return GP_OK;
}

/* The inviting tenant withdraws: its inviter, or whoever may grant that role there (a
 * platform-admin on the global route). */
static int inv_withdraw(api_req *r, store_tx *tx, const tenancy_tenant *t, const char *state,
                        json_t **change, char *also, gp_err *err) {
    auth_invitation v;
    *change = NULL;
    also[0] = '\0';
    int rc = inv_load(r, tx, t, &v, err);
    if (rc) return rc;
    int may = !t ? platform_admin(r) : strcmp(v.tenant_id, t->id) == 0;
    if (may && t && strcmp(v.invited_by, r->who->name) != 0) {
        authz_target tt = {v.tenant_id, v.project_id[0] ? v.project_id : NULL};
        int role = authz_role_parse(v.role);
        may = role >= 0 && authz_can_grant(r->who->bindings, r->who->nbindings, (authz_role)role,
                                           &tt, gt_now_us()) == AUTHZ_ALLOW;
    }
    if (!may)
        return gp_err_set(err, GP_EFORBIDDEN,
                          "only the inviting tenant (its inviter, or whoever may grant the role "
                          "there) withdraws an invitation");
    rc = auth_invitation_decide(tx, v.id, state, r->who->name, err);
    if (rc == GP_ECONFLICT)
        return gp_err_set(err, GP_ECONFLICT, "the invitation is already %s", v.state);
    if (rc) return rc;
    *change = inv_change(&v, state);
    snprintf(also, 64, "%s", v.home);
    snprintf(v.state, sizeof v.state, "%s", state);
    snprintf(v.decided_by, sizeof v.decided_by, "%s", r->who->name);
    v.decided_us = gt_now_us();
    api_reply(r, 200, auth_invitation_json(&v));
    return GP_OK;
}

/* A step on an invitation, audited in both tenants: on the path's tenant (SC_TENANT_SPAN,
 * the step authorising per invitation), or on a global route (SC_SIGNED_IN: the step
 * answers 404 to all but a platform-admin). */
static int inv_route(api_ctx *c, inv_step step, const char *state, gp_err *err) {
    json_t *change;
    char also[64];
    int rc = step(c->r, c->tx, c->sc.t.id[0] ? &c->sc.t : NULL, state, &change, also, err);
    if (rc) return rc;
    return summarise(c, c->r->status, change, also, err);
}

int h_invitation_tenant_accept(api_ctx *c, gp_err *err) {
    return inv_route(c, inv_decide, "accepted", err);
}
int h_invitation_tenant_decline(api_ctx *c, gp_err *err) {
    return inv_route(c, inv_decide, "declined", err);
}
int h_invitation_tenant_withdraw(api_ctx *c, gp_err *err) {
    return inv_route(c, inv_withdraw, "withdrawn", err);
}
int h_invitation_global_accept(api_ctx *c, gp_err *err) {
    return inv_route(c, inv_decide, "accepted", err);
}
int h_invitation_global_decline(api_ctx *c, gp_err *err) {
    return inv_route(c, inv_decide, "declined", err);
}
int h_invitation_global_withdraw(api_ctx *c, gp_err *err) {
    return inv_route(c, inv_withdraw, "withdrawn", err);
}
