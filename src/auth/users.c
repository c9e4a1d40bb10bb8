/*
 * users.c - user accounts, passwords (argon2id) and token listing/revocation.
 *
 * Passwords are hashed with libsodium's crypto_pwhash_str (argon2id,
 * interactive limits) and never stored or logged in clear.  Login checks
 * run a hash verification even for unknown users, so timing does not tell
 * which names exist.
 */
#include "auth_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a node account is one the migration or the node's registration marked, or that a node
 * names as its agent (so the mark cannot be missed) */
/* A user's row as user_from_row reads it (STORE_COLS); auth_login_check reads its password
 * hash too (USER_LOGIN_COLUMNS, the same list and one more). */
#define USER_COLUMNS(X)                                                                   \
    X(UC_ID, "id")                                                                        \
    X(UC_NAME, "name")                                                                    \
    X(UC_KIND, "kind")                                                                    \
    X(UC_DISABLED, "disabled")                                                            \
    X(UC_HAS_PASSWORD, "password_hash IS NOT NULL")                                       \
    X(UC_CREATED, "created_at")                                                           \
    X(UC_HOME_ID, "home_tenant_id")                                                       \
    X(UC_HOME, "COALESCE((SELECT t.name FROM tenants t WHERE t.id = users.home_tenant_id), '')") \
    X(UC_NODE_ACCOUNT, "CASE WHEN node_account <> 0 OR EXISTS (SELECT 1 FROM nodes n"     \
                       "  WHERE n.agent_user_id = users.id) THEN 1 ELSE 0 END")           \
    X(UC_PASSWORD_SET_BY, "password_set_by")
#define USER_LOGIN_COLUMNS(X) USER_COLUMNS(X) X(UC_PASSWORD_HASH, "password_hash")
enum { USER_LOGIN_COLUMNS(STORE_COL_ENUM) UC__N };
#define USER_COLS STORE_COLS(USER_COLUMNS)

static void user_from_row(store_stmt *s, auth_user *u) {
    snprintf(u->id, sizeof u->id, "%s", store_text(s, UC_ID));
    snprintf(u->name, sizeof u->name, "%s", store_text(s, UC_NAME));
    snprintf(u->kind, sizeof u->kind, "%s", store_text(s, UC_KIND));
    u->disabled = (int)store_int(s, UC_DISABLED);
    u->has_password = (int)store_int(s, UC_HAS_PASSWORD);
    u->created_us = store_int(s, UC_CREATED);
    snprintf(u->home_tenant_id, sizeof u->home_tenant_id, "%s", store_text(s, UC_HOME_ID));
    snprintf(u->home, sizeof u->home, "%s", store_text(s, UC_HOME));
    u->node_account = (int)store_int(s, UC_NODE_ACCOUNT);
    snprintf(u->password_set_by, sizeof u->password_set_by, "%s",
             store_text(s, UC_PASSWORD_SET_BY));
}

_Static_assert(AUTH_PWHASH_LEN == crypto_pwhash_STRBYTES, "AUTH_PWHASH_LEN");

static int check_password(const char *pw, gp_err *err) {
    size_t n = strlen(pw);
    if (n < AUTH_PASSWORD_MIN || n > AUTH_PASSWORD_MAX)
        return gp_err_set(err, GP_EINVALID, "password must be %d to %d characters",
                          AUTH_PASSWORD_MIN, AUTH_PASSWORD_MAX);
    return GP_OK;
}

static int hash_password(const char *pw, char out[crypto_pwhash_STRBYTES], gp_err *err) {
    if (crypto_pwhash_str(out, pw, strlen(pw), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        return gp_err_set(err, GP_ENOMEM, "cannot hash password (out of memory)");
    return GP_OK;
}

int auth_password_hash(const char *password, char out[AUTH_PWHASH_LEN], gp_err *err) {
    int rc = check_password(password, err);
    if (rc) return rc;
    return hash_password(password, out, err);
}

int auth_password_hash_valid(const char *hash) {
    size_t n = hash ? strlen(hash) : 0;
    return n > 0 && n < crypto_pwhash_STRBYTES &&
           strncmp(hash, crypto_pwhash_STRPREFIX, strlen(crypto_pwhash_STRPREFIX)) == 0 &&
           crypto_pwhash_str_needs_rehash(hash, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != -1;
}

int auth_user_create(store_tx *tx, const auth_user_spec *spec, auth_user *out, gp_err *err) {
    char hash[crypto_pwhash_STRBYTES];
    const char *name = spec->name, *kind = spec->kind, *password = spec->password;
    const char *home = spec->home_tenant_id ? spec->home_tenant_id : "";
    if (!name || !gp_name_valid(name))
        return gp_err_set(err, GP_EINVALID,
                          "user name must be 1-63 lower-case letters, digits or '-'");
    if (strncmp(name, AUTH_NODE_PREFIX, strlen(AUTH_NODE_PREFIX)) == 0)
        return gp_err_set(err, GP_EINVALID,
                          "names starting with '" AUTH_NODE_PREFIX "' belong to nodes' accounts");
    if (password && spec->password_hash)
        return gp_err_set(err, GP_EINVALID, "give a password or its hash, not both");
    if (spec->password_hash && !auth_password_hash_valid(spec->password_hash))
        return gp_err_set(err, GP_EINVALID, "not a password hash this server makes");
    if (!kind) kind = "user";
    if (strcmp(kind, "user") != 0 && strcmp(kind, "service") != 0)
        return gp_err_set(err, GP_EINVALID, "kind must be user or service");
    int has_pw = password || spec->password_hash;
    if (strcmp(kind, "service") == 0 && has_pw)
        return gp_err_set(err, GP_EINVALID, "service accounts have no password; use tokens");
    if (strcmp(kind, "user") == 0) {
        if (!has_pw) return gp_err_set(err, GP_EINVALID, "field 'password' is required");
        if (spec->password_hash) {
            snprintf(hash, sizeof hash, "%s", spec->password_hash);
        } else {
            int rc = check_password(password, err);
            if (rc || (rc = hash_password(password, hash, err))) return rc;
        }
    }
    memset(out, 0, sizeof *out);
    rnd_id(out->id);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->kind, sizeof out->kind, "%s", kind);
    out->has_password = has_pw;
    out->created_us = gt_now_us();
    snprintf(out->home_tenant_id, sizeof out->home_tenant_id, "%s", home);
    snprintf(out->home, sizeof out->home, "%s", spec->home_name ? spec->home_name : "");
    /* whoever creates a user with a password knows it until the user changes it */
    const char *set_by = has_pw && spec->created_by ? spec->created_by : "";
    snprintf(out->password_set_by, sizeof out->password_set_by, "%s", set_by);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO users (id, name, kind, password_hash, created_at,"
                        " home_tenant_id, password_set_by) VALUES (?,?,?,?,?,?,?)",
                        "ssssiss", out->id, name, kind, has_pw ? hash : NULL, out->created_us,
                        home, set_by);
    sodium_memzero(hash, sizeof hash);
    if (rc == GP_ECONFLICT) return gp_err_set(err, rc, "user '%s' already exists", name);
    return rc;
}

int auth_user_by_id(store_tx *tx, const char *id, auth_user *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " USER_COLS " FROM users WHERE id = ?", "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) user_from_row(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "user not found");
    return rc < 0 ? rc : GP_OK;
}

int auth_user_find(store_tx *tx, const char *name, auth_user *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " USER_COLS " FROM users WHERE name = ?", "s", name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) user_from_row(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "user not found");
    return rc < 0 ? rc : GP_OK;
}

int auth_user_list(store_tx *tx, auth_user **items, int *n, gp_err *err) {
    store_stmt *s;
    *items = NULL;
    *n = 0;
    int rc = store_query(tx, &s, err, "SELECT " USER_COLS " FROM users ORDER BY name", "");
    if (rc) return rc;
    auth_user *arr = NULL;
    int cnt = 0;
    while ((rc = store_step(s, err)) > 0) {
        auth_user *na = realloc(arr, sizeof *na * (size_t)(cnt + 1));
        if (!na) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
        arr = na;
        user_from_row(s, &arr[cnt++]);
    }
    store_done(s);
    if (rc < 0) {
        free(arr);
        return rc;
    }
    *items = arr;
    *n = cnt;
    return GP_OK;
}

int auth_user_set_disabled(store_tx *tx, const char *user_id, int disabled, gp_err *err) {
    return store_exec(tx, NULL, err, "UPDATE users SET disabled = ? WHERE id = ?", "is",
                      (int64_t)(disabled ? 1 : 0), user_id);
}

int auth_user_set_password(store_tx *tx, const char *user_id, const char *password,
                           const char *given_hash, const char *set_by, gp_err *err) {
    char hash[crypto_pwhash_STRBYTES];
    int rc;
    if (!password == !given_hash)
        return gp_err_set(err, GP_EINVALID, "give a password or its hash, not both");
    if (given_hash) {
        if (!auth_password_hash_valid(given_hash))
            return gp_err_set(err, GP_EINVALID, "not a password hash this server makes");
        snprintf(hash, sizeof hash, "%s", given_hash);
    } else if ((rc = check_password(password, err)) || (rc = hash_password(password, hash, err))) {
        return rc;
    }
    if (!set_by || strcmp(set_by, user_id) == 0) set_by = "";
    rc = store_exec(tx, NULL, err,
                    "UPDATE users SET password_hash = ?, password_set_by = ?"
                    " WHERE id = ? AND kind = 'user'",
                    "sss", hash, set_by, user_id);
    sodium_memzero(hash, sizeof hash);
    return rc;
}

int auth_user_revoke_tokens(store_tx *tx, const char *user_id, const char *keep_token_id,
                            int *revoked, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL"
                        " AND id <> ?",
                        "iss", gt_now_us(), user_id, keep_token_id ? keep_token_id : "");
    if (revoked) *revoked = changes;
    return rc;
}

static char dummy[crypto_pwhash_STRBYTES];
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;
static void make_dummy(void) { hash_password("not-a-real-password", dummy, NULL); }

int auth_login_check(store_tx *tx, const char *name, const char *password, auth_user *out,
                     gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(USER_LOGIN_COLUMNS) " FROM users WHERE name = ?", "s",
                         name ? name : "");
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc < 0) {
        store_done(s);
        return rc;
    }
    const char *hash = rc > 0 ? store_text(s, UC_PASSWORD_HASH) : NULL;
    int ok = 0;
    if (hash && password) {
        ok = crypto_pwhash_str_verify(hash, password, strlen(password)) == 0;
    } else if (password) {
        /* same work for unknown users (and service accounts) */
        pthread_once(&dummy_once, make_dummy);
        int wasted = crypto_pwhash_str_verify(dummy, password, strlen(password));
        (void)wasted;
    }
    if (ok) user_from_row(s, out);
    store_done(s);
    if (ok && !out->disabled) {
        /* a vendor account with no live grant may not log in either */
        int rc2 = store_query(tx, &s, err,
                              "SELECT " STORE_COLS(GRANT_LIVE_COLUMNS)
                              " FROM vendor_grants WHERE user_id = ?",
                              "is", gt_now_us(), out->id);
        if (rc2) return rc2;
        rc2 = store_step(s, err);
        if (rc2 > 0 && store_int(s, GL_GRANTS) > 0 && store_int(s, GL_LIVE) == 0) ok = 0;
        store_done(s);
        if (rc2 < 0) return rc2;
    }
    if (!ok || out->disabled)
        return gp_err_set(err, GP_EUNAUTH, "wrong user name or password, or account disabled");
    return GP_OK;
}

int auth_user_bindings(store_tx *tx, const char *user_id, authz_binding **out, int *n,
                       gp_err *err) {
    auth_principal p;
    memset(&p, 0, sizeof p);
    snprintf(p.user_id, sizeof p.user_id, "%s", user_id);
    int rc = auth__load_bindings(tx, &p, err);
    if (rc) {
        auth_bindings_free(p.bindings, p.nbindings);
        return rc;
    }
    *out = p.bindings;
    *n = p.nbindings;
    return GP_OK;
}

void auth_bindings_free(authz_binding *b, int n) {
    for (int i = 0; i < n; i++) {
        free((char *)b[i].tenant_id);
        free((char *)b[i].project_id);
    }
    free(b);
}

json_t *auth_user_json(const auth_user *u) {
    char ts[GT_RFC3339_LEN];
    gt_format_us(u->created_us, ts, sizeof ts);
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:b,s:s,s:o}", "id", u->id, "name", u->name, "kind",
                          u->kind, "disabled", u->disabled, "has_password", u->has_password,
                          "created_at", ts, "home",
                          u->home_tenant_id[0] ? json_string(u->home) : json_null());
    if (u->node_account) json_object_set_new(o, "node_account", json_true());
    return o;
}

/* A token's row as auth_token_list reads it (STORE_COLS). */
#define TOKEN_COLUMNS(X)                                                                  \
    X(TC_ID, "id")                                                                        \
    X(TC_LABEL, "COALESCE(label,'')")                                                     \
    X(TC_CREATED, "created_at")                                                           \
    X(TC_EXPIRES, "expires_at")                                                           \
    X(TC_REVOKED, "revoked_at")
enum { TOKEN_COLUMNS(STORE_COL_ENUM) TC__N };

int auth_token_list(store_tx *tx, const char *user_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(TOKEN_COLUMNS) " FROM tokens WHERE user_id = ? ORDER BY created_at, id",
                         "s", user_id);
    if (rc) return rc;
    json_t *arr = json_array();
    int64_t now = gt_now_us();
    while ((rc = store_step(s, err)) > 0) {
        const char *state =
            !store_isnull(s, TC_REVOKED)                                                  ? "revoked"
            : (!store_isnull(s, TC_EXPIRES) && store_int(s, TC_EXPIRES) <= now) ? "expired"
                                                                                 : "active";
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:o,s:o,s:o,s:s}", "id", store_text(s, TC_ID), "label",
                           store_text(s, TC_LABEL), "created_at",
                           jx_time(store_isnull(s, TC_CREATED) ? 0 : store_int(s, TC_CREATED)),
                           "expires_at",
                           jx_time(store_isnull(s, TC_EXPIRES) ? 0 : store_int(s, TC_EXPIRES)),
                           "revoked_at",
                           jx_time(store_isnull(s, TC_REVOKED) ? 0 : store_int(s, TC_REVOKED)),
                           "state", state));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int auth_token_revoke(store_tx *tx, const char *user_id, const char *token_id, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?)"
                        " WHERE id = ? AND user_id = ?",
                        "iss", gt_now_us(), token_id, user_id);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "token not found");
}
