/*
 * schema_int.h - migration lists of each backend (internal to src/store/).
 */
#ifndef GP_SCHEMA_INT_H
#define GP_SCHEMA_INT_H

/* Number of SQLite migrations, i.e. the latest schema version. */
int schema__sqlite_count(void);

/* SQL of SQLite migration `version` (1-based), or NULL when out of range. */
const char *schema__sqlite_sql(int version);

/* Number of PostgreSQL migrations; the same version numbers as SQLite's. */
int schema__pg_count(void);

/* SQL of PostgreSQL migration `version` (1-based), or NULL when out of range. */
const char *schema__pg_sql(int version);

#endif
