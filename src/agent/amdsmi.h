/*
 * amdsmi.h - AMD Instinct GPUs seen through the AMD SMI library
 * (libamd_smi.so), loaded at run time (agent side, behind accel.h).
 *
 * The build machines have no amdsmi.h and no amdgpu driver, so amdsmi.c
 * dlopen()s the library and declares AMD SMI's types itself, with the
 * layouts of AMD's public amdsmi.h (library version 26.x, ROCm 7; sizes are
 * checked with static asserts, and every struct but the process list is
 * read through an oversized buffer so a newer library's larger struct
 * cannot overrun it).  Required symbols: amdsmi_init, amdsmi_shut_down,
 * amdsmi_get_socket_handles, amdsmi_get_processor_handles; every other call
 * is optional and leaves its field "unknown" (accel.h) when missing or
 * unsupported.
 *
 * Cards and partitions: AMD SMI lists one processor per compute partition
 * (an MI300X in CPX mode is 8 processors).  Processors whose BDF id is the
 * same once the partition bits (31:28) and the function (2:0) are masked
 * are one card; a card of
 * several processors is reported with mig_enabled = 1 and one slice per
 * partition, profile "<mode>.<GiB>gb" (mode from
 * amdsmi_get_gpu_compute_partition, lower case: "cpx.24gb"), each slice
 * memory_bytes = the card's memory / partitions.  The card's memory is the
 * largest partition total in NPS1 (memory shared by all partitions) or when
 * the memory partition is unknown, else the sum of the partitions' totals.
 * The card's UUID is its first partition's; a slice keeps its partition's
 * UUID unless that is empty or already taken (then "<card uuid>-p<k>").
 *
 * Driver and stack: driver_version = the leading dotted number of
 * amdsmi_get_gpu_driver_info's driver_version; runtime "rocm" at the
 * version recorded in $ROCM_PATH/.info/version (default /opt/rocm), which
 * the ROCm installer writes; unknown ("") without that file.
 *
 * A card is lost when a query answers AMDSMI_STATUS_NOT_FOUND (31).
 */
#ifndef GP_AGENT_AMDSMI_H
#define GP_AGENT_AMDSMI_H

#include "accel.h"

/*
 * The functions below are accel_amdsmi_ops's entry points, with its
 * signatures: `h` is a handle from amd_open().
 */

/*
 * Load AMD SMI and initialise it for AMD GPUs (amdsmi_init(AMDSMI_INIT_AMD_GPUS)).
 * IN path: the library; NULL means $GPUPOOL_AMDSMI_LIBRARY when set and
 *          non-empty, else "libamd_smi.so".
 * OUT *out: the handle (amd_close frees it); NULL on failure.
 * RET: GP_OK; GP_EUNSUPPORTED when the library cannot be loaded, lacks a
 *      required symbol, or amdsmi_init fails (no amdgpu driver); GP_EINVALID,
 *      GP_ENOMEM.
 */
int amd_open(const char *path, void **out, gp_err *err);

/*
 * Enumerate the cards (up to ACCEL_MAX_GPUS, ACCEL_MAX_SLICES partitions
 * each; extra processors are ignored) with identity, driver, stack and
 * partitions; health fields start unknown.
 * OUT *gpus: calloc'd array of *n (caller frees; NULL when 0).  OUT driver
 * (may be NULL): the first card's driver version ("" unknown).
 * RET: GP_OK; GP_EIO when the sockets or processors cannot be listed;
 *      GP_EINVALID, GP_ENOMEM.
 */
int amd_discover(void *h, accel_gpu **gpus, int *n, char driver[80], gp_err *err);

/*
 * Refresh the health fields of gpus[0..n) (from amd_discover on this handle):
 * ECC totals (amdsmi_get_gpu_total_ecc_count: aggregate corrected /
 * uncorrected and deferred), bad pages (amdsmi_get_gpu_bad_page_info
 * count), hotspot temperature and its critical limit (slowdown_c),
 * gfx/umc activity, VRAM in use, socket power.  Read from the card's first
 * partition (they share the silicon), VRAM in use summed over partitions
 * unless memory is shared (see the top).  RET: GP_OK; GP_EINVALID.
 */
int amd_health(void *h, accel_gpu *gpus, int n, gp_err *err);

/*
 * The processes on card g, over all its partitions (amdsmi_get_gpu_process_list,
 * retried with a larger list when the library says there are more, at most
 * ACCEL_MAX_PROCS entries per partition): a pid on several partitions is
 * reported once with its VRAM summed.  memory_mib = VRAM in use
 * (memory_usage.vram_mem, else mem); sm_pct is -1 (AMD SMI has no per-process
 * utilisation).  OUT *procs: calloc'd (NULL when 0).  RET: GP_OK;
 * GP_EINVALID; GP_ENOMEM.
 */
int amd_processes(void *h, accel_gpu *g, accel_proc **procs, int *n, gp_err *err);

/* Re-read card g's compute partition mode and partitions.  RET: GP_OK; GP_EINVALID. */
int amd_partitions(void *h, accel_gpu *g, gp_err *err);

/* amdsmi_shut_down and dlclose.  NULL is a no-op. */
void amd_close(void *h);

#endif
