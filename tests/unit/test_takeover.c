/*
 * test_takeover.c - no single identity completes a sensitive operation
 * (docs/security.md "Who administers the administrators").
 *
 * A property test over role combinations of two identities, A (the
 * attacker) and B (a bystander who does nothing), beside the bootstrap
 * `admin` (platform-admin and security-admin), with approvals armed.  A
 * plays every move it has with every credential it holds, round after round,
 * until it gains no new credential: reset the passwords of B, admin and the
 * users it made; log in with every password it knows; mint tokens for B,
 * admin and its service account; create a user and a service account; grant
 * platform-admin and security-admin to anyone; change the security policy;
 * approve every pending approval it can see.  Afterwards nothing sensitive
 * has happened: no approval was approved or executed, the policy still
 * lists its operations, nobody holds an administrator role that the set-up
 * did not give.  A positive control shows the check sees a completed
 * operation when a second, distinct person approves.
 */
#include "apitest.h"

enum { R_NONE, R_TADMIN, R_PLATFORM, R_SECURITY, R_BOTH, R__N };
static const char *const role_names[R__N] = {"none", "tenant-admin", "platform-admin",
                                              "security-admin", "platform+security"};

#define MAXTOK 16
typedef struct {
    apitest t;
    char tok[MAXTOK][RND_SECRET_LEN]; /* credentials the attacker holds */
    char who[MAXTOK][64];             /* ... and whose they are */
    int ntok;
    char pw_of[8][64]; /* user names whose password the attacker knows */
    int npw;
    int moves_ok; /* calls that succeeded (2xx): the attacker did act */
    int tok_done, pw_done; /* credentials whose moves were played (a move played again with
                            * the same credential answers the same: nothing completes) */
} arena;

static void grant(apitest *t, const char *name, const char *role, const char *scope,
                  const char *tenant) {
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO role_bindings (user_id, role, scope, tenant_id, project_id, created_at)"
             " VALUES ((SELECT id FROM users WHERE name = '%s'), '%s', '%s', %s, NULL, 0)",
             name, role, scope, tenant ? "(SELECT id FROM tenants WHERE name = 't')" : "NULL");
    at_sql(t, sql);
}

static void give_roles(apitest *t, const char *name, int r) {
    if (r == R_TADMIN) grant(t, name, "tenant-admin", "tenant", "t");
    if (r == R_PLATFORM || r == R_BOTH) grant(t, name, "platform-admin", "global", NULL);
    if (r == R_SECURITY || r == R_BOTH) grant(t, name, "security-admin", "global", NULL);
}

/* A user with a password nobody else knows, holding role set r, and its token. */
static void person(arena *a, const char *name, int r, char token[RND_SECRET_LEN]) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    at_user(&a->t, name, NULL, NULL, r == R_TADMIN ? "t" : NULL, NULL, token);
    give_roles(&a->t, name, r);
    assert_int_equal(store_begin(a->t.st, STORE_WRITE, &tx, &err), GP_OK);
    auth_user u;
    assert_int_equal(auth_user_find(tx, name, &u, &err), GP_OK);
    static char hash[AUTH_PWHASH_LEN]; /* one hash for all: argon2id is the test's cost */
    if (!hash[0]) assert_int_equal(auth_password_hash("Secret-Of-Its-Own-7", hash, &err), GP_OK);
    assert_int_equal(auth_user_set_password(tx, u.id, NULL, hash, NULL, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void hold(arena *a, const char *tok, const char *whose) {
    for (int i = 0; i < a->ntok; i++)
        if (strcmp(a->tok[i], tok) == 0) return;
    if (a->ntok == MAXTOK) return;
    snprintf(a->tok[a->ntok], RND_SECRET_LEN, "%s", tok);
    snprintf(a->who[a->ntok], 64, "%s", whose);
    a->ntok++;
}

static int knows_pw(const arena *a, const char *name) {
    for (int i = 0; i < a->npw; i++)
        if (strcmp(a->pw_of[i], name) == 0) return 1;
    return 0;
}

static void learn_pw(arena *a, const char *name) {
    if (!knows_pw(a, name) && a->npw < 8) snprintf(a->pw_of[a->npw++], 64, "%s", name);
}

static int call(arena *a, int k, const char *m, const char *p, const char *b, json_t **out) {
    json_t *resp = NULL;
    int st = at_call(&a->t, a->tok[k], m, p, b, &resp);
    if (st >= 200 && st < 300) a->moves_ok++;
    if (out) *out = resp;
    else json_decref(resp);
    return st;
}

#define ATTACK_PW "Taken-Over-By-A-1"

/* One round of every move with every credential held.  Returns how many new
 * credentials (tokens or passwords) it gained. */
static int round_of_moves(arena *a) {
    static const char *const targets[] = {"b", "admin", "u1", "s1"};
    int before = a->ntok + a->npw;
    char path[160], body[200];
    int first = a->tok_done;
    a->tok_done = a->ntok;
    for (int k = first; k < a->tok_done; k++) {
        json_t *resp;
        /* make a person and a service account of its own */
        if (call(a, k, "POST", "/api/v1/users",
                 "{\"name\":\"u1\",\"password\":\"" ATTACK_PW "\",\"tenant\":\"t\"}",
                 NULL) == 201 ||
            call(a, k, "POST", "/api/v1/users",
                 "{\"name\":\"u1\",\"password\":\"" ATTACK_PW "\"}", NULL) == 201)
            learn_pw(a, "u1");
        call(a, k, "POST", "/api/v1/users", "{\"name\":\"s1\",\"kind\":\"service\"}", NULL);
        for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
            /* reset a password: on success it knows it */
            snprintf(path, sizeof path, "/api/v1/users/%s", targets[i]);
            if (call(a, k, "PATCH", path, "{\"password\":\"" ATTACK_PW "\"}", NULL) == 200)
                learn_pw(a, targets[i]);
            /* mint a token */
            snprintf(path, sizeof path, "/api/v1/users/%s/tokens", targets[i]);
            if (call(a, k, "POST", path, "{}", &resp) == 201)
                hold(a, at_str(resp, "token"), targets[i]);
            json_decref(resp);
            /* make it an administrator */
            snprintf(path, sizeof path, "/api/v1/members/%s", targets[i]);
            call(a, k, "PUT", path, "{\"role\":\"security-admin\"}", NULL);
            call(a, k, "PUT", path, "{\"role\":\"platform-admin\"}", NULL);
        }
        call(a, k, "PUT", "/api/v1/members/a", "{\"role\":\"security-admin\"}", NULL);
        call(a, k, "PUT", "/api/v1/security-policy", "{\"sensitive_operations\":[]}", NULL);
    }
    /* log in with every password it knows */
    for (int i = a->pw_done; i < a->npw; i++, a->pw_done++) {
        json_t *resp = NULL;
        snprintf(body, sizeof body, "{\"name\":\"%s\",\"password\":\"" ATTACK_PW "\"}",
                 a->pw_of[i]);
        if (at_call(&a->t, NULL, "POST", "/api/v1/login", body, &resp) == 200)
            hold(a, at_str(resp, "token"), a->pw_of[i]);
        json_decref(resp);
    }
    /* approve whatever it can see, with every credential */
    for (int k = 0; k < a->ntok; k++) {
        json_t *resp = NULL;
        if (call(a, k, "GET", "/api/v1/approvals?state=pending", NULL, &resp) == 200) {
            size_t i;
            json_t *it;
            json_array_foreach(json_object_get(resp, "items"), i, it) {
                for (int j = 0; j < a->ntok; j++) {
                    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve",
                             at_str(it, "id"));
                    call(a, j, "POST", path, NULL, NULL);
                }
            }
        }
        json_decref(resp);
    }
    return a->ntok + a->npw - before;
}

static int64_t count(apitest *t, const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(t->st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, sql, ""), GP_OK);
    assert_true(store_step(s, &err) > 0);
    int64_t n = store_int(s, 0);
    store_done(s);
    store_rollback(tx);
    return n;
}

#define COMPLETED "SELECT COUNT(*) FROM approvals WHERE state NOT IN ('pending','rejected','expired')"
#define ADMINS                                                                                     \
    "SELECT COUNT(*) FROM role_bindings WHERE role IN ('platform-admin','security-admin')"

static void open_arena(arena *a, int ra, int rb, char atok[RND_SECRET_LEN],
                       char btok[RND_SECRET_LEN]) {
    memset(a, 0, sizeof *a);
    at_open(&a->t);
    assert_int_equal(at_call(&a->t, a->t.admin, "POST", "/api/v1/tenants", "{\"name\":\"t\"}",
                             NULL),
                     201);
    person(a, "a", ra, atok);
    person(a, "b", rb, btok);
    /* the two-person rule is in force (a second security-admin has existed) */
    at_sql(&a->t, "INSERT INTO security_policy (key, value) VALUES ('approvals_armed', '1')"
                  " ON CONFLICT (key) DO NOTHING");
    hold(a, atok, "a");
}

static void one_identity_completes_nothing(void **state) {
    (void)state;
    int acted = 0;
    for (int ra = 0; ra < R__N; ra++) {
        for (int rb = 0; rb < R__N; rb++) {
            arena *a = calloc(1, sizeof *a);
            char atok[RND_SECRET_LEN], btok[RND_SECRET_LEN];
            open_arena(a, ra, rb, atok, btok);
            int64_t admins = count(&a->t, ADMINS);
            for (int rounds = 0; rounds < 4 && round_of_moves(a) > 0; rounds++)
                ;
            int64_t done = count(&a->t, COMPLETED), now_admins = count(&a->t, ADMINS);
            int64_t listed =
                count(&a->t, "SELECT COUNT(*) FROM security_policy WHERE key ="
                             " 'sensitive_operations' AND value LIKE '%policy.change%'");
            if (done || now_admins != admins || listed != 1)
                fail_msg("A=%s B=%s: one identity completed a sensitive operation (%lld "
                         "approvals completed, administrators %lld -> %lld, policy listed %lld; "
                         "A held %d credentials)",
                         role_names[ra], role_names[rb], (long long)done, (long long)admins,
                         (long long)now_admins, (long long)listed, a->ntok);
            acted += a->moves_ok > 0;
            at_close(&a->t);
            free(a);
        }
    }
    assert_int_equal(acted, R__N * R__N); /* every attacker did get calls through */
}

/* The check is not blind: a second, distinct security-admin approving completes it. */
static void two_people_complete(void **state) {
    (void)state;
    arena *a = calloc(1, sizeof *a);
    char atok[RND_SECRET_LEN], btok[RND_SECRET_LEN];
    open_arena(a, R_SECURITY, R_SECURITY, atok, btok);
    json_t *resp = NULL;
    assert_int_equal(at_call(&a->t, atok, "PUT", "/api/v1/security-policy",
                             "{\"sensitive_operations\":[]}", &resp),
                     202);
    char path[160];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(at_call(&a->t, btok, "POST", path, NULL, NULL), 200);
    assert_int_equal(count(&a->t, COMPLETED), 1);
    at_close(&a->t);
    free(a);
}

/* The attack of issue 33: a second security-admin resets the bootstrap admin's password. */
static void reset_of_an_administrator_needs_approval(void **state) {
    (void)state;
    arena *a = calloc(1, sizeof *a);
    char atok[RND_SECRET_LEN], btok[RND_SECRET_LEN];
    open_arena(a, R_SECURITY, R_SECURITY, atok, btok);
    json_t *resp = NULL;
    assert_int_equal(at_call(&a->t, atok, "PATCH", "/api/v1/users/admin",
                             "{\"password\":\"" ATTACK_PW "\"}", &resp),
                     202);
    assert_string_equal(at_str(resp, "operation"), "user.credentials");
    char id[RND_ID_LEN];
    snprintf(id, sizeof id, "%s", at_str(resp, "id"));
    json_decref(resp);
    /* nothing changed yet: the new password does not work */
    assert_int_equal(at_call(&a->t, NULL, "POST", "/api/v1/login",
                             "{\"name\":\"admin\",\"password\":\"" ATTACK_PW "\"}", NULL),
                     401);
    /* the approval keeps no password in clear */
    int64_t clear = count(&a->t, "SELECT COUNT(*) FROM approvals WHERE body LIKE '%" ATTACK_PW
                                 "%'");
    assert_int_equal(clear, 0);
    /* a different security-admin approves: the reset happens, as A, once */
    char path[160];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    assert_int_equal(at_call(&a->t, btok, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 200);
    json_decref(resp);
    assert_int_equal(at_call(&a->t, NULL, "POST", "/api/v1/login",
                             "{\"name\":\"admin\",\"password\":\"" ATTACK_PW "\"}", &resp),
                     200);
    char admtok[RND_SECRET_LEN];
    snprintf(admtok, sizeof admtok, "%s", at_str(resp, "token"));
    json_decref(resp);
    /* A now knows admin's password: admin may not decide A's requests, nor A admin's */
    assert_int_equal(at_call(&a->t, atok, "PUT", "/api/v1/security-policy",
                             "{\"sensitive_operations\":[]}", &resp),
                     202);
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(at_call(&a->t, admtok, "POST", path, NULL, &resp), 403);
    assert_non_null(strstr(at_str(json_object_get(resp, "error"), "message"), "password"));
    json_decref(resp);
    /* one's own change of password ends that: admin sets its own, then decides */
    assert_int_equal(
        at_call(&a->t, admtok, "PATCH", "/api/v1/users/admin",
                "{\"password\":\"Admins-Own-Again-9\",\"current_password\":\"" ATTACK_PW "\"}",
                NULL),
        200);
    assert_int_equal(at_call(&a->t, admtok, "POST", path, NULL, NULL), 200);
    /* a service account never holds an administrator role (its tokens are others') */
    assert_int_equal(at_call(&a->t, admtok, "POST", "/api/v1/users",
                             "{\"name\":\"bot\",\"kind\":\"service\"}", NULL),
                     201);
    assert_int_equal(at_call(&a->t, admtok, "PUT", "/api/v1/members/bot",
                             "{\"role\":\"platform-admin\"}", &resp),
                     409);
    json_decref(resp);
    at_close(&a->t);
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reset_of_an_administrator_needs_approval),
        cmocka_unit_test(two_people_complete),
        cmocka_unit_test(one_identity_completes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
