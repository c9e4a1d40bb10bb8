/*
 * testutil.h - small helpers shared by the cmocka unit tests: temporary
 * folders and a fresh SQLite store in one.
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

/* Open a store at DIR/gpupool.db. */
static inline store_t *tu_store(const char *dir, int pool) {
    char path[600];
    gp_err err = GP_ERR_INIT;
    store_t *st = NULL;
    snprintf(path, sizeof path, "%s/gpupool.db", dir);
    int rc = store_open(path, pool, &st, &err);
    if (rc) fprintf(stderr, "store_open: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    return st;
}

#endif
