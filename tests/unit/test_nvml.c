/*
 * test_nvml.c - src/agent/nvml.c against tests/fake_nvml (a fake libnvidia-ml).
 *
 * ctest passes the fake library's path in FAKE_NVML_PATH (and, optionally, a
 * build exporting only the required symbols in FAKE_NVML_MIN_PATH).  Faults
 * are injected through the FAKE_NVML_* variables the fake reads at each call
 * (see tests/fake_nvml/fake_nvml.c); every test starts with them unset.
 */
#include "acceltest.h"

#include "../../src/agent/nvml.h"

#define GIB (1024ULL * 1024ULL * 1024ULL)

static const char *fake_path(void) { return ta_lib("FAKE_NVML_PATH"); }

/* Every test starts with the fake's faults unset and an empty fixture. */
static int setup(void **state) {
    static const char *const vars[] = {
        "FAKE_NVML_ABSENT", "FAKE_NVML_LOST", "FAKE_NVML_DBE", "FAKE_NVML_XID",
        "FAKE_NVML_PROCS_0", "FAKE_NVML_PROCS_1", "FAKE_NVML_SAMPLE_TS", "FAKE_NVML_PROC_API",
        "FAKE_NVML_PROC_RACE", "FAKE_NVML_SAMPLE_REVERSE", "GPUPOOL_NVML_LIBRARY", NULL};
    ta_unsetenv(vars);
    return ta_setup(state, &accel_nvml_ops);
}

/* Open the fake and discover into the test's fixture (closed by ta_teardown). */
static ta_fix *open_fake(void **state) { return ta_open(state, fake_path()); }

static void discover_identity(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    assert_int_equal(f->n, 2);
    assert_string_equal(f->driver, "550.54.15");
    /* the vendor layer's fields (accel.h) */
    for (int i = 0; i < 2; i++) {
        assert_string_equal(g[i].vendor, "nvidia");
        assert_string_equal(g[i].driver_version, "550.54.15");
        assert_string_equal(g[i].runtime, "cuda");
        assert_string_equal(g[i].runtime_version, "12.4");
        assert_int_equal(g[i].module_id, -1);
    }

    assert_int_equal(g[0].index, 0);
    assert_string_equal(g[0].name, "NVIDIA A100-SXM4-80GB");
    assert_string_equal(g[0].uuid, "GPU-fake-0000");
    assert_true(g[0].memory_bytes == 80 * GIB);
    assert_string_equal(g[0].pci_bus, "00000000:07:00.0");
    assert_int_equal(g[0].numa, 0);
    assert_string_equal(g[0].compute_cap, "8.0");
    assert_int_equal(g[0].mig_capable, 1);
    assert_int_equal(g[0].mig_enabled, 0);
    assert_int_equal(g[0].nslices, 0);
    assert_int_equal(g[0].lost, 0);

    assert_int_equal(g[1].index, 1);
    assert_string_equal(g[1].name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(g[1].uuid, "GPU-fake-0001");
    assert_true(g[1].memory_bytes == 80 * GIB);
    assert_string_equal(g[1].pci_bus, "00000000:87:00.0");
    assert_int_equal(g[1].numa, 1);
    assert_string_equal(g[1].compute_cap, "9.0");
    assert_int_equal(g[1].mig_capable, 1);
    assert_int_equal(g[1].mig_enabled, 1);
    assert_int_equal(g[1].lost, 0);

    /* MIG layout, profiles parsed from "NVIDIA H100 80GB HBM3 MIG 3g.40gb" */
    assert_int_equal(g[1].nslices, 2);
    assert_string_equal(g[1].slices[0].uuid, "MIG-fake-0001-0");
    assert_string_equal(g[1].slices[0].profile, "3g.40gb");
    assert_true(g[1].slices[0].memory_bytes == 40 * GIB);
    assert_string_equal(g[1].slices[1].uuid, "MIG-fake-0001-1");
    assert_string_equal(g[1].slices[1].profile, "1g.10gb");
    assert_true(g[1].slices[1].memory_bytes == 10 * GIB);

    /* topology: level 10 between the two, -1 for self and for absent GPUs */
    assert_int_equal(g[0].topology[0], -1);
    assert_int_equal(g[0].topology[1], 10);
    assert_int_equal(g[1].topology[0], 10);
    assert_int_equal(g[1].topology[1], -1);
    for (int j = 2; j < NVML_MAX_GPUS; j++) {
        assert_int_equal(g[0].topology[j], -1);
        assert_int_equal(g[1].topology[j], -1);
    }

    /* health fields start unknown until nvml_health() */
    assert_int_equal(g[0].temperature_c, -1);
    assert_int_equal(g[0].slowdown_c, 0);
    assert_true(g[0].ecc_volatile_uncorrected == -1);

    /* a second discovery on the same handle replaces the event set (no leak) */
    nvml_gpu *g2 = NULL;
    int n2 = 0;
    assert_int_equal(nvml_discover(f->h, &g2, &n2, NULL, &f->err), GP_OK);
    assert_int_equal(n2, 2);
    free(g2);
}

static void health_baseline(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    ta_health(f);
    for (int i = 0; i < f->n; i++) {
        assert_int_equal(g[i].temperature_c, 45);
        assert_int_equal(g[i].slowdown_c, 90);
        assert_true(g[i].ecc_volatile_corrected == 0);
        assert_true(g[i].ecc_volatile_uncorrected == 0);
        assert_true(g[i].ecc_aggregate_corrected == 0);
        assert_true(g[i].ecc_aggregate_uncorrected == 0);
        assert_true(g[i].remapped_correctable == 0);
        assert_true(g[i].remapped_uncorrectable == 0);
        assert_int_equal(g[i].remap_pending, 0);
        assert_int_equal(g[i].remap_failure, 0);
        assert_int_equal(g[i].nxids, 0);
        assert_int_equal(g[i].lost, 0);
    }
    /* supported on GPU 0; "not supported" on the MIG-enabled GPU 1 degrades to -1 */
    assert_int_equal(g[0].util_gpu, 12);
    assert_int_equal(g[0].util_memory, 3);
    assert_int_equal(g[1].util_gpu, -1);
    assert_int_equal(g[1].util_memory, -1);
    assert_true(g[0].retired_pages_pending == 0);
    assert_true(g[1].retired_pages_pending == -1);
    /* identity is left alone */
    assert_string_equal(g[1].uuid, "GPU-fake-0001");
    assert_int_equal(g[1].nslices, 2);
}

static void health_xid_once(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    ta_health(f);
    assert_int_equal(g[1].nxids, 0);

    setenv("FAKE_NVML_XID", "79", 1);
    ta_health(f);
    assert_int_equal(g[0].nxids, 0);
    assert_int_equal(g[1].nxids, 1);
    assert_int_equal(g[1].xids[0], 79);
    assert_int_equal(g[1].lost, 0); /* an Xid is a signal, not a lost card */

    /* drained: the next refresh reports nothing new */
    ta_health(f);
    assert_int_equal(g[0].nxids, 0);
    assert_int_equal(g[1].nxids, 0);
}

/* Memory in use, power draw (both varying from call to call) and the running Xid count. */
static void health_telemetry(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    ta_health(f);
    long long mem0 = g[0].memory_used_bytes;
    int pw0 = g[0].power_mw;
    assert_true(mem0 >= 512LL * 1024 * 1024 && mem0 < 9LL * 1024 * 1024 * 1024);
    assert_true(pw0 >= 70000 && pw0 <= 110000);
    assert_true(g[1].power_mw >= 300000 && g[1].power_mw <= 340000);
    assert_true(g[1].memory_used_bytes >= 512LL * 1024 * 1024);
    assert_true(g[0].xid_total == 0 && g[1].xid_total == 0);
    ta_health(f);
    assert_true(g[0].memory_used_bytes != mem0);
    assert_true(g[0].power_mw != pw0);
    /* Xids: counted as they are drained, and the count survives the refreshes after */
    setenv("FAKE_NVML_XID", "31", 1);
    ta_health(f);
    assert_true(g[1].xid_total == 1);
    setenv("FAKE_NVML_XID", "43", 1);
    ta_health(f);
    assert_true(g[1].xid_total == 2);
    ta_health(f);
    assert_int_equal(g[1].nxids, 0);
    assert_true(g[1].xid_total == 2);
    assert_true(g[0].xid_total == 0);
    /* a lost card: unknown, not zero */
    setenv("FAKE_NVML_LOST", "1", 1);
    ta_health(f);
    assert_true(g[0].memory_used_bytes == -1);
    assert_int_equal(g[0].power_mw, -1);
    unsetenv("FAKE_NVML_LOST");
}

static void health_dbe(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    setenv("FAKE_NVML_DBE", "3", 1);
    ta_health(f);
    assert_true(g[0].ecc_volatile_uncorrected == 3);
    assert_true(g[0].ecc_volatile_corrected == 0);
    assert_true(g[1].ecc_volatile_uncorrected == 0);
    unsetenv("FAKE_NVML_DBE");
    ta_health(f);
    assert_true(g[0].ecc_volatile_uncorrected == 0);
}

static void health_lost(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    ta_lost_health(f, "FAKE_NVML_LOST", 0); /* one lost card never fails the call */
    assert_int_equal(g[1].temperature_c, 45);
    unsetenv("FAKE_NVML_LOST");
    ta_health(f);
    assert_int_equal(g[0].lost, 0);
    assert_int_equal(g[0].temperature_c, 45);
}

static void discover_lost(void **state) {
    /* still listed, so the agent can report it */
    nvml_gpu *g = ta_lost_discovery(state, fake_path(), "FAKE_NVML_LOST", 0)->g;
    assert_int_equal(g[0].topology[1], -1);
    assert_string_equal(g[1].uuid, "GPU-fake-0001");
}

/* A missing library (named or through $GPUPOOL_NVML_LIBRARY) and a missing driver. */
static void open_missing_library(void **state) {
    (void)state;
    ta_open_errors(&accel_nvml_ops, "GPUPOOL_NVML_LIBRARY", fake_path(),
                   "NVML not available: no NVIDIA driver on this machine (", "FAKE_NVML_ABSENT",
                   "NVML not available: the NVIDIA driver is not loaded (");
}

static void open_from_environment(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    void *h = NULL;
    setenv("GPUPOOL_NVML_LIBRARY", fake_path(), 1);
    assert_int_equal(nvml_open(NULL, &h, &err), GP_OK);
    nvml_gpu *g = NULL;
    int n = 0;
    assert_int_equal(nvml_discover(h, &g, &n, NULL, &err), GP_OK);
    assert_int_equal(n, 2);
    free(g);
    nvml_close(h);
}

static void open_driver_absent(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    void *h = NULL;
    setenv("FAKE_NVML_ABSENT", "1", 1);
    assert_int_equal(nvml_open(fake_path(), &h, &err), GP_EUNSUPPORTED);
    assert_null(h);
    assert_non_null(strstr(err.msg, "NVIDIA driver is not loaded"));
    assert_non_null(strstr(err.msg, "nvmlInit_v2"));
    assert_non_null(strstr(err.msg, "Driver Not Loaded"));
}

static void bad_arguments(void **state) {
    gp_err err = GP_ERR_INIT;
    nvml_close(NULL);
    assert_int_equal(nvml_open(fake_path(), NULL, &err), GP_EINVALID);
    nvml_gpu *g = NULL;
    int n = 0;
    assert_int_equal(nvml_discover(NULL, &g, &n, NULL, &err), GP_EINVALID);
    ta_fix *f = open_fake(state);
    void *h = f->h;
    g = f->g;
    assert_int_equal(nvml_discover(h, NULL, &n, NULL, &err), GP_EINVALID);
    assert_int_equal(nvml_health(h, NULL, 2, &err), GP_EINVALID);
    assert_int_equal(nvml_health(h, g, -1, &err), GP_EINVALID);
    assert_int_equal(nvml_health(h, g, 0, &err), GP_OK);
    nvml_proc *p = (nvml_proc *)&err; /* reset to NULL even on bad arguments */
    int np = 7;
    assert_int_equal(nvml_processes(NULL, &g[0], &p, &np, &err), GP_EINVALID);
    assert_null(p);
    assert_int_equal(np, 0);
    assert_int_equal(nvml_processes(h, NULL, &p, &np, &err), GP_EINVALID);
    assert_int_equal(nvml_processes(h, &g[0], NULL, &np, &err), GP_EINVALID);
    assert_int_equal(nvml_processes(h, &g[0], &p, NULL, &err), GP_EINVALID);
    nvml_gpu far = g[0];
    far.index = NVML_MAX_GPUS;
    assert_int_equal(nvml_processes(h, &far, &p, &np, &err), GP_EINVALID);
    assert_int_equal(nvml_partitions(NULL, &g[0], &err), GP_EINVALID);
    assert_int_equal(nvml_partitions(h, NULL, &err), GP_EINVALID);
    assert_int_equal(nvml_partitions(h, &far, &err), GP_EINVALID);
}

/* A library exporting only the required symbols: everything optional degrades. */
static void minimal_library(void **state) {
    (void)state;
    const char *p = getenv("FAKE_NVML_MIN_PATH");
    if (!p || !*p) skip();
    gp_err err = GP_ERR_INIT;
    void *h = NULL;
    assert_int_equal(nvml_open(p, &h, &err), GP_OK);
    nvml_gpu *g = NULL;
    int n = 0;
    char driver[80] = "x";
    assert_int_equal(nvml_discover(h, &g, &n, driver, &err), GP_OK);
    assert_int_equal(n, 2);
    assert_string_equal(driver, "");
    assert_string_equal(g[0].uuid, "");
    assert_string_equal(g[0].runtime, ""); /* no nvmlSystemGetCudaDriverVersion_v2 */
    assert_string_equal(g[0].vendor, "nvidia");
    assert_string_equal(g[0].compute_cap, "");
    assert_int_equal(g[0].numa, -1);
    assert_int_equal(g[1].mig_capable, 0);
    assert_int_equal(g[1].nslices, 0);
    assert_int_equal(g[0].topology[1], -1);
    setenv("FAKE_NVML_XID", "48", 1);
    assert_int_equal(nvml_health(h, g, n, &err), GP_OK);
    assert_true(g[0].ecc_volatile_uncorrected == -1);
    assert_true(g[0].remapped_correctable == -1);
    assert_true(g[0].retired_pages_pending == -1);
    assert_int_equal(g[0].temperature_c, -1);
    assert_int_equal(g[0].slowdown_c, 0);
    assert_int_equal(g[0].util_gpu, -1);
    assert_true(g[0].memory_used_bytes == -1);
    assert_int_equal(g[0].power_mw, -1);
    assert_int_equal(g[1].nxids, 0);
    assert_int_equal(g[0].lost, 0);
    free(g);
    nvml_close(h);
}

/* ---- nvml_processes ---------------------------------------------------------- */

static void assert_proc(const nvml_proc *p, unsigned pid, long long mib, int sm) {
    assert_int_equal(p->pid, pid);
    assert_true(p->memory_mib == mib);
    assert_int_equal(p->sm_pct, sm);
}

/* "pid:mem:sm" entries for pids base.. base+count-1, each 10 MiB and no sample. */
static char *many_procs(unsigned base, int count) {
    size_t cap = (size_t)count * 24 + 1;
    char *s = calloc(1, cap);
    assert_non_null(s);
    size_t len = 0;
    for (int i = 0; i < count; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%u:10:-", i ? "," : "", base + (unsigned)i);
    return s;
}

static void processes_memory_sm(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    nvml_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[0], &p), 0); /* nothing running */

    /* pid 100 has two samples: the newest (55) wins; pid 101 has no sample */
    setenv("FAKE_NVML_PROCS_0", "100:2048:30/55,101:512:-,102:0:100", 1);
    /* GPU 1 is MIG-enabled: its process utilisation is "not supported" */
    setenv("FAKE_NVML_PROCS_1", "400:1024:90", 1);
    assert_int_equal(ta_procs(f, &g[0], &p), 3);
    assert_proc(&p[0], 100, 2048, 55);
    assert_proc(&p[1], 101, 512, -1);
    assert_proc(&p[2], 102, 0, 100);
    free(p);
    assert_int_equal(ta_procs(f, &g[1], &p), 1);
    assert_proc(&p[0], 400, 1024, -1);
    free(p);
    assert_int_equal(g[1].lost, 0);
}

/* The newest sample of a pid wins by timestamp, whatever order NVML lists them in. */
static void processes_newest_sample(void **state) {
    setenv("FAKE_NVML_PROCS_0", "100:2048:10/55/30,300:-:5/7", 1);
    for (int reverse = 0; reverse < 2; reverse++) {
        setenv("FAKE_NVML_SAMPLE_REVERSE", reverse ? "1" : "0", 1);
        ta_fix *f = open_fake(state); /* fresh handle: timestamp 0 */
        nvml_proc *p = NULL;
        assert_int_equal(ta_procs(f, &f->g[0], &p), 2);
        assert_proc(&p[0], 100, 2048, 30);
        assert_proc(&p[1], 300, -1, 7);
        free(p);
    }
}

static void processes_sample_only(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    /* 300 was sampled but is no longer in the compute list (it just exited) */
    setenv("FAKE_NVML_PROCS_0", "100:2048:20,300:-:7/9", 1);
    nvml_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[0], &p), 2);
    assert_proc(&p[0], 100, 2048, 20);
    assert_proc(&p[1], 300, -1, 9);
    free(p);
}

static void processes_unknown_memory(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    /* NVML_VALUE_NOT_AVAILABLE; and one pid listed twice (two compute instances): summed,
       unless one of its entries is unknown */
    setenv("FAKE_NVML_PROCS_0", "200:na:40,201:1000:-,201:24:-,202:5:-,202:na:-", 1);
    nvml_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[0], &p), 3);
    assert_proc(&p[0], 200, -1, 40);
    assert_proc(&p[1], 201, 1024, -1);
    assert_proc(&p[2], 202, -1, -1);
    free(p);
}

static void processes_resize(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    nvml_proc *p = NULL;

    /* more processes than the first buffer holds: INSUFFICIENT_SIZE, then a larger one */
    char *list = many_procs(1000, 40);
    setenv("FAKE_NVML_PROCS_0", list, 1);
    free(list);
    assert_int_equal(ta_procs(f, &g[0], &p), 40);
    for (int i = 0; i < 40; i++) assert_proc(&p[i], 1000 + (unsigned)i, 10, -1);
    free(p);

    /* a process starts between sizing and reading: INSUFFICIENT_SIZE once, retried */
    setenv("FAKE_NVML_PROCS_0", "100:2048:55", 1);
    setenv("FAKE_NVML_PROC_RACE", "1", 1);
    assert_int_equal(ta_procs(f, &g[0], &p), 1);
    assert_proc(&p[0], 100, 2048, 55);
    free(p);

    /* beyond NVML_MAX_PROCS the compute list is unreadable: nothing, never an error */
    list = many_procs(5000, NVML_MAX_PROCS + 1);
    setenv("FAKE_NVML_PROCS_0", list, 1);
    free(list);
    assert_int_equal(ta_procs(f, &g[0], &p), 0);
    assert_int_equal(g[0].lost, 0);
}

/* Older libraries: _v3 (then _v2) answer "function not found"; v1 has a 16-byte layout. */
static void processes_older_api(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    setenv("FAKE_NVML_PROCS_0", "100:2048:-,200:na:-,300:7:-", 1);
    const char *apis[] = {"2", "1"};
    for (int a = 0; a < 2; a++) {
        setenv("FAKE_NVML_PROC_API", apis[a], 1);
        nvml_proc *p = NULL;
        assert_int_equal(ta_procs(f, &g[0], &p), 3);
        assert_proc(&p[0], 100, 2048, -1);
        assert_proc(&p[1], 200, -1, -1);
        assert_proc(&p[2], 300, 7, -1);
        free(p);
    }
}

static void processes_timestamp(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    setenv("FAKE_NVML_PROCS_0", "100:2048:30/55,300:-:7", 1);
    nvml_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[0], &p), 2);
    assert_proc(&p[0], 100, 2048, 55);
    assert_proc(&p[1], 300, -1, 7);
    free(p);

    /* no sample since the previous call: still listed, SM unknown; 300 is gone */
    assert_int_equal(ta_procs(f, &g[0], &p), 1);
    assert_proc(&p[0], 100, 2048, -1);
    free(p);

    /* the timestamp is per GPU: GPU 1 is unaffected (and has none), GPU 0 sees new samples */
    assert_int_equal(ta_procs(f, &g[1], &p), 0);
    setenv("FAKE_NVML_PROCS_0", "100:2048:80,300:-:-", 1);
    setenv("FAKE_NVML_SAMPLE_TS", "2000", 1);
    assert_int_equal(ta_procs(f, &g[0], &p), 1);
    assert_proc(&p[0], 100, 2048, 80);
    free(p);
    assert_int_equal(ta_procs(f, &g[0], &p), 1);
    assert_proc(&p[0], 100, 2048, -1);
    free(p);

    /* a fresh handle starts from timestamp 0 and sees the samples the driver still holds */
    ta_fix f2 = {.ops = &accel_nvml_ops};
    void *st2 = &f2;
    ta_open(&st2, fake_path());
    assert_int_equal(ta_procs(&f2, &f2.g[0], &p), 1);
    assert_proc(&p[0], 100, 2048, 80);
    free(p);
    ta_close(&f2);
}

static void processes_lost(void **state) {
    ta_fix *f = open_fake(state);
    nvml_gpu *g = f->g;
    setenv("FAKE_NVML_PROCS_0", "100:2048:55", 1);
    setenv("FAKE_NVML_LOST", "1", 1);
    nvml_proc *p = NULL;
    assert_int_equal(ta_procs(f, &g[0], &p), 0); /* GP_OK, nothing read */
    assert_int_equal(g[0].lost, 1);
}

/* Without the optional process symbols: no processes, GP_OK. */
static void processes_minimal_library(void **state) {
    const char *path = getenv("FAKE_NVML_MIN_PATH");
    if (!path || !*path) skip();
    setenv("FAKE_NVML_PROCS_0", "100:2048:55", 1);
    gp_err err = GP_ERR_INIT;
    ta_fix *f = *state; /* opened here, closed by ta_teardown */
    assert_int_equal(nvml_open(path, &f->h, &err), GP_OK);
    assert_int_equal(nvml_discover(f->h, &f->g, &f->n, NULL, &err), GP_OK);
    assert_int_equal(f->n, 2);
    nvml_proc *p = NULL;
    assert_int_equal(ta_procs(f, &f->g[0], &p), 0);
    assert_int_equal(f->g[0].lost, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(discover_identity, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_baseline, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_xid_once, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_telemetry, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_dbe, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(health_lost, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(discover_lost, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(open_missing_library, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(open_from_environment, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(open_driver_absent, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(minimal_library, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_memory_sm, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_newest_sample, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_sample_only, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_unknown_memory, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_resize, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_older_api, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_timestamp, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_lost, setup, ta_teardown),
        cmocka_unit_test_setup_teardown(processes_minimal_library, setup, ta_teardown),
    };
    return cmocka_run_group_tests_name("nvml", tests, NULL, NULL);
}
