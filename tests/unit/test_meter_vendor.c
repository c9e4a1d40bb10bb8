/*
 * test_meter_vendor.c - metering across accelerator vendors: rate-card
 * prices by model, vendor and default (most specific wins), the rate
 * card's validation attacked with bad vendors and unbounded prices, and
 * reports grouped and filtered by vendor and accelerator against a
 * hand-computed timeline (NVIDIA, AMD and Intel Gaudi bindings), with a
 * tenant's report never showing another tenant's vendor rows.
 */
#include "testutil.h"

#include <math.h>

#include "../../src/core/gtime.h"
#include "../../src/core/rand.h"
#include "../../src/gateway/gateway.h"
#include "../../src/meter/meter.h"

#define H 3600000000LL
/* 2026-11-01T00:00:00Z */
#define T0 (1793491200LL * 1000000)
#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

static store_t *st;
static char *dir;

/* ---- pricing (pure) ---- */

static meter_rate_card *parse_ok(const char *card_hour) {
    char text[4096];
    snprintf(text, sizeof text,
             "{\"effective_from\":\"2026-11-01T00:00:00Z\",\"currency\":\"EUR\",\"card_hour\":%s}",
             card_hour);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    meter_rate_card *c = malloc(sizeof *c);
    gp_err err = GP_ERR_INIT;
    int rc = meter_card_parse(j, c, &err);
    if (rc) fprintf(stderr, "parse: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    json_decref(j);
    return c;
}

static void most_specific_wins(void **state) {
    (void)state;
    meter_rate_card *c = parse_ok(
        "[{\"price\":1},"                                         /* the default */
        " {\"vendor\":\"amd\",\"price\":3},"                      /* any AMD card */
        " {\"vendor\":\"amd\",\"form\":\"mig\",\"price\":2},"     /* AMD partitions */
        " {\"vendor\":\"nvidia\",\"price\":4},"
        " {\"model\":\"MI300X\",\"price\":5},"                    /* the model, any vendor */
        " {\"model\":\"MI300X\",\"vendor\":\"amd\",\"form\":\"mig\",\"price\":6},"
        " {\"model\":\"H100\",\"form\":\"whole\",\"price\":7},"
        " {\"model\":\"H100-80GB\",\"form\":\"whole\",\"price\":8}]");
    /* model beats vendor beats default */
    NEAR(meter_card_hour_price(c, "amd", "AMD Instinct MI300X", "whole"), 5);
    NEAR(meter_card_hour_price(c, "amd", "AMD Instinct MI250X", "whole"), 3);
    NEAR(meter_card_hour_price(c, "intel", "HL-325L", "whole"), 1);
    /* the model with the vendor and form named beats the model alone */
    NEAR(meter_card_hour_price(c, "amd", "AMD Instinct MI300X", "mig:cpx.24gb"), 6);
    /* at the vendor level an exact form beats "*" */
    NEAR(meter_card_hour_price(c, "amd", "AMD Instinct MI210", "mig:cpx.16gb"), 2);
    /* vendor-only prices do not reach another vendor's card */
    NEAR(meter_card_hour_price(c, "nvidia", "NVIDIA L40S", "shared:12/25"), 4);
    /* a model-level price beats the vendor's even for the vendor's own card */
    NEAR(meter_card_hour_price(c, "nvidia", "NVIDIA H100 80GB HBM3", "whole"), 8); /* longer name */
    NEAR(meter_card_hour_price(c, "nvidia", "NVIDIA H100 PCIe", "whole"), 7);
    /* the form of a model price must match: a MIG H100 falls back to the vendor's price */
    NEAR(meter_card_hour_price(c, "nvidia", "NVIDIA H100 PCIe", "mig:3g.40gb"), 4);
    /* no vendor recorded (rows before vendors): NVIDIA */
    NEAR(meter_card_hour_price(c, "", "NVIDIA A100", "whole"), 4);
    NEAR(meter_card_hour_price(c, NULL, "NVIDIA A100", "whole"), 4);
    free(c);
    /* without a default, an unmatched card is unpriced */
    c = parse_ok("[{\"vendor\":\"amd\",\"price\":3},{\"model\":\"A100\",\"price\":2}]");
    assert_true(meter_card_hour_price(c, "intel", "HL-225", "whole") < 0);
    assert_true(meter_card_hour_price(c, "nvidia", "NVIDIA L4", "whole") < 0);
    NEAR(meter_card_hour_price(c, "nvidia", "NVIDIA A100-SXM4-40GB", "whole"), 2);
    /* a model price naming a vendor does not price another vendor's card of that name */
    free(c);
    c = parse_ok("[{\"model\":\"X1\",\"vendor\":\"intel\",\"price\":9}]");
    assert_true(meter_card_hour_price(c, "amd", "X1", "whole") < 0);
    NEAR(meter_card_hour_price(c, "intel", "X1", "whole"), 9);
    free(c);
    /* prices given in any order: the same answer */
    c = parse_ok("[{\"model\":\"MI300X\",\"vendor\":\"amd\",\"price\":5},{\"vendor\":\"amd\",\"price\":3},"
                 "{\"price\":1}]");
    meter_rate_card *r = parse_ok("[{\"price\":1},{\"vendor\":\"amd\",\"price\":3},"
                                  "{\"model\":\"MI300X\",\"vendor\":\"amd\",\"price\":5}]");
    NEAR(meter_card_hour_price(c, "amd", "MI300X", "whole"), meter_card_hour_price(r, "amd", "MI300X", "whole"));
    NEAR(meter_card_hour_price(c, "amd", "MI210", "whole"), 3);
    NEAR(meter_card_hour_price(r, "amd", "MI210", "whole"), 3);
    free(c);
    free(r);
}

static void json_round_trip(void **state) {
    (void)state;
    meter_rate_card *c = parse_ok("[{\"vendor\":\"intel\",\"price\":2.5},{\"model\":\"MI300X\",\"price\":5}]");
    json_t *j = meter_card_json(c);
    json_t *p0 = json_array_get(json_object_get(j, "card_hour"), 0);
    json_t *p1 = json_array_get(json_object_get(j, "card_hour"), 1);
    assert_string_equal(json_string_value(json_object_get(p0, "vendor")), "intel");
    assert_string_equal(json_string_value(json_object_get(p0, "model")), "*");
    assert_null(json_object_get(p1, "vendor")); /* any vendor: not named */
    /* what a listing shows parses back to the same prices */
    json_object_del(j, "version");
    gp_err err = GP_ERR_INIT;
    meter_rate_card *back = malloc(sizeof *back);
    assert_int_equal(meter_card_parse(j, back, &err), GP_OK);
    NEAR(meter_card_hour_price(back, "intel", "HL-325L", "whole"), 2.5);
    NEAR(meter_card_hour_price(back, "amd", "AMD Instinct MI300X", "whole"), 5);
    json_decref(j);
    free(back);
    free(c);
}

static void validation_attacks(void **state) {
    (void)state;
    static const char *const bad[] = {
        "[{\"vendor\":\"AMD\",\"price\":1}]",            /* names are lower-case */
        "[{\"vendor\":\"arm\",\"price\":1}]",            /* unknown vendor */
        "[{\"vendor\":\"\",\"price\":1}]",
        "[{\"vendor\":\"nvidia \",\"price\":1}]",
        "[{\"vendor\":7,\"price\":1}]",                  /* not a string */
        "[{\"vendor\":[\"amd\"],\"price\":1}]",
        "[{\"vendor\":\"amd\",\"price\":-0.01}]",        /* negative */
        "[{\"vendor\":\"amd\",\"price\":1000001}]",      /* absurd: over the bound */
        "[{\"vendor\":\"amd\",\"price\":1e300}]",
        "[{\"vendor\":\"amd\",\"price\":\"5\"}]",        /* a string, not a number */
        "[{\"vendor\":\"amd\",\"price\":true}]",
        "[{\"vendor\":\"amd\",\"price\":null}]",
        "[{\"vendor\":\"amd\"}]",                        /* no price */
        "[{\"vendor\":\"amd\",\"price\":1},{\"vendor\":\"amd\",\"price\":2}]", /* twice */
        "[{\"price\":1},{\"model\":\"*\",\"vendor\":\"*\",\"form\":\"*\",\"price\":2}]",
        "[{\"model\":\"mi300x\",\"vendor\":\"amd\",\"price\":1},{\"model\":\"MI300X\",\"vendor\":\"amd\",\"price\":2}]",
        "[{\"vendor\":\"amd\",\"form\":\"partition\",\"price\":1}]", /* unknown form */
        "[{\"vendor\":\"amd\",\"region\":\"eu\",\"price\":1}]",      /* unknown field */
        "[{\"model\":\"\",\"price\":1}]",
        "[{\"model\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"price\":1}]",
        "[\"amd\"]",
        "{\"vendor\":\"amd\",\"price\":1}",
        NULL};
    gp_err err = GP_ERR_INIT;
    for (int i = 0; bad[i]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\",\"card_hour\":%s}",
                 bad[i]);
        json_t *j = json_loads(text, 0, NULL);
        meter_rate_card *c = malloc(sizeof *c);
        if (j && meter_card_parse(j, c, &err) != GP_EINVALID) fail_msg("accepted: %s", bad[i]);
        free(c);
        json_decref(j);
    }
    /* token prices are bounded too */
    json_t *j = json_loads("{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\","
                           "\"tokens\":[{\"model\":\"m\",\"input\":1,\"output\":2000000}]}", 0, NULL);
    meter_rate_card *c = malloc(sizeof *c);
    assert_int_equal(meter_card_parse(j, c, &err), GP_EINVALID);
    json_decref(j);
    /* the bounds themselves are accepted */
    j = json_loads("{\"effective_from\":\"2030-01-01T00:00:00Z\",\"currency\":\"EUR\","
                   "\"card_hour\":[{\"vendor\":\"intel\",\"price\":1000000},{\"price\":0}],"
                   "\"tokens\":[{\"model\":\"m\",\"input\":0,\"output\":1000000}]}", 0, NULL);
    assert_int_equal(meter_card_parse(j, c, &err), GP_OK);
    json_decref(j);
    free(c);
    assert_true(meter_vendor_valid("nvidia") && meter_vendor_valid("amd") && meter_vendor_valid("intel"));
    assert_false(meter_vendor_valid("Intel") || meter_vendor_valid("gaudi") || meter_vendor_valid("") ||
                 meter_vendor_valid(NULL) || meter_vendor_valid("*"));
    unsigned by;
    assert_int_equal(meter_group_parse("vendor,accelerator,tenant", &by, &err), GP_OK);
    assert_int_equal(by, METER_BY_VENDOR | METER_BY_ACCEL | METER_BY_TENANT);
    assert_int_equal(meter_group_parse("vendors", &by, &err), GP_EINVALID);
}

/* ---- reports (the store) ---- */

static void exec(const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = store_exec(tx, NULL, &err, sql, "");
    if (rc) fprintf(stderr, "%s: %s\n", sql, err.msg);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static void binding(const char *id, const char *tenant, const char *vendor, const char *model,
                    const char *form, int weight, int64_t t0, int64_t t1) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
             " tenant_id, project_id, tenant, project, start_us, end_us, vendor) VALUES ('%s','j-%s',0,"
             "'GPU-%s','n1','%s','%s',%d,'tid-%s','pid-%s','%s','p',%lld,%lld,'%s')",
             id, tenant, id, model, form, weight, tenant, tenant, tenant, (long long)t0, (long long)t1,
             vendor);
    exec(sql);
}

static void usage(int64_t at, const char *tenant, const char *accel, int64_t p, int64_t c) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    gw_usage u;
    memset(&u, 0, sizeof u);
    u.at_us = at;
    snprintf(u.tenant_id, sizeof u.tenant_id, "tid-%s", tenant);
    snprintf(u.project_id, sizeof u.project_id, "pid-%s", tenant);
    snprintf(u.tenant, sizeof u.tenant, "%s", tenant);
    snprintf(u.project, sizeof u.project, "p");
    snprintf(u.key_id, sizeof u.key_id, "k-%s", tenant);
    snprintf(u.model, sizeof u.model, "llama");
    snprintf(u.accelerator, sizeof u.accelerator, "%s", accel);
    snprintf(u.kind, sizeof u.kind, "chat");
    u.status = 200;
    u.prompt_tokens = p;
    u.completion_tokens = c;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(gw_usage_write(tx, &u, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static int setup(void **state) {
    (void)state;
    rnd_init();
    dir = tu_mkdtemp();
    st = tu_store(dir, 2);
    exec("INSERT INTO users (id, name, created_at) VALUES ('u1','agent-n1',0)");
    exec("INSERT INTO tenants (id, name, created_at) VALUES ('tid-red','red',0),('tid-blue','blue',0)");
    exec("INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES"
         " ('pid-red','tid-red','p','development',0),('pid-blue','tid-blue','p','development',0)");
    exec("INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
         " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
         " ('j-red','tid-red','pid-red','a','c',1,'normal',100,1,0,'fail','alice','running',0,0),"
         " ('j-blue','tid-blue','pid-blue','b','c',1,'normal',100,1,0,'fail','bob','running',0,0)");
    /* red: a whole MI300X 00:00-02:00 (2 h amd), a whole H100 00:00-01:00 (1 h nvidia);
     * blue: an eighth of an MI300X (a CPX partition) 00:00-04:00 (0.5 h amd), a whole Gaudi 3
     * 01:00-03:00 (2 h intel) */
    binding("a1", "red", "amd", "AMD Instinct MI300X", "whole", 1000, T0, T0 + 2 * H);
    binding("n1", "red", "nvidia", "NVIDIA H100 80GB HBM3", "whole", 1000, T0, T0 + H);
    binding("a2", "blue", "amd", "AMD Instinct MI300X", "mig:cpx.24gb", 125, T0, T0 + 4 * H);
    binding("i1", "blue", "intel", "HL-325L", "whole", 1000, T0 + H, T0 + 3 * H);
    /* MI300X 5, any other AMD 3, NVIDIA 4, anything else (the Gaudi) 1; tokens 1 per million */
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int v;
    json_t *spec = json_loads(
        "{\"effective_from\":\"2026-10-01T00:00:00Z\",\"currency\":\"EUR\",\"card_hour\":["
        "{\"model\":\"MI300X\",\"vendor\":\"amd\",\"price\":5},{\"vendor\":\"amd\",\"price\":3},"
        "{\"vendor\":\"nvidia\",\"price\":4},{\"price\":1}],"
        "\"tokens\":[{\"model\":\"*\",\"input\":1,\"output\":1}]}",
        0, NULL);
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(meter_card_add(tx, spec, "admin", &v, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    json_decref(spec);
    /* tokens: red's served on an MI300X endpoint, blue's on an external one */
    usage(T0 + H / 2, "red", "MI300X", 1000, 1000);
    usage(T0 + H / 2, "blue", "", 500, 500);
    /* the inventory: a node since the day before with two MI300X, an H100 and a Gaudi 3 */
    char sql[600];
    snprintf(sql, sizeof sql,
             "INSERT INTO nodes (id, name, agent_user_id, registered_at, last_heartbeat) VALUES"
             " ('n1','n1','u1',%lld,%lld)",
             (long long)(T0 - 24 * H), (long long)T0);
    exec(sql);
    exec("INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, updated_at, vendor) VALUES"
         " ('g1','GPU-A0','n1',0,'AMD Instinct MI300X',196608,0,'amd'),"
         " ('g2','GPU-A1','n1',1,'AMD Instinct MI300X',196608,0,'amd'),"
         " ('g3','GPU-N0','n1',2,'NVIDIA H100 80GB HBM3',81920,0,'nvidia'),"
         " ('g4','GPU-I0','n1',3,'HL-325L',131072,0,'intel')");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    store_close(st);
    tu_rmdir(dir);
    return 0;
}

static json_t *report(unsigned by, const char *tenant, const char *vendor, const char *accel,
                      int idle) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *out = NULL;
    meter_query q = {.from_us = T0, .to_us = T0 + 4 * H, .now_us = T0 + 4 * H,
                     .bucket = METER_BUCKET_NONE, .group_by = by, .tenant_id = tenant,
                     .vendor = vendor, .accelerator = accel, .idle = idle};
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    int rc = meter_report(tx, &q, &out, &err);
    if (rc) fprintf(stderr, "report: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    store_rollback(tx);
    return out;
}

/* The row whose `k` is `v` (and tenant `t` when given). */
static json_t *row(json_t *rep, const char *k, const char *v, const char *t) {
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        const char *rv = json_string_value(json_object_get(r, k));
        const char *rt = json_string_value(json_object_get(r, "tenant"));
        if (rv && !strcmp(rv, v) && (!t || (rt && !strcmp(rt, t)))) return r;
    }
    return NULL;
}

static double num(json_t *r, const char *k) {
    assert_non_null(r);
    return json_number_value(json_object_get(r, k));
}

static void by_vendor(void **state) {
    (void)state;
    json_t *rep = report(METER_BY_VENDOR, NULL, NULL, NULL, 0);
    /* amd: 2 h at 5 + 0.5 h at 5 (a partition of an MI300X is priced as the MI300X) */
    NEAR(num(row(rep, "vendor", "amd", NULL), "card_hours"), 2.5);
    NEAR(num(row(rep, "vendor", "amd", NULL), "card_hour_cost"), 12.5);
    NEAR(num(row(rep, "vendor", "nvidia", NULL), "card_hours"), 1.0);
    NEAR(num(row(rep, "vendor", "nvidia", NULL), "card_hour_cost"), 4.0);
    NEAR(num(row(rep, "vendor", "intel", NULL), "card_hours"), 2.0);
    NEAR(num(row(rep, "vendor", "intel", NULL), "card_hour_cost"), 2.0); /* the default */
    /* tokens: red's on an MI300X endpoint count as amd; blue's external ones as no vendor */
    assert_int_equal(num(row(rep, "vendor", "amd", NULL), "prompt_tokens"), 1000);
    assert_int_equal(num(row(rep, "vendor", "", NULL), "prompt_tokens"), 500);
    assert_int_equal(json_array_size(json_object_get(rep, "rows")), 4);
    json_t *by = json_object_get(rep, "group_by");
    assert_string_equal(json_string_value(json_array_get(by, 0)), "vendor");
    NEAR(num(json_object_get(rep, "totals"), "card_hours"), 5.5);
    json_decref(rep);
    /* with the accelerator: the model and form kind under each vendor */
    rep = report(METER_BY_VENDOR | METER_BY_ACCEL, NULL, NULL, NULL, 0);
    size_t i;
    json_t *r;
    int partitions = 0;
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        const char *f = json_string_value(json_object_get(r, "form"));
        if (f && !strcmp(f, "mig")) {
            partitions++;
            assert_string_equal(json_string_value(json_object_get(r, "vendor")), "amd");
            NEAR(num(r, "card_hours"), 0.5);
        }
    }
    assert_int_equal(partitions, 1);
    json_decref(rep);
}

static void filters(void **state) {
    (void)state;
    /* only AMD cards */
    json_t *rep = report(METER_BY_TENANT, NULL, "amd", NULL, 0);
    NEAR(num(row(rep, "tenant", "red", NULL), "card_hours"), 2.0);
    NEAR(num(row(rep, "tenant", "blue", NULL), "card_hours"), 0.5);
    assert_int_equal(num(row(rep, "tenant", "red", NULL), "prompt_tokens"), 1000);
    assert_int_equal(num(row(rep, "tenant", "blue", NULL), "prompt_tokens"), 0); /* not on amd */
    assert_string_equal(json_string_value(json_object_get(json_object_get(rep, "filters"), "vendor")), "amd");
    json_decref(rep);
    /* only cards matching a class-style model name */
    rep = report(METER_BY_VENDOR, NULL, NULL, "HL-325L", 0);
    assert_int_equal(json_array_size(json_object_get(rep, "rows")), 1);
    NEAR(num(row(rep, "vendor", "intel", NULL), "card_hours"), 2.0);
    json_decref(rep);
    /* a vendor with no usage: nothing */
    rep = report(METER_BY_VENDOR, "tid-red", "intel", NULL, 0);
    assert_int_equal(json_array_size(json_object_get(rep, "rows")), 0);
    json_decref(rep);
    /* an unknown vendor is refused, not reported empty */
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *out = NULL;
    meter_query q = {.from_us = T0, .to_us = T0 + H, .now_us = T0 + H, .vendor = "arm"};
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(meter_report(tx, &q, &out, &err), GP_EINVALID);
    store_rollback(tx);
    assert_null(out);
}

static void tenant_sees_only_its_vendors(void **state) {
    (void)state;
    /* red grouped by vendor: its amd and nvidia rows, none of blue's intel or partition */
    json_t *rep = report(METER_BY_TENANT | METER_BY_VENDOR, "tid-red", NULL, NULL, 0);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        assert_string_equal(json_string_value(json_object_get(r, "tenant")), "red");
        const char *v = json_string_value(json_object_get(r, "vendor"));
        assert_true(!strcmp(v, "amd") || !strcmp(v, "nvidia"));
    }
    NEAR(num(row(rep, "vendor", "amd", "red"), "card_hours"), 2.0);
    NEAR(num(json_object_get(rep, "totals"), "card_hours"), 3.0);
    assert_null(json_object_get(json_object_get(rep, "billing"), "blue"));
    json_decref(rep);
    /* blue filtered to amd: its partition alone */
    rep = report(METER_BY_VENDOR | METER_BY_ACCEL, "tid-blue", "amd", NULL, 0);
    assert_int_equal(json_array_size(json_object_get(rep, "rows")), 1);
    NEAR(num(json_object_get(rep, "totals"), "card_hours"), 0.5);
    json_decref(rep);
}

static void idle_by_vendor(void **state) {
    (void)state;
    /* capacity 4 h each: amd 8 (two cards), nvidia 4, intel 4; held amd 2.5, nvidia 1, intel 2 */
    json_t *rep = report(METER_BY_VENDOR, NULL, NULL, NULL, 1);
    NEAR(num(json_object_get(rep, "capacity"), "card_hours"), 16.0);
    NEAR(num(json_object_get(rep, "capacity"), "allocated"), 5.5);
    NEAR(num(json_object_get(rep, "capacity"), "idle"), 10.5);
    size_t i;
    json_t *r;
    double amd = -1, nv = -1, in = -1;
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        const char *t = json_string_value(json_object_get(r, "tenant"));
        const char *v = json_string_value(json_object_get(r, "vendor"));
        if (!t || strcmp(t, "(idle)")) continue;
        if (!strcmp(v, "amd")) amd = num(r, "card_hours");
        if (!strcmp(v, "nvidia")) nv = num(r, "card_hours");
        if (!strcmp(v, "intel")) in = num(r, "card_hours");
    }
    NEAR(amd, 5.5);
    NEAR(nv, 3.0);
    NEAR(in, 2.0);
    json_decref(rep);
    /* the capacity of one vendor alone */
    rep = report(METER_BY_VENDOR, NULL, "amd", NULL, 1);
    NEAR(num(json_object_get(rep, "capacity"), "card_hours"), 8.0);
    NEAR(num(json_object_get(rep, "capacity"), "allocated"), 2.5);
    json_decref(rep);
}

static void csv_has_vendor(void **state) {
    (void)state;
    json_t *rep = report(METER_BY_TENANT | METER_BY_VENDOR, NULL, NULL, NULL, 0);
    char *text = meter_report_csv(rep);
    assert_non_null(text);
    assert_true(!strncmp(text, "tenant,vendor,card_hours,card_hour_cost,", 40));
    assert_non_null(strstr(text, "\r\nblue,intel,2.000000,2.000000,"));
    assert_non_null(strstr(text, "\r\nred,amd,2.000000,10.000000,"));
    free(text);
    json_decref(rep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(most_specific_wins), cmocka_unit_test(json_round_trip),
        cmocka_unit_test(validation_attacks), cmocka_unit_test(by_vendor),
        cmocka_unit_test(filters), cmocka_unit_test(tenant_sees_only_its_vendors),
        cmocka_unit_test(idle_by_vendor), cmocka_unit_test(csv_has_vendor),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
