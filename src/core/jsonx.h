/*
 * jsonx.h - jansson helpers: bounded parsing and typed field access.
 *
 * jx_parse() enforces a maximum nesting depth before handing the text to
 * jansson, so a hostile body cannot drive deep recursion.  The jx_get_*
 * helpers read optional or required object members and report a precise
 * error ("field 'units' must be an integer") through gp_err.
 *
 * Reference rules follow jansson: jx_parse() returns a new reference the
 * caller must json_decref(); jx_get_* return borrowed values valid while the
 * object lives.
 */
#ifndef GP_JSONX_H
#define GP_JSONX_H

#include "err.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Depth of the deepest array/object nesting in `text` (strings skipped);
 * stops counting and returns max+1 as soon as `max` is exceeded.
 */
int jx_depth(const char *text, size_t len, int max);

/*
 * Parse `len` bytes as one JSON value, nested at most `max_depth` deep.
 * OUT: *out, a new reference.  Errors: GP_EBADJSON (syntax, with line and
 * column), GP_EINVALID (too deep, or `require_object` and not an object).
 */
int jx_parse(const char *text, size_t len, int max_depth, int require_object, json_t **out,
             gp_err *err);

/*
 * Read member `key` of `obj` as a string.  If absent or null: when
 * `required`, GP_EINVALID; otherwise *out = NULL and GP_OK.  A present value
 * of another type is GP_EINVALID.  *out is borrowed.
 */
int jx_get_str(json_t *obj, const char *key, int required, const char **out, gp_err *err);

/* As jx_get_str for integers; *present tells whether it was given. */
int jx_get_int(json_t *obj, const char *key, int required, int64_t *out, int *present,
               gp_err *err);

/* As jx_get_str for booleans. */
int jx_get_bool(json_t *obj, const char *key, int required, int *out, int *present, gp_err *err);

/*
 * Reject members of `obj` not named in the NULL-terminated `allowed` list
 * (GP_EINVALID "unknown field 'x'"), so typos never pass silently.
 */
int jx_only_fields(json_t *obj, const char *const *allowed, gp_err *err);

/* An RFC 3339 UTC time string for `us` microseconds since the epoch; JSON null for 0. New ref. */
json_t *jx_time(int64_t us);

/* Serialise compactly; returns a heap string (free()) or NULL on OOM. */
char *jx_dump(const json_t *v);

/*
 * 1 if `s` is a valid object name: 1..63 chars of [a-z0-9-], starting with a
 * letter or digit and not ending with '-'.
 */
int gp_name_valid(const char *s);

#endif
