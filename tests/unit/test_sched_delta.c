/*
 * test_sched_delta.c - the round after one change (sch_delta, sched.h) against a full round:
 * on random clusters (whole cards with NUMA gangs, MIG slices, shared slices on cards of
 * several sizes, pools closed to tenants and project classes, project, tenant and class
 * ceilings, four priorities, drivers below a class's minimum), settled by full rounds, a
 * chain of submits and exits is decided both ways; the placements, admissions and reasons
 * must be the same, step after step, and the delta must hand a change with preemption back.
 */
#include "testutil.h"

#include "../../src/sched/sched.h"

#define WN 24
#define WG (WN * 8)
#define WJ 400

typedef struct world {
    sch_node nodes[WN];
    sch_gpu gpus[WG];
    sch_class classes[6];
    unsigned char model_ok[6][4];
    unsigned char gpu_ok[WG];
    sch_tenant tenants[3];
    unsigned char tpool[3][2];
    sch_project projects[6];
    unsigned char ppool[2];
    sch_job jobs[WJ];
    sch_unit places[WJ][4]; /* by slot of jobs[] */
    char ids[WJ][16];
    int nj, next_id;
    sch_snapshot s;
    unsigned long long rng;
} world;

static unsigned rnd(world *w, unsigned n) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (unsigned)(w->rng % n);
}

static void new_job(world *w, int state) {
    int i = w->nj++;
    sch_job *j = &w->jobs[i];
    int c = (int)rnd(w, 6);
    snprintf(w->ids[i], sizeof w->ids[i], "j%04d", w->next_id++);
    *j = (sch_job){w->ids[i], (int)rnd(w, 6), c, c == 2 ? 1 : 1 + (int)rnd(w, 3),
                   (int)rnd(w, 4) * 100, 1, 0, (int64_t)w->next_id, 0, state, NULL, 0};
}

static void make_world(world *w, unsigned long long seed, int preempting) {
    memset(w, 0, sizeof *w);
    w->rng = seed * 2654435761ULL | 1;
    int nn = 2 + (int)rnd(w, WN - 1);
    /* models: 0 A100 (whole), 1 H100 (MIG), 2 L40S 48 GiB and 3 A10 24 GiB (shared) */
    for (int n = 0; n < nn; n++) {
        int model = (int)rnd(w, 4);
        w->nodes[n] = (sch_node){(int)rnd(w, 2), 16 + (int)rnd(w, 4) * 16, 256, n * 8, 8};
        for (int k = 0; k < 8; k++) {
            int g = n * 8 + k;
            sch_gpu *gp = &w->gpus[g];
            gp->node = n;
            gp->model = model;
            gp->mode = model == 0 ? SCH_WHOLE : model == 1 ? SCH_MIG : SCH_SHARED;
            gp->allocatable = rnd(w, 12) != 0;
            gp->mem_gib = model == 2 ? 48 : model == 3 ? 24 : 80;
            gp->numa = k / 4;
            gp->nvgroup = -1;
            w->gpu_ok[g] = rnd(w, 10) != 0;
            if (model == 1) {
                gp->nslices = 7;
                for (int s = 0; s < 7; s++) gp->slices[s] = (sch_slice){s < 4 ? "1g.10gb" : "2g.20gb", 10};
            }
        }
    }
    static const unsigned char ok[6][4] = {{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0},
                                           {0, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 1}};
    memcpy(w->model_ok, ok, sizeof ok);
    sch_class cls[6] = {
        {"a.1x", SCH_WHOLE, "", 0, 0, 1, 4, 32, -1, SCH_TOPO_ANY, w->model_ok[0], NULL, 1000, 80},
        {"a.2x", SCH_WHOLE, "", 0, 0, 2, 8, 64, -1, SCH_TOPO_NUMA, w->model_ok[1], NULL, 2000, 160},
        {"a.8x", SCH_WHOLE, "", 0, 0, 8, 16, 128, 1, SCH_TOPO_ANY, w->model_ok[2], NULL, 8000, 640},
        {"h.1g", SCH_MIG, "1g.10gb", 0, 0, 1, 2, 16, -1, SCH_TOPO_ANY, w->model_ok[3], NULL, 142, 10},
        {"s.12g", SCH_SHARED, "", 12, 25, 1, 2, 16, -1, SCH_TOPO_ANY, w->model_ok[4], w->gpu_ok, 250, 12},
        {"s.8g", SCH_SHARED, "", 8, 40, 1, 3, 8, 0, SCH_TOPO_ANY, w->model_ok[5], NULL, 400, 8},
    };
    memcpy(w->classes, cls, sizeof cls);
    for (int t = 0; t < 3; t++) {
        w->tenants[t].name = t == 0 ? "red" : t == 1 ? "blue" : "green";
        quota_unlimited(&w->tenants[t].quota);
        w->tpool[t][0] = 1;
        w->tpool[t][1] = t != 2; /* green may not use pool 1 */
        w->tenants[t].pool_ok = w->tpool[t];
        if (rnd(w, 2)) w->tenants[t].quota.v[QD_GPU_MILLI] = (int64_t)(nn * 8) * 1000 / 3;
        if (rnd(w, 3) == 0) w->tenants[t].quota.v[QD_JOBS] = 5 + (int)rnd(w, 20);
        if (rnd(w, 3) == 0) {
            w->tenants[t].quota.nclass = 1;
            snprintf(w->tenants[t].quota.class_name[0], 64, "s.12g");
            w->tenants[t].quota.class_units[0] = 4 + (int)rnd(w, 8);
        }
    }
    w->ppool[0] = 1;
    w->ppool[1] = 0;
    for (int p = 0; p < 6; p++) {
        w->projects[p].name = "p";
        w->projects[p].tenant = p / 2;
        w->projects[p].pclass = p % 3;
        w->projects[p].pool_ok = p == 5 ? w->ppool : NULL; /* one project's class: pool 0 only */
        quota_unlimited(&w->projects[p].quota);
        if (rnd(w, 3) == 0) w->projects[p].quota.v[QD_CPUS] = 20 + (int)rnd(w, 60);
    }
    int nj = 20 + (int)rnd(w, 120);
    for (int i = 0; i < nj; i++) new_job(w, SCH_PENDING);
    if (preempting)
        for (int i = 0; i < w->nj; i++) w->jobs[i].may_preempt = rnd(w, 4) == 0;
    w->s = (sch_snapshot){w->nodes, nn, w->gpus, nn * 8, w->classes, 6, w->tenants, 3,
                          w->projects, 6, w->jobs, w->nj, 4, 2, "2026-12"};
}

/* Remove slot i (the last job moves into it, with its units). */
static void drop_job(world *w, int i) {
    int last = --w->nj;
    if (i != last) {
        w->jobs[i] = w->jobs[last];
        memcpy(w->places[i], w->places[last], sizeof w->places[i]);
        memcpy(w->ids[i], w->ids[last], sizeof w->ids[i]);
        w->jobs[i].id = w->ids[i];
        if (w->jobs[i].place) w->jobs[i].place = w->places[i];
    }
    w->s.njobs = w->nj;
}

/* Apply a round's decisions to the world. */
static void apply(world *w, const sch_result *r) {
    unsigned char gone[WJ] = {0};
    for (int i = 0; i < r->n; i++) {
        const sch_decision *d = &r->d[i];
        sch_job *j = &w->jobs[d->job];
        j->credited = d->action == SCH_DO_WAIT_PREEMPT; /* as round.c commits it */
        if (d->action == SCH_DO_PLACE) {
            memcpy(w->places[d->job], d->units, sizeof(sch_unit) * (size_t)j->units);
            j->place = w->places[d->job];
            j->state = SCH_RUNNING;
            j->start_us = 1000 + w->next_id++;
        } else if (d->action == SCH_DO_ADMIT || d->action == SCH_DO_WAIT_PREEMPT) {
            j->state = SCH_ADMITTED;
        } else if (d->action == SCH_DO_PREEMPT) {
            gone[d->job] = 1;
        }
    }
    for (int i = w->nj - 1; i >= 0; i--)
        if (gone[i]) drop_job(w, i);
}

/* Decisions that change state. */
static int changes(const sch_decision *d) {
    return d->action == SCH_DO_PLACE || d->action == SCH_DO_ADMIT ||
           d->action == SCH_DO_PREEMPT || d->action == SCH_DO_WAIT_PREEMPT;
}

static int nchanges(const sch_result *r) {
    int n = 0;
    for (int i = 0; i < r->n; i++) n += changes(&r->d[i]);
    return n;
}

/* Full rounds until nothing changes: 0, or -1 when it has not settled after 400. */
static int settle(world *w) {
    for (int k = 0; k < 400; k++) {
        sch_result r;
        assert_int_equal(sch_round(&w->s, &r), 0);
        char why[200];
        assert_int_equal(sch_check(&w->s, &r, why, sizeof why), 0);
        int n = nchanges(&r);
        apply(w, &r);
        sch_result_free(&r);
        if (!n) return 0;
    }
    return -1;
}

/* The delta's result holds exactly the full round's state changes, with the same units and
 * reasons; `job` (a submit, or -1): its decision and reason agree too. */
static void same(const world *w, const sch_result *full, const sch_result *delta, int job) {
    assert_int_equal(nchanges(full), nchanges(delta));
    for (int i = 0; i < full->n; i++) {
        const sch_decision *f = &full->d[i];
        if (!changes(f) && f->job != job) continue;
        const sch_decision *d = NULL;
        for (int k = 0; k < delta->n && !d; k++)
            if (delta->d[k].job == f->job) d = &delta->d[k];
        if (!d) fail_msg("job %s: %d in the full round, absent from the delta", w->jobs[f->job].id, f->action);
        assert_int_equal(d->action, f->action);
        assert_string_equal(d->reason, f->reason);
        if (f->action == SCH_DO_PLACE)
            assert_memory_equal(d->units, f->units, sizeof(sch_unit) * (size_t)w->jobs[f->job].units);
    }
}

static void chain(unsigned long long seed, int preempting, int *deltas, int *fallbacks,
                  int *moves) {
    static world w;
    make_world(&w, seed, preempting);
    /* every world settles, preemption included: a job that may preempt stops its victims
     * once and gets what they free (a job ahead of it used to take that, and it stopped one
     * more victim each round: 15 of the 40 preempting worlds never settled) */
    assert_int_equal(settle(&w), 0);
    sch_delta *d;
    assert_int_equal(sch_delta_new(&w.s, &d), 0);
    for (int step = 0; step < 40; step++) {
        sch_result full, delta;
        int rc, job = -1, running = 0;
        for (int i = 0; i < w.nj; i++) running += w.jobs[i].state == SCH_RUNNING;
        if (w.nj < WJ - 1 && (rnd(&w, 2) || !running)) {
            new_job(&w, SCH_PENDING);
            if (preempting) w.jobs[w.nj - 1].may_preempt = rnd(&w, 4) == 0;
            w.s.njobs = w.nj;
            job = w.nj - 1;
            assert_int_equal(sch_round(&w.s, &full), 0);
            rc = sch_delta_submit(d, &w.s, job, &delta);
        } else {
            int k = (int)rnd(&w, (unsigned)running), i = 0;
            for (;; i++)
                if (w.jobs[i].state == SCH_RUNNING && k-- == 0) break;
            sch_job was = w.jobs[i];
            sch_unit units[4];
            memcpy(units, w.places[i], sizeof units);
            was.place = units;
            drop_job(&w, i);
            assert_int_equal(sch_round(&w.s, &full), 0);
            rc = sch_delta_exit(d, &w.s, &was, &delta);
        }
        assert_true(rc == 0 || rc == 1);
        if (rc == 1) {
            /* handed back: only with preemption in play */
            assert_true(preempting);
            (*fallbacks)++;
            apply(&w, &full);
            sch_result_free(&full);
            sch_delta_free(d);
            assert_int_equal(settle(&w), 0);
            assert_int_equal(sch_delta_new(&w.s, &d), 0);
            continue;
        }
        (*deltas)++;
        same(&w, &full, &delta, job);
        *moves += nchanges(&delta);
        apply(&w, &delta);
        sch_result_free(&full);
        sch_result_free(&delta);
        /* the delta followed its own decisions: the world is settled again */
        assert_int_equal(sch_round(&w.s, &full), 0);
        assert_int_equal(nchanges(&full), 0);
        sch_result_free(&full);
    }
    sch_delta_free(d);
}

static void delta_matches_full_round(void **state) {
    (void)state;
    int deltas = 0, fallbacks = 0, moves = 0;
    for (unsigned long long seed = 1; seed <= 150; seed++) chain(seed, 0, &deltas, &fallbacks, &moves);
    assert_int_equal(fallbacks, 0);
    assert_true(deltas == 150 * 40);
    assert_true(moves > 750); /* the changes did move jobs: placements and admissions */
}

static void delta_hands_preemption_back(void **state) {
    (void)state;
    int deltas = 0, fallbacks = 0, moves = 0;
    for (unsigned long long seed = 1000; seed < 1040; seed++) chain(seed, 1, &deltas, &fallbacks, &moves);
    assert_true(fallbacks > 0);
    assert_true(deltas > 0);
}

static void delta_refuses_other_tables(void **state) {
    (void)state;
    static world w, v;
    make_world(&w, 7, 0);
    assert_int_equal(settle(&w), 0);
    sch_delta *d;
    assert_int_equal(sch_delta_new(&w.s, &d), 0);
    v = w;
    v.s.jobs = v.jobs;
    v.s.nnodes = w.s.nnodes - 1; /* another cluster */
    v.s.ngpus = v.s.nnodes * 8;
    new_job(&v, SCH_PENDING);
    v.s.njobs = v.nj;
    sch_result r;
    assert_int_equal(sch_delta_submit(d, &v.s, v.nj - 1, &r), 1);
    assert_int_equal(r.n, 0);
    /* not a queued job */
    assert_int_equal(sch_delta_submit(d, &w.s, -1, &r), 1);
    sch_delta_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delta_matches_full_round),
        cmocka_unit_test(delta_hands_preemption_back),
        cmocka_unit_test(delta_refuses_other_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
