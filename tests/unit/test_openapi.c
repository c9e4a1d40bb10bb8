/*
 * test_openapi.c - docs/openapi.json and the route table say the same thing:
 * every route is documented with its method, and nothing undocumented or
 * stale is left in the document; and the body schemas dispatch checks
 * (schema.c) work as JSON Schema says, cover every route that takes a body,
 * use only keywords the check knows, and accept the document's own examples.
 */
#include "testutil.h"

#include "../../src/api/api.h"
#include "../../src/api/api_int.h"

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

/* ---- body schemas (schema.c) ---- */

static const char *check_msg(const json_t *doc, const char *schema_name, const char *body) {
    static char msg[300];
    gp_err err = GP_ERR_INIT;
    json_t *v = json_loads(body, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    assert_non_null(v);
    json_t *ref = json_pack("{s:s+}", "$ref", "#/components/schemas/", schema_name);
    int rc = api_schema_check(doc, ref, v, &err);
    json_decref(ref);
    json_decref(v);
    if (!rc) return NULL;
    assert_int_equal(rc, GP_EINVALID);
    snprintf(msg, sizeof msg, "%s", err.msg);
    return msg;
}

static void schema_keywords(void **state) {
    (void)state;
    json_t *doc = json_loads(
        "{\"components\":{\"schemas\":{"
        " \"T\":{\"type\":\"object\",\"required\":[\"name\"],\"additionalProperties\":false,"
        "  \"properties\":{"
        "   \"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":5,"
        "             \"pattern\":\"^[a-z]+$\",\"description\":\"lower-case letters\"},"
        "   \"word\":{\"type\":\"string\",\"minLength\":3,\"pattern\":\"^x\"},"
        "   \"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9007199254740993},"
        "   \"f\":{\"type\":\"number\",\"minimum\":0.5},"
        "   \"b\":{\"type\":\"boolean\"},"
        "   \"tl\":{\"type\":[\"integer\",\"null\"]},"
        "   \"big\":{\"type\":\"number\",\"maximum\":1e12},"
        "   \"e\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
        "   \"z\":{\"type\":\"string\",\"nullable\":true},"
        "   \"tags\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"uniqueItems\":true,"
        "             \"items\":{\"type\":\"string\",\"maxLength\":2}},"
        "   \"labels\":{\"type\":\"object\",\"minProperties\":1,\"maxProperties\":2,"
        "               \"additionalProperties\":{\"type\":\"string\"}},"
        "   \"sub\":{\"$ref\":\"#/components/schemas/S\"},"
        "   \"both\":{\"allOf\":[{\"type\":\"integer\",\"minimum\":2},{\"maximum\":4}]}}},"
        " \"S\":{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"k\"],"
        "  \"properties\":{\"k\":{\"type\":\"integer\"}}},"
        " \"Loop\":{\"$ref\":\"#/components/schemas/Loop\"},"
        " \"Out\":{\"$ref\":\"http://example.com/x\"}}}}",
        0, NULL);
    assert_non_null(doc);
    assert_null(check_msg(doc, "T", "{\"name\":\"abc\"}"));
    assert_null(check_msg(doc, "T",
                          "{\"name\":\"ab\",\"word\":\"xyz\",\"n\":9007199254740993,\"f\":0.5,"
                          "\"b\":false,\"e\":\"b\",\"z\":null,\"tags\":[\"a\",\"b\"],"
                          "\"labels\":{\"rack\":\"r1\"},\"sub\":{\"k\":1},\"both\":3}"));
    /* what each keyword refuses, in the words the handlers use */
    assert_string_equal(check_msg(doc, "T", "{}"), "field 'name' is required");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"nme\":1}"), "unknown field 'nme'");
    assert_string_equal(check_msg(doc, "T", "{\"name\":7}"), "field 'name' must be a string");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"\"}"), "field 'name' must not be empty");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"abcdef\"}"),
                        "field 'name' must be at most 5 characters");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"word\":\"xy\"}"),
                        "field 'word' must be at least 3 characters");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"aB\"}"),
                        "field 'name' ('aB') is not valid: lower-case letters");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"word\":\"axx\"}"),
                        "field 'word' ('axx') must match ^x");
    /* characters, not bytes: five two-byte letters are five */
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"tags\":[\"\\u00e9\\u00e9\\u00e9\"]}"),
                        "field 'tags[0]' must be at most 2 characters");
    assert_null(check_msg(doc, "T", "{\"name\":\"a\",\"tags\":[\"\\u00e9\\u00e9\"]}"));
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"n\":0}"), "field 'n' must be at least 1");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"n\":9007199254740994}"),
                        "field 'n' must be at most 9007199254740993");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"n\":1.0}"),
                        "field 'n' must be an integer");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"f\":0.25}"),
                        "field 'f' must be at least 0.5");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"big\":2e12}"),
                        "field 'big' must be at most 1000000000000");
    assert_null(check_msg(doc, "T", "{\"name\":\"a\",\"tl\":null,\"big\":1000}"));
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"tl\":\"x\"}"),
                        "field 'tl' must be an integer or null");
    assert_null(check_msg(doc, "T", "{\"name\":\"a\",\"f\":1}"));
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"b\":1}"),
                        "field 'b' must be true or false");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"e\":\"c\"}"),
                        "field 'e' ('c') must be one of: a, b");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"z\":1}"),
                        "field 'z' must be a string or null");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"name2\":null}"),
                        "unknown field 'name2'");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"tags\":[]}"),
                        "field 'tags' must not be empty");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"tags\":[\"a\",\"b\",\"c\",\"d\"]}"),
                        "field 'tags' must have at most 3 items");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"tags\":[\"a\",\"a\"]}"),
                        "field 'tags' must not repeat an item");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"tags\":[\"a\",5]}"),
                        "field 'tags[1]' must be a string");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"labels\":{\"rack\":1}}"),
                        "field 'labels.rack' must be a string");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"labels\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\"}}"),
                        "field 'labels' must have at most 2 entries");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"labels\":{}}"),
                        "field 'labels' must not be empty");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"sub\":{}}"), "field 'sub.k' is required");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"sub\":{\"k\":1,\"j\":2}}"),
                        "unknown field 'sub.j'");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"both\":1}"), "field 'both' must be at least 2");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\",\"both\":5}"), "field 'both' must be at most 4");
    assert_string_equal(check_msg(doc, "T", "[1]"), "request body must be an object");
    assert_string_equal(check_msg(doc, "T", "{\"name\":\"a\\u0000b\"}"),
                        "field 'name' must not contain NUL bytes");
    /* a schema that cannot be followed is the server's fault, never the caller's */
    gp_err err = GP_ERR_INIT;
    json_t *v = json_object();
    json_t *loop = json_pack("{s:s}", "$ref", "#/components/schemas/Loop");
    json_t *out = json_pack("{s:s}", "$ref", "#/components/schemas/Out");
    assert_int_equal(api_schema_check(doc, loop, v, &err), GP_EINTERNAL);
    assert_int_equal(api_schema_check(doc, out, v, &err), GP_EINTERNAL);
    char kw[80];
    assert_false(api_schema_keywords_ok(doc, out, kw, sizeof kw));
    json_t *odd = json_pack("{s:s,s:[{s:s}]}", "type", "object", "oneOf", "type", "string");
    assert_false(api_schema_keywords_ok(doc, odd, kw, sizeof kw));
    assert_string_equal(kw, "oneOf");
    json_t *t = json_pack("{s:s}", "$ref", "#/components/schemas/T");
    assert_true(api_schema_keywords_ok(doc, t, kw, sizeof kw));
    json_decref(t);
    json_decref(odd);
    json_decref(loop);
    json_decref(out);
    json_decref(v);
    json_decref(doc);
}

/* Every route that takes a JSON body has its schema in the document, in keywords the check
 * knows, and the document's examples of bodies pass it. */
static void every_body_declared(void **state) {
    (void)state;
    json_t *doc = json_loads(api_openapi_json(), 0, NULL);
    assert_non_null(doc);
    int bodies = 0, examples = 0;
    for (size_t i = 0; i < api_nroutes; i++) {
        const api_route *rt = &api_routes[i];
        const json_t *s = api_schema_body_of(doc, rt->method, rt->pattern);
        if (!(rt->flags & ROUTE_BODY) || (rt->flags & ROUTE_GATEWAY)) continue;
        if (!s) fprintf(stderr, "a route takes a body with no schema: %s %s\n", rt->method, rt->pattern);
        assert_non_null(s);
        char kw[120];
        if (!api_schema_keywords_ok(doc, s, kw, sizeof kw))
            fprintf(stderr, "%s %s: the body schema uses '%s', which the check does not know\n",
                    rt->method, rt->pattern, kw);
        assert_true(api_schema_keywords_ok(doc, s, kw, sizeof kw));
        bodies++;
        /* its example, where the schema (or its $ref) gives one */
        const json_t *r = s;
        const char *ref = json_string_value(json_object_get(s, "$ref"));
        if (ref && strncmp(ref, "#/components/schemas/", 21) == 0)
            r = json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
                                ref + 21);
        json_t *ex = json_object_get(r, "example");
        if (ex) {
            gp_err err = GP_ERR_INIT;
            if (api_schema_check(doc, s, ex, &err))
                fprintf(stderr, "%s %s: its own example fails: %s\n", rt->method, rt->pattern,
                        err.msg);
            assert_int_equal(api_schema_check(doc, s, ex, &err), GP_OK);
            examples++;
        }
    }
    fprintf(stderr, "body schemas: %d routes, %d examples checked\n", bodies, examples);
    assert_true(bodies >= 50 && examples >= 30);
    json_decref(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_route_documented),
        cmocka_unit_test(nothing_stale_documented),
        cmocka_unit_test(schema_keywords),
        cmocka_unit_test(every_body_declared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
