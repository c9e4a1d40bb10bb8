/*
 * loop.c - the leader's scheduler loop and the per-node notifier (loop.h).
 *
 * Locking: `mu` guards the wake flag, the stats and the stop flag (the
 * scheduler thread waits on `cv`); `nmu` guards the node table, the epoch
 * and the quiescing flag (waiters wait on `ncv`, broadcast by each touch:
 * a waiter only compares its node's version, no store access).  The
 * registry has its own mutex.  No lock is held while a round runs.
 */
#include "loop.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "jobs.h"
#include "sched_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct nslot {
    char name[64]; /* "" free */
    int64_t v;
} nslot;

struct sched_loop {
    store_t *st;
    struct sched_loop *next; /* registry */
    pthread_t th;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int wake, stop, quiescing;
    int window_wakes; /* wakes since the last round started: the burst measure */
    int freed;        /* a sched_wake_freed since the last round started */
    sched_loop_stats stats;
    /* the node notifier */
    pthread_mutex_t nmu;
    pthread_cond_t ncv;
    nslot *tab;
    size_t cap, used;
    int64_t base, epoch;
    int nquiesce; /* under nmu: quiescing */
    int nwaiters; /* under nmu */
    /* watches (sched_node_watch), under nmu; the timer thread fires the expired ones */
    struct nwatch *watches;
    int nwatches, capwatches;
    pthread_t wth;
    int wrunning, wstop;
    pthread_cond_t wcv;
    /* the leader proof: when a leading wake last came (under mu) */
    int64_t lead_seen_us;
    /* PostgreSQL events (sched_loop_listen): under `fmu`, what to send; `pipe` wakes the
     * listener, which owns its connection */
    char *pg_url;
    pthread_t lth;
    int lrunning;
    atomic_int lstop, listen_ok;
    int pipefd[2];
    pthread_mutex_t fmu;
    int fwd_wake, fwd_all;
    char (*fwd_nodes)[64];
    int nfwd, capfwd;
};

#define LEAD_PROOF_US 2500000 /* a leading wake this recent: this server leads (tick: 1 s) */
#define CH_WAKE "gpupool_sched_wake"
#define CH_NODES "gpupool_node_events"

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static sched_loop *reg_head;

/* The loop of st; the registry lock is held by the caller. */
static sched_loop *find_locked(store_t *st) {
    for (sched_loop *l = reg_head; l; l = l->next)
        if (l->st == st) return l;
    return NULL;
}

/*
 * Loops are registered for their whole life and only unlinked by
 * sched_loop_stop, which the caller runs once no request thread can call any
 * more (after the HTTP server stopped), so a pointer found here stays valid
 * for the duration of the call that found it.
 */
static sched_loop *find(store_t *st) {
    pthread_mutex_lock(&reg_mu);
    sched_loop *l = find_locked(st);
    pthread_mutex_unlock(&reg_mu);
    return l;
}

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The slot of `name` (nmu held); create it when `add`.  NULL: absent (or out of memory). */
static nslot *slot(sched_loop *l, const char *name, int add) {
    if (add && (l->used + 1) * 10 >= l->cap * 7) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        nslot *nt = calloc(ncap, sizeof *nt);
        if (!nt) return NULL;
        for (size_t i = 0; i < l->cap; i++) {
            if (!l->tab[i].name[0]) continue;
            size_t k = hash(l->tab[i].name) & (ncap - 1);
            while (nt[k].name[0]) k = (k + 1) & (ncap - 1);
            nt[k] = l->tab[i];
        }
        free(l->tab);
        l->tab = nt;
        l->cap = ncap;
    }
    if (!l->cap) return NULL;
    size_t k = hash(name) & (l->cap - 1);
    while (l->tab[k].name[0]) {
        if (!strncmp(l->tab[k].name, name, sizeof l->tab[k].name - 1)) return &l->tab[k];
        k = (k + 1) & (l->cap - 1);
    }
    if (!add) return NULL;
    snprintf(l->tab[k].name, sizeof l->tab[k].name, "%s", name);
    l->tab[k].v = 0;
    l->used++;
    return &l->tab[k];
}

static int64_t version_locked(sched_loop *l, const char *node) {
    nslot *s = slot(l, node, 0);
    return l->base + l->epoch + (s ? s->v : 0);
}

static void touch_locked(sched_loop *l, const char *node) {
    if (!node) {
        l->epoch++;
        return;
    }
    nslot *s = slot(l, node, 1);
    if (s) s->v++;
    else l->epoch++; /* out of memory: wake everyone rather than lose the event */
}

/* A long poll that holds no thread: its callback runs once (see sched_node_watch). */
typedef struct nwatch {
    char node[64];
    int64_t seen;
    int64_t deadline_us; /* monotonic */
    sched_node_cb cb;
    void *arg;
} nwatch;

/* A watch taken off the list, with what its callback is told. */
typedef struct nfired {
    sched_node_cb cb;
    void *arg;
    int result;
    int64_t version;
} nfired;

/*
 * Take off the list (nmu held) the watches that are due: of `node` (NULL:
 * every node), or with `now_us` > 0 those past their deadline, or with
 * `result` -1 all of them.  Appends them to *out (heap, *n of them).
 */
static void take_due(sched_loop *l, const char *node, int64_t now_us, int result, nfired **out,
                     int *n) {
    for (int i = 0; i < l->nwatches;) {
        nwatch *w = &l->watches[i];
        int due = result < 0 || (now_us > 0 ? w->deadline_us <= now_us
                                            : !node || !strncmp(w->node, node, sizeof w->node - 1));
        int64_t v = version_locked(l, w->node);
        if (due && result >= 0 && now_us <= 0 && v == w->seen) due = 0; /* no change for it */
        if (!due) {
            i++;
            continue;
        }
        nfired *nf = realloc(*out, sizeof *nf * (size_t)(*n + 1));
        if (!nf) { /* out of memory: it fires with the next sweep */
            i++;
            continue;
        }
        *out = nf;
        nf[*n].cb = w->cb;
        nf[*n].arg = w->arg;
        nf[*n].version = v;
        nf[*n].result = result < 0 ? -1 : v != w->seen;
        (*n)++;
        l->watches[i] = l->watches[--l->nwatches];
    }
}

static void fire(nfired *f, int n) {
    for (int i = 0; i < n; i++) f[i].cb(f[i].arg, f[i].result, f[i].version);
    free(f);
}

/* The timer: fires each watch at its deadline, 5 ms early at most (it sleeps until the
 * earliest one; a watch registered with an earlier one wakes it). */
static void *watch_main(void *arg) {
    sched_loop *l = arg;
    pthread_mutex_lock(&l->nmu);
    while (!l->wstop) {
        int64_t now = gt_mono_us(), until = now + 1000000;
        for (int i = 0; i < l->nwatches; i++)
            if (l->watches[i].deadline_us < until) until = l->watches[i].deadline_us;
        if (until > now) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t ns = ts.tv_nsec + (until - now) * 1000;
            ts.tv_sec += ns / 1000000000;
            ts.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&l->wcv, &l->nmu, &ts);
        }
        if (l->wstop) break;
        nfired *f = NULL;
        int n = 0;
        /* those due within 5 ms go together: at most 200 wakes a second, however many wait */
        take_due(l, NULL, gt_mono_us() + 5000, 0, &f, &n);
        pthread_mutex_unlock(&l->nmu);
        fire(f, n);
        pthread_mutex_lock(&l->nmu);
    }
    pthread_mutex_unlock(&l->nmu);
    return NULL;
}

/* Touch `node` (NULL: all) here and wake its waiters and watches. */
static void touch_local(sched_loop *l, const char *node) {
    nfired *f = NULL;
    int n = 0;
    pthread_mutex_lock(&l->nmu);
    touch_locked(l, node);
    pthread_cond_broadcast(&l->ncv);
    if (l->nwatches) take_due(l, node, 0, 0, &f, &n);
    pthread_mutex_unlock(&l->nmu);
    fire(f, n);
}

static void poke(sched_loop *l) {
    char c = 1;
    if (write(l->pipefd[1], &c, 1) < 0 && errno != EAGAIN) { /* full: a poke is pending */
    }
}

/*
 * A node's assignments changed: with PostgreSQL events up, tell every server (this one
 * included: the notification comes back to its own listener), so agents waiting on any of
 * them hear of it; else just here.
 */
static void node_event(sched_loop *l, const char *node) {
    if (!atomic_load(&l->listen_ok)) {
        touch_local(l, node);
        return;
    }
    pthread_mutex_lock(&l->fmu);
    int queued = 1;
    if (!node) {
        l->fwd_all = 1;
    } else if (!l->fwd_all) {
        int known = 0;
        for (int i = 0; i < l->nfwd && !known; i++) known = !strcmp(l->fwd_nodes[i], node);
        if (!known) {
            if (l->nfwd == l->capfwd) {
                int nc = l->capfwd ? l->capfwd * 2 : 64;
                void *nb = realloc(l->fwd_nodes, (size_t)nc * sizeof *l->fwd_nodes);
                if (nb) {
                    l->fwd_nodes = nb;
                    l->capfwd = nc;
                }
            }
            if (l->nfwd < l->capfwd) snprintf(l->fwd_nodes[l->nfwd++], 64, "%s", node);
            else queued = 0;
        }
    }
    pthread_mutex_unlock(&l->fmu);
    if (queued) poke(l);
    else touch_local(l, NULL); /* out of memory: everyone here looks again */
}

int64_t sched_gap_us(int64_t took_us, int burst, int freed) {
    int64_t gap = (int64_t)SCHED_MIN_GAP_US * (burst > 1 && !freed ? burst : 1);
    if (gap > SCHED_MAX_GAP_US) gap = SCHED_MAX_GAP_US;
    if (gap < took_us) gap = took_us;
    return gap;
}

static void *loop_main(void *arg) {
    sched_loop *l = arg;
    int64_t next_ok = 0;   /* monotonic: not before this (the gap, a burst's window) */
    int64_t next_freed = 0; /* ... or this, once capacity came free (the minimal gap) */
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->wake && !l->stop) pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop) break;
        /* the gap: wakes in it join this round; a freeing wake shortens it (each wake
         * signals the condition, so the deadline is looked at again) */
        for (;;) {
            int64_t until = l->freed && next_freed < next_ok ? next_freed : next_ok;
            int64_t now = gt_mono_us();
            if (l->stop || now >= until) break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t ns = ts.tv_nsec + (until - now) * 1000;
            ts.tv_sec += ns / 1000000000;
            ts.tv_nsec = ns % 1000000000;
            pthread_cond_timedwait(&l->cv, &l->mu, &ts);
        }
        if (l->stop) break;
        l->wake = 0;
        l->freed = 0;
        int burst = l->window_wakes;
        l->window_wakes = 0;
        pthread_mutex_unlock(&l->mu);
        gp_err err = GP_ERR_INIT;
        round_stats rs;
        int64_t t0 = gt_mono_us();
        int rc = sched_run(l->st, &rs, &err);
        int64_t took = gt_mono_us() - t0;
        sched_metrics_round(took, rc != 0);
        if (rc) {
            log_kv(LOG_WARN, "scheduler round failed", "detail", err.msg, (char *)NULL);
            /* failed after some of its write batches committed (round.c): wake every node */
            if (rs.nodes_overflow) node_event(l, NULL);
        } else if (rs.placed || rs.preempted) {
            if (rs.nodes_overflow) node_event(l, NULL);
            else
                for (int i = 0; i < rs.nnodes; i++) node_event(l, rs.nodes[i]);
        }
        /* the gap: as long as the round took, and longer while changes come in bursts */
        int64_t end = gt_mono_us();
        next_ok = end + sched_gap_us(took, burst, 0);
        next_freed = end + sched_gap_us(took, burst, 1);
        pthread_mutex_lock(&l->mu);
        l->stats.rounds++;
        if (rc) l->stats.rounds_failed++;
        else l->stats.placed += (uint64_t)rs.placed;
        l->stats.last_round_us = took;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int sched_loop_start(store_t *st, sched_loop **out, gp_err *err) {
    *out = NULL;
    sched_loop *l = calloc(1, sizeof *l);
    if (!l) return gp_err_set(err, GP_ENOMEM, NULL);
    l->st = st;
    l->base = gt_now_us();
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    pthread_mutex_init(&l->nmu, NULL);
    pthread_cond_init(&l->ncv, NULL);
    pthread_cond_init(&l->wcv, NULL);
    pthread_mutex_init(&l->fmu, NULL);
    l->pipefd[0] = l->pipefd[1] = -1;
    atomic_init(&l->lstop, 0);
    atomic_init(&l->listen_ok, 0);
    pthread_mutex_lock(&reg_mu);
    if (find_locked(st)) {
        pthread_mutex_unlock(&reg_mu);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->nmu);
        pthread_cond_destroy(&l->ncv);
        pthread_cond_destroy(&l->wcv);
        pthread_mutex_destroy(&l->fmu);
        free(l);
        return gp_err_set(err, GP_ECONFLICT, "this store already has a scheduler loop");
    }
    if (pthread_create(&l->th, NULL, loop_main, l) != 0) {
        pthread_mutex_unlock(&reg_mu);
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->nmu);
        pthread_cond_destroy(&l->ncv);
        pthread_cond_destroy(&l->wcv);
        pthread_mutex_destroy(&l->fmu);
        free(l);
        return gp_err_set(err, GP_EIO, "cannot start the scheduler thread");
    }
    l->running = 1;
    l->next = reg_head;
    reg_head = l;
    pthread_mutex_unlock(&reg_mu);
    *out = l;
    return GP_OK;
}

void sched_loop_quiesce(sched_loop *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->quiescing = 1;
    pthread_mutex_unlock(&l->mu);
    nfired *f = NULL;
    int n = 0;
    pthread_mutex_lock(&l->nmu);
    l->nquiesce = 1;
    pthread_cond_broadcast(&l->ncv);
    take_due(l, NULL, 0, -1, &f, &n); /* every watch is answered "no events" */
    pthread_mutex_unlock(&l->nmu);
    fire(f, n);
}

void sched_loop_stop(sched_loop *l) {
    if (!l) return;
    sched_loop_quiesce(l);
    pthread_mutex_lock(&reg_mu);
    for (sched_loop **p = &reg_head; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (l->running) pthread_join(l->th, NULL);
    pthread_mutex_lock(&l->nmu);
    l->wstop = 1;
    pthread_cond_signal(&l->wcv);
    pthread_mutex_unlock(&l->nmu);
    if (l->wrunning) pthread_join(l->wth, NULL);
    free(l->watches);
    pthread_cond_destroy(&l->wcv);
    atomic_store(&l->lstop, 1);
    if (l->lrunning) {
        poke(l);
        pthread_join(l->lth, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (l->pipefd[i] >= 0) close(l->pipefd[i]);
    free(l->pg_url);
    free(l->fwd_nodes);
    pthread_mutex_destroy(&l->fmu);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->nmu);
    pthread_cond_destroy(&l->ncv);
    free(l->tab);
    free(l);
}

/* A wake; from the listener, `leading` is whether a leading wake came recently; `freed`:
 * capacity came free (sched_wake_freed). */
static void wake(sched_loop *l, int leading, int forward, int freed) {
    pthread_mutex_lock(&l->mu);
    if (leading && forward) l->lead_seen_us = gt_mono_us();
    if (leading && !l->quiescing) {
        l->stats.wakes++;
        l->window_wakes++;
        if (freed && !l->freed) {
            l->freed = 1;
            pthread_cond_signal(&l->cv); /* the gap may be shorter now */
        }
        if (!l->wake) {
            l->wake = 1;
            pthread_cond_signal(&l->cv);
        }
    } else {
        l->stats.wakes_ignored++;
    }
    pthread_mutex_unlock(&l->mu);
    if (!leading && forward && atomic_load(&l->listen_ok)) {
        /* not leading: the leader hears of it through PostgreSQL */
        pthread_mutex_lock(&l->fmu);
        l->fwd_wake = 1;
        pthread_mutex_unlock(&l->fmu);
        poke(l);
    }
}

void sched_wake(store_t *st, int leading) {
    sched_loop *l = find(st);
    if (l) wake(l, leading, 1, 0);
}

void sched_wake_freed(store_t *st, int leading) {
    sched_loop *l = find(st);
    if (l) wake(l, leading, 1, 1);
}

int sched_loop_stats_get(store_t *st, sched_loop_stats *out) {
    memset(out, 0, sizeof *out);
    sched_loop *l = find(st);
    if (!l) return 0;
    pthread_mutex_lock(&l->mu);
    *out = l->stats;
    pthread_mutex_unlock(&l->mu);
    pthread_mutex_lock(&l->nmu);
    out->waiters = l->nwaiters;
    pthread_mutex_unlock(&l->nmu);
    return 1;
}

void sched_node_touch(store_t *st, const char *node) {
    sched_loop *l = find(st);
    if (l) node_event(l, node);
}

/* ---- PostgreSQL events ---- */

static void lpause(sched_loop *l, int ms) {
    for (int i = 0; i < ms / 50 && !atomic_load(&l->lstop); i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int notify(PGconn *c, const char *channel, const char *payload) {
    const char *params[2] = {channel, payload};
    PGresult *r = PQexecParams(c, "SELECT pg_notify($1, $2)", 2, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
}

/* Send what request threads and the scheduler queued.  0 if the connection failed. */
static int send_pending(sched_loop *l, PGconn *c) {
    pthread_mutex_lock(&l->fmu);
    int wk = l->fwd_wake, all = l->fwd_all, n = l->nfwd;
    char (*nodes)[64] = l->fwd_nodes;
    l->fwd_wake = l->fwd_all = 0;
    l->fwd_nodes = NULL;
    l->nfwd = l->capfwd = 0;
    pthread_mutex_unlock(&l->fmu);
    int ok = 1;
    if (wk) ok = notify(c, CH_WAKE, "");
    if (ok && all) ok = notify(c, CH_NODES, "*");
    /* node names, comma-separated, in payloads well under PostgreSQL's 8000 bytes */
    char buf[4096];
    size_t len = 0;
    for (int i = 0; ok && !all && i <= n; i++) {
        size_t k = i < n ? strlen(nodes[i]) : 0;
        if (len && (i == n || len + k + 1 >= sizeof buf)) {
            buf[len] = '\0';
            ok = notify(c, CH_NODES, buf);
            len = 0;
        }
        if (i < n) {
            if (len) buf[len++] = ',';
            memcpy(buf + len, nodes[i], k);
            len += k;
        }
    }
    free(nodes);
    return ok;
}

static void on_notify(sched_loop *l, const PGnotify *nf) {
    if (!strcmp(nf->relname, CH_WAKE)) {
        pthread_mutex_lock(&l->mu);
        int leading = l->lead_seen_us && gt_mono_us() - l->lead_seen_us < LEAD_PROOF_US;
        pthread_mutex_unlock(&l->mu);
        if (leading) wake(l, 1, 0, 0);
        return;
    }
    if (strcmp(nf->relname, CH_NODES) != 0) return;
    if (!strcmp(nf->extra, "*")) {
        touch_local(l, NULL);
        return;
    }
    char name[64];
    for (const char *p = nf->extra; *p;) {
        size_t k = strcspn(p, ",");
        if (k && k < sizeof name) {
            memcpy(name, p, k);
            name[k] = '\0';
            touch_local(l, name);
        }
        p += k;
        if (*p == ',') p++;
    }
}

static void *listen_main(void *arg) {
    sched_loop *l = arg;
    int warned = 0;
    while (!atomic_load(&l->lstop)) {
        PGconn *c = PQconnectdb(l->pg_url);
        PGresult *r = NULL;
        if (PQstatus(c) == CONNECTION_OK) {
            r = PQexec(c, "SET application_name = 'gpupool-events'; LISTEN " CH_WAKE
                          "; LISTEN " CH_NODES);
        }
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            if (!warned++)
                log_kv(LOG_WARN, "cannot listen for other servers' events; they come with the "
                                 "leader's tick and agents' heartbeats meanwhile",
                       "detail", PQerrorMessage(c), (char *)NULL);
            PQclear(r);
            PQfinish(c);
            lpause(l, 2000);
            continue;
        }
        PQclear(r);
        if (warned) log_kv(LOG_INFO, "listening for other servers' events again", (char *)NULL);
        warned = 0;
        atomic_store(&l->listen_ok, 1);
        /* what was queued while down goes out first */
        int up = send_pending(l, c);
        while (up && !atomic_load(&l->lstop)) {
            struct pollfd pf[2] = {{PQsocket(c), POLLIN, 0}, {l->pipefd[0], POLLIN, 0}};
            if (poll(pf, 2, 500) < 0 && errno != EINTR) break;
            if (pf[1].revents & POLLIN) {
                char drain[64];
                while (read(l->pipefd[0], drain, sizeof drain) > 0) {
                }
                up = send_pending(l, c);
            }
            if (!PQconsumeInput(c)) up = 0;
            PGnotify *nf;
            while ((nf = PQnotifies(c))) {
                on_notify(l, nf);
                PQfreemem(nf);
            }
            if (PQstatus(c) != CONNECTION_OK) up = 0;
        }
        atomic_store(&l->listen_ok, 0);
        PQfinish(c);
        if (!atomic_load(&l->lstop)) {
            log_kv(LOG_WARN, "lost the connection for other servers' events; reconnecting",
                   (char *)NULL);
            touch_local(l, NULL); /* events may have been missed: every agent here looks */
            lpause(l, 1000);
        }
    }
    return NULL;
}

int sched_loop_listen(sched_loop *l, const char *pg_url, gp_err *err) {
    if (!l || l->lrunning) return GP_OK;
    if (pipe(l->pipefd) != 0) return gp_err_set(err, GP_EIO, "cannot make a pipe");
    for (int i = 0; i < 2; i++) fcntl(l->pipefd[i], F_SETFL, fcntl(l->pipefd[i], F_GETFL) | O_NONBLOCK);
    l->pg_url = strdup(pg_url);
    if (!l->pg_url) return gp_err_set(err, GP_ENOMEM, NULL);
    if (pthread_create(&l->lth, NULL, listen_main, l) != 0)
        return gp_err_set(err, GP_EIO, "cannot start the events thread");
    l->lrunning = 1;
    return GP_OK;
}

int sched_node_watch(store_t *st, const char *node, int64_t seen, int timeout_ms,
                     sched_node_cb cb, void *arg, int64_t *version) {
    *version = 0;
    sched_loop *l = find(st);
    if (!l) return -1;
    pthread_mutex_lock(&l->nmu);
    if (l->nquiesce) {
        pthread_mutex_unlock(&l->nmu);
        return -1;
    }
    if (!l->wrunning) {
        if (pthread_create(&l->wth, NULL, watch_main, l) != 0) {
            pthread_mutex_unlock(&l->nmu);
            return -1;
        }
        l->wrunning = 1;
    }
    int64_t v = version_locked(l, node);
    if (v != seen) { /* changed already: answered at once */
        pthread_mutex_unlock(&l->nmu);
        *version = v;
        return 1;
    }
    if (l->nwatches == l->capwatches) {
        int ncap = l->capwatches ? l->capwatches * 2 : 64;
        nwatch *nw = realloc(l->watches, sizeof *nw * (size_t)ncap);
        if (!nw) {
            pthread_mutex_unlock(&l->nmu);
            return -1;
        }
        l->watches = nw;
        l->capwatches = ncap;
    }
    nwatch *w = &l->watches[l->nwatches++];
    snprintf(w->node, sizeof w->node, "%s", node);
    w->seen = seen;
    w->deadline_us = gt_mono_us() + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000;
    w->cb = cb;
    w->arg = arg;
    pthread_cond_signal(&l->wcv); /* the timer may sleep past this deadline */
    pthread_mutex_unlock(&l->nmu);
    return 0;
}

int sched_node_wait(store_t *st, const char *node, int64_t seen, int timeout_ms, int64_t *version) {
    *version = 0;
    sched_loop *l = find(st);
    if (!l) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    int rc = 0;
    pthread_mutex_lock(&l->nmu);
    l->nwaiters++;
    for (;;) {
        *version = version_locked(l, node);
        if (l->nquiesce) {
            rc = -1;
            break;
        }
        if (*version != seen) {
            rc = 1;
            break;
        }
        if (pthread_cond_timedwait(&l->ncv, &l->nmu, &ts) != 0) {
            *version = version_locked(l, node);
            rc = *version != seen;
            break;
        }
    }
    l->nwaiters--;
    pthread_mutex_unlock(&l->nmu);
    return rc;
}
