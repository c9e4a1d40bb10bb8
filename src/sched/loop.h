/*
 * loop.h - the leader's scheduler loop and the per-node event notifier:
 * scheduling rounds off the request path, agents woken when their node's
 * assignments change (docs/scheduling.md, "The event flow").
 *
 * Scheduler loop.  One thread per store (sched_loop_start) runs sched_run().
 * Whatever may let a job move - a submit, a cancel, a priority change, an
 * exit a node reported, a node, GPU, pool, health or quota change, the
 * leader's once-a-second tick - calls sched_wake(), which only sets a flag
 * and signals the thread: no request thread ever runs a round.  Wakes that
 * arrive while a round runs, or during the short gap after it, make ONE more
 * round (a burst of 1,000 submits makes a few rounds, not 1,000).  The gap
 * after a round is SCHED_MIN_GAP_US times the wakes the round took in (up
 * to SCHED_MAX_GAP_US: a burst widens the window, a quiet cluster keeps it
 * short), and never shorter than the round took, so the scheduler holds the
 * store's write lock half the time at most.  A wake after a quiet spell
 * runs a round at once.  Capacity that came free (an exit, a node or card
 * transition: sched_wake_freed) is not made to wait for a burst's window:
 * the next round runs SCHED_MIN_GAP_US (or the round's own length) after
 * the last, however many submits came in meanwhile - new demand may be
 * batched, a free GPU should not sit idle for it.
 * A wake counts only with `leading` set: the caller knows this server holds
 * the store's lead (api_req.leader, or the leader's own tick); a server that
 * does not lead never runs a round.  On PostgreSQL (sched_loop_listen) a
 * non-leader's wake is forwarded with NOTIFY and the leader, listening,
 * wakes its own loop; without that (SQLite has one server; a lost
 * connection) the leader's tick, once a second, takes it.
 *
 * Node notifier.  Each node has a version; sched_node_touch() raises it
 * after a commit changed the node's assignments (a placement on it, a
 * preemption or stop of a job on it; NULL: every node, for changes whose
 * nodes are not known at hand, such as a cancel), and wakes the waiters.
 * sched_node_wait() blocks a request thread (an agent's long poll) until
 * the node's version differs from the one the agent saw, or a timeout.
 * Versions start from the clock at sched_loop_start, so an agent that saw
 * a version from an earlier run of the server is answered at once.  On
 * PostgreSQL, touches go to every server sharing the store (NOTIFY, this one
 * included), so an agent waiting on any server hears of a placement another
 * committed; while the events connection is down they stay local, and every
 * local waiter is woken when it comes back.
 *
 * Thread safety: every function may be called from any thread.  The loop is
 * found by its store (a small registry), so handlers need only r->store.
 */
#ifndef GP_SCHED_LOOP_H
#define GP_SCHED_LOOP_H

#include "../core/err.h"
#include "../store/store.h"

#include <stdint.h>

#define SCHED_MIN_GAP_US 10000 /* at least this between two rounds (100 a second at most) */
#define SCHED_MAX_GAP_US 50000 /* the widest window a burst gets */

typedef struct sched_loop sched_loop;

/* What the loop did so far (for /metrics). */
typedef struct sched_loop_stats {
    uint64_t wakes;       /* sched_wake calls counted (leading) */
    uint64_t wakes_ignored; /* sched_wake calls from a server not leading */
    uint64_t rounds;      /* rounds run */
    uint64_t rounds_failed;
    uint64_t placed;      /* jobs placed by those rounds */
    int64_t last_round_us; /* how long the last round took */
    int waiters;          /* agents waiting in sched_node_wait now */
} sched_loop_stats;

/* Start the loop for `st` and register it (one loop per store).  OUT: *out. */
int sched_loop_start(store_t *st, sched_loop **out, gp_err *err);

/*
 * PostgreSQL: listen on (and send to) the store's other servers with LISTEN /
 * NOTIFY on a connection of its own to `pg_url` (a thread; reconnects on its
 * own, logging once).  Call once after sched_loop_start.
 */
int sched_loop_listen(sched_loop *l, const char *pg_url, gp_err *err);

/* Answer every waiting sched_node_wait now and every later one at once (before the HTTP
 * server drains its requests); wakes are ignored from now on. */
void sched_loop_quiesce(sched_loop *l);

/* Stop the thread (a running round finishes), unregister and free.  NULL: no-op. */
void sched_loop_stop(sched_loop *l);

/*
 * The gap after a round that took `took_us` and took in `burst` wakes, before
 * the next may start: SCHED_MIN_GAP_US x burst, at most SCHED_MAX_GAP_US, never
 * less than took_us; with `freed` (capacity came free since) the burst does
 * not widen it.  Pure.
 */
int64_t sched_gap_us(int64_t took_us, int burst, int freed);

/* Ask for a round on st's loop (see the top).  No loop for st: nothing happens. */
void sched_wake(store_t *st, int leading);

/*
 * sched_wake for capacity that came free or changed (a workload ended, a node
 * or card changed state): the next round does not wait for a burst's wider
 * window, only for the minimal gap (see the top).
 */
void sched_wake_freed(store_t *st, int leading);

/* The loop's figures; 0 if st has no loop (then *out is zeroed). */
int sched_loop_stats_get(store_t *st, sched_loop_stats *out);

/* Raise `node`'s version (NULL: every node's) and wake its waiters. */
void sched_node_touch(store_t *st, const char *node);

/*
 * Wait until `node`'s version differs from `seen`, at most timeout_ms.
 * OUT: *version, the node's version now.  Returns 1 if it differs (at once
 * when it already did), 0 on timeout, -1 if st has no loop or the loop is
 * quiescing (the caller should fall back to its heartbeat interval).
 */
int sched_node_wait(store_t *st, const char *node, int64_t seen, int timeout_ms, int64_t *version);

/*
 * sched_node_wait without a thread waiting.  Returns 1 when `node`'s version
 * already differs from `seen` (*version is it; cb never runs), -1 when st
 * has no loop, it is quiescing or out of memory (cb never runs), or 0: then
 * cb(arg, result, version) runs exactly once, later, on another thread, with
 * no lock of the loop's held - result 1 when the version changed (on the
 * thread that touched the node), 0 after timeout_ms (the loop's timer
 * thread, at the deadline or up to 5 ms before), -1 when the loop quiesces.
 */
typedef void (*sched_node_cb)(void *arg, int result, int64_t version);
int sched_node_watch(store_t *st, const char *node, int64_t seen, int timeout_ms,
                     sched_node_cb cb, void *arg, int64_t *version);

#endif
