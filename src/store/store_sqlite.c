/*
 * store_sqlite.c - the SQLite backend of the store interface.
 *
 * A fixed pool of connections to one database file in WAL mode, with
 * foreign keys on and a busy timeout.  A read transaction holds one pooled
 * connection from begin to rollback.
 *
 * Writes: group commit.  SQLite has one writer and, with synchronous=FULL,
 * an fsync per COMMIT, so one commit per write transaction caps a server at
 * a few hundred of them a second however small they are (10,000 nodes
 * heartbeating every 5 s are 2,000).  So the process's write transactions
 * share one writer connection and, when they come close together, one
 * COMMIT: a member takes the writer (in turn, under gmu), opens the outer
 * transaction (BEGIN IMMEDIATE) if none is open, and works under a
 * SAVEPOINT of its own (its rollback undoes only its changes).  Its commit
 * RELEASEs the savepoint; then, if other members wait for the writer and the
 * batch is young (GROUP_MAX members, GROUP_MAX_US), it hands the writer on and
 * waits for the batch's COMMIT; otherwise it COMMITs the batch itself and
 * wakes the members that wait.  store_commit() returns only once the COMMIT
 * holding the member's changes is durable (or with that COMMIT's error).  A
 * lone writer commits at once, as before.  A member sees the changes of the
 * members before it in its batch (they are serialised, and commit or fail
 * together).  STORE_WRITE_ALONE (a scheduling round: it holds the writer
 * long) waits for the open batch to commit, and commits its own work at once.
 * STORE_WRITE_ROWS (row locks on PostgreSQL, store.h) is STORE_WRITE here.
 *
 * Statements: each connection keeps its prepared statements (STMT_CACHE
 * slots, chosen by a hash of the SQL text, compared in full), so a statement
 * a server runs again and again (a heartbeat's twenty, a submit's) is parsed
 * and planned once per connection, not once per call; store_done() resets it
 * and clears its bindings for the next use, which then behaves as a fresh
 * one.  A statement already open in the same transaction (a nested query of
 * the same text), or one whose slot holds another open statement, is
 * prepared for that call alone.  SQLite re-prepares a cached statement itself
 * when the schema changed.
 *
 * Locking: the pool's mutex (pool.c) and gmu (the writer), neither held
 * during SQL; the writer connection is used only by the member holding it,
 * and a connection's statement cache with it.
 */
#include "schema_int.h"
#include "store_int.h"

#include "../core/gtime.h"

#include <time.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 10000
#define GROUP_MAX 64       /* members of one commit at most */
#define GROUP_MAX_US 10000 /* a batch older than this commits at the next member's end */
#define STMT_CACHE 128     /* prepared statements kept per connection */

/* One kept statement: its SQL (the key, compared in full), open (busy) or reset. */
typedef struct sq_cached {
    char *sql;
    uint32_t hash;
    int busy;
    sqlite3_stmt *s;
} sq_cached;

/* The statements one connection keeps; used only by whoever holds the connection. */
typedef struct sq_cache {
    sq_cached e[STMT_CACHE];
} sq_cache;

typedef struct sq_conn sq_conn;

typedef struct sq_store {
    struct store base;
    store_pool pool; /* which of dbs[] are idle (readers; the writer is wdb) */
    int n;           /* connections opened into dbs[] */
    sqlite3 **dbs;
    sq_cache *caches; /* one per dbs[] */
    sq_cache wcache;  /* the writer's */
    /* the writer and its group commit (see the top), all under gmu */
    sqlite3 *wdb;           /* NULL: a read-only store */
    pthread_mutex_t gmu;
    pthread_cond_t gcv;     /* the writer came free, or a batch ended */
    int holder;             /* a member holds the writer */
    int waiting;            /* members waiting to hold it */
    int alone_waiting;      /* of which STORE_WRITE_ALONE: the batch is not handed on */
    struct sq_batch *cur;   /* the open outer transaction; NULL: none */
} sq_store;

/* One outer transaction and its outcome, shared by its members until the last has read it. */
typedef struct sq_batch {
    int members;      /* members released into it, waiting for its COMMIT */
    int refs;         /* members still to read the outcome (+1 while open) */
    int ended;
    int rc;           /* GP_OK, or the error its members get */
    char msg[256];    /* as gp_err's */
    int64_t began_us;
} sq_batch;

typedef struct sq_tx {
    struct store_tx base;
    sq_store *st;
    int idx;   /* pooled connection; -1: the writer */
    int alone; /* STORE_WRITE_ALONE */
    sqlite3 *db;
    sq_cache *cache; /* db's statements */
} sq_tx;

typedef struct sq_stmt {
    struct store_stmt base;
    sq_tx *tx;
    sqlite3_stmt *s;
    sq_cached *kept; /* s is this cache slot's (reset at done, not finalized); NULL: its own */
} sq_stmt;

static const store_ops sq_ops;

static int map_rc(sqlite3 *db, int rc, gp_err *err, const char *what) {
    int ext = db ? sqlite3_extended_errcode(db) : rc;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
        if (ext == SQLITE_CONSTRAINT_UNIQUE || ext == SQLITE_CONSTRAINT_PRIMARYKEY)
            return gp_err_set(err, GP_ECONFLICT, "%s: already exists", what);
        return gp_err_set(err, GP_EINVALID, "%s: constraint failed (%s)", what, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return gp_err_set(err, GP_EBUSY, "%s: database busy", what);
    case SQLITE_NOMEM:
        return gp_err_set(err, GP_ENOMEM, "%s: out of memory", what);
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
        return gp_err_set(err, GP_EIO, "%s: %s", what, msg);
    default:
        return gp_err_set(err, GP_ESTORE, "%s: %s", what, msg);
    }
}

static int exec_plain(sqlite3 *db, const char *sql, gp_err *err) {
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int r = map_rc(db, rc, err, "sqlite");
        if (msg && err) {
            /* keep the engine's own text: it names the failing statement */
            gp_err_set(err, r, "sqlite: %s", msg);
        }
        sqlite3_free(msg);
        return r;
    }
    return GP_OK;
}

static int open_conn(const char *path, sqlite3 **out, gp_err *err) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        gp_err_set(err, GP_EIO, "cannot open %s: %s", path,
                   db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return GP_EIO;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db, 1);
    rc = exec_plain(db,
                    "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL;",
                    err);
    if (rc) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return GP_OK;
}

static int read_version(sqlite3 *db, int *out, gp_err *err) {
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(db, "SELECT COALESCE(MAX(version),0) FROM schema_migrations", -1,
                                &s, NULL);
    if (rc != SQLITE_OK) return map_rc(db, rc, err, "schema version");
    rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        int r = map_rc(db, rc, err, "schema version");
        sqlite3_finalize(s);
        return r;
    }
    *out = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return GP_OK;
}

/* Apply the migrations after the store's version up to `target` (0: all). */
static int migrate(sqlite3 *db, int target, gp_err *err) {
    int rc = exec_plain(db,
                        "CREATE TABLE IF NOT EXISTS schema_migrations ("
                        " version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
                        err);
    if (rc) return rc;
    int have, known = schema__sqlite_count(), latest = target > 0 ? target : known;
    if ((rc = exec_plain(db, "BEGIN IMMEDIATE", err))) return rc;
    if ((rc = read_version(db, &have, err))) goto fail;
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
        if ((rc = exec_plain(db, schema__sqlite_sql(v), err))) goto fail;
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(db, "INSERT INTO schema_migrations VALUES (?, ?)", -1, &s, NULL) !=
            SQLITE_OK) {
            rc = map_rc(db, SQLITE_ERROR, err, "migration");
            goto fail;
        }
        sqlite3_bind_int(s, 1, v);
        sqlite3_bind_int64(s, 2, gt_now_us());
        int r = sqlite3_step(s);
        sqlite3_finalize(s);
        if (r != SQLITE_DONE) {
            rc = map_rc(db, r, err, "migration");
            goto fail;
        }
    }
    return exec_plain(db, "COMMIT", err);
fail:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static sq_store *store_alloc(int n) {
    sq_store *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->base.ops = &sq_ops;
    pthread_mutex_init(&st->gmu, NULL);
    pthread_cond_init(&st->gcv, NULL);
    st->dbs = calloc((size_t)n, sizeof *st->dbs);
    st->caches = calloc((size_t)n, sizeof *st->caches);
    if (!st->dbs || !st->caches || store__pool_init(&st->pool, n)) {
        free(st->dbs);
        free(st->caches);
        free(st);
        return NULL;
    }
    return st;
}

/* Finalize a connection's kept statements (none may be open: every transaction ended). */
static void cache_clear(sq_cache *c) {
    for (int i = 0; i < STMT_CACHE; i++) {
        assert(!c->e[i].busy);
        sqlite3_finalize(c->e[i].s);
        free(c->e[i].sql);
        memset(&c->e[i], 0, sizeof c->e[i]);
    }
}

/* Close every connection opened and free the store (also after a failed open). */
static void store_free(sq_store *st) {
    for (int i = 0; i < st->n; i++) {
        cache_clear(&st->caches[i]);
        sqlite3_close(st->dbs[i]);
    }
    cache_clear(&st->wcache);
    sqlite3_close(st->wdb);
    pthread_mutex_destroy(&st->gmu);
    pthread_cond_destroy(&st->gcv);
    store__pool_free(&st->pool);
    free(st->dbs);
    free(st->caches);
    free(st);
}

int store__sqlite_open(const char *path, int pool_size, int target, store_t **out,
                       gp_err *err) {
    sq_store *st = store_alloc(pool_size);
    if (!st) return gp_err_set(err, GP_ENOMEM, NULL);
    int rc = GP_OK;
    for (int i = 0; i < pool_size; i++) {
        if ((rc = open_conn(path, &st->dbs[i], err))) break;
        st->n++;
        if (i == 0 && (rc = migrate(st->dbs[0], target, err))) break;
        store__pool_put(&st->pool, i);
    }
    if (!rc) rc = open_conn(path, &st->wdb, err);
    if (rc) {
        store_free(st);
        return rc;
    }
    *out = &st->base;
    return GP_OK;
}

/*
 * Read-only inspection (store_open_readonly): one connection opened with
 * SQLITE_OPEN_READONLY and query_only, no migrations.  A WAL database left
 * by a killed server is read with its log (SQLite needs the folder writable
 * for the -shm index, as for any WAL reader).
 */
int store__sqlite_open_ro(const char *path, store_t **out, gp_err *err) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        gp_err_set(err, rc == SQLITE_CANTOPEN ? GP_ENOTFOUND : GP_EIO, "cannot open %s: %s", path,
                   db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return rc == SQLITE_CANTOPEN ? GP_ENOTFOUND : GP_EIO;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db, 1);
    int have = 0, latest = schema__sqlite_count();
    if ((rc = exec_plain(db, "PRAGMA query_only=1", err)) || (rc = read_version(db, &have, err))) {
        sqlite3_close(db);
        return rc;
    }
    if ((rc = store__schema_exact(have, latest, err))) {
        sqlite3_close(db);
        return rc;
    }
    sq_store *st = store_alloc(1);
    if (!st) {
        sqlite3_close(db);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    st->dbs[0] = db;
    st->n = 1;
    store__pool_put(&st->pool, 0);
    *out = &st->base;
    return GP_OK;
}

/* store_backup() for SQLite: see store.h. */
int store__sqlite_backup(const char *path, const char *dest_path, int *schema_version,
                         gp_err *err) {
    sqlite3 *src = NULL, *dst = NULL;
    int rc = sqlite3_open_v2(path, &src, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int code = rc == SQLITE_CANTOPEN ? GP_ENOTFOUND : GP_EIO;
        gp_err_set(err, code, "cannot open %s: %s", path,
                   src ? sqlite3_errmsg(src) : sqlite3_errstr(rc));
        sqlite3_close(src);
        return code;
    }
    sqlite3_busy_timeout(src, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(src, 1);
    int have = 0;
    if ((rc = read_version(src, &have, err))) { /* also: is it a gpupool store at all */
        sqlite3_close(src);
        return rc;
    }
    int fd = open(dest_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        sqlite3_close(src);
        return gp_err_set(err, e == EEXIST ? GP_ECONFLICT : GP_EIO, "cannot create %s: %s",
                          dest_path, strerror(e));
    }
    close(fd);
    rc = sqlite3_open_v2(dest_path, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = gp_err_set(err, GP_EIO, "cannot open %s: %s", dest_path,
                        dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
        goto out;
    }
    sqlite3_extended_result_codes(dst, 1);
    /* one step (-1): a single read transaction on the source, so the copy is one
     * snapshot; a stepwise copy restarts whenever another connection writes */
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b) {
        rc = map_rc(dst, sqlite3_errcode(dst), err, "backup");
        goto out;
    }
    int step;
    for (int tries = 0;; tries++) {
        step = sqlite3_backup_step(b, -1);
        if ((step != SQLITE_BUSY && step != SQLITE_LOCKED) || tries >= 100) break;
        sqlite3_sleep(50); /* a writer checkpointing: try again */
    }
    int fin = sqlite3_backup_finish(b);
    if (step != SQLITE_DONE) {
        rc = gp_err_set(err, GP_EIO, "backup of %s: %s", path, sqlite3_errstr(step));
        goto out;
    }
    if (fin != SQLITE_OK) {
        rc = map_rc(dst, fin, err, "backup");
        goto out;
    }
    /* a file that stands alone (the source's WAL mode is set again by the server that opens
     * it), then check every page of it */
    if ((rc = exec_plain(dst, "PRAGMA journal_mode=DELETE", err))) goto out;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(dst, "PRAGMA quick_check", -1, &q, NULL) != SQLITE_OK) {
        rc = map_rc(dst, sqlite3_errcode(dst), err, "quick_check");
        goto out;
    }
    int ok = sqlite3_step(q) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
    if (!ok)
        rc = gp_err_set(err, GP_ESTORE, "the copy of %s fails quick_check: %s", path,
                        sqlite3_column_text(q, 0) ? (const char *)sqlite3_column_text(q, 0) : "?");
    sqlite3_finalize(q);
    if (!rc) rc = read_version(dst, &have, err);
    if (!rc && schema_version) *schema_version = have;
out:
    sqlite3_close(src);
    if (dst && sqlite3_close(dst) != SQLITE_OK && !rc)
        rc = gp_err_set(err, GP_EIO, "cannot close %s", dest_path);
    if (rc) unlink(dest_path);
    return rc;
}

static void sq_close(store_t *base) {
    sq_store *st = (sq_store *)base;
    assert(store__pool_idle(&st->pool) == st->n); /* every transaction ended */
    store_free(st);
}

static int sq_schema_latest(void) { return schema__sqlite_count(); }

/* ---- the writer: group commit (see the top) ---- */

/* Drop a reference to a batch (gmu held); the last one frees it. */
static void batch_unref(sq_batch *b) {
    if (--b->refs == 0) free(b);
}

/* The open batch is over (gmu held): record how, wake its members, forget it. */
static void batch_close(sq_store *st, int rc, const char *msg) {
    sq_batch *b = st->cur;
    st->cur = NULL;
    b->ended = 1;
    b->rc = rc;
    snprintf(b->msg, sizeof b->msg, "%s", msg ? msg : "");
    batch_unref(b);
    pthread_cond_broadcast(&st->gcv);
}

/* End the open batch (gmu held, this thread holds the writer): COMMIT it, or ROLLBACK it when
 * no member's changes are in it; then free the writer. */
static void end_batch(sq_store *st) {
    if (st->cur) {
        int members = st->cur->members;
        gp_err e = GP_ERR_INIT;
        int rc = GP_OK;
        pthread_mutex_unlock(&st->gmu);
        if (members) {
            rc = exec_plain(st->wdb, "COMMIT", &e);
            if (rc && !sqlite3_get_autocommit(st->wdb))
                sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
        } else if (!sqlite3_get_autocommit(st->wdb)) {
            sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
        }
        pthread_mutex_lock(&st->gmu);
        batch_close(st, rc, rc ? e.msg : NULL);
    }
    st->holder = 0;
    pthread_cond_broadcast(&st->gcv);
}

/* A member's turn is over (gmu held).  Hand the writer on within the batch, or end it now. */
static void turn_over(sq_store *st, int alone) {
    sq_batch *b = st->cur;
    /* a STORE_WRITE_ALONE waiting ends the batch here, so it is not starved */
    if (!alone && b && st->waiting > 0 && !st->alone_waiting && b->members < GROUP_MAX &&
        gt_mono_us() - b->began_us < GROUP_MAX_US) {
        st->holder = 0; /* the next member works in this batch; a later one commits it */
        pthread_cond_broadcast(&st->gcv);
        return;
    }
    end_batch(st);
}

static int writer_begin(sq_store *st, sq_tx *tx, gp_err *err) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += BUSY_TIMEOUT_MS / 1000;
    pthread_mutex_lock(&st->gmu);
    st->waiting++;
    st->alone_waiting += tx->alone;
    /* alone: also wait for the open batch to end (its members are not kept waiting); the
     * others let a waiting alone go first once a batch has ended */
#define WRITER_BUSY                                                                            \
    (st->holder || (tx->alone ? st->cur != NULL : (!st->cur && st->alone_waiting > 0)))
    while (WRITER_BUSY) {
        if (pthread_cond_timedwait(&st->gcv, &st->gmu, &until) == ETIMEDOUT && WRITER_BUSY) {
            st->waiting--;
            st->alone_waiting -= tx->alone;
            pthread_mutex_unlock(&st->gmu);
            return gp_err_set(err, GP_EBUSY, "sqlite: database busy (the writer is held)");
        }
    }
#undef WRITER_BUSY
    st->waiting--;
    st->alone_waiting -= tx->alone;
    st->holder = 1;
    int fresh = st->cur == NULL;
    pthread_mutex_unlock(&st->gmu);
    int rc = fresh ? exec_plain(st->wdb, "BEGIN IMMEDIATE", err) : GP_OK;
    if (!rc) rc = exec_plain(st->wdb, "SAVEPOINT gp_member", err);
    if (rc && fresh && !sqlite3_get_autocommit(st->wdb))
        sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_lock(&st->gmu);
    if (!rc && fresh) {
        sq_batch *b = calloc(1, sizeof *b);
        if (!b) {
            sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
            rc = gp_err_set(err, GP_ENOMEM, NULL);
        } else {
            b->refs = 1; /* the store's, while open */
            b->began_us = gt_mono_us();
            st->cur = b;
        }
    }
    if (rc) turn_over(st, tx->alone); /* nothing of ours is in the batch */
    pthread_mutex_unlock(&st->gmu);
    return rc;
}

/* Undo this member's changes only; the batch goes on (or ends, if SQLite ended it). */
static void writer_rollback(sq_tx *tx) {
    sq_store *st = tx->st;
    sqlite3_exec(st->wdb, "ROLLBACK TO gp_member; RELEASE gp_member", NULL, NULL, NULL);
    pthread_mutex_lock(&st->gmu);
    if (st->cur && sqlite3_get_autocommit(st->wdb)) {
        /* an error SQLite answers by ending the whole transaction (I/O, a full disk): the
         * members before us lost their changes with it, and are told so */
        batch_close(st, st->cur->members ? GP_EIO : GP_OK,
                    "sqlite: the shared transaction was rolled back by an error");
    }
    turn_over(st, tx->alone);
    pthread_mutex_unlock(&st->gmu);
}

static int writer_commit(sq_tx *tx, gp_err *err) {
    sq_store *st = tx->st;
    int rc = exec_plain(st->wdb, "RELEASE gp_member", err);
    if (rc) {
        writer_rollback(tx);
        return rc;
    }
    pthread_mutex_lock(&st->gmu);
    sq_batch *b = st->cur;
    assert(b); /* our savepoint was in it */
    b->members++;
    b->refs++;
    turn_over(st, tx->alone);
    while (!b->ended) pthread_cond_wait(&st->gcv, &st->gmu);
    rc = b->rc;
    if (rc) gp_err_set(err, rc, "%s", b->msg);
    batch_unref(b);
    pthread_mutex_unlock(&st->gmu);
    return rc;
}

static int sq_begin(store_t *base, int mode, store_tx **out, gp_err *err) {
    sq_store *st = (sq_store *)base;
    sq_tx *tx = calloc(1, sizeof *tx);
    if (!tx) return gp_err_set(err, GP_ENOMEM, NULL);
    tx->base.ops = &sq_ops;
    tx->st = st;
    if (mode != STORE_READ && st->wdb) {
        tx->idx = -1;
        tx->alone = mode == STORE_WRITE_ALONE;
        tx->db = st->wdb;
        tx->cache = &st->wcache;
        int rc = writer_begin(st, tx, err);
        if (rc) {
            free(tx);
            return rc;
        }
        *out = &tx->base;
        return GP_OK;
    }
    /* reads; and writes on a store opened read-only (refused by SQLite at the first write) */
    tx->idx = store__pool_take(&st->pool);
    tx->db = st->dbs[tx->idx];
    tx->cache = &st->caches[tx->idx];
    int rc = exec_plain(tx->db, mode != STORE_READ ? "BEGIN IMMEDIATE" : "BEGIN", err);
    if (rc) {
        store__pool_put(&st->pool, tx->idx);
        free(tx);
        return rc;
    }
    *out = &tx->base;
    return GP_OK;
}

static void release(sq_tx *tx) {
    if (tx->idx >= 0) store__pool_put(&tx->st->pool, tx->idx);
    free(tx);
}

static void sq_rollback(store_tx *base) {
    sq_tx *tx = (sq_tx *)base;
    if (tx->idx < 0) writer_rollback(tx);
    else if (!sqlite3_get_autocommit(tx->db)) sqlite3_exec(tx->db, "ROLLBACK", NULL, NULL, NULL);
    release(tx);
}

static int sq_commit(store_tx *base, gp_err *err) {
    sq_tx *tx = (sq_tx *)base;
    if (tx->idx < 0) {
        int rc = writer_commit(tx, err);
        release(tx);
        return rc;
    }
    int rc = exec_plain(tx->db, "COMMIT", err);
    if (rc) {
        sq_rollback(base);
        return rc;
    }
    release(tx);
    return GP_OK;
}

static int sq_schema_version(store_t *base, int *out, gp_err *err) {
    store_tx *tx = NULL;
    int rc = sq_begin(base, STORE_READ, &tx, err);
    if (rc) return rc;
    rc = read_version(((sq_tx *)tx)->db, out, err);
    sq_rollback(tx);
    return rc;
}

/* FNV-1a of the SQL text: the cache slot's key. */
static uint32_t sql_hash(const char *sql) {
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)sql; *p; p++) h = (h ^ *p) * 16777619u;
    return h;
}

/* Give back a statement: a kept one is reset for its next use, its own one finalized. */
static void stmt_release(sqlite3_stmt *s, sq_cached *kept) {
    if (!kept) {
        sqlite3_finalize(s);
        return;
    }
    assert(kept->busy && kept->s == s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    kept->busy = 0;
}

/*
 * The prepared statement for sql on tx's connection: the kept one when its
 * slot holds this SQL and it is not open, else a new one, kept in its slot
 * when that slot is not open (an older statement there is finalized).
 */
static int stmt_get(sq_tx *tx, const char *sql, sqlite3_stmt **out, sq_cached **kept,
                    gp_err *err) {
    uint32_t h = sql_hash(sql);
    sq_cached *c = &tx->cache->e[h % STMT_CACHE];
    *kept = NULL;
    if (c->s && !c->busy && c->hash == h && strcmp(c->sql, sql) == 0) {
        c->busy = 1;
        *out = c->s;
        *kept = c;
        return GP_OK;
    }
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v3(tx->db, sql, -1, c->busy ? 0 : SQLITE_PREPARE_PERSISTENT, &s,
                                NULL);
    if (rc != SQLITE_OK) return map_rc(tx->db, rc, err, "prepare");
    if (!c->busy && s) {
        char *copy = strdup(sql);
        if (copy) {
            sqlite3_finalize(c->s);
            free(c->sql);
            c->sql = copy;
            c->hash = h;
            c->s = s;
            c->busy = 1;
            *kept = c;
        }
    }
    *out = s;
    return GP_OK;
}

static int sq_query(store_tx *base, store_stmt **out, gp_err *err, const char *sql,
                    const char *types, va_list ap) {
    sq_tx *tx = (sq_tx *)base;
    sqlite3_stmt *s = NULL;
    sq_cached *kept = NULL;
    *out = NULL;
    int rc = stmt_get(tx, sql, &s, &kept, err);
    if (rc) return rc;
    if (!s) return gp_err_set(err, GP_ESTORE, "prepare: empty statement");
    int idx = 1;
    for (const char *t = types ? types : ""; *t; t++, idx++) {
        switch (*t) {
        case 's': {
            const char *v = va_arg(ap, const char *);
            rc = v ? sqlite3_bind_text(s, idx, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, idx);
            break;
        }
        case 'i':
            rc = sqlite3_bind_int64(s, idx, va_arg(ap, int64_t));
            break;
        case 'n':
            rc = sqlite3_bind_null(s, idx);
            break;
        default:
            assert(!"unknown bind type");
            rc = SQLITE_MISUSE;
        }
        if (rc != SQLITE_OK) {
            int r = map_rc(tx->db, rc, err, "bind");
            stmt_release(s, kept);
            return r;
        }
    }
    sq_stmt *st = calloc(1, sizeof *st);
    if (!st) {
        stmt_release(s, kept);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    st->base.ops = &sq_ops;
    st->tx = tx;
    st->s = s;
    st->kept = kept;
    *out = &st->base;
    return GP_OK;
}

static int sq_step(store_stmt *base, gp_err *err) {
    sq_stmt *st = (sq_stmt *)base;
    int rc = sqlite3_step(st->s);
    if (rc == SQLITE_ROW) return 1;
    if (rc == SQLITE_DONE) return 0;
    return map_rc(st->tx->db, rc, err, "query");
}

static const char *sq_text(store_stmt *base, int col) {
    return (const char *)sqlite3_column_text(((sq_stmt *)base)->s, col);
}

static int64_t sq_int(store_stmt *base, int col) {
    return sqlite3_column_int64(((sq_stmt *)base)->s, col);
}

static int sq_isnull(store_stmt *base, int col) {
    return sqlite3_column_type(((sq_stmt *)base)->s, col) == SQLITE_NULL;
}

static void sq_done(store_stmt *base) {
    sq_stmt *st = (sq_stmt *)base;
    stmt_release(st->s, st->kept);
    free(st);
}

static int sq_changes(store_tx *base) { return sqlite3_changes(((sq_tx *)base)->db); }

static const store_ops sq_ops = {
    .name = "sqlite",
    .close = sq_close,
    .schema_version = sq_schema_version,
    .schema_latest = sq_schema_latest,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .query = sq_query,
    .step = sq_step,
    .text = sq_text,
    .int64 = sq_int,
    .isnull = sq_isnull,
    .done = sq_done,
    .changes = sq_changes,
};
