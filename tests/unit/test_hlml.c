/*
 * test_hlml.c - src/agent/hlml.c against tests/fake_hlml (a fake libhlml).
 *
 * ctest passes the fake library's path in FAKE_HLML_PATH and a build that
 * exports only the required symbols in FAKE_HLML_MIN_PATH.  Faults come from
 * the FAKE_HLML_* variables the fake reads at each call (see
 * tests/fake_hlml/fake_hlml.c); every test starts with them unset.
 */
#include "acceltest.h"

#include "../../src/agent/hlml.h"

#include <sys/stat.h>

#define GIB (1024ULL * 1024ULL * 1024ULL)

/* Every test starts with the fake's faults unset and an empty fixture. */
static int setup(void **state) {
    static const char *const vars[] = {
        "FAKE_HLML_ABSENT", "FAKE_HLML_LOST", "FAKE_HLML_DBE", "FAKE_HLML_TEMP",
        "FAKE_HLML_CRITICAL", "GPUPOOL_HLML_LIBRARY", "GPUPOOL_HLML_PROC", NULL};
    ta_unsetenv(vars);
    return ta_setup(state, &accel_hlml_ops);
}

static ta_fix *open_fake(void **state) { return ta_open(state, ta_lib("FAKE_HLML_PATH")); }

static void discover_identity(void **state) {
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    assert_int_equal(f->n, 2);
    assert_string_equal(f->driver, "1.18.0"); /* "1.18.0-ee698fb": its dotted number */
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
    assert_int_equal(f->ops->partitions(f->h, &g[0], &f->err), GP_OK);
    assert_int_equal(g[0].nslices, 0);
    assert_int_equal(hl_partitions(NULL, &g[0], &f->err), GP_EINVALID);
}

static void health_and_faults(void **state) {
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    assert_int_equal(hl_health(f->h, g, f->n, &f->err), GP_OK);
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
    assert_int_equal(hl_health(f->h, g, f->n, &f->err), GP_OK);
    assert_true(g[0].ecc_volatile_uncorrected == 4 && g[0].ecc_aggregate_uncorrected == 4);
    assert_int_equal(g[1].temperature_c, 99);
    assert_true(g[1].ecc_volatile_uncorrected == 0);
}

static void critical_events(void **state) {
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    setenv("FAKE_HLML_CRITICAL", "3", 1);
    ta_health(f);
    assert_int_equal(g[1].ncritical, 3);
    assert_int_equal(g[1].critical[0], 2);
    assert_true(g[1].critical_total == 3);
    assert_int_equal(g[0].ncritical, 0);
    /* events are sent once: the next refresh has none, the total stays */
    ta_health(f);
    assert_int_equal(g[1].ncritical, 0);
    assert_true(g[1].critical_total == 3);
    /* more events than the refresh keeps: counted, not all listed */
    setenv("FAKE_HLML_CRITICAL", "40", 1);
    ta_health(f);
    assert_int_equal(g[1].ncritical, ACCEL_MAX_EVENTS);
    assert_true(g[1].critical_total == 43);
}

static void lost_card(void **state) {
    ta_lost_health(open_fake(state), "FAKE_HLML_LOST", 1);
    ta_fix *f = ta_lost_discovery(state, ta_lib("FAKE_HLML_PATH"), "FAKE_HLML_LOST", 1);
    assert_string_equal(f->g[0].uuid, "hl-fake-0000");
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
    char *dir = fake_proc();
    setenv("GPUPOOL_HLML_PROC", dir, 1);
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    accel_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[1], &p), 1);
    assert_int_equal(p[0].pid, 1234);
    assert_true(p[0].memory_mib == -1);
    assert_int_equal(p[0].sm_pct, -1);
    free(p);
    assert_int_equal(ta_procs(f, &g[0], &p), 0);
    accel_gpu far = g[0];
    far.index = ACCEL_MAX_GPUS;
    int np = 0;
    assert_int_equal(hl_processes(f->h, &far, &p, &np, &f->err), GP_EINVALID);
    tu_rmdir(dir);
}

static void missing_library_and_driver(void **state) {
    (void)state;
    ta_open_errors(&accel_hlml_ops, "GPUPOOL_HLML_LIBRARY", ta_lib("FAKE_HLML_PATH"),
                   "HLML not available: no Intel Gaudi driver on this machine (",
                   "FAKE_HLML_ABSENT", "hlml_init returned 9");
}

static void minimal_library(void **state) {
    char *dir = fake_proc();
    setenv("GPUPOOL_HLML_PROC", dir, 1);
    ta_fix *f = ta_open(state, ta_lib("FAKE_HLML_MIN_PATH"));
    accel_gpu *g = f->g;
    assert_int_equal(f->n, 2);
    assert_string_equal(f->driver, "");
    assert_string_equal(g[0].uuid, "");
    assert_string_equal(g[0].runtime, "");
    assert_int_equal(g[0].module_id, -1);
    ta_health(f);
    assert_int_equal(g[1].temperature_c, -1);
    assert_true(g[1].ecc_volatile_uncorrected == -1);
    assert_int_equal(g[1].ncritical, 0);
    accel_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[1], &p), 0); /* no minor number: none */
    tu_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(discover_identity, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_and_faults, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(critical_events, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(lost_card, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_from_device_nodes, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(missing_library_and_driver, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(minimal_library, setup, ta_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
