/*
 * request.c - one request of the OpenAI-compatible gateway under /v1, from
 * its API key to its answer (gw_request_run, gateway.h).  The HTTP side is
 * src/api/h_gateway.c: it fills a gw_in from the request and sends the
 * gw_out this returns (OpenAI's error shape, Retry-After, the stream).
 * Nothing here includes src/api/: the error comes back as data, so the
 * gateway module does not call back into the API (no cycle).  Every store
 * transaction of the gateway's request path is here.
 *
 * Every call: the API key (Bearer sk-…) -> the model, resolved within the
 * key's tenant or among public models (anything else: 404 model_not_found)
 * -> every limit before any work: the key's requests in flight (429
 * rate_limit_exceeded beyond max_parallel), per-minute windows of key and
 * project (429 rate_limit_exceeded), the request's most tokens taken from
 * this process's lease of the monthly quotas of key, project and tenant
 * (429 insufficient_quota; no store write unless the lease must grow) -> retrieval, when its application binds the model to
 * knowledge bases (never for a refused request) -> forward to an endpoint
 * (round robin; a connect failure tries the next) -> answer as the
 * upstream answered, streaming as it arrives -> one usage record, queued
 * and written in a batch that consumes the lease.  The key and the route
 * come from the runtime's read cache (gw_cache_*): a request of a key and
 * model seen lately reads nothing from the store, and writes nothing.
 * The stages, in order: admit_key, check_body, route, limits, retrieve,
 * call, answer; one gwreq owns what the request holds, and gwreq_release()
 * runs on every exit.
 *
 * Under a monthly token quota the request's max_tokens is what the budgets
 * still allow (gw_rt_lease_take_fit): sent upstream, reserved exactly, never
 * billed beyond, and a stream is cut cleanly once it is spent
 * (gw_sse_set_budget; docs/gateway.md, "Token budgets").
 *
 * The request body is passed on as it came, unless the gateway must add
 * stream_options.include_usage (the client did not ask for usage; its
 * extra chunk is then removed from the stream), rename the model for an
 * endpoint or set the max_tokens a budget allows.  Errors are in OpenAI's shape {"error":{message,type,param,code}}.
 *
 * Nothing a client or an upstream sends is taken on trust (docs/gateway.md):
 * a body outside the documented ranges (gw_request_check: "stream" not a
 * boolean, max_tokens out of 1..GW_MAX_OUTPUT_TOKENS, ...) is a 400 before
 * any window, quota or upstream is touched; the reservation is computed with
 * saturating arithmetic; the usage an upstream reports is clipped to what
 * the request could have used (gw_usage_clip) and the record flagged; a 3xx
 * from an upstream is a 502, never followed nor relayed.  Refusals of a
 * known key (model not allowed, rate limit, quota) are counted and audited,
 * at most once per key, kind and minute.
 *
 * Retrieval-augmented chat: when the key belongs to an application that
 * binds the requested model to knowledge bases (kb_rag_lookup), the top-k
 * chunks for the last user message are added as a first system message
 * with numbered sources (the body is then re-encoded), and the answer gets
 * a top-level "sources" [{kb, document, chunk, start, end, score}]: in the
 * JSON of a whole answer, in the first chunk of a stream.  Its tokens are
 * counted like any other request's (the upstream's usage includes them).
 * Whether a binding applies is read with the key and model; the KBs are
 * queried only once every limit admitted the request, which reserved the
 * most the context can add (rag_allowance_chars) and gets back what it did
 * not use.  Responses requests get the context ahead of their instructions.
 *
 * The Responses API (kind "response") goes the same way; its usage is
 * {input_tokens, output_tokens}, its stream the upstream's response.* events
 * (nothing is added to its body: it always reports usage).
 *
 * GET /v1/models and /v1/models/{model} (kinds "models", "model"): the key,
 * then the models it may use, read in a transaction of its tenant.
 */
#include "gateway.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../kb/kb.h"
#include "../quota/quota.h"
#include "gw_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UPSTREAM_BODY (64u << 20)

/* ---- one request's bookkeeping ---- */

/* What the usage record needs, from the limits to the end (a stream's, past the handler). */
typedef struct gwbook {
    gw_runtime *rt;
    gw_key key;          /* models released once the request is set up */
    gw_usage u;
    int64_t start_mono, reserved;
    int64_t leased;      /* taken from the key's lease (the reservation before retrieval) */
    gw_request_info info;
    int64_t request_bytes; /* the body as sent upstream */
    int entered;         /* counted in flight (gw_rt_enter): left when recorded */
    int64_t meter_us;    /* time record() took (gw_stage_observe) */
    int budget;          /* a monthly token budget applies: max_out is what it allowed */
} gwbook;

/* Retrieval for one request: the KBs its key's application binds to the model. */
typedef struct rag_plan {
    json_t *ids; /* KB ids (owned); NULL: no binding applies */
    int k;       /* chunks to retrieve */
} rag_plan;

/*
 * One request, as it goes through the stages.  It owns the key (in `b`),
 * the request's JSON, the retrieval plan's ids, the sources found and the
 * upstream call; gwreq_release() frees what is still here on every exit
 * (a stream takes `b`, `call` and `sources` over).
 */
typedef struct gwreq {
    store_t *st;
    const gw_in *in;
    gw_out *out;
    gwbook b;
    json_t *req;          /* the body, parsed (owned) */
    const char *model;    /* the model asked for: points into `req` */
    int stream, asked_usage;
    int response;         /* the Responses API: usage always in its events */
    gw_route route;
    rag_plan plan;
    json_t *sources;      /* RAG: what retrieval found (owned; NULL: none, or it failed) */
    int changed;          /* retrieval modified `req` */
    int cap;              /* the body must carry the max_out a budget allows */
    gw_call *call;        /* the upstream call, once started (owned) */
} gwreq;

static void call_end(gw_runtime *rt, gw_call *call, const char *ep_id);

static void gwreq_release(gwreq *g) {
    gw_key_release(&g->b.key);
    json_decref(g->req);
    g->req = NULL;
    g->model = NULL;
    json_decref(g->plan.ids);
    g->plan.ids = NULL;
    json_decref(g->sources);
    g->sources = NULL;
    if (g->call) call_end(g->b.rt, g->call, g->b.u.endpoint_id);
    g->call = NULL;
    if (g->b.entered) gw_rt_leave(g->b.rt, g->b.key.id);
    g->b.entered = 0;
}

/*
 * An error answer in OpenAI's terms into `o`: HTTP `status`, its `type` and
 * `code`, the request field at fault (`param`, NULL: none) and the message.
 * Returns `rc`, the failure's gp_err code.
 */
static int fail(gw_out *o, int rc, int status, const char *type, const char *code,
                const char *param, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int fail(gw_out *o, int rc, int status, const char *type, const char *code,
                const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->message, sizeof o->message, fmt, ap);
    va_end(ap);
    o->status = status;
    o->type = type;
    o->code = code;
    snprintf(o->param, sizeof o->param, "%s", param ? param : "");
    return rc;
}

void gw_out_release(gw_out *o) {
    if (!o) return;
    json_decref(o->json);
    o->json = NULL;
    free(o->text);
    o->text = NULL;
    if (o->release) o->release(o->cls);
    o->read = NULL;
    o->release = NULL;
    o->cls = NULL;
}

/*
 * Audit a refusal of the request's key (GW_REFUSE_*), at most once per key,
 * kind and minute (gw_rt_refusal counts every one for /metrics).  The event
 * names the key's owner, tenant and project; its summary says how many were
 * not audited since the last.  A failure to write it is logged, never
 * answered.
 */
static void audit_refusal(gwreq *g, int kind, const char *model, int status, const char *why) {
    static const char *const reasons[GW_REFUSE__N] = {"model_not_allowed", "rate_limit", "quota",
                                                      "parallel"};
    const gw_key *k = &g->b.key;
    int64_t quiet = 0;
    if (!g->b.rt || !gw_rt_refusal(g->b.rt, k->id, kind, gt_now_us(), &quiet)) return;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    if (store_begin(g->st, STORE_WRITE, &tx, &err)) {
        log_kv(LOG_WARN, "gateway refusal not audited", "detail", err.msg, (char *)NULL);
        return;
    }
    char owner[64] = "";
    store_stmt *s;
    if (!store_query(tx, &s, &err, "SELECT owner FROM api_keys WHERE id = ?", "s", k->id)) {
        if (store_step(s, &err) > 0) snprintf(owner, sizeof owner, "%s", store_text(s, 0));
        store_done(s);
    }
    gp_err_clear(&err);
    json_t *sum = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "reason", reasons[kind], "key", k->id,
                            "app", k->app, "model", model ? model : "", "detail", why ? why : "",
                            "not_audited_since_last", (json_int_t)quiet);
    char *text = sum ? json_dumps(sum, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(sum);
    audit_event ev = {
        .actor = owner[0] ? owner : k->id,
        .source = g->in->source,
        .request_id = g->in->request_id,
        .action = g->in->action ? g->in->action : "gateway",
        .target_type = "model",
        .target_id = model ? model : "",
        .tenant = k->tenant,
        .project = k->project,
        .result = "denied",
        .status = status,
        .summary = text,
    };
    int rc = audit_append(tx, &ev, NULL, &err);
    if (!rc) rc = store_commit(tx, &err);
    else store_rollback(tx);
    free(text);
    if (rc) log_kv(LOG_WARN, "gateway refusal not audited", "detail", err.msg, (char *)NULL);
}

/*
 * Stage admit_key: the key from "Authorization: Bearer sk-…" (through the
 * runtime's read cache: no store access for a key seen lately) into
 * g->b.key; GP_OK, or the failure with its 401 (503, 500) in g->out.
 */
static int admit_key(gwreq *g) {
    gp_err err = GP_ERR_INIT;
    const char *a = gw_bearer_key(g->in->authorization);
    if (!a)
        return fail(g->out, GP_EUNAUTH, 401, "invalid_request_error", "invalid_api_key", NULL,
                    "You didn't provide an API key. Send it as 'Authorization: Bearer sk-…'.");
    int rc;
    if (g->b.rt) {
        rc = gw_cache_key(gw_rt_cache(g->b.rt), a, gt_now_us(), &g->b.key, &err);
    } else {
        store_tx *tx;
        if ((rc = store_begin(g->st, STORE_READ, &tx, &err)) == GP_OK) {
            rc = gw_key_auth(tx, a, gt_now_us(), &g->b.key, &err);
            store_rollback(tx);
        }
    }
    if (rc == GP_EBUSY)
        return fail(g->out, rc, 503, "server_error", "store_unavailable", NULL, "%s", err.msg);
    if (rc == GP_EUNAUTH)
        return fail(g->out, rc, 401, "invalid_request_error", "invalid_api_key", NULL, "%s",
                    err.msg);
    if (rc) return fail(g->out, rc, 500, "server_error", "internal_error", NULL, "%s", err.msg);
    return GP_OK;
}

/* ---- sizing a request (the rest: gw_request_check, gw_reservation) ---- */

/* Characters of generated text in a non-streamed answer. */
static int64_t answer_chars(json_t *resp) {
    int64_t n = 0;
    size_t i;
    json_t *ch;
    /* the Responses API: output items, their text parts and tool-call arguments */
    json_array_foreach(json_object_get(resp, "output"), i, ch) {
        size_t k;
        json_t *part;
        json_t *args = json_object_get(ch, "arguments");
        if (json_is_string(args)) n = gw_sat_add(n, (int64_t)json_string_length(args));
        json_array_foreach(json_object_get(ch, "content"), k, part) {
            json_t *t = json_object_get(part, "text"), *rf = json_object_get(part, "refusal");
            if (json_is_string(t)) n = gw_sat_add(n, (int64_t)json_string_length(t));
            if (json_is_string(rf)) n = gw_sat_add(n, (int64_t)json_string_length(rf));
        }
    }
    json_array_foreach(json_object_get(resp, "choices"), i, ch)
        n = gw_sat_add(n, gw_generated_chars(ch, json_object_get(ch, "message")));
    return n;
}

/*
 * The request's usage record: the upstream's figures checked against what
 * the request could have used (gw_usage_clip), or an estimate when it
 * reported none.  `out_chars`: bytes of generated text in the answer
 * (gw_generated_chars): its completion bound, and its estimate when no usage
 * came.  The answer's own size bounds nothing: the upstream pads it at will.
 */
static void record(gwbook *g, int status, int have_usage, int64_t pt, int64_t ct,
                   int64_t out_chars) {
    gw_usage *u = &g->u;
    int64_t t0 = gt_mono_us();
    u->status = status;
    u->latency_us = t0 - g->start_mono;
    /* tokens count when the upstream produced them, even for a stream cut short */
    if ((status >= 200 && status < 300) || have_usage || out_chars > 0) {
        int64_t pguess = gw_estimate_tokens(g->info.prompt_chars);
        int64_t cguess = gw_estimate_tokens(out_chars);
        if (have_usage) {
            int embedding = !strcmp(u->kind, "embedding");
            gw_usage_bound b = {
                .prompt_est = pguess,
                .request_bytes = g->request_bytes,
                .completion_max = gw_sat_mul(g->info.max_out, g->info.answers),
                /* the text generated, not the answer's size: an upstream pads at will */
                .answer_bytes = embedding ? 0 : out_chars,
                .prompt_guess = pguess,
                .completion_guess = cguess,
                .budget = g->budget,
            };
            u->prompt_tokens = pt;
            u->completion_tokens = ct;
            gw_usage_clip(&b, &u->prompt_tokens, &u->completion_tokens, &u->clipped);
            if (u->clipped) {
                char a[24], b2[24];
                snprintf(a, sizeof a, "%lld", (long long)pt);
                snprintf(b2, sizeof b2, "%lld", (long long)ct);
                log_kv(LOG_WARN, "upstream usage clipped", "key", u->key_id, "model", u->model,
                       "model_tenant", u->model_tenant, "endpoint", u->endpoint_id,
                       "prompt_tokens", a, "completion_tokens", b2, (char *)NULL);
                gw_rt_count_clipped(g->rt);
            }
        } else {
            int64_t cmax = gw_sat_mul(g->info.max_out, g->info.answers);
            u->prompt_tokens = pguess;
            /* under a budget, never more than was reserved (a stream cut at its budget) */
            u->completion_tokens = g->budget && cguess > cmax ? cmax : cguess;
            u->estimated = 1;
        }
    }
    gw_metrics_request(u->model, u->tenant, status, u->prompt_tokens, u->completion_tokens,
                       u->latency_us, u->endpoint_id[0] != '\0');
    gw_rt_adjust(g->rt, &g->key,
                 gw_sat_add(gw_sat_add(u->prompt_tokens, u->completion_tokens), -g->reserved),
                 gt_now_us());
    if (u->lease) /* what it did not use goes back to the lease; the record settles the rest */
        gw_rt_lease_end(g->rt, g->key.id, u->hold, g->leased,
                        gw_sat_add(u->prompt_tokens, u->completion_tokens));
    if (g->entered) gw_rt_leave(g->rt, g->key.id);
    g->entered = 0;
    if (gw_rt_record(g->rt, u))
        log_kv(LOG_ERROR, "usage record dropped: out of memory", "key", u->key_id, (char *)NULL);
    g->meter_us = gt_mono_us() - t0;
    gw_stage_observe(GW_STAGE_METER, g->meter_us);
}

/* ---- streaming ---- */

typedef struct gwstream {
    gwbook g;
    gw_call *call;
    gw_sse sse;
    strbuf out;
    size_t off;
    int64_t bytes;       /* received from the upstream */
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
            /* only the data changes: other lines (a Responses stream's "event:") stay */
            strbuf nb = SB_INIT;
            sb_add(&nb, out->buf, (size_t)(d - out->buf));
            sb_adds(&nb, t);
            sb_add(&nb, d + dl, (size_t)(b + left - (d + dl)));
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
            s->bytes = gw_sat_add(s->bytes, n);
            gw_sse_feed(&s->sse, tmp, (size_t)n, &s->out);
            if (s->sources && add_sources_to_stream(&s->out, s->sources)) {
                json_decref(s->sources);
                s->sources = NULL;
            }
            if (s->sse.cut) { /* the budget is spent: its clean finish is the stream's end */
                s->ended = 1;
                if (!sb_ok(&s->out)) return -1;
            }
            continue;
        }
        gw_sse_finish(&s->sse, &s->out);
        s->ended = 1;
        if ((n < 0 || !s->sse.saw_done) && !s->sse.saw_error) {
            /* the upstream broke off: say so, so the client does not take it for the end */
            s->status = 502;
            if (!strcmp(s->g.u.kind, "response")) /* the Responses API's error event (+ "error") */
                sb_adds(&s->out, "event: error\ndata: {\"type\":\"error\",\"code\":\"upstream_error\","
                                 "\"message\":\"the upstream ended the stream early\",\"param\":null,"
                                 "\"error\":{\"message\":\"the upstream ended the stream early\","
                                 "\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n");
            else
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

/* An upstream call is over: free it and give back its endpoint's slot (gw_rt_ep_enter). */
static void call_end(gw_runtime *rt, gw_call *call, const char *ep_id) {
    gw_call_free(call);
    gw_rt_ep_leave(rt, ep_id);
}

static void stream_release(void *cls) {
    gwstream *s = cls;
    /* a client that went away before the end: 499, what it got is still counted */
    int status = !s->ended ? 499 : s->status;
    if (s->ended && s->status == 502) /* the upstream broke the stream off */
        gw_rt_endpoint_result(s->g.rt, s->g.u.endpoint_id, 0, gt_now_us());
    /* without the upstream's usage, the estimate counts a token per piece of text at least */
    int64_t chars = s->sse.completion_chars, est = gw_sse_tokens(&s->sse);
    if (gw_estimate_tokens(chars) < est) chars = gw_sat_mul(est, 4);
    record(&s->g, status, s->sse.has_usage, s->sse.prompt_tokens, s->sse.completion_tokens, chars);
    gw_metrics_ttft(s->g.u.model, s->g.start_mono, gw_call_first_byte_mono(s->call));
    call_end(s->g.rt, s->call, s->g.u.endpoint_id);
    json_decref(s->sources);
    gw_sse_release(&s->sse);
    sb_release(&s->out);
    free(s);
}

/* ---- forwarding ---- */

/*
 * The body for endpoint `ep`: the client's bytes, or a re-encoded copy when
 * it must change.  `cap` (NULL: none): info->max_out_field set to
 * info->max_out, what the request's token budget allows.
 */
static char *body_for(const gw_in *in, json_t *req, const gw_endpoint *ep, int add_usage,
                      int changed, const gw_request_info *cap, size_t *len) {
    if (!add_usage && !ep->upstream_model[0] && !changed && !cap) {
        *len = in->body_len;
        return NULL; /* use in->body as it is */
    }
    json_t *copy = json_deep_copy(req);
    if (add_usage) {
        json_t *so = json_object_get(copy, "stream_options");
        if (!json_is_object(so)) json_object_set_new(copy, "stream_options", so = json_object());
        json_object_set_new(so, "include_usage", json_true());
    }
    if (ep->upstream_model[0]) json_object_set_new(copy, "model", json_string(ep->upstream_model));
    if (cap && cap->max_out_field[0])
        json_object_set_new(copy, cap->max_out_field, json_integer((json_int_t)cap->max_out));
    char *text = json_dumps(copy, JSON_COMPACT);
    json_decref(copy);
    *len = text ? strlen(text) : 0;
    return text;
}

/* The text of one message / input item's content (a string, or its parts' texts). */
static void content_text(json_t *c, strbuf *out) {
    if (json_is_string(c)) {
        sb_adds(out, json_string_value(c));
        return;
    }
    size_t k;
    json_t *part;
    json_array_foreach(c, k, part) {
        const char *t = json_string_value(json_object_get(part, "text"));
        if (t) sb_addf(out, "%s%s", out->len ? " " : "", t);
    }
}

/*
 * The text of the last user message of a chat request, or of a Responses
 * request's input (a string, or its last user item); "" when none.
 */
static void last_user_text(json_t *req, const char *kind, strbuf *out) {
    json_t *msgs = json_object_get(req, !strcmp(kind, "response") ? "input" : "messages");
    if (json_is_string(msgs)) {
        sb_adds(out, json_string_value(msgs));
        return;
    }
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "user") != 0) continue;
        content_text(json_object_get(m, "content"), out);
        return;
    }
}

/*
 * Bytes the retrieved context can add to a prompt at most: the instruction,
 * and per chunk its text (KB_CHUNK_CHARS code points, 4 bytes each at most)
 * and its header (number, KB and document names, chunk index).  Reserved
 * before retrieval, so that every limit is judged before any KB is queried.
 */
static int64_t rag_allowance_chars(int k) {
    return 512 + (int64_t)k * (KB_CHUNK_CHARS * 4 + 64 + KB_DOC_NAME_MAX + 64);
}

/*
 * Does key `k`'s application bind `model` to knowledge bases (a read in the
 * request's transaction `tx`, which sees the key's tenant only)?  Only chat
 * and Responses requests are augmented.  OUT: *plan (ids NULL when not; a
 * failed lookup is logged and the request goes on without retrieval).
 */
static void rag_lookup(store_tx *tx, const gw_key *k, const char *model, const char *kind,
                       json_t *req, rag_plan *plan) {
    gp_err err = GP_ERR_INIT;
    memset(plan, 0, sizeof *plan);
    if (!k->app[0]) return;
    if (!strcmp(kind, "chat") ? !json_is_array(json_object_get(req, "messages"))
                              : strcmp(kind, "response") != 0)
        return;
    int rc = kb_rag_lookup(tx, k->tenant_id, k->project_id, k->app, model, &plan->ids, &plan->k,
                           &err);
    if (rc) {
        plan->ids = NULL;
        if (rc != GP_ENOTFOUND)
            log_kv(LOG_WARN, "retrieval skipped", "detail", err.msg, (char *)NULL);
    }
}

/* The retrieved context into `req`: a first system message (chat), or ahead of the instructions (responses). */
static int rag_insert(json_t *req, const char *kind, const char *sys) {
    if (!strcmp(kind, "chat"))
        return json_array_insert_new(json_object_get(req, "messages"), 0,
                                     json_pack("{s:s,s:s}", "role", "system", "content", sys)) == 0;
    const char *ins = json_string_value(json_object_get(req, "instructions"));
    strbuf t = SB_INIT;
    sb_adds(&t, sys);
    if (ins && *ins) sb_addf(&t, "\n\n%s", ins);
    int ok = sb_ok(&t) && json_object_set_new(req, "instructions", json_string(t.buf)) == 0;
    sb_release(&t);
    return ok;
}

/*
 * Retrieval, once every limit admitted the request: the top chunks of the
 * plan's KBs for the last user message go into `req` (rag_insert), and the
 * query is counted (gpupool_gateway_retrievals_total).  Returns the sources
 * to report (new reference; [] when nothing matched), or NULL when retrieval
 * failed (logged, and the request goes on without it).  *changed: whether
 * `req` was modified.
 */
static json_t *rag_retrieve(gwreq *g, int *changed) {
    const gw_key *k = &g->b.key;
    const char *kind = g->in->kind;
    json_t *req = g->req;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *hits = NULL;
    *changed = 0;
    if (store_begin(g->st, STORE_READ, &tx, &err)) {
        log_kv(LOG_WARN, "retrieval skipped", "detail", err.msg, (char *)NULL);
        return NULL;
    }
    int rc = store_set_tenant(tx, k->tenant_id, &err);
    strbuf q = SB_INIT;
    last_user_text(req, kind, &q);
    if (q.len > KB_MAX_QUERY_LEN) { /* a long message: its beginning is the query */
        size_t n = KB_MAX_QUERY_LEN;
        while (n && ((unsigned char)q.buf[n] & 0xC0) == 0x80) n--;
        sb_setlen(&q, n);
    }
    if (!rc) {
        if (g->b.rt) gw_rt_count_retrieval(g->b.rt);
        rc = kb_query(tx, k->tenant_id, g->plan.ids, NULL, q.buf ? q.buf : "", g->plan.k, &hits,
                      &err);
    }
    store_rollback(tx);
    sb_release(&q);
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
        if (sb_ok(&sys) && rag_insert(req, kind, sys.buf)) *changed = 1;
        sb_release(&sys);
    }
    json_decref(hits);
    return sources;
}

/*
 * Stage check_body: the body parsed into g->req, its model, and every number
 * and shape the accounting depends on (gw_request_check), before anything is
 * counted; 400 otherwise.
 */
static int check_body(gwreq *g) {
    gp_err err = GP_ERR_INIT;
    int rc = jx_parse(g->in->body, g->in->body_len, g->in->max_depth, 1, &g->req, &err);
    if (rc)
        return fail(g->out, rc, 400, "invalid_request_error", "invalid_json", NULL, "%s",
                    err.msg);
    g->model = json_string_value(json_object_get(g->req, "model"));
    if (!g->model || !*g->model)
        return fail(g->out, GP_EINVALID, 400, "invalid_request_error", "missing_model", NULL,
                    "you must provide a model parameter");
    /* every number and shape the accounting depends on, before anything is counted */
    char param[64];
    int invalid_type = 0;
    if ((rc = gw_request_check(g->req, g->in->kind, &g->b.info, param, &invalid_type, &err)))
        return fail(g->out, rc, 400, "invalid_request_error",
                    invalid_type ? "invalid_type" : "invalid_value", param, "%s", err.msg);
    g->stream = g->b.info.stream;
    g->asked_usage = g->b.info.include_usage;
    g->response = !strcmp(g->in->kind, "response"); /* the Responses API: usage always in its events */
    g->b.reserved = gw_reservation(&g->b.info);
    return GP_OK;
}

/*
 * Stage route: which model, where (from the read cache: no store access for
 * a route seen lately) into g->route; whether retrieval applies (g->plan);
 * then the usage record's who.  404 model_not_found (audited), 400 for a
 * stored response of another tenant's model, 500.
 */
static int route(gwreq *g) {
    gp_err err = GP_ERR_INIT;
    gw_key *k = &g->b.key;
    /* which model, where (from the read cache: no store access for a route seen lately) */
    int rc = g->b.rt ? gw_cache_route(gw_rt_cache(g->b.rt), k, g->model, &g->route, &err)
                     : GP_EINTERNAL;
    /* a stored response or conversation lives on the upstream: through another tenant's public
     * model that upstream is shared, so only the model's own tenant may refer to one */
    if (!rc && g->response && strcmp(g->route.model_tenant, k->tenant) != 0) {
        static const char *const refs[] = {"previous_response_id", "conversation", NULL};
        for (int i = 0; refs[i]; i++) {
            json_t *v = json_object_get(g->req, refs[i]);
            if (!v || json_is_null(v)) continue;
            return fail(g->out, GP_EUNSUPPORTED, 400, "invalid_request_error",
                        "unsupported_parameter", refs[i],
                        "'%s' is not supported with a public model of another tenant: "
                        "send the conversation in 'input'.", refs[i]);
        }
    }
    /* whether retrieval applies (a read; the KBs are queried once every limit admitted it) */
    if (!rc && k->app[0]) { /* only a key of an application reads the store here */
        store_tx *tx;
        gp_err e2 = GP_ERR_INIT;
        if (store_begin(g->st, STORE_READ, &tx, &e2) == GP_OK) {
            if (store_set_tenant(tx, k->tenant_id, &e2) == GP_OK)
                rag_lookup(tx, k, g->model, g->in->kind, g->req, &g->plan);
            store_rollback(tx);
        } else {
            log_kv(LOG_WARN, "retrieval skipped", "detail", e2.msg, (char *)NULL);
        }
    }
    if (rc == GP_ENOTFOUND) {
        audit_refusal(g, GW_REFUSE_MODEL, g->model, 404, err.msg);
        return fail(g->out, rc, 404, "invalid_request_error", "model_not_found", NULL, "%s",
                    err.msg);
    }
    if (rc) return fail(g->out, rc, 500, "server_error", "internal_error", NULL, "%s", err.msg);
    /* the usage record says who, whatever happens next */
    gw_usage *u = &g->b.u;
    u->at_us = gt_now_us();
    snprintf(u->tenant_id, sizeof u->tenant_id, "%s", k->tenant_id);
    snprintf(u->project_id, sizeof u->project_id, "%s", k->project_id);
    snprintf(u->tenant, sizeof u->tenant, "%s", k->tenant);
    snprintf(u->project, sizeof u->project, "%s", k->project);
    snprintf(u->app, sizeof u->app, "%s", k->app);
    snprintf(u->key_id, sizeof u->key_id, "%s", k->id);
    snprintf(u->model, sizeof u->model, "%s", g->model);
    snprintf(u->model_tenant, sizeof u->model_tenant, "%s", g->route.model_tenant);
    snprintf(u->kind, sizeof u->kind, "%s", g->in->kind);
    u->stream = g->stream;
    return GP_OK;
}

/*
 * Stage limits: every limit before any work: requests in flight, per-minute
 * windows, monthly quotas.  A request its key's application augments
 * reserves the most retrieval can add.  429 (audited, with Retry-After) or
 * 503 store_busy; on GP_OK the request is counted in flight and its
 * reservation is in the windows and the lease.
 */
static int limits(gwreq *g) {
    gp_err err = GP_ERR_INIT;
    gwbook *b = &g->b;
    gw_runtime *rt = b->rt;
    gw_usage *u = &b->u;
    if (g->plan.ids) {
        b->info.prompt_chars = gw_sat_add(b->info.prompt_chars, rag_allowance_chars(g->plan.k));
        b->reserved = gw_reservation(&b->info);
    }
    int64_t inflight = 0;
    if (!gw_rt_enter(rt, &b->key, &inflight)) {
        char why[120];
        snprintf(why, sizeof why, "%lld requests in flight, at most %lld (max_parallel)",
                 (long long)inflight, (long long)b->key.max_parallel);
        snprintf(g->out->retry_after, sizeof g->out->retry_after, "1");
        audit_refusal(g, GW_REFUSE_PARALLEL, g->model, 429, why);
        return fail(g->out, GP_EBUSY, 429, "requests", "rate_limit_exceeded", NULL,
                    "Too many requests in flight for this key: %s. Please try again when one "
                    "has finished.", why);
    }
    b->entered = 1;
    int64_t retry = 1;
    char why[80] = "";
    if (!gw_rt_admit(rt, &b->key, b->reserved, gt_now_us(), &retry, why, sizeof why)) {
        snprintf(g->out->retry_after, sizeof g->out->retry_after, "%lld", (long long)retry);
        audit_refusal(g, GW_REFUSE_RATE, g->model, 429, why);
        gw_rt_leave(rt, b->key.id);
        b->entered = 0;
        return fail(g->out, GP_EBUSY, 429, "requests", "rate_limit_exceeded", NULL,
                    "Rate limit reached for %s. Please try again in %llds.", why,
                    (long long)retry);
    }
    /* the monthly quotas: the most this request may use, taken from this process's lease
     * of the key's month (in memory; a write transaction only when the lease must grow;
     * skipped when no quota applies) */
    int quota = b->key.tokens_month > 0 || b->key.project_tokens_month != QUOTA_NONE ||
                b->key.tenant_tokens_month != QUOTA_NONE;
    /* under a budget, max_out is what the budgets still allow (at most what was asked, or
     * GW_DEFAULT_MAX_TOKENS), and the upstream is told so: the reservation covers all it may
     * generate (docs/gateway.md, "Token budgets") */
    int64_t units = b->info.max_out;
    int rc = quota ? gw_rt_lease_take_fit(rt, &b->key,
                                          gw_estimate_tokens(b->info.prompt_chars), b->info.answers, b->info.max_out, gt_now_us(), u->hold,
                                          &units, &err)
                   : GP_OK;
    u->lease = quota && !rc;
    if (u->lease && b->info.max_out > 0) {
        g->cap = units < b->info.max_out || !b->info.max_out_given;
        b->info.max_out = units;
        b->budget = 1;
        int64_t fitted = gw_reservation(&b->info);
        gw_rt_adjust(rt, &b->key, gw_sat_add(fitted, -b->reserved), gt_now_us());
        b->reserved = fitted;
    }
    b->leased = b->reserved;
    if (rc) {
        gw_rt_adjust(rt, &b->key, -b->reserved, gt_now_us());
        gw_rt_leave(rt, b->key.id);
        b->entered = 0;
        if (rc == GP_EFORBIDDEN) {
            audit_refusal(g, GW_REFUSE_QUOTA, g->model, 429, err.msg);
            snprintf(g->out->retry_after, sizeof g->out->retry_after, "3600");
            return fail(g->out, rc, 429, "insufficient_quota", "insufficient_quota", NULL, "%s",
                        err.msg);
        }
        return fail(g->out, rc, 503, "server_error", "store_busy", NULL, "%s", err.msg);
    }
    return GP_OK;
}

/*
 * Stage retrieve: retrieval, now that the request is admitted: the context
 * counts towards the prompt; the windows get back what the allowance
 * reserved beyond it (the quota hold is settled with what was used, as
 * always).  Never fails the request (a failed retrieval is logged).
 */
static void retrieve(gwreq *g) {
    gwbook *b = &g->b;
    if (g->plan.ids) {
        g->sources = rag_retrieve(g, &g->changed);
        json_decref(g->plan.ids);
        g->plan.ids = NULL;
        b->info.prompt_chars = gw_prompt_chars(g->req, g->in->kind);
        int64_t real = gw_reservation(&b->info);
        gw_rt_adjust(b->rt, &b->key, gw_sat_add(real, -b->reserved), gt_now_us());
        b->reserved = real;
    }
    gw_key_release(&b->key); /* the allow-list is no longer needed */
}

/*
 * Stage call: an endpoint, round robin; a connect failure tries the next.
 * GP_OK with g->call started; otherwise the request is recorded and 503
 * upstream_busy (Retry-After), 503 no_healthy_endpoint or 502
 * upstream_unreachable answered.
 */
static int call(gwreq *g) {
    gwbook *b = &g->b;
    gw_runtime *rt = b->rt;
    gw_usage *u = &b->u;
    /* an endpoint, round robin; a connect failure tries the next */
    char last[300] = "no healthy endpoint";
    /* healthy endpoints not ejected here, round robin; none: all of them (panic mode) */
    int usable[GW_MAX_ENDPOINTS], order[GW_MAX_ENDPOINTS], panic = 0;
    /* a job endpoint only while its job runs with the port open, as its node reports now (not
     * as when the route was cached): never another job's socket, not even in panic mode */
    gw_cache_ports_check(gw_rt_cache(rt), &g->route);
    gw_rt_usable(rt, &g->route, gt_now_us(), usable);
    int ntry = gw_route_order(&g->route, usable, g->route.n ? gw_rt_next(rt) : 0, order, &panic);
    if (panic) {
        gw_rt_count_panic(rt);
        log_kv(LOG_WARN, "every endpoint is down or ejected: trying them anyway (panic mode)",
               "model", g->model, (char *)NULL);
    }
    /* an endpoint with a free slot (max_concurrency); when every one is full, the line of the
     * last one tried (first come, first served; at most its max_queue, for queue_wait_ms) */
    int busy = 0;
    for (int i = 0; i < ntry && !g->call; i++) {
        const gw_endpoint *ep = &g->route.ep[order[i]];
        if (!gw_rt_ep_enter(rt, ep->id, ep->max_concurrency, ep->max_queue,
                            i == ntry - 1 && busy == i)) {
            busy++;
            snprintf(last, sizeof last, "every slot of endpoint %s is taken", ep->id);
            continue;
        }
        size_t len;
        char *body = body_for(g->in, g->req, ep, g->stream && !g->asked_usage && !g->response,
                              g->changed, g->cap ? &b->info : NULL, &len);
        gp_err e2 = GP_ERR_INIT;
        int rc = gw_call_start(ep, g->in->path, body ? body : g->in->body, len, gw_rt_timeout(rt),
                               &g->call, &e2);
        free(body);
        b->request_bytes = (int64_t)len;
        if (rc) {
            gw_rt_ep_leave(rt, ep->id);
            gw_rt_endpoint_result(rt, ep->id, 0, gt_now_us());
            snprintf(last, sizeof last, "%s", e2.msg);
            log_kv(LOG_WARN, "endpoint unreachable; trying the next", "endpoint", ep->id, "detail",
                   e2.msg, (char *)NULL);
            g->call = NULL;
            continue;
        }
        snprintf(u->endpoint_id, sizeof u->endpoint_id, "%s", ep->id);
        snprintf(u->accelerator, sizeof u->accelerator, "%s", ep->accelerator);
    }
    json_decref(g->req); /* `model` pointed into it: u->model from here */
    g->req = NULL;
    g->model = NULL;
    if (!g->call && busy && busy == ntry) {
        /* every endpoint at its bound and no room to wait: the caller should retry shortly */
        record(b, 503, 0, 0, 0, 0);
        snprintf(g->out->retry_after, sizeof g->out->retry_after, "1");
        return fail(g->out, GP_EBUSY, 503, "server_error", "upstream_busy", NULL,
                    "every endpoint of model '%s' is at its concurrency limit; retry shortly",
                    u->model);
    }
    if (!g->call) {
        /* nothing to try (no endpoint, or only job endpoints whose ports are closed): 503 */
        int st = ntry ? 502 : 503;
        record(b, st, 0, 0, 0, 0);
        /* the detail (addresses, connect errors) is for the log: the caller may not own the model */
        if (ntry)
            log_kv(LOG_WARN, "no endpoint answered", "model", u->model, "detail", last, (char *)NULL);
        return fail(g->out, GP_EIO, st, "server_error",
                    ntry ? "upstream_unreachable" : "no_healthy_endpoint", NULL,
                    "model '%s' has %s", u->model,
                    ntry ? "no endpoint that answered" : "no healthy endpoint");
    }
    return GP_OK;
}

/*
 * Stage answer: as the upstream answered.  A stream (its 200) is handed to
 * the HTTP layer in g->out (stream_read / stream_release, which record it
 * when it ends); a whole answer is read, recorded and returned as text.
 * 502 upstream_redirect / upstream_error, 500 out_of_memory.
 */
static int answer(gwreq *g) {
    gp_err err = GP_ERR_INIT;
    gwbook *b = &g->b;
    gw_usage *u = &b->u;
    long st = gw_call_status(g->call);
    /* outlier detection: an answer that says the upstream itself failed counts against it */
    gw_rt_endpoint_result(b->rt, u->endpoint_id, st != 502 && st != 503 && st != 504, gt_now_us());
    if (st >= 300 && st < 400) {
        /* a redirect is never followed, nor relayed (its body or Location could lead anywhere) */
        log_kv(LOG_WARN, "upstream answered a redirect; refused", "endpoint", u->endpoint_id,
               (char *)NULL);
        call_end(b->rt, g->call, u->endpoint_id);
        g->call = NULL;
        record(b, 502, 0, 0, 0, 0);
        return fail(g->out, GP_EIO, 502, "server_error", "upstream_redirect", NULL,
                    "the model's endpoint answered with a redirect (HTTP %ld), which is not followed",
                    st);
    }
    if (g->stream && st == 200) {
        gwstream *s = calloc(1, sizeof *s);
        if (!s) {
            call_end(b->rt, g->call, u->endpoint_id);
            g->call = NULL;
            record(b, 500, 0, 0, 0, 0);
            return fail(g->out, GP_ENOMEM, 500, "server_error", "out_of_memory", NULL,
                        "out of memory");
        }
        /* the stream takes the bookkeeping, the call and the sources over */
        s->g = *b;
        b->entered = 0;
        s->call = g->call;
        g->call = NULL;
        s->status = 200;
        s->sources = g->sources;
        g->sources = NULL;
        gw_sse_init(&s->sse, !g->asked_usage && !g->response);
        if (b->budget) gw_sse_set_budget(&s->sse, gw_sat_mul(b->info.max_out, b->info.answers), g->response);
        sb_init(&s->out);
        g->out->status = 200;
        g->out->content_type = "text/event-stream";
        g->out->read = stream_read;
        g->out->release = stream_release;
        g->out->cls = s;
        return GP_OK;
    }
    /* a whole answer: passed on as it came; its usage read (or estimated) */
    strbuf out = SB_INIT;
    int rc = gw_call_body(g->call, &out, MAX_UPSTREAM_BODY, &err);
    gw_metrics_ttft(u->model, b->start_mono, gw_call_first_byte_mono(g->call));
    call_end(b->rt, g->call, u->endpoint_id);
    g->call = NULL;
    if (rc) {
        sb_release(&out);
        record(b, 502, 0, 0, 0, 0);
        return fail(g->out, rc, 502, "server_error", "upstream_error", NULL, "%s", err.msg);
    }
    json_t *resp = json_loadb(out.buf ? out.buf : "", out.len, 0, NULL);
    json_t *usage = json_object_get(resp, "usage");
    /* chat, completions, embeddings: prompt_/completion_tokens; Responses: input_/output_tokens */
    const char *pname = g->response ? "input_tokens" : "prompt_tokens";
    int have = json_is_object(usage) && json_is_integer(json_object_get(usage, pname));
    /* a completion count that is not an integer counts as refused (-1): it is estimated */
    json_t *ctv = json_object_get(usage, g->response ? "output_tokens" : "completion_tokens");
    int64_t ct = !ctv || json_is_null(ctv) ? 0 : json_is_integer(ctv) ? json_integer_value(ctv) : -1;
    record(b, (int)st, have, json_integer_value(json_object_get(usage, pname)), ct,
           answer_chars(resp));
    /* RAG: the sources used, as an extra top-level field of a successful answer */
    char *with = NULL;
    if (g->sources && st >= 200 && st < 300 && json_is_object(resp)) {
        json_object_set(resp, "sources", g->sources);
        with = json_dumps(resp, JSON_COMPACT);
    }
    json_decref(resp);
    g->out->status = (int)st;
    g->out->content_type = "application/json";
    if (with) {
        g->out->text = with;
        sb_release(&out);
    } else {
        g->out->text = sb_detach(&out); /* NULL (out of memory): answered as "" */
    }
    return GP_OK;
}

/* A forwarded request (chat, completions, embeddings, responses): every stage in order. */
static int forward(gwreq *g) {
    int rc;
    /* each stage's time (gw_stage_observe; docs/gateway.md, "Where a request's time goes") */
    int64_t t = g->b.start_mono, t2;
#define STAGE(s) (t2 = gt_mono_us(), gw_stage_observe((s), t2 - t), t = t2)
    rc = admit_key(g);
    STAGE(GW_STAGE_KEY);
    if (rc) return rc;
    rc = check_body(g);
    STAGE(GW_STAGE_PARSE);
    if (rc) return rc;
    rc = route(g);
    STAGE(GW_STAGE_ROUTE);
    if (rc) return rc;
    rc = limits(g);
    STAGE(GW_STAGE_LIMITS);
    if (rc) return rc;
    retrieve(g); /* a knowledge-base query, when one applies: in no stage's time */
    t = gt_mono_us();
    rc = call(g);
    STAGE(GW_STAGE_UPSTREAM);
    if (rc) return rc;
    g->b.meter_us = 0;
    rc = answer(g);
    t2 = gt_mono_us();
    /* a stream's body and record come later, as it is read: its stage ends here */
    if (!g->out->read) gw_stage_observe(GW_STAGE_BODY, t2 - t - g->b.meter_us);
#undef STAGE
    return rc;
}

/*
 * The models the request's key may use (gw_models_for_key in a read
 * transaction of its tenant) into *data.  On a store error answers 500
 * server_error and returns non-zero (nothing in *data).
 */
static int key_models(gwreq *g, json_t **data) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    *data = NULL;
    int rc = store_begin(g->st, STORE_READ, &tx, &err);
    if (!rc) {
        rc = store_set_tenant(tx, g->b.key.tenant_id, &err);
        if (!rc) rc = gw_models_for_key(tx, &g->b.key, data, &err);
        store_rollback(tx);
    }
    if (rc) return fail(g->out, rc, 500, "server_error", "internal_error", NULL, "%s", err.msg);
    return GP_OK;
}

/*
 * GET /v1/models (kind "models"): what the key may use; GET
 * /v1/models/{model} (kind "model"): one model this key may use, or 404
 * model_not_found.
 */
static int models(gwreq *g) {
    json_t *data;
    int rc = admit_key(g);
    if (!rc) rc = key_models(g, &data);
    if (rc) return rc;
    if (!strcmp(g->in->kind, "models")) {
        g->out->status = 200;
        g->out->json = json_pack("{s:s,s:o}", "object", "list", "data", data);
        return GP_OK;
    }
    const char *id = g->in->model;
    json_t *found = NULL;
    size_t i;
    json_t *m;
    json_array_foreach(data, i, m) {
        const char *mid = json_string_value(json_object_get(m, "id"));
        if (id && mid && !strcmp(mid, id)) found = json_incref(m);
    }
    json_decref(data);
    if (!found) { /* another tenant's private model answers exactly like a missing one */
        audit_refusal(g, GW_REFUSE_MODEL, id, 404, "model not found");
        return fail(g->out, GP_ENOTFOUND, 404, "invalid_request_error", "model_not_found", NULL,
                    "The model '%.128s' does not exist or you do not have access to it.",
                    id ? id : "");
    }
    g->out->status = 200;
    g->out->json = found;
    return GP_OK;
}

int gw_request_run(gw_runtime *rt, store_t *st, const gw_in *in, gw_out *out) {
    gwreq g;
    memset(&g, 0, sizeof g);
    memset(out, 0, sizeof *out);
    g.st = st;
    g.in = in;
    g.out = out;
    g.b.rt = rt;
    g.b.start_mono = gt_mono_us();
    int rc = !strcmp(in->kind, "models") || !strcmp(in->kind, "model") ? models(&g) : forward(&g);
    gwreq_release(&g);
    return rc;
}
