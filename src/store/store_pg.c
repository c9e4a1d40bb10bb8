/*
 * store_pg.c - the PostgreSQL backend of the store interface (libpq).
 *
 * A fixed pool of connections to one database, like the SQLite backend.
 * The SQL every module writes once, with `?` and `?N` placeholders, is
 * rewritten here to `$N` (outside string literals and quoted names) and
 * prepared once per connection (a cache of up to PREP_SLOTS statements per
 * connection, keyed by the text and the argument types, so the rewriting
 * happens once per statement and connection; custom plans every
 * time, so a parameter's value still shapes its plan); results are read
 * whole, so statements of one transaction may be interleaved freely, as
 * with SQLite.
 *
 * Semantics kept the same as SQLite's:
 *  - write transactions are serialised across every server sharing the
 *    database: each takes one transaction-level advisory lock
 *    (WRITE_LOCK_KEY) right after BEGIN, so read-then-write code (the audit
 *    chain head, ledgers) sees no interleaving, exactly as under BEGIN
 *    IMMEDIATE; they run READ COMMITTED, which behind that lock sees every
 *    committed write;
 *  - except STORE_WRITE_ROWS transactions (store.h), which take no advisory
 *    lock: READ COMMITTED with the row locks of what they write and of what
 *    they read FOR UPDATE;
 *  - read transactions are REPEATABLE READ, READ ONLY: one snapshot;
 *  - unique violations are GP_ECONFLICT, other constraint violations
 *    GP_EINVALID.
 * Unlike SQLite, a failed statement aborts its transaction: later
 * statements fail and commit reports the failure (code that wants to go on
 * after a conflict must use ON CONFLICT).
 *
 * Typing: 'i' binds int8, 's' and 'n' bind untyped text the server infers
 * from context; `? IS [NOT] NULL` gets an explicit ::text since nothing
 * else would tell PostgreSQL its type.  Booleans read with store_int() are
 * 1/0, numerics are truncated toward zero.
 *
 * Leadership (store_lead): one more connection holds a session advisory
 * lock (LEADER_LOCK_KEY) while this process leads; PostgreSQL releases it
 * when that connection ends, including when the process is killed.  The
 * connection carries idle_session_timeout: a leader that stops calling
 * store_lead (frozen, its host gone or cut off) loses its session, hence the
 * lock, after that long, whatever TCP knows.  Write transactions carry
 * idle_in_transaction_session_timeout for the same reason (the write lock).
 *
 * Locking: the pool's mutex (pool.c); `lead_mu` the leader connection.
 * Neither is held while a pooled connection runs SQL.
 */
#include "schema_int.h"
#include "store_int.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "../core/strbuf.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_LOCK_KEY 7707001    /* pg_advisory_xact_lock: one writer at a time */
#define MIGRATE_LOCK_KEY 7707002  /* pg_advisory_lock: one migrating server */
#define LEADER_LOCK_KEY 7707003   /* pg_advisory_lock: the leader's */
/* a write transaction idle this long (its process frozen or cut off) is ended
 * by the database, so that the write lock is not held for ever */
#define WRITE_IDLE_LIMIT_S 30
#define MAX_PARAMS 128
#define INT8OID 20
#define PREP_SLOTS 512 /* prepared statements per connection (a power of two) */

/* The statements prepared on one connection, as "p<slot>"; open addressing. */
typedef struct pg_prep {
    uint64_t h;
    int used;  /* parameters the statement takes ($1..$used) */
    char *key; /* types, '\n', the SQL as the module wrote it; NULL: free slot */
} pg_prep;
typedef struct pg_cache {
    pg_prep e[PREP_SLOTS];
    int n;
} pg_cache;

typedef struct pg_store {
    struct store base;
    store_pool pool; /* which of conns[] are idle */
    char *conninfo;
    int readonly;
    int n; /* connections opened */
    PGconn **conns;
    pg_cache *caches; /* per connection, parallel to conns */
    pthread_mutex_t lead_mu;
    PGconn *lead; /* holds LEADER_LOCK_KEY while leading */
    int leading;
} pg_store;

typedef struct pg_tx {
    struct store_tx base;
    pg_store *st;
    int idx;
    PGconn *c;
    int changes;
} pg_tx;

typedef struct pg_stmt {
    struct store_stmt base;
    pg_tx *tx;
    PGresult *res;
    int row; /* current row; -1 before the first step */
    int nrows;
} pg_stmt;

static const store_ops pg_ops;

/* Map a failed result (or connection) to a gp error. */
static int map_err(PGconn *c, const PGresult *res, gp_err *err, const char *what) {
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg) msg = PQerrorMessage(c);
    char clean[200];
    snprintf(clean, sizeof clean, "%s", msg ? msg : "unknown error");
    size_t l = strlen(clean);
    while (l && (clean[l - 1] == '\n' || clean[l - 1] == ' ')) clean[--l] = '\0';
    if (PQstatus(c) == CONNECTION_BAD)
        return gp_err_set(err, GP_EIO, "%s: connection to PostgreSQL lost: %s", what, clean);
    if (state) {
        if (!strcmp(state, "23505")) return gp_err_set(err, GP_ECONFLICT, "%s: already exists", what);
        if (!strncmp(state, "23", 2))
            return gp_err_set(err, GP_EINVALID, "%s: constraint failed (%s)", what, clean);
        if (!strcmp(state, "42501")) /* row-level security, privileges */
            return gp_err_set(err, GP_EFORBIDDEN, "%s: not permitted (%s)", what, clean);
        if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03"))
            return gp_err_set(err, GP_EBUSY, "%s: database busy", what);
        if (!strncmp(state, "08", 2) || !strcmp(state, "57P01") || !strcmp(state, "53100"))
            return gp_err_set(err, GP_EIO, "%s: %s", what, clean);
        if (!strcmp(state, "53200")) return gp_err_set(err, GP_ENOMEM, "%s: out of memory", what);
    }
    return gp_err_set(err, GP_ESTORE, "%s: %s", what, clean);
}

/* Run SQL without parameters; results discarded.  Multi-statement text allowed. */
static int exec_plain(PGconn *c, const char *sql, gp_err *err) {
    PGresult *res = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(res);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        int rc = map_err(c, res, err, "postgres");
        PQclear(res);
        return rc;
    }
    PQclear(res);
    return GP_OK;
}

static void notice_quiet(void *arg, const char *message) {
    (void)arg;
    (void)message; /* "relation already exists, skipping" and the like */
}

/* Session settings of every connection: UTC, custom plans, read-only for inspection. */
static const char *session_sql(int readonly) {
    return readonly ? "SET TIME ZONE 'UTC'; SET plan_cache_mode = force_custom_plan;"
                      " SET default_transaction_read_only = on"
                    : "SET TIME ZONE 'UTC'; SET plan_cache_mode = force_custom_plan";
}

static int connect_one(const char *conninfo, int readonly, PGconn **out, gp_err *err) {
    PGconn *c = PQconnectdb(conninfo);
    if (!c) return gp_err_set(err, GP_ENOMEM, NULL);
    if (PQstatus(c) != CONNECTION_OK) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
        size_t l = strlen(msg);
        while (l && (msg[l - 1] == '\n' || msg[l - 1] == ' ')) msg[--l] = '\0';
        PQfinish(c);
        return gp_err_set(err, GP_EIO, "cannot connect to PostgreSQL: %s", msg);
    }
    PQsetNoticeProcessor(c, notice_quiet, NULL);
    /* UTC, byte-order text comparison is per column (schema); keep statements bounded */
    int rc = exec_plain(c, session_sql(readonly), err);
    if (rc) {
        PQfinish(c);
        return rc;
    }
    *out = c;
    return GP_OK;
}

static int read_version(PGconn *c, int *out, gp_err *err) {
    PGresult *res = PQexec(c, "SELECT COALESCE(MAX(version),0) FROM schema_migrations");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        int rc = map_err(c, res, err, "schema version");
        PQclear(res);
        return rc;
    }
    *out = atoi(PQgetvalue(res, 0, 0));
    PQclear(res);
    return GP_OK;
}

/* Does the database hold gpupool's schema_migrations table? 1/0, or -1 when it cannot say. */
static int has_schema(PGconn *c) {
    PGresult *res = PQexec(c, "SELECT to_regclass('schema_migrations') IS NOT NULL");
    int out = PQresultStatus(res) != PGRES_TUPLES_OK ? -1 : !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    return out;
}

/*
 * Bring the schema to this binary's version (to `target` when > 0: `gpupool
 * migrate --to N`).  A current schema needs no
 * privilege beyond reading it, so servers may connect as a role that owns
 * nothing (and so cannot switch row-level security off); only a change
 * needs the owner, and then the error says how (`gpupool migrate`).
 */
static int migrate(PGconn *c, int target, gp_err *err) {
    int have = 0, known = schema__pg_count(), latest = target > 0 ? target : known;
    if (has_schema(c) == 1 && read_version(c, &have, err) == GP_OK && have == latest)
        return GP_OK;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%d)", MIGRATE_LOCK_KEY);
    int rc = exec_plain(c, sql, err);
    if (rc) return rc;
    have = 0;
    if ((rc = exec_plain(c,
                         "CREATE TABLE IF NOT EXISTS schema_migrations ("
                         " version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                         err)))
        goto fail; /* a ROLLBACK outside a transaction is harmless */
    if ((rc = exec_plain(c, "BEGIN", err))) goto out;
    if ((rc = read_version(c, &have, err))) goto fail;
    if (have > latest && have <= known) {
        rc = gp_err_set(err, GP_ESCHEMA,
                        "database schema version %d is past %d: migrations are never undone",
                        have, latest);
        goto fail;
    }
    if (have > latest) {
        rc = gp_err_set(err, GP_ESCHEMA,
                        "database schema version %d is newer than this gpupool knows (%d); "
                        "run a newer gpupool binary",
                        have, latest);
        goto fail;
    }
    for (int v = have + 1; v <= latest; v++) {
        if ((rc = exec_plain(c, schema__pg_sql(v), err))) goto fail;
        char ins[160];
        snprintf(ins, sizeof ins, "INSERT INTO schema_migrations VALUES (%d, %" PRId64 ")", v,
                 gt_now_us());
        if ((rc = exec_plain(c, ins, err))) goto fail;
    }
    rc = exec_plain(c, "COMMIT", err);
    goto out;
fail:
    PQclear(PQexec(c, "ROLLBACK"));
    if (rc == GP_EFORBIDDEN)
        rc = gp_err_set(err, GP_ESCHEMA,
                        "database role \"%s\" may not bring the schema to version %d: run "
                        "`gpupool migrate --store URL --grant %s` as the role that owns the "
                        "tables (docs/postgres.md)",
                        PQuser(c), latest, PQuser(c));
out:
    snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%d)", MIGRATE_LOCK_KEY);
    PQclear(PQexec(c, sql));
    return rc;
}

static pg_store *store_alloc(const char *conninfo, int n) {
    pg_store *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->base.ops = &pg_ops;
    st->conninfo = strdup(conninfo);
    st->conns = calloc((size_t)n, sizeof *st->conns);
    st->caches = calloc((size_t)n, sizeof *st->caches);
    if (!st->conninfo || !st->conns || !st->caches || store__pool_init(&st->pool, n)) {
        free(st->conninfo);
        free(st->conns);
        free(st->caches);
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->lead_mu, NULL);
    return st;
}

/* Close every connection opened and free the store (also after a failed open). */
/* Forget what was prepared on a connection (the server forgot it, or will). */
static void cache_clear(pg_cache *c) {
    for (int i = 0; i < PREP_SLOTS; i++) {
        free(c->e[i].key);
        c->e[i].key = NULL;
    }
    c->n = 0;
}

static void store_free(pg_store *st) {
    for (int i = 0; i < st->n; i++) {
        PQfinish(st->conns[i]);
        cache_clear(&st->caches[i]);
    }
    free(st->caches);
    if (st->lead) PQfinish(st->lead);
    store__pool_free(&st->pool);
    pthread_mutex_destroy(&st->lead_mu);
    free(st->conninfo);
    free(st->conns);
    free(st);
}

int store__pg_open(const char *conninfo, int pool_size, int target, store_t **out,
                   gp_err *err) {
    pg_store *st = store_alloc(conninfo, pool_size);
    if (!st) return gp_err_set(err, GP_ENOMEM, NULL);
    int rc = GP_OK;
    for (int i = 0; i < pool_size; i++) {
        if ((rc = connect_one(conninfo, 0, &st->conns[i], err))) break;
        st->n++;
        if (i == 0 && (rc = migrate(st->conns[0], target, err))) break;
        store__pool_put(&st->pool, i);
    }
    if (rc) {
        store_free(st);
        return rc;
    }
    *out = &st->base;
    return GP_OK;
}

int store__pg_open_ro(const char *conninfo, store_t **out, gp_err *err) {
    PGconn *c;
    int rc = connect_one(conninfo, 1, &c, err);
    if (rc) return rc;
    int have = 0, latest = schema__pg_count();
    if (has_schema(c) != 1) {
        PQfinish(c);
        return gp_err_set(err, GP_ENOTFOUND, "no gpupool store in this PostgreSQL database");
    }
    if ((rc = read_version(c, &have, err))) {
        PQfinish(c);
        return rc;
    }
    if ((rc = store__schema_exact(have, latest, err))) {
        PQfinish(c);
        return rc;
    }
    pg_store *st = store_alloc(conninfo, 1);
    if (!st) {
        PQfinish(c);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    st->readonly = 1;
    st->conns[0] = c;
    st->n = 1;
    store__pool_put(&st->pool, 0);
    *out = &st->base;
    return GP_OK;
}

static void pg_close(store_t *base) {
    pg_store *st = (pg_store *)base;
    assert(store__pool_idle(&st->pool) == st->n); /* every transaction ended */
    store_free(st);
}

static int pg_schema_latest(void) { return schema__pg_count(); }

static void release_conn(pg_store *st, int idx) { store__pool_put(&st->pool, idx); }

static int pg_begin(store_t *base, int mode, store_tx **out, gp_err *err) {
    pg_store *st = (pg_store *)base;
    if (mode != STORE_READ && st->readonly)
        return gp_err_set(err, GP_EINVALID, "the store is open read-only");
    pg_tx *tx = calloc(1, sizeof *tx);
    if (!tx) return gp_err_set(err, GP_ENOMEM, NULL);
    tx->idx = store__pool_take(&st->pool);
    tx->base.ops = &pg_ops;
    tx->st = st;
    PGconn *c = st->conns[tx->idx];
    tx->c = c;
    char sql[160];
    if (mode == STORE_WRITE_ROWS) /* row locks only (store.h) */
        snprintf(sql, sizeof sql,
                 "BEGIN ISOLATION LEVEL READ COMMITTED;"
                 " SET LOCAL idle_in_transaction_session_timeout = %d",
                 WRITE_IDLE_LIMIT_S * 1000);
    else if (mode != STORE_READ)
        snprintf(sql, sizeof sql,
                 "BEGIN; SET LOCAL idle_in_transaction_session_timeout = %d;"
                 " SELECT pg_advisory_xact_lock(%d)",
                 WRITE_IDLE_LIMIT_S * 1000, WRITE_LOCK_KEY);
    else
        snprintf(sql, sizeof sql, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    int rc;
    for (int attempt = 0;; attempt++) {
        /* a connection the server dropped (restart, failover, a killed backend) is made
         * again here; libpq may learn of the loss only from BEGIN itself, and since
         * nothing of this transaction ran yet, BEGIN is tried once more on a new one */
        if (PQstatus(c) != CONNECTION_OK) {
            cache_clear(&st->caches[tx->idx]);
            PQreset(c);
            if (PQstatus(c) == CONNECTION_OK) {
                PQsetNoticeProcessor(c, notice_quiet, NULL);
                PQclear(PQexec(c, session_sql(st->readonly)));
            }
        }
        rc = exec_plain(c, sql, err);
        if (!rc || attempt == 1 || PQstatus(c) == CONNECTION_OK) break;
        log_kv(LOG_WARN, "connection to PostgreSQL lost; connecting again", (char *)NULL);
    }
    if (rc) {
        PQclear(PQexec(c, "ROLLBACK"));
        release_conn(st, tx->idx);
        free(tx);
        return rc;
    }
    *out = &tx->base;
    return GP_OK;
}

static void pg_rollback(store_tx *base) {
    pg_tx *tx = (pg_tx *)base;
    if (PQtransactionStatus(tx->c) != PQTRANS_IDLE) PQclear(PQexec(tx->c, "ROLLBACK"));
    release_conn(tx->st, tx->idx);
    free(tx);
}

static int pg_commit(store_tx *base, gp_err *err) {
    pg_tx *tx = (pg_tx *)base;
    int rc;
    if (PQtransactionStatus(tx->c) == PQTRANS_INERROR) {
        rc = gp_err_set(err, GP_ESTORE, "commit: an earlier statement of the transaction failed");
        pg_rollback(base);
        return rc;
    }
    PGresult *res = PQexec(tx->c, "COMMIT");
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        rc = map_err(tx->c, res, err, "commit");
        PQclear(res);
        pg_rollback(base);
        return rc;
    }
    int rolled_back = strcmp(PQcmdStatus(res), "COMMIT") != 0;
    PQclear(res);
    if (rolled_back) {
        release_conn(tx->st, tx->idx);
        free(tx);
        return gp_err_set(err, GP_ESTORE, "commit: the transaction was rolled back");
    }
    release_conn(tx->st, tx->idx);
    free(tx);
    return GP_OK;
}

static int pg_schema_version(store_t *base, int *out, gp_err *err) {
    store_tx *tx;
    int rc = pg_begin(base, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = read_version(((pg_tx *)tx)->c, out, err);
    pg_rollback(tx);
    return rc;
}

/* Does `p` (just after a placeholder) continue with IS [NOT] NULL? */
static int before_is_null(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (strncasecmp(p, "IS", 2) != 0 || isalnum((unsigned char)p[2])) return 0;
    p += 2;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (strncasecmp(p, "NOT", 3) == 0 && !isalnum((unsigned char)p[3])) {
        p += 3;
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    }
    return strncasecmp(p, "NULL", 4) == 0 && !isalnum((unsigned char)p[4]);
}

/*
 * Rewrite SQLite placeholders: `?` is the next number, `?N` is N.
 * Literals ('…') and quoted names ("…") are copied untouched.
 * Returns a heap string, or NULL on allocation failure.
 */
static char *rewrite_sql(const char *sql, int *maxnum) {
    size_t len = strlen(sql), marks = 0;
    for (const char *p = sql; *p; p++) marks += *p == '?';
    char *out = malloc(len + marks * 16 + 1), *o = out; /* "$NNNNN::text" at most */
    if (!out) return NULL;
    int next = 1;
    *maxnum = 0;
    for (const char *p = sql; *p;) {
        if (*p == '\'' || *p == '"') {
            char q = *p;
            *o++ = *p++;
            while (*p) {
                if (*p == q) {
                    *o++ = *p++;
                    if (*p == q) { /* doubled quote inside */
                        *o++ = *p++;
                        continue;
                    }
                    break;
                }
                *o++ = *p++;
            }
            continue;
        }
        if (*p == '?') {
            p++;
            int num;
            if (isdigit((unsigned char)*p)) {
                char *end;
                num = (int)strtol(p, &end, 10);
                p = end;
                if (num >= next) next = num + 1;
            } else {
                num = next++;
            }
            if (num > 99999) num = 99999;
            if (num > *maxnum) *maxnum = num;
            o += sprintf(o, "$%d", num);
            if (before_is_null(p)) o += sprintf(o, "::text");
            continue;
        }
        *o++ = *p++;
    }
    *o = '\0';
    return out;
}

static uint64_t fnv1a(const char *a, const char *b) {
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = a; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ '\n') * 1099511628211ULL;
    for (const char *p = b; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

/*
 * The name of `sql` (with argument `types`: `np` of them, typed `oids`)
 * prepared on the transaction's connection, and how many parameters it
 * takes; on the first use the SQL is rewritten (rewrite_sql) and prepared.
 * GP_OK with `name` and *used filled, or an error (nothing kept).
 */
static int prepared(pg_tx *tx, const char *sql, const char *types, int np, const Oid *oids,
                    char name[16], int *used, gp_err *err) {
    pg_cache *c = &tx->st->caches[tx->idx];
    uint64_t h = fnv1a(types, sql);
    unsigned i = (unsigned)h & (PREP_SLOTS - 1);
    size_t tl = strlen(types);
    for (; c->e[i].key; i = (i + 1) & (PREP_SLOTS - 1)) {
        const char *k = c->e[i].key;
        if (c->e[i].h == h && !strncmp(k, types, tl) && k[tl] == '\n' && !strcmp(k + tl + 1, sql)) {
            snprintf(name, 16, "p%u", i);
            *used = c->e[i].used;
            return GP_OK;
        }
    }
    char *text = rewrite_sql(sql, used);
    if (!text) return gp_err_set(err, GP_ENOMEM, NULL);
    /* SQLite ignores surplus arguments; PostgreSQL wants exactly the $N used */
    if (*used > np) {
        free(text);
        return gp_err_set(err, GP_EINVALID, "query: %d parameters used, %d bound", *used, np);
    }
    if (c->n >= PREP_SLOTS * 3 / 4) { /* full: start again (rare: SQL texts are few) */
        PQclear(PQexec(tx->c, "DEALLOCATE ALL"));
        cache_clear(c);
        for (i = (unsigned)h & (PREP_SLOTS - 1); c->e[i].key; i = (i + 1) & (PREP_SLOTS - 1)) {
        }
    }
    snprintf(name, 16, "p%u", i);
    PGresult *res = PQprepare(tx->c, name, text, *used, oids);
    free(text);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        int rc = map_err(tx->c, res, err, "query");
        PQclear(res);
        return rc;
    }
    PQclear(res);
    size_t sl = strlen(sql);
    char *key = malloc(tl + 1 + sl + 1);
    if (!key) { /* prepared but not remembered: forget it on the server too */
        char sqlx[40];
        snprintf(sqlx, sizeof sqlx, "DEALLOCATE %s", name);
        PQclear(PQexec(tx->c, sqlx));
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    memcpy(key, types, tl);
    key[tl] = '\n';
    memcpy(key + tl + 1, sql, sl + 1);
    c->e[i].h = h;
    c->e[i].used = *used;
    c->e[i].key = key;
    c->n++;
    return GP_OK;
}

static int pg_query(store_tx *base, store_stmt **out, gp_err *err, const char *sql,
                    const char *types, va_list ap) {
    pg_tx *tx = (pg_tx *)base;
    *out = NULL;
    const char *vals[MAX_PARAMS];
    Oid oids[MAX_PARAMS];
    char nums[MAX_PARAMS][24];
    int np = 0;
    for (const char *t = types ? types : ""; *t; t++, np++) {
        assert(np < MAX_PARAMS);
        switch (*t) {
        case 's':
            vals[np] = va_arg(ap, const char *);
            oids[np] = 0;
            break;
        case 'i':
            snprintf(nums[np], sizeof nums[np], "%" PRId64, va_arg(ap, int64_t));
            vals[np] = nums[np];
            oids[np] = INT8OID;
            break;
        case 'n':
            vals[np] = NULL;
            oids[np] = 0;
            break;
        default:
            assert(!"unknown bind type");
            return gp_err_set(err, GP_EINVALID, "bind: unknown type '%c'", *t);
        }
    }
    int used = 0;
    char name[16];
    int rc = prepared(tx, sql, types ? types : "", np, oids, name, &used, err);
    PGresult *res = rc ? NULL : PQexecPrepared(tx->c, name, used, vals, NULL, NULL, 0);
    ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        if (res) rc = map_err(tx->c, res, err, "query");
        /* constraint answers are the callers' business; anything else is a bug or an outage */
        if (rc == GP_ESTORE || rc == GP_EIO)
            log_kv(LOG_WARN, "postgres statement failed", "sql", sql, "detail",
                   err ? err->msg : "", (char *)NULL);
        PQclear(res);
        return rc;
    }
    const char *n = PQcmdTuples(res);
    tx->changes = n && *n ? atoi(n) : 0;
    pg_stmt *st = calloc(1, sizeof *st);
    if (!st) {
        PQclear(res);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    st->base.ops = &pg_ops;
    st->tx = tx;
    st->res = res;
    st->row = -1;
    st->nrows = s == PGRES_TUPLES_OK ? PQntuples(res) : 0;
    *out = &st->base;
    return GP_OK;
}

static int pg_step(store_stmt *base, gp_err *err) {
    (void)err;
    pg_stmt *st = (pg_stmt *)base;
    if (st->row + 1 >= st->nrows) {
        st->row = st->nrows;
        return 0;
    }
    st->row++;
    return 1;
}

static int in_row(const pg_stmt *st, int col) {
    return st->row >= 0 && st->row < st->nrows && col >= 0 && col < PQnfields(st->res);
}

static const char *pg_text(store_stmt *base, int col) {
    pg_stmt *st = (pg_stmt *)base;
    if (!in_row(st, col) || PQgetisnull(st->res, st->row, col)) return NULL;
    return PQgetvalue(st->res, st->row, col);
}

static int64_t pg_int(store_stmt *base, int col) {
    const char *v = pg_text(base, col);
    if (!v) return 0;
    if (!strcmp(v, "t")) return 1;
    if (!strcmp(v, "f")) return 0;
    return strtoll(v, NULL, 10);
}

static int pg_isnull(store_stmt *base, int col) {
    pg_stmt *st = (pg_stmt *)base;
    return !in_row(st, col) || PQgetisnull(st->res, st->row, col);
}

static void pg_done(store_stmt *base) {
    pg_stmt *st = (pg_stmt *)base;
    PQclear(st->res);
    free(st);
}

static int pg_changes(store_tx *base) { return ((pg_tx *)base)->changes; }

/*
 * A new connection for the lead: named in pg_stat_activity, and ended by the
 * database once idle for TIMEOUT_S seconds (0: never).  PostgreSQL before 14
 * has no idle_session_timeout: the lead then lasts as long as the connection
 * (said once in the log).
 */
static int lead_connect(pg_store *st, int timeout_s, gp_err *err) {
    static atomic_int warned;
    int rc = connect_one(st->conninfo, 0, &st->lead, err);
    if (rc) return rc;
    if (!(rc = exec_plain(st->lead, "SET application_name = 'gpupool-lead'", err)) &&
        timeout_s > 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "SET idle_session_timeout = %d", timeout_s * 1000);
        PGresult *res = PQexec(st->lead, sql);
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            if (!state || strcmp(state, "42704")) /* 42704 undefined_object: before 14 */
                rc = map_err(st->lead, res, err, "leader session");
            else if (!atomic_exchange(&warned, 1))
                log_kv(LOG_WARN,
                       "PostgreSQL before 14 cannot end a frozen leader's session: another "
                       "server takes over only once its connection ends",
                       (char *)NULL);
        }
        PQclear(res);
    }
    if (rc) {
        PQfinish(st->lead);
        st->lead = NULL;
    }
    return rc;
}

static int pg_lead(store_t *base, int timeout_s, gp_err *err) {
    pg_store *st = (pg_store *)base;
    int rc = 0;
    assert(timeout_s >= 0);
    pthread_mutex_lock(&st->lead_mu);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (st->lead && PQstatus(st->lead) != CONNECTION_OK) {
            PQfinish(st->lead);
            st->lead = NULL;
            st->leading = 0;
        }
        if (!st->lead && (rc = lead_connect(st, timeout_s, err))) break;
        char sql[96];
        if (st->leading) /* still connected, hence still holding the lock */
            snprintf(sql, sizeof sql, "SELECT true");
        else
            snprintf(sql, sizeof sql, "SELECT pg_try_advisory_lock(%d)", LEADER_LOCK_KEY);
        PGresult *res = PQexec(st->lead, sql);
        if (PQresultStatus(res) == PGRES_TUPLES_OK) {
            st->leading = !strcmp(PQgetvalue(res, 0, 0), "t");
            PQclear(res);
            rc = st->leading;
            break;
        }
        /* the session is gone (ended by the database when this process was
         * silent too long, or the server restarted): the lock went with it,
         * so ask once more on a new connection */
        int lost = PQstatus(st->lead) != CONNECTION_OK;
        if (!lost || attempt == 1) rc = map_err(st->lead, res, err, "leader lock");
        PQclear(res);
        PQfinish(st->lead);
        st->lead = NULL;
        st->leading = 0;
        if (!lost) break;
    }
    assert(rc == st->leading || (rc < 0 && !st->leading)); /* no lead without its connection */
    pthread_mutex_unlock(&st->lead_mu);
    return rc;
}

/* Run one parameterised query on an idle connection of the pool; the result's
 * first row (or none) is the caller's to read and PQclear.  NULL on error (err). */
static PGresult *one_query(PGconn *c, const char *sql, const char *arg, gp_err *err) {
    const char *params[1] = {arg};
    PGresult *res = PQexecParams(c, sql, arg ? 1 : 0, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        map_err(c, res, err, "postgres");
        PQclear(res);
        return NULL;
    }
    return res;
}

static int pg_grant(store_t *base, const char *role, gp_err *err) {
    pg_store *st = (pg_store *)base;
    if (st->readonly) return gp_err_set(err, GP_EINVALID, "the store is open read-only");
    int idx = store__pool_take(&st->pool);
    PGconn *c = st->conns[idx];
    int rc = GP_OK;
    char *qrole = NULL, *qschema = NULL;
    strbuf sql;
    sb_init(&sql);
    PGresult *res = one_query(c,
                              "SELECT rolsuper OR rolbypassrls, rolname = current_user,"
                              " current_schema() FROM pg_roles WHERE rolname = $1",
                              role, err);
    if (!res) {
        rc = err->code;
        goto out;
    }
    if (PQntuples(res) == 0)
        rc = gp_err_set(err, GP_ENOTFOUND, "no database role \"%s\"", role);
    else if (!strcmp(PQgetvalue(res, 0, 1), "t"))
        rc = gp_err_set(err, GP_EINVALID,
                        "role \"%s\" is the one connected, which owns the tables; name the role "
                        "the servers connect as",
                        role);
    else if (!strcmp(PQgetvalue(res, 0, 0), "t"))
        rc = gp_err_set(err, GP_EINVALID,
                        "role \"%s\" bypasses row-level security (superuser or BYPASSRLS); the "
                        "servers' role must not",
                        role);
    if (!rc) {
        const char *schema = PQgetvalue(res, 0, 2);
        qrole = PQescapeIdentifier(c, role, strlen(role));
        qschema = PQescapeIdentifier(c, schema, strlen(schema));
        if (!qrole || !qschema) rc = gp_err_set(err, GP_ENOMEM, NULL);
    }
    PQclear(res);
    if (rc) goto out;
    /* what the servers do: read and write rows; never DDL, so never ALTER TABLE … DISABLE
     * ROW LEVEL SECURITY.  Default privileges cover tables a later migration makes. */
    sb_addf(&sql,
            "BEGIN; GRANT USAGE ON SCHEMA %s TO %s;"
            " GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %s TO %s;"
            " GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %s TO %s;"
            " ALTER DEFAULT PRIVILEGES IN SCHEMA %s"
            " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %s;"
            " ALTER DEFAULT PRIVILEGES IN SCHEMA %s GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO %s;"
            " COMMIT",
            qschema, qrole, qschema, qrole, qschema, qrole, qschema, qrole, qschema, qrole);
    if (!sb_ok(&sql)) rc = gp_err_set(err, GP_ENOMEM, NULL);
    else if ((rc = exec_plain(c, sql.buf, err))) PQclear(PQexec(c, "ROLLBACK"));
out:
    sb_release(&sql);
    PQfreemem(qrole);
    PQfreemem(qschema);
    release_conn(st, idx);
    return rc;
}

static int pg_can_bypass(store_t *base, gp_err *err) {
    pg_store *st = (pg_store *)base;
    int idx = store__pool_take(&st->pool);
    PGconn *c = st->conns[idx];
    /* superuser, BYPASSRLS, or (a member of) the role owning the fenced tables, which
     * could ALTER them to switch the fence off */
    PGresult *res = one_query(
        c,
        "SELECT (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user)"
        " OR EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema()"
        " AND tablename = 'api_keys' AND pg_has_role(current_user, tableowner, 'MEMBER'))",
        NULL, err);
    int rc = res ? !strcmp(PQgetvalue(res, 0, 0), "t") : err->code;
    PQclear(res);
    release_conn(st, idx);
    return rc;
}

/* ---- notifications (store_listen): LISTEN on a connection of its own ---- */

typedef struct pg_listener {
    struct store_listener base;
    PGconn *c;
} pg_listener;

/* Count and free what the connection has received. */
static int pg_drain(PGconn *c) {
    int n = 0;
    PGnotify *m;
    while ((m = PQnotifies(c))) {
        n++;
        PQfreemem(m);
    }
    return n;
}

static int pg_listen_wait(store_listener *h, int timeout_ms, int *got, gp_err *err) {
    pg_listener *l = (pg_listener *)h;
    if (!PQconsumeInput(l->c))
        return gp_err_set(err, GP_EIO, "notifications: connection to PostgreSQL lost: %s",
                          PQerrorMessage(l->c));
    if ((*got = pg_drain(l->c))) return GP_OK;
    int fd = PQsocket(l->c);
    if (fd < 0) return gp_err_set(err, GP_EIO, "notifications: no connection to PostgreSQL");
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR)
        return gp_err_set(err, GP_EIO, "notifications: poll: %s", strerror(errno));
    if (r <= 0) return GP_OK;
    if (!PQconsumeInput(l->c))
        return gp_err_set(err, GP_EIO, "notifications: connection to PostgreSQL lost: %s",
                          PQerrorMessage(l->c));
    *got = pg_drain(l->c);
    return GP_OK;
}

static void pg_listen_close(store_listener *h) {
    pg_listener *l = (pg_listener *)h;
    PQfinish(l->c);
    free(l);
}

static int pg_listen(store_t *st, const char *channel, store_listener **out, gp_err *err) {
    pg_store *s = (pg_store *)st;
    pg_listener *l = calloc(1, sizeof *l);
    if (!l) return gp_err_set(err, GP_ENOMEM, NULL);
    char sql[96];
    snprintf(sql, sizeof sql, "LISTEN %s", channel); /* (store_listen checked the name) */
    int rc = connect_one(s->conninfo, 0, &l->c, err);
    if (!rc && (rc = exec_plain(l->c, sql, err))) PQfinish(l->c);
    if (rc) {
        free(l);
        return rc;
    }
    l->base.wait = pg_listen_wait;
    l->base.close = pg_listen_close;
    *out = &l->base;
    return GP_OK;
}

static const store_ops pg_ops = {
    .name = "postgres",
    .close = pg_close,
    .schema_version = pg_schema_version,
    .schema_latest = pg_schema_latest,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .query = pg_query,
    .step = pg_step,
    .text = pg_text,
    .int64 = pg_int,
    .isnull = pg_isnull,
    .done = pg_done,
    .changes = pg_changes,
    .lead = pg_lead,
    .grant = pg_grant,
    .can_bypass = pg_can_bypass,
    .listen = pg_listen,
};
