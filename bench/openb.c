/*
 * openb.c - `gpupool-bench openb`: replay the Alibaba openb GPU-sharing trace
 * with the FGD paper's protocol and print the GPU allocation ratio of each
 * packing policy (src/sched/pack.h).  See bench/README.md.
 *
 * Protocol, per seed (seeds 42, 43, ... like the paper's artifact), as the
 * paper's simulator (hkust-adsl/kubernetes-scheduler-simulator) runs it
 * (--protocol artifact, the default; ob_make_list, ob_node_order):
 *   1. the nodes in a random order (the simulator's random node names and
 *      its smallest-name tie-break; pack breaks ties by the lowest index);
 *   2. every task of the trace, shuffled, then copies drawn with replacement
 *      appended (or tasks removed at random) until 130 % of the cluster's
 *      GPU capacity is asked for;
 *   3. the tasks placed in order on the empty cluster; one that fits nowhere
 *      is skipped (never retried);
 *   4. the allocation ratio at X % arrived: the mean over the tasks after
 *      which arrived GPU / capacity, rounded to a percent, is X (the
 *      artifact's analysis), for X = 100 and 130.
 * Every policy replays the same lists; figures are means over seeds.
 * bestfit and fgd run as the simulator scores them (integer BestFit score;
 * the paper's typical tasks: 95 % of the trace, keyed without memory);
 * gpupool as the scheduler runs it, on every shape of the trace, the bound ones weighed by how
 * few of the node list's GPUs they may use (pack_supply).
 * --mix-report runs all thirteen mixes against the published figures, then
 * the held-out parts against the bench's own FGD on the same lists: the six
 * mixes of the artefact with no published figure, and a grid of synthetic
 * mixes drawn from a printed seed (ob_grid).
 *
 * Randomness: splitmix64, seeded with the seed number (tasks) and a stream
 * apart from it (node order); no other source, so a run is reproducible bit
 * for bit.  Output lines on stdout, exactly:
 *   policy=NAME alloc_at_100=PCT alloc_at_130=PCT seeds=N
 * or the --mix-report tables (bench/README.md).
 * Timing and per-seed details (--verbose) go to stderr.
 */
#include "openb.h"

#include "../src/sched/pack.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OB_SEED_BASE 42

enum { OB_ARTIFACT = 0, OB_SAMPLE = 1 }; /* how the arrival list is made */
#define OB_TYPE_MAX 256

/* ---------------------------------------------------------------- */
/* the generator                                                     */

static uint64_t ob_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t ob_below(uint64_t *s, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do x = ob_next(s);
    while (x >= limit);
    return x % n;
}

/* ---------------------------------------------------------------- */
/* CSV                                                               */

/* Read a whole file; returns a NUL-terminated heap buffer or NULL. */
static char *ob_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "openb: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0) break;
    }
    if (!buf || ferror(f)) {
        fprintf(stderr, "openb: %s: read failed\n", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* Split the line at *p into fields (in place); advance *p past it.
 * Returns the number of fields, or -1 at the end of the text. */
static int ob_line(char **p, char **fields) {
    char *s = *p;
    if (*s == '\0') return -1;
    char *end = strchr(s, '\n');
    if (end) {
        *end = '\0';
        *p = end + 1;
    } else {
        *p = s + strlen(s);
    }
    size_t len = strlen(s);
    if (len && s[len - 1] == '\r') s[len - 1] = '\0';
    int n = 0;
    fields[n++] = s;
    for (char *c = s; *c; c++) {
        if (*c == ',') {
            *c = '\0';
            if (n == OB_MAX_FIELDS) return OB_MAX_FIELDS;
            fields[n++] = c + 1;
        }
    }
    return n;
}

static int ob_col(char **hdr, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(hdr[i], name) == 0) return i;
    return -1;
}

static int ob_int(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0') return -1;
    *out = v;
    return 0;
}

static int ob_model(ob_models *m, const char *name, size_t len) {
    for (int i = 0; i < m->n; i++)
        if (strlen(m->name[i]) == len && memcmp(m->name[i], name, len) == 0) return i;
    if (m->n == PACK_MAX_MODELS || len == 0 || len >= OB_NAME_MAX) return -1;
    memcpy(m->name[m->n], name, len);
    m->name[m->n][len] = '\0';
    return m->n++;
}

/* fprintf to `diag` unless it is NULL. */
static void ob_diag(FILE *diag, const char *fmt, ...) {
    va_list ap;
    if (!diag) return;
    va_start(ap, fmt);
    vfprintf(diag, fmt, ap);
    va_end(ap);
}

int ob_parse_nodes(ob_trace *tr, char *text, const char *path, FILE *diag) {
    char *p = text, *f[OB_MAX_FIELDS], *hdr[OB_MAX_FIELDS];
    int nh = ob_line(&p, hdr), rc = -1;
    int ccpu = ob_col(hdr, nh, "cpu_milli"), cmem = ob_col(hdr, nh, "memory_mib"),
        cgpu = ob_col(hdr, nh, "gpu"), cmod = ob_col(hdr, nh, "model");
    size_t cap = 1024, line = 1;
    tr->nodes = malloc(cap * sizeof *tr->nodes);
    if (ccpu < 0 || cmem < 0 || cgpu < 0 || cmod < 0) {
        ob_diag(diag, "openb: %s: need columns cpu_milli,memory_mib,gpu,model\n", path);
        goto out;
    }
    int nf;
    while (tr->nodes && (nf = ob_line(&p, f)) >= 0) {
        line++;
        if (nf == 1 && f[0][0] == '\0') continue;
        int64_t cpu, mem, ngpu;
        if (nf != nh || ob_int(f[ccpu], &cpu) || ob_int(f[cmem], &mem) || ob_int(f[cgpu], &ngpu)) {
            ob_diag(diag, "openb: %s:%zu: malformed row\n", path, line);
            goto out;
        }
        int model = ob_model(&tr->models, f[cmod], strlen(f[cmod]));
        if (tr->nnodes == cap) {
            pack_node *nn = realloc(tr->nodes, 2 * cap * sizeof *nn);
            if (!nn) {
                free(tr->nodes);
                tr->nodes = NULL;
                break;
            }
            tr->nodes = nn;
            cap *= 2;
        }
        if (model < 0 || ngpu < 0 || ngpu > PACK_MAX_GPUS ||
            pack_node_init(&tr->nodes[tr->nnodes], cpu, mem, (int)ngpu, model) != PACK_OK) {
            ob_diag(diag, "openb: %s:%zu: unsupported node\n", path, line);
            goto out;
        }
        tr->capacity += ngpu * PACK_MILLI;
        tr->nnodes++;
    }
    if (!tr->nodes) {
        ob_diag(diag, "openb: out of memory\n");
        goto out;
    }
    rc = tr->nnodes && tr->capacity ? 0 : -1;
    if (rc) ob_diag(diag, "openb: %s: no GPU nodes\n", path);
out:
    return rc;
}

int ob_parse_tasks(ob_trace *tr, char *text, const char *path, FILE *diag) {
    char *p = text, *f[OB_MAX_FIELDS], *hdr[OB_MAX_FIELDS];
    int nh = ob_line(&p, hdr), rc = -1;
    int ccpu = ob_col(hdr, nh, "cpu_milli"), cmem = ob_col(hdr, nh, "memory_mib"),
        cnum = ob_col(hdr, nh, "num_gpu"), cmil = ob_col(hdr, nh, "gpu_milli"),
        cspec = ob_col(hdr, nh, "gpu_spec"); /* optional */
    size_t cap = 1024, line = 1, skipped = 0;
    tr->tasks = malloc(cap * sizeof *tr->tasks);
    if (ccpu < 0 || cmem < 0 || cnum < 0 || cmil < 0) {
        ob_diag(diag, "openb: %s: need columns cpu_milli,memory_mib,num_gpu,gpu_milli\n", path);
        goto out;
    }
    int nf;
    while (tr->tasks && (nf = ob_line(&p, f)) >= 0) {
        line++;
        if (nf == 1 && f[0][0] == '\0') continue;
        int64_t cpu, mem, num, milli;
        if (nf != nh || ob_int(f[ccpu], &cpu) || ob_int(f[cmem], &mem) || ob_int(f[cnum], &num) ||
            ob_int(f[cmil], &milli)) {
            ob_diag(diag, "openb: %s:%zu: malformed row\n", path, line);
            goto out;
        }
        pack_task t = {cpu, mem, (int)num, num == 0 ? 0 : (int)milli, 0};
        if (num < 0 || num > PACK_MAX_GPUS || milli < 0 || milli > PACK_MILLI) t.num_gpu = -1;
        if (cspec >= 0 && f[cspec][0]) {
            for (const char *s = f[cspec]; *s;) {
                size_t len = strcspn(s, "|");
                int m = ob_model(&tr->models, s, len);
                if (m < 0) {
                    ob_diag(diag, "openb: %s:%zu: too many GPU models\n", path, line);
                    goto out;
                }
                t.model_mask |= (uint64_t)1 << m;
                s += len + (s[len] == '|');
            }
        }
        if (pack_task_check(&t) != PACK_OK) { /* e.g. several fractional GPUs */
            skipped++;
            continue;
        }
        if (tr->ntasks == cap) {
            pack_task *nt = realloc(tr->tasks, 2 * cap * sizeof *nt);
            if (!nt) {
                free(tr->tasks);
                tr->tasks = NULL;
                break;
            }
            tr->tasks = nt;
            cap *= 2;
        }
        tr->tasks[tr->ntasks++] = t;
    }
    if (!tr->tasks) {
        ob_diag(diag, "openb: out of memory\n");
        goto out;
    }
    if (skipped) ob_diag(diag, "openb: %s: %zu unsupported rows ignored\n", path, skipped);
    rc = tr->ntasks ? 0 : -1;
    if (rc) ob_diag(diag, "openb: %s: no tasks\n", path);
out:
    return rc;
}

static int ob_read_nodes(ob_trace *tr, const char *path) {
    char *text = ob_slurp(path);
    if (!text) return -1;
    int rc = ob_parse_nodes(tr, text, path, stderr);
    free(text);
    return rc;
}

static int ob_read_tasks(ob_trace *tr, const char *path) {
    char *text = ob_slurp(path);
    if (!text) return -1;
    int rc = ob_parse_tasks(tr, text, path, stderr);
    free(text);
    return rc;
}

void ob_trace_release(ob_trace *tr) {
    free(tr->nodes);
    free(tr->tasks);
    memset(tr, 0, sizeof *tr);
}

/* ---------------------------------------------------------------- */
/* the task lists                                                    */

/* A growable list of task indices. */
typedef struct ob_list {
    size_t *v;
    size_t n, cap;
} ob_list;

static int ob_push(ob_list *l, size_t x) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 4096;
        size_t *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = x;
    return 0;
}

static void ob_shuffle(ob_list *l, uint64_t *st) {
    for (size_t i = l->n; i > 1; i--) {
        size_t j = (size_t)ob_below(st, i), x = l->v[i - 1];
        l->v[i - 1] = l->v[j];
        l->v[j] = x;
    }
}

/*
 * The arrival list of one seed.  OUT: l (heap, caller frees l->v).  0 or -1
 * (no memory).
 *   OB_ARTIFACT (the paper's simulator, TunePodsByNodeTotalResource): every
 *     task of the trace, shuffled; then, when they ask for less GPU than
 *     130 % of capacity, copies of tasks drawn uniformly (with replacement)
 *     appended until the next draw's per-GPU milli would pass 130 % (the
 *     simulator's test; the draw that fails ends the list); when they ask
 *     for more, tasks removed uniformly at random until they ask for no more
 *     than 130 %.
 *   OB_SAMPLE: tasks drawn uniformly with replacement until 130 % is asked
 *     for, then shuffled (this bench's first protocol).
 */
static int ob_make_list(const ob_trace *tr, int protocol, uint64_t seed, ob_list *l) {
    uint64_t st = seed;
    int64_t req = 0, target13 = tr->capacity * 13; /* compare req * 10 with it */
    l->n = 0;
    if (protocol == OB_SAMPLE) {
        while (req * 10 < target13) {
            size_t i = (size_t)ob_below(&st, tr->ntasks);
            if (ob_push(l, i)) return -1;
            req += pack_task_gpu_milli(&tr->tasks[i]);
        }
        ob_shuffle(l, &st);
        return 0;
    }
    for (size_t i = 0; i < tr->ntasks; i++) {
        if (ob_push(l, i)) return -1;
        req += pack_task_gpu_milli(&tr->tasks[i]);
    }
    ob_shuffle(l, &st);
    if (req * 10 <= target13) {
        for (;;) {
            size_t i = (size_t)ob_below(&st, tr->ntasks);
            if ((req + tr->tasks[i].gpu_milli) * 10 > target13) break;
            if (ob_push(l, i)) return -1;
            req += pack_task_gpu_milli(&tr->tasks[i]);
        }
    } else {
        while (req * 10 > target13 && l->n) {
            size_t k = (size_t)ob_below(&st, l->n);
            req -= pack_task_gpu_milli(&tr->tasks[l->v[k]]);
            memmove(&l->v[k], &l->v[k + 1], (l->n - k - 1) * sizeof *l->v);
            l->n--;
        }
    }
    return 0;
}

/*
 * The order in which the nodes are offered to pack_choose, which breaks ties
 * by the lowest index.  OB_ARTIFACT: a random permutation per seed, as the
 * simulator names its nodes "NNNN-<name>" with NNNN from a random
 * permutation and its patched kube-scheduler takes the smallest name among
 * the best-scoring nodes.  OB_SAMPLE: the file's order.
 */
static void ob_node_order(const ob_trace *tr, int protocol, uint64_t seed, pack_node *base) {
    memcpy(base, tr->nodes, tr->nnodes * sizeof *base);
    if (protocol != OB_ARTIFACT) return;
    uint64_t st = seed ^ 0x6e6f646573ull; /* "nodes": a stream apart from the tasks' */
    for (size_t i = tr->nnodes; i > 1; i--) {
        size_t j = (size_t)ob_below(&st, i);
        pack_node x = base[i - 1];
        base[i - 1] = base[j];
        base[j] = x;
    }
}

/* ---------------------------------------------------------------- */
/* the replay                                                        */

/* A policy as the bench runs it: pack's policy, its options, its workload. */
typedef struct ob_runner {
    pack_policy pol;
    int paper;                /* BestFit's integer score, as the simulator's plugin */
    const pack_workload *w;
} ob_runner;

/* What a replay placed so far, for --verbose: [0] CPU-only tasks, [1] GPU tasks. */
typedef struct ob_tally {
    int64_t cpu[2]; /* milli-CPU placed */
    long failed[2];
    int64_t failed_gpu; /* milli-GPU of the GPU tasks that found no place */
    int64_t lost_form[3][2]; /* milli-GPU lost by form (fraction, one, several) and bound */
} ob_tally;

/*
 * --verbose: where the idle GPU is when the replay reaches 100 % arrived and at its end.  The
 * free GPU (in GPUs) by the CPU its node has left (< 2, < 4, < 8, < 16, >= 16 cores), the free
 * CPU (cores) on nodes with no free GPU and on the others, and the CPU placed and tasks lost
 * of each kind: CPU-heavy mixes strand GPUs on nodes whose CPU is gone (bench/README.md).
 * Then the idle GPU by model (whole GPUs and remnants of partly used ones) and the GPU lost by
 * form and binding: mixes with many model-bound tasks lose them when the few GPUs of their
 * models went to unbound tasks.
 */
static void ob_strand_report(FILE *f, const ob_trace *tr, const pack_node *nodes, pack_policy pol,
                             int64_t pct, double ratio, const ob_tally *t) {
    static const int64_t edge[4] = {2000, 4000, 8000, 16000};
    int64_t gpu_by_cpu[5] = {0}, cpu_nogpu = 0, cpu_gpu = 0;
    for (size_t i = 0; i < tr->nnodes; i++) {
        int64_t fg = pack_node_gpu_free(&nodes[i]), c = nodes[i].cpu_free;
        if (fg == 0) {
            cpu_nogpu += c;
            continue;
        }
        cpu_gpu += c;
        int b = 0;
        while (b < 4 && c >= edge[b]) b++;
        gpu_by_cpu[b] += fg;
    }
    fprintf(f,
            "openb: %s at %lld%% arrived: alloc=%.2f idle GPUs by their node's free cores "
            "<2:%.0f <4:%.0f <8:%.0f <16:%.0f >=16:%.0f; free cores on nodes without/with "
            "free GPU %.0f/%.0f; placed cores CPU-only/GPU tasks %.0f/%.0f; lost tasks "
            "CPU-only/GPU %ld/%ld (%.0f GPUs)\n",
            pack_policy_name(pol), (long long)pct, ratio, gpu_by_cpu[0] / 1e3, gpu_by_cpu[1] / 1e3,
            gpu_by_cpu[2] / 1e3, gpu_by_cpu[3] / 1e3, gpu_by_cpu[4] / 1e3, cpu_nogpu / 1e3,
            cpu_gpu / 1e3, t->cpu[0] / 1e3, t->cpu[1] / 1e3, t->failed[0], t->failed[1],
            t->failed_gpu / 1e3);
    /* the idle GPU by model (whole GPUs free / in remnants), and the lost GPU by form */
    int64_t whole[PACK_MAX_MODELS] = {0}, part[PACK_MAX_MODELS] = {0};
    for (size_t i = 0; i < tr->nnodes; i++)
        for (int g = 0; g < nodes[i].ngpu; g++) {
            int fr = nodes[i].gpu_free[g];
            if (fr == PACK_MILLI)
                whole[nodes[i].gpu_model[g]] += fr;
            else
                part[nodes[i].gpu_model[g]] += fr;
        }
    fprintf(f, "openb: %s at %lld%% arrived: idle GPUs by model (whole+remnants):",
            pack_policy_name(pol), (long long)pct);
    for (int m = 0; m < tr->models.n; m++)
        if (whole[m] || part[m])
            fprintf(f, " %s %.0f+%.0f", tr->models.name[m], whole[m] / 1e3, part[m] / 1e3);
    fprintf(f, "; lost GPUs fraction/one/several (unbound+bound) %.0f+%.0f %.0f+%.0f %.0f+%.0f\n",
            t->lost_form[0][0] / 1e3, t->lost_form[0][1] / 1e3, t->lost_form[1][0] / 1e3,
            t->lost_form[1][1] / 1e3, t->lost_form[2][0] / 1e3, t->lost_form[2][1] / 1e3);
}

/*
 * One replay.  OUT: ratios at 100 % and 130 % arrived, *placements (calls
 * of pack_choose).  The ratio at X % is read as the paper's analysis does:
 * after each task, arrived and allocated GPU are logged; the figure is the
 * mean allocation ratio over the tasks after which arrived / capacity,
 * rounded to a whole percent, is X (over X - 1 .. X + 1 when no task lands
 * there).  `diag` (NULL: none) gets ob_strand_report at 100 % arrived and at
 * the end.  0, or -1 on an internal error (a placement that does not apply).
 */
static int ob_replay(const ob_trace *tr, const pack_node *base, pack_node *nodes, const ob_list *l,
                     const ob_runner *r, FILE *diag, double *at100, double *at130) {
    memcpy(nodes, base, tr->nnodes * sizeof *nodes);
    int64_t arrived = 0, alloc = 0;
    pack_opts o = {r->paper && r->pol == PACK_BESTFIT};
    double sum[2][2] = {{0}}; /* [100/130][exact, +-1] */
    long cnt[2][2] = {{0}};
    ob_tally tally = {0};
    int at100_seen = 0;
    for (size_t k = 0; k < l->n; k++) {
        const pack_task *t = &tr->tasks[l->v[k]];
        size_t ni;
        int gpus[PACK_MAX_GPUS];
        arrived += pack_task_gpu_milli(t);
        int rc = pack_choose_ex(r->pol, nodes, tr->nnodes, t, r->w, &o, &ni, gpus);
        if (rc == PACK_OK) {
            if (pack_apply(&nodes[ni], t, gpus) != PACK_OK) {
                fprintf(stderr, "openb: %s chose a placement that does not apply\n",
                        pack_policy_name(r->pol));
                return -1;
            }
            alloc += pack_task_gpu_milli(t);
            tally.cpu[t->num_gpu > 0] += t->cpu_milli;
        } else if (rc == PACK_NOFIT) {
            tally.failed[t->num_gpu > 0]++;
            tally.failed_gpu += pack_task_gpu_milli(t);
            if (t->num_gpu > 0)
                tally.lost_form[t->gpu_milli < PACK_MILLI ? 0 : t->num_gpu == 1 ? 1 : 2]
                               [t->model_mask != 0] += pack_task_gpu_milli(t);
        } else {
            fprintf(stderr, "openb: pack_choose failed (%d)\n", rc);
            return -1;
        }
        /* percent arrived, rounded half up: floor((200 * arrived + cap) / (2 * cap)) */
        int64_t pct = (200 * arrived + tr->capacity) / (2 * tr->capacity);
        double ratio = 100.0 * (double)alloc / (double)tr->capacity;
        for (int x = 0; x < 2; x++) {
            int64_t want = x ? 130 : 100;
            if (pct == want) sum[x][0] += ratio, cnt[x][0]++;
            if (pct >= want - 1 && pct <= want + 1) sum[x][1] += ratio, cnt[x][1]++;
        }
        if (k + 1 == l->n && !cnt[1][1]) sum[1][1] = ratio, cnt[1][1] = 1; /* short list */
        if (diag && (k + 1 == l->n || (pct == 100 && !at100_seen))) {
            at100_seen = 1;
            ob_strand_report(diag, tr, nodes, r->pol, pct, ratio, &tally);
        }
    }
    double *out[2] = {at100, at130};
    for (int x = 0; x < 2; x++) {
        if (cnt[x][0])
            *out[x] = sum[x][0] / (double)cnt[x][0];
        else if (cnt[x][1])
            *out[x] = sum[x][1] / (double)cnt[x][1];
        else
            *out[x] = 100.0 * (double)alloc / (double)tr->capacity;
    }
    return 0;
}

static double ob_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- */
/* workloads                                                         */

/* A typical task of the paper's simulator while it is counted. */
typedef struct ob_typical {
    pack_task t;           /* memory_mib 0 */
    long count;
    char type[OB_TYPE_MAX]; /* the models of gpu_spec, "A|B" in model-id order; "" for any */
} ob_typical;

static int ob_cmp_key(const void *pa, const void *pb) {
    const ob_typical *a = pa, *b = pb;
#define OB_CMP(f) \
    if (a->t.f != b->t.f) return a->t.f < b->t.f ? -1 : 1
    OB_CMP(cpu_milli);
    OB_CMP(gpu_milli);
    OB_CMP(num_gpu);
    OB_CMP(model_mask);
#undef OB_CMP
    return 0;
}

/* The simulator's order (SortTargetPodInDecreasingCount): count descending,
 * then its PodResource.Less reversed: CPU, per-GPU milli, GPU count, GPU type
 * string, all descending. */
static int ob_cmp_popular(const void *pa, const void *pb) {
    const ob_typical *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    if (a->t.cpu_milli != b->t.cpu_milli) return a->t.cpu_milli > b->t.cpu_milli ? -1 : 1;
    if (a->t.gpu_milli != b->t.gpu_milli) return a->t.gpu_milli > b->t.gpu_milli ? -1 : 1;
    if (a->t.num_gpu != b->t.num_gpu) return a->t.num_gpu > b->t.num_gpu ? -1 : 1;
    return -strcmp(a->type, b->type);
}

/*
 * The FGD paper's typical tasks (its simulator's GetTypicalPods, with the
 * artifact's settings): the trace's tasks keyed by CPU, per-GPU milli, GPU
 * count and accepted GPU models (memory is not part of the key, and the
 * simulator's fragmentation never looks at memory), in the order above,
 * taken until they cover `coverage` of the tasks (the artifact: 95 %),
 * CPU-only tasks included, weighted by count.
 */
static int ob_paper_workload(const ob_trace *tr, double coverage, pack_workload **out) {
    ob_typical *ty = calloc(tr->ntasks, sizeof *ty);
    pack_shape *sh = calloc(tr->ntasks, sizeof *sh);
    int rc = PACK_ENOMEM;
    if (!ty || !sh) goto out;
    for (size_t i = 0; i < tr->ntasks; i++) {
        ty[i].t = tr->tasks[i];
        ty[i].t.memory_mib = 0;
        ty[i].count = 1;
    }
    qsort(ty, tr->ntasks, sizeof *ty, ob_cmp_key);
    size_t n = 0;
    for (size_t i = 0; i < tr->ntasks; i++) {
        if (n && ob_cmp_key(&ty[i], &ty[n - 1]) == 0) {
            ty[n - 1].count++;
            continue;
        }
        ty[n] = ty[i];
        size_t len = 0;
        for (int m = 0; m < tr->models.n; m++) {
            if (!((ty[n].t.model_mask >> m) & 1u)) continue;
            int w = snprintf(ty[n].type + len, sizeof ty[n].type - len, "%s%s", len ? "|" : "",
                             tr->models.name[m]);
            if (w < 0 || (size_t)w >= sizeof ty[n].type - len) break; /* cut: order only */
            len += (size_t)w;
        }
        n++;
    }
    qsort(ty, n, sizeof *ty, ob_cmp_popular);
    double want = coverage * (double)tr->ntasks, have = 0;
    size_t keep = 0;
    while (keep < n && have < want) {
        sh[keep].task = ty[keep].t;
        sh[keep].weight = (double)ty[keep].count;
        have += (double)ty[keep++].count;
    }
    rc = pack_workload_new(sh, keep, out);
out:
    free(ty);
    free(sh);
    return rc;
}

/* ---------------------------------------------------------------- */
/* one trace                                                         */

#define OB_NMIX 13

/* The published figures (shared/data/openb/README.md: the artifact's
 * expected_results/analysis_allo_discrete.csv, seeds 42-51). */
static const struct ob_published {
    const char *mix;
    double bf100, bf130, fgd100, fgd130;
} ob_published[OB_NMIX] = {
    {"default", 92.86, 93.08, 95.23, 95.39},    {"cpu050", 93.56, 93.79, 95.00, 95.21},
    {"cpu100", 93.26, 93.44, 95.21, 95.35},     {"cpu200", 92.15, 92.40, 94.82, 95.05},
    {"gpushare40", 91.44, 91.69, 93.96, 94.15}, {"gpushare60", 89.06, 89.36, 91.25, 91.40},
    {"gpushare80", 86.66, 87.01, 89.08, 89.31}, {"gpuspec10", 93.10, 93.31, 94.66, 94.95},
    {"gpuspec20", 88.46, 93.30, 94.66, 94.84},  {"gpuspec25", 85.67, 93.23, 93.91, 94.74},
    {"multigpu20", 93.73, 93.93, 95.53, 95.65}, {"multigpu30", 94.57, 94.72, 96.36, 96.46},
    {"multigpu40", 95.10, 95.23, 96.91, 96.99},
};

typedef struct ob_cfg {
    long seeds;
    int protocol;    /* OB_ARTIFACT or OB_SAMPLE */
    double coverage; /* FGD's typical tasks */
    int npol;
    pack_policy pols[PACK_NPOLICIES];
    int verbose;
    long grid;          /* --mix-report: points of the held-out grid (0: none) */
    uint64_t grid_seed; /* the grid's draw */
    int grid_only;      /* --mix-report: the grid alone */
    long grid_point;    /* --mix-report: replay only this point of the grid (-1: all) */
} ob_cfg;

/* Results of one trace: per policy, means over seeds, and time. */
typedef struct ob_result {
    double a100[PACK_NPOLICIES], a130[PACK_NPOLICIES], secs[PACK_NPOLICIES];
    long placements[PACK_NPOLICIES];
} ob_result;

/* Replay a loaded trace under cfg (`tasks_path` names it in messages).  0 or -1 (message
 * printed). */
static int ob_run_loaded(const ob_trace *trp, const char *tasks_path, const ob_cfg *cfg,
                         ob_result *res) {
    int status = -1;
    const ob_trace tr = *trp;
    pack_workload *wpaper = NULL, *wpool = NULL;
    pack_node *nodes = NULL, *base = NULL;
    ob_list list = {0};
    memset(res, 0, sizeof *res);
    int rc = ob_paper_workload(&tr, cfg->coverage, &wpaper);
    pack_supply supply; /* gpupool weighs bound shapes by the GPUs they may use (pack.h) */
    pack_supply_of(tr.nodes, tr.nnodes, &supply);
    if (rc == PACK_OK) rc = pack_workload_from_tasks_supply(tr.tasks, tr.ntasks, 1.0, &supply, &wpool);
    nodes = malloc(tr.nnodes * sizeof *nodes);
    base = malloc(tr.nnodes * sizeof *base);
    if (rc != PACK_OK || !nodes || !base) {
        fprintf(stderr, "openb: cannot build the workload (%d)\n", rc);
        goto out;
    }
    if (cfg->verbose)
        fprintf(stderr, "openb: %zu nodes, %lld milli-GPU, %zu tasks, %zu typical tasks (FGD)\n",
                tr.nnodes, (long long)tr.capacity, tr.ntasks, pack_workload_count(wpaper));
    for (long s = 0; s < cfg->seeds; s++) {
        uint64_t seed = (uint64_t)(OB_SEED_BASE + s);
        if (ob_make_list(&tr, cfg->protocol, seed, &list)) {
            fprintf(stderr, "openb: out of memory\n");
            goto out;
        }
        ob_node_order(&tr, cfg->protocol, seed, base);
        for (int p = 0; p < cfg->npol; p++) {
            pack_policy pol = cfg->pols[p];
            ob_runner r = {pol, pol != PACK_GPUPOOL, pol == PACK_GPUPOOL ? wpool : wpaper};
            double a100 = 0, a130 = 0, ts = ob_now();
            if (ob_replay(&tr, base, nodes, &list, &r, cfg->verbose ? stderr : NULL, &a100, &a130))
                goto out;
            double dt = ob_now() - ts;
            res->secs[p] += dt;
            res->placements[p] += (long)list.n;
            res->a100[p] += a100 / (double)cfg->seeds;
            res->a130[p] += a130 / (double)cfg->seeds;
            if (cfg->verbose)
                fprintf(stderr,
                        "openb: %s seed=%llu policy=%s tasks=%zu alloc_at_100=%.2f "
                        "alloc_at_130=%.2f (%.2f s)\n",
                        tasks_path, (unsigned long long)seed, pack_policy_name(pol), list.n, a100,
                        a130, dt);
        }
    }
    status = 0;
out:
    free(list.v);
    free(nodes);
    free(base);
    pack_workload_free(wpaper);
    pack_workload_free(wpool);
    return status;
}

/* Replay one node file + task file under cfg.  0 or -1 (message printed). */
static int ob_run_trace(const char *nodes_path, const char *tasks_path, const ob_cfg *cfg,
                        ob_result *res) {
    ob_trace tr = {0};
    int status = -1;
    memset(res, 0, sizeof *res);
    if (!ob_read_nodes(&tr, nodes_path) && !ob_read_tasks(&tr, tasks_path))
        status = ob_run_loaded(&tr, tasks_path, cfg, res);
    ob_trace_release(&tr);
    return status;
}

/* ---------------------------------------------------------------- */
/* the mix report                                                    */

/* The mixes of the artefact with no published figure (shared/data/openb/README.md): gpupool
 * against the bench's own FGD on the same lists. */
#define OB_NNEW 6
static const char *const ob_new_mixes[OB_NNEW] = {"cpu037",     "cpu072",   "cpu235",
                                                  "cpu300",     "gpushare20", "gpuspec05"};

/* fgd and gpupool only (the held-out parts compare those two), as cfg otherwise. */
static ob_cfg ob_pair_cfg(const ob_cfg *cfg) {
    ob_cfg c = *cfg;
    c.npol = 2;
    c.pols[0] = PACK_FGD;
    c.pols[1] = PACK_GPUPOOL;
    return c;
}

/*
 * The held-out grid.  Every pod list of data_dir (the thirteen mixes and the six) is pooled
 * by kind: CPU-only tasks; GPU tasks by form (a fraction, one whole GPU, several) and by
 * whether gpu_spec binds them to models.  Each of cfg->grid points is a synthetic mix of
 * OB_GRID_TASKS tasks drawn (with replacement) from the pools, with four shares drawn from
 * the grid seed as a Latin hypercube over OB_GRID_RANGES (each share's range cut into `grid`
 * strata, one point per stratum, strata paired at random): the CPU-only share of the tasks,
 * and of the GPU tasks the fraction share, the multi-GPU share (the rest whole single GPUs)
 * and the bound share (a bound task of the same form; an unbound one when the pools have none).
 * Each point is then replayed like a published mix (same protocol, seeds, node order) with
 * fgd (its typical tasks from the synthetic list) and gpupool (every shape of the list).
 * The seed is printed; a run without --grid-seed draws a fresh one, so the grid is never
 * the one a policy was tuned on.  Prints a line per point and the worst margin.  0 or 1.
 */
#define OB_GRID_TASKS 8000
static const double OB_GRID_RANGES[4][2] = {
    {0.02, 0.35}, /* CPU-only share of all tasks (default 0.13, cpu300 0.30) */
    {0.10, 0.85}, /* fraction share of the GPU tasks (default 0.44) */
    {0.00, 0.40}, /* multi-GPU share of the GPU tasks (default 0.01, multigpu40 ~0.4) */
    {0.00, 0.30}, /* bound (gpu_spec) share of the GPU tasks (gpuspec25 ~0.25) */
};

enum { OB_P_CPU, OB_P_FRAC, OB_P_ONE, OB_P_MULTI, OB_NPOOL }; /* x2: unbound, bound */

static int ob_pool_of(const pack_task *t) {
    if (t->num_gpu == 0) return OB_P_CPU;
    if (t->gpu_milli < PACK_MILLI) return OB_P_FRAC;
    return t->num_gpu == 1 ? OB_P_ONE : OB_P_MULTI;
}

static int ob_grid(const char *data_dir, const ob_cfg *cfg, double *worst) {
    char path[4096];
    int status = 1;
    ob_trace all = {0};
    ob_list pool[OB_NPOOL][2] = {{{0}}};
    pack_task *syn = malloc(OB_GRID_TASKS * sizeof *syn);
    long K = cfg->grid;
    int *strata = malloc(4 * (size_t)K * sizeof *strata);
    if (!syn || !strata) goto out;
    snprintf(path, sizeof path, "%s/openb_node_list_gpu_node.csv", data_dir);
    if (ob_read_nodes(&all, path)) goto out;
    /* every pod list there: the thirteen and the six */
    for (int m = 0; m < OB_NMIX + OB_NNEW; m++) {
        ob_trace one = {0};
        one.models = all.models; /* the same model ids in every file */
        snprintf(path, sizeof path, "%s/openb_pod_list_%s.csv", data_dir,
                 m < OB_NMIX ? ob_published[m].mix : ob_new_mixes[m - OB_NMIX]);
        char *text = ob_slurp(path);
        int rc = text ? ob_parse_tasks(&one, text, path, NULL) : -1;
        free(text);
        if (rc) {
            ob_trace_release(&one);
            goto out;
        }
        all.models = one.models;
        pack_task *nt = realloc(all.tasks, (all.ntasks + one.ntasks) * sizeof *nt);
        if (!nt) {
            ob_trace_release(&one);
            goto out;
        }
        all.tasks = nt;
        memcpy(all.tasks + all.ntasks, one.tasks, one.ntasks * sizeof *nt);
        all.ntasks += one.ntasks;
        ob_trace_release(&one);
    }
    for (size_t i = 0; i < all.ntasks; i++)
        if (ob_push(&pool[ob_pool_of(&all.tasks[i])][all.tasks[i].model_mask != 0], i)) goto out;
    uint64_t gst = cfg->grid_seed;
    for (int d = 0; d < 4; d++) { /* Latin hypercube: a permutation of the strata per share */
        for (long k = 0; k < K; k++) strata[d * K + k] = (int)k;
        for (long k = K; k > 1; k--) {
            long j = (long)ob_below(&gst, (uint64_t)k);
            int x = strata[d * K + k - 1];
            strata[d * K + k - 1] = strata[d * K + j];
            strata[d * K + j] = x;
        }
    }
    ob_cfg pc = ob_pair_cfg(cfg);
    printf("%-5s %5s %5s %5s %5s   %8s %8s %6s   %8s %8s %6s\n", "grid", "cpu", "frac", "multi",
           "bound", "gpupool", "fgd", "diff", "@130", "fgd", "diff");
    for (long k = 0; k < K; k++) {
        double share[4];
        for (int d = 0; d < 4; d++) {
            double u = (double)(ob_next(&gst) >> 11) / 9007199254740992.0; /* [0, 1) */
            share[d] = OB_GRID_RANGES[d][0] + (OB_GRID_RANGES[d][1] - OB_GRID_RANGES[d][0]) *
                                                  ((double)strata[d * K + k] + u) / (double)K;
        }
        uint64_t st = cfg->grid_seed ^ (0x67726964ull + (uint64_t)k * 0x9e3779b97f4a7c15ull);
        long got[4] = {0}, ngpu = 0;
        for (size_t i = 0; i < OB_GRID_TASKS; i++) {
            double u = (double)(ob_next(&st) >> 11) / 9007199254740992.0;
            int kind = OB_P_CPU, bound = 0;
            if (u >= share[0]) {
                double v = (double)(ob_next(&st) >> 11) / 9007199254740992.0;
                kind = v < share[1] ? OB_P_FRAC : v < share[1] + share[2] ? OB_P_MULTI : OB_P_ONE;
                if (kind == OB_P_MULTI && !pool[OB_P_MULTI][0].n && !pool[OB_P_MULTI][1].n)
                    kind = OB_P_ONE;
                bound = (double)(ob_next(&st) >> 11) / 9007199254740992.0 < share[3] &&
                        pool[kind][1].n;
                if (!pool[kind][bound].n) bound = !bound;
            }
            const ob_list *pl = &pool[kind][bound];
            if (!pl->n) goto out; /* no task of that kind at all */
            syn[i] = all.tasks[pl->v[ob_below(&st, pl->n)]];
            if (kind == OB_P_CPU) {
                got[0]++;
            } else {
                ngpu++;
                got[1] += kind == OB_P_FRAC;
                got[2] += kind == OB_P_MULTI;
                got[3] += syn[i].model_mask != 0;
            }
        }
        if (cfg->grid_point >= 0 && k != cfg->grid_point) continue; /* drawn, not replayed */
        ob_trace tr = all;
        tr.tasks = syn;
        tr.ntasks = OB_GRID_TASKS;
        ob_result res;
        char name[64];
        snprintf(name, sizeof name, "grid point %ld", k);
        if (ob_run_loaded(&tr, name, &pc, &res)) goto out;
        double d100 = res.a100[1] - res.a100[0], d130 = res.a130[1] - res.a130[0];
        double g = ngpu ? (double)ngpu : 1;
        printf("%-5ld %5.2f %5.2f %5.2f %5.2f   %8.2f %8.2f %+6.2f   %8.2f %8.2f %+6.2f\n", k,
               (double)got[0] / OB_GRID_TASKS, (double)got[1] / g, (double)got[2] / g,
               (double)got[3] / g, res.a100[1], res.a100[0], d100, res.a130[1], res.a130[0], d130);
        fflush(stdout);
        if (d100 < *worst) *worst = d100;
        if (d130 < *worst) *worst = d130;
    }
    status = 0;
out:
    if (status) fprintf(stderr, "openb: the held-out grid cannot be built from %s\n", data_dir);
    for (int k = 0; k < OB_NPOOL; k++) free(pool[k][0].v), free(pool[k][1].v);
    free(syn);
    free(strata);
    ob_trace_release(&all);
    return status;
}

/* Every mix of data_dir under cfg, against the published figures; then the six mixes with no
 * published figure and the held-out grid against the bench's FGD.  Exit status: 0, or 1 when
 * a trace cannot be run. */
static int ob_mix_report(const char *data_dir, const ob_cfg *cfg) {
    char np[4096], tp[4096];
    double worst_fgd = 0, worst_bf = 0, min_margin = 1e9, new_margin = 1e9, grid_margin = 1e9;
    double secs[PACK_NPOLICIES] = {0};
    long placed[PACK_NPOLICIES] = {0};
    snprintf(np, sizeof np, "%s/openb_node_list_gpu_node.csv", data_dir);
    if (cfg->grid_only) goto grid;
    printf("%-11s %-8s %8s %8s %6s   %8s %8s %6s\n", "mix", "policy", "ours@100", "paper",
           "diff", "ours@130", "paper", "diff");
    for (int m = 0; m < OB_NMIX; m++) {
        const struct ob_published *pb = &ob_published[m];
        ob_result res;
        snprintf(tp, sizeof tp, "%s/openb_pod_list_%s.csv", data_dir, pb->mix);
        if (ob_run_trace(np, tp, cfg, &res)) return 1;
        for (int p = 0; p < cfg->npol; p++) {
            pack_policy pol = cfg->pols[p];
            /* BestFit against the paper's BestFit; FGD and gpupool against its FGD */
            double p100 = pol == PACK_BESTFIT ? pb->bf100 : pb->fgd100;
            double p130 = pol == PACK_BESTFIT ? pb->bf130 : pb->fgd130;
            double d100 = res.a100[p] - p100, d130 = res.a130[p] - p130;
            printf("%-11s %-8s %8.2f %8.2f %+6.2f   %8.2f %8.2f %+6.2f\n", pb->mix,
                   pack_policy_name(pol), res.a100[p], p100, d100, res.a130[p], p130, d130);
            double w = fabs(d100) > fabs(d130) ? fabs(d100) : fabs(d130);
            if (pol == PACK_BESTFIT && w > worst_bf) worst_bf = w;
            if (pol == PACK_FGD && w > worst_fgd) worst_fgd = w;
            if (pol == PACK_GPUPOOL) {
                if (d100 < min_margin) min_margin = d100;
                if (d130 < min_margin) min_margin = d130;
            }
            secs[p] += res.secs[p];
            placed[p] += res.placements[p];
        }
        fflush(stdout);
    }
    printf("seeds=%ld protocol=%s", cfg->seeds, cfg->protocol == OB_ARTIFACT ? "artifact" : "sample");
    for (int p = 0; p < cfg->npol; p++) {
        pack_policy pol = cfg->pols[p];
        if (pol == PACK_BESTFIT) printf(" bestfit_max_abs_diff=%.2f", worst_bf);
        if (pol == PACK_FGD) printf(" fgd_max_abs_diff=%.2f", worst_fgd);
        if (pol == PACK_GPUPOOL) printf(" gpupool_min_margin=%+.2f", min_margin);
    }
    printf("\n");
    for (int p = 0; p < cfg->npol; p++)
        printf("policy=%s us_per_placement=%.1f placements=%ld\n", pack_policy_name(cfg->pols[p]),
               placed[p] ? 1e6 * secs[p] / (double)placed[p] : 0.0, placed[p]);

    /* the six mixes with no published figure: gpupool against the bench's FGD */
    ob_cfg pc = ob_pair_cfg(cfg);
    printf("%-11s %8s %8s %6s   %8s %8s %6s\n", "held-out", "gpupool", "fgd", "diff", "@130",
           "fgd", "diff");
    for (int m = 0; m < OB_NNEW; m++) {
        ob_result res;
        snprintf(tp, sizeof tp, "%s/openb_pod_list_%s.csv", data_dir, ob_new_mixes[m]);
        if (ob_run_trace(np, tp, &pc, &res)) return 1;
        double d100 = res.a100[1] - res.a100[0], d130 = res.a130[1] - res.a130[0];
        printf("%-11s %8.2f %8.2f %+6.2f   %8.2f %8.2f %+6.2f\n", ob_new_mixes[m], res.a100[1],
               res.a100[0], d100, res.a130[1], res.a130[0], d130);
        fflush(stdout);
        if (d100 < new_margin) new_margin = d100;
        if (d130 < new_margin) new_margin = d130;
    }
    printf("seeds=%ld heldout_mixes_min_margin=%+.2f\n", cfg->seeds, new_margin);
grid:
    if (cfg->grid > 0) {
        if (ob_grid(data_dir, cfg, &grid_margin)) return 1;
        printf("seeds=%ld grid_points=%ld grid_seed=%llu grid_min_margin=%+.2f\n", cfg->seeds,
               cfg->grid, (unsigned long long)cfg->grid_seed, grid_margin);
    }
    return 0;
}

/* ---------------------------------------------------------------- */
/* the command                                                       */

static void ob_usage(FILE *f) {
    fprintf(f,
            "usage: gpupool-bench openb --nodes FILE --tasks FILE [options]\n"
            "       gpupool-bench openb --mix-report [--data DIR] [options]\n"
            "  --nodes       node list CSV (sn,cpu_milli,memory_mib,gpu,model)\n"
            "  --tasks       pod list CSV (cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...])\n"
            "  --mix-report  every mix of --data against the paper's published figures\n"
            "  --data        folder of the openb files (default ../shared/data/openb)\n"
            "  --seeds       number of seeds, 42.. (default 10)\n"
            "  --policy      bestfit, fgd, gpupool or all (default all)\n"
            "  --protocol    artifact (the paper's simulator, default) or sample\n"
            "  --coverage    share of the trace's tasks FGD's typical tasks cover (default 0.95)\n"
            "  --grid        --mix-report: points of the held-out grid (default 8; 0: none)\n"
            "  --grid-seed   --mix-report: the grid's seed (default: a fresh one, printed)\n"
            "  --grid-only   --mix-report: the held-out grid alone\n"
            "  --grid-point  --mix-report: replay only point K of the grid (all are drawn)\n"
            "  --verbose     per-seed figures and timing on stderr\n");
}

int bench_openb(int argc, char **argv) {
    const char *nodes_path = NULL, *tasks_path = NULL, *policy = "all",
               *data_dir = "../shared/data/openb";
    ob_cfg cfg = {10, OB_ARTIFACT, 0.95, 0, {0}, 0, 8, 0, 0, -1};
    int mix_report = 0, grid_seed_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            ob_usage(stdout);
            return 0;
        } else if (strcmp(a, "--verbose") == 0) {
            cfg.verbose = 1;
            continue;
        } else if (strcmp(a, "--mix-report") == 0) {
            mix_report = 1;
            continue;
        } else if (strcmp(a, "--grid-only") == 0) {
            cfg.grid_only = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "openb: %s needs a value\n", a);
            ob_usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--nodes") == 0) {
            nodes_path = v;
        } else if (strcmp(a, "--tasks") == 0) {
            tasks_path = v;
        } else if (strcmp(a, "--data") == 0) {
            data_dir = v;
        } else if (strcmp(a, "--policy") == 0) {
            policy = v;
        } else if (strcmp(a, "--protocol") == 0) {
            if (strcmp(v, "artifact") == 0) {
                cfg.protocol = OB_ARTIFACT;
            } else if (strcmp(v, "sample") == 0) {
                cfg.protocol = OB_SAMPLE;
            } else {
                fprintf(stderr, "openb: bad --protocol '%s' (artifact, sample)\n", v);
                return 2;
            }
        } else if (strcmp(a, "--seeds") == 0) {
            cfg.seeds = strtol(v, &end, 10);
            if (*end || cfg.seeds < 1 || cfg.seeds > 100000) {
                fprintf(stderr, "openb: bad --seeds '%s'\n", v);
                return 2;
            }
        } else if (strcmp(a, "--grid") == 0) {
            cfg.grid = strtol(v, &end, 10);
            if (*end || cfg.grid < 0 || cfg.grid > 10000) {
                fprintf(stderr, "openb: bad --grid '%s' (0..10000)\n", v);
                return 2;
            }
        } else if (strcmp(a, "--grid-point") == 0) {
            cfg.grid_point = strtol(v, &end, 10);
            if (*end || cfg.grid_point < 0 || cfg.grid_point > 10000) {
                fprintf(stderr, "openb: bad --grid-point '%s' (0..10000)\n", v);
                return 2;
            }
        } else if (strcmp(a, "--grid-seed") == 0) {
            errno = 0;
            cfg.grid_seed = strtoull(v, &end, 10);
            if (*end || errno || !*v || *v == '-') {
                fprintf(stderr, "openb: bad --grid-seed '%s'\n", v);
                return 2;
            }
            grid_seed_set = 1;
        } else if (strcmp(a, "--coverage") == 0) {
            cfg.coverage = strtod(v, &end);
            if (*end || !(cfg.coverage > 0) || cfg.coverage > 1) {
                fprintf(stderr, "openb: bad --coverage '%s' (0 < X <= 1)\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "openb: unknown option '%s'\n", a);
            ob_usage(stderr);
            return 2;
        }
    }
    if (!mix_report && (!nodes_path || !tasks_path)) {
        ob_usage(stderr);
        return 2;
    }
    if (strcmp(policy, "all") == 0) {
        for (int p = 0; p < PACK_NPOLICIES; p++) cfg.pols[cfg.npol++] = (pack_policy)p;
    } else if (pack_policy_parse(policy, &cfg.pols[0]) == PACK_OK) {
        cfg.npol = 1;
    } else {
        fprintf(stderr, "openb: unknown policy '%s' (bestfit, fgd, gpupool, all)\n", policy);
        return 2;
    }

    double t0 = ob_now();
    if (!grid_seed_set) { /* a fresh grid: from the clock, printed with the figures */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        cfg.grid_seed = ob_next(&x) % 1000000;
    }
    if (mix_report) {
        int rc = ob_mix_report(data_dir, &cfg);
        fprintf(stderr, "openb: mix report: %.1f s\n", ob_now() - t0);
        return rc;
    }
    ob_result res;
    if (ob_run_trace(nodes_path, tasks_path, &cfg, &res)) return 1;
    for (int p = 0; p < cfg.npol; p++) {
        printf("policy=%s alloc_at_100=%.2f alloc_at_130=%.2f seeds=%ld\n",
               pack_policy_name(cfg.pols[p]), res.a100[p], res.a130[p], cfg.seeds);
        if (cfg.verbose)
            fprintf(stderr, "openb: policy=%s %.2f s, %.1f us per placement\n",
                    pack_policy_name(cfg.pols[p]), res.secs[p],
                    res.placements[p] ? 1e6 * res.secs[p] / (double)res.placements[p] : 0.0);
    }
    fflush(stdout);
    fprintf(stderr, "openb: %s: %.1f s\n", tasks_path, ob_now() - t0);
    return 0;
}
