/*
 * reservations.h - advance reservations and maintenance windows in the store
 * (docs/scheduling.md, "Reservations"; the rules are reserve.h's, pure).
 *
 * A reservation holds, from its start to its end (once, or recurring up to a
 * horizon), either NAMED NODES or a COUNT of a class's cards in a pool, for a
 * tenant (optionally one of its projects) or for nobody: a maintenance
 * window.  Its spec is JSON, the same fields on create and on a patch:
 *
 *   name, tenant, project | maintenance: true,
 *   nodes: [..] | pool, class, count,
 *   start, end (RFC 3339), recurrence: none|daily|weekly|weekdays|every,
 *   weekdays: ["mon", ..] (weekdays), every_seconds (every), until (recurring),
 *   end_policy: stop|run, drain_before_seconds, work_orders: [..] (maintenance),
 *   description
 *
 * Who may do what is the API's (src/api/h_reservation.c); this file checks
 * the spec against the store and keeps the rows.
 */
#ifndef GP_RESERVATIONS_H
#define GP_RESERVATIONS_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"
#include "reserve.h"

#include <jansson.h>
#include <stdint.h>

#define RSV_MAX_NAMED 256 /* named nodes of one reservation */

/* Who holds a stored reservation: maintenance (no tenant), or a tenant and maybe a project
 * (ids; "" none). */
typedef struct rsv_holder {
    char id[RND_ID_LEN];
    int maintenance;
    char tenant_id[RND_ID_LEN], project_id[RND_ID_LEN];
} rsv_holder;

/*
 * What a reservation would clash with (rsv_put's GP_ECONFLICT, docs/scheduling.md "No two on
 * the same cards"): another reservation (its name and holder) holding, at the same time, a
 * node this one names (by_count 0: `node`), or with those in force then, so many of a pool's
 * cards of a class that this one's would be more than the pool has (by_count 1: `pool`,
 * `cls`, `cards` in the pool, `taken` by the others then, `wanted` by this one).  start_us,
 * end_us: the first such time.
 */
typedef struct rsv_clash {
    char name[64];
    rsv_holder holder;
    int64_t start_us, end_us;
    int by_count;
    char node[64], pool[64], cls[64];
    int cards, taken, wanted;
} rsv_clash;

/*
 * Create reservation `spec` (name != NULL: patch the one of that name with `spec`, a JSON
 * merge patch: null lifts an optional field).  Validated whole against the store (the
 * tenant, project, nodes, pool, class and work orders exist; the times make a sound rule
 * that is not over; either nodes or pool + class + count, count within the pool's cards of
 * the class): GP_EINVALID with the reason, GP_ECONFLICT for a name in use, GP_ENOTFOUND for
 * a patch of none.  A patch may not change the holder (delete and create).  OUT: *out the
 * reservation as stored (rsv_get's), *widened (a patch: 1 when it holds more than before -
 * earlier, later, more cards or nodes, a longer horizon or another recurrence), *changes
 * (the fields a patch changed; owned).  A reservation that would hold what another holds at
 * the same time (a node both name; with the others then, more of a pool's cards of a class
 * than it has) is GP_ECONFLICT with *clash filled (optional; its name "" for any other
 * conflict), nothing written.
 */
int rsv_put(store_tx *tx, const char *name, json_t *spec, const char *actor, int64_t now_us,
            json_t **out, int *widened, json_t **changes, rsv_clash *clash, gp_err *err);

/* Reservation `name` (not deleted): GP_ENOTFOUND.  OUT: *out (owned), *who (optional). */
int rsv_get(store_tx *tx, const char *name, int64_t now_us, json_t **out, rsv_holder *who,
            gp_err *err);

/* Every reservation not deleted, in start order; each item's holder in who[] (owned array
 * of json_array_size(*items), free()). */
int rsv_list(store_tx *tx, int64_t now_us, json_t **items, rsv_holder **who, gp_err *err);

/* A tenant's reservations (its overview), in start order. */
int rsv_list_tenant(store_tx *tx, const char *tenant_id, int64_t now_us, json_t **items,
                    gp_err *err);

/* Delete reservation `name` (its row stays, marked, for the report).  GP_ENOTFOUND. */
int rsv_delete(store_tx *tx, const char *name, int64_t now_us, gp_err *err);

/* The rule of a stored row's fields (recurrence text, weekday bits, ...). */
int rsv_rule_from(const char *recurrence, int64_t start_us, int64_t end_us, int64_t weekdays,
                  int64_t every_s, int64_t until_us, rsv_rule *out);

/*
 * A job submit's "reservation": the reservation `name` of tenant `tenant_id` (another
 * tenant's, a maintenance window, a deleted one: not found) that a job of `project_id`, of
 * class `cls` taking `cards` cards with time limit `time_limit_s` (0 none), may run in: held
 * by its project (or the whole tenant), the class the reservation's (a count), within its
 * cards, a limit no longer than its window, an occurrence left.  GP_EINVALID (or
 * GP_ECONFLICT: over) with the reason.  OUT: id.
 */
int rsv_for_job(store_tx *tx, const char *name, const char *tenant_id, const char *project_id,
                const char *cls, int64_t cards, int64_t time_limit_s, int64_t now_us,
                char id[RND_ID_LEN], gp_err *err);

/*
 * The leader's tick, once a second (src/api/server_loop.c), in one write transaction: a job
 * running in a reservation whose end policy is stop is stopped once the occurrence it runs
 * in has ended (its bindings end `reservation_end`, the job `failed` with the reason; its
 * agent stops the workload with its grace period); a job waiting for a reservation deleted or
 * over is cancelled.  Each audited (job.stop, job.cancel by `scheduler`).  OUT: *stopped
 * (jobs stopped: every node should look again), *changed (something the scheduler should
 * see: it is woken).
 */
int rsv_tick(store_tx *tx, int64_t now_us, int *stopped, int *changed, gp_err *err);
/*
 * (rsv_tick, too) Maintenance windows on named nodes: each node drains (no new work) from
 * drain_before_seconds before an occurrence, is cordoned in it, and is given back (admin state
 * none) when no window wants it any more - over, deleted, moved.  A window touches only a node
 * in service or one a window set (nodes.maint_reservation); an operator's own cordon or drain
 * is the operator's.  Each move is in the node's history and audited (node.maintenance).
 */

/* Each node object of `nodes` (a node list's items) gains "maintenance": the maintenance
 * windows naming it, each at its occurrence in force or next ({reservation, start, end, state:
 * upcoming|draining|active, work_orders}), and "next_maintenance": the earliest, or null; and
 * "reservations": the tenants' reservations naming it, likewise ({reservation, tenant,
 * project, start, end, state: upcoming|active}), and "next_reservation".  A tenant's
 * reservation the caller may not see (seen(arg, holder) == 0; seen NULL: every one) is there
 * with reservation, tenant and project null: the node is held then, by someone. */
typedef int (*rsv_seen_fn)(void *arg, const rsv_holder *h);
int rsv_node_windows(store_tx *tx, int64_t now_us, json_t *nodes, rsv_seen_fn seen, void *arg,
                     gp_err *err);

/*
 * A tenant's reservations in force now, as guarantees count them (sched.h, step 7a; the
 * store's side of it, for share_store.c): a reservation counts against its tenant's
 * guarantee, not on top of it.  `held` is what they hold (named nodes: their cards; a count:
 * the count), `idle` what the tenant's work in them leaves unused (milli-GPUs); `ids` the
 * reservations, whose running work is never borrowed.
 */
typedef struct rsv_force {
    char tenant_id[RND_ID_LEN];
    int n;
    char (*ids)[RND_ID_LEN];
    int64_t held, idle;
} rsv_force;

/* Every tenant with a reservation in force at now_us: *out[0..*nout) (rsv_forces_free). */
int rsv_forces_load(store_tx *tx, int64_t now_us, rsv_force **out, int *nout, gp_err *err);
void rsv_forces_free(rsv_force *f, int n);
/* The entry of tenant_id in f[0..n), or NULL. */
const rsv_force *rsv_force_of(const rsv_force *f, int n, const char *tenant_id);
/* Does `reservation_id` ("" none) belong to f (NULL: none in force)? */
int rsv_force_has(const rsv_force *f, const char *reservation_id);

#endif
