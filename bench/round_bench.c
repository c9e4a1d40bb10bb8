/*
 * round_bench.c - `gpupool-bench round`: the live scheduler's round against
 * the store (round.c: read, decide, write), timed phase by phase, on a large
 * fleet (issue 38).
 *
 *   gpupool-bench round [--nodes N] [--tenants T] [--quota Q] [--queued M] [--rounds R]
 *
 * Builds, in a fresh SQLite store in a temporary folder, N nodes x 8 whole
 * A100 cards (default 5,000), T tenants (default 100) of one project each,
 * each capped at Q GPUs (default 2), and M queued one-card jobs (default
 * 5,000) spread over them: the shape of bench/scale_sim.sh without agents,
 * so the figures are the round's alone.  Then:
 *   - the first round (places T x Q jobs, the rest wait at their caps);
 *   - R rounds with nothing changed (default 20), each once with the
 *     cluster read from the store (the scheduler's copy dropped first:
 *     what every round cost before the leader kept it) and once as the
 *     leader runs it (the cluster from memory; the queue, bindings and
 *     quotas read);
 *   - a round after one submit, and one after one job's exit.
 * Ends with one line: `nodes=N queued=M full_read_ms=P50 read_ms=P50
 * read_ratio=X round_full_ms=P50 round_ms=P50 round_max_ms=MAX
 * submit_round_ms=N exit_round_ms=N rss_mib=N` (milliseconds, medians over
 * the R rounds; read_ratio = full_read_ms / read_ms, both from this run).
 * KEEP=1 in the environment keeps the store's folder (its path on stderr).
 */
#include "bench_util.h"

#include "../src/core/gtime.h"
#include "../src/core/rand.h"
#include "../src/sched/jobs.h"
#include "../src/store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One statement in its own write transaction (bench_sql); up to three integer arguments. */
static int run_sql(store_t *st, const char *sql, const char *types, int64_t a, int64_t b,
                   int64_t c) {
    return bench_sql(st, "round", sql, types, a, b, c, 0, 0, 0);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double median_ms(int64_t *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return (double)v[n / 2] / 1000.0;
}

static int one_round(store_t *st, round_stats *rs, int64_t *total_us) {
    gp_err err = GP_ERR_INIT;
    int64_t t0 = gt_mono_us();
    int rc = sched_run(st, rs, &err);
    *total_us = gt_mono_us() - t0;
    if (rc) fprintf(stderr, "gpupool-bench round: the round failed: %s\n", err.msg);
    return rc;
}

int bench_round(int argc, char **argv);
int bench_round(int argc, char **argv) {
    long long nodes = 5000, tenants = 100, quota = 2, queued = 5000, rounds = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes")) nodes = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--tenants")) tenants = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--quota")) quota = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--queued")) queued = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoll(argv[i + 1]);
        else goto usage;
    }
    if (argc % 2 == 0 || nodes < 1 || nodes > 100000 || tenants < 1 || tenants > 10000 ||
        quota < 1 || quota > 1000 || queued < 1 || queued > 1000000 || rounds < 1 ||
        rounds > 10000)
        goto usage;
    rnd_init();
    char dir[] = "/tmp/gpupool-bench-XXXXXX", path[256];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/gpupool.db", dir);
    gp_err err = GP_ERR_INIT;
    store_t *st;
    if (store_open(path, 4, &st, &err)) {
        fprintf(stderr, "gpupool-bench round: %s\n", err.msg);
        return 1;
    }
    int rc =
        run_sql(st, "INSERT INTO users (id, name, created_at) VALUES ('u1', 'agent', 0)", "", 0, 0,
                0) ||
        run_sql(st,
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                " INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at,"
                " last_heartbeat) SELECT 'n' || i, printf('a%06d', i), 64, 512, 'u1', 0, 0 FROM c",
                "i", nodes, 0, 0) ||
        run_sql(st,
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                " INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, signals, updated_at)"
                " SELECT 'g' || i, printf('GPU-%08d', i), 'n' || (i / 8), i % 8,"
                " 'NVIDIA A100-SXM4-80GB', 81920, '{}', 0 FROM c",
                "i", nodes * 8, 0, 0) ||
        run_sql(st,
                "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models, created_at)"
                " VALUES ('gpu1', 'whole', 1, 1, 1, '[\"A100-80GB\"]', 0)",
                "", 0, 0, 0) ||
        run_sql(st,
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                " INSERT INTO tenants (id, name, created_at) SELECT 'tid' || i, 't' || i, 0 FROM c",
                "i", tenants, 0, 0) ||
        run_sql(st,
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                " INSERT INTO projects (id, tenant_id, name, class, created_at)"
                " SELECT 'pid' || i, 'tid' || i, 'p', 'development', 0 FROM c",
                "i", tenants, 0, 0) ||
        run_sql(st,
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                " INSERT INTO quotas (tenant_id, project_id, spec, updated_at)"
                " SELECT 'tid' || i, '', '{\"gpus\":' || ? || '}', 0 FROM c",
                "ii", tenants, quota, 0) ||
        run_sql(st,
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                " INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
                " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
                " queued_at) SELECT printf('j%08d', i), 'tid' || (i % ?), 'pid' || (i % ?), 'j',"
                " 'gpu1', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'queued', i, i FROM c",
                "iii", queued, tenants, tenants);
    round_stats rs;
    int64_t first_us = 0;
    if (!rc) rc = one_round(st, &rs, &first_us);
    int placed = rs.placed;
    int64_t *full_read = calloc((size_t)rounds, sizeof *full_read),
            *full_total = calloc((size_t)rounds, sizeof *full_total),
            *read = calloc((size_t)rounds, sizeof *read),
            *tot = calloc((size_t)rounds, sizeof *tot);
    int64_t max_us = 0;
    if (!full_read || !full_total || !read || !tot) rc = 1;
    for (long long r = 0; !rc && r < rounds; r++) {
        sched_cluster_forget(st); /* the whole cluster from the store, as every round did */
        rc = one_round(st, &rs, &full_total[r]);
        full_read[r] = rs.read_us;
        if (!rc) rc = one_round(st, &rs, &tot[r]); /* as the leader runs it */
        read[r] = rs.read_us;
        if (tot[r] > max_us) max_us = tot[r];
    }
    /* one submit (it waits at its tenant's cap: the round writes its reason), one exit (the
     * next job of that tenant starts) */
    int64_t submit_us = 0, exit_us = 0;
    if (!rc)
        rc = run_sql(st,
                     "INSERT INTO jobs (id, tenant_id, project_id, name, class, units,"
                     " priority_class, priority, preemptible, may_preempt, recovery, submitter,"
                     " state, created_at, queued_at) VALUES ('jextra', 'tid0', 'pid0', 'j',"
                     " 'gpu1', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'queued', ?, ?)",
                     "ii", gt_now_us(), gt_now_us(), 0) ||
             one_round(st, &rs, &submit_us);
    if (!rc) {
        int64_t now = gt_now_us();
        rc = run_sql(st,
                     "UPDATE bindings SET end_us = ?, end_reason = 'completed' WHERE end_us IS NULL"
                     " AND job_id = (SELECT MIN(id) FROM jobs WHERE state = 'running')",
                     "i", now, 0, 0) ||
             run_sql(st,
                     "UPDATE jobs SET state = 'succeeded', ended_at = ? WHERE id ="
                     " (SELECT MIN(id) FROM jobs WHERE state = 'running')",
                     "i", now, 0, 0) ||
             one_round(st, &rs, &exit_us);
        if (!rc && rs.placed != 1) {
            fprintf(stderr, "gpupool-bench round: after an exit the round placed %d, not 1\n",
                    rs.placed);
            rc = 1;
        }
    }
    if (!rc && placed != (int)(tenants * quota < queued ? tenants * quota : queued)) {
        fprintf(stderr, "gpupool-bench round: the first round placed %d\n", placed);
        rc = 1;
    }
    if (!rc) {
        double fr = median_ms(full_read, (int)rounds), rd = median_ms(read, (int)rounds);
        printf("first_round_ms=%.1f placed=%d\n", (double)first_us / 1000.0, placed);
        printf("nodes=%lld queued=%lld full_read_ms=%.2f read_ms=%.2f read_ratio=%.1f"
               " round_full_ms=%.2f round_ms=%.2f round_max_ms=%.2f submit_round_ms=%.2f"
               " exit_round_ms=%.2f rss_mib=%ld\n",
               nodes, queued, fr, rd, rd > 0 ? fr / rd : 0.0, median_ms(full_total, (int)rounds),
               median_ms(tot, (int)rounds), (double)max_us / 1000.0, (double)submit_us / 1000.0,
               (double)exit_us / 1000.0, bench_peak_rss_mib());
    }
    free(full_read);
    free(full_total);
    free(read);
    free(tot);
    store_close(st);
    const char *keep = getenv("KEEP");
    if (keep && !strcmp(keep, "1")) {
        fprintf(stderr, "gpupool-bench round: kept %s\n", dir);
        return rc ? 1 : 0;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "gpupool-bench round: could not remove %s\n", dir);
    return rc ? 1 : 0;
usage:
    fprintf(stderr, "usage: gpupool-bench round [--nodes N] [--tenants T] [--quota Q]"
                    " [--queued M] [--rounds R]\n");
    return 2;
}
