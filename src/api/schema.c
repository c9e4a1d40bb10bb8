/*
 * schema.c - request bodies checked against the schemas of docs/openapi.json
 * (issue 34, item 1: each route declares its body schema).
 *
 * A route's body schema is its operation's requestBody in the OpenAPI
 * document embedded in the binary: the row names its method and pattern, the
 * document says what the body may hold, and dispatch checks a body against it
 * before the handler reads it (api.c run_pipeline).  So what the reference
 * says is what is enforced, in one place, with one wording of each error.
 *
 * The check is a subset of JSON Schema (the OpenAPI 3.0 dialect), the
 * keywords the document uses for request bodies: type (with nullable), enum,
 * properties, required, additionalProperties (false or a schema),
 * minProperties, maxProperties, items, minItems, maxItems, uniqueItems, minLength and
 * maxLength (in characters), pattern (POSIX extended, searched as JSON Schema
 * says), minimum, maximum, allOf and $ref (#/components/schemas/...).  The
 * annotations (description, example, default, format, title) change nothing.
 * api_schema_keywords_ok() says whether a schema uses only these: a unit test
 * runs it over every request schema, so a keyword the check would ignore
 * cannot slip into the document.
 *
 * api_schema_check() is pure: the document and the value in, a decision out.
 */
#include "api_int.h"

#include <pthread.h>
#include <regex.h>
#include <string.h>

enum { PATH_MAX_LEN = 160, REF_DEPTH = 16 };

typedef struct walk {
    const json_t *doc;
    gp_err *err;
    char path[PATH_MAX_LEN]; /* the field being checked: "", "name", "limits.gpus", "after[1]" */
} walk;

static const char *const keywords[] = {
    "type", "nullable", "enum", "properties", "required", "additionalProperties", "maxProperties",
    "minProperties",
    "items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern",
    "minimum", "maximum", "allOf", "$ref",
    /* annotations */
    "description", "example", "default", "format", "title", "readOnly", "writeOnly", NULL};

static const json_t *resolve(const json_t *doc, const json_t *s) {
    for (int i = 0; i < REF_DEPTH && json_is_object(s); i++) {
        const char *ref = json_string_value(json_object_get(s, "$ref"));
        if (!ref) return s;
        static const char pre[] = "#/components/schemas/";
        if (strncmp(ref, pre, sizeof pre - 1) != 0) return NULL;
        s = json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
                            ref + sizeof pre - 1);
    }
    return json_is_object(s) && !json_object_get(s, "$ref") ? s : NULL; /* a loop */
}

static int bad(walk *w, const char *fmt, const char *what) {
    if (w->path[0])
        return gp_err_set(w->err, GP_EINVALID, "field '%s' %s%s", w->path, fmt, what ? what : "");
    return gp_err_set(w->err, GP_EINVALID, "request body %s%s", fmt, what ? what : "");
}

static int badf(walk *w, const char *fmt, long long n) {
    char what[64];
    snprintf(what, sizeof what, fmt, n);
    return bad(w, what, NULL);
}

/* the number of characters (code points) of a UTF-8 string jansson has checked */
static size_t chars(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
    return n;
}

static int type_ok(const char *type, const json_t *v) {
    if (strcmp(type, "string") == 0) return json_is_string(v);
    if (strcmp(type, "integer") == 0) return json_is_integer(v);
    if (strcmp(type, "number") == 0) return json_is_number(v);
    if (strcmp(type, "boolean") == 0) return json_is_boolean(v);
    if (strcmp(type, "object") == 0) return json_is_object(v);
    if (strcmp(type, "array") == 0) return json_is_array(v);
    return 0;
}

static const char *type_words(const char *type) {
    if (strcmp(type, "string") == 0) return "a string";
    if (strcmp(type, "integer") == 0) return "an integer";
    if (strcmp(type, "number") == 0) return "a number";
    if (strcmp(type, "boolean") == 0) return "true or false";
    if (strcmp(type, "object") == 0) return "an object";
    if (strcmp(type, "array") == 0) return "an array";
    return type;
}

static int check(walk *w, const json_t *s, const json_t *v);

/* check `v` as the member `key` (or the item `index` when key is NULL) of the current field */
static int check_in(walk *w, const json_t *s, const json_t *v, const char *key, size_t index) {
    char saved[PATH_MAX_LEN];
    memcpy(saved, w->path, sizeof saved);
    size_t n = strlen(w->path);
    if (key)
        snprintf(w->path + n, sizeof w->path - n, "%s%.64s", n ? "." : "", key);
    else
        snprintf(w->path + n, sizeof w->path - n, "[%zu]", index);
    int rc = check(w, s, v);
    memcpy(w->path, saved, sizeof saved);
    return rc;
}

static int check_string(walk *w, const json_t *s, const json_t *v) {
    const char *str = json_string_value(v);
    size_t len = json_string_length(v);
    if (strlen(str) != len) return bad(w, "must not contain NUL bytes", NULL);
    size_t n = chars(str, len);
    json_t *k;
    if ((k = json_object_get(s, "minLength")) && (json_int_t)n < json_integer_value(k))
        return json_integer_value(k) == 1 ? bad(w, "must not be empty", NULL)
                                          : badf(w, "must be at least %lld characters",
                                                 (long long)json_integer_value(k));
    if ((k = json_object_get(s, "maxLength")) && (json_int_t)n > json_integer_value(k))
        return badf(w, "must be at most %lld characters", (long long)json_integer_value(k));
    const char *pat = json_string_value(json_object_get(s, "pattern"));
    if (pat) {
        regex_t re;
        if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB))
            return gp_err_set(w->err, GP_EINTERNAL, "the schema's pattern for '%s' does not compile",
                              w->path);
        int m = regexec(&re, str, 0, NULL, 0);
        regfree(&re);
        if (m) {
            const char *d = json_string_value(json_object_get(s, "description"));
            char what[80];
            snprintf(what, sizeof what, "('%.64s%s') ", str, len > 64 ? "..." : "");
            char lead[112];
            snprintf(lead, sizeof lead, "%sis not valid: ", what);
            if (d) return bad(w, lead, d);
            snprintf(lead, sizeof lead, "%smust match ", what);
            return bad(w, lead, pat);
        }
    }
    return GP_OK;
}

static int check_number(walk *w, const json_t *s, const json_t *v) {
    static const char *const bound[2] = {"minimum", "maximum"};
    for (int hi = 0; hi < 2; hi++) {
        const json_t *k = json_object_get(s, bound[hi]);
        if (!json_is_number(k)) continue;
        int out; /* integers compared exactly (beyond a double's precision too) */
        if (json_is_integer(k) && json_is_integer(v))
            out = hi ? json_integer_value(v) > json_integer_value(k)
                     : json_integer_value(v) < json_integer_value(k);
        else
            out = hi ? json_number_value(v) > json_number_value(k)
                     : json_number_value(v) < json_number_value(k);
        if (!out) continue;
        char what[64];
        double b = json_number_value(k);
        if (json_is_integer(k))
            snprintf(what, sizeof what, "%lld", (long long)json_integer_value(k));
        else if (b == (double)(long long)b && b > -9e15 && b < 9e15)
            snprintf(what, sizeof what, "%lld", (long long)b);
        else
            snprintf(what, sizeof what, "%g", b);
        return bad(w, hi ? "must be at most " : "must be at least ", what);
    }
    return GP_OK;
}

static int check_object(walk *w, const json_t *s, const json_t *v) {
    json_t *props = json_object_get(s, "properties");
    json_t *extra = json_object_get(s, "additionalProperties");
    json_t *k, *req = json_object_get(s, "required");
    size_t i;
    json_array_foreach(req, i, k) {
        const char *name = json_string_value(k);
        if (name && !json_object_get(v, name)) {
            char saved[PATH_MAX_LEN];
            memcpy(saved, w->path, sizeof saved);
            size_t n = strlen(w->path);
            snprintf(w->path + n, sizeof w->path - n, "%s%.64s", n ? "." : "", name);
            int rc = bad(w, "is required", NULL);
            memcpy(w->path, saved, sizeof saved);
            return rc;
        }
    }
    if ((k = json_object_get(s, "maxProperties")) &&
        (json_int_t)json_object_size(v) > json_integer_value(k))
        return badf(w, "must have at most %lld entries", (long long)json_integer_value(k));
    if ((k = json_object_get(s, "minProperties")) &&
        (json_int_t)json_object_size(v) < json_integer_value(k))
        return json_integer_value(k) == 1 ? bad(w, "must not be empty", NULL)
                                          : badf(w, "must have at least %lld entries",
                                                 (long long)json_integer_value(k));
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m) {
        const json_t *ps = json_object_get(props, key);
        if (!ps) {
            if (json_is_false(extra)) {
                size_t n = strlen(w->path);
                if (n)
                    return gp_err_set(w->err, GP_EINVALID, "unknown field '%s.%.64s'", w->path, key);
                return gp_err_set(w->err, GP_EINVALID, "unknown field '%.64s'", key);
            }
            if (!json_is_object(extra)) continue;
            ps = extra;
        }
        int rc = check_in(w, ps, m, key, 0);
        if (rc) return rc;
    }
    return GP_OK;
}

static int check_array(walk *w, const json_t *s, const json_t *v) {
    size_t n = json_array_size(v);
    json_t *k;
    if ((k = json_object_get(s, "minItems")) && (json_int_t)n < json_integer_value(k))
        return json_integer_value(k) == 1 ? bad(w, "must not be empty", NULL)
                                          : badf(w, "must have at least %lld items",
                                                 (long long)json_integer_value(k));
    if ((k = json_object_get(s, "maxItems")) && (json_int_t)n > json_integer_value(k))
        return badf(w, "must have at most %lld items", (long long)json_integer_value(k));
    if (json_is_true(json_object_get(s, "uniqueItems")))
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (json_equal(json_array_get(v, i), json_array_get(v, j)))
                    return bad(w, "must not repeat an item", NULL);
    const json_t *items = json_object_get(s, "items");
    if (items)
        for (size_t i = 0; i < n; i++) {
            int rc = check_in(w, items, json_array_get(v, i), NULL, i);
            if (rc) return rc;
        }
    return GP_OK;
}

static int check(walk *w, const json_t *s0, const json_t *v) {
    const json_t *s = resolve(w->doc, s0);
    if (!s) return gp_err_set(w->err, GP_EINTERNAL, "the body schema has a reference it cannot resolve");
    json_t *all = json_object_get(s, "allOf"), *k;
    size_t i;
    json_array_foreach(all, i, k) {
        int rc = check(w, k, v);
        if (rc) return rc;
    }
    /* type: one name, or a list of them ("null" among them as nullable: true says) */
    const json_t *type = json_object_get(s, "type");
    int nullable = json_is_true(json_object_get(s, "nullable"));
    if (json_is_array(type)) {
        json_array_foreach(type, i, k) if (json_is_string(k) && !strcmp(json_string_value(k), "null")) nullable = 1;
    }
    if (json_is_null(v) && nullable) return GP_OK;
    if (type) {
        int fits = 0;
        char what[96] = "";
        size_t n = 0;
        if (json_is_string(type)) {
            fits = type_ok(json_string_value(type), v);
            n += (size_t)snprintf(what, sizeof what, "%s", type_words(json_string_value(type)));
        } else {
            json_array_foreach(type, i, k) {
                const char *t = json_string_value(k);
                if (!t || !strcmp(t, "null")) continue;
                if (type_ok(t, v)) fits = 1;
                if (n < sizeof what)
                    n += (size_t)snprintf(what + n, sizeof what - n, "%s%s", n ? " or " : "",
                                          type_words(t));
            }
        }
        if (!fits) {
            if (nullable && n < sizeof what) snprintf(what + n, sizeof what - n, " or null");
            return bad(w, "must be ", what);
        }
    }
    json_t *en = json_object_get(s, "enum");
    if (json_is_array(en)) {
        int found = 0;
        json_array_foreach(en, i, k) if (json_equal(k, (json_t *)v)) found = 1;
        if (!found) {
            char list[200] = "";
            size_t n = 0;
            json_array_foreach(en, i, k) {
                const char *e = json_string_value(k);
                if (e && n < sizeof list)
                    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", e);
            }
            char lead[64] = "must be one of: ";
            if (json_is_string(v))
                snprintf(lead, sizeof lead, "('%.32s%s') must be one of: ", json_string_value(v),
                         json_string_length(v) > 32 ? "..." : "");
            return bad(w, lead, list);
        }
    }
    if (json_is_string(v)) return check_string(w, s, v);
    if (json_is_number(v)) return check_number(w, s, v);
    if (json_is_object(v)) return check_object(w, s, v);
    if (json_is_array(v)) return check_array(w, s, v);
    return GP_OK;
}

int api_schema_check(const json_t *doc, const json_t *schema, const json_t *v, gp_err *err) {
    walk w = {.doc = doc, .err = err};
    return check(&w, schema, v);
}

/* every keyword of `s` (and its subschemas, through $ref) is one the check knows */
static int keywords_ok(const json_t *doc, const json_t *s0, int depth, char *bad_kw, size_t n) {
    if (depth > REF_DEPTH * 4) return 1;
    const json_t *s = resolve(doc, s0);
    if (!s) {
        snprintf(bad_kw, n, "$ref (unresolved)");
        return 0;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)s, key, v) {
        int known = 0;
        for (const char *const *k = keywords; *k; k++)
            if (strcmp(*k, key) == 0) known = 1;
        if (!known) {
            snprintf(bad_kw, n, "%s", key);
            return 0;
        }
    }
    const char *pat = json_string_value(json_object_get(s, "pattern"));
    if (pat) {
        regex_t re;
        if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB)) {
            snprintf(bad_kw, n, "pattern %s (does not compile)", pat);
            return 0;
        }
        regfree(&re);
    }
    json_object_foreach(json_object_get(s, "properties"), key, v)
        if (!keywords_ok(doc, v, depth + 1, bad_kw, n)) return 0;
    json_t *e = json_object_get(s, "additionalProperties");
    if (json_is_object(e) && !keywords_ok(doc, e, depth + 1, bad_kw, n)) return 0;
    if ((e = json_object_get(s, "items")) && !keywords_ok(doc, e, depth + 1, bad_kw, n)) return 0;
    size_t i;
    json_array_foreach(json_object_get(s, "allOf"), i, v)
        if (!keywords_ok(doc, v, depth + 1, bad_kw, n)) return 0;
    return 1;
}

int api_schema_keywords_ok(const json_t *doc, const json_t *schema, char *bad_kw, size_t n) {
    return keywords_ok(doc, schema, 0, bad_kw, n);
}

/* ---- the embedded document and each route's body schema, found once ---- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static json_t *the_doc;             /* immutable once loaded */
static const json_t **route_schema; /* [api_nroutes]: borrowed from the_doc, NULL none */

const json_t *api_schema_body_of(const json_t *doc, const char *method, const char *pattern) {
    char m[16];
    size_t i = 0;
    for (; method[i] && i + 1 < sizeof m; i++)
        m[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
    m[i] = '\0';
    const json_t *op = json_object_get(json_object_get(json_object_get(doc, "paths"), pattern), m);
    const json_t *rb = json_object_get(op, "requestBody");
    return json_object_get(json_object_get(json_object_get(rb, "content"), "application/json"),
                           "schema");
}

static void load(void) {
    the_doc = json_loads(api_openapi_json(), 0, NULL);
    route_schema = calloc(api_nroutes ? api_nroutes : 1, sizeof *route_schema);
    if (!the_doc || !route_schema) return; /* no checks: the unit test fails the build first */
    for (size_t i = 0; i < api_nroutes; i++)
        if ((api_routes[i].flags & ROUTE_BODY) && !(api_routes[i].flags & ROUTE_GATEWAY))
            route_schema[i] = api_schema_body_of(the_doc, api_routes[i].method,
                                                 api_routes[i].pattern);
}

int api_schema_route_check(const api_route *rt, const json_t *body, gp_err *err) {
    pthread_once(&once, load);
    if (!route_schema || !rt || rt < api_routes || rt >= api_routes + api_nroutes) return GP_OK;
    const json_t *s = route_schema[rt - api_routes];
    return s ? api_schema_check(the_doc, s, body, err) : GP_OK;
}
