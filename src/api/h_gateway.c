/*
 * h_gateway.c - the OpenAI-compatible gateway under /v1.
 *
 *   POST /v1/chat/completions   (streaming and not)
 *   POST /v1/completions        (streaming and not)
 *   POST /v1/embeddings         (float and base64: passed through)
 *   GET  /v1/models             (what the key may use)
 *
 * Every call: the API key (Bearer sk-…) -> the model, resolved within the
 * key's tenant or among public models (anything else: 404 model_not_found)
 * -> per-minute windows of key and project (429 rate_limit_exceeded) ->
 * reserve the request's most tokens against the monthly quotas of key,
 * project and tenant (429 insufficient_quota) -> forward to an endpoint
 * (round robin; a connect failure tries the next) -> answer as the
 * upstream answered, streaming as it arrives -> one usage record, queued
 * and written in a batch with the settlement of the reservation.
 *
 * The request body is passed on as it came, unless the gateway must add
 * stream_options.include_usage (the client did not ask for usage; its
 * extra chunk is then removed from the stream) or rename the model for an
 * endpoint.  Errors are in OpenAI's shape {"error":{message,type,param,code}}.
 *
 * Retrieval-augmented chat: when the key belongs to an application that
 * binds the requested model to knowledge bases (kb_rag_lookup), the top-k
 * chunks for the last user message are added as a first system message
 * with numbered sources (the body is then re-encoded), and the answer gets
 * a top-level "sources" [{kb, document, chunk, start, end, score}]: in the
 * JSON of a whole answer, in the first chunk of a stream.  Its tokens are
 * counted like any other request's (the upstream's usage includes them).
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../gateway/gateway.h"
#include "../kb/kb.h"
#include "../quota/quota.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UPSTREAM_BODY (64u << 20)

static void oai_error(api_req *r, int status, const char *type, const char *code,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void oai_error(api_req *r, int status, const char *type, const char *code,
                      const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    api_reply(r, status,
              json_pack("{s:{s:s,s:s,s:n,s:s?}}", "error", "message", msg, "type", type, "param",
                        "code", code));
}

/* The key from "Authorization: Bearer sk-…"; 0, or -1 with a 401 set. */
/*
 * The key from "Authorization: Bearer sk-…"; 0, or -1 with a 401 set.
 * With `keep`, the read transaction stays open for the caller's next reads
 * (one transaction per request instead of two); *keep is NULL on failure.
 */
static int authenticate(api_req *r, gw_key *k, store_tx **keep) {
    gp_err err = GP_ERR_INIT;
    if (keep) *keep = NULL;
    const char *a = gw_bearer_key(r->authorization);
    if (!a) {
        oai_error(r, 401, "invalid_request_error", "invalid_api_key",
                  "You didn't provide an API key. Send it as 'Authorization: Bearer sk-…'.");
        return -1;
    }
    store_tx *tx;
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        oai_error(r, 503, "server_error", "store_unavailable", "%s", err.msg);
        return -1;
    }
    int rc = gw_key_auth(tx, a, gt_now_us(), k, &err);
    /* from here the transaction sees the key's tenant only (row-level security) */
    if (!rc && keep && (rc = store_set_tenant(tx, k->tenant_id, &err))) gw_key_release(k);
    if (rc || !keep) store_rollback(tx);
    else *keep = tx;
    if (rc == GP_EUNAUTH) {
        oai_error(r, 401, "invalid_request_error", "invalid_api_key", "%s", err.msg);
        return -1;
    }
    if (rc) {
        oai_error(r, 500, "server_error", "internal_error", "%s", err.msg);
        return -1;
    }
    return 0;
}

/* ---- sizing a request ---- */

static int64_t text_chars(json_t *v) {
    if (json_is_string(v)) return (int64_t)json_string_length(v);
    int64_t n = 0;
    size_t i;
    json_t *e;
    if (json_is_integer(v)) return 4; /* a token id */
    if (json_is_array(v)) json_array_foreach(v, i, e) n += text_chars(e);
    else if (json_is_object(v)) n += text_chars(json_object_get(v, "text"));
    return n;
}

/* Characters of the prompt: the messages' contents, the prompt, or the input. */
static int64_t prompt_chars(json_t *req, const char *kind) {
    if (!strcmp(kind, "chat")) {
        int64_t n = 0;
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(req, "messages"), i, m) n += text_chars(json_object_get(m, "content"));
        return n;
    }
    return text_chars(json_object_get(req, !strcmp(kind, "embedding") ? "input" : "prompt"));
}

/* The most tokens the answer may hold, as asked (or the default). */
static int64_t max_out(json_t *req, const char *kind) {
    if (!strcmp(kind, "embedding")) return 0;
    json_t *v = json_object_get(req, "max_completion_tokens");
    if (!json_is_integer(v)) v = json_object_get(req, "max_tokens");
    if (json_is_integer(v) && json_integer_value(v) > 0) return json_integer_value(v);
    return GW_DEFAULT_MAX_TOKENS;
}

/* Characters of generated text in a non-streamed answer. */
static int64_t answer_chars(json_t *resp) {
    int64_t n = 0;
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(resp, "choices"), i, ch) {
        const char *t = json_string_value(json_object_get(json_object_get(ch, "message"), "content"));
        if (!t) t = json_string_value(json_object_get(ch, "text"));
        if (t) n += (int64_t)strlen(t);
    }
    return n;
}

/* ---- one request's bookkeeping ---- */

typedef struct gwreq {
    gw_runtime *rt;
    gw_key key;          /* models released once the request is set up */
    gw_usage u;
    int64_t start_mono, reserved, prompt_chars;
} gwreq;

static void record(gwreq *g, int status, int have_usage, int64_t pt, int64_t ct, int64_t out_chars) {
    gw_usage *u = &g->u;
    u->status = status;
    u->latency_us = gt_mono_us() - g->start_mono;
    /* tokens count when the upstream produced them, even for a stream cut short */
    if ((status >= 200 && status < 300) || have_usage || out_chars > 0) {
        if (have_usage) {
            u->prompt_tokens = pt;
            u->completion_tokens = ct;
        } else {
            u->prompt_tokens = gw_estimate_tokens(g->prompt_chars);
            u->completion_tokens = gw_estimate_tokens(out_chars);
            u->estimated = 1;
        }
    }
    gw_rt_adjust(g->rt, &g->key, u->prompt_tokens + u->completion_tokens - g->reserved, gt_now_us());
    if (gw_rt_record(g->rt, u))
        log_kv(LOG_ERROR, "usage record dropped: out of memory", "key", u->key_id, (char *)NULL);
}

/* ---- streaming ---- */

typedef struct gwstream {
    gwreq g;
    gw_call *call;
    gw_sse sse;
    strbuf out;
    size_t off;
    int ended, status;
    json_t *sources;     /* RAG: added to the first chunk, then NULL */
} gwstream;

/*
 * Add "sources" to the first JSON chunk among the complete events in
 * `out`.  1 when done (added, or the stream started with [DONE] or an
 * error, so there is nothing to add it to); 0 to try again after more.
 */
static int add_sources_to_stream(strbuf *out, json_t *sources) {
    size_t i = 0;
    while (i < out->len) {
        const char *b = out->buf + i;
        size_t left = out->len - i, end = 0, dl = 0;
        size_t cut = gw_sse_event_end(b, left, 0, &end);
        if (!cut) return 0;
        const char *d = gw_sse_data(b, end, &dl);
        if (d) {
            json_t *j = json_loadb(d, dl, 0, NULL);
            if (!json_is_object(j) || json_object_get(j, "error")) {
                json_decref(j);
                return 1;
            }
            json_object_set(j, "sources", sources);
            char *t = json_dumps(j, JSON_COMPACT);
            json_decref(j);
            if (!t) return 1;
            strbuf nb = SB_INIT;
            sb_add(&nb, out->buf, i);
            sb_addf(&nb, "data: %s\n\n", t);
            sb_add(&nb, b + cut, left - cut);
            free(t);
            if (sb_ok(&nb)) {
                sb_setlen(out, 0);
                sb_add(out, nb.buf, nb.len);
            }
            sb_release(&nb);
            return 1;
        }
        i += cut;
    }
    return 0;
}

static long stream_read(void *cls, char *buf, size_t max) {
    gwstream *s = cls;
    while (s->off == s->out.len) {
        if (s->ended) return 0;
        sb_setlen(&s->out, 0);
        s->off = 0;
        char tmp[16384];
        long n = gw_call_read(s->call, tmp, sizeof tmp);
        if (n > 0) {
            gw_sse_feed(&s->sse, tmp, (size_t)n, &s->out);
            if (s->sources && add_sources_to_stream(&s->out, s->sources)) {
                json_decref(s->sources);
                s->sources = NULL;
            }
            continue;
        }
        gw_sse_finish(&s->sse, &s->out);
        s->ended = 1;
        if ((n < 0 || !s->sse.saw_done) && !s->sse.saw_error) {
            /* the upstream broke off: say so, so the client does not take it for the end */
            s->status = 502;
            sb_adds(&s->out, "data: {\"error\":{\"message\":\"the upstream ended the stream early\","
                             "\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n");
        }
        if (!sb_ok(&s->out)) return -1;
    }
    size_t n = s->out.len - s->off;
    if (n > max) n = max;
    memcpy(buf, s->out.buf + s->off, n);
    s->off += n;
    return (long)n;
}

static void stream_release(void *cls) {
    gwstream *s = cls;
    /* a client that went away before the end: 499, what it got is still counted */
    int status = !s->ended ? 499 : s->status;
    record(&s->g, status, s->sse.has_usage, s->sse.prompt_tokens, s->sse.completion_tokens,
           s->sse.completion_chars);
    gw_call_free(s->call);
    json_decref(s->sources);
    gw_sse_release(&s->sse);
    sb_release(&s->out);
    free(s);
}

/* ---- forwarding ---- */

/* The body for endpoint `ep`: the client's bytes, or a re-encoded copy when it must change. */
static char *body_for(api_req *r, json_t *req, const gw_endpoint *ep, int add_usage, int changed,
                      size_t *len) {
    if (!add_usage && !ep->upstream_model[0] && !changed) {
        *len = r->body_len;
        return NULL; /* use r->body as it is */
    }
    json_t *copy = json_deep_copy(req);
    if (add_usage) {
        json_t *so = json_object_get(copy, "stream_options");
        if (!json_is_object(so)) json_object_set_new(copy, "stream_options", so = json_object());
        json_object_set_new(so, "include_usage", json_true());
    }
    if (ep->upstream_model[0]) json_object_set_new(copy, "model", json_string(ep->upstream_model));
    char *text = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    *len = text ? strlen(text) : 0;
    return text;
}

/* The text of the last user message of a chat request ("" when none). */
static void last_user_text(json_t *req, strbuf *out) {
    json_t *msgs = json_object_get(req, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "user") != 0) continue;
        json_t *c = json_object_get(m, "content");
        if (json_is_string(c)) {
            sb_adds(out, json_string_value(c));
        } else {
            size_t k;
            json_t *part;
            json_array_foreach(c, k, part) {
                const char *t = json_string_value(json_object_get(part, "text"));
                if (t) sb_addf(out, "%s%s", out->len ? " " : "", t);
            }
        }
        return;
    }
}

/*
 * Retrieval for a chat request of key `k`: when its application binds
 * `model` to knowledge bases, the top chunks for the last user message go
 * into `req` as a first system message.  Returns the sources to report
 * (new reference; [] when nothing matched), or NULL when no binding applies
 * (or retrieval failed: logged, and the request goes on without it).
 * *changed: whether `req` was modified.
 */
static json_t *rag_augment(api_req *r, const gw_key *k, const char *model, json_t *req,
                           int *changed) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *ids = NULL, *hits = NULL;
    int kk = 0;
    *changed = 0;
    if (!k->app[0] || !json_is_array(json_object_get(req, "messages"))) return NULL;
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        log_kv(LOG_WARN, "retrieval skipped", "detail", err.msg, (char *)NULL);
        return NULL;
    }
    int rc = store_set_tenant(tx, k->tenant_id, &err);
    if (!rc) rc = kb_rag_lookup(tx, k->tenant_id, k->project_id, k->app, model, &ids, &kk, &err);
    if (rc) {
        store_rollback(tx);
        if (rc != GP_ENOTFOUND)
            log_kv(LOG_WARN, "retrieval skipped", "detail", err.msg, (char *)NULL);
        return NULL;
    }
    strbuf q = SB_INIT;
    last_user_text(req, &q);
    if (q.len > KB_MAX_QUERY_LEN) { /* a long message: its beginning is the query */
        size_t n = KB_MAX_QUERY_LEN;
        while (n && ((unsigned char)q.buf[n] & 0xC0) == 0x80) n--;
        sb_setlen(&q, n);
    }
    rc = kb_query(tx, k->tenant_id, ids, NULL, q.buf, kk, &hits, &err);
    store_rollback(tx);
    sb_release(&q);
    json_decref(ids);
    if (rc == GP_EINVALID) return json_array(); /* no words to search for */
    if (rc) {
        log_kv(LOG_WARN, "retrieval failed", "detail", err.msg, (char *)NULL);
        return NULL;
    }
    json_t *sources = json_array();
    size_t i;
    json_t *h;
    json_array_foreach(hits, i, h) {
        json_array_append_new(sources, json_pack("{s:O,s:O,s:O,s:O,s:O,s:O}", "kb",
                                                 json_object_get(h, "kb"), "document",
                                                 json_object_get(h, "document"), "chunk",
                                                 json_object_get(h, "chunk"), "start",
                                                 json_object_get(h, "start"), "end",
                                                 json_object_get(h, "end"), "score",
                                                 json_object_get(h, "score")));
    }
    if (json_array_size(hits)) {
        strbuf sys = SB_INIT;
        kb_rag_prompt(hits, &sys);
        if (sb_ok(&sys)) {
            json_array_insert_new(json_object_get(req, "messages"), 0,
                                  json_pack("{s:s,s:s}", "role", "system", "content", sys.buf));
            *changed = 1;
        }
        sb_release(&sys);
    }
    json_decref(hits);
    return sources;
}

static void forward(api_req *r, const char *kind, const char *path) {
    gp_err err = GP_ERR_INIT;
    gwreq g;
    memset(&g, 0, sizeof g);
    g.rt = r->gw;
    g.start_mono = gt_mono_us();
    store_tx *tx; /* the key's read transaction, kept for resolving the model */
    if (authenticate(r, &g.key, &tx)) return;
    json_t *req = NULL;
    if (jx_parse(r->body, r->body_len, r->cfg->max_depth, 1, &req, &err)) {
        store_rollback(tx);
        gw_key_release(&g.key);
        oai_error(r, 400, "invalid_request_error", "invalid_json", "%s", err.msg);
        return;
    }
    const char *model = json_string_value(json_object_get(req, "model"));
    if (!model || !*model) {
        store_rollback(tx);
        gw_key_release(&g.key);
        json_decref(req);
        oai_error(r, 400, "invalid_request_error", "missing_model",
                  "you must provide a model parameter");
        return;
    }
    int stream = strcmp(kind, "embedding") && json_is_true(json_object_get(req, "stream"));
    int asked_usage =
        stream && json_is_true(json_object_get(json_object_get(req, "stream_options"), "include_usage"));
    g.prompt_chars = prompt_chars(req, kind);
    g.reserved = gw_estimate_tokens(g.prompt_chars) + max_out(req, kind);
    /* which model, where */
    gw_route route;
    int rc = gw_resolve(tx, &g.key, model, &route, &err);
    store_rollback(tx);
    if (rc) {
        gw_key_release(&g.key);
        json_decref(req);
        if (rc == GP_ENOTFOUND) oai_error(r, 404, "invalid_request_error", "model_not_found", "%s", err.msg);
        else oai_error(r, 500, "server_error", "internal_error", "%s", err.msg);
        return;
    }
    /* retrieval-augmented chat: the context counts towards the prompt */
    int changed = 0;
    json_t *sources = !strcmp(kind, "chat") ? rag_augment(r, &g.key, model, req, &changed) : NULL;
    if (changed) {
        g.prompt_chars = prompt_chars(req, kind);
        g.reserved = gw_estimate_tokens(g.prompt_chars) + max_out(req, kind);
    }
    /* the usage record says who, whatever happens next */
    gw_usage *u = &g.u;
    u->at_us = gt_now_us();
    snprintf(u->tenant_id, sizeof u->tenant_id, "%s", g.key.tenant_id);
    snprintf(u->project_id, sizeof u->project_id, "%s", g.key.project_id);
    snprintf(u->tenant, sizeof u->tenant, "%s", g.key.tenant);
    snprintf(u->project, sizeof u->project, "%s", g.key.project);
    snprintf(u->app, sizeof u->app, "%s", g.key.app);
    snprintf(u->key_id, sizeof u->key_id, "%s", g.key.id);
    snprintf(u->model, sizeof u->model, "%s", model);
    snprintf(u->model_tenant, sizeof u->model_tenant, "%s", route.model_tenant);
    snprintf(u->kind, sizeof u->kind, "%s", kind);
    u->stream = stream;
    /* per-minute windows */
    int64_t retry = 1;
    char why[80] = "";
    if (!gw_rt_admit(r->gw, &g.key, g.reserved, gt_now_us(), &retry, why, sizeof why)) {
        char ra[24];
        snprintf(ra, sizeof ra, "%lld", (long long)retry);
        api_header(r, "Retry-After", ra);
        gw_key_release(&g.key);
        json_decref(req);
        json_decref(sources);
        oai_error(r, 429, "requests", "rate_limit_exceeded",
                  "Rate limit reached for %s. Please try again in %llds.", why, (long long)retry);
        return;
    }
    /* the monthly quotas: reserve the most this request may use (a write; skipped when
     * no quota applies, which keeps a plain request free of write transactions) */
    int quota = g.key.tokens_month > 0 || g.key.project_tokens_month != QUOTA_NONE ||
                g.key.tenant_tokens_month != QUOTA_NONE;
    rc = quota ? store_begin(r->store, STORE_WRITE, &tx, &err) : GP_OK;
    if (!rc && quota) {
        rc = gw_reserve(tx, &g.key, g.reserved, gt_now_us(), u->hold, &err);
        if (rc) store_rollback(tx);
        else rc = store_commit(tx, &err);
    }
    if (rc) {
        gw_rt_adjust(r->gw, &g.key, -g.reserved, gt_now_us());
        gw_key_release(&g.key);
        json_decref(req);
        json_decref(sources);
        if (rc == GP_EFORBIDDEN) {
            api_header(r, "Retry-After", "3600");
            oai_error(r, 429, "insufficient_quota", "insufficient_quota", "%s", err.msg);
        } else {
            oai_error(r, 503, "server_error", "store_busy", "%s", err.msg);
        }
        return;
    }
    gw_key_release(&g.key); /* the allow-list is no longer needed */
    /* an endpoint, round robin; a connect failure tries the next */
    gw_call *call = NULL;
    char last[300] = "no healthy endpoint";
    unsigned long start = route.n ? gw_rt_next(r->gw) % (unsigned long)route.n : 0;
    for (int i = 0; i < route.n && !call; i++) {
        const gw_endpoint *ep = &route.ep[(start + (unsigned long)i) % (unsigned long)route.n];
        size_t len;
        char *b = body_for(r, req, ep, stream && !asked_usage, changed, &len);
        gp_err e2 = GP_ERR_INIT;
        rc = gw_call_start(ep, path, b ? b : r->body, len, gw_rt_timeout(r->gw), &call, &e2);
        free(b);
        if (rc) {
            snprintf(last, sizeof last, "%s", e2.msg);
            log_kv(LOG_WARN, "endpoint unreachable; trying the next", "endpoint", ep->id, "detail",
                   e2.msg, (char *)NULL);
            call = NULL;
            continue;
        }
        snprintf(u->endpoint_id, sizeof u->endpoint_id, "%s", ep->id);
        snprintf(u->accelerator, sizeof u->accelerator, "%s", ep->accelerator);
    }
    json_decref(req); /* `model` pointed into it: u->model from here */
    model = NULL;
    if (!call) {
        json_decref(sources);
        int st = route.n ? 502 : 503;
        record(&g, st, 0, 0, 0, 0);
        oai_error(r, st, "server_error", route.n ? "upstream_unreachable" : "no_healthy_endpoint",
                  "model '%s' has %s: %s", u->model,
                  route.n ? "no endpoint that answered" : "no healthy endpoint", last);
        return;
    }
    long st = gw_call_status(call);
    if (stream && st == 200) {
        gwstream *s = calloc(1, sizeof *s);
        if (!s) {
            json_decref(sources);
            gw_call_free(call);
            record(&g, 500, 0, 0, 0, 0);
            oai_error(r, 500, "server_error", "out_of_memory", "out of memory");
            return;
        }
        s->g = g;
        s->call = call;
        s->status = 200;
        s->sources = sources;
        gw_sse_init(&s->sse, !asked_usage);
        sb_init(&s->out);
        api_stream(r, 200, "text/event-stream", stream_read, stream_release, s);
        return;
    }
    /* a whole answer: passed on as it came; its usage read (or estimated) */
    strbuf out = SB_INIT;
    rc = gw_call_body(call, &out, MAX_UPSTREAM_BODY, &err);
    gw_call_free(call);
    if (rc) {
        json_decref(sources);
        sb_release(&out);
        record(&g, 502, 0, 0, 0, 0);
        oai_error(r, 502, "server_error", "upstream_error", "%s", err.msg);
        return;
    }
    json_t *resp = json_loadb(out.buf ? out.buf : "", out.len, 0, NULL);
    json_t *usage = json_object_get(resp, "usage");
    int have = json_is_object(usage) && json_is_integer(json_object_get(usage, "prompt_tokens"));
    record(&g, (int)st, have, json_integer_value(json_object_get(usage, "prompt_tokens")),
           json_integer_value(json_object_get(usage, "completion_tokens")), answer_chars(resp));
    /* RAG: the sources used, as an extra top-level field of a successful answer */
    char *with = NULL;
    if (sources && st >= 200 && st < 300 && json_is_object(resp)) {
        json_object_set(resp, "sources", sources);
        with = json_dumps(resp, JSON_COMPACT);
    }
    json_decref(sources);
    json_decref(resp);
    api_reply_text(r, (int)st, "application/json", with ? with : out.buf ? out.buf : "");
    free(with);
    sb_release(&out);
}

void h_gw_chat(api_req *r) { forward(r, "chat", "/chat/completions"); }
void h_gw_completions(api_req *r) { forward(r, "completion", "/completions"); }
void h_gw_embeddings(api_req *r) { forward(r, "embedding", "/embeddings"); }

void h_gw_models(api_req *r) {
    gp_err err = GP_ERR_INIT;
    gw_key k;
    if (authenticate(r, &k, NULL)) return;
    store_tx *tx;
    json_t *data = NULL;
    int rc = store_begin(r->store, STORE_READ, &tx, &err);
    if (!rc) {
        rc = store_set_tenant(tx, k.tenant_id, &err);
        if (!rc) rc = gw_models_for_key(tx, &k, &data, &err);
        store_rollback(tx);
    }
    gw_key_release(&k);
    if (rc) {
        oai_error(r, 500, "server_error", "internal_error", "%s", err.msg);
        return;
    }
    api_reply(r, 200, json_pack("{s:s,s:o}", "object", "list", "data", data));
}
