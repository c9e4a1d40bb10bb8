/*
 * test_check.c - `gpupool check`'s invariants (src/check/check.h).
 *
 * Each test builds the same healthy store by hand (three GPUs: whole, shared,
 * MIG; running, cancelled and queued jobs with their bindings; a tenant
 * ceiling; a token hold, usage and its hourly rollup; audit events), checks
 * it passes, then corrupts it one way with direct SQL (foreign keys off, as
 * a bug or a hand edit would) and expects exactly the matching check to fail.
 * With GP_TEST_PG set the store is a PostgreSQL database (testutil.h), where
 * foreign keys cannot be switched off: those two corruptions are skipped.
 */
#include "testutil.h"

#include <sqlite3.h>

#include "../../src/audit/audit.h"
#include "../../src/check/check.h"

static char *dir;
static char path[600];

/* 2026-02-01T01:00:00Z */
#define TU (1769907600LL * 1000000)

static const char FIXTURE[] =
    "INSERT INTO users (id, name, created_at) VALUES ('u1', 'admin', 0);"
    "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'red', 0);"
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p1', 't1', 'train', 'research', 0);"
    "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at, last_heartbeat)"
    "  VALUES ('n1', 'a', 64, 512, 'u1', 0, 0);"
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, mode, updated_at) VALUES"
    "  ('g1', 'GPU-1', 'n1', 0, 'A100-80GB', 81920, 'whole', 0),"
    "  ('g2', 'GPU-2', 'n1', 1, 'L40S', 49152, 'shared', 0),"
    "  ('g3', 'GPU-3', 'n1', 2, 'H100-80GB', 81920, 'mig', 0);"
    "INSERT INTO slices (uuid, gpu_id, profile, memory_mib, idx) VALUES"
    "  ('MIG-1', 'g3', '3g.40gb', 40960, 0), ('MIG-2', 'g3', '3g.40gb', 40960, 1);"
    "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at) VALUES"
    "  ('a100.1x', 'whole', 1, 8, 64, '[\"A100-80GB\"]', 0),"
    "  ('l40s.sh', 'shared:12/25', 1, 2, 8, '[\"L40S\"]', 0),"
    "  ('h100.mig', 'mig:3g.40gb', 1, 4, 32, '[\"H100-80GB\"]', 0);"
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    "  preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
    "  ('j1', 't1', 'p1', 'a', 'a100.1x', 1, 'normal', 100, 1, 0, 'requeue', 'admin', 'running', 0, 0),"
    "  ('j2', 't1', 'p1', 'b', 'l40s.sh', 2, 'normal', 100, 1, 0, 'requeue', 'admin', 'running', 0, 0),"
    "  ('j3', 't1', 'p1', 'c', 'h100.mig', 1, 'normal', 100, 1, 0, 'requeue', 'admin', 'running', 0, 0),"
    "  ('j4', 't1', 'p1', 'd', 'a100.1x', 1, 'normal', 100, 1, 0, 'requeue', 'admin', 'cancelled', 0, 0),"
    "  ('j5', 't1', 'p1', 'e', 'a100.1x', 1, 'normal', 100, 1, 0, 'requeue', 'admin', 'queued', 0, 0);"
    "INSERT INTO job_events (id, job_id, at, kind, message) VALUES"
    "  ('e1', 'j1', 2000, 'placed', ''), ('e2', 'j2', 2000, 'placed', ''),"
    "  ('e3', 'j3', 1500, 'admitted', ''), ('e4', 'j3', 2500, 'placed', '');"
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, slice_uuid, node, model, form, shared_mem_gib,"
    "  shared_pct, weight_milli, tenant_id, project_id, tenant, project, start_us, end_us) VALUES"
    "  ('b1', 'j1', 0, 'GPU-1', '', 'a', 'A100-80GB', 'whole', 0, 0, 1000, 't1', 'p1', 'red', 'train', 2000, NULL),"
    "  ('b2', 'j2', 0, 'GPU-2', '', 'a', 'L40S', 'shared:12/25', 12, 25, 250, 't1', 'p1', 'red', 'train', 2000, NULL),"
    "  ('b3', 'j2', 1, 'GPU-2', '', 'a', 'L40S', 'shared:12/25', 12, 25, 250, 't1', 'p1', 'red', 'train', 2000, NULL),"
    "  ('b4', 'j3', 0, 'GPU-3', 'MIG-1', 'a', 'H100-80GB', 'mig:3g.40gb', 0, 0, 428, 't1', 'p1', 'red', 'train', 2500, NULL),"
    "  ('b5', 'j4', 0, 'GPU-1', '', 'a', 'A100-80GB', 'whole', 0, 0, 1000, 't1', 'p1', 'red', 'train', 100, 900);"
    "INSERT INTO quotas (tenant_id, project_id, spec, updated_at) VALUES"
    "  ('t1', '', '{\"gpus\":4,\"cpus\":64,\"concurrent_jobs\":4,\"class_gpus\":{\"a100.1x\":1}}', 1000);"
    "INSERT INTO token_holds (id, key_id, project_id, tenant_id, month, amount, at) VALUES"
    "  ('h1', 'k1', 'p1', 't1', '2026-01', 100, 0);"
    "INSERT INTO token_ledger (scope, id, month, used, reserved) VALUES"
    "  ('key', 'k1', '2026-01', 0, 100), ('project', 'p1', '2026-01', 0, 100),"
    "  ('tenant', 't1', '2026-01', 0, 100),"
    "  ('key', 'k1', '2026-02', 50, 0), ('project', 'p1', '2026-02', 50, 0),"
    "  ('tenant', 't1', '2026-02', 50, 0);";

/* usage records and the rollup are inserted with TU (not a literal in the string above) */
static void raw(const char *sql) {
    if (tu_pg()) {
        PGconn *c = PQconnectdb(path);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PGresult *res = PQexec(c, sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            fprintf(stderr, "%s: %s\n", sql, PQerrorMessage(c));
        assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        PQfinish(c);
        return;
    }
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, msg ? msg : "?");
    sqlite3_free(msg);
    assert_int_equal(rc, SQLITE_OK);
    sqlite3_close(db);
}

static int setup(void **state) {
    (void)state;
    dir = tu_mkdtemp();
    store_t *st = NULL;
    gp_err err = GP_ERR_INIT;
    if (tu_pg()) tu_pg_database(path, sizeof path);
    else snprintf(path, sizeof path, "%s/gpupool.db", dir);
    assert_int_equal(store_open(path, 1, &st, &err), GP_OK);
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    audit_event ev = {.actor = "admin", .action = "tenant.create", .target_id = "red",
                      .result = "ok", .summary = "{}"};
    assert_int_equal(audit_append(tx, &ev, NULL, &err), GP_OK);
    ev.action = "job.submit";
    assert_int_equal(audit_append(tx, &ev, NULL, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    store_close(st);
    raw(FIXTURE);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO usage_records (id, at, tenant_id, project_id, tenant, project, key_id,"
             " model, kind, prompt_tokens, completion_tokens, status) VALUES"
             " ('r1', %lld, 't1', 'p1', 'red', 'train', 'k1', 'm', 'chat', 20, 10, 200),"
             " ('r2', %lld, 't1', 'p1', 'red', 'train', 'k1', 'm', 'chat', 10, 10, 200);"
             "INSERT INTO usage_hourly (hour, tenant_id, project_id, tenant, project, key_id, model,"
             " accelerator, requests, prompt_tokens, completion_tokens) VALUES"
             " (%lld, 't1', 'p1', 'red', 'train', 'k1', 'm', '', 2, 30, 20);",
             (long long)TU, (long long)TU + 5, (long long)TU);
    raw(sql);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tu_rmdir(dir);
    return 0;
}

/* Run every check on the store read-only. */
static void run(check_report *rep) {
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    int rc = store_open_readonly(path, &st, &err);
    if (rc) fprintf(stderr, "open: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    rc = check_run(st, rep, &err);
    if (rc) fprintf(stderr, "check_run: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    store_close(st);
}

static const check_result *find(const check_report *rep, const char *name) {
    for (int i = 0; i < rep->n; i++)
        if (strcmp(rep->r[i].name, name) == 0) return &rep->r[i];
    fail_msg("no check named %s", name);
    return NULL;
}

/* Exactly the named checks fail (a NULL-terminated list; none: all hold). */
static void expect_failed(const char *const *names) {
    check_report rep;
    run(&rep);
    for (int i = 0; i < rep.n; i++) {
        int want = 0;
        for (const char *const *n = names; *n; n++) want |= strcmp(*n, rep.r[i].name) == 0;
        if (rep.r[i].ok == want) {
            char *s = json_dumps(rep.r[i].problems, 0);
            fprintf(stderr, "check %s: ok=%d (%s) %s\n", rep.r[i].name, rep.r[i].ok,
                    rep.r[i].note, s ? s : "[]");
            free(s);
        }
        assert_int_equal(rep.r[i].ok, !want);
    }
    int any = names[0] != NULL;
    assert_int_equal(rep.ok, !any);
    check_report_release(&rep);
}

#define EXPECT(...)                                                                                \
    do {                                                                                           \
        static const char *const names_[] = {__VA_ARGS__, NULL};                                   \
        expect_failed(names_);                                                                     \
    } while (0)

static void test_healthy(void **state) {
    (void)state;
    static const char *const none[] = {NULL};
    expect_failed(none);
    check_report rep;
    run(&rep);
    assert_int_equal(find(&rep, "gpu_exclusive")->checked, 4);
    assert_true(find(&rep, "audit_chain")->checked >= 2);
    assert_non_null(strstr(find(&rep, "quota")->note, "1 checked"));
    json_t *j = check_report_json(&rep);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_array_size(json_object_get(j, "checks")), (size_t)rep.n);
    json_decref(j);
    check_report_release(&rep);
}

static const char RUN_JOB[] =
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    "  preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
    "  ('jx', 't1', 'p1', 'x', '%s', 1, 'normal', 100, 1, 0, 'requeue', 'admin', 'running', 0, 0);"
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, slice_uuid, node, model, form, shared_mem_gib,"
    "  shared_pct, weight_milli, tenant_id, project_id, tenant, project, start_us) VALUES"
    "  ('bx', 'jx', 0, '%s', '%s', 'a', 'M', '%s', %d, %d, 0, 't1', 'p1', 'red', 'train', 500);";

/* A running job of a class the quota does not bound per class, holding `gpu`/`slice`. */
static void add_running(const char *cls, const char *gpu, const char *slice, const char *form,
                        int mem, int pct) {
    char sql[2048];
    snprintf(sql, sizeof sql, RUN_JOB, cls, gpu, slice, form, mem, pct);
    raw(sql);
}

static void test_whole_card_twice(void **state) {
    (void)state;
    add_running("h100.mig", "GPU-1", "", "whole", 0, 0);
    EXPECT("gpu_exclusive");
}

static void test_mig_slice_twice(void **state) {
    (void)state;
    add_running("h100.mig", "GPU-3", "MIG-1", "mig:3g.40gb", 0, 0);
    EXPECT("gpu_exclusive");
}

static void test_shared_overcommitted(void **state) {
    (void)state;
    add_running("h100.mig", "GPU-2", "", "shared:30/60", 30, 60);
    EXPECT("gpu_exclusive");
}

static void test_running_job_without_bindings(void **state) {
    (void)state;
    raw("UPDATE jobs SET state = 'running' WHERE id = 'j5'");
    /* and a second a100.1x unit where the class ceiling is 1 */
    EXPECT("job_bindings", "quota");
}

static void test_ended_job_with_open_binding(void **state) {
    (void)state;
    raw("UPDATE jobs SET state = 'succeeded' WHERE id = 'j1'");
    EXPECT("job_bindings");
}

static void test_binding_of_missing_job(void **state) {
    (void)state;
    if (tu_pg()) skip(); /* PostgreSQL refuses the row: bindings.job_id is a foreign key */
    raw("INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
        " tenant_id, project_id, tenant, project, start_us) VALUES"
        " ('bz', 'ghost', 0, 'GPU-9', 'a', 'M', 'whole', 1000, 't1', 'p1', 'red', 'train', 1)");
    EXPECT("job_bindings", "foreign_keys");
}

static void test_quota_exceeded(void **state) {
    (void)state;
    raw("UPDATE quotas SET spec = '{\"gpus\":1.5}'");
    EXPECT("quota");
}

static void test_quota_class_exceeded(void **state) {
    (void)state;
    raw("UPDATE jobs SET class = 'a100.1x' WHERE id = 'j3'");
    EXPECT("quota");
}

static void test_quota_lowered_later_is_not_a_violation(void **state) {
    (void)state;
    /* lowered after every admission: running work keeps running (docs/scheduling.md) */
    raw("UPDATE quotas SET spec = '{\"gpus\":1}', updated_at = 3000");
    static const char *const none[] = {NULL};
    expect_failed(none);
    check_report rep;
    run(&rep);
    assert_non_null(strstr(find(&rep, "quota")->note, "1 skipped"));
    check_report_release(&rep);
}

static void test_audit_tampered(void **state) {
    (void)state;
    raw("UPDATE audit SET actor = 'mallory' WHERE seq = 1");
    EXPECT("audit_chain");
}

static void test_ledger_reserved(void **state) {
    (void)state;
    raw("UPDATE token_ledger SET reserved = 90 WHERE scope = 'project'");
    EXPECT("token_ledger");
}

static void test_ledger_hold_lost(void **state) {
    (void)state;
    raw("DELETE FROM token_holds");
    EXPECT("token_ledger");
}

static void test_ledger_used(void **state) {
    (void)state;
    raw("UPDATE token_ledger SET used = 49 WHERE scope = 'tenant' AND month = '2026-02'");
    EXPECT("token_ledger");
}

static void test_usage_hourly(void **state) {
    (void)state;
    raw("UPDATE usage_hourly SET completion_tokens = 21");
    EXPECT("usage_hourly");
}

static void test_usage_record_without_rollup(void **state) {
    (void)state;
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO usage_records (id, at, tenant_id, project_id, tenant, project, key_id,"
             " model, kind, prompt_tokens, completion_tokens, status) VALUES"
             " ('r3', %lld, 't1', 'p1', 'red', 'train', 'k1', 'm', 'chat', 0, 0, 500)",
             (long long)TU + 4 * 3600000000LL);
    raw(sql);
    EXPECT("usage_hourly");
}

static void test_foreign_key(void **state) {
    (void)state;
    if (tu_pg()) skip(); /* PostgreSQL enforces foreign keys; nothing to find */
    raw("INSERT INTO job_events (id, job_id, at, kind, message) VALUES ('ex', 'nope', 0, 'x', '')");
    EXPECT("foreign_keys");
}

static void test_newer_schema_refused(void **state) {
    (void)state;
    raw("INSERT INTO schema_migrations VALUES (999, 0)");
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    assert_int_equal(store_open_readonly(path, &st, &err), GP_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "newer"));
}

static void test_missing_store(void **state) {
    (void)state;
    char p[700];
    snprintf(p, sizeof p, "sqlite:%s/none.db", dir);
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    assert_int_equal(store_open_readonly(p, &st, &err), GP_ENOTFOUND);
    /* and read-only means no file was made */
    snprintf(p, sizeof p, "%s/none.db", dir);
    assert_int_not_equal(access(p, F_OK), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_card_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mig_slice_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_overcommitted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_job_without_bindings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ended_job_with_open_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_of_missing_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota_exceeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota_class_exceeded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota_lowered_later_is_not_a_violation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit_tampered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ledger_reserved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ledger_hold_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ledger_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_hourly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_record_without_rollup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_store, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
