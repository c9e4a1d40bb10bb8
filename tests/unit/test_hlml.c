/*
 * test_hlml.c - src/agent/hlml.c against tests/fake_hlml (a fake libhlml).
 *
 * ctest passes the fake library's path in FAKE_HLML_PATH and a build that
 * exports only the required symbols in FAKE_HLML_MIN_PATH.  Faults come from
 * the FAKE_HLML_* variables the fake reads at each call (see
 * tests/fake_hlml/fake_hlml.c); every test starts with them unset.
 */
#include "testutil.h"

#include "../../src/agent/hlml.h"
#include "../../src/core/err.h"

#include <sys/stat.h>

#define GIB (1024ULL * 1024ULL * 1024ULL)

static const char *lib(const char *var) {
    const char *p = getenv(var);
    if (!p || !*p) fail_msg("%s is not set (ctest sets it to the fake library)", var);
    return p;
}

static int clear_faults(void **state) {
    (void)state;
    const char *vars[] = {"FAKE_HLML_ABSENT", "FAKE_HLML_LOST", "FAKE_HLML_DBE", "FAKE_HLML_TEMP",
                          "FAKE_HLML_CRITICAL", "GPUPOOL_HLML_LIBRARY", "GPUPOOL_HLML_PROC"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    return 0;
}

static hl_ml *open_discover(const char *path, accel_gpu **g, int *n, char driver[80]) {
    gp_err err = GP_ERR_INIT;
    hl_ml *h = NULL;
    if (hl_open(path, &h, &err)) fail_msg("hl_open: %s", err.msg);
    if (hl_discover(h, g, n, driver, &err)) fail_msg("hl_discover: %s", err.msg);
    return h;
}

static void discover_identity(void **state) {
    (void)state;
    accel_gpu *g = NULL;
    int n = 0;
    char driver[80];
    hl_ml *h = open_discover(lib("FAKE_HLML_PATH"), &g, &n, driver);
    assert_int_equal(n, 2);
    assert_string_equal(driver, "1.18.0"); /* "1.18.0-ee698fb": its dotted number */
    for (int i = 0; i < 2; i++) {
        assert_string_equal(g[i].vendor, "intel");
        assert_string_equal(g[i].name, "HL-325L");
        assert_true(g[i].memory_bytes == 128 * GIB);
        assert_string_equal(g[i].driver_version, "1.18.0");
        assert_string_equal(g[i].runtime, "synapse");
        assert_string_equal(g[i].runtime_version, "1.18.0");
        assert_int_equal(g[i].mig_capable, 0);
        assert_int_equal(g[i].nslices, 0);
    }
    assert_string_equal(g[0].uuid, "hl-fake-0000");
    assert_string_equal(g[1].uuid, "hl-fake-0001");
    assert_string_equal(g[0].pci_bus, "0000:33:00.0");
    assert_int_equal(g[0].module_id, 3);
    assert_int_equal(g[1].module_id, 0);
    gp_err err = GP_ERR_INIT;
    assert_int_equal(accel_hlml_ops.partitions(h, &g[0], &err), GP_OK);
    assert_int_equal(g[0].nslices, 0);
    free(g);
    hl_close(h);
}

static void health_and_faults(void **state) {
    (void)state;
    accel_gpu *g = NULL;
    int n = 0;
    gp_err err = GP_ERR_INIT;
    hl_ml *h = open_discover(lib("FAKE_HLML_PATH"), &g, &n, NULL);
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(g[i].temperature_c, 35);
        assert_int_equal(g[i].slowdown_c, 90);
        assert_int_equal(g[i].util_gpu, 20);
        assert_int_equal(g[i].util_memory, -1);
        assert_true(g[i].memory_used_bytes == (long long)(2 * GIB));
        assert_int_equal(g[i].power_mw, 200000);
        assert_true(g[i].ecc_volatile_uncorrected == 0 && g[i].ecc_aggregate_uncorrected == 0);
        assert_true(g[i].ecc_aggregate_corrected == -1); /* not supported by HLML */
        assert_true(g[i].bad_pages == -1 && g[i].ecc_deferred == -1);
        assert_int_equal(g[i].ncritical, 0);
    }
    setenv("FAKE_HLML_DBE", "4", 1);
    setenv("FAKE_HLML_TEMP", "99", 1);
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    assert_true(g[0].ecc_volatile_uncorrected == 4 && g[0].ecc_aggregate_uncorrected == 4);
    assert_int_equal(g[1].temperature_c, 99);
    assert_true(g[1].ecc_volatile_uncorrected == 0);
    free(g);
    hl_close(h);
}

static void critical_events(void **state) {
    (void)state;
    accel_gpu *g = NULL;
    int n = 0;
    gp_err err = GP_ERR_INIT;
    hl_ml *h = open_discover(lib("FAKE_HLML_PATH"), &g, &n, NULL);
    setenv("FAKE_HLML_CRITICAL", "3", 1);
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    assert_int_equal(g[1].ncritical, 3);
    assert_int_equal(g[1].critical[0], 2);
    assert_true(g[1].critical_total == 3);
    assert_int_equal(g[0].ncritical, 0);
    /* events are sent once: the next refresh has none, the total stays */
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    assert_int_equal(g[1].ncritical, 0);
    assert_true(g[1].critical_total == 3);
    /* more events than the refresh keeps: counted, not all listed */
    setenv("FAKE_HLML_CRITICAL", "40", 1);
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    assert_int_equal(g[1].ncritical, ACCEL_MAX_EVENTS);
    assert_true(g[1].critical_total == 43);
    free(g);
    hl_close(h);
}

static void lost_card(void **state) {
    (void)state;
    accel_gpu *g = NULL;
    int n = 0;
    gp_err err = GP_ERR_INIT;
    hl_ml *h = open_discover(lib("FAKE_HLML_PATH"), &g, &n, NULL);
    setenv("FAKE_HLML_LOST", "1", 1);
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    assert_int_equal(g[1].lost, 1);
    assert_int_equal(g[1].temperature_c, -1);
    assert_int_equal(g[0].lost, 0);
    free(g);
    hl_close(h);
    h = open_discover(lib("FAKE_HLML_PATH"), &g, &n, NULL);
    assert_int_equal(n, 2);
    assert_int_equal(g[1].lost, 1);
    assert_string_equal(g[1].uuid, "");
    assert_string_equal(g[0].uuid, "hl-fake-0000");
    free(g);
    hl_close(h);
}

/* A fabricated /proc: pid 1234 holds accel1 open, pid 99 only /dev/null. */
static char *fake_proc(void) {
    char *dir = tu_mkdtemp(), p[700];
    const char *pids[] = {"1234", "99", "self-not-a-pid"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, pids[i]);
        assert_int_equal(mkdir(p, 0700), 0);
        snprintf(p, sizeof p, "%s/%s/fd", dir, pids[i]);
        assert_int_equal(mkdir(p, 0700), 0);
    }
    snprintf(p, sizeof p, "%s/1234/fd/3", dir);
    assert_int_equal(symlink("/dev/accel/accel1", p), 0);
    snprintf(p, sizeof p, "%s/1234/fd/4", dir);
    assert_int_equal(symlink("/dev/null", p), 0);
    snprintf(p, sizeof p, "%s/99/fd/0", dir);
    assert_int_equal(symlink("/dev/null", p), 0);
    snprintf(p, sizeof p, "%s/self-not-a-pid/fd/0", dir);
    assert_int_equal(symlink("/dev/accel/accel1", p), 0);
    return dir;
}

static void processes_from_device_nodes(void **state) {
    (void)state;
    char *dir = fake_proc();
    setenv("GPUPOOL_HLML_PROC", dir, 1);
    accel_gpu *g = NULL;
    int n = 0;
    gp_err err = GP_ERR_INIT;
    hl_ml *h = open_discover(lib("FAKE_HLML_PATH"), &g, &n, NULL);
    accel_proc *p = NULL;
    int np = 0;
    assert_int_equal(hl_processes(h, &g[1], &p, &np, &err), GP_OK);
    assert_int_equal(np, 1);
    assert_int_equal(p[0].pid, 1234);
    assert_true(p[0].memory_mib == -1);
    assert_int_equal(p[0].sm_pct, -1);
    free(p);
    assert_int_equal(hl_processes(h, &g[0], &p, &np, &err), GP_OK);
    assert_int_equal(np, 0);
    assert_null(p);
    accel_gpu far = g[0];
    far.index = ACCEL_MAX_GPUS;
    assert_int_equal(hl_processes(h, &far, &p, &np, &err), GP_EINVALID);
    free(g);
    hl_close(h);
    tu_rmdir(dir);
}

static void missing_library_and_driver(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    hl_ml *h = (hl_ml *)1;
    assert_int_equal(hl_open("/nonexistent/libhlml.so", &h, &err), GP_EUNSUPPORTED);
    assert_null(h);
    assert_non_null(strstr(err.msg, "HLML not available"));
    setenv("FAKE_HLML_ABSENT", "1", 1);
    gp_err e2 = GP_ERR_INIT;
    assert_int_equal(hl_open(lib("FAKE_HLML_PATH"), &h, &e2), GP_EUNSUPPORTED);
    assert_non_null(strstr(e2.msg, "hlml_init returned 9"));
    unsetenv("FAKE_HLML_ABSENT");
    setenv("GPUPOOL_HLML_LIBRARY", lib("FAKE_HLML_PATH"), 1);
    gp_err e3 = GP_ERR_INIT;
    assert_int_equal(hl_open(NULL, &h, &e3), GP_OK);
    hl_close(h);
    hl_close(NULL);
    gp_err e4 = GP_ERR_INIT;
    accel_gpu *g = NULL;
    int n = 0;
    assert_int_equal(hl_discover(NULL, &g, &n, NULL, &e4), GP_EINVALID);
}

static void minimal_library(void **state) {
    (void)state;
    char *dir = fake_proc();
    setenv("GPUPOOL_HLML_PROC", dir, 1);
    accel_gpu *g = NULL;
    int n = 0;
    gp_err err = GP_ERR_INIT;
    char driver[80];
    hl_ml *h = open_discover(lib("FAKE_HLML_MIN_PATH"), &g, &n, driver);
    assert_int_equal(n, 2);
    assert_string_equal(driver, "");
    assert_string_equal(g[0].uuid, "");
    assert_string_equal(g[0].runtime, "");
    assert_int_equal(g[0].module_id, -1);
    assert_int_equal(hl_health(h, g, n, &err), GP_OK);
    assert_int_equal(g[1].temperature_c, -1);
    assert_true(g[1].ecc_volatile_uncorrected == -1);
    assert_int_equal(g[1].ncritical, 0);
    accel_proc *p = NULL;
    int np = 0;
    assert_int_equal(hl_processes(h, &g[1], &p, &np, &err), GP_OK); /* no minor number: none */
    assert_int_equal(np, 0);
    free(g);
    hl_close(h);
    tu_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(discover_identity, clear_faults),
        cmocka_unit_test_setup(health_and_faults, clear_faults),
        cmocka_unit_test_setup(critical_events, clear_faults),
        cmocka_unit_test_setup(lost_card, clear_faults),
        cmocka_unit_test_setup(processes_from_device_nodes, clear_faults),
        cmocka_unit_test_setup(missing_library_and_driver, clear_faults),
        cmocka_unit_test_setup(minimal_library, clear_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
