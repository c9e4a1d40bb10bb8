/*
 * test_deps.c - the pure rules of job dependencies (src/sched/deps.c) and
 * job arrays (src/sched/arrays.c): what a dependency of each kind is for
 * every job state; the parsing of a submit's "after" and "array", every
 * malformed shape refused.
 */
#include "testutil.h"

#include "../../src/sched/jobs.h"

#include <string.h>

static void judge_every_state(void **state) {
    (void)state;
    static const char *const live[] = {"queued", "admitted", "running"};
    for (int k = 0; k < JOBS_DEP__KINDS; k++)
        for (size_t i = 0; i < sizeof live / sizeof *live; i++)
            assert_int_equal(jobs_dep_judge(k, live[i]), JOBS_DEP_WAITS);
    assert_int_equal(jobs_dep_judge(JOBS_DEP_OK, "succeeded"), JOBS_DEP_MET);
    assert_int_equal(jobs_dep_judge(JOBS_DEP_ANY, "succeeded"), JOBS_DEP_MET);
    assert_int_equal(jobs_dep_judge(JOBS_DEP_NOTOK, "succeeded"), JOBS_DEP_NEVER);
    static const char *const bad[] = {"failed", "cancelled", "preempted"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(jobs_dep_judge(JOBS_DEP_OK, bad[i]), JOBS_DEP_NEVER);
        assert_int_equal(jobs_dep_judge(JOBS_DEP_ANY, bad[i]), JOBS_DEP_MET);
        assert_int_equal(jobs_dep_judge(JOBS_DEP_NOTOK, bad[i]), JOBS_DEP_MET);
    }
    assert_string_equal(jobs_dep_kind_name(JOBS_DEP_NOTOK), "notok");
}

static void parse_after(void **state) {
    (void)state;
    jobs_dep d[JOBS_MAX_DEPS];
    int n = -1;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(jobs_dep_parse(NULL, d, &n, &err), GP_OK);
    assert_int_equal(n, 0);
    json_t *a = json_pack("[s,s,s,s]", "aaaa", "bbbb:ok", "cccc:any", "dddd:notok");
    assert_int_equal(jobs_dep_parse(a, d, &n, &err), GP_OK);
    json_decref(a);
    assert_int_equal(n, 4);
    assert_string_equal(d[0].job, "aaaa");
    assert_int_equal(d[0].kind, JOBS_DEP_OK);
    assert_int_equal(d[1].kind, JOBS_DEP_OK);
    assert_int_equal(d[2].kind, JOBS_DEP_ANY);
    assert_string_equal(d[3].job, "dddd");
    assert_int_equal(d[3].kind, JOBS_DEP_NOTOK);
    /* every malformed shape: 400 with the reason */
    static const char *const bad[] = {"\"aaaa\"",  "[1]",           "[\"\"]",    "[\":ok\"]",
                                      "[\"a:\"]",  "[\"a:maybe\"]", "[\"a:ok:x\"]",
                                      "[\"a\",\"a:any\"]", "{}",    "[null]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        assert_non_null(j);
        gp_err e = GP_ERR_INIT;
        if (jobs_dep_parse(j, d, &n, &e) != GP_EINVALID) fail_msg("accepted %s", bad[i]);
        assert_true(e.msg[0] != '\0');
        json_decref(j);
    }
    /* a job id longer than any id: refused, not cut */
    char longid[80];
    memset(longid, 'f', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    a = json_pack("[s]", longid);
    assert_int_equal(jobs_dep_parse(a, d, &n, &err), GP_EINVALID);
    json_decref(a);
    /* at most JOBS_MAX_DEPS */
    a = json_array();
    for (int i = 0; i <= JOBS_MAX_DEPS; i++) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        json_array_append_new(a, json_string(id));
    }
    assert_int_equal(jobs_dep_parse(a, d, &n, &err), GP_EINVALID);
    json_array_remove(a, 0);
    assert_int_equal(jobs_dep_parse(a, d, &n, &err), GP_OK);
    assert_int_equal(n, JOBS_MAX_DEPS);
    json_decref(a);
}

static void parse_array(void **state) {
    (void)state;
    static const struct {
        const char *in;
        int64_t first, last, cap;
    } good[] = {{"0-199%5", 0, 199, 5}, {"3-3", 3, 3, 0}, {"20", 0, 19, 0}, {"20%3", 0, 19, 3},
                {"0-9999", 0, 9999, 0}, {"10000", 0, 9999, 0}, {"5-10004%1", 5, 10004, 1}};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        jobs_array_spec a;
        gp_err err = GP_ERR_INIT;
        if (jobs_array_parse(good[i].in, &a, &err) != GP_OK)
            fail_msg("refused %s: %s", good[i].in, err.msg);
        assert_int_equal(a.first, good[i].first);
        assert_int_equal(a.last, good[i].last);
        assert_int_equal(a.max_running, good[i].cap);
    }
    static const char *const bad[] = {"",     "5-3",   "0-10000", "10001", "0",      "abc",
                                      "0-3%0", "-1-3", "1 - 3",   "0-3%x", "0-3%",   "%5",
                                      "0-",    "1-2-3", "+4",     "1e3",   "9999999999", "0-3%5x",
                                      NULL};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        jobs_array_spec a;
        gp_err err = GP_ERR_INIT;
        if (jobs_array_parse(bad[i], &a, &err) != GP_EINVALID)
            fail_msg("accepted '%s'", bad[i] ? bad[i] : "(null)");
        assert_true(err.msg[0] != '\0');
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(judge_every_state),
        cmocka_unit_test(parse_after),
        cmocka_unit_test(parse_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
