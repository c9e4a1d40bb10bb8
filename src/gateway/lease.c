/*
 * lease.c - the arithmetic of token leases (see gateway.h, "token leases"):
 * how much of the monthly quotas a gateway process takes from the store at
 * once, and the accounting of what its requests take from and give back to
 * a lease.  Pure: structs in, decisions out; the caller owns the lock.
 */
#include "gateway.h"

#include <assert.h>

#define SECOND_US 1000000LL
#define RATE_WINDOW_US (10 * SECOND_US) /* the recent rate: about the last 10 s */

int gw_lease_take(gw_lease *l, int64_t amount, int64_t now_us) {
    assert(l && amount >= 0);
    if (l->avail < amount) return 0;
    l->avail -= amount;
    l->inflight++;
    l->last_us = now_us;
    if (!l->rate_since_us) l->rate_since_us = now_us;
    int64_t span = now_us - l->rate_since_us;
    if (span >= RATE_WINDOW_US) { /* keep half a window's worth of the rate seen */
        l->rate_tokens = (int64_t)((double)l->rate_tokens * (double)(RATE_WINDOW_US / 2) / (double)span);
        l->rate_since_us = now_us - RATE_WINDOW_US / 2;
    }
    l->rate_tokens = gw_tokens_clamp(gw_sat_add(l->rate_tokens, amount));
    return 1;
}

void gw_lease_end(gw_lease *l, int64_t reserved, int64_t used) {
    assert(l);
    reserved = gw_tokens_clamp(reserved);
    used = gw_tokens_clamp(used);
    /* what it did not use goes back; what it used beyond its reservation is owed (avail < 0) */
    l->avail = gw_sat_add(l->avail, reserved - used);
    if (l->avail < -GW_TOKENS_MAX) l->avail = -GW_TOKENS_MAX;
    if (l->inflight > 0) l->inflight--;
    l->unsettled++;
}

void gw_lease_settled(gw_lease *l) {
    if (l->unsettled > 0) l->unsettled--;
}

int64_t gw_lease_rate(const gw_lease *l, int64_t now_us) {
    if (!l->rate_since_us) return 0;
    int64_t span = now_us - l->rate_since_us;
    if (span < SECOND_US) span = SECOND_US; /* a burst is not a rate yet */
    return (int64_t)((double)l->rate_tokens * (double)SECOND_US / (double)span);
}

int64_t gw_lease_size(const gw_lease_policy *p, const gw_lease *l, int64_t amount, int64_t room,
                      int64_t now_us) {
    if (l->avail >= amount) return 0; /* nothing to grant: the lease covers it */
    int64_t need = gw_tokens_clamp(gw_sat_add(amount, -l->avail)); /* and what is owed */
    room = gw_tokens_clamp(room);
    if (room < need) return 0;
    /* about horizon_ms of the recent rate, within [min, max] */
    int64_t target = gw_sat_mul(gw_lease_rate(l, now_us), p->horizon_ms) / 1000;
    if (target < p->min_tokens) target = p->min_tokens;
    if (p->max_tokens > 0 && target > p->max_tokens) target = p->max_tokens;
    /* never more than a share of what is left, so that other processes get some too */
    if (p->share_div > 1 && target > room / p->share_div) target = room / p->share_div;
    if (target < need) target = need;
    return target > room ? room : target;
}

int gw_lease_idle(const gw_lease *l, int64_t now_us, int64_t idle_us) {
    return l->inflight == 0 && l->unsettled == 0 && now_us - l->last_us >= idle_us;
}
