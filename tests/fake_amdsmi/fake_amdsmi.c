/*
 * fake_amdsmi.c - a stand-in for AMD's libamd_smi.so used by the tests.
 *
 * Exports the AMD SMI symbols src/agent/amdsmi.c resolves, with AMD SMI's
 * names and x86-64 ABI (library 26.x layouts, declared here independently
 * of src/agent, as the real library would), and simulates one machine:
 *   socket 0: card 0 "AMD Instinct MI300X" (gfx942) in CPX mode, memory
 *             partition NPS1: 8 processors (partitions 0..7), BDF id
 *             0000:0c:00.0 with the partition id in bits 31:28, UUIDs
 *             a0000000-0000-1000-8000-00000000000<k>, each reporting the
 *             card's whole 192 GiB of VRAM (shared in NPS1)
 *   socket 1: card 1 "AMD Instinct MI300X" in SPX mode, NPS1: one
 *             processor, BDF 0000:8c:00.0, UUID b1000000-0000-1000-8000-000000000001,
 *             192 GiB
 *   driver "6.8.5-2041575" on both; library version 26.1.0;
 *   hotspot 50 C (critical limit 105 C), gfx 30 % / umc 10 % busy,
 *   1 GiB of VRAM in use per processor, socket power 350 W (card 0) and
 *   400 W (card 1), ECC counters and bad pages zero; NUMA node 0 / 1.
 *
 * Faults, read from the environment at each call (on card 1, processor 8):
 *   FAKE_AMDSMI_ABSENT=1     amdsmi_init returns 34 (driver not loaded)
 *   FAKE_AMDSMI_LOST=1       every call on card 1 returns 31 (not found)
 *   FAKE_AMDSMI_CE=<n> / FAKE_AMDSMI_UE=<n> / FAKE_AMDSMI_DEFERRED=<n>
 *                            card 1's correctable / uncorrectable / deferred ECC totals
 *                            (the uncorrectable ones all in the UMC RAS block; the SDMA,
 *                            GFX and MMHUB blocks count 0, the others are not supported)
 *   FAKE_AMDSMI_BAD_PAGES=<n> card 1's bad (retired) page count (at most 64)
 *   FAKE_AMDSMI_TEMP=<c>     card 1's hotspot temperature
 * Another host: FAKE_AMDSMI_HOST=<d> (0-9) puts d in the UUIDs' eighth digit (a card
 * belongs to the node that registered it, so a second simulated node needs other cards).
 * Processes (none by default):
 *   FAKE_AMDSMI_PROCS_<p>=<pid>:<vram MiB>[,...]  the processes on processor <p>
 *   FAKE_AMDSMI_PROCS_N_<p>=<n>  n processes (pids 10000..) of 1 MiB on processor <p>
 * amdsmi_get_gpu_process_list, like the real one, answers 15 (out of
 * resources) with the true count in *max_processes when the list is too small.
 *
 * Calls before amdsmi_init (or after amdsmi_shut_down) return 32 (not
 * initialised).  Built with -DFAKE_AMDSMI_MINIMAL it exports only the four
 * symbols amdsmi.c requires.  Not thread-safe; tests are single-threaded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define STR 256

typedef struct {
    char market_name[STR];
    uint32_t vendor_id;
    char vendor_name[STR];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[STR];
    uint32_t oam_id, num_of_compute_units;
    uint64_t target_graphics_version;
    uint32_t subsystem_id, reserved[21];
} asic_info;
typedef struct { uint32_t vram_total, vram_used, reserved[2]; } vram_usage;
typedef struct {
    uint64_t socket_power;
    uint32_t current_socket_power, average_socket_power;
    uint64_t gfx_voltage, soc_voltage, mem_voltage;
    uint32_t power_limit;
    uint64_t reserved[18];
} power_info;
typedef struct { uint32_t gfx_activity, umc_activity, mm_activity, reserved[13]; } engine_usage;
typedef struct { uint64_t correctable_count, uncorrectable_count, deferred_count, reserved[5]; } error_count;
typedef struct { uint64_t page_address, page_size; uint32_t status; } page_record;
typedef struct { char driver_version[STR], driver_date[STR], driver_name[STR]; } driver_info;
typedef struct {
    char name[STR];
    uint32_t pid;
    uint64_t mem;
    struct { uint64_t gfx, enc; uint32_t reserved[12]; } engine_usage;
    struct { uint64_t gtt_mem, cpu_mem, vram_mem; uint32_t reserved[10]; } memory_usage;
    char container_name[STR];
    uint32_t cu_occupancy, evicted_time, reserved[10];
} proc_info;
typedef struct { uint32_t major, minor, release; const char *build; } version;

_Static_assert(sizeof(proc_info) == 704, "amdsmi_proc_info_t layout");
_Static_assert(sizeof(asic_info) == 896, "amdsmi_asic_info_t layout");

enum { OK = 0, INVAL = 1, NOT_SUPPORTED = 2, OUT_OF_RESOURCES = 15, NOT_FOUND = 31,
       NOT_INIT = 32, DRIVER_NOT_LOADED = 34 };

#define NPROC 9
typedef struct { int card, part; } proc_t;
static proc_t procs[NPROC] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {0, 6}, {0, 7}, {1, 0}};
static int sockets[2];
static int inited;

static long envl(const char *k, long def) {
    const char *v = getenv(k);
    return v && *v ? strtol(v, NULL, 10) : def;
}

/* The processor a handle names, or NULL; *rc says why not. */
__attribute__((unused)) static proc_t *P(void *h, unsigned *rc) {
    *rc = OK;
    if (!inited) return *rc = NOT_INIT, NULL;
    for (int i = 0; i < NPROC; i++)
        if (h == &procs[i]) {
            if (procs[i].card == 1 && envl("FAKE_AMDSMI_LOST", 0)) return *rc = NOT_FOUND, NULL;
            return &procs[i];
        }
    return *rc = INVAL, NULL;
}

FAKE_EXPORT unsigned amdsmi_init(uint64_t flags) {
    (void)flags;
    if (envl("FAKE_AMDSMI_ABSENT", 0)) return DRIVER_NOT_LOADED;
    inited = 1;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_shut_down(void) {
    if (!inited) return NOT_INIT;
    inited = 0;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_socket_handles(uint32_t *count, void **out) {
    if (!inited) return NOT_INIT;
    if (!count) return INVAL;
    if (!out) return *count = 2, OK;
    uint32_t n = *count < 2 ? *count : 2;
    for (uint32_t i = 0; i < n; i++) out[i] = &sockets[i];
    *count = n;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_processor_handles(void *sock, uint32_t *count, void **out) {
    if (!inited) return NOT_INIT;
    if (!count || (sock != &sockets[0] && sock != &sockets[1])) return INVAL;
    int s = sock == &sockets[1];
    uint32_t total = s ? 1 : 8;
    if (!out) return *count = total, OK;
    uint32_t n = *count < total ? *count : total;
    for (uint32_t i = 0; i < n; i++) out[i] = &procs[s ? 8 : i];
    *count = n;
    return OK;
}

#ifndef FAKE_AMDSMI_MINIMAL
FAKE_EXPORT unsigned amdsmi_status_code_to_string(unsigned st, const char **s) {
    *s = st == NOT_FOUND ? "AMDSMI_STATUS_NOT_FOUND" : st == DRIVER_NOT_LOADED ? "AMDSMI_STATUS_DRIVER_NOT_LOADED" : "AMDSMI_STATUS_?";
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_processor_type(void *h, unsigned *t) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    *t = 1; /* AMDSMI_PROCESSOR_TYPE_AMD_GPU */
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_asic_info(void *h, asic_info *a) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    memset(a, 0, sizeof *a);
    snprintf(a->market_name, sizeof a->market_name, "AMD Instinct MI300X");
    a->vendor_id = 0x1002;
    a->device_id = 0x74a1;
    a->target_graphics_version = 0x942;
    a->num_of_compute_units = 304;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_device_uuid(void *h, unsigned *len, char *uuid) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    if (!len || !uuid || *len < 38) return INVAL;
    /* FAKE_AMDSMI_HOST=d (0-9): another host's cards, other UUIDs (a card belongs to one node) */
    long host = envl("FAKE_AMDSMI_HOST", 0) % 10;
    if (p->card == 0)
        snprintf(uuid, *len, "a000000%ld-0000-1000-8000-00000000000%d", host, p->part);
    else snprintf(uuid, *len, "b100000%ld-0000-1000-8000-000000000001", host);
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_bdf_id(void *h, uint64_t *bdf) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    *bdf = ((uint64_t)(p->card ? 0x8c : 0x0c) << 8) | ((uint64_t)p->part << 28);
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_memory_total(void *h, unsigned type, uint64_t *total) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    if (type != 0) return NOT_SUPPORTED;
    *total = 192ULL << 30;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_memory_usage(void *h, unsigned type, uint64_t *used) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    if (type != 0) return NOT_SUPPORTED;
    *used = 1ULL << 30;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_vram_usage(void *h, vram_usage *v) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    memset(v, 0, sizeof *v);
    v->vram_total = 196608;
    v->vram_used = 1024;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_temp_metric(void *h, unsigned sensor, unsigned metric, int64_t *t) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    if (sensor != 1) return NOT_SUPPORTED;
    if (metric == 0) *t = p->card == 1 ? envl("FAKE_AMDSMI_TEMP", 50) : 50;
    else if (metric == 5) *t = 105;
    else return NOT_SUPPORTED;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_power_info(void *h, power_info *pw) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    memset(pw, 0, sizeof *pw);
    pw->current_socket_power = p->card ? 400 : 350;
    pw->average_socket_power = 0xFFFFFFFFu;
    pw->socket_power = pw->current_socket_power;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_activity(void *h, engine_usage *e) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    memset(e, 0, sizeof *e);
    e->gfx_activity = 30;
    e->umc_activity = 10;
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_total_ecc_count(void *h, error_count *ec) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    memset(ec, 0, sizeof *ec);
    if (p->card == 1) {
        ec->correctable_count = (uint64_t)envl("FAKE_AMDSMI_CE", 0);
        ec->uncorrectable_count = (uint64_t)envl("FAKE_AMDSMI_UE", 0);
        ec->deferred_count = (uint64_t)envl("FAKE_AMDSMI_DEFERRED", 0);
    }
    return OK;
}
/* Per RAS block: UMC carries card 1's FAKE_AMDSMI_UE; SDMA, GFX and MMHUB answer 0; others
 * "not supported". */
FAKE_EXPORT unsigned amdsmi_get_gpu_ecc_count(void *h, uint64_t block, error_count *ec) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    if (block != 1 && block != 2 && block != 4 && block != 8) return NOT_SUPPORTED;
    memset(ec, 0, sizeof *ec);
    if (block == 1 && p->card == 1) ec->uncorrectable_count = (uint64_t)envl("FAKE_AMDSMI_UE", 0);
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_bad_page_info(void *h, uint32_t *n, page_record *info) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    if (!n) return INVAL;
    long bad = p->card == 1 ? envl("FAKE_AMDSMI_BAD_PAGES", 0) : 0;
    if (bad > 64) bad = 64;
    if (info) {
        uint32_t k = *n < (uint32_t)bad ? *n : (uint32_t)bad;
        for (uint32_t i = 0; i < k; i++) {
            info[i].page_address = 0x100000ULL * (i + 1);
            info[i].page_size = 4096;
            info[i].status = 0;
        }
    }
    *n = (uint32_t)bad;
    return OK;
}
static unsigned text(char *out, uint32_t len, const char *s) {
    if (!out || len == 0) return INVAL;
    snprintf(out, len, "%s", s);
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_compute_partition(void *h, char *out, uint32_t len) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    return text(out, len, p->card == 0 ? "CPX" : "SPX");
}
FAKE_EXPORT unsigned amdsmi_get_gpu_memory_partition(void *h, char *out, uint32_t len) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    return text(out, len, "NPS1");
}
FAKE_EXPORT unsigned amdsmi_get_gpu_process_list(void *h, uint32_t *max, proc_info *list) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    if (!max) return INVAL;
    int idx = (int)(p - procs);
    char key[48];
    snprintf(key, sizeof key, "FAKE_AMDSMI_PROCS_N_%d", idx);
    long many = envl(key, 0);
    snprintf(key, sizeof key, "FAKE_AMDSMI_PROCS_%d", idx);
    const char *spec = getenv(key);
    uint32_t pids[64];
    uint64_t mib[64];
    uint32_t count = 0;
    if (spec && *spec) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", spec);
        for (char *tok = strtok(buf, ","); tok && count < 64; tok = strtok(NULL, ",")) {
            char *colon = strchr(tok, ':');
            pids[count] = (uint32_t)strtoul(tok, NULL, 10);
            mib[count] = colon ? strtoull(colon + 1, NULL, 10) : 0;
            count++;
        }
    }
    uint32_t total = many > 0 ? (uint32_t)many : count;
    if (!list) return *max = total, OK;
    uint32_t n = *max < total ? *max : total;
    for (uint32_t i = 0; i < n; i++) {
        memset(&list[i], 0, sizeof list[i]);
        list[i].pid = many > 0 ? 10000 + i : pids[i];
        uint64_t bytes = (many > 0 ? 1 : mib[i]) << 20;
        list[i].mem = bytes;
        list[i].memory_usage.vram_mem = bytes;
        snprintf(list[i].name, sizeof list[i].name, "proc%u", list[i].pid);
    }
    uint32_t was = *max;
    *max = total;
    return total > was ? OUT_OF_RESOURCES : OK;
}
FAKE_EXPORT unsigned amdsmi_get_gpu_driver_info(void *h, driver_info *d) {
    unsigned rc;
    if (!P(h, &rc)) return rc;
    memset(d, 0, sizeof *d);
    snprintf(d->driver_version, sizeof d->driver_version, "6.8.5-2041575");
    snprintf(d->driver_name, sizeof d->driver_name, "amdgpu");
    return OK;
}
FAKE_EXPORT unsigned amdsmi_get_lib_version(version *v) {
    if (!inited) return NOT_INIT;
    v->major = 26;
    v->minor = 1;
    v->release = 0;
    v->build = "26.1.0";
    return OK;
}
FAKE_EXPORT unsigned amdsmi_topo_get_numa_node_number(void *h, uint32_t *numa) {
    unsigned rc;
    proc_t *p = P(h, &rc);
    if (!p) return rc;
    *numa = (uint32_t)p->card;
    return OK;
}
#endif
