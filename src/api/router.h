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

#endif
