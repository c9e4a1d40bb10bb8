/*
 * vendor.c - time-boxed vendor access to named nodes and work orders.
 *
 * A vendor account holds only vendor grants (never another role).  Each
 * grant names nodes and work orders and expires; the account's vendor role
 * binding carries the latest live expiry.  auth_authenticate() refuses a
 * vendor account with no live grant (401), so expiry and revocation take
 * effect on the very next call.
 */
#include "auth.h"

#include "../core/gtime.h"

#include <stdio.h>
#include <string.h>

/* Make the vendor role binding match the live grants (or remove it). */
static int sync_role(store_tx *tx, const char *user_id, gp_err *err) {
    int rc = store_exec(tx, NULL, err,
                        "DELETE FROM role_bindings WHERE user_id = ? AND scope = 'vendor'", "s",
                        user_id);
    if (rc) return rc;
    return store_exec(tx, NULL, err,
                      "INSERT INTO role_bindings (user_id, role, scope, expires_at, created_at,"
                      " granted_by)"
                      " SELECT ?, 'vendor', 'vendor', MAX(expires_at), ?, 'vendor-access'"
                      " FROM vendor_grants WHERE user_id = ? AND revoked_at IS NULL"
                      " AND expires_at > ? HAVING COUNT(*) > 0",
                      "sisi", user_id, gt_now_us(), user_id, gt_now_us());
}

int auth_vendor_grant(store_tx *tx, const char *user_id, const char *nodes,
                      const char *work_orders, int64_t ttl_s, const char *created_by_id,
                      char id[RND_ID_LEN], gp_err *err) {
    int64_t now = gt_now_us();
    rnd_id(id);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO vendor_grants (id, user_id, nodes, work_orders, created_by,"
                        " created_at, expires_at) VALUES (?,?,?,?,?,?,?)",
                        "sssssii", id, user_id, nodes, work_orders, created_by_id, now,
                        now + ttl_s * 1000000);
    return rc ? rc : sync_role(tx, user_id, err);
}

int auth_vendor_revoke(store_tx *tx, const char *id, gp_err *err) {
    store_stmt *s;
    char uid[RND_ID_LEN];
    int rc = store_query(tx, &s, err, "SELECT user_id FROM vendor_grants WHERE id = ?", "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(uid, sizeof uid, "%s", store_text(s, 0));
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "vendor access not found");
    if (rc < 0) return rc;
    rc = store_exec(tx, NULL, err,
                    "UPDATE vendor_grants SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
                    "is", gt_now_us(), id);
    return rc ? rc : sync_role(tx, uid, err);
}

/* A vendor grant as auth_vendor_list reads it (STORE_COLS). */
#define GRANT_COLUMNS(X)                                                                  \
    X(VG_ID, "g.id")                                                                      \
    X(VG_USER, "u.name")                                                                  \
    X(VG_NODES, "g.nodes")                                                                \
    X(VG_WORK_ORDERS, "g.work_orders")                                                    \
    X(VG_CREATED_BY, "c.name")                                                            \
    X(VG_CREATED, "g.created_at")                                                         \
    X(VG_EXPIRES, "g.expires_at")                                                         \
    X(VG_REVOKED, "COALESCE(g.revoked_at, 0)")
enum { GRANT_COLUMNS(STORE_COL_ENUM) VG__N };

int auth_vendor_list(store_tx *tx, const char *user_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(GRANT_COLUMNS) " FROM vendor_grants g JOIN users u ON u.id = g.user_id"
                         " JOIN users c ON c.id = g.created_by"
                         " WHERE (? IS NULL OR g.user_id = ?) ORDER BY g.created_at DESC",
                         "ss", user_id, user_id);
    if (rc) return rc;
    json_t *arr = json_array();
    int64_t now = gt_now_us();
    while ((rc = store_step(s, err)) > 0) {
        char c[GT_RFC3339_LEN], e[GT_RFC3339_LEN];
        gt_format_us(store_int(s, VG_CREATED), c, sizeof c);
        gt_format_us(store_int(s, VG_EXPIRES), e, sizeof e);
        const char *state = store_int(s, VG_REVOKED)             ? "revoked"
                            : store_int(s, VG_EXPIRES) <= now ? "expired"
                                                              : "active";
        json_t *nodes = json_loads(store_text(s, VG_NODES), 0, NULL);
        json_t *wos = json_loads(store_text(s, VG_WORK_ORDERS), 0, NULL);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:o,s:s,s:s,s:s,s:s}", "id",
                                             store_text(s, VG_ID), "user", store_text(s, VG_USER),
                                             "nodes", nodes ? nodes : json_array(), "work_orders",
                                             wos ? wos : json_array(), "created_by",
                                             store_text(s, VG_CREATED_BY), "created_at", c,
                                             "expires_at", e, "state", state));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

/* What a user holds besides vendor access, and its vendor grants (STORE_COLS). */
#define ROLE_COUNT_COLUMNS(X)                                                             \
    X(RN_OTHER, "(SELECT COUNT(*) FROM role_bindings WHERE user_id = ?"                   \
                " AND scope <> 'vendor')")                                                \
    X(RN_GRANTS, "(SELECT COUNT(*) FROM vendor_grants WHERE user_id = ?)")
enum { ROLE_COUNT_COLUMNS(STORE_COL_ENUM) RN__N };

int auth_user_role_counts(store_tx *tx, const char *user_id, int *other_roles, int *vendor_grants,
                          gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ROLE_COUNT_COLUMNS),
                         "ss", user_id, user_id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        *other_roles = (int)store_int(s, RN_OTHER);
        *vendor_grants = (int)store_int(s, RN_GRANTS);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static void add_unique(json_t *arr, json_t *v) {
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) if (json_equal(e, v)) return;
    json_array_append(arr, v);
}

/* A live grant's nodes and work orders, as auth_vendor_scope reads them (STORE_COLS). */
#define SCOPE_COLUMNS(X) X(VS_NODES, "nodes") X(VS_WORK_ORDERS, "work_orders")
enum { SCOPE_COLUMNS(STORE_COL_ENUM) VS__N };

int auth_vendor_scope(store_tx *tx, const char *user_id, json_t **nodes, json_t **work_orders,
                      gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SCOPE_COLUMNS) " FROM vendor_grants WHERE user_id = ?"
                         " AND revoked_at IS NULL AND expires_at > ?",
                         "si", user_id, gt_now_us());
    if (rc) return rc;
    json_t *n = json_array(), *w = json_array();
    while ((rc = store_step(s, err)) > 0) {
        for (int c = 0; c < 2; c++) {
            json_t *a = json_loads(store_text(s, c ? VS_WORK_ORDERS : VS_NODES), 0, NULL);
            size_t i;
            json_t *v;
            json_array_foreach(a, i, v) add_unique(c ? w : n, v);
            json_decref(a);
        }
    }
    store_done(s);
    if (rc < 0) {
        json_decref(n);
        json_decref(w);
        return rc;
    }
    *nodes = n;
    *work_orders = w;
    return GP_OK;
}
