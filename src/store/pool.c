/*
 * pool.c - the connection slots both store backends lend out (store_int.h).
 *
 * A backend keeps its n connections in an array; the pool says which slots
 * are idle and makes a transaction wait until one is.  Invariant:
 * 0 <= nidle <= n, and each idle slot appears once on the stack.
 */
#include "store_int.h"

#include <assert.h>
#include <stdlib.h>

int store__pool_init(store_pool *p, int n) {
    assert(n >= 1);
    p->idle = calloc((size_t)n, sizeof *p->idle);
    if (!p->idle) return GP_ENOMEM;
    p->n = n;
    p->nidle = 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    return GP_OK;
}

void store__pool_put(store_pool *p, int slot) {
    pthread_mutex_lock(&p->mu);
    assert(slot >= 0 && slot < p->n && p->nidle < p->n);
    p->idle[p->nidle++] = slot;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int store__pool_take(store_pool *p) {
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0) pthread_cond_wait(&p->cv, &p->mu);
    int slot = p->idle[--p->nidle];
    pthread_mutex_unlock(&p->mu);
    return slot;
}

int store__pool_idle(store_pool *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->nidle;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void store__pool_free(store_pool *p) {
    if (!p->idle) return;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->idle);
    p->idle = NULL;
}
