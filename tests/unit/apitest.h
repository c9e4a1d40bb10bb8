/*
 * apitest.h - helpers for tests that drive request dispatch directly (no
 * HTTP): a fresh store with the bootstrap admin, users with role bindings,
 * and call(), which routes, authenticates and runs a handler as the HTTP
 * layer would.
 */
#ifndef GP_APITEST_H
#define GP_APITEST_H

#include "testutil.h"

#include "../../src/api/api_int.h"
#include "../../src/audit/audit.h"
#include "../../src/auth/auth.h"

typedef struct apitest {
    char *dir;
    store_t *st;
    api_config cfg;
    char admin[RND_SECRET_LEN];
} apitest;

/* Create the store and the bootstrap admin; read its token. */
static inline void at_open(apitest *t) {
    api_config cfg = API_CONFIG_DEFAULTS;
    char path[600];
    int created;
    gp_err err = GP_ERR_INIT;
    t->cfg = cfg;
    t->dir = tu_mkdtemp();
    t->st = tu_store(t->dir, 2);
    snprintf(path, sizeof path, "%s/admin.token", t->dir);
    assert_int_equal(auth_bootstrap(t->st, path, &created, &err), GP_OK);
    assert_true(created);
    FILE *tf = fopen(path, "r");
    assert_non_null(tf);
    assert_non_null(fgets(t->admin, sizeof t->admin, tf));
    fclose(tf);
    t->admin[strcspn(t->admin, "\n")] = '\0';
}

static inline void at_close(apitest *t) {
    store_close(t->st);
    tu_rmdir(t->dir);
}

/* Run SQL directly (test set-up and tampering only). */
static inline void at_sql(apitest *t, const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(t->st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = store_exec(tx, NULL, &err, sql, "");
    if (rc) fprintf(stderr, "%s: %s\n", sql, err.msg);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

/* A job's state and reason as the store has them (st: 32 bytes, reason: 240). */
static inline void at_job_state(apitest *t, const char *id, char st[32], char reason[240]) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(t->st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT state, reason FROM jobs WHERE id = ?", "s", id),
                     GP_OK);
    assert_true(store_step(s, &err) > 0);
    snprintf(st, 32, "%s", store_text(s, 0));
    snprintf(reason, 240, "%s", store_text(s, 1));
    store_done(s);
    store_rollback(tx);
}

/*
 * Create user `name` (no password) holding `role` at a scope (role NULL: no
 * role; tenant/project by name) and a token for it.  The user is homed in
 * `tenant` (the platform when NULL).
 */
static inline void at_user(apitest *t, const char *name, const char *role, const char *scope,
                           const char *tenant, const char *project, char token[RND_SECRET_LEN]) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    char uid[RND_ID_LEN], tid[RND_ID_LEN];
    rnd_id(uid);
    assert_int_equal(store_begin(t->st, STORE_WRITE, &tx, &err), GP_OK);
    /* homed in the tenant of its role (the platform for a global role or none) */
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO users (id, name, created_at, home_tenant_id)"
                                " VALUES (?,?,0,COALESCE((SELECT id FROM tenants WHERE name = ?),"
                                " ''))",
                                "sss", uid, name, tenant),
                     GP_OK);
    if (role)
        assert_int_equal(
            store_exec(tx, NULL, &err,
                       "INSERT INTO role_bindings (user_id, role, scope, tenant_id, project_id,"
                       " created_at) VALUES (?,?,?,(SELECT id FROM tenants WHERE name = ?),"
                       " (SELECT p.id FROM projects p JOIN tenants t ON t.id = p.tenant_id"
                       "  WHERE t.name = ? AND p.name = ?), 0)",
                       "ssssss", uid, role, scope, tenant, tenant, project),
            GP_OK);
    assert_int_equal(auth_token_create(tx, uid, "test", 0, token, tid, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

/* The tenant the last at_call's transaction was tied to ("" none: api_req.tied_tenant). */
static char at_last_tied[RND_ID_LEN];

/* Dispatch one request; returns the status, *resp (optional) a new reference. */
static inline int at_call(apitest *t, const char *token, const char *method, const char *path,
                          const char *body, json_t **resp) {
    api_req r;
    memset(&r, 0, sizeof r);
    r.store = t->st;
    r.cfg = &t->cfg;
    r.method = method;
    r.path = strdup(path);
    /* split "?a=b&c=d" into query arguments, as the HTTP layer does */
    char *q = strchr(r.path, '?');
    if (q) {
        *q++ = '\0';
        char *save = NULL;
        for (char *kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(kv, '=');
            r.query = realloc(r.query, sizeof *r.query * (size_t)(r.nquery + 1));
            r.query[r.nquery].key = strndup(kv, eq ? (size_t)(eq - kv) : strlen(kv));
            r.query[r.nquery].value = strdup(eq ? eq + 1 : "");
            r.nquery++;
        }
    }
    if (token) {
        char h[200];
        snprintf(h, sizeof h, "Bearer %s", token);
        r.authorization = strdup(h);
    }
    r.body = body;
    r.body_len = body ? strlen(body) : 0;
    rnd_id(r.request_id);
    snprintf(r.source, sizeof r.source, "test");
    api__dispatch(&r);
    int status = r.status;
    snprintf(at_last_tied, sizeof at_last_tied, "%s", r.tied_tenant);
    (void)at_last_tied;
    if (resp) *resp = r.resp ? json_incref(r.resp) : json_string(r.resp_text ? r.resp_text : "");
    api__req_release(&r);
    return status;
}

/* error.code of a response, or NULL. */
static inline const char *at_code(json_t *resp) {
    return json_string_value(json_object_get(json_object_get(resp, "error"), "code"));
}

/* A string member of a response, or NULL. */
static inline const char *at_str(json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

#endif
