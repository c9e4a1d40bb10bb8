/*
 * testutil.h - small helpers shared by the cmocka unit tests: temporary
 * folders and a fresh store in one.
 *
 * With GP_TEST_PG set (a libpq URI of a cluster without a database name,
 * e.g. postgresql://gpupool@127.0.0.1:5432, made by scripts/pg-cluster.sh),
 * tu_store() opens a new, empty PostgreSQL database instead of an SQLite
 * file, so the same tests exercise both backends.
 */
#ifndef GP_TESTUTIL_H
#define GP_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "../../src/core/rand.h"
#include "../../src/store/store.h"

/* Create a fresh temporary folder; returns a heap path (free with tu_rmdir). */
static inline char *tu_mkdtemp(void) {
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/gpupool-unit-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

/* Remove a temporary folder and everything in it, then free the path. */
static inline void tu_rmdir(char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* The PostgreSQL cluster the tests run against, or NULL for SQLite. */
static inline const char *tu_pg(void) {
    const char *pg = getenv("GP_TEST_PG");
    return pg && *pg ? pg : NULL;
}

/* Make a new, empty database on the GP_TEST_PG cluster; writes its URI to `uri`. */
static inline void tu_pg_database(char *uri, size_t n) {
    char conn[600], name[64], id[RND_ID_LEN];
    rnd_id(id);
    snprintf(name, sizeof name, "unit_%s", id);
    for (char *c = name; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    snprintf(conn, sizeof conn, "%s/postgres", tu_pg());
    PGconn *c = PQconnectdb(conn);
    if (PQstatus(c) != CONNECTION_OK) fprintf(stderr, "tu_pg_database: %s", PQerrorMessage(c));
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\"", name);
    PGresult *res = PQexec(c, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        fprintf(stderr, "tu_pg_database: %s", PQerrorMessage(c));
    assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    PQfinish(c);
    snprintf(uri, n, "%s/%s", tu_pg(), name);
}

/* Open a fresh store: DIR/gpupool.db, or a new PostgreSQL database (GP_TEST_PG). */
static inline store_t *tu_store(const char *dir, int pool) {
    char path[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    if (tu_pg()) tu_pg_database(path, sizeof path);
    else snprintf(path, sizeof path, "%s/gpupool.db", dir);
    int rc = store_open(path, pool, &st, &err);
    if (rc) fprintf(stderr, "store_open: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    return st;
}

/* A seeded generator (xorshift64*) for property tests: the same workloads every run.
 * *state must start non-zero.  Returns 0 .. n-1 (0 when n is 0). */
static inline uint32_t tu_below(uint64_t *state, uint32_t n) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return n ? (uint32_t)((x * 2685821657736338717ULL) >> 33) % n : 0;
}

#endif
