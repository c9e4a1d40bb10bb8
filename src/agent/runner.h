/*
 * runner.h - the agent's workloads: start each assigned job's command as a
 * process bound to exactly its GPUs, stop what is no longer assigned
 * (SIGTERM to its process group, a grace period, then SIGKILL), enforce time
 * limits, capture output, and report exits.  Internal to src/agent/.
 *
 * A workload's process runs in its own session, so it outlives an agent
 * restart; the runner keeps <state>/workloads.json (pid and start time) and
 * re-adopts live processes on start instead of starting them twice.  An
 * adopted process is not our child: its exit status cannot be known, and is
 * reported as 255 with the reason.
 *
 * A plain workload runs as an identity of its own (runner_set_identity):
 * its own uid, its own folder <state>/work/<job> (HOME, mode 0700), an
 * environment of its job's variables only, and, where possible, a mount
 * namespace in which the rest of the state folder does not exist.  Its
 * output goes to <folder>/output.log, a file the runner made and reads back
 * only if it is still that file (no link or substitute the job left there).
 *
 * An assignment with an "image" runs in a container: the runner's process is
 * the container runtime's `run` (podman or docker command line, devices named
 * by CDI), with the same session, output capture, stop and time limit as a
 * plain process; see runner_set_runtime() and runner_container_argv().
 *
 * Devices are named as their vendor's software expects (runner_device_env):
 * an assignment's "vendor" (nvidia, amd or intel; absent: nvidia) says which
 * variables and CDI names, its "indexes" (and "slice_indexes") the numbers
 * AMD's and Intel Gaudi's take.  An assignment whose devices cannot be trusted
 * starts nothing: it is reported at once as exited 126 with the reason.
 */
#ifndef GP_RUNNER_H
#define GP_RUNNER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct runner runner;

/* OUT: a runner keeping its files under state_dir; grace_s before SIGKILL. */
runner *runner_new(const char *state_dir, int grace_s);
void runner_free(runner *r); /* leaves processes running (they are re-adopted) */

/*
 * Run each workload started from now on in its own cgroup v2 folder
 * dir/gpupool-<job>-<placement>, with cpu.max (the class's CPUs times 100 ms
 * per 100 ms) and memory.max (its memory) set, and remove the folder when the
 * workload ends; an OOM kill counted in memory.events becomes the exit reason.
 * dir must be a writable folder delegated to the agent (controllers cpu and
 * memory enabled in its cgroup.subtree_control).  NULL or "": no cgroups.
 * Returns 0; -1 if dir is not a writable folder; -2 if it is a cgroup folder
 * (it has cgroup.controllers) whose cgroup.subtree_control lacks cpu or memory.
 */
int runner_set_cgroup(runner *r, const char *dir);

/* The uids jobs get by default when the agent runs as root (see runner_set_identity). */
#define RUNNER_JOB_UIDS "200000-265535"
#define RUNNER_JOB_UIDS_MAX 1048576 /* most uids in one range */

/*
 * Give every plain job (one without an image) an identity of its own, as a
 * batch system runs jobs as their user.  `spec`: "LO-HI", a range of at
 * most RUNNER_JOB_UIDS_MAX uids, none 0 (each job gets one that no live workload and no process of the host has,
 * starting from a hash of its id; its gid is the same number), "UID", or a
 * user's name (every job runs as that one user and its primary group);
 * NULL or "": RUNNER_JOB_UIDS when the agent runs as root, else none.  The
 * child drops every supplementary group, sets its gid and uid (never 0) and
 * PR_SET_NO_NEW_PRIVS before exec; its folder <state>/work/<job> is chowned
 * to it (mode 0700).  Where the kernel lets the runner (root, Linux mount
 * namespaces; probed now), each such job also gets a private mount
 * namespace in which the state folder is an empty tmpfs but for its own
 * folder, bound back at the same path: no node credential, workloads.json
 * or other job's folder is even visible.  The state folder and its work/
 * are made 0700 (0711 when jobs switch uid without a namespace: they must
 * cross it to reach their folder, never list it).  Without a switch (not
 * root), jobs run as the agent's user: modes are all there is.
 * Returns 0; -1 for a malformed spec or one naming uid/gid 0; -2 for a spec
 * when the agent is not root (it cannot switch); -3 if the modes cannot be set.
 */
int runner_set_identity(runner *r, const char *spec);

/* One folder on the way to the jobs' folders: its owner, group and mode bits. */
typedef struct runner_dir {
    const char *path;
    uid_t uid;
    gid_t gid;
    mode_t mode;
} runner_dir;

/*
 * Can a job of uid `uid` (gid `gid`) cross every folder of `chain` (from "/"
 * down to the state folder's parent)?  -1 when it can; otherwise the index of
 * the first folder it cannot cross (no x bit for it: owner, group or others,
 * whichever applies).  Pure.
 */
int runner_chain_blocks(const runner_dir *chain, int n, uid_t uid, gid_t gid);

/*
 * When jobs get identities of their own (runner_set_identity), check that
 * they can reach their folders: every folder above the state folder must let
 * the job uids cross it.  Returns 0 (or when jobs run as the agent); -1 with
 * a one-line reason in `why` naming the folder and the fix.
 */
int runner_check_reach(runner *r, char *why, size_t len);

/*
 * Stop every live workload (SIGTERM to its process group, the grace period,
 * then SIGKILL; containers through their runtime) and wait until they are
 * gone or `grace_s` + 5 s passed.  For an agent that must not leave its
 * workloads behind (`gpupool agent --stop-workloads-on-exit`).  Returns how
 * many were still running after all that (0: none).
 */
int runner_stop_all(runner *r, const char *why);

/*
 * Describe who jobs run as, into buf: "a uid of 200000-265535 of its own,
 * state folder hidden (private mount namespace)", "uid 0 (the agent's own)"...
 * Returns 1 if jobs get an identity of their own, 0 if they run as the agent.
 */
int runner_identity(runner *r, char *buf, size_t len);

/*
 * Run assignments that name an image with this container runtime: "podman",
 * "docker" or another name looked up on PATH now, or the path of a compatible
 * command.  Without one (NULL or ""), such a job fails at once (exit 126,
 * "this node has no container runtime (gpupool agent --runtime)").  The
 * runtime's own environment is PATH, HOME and the variables that locate its
 * service and configuration (XDG_*, DOCKER_*, CONTAINER*, REGISTRY_AUTH_FILE,
 * ...), never the rest of the agent's; the container gets only the job's.
 * Returns 0, or -1 if `runtime` names no executable file.
 */
int runner_set_runtime(runner *r, const char *runtime);

/* The most devices one assignment may name, and the highest node-local index. */
#define RUNNER_DEVICES_MAX 256
#define RUNNER_INDEX_MAX 1023

/*
 * The device variables of assignment `a`, for a plain process (container 0)
 * or for a container whose devices CDI gives it (container 1), without I/O.
 * The assignment names its devices by "devices" (card or slice UUIDs), its
 * "vendor" ("nvidia", "amd" or "intel"; absent or null: "nvidia"), "indexes"
 * (each device's card's node-local index, parallel to devices; needed for
 * amd and intel; NVIDIA's devices go by UUID, and -1 there means unknown)
 * and "slice_indexes" (parallel; for a slice its index, null for a whole
 * card); and, where the agent knows them better (runner_localize), "numbers"
 * (each device's number as its vendor's software has it) and "modules"
 * (Intel Gaudi module ids), parallel too.  A device's number: its "numbers"
 * entry, else its slice index where it is a slice, else its card's index; a
 * Gaudi card's module id: its "modules" entry, else its card's index.  The
 * variables, in order:
 *   every vendor: GPUPOOL_VENDOR=<vendor>
 *   nvidia: CUDA_VISIBLE_DEVICES=<uuids> NVIDIA_VISIBLE_DEVICES=<uuids>, and for
 *     a shared slice ("shared": {percent, memory_gib}) CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
 *     and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=<uuids>=<N>G (NVIDIA only)
 *   amd: ROCR_VISIBLE_DEVICES=<numbers> (in a container 0..n-1: it sees only its
 *     own devices, numbered from 0), HIP_VISIBLE_DEVICES=0..n-1 and
 *     GPU_DEVICE_ORDINAL=0..n-1 (ROCm applies them to what ROCR_VISIBLE_DEVICES
 *     exposes, renumbered from 0), no CUDA_* or NVIDIA_* variable
 *   intel: HABANA_VISIBLE_MODULES=<module ids> (SynapseAI's selection)
 *     HABANA_VISIBLE_DEVICES=<numbers> (what Habana's container hook mounts:
 *     all devices when it is unset), no CUDA_* or NVIDIA_* variable
 * Numbers are distinct, in the order of the devices (shared slices of one
 * card name it twice).  OUT *env: NULL-terminated "VAR=value" strings on the
 * heap (runner_argv_free).  Returns 0, or -1 with a one-line reason in `why`
 * (at most len bytes) and *env NULL for an assignment that is refused: an
 * unknown vendor, devices that are not a list of UUID-like names (1-128 of
 * [A-Za-z0-9._:/-]) or more than RUNNER_DEVICES_MAX, an amd or intel one
 * without devices or indexes, an index that is not an integer
 * 0..RUNNER_INDEX_MAX, devices and indexes of different lengths, a slice of
 * an Intel Gaudi card (it has none).
 */
int runner_device_env(json_t *a, int container, char ***env, char *why, size_t len);

/*
 * A job that spans nodes (its assignment's "gang": {nodes, rank, hosts, node_names, slots,
 * master_port}; docs/workloads.md, "Distributed jobs"): the variables each node's process
 * gets, for torchrun, MPI and DeepSpeed as they are -
 *   MASTER_ADDR=<rank 0's node address>   MASTER_PORT=<port>
 *   NNODES=<nodes>   NODE_RANK=<rank>   WORLD_SIZE=<devices of all its nodes>
 *   GPUPOOL_NODES=<addresses, rank order, comma-separated>
 *   GPUPOOL_NODE_NAMES=<the gpupool node names, same order>
 *   GPUPOOL_GPUS_PER_NODE=<devices on this node>   GPUPOOL_HOSTFILE=<hostfile>
 * - appended to env[*ne] (list_take's NULL-terminated heap list), and the hostfile's text
 * (*hostfile, heap: one "<address> slots=<devices>" line per node, rank order: MPI's and
 * DeepSpeed's format).  Returns 0, or -1 with a one-line reason in `why` for a "gang" that
 * is not one: nodes 1..64 and as many hosts, names and slots, rank within them, an address
 * that is not 1-253 of [A-Za-z0-9.:-] (a node's agent reports its own: never a line break
 * into another node's hostfile), slots 1..1024, port 1-65535.  Pure.
 */
int runner_gang_env(json_t *a, int port, const char *hostfile_path, char ***env, size_t *ne,
                    char **hostfile, char *why, size_t len);

/*
 * Give each AMD and Intel Gaudi assignment of `assignments` (the server's
 * list, changed in place) the numbers its devices have on this node, from
 * `report` (the node's own report: gpus[] with "uuid", "index", "vendor",
 * "vendor_index", "module_id", slices[] with "uuid" and "device_index"),
 * which the server does not keep: "numbers" (AMD: a partition's
 * "device_index", else the ROCm order of the node's AMD devices: cards by
 * index, one device each or one per partition; Gaudi: the card's
 * "vendor_index", else its index) and, for Gaudi, "modules" (its
 * "module_id", else its index).  An assignment naming a device the report
 * lacks (or of another vendor) is left as it is.  No I/O.
 */
void runner_localize(json_t *assignments, json_t *report);

/*
 * The argument list that runs assignment `a` (its "job", "placement",
 * "devices", "cpus", "memory_gib", "image" and "command") in a container,
 * without I/O:
 *   RUNTIME run --rm --name gpupool-<job>-<placement>
 *     --device <CDI name> (each device once, by its vendor's CDI kind:
 *       nvidia.com/gpu=<uuid> (GPU-... / MIG-...), amd.com/gpu=<number> as
 *       amd-ctk cdi generate names GPUs and partitions, habana.ai/gaudi=<number>;
 *       numbers as runner_device_env says)
 *     -e VAR=value (each of `env`, NULL-terminated, except PATH= and HOME=)
 *     [--cpus N] [--memory Ng] (when a sets them)
 *     --workdir /work -v WORK:/work IMAGE [COMMAND ARGS...]
 * NULL-terminated, each string and the array on the heap (runner_argv_free).
 * NULL if `a` has no image, an image that starts with '-' (the runtime would
 * read it as an option), devices runner_device_env refuses, or memory runs out.
 */
char **runner_container_argv(const char *runtime, json_t *a, const char *work, char *const env[]);
void runner_argv_free(char **argv);

/* Collect exits and enforce deadlines and stop grace periods. */
void runner_tick(runner *r);

/* This node's report: [{job, state, exit_code?, reason?, log}] (new reference). */
json_t *runner_report(runner *r, const char *node);

/* The server received the report: forget the node's exited workloads. */
void runner_ack(runner *r, const char *node);

/* Start what `assignments` lists and is not running; stop what is running and not listed.
 * Returns how many workloads it started (the agent reports their start at once). */
int runner_apply(runner *r, const char *node, json_t *assignments);

/* 1 if a workload of `node` (NULL: of any node) exited and the server has not acknowledged
 * it yet. */
int runner_unreported(runner *r, const char *node);

/*
 * Which job of `node` process `pid` works for: a workload's own process or
 * any process of its session (workloads run in their own session).  OUT:
 * job id.  1 if found, 0 if the process belongs to no live workload.
 */
int runner_job_of_pid(runner *r, const char *node, pid_t pid, char job[40]);

/* The process id of job `job`'s live workload on `node`, or 0. */
pid_t runner_pid_of_job(runner *r, const char *node, const char *job);

#endif
