/*
 * jsonx.c - bounded JSON parsing and typed member access (see jsonx.h).
 */
#include "jsonx.h"

#include "gtime.h"

#include <string.h>

int jx_depth(const char *text, size_t len, int max) {
    int depth = 0, deepest = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
            if (deepest > max) return max + 1;
        } else if (c == ']' || c == '}') {
            if (depth > 0) depth--;
        }
    }
    return deepest;
}

int jx_parse(const char *text, size_t len, int max_depth, int require_object, json_t **out,
             gp_err *err) {
    json_error_t je;
    *out = NULL;
    if (jx_depth(text, len, max_depth) > max_depth)
        return gp_err_set(err, GP_EINVALID, "JSON nested deeper than %d levels", max_depth);
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    if (!v)
        return gp_err_set(err, GP_EBADJSON, "malformed JSON at line %d column %d: %s", je.line,
                          je.column, je.text);
    if (require_object && !json_is_object(v)) {
        json_decref(v);
        return gp_err_set(err, GP_EINVALID, "request body must be a JSON object");
    }
    *out = v;
    return GP_OK;
}

static json_t *member(json_t *obj, const char *key) {
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return (v && json_is_null(v)) ? NULL : v;
}

int jx_get_str(json_t *obj, const char *key, int required, const char **out, gp_err *err) {
    json_t *v = member(obj, key);
    *out = NULL;
    if (!v) return required ? gp_err_set(err, GP_EINVALID, "field '%s' is required", key) : GP_OK;
    if (!json_is_string(v)) return gp_err_set(err, GP_EINVALID, "field '%s' must be a string", key);
    *out = json_string_value(v);
    if (strlen(*out) != json_string_length(v))
        return gp_err_set(err, GP_EINVALID, "field '%s' must not contain NUL bytes", key);
    return GP_OK;
}

int jx_get_int(json_t *obj, const char *key, int required, int64_t *out, int *present,
               gp_err *err) {
    json_t *v = member(obj, key);
    if (present) *present = v != NULL;
    if (!v) return required ? gp_err_set(err, GP_EINVALID, "field '%s' is required", key) : GP_OK;
    if (!json_is_integer(v))
        return gp_err_set(err, GP_EINVALID, "field '%s' must be an integer", key);
    *out = (int64_t)json_integer_value(v);
    return GP_OK;
}

int jx_get_bool(json_t *obj, const char *key, int required, int *out, int *present, gp_err *err) {
    json_t *v = member(obj, key);
    if (present) *present = v != NULL;
    if (!v) return required ? gp_err_set(err, GP_EINVALID, "field '%s' is required", key) : GP_OK;
    if (!json_is_boolean(v))
        return gp_err_set(err, GP_EINVALID, "field '%s' must be true or false", key);
    *out = json_is_true(v);
    return GP_OK;
}

int jx_only_fields(json_t *obj, const char *const *allowed, gp_err *err) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, key) == 0) ok = 1;
        if (!ok) return gp_err_set(err, GP_EINVALID, "unknown field '%.64s'", key);
    }
    return GP_OK;
}

json_t *jx_time(int64_t us) {
    char ts[GT_RFC3339_LEN];
    if (!us) return json_null();
    gt_format_us(us, ts, sizeof ts);
    return json_string(ts);
}

char *jx_dump(const json_t *v) { return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY); }

int gp_name_valid(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return 0;
    }
    return s[0] != '-' && s[n - 1] != '-';
}
