/*
 * test_authz.c - the role x scope x action check.
 *
 * Rather than restating the matrix, these tests check the properties the
 * design promises: nothing crosses a tenant boundary, expired bindings grant
 * nothing, hidden and forbidden are told apart exactly as the API needs, and
 * each role reaches what DESIGN.md's table says and no more.
 */
#include "testutil.h"

#include "../../src/auth/authz.h"

#define NOW 1000000000LL

static authz_binding global(authz_role r) {
    return (authz_binding){r, SCOPE_GLOBAL, NULL, NULL, 0};
}
static authz_binding tenant(authz_role r, const char *t) {
    return (authz_binding){r, SCOPE_TENANT, t, NULL, 0};
}
static authz_binding project(authz_role r, const char *t, const char *p) {
    return (authz_binding){r, SCOPE_PROJECT, t, p, 0};
}

static authz_decision chk(authz_binding b, authz_action a, const char *t, const char *p) {
    authz_target tg = {t, p};
    return authz_check(&b, 1, a, &tg, NOW);
}

static void no_tenant_crossing(void **state) {
    (void)state;
    /* every tenant- or project-scoped role, every action, on another tenant: hidden */
    for (int r = 0; r < ROLE__COUNT; r++) {
        for (int a = 0; a < ACT__COUNT; a++) {
            assert_int_equal(chk(tenant((authz_role)r, "A"), (authz_action)a, "B", NULL),
                             AUTHZ_HIDDEN);
            assert_int_equal(chk(tenant((authz_role)r, "A"), (authz_action)a, "B", "pb"),
                             AUTHZ_HIDDEN);
            assert_int_equal(chk(project((authz_role)r, "A", "pa"), (authz_action)a, "B", "pb"),
                             AUTHZ_HIDDEN);
            /* a project binding never reaches a sibling project */
            authz_decision d = chk(project((authz_role)r, "A", "pa"), (authz_action)a, "A", "pz");
            assert_int_not_equal(d, AUTHZ_ALLOW);
        }
    }
}

static void expiry(void **state) {
    (void)state;
    authz_binding b = global(ROLE_PLATFORM_ADMIN);
    authz_target g = {NULL, NULL};
    b.expires_us = NOW + 1;
    assert_int_equal(authz_check(&b, 1, ACT_TENANT_CREATE, &g, NOW), AUTHZ_ALLOW);
    b.expires_us = NOW;
    assert_int_equal(authz_check(&b, 1, ACT_TENANT_CREATE, &g, NOW), AUTHZ_DENY);
    authz_binding t = tenant(ROLE_TENANT_ADMIN, "A");
    authz_target ta = {"A", NULL};
    t.expires_us = NOW - 5;
    assert_int_equal(authz_check(&t, 1, ACT_PROJECT_CREATE, &ta, NOW), AUTHZ_HIDDEN);
}

static void platform_admin(void **state) {
    (void)state;
    authz_binding b = global(ROLE_PLATFORM_ADMIN);
    assert_int_equal(chk(b, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_TENANT_READ, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    /* audit belongs to security-admins */
    assert_int_equal(chk(b, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(b, ACT_AUDIT_VERIFY, NULL, NULL), AUTHZ_DENY);
}

static void security_admin(void **state) {
    (void)state;
    authz_binding b = global(ROLE_SECURITY_ADMIN);
    assert_int_equal(chk(b, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_AUDIT_VERIFY, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_AUDIT_READ_TENANT, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(b, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
}

static void ops_engineer_sees_no_tenant_data(void **state) {
    (void)state;
    authz_binding b = global(ROLE_OPS_ENGINEER);
    assert_int_equal(chk(b, ACT_TENANT_READ, "A", NULL), AUTHZ_HIDDEN);
    assert_int_equal(chk(b, ACT_PROJECT_READ, "A", "p"), AUTHZ_HIDDEN);
    assert_int_equal(chk(b, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(b, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_DENY);
}

static void tenant_roles(void **state) {
    (void)state;
    authz_binding ta = tenant(ROLE_TENANT_ADMIN, "A");
    assert_int_equal(chk(ta, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_TENANT_READ, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_PROJECT_READ, "A", "any"), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_AUDIT_READ_TENANT, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(ta, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_DENY);

    authz_binding v = tenant(ROLE_VIEWER, "A");
    assert_int_equal(chk(v, ACT_TENANT_READ, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(v, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    assert_int_equal(chk(v, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
    assert_int_equal(chk(v, ACT_AUDIT_READ_TENANT, "A", NULL), AUTHZ_DENY);
}

static void project_roles(void **state) {
    (void)state;
    authz_binding pu = project(ROLE_PROJECT_USER, "A", "p");
    assert_int_equal(chk(pu, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    /* its tenant is visible (403, not 404) but not readable or changeable */
    assert_int_equal(chk(pu, ACT_TENANT_READ, "A", NULL), AUTHZ_DENY);
    assert_int_equal(chk(pu, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
    /* a sibling project is invisible */
    assert_int_equal(chk(pu, ACT_PROJECT_READ, "A", "q"), AUTHZ_HIDDEN);
    authz_binding pa = project(ROLE_PROJECT_ADMIN, "A", "p");
    assert_int_equal(chk(pa, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    assert_int_equal(chk(pa, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
}

static void nothing_without_bindings(void **state) {
    (void)state;
    authz_target g = {NULL, NULL}, t = {"A", NULL}, p = {"A", "p"};
    for (int a = 0; a < ACT__COUNT; a++) {
        assert_int_equal(authz_check(NULL, 0, (authz_action)a, &g, NOW), AUTHZ_DENY);
        assert_int_equal(authz_check(NULL, 0, (authz_action)a, &t, NOW), AUTHZ_HIDDEN);
        assert_int_equal(authz_check(NULL, 0, (authz_action)a, &p, NOW), AUTHZ_HIDDEN);
    }
}

static void several_bindings_add_up(void **state) {
    (void)state;
    authz_binding bs[2] = {project(ROLE_PROJECT_USER, "A", "p"), tenant(ROLE_VIEWER, "B")};
    authz_target pa = {"A", "p"}, tb = {"B", NULL}, tc = {"C", NULL};
    assert_int_equal(authz_check(bs, 2, ACT_PROJECT_READ, &pa, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_check(bs, 2, ACT_TENANT_READ, &tb, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_check(bs, 2, ACT_PROJECT_CREATE, &tb, NOW), AUTHZ_DENY);
    assert_int_equal(authz_check(bs, 2, ACT_TENANT_READ, &tc, NOW), AUTHZ_HIDDEN);
}

static void names_roundtrip(void **state) {
    (void)state;
    for (int r = 0; r < ROLE__COUNT; r++)
        assert_int_equal(authz_role_parse(authz_role_name((authz_role)r)), r);
    assert_int_equal(authz_role_parse("root"), -1);
    assert_int_equal(authz_scope_parse("tenant"), SCOPE_TENANT);
    assert_int_equal(authz_scope_parse("galaxy"), -1);
    for (int a = 0; a < ACT__COUNT; a++)
        assert_string_not_equal(authz_action_name((authz_action)a), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_tenant_crossing),
        cmocka_unit_test(expiry),
        cmocka_unit_test(platform_admin),
        cmocka_unit_test(security_admin),
        cmocka_unit_test(ops_engineer_sees_no_tenant_data),
        cmocka_unit_test(tenant_roles),
        cmocka_unit_test(project_roles),
        cmocka_unit_test(nothing_without_bindings),
        cmocka_unit_test(several_bindings_add_up),
        cmocka_unit_test(names_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
