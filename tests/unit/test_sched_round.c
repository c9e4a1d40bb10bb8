/*
 * test_sched_round.c - the scheduler against the store (round.c: build the snapshot, run the
 * pure round, commit): a job that may preempt stops one victim, not one a round, when jobs of
 * another tenant that may not preempt wait ahead of it; and the snapshot's ceilings and
 * card-hours, read for all tenants and projects at once, are each scope's own (the same
 * numbers quota_load and bind_card_hours give one scope); and the window between the round's
 * read and its write: a job cancelled, its card bound by someone else or gone unhealthy, the
 * node cordoned, the victim ended in it - each decision skipped whole and counted stale, the
 * store consistent (`gpupool check`'s checks) - and threads submitting, cancelling and ending
 * jobs while rounds run.
 */
#include "apitest.h"

#include "../../src/check/check.h"
#include "../../src/core/gtime.h"
#include "../../src/core/strbuf.h"
#include "../../src/sched/jobs.h"
#include "../../src/sched/sched.h"
#include "../../src/sched/sched_metrics.h"
#include "../../src/sched/share.h"

#include <pthread.h>
#include <stdatomic.h>

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

/* n running jobs <prefix>0.. of t1/p1 at priority prio, job i alone on GPU-i since `since`
 * (+ i microseconds when stagger: the last is the newest). */
static void running(apitest *t, const char *prefix, int n, int prio, int64_t since,
                    int stagger) {
    for (int i = 0; i < n; i++) {
        char id[16], bid[20];
        snprintf(id, sizeof id, "%s%d", prefix, i);
        snprintf(bid, sizeof bid, "b-%s", id);
        int64_t at = since + (stagger ? i : 0);
        job(t, id, "t1", "p1", prio, 0, "running", at);
        binding(t, bid, id, i, "t1", "p1", 1000, at, 0);
    }
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
    running(&t, "v", 4, 10, now - 1000000, 1);
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


/* ---- the window between the round's read and its write ---- */

/* `gpupool check`'s gpu_exclusive and job_bindings hold, and no card has two open bindings. */
static void consistent(apitest *t) {
    check_report rep;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(check_run(t->st, &rep, &err), GP_OK);
    for (int i = 0; i < rep.n; i++) {
        const check_result *r = &rep.r[i];
        if (strcmp(r->name, "gpu_exclusive") && strcmp(r->name, "job_bindings")) continue;
        if (!r->ok) {
            char *txt = json_dumps(r->problems, 0);
            fprintf(stderr, "check %s: %s\n", r->name, txt);
            free(txt);
        }
        assert_true(r->ok);
    }
    check_report_release(&rep);
    assert_int_equal(one_int(t, "SELECT COUNT(*) FROM (SELECT gpu_uuid FROM bindings WHERE"
                                " end_us IS NULL GROUP BY gpu_uuid HAVING COUNT(*) > 1) x", NULL), 0);
}

static void exec_write(apitest *t, const char *sql) { at_sql(t, sql); }

typedef struct attack {
    apitest *t;
    const char *const *sql; /* run between the phases, in one write transaction each */
    const char *cancel;     /* a job jobs_cancel ends between the phases */
} attack;

static void between(void *arg) {
    attack *a = arg;
    for (int i = 0; a->sql && a->sql[i]; i++) exec_write(a->t, a->sql[i]);
    if (a->cancel) {
        gp_err err = GP_ERR_INIT;
        store_tx *tx;
        assert_int_equal(store_begin(a->t->st, STORE_WRITE, &tx, &err), GP_OK);
        assert_int_equal(jobs_cancel(tx, a->cancel, "test", &err), GP_OK);
        assert_int_equal(store_commit(tx, &err), GP_OK);
    }
}

static round_stats attacked_round(apitest *t, const char *const *sql, const char *cancel) {
    attack a = {t, sql, cancel};
    round_stats stats;
    gp_err err = GP_ERR_INIT;
    if (sched_run_between(t->st, between, &a, &stats, &err) != GP_OK)
        fail_msg("sched_run_between: %s", err.msg);
    return stats;
}

static long long stale_metric(void) {
    strbuf sb = SB_INIT;
    sched_metrics_render_rounds(&sb);
    const char *at = strstr(sb.buf, "\ngpupool_sched_decisions_stale_total ");
    long long v = at ? atoll(at + strlen("\ngpupool_sched_decisions_stale_total ")) : -1;
    assert_non_null(strstr(sb.buf, "gpupool_sched_round_phase_seconds_count{phase=\"write\"}"));
    sb_release(&sb);
    return v;
}

/* Three of the node's four cards run jobs; job q, queued, can only go to GPU-3. */
static void three_busy(apitest *t) {
    open_base(t);
    int64_t now = gt_now_us();
    running(t, "r", 3, 100, now - 1000000, 0);
    job(t, "q", "t2", "p2", 100, 0, "queued", now);
}

/* What changed in the window, and what the placement of q must make of it. */
static void placement_window(const char *const *sql, const char *cancel, int stale,
                             const char *q_state) {
    apitest t;
    three_busy(&t);
    sched_metrics_reset();
    round_stats rs = attacked_round(&t, sql, cancel);
    assert_int_equal(rs.stale, stale);
    assert_int_equal(rs.placed, !stale);
    assert_int_equal(stale_metric(), stale);
    char st[32], reason[240];
    at_job_state(&t, "q", st, reason);
    assert_string_equal(st, q_state);
    /* all of its rows or none */
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM bindings WHERE job_id = ?", "q"), !stale);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM job_events WHERE job_id = ? AND kind = 'placed'",
                             "q"), !stale);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM audit WHERE action = 'job.place'", NULL),
                     !stale);
    consistent(&t);
    /* the next round decides on the store as it is now: nothing stale */
    round_stats again;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(sched_run(t.st, &again, &err), GP_OK);
    assert_int_equal(again.stale, 0);
    assert_int_equal(again.placed, 0);
    consistent(&t);
    at_close(&t);
}

/* A round that writes for 200 jobs (one placed, the rest told why they wait) writes them in
 * batches (round.c, WRITE_BATCH: the writer is released in between); the next round, with
 * nothing new to say, opens no write transaction at all. */
static void writes_in_batches(void **state) {
    (void)state;
    apitest t;
    three_busy(&t);
    int64_t now = gt_now_us();
    for (int i = 0; i < 200; i++) {
        char id[16];
        snprintf(id, sizeof id, "w%03d", i);
        job(&t, id, "t2", "p2", 50, 0, "queued", now + i);
    }
    round_stats rs;
    gp_err err = GP_ERR_INIT;
    unsigned long long tx0 = store_write_tx_total();
    assert_int_equal(sched_run(t.st, &rs, &err), GP_OK);
    unsigned long long txs = store_write_tx_total() - tx0;
    assert_int_equal(rs.placed, 1);
    assert_int_equal(rs.stale, 0);
    assert_int_equal(rs.placed + rs.queued, 201);
    assert_true(txs >= 201 / 64 + 1);
    assert_true(txs <= 201 / 64 + 2);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM jobs WHERE id LIKE 'w%' AND reason = ''",
                             NULL), 0);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM jobs WHERE state = 'running'", NULL), 4);
    consistent(&t);
    tx0 = store_write_tx_total();
    assert_int_equal(sched_run(t.st, &rs, &err), GP_OK);
    assert_int_equal(rs.placed, 0);
    assert_int_equal(rs.stale, 0);
    assert_int_equal(store_write_tx_total() - tx0, 0);
    at_close(&t);
}

static void window_unrelated_change(void **state) {
    (void)state;
    /* a change the placement does not depend on: it goes through */
    static const char *const sql[] = {
        "INSERT INTO tenants (id, name, created_at) VALUES ('t9', 'other', 0)",
        "UPDATE gpus SET signals = '{\"temp\":40}' WHERE uuid = 'GPU-3'", NULL};
    placement_window(sql, NULL, 0, "running");
}

static void window_job_cancelled(void **state) {
    (void)state;
    placement_window(NULL, "q", 1, "cancelled");
}

static void window_card_bound_elsewhere(void **state) {
    (void)state;
    /* another round (another server's, say) bound GPU-3 to job x meanwhile */
    int64_t now = gt_now_us();
    char j[700], b[800];
    snprintf(j, sizeof j,
             "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
             " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
             " queued_at, started_at) VALUES ('x', 't3', 'p3', 'x', 'a100.1x', 1, 'normal', 100,"
             " 1, 0, 'requeue', 'u1', 'running', %lld, %lld, %lld)",
             (long long)now, (long long)now, (long long)now);
    snprintf(b, sizeof b,
             "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
             " tenant_id, project_id, tenant, project, start_us) VALUES ('xb', 'x', 0, 'GPU-3',"
             " 'a', 'NVIDIA A100-SXM4-80GB', 'whole', 1000, 't3', 'p3', 'green', 'lab', %lld)",
             (long long)now);
    const char *const sql[] = {j, b, NULL};
    placement_window(sql, NULL, 1, "queued");
}

/* The project's quota drops to 0 GPUs in the window: q was judged against the ceiling as
 * read, so its placement is stale (the crash test's `gpupool check` once found a project
 * over its lowered ceiling), and the next round keeps it waiting. */
static void window_quota_lowered(void **state) {
    (void)state;
    char sql[300];
    snprintf(sql, sizeof sql,
             "INSERT INTO quotas (tenant_id, project_id, spec, updated_at) VALUES ('t2', 'p2',"
             " '{\"gpus\":0}', %lld)",
             (long long)gt_now_us());
    const char *const change[] = {sql, NULL};
    placement_window(change, NULL, 1, "queued");
}

/* One change in the window that makes GPU-3 or its node no place for q: stale, q waits. */
static void window_card_or_node_unusable(void **state) {
    (void)state;
    static const char *const changes[] = {
        "UPDATE gpus SET health = 'failed' WHERE uuid = 'GPU-3'",       /* the card failed */
        "UPDATE gpus SET admin_state = 'cordoned' WHERE uuid = 'GPU-3'", /* ... cordoned */
        "UPDATE nodes SET admin_state = 'draining' WHERE name = 'a'",    /* the node drains */
        "UPDATE nodes SET state = 'unreachable' WHERE name = 'a'",       /* ... is lost */
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        const char *const sql[] = {changes[i], NULL};
        placement_window(sql, NULL, 1, "queued");
    }
}

/* Four running jobs of priority 10 fill the node; p (priority 100) may preempt: the round
 * stops the newest, v3 - which ends by itself in the window. */
static void window_victim_ended(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    int64_t now = gt_now_us();
    running(&t, "v", 4, 10, now - 1000000, 1);
    job(&t, "p", "t2", "p2", 100, 1, "queued", now + 10);
    sched_metrics_reset();
    static const char *const sql[] = {
        "UPDATE bindings SET end_us = 1, end_reason = 'completed' WHERE job_id = 'v3'",
        "UPDATE jobs SET state = 'succeeded', ended_at = 1 WHERE id = 'v3'", NULL};
    round_stats rs = attacked_round(&t, sql, NULL);
    assert_int_equal(rs.stale, 1);
    assert_int_equal(rs.preempted, 0);
    assert_int_equal(stale_metric(), 1);
    char st[32], reason[240];
    at_job_state(&t, "v3", st, reason);
    assert_string_equal(st, "succeeded"); /* not requeued over its own end */
    assert_int_equal(one_int(&t, "SELECT SUM(preemptions) FROM jobs", NULL), 0);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM audit WHERE action = 'job.preempt'", NULL), 0);
    consistent(&t);
    /* the card v3 freed is p's in the next round, nobody else stopped */
    round_stats again;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(sched_run(t.st, &again, &err), GP_OK);
    assert_int_equal(again.stale, 0);
    at_job_state(&t, "p", st, reason);
    assert_string_equal(st, "running");
    assert_int_equal(one_int(&t, "SELECT SUM(preemptions) FROM jobs", NULL), 0);
    consistent(&t);
    at_close(&t);
}

/* The victim moved: requeued (its node lost, say) and placed again by another round on
 * another card - "still running" but not where the round decided to stop it. */
static void window_victim_moved(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    at_sql(&t, "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, signals, updated_at)"
               " VALUES ('g4', 'GPU-4', 'n1', 4, 'NVIDIA A100-SXM4-80GB', 81920, '{}', 0)");
    at_sql(&t, "UPDATE gpus SET health = 'failed' WHERE uuid = 'GPU-4'");
    int64_t now = gt_now_us();
    running(&t, "v", 4, 10, now - 1000000, 1);
    job(&t, "p", "t2", "p2", 100, 1, "queued", now + 10);
    static const char *const sql[] = {
        "UPDATE bindings SET end_us = 1, end_reason = 'released' WHERE job_id = 'v3'",
        "UPDATE gpus SET health = 'healthy' WHERE uuid = 'GPU-4'",
        "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
        " tenant_id, project_id, tenant, project, start_us) VALUES ('b9', 'v3', 0, 'GPU-4', 'a',"
        " 'NVIDIA A100-SXM4-80GB', 'whole', 1000, 't1', 'p1', 'red', 'train', 2)",
        NULL};
    round_stats rs = attacked_round(&t, sql, NULL);
    assert_int_equal(rs.stale, 1);
    assert_int_equal(rs.preempted, 0);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM bindings WHERE job_id = 'v3' AND"
                                 " end_us IS NULL", NULL), 1);
    consistent(&t);
    at_close(&t);
}

/* ---- threads submitting, cancelling and ending jobs while rounds run ---- */

#define SUBMITTERS 4
#define PER_THREAD 25

typedef struct worker {
    store_t *st;
    int k;
    int failures;
} worker;

static int wexec(store_t *st, const char *sql, const char *types, const char *arg) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int rc = store_begin(st, STORE_WRITE, &tx, &err);
    if (rc) return rc;
    rc = store_exec(tx, NULL, &err, sql, types, arg);
    if (rc) {
        store_rollback(tx);
        return rc;
    }
    return store_commit(tx, &err);
}

static void *submitter(void *arg) {
    worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char id[32], sql[700];
        snprintf(id, sizeof id, "w%d-%d", w->k, i);
        int64_t now = gt_now_us();
        snprintf(sql, sizeof sql,
                 "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
                 " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
                 " queued_at) VALUES (?, 't%d', 'p%d', 'w', 'a100.1x', 1, 'normal', %d, 1, %d,"
                 " 'requeue', 'u1', 'queued', %lld, %lld)",
                 w->k % 3 + 1, w->k % 3 + 1, 100 + 10 * (i % 3), i % 5 == 0, (long long)now,
                 (long long)now);
        if (wexec(w->st, sql, "s", id)) w->failures++;
        /* every third: cancelled again soon after, whatever the scheduler made of it */
        if (i % 3 == 2) {
            char prev[32];
            snprintf(prev, sizeof prev, "w%d-%d", w->k, i - 1);
            gp_err err = GP_ERR_INIT;
            store_tx *tx;
            if (store_begin(w->st, STORE_WRITE, &tx, &err)) {
                w->failures++;
                continue;
            }
            int rc = jobs_cancel(tx, prev, "test", &err);
            if (rc == GP_ECONFLICT) store_rollback(tx); /* ended already */
            else if (rc || store_commit(tx, &err)) w->failures++;
        }
    }
    return NULL;
}

/* Ends running jobs (their workloads exit) while the others submit. */
static void *finisher(void *arg) {
    worker *w = arg;
    for (int i = 0; i < PER_THREAD * 2; i++) {
        gp_err err = GP_ERR_INIT;
        store_tx *tx;
        store_stmt *s;
        char id[64] = "";
        if (store_begin(w->st, STORE_WRITE, &tx, &err)) {
            w->failures++;
            continue;
        }
        int rc = store_query(tx, &s, &err, "SELECT id FROM jobs WHERE state = 'running'"
                                           " ORDER BY started_at LIMIT 1", "");
        if (!rc) {
            if (store_step(s, &err) > 0) snprintf(id, sizeof id, "%s", store_text(s, 0));
            store_done(s);
        }
        if (!rc && id[0])
            rc = store_exec(tx, NULL, &err, "UPDATE bindings SET end_us = ?, end_reason ="
                                            " 'completed' WHERE job_id = ? AND end_us IS NULL",
                            "is", gt_now_us(), id);
        if (!rc && id[0])
            rc = store_exec(tx, NULL, &err, "UPDATE jobs SET state = 'succeeded', ended_at = ?"
                                            " WHERE id = ?", "is", gt_now_us(), id);
        if (rc) {
            store_rollback(tx);
            w->failures++;
        } else if (store_commit(tx, &err))
            w->failures++;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Explains jobs and checks the leader's memory against the store while the others write and
 * rounds run: each check, at its own snapshot, must find the memory equal (issue 38). */
typedef struct explainer {
    store_t *st;
    atomic_int stop;
    int failures, checks;
} explainer;

static void *explain_main(void *arg) {
    explainer *x = arg;
    for (int i = 0; !atomic_load(&x->stop); i++) {
        char id[32];
        snprintf(id, sizeof id, "w%d-%d", i % SUBMITTERS, (i / SUBMITTERS) % PER_THREAD);
        gp_err err = GP_ERR_INIT;
        json_t *out = NULL;
        int rc = sched_explain(x->st, id, NULL, &out, &err);
        json_decref(out);
        if (rc && rc != GP_ECONFLICT && rc != GP_ENOTFOUND) x->failures++;
        if (i % 4 == 0) {
            int same = -1;
            gp_err e2 = GP_ERR_INIT;
            if (sched_cluster_verify(x->st, &same, &e2) != GP_OK || same != 1) x->failures++;
            x->checks++;
        }
    }
    return NULL;
}

static void rounds_while_threads_write(void **state) {
    (void)state;
    apitest t;
    t.dir = tu_mkdtemp();
    t.st = tu_store(t.dir, 8);
    for (int i = 0; BASE[i]; i++) at_sql(&t, BASE[i]);
    pthread_t th[SUBMITTERS + 1], xth;
    worker w[SUBMITTERS + 1];
    explainer x = {.st = t.st};
    atomic_init(&x.stop, 0);
    sched_metrics_reset();
    for (int i = 0; i <= SUBMITTERS; i++) {
        w[i] = (worker){t.st, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, i < SUBMITTERS ? submitter : finisher, &w[i]),
                         0);
    }
    assert_int_equal(pthread_create(&xth, NULL, explain_main, &x), 0);
    /* rounds as fast as they go until every writer is done (joined below), then to quiet */
    int rounds = 0, placed = 0;
    for (int alive = 1; alive; rounds++) {
        round_stats rs;
        gp_err err = GP_ERR_INIT;
        if (sched_run(t.st, &rs, &err) != GP_OK) fail_msg("sched_run: %s", err.msg);
        placed += rs.placed;
        alive = one_int(&t, "SELECT COUNT(*) FROM jobs WHERE id LIKE 'w%'", NULL) <
                    SUBMITTERS * PER_THREAD ||
                rounds < 5;
    }
    for (int i = 0; i <= SUBMITTERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    atomic_store(&x.stop, 1);
    pthread_join(xth, NULL);
    assert_int_equal(x.failures, 0);
    assert_true(x.checks > 0);
    for (int i = 0; i < 3; i++) round_once(&t);
    consistent(&t);
    {
        int same = -1;
        gp_err err = GP_ERR_INIT;
        assert_int_equal(sched_cluster_verify(t.st, &same, &err), GP_OK);
        assert_int_equal(same, 1);
    }
    assert_true(placed > 0);
    /* nothing cancelled was placed over its cancel; what runs is what the store's bindings
     * say, and no card holds two */
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM jobs j WHERE state = 'running' AND EXISTS"
                                 " (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND"
                                 " e.kind = 'cancelled')", NULL), 0);
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM jobs WHERE state = 'running'", NULL),
                     one_int(&t, "SELECT COUNT(DISTINCT job_id) FROM bindings WHERE end_us IS NULL",
                             NULL));
    at_close(&t);
}

/* ---- the cluster in the leader's memory (round.c; issue 38) ---- */

static int64_t cluster_v(apitest *t) {
    return one_int(t, "SELECT v FROM cluster_version WHERE id = 1", NULL);
}

static long long cluster_metric(const char *series) {
    strbuf sb = SB_INIT;
    sched_metrics_render_rounds(&sb);
    const char *at = strstr(sb.buf, series);
    long long v = at ? atoll(at + strlen(series)) : -1;
    sb_release(&sb);
    return v;
}

static void verify_same(apitest *t, int want) {
    gp_err err = GP_ERR_INIT;
    int same = -1;
    if (sched_cluster_verify(t->st, &same, &err) != GP_OK) fail_msg("verify: %s", err.msg);
    assert_int_equal(same, want);
}

/* Rounds reuse the cluster they read while nothing of it changed; every change a round reads
 * (node, card, class, tenant, project, pool, health policy) is seen by the next round, what
 * heartbeats and samples write is not a change, and the consistency check finds a copy that
 * went stale behind the version's back. */
static void cluster_in_memory(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    sched_metrics_reset();
    int64_t now = gt_now_us();
    job(&t, "q0", "t1", "p1", 100, 0, "queued", now);
    round_once(&t);
    expect_reason(&t, "q0", "running", "");
    round_once(&t);
    round_once(&t);
    assert_int_equal(cluster_metric("gpupool_sched_cluster_reads_total{source=\"store\"} "), 1);
    assert_int_equal(cluster_metric("gpupool_sched_cluster_reads_total{source=\"memory\"} "), 2);
    verify_same(&t, 1);
    /* what a heartbeat and the samples write moves nothing */
    int64_t v0 = cluster_v(&t);
    at_sql(&t, "UPDATE nodes SET last_heartbeat = 5, hostname = 'h'");
    at_sql(&t, "UPDATE gpus SET signals = '{\"temperature_c\":50}', updated_at = 7,"
               " health = 'healthy'");
    assert_int_equal(cluster_v(&t), v0);
    round_once(&t);
    assert_int_equal(cluster_metric("gpupool_sched_cluster_reads_total{source=\"store\"} "), 1);
    /* the node cordoned: the next round places nothing there */
    at_sql(&t, "UPDATE nodes SET admin_state = 'cordoned'");
    assert_true(cluster_v(&t) > v0);
    job(&t, "q1", "t2", "p2", 100, 0, "queued", now + 1);
    round_once(&t);
    expect_reason(&t, "q1", "admitted", "no_matching_gpu");
    at_sql(&t, "UPDATE nodes SET admin_state = 'none'");
    /* two cards failed, one cordoned: q1 takes the last */
    at_sql(&t, "UPDATE gpus SET health = 'failed' WHERE uuid IN ('GPU-1', 'GPU-2')");
    at_sql(&t, "UPDATE gpus SET admin_state = 'cordoned' WHERE uuid = 'GPU-3'");
    round_once(&t);
    expect_reason(&t, "q1", "admitted", "0 free now");
    at_sql(&t, "UPDATE gpus SET admin_state = 'none' WHERE uuid = 'GPU-3'");
    round_once(&t);
    expect_reason(&t, "q1", "running", "");
    assert_int_equal(one_int(&t, "SELECT COUNT(*) FROM bindings WHERE job_id = 'q1'"
                                 " AND gpu_uuid = 'GPU-3' AND end_us IS NULL", NULL), 1);
    /* a class created after the cluster was read: its job is placed (the failed cards back) */
    at_sql(&t, "UPDATE gpus SET health = 'healthy'");
    at_sql(&t, "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at)"
               " VALUES ('a100.2x', 'whole', 2, 1, 4, '[\"A100\"]', 0)");
    at_sql(&t, "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
               " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
               " queued_at) VALUES ('q2', 't3', 'p3', 'q2', 'a100.2x', 1, 'normal', 100, 1, 0,"
               " 'requeue', 'u1', 'queued', 0, 0)");
    round_once(&t);
    expect_reason(&t, "q2", "running", "");
    /* a tenant and project created, a pool closed to a tenant, the health policy changed:
     * each moves the version */
    int64_t v1 = cluster_v(&t);
    at_sql(&t, "INSERT INTO tenants (id, name, created_at) VALUES ('t4', 'gold', 0)");
    assert_true(cluster_v(&t) > v1);
    v1 = cluster_v(&t);
    at_sql(&t, "INSERT INTO projects (id, tenant_id, name, class, created_at)"
               " VALUES ('p5', 't4', 'x', 'research', 0)");
    assert_true(cluster_v(&t) > v1);
    v1 = cluster_v(&t);
    at_sql(&t, "UPDATE pools SET tenants = '[\"gold\"]' WHERE name = 'default'");
    assert_true(cluster_v(&t) > v1);
    v1 = cluster_v(&t);
    at_sql(&t, "UPDATE security_policy SET value = '{\"failed_gpu_allocatable\":false}'"
               " WHERE key = 'health_policy'");
    assert_true(cluster_v(&t) > v1);
    v1 = cluster_v(&t);
    at_sql(&t, "UPDATE security_policy SET value = value WHERE key = 'sensitive_operations'");
    assert_int_equal(cluster_v(&t), v1);
    round_once(&t);
    verify_same(&t, 1);
    /* a change the version missed (its trigger gone): the check finds the copy differs, and
     * reads the cluster again */
    if (!strcmp(store_backend(t.st), "postgres")) at_sql(&t, "DROP TRIGGER cluster_nodes_u ON nodes");
    else at_sql(&t, "DROP TRIGGER cluster_nodes_u");
    at_sql(&t, "UPDATE nodes SET cpus = 32");
    long long before = cluster_metric("\ngpupool_sched_cluster_mismatches_total ");
    verify_same(&t, 0);
    assert_int_equal(cluster_metric("\ngpupool_sched_cluster_mismatches_total "), before + 1);
    verify_same(&t, 1); /* (the fresh read was kept) */
    consistent(&t);
    at_close(&t);
}

/* A running job ends as its node would report it: its bindings closed, its state final. */
static void end_job(apitest *t, const char *id, const char *state) {
    char sql[300];
    long long now = (long long)gt_now_us();
    snprintf(sql, sizeof sql,
             "UPDATE bindings SET end_us = %lld, end_reason = 'completed' WHERE job_id = '%s'"
             " AND end_us IS NULL", now, id);
    at_sql(t, sql);
    snprintf(sql, sizeof sql, "UPDATE jobs SET state = '%s', ended_at = %lld WHERE id = '%s'",
             state, now, id);
    at_sql(t, sql);
}

/* The live jobs in the leader's memory: each round reads only the jobs stamped since (new,
 * ended, cancelled, reprioritised, their dependencies met), the rounds decide as a round
 * reading the whole queue would, and the check finds a change the stamps missed. */
static void queue_in_memory(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    sched_metrics_reset();
    int64_t now = gt_now_us();
    job(&t, "q0", "t2", "p2", 100, 0, "queued", now);
    job(&t, "q1", "t2", "p2", 100, 0, "queued", now + 1);
    round_once(&t); /* the queue read whole */
    expect_reason(&t, "q0", "running", "");
    expect_reason(&t, "q1", "running", "");
    /* three new jobs, two free cards: the first two by queue order */
    job(&t, "q2", "t2", "p2", 100, 0, "queued", now + 2);
    job(&t, "q3", "t2", "p2", 100, 0, "queued", now + 3);
    job(&t, "q4", "t2", "p2", 100, 0, "queued", now + 4);
    round_once(&t);
    expect_reason(&t, "q2", "running", "");
    expect_reason(&t, "q3", "running", "");
    expect_reason(&t, "q4", "admitted", "");
    /* q0 ends: q4 takes its card */
    end_job(&t, "q0", "succeeded");
    round_once(&t);
    expect_reason(&t, "q4", "running", "");
    /* q5 cancelled while it waits, q1 ends: q6 runs, not q5 */
    job(&t, "q5", "t2", "p2", 100, 0, "queued", now + 5);
    job(&t, "q6", "t2", "p2", 100, 0, "queued", now + 6);
    round_once(&t);
    at_sql(&t, "UPDATE jobs SET state = 'cancelled', ended_at = 1 WHERE id = 'q5'");
    end_job(&t, "q1", "succeeded");
    round_once(&t);
    expect_reason(&t, "q5", "cancelled", "");
    expect_reason(&t, "q6", "running", "");
    /* q8 raised above q7 while both wait, q2 ends: q8 runs first */
    job(&t, "q7", "t2", "p2", 100, 0, "queued", now + 7);
    job(&t, "q8", "t2", "p2", 100, 0, "queued", now + 8);
    round_once(&t);
    at_sql(&t, "UPDATE jobs SET priority = 500 WHERE id = 'q8'");
    end_job(&t, "q2", "succeeded");
    round_once(&t);
    expect_reason(&t, "q8", "running", "");
    expect_reason(&t, "q7", "admitted", "");
    /* q9 waits for q8 (ok): q3 ends, q7 runs and q9 waits; q8 succeeds, q9 runs */
    job(&t, "q9", "t2", "p2", 900, 0, "queued", now + 9);
    at_sql(&t, "INSERT INTO job_deps (job_id, dep_id, kind) VALUES ('q9', 'q8', 'ok')");
    end_job(&t, "q3", "succeeded");
    round_once(&t);
    expect_reason(&t, "q7", "running", "");
    expect_reason(&t, "q9", "queued", "");
    end_job(&t, "q8", "succeeded");
    round_once(&t);
    expect_reason(&t, "q9", "running", "");
    verify_same(&t, 1);
    assert_int_equal(cluster_metric("\ngpupool_sched_cluster_mismatches_total "), 0);
    consistent(&t);
    /* a change the stamps missed (its trigger gone): the check finds the memory differs */
    if (!strcmp(store_backend(t.st), "postgres")) at_sql(&t, "DROP TRIGGER jobs_chg_u ON jobs");
    else at_sql(&t, "DROP TRIGGER jobs_chg_u");
    at_sql(&t, "UPDATE jobs SET priority = 7 WHERE id = 'q9'");
    verify_same(&t, 0);
    assert_int_equal(cluster_metric("\ngpupool_sched_cluster_mismatches_total "), 1);
    verify_same(&t, 1);
    at_close(&t);
}

/* Fair use's half-life per pool (migration 31, share.h): each tenant's recent borrowing is
 * kept per pool and decays with its pool's half-life.  Blue borrowed a lot long ago in a pool
 * that forgets in 60 s, green less in one that keeps the policy's 6 h: blue has borrowed less
 * recently and is served first (one half-life for both would serve green); what blue then
 * borrows is recorded in its pool's row. */
static void fair_use_half_life_per_pool(void **state) {
    (void)state;
    apitest t;
    open_base(&t);
    int64_t now = gt_now_us(), ago = now - 600 * 1000000LL, R = 1000000000;
    char sql[400];
    at_sql(&t, "INSERT INTO pools (name, borrow_half_life_s, created_at) VALUES ('east', 60, 0)");
    snprintf(sql, sizeof sql,
             "INSERT INTO share_usage (tenant_id, pool, recent, borrowed, at_us) VALUES"
             " ('t2', 'east', %lld, 0, %lld), ('t3', 'default', %lld, 0, %lld)",
             (long long)R, (long long)ago, (long long)(R / 4), (long long)ago);
    at_sql(&t, sql);
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    quota_set q;
    assert_int_equal(store_begin(t.st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(quota_load(tx, "t1", NULL, &q, &err), GP_OK);
    q.guarantee = 4000; /* red: all 4 cards, 2 of them idle and lent */
    assert_int_equal(quota_save(tx, "t1", NULL, &q, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    running(&t, "r", 2, 100, now - 1000, 1);
    job(&t, "g1", "t3", "p3", 100, 0, "queued", now + 1); /* green first in the queue */
    job(&t, "g2", "t3", "p3", 100, 0, "queued", now + 2);
    job(&t, "b1", "t2", "p2", 100, 0, "queued", now + 3);
    job(&t, "b2", "t2", "p2", 100, 0, "queued", now + 4);
    int64_t blue, green;
    assert_int_equal(store_begin(t.st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(share_recent(tx, "t2", now, SHARE_HALF_LIFE_DEFAULT, &blue, &err), GP_OK);
    assert_int_equal(share_recent(tx, "t3", now, SHARE_HALF_LIFE_DEFAULT, &green, &err), GP_OK);
    store_rollback(tx);
    /* ten of east's half-lives; about 2 % of the policy's */
    assert_true(blue > R / 1024 - R / 100000 && blue < R / 1024 + R / 100000);
    assert_true(green > R / 4 * 97 / 100 && green < R / 4);
    round_once(&t);
    expect_reason(&t, "b1", "running", "running on a");
    expect_reason(&t, "b2", "running", "running on a");
    expect_reason(&t, "g1", "queued", "borrow_limit");
    round_once(&t); /* what blue borrows now is written to its pool's row */
    assert_int_equal(one_int(&t,
                             "SELECT borrowed FROM share_usage WHERE tenant_id = ?"
                             " AND pool = 'default'",
                             "t2"),
                     2000);
    assert_int_equal(one_int(&t, "SELECT borrowed FROM share_usage WHERE tenant_id = ? AND pool = 'east'", "t2"), 0);
    at_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preempts_once_through_the_store),
        cmocka_unit_test(every_scope_its_own_use),
        cmocka_unit_test(vendor_rules_through_the_store),
        cmocka_unit_test(writes_in_batches),
        cmocka_unit_test(window_unrelated_change),
        cmocka_unit_test(window_job_cancelled),
        cmocka_unit_test(window_card_bound_elsewhere),
        cmocka_unit_test(window_card_or_node_unusable),
        cmocka_unit_test(window_quota_lowered),
        cmocka_unit_test(window_victim_ended),
        cmocka_unit_test(window_victim_moved),
        cmocka_unit_test(rounds_while_threads_write),
        cmocka_unit_test(cluster_in_memory),
        cmocka_unit_test(queue_in_memory),
        cmocka_unit_test(fair_use_half_life_per_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
