/*
 * test_schedloop.c - the scheduler loop and the node notifier (src/sched/loop.h):
 * wakes from a server that does not lead run no round, a burst of wakes from
 * many threads is coalesced into a few rounds, a waiter returns at once for a
 * version it has not seen, when its node is touched (not another node), when
 * every node is, and at its timeout; quiescing answers waiters at once.
 * Threaded: scripts/test.sh runs it under ThreadSanitizer too.
 */
#include "testutil.h"

#include "../../src/core/gtime.h"
#include "../../src/sched/loop.h"

#include <pthread.h>
#include <time.h>

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t rounds_of(store_t *st) {
    sched_loop_stats s;
    assert_int_equal(sched_loop_stats_get(st, &s), 1);
    return s.rounds;
}

/* Wait up to 5 s for at least `n` rounds. */
static uint64_t await_rounds(store_t *st, uint64_t n) {
    for (int i = 0; i < 500 && rounds_of(st) < n; i++) sleep_ms(10);
    return rounds_of(st);
}

static void no_loop(void **state) {
    (void)state;
    int64_t v = 7;
    store_t *nobody = (store_t *)&v; /* never opened: only a key */
    assert_int_equal(sched_node_wait(nobody, "a", 0, 10, &v), -1);
    sched_wake(nobody, 1);           /* nothing to wake: no effect */
    sched_node_touch(nobody, "a");
    sched_loop_stats s;
    assert_int_equal(sched_loop_stats_get(nobody, &s), 0);
    assert_int_equal(s.rounds, 0);
    sched_loop_stop(NULL);
}

/* The gap rule (loop.h): bursts widen it, freed capacity does not, a long round bounds it. */
static void gaps(void **state) {
    (void)state;
    assert_int_equal(sched_gap_us(0, 0, 0), SCHED_MIN_GAP_US);
    assert_int_equal(sched_gap_us(0, 1, 0), SCHED_MIN_GAP_US);
    assert_int_equal(sched_gap_us(0, 3, 0), 3 * SCHED_MIN_GAP_US);
    assert_int_equal(sched_gap_us(0, 1000, 0), SCHED_MAX_GAP_US);
    assert_int_equal(sched_gap_us(0, 1000, 1), SCHED_MIN_GAP_US);
    assert_int_equal(sched_gap_us(0, 3, 1), SCHED_MIN_GAP_US);
    /* never shorter than the round itself, freed or not */
    assert_int_equal(sched_gap_us(SCHED_MAX_GAP_US * 4, 1000, 0), SCHED_MAX_GAP_US * 4);
    assert_int_equal(sched_gap_us(SCHED_MAX_GAP_US * 4, 1000, 1), SCHED_MAX_GAP_US * 4);
    assert_int_equal(sched_gap_us(SCHED_MIN_GAP_US + 1, 1, 1), SCHED_MIN_GAP_US + 1);
    /* monotone in the burst, and the freed gap never exceeds the other */
    for (int b = 0; b < 20; b++)
        for (int64_t t = 0; t < 3 * SCHED_MAX_GAP_US; t += 7919) {
            assert_true(sched_gap_us(t, b + 1, 0) >= sched_gap_us(t, b, 0));
            assert_true(sched_gap_us(t, b, 1) <= sched_gap_us(t, b, 0));
            assert_true(sched_gap_us(t, b, 1) >= t);
        }
}

typedef struct burst_arg {
    store_t *st;
    int n;
} burst_arg;

static void *burst(void *arg) {
    burst_arg *b = arg;
    for (int i = 0; i < b->n; i++) sched_wake(b->st, 1);
    return NULL;
}

static void wakes_and_rounds(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    gp_err err = GP_ERR_INIT;
    sched_loop *l;
    assert_int_equal(sched_loop_start(st, &l, &err), GP_OK);
    sched_loop *again;
    assert_int_equal(sched_loop_start(st, &again, &err), GP_ECONFLICT); /* one per store */
    /* not leading: ignored, no round */
    sched_wake(st, 0);
    sleep_ms(50);
    sched_loop_stats s;
    sched_loop_stats_get(st, &s);
    assert_int_equal(s.rounds, 0);
    assert_int_equal(s.wakes_ignored, 1);
    /* one wake, one round */
    sched_wake(st, 1);
    assert_int_equal(await_rounds(st, 1), 1);
    sleep_ms(50);
    assert_int_equal(rounds_of(st), 1);
    /* 4 threads x 500 wakes: coalesced */
    pthread_t th[4];
    burst_arg b = {st, 500};
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, burst, &b), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    sleep_ms(200);
    uint64_t r = rounds_of(st);
    assert_true(r >= 2);
    assert_true(r <= 1 + 20); /* 2,000 wakes, a handful of rounds */
    sched_loop_stats_get(st, &s);
    assert_int_equal(s.wakes, 2001);
    assert_int_equal(s.rounds_failed, 0);
    sched_loop_stop(l);
    store_close(st);
    tu_rmdir(dir);
}

typedef struct waiter_arg {
    store_t *st;
    const char *node;
    int64_t seen;
    int timeout_ms;
    int rc;
    int64_t version, took_ms;
} waiter_arg;

static void *waiter(void *arg) {
    waiter_arg *w = arg;
    int64_t t0 = gt_mono_us();
    w->rc = sched_node_wait(w->st, w->node, w->seen, w->timeout_ms, &w->version);
    w->took_ms = (gt_mono_us() - t0) / 1000;
    return NULL;
}

static void notifier(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 1);
    gp_err err = GP_ERR_INIT;
    sched_loop *l;
    assert_int_equal(sched_loop_start(st, &l, &err), GP_OK);
    int64_t va, vb, v;
    /* a version not seen (-1, or an earlier server's): at once */
    assert_int_equal(sched_node_wait(st, "a", -1, 5000, &va), 1);
    assert_int_equal(sched_node_wait(st, "b", -1, 5000, &vb), 1);
    assert_int_equal(va, vb); /* untouched nodes share the starting version */
    /* the version seen: a timeout */
    int64_t t0 = gt_mono_us();
    assert_int_equal(sched_node_wait(st, "a", va, 100, &v), 0);
    assert_true(gt_mono_us() - t0 >= 90000);
    assert_int_equal(v, va);
    /* a touch of "a" wakes a's waiter, not b's */
    waiter_arg wa = {st, "a", va, 5000, 0, 0, 0}, wb = {st, "b", vb, 300, 0, 0, 0};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, waiter, &wa), 0);
    assert_int_equal(pthread_create(&tb, NULL, waiter, &wb), 0);
    sleep_ms(50);
    sched_node_touch(st, "a");
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(wa.rc, 1);
    assert_true(wa.version != va);
    assert_true(wa.took_ms < 1000);
    assert_int_equal(wb.rc, 0);
    assert_int_equal(wb.version, vb);
    /* every node: b's waiter too */
    wb.timeout_ms = 5000;
    assert_int_equal(pthread_create(&tb, NULL, waiter, &wb), 0);
    sleep_ms(50);
    sched_node_touch(st, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(wb.rc, 1);
    assert_true(wb.version != vb);
    /* many nodes: the table grows, versions stay */
    char name[32];
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "n%d", i);
        sched_node_touch(st, name);
    }
    /* a's version is its own touches plus every-node touches, whatever other nodes did */
    assert_int_equal(sched_node_wait(st, "a", wa.version + 1, 1, &v), 0);
    assert_int_equal(v, wa.version + 1);
    assert_int_equal(sched_node_wait(st, "n499", -1, 1, &v), 1);
    int64_t v499 = v;
    assert_int_equal(sched_node_wait(st, "n499", v499, 10, &v), 0);
    /* quiescing: waiters answer at once, and later ones too */
    waiter_arg wq = {st, "n499", v499, 5000, 0, 0, 0};
    pthread_t tq;
    assert_int_equal(pthread_create(&tq, NULL, waiter, &wq), 0);
    sleep_ms(50);
    sched_loop_quiesce(l);
    pthread_join(tq, NULL);
    assert_int_equal(wq.rc, -1);
    assert_true(wq.took_ms < 1000);
    assert_int_equal(sched_node_wait(st, "n499", v499, 5000, &v), -1);
    sched_wake(st, 1); /* ignored once quiescing */
    sched_loop_stats s;
    sched_loop_stats_get(st, &s);
    assert_int_equal(s.wakes, 0);
    sched_loop_stop(l);
    store_close(st);
    tu_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_loop),
        cmocka_unit_test(gaps),
        cmocka_unit_test(wakes_and_rounds),
        cmocka_unit_test(notifier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
