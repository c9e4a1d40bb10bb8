/*
 * store_int.h - internal contract between store.c and its backends.
 *
 * A backend fills a store_ops table; store.c owns argument checking, the
 * public prefix and nothing else.  Not part of the public API: include
 * only from src/store/.
 */
#ifndef GP_STORE_INT_H
#define GP_STORE_INT_H

#include "store.h"

#include <pthread.h>
#include <stdarg.h>

typedef struct store_ops {
    const char *name;
    void (*close)(store_t *st);
    int (*schema_version)(store_t *st, int *out, gp_err *err);
    int (*schema_latest)(void);
    int (*begin)(store_t *st, int mode, store_tx **out, gp_err *err);
    int (*commit)(store_tx *tx, gp_err *err);
    void (*rollback)(store_tx *tx);
    int (*query)(store_tx *tx, store_stmt **out, gp_err *err, const char *sql, const char *types,
                 va_list ap);
    int (*step)(store_stmt *stmt, gp_err *err);
    const char *(*text)(store_stmt *stmt, int col);
    int64_t (*int64)(store_stmt *stmt, int col);
    int (*isnull)(store_stmt *stmt, int col);
    void (*done)(store_stmt *stmt);
    int (*changes)(store_tx *tx);
    int (*lead)(store_t *st, int timeout_s, gp_err *err);
    int (*grant)(store_t *st, const char *role, gp_err *err);  /* NULL: not supported */
    int (*can_bypass)(store_t *st, gp_err *err);                /* NULL: no fence to bypass */
    /* store_listen: NULL where the store has no notifications (SQLite: one process) */
    int (*listen)(store_t *st, const char *channel, store_listener **out, gp_err *err);
} store_ops;

/* A backend's listener begins with this header (store_listen_wait, store_listen_close). */
struct store_listener {
    int (*wait)(store_listener *l, int timeout_ms, int *got, gp_err *err);
    void (*close)(store_listener *l);
};

/* Every backend's store_t, store_tx and store_stmt begin with these headers. */
struct store {
    const store_ops *ops;
    store_slot sched; /* store_sched_slot(): the scheduler's, freed by store_close */
};
struct store_tx {
    const store_ops *ops;
};
struct store_stmt {
    const store_ops *ops;
};

/*
 * The connection slots of a backend (pool.c): which of its n connections
 * are idle.  Lock: `mu` only, never held while SQL runs.
 */
typedef struct store_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;     /* slots */
    int *idle; /* stack of idle slots */
    int nidle;
} store_pool;

/* Make a pool of n (>= 1) slots, none idle yet.  GP_OK or GP_ENOMEM. */
int store__pool_init(store_pool *p, int n);
/* Make `slot` idle: a new connection, or one a transaction gives back. */
void store__pool_put(store_pool *p, int slot);
/* Take an idle slot, waiting until there is one. */
int store__pool_take(store_pool *p);
/* How many slots are idle now. */
int store__pool_idle(store_pool *p);
/* Free the pool (not the connections).  A pool never initialised is a no-op. */
void store__pool_free(store_pool *p);

/*
 * For a read-only open: GP_OK when `have` == `latest`, else GP_ESCHEMA with
 * the message saying which binary (newer) or step (a server start) fixes it.
 */
int store__schema_exact(int have, int latest, gp_err *err);

/* SQLite backend: open `path` (pool of `pool_size`), migrated to `target` (0: latest). */
int store__sqlite_open(const char *path, int pool_size, int target, store_t **out, gp_err *err);
/* SQLite backend, read-only, one connection, no migrations (store_open_readonly). */
int store__sqlite_open_ro(const char *path, store_t **out, gp_err *err);
/* SQLite backend: store_backup() of the database at `path`. */
int store__sqlite_backup(const char *path, const char *dest_path, int *schema_version,
                         gp_err *err);

/* PostgreSQL backend: `conninfo` is a libpq URI or key=value string; `target` as SQLite's. */
int store__pg_open(const char *conninfo, int pool_size, int target, store_t **out, gp_err *err);
/* PostgreSQL backend, read-only (store_open_readonly). */
int store__pg_open_ro(const char *conninfo, store_t **out, gp_err *err);

#endif
