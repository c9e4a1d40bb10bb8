/*
 * workers.c - the threads that run request handlers (api_int.h, "Worker
 * pool"): libmicrohttpd's few event threads only move bytes, and hand each
 * complete request to a worker here, so a connection that waits - idle
 * between requests, or its request queued - holds no thread.
 *
 * The pool grows on demand up to its maximum (a task finding no idle worker
 * starts one) and shrinks back to its minimum: a worker idle for
 * IDLE_EXIT_US beyond the minimum ends.  Tasks run in submission order.
 */
#include "api_int.h"

#include "../core/gtime.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define IDLE_EXIT_US 10000000 /* a worker beyond the minimum ends after this idle */

typedef struct task {
    struct task *next;
    void (*fn)(void *);
    void *arg;
} task;

struct api_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* a task queued, or stopping */
    pthread_cond_t gone_cv; /* a worker ended */
    task *head, *tail;
    int min, max;
    int threads, idle;
    int stopping;
    atomic_int signalling; /* submitters between their unlock and their signal */
    size_t stack;
};

static void *worker_main(void *arg) {
    api_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping) {
            p->idle++;
            int timed_out = 0;
            if (p->threads > p->min) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                int64_t ns = ts.tv_nsec + (int64_t)IDLE_EXIT_US * 1000;
                ts.tv_sec += ns / 1000000000;
                ts.tv_nsec = ns % 1000000000;
                timed_out = pthread_cond_timedwait(&p->cv, &p->mu, &ts) != 0;
            } else {
                pthread_cond_wait(&p->cv, &p->mu);
            }
            p->idle--;
            if (timed_out && !p->head && p->threads > p->min) goto out;
        }
        if (!p->head) break; /* stopping, nothing left */
        task *t = p->head;
        p->head = t->next;
        if (!p->head) p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        api__metrics_workers(0, 1);
        t->fn(t->arg);
        api__metrics_workers(0, -1);
        free(t);
        pthread_mutex_lock(&p->mu);
    }
out:
    p->threads--;
    api__metrics_workers(-1, 0);
    pthread_cond_broadcast(&p->gone_cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Start a worker (mu held).  0, or -1 when no thread could be made. */
static int spawn(api_pool *p) {
    pthread_attr_t at;
    pthread_t th;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (p->stack) pthread_attr_setstacksize(&at, p->stack);
    int rc = pthread_create(&th, &at, worker_main, p);
    pthread_attr_destroy(&at);
    if (rc != 0) return -1;
    p->threads++;
    api__metrics_workers(1, 0);
    return 0;
}

api_pool *api__pool_new(int min, int max, size_t stack) {
    api_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->gone_cv, NULL);
    atomic_init(&p->signalling, 0);
    p->min = min < 1 ? 1 : min;
    p->max = max < p->min ? p->min : max;
    p->stack = stack;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->min; i++)
        if (spawn(p)) break;
    int ok = p->threads > 0;
    pthread_mutex_unlock(&p->mu);
    if (!ok) {
        api__pool_free(p);
        return NULL;
    }
    return p;
}

int api__pool_submit(api_pool *p, void (*fn)(void *), void *arg) {
    task *t = malloc(sizeof *t);
    if (!t) return -1;
    t->next = NULL;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        free(t);
        return -1;
    }
    if (p->tail) p->tail->next = t;
    else p->head = t;
    p->tail = t;
    /* no worker free to take it: one more, while the pool may grow */
    if (p->idle == 0 && p->threads < p->max) spawn(p);
    atomic_fetch_add(&p->signalling, 1); /* the pool is not freed under the signal below */
    pthread_mutex_unlock(&p->mu);
    /* signalled after the unlock: the worker woken does not block at once on the mutex still
     * held here (a futex wait and wake more per request, docs/gateway.md "Where a request's
     * time goes"); a worker that is not waiting finds the task when it next looks */
    pthread_cond_signal(&p->cv);
    atomic_fetch_sub(&p->signalling, 1);
    return 0;
}

void api__pool_free(api_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    while (p->threads > 0) pthread_cond_wait(&p->gone_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    while (atomic_load(&p->signalling) > 0) sched_yield(); /* a submitter still signalling */
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->gone_cv);
    free(p);
}
