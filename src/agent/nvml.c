/*
 * nvml.c - NVML loaded with dlopen: discovery, health signals, events and
 * per-process sampling (see nvml.h).
 *
 * There is no nvml.h at build time, so the few NVML types used here are
 * declared below with the x86-64 layouts from NVIDIA's header (sizes and
 * offsets are checked with static asserts).  Every entry point is resolved
 * once, in nvml_open(), into a function pointer of the handle; optional ones
 * may be NULL and each caller checks before use.  nvmlReturn_t and the other
 * NVML enums are 4-byte ints, so they are declared as int / unsigned.
 *
 * Invariants: h->dl and h->inited are set for every handle nvml_open() hands
 * out; h->devs[0..h->ndevs) are the parent handles found by the last
 * nvml_discover(), h->migs[0..h->nmigs) its MIG device handles (used to map
 * events back to a card).  h->proc_seen[i] is the newest process-utilisation
 * sample timestamp nvml_processes() has read for GPU index i (0: none yet).
 * No locking: one thread at a time per handle.
 */
#include "nvml.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- NVML ABI, declared by us ---------------------------------------- */

typedef struct nvml__device_st *nvml__device; /* nvmlDevice_t */
typedef struct nvml__evset_st *nvml__evset;   /* nvmlEventSet_t */

typedef struct nvml__memory { /* nvmlMemory_t */
    unsigned long long total, free, used;
} nvml__memory;

typedef struct nvml__pci { /* nvmlPciInfo_t */
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvml__pci;

typedef struct nvml__util { /* nvmlUtilization_t */
    unsigned gpu, memory;
} nvml__util;

typedef struct nvml__event { /* nvmlEventData_t */
    nvml__device device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned gpuInstanceId, computeInstanceId;
} nvml__event;

typedef struct nvml__proc { /* nvmlProcessInfo_t (= _v2_t), taken by the _v2 and _v3 calls */
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvml__proc;

typedef struct nvml__proc_v1 { /* nvmlProcessInfo_v1_t, taken by the unversioned call */
    unsigned pid;
    unsigned long long usedGpuMemory;
} nvml__proc_v1;

typedef struct nvml__sample { /* nvmlProcessUtilizationSample_t */
    unsigned pid;
    unsigned long long timeStamp; /* CPU time of the sample, microseconds */
    unsigned smUtil, memUtil, encUtil, decUtil;
} nvml__sample;

_Static_assert(sizeof(nvml__memory) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvml__pci) == 68 && offsetof(nvml__pci, busId) == 36, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvml__util) == 8, "nvmlUtilization_t layout");
_Static_assert(sizeof(void *) != 8 || (sizeof(nvml__event) == 32 &&
                                       offsetof(nvml__event, eventType) == 8 &&
                                       offsetof(nvml__event, eventData) == 16 &&
                                       offsetof(nvml__event, gpuInstanceId) == 24),
               "nvmlEventData_t layout");
/* 64-bit members are 8-aligned on x86-64 only (i386 packs them at 4, as NVIDIA's header does). */
_Static_assert(sizeof(void *) != 8 || (sizeof(nvml__proc) == 24 &&
                                       offsetof(nvml__proc, usedGpuMemory) == 8 &&
                                       offsetof(nvml__proc, gpuInstanceId) == 16),
               "nvmlProcessInfo_t layout");
_Static_assert(sizeof(void *) != 8 || (sizeof(nvml__proc_v1) == 16 &&
                                       offsetof(nvml__proc_v1, usedGpuMemory) == 8),
               "nvmlProcessInfo_v1_t layout");
_Static_assert(sizeof(void *) != 8 || (sizeof(nvml__sample) == 32 &&
                                       offsetof(nvml__sample, timeStamp) == 8 &&
                                       offsetof(nvml__sample, smUtil) == 16),
               "nvmlProcessUtilizationSample_t layout");

enum {
    NVML__SUCCESS = 0,
    NVML__ERROR_NOT_SUPPORTED = 3,
    NVML__ERROR_NOT_FOUND = 6,
    NVML__ERROR_INSUFFICIENT_SIZE = 7,
    NVML__ERROR_DRIVER_NOT_LOADED = 9,
    NVML__ERROR_TIMEOUT = 10,
    NVML__ERROR_LIBRARY_NOT_FOUND = 12,
    NVML__ERROR_FUNCTION_NOT_FOUND = 13,
    NVML__ERROR_GPU_IS_LOST = 15,
};

enum { NVML__MEMORY_ERROR_CORRECTED = 0, NVML__MEMORY_ERROR_UNCORRECTED = 1 };
enum { NVML__VOLATILE_ECC = 0, NVML__AGGREGATE_ECC = 1 };
enum { NVML__TEMPERATURE_GPU = 0 };
enum { NVML__TEMPERATURE_THRESHOLD_SLOWDOWN = 1 };

#define NVML__EVENT_DBE 0x2ULL
#define NVML__EVENT_XID 0x8ULL
#define NVML__EVENT_GPU_UNAVAILABLE 0x4000ULL
#define NVML__EVENTS_WANTED (NVML__EVENT_DBE | NVML__EVENT_XID | NVML__EVENT_GPU_UNAVAILABLE)

/* usedGpuMemory when NVML cannot tell (e.g. Windows WDDM, or not permitted). */
#define NVML__VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL

/* Compute-list entries first asked for, and size queries tried per version before giving up. */
#define NVML__PROCS_FIRST 32
#define NVML__PROCS_TRIES 4
/* Process-utilisation samples read per call at most (the driver keeps a short ring). */
#define NVML__MAX_SAMPLES 1024

/* At most this many events are drained per nvml_health() call (a stuck library can't spin us). */
#define NVML__MAX_DRAIN 256

/*
 * X(required, return type, symbol, parameter list).  Each becomes a member
 * of struct nvml named like the symbol, so calls read like NVML's own API.
 */
#define NVML__SYMBOLS(X)                                                                     \
    X(1, int, nvmlInit_v2, (void))                                                           \
    X(1, int, nvmlShutdown, (void))                                                          \
    X(1, int, nvmlDeviceGetCount_v2, (unsigned *))                                           \
    X(1, int, nvmlDeviceGetHandleByIndex_v2, (unsigned, nvml__device *))                     \
    X(0, const char *, nvmlErrorString, (int))                                               \
    X(0, int, nvmlSystemGetDriverVersion, (char *, unsigned))                                \
    X(0, int, nvmlSystemGetCudaDriverVersion_v2, (int *))                                    \
    X(0, int, nvmlDeviceGetName, (nvml__device, char *, unsigned))                           \
    X(0, int, nvmlDeviceGetUUID, (nvml__device, char *, unsigned))                           \
    X(0, int, nvmlDeviceGetMemoryInfo, (nvml__device, nvml__memory *))                       \
    X(0, int, nvmlDeviceGetPciInfo_v3, (nvml__device, nvml__pci *))                          \
    X(0, int, nvmlDeviceGetNumaNodeId, (nvml__device, unsigned *))                           \
    X(0, int, nvmlDeviceGetCudaComputeCapability, (nvml__device, int *, int *))              \
    X(0, int, nvmlDeviceGetMigMode, (nvml__device, unsigned *, unsigned *))                  \
    X(0, int, nvmlDeviceGetMaxMigDeviceCount, (nvml__device, unsigned *))                    \
    X(0, int, nvmlDeviceGetMigDeviceHandleByIndex, (nvml__device, unsigned, nvml__device *)) \
    X(0, int, nvmlDeviceGetTopologyCommonAncestor, (nvml__device, nvml__device, int *))      \
    X(0, int, nvmlDeviceGetTotalEccErrors, (nvml__device, int, int, unsigned long long *))   \
    X(0, int, nvmlDeviceGetRemappedRows,                                                     \
      (nvml__device, unsigned *, unsigned *, unsigned *, unsigned *))                        \
    X(0, int, nvmlDeviceGetRetiredPagesPendingStatus, (nvml__device, int *))                 \
    X(0, int, nvmlDeviceGetTemperature, (nvml__device, int, unsigned *))                     \
    X(0, int, nvmlDeviceGetTemperatureThreshold, (nvml__device, int, unsigned *))            \
    X(0, int, nvmlDeviceGetUtilizationRates, (nvml__device, nvml__util *))                   \
    X(0, int, nvmlDeviceGetPowerUsage, (nvml__device, unsigned *))                          \
    X(0, int, nvmlEventSetCreate, (nvml__evset *))                                           \
    X(0, int, nvmlDeviceGetSupportedEventTypes, (nvml__device, unsigned long long *))        \
    X(0, int, nvmlDeviceRegisterEvents, (nvml__device, unsigned long long, nvml__evset))     \
    X(0, int, nvmlEventSetWait_v2, (nvml__evset, nvml__event *, unsigned))                   \
    X(0, int, nvmlEventSetFree, (nvml__evset))                                               \
    X(0, int, nvmlDeviceGetComputeRunningProcesses_v3, (nvml__device, unsigned *, nvml__proc *)) \
    X(0, int, nvmlDeviceGetComputeRunningProcesses_v2, (nvml__device, unsigned *, nvml__proc *)) \
    X(0, int, nvmlDeviceGetComputeRunningProcesses, (nvml__device, unsigned *, nvml__proc_v1 *)) \
    X(0, int, nvmlDeviceGetProcessUtilization,                                               \
      (nvml__device, nvml__sample *, unsigned *, unsigned long long))

typedef struct nvml {
    void *dl;
    int inited;
#define NVML__MEMBER(req, ret, name, args) ret(*name) args;
    NVML__SYMBOLS(NVML__MEMBER)
#undef NVML__MEMBER
    nvml__evset events; /* NULL when events are unavailable */
    nvml__device devs[NVML_MAX_GPUS];
    unsigned ndevs;
    struct {
        nvml__device dev;
        unsigned parent; /* index into devs */
    } migs[NVML_MAX_GPUS * NVML_MAX_SLICES];
    int nmigs;
    unsigned long long proc_seen[NVML_MAX_GPUS]; /* last sample timestamp read, per GPU index */
} nvml;

#define NVML__SYM(req, ret, name, args) {#name, req, offsetof(nvml, name)},
static const accel_sym nvml__syms[] = {NVML__SYMBOLS(NVML__SYM)};
#undef NVML__SYM

/* ---- helpers ------------------------------------------------------------ */

/* NVML's text for a return code, or a fallback naming the number. */
static const char *nvml__strerror(const nvml *h, int rc) {
    if (h && h->nvmlErrorString) {
        const char *s = h->nvmlErrorString(rc);
        if (s && *s) return s;
    }
    switch (rc) {
    case NVML__ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML__ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML__ERROR_TIMEOUT: return "Timeout";
    case NVML__ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML__ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

/* Record a card answer: true on success; a GPU_IS_LOST answer marks the card lost. */
static int nvml__ok(nvml_gpu *g, int rc) {
    if (rc == NVML__ERROR_GPU_IS_LOST) g->lost = 1;
    return rc == NVML__SUCCESS;
}

/*
 * The MIG profile is what follows the last "MIG " in a MIG device's name:
 * "NVIDIA H100 80GB HBM3 MIG 3g.40gb" -> "3g.40gb".  "" when absent.
 */
static void nvml__profile(const char *name, char *out, size_t outsz) {
    const char *p = NULL, *q = name;
    while ((q = strstr(q, "MIG ")) != NULL) p = q, q += 4;
    out[0] = '\0';
    if (!p) return;
    p += 4;
    while (*p == ' ') p++;
    size_t n = strcspn(p, " ");
    if (n >= outsz) n = outsz - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

/* ---- open / close --------------------------------------------------------- */

int nvml_open(const char *path, void **out, gp_err *err) {
    if (!out) return gp_err_set(err, GP_EINVALID, "nvml_open: no output handle");
    *out = NULL;
    nvml *h = calloc(1, sizeof *h);
    if (!h) return gp_err_set(err, GP_ENOMEM, NULL);
    const char *lib;
    h->dl = accel_dlopen(&accel_nvml_ops, path, nvml__syms, sizeof nvml__syms / sizeof nvml__syms[0],
                         h, &lib, err);
    if (!h->dl) {
        free(h);
        return GP_EUNSUPPORTED;
    }

    int rc = h->nvmlInit_v2();
    if (rc != NVML__SUCCESS) {
        int code = (rc == NVML__ERROR_DRIVER_NOT_LOADED || rc == NVML__ERROR_LIBRARY_NOT_FOUND ||
                    rc == NVML__ERROR_NOT_SUPPORTED)
                       ? GP_EUNSUPPORTED
                       : GP_EIO;
        if (rc == NVML__ERROR_DRIVER_NOT_LOADED)
            gp_err_set(err, code,
                       "NVML not available: the NVIDIA driver is not loaded "
                       "(%s: nvmlInit_v2 returned %d, %s)",
                       lib, rc, nvml__strerror(h, rc));
        else
            gp_err_set(err, code, "NVML initialisation failed (%s: nvmlInit_v2 returned %d, %s)",
                       lib, rc, nvml__strerror(h, rc));
        dlclose(h->dl);
        free(h);
        return code;
    }
    h->inited = 1;
    *out = h;
    return GP_OK;
}

void nvml_close(void *hv) {
    nvml *h = hv;
    if (!h) return;
    if (h->events && h->nvmlEventSetFree) h->nvmlEventSetFree(h->events);
    if (h->inited) h->nvmlShutdown();
    if (h->dl) dlclose(h->dl);
    free(h);
}

/* ---- discovery ------------------------------------------------------------- */

/* Identity fields of one card (all optional); stops asking once the card is lost. */
static void nvml__identity(nvml *h, nvml__device d, nvml_gpu *g) {
    char buf[96];
    if (h->nvmlDeviceGetName && nvml__ok(g, h->nvmlDeviceGetName(d, buf, sizeof buf)))
        accel_copy(g->name, sizeof g->name, buf, sizeof buf);
    if (!g->lost && h->nvmlDeviceGetUUID && nvml__ok(g, h->nvmlDeviceGetUUID(d, buf, sizeof buf)))
        accel_copy(g->uuid, sizeof g->uuid, buf, sizeof buf);
    nvml__memory mem;
    if (!g->lost && h->nvmlDeviceGetMemoryInfo && nvml__ok(g, h->nvmlDeviceGetMemoryInfo(d, &mem)))
        g->memory_bytes = mem.total;
    nvml__pci pci;
    if (!g->lost && h->nvmlDeviceGetPciInfo_v3 && nvml__ok(g, h->nvmlDeviceGetPciInfo_v3(d, &pci)))
        accel_copy(g->pci_bus, sizeof g->pci_bus, pci.busId, sizeof pci.busId);
    unsigned node;
    if (!g->lost && h->nvmlDeviceGetNumaNodeId && nvml__ok(g, h->nvmlDeviceGetNumaNodeId(d, &node)))
        g->numa = (int)node;
    else if (g->pci_bus[0])
        g->numa = accel_sysfs_numa(g->pci_bus);
    int major, minor;
    if (!g->lost && h->nvmlDeviceGetCudaComputeCapability &&
        nvml__ok(g, h->nvmlDeviceGetCudaComputeCapability(d, &major, &minor)))
        snprintf(g->compute_cap, sizeof g->compute_cap, "%d.%d", major, minor);
}

/* MIG mode and, when enabled, the MIG devices of card `gi` (all optional). */
static void nvml__mig(nvml *h, nvml__device d, unsigned gi, nvml_gpu *g) {
    unsigned cur, pending;
    if (!h->nvmlDeviceGetMigMode || !nvml__ok(g, h->nvmlDeviceGetMigMode(d, &cur, &pending)))
        return;
    g->mig_capable = 1;
    g->mig_enabled = cur == 1;
    unsigned max = 0;
    if (!g->mig_enabled || !h->nvmlDeviceGetMaxMigDeviceCount ||
        !h->nvmlDeviceGetMigDeviceHandleByIndex ||
        !nvml__ok(g, h->nvmlDeviceGetMaxMigDeviceCount(d, &max)))
        return;
    for (unsigned i = 0; i < max && g->nslices < NVML_MAX_SLICES; i++) {
        nvml__device m = NULL;
        /* Unused indexes answer NOT_FOUND: skip them. */
        if (!nvml__ok(g, h->nvmlDeviceGetMigDeviceHandleByIndex(d, i, &m)) || !m) continue;
        nvml_slice *s = &g->slices[g->nslices++];
        s->index = -1;
        char buf[96];
        if (h->nvmlDeviceGetUUID && h->nvmlDeviceGetUUID(m, buf, sizeof buf) == NVML__SUCCESS)
            accel_copy(s->uuid, sizeof s->uuid, buf, sizeof buf);
        if (h->nvmlDeviceGetName && h->nvmlDeviceGetName(m, buf, sizeof buf) == NVML__SUCCESS) {
            buf[sizeof buf - 1] = '\0';
            nvml__profile(buf, s->profile, sizeof s->profile);
        }
        nvml__memory mem;
        if (h->nvmlDeviceGetMemoryInfo && h->nvmlDeviceGetMemoryInfo(m, &mem) == NVML__SUCCESS)
            s->memory_bytes = mem.total;
        if (h->nmigs < (int)(sizeof h->migs / sizeof h->migs[0])) {
            h->migs[h->nmigs].dev = m;
            h->migs[h->nmigs].parent = gi;
            h->nmigs++;
        }
    }
}

/* Register the wanted events of one card on h->events, as far as it supports them. */
static void nvml__register(nvml *h, nvml__device d, nvml_gpu *g) {
    if (!h->events || !h->nvmlDeviceRegisterEvents) return;
    unsigned long long mask = NVML__EVENTS_WANTED;
    unsigned long long supported = 0;
    if (h->nvmlDeviceGetSupportedEventTypes) {
        if (!nvml__ok(g, h->nvmlDeviceGetSupportedEventTypes(d, &supported))) return;
        mask &= supported;
    }
    if (!mask || h->nvmlDeviceRegisterEvents(d, mask, h->events) == NVML__SUCCESS) return;
    /* Some cards refuse a combined mask: Xids matter most, so try them alone. */
    if (mask != NVML__EVENT_XID && (mask & NVML__EVENT_XID))
        h->nvmlDeviceRegisterEvents(d, NVML__EVENT_XID, h->events);
}

int nvml_discover(void *hv, nvml_gpu **gpus, int *n, char driver[80], gp_err *err) {
    nvml *h = hv;
    if (!h || !gpus || !n) return gp_err_set(err, GP_EINVALID, "nvml_discover: bad arguments");
    *gpus = NULL;
    *n = 0;
    char raw[80] = "", drv[80] = "", cuda[32] = "";
    {
        char buf[80];
        if (h->nvmlSystemGetDriverVersion &&
            h->nvmlSystemGetDriverVersion(buf, sizeof buf) == NVML__SUCCESS)
            accel_copy(raw, sizeof raw, buf, sizeof buf);
    }
    if (driver) snprintf(driver, 80, "%s", raw);
    accel_dotted(raw, drv, sizeof drv);
    int cv = 0;
    if (h->nvmlSystemGetCudaDriverVersion_v2 &&
        h->nvmlSystemGetCudaDriverVersion_v2(&cv) == NVML__SUCCESS && cv > 0)
        snprintf(cuda, sizeof cuda, "%d.%d", cv / 1000, (cv % 1000) / 10); /* 12040 -> 12.4 */
    unsigned count = 0;
    int rc = h->nvmlDeviceGetCount_v2(&count);
    if (rc != NVML__SUCCESS)
        return gp_err_set(err, GP_EIO, "nvmlDeviceGetCount_v2 returned %d (%s)", rc,
                          nvml__strerror(h, rc));
    if (count > NVML_MAX_GPUS) count = NVML_MAX_GPUS;

    /* A fresh event set: handles from a previous discovery may be stale. */
    if (h->events && h->nvmlEventSetFree) h->nvmlEventSetFree(h->events);
    h->events = NULL;
    h->ndevs = 0;
    h->nmigs = 0;
    if (count == 0) return GP_OK;

    nvml_gpu *g = calloc(count, sizeof *g);
    if (!g) return gp_err_set(err, GP_ENOMEM, NULL);
    if (h->nvmlEventSetCreate && h->nvmlEventSetCreate(&h->events) != NVML__SUCCESS)
        h->events = NULL;

    for (unsigned i = 0; i < count; i++) {
        nvml_gpu *gi = &g[i];
        gi->index = i;
        gi->numa = -1;
        gi->module_id = -1;
        snprintf(gi->vendor, sizeof gi->vendor, "nvidia");
        snprintf(gi->driver_version, sizeof gi->driver_version, "%s", drv);
        if (cuda[0]) {
            snprintf(gi->runtime, sizeof gi->runtime, "cuda");
            snprintf(gi->runtime_version, sizeof gi->runtime_version, "%s", cuda);
        }
        for (int j = 0; j < NVML_MAX_GPUS; j++) gi->topology[j] = -1;
        accel_health_unknown(gi);
        h->devs[i] = NULL;
        if (!nvml__ok(gi, h->nvmlDeviceGetHandleByIndex_v2(i, &h->devs[i]))) {
            h->devs[i] = NULL;
            continue; /* listed, with what we know: its index (and lost, if so) */
        }
        nvml__identity(h, h->devs[i], gi);
        if (!gi->lost) nvml__mig(h, h->devs[i], i, gi);
        if (!gi->lost) nvml__register(h, h->devs[i], gi);
    }
    h->ndevs = count;

    if (h->nvmlDeviceGetTopologyCommonAncestor) {
        for (unsigned i = 0; i < count; i++) {
            for (unsigned j = i + 1; j < count; j++) {
                int level;
                if (!h->devs[i] || !h->devs[j] || g[i].lost || g[j].lost ||
                    h->nvmlDeviceGetTopologyCommonAncestor(h->devs[i], h->devs[j], &level) !=
                        NVML__SUCCESS)
                    continue;
                g[i].topology[j] = g[j].topology[i] = level;
            }
        }
    }
    *gpus = g;
    *n = (int)count;
    return GP_OK;
}

/* ---- health ----------------------------------------------------------------- */

static void nvml__ecc(nvml *h, nvml__device d, nvml_gpu *g, int type, int counter,
                      long long *out) {
    unsigned long long v;
    if (!g->lost && nvml__ok(g, h->nvmlDeviceGetTotalEccErrors(d, type, counter, &v)))
        *out = (long long)v;
}

/* Query every health signal of one card, stopping at the first GPU_IS_LOST. */
static void nvml__signals(nvml *h, nvml__device d, nvml_gpu *g) {
    if (h->nvmlDeviceGetTotalEccErrors) {
        nvml__ecc(h, d, g, NVML__MEMORY_ERROR_CORRECTED, NVML__VOLATILE_ECC,
                  &g->ecc_volatile_corrected);
        nvml__ecc(h, d, g, NVML__MEMORY_ERROR_UNCORRECTED, NVML__VOLATILE_ECC,
                  &g->ecc_volatile_uncorrected);
        nvml__ecc(h, d, g, NVML__MEMORY_ERROR_CORRECTED, NVML__AGGREGATE_ECC,
                  &g->ecc_aggregate_corrected);
        nvml__ecc(h, d, g, NVML__MEMORY_ERROR_UNCORRECTED, NVML__AGGREGATE_ECC,
                  &g->ecc_aggregate_uncorrected);
    }
    unsigned corr, unc, pending, failure;
    if (!g->lost && h->nvmlDeviceGetRemappedRows &&
        nvml__ok(g, h->nvmlDeviceGetRemappedRows(d, &corr, &unc, &pending, &failure))) {
        g->remapped_correctable = corr;
        g->remapped_uncorrectable = unc;
        g->remap_pending = pending != 0;
        g->remap_failure = failure != 0;
    }
    int retire;
    if (!g->lost && h->nvmlDeviceGetRetiredPagesPendingStatus &&
        nvml__ok(g, h->nvmlDeviceGetRetiredPagesPendingStatus(d, &retire)))
        g->retired_pages_pending = retire != 0;
    unsigned t;
    if (!g->lost && h->nvmlDeviceGetTemperature &&
        nvml__ok(g, h->nvmlDeviceGetTemperature(d, NVML__TEMPERATURE_GPU, &t)))
        g->temperature_c = (int)t;
    if (!g->lost && h->nvmlDeviceGetTemperatureThreshold &&
        nvml__ok(g, h->nvmlDeviceGetTemperatureThreshold(d, NVML__TEMPERATURE_THRESHOLD_SLOWDOWN,
                                                          &t)))
        g->slowdown_c = (int)t;
    nvml__util u;
    if (!g->lost && h->nvmlDeviceGetUtilizationRates &&
        nvml__ok(g, h->nvmlDeviceGetUtilizationRates(d, &u))) {
        g->util_gpu = (int)u.gpu;
        g->util_memory = (int)u.memory;
    }
    nvml__memory mem;
    if (!g->lost && h->nvmlDeviceGetMemoryInfo && nvml__ok(g, h->nvmlDeviceGetMemoryInfo(d, &mem)))
        g->memory_used_bytes = mem.used > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)mem.used;
    unsigned mw;
    if (!g->lost && h->nvmlDeviceGetPowerUsage && nvml__ok(g, h->nvmlDeviceGetPowerUsage(d, &mw)))
        g->power_mw = mw > (unsigned)INT_MAX ? INT_MAX : (int)mw;
}

/* Index into gpus[] of the card an event names (its own handle or one of its MIG devices); -1. */
static int nvml__event_gpu(const nvml *h, nvml__device d, const nvml_gpu *gpus, int n) {
    long parent = -1;
    for (unsigned i = 0; i < h->ndevs && parent < 0; i++)
        if (h->devs[i] && h->devs[i] == d) parent = (long)i;
    for (int i = 0; i < h->nmigs && parent < 0; i++)
        if (h->migs[i].dev == d) parent = (long)h->migs[i].parent;
    if (parent < 0) return -1;
    for (int i = 0; i < n; i++)
        if (gpus[i].index == (unsigned)parent) return i;
    return -1;
}

int nvml_health(void *hv, nvml_gpu *gpus, int n, gp_err *err) {
    nvml *h = hv;
    if (!h || n < 0 || (n > 0 && !gpus))
        return gp_err_set(err, GP_EINVALID, "nvml_health: bad arguments");
    for (int i = 0; i < n; i++) {
        nvml_gpu *g = &gpus[i];
        accel_health_unknown(g);
        nvml__device d = NULL;
        if (g->index < h->ndevs && h->devs[g->index]) {
            d = h->devs[g->index];
        } else if (!nvml__ok(g, h->nvmlDeviceGetHandleByIndex_v2(g->index, &d))) {
            continue;
        }
        nvml__signals(h, d, g);
    }

    if (!h->events || !h->nvmlEventSetWait_v2) return GP_OK;
    for (int k = 0; k < NVML__MAX_DRAIN; k++) {
        nvml__event ev;
        memset(&ev, 0, sizeof ev);
        if (h->nvmlEventSetWait_v2(h->events, &ev, 0) != NVML__SUCCESS) break; /* 10: none left */
        int i = nvml__event_gpu(h, ev.device, gpus, n);
        if (i < 0) continue;
        nvml_gpu *g = &gpus[i];
        if (ev.eventType & NVML__EVENT_XID) g->xid_total++;
        if ((ev.eventType & NVML__EVENT_XID) && g->nxids < NVML_MAX_XIDS)
            g->xids[g->nxids++] = (int)ev.eventData;
        if (ev.eventType & NVML__EVENT_GPU_UNAVAILABLE) g->lost = 1;
    }
    return GP_OK;
}

/* ---- processes ----------------------------------------------------------------- */

/* One compute-list entry, whatever the version it was read with. */
typedef struct nvml__pmem {
    unsigned pid;
    unsigned long long used; /* bytes; NVML__VALUE_NOT_AVAILABLE unknown */
} nvml__pmem;

/*
 * Call version `ver` (3, 2, 1 = unversioned) of the compute-process list with room for `cap`
 * entries in *buf (sized for that version's layout).  NVML__ERROR_FUNCTION_NOT_FOUND when the
 * symbol is missing.
 */
static int nvml__proclist_call(nvml *h, int ver, nvml__device d, unsigned *count, void *buf) {
    switch (ver) {
    case 3:
        if (h->nvmlDeviceGetComputeRunningProcesses_v3)
            return h->nvmlDeviceGetComputeRunningProcesses_v3(d, count, buf);
        break;
    case 2:
        if (h->nvmlDeviceGetComputeRunningProcesses_v2)
            return h->nvmlDeviceGetComputeRunningProcesses_v2(d, count, buf);
        break;
    default:
        if (h->nvmlDeviceGetComputeRunningProcesses)
            return h->nvmlDeviceGetComputeRunningProcesses(d, count, buf);
        break;
    }
    return NVML__ERROR_FUNCTION_NOT_FOUND;
}

/*
 * The compute list of one card, from the newest version that is present (a version answering
 * FUNCTION_NOT_FOUND counts as missing).  INSUFFICIENT_SIZE is retried with the size NVML asks
 * for (plus room for processes starting meanwhile), at most NVML__PROCS_TRIES times and
 * NVML_MAX_PROCS entries; any other failure leaves the list empty.
 * OUT *out: malloc'd array of *nout entries (NULL when 0), caller free()s.
 * RET: GP_OK or GP_ENOMEM.
 */
static int nvml__compute_list(nvml *h, nvml__device d, nvml_gpu *g, nvml__pmem **out,
                              unsigned *nout) {
    *out = NULL;
    *nout = 0;
    for (int ver = 3; ver >= 1; ver--) {
        size_t esz = ver == 1 ? sizeof(nvml__proc_v1) : sizeof(nvml__proc);
        unsigned cap = NVML__PROCS_FIRST;
        int rc = NVML__ERROR_INSUFFICIENT_SIZE;
        for (int t = 0; t < NVML__PROCS_TRIES && rc == NVML__ERROR_INSUFFICIENT_SIZE; t++) {
            unsigned char *buf = malloc(cap * esz);
            if (!buf) return GP_ENOMEM;
            unsigned count = cap;
            rc = nvml__proclist_call(h, ver, d, &count, buf);
            if (rc == NVML__SUCCESS) {
                if (count > cap) count = cap;
                nvml__pmem *list = count ? calloc(count, sizeof *list) : NULL;
                if (count && !list) {
                    free(buf);
                    return GP_ENOMEM;
                }
                for (unsigned i = 0; i < count; i++) {
                    if (ver == 1) {
                        const nvml__proc_v1 *p = (const nvml__proc_v1 *)(buf + i * esz);
                        list[i].pid = p->pid;
                        list[i].used = p->usedGpuMemory;
                    } else {
                        const nvml__proc *p = (const nvml__proc *)(buf + i * esz);
                        list[i].pid = p->pid;
                        list[i].used = p->usedGpuMemory;
                    }
                }
                free(buf);
                *out = list;
                *nout = count;
                return GP_OK;
            }
            free(buf);
            if (rc != NVML__ERROR_INSUFFICIENT_SIZE) break;
            /* count is what NVML needs now; a stale or bogus one still grows the buffer. */
            if (count > NVML_MAX_PROCS || cap >= NVML_MAX_PROCS) break;
            unsigned want = count > cap ? count + 8 : cap * 2;
            cap = want > NVML_MAX_PROCS ? NVML_MAX_PROCS : want;
        }
        if (rc != NVML__ERROR_FUNCTION_NOT_FOUND) {
            nvml__ok(g, rc); /* only marks a lost card */
            return GP_OK;
        }
    }
    return GP_OK;
}

/*
 * Process-utilisation samples of one card newer than `since` (NULL-buffer size query, then
 * read, retrying INSUFFICIENT_SIZE up to NVML__MAX_SAMPLES entries).  A missing symbol,
 * NOT_FOUND (no sample since `since`), "not supported" or any failure gives no samples.
 * OUT *out: malloc'd array of *nout entries (NULL when 0), caller free()s.
 * RET: GP_OK or GP_ENOMEM.
 */
static int nvml__samples(nvml *h, nvml__device d, nvml_gpu *g, unsigned long long since,
                         nvml__sample **out, unsigned *nout) {
    *out = NULL;
    *nout = 0;
    if (!h->nvmlDeviceGetProcessUtilization) return GP_OK;
    unsigned count = 0;
    int rc = h->nvmlDeviceGetProcessUtilization(d, NULL, &count, since);
    if (rc != NVML__SUCCESS && rc != NVML__ERROR_INSUFFICIENT_SIZE) {
        nvml__ok(g, rc); /* NOT_FOUND: nothing new; only marks a lost card */
        return GP_OK;
    }
    for (int t = 0; t < NVML__PROCS_TRIES && count > 0; t++) {
        unsigned cap = count > NVML__MAX_SAMPLES ? NVML__MAX_SAMPLES : count;
        nvml__sample *buf = calloc(cap, sizeof *buf);
        if (!buf) return GP_ENOMEM;
        unsigned got = cap;
        rc = h->nvmlDeviceGetProcessUtilization(d, buf, &got, since);
        if (rc == NVML__SUCCESS) {
            if (got == 0) {
                free(buf);
                break;
            }
            *out = buf;
            *nout = got > cap ? cap : got;
            return GP_OK;
        }
        free(buf);
        if (rc != NVML__ERROR_INSUFFICIENT_SIZE || cap >= NVML__MAX_SAMPLES) {
            nvml__ok(g, rc);
            break;
        }
        count = got > cap ? got : cap * 2;
    }
    return GP_OK;
}

/* Index of pid in procs[0..n), or -1. */
static int nvml__find_pid(const nvml_proc *procs, int n, unsigned pid) {
    for (int i = 0; i < n; i++)
        if (procs[i].pid == pid) return i;
    return -1;
}

int nvml_processes(void *hv, nvml_gpu *g, nvml_proc **procs, int *n, gp_err *err) {
    nvml *h = hv;
    if (procs) *procs = NULL;
    if (n) *n = 0;
    if (!h || !g || !procs || !n || g->index >= NVML_MAX_GPUS)
        return gp_err_set(err, GP_EINVALID, "nvml_processes: bad arguments");
    nvml__device d = NULL;
    if (g->index < h->ndevs && h->devs[g->index]) {
        d = h->devs[g->index];
    } else if (!nvml__ok(g, h->nvmlDeviceGetHandleByIndex_v2(g->index, &d))) {
        return GP_OK;
    }

    nvml__pmem *list = NULL;
    nvml__sample *samples = NULL;
    unsigned nlist = 0, nsamples = 0;
    if (nvml__compute_list(h, d, g, &list, &nlist) != GP_OK)
        return gp_err_set(err, GP_ENOMEM, NULL);
    if (!g->lost &&
        nvml__samples(h, d, g, h->proc_seen[g->index], &samples, &nsamples) != GP_OK) {
        free(list);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    if (nlist + nsamples == 0) return GP_OK;

    /* Per output entry, the timestamp of the sample its sm_pct came from (newest wins). */
    nvml_proc *out = calloc(nlist + nsamples, sizeof *out);
    unsigned long long *ts = calloc(nlist + nsamples, sizeof *ts);
    if (!out || !ts) {
        free(out);
        free(ts);
        free(list);
        free(samples);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    int m = 0;
    for (unsigned i = 0; i < nlist; i++) {
        long long mib = list[i].used == NVML__VALUE_NOT_AVAILABLE
                            ? -1
                            : (long long)(list[i].used / (1024ULL * 1024ULL));
        int k = nvml__find_pid(out, m, list[i].pid);
        if (k < 0) {
            out[m].pid = list[i].pid;
            out[m].memory_mib = mib;
            out[m].sm_pct = -1;
            m++;
        } else if (out[k].memory_mib >= 0) { /* same pid on another compute instance */
            out[k].memory_mib = mib < 0 ? -1 : out[k].memory_mib + mib;
        }
    }
    unsigned long long seen = h->proc_seen[g->index];
    for (unsigned i = 0; i < nsamples; i++) {
        const nvml__sample *s = &samples[i];
        if (s->timeStamp > seen) seen = s->timeStamp;
        int k = nvml__find_pid(out, m, s->pid);
        if (k < 0) { /* sampled but not in the compute list (e.g. it just exited) */
            k = m++;
            out[k].pid = s->pid;
            out[k].memory_mib = -1;
            out[k].sm_pct = -1;
        }
        if (out[k].sm_pct < 0 || s->timeStamp >= ts[k]) {
            out[k].sm_pct = s->smUtil > 100 ? 100 : (int)s->smUtil;
            ts[k] = s->timeStamp;
        }
    }
    h->proc_seen[g->index] = seen;
    free(ts);
    free(list);
    free(samples);
    *procs = out;
    *n = m;
    return GP_OK;
}

/* ---- partitions, and the vendor layer's entry points (accel.h) ------------------- */

int nvml_partitions(void *hv, accel_gpu *g, gp_err *err) {
    nvml *h = hv;
    if (!h || !g || g->index >= NVML_MAX_GPUS)
        return gp_err_set(err, GP_EINVALID, "nvml partitions: bad arguments");
    nvml__device d = g->index < h->ndevs ? h->devs[g->index] : NULL;
    if (!d && !nvml__ok(g, h->nvmlDeviceGetHandleByIndex_v2(g->index, &d))) return GP_OK;
    g->mig_capable = g->mig_enabled = 0;
    g->nslices = 0;
    memset(g->slices, 0, sizeof g->slices);
    nvml__mig(h, d, g->index, g);
    return GP_OK;
}

const accel_ops accel_nvml_ops = {
    .vendor = "nvidia",
    .source = "nvml",
    .label = "NVML",
    .env = "GPUPOOL_NVML_LIBRARY",
    .soname = "libnvidia-ml.so.1",
    .absent = "no NVIDIA driver",
    .hint = " (NVIDIA driver too old?)",
    .open = nvml_open,
    .discover = nvml_discover,
    .health = nvml_health,
    .processes = nvml_processes,
    .partitions = nvml_partitions,
    .close = nvml_close,
};
