/*
 * failalloc.c - the wrapped allocator of failalloc.h: __wrap_malloc and its kin count every
 * call of the code linked into the test, fail the armed one, and keep how many blocks are
 * live, so a test sees a leak without a leak checker.
 */
#include "failalloc.h"

#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static long armed, calls, live;
static int failed;

void fa_arm(long n) {
    armed = n;
    calls = 0;
    failed = 0;
}

int fa_failed(void) { return failed; }

long fa_live(void) { return live; }

/* Is this call the armed one? */
static int fail_now(void) {
    if (!armed || failed) return 0;
    if (++calls < armed) return 0;
    failed = 1;
    return 1;
}

void *__wrap_malloc(size_t n) {
    if (fail_now()) return NULL;
    void *p = __real_malloc(n);
    live += p != NULL;
    return p;
}

void *__wrap_calloc(size_t n, size_t size) {
    if (fail_now()) return NULL;
    void *p = __real_calloc(n, size);
    live += p != NULL;
    return p;
}

void *__wrap_realloc(void *p, size_t n) {
    if (fail_now()) return NULL; /* p stays the caller's, as realloc leaves it */
    void *q = __real_realloc(p, n);
    if (!p && q) live++;
    if (p && !q && n == 0) live--; /* realloc(p, 0) freed p */
    return q;
}

void __wrap_free(void *p) {
    live -= p != NULL;
    __real_free(p);
}
