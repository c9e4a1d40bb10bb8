/*
 * router.h - match "METHOD /path" against a table of route patterns (pure).
 *
 * Patterns are literal segments and `{name}` parameters, e.g.
 * "/api/v1/tenants/{tenant}/projects/{project}".  A parameter matches one
 * non-empty segment.  Matching is exact (no trailing-slash slack, no
 * prefixes); the first route in table order wins.  Captured values point
 * into a copy of the path owned by the router_match result.
 */
#ifndef GP_ROUTER_H
#define GP_ROUTER_H

#include <stddef.h>

#define ROUTER_MAX_PARAMS 8
#define ROUTER_MAX_SEGMENTS 16
#define ROUTER_PATH_MAX 1024

typedef struct router_match {
    int route;              /* index into the table, -1 when nothing matched */
    int path_matched;       /* 1 if some route matched the path but not the method */
    int nparams;
    const char *names[ROUTER_MAX_PARAMS];  /* borrowed from the pattern */
    size_t name_lens[ROUTER_MAX_PARAMS];
    char *values[ROUTER_MAX_PARAMS];       /* point into `buf` */
    char buf[ROUTER_PATH_MAX];
} router_match;

/*
 * Match `method` and `path` against patterns[i] / methods[i] for i < n.
 * Fills *m.  Returns m->route (or -1).  Paths longer than ROUTER_PATH_MAX or
 * with more than ROUTER_MAX_SEGMENTS segments never match.
 */
int router_find(const char *const *methods, const char *const *patterns, size_t n,
                const char *method, const char *path, router_match *m);

/* Value of parameter `name` in a successful match, or NULL. */
const char *router_param(const router_match *m, const char *name);

/*
 * Check a request target before it is routed (pure).  `raw` is the target as
 * received, before percent-decoding, with its query; `raw_len` its length in
 * bytes, which exceeds strlen(raw) when it holds a NUL byte; `path` the path
 * libmicrohttpd decoded from it.  Returns NULL when the target is acceptable,
 * otherwise a short static reason for a 400.  Refused: a NUL byte or "%00"
 * anywhere; in the path an encoded slash or backslash ("%2F", "%5C"), a raw
 * backslash, '#', a byte that is a control character, a space or not ASCII;
 * a decoded path with a control character, or a "." or ".." segment.
 */
const char *router_check_target(const char *raw, size_t raw_len, const char *path);

/* A request header as received: name and value (NUL-terminated, borrowed). */
typedef struct router_hdr {
    const char *key, *value;
} router_hdr;

/*
 * Check a request's headers for framing ambiguity (pure).  `http11`: the
 * request says HTTP/1.1 (or later).  Returns NULL when acceptable, otherwise
 * a short static reason for a 400.  Refused: a name that is not an HTTP token
 * (e.g. a space before the colon), a value with a control character other
 * than tab, a Content-Length that is not 1*DIGIT (a folded, signed or
 * listed one), more than one Content-Length, Transfer-Encoding, Host or
 * Authorization, Content-Length together with Transfer-Encoding, a
 * Transfer-Encoding other than "chunked" or in an HTTP/1.0 request, and an
 * HTTP/1.1 request without Host.
 */
const char *router_check_headers(const router_hdr *h, size_t n, int http11);

#endif
