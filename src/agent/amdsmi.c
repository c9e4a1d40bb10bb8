/*
 * amdsmi.c - AMD SMI loaded with dlopen: discovery with compute partitions,
 * health signals and per-process sampling (see amdsmi.h).
 *
 * The AMD SMI types used are declared below with the x86-64 layouts of
 * AMD's amdsmi.h (library 26.x); statuses and enums are 4-byte, declared
 * as unsigned.  Structs the library fills one at a time are passed inside
 * an AMD__BUF-byte zeroed buffer, so a newer library with a larger struct
 * writes into slack; the process list is an array and must match exactly.
 *
 * Invariants: h->dl and h->inited are set for every handle amd_open()
 * hands out; h->cards[0..h->ncards) are the cards of the last
 * amd_discover(), each with its partitions' processor handles in order.
 * No locking: one thread at a time per handle.
 */
#include "amdsmi.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- AMD SMI ABI, declared by us -------------------------------------------- */

#define AMD__STR 256 /* AMDSMI_MAX_STRING_LENGTH */
#define AMD__BUF 4096

typedef void *amd__proc_h; /* amdsmi_processor_handle */
typedef void *amd__sock_h; /* amdsmi_socket_handle */

typedef struct amd__asic { /* amdsmi_asic_info_t */
    char market_name[AMD__STR];
    uint32_t vendor_id;
    char vendor_name[AMD__STR];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[AMD__STR];
    uint32_t oam_id;
    uint32_t num_of_compute_units;
    uint64_t target_graphics_version;
    uint32_t subsystem_id;
    uint32_t reserved[21];
} amd__asic;

typedef struct amd__vram { /* amdsmi_vram_usage_t, MB */
    uint32_t vram_total, vram_used, reserved[2];
} amd__vram;

typedef struct amd__power { /* amdsmi_power_info_t, W; UINT32_MAX unsupported */
    uint64_t socket_power;
    uint32_t current_socket_power, average_socket_power;
    uint64_t gfx_voltage, soc_voltage, mem_voltage;
    uint32_t power_limit;
    uint64_t reserved[18];
} amd__power;

typedef struct amd__engine { /* amdsmi_engine_usage_t, % */
    uint32_t gfx_activity, umc_activity, mm_activity, reserved[13];
} amd__engine;

typedef struct amd__ecc { /* amdsmi_error_count_t */
    uint64_t correctable_count, uncorrectable_count, deferred_count, reserved[5];
} amd__ecc;

typedef struct amd__page { /* amdsmi_retired_page_record_t */
    uint64_t page_address, page_size;
    uint32_t status;
} amd__page;

typedef struct amd__driver { /* amdsmi_driver_info_t */
    char driver_version[AMD__STR], driver_date[AMD__STR], driver_name[AMD__STR];
} amd__driver;

typedef struct amd__proc { /* amdsmi_proc_info_t */
    char name[AMD__STR];
    uint32_t pid;
    uint64_t mem; /* bytes */
    struct {
        uint64_t gfx, enc;
        uint32_t reserved[12];
    } engine_usage;
    struct {
        uint64_t gtt_mem, cpu_mem, vram_mem; /* bytes */
        uint32_t reserved[10];
    } memory_usage;
    char container_name[AMD__STR];
    uint32_t cu_occupancy, evicted_time, reserved[10];
} amd__proc;

typedef struct amd__version { /* amdsmi_version_t */
    uint32_t major, minor, release;
    const char *build;
} amd__version;

_Static_assert(sizeof(void *) != 8 || (sizeof(amd__asic) == 896 &&
                                       offsetof(amd__asic, device_id) == 520 &&
                                       offsetof(amd__asic, target_graphics_version) == 800),
               "amdsmi_asic_info_t layout");
_Static_assert(sizeof(amd__power) == 192 && offsetof(amd__power, current_socket_power) == 8,
               "amdsmi_power_info_t layout");
_Static_assert(sizeof(amd__ecc) == 64, "amdsmi_error_count_t layout");
_Static_assert(sizeof(amd__page) == 24, "amdsmi_retired_page_record_t layout");
_Static_assert(sizeof(amd__proc) == 704 && offsetof(amd__proc, mem) == 264 &&
                   offsetof(amd__proc, memory_usage) == 336 &&
                   offsetof(amd__proc, container_name) == 400,
               "amdsmi_proc_info_t layout");
_Static_assert(sizeof(amd__asic) <= AMD__BUF && sizeof(amd__driver) <= AMD__BUF,
               "structs fit the read buffer");

enum {
    AMD__SUCCESS = 0,
    AMD__NOT_SUPPORTED = 2,
    AMD__OUT_OF_RESOURCES = 15,
    AMD__NOT_FOUND = 31,
    AMD__DRIVER_NOT_LOADED = 34,
    AMD__MORE_DATA = 39,
    AMD__INSUFFICIENT_SIZE = 41,
};
#define AMD__INIT_AMD_GPUS (1ULL << 1)
#define AMD__PROCESSOR_TYPE_AMD_GPU 1u
#define AMD__MEM_TYPE_VRAM 0u
#define AMD__TEMPERATURE_TYPE_HOTSPOT 1u
#define AMD__TEMP_CURRENT 0u
#define AMD__TEMP_CRITICAL 5u
#define AMD__U32_NA 0xFFFFFFFFu

#define AMD__MAX_SOCKETS 64
#define AMD__MAX_PROCESSORS (ACCEL_MAX_GPUS * ACCEL_MAX_SLICES)
#define AMD__MAX_PAGES 4096
#define AMD__PROCS_FIRST 32

#define AMD__SYMBOLS(X)                                                                       \
    X(1, unsigned, amdsmi_init, (uint64_t))                                                   \
    X(1, unsigned, amdsmi_shut_down, (void))                                                  \
    X(1, unsigned, amdsmi_get_socket_handles, (uint32_t *, amd__sock_h *))                    \
    X(1, unsigned, amdsmi_get_processor_handles, (amd__sock_h, uint32_t *, amd__proc_h *))    \
    X(0, unsigned, amdsmi_status_code_to_string, (unsigned, const char **))                   \
    X(0, unsigned, amdsmi_get_processor_type, (amd__proc_h, unsigned *))                      \
    X(0, unsigned, amdsmi_get_gpu_asic_info, (amd__proc_h, amd__asic *))                      \
    X(0, unsigned, amdsmi_get_gpu_device_uuid, (amd__proc_h, unsigned *, char *))             \
    X(0, unsigned, amdsmi_get_gpu_bdf_id, (amd__proc_h, uint64_t *))                          \
    X(0, unsigned, amdsmi_get_gpu_memory_total, (amd__proc_h, unsigned, uint64_t *))          \
    X(0, unsigned, amdsmi_get_gpu_memory_usage, (amd__proc_h, unsigned, uint64_t *))          \
    X(0, unsigned, amdsmi_get_gpu_vram_usage, (amd__proc_h, amd__vram *))                     \
    X(0, unsigned, amdsmi_get_temp_metric, (amd__proc_h, unsigned, unsigned, int64_t *))      \
    X(0, unsigned, amdsmi_get_power_info, (amd__proc_h, amd__power *))                        \
    X(0, unsigned, amdsmi_get_gpu_activity, (amd__proc_h, amd__engine *))                     \
    X(0, unsigned, amdsmi_get_gpu_total_ecc_count, (amd__proc_h, amd__ecc *))                 \
    X(0, unsigned, amdsmi_get_gpu_ecc_count, (amd__proc_h, uint64_t, amd__ecc *))             \
    X(0, unsigned, amdsmi_get_gpu_bad_page_info, (amd__proc_h, uint32_t *, amd__page *))      \
    X(0, unsigned, amdsmi_get_gpu_compute_partition, (amd__proc_h, char *, uint32_t))         \
    X(0, unsigned, amdsmi_get_gpu_memory_partition, (amd__proc_h, char *, uint32_t))          \
    X(0, unsigned, amdsmi_get_gpu_process_list, (amd__proc_h, uint32_t *, amd__proc *))       \
    X(0, unsigned, amdsmi_get_gpu_driver_info, (amd__proc_h, amd__driver *))                  \
    X(0, unsigned, amdsmi_get_lib_version, (amd__version *))                                  \
    X(0, unsigned, amdsmi_topo_get_numa_node_number, (amd__proc_h, uint32_t *))

typedef struct amd__card {
    amd__proc_h parts[ACCEL_MAX_SLICES]; /* its partitions' processors, enumeration order */
    int ordinal[ACCEL_MAX_SLICES];       /* each one's processor index */
    int nparts;
    int shared;                          /* memory shared by the partitions (NPS1 / unknown) */
} amd__card;

typedef struct amd_smi {
    void *dl;
    int inited;
#define AMD__MEMBER(req, ret, name, args) ret(*name) args;
    AMD__SYMBOLS(AMD__MEMBER)
#undef AMD__MEMBER
    amd__card cards[ACCEL_MAX_GPUS];
    int ncards;
} amd_smi;

#define AMD__SYM(req, ret, name, args) {#name, req, offsetof(amd_smi, name)},
static const accel_sym amd__syms[] = {AMD__SYMBOLS(AMD__SYM)};
#undef AMD__SYM

/* ---- helpers -------------------------------------------------------------------- */

static const char *amd__strerror(const amd_smi *h, unsigned rc) {
    const char *s = NULL;
    if (h && h->amdsmi_status_code_to_string &&
        h->amdsmi_status_code_to_string(rc, &s) == AMD__SUCCESS && s && *s)
        return s;
    return rc == AMD__DRIVER_NOT_LOADED ? "driver not loaded" : "error";
}

/* A card answer: true on success; NOT_FOUND marks the card lost. */
static int amd__ok(accel_gpu *g, unsigned rc) {
    if (rc == AMD__NOT_FOUND) g->lost = 1;
    return rc == AMD__SUCCESS;
}

/* The ROCm release recorded by its installer ($ROCM_PATH/.info/version), dotted; "". */
static void amd__rocm_version(char *out, size_t outsz) {
    const char *root = getenv("ROCM_PATH");
    char path[512], line[64] = "";
    snprintf(path, sizeof path, "%s/.info/version", root && *root ? root : "/opt/rocm");
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(line, sizeof line, f)) accel_dotted(line, out, (unsigned)outsz);
    fclose(f);
}

/* ---- open / close -------------------------------------------------------------- */

int amd_open(const char *path, void **out, gp_err *err) {
    if (!out) return gp_err_set(err, GP_EINVALID, "amd_open: no output handle");
    *out = NULL;
    amd_smi *h = calloc(1, sizeof *h);
    if (!h) return gp_err_set(err, GP_ENOMEM, NULL);
    const char *lib;
    h->dl = accel_dlopen(&accel_amdsmi_ops, path, amd__syms, sizeof amd__syms / sizeof amd__syms[0],
                         h, &lib, err);
    if (!h->dl) {
        free(h);
        return GP_EUNSUPPORTED;
    }
    unsigned rc = h->amdsmi_init(AMD__INIT_AMD_GPUS);
    if (rc != AMD__SUCCESS) {
        gp_err_set(err, GP_EUNSUPPORTED,
                   "AMD SMI not available: amdsmi_init returned %u (%s; amdgpu driver not "
                   "loaded?) (%s)",
                   rc, amd__strerror(h, rc), lib);
        dlclose(h->dl);
        free(h);
        return GP_EUNSUPPORTED;
    }
    h->inited = 1;
    *out = h;
    return GP_OK;
}

void amd_close(void *hv) {
    amd_smi *h = hv;
    if (!h) return;
    if (h->inited) h->amdsmi_shut_down();
    if (h->dl) dlclose(h->dl);
    free(h);
}

/* ---- discovery ----------------------------------------------------------------- */

/* Every GPU processor of every socket, in enumeration order (at most `cap`). */
static int amd__processors(amd_smi *h, amd__proc_h *out, int cap, gp_err *err) {
    amd__sock_h socks[AMD__MAX_SOCKETS];
    uint32_t ns = AMD__MAX_SOCKETS;
    unsigned rc = h->amdsmi_get_socket_handles(&ns, socks);
    if (rc != AMD__SUCCESS)
        return gp_err_set(err, GP_EIO, "amdsmi_get_socket_handles returned %u (%s)", rc,
                          amd__strerror(h, rc)),
               -1;
    if (ns > AMD__MAX_SOCKETS) ns = AMD__MAX_SOCKETS;
    int n = 0;
    for (uint32_t s = 0; s < ns && n < cap; s++) {
        amd__proc_h list[AMD__MAX_PROCESSORS];
        uint32_t np = AMD__MAX_PROCESSORS;
        rc = h->amdsmi_get_processor_handles(socks[s], &np, list);
        if (rc != AMD__SUCCESS)
            return gp_err_set(err, GP_EIO, "amdsmi_get_processor_handles returned %u (%s)", rc,
                              amd__strerror(h, rc)),
                   -1;
        if (np > AMD__MAX_PROCESSORS) np = AMD__MAX_PROCESSORS;
        for (uint32_t p = 0; p < np && n < cap; p++) {
            unsigned type = AMD__PROCESSOR_TYPE_AMD_GPU;
            if (h->amdsmi_get_processor_type &&
                h->amdsmi_get_processor_type(list[p], &type) == AMD__SUCCESS &&
                type != AMD__PROCESSOR_TYPE_AMD_GPU)
                continue;
            out[n++] = list[p];
        }
    }
    return n;
}

/* Total VRAM of one processor in bytes; 0 unknown. */
static unsigned long long amd__vram_total(amd_smi *h, amd__proc_h p, accel_gpu *g) {
    uint64_t total = 0;
    if (h->amdsmi_get_gpu_memory_total &&
        amd__ok(g, h->amdsmi_get_gpu_memory_total(p, AMD__MEM_TYPE_VRAM, &total)) && total)
        return total;
    union {
        amd__vram v;
        unsigned char pad[AMD__BUF];
    } u;
    memset(&u, 0, sizeof u);
    if (!g->lost && h->amdsmi_get_gpu_vram_usage && amd__ok(g, h->amdsmi_get_gpu_vram_usage(p, &u.v)))
        return (unsigned long long)u.v.vram_total * 1024ULL * 1024ULL;
    return 0;
}

/* Identity of a card from its first processor (all optional). */
static void amd__identity(amd_smi *h, amd__proc_h p, accel_gpu *g) {
    union {
        amd__asic a;
        amd__driver d;
        unsigned char pad[AMD__BUF];
    } u;
    memset(&u, 0, sizeof u);
    if (h->amdsmi_get_gpu_asic_info && amd__ok(g, h->amdsmi_get_gpu_asic_info(p, &u.a))) {
        accel_copy(g->name, sizeof g->name, u.a.market_name, sizeof u.a.market_name);
        if (u.a.target_graphics_version && u.a.target_graphics_version <= 0xffffffULL)
            snprintf(g->compute_cap, sizeof g->compute_cap, "gfx%llx",
                     (unsigned long long)(u.a.target_graphics_version & 0xffffffULL));
    }
    char buf[96] = "";
    unsigned len = sizeof buf;
    if (!g->lost && h->amdsmi_get_gpu_device_uuid &&
        amd__ok(g, h->amdsmi_get_gpu_device_uuid(p, &len, buf)))
        accel_copy(g->uuid, sizeof g->uuid, buf, sizeof buf);
    uint64_t bdf;
    if (!g->lost && h->amdsmi_get_gpu_bdf_id && amd__ok(g, h->amdsmi_get_gpu_bdf_id(p, &bdf)))
        snprintf(g->pci_bus, sizeof g->pci_bus, "%04llx:%02llx:%02llx.%llx",
                 (unsigned long long)(bdf >> 32) & 0xffffffffULL,
                 (unsigned long long)(bdf >> 8) & 0xffULL, (unsigned long long)(bdf >> 3) & 0x1fULL,
                 (unsigned long long)bdf & 0x7ULL);
    uint32_t numa;
    if (!g->lost && h->amdsmi_topo_get_numa_node_number &&
        amd__ok(g, h->amdsmi_topo_get_numa_node_number(p, &numa)) && numa != AMD__U32_NA)
        g->numa = (int)numa;
    else if (g->pci_bus[0])
        g->numa = accel_sysfs_numa(g->pci_bus);
    memset(&u, 0, sizeof u);
    if (!g->lost && h->amdsmi_get_gpu_driver_info && amd__ok(g, h->amdsmi_get_gpu_driver_info(p, &u.d))) {
        char raw[AMD__STR + 1];
        accel_copy(raw, sizeof raw, u.d.driver_version, sizeof u.d.driver_version);
        accel_dotted(raw, g->driver_version, sizeof g->driver_version);
    }
}

/* Partition mode and slices of card `ci` from its processors (see amdsmi.h). */
static void amd__layout(amd_smi *h, int ci, accel_gpu *g) {
    amd__card *c = &h->cards[ci];
    char mode[64] = "", mem[64] = "";
    g->mig_capable = g->mig_enabled = 0;
    g->nslices = 0;
    memset(g->slices, 0, sizeof g->slices);
    if (h->amdsmi_get_gpu_compute_partition &&
        amd__ok(g, h->amdsmi_get_gpu_compute_partition(c->parts[0], mode, sizeof mode)))
        mode[sizeof mode - 1] = '\0';
    else
        mode[0] = '\0';
    if (!g->lost && h->amdsmi_get_gpu_memory_partition &&
        amd__ok(g, h->amdsmi_get_gpu_memory_partition(c->parts[0], mem, sizeof mem)))
        mem[sizeof mem - 1] = '\0';
    else
        mem[0] = '\0';
    c->shared = !mem[0] || strcmp(mem, "NPS1") == 0;
    unsigned long long total = 0;
    for (int k = 0; k < c->nparts && !g->lost; k++) {
        unsigned long long t = amd__vram_total(h, c->parts[k], g);
        if (c->shared) total = t > total ? t : total;
        else total += t;
        if (k == 0 && c->nparts == 1) break;
    }
    if (total) g->memory_bytes = total;
    if (mode[0]) g->mig_capable = 1;
    if (c->nparts < 2 || g->lost) return;
    g->mig_enabled = 1;
    char lower[16] = "";
    for (size_t i = 0; mode[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(mode[i] >= 'A' && mode[i] <= 'Z' ? mode[i] - 'A' + 'a' : mode[i]);
    if (!lower[0]) snprintf(lower, sizeof lower, "part");
    unsigned long long each = g->memory_bytes / (unsigned)c->nparts;
    for (int k = 0; k < c->nparts; k++) {
        accel_slice *s = &g->slices[g->nslices++];
        s->index = c->ordinal[k];
        s->memory_bytes = each;
        snprintf(s->profile, sizeof s->profile, "%.8s.%ugb", lower,
                 (unsigned)((each >> 30) & 0xffffffULL));
        char buf[96] = "";
        unsigned len = sizeof buf;
        if (h->amdsmi_get_gpu_device_uuid &&
            h->amdsmi_get_gpu_device_uuid(c->parts[k], &len, buf) == AMD__SUCCESS)
            accel_copy(s->uuid, sizeof s->uuid, buf, sizeof buf);
        int taken = !s->uuid[0] || strcmp(s->uuid, g->uuid) == 0;
        for (int j = 0; j < k && !taken; j++) taken = strcmp(g->slices[j].uuid, s->uuid) == 0;
        if (taken) {
            char su[96];
            snprintf(su, sizeof su, "%.80s-p%d", g->uuid[0] ? g->uuid : "amd", k);
            snprintf(s->uuid, sizeof s->uuid, "%s", su);
        }
    }
}

int amd_discover(void *hv, accel_gpu **gpus, int *n, char driver[80], gp_err *err) {
    amd_smi *h = hv;
    if (!h || !gpus || !n) return gp_err_set(err, GP_EINVALID, "amd_discover: bad arguments");
    *gpus = NULL;
    *n = 0;
    if (driver) driver[0] = '\0';
    h->ncards = 0;
    amd__proc_h procs[AMD__MAX_PROCESSORS];
    int np = amd__processors(h, procs, AMD__MAX_PROCESSORS, err);
    if (np < 0) return GP_EIO;
    /* group partitions into cards by BDF without the partition bits */
    uint64_t keys[ACCEL_MAX_GPUS];
    for (int p = 0; p < np; p++) {
        uint64_t bdf = 0;
        int has = h->amdsmi_get_gpu_bdf_id && h->amdsmi_get_gpu_bdf_id(procs[p], &bdf) == AMD__SUCCESS;
        uint64_t key = bdf & ~((0xFULL << 28) | 0x7ULL); /* partition id and function */
        int ci = -1;
        for (int c = 0; has && c < h->ncards && ci < 0; c++)
            if (keys[c] == key) ci = c;
        if (ci < 0) {
            if (h->ncards >= ACCEL_MAX_GPUS) continue;
            ci = h->ncards++;
            keys[ci] = has ? key : ~0ULL - (uint64_t)p;
            memset(&h->cards[ci], 0, sizeof h->cards[ci]);
        }
        amd__card *c = &h->cards[ci];
        if (c->nparts >= ACCEL_MAX_SLICES) continue;
        c->ordinal[c->nparts] = p;
        c->parts[c->nparts++] = procs[p];
    }
    if (h->ncards == 0) return GP_OK;
    accel_gpu *g = calloc((size_t)h->ncards, sizeof *g);
    if (!g) return gp_err_set(err, GP_ENOMEM, NULL);
    char rocm[32];
    amd__rocm_version(rocm, sizeof rocm);
    for (int i = 0; i < h->ncards; i++) {
        accel_gpu *gi = &g[i];
        gi->index = (unsigned)i;
        gi->numa = -1;
        gi->module_id = -1;
        for (int j = 0; j < ACCEL_MAX_GPUS; j++) gi->topology[j] = -1;
        accel_health_unknown(gi);
        snprintf(gi->vendor, sizeof gi->vendor, "amd");
        amd__identity(h, h->cards[i].parts[0], gi);
        if (!gi->lost) amd__layout(h, i, gi);
        if (rocm[0]) {
            snprintf(gi->runtime, sizeof gi->runtime, "rocm");
            snprintf(gi->runtime_version, sizeof gi->runtime_version, "%s", rocm);
        }
    }
    if (driver) snprintf(driver, 80, "%s", g[0].driver_version);
    *gpus = g;
    *n = h->ncards;
    return GP_OK;
}

int amd_partitions(void *hv, accel_gpu *g, gp_err *err) {
    amd_smi *h = hv;
    if (!h || !g || (int)g->index >= h->ncards)
        return gp_err_set(err, GP_EINVALID, "amd_partitions: bad arguments");
    amd__layout(h, (int)g->index, g);
    return GP_OK;
}

/* ---- health ---------------------------------------------------------------------- */

static void amd__signals(amd_smi *h, amd__card *c, accel_gpu *g) {
    amd__proc_h p = c->parts[0];
    union {
        amd__ecc e;
        amd__power pw;
        amd__engine en;
        unsigned char pad[AMD__BUF];
    } u;
    memset(&u, 0, sizeof u);
    if (h->amdsmi_get_gpu_total_ecc_count && amd__ok(g, h->amdsmi_get_gpu_total_ecc_count(p, &u.e))) {
        g->ecc_aggregate_corrected = u.e.correctable_count > LLONG_MAX ? LLONG_MAX : (long long)u.e.correctable_count;
        g->ecc_aggregate_uncorrected = u.e.uncorrectable_count > LLONG_MAX ? LLONG_MAX : (long long)u.e.uncorrectable_count;
        g->ecc_deferred = u.e.deferred_count > LLONG_MAX ? LLONG_MAX : (long long)u.e.deferred_count;
    }
    for (int b = 0; b < ACCEL_RAS_BLOCKS && !g->lost && h->amdsmi_get_gpu_ecc_count; b++) {
        memset(&u, 0, sizeof u);
        if (amd__ok(g, h->amdsmi_get_gpu_ecc_count(p, accel_ras_blocks[b].mask, &u.e)))
            g->ras_uncorrectable[b] =
                u.e.uncorrectable_count > LLONG_MAX ? LLONG_MAX : (long long)u.e.uncorrectable_count;
    }
    uint32_t pages = 0;
    if (!g->lost && h->amdsmi_get_gpu_bad_page_info) {
        unsigned rc = h->amdsmi_get_gpu_bad_page_info(p, &pages, NULL);
        if (rc == AMD__SUCCESS) {
            g->bad_pages = pages;
        } else if (!amd__ok(g, rc) && !g->lost && rc != AMD__NOT_SUPPORTED) {
            /* a library that wants a buffer for the count */
            amd__page *buf = calloc(AMD__MAX_PAGES, sizeof *buf);
            pages = AMD__MAX_PAGES;
            if (buf && amd__ok(g, h->amdsmi_get_gpu_bad_page_info(p, &pages, buf))) g->bad_pages = pages;
            free(buf);
        }
    }
    int64_t t;
    if (!g->lost && h->amdsmi_get_temp_metric &&
        amd__ok(g, h->amdsmi_get_temp_metric(p, AMD__TEMPERATURE_TYPE_HOTSPOT, AMD__TEMP_CURRENT, &t)) &&
        t >= 0 && t < 1000)
        g->temperature_c = (int)t;
    if (!g->lost && h->amdsmi_get_temp_metric &&
        amd__ok(g, h->amdsmi_get_temp_metric(p, AMD__TEMPERATURE_TYPE_HOTSPOT, AMD__TEMP_CRITICAL, &t)) &&
        t > 0 && t < 1000)
        g->slowdown_c = (int)t;
    memset(&u, 0, sizeof u);
    if (!g->lost && h->amdsmi_get_gpu_activity && amd__ok(g, h->amdsmi_get_gpu_activity(p, &u.en))) {
        if (u.en.gfx_activity <= 100) g->util_gpu = (int)u.en.gfx_activity;
        if (u.en.umc_activity <= 100) g->util_memory = (int)u.en.umc_activity;
    }
    memset(&u, 0, sizeof u);
    if (!g->lost && h->amdsmi_get_power_info && amd__ok(g, h->amdsmi_get_power_info(p, &u.pw))) {
        uint64_t w = u.pw.current_socket_power != AMD__U32_NA && u.pw.current_socket_power
                         ? u.pw.current_socket_power
                     : u.pw.average_socket_power != AMD__U32_NA && u.pw.average_socket_power
                         ? u.pw.average_socket_power
                         : (u.pw.socket_power != AMD__U32_NA ? u.pw.socket_power : 0);
        if (w && w < 100000) g->power_mw = (int)(w * 1000);
    }
    long long used = -1;
    for (int k = 0; k < c->nparts && !g->lost; k++) {
        uint64_t b = 0;
        if (!h->amdsmi_get_gpu_memory_usage ||
            !amd__ok(g, h->amdsmi_get_gpu_memory_usage(c->parts[k], AMD__MEM_TYPE_VRAM, &b)))
            break;
        used = (used < 0 ? 0 : used) + (b > (uint64_t)LLONG_MAX / 2 ? LLONG_MAX / 2 : (long long)b);
        if (c->shared) break;
    }
    if (!g->lost) g->memory_used_bytes = used;
}

int amd_health(void *hv, accel_gpu *gpus, int n, gp_err *err) {
    amd_smi *h = hv;
    if (!h || n < 0 || (n > 0 && !gpus)) return gp_err_set(err, GP_EINVALID, "amd_health: bad arguments");
    for (int i = 0; i < n; i++) {
        accel_gpu *g = &gpus[i];
        accel_health_unknown(g);
        if ((int)g->index >= h->ncards) continue;
        amd__signals(h, &h->cards[g->index], g);
    }
    return GP_OK;
}

/* ---- processes -------------------------------------------------------------------- */

/* One partition's process list into *out (malloc'd), growing the buffer on "more data". */
static int amd__proclist(amd_smi *h, amd__proc_h p, accel_gpu *g, amd__proc **out, uint32_t *nout) {
    *out = NULL;
    *nout = 0;
    uint32_t cap = AMD__PROCS_FIRST;
    for (int t = 0; t < 4; t++) {
        amd__proc *buf = calloc(cap, sizeof *buf);
        if (!buf) return GP_ENOMEM;
        uint32_t count = cap;
        unsigned rc = h->amdsmi_get_gpu_process_list(p, &count, buf);
        if (rc == AMD__SUCCESS) {
            *out = buf;
            *nout = count > cap ? cap : count;
            return GP_OK;
        }
        free(buf);
        if (rc != AMD__OUT_OF_RESOURCES && rc != AMD__MORE_DATA && rc != AMD__INSUFFICIENT_SIZE) {
            amd__ok(g, rc);
            return GP_OK;
        }
        if (cap >= ACCEL_MAX_PROCS || count > ACCEL_MAX_PROCS) return GP_OK; /* unreadable */
        uint32_t want = count > cap ? count + 8 : cap * 2;
        cap = want > ACCEL_MAX_PROCS ? ACCEL_MAX_PROCS : want;
    }
    return GP_OK;
}

int amd_processes(void *hv, accel_gpu *g, accel_proc **procs, int *n, gp_err *err) {
    amd_smi *h = hv;
    if (procs) *procs = NULL;
    if (n) *n = 0;
    if (!h || !g || !procs || !n || (int)g->index >= h->ncards)
        return gp_err_set(err, GP_EINVALID, "amd_processes: bad arguments");
    if (!h->amdsmi_get_gpu_process_list) return GP_OK;
    amd__card *c = &h->cards[g->index];
    accel_proc *outv = NULL;
    int m = 0, cap = 0;
    for (int k = 0; k < c->nparts && !g->lost; k++) {
        amd__proc *list = NULL;
        uint32_t nl = 0;
        if (amd__proclist(h, c->parts[k], g, &list, &nl) != GP_OK) {
            free(outv);
            return gp_err_set(err, GP_ENOMEM, NULL);
        }
        for (uint32_t i = 0; i < nl; i++) {
            uint64_t bytes = list[i].memory_usage.vram_mem ? list[i].memory_usage.vram_mem : list[i].mem;
            long long mib = (long long)(bytes / (1024ULL * 1024ULL));
            int j = 0;
            while (j < m && outv[j].pid != list[i].pid) j++;
            if (j < m) {
                outv[j].memory_mib += mib;
                continue;
            }
            if (m == cap) {
                int nc = cap ? cap * 2 : 16;
                accel_proc *nv = realloc(outv, (size_t)nc * sizeof *nv);
                if (!nv) {
                    free(list);
                    free(outv);
                    return gp_err_set(err, GP_ENOMEM, NULL);
                }
                outv = nv;
                cap = nc;
            }
            outv[m].pid = list[i].pid;
            outv[m].memory_mib = mib;
            outv[m].sm_pct = -1;
            m++;
        }
        free(list);
    }
    if (!m) {
        free(outv);
        return GP_OK;
    }
    *procs = outv;
    *n = m;
    return GP_OK;
}

/* ---- the vendor layer's entry points (accel.h) ----------------------------------- */

const accel_ops accel_amdsmi_ops = {
    .vendor = "amd",
    .source = "amdsmi",
    .label = "AMD SMI",
    .env = "GPUPOOL_AMDSMI_LIBRARY",
    .soname = "libamd_smi.so",
    .absent = "no AMD GPU driver stack",
    .hint = "",
    .open = amd_open,
    .discover = amd_discover,
    .health = amd_health,
    .processes = amd_processes,
    .partitions = amd_partitions,
    .close = amd_close,
};
