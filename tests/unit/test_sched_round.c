/*
 * test_sched_round.c - the scheduler against the store (round.c: build the snapshot, run the
 * pure round, commit): a job that may preempt stops one victim, not one a round, when jobs of
 * another tenant that may not preempt wait ahead of it; and the snapshot's ceilings and
 * card-hours, read for all tenants and projects at once, are each scope's own (the same
 * numbers quota_load and bind_card_hours give one scope).
 */
#include "apitest.h"

#include "../../src/core/gtime.h"
#include "../../src/sched/jobs.h"
#include "../../src/sched/sched.h"

static const char *const BASE[] = {
    "INSERT INTO users (id, name, created_at) VALUES ('u1', 'agent', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'red', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t2', 'blue', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t3', 'green', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p1', 't1', 'train', 'research', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p2', 't2', 'infer', 'research', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p3', 't3', 'lab', 'research', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p4', 't1', 'eval', 'research', 0)",
    "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at, last_heartbeat)"
    " VALUES ('n1', 'a', 64, 512, 'u1', 0, 0)",
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, signals, updated_at) VALUES"
    " ('g0', 'GPU-0', 'n1', 0, 'NVIDIA A100-SXM4-80GB', 81920, '{}', 0),"
    " ('g1', 'GPU-1', 'n1', 1, 'NVIDIA A100-SXM4-80GB', 81920, '{}', 0),"
    " ('g2', 'GPU-2', 'n1', 2, 'NVIDIA A100-SXM4-80GB', 81920, '{}', 0),"
    " ('g3', 'GPU-3', 'n1', 3, 'NVIDIA A100-SXM4-80GB', 81920, '{}', 0)",
    "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at)"
    " VALUES ('a100.1x', 'whole', 1, 1, 4, '[\"A100\"]', 0)",
    NULL,
};

static void open_base(apitest *t) {
    at_open(t);
    for (int i = 0; BASE[i]; i++) at_sql(t, BASE[i]);
}

static void job(apitest *t, const char *id, const char *tenant, const char *project, int prio,
                int may_preempt, const char *state, int64_t at) {
    char sql[700];
    snprintf(sql, sizeof sql,
             "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
             " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
             " queued_at, started_at) VALUES ('%s', '%s', '%s', '%s', 'a100.1x', 1, 'normal', %d,"
             " 1, %d, 'requeue', 'u1', '%s', %lld, %lld, %lld)",
             id, tenant, project, id, prio, may_preempt, state, (long long)at, (long long)at,
             (long long)at);
    at_sql(t, sql);
}

static void binding(apitest *t, const char *id, const char *job_id, int gpu, const char *tenant,
                    const char *project, int weight, int64_t start, int64_t end) {
    char sql[800], endv[32];
    if (end) snprintf(endv, sizeof endv, "%lld", (long long)end);
    else snprintf(endv, sizeof endv, "NULL");
    snprintf(sql, sizeof sql,
             "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
             " tenant_id, project_id, tenant, project, start_us, end_us) VALUES ('%s', '%s', 0,"
             " 'GPU-%d', 'a', 'NVIDIA A100-SXM4-80GB', 'whole', %d, '%s', '%s', 'x', 'x', %lld, %s)",
             id, job_id, gpu, weight, tenant, project, (long long)start, endv);
    at_sql(t, sql);
}

static int64_t one_int(apitest *t, const char *sql, const char *arg) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(t->st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, sql, arg ? "s" : "", arg), GP_OK);
    assert_true(store_step(s, &err) > 0);
    int64_t v = store_int(s, 0);
    store_done(s);
    store_rollback(tx);
    return v;
}

static void round_once(apitest *t) {
    round_stats stats;
    gp_err err = GP_ERR_INIT;
    if (sched_run(t->st, &stats, &err) != GP_OK) fail_msg("sched_run: %s", err.msg);
}

static void preempts_once_through_the_store(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    int64_t now = gt_now_us();
    /* four running red jobs of priority 10 fill the node */
    for (int i = 0; i < 4; i++) {
        char id[16], bid[16];
        snprintf(id, sizeof id, "v%d", i);
        snprintf(bid, sizeof bid, "b%d", i);
        job(&t, id, "t1", "p1", 10, 0, "running", now - 1000000 + i);
        binding(&t, bid, id, i, "t1", "p1", 1000, now - 1000000 + i, 0);
    }
    /* blue (no GPUs: the smaller share) waits ahead with three jobs that may not preempt;
     * red's job of the same priority may */
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "a%d", i);
        job(&t, id, "t2", "p2", 100, 0, "queued", now + i);
    }
    job(&t, "p", "t1", "p1", 100, 1, "queued", now + 10);
    round_once(&t);
    char st[32], reason[240];
    at_job_state(&t, "p", st, reason);
    assert_string_equal(st, "admitted");
    assert_non_null(strstr(reason, "waiting_for_preemption: 1 lower-priority job being stopped"));
    assert_int_equal(one_int(&t, "SELECT preempt_credit FROM jobs WHERE id = ?", "p"), 1);
    assert_int_equal(one_int(&t, "SELECT SUM(preemptions) FROM jobs", NULL), 1);
    for (int r = 0; r < 4; r++) round_once(&t);
    at_job_state(&t, "p", st, reason);
    assert_string_equal(st, "running");
    /* one victim in all; blue's jobs still wait; every GPU bound once */
    assert_int_equal(one_int(&t, "SELECT SUM(preemptions) FROM jobs", NULL), 1);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM jobs WHERE state = 'running'", NULL), 4);
    assert_int_equal(
        one_int(&t, "SELECT COUNT(*) FROM jobs WHERE id LIKE 'a%' AND state = 'admitted'", NULL), 3);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM bindings WHERE end_us IS NULL", NULL), 4);
    assert_int_equal(
        one_int(&t, "SELECT COUNT(DISTINCT gpu_uuid) FROM bindings WHERE end_us IS NULL", NULL), 4);
    assert_int_equal(one_int(&t, "SELECT SUM(preempt_credit) FROM jobs", NULL), 0);
    at_close(&t);
}

/* Card-hours (milli) of one scope, as one scope is read elsewhere. */
static int64_t card_hours(apitest *t, const char *tenant, const char *project, int64_t now) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int64_t v = -1;
    assert_int_equal(store_begin(t->st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(bind_card_hours(tx, tenant, project, now, &v, &err), GP_OK);
    store_rollback(tx);
    return v;
}

static void set_quota(apitest *t, const char *tenant, const char *project, int dim, int64_t v) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    quota_set q;
    assert_int_equal(store_begin(t->st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(quota_load(tx, tenant, project, &q, &err), GP_OK);
    q.v[dim] = v;
    assert_int_equal(quota_save(tx, tenant, project, &q, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void expect_reason(apitest *t, const char *id, const char *state, const char *text) {
    char st[32], reason[240];
    at_job_state(t, id, st, reason);
    if (strcmp(st, state) || !strstr(reason, text))
        fail_msg("job %s: %s \"%s\", expected %s \"%s\"", id, st, reason, state, text);
}

static void every_scope_its_own_use(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    int64_t now = gt_now_us();
    /* card-hours held this month, by scope: ended bindings of ended jobs, of other weights */
    static const struct {
        const char *tenant, *project;
        int weight, hours;
    } held[] = {{"t1", "p1", 1000, 3}, {"t1", "p4", 500, 2}, {"t1", "p1", 250, 1},
                {"t2", "p2", 1000, 5}, {"t3", "p3", 250, 4}};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
        char id[16], bid[16];
        snprintf(id, sizeof id, "h%zu", i);
        snprintf(bid, sizeof bid, "hb%zu", i);
        job(&t, id, held[i].tenant, held[i].project, 100, 0, "succeeded", now - 7200000000LL);
        binding(&t, bid, id, (int)i % 4, held[i].tenant, held[i].project, held[i].weight,
                now - (int64_t)held[i].hours * 3600000000LL, now - 1000000);
    }
    int64_t red = card_hours(&t, "t1", NULL, now), train = card_hours(&t, "t1", "p1", now),
            eval = card_hours(&t, "t1", "p4", now), blue = card_hours(&t, "t2", NULL, now);
    /* red has used its month (tenant), and train its own; eval has room of its own; blue
     * and green have room (someone else's hours would exhaust them) */
    set_quota(&t, "t1", NULL, QD_CARD_HOURS, red);
    set_quota(&t, "t1", "p1", QD_CARD_HOURS, train);
    set_quota(&t, "t1", "p4", QD_CARD_HOURS, eval + 1);
    set_quota(&t, "t2", NULL, QD_CARD_HOURS, blue + 1);
    set_quota(&t, "t2", "p2", QD_CARD_HOURS, card_hours(&t, "t2", "p2", now) + 1);
    set_quota(&t, "t3", NULL, QD_CARD_HOURS, card_hours(&t, "t3", NULL, now) + 1);
    /* green: one GPU at a time (its project: two) */
    set_quota(&t, "t3", NULL, QD_GPU_MILLI, 1000);
    set_quota(&t, "t3", "p3", QD_GPU_MILLI, 2000);
    job(&t, "r1", "t1", "p1", 100, 0, "queued", now + 1);
    job(&t, "r2", "t1", "p4", 100, 0, "queued", now + 2);
    job(&t, "b1", "t2", "p2", 100, 0, "queued", now + 3);
    job(&t, "g1", "t3", "p3", 100, 0, "queued", now + 4);
    job(&t, "g2", "t3", "p3", 100, 0, "queued", now + 5);
    round_once(&t);
    char want[200];
    snprintf(want, sizeof want, "card_hours_exhausted: project train %g/%g", (double)train / 1000.0,
             (double)train / 1000.0);
    expect_reason(&t, "r1", "queued", want);
    snprintf(want, sizeof want, "card_hours_exhausted: tenant red %g/%g", (double)red / 1000.0,
             (double)red / 1000.0);
    expect_reason(&t, "r2", "queued", want);
    expect_reason(&t, "b1", "running", "running on a");
    expect_reason(&t, "g1", "running", "running on a");
    expect_reason(&t, "g2", "queued", "quota_exceeded: tenant green gpus 1/1 in use (needs 1 more)");
    at_close(&t);
}

/* The compatibility rules through the store (build: each card's vendor, driver and stack, the
 * class's rules, a class derived per job stack): a ROCm job lands on the AMD cards with its
 * bindings' vendor, a CUDA job of a version no card offers waits with the rule, a job of four
 * cards goes to one vendor, and the class's quota counts derived classes as the class. */
static void vendor_rules_through_the_store(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    at_sql(&t, "UPDATE gpus SET stack = '{\"cuda\":\"12.4\"}', driver_version = '550.54.15'");
    at_sql(&t, "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at,"
               " last_heartbeat) VALUES ('n2', 'b', 64, 512, 'u1', 0, 0)");
    at_sql(&t, "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, signals, updated_at,"
               " vendor, driver_version, stack) VALUES"
               " ('m0', 'AMD-0', 'n2', 0, 'AMD Instinct MI300X', 196608, '{}', 0, 'amd', '6.8.5',"
               " '{\"rocm\":\"6.2.0\"}'),"
               " ('m1', 'AMD-1', 'n2', 1, 'AMD Instinct MI300X', 196608, '{}', 0, 'amd', '6.8.5',"
               " '{\"rocm\":\"6.2.0\"}'),"
               " ('m2', 'AMD-2', 'n2', 2, 'AMD Instinct MI300X', 196608, '{}', 0, 'amd', '6.8.5',"
               " '{\"rocm\":\"6.2.0\"}')");
    at_sql(&t, "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at,"
               " vendors, min_drivers, stack) VALUES ('any.1x', 'whole', 1, 1, 4,"
               " '[\"A100\",\"MI300X\"]', 0, '[\"nvidia\",\"amd\"]', '{\"amd\":\"6.8\"}', '{}')");
    static const struct {
        const char *id, *stack;
        int units;
    } jobs[] = {{"r", "rocm>=6.1", 2}, {"c", "cuda>=13", 1}, {"f", "", 4}, {"g", "", 2}};
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
        char sql[700];
        snprintf(sql, sizeof sql,
                 "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
                 " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
                 " queued_at, stack) VALUES ('%s', 't1', 'p1', '%s', 'any.1x', %d, 'normal', 100,"
                 " 1, 0, 'requeue', 'u1', 'queued', %d, %d, '%s')",
                 jobs[i].id, jobs[i].id, jobs[i].units, (int)i, (int)i, jobs[i].stack);
        at_sql(&t, sql);
    }
    round_once(&t);
    expect_reason(&t, "r", "running", "running on b");
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM bindings WHERE job_id = ? AND vendor = 'amd'"
                                 " AND gpu_uuid LIKE 'AMD-%'", "r"), 2);
    expect_reason(&t, "c", "admitted",
                  "no_matching_gpu: no card offers cuda >= 13 (newest: 12.4 on nvidia) (class any.1x)");
    /* four cards: the four A100s (AMD has one left), all NVIDIA */
    expect_reason(&t, "f", "running", "running on a");
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM bindings WHERE job_id = ? AND vendor = 'nvidia'",
                             "f"), 4);
    /* two more: one AMD card free, nothing on NVIDIA: never one of each */
    expect_reason(&t, "g", "admitted", "needs 2 units, 1 free now on one vendor (amd; 1 on all");
    /* the AMD driver minimum: 6.9 leaves no AMD card, and the ROCm job's reason says so */
    at_sql(&t, "UPDATE classes SET min_drivers = '{\"amd\":\"6.9\"}'");
    at_sql(&t, "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
               " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
               " queued_at, stack) VALUES ('r2', 't1', 'p1', 'r2', 'any.1x', 1, 'normal', 100,"
               " 1, 0, 'requeue', 'u1', 'queued', 9, 9, 'rocm>=6.1')");
    round_once(&t);
    expect_reason(&t, "r2", "admitted", "no amd card has driver >= 6.9 (newest: 6.8.5)");
    /* a ceiling of 6 any.1x units: 2 (rocm, derived) + 4 running count as the class */
    at_sql(&t, "UPDATE jobs SET state = 'cancelled' WHERE id IN ('g', 'c', 'r2')");
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    quota_set q;
    assert_int_equal(store_begin(t.st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(quota_load(tx, "t1", "p1", &q, &err), GP_OK);
    q.nclass = 1;
    snprintf(q.class_name[0], sizeof q.class_name[0], "any.1x");
    q.class_units[0] = 6;
    assert_int_equal(quota_save(tx, "t1", "p1", &q, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    at_sql(&t, "UPDATE classes SET min_drivers = '{}'");
    at_sql(&t, "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
               " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
               " queued_at, stack) VALUES ('r3', 't1', 'p1', 'r3', 'any.1x', 1, 'normal', 100,"
               " 1, 0, 'requeue', 'u1', 'queued', 10, 10, 'rocm>=6.1')");
    round_once(&t);
    expect_reason(&t, "r3", "queued", "gpus(class any.1x) 6/6");
    at_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preempts_once_through_the_store),
        cmocka_unit_test(every_scope_its_own_use),
        cmocka_unit_test(vendor_rules_through_the_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
