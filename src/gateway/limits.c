/*
 * limits.c - per-minute rate windows and token estimates (see gateway.h).
 * Pure: the caller owns the windows and the lock around them.
 */
#include "gateway.h"

#include <assert.h>

#define MINUTE_US 60000000LL

/* Roll the window forward to the minute of `now_us`. */
static void roll(gw_window *w, int64_t now_us) {
    int64_t m = now_us / MINUTE_US;
    if (m == w->minute) return;
    w->prev = m == w->minute + 1 ? w->cur : 0;
    w->cur = 0;
    w->minute = m;
}

/* The window's count now: the previous minute weighted by the part still covered (rounded up). */
static int64_t count(const gw_window *w, int64_t now_us) {
    int64_t into = now_us % MINUTE_US; /* how far into the current minute */
    return w->cur + (w->prev * (MINUTE_US - into) + MINUTE_US - 1) / MINUTE_US;
}

int gw_window_allows(gw_window *w, int64_t now_us, int64_t cost, int64_t limit,
                     int64_t *retry_after_s) {
    assert(w && now_us >= 0 && cost >= 0);
    if (limit <= 0) return 1;
    roll(w, now_us);
    if (count(w, now_us) + cost <= limit) return 1;
    if (retry_after_s) {
        /* the earliest second at which the weighted previous minute has shrunk enough,
         * or the next minute when the current one alone is over */
        int64_t into = now_us % MINUTE_US, wait_us = MINUTE_US - into;
        if (w->cur + cost <= limit && w->prev > 0) {
            int64_t room = limit - w->cur - cost; /* >= 0 */
            /* prev * (MIN - t) / MIN <= room  <=>  t >= MIN - room*MIN/prev */
            int64_t t = MINUTE_US - (room * MINUTE_US) / w->prev;
            if (t > into) wait_us = t - into;
        }
        int64_t s = (wait_us + 999999) / 1000000;
        *retry_after_s = s < 1 ? 1 : s;
    }
    return 0;
}

void gw_window_add(gw_window *w, int64_t now_us, int64_t cost) {
    assert(w && now_us >= 0);
    roll(w, now_us);
    w->cur += cost;
    if (w->cur < 0) w->cur = 0;
}

gw_window gw_window_merge(const gw_window *a, const gw_window *b, int64_t now_us) {
    assert(a && b && now_us >= 0);
    gw_window x = *a, y = *b;
    roll(&x, now_us);
    roll(&y, now_us);
    return (gw_window){.minute = x.minute, .prev = x.prev + y.prev, .cur = x.cur + y.cur};
}

int64_t gw_estimate_tokens(int64_t chars) {
    if (chars <= 0) return 0;
    return (chars + 3) / 4;
}
