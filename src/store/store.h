/*
 * store.h - the one storage interface every gpupool module uses.
 *
 * A store_t is a pool of connections to one database: an SQLite file, or a
 * PostgreSQL database that several servers may share.  Work happens inside a
 * transaction, store_tx, obtained with store_begin() and ended with exactly
 * one store_commit() or store_rollback(), which return its connection to the
 * pool.  SQL is written once with `?` placeholders; values are always bound,
 * never pasted into SQL text, so no user string ever becomes SQL.
 *
 * Binding: the `types` string of store_query()/store_exec() gives one letter
 * per following argument:
 *   's'  const char *   (NULL binds SQL NULL)
 *   'i'  int64_t
 *   'n'  (no argument)  SQL NULL
 *
 * Write transactions (STORE_WRITE, STORE_WRITE_ALONE) are serialised
 * (SQLite: BEGIN IMMEDIATE; PostgreSQL: one advisory lock shared by every
 * server on the database), so code that reads-then-writes inside one (the
 * audit chain head) sees no interleaving.  STORE_WRITE_ROWS transactions are
 * not, on PostgreSQL: see the modes below.
 *
 * Ownership: store_open() returns a store the caller frees with
 * store_close(); a statement from store_query() is freed with store_done();
 * text from store_text() is owned by the statement and valid until the next
 * store_step() or store_done().
 *
 * Lock order: pool mutex only; never held while running SQL.
 */
#ifndef GP_STORE_H
#define GP_STORE_H

#include "../core/err.h"

#include <stdint.h>

typedef struct store store_t;
typedef struct store_tx store_tx;
typedef struct store_stmt store_stmt;

/*
 * Transaction modes.  STORE_WRITE transactions of one process may share a
 * commit (SQLite: group commit, store_sqlite.c): each runs alone, in turn,
 * inside one outer transaction, its own changes under a savepoint (its
 * rollback undoes only them); store_commit() returns once the commit that
 * holds them is durable, so what a caller acknowledges is never lost.  A
 * transaction that knows it holds the writer long (a scheduling round) begins
 * STORE_WRITE_ALONE: it never waits behind, nor makes others wait for, a
 * shared commit.  On PostgreSQL both are plain write transactions.
 */
enum { STORE_READ = 0, STORE_WRITE = 1, STORE_WRITE_ALONE = 2, STORE_WRITE_ROWS = 3 };

/*
 * STORE_WRITE_ROWS: a write transaction that locks only the rows it touches
 * (issue 39 item 4: the gateway's leases, usage batches and rate rows, so
 * that the servers sharing a PostgreSQL store write them side by side).
 *  - PostgreSQL: READ COMMITTED without the advisory lock of the other write
 *    modes; it waits only for transactions holding a row it writes or locks.
 *    Its code must therefore never read a value and write from it (a
 *    check-then-grant, a balance) unless the read locked the row first
 *    (STORE_FOR_UPDATE, or an INSERT … ON CONFLICT DO UPDATE … RETURNING):
 *    a plain read sees the last commit, which another server may be about to
 *    change.  Single-statement changes (UPDATE … SET x = x + ?, INSERT … ON
 *    CONFLICT DO UPDATE) are safe as they are.  Row locks are taken in one
 *    order by every such transaction (the order is its module's to state;
 *    gateway.h for the gateway's), so they never deadlock among themselves;
 *    should the database still end one (deadlock 40P01, serialization
 *    40001, lock not available 55P03) the statement or commit fails with
 *    GP_EBUSY and nothing of the transaction is kept: the caller retries or
 *    reports it, never acknowledging what was not committed.
 *    Nothing that needs the serialised order may run in one: the audit chain
 *    (audit_append) stays in STORE_WRITE.
 *  - SQLite: exactly STORE_WRITE (one writer; group commit).
 */
/* A SELECT (a string literal) that locks the rows it reads until the transaction ends:
 * PostgreSQL adds FOR UPDATE; on SQLite the write transaction already excludes every
 * other writer. */
#define STORE_FOR_UPDATE(tx, select_sql) store_sql((tx), select_sql, select_sql " FOR UPDATE")

/*
 * Open the store at `url`: "postgres://…" or "postgresql://…" (a libpq URI),
 * "sqlite:PATH", or a plain file path (SQLite).
 * Applies pending schema migrations; refuses (GP_ESCHEMA) a database whose
 * schema is newer than this binary knows.  `pool_size` connections (>= 1).
 * OUT: *out, freed with store_close().
 */
int store_open(const char *url, int pool_size, store_t **out, gp_err *err);

/*
 * store_open, but apply migrations only up to schema version `target`
 * (1..store_schema_known(); 0 = all, as store_open).  For `gpupool migrate
 * --to N` (staged upgrades, and tests that need a store of an earlier
 * release): a store opened short of the latest version is good for
 * store_schema_version(), store_grant() and store_close() only.  Migrations
 * are never undone: a store already past `target` is refused (GP_ESCHEMA);
 * a `target` out of range is GP_EINVALID.  OUT: *out, freed with store_close().
 */
int store_open_to(const char *url, int pool_size, int target, store_t **out, gp_err *err);

/* Highest schema version this binary knows (the same for both backends). */
int store_schema_known(void);

/*
 * Open an existing store read-only, for inspection (`gpupool check`): no
 * migrations run and write transactions fail.  GP_ENOTFOUND when there is
 * no database there; GP_ESCHEMA when its schema is newer than this binary
 * knows, or older (the server migrates it on its next start).  One
 * connection.  OUT: *out, freed with store_close().
 */
int store_open_readonly(const char *url, store_t **out, gp_err *err);

/* 1 when `url` names a PostgreSQL store (postgres:// or postgresql://), else 0. */
int store_url_is_pg(const char *url);

/*
 * Copy the SQLite store at `url` (a path or "sqlite:PATH") into a new
 * database file `dest_path`, online: SQLite's backup API copies one
 * consistent snapshot in a single step (a read transaction; in WAL mode the
 * server's writers go on meanwhile), then the copy is checked with
 * PRAGMA quick_check.  The copy is a complete, self-contained database (no
 * -wal file needed).  `dest_path` must not exist (GP_ECONFLICT); it is
 * created mode 0600 and removed again on failure.  GP_ENOTFOUND when there is
 * no database at `url`; GP_EINVALID for a PostgreSQL URL (use pg_dump:
 * docs/operations.md).  OUT (optional): *schema_version of the copy.
 */
int store_backup(const char *url, const char *dest_path, int *schema_version, gp_err *err);

/* Close every connection and free the store. NULL is a no-op. All tx must be ended. */
void store_close(store_t *st);

/*
 * The one object a module above the store keeps with an open store for as
 * long as it is open: the scheduler's cluster in memory (src/sched/round_mem.c).
 * `p` is NULL until its owner sets it; store_close() calls free_fn(p) first.
 * The owner locks (the store never reads p).
 */
typedef struct store_slot {
    void *p;
    void (*free_fn)(void *p);
} store_slot;
store_slot *store_sched_slot(store_t *st);

/*
 * Notifications from the store to every process on it (PostgreSQL's LISTEN/NOTIFY; each
 * on its own connection): a listener on `channel` ([a-z_], at most 63 bytes) wakes when a
 * transaction that notified it commits.  GP_EUNSUPPORTED (*out NULL) on a store without
 * them (SQLite: one process, which knows its own changes); the caller polls instead.
 * store_listen_wait waits up to timeout_ms and sets *got to how many notifications came
 * (0: none in time); GP_EIO when the connection broke (close it and listen again).  One
 * thread at a time per listener.
 */
typedef struct store_listener store_listener;
int store_listen(store_t *st, const char *channel, store_listener **out, gp_err *err);
int store_listen_wait(store_listener *l, int timeout_ms, int *got, gp_err *err);
void store_listen_close(store_listener *l);

/* Backend name, "sqlite" or "postgres". */
const char *store_backend(const store_t *st);

/* Backend of the store a transaction belongs to, "sqlite" or "postgres": for the
 * few statements whose SQL differs (store_sql picks between two texts). */
const char *store_tx_backend(const store_tx *tx);

/* `pg` when `tx` is on PostgreSQL, else `sqlite`: one statement, two dialects. */
const char *store_sql(const store_tx *tx, const char *sqlite, const char *pg);

/*
 * Tie the transaction to one tenant (its id) until it ends, for row-level
 * security: on PostgreSQL the tenants' own tables (keys, usage, models,
 * knowledge bases; schema_pg.c migration 11) then show and accept only that
 * tenant's rows (public models too), whatever the SQL asks.  Call it once
 * the caller is authorised in that tenant.  SQLite: nothing (the
 * application's own filters are the only fence there).
 */
int store_set_tenant(store_tx *tx, const char *tenant_id, gp_err *err);

/*
 * PostgreSQL: let database role `role` use the store the way a server does
 * (read and write rows of every table, now and after later migrations) and
 * nothing more.  The role that owns the tables runs migrations (`gpupool
 * migrate`) and calls this; servers then connect as `role`, which owns no
 * table and so cannot ALTER row-level security off.  GP_ENOTFOUND when no
 * such role exists; GP_EINVALID for the connected role itself, a role that
 * bypasses row-level security (superuser, BYPASSRLS), or an SQLite store.
 */
int store_grant(store_t *st, const char *role, gp_err *err);

/*
 * 1 when the connected role could get past row-level security (a
 * superuser, BYPASSRLS, or owner of the fenced tables), 0 when it cannot
 * or the store has no such fence (SQLite), negative on error (err).
 */
int store_can_bypass_fence(store_t *st, gp_err *err);

/* Check the database answers a trivial query (for /readyz). */
int store_ping(store_t *st, gp_err *err);

/* Schema version recorded in the database. */
int store_schema_version(store_t *st, int *out, gp_err *err);

/* Highest schema version this binary knows for the backend of `st`. */
int store_schema_latest(const store_t *st);

/* Begin a transaction of one of the modes above. OUT: *out, ended by commit or rollback. */
int store_begin(store_t *st, int mode, store_tx **out, gp_err *err);

/*
 * WRITE transactions begun by this process so far, on every store it opened
 * (/metrics: gpupool_store_write_tx_total; the gateway's "write transactions
 * per request" figure).  Thread-safe.
 */
unsigned long long store_write_tx_total(void);
/*
 * Transactions this process committed so far (counted once each commit has
 * succeeded): a cache of store data knows a change of its own may have
 * landed when this moved.  Thread-safe.
 */
unsigned long long store_commit_total(void);

/* Commit and release; on failure the transaction is rolled back and released. */
int store_commit(store_tx *tx, gp_err *err);

/* Roll back and release. NULL is a no-op. */
void store_rollback(store_tx *tx);

/* Prepare `sql` and bind arguments per `types`. OUT: *out, freed with store_done(). */
int store_query(store_tx *tx, store_stmt **out, gp_err *err, const char *sql, const char *types,
                ...);

/* Advance: 1 = a row is available, 0 = done, < 0 = error (err filled). */
int store_step(store_stmt *stmt, gp_err *err);

/* Column access on the current row (0-based). Text is NULL for SQL NULL. */
const char *store_text(store_stmt *stmt, int col);
int64_t store_int(store_stmt *stmt, int col);
int store_isnull(store_stmt *stmt, int col);

/* Finalize a statement. NULL is a no-op. */
void store_done(store_stmt *stmt);

/*
 * A SELECT list declared once (issue 40): an X-macro names each column and its SQL, and
 * generates both the list's text and an enum of the columns' numbers, so a read names its
 * column (store_text(s, JC_STATE)) and a column added anywhere moves every number with it.
 *
 *   #define JOB_COLUMNS(X) X(JC_ID, "j.id") X(JC_STATE, "j.state")
 *   enum { JOB_COLUMNS(STORE_COL_ENUM) JC__N };
 *   "SELECT " STORE_COLS(JOB_COLUMNS) " FROM jobs j ..."
 *
 * The text ends with a constant NULL column (number JC__N), so the list needs no last-comma
 * rule; nothing reads it.
 */
#define STORE_COL_ENUM(name, sql) name,
#define STORE_COL_SQL_(name, sql) sql ", "
#define STORE_COLS(LIST) LIST(STORE_COL_SQL_) "NULL"

/*
 * Run a statement to completion (no rows expected).  Unique-constraint
 * violations come back as GP_ECONFLICT, foreign-key ones as GP_EINVALID.
 * OUT (optional): *changes, rows changed.
 */
int store_exec(store_tx *tx, int *changes, gp_err *err, const char *sql, const char *types, ...);

/*
 * Leadership among the servers sharing this store, for the work exactly one
 * of them must do (scheduler, node sweep, metering enforcement).  Returns 1
 * while this process leads, 0 while another does, < 0 on error (err
 * filled; not leading).  Call it before each round: the first caller takes
 * the lead when none holds it, and keeps it until its process or its
 * connection ends (PostgreSQL: a session advisory lock on a connection of
 * its own, named gpupool-lead), or until it has not called for TIMEOUT_S
 * seconds (> 0; the database ends the session: a frozen or cut-off leader
 * gives way; 0: no limit).  TIMEOUT_S is taken when the connection is made.
 * SQLite stores have one server: always 1.
 */
int store_lead(store_t *st, int timeout_s, gp_err *err);

#endif
