/*
 * fuzz_json.c - libFuzzer target: request-body JSON decoding (jx_parse and
 * the jx_get_* field readers, src/core/jsonx.h) under the server's limits.
 *
 * Input: any bytes, parsed as a request body with the default nesting limit
 * (API_CONFIG_DEFAULTS: 32) and, on the first byte's low bit, as an object
 * only.  Invariants checked:
 *   - a rejection leaves *out NULL and an error code and message set;
 *   - an accepted value is nested no deeper than the limit, is an object
 *     when one was required, and re-dumps (jx_dump) to text that jx_parse
 *     accepts again under the same limits, equal to the first value;
 *   - the typed readers never crash and agree with the value's type.
 * Everything is freed; the fuzzer fails on leaks.  See docs/fuzzing.md.
 */
#include "../../src/core/jsonx.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32 /* api_config.max_depth's default */

/* The real nesting depth of a parsed value (a scalar is 0). */
static int value_depth(json_t *v) {
    int deepest = 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            int d = value_depth(e);
            if (d > deepest) deepest = d;
        }
        return deepest + 1;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e) {
            int d = value_depth(e);
            if (d > deepest) deepest = d;
        }
        return deepest + 1;
    }
    return 0;
}

/* Read every member through the typed helpers, as handlers do. */
static void read_fields(json_t *obj) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        gp_err err = GP_ERR_INIT;
        const char *s = NULL;
        int64_t i = 0;
        int b = 0, present = 0;
        int rc = jx_get_str(obj, k, 0, &s, &err);
        assert(rc == GP_OK || rc == GP_EINVALID);
        if (rc == GP_OK && s) assert(json_is_string(v) && strlen(s) == json_string_length(v));
        rc = jx_get_int(obj, k, 1, &i, &present, &err);
        assert((rc == GP_OK) == json_is_integer(v));
        rc = jx_get_bool(obj, k, 0, &b, &present, &err);
        assert(rc == GP_OK || rc == GP_EINVALID);
        assert(present == !json_is_null(v));
        (void)gp_name_valid(k);
    }
    static const char *const allowed[] = {"name", "description", "units", NULL};
    gp_err err = GP_ERR_INIT;
    int rc = jx_only_fields(obj, allowed, &err);
    assert(rc == GP_OK || (rc == GP_EINVALID && err.msg[0]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int require_object = size > 0 && (data[0] & 1);
    gp_err err = GP_ERR_INIT;
    json_t *v = (json_t *)1;
    int rc = jx_parse((const char *)data, size, MAX_DEPTH, require_object, &v, &err);
    if (rc != GP_OK) {
        assert(v == NULL);
        assert(rc == GP_EBADJSON || rc == GP_EINVALID);
        assert(err.code == rc && err.msg[0]);
        return 0;
    }
    assert(v);
    assert(value_depth(v) <= MAX_DEPTH);
    assert(jx_depth((const char *)data, size, MAX_DEPTH) <= MAX_DEPTH);
    if (require_object) assert(json_is_object(v));

    char *text = jx_dump(v);
    assert(text);
    json_t *again = NULL;
    gp_err err2 = GP_ERR_INIT;
    rc = jx_parse(text, strlen(text), MAX_DEPTH, require_object, &again, &err2);
    if (rc != GP_OK) {
        /* report what did not round-trip before failing */
        fprintf(stderr, "re-dump rejected: %s\ntext: %s\n", err2.msg, text);
        abort();
    }
    assert(json_equal(v, again));
    json_decref(again);
    free(text);

    if (json_is_object(v)) read_fields(v);
    json_decref(v);
    return 0;
}
