/*
 * cache.c - what a gateway request reads, from memory (see gateway.h,
 * "the read cache"): the key a secret authenticates (with its owner's
 * standing, its project's and tenant's ceilings), and the route of a model
 * name within a tenant (the model's tenant and its endpoints).
 *
 * Invalidation: every change to what these depend on bumps gw_epoch in the
 * store, in the same transaction (triggers of migration 15 on keys, users,
 * role bindings, tenants, projects, apps, quotas, models, endpoints; the jobs
 * serving an endpoint, their bindings, migration 17, and their listening
 * ports, migration 21).  The runtime reads that row about once a second
 * (gw_cache_poll); a new value drops every entry.  After any commit of
 * this process (store_commit_total moved) the next lookup reads the epoch
 * first, so a change made here - a key revoked, an owner disabled, a role
 * removed - is seen by the very next request.  A change through this
 * process's own key and model functions (gw_cache_changed) also bypasses
 * the cache for GW_CACHE_DISTRUST_US.  A key entry also ends when the key expires or
 * when the last role binding that lets its owner hold it does.
 *
 * Only successes are cached for keys (an unknown or revoked secret reads
 * the store each time); routes are cached found or not.
 *
 * On PostgreSQL a thread of the cache also LISTENs on gpupool_gw_epoch (migration 32:
 * every move of gw_epoch notifies it at commit) and polls at once when told, so a change
 * made through another server - a key revoked there - reaches this one within a round
 * trip, not at the next poll; the once-a-second poll stays (a notification lost with a
 * broken connection costs at most that).  The listener reconnects by itself.
 *
 * The port set (issue 33 item 2): the running jobs that serve endpoints,
 * each with its node and listening ports, reloaded with each new epoch and
 * consulted on every request (gw_cache_ports_check), so a job endpoint
 * whose port closed is not tried, whatever route is cached.
 */
#include "gateway.h"

#include "../core/gtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_BUCKETS 1024
#define CACHE_MAX 20000                 /* entries of each kind: beyond, everything is dropped */
#define GW_CACHE_DISTRUST_US 2000000LL  /* after a local change: read the store for this long */

typedef struct key_ent {
    struct key_ent *next;
    char hash[RND_HASH_LEN];
    gw_key key;              /* models owned here */
    int64_t until_us;        /* 0: no end but invalidation */
} key_ent;

/* a running job that serves an endpoint: its node and its listening ports (jobs.listen_ports) */
typedef struct port_ent {
    char job_id[RND_ID_LEN];
    char node[64];
    char ports[128];         /* JOBS_PORTS_MAX ports of 5 digits and commas fit */
} port_ent;

typedef struct route_ent {
    struct route_ent *next;
    char tenant_id[RND_ID_LEN];
    char model[128];
    int found;
    gw_route route;
} route_ent;

struct gw_cache {
    store_t *store;
    pthread_mutex_t mu;
    key_ent *keys[CACHE_BUCKETS];
    route_ent *routes[CACHE_BUCKETS];
    size_t nkeys, nroutes;
    int64_t epoch;           /* the store's, as last read; -1: not read yet */
    unsigned long long commits; /* store_commit_total() before that read */
    uint64_t hits, misses, drops;
    /* the port set (gw_cache_ports_check), sorted by job_id; loaded with the epoch `ports_epoch`
     * (-1: none loaded, or the last read failed: every job endpoint is closed) */
    port_ent *ports;
    size_t nports;
    int64_t ports_epoch;
    /* the listener (PostgreSQL): its thread, asked to stop by `stop` */
    pthread_t listener;
    int listening;           /* the thread runs */
    _Atomic int stop;
    _Atomic unsigned long long notifies; /* notifications received */
    store_listener *first;   /* the listener gw_cache_listen opened, the thread's to keep */
};

#define GW_EPOCH_CHANNEL "gpupool_gw_epoch"
#define LISTEN_WAIT_MS 200      /* how often the listener looks at `stop` */
#define LISTEN_RETRY_MS 1000    /* after a failure, before listening again */

/* local changes (any cache of this process): the wall clock until which not to trust one */
static _Atomic int64_t distrust_until;

void gw_cache_changed(void) {
    atomic_store(&distrust_until, gt_now_us() + GW_CACHE_DISTRUST_US);
}

static unsigned hash2(const char *a, const char *b) {
    unsigned h = 2166136261u;
    for (; *a; a++) h = (h ^ (unsigned char)*a) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (; b && *b; b++) h = (h ^ (unsigned char)*b) * 16777619u;
    return h % CACHE_BUCKETS;
}

/* Drop every entry. Locked. */
static void drop_all(gw_cache *c) {
    for (int i = 0; i < CACHE_BUCKETS; i++) {
        for (key_ent *e = c->keys[i], *n; e; e = n) {
            n = e->next;
            gw_key_release(&e->key);
            free(e);
        }
        for (route_ent *e = c->routes[i], *n; e; e = n) {
            n = e->next;
            free(e);
        }
        c->keys[i] = NULL;
        c->routes[i] = NULL;
    }
    c->nkeys = c->nroutes = 0;
    c->drops++;
}

/* The listener's thread: poll the epoch whenever a change is announced; reconnect after a
 * failure.  Ends when c->stop is set. */
static void *listen_main(void *arg) {
    gw_cache *c = arg;
    store_listener *l = c->first; /* (NULL: gw_cache_listen could not open one yet) */
    int64_t retry_at = 0;
    c->first = NULL;
    if (l) { /* (what changed before it listened: read it now, as after a reconnect) */
        gp_err err = GP_ERR_INIT;
        (void)gw_cache_poll(c, &err);
    }
    while (!atomic_load(&c->stop)) {
        gp_err err = GP_ERR_INIT;
        int got = 0;
        if (!l) {
            if (gt_mono_us() < retry_at) {
                struct timespec ts = {0, LISTEN_WAIT_MS * 1000000L};
                nanosleep(&ts, NULL);
                continue;
            }
            if (store_listen(c->store, GW_EPOCH_CHANNEL, &l, &err)) {
                retry_at = gt_mono_us() + LISTEN_RETRY_MS * 1000LL;
                continue;
            }
            /* (what changed while it was not listening: the next poll reads it) */
            gp_err_clear(&err);
            (void)gw_cache_poll(c, &err);
        }
        if (store_listen_wait(l, LISTEN_WAIT_MS, &got, &err)) {
            store_listen_close(l);
            l = NULL;
            retry_at = gt_mono_us() + LISTEN_RETRY_MS * 1000LL;
            continue;
        }
        if (got) {
            atomic_fetch_add(&c->notifies, (unsigned long long)got);
            gp_err_clear(&err);
            (void)gw_cache_poll(c, &err); /* (a failed read drops everything: nothing trusted) */
        }
    }
    store_listen_close(l);
    return NULL;
}

int gw_cache_new(store_t *st, gw_cache **out, gp_err *err) {
    gw_cache *c = calloc(1, sizeof *c);
    if (!c) return gp_err_set(err, GP_ENOMEM, NULL);
    c->store = st;
    c->epoch = -1;
    c->ports_epoch = -1;
    pthread_mutex_init(&c->mu, NULL);
    *out = c;
    return GP_OK;
}

int gw_cache_listen(gw_cache *c, gp_err *err) {
    if (c->listening) return GP_OK;
    int rc = store_listen(c->store, GW_EPOCH_CHANNEL, &c->first, err);
    if (rc == GP_EUNSUPPORTED) return rc;
    /* (another failure: the thread listens once the store answers) */
    if (pthread_create(&c->listener, NULL, listen_main, c)) {
        store_listen_close(c->first);
        c->first = NULL;
        return gp_err_set(err, GP_EINTERNAL, "cannot start the read cache's listener");
    }
    c->listening = 1;
    return GP_OK;
}

void gw_cache_free(gw_cache *c) {
    if (!c) return;
    if (c->listening) {
        atomic_store(&c->stop, 1);
        pthread_join(c->listener, NULL);
    }
    drop_all(c);
    free(c->ports);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int port_cmp(const void *a, const void *b) {
    return strcmp(((const port_ent *)a)->job_id, ((const port_ent *)b)->job_id);
}

/*
 * Read the port set: every running job that serves an endpoint, with the node of its first
 * open binding (the node whose reports set its listen_ports: jobs_node_report) and its
 * ports.  OUT: *out (sorted by job id; free it), *n.
 */
/* A running job serving an endpoint, with its node and ports, as ports_load reads it
 * (STORE_COLS). */
#define PORT_COLUMNS(X) X(PT_JOB, "j.id") X(PT_NODE, "MIN(b.node)") X(PT_PORTS, "j.listen_ports")
enum { PORT_COLUMNS(STORE_COL_ENUM) PT__N };

static int ports_load(store_tx *tx, port_ent **out, size_t *n, gp_err *err) {
    *out = NULL;
    *n = 0;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(PORT_COLUMNS) " FROM jobs j"
                         " JOIN bindings b ON b.job_id = j.id AND b.end_us IS NULL"
                         " WHERE j.state = 'running' AND j.listen_ports <> ''"
                         " AND EXISTS (SELECT 1 FROM endpoints e WHERE e.job_id = j.id)"
                         " GROUP BY j.id, j.listen_ports",
                         "");
    if (rc) return rc;
    port_ent *v = NULL;
    size_t len = 0, cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (len == cap) {
            size_t nc = cap ? cap * 2 : 64;
            port_ent *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            v = nv;
            cap = nc;
        }
        port_ent *e = &v[len++];
        snprintf(e->job_id, sizeof e->job_id, "%s", store_text(s, PT_JOB));
        snprintf(e->node, sizeof e->node, "%s", store_text(s, PT_NODE));
        const char *pl = store_text(s, PT_PORTS);
        /* a list that does not fit is not cut short (a cut "65535" would list port 655): none */
        snprintf(e->ports, sizeof e->ports, "%s", strlen(pl) < sizeof e->ports ? pl : "");
    }
    store_done(s);
    if (rc < 0) {
        free(v);
        return rc;
    }
    if (len > 1) qsort(v, len, sizeof *v, port_cmp);
    *out = v;
    *n = len;
    return GP_OK;
}

int gw_cache_ports_check(gw_cache *c, gw_route *r) {
    int open = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < r->n && i < GW_MAX_ENDPOINTS; i++) {
        gw_endpoint *e = &r->ep[i];
        e->closed = 0;
        if (e->job) {
            port_ent key;
            snprintf(key.job_id, sizeof key.job_id, "%s", e->job_id);
            const port_ent *p =
                c->ports_epoch < 0 || !c->nports
                    ? NULL
                    : bsearch(&key, c->ports, c->nports, sizeof *c->ports, port_cmp);
            e->closed = !p || strcmp(p->node, e->node) != 0 || !gw_port_listed(p->ports, e->port);
        }
        open += !e->closed;
    }
    pthread_mutex_unlock(&c->mu);
    return open;
}

int gw_cache_poll(gw_cache *c, gp_err *err) {
    unsigned long long commits = store_commit_total(); /* before the read: it sees them */
    store_tx *tx;
    int rc = store_begin(c->store, STORE_READ, &tx, err);
    if (rc) return rc;
    store_stmt *s;
    int64_t n = 0;
    rc = store_query(tx, &s, err, "SELECT n FROM gw_epoch WHERE id = 1", "");
    if (!rc) {
        int st = store_step(s, err);
        if (st > 0) n = store_int(s, 0);
        if (st < 0) rc = st;
        store_done(s);
    }
    /* the port set, when the epoch moved since it was loaded: read after the epoch, so it is at
     * least as new as `n` (a newer change moves the epoch again: the next poll reloads) */
    port_ent *ports = NULL;
    size_t nports = 0;
    int reload = 0;
    if (!rc) {
        pthread_mutex_lock(&c->mu);
        reload = c->ports_epoch < 0 || c->ports_epoch != n;
        pthread_mutex_unlock(&c->mu);
        if (reload) rc = ports_load(tx, &ports, &nports, err);
    }
    store_rollback(tx);
    if (rc) {
        /* cannot tell what changed: trust nothing until it can be read again (no port set:
         * every job endpoint is closed) */
        pthread_mutex_lock(&c->mu);
        drop_all(c);
        c->epoch = -1;
        free(c->ports);
        c->ports = NULL;
        c->nports = 0;
        c->ports_epoch = -1;
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    if (n != c->epoch) {
        drop_all(c);
        c->epoch = n;
    }
    /* epochs only grow: a poll that read an older one never replaces a newer set */
    if (reload && (c->ports_epoch < 0 || n >= c->ports_epoch)) {
        free(c->ports);
        c->ports = ports;
        c->nports = nports;
        c->ports_epoch = n;
        ports = NULL;
    }
    if (commits > c->commits) c->commits = commits;
    pthread_mutex_unlock(&c->mu);
    free(ports);
    return GP_OK;
}

/*
 * Did this process commit a transaction since the epoch was last read?  Then
 * read it now (a change of its own - a key revoked, an owner disabled - is
 * seen by the very next request).  Not locked.
 */
static void recheck(gw_cache *c) {
    pthread_mutex_lock(&c->mu);
    int stale = store_commit_total() != c->commits;
    pthread_mutex_unlock(&c->mu);
    gp_err err = GP_ERR_INIT;
    if (stale) (void)gw_cache_poll(c, &err); /* a failure drops everything: nothing trusted */
}

/* May entries be used (and made) now?  Locked. */
static int trusted(const gw_cache *c, int64_t now_us) {
    return c->epoch >= 0 && now_us >= atomic_load(&distrust_until);
}

/* A copy of `k` whose models the caller owns. */
static void key_copy(gw_key *dst, const gw_key *src) {
    *dst = *src;
    dst->models = src->models ? json_deep_copy(src->models) : json_array();
}

/*
 * When the key read stops being valid by itself: its expiry, or the latest
 * end of the role bindings that let its owner hold it (0: neither ends).
 */
/* A key's expiry, its owner's bindings there without an end and their latest end, as
 * key_until reads them (STORE_COLS; the parameter: now). */
#define GRANTS                                                                             \
    " FROM role_bindings b JOIN users u ON u.id = b.user_id WHERE u.name = k.owner"            \
    " AND ((b.scope = 'tenant' AND b.tenant_id = k.tenant_id AND b.role = 'tenant-admin')"    \
    " OR (b.scope = 'project' AND b.project_id = k.project_id"                                \
    " AND b.role IN ('project-admin', 'project-user')))"
#define UNTIL_COLUMNS(X)                                                                  \
    X(KU_EXPIRES, "k.expires_at")                                                         \
    X(KU_FOREVER, "(SELECT COUNT(*)" GRANTS " AND b.expires_at IS NULL)")                 \
    X(KU_BIND_END, "(SELECT MAX(b.expires_at)" GRANTS " AND b.expires_at > ?)")
enum { UNTIL_COLUMNS(STORE_COL_ENUM) KU__N };

static int key_until(store_tx *tx, const gw_key *k, int64_t now_us, int64_t *until, gp_err *err) {
    store_stmt *s;
    *until = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(UNTIL_COLUMNS) " FROM api_keys k WHERE k.id = ?",
                         "is", now_us, k->id);
#undef GRANTS
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        int64_t exp = store_int(s, KU_EXPIRES);
        int forever = store_int(s, KU_FOREVER) > 0; /* a binding without an end */
        int64_t bind = store_isnull(s, KU_BIND_END) ? 0 : store_int(s, KU_BIND_END);
        int64_t u = exp;
        if (!forever && bind > 0 && (u == 0 || bind < u)) u = bind;
        *until = u;
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int gw_cache_key(gw_cache *c, const char *secret, int64_t now_us, gw_key *out, gp_err *err) {
    memset(out, 0, sizeof *out);
    char h[RND_HASH_LEN] = "";
    int usable = secret && strlen(secret) <= 200;
    if (usable) rnd_hash_secret(secret, h);
    recheck(c);
    pthread_mutex_lock(&c->mu);
    int trust = usable && trusted(c, now_us);
    int64_t epoch = c->epoch;
    if (trust) {
        for (key_ent *e = c->keys[hash2(h, NULL)]; e; e = e->next)
            if (!strcmp(e->hash, h) && (!e->until_us || e->until_us > now_us)) {
                key_copy(out, &e->key);
                c->hits++;
                pthread_mutex_unlock(&c->mu);
                return GP_OK;
            }
    }
    c->misses++;
    pthread_mutex_unlock(&c->mu);
    store_tx *tx;
    int rc = store_begin(c->store, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = gw_key_auth(tx, secret, now_us, out, err);
    int64_t until = 0;
    int keep = !rc && trust && key_until(tx, out, now_us, &until, err) == GP_OK;
    store_rollback(tx);
    if (!keep) return rc;
    key_ent *e = calloc(1, sizeof *e);
    if (!e) return GP_OK;
    snprintf(e->hash, sizeof e->hash, "%s", h);
    key_copy(&e->key, out);
    e->until_us = until;
    pthread_mutex_lock(&c->mu);
    /* not when the epoch moved meanwhile: what was read may be older than the change */
    if (c->epoch == epoch && trusted(c, gt_now_us())) {
        if (c->nkeys >= CACHE_MAX) drop_all(c);
        unsigned b = hash2(h, NULL);
        e->next = c->keys[b];
        c->keys[b] = e;
        c->nkeys++;
        e = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (e) {
        gw_key_release(&e->key);
        free(e);
    }
    return GP_OK;
}

static const char not_found[] = "The model '%.100s' does not exist or you do not have access to it.";

int gw_cache_route(gw_cache *c, const gw_key *k, const char *model, gw_route *out, gp_err *err) {
    memset(out, 0, sizeof *out);
    if (!model || !gw_key_allows(k, model) || strlen(model) >= sizeof ((route_ent *)0)->model)
        return gp_err_set(err, GP_ENOTFOUND, not_found, model ? model : "");
    int64_t now = gt_now_us();
    recheck(c);
    pthread_mutex_lock(&c->mu);
    int trust = trusted(c, now);
    int64_t epoch = c->epoch;
    if (trust) {
        for (route_ent *e = c->routes[hash2(k->tenant_id, model)]; e; e = e->next)
            if (!strcmp(e->tenant_id, k->tenant_id) && !strcmp(e->model, model)) {
                int found = e->found;
                if (found) *out = e->route;
                c->hits++;
                pthread_mutex_unlock(&c->mu);
                return found ? GP_OK : gp_err_set(err, GP_ENOTFOUND, not_found, model);
            }
    }
    c->misses++;
    pthread_mutex_unlock(&c->mu);
    store_tx *tx;
    int rc = store_begin(c->store, STORE_READ, &tx, err);
    if (rc) return rc;
    /* the key's tenant only (row-level security), as the request would read it */
    rc = store_set_tenant(tx, k->tenant_id, err);
    if (!rc) rc = gw_resolve(tx, k, model, out, err);
    store_rollback(tx);
    if ((rc && rc != GP_ENOTFOUND) || !trust) return rc;
    route_ent *e = calloc(1, sizeof *e);
    if (!e) return rc;
    snprintf(e->tenant_id, sizeof e->tenant_id, "%s", k->tenant_id);
    snprintf(e->model, sizeof e->model, "%s", model);
    e->found = rc == GP_OK;
    if (e->found) e->route = *out;
    pthread_mutex_lock(&c->mu);
    if (c->epoch == epoch && trusted(c, gt_now_us())) {
        if (c->nroutes >= CACHE_MAX) drop_all(c);
        unsigned b = hash2(k->tenant_id, model);
        e->next = c->routes[b];
        c->routes[b] = e;
        c->nroutes++;
        e = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    free(e);
    return rc;
}

void gw_cache_metrics(gw_cache *c, strbuf *out) {
    pthread_mutex_lock(&c->mu);
    sb_addf(out, "# HELP gpupool_gateway_cache_lookups_total gateway reads of keys and routes, by"
                 " whether memory answered them\n# TYPE gpupool_gateway_cache_lookups_total counter\n"
                 "gpupool_gateway_cache_lookups_total{result=\"hit\"} %llu\n"
                 "gpupool_gateway_cache_lookups_total{result=\"miss\"} %llu\n"
                 "# HELP gpupool_gateway_cache_invalidations_total times the gateway's read cache was"
                 " dropped (a change in the store)\n"
                 "# TYPE gpupool_gateway_cache_invalidations_total counter\n"
                 "gpupool_gateway_cache_invalidations_total %llu\n"
                 "# HELP gpupool_gateway_cache_notifications_total changes in the store announced"
                 " to this gateway (PostgreSQL LISTEN/NOTIFY; each one polls at once)\n"
                 "# TYPE gpupool_gateway_cache_notifications_total counter\n"
                 "gpupool_gateway_cache_notifications_total %llu\n",
            (unsigned long long)c->hits, (unsigned long long)c->misses,
            (unsigned long long)c->drops, (unsigned long long)atomic_load(&c->notifies));
    pthread_mutex_unlock(&c->mu);
}
