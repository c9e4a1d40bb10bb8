/*
 * sched_world.h - a small world for the pure scheduler's unit tests (test_sched.c,
 * test_oom.c): nodes, cards, classes, tenants, projects and jobs in fixed arrays, the
 * snapshot over them, and the helpers that read a round's result or apply it as round.c
 * commits it.  Header-only (static inline): each test takes what it uses.
 */
#ifndef GP_TEST_SCHED_WORLD_H
#define GP_TEST_SCHED_WORLD_H

#include "testutil.h"

#include "../../src/sched/jobs.h"
#include "../../src/sched/sched.h"

#define MAXN 64
#define MAXG 512
#define MAXJ 512

typedef struct world {
    sch_node nodes[MAXN];
    sch_gpu gpus[MAXG];
    sch_class classes[8];
    unsigned char model_ok[8][4];
    sch_tenant tenants[4];
    unsigned char pool_ok[4][4];
    sch_project projects[8];
    sch_job jobs[MAXJ];
    sch_unit places[MAXJ][8];
    char ids[MAXJ][16];
    int nn, ng, nc, nt, np, nj;
    sch_snapshot s;
} world;

static inline void w_init(world *w) {
    memset(w, 0, sizeof *w);
    for (int t = 0; t < 4; t++) {
        quota_unlimited(&w->tenants[t].quota);
        w->tenants[t].name = t == 0 ? "red" : t == 1 ? "blue" : "green";
        for (int p = 0; p < 4; p++) w->pool_ok[t][p] = 1;
        w->tenants[t].pool_ok = w->pool_ok[t];
    }
    w->nt = 2;
    for (int p = 0; p < 8; p++) {
        quota_unlimited(&w->projects[p].quota);
        w->projects[p].tenant = p % 2;
        w->projects[p].name = p % 2 ? "blue-p" : "red-p";
    }
    w->np = 2;
}

/* node with n GPUs of model m and mode */
static inline int w_node(world *w, int n, int model, int mode, int cpus, int mem, int pool) {
    sch_node *nd = &w->nodes[w->nn];
    nd->pool = pool;
    nd->cpus = cpus;
    nd->mem_gib = mem;
    nd->gpu0 = w->ng;
    nd->ngpus = n;
    for (int i = 0; i < n; i++) {
        sch_gpu *g = &w->gpus[w->ng++];
        g->node = w->nn;
        g->model = model;
        g->mode = mode;
        g->allocatable = 1;
        g->mem_gib = 80;
        g->numa = i < n / 2 ? 0 : 1;
        g->nvgroup = i / 4;
        if (mode == SCH_MIG) {
            static const char *const prof[] = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
            g->nslices = 4;
            for (int k = 0; k < 4; k++) {
                g->slices[k].profile = prof[k];
                g->slices[k].mem_gib = k == 0 ? 40 : k == 1 ? 20 : 10;
            }
        }
    }
    return w->nn++;
}

static inline int w_class(world *w, const char *name, int form, int gpus, int cpus, int mem, int model) {
    sch_class *c = &w->classes[w->nc];
    c->name = name;
    c->form = form;
    c->gpus = gpus;
    c->cpus = cpus;
    c->mem_gib = mem;
    c->pool = -1;
    c->profile = "3g.40gb";
    c->shared_mem_gib = 20;
    c->shared_pct = 25;
    memset(w->model_ok[w->nc], 0, 4);
    w->model_ok[w->nc][model] = 1;
    c->model_ok = w->model_ok[w->nc];
    c->gpu_milli = form == SCH_WHOLE ? 1000 * gpus : form == SCH_MIG ? 428 : 250;
    c->gpu_mem_gib = form == SCH_WHOLE ? 80 * gpus : form == SCH_MIG ? 40 : 20;
    return w->nc++;
}

static inline int w_job(world *w, int project, int cls, int units, int prio, int64_t submit) {
    sch_job *j = &w->jobs[w->nj];
    snprintf(w->ids[w->nj], 16, "j%d", w->nj);
    j->id = w->ids[w->nj];
    j->project = project;
    j->cls = cls;
    j->units = units;
    j->priority = prio;
    j->preemptible = 1;
    j->submit_us = submit;
    j->state = SCH_PENDING;
    j->place = w->places[w->nj];
    return w->nj++;
}

static inline sch_snapshot *w_snap(world *w) {
    sch_snapshot *s = &w->s;
    s->nodes = w->nodes;
    s->nnodes = w->nn;
    s->gpus = w->gpus;
    s->ngpus = w->ng;
    s->classes = w->classes;
    s->nclasses = w->nc;
    s->tenants = w->tenants;
    s->ntenants = w->nt;
    s->projects = w->projects;
    s->nprojects = w->np;
    s->jobs = w->jobs;
    s->njobs = w->nj;
    s->nmodels = 4;
    s->npools = 4;
    static const char pool_names[4][64] = {"east", "west", "north", "south"};
    s->pool_names = pool_names;
    s->month = "2026-12";
    return s;
}

static inline const sch_decision *dec(const sch_result *r, int job) {
    for (int i = 0; i < r->n; i++)
        if (r->d[i].job == job && r->d[i].action != SCH_DO_PREEMPT) return &r->d[i];
    fail_msg("no decision for job %d", job); /* does not return */
    static const sch_decision none;
    return &none;
}

static inline int preempted(const sch_result *r, int job) {
    for (int i = 0; i < r->n; i++)
        if (r->d[i].job == job && r->d[i].action == SCH_DO_PREEMPT) return 1;
    return 0;
}

/* Apply a round as round.c commits it: placed jobs run, victims go back to pending, a job
 * waiting for its victims is credited for them until its next decision. */
static inline void w_apply(world *w, const sch_result *r) {
    for (int i = 0; i < r->n; i++) {
        const sch_decision *d = &r->d[i];
        sch_job *j = &w->jobs[d->job];
        j->credited = d->action == SCH_DO_WAIT_PREEMPT;
        if (d->action == SCH_DO_PLACE) {
            memcpy(w->places[d->job], d->units, sizeof(sch_unit) * (size_t)j->units);
            j->state = SCH_RUNNING;
            j->start_us = 1000 + i;
        } else if (d->action == SCH_DO_PREEMPT) {
            j->state = SCH_PENDING;
        } else if (d->action == SCH_DO_ADMIT || d->action == SCH_DO_WAIT_PREEMPT) {
            j->state = SCH_ADMITTED;
            j->gpool = d->gpool; /* what admission gave it (step 6d), kept while admitted */
        }
    }
}

static inline void round_ok(world *w, sch_result *r) {
    char why[200];
    assert_int_equal(sch_round(w_snap(w), r), 0);
    if (sch_check(&w->s, r, why, sizeof why) != 0) fail_msg("check failed: %s", why);
}

#endif
