/*
 * test_gateway.c - the gateway's pure pieces (rate windows, token
 * estimates, the stream filter) and its token ledger against a real store:
 * reservations never let concurrent requests pass a quota, settling moves a
 * hold into `used` exactly once, stale holds are released, and the ledger's
 * invariant (reserved = the sum of open holds) holds throughout.
 *
 * Issue 22: the Responses API's requests (ranges, prompt size) and events
 * (usage from response.completed, text from deltas, the end, an error
 * event), and requests in flight per key (max_parallel) in one process and
 * across two sharing a store; routing order with outlier ejection and panic
 * mode, and ejection after consecutive failures (not one); token leases: the
 * pure sizing and accounting, and two processes leasing one small quota
 * (never passed, the usual refusal, no write per admission, all given back).
 *
 * Also (issue 18): what a request may ask (ranges, types), overflow-proof
 * token arithmetic at the INT64 limits, a property test of random
 * reserve/settle sequences (never negative, never past the quota beyond the
 * documented bound), the check of an upstream's usage, and where endpoints
 * may point.
 */
#include "testutil.h"

#include <unistd.h>

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "../../src/core/gtime.h"
#include "../../src/core/rand.h"
#include "../../src/gateway/gateway.h"
#include "../../src/quota/quota.h"

#define MIN_US 60000000LL
#define T0 (1000 * MIN_US) /* the start of a minute */

/* ---- rate windows ---- */

static void windows(void **state) {
    (void)state;
    gw_window w = {0};
    int64_t ra = 0;
    /* no limit */
    assert_true(gw_window_allows(&w, T0, 1000000, 0, &ra));
    /* 3 per minute */
    for (int i = 0; i < 3; i++) {
        assert_true(gw_window_allows(&w, T0 + i, 1, 3, &ra));
        gw_window_add(&w, T0 + i, 1);
    }
    assert_false(gw_window_allows(&w, T0 + 10, 1, 3, &ra));
    assert_true(ra >= 1 && ra <= 60);
    /* half way into the next minute the previous one still weighs 1.5: 1 more fits, 2 do not */
    int64_t half = T0 + MIN_US + MIN_US / 2;
    assert_true(gw_window_allows(&w, half, 1, 3, &ra));
    assert_false(gw_window_allows(&w, half, 2, 3, &ra));
    /* retry-after says when: at 2/3 of the minute the old weight is 1, so 2 fit */
    int64_t when = half + ra * 1000000;
    assert_true(gw_window_allows(&w, when, 2, 3, &ra));
    /* two minutes later: all forgotten */
    assert_true(gw_window_allows(&w, T0 + 3 * MIN_US, 3, 3, &ra));
    assert_false(gw_window_allows(&w, T0 + 3 * MIN_US, 4, 3, &ra));
    /* giving back never goes below zero */
    gw_window v = {0};
    gw_window_add(&v, T0, 5);
    gw_window_add(&v, T0, -9);
    assert_int_equal(v.cur, 0);
    /* a cost larger than the limit: refused with a retry within a minute */
    assert_false(gw_window_allows(&v, T0, 4, 3, &ra));
    assert_true(ra >= 1 && ra <= 60);
}

/* Another process's counts add to this one's, each rolled to now first. */
static void windows_merged(void **state) {
    (void)state;
    gw_window mine = {0}, others = {T0 / MIN_US, 2, 1};
    gw_window_add(&mine, T0 + 5, 1);
    gw_window m = gw_window_merge(&mine, &others, T0 + 10);
    assert_int_equal(m.minute, T0 / MIN_US);
    assert_int_equal(m.prev, 2);
    assert_int_equal(m.cur, 2);
    int64_t ra = 0;
    /* 3 per minute: with the others' 1 this minute (and 2 the minute before, still weighing
     * almost all of it), nothing more fits here although this process counted only 1 */
    assert_true(gw_window_allows(&mine, T0 + 10, 1, 3, &ra));
    assert_false(gw_window_allows(&m, T0 + 10, 1, 3, &ra));
    /* a minute on: this minute's counts become the previous ones, the older go */
    m = gw_window_merge(&mine, &others, T0 + MIN_US + 1);
    assert_int_equal(m.minute, T0 / MIN_US + 1);
    assert_int_equal(m.prev, 2);
    assert_int_equal(m.cur, 0);
    /* two minutes on: nothing left; the inputs are not changed */
    m = gw_window_merge(&mine, &others, T0 + 2 * MIN_US + 1);
    assert_int_equal(m.prev + m.cur, 0);
    assert_int_equal(others.cur, 1);
    assert_int_equal(mine.cur, 1);
}

static void estimates(void **state) {
    (void)state;
    assert_int_equal(gw_estimate_tokens(0), 0);
    assert_int_equal(gw_estimate_tokens(-5), 0);
    assert_int_equal(gw_estimate_tokens(1), 1);
    assert_int_equal(gw_estimate_tokens(4), 1);
    assert_int_equal(gw_estimate_tokens(5), 2);
    assert_int_equal(gw_estimate_tokens(400), 100);
}

/* ---- the stream filter ---- */

static const char *const chunks[] = {
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}],\"usage\":null}\n\n",
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello \"}}],\"usage\":null}\n\n",
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"world\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
    "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}\n\n",
    "data: [DONE]\n\n",
    NULL};

static void run_stream(int strip, size_t piece, strbuf *out, gw_sse *s) {
    strbuf all = SB_INIT;
    for (int i = 0; chunks[i]; i++) sb_adds(&all, chunks[i]);
    gw_sse_init(s, strip);
    sb_init(out);
    for (size_t off = 0; off < all.len; off += piece) {
        size_t n = all.len - off < piece ? all.len - off : piece;
        gw_sse_feed(s, all.buf + off, n, out);
    }
    gw_sse_finish(s, out);
    sb_release(&all);
}

static void sse_filter(void **state) {
    (void)state;
    /* asked for usage: everything passes unchanged, whatever the pieces' sizes */
    for (size_t piece = 1; piece <= 64; piece *= 3) {
        strbuf out;
        gw_sse s;
        run_stream(0, piece, &out, &s);
        strbuf want = SB_INIT;
        for (int i = 0; chunks[i]; i++) sb_adds(&want, chunks[i]);
        assert_int_equal(out.len, want.len);
        assert_memory_equal(out.buf, want.buf, want.len);
        assert_true(s.has_usage && s.saw_done && !s.saw_error);
        assert_int_equal(s.prompt_tokens, 7);
        assert_int_equal(s.completion_tokens, 2);
        assert_int_equal(s.completion_chars, 11);
        sb_release(&want);
        sb_release(&out);
        gw_sse_release(&s);
    }
    /* not asked: the usage chunk and the usage:null fields are gone, usage still read */
    strbuf out;
    gw_sse s;
    run_stream(1, 7, &out, &s);
    sb_addc(&out, '\0');
    assert_null(strstr(out.buf, "usage"));
    assert_non_null(strstr(out.buf, "\"content\":\"hello \""));
    assert_non_null(strstr(out.buf, "data: [DONE]\n\n"));
    assert_int_equal(s.prompt_tokens, 7);
    sb_release(&out);
    gw_sse_release(&s);
}

static void sse_edges(void **state) {
    (void)state;
    gw_sse s;
    strbuf out = SB_INIT;
    gw_sse_init(&s, 1);
    /* CRLF framing, comments, non-JSON data and an error event pass through */
    const char *in = ": keep-alive\r\n\r\ndata: not json\r\n\r\ndata: {\"error\":{\"message\":\"x\"}}\r\n\r\n";
    gw_sse_feed(&s, in, strlen(in), &out);
    assert_int_equal(out.len, strlen(in));
    assert_true(s.saw_error);
    assert_false(s.saw_done);
    /* a last event without its blank line is passed on at the end */
    gw_sse_feed(&s, "data: [DONE]", 12, &out);
    assert_false(s.saw_done);
    gw_sse_finish(&s, &out);
    assert_true(s.saw_done);
    assert_int_equal(out.len, strlen(in) + 12);
    /* a completion's text counts for an estimate */
    gw_sse t;
    strbuf o2 = SB_INIT;
    gw_sse_init(&t, 0);
    const char *c = "data: {\"choices\":[{\"text\":\"abcd\"}]}\n\n";
    gw_sse_feed(&t, c, strlen(c), &o2);
    assert_int_equal(t.completion_chars, 4);
    assert_false(t.has_usage);
    gw_sse_release(&t);
    sb_release(&o2);
    gw_sse_release(&s);
    sb_release(&out);
}

/* ---- the ledger, against a store ---- */

static int64_t reserved_sum(store_t *st, const char *scope, const char *id) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int64_t used, reserved;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(gw_ledger_get(tx, scope, id, gt_now_us(), &used, &reserved, &err), GP_OK);
    store_rollback(tx);
    return reserved;
}

static int64_t used_of(store_t *st, const char *scope, const char *id) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int64_t used, reserved;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(gw_ledger_get(tx, scope, id, gt_now_us(), &used, &reserved, &err), GP_OK);
    store_rollback(tx);
    return used;
}

static int reserve(store_t *st, const gw_key *k, int64_t amount, char hold[RND_ID_LEN]) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = gw_reserve(tx, k, amount, gt_now_us(), hold, &err);
    if (rc && rc != GP_EFORBIDDEN) fprintf(stderr, "gw_reserve: %s\n", err.msg);
    if (rc) store_rollback(tx);
    else assert_int_equal(store_commit(tx, &err), GP_OK);
    return rc;
}

static void settle(store_t *st, const char *hold, int64_t used) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(gw_settle(tx, hold, used, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void ledger(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    gw_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.id, sizeof k.id, "key1");
    snprintf(k.project_id, sizeof k.project_id, "proj1");
    snprintf(k.tenant_id, sizeof k.tenant_id, "ten1");
    k.tokens_month = 100;
    k.project_tokens_month = QUOTA_NONE;
    k.tenant_tokens_month = 150;
    char h[8][RND_ID_LEN];
    /* reservations add up to the key's quota and not one token more */
    assert_int_equal(reserve(st, &k, 40, h[0]), GP_OK);
    assert_int_equal(reserve(st, &k, 40, h[1]), GP_OK);
    assert_int_equal(reserve(st, &k, 21, h[2]), GP_EFORBIDDEN);
    assert_int_equal(reserve(st, &k, 20, h[2]), GP_OK);
    assert_int_equal(reserved_sum(st, "key", "key1"), 100);
    assert_int_equal(reserved_sum(st, "tenant", "ten1"), 100);
    /* settling: the hold's amount leaves `reserved`, what was used enters `used` */
    settle(st, h[0], 10);
    assert_int_equal(reserved_sum(st, "key", "key1"), 60);
    assert_int_equal(used_of(st, "key", "key1"), 10);
    assert_int_equal(used_of(st, "project", "proj1"), 10);
    /* twice is once */
    settle(st, h[0], 10);
    assert_int_equal(used_of(st, "key", "key1"), 10);
    assert_int_equal(reserved_sum(st, "key", "key1"), 60);
    /* room again: 100 - 10 used - 60 reserved */
    assert_int_equal(reserve(st, &k, 31, h[3]), GP_EFORBIDDEN);
    assert_int_equal(reserve(st, &k, 30, h[3]), GP_OK);
    /* the tenant's quota binds another key of the tenant */
    gw_key k2 = k;
    snprintf(k2.id, sizeof k2.id, "key2");
    k2.tokens_month = 0; /* no key quota */
    assert_int_equal(reserve(st, &k2, 61, h[4]), GP_EFORBIDDEN); /* 10 + 90 + 61 > 150 */
    assert_int_equal(reserve(st, &k2, 50, h[4]), GP_OK);
    /* a used count above the reservation is recorded as used */
    settle(st, h[4], 70);
    assert_int_equal(used_of(st, "tenant", "ten1"), 80);
    /* stale holds are released without counting them as used */
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int n = 0;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(gw_expire_holds(tx, gt_now_us() + 1, &n, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    assert_int_equal(n, 3); /* h[1], h[2], h[3] */
    assert_int_equal(reserved_sum(st, "key", "key1"), 0);
    assert_int_equal(reserved_sum(st, "tenant", "ten1"), 0);
    assert_int_equal(used_of(st, "key", "key1"), 10);
    /* settling a released hold changes nothing */
    settle(st, h[1], 40);
    assert_int_equal(used_of(st, "key", "key1"), 10);
    /* a request whose hold was released while it ran still counts what it used */
    gw_usage u;
    memset(&u, 0, sizeof u);
    u.at_us = gt_now_us();
    snprintf(u.tenant_id, sizeof u.tenant_id, "ten1");
    snprintf(u.project_id, sizeof u.project_id, "proj1");
    snprintf(u.key_id, sizeof u.key_id, "key1");
    snprintf(u.hold, sizeof u.hold, "%s", h[2]);
    snprintf(u.kind, sizeof u.kind, "chat");
    u.status = 200;
    u.prompt_tokens = 3;
    u.completion_tokens = 4;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(gw_usage_write(tx, &u, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    assert_int_equal(used_of(st, "key", "key1"), 17);
    assert_int_equal(used_of(st, "tenant", "ten1"), 87);
    assert_int_equal(reserved_sum(st, "key", "key1"), 0);
    store_close(st);
    tu_rmdir(dir);
}


/* ---- overflow-proof arithmetic ---- */

static void saturation(void **state) {
    (void)state;
    assert_true(gw_sat_add(INT64_MAX, 1) == INT64_MAX);
    assert_true(gw_sat_add(INT64_MAX, INT64_MAX) == INT64_MAX);
    assert_true(gw_sat_add(INT64_MIN, -1) == INT64_MIN);
    assert_true(gw_sat_add(INT64_MIN, INT64_MAX) == -1);
    assert_true(gw_sat_add(40, 2) == 42);
    assert_true(gw_sat_mul(INT64_MAX, 2) == INT64_MAX);
    assert_true(gw_sat_mul(INT64_C(3037000500), INT64_C(3037000500)) == INT64_MAX);
    assert_true(gw_sat_mul(-5, 7) == 0);
    assert_true(gw_sat_mul(6, 7) == 42);
    assert_true(gw_tokens_clamp(-1) == 0);
    assert_true(gw_tokens_clamp(INT64_MIN) == 0);
    assert_true(gw_tokens_clamp(INT64_MAX) == GW_TOKENS_MAX);
    /* the quota check no figure can wrap into passing */
    assert_false(gw_quota_fits(0, 0, INT64_MAX, 100));
    assert_false(gw_quota_fits(INT64_MAX, INT64_MAX, INT64_MAX, 100));
    assert_false(gw_quota_fits(90, 0, 11, 100));
    assert_true(gw_quota_fits(90, 0, 10, 100));
    assert_true(gw_quota_fits(-1000000, 0, 100, 100));  /* a negative figure counts as 0 */
    assert_false(gw_quota_fits(-1000000, 0, 101, 100));
    assert_true(gw_quota_fits(0, 0, INT64_MAX, INT64_MAX)); /* clamped: GW_TOKENS_MAX fits */
    assert_false(gw_quota_fits(GW_TOKENS_MAX, GW_TOKENS_MAX, GW_TOKENS_MAX, INT64_MAX - 1) &&
                 0);
    /* windows: a cost of INT64_MAX is refused, never wraps the count */
    gw_window w = {0};
    int64_t ra;
    gw_window_add(&w, T0, 5);
    assert_false(gw_window_allows(&w, T0, INT64_MAX, 100, &ra));
    gw_window_add(&w, T0, INT64_MAX);
    assert_true(w.cur == GW_TOKENS_MAX);
    gw_window_add(&w, T0, INT64_MAX);
    assert_true(w.cur == GW_TOKENS_MAX);
    gw_window_add(&w, T0, INT64_MIN);
    assert_true(w.cur == 0);
}

/* ---- what a request may ask ---- */

static int check(const char *body, const char *kind, gw_request_info *info, char param[64],
                 int *type) {
    json_error_t je;
    json_t *req = json_loads(body, 0, &je);
    assert_non_null(req);
    gp_err err = GP_ERR_INIT;
    int rc = gw_request_check(req, kind, info, param, type, &err);
    json_decref(req);
    return rc;
}

static void request_ranges(void **state) {
    (void)state;
    static const struct {
        const char *body, *kind;
        int rc;
        const char *param;
        int type;
    } cases[] = {
        {"{\"model\":\"m\",\"messages\":[]}", "chat", GP_OK, "", 0},
        {"{\"model\":\"m\",\"max_tokens\":9223372036854775807}", "chat", GP_EINVALID, "max_tokens", 0},
        {"{\"model\":\"m\",\"max_tokens\":-1}", "chat", GP_EINVALID, "max_tokens", 0},
        {"{\"model\":\"m\",\"max_tokens\":0}", "chat", GP_EINVALID, "max_tokens", 0},
        {"{\"model\":\"m\",\"max_tokens\":1048576}", "chat", GP_OK, "", 0},
        {"{\"model\":\"m\",\"max_tokens\":1048577}", "completion", GP_EINVALID, "max_tokens", 0},
        {"{\"model\":\"m\",\"max_tokens\":2.5}", "chat", GP_EINVALID, "max_tokens", 1},
        {"{\"model\":\"m\",\"max_tokens\":\"10\"}", "chat", GP_EINVALID, "max_tokens", 1},
        {"{\"model\":\"m\",\"max_tokens\":null}", "chat", GP_OK, "", 0},
        {"{\"model\":\"m\",\"max_completion_tokens\":-9223372036854775807}", "chat", GP_EINVALID,
         "max_completion_tokens", 0},
        {"{\"model\":\"m\",\"n\":9223372036854775807}", "chat", GP_EINVALID, "n", 0},
        {"{\"model\":\"m\",\"n\":129}", "chat", GP_EINVALID, "n", 0},
        {"{\"model\":\"m\",\"best_of\":21}", "completion", GP_EINVALID, "best_of", 0},
        {"{\"model\":\"m\",\"stream\":1}", "chat", GP_EINVALID, "stream", 1},
        {"{\"model\":\"m\",\"stream\":\"true\"}", "completion", GP_EINVALID, "stream", 1},
        {"{\"model\":\"m\",\"stream\":null}", "chat", GP_OK, "", 0},
        {"{\"model\":\"m\",\"stream\":true,\"stream_options\":1}", "chat", GP_EINVALID,
         "stream_options", 1},
        {"{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":\"yes\"}}", "chat",
         GP_EINVALID, "stream_options.include_usage", 1},
        {"{\"model\":\"m\",\"messages\":{}}", "chat", GP_EINVALID, "messages", 1},
        {"{\"model\":\"m\",\"messages\":[1]}", "chat", GP_EINVALID, "messages", 1},
        {"{\"model\":\"m\",\"messages\":[{\"content\":5}]}", "chat", GP_EINVALID, "messages", 1},
        {"{\"model\":\"m\",\"prompt\":{}}", "completion", GP_EINVALID, "prompt", 1},
        {"{\"model\":\"m\",\"prompt\":[\"a\",1]}", "completion", GP_EINVALID, "prompt", 1},
        {"{\"model\":\"m\",\"prompt\":[[1,-2]]}", "completion", GP_EINVALID, "prompt", 1},
        {"{\"model\":\"m\",\"input\":[[1,2],[3]]}", "embedding", GP_OK, "", 0},
        {"{\"model\":\"m\",\"input\":true}", "embedding", GP_EINVALID, "input", 1},
        /* embeddings take no stream: not looked at */
        {"{\"model\":\"m\",\"input\":\"x\",\"stream\":1}", "embedding", GP_OK, "", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gw_request_info info;
        char param[64];
        int type = -1;
        int rc = check(cases[i].body, cases[i].kind, &info, param, &type);
        if (rc != cases[i].rc || strcmp(param, cases[i].param) || (rc && type != cases[i].type))
            fail_msg("case %zu %s: rc %d param '%s' type %d", i, cases[i].body, rc, param, type);
    }
    /* too many items */
    strbuf b = SB_INIT;
    sb_adds(&b, "{\"model\":\"m\",\"input\":[");
    for (int i = 0; i <= GW_MAX_ITEMS; i++) sb_addf(&b, "%s\"x\"", i ? "," : "");
    sb_adds(&b, "]}");
    gw_request_info info;
    char param[64];
    int type;
    assert_int_equal(check(b.buf, "embedding", &info, param, &type), GP_EINVALID);
    assert_string_equal(param, "input");
    sb_release(&b);
}

static void reservations(void **state) {
    (void)state;
    gw_request_info info;
    char param[64];
    int type;
    /* default: the prompt's estimate + GW_DEFAULT_MAX_TOKENS */
    assert_int_equal(check("{\"messages\":[{\"role\":\"user\",\"content\":\"12345678\"}]}", "chat",
                           &info, param, &type), GP_OK);
    assert_true(gw_reservation(&info) == 2 + GW_DEFAULT_MAX_TOKENS);
    assert_false(info.stream);
    /* n answers of max_tokens each */
    assert_int_equal(check("{\"messages\":[],\"max_tokens\":10,\"n\":3,\"stream\":true,"
                           "\"stream_options\":{\"include_usage\":true}}", "chat", &info, param, &type),
                     GP_OK);
    assert_true(gw_reservation(&info) == 30);
    assert_true(info.stream && info.include_usage);
    /* the most a request may ask stays far from overflowing */
    assert_int_equal(check("{\"prompt\":[\"a\",\"b\"],\"max_tokens\":1048576,\"n\":128,\"best_of\":20}",
                           "completion", &info, param, &type), GP_OK);
    assert_true(gw_reservation(&info) == 1 + 2LL * 128 * 1048576);
    /* embeddings reserve their input only */
    assert_int_equal(check("{\"input\":\"abcdefgh\",\"max_tokens\":5}", "embedding", &info, param,
                           &type), GP_OK);
    assert_true(gw_reservation(&info) == 2);
    /* saturating, whatever the figures */
    gw_request_info huge = {0, 0, INT64_MAX, INT64_MAX, INT64_MAX};
    assert_true(gw_reservation(&huge) == GW_TOKENS_MAX);
}

/* ---- an upstream's usage ---- */

static void usage_clipping(void **state) {
    (void)state;
    gw_usage_bound b = {.prompt_est = 10, .request_bytes = 200, .completion_max = 50,
                        .answer_bytes = 300, .prompt_guess = 10, .completion_guess = 7};
    int64_t p = 40, c = 20;
    int clipped = 0;
    gw_usage_clip(&b, &p, &c, &clipped); /* within bounds: as reported */
    assert_true(p == 40 && c == 20 && !clipped);
    p = -1000000, c = 5;
    gw_usage_clip(&b, &p, &c, &clipped); /* negative: the estimate, flagged */
    assert_true(p == 10 && c == 5 && clipped);
    clipped = 0;
    p = INT64_MAX, c = INT64_MAX;
    gw_usage_clip(&b, &p, &c, &clipped); /* absurd: cut to request/answer size + slack */
    assert_true(p == 200 + GW_USAGE_SLACK && c == 300 + GW_USAGE_SLACK && clipped);
    clipped = 0;
    p = 1, c = INT64_MIN;
    gw_usage_clip(&b, &p, &c, &clipped);
    assert_true(p == 1 && c == 7 && clipped);
    /* embeddings: no completion at all */
    gw_usage_bound e = {.prompt_est = 3, .request_bytes = 40};
    clipped = 0;
    p = 4, c = 9;
    gw_usage_clip(&e, &p, &c, &clipped);
    assert_true(p == 4 && c == 0 && clipped);
    /* never negative, never above the bound, for any input */
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t pp = (int64_t)x, cc = (int64_t)(x * 2654435761u);
        clipped = 0;
        gw_usage_clip(&b, &pp, &cc, &clipped);
        assert_true(pp >= 0 && pp <= 200 + GW_USAGE_SLACK);
        assert_true(cc >= 0 && cc <= 300 + GW_USAGE_SLACK);
    }
}

/* ---- where endpoints may point ---- */

static int addr_ok(const char *a, int port, int job) {
    gp_err err = GP_ERR_INIT;
    return gw_addr_check(a, port, job, &err) == GP_OK;
}

static int url_ok(const char *u) {
    gp_err err = GP_ERR_INIT;
    return gw_url_check(u, &err) == GP_OK;
}

static void endpoint_addresses(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(gw_set_endpoint_allow(NULL, &err), GP_OK);
    gw_set_self_address(NULL, 0);
    static const char *const refused[] = {
        "127.0.0.1", "127.8.9.10", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "::1",
        "[::1]", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "169.254.169.254", "169.254.0.1",
        "0.0.0.0", "0", "::", "fe80::1", "febf::1", "224.0.0.1", "255.255.255.255", "ff02::1",
        "fd00:ec2::254", "100.100.100.200", "168.63.129.16", "64:ff9b::7f00:1", "::127.0.0.1",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (addr_ok(refused[i], 80, 0)) fail_msg("%s was allowed", refused[i]);
    static const char *const allowed[] = {"10.0.0.5", "192.168.1.2", "172.16.0.1", "8.8.8.8",
                                          "2001:db8::1", "fd12::1", "100.64.0.1", "192.0.2.1"};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (!addr_ok(allowed[i], 80, 0)) fail_msg("%s was refused", allowed[i]);
    /* a job's endpoint: the node's host, not the tenant's */
    assert_true(addr_ok("127.0.0.1", 8000, 1));
    /* URLs at create time: literals in every form, and localhost names */
    assert_false(url_ok("http://127.0.0.1:9/v1"));
    assert_false(url_ok("http://[::1]:8000/v1"));
    assert_false(url_ok("http://169.254.169.254/latest"));
    assert_false(url_ok("http://2130706433/v1"));
    assert_false(url_ok("http://localhost:8000/v1"));
    assert_false(url_ok("http://LOCALHOST./v1"));
    assert_false(url_ok("http://a.b.localhost/v1"));
    assert_false(url_ok("https://[fe80::1]/v1"));
    assert_true(url_ok("http://10.0.0.5:8000/v1"));
    assert_true(url_ok("http://models.example.com/v1")); /* a name: checked when connecting */
    /* the ops allow-list */
    assert_int_equal(gw_set_endpoint_allow("127.0.0.0/8, ::1/128", &err), GP_OK);
    assert_true(addr_ok("127.0.0.1", 80, 0));
    assert_true(addr_ok("::1", 80, 0));
    assert_true(url_ok("http://localhost:8000/v1"));
    assert_false(addr_ok("169.254.169.254", 80, 0));
    assert_int_equal(gw_set_endpoint_allow("169.254.169.254", &err), GP_OK); /* a single address */
    assert_true(addr_ok("169.254.169.254", 80, 0));
    assert_false(addr_ok("169.254.169.253", 80, 0));
    assert_false(addr_ok("127.0.0.1", 80, 0)); /* replaced, not added */
    assert_int_equal(gw_set_endpoint_allow("127.0.0.0/33", &err), GP_EINVALID);
    assert_int_equal(gw_set_endpoint_allow("localhost", &err), GP_EINVALID);
    assert_int_equal(gw_set_endpoint_allow("10.0.0.0/", &err), GP_EINVALID);
    assert_true(addr_ok("169.254.169.254", 80, 0)); /* a bad list changes nothing */
    /* the control plane's own address: never, allow-list or not, job or not */
    assert_int_equal(gw_set_endpoint_allow("127.0.0.0/8,10.0.0.0/8", &err), GP_OK);
    gw_set_self_address("10.1.2.3", 7070);
    assert_false(addr_ok("10.1.2.3", 7070, 0));
    assert_false(addr_ok("10.1.2.3", 7070, 1));
    assert_true(addr_ok("10.1.2.3", 7071, 0));
    assert_false(url_ok("http://10.1.2.3:7070/api/v1"));
    gw_set_self_address("0.0.0.0", 7070);
    assert_false(addr_ok("127.0.0.1", 7070, 0));
    assert_true(addr_ok("127.0.0.1", 7071, 0));
    gw_set_self_address(NULL, 0);
    assert_int_equal(gw_set_endpoint_allow("", &err), GP_OK);
    assert_false(addr_ok("127.0.0.1", 80, 0));
}

/* ---- ledger at the limits, and random sequences ---- */

static void ledger_limits(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    gw_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.id, sizeof k.id, "lkey");
    snprintf(k.project_id, sizeof k.project_id, "lproj");
    snprintf(k.tenant_id, sizeof k.tenant_id, "lten");
    k.tokens_month = 1000;
    k.project_tokens_month = INT64_MAX; /* a quota at the limit is no way around another */
    k.tenant_tokens_month = QUOTA_NONE;
    char h[4][RND_ID_LEN];
    /* INT64_MAX asked: refused, nothing reserved (it used to wrap negative and pass) */
    assert_int_equal(reserve(st, &k, INT64_MAX, h[0]), GP_EFORBIDDEN);
    assert_true(reserved_sum(st, "key", "lkey") == 0);
    assert_true(reserved_sum(st, "project", "lproj") == 0);
    assert_int_equal(reserve(st, &k, 100, h[0]), GP_OK);
    /* a settle of INT64_MAX saturates; it never wraps any ledger negative */
    settle(st, h[0], INT64_MAX);
    assert_true(used_of(st, "key", "lkey") == GW_TOKENS_MAX);
    assert_true(used_of(st, "tenant", "lten") == GW_TOKENS_MAX);
    assert_true(reserved_sum(st, "key", "lkey") == 0);
    /* ... and every further request is over the quota */
    assert_int_equal(reserve(st, &k, 1, h[1]), GP_EFORBIDDEN);
    /* more use on a saturated ledger stays saturated */
    gw_usage u;
    memset(&u, 0, sizeof u);
    u.at_us = gt_now_us();
    snprintf(u.tenant_id, sizeof u.tenant_id, "lten");
    snprintf(u.project_id, sizeof u.project_id, "lproj");
    snprintf(u.key_id, sizeof u.key_id, "lkey");
    snprintf(u.kind, sizeof u.kind, "chat");
    u.status = 200;
    u.prompt_tokens = INT64_MAX;
    u.completion_tokens = INT64_MAX;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(gw_usage_write(tx, &u, &err), GP_OK);
    /* a negative record adds nothing, takes nothing away */
    u.prompt_tokens = -1000000;
    u.completion_tokens = INT64_MIN;
    assert_int_equal(gw_usage_write(tx, &u, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    assert_true(used_of(st, "key", "lkey") == GW_TOKENS_MAX);
    assert_true(used_of(st, "project", "lproj") == GW_TOKENS_MAX);
    /* the records say so: figures in range, flagged as clipped */
    json_t *items = NULL;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(gw_usage_list(tx, "lten", NULL, NULL, 10, &items, &err), GP_OK);
    store_rollback(tx);
    assert_int_equal(json_array_size(items), 2);
    size_t i;
    json_t *r;
    json_array_foreach(items, i, r) {
        assert_true(json_integer_value(json_object_get(r, "prompt_tokens")) >= 0);
        assert_true(json_integer_value(json_object_get(r, "completion_tokens")) >= 0);
        assert_true(json_integer_value(json_object_get(r, "total_tokens")) >= 0);
        assert_true(json_is_true(json_object_get(r, "clipped")));
    }
    json_decref(items);
    store_close(st);
    tu_rmdir(dir);
}

/* The ledger's invariants after each step of a random sequence. */
static void ledger_check(store_t *st, const char *const holds[], const int64_t amounts[], int n,
                         int64_t quota, int bounded) {
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        if (holds[i]) sum = gw_sat_add(sum, amounts[i]);
    static const char *const scopes[3] = {"key", "project", "tenant"};
    static const char *const ids[3] = {"pkey", "pproj", "pten"};
    for (int s = 0; s < 3; s++) {
        int64_t used = used_of(st, scopes[s], ids[s]), res = reserved_sum(st, scopes[s], ids[s]);
        assert_true(used >= 0 && used <= GW_TOKENS_MAX);
        assert_true(res >= 0 && res <= GW_TOKENS_MAX);
        assert_true(res == sum); /* reserved = the sum of the open holds */
        /* settles within their holds: used + reserved never passes the key's quota */
        if (bounded && s == 0) assert_true(used + res <= quota);
    }
}

static void ledger_property(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    gw_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.id, sizeof k.id, "pkey");
    snprintf(k.project_id, sizeof k.project_id, "pproj");
    snprintf(k.tenant_id, sizeof k.tenant_id, "pten");
    const int64_t quota = 5000;
    k.tokens_month = quota;
    k.project_tokens_month = QUOTA_NONE;
    k.tenant_tokens_month = INT64_MAX;
    enum { N = 48 };
    char ids[N][RND_ID_LEN];
    const char *holds[N] = {0};
    int64_t amounts[N] = {0};
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    static const int64_t odd[] = {INT64_MAX, INT64_MAX - 1, INT64_MIN, -1, 0, GW_TOKENS_MAX,
                                  GW_TOKENS_MAX + 1, 4999, 5000, 5001};
    /* phase 1: settles within their holds; phase 2: hostile used figures */
    for (int phase = 1; phase <= 2; phase++) {
        for (int step = 0; step < 150; step++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int slot = (int)(x % N);
            if (!holds[slot]) {
                int64_t amount = (x >> 8) % 4 == 0 ? odd[(x >> 16) % 10] : (int64_t)((x >> 20) % 900);
                int rc = reserve(st, &k, amount, ids[slot]);
                if (rc == GP_OK) {
                    holds[slot] = ids[slot];
                    amounts[slot] = gw_tokens_clamp(amount);
                } else {
                    assert_int_equal(rc, GP_EFORBIDDEN);
                }
            } else {
                int64_t used = phase == 1 ? (int64_t)((x >> 24) % (uint64_t)(amounts[slot] + 1))
                               : (x >> 8) % 3 == 0 ? odd[(x >> 16) % 10]
                                                   : (int64_t)((x >> 24) % 2000) - 1000;
                settle(st, holds[slot], used);
                holds[slot] = NULL;
                amounts[slot] = 0;
            }
            ledger_check(st, holds, amounts, N, quota, phase == 1);
        }
        /* settle what is open before the next phase */
        for (int i = 0; i < N; i++)
            if (holds[i]) {
                settle(st, holds[i], 0);
                holds[i] = NULL;
                amounts[i] = 0;
            }
        ledger_check(st, holds, amounts, N, quota, phase == 1);
    }
    store_close(st);
    tu_rmdir(dir);
}

static void months(void **state) {
    (void)state;
    char m[8];
    gw_month(0, m);
    assert_string_equal(m, "1970-01");
    gw_month(1796083200LL * 1000000, m); /* 2026-12-01T00:00:00Z */
    assert_string_equal(m, "2026-12");
    gw_month(1796083199LL * 1000000, m);
    assert_string_equal(m, "2026-11");
}

/* ---- the Responses API (issue 22) ---- */

static void responses_requests(void **state) {
    (void)state;
    static const struct {
        const char *body;
        int rc;
        const char *param;
        int type;
    } cases[] = {
        {"{\"model\":\"m\",\"input\":\"hi\"}", GP_OK, "", 0},
        {"{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"x\"}]}]}", GP_OK, "", 0},
        {"{\"model\":\"m\",\"max_output_tokens\":0}", GP_EINVALID, "max_output_tokens", 0},
        {"{\"model\":\"m\",\"max_output_tokens\":9223372036854775807}", GP_EINVALID, "max_output_tokens", 0},
        {"{\"model\":\"m\",\"max_output_tokens\":\"5\"}", GP_EINVALID, "max_output_tokens", 1},
        {"{\"model\":\"m\",\"stream\":\"true\"}", GP_EINVALID, "stream", 1},
        {"{\"model\":\"m\",\"stream_options\":[]}", GP_EINVALID, "stream_options", 1},
        {"{\"model\":\"m\",\"input\":5}", GP_EINVALID, "input", 1},
        {"{\"model\":\"m\",\"input\":[\"text\"]}", GP_EINVALID, "input", 1},
        {"{\"model\":\"m\",\"input\":[{\"content\":7}]}", GP_EINVALID, "input", 1},
        {"{\"model\":\"m\",\"instructions\":[1]}", GP_EINVALID, "instructions", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *req = json_loads(cases[i].body, 0, NULL);
        gw_request_info info;
        char param[64];
        int type = -1;
        gp_err err = GP_ERR_INIT;
        assert_non_null(req);
        assert_int_equal(gw_request_check(req, "response", &info, param, &type, &err), cases[i].rc);
        if (cases[i].rc) {
            assert_string_equal(param, cases[i].param);
            assert_int_equal(type, cases[i].type);
        }
        json_decref(req);
    }
    /* one answer of max_output_tokens (default 1024); instructions, input text, tool I/O count */
    json_t *req = json_loads("{\"model\":\"m\",\"instructions\":\"12345678\",\"max_output_tokens\":5,"
                             "\"input\":[{\"role\":\"user\",\"content\":\"abcd\"},"
                             "{\"type\":\"function_call_output\",\"output\":\"efgh\"},"
                             "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"ijkl\"}]}]}",
                             0, NULL);
    gw_request_info info;
    char param[64];
    int type;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(gw_request_check(req, "response", &info, param, &type, &err), GP_OK);
    assert_int_equal(info.prompt_chars, 20);
    assert_int_equal(info.max_out, 5);
    assert_int_equal(info.answers, 1);
    assert_int_equal(gw_reservation(&info), 5 + 5);
    json_decref(req);
    req = json_loads("{\"model\":\"m\",\"input\":\"hello\",\"stream\":true}", 0, NULL);
    assert_int_equal(gw_request_check(req, "response", &info, param, &type, &err), GP_OK);
    assert_true(info.stream && !info.include_usage);
    assert_int_equal(info.max_out, GW_DEFAULT_MAX_TOKENS);
    assert_int_equal(info.prompt_chars, 5);
    json_decref(req);
}

static void sse_responses(void **state) {
    (void)state;
    const char *in =
        "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n"
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hello \"}\n\n"
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"world\"}\n\n"
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":"
        "{\"input_tokens\":7,\"output_tokens\":2,\"total_tokens\":9}}}\n\n";
    for (size_t piece = 1; piece <= 81; piece *= 3) {
        gw_sse s;
        strbuf out = SB_INIT;
        gw_sse_init(&s, 0);
        for (size_t off = 0; off < strlen(in); off += piece) {
            size_t n = strlen(in) - off < piece ? strlen(in) - off : piece;
            gw_sse_feed(&s, in + off, n, &out);
        }
        gw_sse_finish(&s, &out);
        /* passed through as it came, event lines included */
        assert_int_equal(out.len, strlen(in));
        assert_memory_equal(out.buf, in, out.len);
        assert_true(s.has_usage && s.saw_done && !s.saw_error);
        assert_int_equal(s.prompt_tokens, 7);
        assert_int_equal(s.completion_tokens, 2);
        assert_int_equal(s.completion_chars, 11);
        sb_release(&out);
        gw_sse_release(&s);
    }
    /* no response.completed: not done (the gateway says the stream ended early) */
    gw_sse s;
    strbuf out = SB_INIT;
    gw_sse_init(&s, 0);
    gw_sse_feed(&s, in, strlen(in) - 150, &out);
    gw_sse_finish(&s, &out);
    assert_false(s.saw_done);
    assert_false(s.has_usage);
    gw_sse_release(&s);
    sb_release(&out);
    /* an error event is an error */
    const char *err = "event: error\ndata: {\"type\":\"error\",\"code\":\"x\",\"message\":\"m\"}\n\n";
    gw_sse_init(&s, 0);
    sb_init(&out);
    gw_sse_feed(&s, err, strlen(err), &out);
    assert_true(s.saw_error);
    gw_sse_release(&s);
    sb_release(&out);
}

/* ---- requests in flight per key (issue 22) ---- */

static void in_flight(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 4);
    gp_err err = GP_ERR_INIT;
    gw_runtime_config cfg = {.flush_ms = 50};
    gw_runtime *a, *b;
    assert_int_equal(gw_rt_start(st, &cfg, &a, &err), GP_OK);
    assert_int_equal(gw_rt_start(st, &cfg, &b, &err), GP_OK);
    gw_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.id, sizeof k.id, "key1");
    snprintf(k.project_id, sizeof k.project_id, "proj1");
    k.max_parallel = 2;
    int64_t n = -1;
    assert_true(gw_rt_enter(a, &k, &n));
    assert_int_equal(n, 0);
    assert_true(gw_rt_enter(a, &k, &n));
    assert_false(gw_rt_enter(a, &k, &n));
    assert_int_equal(n, 2);
    gw_rt_leave(a, k.id);
    assert_true(gw_rt_enter(a, &k, &n));
    /* another key, and a key without a limit, are not affected */
    gw_key k2 = k;
    snprintf(k2.id, sizeof k2.id, "key2");
    k2.max_parallel = 0;
    for (int i = 0; i < 50; i++) assert_true(gw_rt_enter(a, &k2, &n));
    /* the other process sees a's two within about a second */
    int refused = 0;
    for (int i = 0; i < 60 && !refused; i++) {
        refused = !gw_rt_enter(b, &k, &n);
        if (!refused) gw_rt_leave(b, k.id);
        else break;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    assert_true(refused);
    assert_int_equal(n, 2);
    /* ... and that they ended */
    gw_rt_leave(a, k.id);
    gw_rt_leave(a, k.id);
    gw_rt_leave(a, k.id); /* one too many: never below 0 */
    int admitted = 0;
    for (int i = 0; i < 60 && !admitted; i++) {
        admitted = gw_rt_enter(b, &k, &n);
        if (!admitted) {
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
        }
    }
    assert_true(admitted);
    assert_true(gw_rt_enter(a, &k, &n)); /* b holds 1 of 2 */
    gw_rt_stop(a);
    gw_rt_stop(b);
    store_close(st);
    tu_rmdir(dir);
}

/* ---- an endpoint's concurrency bound and its line (issue 22) ---- */

typedef struct {
    gw_runtime *rt;
    int id;
    int got;
    int *order; /* where the slots went, in turn */
    int *norder;
    pthread_mutex_t *mu;
} slot_arg;

static void *slot_waiter(void *p) {
    slot_arg *a = p;
    a->got = gw_rt_ep_enter(a->rt, "ep1", 1, 2, 1);
    if (a->got) {
        pthread_mutex_lock(a->mu);
        a->order[(*a->norder)++] = a->id;
        pthread_mutex_unlock(a->mu);
        gw_rt_ep_leave(a->rt, "ep1");
    }
    return NULL;
}

/* wait until `n` requests stand in ep1's line (read from the runtime's metrics) */
static void until_queued(gw_runtime *rt, unsigned long long n) {
    for (int i = 0; i < 2000; i++) {
        strbuf m = SB_INIT;
        gw_rt_metrics(rt, &m);
        const char *p = strstr(m.buf, "\ngpupool_gateway_endpoint_queued_total ");
        unsigned long long v = p ? strtoull(p + 39, NULL, 10) : 0;
        sb_release(&m);
        if (v >= n) return;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("the line never reached %llu", n);
}

static void endpoint_slots(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 4);
    gp_err err = GP_ERR_INIT;
    gw_runtime_config cfg = {.flush_ms = 50, .queue_wait_ms = 200};
    gw_runtime *rt;
    assert_int_equal(gw_rt_start(st, &cfg, &rt, &err), GP_OK);
    /* no bound: always a slot */
    for (int i = 0; i < 100; i++) assert_true(gw_rt_ep_enter(rt, "free", 0, 0, 0));
    /* a bound of 2, nobody waits: the third is refused at once */
    assert_true(gw_rt_ep_enter(rt, "ep2", 2, 0, 0));
    assert_true(gw_rt_ep_enter(rt, "ep2", 2, 0, 0));
    assert_false(gw_rt_ep_enter(rt, "ep2", 2, 5, 0));
    /* waiting with a line of 0 is refused too; a wait runs out after queue_wait_ms */
    assert_false(gw_rt_ep_enter(rt, "ep2", 2, 0, 1));
    assert_false(gw_rt_ep_enter(rt, "ep2", 2, 5, 1));
    gw_rt_ep_leave(rt, "ep2");
    assert_true(gw_rt_ep_enter(rt, "ep2", 2, 0, 0)); /* the slot given back is free again */
    /* ep1, bound 1, line of 2: the holder leaves and the slot goes to the first in line,
     * then the second; a third waiter finds the line full */
    assert_true(gw_rt_ep_enter(rt, "ep1", 1, 2, 0));
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int order[3], norder = 0;
    slot_arg a[3];
    pthread_t th[3];
    for (int i = 0; i < 2; i++) {
        a[i] = (slot_arg){rt, i, -1, order, &norder, &mu};
        assert_int_equal(pthread_create(&th[i], NULL, slot_waiter, &a[i]), 0);
        until_queued(rt, (unsigned long long)i + 2); /* after the one that ran out above */
    }
    assert_false(gw_rt_ep_enter(rt, "ep1", 1, 2, 1)); /* the line is full: refused at once */
    /* a newcomer that does not wait cannot jump the line while anyone waits */
    assert_false(gw_rt_ep_enter(rt, "ep1", 1, 2, 0));
    gw_rt_ep_leave(rt, "ep1");
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(a[0].got, 1);
    assert_int_equal(a[1].got, 1);
    assert_int_equal(norder, 2);
    assert_int_equal(order[0], 0); /* first come, first served */
    assert_int_equal(order[1], 1);
    /* all given back: free again, and never below zero */
    gw_rt_ep_leave(rt, "ep1");
    assert_true(gw_rt_ep_enter(rt, "ep1", 1, 2, 0));
    assert_false(gw_rt_ep_enter(rt, "ep1", 1, 2, 0));
    gw_rt_ep_leave(rt, "ep1");
    /* a waiter whose wait runs out leaves the line: the next slot goes to whoever is next */
    assert_true(gw_rt_ep_enter(rt, "ep1", 1, 2, 0));
    assert_false(gw_rt_ep_enter(rt, "ep1", 1, 2, 1)); /* waits 200 ms, gives up */
    gw_rt_ep_leave(rt, "ep1");
    assert_true(gw_rt_ep_enter(rt, "ep1", 1, 2, 0));
    gw_rt_ep_leave(rt, "ep1");
    strbuf m = SB_INIT;
    gw_rt_metrics(rt, &m);
    assert_non_null(strstr(m.buf, "gpupool_gateway_endpoint_queued_total 4\n"));
    assert_non_null(strstr(m.buf, "gpupool_gateway_endpoint_busy_total 7\n"));
    sb_release(&m);
    gw_rt_stop(rt);
    store_close(st);
    tu_rmdir(dir);
}

/* ---- routing: ejection and panic mode (issue 22) ---- */

static void route_order(void **state) {
    (void)state;
    gw_route r;
    memset(&r, 0, sizeof r);
    int order[GW_MAX_ENDPOINTS], panic = -1;
    assert_int_equal(gw_route_order(&r, NULL, 5, order, &panic), 0); /* none: nothing to try */
    assert_int_equal(panic, 0);
    r.n = 3;
    for (int i = 0; i < 3; i++) r.ep[i].healthy = 1;
    /* round robin from rr over all */
    assert_int_equal(gw_route_order(&r, NULL, 4, order, &panic), 3);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 0);
    assert_int_equal(panic, 0);
    /* an unhealthy one and an ejected one are skipped */
    r.ep[1].healthy = 0;
    int usable[GW_MAX_ENDPOINTS] = {1, 1, 0};
    assert_int_equal(gw_route_order(&r, usable, 4, order, &panic), 1);
    assert_int_equal(order[0], 0);
    assert_int_equal(panic, 0);
    /* every one down or ejected: all of them, in round-robin order (panic mode) */
    usable[0] = 0;
    assert_int_equal(gw_route_order(&r, usable, 4, order, &panic), 3);
    assert_int_equal(panic, 1);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[2], 0);
    r.n = GW_MAX_ENDPOINTS + 5; /* never past the array: ep 0 and 2 are the healthy ones */
    assert_int_equal(gw_route_order(&r, NULL, 0, order, &panic), 2);
    assert_int_equal(panic, 0);
}

/* Issue 33 item 2: a job endpoint whose port is not reported open is never tried, not even in
 * panic mode; a property over random routes: nothing closed is ever in the order, panic only
 * when no open endpoint is healthy and usable, and every open one is tried then. */
static void route_order_closed(void **state) {
    (void)state;
    gw_route r;
    memset(&r, 0, sizeof r);
    int order[GW_MAX_ENDPOINTS], panic = -1;
    r.n = 3;
    r.ep[0].healthy = 0;
    r.ep[1].healthy = 0;
    r.ep[1].job = 1;
    r.ep[1].closed = 1;
    r.ep[2].healthy = 0;
    /* all down: panic tries 0 and 2, never the closed job endpoint */
    assert_int_equal(gw_route_order(&r, NULL, 0, order, &panic), 2);
    assert_int_equal(panic, 1);
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 2);
    /* healthy but closed: still never tried */
    r.ep[1].healthy = 1;
    assert_int_equal(gw_route_order(&r, NULL, 1, order, &panic), 2);
    assert_int_equal(panic, 1);
    /* only closed endpoints: nothing to try, and that is not panic mode */
    r.ep[0].closed = r.ep[2].closed = 1;
    assert_int_equal(gw_route_order(&r, NULL, 0, order, &panic), 0);
    assert_int_equal(panic, 0);

    uint64_t rs = 33;
    for (int round = 0; round < 2000; round++) {
        memset(&r, 0, sizeof r);
        int usable[GW_MAX_ENDPOINTS];
        r.n = (int)tu_below(&rs, GW_MAX_ENDPOINTS + 1);
        int good = 0, open = 0;
        for (int i = 0; i < r.n; i++) {
            r.ep[i].healthy = (int)tu_below(&rs, 2);
            r.ep[i].closed = (int)tu_below(&rs, 2);
            usable[i] = (int)tu_below(&rs, 2);
            open += !r.ep[i].closed;
            good += !r.ep[i].closed && r.ep[i].healthy && usable[i];
        }
        int k = gw_route_order(&r, usable, tu_below(&rs, 1000), order, &panic);
        for (int i = 0; i < k; i++) assert_false(r.ep[order[i]].closed);
        assert_int_equal(panic, !good && open > 0);
        assert_int_equal(k, good ? good : open);
    }
}

static void port_listed(void **state) {
    (void)state;
    assert_true(gw_port_listed("8000", 8000));
    assert_true(gw_port_listed("80,8000,65535", 8000));
    assert_true(gw_port_listed("80,8000,65535", 65535));
    assert_true(gw_port_listed("80,8000,65535", 80));
    assert_false(gw_port_listed("80,8000,65535", 800));  /* a prefix is not the port */
    assert_false(gw_port_listed("80,8000,65535", 655));
    assert_false(gw_port_listed("18000", 8000));         /* nor a suffix */
    assert_false(gw_port_listed("", 8000));
    assert_false(gw_port_listed(NULL, 8000));
    assert_false(gw_port_listed("8000", 0));
    assert_false(gw_port_listed("8000x,9000", 9000));   /* malformed: nothing is listed */
    assert_false(gw_port_listed("1234567,9000", 9000));
    assert_false(gw_port_listed(",9000", 9000));
}

static const char *const PORTS_FIXTURE[] = {
    "INSERT INTO users (id, name, created_at) VALUES ('u1', 'agent', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'red', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p1', 't1', 'p', 'research', 0)",
    "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at, last_heartbeat)"
    " VALUES ('n1', 'a', 64, 512, 'u1', 0, 0)",
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at, listen_ports)"
    " VALUES ('j1', 't1', 'p1', 'a', 'x', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'running', 0, 0,"
    " '8000,9000')",
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at, listen_ports)"
    " VALUES ('j2', 't1', 'p1', 'b', 'x', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'running', 0, 0,"
    " '7000')",
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli, tenant_id,"
    " project_id, tenant, project, start_us) VALUES"
    " ('b1', 'j1', 0, 'GPU-1', 'a', 'L4', 'whole', 1000, 't1', 'p1', 'red', 'p', 5)",
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli, tenant_id,"
    " project_id, tenant, project, start_us) VALUES"
    " ('b2', 'j2', 0, 'GPU-2', 'a', 'L4', 'whole', 1000, 't1', 'p1', 'red', 'p', 5)",
    "INSERT INTO models (id, tenant_id, name, visibility, created_by, created_at)"
    " VALUES ('m1', 't1', 'm', 'private', 'u1', 0)",
    "INSERT INTO endpoints (id, model_id, job_id, port, created_at) VALUES ('e1', 'm1', 'j1', 8000, 0)",
    NULL,
};

static void sql(store_t *st, const char *q) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = store_exec(tx, NULL, &err, q, "");
    if (rc) fail_msg("%s: %s", q, err.msg);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static int64_t epoch_of(store_t *st) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT n FROM gw_epoch WHERE id = 1", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    int64_t n = store_int(s, 0);
    store_done(s);
    store_rollback(tx);
    return n;
}

/* A route naming endpoint e1 (job j1, node a, port `port`) as the cache would hold it. */
static void job_route(gw_route *r, int port) {
    memset(r, 0, sizeof *r);
    r->n = 1;
    snprintf(r->ep[0].id, sizeof r->ep[0].id, "e1");
    r->ep[0].job = 1;
    snprintf(r->ep[0].job_id, sizeof r->ep[0].job_id, "j1");
    snprintf(r->ep[0].node, sizeof r->ep[0].node, "a");
    r->ep[0].port = port;
}

/* Issue 33 item 2 against a real store (SQLite, or PostgreSQL with GP_TEST_PG): the port set
 * follows jobs.listen_ports; a change of a serving job's ports moves gw_epoch (migration 21),
 * another job's does not; a job that stops running, or a node that differs, closes it. */
static void ports_at_connect(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    for (int i = 0; PORTS_FIXTURE[i]; i++) sql(st, PORTS_FIXTURE[i]);
    gp_err err = GP_ERR_INIT;
    gw_cache *c;
    assert_int_equal(gw_cache_new(st, &c, &err), GP_OK);
    gw_route r;
    /* before any poll there is no port set: closed */
    job_route(&r, 8000);
    assert_int_equal(gw_cache_ports_check(c, &r), 0);
    assert_true(r.ep[0].closed);
    assert_int_equal(gw_cache_poll(c, &err), GP_OK);
    job_route(&r, 8000);
    assert_int_equal(gw_cache_ports_check(c, &r), 1);
    assert_false(r.ep[0].closed);
    job_route(&r, 9000);
    assert_int_equal(gw_cache_ports_check(c, &r), 1);
    job_route(&r, 7000); /* another job's port */
    assert_int_equal(gw_cache_ports_check(c, &r), 0);
    job_route(&r, 8000);
    snprintf(r.ep[0].node, sizeof r.ep[0].node, "b"); /* another node */
    assert_int_equal(gw_cache_ports_check(c, &r), 0);
    /* a URL endpoint is never closed by the port set */
    memset(&r, 0, sizeof r);
    r.n = 1;
    assert_int_equal(gw_cache_ports_check(c, &r), 1);

    /* the job closes 8000: the epoch moves in the same transaction, the next poll closes it */
    int64_t e0 = epoch_of(st);
    sql(st, "UPDATE jobs SET listen_ports = '9000' WHERE id = 'j1'");
    int64_t e1 = epoch_of(st);
    assert_true(e1 > e0);
    job_route(&r, 8000);
    assert_int_equal(gw_cache_ports_check(c, &r), 1); /* not polled yet: the set of e0 */
    assert_int_equal(gw_cache_poll(c, &err), GP_OK);
    assert_int_equal(gw_cache_ports_check(c, &r), 0);
    /* a job serving no endpoint changes its ports: no epoch move (caches kept) */
    sql(st, "UPDATE jobs SET listen_ports = '7000,7001' WHERE id = 'j2'");
    assert_int_equal(epoch_of(st), e1);
    /* the same ports written again: no move */
    sql(st, "UPDATE jobs SET listen_ports = '9000' WHERE id = 'j1'");
    assert_int_equal(epoch_of(st), e1);
    /* the port opens again */
    sql(st, "UPDATE jobs SET listen_ports = '8000,9000' WHERE id = 'j1'");
    assert_true(epoch_of(st) > e1);
    assert_int_equal(gw_cache_poll(c, &err), GP_OK);
    job_route(&r, 8000);
    assert_int_equal(gw_cache_ports_check(c, &r), 1);
    /* the job stops running (ports left as they were): closed */
    sql(st, "UPDATE jobs SET state = 'failed' WHERE id = 'j1'");
    assert_int_equal(gw_cache_poll(c, &err), GP_OK);
    assert_int_equal(gw_cache_ports_check(c, &r), 0);
    assert_true(r.ep[0].closed);
    gw_cache_free(c);
    store_close(st);
    tu_rmdir(dir);
}

/* Issue 39 item 4: on PostgreSQL the cache hears every move of gw_epoch (migration 32,
 * LISTEN/NOTIFY) and polls by itself - here no one calls gw_cache_poll after the change, and
 * the port set still follows it; on SQLite there is nothing to listen to (GP_EUNSUPPORTED:
 * the runtime polls). */
static void epoch_announced(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    for (int i = 0; PORTS_FIXTURE[i]; i++) sql(st, PORTS_FIXTURE[i]);
    gp_err err = GP_ERR_INIT;
    gw_cache *c;
    assert_int_equal(gw_cache_new(st, &c, &err), GP_OK);
    int rc = gw_cache_listen(c, &err);
    if (!tu_pg()) {
        assert_int_equal(rc, GP_EUNSUPPORTED);
    } else {
        assert_int_equal(rc, GP_OK);
        gw_route r;
        /* the listener polls once it listens: the port set appears without a poll here */
        int open = 0;
        for (int i = 0; i < 200 && !open; i++) { /* (up to 10 s: a loaded CI machine) */
            job_route(&r, 8000);
            if (!(open = gw_cache_ports_check(c, &r) == 1)) usleep(50000);
        }
        assert_true(open);
        sql(st, "UPDATE jobs SET listen_ports = '9000' WHERE id = 'j1'");
        int closed = 0;
        for (int i = 0; i < 200 && !closed; i++) {
            job_route(&r, 8000);
            if (!(closed = gw_cache_ports_check(c, &r) == 0)) usleep(50000);
        }
        assert_true(closed); /* announced, polled: 8000 closed */
        strbuf m = SB_INIT;
        gw_cache_metrics(c, &m);
        const char *at = strstr(m.buf, "\ngpupool_gateway_cache_notifications_total ");
        assert_non_null(at);
        assert_true(atoll(at + strlen("\ngpupool_gateway_cache_notifications_total ")) >= 1);
        sb_release(&m);
    }
    gw_cache_free(c); /* stops the listener */
    store_close(st);
    tu_rmdir(dir);
}

static void ejection(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    gp_err err = GP_ERR_INIT;
    gw_runtime_config cfg = {.flush_ms = 50, .eject_after = 3, .eject_ms = 300};
    gw_runtime *rt;
    assert_int_equal(gw_rt_start(st, &cfg, &rt, &err), GP_OK);
    gw_route r;
    memset(&r, 0, sizeof r);
    r.n = 2;
    snprintf(r.ep[0].id, sizeof r.ep[0].id, "ep0");
    snprintf(r.ep[1].id, sizeof r.ep[1].id, "ep1");
    int usable[GW_MAX_ENDPOINTS];
    int64_t now = gt_now_us();
    /* two failures, a success, two failures: never three in a row, never ejected */
    gw_rt_endpoint_result(rt, "ep0", 0, now);
    gw_rt_endpoint_result(rt, "ep0", 0, now);
    gw_rt_endpoint_result(rt, "ep0", 1, now);
    gw_rt_endpoint_result(rt, "ep0", 0, now);
    gw_rt_endpoint_result(rt, "ep0", 0, now);
    gw_rt_usable(rt, &r, now, usable);
    assert_true(usable[0] && usable[1]);
    /* the third in a row ejects it for eject_ms; the other is untouched */
    gw_rt_endpoint_result(rt, "ep0", 0, now);
    gw_rt_usable(rt, &r, now + 1000, usable);
    assert_false(usable[0]);
    assert_true(usable[1]);
    gw_rt_usable(rt, &r, now + 299000, usable);
    assert_false(usable[0]);
    gw_rt_usable(rt, &r, now + 300000, usable);
    assert_true(usable[0]);
    /* a success ends an ejection at once */
    for (int i = 0; i < 3; i++) gw_rt_endpoint_result(rt, "ep1", 0, now);
    gw_rt_usable(rt, &r, now, usable);
    assert_false(usable[1]);
    gw_rt_endpoint_result(rt, "ep1", 1, now);
    gw_rt_usable(rt, &r, now, usable);
    assert_true(usable[1]);
    strbuf m = SB_INIT;
    gw_rt_metrics(rt, &m);
    sb_addc(&m, '\0');
    assert_non_null(strstr(m.buf, "gpupool_gateway_ejections_total 2\n"));
    sb_release(&m);
    gw_rt_stop(rt);
    store_close(st);
    tu_rmdir(dir);
}


/* ---- token leases (issue 22: no store write per request) ---- */

/* The pure accounting and sizing of one lease. */
static void lease_sizing(void **state) {
    (void)state;
    gw_lease_policy p = GW_LEASE_POLICY_DEFAULT;
    gw_lease l;
    memset(&l, 0, sizeof l);
    int64_t t = 1000000000000LL;
    /* an empty lease covers nothing; a first grant is the minimum, within a share of the room */
    assert_false(gw_lease_take(&l, 10, t));
    assert_int_equal(gw_lease_size(&p, &l, 10, 1000000, t), 4096);
    assert_int_equal(gw_lease_size(&p, &l, 10, 1000, t), 250);  /* 1000 / 4 */
    assert_int_equal(gw_lease_size(&p, &l, 600, 1000, t), 600); /* what the request needs */
    assert_int_equal(gw_lease_size(&p, &l, 10, 10, t), 10);     /* all that is left */
    assert_int_equal(gw_lease_size(&p, &l, 11, 10, t), 0);      /* refused */
    assert_int_equal(gw_lease_size(&p, &l, 10, -5, t), 0);
    /* taking and ending: unused tokens come back, an overuse is owed */
    l.avail = 100;
    assert_true(gw_lease_take(&l, 30, t));
    assert_int_equal(l.avail, 70);
    assert_int_equal(l.inflight, 1);
    assert_int_equal(gw_lease_size(&p, &l, 30, 1000, t), 0); /* it still covers one */
    assert_false(gw_lease_idle(&l, t + 60000000, 5000000));
    gw_lease_end(&l, 30, 12);
    assert_int_equal(l.avail, 88);
    assert_int_equal(l.inflight, 0);
    assert_int_equal(l.unsettled, 1);
    assert_false(gw_lease_idle(&l, t + 60000000, 5000000)); /* its record is not written */
    gw_lease_settled(&l);
    assert_false(gw_lease_idle(&l, t + 1000, 5000000));     /* used a moment ago */
    assert_true(gw_lease_idle(&l, t + 5000000, 5000000));
    assert_true(gw_lease_take(&l, 88, t));
    gw_lease_end(&l, 88, 100); /* used 12 more than it reserved */
    assert_int_equal(l.avail, -12);
    assert_false(gw_lease_take(&l, 0, t));
    /* the next grant covers the debt too: 5 + 12 */
    assert_int_equal(gw_lease_size(&p, &l, 5, 17, t), 17);
    assert_int_equal(gw_lease_size(&p, &l, 5, 16, t), 0);
    /* hostile figures saturate */
    gw_lease_end(&l, INT64_MAX, INT64_MIN);
    assert_true(l.avail <= GW_TOKENS_MAX);
    gw_lease_end(&l, 0, INT64_MAX);
    assert_true(l.avail >= -GW_TOKENS_MAX);
    /* the rate: about 5 s of it, within [min, max] */
    memset(&l, 0, sizeof l);
    l.avail = 1LL << 40;
    for (int i = 0; i < 100; i++) assert_true(gw_lease_take(&l, 10000, t + i * 10000)); /* 1e6 in 1 s */
    int64_t rate = gw_lease_rate(&l, t + 1000000);
    assert_true(rate >= 900000 && rate <= 1000000);
    l.avail = 0;
    int64_t g = gw_lease_size(&p, &l, 100, GW_TOKENS_MAX, t + 1000000);
    assert_true(g >= 4500000 && g <= 5000000);
    p.max_tokens = 1000000;
    assert_int_equal(gw_lease_size(&p, &l, 100, GW_TOKENS_MAX, t + 1000000), 1000000);
    assert_int_equal(gw_lease_size(&p, &l, 2000000, GW_TOKENS_MAX, t + 1000000), 2000000);
    /* the rate fades: 30 s later, with nothing taken, it is a fraction */
    l.avail = 1LL << 40;
    assert_true(gw_lease_take(&l, 1, t + 31000000));
    assert_true(gw_lease_rate(&l, t + 31000000) < rate / 4);
}

/* What the store holds: the holds' amounts add up to every scope's `reserved`. */
static int64_t holds_sum(store_t *st) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *q;
    int64_t n = 0;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &q, &err, "SELECT COALESCE(SUM(amount), 0) FROM token_holds", ""),
                     GP_OK);
    assert_true(store_step(q, &err) > 0);
    n = store_int(q, 0);
    store_done(q);
    store_rollback(tx);
    return n;
}

/* The holds' amounts less the projects' `reserved`, read in one statement (one snapshot: the
 * runtimes' flushes commit meanwhile).  0 while the ledger's invariant holds. */
static int64_t holds_gap(store_t *st) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *q;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &q, &err,
                                 "SELECT (SELECT COALESCE(SUM(amount), 0) FROM token_holds)"
                                 " - (SELECT COALESCE(SUM(reserved), 0) FROM token_ledger"
                                 " WHERE scope = 'project')", ""),
                     GP_OK);
    assert_true(store_step(q, &err) > 0);
    int64_t n = store_int(q, 0);
    store_done(q);
    store_rollback(tx);
    return n;
}

/*
 * Two processes (runtimes) lease one small quota under random requests: what
 * they admit never passes it, refusals say which quota in the usual words,
 * each admission costs no write once leased, and at stop every lease is back.
 */
static void lease_store(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 4);
    gp_err err = GP_ERR_INIT;
    gw_runtime_config cfg = {.flush_ms = 20};
    gw_runtime *rt[2];
    assert_int_equal(gw_rt_start(st, &cfg, &rt[0], &err), GP_OK);
    assert_int_equal(gw_rt_start(st, &cfg, &rt[1], &err), GP_OK);
    gw_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.id, sizeof k.id, "key1");
    snprintf(k.project_id, sizeof k.project_id, "proj1");
    snprintf(k.tenant_id, sizeof k.tenant_id, "ten1");
    k.tokens_month = 0;
    k.project_tokens_month = 1000;
    k.tenant_tokens_month = QUOTA_NONE;
    /* a big quota first: one grant, then admissions in memory only */
    gw_key big = k;
    snprintf(big.id, sizeof big.id, "key-big");
    snprintf(big.project_id, sizeof big.project_id, "proj-big");
    big.project_tokens_month = 1000000000;
    char hold[RND_ID_LEN];
    assert_int_equal(gw_rt_lease_take(rt[0], &big, 10, gt_now_us(), hold, &err), GP_OK);
    unsigned long long w0 = store_write_tx_total();
    for (int i = 0; i < 300; i++) {
        char h2[RND_ID_LEN];
        assert_int_equal(gw_rt_lease_take(rt[0], &big, 10, gt_now_us(), h2, &err), GP_OK);
        assert_string_equal(h2, hold);
        gw_rt_lease_end(rt[0], big.id, h2, 10, 10);
    }
    assert_true(store_write_tx_total() - w0 <= 2); /* 3000 tokens: the first lease (4096) covers them */
    gw_rt_lease_end(rt[0], big.id, hold, 10, 0);
    /* the small one: random requests from both until it refuses */
    unsigned seed = 7;
    int64_t admitted = 0, used_total = 0;
    int refusals = 0;
    struct { int rt; char hold[RND_ID_LEN]; int64_t r; } open[64];
    int nopen = 0;
    for (int i = 0; i < 2000 && refusals < 50; i++) {
        seed = seed * 1103515245u + 12345u;
        int which = (int)(seed >> 16) & 1;
        if (nopen == 64 || (nopen && (seed >> 8) % 3 == 0)) { /* one ends, using at most its reservation */
            int j = (int)((seed >> 4) % (unsigned)nopen);
            int64_t used = open[j].r ? (int64_t)((seed >> 12) % (unsigned)(open[j].r + 1)) : 0;
            gw_rt_lease_end(rt[open[j].rt], k.id, open[j].hold, open[j].r, used);
            gw_usage u;
            memset(&u, 0, sizeof u);
            u.at_us = gt_now_us();
            snprintf(u.tenant_id, sizeof u.tenant_id, "ten1");
            snprintf(u.project_id, sizeof u.project_id, "proj1");
            snprintf(u.key_id, sizeof u.key_id, "key1");
            snprintf(u.kind, sizeof u.kind, "chat");
            snprintf(u.hold, sizeof u.hold, "%s", open[j].hold);
            u.lease = 1;
            u.status = 200;
            u.prompt_tokens = used / 2;
            u.completion_tokens = used - used / 2;
            assert_int_equal(gw_rt_record(rt[open[j].rt], &u), GP_OK);
            used_total += used;
            open[j] = open[--nopen];
            continue;
        }
        int64_t r = 1 + (int64_t)((seed >> 10) % 40);
        char h[RND_ID_LEN];
        gp_err e2 = GP_ERR_INIT;
        int rc = gw_rt_lease_take(rt[which], &k, r, gt_now_us(), h, &e2);
        if (rc == GP_EFORBIDDEN) {
            refusals++;
            assert_non_null(strstr(e2.msg, "You exceeded the project's monthly token quota of 1000 tokens: "));
            assert_non_null(strstr(e2.msg, " are held for requests being served, so the "));
            continue;
        }
        assert_int_equal(rc, GP_OK);
        admitted += r;
        open[nopen].rt = which;
        open[nopen].r = r;
        snprintf(open[nopen].hold, sizeof open[nopen].hold, "%s", h);
        nopen++;
        /* never more in flight and used than the quota */
        int64_t inflight = 0;
        for (int j = 0; j < nopen; j++) inflight += open[j].r;
        assert_true(used_total + inflight <= 1000);
        assert_int_equal(holds_gap(st), 0);
    }
    assert_true(refusals > 0);
    assert_true(admitted > 0 && admitted >= used_total);
    for (int j = 0; j < nopen; j++) {
        gw_rt_lease_end(rt[open[j].rt], k.id, open[j].hold, open[j].r, 0);
        gw_usage u;
        memset(&u, 0, sizeof u);
        u.at_us = gt_now_us();
        snprintf(u.tenant_id, sizeof u.tenant_id, "ten1");
        snprintf(u.project_id, sizeof u.project_id, "proj1");
        snprintf(u.key_id, sizeof u.key_id, "key1");
        snprintf(u.hold, sizeof u.hold, "%s", open[j].hold);
        u.lease = 1;
        assert_int_equal(gw_rt_record(rt[open[j].rt], &u), GP_OK);
    }
    gw_rt_stop(rt[0]);
    gw_rt_stop(rt[1]);
    /* every lease given back; the month's use is exactly what the records said */
    assert_int_equal(holds_sum(st), 0);
    assert_int_equal(reserved_sum(st, "project", "proj1"), 0);
    assert_int_equal(used_of(st, "project", "proj1"), used_total);
    assert_true(used_total <= 1000);
    store_close(st);
    tu_rmdir(dir);
}

/*
 * Many requests of one key at once against a small quota, as the gateway's
 * worker threads take them: each is admitted or refused for the quota,
 * never told that the lease is busy, and the quota is never overspent.
 * (While one request grows the lease in a write transaction, the others take
 * from it without the store; what the grower counted must still be there.)
 */
enum { RACE_THREADS = 8 };
typedef struct {
    gw_runtime *rt;
    const gw_key *k;
    int ok, refused, other;
    int64_t used;
} race_arg;

static void *race_taker(void *p) {
    race_arg *a = p;
    unsigned seed = (unsigned)(uintptr_t)p;
    for (int i = 0; i < 400 && a->refused < 20; i++) {
        char h[RND_ID_LEN];
        gp_err e = GP_ERR_INIT;
        seed = seed * 1103515245u + 12345u;
        int64_t r = 1 + (int64_t)((seed >> 16) % 16);
        int64_t used = (int64_t)((seed >> 8) % (unsigned)(r + 1)); /* some come back */
        int rc = gw_rt_lease_take(a->rt, a->k, r, gt_now_us(), h, &e);
        if (rc == GP_EFORBIDDEN) {
            a->refused++;
            continue;
        }
        if (rc) {
            a->other++;
            continue;
        }
        a->ok++;
        gw_rt_lease_end(a->rt, a->k->id, h, r, used);
        gw_usage u;
        memset(&u, 0, sizeof u);
        u.at_us = gt_now_us();
        snprintf(u.tenant_id, sizeof u.tenant_id, "%s", a->k->tenant_id);
        snprintf(u.project_id, sizeof u.project_id, "%s", a->k->project_id);
        snprintf(u.key_id, sizeof u.key_id, "%s", a->k->id);
        snprintf(u.kind, sizeof u.kind, "chat");
        snprintf(u.hold, sizeof u.hold, "%s", h);
        u.lease = 1;
        u.status = 200;
        u.prompt_tokens = used / 2;
        u.completion_tokens = used - used / 2;
        if (gw_rt_record(a->rt, &u) != GP_OK) a->other++;
        a->used += used;
    }
    return NULL;
}

static void lease_race(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 4);
    gp_err err = GP_ERR_INIT;
    gw_runtime_config cfg = {.flush_ms = 5};
    gw_runtime *rt;
    assert_int_equal(gw_rt_start(st, &cfg, &rt, &err), GP_OK);
    /* keys of small quotas, one after another: each grows its lease many times */
    enum { KEYS = 12 };
    gw_key k[KEYS];
    int64_t used[KEYS];
    int ok = 0, refused = 0, other = 0;
    for (int n = 0; n < KEYS; n++) {
        memset(&k[n], 0, sizeof k[n]);
        snprintf(k[n].id, sizeof k[n].id, "key-race-%d", n);
        snprintf(k[n].project_id, sizeof k[n].project_id, "proj-race");
        snprintf(k[n].tenant_id, sizeof k[n].tenant_id, "ten-race");
        k[n].tokens_month = 400;
        k[n].project_tokens_month = QUOTA_NONE;
        k[n].tenant_tokens_month = QUOTA_NONE;
        race_arg a[RACE_THREADS];
        pthread_t th[RACE_THREADS];
        for (int i = 0; i < RACE_THREADS; i++) {
            a[i] = (race_arg){.rt = rt, .k = &k[n]};
            assert_int_equal(pthread_create(&th[i], NULL, race_taker, &a[i]), 0);
        }
        used[n] = 0;
        for (int i = 0; i < RACE_THREADS; i++) {
            pthread_join(th[i], NULL);
            ok += a[i].ok;
            refused += a[i].refused;
            other += a[i].other;
            used[n] += a[i].used;
        }
        assert_true(used[n] <= 400);
    }
    gw_rt_stop(rt);
    assert_int_equal(other, 0); /* no "the token lease is in demand" */
    assert_true(ok > 100 && refused > 0);
    for (int n = 0; n < KEYS; n++) assert_int_equal(used_of(st, "key", k[n].id), used[n]);
    assert_int_equal(holds_sum(st), 0);
    store_close(st);
    tu_rmdir(dir);
}

/*
 * Issue 39 item 4: two servers (two store handles, a runtime each: on PostgreSQL their
 * writes run side by side under row locks, STORE_WRITE_ROWS) and four threads each take
 * leases, record usage and count rate windows for two keys of one project whose monthly
 * quota binds.  Every request uses all it reserved, so what was admitted is what is used:
 * the quota bound holds across both (nothing granted twice from one room), the ledger's
 * key, project and tenant rows and the hourly rollup are exactly the records' sums (no
 * lost update), every lease is back at stop, and the shared rate rows count every
 * admission.
 */
enum { XS_PER_RT = 4, XS_QUOTA = 3000 };
typedef struct {
    gw_runtime *rt;
    const gw_key *k;
    int ok, refused, other;
    int64_t used;
} xs_arg;

static void *xs_taker(void *p) {
    xs_arg *a = p;
    unsigned seed = (unsigned)(uintptr_t)p;
    for (int i = 0; i < 600 && a->refused < 20; i++) {
        char h[RND_ID_LEN], why[128];
        gp_err e = GP_ERR_INIT;
        seed = seed * 1103515245u + 12345u;
        int64_t r = 1 + (int64_t)((seed >> 16) % 24), retry = 0;
        int rc = gw_rt_lease_take(a->rt, a->k, r, gt_now_us(), h, &e);
        if (rc == GP_EFORBIDDEN) {
            a->refused++;
            continue;
        }
        if (rc || !gw_rt_admit(a->rt, a->k, r, gt_now_us(), &retry, why, sizeof why)) {
            if (!rc) gw_rt_lease_end(a->rt, a->k->id, h, r, 0);
            a->other++;
            continue;
        }
        a->ok++;
        gw_rt_lease_end(a->rt, a->k->id, h, r, r);
        gw_usage u;
        memset(&u, 0, sizeof u);
        u.at_us = gt_now_us();
        snprintf(u.tenant_id, sizeof u.tenant_id, "%s", a->k->tenant_id);
        snprintf(u.project_id, sizeof u.project_id, "%s", a->k->project_id);
        snprintf(u.key_id, sizeof u.key_id, "%s", a->k->id);
        snprintf(u.kind, sizeof u.kind, "chat");
        snprintf(u.model, sizeof u.model, "m");
        snprintf(u.hold, sizeof u.hold, "%s", h);
        u.lease = 1;
        u.status = 200;
        u.prompt_tokens = r / 2;
        u.completion_tokens = r - r / 2;
        if (gw_rt_record(a->rt, &u) != GP_OK) a->other++;
        a->used += r;
    }
    return NULL;
}

/* One figure from one statement (the sum of a column). */
static int64_t xs_sum(store_t *st, const char *sql, const char *arg) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *q;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &q, &err, sql, "s", arg), GP_OK);
    assert_true(store_step(q, &err) > 0);
    int64_t n = store_int(q, 0);
    store_done(q);
    store_rollback(tx);
    return n;
}

static void lease_two_servers(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    if (tu_pg()) tu_pg_database(url, sizeof url);
    else snprintf(url, sizeof url, "%s/gpupool.db", dir);
    store_t *st[2];
    for (int i = 0; i < 2; i++) assert_int_equal(store_open(url, 4, &st[i], &err), GP_OK);
    gw_runtime_config cfg = {.flush_ms = 5};
    gw_runtime *rt[2];
    for (int i = 0; i < 2; i++) assert_int_equal(gw_rt_start(st[i], &cfg, &rt[i], &err), GP_OK);
    gw_key k[2];
    for (int i = 0; i < 2; i++) {
        memset(&k[i], 0, sizeof k[i]);
        snprintf(k[i].id, sizeof k[i].id, "key-xs-%d", i);
        snprintf(k[i].project_id, sizeof k[i].project_id, "proj-xs");
        snprintf(k[i].tenant_id, sizeof k[i].tenant_id, "ten-xs");
        k[i].tokens_month = 0;
        k[i].project_tokens_month = XS_QUOTA;
        k[i].tenant_tokens_month = QUOTA_NONE;
        k[i].rpm = 1000000; /* a limit that never refuses: the windows are shared */
    }
    xs_arg a[2 * XS_PER_RT];
    pthread_t th[2 * XS_PER_RT];
    for (int i = 0; i < 2 * XS_PER_RT; i++) {
        a[i] = (xs_arg){.rt = rt[i & 1], .k = &k[(i >> 1) & 1]};
        assert_int_equal(pthread_create(&th[i], NULL, xs_taker, &a[i]), 0);
    }
    int ok = 0, refused = 0, other = 0;
    int64_t used = 0, used_key[2] = {0, 0};
    for (int i = 0; i < 2 * XS_PER_RT; i++) {
        pthread_join(th[i], NULL);
        ok += a[i].ok;
        refused += a[i].refused;
        other += a[i].other;
        used += a[i].used;
        used_key[(i >> 1) & 1] += a[i].used;
    }
    /* the rate windows are shared about once a second: wait for both to write theirs */
    struct timespec ts = {1, 600000000};
    nanosleep(&ts, NULL);
    int64_t rows = xs_sum(st[0],
                          "SELECT COALESCE(SUM(requests), 0) FROM rate_counts WHERE scope = 'k'"
                          " AND id LIKE ?",
                          "key-xs-%");
    gw_rt_stop(rt[0]);
    gw_rt_stop(rt[1]);
    assert_int_equal(other, 0);
    assert_true(ok > 100 && refused > 0);
    assert_true(used <= XS_QUOTA);                       /* the bound, across both */
    assert_true(used >= XS_QUOTA - 2 * XS_PER_RT * 24); /* and the quota was used */
    assert_int_equal(rows, ok);
    for (int i = 0; i < 2; i++) assert_int_equal(used_of(st[1], "key", k[i].id), used_key[i]);
    assert_int_equal(used_of(st[1], "project", "proj-xs"), used);
    assert_int_equal(used_of(st[1], "tenant", "ten-xs"), used);
    assert_int_equal(xs_sum(st[1],
                            "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0)"
                            " FROM usage_hourly WHERE project_id = ?",
                            "proj-xs"),
                     used);
    assert_int_equal(xs_sum(st[1], "SELECT COUNT(*) FROM usage_records WHERE project_id = ?",
                            "proj-xs"),
                     ok);
    assert_int_equal(holds_sum(st[1]), 0);
    assert_int_equal(reserved_sum(st[1], "project", "proj-xs"), 0);
    store_close(st[0]);
    store_close(st[1]);
    tu_rmdir(dir);
}

/* ---- token budgets (issue 33, item 4) ---- */

static void budget_fit(void **state) {
    (void)state;
    /* all of what was asked fits: as asked */
    assert_int_equal(gw_budget_fit(10, 1, 1024, 5000), 1024);
    assert_int_equal(gw_budget_fit(10, 1, 1024, 1034), 1024);
    /* less is left: the most that fits, one token per answer at least */
    assert_int_equal(gw_budget_fit(10, 1, 1024, 1033), 1023);
    assert_int_equal(gw_budget_fit(10, 4, 1024, 410), 100);
    assert_int_equal(gw_budget_fit(10, 4, 1024, 14), 1);
    /* not one token per answer: refused */
    assert_int_equal(gw_budget_fit(10, 4, 1024, 13), -1);
    assert_int_equal(gw_budget_fit(10, 1, 1024, 0), -1);
    assert_int_equal(gw_budget_fit(10, 1, 1024, -500), -1); /* a lease that is owed */
    /* embeddings (nothing generated): the prompt fits or not */
    assert_int_equal(gw_budget_fit(10, 0, 0, 10), 0);
    assert_int_equal(gw_budget_fit(10, 0, 0, 9), -1);
    assert_int_equal(gw_budget_fit(10, 3, 0, 10), 0);
    /* saturating: no input wraps into passing */
    assert_int_equal(gw_budget_fit(INT64_MAX, 1, 1, GW_TOKENS_MAX), -1);
    assert_int_equal(gw_budget_fit(0, INT64_MAX, INT64_MAX, GW_TOKENS_MAX), 1);
    assert_int_equal(gw_budget_fit(-5, -5, -5, 0), 0);
    /* property: the reservation never passes the room, and is the largest that does not */
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t base = (int64_t)(x % 5000), per = 1 + (int64_t)((x >> 13) % 130),
                want = 1 + (int64_t)((x >> 23) % 5000), room = (int64_t)((x >> 37) % 200000) - 1000;
        int64_t u = gw_budget_fit(base, per, want, room);
        if (u < 0) {
            assert_true(base + per > room);
            continue;
        }
        assert_true(u >= 1 && u <= want);
        assert_true(base + per * u <= room);
        assert_true(u == want || base + per * (u + 1) > room);
    }
}

static void budget_request_fields(void **state) {
    (void)state;
    gw_request_info info;
    char param[64];
    int type = 0;
    gp_err err = GP_ERR_INIT;
    json_t *r = json_loads("{\"messages\":[]}", 0, NULL);
    assert_int_equal(gw_request_check(r, "chat", &info, param, &type, &err), GP_OK);
    assert_true(!info.max_out_given && info.max_out == GW_DEFAULT_MAX_TOKENS);
    assert_string_equal(info.max_out_field, "max_tokens");
    json_decref(r);
    r = json_loads("{\"messages\":[],\"max_completion_tokens\":7,\"max_tokens\":9}", 0, NULL);
    assert_int_equal(gw_request_check(r, "chat", &info, param, &type, &err), GP_OK);
    assert_true(info.max_out_given && info.max_out == 7);
    assert_string_equal(info.max_out_field, "max_completion_tokens");
    json_decref(r);
    r = json_loads("{\"input\":\"hi\"}", 0, NULL);
    assert_int_equal(gw_request_check(r, "response", &info, param, &type, &err), GP_OK);
    assert_true(!info.max_out_given);
    assert_string_equal(info.max_out_field, "max_output_tokens");
    json_decref(r);
    r = json_loads("{\"input\":\"hi\"}", 0, NULL);
    assert_int_equal(gw_request_check(r, "embedding", &info, param, &type, &err), GP_OK);
    assert_string_equal(info.max_out_field, "");
    json_decref(r);
}

static void budget_usage_clip(void **state) {
    (void)state;
    /* under a budget, a completion beyond what was reserved is not billed, however long */
    gw_usage_bound b = {.prompt_est = 10, .request_bytes = 200, .completion_max = 50,
                        .answer_bytes = 400000, .prompt_guess = 10, .completion_guess = 7,
                        .budget = 1};
    int64_t p = 10, c = 200000;
    int clipped = 0;
    gw_usage_clip(&b, &p, &c, &clipped);
    assert_true(p == 10 && c == 50 && clipped);
    clipped = 0;
    p = 10, c = 50;
    gw_usage_clip(&b, &p, &c, &clipped);
    assert_true(c == 50 && !clipped);
    /* without one, the generated text still bounds it (as before) */
    b.budget = 0;
    p = 10, c = 200000;
    gw_usage_clip(&b, &p, &c, &clipped);
    assert_true(c == 200000 && clipped == 0);
}

/* Feed `in` to a stream with a budget, in pieces of `piece` bytes. OUT: out. */
static void sse_budget_run(gw_sse *s, const char *in, size_t piece, int64_t budget, int responses,
                           strbuf *out) {
    gw_sse_init(s, 0);
    gw_sse_set_budget(s, budget, responses);
    for (size_t off = 0; off < strlen(in); off += piece) {
        size_t n = strlen(in) - off < piece ? strlen(in) - off : piece;
        gw_sse_feed(s, in + off, n, out);
    }
    gw_sse_finish(s, out);
}

static void sse_budget_cut(void **state) {
    (void)state;
    /* 40 chunks of one word each, then a finish and [DONE]: cut after 10 pieces */
    strbuf in = SB_INIT;
    sb_adds(&in, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":5,\"model\":\"m\","
                 "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n");
    for (int i = 0; i < 40; i++)
        sb_addf(&in, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":5,"
                     "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w\"}}]}\n\n");
    sb_adds(&in, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                 "data: [DONE]\n\n");
    for (size_t piece = 1; piece <= 729; piece *= 3) {
        gw_sse s;
        strbuf out = SB_INIT;
        sse_budget_run(&s, in.buf, piece, 10, 0, &out);
        assert_true(s.cut && s.saw_done);
        assert_int_equal(s.pieces, 10);
        assert_true(gw_sse_tokens(&s) <= 10);
        sb_add(&out, "", 1);
        /* ten words, one finish with "length" and the end; nothing of the upstream's after */
        const char *fin = strstr(out.buf, "\"finish_reason\":\"length\"");
        assert_non_null(fin);
        assert_null(strstr(fin + 10, "finish_reason"));
        assert_null(strstr(out.buf, "\"stop\""));
        assert_non_null(strstr(out.buf, "{\"id\":\"c1\",\"object\":\"chat.completion.chunk\","
                                        "\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,"
                                        "\"delta\":{},\"finish_reason\":\"length\"}]}"));
        size_t n = strlen(out.buf);
        assert_true(n > 14 && !strcmp(out.buf + n - 14, "data: [DONE]\n\n"));
        int words = 0;
        for (const char *p = out.buf; (p = strstr(p, "\" w\"")); p++) words++;
        assert_int_equal(words, 10);
        sb_release(&out);
        gw_sse_release(&s);
    }
    /* within the budget: passed through as it came */
    gw_sse s;
    strbuf out = SB_INIT;
    sse_budget_run(&s, in.buf, 100, 41, 0, &out);
    assert_true(!s.cut && s.saw_done);
    assert_int_equal(out.len, in.len);
    sb_release(&out);
    gw_sse_release(&s);
    /* long pieces: their bytes count, GW_SSE_TOKEN_BYTES a token (400 bytes: 25 tokens) */
    strbuf big = SB_INIT;
    sb_adds(&big, "data: {\"id\":\"c2\",\"object\":\"text_completion\",\"choices\":[{\"index\":1,\"text\":\"");
    for (int i = 0; i < 100; i++) sb_adds(&big, "abcd");
    sb_adds(&big, "\"}]}\n\ndata: [DONE]\n\n");
    sse_budget_run(&s, big.buf, 7, 25, 0, &out);
    assert_true(!s.cut);
    assert_int_equal(gw_sse_tokens(&s), 100); /* billed at 4 bytes a token (and capped) */
    sb_release(&out);
    gw_sse_release(&s);
    sse_budget_run(&s, big.buf, 7, 24, 0, &out);
    assert_true(s.cut);
    assert_int_equal(s.completion_chars, 0);
    sb_add(&out, "", 1);
    /* a finish per choice seen (0 and 1), as text_completion chunks */
    assert_non_null(strstr(out.buf, "\"object\":\"text_completion\""));
    assert_non_null(strstr(out.buf, "\"index\":1,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"length\""));
    assert_non_null(strstr(out.buf, "\"index\":0,"));
    sb_release(&out);
    gw_sse_release(&s);
    sb_release(&big);
    sb_release(&in);
}

static void sse_budget_responses(void **state) {
    (void)state;
    strbuf in = SB_INIT;
    sb_adds(&in, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\","
                 "\"model\":\"m\",\"created_at\":9,\"usage\":null}}\n\n");
    for (int i = 0; i < 20; i++)
        sb_adds(&in, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
                     "\"delta\":\" w\"}\n\n");
    sb_adds(&in, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":"
                 "{\"usage\":{\"input_tokens\":7,\"output_tokens\":20}}}\n\n");
    gw_sse s;
    strbuf out = SB_INIT;
    sse_budget_run(&s, in.buf, 5, 5, 1, &out);
    assert_true(s.cut && s.saw_done && !s.has_usage);
    sb_add(&out, "", 1);
    const char *inc = strstr(out.buf, "event: response.incomplete\ndata: {");
    assert_non_null(inc);
    assert_non_null(strstr(inc, "\"id\":\"r1\""));
    assert_non_null(strstr(inc, "\"reason\":\"max_output_tokens\""));
    assert_null(strstr(out.buf, "[DONE]"));
    assert_null(strstr(out.buf, "response.completed"));
    int deltas = 0;
    for (const char *p = out.buf; (p = strstr(p, "output_text.delta\n")); p++) deltas++;
    assert_int_equal(deltas, 5);
    sb_release(&out);
    gw_sse_release(&s);
    sb_release(&in);
}

/* gw_rt_lease_take_fit against a store: what is left is taken, never more. */
static void budget_lease(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 4);
    gp_err err = GP_ERR_INIT;
    gw_runtime_config cfg = {.flush_ms = 20};
    gw_runtime *rt[2];
    assert_int_equal(gw_rt_start(st, &cfg, &rt[0], &err), GP_OK);
    assert_int_equal(gw_rt_start(st, &cfg, &rt[1], &err), GP_OK);
    gw_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.id, sizeof k.id, "keyb");
    snprintf(k.project_id, sizeof k.project_id, "projb");
    snprintf(k.tenant_id, sizeof k.tenant_id, "tenb");
    k.project_tokens_month = QUOTA_NONE;
    k.tenant_tokens_month = 5000;
    /* requests of 10 prompt tokens wanting 1,024 each, from two processes, none ending */
    int64_t taken = 0, units;
    int admitted = 0, refused = 0;
    for (int i = 0; i < 12; i++) {
        char h[RND_ID_LEN];
        int rc = gw_rt_lease_take_fit(rt[i & 1], &k, 10, 1, 1024, gt_now_us(), h, &units, &err);
        if (rc == GP_EFORBIDDEN) {
            refused++;
            continue;
        }
        assert_int_equal(rc, GP_OK);
        assert_true(units >= 1 && units <= 1024);
        taken += 10 + units;
        admitted++;
        assert_true(taken <= 5000);
    }
    assert_true(refused > 0 && admitted >= 4);
    assert_true(taken <= 5000 && taken >= 5000 - 2 * 10); /* the budget is used up, not passed */
    assert_true(reserved_sum(st, "tenant", "tenb") <= 5000);
    gw_rt_stop(rt[0]);
    gw_rt_stop(rt[1]);
    store_close(st);
    tu_rmdir(dir);
}

int main(void) {
    rnd_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(windows),  cmocka_unit_test(windows_merged), cmocka_unit_test(estimates), cmocka_unit_test(sse_filter),
        cmocka_unit_test(sse_edges), cmocka_unit_test(ledger),   cmocka_unit_test(months),
        cmocka_unit_test(saturation), cmocka_unit_test(request_ranges),
        cmocka_unit_test(reservations), cmocka_unit_test(usage_clipping),
        cmocka_unit_test(endpoint_addresses), cmocka_unit_test(ledger_limits),
        cmocka_unit_test(ledger_property), cmocka_unit_test(responses_requests),
        cmocka_unit_test(sse_responses), cmocka_unit_test(in_flight), cmocka_unit_test(endpoint_slots),
        cmocka_unit_test(route_order),
        cmocka_unit_test(route_order_closed),
        cmocka_unit_test(port_listed),
        cmocka_unit_test(ports_at_connect), cmocka_unit_test(epoch_announced),
        cmocka_unit_test(ejection),
        cmocka_unit_test(lease_sizing), cmocka_unit_test(lease_store), cmocka_unit_test(lease_race),
        cmocka_unit_test(lease_two_servers),
        cmocka_unit_test(budget_fit), cmocka_unit_test(budget_request_fields),
        cmocka_unit_test(budget_usage_clip), cmocka_unit_test(sse_budget_cut),
        cmocka_unit_test(sse_budget_responses), cmocka_unit_test(budget_lease),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
