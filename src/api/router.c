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

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

const char *router_check_target(const char *raw, size_t raw_len, const char *path) {
    if (!raw || !path) return "no request target";
    if (memchr(raw, '\0', raw_len)) return "NUL byte in the request target";
    int in_path = 1;
    for (size_t i = 0; i < raw_len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '?') in_path = 0;
        if (c == '%' && i + 2 < raw_len && hexval(raw[i + 1]) >= 0 && hexval(raw[i + 2]) >= 0) {
            int v = hexval(raw[i + 1]) * 16 + hexval(raw[i + 2]);
            if (v == 0) return "encoded NUL (%00) in the request target";
            if (in_path && v == '/') return "encoded slash (%2F) in the path";
            if (in_path && v == '\\') return "encoded backslash (%5C) in the path";
        }
        if (!in_path) continue;
        if (c <= 0x20 || c >= 0x7f) return "control, space or non-ASCII byte in the path";
        if (c == '\\') return "backslash in the path";
        if (c == '#') return "fragment in the request target";
    }
    const char *seg = path;
    for (const char *p = path;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '/' || c == '\0') {
            size_t len = (size_t)(p - seg);
            if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                return "dot segment in the path";
            seg = p + 1;
            if (!c) break;
            continue;
        }
        if (c < 0x20 || c == 0x7f) return "control character in the decoded path";
    }
    return NULL;
}

/* RFC 9110 token characters */
static int is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int name_is(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a, y = *b;
        if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
        if (x != y) return 0;
    }
    return *a == *b;
}

const char *router_check_headers(const router_hdr *h, size_t n, int http11) {
    int cl = 0, te = 0, host = 0, authz = 0;
    const char *te_value = NULL;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *k = (const unsigned char *)h[i].key;
        const unsigned char *v = (const unsigned char *)h[i].value;
        if (!k || !*k) return "empty header name";
        for (; *k; k++)
            if (!is_tchar(*k)) return "header name is not a token (space before the colon?)";
        for (; v && *v; v++)
            if ((*v < 0x20 && *v != '\t') || *v == 0x7f) return "control character in a header value";
        if (name_is(h[i].key, "Content-Length")) {
            /* 1*DIGIT and nothing else: a folded ("2\r\n 0"), signed or listed length is
             * one a proxy in front may read otherwise */
            const char *d = h[i].value ? h[i].value : "";
            if (!*d) return "Content-Length is not a number";
            for (; *d; d++)
                if (*d < '0' || *d > '9') return "Content-Length is not a number";
            cl++;
        } else if (name_is(h[i].key, "Transfer-Encoding")) {
            te++;
            te_value = h[i].value;
        } else if (name_is(h[i].key, "Host")) host++;
        else if (name_is(h[i].key, "Authorization")) authz++;
    }
    if (cl > 1) return "more than one Content-Length";
    if (te > 1) return "more than one Transfer-Encoding";
    if (cl && te) return "both Content-Length and Transfer-Encoding";
    if (te && !http11) return "Transfer-Encoding in an HTTP/1.0 request";
    if (te && !name_is(te_value ? te_value : "", "chunked"))
        return "Transfer-Encoding other than chunked";
    if (host > 1) return "more than one Host";
    if (http11 && !host) return "HTTP/1.1 request without Host";
    if (authz > 1) return "more than one Authorization";
    return NULL;
}
