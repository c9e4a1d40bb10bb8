/*
 * test_router.c - route matching: literals, parameters, methods, edge cases;
 * and the checks of a request's target and headers before routing.
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

#define TARGET(raw, path) router_check_target(raw, strlen(raw), path)

static void target_checks(void **state) {
    (void)state;
    /* acceptable: plain paths, queries, encoded characters other than the refused ones */
    assert_null(TARGET("/api/v1/tenants", "/api/v1/tenants"));
    assert_null(TARGET("/api/v1/tenants?limit=5&next=a%2Fb", "/api/v1/tenants"));
    assert_null(TARGET("/health%7a", "/healthz"));
    assert_null(TARGET("/a/b.c/..d", "/a/b.c/..d"));
    assert_null(TARGET("/q?x=a b", "/q")); /* the query is MHD's to parse */
    /* NUL, raw or encoded, anywhere */
    assert_non_null(router_check_target("/healthz\0/x", 11, "/healthz"));
    assert_non_null(TARGET("/healthz%00/x", "/healthz"));
    assert_non_null(TARGET("/healthz?a=%00", "/healthz"));
    /* encoded slash or backslash, raw backslash, in the path */
    assert_non_null(TARGET("/api/v1/tenants%2fx", "/api/v1/tenants/x"));
    assert_non_null(TARGET("/api/v1/tenants/a%2Fb", "/api/v1/tenants/a/b"));
    assert_non_null(TARGET("/a%5cb", "/a\\b"));
    assert_non_null(TARGET("/a\\b", "/a\\b"));
    /* bytes that have no place in a path */
    assert_non_null(TARGET("/health z", "/health z"));
    assert_non_null(TARGET("/a\tb", "/a\tb"));
    assert_non_null(TARGET("/\xc3\xa9", "/\xc3\xa9"));
    assert_non_null(TARGET("/healthz#x", "/healthz#x"));
    /* decoded: control characters and dot segments */
    assert_non_null(TARGET("/a%0ab", "/a\nb"));
    assert_non_null(TARGET("/api/v1/../x", "/api/v1/../x"));
    assert_non_null(TARGET("/api/v1/%2e%2e/x", "/api/v1/../x"));
    assert_non_null(TARGET("/api/./v1", "/api/./v1"));
    assert_non_null(TARGET("/api/..", "/api/.."));
    assert_non_null(router_check_target(NULL, 0, "/"));
}

#define H(k, v) {k, v}
#define HDRS(...) ((const router_hdr[]){__VA_ARGS__})
#define NH(...) (sizeof(HDRS(__VA_ARGS__)) / sizeof(router_hdr))
#define CHECK(http11, ...) router_check_headers(HDRS(__VA_ARGS__), NH(__VA_ARGS__), http11)

static void header_checks(void **state) {
    (void)state;
    assert_null(CHECK(1, H("Host", "x"), H("Content-Length", "2"), H("Authorization", "Bearer t")));
    assert_null(CHECK(1, H("host", "x"), H("transfer-encoding", "Chunked")));
    assert_null(CHECK(0, H("Accept", "*/*"))); /* HTTP/1.0 needs no Host */
    assert_null(CHECK(1, H("Host", "x"), H("X-A", "a\tb")));
    assert_non_null(CHECK(1, H("Accept", "*/*")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Host", "y")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "2"), H("content-length", "2")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "2"), H("Content-Length", "30")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "5"), H("Transfer-Encoding", "chunked")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Transfer-Encoding", "gzip, chunked")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Transfer-Encoding", "chunked"),
                          H("Transfer-Encoding", "chunked")));
    assert_non_null(CHECK(0, H("Transfer-Encoding", "chunked")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Authorization", "a"), H("authorization", "b")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length ", "5")));
    assert_non_null(CHECK(1, H("Host", "x"), H("X(A)", "5")));
    assert_non_null(CHECK(1, H("Host", "x"), H("", "5")));
    assert_non_null(CHECK(1, H("Host", "x"), H("X-A", "a\x01b")));
    assert_non_null(CHECK(1, H("Host", "x"), H("X-A", "a\x7f")));
    /* a Content-Length is digits only: folded, signed, listed or empty ones are refused */
    assert_null(CHECK(1, H("Host", "x"), H("Content-Length", "0")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "2 0")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "+5")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "5, 5")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "")));
    assert_non_null(CHECK(1, H("Host", "x"), H("Content-Length", "0x10")));
    assert_non_null(router_check_headers(NULL, 0, 1)); /* no Host */
    assert_null(router_check_headers(NULL, 0, 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(target_checks),
        cmocka_unit_test(header_checks),
        cmocka_unit_test(literals_and_methods),
        cmocka_unit_test(parameters),
        cmocka_unit_test(edge_cases),
        cmocka_unit_test(fuzz_never_crashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
