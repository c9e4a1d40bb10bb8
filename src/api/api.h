/*
 * api.h - the HTTP API server: /api/v1, /healthz, /readyz, /metrics.
 *
 * Start with api_server_start(), stop with api_server_stop(): stop refuses
 * new connections, lets in-flight requests finish (bounded wait), then
 * frees everything.  The store is borrowed; the caller closes it after stop.
 *
 * `threads` event threads move the bytes and handlers run on workers (a
 * plain gateway request alone on its event thread runs there; http.c,
 * "Threads"); `threads` also sizes the store's pool.  Slow clients are bounded: a deadline for the
 * request headers and one for the body (a watcher thread cuts connections
 * past theirs, sooner when the connections are three quarters full), a cap
 * on open connections in all and per client address (api_config).
 *
 * Requests flow: route match -> authenticate -> handler (authorize, then
 * read the body, then one store transaction with its audit event) ->
 * JSON response with X-Request-Id, one access-log line and metrics.
 */
#ifndef GP_API_H
#define GP_API_H

#include "../core/err.h"
#include "../store/store.h"

#include <stddef.h>

typedef struct api_config {
    const char *listen;   /* "HOST:PORT" or "[v6]:PORT"; port 0 picks a free one */
    int threads;          /* worker threads (>= 1) */
    size_t max_body;      /* bytes; larger bodies get 413 */
    int max_depth;        /* JSON nesting limit */
    int drain_seconds;    /* how long stop waits for in-flight requests */
    int node_timeout_s;   /* a node silent this long is unreachable; 0: no sweep loop */
    int gateway;          /* serve the OpenAI-compatible gateway under /v1 */
    int gateway_only;     /* serve only /v1 (and /healthz, /readyz, /metrics): `gpupool gateway` */
    int health_interval_s;/* seconds between checks of model endpoints; 0: none */
    /* HTTPS: both PEM texts (borrowed, kept until stop), or both NULL for plain HTTP */
    const char *tls_cert_pem;
    const char *tls_key_pem;
    /* login throttling: failures allowed per minute per user name from one source address
     * (then backing off, auth/throttle.h) / per source address over every name, before
     * further logins from that source are refused with 429 (0: no limit of that kind) */
    int login_fail_name;
    int login_fail_addr;
    /* PostgreSQL: a leader silent this long (frozen, cut off) loses the lead (store_lead) */
    int lead_timeout_s;
    /* signed audit checkpoints (docs/audit.md): the trusted public key (hex) that
     * GET /api/v1/audit/checkpoints shows and audit/verify checks against, and the
     * checkpoint file verify reads too; NULL: the chain alone is verified */
    const char *audit_key_id;
    const char *audit_checkpoint_file;
    /* slow and greedy clients (docs/server.md, "Connections"); 0 takes the default shown */
    int max_conns;        /* open connections at most (1000) */
    int max_conns_per_ip; /* open connections from one address at most (0: no cap) */
    int header_timeout_s; /* request line + headers complete within this of the accept or of
                           * the previous response on the connection (10) */
    int body_timeout_s;   /* a request body within this plus 1 s per 64 KiB declared (30) */
    int idle_timeout_s;   /* a connection silent this long is closed (30) */
    int send_min_rate;    /* bytes a second a client must take of an answer it is sent, judged
                           * over 10 s while bytes wait for it (1024; negative: not judged) */
} api_config;

/* The defaults, by field name (a field not named here is 0 / NULL). */
#define API_CONFIG_DEFAULTS                                                                \
    {                                                                                      \
        .listen = "127.0.0.1:7070", .threads = 4, .max_body = 1 << 20, .max_depth = 32,    \
        .drain_seconds = 10, .node_timeout_s = 30, .gateway = 1, .gateway_only = 0,        \
        .health_interval_s = 10, .login_fail_name = 5, .login_fail_addr = 20,              \
        .lead_timeout_s = 10,                                                              \
    }

typedef struct api_server api_server;

/* Start listening. OUT: *out (freed by api_server_stop). */
int api_server_start(const api_config *cfg, store_t *st, api_server **out, gp_err *err);

/* Does this libmicrohttpd serve HTTPS? (Debian's is built with GnuTLS.) */
int api_tls_supported(void);

/* Check a listen address ("HOST:PORT", "[V6]:PORT") without binding. */
int api_listen_check(const char *listen, gp_err *err);

/* Port actually bound (useful with port 0). */
int api_server_port(const api_server *srv);

/* Graceful stop and free. NULL is a no-op. */
void api_server_stop(api_server *srv);

/* Number of routes and their method/pattern, for the OpenAPI check and docs. */
size_t api_route_count(void);
const char *api_route_method(size_t i);
const char *api_route_pattern(size_t i);

/* The embedded OpenAPI document (JSON text, NUL-terminated). */
const char *api_openapi_json(void);

#endif
