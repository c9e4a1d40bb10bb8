/*
 * hlml.c - Habana HLML loaded with dlopen: Intel Gaudi discovery, health
 * signals, critical events and process sampling (see hlml.h).
 *
 * The HLML types used are declared below with the x86-64 layouts of
 * Habana's hlml.h (hlml_return_t and the other enums are 4-byte ints).
 * Invariants: h->dl and h->inited are set for every handle hl_open() hands
 * out; h->devs[0..h->ndevs) are the handles of the last hl_discover().
 * No locking: one thread at a time per handle.
 */
#define _GNU_SOURCE
#include "hlml.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- HLML ABI, declared by us ------------------------------------------------ */

typedef void *hl__device;  /* hlml_device_t */
typedef void *hl__evset;   /* hlml_event_set_t */

#define HL__PCI_ADDR_LEN 15 /* PCI_DOMAIN_LEN + 10 */
#define HL__PCI_LINK_INFO_LEN 10

typedef struct hl__pci { /* hlml_pci_info_t */
    unsigned bus;
    char bus_id[HL__PCI_ADDR_LEN];
    unsigned device, domain, pci_device_id;
    struct {
        char link_speed[HL__PCI_LINK_INFO_LEN];
        char link_width[HL__PCI_LINK_INFO_LEN];
    } caps;
} hl__pci;

typedef struct hl__util { unsigned aip; } hl__util;                /* hlml_utilization_t */
typedef struct hl__memory { unsigned long long free, total, used; } hl__memory; /* hlml_memory_t */
typedef struct hl__event { hl__device device; unsigned long long event_type; } hl__event;

_Static_assert(offsetof(hl__pci, device) == 20 && sizeof(hl__pci) == 52, "hlml_pci_info_t layout");
_Static_assert(sizeof(hl__memory) == 24, "hlml_memory_t layout");
_Static_assert(sizeof(void *) != 8 || sizeof(hl__event) == 16, "hlml_event_data_t layout");

enum { HL__SUCCESS = 0, HL__ERROR_NOT_SUPPORTED = 3, HL__ERROR_AIP_IS_LOST = 15 };
enum { HL__MEMORY_ERROR_CORRECTED = 0, HL__MEMORY_ERROR_UNCORRECTED = 1 };
enum { HL__VOLATILE_ECC = 0, HL__AGGREGATE_ECC = 1 };
enum { HL__TEMPERATURE_ON_AIP = 0 };
enum { HL__TEMPERATURE_THRESHOLD_SLOWDOWN = 1 };

#define HL__EVENT_ECC_DERR (1ULL << 0)
#define HL__EVENT_CRITICAL_ERR (1ULL << 1)
#define HL__EVENT_DRAM_ERR (1ULL << 3)
#define HL__EVENT_ECC_SERR (1ULL << 4)
#define HL__EVENTS_WANTED (HL__EVENT_ECC_DERR | HL__EVENT_CRITICAL_ERR | HL__EVENT_DRAM_ERR | HL__EVENT_ECC_SERR)
#define HL__MAX_DRAIN 256

#define HL__SYMBOLS(X)                                                                        \
    X(1, int, hlml_init, (void))                                                              \
    X(1, int, hlml_shutdown, (void))                                                          \
    X(1, int, hlml_device_get_count, (unsigned *))                                            \
    X(1, int, hlml_device_get_handle_by_index, (unsigned, hl__device *))                      \
    X(0, int, hlml_get_driver_version, (char *, unsigned))                                    \
    X(0, int, hlml_device_get_name, (hl__device, char *, unsigned))                           \
    X(0, int, hlml_device_get_uuid, (hl__device, char *, unsigned))                           \
    X(0, int, hlml_device_get_memory_info, (hl__device, hl__memory *))                        \
    X(0, int, hlml_device_get_pci_info, (hl__device, hl__pci *))                              \
    X(0, int, hlml_device_get_module_id, (hl__device, unsigned *))                            \
    X(0, int, hlml_device_get_minor_number, (hl__device, unsigned *))                         \
    X(0, int, hlml_device_get_temperature, (hl__device, int, unsigned *))                     \
    X(0, int, hlml_device_get_temperature_threshold, (hl__device, int, unsigned *))           \
    X(0, int, hlml_device_get_utilization_rates, (hl__device, hl__util *))                    \
    X(0, int, hlml_device_get_power_usage, (hl__device, unsigned *))                          \
    X(0, int, hlml_device_get_total_ecc_errors, (hl__device, int, int, unsigned long long *)) \
    X(0, int, hlml_event_set_create, (hl__evset *))                                           \
    X(0, int, hlml_event_set_free, (hl__evset))                                               \
    X(0, int, hlml_device_register_events, (hl__device, unsigned long long, hl__evset))       \
    X(0, int, hlml_event_set_wait, (hl__evset, hl__event *, unsigned))

typedef struct hl_ml {
    void *dl;
    int inited;
#define HL__MEMBER(req, ret, name, args) ret(*name) args;
    HL__SYMBOLS(HL__MEMBER)
#undef HL__MEMBER
    hl__evset events;
    hl__device devs[ACCEL_MAX_GPUS];
    int minor[ACCEL_MAX_GPUS]; /* device node minor per card; -1 unknown */
    unsigned ndevs;
} hl_ml;

#define HL__SYM(req, ret, name, args) {#name, req, offsetof(hl_ml, name)},
static const accel_sym hl__syms[] = {HL__SYMBOLS(HL__SYM)};
#undef HL__SYM

/* ---- helpers ---------------------------------------------------------------------- */

static int hl__ok(accel_gpu *g, int rc) {
    if (rc == HL__ERROR_AIP_IS_LOST) g->lost = 1;
    return rc == HL__SUCCESS;
}

/* ---- open / close -------------------------------------------------------------------- */

int hl_open(const char *path, void **out, gp_err *err) {
    if (!out) return gp_err_set(err, GP_EINVALID, "hl_open: no output handle");
    *out = NULL;
    hl_ml *h = calloc(1, sizeof *h);
    if (!h) return gp_err_set(err, GP_ENOMEM, NULL);
    const char *lib;
    h->dl = accel_dlopen(&accel_hlml_ops, path, hl__syms, sizeof hl__syms / sizeof hl__syms[0], h,
                         &lib, err);
    if (!h->dl) {
        free(h);
        return GP_EUNSUPPORTED;
    }
    int rc = h->hlml_init();
    if (rc != HL__SUCCESS) {
        gp_err_set(err, GP_EUNSUPPORTED,
                   "HLML not available: hlml_init returned %d (habanalabs driver not loaded?) (%s)",
                   rc, lib);
        dlclose(h->dl);
        free(h);
        return GP_EUNSUPPORTED;
    }
    h->inited = 1;
    *out = h;
    return GP_OK;
}

void hl_close(void *hv) {
    hl_ml *h = hv;
    if (!h) return;
    if (h->events && h->hlml_event_set_free) h->hlml_event_set_free(h->events);
    if (h->inited) h->hlml_shutdown();
    if (h->dl) dlclose(h->dl);
    free(h);
}

/* ---- discovery ----------------------------------------------------------------------- */

static void hl__identity(hl_ml *h, unsigned i, accel_gpu *g) {
    hl__device d = h->devs[i];
    char buf[96];
    if (h->hlml_device_get_name && hl__ok(g, h->hlml_device_get_name(d, buf, sizeof buf)))
        accel_copy(g->name, sizeof g->name, buf, sizeof buf);
    if (!g->lost && h->hlml_device_get_uuid && hl__ok(g, h->hlml_device_get_uuid(d, buf, sizeof buf)))
        accel_copy(g->uuid, sizeof g->uuid, buf, sizeof buf);
    hl__memory mem;
    if (!g->lost && h->hlml_device_get_memory_info && hl__ok(g, h->hlml_device_get_memory_info(d, &mem)))
        g->memory_bytes = mem.total;
    hl__pci pci;
    memset(&pci, 0, sizeof pci);
    if (!g->lost && h->hlml_device_get_pci_info && hl__ok(g, h->hlml_device_get_pci_info(d, &pci)))
        accel_copy(g->pci_bus, sizeof g->pci_bus, pci.bus_id, sizeof pci.bus_id);
    if (g->pci_bus[0]) g->numa = accel_sysfs_numa(g->pci_bus);
    unsigned v;
    if (!g->lost && h->hlml_device_get_module_id && hl__ok(g, h->hlml_device_get_module_id(d, &v)) &&
        v < 1024)
        g->module_id = (int)v;
    if (!g->lost && h->hlml_device_get_minor_number &&
        hl__ok(g, h->hlml_device_get_minor_number(d, &v)) && v < 1024)
        h->minor[i] = (int)v;
}

int hl_discover(void *hv, accel_gpu **gpus, int *n, char driver[80], gp_err *err) {
    hl_ml *h = hv;
    if (!h || !gpus || !n) return gp_err_set(err, GP_EINVALID, "hl_discover: bad arguments");
    *gpus = NULL;
    *n = 0;
    char raw[80] = "", drv[80] = "";
    if (h->hlml_get_driver_version) {
        char buf[80];
        if (h->hlml_get_driver_version(buf, sizeof buf) == HL__SUCCESS)
            accel_copy(raw, sizeof raw, buf, sizeof buf);
    }
    accel_dotted(raw, drv, sizeof drv);
    if (driver) snprintf(driver, 80, "%s", drv);
    unsigned count = 0;
    int rc = h->hlml_device_get_count(&count);
    if (rc != HL__SUCCESS) return gp_err_set(err, GP_EIO, "hlml_device_get_count returned %d", rc);
    if (count > ACCEL_MAX_GPUS) count = ACCEL_MAX_GPUS;
    if (h->events && h->hlml_event_set_free) h->hlml_event_set_free(h->events);
    h->events = NULL;
    h->ndevs = 0;
    if (count == 0) return GP_OK;
    accel_gpu *g = calloc(count, sizeof *g);
    if (!g) return gp_err_set(err, GP_ENOMEM, NULL);
    if (h->hlml_event_set_create && h->hlml_event_set_create(&h->events) != HL__SUCCESS) h->events = NULL;
    for (unsigned i = 0; i < count; i++) {
        accel_gpu *gi = &g[i];
        gi->index = i;
        gi->numa = -1;
        gi->module_id = -1;
        h->minor[i] = -1;
        for (int j = 0; j < ACCEL_MAX_GPUS; j++) gi->topology[j] = -1;
        accel_health_unknown(gi);
        snprintf(gi->vendor, sizeof gi->vendor, "intel");
        snprintf(gi->driver_version, sizeof gi->driver_version, "%s", drv);
        if (drv[0]) {
            snprintf(gi->runtime, sizeof gi->runtime, "synapse");
            snprintf(gi->runtime_version, sizeof gi->runtime_version, "%.31s", drv);
        }
        h->devs[i] = NULL;
        if (!hl__ok(gi, h->hlml_device_get_handle_by_index(i, &h->devs[i]))) {
            h->devs[i] = NULL;
            continue;
        }
        hl__identity(h, i, gi);
        if (!gi->lost && h->events && h->hlml_device_register_events &&
            h->hlml_device_register_events(h->devs[i], HL__EVENTS_WANTED, h->events) != HL__SUCCESS)
            h->hlml_device_register_events(h->devs[i], HL__EVENT_CRITICAL_ERR, h->events);
    }
    h->ndevs = count;
    *gpus = g;
    *n = (int)count;
    return GP_OK;
}

/* ---- health -------------------------------------------------------------------------- */

static void hl__ecc(hl_ml *h, hl__device d, accel_gpu *g, int type, int counter, long long *out) {
    unsigned long long v;
    if (!g->lost && hl__ok(g, h->hlml_device_get_total_ecc_errors(d, type, counter, &v)))
        *out = v > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)v;
}

static void hl__signals(hl_ml *h, hl__device d, accel_gpu *g) {
    if (h->hlml_device_get_total_ecc_errors) {
        hl__ecc(h, d, g, HL__MEMORY_ERROR_UNCORRECTED, HL__VOLATILE_ECC, &g->ecc_volatile_uncorrected);
        hl__ecc(h, d, g, HL__MEMORY_ERROR_UNCORRECTED, HL__AGGREGATE_ECC, &g->ecc_aggregate_uncorrected);
        hl__ecc(h, d, g, HL__MEMORY_ERROR_CORRECTED, HL__VOLATILE_ECC, &g->ecc_volatile_corrected);
        hl__ecc(h, d, g, HL__MEMORY_ERROR_CORRECTED, HL__AGGREGATE_ECC, &g->ecc_aggregate_corrected);
    }
    unsigned t;
    if (!g->lost && h->hlml_device_get_temperature &&
        hl__ok(g, h->hlml_device_get_temperature(d, HL__TEMPERATURE_ON_AIP, &t)))
        g->temperature_c = t > 1000 ? -1 : (int)t;
    if (!g->lost && h->hlml_device_get_temperature_threshold &&
        hl__ok(g, h->hlml_device_get_temperature_threshold(d, HL__TEMPERATURE_THRESHOLD_SLOWDOWN, &t)))
        g->slowdown_c = t > 1000 ? 0 : (int)t;
    hl__util u;
    if (!g->lost && h->hlml_device_get_utilization_rates &&
        hl__ok(g, h->hlml_device_get_utilization_rates(d, &u)) && u.aip <= 100)
        g->util_gpu = (int)u.aip;
    hl__memory mem;
    if (!g->lost && h->hlml_device_get_memory_info && hl__ok(g, h->hlml_device_get_memory_info(d, &mem)))
        g->memory_used_bytes = mem.used > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)mem.used;
    unsigned mw;
    if (!g->lost && h->hlml_device_get_power_usage && hl__ok(g, h->hlml_device_get_power_usage(d, &mw)))
        g->power_mw = mw > (unsigned)INT_MAX ? INT_MAX : (int)mw;
}

int hl_health(void *hv, accel_gpu *gpus, int n, gp_err *err) {
    hl_ml *h = hv;
    if (!h || n < 0 || (n > 0 && !gpus)) return gp_err_set(err, GP_EINVALID, "hl_health: bad arguments");
    for (int i = 0; i < n; i++) {
        accel_gpu *g = &gpus[i];
        accel_health_unknown(g);
        hl__device d = NULL;
        if (g->index < h->ndevs && h->devs[g->index]) d = h->devs[g->index];
        else if (!hl__ok(g, h->hlml_device_get_handle_by_index(g->index, &d))) continue;
        hl__signals(h, d, g);
    }
    if (!h->events || !h->hlml_event_set_wait) return GP_OK;
    for (int k = 0; k < HL__MAX_DRAIN; k++) {
        hl__event ev;
        memset(&ev, 0, sizeof ev);
        if (h->hlml_event_set_wait(h->events, &ev, 0) != HL__SUCCESS) break;
        for (int i = 0; i < n; i++) {
            accel_gpu *g = &gpus[i];
            if (g->index >= h->ndevs || !h->devs[g->index] || h->devs[g->index] != ev.device) continue;
            if (ev.event_type & HL__EVENT_CRITICAL_ERR) {
                g->critical_total++;
                if (g->ncritical < ACCEL_MAX_EVENTS) g->critical[g->ncritical++] = (int)ev.event_type;
            }
        }
    }
    return GP_OK;
}

/* ---- processes ------------------------------------------------------------------------ */

int hl_processes(void *hv, accel_gpu *g, accel_proc **procs, int *n, gp_err *err) {
    hl_ml *h = hv;
    if (procs) *procs = NULL;
    if (n) *n = 0;
    if (!h || !g || !procs || !n || g->index >= ACCEL_MAX_GPUS)
        return gp_err_set(err, GP_EINVALID, "hl_processes: bad arguments");
    if (g->index >= h->ndevs || h->minor[g->index] < 0) return GP_OK;
    char node[64];
    snprintf(node, sizeof node, "/dev/accel/accel%d", h->minor[g->index]);
    const char *root = getenv("GPUPOOL_HLML_PROC");
    if (!root || !*root) root = "/proc";
    DIR *pd = opendir(root);
    if (!pd) return GP_OK;
    accel_proc *outv = NULL;
    int m = 0, cap = 0, rc = GP_OK;
    struct dirent *e;
    while ((e = readdir(pd)) != NULL && m < ACCEL_MAX_PROCS) {
        char *end;
        unsigned long pid = strtoul(e->d_name, &end, 10);
        if (!e->d_name[0] || *end || pid == 0 || pid > 0x7fffffffUL) continue;
        char fdp[512];
        snprintf(fdp, sizeof fdp, "%s/%s/fd", root, e->d_name);
        DIR *fd = opendir(fdp);
        if (!fd) continue; /* gone, or not ours to read */
        struct dirent *f;
        int uses = 0;
        while (!uses && (f = readdir(fd)) != NULL) {
            if (f->d_name[0] == '.') continue;
            char lp[800], target[128];
            snprintf(lp, sizeof lp, "%s/%s", fdp, f->d_name);
            ssize_t len = readlink(lp, target, sizeof target - 1);
            if (len <= 0) continue;
            target[len] = '\0';
            uses = strcmp(target, node) == 0;
        }
        closedir(fd);
        if (!uses) continue;
        if (m == cap) {
            int nc = cap ? cap * 2 : 8;
            accel_proc *nv = realloc(outv, (size_t)nc * sizeof *nv);
            if (!nv) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            outv = nv;
            cap = nc;
        }
        outv[m].pid = (unsigned)pid;
        outv[m].memory_mib = -1;
        outv[m].sm_pct = -1;
        m++;
    }
    closedir(pd);
    if (rc != GP_OK || !m) {
        free(outv);
        return rc;
    }
    *procs = outv;
    *n = m;
    return GP_OK;
}

/* ---- partitions, and the vendor layer's entry points (accel.h) ----------------------- */

int hl_partitions(void *h, accel_gpu *g, gp_err *err) {
    if (!h || !g) return gp_err_set(err, GP_EINVALID, "hlml partitions: bad arguments");
    g->mig_capable = g->mig_enabled = 0;
    g->nslices = 0;
    return GP_OK;
}

const accel_ops accel_hlml_ops = {
    .vendor = "intel",
    .source = "hlml",
    .label = "HLML",
    .env = "GPUPOOL_HLML_LIBRARY",
    .soname = "libhlml.so",
    .absent = "no Intel Gaudi driver",
    .hint = "",
    .open = hl_open,
    .discover = hl_discover,
    .health = hl_health,
    .processes = hl_processes,
    .partitions = hl_partitions,
    .close = hl_close,
};
