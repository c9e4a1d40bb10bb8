/*
 * test_store.c - the store on both backends (SQLite; PostgreSQL when
 * GP_TEST_PG is set): migrations, refusal of newer schemas, error mapping,
 * placeholders, transactions, concurrent writers through the pool, and
 * leadership among several stores on one PostgreSQL database.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>

/* A fresh store; its location (file path or PostgreSQL URI) goes to `url`. */
static store_t *open_fresh(const char *dir, char *url, size_t n, int pool) {
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    if (tu_pg()) tu_pg_database(url, n);
    else snprintf(url, n, "%s/gpupool.db", dir);
    assert_int_equal(store_open(url, pool, &st, &err), GP_OK);
    return st;
}

static void migrations_apply_once(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = open_fresh(dir, url, sizeof url, 2);
    int v = -1;
    assert_int_equal(store_schema_version(st, &v, &err), GP_OK);
    assert_int_equal(v, store_schema_latest(st));
    assert_true(v >= 1);
    assert_string_equal(store_backend(st), tu_pg() ? "postgres" : "sqlite");
    assert_int_equal(store_ping(st, &err), GP_OK);
    store_close(st);
    /* reopening applies nothing twice */
    assert_int_equal(store_open(url, 1, &st, &err), GP_OK);
    assert_int_equal(store_schema_version(st, &v, &err), GP_OK);
    assert_int_equal(v, store_schema_latest(st));
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT COUNT(*) FROM schema_migrations", ""),
                     GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), v);
    store_done(s);
    if (tu_pg()) {
        store_rollback(tx);
        store_close(st);
        tu_rmdir(dir);
        return;
    }
    /* WAL mode and foreign keys are on */
    assert_int_equal(store_query(tx, &s, &err, "PRAGMA journal_mode", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_string_equal(store_text(s, 0), "wal");
    store_done(s);
    assert_int_equal(store_query(tx, &s, &err, "PRAGMA foreign_keys", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), 1);
    store_done(s);
    store_rollback(tx);
    store_close(st);
    tu_rmdir(dir);
}

/* store_open_to: stops at a version, the next open goes on from there, never back */
static void migrations_stop_at_a_version(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    int known = store_schema_known(), v = -1;
    assert_true(known >= 2);
    if (tu_pg()) tu_pg_database(url, sizeof url);
    else snprintf(url, sizeof url, "%s/gpupool.db", dir);
    assert_int_equal(store_open_to(url, 1, known - 1, &st, &err), GP_OK);
    assert_int_equal(store_schema_version(st, &v, &err), GP_OK);
    assert_int_equal(v, known - 1);
    store_close(st);
    /* out of range: nothing opened */
    assert_int_equal(store_open_to(url, 1, known + 1, &st, &err), GP_EINVALID);
    assert_null(st);
    assert_int_equal(store_open_to(url, 1, -1, &st, &err), GP_EINVALID);
    /* the same version again: nothing to do */
    assert_int_equal(store_open_to(url, 1, known - 1, &st, &err), GP_OK);
    store_close(st);
    /* never back */
    assert_int_equal(store_open_to(url, 1, known - 2 > 0 ? known - 2 : 1, &st, &err), GP_ESCHEMA);
    assert_non_null(strstr(err.msg, "never undone"));
    assert_null(st);
    /* a plain open applies the rest, once */
    assert_int_equal(store_open(url, 1, &st, &err), GP_OK);
    assert_int_equal(store_schema_version(st, &v, &err), GP_OK);
    assert_int_equal(v, known);
    store_close(st);
    tu_rmdir(dir);
}

static void newer_schema_is_refused(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = open_fresh(dir, path, sizeof path, 1);
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(
        store_exec(tx, NULL, &err, "INSERT INTO schema_migrations VALUES (999, 0)", ""), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    store_close(st);
    st = NULL;
    assert_int_equal(store_open(path, 1, &st, &err), GP_ESCHEMA);
    assert_null(st);
    assert_non_null(strstr(err.msg, "newer"));
    assert_non_null(strstr(err.msg, "999"));
    tu_rmdir(dir);
}

static void bad_locations(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    assert_int_equal(store_open("/nonexistent-dir/x/gpupool.db", 1, &st, &err), GP_EIO);
    assert_null(st);
    assert_int_equal(store_open("sqlite:", 1, &st, &err), GP_EINVALID);
    /* nobody listens on port 1: a clear I/O error, nothing opened */
    assert_int_equal(store_open("postgresql://gpupool@127.0.0.1:1/x?connect_timeout=2", 1, &st,
                                &err),
                     GP_EIO);
    assert_null(st);
    assert_non_null(strstr(err.msg, "PostgreSQL"));
}

/* Run one statement in a transaction of its own; returns its status. */
static int exec_alone(store_t *st, const char *sql, const char *types, const char *a,
                      const char *b) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = store_exec(tx, NULL, &err, sql, types, a, b, (int64_t)1);
    if (rc) store_rollback(tx);
    else assert_int_equal(store_commit(tx, &err), GP_OK);
    return rc;
}

static void errors_and_transactions(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 2);
    store_tx *tx;
    int changes = -1;
    /* each failing statement in a transaction of its own: on PostgreSQL a failed
     * statement aborts its transaction (store.h) */
    assert_int_equal(exec_alone(st, "INSERT INTO tenants (id, name, created_at) VALUES (?,?,?)",
                                "ssi", "t0", "keep"),
                     GP_OK);
    /* unique violation -> conflict */
    assert_int_equal(exec_alone(st, "INSERT INTO tenants (id, name, created_at) VALUES (?,?,?)",
                                "ssi", "t9", "keep"),
                     GP_ECONFLICT);
    /* foreign key violation -> invalid */
    assert_int_equal(exec_alone(st,
                                "INSERT INTO projects (id, tenant_id, name, class, created_at)"
                                " VALUES (?,?,'p','research',?)",
                                "ssi", "p1", "no-such-tenant"),
                     GP_EINVALID);
    /* check constraint -> invalid */
    assert_int_equal(exec_alone(st,
                                "INSERT INTO projects (id, tenant_id, name, class, created_at)"
                                " VALUES (?,?,'p','bogus',?)",
                                "ssi", "p1", "t0"),
                     GP_EINVALID);
    /* SQL syntax error -> store error */
    assert_int_equal(exec_alone(st, "SELEC 1", "", NULL, NULL), GP_ESTORE);
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_exec(tx, &changes, &err,
                                "INSERT INTO tenants (id, name, created_at) VALUES (?,?,?)", "ssi",
                                "t1", "research", (int64_t)1),
                     GP_OK);
    assert_int_equal(changes, 1);
    assert_int_equal(store_exec(tx, &changes, &err, "UPDATE tenants SET display_name = 'x'", ""),
                     GP_OK);
    assert_int_equal(changes, 2);
    /* NULL text binds SQL NULL; `?N` placeholders; a '?' inside a literal stays */
    store_stmt *s;
    assert_int_equal(store_query(tx, &s, &err, "SELECT ? IS NULL, ?, ?1 IS NOT NULL, '?', ?3 + 1",
                                 "sni", (const char *)NULL, (int64_t)41),
                     GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), 1);
    assert_true(store_isnull(s, 1));
    assert_null(store_text(s, 1));
    assert_int_equal(store_int(s, 2), 0);
    assert_string_equal(store_text(s, 3), "?");
    assert_int_equal(store_int(s, 4), 42);
    assert_int_equal(store_step(s, &err), 0);
    store_done(s);
    /* a statement that fails leaves the transaction unusable on PostgreSQL: commit says so */
    if (tu_pg()) {
        assert_int_equal(store_exec(tx, NULL, &err, "SELEC 1", ""), GP_ESTORE);
        assert_int_not_equal(store_commit(tx, &err), GP_OK);
        assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    }
    store_rollback(tx);
    /* a read transaction cannot write on PostgreSQL (READ ONLY) */
    if (tu_pg()) {
        assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
        assert_int_not_equal(store_exec(tx, NULL, &err, "DELETE FROM tenants", ""), GP_OK);
        store_rollback(tx);
    }
    /* rolled back: nothing stayed */
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT COUNT(*) FROM tenants", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), 1); /* only t0, committed alone */
    store_done(s);
    store_rollback(tx);
    store_rollback(NULL);
    store_done(NULL);
    store_close(st);
    store_close(NULL);
    tu_rmdir(dir);
}

/*
 * Statements used again (SQLite keeps them per connection; PostgreSQL does
 * not, and must answer the same): a reused statement starts fresh (its
 * earlier bindings gone, its rows from the first), a nested query of the
 * same text while the outer one is open, hundreds of distinct texts cycling
 * through the slots, a statement abandoned mid-way and one that failed, and
 * a statement kept across a schema change.
 */
static void statements_used_again(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 1);
    store_tx *tx;
    store_stmt *s, *inner;
    const char *q = "SELECT ?1 IS NULL, COALESCE(?1, -1)";
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    for (int round = 0; round < 3; round++) {
        /* bound, then not bound: the second use must not see the first's value */
        assert_int_equal(store_query(tx, &s, &err, q, "i", (int64_t)7), GP_OK);
        assert_int_equal(store_step(s, &err), 1);
        assert_int_equal(store_int(s, 0), 0);
        assert_int_equal(store_int(s, 1), 7);
        store_done(s);
        if (tu_pg()) continue; /* PostgreSQL refuses a parameter left unbound */
        assert_int_equal(store_query(tx, &s, &err, q, ""), GP_OK);
        assert_int_equal(store_step(s, &err), 1);
        assert_int_equal(store_int(s, 0), 1);
        assert_int_equal(store_int(s, 1), -1);
        store_done(s);
    }
    /* rows from the first again, after an abandoned half-read use */
    assert_int_equal(store_exec(tx, NULL, &err, "CREATE TABLE t (k INTEGER, v TEXT)", ""), GP_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(store_exec(tx, NULL, &err, "INSERT INTO t VALUES (?, ?)", "is",
                                    (int64_t)i, "x"),
                         GP_OK);
    const char *all = "SELECT k FROM t ORDER BY k";
    assert_int_equal(store_query(tx, &s, &err, all, ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_step(s, &err), 1);
    store_done(s); /* abandoned after two rows */
    assert_int_equal(store_query(tx, &s, &err, all, ""), GP_OK);
    int n = 0;
    while (store_step(s, &err) == 1) {
        assert_int_equal(store_int(s, 0), n);
        /* the same text nested while the outer statement is open */
        assert_int_equal(store_query(tx, &inner, &err, all, ""), GP_OK);
        int m = 0;
        while (store_step(inner, &err) == 1) m++;
        assert_int_equal(m, 5);
        store_done(inner);
        n++;
    }
    assert_int_equal(n, 5);
    store_done(s);
    /* many distinct texts: slots reused, every answer right */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 400; i++) {
            char sql[64];
            snprintf(sql, sizeof sql, "SELECT %d + ?", i);
            assert_int_equal(store_query(tx, &s, &err, sql, "i", (int64_t)pass), GP_OK);
            assert_int_equal(store_step(s, &err), 1);
            assert_int_equal(store_int(s, 0), i + pass);
            store_done(s);
        }
    /* a failed use leaves the kept statement usable (SQLite: a constraint failure) */
    if (!tu_pg()) {
        assert_int_equal(store_exec(tx, NULL, &err, "CREATE UNIQUE INDEX t_k ON t(k)", ""), GP_OK);
        assert_int_equal(store_exec(tx, NULL, &err, "INSERT INTO t VALUES (?, ?)", "is",
                                    (int64_t)1, "dup"),
                         GP_ECONFLICT);
        assert_int_equal(store_exec(tx, NULL, &err, "INSERT INTO t VALUES (?, ?)", "is",
                                    (int64_t)9, "y"),
                         GP_OK);
    }
    /* the schema changes under a kept statement: it sees the new column (SQLite; a
     * PostgreSQL session's prepared plan of SELECT * refuses the change of result type:
     * the servers' SQL names its columns, and a store's schema changes only at start) */
    if (tu_pg()) {
        store_rollback(tx);
        store_close(st);
        tu_rmdir(dir);
        return;
    }
    const char *star = "SELECT * FROM t WHERE k = 0";
    assert_int_equal(store_query(tx, &s, &err, star, ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    store_done(s);
    assert_int_equal(store_exec(tx, NULL, &err, "ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'new'", ""),
                     GP_OK);
    assert_int_equal(store_query(tx, &s, &err, star, ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_string_equal(store_text(s, 2), "new");
    store_done(s);
    store_rollback(tx);
    store_close(st);
    tu_rmdir(dir);
}

typedef struct {
    store_t *st;
    int id;
    int ok;
} worker_arg;

enum { WORKERS = 4, PER_WORKER = 50 };

static void *worker(void *p) {
    worker_arg *a = p;
    gp_err err = GP_ERR_INIT;
    for (int i = 0; i < PER_WORKER; i++) {
        store_tx *tx;
        char id[32], name[32];
        snprintf(id, sizeof id, "w%d-%d", a->id, i);
        snprintf(name, sizeof name, "t-%d-%d", a->id, i);
        if (store_begin(a->st, STORE_WRITE, &tx, &err)) return NULL;
        /* read-modify-write of a counter: lost updates would show as a wrong total */
        store_stmt *s;
        int64_t n = 0;
        if (store_query(tx, &s, &err, "SELECT seq FROM audit_head WHERE id = 1", "") == GP_OK) {
            if (store_step(s, &err) > 0) n = store_int(s, 0);
            store_done(s);
        }
        if (store_exec(tx, NULL, &err, "UPDATE audit_head SET seq = ? WHERE id = 1", "i", n + 1) ||
            store_exec(tx, NULL, &err, "INSERT INTO tenants (id, name, created_at) VALUES (?,?,0)",
                       "ss", id, name)) {
            store_rollback(tx);
            return NULL;
        }
        if (store_commit(tx, &err)) return NULL;
        a->ok++;
    }
    return NULL;
}

static void concurrent_writers_serialise(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 3); /* fewer connections than workers: the pool must wait */
    pthread_t th[WORKERS];
    worker_arg args[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        args[i] = (worker_arg){st, i, 0};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < WORKERS; i++) assert_int_equal(args[i].ok, PER_WORKER);
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err,
                                 "SELECT (SELECT seq FROM audit_head), (SELECT COUNT(*) FROM "
                                 "tenants)",
                                 ""),
                     GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), WORKERS * PER_WORKER);
    assert_int_equal(store_int(s, 1), WORKERS * PER_WORKER);
    store_done(s);
    store_rollback(tx);
    store_close(st);
    tu_rmdir(dir);
}

/*
 * STORE_WRITE_ROWS (store.h): row locks instead of the one write lock.
 * Counter rows in token_ledger, changed read-then-write with STORE_FOR_UPDATE by workers
 * on two store handles (two servers): the totals are exact (a read that did not lock its
 * row would lose updates).
 */
typedef struct {
    store_t *st;
    int id, ok;
} rows_arg;

enum { ROWS_WORKERS = 6, ROWS_EACH = 40 };

/* The row's `used`; 0 when it is not there. */
static int64_t rows_used(store_tx *tx, const char *id, int lock, gp_err *err) {
#define ROWS_USED_SQL                                                                     \
    "SELECT used FROM token_ledger WHERE scope = 'key' AND id = ? AND month = '2024-01'"
    store_stmt *s;
    int64_t n = 0;
    if (store_query(tx, &s, err, lock ? STORE_FOR_UPDATE(tx, ROWS_USED_SQL) : ROWS_USED_SQL, "s",
                    id))
        return -1;
    if (store_step(s, err) > 0) n = store_int(s, 0);
    store_done(s);
    return n;
}

static int rows_set(store_tx *tx, const char *id, int64_t used, gp_err *err) {
    return store_exec(tx, NULL, err,
                      "INSERT INTO token_ledger (scope, id, month, used, reserved)"
                      " VALUES ('key', ?, '2024-01', ?, 0) ON CONFLICT (scope, id, month)"
                      " DO UPDATE SET used = excluded.used",
                      "si", id, used);
}

static void *rows_worker(void *p) {
    rows_arg *a = p;
    gp_err err = GP_ERR_INIT;
    for (int i = 0; i < ROWS_EACH; i++) {
        store_tx *tx;
        if (store_begin(a->st, STORE_WRITE_ROWS, &tx, &err)) continue;
        /* one counter shared by all, one of the worker's own */
        char own[32];
        snprintf(own, sizeof own, "own-%d", a->id);
        int64_t n = rows_used(tx, "shared", 1, &err);
        int rc = n < 0 ? err.code : rows_set(tx, "shared", n + 1, &err);
        int64_t m = rc ? -1 : rows_used(tx, own, 1, &err);
        if (!rc) rc = m < 0 ? err.code : rows_set(tx, own, m + 2, &err);
        if (rc) {
            store_rollback(tx);
            continue;
        }
        if (store_commit(tx, &err) == GP_OK) a->ok++;
    }
    return NULL;
}

static void rows_mode_exact(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *st[2];
    st[0] = open_fresh(dir, url, sizeof url, 3);
    assert_int_equal(store_open(url, 3, &st[1], &err), GP_OK);
    /* the row exists before the race: FOR UPDATE locks rows that are there */
    store_tx *tx;
    assert_int_equal(store_begin(st[0], STORE_WRITE_ROWS, &tx, &err), GP_OK);
    assert_int_equal(rows_set(tx, "shared", 0, &err), GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    pthread_t th[ROWS_WORKERS];
    rows_arg a[ROWS_WORKERS];
    for (int i = 0; i < ROWS_WORKERS; i++) {
        a[i] = (rows_arg){st[i & 1], i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, rows_worker, &a[i]), 0);
    }
    int ok = 0;
    for (int i = 0; i < ROWS_WORKERS; i++) {
        pthread_join(th[i], NULL);
        ok += a[i].ok;
        assert_int_equal(a[i].ok, ROWS_EACH); /* rows locked in one order: nothing refused */
    }
    assert_int_equal(store_begin(st[1], STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(rows_used(tx, "shared", 0, &err), ok);
    for (int i = 0; i < ROWS_WORKERS; i++) {
        char own[32];
        snprintf(own, sizeof own, "own-%d", i);
        assert_int_equal(rows_used(tx, own, 0, &err), 2 * a[i].ok);
    }
    store_rollback(tx);
    store_close(st[0]);
    store_close(st[1]);
    tu_rmdir(dir);
}

/* A transaction in another thread: begun in `mode`, it sets row `id`, commits, and says so. */
typedef struct {
    store_t *st;
    int mode;
    const char *id;
    int rc;
    atomic_int done;
} rows_bg;

static void *rows_bg_main(void *p) {
    rows_bg *b = p;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    b->rc = store_begin(b->st, b->mode, &tx, &err);
    if (!b->rc && (b->rc = rows_set(tx, b->id, 7, &err))) store_rollback(tx);
    else if (!b->rc) b->rc = store_commit(tx, &err);
    atomic_store(&b->done, 1);
    return NULL;
}

/* Wait up to `ms` for the background transaction; 1 once it is done. */
static int rows_bg_wait(rows_bg *b, int ms) {
    for (int i = 0; i < ms / 10 && !atomic_load(&b->done); i++) usleep(10000);
    return atomic_load(&b->done);
}

/* A statement of an open transaction, run in another thread (it may wait for a row). */
typedef struct {
    store_tx *tx;
    const char *id;
    int64_t value;
    int rc;
} rows_want;

static void *rows_want_main(void *p) {
    rows_want *w = p;
    gp_err err = GP_ERR_INIT;
    w->rc = rows_set(w->tx, w->id, w->value, &err);
    return NULL;
}

/*
 * On PostgreSQL a STORE_WRITE_ROWS transaction does not wait for a write transaction that
 * holds the one write lock (STORE_WRITE), unless it wants a row that one locked; on SQLite
 * it waits, like STORE_WRITE.  Two row transactions locking rows crosswise: the database
 * ends one (GP_EBUSY) and nothing of it stays; the other's commit holds.
 */
static void rows_mode_waits_for_rows_only(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = open_fresh(dir, url, sizeof url, 4);
    store_tx *a;
    assert_int_equal(store_begin(st, STORE_WRITE, &a, &err), GP_OK);
    assert_int_equal(rows_set(a, "x", 1, &err), GP_OK);
    /* another row: at once on PostgreSQL, after the writer on SQLite */
    rows_bg b = {.st = st, .mode = STORE_WRITE_ROWS, .id = "y"};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, rows_bg_main, &b), 0);
    assert_int_equal(rows_bg_wait(&b, tu_pg() ? 5000 : 300), tu_pg() ? 1 : 0);
    /* the same row: only once the writer is done, on both */
    rows_bg c = {.st = st, .mode = STORE_WRITE_ROWS, .id = "x"};
    pthread_t th2;
    assert_int_equal(pthread_create(&th2, NULL, rows_bg_main, &c), 0);
    assert_int_equal(rows_bg_wait(&c, 300), 0);
    assert_int_equal(store_commit(a, &err), GP_OK);
    pthread_join(th, NULL);
    pthread_join(th2, NULL);
    assert_int_equal(b.rc, GP_OK);
    assert_int_equal(c.rc, GP_OK);
    /* the writer's lock still serialises STORE_WRITE among themselves */
    assert_int_equal(store_begin(st, STORE_WRITE, &a, &err), GP_OK);
    rows_bg d = {.st = st, .mode = STORE_WRITE, .id = "z"};
    assert_int_equal(pthread_create(&th, NULL, rows_bg_main, &d), 0);
    assert_int_equal(rows_bg_wait(&d, 300), 0);
    store_rollback(a);
    pthread_join(th, NULL);
    assert_int_equal(d.rc, GP_OK);
    if (tu_pg()) {
        /* crosswise: a locks x and wants y; e holds y and wants x */
        assert_int_equal(store_begin(st, STORE_WRITE_ROWS, &a, &err), GP_OK);
        assert_int_equal(rows_used(a, "x", 1, &err), 7);
        store_tx *e;
        assert_int_equal(store_begin(st, STORE_WRITE_ROWS, &e, &err), GP_OK);
        assert_int_equal(rows_set(e, "y", 100, &err), GP_OK);
        rows_want w = {.tx = a, .id = "y", .value = 5};
        assert_int_equal(pthread_create(&th, NULL, rows_want_main, &w), 0);
        usleep(100000); /* a waits for y */
        gp_err eerr = GP_ERR_INIT;
        int64_t ex = rows_used(e, "x", 1, &eerr);
        pthread_join(th, NULL);
        int e_lost = ex < 0;
        assert_true(e_lost != (w.rc != GP_OK)); /* exactly one of them is ended */
        if (e_lost) {
            assert_int_equal(eerr.code, GP_EBUSY);
            assert_true(store_commit(e, &eerr) != GP_OK); /* nothing of e is kept */
            assert_int_equal(store_commit(a, &err), GP_OK);
        } else {
            assert_int_equal(w.rc, GP_EBUSY);
            assert_true(store_commit(a, &err) != GP_OK);
            assert_int_equal(store_commit(e, &err), GP_OK);
        }
        assert_int_equal(store_begin(st, STORE_READ, &a, &err), GP_OK);
        assert_int_equal(rows_used(a, "y", 0, &err), e_lost ? 5 : 100);
        store_rollback(a);
    }
    store_close(st);
    tu_rmdir(dir);
}

static int64_t count_rows(store_t *st, const char *tenant, const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    if (tenant) assert_int_equal(store_set_tenant(tx, tenant, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, sql, ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    int64_t n = store_int(s, 0);
    store_done(s);
    store_rollback(tx);
    return n;
}

/* Group commit (store.h): members that roll back lose only their own changes, whatever the
 * members around them in the same shared commit do; a STORE_WRITE_ALONE transaction in the
 * middle of it all commits on its own; every commit that said GP_OK is in the store. */
typedef struct {
    store_t *st;
    int id, alone;
    int committed, rolled;
} mix_arg;

enum { MIX_WORKERS = 6, MIX_EACH = 60 };

static void *mix_worker(void *p) {
    mix_arg *a = p;
    gp_err err = GP_ERR_INIT;
    for (int i = 0; i < MIX_EACH; i++) {
        store_tx *tx;
        char id[32];
        snprintf(id, sizeof id, "m%d-%d", a->id, i);
        if (store_begin(a->st, a->alone ? STORE_WRITE_ALONE : STORE_WRITE, &tx, &err)) continue;
        int rc = store_exec(tx, NULL, &err,
                            "INSERT INTO tenants (id, name, created_at) VALUES (?,?,0)", "ss", id,
                            id);
        /* every third rolls back after writing; one in seven fails a statement first */
        if (!rc && i % 7 == 3)
            rc = store_exec(tx, NULL, &err,
                            "INSERT INTO tenants (id, name, created_at) VALUES (?,?,0)", "ss", id,
                            id) == GP_ECONFLICT ? GP_OK : GP_ESTORE;
        if (rc || i % 3 == 0) {
            store_rollback(tx);
            a->rolled++;
            continue;
        }
        if (store_commit(tx, &err) == GP_OK) a->committed++;
    }
    return NULL;
}

static void group_commit_members_apart(void **state) {
    (void)state;
    if (tu_pg()) skip(); /* SQLite's writer only */
    char *dir = tu_mkdtemp();
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 2);
    pthread_t th[MIX_WORKERS];
    mix_arg args[MIX_WORKERS];
    for (int i = 0; i < MIX_WORKERS; i++) {
        args[i] = (mix_arg){st, i, i == 0, 0, 0};
        pthread_create(&th[i], NULL, mix_worker, &args[i]);
    }
    int committed = 0;
    for (int i = 0; i < MIX_WORKERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].committed + args[i].rolled, MIX_EACH);
        committed += args[i].committed;
    }
    /* exactly the committed rows, each once; none of a rolled-back member */
    assert_int_equal(count_rows(st, NULL, "SELECT COUNT(*) FROM tenants WHERE id LIKE 'm%'"),
                     committed);
    for (int i = 0; i < MIX_WORKERS; i++) {
        char sql[160];
        snprintf(sql, sizeof sql,
                 "SELECT COUNT(*) FROM tenants WHERE id IN ('m%d-0','m%d-3','m%d-6','m%d-9')", i, i,
                 i, i);
        assert_int_equal(count_rows(st, NULL, sql), 0); /* i % 3 == 0: rolled back */
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM tenants WHERE id IN ('m%d-1','m%d-2')", i,
                 i);
        assert_int_equal(count_rows(st, NULL, sql), 2);
    }
    /* after it all, a lone writer still commits at once, and a reader sees it */
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO tenants (id, name, created_at) VALUES ('z','z',0)", ""),
                     GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    assert_int_equal(count_rows(st, NULL, "SELECT COUNT(*) FROM tenants WHERE id = 'z'"), 1);
    store_close(st);
    tu_rmdir(dir);
}


/* Tenants red (t1) and blue (t2), a project (p1, p2) and an API key (k1, k2) each. */
static void seed_two_tenants(store_tx *tx) {
    gp_err err = GP_ERR_INIT;
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO tenants (id, name, created_at) VALUES"
                                " ('t1','red',0),('t2','blue',0)",
                                ""),
                     GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO projects (id, tenant_id, name, class, created_at)"
                                " VALUES ('p1','t1','a','research',0),('p2','t2','b','research',0)",
                                ""),
                     GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO api_keys (id, tenant_id, project_id, name, owner, hash,"
                                " prefix, created_at) VALUES ('k1','t1','p1','k','u','h1','sk',0),"
                                " ('k2','t2','p2','k','u','h2','sk',0)",
                                ""),
                     GP_OK);
}

/* Row-level security (PostgreSQL): a transaction tied to a tenant sees its rows only. */
static void tenant_fence(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = open_fresh(dir, url, sizeof url, 1);
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    seed_two_tenants(tx);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO models (id, tenant_id, name, visibility, created_by,"
                                " created_at) VALUES ('m1','t1','mine','private','u',0),"
                                " ('m2','t2','shared','public','u',0),"
                                " ('m3','t2','theirs','private','u',0)",
                                ""),
                     GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    const char *keys = "SELECT COUNT(*) FROM api_keys";
    const char *models = "SELECT COUNT(*) FROM models";
    /* not tied to a tenant (scheduler, platform views): everything */
    assert_int_equal(count_rows(st, NULL, keys), 2);
    assert_int_equal(count_rows(st, NULL, models), 3);
    if (!tu_pg()) { /* SQLite: no row-level security; the application's filters fence */
        assert_int_equal(count_rows(st, "t1", keys), 2);
        store_close(st);
        tu_rmdir(dir);
        return;
    }
    /* the tables fenced, each with FORCE (the owner too) */
    assert_int_equal(
        count_rows(st, NULL,
                   "SELECT COUNT(*) FROM pg_class WHERE relrowsecurity AND relforcerowsecurity"
                   " AND relname IN ('api_keys','usage_records','usage_hourly','kbs','kb_chunks',"
                   "'models','projects','quotas','token_holds','tenant_billing','quota_warnings')"),
        11);
    /* tied to red: red's key, red's model and the public one, whatever the SQL asks */
    assert_int_equal(count_rows(st, "t1", keys), 1);
    assert_int_equal(count_rows(st, "t1", "SELECT COUNT(*) FROM projects"), 1);
    assert_int_equal(count_rows(st, NULL, "SELECT COUNT(*) FROM projects"), 2);
    assert_int_equal(count_rows(st, "t1", "SELECT COUNT(*) FROM api_keys WHERE tenant_id = 't2'"),
                     0);
    assert_int_equal(count_rows(st, "t1", models), 2);
    assert_int_equal(count_rows(st, "t2", models), 2);
    /* writing another tenant's row is refused; so is changing one */
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_set_tenant(tx, "t1", &err), GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO api_keys (id, tenant_id, project_id, name, owner, hash,"
                                " prefix, created_at) VALUES ('k3','t2','p2','x','u','h3','sk',0)",
                                ""),
                     GP_EFORBIDDEN);
    store_rollback(tx);
    int changes = -1;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_set_tenant(tx, "t1", &err), GP_OK);
    assert_int_equal(store_exec(tx, &changes, &err, "DELETE FROM api_keys", ""), GP_OK);
    assert_int_equal(changes, 1); /* its own only */
    store_rollback(tx);
    /* the application's role cannot switch the fence off */
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_set_tenant(tx, "t1", &err), GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err, "SET LOCAL row_security = off", ""), GP_OK);
    store_stmt *s;
    assert_int_not_equal(store_query(tx, &s, &err, keys, ""), GP_OK);
    store_rollback(tx);
    /* the tie ends with its transaction */
    assert_int_equal(count_rows(st, NULL, keys), 2);
    store_close(st);
    tu_rmdir(dir);
}

/* Run `sql` on a connection of our own (the application's role): the first value. */
static char *side_sql(const char *url, const char *sql) {
    PGconn *c = PQconnectdb(url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *res = PQexec(c, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) fprintf(stderr, "%s", PQerrorMessage(c));
    assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
    char *v = strdup(PQntuples(res) ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    PQfinish(c);
    return v;
}

static char *backend_pid(store_t *st) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT pg_backend_pid()", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    char *pid = strdup(store_text(s, 0));
    store_done(s);
    store_rollback(tx);
    return pid;
}

/* PostgreSQL: a connection the server ends (restart, failover, a killed backend) is made
 * again at the next transaction, and the leader's lock is taken again on a new one. */
static void connection_made_again(void **state) {
    (void)state;
    if (!tu_pg()) skip();
    char *dir = tu_mkdtemp();
    char url[600], sql[200];
    gp_err err = GP_ERR_INIT;
    store_t *st = open_fresh(dir, url, sizeof url, 1);
    char *pid = backend_pid(st);
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%s)", pid);
    free(side_sql(url, sql));
    for (int i = 0; i < 50; i++) { /* termination is asynchronous */
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = %s", pid);
        char *n = side_sql(url, sql);
        int gone = !strcmp(n, "0");
        free(n);
        if (gone) break;
        usleep(20000);
    }
    char *pid2 = backend_pid(st); /* the same statement, prepared again on the new one */
    assert_string_not_equal(pid, pid2);
    free(pid);
    free(pid2);
    /* the leader's connection */
    assert_int_equal(store_lead(st, 0, &err), 1);
    snprintf(sql, sizeof sql,
             "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
             " AND objid = 7707003 AND granted AND database ="
             " (SELECT oid FROM pg_database WHERE datname = current_database())");
    free(side_sql(url, sql));
    int led = 0;
    for (int i = 0; i < 50 && !led; i++) {
        led = store_lead(st, 0, &err) == 1;
        if (!led) usleep(50000);
    }
    assert_true(led);
    char *holders = side_sql(url, "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'"
                                  " AND objid = 7707003 AND granted AND database ="
                                  " (SELECT oid FROM pg_database WHERE datname = current_database())");
    assert_string_equal(holders, "1");
    free(holders);
    store_close(st);
    tu_rmdir(dir);
}

/* Two stores on one database: one leads at a time; closing the leader hands over. */
static void one_leader(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *a = open_fresh(dir, url, sizeof url, 1);
    if (!tu_pg()) {
        assert_int_equal(store_lead(a, 0, &err), 1); /* SQLite: one server, always leads */
        store_close(a);
        tu_rmdir(dir);
        return;
    }
    store_t *b = NULL;
    assert_int_equal(store_open(url, 1, &b, &err), GP_OK);
    assert_int_equal(store_lead(a, 0, &err), 1);
    assert_int_equal(store_lead(b, 0, &err), 0);
    assert_int_equal(store_lead(a, 0, &err), 1); /* kept */
    assert_int_equal(store_lead(b, 0, &err), 0);
    store_close(a);
    int led = 0;
    for (int i = 0; i < 50 && !led; i++) {
        led = store_lead(b, 0, &err) == 1;
        if (!led) usleep(100000);
    }
    assert_true(led);
    store_close(b);
    tu_rmdir(dir);
}

/* How many gpupool-lead sessions the test's database has. */
static int lead_sessions(const char *url) {
    char *n = side_sql(url, "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name ="
                            " 'gpupool-lead' AND datname = current_database()");
    int out = atoi(n);
    free(n);
    return out;
}

/*
 * A leader that stops calling store_lead (a frozen process, a host cut off)
 * loses the lead once its timeout passes: the database ends its session.  On
 * its next call it learns that it stands by, without an error.  A write
 * transaction left idle is ended by the database too (the write lock).
 */
static void silent_leader(void **state) {
    (void)state;
    if (!tu_pg()) skip();
    char *dir = tu_mkdtemp();
    char url[600];
    gp_err err = GP_ERR_INIT;
    store_t *a = open_fresh(dir, url, sizeof url, 1), *b = NULL;
    assert_int_equal(store_open(url, 1, &b, &err), GP_OK);
    assert_int_equal(store_lead(a, 1, &err), 1);
    assert_int_equal(store_lead(b, 1, &err), 0);
    assert_int_equal(lead_sessions(url), 2);
    /* a falls silent; b keeps asking (and so keeps its own session) */
    int led = 0;
    for (int i = 0; i < 100 && !led; i++) {
        usleep(100000);
        led = store_lead(b, 1, &err) == 1;
    }
    assert_true(led);
    assert_int_equal(lead_sessions(url), 1); /* a's was ended */
    gp_err_clear(&err);
    assert_int_equal(store_lead(a, 1, &err), 0); /* a stands by, no error */
    assert_int_equal(err.code, GP_OK);
    assert_int_equal(store_lead(b, 1, &err), 1);
    assert_int_equal(lead_sessions(url), 2);
    /* no limit: a lead kept through silence */
    store_close(b);
    store_t *c = NULL;
    assert_int_equal(store_open(url, 1, &c, &err), GP_OK);
    led = 0;
    for (int i = 0; i < 50 && !led; i++) {
        led = store_lead(a, 0, &err) == 1;
        if (!led) usleep(100000);
    }
    assert_true(led);
    store_close(a); /* a's session had the limit of its making (1 s); c's has none */
    led = 0;
    for (int i = 0; i < 50 && !led; i++) {
        led = store_lead(c, 0, &err) == 1;
        if (!led) usleep(100000);
    }
    assert_true(led);
    usleep(1500000);
    assert_int_equal(lead_sessions(url), 1);
    assert_int_equal(store_lead(c, 0, &err), 1);
    /* the write transaction's idle limit */
    store_tx *tx = NULL;
    store_stmt *stmt = NULL;
    assert_int_equal(store_begin(c, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(
        store_query(tx, &stmt, &err, "SELECT current_setting('idle_in_transaction_session_timeout')",
                    ""),
        GP_OK);
    assert_int_equal(store_step(stmt, &err), 1);
    assert_string_equal(store_text(stmt, 0), "30s");
    store_done(stmt);
    store_rollback(tx);
    store_close(c);
    tu_rmdir(dir);
}

/* The URI of the same database for the role that owns nothing (scripts/pg-cluster.sh). */
static void app_url(const char *url, char *out, size_t n) {
    const char *at = strstr(url, "gpupool@");
    assert_non_null(at);
    snprintf(out, n, "%.*sgpupool_app@%s", (int)(at - url), url, at + strlen("gpupool@"));
}

/* Run `sql` on a connection of `url`'s role; its SQLSTATE, "" when it succeeded. */
static char *side_state(const char *url, const char *sql) {
    PGconn *c = PQconnectdb(url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PGresult *res = PQexec(c, sql);
    ExecStatusType t = PQresultStatus(res);
    const char *st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    char *v = strdup(t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK ? "" : st ? st : "?");
    PQclear(res);
    PQfinish(c);
    return v;
}

static void expect_state(const char *url, const char *sql, const char *want) {
    char *got = side_state(url, sql);
    if (strcmp(got, want)) fprintf(stderr, "%s: SQLSTATE '%s', wanted '%s'\n", sql, got, want);
    assert_string_equal(got, want);
    free(got);
}

/* The servers' own role (migrate --grant): it reads and writes rows, owns nothing, and
 * so cannot take row-level security off; only the owner changes the schema. */
static void servers_role_owns_nothing(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char url[600], app[700], empty[600], eapp[700];
    gp_err err = GP_ERR_INIT;
    store_t *own = open_fresh(dir, url, sizeof url, 1);
    if (!tu_pg()) { /* SQLite: no roles to grant, no fence to bypass */
        assert_int_equal(store_grant(own, "someone", &err), GP_EINVALID);
        assert_int_equal(store_can_bypass_fence(own, &err), 0);
        store_close(own);
        tu_rmdir(dir);
        return;
    }
    app_url(url, app, sizeof app);
    assert_int_equal(store_can_bypass_fence(own, &err), 1); /* it owns the tables */
    /* before the grant the role cannot even read the schema's version */
    store_t *st = NULL;
    assert_int_equal(store_open(app, 1, &st, &err), GP_ESCHEMA);
    assert_non_null(strstr(err.msg, "gpupool migrate"));
    /* nor make the schema in an empty database: that is the owner's */
    tu_pg_database(empty, sizeof empty);
    app_url(empty, eapp, sizeof eapp);
    assert_int_equal(store_open(eapp, 1, &st, &err), GP_ESCHEMA);
    char *none = side_sql(empty, "SELECT to_regclass('schema_migrations') IS NULL");
    assert_string_equal(none, "t"); /* nothing was made there */
    free(none);
    /* who may be granted */
    assert_int_equal(store_grant(own, "no_such_role", &err), GP_ENOTFOUND);
    assert_int_equal(store_grant(own, "gpupool", &err), GP_EINVALID);  /* itself */
    assert_int_equal(store_grant(own, "postgres", &err), GP_EINVALID); /* superuser */
    assert_int_equal(store_grant(own, "", &err), GP_EINVALID);
    assert_int_equal(store_grant(own, "gpupool_app", &err), GP_OK);
    assert_int_equal(store_grant(own, "gpupool_app", &err), GP_OK); /* again: no change */
    assert_int_equal(store_open(app, 2, &st, &err), GP_OK);
    assert_int_equal(store_can_bypass_fence(st, &err), 0);
    /* it works the store like a server */
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    seed_two_tenants(tx);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    assert_int_equal(count_rows(st, "t1", "SELECT COUNT(*) FROM api_keys"), 1);
    /* and cannot switch the fence off, drop it, or change the schema */
    expect_state(app, "ALTER TABLE api_keys DISABLE ROW LEVEL SECURITY", "42501");
    expect_state(app, "ALTER TABLE api_keys NO FORCE ROW LEVEL SECURITY", "42501");
    expect_state(app, "DROP POLICY tenant_fence ON api_keys", "42501");
    expect_state(app, "CREATE TABLE mine (a int)", "42501");
    expect_state(app, "SET row_security = off; SELECT COUNT(*) FROM api_keys", "42501");
    /* a table a later migration makes (by the owner) is the role's to use too */
    expect_state(url, "CREATE TABLE later (a int)", "");
    expect_state(app, "INSERT INTO later VALUES (1)", "");
    store_close(st);
    store_close(own);
    tu_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(migrations_apply_once),
        cmocka_unit_test(migrations_stop_at_a_version),
        cmocka_unit_test(servers_role_owns_nothing),
        cmocka_unit_test(newer_schema_is_refused),
        cmocka_unit_test(bad_locations),
        cmocka_unit_test(errors_and_transactions),
        cmocka_unit_test(statements_used_again),
        cmocka_unit_test(concurrent_writers_serialise),
        cmocka_unit_test(rows_mode_exact),
        cmocka_unit_test(rows_mode_waits_for_rows_only),
        cmocka_unit_test(group_commit_members_apart),
        cmocka_unit_test(one_leader),
        cmocka_unit_test(silent_leader),
        cmocka_unit_test(tenant_fence),
        cmocka_unit_test(connection_made_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
