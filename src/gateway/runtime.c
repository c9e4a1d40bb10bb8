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
 * Nothing acknowledged is lost: gw_rt_record() only queues, but the
 * flusher writes at least every flush_ms, gw_rt_stop() flushes what is
 * left, and a batch that fails to commit stays queued for the next try.
 */
#include "gateway.h"

#include "../core/gtime.h"
#include "../core/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUCKETS 1024
#define HOLD_STALE_US (15LL * 60 * 1000000) /* a request in flight this long has died */
#define SHARE_US 1000000LL                  /* rate windows written and read this often */
#define MINUTE_US 60000000LL

typedef struct rate_ent {
    struct rate_ent *next;
    char scope;              /* 'k' key, 'p' project */
    char id[RND_ID_LEN];
    gw_window req, tok;      /* this process's counts */
    gw_window oreq, otok;    /* the other processes' (shared through the store) */
    int limited;             /* a limit applies: the counts are shared */
    int dirty;               /* counted since the last share */
    int shared;              /* oreq/otok come from the store */
} rate_ent;

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
    store_tx *tx;
    int rc = store_begin(rt->store, STORE_WRITE, &tx, err);
    for (size_t i = 0; i < n && !rc; i++) rc = gw_usage_write(tx, &batch[i], err);
    if (!rc) rc = store_commit(tx, err);
    else store_rollback(tx);
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
            if (!e->limited) continue;
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
    pthread_mutex_unlock(&rt->mu);
    if (rc) {
        free(rows);
        return rc;
    }
    store_tx *tx;
    if (writes && !(rc = store_begin(rt->store, STORE_WRITE, &tx, err))) {
        for (size_t i = 0; i < n && !rc; i++)
            for (int back = 0; back < 2 && rows[i].dirty && !rc; back++)
                rc = store_exec(tx, NULL, err,
                                "INSERT INTO rate_counts (scope, id, minute, process, requests,"
                                " tokens) VALUES (?,?,?,?,?,?) ON CONFLICT (scope, id, minute,"
                                " process) DO UPDATE SET requests = excluded.requests,"
                                " tokens = excluded.tokens",
                                "ssisii", rows[i].scope, rows[i].id, m - back, rt->process,
                                back ? rows[i].req.prev : rows[i].req.cur,
                                back ? rows[i].tok.prev : rows[i].tok.cur);
        if (!rc)
            rc = store_exec(tx, NULL, err, "DELETE FROM rate_counts WHERE minute < ?", "i", m - 1);
        if (!rc) rc = store_commit(tx, err);
        else store_rollback(tx);
        if (rc) { /* write them again next time */
            pthread_mutex_lock(&rt->mu);
            for (size_t i = 0; i < n; i++) {
                rate_ent *e = rows[i].dirty ? ent(rt, rows[i].scope[0], rows[i].id) : NULL;
                if (e) e->dirty = 1;
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
                         "SELECT scope, id, minute, SUM(requests), SUM(tokens) FROM rate_counts"
                         " WHERE minute >= ? AND process <> ? GROUP BY scope, id, minute",
                         "is", m - 1, rt->process);
        int step = 0;
        while (!rc && (step = store_step(s, err)) > 0) {
            const char *sc = store_text(s, 0), *id = store_text(s, 1);
            if (!sc || !*sc || !id) continue;
            share_row *r = share_push(&rows, &n, &cap, sc[0], id);
            if (!r) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            int cur = store_int(s, 2) == m;
            r->req = (gw_window){m, cur ? 0 : store_int(s, 3), cur ? store_int(s, 3) : 0};
            r->tok = (gw_window){m, cur ? 0 : store_int(s, 4), cur ? store_int(s, 4) : 0};
        }
        if (!rc && step < 0) rc = step;
        store_done(s);
        store_rollback(tx);
        if (!rc) {
            pthread_mutex_lock(&rt->mu);
            for (int b = 0; b < NBUCKETS; b++) /* not listed now: nobody else counted */
                for (rate_ent *e = rt->buckets[b]; e; e = e->next)
                    if (e->shared) e->oreq = e->otok = (gw_window){m, 0, 0};
            for (size_t i = 0; i < n; i++) { /* one row per minute: two may add up */
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
        char why[300] = "";
        if (!*base) {
            snprintf(why, sizeof why, "its job is not running");
        } else {
            gw_endpoint ep;
            memset(&ep, 0, sizeof ep);
            snprintf(ep.base, sizeof ep.base, "%s", base);
            gw_call *c;
            gp_err e2 = GP_ERR_INIT;
            if (gw_call_start(&ep, path, NULL, 0, 5, &c, &e2)) {
                snprintf(why, sizeof why, "%s", e2.msg);
            } else {
                long st = gw_call_status(c);
                if (st >= 200 && st < 300) state = "healthy";
                else snprintf(why, sizeof why, "%s%s answered HTTP %ld", base, path, st);
                gw_call_free(c);
            }
        }
        if (store_begin(rt->store, STORE_WRITE, &tx, &err) == 0) {
            int r2 = gw_endpoint_set_state(tx, json_string_value(json_object_get(t, "id")), state,
                                           why, &err);
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
    if (store_begin(rt->store, STORE_WRITE, &tx, &err)) return;
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
    pthread_mutex_lock(&rt->mu);
    while (!rt->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)rt->cfg.flush_ms * 1000000;
        ts.tv_sec += ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        if (rt->nq < (size_t)rt->cfg.batch) pthread_cond_timedwait(&rt->cv, &rt->mu, &ts);
        if (rt->stopping) break;
        pthread_mutex_unlock(&rt->mu);
        gp_err err = GP_ERR_INIT;
        if (gw_rt_flush(rt, &err))
            log_kv(LOG_WARN, "usage records not written yet; will retry", "detail", err.msg,
                   (char *)NULL);
        int64_t now = gt_mono_us();
        if (now >= rt->next_share_us) {
            gp_err_clear(&err);
            if (share_windows(rt, &err))
                log_kv(LOG_WARN, "rate windows not shared this time", "detail", err.msg,
                       (char *)NULL);
            rt->next_share_us = now + SHARE_US;
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
    pthread_mutex_init(&rt->mu, NULL);
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
    for (int i = 0; i < NBUCKETS; i++)
        for (rate_ent *e = rt->buckets[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    free(rt->q);
    pthread_mutex_destroy(&rt->mu);
    pthread_cond_destroy(&rt->cv);
    free(rt);
}
