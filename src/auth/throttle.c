/*
 * throttle.c - the failed-attempt window (see throttle.h).
 *
 * Each tracked key keeps the times of its last `max` failures, oldest
 * first; the window is exact (no minute buckets): a key is refused while
 * `max` of them are younger than `window_us`.  Lookup is a linear scan: the
 * table is small and a login costs a password hash anyway.
 */
#include "throttle.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 128

typedef struct slot {
    char key[KEY_MAX]; /* "" = free */
    int n;             /* failures stored, oldest first in at[0..n) */
    int64_t last_us;   /* time of the newest failure */
    int64_t *at;       /* max entries, part of the table's one allocation */
} slot;

struct auth_throttle {
    int max;
    int64_t window_us;
    size_t cap;
    slot *slots;
    int64_t *times;
};

auth_throttle *auth_throttle_new(int max_failures, int64_t window_us, size_t capacity) {
    if (max_failures < 1 || max_failures > 64 || window_us <= 0 || capacity < 1) return NULL;
    auth_throttle *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->max = max_failures;
    t->window_us = window_us;
    t->cap = capacity;
    t->slots = calloc(capacity, sizeof *t->slots);
    t->times = calloc(capacity * (size_t)max_failures, sizeof *t->times);
    if (!t->slots || !t->times) {
        auth_throttle_free(t);
        return NULL;
    }
    for (size_t i = 0; i < capacity; i++) t->slots[i].at = t->times + i * (size_t)max_failures;
    return t;
}

void auth_throttle_free(auth_throttle *t) {
    if (!t) return;
    free(t->slots);
    free(t->times);
    free(t);
}

static int same_key(const slot *s, const char *key) {
    return s->key[0] && strncmp(s->key, key, KEY_MAX - 1) == 0;
}

static slot *find(const auth_throttle *t, const char *key) {
    if (!key || !*key) return NULL;
    for (size_t i = 0; i < t->cap; i++)
        if (same_key(&t->slots[i], key)) return &t->slots[i];
    return NULL;
}

/* Drop failures that left the window. */
static void expire(const auth_throttle *t, slot *s, int64_t now_us) {
    int k = 0;
    while (k < s->n && s->at[k] <= now_us - t->window_us) k++;
    if (k == 0) return;
    memmove(s->at, s->at + k, sizeof *s->at * (size_t)(s->n - k));
    s->n -= k;
}

static int live(const auth_throttle *t, const slot *s, int64_t now_us) {
    int c = 0;
    for (int i = 0; i < s->n; i++)
        if (s->at[i] > now_us - t->window_us) c++;
    return c;
}

int auth_throttle_count(const auth_throttle *t, const char *key, int64_t now_us) {
    const slot *s = find(t, key);
    return s ? live(t, s, now_us) : 0;
}

int auth_throttle_allows(const auth_throttle *t, const char *key, int64_t now_us,
                         int64_t *retry_after_s) {
    assert(t);
    const slot *s = find(t, key);
    if (!s || live(t, s, now_us) < t->max) return 1;
    /* refused: the oldest of the last `max` failures must leave the window */
    int64_t oldest = s->at[s->n - t->max];
    int64_t wait_us = oldest + t->window_us - now_us;
    int64_t secs = (wait_us + 999999) / 1000000;
    if (retry_after_s) *retry_after_s = secs < 1 ? 1 : secs;
    return 0;
}

void auth_throttle_fail(auth_throttle *t, const char *key, int64_t now_us) {
    assert(t);
    if (!key || !*key) return;
    slot *s = find(t, key);
    if (!s) {
        /* a free slot, else one with nothing live, else the stalest */
        slot *stale = NULL;
        for (size_t i = 0; i < t->cap && !s; i++) {
            slot *c = &t->slots[i];
            if (!c->key[0] || live(t, c, now_us) == 0) s = c;
            else if (!stale || c->last_us < stale->last_us) stale = c;
        }
        if (!s) s = stale;
        size_t len = strnlen(key, KEY_MAX - 1);
        memcpy(s->key, key, len);
        s->key[len] = '\0';
        s->n = 0;
    }
    expire(t, s, now_us);
    if (s->n == t->max) {
        memmove(s->at, s->at + 1, sizeof *s->at * (size_t)(t->max - 1));
        s->n--;
    }
    s->at[s->n++] = now_us;
    s->last_us = now_us;
}

void auth_throttle_reset(auth_throttle *t, const char *key) {
    assert(t);
    slot *s = find(t, key);
    if (!s) return;
    s->key[0] = '\0';
    s->n = 0;
}
