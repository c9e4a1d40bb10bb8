/*
 * pack.c - packing policies for whole and fractional GPU requests: BestFit,
 * FGD (fragmentation gradient descent) and gpupool's own FGD variant.
 * Read pack.h first: the model, the formulas and the ownership rules.
 *
 * How F(node) is computed fast.  For a GPU shape s of demand class c =
 * (gpu_milli m, num_gpu k, model mask), let U_c(node) be the free capacity of
 * the node's accepted GPUs with free >= m when there are at least k of them,
 * else 0 (the GPUs a task of class c could use).  Then
 *     frag_s = T - U_c   if s fits by CPU and memory,   frag_s = T otherwise
 * (T: the node's total free GPU), so with W the total weight
 *     F(node) = T * W - sum_c U_c * W_c(cpu_free, mem_free)
 * where W_c(C, M) is the weight of class c's shapes with cpu <= C and
 * memory <= M.  W_c is precomputed for every (rank of C, rank of M) in a
 * table (a 2-D prefix sum over the distinct CPU and memory values of the
 * shapes); U_c for all classes comes from one sweep over the node's GPUs
 * sorted by free capacity, classes sorted by m descending.  Weights are held
 * in fixed point (PK_ONE = 2^40 for the whole workload) so that F is an exact
 * integer and ties are exact, whatever the order of evaluation.
 *
 * Scoring.  FGD's score floor(100 * sigmoid(-delta / 1000)) is a step
 * function of the increase delta; its 99 steps are a constant table
 * (pk_sig_milli, copied into each workload in fixed point), so a score is a
 * binary search and no floating-point exp() runs on the hot path.
 *
 * No globals, no I/O; the workload is read-only after pack_workload_new.
 */
#include "pack.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PK_ONE ((int64_t)1 << 40) /* fixed-point weight of the whole workload */
#define PK_TABLE_MAX ((size_t)1 << 20) /* W_c table cells; larger: scan shapes */

/*
 * FGD score steps, milli-GPU: pk_sig_milli[k-1] = 1000 * ln((100 - k) / k),
 * k = 1..99, i.e. the fragmentation increases at which
 * floor(100 * sigmoid(-delta / 1000)) steps down (generated, no libm needed).
 */
#define PK_NSIG 99
static const double pk_sig_milli[PK_NSIG] = {
    4595.119850, 3891.820298, 3476.098690, 3178.053830, 2944.438979,
    2751.535313, 2586.689344, 2442.347035, 2313.634929, 2197.224577,
    2090.741097, 1992.430165, 1900.958761, 1815.289967, 1734.601055,
    1658.228077, 1585.627264, 1516.347489, 1450.010176, 1386.294361,
    1324.925415, 1265.666373, 1208.311206, 1152.679510, 1098.612289,
    1045.968555, 994.622575, 944.461609, 895.384047, 847.297860,
    800.119300, 753.771802, 708.185058, 663.294217, 619.039208,
    575.364145, 532.216814, 489.548225, 447.312218, 405.465108,
    363.965377, 322.773392, 281.851152, 241.162057, 200.670695,
    160.342650, 120.144312, 80.042708, 40.005335, 0.000000,
    -40.005335, -80.042708, -120.144312, -160.342650, -200.670695,
    -241.162057, -281.851152, -322.773392, -363.965377, -405.465108,
    -447.312218, -489.548225, -532.216814, -575.364145, -619.039208,
    -663.294217, -708.185058, -753.771802, -800.119300, -847.297860,
    -895.384047, -944.461609, -994.622575, -1045.968555, -1098.612289,
    -1152.679510, -1208.311206, -1265.666373, -1324.925415, -1386.294361,
    -1450.010176, -1516.347489, -1585.627264, -1658.228077, -1734.601055,
    -1815.289967, -1900.958761, -1992.430165, -2090.741097, -2197.224577,
    -2313.634929, -2442.347035, -2586.689344, -2751.535313, -2944.438979,
    -3178.053830, -3476.098690, -3891.820298, -4595.119850,
};

/* A GPU demand class: shapes that need the same GPUs. */
typedef struct pk_class {
    int milli;     /* per GPU: 1..999, or PACK_MILLI */
    int num;       /* GPUs */
    uint64_t mask; /* 0 = any */
} pk_class;

/* A GPU shape reduced to what W_c needs. */
typedef struct pk_gshape {
    int64_t cpu, mem, w;
} pk_gshape;

struct pack_workload {
    size_t nshapes;
    pack_shape *shapes; /* normalised weights, most frequent first */
    int64_t wtot;       /* sum of fixed-point weights (~PK_ONE) */

    size_t nclass;
    pk_class *cls;        /* grouped by mask, m descending inside a group */
    size_t ngroup;
    uint64_t *group_mask; /* [ngroup] */
    size_t *group_start;  /* [ngroup + 1]: classes of group g */

    pk_gshape *gs;        /* GPU shapes grouped by class */
    size_t *cls_start;    /* [nclass + 1]: shapes of class c in gs */

    size_t ncpu, nmem;
    int64_t *cpu_vals, *mem_vals; /* distinct, ascending (GPU shapes only) */
    int64_t *table;               /* [(ncpu+1)*(nmem+1)*nclass] or NULL */

    int64_t sig[PK_NSIG];         /* pk_sig_milli in fixed point */
    int constrained;              /* some GPU shape is bound to models (pack.h) */
};

/* One GPU of a node, for sorting. */
typedef struct pk_gpu {
    int16_t free;
    uint8_t model;
    uint8_t idx;
} pk_gpu;

/* ------------------------------------------------------------------ */
/* nodes and tasks                                                     */

int pack_node_init(pack_node *node, int64_t cpu_milli, int64_t memory_mib, int ngpu, int model) {
    if (!node) return PACK_EINVAL;
    memset(node, 0, sizeof *node);
    if (cpu_milli < 0 || memory_mib < 0 || cpu_milli > PACK_MAX_AMOUNT ||
        memory_mib > PACK_MAX_AMOUNT || ngpu < 0 || ngpu > PACK_MAX_GPUS || model < 0 ||
        model >= PACK_MAX_MODELS)
        return PACK_EINVAL;
    node->cpu_cap = node->cpu_free = cpu_milli;
    node->mem_cap = node->mem_free = memory_mib;
    node->ngpu = ngpu;
    for (int i = 0; i < ngpu; i++) {
        node->gpu_free[i] = PACK_MILLI;
        node->gpu_model[i] = (uint8_t)model;
    }
    assert(pack_node_valid(node));
    return PACK_OK;
}

int pack_node_valid(const pack_node *node) {
    if (!node) return 0;
    if (node->cpu_free < 0 || node->cpu_free > node->cpu_cap || node->cpu_cap > PACK_MAX_AMOUNT)
        return 0;
    if (node->mem_free < 0 || node->mem_free > node->mem_cap || node->mem_cap > PACK_MAX_AMOUNT)
        return 0;
    if (node->ngpu < 0 || node->ngpu > PACK_MAX_GPUS) return 0;
    for (int i = 0; i < node->ngpu; i++) {
        if (node->gpu_free[i] < 0 || node->gpu_free[i] > PACK_MILLI) return 0;
        if (node->gpu_model[i] >= PACK_MAX_MODELS) return 0;
    }
    return 1;
}

int64_t pack_node_gpu_free(const pack_node *node) {
    int64_t t = 0;
    for (int i = 0; i < node->ngpu; i++) t += node->gpu_free[i];
    return t;
}

int pack_task_check(const pack_task *t) {
    if (!t || t->cpu_milli < 0 || t->memory_mib < 0 || t->cpu_milli > PACK_MAX_AMOUNT ||
        t->memory_mib > PACK_MAX_AMOUNT)
        return PACK_EINVAL;
    if (t->num_gpu == 0) return t->gpu_milli == 0 ? PACK_OK : PACK_EINVAL;
    if (t->num_gpu < 0 || t->num_gpu > PACK_MAX_GPUS) return PACK_EINVAL;
    if (t->gpu_milli == PACK_MILLI) return PACK_OK;
    if (t->num_gpu == 1 && t->gpu_milli > 0 && t->gpu_milli < PACK_MILLI) return PACK_OK;
    return PACK_EINVAL;
}

int64_t pack_task_gpu_milli(const pack_task *t) {
    if (pack_task_check(t) != PACK_OK) return 0;
    return (int64_t)t->num_gpu * t->gpu_milli;
}

static int model_ok(uint64_t mask, int model) {
    return mask == 0 || ((mask >> model) & 1u);
}

/* GPU part of the fit; the task is valid. */
static int gpus_fit(const pack_node *node, const pack_task *t) {
    if (t->num_gpu == 0) return 1;
    int have = 0;
    for (int i = 0; i < node->ngpu; i++) {
        if (node->gpu_free[i] >= t->gpu_milli && model_ok(t->model_mask, node->gpu_model[i]) &&
            ++have >= t->num_gpu)
            return 1;
    }
    return 0;
}

int pack_fits(const pack_node *node, const pack_task *t) {
    if (!node || pack_task_check(t) != PACK_OK) return 0;
    assert(pack_node_valid(node));
    if (node->cpu_free < t->cpu_milli || node->mem_free < t->memory_mib) return 0;
    return gpus_fit(node, t);
}

/* ------------------------------------------------------------------ */
/* workloads                                                           */

static int cmp_task(const pack_task *a, const pack_task *b) {
#define PK_CMP(f) \
    if (a->f != b->f) return a->f < b->f ? -1 : 1
    PK_CMP(num_gpu);
    PK_CMP(gpu_milli);
    PK_CMP(cpu_milli);
    PK_CMP(memory_mib);
    PK_CMP(model_mask);
#undef PK_CMP
    return 0;
}

/* Most frequent first; equal weights in task order (deterministic). */
static int cmp_shape_desc(const void *pa, const void *pb) {
    const pack_shape *a = pa, *b = pb;
    if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
    return cmp_task(&a->task, &b->task);
}

/* Classes: by mask, then m descending, then num ascending. */
static int cmp_class(const void *pa, const void *pb) {
    const pk_class *a = pa, *b = pb;
    if (a->mask != b->mask) return a->mask < b->mask ? -1 : 1;
    if (a->milli != b->milli) return a->milli > b->milli ? -1 : 1;
    if (a->num != b->num) return a->num < b->num ? -1 : 1;
    return 0;
}

static int cmp_i64(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Sort and deduplicate in place; returns the new count. */
static size_t uniq_i64(int64_t *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_i64);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[k - 1]) v[k++] = v[i];
    return k;
}

/* Number of values in v[0..n-1] (ascending) that are <= x. */
static size_t rank_le(const int64_t *v, size_t n, int64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t class_of(const pack_workload *w, const pack_task *t) {
    pk_class key = {t->gpu_milli, t->num_gpu, t->model_mask};
    size_t lo = 0, hi = w->nclass;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_class(&w->cls[mid], &key);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert(!"class not found");
    return 0;
}

void pack_workload_free(pack_workload *w) {
    if (!w) return;
    free(w->shapes);
    free(w->cls);
    free(w->group_mask);
    free(w->group_start);
    free(w->gs);
    free(w->cls_start);
    free(w->cpu_vals);
    free(w->mem_vals);
    free(w->table);
    free(w);
}

/* Classes, groups, GPU shapes by class; w->shapes is set. */
static int build_classes(pack_workload *w, const int64_t *wfix) {
    size_t ng = 0;
    for (size_t i = 0; i < w->nshapes; i++) ng += w->shapes[i].task.num_gpu > 0;
    w->cls = malloc((ng ? ng : 1) * sizeof *w->cls);
    w->gs = malloc((ng ? ng : 1) * sizeof *w->gs);
    w->cpu_vals = malloc((ng ? ng : 1) * sizeof *w->cpu_vals);
    w->mem_vals = malloc((ng ? ng : 1) * sizeof *w->mem_vals);
    if (!w->cls || !w->gs || !w->cpu_vals || !w->mem_vals) return PACK_ENOMEM;

    size_t k = 0;
    for (size_t i = 0; i < w->nshapes; i++) {
        const pack_task *t = &w->shapes[i].task;
        if (t->num_gpu == 0) continue;
        w->cls[k] = (pk_class){t->gpu_milli, t->num_gpu, t->model_mask};
        w->cpu_vals[k] = t->cpu_milli;
        w->mem_vals[k] = t->memory_mib;
        k++;
    }
    qsort(w->cls, ng, sizeof *w->cls, cmp_class);
    size_t nc = 0;
    for (size_t i = 0; i < ng; i++)
        if (nc == 0 || cmp_class(&w->cls[i], &w->cls[nc - 1]) != 0) w->cls[nc++] = w->cls[i];
    w->nclass = nc;
    w->ncpu = uniq_i64(w->cpu_vals, ng);
    w->nmem = uniq_i64(w->mem_vals, ng);

    /* mask groups */
    w->group_mask = malloc((nc ? nc : 1) * sizeof *w->group_mask);
    w->group_start = malloc((nc + 1) * sizeof *w->group_start);
    w->cls_start = calloc(nc + 1, sizeof *w->cls_start);
    if (!w->group_mask || !w->group_start || !w->cls_start) return PACK_ENOMEM;
    w->ngroup = 0;
    for (size_t c = 0; c < nc; c++) {
        if (c == 0 || w->cls[c].mask != w->cls[c - 1].mask) {
            w->group_mask[w->ngroup] = w->cls[c].mask;
            w->group_start[w->ngroup++] = c;
        }
    }
    w->group_start[w->ngroup] = nc;

    /* GPU shapes grouped by class (counting sort) */
    for (size_t i = 0; i < w->nshapes; i++)
        if (w->shapes[i].task.num_gpu > 0) w->cls_start[class_of(w, &w->shapes[i].task) + 1]++;
    for (size_t c = 0; c < nc; c++) w->cls_start[c + 1] += w->cls_start[c];
    size_t *fill = malloc((nc ? nc : 1) * sizeof *fill);
    if (!fill) return PACK_ENOMEM;
    memcpy(fill, w->cls_start, nc * sizeof *fill);
    for (size_t i = 0; i < w->nshapes; i++) {
        const pack_task *t = &w->shapes[i].task;
        if (t->num_gpu == 0) continue;
        w->gs[fill[class_of(w, t)]++] = (pk_gshape){t->cpu_milli, t->memory_mib, wfix[i]};
    }
    free(fill);
    return PACK_OK;
}

/* The W_c table, when small enough; otherwise w->table stays NULL. */
static int build_table(pack_workload *w) {
    size_t nc = w->nclass, rows = w->ncpu + 1, cols = w->nmem + 1;
    if (nc == 0 || rows > PK_TABLE_MAX / cols || rows * cols > PK_TABLE_MAX / nc) return PACK_OK;
    w->table = calloc(rows * cols * nc, sizeof *w->table);
    if (!w->table) return PACK_ENOMEM;
#define PK_CELL(r, m, c) w->table[((r) * cols + (m)) * nc + (c)]
    for (size_t c = 0; c < nc; c++) {
        for (size_t j = w->cls_start[c]; j < w->cls_start[c + 1]; j++) {
            size_t r = rank_le(w->cpu_vals, w->ncpu, w->gs[j].cpu); /* >= 1 */
            size_t m = rank_le(w->mem_vals, w->nmem, w->gs[j].mem);
            PK_CELL(r, m, c) += w->gs[j].w;
        }
    }
    /* cell (r, m) = weight of shapes with cpu rank < r and memory rank < m */
    for (size_t r = 1; r < rows; r++)
        for (size_t m = 1; m < cols; m++)
            for (size_t c = 0; c < nc; c++)
                PK_CELL(r, m, c) += PK_CELL(r - 1, m, c) + PK_CELL(r, m - 1, c) -
                                    PK_CELL(r - 1, m - 1, c);
#undef PK_CELL
    return PACK_OK;
}

/* GPUs of `supply` among the models of `mask` (0: every model). */
static int64_t supply_in(const pack_supply *supply, uint64_t mask) {
    int64_t c = 0;
    for (int m = 0; m < PACK_MAX_MODELS; m++)
        if (mask == 0 || ((mask >> m) & 1u)) c += supply->gpus[m];
    return c;
}

void pack_supply_of(const pack_node *nodes, size_t n, pack_supply *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; nodes && i < n; i++)
        for (int g = 0; g < nodes[i].ngpu; g++) out->gpus[nodes[i].gpu_model[g]]++;
}

int pack_workload_new_supply(const pack_shape *shapes, size_t n, const pack_supply *supply,
                             pack_workload **out) {
    if (!out) return PACK_EINVAL;
    *out = NULL;
    if (!shapes && n) return PACK_EINVAL;
    double sum = 0;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (pack_task_check(&shapes[i].task) != PACK_OK) return PACK_EINVAL;
        double x = shapes[i].weight;
        if (!isfinite(x) || x < 0) return PACK_EINVAL;
        sum += x;
        kept += x > 0;
    }
    if (!(sum > 0) || !isfinite(sum)) return PACK_EINVAL;
    if (supply)
        for (int m = 0; m < PACK_MAX_MODELS; m++)
            if (supply->gpus[m] < 0 || supply->gpus[m] > PACK_MAX_AMOUNT) return PACK_EINVAL;

    pack_workload *w = calloc(1, sizeof *w);
    int64_t *wfix = NULL;
    if (!w) return PACK_ENOMEM;
    w->shapes = malloc(kept * sizeof *w->shapes);
    wfix = malloc(kept * sizeof *wfix);
    if (!w->shapes || !wfix) goto nomem;
    for (size_t i = 0; i < n; i++)
        if (shapes[i].weight > 0) w->shapes[w->nshapes++] = shapes[i];
    for (int k = 0; k < PK_NSIG; k++) w->sig[k] = (int64_t)(pk_sig_milli[k] * (double)PK_ONE);
    w->wtot = 0;
    {
        /* bound to models: a GPU shape accepting fewer models than the shapes of its kind
         * (whole GPUs, fractions) do together (mask 0: every model) */
        uint64_t all[2] = {0, 0};
        for (size_t i = 0; i < w->nshapes; i++) {
            const pack_task *t = &w->shapes[i].task;
            if (t->num_gpu > 0)
                all[t->gpu_milli == PACK_MILLI] |= t->model_mask ? t->model_mask : ~0ULL;
        }
        for (size_t i = 0; i < w->nshapes; i++) {
            const pack_task *t = &w->shapes[i].task;
            if (t->num_gpu > 0 && t->model_mask && t->model_mask != all[t->gpu_milli == PACK_MILLI])
                w->constrained = 1;
        }
        /* a bound shape weighs sqrt(C_kind / C_s): C_s the cluster's GPUs it accepts, C_kind
         * those the shapes of its kind accept together (pack.h, "Scarcity") */
        sum = 0;
        for (size_t i = 0; i < w->nshapes; i++) {
            const pack_task *t = &w->shapes[i].task;
            if (supply && t->num_gpu > 0 && t->model_mask) {
                int64_t cs = supply_in(supply, t->model_mask);
                int64_t ck = supply_in(supply, all[t->gpu_milli == PACK_MILLI]);
                if (cs > 0 && ck > cs) w->shapes[i].weight *= sqrt((double)ck / (double)cs);
            }
            sum += w->shapes[i].weight;
        }
        for (size_t i = 0; i < w->nshapes; i++) w->shapes[i].weight /= sum;
    }
    qsort(w->shapes, w->nshapes, sizeof *w->shapes, cmp_shape_desc);
    for (size_t i = 0; i < w->nshapes; i++) {
        wfix[i] = (int64_t)(w->shapes[i].weight * (double)PK_ONE + 0.5);
        w->wtot += wfix[i];
    }
    int rc = build_classes(w, wfix);
    if (rc == PACK_OK) rc = build_table(w);
    free(wfix);
    if (rc != PACK_OK) {
        pack_workload_free(w);
        return rc;
    }
    *out = w;
    return PACK_OK;
nomem:
    free(wfix);
    pack_workload_free(w);
    return PACK_ENOMEM;
}

static int cmp_task_v(const void *a, const void *b) { return cmp_task(a, b); }

int pack_workload_new(const pack_shape *shapes, size_t n, pack_workload **out) {
    return pack_workload_new_supply(shapes, n, NULL, out);
}

int pack_workload_from_tasks(const pack_task *tasks, size_t n, double coverage,
                             pack_workload **out) {
    return pack_workload_from_tasks_supply(tasks, n, coverage, NULL, out);
}

int pack_workload_from_tasks_supply(const pack_task *tasks, size_t n, double coverage,
                                    const pack_supply *supply, pack_workload **out) {
    if (!out) return PACK_EINVAL;
    *out = NULL;
    if (!tasks || n == 0 || !(coverage > 0) || coverage > 1) return PACK_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (pack_task_check(&tasks[i]) != PACK_OK) return PACK_EINVAL;
    pack_task *sorted = malloc(n * sizeof *sorted);
    pack_shape *sh = malloc(n * sizeof *sh);
    if (!sorted || !sh) {
        free(sorted);
        free(sh);
        return PACK_ENOMEM;
    }
    memcpy(sorted, tasks, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_task_v);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (ns && cmp_task(&sorted[i], &sh[ns - 1].task) == 0) {
            sh[ns - 1].weight += 1;
        } else {
            sh[ns].task = sorted[i];
            sh[ns++].weight = 1;
        }
    }
    qsort(sh, ns, sizeof *sh, cmp_shape_desc);
    double want = coverage * (double)n, have = 0;
    size_t keep = 0;
    while (keep < ns && (keep == 0 || have < want - 1e-9)) have += sh[keep++].weight;
    int rc = pack_workload_new_supply(sh, keep, supply, out);
    free(sorted);
    free(sh);
    return rc;
}

size_t pack_workload_count(const pack_workload *w) { return w ? w->nshapes : 0; }

int pack_workload_shape(const pack_workload *w, size_t i, pack_shape *out) {
    if (!w || !out || i >= w->nshapes) return PACK_EINVAL;
    *out = w->shapes[i];
    return PACK_OK;
}

/* ------------------------------------------------------------------ */
/* fragmentation                                                       */

/* The node's GPUs sorted by free capacity, largest first (insertion sort). */
static void sorted_gpus(const pack_node *node, pk_gpu *g) {
    for (int i = 0; i < node->ngpu; i++) {
        pk_gpu x = {node->gpu_free[i], node->gpu_model[i], (uint8_t)i};
        int j = i;
        while (j > 0 && g[j - 1].free < x.free) {
            g[j] = g[j - 1];
            j--;
        }
        g[j] = x;
    }
}

/* W_c row for free (C, M), or NULL when the workload has no table. */
static const int64_t *table_row(const pack_workload *w, int64_t cpu, int64_t mem) {
    if (!w->table) return NULL;
    size_t r = rank_le(w->cpu_vals, w->ncpu, cpu), m = rank_le(w->mem_vals, w->nmem, mem);
    return w->table + (r * (w->nmem + 1) + m) * w->nclass;
}

/* W_c(C, M) without the table. */
static int64_t class_weight_scan(const pack_workload *w, size_t c, int64_t cpu, int64_t mem) {
    int64_t s = 0;
    for (size_t j = w->cls_start[c]; j < w->cls_start[c + 1]; j++)
        if (w->gs[j].cpu <= cpu && w->gs[j].mem <= mem) s += w->gs[j].w;
    return s;
}

/*
 * F in fixed point for a node with free (cpu, mem), GPUs g[0..n-1] sorted by
 * free descending and total free GPU `total`; row = table_row(cpu, mem).
 */
static int64_t frag_fix(const pack_workload *w, const int64_t *row, int64_t cpu, int64_t mem,
                        const pk_gpu *g, int n, int64_t total) {
    if (total == 0) return 0;
    int64_t acc = 0;
    for (size_t gi = 0; gi < w->ngroup; gi++) {
        uint64_t mask = w->group_mask[gi];
        int p = 0, cnt = 0;
        int64_t sum = 0;
        for (size_t c = w->group_start[gi]; c < w->group_start[gi + 1]; c++) {
            const pk_class *k = &w->cls[c];
            while (p < n && g[p].free >= k->milli) {
                if (model_ok(mask, g[p].model)) {
                    sum += g[p].free;
                    cnt++;
                }
                p++;
            }
            if (cnt >= k->num && sum > 0)
                acc += sum * (row ? row[c] : class_weight_scan(w, c, cpu, mem));
        }
    }
    assert(acc <= w->wtot * total);
    return w->wtot * total - acc;
}

double pack_node_frag(const pack_node *node, const pack_workload *w) {
    if (!node || !w) return 0;
    assert(pack_node_valid(node));
    pk_gpu g[PACK_MAX_GPUS];
    sorted_gpus(node, g);
    int64_t f = frag_fix(w, table_row(w, node->cpu_free, node->mem_free), node->cpu_free,
                         node->mem_free, g, node->ngpu, pack_node_gpu_free(node));
    return (double)f / (double)PK_ONE;
}

/* ------------------------------------------------------------------ */
/* decisions                                                           */

/* The best candidate so far. */
typedef struct pk_best {
    int found;
    size_t node;
    int gpus[PACK_MAX_GPUS];
    int score;     /* FGD score, 0..99, or integer BestFit score; higher is better */
    double bf;     /* BestFit score after placement, lower is better */
    int tight;     /* free milli of the chosen GPU before placement (fractions) */
    int fraction;  /* the task is a fraction of one GPU */
    int spread;    /* gpupool: ties by index, not BestFit (see pack.h) */
    int64_t bfi;   /* gpupool: BestFit after placement, exact: cpu_left * gmax + gpu_left * cmax */
} pk_best;

/*
 * The FGD score of a fragmentation increase `delta` (fixed point), as the
 * paper's simulator computes it: floor(100 * sigmoid(-delta / 1000)), delta
 * in milli-GPU.  That is the number of k in 1..99 with
 * delta <= pk_sig_milli[k-1] = 1000 * ln((100 - k) / k)
 * (w->sig holds the same steps in fixed point).
 */
static int fgd_score(const pack_workload *w, int64_t delta) {
    int lo = 0, hi = PK_NSIG; /* thresholds descend: count the prefix >= delta */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (delta <= w->sig[mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static double bestfit_score(const pack_node *node, const pack_task *t, double cmax, double gmax) {
    double cpu_left = (double)(node->cpu_free - t->cpu_milli);
    double gpu_left = (double)(pack_node_gpu_free(node) - pack_task_gpu_milli(t));
    return cpu_left / cmax + gpu_left / gmax;
}

/* The simulator's integer BestFit node score: (int)(100 * (1 - bf / 2)), 0..100. */
static int bestfit_int(double bf) {
    double x = 100.0 * (1.0 - bf / 2.0);
    return x <= 0 ? 0 : (int)x;
}

/* The first num_gpu accepted fully free GPUs among `allow` (bit i: GPU i), by index; 1 if
 * found. */
static int pick_whole(const pack_node *node, const pack_task *t, uint32_t allow, int *gpus) {
    int k = 0;
    for (int i = 0; i < node->ngpu && k < t->num_gpu; i++)
        if (((allow >> i) & 1u) && node->gpu_free[i] == PACK_MILLI &&
            model_ok(t->model_mask, node->gpu_model[i]))
            gpus[k++] = i;
    return k == t->num_gpu;
}

/*
 * Compare candidate a with b under the policy: > 0 when a is better, 0 when
 * they tie, < 0 when b is better.  `node_level`: compare as whole nodes (the
 * key the simulator's node score carries) rather than GPU by GPU.
 */
static int cmp_cand(pack_policy policy, const pack_opts *o, const pk_best *a, const pk_best *b,
                    int node_level) {
    if (policy == PACK_BESTFIT) {
        if (o && o->bf_integer) {
            if (a->score != b->score) return a->score > b->score ? 1 : -1;
            if (node_level) return 0;
        } else if (a->bf != b->bf) {
            return a->bf < b->bf ? 1 : -1;
        }
        return a->tight == b->tight ? 0 : a->tight < b->tight ? 1 : -1;
    }
    if (a->score != b->score) return a->score > b->score ? 1 : -1;
    if (policy == PACK_FGD) return 0;
    /* PACK_GPUPOOL (a and b place the same task, so fraction/spread agree) */
    if (a->fraction) return a->tight == b->tight ? 0 : a->tight < b->tight ? 1 : -1;
    if (a->spread) return 0;
    return a->bfi == b->bfi ? 0 : a->bfi < b->bfi ? 1 : -1;
}

/*
 * Keep the candidate if it beats the best of its node so far.  Candidates of
 * a node come in GPU order, so "strictly better" leaves ties to the lowest
 * index, as the simulator picks a node's GPU.
 */
static void consider(pk_best *b, pack_policy policy, const pack_opts *o, size_t node,
                     const int *gpus, int ngpus, int score, double bf, int tight) {
    pk_best c = {1, node, {0}, score, bf, tight, b->fraction, b->spread, b->bfi};
    if (b->found && cmp_cand(policy, o, &c, b, 0) <= 0) return;
    for (int i = 0; i < ngpus; i++) c.gpus[i] = gpus[i];
    *b = c;
}

/* Merge a node's best into the overall best: strictly better wins, a tie
 * stays with the lower node index (nodes come in index order). */
static void merge(pk_best *best, const pk_best *nb, pack_policy policy, const pack_opts *o) {
    if (nb->found && (!best->found || cmp_cand(policy, o, nb, best, 1) > 0)) *best = *nb;
}

/* Evaluate every placement of t on node i (it fits by CPU and memory) that uses only GPUs
 * of `allow` (bit g: GPU g) into the node's best b.  cmax, gmax: BestFit's normalisation. */
static void eval_node(pk_best *b, pack_policy policy, const pack_opts *o, const pack_node *node,
                      size_t i, const pack_task *t, const pack_workload *w, int64_t cmax,
                      int64_t gmax, uint32_t allow) {
    double bf = bestfit_score(node, t, (double)cmax, (double)gmax);
    int gpus[PACK_MAX_GPUS] = {0};
    b->fraction = t->num_gpu == 1 && t->gpu_milli < PACK_MILLI;
    b->spread = policy == PACK_GPUPOOL && t->gpu_milli == PACK_MILLI && w->constrained;
    b->bfi = (node->cpu_free - t->cpu_milli) * gmax +
             (pack_node_gpu_free(node) - pack_task_gpu_milli(t)) * cmax;

    if (policy == PACK_BESTFIT) {
        int sc = o && o->bf_integer ? bestfit_int(bf) : 0;
        if (t->num_gpu == 0) {
            consider(b, policy, o, i, gpus, 0, sc, bf, 0);
        } else if (t->gpu_milli == PACK_MILLI) {
            if (pick_whole(node, t, allow, gpus))
                consider(b, policy, o, i, gpus, t->num_gpu, sc, bf, 0);
        } else {
            int best = -1;
            for (int j = 0; j < node->ngpu; j++)
                if (((allow >> j) & 1u) && node->gpu_free[j] >= t->gpu_milli &&
                    model_ok(t->model_mask, node->gpu_model[j]) &&
                    (best < 0 || node->gpu_free[j] < node->gpu_free[best]))
                    best = j;
            if (best >= 0) {
                gpus[0] = best;
                consider(b, policy, o, i, gpus, 1, sc, bf, node->gpu_free[best]);
            }
        }
        return;
    }

    /* FGD and GPUPOOL */
    pk_gpu before[PACK_MAX_GPUS], after[PACK_MAX_GPUS];
    int n = node->ngpu;
    int64_t total = pack_node_gpu_free(node);
    int64_t cpu_a = node->cpu_free - t->cpu_milli, mem_a = node->mem_free - t->memory_mib;
    sorted_gpus(node, before);
    int64_t fb = frag_fix(w, table_row(w, node->cpu_free, node->mem_free), node->cpu_free,
                          node->mem_free, before, n, total);
    const int64_t *row_a = table_row(w, cpu_a, mem_a);

    if (t->num_gpu == 0) {
        int64_t fa = frag_fix(w, row_a, cpu_a, mem_a, before, n, total);
        consider(b, policy, o, i, gpus, 0, fgd_score(w, fa - fb), bf, 0);
    } else if (t->gpu_milli == PACK_MILLI) {
        if (!pick_whole(node, t, allow, gpus)) return;
        pack_node tmp = *node;
        for (int k = 0; k < t->num_gpu; k++) tmp.gpu_free[gpus[k]] = 0;
        sorted_gpus(&tmp, after);
        int64_t fa = frag_fix(w, row_a, cpu_a, mem_a, after, n, total - pack_task_gpu_milli(t));
        consider(b, policy, o, i, gpus, t->num_gpu, fgd_score(w, fa - fb), bf, 0);
    } else {
        int m = t->gpu_milli;
        for (int j = 0; j < n; j++) {
            int f = node->gpu_free[j];
            if (!((allow >> j) & 1u) || f < m || !model_ok(t->model_mask, node->gpu_model[j]))
                continue;
            int dup = 0; /* an equal allowed GPU (free, model) earlier: same result */
            for (int q = 0; q < j && !dup; q++)
                dup = ((allow >> q) & 1u) && node->gpu_free[q] == f &&
                      node->gpu_model[q] == node->gpu_model[j];
            if (dup) continue;
            /* after = before with GPU j reduced by m, kept sorted */
            memcpy(after, before, (size_t)n * sizeof *after);
            int p = 0;
            while (after[p].idx != j) p++;
            after[p].free = (int16_t)(f - m);
            while (p + 1 < n && after[p + 1].free > after[p].free) {
                pk_gpu x = after[p];
                after[p] = after[p + 1];
                after[p + 1] = x;
                p++;
            }
            int64_t fa = frag_fix(w, row_a, cpu_a, mem_a, after, n, total - m);
            gpus[0] = j;
            consider(b, policy, o, i, gpus, 1, fgd_score(w, fa - fb), bf, f);
        }
    }
}

/* BestFit's normalisation: the largest capacities among the nodes (at least 1). */
static pack_norm norm_of(const pack_node *nodes, size_t n) {
    pack_norm m = {1, 1};
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].cpu_cap > m.cpu_max) m.cpu_max = nodes[i].cpu_cap;
        if ((int64_t)nodes[i].ngpu * PACK_MILLI > m.gpu_max)
            m.gpu_max = (int64_t)nodes[i].ngpu * PACK_MILLI;
    }
    return m;
}

#define PK_KEY_SHIFT 42
#define PK_KEY_LOW (((int64_t)1 << PK_KEY_SHIFT) - 1)

int pack_node_key(const pack_node *node, const pack_task *task, const pack_workload *w,
                  const pack_norm *norm, uint32_t allow, int64_t *key,
                  int gpu_indices[PACK_MAX_GPUS]) {
    if (!node || !task || !w || !norm || !key || !gpu_indices || norm->cpu_max < 1 ||
        norm->gpu_max < 1 || pack_task_check(task) != PACK_OK)
        return PACK_EINVAL;
    assert(pack_node_valid(node));
    if (node->cpu_free < task->cpu_milli || node->mem_free < task->memory_mib ||
        !gpus_fit(node, task))
        return PACK_NOFIT;
    pk_best nb = {0};
    eval_node(&nb, PACK_GPUPOOL, NULL, node, 0, task, w, norm->cpu_max, norm->gpu_max, allow);
    if (!nb.found) return PACK_NOFIT;
    /* (score, then the tie-break pack.h names) as one number, lower better */
    int64_t low = nb.fraction ? nb.tight : nb.spread ? 0 : nb.bfi;
    if (low < 0) low = 0;
    if (low > PK_KEY_LOW) low = PK_KEY_LOW;
    *key = ((int64_t)(PK_NSIG - nb.score) << PK_KEY_SHIFT) | low;
    for (int k = 0; k < task->num_gpu; k++) gpu_indices[k] = nb.gpus[k];
    return PACK_OK;
}

int pack_choose_ex(pack_policy policy, const pack_node *nodes, size_t n, const pack_task *task,
                   const pack_workload *w, const pack_opts *opts, size_t *node_index,
                   int gpu_indices[PACK_MAX_GPUS]) {
    if (!node_index || !gpu_indices || (!nodes && n) || pack_task_check(task) != PACK_OK)
        return PACK_EINVAL;
    if (policy != PACK_BESTFIT && policy != PACK_FGD && policy != PACK_GPUPOOL)
        return PACK_EINVAL;
    if (policy != PACK_BESTFIT && !w) return PACK_EINVAL;
    pack_norm m = norm_of(nodes, n);

    if (policy == PACK_GPUPOOL) {
        /* the lowest key, ties to the lowest index: exactly what a caller keeping every
         * node's pack_node_key in an index finds (the scheduler) */
        int found = 0;
        int64_t best = 0;
        int gpus[PACK_MAX_GPUS];
        for (size_t i = 0; i < n; i++) {
            int64_t k;
            if (pack_node_key(&nodes[i], task, w, &m, PACK_ALL_GPUS, &k, gpus) != PACK_OK) continue;
            if (found && k >= best) continue;
            found = 1;
            best = k;
            *node_index = i;
            for (int g = 0; g < task->num_gpu; g++) gpu_indices[g] = gpus[g];
        }
        return found ? PACK_OK : PACK_NOFIT;
    }

    pk_best b = {0};
    for (size_t i = 0; i < n; i++) {
        const pack_node *node = &nodes[i];
        assert(pack_node_valid(node));
        if (node->cpu_free < task->cpu_milli || node->mem_free < task->memory_mib) continue;
        if (!gpus_fit(node, task)) continue;
        pk_best nb = {0};
        eval_node(&nb, policy, opts, node, i, task, w, m.cpu_max, m.gpu_max, PACK_ALL_GPUS);
        merge(&b, &nb, policy, opts);
    }
    if (!b.found) return PACK_NOFIT;
    *node_index = b.node;
    for (int k = 0; k < task->num_gpu; k++) gpu_indices[k] = b.gpus[k];
    return PACK_OK;
}

int pack_choose(pack_policy policy, const pack_node *nodes, size_t n, const pack_task *task,
                const pack_workload *w, size_t *node_index, int gpu_indices[PACK_MAX_GPUS]) {
    return pack_choose_ex(policy, nodes, n, task, w, NULL, node_index, gpu_indices);
}

/* ------------------------------------------------------------------ */
/* commit and undo                                                     */

/* Indices in range and distinct. */
static int indices_ok(const pack_node *node, const pack_task *t, const int *gpus) {
    if (t->num_gpu > 0 && !gpus) return 0;
    for (int k = 0; k < t->num_gpu; k++) {
        if (gpus[k] < 0 || gpus[k] >= node->ngpu) return 0;
        for (int q = 0; q < k; q++)
            if (gpus[q] == gpus[k]) return 0;
        if (!model_ok(t->model_mask, node->gpu_model[gpus[k]])) return 0;
    }
    return 1;
}

int pack_apply(pack_node *node, const pack_task *t, const int *gpus) {
    if (!node || pack_task_check(t) != PACK_OK || !pack_node_valid(node)) return PACK_EINVAL;
    if (!indices_ok(node, t, gpus)) return PACK_EINVAL;
    if (node->cpu_free < t->cpu_milli || node->mem_free < t->memory_mib) return PACK_EINVAL;
    for (int k = 0; k < t->num_gpu; k++) {
        int f = node->gpu_free[gpus[k]];
        if (t->gpu_milli == PACK_MILLI ? f != PACK_MILLI : f < t->gpu_milli) return PACK_EINVAL;
    }
    node->cpu_free -= t->cpu_milli;
    node->mem_free -= t->memory_mib;
    for (int k = 0; k < t->num_gpu; k++) node->gpu_free[gpus[k]] -= (int16_t)t->gpu_milli;
    assert(pack_node_valid(node));
    return PACK_OK;
}

int pack_release(pack_node *node, const pack_task *t, const int *gpus) {
    if (!node || pack_task_check(t) != PACK_OK || !pack_node_valid(node)) return PACK_EINVAL;
    if (!indices_ok(node, t, gpus)) return PACK_EINVAL;
    if (t->cpu_milli > node->cpu_cap - node->cpu_free ||
        t->memory_mib > node->mem_cap - node->mem_free)
        return PACK_EINVAL;
    for (int k = 0; k < t->num_gpu; k++) {
        int f = node->gpu_free[gpus[k]];
        if (t->gpu_milli == PACK_MILLI ? f != 0 : f + t->gpu_milli > PACK_MILLI) return PACK_EINVAL;
    }
    node->cpu_free += t->cpu_milli;
    node->mem_free += t->memory_mib;
    for (int k = 0; k < t->num_gpu; k++) node->gpu_free[gpus[k]] += (int16_t)t->gpu_milli;
    assert(pack_node_valid(node));
    return PACK_OK;
}

/* ------------------------------------------------------------------ */

static const char *const pk_names[PACK_NPOLICIES] = {"bestfit", "fgd", "gpupool"};

const char *pack_policy_name(pack_policy policy) {
    return (unsigned)policy < PACK_NPOLICIES ? pk_names[policy] : NULL;
}

int pack_policy_parse(const char *name, pack_policy *out) {
    if (!name || !out) return PACK_EINVAL;
    for (int i = 0; i < PACK_NPOLICIES; i++) {
        if (strcmp(name, pk_names[i]) == 0) {
            *out = (pack_policy)i;
            return PACK_OK;
        }
    }
    return PACK_EINVAL;
}
