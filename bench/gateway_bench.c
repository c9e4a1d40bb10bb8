/*
 * gateway_bench.c - `gpupool-bench gateway`: what the /v1 gateway adds to a
 * request, against the same upstream reached directly, in one run.
 *
 *   gpupool-bench gateway [--seconds S] [--concurrency C] [--requests N]
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
 * Ends with `direct_rps=N gateway_rps=N added_p50_us=N added_p99_us=N`
 * (non-streaming).  Usage records are written in batches while it runs;
 * they and the token ledger are checked afterwards: one record per request.
 */
#define _GNU_SOURCE
#include "../src/api/api.h"
#include "../src/auth/auth.h"
#include "../src/core/httpc.h"
#include "../src/core/log.h"
#include "../src/core/rand.h"
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
        memcpy(all + k, ls[i].lat, (size_t)ls[i].n * sizeof *all);
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

int bench_gateway(int argc, char **argv);
int bench_gateway(int argc, char **argv) {
    int seconds = 3, conc = 8;
    long count = 2000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds")) seconds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--concurrency")) conc = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests")) count = atol(argv[i + 1]);
        else {
            fprintf(stderr, "usage: gpupool-bench gateway [--seconds S] [--concurrency C] [--requests N]\n");
            return 2;
        }
    }
    if (argc % 2 == 0 || seconds < 1 || conc < 1 || count < 10) {
        fprintf(stderr, "usage: gpupool-bench gateway [--seconds S] [--concurrency C] [--requests N]\n");
        return 2;
    }
    rnd_init();
    httpc_global_init();
    log_set_level(LOG_ERROR);
    build_stream();
    /* the upstream */
    struct MHD_Daemon *up = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO, 0, NULL,
        NULL, up_request, NULL, MHD_OPTION_NOTIFY_COMPLETED, up_done, NULL,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000, MHD_OPTION_END);
    if (!up) {
        fprintf(stderr, "gpupool-bench gateway: cannot start the upstream\n");
        return 1;
    }
    int up_port = MHD_get_daemon_info(up, MHD_DAEMON_INFO_BIND_PORT)->port;
    /* the server, on a fresh store */
    char dir[] = "/tmp/gpupool-bench-XXXXXX", path[256], tokpath[256];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/gpupool.db", dir);
    snprintf(tokpath, sizeof tokpath, "%s/admin.token", dir);
    gp_err err = GP_ERR_INIT;
    store_t *st;
    int created;
    api_server *srv;
    api_config cfg = API_CONFIG_DEFAULTS;
    cfg.listen = "127.0.0.1:0";
    cfg.node_timeout_s = 0;
    cfg.health_interval_s = 0;
    if (store_open(path, 8, &st, &err) || auth_bootstrap(st, tokpath, &created, &err) ||
        api_server_start(&cfg, st, &srv, &err)) {
        fprintf(stderr, "gpupool-bench gateway: %s\n", err.msg);
        return 1;
    }
    char token[128] = "", base[64], upurl[128], gwurl[128], key[128] = "";
    FILE *f = fopen(tokpath, "r");
    if (!f || !fgets(token, sizeof token, f)) return 1;
    fclose(f);
    token[strcspn(token, "\n")] = '\0';
    snprintf(base, sizeof base, "http://127.0.0.1:%d", api_server_port(srv));
    snprintf(upurl, sizeof upurl, "http://127.0.0.1:%d/v1", up_port);
    json_t *k = NULL;
    int rc = call(base, "/api/v1/tenants", token, json_pack("{s:s}", "name", "bench"), NULL) ||
             call(base, "/api/v1/tenants/bench/projects", token, json_pack("{s:s}", "name", "p"), NULL);
    if (!rc) {
        gp_err e2 = GP_ERR_INIT;
        long s2;
        json_t *resp = NULL;
        rc = httpc_json(base, "/api/v1/tenants/bench/members/admin", "PUT", token,
                        json_pack("{s:s}", "role", "tenant-admin"), 10, &s2, &resp, &e2) ||
             s2 / 100 != 2;
        json_decref(resp);
    }
    if (!rc)
        rc = call(base, "/api/v1/tenants/bench/models", token, json_pack("{s:s}", "name", "bench"), NULL) ||
             call(base, "/api/v1/tenants/bench/models/bench/endpoints", token,
                  json_pack("{s:s,s:s}", "url", upurl, "accelerator", "H100-80GB"), NULL) ||
             call(base, "/api/v1/tenants/bench/projects/p/keys", token, json_pack("{s:s}", "name", "k"), &k);
    if (rc) return 1;
    snprintf(key, sizeof key, "%s", json_string_value(json_object_get(k, "key")));
    json_decref(k);

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
    for (int s = 0; s < 2; s++) {
        const char *body = s ? streamed : plain;
        for (int g = 0; g < 2; g++) {
            const char *u = g ? gwurl : direct_chat;
            run(u, key, body, 1, 0, 50); /* warm up */
            lat[s][g] = run(u, key, body, 1, 0, count);
            thr[s][g] = run(u, key, body, conc, seconds, 0);
        }
        printf("mode=%s direct_p50_us=%lld direct_p99_us=%lld gateway_p50_us=%lld "
               "gateway_p99_us=%lld added_p50_us=%lld added_p99_us=%lld direct_rps=%.0f "
               "gateway_rps=%.0f failures=%ld\n",
               s ? "stream" : "plain", (long long)lat[s][0].p50, (long long)lat[s][0].p99,
               (long long)lat[s][1].p50, (long long)lat[s][1].p99,
               (long long)(lat[s][1].p50 - lat[s][0].p50), (long long)(lat[s][1].p99 - lat[s][0].p99),
               thr[s][0].rps, thr[s][1].rps,
               lat[s][0].failures + lat[s][1].failures + thr[s][0].failures + thr[s][1].failures);
    }
    long through = 0;
    for (int s = 0; s < 2; s++) through += lat[s][1].n + thr[s][1].n + 50;
    api_server_stop(srv); /* writes every queued usage record */
    /* one usage record per request that went through the gateway */
    store_tx *tx;
    store_stmt *q;
    long records = -1;
    if (!store_begin(st, STORE_READ, &tx, &err)) {
        if (!store_query(tx, &q, &err, "SELECT COUNT(*) FROM usage_records WHERE status = 200", "")) {
            if (store_step(q, &err) > 0) records = (long)store_int(q, 0);
            store_done(q);
        }
        store_rollback(tx);
    }
    printf("# usage records: %ld for %ld requests through the gateway%s\n", records, through,
           records == through ? "" : " (MISMATCH)");
    store_close(st);
    MHD_stop_daemon(up);
    free(stream_text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "gpupool-bench gateway: could not remove %s\n", dir);
    printf("direct_rps=%.0f gateway_rps=%.0f added_p50_us=%lld added_p99_us=%lld\n", thr[0][0].rps,
           thr[0][1].rps, (long long)(lat[0][1].p50 - lat[0][0].p50),
           (long long)(lat[0][1].p99 - lat[0][0].p99));
    return records == through ? 0 : 1;
}
