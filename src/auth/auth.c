/*
 * auth.c - bearer-token authentication and first-start bootstrap (see auth.h).
 */
#include "auth_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

const char *auth_bearer(const char *h) {
    if (!h || strncasecmp(h, "bearer", 6) != 0 || h[6] != ' ') return NULL;
    h += 6;
    while (*h == ' ') h++;
    if (!*h || strlen(h) > 200) return NULL;
    for (const char *p = h; *p; p++)
        if (!isgraph((unsigned char)*p)) return NULL;
    return h;
}

void auth_principal_free(auth_principal *p) {
    if (!p) return;
    for (int i = 0; i < p->nbindings; i++) {
        free((char *)p->bindings[i].tenant_id);
        free((char *)p->bindings[i].project_id);
    }
    free(p->bindings);
    free(p);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* A role binding's row as auth__load_bindings reads it (STORE_COLS). */
#define BINDING_COLUMNS(X)                                                                \
    X(RB_ROLE, "role")                                                                    \
    X(RB_SCOPE, "scope")                                                                  \
    X(RB_TENANT, "tenant_id")                                                             \
    X(RB_PROJECT, "project_id")                                                           \
    X(RB_EXPIRES, "COALESCE(expires_at, 0)")
enum { BINDING_COLUMNS(STORE_COL_ENUM) RB__N };

int auth__load_bindings(store_tx *tx, auth_principal *p, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(BINDING_COLUMNS) " FROM role_bindings WHERE user_id = ?",
                         "s", p->user_id);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        int role = authz_role_parse(store_text(s, RB_ROLE));
        int scope = authz_scope_parse(store_text(s, RB_SCOPE));
        if (role < 0 || scope < 0) continue; /* unknown rows grant nothing */
        authz_binding *nb = realloc(p->bindings, sizeof *nb * (size_t)(p->nbindings + 1));
        if (!nb) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
        p->bindings = nb;
        authz_binding *b = &nb[p->nbindings++];
        b->role = (authz_role)role;
        b->scope = (authz_scope)scope;
        b->tenant_id = dup_or_null(store_text(s, RB_TENANT));
        b->project_id = dup_or_null(store_text(s, RB_PROJECT));
        b->expires_us = store_int(s, RB_EXPIRES);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* A token and its user, as auth_authenticate reads them (STORE_COLS). */
#define TOKEN_USER_COLUMNS(X)                                                             \
    X(TU_HASH, "t.hash")                                                                  \
    X(TU_TOKEN, "t.id")                                                                   \
    X(TU_USER, "u.id")                                                                    \
    X(TU_NAME, "u.name")                                                                  \
    X(TU_KIND, "u.kind")                                                                  \
    X(TU_DISABLED, "u.disabled")                                                          \
    X(TU_EXPIRES, "COALESCE(t.expires_at, 0)")                                            \
    X(TU_REVOKED, "COALESCE(t.revoked_at, 0)")
enum { TOKEN_USER_COLUMNS(STORE_COL_ENUM) TU__N };

/* A user's row as auth_principal_load reads it (STORE_COLS). */
#define PRINCIPAL_COLUMNS(X)                                                              \
    X(PU_ID, "id") X(PU_NAME, "name") X(PU_KIND, "kind") X(PU_DISABLED, "disabled")
enum { PRINCIPAL_COLUMNS(STORE_COL_ENUM) PU__N };

int auth_authenticate(store_t *st, const char *header, auth_principal **out, gp_err *err) {
    *out = NULL;
    if (!header) return gp_err_set(err, GP_EUNAUTH, "missing Authorization: Bearer token");
    const char *tok = auth_bearer(header);
    if (!tok) return gp_err_set(err, GP_EUNAUTH, "malformed Authorization header");
    char hash[RND_HASH_LEN];
    rnd_hash_secret(tok, hash);

    store_tx *tx;
    store_stmt *s;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(TOKEN_USER_COLUMNS) " FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?",
                     "s", hash);
    if (rc) goto out;
    rc = store_step(s, err);
    if (rc < 0) {
        store_done(s);
        goto out;
    }
    int64_t now = gt_now_us();
    if (rc == 0 || !rnd_equal_ct(store_text(s, TU_HASH), hash) || store_int(s, TU_DISABLED) ||
        store_int(s, TU_REVOKED) ||
        (store_int(s, TU_EXPIRES) && store_int(s, TU_EXPIRES) <= now)) {
        store_done(s);
        rc = gp_err_set(err, GP_EUNAUTH, "invalid, expired or revoked token");
        goto out;
    }
    auth_principal *p = calloc(1, sizeof *p);
    if (!p) {
        store_done(s);
        rc = gp_err_set(err, GP_ENOMEM, NULL);
        goto out;
    }
    snprintf(p->token_id, sizeof p->token_id, "%s", store_text(s, TU_TOKEN));
    snprintf(p->user_id, sizeof p->user_id, "%s", store_text(s, TU_USER));
    snprintf(p->name, sizeof p->name, "%s", store_text(s, TU_NAME));
    snprintf(p->kind, sizeof p->kind, "%s", store_text(s, TU_KIND));
    store_done(s);
    rc = auth__load_bindings(tx, p, err);
    if (rc) {
        auth_principal_free(p);
        goto out;
    }
    /* a vendor account lives only as long as one of its grants */
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(GRANT_LIVE_COLUMNS) " FROM vendor_grants WHERE user_id = ?",
                     "is", now, p->user_id);
    if (rc) {
        auth_principal_free(p);
        goto out;
    }
    rc = store_step(s, err);
    int vendor_dead = rc > 0 && store_int(s, GL_GRANTS) > 0 && store_int(s, GL_LIVE) == 0;
    store_done(s);
    if (rc < 0 || vendor_dead) {
        auth_principal_free(p);
        if (rc >= 0) rc = gp_err_set(err, GP_EUNAUTH, "vendor access expired or revoked");
        goto out;
    }
    rc = GP_OK;
    *out = p;
out:
    store_rollback(tx);
    return rc;
}

int auth_principal_load(store_t *st, const char *user_id, auth_principal **out, gp_err *err) {
    store_tx *tx;
    store_stmt *s;
    *out = NULL;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = store_query(tx, &s, err, "SELECT " STORE_COLS(PRINCIPAL_COLUMNS) " FROM users WHERE id = ?",
                     "s", user_id);
    if (rc) goto out;
    rc = store_step(s, err);
    if (rc <= 0 || store_int(s, PU_DISABLED)) {
        store_done(s);
        if (rc >= 0) rc = gp_err_set(err, GP_EUNAUTH, "the requester's account is disabled");
        goto out;
    }
    auth_principal *p = calloc(1, sizeof *p);
    if (!p) {
        store_done(s);
        rc = gp_err_set(err, GP_ENOMEM, NULL);
        goto out;
    }
    snprintf(p->user_id, sizeof p->user_id, "%s", store_text(s, PU_ID));
    snprintf(p->name, sizeof p->name, "%s", store_text(s, PU_NAME));
    snprintf(p->kind, sizeof p->kind, "%s", store_text(s, PU_KIND));
    store_done(s);
    rc = auth__load_bindings(tx, p, err);
    if (rc) auth_principal_free(p);
    else *out = p;
out:
    store_rollback(tx);
    return rc;
}

int auth_token_create(store_tx *tx, const char *user_id, const char *label, int64_t ttl_seconds,
                      char token[RND_SECRET_LEN], char id[RND_ID_LEN], gp_err *err) {
    char hash[RND_HASH_LEN];
    int64_t now = gt_now_us();
    rnd_secret(AUTH_TOKEN_PREFIX, token);
    rnd_hash_secret(token, hash);
    rnd_id(id);
    if (ttl_seconds > 0)
        return store_exec(tx, NULL, err,
                          "INSERT INTO tokens (id, user_id, hash, label, created_at, expires_at)"
                          " VALUES (?,?,?,?,?,?)",
                          "ssssii", id, user_id, hash, label, now, now + ttl_seconds * 1000000);
    return store_exec(tx, NULL, err,
                      "INSERT INTO tokens (id, user_id, hash, label, created_at, expires_at)"
                      " VALUES (?,?,?,?,?,NULL)",
                      "ssssi", id, user_id, hash, label, now);
}

static int write_secret_file(const char *path, const char *secret, gp_err *err) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return gp_err_set(err, GP_EINVALID, "token path too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return gp_err_set(err, GP_EIO, "cannot write %s: %s", tmp, strerror(errno));
    size_t n = strlen(secret);
    int ok = fchmod(fd, 0600) == 0 && write(fd, secret, n) == (ssize_t)n &&
             write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gp_err_set(err, GP_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return GP_OK;
}

int auth_bootstrap(store_t *st, const char *token_path, int *created, gp_err *err) {
    store_tx *tx;
    store_stmt *s;
    *created = 0;
    int rc = store_begin(st, STORE_WRITE, &tx, err);
    if (rc) return rc;
    rc = store_query(tx, &s, err, "SELECT COUNT(*) FROM users", "");
    if (rc) goto fail;
    rc = store_step(s, err);
    int64_t users = rc > 0 ? store_int(s, 0) : 0;
    store_done(s);
    if (rc < 0) goto fail;
    if (users > 0) {
        store_rollback(tx);
        return GP_OK;
    }
    char uid[RND_ID_LEN], tid[RND_ID_LEN], token[RND_SECRET_LEN];
    int64_t now = gt_now_us();
    rnd_id(uid);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO users (id, name, kind, created_at) VALUES (?, 'admin', 'user', ?)",
                    "si", uid, now);
    if (rc) goto fail;
    static const char *const roles[] = {"platform-admin", "security-admin"};
    for (int i = 0; i < 2; i++) {
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO role_bindings (user_id, role, scope, created_at)"
                        " VALUES (?, ?, 'global', ?)",
                        "ssi", uid, roles[i], now);
        if (rc) goto fail;
    }
    rc = auth_token_create(tx, uid, "bootstrap", 0, token, tid, err);
    if (rc) goto fail;
    audit_event ev = {.actor = "system", .action = "user.bootstrap", .target_type = "user",
                      .target_id = "admin", .result = "ok",
                      .summary = "{\"roles\":[\"platform-admin\",\"security-admin\"],"
                                 "\"token\":\"written to admin.token\"}"};
    rc = audit_append(tx, &ev, NULL, err);
    if (rc) goto fail;
    /* write the file before commit: if it fails, nothing is half-created */
    rc = write_secret_file(token_path, token, err);
    if (rc) goto fail;
    rc = store_commit(tx, err);
    memset(token, 0, sizeof token);
    if (rc) return rc;
    *created = 1;
    return GP_OK;
fail:
    memset(token, 0, sizeof token);
    store_rollback(tx);
    return rc;
}
