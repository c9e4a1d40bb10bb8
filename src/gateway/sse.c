/*
 * sse.c - the server-sent events of a streamed completion, as they pass
 * through the gateway (see gateway.h).  Pure: bytes in, bytes out.
 *
 * Events are split on blank lines; each `data:` payload that is JSON is
 * looked at (never re-encoded) for its usage and for the text it carries.
 * The usage-only chunk ({"choices":[],"usage":{…}}) the gateway asked for
 * on the client's behalf is dropped when the client did not ask for it.
 *
 * The Responses API's events ({"type":"response.…"}) are read too: text from
 * response.output_text.delta (and refusal / tool-argument deltas), usage
 * {input_tokens, output_tokens} from the response of response.completed (or
 * .incomplete / .failed), which also end the stream as [DONE] does for chat;
 * an {"type":"error"} event is an error.
 */
#include "gateway.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void gw_sse_init(gw_sse *s, int strip_usage) {
    memset(s, 0, sizeof *s);
    sb_init(&s->pending);
    s->strip_usage = strip_usage;
}

void gw_sse_release(gw_sse *s) { sb_release(&s->pending); }

/*
 * Bytes of generated text in a chunk (its choices' deltas, or completion
 * text).  OUT: *pieces, how many of its deltas carried text; *max_index, the
 * highest choice index it names (unchanged when none).
 */
static int64_t chunk_chars(json_t *chunk, int64_t *pieces, int *max_index) {
    int64_t n = 0;
    *pieces = 0;
    const char *type = json_string_value(json_object_get(chunk, "type"));
    if (type && (!strcmp(type, "response.output_text.delta") ||
                 !strcmp(type, "response.refusal.delta") ||
                 !strcmp(type, "response.function_call_arguments.delta"))) {
        json_t *d = json_object_get(chunk, "delta"); /* a Responses API delta */
        n = json_is_string(d) ? (int64_t)json_string_length(d) : 0;
        *pieces = n > 0;
        return n;
    }
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(chunk, "choices"), i, ch) {
        int64_t c = gw_generated_chars(ch, json_object_get(ch, "delta"));
        json_int_t ix = json_integer_value(json_object_get(ch, "index"));
        if (ix > *max_index && ix < GW_MAX_CHOICES * GW_MAX_BEST_OF) *max_index = (int)ix;
        *pieces += c > 0;
        n = gw_sat_add(n, c);
    }
    return n;
}

void gw_sse_set_budget(gw_sse *s, int64_t budget, int responses) {
    s->budget = budget > 0 ? budget : 0;
    s->responses = responses;
}

/* Tokens for `chars` bytes of text in `pieces` pieces: each piece is a token at least. */
static int64_t tokens_of(int64_t chars, int64_t pieces) {
    int64_t t = gw_estimate_tokens(chars);
    return pieces > t ? pieces : t;
}

int64_t gw_sse_tokens(const gw_sse *s) { return tokens_of(s->completion_chars, s->pieces); }

/*
 * The tokens a stream is cut at: a token per piece at least, and no token
 * longer than GW_SSE_TOKEN_BYTES on average.  Looser than the estimate that
 * bills (4 bytes a token), so that an honest stream of long tokens (code,
 * runs of spaces) is never cut before its max_tokens.
 */
static int64_t cut_tokens(int64_t chars, int64_t pieces) {
    int64_t t = chars / GW_SSE_TOKEN_BYTES + (chars % GW_SSE_TOKEN_BYTES != 0);
    return pieces > t ? pieces : t;
}

/* The ids the finish chunks repeat: of the chunk (or the Responses event's response). */
static void remember_ids(gw_sse *s, json_t *j) {
    json_t *r = json_object_get(j, "response");
    json_t *o = json_is_object(r) ? r : j;
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *model = json_string_value(json_object_get(o, "model"));
    json_t *created = json_object_get(o, "created");
    if (!created) created = json_object_get(o, "created_at");
    if (id) snprintf(s->id, sizeof s->id, "%s", id);
    if (model) snprintf(s->model, sizeof s->model, "%s", model);
    if (json_is_integer(created)) s->created = json_integer_value(created);
}

/*
 * The clean finish of a stream whose budget is spent (heap; NULL when out of
 * memory): per choice a chunk with finish_reason "length" and [DONE]; for the
 * Responses API a response.incomplete event.
 */
static char *finish_events(const gw_sse *s, const char *object) {
    strbuf b = SB_INIT;
    json_t *j;
    char *t;
    if (s->responses) {
        j = json_pack("{s:s,s:{s:s,s:s,s:I,s:s,s:{s:s},s:s,s:[]}}", "type", "response.incomplete",
                      "response", "id", s->id, "object", "response", "created_at",
                      (json_int_t)s->created, "status", "incomplete", "incomplete_details",
                      "reason", "max_output_tokens", "model", s->model, "output");
        t = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (t) sb_addf(&b, "event: response.incomplete\ndata: %s\n\n", t);
        free(t);
    } else {
        int text = !strcmp(object, "text_completion");
        for (int i = 0; i <= s->max_index; i++) {
            j = text ? json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:s,s:n,s:s}]}", "id", s->id, "object",
                                 object, "created", (json_int_t)s->created, "model", s->model,
                                 "choices", "index", i, "text", "", "logprobs", "finish_reason",
                                 "length")
                     : json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:{},s:s}]}", "id", s->id, "object",
                                 object, "created", (json_int_t)s->created, "model", s->model,
                                 "choices", "index", i, "delta", "finish_reason", "length");
            t = j ? json_dumps(j, JSON_COMPACT) : NULL;
            json_decref(j);
            if (t) sb_addf(&b, "data: %s\n\n", t);
            free(t);
        }
        sb_adds(&b, "data: [DONE]\n\n");
    }
    if (!sb_ok(&b)) {
        sb_release(&b);
        return NULL;
    }
    return sb_detach(&b);
}

const char *gw_sse_data(const char *ev, size_t n, size_t *len) {
    const char *d = NULL;
    *len = 0;
    /* completions send exactly one data line an event; the last one wins */
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && ev[e] != '\n') e++;
        size_t ll = e - i;
        if (ll && ev[i + ll - 1] == '\r') ll--;
        if (ll >= 5 && !memcmp(ev + i, "data:", 5)) {
            d = ev + i + 5;
            *len = ll - 5;
            if (*len && *d == ' ') d++, (*len)--;
        }
        i = e + 1;
    }
    return d;
}

size_t gw_sse_event_end(const char *b, size_t len, size_t from, size_t *end) {
    for (size_t i = from; i + 1 < len; i++) {
        if (b[i] == '\n' && b[i + 1] == '\n') {
            *end = i;
            return i + 2;
        }
        if (i + 3 < len && b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') {
            *end = i;
            return i + 4;
        }
    }
    return 0;
}

/*
 * One event (without its blank line); returns 1 to pass it on as it is, 0
 * to drop it, 2 when `*rewritten` (heap) replaces its data, 3 when it is
 * replaced by the events in `*rewritten` (heap: the finish of a cut stream).
 */
static int event(gw_sse *s, const char *ev, size_t n, char **rewritten) {
    size_t dl = 0;
    const char *d = gw_sse_data(ev, n, &dl);
    if (!d) return 1;
    if (dl == 6 && !memcmp(d, "[DONE]", 6)) {
        s->saw_done = 1;
        return 1;
    }
    json_t *j = json_loadb(d, dl, 0, NULL);
    if (!j) return 1;
    s->events++;
    if (json_object_get(j, "error")) s->saw_error = 1;
    int64_t pieces = 0;
    int64_t chars = chunk_chars(j, &pieces, &s->max_index);
    remember_ids(s, j);
    if (s->budget &&
        cut_tokens(gw_sat_add(s->completion_chars, chars), s->pieces + pieces) > s->budget) {
        /* the budget is spent: this event is not passed on, the stream ends cleanly here */
        const char *obj = json_string_value(json_object_get(j, "object"));
        int text = obj && !strcmp(obj, "text_completion");
        json_decref(j);
        s->cut = 1;
        s->saw_done = 1;
        *rewritten = finish_events(s, text ? "text_completion" : "chat.completion.chunk");
        return *rewritten ? 3 : 0;
    }
    s->completion_chars = gw_sat_add(s->completion_chars, chars);
    s->pieces += pieces;
    json_t *u = json_object_get(j, "usage");
    const char *type = json_string_value(json_object_get(j, "type"));
    if (type && !strcmp(type, "error")) s->saw_error = 1;
    if (type && (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
                 !strcmp(type, "response.failed"))) {
        s->saw_done = 1; /* the Responses API's last event */
        u = json_object_get(json_object_get(j, "response"), "usage");
    }
    int pass = 1;
    if (json_is_object(u)) {
        s->has_usage = 1;
        json_t *p = json_object_get(u, "prompt_tokens"), *c = json_object_get(u, "completion_tokens");
        if (!p) p = json_object_get(u, "input_tokens");
        if (!c) c = json_object_get(u, "output_tokens");
        s->prompt_tokens = json_integer_value(p);
        s->completion_tokens = json_integer_value(c);
        json_t *ch = json_object_get(j, "choices");
        if (s->strip_usage && json_is_array(ch) && json_array_size(ch) == 0) pass = 0;
    } else if (u && s->strip_usage) {
        /* "usage":null only appears because the gateway asked for usage: take it out again */
        json_object_del(j, "usage");
        char *t = json_dumps(j, JSON_COMPACT);
        if (t) {
            *rewritten = t;
            pass = 2;
        }
    }
    json_decref(j);
    return pass;
}

void gw_sse_feed(gw_sse *s, const char *data, size_t n, strbuf *out) {
    if (s->cut) return; /* the stream was cut: nothing after its finish */
    sb_add(&s->pending, data, n);
    while (!s->cut) {
        const char *b = s->pending.buf;
        size_t len = s->pending.len, end = 0;
        /* the end of the first event; bytes already scanned hold none (no rescanning a
         * long event on every feed) */
        size_t cut = gw_sse_event_end(b, len, s->scanned, &end);
        if (!cut) {
            /* an end may still start in the last 3 bytes ("\r\n\r" + "\n") */
            s->scanned = len > 3 ? len - 3 : 0;
            break;
        }
        s->scanned = 0;
        char *rw = NULL;
        int pass = event(s, b, end, &rw);
        if (pass == 1) sb_add(out, b, cut);
        if (pass == 2) sb_addf(out, "data: %s\n\n", rw);
        if (pass == 3) sb_adds(out, rw);
        free(rw);
        memmove(s->pending.buf, b + cut, len - cut);
        sb_setlen(&s->pending, len - cut);
    }
}

void gw_sse_finish(gw_sse *s, strbuf *out) {
    char *rw = NULL;
    int pass = s->pending.len && !s->cut ? event(s, s->pending.buf, s->pending.len, &rw) : 0;
    if (pass == 1) sb_add(out, s->pending.buf, s->pending.len);
    if (pass == 2) sb_addf(out, "data: %s\n\n", rw);
    if (pass == 3) sb_adds(out, rw);
    free(rw);
    sb_setlen(&s->pending, 0);
    s->scanned = 0;
}
