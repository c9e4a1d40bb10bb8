/*
 * test_quota.c - the rules between a project's ceilings and its tenant's
 * (issue 42, item 2): a dimension the project leaves open inherits the
 * tenant's ceiling, so changing one of the project's never needs restating
 * the others; a ceiling of its own still may not exceed the tenant's.
 */
#include "testutil.h"

#include "../../src/quota/quota.h"

static quota_set parse(const char *text) {
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    quota_set q;
    gp_err err = GP_ERR_INIT;
    if (quota_parse(j, &q, &err)) fprintf(stderr, "%s\n", err.msg);
    json_decref(j);
    return q;
}

static void open_dimensions_inherit(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    quota_set t = parse("{\"gpus\":640,\"concurrent_jobs\":100,\"tokens_month\":5000,"
                        "\"class_gpus\":{\"a100.1x\":64}}");
    /* the project sets only one dimension: the rest are the tenant's */
    quota_set p = parse("{\"concurrent_jobs\":2}");
    assert_int_equal(quota_within(&p, &t, &err), GP_OK);
    json_t *inh = quota_inherited_json(&p, &t);
    char *s = json_dumps(inh, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(s, "{\"class_gpus\":{\"a100.1x\":64},\"gpus\":640.0,\"tokens_month\":5000}");
    free(s);
    json_decref(inh);
    /* nothing set at all: everything the tenant caps */
    quota_set none = parse("{}");
    assert_int_equal(quota_within(&none, &t, &err), GP_OK);
    /* its own ceilings within the tenant's: fine, and not inherited */
    quota_set own = parse("{\"gpus\":8,\"concurrent_jobs\":100,\"tokens_month\":10,"
                          "\"class_gpus\":{\"a100.1x\":64}}");
    assert_int_equal(quota_within(&own, &t, &err), GP_OK);
    inh = quota_inherited_json(&own, &t);
    assert_int_equal(json_object_size(inh), 0);
    json_decref(inh);
}

static void own_ceilings_within(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    quota_set t = parse("{\"gpus\":4,\"tokens_month\":5000,\"class_gpus\":{\"a100.1x\":2}}");
    quota_set p = parse("{\"gpus\":5}");
    assert_int_equal(quota_within(&p, &t, &err), GP_EINVALID);
    assert_string_equal(err.msg, "project gpus ceiling 5 exceeds the tenant's 4");
    p = parse("{\"tokens_month\":5001}");
    assert_int_equal(quota_within(&p, &t, &err), GP_EINVALID);
    p = parse("{\"class_gpus\":{\"a100.1x\":3}}");
    assert_int_equal(quota_within(&p, &t, &err), GP_EINVALID);
    /* a tenant without a ceiling bounds nothing, and gives nothing to inherit */
    quota_set open = parse("{}");
    p = parse("{\"gpus\":1000}");
    assert_int_equal(quota_within(&p, &open, &err), GP_OK);
    json_t *inh = quota_inherited_json(&p, &open);
    assert_int_equal(json_object_size(inh), 0);
    json_decref(inh);
}

/* A guarantee of one class (docs/scheduling.md "A guarantee per class"): parsed, bounded by
 * the gpus ceiling with the tenant's own guarantee, patched per class, and more of one is a
 * raise (the sensitive operation). */
static void class_guarantees(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    quota_set q = parse("{\"gpus\":16,\"guaranteed_gpus\":4,\"class_guarantees\":"
                        "{\"h100.1x\":{\"guaranteed_gpus\":8,\"kept_gpus\":2}}}");
    assert_int_equal(q.ngclass, 1);
    assert_int_equal(quota_gclass(&q, "h100.1x"), 0);
    assert_int_equal(quota_gclass(&q, "a100.1x"), -1);
    assert_int_equal(q.gclass_g[0], 8000);
    assert_int_equal(q.gclass_kept[0], 2000);
    assert_int_equal(quota_guarantee_total(&q), 12000);
    json_t *j = quota_json(&q);
    char *s = json_dumps(json_object_get(j, "class_guarantees"), JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(s, "{\"h100.1x\":{\"guaranteed_gpus\":8.0,\"kept_gpus\":2.0}}");
    free(s);
    quota_set back;
    assert_int_equal(quota_parse(j, &back, &err), GP_OK); /* what it answers parses back */
    assert_int_equal(back.gclass_g[0], 8000);
    json_decref(j);
    static const char *const bad[] = {
        "{\"gpus\":10,\"guaranteed_gpus\":4,\"class_guarantees\":{\"h\":{\"guaranteed_gpus\":8}}}",
        "{\"class_guarantees\":{\"h\":{\"guaranteed_gpus\":2,\"kept_gpus\":3}}}",
        "{\"class_guarantees\":{\"h\":{\"kept_gpus\":1}}}",
        "{\"class_guarantees\":{\"h\":{\"guaranteed_gpus\":-1}}}",
        "{\"class_guarantees\":{\"h\":{\"guaranteed_gpus\":1,\"weight\":2}}}",
        "{\"class_guarantees\":{\"h\":3}}",
        "{\"class_guarantees\":[]}",
        NULL};
    for (int i = 0; bad[i]; i++) {
        json_t *b = json_loads(bad[i], 0, NULL);
        quota_set x;
        if (quota_parse(b, &x, &err) != GP_EINVALID) fail_msg("accepted %s", bad[i]);
        json_decref(b);
    }
    /* a patch changes one class and keeps the others; null lifts one */
    json_t *p = json_loads("{\"class_guarantees\":{\"a100.1x\":{\"guaranteed_gpus\":2}}}", 0, NULL);
    quota_set n;
    assert_int_equal(quota_patch(&q, p, &n, &err), GP_OK);
    json_decref(p);
    assert_int_equal(n.ngclass, 2);
    assert_int_equal(n.gclass_g[quota_gclass(&n, "h100.1x")], 8000);
    assert_true(quota_raises(&q, &n)); /* a class guarantee where there was none */
    assert_false(quota_raises(&n, &q));
    p = json_loads("{\"class_guarantees\":{\"h100.1x\":null}}", 0, NULL);
    assert_int_equal(quota_patch(&n, p, &q, &err), GP_OK);
    json_decref(p);
    assert_int_equal(q.ngclass, 1);
    assert_int_equal(quota_gclass(&q, "h100.1x"), -1);
    assert_false(quota_raises(&n, &q)); /* lifting one raises nothing */
    p = json_loads("{\"class_guarantees\":{\"a100.1x\":{\"guaranteed_gpus\":2,\"kept_gpus\":1}}}",
                   0, NULL);
    assert_int_equal(quota_patch(&q, p, &n, &err), GP_OK);
    json_decref(p);
    assert_true(quota_raises(&q, &n)); /* more of it kept */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_dimensions_inherit),
        cmocka_unit_test(own_ceilings_within),
        cmocka_unit_test(class_guarantees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
