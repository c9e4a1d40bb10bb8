/*
 * gateway.h - model services, applications, API keys and the accounting of
 * the OpenAI-compatible gateway: the store side, plus the pure arithmetic
 * of rate windows and token reservations.
 *
 * Models belong to a tenant: private (only keys of that tenant use them) or
 * public (published by a platform-admin; every key may use them).  A model
 * has endpoints: an external base URL ("http://10.0.0.5:8000/v1"), or a job
 * of one of the tenant's projects serving on a port of its node.  Keys
 * ("sk-…") belong to a project (optionally an application); only their
 * BLAKE2b digest is stored.
 *
 * Token quotas are monthly (UTC calendar month) per key, project and
 * tenant.  Before forwarding, the gateway reserves the request's most
 * tokens against all three in one transaction (gw_reserve); when the
 * request ends it settles the hold with the actual count (gw_settle), in
 * the same transaction as its usage record.  So concurrent requests can
 * never together pass a quota by more than what their reservations allow.
 *
 * Ownership: functions returning json_t* or filling json_t** give a new
 * reference; gw_key holds an owned `models` array released by
 * gw_key_release().  Nothing here authorises: handlers do.
 *
 * One /v1 request, from its API key to its answer, is gw_request_run()
 * (request.c): the HTTP layer (src/api/h_gateway.c) hands it a gw_in and
 * sends the gw_out it fills.
 */
#ifndef GP_GATEWAY_H
#define GP_GATEWAY_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../core/strbuf.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdint.h>

#define GW_KEY_PREFIX "sk-"
#define GW_MAX_ENDPOINTS 16         /* endpoints of one model */
#define GW_MAX_TENANT_ENDPOINTS 256 /* endpoints of all of a tenant's models */
#define GW_DEFAULT_MAX_TOKENS 1024 /* reserved for a completion when max_tokens is not given */
#define GW_MAX_PARALLEL 100000     /* max_parallel of a key: 0 (no limit) .. this */

/* ---- models, endpoints, applications (models.c) ---- */

/* {"name","visibility":"private"|"public","description"}; `public` only when may_publish. */
int gw_model_create(store_tx *tx, const char *tenant_id, json_t *spec, const char *created_by,
                    int may_publish, char id[RND_ID_LEN], gp_err *err);
/* Change {"visibility","description"} of model `name`. */
int gw_model_update(store_tx *tx, const char *tenant_id, const char *name, json_t *spec,
                    int may_publish, gp_err *err);
/* The tenant's models with their endpoints. */
int gw_model_list(store_tx *tx, const char *tenant_id, json_t **items, gp_err *err);
/* One model with its endpoints; OUT (optional) id. GP_ENOTFOUND. */
int gw_model_get(store_tx *tx, const char *tenant_id, const char *name, json_t **out,
                 char id[RND_ID_LEN], gp_err *err);
/* Delete a model and its endpoints (usage records keep its name). */
int gw_model_delete(store_tx *tx, const char *tenant_id, const char *name, gp_err *err);

/*
 * Add an endpoint to model `model_id` of tenant `tenant_id`:
 * {"url"} or {"job","port"} (a job of one of the tenant's projects), plus
 * optional "accelerator", "upstream_model", "health_path".  A URL must pass
 * gw_url_check (GP_EINVALID); at most GW_MAX_ENDPOINTS per model and
 * GW_MAX_TENANT_ENDPOINTS per tenant (GP_ECONFLICT).
 */
int gw_endpoint_add(store_tx *tx, const char *tenant_id, const char *model_id, json_t *spec,
                    char id[RND_ID_LEN], gp_err *err);
int gw_endpoint_remove(store_tx *tx, const char *model_id, const char *id, gp_err *err);

/* Applications of a project: {"name","description"}. */
int gw_app_create(store_tx *tx, const char *project_id, json_t *spec, char id[RND_ID_LEN],
                  gp_err *err);
int gw_app_list(store_tx *tx, const char *project_id, json_t **items, gp_err *err);
int gw_app_delete(store_tx *tx, const char *project_id, const char *name, gp_err *err);

/* ---- keys (keys.c) ---- */

/*
 * Create a key in project `project_id` of tenant `tenant_id` for `owner`:
 * {"name","app","models":[…],"rpm","tpm","tokens_month","max_parallel",
 * "expires_at"|"ttl_seconds"} (max_parallel: requests in flight at once, 0 = no
 * limit, at most GW_MAX_PARALLEL).  Model names must name models the project can use.
 * OUT: id and the secret (shown once).
 */
int gw_key_create(store_tx *tx, const char *tenant_id, const char *project_id,
                  const char *owner, json_t *spec, char id[RND_ID_LEN],
                  char secret[RND_SECRET_LEN], gp_err *err);
/* Keys of a project (owner non-NULL: only that user's), without secrets. */
int gw_key_list(store_tx *tx, const char *project_id, const char *owner, json_t **items,
                gp_err *err);
/* One key; OUT (optional) owner. GP_ENOTFOUND. */
int gw_key_get(store_tx *tx, const char *project_id, const char *id, json_t **out,
               char owner[64], gp_err *err);
/* Revoke (idempotent refusal: GP_ECONFLICT when already revoked). */
int gw_key_revoke(store_tx *tx, const char *project_id, const char *id, gp_err *err);

/* A key that authenticated, with what limits it. */
typedef struct gw_key {
    char id[RND_ID_LEN], tenant_id[RND_ID_LEN], project_id[RND_ID_LEN];
    char tenant[64], project[64], app[64];
    json_t *models;                /* allowed model names; [] = any it can see (owned) */
    int64_t rpm, tpm, tokens_month; /* 0 = no limit */
    int64_t max_parallel;           /* requests in flight at once in one process; 0 = no limit */
    /* the project's and tenant's gateway ceilings (QUOTA_NONE = none) */
    int64_t project_rpm, project_tpm, project_tokens_month, tenant_tokens_month;
} gw_key;

/*
 * Authenticate `secret` at `now_us`: GP_EUNAUTH with the reason (unknown,
 * revoked, expired, or its tenant/project gone).  OUT: *out (release it).
 */
int gw_key_auth(store_tx *tx, const char *secret, int64_t now_us, gw_key *out, gp_err *err);

/*
 * The API key in an Authorization header value: what follows "Bearer "
 * (scheme case-insensitive) and any further spaces.  Pure; no check of the
 * key itself (gw_key_auth does that).  Returns a pointer into `header`, or
 * NULL when `header` is NULL or has another scheme.
 */
const char *gw_bearer_key(const char *header);
void gw_key_release(gw_key *k);

/* ---- routing ---- */

#define GW_MAX_CONCURRENCY 100000 /* an endpoint's max_concurrency at most */
#define GW_MAX_QUEUE 100000       /* ... and its max_queue */
#define GW_DEFAULT_QUEUE 100      /* max_queue when not given */

typedef struct gw_endpoint {
    char id[RND_ID_LEN];
    char base[512];         /* base URL ending in /v1 (no trailing slash) */
    char accelerator[64];
    char upstream_model[128]; /* "" = the model's own name */
    int job;                /* a job's endpoint: its host is the node's, not the tenant's */
    int healthy;            /* its last checks passed (or it was not checked yet) */
    int max_concurrency;    /* requests in flight to it per process; 0: no bound */
    int max_queue;          /* requests that may wait for a slot (with max_concurrency) */
    /* a job's endpoint: its job, the node it runs on and the port (gw_cache_ports_check) */
    char job_id[RND_ID_LEN];
    char node[64];
    int port;
    /* set per request: a job endpoint whose port is not reported open by its job right now
     * (gw_cache_ports_check); gw_route_order never tries it, not even in panic mode */
    int closed;
} gw_endpoint;

typedef struct gw_route {
    char model_tenant[64];  /* tenant owning the model */
    int n;                  /* endpoints with an address (a job's: while it runs), healthy or not */
    gw_endpoint ep[GW_MAX_ENDPOINTS];
} gw_route;

/*
 * The order in which to try a route's endpoints (pure): round robin from
 * `rr` over those that are healthy and not ejected (usable[i] nonzero; NULL:
 * all); when there is none but the route has endpoints, every endpoint in
 * the same order (panic mode, as Envoy's: better to try an endpoint marked
 * down than to fail every request until the next check), with *panic = 1.
 * An endpoint marked `closed` (a job endpoint whose port its job does not
 * report open) is never tried, in either pass: panic mode tries what is
 * down, never what may be another job's socket.  OUT: order[] (indexes into
 * r->ep). Returns how many to try (0: nothing may be tried).
 */
int gw_route_order(const gw_route *r, const int *usable, unsigned long rr,
                   int order[GW_MAX_ENDPOINTS], int *panic);

/*
 * Resolve `model` for key `k`: the key's tenant's own model of that name,
 * else a public one; refused (GP_ENOTFOUND, "model not found") when
 * neither exists or the key's allow-list does not name it - whatever
 * another tenant has.  OUT: its endpoints that have an address (a job's
 * only while it runs), each saying whether it is healthy (n may be 0).
 */
int gw_resolve(store_tx *tx, const gw_key *k, const char *model, gw_route *out, gp_err *err);

/* Is `model` on the key's allow-list ([] = anything it can see)?  Pure. */
int gw_key_allows(const gw_key *k, const char *model);

/* ---- the read cache of the request path (cache.c) ---- */

/*
 * Keys and routes the gateway reads on every request, held in memory and
 * dropped whenever the store's gw_epoch changes (bumped by triggers with
 * every change to keys, owners, roles, quotas, models, endpoints, jobs; read
 * about once a second by the runtime, and at once when PostgreSQL announces a move:
 * gw_cache_listen), or, for GW_CACHE_DISTRUST_US (2 s),
 * after a change made by this process (gw_cache_changed).  Thread-safe.
 */
typedef struct gw_cache gw_cache;
int gw_cache_new(store_t *st, gw_cache **out, gp_err *err);
void gw_cache_free(gw_cache *c);
/* Read the store's epoch; a change (or a failed read: nothing is trusted then) drops everything. */
int gw_cache_poll(gw_cache *c, gp_err *err);
/* Listen for the store's announcements of epoch moves (PostgreSQL, migration 32) on a thread
 * of the cache's own, polling at once on each; gw_cache_free stops it.  GP_EUNSUPPORTED on a
 * store without them (SQLite: poll). */
int gw_cache_listen(gw_cache *c, gp_err *err);
/* This process changed a key, model or endpoint: bypass every cache here for a moment. */
void gw_cache_changed(void);
/* gw_key_auth through the cache (errors as gw_key_auth's; only successes are kept). */
int gw_cache_key(gw_cache *c, const char *secret, int64_t now_us, gw_key *out, gp_err *err);
/* gw_resolve through the cache (a route found or not is kept per tenant and model name). */
int gw_cache_route(gw_cache *c, const gw_key *k, const char *model, gw_route *out, gp_err *err);
/* Hit, miss and invalidation counters in Prometheus text. */
void gw_cache_metrics(gw_cache *c, strbuf *out);

/*
 * Job endpoints at connect time (docs/gateway.md "Job endpoints"): the cache
 * also holds the port set of every running job that serves an endpoint (its
 * node and jobs.listen_ports, as the node's heartbeats report them), reloaded
 * with every move of gw_epoch (a job's ports, state or bindings changing moves
 * it: migrations 17 and 21) and dropped when the epoch cannot be read.  Per
 * request, mark `closed` every job endpoint of `r` whose job is not running on
 * the endpoint's node with the endpoint's port open in that set (no set: every
 * job endpoint is closed).  Returns how many endpoints stay open.
 */
int gw_cache_ports_check(gw_cache *c, gw_route *r);

/* Is `port` one of the ports of `list` ("p1,p2,...", as jobs.listen_ports)?  Pure. */
int gw_port_listed(const char *list, int port);

/* OpenAI's model list for key `k`: [{id, object:"model", created, owned_by}]. */
int gw_models_for_key(store_tx *tx, const gw_key *k, json_t **data, gp_err *err);

/* Endpoints to health-check: [{id, base, health_path, job}] (job "" for a URL endpoint). */
int gw_endpoint_targets(store_tx *tx, json_t **items, gp_err *err);
/*
 * Record a check: state "healthy"|"unhealthy", with the error text every
 * reader of the model sees (generic: "unreachable", "bad status", "job not
 * running") and the detail only ops see (gw_model_error_details).
 */
int gw_endpoint_set_state(store_tx *tx, const char *id, const char *state, const char *error,
                          const char *detail, gp_err *err);
/* Add each endpoint's "last_error_detail" to a model from gw_model_get/list (ops only). */
int gw_model_error_details(store_tx *tx, json_t *model, gp_err *err);
/* Is model `model_id` public?  OUT: *pub. */
int gw_model_is_public(store_tx *tx, const char *model_id, int *pub, gp_err *err);

/* ---- token quotas (ledger.c) ---- */

/* "2026-12" for a time. */
void gw_month(int64_t now_us, char out[8]);

/*
 * Reserve `amount` tokens for key `k` this month against the key's,
 * project's and tenant's monthly quotas (callers skip this when none of
 * the three has a quota: gw_usage_write then counts the use directly).  GP_EFORBIDDEN with which quota
 * would be passed ("insufficient_quota").  OUT: hold id.
 */
int gw_reserve(store_tx *tx, const gw_key *k, int64_t amount, int64_t now_us,
               char hold[RND_ID_LEN], gp_err *err);
/*
 * Settle a hold with what was used (0 for a request that failed; clamped to
 * [0, GW_TOKENS_MAX]).  Every ledger figure saturates within [0, GW_TOKENS_MAX]:
 * no amount, used count or sum can make one negative or wrap it.
 */
int gw_settle(store_tx *tx, const char *hold, int64_t used, gp_err *err);
/* Release holds older than `older_than_us` (a gateway that died mid-request). OUT: count. */
int gw_expire_holds(store_tx *tx, int64_t older_than_us, int *count, gp_err *err);
/* This month's {used, reserved, quota} for a key / project / tenant. */
int gw_ledger_get(store_tx *tx, const char *scope, const char *id, int64_t now_us, int64_t *used,
                  int64_t *reserved, gp_err *err);

/*
 * Every function here that writes is safe in a STORE_WRITE_ROWS transaction
 * (store.h): it reads a figure only with its row locked, and locks rows in one
 * order (ledger.c, "Row locks"); a transaction should hold the calls of one
 * flush, growth or release, not a mix with other tables' rows in another order.
 *
 * Leases (issue 22): a gateway process does not reserve per request.  It holds,
 * per key and month, one hold in token_holds (a lease) reserved against the
 * key's, project's and tenant's quotas like any hold, grows it in one short
 * write transaction when its requests need more (gw_quota_room, gw_hold_grow),
 * lets usage batches consume it (gw_usage_write with `lease` set) and gives it
 * back when idle or at stop (gw_hold_release).  The invariant above holds:
 * reserved = the sum of the holds' amounts.
 */
typedef struct gw_room {
    int64_t room;          /* tokens the three quotas still allow (GW_TOKENS_MAX: no quota) */
    const char *what;      /* the scope that allows least ("this key's" ...), NULL: none */
    int64_t used, reserved, quota; /* that scope's figures, for the refusal */
} gw_room;
/*
 * What this month's quotas of key `k` still allow: min over scopes of quota - used -
 * reserved.  In a write transaction: the ledger rows it read stay locked until the
 * transaction ends (ledger.c, "Row locks"), and so does hold `hold` (NULL: none), locked
 * first, so a gw_hold_grow of it in the same transaction grants from exactly what was
 * read, whatever other servers do meanwhile (STORE_WRITE_ROWS, store.h).
 */
int gw_quota_room(store_tx *tx, const gw_key *k, const char *hold, int64_t now_us, gw_room *out,
                  gp_err *err);
/*
 * Add `amount` to hold `hold` of key `k` for the month of `now_us` (made when
 * missing) and to the reserved figure of key, project and tenant; its time is
 * set to now (a live lease is never released as stale).  The caller checked
 * the room (gw_quota_room) in the same transaction.
 */
int gw_hold_grow(store_tx *tx, const gw_key *k, const char *hold, int64_t amount, int64_t now_us,
                 gp_err *err);
/* Give back hold `hold` entirely (gone already: nothing to do). */
int gw_hold_release(store_tx *tx, const char *hold, gp_err *err);
/* gw_hold_release of n holds in one transaction (locked in the holds' order, ledger.c). */
int gw_holds_release(store_tx *tx, const char *const *holds, size_t n, gp_err *err);

/* ---- usage records (ledger.c) ---- */

typedef struct gw_usage {
    int64_t at_us;
    char tenant_id[RND_ID_LEN], project_id[RND_ID_LEN], tenant[64], project[64], app[64];
    char key_id[RND_ID_LEN], model[128], model_tenant[64], endpoint_id[RND_ID_LEN];
    char accelerator[64];
    char kind[16];          /* chat | completion | embedding | response */
    int stream, estimated, status;
    int clipped;            /* the upstream's usage was refused or cut down (gw_usage_clip) */
    int64_t prompt_tokens, completion_tokens, latency_us;
    char hold[RND_ID_LEN];  /* the reservation to settle ("" none) */
    int lease;              /* `hold` is a lease: the record consumes its tokens from it */
} gw_usage;

/*
 * Insert the record and settle its hold (no hold: add its tokens to the month's use;
 * a lease: its tokens move from the lease's amount, at most all of it, into used).
 * Token figures are clamped to [0, GW_TOKENS_MAX] (a record that needed it is
 * stored clipped, as one with u->clipped set); the hourly rollup counts clipped records.
 */
int gw_usage_write(store_tx *tx, const gw_usage *u, gp_err *err);
/*
 * gw_usage_write for n records in one transaction, with the same result, but
 * one statement per record plus one per hourly rollup row, per lease and per
 * key's month touched (what a usage batch does).
 */
int gw_usage_write_many(store_tx *tx, const gw_usage *u, size_t n, gp_err *err);

/*
 * Usage records of a project (or a whole tenant when project_id is NULL),
 * newest first, optionally of one key, at most `limit`; each says whether its
 * upstream usage was "clipped".
 */
int gw_usage_list(store_tx *tx, const char *tenant_id, const char *project_id,
                  const char *key_id, int limit, json_t **items, gp_err *err);

/* ---- rate windows (limits.c; pure) ---- */

/*
 * A one-minute sliding window approximated from two fixed minutes: the
 * count of the previous minute weighted by how much of it the window still
 * covers, plus the current minute's.
 */
typedef struct gw_window {
    int64_t minute;   /* index of the current minute (now / 60 s) */
    int64_t prev, cur;
} gw_window;

/*
 * Would adding `cost` at `now_us` keep the window within `limit` (0 = no
 * limit)?  1 yes; 0 no, with *retry_after_s (>= 1) the seconds until it
 * would.  Does not add.
 */
int gw_window_allows(gw_window *w, int64_t now_us, int64_t cost, int64_t limit,
                     int64_t *retry_after_s);
/* Add `cost` (may be negative to give back an over-reservation; never below 0). */
void gw_window_add(gw_window *w, int64_t now_us, int64_t cost);

/*
 * Both windows rolled to the minute of `now_us` and added up: a process's own
 * window and what the other processes sharing the store counted.  Pure.
 */
gw_window gw_window_merge(const gw_window *a, const gw_window *b, int64_t now_us);

/*
 * A rough token count for text of `chars` characters, for requests whose
 * upstream reported no usage: ceil(chars / 4), at least 1 when chars > 0.
 */
int64_t gw_estimate_tokens(int64_t chars);

/* ---- what a client may ask, and overflow-proof token arithmetic (limits.c; pure) ---- */

/*
 * Documented ranges of the numbers a client sends (docs/gateway.md, "What a
 * request may ask"); anything else is a 400 in OpenAI's error shape, before
 * any window, quota or upstream is touched.
 */
#define GW_MAX_OUTPUT_TOKENS 1048576 /* max_tokens, max_completion_tokens: 1..this */
#define GW_MAX_CHOICES 128           /* n: 1..this */
#define GW_MAX_BEST_OF 20            /* best_of (completions, and chats for upstreams that take it): 1..this */
#define GW_MAX_ITEMS 4096            /* messages, prompts, inputs, content parts: at most this */
/*
 * Every ledger, window and usage figure stays within [0, GW_TOKENS_MAX]:
 * sums saturate there instead of wrapping (half of INT64_MAX, so that the
 * sum of two figures in range never overflows, in C or in SQL).
 */
#define GW_TOKENS_MAX (INT64_MAX / 2)
/* Slack added to the bounds of an upstream's usage (a chat template's own tokens). */
#define GW_USAGE_SLACK 64

/* a + b, saturating at INT64_MIN / INT64_MAX instead of overflowing. */
int64_t gw_sat_add(int64_t a, int64_t b);
/* a * b for a, b >= 0, saturating at INT64_MAX (a negative factor counts as 0). */
int64_t gw_sat_mul(int64_t a, int64_t b);
/* v clamped to [0, GW_TOKENS_MAX]. */
int64_t gw_tokens_clamp(int64_t v);
/*
 * Would `amount` more tokens keep used + reserved + amount within `quota`?
 * Each figure is clamped to [0, GW_TOKENS_MAX] first and the sum saturates,
 * so no input (INT64_MAX, negative) can wrap it into passing.  1 yes, 0 no.
 */
int gw_quota_fits(int64_t used, int64_t reserved, int64_t amount, int64_t quota);

/* What the gateway learnt from a request body it accepted. */
typedef struct gw_request_info {
    int stream;          /* "stream": true (chat, completions) */
    int include_usage;   /* "stream_options": {"include_usage": true} */
    int64_t max_out;     /* most tokens per answer: as asked, or GW_DEFAULT_MAX_TOKENS (0: embeddings) */
    int64_t answers;     /* answers generated: max(n, best_of) x prompts */
    int64_t prompt_chars;/* characters of the prompt (messages, prompt or input) */
    int max_out_given;   /* the client gave max_out (else it is GW_DEFAULT_MAX_TOKENS) */
    /* the field that carries max_out upstream: the one the client gave, else max_tokens
     * (max_output_tokens for the Responses API); "" for embeddings */
    char max_out_field[24];
} gw_request_info;

/*
 * Check a request body of `kind` ("chat" | "completion" | "embedding" |
 * "response") against the documented ranges: "stream" a boolean (or null),
 * "stream_options" an object with a boolean include_usage, max_tokens /
 * max_completion_tokens / n / best_of integers in range, messages / prompt /
 * input of the documented shapes and counts; for "response": "stream",
 * "max_output_tokens" in range, "instructions" a string, "input" a string or
 * at most GW_MAX_ITEMS items (objects whose content is a string or at most
 * GW_MAX_ITEMS parts), one answer.  GP_EINVALID with the reason
 * and `param` (the offending field; size 64) and *invalid_type 1 for a value
 * of the wrong type, 0 for one out of range.  OUT: *info.
 */
int gw_request_check(json_t *req, const char *kind, gw_request_info *info, char param[64],
                     int *invalid_type, gp_err *err);
/*
 * Characters of the prompt of `req`: messages' contents (for a chat also the
 * tool or function calls they carry, and the request's tools, functions and
 * response_format as compact JSON: the upstream reads them as prompt), the
 * prompt or the input; for "response" the instructions plus the input's text
 * (a string, or its items' contents, tool outputs and arguments) and its
 * "tools" and "text" (format) as compact JSON.
 */
int64_t gw_prompt_chars(json_t *req, const char *kind);
/* The tokens to reserve for a request: its prompt's estimate + max_out x answers, saturating. */
int64_t gw_reservation(const gw_request_info *info);
/*
 * Bytes of text an answer's choice generated: of `part` (a choice's
 * "message", or a stream chunk's "delta"), its content, refusal and
 * reasoning_content strings and its tool or function calls' arguments; and
 * of `choice` itself, a completion's "text".  Anything else an upstream sends
 * (ids, whitespace, padding, SSE comments) is not generated text.  Pure.
 */
int64_t gw_generated_chars(json_t *choice, json_t *part);

/*
 * The usage an upstream reported, checked: a negative figure is refused (the
 * estimate is used instead), a figure above its bound is cut to it, and
 * either sets *clipped.  Bounds: prompt_tokens <= max(prompt estimate,
 * request bytes) + GW_USAGE_SLACK; completion_tokens <= max(max_out x
 * answers, generated bytes) + GW_USAGE_SLACK (embeddings: 0), where the
 * generated bytes are those of the answer's text (gw_generated_chars), never
 * the answer's whole size, which the upstream can pad at will.  Pure.
 */
typedef struct gw_usage_bound {
    int64_t prompt_est, request_bytes;  /* the prompt's estimate; bytes sent upstream */
    int64_t completion_max, answer_bytes; /* max_out x answers; generated bytes of the answer */
    int64_t prompt_guess, completion_guess; /* estimates used for a refused figure */
    int budget;          /* a monthly token budget capped the request: completion_tokens never
                          * beyond completion_max (what was reserved), whatever was generated */
} gw_usage_bound;
void gw_usage_clip(const gw_usage_bound *b, int64_t *prompt, int64_t *completion, int *clipped);

/*
 * Token budgets (docs/gateway.md, "Token budgets"): the most tokens per
 * answer a request may generate when `room` tokens of the monthly budgets
 * are left and its reservation is base + per x units (base: the prompt's
 * estimate; per: its answers).  The largest units in [1, want] that fits
 * (want when all of it fits; per or want 0 - an embedding - : 0 when base
 * fits); -1 when nothing fits (the request is refused).  Pure, saturating.
 */
int64_t gw_budget_fit(int64_t base, int64_t per, int64_t want, int64_t room);

/* ---- token leases (lease.c; pure) ---- */

/* How big a lease grows (docs/gateway.md, "Admission"). */
typedef struct gw_lease_policy {
    int64_t horizon_ms;  /* a lease covers about this much of its recent rate (5000) */
    int64_t min_tokens;  /* at least this much ... (4096) */
    int64_t max_tokens;  /* ... and at most this (2^24; a request needing more gets what it needs) */
    int64_t share_div;   /* never more than 1/share_div of what the quotas leave (4), unless a
                          * request needs more: several processes share a small quota */
} gw_lease_policy;
#define GW_LEASE_POLICY_DEFAULT {5000, 4096, 16777216, 4}

/* One lease as a process sees it (under the caller's lock). */
typedef struct gw_lease {
    int64_t avail;       /* tokens granted and not taken by a request; < 0: requests used more
                          * than they reserved (owed, taken from the next grant) */
    int64_t inflight;    /* requests that took from it and have not ended */
    int64_t unsettled;   /* ended requests whose usage record is not written yet */
    int64_t rate_tokens, rate_since_us; /* tokens taken since then: the recent rate */
    int64_t last_us;     /* when a request last took from it */
} gw_lease;

/* Take `amount` for a request at `now_us`: 1 taken (counted in flight), 0 too little is left. */
int gw_lease_take(gw_lease *l, int64_t amount, int64_t now_us);
/* A request that took `reserved` ended having used `used` (its record is then queued). */
void gw_lease_end(gw_lease *l, int64_t reserved, int64_t used);
/* The usage record of a request that ended was written. */
void gw_lease_settled(gw_lease *l);
/* Tokens per second taken lately (over about the last 10 s; a first second counts as one). */
int64_t gw_lease_rate(const gw_lease *l, int64_t now_us);
/*
 * How much to add to a lease that cannot cover `amount` (avail < amount) when
 * the quotas leave `room`: about horizon_ms of its rate within [min, max],
 * at most room / share_div, but at least what the request needs (amount -
 * avail: what is owed too) and never more than room.  0: refuse (room is
 * less than what the request needs; or the lease covers it already).
 */
int64_t gw_lease_size(const gw_lease_policy *p, const gw_lease *l, int64_t amount, int64_t room,
                      int64_t now_us);
/* May the lease be given back: nothing in flight or unwritten, untouched for idle_us. */
int gw_lease_idle(const gw_lease *l, int64_t now_us, int64_t idle_us);

/* ---- where endpoints may point (proxy.c) ---- */

/*
 * Model endpoints may not point at loopback (127/8, ::1), link-local
 * (169.254/16, fe80::/10), unspecified (0/8, ::), multicast or broadcast
 * addresses, nor at the cloud metadata addresses (169.254.169.254,
 * fd00:ec2::254, 100.100.100.200, 168.63.129.16), IPv4-mapped forms
 * included, unless ops allow-listed them; and never at the control plane's
 * own listen address.  Checked when an endpoint is added (an address
 * literal, or a "localhost" name) and on every connection after DNS
 * resolution (so a name that resolves there later is refused too).  The
 * host of a job's endpoint is the node's, not the tenant's: only the own
 * address rule applies to it.
 */

/*
 * The ops allow-list: comma-separated CIDRs ("127.0.0.0/8,::1/128,10.1.2.3");
 * NULL or "" for none.  GP_EINVALID naming a bad element (the list is then
 * unchanged).  Call before serving (not thread-safe against calls in flight).
 */
int gw_set_endpoint_allow(const char *cidrs, gp_err *err);
/* The control plane's own listen address (host as given, port); NULL host: forget it. */
void gw_set_self_address(const char *host, int port);
/*
 * May an endpoint connect to the numeric address `addr` ("127.0.0.1",
 * "::1", "::ffff:169.254.169.254") on `port`?  `job`: a job's endpoint.
 * GP_OK, or GP_EINVALID with why.  Pure but for the settings above.
 */
int gw_addr_check(const char *addr, int port, int job, gp_err *err);
/*
 * Create-time check of an endpoint URL's host: an address literal in any
 * form libc accepts ("127.1", "0x7f000001", "[::1]"), or a name ending in
 * "localhost"; other names are checked when connecting.  GP_EINVALID.
 */
int gw_url_check(const char *url, gp_err *err);

/* ---- refusals of a known key (runtime.c) ---- */

typedef struct gw_runtime gw_runtime;

enum { GW_REFUSE_MODEL, GW_REFUSE_RATE, GW_REFUSE_QUOTA, GW_REFUSE_PARALLEL, GW_REFUSE__N };

/*
 * Count a refusal of key `key_id` of `kind` at `now_us` (always counted,
 * for /metrics).  1 when it should be audited: the first of its kind for
 * that key in this minute; *suppressed then holds how many were not
 * audited since the last one.  0 otherwise.
 */
int gw_rt_refusal(gw_runtime *rt, const char *key_id, int kind, int64_t now_us,
                  int64_t *suppressed);
/* Count a usage record whose upstream usage was clipped (for /metrics). */
void gw_rt_count_clipped(gw_runtime *rt);
/* The gateway's counters in Prometheus text, appended to `out`. */
void gw_rt_metrics(gw_runtime *rt, strbuf *out);

/* ---- calls to an upstream (proxy.c) ---- */

typedef struct gw_call gw_call;

/*
 * Trust the PEM CAs in `path` (copied) instead of the system's store for
 * https endpoints; NULL: the system's store again.  Call before serving
 * (not thread-safe against calls in flight).
 */
void gw_set_upstream_ca(const char *path);

/*
 * POST `body` (JSON; NULL: a GET) to ep->base + path and wait for the
 * status line and headers (at most timeout_s for the whole call; 3 s to
 * connect).  GP_EIO when no answer came at all (connect refused, timeout):
 * the caller may try another endpoint.  OUT: *out (gw_call_free).
 */
int gw_call_start(const gw_endpoint *ep, const char *path, const char *body, size_t len,
                  int timeout_s, gw_call **out, gp_err *err);
long gw_call_status(const gw_call *c);
const char *gw_call_content_type(const gw_call *c);
/* The next bytes of the body as they arrive: > 0 bytes, 0 at the end, -1 on a broken transfer. */
long gw_call_read(gw_call *c, char *buf, size_t max);
/* The rest of the body into `out` (at most `max` bytes: GP_ETOOLARGE). */
int gw_call_body(gw_call *c, strbuf *out, size_t max, gp_err *err);
const char *gw_call_error(const gw_call *c);
void gw_call_free(gw_call *c);

/* ---- streamed completions (sse.c; pure) ---- */

typedef struct gw_sse {
    strbuf pending;          /* bytes of an event not yet complete */
    size_t scanned;          /* pending[0..scanned) holds no event end: scan on from there */
    int strip_usage;         /* drop the usage-only chunk (the client did not ask for it) */
    int has_usage, saw_done, saw_error;
    int64_t prompt_tokens, completion_tokens;
    int64_t completion_chars; /* generated text seen, for an estimate */
    int64_t events;
    /* a token budget (gw_sse_set_budget): the stream is cut with a clean finish once the
     * generated text would pass it */
    int64_t budget;          /* tokens; 0: none */
    int64_t pieces;          /* choice deltas (or Responses deltas) that carried text */
    int responses;           /* a Responses API stream (its finish is response.incomplete) */
    int cut;                 /* the budget was spent: the finish was sent, the rest is dropped */
    int max_index;           /* the highest choice index seen (for the finish chunks) */
    char id[128], model[128]; /* of the chunks seen, for the finish chunks */
    int64_t created;
} gw_sse;

/*
 * The end of the first complete event in b[0..len), searching from `from`
 * (a blank line: "\n\n" or "\r\n\r\n").  Returns the bytes up to and
 * including the blank line, with *end the event's own length; 0 when no
 * event is complete yet.
 */
size_t gw_sse_event_end(const char *b, size_t len, size_t from, size_t *end);
/* The payload of an event's `data:` line (one leading space dropped), or NULL. OUT *len. */
const char *gw_sse_data(const char *ev, size_t n, size_t *len);

void gw_sse_init(gw_sse *s, int strip_usage);
void gw_sse_release(gw_sse *s);
#define GW_SSE_TOKEN_BYTES 16 /* a cut stream's tokens: at most this many bytes each on average */
/*
 * Cut the stream once its generated tokens, counted as max(text pieces,
 * ceil(text bytes / GW_SSE_TOKEN_BYTES)), would pass `budget` (> 0): the
 * event that would pass it is replaced by a clean finish - a chunk per choice
 * with finish_reason "length" and `data: [DONE]` (a Responses stream: a
 * response.incomplete event, reason max_output_tokens) - s->cut is set and
 * everything after is dropped.  `responses`: a Responses API stream.
 */
void gw_sse_set_budget(gw_sse *s, int64_t budget, int responses);
/* The generated tokens of the events passed on so far, as billed without the upstream's
 * usage: max(ceil(text bytes / 4), text pieces). */
int64_t gw_sse_tokens(const gw_sse *s);
/* Feed upstream bytes; complete events the client should get are appended to `out`. */
void gw_sse_feed(gw_sse *s, const char *data, size_t n, strbuf *out);
/* The upstream ended: whatever partial event is left. */
void gw_sse_finish(gw_sse *s, strbuf *out);

/* ---- the gateway at run time (runtime.c) ---- */

typedef struct gw_runtime gw_runtime;

typedef struct gw_runtime_config {
    int flush_ms;          /* usage records are written at least this often (200) */
    int batch;             /* ... or once this many are queued (256) */
    int health_interval_s; /* endpoint checks; 0: none */
    int eject_after;       /* consecutive failures that eject an endpoint / mark it unhealthy (3) */
    int eject_ms;          /* how long an endpoint stays ejected from routing (30000) */
    int queue_wait_ms;     /* longest wait in an endpoint's line for a slot (30000) */
    int upstream_timeout_s;/* whole upstream call (300) */
    /* when set: endpoint checks and stale-hold release run only while it returns 1
     * (the server that leads, among several sharing one store) */
    int (*leads)(void *arg);
    void *leads_arg;
    gw_lease_policy lease; /* token leases (zero: GW_LEASE_POLICY_DEFAULT) */
} gw_runtime_config;

int gw_rt_start(store_t *st, const gw_runtime_config *cfg, gw_runtime **out, gp_err *err);
/* Stop the background thread and write every queued usage record. NULL is a no-op. */
void gw_rt_stop(gw_runtime *rt);

/*
 * Admit a request of key `k` costing `tokens` (its reservation) against the
 * per-minute windows of the key and its project; counts it when admitted.
 * 0 when limited: *retry_after_s and `why` ("requests per minute of this key").
 */
int gw_rt_admit(gw_runtime *rt, const gw_key *k, int64_t tokens, int64_t now_us,
                int64_t *retry_after_s, char *why, size_t why_len);
/* Correct the token windows once the real count is known (delta = used - reserved). */
void gw_rt_adjust(gw_runtime *rt, const gw_key *k, int64_t token_delta, int64_t now_us);
/*
 * Start a request of key `k` against its max_parallel (0: always admitted):
 * the requests in flight here plus those the other processes on the store
 * last shared (about once a second).  1 admitted and counted (call
 * gw_rt_leave exactly once when it ends); 0 refused.  OUT: *in_flight, the
 * count it was judged on.
 */
int gw_rt_enter(gw_runtime *rt, const gw_key *k, int64_t *in_flight);
/* A request admitted by gw_rt_enter has ended. */
void gw_rt_leave(gw_runtime *rt, const char *key_id);
/*
 * Take `amount` tokens (a request's reservation) for key `k` from this
 * process's lease of the key's month, growing the lease in one write
 * transaction when it has too little (gw_lease_size; the quotas' room read in
 * that transaction).  Call only when a monthly quota applies to the key.
 * GP_EFORBIDDEN with the quota it would pass, in the words of gw_reserve; a
 * store error otherwise.  OUT: hold, the lease (the usage record's `hold`,
 * with `lease` set).
 */
int gw_rt_lease_take(gw_runtime *rt, const gw_key *k, int64_t amount, int64_t now_us,
                     char hold[RND_ID_LEN], gp_err *err);
/*
 * gw_rt_lease_take for a request whose reservation may shrink: it takes
 * base + per x units for the largest units in [1, want] that the lease plus
 * what the quotas still allow can cover (gw_budget_fit), all of want when it
 * fits.  GP_EFORBIDDEN (as gw_rt_lease_take) when not even one unit fits.
 * OUT: hold, *units.
 */
int gw_rt_lease_take_fit(gw_runtime *rt, const gw_key *k, int64_t base, int64_t per, int64_t want,
                         int64_t now_us, char hold[RND_ID_LEN], int64_t *units, gp_err *err);
/* A request that took `reserved` from lease `hold` ended having used `used` (once, before gw_rt_record). */
void gw_rt_lease_end(gw_runtime *rt, const char *key_id, const char *hold, int64_t reserved,
                     int64_t used);
/* The runtime's read cache (keys and routes of the request path). */
gw_cache *gw_rt_cache(gw_runtime *rt);
/* Count a knowledge-base query made for a request (/metrics: gpupool_gateway_retrievals_total). */
void gw_rt_count_retrieval(gw_runtime *rt);

/*
 * Outlier ejection (in this process): an endpoint that failed eject_after
 * times in a row on the request path (no connection, a broken transfer, or
 * an answer 502, 503 or 504) is skipped for eject_ms; a success clears its
 * count and ends its ejection.  gw_rt_usable fills usable[i] for each of
 * r's endpoints (1: not ejected now).
 */
void gw_rt_usable(gw_runtime *rt, const gw_route *r, int64_t now_us, int usable[GW_MAX_ENDPOINTS]);
/* Record one request's outcome at endpoint `ep_id` (ok: it answered, and not 502/503/504). */
void gw_rt_endpoint_result(gw_runtime *rt, const char *ep_id, int ok, int64_t now_us);
/* Count a request routed in panic mode (every endpoint unhealthy or ejected). */
void gw_rt_count_panic(gw_runtime *rt);
/*
 * Take one of endpoint ep_id's `limit` slots (its max_concurrency) in this
 * process for a request: at once when one is free and nobody waits; else,
 * when `wait` and fewer than `queue` requests wait, in the endpoint's line
 * (first come, first served) for at most the config's queue_wait_ms.  A slot
 * given back goes straight to the first in line.  limit <= 0: no bound (the
 * request is still counted).
 * RET 1: a slot is held (gw_rt_ep_leave once, when the upstream call ends);
 *     0: none (the line was full, waiting was not asked, or the wait ran out;
 *     counted in gpupool_gateway_endpoint_busy_total).
 */
int gw_rt_ep_enter(gw_runtime *rt, const char *ep_id, int limit, int queue, int wait);
/* Give back a slot taken by gw_rt_ep_enter (to the first in line, if any). */
void gw_rt_ep_leave(gw_runtime *rt, const char *ep_id);
/* Round-robin counter. */
unsigned long gw_rt_next(gw_runtime *rt);
/* Queue a usage record (written, with its hold settled, by the next flush). */
int gw_rt_record(gw_runtime *rt, const gw_usage *u);
/* Write the queued records now (a failed batch stays queued). */
int gw_rt_flush(gw_runtime *rt, gp_err *err);
/* The runtime's upstream timeout. */
int gw_rt_timeout(const gw_runtime *rt);

/* ---- one /v1 request, from its API key to its answer (request.c) ---- */

/*
 * What a /v1 request brings, borrowed for the call: the HTTP layer
 * (src/api/h_gateway.c) fills it from its request.  `kind`: "chat",
 * "completion", "embedding" or "response" (forwarded to `path` upstream,
 * with `body`), "models" (GET /v1/models) or "model" (GET
 * /v1/models/{model}: `model`).
 */
typedef struct gw_in {
    const char *kind;
    const char *path;          /* the upstream path ("/chat/completions"); forwarded kinds */
    const char *model;         /* "model": the id asked for (NULL: "") */
    const char *authorization; /* the Authorization header, NULL when absent */
    const char *body;          /* as the client sent it (forwarded kinds) */
    size_t body_len;
    int max_depth;             /* JSON nesting the body may have (jx_parse) */
    /* for the audit event of a refusal */
    const char *request_id, *source;
    const char *action;        /* the route's audit name ("gateway.chat"); NULL: "gateway" */
} gw_in;

/*
 * The answer, for the HTTP layer to send.  An error (gw_request_run
 * returned non-zero) is in OpenAI's terms, for its shape
 * {"error":{message,type,param,code}}: `type`, `code`, `param` ("": null)
 * and `message`.  Otherwise one of: a stream (`read` non-NULL: the bytes
 * as they come, `release` once the response is done or the client went
 * away, both with `cls`; see api_stream), a text body of `content_type`
 * (`text`, NULL as ""), or a JSON body (`json`).  `retry_after` ("" none)
 * goes out as the Retry-After header.  Owned: `json`, `text`, and `cls`
 * until handed on; gw_out_release() frees what is left.
 */
typedef struct gw_out {
    int status;
    const char *type, *code; /* static strings; NULL on success */
    char param[64];
    char message[600];
    char retry_after[24];
    json_t *json;
    char *text;
    const char *content_type; /* a text body's or a stream's; NULL: the JSON body */
    long (*read)(void *cls, char *buf, size_t max); /* > 0 bytes, 0 end, < 0 abort */
    void (*release)(void *cls);
    void *cls;
} gw_out;

/*
 * Serve one /v1 request: the key (admit_key), the body's checks, the model's
 * route, every limit (in flight, windows, monthly quotas), retrieval, the
 * upstream call and the answer, with its usage record, metrics and the
 * audit of a refusal.  `rt` NULL: no runtime (the key is read from `st`;
 * anything forwarded is a 500).  Returns GP_OK with the answer in *out
 * (whatever status the upstream answered), or the failure's code with its
 * OpenAI error in *out.  Either way release *out with gw_out_release()
 * once what it owns has been handed on.
 */
int gw_request_run(gw_runtime *rt, store_t *st, const gw_in *in, gw_out *out);
/* Free what `o` still owns (a stream not handed on is released); NULL-safe. */
void gw_out_release(gw_out *o);

#endif
