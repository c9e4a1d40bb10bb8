/*
 * httpc.h - a small JSON-over-HTTP client on libcurl, shared by the CLI and
 * the node agent.
 *
 * httpc_global_init() once per process before any call (and
 * httpc_global_cleanup() at exit).  Each call is independent (no shared
 * handle), so threads may call concurrently.
 *
 * Several servers may share one store: an httpc_servers list ("URL1,URL2")
 * and httpc_json_failover() send a request to the address that answered
 * last and move on to the next one when a connection fails in a way that
 * is safe to repeat (see httpc_json_failover()).
 */
#ifndef GP_HTTPC_H
#define GP_HTTPC_H

#include "err.h"

#include <jansson.h>
#include <stddef.h>

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

/*
 * The API servers a client may use, in the order given, and the one that
 * answered last (`cur`, where the next request starts).  Not synchronised:
 * a list belongs to one thread.  Stack lists start as HTTPC_SERVERS_INIT.
 */
typedef struct httpc_servers {
    char **urls; /* n heap strings, each "http://…" or "https://…" */
    size_t n;
    size_t cur;
} httpc_servers;

#define HTTPC_SERVERS_INIT {NULL, 0, 0}

/*
 * Parse a comma-separated list of base URLs ("http://a:7070,https://b").
 * Blanks around an element are dropped.  An empty element, or one that is
 * not http:// or https:// followed by a host, is GP_EINVALID with a one-line
 * message naming it.  On success `out` (released first) holds the list with
 * cur = 0; on failure it is left empty.  Pure: no I/O.
 */
int httpc_servers_parse(const char *list, httpc_servers *out, gp_err *err);

/* Free the URLs and empty the list (the struct itself is the caller's); NULL is a no-op. */
void httpc_servers_release(httpc_servers *s);

/*
 * httpc_json() against a list of servers, starting with s->cur.  Any HTTP
 * answer, whatever its status, ends the call and makes that server s->cur.
 * A transport failure moves on to the next server (each is tried once) when
 * repeating the request cannot apply it twice:
 *   - any method: the request was never sent (host not resolved, connection
 *     refused, timed out while connecting or in the TLS handshake);
 *   - GET and HEAD also: the connection broke before any answer (nothing
 *     received, send or receive error), or no answer came within timeout_s
 *     (a hung server).
 * A POST (PUT, …) whose connection broke or timed out after sending is
 * returned at once as GP_EIO, not repeated, and the next call starts with
 * the next server (s->cur moves on).  Anything else (a TLS verification
 * failure) is returned at once as GP_EIO.
 * When every server failed: GP_EIO, one line naming the addresses tried.
 * OUT as httpc_json().
 */
int httpc_json_failover(httpc_servers *s, const char *path, const char *method,
                        const char *token, json_t *body, long timeout_s, long *status,
                        json_t **resp, gp_err *err);

#endif
