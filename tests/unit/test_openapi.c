/*
 * test_openapi.c - docs/openapi.json and the route table say the same thing:
 * every route is documented with its method, and nothing undocumented or
 * stale is left in the document.
 */
#include "testutil.h"

#include "../../src/api/api.h"

#include <ctype.h>
#include <jansson.h>

static void lower(const char *in, char *out, size_t n) {
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++) out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

static void every_route_documented(void **state) {
    (void)state;
    json_error_t je;
    json_t *doc = json_loads(api_openapi_json(), 0, &je);
    if (!doc) fprintf(stderr, "openapi.json: line %d: %s\n", je.line, je.text);
    assert_non_null(doc);
    assert_non_null(json_object_get(doc, "openapi"));
    json_t *paths = json_object_get(doc, "paths");
    assert_true(json_is_object(paths));
    for (size_t i = 0; i < api_route_count(); i++) {
        char m[16];
        lower(api_route_method(i), m, sizeof m);
        json_t *op = json_object_get(json_object_get(paths, api_route_pattern(i)), m);
        if (!op) fprintf(stderr, "undocumented route: %s %s\n", api_route_method(i),
                         api_route_pattern(i));
        assert_non_null(op);
        assert_non_null(json_object_get(op, "responses"));
    }
    json_decref(doc);
}

static void nothing_stale_documented(void **state) {
    (void)state;
    static const char *const verbs[] = {"get", "put", "post", "delete", "patch", "head", "options"};
    json_t *doc = json_loads(api_openapi_json(), 0, NULL);
    assert_non_null(doc);
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++) {
            if (!json_object_get(item, verbs[v])) continue;
            int found = 0;
            for (size_t i = 0; i < api_route_count(); i++) {
                char m[16];
                lower(api_route_method(i), m, sizeof m);
                if (strcmp(api_route_pattern(i), path) == 0 && strcmp(m, verbs[v]) == 0) found = 1;
            }
            if (!found) fprintf(stderr, "documented but not routed: %s %s\n", verbs[v], path);
            assert_true(found);
        }
    }
    json_decref(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_route_documented),
        cmocka_unit_test(nothing_stale_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
