/*
 * telemetry.h - the per-GPU samples agents send with their heartbeats, bounded
 * on arrival and exported as Prometheus gauges labelled with who holds each
 * card now (docs/operations.md, "Metrics").
 *
 * A heartbeat's gpus[i].signals carries, besides the health signals
 * (health.h), utilization.{gpu,memory} (%), temperature_c, memory_used_mib,
 * power_mw, ecc.{volatile,aggregate}_{corrected,uncorrected} and xid_total
 * (Xid events the agent counted since it started).  Every figure comes from
 * the agent, so it is hostile until bounded: telemetry_bound() clamps each one
 * into its range and drops what is not an integer, before the heartbeat
 * stores the signals (inv_heartbeat, gpus.signals: the latest sample per GPU,
 * written in the heartbeat's own transaction; no other write per sample).
 * telemetry_prometheus() reads them back at scrape time, so every server
 * sharing the store exports the same figures.
 */
#ifndef GP_INVENTORY_TELEMETRY_H
#define GP_INVENTORY_TELEMETRY_H

#include "../core/err.h"
#include "../core/strbuf.h"
#include "../store/store.h"

#include <jansson.h>

/* Bounds applied by telemetry_bound() (inclusive). */
#define TEL_TEMP_MIN_C (-1)          /* -1: unknown */
#define TEL_TEMP_MAX_C 150
#define TEL_POWER_MAX_MW 5000000     /* 5 kW: above any card's board power */
#define TEL_MEMORY_MAX_MIB (1 << 24) /* 16 TiB */
#define TEL_COUNT_MAX 9007199254740991LL /* 2^53 - 1: exact in a double */

/*
 * Bound the samples of a heartbeat's `gpus` array in place: at most
 * `max_gpus` entries (GP_EINVALID otherwise, nothing changed); in each
 * entry's signals object, utilization.gpu/memory clamped to [0, 100],
 * temperature_c to [-1, 150] (below -1: -1), memory_used_mib to
 * [0, 2^24], power_mw to [0, 5e6], the four ecc counters, xid_total and
 * retired_pages_pending to [0, 2^53-1] (negative: dropped, i.e. unknown);
 * a listed field that is not an integer is dropped.  Entries or signals
 * that are not objects are left for inv_heartbeat to refuse.  NULL gpus: GP_OK.
 * Pure: no I/O.
 */
int telemetry_bound(json_t *gpus, int max_gpus, gp_err *err);

/*
 * telemetry_bound() with the node's GPU count as the bound, read in the
 * heartbeat's transaction.  When `node` does not exist or is not the agent
 * `agent_user_id`'s, nothing is checked (GP_OK): inv_heartbeat refuses it
 * without telling a stranger how many GPUs the node has.
 */
int telemetry_bound_node(store_tx *tx, const char *node, const char *agent_user_id,
                         json_t *gpus, gp_err *err);

/*
 * Append the GPU series in Prometheus text to `out`, one sample per GPU of a
 * node in state 'ready' (an unreachable node's last sample is not repeated):
 * gpupool_gpu_utilization_ratio, _memory_used_bytes, _memory_total_bytes,
 * _temperature_celsius, _power_watts (gauges), _ecc_errors_total{kind},
 * _xid_errors_total (counters), labelled node, gpu (UUID), model, form; with
 * `holders` also tenant, project and job_id of the open binding holding the
 * card ("" when free; of several, the largest share, then the earliest) and
 * gpupool_gpu_bindings (open bindings on the card).  Figures the agent did
 * not report are left out.
 */
int telemetry_prometheus(store_tx *tx, int holders, strbuf *out, gp_err *err);

#endif
