/*
 * http.c - libmicrohttpd glue: connections in, api_req through dispatch,
 * responses out, plus the access log, request ids and graceful stop.
 *
 * Body handling: bodies are accumulated up to cfg->max_body; a declared
 * Content-Length above it is answered 413 at once, an undeclared one that
 * grows past it is drained and then answered 413.
 *
 * Graceful stop: MHD_quiesce_daemon() and shutdown() stop the listening socket, then we
 * wait (bounded) until no request is in flight; from then on a request that
 * starts on a connection accepted earlier is answered 503 shutting_down, never
 * dispatched; once those answers are out, MHD_stop_daemon().  So every request
 * that was dispatched gets its answer (within the drain time).
 *
 * Threads (docs/server.md, "Connections"): `threads` event threads of
 * libmicrohttpd (poll) read requests and write answers and never block; a
 * request whose body is in is handed to a worker (workers.c) while its
 * connection is suspended, and resumed once the worker has the answer.  A
 * streamed answer is produced on that worker into a pump the event thread
 * drains (suspending the connection while it is empty, resumed by the
 * worker).  A deferred answer (api_defer: an agent's long poll) parks the
 * request with no thread at all until api_resume.  So an idle keep-alive
 * connection or a waiting long poll costs a descriptor and some memory, not
 * a thread; the workers grow with the handlers actually running.  At stop,
 * the workers finish first (no connection may stay suspended when MHD stops).
 *
 * One exception saves the two thread hand-offs (to a worker and back) that
 * cost a fast upstream more than the gateway's own work: a gateway request
 * (/v1/, a body that does not mention "stream") on a connection that is the
 * only one its event thread serves runs right on that thread, which queues
 * the answer as the handler returns (take_inline, run_inline).  Waiting for
 * the upstream there holds up no other connection: the thread has none, and
 * accepts none meanwhile (another event thread does: at most threads - 1 of
 * them run a handler at once, so one always polls the listening socket).
 * Deadlines, limits and the slow-reader cut are the same on both paths.
 *
 * Slow clients (docs/server.md, "Connections"): every connection is tracked
 * in a list (MHD_OPTION_NOTIFY_CONNECTION) with
 * its phase and deadline: HEAD (waiting for the request line and headers:
 * header_timeout_s from the accept or the previous response), BODY (the
 * declared body: body_timeout_s + 1 s per 64 KiB), BUSY (the handler and the
 * response: no deadline, the gateway streams for minutes).  A watcher thread
 * shuts down the socket of a connection past its deadline (MHD's thread then
 * sees EOF and closes it), and, while three quarters of max_conns are open,
 * of a connection waiting for headers for more than 2 s (0.5 s while nine
 * tenths are) or, past that grace, receiving its body slower than BODY_RATE
 * bytes a second, so a full table empties itself.  Every byte resets
 * only MHD's idle timeout, never these deadlines.  A slot is unlinked in
 * MHD's CLOSED notification, which comes before MHD closes the socket, so
 * the watcher (holding conn_mu) never shuts down a reused descriptor.
 *
 * Parsing: before dispatch, the raw target (captured by the URI log callback,
 * before MHD decodes it) and every header are checked (router_check_target,
 * router_check_headers); an ambiguous request gets 400 and the connection is
 * closed, so no byte after it is read as another request.
 */
#define _GNU_SOURCE /* memmem */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "../gateway/gateway.h"
#include "../gateway/gw_metrics.h"
#include "../core/strbuf.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if MHD_VERSION < 0x00097002
typedef int MHD_Result;
#else
typedef enum MHD_Result MHD_Result;
#endif

/* A connection: its phase and deadline (see the top), linked in api_server.conns. */
enum { PHASE_HEAD, PHASE_BODY, PHASE_BUSY };
typedef struct conn_slot {
    struct conn_slot *prev, *next;
    int fd;
    int phase;
    int64_t since_us;    /* when the phase began */
    int64_t deadline_us; /* 0: none */
    int dropped;         /* its socket was shut down */
    int64_t body_got;    /* body bytes received in PHASE_BODY */
    atomic_int *ev;      /* the open connections of the event thread that accepted it */
    int64_t win_us;      /* slow readers: when the client last had nothing waiting (0: unset) */
    uint64_t win_acked;  /* ... and the bytes it had acknowledged then */
    char addr[64];
} conn_slot;

struct api_server {
    struct MHD_Daemon *d;
    api_config cfg;
    store_t *store;
    gw_runtime *gw;      /* the gateway's state; NULL when /v1 is not served */
    api_login_guard *login_guard; /* failed-login windows; NULL: none */
    char start_err[256]; /* libmicrohttpd's last complaint while starting */
    int starting;        /* set during MHD_start_daemon: capture its complaints */
    int port;
    atomic_int inflight;
    atomic_int closing;  /* set once drained: requests not yet dispatched get 503 */
    /* the background loop (reachability sweep) */
    pthread_t loop;
    int loop_running;
    pthread_mutex_t loop_mu;
    pthread_cond_t loop_cv;
    int stopping;
    atomic_int leading; /* this server holds the store's lead (store_lead) */
    /* connection deadlines (see the top) */
    pthread_mutex_t conn_mu;
    conn_slot *conns;
    int nconns;
    pthread_t guard;
    int guard_running;
    atomic_int guard_stop;
    api_pool *pool; /* the workers that run handlers (workers.c) */
    /* gateway requests run on their event thread ("Threads" at the top) */
    atomic_int *ev_counts; /* open connections, one counter per event thread */
    int nev;
    atomic_int ev_next;         /* the next counter an event thread claims */
    atomic_int inline_running;  /* handlers running on event threads now */
    atomic_int inline_stop;     /* stopping: no more of them */
};

/* The event thread's own counter of open connections (claimed at its first accept). */
static _Thread_local struct {
    api_server *srv;
    atomic_int *cnt;
} ev_here;

#define PRESSURE_HEAD_US 2000000 /* under pressure, headers must come within 2 s */
#define BODY_RATE 65536          /* the body deadline grows 1 s per 64 KiB declared */
#define NOISE_PER_SEC 10         /* log lines a second for each kind of client noise */
#define SEND_WINDOW_US 10000000  /* slow readers: the window their rate is judged over */

/* the log limiters: anonymous refusals, malformed requests, cut connections, MHD */
static api_ratelog rl_refusal = API_RATELOG_INIT, rl_malformed = API_RATELOG_INIT,
                   rl_drop = API_RATELOG_INIT, rl_mhd = API_RATELOG_INIT;

static void ratelog_report(const char *what, long n) {
    if (n <= 0) return;
    char num[32];
    snprintf(num, sizeof num, "%ld", n);
    log_kv(LOG_INFO, "log lines suppressed (more than 10 a second)", "kind", what, "suppressed",
           num, (char *)NULL);
}

/* May a line of this kind be logged now?  Reports earlier suppressed ones first. */
static int ratelog_ok(api_ratelog *rl, const char *what) {
    long n = 0;
    int ok = api__ratelog_take(rl, NOISE_PER_SEC, gt_mono_us(), &n);
    ratelog_report(what, n);
    return ok;
}

static void ratelog_flush_all(void) {
    static api_ratelog *const all[] = {&rl_refusal, &rl_malformed, &rl_drop, &rl_mhd};
    static const char *const names[] = {"anonymous refusal", "malformed request",
                                        "connection dropped", "http"};
    int64_t now = gt_mono_us();
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        long n = 0;
        api__ratelog_flush(all[i], now, &n);
        ratelog_report(names[i], n);
    }
}

/* Take, keep or lose the lead among the servers sharing the store; log changes. */
static int check_lead(api_server *srv) {
    gp_err err = GP_ERR_INIT;
    int lead = store_lead(srv->store, srv->cfg.lead_timeout_s, &err);
    if (lead < 0)
        log_kv(LOG_WARN, "cannot tell whether this server leads; standing by", "detail", err.msg,
               (char *)NULL);
    lead = lead == 1;
    if (atomic_exchange(&srv->leading, lead) != lead)
        log_kv(LOG_INFO, lead ? "leading: this server runs the scheduler and the loops"
                              : "standing by: another server leads",
               (char *)NULL);
    return lead;
}

static int server_leads(void *arg) { return atomic_load(&((api_server *)arg)->leading); }

/*
 * Once a second, on the leader only (store_lead: one server among those
 * sharing a PostgreSQL store; always the one on SQLite): mark nodes
 * unreachable whose heartbeats stopped, enforce card-hour ceilings, end what a
 * reservation's end stops and move maintenance windows' nodes, run a scheduling round.
 */
static void *loop_main(void *arg) {
    api_server *srv = arg;
    const int64_t timeout_us = (int64_t)srv->cfg.node_timeout_s * 1000000;
    const int64_t stall_us = API_STALL_US(timeout_us);
    /* liveness (docs/inventory.md): since when this server has watched heartbeats (wall
     * clock; 0: it does not lead), and when the loop last came round (monotonic) */
    int64_t observed_since = 0, last_round = 0, held_logged = 0;
    check_lead(srv);
    pthread_mutex_lock(&srv->loop_mu);
    while (!srv->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&srv->loop_cv, &srv->loop_mu, &ts);
        if (srv->stopping) break;
        pthread_mutex_unlock(&srv->loop_mu);
        gp_err err = GP_ERR_INIT;
        int64_t mono = gt_mono_us();
        /* the loop itself was held up (a paused process, an overloaded host): not watching */
        int stalled = last_round && mono - last_round > stall_us + 1000000;
        last_round = mono;
        if (!check_lead(srv)) {
            observed_since = 0;
            pthread_mutex_lock(&srv->loop_mu);
            continue;
        }
        if (!observed_since || stalled) observed_since = gt_now_us();
        int held = 0, sweep_stalled = 0;
        if (api__sweep_nodes(srv->store, timeout_us, observed_since, &held, &sweep_stalled, &err))
            log_kv(LOG_WARN, "node sweep failed", "detail", err.msg, (char *)NULL);
        gp_err_clear(&err);
        if (sweep_stalled) observed_since = gt_now_us();
        if (stalled || sweep_stalled)
            log_kv(LOG_WARN, "server stalled: every node gets a whole --node-timeout again before "
                             "it is judged silent", (char *)NULL);
        if (held && mono - held_logged >= 60000000) {
            char n[16];
            snprintf(n, sizeof n, "%d", held);
            held_logged = mono;
            log_kv(LOG_WARN, "most nodes fell silent at once: not marked unreachable until "
                             "silent for 5 node timeouts (the control plane or its network is "
                             "the likelier cause)",
                   "nodes", n, (char *)NULL);
        }
        if (api__card_hours_enforce(srv->store, &err))
            log_kv(LOG_WARN, "card-hour quota check failed", "detail", err.msg, (char *)NULL);
        gp_err_clear(&err);
        if (api__reservations_tick(srv->store, &err))
            log_kv(LOG_WARN, "reservations tick failed", "detail", err.msg, (char *)NULL);
        gp_err_clear(&err);
        if (api__sched_round(srv->store, &err))
            log_kv(LOG_WARN, "scheduler round failed", "detail", err.msg, (char *)NULL);
        pthread_mutex_lock(&srv->loop_mu);
    }
    pthread_mutex_unlock(&srv->loop_mu);
    return NULL;
}

typedef struct conn_ctx {
    api_req req;
    strbuf body;
    int too_large;
    int counted;
    int started;        /* the first call of on_request (headers complete) happened */
    const char *raw_at; /* where MHD had the target when it logged it (compared, never read) */
    char *raw;          /* the target as received, before decoding (NUL ends it early) */
    conn_slot *slot;
    /* dispatch on a worker (see "Threads" at the top) */
    struct MHD_Connection *conn;
    int queued;          /* handed to a worker (the connection is suspended meanwhile) */
    atomic_int ready;    /* the worker is done: the answer, or its stream, can go out */
    atomic_int park;     /* a deferred answer: 0 handler running, 1 parked, 2 answered early */
    struct pump *pump;   /* a streamed answer's bytes, from the worker to MHD */
    /* a gateway request's stage times (gw_stage_observe): 0 when not one */
    int64_t body_in_us;  /* its body is in (the handler may start) */
    int64_t answered_us; /* its handler ended with a whole answer (to be written) */
} conn_ctx;

/* ---- streamed answers: a worker produces, MHD's event thread sends ---- */

#define PUMP_CAP (64 * 1024)

typedef struct pump {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* room in buf, or cancelled */
    struct MHD_Connection *conn;
    size_t off, len;   /* bytes [off, len) of buf wait to be sent */
    int ended;         /* 1: the stream ended; -1: it broke (cut the connection) */
    int cancelled;     /* MHD let go of the response: the client is gone, or it is done */
    int waiting;       /* MHD's reader found nothing and suspended the connection */
    int refs;          /* the worker's and the response's */
    char buf[PUMP_CAP];
} pump;

static pump *pump_new(struct MHD_Connection *c) {
    pump *p = malloc(sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->conn = c;
    p->off = p->len = 0;
    p->ended = p->cancelled = p->waiting = 0;
    p->refs = 2;
    return p;
}

static void pump_unref(pump *p) {
    pthread_mutex_lock(&p->mu);
    int left = --p->refs;
    pthread_mutex_unlock(&p->mu);
    if (left) return;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

/* Wake MHD's reader if it suspended the connection for want of bytes (mu held). */
static void pump_kick(pump *p) {
    if (p->waiting && !p->cancelled) {
        p->waiting = 0;
        MHD_resume_connection(p->conn);
    }
}

/* The worker: queue n bytes (waits for room).  0, or -1 once the response is gone. */
static int pump_push(pump *p, const char *data, size_t n) {
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->cancelled) {
            pthread_mutex_unlock(&p->mu);
            return -1;
        }
        if (p->off && p->len + n > PUMP_CAP) {
            memmove(p->buf, p->buf + p->off, p->len - p->off);
            p->len -= p->off;
            p->off = 0;
        }
        if (p->len + n <= PUMP_CAP) break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    memcpy(p->buf + p->len, data, n);
    p->len += n;
    pump_kick(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

static void pump_end(pump *p, int how) {
    pthread_mutex_lock(&p->mu);
    p->ended = how;
    pump_kick(p);
    pthread_mutex_unlock(&p->mu);
}

/* MHD's content reader: what the worker queued; nothing yet: suspend until it kicks. */
static ssize_t pump_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    pump *p = cls;
    pthread_mutex_lock(&p->mu);
    if (p->len > p->off) {
        size_t n = p->len - p->off;
        if (n > max) n = max;
        memcpy(buf, p->buf + p->off, n);
        p->off += n;
        if (p->off == p->len) p->off = p->len = 0;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return (ssize_t)n;
    }
    if (p->ended) {
        ssize_t r = p->ended > 0 ? MHD_CONTENT_READER_END_OF_STREAM
                                 : MHD_CONTENT_READER_END_WITH_ERROR;
        pthread_mutex_unlock(&p->mu);
        return r;
    }
    p->waiting = 1;
    MHD_suspend_connection(p->conn);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

/* The response is gone (sent, or the client left): the worker stops producing. */
static void pump_released(void *cls) {
    pump *p = cls;
    pthread_mutex_lock(&p->mu);
    p->cancelled = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pump_unref(p);
}

/* ---- connection deadlines ---- */

static conn_slot *slot_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (conn_slot *)ci->socket_context : NULL;
}

/* Enter `phase` with a deadline `limit_us` from now (0: none).  1 if the slot was dropped. */
static int slot_phase(api_server *srv, conn_slot *sl, int phase, int64_t limit_us) {
    if (!sl) return 0;
    int64_t now = gt_mono_us();
    pthread_mutex_lock(&srv->conn_mu);
    sl->phase = phase;
    sl->since_us = now;
    sl->deadline_us = limit_us > 0 ? now + limit_us : 0;
    sl->body_got = 0;
    sl->win_us = 0;
    int dropped = sl->dropped;
    pthread_mutex_unlock(&srv->conn_mu);
    return dropped;
}

/* Count `n` body bytes received on the connection (its rate matters under pressure). */
static void slot_body(api_server *srv, conn_slot *sl, size_t n) {
    if (!sl) return;
    pthread_mutex_lock(&srv->conn_mu);
    sl->body_got += (int64_t)n;
    pthread_mutex_unlock(&srv->conn_mu);
}

static void client_addr(struct MHD_Connection *c, char *out, size_t n);

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    api_server *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_slot *sl = calloc(1, sizeof *sl);
        if (!sl) {
            if (ci) shutdown(ci->connect_fd, SHUT_RDWR); /* untracked: not served */
            return;
        }
        sl->fd = ci ? ci->connect_fd : -1;
        client_addr(c, sl->addr, sizeof sl->addr);
        if (ev_here.srv != srv) {
            int i = atomic_fetch_add(&srv->ev_next, 1);
            ev_here.srv = srv;
            ev_here.cnt = i < srv->nev ? &srv->ev_counts[i] : NULL;
        }
        sl->ev = ev_here.cnt;
        if (sl->ev) atomic_fetch_add(sl->ev, 1);
        sl->phase = PHASE_HEAD;
        sl->since_us = gt_mono_us();
        sl->deadline_us = sl->since_us + (int64_t)srv->cfg.header_timeout_s * 1000000;
        pthread_mutex_lock(&srv->conn_mu);
        sl->next = srv->conns;
        if (srv->conns) srv->conns->prev = sl;
        srv->conns = sl;
        srv->nconns++;
        pthread_mutex_unlock(&srv->conn_mu);
        *socket_context = sl;
        api__metrics_conn_open(1);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_slot *sl = *socket_context;
        if (!sl) return;
        pthread_mutex_lock(&srv->conn_mu);
        if (sl->prev) sl->prev->next = sl->next;
        else srv->conns = sl->next;
        if (sl->next) sl->next->prev = sl->prev;
        srv->nconns--;
        pthread_mutex_unlock(&srv->conn_mu);
        if (sl->ev) atomic_fetch_sub(sl->ev, 1);
        *socket_context = NULL;
        free(sl);
        api__metrics_conn_open(-1);
    }
}

/* Shut a connection down (conn_mu held): MHD's thread sees EOF and closes it. */
static void slot_drop(conn_slot *sl, const char *reason, int64_t now) {
    sl->dropped = 1;
    if (sl->fd >= 0 && !strcmp(reason, "slow_reader")) {
        /* what waits in the send queue is thrown away (a reset when MHD closes it), or the
         * kernel would go on trickling megabytes to the client on the server's behalf */
        struct linger lg = {1, 0};
        setsockopt(sl->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    if (sl->fd >= 0) shutdown(sl->fd, SHUT_RDWR);
    api__metrics_conn_dropped(reason);
    if (ratelog_ok(&rl_drop, "connection dropped")) {
        char secs[32];
        snprintf(secs, sizeof secs, "%.1f", (double)(now - sl->since_us) / 1e6);
        if (!strcmp(reason, "slow_reader"))
            log_kv(LOG_WARN, "connection dropped: the client takes its answer too slowly", "src",
                   sl->addr, "after_s", secs, (char *)NULL);
        else
            log_kv(LOG_WARN, "connection dropped: request not complete in time", "src", sl->addr,
                   "waiting_for", reason, "after_s", secs, (char *)NULL);
    }
}

/*
 * A slow reader (conn_mu held, once a second, for a connection whose answer
 * is being written): one whose kernel send queue has held unacknowledged
 * bytes for a whole window while the client acknowledged fewer than
 * send_min_rate bytes a second of it.  A client that keeps up, however slow
 * the answer itself is (a stream of tokens: the queue empties between
 * them), is never one.  1 when `sl` is one.
 */
static int slow_reader(const api_server *srv, conn_slot *sl, int64_t now) {
    if (srv->cfg.send_min_rate <= 0 || sl->fd < 0) return 0;
    int outq = 0;
    struct tcp_info ti;
    socklen_t tl = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (ioctl(sl->fd, SIOCOUTQ, &outq) != 0 ||
        getsockopt(sl->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) != 0 ||
        tl < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked)
        return 0; /* not TCP, or a kernel that cannot tell: never judged */
    if (outq <= 0 || !sl->win_us) {
        /* nothing waiting for the client: it keeps up; a window starts from here */
        sl->win_us = now;
        sl->win_acked = ti.tcpi_bytes_acked;
        return 0;
    }
    if (now - sl->win_us < SEND_WINDOW_US) return 0;
    uint64_t got = ti.tcpi_bytes_acked - sl->win_acked;
    int64_t want = (int64_t)srv->cfg.send_min_rate * (now - sl->win_us) / 1000000;
    if ((int64_t)got >= want) {
        sl->win_us = now;
        sl->win_acked = ti.tcpi_bytes_acked;
        return 0;
    }
    return 1;
}

/* The watcher: five times a second, cut connections past their deadlines. */
static void *guard_main(void *arg) {
    api_server *srv = arg;
    unsigned tick = 0;
    while (!atomic_load(&srv->guard_stop)) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
        int64_t now = gt_mono_us();
        int rate_tick = ++tick % 5 == 0; /* slow readers: judged once a second */
        pthread_mutex_lock(&srv->conn_mu);
        /* three quarters full: headers within 2 s; nine tenths: within 0.5 s */
        int64_t head_us = srv->nconns * 10 >= srv->cfg.max_conns * 9   ? PRESSURE_HEAD_US / 4
                          : srv->nconns * 4 >= srv->cfg.max_conns * 3 ? PRESSURE_HEAD_US
                                                                       : 0;
        for (conn_slot *sl = srv->conns; sl; sl = sl->next) {
            if (sl->dropped) continue;
            if (sl->deadline_us && now > sl->deadline_us)
                slot_drop(sl, sl->phase == PHASE_BODY ? "body" : "headers", now);
            else if (head_us && sl->phase == PHASE_HEAD && now - sl->since_us > head_us)
                slot_drop(sl, "pressure", now);
            /* a body trickled in is as much a slow client as trickled headers: past the
             * same grace, one coming slower than BODY_RATE bytes a second is shed too */
            else if (head_us && sl->phase == PHASE_BODY && now - sl->since_us > head_us &&
                     sl->body_got < (now - sl->since_us - head_us) * BODY_RATE / 1000000)
                slot_drop(sl, "pressure", now);
            else if (rate_tick && sl->phase == PHASE_BUSY && slow_reader(srv, sl, now))
                slot_drop(sl, "slow_reader", now);
        }
        pthread_mutex_unlock(&srv->conn_mu);
        ratelog_flush_all();
    }
    return NULL;
}

/* The URI log callback: the target as received, before MHD decodes it in place. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    conn_ctx *cx = calloc(1, sizeof *cx);
    if (!cx) return NULL;
    cx->raw_at = uri;
    cx->raw = strdup(uri ? uri : "");
    cx->slot = slot_of(c);
    return cx;
}

/* Collect every request header, duplicates included, for router_check_headers. */
typedef struct hdr_list {
    router_hdr h[64];
    size_t n;
    int overflow;
} hdr_list;

static MHD_Result collect_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
                              const char *value) {
    (void)kind;
    hdr_list *l = cls;
    if (l->n == sizeof l->h / sizeof l->h[0]) {
        l->overflow = 1;
        return MHD_NO;
    }
    l->h[l->n].key = key;
    l->h[l->n].value = value ? value : "";
    l->n++;
    return MHD_YES;
}

/*
 * Was this header folded onto a continuation line (obs-fold: "Content-Length:
 * 2" then " 0")?  MHD 0.9 rebuilds such a header in a copy of its own and
 * glues the continuation to its *name* ("Content-Length0": 2), so MHD reads no
 * body where a proxy in front reads 2 or 20 bytes; an unfolded header stays
 * in the read buffer, its value right after its name (the colon, made NUL,
 * and optional whitespace between them).  RFC 9112 lets a server refuse
 * obs-fold with a 400: every folded header is refused.  Pure.
 */
static int folded(const char *key, const char *value) {
    const char *p = key + strlen(key);
    /* compared as addresses: a rebuilt value lies in another allocation */
    uintptr_t k = (uintptr_t)p, v = (uintptr_t)value;
    if (v <= k || v - k > 8192) return 1;
    for (size_t i = 0; i < v - k; i++)
        if (p[i] != '\0' && p[i] != ' ' && p[i] != '\t') return 1;
    return 0;
}

/*
 * Why this request is malformed, or NULL: its target, then its headers.  A NUL
 * byte in the target ends MHD's copy early, which shows as the target being
 * shorter than the room between it and the version MHD parsed after it (both
 * point into MHD's read buffer; checked only when they do).
 */
static const char *malformed(struct MHD_Connection *c, conn_ctx *cx, const char *url,
                             const char *version) {
    if (cx->raw) {
        size_t rlen = strlen(cx->raw);
        uintptr_t u = (uintptr_t)url, v = (uintptr_t)version;
        if (cx->raw_at == url && version && v > u + 1 && v - u <= 65536 && version[-1] == '\0' &&
            v - u - 1 > rlen)
            return "NUL byte in the request target";
        const char *why = router_check_target(cx->raw, rlen, url);
        if (why) return why;
    }
    hdr_list l = {.n = 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, collect_hdr, &l);
    if (l.overflow) return "too many request headers (64 at most)";
    for (size_t i = 0; i < l.n; i++)
        if (folded(l.h[i].key, l.h[i].value)) return "a header folded over several lines";
    int http11 = version && strcasecmp(version, "HTTP/1.0") != 0 && version[0];
    return router_check_headers(l.h, l.n, http11);
}

static const char *static_method(const char *m) {
    static const char *const known[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(m, known[i]) == 0) return known[i];
    return "OTHER";
}

static MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                              const char *value) {
    (void)kind;
    api_req *r = cls;
    if (r->nquery >= 64) return MHD_YES;
    api_kv *nq = realloc(r->query, sizeof *nq * (size_t)(r->nquery + 1));
    if (!nq) return MHD_NO;
    r->query = nq;
    nq[r->nquery].key = strdup(key);
    nq[r->nquery].value = strdup(value ? value : "");
    if (!nq[r->nquery].key || !nq[r->nquery].value) {
        free(nq[r->nquery].key);
        free(nq[r->nquery].value);
        return MHD_NO;
    }
    r->nquery++;
    return MHD_YES;
}

static void client_addr(struct MHD_Connection *c, char *out, size_t n) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, n, "unknown");
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)n);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)n);
}

static void common_headers(struct MHD_Response *resp, api_req *r) {
    MHD_add_response_header(resp, "Content-Type",
                            r->content_type ? r->content_type : "application/json");
    MHD_add_response_header(resp, "X-Request-Id", r->request_id);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    for (int i = 0; i < r->nheaders; i++)
        if (r->headers[i].key && r->headers[i].value)
            MHD_add_response_header(resp, r->headers[i].key, r->headers[i].value);
}

/* Queue the streamed answer whose bytes the worker pumps (it holds the other reference). */
static MHD_Result send_pumped(struct MHD_Connection *c, conn_ctx *cx) {
    pump *p = cx->pump;
    cx->pump = NULL;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, pump_reader, p, pump_released);
    if (!resp) {
        pump_released(p); /* the worker stops; the connection is cut */
        return MHD_NO;
    }
    common_headers(resp, &cx->req);
    MHD_Result ret = MHD_queue_response(c, (unsigned)cx->req.status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static MHD_Result send_reply(struct MHD_Connection *c, api_req *r) {
    char *text = NULL;
    const char *body;
    if (r->resp) {
        text = json_dumps(r->resp, JSON_COMPACT);
        body = text ? text : "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\"}}";
    } else {
        body = r->resp_text ? r->resp_text : "";
    }
    size_t len = strlen(body);
    char *copy = NULL;
    if (text) {
        copy = text; /* ownership passes to MHD below */
    } else if (r->resp_text) {
        copy = r->resp_text; /* the answer's text itself, not a copy: it goes to MHD below */
        r->resp_text = NULL;
    } else {
        copy = malloc(len + 2);
        if (copy) memcpy(copy, body, len + 1);
    }
    if (!copy) return MHD_NO;
    int add_nl = r->resp != NULL;
    if (add_nl) {
        char *nc = realloc(copy, len + 2);
        if (nc) {
            copy = nc;
            copy[len++] = '\n';
            copy[len] = '\0';
        }
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(copy);
        return MHD_NO;
    }
    common_headers(resp, r);
    if (r->status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (r->allow) MHD_add_response_header(resp, "Allow", r->allow);
    MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/*
 * Requests that come all the time and mean nothing on their own: agents'
 * heartbeats and long polls (every node, every few seconds), scrapes of
 * /metrics and probes of /healthz and /readyz.  Their access lines are at
 * debug level when they succeed (status < 400); a failed one, and an agent's
 * registration (a node joining), stay at info like every other request.
 */
static int quiet_route(const api_req *r) {
    if (!r->route || r->status >= 400) return 0;
    const char *p = r->route->pattern;
    if (strncmp(p, "/api/v1/agent/", 14) == 0) return !(r->route->flags & ROUTE_MUTATES);
    return strcmp(p, "/metrics") == 0 || strcmp(p, "/healthz") == 0 || strcmp(p, "/readyz") == 0;
}

static void finish_log(api_req *r) {
    int64_t dur = gt_mono_us() - r->start_us;
    const char *route = r->route ? r->route->pattern : "unmatched";
    api__metrics_observe(r->route ? r->route->method : static_method(r->method), route, r->status,
                         dur);
    char st[8], ms[32];
    snprintf(st, sizeof st, "%d", r->status);
    snprintf(ms, sizeof ms, "%.3f", (double)dur / 1000.0);
    if (r->status == 401 && !r->who) {
        /* refused without a valid credential: counted always, logged 10 a second at most */
        const char *reason = "credentials"; /* a public route's own: password, join token */
        if (r->authorization) reason = auth_bearer(r->authorization) ? "invalid" : "malformed";
        else if (!r->route || !(r->route->flags & ROUTE_PUBLIC)) reason = "missing";
        api__metrics_auth_refusal(reason);
        if (!ratelog_ok(&rl_refusal, "anonymous refusal")) return;
    } else if (r->status == 400 && !r->route && !ratelog_ok(&rl_malformed, "malformed request")) {
        return;
    }
    log_kv(quiet_route(r) ? LOG_DEBUG : LOG_INFO, "access", "rid", r->request_id, "src",
           r->source, "method", r->method, "path", r->path, "route", route, "status", st, "ms",
           ms, "actor", r->who ? r->who->name : "-", (char *)NULL);
}

/* The worker's side of a connection done with: its answer can go out.  cx may be gone after. */
static void mark_ready(conn_ctx *cx) {
    struct MHD_Connection *c = cx->conn;
    atomic_store(&cx->ready, 1);
    MHD_resume_connection(c);
}

/*
 * On a worker: run the request's handler, then let MHD send the answer.  A
 * streamed answer is produced right here, the worker reading the handler's
 * stream into the pump while MHD's event thread sends it (the stream's read
 * and release both run on this worker, one after the other).
 */
/* api_resume's hook: the deferred answer is made; whoever comes last sends it. */
static void resume_request(api_req *r) {
    conn_ctx *cx = (conn_ctx *)(void *)r; /* req is conn_ctx's first member */
    if (atomic_exchange(&cx->park, 2) == 1) {
        finish_log(r);
        mark_ready(cx);
    } /* else the worker is still in the handler: it sends it on its way out */
}

/* A worker: read the handler's stream into the pump until it ends or the client is gone. */
static void pump_stream(pump *p, long (*rd)(void *, char *, size_t), void (*rel)(void *),
                        void *cls) {
    char tmp[16384];
    for (;;) {
        long n = rd(cls, tmp, sizeof tmp);
        if (n <= 0) {
            pump_end(p, n == 0 ? 1 : -1);
            break;
        }
        if (pump_push(p, tmp, (size_t)n)) break; /* the client is gone */
    }
    if (rel) rel(cls);
    pump_unref(p);
}

static void run_request(void *arg) {
    conn_ctx *cx = arg;
    api_req *r = &cx->req;
    r->resume = resume_request;
    if (cx->body_in_us) gw_stage_observe(GW_STAGE_HOP, gt_mono_us() - cx->body_in_us);
    api__dispatch(r);
    if (r->deferred) {
        /* parked: no thread waits; api_resume sends it (or did already) */
        if (atomic_exchange(&cx->park, 1) == 2) {
            finish_log(r);
            mark_ready(cx);
        }
        return;
    }
    finish_log(r);
    if (!r->stream_read) {
        if (cx->body_in_us) cx->answered_us = gt_mono_us();
        mark_ready(cx);
        return;
    }
    long (*rd)(void *, char *, size_t) = r->stream_read;
    void (*rel)(void *) = r->stream_free;
    void *cls = r->stream_cls;
    pump *p = pump_new(cx->conn);
    if (!p) {
        /* the handler's stream is released with the request; a plain 500 goes out */
        api_error(r, 500, "out_of_memory", "out of memory");
        mark_ready(cx);
        return;
    }
    r->stream_read = NULL; /* this worker owns the stream now */
    r->stream_free = NULL;
    r->stream_cls = NULL;
    cx->pump = p;
    mark_ready(cx); /* from here cx belongs to MHD again */
    pump_stream(p, rd, rel, cls);
}

/* A stream handed from an event thread to a worker (run_inline). */
typedef struct stream_task {
    pump *p;
    long (*rd)(void *, char *, size_t);
    void (*rel)(void *);
    void *cls;
} stream_task;

static void stream_main(void *arg) {
    stream_task *t = arg;
    pump_stream(t->p, t->rd, t->rel, t->cls);
    free(t);
}

/*
 * May this request's handler run right here, on the event thread that read
 * it ("Threads" at the top)?  A gateway request (/v1/) on a connection that
 * is the only one its event thread serves, while another event thread is
 * left free to accept: so waiting for the upstream here holds up no other
 * connection.  1: yes (counted in inline_running; run_inline uncounts it).
 */
static int take_inline(api_server *srv, conn_ctx *cx) {
    conn_slot *sl = cx->slot;
    if (!srv->gw || srv->cfg.threads < 2 || !sl || !sl->ev || strncmp(cx->req.path, "/v1/", 4))
        return 0;
    /* a body that may ask for a stream goes to a worker, which pumps the stream's bytes from
     * the start (handing it over from here costs an extra suspend and resume) */
    if (cx->req.body && memmem(cx->req.body, cx->req.body_len, "\"stream\"", 8)) return 0;
    if (sl->ev != ev_here.cnt || ev_here.srv != srv || atomic_load(sl->ev) != 1) return 0;
    int n = atomic_load(&srv->inline_running);
    do {
        if (n >= srv->cfg.threads - 1) return 0;
    } while (!atomic_compare_exchange_weak(&srv->inline_running, &n, n + 1));
    if (atomic_load(&srv->inline_stop)) { /* the stop waits for none after it set this */
        atomic_fetch_sub(&srv->inline_running, 1);
        return 0;
    }
    return 1;
}

/*
 * On the event thread (take_inline said so): run the handler and queue its
 * answer at once, with no worker and no suspend/resume round trip.  A
 * streamed answer's bytes are still read on a worker (a stream may last
 * minutes, and between its chunks this thread serves whatever it accepts).
 */
static MHD_Result run_inline(api_server *srv, struct MHD_Connection *c, conn_ctx *cx) {
    api_req *r = &cx->req;
    MHD_Result ret = MHD_YES;
    cx->conn = c;
    r->resume = resume_request;
    if (cx->body_in_us) gw_stage_observe(GW_STAGE_HOP, 0); /* none: this thread runs it */
    api__dispatch(r);
    if (r->deferred) {
        cx->queued = 1;
        MHD_suspend_connection(c);
        if (atomic_exchange(&cx->park, 1) == 2) {
            finish_log(r);
            mark_ready(cx);
        }
        goto out;
    }
    if (r->stream_read) {
        stream_task *t = malloc(sizeof *t);
        pump *p = t ? pump_new(c) : NULL;
        if (p) {
            t->p = p;
            t->rd = r->stream_read;
            t->rel = r->stream_free;
            t->cls = r->stream_cls;
            r->stream_read = NULL; /* the worker owns the stream now */
            r->stream_free = NULL;
            r->stream_cls = NULL;
            if (api__pool_submit(srv->pool, stream_main, t) == 0) {
                cx->pump = p;
                finish_log(r);
                ret = send_pumped(c, cx);
                goto out;
            }
            r->stream_read = t->rd; /* released with the request */
            r->stream_free = t->rel;
            r->stream_cls = t->cls;
            pump_unref(p);
            pump_unref(p);
            api_error(r, 503, "unavailable", "the server cannot take more work now; retry");
        } else {
            api_error(r, 500, "out_of_memory", "out of memory");
        }
        free(t);
    }
    finish_log(r);
    if (cx->body_in_us) cx->answered_us = gt_mono_us();
    ret = send_reply(c, r);
out:
    atomic_fetch_sub(&srv->inline_running, 1);
    return ret;
}

static MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls) {
    api_server *srv = cls;
    conn_ctx *cx = *con_cls;
    if (!cx) { /* no URI callback context (out of memory there) */
        cx = calloc(1, sizeof *cx);
        if (!cx) return MHD_NO;
        *con_cls = cx;
        cx->slot = slot_of(c);
    }
    if (!cx->started) {
        cx->started = 1;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
        uint64_t declared = cl ? strtoull(cl, NULL, 10) : te ? srv->cfg.max_body : 0;
        if (declared > srv->cfg.max_body) declared = srv->cfg.max_body;
        int64_t body_us = ((int64_t)srv->cfg.body_timeout_s + (int64_t)(declared / BODY_RATE)) *
                          1000000;
        /* cut already (its headers came just too late): not served */
        if (slot_phase(srv, cx->slot, declared ? PHASE_BODY : PHASE_BUSY, declared ? body_us : 0))
            return MHD_NO;
        atomic_fetch_add(&srv->inflight, 1);
        cx->counted = 1;
        sb_init(&cx->body);
        api_req *r = &cx->req;
        r->store = srv->store;
        r->cfg = &srv->cfg;
        r->leader = srv->cfg.gateway_only ? -1 : atomic_load(&srv->leading);
        r->gw = srv->gw;
        r->login_guard = srv->login_guard;
        r->method = method;
        r->start_us = gt_mono_us();
        rnd_id(r->request_id);
        r->path = strdup(url);
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (auth) r->authorization = strdup(auth);
        client_addr(c, r->source, sizeof r->source);
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, r);
        if (!r->path) return MHD_NO;
        const char *why = malformed(c, cx, url, version);
        if (why) {
            /* ambiguous framing or target: refuse, and close so that nothing after it
             * on this connection is taken for another request */
            cx->too_large = 1; /* drop any body */
            api_error(r, 400, "bad_request", why);
            api_header(r, "Connection", "close");
            api__metrics_malformed();
            finish_log(r);
            return send_reply(c, r);
        }
        if (atomic_load(&srv->closing)) {
            /* counted in inflight before this check, so the stop waits for this answer;
             * a request dispatched after the drain could commit and lose its answer */
            api_error(r, 503, "shutting_down", "the server is stopping; retry the request");
            finish_log(r);
            return send_reply(c, r);
        }
        if (cl && strtoull(cl, NULL, 10) > srv->cfg.max_body) {
            cx->too_large = 1;
            api_error(r, 413, "payload_too_large", "request body exceeds the size limit");
            finish_log(r);
            return send_reply(c, r);
        }
        return MHD_YES;
    }
    api_req *r = &cx->req;
    if (cx->queued) {
        /* resumed: the worker is done */
        if (!atomic_load(&cx->ready)) return MHD_YES;
        return cx->pump ? send_pumped(c, cx) : send_reply(c, r);
    }
    if (*upload_size) {
        slot_body(srv, cx->slot, *upload_size);
        if (!cx->too_large) {
            if (cx->body.len + *upload_size > srv->cfg.max_body) {
                cx->too_large = 1;
                sb_release(&cx->body);
            } else {
                sb_add(&cx->body, upload, *upload_size);
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->status) return MHD_YES; /* already answered (413 on the first call) */
    slot_phase(srv, cx->slot, PHASE_BUSY, 0); /* the body is in: no deadline for the handler */
    if (cx->too_large) {
        api_error(r, 413, "payload_too_large", "request body exceeds the size limit");
    } else if (!sb_ok(&cx->body)) {
        api_error(r, 500, "out_of_memory", "out of memory");
    } else {
        /* the handler runs on a worker; the connection waits, suspended, holding no thread */
        r->body = cx->body.buf;
        r->body_len = cx->body.len;
        if (srv->gw && !strncmp(r->path, "/v1/", 4)) cx->body_in_us = gt_mono_us();
        if (take_inline(srv, cx)) return run_inline(srv, c, cx);
        cx->conn = c;
        cx->queued = 1;
        MHD_suspend_connection(c);
        if (api__pool_submit(srv->pool, run_request, cx) == 0) return MHD_YES;
        api_error(r, 503, "unavailable", "the server cannot take more work now; retry");
        finish_log(r);
        atomic_store(&cx->ready, 1);
        MHD_resume_connection(c);
        return MHD_YES;
    }
    finish_log(r);
    return send_reply(c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    api_server *srv = cls;
    conn_ctx *cx = *con_cls;
    /* kept alive: the next request's headers have header_timeout_s from now */
    slot_phase(srv, cx && cx->slot ? cx->slot : slot_of(c), PHASE_HEAD,
               (int64_t)srv->cfg.header_timeout_s * 1000000);
    if (!cx) return;
    if (cx->answered_us && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        gw_stage_observe(GW_STAGE_REPLY, gt_mono_us() - cx->answered_us);
    if (cx->counted) atomic_fetch_sub(&srv->inflight, 1);
    api__req_release(&cx->req);
    sb_release(&cx->body);
    free(cx->raw);
    free(cx);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    api_server *srv = cls;
    strbuf sb = SB_INIT;
    sb_vaddf(&sb, fmt, ap);
    while (sb.len && sb.buf[sb.len - 1] == '\n') sb_setlen(&sb, sb.len - 1);
    if (srv && srv->starting && !srv->start_err[0] && sb_ok(&sb))
        snprintf(srv->start_err, sizeof srv->start_err, "%s", sb.buf);
    /* mostly what clients cause (closed early, malformed, over a limit): rate-limited */
    if ((srv && srv->starting) || ratelog_ok(&rl_mhd, "http"))
        log_kv(LOG_WARN, sb_ok(&sb) ? sb.buf : "mhd", "component", "http", (char *)NULL);
    sb_release(&sb);
}

/* libmicrohttpd's fatal errors: said in the log (file, line, reason) before the abort, so a
 * crash report names its cause. */
static void mhd_panic(void *cls, const char *file, unsigned int line, const char *reason) {
    (void)cls;
    char ln[16];
    snprintf(ln, sizeof ln, "%u", line);
    log_kv(LOG_ERROR, "libmicrohttpd fatal error", "file", file ? file : "?", "line", ln,
           "reason", reason ? reason : "?", (char *)NULL);
    abort();
}

/* Parse "HOST:PORT" / "[V6]:PORT" into a socket address. */
static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len, gp_err *err) {
    char host[128];
    const char *colon;
    memset(ss, 0, sizeof *ss);
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof host) goto bad;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof host) goto bad;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535) goto bad;
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
        return GP_OK;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return GP_OK;
    }
bad:
    return gp_err_set(err, GP_EINVALID, "--listen must be HOST:PORT or [IPV6]:PORT, got '%s'", s);
}

/*
 * Each connection holds a descriptor: raise the soft RLIMIT_NOFILE to what
 * `*max_conns` needs (plus room for the store, logs and upstream calls), up to
 * the hard limit; below that, lower *max_conns and say so.
 */
static void fit_open_files(int *max_conns) {
    struct rlimit rl;
    const rlim_t spare = 256;
    rlim_t need = (rlim_t)*max_conns + spare;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return;
    rlim_t want = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) ? need : rl.rlim_max;
    if (want > rl.rlim_cur) {
        struct rlimit nl = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0) rl.rlim_cur = want;
    }
    if (rl.rlim_cur >= need) return;
    int fit = rl.rlim_cur > 2 * spare ? (int)(rl.rlim_cur - spare) : (int)(rl.rlim_cur / 2);
    if (fit < 1) fit = 1;
    char have[32], conns[32];
    snprintf(have, sizeof have, "%llu", (unsigned long long)rl.rlim_cur);
    snprintf(conns, sizeof conns, "%d", fit);
    log_kv(LOG_WARN, "the open-file limit caps connections below --max-connections (raise "
                     "`ulimit -n` / LimitNOFILE)",
           "nofile", have, "max_connections", conns, (char *)NULL);
    *max_conns = fit;
}

int api_tls_supported(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

int api_server_start(const api_config *cfg, store_t *st, api_server **out, gp_err *err) {
    struct sockaddr_storage ss;
    socklen_t slen;
    *out = NULL;
    int rc = parse_listen(cfg->listen, &ss, &slen, err);
    if (rc) return rc;
    int tls = cfg->tls_cert_pem != NULL;
    if (tls != (cfg->tls_key_pem != NULL))
        return gp_err_set(err, GP_EINVALID, "HTTPS needs both a certificate and a key");
    if (tls && !api_tls_supported())
        return gp_err_set(err, GP_EINVALID,
                          "this libmicrohttpd was built without TLS support; serve plain HTTP "
                          "behind a TLS proxy, or install a libmicrohttpd built with GnuTLS");
    api_server *srv = calloc(1, sizeof *srv);
    if (!srv) return gp_err_set(err, GP_ENOMEM, NULL);
    srv->cfg = *cfg;
    if (srv->cfg.threads < 1) srv->cfg.threads = 1;
    if (srv->cfg.max_conns <= 0) srv->cfg.max_conns = 1000;
    if (srv->cfg.max_conns_per_ip < 0) srv->cfg.max_conns_per_ip = 0;
    if (srv->cfg.header_timeout_s <= 0) srv->cfg.header_timeout_s = 10;
    if (srv->cfg.send_min_rate == 0) srv->cfg.send_min_rate = 1024;
    if (srv->cfg.body_timeout_s <= 0) srv->cfg.body_timeout_s = 30;
    if (srv->cfg.idle_timeout_s <= 0) srv->cfg.idle_timeout_s = 30;
    fit_open_files(&srv->cfg.max_conns);
    srv->store = st;
    atomic_init(&srv->inflight, 0);
    atomic_init(&srv->closing, 0);
    atomic_init(&srv->leading, 0);
    api__metrics_init();
    if (!srv->cfg.gateway_only)
        srv->login_guard = api__login_guard_new(srv->cfg.login_fail_name, srv->cfg.login_fail_addr);
    if (srv->cfg.gateway || srv->cfg.gateway_only) {
        gw_runtime_config gc = {.flush_ms = 200, .batch = 256,
                                .health_interval_s = srv->cfg.health_interval_s,
                                .upstream_timeout_s = 300};
        if (!srv->cfg.gateway_only) {
            gc.leads = server_leads;
            gc.leads_arg = srv;
        }
        if ((rc = gw_rt_start(st, &gc, &srv->gw, err))) {
            api__login_guard_free(srv->login_guard);
            free(srv);
            return rc;
        }
    }
    pthread_mutex_init(&srv->conn_mu, NULL);
    atomic_init(&srv->guard_stop, 0);
    /* a few event threads move the bytes (poll); handlers run on the workers */
    srv->pool = api__pool_new(srv->cfg.threads, srv->cfg.max_conns + 16, (size_t)1 << 20);
    srv->nev = srv->cfg.threads;
    srv->ev_counts = calloc((size_t)srv->nev, sizeof *srv->ev_counts);
    atomic_init(&srv->ev_next, 0);
    atomic_init(&srv->inline_running, 0);
    atomic_init(&srv->inline_stop, 0);
    if (!srv->pool || !srv->ev_counts) {
        api__pool_free(srv->pool);
        free(srv->ev_counts);
        pthread_mutex_destroy(&srv->conn_mu);
        gw_rt_stop(srv->gw);
        api__login_guard_free(srv->login_guard);
        free(srv);
        return gp_err_set(err, GP_ENOMEM, "cannot start the HTTP workers");
    }
    /* poll(), not epoll: MHD_quiesce_daemon() on an epoll daemon with a thread pool races with
     * MHD's own loop over the listening socket and now and then aborts the process ("Failed to
     * remove listen FD from epoll set", an open defect of libmicrohttpd 0.9.x); with poll() the
     * quiesce is a flag and a wake-up.  Each event thread polls only its own connections. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    if (tls) flags |= MHD_USE_TLS;
    /* the TLS options go last: with plain HTTP they are cut off by the first END */
    MHD_set_panic_func(mhd_panic, NULL);
    srv->starting = 1;
    srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                              MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
                              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                              MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->cfg.threads,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
                              MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->cfg.idle_timeout_s,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)srv->cfg.max_conns,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                              (unsigned)srv->cfg.max_conns_per_ip,
                              tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cfg->tls_cert_pem,
                              MHD_OPTION_HTTPS_MEM_KEY, cfg->tls_key_pem,
                              MHD_OPTION_END);
    srv->starting = 0;
    if (srv->d) srv->guard_running = pthread_create(&srv->guard, NULL, guard_main, srv) == 0;
    if (srv->d && !srv->guard_running) {
        MHD_stop_daemon(srv->d);
        srv->d = NULL;
        snprintf(srv->start_err, sizeof srv->start_err, "cannot start the connection watcher");
    }
    if (!srv->d) {
        api__pool_free(srv->pool);
        free(srv->ev_counts);
        pthread_mutex_destroy(&srv->conn_mu);
        gw_rt_stop(srv->gw);
        api__login_guard_free(srv->login_guard);
        if (tls && srv->start_err[0] && !strstr(srv->start_err, "bind")) {
            rc = gp_err_set(err, GP_EINVALID,
                            "cannot start HTTPS on %s: %s (is the key the certificate's, "
                            "PEM and unencrypted?)",
                            cfg->listen, srv->start_err);
        } else {
            rc = gp_err_set(err, GP_EIO, "cannot listen on %s (address in use or not permitted)",
                            cfg->listen);
        }
        free(srv);
        return rc;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : 0;
    pthread_mutex_init(&srv->loop_mu, NULL);
    pthread_cond_init(&srv->loop_cv, NULL);
    if (srv->cfg.node_timeout_s > 0)
        srv->loop_running = pthread_create(&srv->loop, NULL, loop_main, srv) == 0;
    else if (!srv->cfg.gateway_only)
        check_lead(srv); /* no loop: lead (or not) from the start, for inline rounds */
    *out = srv;
    return GP_OK;
}

int api_listen_check(const char *listen, gp_err *err) {
    struct sockaddr_storage ss;
    socklen_t len;
    return parse_listen(listen, &ss, &len, err);
}

int api_server_port(const api_server *srv) { return srv->port; }

void api_server_stop(api_server *srv) {
    if (!srv) return;
    pthread_mutex_lock(&srv->loop_mu);
    srv->stopping = 1;
    pthread_cond_signal(&srv->loop_cv);
    pthread_mutex_unlock(&srv->loop_mu);
    if (srv->loop_running) pthread_join(srv->loop, NULL);
    pthread_mutex_destroy(&srv->loop_mu);
    pthread_cond_destroy(&srv->loop_cv);
    /* no new connections: the listening socket stops listening at once (clients with another
     * server to try are refused, not left in the backlog); it is closed only after MHD stops,
     * since an event thread may poll it once more before it sees the quiesce */
    MHD_socket fd = MHD_quiesce_daemon(srv->d);
    if (fd != MHD_INVALID_SOCKET) shutdown(fd, SHUT_RDWR);
    int64_t deadline = gt_mono_us() + (int64_t)srv->cfg.drain_seconds * 1000000;
    while (atomic_load(&srv->inflight) > 0 && gt_mono_us() < deadline) usleep(20000);
    /* A connection accepted before the quiesce may start a request after the wait saw
     * none: from here such requests are answered 503 instead of dispatched, and the
     * ones that counted themselves before seeing `closing` are waited for. */
    atomic_store(&srv->closing, 1);
    while (atomic_load(&srv->inflight) > 0 && gt_mono_us() < deadline) usleep(20000);
    /* every handler and stream still on a worker finishes first (MHD may stop only once no
     * connection waits suspended for a worker), and so does every handler on an event thread
     * (it may still hand a stream to a worker) */
    atomic_store(&srv->inline_stop, 1);
    while (atomic_load(&srv->inline_running) > 0) usleep(1000);
    api__pool_free(srv->pool);
    MHD_stop_daemon(srv->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    atomic_store(&srv->guard_stop, 1);
    if (srv->guard_running) pthread_join(srv->guard, NULL);
    pthread_mutex_destroy(&srv->conn_mu);
    /* every stream has ended: its usage record is queued; write them all */
    gw_rt_stop(srv->gw);
    api__login_guard_free(srv->login_guard);
    api__metrics_free();
    free(srv->ev_counts);
    free(srv);
}
