/*
 * keys.c - API keys "sk-…" of a project: made, listed, revoked, and
 * authenticated by the gateway (see gateway.h).  Only the BLAKE2b digest of
 * a key is stored; lookup is by digest, so comparing is by equality of
 * digests of a 256-bit secret.
 *
 * A key lives only while its owner could still make it: the owner exists, is
 * not disabled, and holds a live role that may hold keys (tenant-admin of the
 * key's tenant, project-admin or project-user of its project).  Otherwise the
 * gateway refuses it at once (401) and lists show it "inactive" with the
 * reason (OWNER_STATE below, computed at every lookup: no key is rewritten
 * when a user changes).
 */
#include "gateway.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../quota/quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TTL_S (10LL * 366 * 86400)

/* The models a key may name: each must be usable by the project's tenant. */
static int check_models(store_tx *tx, const char *tenant_id, json_t *models, gp_err *err) {
    size_t i;
    json_t *v;
    if (!json_is_array(models) || json_array_size(models) > 100)
        return gp_err_set(err, GP_EINVALID, "models must be an array of at most 100 model names");
    json_array_foreach(models, i, v) {
        const char *m = json_string_value(v);
        if (!m || !gp_name_valid(m)) return gp_err_set(err, GP_EINVALID, "models must hold model names");
        store_stmt *s;
        int rc = store_query(tx, &s, err,
                             "SELECT COUNT(*) FROM models WHERE name = ? AND (tenant_id = ?"
                             " OR visibility = 'public')",
                             "ss", m, tenant_id);
        if (rc) return rc;
        rc = store_step(s, err);
        int64_t n = rc > 0 ? store_int(s, 0) : 0;
        store_done(s);
        if (rc < 0) return rc;
        if (!n) return gp_err_set(err, GP_EINVALID, "model '%s' not found", m);
    }
    return GP_OK;
}

static int limit_arg(json_t *spec, const char *key, int64_t *out, gp_err *err) {
    int present;
    int rc = jx_get_int(spec, key, 0, out, &present, err);
    if (rc) return rc;
    if (!present) *out = 0;
    if (*out < 0 || *out > (1LL << 50))
        return gp_err_set(err, GP_EINVALID, "%s must be a non-negative integer (0: no limit)", key);
    return GP_OK;
}

int gw_key_create(store_tx *tx, const char *tenant_id, const char *project_id,
                  const char *owner, json_t *spec, char id[RND_ID_LEN],
                  char secret[RND_SECRET_LEN], gp_err *err) {
    static const char *const fields[] = {"name", "app", "models", "rpm", "tpm", "tokens_month",
                                         "max_parallel", "expires_at", "ttl_seconds", NULL};
    const char *name, *app = NULL, *exp = NULL;
    int64_t rpm, tpm, tokens, parallel, ttl = 0, expires = 0, now = gt_now_us();
    int has_ttl = 0;
    char app_id[RND_ID_LEN] = "";
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_str(spec, "name", 1, &name, err);
    if (!rc && !gp_name_valid(name))
        rc = gp_err_set(err, GP_EINVALID,
                        "name must be 1-63 lower-case letters, digits or '-' (not at the ends)");
    if (!rc) rc = jx_get_str(spec, "app", 0, &app, err);
    if (!rc) rc = limit_arg(spec, "rpm", &rpm, err);
    if (!rc) rc = limit_arg(spec, "tpm", &tpm, err);
    if (!rc) rc = limit_arg(spec, "tokens_month", &tokens, err);
    if (!rc) rc = limit_arg(spec, "max_parallel", &parallel, err);
    if (!rc && parallel > GW_MAX_PARALLEL)
        rc = gp_err_set(err, GP_EINVALID, "max_parallel must be 0 (no limit) .. %d",
                        GW_MAX_PARALLEL);
    if (!rc) rc = jx_get_str(spec, "expires_at", 0, &exp, err);
    if (!rc) rc = jx_get_int(spec, "ttl_seconds", 0, &ttl, &has_ttl, err);
    if (rc) return rc;
    if (exp && has_ttl) return gp_err_set(err, GP_EINVALID, "give expires_at or ttl_seconds, not both");
    if (exp && (gt_parse_rfc3339(exp, &expires) != 0 || expires <= now))
        return gp_err_set(err, GP_EINVALID, "expires_at must be an RFC 3339 time in the future");
    if (has_ttl) {
        if (ttl < 1 || ttl > MAX_TTL_S)
            return gp_err_set(err, GP_EINVALID, "ttl_seconds must be 1..%lld", MAX_TTL_S);
        expires = now + ttl * 1000000;
    }
    json_t *models = json_object_get(spec, "models");
    if (models && (rc = check_models(tx, tenant_id, models, err))) return rc;
    if (app) {
        store_stmt *s;
        rc = store_query(tx, &s, err, "SELECT id FROM apps WHERE project_id = ? AND name = ?", "ss",
                         project_id, app);
        if (rc) return rc;
        rc = store_step(s, err);
        if (rc > 0) snprintf(app_id, sizeof app_id, "%s", store_text(s, 0));
        store_done(s);
        if (rc < 0) return rc;
        if (!rc) return gp_err_set(err, GP_EINVALID, "app '%.63s' not found in this project", app);
    }
    char hash[RND_HASH_LEN], prefix[16];
    rnd_secret(GW_KEY_PREFIX, secret);
    rnd_hash_secret(secret, hash);
    snprintf(prefix, sizeof prefix, "%.10s", secret);
    rnd_id(id);
    char *mj = models ? jx_dump(models) : NULL;
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO api_keys (id, tenant_id, project_id, app_id, name, owner, hash,"
                    " prefix, models, rpm, tpm, tokens_month, max_parallel, expires_at, created_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    "sssssssssiiiiii", id, tenant_id, project_id, app_id, name, owner, hash,
                    prefix, mj ? mj : "[]", rpm, tpm, tokens, parallel, expires, now);
    free(mj);
    if (rc == GP_ECONFLICT) return gp_err_set(err, GP_ECONFLICT, "key '%s' already exists", name);
    return rc;
}

/* Why the key's owner no longer carries it ('' while it does); one parameter: now. */
#define OWNER_STATE                                                                            \
    "CASE WHEN NOT EXISTS (SELECT 1 FROM users u WHERE u.name = k.owner) THEN 'owner_removed'" \
    " WHEN EXISTS (SELECT 1 FROM users u WHERE u.name = k.owner AND u.disabled <> 0)"        \
    " THEN 'owner_disabled'"                                                                  \
    " WHEN NOT EXISTS (SELECT 1 FROM role_bindings b JOIN users u ON u.id = b.user_id"       \
    "  WHERE u.name = k.owner AND (b.expires_at IS NULL OR b.expires_at > ?)"                 \
    "  AND ((b.scope = 'tenant' AND b.tenant_id = k.tenant_id AND b.role = 'tenant-admin')"   \
    "   OR (b.scope = 'project' AND b.project_id = k.project_id"                              \
    "       AND b.role IN ('project-admin', 'project-user'))))"                               \
    " THEN 'owner_lost_role' ELSE '' END"

static const char *owner_reason(const char *state) {
    if (strcmp(state, "owner_removed") == 0) return "This API key's owner no longer exists.";
    if (strcmp(state, "owner_disabled") == 0) return "This API key's owner is disabled.";
    return "This API key's owner no longer holds a role in its project.";
}

/* A key as key_json reads it (STORE_COLS; the parameter: now, for OWNER_STATE). */
#define KEY_COLUMNS(X)                                                                    \
    X(KC_ID, "k.id")                                                                      \
    X(KC_NAME, "k.name")                                                                  \
    X(KC_OWNER, "k.owner")                                                                \
    X(KC_PREFIX, "k.prefix")                                                              \
    X(KC_MODELS, "k.models")                                                              \
    X(KC_RPM, "k.rpm")                                                                    \
    X(KC_TPM, "k.tpm")                                                                    \
    X(KC_TOKENS_MONTH, "k.tokens_month")                                                  \
    X(KC_EXPIRES, "k.expires_at")                                                         \
    X(KC_REVOKED, "k.revoked_at")                                                         \
    X(KC_CREATED, "k.created_at")                                                         \
    X(KC_APP, "COALESCE(a.name, '')")                                                     \
    X(KC_TENANT_ID, "k.tenant_id")                                                        \
    X(KC_PROJECT_ID, "k.project_id")                                                      \
    X(KC_OWNER_STATE, OWNER_STATE)                                                        \
    X(KC_MAX_PARALLEL, "k.max_parallel")
enum { KEY_COLUMNS(STORE_COL_ENUM) KC__N };
#define KEY_COLS STORE_COLS(KEY_COLUMNS)

static json_t *key_json(store_stmt *s, int64_t now) {
    json_t *models = json_loads(store_text(s, KC_MODELS), 0, NULL);
    int64_t exp = store_int(s, KC_EXPIRES), rev = store_int(s, KC_REVOKED);
    const char *owner = store_text(s, KC_OWNER_STATE);
    const char *state = rev                 ? "revoked"
                        : (exp && exp <= now) ? "expired"
                        : *owner              ? "inactive"
                                              : "active";
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:s}", "id",
                          store_text(s, KC_ID), "name", store_text(s, KC_NAME), "owner",
                          store_text(s, KC_OWNER), "prefix", store_text(s, KC_PREFIX), "models",
                          models ? models : json_array(), "rpm", (json_int_t)store_int(s, KC_RPM),
                          "tpm", (json_int_t)store_int(s, KC_TPM), "tokens_month",
                          (json_int_t)store_int(s, KC_TOKENS_MONTH), "expires_at",
                          exp ? jx_time(exp) : json_null(), "revoked_at",
                          rev ? jx_time(rev) : json_null(), "created_at",
                          jx_time(store_int(s, KC_CREATED)), "state", state);
    json_object_set_new(o, "app",
                        *store_text(s, KC_APP) ? json_string(store_text(s, KC_APP)) : json_null());
    json_object_set_new(o, "active", json_boolean(strcmp(state, "active") == 0));
    json_object_set_new(o, "max_parallel", json_integer((json_int_t)store_int(s, KC_MAX_PARALLEL)));
    if (!rev && !(exp && exp <= now) && *owner)
        json_object_set_new(o, "inactive_reason", json_string(owner));
    return o;
}

static int keys_query(store_tx *tx, const char *project_id, const char *owner, const char *id,
                      json_t **items, gp_err *err) {
    store_stmt *s;
    int64_t now = gt_now_us();
    int rc = store_query(tx, &s, err,
                         "SELECT " KEY_COLS " FROM api_keys k LEFT JOIN apps a ON a.id = k.app_id"
                         " WHERE k.project_id = ? AND (? IS NULL OR k.owner = ?)"
                         " AND (? IS NULL OR k.id = ?) ORDER BY k.created_at DESC, k.id LIMIT 1000",
                         "isssss", now, project_id, owner, owner, id, id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) json_array_append_new(arr, key_json(s, now));
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int gw_key_list(store_tx *tx, const char *project_id, const char *owner, json_t **items,
                gp_err *err) {
    return keys_query(tx, project_id, owner, NULL, items, err);
}

int gw_key_get(store_tx *tx, const char *project_id, const char *id, json_t **out,
               char owner[64], gp_err *err) {
    json_t *items;
    int rc = keys_query(tx, project_id, NULL, id, &items, err);
    if (rc) return rc;
    json_t *k = json_array_get(items, 0);
    if (!k) {
        json_decref(items);
        return gp_err_set(err, GP_ENOTFOUND, "key not found");
    }
    if (owner) snprintf(owner, 64, "%s", json_string_value(json_object_get(k, "owner")));
    if (out) *out = json_incref(k);
    json_decref(items);
    return GP_OK;
}

int gw_key_revoke(store_tx *tx, const char *project_id, const char *id, gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND project_id = ?"
                        " AND revoked_at = 0",
                        "iss", gt_now_us(), id, project_id);
    if (rc || changes) return rc;
    json_t *k;
    rc = gw_key_get(tx, project_id, id, &k, NULL, err);
    if (rc) return rc;
    json_decref(k);
    return gp_err_set(err, GP_ECONFLICT, "the key is already revoked");
}

void gw_key_release(gw_key *k) {
    if (!k) return;
    json_decref(k->models);
    k->models = NULL;
}

const char *gw_bearer_key(const char *h) {
    if (!h || strncasecmp(h, "Bearer ", 7)) return NULL;
    h += 7;
    while (*h == ' ') h++;
    return h;
}

/* A key with its tenant's and project's names, as gw_key_auth reads it (STORE_COLS; the
 * parameter: now, for OWNER_STATE). */
#define AUTH_COLUMNS(X)                                                                   \
    X(KA_ID, "k.id")                                                                      \
    X(KA_TENANT_ID, "k.tenant_id")                                                        \
    X(KA_PROJECT_ID, "k.project_id")                                                      \
    X(KA_TENANT, "t.name")                                                                \
    X(KA_PROJECT, "p.name")                                                               \
    X(KA_APP, "COALESCE(a.name, '')")                                                     \
    X(KA_MODELS, "k.models")                                                              \
    X(KA_RPM, "k.rpm")                                                                    \
    X(KA_TPM, "k.tpm")                                                                    \
    X(KA_TOKENS_MONTH, "k.tokens_month")                                                  \
    X(KA_EXPIRES, "k.expires_at")                                                         \
    X(KA_REVOKED, "k.revoked_at")                                                         \
    X(KA_OWNER_STATE, OWNER_STATE)                                                        \
    X(KA_MAX_PARALLEL, "k.max_parallel")
enum { AUTH_COLUMNS(STORE_COL_ENUM) KA__N };

int gw_key_auth(store_tx *tx, const char *secret, int64_t now, gw_key *out, gp_err *err) {
    memset(out, 0, sizeof *out);
    if (!secret || strncmp(secret, GW_KEY_PREFIX, strlen(GW_KEY_PREFIX)) || strlen(secret) > 200)
        return gp_err_set(err, GP_EUNAUTH, "Incorrect API key provided.");
    char hash[RND_HASH_LEN];
    rnd_hash_secret(secret, hash);
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(AUTH_COLUMNS) " FROM api_keys k"
                         " JOIN tenants t ON t.id = k.tenant_id JOIN projects p ON p.id = k.project_id"
                         " LEFT JOIN apps a ON a.id = k.app_id WHERE k.hash = ?",
                         "is", now, hash);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc <= 0) {
        store_done(s);
        return rc < 0 ? rc : gp_err_set(err, GP_EUNAUTH, "Incorrect API key provided.");
    }
    int64_t exp = store_int(s, KA_EXPIRES), rev = store_int(s, KA_REVOKED);
    if (rev || (exp && exp <= now)) {
        store_done(s);
        return gp_err_set(err, GP_EUNAUTH, rev ? "This API key has been revoked."
                                               : "This API key has expired.");
    }
    if (*store_text(s, KA_OWNER_STATE)) { /* its owner is gone, disabled or without a role there */
        rc = gp_err_set(err, GP_EUNAUTH, "%s", owner_reason(store_text(s, KA_OWNER_STATE)));
        store_done(s);
        return rc;
    }
    snprintf(out->id, sizeof out->id, "%s", store_text(s, KA_ID));
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", store_text(s, KA_TENANT_ID));
    snprintf(out->project_id, sizeof out->project_id, "%s", store_text(s, KA_PROJECT_ID));
    snprintf(out->tenant, sizeof out->tenant, "%s", store_text(s, KA_TENANT));
    snprintf(out->project, sizeof out->project, "%s", store_text(s, KA_PROJECT));
    snprintf(out->app, sizeof out->app, "%s", store_text(s, KA_APP));
    out->models = json_loads(store_text(s, KA_MODELS), 0, NULL);
    if (!json_is_array(out->models)) {
        json_decref(out->models);
        out->models = json_array();
    }
    out->rpm = store_int(s, KA_RPM);
    out->tpm = store_int(s, KA_TPM);
    out->tokens_month = store_int(s, KA_TOKENS_MONTH);
    out->max_parallel = store_int(s, KA_MAX_PARALLEL);
    store_done(s);
    quota_set pq, tq;
    rc = quota_load(tx, out->tenant_id, out->project_id, &pq, err);
    if (!rc) rc = quota_load(tx, out->tenant_id, NULL, &tq, err);
    if (rc) {
        gw_key_release(out);
        return rc;
    }
    out->project_rpm = pq.g[QG_RPM];
    out->project_tpm = pq.g[QG_TPM];
    out->project_tokens_month = pq.g[QG_TOKENS_MONTH];
    out->tenant_tokens_month = tq.g[QG_TOKENS_MONTH];
    return GP_OK;
}
