/*
 * throttle.h - failed-attempt throttling for logins: a sliding window of
 * failures per key (a user name, a source address).
 *
 * Pure: no I/O, no clock (the caller passes now), no lock (the caller holds
 * one around every call on a table).  A key that has had `max_failures`
 * failures within the last `window_us` is refused until the oldest of them
 * leaves the window; the refusal itself is not a failure, so a client that
 * waits out Retry-After gets its next attempt.  A success resets the key.
 *
 * The table is bounded: it tracks at most `capacity` keys; when full, a key
 * whose failures have all expired is reused, else the key whose last failure
 * is oldest is forgotten.  Keys longer than 127 bytes are compared by their
 * first 127 bytes.
 *
 * Ownership: auth_throttle_new() returns a table freed with
 * auth_throttle_free() (NULL-safe).
 */
#ifndef GP_AUTH_THROTTLE_H
#define GP_AUTH_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct auth_throttle auth_throttle;

/*
 * A table allowing `max_failures` (1..64) failures per key per `window_us`
 * (> 0), tracking up to `capacity` (>= 1) keys.  Returns NULL when out of
 * memory or on bad arguments.
 */
auth_throttle *auth_throttle_new(int max_failures, int64_t window_us, size_t capacity);

/* Free the table. NULL is a no-op. */
void auth_throttle_free(auth_throttle *t);

/*
 * May `key` try now?  Returns 1 when allowed; 0 when refused, with
 * *retry_after_s (>= 1, may be NULL) the seconds until the next attempt is
 * allowed.
 */
int auth_throttle_allows(const auth_throttle *t, const char *key, int64_t now_us,
                         int64_t *retry_after_s);

/* Record a failure of `key` at `now_us` (times never go backwards per key). */
void auth_throttle_fail(auth_throttle *t, const char *key, int64_t now_us);

/* Forget `key`'s failures (a success). Unknown keys are a no-op. */
void auth_throttle_reset(auth_throttle *t, const char *key);

/* Failures of `key` still inside the window at `now_us` (for tests and metrics). */
int auth_throttle_count(const auth_throttle *t, const char *key, int64_t now_us);

#endif
