/*
 * sched_bench.c - `gpupool-bench sched`: one scheduling round on a large
 * synthetic cluster, timed.
 *
 *   gpupool-bench sched [--nodes N] [--jobs M] [--tenants T] [--seed S]
 *
 * The cluster: N nodes x 8 GPUs - 70 % A100-80GB whole cards, 15 %
 * H100-80GB in MIG mode (1g.10gb x 7), 15 % L40S shared - in two pools; T
 * tenants with GPU ceilings (but the first); M queued jobs of mixed classes,
 * sizes and priorities (a few gang jobs).  Times a full round on the idle
 * cluster, then on the settled cluster one submit (a shared slice), one
 * submit of a whole card and one exit, each as a full round and as a delta
 * (sch_delta, which must agree), and ends with
 * `placements_per_s=N round_ms=N submit_round_ms=N exit_round_ms=N rss_mib=N
 * whole_submit_round_ms=N` (the delta times).
 */
#include "bench_util.h"

#include "../src/sched/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long rng = 88172645463325252ULL;
static unsigned long long next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int bench_sched(int argc, char **argv);
int bench_sched(int argc, char **argv) {
    int nodes = 5000, njobs = 50000, ntenants = 100;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: gpupool-bench sched [--nodes N] [--jobs M] [--tenants T] [--seed S]\n"
                   "  a full round on an idle cluster, then one submit and one exit on the settled one:\n"
                   "  each timed as a full round and as a delta (sch_delta, sched.h)\n");
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "usage: gpupool-bench sched [--nodes N] [--jobs M] [--tenants T] [--seed S]\n");
            return 2;
        }
        if (!strcmp(argv[i], "--nodes")) nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--jobs")) njobs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tenants")) ntenants = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) rng = strtoull(argv[i + 1], NULL, 10) | 1;
        else {
            fprintf(stderr, "usage: gpupool-bench sched [--nodes N] [--jobs M] [--tenants T] [--seed S]\n");
            return 2;
        }
    }
    if (nodes < 1 || njobs < 1 || ntenants < 1) {
        fprintf(stderr, "gpupool-bench sched: sizes must be positive\n");
        return 2;
    }
    int ngpus = nodes * 8;
    sch_node *nd = calloc((size_t)nodes, sizeof *nd);
    sch_gpu *gp = calloc((size_t)ngpus, sizeof *gp);
    static unsigned char ok[5][3] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    sch_class cls[5] = {
        {"a100.1x", SCH_WHOLE, "", 0, 0, 1, 8, 64, -1, SCH_TOPO_ANY, ok[0], NULL, 1000, 80},
        {"a100.2x", SCH_WHOLE, "", 0, 0, 2, 16, 128, -1, SCH_TOPO_NUMA, ok[1], NULL, 2000, 160},
        {"a100.8x", SCH_WHOLE, "", 0, 0, 8, 64, 512, -1, SCH_TOPO_ANY, ok[2], NULL, 8000, 640},
        {"h100.1g", SCH_MIG, "1g.10gb", 0, 0, 1, 2, 16, -1, SCH_TOPO_ANY, ok[3], NULL, 142, 10},
        {"l40s.12g", SCH_SHARED, "", 12, 25, 1, 2, 16, -1, SCH_TOPO_ANY, ok[4], NULL, 250, 12},
    };
    for (int n = 0; n < nodes; n++) {
        int kind = (int)(next() % 100);
        int model = kind < 70 ? 0 : kind < 85 ? 1 : 2;
        nd[n] = (sch_node){n % 2, 128, 1024, n * 8, 8};
        for (int k = 0; k < 8; k++) {
            sch_gpu *g = &gp[n * 8 + k];
            g->node = n;
            g->model = model;
            g->mode = model == 0 ? SCH_WHOLE : model == 1 ? SCH_MIG : SCH_SHARED;
            g->allocatable = next() % 100 != 0; /* 1 % unhealthy */
            g->mem_gib = model == 2 ? 48 : 80;
            g->numa = k / 4;
            g->nvgroup = -1;
            if (model == 1) {
                g->nslices = 7;
                for (int s = 0; s < 7; s++) g->slices[s] = (sch_slice){"1g.10gb", 10};
            }
        }
    }
    sch_tenant *tn = calloc((size_t)ntenants, sizeof *tn);
    unsigned char pools[2] = {1, 1};
    char (*tnames)[16] = calloc((size_t)ntenants, 16);
    sch_project *pj = calloc((size_t)ntenants * 2, sizeof *pj);
    for (int t = 0; t < ntenants; t++) {
        snprintf(tnames[t], 16, "t%d", t);
        tn[t].name = tnames[t];
        quota_unlimited(&tn[t].quota);
        /* oversubscribed, but the first tenant has no GPU ceiling (so a submit can be placed) */
        if (t > 0 || ntenants == 1) tn[t].quota.v[QD_GPU_MILLI] = (int64_t)ngpus * 1000 * 2 / ntenants;
        tn[t].pool_ok = pools;
        for (int p = 0; p < 2; p++) {
            pj[t * 2 + p].name = tnames[t];
            pj[t * 2 + p].tenant = t;
            quota_unlimited(&pj[t * 2 + p].quota);
        }
    }
    sch_job *jobs = calloc((size_t)njobs, sizeof *jobs);
    char (*ids)[16] = calloc((size_t)njobs, 16);
    for (int j = 0; j < njobs; j++) {
        int r = (int)(next() % 100);
        int c = r < 50 ? 0 : r < 65 ? 1 : r < 70 ? 2 : r < 85 ? 3 : 4;
        snprintf(ids[j], 16, "j%d", j);
        jobs[j] = (sch_job){ids[j], (int)(next() % (unsigned)(ntenants * 2)), c,
                            c == 2 ? 1 + (int)(next() % 4) : 1 + (int)(next() % 2) /* gangs */,
                            (int)(next() % 4) * 100, 1, 0, (int64_t)j, 0, SCH_PENDING, NULL, 0};
    }
    sch_snapshot s = {nd, nodes, gp, ngpus, cls, 5, tn, ntenants, pj, ntenants * 2, jobs, njobs,
                      3, 2, "2026-12"};
    sch_result r;
    double t0 = bench_now_ms();
    if (sch_round(&s, &r) != 0) {
        fprintf(stderr, "gpupool-bench sched: out of memory\n");
        return 1;
    }
    double ms = bench_now_ms() - t0;
    char why[200];
    int okc = sch_check(&s, &r, why, sizeof why) == 0;
    long units = 0;
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PLACE) units += jobs[r.d[i].job].units;
    printf("cluster: %d nodes, %d GPUs, %d tenants; queue: %d jobs\n", nodes, ngpus, ntenants, njobs);
    printf("round: %.1f ms, %d jobs placed (%ld units), %d left waiting, check %s\n", ms, r.placed,
           units, njobs - r.placed, okc ? "ok" : why);
    /* the steady state: the round's placements run, its admissions hold quota */
    sch_job *j1 = calloc((size_t)njobs + 2, sizeof *j1);
    for (int j = 0; j < njobs; j++) j1[j] = jobs[j];
    for (int i = 0; i < r.n; i++) {
        sch_job *j = &j1[r.d[i].job];
        if (r.d[i].action == SCH_DO_PLACE) {
            j->state = SCH_RUNNING;
            j->place = r.d[i].units;
        } else if (r.d[i].action == SCH_DO_ADMIT || r.d[i].action == SCH_DO_WAIT_PREEMPT) {
            j->state = SCH_ADMITTED;
        }
    }
    sch_snapshot s1 = s;
    s1.jobs = j1;
    /* the delta holds the settled state (built once, as the leader would keep it) */
    sch_delta *dl = NULL;
    double t1 = bench_now_ms();
    if (sch_delta_new(&s1, &dl) != 0) return 1;
    double delta_new_ms = bench_now_ms() - t1;
    /* one submit, a shared slice, for the tenant with the most GPU quota left (most are at
     * their ceiling): a full round and the delta must agree */
    int64_t *left = calloc((size_t)ntenants, sizeof *left);
    for (int t = 0; t < ntenants; t++)
        left[t] = tn[t].quota.v[QD_GPU_MILLI] == QUOTA_NONE ? INT64_MAX / 2 : tn[t].quota.v[QD_GPU_MILLI];
    for (int j = 0; j < njobs; j++)
        if (j1[j].state != SCH_PENDING) left[pj[j1[j].project].tenant] -= cls[j1[j].cls].gpu_milli * j1[j].units;
    int roomy = 0;
    for (int t = 1; t < ntenants; t++)
        if (left[t] > left[roomy]) roomy = t;
    free(left);
    j1[njobs] = (sch_job){"new", roomy * 2, 4, 1, 300, 1, 0, (int64_t)njobs, 0, SCH_PENDING, NULL, 0};
    s1.njobs = njobs + 1;
    sch_result r1, r2, r4;
    t1 = bench_now_ms();
    if (sch_round(&s1, &r1) != 0) return 1;
    double submit_ms = bench_now_ms() - t1;
    int ok1 = sch_check(&s1, &r1, why, sizeof why) == 0;
    t1 = bench_now_ms();
    if (sch_delta_submit(dl, &s1, njobs, &r2) != 0) return 1;
    double submit_delta_ms = bench_now_ms() - t1;
    int agree = r2.n == 1;
    for (int i = 0; i < r1.n && agree; i++)
        if (r1.d[i].job == njobs)
            agree = r1.d[i].action == r2.d[0].action && !strcmp(r1.d[i].reason, r2.d[0].reason) &&
                    (r2.d[0].action != SCH_DO_PLACE ||
                     !memcmp(r1.d[i].units, r2.d[0].units, sizeof *r2.d[0].units));
    char submitted[220];
    snprintf(submitted, sizeof submitted, "%s", r2.n ? r2.d[0].reason : "?");
    if (agree && r2.d[0].action == SCH_DO_PLACE) { /* the next snapshot runs it */
        j1[njobs].state = SCH_RUNNING;
        j1[njobs].place = r2.d[0].units;
    } else if (agree && r2.d[0].action == SCH_DO_ADMIT) {
        j1[njobs].state = SCH_ADMITTED;
    }
    sch_result_free(&r1);
    /* one submit of a whole card (the first tenant has no ceiling): the queue's shapes changed
     * with the submit before, so the delta re-keys every node for the class (sched.c, KEY_FGD) */
    j1[njobs + 1] = (sch_job){"new-whole", 0, 0, 1, 300, 1, 0, (int64_t)njobs + 1, 0, SCH_PENDING,
                              NULL, 0};
    s1.njobs = njobs + 2;
    t1 = bench_now_ms();
    if (sch_round(&s1, &r1) != 0) return 1;
    double whole_ms = bench_now_ms() - t1;
    ok1 &= sch_check(&s1, &r1, why, sizeof why) == 0;
    t1 = bench_now_ms();
    if (sch_delta_submit(dl, &s1, njobs + 1, &r4) != 0) return 1;
    double whole_delta_ms = bench_now_ms() - t1;
    int agree_w = r4.n == 1;
    for (int i = 0; i < r1.n && agree_w; i++)
        if (r1.d[i].job == njobs + 1)
            agree_w = r1.d[i].action == r4.d[0].action && !strcmp(r1.d[i].reason, r4.d[0].reason) &&
                      (r4.d[0].action != SCH_DO_PLACE ||
                       !memcmp(r1.d[i].units, r4.d[0].units, sizeof *r4.d[0].units));
    agree &= agree_w;
    char whole_reason[220];
    snprintf(whole_reason, sizeof whole_reason, "%s", r4.n ? r4.d[0].reason : "?");
    if (agree_w && r4.d[0].action == SCH_DO_PLACE) {
        j1[njobs + 1].state = SCH_RUNNING;
        j1[njobs + 1].place = r4.d[0].units;
    } else if (agree_w && r4.d[0].action == SCH_DO_ADMIT) {
        j1[njobs + 1].state = SCH_ADMITTED;
    }
    sch_result_free(&r1);
    /* one exit: the first running whole-card job */
    int ex = -1;
    for (int j = 0; j < njobs && ex < 0; j++)
        if (j1[j].state == SCH_RUNNING && j1[j].cls == 0) ex = j;
    sch_job keep = j1[ex];
    j1[ex] = j1[njobs + 1];
    s1.njobs = njobs + 1;
    t1 = bench_now_ms();
    if (sch_round(&s1, &r1) != 0) return 1;
    double exit_ms = bench_now_ms() - t1;
    ok1 &= sch_check(&s1, &r1, why, sizeof why) == 0;
    sch_result r3;
    t1 = bench_now_ms();
    if (sch_delta_exit(dl, &s1, &keep, &r3) != 0) return 1;
    double exit_delta_ms = bench_now_ms() - t1;
    int nfull = 0;
    for (int i = 0; i < r1.n; i++) nfull += r1.d[i].action == SCH_DO_PLACE || r1.d[i].action == SCH_DO_ADMIT;
    agree &= nfull == r3.n;
    for (int i = 0; i < r1.n && agree; i++) {
        if (r1.d[i].action != SCH_DO_PLACE && r1.d[i].action != SCH_DO_ADMIT) continue;
        int found = 0;
        for (int k = 0; k < r3.n; k++)
            found |= r3.d[k].job == r1.d[i].job && r3.d[k].action == r1.d[i].action;
        agree &= found;
    }
    printf("after one submit (%s): full round %.2f ms, delta %.3f ms\n"
           "after one whole-card submit (%s): full round %.2f ms, delta %.3f ms\n"
           "after one exit (%d placed or admitted): full round %.2f ms, delta %.3f ms\n"
           "delta state built in %.1f ms; check %s, delta %s the full rounds\n",
           submitted, submit_ms, submit_delta_ms, whole_reason, whole_ms, whole_delta_ms, nfull, exit_ms, exit_delta_ms, delta_new_ms,
           ok1 ? "ok" : why, agree ? "agrees" : "DISAGREES");
    printf("placements_per_s=%.0f round_ms=%.0f submit_round_ms=%.3f exit_round_ms=%.3f "
           "rss_mib=%ld whole_submit_round_ms=%.3f\n",
           r.placed / (ms / 1000.0), ms, submit_delta_ms, exit_delta_ms, bench_peak_rss_mib(),
           whole_delta_ms);
    sch_result_free(&r1);
    sch_result_free(&r2);
    sch_result_free(&r3);
    sch_result_free(&r4);
    sch_delta_free(dl);
    free(j1);
    sch_result_free(&r);
    free(nd);
    free(gp);
    free(tn);
    free(tnames);
    free(pj);
    free(jobs);
    free(ids);
    return okc && ok1 && agree ? 0 : 1;
}
