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

static void clear(store_t *st, const char *name) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(auth_failures_clear(tx, name, &err), GP_OK);
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
        assert_int_equal(allows(st, 'n', "alice", 5, T0 + i * S, &retry), 1);
        fail_at(st, "alice", "10.0.0.1", T0 + i * S);
    }
    assert_int_equal(allows(st, 'n', "alice", 5, T0 + 5 * S, &retry), 0);
    assert_int_equal(retry, 55);
    assert_int_equal(allows(st, 'a', "10.0.0.1", 5, T0 + 5 * S, &retry), 0);
    /* keys and kinds are independent: no prefix matching, a name is not an address */
    assert_int_equal(allows(st, 'n', "alic", 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'n', "alice2", 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'a', "alice", 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'n', "10.0.0.1", 5, T0 + 5 * S, NULL), 1);
    /* a success clears the name, not the address */
    clear(st, "alice");
    assert_int_equal(allows(st, 'n', "alice", 5, T0 + 5 * S, NULL), 1);
    assert_int_equal(allows(st, 'a', "10.0.0.1", 5, T0 + 5 * S, NULL), 0);
    clear(st, "nobody");
    clear(st, "");
    /* empty and NULL keys are never kept */
    int64_t before = rows(st);
    fail_at(st, "", NULL, T0 + 6 * S);
    assert_int_equal(rows(st), before);
    assert_int_equal(allows(st, 'n', "", 5, T0 + 6 * S, NULL), 1);
    /* a failure forgets every failure that left the window: a window's worth at most */
    fail_at(st, "bob", "10.0.0.2", T0 + 70 * S);
    assert_int_equal(rows(st), 2);
    /* long keys: kept and compared by their first 127 bytes, cut at a character */
    char a[300], b[300];
    for (size_t i = 0; i + 2 < sizeof a; i += 2) memcpy(a + i, "\xc3\xa9", 2); /* é é é ... */
    a[sizeof a - 2] = '\0';
    memcpy(b, a, sizeof b);
    b[200] = 'y';
    fail_at(st, a, NULL, T0 + 71 * S);
    assert_int_equal(allows(st, 'n', a, 1, T0 + 71 * S, NULL), 0);
    assert_int_equal(allows(st, 'n', b, 1, T0 + 71 * S, NULL), 0);
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err,
                                 "SELECT key FROM login_failures WHERE kind = 'n' AND at = ?", "i",
                                 T0 + 71 * S),
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
    assert_int_equal(allows(a, 'n', "carol", 3, T0 + 3 * S, NULL), 0);
    assert_int_equal(allows(b, 'n', "carol", 3, T0 + 3 * S, NULL), 0);
    assert_int_equal(allows(b, 'n', "carol", 4, T0 + 3 * S, NULL), 1);
    clear(b, "carol");
    assert_int_equal(allows(a, 'n', "carol", 3, T0 + 3 * S, NULL), 1);
    store_close(a);
    store_close(b);
    tu_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(judge_counts_the_window),
        cmocka_unit_test(stored_failures),
        cmocka_unit_test(shared_by_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
