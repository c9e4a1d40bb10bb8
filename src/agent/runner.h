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
 * An assignment with an "image" runs in a container: the runner's process is
 * the container runtime's `run` (podman or docker command line, devices named
 * by CDI), with the same session, output capture, stop and time limit as a
 * plain process; see runner_set_runtime() and runner_container_argv().
 */
#ifndef GP_RUNNER_H
#define GP_RUNNER_H

#include <jansson.h>
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

/* Start what `assignments` lists and is not running; stop what is running and not listed. */
void runner_apply(runner *r, const char *node, json_t *assignments);

/*
 * Which job of `node` process `pid` works for: a workload's own process or
 * any process of its session (workloads run in their own session).  OUT:
 * job id.  1 if found, 0 if the process belongs to no live workload.
 */
int runner_job_of_pid(runner *r, const char *node, pid_t pid, char job[40]);

/* The process id of job `job`'s live workload on `node`, or 0. */
pid_t runner_pid_of_job(runner *r, const char *node, const char *job);

#endif
