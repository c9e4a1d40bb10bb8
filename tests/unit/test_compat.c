/*
 * test_compat.c - the compatibility rules (src/compat/compat.c): names, dotted versions, stacks,
 * a job's stack requirement, a class's rules, the per-card check and the reason when no card
 * passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../src/compat/compat.h"

#include <string.h>

static void names(void **state) {
    (void)state;
    assert_int_equal(cp_vendor_parse("nvidia"), CP_NVIDIA);
    assert_int_equal(cp_vendor_parse("amd"), CP_AMD);
    assert_int_equal(cp_vendor_parse("intel"), CP_INTEL);
    assert_int_equal(cp_vendor_parse("NVIDIA"), -1);
    assert_int_equal(cp_vendor_parse("habana"), -1);
    assert_int_equal(cp_vendor_parse(""), -1);
    assert_int_equal(cp_vendor_parse(NULL), -1);
    assert_string_equal(cp_vendor_name(CP_AMD), "amd");
    assert_string_equal(cp_vendor_name(7), "?");
    assert_int_equal(cp_runtime_parse("cuda"), CP_CUDA);
    assert_int_equal(cp_runtime_parse("rocm"), CP_ROCM);
    assert_int_equal(cp_runtime_parse("synapse"), CP_SYNAPSE);
    assert_int_equal(cp_runtime_parse("hip"), -1);
    assert_string_equal(cp_runtime_name(CP_SYNAPSE), "synapse");
    assert_int_equal(cp_vendor_runtime(CP_AMD), CP_ROCM);
    assert_int_equal(cp_vendor_runtime(CP_INTEL), CP_SYNAPSE);
}

static void versions(void **state) {
    (void)state;
    const char *good[] = {"12", "12.4", "6.2.0", "550.54.15", "1.18.0", "0", "1.2.3.4.5.6",
                          "999999999"};
    const char *bad[] = {"", "12.", ".4", "12..4", "v12", "12.4a", "12 .4", "-1", "1.2.3.4.5.6.7",
                         "1234567890", "12.4 ", "a", "1,2",
                         "1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) assert_true(cp_version_valid(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) assert_false(cp_version_valid(bad[i]));
    assert_false(cp_version_valid(NULL));
    assert_int_equal(cp_version_cmp("12", "12.0"), 0);
    assert_int_equal(cp_version_cmp("12.0.0", "12"), 0);
    assert_true(cp_version_cmp("12.10", "12.9") > 0);  /* numbers, not text */
    assert_true(cp_version_cmp("12.9", "12.10") < 0);
    assert_true(cp_version_cmp("550.54.15", "535.104.05") > 0);
    assert_true(cp_version_cmp("6.2.0", "6.2.1") < 0);
    assert_true(cp_version_cmp("6.10", "6.2") > 0);
    assert_true(cp_version_cmp("7", "6.99.99") > 0);
    assert_true(cp_version_cmp("01.2", "1.2") == 0);
    /* text that is no version sorts below every version */
    assert_true(cp_version_cmp("", "0") < 0);
    assert_true(cp_version_cmp("0", "x") > 0);
    assert_int_equal(cp_version_cmp("x", "y"), 0);
    /* antisymmetry over a small set */
    const char *set[] = {"1", "1.0.1", "1.1", "2", "10", "10.0.0.1", "9.99"};
    for (size_t i = 0; i < 7; i++)
        for (size_t k = 0; k < 7; k++) {
            int a = cp_version_cmp(set[i], set[k]), b = cp_version_cmp(set[k], set[i]);
            assert_int_equal(a > 0, b < 0);
            assert_int_equal(a == 0, i == k);
        }
}

static void stacks(void **state) {
    (void)state;
    char why[200];
    cp_stack s;
    json_t *j = json_pack("{s:s,s:s}", "cuda", "12.4", "rocm", "6.2.0");
    assert_int_equal(cp_stack_parse(j, &s, why, sizeof why), 0);
    assert_string_equal(s.ver[CP_CUDA], "12.4");
    assert_string_equal(s.ver[CP_ROCM], "6.2.0");
    assert_string_equal(s.ver[CP_SYNAPSE], "");
    json_t *back = cp_stack_json(&s);
    assert_true(json_equal(back, j));
    json_decref(back);
    json_decref(j);
    assert_int_equal(cp_stack_parse(NULL, &s, why, sizeof why), 0);
    assert_string_equal(s.ver[CP_CUDA], "");
    json_t *badv[] = {json_pack("{s:s}", "opencl", "3.0"), json_pack("{s:s}", "cuda", "12.x"),
                      json_pack("{s:i}", "cuda", 12), json_pack("[s]", "cuda"),
                      json_string("cuda:12")};
    for (size_t i = 0; i < 5; i++) {
        why[0] = '\0';
        assert_int_equal(cp_stack_parse(badv[i], &s, why, sizeof why), -1);
        assert_true(strlen(why) > 0);
        json_decref(badv[i]);
    }
}

static void requirements(void **state) {
    (void)state;
    char why[200], buf[64];
    cp_req q;
    assert_int_equal(cp_req_parse("", &q, why, sizeof why), 0);
    assert_int_equal(q.runtime, -1);
    cp_req_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "");
    assert_int_equal(cp_req_parse(NULL, &q, why, sizeof why), 0);
    assert_int_equal(q.runtime, -1);
    assert_int_equal(cp_req_parse("rocm>=6.1", &q, why, sizeof why), 0);
    assert_int_equal(q.runtime, CP_ROCM);
    assert_string_equal(q.min, "6.1");
    assert_int_equal(cp_req_parse(" cuda >= 12.2 ", &q, why, sizeof why), 0);
    assert_int_equal(q.runtime, CP_CUDA);
    cp_req_format(&q, buf, sizeof buf);
    assert_string_equal(buf, "cuda>=12.2");
    assert_int_equal(cp_req_parse("synapse>=1.18.0", &q, why, sizeof why), 0);
    assert_int_equal(q.runtime, CP_SYNAPSE);
    const char *bad[] = {"rocm", "rocm>6.1", "rocm=6.1", "rocm>=", ">=6.1", "hip>=6.1",
                         "rocm>=6.1>=7", "rocm>=six", "ROCM>=6.1", "rocm<=6.1",
                         "rocm>=6.1;rm -rf /",
                         "rocm>=1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = '\0';
        assert_int_equal(cp_req_parse(bad[i], &q, why, sizeof why), -1);
        assert_non_null(strstr(why, "rocm>=6.1"));
    }
}

static void rules_parse(void **state) {
    (void)state;
    char why[200];
    cp_rules r;
    json_t *v = json_pack("[s,s]", "nvidia", "amd"),
           *md = json_pack("{s:s,s:s}", "nvidia", "535", "amd", "6.8"),
           *st = json_pack("{s:s,s:s}", "cuda", "12.2", "rocm", "6.0");
    assert_int_equal(cp_rules_parse(v, md, st, &r, why, sizeof why), 0);
    assert_int_equal(r.vendors, (1u << CP_NVIDIA) | (1u << CP_AMD));
    assert_string_equal(r.min_driver[CP_NVIDIA], "535");
    assert_string_equal(r.min_driver[CP_AMD], "6.8");
    assert_string_equal(r.min_driver[CP_INTEL], "");
    assert_string_equal(r.stack.ver[CP_ROCM], "6.0");
    json_decref(md);
    /* a minimum for a vendor the class does not accept could never apply */
    md = json_pack("{s:s}", "intel", "1.18");
    assert_int_equal(cp_rules_parse(v, md, NULL, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "intel"));
    json_decref(md);
    /* but with any vendor it is fine */
    md = json_pack("{s:s}", "intel", "1.18");
    assert_int_equal(cp_rules_parse(NULL, md, NULL, &r, why, sizeof why), 0);
    assert_int_equal(r.vendors, 0);
    json_decref(md);
    json_decref(v);
    json_decref(st);
    /* empty everything: no rules */
    assert_int_equal(cp_rules_parse(NULL, NULL, NULL, &r, why, sizeof why), 0);
    assert_int_equal(r.vendors, 0);
    json_t *bad[][3] = {
        {json_pack("[s]", "habana"), NULL, NULL},
        {json_pack("[i]", 1), NULL, NULL},
        {json_string("nvidia"), NULL, NULL},
        {json_pack("[s,s,s,s]", "nvidia", "amd", "intel", "nvidia"), NULL, NULL},
        {NULL, json_pack("{s:s}", "xilinx", "1"), NULL},
        {NULL, json_pack("{s:s}", "amd", "6.8-beta"), NULL},
        {NULL, json_pack("{s:i}", "amd", 6), NULL},
        {NULL, NULL, json_pack("{s:s}", "opencl", "3")},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = '\0';
        assert_int_equal(cp_rules_parse(bad[i][0], bad[i][1], bad[i][2], &r, why, sizeof why), -1);
        assert_true(strlen(why) > 0);
        for (int k = 0; k < 3; k++) json_decref(bad[i][k]);
    }
}

/* A fleet: an NVIDIA card (cuda 12.4, driver 550.54.15), an AMD card (rocm 6.2.0, driver
 * 6.8.5), a Gaudi card (synapse 1.18.0, driver 1.18.0), an old AMD card (rocm 5.7, 6.2.1). */
static cp_stack st_nv, st_amd, st_gaudi, st_old;
static cp_card fleet[4];

static void make_fleet(void) {
    memset(&st_nv, 0, sizeof st_nv);
    memset(&st_amd, 0, sizeof st_amd);
    memset(&st_gaudi, 0, sizeof st_gaudi);
    memset(&st_old, 0, sizeof st_old);
    strcpy(st_nv.ver[CP_CUDA], "12.4");
    strcpy(st_amd.ver[CP_ROCM], "6.2.0");
    strcpy(st_gaudi.ver[CP_SYNAPSE], "1.18.0");
    strcpy(st_old.ver[CP_ROCM], "5.7");
    fleet[0] = (cp_card){CP_NVIDIA, "550.54.15", &st_nv};
    fleet[1] = (cp_card){CP_AMD, "6.8.5", &st_amd};
    fleet[2] = (cp_card){CP_INTEL, "1.18.0", &st_gaudi};
    fleet[3] = (cp_card){CP_AMD, "6.2.1", &st_old};
}

static cp_rules rules_of(const char *vendors, const char *md, const char *stack) {
    cp_rules r;
    char why[200];
    json_t *v = vendors ? json_loads(vendors, 0, NULL) : NULL,
           *m = md ? json_loads(md, 0, NULL) : NULL, *s = stack ? json_loads(stack, 0, NULL) : NULL;
    assert_int_equal(cp_rules_parse(v, m, s, &r, why, sizeof why), 0);
    json_decref(v);
    json_decref(m);
    json_decref(s);
    return r;
}

static void card_check(void **state) {
    (void)state;
    make_fleet();
    cp_req none = {-1, ""}, rocm61, rocm63, cuda12;
    char why[200];
    assert_int_equal(cp_req_parse("rocm>=6.1", &rocm61, why, sizeof why), 0);
    assert_int_equal(cp_req_parse("rocm>=6.3", &rocm63, why, sizeof why), 0);
    assert_int_equal(cp_req_parse("cuda>=12", &cuda12, why, sizeof why), 0);
    /* no rules: every card */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(cp_card_check(NULL, NULL, &fleet[i]), CP_OK);
        assert_int_equal(cp_card_check(NULL, &none, &fleet[i]), CP_OK);
    }
    cp_rules r = rules_of("[\"nvidia\",\"amd\"]", NULL, NULL);
    int want_v[4] = {CP_OK, CP_OK, CP_BAD_VENDOR, CP_OK};
    for (int i = 0; i < 4; i++) assert_int_equal(cp_card_check(&r, NULL, &fleet[i]), want_v[i]);
    /* the job's stack: only the AMD card with ROCm 6.2 runs rocm>=6.1 */
    int want_s[4] = {CP_BAD_JOB_STACK, CP_OK, CP_BAD_VENDOR, CP_BAD_JOB_STACK};
    for (int i = 0; i < 4; i++) assert_int_equal(cp_card_check(&r, &rocm61, &fleet[i]), want_s[i]);
    for (int i = 0; i < 4; i++) assert_int_not_equal(cp_card_check(&r, &rocm63, &fleet[i]), CP_OK);
    assert_int_equal(cp_card_check(NULL, &cuda12, &fleet[0]), CP_OK);
    assert_int_equal(cp_card_check(NULL, &cuda12, &fleet[1]), CP_BAD_JOB_STACK);
    /* driver minimum per vendor: AMD 6.8 refuses the old AMD card only */
    r = rules_of(NULL, "{\"amd\":\"6.8\",\"nvidia\":\"560\"}", NULL);
    int want_d[4] = {CP_BAD_DRIVER, CP_OK, CP_OK, CP_BAD_DRIVER};
    for (int i = 0; i < 4; i++) assert_int_equal(cp_card_check(&r, NULL, &fleet[i]), want_d[i]);
    /* an unknown driver fails a minimum; none set, it passes */
    cp_card unknown = {CP_AMD, "", &st_amd};
    assert_int_equal(cp_card_check(&r, NULL, &unknown), CP_BAD_DRIVER);
    unknown.vendor = CP_INTEL;
    assert_int_equal(cp_card_check(&r, NULL, &unknown), CP_OK);
    /* the class's stack: any one runtime it lists, at that version */
    r = rules_of(NULL, NULL, "{\"cuda\":\"12.2\",\"rocm\":\"6.0\"}");
    int want_c[4] = {CP_OK, CP_OK, CP_BAD_CLASS_STACK, CP_BAD_CLASS_STACK};
    for (int i = 0; i < 4; i++) assert_int_equal(cp_card_check(&r, NULL, &fleet[i]), want_c[i]);
    cp_card nostack = {CP_NVIDIA, "550", NULL};
    assert_int_equal(cp_card_check(&r, NULL, &nostack), CP_BAD_CLASS_STACK);
    assert_int_equal(cp_card_check(NULL, &cuda12, &nostack), CP_BAD_JOB_STACK);
    /* the order of the rules: vendor before driver before stacks */
    r = rules_of("[\"amd\"]", "{\"amd\":\"7\"}", "{\"rocm\":\"7\"}");
    assert_int_equal(cp_card_check(&r, &rocm61, &fleet[0]), CP_BAD_VENDOR);
    assert_int_equal(cp_card_check(&r, &rocm61, &fleet[1]), CP_BAD_DRIVER);
    r = rules_of("[\"amd\"]", NULL, "{\"rocm\":\"7\"}");
    assert_int_equal(cp_card_check(&r, &rocm61, &fleet[1]), CP_BAD_CLASS_STACK);
}

static void reasons(void **state) {
    (void)state;
    make_fleet();
    char why[200];
    cp_req q;
    cp_rules r = rules_of(NULL, NULL, NULL);
    assert_int_equal(cp_req_parse("rocm>=6.3", &q, why, sizeof why), 0);
    assert_int_equal(cp_why_none(&r, &q, fleet, 4, why, sizeof why), 1);
    assert_string_equal(why, "no card offers rocm >= 6.3 (newest: 6.2.0 on amd)");
    /* some card passes after all: 0 */
    assert_int_equal(cp_req_parse("rocm>=6.1", &q, why, sizeof why), 0);
    assert_int_equal(cp_why_none(&r, &q, fleet, 4, why, sizeof why), 0);
    assert_int_equal(cp_why_none(&r, NULL, fleet, 4, why, sizeof why), 0);
    assert_int_equal(cp_req_parse("rocm>=9", &q, why, sizeof why), 0);
    cp_why_none(NULL, &q, fleet, 1, why, sizeof why);
    assert_string_equal(why, "no card offers rocm >= 9 (none offers rocm)");
    r = rules_of("[\"amd\",\"intel\"]", NULL, NULL);
    cp_why_none(&r, NULL, fleet, 1, why, sizeof why);
    assert_string_equal(why, "no card of vendor amd or intel (cards: nvidia)");
    r = rules_of("[\"amd\"]", "{\"amd\":\"7.0\"}", NULL);
    cp_why_none(&r, NULL, fleet, 4, why, sizeof why);
    assert_string_equal(why, "no amd card has driver >= 7.0 (newest: 6.8.5)");
    r = rules_of(NULL, NULL, "{\"cuda\":\"12.6\",\"rocm\":\"6.5\"}");
    cp_why_none(&r, NULL, fleet, 4, why, sizeof why);
    assert_string_equal(why, "no card offers cuda >= 12.6 or rocm >= 6.5 (newest: cuda 12.4 on nvidia)");
    /* the class's rules are judged on the cards that offer the job's stack */
    r = rules_of("[\"nvidia\"]", NULL, NULL);
    assert_int_equal(cp_req_parse("rocm>=6", &q, why, sizeof why), 0);
    assert_int_equal(cp_why_none(&r, &q, fleet, 4, why, sizeof why), 1);
    assert_string_equal(why, "no card of vendor nvidia offers rocm >= 6 (cards that do: amd)");
    r = rules_of(NULL, "{\"amd\":\"6.9\"}", NULL);
    assert_int_equal(cp_why_none(&r, &q, fleet, 4, why, sizeof why), 1);
    assert_string_equal(why, "no amd card has driver >= 6.9 (newest: 6.8.5)");
    /* without a job stack the NVIDIA card passes that class */
    assert_int_equal(cp_why_none(&r, NULL, fleet, 4, why, sizeof why), 0);
    r = rules_of(NULL, NULL, "{\"synapse\":\"2\"}");
    cp_why_none(&r, NULL, fleet, 2, why, sizeof why);
    assert_string_equal(why, "no card offers synapse >= 2 (newest: none offered)");
    cp_why_none(&r, NULL, fleet, 0, why, sizeof why);
    assert_string_equal(why, "no card of the class's models");
    /* a tiny buffer is cut, never overrun */
    char small[12];
    memset(small, 'x', sizeof small);
    cp_why_none(&r, NULL, fleet, 4, small, 8);
    assert_int_equal(strlen(small), 7);
    assert_int_equal(small[9], 'x');
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),        cmocka_unit_test(versions),  cmocka_unit_test(stacks),
        cmocka_unit_test(requirements), cmocka_unit_test(rules_parse), cmocka_unit_test(card_check),
        cmocka_unit_test(reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
