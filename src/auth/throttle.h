/*
 * throttle.h - failed-attempt throttling for logins: a sliding window of
 * failures per key (a user name, a source address).
 *
 * The failures live in the store (table login_failures), so every server on
 * one store counts the same attempts: with several servers an attacker gets
 * no more tries than with one.  The decision itself is pure (no I/O, no
 * clock: the caller passes now).  A key that has had `max` failures within
 * the last `window_us` is refused until the oldest of them leaves the
 * window; the refusal itself is not a failure, so a client that waits out
 * Retry-After gets its next attempt.  A success forgets the user name's
 * failures (not the address's).  Keys longer than 127 bytes are kept and
 * compared by their first 127 bytes (cut at a character boundary).
 *
 * What is counted (issue 33 item 6): a user name *from one source* (with a
 * growing backoff), and a source address over every name.  Never a name over
 * every source: that let anyone lock any user out from every address.
 */
#ifndef GP_AUTH_THROTTLE_H
#define GP_AUTH_THROTTLE_H

#include "../core/err.h"
#include "../store/store.h"

#include <stddef.h>
#include <stdint.h>

enum { AUTH_THROTTLE_MAX = 64 }; /* the most failures a window may allow */

/*
 * May a key with these recent failures try at `now_us`?  `at` holds `n`
 * failure times, newest first (auth_failures_recent's order); `max` is
 * 1..AUTH_THROTTLE_MAX.  Returns 1 when allowed; 0 when refused, with
 * *retry_after_s (>= 1; may be NULL) the seconds until the oldest of the
 * newest `max` leaves the window.
 */
int auth_throttle_judge(const int64_t *at, int n, int max, int64_t window_us, int64_t now_us,
                        int64_t *retry_after_s);

/*
 * The backoff of one user name from one source: `at` holds its `n` failures
 * of the last AUTH_BACKOFF_HORIZON_US, newest first.  Fewer than `max`
 * within `window_us` and fewer than `max` in all: allowed.  Otherwise it
 * waits, after its newest failure, window_us doubled for every further
 * `max` failures it made (window_us, 2x, 4x ... at most the horizon): a
 * guesser from one place slows down and stays slow, while the same name
 * from any other source is never held back.  Returns 1 when allowed; 0 when
 * refused, with *retry_after_s (>= 1; may be NULL).  Pure.
 */
#define AUTH_BACKOFF_HORIZON_US (3600LL * 1000000)
int auth_throttle_backoff(const int64_t *at, int n, int max, int64_t window_us, int64_t now_us,
                          int64_t *retry_after_s);

/* The key of one user name from one source (what 'n' rows hold): "name\x1faddr". */
void auth_throttle_pair_key(const char *name, const char *addr, char *out, size_t cap);

/*
 * The store's newest failures of `key` ('n': a user name from a source,
 * auth_throttle_pair_key; 'a': a source address) younger than `window_us`
 * at `now_us`, newest first, at most `max` of them.  OUT: at[0..*n) (room
 * for `max`).
 */
int auth_failures_recent(store_tx *tx, char kind, const char *key, int max, int64_t window_us,
                         int64_t now_us, int64_t *at, int *n, gp_err *err);

/*
 * Record a failed login of `name` from `addr` at `now_us` (in a write
 * transaction), and forget every failure that left its window (an address's
 * after `window_us`, a name-and-source's after AUTH_BACKOFF_HORIZON_US).  An
 * empty or NULL key is not kept.
 */
int auth_failures_add(store_tx *tx, const char *name, const char *addr, int64_t now_us,
                      int64_t window_us, gp_err *err);

/* Forget the failures of user name `name` from `addr` (a successful login from there). */
int auth_failures_clear(store_tx *tx, const char *name, const char *addr, gp_err *err);

#endif
