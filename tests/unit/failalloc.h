/*
 * failalloc.h - fail the Nth allocation (../shared/STYLE.md: SQLite's test_malloc): a unit
 * test linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free (tests/
 * CMakeLists.txt, test_oom) drives a pure function through every allocation it makes, each
 * failing once in turn, and checks that the function either fails cleanly (its error, nothing
 * leaked) or copes (a valid result).  Only the calls of code linked into the test are
 * wrapped; libraries' own allocations (libc, jansson, cmocka) are not.
 */
#ifndef GP_TEST_FAILALLOC_H
#define GP_TEST_FAILALLOC_H

/* From now, count allocations and fail the nth (1: the next); 0 disarms. */
void fa_arm(long n);
/* Whether the armed failure happened since fa_arm. */
int fa_failed(void);
/* Blocks the wrapped calls allocated and have not freed (any time, armed or not). */
long fa_live(void);

#endif
