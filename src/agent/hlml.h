/*
 * hlml.h - Intel Gaudi accelerators seen through Habana's management library
 * (libhlml.so), loaded at run time (agent side, behind accel.h).
 *
 * The build machines have no hlml.h and no habanalabs driver, so hlml.c
 * dlopen()s the library and declares HLML's types itself with the layouts
 * of Habana's public hlml.h.  Required symbols: hlml_init, hlml_shutdown,
 * hlml_device_get_count, hlml_device_get_handle_by_index; every other call
 * is optional and leaves its field "unknown" (accel.h).
 *
 * What is read: name, UUID, memory (hlml_device_get_memory_info), PCI bus
 * id, module id, minor number; the driver version (hlml_get_driver_version,
 * leading dotted number) is both the card's driver and its SynapseAI stack
 * (runtime "synapse": the driver and SynapseAI ship as one release).
 * Health: uncorrected ECC (volatile and aggregate; corrected where the
 * library supports it), AIP temperature and its slowdown threshold, AIP
 * utilisation, memory in use, power (mW), and events drained from an event
 * set (critical errors: their event types go to `critical`, counted in
 * critical_total).  Gaudi has no partitions.  HLML_ERROR_AIP_IS_LOST (15)
 * marks a card lost.
 * Processes: HLML has no process list; hl_processes() finds the processes
 * holding the card's device node (/dev/accel/accel<minor>) open, from
 * /proc/<pid>/fd, with memory and utilisation unknown (-1).
 */
#ifndef GP_AGENT_HLML_H
#define GP_AGENT_HLML_H

#include "accel.h"

/*
 * The functions below are accel_hlml_ops's entry points, with its signatures:
 * `h` is a handle from hl_open().
 */

/*
 * Load HLML and initialise it (hlml_init).  path NULL: $GPUPOOL_HLML_LIBRARY
 * when set and non-empty, else "libhlml.so".
 * OUT *out: the handle (hl_close frees it); NULL on failure.
 * RET: GP_OK; GP_EUNSUPPORTED when the library cannot be loaded, lacks a
 *      required symbol or hlml_init fails; GP_EINVALID, GP_ENOMEM.
 */
int hl_open(const char *path, void **out, gp_err *err);

/*
 * Enumerate up to ACCEL_MAX_GPUS cards (identity, driver, stack) and
 * (re)create the event set with critical and ECC events registered.
 * OUT *gpus calloc'd (caller frees); driver may be NULL.
 * RET: GP_OK; GP_EIO when the cards cannot be counted; GP_EINVALID, GP_ENOMEM.
 */
int hl_discover(void *h, accel_gpu **gpus, int *n, char driver[80], gp_err *err);

/* Refresh health fields and drain events (at most 256 per call).  RET: GP_OK; GP_EINVALID. */
int hl_health(void *h, accel_gpu *gpus, int n, gp_err *err);

/*
 * The processes holding card g's device node open (see the top); at most
 * ACCEL_MAX_PROCS.  `proc_root` is read from $GPUPOOL_HLML_PROC (default
 * "/proc") only so tests can point it at a fabricated tree.
 * RET: GP_OK; GP_EINVALID; GP_ENOMEM.
 */
int hl_processes(void *h, accel_gpu *g, accel_proc **procs, int *n, gp_err *err);

/* Gaudi cards have no partitions: clears g's mig_* and slices.  RET: GP_OK; GP_EINVALID. */
int hl_partitions(void *h, accel_gpu *g, gp_err *err);

/* hlml_shutdown and dlclose.  NULL is a no-op. */
void hl_close(void *h);

#endif
