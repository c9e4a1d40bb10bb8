/*
 * accel.h - the agent's vendor layer: one interface in front of every
 * accelerator management library (NVIDIA NVML, AMD SMI, Intel Gaudi HLML).
 *
 * Each vendor lives in a file of its own (nvml.c, amdsmi.c, hlml.c) that
 * dlopen()s the vendor's library at run time, declares the vendor's types
 * itself (no vendor header exists on the build machines) and fills the
 * vendor-neutral structs below.  The agent holds one accel_ops table per
 * vendor it found cards for and never calls a vendor file directly.
 *
 * Unknown values: every field has an "unknown" value (-1, 0 or "" as noted);
 * a missing optional symbol or an unsupported query leaves it, never fails.
 *
 * Calling sequence per vendor: open -> discover -> (health | processes |
 * partitions)... -> close.  A handle is used by one thread at a time.
 */
#ifndef GP_AGENT_ACCEL_H
#define GP_AGENT_ACCEL_H

#include "../core/err.h"

#include <stddef.h>

#define ACCEL_MAX_GPUS 16   /* cards per vendor read by discover (extra ones are ignored) */
#define ACCEL_MAX_SLICES 8  /* hardware partitions per card (7 MIG, 8 AMD CPX) */
#define ACCEL_MAX_EVENTS 16 /* events kept per health refresh (Xids, Gaudi critical events) */
#define ACCEL_MAX_PROCS 512 /* process-list entries read per card at most */

/* AMD RAS blocks whose uncorrectable counts are read (AMD SMI's amdsmi_gpu_block_t bits). */
#define ACCEL_RAS_BLOCKS 7
static const struct {
    const char *name;         /* the heartbeat's signals.ras key */
    unsigned long long mask;  /* AMDSMI_GPU_BLOCK_* */
} accel_ras_blocks[ACCEL_RAS_BLOCKS] = {
    {"umc", 1ULL << 0},  {"sdma", 1ULL << 1},     {"gfx", 1ULL << 2},      {"mmhub", 1ULL << 3},
    {"pcie_bif", 1ULL << 5}, {"hdp", 1ULL << 6}, {"xgmi_wafl", 1ULL << 7},
};

/* One hardware partition of a card: a MIG device, or an AMD compute partition. */
typedef struct accel_slice {
    char uuid[96];                   /* "MIG-...", an AMD partition's UUID; "" unknown */
    char profile[24];                /* "3g.40gb", "cpx.24gb"; "" unknown */
    unsigned long long memory_bytes; /* 0 unknown */
    int index;                       /* the vendor's enumeration ordinal of the partition (AMD:
                                        its processor index, what ROCm numbers it); -1 unknown */
} accel_slice;

/* One card, whatever its vendor.  Vendor-only fields say which vendor fills them. */
typedef struct accel_gpu {
    unsigned index;                  /* the vendor library's index of the card */
    char vendor[8];                  /* "nvidia" | "amd" | "intel" */
    char uuid[96];                   /* "" unknown */
    char name[96];                   /* model name ("NVIDIA H100 80GB HBM3", "MI300X"); "" unknown */
    unsigned long long memory_bytes; /* total device memory; 0 unknown */
    char pci_bus[32];                /* "00000000:07:00.0" (NVML), "0000:0c:00.0"; "" unknown */
    int numa;                        /* -1 unknown */
    char compute_cap[16];            /* NVIDIA "9.0", AMD "gfx942"; "" unknown */
    char driver_version[80];         /* the card's driver, a dotted number; "" unknown */
    char runtime[12];                /* stack runtime: "cuda" | "rocm" | "synapse"; "" unknown */
    char runtime_version[32];        /* its version, a dotted number; "" unknown */
    int module_id;                   /* Intel Gaudi module id (HABANA_VISIBLE_MODULES); -1 */
    int mig_capable, mig_enabled;    /* partitioning possible / in use; 0 when unknown */
    int nslices;                     /* partitions found (mig_enabled only) */
    accel_slice slices[ACCEL_MAX_SLICES];
    /* health signals, refreshed by health(); -1 = not supported where noted */
    long long ecc_volatile_corrected, ecc_volatile_uncorrected; /* -1 unsupported */
    long long ecc_aggregate_corrected, ecc_aggregate_uncorrected; /* -1 unsupported */
    long long ecc_deferred;          /* AMD deferred errors; -1 unsupported */
    long long bad_pages;             /* AMD retired/bad pages; -1 unsupported */
    long long ras_uncorrectable[ACCEL_RAS_BLOCKS]; /* AMD per RAS block (accel_ras_blocks); -1 */
    long long remapped_correctable, remapped_uncorrectable; /* NVIDIA; -1 unsupported */
    int remap_pending, remap_failure; /* NVIDIA; 0 when unsupported */
    long long retired_pages_pending; /* NVIDIA 0/1, -1 unsupported */
    int temperature_c;               /* -1 unknown */
    int slowdown_c;                  /* 0 unknown */
    int util_gpu, util_memory;       /* percent; -1 unsupported */
    long long memory_used_bytes;     /* -1 unknown */
    int power_mw;                    /* board power draw, milliwatts; -1 unsupported */
    long long xid_total;             /* NVIDIA: Xid events since discover */
    int xids[ACCEL_MAX_EVENTS];      /* NVIDIA: Xid events of the last health() */
    int nxids;
    long long critical_total;        /* Gaudi: critical events since discover */
    int critical[ACCEL_MAX_EVENTS];  /* Gaudi: event types of the last health()'s critical events */
    int ncritical;
    int lost;                        /* the library says the card is gone */
    int topology[ACCEL_MAX_GPUS];    /* NVIDIA common-ancestor level to card i, -1 unknown/self */
} accel_gpu;

/* One process using a card. */
typedef struct accel_proc {
    unsigned pid;
    long long memory_mib; /* device memory it uses; -1 unknown */
    int sm_pct;           /* compute utilisation since the previous call; -1 unknown */
} accel_proc;

/*
 * A vendor: its names, where its library is found, and its six entry points
 * (see nvml.h, amdsmi.h, hlml.h for each one's details; the vendor files
 * export them with these very signatures).  `h` is the vendor's own handle.
 *   open(path, &h): load and initialise the library (path NULL: $<env> when
 *       set and non-empty, else <soname>; see accel_dlopen).
 *       GP_EUNSUPPORTED when the library or its driver is absent.
 *   discover(h, &gpus, &n, driver): calloc'd cards (caller frees), the
 *       node's driver version ("" unknown).
 *   health(h, gpus, n): refresh the health fields and drain events.
 *   processes(h, g, &procs, &n): calloc'd processes on card g.
 *   partitions(h, g): re-read card g's partition layout (mig_* and slices).
 *   close(h): shut the library down and unload it; NULL is a no-op.
 */
typedef struct accel_ops {
    const char *vendor; /* "nvidia" */
    const char *source; /* the node report's "source": "nvml" | "amdsmi" | "hlml" */
    const char *label;  /* for messages: "NVML", "AMD SMI", "HLML" */
    const char *env;    /* the variable naming the library: "GPUPOOL_NVML_LIBRARY" */
    const char *soname; /* the library loaded otherwise: "libnvidia-ml.so.1" */
    const char *absent; /* what a library that cannot be loaded means: "no NVIDIA driver" */
    const char *hint;   /* appended to a missing required symbol's message; "" for none */
    int (*open)(const char *path, void **h, gp_err *err);
    int (*discover)(void *h, accel_gpu **gpus, int *n, char driver[80], gp_err *err);
    int (*health)(void *h, accel_gpu *gpus, int n, gp_err *err);
    int (*processes)(void *h, accel_gpu *g, accel_proc **procs, int *n, gp_err *err);
    int (*partitions)(void *h, accel_gpu *g, gp_err *err);
    void (*close)(void *h);
} accel_ops;

extern const accel_ops accel_nvml_ops;   /* nvml.c */
extern const accel_ops accel_amdsmi_ops; /* amdsmi.c */
extern const accel_ops accel_hlml_ops;   /* hlml.c */

/* ---- shared by the vendor files (accel.c) ---- */

/* One entry point a vendor file resolves: its name, whether open() fails without it, and
 * where its function pointer lives in the vendor's handle (offsetof). */
typedef struct accel_sym {
    const char *name;
    int required;
    size_t offset;
} accel_sym;

/*
 * Load vendor v's library for its open(): `path`, else $<v->env> when set and
 * non-empty, else <v->soname>; then resolve syms[0..nsyms) into the function
 * pointers at fns + offset (a missing optional symbol stores NULL).
 * OUT *lib: the name loaded (path, the variable's value or the soname), for
 *      the caller's later messages.
 * RET: the dlopen() handle (the caller dlclose()s it); NULL with err set to
 *      GP_EUNSUPPORTED, "<label> not available: <absent> on this machine
 *      (<lib>: <dlerror>)" when it cannot be loaded, or "<label> not
 *      available: <lib> lacks <symbol><hint>" when a required symbol is
 *      missing (the library is unloaded again).
 */
void *accel_dlopen(const accel_ops *v, const char *path, const accel_sym *syms, size_t nsyms,
                   void *fns, const char **lib, gp_err *err);

/* Copy a possibly unterminated fixed-size string of a vendor library (srcsz bytes) into dst. */
void accel_copy(char *dst, size_t dstsz, const char *src, size_t srcsz);
/* Set every health field of g to its "unknown" value; events and lost are cleared. */
void accel_health_unknown(accel_gpu *g);
/*
 * A PCI device's NUMA node from /sys/bus/pci/devices/<bus>/numa_node, for
 * libraries that cannot tell; -1 unknown.  Accepts NVML's 8-hex-digit domain
 * and upper case ("00000000:07:00.0") as sysfs's "0000:07:00.0".
 */
int accel_sysfs_numa(const char *busid);

/*
 * The leading dotted number of a vendor's version text, into out:
 * "6.8.0-45-generic" -> "6.8.0", "1.18.0-ee698fb" -> "1.18.0", "550.54.15" stays.
 * "" when the text does not start with a digit.  Pure.
 */
static inline void accel_dotted(const char *in, char *out, unsigned outsz) {
    unsigned j = 0;
    int dot_ok = 0;
    if (!outsz) return;
    for (unsigned i = 0; in && in[i] && j + 1 < outsz; i++) {
        char c = in[i];
        if (c >= '0' && c <= '9') {
            out[j++] = c;
            dot_ok = 1;
        } else if (c == '.' && dot_ok && in[i + 1] >= '0' && in[i + 1] <= '9') {
            out[j++] = c;
            dot_ok = 0;
        } else {
            break;
        }
    }
    out[j] = '\0';
}

#endif
