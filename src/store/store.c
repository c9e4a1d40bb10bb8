/*
 * store.c - backend selection and dispatch for the store interface (store.h).
 */
#include "store_int.h"

#include "schema_int.h"

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

int store_url_is_pg(const char *url) {
    return strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0;
}

int store_open(const char *url, int pool_size, store_t **out, gp_err *err) {
    return store_open_to(url, pool_size, 0, out, err);
}

int store_schema_known(void) { return schema__sqlite_count(); }

int store_open_to(const char *url, int pool_size, int target, store_t **out, gp_err *err) {
    *out = NULL;
    if (pool_size < 1) pool_size = 1;
    if (target < 0 || target > store_schema_known())
        return gp_err_set(err, GP_EINVALID, "schema version %d is not one this gpupool knows (1-%d)",
                          target, store_schema_known());
    if (store_url_is_pg(url)) return store__pg_open(url, pool_size, target, out, err);
    if (strncmp(url, "sqlite:", 7) == 0) url += 7;
    if (!*url) return gp_err_set(err, GP_EINVALID, "empty store path");
    return store__sqlite_open(url, pool_size, target, out, err);
}

int store_open_readonly(const char *url, store_t **out, gp_err *err) {
    *out = NULL;
    if (store_url_is_pg(url)) return store__pg_open_ro(url, out, err);
    if (strncmp(url, "sqlite:", 7) == 0) url += 7;
    if (!*url) return gp_err_set(err, GP_EINVALID, "empty store path");
    return store__sqlite_open_ro(url, out, err);
}

int store_backup(const char *url, const char *dest_path, int *schema_version, gp_err *err) {
    if (store_url_is_pg(url))
        return gp_err_set(err, GP_EINVALID, "a PostgreSQL store is backed up with pg_dump "
                                            "(docs/operations.md)");
    if (strncmp(url, "sqlite:", 7) == 0) url += 7;
    if (!*url) return gp_err_set(err, GP_EINVALID, "empty store path");
    return store__sqlite_backup(url, dest_path, schema_version, err);
}

int store__schema_exact(int have, int latest, gp_err *err) {
    if (have == latest) return GP_OK;
    return gp_err_set(err, GP_ESCHEMA,
                      have > latest ? "database schema version %d is newer than this gpupool "
                                      "knows (%d); run a newer gpupool binary"
                                    : "database schema version %d is older than this gpupool "
                                      "(%d); start the server once to migrate it",
                      have, latest);
}

void store_close(store_t *st) {
    if (!st) return;
    if (st->sched.p && st->sched.free_fn) st->sched.free_fn(st->sched.p);
    st->sched.p = NULL;
    st->ops->close(st);
}

store_slot *store_sched_slot(store_t *st) { return &st->sched; }

const char *store_backend(const store_t *st) { return st->ops->name; }

int store_schema_version(store_t *st, int *out, gp_err *err) {
    return st->ops->schema_version(st, out, err);
}

int store_set_tenant(store_tx *tx, const char *tenant_id, gp_err *err) {
    if (strcmp(tx->ops->name, "postgres") != 0) return GP_OK;
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT set_config('gpupool.tenant', ?, true)", "s",
                         tenant_id ? tenant_id : "");
    if (rc) return rc;
    store_done(s);
    return GP_OK;
}

const char *store_tx_backend(const store_tx *tx) { return tx->ops->name; }

const char *store_sql(const store_tx *tx, const char *sqlite, const char *pg) {
    return strcmp(tx->ops->name, "postgres") == 0 ? pg : sqlite;
}

int store_schema_latest(const store_t *st) { return st->ops->schema_latest(); }

int store_ping(store_t *st, gp_err *err) {
    int v;
    return store_schema_version(st, &v, err);
}

/* write transactions begun in this process (store_write_tx_total) */
static _Atomic unsigned long long write_tx_total;

int store_begin(store_t *st, int mode, store_tx **out, gp_err *err) {
    assert(mode == STORE_READ || mode == STORE_WRITE || mode == STORE_WRITE_ALONE ||
           mode == STORE_WRITE_ROWS);
    int rc = st->ops->begin(st, mode, out, err);
    if (!rc && mode != STORE_READ) atomic_fetch_add_explicit(&write_tx_total, 1, memory_order_relaxed);
    return rc;
}

unsigned long long store_write_tx_total(void) {
    return atomic_load_explicit(&write_tx_total, memory_order_relaxed);
}

/* transactions committed in this process (store_commit_total) */
static _Atomic unsigned long long commit_total;

int store_commit(store_tx *tx, gp_err *err) {
    int rc = tx->ops->commit(tx, err);
    if (!rc) atomic_fetch_add_explicit(&commit_total, 1, memory_order_release);
    return rc;
}

unsigned long long store_commit_total(void) {
    return atomic_load_explicit(&commit_total, memory_order_acquire);
}

void store_rollback(store_tx *tx) {
    if (tx) tx->ops->rollback(tx);
}

int store_query(store_tx *tx, store_stmt **out, gp_err *err, const char *sql, const char *types,
                ...) {
    va_list ap;
    va_start(ap, types);
    int rc = tx->ops->query(tx, out, err, sql, types, ap);
    va_end(ap);
    return rc;
}

int store_step(store_stmt *stmt, gp_err *err) { return stmt->ops->step(stmt, err); }
const char *store_text(store_stmt *stmt, int col) { return stmt->ops->text(stmt, col); }
int64_t store_int(store_stmt *stmt, int col) { return stmt->ops->int64(stmt, col); }
int store_isnull(store_stmt *stmt, int col) { return stmt->ops->isnull(stmt, col); }

void store_done(store_stmt *stmt) {
    if (stmt) stmt->ops->done(stmt);
}

int store_exec(store_tx *tx, int *changes, gp_err *err, const char *sql, const char *types, ...) {
    store_stmt *stmt;
    va_list ap;
    va_start(ap, types);
    int rc = tx->ops->query(tx, &stmt, err, sql, types, ap);
    va_end(ap);
    if (rc) return rc;
    while ((rc = store_step(stmt, err)) > 0) {
    }
    store_done(stmt);
    if (rc < 0) return rc;
    if (changes) *changes = tx->ops->changes(tx);
    return GP_OK;
}

int store_grant(store_t *st, const char *role, gp_err *err) {
    if (!role || !*role) return gp_err_set(err, GP_EINVALID, "a database role is required");
    if (!st->ops->grant)
        return gp_err_set(err, GP_EINVALID,
                          "database roles are PostgreSQL's; the %s store has none to grant",
                          st->ops->name);
    return st->ops->grant(st, role, err);
}

int store_can_bypass_fence(store_t *st, gp_err *err) {
    return st->ops->can_bypass ? st->ops->can_bypass(st, err) : 0;
}

int store_listen(store_t *st, const char *channel, store_listener **out, gp_err *err) {
    *out = NULL;
    size_t n = channel ? strlen(channel) : 0;
    if (n == 0 || n > 63 || strspn(channel, "abcdefghijklmnopqrstuvwxyz_") != n)
        return gp_err_set(err, GP_EINVALID, "a notification channel is [a-z_], 1-63 bytes");
    if (!st->ops->listen)
        return gp_err_set(err, GP_EUNSUPPORTED, "the %s store has no notifications",
                          st->ops->name);
    return st->ops->listen(st, channel, out, err);
}

int store_listen_wait(store_listener *l, int timeout_ms, int *got, gp_err *err) {
    *got = 0;
    return l->wait(l, timeout_ms < 0 ? 0 : timeout_ms, got, err);
}

void store_listen_close(store_listener *l) {
    if (l) l->close(l);
}

int store_lead(store_t *st, int timeout_s, gp_err *err) {
    return st->ops->lead ? st->ops->lead(st, timeout_s, err) : 1;
}
