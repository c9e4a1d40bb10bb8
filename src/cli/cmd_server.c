/*
 * cmd_server.c - `gpupool server`: run the control plane; and `gpupool
 * gateway`: the /v1 gateway alone, on the same store, to scale inference
 * traffic out (no scheduler, no sweeps, no bootstrap: the server made the
 * store).
 *
 * Options come from an optional config file (--config FILE, "key = value"
 * lines with the long option names) and are overridden by flags.  The data
 * folder holds gpupool.db (SQLite), admin.token (first start only, 0600)
 * and server.url (the URL actually listened on, for scripts using port 0;
 * https:// with --tls-cert/--tls-key).
 * SIGTERM/SIGINT stop it gracefully.
 */
#include "cli.h"

#include "../api/api.h"
#include "../audit/audit.h"
#include "../auth/auth.h"
#include "../core/log.h"
#include "../gateway/gateway.h"
#include "../sched/jobs.h"
#include "../sched/loop.h"
#include "../store/store.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: gpupool server [options]\n"
    "\n"
    "Run the control plane: REST API (/api/v1), the OpenAI-compatible gateway (/v1),\n"
    "/healthz, /readyz, /metrics, and the scheduler and health loops.\n"
    "\n"
    "  --data DIR          data folder (default ./var)\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:7070; port 0 = any free)\n"
    "  --store URL         store: sqlite:PATH (default DIR/gpupool.db) or postgresql://...\n"
    "                      (several servers may share one; docs/postgres.md)\n"
    "  --threads N         HTTP worker threads (default 4)\n"
    "  --max-body BYTES    largest request body accepted (default 1048576)\n"
    "  --max-depth N       deepest JSON nesting accepted (default 32)\n"
    "  --max-connections N open connections at most (default 1000)\n"
    "  --max-connections-per-ip N\n"
    "                      open connections from one client address at most (default 128;\n"
    "                      0: no cap, e.g. behind a proxy)\n"
    "  --header-timeout S  a request's line and headers must arrive within S seconds of the\n"
    "                      connection or of the previous answer on it (default 10)\n"
    "  --body-timeout S    a request body within S seconds plus 1 per 64 KiB (default 30)\n"
    "  --idle-timeout S    close a connection silent S seconds (default 30)\n"
    "  --send-min-rate B   cut a client taking an answer slower than B bytes a second over\n"
    "                      10 s while bytes wait for it (default 1024; 0: never)\n"
    "  --node-timeout S    a node silent S seconds is unreachable (default 30)\n"
    "  --health-interval S seconds between checks of model endpoints (default 10)\n"
    "  --lead-timeout S    PostgreSQL: a leading server silent S seconds (frozen, cut off)\n"
    "                      loses the lead to another (default 10, at least 2)\n"
    "  --cluster-check S   compare the scheduler's copy of the cluster with the store every\n"
    "                      S seconds (default 60; docs/scheduling.md \"The cluster in memory\")\n"
    "  --log-level LEVEL   debug|info|warn|error (default info)\n"
    "  --tls-cert FILE     serve HTTPS with this PEM certificate (chain); needs --tls-key\n"
    "  --tls-key FILE      the certificate's PEM private key (unencrypted)\n"
    "  --upstream-ca FILE  trust these PEM CAs (instead of the system's) for https model endpoints\n"
    "  --endpoint-allow CIDR,...\n"
    "                      let model endpoints use these otherwise refused addresses (loopback,\n"
    "                      link-local, ...), e.g. 127.0.0.0/8,::1/128 (docs/gateway.md)\n"
    "  --audit-key FILE    Ed25519 key signing audit checkpoints (default DIR/audit-signing.key,\n"
    "                      created 0600 when missing; on PostgreSQL only with this flag,\n"
    "                      the same file on every server sharing the store)\n"
    "  --audit-checkpoint-interval DUR\n"
    "                      sign the audit chain head at least this often while it grows\n"
    "                      (default 60s; 30, 30s, 5m, 1h)\n"
    "  --audit-checkpoint-events N\n"
    "                      and as soon as N events are unsigned (default 1000; 0: no bound)\n"
    "  --config FILE       read options from FILE (key = value lines; flags win)\n"
    "  -h, --help          show this help\n";

static const char gateway_usage[] =
    "usage: gpupool gateway [options]\n"
    "\n"
    "Run the OpenAI-compatible gateway (/v1, plus /healthz, /readyz, /metrics) alone,\n"
    "on the store of a gpupool server, to serve inference traffic from more machines.\n"
    "\n"
    "  --data DIR          the server's data folder (default ./var): its gpupool.db\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:7071; port 0 = any free)\n"
    "  --store URL         store: sqlite:PATH (default DIR/gpupool.db, which must exist)\n"
    "                      or the servers' postgresql://...\n"
    "  --max-body BYTES    largest request body accepted (default 1048576)\n"
    "  --max-depth N       deepest JSON nesting accepted (default 32)\n"
    "  --max-connections N open connections at most (default 1000)\n"
    "  --max-connections-per-ip N\n"
    "                      open connections from one client address at most (default 128;\n"
    "                      0: no cap, e.g. behind a proxy)\n"
    "  --header-timeout S  a request's line and headers must arrive within S seconds of the\n"
    "                      connection or of the previous answer on it (default 10)\n"
    "  --body-timeout S    a request body within S seconds plus 1 per 64 KiB (default 30)\n"
    "  --idle-timeout S    close a connection silent S seconds (default 30)\n"
    "  --send-min-rate B   cut a client taking an answer slower than B bytes a second over\n"
    "                      10 s while bytes wait for it (default 1024; 0: never)\n"
    "  --health-interval S seconds between checks of model endpoints (default 10)\n"
    "  --log-level LEVEL   debug|info|warn|error (default info)\n"
    "  --tls-cert FILE     serve HTTPS with this PEM certificate (chain); needs --tls-key\n"
    "  --tls-key FILE      the certificate's PEM private key (unencrypted)\n"
    "  --upstream-ca FILE  trust these PEM CAs (instead of the system's) for https model endpoints\n"
    "  --endpoint-allow CIDR,...\n"
    "                      let model endpoints use these otherwise refused addresses (loopback,\n"
    "                      link-local, ...), e.g. 127.0.0.0/8,::1/128 (docs/gateway.md)\n"
    "  --config FILE       read options from FILE (key = value lines; flags win)\n"
    "  -h, --help          show this help\n";

typedef struct server_opts {
    char *data, *listen, *store, *log_level;
    char *tls_cert, *tls_key, *upstream_ca; /* file paths, or NULL */
    char *endpoint_allow;                   /* --endpoint-allow CIDRs, or NULL */
    long threads, max_body, max_depth, node_timeout, health_interval, lead_timeout;
    long cluster_check; /* seconds between the scheduler's consistency checks */
    long max_conns, max_conns_ip, header_timeout, body_timeout, idle_timeout; /* api_config */
    long send_min_rate;                   /* api_config; 0: never judged */
    int gateway; /* `gpupool gateway` */
    char *audit_key;                      /* --audit-key FILE, or NULL: DIR/audit-signing.key */
    long audit_cp_interval, audit_cp_events; /* seconds; events (0: no bound) */
} server_opts;

static void set_str(char **dst, const char *v) {
    free(*dst);
    *dst = strdup(v);
}

/* The connection limits (docs/server.md, "Connections"): where option `key` goes, or NULL. */
static long *conn_opt(server_opts *o, const char *key) {
    static const char *const names[][2] = {{"max-connections", "max_connections"},
                                           {"max-connections-per-ip", "max_connections_per_ip"},
                                           {"header-timeout", "header_timeout"},
                                           {"body-timeout", "body_timeout"},
                                           {"idle-timeout", "idle_timeout"},
                                           {"send-min-rate", "send_min_rate"}};
    long *dst[] = {&o->max_conns, &o->max_conns_ip, &o->header_timeout, &o->body_timeout,
                   &o->idle_timeout, &o->send_min_rate};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(key, names[i][0]) == 0 || strcmp(key, names[i][1]) == 0) return dst[i];
    return NULL;
}

static int set_opt(server_opts *o, const char *key, const char *val) {
    char *end;
    if (strcmp(key, "data") == 0) set_str(&o->data, val);
    else if (strcmp(key, "listen") == 0) set_str(&o->listen, val);
    else if (strcmp(key, "store") == 0) set_str(&o->store, val);
    else if (strcmp(key, "tls-cert") == 0 || strcmp(key, "tls_cert") == 0) set_str(&o->tls_cert, val);
    else if (strcmp(key, "tls-key") == 0 || strcmp(key, "tls_key") == 0) set_str(&o->tls_key, val);
    else if (strcmp(key, "upstream-ca") == 0 || strcmp(key, "upstream_ca") == 0)
        set_str(&o->upstream_ca, val);
    else if (strcmp(key, "endpoint-allow") == 0 || strcmp(key, "endpoint_allow") == 0)
        set_str(&o->endpoint_allow, val);
    else if (strcmp(key, "log-level") == 0 || strcmp(key, "log_level") == 0)
        set_str(&o->log_level, val);
    else if (strcmp(key, "audit-key") == 0 || strcmp(key, "audit_key") == 0)
        set_str(&o->audit_key, val);
    else if (strcmp(key, "audit-checkpoint-interval") == 0 ||
             strcmp(key, "audit_checkpoint_interval") == 0) {
        /* N, Ns, Nm or Nh: 1 second to 1 day */
        long v = strtol(val, &end, 10), mul = 1;
        if (*end == 's') end++;
        else if (*end == 'm') mul = 60, end++;
        else if (*end == 'h') mul = 3600, end++;
        if (!*val || *end || v < 1 || v > 86400 || v * mul > 86400)
            return cli_error(CLI_USAGE, "server: %s must be 1s to 24h (30, 30s, 5m, 1h), got '%s'",
                             key, val);
        o->audit_cp_interval = v * mul;
    } else if (strcmp(key, "audit-checkpoint-events") == 0 ||
               strcmp(key, "audit_checkpoint_events") == 0) {
        long v = strtol(val, &end, 10);
        if (!*val || *end || v < 0 || v > (1L << 30))
            return cli_error(CLI_USAGE, "server: %s must be 0 or a positive integer, got '%s'",
                             key, val);
        o->audit_cp_events = v;
    }
    else if (conn_opt(o, key) != NULL) {
        long v = strtol(val, &end, 10), *dst = conn_opt(o, key);
        int per_ip = dst == &o->max_conns_ip, conns = dst == &o->max_conns;
        int rate = dst == &o->send_min_rate;
        long lo = per_ip || rate ? 0 : 1,
             hi = rate ? 1L << 30 : conns || per_ip ? 100000 : 86400;
        if (!*val || *end || v < lo || v > hi)
            return cli_error(CLI_USAGE, "server: %s must be an integer from %ld to %ld, got '%s'",
                             key, lo, hi, val);
        *dst = v;
    } else if (strcmp(key, "threads") == 0 || strcmp(key, "max-body") == 0 ||
             strcmp(key, "max_body") == 0 || strcmp(key, "max-depth") == 0 ||
             strcmp(key, "max_depth") == 0 || strcmp(key, "node-timeout") == 0 ||
             strcmp(key, "node_timeout") == 0 || strcmp(key, "health-interval") == 0 ||
             strcmp(key, "health_interval") == 0 || strcmp(key, "lead-timeout") == 0 ||
             strcmp(key, "lead_timeout") == 0 || strcmp(key, "cluster-check") == 0 ||
             strcmp(key, "cluster_check") == 0) {
        long v = strtol(val, &end, 10);
        if (!*val || *end || v < 1 || v > (1L << 30))
            return cli_error(CLI_USAGE, "server: %s must be a positive integer, got '%s'", key, val);
        if (key[0] == 'l' && (v < 2 || v > 86400)) /* the lead is renewed once a second */
            return cli_error(CLI_USAGE, "server: %s must be 2 to 86400 seconds, got '%s'", key, val);
        if (key[0] == 'c' && v > 86400)
            return cli_error(CLI_USAGE, "server: %s must be 1 to 86400 seconds, got '%s'", key, val);
        if (key[0] == 'c') o->cluster_check = v;
        else if (key[0] == 'l') o->lead_timeout = v;
        else if (key[0] == 't') o->threads = v;
        else if (key[0] == 'h') o->health_interval = v;
        else if (key[0] == 'n') o->node_timeout = v;
        else if (strstr(key, "body")) o->max_body = v;
        else o->max_depth = v;
    } else {
        return cli_error(CLI_USAGE, "server: unknown option '%s'", key);
    }
    return 0;
}

static int read_config(server_opts *o, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return cli_error(CLI_USAGE, "server: cannot read config %s: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line, *eq, *k, *v, *e;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        if (!(eq = strchr(p, '='))) {
            rc = cli_error(CLI_USAGE, "server: %s:%d: expected key = value", path, lineno);
            break;
        }
        *eq = '\0';
        k = p;
        for (e = eq - 1; e >= k && (*e == ' ' || *e == '\t'); e--) *e = '\0';
        v = eq + 1;
        while (*v == ' ' || *v == '\t') v++;
        for (e = v + strlen(v) - 1; e >= v && (*e == '\n' || *e == ' ' || *e == '\r'); e--)
            *e = '\0';
        rc = set_opt(o, k, v);
    }
    fclose(f);
    return rc;
}

static void opts_free(server_opts *o) {
    free(o->data);
    free(o->listen);
    free(o->store);
    free(o->log_level);
    free(o->tls_cert);
    free(o->tls_key);
    free(o->upstream_ca);
    free(o->endpoint_allow);
    free(o->audit_key);
}

/*
 * Read a PEM file named by `flag` that must hold a `what` block ("CERTIFICATE",
 * "PRIVATE KEY").  Returns the heap text (free) or NULL after printing the
 * one-line error.
 */
static char *read_pem(const char *role, const char *flag, const char *path, const char *what) {
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error(CLI_FAIL, "%s: cannot read %s %s: %s", role, flag, path, strerror(errno));
        return NULL;
    }
    strbuf sb = SB_INIT;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && sb.len < (1u << 20)) sb_add(&sb, buf, n);
    fclose(f);
    char *text = sb_ok(&sb) ? sb_detach(&sb) : NULL;
    sb_release(&sb);
    if (!text) {
        cli_error(CLI_FAIL, "%s: out of memory reading %s", role, path);
        return NULL;
    }
    char begin[64];
    snprintf(begin, sizeof begin, "-----BEGIN ");
    const char *p = strstr(text, begin);
    int ok = 0;
    for (; p && !ok; p = strstr(p + 1, begin)) {
        const char *eol = strstr(p, "-----\n");
        const char *eol2 = strstr(p, "-----\r\n");
        if (!eol || (eol2 && eol2 < eol)) eol = eol2;
        if (!eol) break;
        /* "-----BEGIN <label>-----": the label ends with `what` */
        size_t wl = strlen(what), ll = (size_t)(eol - (p + strlen(begin)));
        ok = ll >= wl && strncmp(eol - wl, what, wl) == 0 &&
             !(strcmp(what, "PRIVATE KEY") == 0 && ll >= 9 && !strncmp(p + strlen(begin), "ENCRYPTED", 9));
    }
    if (!ok) {
        if (strstr(text, "ENCRYPTED"))
            cli_error(CLI_FAIL, "%s: %s %s is an encrypted key; give an unencrypted one", role,
                      flag, path);
        else
            cli_error(CLI_FAIL, "%s: %s %s holds no PEM %s", role, flag, path, what);
        memset(text, 0, strlen(text));
        free(text);
        return NULL;
    }
    return text;
}

static int mkdirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(buf, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

static int run_server_with(server_opts *o, const char *cert_pem, const char *key_pem);

static int run(server_opts *o) {
    gp_err err = GP_ERR_INIT;
    int lvl = log_level_parse(o->log_level);
    if (lvl < 0) return cli_error(CLI_USAGE, "server: unknown log level '%s'", o->log_level);
    if (api_listen_check(o->listen, &err)) return cli_error(CLI_USAGE, "server: %s", err.msg);
    log_set_level(lvl);
    const char *role = o->gateway ? "gateway" : "server";
    if ((o->tls_cert != NULL) != (o->tls_key != NULL))
        return cli_error(CLI_USAGE, "%s: --tls-cert and --tls-key go together", role);
    if (o->tls_cert && !api_tls_supported())
        return cli_error(CLI_FAIL, "%s: this libmicrohttpd was built without TLS support; serve "
                                   "plain HTTP behind a TLS proxy instead", role);
    {
        gp_err aerr = GP_ERR_INIT;
        if (gw_set_endpoint_allow(o->endpoint_allow, &aerr))
            return cli_error(CLI_USAGE, "%s: %s", role, aerr.msg);
    }
    if (o->upstream_ca && access(o->upstream_ca, R_OK) != 0)
        return cli_error(CLI_FAIL, "%s: cannot read --upstream-ca %s: %s", role, o->upstream_ca,
                         strerror(errno));
    char *cert_pem = NULL, *key_pem = NULL;
    if (o->tls_cert) {
        if (!(cert_pem = read_pem(role, "--tls-cert", o->tls_cert, "CERTIFICATE"))) return CLI_FAIL;
        if (!(key_pem = read_pem(role, "--tls-key", o->tls_key, "PRIVATE KEY"))) {
            free(cert_pem);
            return CLI_FAIL;
        }
    }
    int rc = run_server_with(o, cert_pem, key_pem);
    free(cert_pem);
    if (key_pem) {
        memset(key_pem, 0, strlen(key_pem));
        free(key_pem);
    }
    return rc;
}

static int run_server_with(server_opts *o, const char *cert_pem, const char *key_pem) {
    gp_err err = GP_ERR_INIT;
    char path[4096], token_path[4096], url_path[4096];
    if (mkdirs(o->data) != 0)
        return cli_error(CLI_FAIL, "server: cannot create data folder %s: %s", o->data,
                         strerror(errno));
    snprintf(path, sizeof path, "%s/gpupool.db", o->data);
    snprintf(token_path, sizeof token_path, "%s/admin.token", o->data);
    snprintf(url_path, sizeof url_path, "%s/%s.url", o->data, o->gateway ? "gateway" : "server");
    struct stat sb;
    if (o->gateway && !o->store && stat(path, &sb) != 0)
        return cli_error(CLI_FAIL, "gateway: no store at %s: start `gpupool server --data %s` first",
                         path, o->data);

    /* block the stop signals in every thread; this one waits for them */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    store_t *st;
    if (store_open(o->store ? o->store : path, (int)o->threads + 2, &st, &err))
        return cli_error(CLI_FAIL, "server: %s", err.msg);
    if (store_can_bypass_fence(st, &err) == 1)
        log_kv(LOG_WARN,
               "this database role could turn row-level security off (it owns the tables, or is "
               "a superuser or BYPASSRLS); connect servers as a role given rights with "
               "`gpupool migrate --grant` (docs/postgres.md)",
               (char *)NULL);
    int created = 0;
    if (!o->gateway && auth_bootstrap(st, token_path, &created, &err)) {
        store_close(st);
        return cli_error(CLI_FAIL, "server: %s", err.msg);
    }
    api_config cfg = API_CONFIG_DEFAULTS;
    cfg.listen = o->listen;
    cfg.threads = (int)o->threads;
    cfg.max_body = (size_t)o->max_body;
    cfg.max_depth = (int)o->max_depth;
    cfg.node_timeout_s = o->gateway ? 0 : (int)o->node_timeout;
    cfg.health_interval_s = (int)o->health_interval;
    cfg.lead_timeout_s = (int)o->lead_timeout;
    sched_cluster_check_every((int)o->cluster_check);
    cfg.gateway_only = o->gateway;
    cfg.tls_cert_pem = cert_pem;
    cfg.tls_key_pem = key_pem;
    cfg.max_conns = (int)o->max_conns;
    cfg.max_conns_per_ip = (int)o->max_conns_ip;
    cfg.header_timeout_s = (int)o->header_timeout;
    cfg.body_timeout_s = (int)o->body_timeout;
    cfg.idle_timeout_s = (int)o->idle_timeout;
    cfg.send_min_rate = o->send_min_rate ? (int)o->send_min_rate : -1;
    if (o->upstream_ca) gw_set_upstream_ca(o->upstream_ca);
    /* signed audit checkpoints (docs/audit.md): the key and the file live outside the store */
    audit_signer *signer = NULL;
    char akey_path[4096], apub_path[4096], acp_path[4096];
    /* several servers may share a PostgreSQL store: they must share the key too, so
     * there a server signs only with --audit-key (docs/audit.md) */
    int pg_shared = strcmp(store_backend(st), "postgres") == 0;
    if (!o->gateway && pg_shared && !o->audit_key)
        log_kv(LOG_WARN,
               "audit checkpoints are not signed: on PostgreSQL give every server "
               "--audit-key FILE (the same key file) to sign them (docs/audit.md)",
               (char *)NULL);
    if (!o->gateway && (!pg_shared || o->audit_key)) {
        snprintf(akey_path, sizeof akey_path, "%s", o->audit_key ? o->audit_key : "");
        if (!o->audit_key) snprintf(akey_path, sizeof akey_path, "%s/audit-signing.key", o->data);
        snprintf(apub_path, sizeof apub_path, "%s/audit-signing.pub", o->data);
        snprintf(acp_path, sizeof acp_path, "%s/audit-checkpoints.jsonl", o->data);
        audit_signer_config acfg = {akey_path, apub_path, acp_path, (int)o->audit_cp_interval,
                                    (int)o->audit_cp_events, (int)o->lead_timeout};
        int key_created = 0;
        if (audit_signer_start(st, &acfg, &signer, &key_created, &err)) {
            store_close(st);
            return cli_error(CLI_FAIL, "server: %s", err.msg);
        }
        cfg.audit_key_id = audit_signer_key_id(signer);
        cfg.audit_checkpoint_file = acp_path;
        if (key_created)
            log_kv(LOG_INFO, "audit signing key created", "file", akey_path, "public_key",
                   cfg.audit_key_id, (char *)NULL);
    }
    /* the scheduler's thread: rounds run there, woken by changes, never on requests */
    sched_loop *sloop = NULL;
    if (!o->gateway && (sched_loop_start(st, &sloop, &err) ||
                        (pg_shared && sched_loop_listen(sloop, o->store, &err)))) {
        sched_loop_stop(sloop);
        audit_signer_stop(signer);
        store_close(st);
        return cli_error(CLI_FAIL, "server: %s", err.msg);
    }
    api_server *srv;
    if (api_server_start(&cfg, st, &srv, &err)) {
        sched_loop_stop(sloop);
        audit_signer_stop(signer);
        store_close(st);
        return cli_error(CLI_FAIL, "server: %s", err.msg);
    }
    char host[256];
    snprintf(host, sizeof host, "%s", o->listen);
    char *colon = strrchr(host, ':');
    if (colon) *colon = '\0';
    gw_set_self_address(host, api_server_port(srv)); /* endpoints may never point here */
    if (!host[0] || strcmp(host, "0.0.0.0") == 0) snprintf(host, sizeof host, "127.0.0.1");
    char url[512];
    snprintf(url, sizeof url, "%s://%s:%d", cert_pem ? "https" : "http", host,
             api_server_port(srv));
    FILE *uf = fopen(url_path, "w");
    if (uf) {
        fprintf(uf, "%s\n", url);
        fclose(uf);
    }
    printf("gpupool %s listening on %s (store: %s)\n", o->gateway ? "gateway" : "server", url,
           store_backend(st));
    if (o->gateway) printf("gateway: /v1 only\n");
    else if (created) printf("admin token written to %s (mode 0600)\n", token_path);
    else printf("admin token file: %s\n", token_path);
    fflush(stdout);
    log_kv(LOG_INFO, "server started", "url", url, "data", o->data, (char *)NULL);

    int sig = 0;
    sigwait(&set, &sig);
    log_kv(LOG_INFO, "stopping", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", (char *)NULL);
    sched_loop_quiesce(sloop); /* agents' long polls answer now, so the drain is short */
    api_server_stop(srv);
    sched_loop_stop(sloop);    /* after the last request: none can wake it any more */
    audit_signer_stop(signer); /* a last checkpoint, once no request can add events */
    gw_set_upstream_ca(NULL);
    gw_set_self_address(NULL, 0);
    store_close(st);
    log_kv(LOG_INFO, "stopped", (char *)NULL);
    return CLI_OK;
}

static int serve(int argc, char **argv, int gateway) {
    static const struct option longopts[] = {
        {"data", required_argument, 0, 'd'},     {"listen", required_argument, 0, 'l'},
        {"store", required_argument, 0, 's'},    {"threads", required_argument, 0, 't'},
        {"max-body", required_argument, 0, 'b'}, {"max-depth", required_argument, 0, 'D'},
        {"log-level", required_argument, 0, 'L'}, {"config", required_argument, 0, 'c'},
        {"node-timeout", required_argument, 0, 'N'},
        {"health-interval", required_argument, 0, 'H'},
        {"lead-timeout", required_argument, 0, 'T'},
        {"cluster-check", required_argument, 0, 0x206},
        {"tls-cert", required_argument, 0, 'C'}, {"tls-key", required_argument, 0, 'K'},
        {"upstream-ca", required_argument, 0, 'U'},
        {"endpoint-allow", required_argument, 0, 'E'},
        {"max-connections", required_argument, 0, 0x200},
        {"max-connections-per-ip", required_argument, 0, 0x201},
        {"header-timeout", required_argument, 0, 0x202},
        {"body-timeout", required_argument, 0, 0x203},
        {"idle-timeout", required_argument, 0, 0x204},
        {"send-min-rate", required_argument, 0, 0x205},
        {"audit-key", required_argument, 0, 0x100},
        {"audit-checkpoint-interval", required_argument, 0, 0x101},
        {"audit-checkpoint-events", required_argument, 0, 0x102},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    server_opts o = {0};
    set_str(&o.data, "./var");
    o.gateway = gateway;
    set_str(&o.listen, gateway ? "127.0.0.1:7071" : "127.0.0.1:7070");
    o.health_interval = 10;
    set_str(&o.log_level, "info");
    o.threads = 4;
    o.max_body = 1 << 20;
    o.max_depth = 32;
    o.node_timeout = 30;
    o.lead_timeout = 10;
    o.cluster_check = 60;
    o.max_conns = 1000;
    o.max_conns_ip = 128;
    o.header_timeout = 10;
    o.body_timeout = 30;
    o.idle_timeout = 30;
    o.send_min_rate = 1024;
    o.audit_cp_interval = 60;
    o.audit_cp_events = 1000;
    int rc = 0, c;
    /* config file first, so that flags override it */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) rc = read_config(&o, argv[i + 1]);
        else if (strncmp(argv[i], "--config=", 9) == 0) rc = read_config(&o, argv[i] + 9);
        if (rc) {
            opts_free(&o);
            return rc;
        }
    }
    optind = 0; /* 0: glibc re-initialises getopt (and permutes again) */
    opterr = 0;
    while (!rc && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': rc = set_opt(&o, "data", optarg); break;
        case 'l': rc = set_opt(&o, "listen", optarg); break;
        case 's': rc = set_opt(&o, "store", optarg); break;
        case 't': rc = set_opt(&o, "threads", optarg); break;
        case 'b': rc = set_opt(&o, "max-body", optarg); break;
        case 'D': rc = set_opt(&o, "max-depth", optarg); break;
        case 'L': rc = set_opt(&o, "log-level", optarg); break;
        case 'N': rc = set_opt(&o, "node-timeout", optarg); break;
        case 'H': rc = set_opt(&o, "health-interval", optarg); break;
        case 'T': rc = set_opt(&o, "lead-timeout", optarg); break;
        case 0x206: rc = set_opt(&o, "cluster-check", optarg); break;
        case 'C': rc = set_opt(&o, "tls-cert", optarg); break;
        case 'K': rc = set_opt(&o, "tls-key", optarg); break;
        case 'U': rc = set_opt(&o, "upstream-ca", optarg); break;
        case 'E': rc = set_opt(&o, "endpoint-allow", optarg); break;
        case 0x100: rc = set_opt(&o, "audit-key", optarg); break;
        case 0x101: rc = set_opt(&o, "audit-checkpoint-interval", optarg); break;
        case 0x102: rc = set_opt(&o, "audit-checkpoint-events", optarg); break;
        case 0x200: rc = set_opt(&o, "max-connections", optarg); break;
        case 0x201: rc = set_opt(&o, "max-connections-per-ip", optarg); break;
        case 0x202: rc = set_opt(&o, "header-timeout", optarg); break;
        case 0x203: rc = set_opt(&o, "body-timeout", optarg); break;
        case 0x204: rc = set_opt(&o, "idle-timeout", optarg); break;
        case 0x205: rc = set_opt(&o, "send-min-rate", optarg); break;
        case 'c': break;
        case 'h':
            fputs(gateway ? gateway_usage : usage, stdout);
            opts_free(&o);
            return CLI_OK;
        case ':': rc = cli_error(CLI_USAGE, "server: option %s needs a value", argv[optind - 1]); break;
        default: rc = cli_error(CLI_USAGE, "server: unknown option %s (see --help)", argv[optind - 1]);
        }
    }
    if (!rc && optind < argc)
        rc = cli_error(CLI_USAGE, "server: unexpected argument '%s'", argv[optind]);
    if (!rc) rc = run(&o);
    opts_free(&o);
    return rc;
}

int cli_cmd_server(cli_ctx *ctx, int argc, char **argv) {
    (void)ctx;
    return serve(argc, argv, 0);
}

int cli_cmd_gateway(cli_ctx *ctx, int argc, char **argv) {
    (void)ctx;
    return serve(argc, argv, 1);
}
