/*
 * members.c - role bindings: who holds which role at which scope.
 *
 * Invariant: at tenant and project scope a user holds at most one role per
 * scope (granting replaces); at global scope a user may hold several roles.
 * This file stores; it does not decide who may grant (authz_can_grant).
 */
#include "auth.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The WHERE clause selecting one scope; parameters: scope, tenant, tenant, project, project. */
#define AT_SCOPE_OF(b)                                                                       \
    " " b "scope = ? AND ((" b "tenant_id IS NULL AND ? IS NULL) OR " b "tenant_id = ?)"     \
    " AND ((" b "project_id IS NULL AND ? IS NULL) OR " b "project_id = ?)"
#define AT_SCOPE AT_SCOPE_OF("")

int auth_member_role_at(store_tx *tx, const char *user_id, authz_scope scope,
                        const char *tenant_id, const char *project_id, int *role, gp_err *err) {
    store_stmt *s;
    *role = -1;
    int rc = store_query(tx, &s, err,
                         "SELECT role FROM role_bindings WHERE user_id = ? AND" AT_SCOPE
                         " ORDER BY role LIMIT 1",
                         "ssssss", user_id, authz_scope_name(scope), tenant_id, tenant_id,
                         project_id, project_id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) *role = authz_role_parse(store_text(s, 0));
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int auth_member_set(store_tx *tx, const char *user_id, authz_role role, authz_scope scope,
                    const char *tenant_id, const char *project_id, const char *granted_by,
                    char replaced[32], gp_err *err) {
    int rc, old = -1;
    if (replaced) replaced[0] = '\0';
    if (!authz_role_fits_scope(role, scope))
        return gp_err_set(err, GP_EINVALID, "role %s cannot be held at %s scope",
                          authz_role_name(role), authz_scope_name(scope));
    if (scope != SCOPE_GLOBAL) {
        if ((rc = auth_member_role_at(tx, user_id, scope, tenant_id, project_id, &old, err)))
            return rc;
        if (old >= 0 && replaced) snprintf(replaced, 32, "%s", authz_role_name((authz_role)old));
        rc = store_exec(tx, NULL, err, "DELETE FROM role_bindings WHERE user_id = ? AND" AT_SCOPE,
                        "ssssss", user_id, authz_scope_name(scope), tenant_id, tenant_id,
                        project_id, project_id);
        if (rc) return rc;
    }
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO role_bindings (user_id, role, scope, tenant_id, project_id,"
                    " created_at, granted_by) VALUES (?,?,?,?,?,?,?)",
                    "sssssis", user_id, authz_role_name(role), authz_scope_name(scope), tenant_id,
                    project_id, gt_now_us(), granted_by);
    if (rc == GP_ECONFLICT && scope == SCOPE_GLOBAL) {
        if (replaced) snprintf(replaced, 32, "%s", authz_role_name(role));
        return GP_OK; /* already held: granting again changes nothing */
    }
    return rc;
}

int auth_member_remove(store_tx *tx, const char *user_id, int role, authz_scope scope,
                       const char *tenant_id, const char *project_id, char removed[32],
                       gp_err *err) {
    int rc, changes = 0, old = role;
    if (removed) removed[0] = '\0';
    if (role < 0) {
        if ((rc = auth_member_role_at(tx, user_id, scope, tenant_id, project_id, &old, err)))
            return rc;
        if (old < 0) return gp_err_set(err, GP_ENOTFOUND, "no such membership");
    }
    rc = store_exec(tx, &changes, err,
                    "DELETE FROM role_bindings WHERE user_id = ? AND role = ? AND" AT_SCOPE,
                    "sssssss", user_id, authz_role_name((authz_role)old), authz_scope_name(scope),
                    tenant_id, tenant_id, project_id, project_id);
    if (rc) return rc;
    if (!changes) return gp_err_set(err, GP_ENOTFOUND, "no such membership");
    if (removed) snprintf(removed, 32, "%s", authz_role_name((authz_role)old));
    return GP_OK;
}

/* A role binding as auth_member_list reads it (STORE_COLS). */
#define MEMBER_COLUMNS(X)                                                                 \
    X(MC_USER, "u.name")                                                                  \
    X(MC_ROLE, "b.role")                                                                  \
    X(MC_SCOPE, "b.scope")                                                                \
    X(MC_TENANT, "t.name")                                                                \
    X(MC_PROJECT, "p.name")                                                               \
    X(MC_GRANTED_BY, "b.granted_by")                                                      \
    X(MC_CREATED, "b.created_at")                                                         \
    X(MC_EXPIRES, "COALESCE(b.expires_at, 0)")
enum { MEMBER_COLUMNS(STORE_COL_ENUM) MC__N };

/* A user's own role binding as auth_member_list_user reads it (STORE_COLS). */
#define USER_BINDING_COLUMNS(X)                                                           \
    X(UB_ROLE, "b.role")                                                                  \
    X(UB_SCOPE, "b.scope")                                                                \
    X(UB_TENANT, "t.name")                                                                \
    X(UB_PROJECT, "p.name")                                                               \
    X(UB_EXPIRES, "COALESCE(b.expires_at, 0)")
enum { USER_BINDING_COLUMNS(STORE_COL_ENUM) UB__N };

int auth_member_list(store_tx *tx, authz_scope scope, const char *tenant_id,
                     const char *project_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MEMBER_COLUMNS)
                         " FROM role_bindings b JOIN users u ON u.id = b.user_id"
                         " LEFT JOIN tenants t ON t.id = b.tenant_id"
                         " LEFT JOIN projects p ON p.id = b.project_id WHERE" AT_SCOPE_OF("b.")
                         " ORDER BY u.name, b.role",
                         "sssss", authz_scope_name(scope), tenant_id, tenant_id, project_id,
                         project_id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        char ts[GT_RFC3339_LEN];
        gt_format_us(store_int(s, MC_CREATED), ts, sizeof ts);
        json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:s}", "user", store_text(s, MC_USER), "role",
                              store_text(s, MC_ROLE), "scope", store_text(s, MC_SCOPE),
                              "granted_by", store_text(s, MC_GRANTED_BY), "created_at", ts);
        if (store_text(s, MC_TENANT))
            json_object_set_new(m, "tenant", json_string(store_text(s, MC_TENANT)));
        if (store_text(s, MC_PROJECT))
            json_object_set_new(m, "project", json_string(store_text(s, MC_PROJECT)));
        if (store_int(s, MC_EXPIRES)) {
            gt_format_us(store_int(s, MC_EXPIRES), ts, sizeof ts);
            json_object_set_new(m, "expires_at", json_string(ts));
        }
        json_array_append_new(arr, m);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int auth_member_list_user(store_tx *tx, const char *user_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(USER_BINDING_COLUMNS)
                         " FROM role_bindings b LEFT JOIN tenants t ON t.id = b.tenant_id"
                         " LEFT JOIN projects p ON p.id = b.project_id WHERE b.user_id = ?"
                         " ORDER BY b.scope, t.name, p.name, b.role",
                         "s", user_id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *b = json_pack("{s:s,s:s}", "role", store_text(s, UB_ROLE), "scope",
                              store_text(s, UB_SCOPE));
        if (store_text(s, UB_TENANT))
            json_object_set_new(b, "tenant", json_string(store_text(s, UB_TENANT)));
        if (store_text(s, UB_PROJECT))
            json_object_set_new(b, "project", json_string(store_text(s, UB_PROJECT)));
        if (store_int(s, UB_EXPIRES)) {
            char ts[GT_RFC3339_LEN];
            gt_format_us(store_int(s, UB_EXPIRES), ts, sizeof ts);
            json_object_set_new(b, "expires_at", json_string(ts));
        }
        json_array_append_new(arr, b);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

/* ---- invitations: a role in another tenant, decided by the user's home ---- */

/* An invitation's row as inv_from_row reads it (STORE_COLS). */
#define INV_COLUMNS(X)                                                                    \
    X(IC_ID, "i.id")                                                                      \
    X(IC_TENANT_ID, "i.tenant_id")                                                        \
    X(IC_PROJECT_ID, "i.project_id")                                                      \
    X(IC_USER_ID, "i.user_id")                                                            \
    X(IC_HOME_ID, "i.home_tenant_id")                                                     \
    X(IC_TENANT, "t.name")                                                                \
    X(IC_PROJECT, "i.project_name")                                                       \
    X(IC_USER, "u.name")                                                                  \
    X(IC_HOME, "COALESCE(h.name, '')")                                                    \
    X(IC_ROLE, "i.role")                                                                  \
    X(IC_INVITED_BY, "i.invited_by")                                                      \
    X(IC_STATE, "i.state")                                                                \
    X(IC_CREATED, "i.created_at")                                                         \
    X(IC_EXPIRES, "i.expires_at")                                                         \
    X(IC_DECIDED_BY, "i.decided_by")                                                      \
    X(IC_DECIDED, "i.decided_at")
enum { INV_COLUMNS(STORE_COL_ENUM) IC__N };
#define INV_COLS STORE_COLS(INV_COLUMNS)
#define INV_FROM                                                                              \
    " FROM invitations i JOIN tenants t ON t.id = i.tenant_id"                              \
    " JOIN users u ON u.id = i.user_id LEFT JOIN tenants h ON h.id = i.home_tenant_id"

static void inv_from_row(store_stmt *s, int64_t now, auth_invitation *v) {
    memset(v, 0, sizeof *v);
    snprintf(v->id, sizeof v->id, "%s", store_text(s, IC_ID));
    snprintf(v->tenant_id, sizeof v->tenant_id, "%s", store_text(s, IC_TENANT_ID));
    snprintf(v->project_id, sizeof v->project_id, "%s", store_text(s, IC_PROJECT_ID));
    snprintf(v->user_id, sizeof v->user_id, "%s", store_text(s, IC_USER_ID));
    snprintf(v->home_tenant_id, sizeof v->home_tenant_id, "%s", store_text(s, IC_HOME_ID));
    snprintf(v->tenant, sizeof v->tenant, "%s", store_text(s, IC_TENANT));
    snprintf(v->project, sizeof v->project, "%s", store_text(s, IC_PROJECT));
    snprintf(v->user, sizeof v->user, "%s", store_text(s, IC_USER));
    snprintf(v->home, sizeof v->home, "%s", store_text(s, IC_HOME));
    snprintf(v->role, sizeof v->role, "%s", store_text(s, IC_ROLE));
    snprintf(v->invited_by, sizeof v->invited_by, "%s", store_text(s, IC_INVITED_BY));
    snprintf(v->state, sizeof v->state, "%s", store_text(s, IC_STATE));
    v->created_us = store_int(s, IC_CREATED);
    v->expires_us = store_int(s, IC_EXPIRES);
    snprintf(v->decided_by, sizeof v->decided_by, "%s", store_text(s, IC_DECIDED_BY));
    v->decided_us = store_int(s, IC_DECIDED);
    /* an undecided invitation past its expiry is expired, whether or not it was written */
    if (strcmp(v->state, "pending") == 0 && v->expires_us <= now)
        snprintf(v->state, sizeof v->state, "expired");
}

int auth_invitation_create(store_tx *tx, const char *tenant_id, const char *project_id,
                           const char *user_id, const char *home_tenant_id, authz_role role,
                           const char *invited_by, int64_t ttl_s, auth_invitation *out,
                           gp_err *err) {
    char id[RND_ID_LEN];
    int64_t now = gt_now_us();
    if (ttl_s <= 0) ttl_s = AUTH_INVITATION_TTL_S;
    if (!project_id) project_id = "";
    /* one open invitation per user and scope: a new one replaces the earlier */
    int rc = store_exec(tx, NULL, err,
                        "UPDATE invitations SET state = 'withdrawn', decided_by = ?,"
                        " decided_at = ? WHERE tenant_id = ? AND project_id = ? AND user_id = ?"
                        " AND state = 'pending'",
                        "sisss", invited_by, now, tenant_id, project_id, user_id);
    if (rc) return rc;
    rnd_id(id);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO invitations (id, tenant_id, project_id, user_id, home_tenant_id,"
                    " role, invited_by, state, created_at, expires_at, project_name)"
                    " VALUES (?,?,?,?,?,?,?,'pending',?,?,"
                    " COALESCE((SELECT name FROM projects WHERE id = ?), ''))",
                    "sssssssiis", id, tenant_id, project_id, user_id,
                    home_tenant_id ? home_tenant_id : "", authz_role_name(role), invited_by, now,
                    now + ttl_s * 1000000, project_id);
    if (rc) return rc;
    return out ? auth_invitation_get(tx, id, out, err) : GP_OK;
}

int auth_invitation_get(store_tx *tx, const char *id, auth_invitation *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " INV_COLS INV_FROM " WHERE i.id = ?", "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) inv_from_row(s, gt_now_us(), out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "invitation not found");
    return rc < 0 ? rc : GP_OK;
}

json_t *auth_invitation_json(const auth_invitation *v) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "id", v->id, "tenant", v->tenant,
                          "user", v->user, "role", v->role, "invited_by", v->invited_by, "state",
                          v->state, "created_at", jx_time(v->created_us), "expires_at",
                          jx_time(v->expires_us));
    json_object_set_new(o, "scope", json_string(v->project_id[0] ? "project" : "tenant"));
    json_object_set_new(o, "project", v->project_id[0] ? json_string(v->project) : json_null());
    json_object_set_new(o, "home", v->home_tenant_id[0] ? json_string(v->home) : json_null());
    if (v->decided_us) {
        json_object_set_new(o, "decided_by", json_string(v->decided_by));
        json_object_set_new(o, "decided_at", jx_time(v->decided_us));
    }
    return o;
}

int auth_invitation_list(store_tx *tx, const char *tenant_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " INV_COLS INV_FROM " WHERE ? IS NULL OR i.tenant_id = ?"
                         " OR i.home_tenant_id = ? ORDER BY i.created_at DESC, i.id LIMIT 1000",
                         "sss", tenant_id, tenant_id, tenant_id);
    if (rc) return rc;
    json_t *arr = json_array();
    int64_t now = gt_now_us();
    while ((rc = store_step(s, err)) > 0) {
        auth_invitation v;
        inv_from_row(s, now, &v);
        json_array_append_new(arr, auth_invitation_json(&v));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int auth_invitation_decide(store_tx *tx, const char *id, const char *state,
                           const char *decided_by, gp_err *err) {
    int changes = 0;
    int64_t now = gt_now_us();
    /* conditional: only a pending invitation is decided, and only once; an expired one
     * can only become expired */
    int rc = store_exec(tx, &changes, err,
                        "UPDATE invitations SET state = ?, decided_by = ?, decided_at = ?"
                        " WHERE id = ? AND state = 'pending' AND ((? = 'expired') = (expires_at <= ?))",
                        "ssissi", state, decided_by, now, id, state, now);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ECONFLICT, "the invitation is no longer pending");
}
