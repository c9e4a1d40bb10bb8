/*
 * schema_sqlite.c - the SQLite schema, as an ordered list of migrations.
 *
 * Invariant: migrations are append-only.  Never edit one that has shipped;
 * add the next version instead.  Version N is migrations[N-1].  The
 * PostgreSQL schema (when added) keeps the same version numbers side by side.
 */
#include "schema_int.h"

#include <stddef.h>

static const char *const migrations[] = {
    /* 1: identities, tenancy, audit chain */
    "CREATE TABLE users ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  kind TEXT NOT NULL DEFAULT 'user' CHECK (kind IN ('user','service')),"
    "  password_hash TEXT,"
    "  disabled INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE tokens ("
    "  id TEXT PRIMARY KEY,"
    "  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  hash TEXT NOT NULL UNIQUE,"
    "  label TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER,"
    "  revoked_at INTEGER);"
    "CREATE INDEX tokens_user ON tokens(user_id);"
    "CREATE TABLE tenants ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  display_name TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE projects ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  name TEXT NOT NULL,"
    "  class TEXT NOT NULL CHECK (class IN ('production','development','research')),"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE TABLE role_bindings ("
    "  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  role TEXT NOT NULL,"
    "  scope TEXT NOT NULL CHECK (scope IN ('global','tenant','project','vendor')),"
    "  tenant_id TEXT REFERENCES tenants(id),"
    "  project_id TEXT REFERENCES projects(id),"
    "  expires_at INTEGER,"
    "  created_at INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX role_bindings_one ON role_bindings"
    "  (user_id, role, scope, COALESCE(tenant_id,''), COALESCE(project_id,''));"
    "CREATE TABLE audit ("
    "  seq INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE,"
    "  ts_us INTEGER NOT NULL,"
    "  request_id TEXT NOT NULL DEFAULT '',"
    "  actor TEXT NOT NULL,"
    "  on_behalf TEXT NOT NULL DEFAULT '',"
    "  source TEXT NOT NULL DEFAULT '',"
    "  action TEXT NOT NULL,"
    "  target_type TEXT NOT NULL DEFAULT '',"
    "  target_id TEXT NOT NULL DEFAULT '',"
    "  tenant TEXT NOT NULL DEFAULT '',"
    "  project TEXT NOT NULL DEFAULT '',"
    "  result TEXT NOT NULL CHECK (result IN ('ok','denied','error')),"
    "  status INTEGER NOT NULL DEFAULT 0,"
    "  summary TEXT NOT NULL DEFAULT '',"
    "  prev_hash TEXT NOT NULL,"
    "  hash TEXT NOT NULL);"
    "CREATE INDEX audit_tenant ON audit(tenant, seq);"
    "CREATE TABLE audit_head ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  seq INTEGER NOT NULL,"
    "  hash TEXT NOT NULL);"
    "INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');",
};

int schema__sqlite_count(void) { return (int)(sizeof migrations / sizeof migrations[0]); }

const char *schema__sqlite_sql(int version) {
    if (version < 1 || version > schema__sqlite_count()) return NULL;
    return migrations[version - 1];
}
