/*
 * test_gang.c - jobs that span nodes (issue 37 items 1-2; sched.h step 4a,
 * jobs.h "jobs that span nodes"): the submit's shape (nodes, units_per_node,
 * units) and every refusal; the pure round placing K units on each of N
 * distinct nodes all at once or not at all, ranks in node order, preferring
 * one rack, then one switch, then the fewest of them; quota admitting the
 * whole job; preemption freeing a place on N nodes; the delta handing such a
 * job to a full round; and a property test on random clusters and queues that
 * no placement is ever partial, split unevenly or doubled on a node.
 */
#include "testutil.h"

#include "../../src/check/check.h"
#include "../../src/sched/jobs.h"
#include "../../src/sched/sched.h"

#define MAXN 32
#define MAXG 256
#define MAXJ 256

typedef struct world {
    sch_node nodes[MAXN];
    sch_gpu gpus[MAXG];
    sch_class classes[8];
    unsigned char model_ok[8][4];
    sch_tenant tenants[4];
    unsigned char pool_ok[4][4];
    sch_project projects[8];
    sch_job jobs[MAXJ];
    sch_unit places[MAXJ][64];
    char ids[MAXJ][16];
    int nn, ng, nc, nt, np, nj;
    sch_snapshot s;
} world;

static void w_init(world *w) {
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

/* A node of n whole cards of model 0 in rack `rack`, switch `sw` (0: none). */
static int w_node(world *w, int n, int rack, int sw) {
    sch_node *nd = &w->nodes[w->nn];
    nd->pool = 0;
    nd->cpus = 64;
    nd->mem_gib = 512;
    nd->gpu0 = w->ng;
    nd->ngpus = n;
    nd->rack = rack;
    nd->sw = sw;
    for (int i = 0; i < n; i++) {
        sch_gpu *g = &w->gpus[w->ng++];
        g->node = w->nn;
        g->mode = SCH_WHOLE;
        g->allocatable = 1;
        g->mem_gib = 80;
        g->numa = -1;
        g->nvgroup = -1;
    }
    return w->nn++;
}

static int w_class(world *w, const char *name, int gpus) {
    sch_class *c = &w->classes[w->nc];
    c->name = name;
    c->form = SCH_WHOLE;
    c->gpus = gpus;
    c->cpus = 1;
    c->mem_gib = 1;
    c->pool = -1;
    memset(w->model_ok[w->nc], 0, 4);
    w->model_ok[w->nc][0] = 1;
    c->model_ok = w->model_ok[w->nc];
    c->gpu_milli = 1000 * gpus;
    c->gpu_mem_gib = 80 * gpus;
    return w->nc++;
}

/* A queued job of `units` units; nodes > 0: spanning that many nodes. */
static int w_job(world *w, int project, int cls, int units, int nodes, int prio, int64_t submit) {
    sch_job *j = &w->jobs[w->nj];
    snprintf(w->ids[w->nj], 16, "j%d", w->nj);
    j->id = w->ids[w->nj];
    j->project = project;
    j->cls = cls;
    j->units = units;
    j->nodes = nodes;
    j->priority = prio;
    j->preemptible = 1;
    j->submit_us = submit;
    j->state = SCH_PENDING;
    j->place = w->places[w->nj];
    return w->nj++;
}

/* A job running on one card (node n's card k). */
static int w_running(world *w, int cls, int n, int k, int prio) {
    int j = w_job(w, 1, cls, 1, 0, prio, 0);
    w->jobs[j].state = SCH_RUNNING;
    w->places[j][0].gpu[0] = w->nodes[n].gpu0 + k;
    w->places[j][0].slice = -1;
    w->jobs[j].start_us = 100 + j;
    return j;
}

static sch_snapshot *w_snap(world *w) {
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
    s->month = "2026-12";
    return s;
}

static const sch_decision *dec(const sch_result *r, int job) {
    for (int i = 0; i < r->n; i++)
        if (r->d[i].job == job && r->d[i].action != SCH_DO_PREEMPT) return &r->d[i];
    return NULL;
}

static int preempted(const sch_result *r, int job) {
    for (int i = 0; i < r->n; i++)
        if (r->d[i].job == job && r->d[i].action == SCH_DO_PREEMPT) return 1;
    return 0;
}

static void round_ok(world *w, sch_result *r) {
    char why[200];
    assert_int_equal(sch_round(w_snap(w), r), 0);
    if (sch_check(&w->s, r, why, sizeof why) != 0) fail_msg("check failed: %s", why);
}

static void w_apply(world *w, const sch_result *r) {
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
        }
    }
}

/* The node of rank r of a placed job of K units per node. */
static int rank_node(const world *w, const sch_unit *u, int K, int r) {
    return w->gpus[u[r * K].gpu[0]].node;
}

/*
 * A placement of job j (units u) is whole: N distinct nodes in ascending order, K units on
 * each, no card twice.  Fails the test otherwise.
 */
static void whole_gang(const world *w, int j, const sch_unit *u) {
    const sch_job *job = &w->jobs[j];
    const sch_class *c = &w->classes[job->cls];
    int N = job->nodes, K = job->units / N, prev = -1;
    assert_int_equal(N * K, job->units);
    unsigned char seen[MAXG] = {0};
    for (int r = 0; r < N; r++) {
        int node = rank_node(w, u, K, r);
        if (node <= prev) fail_msg("job %s: rank %d on node %d after %d", job->id, r, node, prev);
        prev = node;
        for (int k = 0; k < K; k++)
            for (int m = 0; m < c->gpus; m++) {
                int g = u[r * K + k].gpu[m];
                if (w->gpus[g].node != node) fail_msg("job %s: rank %d spans nodes", job->id, r);
                if (seen[g]++) fail_msg("job %s: card %d twice", job->id, g);
            }
    }
}

/* ---- the submit's shape ---- */

static void shape_rules(void **state) {
    (void)state;
    gp_err err;
    int64_t units, nodes;
    /* nothing said: one unit, no gang */
    assert_int_equal(jobs_gang_shape(0, 0, 0, 0, 0, 0, &units, &nodes, &err), 0);
    assert_int_equal(units, 1);
    assert_int_equal(nodes, 0);
    assert_int_equal(jobs_gang_shape(3, 1, 0, 0, 0, 0, &units, &nodes, &err), 0);
    assert_int_equal(units, 3);
    assert_int_equal(nodes, 0);
    /* --nodes 2 --units-per-node 4: 8 units on 2 nodes */
    assert_int_equal(jobs_gang_shape(0, 0, 2, 1, 4, 1, &units, &nodes, &err), 0);
    assert_int_equal(units, 8);
    assert_int_equal(nodes, 2);
    /* --nodes 4 alone: one unit on each */
    assert_int_equal(jobs_gang_shape(0, 0, 4, 1, 0, 0, &units, &nodes, &err), 0);
    assert_int_equal(units, 4);
    assert_int_equal(nodes, 4);
    /* --nodes 2 --units 6: 3 per node; the three agreeing */
    assert_int_equal(jobs_gang_shape(6, 1, 2, 1, 0, 0, &units, &nodes, &err), 0);
    assert_int_equal(units, 6);
    assert_int_equal(nodes, 2);
    assert_int_equal(jobs_gang_shape(6, 1, 2, 1, 3, 1, &units, &nodes, &err), 0);
    assert_int_equal(units, 6);
    /* --nodes 1 --units-per-node 4: all four on one node */
    assert_int_equal(jobs_gang_shape(0, 0, 1, 1, 4, 1, &units, &nodes, &err), 0);
    assert_int_equal(units, 4);
    assert_int_equal(nodes, 1);
    /* the refusals, each with its reason */
    static const struct {
        int64_t u, n, k;
        int hu, hn, hk;
        const char *why;
    } bad[] = {
        {0, 0, 0, 0, 1, 0, "nodes must be"},             /* nodes 0 */
        {0, -2, 0, 0, 1, 0, "nodes must be"},            /* nodes < 0 */
        {0, 65, 0, 0, 1, 0, "nodes must be"},            /* too many nodes */
        {0, 2, 0, 0, 1, 1, "units_per_node must be"},    /* units_per_node 0 */
        {0, 2, -1, 0, 1, 1, "units_per_node must be"},   /* negative */
        {0, 0, 2, 0, 0, 1, "units_per_node needs nodes"},
        {5, 2, 0, 1, 1, 0, "does not split"},            /* 5 units over 2 nodes */
        {5, 2, 2, 1, 1, 1, "nodes x units_per_node"},    /* 5 != 2 x 2 */
        {0, 16, 8, 0, 1, 1, "units must be 1..64"},      /* 128 units */
        {0, 0, 0, 1, 0, 0, "units must be 1..64"},       /* units 0 */
        {65, 0, 0, 1, 0, 0, "units must be 1..64"},
        {1, 2, 0, 1, 1, 0, "does not split"},            /* fewer units than nodes */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        int rc = jobs_gang_shape(bad[i].u, bad[i].hu, bad[i].n, bad[i].hn, bad[i].k, bad[i].hk,
                                 &units, &nodes, &err);
        if (rc != GP_EINVALID) fail_msg("case %zu: accepted", i);
        if (!strstr(err.msg, bad[i].why)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].why);
    }
}

/* ---- the round ---- */

/* 2 x 2 on two 4-card nodes: two units on each, rank 0 on the first node; never both ranks on
 * one node even when one node has room for all four. */
static void places_k_on_each_of_n(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 8, 0, 0);
    w_node(&w, 4, 0, 0);
    int c = w_class(&w, "a100.1x", 1);
    int g = w_job(&w, 0, c, 4, 2, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_PLACE);
    whole_gang(&w, g, dec(&r, g)->units);
    assert_int_equal(rank_node(&w, dec(&r, g)->units, 2, 0), 0);
    assert_int_equal(rank_node(&w, dec(&r, g)->units, 2, 1), 1);
    sch_result_free(&r);
    /* one node alone, however big, is not two nodes */
    w_init(&w);
    w_node(&w, 8, 0, 0);
    c = w_class(&w, "a100.1x", 1);
    g = w_job(&w, 0, c, 4, 2, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_ADMIT);
    assert_null(dec(&r, g)->units);
    assert_non_null(strstr(dec(&r, g)->reason,
                           "no_capacity: class a100.1x needs 2 nodes with 2 free units each"));
    sch_result_free(&r);
    /* nodes 1: all K on one node, the tightest */
    w_init(&w);
    w_node(&w, 8, 0, 0);
    w_node(&w, 4, 0, 0);
    c = w_class(&w, "a100.1x", 1);
    g = w_job(&w, 0, c, 4, 1, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_PLACE);
    whole_gang(&w, g, dec(&r, g)->units);
    assert_int_equal(rank_node(&w, dec(&r, g)->units, 4, 0), 1);
    sch_result_free(&r);
    /* multi-card units: 2 nodes x 1 unit of 2 cards */
    w_init(&w);
    w_node(&w, 2, 0, 0);
    w_node(&w, 2, 0, 0);
    c = w_class(&w, "a100.2x", 2);
    g = w_job(&w, 0, c, 2, 2, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_PLACE);
    whole_gang(&w, g, dec(&r, g)->units);
    sch_result_free(&r);
}

/* With only one node having room, nothing of the job is placed; once the second frees, all. */
static void all_or_nothing(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 2, 0, 0);
    w_node(&w, 2, 0, 0);
    int c = w_class(&w, "a100.1x", 1);
    int g = w_job(&w, 0, c, 4, 2, 100, 1);
    w_running(&w, c, 1, 0, 100);
    int small = w_job(&w, 0, c, 1, 0, 100, 2);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_ADMIT);
    assert_null(dec(&r, g)->units);
    assert_non_null(strstr(dec(&r, g)->reason, "1 node can take 2 now"));
    /* the free cards stay free for others meanwhile */
    assert_int_equal(dec(&r, small)->action, SCH_DO_PLACE);
    w_apply(&w, &r);
    sch_result_free(&r);
    /* (the small one took the tighter node: the other still has room, but one is not two) */
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_NOTHING);
    assert_null(dec(&r, g)->units);
    assert_non_null(strstr(dec(&r, g)->reason, "1 node can take 2 now"));
    sch_result_free(&r);
    /* the others end: the whole job goes */
    w.nj = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_PLACE);
    whole_gang(&w, g, dec(&r, g)->units);
    sch_result_free(&r);
}

/* Quota admits the whole job: 2 x 2 asks for 4 GPUs against a ceiling of 3. */
static void quota_admits_the_whole_job(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 4, 0, 0);
    w_node(&w, 4, 0, 0);
    int c = w_class(&w, "a100.1x", 1);
    w.projects[0].quota.v[QD_GPU_MILLI] = 3000;
    int g = w_job(&w, 0, c, 4, 2, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_NOTHING);
    assert_null(dec(&r, g)->units);
    assert_non_null(strstr(dec(&r, g)->reason, "quota_exceeded"));
    assert_non_null(strstr(dec(&r, g)->reason, "needs 4 more"));
    sch_result_free(&r);
    w.projects[0].quota.v[QD_GPU_MILLI] = 4000;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_PLACE);
    sch_result_free(&r);
}

/* One rack when a rack holds N (the tightest rack that does), else one switch, else the
 * fewest groups. */
static void topology_preference(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    /* switch 1: rack 1 {0,1}, rack 2 {2,3,4}; switch 2: rack 3 {5,6,7,8}; no labels: 9 */
    w_node(&w, 2, 1, 1);
    w_node(&w, 2, 1, 1);
    w_node(&w, 2, 2, 1);
    w_node(&w, 2, 2, 1);
    w_node(&w, 2, 2, 1);
    w_node(&w, 2, 3, 2);
    w_node(&w, 2, 3, 2);
    w_node(&w, 2, 3, 2);
    w_node(&w, 2, 3, 2);
    w_node(&w, 2, 0, 0);
    int c = w_class(&w, "a100.1x", 1);
    static const struct {
        int nodes;
        int want[6];
    } cases[] = {
        {2, {0, 1}},          /* rack 1: the tightest rack with 2 */
        {3, {2, 3, 4}},       /* rack 2: the tightest with 3 */
        {4, {5, 6, 7, 8}},    /* rack 3 */
        {5, {0, 1, 2, 3, 4}}, /* no rack has 5: switch 1 */
        {6, {0, 2, 3, 4, 5, 6}}, /* nothing has 6: the fewest racks, rack 3 (4 nodes) then 2
                                    of rack 2 - never the bare node */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        w.nj = 0;
        int g = w_job(&w, 0, c, 2 * cases[i].nodes, cases[i].nodes, 100, 1);
        round_ok(&w, &r);
        const sch_decision *d = dec(&r, g);
        assert_int_equal(d->action, SCH_DO_PLACE);
        whole_gang(&w, g, d->units);
        int got[6];
        for (int k = 0; k < cases[i].nodes; k++) got[k] = rank_node(&w, d->units, 2, k);
        /* (ranks in node order: sort the expected set) */
        int want[6];
        memcpy(want, cases[i].want, sizeof want);
        for (int a = 0; a < cases[i].nodes; a++)
            for (int b = a + 1; b < cases[i].nodes; b++)
                if (want[b] < want[a]) {
                    int x = want[a];
                    want[a] = want[b];
                    want[b] = x;
                }
        if (i == 4) {
            /* 4 of rack 3, then 2 of rack 2 (switch 1's largest rack): nodes 2-3 or 2-4 */
            int in3 = 0, in2 = 0;
            for (int k = 0; k < 6; k++) {
                in3 += got[k] >= 5 && got[k] <= 8;
                in2 += got[k] >= 2 && got[k] <= 4;
            }
            assert_int_equal(in3, 4);
            assert_int_equal(in2, 2);
        } else {
            for (int k = 0; k < cases[i].nodes; k++)
                if (got[k] != want[k])
                    fail_msg("case %zu: rank %d on node %d, expected %d", i, k, got[k], want[k]);
        }
        sch_result_free(&r);
    }
    /* a busy card takes a node out of its rack's count: rack 1 cannot hold 2 x 2 any more */
    w.nj = 0;
    w_running(&w, c, 0, 0, 100);
    int g = w_job(&w, 0, c, 4, 2, 100, 1);
    round_ok(&w, &r);
    const sch_decision *d = dec(&r, g);
    assert_int_equal(d->action, SCH_DO_PLACE);
    int r0 = rank_node(&w, d->units, 2, 0), r1 = rank_node(&w, d->units, 2, 1);
    assert_true(r0 >= 2 && r1 <= 4); /* rack 2 now: the tightest with 2 free nodes */
    sch_result_free(&r);
}

/* A job that spans nodes and may preempt stops lower-priority work on N nodes, no more than
 * it needs; the next round places it whole. */
static void preemption_frees_n_nodes(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    for (int n = 0; n < 3; n++) w_node(&w, 2, 0, 0);
    int c = w_class(&w, "a100.1x", 1);
    int low[6];
    for (int n = 0; n < 3; n++)
        for (int k = 0; k < 2; k++) low[n * 2 + k] = w_running(&w, c, n, k, 10);
    int g = w_job(&w, 0, c, 4, 2, 100, 1);
    w.jobs[g].may_preempt = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_WAIT_PREEMPT);
    int stopped = 0;
    for (int i = 0; i < 6; i++) stopped += preempted(&r, low[i]);
    assert_int_equal(stopped, 4); /* two nodes' worth, not the third */
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, g)->action, SCH_DO_PLACE);
    whole_gang(&w, g, dec(&r, g)->units);
    sch_result_free(&r);
}

/* The delta leaves a job that spans nodes to a full round. */
static void delta_defers(void **state) {
    (void)state;
    world w;
    w_init(&w);
    w_node(&w, 2, 0, 0);
    w_node(&w, 2, 0, 0);
    int c = w_class(&w, "a100.1x", 1);
    sch_delta *d;
    assert_int_equal(sch_delta_new(w_snap(&w), &d), 0);
    int g = w_job(&w, 0, c, 2, 2, 100, 1);
    sch_result r;
    assert_int_equal(sch_delta_submit(d, w_snap(&w), g, &r), 1);
    sch_delta_free(d);
}

static unsigned rnd(unsigned *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/*
 * Random clusters (2-16 nodes of 1-8 cards, some unallocatable, random racks and switches)
 * and random queues mixing jobs that span nodes with ordinary ones, priorities, preemption and
 * quotas, round after round with jobs ending: every round passes sch_check, every placement of
 * a job that spans nodes is whole (N distinct nodes, K units each, ranks in node order, every
 * unit there), and a job that is not placed holds no unit.
 */
static void property_never_partial(void **state) {
    (void)state;
    unsigned seed = 0x2545f491u;
    int gangs_placed = 0, spanning = 0;
    for (int trial = 0; trial < 150; trial++) {
        world w;
        w_init(&w);
        w.nt = 3;
        w.np = 6;
        for (int p = 0; p < 6; p++) w.projects[p].tenant = p % 3;
        int nodes = 2 + (int)(rnd(&seed) % 15);
        for (int n = 0; n < nodes; n++) {
            w_node(&w, 1 + (int)(rnd(&seed) % 8), (int)(rnd(&seed) % 4), (int)(rnd(&seed) % 3));
            if (rnd(&seed) % 6 == 0) w.gpus[w.ng - 1].allocatable = 0;
            w.nodes[n].pool = (int)(rnd(&seed) % 2);
        }
        w_class(&w, "one", 1);
        w_class(&w, "two", 2);
        if (rnd(&seed) % 2) w.pool_ok[1][1] = 0;
        for (int t = 0; t < 3; t++)
            if (rnd(&seed) % 3 == 0) w.tenants[t].quota.v[QD_GPU_MILLI] = 1000 * (2 + rnd(&seed) % 12);
        int jobs = 10 + (int)(rnd(&seed) % 60);
        for (int j = 0; j < jobs; j++) {
            int N = rnd(&seed) % 2 ? 1 + (int)(rnd(&seed) % 5) : 0;
            int K = 1 + (int)(rnd(&seed) % 4);
            int k = w_job(&w, (int)(rnd(&seed) % 6), (int)(rnd(&seed) % 2), N ? N * K : K, N,
                          (int)(rnd(&seed) % 4) * 10, j);
            w.jobs[k].may_preempt = rnd(&seed) % 3 == 0;
            w.jobs[k].preemptible = rnd(&seed) % 4 != 0;
        }
        for (int round = 0; round < 8; round++) {
            sch_result r;
            round_ok(&w, &r);
            for (int i = 0; i < r.n; i++) {
                const sch_decision *d = &r.d[i];
                const sch_job *j = &w.jobs[d->job];
                if (d->action == SCH_DO_PLACE) {
                    assert_non_null(d->units);
                    if (j->nodes > 0) {
                        whole_gang(&w, d->job, d->units);
                        gangs_placed++;
                        spanning += j->nodes > 1;
                    }
                } else if (d->units) {
                    fail_msg("trial %d: job %s holds units without a placement", trial, j->id);
                }
            }
            w_apply(&w, &r);
            sch_result_free(&r);
            /* some running jobs end (their cards free), a whole job at a time */
            for (int i = 0; i < w.nj; i++)
                if (w.jobs[i].state == SCH_RUNNING && rnd(&seed) % 4 == 0) {
                    int last = w.nj - 1;
                    w.jobs[i] = w.jobs[last];
                    memmove(w.places[i], w.places[last], sizeof w.places[i]);
                    memmove(w.ids[i], w.ids[last], sizeof w.ids[i]);
                    w.jobs[i].place = w.places[i];
                    w.jobs[i].id = w.ids[i];
                    w.nj--;
                }
            /* every running job that spans nodes is still whole */
            for (int i = 0; i < w.nj; i++)
                if (w.jobs[i].state == SCH_RUNNING && w.jobs[i].nodes > 0)
                    whole_gang(&w, i, w.jobs[i].place);
        }
    }
    /* (not vacuous: many were placed, most of them over several nodes) */
    assert_true(gangs_placed > 200);
    assert_true(spanning > 100);
}

/* `gpupool check` (job_bindings): a running job that spans nodes holds each rank on one node
 * of its own; a rank split over nodes, two ranks on one node, a missing unit are problems. */
static void check_sees_partial_gangs(void **state) {
    (void)state;
    check_job jobs[] = {{"g1", "running", 4, 2}, {"g2", "running", 4, 2}, {"g3", "running", 4, 2},
                        {"j4", "running", 2, 0}};
    static const struct {
        const char *nodes[4]; /* node of units 0-3 of g1 (the others' are fixed below) */
        int problems;
    } cases[] = {
        {{"a", "a", "b", "b"}, 0}, /* whole */
        {{"a", "b", "b", "b"}, 1}, /* rank 0 split */
        {{"a", "a", "a", "a"}, 1}, /* two ranks on one node */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        check_binding b[12];
        int nb = 0;
        char ids[12][8];
        for (int u = 0; u < 4; u++) {
            snprintf(ids[nb], 8, "b%d", nb);
            b[nb] = (check_binding){ids[nb], "g1", "gpu", "", "whole", u, 0, 0, cases[c].nodes[u]};
            nb++;
        }
        /* g2 whole on c, d; g3 misses unit 3; j4 anywhere (two units on one node is fine) */
        static const char *const g2n[] = {"c", "c", "d", "d"};
        for (int u = 0; u < 4; u++) {
            snprintf(ids[nb], 8, "b%d", nb);
            b[nb] = (check_binding){ids[nb], "g2", "gpu", "", "whole", u, 0, 0, g2n[u]};
            nb++;
        }
        for (int u = 0; u < 2; u++) {
            snprintf(ids[nb], 8, "b%d", nb);
            b[nb] = (check_binding){ids[nb], "j4", "gpu", "", "whole", u, 0, 0, "e"};
            nb++;
        }
        check_result r;
        check_result_init(&r, "job_bindings");
        check_job_bindings(jobs, 4, b, nb, &r);
        /* g3 holds no binding at all: always one problem more */
        if (r.nproblems != cases[c].problems + 1) {
            char *t = json_dumps(r.problems, 0);
            fail_msg("case %zu: %lld problems: %s", c, (long long)r.nproblems, t);
        }
        json_decref(r.problems);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shape_rules),
        cmocka_unit_test(places_k_on_each_of_n),
        cmocka_unit_test(all_or_nothing),
        cmocka_unit_test(quota_admits_the_whole_job),
        cmocka_unit_test(topology_preference),
        cmocka_unit_test(preemption_frees_n_nodes),
        cmocka_unit_test(delta_defers),
        cmocka_unit_test(property_never_partial),
        cmocka_unit_test(check_sees_partial_gangs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
