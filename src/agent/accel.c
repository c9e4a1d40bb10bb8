/*
 * accel.c - what every vendor file of the agent's vendor layer (accel.h)
 * needs alike: loading the vendor's library and resolving its entry points,
 * copying its fixed-size strings, the "unknown" health of a card, and a
 * card's NUMA node from sysfs.
 */
#include "accel.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
_Static_assert(sizeof(void *) == sizeof(int (*)(void)), "function pointers fit void *");

void *accel_dlopen(const accel_ops *v, const char *path, const accel_sym *syms, size_t nsyms,
                   void *fns, const char **lib, gp_err *err) {
    const char *name = path;
    if (!name) {
        const char *env = getenv(v->env);
        name = (env && *env) ? env : v->soname;
    }
    *lib = name;
    dlerror();
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        gp_err_set(err, GP_EUNSUPPORTED, "%s not available: %s on this machine (%s: %s)",
                   v->label, v->absent, name, why ? why : "cannot load");
        return NULL;
    }
    for (size_t i = 0; i < nsyms; i++) {
        void *sym = dlsym(dl, syms[i].name);
        memcpy((char *)fns + syms[i].offset, &sym, sizeof sym);
        if (syms[i].required && !sym) {
            gp_err_set(err, GP_EUNSUPPORTED, "%s not available: %s lacks %s%s", v->label, name,
                       syms[i].name, v->hint);
            dlclose(dl);
            return NULL;
        }
    }
    return dl;
}

void accel_copy(char *dst, size_t dstsz, const char *src, size_t srcsz) {
    size_t n = strnlen(src, srcsz);
    if (n >= dstsz) n = dstsz - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void accel_health_unknown(accel_gpu *g) {
    g->ecc_volatile_corrected = g->ecc_volatile_uncorrected = -1;
    g->ecc_aggregate_corrected = g->ecc_aggregate_uncorrected = -1;
    g->ecc_deferred = g->bad_pages = -1;
    for (int b = 0; b < ACCEL_RAS_BLOCKS; b++) g->ras_uncorrectable[b] = -1;
    g->remapped_correctable = g->remapped_uncorrectable = -1;
    g->remap_pending = g->remap_failure = 0;
    g->retired_pages_pending = -1;
    g->temperature_c = -1;
    g->slowdown_c = 0;
    g->util_gpu = g->util_memory = -1;
    g->memory_used_bytes = -1;
    g->power_mw = -1;
    g->nxids = g->ncritical = 0;
    g->lost = 0;
}

int accel_sysfs_numa(const char *busid) {
    char id[32], path[96];
    size_t len = strlen(busid);
    if (len >= sizeof id || len < 12) return -1;
    const char *s = busid;
    if (len == 16 && strncmp(busid, "0000", 4) == 0) s += 4;
    size_t i = 0;
    for (; s[i] && i < sizeof id - 1; i++)
        id[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] - 'A' + 'a') : s[i];
    id[i] = '\0';
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", id);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int node = -1;
    if (fscanf(f, "%d", &node) != 1) node = -1;
    fclose(f);
    return node < 0 ? -1 : node;
}
