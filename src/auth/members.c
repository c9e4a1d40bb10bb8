/*
 * members.c - role bindings: who holds which role at which scope.
 *
 * Invariant: at tenant and project scope a user holds at most one role per
 * scope (granting replaces); at global scope a user may hold several roles.
 * This file stores; it does not decide who may grant (authz_can_grant).
 */
#include "auth.h"

#include "../core/gtime.h"

#include <stdio.h>
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

int auth_member_list(store_tx *tx, authz_scope scope, const char *tenant_id,
                     const char *project_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT u.name, b.role, b.scope, t.name, p.name, b.granted_by,"
                         " b.created_at, COALESCE(b.expires_at, 0)"
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
        gt_format_us(store_int(s, 6), ts, sizeof ts);
        json_t *m = json_pack("{s:s,s:s,s:s,s:s,s:s}", "user", store_text(s, 0), "role",
                              store_text(s, 1), "scope", store_text(s, 2), "granted_by",
                              store_text(s, 5), "created_at", ts);
        if (store_text(s, 3)) json_object_set_new(m, "tenant", json_string(store_text(s, 3)));
        if (store_text(s, 4)) json_object_set_new(m, "project", json_string(store_text(s, 4)));
        if (store_int(s, 7)) {
            gt_format_us(store_int(s, 7), ts, sizeof ts);
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
                         "SELECT b.role, b.scope, t.name, p.name, COALESCE(b.expires_at, 0)"
                         " FROM role_bindings b LEFT JOIN tenants t ON t.id = b.tenant_id"
                         " LEFT JOIN projects p ON p.id = b.project_id WHERE b.user_id = ?"
                         " ORDER BY b.scope, t.name, p.name, b.role",
                         "s", user_id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *b = json_pack("{s:s,s:s}", "role", store_text(s, 0), "scope", store_text(s, 1));
        if (store_text(s, 2)) json_object_set_new(b, "tenant", json_string(store_text(s, 2)));
        if (store_text(s, 3)) json_object_set_new(b, "project", json_string(store_text(s, 3)));
        if (store_int(s, 4)) {
            char ts[GT_RFC3339_LEN];
            gt_format_us(store_int(s, 4), ts, sizeof ts);
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
