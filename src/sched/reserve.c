/*
 * reserve.c - advance reservations: the rules of reserve.h (pure).
 */
#include "reserve.h"

#include <assert.h>
#include <stddef.h>

#define NEVER INT64_MAX

int rsv_holds(const rsv *r, const rsv_job *j) {
    if (r->tenant < 0) return 0; /* maintenance: nobody's */
    if (j->tenant != r->tenant) return 0;
    return r->project < 0 || j->project == r->project;
}

/* When j would end if it started now (its time limit), NEVER without one. */
static int64_t end_of(const rsv_job *j, int64_t now) {
    if (j->time_limit_s <= 0) return NEVER;
    if (j->time_limit_s > (NEVER - now) / 1000000) return NEVER;
    return now + j->time_limit_s * 1000000;
}

/* Cards of gpus[0..k) that a count reservation's class accepts. */
static int matching(const rsv *r, const int *gpus, int k) {
    int m = 0;
    for (int i = 0; i < k; i++) m += r->card_ok[gpus[i]] != 0;
    return m;
}

int rsv_allows(const rsv *rs, int n, const rsv_count_use *use, const rsv_job *j, int node,
               int pool, const int *gpus, int k, int64_t now, int *blocker) {
    assert(k >= 0 && (k == 0 || gpus));
    *blocker = -1;
    int64_t ends = end_of(j, now);
    if (j->reservation >= 0) {
        assert(j->reservation < n);
        const rsv *r = &rs[j->reservation];
        if (!rsv_holds(r, j)) return RSV_NOT_HOLDER;
        if (now >= r->t2_us) return RSV_OVER;
        if (now < r->t1_us) return RSV_NOT_YET;
        if (ends != NEVER && ends > r->t2_us) return RSV_TOO_LONG;
        if (r->node_in) {
            if (!r->node_in[node]) return RSV_OUTSIDE;
        } else {
            assert(use);
            if (pool != r->pool || matching(r, gpus, k) < k) return RSV_OUTSIDE;
            if (use[j->reservation].busy_own_now + k > r->count) return RSV_FULL;
        }
    }
    for (int i = 0; i < n; i++) {
        if (i == j->reservation) continue;
        const rsv *r = &rs[i];
        assert(r->t1_us < r->t2_us);
        if (now >= r->t2_us) continue; /* rule 4 */
        int in_force = now >= r->t1_us;
        if (!in_force && ends <= r->t1_us) continue; /* rule 1: ends before it begins */
        if (r->node_in) {
            if (r->node_in[node]) {
                *blocker = i;
                return RSV_BLOCKED;
            }
            continue;
        }
        assert(use);
        if (pool != r->pool) continue;
        int m = matching(r, gpus, k);
        if (m == 0) continue;
        const rsv_count_use *u = &use[i];
        /* in force: the other work keeps what is beyond the count (rule 2); ahead of it:
         * what runs past T1 must leave the count free then (rule 1) */
        int busy = in_force ? u->busy_other_now : u->busy_at_t1;
        if (busy + m > u->cards - r->count) {
            *blocker = i;
            return RSV_BLOCKED;
        }
    }
    return RSV_OK;
}

int64_t rsv_blocked_until(const rsv *rs, int i, const rsv_job *j, int64_t now) {
    const rsv *r = &rs[i];
    if (now >= r->t2_us) return 0;
    /* its own reservation, not begun: its start; any other one in the way: its end */
    return i == j->reservation && now < r->t1_us ? r->t1_us : r->t2_us;
}

/* The next moment after `t` at which some span starts or ends (clipped), or `to`. */
static int64_t next_break(const rsv_use_span *u, int n, int64_t t, int64_t to) {
    int64_t best = to;
    for (int i = 0; i < n; i++) {
        int64_t e = u[i].end_us ? u[i].end_us : to;
        if (u[i].start_us > t && u[i].start_us < best) best = u[i].start_us;
        if (e > t && e < best) best = e;
    }
    return best;
}

int64_t rsv_unused_card_s(const rsv *r, int cards, const rsv_use_span *used, int nused,
                          int64_t from, int64_t to) {
    int held = r->node_in ? cards : r->count;
    if (from < r->t1_us) from = r->t1_us;
    if (to > r->t2_us) to = r->t2_us;
    if (held <= 0 || to <= from) return 0;
    /* card-microseconds idle, summed between consecutive breakpoints */
    long double idle = 0;
    for (int64_t t = from; t < to;) {
        int64_t nx = next_break(used, nused, t, to);
        int busy = 0;
        for (int i = 0; i < nused; i++) {
            int64_t e = used[i].end_us ? used[i].end_us : to;
            if (used[i].start_us <= t && e > t) busy += used[i].cards;
        }
        if (busy > held) busy = held;
        idle += (long double)(held - busy) * (long double)(nx - t);
        t = nx;
    }
    return (int64_t)(idle / 1000000.0L);
}
