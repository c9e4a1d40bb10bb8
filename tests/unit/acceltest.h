/*
 * acceltest.h - what the agent's vendor-layer unit tests (test_nvml,
 * test_amdsmi, test_hlml) do alike: a fixture holding one vendor's handle and
 * the cards it discovered from a fake library, and the checks every vendor's
 * open() and lost-card handling must pass.
 *
 * Each test file names its vendor in its setup: ta_setup(state, &accel_X_ops)
 * after unsetting the fake's fault variables (ta_unsetenv); a test then opens a
 * fake with ta_open(state, path) and ta_teardown frees whatever is left open.
 */
#ifndef GP_ACCELTEST_H
#define GP_ACCELTEST_H

#include "testutil.h"

#include "../../src/agent/accel.h"
#include "../../src/core/err.h"

/* One vendor's handle and the cards its last discovery found. */
typedef struct ta_fix {
    const accel_ops *ops;
    void *h;          /* NULL until ta_open */
    accel_gpu *g;     /* the discovered cards, f->n of them */
    int n;
    char driver[80];  /* the discovery's driver version */
    gp_err err;       /* for the test's own calls */
} ta_fix;

/* The fake library's path from environment variable `var` (ctest sets it); fails when unset. */
static inline const char *ta_lib(const char *var) {
    const char *p = getenv(var);
    if (!p || !*p) fail_msg("%s is not set (ctest sets it to the fake library)", var);
    return p;
}

/* Unset every variable of the NULL-terminated list `vars` (a fake's faults). */
static inline void ta_unsetenv(const char *const *vars) {
    for (size_t i = 0; vars[i]; i++) unsetenv(vars[i]);
}

/* A cmocka setup's second half: a fixture for vendor `ops` in *state, nothing open.  RET 0. */
static inline int ta_setup(void **state, const accel_ops *ops) {
    ta_fix *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->ops = ops;
    *state = f;
    return 0;
}

/* Free the fixture's cards and close its handle; the fixture stays usable. */
static inline void ta_close(ta_fix *f) {
    free(f->g);
    f->g = NULL;
    f->n = 0;
    if (f->h) f->ops->close(f->h);
    f->h = NULL;
}

/* The cmocka teardown: ta_close and free the fixture.  RET 0. */
static inline int ta_teardown(void **state) {
    ta_fix *f = *state;
    if (f) ta_close(f);
    free(f);
    *state = NULL;
    return 0;
}

/*
 * (Re)open the library at `path` through the fixture's vendor and discover its
 * cards into f->g / f->n / f->driver (what was open before is closed first).
 * Fails the test when open or discover does not answer GP_OK.  RET: the fixture.
 */
static inline ta_fix *ta_open(void **state, const char *path) {
    ta_fix *f = *state;
    ta_close(f);
    gp_err err = GP_ERR_INIT;
    if (f->ops->open(path, &f->h, &err)) fail_msg("%s open: %s", f->ops->label, err.msg);
    assert_non_null(f->h);
    if (f->ops->discover(f->h, &f->g, &f->n, f->driver, &err))
        fail_msg("%s discover: %s", f->ops->label, err.msg);
    return f;
}

/* Refresh the health of every card of f, asserting GP_OK. */
static inline void ta_health(ta_fix *f) {
    gp_err err = GP_ERR_INIT;
    int rc = f->ops->health(f->h, f->g, f->n, &err);
    if (rc) fail_msg("%s health: %s", f->ops->label, err.msg);
}

/*
 * The processes on card g of f, asserting GP_OK, *p reset and NULL exactly
 * when there are none.  RET: their count; *p is the caller's to free.
 */
static inline int ta_procs(ta_fix *f, accel_gpu *g, accel_proc **p) {
    gp_err err = GP_ERR_INIT;
    int n = -1;
    *p = (accel_proc *)&err; /* must be overwritten */
    int rc = f->ops->processes(f->h, g, p, &n, &err);
    if (rc) fail_msg("%s processes: %s", f->ops->label, err.msg);
    assert_true(n >= 0);
    if (n == 0) assert_null(*p);
    else assert_non_null(*p);
    return n;
}

/*
 * What every vendor's open() answers without its library or its driver:
 *   - a path that does not load: GP_EUNSUPPORTED, the handle reset to NULL,
 *     a message starting with `missing` and naming the path;
 *   - no path, $<env> naming one that does not load: the same, naming it;
 *   - the fake `fake` with `absent_var` set (its driver "not loaded"):
 *     GP_EUNSUPPORTED, handle NULL, `init_text` in the message;
 *   - no path, $<env> naming the fake: GP_OK.
 * `env` is the vendor's variable, spelt out by the test (ops->env must be it).
 * Also: close(NULL) is a no-op, discover and health refuse a NULL handle.
 * Leaves $<env> and `absent_var` unset.
 */
static inline void ta_open_errors(const accel_ops *ops, const char *env, const char *fake,
                                  const char *missing, const char *absent_var,
                                  const char *init_text) {
    gp_err err = GP_ERR_INIT;
    void *h = &err; /* must be reset to NULL */
    const char *path = "/nonexistent/gpupool/libvendor.so";
    assert_int_equal(ops->open(path, &h, &err), GP_EUNSUPPORTED);
    assert_null(h);
    assert_int_equal(err.code, GP_EUNSUPPORTED);
    assert_ptr_equal(strstr(err.msg, missing), err.msg);
    assert_non_null(strstr(err.msg, path));

    assert_string_equal(ops->env, env);
    setenv(env, "/nonexistent/other-vendor.so", 1);
    gp_err e2 = GP_ERR_INIT;
    h = &err;
    assert_int_equal(ops->open(NULL, &h, &e2), GP_EUNSUPPORTED);
    assert_null(h);
    assert_ptr_equal(strstr(e2.msg, missing), e2.msg);
    assert_non_null(strstr(e2.msg, "/nonexistent/other-vendor.so"));

    setenv(absent_var, "1", 1);
    gp_err e3 = GP_ERR_INIT;
    h = &err;
    assert_int_equal(ops->open(fake, &h, &e3), GP_EUNSUPPORTED);
    assert_null(h);
    assert_non_null(strstr(e3.msg, init_text));
    unsetenv(absent_var);

    setenv(env, fake, 1);
    gp_err e4 = GP_ERR_INIT;
    assert_int_equal(ops->open(NULL, &h, &e4), GP_OK);
    assert_non_null(h);
    ops->close(h);
    unsetenv(env);

    ops->close(NULL);
    accel_gpu *g = NULL;
    int n = 0;
    gp_err e5 = GP_ERR_INIT;
    assert_int_equal(ops->discover(NULL, &g, &n, NULL, &e5), GP_EINVALID);
    assert_int_equal(ops->health(NULL, NULL, 0, &e5), GP_EINVALID);
}

/*
 * With `lost_var` set the fake reports card k (of two) lost: a health refresh
 * of f marks it lost with its temperature unknown and the other card not lost.
 * Leaves `lost_var` set.
 */
static inline void ta_lost_health(ta_fix *f, const char *lost_var, int k) {
    setenv(lost_var, "1", 1);
    ta_health(f);
    assert_int_equal(f->g[k].lost, 1);
    assert_int_equal(f->g[k].temperature_c, -1);
    assert_int_equal(f->g[1 - k].lost, 0);
}

/*
 * With `lost_var` set, a fresh discovery of the fake at `path` (left open in
 * the fixture) still lists both cards: card k lost and without its UUID, the
 * other not lost.  Leaves `lost_var` set.  RET: the fixture.
 */
static inline ta_fix *ta_lost_discovery(void **state, const char *path, const char *lost_var,
                                        int k) {
    setenv(lost_var, "1", 1);
    ta_fix *f = ta_open(state, path);
    assert_int_equal(f->n, 2);
    assert_int_equal(f->g[k].lost, 1);
    assert_string_equal(f->g[k].uuid, "");
    assert_int_equal(f->g[1 - k].lost, 0);
    return f;
}

#endif
