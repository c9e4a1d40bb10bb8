/*
 * test_reserve.c - advance reservations (src/sched/reserve.h): each rule on
 * hand-made cases, then a property test that replays random workloads on a
 * small pool through rsv_allows and checks that every reservation starts
 * on time with its cards free and nothing stopped, that work in a window
 * is the holder's, and that the unused time adds up.
 */
#include "testutil.h"

#include "../../src/sched/reserve.h"

#include <string.h>

#define S 1000000LL /* a second, in us */

static const unsigned char nodes01[4] = {1, 1, 0, 0}; /* nodes 0 and 1 named */
static const unsigned char cards_all[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

static rsv node_rsv(int64_t t1, int64_t t2, int tenant, int project) {
    return (rsv){.t1_us = t1, .t2_us = t2, .tenant = tenant, .project = project,
                 .node_in = nodes01, .pool = -1};
}

static void holders(void **state) {
    (void)state;
    rsv r = node_rsv(100 * S, 200 * S, 3, -1);
    assert_true(rsv_holds(&r, &(rsv_job){3, 7, -1, 0}));
    assert_false(rsv_holds(&r, &(rsv_job){4, 7, -1, 0}));
    r.project = 7;
    assert_true(rsv_holds(&r, &(rsv_job){3, 7, -1, 0}));
    assert_false(rsv_holds(&r, &(rsv_job){3, 8, -1, 0}));
    r.tenant = -1; /* maintenance */
    assert_false(rsv_holds(&r, &(rsv_job){3, 7, -1, 0}));
}

static void named_nodes(void **state) {
    (void)state;
    rsv r = node_rsv(100 * S, 200 * S, 3, -1);
    int g[1] = {0}, b;
    rsv_job other = {1, 0, -1, 0};
    /* no time limit: kept off the named nodes from now on, free elsewhere */
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 0, 0, g, 1, 10 * S, &b), RSV_BLOCKED);
    assert_int_equal(b, 0);
    assert_int_equal(rsv_blocked_until(&r, 0, &other, 10 * S), 200 * S);
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 2, 0, g, 1, 10 * S, &b), RSV_OK);
    assert_int_equal(b, -1);
    /* a limit that ends by T1: fine; a second more: not */
    other.time_limit_s = 90;
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 0, 0, g, 1, 10 * S, &b), RSV_OK);
    other.time_limit_s = 91;
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 0, 0, g, 1, 10 * S, &b), RSV_BLOCKED);
    /* in the window: nobody else, whatever its limit; after it: anyone */
    other.time_limit_s = 1;
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 1, 0, g, 1, 150 * S, &b), RSV_BLOCKED);
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 1, 0, g, 1, 200 * S, &b), RSV_OK);
    other.time_limit_s = 0;
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 1, 0, g, 1, 200 * S, &b), RSV_OK);
    assert_int_equal(rsv_blocked_until(&r, 0, &other, 200 * S), 0);
    /* the holder's job that does not name it is like any other */
    rsv_job mine = {3, 0, -1, 0};
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 150 * S, &b), RSV_BLOCKED);
    /* naming it: only in the window, on its nodes, ending by T2 */
    mine.reservation = 0;
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 10 * S, &b), RSV_NOT_YET);
    assert_int_equal(rsv_blocked_until(&r, 0, &mine, 10 * S), 100 * S);
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 150 * S, &b), RSV_OK);
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 2, 0, g, 1, 150 * S, &b), RSV_OUTSIDE);
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 200 * S, &b), RSV_OVER);
    mine.time_limit_s = 50;
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 150 * S, &b), RSV_OK);
    mine.time_limit_s = 51;
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 150 * S, &b), RSV_TOO_LONG);
    /* someone else naming it */
    rsv_job thief = {1, 0, 0, 0};
    assert_int_equal(rsv_allows(&r, 1, NULL, &thief, 0, 0, g, 1, 150 * S, &b), RSV_NOT_HOLDER);
    /* maintenance: nobody, not even naming it */
    r.tenant = -1;
    mine.time_limit_s = 0;
    assert_int_equal(rsv_allows(&r, 1, NULL, &mine, 0, 0, g, 1, 150 * S, &b), RSV_NOT_HOLDER);
    /* a huge limit does not overflow */
    other.time_limit_s = INT64_MAX / 2;
    assert_int_equal(rsv_allows(&r, 1, NULL, &other, 0, 0, g, 1, 10 * S, &b), RSV_BLOCKED);
}

static void counts(void **state) {
    (void)state;
    /* 4 of the pool's 8 cards (pool 0, every card matches) for tenant 3 */
    rsv r = {.t1_us = 100 * S, .t2_us = 200 * S, .tenant = 3, .project = -1, .node_in = NULL,
             .pool = 0, .count = 4, .card_ok = cards_all};
    rsv_count_use u = {.cards = 8, .busy_at_t1 = 3, .busy_other_now = 3, .busy_own_now = 0};
    int g1[1] = {5}, g2[2] = {5, 6}, b;
    rsv_job other = {1, 0, -1, 0};
    /* ahead of T1, running past it: 3 busy at T1 + 1 leaves 4: fine; + 2: not */
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, g1, 1, 10 * S, &b), RSV_OK);
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, g2, 2, 10 * S, &b), RSV_BLOCKED);
    assert_int_equal(b, 0);
    /* ... unless it ends by T1 */
    other.time_limit_s = 90;
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, g2, 2, 10 * S, &b), RSV_OK);
    /* another pool is not concerned */
    other.time_limit_s = 0;
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 1, g2, 2, 10 * S, &b), RSV_OK);
    /* cards the class does not accept are not concerned */
    unsigned char some[16] = {1, 1, 1, 1, 1, 1, 0, 0};
    r.card_ok = some;
    int g67[2] = {6, 7};
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, g67, 2, 10 * S, &b), RSV_OK);
    r.card_ok = cards_all;
    /* in force: the others keep 8 - 4 = 4, 3 in use: one more */
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, g1, 1, 150 * S, &b), RSV_OK);
    u.busy_other_now = 4;
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, g1, 1, 150 * S, &b), RSV_BLOCKED);
    /* the holder naming it: up to the count */
    rsv_job mine = {3, 2, 0, 0};
    u.busy_own_now = 3;
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, g1, 1, 150 * S, &b), RSV_OK);
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, g2, 2, 150 * S, &b), RSV_FULL);
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 1, g1, 1, 150 * S, &b), RSV_OUTSIDE);
    r.card_ok = some;
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, g67, 2, 150 * S, &b), RSV_OUTSIDE);
}

static void two_reservations(void **state) {
    (void)state;
    /* job of tenant 3 naming reservation 1 (count, pool 0) on node 0, which reservation 0
     * (named nodes, maintenance) will hold from 150 s */
    rsv rs[2] = {node_rsv(150 * S, 300 * S, -1, -1),
                 {.t1_us = 100 * S, .t2_us = 200 * S, .tenant = 3, .project = -1,
                  .pool = 0, .count = 2, .card_ok = cards_all}};
    rsv_count_use u[2] = {{0}, {.cards = 8}};
    int g[1] = {0}, b;
    rsv_job mine = {3, 0, 1, 40};
    assert_int_equal(rsv_allows(rs, 2, u, &mine, 0, 0, g, 1, 110 * S, &b), RSV_OK);
    mine.time_limit_s = 41; /* would run into the maintenance window */
    assert_int_equal(rsv_allows(rs, 2, u, &mine, 0, 0, g, 1, 110 * S, &b), RSV_BLOCKED);
    assert_int_equal(b, 0);
    assert_int_equal(rsv_allows(rs, 2, u, &mine, 2, 0, g, 1, 110 * S, &b), RSV_OK);
}

static void unused_time(void **state) {
    (void)state;
    rsv r = {.t1_us = 100 * S, .t2_us = 200 * S, .tenant = 3, .project = -1, .pool = 0,
             .count = 4, .card_ok = cards_all};
    /* nothing used: 4 cards x 100 s */
    assert_int_equal(rsv_unused_card_s(&r, 0, NULL, 0, 0, 1000 * S), 400);
    /* clipped to the window and to the span asked */
    assert_int_equal(rsv_unused_card_s(&r, 0, NULL, 0, 150 * S, 1000 * S), 200);
    assert_int_equal(rsv_unused_card_s(&r, 0, NULL, 0, 300 * S, 400 * S), 0);
    /* 2 cards from 120 to 170 s, 1 card from 90 s still running */
    rsv_use_span u[] = {{120 * S, 170 * S, 2}, {90 * S, 0, 1}};
    assert_int_equal(rsv_unused_card_s(&r, 0, u, 2, 0, 1000 * S), 400 - 100 - 100);
    /* more than the count at once is not credited twice */
    rsv_use_span big[] = {{100 * S, 200 * S, 3}, {100 * S, 150 * S, 3}};
    assert_int_equal(rsv_unused_card_s(&r, 0, big, 2, 0, 1000 * S), 400 - 300 - 50);
    /* named nodes: the cards given */
    rsv n = node_rsv(100 * S, 200 * S, 3, -1);
    assert_int_equal(rsv_unused_card_s(&n, 16, NULL, 0, 0, 1000 * S), 1600);
    assert_int_equal(rsv_unused_card_s(&n, 0, NULL, 0, 0, 1000 * S), 0);
}

/* ---- property: a reservation starts on time without stopping anything ---- */


#define CARDS 8
#define PJOBS 400

typedef struct pjob {
    rsv_job j;
    int64_t start, end; /* end: start + limit; NEVER-ish when none (runs until stopped) */
    int card, running, done;
} pjob;

/* Recurrence (rsv_rule): a window once, every day, week, on weekdays, every N seconds, up to
 * its horizon; the occurrence in force or next, and the one that held a moment. */
static void recurrence(void **state) {
    (void)state;
    const int64_t D = 86400 * S, H = 3600 * S;
    const int64_t mon = 1704067200LL * S; /* 2024-01-01T00:00:00Z, a Monday */
    char txt[32];
    rsv_fmt_time(mon, txt, sizeof txt);
    assert_string_equal(txt, "2024-01-01T00:00:00Z");
    rsv_fmt_time(1796639405LL * S + 999999, txt, sizeof txt);
    assert_string_equal(txt, "2026-12-07T10:30:05Z");
    rsv_fmt_time(-1 * S, txt, sizeof txt);
    assert_string_equal(txt, "1969-12-31T23:59:59Z");
    assert_int_equal(rsv_weekday(mon), 0);
    assert_int_equal(rsv_weekday(mon + 6 * D + 23 * H), 6);
    assert_int_equal(rsv_weekday(1796639405LL * S), 0); /* 2026-12-07 */
    assert_int_equal(rsv_weekday(-1 * S), 2);            /* a Wednesday */
    rsv_span o[16];
    /* once */
    rsv_rule once = {mon + 10 * H, mon + 12 * H, RSV_ONCE, 0, 0, 0};
    assert_null(rsv_rule_check(&once));
    assert_int_equal(rsv_occurrences(&once, 0, INT64_MAX, o, 16), 1);
    assert_int_equal(rsv_occurrences(&once, mon + 12 * H, INT64_MAX, o, 16), 0);
    assert_true(rsv_current(&once, mon, &o[0]) && o[0].t1_us == mon + 10 * H);
    assert_false(rsv_occurrence_at(&once, mon, &o[0]));
    assert_true(rsv_occurrence_at(&once, mon + 11 * H, &o[0]));
    assert_false(rsv_current(&once, mon + 12 * H, &o[0]));
    assert_true(rsv_last(&once, mon + 20 * H, &o[0]) && o[0].t2_us == mon + 12 * H);
    assert_false(rsv_last(&once, mon, &o[0]));
    /* daily 10:00-12:00 for five days */
    rsv_rule daily = {mon + 10 * H, mon + 12 * H, RSV_DAILY, 0, 0, mon + 5 * D};
    assert_null(rsv_rule_check(&daily));
    assert_int_equal(rsv_occurrences(&daily, 0, INT64_MAX, o, 16), 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(o[i].t1_us, mon + i * D + 10 * H);
        assert_int_equal(o[i].t2_us, mon + i * D + 12 * H);
    }
    /* only 2 asked: 3 reported (one past max says "more") */
    assert_int_equal(rsv_occurrences(&daily, 0, INT64_MAX, o, 2), 3);
    assert_true(rsv_current(&daily, mon + D + 11 * H, &o[0]) && o[0].t1_us == mon + D + 10 * H);
    assert_true(rsv_current(&daily, mon + D + 12 * H, &o[0]) && o[0].t1_us == mon + 2 * D + 10 * H);
    assert_false(rsv_current(&daily, mon + 4 * D + 12 * H, &o[0]));
    assert_true(rsv_last(&daily, mon + 9 * D, &o[0]) && o[0].t1_us == mon + 4 * D + 10 * H);
    assert_true(rsv_last(&daily, mon + 2 * D + 9 * H, &o[0]) && o[0].t1_us == mon + D + 10 * H);
    assert_true(rsv_occurrence_at(&daily, mon + 3 * D + 10 * H, &o[0]) &&
                o[0].t1_us == mon + 3 * D + 10 * H);
    assert_false(rsv_occurrence_at(&daily, mon + 3 * D + 9 * H, &o[0]));
    /* the window between two moments: days 1..2 */
    assert_int_equal(rsv_occurrences(&daily, mon + D, mon + 2 * D + 10 * H + 1, o, 16), 2);
    /* weekly, three weeks */
    rsv_rule weekly = {mon, mon + 2 * D, RSV_WEEKLY, 0, 0, mon + 21 * D};
    assert_int_equal(rsv_occurrences(&weekly, 0, INT64_MAX, o, 16), 3);
    assert_int_equal(o[2].t1_us, mon + 14 * D);
    /* weekdays: Monday, Wednesday, Friday, 8:00-9:00, two weeks */
    rsv_rule wd = {mon + 8 * H, mon + 9 * H, RSV_WEEKDAYS, 1u | 4u | 16u, 0, mon + 14 * D};
    assert_null(rsv_rule_check(&wd));
    assert_int_equal(rsv_occurrences(&wd, 0, INT64_MAX, o, 16), 6);
    for (int i = 0; i < 6; i++) {
        int w = rsv_weekday(o[i].t1_us);
        assert_true(w == 0 || w == 2 || w == 4);
        assert_int_equal((o[i].t1_us - mon) % D, 8 * H);
    }
    assert_true(rsv_current(&wd, mon + D, &o[0]) && o[0].t1_us == mon + 2 * D + 8 * H);
    assert_true(rsv_last(&wd, mon + 3 * D + 12 * H, &o[0]) && o[0].t1_us == mon + 2 * D + 8 * H);
    /* a start on a day not named: the first occurrence is the next named day */
    rsv_rule tue = {mon + 8 * H, mon + 9 * H, RSV_WEEKDAYS, 2u, 0, mon + 14 * D};
    assert_int_equal(rsv_occurrences(&tue, 0, INT64_MAX, o, 16), 2);
    assert_int_equal(o[0].t1_us, mon + D + 8 * H);
    assert_false(rsv_last(&tue, mon + 12 * H, &o[0]));
    /* every 10 s, 3 s windows, before 35 s: at 0, 10, 20, 30 */
    rsv_rule ev = {mon, mon + 3 * S, RSV_EVERY, 0, 10, mon + 35 * S};
    assert_null(rsv_rule_check(&ev));
    assert_int_equal(rsv_occurrences(&ev, 0, INT64_MAX, o, 16), 4);
    assert_int_equal(o[3].t1_us, mon + 30 * S);
    assert_true(rsv_current(&ev, mon + 4 * S, &o[0]) && o[0].t1_us == mon + 10 * S);
    assert_true(rsv_current(&ev, mon + 12 * S, &o[0]) && o[0].t1_us == mon + 10 * S);
    assert_false(rsv_current(&ev, mon + 33 * S, &o[0]));
    /* unsound rules */
    rsv_rule bad = daily;
    bad.t2_us = bad.t1_us;
    assert_non_null(rsv_rule_check(&bad));
    bad = daily;
    bad.until_us = bad.t1_us;
    assert_non_null(rsv_rule_check(&bad));
    bad = daily;
    bad.t2_us = bad.t1_us + D + 1;
    assert_non_null(rsv_rule_check(&bad)); /* longer than a day: overlapping */
    bad = wd;
    bad.weekdays = 0;
    assert_non_null(rsv_rule_check(&bad));
    bad = ev;
    bad.every_s = 2;
    assert_non_null(rsv_rule_check(&bad));
    bad.kind = 9;
    assert_non_null(rsv_rule_check(&bad));
}

static void property(void **state) {
    (void)state;
    uint64_t rg = 7;
    int starts_checked = 0, placed_in = 0;
    for (int trial = 0; trial < 200; trial++) {
        /* one pool of 8 cards on one node; one count reservation of 1..6 cards */
        int count = 1 + (int)tu_below(&rg, 6);
        int holder = (int)tu_below(&rg, 3);
        rsv r = {.t1_us = (int64_t)(20 + tu_below(&rg, 40)) * S, .pool = 0, .count = count,
                 .tenant = holder, .project = -1, .card_ok = cards_all};
        r.t2_us = r.t1_us + (int64_t)(10 + tu_below(&rg, 40)) * S;
        pjob jobs[PJOBS];
        int nj = 0;
        int owner[CARDS];
        for (int c = 0; c < CARDS; c++) owner[c] = -1;
        int64_t own_used = 0;
        for (int64_t t = 0; t < r.t2_us + 20 * S; t += S) {
            /* ends */
            for (int i = 0; i < nj; i++)
                if (jobs[i].running && jobs[i].end && jobs[i].end <= t) {
                    jobs[i].running = 0;
                    owner[jobs[i].card] = -1;
                }
            /* jobs naming the reservation are stopped at T2 (rule 3) */
            if (t >= r.t2_us)
                for (int i = 0; i < nj; i++)
                    if (jobs[i].running && jobs[i].j.reservation == 0) {
                        jobs[i].running = 0;
                        owner[jobs[i].card] = -1;
                    }
            /* at T1: the count is free or used by its own work - nothing had to stop */
            if (t == r.t1_us) {
                int other = 0;
                for (int c = 0; c < CARDS; c++)
                    if (owner[c] >= 0 && jobs[owner[c]].j.reservation != 0) other++;
                assert_true(other <= CARDS - count);
                starts_checked++;
            }
            /* arrivals */
            int arrive = (int)tu_below(&rg, 3);
            for (int a = 0; a < arrive && nj < PJOBS; a++) {
                pjob *p = &jobs[nj++];
                memset(p, 0, sizeof *p);
                p->j.tenant = (int)tu_below(&rg, 3);
                p->j.project = 0;
                p->j.reservation = p->j.tenant == holder && tu_below(&rg, 2) ? 0 : -1;
                p->j.time_limit_s = tu_below(&rg, 4) ? 1 + tu_below(&rg, 30) : 0;
                p->card = -1;
            }
            /* the accounting the scheduler would do, then placements in order */
            for (int i = 0; i < nj; i++) {
                pjob *p = &jobs[i];
                if (p->running || p->done) continue;
                rsv_count_use u = {.cards = CARDS};
                for (int c = 0; c < CARDS; c++) {
                    if (owner[c] < 0) continue;
                    const pjob *q = &jobs[owner[c]];
                    if (q->j.reservation == 0) {
                        u.busy_own_now++;
                    } else {
                        u.busy_other_now++;
                        if (!q->end || q->end > r.t1_us) u.busy_at_t1++;
                    }
                }
                int free_card = -1;
                for (int c = 0; c < CARDS && free_card < 0; c++)
                    if (owner[c] < 0) free_card = c;
                if (free_card < 0) break;
                int g[1] = {free_card}, b;
                if (rsv_allows(&r, 1, &u, &p->j, 0, 0, g, 1, t, &b) != RSV_OK) continue;
                p->running = 1;
                p->done = 1;
                p->start = t;
                p->end = p->j.time_limit_s ? t + p->j.time_limit_s * S : 0;
                p->card = free_card;
                owner[free_card] = i;
                if (p->j.reservation == 0) {
                    /* rule 2/3: in the window, the holder's, within the count */
                    assert_true(t >= r.t1_us && t < r.t2_us);
                    assert_int_equal(p->j.tenant, holder);
                    assert_true(!p->end || p->end <= r.t2_us);
                    placed_in++;
                    own_used += (p->end ? p->end : r.t2_us) - t;
                }
            }
            /* in force: the reservation's own work never beyond the count, the others
             * never beyond the rest */
            if (t >= r.t1_us && t < r.t2_us) {
                int own = 0, other = 0;
                for (int c = 0; c < CARDS; c++)
                    if (owner[c] >= 0) {
                        if (jobs[owner[c]].j.reservation == 0) own++;
                        else other++;
                    }
                assert_true(own <= count);
                assert_true(other <= CARDS - count);
            }
        }
        /* the unused time: the window's cards less what its own work used */
        rsv_use_span spans[PJOBS];
        int ns = 0;
        for (int i = 0; i < nj; i++)
            if (jobs[i].done && jobs[i].j.reservation == 0)
                spans[ns++] = (rsv_use_span){jobs[i].start, jobs[i].end ? jobs[i].end : r.t2_us,
                                             1};
        int64_t unused = rsv_unused_card_s(&r, 0, spans, ns, 0, r.t2_us + 100 * S);
        int64_t window = (int64_t)count * (r.t2_us - r.t1_us) / S;
        assert_int_equal(unused, window - own_used / S);
    }
    assert_int_equal(starts_checked, 200);
    assert_true(placed_in > 100);
}

/* A count of a class of slices holds whole cards: a card counts once while any of its slices
 * is held - by the reservation's own work, by other work, by other work past T1 - and more
 * slices on a card already counted take no more of the count. */
static void count_of_slices(void **state) {
    (void)state;
    rsv r = {.t1_us = 100 * S, .t2_us = 200 * S, .tenant = 0, .project = -1, .pool = 0,
             .count = 1, .card_ok = cards_all};
    unsigned short sl[3 * 2] = {0}; /* two cards: own, other, other past T1 each */
    rsv_count_use u = {.cards = 2, .slices = sl};
    rsv_job other = {1, 0, -1, 0}, mine = {0, 0, 0, 40};
    int c0[1] = {0}, c1[1] = {1}, b;
    /* before T1: other work without a limit on card 0, slice after slice: one card */
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, c0, 1, 50 * S, &b), RSV_OK);
    sl[1] = sl[2] = 1;
    u.busy_other_now = u.busy_at_t1 = 1;
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, c0, 1, 50 * S, &b), RSV_OK);
    sl[1] = sl[2] = 2;
    /* card 1 would leave the count (1) no card at T1 */
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, c1, 1, 50 * S, &b), RSV_BLOCKED);
    assert_int_equal(b, 0);
    /* in force: the same, now */
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, c0, 1, 150 * S, &b), RSV_OK);
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, c1, 1, 150 * S, &b), RSV_BLOCKED);
    /* its own work: every slice of card 1, then card 0 would be a second card (full) */
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, c1, 1, 150 * S, &b), RSV_OK);
    sl[3 * 1 + 0] = 1;
    u.busy_own_now = 1;
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, c1, 1, 150 * S, &b), RSV_OK);
    sl[3 * 1 + 0] = 4;
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, c0, 1, 150 * S, &b), RSV_FULL);
    /* without the per-card figures (a class of whole cards) each unit is a card */
    u.slices = NULL;
    assert_int_equal(rsv_allows(&r, 1, &u, &mine, 0, 0, c1, 1, 150 * S, &b), RSV_FULL);
    assert_int_equal(rsv_allows(&r, 1, &u, &other, 0, 0, c0, 1, 150 * S, &b), RSV_BLOCKED);
}

/* Overlaps (rsv_peak_over): two on one node (a group of one card), recurring against one-off,
 * weekdays against weekly, the horizon, counts adding up in a pool, and too dense to walk. */
static void overlaps(void **state) {
    (void)state;
    const int64_t D = 86400 * S, H = 3600 * S;
    const int64_t mon = 1704067200LL * S; /* 2024-01-01T00:00:00Z, a Monday */
    int who, load;
    rsv_span at;
    /* one-offs on one node: overlapping, then only touching */
    rsv_rule a = {mon + 10 * H, mon + 12 * H, RSV_ONCE, 0, 0, 0};
    rsv_load other = {{mon + 11 * H, mon + 14 * H, RSV_ONCE, 0, 0, 0}, 1};
    assert_int_equal(rsv_peak_over(&a, 1, &other, 1, 1, 0, &who, &at, &load), 1);
    assert_int_equal(who, 0);
    assert_int_equal(load, 1);
    assert_int_equal(at.t1_us, mon + 11 * H);
    assert_int_equal(at.t2_us, mon + 12 * H);
    other.rule.t1_us = mon + 12 * H; /* starts as a ends */
    assert_int_equal(rsv_peak_over(&a, 1, &other, 1, 1, 0, &who, &at, &load), 0);
    assert_int_equal(who, -1);
    /* the other way round: the other begins first, a starts inside it */
    other.rule = (rsv_rule){mon + 9 * H, mon + 11 * H, RSV_ONCE, 0, 0, 0};
    assert_int_equal(rsv_peak_over(&a, 1, &other, 1, 1, 0, &who, &at, &load), 1);
    assert_int_equal(at.t1_us, mon + 10 * H);
    assert_int_equal(at.t2_us, mon + 11 * H);
    /* a group of one card taken by nobody else: no clash */
    other.cards = 0;
    assert_int_equal(rsv_peak_over(&a, 1, &other, 1, 1, 0, &who, &at, &load), 0);
    /* recurring (daily 00-06) against a one-off on the third day at 05:00-07:00 */
    rsv_rule nightly = {mon, mon + 6 * H, RSV_DAILY, 0, 0, mon + 10 * D};
    rsv_load fw = {{mon + 2 * D + 5 * H, mon + 2 * D + 7 * H, RSV_ONCE, 0, 0, 0}, 1};
    assert_int_equal(rsv_peak_over(&nightly, 1, &fw, 1, 1, 0, &who, &at, &load), 1);
    assert_int_equal(at.t1_us, mon + 2 * D + 5 * H);
    assert_int_equal(at.t2_us, mon + 2 * D + 6 * H);
    /* and the one-off asked against the recurring one: the same moment */
    rsv_load nl = {nightly, 1};
    assert_int_equal(rsv_peak_over(&fw.rule, 1, &nl, 1, 1, 0, &who, &at, &load), 1);
    assert_int_equal(at.t1_us, mon + 2 * D + 5 * H);
    assert_int_equal(at.t2_us, mon + 2 * D + 6 * H);
    /* the one-off between two nights: none; past the horizon: none; from after it: none */
    fw.rule = (rsv_rule){mon + 2 * D + 6 * H, mon + 3 * D, RSV_ONCE, 0, 0, 0};
    assert_int_equal(rsv_peak_over(&nightly, 1, &fw, 1, 1, 0, &who, &at, &load), 0);
    fw.rule = (rsv_rule){mon + 10 * D + 1 * H, mon + 10 * D + 2 * H, RSV_ONCE, 0, 0, 0};
    assert_int_equal(rsv_peak_over(&nightly, 1, &fw, 1, 1, 0, &who, &at, &load), 0);
    fw.rule = (rsv_rule){mon + 1 * H, mon + 2 * H, RSV_ONCE, 0, 0, 0};
    assert_int_equal(rsv_peak_over(&nightly, 1, &fw, 1, 1, 0, &who, &at, &load), 1);
    assert_int_equal(rsv_peak_over(&nightly, 1, &fw, 1, 1, mon + 2 * H, &who, &at, &load), 0);
    /* weekdays (mon, wed) 08-09 against weekly on tuesdays, then weekly on wednesdays */
    rsv_rule mw = {mon + 8 * H, mon + 9 * H, RSV_WEEKDAYS, 1u | 4u, 0, mon + 28 * D};
    rsv_load wk = {{mon + D + 7 * H, mon + D + 10 * H, RSV_WEEKLY, 0, 0, mon + 28 * D}, 1};
    assert_int_equal(rsv_peak_over(&mw, 1, &wk, 1, 1, 0, &who, &at, &load), 0);
    wk.rule.t1_us += D;
    wk.rule.t2_us += D;
    assert_int_equal(rsv_peak_over(&mw, 1, &wk, 1, 1, 0, &who, &at, &load), 1);
    assert_int_equal(at.t1_us, mon + 2 * D + 8 * H);
    assert_int_equal(at.t2_us, mon + 2 * D + 9 * H);
    /* counts of 8 cards: A 4 from 0 to 100 s, B 3 from 50 to 150 s */
    rsv_load ab[2] = {{{mon, mon + 100 * S, RSV_ONCE, 0, 0, 0}, 4},
                      {{mon + 50 * S, mon + 150 * S, RSV_ONCE, 0, 0, 0}, 3}};
    rsv_rule c = {mon + 120 * S, mon + 200 * S, RSV_ONCE, 0, 0, 0};
    assert_int_equal(rsv_peak_over(&c, 2, ab, 2, 8, 0, &who, &at, &load), 0); /* 3 + 2 */
    assert_int_equal(rsv_peak_over(&c, 5, ab, 2, 8, 0, &who, &at, &load), 0); /* 3 + 5 */
    assert_int_equal(rsv_peak_over(&c, 6, ab, 2, 8, 0, &who, &at, &load), 1);
    assert_int_equal(who, 1);
    assert_int_equal(load, 3);
    assert_int_equal(at.t1_us, mon + 120 * S);
    assert_int_equal(at.t2_us, mon + 150 * S);
    c = (rsv_rule){mon + 40 * S, mon + 60 * S, RSV_ONCE, 0, 0, 0};
    assert_int_equal(rsv_peak_over(&c, 1, ab, 2, 8, 0, &who, &at, &load), 0); /* 7 + 1 */
    assert_int_equal(rsv_peak_over(&c, 2, ab, 2, 8, 0, &who, &at, &load), 1); /* 7 + 2 at 50 */
    assert_int_equal(who, 0); /* A, in force longest */
    assert_int_equal(load, 7);
    assert_int_equal(at.t1_us, mon + 50 * S);
    assert_int_equal(at.t2_us, mon + 60 * S);
    c = (rsv_rule){mon, mon + 40 * S, RSV_ONCE, 0, 0, 0}; /* only A then */
    assert_int_equal(rsv_peak_over(&c, 4, ab, 2, 8, 0, &who, &at, &load), 0);
    /* a recurring count every 60 s (10 s long) against them: the one at 120 s meets B alone,
     * the one at 60 s both */
    rsv_rule ev = {mon, mon + 10 * S, RSV_EVERY, 0, 60, mon + 1000 * S};
    assert_int_equal(rsv_peak_over(&ev, 2, ab, 2, 8, 0, &who, &at, &load), 1);
    assert_int_equal(at.t1_us, mon + 60 * S);
    assert_int_equal(at.t2_us, mon + 70 * S);
    assert_int_equal(rsv_peak_over(&ev, 2, ab, 2, 8, mon + 70 * S, &who, &at, &load), 0);
    /* too many moments to walk: half-second windows every second for three days, interleaved */
    rsv_rule dense = {mon, mon + S / 2, RSV_EVERY, 0, 1, mon + 3 * D};
    rsv_load dense2 = {{mon + S / 2, mon + S, RSV_EVERY, 0, 1, mon + 3 * D}, 1};
    assert_int_equal(rsv_peak_over(&dense, 1, &dense2, 1, 1, 0, &who, &at, &load), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(holders),
        cmocka_unit_test(named_nodes),
        cmocka_unit_test(counts),
        cmocka_unit_test(two_reservations),
        cmocka_unit_test(unused_time),
        cmocka_unit_test(recurrence),
        cmocka_unit_test(overlaps),
        cmocka_unit_test(count_of_slices),
        cmocka_unit_test(property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
