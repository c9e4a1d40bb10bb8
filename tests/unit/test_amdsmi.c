/*
 * test_amdsmi.c - src/agent/amdsmi.c against tests/fake_amdsmi (a fake libamd_smi).
 *
 * ctest passes the fake library's path in FAKE_AMDSMI_PATH and a build that
 * exports only the required symbols in FAKE_AMDSMI_MIN_PATH.  Faults come
 * from the FAKE_AMDSMI_* variables the fake reads at each call (see
 * tests/fake_amdsmi/fake_amdsmi.c); every test starts with them unset.
 */
#include "acceltest.h"

#include "../../src/agent/amdsmi.h"

#include <sys/stat.h>

#define GIB (1024ULL * 1024ULL * 1024ULL)

/* Every test starts with the fake's faults unset and an empty fixture. */
static int setup(void **state) {
    static const char *const vars[] = {
        "FAKE_AMDSMI_ABSENT", "FAKE_AMDSMI_LOST", "FAKE_AMDSMI_CE", "FAKE_AMDSMI_UE",
        "FAKE_AMDSMI_DEFERRED", "FAKE_AMDSMI_BAD_PAGES", "FAKE_AMDSMI_TEMP", "FAKE_AMDSMI_PROCS_0",
        "FAKE_AMDSMI_PROCS_3", "FAKE_AMDSMI_PROCS_8", "FAKE_AMDSMI_PROCS_N_8",
        "GPUPOOL_AMDSMI_LIBRARY", NULL};
    ta_unsetenv(vars);
    setenv("ROCM_PATH", "/nonexistent-rocm", 1);
    return ta_setup(state, &accel_amdsmi_ops);
}

static ta_fix *open_fake(void **state) { return ta_open(state, ta_lib("FAKE_AMDSMI_PATH")); }

static void discover_partitions(void **state) {
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    assert_int_equal(f->n, 2);
    assert_string_equal(f->driver, "6.8.5"); /* "6.8.5-2041575": its dotted number */
    /* card 0: 8 CPX partitions grouped by BDF into one card */
    assert_string_equal(g[0].vendor, "amd");
    assert_string_equal(g[0].name, "AMD Instinct MI300X");
    assert_string_equal(g[0].uuid, "a0000000-0000-1000-8000-000000000000");
    assert_true(g[0].memory_bytes == 192 * GIB); /* NPS1: shared, not 8 x 192 */
    assert_string_equal(g[0].pci_bus, "0000:0c:00.0");
    assert_int_equal(g[0].numa, 0);
    assert_string_equal(g[0].compute_cap, "gfx942");
    assert_string_equal(g[0].driver_version, "6.8.5");
    assert_string_equal(g[0].runtime, ""); /* no ROCm version file */
    assert_int_equal(g[0].mig_capable, 1);
    assert_int_equal(g[0].mig_enabled, 1);
    assert_int_equal(g[0].nslices, 8);
    for (int k = 0; k < 8; k++) {
        assert_string_equal(g[0].slices[k].profile, "cpx.24gb");
        assert_true(g[0].slices[k].memory_bytes == 24 * GIB);
        assert_int_equal(g[0].slices[k].index, k);
    }
    /* partition 0's UUID is the card's: the slice gets a derived one; the others keep theirs */
    assert_string_equal(g[0].slices[0].uuid, "a0000000-0000-1000-8000-000000000000-p0");
    assert_string_equal(g[0].slices[3].uuid, "a0000000-0000-1000-8000-000000000003");
    /* card 1: SPX, a whole card */
    assert_string_equal(g[1].uuid, "b1000000-0000-1000-8000-000000000001");
    assert_string_equal(g[1].pci_bus, "0000:8c:00.0");
    assert_int_equal(g[1].numa, 1);
    assert_int_equal(g[1].mig_capable, 1);
    assert_int_equal(g[1].mig_enabled, 0);
    assert_int_equal(g[1].nslices, 0);
    assert_true(g[1].memory_bytes == 192 * GIB);
    assert_int_equal(g[1].lost, 0);
    /* the partitions op re-reads the same layout */
    assert_int_equal(f->ops->partitions(f->h, &g[0], &f->err), GP_OK);
    assert_int_equal(g[0].nslices, 8);
}

static void rocm_version_file(void **state) {
    char *dir = tu_mkdtemp(), path[600];
    snprintf(path, sizeof path, "%s/.info", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/.info/version", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("6.2.0-66\n", fp);
    fclose(fp);
    setenv("ROCM_PATH", dir, 1);
    ta_fix *f = open_fake(state);
    assert_string_equal(f->g[1].runtime, "rocm");
    assert_string_equal(f->g[1].runtime_version, "6.2.0");
    tu_rmdir(dir);
}

static void health_defaults_and_faults(void **state) {
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    assert_int_equal(amd_health(f->h, g, f->n, &f->err), GP_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(g[i].temperature_c, 50);
        assert_int_equal(g[i].slowdown_c, 105);
        assert_int_equal(g[i].util_gpu, 30);
        assert_int_equal(g[i].util_memory, 10);
        assert_true(g[i].ecc_aggregate_corrected == 0 && g[i].ecc_aggregate_uncorrected == 0);
        assert_true(g[i].ecc_deferred == 0 && g[i].bad_pages == 0);
        assert_true(g[i].ecc_volatile_uncorrected == -1); /* AMD SMI has totals only */
        assert_true(g[i].memory_used_bytes == (long long)GIB); /* NPS1: read once */
        assert_true(g[i].retired_pages_pending == -1 && g[i].remapped_correctable == -1);
    }
    assert_int_equal(g[0].power_mw, 350000);
    assert_int_equal(g[1].power_mw, 400000);
    setenv("FAKE_AMDSMI_CE", "5", 1);
    setenv("FAKE_AMDSMI_UE", "2", 1);
    setenv("FAKE_AMDSMI_DEFERRED", "1", 1);
    setenv("FAKE_AMDSMI_BAD_PAGES", "3", 1);
    setenv("FAKE_AMDSMI_TEMP", "95", 1);
    assert_int_equal(amd_health(f->h, g, f->n, &f->err), GP_OK);
    assert_true(g[1].ecc_aggregate_corrected == 5 && g[1].ecc_aggregate_uncorrected == 2);
    assert_true(g[1].ecc_deferred == 1 && g[1].bad_pages == 3);
    /* per RAS block: UMC holds them; unsupported blocks stay unknown */
    assert_string_equal(accel_ras_blocks[0].name, "umc");
    assert_true(g[1].ras_uncorrectable[0] == 2);
    assert_true(g[1].ras_uncorrectable[2] == 0);  /* gfx */
    assert_true(g[1].ras_uncorrectable[4] == -1); /* pcie_bif: not supported */
    assert_true(g[0].ras_uncorrectable[0] == 0);
    assert_int_equal(g[1].temperature_c, 95);
    assert_true(g[0].ecc_aggregate_uncorrected == 0 && g[0].bad_pages == 0);
}

static void lost_card(void **state) {
    ta_fix *f = open_fake(state);
    ta_lost_health(f, "FAKE_AMDSMI_LOST", 1);
    assert_int_equal(f->g[0].temperature_c, 50);
    accel_proc *p = NULL;
    assert_int_equal(ta_procs(f, &f->g[1], &p), 0);
    /* lost at discovery: still listed, with what could be read */
    f = ta_lost_discovery(state, ta_lib("FAKE_AMDSMI_PATH"), "FAKE_AMDSMI_LOST", 1);
    assert_int_equal(f->g[0].nslices, 8);
}

static void processes_over_partitions(void **state) {
    setenv("FAKE_AMDSMI_PROCS_0", "100:2048,200:512", 1);
    setenv("FAKE_AMDSMI_PROCS_3", "100:1024,300:10", 1);
    ta_fix *f = open_fake(state);
    accel_proc *p = NULL;
    assert_int_equal(ta_procs(f, &f->g[0], &p), 3);
    assert_int_equal(p[0].pid, 100);
    assert_true(p[0].memory_mib == 3072); /* on two partitions: summed, listed once */
    assert_int_equal(p[1].pid, 200);
    assert_true(p[1].memory_mib == 512);
    assert_int_equal(p[2].pid, 300);
    assert_int_equal(p[2].sm_pct, -1); /* AMD SMI has no per-process utilisation */
    free(p);
    assert_int_equal(ta_procs(f, &f->g[1], &p), 0);
}

static void process_list_bounds(void **state) {
    ta_fix *f = open_fake(state);
    accel_gpu *g = f->g;
    accel_proc *p = NULL;
    setenv("FAKE_AMDSMI_PROCS_N_8", "100", 1); /* more than the first list holds: grown */
    assert_int_equal(ta_procs(f, &g[1], &p), 100);
    assert_int_equal(p[99].pid, 10099);
    free(p);
    char many[16];
    snprintf(many, sizeof many, "%d", ACCEL_MAX_PROCS);
    setenv("FAKE_AMDSMI_PROCS_N_8", many, 1); /* exactly the bound: read */
    assert_int_equal(ta_procs(f, &g[1], &p), ACCEL_MAX_PROCS);
    free(p);
    snprintf(many, sizeof many, "%d", ACCEL_MAX_PROCS + 1);
    setenv("FAKE_AMDSMI_PROCS_N_8", many, 1); /* beyond: unreadable, never an error */
    assert_int_equal(ta_procs(f, &g[1], &p), 0);
    accel_gpu far = g[1];
    far.index = 99;
    int np = 0;
    assert_int_equal(amd_processes(f->h, &far, &p, &np, &f->err), GP_EINVALID);
}

static void missing_library_and_driver(void **state) {
    (void)state;
    ta_open_errors(&accel_amdsmi_ops, "GPUPOOL_AMDSMI_LIBRARY", ta_lib("FAKE_AMDSMI_PATH"),
                   "AMD SMI not available: no AMD GPU driver stack on this machine (",
                   "FAKE_AMDSMI_ABSENT", "amdsmi_init returned 34");
    /* the NVML fake is no AMD SMI: a required symbol is missing */
    const char *nv = getenv("FAKE_NVML_PATH");
    if (nv && *nv) {
        gp_err e4 = GP_ERR_INIT;
        void *h = &e4; /* must be reset to NULL */
        assert_int_equal(amd_open(nv, &h, &e4), GP_EUNSUPPORTED);
        assert_null(h);
        assert_non_null(strstr(e4.msg, "lacks amdsmi_init"));
    }
}

static void minimal_library(void **state) {
    ta_fix *f = ta_open(state, ta_lib("FAKE_AMDSMI_MIN_PATH"));
    accel_gpu *g = f->g;
    /* no BDF ids: every processor is a card of its own, with nothing else known */
    assert_int_equal(f->n, 9);
    assert_string_equal(f->driver, "");
    assert_string_equal(g[0].uuid, "");
    assert_true(g[0].memory_bytes == 0);
    assert_int_equal(g[0].mig_capable, 0);
    assert_int_equal(g[0].nslices, 0);
    ta_health(f);
    assert_int_equal(g[3].temperature_c, -1);
    assert_true(g[3].ecc_aggregate_uncorrected == -1 && g[3].bad_pages == -1);
    assert_true(g[3].ras_uncorrectable[0] == -1);
    assert_int_equal(g[3].power_mw, -1);
    assert_true(g[3].memory_used_bytes == -1);
    accel_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[3], &p), 0);
}

/* The vendor layer's table names AMD SMI and its entry points, and the agent's calls work. */
static void ops_table(void **state) {
    assert_string_equal(accel_amdsmi_ops.vendor, "amd");
    assert_string_equal(accel_amdsmi_ops.source, "amdsmi");
    assert_true(accel_amdsmi_ops.open == amd_open && accel_amdsmi_ops.discover == amd_discover);
    assert_true(accel_amdsmi_ops.health == amd_health && accel_amdsmi_ops.close == amd_close);
    assert_true(accel_amdsmi_ops.processes == amd_processes &&
                accel_amdsmi_ops.partitions == amd_partitions);
    ta_fix *f = open_fake(state);
    assert_int_equal(f->n, 2);
    ta_health(f);
    assert_int_equal(f->g[0].util_gpu, 30);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(discover_partitions, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(rocm_version_file, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_defaults_and_faults, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(lost_card, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_over_partitions, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(process_list_bounds, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(missing_library_and_driver, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(minimal_library, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(ops_table, setup, ta_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
