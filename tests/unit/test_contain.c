/*
 * test_contain.c - failure containment through request dispatch: a lost node
 * or a failed GPU ends the bindings of the jobs on it (node_lost /
 * gpu_failed), each job is requeued or failed per its recovery policy, the
 * alarm names the tenants hit (and only they see it), and ops can release a
 * binding by hand.  And join tokens: single-use by default, bound to a
 * node name, or good for N registrations (issue 18, finding 10).  And
 * liveness: a node is judged silent only after a whole timeout this server
 * watched, and a mass silence is held (inv_mass_silence, inv_sweep).  And
 * GPU identity: inv_claim_refused, inv_gpu_move_refusal (issue 33, item 3).
 */
#include "apitest.h"

#include "../../src/core/gtime.h"
#include "../../src/inventory/inventory.h"
#include "../../src/sched/jobs.h"

typedef struct {
    apitest t;
    char ops[RND_SECRET_LEN], red[RND_SECRET_LEN], blue[RND_SECRET_LEN];
    char node_token[RND_SECRET_LEN];
    char join[RND_SECRET_LEN]; /* the join token n1 registered with */
} cx;

#define CALL(f, tok, m, p, b, out) at_call(&(f)->t, tok, m, p, b, out)

static int setup(void **state) {
    cx *f = calloc(1, sizeof *f);
    json_t *resp;
    char body[1024];
    at_open(&f->t);
    at_user(&f->t, "ops", "ops-engineer", "global", NULL, NULL, f->ops);
    const char *A = f->t.admin;
    assert_int_equal(CALL(f, A, "POST", "/api/v1/tenants", "{\"name\":\"red\"}", NULL), 201);
    assert_int_equal(CALL(f, A, "POST", "/api/v1/tenants", "{\"name\":\"blue\"}", NULL), 201);
    assert_int_equal(CALL(f, A, "POST", "/api/v1/tenants/red/projects", "{\"name\":\"p\"}", NULL), 201);
    assert_int_equal(CALL(f, A, "POST", "/api/v1/tenants/blue/projects", "{\"name\":\"q\"}", NULL), 201);
    at_user(&f->t, "ru", "project-user", "project", "red", "p", f->red);
    at_user(&f->t, "bu", "project-user", "project", "blue", "q", f->blue);
    assert_int_equal(CALL(f, f->ops, "POST", "/api/v1/join-tokens", "{}", &resp), 201);
    snprintf(body, sizeof body,
             "{\"join_token\":\"%s\",\"node\":{\"name\":\"n1\",\"cpus\":64,\"memory_gib\":512,"
             "\"gpus\":[{\"uuid\":\"GPU-a\",\"index\":0,\"model\":\"A100-80GB\",\"memory_mib\":81920},"
             "{\"uuid\":\"GPU-b\",\"index\":1,\"model\":\"A100-80GB\",\"memory_mib\":81920}]}}",
             at_str(resp, "token"));
    snprintf(f->join, sizeof f->join, "%s", at_str(resp, "token"));
    json_decref(resp);
    assert_int_equal(CALL(f, NULL, "POST", "/api/v1/agent/register", body, &resp), 201);
    snprintf(f->node_token, sizeof f->node_token, "%s", at_str(resp, "token"));
    json_decref(resp);
    assert_int_equal(CALL(f, A, "POST", "/api/v1/classes",
                          "{\"name\":\"a100.1x\",\"form\":\"whole\",\"cpus\":1,\"memory_gib\":1,"
                          "\"gpu_models\":[\"A100-80GB\"]}",
                          NULL),
                     201);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    cx *f = *state;
    at_close(&f->t);
    free(f);
    return 0;
}

/* Submit a job and return its id (static buffer), checking it runs on `gpu_out`. */
static const char *submit(cx *f, const char *tok, const char *tenant, const char *proj,
                          const char *recovery, char gpu_out[16]) {
    static char id[RND_ID_LEN];
    char path[128], body[160];
    json_t *resp;
    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects/%s/jobs", tenant, proj);
    snprintf(body, sizeof body, "{\"name\":\"j\",\"class\":\"a100.1x\",\"recovery\":\"%s\"}",
             recovery);
    assert_int_equal(CALL(f, tok, "POST", path, body, &resp), 201);
    snprintf(id, sizeof id, "%s", at_str(resp, "id"));
    json_decref(resp);
    /* a submit only wakes the leader's scheduler loop (none runs here): run its round */
    round_stats rs;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(sched_run(f->t.st, &rs, &err), GP_OK);
    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects/%s/jobs/%s", tenant, proj, id);
    assert_int_equal(CALL(f, tok, "GET", path, NULL, &resp), 200);
    assert_string_equal(at_str(resp, "state"), "running");
    snprintf(gpu_out, 16, "%s", at_str(json_array_get(json_object_get(resp, "bindings"), 0), "gpu"));
    json_decref(resp);
    return id;
}

static json_t *job(cx *f, const char *tok, const char *tenant, const char *proj, const char *id) {
    char path[200];
    json_t *resp;
    snprintf(path, sizeof path, "/api/v1/tenants/%s/projects/%s/jobs/%s", tenant, proj, id);
    assert_int_equal(CALL(f, tok, "GET", path, NULL, &resp), 200);
    return resp;
}

static void gpu_failure(void **state) {
    cx *f = *state;
    char rid[RND_ID_LEN], bid[RND_ID_LEN], rg[16], bg[16];
    snprintf(rid, sizeof rid, "%s", submit(f, f->red, "red", "p", "requeue", rg));
    snprintf(bid, sizeof bid, "%s", submit(f, f->blue, "blue", "q", "fail", bg));
    /* a fatal Xid on red's card */
    char hb[300];
    snprintf(hb, sizeof hb, "{\"node\":\"n1\",\"gpus\":[{\"uuid\":\"%s\",\"signals\":{\"xids\":[79]}}]}", rg);
    assert_int_equal(CALL(f, f->node_token, "POST", "/api/v1/agent/heartbeat", hb, NULL), 200);
    json_t *j = job(f, f->red, "red", "p", rid);
    /* requeued: (no other healthy card free: blue holds the other) */
    assert_string_not_equal(at_str(j, "state"), "running");
    json_t *b = json_array_get(json_object_get(j, "bindings"), 0);
    assert_string_equal(at_str(b, "end_reason"), "gpu_failed");
    json_decref(j);
    /* blue's job on the other card is untouched */
    j = job(f, f->blue, "blue", "q", bid);
    assert_string_equal(at_str(j, "state"), "running");
    json_decref(j);
    /* the alarm names red only: red's members see it, blue's do not */
    json_t *resp;
    assert_int_equal(CALL(f, f->red, "GET", "/api/v1/alarms?tenant=red", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    assert_int_equal(CALL(f, f->blue, "GET", "/api/v1/alarms?tenant=blue", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 0);
    json_decref(resp);
    assert_int_equal(CALL(f, f->blue, "GET", "/api/v1/alarms?tenant=red", NULL, NULL), 404);
    assert_int_equal(CALL(f, f->t.admin, "GET", "/api/v1/audit?action=gpu.contain", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
}

static void node_loss_and_release(void **state) {
    cx *f = *state;
    char rid[RND_ID_LEN], bid[RND_ID_LEN], rg[16], bg[16];
    snprintf(rid, sizeof rid, "%s", submit(f, f->red, "red", "p", "requeue", rg));
    snprintf(bid, sizeof bid, "%s", submit(f, f->blue, "blue", "q", "fail", bg));
    /* the incident view before the loss: both tenants' jobs on n1 */
    json_t *resp;
    assert_int_equal(CALL(f, f->ops, "GET", "/api/v1/bindings?node=n1", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 2);
    json_decref(resp);
    assert_int_equal(CALL(f, f->red, "GET", "/api/v1/bindings?node=n1", NULL, NULL), 403);
    /* ops release red's binding by hand: needs a reason */
    json_t *j = job(f, f->red, "red", "p", rid);
    char path[200];
    snprintf(path, sizeof path, "/api/v1/bindings/%s/release",
             at_str(json_array_get(json_object_get(j, "bindings"), 0), "id"));
    json_decref(j);
    assert_int_equal(CALL(f, f->ops, "POST", path, "{}", NULL), 400);
    assert_int_equal(CALL(f, f->red, "POST", path, "{\"reason\":\"x\"}", NULL), 403);
    assert_int_equal(CALL(f, f->ops, "POST", path, "{\"reason\":\"fan swap\"}", NULL), 200);
    assert_int_equal(CALL(f, f->ops, "POST", path, "{\"reason\":\"again\"}", NULL), 409);
    /* the node goes silent: the sweep marks it unreachable and contains its jobs */
    at_sql(&f->t, "UPDATE nodes SET last_heartbeat = 1");
    gp_err err = GP_ERR_INIT;
    assert_int_equal(api__sweep_nodes(f->t.st, 1000000, 0, NULL, NULL, &err), GP_OK);
    j = job(f, f->blue, "blue", "q", bid);
    assert_string_equal(at_str(j, "state"), "failed"); /* recovery: fail */
    assert_string_equal(at_str(json_array_get(json_object_get(j, "bindings"), 0), "end_reason"),
                        "node_lost");
    json_decref(j);
    j = job(f, f->red, "red", "p", rid);
    assert_string_not_equal(at_str(j, "state"), "running");
    json_decref(j);
    assert_int_equal(CALL(f, f->t.admin, "GET", "/api/v1/audit?action=node.contain", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 1);
    json_decref(resp);
    /* nothing is left bound on the lost node */
    assert_int_equal(CALL(f, f->ops, "GET", "/api/v1/bindings?node=n1", NULL, &resp), 200);
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(resp, "items"), i, b) assert_non_null(at_str(b, "end_reason"));
    json_decref(resp);
}

/* Register node `name` (no GPUs) with join token `jt`: the HTTP status; OUT: error message. */
static int reg(cx *f, const char *jt, const char *name, char msg[200]) {
    char body[400];
    json_t *resp = NULL;
    snprintf(body, sizeof body,
             "{\"join_token\":\"%s\",\"node\":{\"name\":\"%s\",\"cpus\":1,\"memory_gib\":1,"
             "\"gpus\":[]}}",
             jt, name);
    int st = CALL(f, NULL, "POST", "/api/v1/agent/register", body, &resp);
    const char *m = json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
    snprintf(msg, 200, "%s", m ? m : "");
    json_decref(resp);
    return st;
}

/* Make a join token with body `b`: its secret (static buffer). */
static const char *mkjoin(cx *f, const char *b) {
    static char tok[RND_SECRET_LEN];
    json_t *resp;
    assert_int_equal(CALL(f, f->ops, "POST", "/api/v1/join-tokens", b, &resp), 201);
    snprintf(tok, sizeof tok, "%s", at_str(resp, "token"));
    json_decref(resp);
    return tok;
}

static void join_token_single_use(void **state) {
    cx *f = *state;
    char msg[200], jt[RND_SECRET_LEN];
    /* n1's token (made with {}) is spent: no second node, not even n1 again */
    assert_int_equal(reg(f, f->join, "n2", msg), 401);
    assert_non_null(strstr(msg, "already used"));
    assert_int_equal(reg(f, f->join, "n1", msg), 401);
    /* bound to a name */
    snprintf(jt, sizeof jt, "%s", mkjoin(f, "{\"node\":\"n3\"}"));
    assert_int_equal(reg(f, jt, "n4", msg), 401);
    assert_non_null(strstr(msg, "bound to another node"));
    assert_int_equal(reg(f, jt, "n3", msg), 201);
    /* a token for new nodes takes over no registered one, not even one gone silent (its
     * identity would bring it the workloads placed there); a token bound to it does */
    at_sql(&f->t, "UPDATE nodes SET state = 'unreachable' WHERE name = 'n1'");
    snprintf(jt, sizeof jt, "%s", mkjoin(f, "{}"));
    assert_int_equal(reg(f, jt, "n1", msg), 401);
    assert_non_null(strstr(msg, "needs a join token bound to it"));
    assert_int_equal(reg(f, jt, "n9", msg), 201); /* the refusal spent no use */
    snprintf(jt, sizeof jt, "%s", mkjoin(f, "{\"node\":\"n1\"}"));
    assert_int_equal(reg(f, jt, "n1", msg), 201);
    /* N uses */
    snprintf(jt, sizeof jt, "%s", mkjoin(f, "{\"max_uses\":2}"));
    assert_int_equal(reg(f, jt, "n5", msg), 201);
    assert_int_equal(reg(f, jt, "n6", msg), 201);
    assert_int_equal(reg(f, jt, "n7", msg), 401);
    assert_non_null(strstr(msg, "used up"));
    /* bad bodies make nothing */
    static const char *const bad[] = {"{\"max_uses\":0}", "{\"max_uses\":10001}",
                                      "{\"max_uses\":\"2\"}", "{\"node\":\"N 1\"}",
                                      "{\"node\":\"n8\",\"max_uses\":2}", "{\"node\":7}", NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(CALL(f, f->ops, "POST", "/api/v1/join-tokens", bad[i], NULL), 400);
    json_t *resp;
    assert_int_equal(CALL(f, f->ops, "GET", "/api/v1/join-tokens", NULL, &resp), 200);
    assert_int_equal(json_array_size(json_object_get(resp, "items")), 5);
    /* the newest, the two-use token: who used it, in order (appended by the statement) */
    json_t *two = json_array_get(json_object_get(resp, "items"), 0);
    assert_int_equal(json_integer_value(json_object_get(two, "uses")), 2);
    assert_string_equal(at_str(two, "state"), "used");
    char *by = json_dumps(json_object_get(two, "used_by"), JSON_COMPACT);
    assert_string_equal(by, "[\"n5\",\"n6\"]");
    free(by);
    json_decref(resp);
    /* the rule itself (pure) */
    assert_null(inv_join_refusal(10, 20, 0, 0, 1, "", "a"));
    assert_non_null(inv_join_refusal(10, 20, 1, 0, 1, "", "a"));  /* revoked */
    assert_non_null(inv_join_refusal(20, 20, 0, 0, 1, "", "a"));  /* expired */
    assert_non_null(inv_join_refusal(10, 20, 0, 1, 1, "", "a"));  /* spent */
    assert_non_null(inv_join_refusal(10, 20, 0, 0, 1, "b", "a")); /* another name */
    assert_null(inv_join_refusal(10, 20, 0, 0, 1, "a", "a"));
    assert_null(inv_join_refusal(10, 20, 0, 2, 3, "", "a"));
}

/* A GPU belongs to the node that registered it; moving it is ops' after a drain (pure rules). */
static void gpu_identity_rules(void **state) {
    (void)state;
    assert_int_equal(inv_claim_refused("n1", "n1"), 0); /* its own card */
    assert_int_equal(inv_claim_refused("", "n1"), 0);   /* a new card */
    assert_int_equal(inv_claim_refused(NULL, "n1"), 0);
    assert_int_equal(inv_claim_refused("n2", "n1"), 1); /* another node's */
    inv_move_facts f = {0};
    assert_non_null(inv_gpu_move_refusal(&f)); /* node in service */
    f.from_draining = 1;
    assert_null(inv_gpu_move_refusal(&f));
    f.open_bindings = 1;
    assert_non_null(inv_gpu_move_refusal(&f)); /* a job still holds it */
    f = (inv_move_facts){.from_lost = 1};
    assert_null(inv_gpu_move_refusal(&f));
    f.same_node = 1;
    assert_non_null(inv_gpu_move_refusal(&f));
}

/* How many nodes are in `state`. */
static int nodes_in(cx *f, const char *state) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *q;
    assert_int_equal(store_begin(f->t.st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &q, &err, "SELECT COUNT(*) FROM nodes WHERE state = ?", "s",
                                 state),
                     GP_OK);
    assert_int_equal(store_step(q, &err), 1);
    int n = (int)store_int(q, 0);
    store_done(q);
    store_rollback(tx);
    return n;
}

static void heard(cx *f, const char *names, int64_t ago_us) {
    char sql[300];
    snprintf(sql, sizeof sql, "UPDATE nodes SET last_heartbeat = %lld WHERE name IN (%s)",
             (long long)(gt_now_us() - ago_us), names);
    at_sql(&f->t, sql);
}

static void mass_silence_rule(void **state) {
    (void)state;
    const int cases[][3] = {{0, 0, 0},    {1, 1, 0},    {3, 3, 0},      {9, 9, 0},
                            {10, 10, 1},  {19, 10, 1},  {20, 10, 0},    {100, 9, 0},
                            {100, 50, 0}, {100, 51, 1}, {10000, 5001, 1}, {10000, 5000, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(inv_mass_silence(cases[i][0], cases[i][1]), cases[i][2]);
}

static void liveness(void **state) {
    cx *f = *state;
    gp_err err = GP_ERR_INIT;
    int held = -1, stalled = -1;
    const int64_t S = 1000000;
    /* twelve ready nodes: n1 and eleven more of the same agent */
    at_sql(&f->t, "INSERT INTO nodes (id, name, agent_user_id, registered_at, last_heartbeat)"
                  " SELECT 'x' || k.k, 'n' || k.k, agent_user_id, registered_at, last_heartbeat"
                  " FROM nodes, (SELECT 2 AS k UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL"
                  " SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL"
                  " SELECT 9 UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 12) k"
                  " WHERE name = 'n1'");
    assert_int_equal(nodes_in(f, "ready"), 12);
    /* all silent 3 s (timeout 1 s), but this server has watched for only 0.5 s: nothing */
    heard(f, "SELECT name FROM nodes", 3 * S);
    assert_int_equal(api__sweep_nodes(f->t.st, S, gt_now_us() - S / 2, &held, &stalled, &err), GP_OK);
    assert_int_equal(nodes_in(f, "ready"), 12);
    assert_int_equal(held, 0);
    assert_int_equal(stalled, 0);
    /* watched long enough: all twelve at once is a mass silence, held (under 5 timeouts) */
    assert_int_equal(api__sweep_nodes(f->t.st, S, 0, &held, NULL, &err), GP_OK);
    assert_int_equal(nodes_in(f, "ready"), 12);
    assert_int_equal(held, 12);
    /* ... but not for ever: n2, silent for 10 timeouts, is marked */
    heard(f, "'n2'", 10 * S);
    assert_int_equal(api__sweep_nodes(f->t.st, S, 0, &held, NULL, &err), GP_OK);
    assert_int_equal(nodes_in(f, "unreachable"), 1);
    assert_int_equal(held, 11);
    /* watched for under a timeout (a restart, a stall): nothing is judged, not even the long
     * silent */
    heard(f, "'n3'", 10 * S);
    assert_int_equal(api__sweep_nodes(f->t.st, S, gt_now_us() - S / 2, &held, NULL, &err), GP_OK);
    assert_int_equal(nodes_in(f, "unreachable"), 1);
    assert_int_equal(held, 0);
    heard(f, "'n3'", 3 * S);
    /* the others heartbeat again: one silent node of eleven is no mass silence, it is marked */
    heard(f, "SELECT name FROM nodes WHERE name <> 'n1'", 0);
    assert_int_equal(api__sweep_nodes(f->t.st, S, 0, &held, NULL, &err), GP_OK);
    assert_int_equal(nodes_in(f, "unreachable"), 2);
    assert_int_equal(held, 0);
    assert_int_equal(nodes_in(f, "ready"), 10);
    /* a silence that reaches the ten one after another: four past the timeout, six past half
     * of it - one silence, the four are held; once the six heartbeat again the four are not a
     * mass silence any more and are marked */
    heard(f, "SELECT name FROM nodes WHERE state = 'ready'", S * 7 / 10);
    heard(f, "SELECT name FROM nodes WHERE state = 'ready' ORDER BY name LIMIT 4", S * 12 / 10);
    assert_int_equal(api__sweep_nodes(f->t.st, S, 0, &held, NULL, &err), GP_OK);
    assert_int_equal(nodes_in(f, "ready"), 10);
    assert_int_equal(held, 4);
    heard(f, "SELECT name FROM nodes WHERE state = 'ready' ORDER BY name LIMIT 6 OFFSET 4", 0);
    assert_int_equal(api__sweep_nodes(f->t.st, S, 0, &held, NULL, &err), GP_OK);
    assert_int_equal(nodes_in(f, "unreachable"), 6);
    assert_int_equal(held, 0);
    assert_int_equal(nodes_in(f, "ready"), 6);
}

int main(void) {
    assert_int_equal(rnd_init(), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(gpu_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(node_loss_and_release, setup, teardown),
        cmocka_unit_test_setup_teardown(join_token_single_use, setup, teardown),
        cmocka_unit_test(mass_silence_rule),
        cmocka_unit_test(gpu_identity_rules),
        cmocka_unit_test_setup_teardown(liveness, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
