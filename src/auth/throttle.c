/*
 * throttle.c - the failed-login window (see throttle.h): the pure decision
 * over a key's recent failures, and those failures in the store.
 */
#include "throttle.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define KEY_MAX 128

int auth_throttle_judge(const int64_t *at, int n, int max, int64_t window_us, int64_t now_us,
                        int64_t *retry_after_s) {
    assert(max >= 1 && max <= AUTH_THROTTLE_MAX && window_us > 0 && n >= 0);
    assert(n == 0 || at);
    int live = 0;
    for (int i = 0; i < n; i++) {
        assert(i == 0 || at[i] <= at[i - 1]); /* newest first */
        if (at[i] > now_us - window_us) live++;
    }
    if (live < max) return 1;
    /* refused: the oldest of the newest `max` must leave the window */
    int64_t wait_us = at[max - 1] + window_us - now_us;
    int64_t secs = (wait_us + 999999) / 1000000;
    if (retry_after_s) *retry_after_s = secs < 1 ? 1 : secs;
    return 0;
}

int auth_throttle_backoff(const int64_t *at, int n, int max, int64_t window_us, int64_t now_us,
                          int64_t *retry_after_s) {
    assert(max >= 1 && max <= AUTH_THROTTLE_MAX && window_us > 0 && n >= 0);
    assert(n == 0 || at);
    int recent = 0, total = 0;
    for (int i = 0; i < n; i++) {
        assert(i == 0 || at[i] <= at[i - 1]); /* newest first */
        if (at[i] <= now_us - AUTH_BACKOFF_HORIZON_US) continue;
        total++;
        if (at[i] > now_us - window_us) recent++;
    }
    if (total < max) return 1;
    /* the first `max` failures: a sliding window, as for an address */
    int64_t wait_us;
    if (total < 2 * max) {
        if (recent < max) return 1;
        wait_us = at[max - 1] + window_us - now_us;
    } else {
        /* then a wait after the newest failure, doubled for every further `max` */
        int doublings = total / max - 1;
        int64_t backoff = window_us;
        for (int k = 0; k < doublings && backoff < AUTH_BACKOFF_HORIZON_US; k++) backoff *= 2;
        if (backoff > AUTH_BACKOFF_HORIZON_US) backoff = AUTH_BACKOFF_HORIZON_US;
        wait_us = at[0] + backoff - now_us;
        if (wait_us <= 0) return 1;
    }
    int64_t secs = (wait_us + 999999) / 1000000;
    if (retry_after_s) *retry_after_s = secs < 1 ? 1 : secs;
    return 0;
}

void auth_throttle_pair_key(const char *name, const char *addr, char *out, size_t cap) {
    snprintf(out, cap, "%s\x1f%s", name ? name : "", addr ? addr : "");
}

/* `key` cut to KEY_MAX - 1 bytes at a UTF-8 character boundary, into out[KEY_MAX]. */
static void cut_key(const char *key, char *out) {
    size_t len = strnlen(key, KEY_MAX - 1);
    if (key[len])
        while (len > 0 && ((unsigned char)key[len] & 0xC0) == 0x80) len--;
    memcpy(out, key, len);
    out[len] = '\0';
}

int auth_failures_recent(store_tx *tx, char kind, const char *key, int max, int64_t window_us,
                         int64_t now_us, int64_t *at, int *n, gp_err *err) {
    assert(max >= 1 && max <= AUTH_THROTTLE_MAX && at && n);
    *n = 0;
    if (!key || !*key) return GP_OK;
    char k[KEY_MAX], kd[2] = {kind, '\0'};
    cut_key(key, k);
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT at FROM login_failures WHERE kind = ? AND key = ? AND at > ?"
                         " ORDER BY at DESC LIMIT ?",
                         "ssii", kd, k, now_us - window_us, (int64_t)max);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0 && *n < max) at[(*n)++] = store_int(s, 0);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int add_one(store_tx *tx, const char *kind, const char *key, int64_t now_us, gp_err *err) {
    if (!key || !*key) return GP_OK;
    char k[KEY_MAX];
    cut_key(key, k);
    return store_exec(tx, NULL, err, "INSERT INTO login_failures (kind, key, at) VALUES (?,?,?)",
                      "ssi", kind, k, now_us);
}

int auth_failures_add(store_tx *tx, const char *name, const char *addr, int64_t now_us,
                      int64_t window_us, gp_err *err) {
    char pair[2 * KEY_MAX];
    auth_throttle_pair_key(name, addr, pair, sizeof pair);
    int rc = name && *name ? add_one(tx, "n", pair, now_us, err) : GP_OK;
    if (!rc) rc = add_one(tx, "a", addr, now_us, err);
    if (!rc)
        rc = store_exec(tx, NULL, err,
                        "DELETE FROM login_failures WHERE at <= ? OR (kind = 'a' AND at <= ?)",
                        "ii", now_us - AUTH_BACKOFF_HORIZON_US, now_us - window_us);
    return rc;
}

int auth_failures_clear(store_tx *tx, const char *name, const char *addr, gp_err *err) {
    if (!name || !*name) return GP_OK;
    char k[KEY_MAX], pair[2 * KEY_MAX];
    auth_throttle_pair_key(name, addr, pair, sizeof pair);
    cut_key(pair, k);
    return store_exec(tx, NULL, err, "DELETE FROM login_failures WHERE kind = 'n' AND key = ?",
                      "s", k);
}
