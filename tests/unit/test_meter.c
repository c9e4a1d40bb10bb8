/*
 * test_meter.c - metering against hand-computed timelines.
 *
 * A store gets a fixed history (bindings and usage records at known
 * times, two rate-card versions, a GPU that fails), and each report is
 * compared with figures worked out by hand in the comments: window edges
 * cutting bindings, MIG and shared slices weighted, a running binding
 * counted up to "now", a rate card changing mid-hour (rollups bypassed
 * for that hour), idle capacity conserving allocated + idle = capacity,
 * filters by tenant and project, grouping by user, CSV.
 */
#include "testutil.h"

#include <math.h>

#include "../../src/core/gtime.h"
#include "../../src/core/rand.h"
#include "../../src/gateway/gateway.h"
#include "../../src/meter/meter.h"

#define H 3600000000LL
#define M 60000000LL
/* 2026-11-01T00:00:00Z */
#define T0 (1793491200LL * 1000000)

static store_t *st;
static char *dir;

static void exec(const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = store_exec(tx, NULL, &err, sql, "");
    if (rc) fprintf(stderr, "%s: %s\n", sql, err.msg);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void binding(const char *id, const char *job, const char *tenant, const char *project,
                    const char *model, const char *form, int weight, int64_t t0, int64_t t1) {
    char sql[1024], end[32];
    if (t1) snprintf(end, sizeof end, "%lld", (long long)t1);
    else snprintf(end, sizeof end, "NULL");
    snprintf(sql, sizeof sql,
             "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
             " tenant_id, project_id, tenant, project, start_us, end_us) VALUES ('%s','%s',0,"
             "'GPU-%s','n1','%s','%s',%d,'tid-%s','pid-%s','%s','%s',%lld,%s)",
             id, job, id, model, form, weight, tenant, project, tenant, project, (long long)t0, end);
    exec(sql);
}

static void usage(int64_t at, const char *tenant, const char *project, const char *key,
                  int64_t p, int64_t c) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    gw_usage u;
    memset(&u, 0, sizeof u);
    u.at_us = at;
    snprintf(u.tenant_id, sizeof u.tenant_id, "tid-%s", tenant);
    snprintf(u.project_id, sizeof u.project_id, "pid-%s", project);
    snprintf(u.tenant, sizeof u.tenant, "%s", tenant);
    snprintf(u.project, sizeof u.project, "%s", project);
    snprintf(u.key_id, sizeof u.key_id, "%s", key);
    snprintf(u.model, sizeof u.model, "llama");
    snprintf(u.accelerator, sizeof u.accelerator, "H100-80GB");
    snprintf(u.kind, sizeof u.kind, "chat");
    u.status = 200;
    u.prompt_tokens = p;
    u.completion_tokens = c;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(gw_usage_write(tx, &u, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void card(const char *json) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int v;
    json_t *spec = json_loads(json, 0, NULL);
    assert_non_null(spec);
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = meter_card_add(tx, spec, "admin", &v, &err);
    if (rc) fprintf(stderr, "card: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    json_decref(spec);
}

static int setup(void **state) {
    (void)state;
    rnd_init();
    dir = tu_mkdtemp();
    st = tu_store(dir, 2);
    exec("INSERT INTO users (id, name, created_at) VALUES ('u1','agent-n1',0)");
    exec("INSERT INTO tenants (id, name, created_at) VALUES ('tid-red','red',0),('tid-blue','blue',0)");
    exec("INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES"
         " ('pid-train','tid-red','train','development',0),('pid-web','tid-blue','web','production',0)");
    exec("INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
         " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
         " ('j1','tid-red','pid-train','a','c',1,'normal',100,1,0,'fail','alice','running',0,0),"
         " ('j2','tid-blue','pid-web','b','c',1,'normal',100,1,0,'fail','bob','running',0,0),"
         " ('j3','tid-red','pid-train','c','c',1,'normal',100,1,0,'fail','carol','running',0,0)");
    /* b1: a whole A100 from 00:30 to 02:30; b2: a quarter L40S slice from 01:00, still held;
     * b3: 3 of 7 MIG slices of an H100 from 23:00 the day before to 01:00 */
    binding("b1", "j1", "red", "train", "NVIDIA A100-SXM4-80GB", "whole", 1000, T0 + 30 * M, T0 + 150 * M);
    binding("b2", "j2", "blue", "web", "NVIDIA L40S", "shared:12/25", 250, T0 + H, 0);
    binding("b3", "j3", "red", "train", "NVIDIA H100 80GB HBM3", "mig:3g.40gb", 429, T0 - H, T0 + H);
    /* v1 from the day before; v2 from 01:30 doubles the A100 and output tokens */
    char c1[600], c2[600], ts[40];
    gt_format_us(T0 - 24 * H, ts, sizeof ts);
    snprintf(c1, sizeof c1,
             "{\"effective_from\":\"%s\",\"currency\":\"EUR\",\"card_hour\":["
             "{\"model\":\"A100-80GB\",\"form\":\"whole\",\"price\":2},"
             "{\"model\":\"L40S\",\"form\":\"shared\",\"price\":1},"
             "{\"model\":\"H100\",\"price\":3}],"
             "\"tokens\":[{\"model\":\"llama\",\"input\":1,\"output\":2}]}",
             ts);
    card(c1);
    gt_format_us(T0 + 90 * M, ts, sizeof ts);
    snprintf(c2, sizeof c2,
             "{\"effective_from\":\"%s\",\"currency\":\"EUR\",\"card_hour\":["
             "{\"model\":\"A100-80GB\",\"form\":\"whole\",\"price\":4},"
             "{\"model\":\"L40S\",\"form\":\"shared\",\"price\":1},"
             "{\"model\":\"H100\",\"price\":3}],"
             "\"tokens\":[{\"model\":\"llama\",\"input\":1,\"output\":3}]}",
             ts);
    card(c2);
    /* tokens: red at 00:10 and 01:45 (the hour of the change), blue at 02:10 */
    usage(T0 + 10 * M, "red", "train", "k-red", 1000, 500);
    usage(T0 + 105 * M, "red", "train", "k-red", 2000, 1000);
    usage(T0 + 130 * M, "blue", "web", "k-blue", 100, 100);
    /* capacity: a node registered the day before with two GPUs; the L40S fails at 02:00 */
    char sql[600];
    snprintf(sql, sizeof sql,
             "INSERT INTO nodes (id, name, agent_user_id, registered_at, last_heartbeat) VALUES"
             " ('n1','n1','u1',%lld,%lld)",
             (long long)(T0 - 24 * H), (long long)T0);
    exec(sql);
    exec("INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, updated_at) VALUES"
         " ('g1','GPU-A','n1',0,'NVIDIA A100-SXM4-80GB',81920,0),"
         " ('g2','GPU-L','n1',1,'NVIDIA L40S',49152,0)");
    snprintf(sql, sizeof sql,
             "INSERT INTO health_events (id, at, node, gpu_uuid, kind, from_state, to_state, cause)"
             " VALUES ('h1',%lld,'n1','GPU-L','health','healthy','failed','Xid 79')",
             (long long)(T0 + 2 * H));
    exec(sql);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    store_close(st);
    tu_rmdir(dir);
    return 0;
}

static json_t *report(int64_t from, int64_t to, int bucket, unsigned by, const char *tenant,
                      const char *project, int idle) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *out = NULL;
    meter_query q = {.from_us = from, .to_us = to, .now_us = T0 + 3 * H, .bucket = bucket,
                     .group_by = by, .tenant_id = tenant, .project_id = project, .idle = idle};
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    int rc = meter_report(tx, &q, &out, &err);
    if (rc) fprintf(stderr, "report: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    store_rollback(tx);
    return out;
}

/* The row of bucket start `b` (or any, b < 0) and tenant `t`. */
static json_t *row_of(json_t *rep, int64_t b, const char *t) {
    size_t i;
    json_t *r;
    char ts[40];
    gt_format_us(b, ts, sizeof ts);
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        const char *rb = json_string_value(json_object_get(r, "bucket"));
        const char *rt = json_string_value(json_object_get(r, "tenant"));
        if ((b < 0 || (rb && !strcmp(rb, ts))) && (!t || (rt && !strcmp(rt, t)))) return r;
    }
    return NULL;
}

static double num(json_t *r, const char *k) {
    assert_non_null(r);
    return json_number_value(json_object_get(r, k));
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

static void hourly_by_tenant(void **state) {
    (void)state;
    json_t *rep = report(T0, T0 + 3 * H, METER_BUCKET_HOUR, METER_BY_TENANT, NULL, NULL, 0);
    /* red 00-01: b1 half an hour (0.5) + b3 3/7-weighted hour (0.429) */
    NEAR(num(row_of(rep, T0, "red"), "card_hours"), 0.929);
    /* cost: 0.5 x 2 + 0.429 x 3 */
    NEAR(num(row_of(rep, T0, "red"), "card_hour_cost"), 1.0 + 1.287);
    /* red 01-02: b1 whole hour, priced 2 until 01:30 and 4 after: 1 + 2 */
    NEAR(num(row_of(rep, T0 + H, "red"), "card_hours"), 1.0);
    NEAR(num(row_of(rep, T0 + H, "red"), "card_hour_cost"), 3.0);
    /* red 02-03: b1 until 02:30 at 4 */
    NEAR(num(row_of(rep, T0 + 2 * H, "red"), "card_hours"), 0.5);
    NEAR(num(row_of(rep, T0 + 2 * H, "red"), "card_hour_cost"), 2.0);
    /* blue: the running quarter slice, up to now (03:00) */
    NEAR(num(row_of(rep, T0 + H, "blue"), "card_hours"), 0.25);
    NEAR(num(row_of(rep, T0 + 2 * H, "blue"), "card_hours"), 0.25);
    assert_null(row_of(rep, T0, "blue"));
    /* tokens: 00:10 at v1 (1000 x 1 + 500 x 2)/1e6; 01:45 at v2 (2000 x 1 + 1000 x 3)/1e6 */
    NEAR(num(row_of(rep, T0, "red"), "token_cost"), 0.002);
    assert_int_equal(num(row_of(rep, T0 + H, "red"), "prompt_tokens"), 2000);
    NEAR(num(row_of(rep, T0 + H, "red"), "token_cost"), 0.005);
    assert_int_equal(num(row_of(rep, T0 + 2 * H, "blue"), "requests"), 1);
    /* both versions used, in EUR */
    assert_int_equal(json_array_size(json_object_get(rep, "rate_cards")), 2);
    assert_string_equal(json_string_value(json_object_get(rep, "currency")), "EUR");
    json_t *tot = json_object_get(rep, "totals");
    NEAR(num(tot, "card_hours"), 0.929 + 1 + 0.5 + 0.25 + 0.25);
    assert_int_equal(num(tot, "prompt_tokens"), 3100);
    json_decref(rep);
}

static void window_edges(void **state) {
    (void)state;
    /* [00:15, 02:15), no buckets: b1 1.75 h, b3 0.75 x 0.429, b2 1.25 x 0.25;
     * tokens: the 01:45 and 02:10 records, not the 00:10 one */
    json_t *rep = report(T0 + 15 * M, T0 + 135 * M, METER_BUCKET_NONE, 0, NULL, NULL, 0);
    assert_int_equal(json_array_size(json_object_get(rep, "rows")), 1);
    json_t *r = row_of(rep, -1, NULL);
    NEAR(num(r, "card_hours"), 1.75 + 0.75 * 0.429 + 1.25 * 0.25);
    assert_int_equal(num(r, "requests"), 2);
    assert_int_equal(num(r, "prompt_tokens"), 2100);
    assert_int_equal(num(r, "completion_tokens"), 1100);
    json_decref(rep);
    /* a window entirely in the future of "now" holds nothing */
    rep = report(T0 + 4 * H, T0 + 5 * H, METER_BUCKET_NONE, 0, NULL, NULL, 0);
    assert_int_equal(json_array_size(json_object_get(rep, "rows")), 0);
    json_decref(rep);
}

static void filters_and_users(void **state) {
    (void)state;
    json_t *rep = report(T0, T0 + 3 * H, METER_BUCKET_NONE, METER_BY_USER | METER_BY_PROJECT,
                         "tid-red", NULL, 0);
    size_t i;
    json_t *r;
    double alice = 0, carol = 0;
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        const char *u = json_string_value(json_object_get(r, "user"));
        assert_string_equal(json_string_value(json_object_get(r, "project")), "train");
        if (u && !strcmp(u, "alice")) alice += num(r, "card_hours");
        if (u && !strcmp(u, "carol")) carol += num(r, "card_hours");
        assert_false(u && !strcmp(u, "bob")); /* another tenant's */
    }
    NEAR(alice, 2.0);
    NEAR(carol, 0.429);
    assert_non_null(json_object_get(json_object_get(rep, "billing"), "red"));
    assert_null(json_object_get(json_object_get(rep, "billing"), "blue"));
    json_decref(rep);
    rep = report(T0, T0 + 3 * H, METER_BUCKET_NONE, 0, "tid-blue", "pid-web", 0);
    NEAR(num(row_of(rep, -1, NULL), "card_hours"), 0.5);
    json_decref(rep);
}

static void idle_conserves(void **state) {
    (void)state;
    /* capacity: A100 3 h + L40S 2 h (failed at 02:00) = 5; allocated 2.929 (b3's H100 is not
     * in the inventory, but it was held) -> idle 2.071 */
    json_t *rep = report(T0, T0 + 3 * H, METER_BUCKET_NONE, METER_BY_TENANT, NULL, NULL, 1);
    json_t *cap = json_object_get(rep, "capacity");
    NEAR(num(cap, "card_hours"), 5.0);
    NEAR(num(cap, "allocated"), 2.929);
    NEAR(num(cap, "idle"), 5.0 - 2.929);
    NEAR(num(cap, "allocated") + num(cap, "idle"), num(cap, "card_hours"));
    NEAR(num(row_of(rep, -1, "(idle)"), "card_hours"), 5.0 - 2.929);
    json_decref(rep);
}

static void csv(void **state) {
    (void)state;
    json_t *rep = report(T0, T0 + 3 * H, METER_BUCKET_HOUR, METER_BY_TENANT, NULL, NULL, 0);
    char *text = meter_report_csv(rep);
    assert_non_null(text);
    assert_true(!strncmp(text, "bucket,tenant,card_hours,card_hour_cost,requests,", 49));
    assert_non_null(strstr(text, ",billing\r\n"));
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 1 + (int)json_array_size(json_object_get(rep, "rows")));
    assert_non_null(strstr(text, "2026-11-01T01:00:00.000000Z,red,1.000000,3.000000,"));
    free(text);
    json_decref(rep);
}

static void cards_and_parsing(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int v;
    /* not after the latest version, or in another currency: refused */
    json_t *old = json_pack("{s:s,s:s}", "effective_from", "2020-01-01T00:00:00Z", "currency", "EUR");
    json_t *usd = json_pack("{s:s,s:s}", "effective_from", "2030-01-01T00:00:00Z", "currency", "USD");
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(meter_card_add(tx, old, "admin", &v, &err), GP_EINVALID);
    assert_int_equal(meter_card_add(tx, usd, "admin", &v, &err), GP_EINVALID);
    store_rollback(tx);
    json_decref(old);
    json_decref(usd);
    const char *bad[] = {"{\"effective_from\":\"x\",\"currency\":\"EUR\"}",
                         "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"euro\"}",
                         "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"card_hour\":[{\"model\":\"A\",\"price\":-1}]}",
                         "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"card_hour\":[{\"model\":\"A\",\"form\":\"half\",\"price\":1}]}",
                         "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"tokens\":[{\"model\":\"m\",\"input\":1}]}",
                         "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"extra\":1}",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        meter_rate_card c;
        assert_int_equal(meter_card_parse(j, &c, &err), GP_EINVALID);
        json_decref(j);
    }
    unsigned by;
    assert_int_equal(meter_group_parse("tenant,key", &by, &err), GP_OK);
    assert_int_equal(by, METER_BY_TENANT | METER_BY_KEY);
    assert_int_equal(meter_group_parse("tenant,galaxy", &by, &err), GP_EINVALID);
    int64_t a, b;
    assert_int_equal(meter_month_range("2026-11", &a, &b, &err), GP_OK);
    assert_int_equal(a, T0);
    assert_int_equal(b - a, 30 * 24 * H);
    assert_int_equal(meter_month_range("2026-13", &a, &b, &err), GP_EINVALID);
    assert_int_equal(meter_bucket_start(T0 + 40 * 24 * H, METER_BUCKET_MONTH), T0 + 30 * 24 * H);
}

/* CPU and memory rates, and idle cards priced for the platform (issue 42, item 5): a later
 * window with a card of its own, so the figures above stay as they were. */
static void host_and_idle_priced(void **state) {
    (void)state;
    char sql[800], ts[40];
    /* v3 from 05:00: A100 5, H100 3 per card-hour, a CPU-hour 0.5, a GiB-hour 0.01 */
    gt_format_us(T0 + 5 * H, ts, sizeof ts);
    snprintf(sql, sizeof sql,
             "{\"effective_from\":\"%s\",\"currency\":\"EUR\",\"card_hour\":["
             "{\"model\":\"A100-80GB\",\"form\":\"whole\",\"price\":5},"
             "{\"model\":\"H100\",\"price\":3}],\"cpu_hour\":0.5,\"memory_gib_hour\":0.01}",
             ts);
    card(sql);
    /* j4: class big (a unit of 2 whole cards, 8 CPUs and 32 GiB), one unit on two H100s from
     * 10:00 to 12:00: each card carries 4 CPUs and 16 GiB */
    exec("INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at) VALUES"
         " ('big','whole',2,8,32,'[\"H100\"]',0)");
    exec("INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
         " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
         " ('j4','tid-red','pid-train','d','big',1,'normal',100,1,0,'fail','dave','running',0,0)");
    exec("INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, updated_at) VALUES"
         " ('g3','GPU-H1','n1',2,'NVIDIA H100 80GB HBM3',81920,0),"
         " ('g4','GPU-H2','n1',3,'NVIDIA H100 80GB HBM3',81920,0)");
    binding("b4", "j4", "red", "train", "NVIDIA H100 80GB HBM3", "whole", 1000, T0 + 10 * H, T0 + 12 * H);
    binding("b5", "j4", "red", "train", "NVIDIA H100 80GB HBM3", "whole", 1000, T0 + 10 * H, T0 + 12 * H);
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *rep = NULL;
    meter_query q = {.from_us = T0 + 10 * H, .to_us = T0 + 13 * H, .now_us = T0 + 13 * H,
                     .bucket = METER_BUCKET_NONE, .group_by = METER_BY_TENANT, .idle = 1};
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(meter_report(tx, &q, &rep, &err), GP_OK);
    store_rollback(tx);
    json_t *red = row_of(rep, -1, "red"), *idle = row_of(rep, -1, "(idle)");
    /* 2 cards x 2 h x 3 = 12; 8 CPUs x 2 h = 16 CPU-hours x 0.5 = 8; 32 GiB x 2 h = 64 x 0.01 */
    NEAR(num(red, "card_hours"), 4.0);
    NEAR(num(red, "card_hour_cost"), 12.0);
    NEAR(num(red, "cpu_hours"), 16.0);
    NEAR(num(red, "cpu_cost"), 8.0);
    NEAR(num(red, "memory_gib_hours"), 64.0);
    NEAR(num(red, "memory_cost"), 0.64);
    NEAR(num(red, "cost"), 20.64);
    /* blue's shared slice (class unknown here: no CPUs) asks for none */
    NEAR(num(row_of(rep, -1, "blue"), "cpu_hours"), 0);
    /* capacity 9 h (the A100 3, two H100s 6; the L40S failed at 02:00), held 4 + 0.75 (blue
     * still holds a quarter of the failed L40S) -> idle 4.25 h, the platform's.  Each model's
     * own idle time prices it: the A100 3 h x 5 and the H100s 2 h x 3, 21 for 5 h -> 4.25 h
     * at 4.2 */
    NEAR(num(idle, "card_hours"), 4.25);
    NEAR(num(idle, "card_hour_cost"), 17.85);
    NEAR(num(idle, "cost"), 17.85);
    NEAR(num(json_object_get(rep, "capacity"), "idle_cost"), 17.85);
    /* the totals are the tenants': without the idle cards */
    json_t *tot = json_object_get(rep, "totals");
    NEAR(num(tot, "cpu_hours"), 16.0);
    NEAR(num(tot, "memory_cost"), 0.64);
    NEAR(num(tot, "cost"), 20.64);
    char *text = meter_report_csv(rep);
    assert_non_null(text);
    assert_non_null(strstr(text, "tenant,card_hours,card_hour_cost,cpu_hours,cpu_cost,"
                                 "memory_gib_hours,memory_cost,requests,"));
    free(text);
    json_decref(rep);
    /* bad host prices are refused */
    const char *bad[] = {
        "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"cpu_hour\":-1}",
        "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"cpu_hour\":\"1\"}",
        "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"memory_gib_hour\":2e6}",
        "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"memory_gib_hour\":null}",
        NULL};
    for (int i = 0; bad[i]; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        meter_rate_card c;
        assert_non_null(j);
        assert_int_equal(meter_card_parse(j, &c, &err), GP_EINVALID);
        json_decref(j);
    }
    json_t *j = json_loads("{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\","
                           "\"cpu_hour\":0.25}", 0, NULL);
    meter_rate_card c;
    assert_int_equal(meter_card_parse(j, &c, &err), GP_OK);
    json_decref(j);
    json_t *cj = meter_card_json(&c);
    NEAR(num(cj, "cpu_hour"), 0.25);
    NEAR(num(cj, "memory_gib_hour"), 0);
    json_decref(cj);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hourly_by_tenant), cmocka_unit_test(window_edges),
        cmocka_unit_test(filters_and_users), cmocka_unit_test(idle_conserves),
        cmocka_unit_test(csv), cmocka_unit_test(cards_and_parsing),
        cmocka_unit_test(host_and_idle_priced),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
