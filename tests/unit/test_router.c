/*
 * test_router.c - route matching: literals, parameters, methods, edge cases.
 */
#include "testutil.h"

#include "../../src/api/router.h"

static const char *const methods[] = {"GET", "POST", "GET", "GET", "GET", "GET"};
static const char *const patterns[] = {
    "/api/v1/tenants",
    "/api/v1/tenants",
    "/api/v1/tenants/{tenant}",
    "/api/v1/tenants/{tenant}/projects/{project}",
    "/api/v1/audit/verify",
    "/",
};
#define N (sizeof patterns / sizeof patterns[0])

static void literals_and_methods(void **state) {
    (void)state;
    router_match m;
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/tenants", &m), 0);
    assert_int_equal(router_find(methods, patterns, N, "POST", "/api/v1/tenants", &m), 1);
    assert_int_equal(router_find(methods, patterns, N, "DELETE", "/api/v1/tenants", &m), -1);
    assert_int_equal(m.path_matched, 1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/nothing", &m), -1);
    assert_int_equal(m.path_matched, 0);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/", &m), 5);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/audit/verify", &m), 4);
}

static void parameters(void **state) {
    (void)state;
    router_match m;
    assert_int_equal(
        router_find(methods, patterns, N, "GET", "/api/v1/tenants/research/projects/vision-b", &m),
        3);
    assert_int_equal(m.nparams, 2);
    assert_string_equal(router_param(&m, "tenant"), "research");
    assert_string_equal(router_param(&m, "project"), "vision-b");
    assert_null(router_param(&m, "tenan"));
    assert_null(router_param(&m, "nope"));
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/tenants/x", &m), 2);
    assert_string_equal(router_param(&m, "tenant"), "x");
}

static void edge_cases(void **state) {
    (void)state;
    router_match m;
    /* no trailing-slash slack, no empty parameters, no prefixes */
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/tenants/", &m), -1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/tenants//projects/p", &m),
                     -1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/tenants/a/b", &m), -1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1", &m), -1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "api/v1/tenants", &m), -1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "", &m), -1);
    assert_int_equal(router_find(methods, patterns, N, "GET", "/api/v1/tenantsX", &m), -1);
    /* too many segments and too long paths never match (and never overflow) */
    char path[ROUTER_PATH_MAX + 10];
    strcpy(path, "/api/v1/tenants");
    for (int i = 0; i < 20; i++) strcat(path, "/a");
    assert_int_equal(router_find(methods, patterns, N, "GET", path, &m), -1);
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    assert_int_equal(router_find(methods, patterns, N, "GET", path, &m), -1);
}

static void fuzz_never_crashes(void **state) {
    (void)state;
    /* random paths made of '/', 'a', '{', '}' and NUL-free bytes must be handled */
    router_match m;
    unsigned seed = 12345;
    const char alphabet[] = "/a{}.%-tenants";
    for (int i = 0; i < 20000; i++) {
        char path[64];
        int len = (int)((seed = seed * 1103515245 + 12345) >> 16) % 60;
        for (int j = 0; j < len; j++)
            path[j] = alphabet[((seed = seed * 1103515245 + 12345) >> 16) % (sizeof alphabet - 1)];
        path[len] = '\0';
        int r = router_find(methods, patterns, N, "GET", path, &m);
        assert_true(r >= -1 && r < (int)N);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(literals_and_methods),
        cmocka_unit_test(parameters),
        cmocka_unit_test(edge_cases),
        cmocka_unit_test(fuzz_never_crashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
