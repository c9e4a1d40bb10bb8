/*
 * runtime.c - the gateway's state while it serves (see gateway.h, "run
 * time"): per-minute rate windows per key and project, the queue of usage
 * records written in batches, and a background thread that flushes that
 * queue, health-checks endpoints and releases stale token holds.
 *
 * Rate windows are shared by every process on the store (several servers,
 * `gpupool gateway`s): about once a second each one writes its own counts
 * of the windows that carry a limit (table rate_counts, one row per scope,
 * id, minute and process) and reads the sum of the others', which
 * admission adds to its own.  Limits hold across processes to within what
 * arrives in that second.
 *
 * Requests in flight per key (max_parallel) are counted here too, and shared
 * the same way (rows of scope 'c', requests = this process's count now): a
 * key's limit holds across processes to within what starts in that second.
 *
 * Endpoints (issue 22): an endpoint is marked unhealthy only after
 * eject_after checks in a row failed, and one that failed eject_after
 * requests in a row here is ejected from this process's routing for
 * eject_ms (gw_rt_usable); when every endpoint of a model is down or
 * ejected, requests try them anyway (gw_route_order's panic mode).
 * An endpoint's max_concurrency bounds the requests this process has in
 * flight to it; a request finding every slot taken waits in the endpoint's
 * line (first come, first served; at most max_queue waiting, each at most
 * queue_wait_ms), and a slot given back goes straight to the first in line
 * (gw_rt_ep_enter / gw_rt_ep_leave).
 *
 * Token leases (issue 22: no store write per request): each process keeps,
 * per key and month, a lease of the quotas (a hold, gw_hold_grow) and
 * admits requests against it in memory (gw_rt_lease_take); a lease that
 * cannot cover a request grows in one short write transaction, sized by
 * lease.c from its recent rate; usage batches consume it (gw_usage_write);
 * a lease untouched for LEASE_IDLE_US with nothing in flight or unwritten is
 * given back, and at stop every lease is.  Leases grow one at a time per
 * process (lease_mu), never while holding `mu`.
 *
 * The read cache (cache.c) is polled here: the store's epoch about once a
 * second.
 *
 * Store writes (issue 39): lease growths and releases, usage batches, rate
 * rows and the release of stale holds are STORE_WRITE_ROWS transactions
 * (store.h): on PostgreSQL the servers sharing the store write them side by
 * side, each waiting only for the rows it touches (ledger.c, "Row locks");
 * one the database ends (GP_EBUSY) kept nothing and is tried again (a growth
 * at once, the others at their next turn).  An endpoint's health and a
 * refusal's audit event (request.c) stay STORE_WRITE: the audit chain is
 * serialised.
 *
 * Nothing acknowledged is lost: gw_rt_record() only queues, but the
 * flusher writes at least every flush_ms, gw_rt_stop() flushes what is
 * left, and a batch that fails to commit stays queued for the next try.
 */
#include "gateway.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "gw_metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUCKETS 1024
#define HOLD_STALE_US (15LL * 60 * 1000000) /* a request in flight this long has died */
#define SHARE_US 1000000LL                  /* rate windows written and read this often */
#define MINUTE_US 60000000LL
#define EPOCH_US 1000000LL                  /* the read cache's epoch is read this often */
#define LEASE_IDLE_US (5LL * 1000000)       /* an unused lease is given back after this */
#define REFUSED_US 250000LL                 /* a refused growth is believed this long */

/* This process's lease of one key's month (see above). */
typedef struct lease_ent {
    struct lease_ent *next;
    char key_id[RND_ID_LEN], month[8], hold[RND_ID_LEN];
    gw_lease l;
    int growing;             /* requests between the steps of growing it: kept */
    int64_t refused_until_us; /* the quotas refused a growth: believed until then ... */
    gw_room refused;          /* ... with what they left */
} lease_ent;

typedef struct rate_ent {
    struct rate_ent *next;
    char scope;              /* 'k' key, 'p' project */
    char id[RND_ID_LEN];
    gw_window req, tok;      /* this process's counts */
    gw_window oreq, otok;    /* the other processes' (shared through the store) */
    int limited;             /* a limit applies: the counts are shared */
    int64_t refused_minute[GW_REFUSE__N]; /* minute (+1) of the last audited refusal, by kind */
    int64_t refused_quiet[GW_REFUSE__N];  /* refusals not audited since */
    int dirty;               /* counted since the last share */
    int shared;              /* oreq/otok come from the store */
    int64_t inflight;        /* requests of this key in flight here (scope 'k') */
    int64_t oinflight;       /* ... in the other processes, as last shared */
    int parallel_limited;    /* a max_parallel applies: the count is shared */
    int parallel_dirty;      /* inflight changed since the last share */
} rate_ent;

typedef struct ep_ent {
    struct ep_ent *next;
    char id[RND_ID_LEN];
    int fails;               /* requests in a row that failed here */
    int check_fails;         /* health checks in a row that failed (the leader's) */
    int64_t ejected_until;   /* wall clock, us; 0: not ejected */
    int inflight;            /* requests holding one of its slots here */
    struct ep_waiter *head, *tail; /* the line for a slot, first come first */
    int waiting;             /* in the line */
} ep_ent;

/* A request in an endpoint's line: handed a slot (granted) or gone when its wait ran out. */
typedef struct ep_waiter {
    struct ep_waiter *next;
    pthread_cond_t cv;
    int granted;
} ep_waiter;

struct gw_runtime {
    store_t *store;
    gw_runtime_config cfg;
    pthread_mutex_t mu;      /* rate table and queue */
    rate_ent *buckets[NBUCKETS];
    gw_usage *q;             /* queued usage records */
    size_t nq, capq;
    pthread_cond_t cv;
    pthread_t thread;
    int running, stopping;
    unsigned long rr;        /* round-robin counter */
    int64_t next_health_us, next_holds_us, next_share_us;
    char process[RND_ID_LEN]; /* this run, in rate_counts */
    /* counters for /metrics (under mu) */
    uint64_t refusals[GW_REFUSE__N], refusals_audited[GW_REFUSE__N], clipped;
    uint64_t retrievals;     /* knowledge-base queries made for requests */
    ep_ent *eps[NBUCKETS];   /* endpoints' failure counts (under mu) */
    uint64_t ejections, panics;
    uint64_t ep_queued, ep_busy; /* requests that waited in an endpoint's line / found it full */
    lease_ent *leases[NBUCKETS]; /* under mu */
    lease_ent *releasing;    /* unlinked, to give back (under lease_mu) */
    pthread_mutex_t lease_mu; /* one growth or release at a time; taken before mu */
    uint64_t lease_grows, lease_releases, lease_refusals;
    int64_t next_epoch_us;
    gw_cache *cache;
};

static unsigned hash(char scope, const char *id) {
    unsigned h = 2166136261u ^ (unsigned char)scope;
    for (; *id; id++) h = (h ^ (unsigned char)*id) * 16777619u;
    return h % NBUCKETS;
}

/* The windows of (scope, id), created on first use; NULL when out of memory. Locked. */
static rate_ent *ent(gw_runtime *rt, char scope, const char *id) {
    unsigned h = hash(scope, id);
    for (rate_ent *e = rt->buckets[h]; e; e = e->next)
        if (e->scope == scope && !strcmp(e->id, id)) return e;
    rate_ent *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->scope = scope;
    snprintf(e->id, sizeof e->id, "%s", id);
    e->next = rt->buckets[h];
    rt->buckets[h] = e;
    return e;
}

int gw_rt_admit(gw_runtime *rt, const gw_key *k, int64_t tokens, int64_t now_us,
                int64_t *retry_after_s, char *why, size_t why_len) {
    pthread_mutex_lock(&rt->mu);
    rate_ent *ke = ent(rt, 'k', k->id), *pe = ent(rt, 'p', k->project_id);
    int ok = 1;
    const char *what = "";
    if (!ke || !pe) {
        pthread_mutex_unlock(&rt->mu);
        *retry_after_s = 1;
        snprintf(why, why_len, "out of memory");
        return 0;
    }
    int64_t prpm = k->project_rpm < 0 ? 0 : k->project_rpm;
    int64_t ptpm = k->project_tpm < 0 ? 0 : k->project_tpm;
    /* this process's counts and the others' */
    gw_window kr = gw_window_merge(&ke->req, &ke->oreq, now_us);
    gw_window pr = gw_window_merge(&pe->req, &pe->oreq, now_us);
    gw_window kt = gw_window_merge(&ke->tok, &ke->otok, now_us);
    gw_window pt = gw_window_merge(&pe->tok, &pe->otok, now_us);
    if (!gw_window_allows(&kr, now_us, 1, k->rpm, retry_after_s)) ok = 0, what = "requests per minute of this key";
    else if (!gw_window_allows(&pr, now_us, 1, prpm, retry_after_s)) ok = 0, what = "requests per minute of the project";
    else if (!gw_window_allows(&kt, now_us, tokens, k->tpm, retry_after_s)) ok = 0, what = "tokens per minute of this key";
    else if (!gw_window_allows(&pt, now_us, tokens, ptpm, retry_after_s)) ok = 0, what = "tokens per minute of the project";
    if (ok) {
        gw_window_add(&ke->req, now_us, 1);
        gw_window_add(&pe->req, now_us, 1);
        gw_window_add(&ke->tok, now_us, tokens);
        gw_window_add(&pe->tok, now_us, tokens);
        ke->limited |= k->rpm > 0 || k->tpm > 0;
        pe->limited |= prpm > 0 || ptpm > 0;
        ke->dirty = pe->dirty = 1;
    } else {
        snprintf(why, why_len, "%s", what);
    }
    pthread_mutex_unlock(&rt->mu);
    return ok;
}

void gw_rt_adjust(gw_runtime *rt, const gw_key *k, int64_t token_delta, int64_t now_us) {
    pthread_mutex_lock(&rt->mu);
    rate_ent *ke = ent(rt, 'k', k->id), *pe = ent(rt, 'p', k->project_id);
    if (ke) {
        gw_window_add(&ke->tok, now_us, token_delta);
        ke->dirty = 1;
    }
    if (pe) {
        gw_window_add(&pe->tok, now_us, token_delta);
        pe->dirty = 1;
    }
    pthread_mutex_unlock(&rt->mu);
}

int gw_rt_enter(gw_runtime *rt, const gw_key *k, int64_t *in_flight) {
    pthread_mutex_lock(&rt->mu);
    rate_ent *ke = ent(rt, 'k', k->id);
    int ok = ke != NULL;
    if (ke) {
        int64_t all = gw_sat_add(ke->inflight, ke->oinflight);
        if (k->max_parallel > 0) ke->parallel_limited = 1;
        if (k->max_parallel > 0 && all >= k->max_parallel) ok = 0;
        else ke->inflight++, ke->parallel_dirty = 1;
        *in_flight = all;
    }
    pthread_mutex_unlock(&rt->mu);
    return ok;
}

void gw_rt_leave(gw_runtime *rt, const char *key_id) {
    pthread_mutex_lock(&rt->mu);
    rate_ent *ke = ent(rt, 'k', key_id);
    if (ke && ke->inflight > 0) ke->inflight--, ke->parallel_dirty = 1;
    pthread_mutex_unlock(&rt->mu);
}

/* ---- leases ---- */

/* The lease of (key, month), created on first use; NULL when out of memory. Locked. */
static lease_ent *lease_get(gw_runtime *rt, const char *key_id, const char *month) {
    unsigned h = hash('l', key_id);
    for (lease_ent *e = rt->leases[h]; e; e = e->next)
        if (!strcmp(e->key_id, key_id) && !strcmp(e->month, month)) return e;
    lease_ent *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    snprintf(e->key_id, sizeof e->key_id, "%s", key_id);
    snprintf(e->month, sizeof e->month, "%s", month);
    rnd_id(e->hold);
    e->next = rt->leases[h];
    rt->leases[h] = e;
    return e;
}

/* The lease that hold `hold` of key `key_id` is, or NULL. Locked. */
static lease_ent *lease_find(gw_runtime *rt, const char *key_id, const char *hold) {
    for (lease_ent *e = rt->leases[hash('l', key_id)]; e; e = e->next)
        if (!strcmp(e->hold, hold)) return e;
    return NULL;
}

/* The refusal of a request asking `amount` when the quotas left `r` (ledger.c's words: "held"
 * is what the gateways hold, for requests being served and ahead of them in their leases). */
static int quota_refusal(gp_err *err, const gw_room *r, int64_t amount) {
    return gp_err_set(err, GP_EFORBIDDEN,
                      "You exceeded %s monthly token quota of %lld tokens: %lld are used this "
                      "month and %lld are held for requests being served, so the %lld this "
                      "request needs do not fit.",
                      r->what ? r->what : "a", (long long)r->quota, (long long)r->used,
                      (long long)r->reserved, (long long)amount);
}

int gw_rt_lease_take(gw_runtime *rt, const gw_key *k, int64_t amount, int64_t now_us,
                     char hold[RND_ID_LEN], gp_err *err) {
    int64_t units;
    return gw_rt_lease_take_fit(rt, k, amount, 0, 0, now_us, hold, &units, err);
}

/* base + per x units, saturating. */
static int64_t fit_amount(int64_t base, int64_t per, int64_t units) {
    return gw_tokens_clamp(gw_sat_add(base, gw_sat_mul(per, units)));
}

int gw_rt_lease_take_fit(gw_runtime *rt, const gw_key *k, int64_t base, int64_t per, int64_t want,
                         int64_t now_us, char hold[RND_ID_LEN], int64_t *units, gp_err *err) {
    char month[8];
    gw_month(now_us, month);
    base = gw_tokens_clamp(base);
    per = gw_tokens_clamp(per);
    want = gw_tokens_clamp(want);
    *units = want;
    int64_t amount = fit_amount(base, per, want);
    /* the least the request can run with: one token per answer */
    int64_t least = fit_amount(base, per, per && want ? 1 : want);
    pthread_mutex_lock(&rt->mu);
    lease_ent *e = lease_get(rt, k->id, month);
    if (!e) {
        pthread_mutex_unlock(&rt->mu);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    if (gw_lease_take(&e->l, amount, now_us)) { /* the common case: no store at all */
        snprintf(hold, RND_ID_LEN, "%s", e->hold);
        pthread_mutex_unlock(&rt->mu);
        return GP_OK;
    }
    if (now_us < e->refused_until_us && gw_sat_add(least, -e->l.avail) > e->refused.room) {
        gw_room r = e->refused; /* refused a moment ago, and nothing came back since */
        rt->lease_refusals++;
        pthread_mutex_unlock(&rt->mu);
        return quota_refusal(err, &r, least);
    }
    e->growing++;
    pthread_mutex_unlock(&rt->mu);
    pthread_mutex_lock(&rt->lease_mu);
    int rc = GP_OK, done = 0;
    for (int tries = 0; tries < 4 && !done && !rc; tries++) {
        pthread_mutex_lock(&rt->mu);
        done = gw_lease_take(&e->l, amount, now_us); /* another request grew it meanwhile */
        pthread_mutex_unlock(&rt->mu);
        if (done) break;
        store_tx *tx;
        if ((rc = store_begin(rt->store, STORE_WRITE_ROWS, &tx, err))) break;
        gw_room room;
        int64_t grant = 0, fit = -1, held = 0;
        rc = gw_quota_room(tx, k, e->hold, now_us, &room, err); /* rows locked till the end */
        if (!rc) {
            pthread_mutex_lock(&rt->mu);
            /* the most the lease plus the quotas' room can cover: all of `want`, or less */
            fit = gw_budget_fit(base, per, want, gw_sat_add(e->l.avail, gw_tokens_clamp(room.room)));
            if (fit >= 0) {
                *units = fit;
                amount = fit_amount(base, per, fit);
                grant = gw_lease_size(&rt->cfg.lease, &e->l, amount, room.room, now_us);
            }
            if (fit < 0 || (!grant && e->l.avail < amount)) {
                fit = -1;
                e->refused_until_us = now_us + REFUSED_US;
                e->refused = room;
                rt->lease_refusals++;
            } else if (e->l.avail > 0) {
                /* what the lease has now is this request's while the grant is written: the
                 * requests that take without the store would otherwise spend it meanwhile,
                 * and this one, having counted it, would find too little after its commit
                 * (held goes back to the lease below, with the grant, or on failure) */
                held = e->l.avail < amount ? e->l.avail : amount;
                e->l.avail -= held;
            }
            pthread_mutex_unlock(&rt->mu);
            if (fit < 0) {
                store_rollback(tx);
                rc = quota_refusal(err, &room, least);
                break;
            }
            /* no grant: what is left of the lease covers the smaller request */
            if (grant) rc = gw_hold_grow(tx, k, e->hold, grant, now_us, err);
        }
        if (!rc && grant) rc = store_commit(tx, err);
        else store_rollback(tx);
        pthread_mutex_lock(&rt->mu);
        e->l.avail = gw_sat_add(e->l.avail, held);
        if (rc) {
            pthread_mutex_unlock(&rt->mu);
            /* the database ended the transaction (store.h: a deadlock or a serialization
             * failure) and kept nothing of it: try again */
            if (rc == GP_EBUSY && tries < 3) {
                gp_err_clear(err);
                rc = GP_OK;
                continue;
            }
            break;
        }
        e->l.avail = gw_sat_add(e->l.avail, grant);
        e->refused_until_us = 0;
        if (grant) rt->lease_grows++;
        done = gw_lease_take(&e->l, amount, now_us);
        pthread_mutex_unlock(&rt->mu);
    }
    pthread_mutex_unlock(&rt->lease_mu);
    pthread_mutex_lock(&rt->mu);
    e->growing--;
    pthread_mutex_unlock(&rt->mu);
    if (!rc && !done) rc = gp_err_set(err, GP_EBUSY, "the token lease is in demand; try again");
    if (!rc) snprintf(hold, RND_ID_LEN, "%s", e->hold);
    return rc;
}

void gw_rt_lease_end(gw_runtime *rt, const char *key_id, const char *hold, int64_t reserved,
                     int64_t used) {
    pthread_mutex_lock(&rt->mu);
    lease_ent *e = lease_find(rt, key_id, hold);
    if (e) gw_lease_end(&e->l, reserved, used);
    pthread_mutex_unlock(&rt->mu);
}

/*
 * Give back the leases idle for LEASE_IDLE_US, or of a past month with
 * nothing in flight (all of them: `all`, at stop), in one write transaction.
 * A failed one is tried again next time.
 */
static int release_leases(gw_runtime *rt, int all, gp_err *err) {
    int64_t now = gt_now_us();
    char month[8];
    gw_month(now, month);
    pthread_mutex_lock(&rt->lease_mu);
    pthread_mutex_lock(&rt->mu);
    for (int b = 0; b < NBUCKETS; b++)
        for (lease_ent **pp = &rt->leases[b]; *pp;) {
            lease_ent *e = *pp;
            int old = strcmp(e->month, month) != 0;
            if (all || (!e->growing && (gw_lease_idle(&e->l, now, LEASE_IDLE_US) ||
                                        (old && gw_lease_idle(&e->l, now, 0))))) {
                *pp = e->next;
                e->next = rt->releasing;
                rt->releasing = e;
            } else {
                pp = &e->next;
            }
        }
    pthread_mutex_unlock(&rt->mu);
    int rc = GP_OK;
    if (rt->releasing) {
        size_t nh = 0;
        for (lease_ent *e = rt->releasing; e; e = e->next) nh++;
        const char **holds = malloc(nh * sizeof *holds);
        store_tx *tx = NULL;
        rc = holds ? GP_OK : gp_err_set(err, GP_ENOMEM, NULL);
        nh = 0;
        for (lease_ent *e = rt->releasing; e && holds; e = e->next) holds[nh++] = e->hold;
        if (!rc) rc = store_begin(rt->store, STORE_WRITE_ROWS, &tx, err);
        if (!rc) rc = gw_holds_release(tx, holds, nh, err);
        if (!rc) rc = store_commit(tx, err);
        else if (tx) store_rollback(tx);
        free(holds);
        if (!rc) {
            for (lease_ent *e = rt->releasing, *n; e; e = n) {
                n = e->next;
                free(e);
                rt->lease_releases++;
            }
            rt->releasing = NULL;
        }
    }
    pthread_mutex_unlock(&rt->lease_mu);
    return rc;
}

/* The failure counts of endpoint `id`, created on first use; NULL when out of memory. Locked. */
static ep_ent *ep(gw_runtime *rt, const char *id) {
    unsigned h = hash('e', id);
    for (ep_ent *e = rt->eps[h]; e; e = e->next)
        if (!strcmp(e->id, id)) return e;
    ep_ent *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    snprintf(e->id, sizeof e->id, "%s", id);
    e->next = rt->eps[h];
    rt->eps[h] = e;
    return e;
}

void gw_rt_usable(gw_runtime *rt, const gw_route *r, int64_t now_us,
                  int usable[GW_MAX_ENDPOINTS]) {
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < r->n && i < GW_MAX_ENDPOINTS; i++) {
        ep_ent *e = NULL;
        unsigned h = hash('e', r->ep[i].id);
        for (e = rt->eps[h]; e && strcmp(e->id, r->ep[i].id); e = e->next) {}
        usable[i] = !e || e->ejected_until <= now_us;
    }
    pthread_mutex_unlock(&rt->mu);
}

void gw_rt_endpoint_result(gw_runtime *rt, const char *ep_id, int ok, int64_t now_us) {
    int ejected = 0;
    pthread_mutex_lock(&rt->mu);
    ep_ent *e = ep_id && *ep_id ? ep(rt, ep_id) : NULL;
    if (e && ok) {
        e->fails = 0;
        e->ejected_until = 0;
    } else if (e && ++e->fails >= rt->cfg.eject_after && e->ejected_until <= now_us) {
        e->ejected_until = now_us + (int64_t)rt->cfg.eject_ms * 1000;
        e->fails = 0; /* after the ejection it gets eject_after more tries */
        rt->ejections++;
        ejected = 1;
    }
    pthread_mutex_unlock(&rt->mu);
    if (ejected) {
        char ms[24];
        snprintf(ms, sizeof ms, "%d", rt->cfg.eject_ms);
        log_kv(LOG_WARN, "endpoint ejected after consecutive failures", "endpoint", ep_id,
               "for_ms", ms, (char *)NULL);
    }
}

int gw_rt_ep_enter(gw_runtime *rt, const char *ep_id, int limit, int queue, int wait) {
    pthread_mutex_lock(&rt->mu);
    ep_ent *e = ep(rt, ep_id);
    int ok = 0;
    if (!e) {
        ok = limit <= 0; /* out of memory: unlimited endpoints still go; limited ones refuse */
    } else if (limit <= 0 || (e->inflight < limit && !e->head)) {
        e->inflight++;
        ok = 1;
    } else if (wait && queue > 0 && e->waiting < queue) {
        ep_waiter w = {.next = NULL, .granted = 0};
        pthread_cond_init(&w.cv, NULL);
        if (e->tail) e->tail->next = &w;
        else e->head = &w;
        e->tail = &w;
        e->waiting++;
        rt->ep_queued++;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = (int64_t)ts.tv_nsec + (int64_t)rt->cfg.queue_wait_ms * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        while (!w.granted && !rt->stopping)
            if (pthread_cond_timedwait(&w.cv, &rt->mu, &ts)) break;
        if (!w.granted) {
            /* the wait ran out: leave the line (a grant never comes to a waiter not in it) */
            ep_waiter **p = &e->head, *prev = NULL;
            while (*p && *p != &w) prev = *p, p = &(*p)->next;
            if (*p) {
                *p = w.next;
                if (e->tail == &w) e->tail = prev;
                e->waiting--;
            }
        }
        pthread_cond_destroy(&w.cv);
        ok = w.granted; /* a granted slot was counted by whoever handed it on */
    }
    if (!ok) rt->ep_busy++;
    pthread_mutex_unlock(&rt->mu);
    return ok;
}

void gw_rt_ep_leave(gw_runtime *rt, const char *ep_id) {
    pthread_mutex_lock(&rt->mu);
    ep_ent *e = ep(rt, ep_id);
    if (e && e->head) {
        /* the slot goes straight to the first in line: inflight stays */
        ep_waiter *w = e->head;
        e->head = w->next;
        if (!e->head) e->tail = NULL;
        e->waiting--;
        w->granted = 1;
        pthread_cond_signal(&w->cv);
    } else if (e && e->inflight > 0) {
        e->inflight--;
    }
    pthread_mutex_unlock(&rt->mu);
}

void gw_rt_count_panic(gw_runtime *rt) {
    pthread_mutex_lock(&rt->mu);
    rt->panics++;
    pthread_mutex_unlock(&rt->mu);
}

void gw_rt_count_retrieval(gw_runtime *rt) {
    pthread_mutex_lock(&rt->mu);
    rt->retrievals++;
    pthread_mutex_unlock(&rt->mu);
}

int gw_rt_refusal(gw_runtime *rt, const char *key_id, int kind, int64_t now_us,
                  int64_t *suppressed) {
    if (kind < 0 || kind >= GW_REFUSE__N) return 0;
    int64_t minute = now_us / MINUTE_US + 1;
    int audit = 0;
    *suppressed = 0;
    pthread_mutex_lock(&rt->mu);
    rt->refusals[kind]++;
    rate_ent *e = ent(rt, 'k', key_id);
    if (e && e->refused_minute[kind] != minute) {
        e->refused_minute[kind] = minute;
        *suppressed = e->refused_quiet[kind];
        e->refused_quiet[kind] = 0;
        rt->refusals_audited[kind]++;
        audit = 1;
    } else if (e) {
        e->refused_quiet[kind]++;
    }
    pthread_mutex_unlock(&rt->mu);
    return audit;
}

void gw_rt_count_clipped(gw_runtime *rt) {
    pthread_mutex_lock(&rt->mu);
    rt->clipped++;
    pthread_mutex_unlock(&rt->mu);
}

void gw_rt_metrics(gw_runtime *rt, strbuf *out) {
    static const char *const kinds[GW_REFUSE__N] = {"model_not_allowed", "rate_limit", "quota",
                                                    "parallel"};
    pthread_mutex_lock(&rt->mu);
    sb_adds(out, "# HELP gpupool_gateway_refusals_total gateway requests of a known key refused,"
                 " by reason\n# TYPE gpupool_gateway_refusals_total counter\n");
    for (int i = 0; i < GW_REFUSE__N; i++)
        sb_addf(out, "gpupool_gateway_refusals_total{reason=\"%s\"} %llu\n", kinds[i],
                (unsigned long long)rt->refusals[i]);
    sb_adds(out, "# HELP gpupool_gateway_refusals_audited_total of those, the ones written to the"
                 " audit trail (at most one per key, reason and minute)\n"
                 "# TYPE gpupool_gateway_refusals_audited_total counter\n");
    for (int i = 0; i < GW_REFUSE__N; i++)
        sb_addf(out, "gpupool_gateway_refusals_audited_total{reason=\"%s\"} %llu\n", kinds[i],
                (unsigned long long)rt->refusals_audited[i]);
    sb_addf(out, "# HELP gpupool_gateway_usage_clipped_total usage records whose upstream usage was"
                 " refused or cut down\n# TYPE gpupool_gateway_usage_clipped_total counter\n"
                 "gpupool_gateway_usage_clipped_total %llu\n", (unsigned long long)rt->clipped);
    sb_addf(out, "# HELP gpupool_gateway_retrievals_total knowledge-base queries made for gateway"
                 " requests (after every limit admitted them)\n"
                 "# TYPE gpupool_gateway_retrievals_total counter\n"
                 "gpupool_gateway_retrievals_total %llu\n", (unsigned long long)rt->retrievals);
    sb_addf(out, "# HELP gpupool_gateway_ejections_total endpoints ejected from routing after"
                 " consecutive failed requests\n# TYPE gpupool_gateway_ejections_total counter\n"
                 "gpupool_gateway_ejections_total %llu\n"
                 "# HELP gpupool_gateway_panic_total requests routed to endpoints all down or"
                 " ejected (tried anyway)\n# TYPE gpupool_gateway_panic_total counter\n"
                 "gpupool_gateway_panic_total %llu\n",
            (unsigned long long)rt->ejections, (unsigned long long)rt->panics);
    sb_addf(out, "# HELP gpupool_gateway_endpoint_queued_total requests that waited in an"
                 " endpoint's line for one of its max_concurrency slots\n"
                 "# TYPE gpupool_gateway_endpoint_queued_total counter\n"
                 "gpupool_gateway_endpoint_queued_total %llu\n"
                 "# HELP gpupool_gateway_endpoint_busy_total times an endpoint had no slot for a"
                 " request (its line full, or the wait ran out)\n"
                 "# TYPE gpupool_gateway_endpoint_busy_total counter\n"
                 "gpupool_gateway_endpoint_busy_total %llu\n",
            (unsigned long long)rt->ep_queued, (unsigned long long)rt->ep_busy);
    pthread_mutex_unlock(&rt->mu);
    pthread_mutex_lock(&rt->mu);
    sb_addf(out, "# HELP gpupool_gateway_lease_grows_total times this process grew a token lease"
                 " (a write transaction each)\n# TYPE gpupool_gateway_lease_grows_total counter\n"
                 "gpupool_gateway_lease_grows_total %llu\n"
                 "# HELP gpupool_gateway_lease_releases_total token leases given back (idle, or"
                 " at stop)\n# TYPE gpupool_gateway_lease_releases_total counter\n"
                 "gpupool_gateway_lease_releases_total %llu\n"
                 "# HELP gpupool_gateway_lease_refusals_total requests the monthly quotas"
                 " refused\n# TYPE gpupool_gateway_lease_refusals_total counter\n"
                 "gpupool_gateway_lease_refusals_total %llu\n",
            (unsigned long long)rt->lease_grows, (unsigned long long)rt->lease_releases,
            (unsigned long long)rt->lease_refusals);
    pthread_mutex_unlock(&rt->mu);
    gw_cache_metrics(rt->cache, out);
    gw_stage_render(out);
    sb_addf(out, "# HELP gpupool_store_write_tx_total store write transactions begun by this"
                 " process (all of it, not only the gateway)\n"
                 "# TYPE gpupool_store_write_tx_total counter\n"
                 "gpupool_store_write_tx_total %llu\n", store_write_tx_total());
}

gw_cache *gw_rt_cache(gw_runtime *rt) { return rt->cache; }

int gw_rt_timeout(const gw_runtime *rt) {
    return rt->cfg.upstream_timeout_s > 0 ? rt->cfg.upstream_timeout_s : 300;
}

unsigned long gw_rt_next(gw_runtime *rt) {
    return __atomic_fetch_add(&rt->rr, 1, __ATOMIC_RELAXED);
}

int gw_rt_record(gw_runtime *rt, const gw_usage *u) {
    pthread_mutex_lock(&rt->mu);
    if (rt->nq == rt->capq) {
        size_t nc = rt->capq ? rt->capq * 2 : 256;
        gw_usage *nqp = realloc(rt->q, nc * sizeof *nqp);
        if (!nqp) {
            pthread_mutex_unlock(&rt->mu);
            return GP_ENOMEM;
        }
        rt->q = nqp;
        rt->capq = nc;
    }
    rt->q[rt->nq++] = *u;
    if (rt->nq >= (size_t)rt->cfg.batch) pthread_cond_signal(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
    return GP_OK;
}

int gw_rt_flush(gw_runtime *rt, gp_err *err) {
    pthread_mutex_lock(&rt->mu);
    size_t n = rt->nq;
    gw_usage *batch = NULL;
    if (n) {
        batch = malloc(n * sizeof *batch);
        if (batch) {
            memcpy(batch, rt->q, n * sizeof *batch);
            rt->nq = 0;
        }
    }
    pthread_mutex_unlock(&rt->mu);
    if (!n) return GP_OK;
    if (!batch) return gp_err_set(err, GP_ENOMEM, NULL);
    store_tx *tx = NULL;
    int rc = store_begin(rt->store, STORE_WRITE_ROWS, &tx, err);
    if (!rc) rc = gw_usage_write_many(tx, batch, n, err);
    if (!rc) rc = store_commit(tx, err);
    else store_rollback(tx);
    if (!rc) { /* the leases those records consumed are settled */
        pthread_mutex_lock(&rt->mu);
        for (size_t i = 0; i < n; i++) {
            lease_ent *e = batch[i].lease ? lease_find(rt, batch[i].key_id, batch[i].hold) : NULL;
            if (e) gw_lease_settled(&e->l);
        }
        pthread_mutex_unlock(&rt->mu);
    }
    if (rc) {
        /* keep them for the next try, ahead of newer ones */
        pthread_mutex_lock(&rt->mu);
        gw_usage *nq = malloc((n + rt->nq + 1) * sizeof *nq);
        if (nq) {
            memcpy(nq, batch, n * sizeof *nq);
            if (rt->nq) memcpy(nq + n, rt->q, rt->nq * sizeof *nq);
            free(rt->q);
            rt->q = nq;
            rt->nq += n;
            rt->capq = rt->nq + 1;
        }
        pthread_mutex_unlock(&rt->mu);
    }
    free(batch);
    return rc;
}

/* ---- background work ---- */

typedef struct share_row {
    char scope[2];
    char id[RND_ID_LEN];
    gw_window req, tok;
    int dirty;
} share_row;

/* Append a row for (scope, id) to a growing array; NULL when out of memory. */
static share_row *share_push(share_row **rows, size_t *n, size_t *cap, char scope,
                             const char *id) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        share_row *nr = realloc(*rows, nc * sizeof *nr);
        if (!nr) return NULL;
        *rows = nr;
        *cap = nc;
    }
    share_row *r = &(*rows)[(*n)++];
    memset(r, 0, sizeof *r);
    r->scope[0] = scope;
    snprintf(r->id, sizeof r->id, "%s", id);
    return r;
}

/* The others' counts of a window, as share_windows reads them (STORE_COLS). */
#define RATE_COLUMNS(X)                                                                   \
    X(RT_SCOPE, "scope")                                                                  \
    X(RT_ID, "id")                                                                        \
    X(RT_MINUTE, "minute")                                                                \
    X(RT_REQUESTS, "SUM(requests)")                                                       \
    X(RT_TOKENS, "SUM(tokens)")
enum { RATE_COLUMNS(STORE_COL_ENUM) RT__N };

/* Write this process's limited windows that changed, then read the others' (SHARE_US). */
static int share_windows(gw_runtime *rt, gp_err *err) {
    int64_t now = gt_now_us(), m = now / MINUTE_US;
    static const gw_window zero = {0, 0, 0};
    size_t n = 0, cap = 0;
    share_row *rows = NULL;
    int rc = GP_OK, writes = 0;
    pthread_mutex_lock(&rt->mu);
    for (int b = 0; b < NBUCKETS && !rc; b++)
        for (rate_ent *e = rt->buckets[b]; e && !rc; e = e->next) {
            if (e->limited) {
                share_row *r = share_push(&rows, &n, &cap, e->scope, e->id);
                if (!r) {
                    rc = gp_err_set(err, GP_ENOMEM, NULL);
                    break;
                }
                r->req = gw_window_merge(&e->req, &zero, now); /* rolled to now */
                r->tok = gw_window_merge(&e->tok, &zero, now);
                r->dirty = e->dirty;
                writes |= e->dirty;
                e->dirty = 0;
            }
            /* requests in flight: written every time while there are any (a row of this
             * minute is what the others read), and once more when they drop to 0 */
            if (e->parallel_limited && (e->inflight > 0 || e->parallel_dirty)) {
                share_row *r = share_push(&rows, &n, &cap, 'c', e->id);
                if (!r) {
                    rc = gp_err_set(err, GP_ENOMEM, NULL);
                    break;
                }
                r->req = (gw_window){m, 0, e->inflight};
                r->dirty = writes = 1;
                e->parallel_dirty = 0;
            }
        }
    pthread_mutex_unlock(&rt->mu);
    if (rc) {
        free(rows);
        return rc;
    }
    store_tx *tx;
    /* this process's own rows (never another's: nothing to wait for), then the old rows of
     * every process, skipping those another process is deleting (PostgreSQL: SKIP LOCKED,
     * so that two never wait for each other) */
    if (writes && !(rc = store_begin(rt->store, STORE_WRITE_ROWS, &tx, err))) {
        for (size_t i = 0; i < n && !rc; i++)
            for (int back = 0; back < (rows[i].scope[0] == 'c' ? 1 : 2) && rows[i].dirty && !rc;
                 back++)
                rc = store_exec(tx, NULL, err,
                                "INSERT INTO rate_counts (scope, id, minute, process, requests,"
                                " tokens) VALUES (?,?,?,?,?,?) ON CONFLICT (scope, id, minute,"
                                " process) DO UPDATE SET requests = excluded.requests,"
                                " tokens = excluded.tokens",
                                "ssisii", rows[i].scope, rows[i].id, m - back, rt->process,
                                back ? rows[i].req.prev : rows[i].req.cur,
                                back ? rows[i].tok.prev : rows[i].tok.cur);
        if (!rc)
            rc = store_exec(tx, NULL, err,
                            store_sql(tx, "DELETE FROM rate_counts WHERE minute < ?",
                                      "DELETE FROM rate_counts WHERE ctid = ANY(ARRAY(SELECT ctid"
                                      " FROM rate_counts WHERE minute < ? FOR UPDATE SKIP LOCKED))"),
                            "i", m - 1);
        if (!rc) rc = store_commit(tx, err);
        else store_rollback(tx);
        if (rc) { /* write them again next time */
            pthread_mutex_lock(&rt->mu);
            for (size_t i = 0; i < n; i++) {
                char sc = rows[i].scope[0];
                rate_ent *e = rows[i].dirty ? ent(rt, sc == 'c' ? 'k' : sc, rows[i].id) : NULL;
                if (e && sc == 'c') e->parallel_dirty = 1;
                else if (e) e->dirty = 1;
            }
            pthread_mutex_unlock(&rt->mu);
        }
    }
    /* every window the others counted lately (a process sees what the others limit
     * before it serves that key itself), applied under the lock after */
    free(rows);
    rows = NULL;
    n = cap = 0;
    store_stmt *s = NULL;
    if (!rc && !(rc = store_begin(rt->store, STORE_READ, &tx, err))) {
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(RATE_COLUMNS) " FROM rate_counts"
                         " WHERE minute >= ? AND process <> ? GROUP BY scope, id, minute",
                         "is", m - 1, rt->process);
        int step = 0;
        while (!rc && (step = store_step(s, err)) > 0) {
            const char *sc = store_text(s, RT_SCOPE), *id = store_text(s, RT_ID);
            if (!sc || !*sc || !id) continue;
            share_row *r = share_push(&rows, &n, &cap, sc[0], id);
            if (!r) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            int cur = store_int(s, RT_MINUTE) == m;
            r->req = (gw_window){m, cur ? 0 : store_int(s, RT_REQUESTS),
                                 cur ? store_int(s, RT_REQUESTS) : 0};
            r->tok = (gw_window){m, cur ? 0 : store_int(s, RT_TOKENS),
                                 cur ? store_int(s, RT_TOKENS) : 0};
        }
        if (!rc && step < 0) rc = step;
        store_done(s);
        store_rollback(tx);
        if (!rc) {
            pthread_mutex_lock(&rt->mu);
            for (int b = 0; b < NBUCKETS; b++) /* not listed now: nobody else counted */
                for (rate_ent *e = rt->buckets[b]; e; e = e->next) {
                    if (e->shared) e->oreq = e->otok = (gw_window){m, 0, 0};
                    e->oinflight = 0;
                }
            for (size_t i = 0; i < n; i++) { /* one row per minute: two may add up */
                if (rows[i].scope[0] == 'c') { /* in flight elsewhere: this minute's rows */
                    rate_ent *e = rows[i].req.cur > 0 ? ent(rt, 'k', rows[i].id) : NULL;
                    if (e) e->oinflight = gw_sat_add(e->oinflight, rows[i].req.cur);
                    continue;
                }
                rate_ent *e = ent(rt, rows[i].scope[0], rows[i].id);
                if (!e) continue;
                if (!e->shared) e->oreq = e->otok = (gw_window){m, 0, 0};
                e->shared = 1;
                e->oreq.prev += rows[i].req.prev;
                e->oreq.cur += rows[i].req.cur;
                e->otok.prev += rows[i].tok.prev;
                e->otok.cur += rows[i].tok.cur;
            }
            pthread_mutex_unlock(&rt->mu);
        }
    }
    free(rows);
    return rc < 0 ? rc : GP_OK;
}

static void check_endpoints(gw_runtime *rt) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items = NULL;
    if (store_begin(rt->store, STORE_READ, &tx, &err)) return;
    int rc = gw_endpoint_targets(tx, &items, &err);
    store_rollback(tx);
    if (rc) return;
    size_t i;
    json_t *t;
    json_array_foreach(items, i, t) {
        const char *base = json_string_value(json_object_get(t, "base"));
        const char *path = json_string_value(json_object_get(t, "health_path"));
        const char *state = "unhealthy";
        const char *eid = json_string_value(json_object_get(t, "id"));
        /* tenants see a generic reason (no port-scan oracle); ops see the detail */
        const char *generic = "";
        char why[300] = "";
        const char *tw = json_string_value(json_object_get(t, "why"));
        if (!*base && tw) {
            generic = "job port not open";
            snprintf(why, sizeof why, "%s", tw);
        } else if (!*base) {
            generic = "job not running";
            snprintf(why, sizeof why, "its job is not running");
        } else {
            gw_endpoint ep;
            memset(&ep, 0, sizeof ep);
            snprintf(ep.base, sizeof ep.base, "%s", base);
            ep.job = *json_string_value(json_object_get(t, "job")) != '\0';
            gw_call *c;
            gp_err e2 = GP_ERR_INIT;
            if (gw_call_start(&ep, path, NULL, 0, 5, &c, &e2)) {
                generic = "unreachable";
                snprintf(why, sizeof why, "%s", e2.msg);
            } else {
                long st = gw_call_status(c);
                if (st >= 200 && st < 300) {
                    state = "healthy";
                } else {
                    generic = "bad status";
                    snprintf(why, sizeof why, "%s%s answered HTTP %ld", base, path, st);
                }
                gw_call_free(c);
            }
        }
        /* unhealthy only after eject_after failed checks in a row (a job not running: at once) */
        int fails = 0;
        pthread_mutex_lock(&rt->mu);
        ep_ent *e = ep(rt, eid);
        if (e) fails = strcmp(state, "healthy") ? ++e->check_fails : (e->check_fails = 0);
        pthread_mutex_unlock(&rt->mu);
        if (*base && strcmp(state, "healthy") && e && fails < rt->cfg.eject_after) continue;
        if (store_begin(rt->store, STORE_WRITE, &tx, &err) == 0) {
            int r2 = gw_endpoint_set_state(tx, eid, state, generic, why, &err);
            if (r2) store_rollback(tx);
            else r2 = store_commit(tx, &err);
            if (r2) log_kv(LOG_WARN, "cannot record an endpoint check", "detail", err.msg, (char *)NULL);
            gp_err_clear(&err);
        }
    }
    json_decref(items);
}

static void expire_holds(gw_runtime *rt) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int n = 0;
    if (store_begin(rt->store, STORE_WRITE_ROWS, &tx, &err)) return;
    if (gw_expire_holds(tx, gt_now_us() - HOLD_STALE_US, &n, &err)) {
        store_rollback(tx);
        return;
    }
    if (store_commit(tx, &err) == 0 && n) {
        char c[16];
        snprintf(c, sizeof c, "%d", n);
        log_kv(LOG_WARN, "released stale token reservations", "count", c, (char *)NULL);
    }
}

static void *rt_main(void *arg) {
    gw_runtime *rt = arg;
    int64_t next_flush = gt_mono_us() + (int64_t)rt->cfg.flush_ms * 1000;
    pthread_mutex_lock(&rt->mu);
    while (!rt->stopping) {
        /* wake for the next flush, or sooner for the once-a-second work (epoch, shares) */
        int wait_ms = rt->cfg.flush_ms < 250 ? rt->cfg.flush_ms : 250;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)wait_ms * 1000000;
        ts.tv_sec += ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        if (rt->nq < (size_t)rt->cfg.batch) pthread_cond_timedwait(&rt->cv, &rt->mu, &ts);
        if (rt->stopping) break;
        int flush = rt->nq >= (size_t)rt->cfg.batch || gt_mono_us() >= next_flush;
        pthread_mutex_unlock(&rt->mu);
        gp_err err = GP_ERR_INIT;
        if (flush) {
            if (gw_rt_flush(rt, &err))
                log_kv(LOG_WARN, "usage records not written yet; will retry", "detail", err.msg,
                       (char *)NULL);
            next_flush = gt_mono_us() + (int64_t)rt->cfg.flush_ms * 1000;
        }
        int64_t now = gt_mono_us();
        if (now >= rt->next_share_us) {
            gp_err_clear(&err);
            if (share_windows(rt, &err))
                log_kv(LOG_WARN, "rate windows not shared this time", "detail", err.msg,
                       (char *)NULL);
            rt->next_share_us = now + SHARE_US;
            gp_err_clear(&err);
            if (release_leases(rt, 0, &err))
                log_kv(LOG_WARN, "token leases not given back yet; will retry", "detail", err.msg,
                       (char *)NULL);
        }
        if (now >= rt->next_epoch_us) {
            gp_err_clear(&err);
            if (gw_cache_poll(rt->cache, &err))
                log_kv(LOG_WARN, "the gateway's read cache cannot check for changes", "detail",
                       err.msg, (char *)NULL);
            rt->next_epoch_us = now + EPOCH_US;
        }
        if (rt->cfg.leads && !rt->cfg.leads(rt->cfg.leads_arg)) {
            pthread_mutex_lock(&rt->mu);
            continue;
        }
        if (rt->cfg.health_interval_s > 0 && now >= rt->next_health_us) {
            check_endpoints(rt);
            rt->next_health_us = now + (int64_t)rt->cfg.health_interval_s * 1000000;
        }
        if (now >= rt->next_holds_us) {
            expire_holds(rt);
            rt->next_holds_us = now + 60LL * 1000000;
        }
        pthread_mutex_lock(&rt->mu);
    }
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

int gw_rt_start(store_t *st, const gw_runtime_config *cfg, gw_runtime **out, gp_err *err) {
    gw_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return gp_err_set(err, GP_ENOMEM, NULL);
    rt->store = st;
    rt->cfg = *cfg;
    rnd_id(rt->process);
    if (rt->cfg.flush_ms <= 0) rt->cfg.flush_ms = 200;
    if (rt->cfg.batch <= 0) rt->cfg.batch = 256;
    if (rt->cfg.eject_after <= 0) rt->cfg.eject_after = 3;
    if (rt->cfg.eject_ms <= 0) rt->cfg.eject_ms = 30000;
    if (rt->cfg.queue_wait_ms <= 0) rt->cfg.queue_wait_ms = 30000;
    /* tuning for tests and benchmarks (docs/gateway.md): how often usage is written */
    const char *fm = getenv("GPUPOOL_GATEWAY_FLUSH_MS");
    if (fm && atoi(fm) > 0 && atoi(fm) <= 60000) rt->cfg.flush_ms = atoi(fm);
    if (rt->cfg.lease.horizon_ms <= 0) rt->cfg.lease = (gw_lease_policy)GW_LEASE_POLICY_DEFAULT;
    int crc = gw_cache_new(st, &rt->cache, err);
    if (crc) {
        free(rt);
        return crc;
    }
    gp_err perr = GP_ERR_INIT;
    if (gw_cache_poll(rt->cache, &perr)) /* not fatal: the cache is bypassed until it can */
        log_kv(LOG_WARN, "the gateway's read cache cannot check for changes", "detail", perr.msg,
               (char *)NULL);
    gp_err lerr = GP_ERR_INIT; /* PostgreSQL: changes made through other servers, at once */
    int lrc = gw_cache_listen(rt->cache, &lerr);
    if (lrc && lrc != GP_EUNSUPPORTED)
        log_kv(LOG_WARN, "the gateway's read cache polls only (no notifications)", "detail",
               lerr.msg, (char *)NULL);
    rt->next_epoch_us = gt_mono_us() + EPOCH_US;
    pthread_mutex_init(&rt->mu, NULL);
    pthread_mutex_init(&rt->lease_mu, NULL);
    pthread_cond_init(&rt->cv, NULL);
    rt->running = pthread_create(&rt->thread, NULL, rt_main, rt) == 0;
    if (!rt->running) {
        gw_rt_stop(rt);
        return gp_err_set(err, GP_EINTERNAL, "cannot start the gateway's background thread");
    }
    *out = rt;
    return GP_OK;
}

void gw_rt_stop(gw_runtime *rt) {
    if (!rt) return;
    pthread_mutex_lock(&rt->mu);
    rt->stopping = 1;
    pthread_cond_signal(&rt->cv);
    /* anyone still in an endpoint's line gives up now */
    for (int i = 0; i < NBUCKETS; i++)
        for (ep_ent *e = rt->eps[i]; e; e = e->next)
            for (ep_waiter *w = e->head; w; w = w->next) pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&rt->mu);
    if (rt->running) pthread_join(rt->thread, NULL);
    /* what is still queued goes to the store now; a few tries against a busy store */
    for (int i = 0; i < 20 && rt->nq; i++) {
        gp_err err = GP_ERR_INIT;
        if (gw_rt_flush(rt, &err) == 0) break;
        log_kv(LOG_WARN, "usage records not written at stop; retrying", "detail", err.msg,
               (char *)NULL);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    if (rt->nq) {
        char c[24];
        snprintf(c, sizeof c, "%zu", rt->nq);
        log_kv(LOG_ERROR, "usage records could not be written", "count", c, (char *)NULL);
    }
    /* every lease goes back (what the records above consumed is settled already) */
    for (int i = 0; i < 20; i++) {
        gp_err err = GP_ERR_INIT;
        if (release_leases(rt, 1, &err) == 0) break;
        log_kv(LOG_WARN, "token leases not given back at stop; retrying", "detail", err.msg,
               (char *)NULL);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    for (lease_ent *e = rt->releasing, *n; e; e = n) { /* the leader releases them as stale */
        n = e->next;
        free(e);
    }
    for (int i = 0; i < NBUCKETS; i++) {
        for (rate_ent *e = rt->buckets[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
        for (ep_ent *e = rt->eps[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
        for (lease_ent *e = rt->leases[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    }
    gw_cache_free(rt->cache);
    free(rt->q);
    pthread_mutex_destroy(&rt->mu);
    pthread_mutex_destroy(&rt->lease_mu);
    pthread_cond_destroy(&rt->cv);
    free(rt);
}
