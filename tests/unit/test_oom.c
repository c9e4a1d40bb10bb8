/*
 * test_oom.c - the pure scheduler under failing allocations (failalloc.h): a round over a
 * world with everything the round weighs (whole cards, MIG and shared slices, quotas,
 * guarantees with kept parts and projects' parts, borrowing and reclaim, reservations of
 * named nodes and of a count, a job that spans nodes, preemption), a delta after a submit,
 * and the checked suggestions for a blocked job: each allocation they make fails once, in
 * turn, and each time the call either fails with its error leaving nothing allocated, or
 * copes with a result sch_check accepts.
 */
#include "failalloc.h"
#include "sched_world.h"

#include <stdio.h>

#define SEC 1000000LL

static unsigned char card_ok[MAXG];

/* Two tenants on whole, MIG and shared cards, a guarantee split into projects' parts,
 * reservations in force and ahead, running work (some borrowed) and a queue that needs
 * reclaim, preemption, a gang and the reservations' rules. */
static void build(world *w, rsv *rs, const unsigned char *in0) {
    w_init(w);
    w_node(w, 8, 0, SCH_WHOLE, 64, 512, 0);
    w_node(w, 4, 0, SCH_WHOLE, 64, 512, 0);
    w_node(w, 4, 0, SCH_WHOLE, 64, 512, 1);
    w_node(w, 2, 1, SCH_MIG, 32, 256, 0);
    w_node(w, 2, 2, SCH_SHARED, 32, 256, 1);
    int c1 = w_class(w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    int c2 = w_class(w, "a100.2x", SCH_WHOLE, 2, 2, 4, 0);
    int cm = w_class(w, "mig.3g", SCH_MIG, 1, 1, 1, 1);
    int cs = w_class(w, "l40s.q", SCH_SHARED, 1, 1, 1, 2);
    w->tenants[0].quota.v[QD_GPU_MILLI] = 16000;
    w->tenants[0].quota.guarantee = 8000;
    w->tenants[0].quota.kept = 1000;
    w->tenants[1].quota.v[QD_GPU_MILLI] = 16000;
    w->tenants[1].quota.guarantee = 4000;
    w->tenants[1].quota.weight = 2;
    w->projects[0].quota.guarantee = 3000; /* red-p: 3 of red's 8 */
    w->projects[2].tenant = 0;
    w->projects[2].name = "red-q";
    w->np = 3;
    for (int g = 0; g < w->ng; g++) card_ok[g] = w->gpus[g].model == 0;
    rs[0] = (rsv){.t1_us = 900 * SEC, .t2_us = 1900 * SEC, .tenant = 0, .project = -1,
                  .node_in = in0, .pool = -1};
    rs[1] = (rsv){.t1_us = 1500 * SEC, .t2_us = 1600 * SEC, .tenant = 1, .project = 1,
                  .pool = 0, .count = 2, .card_ok = card_ok};
    static const char *names[2] = {"red-node", "blue-two"};
    w->s.rsvs = rs;
    w->s.nrsvs = 2;
    w->s.rsv_names = names;
    w->s.now_us = 1000 * SEC;
    w->s.reclaim_cap = 3;
    w->s.reclaim_window_s = 3600;
    /* first: blue borrows, red-q runs beyond the unassigned part, slices fill up */
    for (int i = 0; i < 10; i++) w_job(w, 1, i % 3 ? c1 : c2, 1, 100, i);
    for (int i = 0; i < 4; i++) w_job(w, 2, c1, 1, 100, 20 + i);
    for (int i = 0; i < 3; i++) w_job(w, i % 2, cm, 1, 50, 30 + i);
    for (int i = 0; i < 5; i++) w_job(w, i % 2, cs, 1, 50, 40 + i);
    sch_result r;
    round_ok(w, &r);
    w_apply(w, &r);
    sch_result_free(&r);
    /* then: red-p within its part (reclaim), red's job in its reservation, a gang, a job
     * that may preempt, one whose limit runs into blue's window, one past every quota */
    for (int i = 0; i < 3; i++) w_job(w, 0, c1, 1, 10, 100 + i);
    int in = w_job(w, 0, c1, 2, 100, 110);
    w->jobs[in].reservation = 1;
    w->jobs[in].time_limit_s = 60;
    int gang = w_job(w, 1, c1, 4, 100, 111);
    w->jobs[gang].nodes = 2;
    int pre = w_job(w, 1, c2, 1, 900, 112);
    w->jobs[pre].may_preempt = 1;
    int late = w_job(w, 2, c1, 1, 100, 113);
    w->jobs[late].time_limit_s = 1000;
    w_job(w, 0, c2, 8, 100, 114);
}

/* Run f(w, arg) with its nth allocation failing, for n = 1, 2, ... until a run makes no
 * allocation that fails: each run must leave as many blocks live as before it. */
typedef int (*attempt_fn)(world *w, int arg);

static void every_failure(world *w, int arg, attempt_fn f, const char *what) {
    long n;
    for (n = 1;; n++) {
        long before = fa_live();
        fa_arm(n);
        int rc = f(w, arg);
        int failed = fa_failed();
        fa_arm(0);
        if (fa_live() != before)
            fail_msg("%s: allocation %ld failing leaves %ld blocks (rc %d)", what, n,
                     fa_live() - before, rc);
        if (!failed) {
            assert_int_equal(rc, 0);
            break;
        }
    }
    printf("# %s: %ld allocations, each failed once: clean\n", what, n - 1);
    assert_true(n > 5);
}

/* A round: 0 with a result sch_check accepts (freed here), or -1. */
static int try_round(world *w, int arg) {
    (void)arg;
    sch_result r;
    int rc = sch_round(w_snap(w), &r);
    if (rc == 0) {
        char why[200];
        fa_arm(0); /* (the check's own allocations are not the round's) */
        if (sch_check(&w->s, &r, why, sizeof why)) fail_msg("a coping round: %s", why);
        sch_result_free(&r);
        return 0;
    }
    assert_int_equal(rc, -1);
    return rc;
}

static void round_under_failures(void **state) {
    (void)state;
    static world w;
    rsv rs[2];
    const unsigned char in0[5] = {0, 1, 0, 0, 0};
    build(&w, rs, in0);
    every_failure(&w, 0, try_round, "sch_round");
}

/* The delta after one submit: made unarmed, the submit armed; the delta freed either way. */
static int try_delta(world *w, int job) {
    sch_delta *d;
    long armed_was = 0;
    (void)armed_was;
    sch_result r;
    w->jobs[job].state = SCH_RUNNING; /* the settled snapshot: without the new job */
    w->nj--;
    int rc = sch_delta_new(w_snap(w), &d);
    w->nj++;
    w->jobs[job].state = SCH_PENDING;
    if (rc) {
        assert_int_equal(rc, -1);
        return -1;
    }
    rc = sch_delta_submit(d, w_snap(w), job, &r);
    if (rc == 0) sch_result_free(&r);
    sch_delta_free(d);
    assert_true(rc == 0 || rc == 1 || rc == -1);
    return rc == 1 ? 0 : rc;
}

static void delta_under_failures(void **state) {
    (void)state;
    static world w;
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    w_node(&w, 2, 1, SCH_MIG, 32, 256, 0);
    int c1 = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    int cm = w_class(&w, "mig.3g", SCH_MIG, 1, 1, 1, 1);
    for (int i = 0; i < 6; i++) w_job(&w, i % 2, i % 3 ? c1 : cm, 1, 100, i);
    sch_result r;
    round_ok(&w, &r);
    w_apply(&w, &r);
    sch_result_free(&r);
    int job = w_job(&w, 0, c1, 2, 100, 50);
    every_failure(&w, job, try_delta, "sch_delta_new + sch_delta_submit");
}

/* Suggestions for a job past its quota and a reservation's window. */
static int try_suggest(world *w, int job) {
    sch_suggestion sg[8];
    int n = sch_suggest(w_snap(w), job, sg, 8);
    assert_true(n >= -1 && n <= 8);
    return n < 0 ? -1 : 0;
}

static void suggest_under_failures(void **state) {
    (void)state;
    static world w;
    rsv rs[2];
    const unsigned char in0[5] = {0, 1, 0, 0, 0};
    build(&w, rs, in0);
    every_failure(&w, w.nj - 1, try_suggest, "sch_suggest");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_under_failures),
        cmocka_unit_test(delta_under_failures),
        cmocka_unit_test(suggest_under_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
