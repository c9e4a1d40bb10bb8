/*
 * fuzz_router.c - libFuzzer target: route matching and path parameters
 * (router_find / router_param, src/api/router.h).
 *
 * Input: "METHOD\nPATH" matched against the API's real route table
 * (api_route_method/api_route_pattern), or, when the first byte is '#',
 * "#PATTERN\n...\n\nMETHOD\nPATH": a table of fuzzer-made patterns (all
 * with method GET, then the same patterns with POST).  Invariants:
 *   - a match's method is the request's, and no earlier row matches both;
 *   - each parameter value is non-empty, has no '/', and sits in the path
 *     at the place of its {name} segment: substituting the values into the
 *     pattern gives back the path exactly;
 *   - router_param(name) returns the first value of that name;
 *   - no match leaves route -1 and no parameters;
 *   - router_check_target() on the raw input (NULs included) as the target
 *     and its text as the path: a NUL, "%00", "%2F" or "%5C" before any '?'
 *     is always refused, and an accepted path holds no control character.
 */
#include "../../src/api/api.h"
#include "../../src/api/router.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 32

/* Rebuild the path from a pattern and a match's values; 1 if equal to `path`. */
static int rebuild_equals(const char *pattern, const router_match *m, const char *path) {
    char out[ROUTER_PATH_MAX * 2];
    size_t o = 0;
    int np = 0;
    const char *p = pattern;
    while (*p == '/') {
        p++;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *seg = p;
        size_t sl = len;
        if (len >= 2 && p[0] == '{' && p[len - 1] == '}') {
            assert(np < m->nparams);
            assert(m->name_lens[np] == len - 2 && memcmp(m->names[np], p + 1, len - 2) == 0);
            seg = m->values[np];
            sl = strlen(seg);
            np++;
        }
        if (o + 1 + sl >= sizeof out) return 0;
        out[o++] = '/';
        memcpy(out + o, seg, sl);
        o += sl;
        p += len;
    }
    out[o] = '\0';
    assert(np == m->nparams);
    return strcmp(out, path) == 0;
}

static void check(const char *const *methods, const char *const *patterns, size_t n,
                  const char *method, const char *path) {
    router_match *m = malloc(sizeof *m);
    assert(m);
    int r = router_find(methods, patterns, n, method, path, m);
    assert(r == m->route);
    if (r < 0) {
        assert(m->nparams == 0);
        free(m);
        return;
    }
    assert((size_t)r < n && strcmp(methods[r], method) == 0);
    assert(m->nparams >= 0 && m->nparams <= ROUTER_MAX_PARAMS);
    for (int i = 0; i < m->nparams; i++) {
        const char *v = m->values[i];
        assert(v >= m->buf && v < m->buf + sizeof m->buf);
        size_t off = (size_t)(v - m->buf), len = strlen(v);
        assert(len > 0 && !strchr(v, '/'));
        /* a substring of the path, at a segment of its own */
        assert(off > 0 && off + len <= strlen(path));
        assert(memcmp(path + off, v, len) == 0);
        assert(path[off - 1] == '/' && (path[off + len] == '/' || path[off + len] == '\0'));
        /* router_param finds the first parameter of this name (a fuzzed pattern's name may be
         * as long as the pattern: on the heap) */
        char *name = malloc(m->name_lens[i] + 1);
        assert(name);
        memcpy(name, m->names[i], m->name_lens[i]);
        name[m->name_lens[i]] = '\0';
        const char *got = router_param(m, name);
        free(name);
        int first = i;
        for (int j = 0; j < i; j++)
            if (m->name_lens[j] == m->name_lens[i] &&
                memcmp(m->names[j], m->names[i], m->name_lens[i]) == 0) {
                first = j;
                break;
            }
        assert(got == m->values[first]);
    }
    assert(rebuild_equals(patterns[r], m, path));
    /* first match wins: no earlier row with this method matches */
    router_match *m2 = malloc(sizeof *m2);
    assert(m2);
    for (int i = 0; i < r; i++) {
        if (strcmp(methods[i], method) != 0) continue;
        const char *one_m[1] = {methods[i]}, *one_p[1] = {patterns[i]};
        assert(router_find(one_m, one_p, 1, method, path, m2) == -1);
    }
    free(m2);
    free(m);
}

/* The target checks: what must be refused is refused; what passes is clean. */
static void check_target(const char *raw, size_t len, const char *path) {
    const char *why = router_check_target(raw, len, path);
    if (memchr(raw, '\0', len)) assert(why);
    const char *q = memchr(raw, '?', len);
    size_t plen = q ? (size_t)(q - raw) : len;
    for (size_t i = 0; i + 2 < plen; i++)
        if (raw[i] == '%' && (raw[i + 1] == '2' || raw[i + 1] == '5' || raw[i + 1] == '0') &&
            strchr(raw[i + 1] == '0' ? "0" : raw[i + 1] == '2' ? "fF" : "cC", raw[i + 2]))
            assert(why);
    if (!why)
        for (const char *p = path; *p; p++) assert((unsigned char)*p >= 0x20 && *p != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    assert(text);
    memcpy(text, data, size);
    text[size] = '\0'; /* C strings: stop at the first NUL, like the HTTP layer */
    check_target(text, size, text);
    if (text[0] == '#') {
        /* fuzzer-made table: lines until an empty one, then METHOD, PATH */
        const char *pats[MAX_ROWS], *meths[MAX_ROWS];
        size_t n = 0;
        char *p = text + 1, *nl;
        while ((nl = strchr(p, '\n')) && nl != p && n < MAX_ROWS / 2) {
            *nl = '\0';
            pats[n++] = p;
            p = nl + 1;
        }
        if (nl == p) p++;
        for (size_t i = 0; i < n; i++) {
            meths[i] = "GET";
            meths[n + i] = "POST";
            pats[n + i] = pats[i];
        }
        char *path = strchr(p, '\n');
        if (path) *path++ = '\0';
        check(meths, pats, 2 * n, p, path ? path : "/");
    } else {
        size_t n = api_route_count();
        const char **meths = malloc(n * sizeof *meths), **pats = malloc(n * sizeof *pats);
        assert(meths && pats);
        for (size_t i = 0; i < n; i++) {
            meths[i] = api_route_method(i);
            pats[i] = api_route_pattern(i);
        }
        char *path = strchr(text, '\n');
        if (path) *path++ = '\0';
        check(meths, pats, n, path ? text : "GET", path ? path : text);
        free(meths);
        free(pats);
    }
    free(text);
    return 0;
}
