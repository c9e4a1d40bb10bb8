/*
 * usage_bench.c - `gpupool-bench usage`: a month's usage and cost report
 * over a large history, timed.
 *
 *   gpupool-bench usage [--records N] [--bindings M] [--tenants T]
 *
 * Builds, in a fresh SQLite store in a temporary folder, a month (November
 * 2026) of N gateway usage records (default 10,000,000) with their hourly
 * rollups and M bindings (default 1,000,000; 10 per job) spread over T
 * tenants (default 50, 4 projects each), plus a rate card.  Then times:
 *   - the report: the month by tenant and project, daily buckets
 *     (meter_report: bindings cut at buckets, tokens from the rollups);
 *   - the baseline: the same token sums straight from the raw records
 *     (one GROUP BY over the month), what a report would cost without
 *     rollups.
 * Ends with `report_ms=N baseline_tokens_ms=N ratio=X rows=N rss_mib=N`.
 */
#include "bench_util.h"

#include "../src/core/gtime.h"
#include "../src/core/rand.h"
#include "../src/meter/meter.h"
#include "../src/store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 (1793491200LL * 1000000) /* 2026-11-01T00:00:00Z */
#define MONTH (30LL * 86400 * 1000000)

/* One statement in its own write transaction (bench_sql). */
static int run_sql(store_t *st, const char *sql, const char *types, int64_t a, int64_t b, int64_t c,
                   int64_t d, int64_t e, int64_t f) {
    return bench_sql(st, "usage", sql, types, a, b, c, d, e, f);
}

int bench_usage(int argc, char **argv);
int bench_usage(int argc, char **argv) {
    long long records = 10000000, bindings = 1000000, tenants = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--records")) records = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--bindings")) bindings = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--tenants")) tenants = atoll(argv[i + 1]);
        else goto usage;
    }
    if (argc % 2 == 0 || records < 1 || bindings < 10 || tenants < 1 || tenants > 10000) goto usage;
    rnd_init();
    char dir[] = "/tmp/gpupool-bench-XXXXXX", path[256];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/gpupool.db", dir);
    gp_err err = GP_ERR_INIT;
    store_t *st;
    if (store_open(path, 2, &st, &err)) {
        fprintf(stderr, "gpupool-bench usage: %s\n", err.msg);
        return 1;
    }
    double t = bench_now_ms();
    int64_t projects = tenants * 4, jobs = bindings / 10;
    /* tenants t0.., projects p0.. (4 each), jobs of those projects */
    int rc = run_sql(st,
                     "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                     " INSERT INTO tenants (id, name, created_at) SELECT 'tid' || i, 't' || i, 0 FROM c",
                     "i", tenants, 0, 0, 0, 0, 0) ||
             run_sql(st,
                     "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                     " INSERT INTO projects (id, tenant_id, name, class, created_at)"
                     " SELECT 'pid' || i, 'tid' || (i / 4), 'p' || (i % 4), 'development', 0 FROM c",
                     "i", projects, 0, 0, 0, 0, 0) ||
             run_sql(st,
                     "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                     " INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class,"
                     " priority, preemptible, may_preempt, recovery, submitter, state, created_at,"
                     " queued_at) SELECT 'j' || i, 'tid' || ((i % ?) / 4), 'pid' || (i % ?), 'j', 'c',"
                     " 1, 'normal', 100, 1, 0, 'fail', 'u' || (i % 500), 'succeeded', 0, 0 FROM c",
                     "iii", jobs, projects, projects, 0, 0, 0);
    /* bindings: start uniform over the month, 10 min .. 24 h, whole / MIG / shared, 1 in 100 open */
    if (!rc)
        rc = run_sql(st,
                     "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                     " INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli,"
                     " tenant_id, project_id, tenant, project, start_us, end_us, end_reason)"
                     " SELECT 'b' || i, 'j' || (i / 10), i % 10, 'GPU-' || (i % 4000), 'n' || (i % 500),"
                     " CASE i % 3 WHEN 0 THEN 'NVIDIA A100-SXM4-80GB' WHEN 1 THEN 'NVIDIA H100 80GB HBM3'"
                     " ELSE 'NVIDIA L40S' END,"
                     " CASE i % 3 WHEN 0 THEN 'whole' WHEN 1 THEN 'mig:3g.40gb' ELSE 'shared:12/25' END,"
                     " CASE i % 3 WHEN 0 THEN 1000 WHEN 1 THEN 429 ELSE 250 END,"
                     " 'tid' || (((i / 10) % ?) / 4), 'pid' || ((i / 10) % ?),"
                     " 't' || (((i / 10) % ?) / 4), 'p' || ((i / 10) % 4),"
                     " ? + (i * 2654435761) % 2592000000000,"
                     " CASE WHEN i % 100 = 0 THEN NULL ELSE ? + (i * 2654435761) % 2592000000000"
                     "  + 600000000 + (i * 40503) % 85800000000 END, 'completed' FROM c",
                     "iiiiii", bindings, projects, projects, projects, T0, T0);
    double t_bind = bench_now_ms() - t;
    /* usage records, then their hourly rollups */
    t = bench_now_ms();
    if (!rc)
        rc = run_sql(st,
                     "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)"
                     " INSERT INTO usage_records (id, at, tenant_id, project_id, tenant, project, app,"
                     " key_id, model, model_tenant, endpoint_id, accelerator, kind, stream,"
                     " prompt_tokens, completion_tokens, estimated, latency_us, status)"
                     " SELECT 'u' || i, ? + (i * 1000003) % 2592000000000, 'tid' || ((i % ?) / 4),"
                     " 'pid' || (i % ?), 't' || ((i % ?) / 4), 'p' || (i % 4), '', 'k' || (i % 1000),"
                     " 'm' || (i % 20), 't0', '', CASE i % 2 WHEN 0 THEN 'H100-80GB' ELSE 'A100-80GB' END,"
                     " 'chat', 0, 50 + i % 500, 20 + i % 300, 0, 1000, 200 FROM c",
                     "iiiii", records, T0, projects, projects, projects, 0);
    if (!rc)
        rc = run_sql(st,
                     "INSERT INTO usage_hourly (hour, tenant_id, project_id, tenant, project, key_id,"
                     " model, accelerator, requests, prompt_tokens, completion_tokens)"
                     " SELECT at - at % 3600000000, tenant_id, project_id, tenant, project, key_id, model,"
                     " accelerator, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM usage_records"
                     " GROUP BY 1, 2, 3, 6, 7, 8",
                     "", 0, 0, 0, 0, 0, 0);
    double t_rec = bench_now_ms() - t;
    if (!rc) {
        char card[400];
        snprintf(card, sizeof card,
                 "{\"effective_from\":\"2026-10-01T00:00:00Z\",\"currency\":\"EUR\",\"card_hour\":["
                 "{\"model\":\"A100-80GB\",\"price\":2.5},{\"model\":\"H100\",\"price\":3.5},"
                 "{\"model\":\"L40S\",\"price\":1}],\"tokens\":[{\"model\":\"*\",\"input\":0.5,"
                 "\"output\":1.5}]}");
        json_t *spec = json_loads(card, 0, NULL);
        store_tx *tx;
        int v;
        rc = store_begin(st, STORE_WRITE, &tx, &err) || meter_card_add(tx, spec, "bench", &v, &err) ||
             store_commit(tx, &err);
        json_decref(spec);
    }
    if (rc) {
        fprintf(stderr, "gpupool-bench usage: setup failed\n");
        store_close(st);
        return 1;
    }
    fprintf(stderr, "# built %lld bindings in %.0f ms, %lld usage records + rollups in %.0f ms\n",
            bindings, t_bind, records, t_rec);
    /* the report */
    meter_query q = {.from_us = T0, .to_us = T0 + MONTH, .now_us = T0 + MONTH + 1,
                     .bucket = METER_BUCKET_DAY, .group_by = METER_BY_TENANT | METER_BY_PROJECT};
    store_tx *tx;
    json_t *rep = NULL;
    t = bench_now_ms();
    rc = store_begin(st, STORE_READ, &tx, &err) || meter_report(tx, &q, &rep, &err);
    store_rollback(tx);
    double report_ms = bench_now_ms() - t;
    if (rc) {
        fprintf(stderr, "gpupool-bench usage: report: %s\n", err.msg);
        return 1;
    }
    json_t *tot = json_object_get(rep, "totals");
    long rows = (long)json_array_size(json_object_get(rep, "rows"));
    printf("report: %ld rows, %.1f card-hours, %lld requests, cost %.2f %s\n", rows,
           json_number_value(json_object_get(tot, "card_hours")),
           (long long)json_integer_value(json_object_get(tot, "requests")),
           json_number_value(json_object_get(tot, "cost")),
           json_string_value(json_object_get(rep, "currency")));
    /* the baseline: tokens straight from the records */
    t = bench_now_ms();
    store_stmt *s;
    long long base_req = 0;
    rc = store_begin(st, STORE_READ, &tx, &err);
    if (!rc && !store_query(tx, &s, &err,
                            "SELECT tenant, project, (at - ?) / 86400000000, COUNT(*), SUM(prompt_tokens),"
                            " SUM(completion_tokens) FROM usage_records WHERE at >= ? AND at < ?"
                            " GROUP BY 1, 2, 3",
                            "iii", T0, T0, T0 + MONTH)) {
        while (store_step(s, &err) > 0) base_req += store_int(s, 3);
        store_done(s);
    }
    store_rollback(tx);
    double base_ms = bench_now_ms() - t;
    if (base_req != json_integer_value(json_object_get(tot, "requests")))
        fprintf(stderr, "# MISMATCH: the records hold %lld requests, the report %lld\n", base_req,
                (long long)json_integer_value(json_object_get(tot, "requests")));
    json_decref(rep);
    store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "gpupool-bench usage: could not remove %s\n", dir);
    printf("report_ms=%.0f baseline_tokens_ms=%.0f ratio=%.2f rows=%ld rss_mib=%ld\n", report_ms,
           base_ms, base_ms > 0 ? report_ms / base_ms : 0, rows, bench_peak_rss_mib());
    return 0;
usage:
    fprintf(stderr, "usage: gpupool-bench usage [--records N] [--bindings M] [--tenants T]\n");
    return 2;
}
