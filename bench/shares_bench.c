/*
 * shares_bench.c - `gpupool-bench shares`: guaranteed shares with borrowing
 * against hard ceilings only, on a multi-tenant replay of the openb trace.
 *
 *   gpupool-bench shares [--tasks FILE] [--tenants N] [--gpus G] [--load X]
 *                        [--round S] [--grace S] [--burst S] [--max-duration S]
 *                        [--seed N] [--verbose]
 *
 * The workload: the whole-card tasks of the openb pod list (num_gpu 1, 2, 4
 * or 8 with gpu_milli 1000), each with its duration (deletion_time -
 * creation_time, capped at --max-duration) and its arrival (creation_time).
 * Teams are busy at different times, so the tasks are split among N tenants
 * in bursts: each --burst window of the trace's arrivals belongs to one
 * tenant, drawn with the seed.  The arrivals are compressed in time so that
 * the work offered is --load times what the cluster (G cards, 8 per node)
 * can run over the replay.
 *
 * The same arrivals run twice through the scheduler's real round (sch_round,
 * src/sched/sched.c, the one the server runs), once a round every --round
 * seconds while anything waits (event-driven rounds in the server; a round
 * here is their bound):
 *   ceilings   every tenant's GPU ceiling is G/N, no guarantee (a hard quota,
 *              like a Slurm QOS GrpTRES or a Kueue ClusterQueue without a
 *              cohort);
 *   borrowing  every tenant is guaranteed G/N and may borrow up to the whole
 *              cluster while others leave it idle; an owner's job within its
 *              guarantee reclaims borrowed work (docs/scheduling.md,
 *              "Guarantees").
 * A reclaimed (preempted) job is requeued and runs again from its start;
 * its cards stay busy for --grace seconds (the victim's grace period), and
 * the job placed there starts when they are free.
 *
 * Figures per mode: the cards' allocation over the replay (until the last
 * arrival), goodput (the part of it that finished jobs used), the wait of
 * jobs within their tenant's guarantee (at its arrival the tenant's running
 * and waiting work and the job fit in G/N) at p50 and p99, the p99 wait of
 * every job, and the jobs reclaimed.  Then the ratios: borrowing must raise
 * the allocation while the within-guarantee p99 wait rises by no more than
 * one round plus the grace period; the last line says whether it did.
 * Deterministic for a given seed: the round is pure.
 */
#include "bench_util.h"

#include "../src/sched/sched.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BJ_FUTURE, BJ_PENDING, BJ_ADMITTED, BJ_RUNNING, BJ_DONE };

typedef struct bjob {
    int64_t arrive, dur; /* seconds */
    int gpus, cls, tenant;
    int state, credited, within, reclaimed;
    int64_t start, end;  /* BJ_RUNNING: when its cards were placed and when it ends */
    int64_t first_start; /* -1 before its first start */
    sch_unit unit;
    char id[16];
} bjob;

typedef struct params {
    const char *tasks;
    int tenants, gpus, verbose;
    double load;
    int64_t round, grace, burst, max_dur; /* burst: tasks */
    unsigned long long seed;
} params;

typedef struct figures {
    double alloc, goodput;
    double p50_within, p99_within, p99_all;
    int within, reclaimed, rounds;
    double round_ms; /* the rounds' mean wall time */
} figures;

static unsigned long long splitmix(unsigned long long *x) {
    unsigned long long z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int class_of(int gpus) { return gpus == 1 ? 0 : gpus == 2 ? 1 : gpus == 4 ? 2 : 3; }

/*
 * The whole-card tasks of an openb pod list.  OUT: *jobs (free), *n.  0, or -1 with a
 * message on stderr.
 */
static int load_tasks(const params *p, bjob **jobs, int *n) {
    char *text = slurp(p->tasks);
    if (!text) {
        fprintf(stderr, "gpupool-bench shares: %s: %s\n", p->tasks, strerror(errno));
        return -1;
    }
    int col[4] = {-1, -1, -1, -1}; /* num_gpu, gpu_milli, creation_time, deletion_time */
    static const char *const names[4] = {"num_gpu", "gpu_milli", "creation_time", "deletion_time"};
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    int k = 0;
    for (char *f = line ? line : ""; f; k++) {
        char *comma = strchr(f, ',');
        size_t len = comma ? (size_t)(comma - f) : strcspn(f, "\r");
        for (int c = 0; c < 4; c++)
            if (len == strlen(names[c]) && !strncmp(f, names[c], len)) col[c] = k;
        f = comma ? comma + 1 : NULL;
    }
    for (int c = 0; c < 4; c++)
        if (col[c] < 0) {
            fprintf(stderr, "gpupool-bench shares: %s: no column %s\n", p->tasks, names[c]);
            free(text);
            return -1;
        }
    int cap = 1024, m = 0;
    bjob *js = malloc(sizeof *js * (size_t)cap);
    while (js && (line = strtok_r(NULL, "\n", &save))) {
        long long v[4] = {0, 0, -1, -1};
        k = 0;
        for (char *f = line; f; k++) {
            for (int c = 0; c < 4; c++)
                if (k == col[c]) v[c] = strtoll(f, NULL, 10);
            char *comma = strchr(f, ',');
            f = comma ? comma + 1 : NULL;
        }
        int g = (int)v[0];
        if (v[1] != 1000 || (g != 1 && g != 2 && g != 4 && g != 8) || v[2] < 0 || v[3] <= v[2])
            continue; /* a shared slice, CPU only, or no lifetime: not this bench's */
        if (m == cap) {
            bjob *b = realloc(js, sizeof *js * (size_t)(cap *= 2));
            if (!b) break;
            js = b;
        }
        bjob *j = &js[m];
        memset(j, 0, sizeof *j);
        j->arrive = v[2];
        j->dur = v[3] - v[2] > p->max_dur ? p->max_dur : v[3] - v[2];
        j->gpus = g;
        j->cls = class_of(g);
        j->first_start = -1;
        snprintf(j->id, sizeof j->id, "t%d", m);
        m++;
    }
    free(text);
    if (!js || m == 0) {
        fprintf(stderr, "gpupool-bench shares: %s: %s\n", p->tasks,
                js ? "no whole-card task with a lifetime" : "out of memory");
        free(js);
        return -1;
    }
    *jobs = js;
    *n = m;
    return 0;
}

static int by_arrival(const void *a, const void *b) {
    const bjob *x = a, *y = b;
    return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

/*
 * Tenants in bursts, then the arrivals: the trace's order and its tasks' sizes and
 * durations, spaced as a Poisson process whose rate offers --load times the cluster's
 * capacity (the trace's own arrivals cluster over months, far below any load).
 */
static void shape(const params *p, bjob *js, int n) {
    qsort(js, (size_t)n, sizeof *js, by_arrival);
    unsigned long long s = p->seed;
    int tenant = 0;
    double work = 0;
    for (int i = 0; i < n; i++) {
        if (i % p->burst == 0) tenant = (int)(splitmix(&s) % (unsigned long long)p->tenants);
        js[i].tenant = tenant;
        work += (double)js[i].gpus * (double)js[i].dur;
    }
    double mean_gap = work / n / ((double)p->gpus * p->load), at = 0;
    for (int i = 0; i < n; i++) {
        double u = (double)(splitmix(&s) >> 11) / 9007199254740992.0; /* [0, 1) */
        js[i].arrive = (int64_t)at;
        at += -mean_gap * log(1 - u);
    }
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double q) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

/* The cluster, classes, tenants and projects of one mode. */
typedef struct sim {
    const params *p;
    int borrowing;
    sch_node *nodes;
    sch_gpu *gpus;
    int64_t *gpu_free_at; /* when a victim's process has left the card */
    sch_class classes[4];
    unsigned char model_ok[1];
    unsigned char pool_ok[1];
    sch_tenant tenants[8];
    sch_project projects[8];
    char names[8][16];
    sch_job *sj;
    int *map; /* snapshot job -> bjob */
} sim;

static int sim_init(sim *m, const params *p, int borrowing, int njobs) {
    memset(m, 0, sizeof *m);
    m->p = p;
    m->borrowing = borrowing;
    int nn = p->gpus / 8;
    m->nodes = calloc((size_t)nn, sizeof *m->nodes);
    m->gpus = calloc((size_t)p->gpus, sizeof *m->gpus);
    m->gpu_free_at = calloc((size_t)p->gpus, sizeof *m->gpu_free_at);
    m->sj = calloc((size_t)njobs, sizeof *m->sj);
    m->map = calloc((size_t)njobs, sizeof *m->map);
    if (!m->nodes || !m->gpus || !m->gpu_free_at || !m->sj || !m->map) return -1;
    for (int i = 0; i < nn; i++) {
        m->nodes[i] = (sch_node){.pool = 0, .cpus = 1024, .mem_gib = 1 << 20, .gpu0 = 8 * i,
                                 .ngpus = 8};
        for (int g = 0; g < 8; g++)
            m->gpus[8 * i + g] = (sch_gpu){.node = i, .model = 0, .mode = SCH_WHOLE,
                                           .allocatable = 1, .mem_gib = 80, .numa = g / 4,
                                           .nvgroup = 0};
    }
    m->model_ok[0] = 1;
    m->pool_ok[0] = 1;
    static const char *const cn[4] = {"a100.1x", "a100.2x", "a100.4x", "a100.8x"};
    for (int c = 0; c < 4; c++) {
        int g = 1 << c;
        m->classes[c] = (sch_class){.name = cn[c], .form = SCH_WHOLE, .gpus = g, .cpus = 1,
                                    .mem_gib = 1, .pool = -1, .model_ok = m->model_ok,
                                    .gpu_milli = 1000 * g, .gpu_mem_gib = 80 * g};
    }
    int64_t share = 1000 * (int64_t)(p->gpus / p->tenants);
    for (int t = 0; t < p->tenants; t++) {
        snprintf(m->names[t], sizeof m->names[t], "team-%d", t);
        sch_tenant *tn = &m->tenants[t];
        tn->name = m->names[t];
        tn->pool_ok = m->pool_ok;
        quota_unlimited(&tn->quota);
        if (borrowing) {
            tn->quota.guarantee = share;
            tn->quota.v[QD_GPU_MILLI] = 1000 * (int64_t)p->gpus;
        } else {
            tn->quota.v[QD_GPU_MILLI] = share;
        }
        m->projects[t] = (sch_project){.name = m->names[t], .tenant = t};
        quota_unlimited(&m->projects[t].quota);
    }
    return 0;
}

static void sim_free(sim *m) {
    free(m->nodes);
    free(m->gpus);
    free(m->gpu_free_at);
    free(m->sj);
    free(m->map);
}

/* Run the replay in one mode. OUT: *f. 0, or -1 out of memory. */
static int replay(const params *p, int borrowing, const bjob *in, int n, figures *f) {
    sim m;
    memset(&m, 0, sizeof m);
    int64_t *in_use = calloc((size_t)p->tenants, sizeof *in_use);
    bjob *js = malloc(sizeof *js * (size_t)n);
    double *wait_w = malloc(sizeof(double) * (size_t)n), *wait_a = malloc(sizeof(double) * (size_t)n);
    int rc = -1;
    if (!in_use || !js || !wait_w || !wait_a || sim_init(&m, p, borrowing, n)) goto out;
    memcpy(js, in, sizeof *js * (size_t)n);
    memset(f, 0, sizeof *f);
    int64_t horizon = js[n - 1].arrive, t = 0, share = p->gpus / p->tenants;
    double busy = 0, good = 0, ms = 0;
    int next = 0, done = 0, changed = 1;
    while (done < n) {
        /* ends, then arrivals (the tenant's running and waiting work decides "within") */
        for (int i = 0; i < n; i++)
            if (js[i].state == BJ_RUNNING && js[i].end <= t) {
                int64_t from = js[i].start, to = js[i].end < horizon ? js[i].end : horizon;
                if (to > from) busy += (double)js[i].gpus * (double)(to - from);
                good += (double)js[i].gpus * (double)js[i].dur;
                js[i].state = BJ_DONE;
                in_use[js[i].tenant] -= js[i].gpus;
                done++;
                changed = 1;
            }
        for (; next < n && js[next].arrive <= t; next++) {
            bjob *j = &js[next];
            j->state = BJ_PENDING;
            j->within = in_use[j->tenant] + j->gpus <= share;
            in_use[j->tenant] += j->gpus; /* running or waiting */
            changed = 1;
        }
        if (changed) {
            int ns = 0;
            for (int i = 0; i < n; i++) {
                bjob *j = &js[i];
                if (j->state == BJ_FUTURE || j->state == BJ_DONE) continue;
                m.sj[ns] = (sch_job){.id = j->id, .project = j->tenant, .cls = j->cls,
                                     .units = 1, .priority = 100, .preemptible = 1,
                                     .submit_us = j->arrive * 1000000 + i,
                                     .start_us = j->start * 1000000 + i,
                                     .state = j->state == BJ_PENDING    ? SCH_PENDING
                                              : j->state == BJ_ADMITTED ? SCH_ADMITTED
                                                                        : SCH_RUNNING,
                                     .place = &j->unit, .credited = j->credited};
                m.map[ns++] = i;
            }
            sch_snapshot s = {.nodes = m.nodes, .nnodes = p->gpus / 8, .gpus = m.gpus,
                              .ngpus = p->gpus, .classes = m.classes, .nclasses = 4,
                              .tenants = m.tenants, .ntenants = p->tenants,
                              .projects = m.projects, .nprojects = p->tenants, .jobs = m.sj,
                              .njobs = ns, .nmodels = 1, .npools = 1, .month = "2026-12"};
            sch_result r;
            double t0 = bench_now_ms();
            if (sch_round(&s, &r)) goto out;
            ms += bench_now_ms() - t0;
            f->rounds++;
            changed = 0;
            for (int d = 0; d < r.n; d++) {
                const sch_decision *dc = &r.d[d];
                bjob *j = &js[m.map[dc->job]];
                int credited = dc->action == SCH_DO_WAIT_PREEMPT;
                if (dc->action == SCH_DO_PLACE) {
                    j->unit = dc->units[0];
                    /* the cards free once any victim's process has left them */
                    int64_t at = t;
                    for (int g = 0; g < j->gpus; g++)
                        if (m.gpu_free_at[j->unit.gpu[g]] > at) at = m.gpu_free_at[j->unit.gpu[g]];
                    j->state = BJ_RUNNING;
                    j->start = at;
                    j->end = at + j->dur;
                    if (j->first_start < 0) j->first_start = at;
                    changed = 1;
                } else if (dc->action == SCH_DO_PREEMPT) {
                    /* requeued; its cards stay busy through its grace period */
                    int64_t to = t + p->grace < horizon ? t + p->grace : horizon;
                    if (to > j->start) busy += (double)j->gpus * (double)(to - j->start);
                    for (int g = 0; g < j->gpus; g++) m.gpu_free_at[j->unit.gpu[g]] = t + p->grace;
                    j->state = BJ_PENDING;
                    j->reclaimed++;
                    f->reclaimed++;
                    changed = 1;
                } else if (dc->action == SCH_DO_ADMIT || credited) {
                    if (j->state != BJ_ADMITTED || j->credited != credited) changed = 1;
                    j->state = BJ_ADMITTED;
                }
                if (dc->action != SCH_DO_PREEMPT) {
                    if (j->credited != credited) changed = 1;
                    j->credited = credited;
                }
            }
            sch_result_free(&r);
        }
        /* the next round: one round on while anything moved, else the next end or arrival */
        int64_t ev = INT64_MAX;
        if (next < n) ev = js[next].arrive;
        for (int i = 0; i < n; i++)
            if (js[i].state == BJ_RUNNING && js[i].end < ev) ev = js[i].end;
        if (changed) ev = t + p->round;
        else if (ev == INT64_MAX) break; /* nothing runs or arrives: the rest waits for ever */
        else ev = ((ev + p->round - 1) / p->round) * p->round; /* rounds fall on the beat */
        t = ev > t ? ev : t + p->round;
    }
    int nw = 0, na = 0;
    for (int i = 0; i < n; i++) {
        if (js[i].first_start < 0) continue;
        double w = (double)(js[i].first_start - js[i].arrive);
        wait_a[na++] = w;
        if (js[i].within) wait_w[nw++] = w;
    }
    f->within = nw;
    f->alloc = horizon > 0 ? busy / ((double)p->gpus * (double)horizon) : 0;
    f->goodput = horizon > 0 ? good / ((double)p->gpus * (double)t) : 0;
    f->p50_within = pct(wait_w, nw, 0.50);
    f->p99_within = pct(wait_w, nw, 0.99);
    f->p99_all = pct(wait_a, na, 0.99);
    f->round_ms = f->rounds ? ms / f->rounds : 0;
    if (done < n)
        fprintf(stderr, "gpupool-bench shares: %s: %d jobs never started\n",
                borrowing ? "borrowing" : "ceilings", n - done);
    rc = 0;
out:
    free(in_use);
    sim_free(&m);
    free(js);
    free(wait_w);
    free(wait_a);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "usage: gpupool-bench shares [--tasks FILE] [--tenants N] [--gpus G] [--load X]\n"
               "                            [--round S] [--grace S] [--burst S]\n"
               "                            [--max-duration S] [--seed N] [--verbose]\n"
               "  the openb whole-card tasks split among N tenants in bursts, replayed with\n"
               "  hard ceilings (G/N each) and with guarantees of G/N plus borrowing\n");
}

static int arg_int(const char *name, const char *v, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "gpupool-bench shares: %s must be an integer in [%lld, %lld]\n", name, lo,
                hi);
        return -1;
    }
    *out = x;
    return 0;
}

int bench_shares(int argc, char **argv);
int bench_shares(int argc, char **argv) {
    params p = {.tasks = "../shared/data/openb/openb_pod_list_default.csv", .tenants = 6,
                .gpus = 256, .load = 1.0, .round = 10, .grace = 30, .burst = 200,
                .max_dur = 86400, .seed = 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--verbose")) {
            p.verbose = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "gpupool-bench shares: %s needs a value\n", a);
            return 2;
        }
        const char *val = argv[++i];
        if (!strcmp(a, "--tasks")) p.tasks = val;
        else if (!strcmp(a, "--load")) {
            char *end;
            p.load = strtod(val, &end);
            if (!*val || *end || !(p.load >= 0.1 && p.load <= 10)) {
                fprintf(stderr, "gpupool-bench shares: --load must be a number in [0.1, 10]\n");
                return 2;
            }
        } else if (!strcmp(a, "--tenants")) {
            if (arg_int(a, val, 2, 8, &v)) return 2;
            p.tenants = (int)v;
        } else if (!strcmp(a, "--gpus")) {
            if (arg_int(a, val, 16, 65536, &v)) return 2;
            if (v % 8) {
                fprintf(stderr, "gpupool-bench shares: --gpus must be a multiple of 8\n");
                return 2;
            }
            p.gpus = (int)v;
        } else if (!strcmp(a, "--round")) {
            if (arg_int(a, val, 1, 3600, &v)) return 2;
            p.round = v;
        } else if (!strcmp(a, "--grace")) {
            if (arg_int(a, val, 0, 3600, &v)) return 2;
            p.grace = v;
        } else if (!strcmp(a, "--burst")) {
            if (arg_int(a, val, 1, 1000000, &v)) return 2;
            p.burst = v;
        } else if (!strcmp(a, "--max-duration")) {
            if (arg_int(a, val, 1, 365LL * 86400, &v)) return 2;
            p.max_dur = v;
        } else if (!strcmp(a, "--seed")) {
            if (arg_int(a, val, 0, 1LL << 62, &v)) return 2;
            p.seed = (unsigned long long)v;
        } else {
            fprintf(stderr, "gpupool-bench shares: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (p.gpus / p.tenants < 8) {
        fprintf(stderr, "gpupool-bench shares: --gpus must give each tenant at least 8 cards\n");
        return 2;
    }
    bjob *js;
    int n;
    if (load_tasks(&p, &js, &n)) return 1;
    shape(&p, js, n);
    figures fx[2];
    for (int b = 0; b < 2; b++)
        if (replay(&p, b, js, n, &fx[b])) {
            fprintf(stderr, "gpupool-bench shares: out of memory\n");
            free(js);
            return 1;
        }
    if (p.verbose) {
        int per[8] = {0};
        for (int i = 0; i < n; i++) per[js[i].tenant]++;
        for (int t = 0; t < p.tenants; t++) fprintf(stderr, "team-%d: %d jobs\n", t, per[t]);
    }
    free(js);
    printf("jobs=%d tenants=%d gpus=%d load=%.2f round_s=%lld grace_s=%lld seed=%llu\n", n,
           p.tenants, p.gpus, p.load, (long long)p.round, (long long)p.grace, p.seed);
    for (int b = 0; b < 2; b++)
        printf("mode=%s alloc_pct=%.1f goodput_pct=%.1f within_jobs=%d p50_wait_within_s=%.0f "
               "p99_wait_within_s=%.0f p99_wait_all_s=%.0f reclaimed=%d rounds=%d round_ms=%.3f\n",
               b ? "borrowing" : "ceilings", 100 * fx[b].alloc, 100 * fx[b].goodput,
               fx[b].within, fx[b].p50_within, fx[b].p99_within, fx[b].p99_all, fx[b].reclaimed,
               fx[b].rounds, fx[b].round_ms);
    double rise = fx[1].p99_within - fx[0].p99_within, bound = (double)(p.round + p.grace);
    int ok = fx[1].alloc > fx[0].alloc && rise <= bound;
    printf("alloc_ratio=%.2f p99_wait_within_rise_s=%.0f bound_s=%.0f verdict=%s\n",
           fx[0].alloc > 0 ? fx[1].alloc / fx[0].alloc : 0, rise, bound,
           ok ? "ok" : "not_met");
    return 0;
}
