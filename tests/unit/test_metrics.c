/*
 * test_metrics.c - the operators' series: agent samples bounded (telemetry_bound),
 * the GPU series with each card's holder read from a store, the scheduler's
 * registry (its pair cap, the queue depth), and the gateway's registry (the
 * (model, tenant) cap and model="other").
 */
#include "testutil.h"

#include "../../src/gateway/gw_metrics.h"
#include "../../src/inventory/telemetry.h"
#include "../../src/sched/sched_metrics.h"

static json_t *sample(const char *signals) {
    char text[1024];
    snprintf(text, sizeof text, "[{\"uuid\":\"GPU-1\",\"signals\":%s}]", signals);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    return j;
}

static json_t *sig(json_t *gpus) { return json_object_get(json_array_get(gpus, 0), "signals"); }

static void bound_clamps(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    json_t *g = sample("{\"utilization\":{\"gpu\":1000,\"memory\":-4},\"temperature_c\":99999,"
                       "\"slowdown_c\":-7,\"memory_used_mib\":1e30,\"power_mw\":-5,"
                       "\"xid_total\":-1,\"retired_pages_pending\":\"x\",\"lost\":false,"
                       "\"ecc\":{\"aggregate_corrected\":99999999999999999,"
                       "\"aggregate_uncorrected\":-3,\"volatile_corrected\":4}}");
    assert_int_equal(telemetry_bound(g, 1, &err), GP_OK);
    json_t *s = sig(g);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "utilization"), "gpu")), 100);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "utilization"), "memory")), 0);
    assert_int_equal(json_integer_value(json_object_get(s, "temperature_c")), TEL_TEMP_MAX_C);
    assert_int_equal(json_integer_value(json_object_get(s, "slowdown_c")), 0);
    assert_null(json_object_get(s, "memory_used_mib")); /* not an integer: dropped */
    assert_int_equal(json_integer_value(json_object_get(s, "power_mw")), 0);
    assert_null(json_object_get(s, "xid_total"));        /* negative counter: unknown */
    assert_null(json_object_get(s, "retired_pages_pending"));
    assert_true(json_is_false(json_object_get(s, "lost"))); /* other fields untouched */
    json_t *ecc = json_object_get(s, "ecc");
    assert_int_equal(json_integer_value(json_object_get(ecc, "aggregate_corrected")), TEL_COUNT_MAX);
    assert_null(json_object_get(ecc, "aggregate_uncorrected"));
    assert_int_equal(json_integer_value(json_object_get(ecc, "volatile_corrected")), 4);
    json_decref(g);
    /* in range: unchanged; temperature -1 (unknown) stays, below it becomes -1 */
    g = sample("{\"utilization\":{\"gpu\":55},\"temperature_c\":-1,\"memory_used_mib\":2048,"
               "\"power_mw\":250000,\"xid_total\":3}");
    assert_int_equal(telemetry_bound(g, 4, &err), GP_OK);
    s = sig(g);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "utilization"), "gpu")), 55);
    assert_int_equal(json_integer_value(json_object_get(s, "temperature_c")), -1);
    assert_int_equal(json_integer_value(json_object_get(s, "memory_used_mib")), 2048);
    assert_int_equal(json_integer_value(json_object_get(s, "power_mw")), 250000);
    assert_int_equal(json_integer_value(json_object_get(s, "xid_total")), 3);
    json_decref(g);
    g = sample("{\"temperature_c\":-300,\"power_mw\":99999999999}");
    assert_int_equal(telemetry_bound(g, 1, &err), GP_OK);
    assert_int_equal(json_integer_value(json_object_get(sig(g), "temperature_c")), -1);
    assert_int_equal(json_integer_value(json_object_get(sig(g), "power_mw")), TEL_POWER_MAX_MW);
    json_decref(g);
}

static void bound_count(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    json_t *g = json_loads("[{\"uuid\":\"a\",\"signals\":{\"power_mw\":-1}},{\"uuid\":\"b\"},"
                           "{\"uuid\":\"c\"}]", 0, NULL);
    assert_int_equal(telemetry_bound(g, 2, &err), GP_EINVALID);
    assert_string_equal(err.msg, "a heartbeat lists at most the node's 2 GPUs (it listed 3)");
    /* refused: nothing changed */
    assert_int_equal(json_integer_value(json_object_get(sig(g), "power_mw")), -1);
    assert_int_equal(telemetry_bound(g, 0, &err), GP_EINVALID);
    assert_int_equal(telemetry_bound(g, 3, &err), GP_OK);
    assert_int_equal(json_integer_value(json_object_get(sig(g), "power_mw")), 0);
    json_decref(g);
    /* not arrays / objects: left for the heartbeat to refuse */
    assert_int_equal(telemetry_bound(NULL, 0, &err), GP_OK);
    g = json_loads("[1, {\"signals\":[]}, {\"signals\":{\"utilization\":7}}]", 0, NULL);
    assert_int_equal(telemetry_bound(g, 3, &err), GP_OK);
    json_decref(g);
}

static const char *const FIXTURE[] = {
    "INSERT INTO users (id, name, created_at) VALUES ('u1', 'agent', 0)",
    "INSERT INTO users (id, name, created_at) VALUES ('u2', 'other', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'red', 0)",
    "INSERT INTO tenants (id, name, created_at) VALUES ('t2', 'blue', 0)",
    "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES ('p1', 't1', 'train', 'research', 0)",
    "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, registered_at, last_heartbeat)"
    " VALUES ('n1', 'a', 64, 512, 'u1', 0, 0)",
    "INSERT INTO nodes (id, name, cpus, memory_gib, agent_user_id, state, registered_at, last_heartbeat)"
    " VALUES ('n2', 'b', 64, 512, 'u1', 'unreachable', 0, 0)",
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, mode, signals, updated_at) VALUES"
    " ('g1', 'GPU-1', 'n1', 0, 'A100-80GB', 81920, 'whole',"
    " '{\"utilization\":{\"gpu\":42},\"temperature_c\":51,\"memory_used_mib\":999999,\"power_mw\":123456,"
    "\"xid_total\":2,\"ecc\":{\"aggregate_corrected\":5,\"volatile_uncorrected\":1}}', 0)",
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, mode, signals, updated_at) VALUES"
    " ('g2', 'GPU-2', 'n1', 1, 'L40S', 49152, 'shared', '{\"temperature_c\":-1}', 0)",
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, mode, signals, updated_at) VALUES"
    " ('g3', 'GPU-3', 'n1', 2, 'L4', 24576, 'whole', 'not json', 0)",
    "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, mode, signals, updated_at) VALUES"
    " ('g4', 'GPU-4', 'n2', 0, 'L4', 24576, 'whole', '{\"temperature_c\":40}', 0)",
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
    " ('j1', 't1', 'p1', 'a', 'x', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'running', 0, 0)",
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
    " ('j2', 't1', 'p1', 'b', 'x', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'queued', 0, 0)",
    "INSERT INTO jobs (id, tenant_id, project_id, name, class, units, priority_class, priority,"
    " preemptible, may_preempt, recovery, submitter, state, created_at, queued_at) VALUES"
    " ('j3', 't1', 'p1', 'c', 'x', 1, 'normal', 100, 1, 0, 'requeue', 'u1', 'admitted', 0, 0)",
    /* GPU-2 shared by two jobs: the larger share names the holder */
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli, tenant_id,"
    " project_id, tenant, project, start_us) VALUES"
    " ('b1', 'j1', 0, 'GPU-2', 'a', 'L40S', 'shared:12/25', 250, 't1', 'p1', 'red', 'train', 5)",
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli, tenant_id,"
    " project_id, tenant, project, start_us) VALUES"
    " ('b2', 'j3', 0, 'GPU-2', 'a', 'L40S', 'shared:24/50', 500, 't1', 'p1', 'red', 'train', 9)",
    "INSERT INTO bindings (id, job_id, unit, gpu_uuid, node, model, form, weight_milli, tenant_id,"
    " project_id, tenant, project, start_us, end_us) VALUES"
    " ('b3', 'j2', 0, 'GPU-1', 'a', 'A100-80GB', 'whole', 1000, 't1', 'p1', 'red', 'train', 1, 2)",
    NULL,
};

static void has(const char *text, const char *line) {
    if (!strstr(text, line)) fprintf(stderr, "missing: %s\nin:\n%s\n", line, text);
    assert_non_null(strstr(text, line));
}

static void gpu_series(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    store_t *st = tu_store(dir, 2);
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(st, STORE_WRITE, &tx, &err), GP_OK);
    for (int i = 0; FIXTURE[i]; i++) {
        int rc = store_exec(tx, NULL, &err, FIXTURE[i], "");
        if (rc) fprintf(stderr, "%s: %s\n", FIXTURE[i], err.msg);
        assert_int_equal(rc, GP_OK);
    }
    /* the node's GPU count bounds a heartbeat, for its own agent only */
    json_t *three = json_loads("[{},{},{},{}]", 0, NULL);
    assert_int_equal(telemetry_bound_node(tx, "a", "u1", three, &err), GP_EINVALID);
    assert_string_equal(err.msg, "a heartbeat lists at most the node's 3 GPUs (it listed 4)");
    assert_int_equal(telemetry_bound_node(tx, "a", "u2", three, &err), GP_OK);
    assert_int_equal(telemetry_bound_node(tx, "nope", "u1", three, &err), GP_OK);
    json_decref(three);
    assert_int_equal(store_commit(tx, &err), GP_OK);

    assert_int_equal(store_begin(st, STORE_READ, &tx, &err), GP_OK);
    strbuf sb = SB_INIT;
    assert_int_equal(telemetry_prometheus(tx, 1, &sb, &err), GP_OK);
    const char *t = sb.buf;
    has(t, "# TYPE gpupool_gpu_utilization_ratio gauge\n");
    has(t, "gpupool_gpu_utilization_ratio{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\"} 0.42\n");
    /* used memory never above the card's */
    has(t, "gpupool_gpu_memory_used_bytes{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\"} 85899345920\n");
    has(t, "gpupool_gpu_memory_total_bytes{node=\"a\",gpu=\"GPU-3\",model=\"L4\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\"} 25769803776\n");
    has(t, "gpupool_gpu_power_watts{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\"} 123.456\n");
    has(t, "gpupool_gpu_temperature_celsius{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\"} 51\n");
    has(t, "# TYPE gpupool_gpu_ecc_errors_total counter\n");
    has(t, "gpupool_gpu_ecc_errors_total{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\",kind=\"corrected\"} 5\n");
    has(t, "gpupool_gpu_ecc_errors_total{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\",kind=\"uncorrected\"} 1\n");
    has(t, "gpupool_gpu_xid_errors_total{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\","
           "tenant=\"\",project=\"\",job_id=\"\"} 2\n");
    /* the shared card: the larger share (j3) holds it; two bindings */
    has(t, "gpupool_gpu_memory_total_bytes{node=\"a\",gpu=\"GPU-2\",model=\"L40S\",form=\"shared\","
           "tenant=\"red\",project=\"train\",job_id=\"j3\"} 51539607552\n");
    has(t, "gpupool_gpu_bindings{node=\"a\",gpu=\"GPU-2\",model=\"L40S\",form=\"shared\","
           "tenant=\"red\",project=\"train\",job_id=\"j3\"} 2\n");
    /* unknown temperature, a sample that is not JSON, an unreachable node: nothing made up */
    assert_null(strstr(t, "gpupool_gpu_temperature_celsius{node=\"a\",gpu=\"GPU-2\""));
    assert_null(strstr(t, "gpupool_gpu_utilization_ratio{node=\"a\",gpu=\"GPU-3\""));
    assert_null(strstr(t, "GPU-4"));
    sb_release(&sb);
    /* without the holders: no tenant names, no bindings gauge */
    assert_int_equal(telemetry_prometheus(tx, 0, &sb, &err), GP_OK);
    has(sb.buf, "gpupool_gpu_utilization_ratio{node=\"a\",gpu=\"GPU-1\",model=\"A100-80GB\",form=\"whole\"} 0.42\n");
    assert_null(strstr(sb.buf, "tenant="));
    assert_null(strstr(sb.buf, "gpupool_gpu_bindings"));
    sb_release(&sb);

    /* queue depth: every tenant x class, zeros included */
    sched_metrics_reset();
    sched_metrics_observe_place("red", "normal", 90 * 1000000LL);
    assert_int_equal(sched_metrics_prometheus(tx, &sb, &err), GP_OK);
    has(sb.buf, "gpupool_sched_queue_depth{tenant=\"red\",priority_class=\"normal\"} 2\n");
    has(sb.buf, "gpupool_sched_queue_depth{tenant=\"blue\",priority_class=\"normal\"} 0\n");
    has(sb.buf, "gpupool_sched_placements_total{tenant=\"red\",priority_class=\"normal\"} 1\n");
    has(sb.buf, "gpupool_sched_queue_wait_seconds_bucket{tenant=\"red\",priority_class=\"normal\",le=\"60\"} 0\n");
    has(sb.buf, "gpupool_sched_queue_wait_seconds_bucket{tenant=\"red\",priority_class=\"normal\",le=\"120\"} 1\n");
    has(sb.buf, "gpupool_sched_queue_wait_seconds_sum{tenant=\"red\",priority_class=\"normal\"} 90.000000\n");
    sb_release(&sb);
    sched_metrics_reset();
    store_rollback(tx);
    store_close(st);
    tu_rmdir(dir);
}

static void sched_registry(void **state) {
    (void)state;
    sched_metrics_reset();
    sched_metrics_round(3000, 0);
    sched_metrics_round(2000000, 1);
    strbuf sb = SB_INIT;
    sched_metrics_render_rounds(&sb);
    has(sb.buf, "gpupool_sched_round_duration_seconds_bucket{le=\"0.005\"} 1\n");
    has(sb.buf, "gpupool_sched_round_duration_seconds_bucket{le=\"2.5\"} 2\n");
    has(sb.buf, "gpupool_sched_round_duration_seconds_count 2\n");
    has(sb.buf, "gpupool_sched_rounds_failed_total 1\n");
    sb_release(&sb);
    /* the pair cap: tenants beyond it count as "other", per class */
    char t[32];
    for (int i = 0; i < SCHED_METRICS_MAX_PAIRS + 50; i++) {
        snprintf(t, sizeof t, "t%d", i);
        sched_metrics_observe_place(t, "normal", 1000000);
    }
    sched_metrics_observe_preempt("t5", "normal");
    sched_metrics_observe_preempt("late", "high");
    assert_int_equal(sched_metrics_pairs(), SCHED_METRICS_MAX_PAIRS + 2);
    for (int i = 0; i < 500; i++) {
        snprintf(t, sizeof t, "c%d", i);
        sched_metrics_observe_place("late", t, 0);
    }
    /* at most MAX + 64 entries, the last (other, other) */
    assert_true(sched_metrics_pairs() <= SCHED_METRICS_MAX_PAIRS + 64);
    gp_err err = GP_ERR_INIT;
    (void)err;
    sched_metrics_reset();
    assert_int_equal(sched_metrics_pairs(), 0);
}

static void gw_registry(void **state) {
    (void)state;
    gw_metrics_reset();
    gw_metrics_request("llama", "red", 200, 10, 5, 30000, 1);
    gw_metrics_request("llama", "red", 503, 0, 0, 100, 0); /* no upstream: not in the latency */
    gw_metrics_request("llama", "red", 404, -5, -1, 100, 1);
    gw_metrics_ttft("llama", 1000, 8000);
    gw_metrics_ttft("llama", 1000, 0); /* no first byte: not observed */
    strbuf sb = SB_INIT;
    gw_metrics_render(&sb);
    has(sb.buf, "gpupool_gateway_requests_total{model=\"llama\",tenant=\"red\",code=\"2xx\"} 1\n");
    has(sb.buf, "gpupool_gateway_requests_total{model=\"llama\",tenant=\"red\",code=\"4xx\"} 1\n");
    has(sb.buf, "gpupool_gateway_requests_total{model=\"llama\",tenant=\"red\",code=\"5xx\"} 1\n");
    has(sb.buf, "gpupool_gateway_tokens_total{model=\"llama\",tenant=\"red\",kind=\"prompt\"} 10\n");
    has(sb.buf, "gpupool_gateway_tokens_total{model=\"llama\",tenant=\"red\",kind=\"completion\"} 5\n");
    has(sb.buf, "gpupool_gateway_upstream_latency_seconds_count{model=\"llama\"} 2\n");
    has(sb.buf, "gpupool_gateway_upstream_latency_seconds_bucket{model=\"llama\",le=\"0.05\"} 2\n");
    has(sb.buf, "gpupool_gateway_ttft_seconds_count{model=\"llama\"} 1\n");
    has(sb.buf, "gpupool_gateway_ttft_seconds_bucket{model=\"llama\",le=\"0.01\"} 1\n");
    has(sb.buf, "gpupool_gateway_ttft_seconds_bucket{model=\"llama\",le=\"0.005\"} 0\n");
    sb_release(&sb);
    /* the cap: distinct (model, tenant) pairs beyond GW_METRICS_MAX_PAIRS go to model="other" */
    char m[32];
    for (int i = 0; i < GW_METRICS_MAX_PAIRS + 20; i++) {
        snprintf(m, sizeof m, "m%d", i);
        gw_metrics_request(m, i % 2 ? "red" : "blue", 200, 1, 1, 1000, 1);
    }
    /* llama/red, m0..m998, then (other, red) and (other, blue) */
    assert_int_equal(gw_metrics_pairs(), GW_METRICS_MAX_PAIRS + 2);
    gw_metrics_render(&sb);
    has(sb.buf, "gpupool_gateway_requests_total{model=\"m998\",tenant=\"blue\",code=\"2xx\"} 1\n");
    assert_null(strstr(sb.buf, "model=\"m999\""));
    has(sb.buf, "gpupool_gateway_requests_total{model=\"other\",tenant=\"red\",code=\"2xx\"} 11\n");
    has(sb.buf, "gpupool_gateway_requests_total{model=\"other\",tenant=\"blue\",code=\"2xx\"} 10\n");
    has(sb.buf, "gpupool_gateway_upstream_latency_seconds_count{model=\"other\"} 21\n");
    sb_release(&sb);
    /* tenants beyond the overflow cap too: (other, other), and never more entries */
    char tn[32];
    for (int i = 0; i < GW_METRICS_MAX_PAIRS + 20; i++) {
        snprintf(tn, sizeof tn, "t%d", i);
        gw_metrics_request("new", tn, 200, 1, 1, 1000, 1);
    }
    assert_int_equal(gw_metrics_pairs(), 2 * GW_METRICS_MAX_PAIRS + 1);
    gw_metrics_render(&sb);
    has(sb.buf, "gpupool_gateway_requests_total{model=\"other\",tenant=\"other\",code=\"2xx\"} 22\n");
    /* label values escaped */
    sb_release(&sb);
    gw_metrics_reset();
    gw_metrics_request("a\"b\\c\nd", "red", 200, 0, 0, 0, 0);
    gw_metrics_render(&sb);
    has(sb.buf, "model=\"a\\\"b\\\\c\\nd\"");
    sb_release(&sb);
    gw_metrics_reset();
    assert_int_equal(gw_metrics_pairs(), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bound_clamps),
        cmocka_unit_test(bound_count),
        cmocka_unit_test(gpu_series),
        cmocka_unit_test(sched_registry),
        cmocka_unit_test(gw_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
