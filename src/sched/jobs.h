/*
 * jobs.h - jobs, priority classes, bindings and the scheduler's round
 * against the store (the I/O side of src/sched; the decisions are sched.c's).
 *
 * A round: load a snapshot (nodes, GPUs and slices with their allocatable
 * state, classes, tenants and projects with ceilings and this month's
 * card-hours, queued/admitted/running jobs with their open bindings), run
 * sch_round(), and commit every decision - state, reason, bindings, job
 * events and audit events - in one write transaction.
 *
 * Bindings are the timeline of who held which GPU: created when a job is
 * placed, ended once with a reason (cancelled, preempted, completed, failed,
 * node_lost, released), never edited otherwise.
 */
#ifndef GP_JOBS_H
#define GP_JOBS_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"
#include "sched.h"
#include "../inventory/health.h"

#include <jansson.h>
#include <stdint.h>

/* ---- priority classes ---- */

typedef struct prio_class {
    char name[64];
    int value, preemptible, may_preempt;
    json_t *project_classes; /* [] = any (owned) */
    json_t *roles;           /* [] = any (owned) */
    json_t *opt_out_roles;   /* roles that may opt a job out of preemption ([] nobody; owned) */
} prio_class;

int prio_get(store_tx *tx, const char *name, prio_class *out, gp_err *err);
void prio_release(prio_class *p);
/* {"name","value","preemptible","may_preempt","allowed_project_classes","allowed_roles","description"} */
int prio_put(store_tx *tx, json_t *spec, int create, const char *name, gp_err *err);
int prio_delete(store_tx *tx, const char *name, gp_err *err);
int prio_list(store_tx *tx, json_t **items, gp_err *err);

/*
 * May a submitter holding `roles` (JSON array of role names it holds in the
 * project's scope) use priority class `p` for a project of class `pclass`?
 * 0, or GP_EFORBIDDEN with the reason.
 */
int prio_allowed(const prio_class *p, const char *pclass, json_t *roles, gp_err *err);

/*
 * May a submitter holding `roles` (as above) run a job of class `p` that
 * preemption may not stop ("preemptible": false)?  Always when the class
 * itself is not preemptible; otherwise only with one of the class's
 * non_preemptible_roles.  0, or GP_EFORBIDDEN with the reason.  Pure.
 */
int prio_may_opt_out(const prio_class *p, json_t *roles, gp_err *err);

/* ---- jobs ---- */

typedef struct job_submit {
    const char *tenant_id, *tenant, *project_id, *project;
    const char *submitter;
    json_t *spec; /* the request body */
    json_t *submitter_roles; /* role names the submitter holds over the project */
    const char *project_class;
} job_submit;

/* Validate and queue a job, or with "array" an array of them (OUT: id, the array's). */
int jobs_submit(store_tx *tx, const job_submit *js, char id[RND_ID_LEN], gp_err *err);

/* One job with its bindings and events; GP_ENOTFOUND. OUT: project_id, submitter (optional). */
int jobs_get(store_tx *tx, const char *id, json_t **out, char project_id[RND_ID_LEN],
             char submitter[64], gp_err *err);

/* Jobs of a project (or a whole tenant when project_id is NULL); `state`, `array` (an
 * array's id: its tasks) and `match` (a job's name, or the first 4 or more characters of its
 * id) filter when not NULL. */
int jobs_list(store_tx *tx, const char *tenant_id, const char *project_id, const char *state,
              const char *array, const char *match, json_t **items, gp_err *err);

/* Cancel: end its bindings (cancelled) and mark it cancelled. GP_ECONFLICT when already ended. */
int jobs_cancel(store_tx *tx, const char *id, const char *actor, gp_err *err);

/*
 * Change a queued/admitted/running job's priority class (checked by the
 * caller, prio_allowed and, for opt_out 1, prio_may_opt_out): it is
 * preemptible when the class is and it does not opt out.  OUT (optional):
 * *preemptible as set.  GP_ECONFLICT when the job has ended.
 */
int jobs_set_priority(store_tx *tx, const char *id, const prio_class *p, int opt_out,
                      const char *actor, int *preemptible, gp_err *err);

/* Did job `id` opt out of preemption?  GP_ENOTFOUND when there is no such job. */
int jobs_opted_out(store_tx *tx, const char *id, int *opted_out, gp_err *err);

/* ---- dependencies (deps.c) ---- */

/* `job submit --after JOB[:ok|:any|:notok]`: the kinds, and what a dependency is now. */
enum { JOBS_DEP_OK, JOBS_DEP_ANY, JOBS_DEP_NOTOK, JOBS_DEP__KINDS };
enum { JOBS_DEP_WAITS, JOBS_DEP_MET, JOBS_DEP_NEVER };
#define JOBS_MAX_DEPS 64

typedef struct jobs_dep {
    char job[RND_ID_LEN];
    int kind; /* JOBS_DEP_* */
} jobs_dep;

/* Is a dependency of `kind` on a job in `state` met, still waiting, or never to be met?
 * Pure. */
int jobs_dep_judge(int kind, const char *state);
const char *jobs_dep_kind_name(int kind);

/* Parse a submit's "after": NULL/null none, else an array of "JOB[:ok|:any|:notok]" (ok when
 * no kind), each job once, at most JOBS_MAX_DEPS.  OUT: out[*n].  Pure. */
int jobs_dep_parse(json_t *after, jobs_dep *out, int *n, gp_err *err);

/* Record job `job`'s dependencies: each a job of project `project_id` (else GP_ENOTFOUND)
 * that has not already ended in a way that can never meet it (else GP_ECONFLICT). */
int jobs_deps_add(store_tx *tx, const char *job, const char *project_id, const jobs_dep *d, int n,
                  gp_err *err);

/* Job `job`'s dependencies, [{job,name,kind,state,status: met|waiting|never}]; OUT
 * (optional) *waiting, how many still wait. */
int jobs_deps_json(store_tx *tx, const char *job, json_t **out, int *waiting, gp_err *err);

/* Is any queued job's dependency never to be met?  (A read: the round settles them.) */
int jobs_deps_doomed(store_tx *tx, int *any, gp_err *err);

/* Cancel every queued job with a dependency never to be met (the reason says which), then
 * those waiting on them, and so on.  Appends {job, reason} to `cancelled` (may be NULL). */
int jobs_deps_settle(store_tx *tx, json_t *cancelled, gp_err *err);

/* SQL over job_deps d joined to the job it names, dj: the dependency is met / never met. */
#define JOBS_DEPS_MET_SQL                                                                        \
    "((d.kind = 'ok' AND dj.state = 'succeeded')"                                                \
    " OR (d.kind = 'any' AND dj.state IN ('succeeded','failed','cancelled','preempted'))"       \
    " OR (d.kind = 'notok' AND dj.state IN ('failed','cancelled','preempted')))"
#define JOBS_DEPS_NEVER_SQL                                                                      \
    "((d.kind = 'ok' AND dj.state IN ('failed','cancelled','preempted'))"                        \
    " OR (d.kind = 'notok' AND dj.state = 'succeeded'))"

/* ---- job arrays (arrays.c) ---- */

#define JOBS_MAX_ARRAY 10000

/* Indexes first..last, at most max_running of its tasks admitted or running at once (0: no
 * cap). */
typedef struct jobs_array_spec {
    int64_t first, last, max_running;
} jobs_array_spec;

/* Parse a submit's "array": "FIRST-LAST" or a count "N" (0..N-1), either with "%MAX_RUNNING";
 * at most JOBS_MAX_ARRAY tasks.  Pure. */
int jobs_array_parse(const char *s, jobs_array_spec *out, gp_err *err);

/* Record array `id` of the submit (its tasks are jobs_submit's). */
int jobs_array_add(store_tx *tx, const char *id, const job_submit *js, const char *name,
                   const jobs_array_spec *a, gp_err *err);

/* Array `id` of project `project_id` (else GP_ENOTFOUND): its range, cap, tasks by state and
 * the card-seconds they held. */
int jobs_array_get(store_tx *tx, const char *id, const char *project_id, json_t **out,
                   gp_err *err);

/* Cancel every task of array `id` that has not ended.  OUT: *cancelled, how many. */
int jobs_array_cancel(store_tx *tx, const char *id, const char *project_id, const char *actor,
                      int *cancelled, gp_err *err);

/* The round's cap: which queued tasks of capped arrays it may read now (the lowest-indexed,
 * as many as each array has room for).  jobs_array_allowed: may it read queued task `job`
 * whose array is capped (`capped` 0: not an array task, or no cap)? */
typedef struct jobs_array_allow jobs_array_allow;
int jobs_array_allow_load(store_tx *tx, jobs_array_allow **out, gp_err *err);
int jobs_array_allowed(const jobs_array_allow *al, int capped, const char *job);
void jobs_array_allow_free(jobs_array_allow *al);
/* A queued task its array's cap holds back: its explanation (*answered 1), else nothing. */
int jobs_array_explain(store_tx *tx, const char *job, json_t **out, int *answered, gp_err *err);

/* ---- jobs that span nodes (gang.c; sched.h step 4a) ---- */

#define JOBS_MAX_UNITS 64 /* units of one job, at most (over all its nodes) */
#define JOBS_MAX_NODES 64 /* nodes one job spans, at most */

/*
 * A submit's "units", "nodes" and "units_per_node" (has_*: the field was given) as the job's
 * units and nodes (*nodes 0: no `nodes`, its units go wherever each fits, as before).
 * nodes 1..JOBS_MAX_NODES; units_per_node 1..64, only with nodes (else units / nodes, which
 * must divide, else 1); units, when given with both, nodes x units_per_node; at most
 * JOBS_MAX_UNITS units in all.  GP_EINVALID with the reason.  Pure.
 */
int jobs_gang_shape(int64_t units, int has_units, int64_t nodes, int has_nodes, int64_t per,
                    int has_per, int64_t *out_units, int64_t *out_nodes, gp_err *err);

/* Job `job`'s rank on node `node`, the node of its open bindings there (rank r holds units
 * r*K .. r*K+K-1, K = units / nodes).  OUT: *nodes, 0 when it does not span nodes; *rank, -1
 * when it holds no open binding there. */
int jobs_gang_rank(store_tx *tx, const char *job, const char *node, int *nodes, int *rank,
                   gp_err *err);

/*
 * Node `node`'s assignment `a` of a job that spans nodes gains "gang": {nodes, rank, hosts:
 * [address of each rank's node], node_names, slots: [devices of each rank's node],
 * master_port (once rank 0's node reported it)}: what its process's MASTER_ADDR, NODE_RANK,
 * WORLD_SIZE, hostfile... are made of (runner.c).  Nothing for another job.
 */
int jobs_gang_assign(store_tx *tx, const char *node, json_t *a, gp_err *err);

/*
 * Node `node` reports that job `job`'s rank 0 listens on `port` for its ranks (MASTER_PORT):
 * kept (*outcome 1) when the node holds the job's rank 0 and no port was kept yet since it
 * was placed; the same port again is nothing (0).  *outcome -1 (refused: the caller audits
 * it) when the node is not the job's rank 0, the job does not span nodes, the port is not
 * 1-65535 or another is already kept.
 */
int jobs_gang_rendezvous(store_tx *tx, const char *node, const char *job, json_t *port,
                         int *outcome, gp_err *err);

/* ---- containment ---- */

/*
 * A node was lost (gpu NULL) or a GPU failed: every job holding a binding
 * there loses all its bindings (ended with `reason`: "node_lost" or
 * "gpu_failed") and is requeued or failed per its recovery policy.
 * OUT (optional): *affected, a JSON array of {job, tenant, project, outcome, nodes (the nodes
 * it held there, before)}.
 */
int jobs_contain(store_tx *tx, const char *node, const char *gpu, const char *reason,
                 json_t **affected, gp_err *err);

/*
 * Ops release a binding by hand: that job's bindings end ("released") and it
 * is requeued or failed per its policy.  GP_ENOTFOUND / GP_ECONFLICT (already ended).
 */
int jobs_release_binding(store_tx *tx, const char *binding_id, const char *why, gp_err *err);

/* ---- interference on shared GPUs (interfere_store.c; the pure judge is inventory/interfere.c) ---- */

/*
 * Judge the per-process figures a heartbeat of node `node` carried,
 * {"gpus":[{"uuid","processes":[{"pid","job","memory_mib","sm_pct"}]}]},
 * against the shared slices its running jobs hold there (health.h's
 * intf_eval under `pol`).  Keeps the strikes; raises one `interference`
 * alarm per offender and kind while the breach lasts (tenants of the
 * offender and of the affected jobs see their own part); with the stop
 * policy the offender's bindings end ("interference") and it fails.
 * Processes of no job on the card count as load only.  GP_EINVALID for
 * malformed figures.  OUT: *events, a JSON array of the alarms' details
 * {kind, gpu, node, offender:{job,tenant,project,bindings,detail},
 *  affected:[…], action} for the audit.
 */
int jobs_interference(store_tx *tx, const char *node, json_t *hb, const health_policy *pol,
                      json_t **events, gp_err *err);

/* ---- workloads on the nodes ---- */

#define JOBS_LOG_MAX (64 * 1024) /* bytes of output kept per job (the tail) */

/*
 * What node `node` must run now: its running jobs with their units there,
 * [{job, tenant, project, command:[…], time_limit_s, started_at, cpus,
 *   memory_gib, devices:[uuid…], shared:{memory_gib, percent}?}].
 */
int jobs_node_assignments(store_tx *tx, const char *node, json_t **out, gp_err *err);

#define JOBS_PORTS_MAX 16 /* listening ports kept per running job */

/*
 * The canonical text of a job's listening ports ("p1,p2,...": ascending,
 * distinct) from the JSON array an agent reports, into out[len].  Returns how
 * many ports, or -1 (nothing written) when `ports` is not an array of at most
 * JOBS_PORTS_MAX integers 1-65535: every number from a node is bounded.
 * Pure.
 */
int jobs_ports_text(json_t *ports, char *out, size_t len);

/*
 * Apply the agent's workload report [{job, placement, state:"running"|"exited",
 * exit_code, reason, log, ports}] for node `node`.  A running job's `ports`
 * (the TCP ports its own processes listen on) are kept for the gateway, which
 * routes a job endpoint only to one of them.  Only the node holding a job's
 * current placement speaks for it: an exit counts when `placement` is an open
 * binding of the job on that node (its bindings end completed / failed /
 * time_limit, the job becomes succeeded (exit 0) or failed); output counts
 * from that run, or from the job's latest run there once it ended (a
 * cancel's last words).  A run the job has left (moved, placed anew) is
 * ignored; a report about a job never placed on that node under that
 * placement (or no job at all) changes nothing and is returned for the
 * audit.  A job that spans nodes (gang.c): its rank 0's node reports the
 * rendezvous port (`master_port`, kept once per placement; from any other
 * node refused and audited); only rank 0's exit ends the job with its
 * status, another rank's exit 0 leaves the job running (that rank is done
 * and not started again), any other end of a rank fails the job.  OUT
 * (optional): *ended, how many jobs ended; `touch` (a JSON array, may be
 * NULL) gains the nodes whose assignments that changed (a rendezvous known,
 * a job that spans nodes ended: its nodes);
 * *events, a JSON array (new reference) of {action:"job.end", result:"ok",
 * job, node, placement, tenant, project, exit_code, state, reason} for each
 * job ended, {action:"job.rendezvous", result:"ok"|"denied", job, node,
 * placement, tenant, project, master_port} and {action:"job.report",
 * result:"denied", job, node, placement, tenant, project} for each refused
 * report (at most 16, then one {more_refused: N}).
 */
int jobs_node_report(store_tx *tx, const char *node, json_t *workloads, int *ended,
                     json_t *touch, json_t **events, gp_err *err);

/* The captured output and exit status of a job: {log, exit_code}. */
int jobs_logs(store_tx *tx, const char *id, json_t **out, gp_err *err);

/* ---- the monthly card-hour ceiling and running jobs (chquota.c) ---- */

/*
 * For every tenant or project quota with card_hours_policy "stop" whose
 * month's card-hours are used: the first call raises a warning alarm (the
 * tenant sees it) and audits it; a call after card_hours_grace_seconds stops
 * the scope's running jobs (bindings end card_hours_exhausted; jobs
 * requeued, where admission holds them) and audits that.  OUT: *stopped,
 * how many jobs were stopped.
 */
int jobs_card_hours_enforce(store_tx *tx, int64_t now_us, int *stopped, gp_err *err);

/* ---- the round ---- */

#define ROUND_MAX_NODES 64

typedef struct round_stats {
    int placed, preempted, queued;
    /* the nodes whose assignments the round changed (placed on, or preempted from), for
     * waking their agents (sched/loop.h); nodes_overflow: more than ROUND_MAX_NODES */
    int nnodes, nodes_overflow;
    char nodes[ROUND_MAX_NODES][64];
    /* decisions skipped because what they were decided on changed between the read and the
     * write (a job cancelled, a card bound or unhealthy, a node cordoned, a victim gone):
     * the round has already woken the scheduler for another (sched_wake_freed) */
    int stale;
    /* how long each phase took (microseconds): the read transaction that built the
     * snapshot, the pure round, the waits for the writer, and the write transactions (the
     * only time the round holds the store's writer) */
    int64_t read_us, decide_us, wait_us, write_us;
} round_stats;

/*
 * Run one scheduling round and commit it, in three phases (docs/scheduling.md, "The round's
 * transactions"): the snapshot is read in a read transaction, the round is decided with no
 * transaction held, and its decisions are committed in write transactions of at most 64
 * decisions each (the writer released in between), in which each
 * is written only if what it was decided on still holds (a placement: the job still waiting,
 * its cards the same, allocatable and bound to nothing new, its node ready, uncordoned and
 * in its pool; a preemption: the victim still running where it was, its preemptor still
 * waiting with a higher priority); a decision whose guard fails is skipped whole and counted
 * in stats->stale.  OUT: *stats (what it did, which nodes, how long each phase took).
 */
int sched_run(store_t *st, round_stats *stats, gp_err *err);

/*
 * The cluster in the leader's memory (round_mem.c; docs/scheduling.md "The cluster in memory"):
 * rounds reuse the nodes, cards, classes, tenants and projects they read while the store's
 * cluster_version stays the same, and keep the live jobs, reading only those whose job_chg
 * stamp is newer.  sched_cluster_forget: drop both copies (the next round reads it all; a
 * new leader, benches).  sched_cluster_verify: read the cluster and the live jobs now and
 * compare them with the copies of the same versions, as the once-a-minute check does
 * (counted in /metrics); *same 0 when one differs (the fresh read is kept), 1 when equal or
 * there is no copy of that version.
 */
void sched_cluster_forget(store_t *st);
/* How often a round checks the copy against the store (seconds, >= 1; default 60: `gpupool
 * server --cluster-check S`).  Process-wide. */
void sched_cluster_check_every(int seconds);
int sched_cluster_verify(store_t *st, int *same, gp_err *err);

/* sched_run, calling between(arg) after the round is decided and before its write
 * transaction begins, with no transaction of the round's held (tests change the store
 * there).  between NULL: sched_run. */
int sched_run_between(store_t *st, void (*between)(void *arg), void *arg, round_stats *stats,
                      gp_err *err);

/*
 * Explain job `id`: its place in the queue, what blocks it and by how much,
 * and the smallest change that would start it - each answer from running the
 * same scheduler on a modified snapshot.  `allowed` is the list of priority
 * class names the submitter may use.  OUT: *out (new reference).
 */
int sched_explain(store_t *st, const char *id, json_t *allowed, json_t **out, gp_err *err);

/* ---- bindings ---- */

/*
 * Bindings filtered by GPU uuid, job id and/or tenant id, optionally only
 * those open at time `at_us` (0: all, newest first). `tenant_id` NULL = all.
 */
int bind_list(store_tx *tx, const char *gpu, const char *job, const char *tenant_id,
              int64_t at_us, json_t **items, gp_err *err);

/* Bindings on node `node`, optionally only those open at `at_us` (the incident view). */
int bind_list_node(store_tx *tx, const char *node, int64_t at_us, json_t **items, gp_err *err);

/* Card-hours (milli) used this calendar month by a tenant (project_id NULL) or project. */
int bind_card_hours(store_tx *tx, const char *tenant_id, const char *project_id, int64_t now_us,
                    int64_t *out, gp_err *err);

#endif
