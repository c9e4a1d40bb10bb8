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

/* Collect exits and enforce deadlines and stop grace periods. */
void runner_tick(runner *r);

/* This node's report: [{job, state, exit_code?, reason?, log}] (new reference). */
json_t *runner_report(runner *r, const char *node);

/* The server received the report: forget the node's exited workloads. */
void runner_ack(runner *r, const char *node);

/* Start what `assignments` lists and is not running; stop what is running and not listed. */
void runner_apply(runner *r, const char *node, json_t *assignments);

#endif
