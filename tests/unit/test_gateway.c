/*
 * test_gateway.c - the gateway's pure pieces (rate windows, token
 * estimates, the stream filter) and its token ledger against a real store:
 * reservations never let concurrent requests pass a quota, settling moves a
 * hold into `used` exactly once, stale holds are released, and the ledger's
 * invariant (reserved = the sum of open holds) holds throughout.
 */
#include "testutil.h"

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

int main(void) {
    rnd_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(windows),  cmocka_unit_test(windows_merged), cmocka_unit_test(estimates), cmocka_unit_test(sse_filter),
        cmocka_unit_test(sse_edges), cmocka_unit_test(ledger),   cmocka_unit_test(months),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
