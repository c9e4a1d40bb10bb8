/*
 * runtime.c - the gateway's state while it serves (see gateway.h, "run
 * time"): per-minute rate windows per key and project, the queue of usage
 * records written in batches, and a background thread that flushes that
 * queue, health-checks endpoints and releases stale token holds.
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

typedef struct rate_ent {
    struct rate_ent *next;
    char scope;              /* 'k' key, 'p' project */
    char id[RND_ID_LEN];
    gw_window req, tok;
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
    int64_t next_health_us, next_holds_us;
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
    if (!gw_window_allows(&ke->req, now_us, 1, k->rpm, retry_after_s)) ok = 0, what = "requests per minute of this key";
    else if (!gw_window_allows(&pe->req, now_us, 1, prpm, retry_after_s)) ok = 0, what = "requests per minute of the project";
    else if (!gw_window_allows(&ke->tok, now_us, tokens, k->tpm, retry_after_s)) ok = 0, what = "tokens per minute of this key";
    else if (!gw_window_allows(&pe->tok, now_us, tokens, ptpm, retry_after_s)) ok = 0, what = "tokens per minute of the project";
    if (ok) {
        gw_window_add(&ke->req, now_us, 1);
        gw_window_add(&pe->req, now_us, 1);
        gw_window_add(&ke->tok, now_us, tokens);
        gw_window_add(&pe->tok, now_us, tokens);
    } else {
        snprintf(why, why_len, "%s", what);
    }
    pthread_mutex_unlock(&rt->mu);
    return ok;
}

void gw_rt_adjust(gw_runtime *rt, const gw_key *k, int64_t token_delta, int64_t now_us) {
    pthread_mutex_lock(&rt->mu);
    rate_ent *ke = ent(rt, 'k', k->id), *pe = ent(rt, 'p', k->project_id);
    if (ke) gw_window_add(&ke->tok, now_us, token_delta);
    if (pe) gw_window_add(&pe->tok, now_us, token_delta);
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
