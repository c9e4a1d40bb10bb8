/*
 * server_loop.c - the work of the server's loop thread that goes through the
 * store outside any request (http.c's tick): the nodes' reachability sweep,
 * the card-hour ceilings' policy, the reservations' ends and maintenance windows, and the
 * leader's scheduler wake.  Handlers
 * (h_*.c) hold request work only; their transactions are dispatch's.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../inventory/inventory.h"
#include "../sched/jobs.h"
#include "../sched/loop.h"
#include "../sched/reservations.h"

#include <stdlib.h>
#include <string.h>

/* The leader's tick (and a leader's handler): wake the scheduler thread; never a round here. */
int api__sched_round(store_t *st, gp_err *err) {
    (void)err;
    sched_wake(st, 1);
    return GP_OK;
}

int api__reservations_tick(store_t *st, gp_err *err) {
    store_tx *tx;
    int stopped = 0, changed = 0;
    int rc = store_begin(st, STORE_WRITE, &tx, err);
    if (rc) return rc;
    rc = rsv_tick(tx, gt_now_us(), &stopped, &changed, err);
    if (rc) {
        store_rollback(tx);
        return rc;
    }
    rc = store_commit(tx, err);
    if (!rc && stopped) sched_node_touch(st, NULL); /* their agents stop them now */
    if (!rc && (stopped || changed)) sched_wake_freed(st, 1);
    return rc;
}

int api__card_hours_enforce(store_t *st, gp_err *err) {
    store_tx *tx;
    int stopped = 0;
    int rc = store_begin(st, STORE_WRITE, &tx, err);
    if (rc) return rc;
    rc = jobs_card_hours_enforce(tx, gt_now_us(), &stopped, err);
    if (rc) {
        store_rollback(tx);
        return rc;
    }
    rc = store_commit(tx, err);
    if (!rc && stopped) sched_node_touch(st, NULL); /* their agents stop them now */
    return rc;
}

int api__sweep_nodes(store_t *st, int64_t timeout_us, int64_t observed_since_us, int *held,
                     int *stalled, gp_err *err) {
    store_tx *tx;
    inv_transition *tr;
    int ntr;
    if (stalled) *stalled = 0;
    if (held) *held = 0;
    int64_t t0 = gt_mono_us();
    int rc = store_begin(st, STORE_WRITE, &tx, err);
    if (rc) return rc;
    if (gt_mono_us() - t0 > API_STALL_US(timeout_us)) {
        /* heartbeats waited for the lock as long as we did: their silence proves nothing */
        store_rollback(tx);
        if (stalled) *stalled = 1;
        return GP_OK;
    }
    rc = inv_sweep(tx, timeout_us, observed_since_us, &tr, &ntr, held, err);
    json_t *touch = json_array(); /* nodes of jobs a lost node's containment stopped */
    if (!rc) {
        api_req sys; /* the events are the system's: no actor, source or request */
        memset(&sys, 0, sizeof sys);
        rc = api__node_transitions(&sys, tx, tr, ntr, touch, err);
        free(tr);
    }
    if (rc) {
        json_decref(touch);
        store_rollback(tx);
        return rc;
    }
    rc = store_commit(tx, err);
    size_t i;
    json_t *v;
    if (!rc) json_array_foreach(touch, i, v) sched_node_touch(st, json_string_value(v));
    json_decref(touch);
    return rc;
}
