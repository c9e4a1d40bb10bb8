/*
 * test_share.c - guarantees, borrowing, reclaim and fair use (src/sched/share.h).
 *
 * Each rule on hand-made cases, then a property test: random pools of
 * tenants with guarantees, ceilings, kept parts and weights, random arrivals
 * and exits, driven through a small round that uses only share.h's answers
 * (admit owned or borrowed, reclaim for owned work, borrowers in fair order).
 * After every round: nothing over the pool or a ceiling, no borrower taken
 * below its guarantee, a kept part never lent; a second round with nothing
 * new changes nothing (a fixed point: no preemption loops); and with no
 * arrivals no job is preempted twice.
 */
#include "testutil.h"

#include "../../src/sched/share.h"

#include <string.h>

static share_tenant tn(int64_t g, int64_t c, int64_t kept, int64_t w, int64_t used) {
    return (share_tenant){.guarantee = g, .ceiling = c, .kept = kept, .weight = w, .used = used};
}

static void owned_and_borrowed(void **state) {
    (void)state;
    share_tenant t = tn(4000, 8000, 0, 1, 6000);
    assert_int_equal(share_owned(&t), 4000);
    assert_int_equal(share_borrowed(&t), 2000);
    t.used = 3000;
    assert_int_equal(share_owned(&t), 3000);
    assert_int_equal(share_borrowed(&t), 0);
}

static void idle_counts_kept(void **state) {
    (void)state;
    /* A: guarantee 4, keeps 2, uses 1 (holds 2); B: uses 3; pool 8: idle 3 */
    share_tenant ts[2] = {tn(4000, 4000, 2000, 1, 1000), tn(2000, 8000, 0, 1, 3000)};
    assert_int_equal(share_idle(ts, 2, 8000), 3000);
    ts[0].used = 3000; /* above its kept part: holds what it uses */
    assert_int_equal(share_idle(ts, 2, 8000), 2000);
    assert_int_equal(share_idle(ts, 2, 5000), 0); /* never below 0 */
}

static void admission(void **state) {
    (void)state;
    share_tenant ts[2] = {tn(4000, 4000, 2000, 1, 0), tn(2000, 6000, 0, 1, 2000)};
    /* within the guarantee: owned, whatever is free */
    assert_int_equal(share_admit(ts, 2, 0, 8000, 4000), SHARE_OWNED);
    assert_int_equal(share_admit(ts, 2, 0, 8000, 4001), SHARE_NO_ROOM); /* ceiling 4000 */
    /* B above its guarantee: idle = 8 - (2 kept by A) - 2 = 4 */
    assert_int_equal(share_admit(ts, 2, 1, 8000, 4000), SHARE_BORROWED);
    assert_int_equal(share_admit(ts, 2, 1, 8000, 4001), SHARE_NO_ROOM); /* ceiling 6000 */
    assert_int_equal(share_admit(ts, 2, 1, 7000, 4000), SHARE_NO_ROOM); /* idle 3 */
    /* a tenant's own idle kept part is its own: using it needs no idle capacity */
    share_tenant k[1] = {tn(2000, 6000, 2000, 1, 0)};
    assert_int_equal(share_admit(k, 1, 0, 2000, 2000), SHARE_OWNED);
    k[0].guarantee = 2000;
    k[0].used = 1000;
    /* uses 1 of its kept 2, pool full (2): 1 more is owned, 2 more would borrow 1 */
    assert_int_equal(share_admit(k, 1, 0, 2000, 1000), SHARE_OWNED);
    assert_int_equal(share_admit(k, 1, 0, 2000, 2000), SHARE_NO_ROOM);
    assert_int_equal(share_admit(k, 1, 0, 3000, 2000), SHARE_BORROWED);
}

static void marks(void **state) {
    (void)state;
    int64_t d[] = {1000, 2000, 1000, 500};
    unsigned char b[4];
    assert_int_equal(share_mark(3000, d, 4, b), 1500);
    assert_int_equal(b[0], 0);
    assert_int_equal(b[1], 0);
    assert_int_equal(b[2], 1);
    assert_int_equal(b[3], 1);
    assert_int_equal(share_mark(0, d, 4, b), 4500);
    assert_int_equal(share_mark(100000, d, 4, b), 0);
    assert_int_equal(share_mark(0, d, 0, b), 0);
}

/* Projects' parts: a project's work is owned within its part first, then in the tenant's
 * unassigned part; what spills beyond both is borrowed (from an idle sibling's part), and with
 * no parts the marks are share_mark's (random demands). */
static void marks_with_parts(void **state) {
    (void)state;
    int64_t part[2] = {2000, 0}, used[2], d[6] = {1000, 1000, 1000, 1000, 1000, 1000};
    int proj[6] = {1, 1, 1, 1, 0, 0}; /* b's four start first, then a's two */
    unsigned char b[6];
    assert_int_equal(share_mark_parts(4000, part, 2, proj, d, 6, used, b), 2000);
    const unsigned char want[6] = {0, 0, 1, 1, 0, 0};
    for (int i = 0; i < 6; i++) assert_int_equal(b[i], want[i]);
    /* a job half in its part, half spilling: owned while the spill fits */
    int64_t d2[3] = {1500, 1000, 1000};
    int proj2[3] = {0, 0, 1};
    assert_int_equal(share_mark_parts(4000, part, 2, proj2, d2, 3, used, b), 0);
    assert_int_equal(share_mark_parts(2500, part, 2, proj2, d2, 3, used, b), 1000);
    assert_int_equal(b[2], 1);
    /* parts beyond the guarantee leave nothing unassigned */
    int64_t big[2] = {3000, 3000};
    assert_int_equal(share_unassigned(4000, 6000), 0);
    assert_int_equal(share_mark_parts(4000, big, 2, proj2, d2, 3, used, b), 0);
    assert_int_equal(share_spill(2000, 1500, 1000), 500);
    assert_int_equal(share_spill(2000, 2500, 1000), 1000);
    assert_int_equal(share_spill(2000, 0, 1000), 0);
    /* no parts: share_mark */
    unsigned seed = 7;
    for (int trial = 0; trial < 200; trial++) {
        int64_t dd[16];
        int none[16];
        unsigned char b1[16], b2[16];
        int n = (int)(rand_r(&seed) % 16);
        for (int i = 0; i < n; i++) {
            dd[i] = (int64_t)(rand_r(&seed) % 4) * 500;
            none[i] = -1;
        }
        int64_t g = (int64_t)(rand_r(&seed) % 10) * 500;
        assert_int_equal(share_mark_parts(g, NULL, 0, none, dd, n, NULL, b1), share_mark(g, dd, n, b2));
        for (int i = 0; i < n; i++) assert_int_equal(b1[i], b2[i]);
    }
}

static void fair_order_and_shares(void **state) {
    (void)state;
    share_tenant a = tn(0, 10000, 0, 1, 0), b = tn(0, 10000, 0, 2, 0);
    /* nothing borrowed: equal keys, recent use decides */
    a.recent = 1000;
    assert_true(share_borrow_key(&a, 60) > share_borrow_key(&b, 60));
    /* weight halves the key */
    a.recent = b.recent = 0;
    a.used = b.used = 2000;
    assert_int_equal(share_borrow_key(&a, 60), 2 * share_borrow_key(&b, 60));
    /* water-filling: 9 idle, weights 1:2:... */
    share_tenant ts[3] = {tn(0, 100000, 0, 1, 0), tn(0, 100000, 0, 2, 0), tn(0, 100000, 0, 1, 0)};
    int64_t want[3] = {10000, 10000, 1000}, fair[3];
    share_fair(ts, 3, want, 9000, fair);
    /* C wants 1 (capped), A and B split the other 8 as 1:2 */
    assert_int_equal(fair[2], 1000);
    assert_true(fair[1] >= 2 * fair[0] - 2 && fair[1] <= 2 * fair[0] + 2);
    assert_int_equal(fair[0] + fair[1] + fair[2], 9000);
    /* nobody given more than it wants; nothing for who wants nothing */
    int64_t want2[3] = {0, 500, 700};
    share_fair(ts, 3, want2, 9000, fair);
    assert_int_equal(fair[0], 0);
    assert_int_equal(fair[1], 500);
    assert_int_equal(fair[2], 700);
    /* what borrowers borrow now is shared too */
    ts[0].used = 6000;
    int64_t want3[3] = {6000, 6000, 0};
    share_fair(ts, 3, want3, 0, fair);
    assert_int_equal(fair[0] + fair[1], 6000);
    assert_true(fair[1] > fair[0]);
}

static void reclaim_rules(void **state) {
    (void)state;
    /* owner O (guarantee 4, uses 0); B (guarantee 1, uses 3: 2 borrowed); C (guarantee 0, uses
     * 2: 2 borrowed); pool 5: full */
    share_tenant ts[3] = {tn(4000, 4000, 0, 1, 0), tn(1000, 8000, 0, 1, 3000),
                          tn(0, 8000, 0, 1, 2000)};
    share_victim vs[] = {
        {1, 1000, 5, 100, 0}, /* B's owned job: never taken */
        {1, 1000, 5, 200, 1},
        {1, 1000, 1, 300, 1},
        {2, 1000, 5, 400, 1},
        {2, 1000, 5, 500, 1},
        {0, 1000, 0, 600, 1}, /* the owner's own: never taken for itself */
    };
    int nv = 6, pick[6], npick, tmp[6];
    int64_t fair[3] = {0, 1000, 1000};
    /* over shares equal (1 each): lowest priority first (B's priority-1 job), then newest */
    assert_int_equal(share_reclaim(ts, 3, 0, 2000, vs, nv, fair, pick, &npick, tmp), 1);
    assert_int_equal(npick, 2);
    assert_int_equal(pick[0], 2);
    assert_int_equal(pick[1], 4);
    /* C most over its fair share: C's first, newest first */
    int64_t fair2[3] = {0, 2000, 0};
    assert_int_equal(share_reclaim(ts, 3, 0, 2000, vs, nv, fair2, pick, &npick, tmp), 1);
    assert_int_equal(pick[0], 4);
    assert_int_equal(pick[1], 3);
    /* all borrowed work frees 4, but B keeps its guarantee: at most 2 from B, 2 from C */
    assert_int_equal(share_reclaim(ts, 3, 0, 4000, vs, nv, NULL, pick, &npick, tmp), 1);
    assert_int_equal(npick, 4);
    for (int i = 0; i < npick; i++) assert_true(pick[i] != 0 && pick[i] != 5);
    /* more than that: nothing taken at all */
    assert_int_equal(share_reclaim(ts, 3, 0, 4001, vs, nv, NULL, pick, &npick, tmp), 0);
    assert_int_equal(npick, 0);
    /* a job marked borrowed whose stop would take B below its guarantee is skipped */
    ts[1].used = 1500;
    share_victim v2[] = {{1, 1000, 0, 10, 1}, {2, 1000, 5, 1, 1}};
    assert_int_equal(share_reclaim(ts, 3, 0, 1000, v2, 2, NULL, pick, &npick, tmp), 1);
    assert_int_equal(npick, 1);
    assert_int_equal(pick[0], 1);
    assert_int_equal(share_reclaim(ts, 3, 0, 0, v2, 2, NULL, pick, &npick, tmp), 1);
    assert_int_equal(npick, 0);
}

static void decay(void **state) {
    (void)state;
    /* one half-life halves, two quarter */
    assert_int_equal(share_decay(1000000, 0, 3600000000LL, 3600, 0), 500000);
    assert_int_equal(share_decay(1000000, 0, 7200000000LL, 3600, 0), 250000);
    /* borrowing adds milli x seconds */
    assert_int_equal(share_decay(0, 0, 10000000, 3600, 2000), 20000);
    /* no half-life: no memory */
    assert_int_equal(share_decay(1000000, 0, 1000000, 0, 0), 0);
    /* time going backwards adds and forgets nothing */
    assert_int_equal(share_decay(1000, 10, 5, 3600, 7), 1000);
    /* saturates */
    assert_int_equal(share_decay(INT64_MAX, 0, 1000000000000000LL, 1LL << 40, INT64_MAX / 4),
                     INT64_MAX);
}

/* ---- the property test ---- */

#define PT 5    /* tenants */
#define PJ 160  /* jobs at most */

typedef struct pjob {
    int tenant, state; /* 0 none/ended, 1 pending, 2 running */
    int64_t demand, start;
    int priority, preempted;
    unsigned char borrowed;
} pjob;

typedef struct world {
    share_tenant t[PT];
    int64_t capacity, clock;
    pjob j[PJ];
    int nj;
    int preemptions;
} world;

static int64_t used_of(const world *w, int t) {
    int64_t u = 0;
    for (int i = 0; i < w->nj; i++)
        if (w->j[i].tenant == t && w->j[i].state == 2) u += w->j[i].demand;
    return u;
}

static void refresh(world *w) {
    for (int t = 0; t < PT; t++) {
        w->t[t].used = used_of(w, t);
        int64_t room = w->t[t].guarantee - w->t[t].used, wait = 0;
        for (int i = 0; i < w->nj; i++)
            if (w->j[i].tenant == t && w->j[i].state == 1 && w->j[i].demand <= room)
                wait += w->j[i].demand;
        w->t[t].waiting = room <= 0 ? 0 : wait < room ? wait : room;
        /* re-mark: the tenant's running jobs, oldest first */
        int64_t d[PJ];
        int idx[PJ], n = 0;
        for (int i = 0; i < w->nj; i++)
            if (w->j[i].tenant == t && w->j[i].state == 2) {
                int k = n++;
                while (k > 0 && w->j[idx[k - 1]].start > w->j[i].start) {
                    idx[k] = idx[k - 1];
                    k--;
                }
                idx[k] = i;
            }
        unsigned char b[PJ];
        for (int k = 0; k < n; k++) d[k] = w->j[idx[k]].demand;
        share_mark(w->t[t].guarantee, d, n, b);
        for (int k = 0; k < n; k++) w->j[idx[k]].borrowed = b[k];
    }
}

static int64_t free_of(const world *w) {
    int64_t u = 0;
    for (int t = 0; t < PT; t++) u += w->t[t].used;
    return w->capacity - u;
}

/* One round; returns how many jobs changed state. */
static int round_once(world *w) {
    int changed = 0;
    refresh(w);
    /* owned work first, in queue order; then borrowers, fairest first */
    for (int pass = 0; pass < 2; pass++) {
        for (;;) {
            int best = -1;
            int64_t bestkey = 0;
            for (int i = 0; i < w->nj; i++) {
                pjob *j = &w->j[i];
                if (j->state != 1) continue;
                int a = share_admit(w->t, PT, j->tenant, w->capacity, j->demand);
                if (pass == 0 && a != SHARE_OWNED) continue;
                if (pass == 1 && a != SHARE_BORROWED) continue;
                if (pass == 0 && share_free_for(w->t, PT, j->tenant, w->capacity) < j->demand) {
                    /* reclaim for it */
                    share_victim vs[PJ];
                    int map[PJ], nv = 0;
                    for (int k = 0; k < w->nj; k++)
                        if (w->j[k].state == 2) {
                            vs[nv] = (share_victim){w->j[k].tenant, w->j[k].demand,
                                                    w->j[k].priority, w->j[k].start,
                                                    w->j[k].borrowed};
                            map[nv++] = k;
                        }
                    int pick[PJ], np, tmp[PJ];
                    int64_t room = share_free_for(w->t, PT, j->tenant, w->capacity);
                    if (!share_reclaim(w->t, PT, j->tenant, j->demand - room, vs, nv, NULL,
                                       pick, &np, tmp))
                        continue;
                    for (int q = 0; q < np; q++) {
                        pjob *v = &w->j[map[pick[q]]];
                        assert_true(v->borrowed);
                        v->state = 1;
                        v->preempted++;
                        w->preemptions++;
                        changed++;
                    }
                    refresh(w);
                    /* no borrower went below its guarantee */
                    for (int t = 0; t < PT; t++)
                        if (t != j->tenant) {
                            int had = 0;
                            for (int q = 0; q < np; q++) had |= vs[pick[q]].tenant == t;
                            if (had) assert_true(w->t[t].used >= w->t[t].guarantee);
                        }
                }
                if (share_free_for(w->t, PT, j->tenant, w->capacity) < j->demand) continue;
                assert_true(free_of(w) >= j->demand);
                int64_t key = pass == 0 ? (int64_t)i : share_borrow_key(&w->t[j->tenant], 600);
                if (best < 0 || key < bestkey) {
                    best = i;
                    bestkey = key;
                }
                if (pass == 0) break; /* queue order */
            }
            if (best < 0) break;
            w->j[best].state = 2;
            w->j[best].start = w->clock++;
            changed++;
            refresh(w);
        }
    }
    return changed;
}

static void invariants(const world *w) {
    int64_t sum = 0;
    for (int t = 0; t < PT; t++) {
        const share_tenant *x = &w->t[t];
        assert_true(x->used <= x->ceiling);
        sum += x->used;
    }
    assert_true(sum <= w->capacity);
    /* kept parts are never lent: what others use fits beside every idle kept part */
    int64_t held = 0;
    for (int t = 0; t < PT; t++) held += w->t[t].used > w->t[t].kept ? w->t[t].used : w->t[t].kept;
    int64_t borrowed = 0;
    for (int t = 0; t < PT; t++) borrowed += share_borrowed(&w->t[t]);
    if (borrowed > 0) assert_true(held <= w->capacity);
}

static void property(void **state) {
    (void)state;
    uint64_t r = 20261203;
    int64_t preempted = 0, borrowed_rounds = 0, kept_trials = 0;
    for (int trial = 0; trial < 300; trial++) {
        world w;
        memset(&w, 0, sizeof w);
        w.capacity = (int64_t)(4 + tu_below(&r, 28)) * 1000;
        int64_t left = w.capacity;
        for (int t = 0; t < PT; t++) {
            int64_t g = (int64_t)tu_below(&r, (uint32_t)(left / 1000 + 1)) * 1000;
            left -= g;
            int64_t c = g + (int64_t)tu_below(&r, 12) * 1000;
            int64_t kept = g ? (int64_t)tu_below(&r, (uint32_t)(g / 1000 + 1)) * 1000 : 0;
            w.t[t] = tn(g, c, kept, 1 + (int64_t)tu_below(&r, 3), 0);
        }
        for (int step = 0; step < 12; step++) {
            /* arrivals */
            int arrive = (int)tu_below(&r, 10);
            for (int a = 0; a < arrive && w.nj < PJ; a++) {
                pjob *j = &w.j[w.nj++];
                j->tenant = (int)tu_below(&r, PT);
                j->demand = (1 + (int64_t)tu_below(&r, 3)) * 1000;
                j->priority = (int)tu_below(&r, 4);
                j->state = 1;
            }
            round_once(&w);
            invariants(&w);
            for (int t = 0; t < PT; t++)
                if (share_borrowed(&w.t[t]) > 0) {
                    borrowed_rounds++;
                    break;
                }
            /* a fixed point: a second round with nothing new changes nothing */
            world again = w;
            assert_int_equal(round_once(&again), 0);
            /* exits */
            for (int i = 0; i < w.nj; i++)
                if (w.j[i].state == 2 && tu_below(&r, 4) == 0) w.j[i].state = 0;
        }
        /* with no arrivals, rounds until quiet: nobody preempted twice */
        for (int i = 0; i < w.nj; i++) w.j[i].preempted = 0;
        for (int k = 0; k < 20 && round_once(&w); k++) invariants(&w);
        for (int i = 0; i < w.nj; i++) assert_true(w.j[i].preempted <= 1);
        preempted += w.preemptions;
        for (int t = 0; t < PT; t++) kept_trials += w.t[t].kept > 0;
    }
    /* the workloads exercised what they test */
    assert_true(preempted > 50);
    assert_true(borrowed_rounds > 300);
    assert_true(kept_trials > 100);
}

/* The order of a job's domains (sched.h 6c, 6d, 7a): its reservation's work is its tenant's
 * own, then a class's guarantee wins over a pool's, then the tenant's own. */
static void domain_order(void **state) {
    (void)state;
    assert_int_equal(share_domain(0, -1, -1), -1);
    assert_int_equal(share_domain(0, 3, -1), 3);
    assert_int_equal(share_domain(0, -1, 5), 5);
    assert_int_equal(share_domain(0, 3, 5), 3);
    assert_int_equal(share_domain(1, 3, 5), -1);
    assert_int_equal(share_domain(1, -1, -1), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(owned_and_borrowed),
        cmocka_unit_test(idle_counts_kept),
        cmocka_unit_test(admission),
        cmocka_unit_test(marks),
        cmocka_unit_test(marks_with_parts),
        cmocka_unit_test(fair_order_and_shares),
        cmocka_unit_test(reclaim_rules),
        cmocka_unit_test(decay),
        cmocka_unit_test(property),
        cmocka_unit_test(domain_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
