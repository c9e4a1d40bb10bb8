/*
 * reserve.h - advance reservations (issue 23, item 4): whether a placement
 * may happen now given the reservations ahead, what blocks a job, and the
 * reserved-but-unused time of a window.  Pure and deterministic (no I/O, no
 * globals, no allocation).
 *
 * A reservation holds, from T1 to T2,
 *   - NAMED NODES (every card of them), or
 *   - a COUNT of cards that pass a class's rules in one pool (any of them:
 *     the scheduler keeps that many free for the holder at T1),
 * for a tenant (and, optionally, one of its projects), or for nobody: a
 * maintenance window, whose nodes are drained before T1 and cordoned in it.
 *
 * Rules (docs/scheduling.md, "Reservations"):
 *   1. Before T1, work that is not the reservation's is placed on what the
 *      reservation will hold only if it ends by T1 by its time limit; work
 *      with no time limit is not placed there at all.  So the window starts
 *      on time without stopping anything.  For a count, "what it will hold"
 *      is any matching card of the pool once the cards busy at T1 (running
 *      work that ends after T1, or has no limit) would leave fewer than the
 *      count free.
 *   2. From T1 to T2 only work naming the reservation runs there, and only
 *      such work of its holder: for a count, the other work of the pool
 *      keeps the cards beyond the count.  Maintenance admits nobody.
 *   3. Work naming a reservation runs only in its window, on its cards
 *      (a count: at most the count), and must end by T2 by its time limit
 *      (no limit: it is stopped at T2).
 *   4. After T2 the reservation no longer counts.
 */
#ifndef GP_SCHED_RESERVE_H
#define GP_SCHED_RESERVE_H

#include <stdint.h>

/* One reservation, as the scheduler's snapshot holds it. */
typedef struct rsv {
    int64_t t1_us, t2_us;          /* t1 < t2 */
    int tenant;                    /* holder's index; -1: nobody (maintenance) */
    int project;                   /* -1: any project of the tenant */
    const unsigned char *node_in;  /* [nnodes]: named nodes; NULL: a count */
    int pool;                      /* a count: the pool (index) */
    int count;                     /* a count: cards held (> 0) */
    const unsigned char *card_ok;  /* a count: [ngpus], 1 where a card passes the class's rules */
} rsv;

/* The work to place. */
typedef struct rsv_job {
    int tenant, project;
    int reservation;      /* index of the reservation it names; -1: none */
    int64_t time_limit_s; /* 0: none */
} rsv_job;

/*
 * What the pool's running work does to a count reservation, as the caller
 * counts it from its snapshot: matching cards of the pool in all, those
 * busy now with work not the reservation's and still busy at T1 (no limit,
 * or ending after T1), and those the reservation's own work holds now.
 */
typedef struct rsv_count_use {
    int cards;          /* matching, allocatable cards of the pool */
    int busy_at_t1;     /* by other work that runs past T1 */
    int busy_other_now; /* by other work, now */
    int busy_own_now;   /* by work naming the reservation, now */
    /*
     * A count of a class of slices (MIG or shared) holds whole cards too: a card counts as
     * busy for the reservation's own work, for other work, or for other work running past
     * T1 while at least one of its slices is so held, however many.  slices[3 * g + w]
     * (w: 0 own, 1 other now, 2 other past T1) is how many slices of card g each holds,
     * and the busy_* figures above count cards; a unit on a card already counted adds no
     * card.  NULL for a class of whole cards (a unit's cards are its own).
     */
    const unsigned short *slices;
} rsv_count_use;

enum {
    RSV_OK = 0,
    RSV_BLOCKED = 1,    /* a reservation ahead or in force keeps it out: *blocker says which */
    RSV_NOT_YET = 2,    /* it names a reservation whose window has not begun */
    RSV_OVER = 3,       /* it names a reservation whose window is over */
    RSV_NOT_HOLDER = 4, /* it names a reservation held by someone else (or maintenance) */
    RSV_OUTSIDE = 5,    /* it names a reservation and this is not its node or card */
    RSV_TOO_LONG = 6,   /* its time limit runs past the window's end */
    RSV_FULL = 7        /* it names a count reservation whose cards are in use */
};

/* Does job j's owner hold reservation r (tenant, and project if r names one)? */
int rsv_holds(const rsv *r, const rsv_job *j);

/*
 * May job j take `k` cards `gpus[0..k)` of node `node` (pool `pool`) at
 * now_us, given reservations rs[0..n) and, for each, use[i] (only read for
 * count reservations; may be NULL when there are none)?  Returns RSV_OK or
 * the first reason it may not; on RSV_BLOCKED *blocker is the reservation's
 * index (else -1).
 */
int rsv_allows(const rsv *rs, int n, const rsv_count_use *use, const rsv_job *j, int node,
               int pool, const int *gpus, int k, int64_t now_us, int *blocker);

/*
 * The part of rsv_allows that does not depend on where: may job j, which names a
 * reservation, take `cards` more cards in it at now_us (its holder, its window begun and not
 * over, its limit ending by T2, a count with room)?  RSV_OK or the reason (RSV_NOT_HOLDER,
 * RSV_OVER, RSV_NOT_YET, RSV_TOO_LONG, RSV_FULL); RSV_OK for a job naming none.
 */
int rsv_named_check(const rsv *rs, int n, const rsv_count_use *use, const rsv_job *j, int cards,
                    int64_t now_us);

/*
 * When job j's wait for reservation rs[i] ends at the latest: T1 for its
 * own reservation (j->reservation == i) not yet begun, T2 for one that keeps
 * it out.  0 once the window is over.
 */
int64_t rsv_blocked_until(const rsv *rs, int i, const rsv_job *j, int64_t now_us);

/*
 * The reserved-but-unused card-seconds of a window from `from_us` to
 * `to_us` (clipped to [T1, T2)): the reservation's cards (named nodes:
 * `cards`; a count: r->count) times that span, less what its own work used
 * in it: used[0..nused) card intervals {start, end (0: still running)},
 * clipped to the span and capped at the cards held at each moment (work
 * beyond the count is not credited twice).  Never below 0.
 */
typedef struct rsv_use_span {
    int64_t start_us, end_us;
    int cards;
} rsv_use_span;
int64_t rsv_unused_card_s(const rsv *r, int cards, const rsv_use_span *used, int nused,
                          int64_t from_us, int64_t to_us);

/* ---- recurrence (pure): a reservation's occurrences ----
 *
 * A reservation is one window [T1, T2), or a window that repeats, up to a
 * horizon: every day, every week, on given weekdays (UTC) at T1's time of
 * day, or every N seconds.  An occurrence is the first window moved by a
 * whole number of periods (weekdays: of days, on the days named), starting
 * before the horizon `until`.  Occurrences never overlap: the window is at
 * most one period long (rsv_rule_check).
 */
enum { RSV_ONCE = 0, RSV_DAILY = 1, RSV_WEEKLY = 2, RSV_WEEKDAYS = 3, RSV_EVERY = 4 };

typedef struct rsv_rule {
    int64_t t1_us, t2_us; /* the first occurrence */
    int kind;             /* RSV_ONCE .. RSV_EVERY */
    unsigned weekdays;    /* RSV_WEEKDAYS: bit d for weekday d, 0 = Monday .. 6 = Sunday (UTC) */
    int64_t every_s;      /* RSV_EVERY: the period, seconds */
    int64_t until_us;     /* recurring: occurrences start before it */
} rsv_rule;

typedef struct rsv_span {
    int64_t t1_us, t2_us;
} rsv_span;

/* NULL when the rule is sound, else why not (a static string). */
const char *rsv_rule_check(const rsv_rule *r);

/* The weekday of a time (UTC): 0 = Monday .. 6 = Sunday. */
int rsv_weekday(int64_t us);

/*
 * The occurrences that end after `from_us` and start before `to_us`, in time
 * order: the first `max` of them written to out[] (out may be NULL with max
 * 0).  Returns how many there are in all (at most `max` + 1 are looked for
 * past `max`: a caller learns "more" without walking a long horizon).
 */
int rsv_occurrences(const rsv_rule *r, int64_t from_us, int64_t to_us, rsv_span *out, int max);

/* The occurrence in force at `at_us`, else the next one: 1 with *out, 0 when none is left. */
int rsv_current(const rsv_rule *r, int64_t at_us, rsv_span *out);

/* The occurrence that holds `at_us` (t1 <= at < t2): 1 with *out, else 0. */
int rsv_occurrence_at(const rsv_rule *r, int64_t at_us, rsv_span *out);

/* The last occurrence that began at or before `at_us`: 1 with *out, else 0. */
int rsv_last(const rsv_rule *r, int64_t at_us, rsv_span *out);

/* ---- overlaps between reservations (pure) ----
 *
 * Reservations may not hold the same thing at the same time (docs/scheduling.md,
 * "Reservations", "No two on the same cards"): two that name a node both may not have
 * occurrences that overlap, and the counts of a pool's cards of a class held at any moment
 * (counts of that class in that pool, and the cards of that class on named nodes of the pool)
 * may not add up to more than the pool has.  Both are one question, asked of a group of
 * `cards` cards: does a new reservation (`mine`, taking `mine_cards` of them in each of its
 * occurrences) together with the others in force at some moment take more than `cards`?
 * A node shared by two is the group {that node} of one card that each takes whole.
 */
typedef struct rsv_load {
    rsv_rule rule;
    int cards; /* what it takes of the group while in force (0: nothing) */
} rsv_load;

enum { RSV_WALK_MAX = 200000 }; /* moments looked at, at most, before giving up */

/*
 * The first moment, from `from_us` on, inside an occurrence of `mine`, where mine_cards and
 * the cards of the others[0..n) in force then add up to more than `cards`.  Returns 1 with
 * *who (the index of one of the others in force then: the one in force longest, ties to the
 * lowest index), *at (from that moment to the first end among mine's occurrence and *who's),
 * *load (what the others in force then take, together); 0 when there is no such moment; -1
 * when the occurrences are too many to walk (RSV_WALK_MAX moments: the caller refuses).
 */
int rsv_peak_over(const rsv_rule *mine, int mine_cards, const rsv_load *others, int n,
                  int cards, int64_t from_us, int *who, rsv_span *at, int *load);

/* "2026-12-01T10:00:00Z" (seconds, UTC) into buf (>= 24 bytes). */
void rsv_fmt_time(int64_t us, char *buf, unsigned long n);

#endif
