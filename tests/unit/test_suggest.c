/*
 * test_suggest.c - what would start a waiting job (sch_suggest, suggest.c), as a property:
 * on random small fleets (nodes short of CPUs or memory, pools closed to tenants or project
 * classes, quotas on every kind of ceiling, a guarantee, a reservation, jobs of every form
 * and priority), every suggestion given for a blocked job, applied to the snapshot here by
 * this file's own reading of sched.h's SCH_SG_* (not suggest.c's), starts the job in the
 * next pure round: it is placed, or preempts for a place.  A "wait" suggestion is checked the
 * same way: the jobs it names gone.  And no blocked job is left without one when one exists:
 * a job that every other job gone (and its own change, when its reason names one) would
 * start gets a suggestion.  Then the reasons: each kind the round gives a waiting job here
 * is one the suggestions cover (quota, card-hours, CPU / memory, pool, class, priority,
 * reservation, guarantee, capacity).
 */
#include "testutil.h"

#include <stdlib.h>

#include "../../src/sched/sched.h"

#define MAXN 16
#define MAXG 96
#define MAXJ 64
#define MAXC 12

typedef struct world {
    sch_node nodes[MAXN];
    sch_gpu gpus[MAXG];
    sch_class classes[MAXC];
    unsigned char model_ok[MAXC][4];
    sch_tenant tenants[3];
    unsigned char tpool[3][4];
    sch_project projects[6];
    unsigned char ppool[6][4];
    sch_job jobs[MAXJ];
    sch_unit places[MAXJ][4];
    char ids[MAXJ][16];
    rsv rsvs[1];
    unsigned char rsv_nodes[MAXN];
    const char *rsv_names[1];
    int nn, ng, nc, nt, np, nj, nr;
    int64_t now;
    sch_snapshot s;
} world;

static unsigned rnd(unsigned *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Pointers inside the world follow it when it is copied. */
static sch_snapshot *w_snap(world *w) {
    for (int t = 0; t < w->nt; t++) w->tenants[t].pool_ok = w->tpool[t];
    for (int p = 0; p < w->np; p++)
        w->projects[p].pool_ok = w->projects[p].pool_ok ? w->ppool[p] : NULL;
    for (int c = 0; c < w->nc; c++) w->classes[c].model_ok = w->model_ok[c];
    for (int j = 0; j < w->nj; j++) {
        w->jobs[j].id = w->ids[j];
        w->jobs[j].place = w->places[j];
    }
    w->rsvs[0].node_in = w->rsv_nodes;
    w->rsv_names[0] = "r1";
    sch_snapshot *s = &w->s;
    memset(s, 0, sizeof *s);
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
    s->npools = 2;
    s->month = "2026-12";
    s->rsvs = w->rsvs;
    s->nrsvs = w->nr;
    s->rsv_names = w->rsv_names;
    s->now_us = w->now;
    return s;
}

static int w_class(world *w, const char *name, int form, int gpus, int cpus, int mem, int model,
                   int pool) {
    sch_class *c = &w->classes[w->nc];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->form = form;
    c->gpus = gpus;
    c->cpus = cpus;
    c->mem_gib = mem;
    c->pool = pool;
    c->profile = "3g.40gb";
    c->shared_mem_gib = 20;
    c->shared_pct = 25;
    memset(w->model_ok[w->nc], 0, 4);
    w->model_ok[w->nc][model] = 1;
    c->gpu_milli = form == SCH_WHOLE ? 1000 * gpus : form == SCH_MIG ? 428 : 250;
    c->gpu_mem_gib = form == SCH_WHOLE ? 80 * gpus : form == SCH_MIG ? 40 : 20;
    return w->nc++;
}

static void w_node(world *w, int n, int model, int mode, int cpus, int mem, int pool) {
    sch_node *nd = &w->nodes[w->nn];
    nd->pool = pool;
    nd->cpus = cpus;
    nd->mem_gib = mem;
    nd->gpu0 = w->ng;
    nd->ngpus = n;
    for (int i = 0; i < n; i++) {
        sch_gpu *g = &w->gpus[w->ng++];
        memset(g, 0, sizeof *g);
        g->node = w->nn;
        g->model = model;
        g->mode = mode;
        g->allocatable = 1;
        g->mem_gib = 80;
        g->numa = -1;
        g->nvgroup = -1;
        if (mode == SCH_MIG) {
            static const char *const prof[] = {"3g.40gb", "3g.40gb", "1g.10gb"};
            g->nslices = 3;
            for (int k = 0; k < 3; k++) {
                g->slices[k].profile = prof[k];
                g->slices[k].mem_gib = k == 2 ? 10 : 40;
            }
        }
    }
    w->nn++;
}

static int w_job(world *w, int project, int cls, int units, int prio, int64_t submit) {
    sch_job *j = &w->jobs[w->nj];
    memset(j, 0, sizeof *j);
    snprintf(w->ids[w->nj], 16, "j%d", w->nj);
    j->project = project;
    j->cls = cls;
    j->units = units;
    j->priority = prio;
    j->preemptible = 1;
    j->submit_us = submit;
    j->state = SCH_PENDING;
    return w->nj++;
}

static void w_apply(world *w, const sch_result *r) {
    for (int i = 0; i < r->n; i++) {
        const sch_decision *d = &r->d[i];
        sch_job *j = &w->jobs[d->job];
        if (d->action == SCH_DO_PLACE) {
            memcpy(w->places[d->job], d->units, sizeof(sch_unit) * (size_t)j->units);
            j->state = SCH_RUNNING;
            j->start_us = 1000 + i;
        } else if (d->action == SCH_DO_ADMIT) {
            j->state = SCH_ADMITTED;
        }
    }
}

static const sch_decision *dec(const sch_result *r, int job) {
    for (int i = 0; i < r->n; i++)
        if (r->d[i].job == job && r->d[i].action != SCH_DO_PREEMPT) return &r->d[i];
    return NULL;
}

/* Does job ji start in a round on w? */
static int w_starts(world *w, int ji) {
    sch_result r;
    assert_int_equal(sch_round(w_snap(w), &r), 0);
    const sch_decision *d = dec(&r, ji);
    int ok = d && (d->action == SCH_DO_PLACE || d->action == SCH_DO_WAIT_PREEMPT);
    char why[200];
    if (sch_check(&w->s, &r, why, sizeof why) != 0)
        fail_msg("check failed: %s (job %s: %s)", why, w->ids[ji], d ? d->reason : "?");
    sch_result_free(&r);
    return ok;
}

/* The world without the jobs gone[]; *ji follows its job. */
static void w_remove(world *w, const unsigned char *gone, int *ji) {
    int o = 0;
    for (int k = 0; k < w->nj; k++) {
        if (gone[k]) continue;
        if (k == *ji) *ji = o;
        if (o != k) {
            w->jobs[o] = w->jobs[k];
            memcpy(w->places[o], w->places[k], sizeof w->places[0]);
            memcpy(w->ids[o], w->ids[k], sizeof w->ids[0]);
        }
        o++;
    }
    w->nj = o;
}

/* This file's own reading of a suggestion (sched.h, SCH_SG_*), applied to a copy. */
static void apply_here(world *w, int *ji, const sch_suggestion *g) {
    for (int i = 0; i < g->nch; i++) {
        const sch_change *c = &g->ch[i];
        sch_job *j = &w->jobs[*ji];
        quota_set *q = c->level ? &w->tenants[c->who].quota : &w->projects[c->who].quota;
        switch (c->kind) {
        case SCH_SG_QUOTA:
            assert_true(c->dim >= 0 && c->dim < QD__N);
            assert_true(c->value > q->v[c->dim] || q->v[c->dim] == QUOTA_NONE);
            q->v[c->dim] = c->value;
            break;
        case SCH_SG_CLASS_QUOTA: {
            const char *name = w->classes[j->cls].name;
            int k = 0;
            while (k < q->nclass && strcmp(q->class_name[k], name)) k++;
            assert_true(k < q->nclass); /* only a ceiling that exists holds it */
            q->class_units[k] = c->value;
            break;
        }
        case SCH_SG_GUARANTEE: { /* dim > 0: the guarantee of class dim - 1 (step 6c) */
            quota_set *t = &w->tenants[c->who].quota;
            if (c->dim > 0) {
                assert_true(t->ngclass == 1 &&
                            !strcmp(t->gclass_name[0], w->classes[c->dim - 1].name));
                assert_true(c->value > t->gclass_g[0]);
                t->gclass_g[0] = c->value;
            } else {
                t->guarantee = c->value;
            }
            break;
        }
        case SCH_SG_UNIT_CPUS:
        case SCH_SG_UNIT_MEMORY: {
            int k = j->cls;
            j->state = SCH_PENDING; /* a job of another class is a new submission */
            if (!w->classes[k].base) { /* a class of its own, counted as the stored one */
                assert_true(w->nc < MAXC);
                k = w->nc++;
                w->classes[k] = w->classes[j->cls];
                memcpy(w->model_ok[k], w->model_ok[j->cls], 4);
                w->classes[k].base = j->cls + 1;
                j->cls = k;
            }
            if (c->kind == SCH_SG_UNIT_CPUS) {
                assert_true(c->value >= 0 && c->value < w->classes[w->classes[k].base - 1].cpus);
                w->classes[k].cpus = (int)c->value;
            } else {
                assert_true(c->value >= 0 && c->value < w->classes[w->classes[k].base - 1].mem_gib);
                w->classes[k].mem_gib = (int)c->value;
            }
            break;
        }
        case SCH_SG_OPEN_POOL:
            assert_true(c->who >= 0 && c->who < 2);
            w->tpool[w->projects[j->project].tenant][c->who] = 1;
            w->ppool[j->project][c->who] = 1;
            break;
        case SCH_SG_USE_CLASS:
            assert_true(c->who >= 0 && c->who < w->nc && c->who != j->cls);
            j->cls = c->who;
            j->state = SCH_PENDING;
            break;
        case SCH_SG_TIME_LIMIT: assert_true(c->value > 0); j->time_limit_s = c->value; break;
        case SCH_SG_WAIT_UNTIL: assert_true(c->value > w->now); w->now = c->value; break;
        case SCH_SG_NAME_RSV: assert_int_equal(c->who, 0); j->reservation = 1; break;
        case SCH_SG_DROP_RSV: assert_true(j->reservation > 0); j->reservation = 0; break;
        case SCH_SG_WAIT_JOBS: {
            unsigned char gone[MAXJ] = {0};
            assert_true(g->njobs > 0 && g->njobs <= SCH_SG_MAX_JOBS);
            for (int m = 0; m < g->njobs; m++) {
                assert_true(g->jobs[m] >= 0 && g->jobs[m] < w->nj && g->jobs[m] != *ji);
                gone[g->jobs[m]] = 1;
            }
            w_remove(w, gone, ji);
            break;
        }
        default: fail_msg("unknown suggestion kind %d", c->kind);
        }
    }
}

/* Every other job that could stand in its way gone: does it start? */
static int starts_alone(const world *w0, int ji) {
    static world w;
    w = *w0;
    unsigned char gone[MAXJ] = {0};
    for (int k = 0; k < w.nj; k++) gone[k] = k != ji;
    w_remove(&w, gone, &ji);
    return w_starts(&w, ji);
}

static const char *kind_of(const char *reason) {
    static const char *const kinds[] = {"quota_exceeded", "card_hours_exhausted", "no_capacity",
                                        "no_allowed_pool", "no_matching_gpu",
                                        "waiting_behind_higher_priority", "borrow_limit",
                                        "reserved", "reservation_", "reclaim_capped", NULL};
    for (int i = 0; kinds[i]; i++)
        if (!strncmp(reason, kinds[i], strlen(kinds[i]))) return kinds[i];
    return reason;
}

static void random_world(world *w, unsigned *seed) {
    memset(w, 0, sizeof *w);
    w->nt = 3;
    w->np = 6;
    w->now = 1000000000000LL;
    static const char *const tn[] = {"red", "blue", "green"};
    static const char *const pn[] = {"a", "b", "c", "d", "e", "f"};
    for (int t = 0; t < 3; t++) {
        quota_unlimited(&w->tenants[t].quota);
        w->tenants[t].name = tn[t];
        w->tpool[t][0] = 1;
        w->tpool[t][1] = rnd(seed) % 3 != 0;
    }
    for (int p = 0; p < 6; p++) {
        quota_unlimited(&w->projects[p].quota);
        w->projects[p].tenant = p % 3;
        w->projects[p].name = pn[p];
        if (rnd(seed) % 4 == 0) { /* a project class some pool is closed to */
            w->ppool[p][0] = 1;
            w->ppool[p][1] = 0;
            w->projects[p].pool_ok = w->ppool[p];
        }
    }
    int nodes = 1 + (int)(rnd(seed) % 4);
    for (int n = 0; n < nodes; n++) {
        int mode = rnd(seed) % 4 == 0 ? SCH_MIG : rnd(seed) % 4 == 0 ? SCH_SHARED : SCH_WHOLE;
        w_node(w, 1 + (int)(rnd(seed) % 4), (int)(rnd(seed) % 2), mode,
               2 + (int)(rnd(seed) % 24), 8 + (int)(rnd(seed) % 96), (int)(rnd(seed) % 2));
        if (rnd(seed) % 8 == 0) w->gpus[w->ng - 1].allocatable = 0;
    }
    static const char *const cn[] = {"w1", "w2", "mig", "sh", "w1b", "big"};
    w_class(w, cn[0], SCH_WHOLE, 1, 1 + (int)(rnd(seed) % 8), 4 + (int)(rnd(seed) % 32), 0, -1);
    w_class(w, cn[1], SCH_WHOLE, 2, 2 + (int)(rnd(seed) % 12), 8 + (int)(rnd(seed) % 48), 0, -1);
    w_class(w, cn[2], SCH_MIG, 1, 1, 8, 0, -1);
    w_class(w, cn[3], SCH_SHARED, 1, 1 + (int)(rnd(seed) % 4), 4, 1, -1);
    w_class(w, cn[4], SCH_WHOLE, 1, 1 + (int)(rnd(seed) % 8), 4 + (int)(rnd(seed) % 32), 1,
            (int)(rnd(seed) % 2));
    w_class(w, cn[5], SCH_WHOLE, 1, 16 + (int)(rnd(seed) % 16), 64 + (int)(rnd(seed) % 64), 0, -1);
    /* ceilings of every kind, now and then */
    for (int t = 0; t < 3; t++) {
        if (rnd(seed) % 3 == 0) w->tenants[t].quota.v[QD_GPU_MILLI] = 1000 * (rnd(seed) % 4);
        if (rnd(seed) % 4 == 0) w->tenants[t].quota.v[QD_CPUS] = 2 + rnd(seed) % 16;
        if (rnd(seed) % 6 == 0) {
            w->tenants[t].quota.v[QD_CARD_HOURS] = 1000;
            w->tenants[t].card_hours_used = rnd(seed) % 2 ? 1000 : 10;
        }
    }
    for (int p = 0; p < 6; p++) {
        quota_set *q = &w->projects[p].quota;
        if (rnd(seed) % 4 == 0) q->v[QD_MEM] = 8 + rnd(seed) % 64;
        if (rnd(seed) % 5 == 0) q->v[QD_JOBS] = rnd(seed) % 3;
        if (rnd(seed) % 5 == 0) q->v[QD_GPU_MEM] = 40 * (rnd(seed) % 4);
        if (rnd(seed) % 5 == 0) {
            q->nclass = 1;
            snprintf(q->class_name[0], sizeof q->class_name[0], "%s", cn[rnd(seed) % 6]);
            q->class_units[0] = rnd(seed) % 2;
        }
    }
    if (rnd(seed) % 5 == 0) w->tenants[0].quota.guarantee = 1000 * (rnd(seed) % 2);
    if (rnd(seed) % 5 == 0) { /* a guarantee of one class (step 6c) */
        quota_set *q = &w->tenants[1].quota;
        q->ngclass = 1;
        snprintf(q->gclass_name[0], sizeof q->gclass_name[0], "%s", cn[rnd(seed) % 6]);
        q->gclass_g[0] = 1000 * (rnd(seed) % 2);
    }
    /* a reservation on node 0, in force or ahead */
    if (rnd(seed) % 3 == 0) {
        w->nr = 1;
        rsv *r = &w->rsvs[0];
        memset(r, 0, sizeof *r);
        int64_t h = 3600LL * 1000000;
        r->t1_us = rnd(seed) % 2 ? w->now - h : w->now + h;
        r->t2_us = r->t1_us + 2 * h;
        r->tenant = (int)(rnd(seed) % 3);
        r->project = -1;
        r->pool = -1;
        w->rsv_nodes[0] = 1;
    }
    /* some work runs, then more waits */
    int first = 1 + (int)(rnd(seed) % 8);
    for (int i = 0; i < first; i++)
        w_job(w, (int)(rnd(seed) % 6), (int)(rnd(seed) % 6), 1 + (int)(rnd(seed) % 2),
              (int)(rnd(seed) % 3) * 10, i);
    for (int round = 0; round < 2; round++) {
        sch_result r;
        assert_int_equal(sch_round(w_snap(w), &r), 0);
        w_apply(w, &r);
        sch_result_free(&r);
    }
    int more = 1 + (int)(rnd(seed) % 10);
    for (int i = 0; i < more && w->nj < MAXJ - 1; i++) {
        int k = w_job(w, (int)(rnd(seed) % 6), (int)(rnd(seed) % 6), 1 + (int)(rnd(seed) % 3),
                      (int)(rnd(seed) % 3) * 10, 100 + i);
        w->jobs[k].may_preempt = rnd(seed) % 4 == 0;
        if (w->nr && rnd(seed) % 4 == 0) w->jobs[k].reservation = 1;
        if (rnd(seed) % 3 == 0) w->jobs[k].time_limit_s = 600 + rnd(seed) % 20000;
    }
}

static void property_suggestions_start_the_job(void **state) {
    (void)state;
    unsigned seed = 0x2545f491u;
    static world w, x;
    int blocked = 0, given = 0, checked = 0, kinds_seen = 0;
    const char *seen[16] = {0};
    int kind_hits[SCH_SG_WAIT_JOBS + 1] = {0}, class_gtee = 0;
    for (int trial = 0; trial < 400; trial++) {
        random_world(&w, &seed);
        sch_result r;
        assert_int_equal(sch_round(w_snap(&w), &r), 0);
        for (int i = 0; i < r.n; i++) {
            const sch_decision *d = &r.d[i];
            if (d->action == SCH_DO_PREEMPT || d->action == SCH_DO_PLACE ||
                d->action == SCH_DO_WAIT_PREEMPT)
                continue;
            int ji = d->job;
            blocked++;
            const char *k = kind_of(d->reason);
            int known = 0;
            for (int m = 0; m < kinds_seen; m++) known |= !strcmp(seen[m], k);
            if (!known && kinds_seen < 16) seen[kinds_seen++] = k;
            sch_suggestion sg[SCH_SG_MAX];
            int n = sch_suggest(w_snap(&w), ji, sg, SCH_SG_MAX);
            assert_true(n >= 0);
            if (n > 0) given++;
            for (int m = 0; m < n; m++) {
                x = w;
                int xj = ji;
                apply_here(&x, &xj, &sg[m]);
                if (getenv("SG_DEBUG"))
                    fprintf(stderr, "trial %d job %s (%s): kind %d value %lld\n", trial, w.ids[ji],
                            d->reason, sg[m].ch[0].kind, (long long)sg[m].ch[0].value);
                if (!w_starts(&x, xj))
                    fail_msg("trial %d: job %s (%s): suggestion %d (kind %d) does not start it",
                             trial, w.ids[ji], d->reason, m, sg[m].ch[0].kind);
                checked++;
                for (int c = 0; c < sg[m].nch; c++) {
                    kind_hits[sg[m].ch[c].kind]++;
                    class_gtee += sg[m].ch[c].kind == SCH_SG_GUARANTEE && sg[m].ch[c].dim > 0;
                }
            }
            /* none given: then none of the simple ones exists (everyone else gone would not
             * start it, nor does a reason's own change alone) */
            if (n == 0 && starts_alone(&w, ji)) {
                /* it would start alone: only a wait longer than a suggestion names may be
                 * missing (more than SCH_SG_MAX_JOBS jobs) */
                assert_true(w.nj - 1 > SCH_SG_MAX_JOBS);
            }
        }
        sch_result_free(&r);
    }
    print_message("blocked %d, with a suggestion %d, suggestions checked %d; kinds:", blocked,
                  given, checked);
    for (int k = 1; k <= SCH_SG_WAIT_JOBS; k++) print_message(" %d:%d", k, kind_hits[k]);
    print_message(" (a class's guarantee: %d)", class_gtee);
    print_message("\nreasons:");
    for (int m = 0; m < kinds_seen; m++) print_message(" %s", seen[m]);
    print_message("\n");
    /* the fleets are varied enough that most kinds of suggestion occur */
    assert_true(blocked > 200);
    assert_true(checked > 200);
    assert_true(kind_hits[SCH_SG_QUOTA] > 0 && kind_hits[SCH_SG_WAIT_JOBS] > 0 &&
                kind_hits[SCH_SG_OPEN_POOL] > 0 && kind_hits[SCH_SG_UNIT_CPUS] > 0);
}

/* A job above its class's own guarantee (sched.h step 6c) that would start if that guarantee
 * were larger: the suggestion raises the class's guarantee, not the tenant's own. */
static void raise_a_class_guarantee(void **state) {
    (void)state;
    static world w;
    memset(&w, 0, sizeof w);
    w.nt = 2;
    w.np = 2;
    w.now = 1000000000000LL;
    static const char *const tn[] = {"red", "blue"};
    for (int t = 0; t < 2; t++) {
        quota_unlimited(&w.tenants[t].quota);
        quota_unlimited(&w.projects[t].quota);
        w.tenants[t].name = tn[t];
        w.tpool[t][0] = 1;
        w.projects[t].tenant = t;
        w.projects[t].name = tn[t];
    }
    w_node(&w, 2, 0, SCH_WHOLE, 16, 64, 0);
    int c = w_class(&w, "h1", SCH_WHOLE, 1, 1, 1, 0, -1);
    quota_set *red = &w.tenants[0].quota;
    red->ngclass = 1;
    snprintf(red->gclass_name[0], sizeof red->gclass_name[0], "h1");
    red->gclass_g[0] = 1000;
    int r1 = w_job(&w, 0, c, 1, 100, 1), b1 = w_job(&w, 1, c, 1, 100, 2);
    sch_result r;
    assert_int_equal(sch_round(w_snap(&w), &r), 0);
    w_apply(&w, &r); /* red's 1 owned, blue's 1 borrowed (no guarantee of blue's) */
    sch_result_free(&r);
    assert_int_equal(w.jobs[r1].state, SCH_RUNNING);
    assert_int_equal(w.jobs[b1].state, SCH_RUNNING);
    int r2 = w_job(&w, 0, c, 1, 100, 3);
    assert_false(w_starts(&w, r2)); /* above red's class guarantee: it would borrow */
    sch_suggestion sg[SCH_SG_MAX];
    int n = sch_suggest(w_snap(&w), r2, sg, SCH_SG_MAX), found = 0;
    assert_true(n > 0);
    for (int m = 0; m < n; m++)
        if (sg[m].ch[0].kind == SCH_SG_GUARANTEE) {
            found = 1;
            assert_int_equal(sg[m].ch[0].dim, c + 1); /* the class's, not red's own */
            assert_int_equal(sg[m].ch[0].value, 2000);
            static world x;
            x = w;
            int xj = r2;
            apply_here(&x, &xj, &sg[m]);
            assert_true(w_starts(&x, xj)); /* owned now: it reclaims blue's borrowed card */
        }
    assert_true(found);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(property_suggestions_start_the_job),
        cmocka_unit_test(raise_a_class_guarantee),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
