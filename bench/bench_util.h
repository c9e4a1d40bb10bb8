/*
 * bench_util.h - the small helpers every bench program needs (bench_util.c): a monotonic
 * clock, the process's peak resident memory, and one SQL statement in its own write
 * transaction, for the programs that fill a store before they measure it.
 */
#ifndef GP_BENCH_UTIL_H
#define GP_BENCH_UTIL_H

#include "../src/store/store.h"

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
double bench_now_ms(void);

/* The process's peak resident set (VmHWM), MiB; 0 when /proc cannot say. */
long bench_peak_rss_mib(void);

/*
 * `sql` in its own write transaction on st, with up to six integer arguments that `types`
 * names ("iii"; those it does not name are not read).  On failure the error goes to stderr
 * after "gpupool-bench WHO: " and the statement's start; returns the store's code.
 */
int bench_sql(store_t *st, const char *who, const char *sql, const char *types, int64_t a,
              int64_t b, int64_t c, int64_t d, int64_t e, int64_t f);

#endif
