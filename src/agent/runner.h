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

/*
 * The argument list that runs assignment `a` (its "job", "placement",
 * "devices", "cpus", "memory_gib", "image" and "command") in a container,
 * without I/O:
 *   RUNTIME run --rm --name gpupool-<job>-<placement>
 *     --device nvidia.com/gpu=<device> (each device once: GPU-... / MIG-... UUIDs)
 *     -e VAR=value (each of `env`, NULL-terminated, except PATH= and HOME=)
 *     [--cpus N] [--memory Ng] (when a sets them)
 *     --workdir /work -v WORK:/work IMAGE [COMMAND ARGS...]
 * NULL-terminated, each string and the array on the heap (runner_argv_free).
 * NULL if `a` has no image, an image that starts with '-' (the runtime would
 * read it as an option), or memory runs out.
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
