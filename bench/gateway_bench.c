/*
 * gateway_bench.c - `gpupool-bench gateway`: what the /v1 gateway adds to a
 * request, against the same upstream reached directly, in one run.
 *
 *   gpupool-bench gateway [--seconds S] [--concurrency C] [--requests N] [--store URL]
 *                         [--tokens-month T] [--threads N]
 *
 * In one process: an upstream (libmicrohttpd, answering at once: a chat
 * completion with usage, or a stream of 8 chunks plus the usage chunk), a
 * gpupool server on a fresh SQLite store in a temporary folder (tenant,
 * project, model, endpoint and key made through its API), and a load
 * generator (libcurl, keep-alive, one connection per thread).  For
 * non-streaming and streaming chat:
 *   - latency: N sequential requests, direct then through the gateway:
 *     p50/p99 of each, and the difference (what the gateway adds);
 *   - throughput: C threads for S seconds, direct then through the gateway.
 * --tokens-month gives the key a monthly token quota (the admission path that
 * leases budget from the store); each mode reports the store write
 * transactions per gateway request under load (write_tx_per_request).
 * Ends with `direct_rps=N gateway_rps=N added_p50_us=N added_p99_us=N`
 * (non-streaming).  Usage records are written in batches while it runs;
 * they and the token ledger are checked afterwards: one record per request.
 *
 * Two more commands drive gateways that run elsewhere (bench/gateway_scaleout.sh:
 * several `gpupool gateway` processes on one PostgreSQL store):
 *   gpupool-bench drive --target URL KEY [--target URL KEY ...] [--seconds S]
 *                       [--concurrency C]
 *     C keep-alive clients per target, all targets at once, for S seconds, a
 *     non-streaming chat each time: `target=URL rps=N p50_us=N p99_us=N
 *     failures=N` per target, then `total_rps=N failures=N` (exit 1 on any
 *     failure: a 429 too, so a quota must not bind);
 *   gpupool-bench revoke --api URL --token T --key-path PATH --key K
 *                        --target URL [--target URL ...]
 *     each target serves key K (a 200 first), then DELETE PATH on the API
 *     (PATH: /api/v1/tenants/T/projects/P/keys/ID) and every target is asked
 *     again every millisecond until it refuses the key (401): `revoked_ms=N`
 *     per target and `revoke_all_ms=N`, from the DELETE's answer to the last
 *     refusal (10 s at most; exit 1 past that).
 */
#define _GNU_SOURCE
#include "../src/api/api.h"
#include "../src/auth/auth.h"
#include "../src/core/httpc.h"
#include "../src/core/log.h"
#include "../src/core/rand.h"
#include "../src/gateway/gateway.h"
#include "../src/store/store.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if MHD_VERSION < 0x00097002
typedef int MHD_Result;
#else
typedef enum MHD_Result MHD_Result;
#endif

static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the upstream ---- */

static const char chat_json[] =
    "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"bench\","
    "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"the quick brown "
    "fox jumps over the lazy dog\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":9,\"total_tokens\":21}}";

static char *stream_text; /* built once */

static void build_stream(void) {
    static const char *const words[] = {"the ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "dog"};
    size_t cap = 8192, len = 0;
    stream_text = malloc(cap);
    len += (size_t)snprintf(stream_text + len, cap - len,
                            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"
                            "\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
                            "\"assistant\"}}],\"usage\":null}\n\n");
    for (int i = 0; i < 8; i++)
        len += (size_t)snprintf(stream_text + len, cap - len,
                                "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"
                                "\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
                                "\"%s\"}}],\"usage\":null}\n\n",
                                words[i]);
    len += (size_t)snprintf(stream_text + len, cap - len,
                            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"
                            "\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
                            "\"completion_tokens\":8,\"total_tokens\":20}}\n\ndata: [DONE]\n\n");
}

typedef struct up_ctx {
    int stream;
} up_ctx;

static MHD_Result up_request(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls) {
    (void)cls, (void)version;
    up_ctx *x = *con_cls;
    if (!x) {
        *con_cls = x = calloc(1, sizeof *x);
        return x ? MHD_YES : MHD_NO;
    }
    if (*upload_size) {
        if (memmem(upload, *upload_size, "\"stream\":true", 13)) x->stream = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    const char *body;
    const char *ct = "application/json";
    if (!strcmp(method, "GET")) body = "{\"object\":\"list\",\"data\":[]}";
    else if (strstr(url, "chat/completions") && x->stream) body = stream_text, ct = "text/event-stream";
    else body = chat_json;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", ct);
    MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static void up_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
    (void)cls, (void)c, (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

/* ---- load ---- */

static size_t sink(char *p, size_t s, size_t n, void *u) {
    (void)p, (void)u;
    return s * n;
}

typedef struct load {
    const char *url, *key, *body;
    int64_t deadline_us; /* 0: do `count` requests */
    long count;
    int64_t *lat;        /* per request, microseconds */
    long n, cap;
    long failures;
} load;

static void *load_main(void *arg) {
    load *l = arg;
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    char auth[256];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", l->key);
    h = curl_slist_append(h, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(e, CURLOPT_URL, l->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, l->body);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
    for (;;) {
        if (l->deadline_us ? mono_us() >= l->deadline_us : l->n >= l->count) break;
        int64_t t0 = mono_us();
        CURLcode rc = curl_easy_perform(e);
        long st = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
        if (rc != CURLE_OK || st != 200) {
            l->failures++;
            if (l->failures > 100) break;
            continue;
        }
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 4096;
            l->lat = realloc(l->lat, (size_t)l->cap * sizeof *l->lat);
        }
        l->lat[l->n++] = mono_us() - t0;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    return NULL;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct result {
    double rps;
    int64_t p50, p99;
    long n, failures;
} result;

static result run(const char *url, const char *key, const char *body, int threads, int seconds,
                  long count) {
    load *ls = calloc((size_t)threads, sizeof *ls);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    int64_t start = mono_us();
    for (int i = 0; i < threads; i++) {
        ls[i] = (load){.url = url, .key = key, .body = body,
                       .deadline_us = seconds ? start + (int64_t)seconds * 1000000 : 0,
                       .count = count};
        pthread_create(&t[i], NULL, load_main, &ls[i]);
    }
    long total = 0, fails = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += ls[i].n;
        fails += ls[i].failures;
    }
    int64_t elapsed = mono_us() - start;
    int64_t *all = malloc((size_t)(total ? total : 1) * sizeof *all);
    long k = 0;
    for (int i = 0; i < threads; i++) {
        if (ls[i].n) memcpy(all + k, ls[i].lat, (size_t)ls[i].n * sizeof *all);
        k += ls[i].n;
        free(ls[i].lat);
    }
    qsort(all, (size_t)total, sizeof *all, cmp64);
    result r = {.rps = total ? (double)total * 1e6 / (double)elapsed : 0,
                .p50 = total ? all[total / 2] : 0,
                .p99 = total ? all[(total * 99) / 100] : 0,
                .n = total,
                .failures = fails};
    free(all);
    free(ls);
    free(t);
    return r;
}

/* ---- setup through the API ---- */

static int call(const char *base, const char *path, const char *token, json_t *body, json_t **out) {
    gp_err err = GP_ERR_INIT;
    long st = 0;
    json_t *resp = NULL;
    int rc = httpc_json(base, path, "POST", token, body, 10, &st, &resp, &err);
    json_decref(body); /* the caller packs it for this call */
    if (rc == 0 && !strstr(path, "/members/") && st != 201) rc = -1;
    if (rc == 0 && strstr(path, "/members/") && st / 100 != 2) rc = -1;
    if (rc) {
        char *t = resp ? json_dumps(resp, 0) : NULL;
        fprintf(stderr, "gpupool-bench gateway: setup %s: %ld %s %s\n", path, st, err.msg, t ? t : "");
        free(t);
    }
    if (out) *out = resp;
    else json_decref(resp);
    return rc;
}

/* ---- the fixture: an upstream, a server on a fresh store, a tenant with a model and a key ---- */

typedef struct fixture {
    struct MHD_Daemon *up;
    api_server *srv;
    store_t *st;
    char dir[64];
    char token[128], base[64], upurl[128], key[128];
} fixture;

/* `store`: a PostgreSQL URI of an empty database, or NULL for a fresh SQLite file */
static int64_t key_tokens_month; /* --tokens-month: the bench key's monthly quota (0: none) */
static int server_threads;      /* --threads: the server's event threads and workers (0: its default) */

static int fixture_start(fixture *fx, const char *who, const char *store) {
    memset(fx, 0, sizeof *fx);
    rnd_init();
    httpc_global_init();
    log_set_level(LOG_ERROR);
    build_stream();
    /* the upstream */
    fx->up = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO, 0, NULL,
        NULL, up_request, NULL, MHD_OPTION_NOTIFY_COMPLETED, up_done, NULL,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_END);
    if (!fx->up) {
        fprintf(stderr, "gpupool-bench %s: cannot start the upstream\n", who);
        return 1;
    }
    int up_port = MHD_get_daemon_info(fx->up, MHD_DAEMON_INFO_BIND_PORT)->port;
    /* the server, on a fresh store */
    char path[256], tokpath[256];
    snprintf(fx->dir, sizeof fx->dir, "/tmp/gpupool-bench-XXXXXX");
    if (!mkdtemp(fx->dir)) return 1;
    snprintf(path, sizeof path, "%s/gpupool.db", fx->dir);
    snprintf(tokpath, sizeof tokpath, "%s/admin.token", fx->dir);
    gp_err err = GP_ERR_INIT;
    int created;
    api_config cfg = API_CONFIG_DEFAULTS;
    cfg.listen = "127.0.0.1:0";
    if (server_threads > 0) cfg.threads = server_threads;
    cfg.node_timeout_s = 0;
    cfg.health_interval_s = 0;
    /* the bench's upstream is on loopback, which endpoints may use only when allowed */
    if (gw_set_endpoint_allow("127.0.0.0/8", &err)) return 1;
    if (store_open(store ? store : path, 8, &fx->st, &err) || auth_bootstrap(fx->st, tokpath, &created, &err) ||
        api_server_start(&cfg, fx->st, &fx->srv, &err)) {
        fprintf(stderr, "gpupool-bench %s: %s\n", who, err.msg);
        return 1;
    }
    FILE *f = fopen(tokpath, "r");
    if (!f || !fgets(fx->token, sizeof fx->token, f)) return 1;
    fclose(f);
    fx->token[strcspn(fx->token, "\n")] = '\0';
    snprintf(fx->base, sizeof fx->base, "http://127.0.0.1:%d", api_server_port(fx->srv));
    snprintf(fx->upurl, sizeof fx->upurl, "http://127.0.0.1:%d/v1", up_port);
    const char *base = fx->base, *token = fx->token, *upurl = fx->upurl;
    json_t *k = NULL;
    int rc = call(base, "/api/v1/tenants", token, json_pack("{s:s}", "name", "bench"), NULL) ||
             call(base, "/api/v1/tenants/bench/projects", token, json_pack("{s:s}", "name", "p"), NULL);
    if (!rc) {
        gp_err e2 = GP_ERR_INIT;
        long s2;
        json_t *resp = NULL;
        json_t *grant = json_pack("{s:s}", "role", "tenant-admin");
        rc = httpc_json(base, "/api/v1/tenants/bench/members/admin", "PUT", token, grant, 10, &s2,
                        &resp, &e2) ||
             s2 / 100 != 2;
        json_decref(grant);
        json_decref(resp);
    }
    if (!rc)
        rc = call(base, "/api/v1/tenants/bench/models", token, json_pack("{s:s}", "name", "bench"), NULL) ||
             call(base, "/api/v1/tenants/bench/models/bench/endpoints", token,
                  json_pack("{s:s,s:s}", "url", upurl, "accelerator", "H100-80GB"), NULL) ||
             call(base, "/api/v1/tenants/bench/projects/p/keys", token,
                  json_pack("{s:s,s:I}", "name", "k", "tokens_month", (json_int_t)key_tokens_month), &k);
    if (rc) return 1;
    snprintf(fx->key, sizeof fx->key, "%s", json_string_value(json_object_get(k, "key")));
    json_decref(k);
    return 0;
}

/* Stop the server (writing every queued usage record); OUT: usage records with status 200. */
static long fixture_stop(fixture *fx) {
    gp_err err = GP_ERR_INIT;
    api_server_stop(fx->srv);
    store_tx *tx;
    store_stmt *q;
    long records = -1;
    if (!store_begin(fx->st, STORE_READ, &tx, &err)) {
        if (!store_query(tx, &q, &err, "SELECT COUNT(*) FROM usage_records WHERE status = 200", "")) {
            if (store_step(q, &err) > 0) records = (long)store_int(q, 0);
            store_done(q);
        }
        store_rollback(tx);
    }
    store_close(fx->st);
    MHD_stop_daemon(fx->up);
    free(stream_text);
    stream_text = NULL;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    if (system(cmd) != 0) fprintf(stderr, "gpupool-bench: could not remove %s\n", fx->dir);
    return records;
}

int bench_gateway(int argc, char **argv);
int bench_gateway(int argc, char **argv) {
    int seconds = 3, conc = 8;
    long count = 2000;
    const char *store = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds")) seconds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--store")) store = argv[i + 1];
        else if (!strcmp(argv[i], "--concurrency")) conc = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests")) count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens-month")) key_tokens_month = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) server_threads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: gpupool-bench gateway [--seconds S] [--concurrency C] [--requests N] [--store URL] [--tokens-month T] [--threads N]\n");
            return 2;
        }
    }
    if (argc % 2 == 0 || seconds < 1 || conc < 1 || count < 10 || key_tokens_month < 0 ||
        server_threads < 0 || server_threads > 256) {
        fprintf(stderr, "usage: gpupool-bench gateway [--seconds S] [--concurrency C] [--requests N] [--store URL] [--tokens-month T] [--threads N]\n");
        return 2;
    }
    fixture fx;
    if (fixture_start(&fx, "gateway", store)) return 1;
    const char *base = fx.base, *upurl = fx.upurl, *key = fx.key;
    char gwurl[128];

    const char *plain = "{\"model\":\"bench\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\","
                        "\"content\":\"say something about foxes and dogs\"}]}";
    const char *streamed = "{\"model\":\"bench\",\"stream\":true,\"max_tokens\":16,\"messages\":[{"
                           "\"role\":\"user\",\"content\":\"say something about foxes and dogs\"}]}";
    char direct_chat[160];
    snprintf(direct_chat, sizeof direct_chat, "%s/chat/completions", upurl);
    snprintf(gwurl, sizeof gwurl, "%s/v1/chat/completions", base);
    printf("# upstream answers at once; %ld sequential requests for latency, %d threads x %d s for "
           "throughput\n", count, conc, seconds);
    result lat[2][2], thr[2][2]; /* [stream][direct=0, gateway=1] */
    double wtx[2] = {0, 0};      /* store write transactions per gateway request, under load */
    for (int s = 0; s < 2; s++) {
        const char *body = s ? streamed : plain;
        for (int g = 0; g < 2; g++) {
            const char *u = g ? gwurl : direct_chat;
            run(u, key, body, 1, 0, 50); /* warm up */
            lat[s][g] = run(u, key, body, 1, 0, count);
            unsigned long long w0 = store_write_tx_total();
            thr[s][g] = run(u, key, body, conc, seconds, 0);
            if (g && thr[s][g].n > 0)
                wtx[s] = (double)(store_write_tx_total() - w0) / (double)thr[s][g].n;
        }
        printf("mode=%s direct_p50_us=%lld direct_p99_us=%lld gateway_p50_us=%lld "
               "gateway_p99_us=%lld added_p50_us=%lld added_p99_us=%lld direct_rps=%.0f "
               "gateway_rps=%.0f write_tx_per_request=%.4f failures=%ld\n",
               s ? "stream" : "plain", (long long)lat[s][0].p50, (long long)lat[s][0].p99,
               (long long)lat[s][1].p50, (long long)lat[s][1].p99,
               (long long)(lat[s][1].p50 - lat[s][0].p50), (long long)(lat[s][1].p99 - lat[s][0].p99),
               thr[s][0].rps, thr[s][1].rps, wtx[s],
               lat[s][0].failures + lat[s][1].failures + thr[s][0].failures + thr[s][1].failures);
    }
    long through = 0;
    for (int s = 0; s < 2; s++) through += lat[s][1].n + thr[s][1].n + 50;
    long records = fixture_stop(&fx); /* writes every queued usage record */
    printf("# usage records: %ld for %ld requests through the gateway%s\n", records, through,
           records == through ? "" : " (MISMATCH)");
    printf("direct_rps=%.0f gateway_rps=%.0f added_p50_us=%lld added_p99_us=%lld\n", thr[0][0].rps,
           thr[0][1].rps, (long long)(lat[0][1].p50 - lat[0][0].p50),
           (long long)(lat[0][1].p99 - lat[0][0].p99));
    return records == through ? 0 : 1;
}

/* ---- gpupool-bench load: many clients mixing API and gateway calls ---- */

typedef struct mix_req {
    const char *name, *method, *path, *body;
    int gateway; /* authenticate with the API key, not the admin token */
} mix_req;

static const mix_req mix[] = {
    {"chat", "POST", "/v1/chat/completions",
     "{\"model\":\"bench\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 1},
    {"chat_stream", "POST", "/v1/chat/completions",
     "{\"model\":\"bench\",\"stream\":true,\"max_tokens\":16,\"messages\":[{\"role\":\"user\","
     "\"content\":\"hi\"}]}",
     1},
    {"models", "GET", "/v1/models", NULL, 1},
    {"jobs", "GET", "/api/v1/tenants/bench/projects/p/jobs", NULL, 0},
    {"overview", "GET", "/api/v1/tenants/bench/overview", NULL, 0},
    {"usage", "GET", "/api/v1/usage?tenant=bench&group_by=project", NULL, 0},
    {"quota_set", "PUT", "/api/v1/tenants/bench/projects/p/quota", "{\"concurrent_jobs\":50}", 0},
    {"audit", "GET", "/api/v1/audit?limit=20", NULL, 0},
};
#define NMIX (sizeof mix / sizeof mix[0])

typedef struct mix_load {
    const fixture *fx;
    int64_t deadline_us;
    unsigned seed;
    int64_t *lat[NMIX];
    long n[NMIX], cap[NMIX], errors[NMIX];
    long last_status[NMIX];
} mix_load;

static void *mix_main(void *arg) {
    mix_load *l = arg;
    CURL *e = curl_easy_init();
    char auth_admin[256], auth_key[256], url[512];
    snprintf(auth_admin, sizeof auth_admin, "Authorization: Bearer %s", l->fx->token);
    snprintf(auth_key, sizeof auth_key, "Authorization: Bearer %s", l->fx->key);
    struct curl_slist *ha = NULL, *hk = NULL;
    ha = curl_slist_append(ha, auth_admin);
    ha = curl_slist_append(ha, "Content-Type: application/json");
    ha = curl_slist_append(ha, "Expect:");
    hk = curl_slist_append(hk, auth_key);
    hk = curl_slist_append(hk, "Content-Type: application/json");
    hk = curl_slist_append(hk, "Expect:");
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
    while (mono_us() < l->deadline_us) {
        l->seed = l->seed * 1103515245u + 12345u;
        size_t k = (l->seed >> 16) % NMIX;
        const mix_req *m = &mix[k];
        snprintf(url, sizeof url, "%s%s", l->fx->base, m->path);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, m->gateway ? hk : ha);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m->method);
        if (m->body) curl_easy_setopt(e, CURLOPT_POSTFIELDS, m->body);
        else curl_easy_setopt(e, CURLOPT_HTTPGET, 1L), curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m->method);
        int64_t t0 = mono_us();
        CURLcode rc = curl_easy_perform(e);
        long st = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
        if (rc != CURLE_OK || st / 100 != 2) {
            l->errors[k]++;
            l->last_status[k] = rc != CURLE_OK ? -(long)rc : st;
            continue;
        }
        if (l->n[k] == l->cap[k]) {
            l->cap[k] = l->cap[k] ? l->cap[k] * 2 : 1024;
            l->lat[k] = realloc(l->lat[k], (size_t)l->cap[k] * sizeof *l->lat[k]);
        }
        l->lat[k][l->n[k]++] = mono_us() - t0;
    }
    curl_slist_free_all(ha);
    curl_slist_free_all(hk);
    curl_easy_cleanup(e);
    return NULL;
}

int bench_load(int argc, char **argv);
int bench_load(int argc, char **argv) {
    int seconds = 5, clients = 16;
    const char *store = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds")) seconds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--store")) store = argv[i + 1];
        else if (!strcmp(argv[i], "--clients")) clients = atoi(argv[i + 1]);
        else seconds = -1;
    }
    if (argc % 2 == 0 || seconds < 1 || clients < 1 || clients > 500) {
        fprintf(stderr, "usage: gpupool-bench load [--seconds S] [--clients N] [--store URL]\n");
        return 2;
    }
    fixture fx;
    if (fixture_start(&fx, "load", store)) return 1;
    mix_load *ls = calloc((size_t)clients, sizeof *ls);
    pthread_t *t = calloc((size_t)clients, sizeof *t);
    int64_t start = mono_us();
    for (int i = 0; i < clients; i++) {
        ls[i].fx = &fx;
        ls[i].deadline_us = start + (int64_t)seconds * 1000000;
        ls[i].seed = 7919u * (unsigned)(i + 1);
        pthread_create(&t[i], NULL, mix_main, &ls[i]);
    }
    for (int i = 0; i < clients; i++) pthread_join(t[i], NULL);
    double elapsed = (double)(mono_us() - start) / 1e6;
    long total = 0, errors = 0;
    int64_t *all = NULL;
    long nall = 0;
    printf("# %d clients for %d s on loopback, mixing API and gateway calls\n", clients, seconds);
    for (size_t k = 0; k < NMIX; k++) {
        long n = 0, err = 0, last = 0;
        for (int i = 0; i < clients; i++) {
            n += ls[i].n[k];
            err += ls[i].errors[k];
            if (ls[i].errors[k]) last = ls[i].last_status[k];
        }
        int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        long at = 0;
        for (int i = 0; i < clients; i++) {
            /* a client that made no call of this kind has no buffer */
            if (ls[i].n[k]) memcpy(v + at, ls[i].lat[k], (size_t)ls[i].n[k] * sizeof *v);
            at += ls[i].n[k];
        }
        qsort(v, (size_t)n, sizeof *v, cmp64);
        all = realloc(all, (size_t)(nall + n + 1) * sizeof *all);
        if (n) memcpy(all + nall, v, (size_t)n * sizeof *v);
        nall += n;
        printf("kind=%s requests=%ld errors=%ld p50_us=%lld p99_us=%lld%s", mix[k].name, n, err,
               (long long)(n ? v[n / 2] : 0), (long long)(n ? v[(n * 99) / 100] : 0),
               err ? "" : "\n");
        if (err) printf(" last_error=%ld\n", last);
        total += n;
        errors += err;
        free(v);
    }
    qsort(all, (size_t)nall, sizeof *all, cmp64);
    for (int i = 0; i < clients; i++)
        for (size_t k = 0; k < NMIX; k++) free(ls[i].lat[k]);
    free(ls);
    free(t);
    fixture_stop(&fx);
    printf("clients=%d requests=%ld errors=%ld rps=%.0f p50_us=%lld p99_us=%lld\n", clients, total,
           errors, (double)total / elapsed, (long long)(nall ? all[nall / 2] : 0),
           (long long)(nall ? all[(nall * 99) / 100] : 0));
    free(all);
    return errors ? 1 : 0;
}

/* ---- gpupool-bench drive / revoke: gateways that run elsewhere ---- */

static const char drive_body[] =
    "{\"model\":\"bench\",\"max_tokens\":16,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

enum { MAX_TARGETS = 8 };

typedef struct drive_arg {
    char url[512];
    const char *key;
    int conc, seconds;
    result r;
} drive_arg;

static void *drive_main(void *p) {
    drive_arg *a = p;
    a->r = run(a->url, a->key, drive_body, a->conc, a->seconds, 0);
    return NULL;
}

int bench_drive(int argc, char **argv);
int bench_drive(int argc, char **argv) {
    static const char use[] = "usage: gpupool-bench drive --target URL KEY [--target URL KEY ...]"
                              " [--seconds S] [--concurrency C]\n";
    drive_arg t[MAX_TARGETS];
    int n = 0, seconds = 5, conc = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--target") && i + 2 < argc && n < MAX_TARGETS) {
            memset(&t[n], 0, sizeof t[n]);
            snprintf(t[n].url, sizeof t[n].url, "%s/v1/chat/completions", argv[i + 1]);
            t[n++].key = argv[i + 2];
            i += 2;
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--concurrency") && i + 1 < argc) {
            conc = atoi(argv[++i]);
        } else {
            fputs(use, stderr);
            return 2;
        }
    }
    if (!n || seconds < 1 || seconds > 3600 || conc < 1 || conc > 512) {
        fputs(use, stderr);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_t th[MAX_TARGETS];
    for (int i = 0; i < n; i++) {
        t[i].conc = conc;
        t[i].seconds = seconds;
        pthread_create(&th[i], NULL, drive_main, &t[i]);
    }
    double total = 0;
    long fails = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        printf("target=%s rps=%.0f p50_us=%lld p99_us=%lld failures=%ld\n", t[i].url, t[i].r.rps,
               (long long)t[i].r.p50, (long long)t[i].r.p99, t[i].r.failures);
        total += t[i].r.rps;
        fails += t[i].r.failures;
    }
    printf("total_rps=%.0f failures=%ld\n", total, fails);
    curl_global_cleanup();
    return fails ? 1 : 0;
}

/* One chat through `url` with key `key`: its HTTP status (0: no answer). */
static long chat_status(CURL *e, const char *url, const char *key) {
    char auth[256];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, drive_body);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
    long st = 0;
    if (curl_easy_perform(e) == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    return st;
}

int bench_revoke(int argc, char **argv);
int bench_revoke(int argc, char **argv) {
    static const char use[] = "usage: gpupool-bench revoke --api URL --token T --key-path PATH"
                              " --key K --target URL [--target URL ...]\n";
    const char *api = NULL, *token = NULL, *path = NULL, *key = NULL;
    char url[MAX_TARGETS][512];
    int n = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--api")) api = argv[i + 1];
        else if (!strcmp(argv[i], "--token")) token = argv[i + 1];
        else if (!strcmp(argv[i], "--key-path")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--key")) key = argv[i + 1];
        else if (!strcmp(argv[i], "--target") && n < MAX_TARGETS)
            snprintf(url[n++], sizeof url[0], "%s/v1/chat/completions", argv[i + 1]);
        else {
            fputs(use, stderr);
            return 2;
        }
    }
    if (!api || !token || !path || !key || !n || argc % 2 == 0) {
        fputs(use, stderr);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *e[MAX_TARGETS];
    int rc = 0;
    for (int i = 0; i < n; i++) {
        e[i] = curl_easy_init();
        long st = chat_status(e[i], url[i], key);
        if (st != 200) {
            fprintf(stderr, "gpupool-bench revoke: %s answered %ld before the revocation\n", url[i], st);
            rc = 1;
        }
    }
    gp_err err = GP_ERR_INIT;
    long st = 0;
    json_t *resp = NULL;
    if (!rc && (httpc_json(api, path, "DELETE", token, NULL, 10, &st, &resp, &err) || st / 100 != 2)) {
        fprintf(stderr, "gpupool-bench revoke: DELETE %s: %ld %s\n", path, st, err.msg);
        rc = 1;
    }
    json_decref(resp);
    int64_t t0 = mono_us(), last = 0;
    for (int i = 0; i < n && !rc; i++) {
        int64_t at = -1;
        while (mono_us() - t0 < 10000000) {
            long s2 = chat_status(e[i], url[i], key);
            if (s2 == 401) {
                at = mono_us() - t0;
                break;
            }
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        printf("target=%s revoked_ms=%.1f\n", url[i], at < 0 ? -1.0 : (double)at / 1000.0);
        if (at < 0) rc = 1;
        else if (at > last) last = at;
    }
    if (!rc) printf("revoke_all_ms=%.1f\n", (double)last / 1000.0);
    for (int i = 0; i < n; i++) curl_easy_cleanup(e[i]);
    curl_global_cleanup();
    return rc;
}
