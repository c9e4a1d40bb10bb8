/*
 * limits.c - per-minute rate windows, token estimates, what a request may
 * ask, overflow-proof token arithmetic and the check of an upstream's usage
 * (see gateway.h).  Pure: the caller owns the windows and the lock around
 * them.
 */
#include "gateway.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define MINUTE_US 60000000LL

/* Roll the window forward to the minute of `now_us`. */
static void roll(gw_window *w, int64_t now_us) {
    int64_t m = now_us / MINUTE_US;
    if (m == w->minute) return;
    w->prev = m == w->minute + 1 ? w->cur : 0;
    w->cur = 0;
    w->minute = m;
}

/* The window's count now: the previous minute weighted by the part still covered (rounded up). */
static int64_t count(const gw_window *w, int64_t now_us) {
    int64_t into = now_us % MINUTE_US; /* how far into the current minute */
    return w->cur + (w->prev * (MINUTE_US - into) + MINUTE_US - 1) / MINUTE_US;
}

int gw_window_allows(gw_window *w, int64_t now_us, int64_t cost, int64_t limit,
                     int64_t *retry_after_s) {
    assert(w && now_us >= 0 && cost >= 0);
    if (limit <= 0) return 1;
    roll(w, now_us);
    if (gw_sat_add(count(w, now_us), cost) <= limit) return 1;
    if (retry_after_s) {
        /* the earliest second at which the weighted previous minute has shrunk enough,
         * or the next minute when the current one alone is over */
        int64_t into = now_us % MINUTE_US, wait_us = MINUTE_US - into;
        if (gw_sat_add(w->cur, cost) <= limit && w->prev > 0) {
            int64_t room = limit - w->cur - cost; /* >= 0 */
            /* prev * (MIN - t) / MIN <= room  <=>  t >= MIN - room*MIN/prev */
            int64_t t = MINUTE_US - (room * MINUTE_US) / w->prev;
            if (t > into) wait_us = t - into;
        }
        int64_t s = (wait_us + 999999) / 1000000;
        *retry_after_s = s < 1 ? 1 : s;
    }
    return 0;
}

void gw_window_add(gw_window *w, int64_t now_us, int64_t cost) {
    assert(w && now_us >= 0);
    roll(w, now_us);
    w->cur = gw_tokens_clamp(gw_sat_add(w->cur, cost));
}

gw_window gw_window_merge(const gw_window *a, const gw_window *b, int64_t now_us) {
    assert(a && b && now_us >= 0);
    gw_window x = *a, y = *b;
    roll(&x, now_us);
    roll(&y, now_us);
    return (gw_window){.minute = x.minute, .prev = gw_sat_add(x.prev, y.prev),
                       .cur = gw_sat_add(x.cur, y.cur)};
}

int64_t gw_estimate_tokens(int64_t chars) {
    if (chars <= 0) return 0;
    return chars / 4 + (chars % 4 != 0); /* (chars + 3) / 4, without overflow */
}

/* ---- overflow-proof arithmetic ---- */

int64_t gw_sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return b > 0 ? INT64_MAX : INT64_MIN;
}

int64_t gw_sat_mul(int64_t a, int64_t b) {
    if (a <= 0 || b <= 0) return 0;
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t gw_tokens_clamp(int64_t v) { return v < 0 ? 0 : v > GW_TOKENS_MAX ? GW_TOKENS_MAX : v; }

int gw_quota_fits(int64_t used, int64_t reserved, int64_t amount, int64_t quota) {
    int64_t sum = gw_sat_add(gw_sat_add(gw_tokens_clamp(used), gw_tokens_clamp(reserved)),
                             gw_tokens_clamp(amount));
    return sum <= quota;
}

/* ---- what a request may ask ---- */

static int64_t text_chars(json_t *v, int depth) {
    if (json_is_string(v)) return (int64_t)json_string_length(v);
    if (json_is_integer(v)) return 4; /* a token id */
    int64_t n = 0;
    size_t i;
    json_t *e;
    if (depth > 4) return 0;
    if (json_is_array(v)) json_array_foreach(v, i, e) n = gw_sat_add(n, text_chars(e, depth + 1));
    else if (json_is_object(v)) n = text_chars(json_object_get(v, "text"), depth + 1);
    return n;
}

/* Bytes of `v` as compact JSON (0 for none): a part of the prompt that is not text. */
static int64_t json_chars(json_t *v) {
    if (!v || json_is_null(v)) return 0;
    size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT);
    return n > (size_t)INT64_MAX ? INT64_MAX : (int64_t)n;
}

int64_t gw_prompt_chars(json_t *req, const char *kind) {
    if (!strcmp(kind, "response")) { /* instructions + input: text, or items' contents */
        int64_t n = text_chars(json_object_get(req, "instructions"), 0);
        json_t *in = json_object_get(req, "input");
        size_t i;
        json_t *it;
        if (!json_is_array(in)) n = gw_sat_add(n, text_chars(in, 0));
        json_array_foreach(in, i, it) {
            n = gw_sat_add(n, text_chars(json_object_get(it, "content"), 0));
            n = gw_sat_add(n, text_chars(json_object_get(it, "output"), 0)); /* a tool's result */
            n = gw_sat_add(n, text_chars(json_object_get(it, "arguments"), 0));
        }
        /* as for chat: the tools and the output format declared are read as prompt too */
        n = gw_sat_add(n, json_chars(json_object_get(req, "tools")));
        return gw_sat_add(n, json_chars(json_object_get(req, "text")));
    }
    if (!strcmp(kind, "chat")) {
        /* the upstream reads as prompt the messages' text, the calls they carry, and the
         * tools, functions and response schema the request declares: all of it counts */
        int64_t n = 0;
        size_t i, k;
        json_t *m, *tc;
        json_array_foreach(json_object_get(req, "messages"), i, m) {
            n = gw_sat_add(n, text_chars(json_object_get(m, "content"), 0));
            json_array_foreach(json_object_get(m, "tool_calls"), k, tc)
                n = gw_sat_add(n, json_chars(json_object_get(tc, "function")));
            n = gw_sat_add(n, json_chars(json_object_get(m, "function_call")));
        }
        static const char *const decl[] = {"tools", "functions", "response_format", NULL};
        for (int d = 0; decl[d]; d++) n = gw_sat_add(n, json_chars(json_object_get(req, decl[d])));
        return n;
    }
    return text_chars(json_object_get(req, !strcmp(kind, "embedding") ? "input" : "prompt"), 0);
}

static int bad(char param[64], int *invalid_type, int type, const char *name, gp_err *err,
               const char *msg) {
    snprintf(param, 64, "%s", name);
    *invalid_type = type;
    return gp_err_set(err, GP_EINVALID, "%s", msg);
}

/* An optional integer in [lo, hi] (null: absent).  OUT: *out (unchanged when absent). */
static int int_field(json_t *req, const char *name, int64_t lo, int64_t hi, int64_t *out,
                     char param[64], int *invalid_type, gp_err *err) {
    json_t *v = json_object_get(req, name);
    if (!v || json_is_null(v)) return GP_OK;
    char msg[200];
    if (!json_is_integer(v)) {
        snprintf(msg, sizeof msg, "Invalid type for '%s': expected an integer.", name);
        return bad(param, invalid_type, 1, name, err, msg);
    }
    int64_t x = json_integer_value(v);
    if (x < lo || x > hi) {
        snprintf(msg, sizeof msg, "Invalid '%s': %lld is out of range; it must be %lld to %lld.",
                 name, (long long)x, (long long)lo, (long long)hi);
        return bad(param, invalid_type, 0, name, err, msg);
    }
    *out = x;
    return GP_OK;
}

/* An optional boolean (null: absent).  OUT: *out 1 for true. */
static int bool_field(json_t *o, const char *name, const char *pname, int *out, char param[64],
                      int *invalid_type, gp_err *err) {
    json_t *v = json_object_get(o, name);
    *out = 0;
    if (!v || json_is_null(v)) return GP_OK;
    if (!json_is_boolean(v)) {
        char msg[200];
        snprintf(msg, sizeof msg, "Invalid type for '%s': expected a boolean.", pname);
        return bad(param, invalid_type, 1, pname, err, msg);
    }
    *out = json_is_true(v);
    return GP_OK;
}

/*
 * A prompt or input: a string, an array of strings, an array of token ids,
 * or an array of arrays of token ids; at most GW_MAX_ITEMS elements each.
 * OUT: *count (how many prompts).
 */
static int prompt_field(json_t *req, const char *name, int64_t *count, char param[64],
                        int *invalid_type, gp_err *err) {
    json_t *v = json_object_get(req, name);
    char msg[200];
    *count = 1;
    if (!v || json_is_null(v) || json_is_string(v)) return GP_OK;
    if (!json_is_array(v)) {
        snprintf(msg, sizeof msg, "Invalid type for '%s': expected a string or an array.", name);
        return bad(param, invalid_type, 1, name, err, msg);
    }
    if (json_array_size(v) > GW_MAX_ITEMS) {
        snprintf(msg, sizeof msg, "Invalid '%s': at most %d elements.", name, GW_MAX_ITEMS);
        return bad(param, invalid_type, 0, name, err, msg);
    }
    size_t i;
    json_t *e;
    int strings = 0, ints = 0, arrays = 0;
    json_array_foreach(v, i, e) {
        if (json_is_string(e)) strings++;
        else if (json_is_integer(e) && json_integer_value(e) >= 0) ints++;
        else if (json_is_array(e) && json_array_size(e) <= GW_MAX_ITEMS) {
            size_t k;
            json_t *t;
            json_array_foreach(e, k, t) if (!json_is_integer(t) || json_integer_value(t) < 0) {
                snprintf(msg, sizeof msg, "Invalid '%s[%zu]': token ids are non-negative integers.",
                         name, i);
                return bad(param, invalid_type, 1, name, err, msg);
            }
            arrays++;
        } else {
            snprintf(msg, sizeof msg,
                     "Invalid '%s[%zu]': expected a string, a token id or an array of at most %d "
                     "token ids.", name, i, GW_MAX_ITEMS);
            return bad(param, invalid_type, 1, name, err, msg);
        }
    }
    if ((strings && (ints || arrays)) || (ints && arrays)) {
        snprintf(msg, sizeof msg, "Invalid '%s': do not mix strings, token ids and token arrays.",
                 name);
        return bad(param, invalid_type, 1, name, err, msg);
    }
    *count = ints ? 1 : (int64_t)(json_array_size(v) ? json_array_size(v) : 1);
    return GP_OK;
}

/* The input of a Responses request: a string, or at most GW_MAX_ITEMS items (objects). */
static int input_items_field(json_t *req, char param[64], int *invalid_type, gp_err *err) {
    json_t *v = json_object_get(req, "input");
    char msg[200];
    json_t *ins = json_object_get(req, "instructions");
    if (ins && !json_is_null(ins) && !json_is_string(ins))
        return bad(param, invalid_type, 1, "instructions", err,
                   "Invalid type for 'instructions': expected a string.");
    if (!v || json_is_null(v) || json_is_string(v)) return GP_OK;
    if (!json_is_array(v))
        return bad(param, invalid_type, 1, "input", err,
                   "Invalid type for 'input': expected a string or an array.");
    if (json_array_size(v) > GW_MAX_ITEMS) {
        snprintf(msg, sizeof msg, "Invalid 'input': at most %d items.", GW_MAX_ITEMS);
        return bad(param, invalid_type, 0, "input", err, msg);
    }
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m) {
        json_t *c = json_object_get(m, "content");
        if (!json_is_object(m)) {
            snprintf(msg, sizeof msg, "Invalid type for 'input[%zu]': expected an object.", i);
            return bad(param, invalid_type, 1, "input", err, msg);
        }
        if (c && !json_is_null(c) && !json_is_string(c) && !json_is_array(c)) {
            snprintf(msg, sizeof msg,
                     "Invalid type for 'input[%zu].content': expected a string or an array.", i);
            return bad(param, invalid_type, 1, "input", err, msg);
        }
        if (json_array_size(c) > GW_MAX_ITEMS) {
            snprintf(msg, sizeof msg, "Invalid 'input[%zu].content': at most %d parts.", i,
                     GW_MAX_ITEMS);
            return bad(param, invalid_type, 0, "input", err, msg);
        }
    }
    return GP_OK;
}

static int messages_field(json_t *req, char param[64], int *invalid_type, gp_err *err) {
    json_t *v = json_object_get(req, "messages");
    char msg[200];
    if (!v) return GP_OK; /* the upstream says what it misses */
    if (!json_is_array(v))
        return bad(param, invalid_type, 1, "messages", err,
                   "Invalid type for 'messages': expected an array.");
    if (json_array_size(v) > GW_MAX_ITEMS) {
        snprintf(msg, sizeof msg, "Invalid 'messages': at most %d messages.", GW_MAX_ITEMS);
        return bad(param, invalid_type, 0, "messages", err, msg);
    }
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m) {
        json_t *c = json_object_get(m, "content");
        if (!json_is_object(m)) {
            snprintf(msg, sizeof msg, "Invalid type for 'messages[%zu]': expected an object.", i);
            return bad(param, invalid_type, 1, "messages", err, msg);
        }
        if (c && !json_is_null(c) && !json_is_string(c) && !json_is_array(c)) {
            snprintf(msg, sizeof msg,
                     "Invalid type for 'messages[%zu].content': expected a string or an array.", i);
            return bad(param, invalid_type, 1, "messages", err, msg);
        }
        if (json_array_size(c) > GW_MAX_ITEMS) {
            snprintf(msg, sizeof msg, "Invalid 'messages[%zu].content': at most %d parts.", i,
                     GW_MAX_ITEMS);
            return bad(param, invalid_type, 0, "messages", err, msg);
        }
    }
    return GP_OK;
}

int gw_request_check(json_t *req, const char *kind, gw_request_info *info, char param[64],
                     int *invalid_type, gp_err *err) {
    memset(info, 0, sizeof *info);
    param[0] = '\0';
    *invalid_type = 0;
    if (!json_is_object(req))
        return bad(param, invalid_type, 1, "", err, "The request body must be a JSON object.");
    int embedding = !strcmp(kind, "embedding"), chat = !strcmp(kind, "chat");
    int rc = GP_OK;
    int64_t n = 1, best_of = 1, prompts = 1, max_tokens = 0, max_completion = 0;
    if (!strcmp(kind, "response")) { /* the Responses API: one answer, max_output_tokens */
        json_t *so = json_object_get(req, "stream_options");
        rc = bool_field(req, "stream", "stream", &info->stream, param, invalid_type, err);
        if (!rc && so && !json_is_null(so) && !json_is_object(so))
            rc = bad(param, invalid_type, 1, "stream_options", err,
                     "Invalid type for 'stream_options': expected an object.");
        if (!rc) rc = int_field(req, "max_output_tokens", 1, GW_MAX_OUTPUT_TOKENS, &max_tokens,
                                param, invalid_type, err);
        if (!rc) rc = input_items_field(req, param, invalid_type, err);
        if (rc) return rc;
        info->max_out = max_tokens ? max_tokens : GW_DEFAULT_MAX_TOKENS;
        info->max_out_given = max_tokens != 0;
        snprintf(info->max_out_field, sizeof info->max_out_field, "max_output_tokens");
        info->answers = 1;
        info->prompt_chars = gw_prompt_chars(req, kind);
        return GP_OK;
    }
    if (!embedding) {
        rc = bool_field(req, "stream", "stream", &info->stream, param, invalid_type, err);
        json_t *so = json_object_get(req, "stream_options");
        if (!rc && so && !json_is_null(so) && !json_is_object(so))
            rc = bad(param, invalid_type, 1, "stream_options", err,
                     "Invalid type for 'stream_options': expected an object.");
        if (!rc && json_is_object(so))
            rc = bool_field(so, "include_usage", "stream_options.include_usage",
                            &info->include_usage, param, invalid_type, err);
        if (!rc) rc = int_field(req, "max_tokens", 1, GW_MAX_OUTPUT_TOKENS, &max_tokens, param,
                                invalid_type, err);
        if (!rc) rc = int_field(req, "max_completion_tokens", 1, GW_MAX_OUTPUT_TOKENS,
                                &max_completion, param, invalid_type, err);
        if (!rc) rc = int_field(req, "n", 1, GW_MAX_CHOICES, &n, param, invalid_type, err);
        /* chats too: upstreams that take best_of for a chat (vLLM) generate that many */
        if (!rc)
            rc = int_field(req, "best_of", 1, GW_MAX_BEST_OF, &best_of, param, invalid_type, err);
    }
    if (!rc && chat) rc = messages_field(req, param, invalid_type, err);
    if (!rc && !chat)
        rc = prompt_field(req, embedding ? "input" : "prompt", &prompts, param, invalid_type, err);
    if (rc) return rc;
    if (!info->stream) info->include_usage = 0;
    info->max_out = embedding          ? 0
                    : max_completion   ? max_completion
                    : max_tokens       ? max_tokens
                                       : GW_DEFAULT_MAX_TOKENS;
    info->max_out_given = max_completion || max_tokens;
    if (!embedding)
        snprintf(info->max_out_field, sizeof info->max_out_field, "%s",
                 max_completion ? "max_completion_tokens" : "max_tokens");
    info->answers = embedding ? 0 : gw_sat_mul(n > best_of ? n : best_of, prompts);
    info->prompt_chars = gw_prompt_chars(req, kind);
    return GP_OK;
}

static int64_t str_len(json_t *v) { return json_is_string(v) ? (int64_t)json_string_length(v) : 0; }

int64_t gw_generated_chars(json_t *choice, json_t *part) {
    int64_t n = str_len(json_object_get(choice, "text"));
    if (!json_is_object(part)) return n;
    static const char *const texts[] = {"content", "refusal", "reasoning_content", NULL};
    for (int i = 0; texts[i]; i++) n = gw_sat_add(n, str_len(json_object_get(part, texts[i])));
    size_t k;
    json_t *tc;
    json_array_foreach(json_object_get(part, "tool_calls"), k, tc)
        n = gw_sat_add(n, str_len(json_object_get(json_object_get(tc, "function"), "arguments")));
    return gw_sat_add(n, str_len(json_object_get(json_object_get(part, "function_call"),
                                                  "arguments")));
}

int64_t gw_reservation(const gw_request_info *info) {
    return gw_tokens_clamp(gw_sat_add(gw_estimate_tokens(info->prompt_chars),
                                      gw_sat_mul(info->max_out, info->answers)));
}

int64_t gw_budget_fit(int64_t base, int64_t per, int64_t want, int64_t room) {
    base = gw_tokens_clamp(base);
    per = gw_tokens_clamp(per);
    want = gw_tokens_clamp(want);
    if (gw_sat_add(base, gw_sat_mul(per, want)) <= room) return want;
    if (per == 0 || want == 0 || gw_sat_add(base, per) > room) return -1;
    return (room - base) / per; /* in [1, want): base + per x want passed room */
}

/* ---- an upstream's usage ---- */

void gw_usage_clip(const gw_usage_bound *b, int64_t *prompt, int64_t *completion, int *clipped) {
    int64_t pmax = gw_sat_add(b->prompt_est > b->request_bytes ? b->prompt_est : b->request_bytes,
                              GW_USAGE_SLACK);
    /* under a budget, what the upstream generated beyond max_out is not billed: the
     * reservation covered max_out, and the quota holds whatever the upstream does */
    int64_t cmax = b->completion_max <= 0 && (b->answer_bytes <= 0 || b->budget)
                       ? 0
                   : b->budget ? b->completion_max
                       : gw_sat_add(b->completion_max > b->answer_bytes ? b->completion_max
                                                                        : b->answer_bytes,
                                    GW_USAGE_SLACK);
    pmax = gw_tokens_clamp(pmax);
    cmax = gw_tokens_clamp(cmax);
    if (*prompt < 0) {
        *prompt = gw_tokens_clamp(b->prompt_guess) > pmax ? pmax : gw_tokens_clamp(b->prompt_guess);
        *clipped = 1;
    } else if (*prompt > pmax) {
        *prompt = pmax;
        *clipped = 1;
    }
    if (*completion < 0) {
        int64_t g = gw_tokens_clamp(b->completion_guess);
        *completion = g > cmax ? cmax : g;
        *clipped = 1;
    } else if (*completion > cmax) {
        *completion = cmax;
        *clipped = 1;
    }
}
