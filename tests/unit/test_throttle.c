/*
 * test_throttle.c - the failed-login window (src/auth/throttle.c): the
 * sixth failure inside a minute is refused, Retry-After counts down to the
 * oldest failure leaving the window, a success resets, keys are
 * independent, and the bounded table forgets the stalest key.
 */
#include "testutil.h"

#include "../../src/auth/throttle.h"

#define S 1000000LL
#define T0 (1700000000LL * S)

static void bad_arguments(void **state) {
    (void)state;
    assert_null(auth_throttle_new(0, 60 * S, 8));
    assert_null(auth_throttle_new(65, 60 * S, 8));
    assert_null(auth_throttle_new(5, 0, 8));
    assert_null(auth_throttle_new(5, 60 * S, 0));
    auth_throttle_free(NULL);
}

static void sixth_is_refused(void **state) {
    (void)state;
    auth_throttle *t = auth_throttle_new(5, 60 * S, 16);
    assert_non_null(t);
    int64_t retry = 0;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(auth_throttle_allows(t, "alice", T0 + i * S, &retry), 1);
        auth_throttle_fail(t, "alice", T0 + i * S);
    }
    assert_int_equal(auth_throttle_count(t, "alice", T0 + 5 * S), 5);
    assert_int_equal(auth_throttle_allows(t, "alice", T0 + 5 * S, &retry), 0);
    /* the first failure (T0) leaves the window at T0+60s */
    assert_int_equal(retry, 55);
    assert_int_equal(auth_throttle_allows(t, "alice", T0 + 59 * S + S / 2, &retry), 0);
    assert_int_equal(retry, 1);
    assert_int_equal(auth_throttle_allows(t, "alice", T0 + 60 * S, &retry), 1);
    /* one more failure at once closes it again, until T0+61s */
    auth_throttle_fail(t, "alice", T0 + 60 * S);
    assert_int_equal(auth_throttle_allows(t, "alice", T0 + 60 * S, &retry), 0);
    assert_int_equal(retry, 1);
    assert_int_equal(auth_throttle_allows(t, "alice", T0 + 61 * S, &retry), 1);
    /* NULL retry pointer is fine */
    assert_int_equal(auth_throttle_allows(t, "alice", T0 + 60 * S, NULL), 0);
    auth_throttle_free(t);
}

static void sliding_not_fixed(void **state) {
    (void)state;
    auth_throttle *t = auth_throttle_new(5, 60 * S, 4);
    /* 5 failures straddling a minute boundary still count together */
    for (int i = 0; i < 5; i++) auth_throttle_fail(t, "k", T0 + 50 * S + i * 5 * S);
    assert_int_equal(auth_throttle_allows(t, "k", T0 + 75 * S, NULL), 0);
    /* old failures expire one by one */
    assert_int_equal(auth_throttle_count(t, "k", T0 + 111 * S), 4);
    assert_int_equal(auth_throttle_allows(t, "k", T0 + 111 * S, NULL), 1);
    assert_int_equal(auth_throttle_count(t, "k", T0 + 200 * S), 0);
    auth_throttle_free(t);
}

static void success_resets_and_keys_are_independent(void **state) {
    (void)state;
    auth_throttle *t = auth_throttle_new(3, 60 * S, 8);
    for (int i = 0; i < 3; i++) {
        auth_throttle_fail(t, "bob", T0);
        auth_throttle_fail(t, "addr:127.0.0.1", T0);
    }
    assert_int_equal(auth_throttle_allows(t, "bob", T0, NULL), 0);
    assert_int_equal(auth_throttle_allows(t, "carol", T0, NULL), 1);
    assert_int_equal(auth_throttle_allows(t, "bo", T0, NULL), 1);
    assert_int_equal(auth_throttle_allows(t, "bobby", T0, NULL), 1);
    auth_throttle_reset(t, "bob");
    assert_int_equal(auth_throttle_allows(t, "bob", T0, NULL), 1);
    assert_int_equal(auth_throttle_count(t, "bob", T0), 0);
    /* resetting the name leaves the address alone */
    assert_int_equal(auth_throttle_allows(t, "addr:127.0.0.1", T0, NULL), 0);
    auth_throttle_reset(t, "nobody"); /* no-op */
    /* empty and NULL keys are never tracked */
    auth_throttle_fail(t, "", T0);
    auth_throttle_fail(t, NULL, T0);
    assert_int_equal(auth_throttle_allows(t, "", T0, NULL), 1);
    auth_throttle_free(t);
}

static void bounded_table(void **state) {
    (void)state;
    auth_throttle *t = auth_throttle_new(2, 60 * S, 3);
    char key[16];
    /* four keys in a table of three: the stalest (k0) is forgotten */
    for (int k = 0; k < 4; k++) {
        snprintf(key, sizeof key, "k%d", k);
        auth_throttle_fail(t, key, T0 + k * S);
        auth_throttle_fail(t, key, T0 + k * S);
    }
    assert_int_equal(auth_throttle_allows(t, "k0", T0 + 5 * S, NULL), 1);
    for (int k = 1; k < 4; k++) {
        snprintf(key, sizeof key, "k%d", k);
        assert_int_equal(auth_throttle_allows(t, key, T0 + 5 * S, NULL), 0);
    }
    /* once k1's failures expire its slot is reused before a live one */
    auth_throttle_fail(t, "k9", T0 + 61 * S + S / 2);
    assert_int_equal(auth_throttle_count(t, "k9", T0 + 62 * S), 1);
    assert_int_equal(auth_throttle_allows(t, "k3", T0 + 62 * S, NULL), 0);
    /* long keys: compared by their first 127 bytes */
    char a[300], b[300];
    memset(a, 'x', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memcpy(b, a, sizeof b);
    b[200] = 'y';
    auth_throttle_fail(t, a, T0 + 100 * S);
    auth_throttle_fail(t, a, T0 + 100 * S);
    assert_int_equal(auth_throttle_allows(t, a, T0 + 100 * S, NULL), 0);
    assert_int_equal(auth_throttle_allows(t, b, T0 + 100 * S, NULL), 0);
    auth_throttle_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(sixth_is_refused),
        cmocka_unit_test(sliding_not_fixed),
        cmocka_unit_test(success_resets_and_keys_are_independent),
        cmocka_unit_test(bounded_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
