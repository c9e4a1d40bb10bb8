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

/* Of those, the cards not yet counted busy by `who` (rsv_count_use.slices: 0 own, 1 other
 * now, 2 other past T1): a slice on a card already counted takes no more of the count. */
static int fresh(const rsv *r, const rsv_count_use *u, const int *gpus, int k, int who) {
    int m = 0;
    for (int i = 0; i < k; i++)
        m += r->card_ok[gpus[i]] && (!u->slices || !u->slices[3 * gpus[i] + who]);
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
            const rsv_count_use *u = &use[j->reservation];
            if (u->busy_own_now + fresh(r, u, gpus, k, 0) > r->count) return RSV_FULL;
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
        if (matching(r, gpus, k) == 0) continue;
        const rsv_count_use *u = &use[i];
        /* in force: the other work keeps what is beyond the count (rule 2); ahead of it:
         * what runs past T1 must leave the count free then (rule 1) */
        int busy = in_force ? u->busy_other_now : u->busy_at_t1;
        int m = fresh(r, u, gpus, k, in_force ? 1 : 2);
        if (busy + m > u->cards - r->count) {
            *blocker = i;
            return RSV_BLOCKED;
        }
    }
    return RSV_OK;
}

int rsv_named_check(const rsv *rs, int n, const rsv_count_use *use, const rsv_job *j, int cards,
                    int64_t now) {
    if (j->reservation < 0) return RSV_OK;
    assert(j->reservation < n);
    (void)n;
    const rsv *r = &rs[j->reservation];
    int64_t ends = end_of(j, now);
    if (!rsv_holds(r, j)) return RSV_NOT_HOLDER;
    if (now >= r->t2_us) return RSV_OVER;
    if (now < r->t1_us) return RSV_NOT_YET;
    if (ends != NEVER && ends > r->t2_us) return RSV_TOO_LONG;
    if (!r->node_in && use && use[j->reservation].busy_own_now + cards > r->count) return RSV_FULL;
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

/* ---- recurrence ---- */

#define DAY_US (86400LL * 1000000)

/* The spacing of candidate occurrences (weekdays: a day, filtered), 0 for a one-off. */
static int64_t period_of(const rsv_rule *r) {
    switch (r->kind) {
    case RSV_DAILY: return DAY_US;
    case RSV_WEEKLY: return 7 * DAY_US;
    case RSV_WEEKDAYS: return DAY_US;
    case RSV_EVERY: return r->every_s > 0 ? r->every_s * 1000000 : 0;
    default: return 0;
    }
}

/* floor(a / b) for b > 0 */
static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0)) ? q - 1 : q;
}

int rsv_weekday(int64_t us) {
    /* 1970-01-01 was a Thursday (3, counting Monday as 0) */
    int64_t days = floordiv(us, DAY_US);
    int64_t w = (days + 3) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

const char *rsv_rule_check(const rsv_rule *r) {
    if (r->t2_us <= r->t1_us) return "the window must end after it starts";
    if (r->kind == RSV_ONCE) return NULL;
    if (r->kind < RSV_ONCE || r->kind > RSV_EVERY) return "unknown recurrence";
    if (r->until_us <= r->t1_us) return "a recurring reservation needs a horizon (until) after its start";
    if (r->kind == RSV_WEEKDAYS && (r->weekdays & 0x7f) == 0) return "name at least one weekday";
    if (r->kind == RSV_EVERY && (r->every_s < 1 || r->every_s > 366LL * 86400))
        return "every_seconds must be 1 .. 31622400";
    if (r->t2_us - r->t1_us > period_of(r))
        return "the window is longer than its period: occurrences would overlap";
    return NULL;
}

/* Is candidate i (start t1 + i x period) an occurrence (its weekday named, before the horizon)? */
static int cand_ok(const rsv_rule *r, int64_t start) {
    if (r->kind == RSV_ONCE) return start == r->t1_us;
    if (start >= r->until_us) return 0;
    return r->kind != RSV_WEEKDAYS || (r->weekdays >> rsv_weekday(start) & 1u);
}

int rsv_occurrences(const rsv_rule *r, int64_t from, int64_t to, rsv_span *out, int max) {
    int64_t dur = r->t2_us - r->t1_us, p = period_of(r);
    if (dur <= 0) return 0;
    if (r->kind == RSV_ONCE || p <= 0) {
        if (r->t2_us > from && r->t1_us < to) {
            if (max > 0 && out) out[0] = (rsv_span){r->t1_us, r->t2_us};
            return 1;
        }
        return 0;
    }
    /* the first candidate that ends after `from` */
    int64_t i = from < r->t1_us + dur ? 0 : floordiv(from - r->t1_us - dur, p) + 1;
    int n = 0;
    for (;; i++) {
        if (i > (INT64_MAX - r->t1_us) / p) break;
        int64_t start = r->t1_us + i * p;
        if (start >= to || start >= r->until_us) break;
        if (!cand_ok(r, start)) continue;
        if (n < max && out) out[n] = (rsv_span){start, start + dur};
        if (++n > max) break;
    }
    return n;
}

int rsv_current(const rsv_rule *r, int64_t at, rsv_span *out) {
    return rsv_occurrences(r, at, INT64_MAX, out, 1) > 0;
}

int rsv_occurrence_at(const rsv_rule *r, int64_t at, rsv_span *out) {
    rsv_span s;
    if (!rsv_current(r, at, &s) || s.t1_us > at) return 0;
    *out = s;
    return 1;
}

int rsv_last(const rsv_rule *r, int64_t at, rsv_span *out) {
    int64_t dur = r->t2_us - r->t1_us, p = period_of(r);
    if (dur <= 0 || at < r->t1_us) return 0;
    if (r->kind == RSV_ONCE || p <= 0) {
        *out = (rsv_span){r->t1_us, r->t2_us};
        return 1;
    }
    int64_t limit = at < r->until_us - 1 ? at : r->until_us - 1;
    if (limit < r->t1_us) return 0;
    /* candidates from the one at `limit` down: a weekday is named within a week */
    for (int64_t i = floordiv(limit - r->t1_us, p), k = 0; i >= 0 && k < 8; i--, k++) {
        int64_t start = r->t1_us + i * p;
        if (cand_ok(r, start)) {
            *out = (rsv_span){start, start + dur};
            return 1;
        }
    }
    return 0;
}

void rsv_fmt_time(int64_t us, char *buf, unsigned long n) {
    /* days since the epoch to a civil date (Howard Hinnant's algorithm): no time zone, no libc */
    int64_t secs = floordiv(us, 1000000), days = floordiv(secs, 86400), sod = secs - days * 86400;
    int64_t z = days + 719468, era = floordiv(z, 146097), doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2) y++;
    if (!buf || n < 1) return;
    char tmp[48];
    int len = 0;
    /* (no snprintf: stays free of locale and of stdio) */
    int64_t parts[6] = {y, m, d, sod / 3600, sod / 60 % 60, sod % 60};
    static const char seps[6] = {'-', '-', 'T', ':', ':', 'Z'};
    for (int i = 0; i < 6; i++) {
        int64_t v = parts[i] < 0 ? 0 : parts[i];
        int width = i == 0 ? 4 : 2;
        char dig[20];
        int nd = 0;
        do {
            dig[nd++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && nd < 19);
        while (nd < width) dig[nd++] = '0';
        while (nd) tmp[len++] = dig[--nd];
        tmp[len++] = seps[i];
    }
    tmp[len] = '\0';
    unsigned long k = 0;
    for (; k + 1 < n && tmp[k]; k++) buf[k] = tmp[k];
    buf[k] = '\0';
}

/* ---- overlaps ---- */

/* The first occurrence of r that starts after t (> t): 1 with *out, else 0. */
static int next_start(const rsv_rule *r, int64_t t, rsv_span *out) {
    rsv_span two[2];
    /* occurrences never overlap: at most one holds t, so the first two ending after t do */
    int k = rsv_occurrences(r, t, INT64_MAX, two, 2);
    for (int i = 0; i < k && i < 2; i++)
        if (two[i].t1_us > t) {
            *out = two[i];
            return 1;
        }
    return 0;
}

int rsv_peak_over(const rsv_rule *mine, int mine_cards, const rsv_load *others, int n,
                  int cards, int64_t from, int *who, rsv_span *at, int *load) {
    rsv_span m;
    int64_t t = from;
    *who = -1;
    *load = 0;
    long long all = mine_cards;
    for (int i = 0; i < n; i++) all += others[i].cards > 0 ? others[i].cards : 0;
    if (all <= cards) return 0; /* even all at once they fit */
    /* load only rises where an occurrence starts: inside each of mine's occurrences, look
     * at its start and at every start of another's within it */
    for (long steps = 0; rsv_current(mine, t, &m);) {
        if (m.t1_us > t) t = m.t1_us;
        while (t < m.t2_us) {
            if (++steps > RSV_WALK_MAX) return -1;
            int sum = 0, first = -1;
            int64_t first_t1 = INT64_MAX, first_t2 = 0, next = m.t2_us;
            for (int i = 0; i < n; i++) {
                rsv_span o;
                if (others[i].cards <= 0) continue;
                if (rsv_occurrence_at(&others[i].rule, t, &o)) {
                    sum += others[i].cards;
                    if (o.t1_us < first_t1) {
                        first = i;
                        first_t1 = o.t1_us;
                        first_t2 = o.t2_us;
                    }
                }
                if (next_start(&others[i].rule, t, &o) && o.t1_us < next) next = o.t1_us;
            }
            if (first >= 0 && (int64_t)mine_cards + sum > cards) {
                *who = first;
                *load = sum;
                *at = (rsv_span){t, first_t2 < m.t2_us ? first_t2 : m.t2_us};
                return 1;
            }
            t = next;
        }
        t = m.t2_us;
    }
    return 0;
}
