/*
 * agent.h - the node agent: discovers accelerators (NVIDIA through NVML, AMD
 * through AMD SMI, Intel Gaudi through HLML: the vendor layer of accel.h;
 * or a declared inventory file, or simulated nodes), joins the server with
 * a join token, and heartbeats each node's health signals.
 *
 * One process may run many nodes (--simulate N), each with its own identity
 * and credential, kept in the state folder as <node>.token (mode 0600) so a
 * restarted agent does not need the join token again.  Faults for simulated
 * nodes are injected by dropping files into <state>/inject/<node>/ (see
 * agent_inject()); the agent consumes them at its next heartbeat.  A simulating
 * agent also records each node's cards (index, UUID, vendor) in
 * <state>/cards/<node>.json, so agent_inject() can refuse a fault that does
 * not fit a card's vendor.
 *
 * The state folder is the agent's alone (mode 0700): plain jobs run as
 * identities of their own and, where the kernel allows, do not even see it
 * (runner_set_identity); the agent makes itself non-dumpable, so no process
 * of its user reads its memory or /proc/<pid>/environ.  The join token never
 * goes on the command line by default (cmd_agent: --join-token-file or
 * GPUPOOL_JOIN_TOKEN).
 */
#ifndef GP_AGENT_H
#define GP_AGENT_H

#include "../core/err.h"

#include <jansson.h>

typedef struct agent_config {
    const char *server;     /* base URL, or several ("URL1,URL2") sharing one store */
    const char *join_token; /* may be NULL once every node has a stored credential */
    const char *inventory;  /* declared inventory file, or NULL */
    int simulate;           /* > 0: that many copies of each declared node (or of a default) */
    const char *state_dir;  /* credentials and injected faults */
    int interval_s;         /* seconds between heartbeats */
    int once;               /* register, send one heartbeat, exit */
    int print_report;       /* print the node reports (JSON) on stdout and exit: no server,
                               no state folder written */
    const char *node_name;  /* NVML mode: the node's name (default: host name) */
    const char *nvml_path;  /* NVML mode: library path (default libnvidia-ml.so.1) */
    const char *vendor;     /* discovery: "auto" (NULL: the same; every library that finds
                               cards), "nvidia", "amd" or "intel" (that library only) */
    const char *amdsmi_path;/* AMD SMI library (NULL: $GPUPOOL_AMDSMI_LIBRARY, libamd_smi.so) */
    const char *hlml_path;  /* HLML library (NULL: $GPUPOOL_HLML_LIBRARY, libhlml.so) */
    int grace_s;            /* seconds between SIGTERM and SIGKILL when stopping a workload */
    const char *cgroup_root;/* delegated cgroup v2 folder for workloads' limits, or NULL */
    const char *runtime;    /* container runtime for jobs with an image (podman, docker, a
                               path), or NULL: such jobs fail on this node */
    int token_in_argv;      /* the join token came on the command line: warn (ps shows it) */
    const char *job_uids;   /* who plain jobs run as (runner_set_identity: "LO-HI", "UID",
                               a user name), or NULL: 200000-265535 when root */
    int stop_workloads;     /* at the stop, end the workloads (runner_stop_all) instead of
                               leaving them to be re-adopted */
} agent_config;

/*
 * The inject option of `fault` that does not fit a card of `vendor`
 * ("--xid" on a non-NVIDIA card, "--bad-pages" off AMD, "--critical" off
 * Intel Gaudi, "--retired-pending", "--remap-pending/--remap-failure" off
 * NVIDIA), or NULL when it fits.  Pure.
 */
const char *agent_fault_misfit(const char *vendor, json_t *fault);

/* Run until SIGTERM/SIGINT (the caller blocks them in every thread first), or once. */
int agent_run(const agent_config *cfg, gp_err *err);

/*
 * Queue a fault for simulated GPU `gpu` (UUID or index) of `node`:
 * `fault` = {"xids":[…], "set":{signal overrides}, "critical":N, "clear":bool}.
 * Where a simulating agent recorded the node's cards (<state>/cards/<node>.json),
 * a fault that does not fit the card's vendor (agent_fault_misfit) is refused
 * with GP_EINVALID and nothing is queued; otherwise the agent drops it when
 * it consumes it (logged).
 */
int agent_inject(const char *state_dir, const char *node, const char *gpu, json_t *fault,
                 gp_err *err);

/*
 * Build node reports from a declared inventory (DESIGN.md's format), each
 * node copied `simulate` times (names suffixed -0, -1, …) when simulate > 1.
 * With path NULL, a default simulated node.  OUT: JSON array of reports.
 */
int agent_inventory_reports(const char *path, int simulate, json_t **reports, gp_err *err);

/*
 * As agent_inventory_reports, from the `len` bytes of a declaration held in
 * memory (no file is read; a fuzzing entry point).  OUT: JSON array of reports.
 */
int agent_inventory_reports_text(const char *text, size_t len, int simulate, json_t **reports,
                                 gp_err *err);

#endif
