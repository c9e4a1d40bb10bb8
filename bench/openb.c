/*
 * openb.c - `gpupool-bench openb`: replay the Alibaba openb GPU-sharing trace
 * with the FGD paper's protocol and print the GPU allocation ratio of each
 * packing policy (src/sched/pack.h).  See bench/README.md.
 *
 * Protocol, per seed (seeds 42, 43, ... like the paper's artifact):
 *   1. sample tasks from the trace uniformly with replacement until the GPU
 *      they request in all reaches 130 % of the cluster's GPU capacity;
 *   2. shuffle that list (Fisher-Yates, same generator);
 *   3. place the tasks in order on an empty cluster; a task that fits nowhere
 *      is skipped (never retried);
 *   4. read allocated GPU / capacity when the GPU requested by the tasks
 *      arrived so far (placed or skipped) first reaches 100 % of capacity,
 *      and at the end (130 %).
 * Every policy replays the same task lists; figures are means over seeds.
 * The FGD workload (typical shapes) is built from the whole trace file.
 *
 * Randomness: splitmix64, seeded with the seed number; no other source, so a
 * run is reproducible bit for bit.  Output lines on stdout, exactly:
 *   policy=NAME alloc_at_100=PCT alloc_at_130=PCT seeds=N
 * Timing and per-seed details (--verbose) go to stderr.
 */
#include "openb.h"

#include "../src/sched/pack.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OB_SEED_BASE 42

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
/* the replay                                                        */

/* Sample (with replacement) until 130 % of capacity is requested, then
 * shuffle.  OUT: *list (heap, caller frees), *len.  0 or -1 (no memory). */
static int ob_sample(const ob_trace *tr, uint64_t seed, size_t **list, size_t *len) {
    uint64_t st = seed;
    size_t cap = 4096, n = 0;
    size_t *l = malloc(cap * sizeof *l);
    int64_t req = 0;
    while (l && req * 10 < tr->capacity * 13) {
        if (n == cap) {
            size_t *nl = realloc(l, 2 * cap * sizeof *nl);
            if (!nl) {
                free(l);
                l = NULL;
                break;
            }
            l = nl;
            cap *= 2;
        }
        size_t i = (size_t)ob_below(&st, tr->ntasks);
        l[n++] = i;
        req += pack_task_gpu_milli(&tr->tasks[i]);
    }
    if (!l) return -1;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)ob_below(&st, i), x = l[i - 1];
        l[i - 1] = l[j];
        l[j] = x;
    }
    *list = l;
    *len = n;
    return 0;
}

/* One replay.  OUT: ratios at 100 % and 130 % arrived.  0, or -1 on an
 * internal error (a chosen placement that does not apply). */
static int ob_replay(const ob_trace *tr, pack_node *nodes, const size_t *list, size_t len,
                     pack_policy pol, const pack_workload *w, double *at100, double *at130) {
    memcpy(nodes, tr->nodes, tr->nnodes * sizeof *nodes);
    int64_t arrived = 0, alloc = 0;
    int seen100 = 0;
    for (size_t k = 0; k < len; k++) {
        const pack_task *t = &tr->tasks[list[k]];
        size_t ni;
        int gpus[PACK_MAX_GPUS];
        int rc = pack_choose(pol, nodes, tr->nnodes, t, w, &ni, gpus);
        if (rc == PACK_OK) {
            if (pack_apply(&nodes[ni], t, gpus) != PACK_OK) {
                fprintf(stderr, "openb: %s chose a placement that does not apply\n",
                        pack_policy_name(pol));
                return -1;
            }
            alloc += pack_task_gpu_milli(t);
        } else if (rc != PACK_NOFIT) {
            fprintf(stderr, "openb: pack_choose failed (%d)\n", rc);
            return -1;
        }
        arrived += pack_task_gpu_milli(t);
        if (!seen100 && arrived >= tr->capacity) {
            *at100 = 100.0 * (double)alloc / (double)tr->capacity;
            seen100 = 1;
        }
    }
    *at130 = 100.0 * (double)alloc / (double)tr->capacity;
    if (!seen100) *at100 = *at130;
    return 0;
}

static double ob_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void ob_usage(FILE *f) {
    fprintf(f,
            "usage: gpupool-bench openb --nodes FILE --tasks FILE [--seeds N] [--policy NAME]\n"
            "                           [--coverage X] [--verbose]\n"
            "  --nodes     node list CSV (sn,cpu_milli,memory_mib,gpu,model)\n"
            "  --tasks     pod list CSV (cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...])\n"
            "  --seeds     number of seeds, 42.. (default 10)\n"
            "  --policy    bestfit, fgd, gpupool or all (default all)\n"
            "  --coverage  share of the trace's tasks the typical shapes cover (default 1)\n"
            "  --verbose   per-seed figures and timing on stderr\n");
}

int bench_openb(int argc, char **argv) {
    const char *nodes_path = NULL, *tasks_path = NULL, *policy = "all";
    long seeds = 10;
    double coverage = 1.0;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            ob_usage(stdout);
            return 0;
        } else if (strcmp(a, "--verbose") == 0) {
            verbose = 1;
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
        } else if (strcmp(a, "--policy") == 0) {
            policy = v;
        } else if (strcmp(a, "--seeds") == 0) {
            seeds = strtol(v, &end, 10);
            if (*end || seeds < 1 || seeds > 100000) {
                fprintf(stderr, "openb: bad --seeds '%s'\n", v);
                return 2;
            }
        } else if (strcmp(a, "--coverage") == 0) {
            coverage = strtod(v, &end);
            if (*end || !(coverage > 0) || coverage > 1) {
                fprintf(stderr, "openb: bad --coverage '%s' (0 < X <= 1)\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "openb: unknown option '%s'\n", a);
            ob_usage(stderr);
            return 2;
        }
    }
    if (!nodes_path || !tasks_path) {
        ob_usage(stderr);
        return 2;
    }
    pack_policy pols[PACK_NPOLICIES];
    int npol = 0;
    if (strcmp(policy, "all") == 0) {
        for (int p = 0; p < PACK_NPOLICIES; p++) pols[npol++] = (pack_policy)p;
    } else if (pack_policy_parse(policy, &pols[0]) == PACK_OK) {
        npol = 1;
    } else {
        fprintf(stderr, "openb: unknown policy '%s' (bestfit, fgd, gpupool, all)\n", policy);
        return 2;
    }

    int status = 1;
    double t0 = ob_now();
    ob_trace tr = {0};
    pack_workload *w = NULL;
    pack_node *nodes = NULL;
    size_t *list = NULL;
    double sum100[PACK_NPOLICIES] = {0}, sum130[PACK_NPOLICIES] = {0},
           secs[PACK_NPOLICIES] = {0};
    if (ob_read_nodes(&tr, nodes_path) || ob_read_tasks(&tr, tasks_path)) goto out;
    int rc = pack_workload_from_tasks(tr.tasks, tr.ntasks, coverage, &w);
    nodes = malloc(tr.nnodes * sizeof *nodes);
    if (rc != PACK_OK || !nodes) {
        fprintf(stderr, "openb: cannot build the workload (%d)\n", rc);
        goto out;
    }
    if (verbose)
        fprintf(stderr, "openb: %zu nodes, %lld milli-GPU, %zu tasks, %zu typical shapes\n",
                tr.nnodes, (long long)tr.capacity, tr.ntasks, pack_workload_count(w));
    for (long s = 0; s < seeds; s++) {
        size_t len;
        if (ob_sample(&tr, (uint64_t)(OB_SEED_BASE + s), &list, &len)) {
            fprintf(stderr, "openb: out of memory\n");
            goto out;
        }
        for (int p = 0; p < npol; p++) {
            double a100 = 0, a130 = 0, ts = ob_now();
            if (ob_replay(&tr, nodes, list, len, pols[p], w, &a100, &a130)) goto out;
            secs[p] += ob_now() - ts;
            sum100[p] += a100;
            sum130[p] += a130;
            if (verbose)
                fprintf(stderr, "openb: seed=%ld policy=%s tasks=%zu alloc_at_100=%.2f "
                                "alloc_at_130=%.2f (%.2f s)\n",
                        OB_SEED_BASE + s, pack_policy_name(pols[p]), len, a100, a130,
                        ob_now() - ts);
        }
        free(list);
        list = NULL;
    }
    for (int p = 0; p < npol; p++) {
        printf("policy=%s alloc_at_100=%.2f alloc_at_130=%.2f seeds=%ld\n",
               pack_policy_name(pols[p]), sum100[p] / (double)seeds, sum130[p] / (double)seeds,
               seeds);
        if (verbose)
            fprintf(stderr, "openb: policy=%s %.2f s\n", pack_policy_name(pols[p]), secs[p]);
    }
    fflush(stdout);
    fprintf(stderr, "openb: %s: %.1f s\n", tasks_path, ob_now() - t0);
    status = 0;
out:
    free(list);
    free(nodes);
    pack_workload_free(w);
    free(tr.nodes);
    free(tr.tasks);
    return status;
}
