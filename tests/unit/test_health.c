/*
 * test_health.c - the health policy (pure): every signal's verdict, sticky
 * failures, ignored Xids, policy parsing; and the catalog's pure helpers
 * (class forms, model matching, MIG profile tables).
 */
#include "testutil.h"

#include "../../src/inventory/health.h"
#include "../../src/inventory/inventory.h"

static int eval(const health_policy *p, const gpu_signals *s, const gpu_signals *prev, int cur,
                char *cause) {
    return health_eval(p, s, prev, cur, cause, 200);
}

static void verdicts(void **state) {
    (void)state;
    health_policy p;
    gpu_signals s, prev;
    char cause[200];
    health_policy_default(&p);
    memset(&s, 0, sizeof s);
    s.temperature_c = 40;
    s.slowdown_c = 90;
    assert_int_equal(eval(&p, &s, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    assert_string_equal(cause, "");
    /* failures */
    gpu_signals f = s;
    f.lost = 1;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    assert_non_null(strstr(cause, "unavailable"));
    f = s;
    f.xids[f.nxids++] = 79;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    assert_non_null(strstr(cause, "Xid 79"));
    f = s;
    f.ecc_volatile_dbe = 2;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    assert_non_null(strstr(cause, "double-bit"));
    f = s;
    f.remap_failure = 1;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    /* degradations */
    gpu_signals d = s;
    d.remap_pending = 1;
    assert_int_equal(eval(&p, &d, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    assert_non_null(strstr(cause, "remap"));
    d = s;
    d.retired_pages_pending = 1;
    assert_int_equal(eval(&p, &d, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    d = s;
    d.xids[d.nxids++] = 9999; /* unknown Xid */
    assert_int_equal(eval(&p, &d, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    d = s;
    d.temperature_c = 90;
    assert_int_equal(eval(&p, &d, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    assert_non_null(strstr(cause, "slowdown"));
    d.slowdown_c = 0; /* unknown threshold: no verdict from temperature */
    assert_int_equal(eval(&p, &d, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    prev = s;
    prev.ecc_aggregate_sbe = 1000;
    d = s;
    d.ecc_aggregate_sbe = 1099;
    assert_int_equal(eval(&p, &d, &prev, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    d.ecc_aggregate_sbe = 1100;
    assert_int_equal(eval(&p, &d, &prev, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    assert_int_equal(eval(&p, &d, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY); /* no baseline */
    /* application Xids are ignored */
    static const int app[] = {13, 31, 43, 45, 68};
    for (size_t i = 0; i < sizeof app / sizeof app[0]; i++) {
        gpu_signals a = s;
        a.xids[a.nxids++] = app[i];
        assert_int_equal(eval(&p, &a, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    }
    /* failed is sticky; degraded is not */
    assert_int_equal(eval(&p, &s, NULL, HEALTH_FAILED, cause), HEALTH_FAILED);
    assert_int_equal(eval(&p, &s, NULL, HEALTH_DEGRADED, cause), HEALTH_HEALTHY);
    /* the most serious cause wins */
    gpu_signals both = s;
    both.remap_pending = 1;
    both.ecc_volatile_dbe = 1;
    assert_int_equal(eval(&p, &both, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    /* allocatable */
    assert_true(health_allocatable(&p, HEALTH_HEALTHY));
    assert_false(health_allocatable(&p, HEALTH_DEGRADED));
    assert_false(health_allocatable(&p, HEALTH_FAILED));
}

static void policy_parse(void **state) {
    (void)state;
    health_policy p;
    gp_err err = GP_ERR_INIT;
    json_t *j = json_loads("{\"fatal_xids\":[1,2],\"ignored_xids\":[3],\"corrected_ecc_rise\":5,"
                           "\"temperature_margin_c\":5,\"allocatable\":[\"healthy\",\"degraded\"]}",
                           0, NULL);
    assert_int_equal(health_policy_parse(j, &p, &err), GP_OK);
    json_decref(j);
    assert_int_equal(p.nfatal, 2);
    assert_true(health_allocatable(&p, HEALTH_DEGRADED));
    /* round trip */
    j = health_policy_json(&p);
    health_policy q;
    assert_int_equal(health_policy_parse(j, &q, &err), GP_OK);
    json_decref(j);
    assert_int_equal(q.corrected_ecc_rise, 5);
    assert_int_equal(q.temperature_margin_c, 5);
    /* a custom fatal Xid now fails the card; margin moves the temperature line */
    gpu_signals s;
    char cause[200];
    memset(&s, 0, sizeof s);
    s.xids[s.nxids++] = 2;
    assert_int_equal(health_eval(&q, &s, NULL, HEALTH_HEALTHY, cause, sizeof cause),
                     HEALTH_FAILED);
    memset(&s, 0, sizeof s);
    s.temperature_c = 85;
    s.slowdown_c = 90;
    assert_int_equal(health_eval(&q, &s, NULL, HEALTH_HEALTHY, cause, sizeof cause),
                     HEALTH_DEGRADED);
    static const char *const bad[] = {
        "[]", "{\"fatal_xids\":\"x\"}", "{\"fatal_xids\":[1],\"ignored_xids\":[1]}",
        "{\"allocatable\":[\"failed\"]}", "{\"corrected_ecc_rise\":0}", "{\"nope\":1}",
        "{\"temperature_margin_c\":99}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = json_loads(bad[i], 0, NULL);
        assert_int_equal(health_policy_parse(j, &p, &err), GP_EINVALID);
        json_decref(j);
    }
}

static void signals_parse(void **state) {
    (void)state;
    gpu_signals s;
    gp_err err = GP_ERR_INIT;
    json_t *j = json_loads("{\"ecc\":{\"volatile_uncorrected\":2,\"aggregate_corrected\":7},"
                           "\"remapped_rows\":{\"pending\":true},\"xids\":[79,43],"
                           "\"temperature_c\":50,\"slowdown_c\":88,\"lost\":false}",
                           0, NULL);
    assert_int_equal(health_signals_parse(j, &s, &err), GP_OK);
    json_decref(j);
    assert_int_equal(s.ecc_volatile_dbe, 2);
    assert_int_equal(s.ecc_aggregate_sbe, 7);
    assert_true(s.remap_pending);
    assert_int_equal(s.nxids, 2);
    assert_int_equal(s.xids[0], 79);
    assert_int_equal(s.slowdown_c, 88);
    j = json_loads("{\"xids\":[\"x\"]}", 0, NULL);
    assert_int_equal(health_signals_parse(j, &s, &err), GP_EINVALID);
    json_decref(j);
    assert_int_equal(health_signals_parse(NULL, &s, &err), GP_OK);
}

static void forms_and_models(void **state) {
    (void)state;
    inv_form f;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(inv_form_parse("whole", &f, &err), GP_OK);
    assert_int_equal(f.kind, FORM_WHOLE);
    assert_int_equal(inv_form_parse("mig:3g.40gb", &f, &err), GP_OK);
    assert_string_equal(f.profile, "3g.40gb");
    assert_int_equal(inv_form_parse("shared:12/25", &f, &err), GP_OK);
    assert_int_equal(f.memory_gib, 12);
    assert_int_equal(f.percent, 25);
    static const char *const bad[] = {"", "mig:", "mig:9g.40gb", "mig:3g.40", "shared:12",
                                      "shared:0/25", "shared:12/0", "shared:12/101",
                                      "shared:12/25x", "half"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(inv_form_parse(bad[i], &f, &err), GP_EINVALID);
    assert_true(inv_model_matches("A100-80GB", "NVIDIA A100-SXM4-80GB"));
    assert_true(inv_model_matches("A100-80GB", "A100-80GB"));
    assert_true(inv_model_matches("h100-80gb", "NVIDIA H100 80GB HBM3"));
    assert_false(inv_model_matches("A100-80GB", "NVIDIA A100-SXM4-40GB"));
    assert_false(inv_model_matches("A100", "NVIDIA A1000"));
    assert_false(inv_model_matches("80GB-A100", "NVIDIA A100-SXM4-80GB")); /* order matters */
    int mem = 0;
    const char *const *p = inv_model_mig_profiles("H200-141GB", &mem);
    assert_non_null(p);
    assert_int_equal(mem, 141);
    assert_string_equal(p[3], "3g.71gb");
    p = inv_model_mig_profiles("NVIDIA L40S", &mem);
    assert_non_null(p);
    assert_null(p[0]); /* known, no MIG */
    assert_null(inv_model_mig_profiles("Z9000", NULL));
}

/* ---- interference on shared GPUs ---- */

static intf_slice slice(const char *job, int64_t limit, int pct, int64_t used, int sm) {
    intf_slice s = {.job = job, .limit_mib = limit, .percent = pct, .used_mib = used,
                    .sm_pct = sm, .strikes = 0};
    return s;
}

static void interference_memory(void **state) {
    (void)state;
    health_policy p;
    health_policy_default(&p);
    intf_finding f[8];
    intf_slice s[3] = {slice("a", 12288, 25, 12288, 10), slice("b", 12288, 25, 12289, 10),
                       slice("c", 24576, 50, -1, -1)};
    /* exactly at the limit is fine; one MiB over is a breach at once */
    int n = intf_eval(&p, s, 3, -1, f, 8);
    assert_int_equal(n, 1);
    assert_int_equal(f[0].offender, 1);
    assert_int_equal(f[0].kind, INTF_MEMORY);
    assert_int_equal(f[0].nvictims, 2);
    assert_int_equal(f[0].victims[0], 0);
    assert_int_equal(f[0].victims[1], 2);
    assert_non_null(strstr(f[0].detail, "12289 MiB"));
    /* unknown memory is never a breach */
    s[1].used_mib = -1;
    assert_int_equal(intf_eval(&p, s, 3, -1, f, 8), 0);
    /* no room for findings: none written */
    s[1].used_mib = 99999;
    assert_int_equal(intf_eval(&p, s, 3, -1, f, 0), 0);
    /* alone on the card, still over its slice (its next neighbour would suffer) */
    intf_slice one = slice("x", 1024, 25, 2048, 0);
    n = intf_eval(&p, &one, 1, -1, f, 8);
    assert_int_equal(n, 1);
    assert_int_equal(f[0].nvictims, 0);
}

static void interference_contention(void **state) {
    (void)state;
    health_policy p;
    health_policy_default(&p); /* 3 samples, margin 10, busy 90 */
    intf_finding f[8];
    intf_slice s[2] = {slice("hog", 12288, 25, 100, 80), slice("meek", 12288, 25, 100, 15)};
    /* two strikes: nothing yet */
    assert_int_equal(intf_eval(&p, s, 2, -1, f, 8), 0);
    assert_int_equal(s[0].strikes, 1);
    assert_int_equal(intf_eval(&p, s, 2, -1, f, 8), 0);
    assert_int_equal(s[0].strikes, 2);
    assert_int_equal(s[1].strikes, 0);
    /* the third sustained sample: the hog is named, the starved job affected */
    int n = intf_eval(&p, s, 2, -1, f, 8);
    assert_int_equal(n, 1);
    assert_int_equal(f[0].kind, INTF_CONTENTION);
    assert_int_equal(f[0].offender, 0);
    assert_int_equal(f[0].nvictims, 1);
    assert_int_equal(f[0].victims[0], 1);
    /* one sample below saturation resets the strikes */
    s[0].sm_pct = 70;
    assert_int_equal(intf_eval(&p, s, 2, -1, f, 8), 0);
    assert_int_equal(s[0].strikes, 0);
    /* saturated by processes of no job counts towards the load */
    s[0].sm_pct = 60;
    s[1].sm_pct = 5;
    p.contention_samples = 1;
    assert_int_equal(intf_eval(&p, s, 2, -1, f, 8), 0); /* 65% busy */
    assert_int_equal(intf_eval(&p, s, 2, 30, f, 8), 1); /* 95% busy */
    /* within the margin is not taking more */
    s[0].sm_pct = 35;
    assert_int_equal(intf_eval(&p, s, 2, 60, f, 8), 0);
    /* nobody starving (the other has no process): no contention */
    s[0].sm_pct = 95;
    s[1].sm_pct = -1;
    assert_int_equal(intf_eval(&p, s, 2, -1, f, 8), 0);
    /* a neighbour at its share is not starving */
    s[0].sm_pct = 70;
    s[1].sm_pct = 25;
    assert_int_equal(intf_eval(&p, s, 2, -1, f, 8), 0);
    /* both kinds at once for one job */
    s[1].sm_pct = 20;
    s[0].used_mib = 20000;
    n = intf_eval(&p, s, 2, -1, f, 8);
    assert_int_equal(n, 2);
    assert_int_equal(f[0].kind, INTF_MEMORY);
    assert_int_equal(f[1].kind, INTF_CONTENTION);
}

static void interference_policy(void **state) {
    (void)state;
    health_policy p;
    gp_err err = GP_ERR_INIT;
    json_t *j = json_pack("{s:s,s:i,s:i,s:i}", "interference_action", "stop",
                          "contention_samples", 5, "contention_margin_pct", 0,
                          "contention_busy_pct", 100);
    assert_int_equal(health_policy_parse(j, &p, &err), GP_OK);
    assert_int_equal(p.interference_action, INTF_STOP);
    assert_int_equal(p.contention_samples, 5);
    json_t *back = health_policy_json(&p);
    assert_string_equal(json_string_value(json_object_get(back, "interference_action")), "stop");
    json_decref(back);
    json_decref(j);
    const char *bad[] = {"{\"interference_action\":\"kill\"}", "{\"interference_action\":1}",
                         "{\"contention_samples\":0}", "{\"contention_margin_pct\":101}",
                         "{\"contention_busy_pct\":0}", NULL};
    for (int i = 0; bad[i]; i++) {
        j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        assert_int_equal(health_policy_parse(j, &p, &err), GP_EINVALID);
        json_decref(j);
    }
    assert_int_equal(intf_action_parse("alert"), INTF_ALERT);
    assert_int_equal(intf_action_parse(NULL), -1);
}

/* ---- per vendor: what each vendor's signals mean, and the policy's vendor sections ---- */

static void vendors_verdicts(void **state) {
    (void)state;
    health_policy p;
    gpu_signals s, f, prev;
    char cause[200];
    health_policy_default(&p);
    memset(&s, 0, sizeof s);
    /* an Xid field on an AMD or Gaudi card means nothing, nor do remaps and retired pages */
    for (int v = HEALTH_V_AMD; v <= HEALTH_V_INTEL; v++) {
        f = s;
        f.vendor = v;
        f.xids[f.nxids++] = 79;
        f.xids[f.nxids++] = 9999;
        f.remap_failure = 1;
        f.remap_pending = 1;
        f.retired_pages_pending = 3;
        assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
        assert_string_equal(cause, "");
        /* lost and uncorrectable errors fail every vendor's card */
        f = s;
        f.vendor = v;
        f.lost = 1;
        assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
        f = s;
        f.vendor = v;
        f.ecc_volatile_dbe = 1;
        assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
        assert_non_null(strstr(cause, "uncorrectable"));
        assert_null(strstr(cause, "double-bit"));
        /* a rise of the aggregate uncorrectable count too (AMD and Gaudi report totals) */
        prev = s;
        prev.vendor = v;
        prev.ecc_aggregate_dbe = 4;
        f = prev;
        assert_int_equal(eval(&p, &f, &prev, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
        f.ecc_aggregate_dbe = 5;
        assert_int_equal(eval(&p, &f, &prev, HEALTH_HEALTHY, cause), HEALTH_FAILED);
        assert_non_null(strstr(cause, "+1"));
    }
    /* NVIDIA: an aggregate double-bit count alone is history, as before */
    prev = s;
    prev.ecc_aggregate_dbe = 4;
    f = prev;
    f.ecc_aggregate_dbe = 5;
    assert_int_equal(eval(&p, &f, &prev, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    /* AMD-only and Gaudi-only signals mean nothing on NVIDIA */
    f = s;
    f.bad_pages = 100000;
    f.ecc_deferred = 9;
    f.critical[f.ncritical++] = 7;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    /* AMD: deferred errors degrade; bad pages degrade at 64 and fail at 512 (defaults) */
    f = s;
    f.vendor = HEALTH_V_AMD;
    f.ecc_deferred = 2;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    assert_non_null(strstr(cause, "deferred"));
    f = s;
    f.vendor = HEALTH_V_AMD;
    f.bad_pages = 63;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    f.bad_pages = 64;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    assert_non_null(strstr(cause, "64 bad pages"));
    f.bad_pages = 512;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    f.critical[f.ncritical++] = 7; /* Gaudi's signal on an AMD card: nothing more */
    f.bad_pages = 0;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    /* Gaudi: a critical event fails the card */
    f = s;
    f.vendor = HEALTH_V_INTEL;
    f.critical[f.ncritical++] = 1027;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_FAILED);
    assert_non_null(strstr(cause, "critical event 1027"));
    f.bad_pages = 1000;
    f.critical[0] = 0;
    f.ncritical = 0;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    /* the policy decides: critical events degrade only, deferred ignored, UE degraded */
    p.vendor[HEALTH_V_INTEL].critical = HEALTH_ACT_DEGRADED;
    p.vendor[HEALTH_V_AMD].deferred = HEALTH_ACT_IGNORED;
    p.vendor[HEALTH_V_AMD].uncorrectable = HEALTH_ACT_DEGRADED;
    p.vendor[HEALTH_V_AMD].bad_pages_fatal = 0;
    f = s;
    f.vendor = HEALTH_V_INTEL;
    f.critical[f.ncritical++] = 5;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    f = s;
    f.vendor = HEALTH_V_AMD;
    f.ecc_deferred = 5;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    f.ecc_volatile_dbe = 1;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    f.ecc_volatile_dbe = 0;
    f.bad_pages = 100000; /* fatal threshold off: degraded only */
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_DEGRADED);
    /* NVIDIA's double-bit errors ignored by policy; failed stays failed (sticky) */
    p.vendor[HEALTH_V_NVIDIA].uncorrectable = HEALTH_ACT_IGNORED;
    f = s;
    f.ecc_volatile_dbe = 3;
    assert_int_equal(eval(&p, &f, NULL, HEALTH_HEALTHY, cause), HEALTH_HEALTHY);
    assert_int_equal(eval(&p, &f, NULL, HEALTH_FAILED, cause), HEALTH_FAILED);
}

static void vendors_policy(void **state) {
    (void)state;
    health_policy p;
    gp_err err = GP_ERR_INIT;
    json_t *j = json_loads("{\"vendors\":{\"amd\":{\"deferred_ecc\":\"fatal\","
                           "\"bad_pages_degraded\":10,\"bad_pages_fatal\":20},"
                           "\"intel\":{\"critical_events\":\"ignored\"},"
                           "\"nvidia\":{\"uncorrectable_ecc\":\"degraded\"}}}",
                           0, NULL);
    assert_non_null(j);
    assert_int_equal(health_policy_parse(j, &p, &err), GP_OK);
    json_decref(j);
    assert_int_equal(p.vendor[HEALTH_V_AMD].deferred, HEALTH_ACT_FATAL);
    assert_int_equal(p.vendor[HEALTH_V_AMD].bad_pages_degraded, 10);
    assert_int_equal(p.vendor[HEALTH_V_AMD].bad_pages_fatal, 20);
    assert_int_equal(p.vendor[HEALTH_V_AMD].uncorrectable, HEALTH_ACT_FATAL); /* default kept */
    assert_int_equal(p.vendor[HEALTH_V_INTEL].critical, HEALTH_ACT_IGNORED);
    assert_int_equal(p.vendor[HEALTH_V_NVIDIA].uncorrectable, HEALTH_ACT_DEGRADED);
    /* the JSON view round-trips */
    json_t *v = health_policy_json(&p);
    health_policy q;
    assert_int_equal(health_policy_parse(v, &q, &err), GP_OK);
    assert_memory_equal(q.vendor, p.vendor, sizeof p.vendor);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(v, "vendors"), "intel"), "critical_events")),
                        "ignored");
    json_decref(v);
    /* refused: unknown vendors, signals a vendor does not have, bad actions and numbers */
    static const char *const bad[] = {
        "{\"vendors\":{\"xilinx\":{}}}",
        "{\"vendors\":[]}",
        "{\"vendors\":{\"amd\":\"fatal\"}}",
        "{\"vendors\":{\"nvidia\":{\"critical_events\":\"fatal\"}}}",
        "{\"vendors\":{\"intel\":{\"bad_pages_fatal\":3}}}",
        "{\"vendors\":{\"amd\":{\"deferred_ecc\":\"panic\"}}}",
        "{\"vendors\":{\"amd\":{\"bad_pages_fatal\":-1}}}",
        "{\"vendors\":{\"amd\":{\"bad_pages_degraded\":30,\"bad_pages_fatal\":20}}}",
        "{\"vendors\":{\"amd\":{\"xids\":[79]}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        assert_int_equal(health_policy_parse(j, &p, &err), GP_EINVALID);
        json_decref(j);
    }
    /* the signals of each vendor parse */
    gpu_signals s;
    j = json_loads("{\"ecc\":{\"deferred\":3,\"aggregate_uncorrected\":2},\"bad_pages\":7,"
                   "\"critical_events\":[11,12]}",
                   0, NULL);
    assert_int_equal(health_signals_parse(j, &s, &err), GP_OK);
    json_decref(j);
    assert_int_equal(s.ecc_deferred, 3);
    assert_int_equal(s.ecc_aggregate_dbe, 2);
    assert_int_equal(s.bad_pages, 7);
    assert_int_equal(s.ncritical, 2);
    assert_int_equal(s.critical[1], 12);
    assert_int_equal(s.vendor, HEALTH_V_NVIDIA);
    j = json_loads("{\"critical_events\":[\"x\"]}", 0, NULL);
    assert_int_equal(health_signals_parse(j, &s, &err), GP_EINVALID);
    json_decref(j);
    j = json_loads("{\"critical_events\":5}", 0, NULL);
    assert_int_equal(health_signals_parse(j, &s, &err), GP_EINVALID);
    json_decref(j);
}

/* Which differences between two reports of a card make its stored row be written again. */
static void signals_same(void **state) {
    (void)state;
    gpu_signals a, b;
    memset(&a, 0, sizeof a);
    a.temperature_c = 45;
    a.slowdown_c = 90;
    a.util_gpu = 10;
    b = a;
    assert_true(health_signals_same(&a, &b));
    /* what varies on every report, and what is judged on the newest alone: the same */
    b.temperature_c = 71;
    b.util_gpu = 99;
    b.util_memory = 50;
    assert_true(health_signals_same(&a, &b));
    /* every counted figure, one at a time: different */
    int64_t *fields[] = {&b.ecc_volatile_sbe, &b.ecc_volatile_dbe, &b.ecc_aggregate_sbe,
                         &b.ecc_aggregate_dbe, &b.remapped_correctable,
                         &b.remapped_uncorrectable, &b.retired_pages_pending, &b.ecc_deferred,
                         &b.bad_pages};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        gpu_signals keep = b;
        *fields[i] += 1;
        assert_false(health_signals_same(&a, &b));
        assert_false(health_signals_same(&b, &a));
        b = keep;
    }
    int *flags[] = {&b.remap_pending, &b.remap_failure, &b.lost, &b.slowdown_c};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        gpu_signals keep = b;
        *flags[i] += 1;
        assert_false(health_signals_same(&a, &b));
        b = keep;
    }
    /* events are never "the same": an Xid or a critical event is written every time */
    b.nxids = 1;
    b.xids[0] = 79;
    assert_false(health_signals_same(&a, &b));
    b.nxids = 0;
    b.ncritical = 1;
    assert_false(health_signals_same(&b, &b));
    b.ncritical = 0;
    assert_true(health_signals_same(&a, &b));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(verdicts),
        cmocka_unit_test(policy_parse),
        cmocka_unit_test(signals_parse),
        cmocka_unit_test(signals_same),
        cmocka_unit_test(forms_and_models),
        cmocka_unit_test(interference_memory),
        cmocka_unit_test(interference_contention),
        cmocka_unit_test(interference_policy),
        cmocka_unit_test(vendors_verdicts),
        cmocka_unit_test(vendors_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
