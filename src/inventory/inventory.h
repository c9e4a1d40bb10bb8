/*
 * inventory.h - nodes, GPUs and MIG slices, join tokens, health transitions
 * and alarms: the store side of the GPU inventory.
 *
 * An agent joins with a join token (made by an ops-engineer, expiring,
 * revocable) and receives its own credential: a service account
 * "agent-<node>" that may act only for that node.  Every heartbeat carries
 * the node's GPUs with their health signals; inv_heartbeat() updates them and
 * evaluates the health policy (health.h), returning the transitions so the
 * caller can audit them.  Transitions are also kept in health_events (the
 * history) and raise alarms.  Nothing here authorises: handlers do.
 *
 * Allocatable = node ready and not cordoned/draining, GPU not cordoned/
 * draining, GPU health allowed by the policy (default: healthy only).
 */
#ifndef GP_INVENTORY_H
#define GP_INVENTORY_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"
#include "health.h"

#include <jansson.h>
#include <stdint.h>

#define INV_JOIN_PREFIX "gpj_"

/* ---- join tokens ---- */

#define INV_JOIN_MAX_USES 10000 /* most registrations one token may allow */

/*
 * Make a join token: valid ttl_s seconds, for `max_uses` registrations
 * (1..INV_JOIN_MAX_USES; 1 = single-use, the default callers should give),
 * and, when `node_name` is not "" (nor NULL), only for a node of that name
 * (then max_uses must be 1).  OUT: the secret (shown once) and the id.
 * GP_EINVALID for a bad name or count.
 */
int inv_join_create(store_tx *tx, const char *created_by_id, int64_t ttl_s, const char *node_name,
                    int64_t max_uses, char token[RND_SECRET_LEN], char id[RND_ID_LEN],
                    gp_err *err);

/*
 * Why a join token may not register node `node` now, or NULL when it may
 * (pure): revoked, expired (expires_at <= now), bound to another name
 * (`bound_to` not ""), or all `max_uses` uses spent.
 */
const char *inv_join_refusal(int64_t now, int64_t expires_at, int revoked, int64_t uses,
                             int64_t max_uses, const char *bound_to, const char *node);

/*
 * Spend one use of a join token for the registration of node `node`: the
 * token must exist and inv_join_refusal() find nothing, and a node already
 * registered under that name is joined again only with a token bound to it;
 * its use count goes up and the node's name is appended to its used_by list.  OUT: id, the
 * token's id ("" when no token has that secret), for the audit.
 * GP_EUNAUTH (message: why) otherwise.
 */
int inv_join_use(store_tx *tx, const char *token, const char *node, char id[RND_ID_LEN],
                 gp_err *err);

/* Every join token: [{id, created_by, created_at, expires_at, state
 * (active|used|expired|revoked), uses, max_uses, node, used_by:[names]}]. */
int inv_join_list(store_tx *tx, json_t **items, gp_err *err);
int inv_join_revoke(store_tx *tx, const char *id, gp_err *err);

/* ---- nodes and GPUs ---- */

/*
 * Register (or re-register) a node from the agent's report
 * {"name","hostname","cpus","memory_gib","labels":{},"driver_version","source",
 *  "gpus":[{"uuid","index","model","memory_mib","pci_bus","numa","compute_cap",
 *           "mig_capable","mig_mode","slices":[{"uuid","profile","memory_mib"}],
 *           "topology":{…}}]}.
 * Creates the node's agent account when new. OUT: node id, agent user id,
 * *reregistered.
 *
 * A GPU belongs to the node that registered it: a reported card whose UUID
 * (or one of whose slice UUIDs) another node holds is refused - skipped, not
 * moved; the rest of the report applies - with a critical "identity" alarm,
 * and {"gpu", "held_by"} appended to `refused` (an array the caller owns, may
 * be NULL) for the caller to audit as a denied node.report.  A card changes
 * node only by inv_gpu_move().
 */
int inv_node_register(store_tx *tx, json_t *report, char node_id[RND_ID_LEN],
                      char agent_user_id[RND_ID_LEN], int *reregistered, json_t *refused,
                      gp_err *err);

/*
 * An agent (already joined) re-reports its node's hardware, e.g. after a
 * restart: GPUs and slices are updated, cards no longer reported become
 * failed; another node's cards are refused as inv_node_register() says.
 * GP_EFORBIDDEN unless `agent_user_id` is that node's agent.
 */
int inv_node_report(store_tx *tx, const char *node, const char *agent_user_id, json_t *report,
                    json_t *refused, gp_err *err);

/* Is a card held by node `holder_node_id` ("" or NULL: nobody) refused to a report of
 * node `reporting_node_id`?  1 when another node holds it (pure). */
int inv_claim_refused(const char *holder_node_id, const char *reporting_node_id);

/* What a GPU move is decided on (inv_gpu_move_refusal). */
typedef struct inv_move_facts {
    int same_node;         /* the card is on the target node already */
    int from_lost;         /* its node is unreachable */
    int from_draining;     /* its node's admin state is draining */
    int64_t open_bindings; /* bindings still open on the card */
} inv_move_facts;

/*
 * Why a card may not move to another node now, or NULL when it may (pure):
 * its node must be draining (or lost) and no job may hold the card any more.
 */
const char *inv_gpu_move_refusal(const inv_move_facts *f);

/*
 * Move GPU `uuid` to node `to_node` (an ops action: the handler authorises
 * and audits).  OUT: from_node, the node that held it.  GP_ENOTFOUND for no
 * such card, GP_EINVALID for no such node, GP_ECONFLICT (message: why) when
 * inv_gpu_move_refusal() refuses.  The card keeps its record and history.
 */
int inv_gpu_move(store_tx *tx, const char *uuid, const char *to_node, char from_node[64],
                 gp_err *err);

/*
 * Drop from a heartbeat's `gpus` array (modified in place) the entries of
 * cards another node holds: a node reports only its own cards' signals (a
 * card refused to its report would otherwise fail each heartbeat).
 */
int inv_drop_foreign(store_tx *tx, const char *node, json_t *gpus, gp_err *err);

/* A health (or reachability, or admin) transition, for audit. */
typedef struct inv_transition {
    char node[64];
    char gpu_uuid[96];
    char kind[8]; /* "health" | "node" | "admin" */
    char from[16], to[16];
    char cause[200];
} inv_transition;

/*
 * Apply a heartbeat of node `node_id` (whose agent is `agent_user_id`):
 * {"gpus":[{"uuid", "signals":{…}}]}.  GP_EFORBIDDEN if the caller is not
 * that node's agent.  OUT: transitions (heap array, free()), *ntr.
 * The node's liveness is written on every heartbeat; a card's stored signals
 * only when its verdict or a counted figure changed (health_signals_same), or
 * when they are INV_SIGNALS_REFRESH_US old: a fleet of healthy cards costs one
 * row write per heartbeat, not one per card.
 */
#define INV_SIGNALS_REFRESH_US 15000000LL /* stored signals refreshed at least this often */
int inv_heartbeat(store_tx *tx, const char *node_name, const char *agent_user_id, json_t *hb,
                  const health_policy *pol, inv_transition **tr, int *ntr, gp_err *err);

#define INV_MASS_MIN 10 /* nodes falling silent at once, at least, for a mass silence */
#define INV_MASS_HOLD 5 /* a node in a mass silence is held this many timeouts at most */

/*
 * Is it a mass silence when `due` of the `ready` nodes fell silent at once?
 * At least INV_MASS_MIN of them and more than half: the control plane, its
 * store or its network is then the likelier cause than that many machines
 * failing together (Kubernetes stops evicting in a "full disruption" for the
 * same reason).  Pure.
 */
int inv_mass_silence(int ready, int due);

/*
 * Mark nodes unreachable whose heartbeats stopped (docs/inventory.md,
 * "Liveness"): a ready node silent for `timeout_us`, counted from its last
 * heartbeat or from `observed_since_us` (wall clock: since when this server
 * has been able to watch heartbeats - it leads, it is not stalled),
 * whichever is later; so a server that starts, takes the lead or comes out
 * of a stall gives every node a whole timeout before judging it.  In a mass
 * silence (inv_mass_silence, counting the ready nodes silent for half a
 * timeout or more as fallen silent at once) only nodes silent for INV_MASS_HOLD timeouts
 * (since their last heartbeat) are marked; *held (optional) says how many
 * were spared.  OUT: transitions.
 */
int inv_sweep(store_tx *tx, int64_t timeout_us, int64_t observed_since_us, inv_transition **tr,
              int *ntr, int *held, gp_err *err);

/* Set a node's or GPU's admin state ("none"|"cordoned"|"draining"). OUT: the transition. */
int inv_node_admin(store_tx *tx, const char *node, const char *state, const char *actor,
                   inv_transition *tr, gp_err *err);

/*
 * A maintenance window (src/sched/reservations.c) moves node `node` to admin state `state`
 * ("draining", "cordoned", or "none" to give it back) and marks it with `mark` (the window's
 * reservation id; "" when given back), only when the node is in service (admin state none) or
 * a window set it: an operator's own cordon or drain is never touched.  The transition is
 * recorded in the node's history with `cause`.  OUT: *changed.  (An operator's cordon, drain or
 * uncordon, inv_node_admin, clears the mark: the node is the operator's from then on.)
 */
int inv_node_maintenance(store_tx *tx, const char *node, const char *state, const char *mark,
                         const char *cause, const char *actor, int *changed, gp_err *err);
int inv_gpu_admin(store_tx *tx, const char *uuid, const char *state, const char *actor,
                  inv_transition *tr, gp_err *err);

/* Operator reset of a failed/degraded GPU's health to healthy. */
int inv_gpu_reset(store_tx *tx, const char *uuid, const char *actor, inv_transition *tr,
                  gp_err *err);

/* Set a GPU's mode ("whole"|"mig"|"shared"); mig needs reported slices. */
int inv_gpu_mode(store_tx *tx, const char *uuid, const char *mode, gp_err *err);

/* Set a node's pool. */
int inv_node_pool(store_tx *tx, const char *node, const char *pool, gp_err *err);

/*
 * Labels ops set on node `node` (`node label`): `changes` {key: value, key: null (removes
 * it)}, keys 1-63 of [a-z0-9._/-], values 1-63 of [A-Za-z0-9._-].  They show over the
 * agent's own labels; `rack` and `switch` are the topology a job that spans nodes is placed
 * by (sched.h, step 4a).  At most INV_MAX_LABELS set by ops.  GP_ENOTFOUND, GP_EINVALID.
 */
#define INV_MAX_LABELS 32
int inv_node_label(store_tx *tx, const char *node, json_t *changes, gp_err *err);

/* Lists and views. `nodes` (JSON array of names) limits to those nodes when non-NULL. */
int inv_node_list(store_tx *tx, const health_policy *pol, json_t *nodes, json_t **items,
                  gp_err *err);
int inv_node_get(store_tx *tx, const health_policy *pol, const char *name, json_t **out,
                 gp_err *err);
/* Filters: node name, health (NULL: any). */
int inv_gpu_list(store_tx *tx, const health_policy *pol, json_t *nodes, const char *node,
                 const char *health, json_t **items, gp_err *err);
int inv_gpu_get(store_tx *tx, const health_policy *pol, const char *uuid, json_t **out,
                gp_err *err);
/* 1 if node `name` exists, 0 if not, < 0 on a store error. */
int inv_node_exists(store_tx *tx, const char *name);

/* Name of the node holding GPU `uuid`. */
int inv_gpu_node(store_tx *tx, const char *uuid, char node[64], gp_err *err);
/* Transition history of a GPU or a node, newest first. */
int inv_history(store_tx *tx, const char *node, const char *uuid, json_t **items, gp_err *err);

/* ---- alarms ---- */

/*
 * Raise an alarm.  `tenants` (JSON array of tenant names, may be NULL) see
 * it too; `detail` (object or NULL) carries bindings as {"offender":{…,
 * "tenant"}, "affected":[{…, "tenant"}]}, of which a tenant is shown only
 * its own.  `subject` says what, beyond its kind, node and GPU, the alarm is
 * about, so that inv_alarm_resolve() closes this one and not another ("" none).
 */
int inv_alarm_raise(store_tx *tx, const char *severity, const char *kind, const char *node,
                    const char *gpu, const char *subject, const char *message, json_t *tenants,
                    json_t *detail, gp_err *err);

/*
 * Its condition cleared: resolve the open alarms of `kind` on `node` and
 * `gpu` ("" for a node's own) about `subject` (NULL: whatever their subject),
 * saying `why`.  Each is kept, with resolved_at and its resolution, and the
 * system's `alarm.resolve` audit event is appended in the same transaction.
 */
int inv_alarm_resolve(store_tx *tx, const char *kind, const char *node, const char *gpu,
                      const char *subject, const char *why, gp_err *err);

/*
 * Alarms, newest first; `tenant` non-NULL: only those naming that tenant,
 * without the list of tenants and with only that tenant's part of the detail.
 */
int inv_alarm_list(store_tx *tx, const char *tenant, json_t **items, gp_err *err);
int inv_alarm_ack(store_tx *tx, const char *id, const char *actor, gp_err *err);

/* ---- resource classes and pools (catalog.c) ---- */

/* A class's GPU form: whole cards, a MIG profile, or a shared slice. */
typedef struct inv_form {
    enum { FORM_WHOLE, FORM_MIG, FORM_SHARED } kind;
    char profile[24];  /* FORM_MIG: "3g.40gb" */
    int memory_gib;    /* FORM_SHARED: memory per slice */
    int percent;       /* FORM_SHARED: compute share per slice */
} inv_form;

/* Parse "whole" | "mig:3g.40gb" | "shared:12/25" (pure). */
int inv_form_parse(const char *s, inv_form *out, gp_err *err);

/*
 * Does a GPU model name (as reported: "NVIDIA A100-SXM4-80GB") satisfy a
 * class's model ("A100-80GB")?  Case-insensitive; every '-' separated token
 * of the class model must appear, in order, in the reported name (pure).
 */
int inv_model_matches(const char *class_model, const char *gpu_model);

/* 1 if dotted version `have` ("550.54.15", "9.0") is at least `min` (empty min: always). */
int inv_version_at_least(const char *have, const char *min);

/* MIG profiles a known model offers (NULL-terminated), or NULL if the model is unknown (pure). */
const char *const *inv_model_mig_profiles(const char *model, int *memory_gib);

/*
 * Create a class from {"name","form","gpus","cpus","memory_gib","gpu_models",
 * "min_driver","min_compute_cap","topology","pool"}.  Rejects, with the
 * reason, a class that no GPU could ever satisfy (per the known model table
 * and the GPUs registered so far).
 */
int inv_class_create(store_tx *tx, json_t *spec, gp_err *err);
int inv_class_delete(store_tx *tx, const char *name, gp_err *err);
/* Classes with capacity: total units on allocatable GPUs, and those no open binding holds. */
int inv_class_list(store_tx *tx, const health_policy *pol, const char *only, json_t **items,
                   gp_err *err);

/* Pools: {"name","description","tenants":[names],"project_classes":[…]} ([] = everyone). */
int inv_pool_put(store_tx *tx, const char *name, json_t *spec, int create, gp_err *err);
int inv_pool_delete(store_tx *tx, const char *name, gp_err *err);
int inv_pool_list(store_tx *tx, const char *only, json_t **items, gp_err *err);

/* ---- work orders (workorder.c) ---- */

/* Open a work order {"node","gpu","title","description","assignee"}. OUT: id ("wo-N"). */
int inv_wo_create(store_tx *tx, json_t *spec, const char *created_by, char id[32], gp_err *err);
/* Change {"state","assignee","title","description"}; `state_only` refuses other fields. */
int inv_wo_update(store_tx *tx, const char *id, json_t *changes, int state_only, gp_err *err);
int inv_wo_comment(store_tx *tx, const char *id, const char *author, const char *body,
                   gp_err *err);
/* Work orders, newest first; when `ids`/`assignee` given, only those listed or assigned. */
int inv_wo_list(store_tx *tx, json_t *ids, const char *assignee, json_t **items, gp_err *err);
int inv_wo_get(store_tx *tx, const char *id, json_t **out, gp_err *err);

/* ---- the health policy (kept in security_policy under "health_policy") ---- */
int inv_health_policy_load(store_tx *tx, health_policy *out, gp_err *err);
int inv_health_policy_save(store_tx *tx, const health_policy *p, gp_err *err);

#endif
