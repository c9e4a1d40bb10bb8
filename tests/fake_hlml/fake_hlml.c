/*
 * fake_hlml.c - a stand-in for Habana's libhlml.so used by the tests.
 *
 * Exports the HLML symbols src/agent/hlml.c resolves, with HLML's names and
 * x86-64 ABI (types declared here independently, as the real library would),
 * and simulates one machine of two Intel Gaudi 3 cards:
 *   card 0 "HL-325L"  hl-fake-0000  128 GiB  0000:33:00.0  module id 3  accel0
 *   card 1 "HL-325L"  hl-fake-0001  128 GiB  0000:9a:00.0  module id 0  accel1
 *   driver "1.18.0-ee698fb"; AIP 35 C with a 90 C slowdown threshold, AIP
 *   utilisation 20 %, 2 GiB of memory in use, 200 W (200000 mW); uncorrected
 *   ECC counters zero; corrected ECC "not supported" (3), as Habana documents.
 *
 * Faults, read from the environment at each call:
 *   FAKE_HLML_ABSENT=1    hlml_init returns 9 (driver not loaded)
 *   FAKE_HLML_LOST=1      every call on card 1 returns 15 (AIP is lost)
 *   FAKE_HLML_DBE=<n>     card 0's uncorrected ECC count (volatile and aggregate)
 *   FAKE_HLML_TEMP=<c>    card 1's AIP temperature
 *   FAKE_HLML_HOST=<d>    another host's cards: UUIDs hl-fake-<d>00<k> (a card belongs to
 *                         the node that registered it)
 *   FAKE_HLML_CRITICAL=<n> the event set reports n critical events (type 0x2) on
 *                         card 1, once per process for each distinct n, provided
 *                         card 1 registered critical events on that set
 *
 * Calls before hlml_init (or after hlml_shutdown) return 1 (uninitialised).
 * Built with -DFAKE_HLML_MINIMAL it exports only the four symbols hlml.c
 * requires.  Not thread-safe; tests are single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef struct {
    unsigned bus;
    char bus_id[15];
    unsigned device, domain, pci_device_id;
    struct { char link_speed[10], link_width[10]; } caps;
} pci_info;
typedef struct { unsigned aip; } utilization;
typedef struct { unsigned long long free, total, used; } memory;
typedef struct { void *device; unsigned long long event_type; } event_data;

enum { SUCCESS = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6,
       DRIVER_NOT_LOADED = 9, TIMEOUT = 10, AIP_IS_LOST = 15 };

static int cards[2];
static int inited;
#ifndef FAKE_HLML_MINIMAL
static int evset;                    /* the one event set */
static unsigned long long reg[2];    /* events registered per card */
static long crit_done = -1;          /* last FAKE_HLML_CRITICAL value delivered */
static long crit_left;
#endif

static long envl(const char *k, long def) {
    const char *v = getenv(k);
    return v && *v ? strtol(v, NULL, 10) : def;
}

__attribute__((unused)) static int C(void *h, int *rc) {
    *rc = SUCCESS;
    if (!inited) return *rc = UNINITIALIZED, -1;
    int i = h == &cards[0] ? 0 : h == &cards[1] ? 1 : -1;
    if (i < 0) return *rc = INVALID_ARGUMENT, -1;
    if (i == 1 && envl("FAKE_HLML_LOST", 0)) return *rc = AIP_IS_LOST, -1;
    return i;
}

FAKE_EXPORT int hlml_init(void) {
    if (envl("FAKE_HLML_ABSENT", 0)) return DRIVER_NOT_LOADED;
    inited = 1;
    return SUCCESS;
}
FAKE_EXPORT int hlml_shutdown(void) {
    if (!inited) return UNINITIALIZED;
    inited = 0;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_count(unsigned *n) {
    if (!inited) return UNINITIALIZED;
    *n = 2;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_handle_by_index(unsigned i, void **d) {
    if (!inited) return UNINITIALIZED;
    if (i > 1) return INVALID_ARGUMENT;
    *d = &cards[i];
    return SUCCESS;
}

#ifndef FAKE_HLML_MINIMAL
FAKE_EXPORT int hlml_get_driver_version(char *out, unsigned len) {
    if (!inited) return UNINITIALIZED;
    snprintf(out, len, "1.18.0-ee698fb");
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_name(void *d, char *out, unsigned len) {
    int rc;
    if (C(d, &rc) < 0) return rc;
    snprintf(out, len, "HL-325L");
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_uuid(void *d, char *out, unsigned len) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    /* FAKE_HLML_HOST=d (0-9): another host's cards, other UUIDs (a card belongs to one node) */
    const char *h = getenv("FAKE_HLML_HOST");
    snprintf(out, len, "hl-fake-%c00%d", h && *h >= '0' && *h <= '9' ? *h : '0', i);
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_memory_info(void *d, memory *m) {
    int rc;
    if (C(d, &rc) < 0) return rc;
    m->total = 128ULL << 30;
    m->used = 2ULL << 30;
    m->free = m->total - m->used;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_pci_info(void *d, pci_info *p) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    memset(p, 0, sizeof *p);
    p->bus = i ? 0x9a : 0x33;
    snprintf(p->bus_id, sizeof p->bus_id, "0000:%02x:00.0", p->bus);
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_module_id(void *d, unsigned *id) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    *id = i ? 0 : 3;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_minor_number(void *d, unsigned *minor) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    *minor = (unsigned)i;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_temperature(void *d, int sensor, unsigned *t) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    if (sensor != 0) return NOT_SUPPORTED;
    *t = (unsigned)(i == 1 ? envl("FAKE_HLML_TEMP", 35) : 35);
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_temperature_threshold(void *d, int type, unsigned *t) {
    int rc;
    if (C(d, &rc) < 0) return rc;
    if (type != 1) return NOT_SUPPORTED;
    *t = 90;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_utilization_rates(void *d, utilization *u) {
    int rc;
    if (C(d, &rc) < 0) return rc;
    u->aip = 20;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_power_usage(void *d, unsigned *mw) {
    int rc;
    if (C(d, &rc) < 0) return rc;
    *mw = 200000;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_get_total_ecc_errors(void *d, int type, int counter, unsigned long long *n) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    (void)counter;
    if (type == 0) return NOT_SUPPORTED; /* corrected: not supported */
    *n = i == 0 ? (unsigned long long)envl("FAKE_HLML_DBE", 0) : 0;
    return SUCCESS;
}
FAKE_EXPORT int hlml_event_set_create(void **set) {
    if (!inited) return UNINITIALIZED;
    reg[0] = reg[1] = 0;
    *set = &evset;
    return SUCCESS;
}
FAKE_EXPORT int hlml_event_set_free(void *set) {
    if (set != &evset) return INVALID_ARGUMENT;
    return SUCCESS;
}
FAKE_EXPORT int hlml_device_register_events(void *d, unsigned long long types, void *set) {
    int rc, i = C(d, &rc);
    if (i < 0) return rc;
    if (set != &evset) return INVALID_ARGUMENT;
    reg[i] |= types;
    return SUCCESS;
}
FAKE_EXPORT int hlml_event_set_wait(void *set, event_data *e, unsigned timeout_ms) {
    (void)timeout_ms;
    if (!inited) return UNINITIALIZED;
    if (set != &evset) return INVALID_ARGUMENT;
    long want = envl("FAKE_HLML_CRITICAL", 0);
    if (want > 0 && want != crit_done && (reg[1] & 0x2)) {
        crit_done = want;
        crit_left = want;
    }
    if (crit_left > 0) {
        crit_left--;
        e->device = &cards[1];
        e->event_type = 0x2;
        return SUCCESS;
    }
    return TIMEOUT;
}
#endif
