/*
 * test_store.c - the SQLite store: migrations, refusal of newer schemas,
 * error mapping, transactions, and concurrent writers through the pool.
 */
#include "testutil.h"

#include <pthread.h>
#include <sqlite3.h>

static void migrations_apply_once(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 2);
    int v = -1;
    assert_int_equal(store_schema_version(st, &v, &err), GP_OK);
    assert_int_equal(v, store_schema_latest(st));
    assert_true(v >= 1);
    assert_string_equal(store_backend(st), "sqlite");
    assert_int_equal(store_ping(st, &err), GP_OK);
    store_close(st);
    /* reopening applies nothing twice */
    st = tu_store(dir, 1);
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

static void newer_schema_is_refused(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    char path[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 1);
    store_close(st);
    snprintf(path, sizeof path, "%s/gpupool.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (999, 0)", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    sqlite3_close(db);
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
    assert_int_equal(store_open("postgres://localhost/x", 1, &st, &err), GP_EUNSUPPORTED);
}

static void errors_and_transactions(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    gp_err err = GP_ERR_INIT;
    store_t *st = tu_store(dir, 2);
    store_tx *tx;
    int changes = -1;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_exec(tx, &changes, &err,
                                "INSERT INTO tenants (id, name, created_at) VALUES (?,?,?)", "ssi",
                                "t1", "research", (int64_t)1),
                     GP_OK);
    assert_int_equal(changes, 1);
    /* unique violation -> conflict */
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO tenants (id, name, created_at) VALUES (?,?,?)", "ssi",
                                "t2", "research", (int64_t)1),
                     GP_ECONFLICT);
    /* foreign key violation -> invalid */
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO projects (id, tenant_id, name, class, created_at)"
                                " VALUES (?,?,?,?,?)",
                                "ssssi", "p1", "no-such-tenant", "p", "research", (int64_t)1),
                     GP_EINVALID);
    /* check constraint -> invalid */
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO projects (id, tenant_id, name, class, created_at)"
                                " VALUES (?,?,?,?,?)",
                                "ssssi", "p1", "t1", "p", "bogus", (int64_t)1),
                     GP_EINVALID);
    /* SQL syntax error -> store error */
    assert_int_equal(store_exec(tx, NULL, &err, "SELEC 1", ""), GP_ESTORE);
    /* NULL text binds SQL NULL */
    store_stmt *s;
    assert_int_equal(store_query(tx, &s, &err, "SELECT ? IS NULL, ?", "sn", (const char *)NULL),
                     GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), 1);
    assert_true(store_isnull(s, 1));
    assert_null(store_text(s, 1));
    store_done(s);
    store_rollback(tx);
    /* rolled back: nothing stayed */
    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, "SELECT COUNT(*) FROM tenants", ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    assert_int_equal(store_int(s, 0), 0);
    store_done(s);
    store_rollback(tx);
    store_rollback(NULL);
    store_done(NULL);
    store_close(st);
    store_close(NULL);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(migrations_apply_once),
        cmocka_unit_test(newer_schema_is_refused),
        cmocka_unit_test(bad_locations),
        cmocka_unit_test(errors_and_transactions),
        cmocka_unit_test(concurrent_writers_serialise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
