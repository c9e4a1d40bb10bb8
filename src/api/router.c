/*
 * router.c - segment-wise route matching (see router.h).
 */
#include "router.h"

#include <string.h>

/* Split a copy of path into segments (in place). Returns count or -1. */
static int split(char *buf, char **segs) {
    int n = 0;
    char *p = buf;
    if (*p != '/') return -1;
    while (*p == '/') {
        *p++ = '\0';
        if (n == ROUTER_MAX_SEGMENTS) return -1;
        segs[n++] = p;
        while (*p && *p != '/') p++;
    }
    if (*p) return -1;
    return n;
}

static int match_one(const char *pattern, char **segs, int nseg, router_match *m) {
    const char *p = pattern;
    int i = 0, np = 0;
    while (*p == '/') {
        p++;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (i >= nseg) return 0;
        const char *seg = segs[i];
        if (len >= 2 && p[0] == '{' && p[len - 1] == '}') {
            if (!*seg || np == ROUTER_MAX_PARAMS) return 0;
            m->names[np] = p + 1;
            m->name_lens[np] = len - 2;
            m->values[np] = (char *)seg;
            np++;
        } else if (strlen(seg) != len || memcmp(seg, p, len) != 0) {
            return 0;
        }
        i++;
        p += len;
    }
    if (i != nseg) return 0;
    m->nparams = np;
    return 1;
}

int router_find(const char *const *methods, const char *const *patterns, size_t n,
                const char *method, const char *path, router_match *m) {
    char *segs[ROUTER_MAX_SEGMENTS];
    memset(m, 0, sizeof *m);
    m->route = -1;
    size_t len = strlen(path);
    if (len >= ROUTER_PATH_MAX) return -1;
    memcpy(m->buf, path, len + 1);
    int nseg = split(m->buf, segs);
    if (nseg < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (!match_one(patterns[i], segs, nseg, m)) continue;
        if (strcmp(methods[i], method) == 0) {
            m->route = (int)i;
            return m->route;
        }
        m->path_matched = 1;
    }
    m->nparams = 0;
    return -1;
}

const char *router_param(const router_match *m, const char *name) {
    size_t len = strlen(name);
    for (int i = 0; i < m->nparams; i++)
        if (m->name_lens[i] == len && memcmp(m->names[i], name, len) == 0) return m->values[i];
    return NULL;
}
