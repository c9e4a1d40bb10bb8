/*
 * test_throttle.c - the failed-login window (src/auth/throttle.c): the pure
 * decision (the sixth failure inside a minute is refused, Retry-After counts
 * down to the oldest failure leaving the window, sliding not fixed), and the
 * failures in the store (keys and kinds independent, a success clears the
 * name only, two servers on one store count the same failures, the table
 * keeps no more than a window's worth, long keys are cut at a character).
 */
#include "testutil.h"

#include "../../src/auth/throttle.h"

#define S 1000000LL
#define T0 (1700000000LL * S)
#define WIN (60 * S)

static void judge_counts_the_window(void **state) {
    (void)state;
    int64_t at[8], retry = 0;
    /* newest first: failures at T0+4s .. T0 */
    for (int i = 0; i < 5; i++) at[i] = T0 + (4 - i) * S;
    assert_int_equal(auth_throttle_judge(at, 0, 5, WIN, T0, &retry), 1);
    assert_int_equal(auth_throttle_judge(at, 4, 5, WIN, T0 + 5 * S, &retry), 1);
    assert_int_equal(auth_throttle_judge(at, 5, 5, WIN, T0 + 5 * S, &retry), 0);
    assert_int_equal(retry, 55); /* the first failure (T0) leaves at T0+60s */
    assert_int_equal(auth_throttle_judge(at, 5, 5, WIN, T0 + 59 * S + S / 2, &retry), 0);
    assert_int_equal(retry, 1);
    assert_int_equal(auth_throttle_judge(at, 5, 5, WIN, T0 + 60 * S, &retry), 1);
    assert_int_equal(auth_throttle_judge(at, 5, 5, WIN, T0 + 5 * S, NULL), 0);
    /* a limit of one: the newest failure alone decides */
    assert_int_equal(auth_throttle_judge(at, 1, 1, WIN, T0 + 10 * S, &retry), 0);
    assert_int_equal(retry, 54);
    /* sliding, not fixed: five failures straddling a minute boundary count together */
    for (int i = 0; i < 5; i++) at[i] = T0 + 50 * S + (4 - i) * 5 * S;
    assert_int_equal(auth_throttle_judge(at, 5, 5, WIN, T0 + 75 * S, NULL), 0);
    assert_int_equal(auth_throttle_judge(at, 5, 5, WIN, T0 + 111 * S, NULL), 1);
}

/* The 'n' key of a name from a source (a static buffer: one at a time). */
static const char *pk(const char *name, const char *addr) {
    static char k[700];
    auth_throttle_pair_key(name, addr, k, sizeof k);
    return k;
}

/* A name from one source: the first `max` failures a sliding window, then a wait after
 * the newest failure that doubles with every further `max`, up to the horizon. */
static void backoff_grows_per_source(void **state) {
    (void)state;
    int64_t at[64], retry = 0;
    int n = 0;
    /* a guesser that always retries the moment it may */
    int64_t t = T0;
    for (int tries = 0; tries < 40; tries++) {
        while (!auth_throttle_backoff(at, n, 5, WIN, t, &retry)) {
            assert_true(retry >= 1 && retry <= AUTH_BACKOFF_HORIZON_US / S);
            t += retry * S;
        }
        memmove(at + 1, at, sizeof at[0] * (size_t)(n < 63 ? n : 63));
        at[0] = t;
        if (n < 64) n++;
        t += S / 10;
    }
    /* the first 10 in about a minute, then a try every 2, 4 ... minutes: settling near 15 an
     * hour (the failures an hour back are forgotten), where a per-minute window of 5 alone
     * lets 40 through in 8 minutes */
    if (t - T0 < 90 * WIN) fail_msg("40 tries in %lld s", (long long)((t - T0) / S));
    /* the waits, checked directly: 10 failures -> 2 min after the newest, 15 -> 4, 20 -> 8 */
    for (int i = 0; i < 20; i++) at[i] = T0 - i * S;
    assert_int_equal(auth_throttle_backoff(at, 10, 5, WIN, T0 + S, &retry), 0);
    assert_int_equal(retry, 119);
    assert_int_equal(auth_throttle_backoff(at, 15, 5, WIN, T0 + S, &retry), 0);
    assert_int_equal(retry, 239);
    assert_int_equal(auth_throttle_backoff(at, 20, 5, WIN, T0 + S, &retry), 0);
    assert_int_equal(retry, 479);
    assert_int_equal(auth_throttle_backoff(at, 20, 5, WIN, T0 + 480 * S, &retry), 1);
    /* never more than the horizon; failures older than it are forgotten */
    assert_int_equal(auth_throttle_backoff(at, 64 < 20 ? 64 : 20, 1, WIN, T0 + S, &retry), 0);
    assert_true(retry <= AUTH_BACKOFF_HORIZON_US / S);
    assert_int_equal(auth_throttle_backoff(at, 20, 5, WIN, T0 + AUTH_BACKOFF_HORIZON_US, &retry), 1);
    /* below `max` in all: always allowed */
    assert_int_equal(auth_throttle_backoff(at, 4, 5, WIN, T0, NULL), 1);
}

/* One login attempt's check, as h_login does it: a read transaction. */
static int allows(store_t *st, char kind, const char *key, int max, int64_t now, int64_t *retry) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int64_t at[AUTH_THROTTLE_MAX];
    int n = -1;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(auth_failures_recent(tx, kind, key, max, WIN, now, at, &n, &err), GP_OK);
    store_rollback(tx);
    assert_true(n >= 0 && n <= max);
    return auth_throttle_judge(at, n, max, WIN, now, retry);
}

static void fail_at(store_t *st, const char *name, const char *addr, int64_t now) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(auth_failures_add(tx, name, addr, now, WIN, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void clear(store_t *st, const char *name, const char *addr) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(auth_failures_clear(tx, name, addr, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static int64_t rows(store_t *st) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT COUNT(*) FROM login_failures", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    int64_t n = store_int(s, 0);
    store_done(s);
    store_rollback(tx);
    return n;
}

static void stored_failures(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    int64_t retry = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(allows(st, 'n', pk("alice", "10.0.0.1"), 5, T0 + i * S, &retry), 1);
        fail_at(st, "alice", "10.0.0.1", T0 + i * S);
    }
    assert_int_equal(allows(st, 'n', pk("alice", "10.0.0.1"), 5, T0 + 5 * S, &retry), 0);
    assert_int_equal(retry, 55);
    assert_int_equal(allows(st, 'a', "10.0.0.1", 5, T0 + 5 * S, &retry), 0);
    /* the same name from anywhere else is not held back (issue 33 item 6) */
    assert_int_equal(allows(st, 'n', pk("alice", "10.0.0.9"), 5, T0 + 5 * S, NULL), 1);
    /* keys and kinds are independent: no prefix matching, a name is not an address */
    assert_int_equal(allows(st, 'n', pk("alic", "10.0.0.1"), 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'n', pk("alice2", "10.0.0.1"), 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'n', "alice", 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'a', "alice", 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'n', "10.0.0.1", 5, T0 + 5 * S, NULL), 1);
    /* a success clears the name from that source, not the address */
    clear(st, "alice", "10.0.0.1");
    assert_int_equal(allows(st, 'n', pk("alice", "10.0.0.1"), 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'a', "10.0.0.1", 5, T0 + 5 * S, NULL), 0);
    clear(st, "nobody", "10.0.0.1");
    clear(st, "", "");
    /* empty and NULL keys are never kept */
    int64_t before = rows(st);
    fail_at(st, "", NULL, T0 + 6 * S);
    assert_int_equal(rows(st), before);
    assert_int_equal(allows(st, 'n', "", 5, T0 + 6 * S, NULL), 1);
    /* a failure forgets the addresses' failures that left the window */
    fail_at(st, "bob", "10.0.0.2", T0 + 70 * S);
    assert_int_equal(rows(st), 2);
    /* ... and a name's from a source after the backoff's horizon (an hour) */
    fail_at(st, "bob", "10.0.0.2", T0 + 130 * S);
    assert_int_equal(rows(st), 3); /* bob@10.0.0.2 twice, the newer address row */
    fail_at(st, "carl", "10.0.0.3", T0 + 130 * S + AUTH_BACKOFF_HORIZON_US);
    assert_int_equal(rows(st), 2); /* carl's two */
    /* long keys: kept and compared by their first 127 bytes, cut at a character */
    char a[300], b[300];
    for (size_t i = 0; i + 2 < sizeof a; i += 2) memcpy(a + i, "\xc3\xa9", 2); /* é é é ... */
    a[sizeof a - 2] = '\0';
    memcpy(b, a, sizeof b);
    b[200] = 'y';
    int64_t tl = T0 + 140 * S + AUTH_BACKOFF_HORIZON_US;
    fail_at(st, a, NULL, tl);
    assert_int_equal(allows(st, 'n', pk(a, NULL), 1, tl, NULL), 0);
    assert_int_equal(allows(st, 'n', pk(b, NULL), 1, tl, NULL), 0);
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err,
                                 "SELECT key FROM login_failures WHERE kind = 'n' AND at = ?", "i",
                                 tl),
                     GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(strlen(store_text(s, 0)), 126); /* 63 whole characters, not 127 bytes */
    store_done(s);
    store_rollback(tx);
    store_close(st);
    tu_rmdir(dir);
}

/* Two servers on one store: failures at either count for both. */
static void shared_by_servers(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *a = NULL, *b = NULL;
    if (tu_pg()) tu_pg_database(url, sizeof url);
    else snprintf(url, sizeof url, "%s/gpupool.db", dir);
    assert_int_equal(store_open(url, 1, &a, &err), GP_OK);
    assert_int_equal(store_open(url, 1, &b, &err), GP_OK);
    for (int i = 0; i < 3; i++) fail_at(i % 2 ? b : a, "carol", "10.0.0.3", T0 + i * S);
    const char *c3 = pk("carol", "10.0.0.3");
    assert_int_equal(allows(a, 'n', c3, 3, T0 + 3 * S, NULL), 0);
    assert_int_equal(allows(b, 'n', c3, 3, T0 + 3 * S, NULL), 0);
    assert_int_equal(allows(b, 'n', c3, 4, T0 + 3 * S, NULL), 1);
    clear(b, "carol", "10.0.0.3");
    assert_int_equal(allows(a, 'n', c3, 3, T0 + 3 * S, NULL), 1);
    store_close(a);
    store_close(b);
    tu_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(judge_counts_the_window),
        cmocka_unit_test(backoff_grows_per_source),
        cmocka_unit_test(stored_failures),
        cmocka_unit_test(shared_by_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
