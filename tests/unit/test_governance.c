/*
 * test_governance.c - identity and governance through request dispatch:
 * escalation attempts, approvals (self-approval, reuse, expiry, rejection,
 * a requester who lost their rights), vendor access (expiry, revocation,
 * scope), logins, disabled users, token lifetimes and revocation, the
 * security policy, and audit export.
 */
#include "apitest.h"

typedef struct {
    apitest t;
    char alice[RND_SECRET_LEN]; /* tenant-admin red */
    char bob[RND_SECRET_LEN];   /* project-admin red/vision */
    char pu[RND_SECRET_LEN];    /* project-user red/vision */
    char ops[RND_SECRET_LEN];   /* ops-engineer */
    char sec2[RND_SECRET_LEN];  /* second security-admin */
    char vend[RND_SECRET_LEN];  /* no role: becomes a vendor */
    char carol[RND_SECRET_LEN]; /* no role, homed in red */
} gx;

#define A(f) (f)->t.admin
#define CALL(f, tok, m, p, b, out) at_call(&(f)->t, tok, m, p, b, out)

static int setup(void **state) {
    gx *f = calloc(1, sizeof *f);
    at_open(&f->t);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants", "{\"name\":\"red\"}", NULL), 201);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants", "{\"name\":\"blue\"}", NULL), 201);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants/red/projects",
                          "{\"name\":\"vision\"}", NULL),
                     201);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants/red/projects", "{\"name\":\"nlp\"}",
                          NULL),
                     201);
    at_user(&f->t, "alice", "tenant-admin", "tenant", "red", NULL, f->alice);
    at_user(&f->t, "bob", "project-admin", "project", "red", "vision", f->bob);
    at_user(&f->t, "pu", "project-user", "project", "red", "vision", f->pu);
    at_user(&f->t, "ops", "ops-engineer", "global", NULL, NULL, f->ops);
    at_user(&f->t, "sec2", "security-admin", "global", NULL, NULL, f->sec2);
    at_user(&f->t, "vend", NULL, NULL, NULL, NULL, f->vend);
    at_user(&f->t, "carol", NULL, NULL, NULL, NULL, f->carol);
    /* a user of red's own that holds no role yet */
    at_sql(&f->t, "UPDATE users SET home_tenant_id = (SELECT id FROM tenants WHERE name = 'red')"
                  " WHERE name = 'carol'");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    gx *f = *state;
    at_close(&f->t);
    free(f);
    return 0;
}

static void escalation_is_impossible(void **state) {
    gx *f = *state;
    const char *viewer = "{\"role\":\"viewer\"}";
    /* a tenant admin: no global roles, no approval rights, no other tenant */
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/members/alice",
                          "{\"role\":\"platform-admin\"}", NULL),
                     403);
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/members/carol",
                          "{\"role\":\"security-admin\"}", NULL),
                     403);
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/tenants/blue/members/carol",
                          "{\"role\":\"tenant-admin\"}", NULL),
                     404);
    /* ... but tenant roles in its own tenant, up to its own */
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/tenants/red/members/carol",
                          "{\"role\":\"tenant-admin\"}", NULL),
                     200);
    /* a project admin: project roles in its project only */
    assert_int_equal(CALL(f, f->bob, "PUT", "/api/v1/tenants/red/projects/vision/members/pu",
                          "{\"role\":\"project-admin\"}", NULL),
                     200);
    assert_int_equal(CALL(f, f->bob, "PUT", "/api/v1/tenants/red/members/pu",
                          "{\"role\":\"tenant-admin\"}", NULL),
                     403);
    assert_int_equal(CALL(f, f->bob, "PUT", "/api/v1/tenants/red/projects/nlp/members/pu", viewer,
                          NULL),
                     404);
    /* pu was just made project-admin of vision; a plain project user grants nothing */
    char pu2[RND_SECRET_LEN];
    at_user(&f->t, "pu2", "project-user", "project", "red", "vision", pu2);
    assert_int_equal(CALL(f, pu2, "PUT", "/api/v1/tenants/red/projects/vision/members/carol",
                          viewer, NULL),
                     403);
    /* a project admin cannot demote someone whose role it does not dominate... */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/projects/vision/members/alice",
                          viewer, NULL),
                     200);
    /* ops-engineers grant no roles at all */
    assert_int_equal(CALL(f, f->ops, "PUT", "/api/v1/members/carol",
                          "{\"role\":\"ops-engineer\"}", NULL),
                     403);
    /* roles only at their own scope; unknown roles; vendor only through vendor access */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/members/carol",
                          "{\"role\":\"platform-admin\"}", NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/carol", "{\"role\":\"root\"}", NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/carol", "{\"role\":\"vendor\"}", NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/members/nobody", viewer, NULL),
                     404);
    /* the tenant comes from the path: a body field cannot redirect the grant */
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/tenants/red/members/carol",
                          "{\"role\":\"viewer\",\"tenant\":\"blue\"}", NULL),
                     400);
    /* removal follows the same rule */
    assert_int_equal(CALL(f, f->bob, "DELETE", "/api/v1/tenants/red/members/alice", NULL, NULL),
                     403);
    assert_int_equal(CALL(f, f->alice, "DELETE", "/api/v1/tenants/red/members/carol", NULL, NULL),
                     200);
    assert_int_equal(CALL(f, f->alice, "DELETE", "/api/v1/tenants/red/members/carol", NULL, NULL),
                     404);
    assert_int_equal(CALL(f, A(f), "DELETE", "/api/v1/members/ops", NULL, NULL), 400);
    /* separation of duties: a platform-admin cannot take over a security-admin */
    char padm[RND_SECRET_LEN];
    at_user(&f->t, "padm", "platform-admin", "global", NULL, NULL, padm);
    assert_int_equal(CALL(f, padm, "PATCH", "/api/v1/users/sec2", "{\"disabled\":true}", NULL),
                     403);
    assert_int_equal(CALL(f, padm, "PATCH", "/api/v1/users/sec2",
                          "{\"password\":\"taken over now\"}", NULL),
                     403);
    assert_int_equal(CALL(f, padm, "POST", "/api/v1/users/sec2/tokens", "{}", NULL), 403);
    assert_int_equal(CALL(f, padm, "PATCH", "/api/v1/users/carol", "{\"disabled\":true}", NULL),
                     200);
    /* listing members: in scope only */
    json_t *resp;
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/tenants/red/members", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/tenants/blue/members", NULL, NULL), 404);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/members", NULL, NULL), 403);
}

static int token_works(gx *f, const char *tok) {
    return CALL(f, tok, "GET", "/api/v1/whoami", NULL, NULL) == 200;
}

/* Request a global grant as `who`; returns the approval id (static buffer). */
static const char *request_global(gx *f, const char *who, const char *user, const char *role) {
    static char id[RND_ID_LEN];
    char path[128], body[64];
    json_t *resp;
    snprintf(path, sizeof path, "/api/v1/members/%s", user);
    snprintf(body, sizeof body, "{\"role\":\"%s\"}", role);
    assert_int_equal(CALL(f, who, "PUT", path, body, &resp), 202);
    assert_string_equal(at_str(resp, "state"), "pending");
    assert_string_equal(at_str(resp, "operation"), "member.grant_global");
    snprintf(id, sizeof id, "%s", at_str(resp, "id"));
    json_decref(resp);
    return id;
}

static int holds_global(gx *f, const char *user, const char *role) {
    json_t *resp;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/users/%s", user);
    assert_int_equal(CALL(f, A(f), "GET", path, NULL, &resp), 200);
    size_t i;
    json_t *b;
    int found = 0;
    json_array_foreach(json_object_get(resp, "roles"), i, b) if (
        strcmp(at_str(b, "role"), role) == 0 && strcmp(at_str(b, "scope"), "global") == 0) found =
        1;
    json_decref(resp);
    return found;
}

static void approvals(void **state) {
    gx *f = *state;
    char path[128];
    json_t *resp;
    const char *id0 = request_global(f, A(f), "carol", "ops-engineer");
    char id[RND_ID_LEN];
    snprintf(id, sizeof id, "%s", id0);
    assert_false(holds_global(f, "carol", "ops-engineer")); /* nothing happened yet */
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    /* nobody approves their own request */
    assert_int_equal(CALL(f, A(f), "POST", path, NULL, &resp), 403);
    assert_non_null(strstr(at_str(json_object_get(resp, "error"), "message"), "own"));
    json_decref(resp);
    /* nor does someone without the right role (or who cannot even see it) */
    assert_int_equal(CALL(f, f->alice, "POST", path, NULL, NULL), 404);
    assert_int_equal(CALL(f, f->ops, "POST", path, NULL, NULL), 404);
    /* the requester sees it; others do not */
    snprintf(path, sizeof path, "/api/v1/approvals/%s", id);
    assert_int_equal(CALL(f, A(f), "GET", path, NULL, NULL), 200);
    assert_int_equal(CALL(f, f->alice, "GET", path, NULL, NULL), 404);
    /* a second security-admin approves: the exact change happens, once */
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_string_equal(at_str(resp, "state"), "approved");
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 200);
    assert_string_equal(at_str(resp, "decided_by"), "sec2");
    json_decref(resp);
    assert_true(holds_global(f, "carol", "ops-engineer"));
    /* reuse: a decided approval cannot be approved or rejected again */
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 409);
    json_decref(resp);
    snprintf(path, sizeof path, "/api/v1/approvals/%s/reject", id);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, NULL), 409);
    /* repeating the request makes a new approval; it never rides on the old one */
    assert_string_not_equal(request_global(f, A(f), "carol", "ops-engineer"), id);

    /* rejection: nothing happens */
    snprintf(id, sizeof id, "%s", request_global(f, A(f), "pu", "ops-engineer"));
    snprintf(path, sizeof path, "/api/v1/approvals/%s/reject", id);
    assert_int_equal(CALL(f, f->sec2, "POST", path, "{\"reason\":\"no need\"}", &resp), 200);
    assert_string_equal(at_str(resp, "state"), "rejected");
    assert_string_equal(at_str(resp, "reason"), "no need");
    json_decref(resp);
    assert_false(holds_global(f, "pu", "ops-engineer"));

    /* expiry */
    snprintf(id, sizeof id, "%s", request_global(f, A(f), "bob", "ops-engineer"));
    char sql[200];
    snprintf(sql, sizeof sql, "UPDATE approvals SET expires_at = 1 WHERE id = '%s'", id);
    at_sql(&f->t, sql);
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 409);
    assert_string_equal(at_code(resp), "approval_expired");
    json_decref(resp);
    assert_false(holds_global(f, "bob", "ops-engineer"));
    snprintf(path, sizeof path, "/api/v1/approvals/%s", id);
    assert_int_equal(CALL(f, A(f), "GET", path, NULL, &resp), 200);
    assert_string_equal(at_str(resp, "state"), "expired");
    json_decref(resp);

    /* the request runs with the requester's rights at approval time */
    snprintf(id, sizeof id, "%s", request_global(f, f->sec2, "pu", "security-admin"));
    at_sql(&f->t, "DELETE FROM role_bindings WHERE user_id = (SELECT id FROM users WHERE name ="
                  " 'sec2')");
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    assert_int_equal(CALL(f, A(f), "POST", path, NULL, &resp), 200);
    assert_string_equal(at_str(resp, "state"), "failed");
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 403);
    json_decref(resp);
    assert_false(holds_global(f, "pu", "security-admin"));

    /* listing: security-admins see all, others their own */
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/approvals", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/approvals?state=pending", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    /* each step was audited */
    gp_err err = GP_ERR_INIT;
    audit_report rep;
    assert_int_equal(audit_verify(f->t.st, &rep, &err), GP_OK);
    assert_true(rep.ok);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?action=approval.", NULL, &resp), 200);
    assert_true(json_array_size(json_object_get(resp, "items")) >= 4);
    json_decref(resp);
}

static void approval_waived_until_a_second_approver_exists(void **state) {
    gx *f = *state;
    json_t *resp;
    /* remove sec2 before anyone has ever needed it: admin is the only approver */
    at_sql(&f->t, "DELETE FROM role_bindings WHERE role = 'security-admin' AND user_id ="
                  " (SELECT id FROM users WHERE name = 'sec2')");
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/sec2",
                          "{\"role\":\"security-admin\"}", &resp),
                     200);
    json_decref(resp);
    /* now there is a second one: approvals are armed for good */
    request_global(f, A(f), "carol", "ops-engineer");
    at_sql(&f->t, "DELETE FROM role_bindings WHERE role = 'security-admin' AND user_id ="
                  " (SELECT id FROM users WHERE name = 'sec2')");
    request_global(f, A(f), "carol", "platform-admin");
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?action=member.grant", NULL, &resp), 200);
    json_t *first = json_array_get(json_object_get(resp, "items"), 0);
    assert_non_null(strstr(at_str(json_object_get(first, "summary"), "approval"), "waived"));
    json_decref(resp);
}

static void vendor_access(void **state) {
    gx *f = *state;
    json_t *resp;
    const char *grant = "{\"user\":\"vend\",\"nodes\":[\"gpu-node-7\"],\"work_orders\":"
                        "[\"wo-12\"],\"ttl_seconds\":3600}";
    /* only ops-engineers grant it, and only to vendor-only accounts */
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/vendor-access", grant, NULL), 403);
    assert_int_equal(CALL(f, f->ops, "POST", "/api/v1/vendor-access",
                          "{\"user\":\"alice\",\"nodes\":[\"n\"],\"ttl_seconds\":60}", NULL),
                     409);
    assert_int_equal(CALL(f, f->ops, "POST", "/api/v1/vendor-access",
                          "{\"user\":\"vend\",\"ttl_seconds\":60}", NULL),
                     400);
    /* sensitive: approval first */
    assert_int_equal(CALL(f, f->ops, "POST", "/api/v1/vendor-access", grant, &resp), 202);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 201);
    const char *gid = at_str(json_object_get(resp, "result"), "id");
    assert_non_null(gid);
    char gpath[128];
    snprintf(gpath, sizeof gpath, "/api/v1/vendor-access/%s", gid);
    json_decref(resp);
    /* within it: its own grant, nothing of any tenant, no audit, no roles to give */
    assert_true(token_works(f, f->vend));
    assert_int_equal(CALL(f, f->vend, "GET", "/api/v1/vendor-access", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    assert_int_equal(CALL(f, f->vend, "GET", "/api/v1/tenants", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
    assert_int_equal(CALL(f, f->vend, "GET", "/api/v1/tenants/red", NULL, NULL), 404);
    assert_int_equal(CALL(f, f->vend, "GET", "/api/v1/audit", NULL, NULL), 403);
    assert_int_equal(CALL(f, f->vend, "PUT", "/api/v1/members/vend", "{\"role\":\"ops-engineer\"}",
                          NULL),
                     403);
    /* a vendor account gets no other role */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/members/vend",
                          "{\"role\":\"viewer\"}", NULL),
                     409);
    /* every vendor call is audited, reads included */
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?actor=vend&action=tenant.list", NULL,
                          &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    /* expiry: refused at once */
    at_sql(&f->t, "UPDATE vendor_grants SET expires_at = 1");
    assert_int_equal(CALL(f, f->vend, "GET", "/api/v1/whoami", NULL, NULL), 401);
    /* revocation: likewise */
    at_sql(&f->t, "UPDATE vendor_grants SET expires_at = 9999999999999999");
    assert_true(token_works(f, f->vend));
    assert_int_equal(CALL(f, f->vend, "DELETE", gpath, NULL, NULL), 403);
    assert_int_equal(CALL(f, f->ops, "DELETE", gpath, NULL, NULL), 200);
    assert_int_equal(CALL(f, f->vend, "GET", "/api/v1/whoami", NULL, NULL), 401);
    assert_int_equal(CALL(f, f->ops, "GET", "/api/v1/vendor-access", NULL, &resp), 200);
    assert_string_equal(at_str(json_array_get(json_object_get(resp, "items"), 0), "state"),
                        "revoked");
    json_decref(resp);
}

static void login_disable_tokens(void **state) {
    gx *f = *state;
    json_t *resp;
    /* a tenant admin creates an account and brings it into its tenant */
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users",
                          "{\"name\":\"dave\",\"password\":\"correct horse battery\"}", NULL),
                     201);
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users",
                          "{\"name\":\"eve\",\"password\":\"short\"}", NULL),
                     400);
    assert_int_equal(CALL(f, f->bob, "POST", "/api/v1/users",
                          "{\"name\":\"eve\",\"password\":\"long enough pw\"}", NULL),
                     403);
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/tenants/red/members/dave",
                          "{\"role\":\"viewer\"}", NULL),
                     200);
    /* login */
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/login",
                          "{\"name\":\"dave\",\"password\":\"wrong password\"}", NULL),
                     401);
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/login",
                          "{\"name\":\"nobody\",\"password\":\"whatever123\"}", NULL),
                     401);
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/login",
                          "{\"name\":\"dave\",\"password\":\"correct horse battery\"}", &resp),
                     200);
    char dave[RND_SECRET_LEN];
    snprintf(dave, sizeof dave, "%s", at_str(resp, "token"));
    assert_non_null(at_str(resp, "expires_at"));
    json_decref(resp);
    assert_true(token_works(f, dave));
    /* own tokens: create (capped lifetime), list, revoke */
    assert_int_equal(CALL(f, dave, "POST", "/api/v1/users/dave/tokens",
                          "{\"ttl_seconds\":999999999}", NULL),
                     400);
    assert_int_equal(CALL(f, dave, "POST", "/api/v1/users/dave/tokens",
                          "{\"ttl_seconds\":600,\"label\":\"ci\"}", &resp),
                     201);
    char extra[RND_SECRET_LEN], extra_id[RND_ID_LEN], path[160];
    snprintf(extra, sizeof extra, "%s", at_str(resp, "token"));
    snprintf(extra_id, sizeof extra_id, "%s", at_str(resp, "id"));
    json_decref(resp);
    assert_true(token_works(f, extra));
    assert_int_equal(CALL(f, dave, "GET", "/api/v1/users/dave/tokens", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 2);
    char *listed = json_dumps(resp, 0);
    assert_null(strstr(listed, extra)); /* never the secret */
    free(listed);
    json_decref(resp);
    /* nobody else's tokens */
    assert_int_equal(CALL(f, dave, "GET", "/api/v1/users/alice/tokens", NULL, NULL), 404);
    assert_int_equal(CALL(f, f->pu, "GET", "/api/v1/users/dave/tokens", NULL, NULL), 404);
    snprintf(path, sizeof path, "/api/v1/users/dave/tokens/%s", extra_id);
    assert_int_equal(CALL(f, dave, "DELETE", path, NULL, NULL), 200);
    assert_false(token_works(f, extra));
    assert_true(token_works(f, dave));
    /* an administrator of the user revokes others' tokens and disables the account */
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/dave", "{\"disabled\":true}", NULL),
                     200);
    assert_false(token_works(f, dave));
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/login",
                          "{\"name\":\"dave\",\"password\":\"correct horse battery\"}", NULL),
                     401);
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/dave", "{\"disabled\":false}",
                          NULL),
                     200);
    assert_true(token_works(f, dave));
    /* outside its tenant, or a user it cannot see: 404 */
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/ops", "{\"disabled\":true}", NULL),
                     404);
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/alice", "{\"disabled\":true}",
                          NULL),
                     400);
    /* changing one's own password needs the current one */
    assert_int_equal(CALL(f, dave, "PATCH", "/api/v1/users/dave",
                          "{\"password\":\"a brand new one\"}", NULL),
                     403);
    assert_int_equal(CALL(f, dave, "PATCH", "/api/v1/users/dave",
                          "{\"password\":\"a brand new one\",\"current_password\":"
                          "\"correct horse battery\"}",
                          NULL),
                     200);
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/login",
                          "{\"name\":\"dave\",\"password\":\"a brand new one\"}", &resp),
                     200);
    char dave2[RND_SECRET_LEN];
    snprintf(dave2, sizeof dave2, "%s", at_str(resp, "token"));
    json_decref(resp);
    /* one's own change keeps the token that made it and ends every other session */
    assert_int_equal(CALL(f, dave, "PATCH", "/api/v1/users/dave",
                          "{\"password\":\"another new one\",\"current_password\":"
                          "\"a brand new one\"}",
                          NULL),
                     200);
    assert_true(token_works(f, dave));
    assert_false(token_works(f, dave2));
    /* an administrator's reset ends them all */
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/dave",
                          "{\"password\":\"reset by alice\"}", &resp),
                     200);
    json_decref(resp);
    assert_false(token_works(f, dave));
    /* failed logins are audited as denied, with no password anywhere */
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?action=user.login&result=denied", NULL,
                          &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 3);
    char *dump = json_dumps(resp, 0);
    assert_null(strstr(dump, "wrong password"));
    assert_null(strstr(dump, "correct horse"));
    free(dump);
    json_decref(resp);
    /* service accounts: no password, tokens made by their administrators */
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users",
                          "{\"name\":\"ci-bot\",\"kind\":\"service\",\"password\":\"xxxxxxxxxxxx\"}",
                          NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users",
                          "{\"name\":\"ci-bot\",\"kind\":\"service\"}", NULL),
                     201);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users/ci-bot/tokens", "{}", NULL), 201);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users/dave/tokens", "{}", NULL), 403);
}

/* A declared sensitive route (tenant.create listed): a dry run first, so a create that
 * would fail files no approval; one that would go through waits, then runs once. */
static void sensitive_declared_route(void **state) {
    gx *f = *state;
    json_t *resp;
    at_sql(&f->t, "INSERT INTO security_policy (key, value) VALUES ('approvals_armed', '1')"
                  " ON CONFLICT (key) DO NOTHING");
    at_sql(&f->t, "UPDATE security_policy SET value = '[\"tenant.create\",\"policy.change\"]'"
                  " WHERE key = 'sensitive_operations'");
    /* red exists: refused at once, no approval */
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants", "{\"name\":\"red\"}", &resp), 409);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants", "{\"name\":\"Bad Name\"}", NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/approvals?state=pending", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
    /* a new one waits for a second person; nothing exists meanwhile */
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/tenants", "{\"name\":\"green\"}", &resp),
                     202);
    assert_string_equal(at_str(resp, "operation"), "tenant.create");
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/tenants/green", NULL, NULL), 404);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 201);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/tenants/green", NULL, NULL), 200);
    /* the create's audit event says it was approved */
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?action=tenant.create&result=ok", NULL,
                          &resp),
                     200);
    int approved = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(resp, "items"), i, ev) {
        json_t *sum = json_object_get(ev, "summary");
        char *text = sum ? json_dumps(sum, 0) : NULL;
        /* the execution (201), not the request that filed the approval (202) */
        approved += json_integer_value(json_object_get(ev, "status")) == 201 && text &&
                    strstr(text, "approval") && strstr(text, "green");
        free(text);
    }
    json_decref(resp);
    assert_int_equal(approved, 1);
}

/* Approve the pending request at `path` as sec2 and check what the execution answered. */
static void approve_as_sec2(gx *f, const char *approval_id, int want_status) {
    char path[128];
    json_t *resp;
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", approval_id);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), want_status);
    json_decref(resp);
}

/* A route only some of whose changes are sensitive (tenant.quota.raise): a new or lower
 * ceiling goes through, a higher one waits; the dry run changes nothing; a priority class
 * change waits too (priority_class.change), and a bad one files nothing. */
static void quota_raise_and_priority_approvals(void **state) {
    gx *f = *state;
    json_t *resp;
    char id[64];
    at_sql(&f->t, "INSERT INTO security_policy (key, value) VALUES ('approvals_armed', '1')"
                  " ON CONFLICT (key) DO NOTHING");
    at_sql(&f->t, "UPDATE security_policy SET value ="
                  " '[\"tenant.quota.raise\",\"priority_class.change\",\"policy.change\"]'"
                  " WHERE key = 'sensitive_operations'");
    /* a first ceiling limits: not a raise */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/quota", "{\"gpus\":4}", &resp), 200);
    assert_int_equal((int)json_number_value(json_object_get(resp, "gpus")), 4);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "PATCH", "/api/v1/tenants/red/quota", "{\"gpus\":2}", NULL),
                     200);
    /* a project's ceiling is never the sensitive operation */
    assert_int_equal(CALL(f, A(f), "PATCH", "/api/v1/tenants/red/projects/vision/quota",
                          "{\"gpus\":2}", NULL),
                     200);
    /* a bad raise is refused at once, nothing filed */
    assert_int_equal(CALL(f, A(f), "PATCH", "/api/v1/tenants/red/quota", "{\"gpus\":-3}", NULL),
                     400);
    /* a raise waits; the ceiling stays where it was meanwhile */
    assert_int_equal(CALL(f, A(f), "PATCH", "/api/v1/tenants/red/quota", "{\"gpus\":8}", &resp),
                     202);
    assert_string_equal(at_str(resp, "operation"), "tenant.quota.raise");
    snprintf(id, sizeof id, "%s", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/tenants/red/quota", NULL, &resp), 200);
    assert_int_equal((int)json_number_value(json_object_get(resp, "gpus")), 2);
    json_decref(resp);
    approve_as_sec2(f, id, 200);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/tenants/red/quota", NULL, &resp), 200);
    assert_int_equal((int)json_number_value(json_object_get(resp, "gpus")), 8);
    json_decref(resp);
    /* a priority class: a bad one refused at once, a good one waits, then exists */
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/priority-classes", "{\"name\":\"urgent\"}",
                          NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/approvals?state=pending", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/priority-classes",
                          "{\"name\":\"urgent\",\"value\":900}", &resp),
                     202);
    snprintf(id, sizeof id, "%s", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/priority-classes/urgent", NULL, NULL), 404);
    approve_as_sec2(f, id, 201);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/priority-classes/urgent", NULL, &resp),
                     200);
    assert_int_equal(json_integer_value(json_object_get(resp, "value")), 900);
    json_decref(resp);
    /* a tenant-admin may not raise its own tenant's ceiling at all: 403, nothing filed */
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/tenants/red/quota", "{\"gpus\":9}", NULL),
                     403);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/approvals?state=pending", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
}

static void policy_and_export(void **state) {
    gx *f = *state;
    json_t *resp;
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/security-policy", NULL, NULL), 403);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/security-policy",
                          "{\"sensitive_operations\":[\"nope\"]}", NULL),
                     400);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/security-policy",
                          "{\"login_token_ttl_seconds\":5}", NULL),
                     400);
    /* export: sensitive by default */
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit/export?action=tenant.create", NULL,
                          &resp),
                     202);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 200);
    const char *jsonl = at_str(resp, "result");
    assert_non_null(jsonl); /* always a string, however many events */
    int lines = 0;
    for (const char *p = jsonl; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 2); /* red and blue */
    json_decref(resp);
    /* a tenant admin exports its own tenant only */
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/audit/export?tenant=blue", NULL, NULL), 404);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/audit/export", NULL, NULL), 403);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/audit/export?tenant=red", NULL, NULL), 202);
    /* with no sensitive operations, the export and global grants go straight through */
    /* changing the policy is itself sensitive */
    assert_int_equal(CALL(f, f->sec2, "PUT", "/api/v1/security-policy",
                          "{\"sensitive_operations\":[]}", &resp),
                     202);
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 200);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit/export?tenant=red", NULL, &resp), 200);
    assert_non_null(strstr(json_string_value(resp), "tenant.create"));
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/carol", "{\"role\":\"ops-engineer\"}",
                          NULL),
                     200);
    /* audit filters */
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00Z",
                          NULL, &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?since=yesterday", NULL, NULL), 400);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/audit?target=carol&actor=admin", NULL, &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
}

/* The id of the invitation in a 202 answer (static buffer). */
static const char *invite(gx *f, const char *tok, const char *path, const char *role) {
    static char id[RND_ID_LEN];
    char body[64];
    json_t *resp;
    snprintf(body, sizeof body, "{\"role\":\"%s\"}", role);
    assert_int_equal(CALL(f, tok, "PUT", path, body, &resp), 202);
    json_t *inv = json_object_get(resp, "invitation");
    assert_string_equal(at_str(inv, "state"), "pending");
    snprintf(id, sizeof id, "%s", at_str(inv, "id"));
    json_decref(resp);
    return id;
}

/* Does `user` hold `role` in tenant red (at tenant scope, or in project vision)? */
static int holds_in_red(gx *f, const char *user, const char *role) {
    json_t *resp;
    int found = 0;
    size_t i;
    json_t *b;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/users/%s", user);
    assert_int_equal(CALL(f, A(f), "GET", path, NULL, &resp), 200);
    json_array_foreach(json_object_get(resp, "roles"), i, b) {
        const char *t = at_str(b, "tenant");
        if (t && strcmp(t, "red") == 0 && strcmp(at_str(b, "role"), role) == 0) found = 1;
    }
    json_decref(resp);
    return found;
}

static void ownership_and_invitations(void **state) {
    gx *f = *state;
    json_t *resp;
    char blueadm[RND_SECRET_LEN], dan[RND_SECRET_LEN], plat[RND_SECRET_LEN], path[200];
    at_user(&f->t, "blueadm", "tenant-admin", "tenant", "blue", NULL, blueadm);
    at_user(&f->t, "dan", NULL, NULL, "blue", NULL, dan); /* blue's, no role */
    at_user(&f->t, "plato", NULL, NULL, NULL, NULL, plat); /* the platform's, no role */
    /* homes are shown */
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/users/dan", NULL, &resp), 200);
    assert_string_equal(at_str(resp, "home"), "blue");
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/users/plato", NULL, &resp), 200);
    assert_true(json_is_null(json_object_get(resp, "home")));
    json_decref(resp);
    /* red's admin grants a role to blue's user: an invitation, not a binding */
    char id[RND_ID_LEN];
    snprintf(id, sizeof id, "%s", invite(f, f->alice, "/api/v1/tenants/red/members/dan", "viewer"));
    assert_false(holds_in_red(f, "dan", "viewer"));
    /* ... which gives red's admin nothing over dan */
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/dan",
                          "{\"password\":\"taken over now\"}", NULL),
                     404);
    /* both tenants see it; the inviter cannot accept it, on either path */
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/tenants/red/invitations", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    assert_int_equal(CALL(f, blueadm, "GET", "/api/v1/tenants/blue/invitations", NULL, &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    assert_string_equal(at_str(json_array_get(json_object_get(resp, "items"), 0), "home"), "blue");
    json_decref(resp);
    snprintf(path, sizeof path, "/api/v1/tenants/red/invitations/%s/accept", id);
    assert_int_equal(CALL(f, f->alice, "POST", path, NULL, NULL), 403);
    snprintf(path, sizeof path, "/api/v1/tenants/blue/invitations/%s/accept", id);
    assert_int_equal(CALL(f, f->alice, "POST", path, NULL, NULL), 403);
    assert_int_equal(CALL(f, f->bob, "POST", path, NULL, NULL), 404);
    assert_false(holds_in_red(f, "dan", "viewer"));
    /* the home accepts: the binding exists, granted by the inviter */
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, &resp), 200);
    assert_string_equal(at_str(resp, "state"), "accepted");
    assert_string_equal(at_str(resp, "decided_by"), "blueadm");
    json_decref(resp);
    assert_true(holds_in_red(f, "dan", "viewer"));
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, NULL), 409); /* decided once */
    /* still nothing for red over dan; blue is not locked out of its own user */
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/dan", "{\"disabled\":true}", NULL),
                     404);
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users/dan/tokens", "{}", NULL), 404);
    assert_int_equal(CALL(f, blueadm, "PATCH", "/api/v1/users/dan", "{\"disabled\":true}", NULL),
                     200);
    assert_int_equal(CALL(f, blueadm, "PATCH", "/api/v1/users/dan", "{\"disabled\":false}", NULL),
                     200);
    /* red's admin may still take its own tenant's role away */
    assert_int_equal(CALL(f, f->alice, "DELETE", "/api/v1/tenants/red/members/dan", NULL, NULL),
                     200);
    /* blue saw the invitation, its acceptance and the revocation in its own audit */
    assert_int_equal(CALL(f, blueadm, "GET", "/api/v1/audit?tenant=blue&target=dan", NULL, &resp),
                     200);
    char *dump = json_dumps(resp, 0);
    assert_non_null(strstr(dump, "member.grant"));
    assert_non_null(strstr(dump, "member.revoke"));
    free(dump);
    json_decref(resp);
    assert_int_equal(CALL(f, blueadm, "GET", "/api/v1/audit?tenant=blue&action=invitation.accept&result=ok",
                          NULL, &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/audit?tenant=red&action=invitation.accept&result=ok",
                          NULL, &resp),
                     200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);

    /* withdrawn by the inviter: nothing to accept */
    snprintf(id, sizeof id, "%s",
             invite(f, f->bob, "/api/v1/tenants/red/projects/vision/members/dan", "project-user"));
    /* the home lists it with red's project named, though its transaction is tied to blue
     * (PostgreSQL's fence hides red's projects there: the invitation keeps the name) */
    assert_int_equal(CALL(f, blueadm, "GET", "/api/v1/tenants/blue/invitations", NULL, &resp),
                     200);
    {
        size_t k;
        json_t *it;
        int seen = 0;
        json_array_foreach(json_object_get(resp, "items"), k, it) {
            if (strcmp(at_str(it, "id"), id) != 0) continue;
            assert_string_equal(at_str(it, "project"), "vision");
            assert_string_equal(at_str(it, "tenant"), "red");
            seen = 1;
        }
        assert_true(seen);
    }
    json_decref(resp);
    snprintf(path, sizeof path, "/api/v1/tenants/blue/invitations/%s", id);
    assert_int_equal(CALL(f, blueadm, "DELETE", path, NULL, NULL), 403); /* not blue's to withdraw */
    snprintf(path, sizeof path, "/api/v1/tenants/red/invitations/%s", id);
    assert_int_equal(CALL(f, f->bob, "DELETE", path, NULL, &resp), 200);
    assert_string_equal(at_str(resp, "state"), "withdrawn");
    json_decref(resp);
    snprintf(path, sizeof path, "/api/v1/tenants/blue/invitations/%s/accept", id);
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, NULL), 409);
    assert_false(holds_in_red(f, "dan", "project-user"));
    /* declined */
    snprintf(id, sizeof id, "%s", invite(f, f->alice, "/api/v1/tenants/red/members/dan", "viewer"));
    snprintf(path, sizeof path, "/api/v1/tenants/blue/invitations/%s/decline", id);
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, NULL), 200);
    assert_false(holds_in_red(f, "dan", "viewer"));
    /* expired */
    snprintf(id, sizeof id, "%s", invite(f, f->alice, "/api/v1/tenants/red/members/dan", "viewer"));
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE invitations SET expires_at = 1 WHERE id = '%s'", id);
    at_sql(&f->t, sql);
    snprintf(path, sizeof path, "/api/v1/tenants/blue/invitations/%s/accept", id);
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, &resp), 409);
    assert_string_equal(at_code(resp), "invitation_expired");
    json_decref(resp);
    assert_false(holds_in_red(f, "dan", "viewer"));
    /* an inviter who lost the right since: accepting changes nothing */
    snprintf(id, sizeof id, "%s",
             invite(f, f->bob, "/api/v1/tenants/red/projects/vision/members/dan", "viewer"));
    at_sql(&f->t, "DELETE FROM role_bindings WHERE user_id = (SELECT id FROM users WHERE name ="
                  " 'bob')");
    snprintf(path, sizeof path, "/api/v1/tenants/blue/invitations/%s/accept", id);
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, NULL), 409);
    assert_false(holds_in_red(f, "dan", "viewer"));
    /* the platform's users: a platform-admin decides */
    snprintf(id, sizeof id, "%s", invite(f, f->alice, "/api/v1/tenants/red/members/plato", "viewer"));
    snprintf(path, sizeof path, "/api/v1/invitations/%s/accept", id);
    assert_int_equal(CALL(f, blueadm, "POST", path, NULL, NULL), 404);
    assert_int_equal(CALL(f, f->alice, "POST", path, NULL, NULL), 404);
    assert_int_equal(CALL(f, A(f), "GET", "/api/v1/invitations", NULL, &resp), 200);
    assert_true(json_array_size(json_object_get(resp, "items")) >= 1);
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "POST", path, NULL, NULL), 200);
    assert_true(holds_in_red(f, "plato", "viewer"));
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/plato", "{\"disabled\":true}",
                          NULL),
                     404);
    /* a platform-admin grants across homes at once (and the home's audit says so) */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/members/dan", "{\"role\":\"viewer\"}",
                          NULL),
                     200);
    assert_true(holds_in_red(f, "dan", "viewer"));
    /* red's own users: granted at once */
    assert_int_equal(CALL(f, f->alice, "PUT", "/api/v1/tenants/red/members/carol",
                          "{\"role\":\"viewer\"}", NULL),
                     200);

    /* node accounts: no grants, tokens, passwords or disabling from anyone */
    at_sql(&f->t, "INSERT INTO users (id, name, kind, created_at, node_account) VALUES"
                  " ('n1acct', 'agent-n1', 'service', 0, 1)");
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/tenants/red/members/agent-n1",
                          "{\"role\":\"viewer\"}", NULL),
                     409);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/agent-n1",
                          "{\"role\":\"ops-engineer\"}", NULL),
                     409);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users/agent-n1/tokens", "{}", NULL), 403);
    assert_int_equal(CALL(f, A(f), "PATCH", "/api/v1/users/agent-n1", "{\"disabled\":true}", NULL),
                     403);
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users/agent-n1/tokens", "{}", NULL), 404);
    /* and nobody makes an account with a node's name */
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users",
                          "{\"name\":\"agent-n2\",\"kind\":\"service\"}", NULL),
                     400);

    /* where new users live */
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users",
                          "{\"name\":\"ivy\",\"kind\":\"service\"}", &resp),
                     201);
    assert_string_equal(at_str(resp, "home"), "red");
    json_decref(resp);
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users",
                          "{\"name\":\"ivy2\",\"kind\":\"service\",\"tenant\":\"blue\"}", NULL),
                     404);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users",
                          "{\"name\":\"ivy3\",\"kind\":\"service\",\"tenant\":\"blue\"}", &resp),
                     201);
    assert_string_equal(at_str(resp, "home"), "blue");
    json_decref(resp);
    assert_int_equal(CALL(f, A(f), "POST", "/api/v1/users", "{\"name\":\"ivy4\",\"kind\":\"service\"}",
                          &resp),
                     201);
    assert_true(json_is_null(json_object_get(resp, "home")));
    json_decref(resp);
    /* an admin of two tenants says which */
    at_sql(&f->t, "INSERT INTO role_bindings (user_id, role, scope, tenant_id, created_at)"
                  " SELECT u.id, 'tenant-admin', 'tenant', t.id, 0 FROM users u, tenants t"
                  " WHERE u.name = 'blueadm' AND t.name = 'red'");
    assert_int_equal(CALL(f, blueadm, "POST", "/api/v1/users", "{\"name\":\"ivy5\",\"kind\":\"service\"}",
                          NULL),
                     400);
    assert_int_equal(CALL(f, blueadm, "POST", "/api/v1/users",
                          "{\"name\":\"ivy5\",\"kind\":\"service\",\"tenant\":\"red\"}", &resp),
                     201);
    assert_string_equal(at_str(resp, "home"), "red");
    json_decref(resp);
    /* an admin of both homes grants at once */
    assert_int_equal(CALL(f, blueadm, "PUT", "/api/v1/tenants/red/members/dan",
                          "{\"role\":\"tenant-admin\"}", NULL),
                     200);
    /* a home admin never administers a holder of a global role */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/carol", "{\"role\":\"ops-engineer\"}",
                          &resp),
                     202); /* sensitive, armed (sec2 exists) */
    char apath[128];
    snprintf(apath, sizeof apath, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, f->sec2, "POST", apath, NULL, NULL), 200);
    assert_int_equal(CALL(f, f->alice, "PATCH", "/api/v1/users/carol", "{\"disabled\":true}",
                          NULL),
                     404);
    gp_err err = GP_ERR_INIT;
    audit_report rep;
    assert_int_equal(audit_verify(f->t.st, &rep, &err), GP_OK);
    assert_true(rep.ok);
}

/* Issue 18, finding 5: one security-admin, then two. */
static void approval_bootstrap_one_to_two(void **state) {
    gx *f = *state;
    json_t *resp;
    /* admin is the only security-admin */
    at_sql(&f->t, "DELETE FROM role_bindings WHERE role = 'security-admin' AND user_id ="
                  " (SELECT id FROM users WHERE name = 'sec2')");
    /* a tenant-admin's export (sensitive) is waived: admin is not "another" approver for
     * anyone but admin, so it must not arm approvals */
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/audit/export?tenant=red", NULL, &resp), 200);
    json_decref(resp);
    /* admin's own sensitive requests still go through: nobody is locked out */
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/security-policy",
                          "{\"approval_ttl_seconds\":7200}", NULL),
                     200);
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/members/sec2", "{\"role\":\"security-admin\"}",
                          &resp),
                     200);
    assert_true(json_is_true(json_object_get(resp, "approvals_armed")) ||
                json_object_get(resp, "role") != NULL);
    json_decref(resp);
    /* two security-admins: armed, and each approves the other */
    assert_int_equal(CALL(f, f->alice, "GET", "/api/v1/audit/export?tenant=red", NULL, NULL), 202);
    const char *id = request_global(f, A(f), "carol", "ops-engineer");
    char path[128];
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", id);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 200);
    json_decref(resp);
    /* armed for good, even when the second one goes */
    at_sql(&f->t, "DELETE FROM role_bindings WHERE role = 'security-admin' AND user_id ="
                  " (SELECT id FROM users WHERE name = 'sec2')");
    request_global(f, A(f), "carol", "platform-admin");
}

/* With user.create sensitive, the approval keeps a hash, never the password. */
static void user_create_approval_keeps_no_password(void **state) {
    gx *f = *state;
    json_t *resp;
    char path[128];
    assert_int_equal(CALL(f, A(f), "PUT", "/api/v1/security-policy",
                          "{\"sensitive_operations\":[\"user.create\",\"policy.change\"]}", &resp),
                     202);
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, NULL), 200);
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users",
                          "{\"name\":\"frank\",\"password\":\"correct horse battery\"}", &resp),
                     202);
    snprintf(path, sizeof path, "/api/v1/approvals/%s/approve", at_str(resp, "id"));
    json_decref(resp);
    /* a client cannot hand in a hash itself */
    assert_int_equal(CALL(f, f->alice, "POST", "/api/v1/users",
                          "{\"name\":\"frank2\",\"password_hash\":\"$argon2id$v=19$x\"}", NULL),
                     400);
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *st;
    assert_int_equal(store_begin(f->t.st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &st, &err, "SELECT body FROM approvals WHERE operation ="
                                                " 'user.create'", ""),
                     GP_OK);
    assert_int_equal(store_step(st, &err), 1);
    assert_null(strstr(store_text(st, 0), "correct horse"));
    assert_non_null(strstr(store_text(st, 0), "$argon2id$"));
    store_done(st);
    store_rollback(tx);
    assert_int_equal(CALL(f, f->sec2, "POST", path, NULL, &resp), 200);
    assert_int_equal(json_integer_value(json_object_get(resp, "result_status")), 201);
    assert_string_equal(at_str(json_object_get(resp, "result"), "home"), "red");
    json_decref(resp);
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/login",
                          "{\"name\":\"frank\",\"password\":\"correct horse battery\"}", NULL),
                     200);
}

int main(void) {
    assert_int_equal(rnd_init(), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(escalation_is_impossible, setup, teardown),
        cmocka_unit_test_setup_teardown(approvals, setup, teardown),
        cmocka_unit_test_setup_teardown(approval_waived_until_a_second_approver_exists, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(vendor_access, setup, teardown),
        cmocka_unit_test_setup_teardown(login_disable_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(policy_and_export, setup, teardown),
        cmocka_unit_test_setup_teardown(sensitive_declared_route, setup, teardown),
        cmocka_unit_test_setup_teardown(quota_raise_and_priority_approvals, setup, teardown),
        cmocka_unit_test_setup_teardown(ownership_and_invitations, setup, teardown),
        cmocka_unit_test_setup_teardown(approval_bootstrap_one_to_two, setup, teardown),
        cmocka_unit_test_setup_teardown(user_create_approval_keeps_no_password, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
