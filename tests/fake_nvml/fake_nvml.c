/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1 used by the unit tests.
 *
 * Exports the NVML symbols src/agent/nvml.c resolves, with NVML's names and
 * x86-64 ABI (types declared here independently, as the real library would),
 * and simulates one machine:
 *   GPU 0  "NVIDIA A100-SXM4-80GB"  GPU-fake-0000  80 GiB  cc 8.0  NUMA 0
 *          00000000:07:00.0, MIG capable but disabled
 *   GPU 1  "NVIDIA H100 80GB HBM3"  GPU-fake-0001  80 GiB  cc 9.0  NUMA 1
 *          00000000:87:00.0, MIG enabled: MIG-fake-0001-0 (3g.40gb, 40 GiB)
 *          and MIG-fake-0001-1 (1g.10gb, 10 GiB)
 *   driver 550.54.15 (CUDA 12.4 from nvmlSystemGetCudaDriverVersion_v2); topology level 10 (one PCIe switch) between the two;
 *   45 C with a 90 C slowdown threshold; ECC counters and remapped rows zero;
 *   utilisation 12 % / 3 % on GPU 0, "not supported" on the MIG-enabled GPU 1;
 *   memory in use 512 MiB + (k mod 8) GiB on the k-th nvmlDeviceGetMemoryInfo call of a
 *   physical GPU (counted across GPUs), 0 on a MIG device; power 70 W + (k mod 5) x 10 W
 *   on GPU 0 and 300 W + (k mod 5) x 10 W on GPU 1 on the k-th nvmlDeviceGetPowerUsage call
 *   (deterministic, varying samples);
 *   pending page retirement 0 on GPU 0, "not supported" on GPU 1.
 *
 * Faults, read from the environment at each call:
 *   FAKE_NVML_ABSENT=1  nvmlInit_v2 returns 9 (driver not loaded)
 *   FAKE_NVML_LOST=1    every call on GPU 0 returns 15 (GPU is lost)
 *   FAKE_NVML_DBE=<n>   GPU 0's uncorrected ECC count (volatile and aggregate) is n
 *   FAKE_NVML_XID=<n>   the event set reports one Xid event (type 0x8, data n) on
 *                       GPU 1, once per process for each distinct n, provided
 *                       GPU 1 registered Xid events on that set
 *
 * Processes, also read from the environment at each call (none by default):
 *   FAKE_NVML_PROCS_<gpu>=<pid>:<mem>:<sm>[,...]  the processes on physical GPU <gpu>
 *       <mem>  MiB of GPU memory in the compute list; "na" listed with
 *              NVML_VALUE_NOT_AVAILABLE; "-" not in the compute list at all
 *       <sm>   SM % samples, oldest first, separated by "/" (at most 4); "-" none
 *       e.g. FAKE_NVML_PROCS_0=100:2048:30/55,200:na:-,300:-:7
 *   FAKE_NVML_SAMPLE_TS=<t>  timestamp of the first scripted sample (default 1000); the
 *       k-th sample of the list (counting across processes) has t + k.  Samples at or
 *       before the caller's lastSeenTimeStamp are not returned (NOT_FOUND when none is
 *       left), so raising t is how a test publishes "new" samples.
 *   FAKE_NVML_SAMPLE_REVERSE=1  samples come back newest first (NVML promises no order).
 *   FAKE_NVML_PROC_API=<v>   newest nvmlDeviceGetComputeRunningProcesses version that works
 *       (3, 2 or 1 = unversioned); newer versions answer 13 (function not found).
 *       Default 3.
 *   FAKE_NVML_PROC_RACE=<n>  the next compute-list call answers 7 (insufficient size,
 *       asking for one more entry than the caller offered) as if a process had just
 *       started; once per process for each distinct n.
 * Process utilisation is "not supported" on the MIG-enabled GPU 1 (its compute list works).
 *
 * Calls before nvmlInit_v2 (or after the last nvmlShutdown) return 1
 * (uninitialised), so tests notice a caller that skips initialisation.
 *
 * Built with -DFAKE_NVML_MINIMAL it exports only the four symbols nvml.c
 * requires, to test that every optional call degrades gracefully.
 * Not thread-safe; tests are single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef struct fake_dev fake_dev;
typedef fake_dev *nvmlDevice_t;
typedef struct fake_evset *nvmlEventSet_t;
typedef int nvmlReturn_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

enum {
    OK = 0,
    UNINITIALIZED = 1,
    INVALID_ARGUMENT = 2,
    NOT_SUPPORTED = 3,
    NOT_FOUND = 6,
    INSUFFICIENT_SIZE = 7,
    DRIVER_NOT_LOADED = 9,
    TIMEOUT = 10,
    FUNCTION_NOT_FOUND = 13,
    GPU_IS_LOST = 15,
};

#define GIB (1024ULL * 1024ULL * 1024ULL)
#define EV_SUPPORTED 0x4C0FULL /* SBE, DBE, PState, Xid, retirement, retirement failure, unavailable */

struct fake_dev {
    const char *name, *uuid, *bus;
    unsigned long long mem;
    int gpu;    /* index of the physical GPU */
    int mig;    /* -1 for a physical GPU, else the MIG device's index */
    int ccmaj, ccmin, numa, migmode;
};

static fake_dev g_devs[2] = {
    {"NVIDIA A100-SXM4-80GB", "GPU-fake-0000", "00000000:07:00.0", 80 * GIB, 0, -1, 8, 0, 0, 0},
    {"NVIDIA H100 80GB HBM3", "GPU-fake-0001", "00000000:87:00.0", 80 * GIB, 1, -1, 9, 0, 1, 1},
};

static int g_init; /* nvmlInit_v2 reference count */

static int env_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* ---- required ------------------------------------------------------------- */

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) {
    if (env_flag("FAKE_NVML_ABSENT")) return DRIVER_NOT_LOADED;
    g_init++;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
    if (g_init <= 0) return UNINITIALIZED;
    g_init--;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    if (g_init <= 0) return UNINITIALIZED;
    if (!count) return INVALID_ARGUMENT;
    *count = 2;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev) {
    if (g_init <= 0) return UNINITIALIZED;
    if (index >= 2 || !dev) return INVALID_ARGUMENT;
    *dev = &g_devs[index];
    return OK;
}

#ifndef FAKE_NVML_MINIMAL
/* ---- optional --------------------------------------------------------------- */

static fake_dev g_migs[2] = {
    {"NVIDIA H100 80GB HBM3 MIG 3g.40gb", "MIG-fake-0001-0", "00000000:87:00.0", 40 * GIB, 1, 0,
     9, 0, 1, 1},
    {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "MIG-fake-0001-1", "00000000:87:00.0", 10 * GIB, 1, 1,
     9, 0, 1, 1},
};

struct fake_evset {
    unsigned long long mask[2]; /* registered events per physical GPU */
};

static long long g_xid_reported; /* last Xid value reported (0: none yet) */

static long long env_num(const char *name) {
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : 0;
}

static int valid_dev(nvmlDevice_t d) {
    return d == &g_devs[0] || d == &g_devs[1] || d == &g_migs[0] || d == &g_migs[1];
}

/* Common prologue of device calls: initialised, a device we handed out, not lost. */
static int dev_check(nvmlDevice_t d) {
    if (g_init <= 0) return UNINITIALIZED;
    if (!valid_dev(d)) return INVALID_ARGUMENT;
    if (d->gpu == 0 && env_flag("FAKE_NVML_LOST")) return GPU_IS_LOST;
    return OK;
}

static int put_str(char *dst, unsigned len, const char *src) {
    if (!dst) return INVALID_ARGUMENT;
    if (strlen(src) + 1 > len) return INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return OK;
}

FAKE_EXPORT const char *nvmlErrorString(nvmlReturn_t rc) {
    switch (rc) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case INSUFFICIENT_SIZE: return "Insufficient Size";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case TIMEOUT: return "Timeout";
    case FUNCTION_NOT_FOUND: return "Function Not Found";
    case GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned len) {
    if (g_init <= 0) return UNINITIALIZED;
    return put_str(version, len, "550.54.15");
}

/* CUDA 12.4, as the driver encodes it (1000 * major + 10 * minor). */
FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    if (g_init <= 0) return UNINITIALIZED;
    if (!version) return 2; /* invalid argument */
    *version = 12040;
    return 0;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len) {
    int rc = dev_check(d);
    return rc ? rc : put_str(name, len, d->name);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len) {
    int rc = dev_check(d);
    return rc ? rc : put_str(uuid, len, d->uuid);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!m) return INVALID_ARGUMENT;
    static unsigned calls; /* memory in use varies from one call to the next */
    m->total = d->mem;
    m->used = d->mig < 0 ? 512ULL * 1024 * 1024 + (calls++ % 8) * GIB : 0;
    m->free = m->total - m->used;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!p) return INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    /* Fill busId completely (no terminator needed within 32 bytes, but keep one). */
    memcpy(p->busId, d->bus, strlen(d->bus) + 1);
    memcpy(p->busIdLegacy, d->bus + 4, strlen(d->bus + 4) + 1);
    p->bus = d->gpu == 0 ? 0x07 : 0x87;
    p->pciDeviceId = d->gpu == 0 ? 0x20B210DEu : 0x233010DEu;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned *node) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!node) return INVALID_ARGUMENT;
    *node = (unsigned)d->numa;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major,
                                                            int *minor) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!major || !minor) return INVALID_ARGUMENT;
    *major = d->ccmaj;
    *minor = d->ccmin;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *current,
                                              unsigned *pending) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !current || !pending) return INVALID_ARGUMENT;
    *current = *pending = (unsigned)d->migmode;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *count) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !count) return INVALID_ARGUMENT;
    *count = 7;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned index,
                                                             nvmlDevice_t *mig) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !d->migmode || !mig || index >= 7) return INVALID_ARGUMENT;
    if (index >= 2) return NOT_FOUND;
    *mig = &g_migs[index];
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                                             int *level) {
    int rc = dev_check(a);
    if (!rc) rc = dev_check(b);
    if (rc) return rc;
    if (!level || a->mig >= 0 || b->mig >= 0) return INVALID_ARGUMENT;
    *level = a == b ? 0 : 10;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
                                                     unsigned long long *count) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !count || type < 0 || type > 1 || counter < 0 || counter > 1)
        return INVALID_ARGUMENT;
    *count = 0;
    if (d->gpu == 0 && type == 1) { /* aggregate includes volatile */
        long long dbe = env_num("FAKE_NVML_DBE");
        *count = dbe > 0 ? (unsigned long long)dbe : 0;
    }
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc,
                                                   unsigned *pending, unsigned *failure) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !corr || !unc || !pending || !failure) return INVALID_ARGUMENT;
    *corr = *unc = *pending = *failure = 0;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!pending) return INVALID_ARGUMENT;
    if (d->gpu == 1) return NOT_SUPPORTED;
    *pending = 0;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *temp) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (sensor != 0 || !temp) return INVALID_ARGUMENT;
    *temp = 45;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, int kind,
                                                           unsigned *temp) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!temp) return INVALID_ARGUMENT;
    switch (kind) {
    case 0: *temp = 92; return OK;  /* shutdown */
    case 1: *temp = 90; return OK;  /* slowdown */
    default: return NOT_SUPPORTED;
    }
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!u) return INVALID_ARGUMENT;
    if (d->migmode) return NOT_SUPPORTED;
    u->gpu = 12;
    u->memory = 3;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw) {
    static unsigned calls;
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !mw) return INVALID_ARGUMENT;
    *mw = (d->gpu == 0 ? 70000u : 300000u) + (calls++ % 5) * 10000u;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    if (g_init <= 0) return UNINITIALIZED;
    if (!set) return INVALID_ARGUMENT;
    *set = calloc(1, sizeof **set); /* leaks show up in the tests if never freed */
    return *set ? OK : 999;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    if (g_init <= 0) return UNINITIALIZED;
    if (!set) return INVALID_ARGUMENT;
    free(set);
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d,
                                                          unsigned long long *types) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !types) return INVALID_ARGUMENT;
    *types = EV_SUPPORTED;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long mask,
                                                  nvmlEventSet_t set) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (d->mig >= 0 || !set) return INVALID_ARGUMENT;
    if (mask & ~EV_SUPPORTED) return NOT_SUPPORTED;
    set->mask[d->gpu] |= mask;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                             unsigned timeout_ms) {
    (void)timeout_ms; /* never blocks: nothing pending means an immediate timeout */
    if (g_init <= 0) return UNINITIALIZED;
    if (!set || !data) return INVALID_ARGUMENT;
    long long xid = env_num("FAKE_NVML_XID");
    if (xid > 0 && xid != g_xid_reported && (set->mask[1] & 0x8ULL)) {
        g_xid_reported = xid;
        memset(data, 0, sizeof *data);
        data->device = &g_devs[1];
        data->eventType = 0x8ULL;
        data->eventData = (unsigned long long)xid;
        data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
        return OK;
    }
    return TIMEOUT;
}

/* ---- processes ----------------------------------------------------------------- */

typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* taken by _v2 and _v3 */
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t; /* taken by the unversioned call */
typedef struct {
    unsigned pid;
    unsigned long long timeStamp;
    unsigned smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL
#define MIB (1024ULL * 1024ULL)
#define FAKE_MAX_PROCS 1024
#define FAKE_MAX_SAMPLES 4
#define MEM_NA (-1)   /* "na" */
#define MEM_NONE (-2) /* "-": not in the compute list */

typedef struct {
    unsigned pid;
    long long mib; /* >= 0, MEM_NA or MEM_NONE */
    int nsm;
    unsigned sm[FAKE_MAX_SAMPLES];
} fake_proc;

static fake_proc g_procs[FAKE_MAX_PROCS];
static long long g_race_reported; /* last FAKE_NVML_PROC_RACE value acted on (0: none yet) */

/* Parse FAKE_NVML_PROCS_<gpu> into g_procs; returns the count (a malformed entry ends the list). */
static int procs_of(int gpu) {
    char name[32];
    snprintf(name, sizeof name, "FAKE_NVML_PROCS_%d", gpu);
    const char *s = getenv(name);
    int n = 0;
    while (s && *s && n < FAKE_MAX_PROCS) {
        fake_proc *p = &g_procs[n];
        char *end;
        p->pid = (unsigned)strtoul(s, &end, 10);
        if (end == s || *end != ':') break;
        s = end + 1;
        if (*s == '-') {
            p->mib = MEM_NONE;
            s++;
        } else if (strncmp(s, "na", 2) == 0) {
            p->mib = MEM_NA;
            s += 2;
        } else {
            p->mib = strtoll(s, &end, 10);
            if (end == s || p->mib < 0) break;
            s = end;
        }
        if (*s != ':') break;
        s++;
        p->nsm = 0;
        if (*s == '-') {
            s++;
        } else {
            for (;;) {
                unsigned long v = strtoul(s, &end, 10);
                if (end == s) return n; /* malformed: drop this entry and the rest */
                if (p->nsm < FAKE_MAX_SAMPLES) p->sm[p->nsm++] = (unsigned)v;
                s = end;
                if (*s != '/') break;
                s++;
            }
        }
        n++;
        if (*s != ',') break;
        s++;
    }
    return n;
}

/* Shared body of the three nvmlDeviceGetComputeRunningProcesses versions. */
static nvmlReturn_t running_processes(int ver, nvmlDevice_t d, unsigned *count, void *infos) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!count) return INVALID_ARGUMENT;
    long long api = env_num("FAKE_NVML_PROC_API");
    if (ver > (api > 0 ? api : 3)) return FUNCTION_NOT_FOUND;
    int n = procs_of(d->gpu);
    unsigned need = 0;
    for (int i = 0; i < n; i++) need += g_procs[i].mib != MEM_NONE;
    long long race = env_num("FAKE_NVML_PROC_RACE");
    if (race > 0 && race != g_race_reported) {
        g_race_reported = race;
        *count = *count + 1 > need ? *count + 1 : need;
        return INSUFFICIENT_SIZE;
    }
    if (*count < need || (need && !infos)) {
        *count = need;
        return INSUFFICIENT_SIZE;
    }
    unsigned k = 0;
    for (int i = 0; i < n; i++) {
        const fake_proc *p = &g_procs[i];
        if (p->mib == MEM_NONE) continue;
        unsigned long long used =
            p->mib == MEM_NA ? VALUE_NOT_AVAILABLE : (unsigned long long)p->mib * MIB;
        if (ver == 1) {
            nvmlProcessInfo_v1_t *o = &((nvmlProcessInfo_v1_t *)infos)[k];
            o->pid = p->pid;
            o->usedGpuMemory = used;
        } else {
            nvmlProcessInfo_t *o = &((nvmlProcessInfo_t *)infos)[k];
            o->pid = p->pid;
            o->usedGpuMemory = used;
            o->gpuInstanceId = o->computeInstanceId = d->migmode ? 0 : 0xFFFFFFFFu;
        }
        k++;
    }
    *count = need;
    return OK;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count,
                                                                 nvmlProcessInfo_t *infos) {
    return running_processes(3, d, count, infos);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *count,
                                                                 nvmlProcessInfo_t *infos) {
    return running_processes(2, d, count, infos);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned *count,
                                                              nvmlProcessInfo_v1_t *infos) {
    return running_processes(1, d, count, infos);
}

/*
 * Like the driver: a NULL buffer answers INSUFFICIENT_SIZE with the number of samples held
 * (whatever their age); otherwise the samples newer than lastSeen, or NOT_FOUND.
 */
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                                         nvmlProcessUtilizationSample_t *util,
                                                         unsigned *count,
                                                         unsigned long long lastSeen) {
    int rc = dev_check(d);
    if (rc) return rc;
    if (!count) return INVALID_ARGUMENT;
    if (d->migmode) return NOT_SUPPORTED;
    int n = procs_of(d->gpu);
    long long base = env_num("FAKE_NVML_SAMPLE_TS");
    unsigned long long ts = base > 0 ? (unsigned long long)base : 1000;
    unsigned held = 0, need = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < g_procs[i].nsm; j++, held++) need += ts + held > lastSeen;
    if (!util) {
        *count = held;
        return INSUFFICIENT_SIZE;
    }
    if (need == 0) return NOT_FOUND;
    if (*count < need) {
        *count = need;
        return INSUFFICIENT_SIZE;
    }
    int reverse = env_flag("FAKE_NVML_SAMPLE_REVERSE");
    unsigned k = 0, seq = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < g_procs[i].nsm; j++, seq++) {
            if (ts + seq <= lastSeen) continue;
            nvmlProcessUtilizationSample_t *o = &util[reverse ? need - 1 - k : k];
            k++;
            memset(o, 0, sizeof *o);
            o->pid = g_procs[i].pid;
            o->timeStamp = ts + seq;
            o->smUtil = g_procs[i].sm[j];
            o->memUtil = g_procs[i].sm[j] / 2;
        }
    }
    *count = need;
    return OK;
}
#endif /* FAKE_NVML_MINIMAL */
