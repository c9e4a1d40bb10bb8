/*
 * err.h - status codes and error values shared by every gpupool module.
 *
 * Every fallible function returns an int status: GP_OK (0) on success, a
 * negative GP_E* code on failure, and fills an optional `gp_err` OUT
 * parameter with a human-readable message.  Codes come from one X-macro
 * table so that names and default messages stay in step.  HTTP status codes
 * are chosen only in the api/ and gateway/ modules (api_status_for()).
 *
 * Ownership: gp_err is a plain value living in caller storage; nothing to free.
 */
#ifndef GP_ERR_H
#define GP_ERR_H

#include <stddef.h>

/* X(NAME, value, "machine_code", "default message") */
#define GP_ERROR_TABLE(X)                                                   \
    X(OK, 0, "ok", "ok")                                                    \
    X(NOMEM, -1, "out_of_memory", "out of memory")                          \
    X(INVALID, -2, "invalid_argument", "invalid argument")                  \
    X(NOTFOUND, -3, "not_found", "not found")                               \
    X(CONFLICT, -4, "conflict", "already exists")                           \
    X(UNAUTH, -5, "unauthenticated", "missing or invalid credentials")      \
    X(FORBIDDEN, -6, "forbidden", "not allowed")                            \
    X(TOOLARGE, -7, "payload_too_large", "request body too large")          \
    X(STORE, -8, "store_error", "store error")                              \
    X(IO, -9, "io_error", "input/output error")                             \
    X(SCHEMA, -10, "schema_mismatch", "schema version mismatch")            \
    X(INTERNAL, -11, "internal", "internal error")                          \
    X(BADJSON, -12, "malformed_json", "malformed JSON")                     \
    X(BUSY, -13, "busy", "resource busy, retry")                            \
    X(UNSUPPORTED, -14, "unsupported", "unsupported")                       \
    X(TAMPERED, -15, "chain_broken", "audit chain broken")                  \
    X(METHOD, -16, "method_not_allowed", "method not allowed")

enum {
#define GP_X_ENUM(name, val, code, msg) GP_E##name = val,
    GP_ERROR_TABLE(GP_X_ENUM)
#undef GP_X_ENUM
};
#define GP_OK GP_EOK

/* An error value: a code and a message.  Zero-initialise with GP_ERR_INIT. */
typedef struct gp_err {
    int code;
    char msg[256];
} gp_err;

#define GP_ERR_INIT {0, {0}}

/* Machine-readable name of a code ("not_found"); never NULL. */
const char *gp_err_name(int code);

/* Default message of a code; never NULL. */
const char *gp_err_default_msg(int code);

/*
 * Fill `err` (may be NULL) with `code` and a printf-style message, and
 * return `code` so callers can write `return gp_err_set(err, GP_EINVALID, ...)`.
 * A NULL fmt uses the code's default message.
 */
int gp_err_set(gp_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reset an error value to OK with an empty message. */
void gp_err_clear(gp_err *err);

#endif
