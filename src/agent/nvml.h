/*
 * nvml.h - NVIDIA GPUs seen through NVML, loaded at run time (agent side).
 *
 * The build machines have no nvml.h and no driver, so nvml.c dlopen()s
 * libnvidia-ml.so.1, resolves the versioned symbols it needs with dlsym()
 * and declares every NVML type itself.  Only four symbols are required
 * (nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2); every other call is optional: when the
 * symbol is missing or the card answers "not supported", the matching field
 * keeps its "unknown" value (-1, 0 or "" as documented below) and the call
 * as a whole still succeeds.
 *
 * What it does: discovery (identity, MIG layout, NUMA, pairwise topology),
 * health signals (ECC, row remapping, retired pages, temperature,
 * utilisation, memory in use, power draw), draining of NVML events (Xid, double-bit ECC, GPU
 * unavailable) and per-process sampling (GPU memory, SM utilisation).
 * What it does not do: judge health (inventory/health.c does), change MIG
 * mode, or launch anything.
 *
 * Calling sequence: nvml_open -> nvml_discover -> nvml_health /
 * nvml_processes ... -> nvml_close.  A handle is used by one thread at a time
 * (discover replaces the handle's event set; nvml_processes keeps a sampling
 * timestamp per GPU); NVML itself is thread-safe.
 */
#ifndef GP_AGENT_NVML_H
#define GP_AGENT_NVML_H

#include "../core/err.h"
#include "accel.h"

#define NVML_MAX_SLICES 7              /* MIG devices per card */
#define NVML_MAX_GPUS ACCEL_MAX_GPUS
#define NVML_MAX_XIDS ACCEL_MAX_EVENTS
#define NVML_MAX_PROCS ACCEL_MAX_PROCS /* compute-list entries read per GPU by nvml_processes() */

/*
 * NVML's cards are the vendor layer's generic ones (accel.h): vendor "nvidia",
 * runtime "cuda" (from nvmlSystemGetCudaDriverVersion_v2 where present), the
 * NVIDIA-only fields (remapped rows, retired pages, Xids, topology) filled,
 * the other vendors' (ecc_deferred, bad_pages, critical) left unknown.
 */
typedef accel_slice nvml_slice;
typedef accel_gpu nvml_gpu;
typedef accel_proc nvml_proc;

/*
 * The functions below are accel_nvml_ops's entry points, with its signatures:
 * `h` is a handle from nvml_open().
 */

/*
 * Load the NVML library and initialise it (nvmlInit_v2).
 * IN path: library to load; NULL means $GPUPOOL_NVML_LIBRARY when set and
 *          non-empty, else "libnvidia-ml.so.1".
 * OUT *out: the handle, freed by nvml_close(); NULL on failure.
 * RET: GP_OK; GP_EUNSUPPORTED when the library cannot be loaded ("NVML not
 *      available: no NVIDIA driver on this machine (<lib>: <dlerror>)"), lacks a
 *      required symbol, or nvmlInit_v2 reports no driver; GP_EIO for other
 *      nvmlInit_v2 failures; GP_EINVALID, GP_ENOMEM.
 */
int nvml_open(const char *path, void **out, gp_err *err);

/*
 * Enumerate up to NVML_MAX_GPUS GPUs (extra ones are ignored) with identity,
 * MIG layout and pairwise topology; health fields start "unknown" (call
 * nvml_health() to fill them), except `lost`, set when a card answered
 * GPU_IS_LOST (such a card is still listed, with what could be read).
 * (Re)creates the handle's event set and registers, where the card supports
 * them, Xid (critical), double-bit ECC and GPU-unavailable events.
 * OUT *gpus: calloc'd array of *n entries, caller free()s (NULL when *n is 0).
 * OUT driver: may be NULL; the driver version ("" unknown).
 * RET: GP_OK; GP_EIO when the GPUs cannot be counted; GP_EINVALID, GP_ENOMEM.
 */
int nvml_discover(void *h, nvml_gpu **gpus, int *n, char driver[80], gp_err *err);

/*
 * Refresh the health fields of gpus[0..n) (as returned by nvml_discover() on
 * this handle) and drain pending events (nvmlEventSetWait_v2, timeout 0) into
 * xids/lost; xids, nxids and lost describe this refresh only.  Unsupported
 * calls leave the documented "unknown" value and never fail the call; a
 * GPU_IS_LOST answer sets lost=1 and skips that card's remaining queries.
 * Double-bit ECC events only wake the drain: the ECC counters carry the count.
 * RET: GP_OK; GP_EINVALID for bad arguments.
 */
int nvml_health(void *h, nvml_gpu *gpus, int n, gp_err *err);


/*
 * The compute processes on GPU `g` (as returned by nvml_discover on this handle) with their
 * memory (nvmlDeviceGetComputeRunningProcesses_v3, falling back to _v2 then the unversioned
 * symbol) and SM utilisation (nvmlDeviceGetProcessUtilization, samples newer than the previous
 * call's last timestamp for that GPU; a process with no sample gets -1, and a process that has a
 * sample but is not in the compute list is added with memory -1).  A missing symbol or "not
 * supported" gives what could be read, never an error.
 * Several samples for one pid: sm_pct is the newest one's smUtil (capped at 100).  A pid
 * listed more than once (one entry per MIG compute instance) is reported once, with its
 * memory summed (-1 when any entry is unknown).  Order: the compute list's, then sample-only
 * pids in sample order.  Memory is floor(bytes / MiB).  At most NVML_MAX_PROCS compute
 * entries are read: beyond that the compute list counts as unreadable.  A version answering
 * FUNCTION_NOT_FOUND is treated like a missing symbol (the next one is tried).  The first
 * call for a GPU reads every sample the driver still holds (timestamp 0); the timestamp
 * moves only when samples were read.  A GPU_IS_LOST answer sets g->lost and gives what was
 * read so far (GP_OK); no other field of g is touched.
 * OUT *procs: calloc'd array of *n entries (NULL when 0), caller free()s.
 * RET: GP_OK; GP_EINVALID for bad arguments; GP_ENOMEM.
 */
int nvml_processes(void *h, nvml_gpu *g, nvml_proc **procs, int *n, gp_err *err);

/*
 * Re-read card g's MIG layout (mig_capable, mig_enabled, slices); the MIG
 * handles found by nvml_discover stay known for events.  A card whose handle
 * cannot be had is left alone (GP_OK; lost set on GPU_IS_LOST).
 * RET: GP_OK; GP_EINVALID for bad arguments.
 */
int nvml_partitions(void *h, nvml_gpu *g, gp_err *err);

/* Free the event set, nvmlShutdown and dlclose.  NULL is a no-op. */
void nvml_close(void *h);

#endif
