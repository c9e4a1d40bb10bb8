/*
 * test_pack.c - the packing module (src/sched/pack.h): fits, apply/release,
 * hand-made BestFit / FGD / gpupool choices with known answers, and seeded
 * property tests against a brute-force reference of the fragmentation
 * measure and of each policy's choice (no placement ever over-commits).
 */
#include "testutil.h"

#include "../../src/sched/pack.h"

#include <stdint.h>

/* ---- helpers ---- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rng_int(uint64_t *s, int lo, int hi) { /* inclusive */
    return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

static pack_task task(int64_t cpu, int64_t mem, int num, int milli, uint64_t mask) {
    pack_task t = {cpu, mem, num, milli, mask};
    return t;
}

static pack_node node(int64_t cpu, int64_t mem, int ngpu, int model) {
    pack_node n;
    assert_int_equal(pack_node_init(&n, cpu, mem, ngpu, model), PACK_OK);
    return n;
}

static pack_workload *workload(const pack_shape *sh, size_t n) {
    pack_workload *w = NULL;
    assert_int_equal(pack_workload_new(sh, n, &w), PACK_OK);
    assert_non_null(w);
    return w;
}

/* exp() without libm: exp(x) = exp(x / 2^16)^(2^16), Taylor series inside. */
static double t_exp(double x) {
    double y = x / 65536.0, term = 1, sum = 1;
    for (int k = 1; k < 12; k++) {
        term *= y / k;
        sum += term;
    }
    for (int i = 0; i < 16; i++) sum *= sum;
    return sum;
}

/* The paper's score of a fragmentation increase (milli-GPU). */
static int ref_score(double delta) { return (int)(100.0 / (1.0 + t_exp(delta / 1000.0))); }

static int ref_model_ok(uint64_t mask, int m) { return mask == 0 || ((mask >> m) & 1u); }

/* Fit by definition. */
static int ref_fits(const pack_node *n, const pack_task *t) {
    if (n->cpu_free < t->cpu_milli || n->mem_free < t->memory_mib) return 0;
    if (t->num_gpu == 0) return 1;
    int have = 0;
    for (int i = 0; i < n->ngpu; i++)
        if (n->gpu_free[i] >= t->gpu_milli && ref_model_ok(t->model_mask, n->gpu_model[i])) have++;
    return have >= t->num_gpu;
}

/* F(node) by definition (pack.h), weights normalised. */
static double ref_frag(const pack_node *n, const pack_shape *sh, size_t ns) {
    double wsum = 0, f = 0, total = 0;
    for (size_t i = 0; i < ns; i++) wsum += sh[i].weight;
    for (int g = 0; g < n->ngpu; g++) total += n->gpu_free[g];
    for (size_t i = 0; i < ns; i++) {
        const pack_task *t = &sh[i].task;
        double w = sh[i].weight / wsum, fr = 0;
        if (t->num_gpu == 0 || !ref_fits(n, t)) {
            fr = total;
        } else {
            for (int g = 0; g < n->ngpu; g++)
                if (n->gpu_free[g] < t->gpu_milli || !ref_model_ok(t->model_mask, n->gpu_model[g]))
                    fr += n->gpu_free[g];
        }
        f += w * fr;
    }
    return f;
}

static double ref_bf(const pack_node *nodes, size_t nn, const pack_node *n, const pack_task *t) {
    double cmax = 1, gmax = 1, gl = 0;
    for (size_t i = 0; i < nn; i++) {
        if (nodes[i].cpu_cap > cmax) cmax = (double)nodes[i].cpu_cap;
        if (nodes[i].ngpu * 1000.0 > gmax) gmax = nodes[i].ngpu * 1000.0;
    }
    for (int g = 0; g < n->ngpu; g++) gl += n->gpu_free[g];
    gl -= (double)t->num_gpu * t->gpu_milli;
    return (double)(n->cpu_free - t->cpu_milli) / cmax + gl / gmax;
}

/* gpupool's BestFit tie-break by definition, compared exactly: (cpu_left / cmax + gpu_left /
 * gmax) * cmax * gmax. */
static int64_t ref_bfi(const pack_node *nodes, size_t nn, const pack_node *n, const pack_task *t) {
    int64_t cmax = 1, gmax = 1, gl = 0;
    for (size_t i = 0; i < nn; i++) {
        if (nodes[i].cpu_cap > cmax) cmax = nodes[i].cpu_cap;
        if (nodes[i].ngpu * 1000 > gmax) gmax = nodes[i].ngpu * 1000;
    }
    for (int g = 0; g < n->ngpu; g++) gl += n->gpu_free[g];
    gl -= (int64_t)t->num_gpu * t->gpu_milli;
    return (n->cpu_free - t->cpu_milli) * gmax + gl * cmax;
}

/* Bound to models (pack.h): a GPU shape whose mask accepts fewer models than the GPU shapes of
 * its kind (whole, fraction) accept together, mask 0 being every model. */
static int ref_constrained(const pack_shape *sh, size_t ns) {
    for (size_t i = 0; i < ns; i++) {
        const pack_task *a = &sh[i].task;
        if (a->num_gpu == 0 || !a->model_mask) continue;
        for (size_t j = 0; j < ns; j++) {
            const pack_task *b = &sh[j].task;
            if (b->num_gpu > 0 && (b->gpu_milli == PACK_MILLI) == (a->gpu_milli == PACK_MILLI) &&
                (!b->model_mask || (b->model_mask & ~a->model_mask)))
                return 1;
        }
    }
    return 0;
}

/* Each policy's choice by brute force.  Returns 1 and fills node/gpus, or 0. */
static int ref_choose(pack_policy pol, const pack_node *nodes, size_t nn, const pack_task *t,
                      const pack_shape *sh, size_t ns, size_t *out_node, int *out_gpus) {
    int found = 0, bscore = 0, btight = 0, constrained = ref_constrained(sh, ns);
    double bbf = 0;
    int64_t bbfi = 0;
    for (size_t i = 0; i < nn; i++) {
        const pack_node *n = &nodes[i];
        if (!ref_fits(n, t)) continue;
        double bf = ref_bf(nodes, nn, n, t);
        int64_t bfi = ref_bfi(nodes, nn, n, t);
        /* candidate GPU sets on this node */
        int cand[PACK_MAX_GPUS][PACK_MAX_GPUS], ncand = 0, tight[PACK_MAX_GPUS];
        if (t->num_gpu == 0) {
            tight[ncand++] = 0;
        } else if (t->gpu_milli == PACK_MILLI) {
            int k = 0;
            for (int g = 0; g < n->ngpu && k < t->num_gpu; g++)
                if (n->gpu_free[g] == PACK_MILLI && ref_model_ok(t->model_mask, n->gpu_model[g]))
                    cand[0][k++] = g;
            tight[ncand++] = 0;
        } else {
            for (int g = 0; g < n->ngpu; g++) {
                if (n->gpu_free[g] < t->gpu_milli || !ref_model_ok(t->model_mask, n->gpu_model[g]))
                    continue;
                if (pol == PACK_BESTFIT && ncand &&
                    n->gpu_free[g] >= n->gpu_free[cand[0][0]])
                    continue; /* BestFit: only the tightest GPU (first of equals) */
                if (pol == PACK_BESTFIT) ncand = 0;
                cand[ncand][0] = g;
                tight[ncand++] = n->gpu_free[g];
            }
        }
        double fb = pol == PACK_BESTFIT ? 0 : ref_frag(n, sh, ns);
        for (int c = 0; c < ncand; c++) {
            int score = 0;
            if (pol != PACK_BESTFIT) {
                pack_node after = *n;
                after.cpu_free -= t->cpu_milli;
                after.mem_free -= t->memory_mib;
                for (int k = 0; k < t->num_gpu; k++) after.gpu_free[cand[c][k]] -= (int16_t)t->gpu_milli;
                score = ref_score(ref_frag(&after, sh, ns) - fb);
            }
            int better;
            if (!found)
                better = 1;
            else if (pol == PACK_BESTFIT)
                better = bf < bbf || (bf == bbf && tight[c] < btight);
            else if (pol == PACK_FGD)
                better = score > bscore;
            else if (t->num_gpu == 1 && t->gpu_milli < PACK_MILLI) /* gpupool, a fraction */
                better = score > bscore || (score == bscore && tight[c] < btight);
            else if (t->gpu_milli == PACK_MILLI && constrained) /* gpupool, whole, masks */
                better = score > bscore;
            else /* gpupool, whole or CPU-only */
                better = score > bscore || (score == bscore && bfi < bbfi);
            if (!better) continue;
            found = 1;
            bscore = score;
            bbf = bf;
            bbfi = bfi;
            btight = tight[c];
            *out_node = i;
            for (int k = 0; k < t->num_gpu; k++) out_gpus[k] = cand[c][k];
        }
    }
    return found;
}

static pack_task random_task(uint64_t *s, int nmodels) {
    int kind = rng_int(s, 0, 99);
    pack_task t = task(rng_int(s, 0, 16) * 1000, rng_int(s, 0, 64) * 1024, 0, 0, 0);
    if (kind < 45) {
        t.num_gpu = 1;
        t.gpu_milli = rng_int(s, 1, 99) * 10 - (rng_int(s, 0, 3) == 0 ? 5 : 0);
    } else if (kind < 85) {
        static const int nums[] = {1, 1, 1, 2, 4, 8};
        t.num_gpu = nums[rng_int(s, 0, 5)];
        t.gpu_milli = PACK_MILLI;
    }
    if (rng_int(s, 0, 9) < 3) t.model_mask = rng_next(s) & (((uint64_t)1 << nmodels) - 1);
    assert_int_equal(pack_task_check(&t), PACK_OK);
    return t;
}

static void random_cluster(uint64_t *s, pack_node *nodes, size_t nn, int nmodels) {
    for (size_t i = 0; i < nn; i++) {
        static const int gpus[] = {0, 1, 2, 4, 8, 8, 16};
        nodes[i] = node(rng_int(s, 4, 96) * 1000, rng_int(s, 16, 512) * 1024,
                        gpus[rng_int(s, 0, 6)], rng_int(s, 0, nmodels - 1));
        if (rng_int(s, 0, 3) == 0) /* a mixed-model node */
            for (int g = 0; g < nodes[i].ngpu; g++)
                nodes[i].gpu_model[g] = (uint8_t)rng_int(s, 0, nmodels - 1);
    }
}

/* Random placements (by a random policy-free choice) to reach partial states. */
static void random_fill(uint64_t *s, pack_node *nodes, size_t nn, int nmodels, int count) {
    for (int k = 0; k < count; k++) {
        pack_task t = random_task(s, nmodels);
        size_t i = (size_t)rng_int(s, 0, (int)nn - 1);
        int gpus[PACK_MAX_GPUS], have = 0;
        if (!ref_fits(&nodes[i], &t)) continue;
        for (int g = 0; g < nodes[i].ngpu && have < t.num_gpu; g++)
            if (nodes[i].gpu_free[g] >= t.gpu_milli &&
                ref_model_ok(t.model_mask, nodes[i].gpu_model[g]) && rng_int(s, 0, 2))
                gpus[have++] = g;
        if (have == t.num_gpu) assert_int_equal(pack_apply(&nodes[i], &t, gpus), PACK_OK);
    }
}

static size_t random_shapes(uint64_t *s, pack_shape *sh, size_t max, int nmodels) {
    size_t n = (size_t)rng_int(s, 1, (int)max);
    for (size_t i = 0; i < n; i++) {
        sh[i].task = random_task(s, nmodels);
        sh[i].weight = rng_int(s, 1, 5);
    }
    return n;
}

/* ---- fits ---- */

static void fits_cpu_memory(void **state) {
    (void)state;
    pack_node n = node(4000, 8192, 2, 0);
    pack_task t = task(4000, 8192, 0, 0, 0);
    assert_true(pack_fits(&n, &t));
    t.cpu_milli = 4001;
    assert_false(pack_fits(&n, &t));
    t = task(1000, 8193, 1, PACK_MILLI, 0);
    assert_false(pack_fits(&n, &t));
    t.memory_mib = 8192;
    assert_true(pack_fits(&n, &t));
    /* a GPU-less node takes CPU-only tasks only */
    pack_node cpu = node(64000, 65536, 0, 0);
    assert_true(pack_fits(&cpu, &(pack_task){1000, 1024, 0, 0, 0}));
    assert_false(pack_fits(&cpu, &(pack_task){1000, 1024, 1, 500, 0}));
    assert_false(pack_fits(NULL, &t));
}

static void fits_whole_gpus(void **state) {
    (void)state;
    pack_node n = node(64000, 65536, 4, 0);
    n.gpu_free[2] = 999; /* one GPU partly used: not whole any more */
    pack_task t = task(0, 0, 3, PACK_MILLI, 0);
    assert_true(pack_fits(&n, &t));
    t.num_gpu = 4;
    assert_false(pack_fits(&n, &t));
    n.gpu_free[2] = PACK_MILLI;
    assert_true(pack_fits(&n, &t));
    t.num_gpu = 5;
    assert_false(pack_fits(&n, &t));
}

static void fits_fractions(void **state) {
    (void)state;
    pack_node n = node(64000, 65536, 2, 0);
    n.gpu_free[0] = 300;
    n.gpu_free[1] = 0;
    pack_task t = task(0, 0, 1, 300, 0);
    assert_true(pack_fits(&n, &t));
    t.gpu_milli = 301;
    assert_false(pack_fits(&n, &t));
    /* fractions never span GPUs: 2 x 300 free is not 500 */
    n.gpu_free[1] = 300;
    t.gpu_milli = 500;
    assert_false(pack_fits(&n, &t));
}

static void fits_model_masks(void **state) {
    (void)state;
    pack_node n = node(64000, 65536, 2, 2);
    pack_task t = task(0, 0, 1, 500, (uint64_t)1 << 2);
    assert_true(pack_fits(&n, &t));
    t.model_mask = ((uint64_t)1 << 1) | ((uint64_t)1 << 3);
    assert_false(pack_fits(&n, &t));
    t.model_mask = 0; /* any */
    assert_true(pack_fits(&n, &t));
    /* mixed node: GPU 0 model 2, GPU 1 model 5; 2 whole GPUs of model 5 do not fit */
    n.gpu_model[1] = 5;
    t = task(0, 0, 2, PACK_MILLI, (uint64_t)1 << 5);
    assert_false(pack_fits(&n, &t));
    t.model_mask |= (uint64_t)1 << 2;
    assert_true(pack_fits(&n, &t));
    t = task(0, 0, 1, PACK_MILLI, (uint64_t)1 << 5);
    size_t ni = 9;
    int gpus[PACK_MAX_GPUS] = {-1};
    assert_int_equal(pack_choose(PACK_BESTFIT, &n, 1, &t, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(gpus[0], 1);
}

static void task_forms(void **state) {
    (void)state;
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 0, 0, 0}), PACK_OK);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 8, 1000, 0}), PACK_OK);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 1, 999, 0}), PACK_OK);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 2, 500, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 1, 0, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 0, 500, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 1, 1001, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(&(pack_task){1, 1, 17, 1000, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(&(pack_task){-1, 1, 0, 0, 0}), PACK_EINVAL);
    /* amounts past PACK_MAX_AMOUNT: the scores multiply them by GPU totals (fuzz_csv found
     * a node of 995108448976298893 milli-CPUs overflowing BestFit's score) */
    assert_int_equal(pack_task_check(&(pack_task){PACK_MAX_AMOUNT, PACK_MAX_AMOUNT, 0, 0, 0}),
                     PACK_OK);
    assert_int_equal(pack_task_check(&(pack_task){PACK_MAX_AMOUNT + 1, 1, 0, 0, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(&(pack_task){1, PACK_MAX_AMOUNT + 1, 0, 0, 0}), PACK_EINVAL);
    assert_int_equal(pack_task_check(NULL), PACK_EINVAL);
    assert_int_equal(pack_task_gpu_milli(&(pack_task){1, 1, 4, 1000, 0}), 4000);
    assert_int_equal(pack_task_gpu_milli(&(pack_task){1, 1, 1, 250, 0}), 250);
    pack_node n;
    assert_int_equal(pack_node_init(&n, 1000, 1000, 17, 0), PACK_EINVAL);
    assert_int_equal(pack_node_init(&n, 1000, 1000, 1, 64), PACK_EINVAL);
    assert_int_equal(pack_node_init(&n, -1, 1000, 1, 0), PACK_EINVAL);
    assert_int_equal(pack_node_init(&n, PACK_MAX_AMOUNT + 1, 1000, 1, 0), PACK_EINVAL);
    assert_int_equal(pack_node_init(&n, 1000, PACK_MAX_AMOUNT + 1, 1, 0), PACK_EINVAL);
    assert_int_equal(pack_node_init(&n, PACK_MAX_AMOUNT, PACK_MAX_AMOUNT, 1, 0), PACK_OK);
    assert_int_equal(pack_node_init(&n, 1000, 1000, 16, 63), PACK_OK);
    assert_true(pack_node_valid(&n));
    assert_int_equal(pack_node_gpu_free(&n), 16000);
    n.gpu_free[3] = 1001;
    assert_false(pack_node_valid(&n));
}

/* ---- apply / release ---- */

static void apply_release_symmetry(void **state) {
    (void)state;
    pack_node n = node(16000, 32768, 4, 1), orig = n;
    pack_task whole = task(4000, 8192, 2, PACK_MILLI, 0), frac = task(1000, 1024, 1, 400, 0);
    int g01[] = {0, 1}, g2[] = {2}, g0[] = {0};
    assert_int_equal(pack_apply(&n, &whole, g01), PACK_OK);
    assert_int_equal(n.gpu_free[0], 0);
    assert_int_equal(n.cpu_free, 12000);
    assert_int_equal(pack_apply(&n, &frac, g2), PACK_OK);
    assert_int_equal(pack_apply(&n, &frac, g2), PACK_OK);
    assert_int_equal(n.gpu_free[2], 200);
    /* refusals leave the node unchanged */
    pack_node before = n;
    assert_int_equal(pack_apply(&n, &frac, g2), PACK_EINVAL);    /* 200 < 400 */
    assert_int_equal(pack_apply(&n, &frac, g0), PACK_EINVAL);    /* GPU 0 taken */
    int g23[] = {2, 3}, g33[] = {3, 3}, g9[] = {9};
    assert_int_equal(pack_apply(&n, &whole, g23), PACK_EINVAL); /* GPU 2 not whole */
    assert_int_equal(pack_apply(&n, &whole, g33), PACK_EINVAL); /* duplicate index */
    assert_int_equal(pack_apply(&n, &frac, g9), PACK_EINVAL);   /* out of range */
    pack_task big = task(16000, 0, 0, 0, 0);
    assert_int_equal(pack_apply(&n, &big, NULL), PACK_EINVAL);  /* CPU */
    pack_task other = task(0, 0, 1, 100, (uint64_t)1 << 0);
    int g3[] = {3};
    assert_int_equal(pack_apply(&n, &other, g3), PACK_EINVAL);  /* model 1 not accepted */
    assert_memory_equal(&n, &before, sizeof n);
    /* release in any order restores the node exactly */
    assert_int_equal(pack_release(&n, &frac, g2), PACK_OK);
    assert_int_equal(pack_release(&n, &whole, g01), PACK_OK);
    assert_int_equal(pack_release(&n, &frac, g2), PACK_OK);
    assert_memory_equal(&n, &orig, sizeof n);
    /* over-release is refused */
    assert_int_equal(pack_release(&n, &frac, g2), PACK_EINVAL);
    assert_int_equal(pack_release(&n, &whole, g01), PACK_EINVAL);
    assert_memory_equal(&n, &orig, sizeof n);
}

/* ---- hand-made choices ---- */

static void bestfit_known(void **state) {
    (void)state;
    pack_node nodes[3] = {node(32000, 65536, 8, 0), node(32000, 65536, 4, 0),
                          node(32000, 65536, 4, 0)};
    nodes[1].gpu_free[0] = 0; /* node 1: 3 whole GPUs left */
    pack_task t = task(1000, 1024, 1, PACK_MILLI, 0);
    size_t ni = 99;
    int gpus[PACK_MAX_GPUS];
    assert_int_equal(pack_choose(PACK_BESTFIT, nodes, 3, &t, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    assert_int_equal(gpus[0], 1);
    /* equal GPU left: less CPU left wins */
    nodes[1].gpu_free[0] = PACK_MILLI;
    nodes[2].cpu_free = 8000;
    assert_int_equal(pack_choose(PACK_BESTFIT, nodes, 3, &t, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 2);
    /* a fraction goes on the tightest GPU that fits */
    pack_node one = node(32000, 65536, 3, 0);
    one.gpu_free[1] = 600;
    one.gpu_free[2] = 300;
    pack_task f = task(0, 0, 1, 250, 0);
    assert_int_equal(pack_choose(PACK_BESTFIT, &one, 1, &f, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], 2);
    f.gpu_milli = 301;
    assert_int_equal(pack_choose(PACK_BESTFIT, &one, 1, &f, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], 1);
    /* nothing fits */
    f.gpu_milli = 999;
    one.gpu_free[0] = 998;
    ni = 77;
    assert_int_equal(pack_choose(PACK_BESTFIT, &one, 1, &f, NULL, &ni, gpus), PACK_NOFIT);
    assert_int_equal(ni, 77);
}

/* The simulator's integer BestFit score (pack_opts.bf_integer): nodes within
 * one step tie, and a tie goes to the lowest index; without it the exact
 * score decides.  Other policies ignore the option. */
static void bestfit_integer_score(void **state) {
    (void)state;
    pack_node nodes[2] = {node(128000, 65536, 8, 0), node(128000, 65536, 8, 0)};
    nodes[1].cpu_free = 127000; /* one CPU less: below the 2.56-CPU step */
    pack_task t = task(1000, 1024, 0, 0, 0);
    pack_opts paper = {1};
    size_t ni = 99;
    int gpus[PACK_MAX_GPUS];
    assert_int_equal(pack_choose(PACK_BESTFIT, nodes, 2, &t, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    assert_int_equal(pack_choose_ex(PACK_BESTFIT, nodes, 2, &t, NULL, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    assert_int_equal(pack_choose_ex(PACK_BESTFIT, nodes, 2, &t, NULL, &paper, &ni, gpus),
                     PACK_OK);
    assert_int_equal(ni, 0);
    /* a whole step apart: the fuller node wins again (score 25 against 0) */
    nodes[1].cpu_free = 64000;
    assert_int_equal(pack_choose_ex(PACK_BESTFIT, nodes, 2, &t, NULL, &paper, &ni, gpus),
                     PACK_OK);
    assert_int_equal(ni, 1);
    /* 160 milli-GPU is one step: 40 milli apart tie, the GPU stays the tightest */
    pack_node g[2] = {node(128000, 65536, 8, 0), node(128000, 65536, 8, 0)};
    g[0].gpu_free[3] = 990;
    g[1].gpu_free[5] = 950;
    pack_task f = task(0, 0, 1, 100, 0);
    assert_int_equal(pack_choose(PACK_BESTFIT, g, 2, &f, NULL, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    assert_int_equal(gpus[0], 5);
    assert_int_equal(pack_choose_ex(PACK_BESTFIT, g, 2, &f, NULL, &paper, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(gpus[0], 3);
    /* FGD ignores the option */
    pack_shape sh[] = {{{1000, 0, 1, PACK_MILLI, 0}, 1}};
    pack_workload *w = workload(sh, 1);
    size_t a, b;
    assert_int_equal(pack_choose(PACK_FGD, g, 2, &f, w, &a, gpus), PACK_OK);
    assert_int_equal(pack_choose_ex(PACK_FGD, g, 2, &f, w, &paper, &b, gpus), PACK_OK);
    assert_int_equal(a, b);
    pack_workload_free(w);
}

static void fgd_known(void **state) {
    (void)state;
    /* Workload: 2-GPU tasks only.  A 1-GPU task on the 2-GPU node breaks its
     * pair (F 0 -> 1000, score 26); on the 3-GPU node it leaves a pair
     * (F 0 -> 0, score 50).  FGD takes node 1; BestFit the tighter node 0. */
    pack_shape pairs[] = {{{4000, 8192, 2, PACK_MILLI, 0}, 1}};
    pack_workload *w = workload(pairs, 1);
    pack_node nodes[2] = {node(32000, 65536, 2, 0), node(32000, 65536, 3, 0)};
    assert_true(pack_node_frag(&nodes[0], w) == 0);
    pack_task t = task(1000, 1024, 1, PACK_MILLI, 0);
    size_t ni;
    int gpus[PACK_MAX_GPUS];
    assert_int_equal(pack_choose(PACK_FGD, nodes, 2, &t, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    assert_int_equal(pack_choose(PACK_GPUPOOL, nodes, 2, &t, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    assert_int_equal(pack_choose(PACK_BESTFIT, nodes, 2, &t, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    nodes[0].gpu_free[1] = 0; /* node 0's single whole GPU: a fragment for pairs */
    assert_true(pack_node_frag(&nodes[0], w) == 1000.0);
    pack_workload_free(w);

    /* Workload: 600-milli fractions.  A 300 task on GPU 0 leaves 700 + 700
     * (both usable, score 50); on GPU 1 it leaves 1000 + 400 (400 is a
     * fragment, score 40).  FGD takes GPU 0; BestFit the tighter GPU 1. */
    pack_shape sixty[] = {{{0, 0, 1, 600, 0}, 1}};
    w = workload(sixty, 1);
    pack_node n = node(32000, 65536, 2, 0);
    n.gpu_free[1] = 700;
    pack_task f = task(0, 0, 1, 300, 0);
    assert_int_equal(pack_choose(PACK_FGD, &n, 1, &f, w, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], 0);
    assert_int_equal(pack_choose(PACK_BESTFIT, &n, 1, &f, w, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], 1);
    /* equal scores: FGD keeps the lowest GPU index, gpupool the tighter GPU */
    f.gpu_milli = 100; /* 900+700 or 1000+600: no fragment either way */
    assert_int_equal(pack_choose(PACK_FGD, &n, 1, &f, w, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], 0);
    assert_int_equal(pack_choose(PACK_GPUPOOL, &n, 1, &f, w, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], 1);
    /* gpupool, equal scores across nodes: a fraction goes to the tightest GPU
     * even on the emptier node; a CPU-only task to the fuller node */
    pack_node two[2] = {node(32000, 65536, 8, 0), node(32000, 65536, 2, 0)};
    two[0].gpu_free[5] = 700;
    assert_int_equal(pack_choose(PACK_FGD, two, 2, &f, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(gpus[0], 0);
    assert_int_equal(pack_choose(PACK_GPUPOOL, two, 2, &f, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(gpus[0], 5);
    pack_task c = task(1000, 1024, 0, 0, 0);
    assert_int_equal(pack_choose(PACK_FGD, two, 2, &c, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(pack_choose(PACK_GPUPOOL, two, 2, &c, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    /* whole GPUs: the fuller node, unless some shape is bound to models
     * (then the node order, like FGD) */
    pack_task one = task(1000, 1024, 1, PACK_MILLI, 0);
    two[0].gpu_free[5] = PACK_MILLI;
    assert_int_equal(pack_choose(PACK_GPUPOOL, two, 2, &one, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    pack_shape bound[] = {{{0, 0, 1, 600, 0}, 3}, {{0, 0, 1, 600, (uint64_t)1 << 1}, 1}};
    pack_workload *wb = workload(bound, 2);
    assert_int_equal(pack_choose(PACK_FGD, two, 2, &one, wb, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(pack_choose(PACK_GPUPOOL, two, 2, &one, wb, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    pack_workload_free(wb);
    /* a CPU-only task leaves the GPU indices alone */
    gpus[0] = -7;
    assert_int_equal(pack_choose(PACK_FGD, two, 2, &c, w, &ni, gpus), PACK_OK);
    assert_int_equal(gpus[0], -7);
    /* argument errors */
    assert_int_equal(pack_choose(PACK_FGD, two, 2, &c, NULL, &ni, gpus), PACK_EINVAL);
    assert_int_equal(pack_choose((pack_policy)7, two, 2, &c, w, &ni, gpus), PACK_EINVAL);
    assert_int_equal(pack_choose(PACK_FGD, two, 2, &(pack_task){0, 0, 2, 10, 0}, w, &ni, gpus),
                     PACK_EINVAL);
    assert_int_equal(pack_choose(PACK_FGD, NULL, 0, &c, w, &ni, gpus), PACK_NOFIT);
    pack_workload_free(w);
}

static void workload_from_tasks(void **state) {
    (void)state;
    pack_task a = task(1000, 1024, 1, 500, 0), b = task(2000, 2048, 1, PACK_MILLI, 0),
              c = task(500, 512, 0, 0, 0);
    pack_task list[10] = {a, b, a, c, a, b, a, a, b, a};
    pack_workload *w = NULL;
    pack_shape s;
    assert_int_equal(pack_workload_from_tasks(list, 10, 1.0, &w), PACK_OK);
    assert_int_equal(pack_workload_count(w), 3);
    assert_int_equal(pack_workload_shape(w, 0, &s), PACK_OK);
    assert_int_equal(s.task.gpu_milli, 500);
    assert_true(s.weight > 0.599 && s.weight < 0.601);
    assert_int_equal(pack_workload_shape(w, 2, &s), PACK_OK);
    assert_int_equal(s.task.num_gpu, 0);
    assert_true(s.weight > 0.099 && s.weight < 0.101);
    assert_int_equal(pack_workload_shape(w, 3, &s), PACK_EINVAL);
    pack_workload_free(w);
    assert_int_equal(pack_workload_from_tasks(list, 10, 0.9, &w), PACK_OK);
    assert_int_equal(pack_workload_count(w), 2); /* 6 + 3 of 10 */
    assert_int_equal(pack_workload_shape(w, 1, &s), PACK_OK);
    assert_true(s.weight > 0.333 && s.weight < 0.334);
    pack_workload_free(w);
    assert_int_equal(pack_workload_from_tasks(list, 10, 0.5, &w), PACK_OK);
    assert_int_equal(pack_workload_count(w), 1);
    pack_workload_free(w);
    assert_int_equal(pack_workload_from_tasks(list, 10, 0, &w), PACK_EINVAL);
    assert_null(w);
    assert_int_equal(pack_workload_from_tasks(list, 0, 1, &w), PACK_EINVAL);
    pack_shape bad[] = {{{0, 0, 1, 500, 0}, -1}};
    assert_int_equal(pack_workload_new(bad, 1, &w), PACK_EINVAL);
    bad[0].weight = 0;
    assert_int_equal(pack_workload_new(bad, 1, &w), PACK_EINVAL);
    pack_workload_free(NULL);
    pack_policy p;
    assert_int_equal(pack_policy_parse("gpupool", &p), PACK_OK);
    assert_int_equal(p, PACK_GPUPOOL);
    assert_int_equal(pack_policy_parse("fgd", &p), PACK_OK);
    assert_int_equal(p, PACK_FGD);
    assert_int_equal(pack_policy_parse("worstfit", &p), PACK_EINVAL);
    assert_string_equal(pack_policy_name(PACK_BESTFIT), "bestfit");
    assert_null(pack_policy_name((pack_policy)9));
}

/* A bound shape weighs sqrt(C_kind / C_s) with a supply, and that moves a choice: two equal
 * nodes of models 0 and 1, shapes bound to each with equal counts; model 1 is scarce. */
static void workload_supply(void **state) {
    (void)state;
    pack_node nodes[3] = {node(8000, 8192, 2, 1), node(8000, 8192, 2, 0), node(8000, 8192, 4, 0)};
    pack_supply sup;
    pack_supply_of(nodes, 3, &sup);
    assert_int_equal(sup.gpus[0], 6);
    assert_int_equal(sup.gpus[1], 2);
    assert_int_equal(sup.gpus[2], 0);
    pack_supply_of(nodes, 3, NULL); /* no-op */

    pack_shape sh[3] = {{task(1000, 1024, 2, PACK_MILLI, 0), 1},
                        {task(1000, 1024, 1, PACK_MILLI, 1u << 1), 1},
                        {task(1000, 1024, 1, PACK_MILLI, 1u << 0), 1}};
    pack_supply big = {{0}};
    big.gpus[0] = 64;
    big.gpus[1] = 4;
    pack_workload *w = NULL, *wn = NULL;
    assert_int_equal(pack_workload_new_supply(sh, 3, &big, &w), PACK_OK);
    assert_int_equal(pack_workload_new_supply(sh, 3, NULL, &wn), PACK_OK);
    /* weights 1, sqrt(68 / 4), sqrt(68 / 64), normalised (most first); without a supply 1/3 */
    pack_shape s, s1, s2;
    assert_int_equal(pack_workload_shape(w, 0, &s), PACK_OK);
    assert_int_equal(pack_workload_shape(w, 1, &s1), PACK_OK);
    assert_int_equal(pack_workload_shape(w, 2, &s2), PACK_OK);
    assert_int_equal(s.task.model_mask, 1u << 1);
    assert_int_equal(s1.task.model_mask, 1u << 0);
    assert_int_equal(s2.task.model_mask, 0);
    double r1 = s.weight / s2.weight, r0 = s1.weight / s2.weight;
    assert_true(r1 * r1 > 17 - 1e-9 && r1 * r1 < 17 + 1e-9);
    assert_true(r0 * r0 > 68.0 / 64 - 1e-9 && r0 * r0 < 68.0 / 64 + 1e-9);
    assert_true(s.weight + s1.weight + s2.weight > 1 - 1e-9 && s.weight + s1.weight + s2.weight < 1 + 1e-9);
    assert_int_equal(pack_workload_shape(wn, 0, &s), PACK_OK);
    assert_true(s.weight > 1.0 / 3 - 1e-9 && s.weight < 1.0 / 3 + 1e-9);

    /* an unbound GPU: without the supply the nodes tie (spread: the first); with it, the
     * scarce model's node is kept for the tasks bound to it */
    pack_node two[2] = {node(8000, 8192, 2, 1), node(8000, 8192, 2, 0)};
    pack_task t = task(1000, 1024, 1, PACK_MILLI, 0);
    size_t ni;
    int gpus[PACK_MAX_GPUS];
    assert_int_equal(pack_choose(PACK_GPUPOOL, two, 2, &t, wn, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 0);
    assert_int_equal(pack_choose(PACK_GPUPOOL, two, 2, &t, w, &ni, gpus), PACK_OK);
    assert_int_equal(ni, 1);
    pack_workload_free(w);
    pack_workload_free(wn);

    /* a mask that is all its kind accepts, or models the cluster lacks: unscaled */
    pack_shape sk[2] = {{task(1000, 1024, 1, PACK_MILLI, 3u), 1},
                        {task(1000, 1024, 1, 500, 1u << 5), 1}};
    assert_int_equal(pack_workload_new_supply(sk, 2, &big, &w), PACK_OK);
    assert_int_equal(pack_workload_shape(w, 0, &s), PACK_OK);
    assert_true(s.weight > 0.5 - 1e-9 && s.weight < 0.5 + 1e-9);
    pack_workload_free(w);
    /* the same list by tasks */
    pack_task list[2] = {sk[0].task, sk[1].task};
    assert_int_equal(pack_workload_from_tasks_supply(list, 2, 1.0, &big, &w), PACK_OK);
    assert_int_equal(pack_workload_count(w), 2);
    pack_workload_free(w);
    big.gpus[3] = -1;
    assert_int_equal(pack_workload_new_supply(sh, 3, &big, &w), PACK_EINVAL);
    assert_null(w);
}

/* ---- property tests ---- */

/* pack_node_frag equals the definition, with the table and without it. */
static void frag_matches_definition(void **state) {
    (void)state;
    uint64_t s = 7;
    pack_node nodes[16];
    pack_shape sh[24];
    for (int round = 0; round < 200; round++) {
        int nmodels = rng_int(&s, 1, 4);
        random_cluster(&s, nodes, 16, nmodels);
        random_fill(&s, nodes, 16, nmodels, 60);
        size_t ns = random_shapes(&s, sh, 24, nmodels);
        pack_workload *w = workload(sh, ns);
        for (int i = 0; i < 16; i++) {
            double got = pack_node_frag(&nodes[i], w), want = ref_frag(&nodes[i], sh, ns);
            assert_true(got - want < 1e-6 && want - got < 1e-6);
        }
        pack_workload_free(w);
    }
    /* 1,100 distinct CPU and memory values: too big a table, shapes scanned */
    size_t nbig = 1100;
    pack_shape *big = calloc(nbig, sizeof *big);
    assert_non_null(big);
    for (size_t i = 0; i < nbig; i++) {
        big[i].task = task((int64_t)i * 37 + 1, (int64_t)(nbig - i) * 53 + 1, 1,
                           (int)(i % 20) * 50 + 10, 0);
        if (i % 7 == 0) big[i].task = task((int64_t)i * 37 + 1, (int64_t)i * 11, 2, PACK_MILLI, 0);
        big[i].weight = 1 + (double)(i % 3);
    }
    pack_workload *w = workload(big, nbig);
    for (int round = 0; round < 20; round++) {
        random_cluster(&s, nodes, 16, 1);
        random_fill(&s, nodes, 16, 1, 60);
        for (int i = 0; i < 16; i++) {
            if (rng_int(&s, 0, 3) == 0) nodes[i].cpu_free = 0; /* no shape fits by CPU */
            double got = pack_node_frag(&nodes[i], w), want = ref_frag(&nodes[i], big, nbig);
            /* fixed-point weights: error <= shapes * 2^-41 * 16000 milli */
            assert_true(got - want < 1e-5 && want - got < 1e-5);
        }
    }
    pack_workload_free(w);
    free(big);
}

/* Every policy: the choice equals the brute-force reference, it fits, it
 * applies, no node is ever over-committed, NOFIT only when nothing fits,
 * and releasing everything restores the cluster exactly. */
static void choices_never_overcommit(void **state) {
    (void)state;
    uint64_t s = 42;
    enum { NN = 12, NT = 150 };
    pack_node nodes[NN], orig[NN];
    pack_shape sh[12];
    pack_task placed[NT];
    size_t where[NT];
    int gpus[NT][PACK_MAX_GPUS];
    for (int round = 0; round < 60; round++) {
        int nmodels = rng_int(&s, 1, 3);
        random_cluster(&s, orig, NN, nmodels);
        size_t ns = random_shapes(&s, sh, 12, nmodels);
        pack_workload *w = workload(sh, ns);
        for (int p = 0; p < PACK_NPOLICIES; p++) {
            uint64_t ts = s; /* same tasks for every policy */
            memcpy(nodes, orig, sizeof nodes);
            int64_t alloc_cpu = 0, alloc_gpu = 0;
            int np = 0;
            for (int k = 0; k < NT; k++) {
                pack_task t = random_task(&ts, nmodels);
                size_t ni = 1000, rn = 2000;
                int g[PACK_MAX_GPUS], rg[PACK_MAX_GPUS];
                int rc = pack_choose((pack_policy)p, nodes, NN, &t, w, &ni, g);
                int found = ref_choose((pack_policy)p, nodes, NN, &t, sh, ns, &rn, rg);
                if (rc == PACK_NOFIT) {
                    assert_false(found);
                    for (int i = 0; i < NN; i++) assert_false(pack_fits(&nodes[i], &t));
                    continue;
                }
                assert_int_equal(rc, PACK_OK);
                assert_true(found);
                assert_int_equal(ni, rn);
                for (int q = 0; q < t.num_gpu; q++) assert_int_equal(g[q], rg[q]);
                assert_true(ni < NN);
                assert_true(pack_fits(&nodes[ni], &t));
                assert_int_equal(pack_apply(&nodes[ni], &t, g), PACK_OK);
                placed[np] = t;
                where[np] = ni;
                memcpy(gpus[np++], g, sizeof g);
                alloc_cpu += t.cpu_milli;
                alloc_gpu += pack_task_gpu_milli(&t);
            }
            int64_t used_cpu = 0, used_gpu = 0;
            for (int i = 0; i < NN; i++) {
                assert_true(pack_node_valid(&nodes[i]));
                used_cpu += nodes[i].cpu_cap - nodes[i].cpu_free;
                used_gpu += (int64_t)nodes[i].ngpu * PACK_MILLI - pack_node_gpu_free(&nodes[i]);
            }
            assert_int_equal(used_cpu, alloc_cpu);
            assert_int_equal(used_gpu, alloc_gpu);
            for (int k = np - 1; k >= 0; k--)
                assert_int_equal(pack_release(&nodes[where[k]], &placed[k], gpus[k]), PACK_OK);
            assert_memory_equal(nodes, orig, sizeof nodes);
        }
        s = rng_next(&s);
        pack_workload_free(w);
    }
}

/* pack_node_key: the key pack_choose ranks nodes by, and `allow`. */
static void node_key_known(void **state) {
    (void)state;
    pack_shape one[] = {{{1000, 1024, 1, PACK_MILLI, 0}, 1}};
    pack_workload *w = workload(one, 1);
    pack_node nodes[2] = {node(32000, 65536, 4, 0), node(32000, 65536, 4, 0)};
    nodes[1].gpu_free[0] = 0; /* the fuller node: BestFit's tie-break */
    pack_norm m = {32000, 4000};
    pack_task t = task(1000, 1024, 2, PACK_MILLI, 0);
    int64_t k0, k1;
    int g[PACK_MAX_GPUS];
    assert_int_equal(pack_node_key(&nodes[0], &t, w, &m, PACK_ALL_GPUS, &k0, g), PACK_OK);
    assert_int_equal(g[0], 0);
    assert_int_equal(g[1], 1);
    assert_int_equal(pack_node_key(&nodes[1], &t, w, &m, PACK_ALL_GPUS, &k1, g), PACK_OK);
    assert_int_equal(g[0], 1);
    assert_true(k1 < k0); /* same score; (31000 * 4000 + 1000 * 32000) < (31000 * 4000 + 2000 * 32000) */
    assert_int_equal(k0 - k1, (int64_t)1000 * 32000);
    size_t ni;
    assert_int_equal(pack_choose(PACK_GPUPOOL, nodes, 2, &t, w, &ni, g), PACK_OK);
    assert_int_equal(ni, 1);
    /* allow: only cards 2 and 3 of node 0, or a card node 1 lacks free */
    assert_int_equal(pack_node_key(&nodes[0], &t, w, &m, 0xcu, &k0, g), PACK_OK);
    assert_int_equal(g[0], 2);
    assert_int_equal(g[1], 3);
    assert_int_equal(pack_node_key(&nodes[1], &t, w, &m, 0x3u, &k1, g), PACK_NOFIT);
    pack_task f = task(0, 0, 1, 300, 0);
    nodes[0].gpu_free[1] = 400; /* the tightest card, but not allowed */
    assert_int_equal(pack_node_key(&nodes[0], &f, w, &m, PACK_ALL_GPUS, &k0, g), PACK_OK);
    assert_int_equal(g[0], 1);
    assert_int_equal(pack_node_key(&nodes[0], &f, w, &m, 0xdu, &k0, g), PACK_OK);
    assert_int_equal(g[0], 0);
    /* bad arguments */
    pack_norm bad = {0, 4000};
    assert_int_equal(pack_node_key(&nodes[0], &f, w, &bad, PACK_ALL_GPUS, &k0, g), PACK_EINVAL);
    assert_int_equal(pack_node_key(&nodes[0], &f, NULL, &m, PACK_ALL_GPUS, &k0, g), PACK_EINVAL);
    pack_task inval = task(0, 0, 2, 300, 0);
    assert_int_equal(pack_node_key(&nodes[0], &inval, w, &m, PACK_ALL_GPUS, &k0, g), PACK_EINVAL);
    pack_workload_free(w);
}

/* Bound to models is relative to the shapes of the same kind: whole-GPU shapes that all
 * accept the same models (a scheduler's classes, each on its own cards' mode) are not bound,
 * and whole GPUs still go to the fuller node; one of them accepting fewer models is. */
static void bound_is_relative(void **state) {
    (void)state;
    pack_node nodes[2] = {node(32000, 65536, 4, 0), node(32000, 65536, 4, 0)};
    nodes[1].gpu_free[0] = 0;
    pack_task t = task(1000, 1024, 1, PACK_MILLI, 0x1);
    size_t ni;
    int g[PACK_MAX_GPUS];
    pack_shape same[] = {{{1000, 1024, 1, PACK_MILLI, 0x1}, 1}, {{2000, 1024, 2, PACK_MILLI, 0x1}, 1},
                         {{1000, 1024, 1, 500, 0x4}, 1}};
    pack_workload *w = workload(same, 3);
    assert_int_equal(pack_choose(PACK_GPUPOOL, nodes, 2, &t, w, &ni, g), PACK_OK);
    assert_int_equal(ni, 1); /* BestFit */
    pack_workload_free(w);
    pack_shape bound[] = {{{1000, 1024, 1, PACK_MILLI, 0x1}, 1}, {{2000, 1024, 2, PACK_MILLI, 0x3}, 1}};
    w = workload(bound, 2);
    assert_int_equal(pack_choose(PACK_GPUPOOL, nodes, 2, &t, w, &ni, g), PACK_OK);
    assert_int_equal(ni, 0); /* spread: the first node */
    pack_workload_free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fits_cpu_memory),
        cmocka_unit_test(fits_whole_gpus),
        cmocka_unit_test(fits_fractions),
        cmocka_unit_test(fits_model_masks),
        cmocka_unit_test(task_forms),
        cmocka_unit_test(apply_release_symmetry),
        cmocka_unit_test(bestfit_known),
        cmocka_unit_test(bestfit_integer_score),
        cmocka_unit_test(fgd_known),
        cmocka_unit_test(workload_from_tasks),
        cmocka_unit_test(frag_matches_definition),
        cmocka_unit_test(choices_never_overcommit),
        cmocka_unit_test(node_key_known),
        cmocka_unit_test(bound_is_relative),
        cmocka_unit_test(workload_supply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
