/*
 * bench_util.c - the helpers the bench programs share (bench_util.h).
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

long bench_peak_rss_mib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb / 1024;
}

int bench_sql(store_t *st, const char *who, const char *sql, const char *types, int64_t a,
              int64_t b, int64_t c, int64_t d, int64_t e, int64_t f) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int rc = store_begin(st, STORE_WRITE, &tx, &err);
    if (!rc) {
        rc = store_exec(tx, NULL, &err, sql, types, a, b, c, d, e, f);
        if (rc) store_rollback(tx);
        else rc = store_commit(tx, &err);
    }
    if (rc) fprintf(stderr, "gpupool-bench %s: %s\n  (%.120s)\n", who, err.msg, sql);
    return rc;
}
