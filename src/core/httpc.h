/*
 * httpc.h - a small JSON-over-HTTP client on libcurl, shared by the CLI and
 * the node agent.
 *
 * httpc_global_init() once per process before any call (and
 * httpc_global_cleanup() at exit).  Each call is independent (no shared
 * handle), so threads may call concurrently.
 */
#ifndef GP_HTTPC_H
#define GP_HTTPC_H

#include "err.h"

#include <jansson.h>

int httpc_global_init(void);
void httpc_global_cleanup(void);

/*
 * Verify https servers against the PEM CAs in `path` (copied) instead of
 * the system's store; NULL: the system's store again.  Call before any
 * request (not thread-safe against calls in flight).  https peers are
 * always verified (certificate chain and host name); a failure is a
 * GP_EIO naming the reason and the --ca flag.
 */
void httpc_set_ca(const char *path);

/*
 * `method` base+path with an optional JSON body (borrowed) and bearer token.
 * On a transport failure: GP_EIO with the reason.  Otherwise GP_OK with
 * *status the HTTP status and *resp the parsed JSON (new reference; a body
 * that is not JSON comes back as a JSON string, an empty one as JSON null).
 */
int httpc_json(const char *base, const char *path, const char *method, const char *token,
               json_t *body, long timeout_s, long *status, json_t **resp, gp_err *err);

#endif
