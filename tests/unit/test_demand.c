/*
 * test_demand.c - the demand formula (sch_unit_demand, sch_class_card_gib) and the places
 * that count with it agreeing: a shared-slice class on a 48 GiB card is admitted by the
 * scheduler against a project ceiling, and the tenant and project overviews show the same
 * use as admission counted (they used to count every card as 80 GiB), and so does
 * `gpupool check` (its quota check has no formula of its own).
 */
#include "apitest.h"

#include "../../src/check/check.h"
#include "../../src/sched/jobs.h"
#include "../../src/sched/sched.h"

static void formula(void **state) {
    (void)state;
    int64_t m, g;
    sch_unit_demand(SCH_WHOLE, 2, "", 0, 0, 48, &m, &g);
    assert_int_equal(m, 2000);
    assert_int_equal(g, 96);
    sch_unit_demand(SCH_MIG, 1, "3g.40gb", 0, 0, 80, &m, &g);
    assert_int_equal(m, 428);
    assert_int_equal(g, 40);
    /* shared: the larger of the memory share (24/48) and the compute share (10 %) */
    sch_unit_demand(SCH_SHARED, 1, "", 24, 10, 48, &m, &g);
    assert_int_equal(m, 500);
    assert_int_equal(g, 24);
    sch_unit_demand(SCH_SHARED, 1, "", 24, 10, 80, &m, &g);
    assert_int_equal(m, 300);
    sch_unit_demand(SCH_SHARED, 1, "", 4, 60, 48, &m, &g);
    assert_int_equal(m, 600);
    /* an unknown card counts as 80 GiB */
    sch_unit_demand(SCH_SHARED, 1, "", 24, 10, 0, &m, &g);
    assert_int_equal(m, 300);
    /* AMD compute partitions: one of 8 (CPX), of 2 (DPX), of 4 (QPX) */
    sch_unit_demand(SCH_MIG, 1, "cpx.24gb", 0, 0, 192, &m, &g);
    assert_int_equal(m, 125);
    assert_int_equal(g, 24);
    sch_unit_demand(SCH_MIG, 1, "dpx.96gb", 0, 0, 192, &m, &g);
    assert_int_equal(m, 500);
    assert_int_equal(g, 96);
    sch_unit_demand(SCH_MIG, 1, "qpx.48gb", 0, 0, 192, &m, &g);
    assert_int_equal(m, 250);
    sch_unit_demand(SCH_MIG, 1, NULL, 0, 0, 80, &m, &g);
    assert_int_equal(m, 0);
    assert_int_equal(g, 0);

    const char *models[] = {"NVIDIA L40S", "NVIDIA A10", "NVIDIA A100-SXM4-80GB"};
    int gib[] = {48, 24, 80};
    json_t *cm = json_pack("[s,s]", "L40S", "A10");
    assert_int_equal(sch_class_card_gib(cm, models, gib, 3), 48);
    json_decref(cm);
    cm = json_pack("[s]", "H100");
    assert_int_equal(sch_class_card_gib(cm, models, gib, 3), SCH_DEFAULT_CARD_GIB);
    json_decref(cm);
    assert_int_equal(sch_class_card_gib(NULL, models, gib, 3), SCH_DEFAULT_CARD_GIB);
}

static const char *const FIXTURE[] = {
    "INSERT INTO users (id, name, created_at) VALUES ('u1', 'agent', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'red', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p1', 't1', 'train', 'research', 0)",
    "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at, last_heartbeat)"
    " VALUES ('n1', 'a', 64, 512, 'u1', 0, 0)",
    /* one 48 GiB card in shared mode, cordoned: jobs are admitted and wait, not placed */
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, mode, admin_state, signals, updated_at)"
    " VALUES ('g1', 'GPU-1', 'n1', 0, 'NVIDIA L40S', 49152, 'shared', 'cordoned', '{}', 0)",
    "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at)"
    " VALUES ('l40s.24g', 'shared:24/10', 1, 1, 4, '[\"L40S\"]', 0)",
    NULL,
};

static void job(apitest *t, const char *id, int at) {
    char sql[600];
    snprintf(sql, sizeof sql,
             "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
             " priority, preemptible, may_preempt, recovery, submitter, state, created_at, queued_at)"
             " VALUES ('%s', 't1', 'p1', '%s', 'l40s.24g', 1, 'normal', 100, 1, 0, 'requeue', 'u1',"
             " 'queued', %d, %d)",
             id, id, at, at);
    at_sql(t, sql);
}

static double used_gpus(apitest *t, const char *path) {
    json_t *resp = NULL;
    assert_int_equal(at_call(t, t->admin, "GET", path, NULL, &resp), 200);
    json_t *gpus = json_object_get(json_object_get(resp, "quota"), "gpus");
    assert_non_null(gpus);
    double v = json_number_value(json_object_get(gpus, "used"));
    json_decref(resp);
    return v;
}

static check_report rep;

/* Run gpupool check's checks on the store; its quota result (the report is `rep`). */
static const check_result *quota_check(apitest *t) {
    gp_err err = GP_ERR_INIT;
    check_report_release(&rep);
    memset(&rep, 0, sizeof rep);
    assert_int_equal(check_run(t->st, &rep, &err), GP_OK);
    for (int i = 0; i < rep.n; i++)
        if (!strcmp(rep.r[i].name, "quota")) return &rep.r[i];
    fail_msg("no quota check");
    return NULL;
}

static void overview_agrees_with_admission(void **state) {
    (void)state;
    apitest t;
    at_open(&t);
    for (int i = 0; FIXTURE[i]; i++) at_sql(&t, FIXTURE[i]);
    /* the project may hold one GPU-equivalent: two of these slices (0.5 each on a 48 GiB card) */
    {
        gp_err err = GP_ERR_INIT;
        store_tx *tx;
        quota_set q;
        quota_unlimited(&q);
        q.v[QD_GPU_MILLI] = 1000;
        assert_int_equal(store_begin(t.st, STORE_WRITE, &tx, &err), GP_OK);
        assert_int_equal(quota_save(tx, "t1", "p1", &q, &err), GP_OK);
        assert_int_equal(store_commit(tx, &err), GP_OK);
    }
    job(&t, "j1", 1);
    job(&t, "j2", 2);
    job(&t, "j3", 3);
    round_stats stats;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(sched_run(t.st, &stats, &err), GP_OK);
    char st[32], reason[240];
    at_job_state(&t, "j1", st, reason);
    assert_string_equal(st, "admitted");
    at_job_state(&t, "j2", st, reason);
    assert_string_equal(st, "admitted");
    at_job_state(&t, "j3", st, reason);
    assert_string_equal(st, "queued");
    /* admission counted 0.5 a slice: two in use, the third needs 0.5 more */
    assert_non_null(strstr(reason, "quota_exceeded: project train gpus 1/1 in use (needs 0.5 more)"));
    /* and the overviews count the same (not 2 x 24/80 = 0.6) */
    assert_true(used_gpus(&t, "/api/v1/tenants/red/projects/train/overview") == 1.0);
    assert_true(used_gpus(&t, "/api/v1/tenants/red/overview") == 1.0);
    /* gpupool check counts the same: the two admitted slices fill the ceiling, no more ... */
    const check_result *q = quota_check(&t);
    assert_true(q->ok);
    /* ... and a third one admitted behind the scheduler's back is 1.5 of 1 (not 0.9) */
    at_sql(&t, "UPDATE jobs SET state = 'admitted' WHERE id = 'j3'");
    at_sql(&t, "INSERT INTO job_events (id, job_id, at, kind, message) VALUES"
               " ('e3', 'j3', 9000000000000000, 'admitted', 'by hand')");
    q = quota_check(&t);
    assert_false(q->ok);
    assert_int_equal(json_array_size(q->problems), 1);
    const char *why = json_string_value(json_array_get(q->problems, 0));
    if (!strstr(why, "gpus 1.5 held by 3 admitted/running job(s), ceiling 1"))
        fail_msg("quota problem: %s", why);
    check_report_release(&rep);
    at_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formula),
        cmocka_unit_test(overview_agrees_with_admission),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
