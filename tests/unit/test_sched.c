/*
 * test_sched.c - the pure scheduler: admission on every quota dimension,
 * ordering (priority, fair share, age), every placement constraint, gang
 * all-or-nothing, preemption choices and the absence of preemption loops,
 * and a property test on random clusters: nothing over-committed, no quota
 * exceeded, round after round.
 */
#include "testutil.h"

#include "../../src/sched/jobs.h"
#include "../../src/sched/sched.h"

#include "sched_world.h"

static void admission_every_dimension(void **state) {
    (void)state;
    static const struct {
        int dim;
        int64_t lim;
        const char *text;
    } cases[] = {
        {QD_GPU_MILLI, 1000, "gpus 1/1 in use"},
        {QD_GPU_MEM, 80, "gpu_memory_gib 80/80 in use"},
        {QD_CPUS, 8, "cpus 8/8 in use"},
        {QD_MEM, 64, "memory_gib 64/64 in use"},
        {QD_JOBS, 1, "concurrent_jobs 1/1 in use"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int level = 0; level < 2; level++) {
            world w;
            sch_result r;
            w_init(&w);
            w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
            int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 8, 64, 0);
            if (level) w.tenants[0].quota.v[cases[i].dim] = cases[i].lim;
            else w.projects[0].quota.v[cases[i].dim] = cases[i].lim;
            int a = w_job(&w, 0, c, 1, 100, 1), b = w_job(&w, 0, c, 1, 100, 2);
            round_ok(&w, &r);
            assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
            const sch_decision *db = dec(&r, b);
            assert_int_equal(db->action, SCH_DO_NOTHING);
            if (!strstr(db->reason, cases[i].text) ||
                !strstr(db->reason, level ? "tenant red" : "project red-p"))
                fail_msg("reason '%s' lacks '%s'", db->reason, cases[i].text);
            assert_non_null(strstr(db->reason, "quota_exceeded"));
            sch_result_free(&r);
        }
    /* class units and card-hours */
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    w.projects[0].quota.nclass = 1;
    snprintf(w.projects[0].quota.class_name[0], 64, "a100.1x");
    w.projects[0].quota.class_units[0] = 2;
    w.tenants[1].quota.v[QD_CARD_HOURS] = 1000000;
    w.tenants[1].card_hours_used = 1000000;
    int a = w_job(&w, 0, c, 2, 100, 1), b = w_job(&w, 0, c, 1, 100, 2), x = w_job(&w, 1, c, 1, 100, 3);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
    assert_non_null(strstr(dec(&r, b)->reason, "gpus(class a100.1x) 2/2 in use"));
    assert_non_null(strstr(dec(&r, x)->reason, "card_hours_exhausted: tenant blue 1000/1000 for 2026-12"));
    sch_result_free(&r);
}

static void waiting_never_passes_quota(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    w.projects[0].quota.v[QD_GPU_MILLI] = 2000;
    for (int i = 0; i < 5; i++) w_job(&w, 0, c, 1, 100, i);
    for (int round = 0; round < 10; round++) {
        round_ok(&w, &r);
        w_apply(&w, &r);
        sch_result_free(&r);
    }
    int running = 0;
    for (int i = 0; i < w.nj; i++) running += w.jobs[i].state == SCH_RUNNING;
    assert_int_equal(running, 2);
}

/*
 * Free cards on a node short of CPUs or memory are not free for a job: its reason says what is
 * short, never "needs 1 unit, 1 free now" (issue 42, item 1).
 */
static void reason_names_cpu_memory(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 2, 0, SCH_WHOLE, 8, 512, 0);   /* 2 free cards, 8 CPUs */
    int c = w_class(&w, "big-cpu", SCH_WHOLE, 1, 16, 32, 0);
    int j = w_job(&w, 0, c, 1, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, j)->action, SCH_DO_ADMIT);
    assert_string_equal(dec(&r, j)->reason,
                        "no_capacity: class big-cpu needs 1 unit, 0 free now with their CPUs and "
                        "memory (2 on the cards alone; a unit needs 16 CPUs, nodes with a free card "
                        "have at most 8 free)");
    sch_result_free(&r);
    /* memory short, on another world */
    w_init(&w);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 100, 0);
    c = w_class(&w, "big-mem", SCH_WHOLE, 1, 1, 256, 0);
    j = w_job(&w, 0, c, 1, 100, 1);
    round_ok(&w, &r);
    assert_string_equal(dec(&r, j)->reason,
                        "no_capacity: class big-mem needs 1 unit, 0 free now with their CPUs and "
                        "memory (2 on the cards alone; a unit needs 256 GiB, nodes with a free card "
                        "have at most 100 GiB free)");
    sch_result_free(&r);
    /* enough of both: the plain count, as before */
    w_init(&w);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 0);
    c = w_class(&w, "fits", SCH_WHOLE, 1, 1, 1, 0);
    j = w_job(&w, 0, c, 3, 100, 1);
    round_ok(&w, &r);
    assert_string_equal(dec(&r, j)->reason, "no_capacity: class fits needs 3 units, 2 free now");
    sch_result_free(&r);
}

static void order_priority_fairshare_age(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 1, 0, SCH_WHOLE, 64, 512, 0);
    w_node(&w, 4, 1, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    int c2 = w_class(&w, "h100.1x", SCH_WHOLE, 1, 1, 1, 1);
    /* red already uses 3 of its 4 GPUs; blue none: blue is served first at equal priority */
    w.tenants[0].quota.v[QD_GPU_MILLI] = 4000;
    w.tenants[1].quota.v[QD_GPU_MILLI] = 4000;
    for (int i = 0; i < 3; i++) {
        int k = w_job(&w, 0, c2, 1, 100, i);
        w.jobs[k].state = SCH_RUNNING;
        w.places[k][0].gpu[0] = 1 + i;
        w.places[k][0].slice = -1;
    }
    int red = w_job(&w, 0, c, 1, 100, 10), blue = w_job(&w, 1, c, 1, 100, 20);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, blue)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, red)->action, SCH_DO_ADMIT);
    assert_non_null(strstr(dec(&r, red)->reason, "no_capacity"));
    sch_result_free(&r);
    /* priority beats fair share; age breaks ties */
    w.jobs[red].priority = 200;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, red)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, blue)->action, SCH_DO_ADMIT);
    sch_result_free(&r);
    w.jobs[red].priority = 100;
    w.tenants[0].quota.v[QD_GPU_MILLI] = QUOTA_NONE;
    w.tenants[1].quota.v[QD_GPU_MILLI] = QUOTA_NONE;
    for (int i = 0; i < 3; i++) w.jobs[i].state = SCH_PENDING; /* nobody uses anything */
    w.jobs[0].cls = c;
    w.jobs[1].cls = c;
    w.jobs[2].cls = c;
    round_ok(&w, &r);
    /* j0 is oldest of red; blue's job is younger than red's first, fair shares equal at 0 */
    assert_int_equal(dec(&r, 0)->action, SCH_DO_PLACE);
    sch_result_free(&r);
}

static void placement_constraints(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    int n0 = w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int n1 = w_node(&w, 2, 1, SCH_MIG, 64, 512, 0);
    int n2 = w_node(&w, 2, 2, SCH_SHARED, 64, 512, 1);
    (void)n1;
    int c4 = w_class(&w, "a100.4x", SCH_WHOLE, 4, 8, 64, 0);
    int cmig = w_class(&w, "h100.mig", SCH_MIG, 1, 2, 8, 1);
    int csh = w_class(&w, "l40s.sh", SCH_SHARED, 1, 2, 8, 2);
    int cnone = w_class(&w, "t4.1x", SCH_WHOLE, 1, 1, 1, 3);
    w.classes[c4].topology = SCH_TOPO_NUMA;
    int a = w_job(&w, 0, c4, 1, 100, 1), b = w_job(&w, 0, c4, 1, 100, 2), c = w_job(&w, 0, c4, 1, 100, 3);
    int m = w_job(&w, 0, cmig, 3, 100, 4);
    int sh = w_job(&w, 0, csh, 4, 100, 5), sh2 = w_job(&w, 0, csh, 5, 100, 6);
    int none = w_job(&w, 0, cnone, 1, 100, 7);
    round_ok(&w, &r);
    /* two NUMA-local units of 4 fit on the 8-GPU node, the third does not */
    assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, b)->action, SCH_DO_PLACE);
    for (int k = 1; k < 4; k++)
        assert_int_equal(w.gpus[dec(&r, a)->units[0].gpu[k]].numa,
                         w.gpus[dec(&r, a)->units[0].gpu[0]].numa);
    assert_int_equal(w.gpus[dec(&r, a)->units[0].gpu[0]].node, n0);
    assert_int_equal(dec(&r, c)->action, SCH_DO_ADMIT);
    /* only two 3g.40gb slices exist: gang of three waits whole */
    assert_int_equal(dec(&r, m)->action, SCH_DO_ADMIT);
    assert_null(dec(&r, m)->units);
    /* shared: 4 slices of 25 % fit on one card (packed), 5 more do not fit in the rest */
    assert_int_equal(dec(&r, sh)->action, SCH_DO_PLACE);
    for (int k = 1; k < 4; k++) assert_int_equal(dec(&r, sh)->units[k].gpu[0], dec(&r, sh)->units[0].gpu[0]);
    assert_int_equal(dec(&r, sh2)->action, SCH_DO_ADMIT);
    assert_non_null(strstr(dec(&r, none)->reason, "no_matching_gpu"));
    sch_result_free(&r);
    /* pools: tenant red may not use pool 1, where the shared cards are */
    w.pool_ok[0][1] = 0;
    for (int i = 0; i < w.nj; i++) w.jobs[i].state = SCH_PENDING;
    round_ok(&w, &r);
    assert_non_null(strstr(dec(&r, sh)->reason, "no_allowed_pool"));
    sch_result_free(&r);
    w.pool_ok[0][1] = 1;
    /* unhealthy cards are never used; node CPU limits count */
    for (int g = w.nodes[n2].gpu0; g < w.nodes[n2].gpu0 + 2; g++) w.gpus[g].allocatable = 0;
    w.nodes[n0].cpus = 8;
    round_ok(&w, &r);
    assert_non_null(strstr(dec(&r, sh)->reason, "no_matching_gpu"));
    assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, b)->action, SCH_DO_ADMIT); /* CPUs of the node are gone */
    sch_result_free(&r);
}

static void nvlink_groups(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0); /* NVLink groups of 4: cards 0-3, 4-7 */
    int c = w_class(&w, "a100.4x", SCH_WHOLE, 4, 1, 1, 0);
    w.classes[c].topology = SCH_TOPO_NVLINK;
    /* one card of each group is taken: no group has 4 free */
    int c1 = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    for (int k = 0; k < 2; k++) {
        int h = w_job(&w, 1, c1, 1, 100, k);
        w.jobs[h].state = SCH_RUNNING;
        w.places[h][0].gpu[0] = k * 4;
        w.places[h][0].slice = -1;
    }
    int j = w_job(&w, 0, c, 1, 100, 10);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, j)->action, SCH_DO_ADMIT);
    sch_result_free(&r);
    /* free group 4-7: the unit lands there, inside one group */
    w.places[1][0].gpu[0] = 3;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, j)->action, SCH_DO_PLACE);
    for (int k = 0; k < 4; k++) assert_int_equal(w.gpus[dec(&r, j)->units[0].gpu[k]].nvgroup, 1);
    sch_result_free(&r);
}

static void driver_and_project_class_rules(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 0);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 1);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    /* the cards of node 0 have too old a driver for the class */
    unsigned char gok[4] = {0, 0, 1, 1};
    w.classes[c].gpu_ok = gok;
    int a = w_job(&w, 0, c, 2, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
    for (int k = 0; k < 2; k++) assert_int_equal(w.gpus[dec(&r, a)->units[k].gpu[0]].node, 1);
    sch_result_free(&r);
    /* pool 1 is closed to this project's class: nothing else fits */
    unsigned char ppok[4] = {1, 0, 1, 1};
    w.projects[0].pool_ok = ppok;
    round_ok(&w, &r);
    assert_non_null(strstr(dec(&r, a)->reason, "no_allowed_pool"));
    assert_non_null(strstr(dec(&r, a)->reason, "projects"));
    sch_result_free(&r);
    /* another project of the same tenant, whose class may use it, gets it */
    int b = w_job(&w, 2, c, 2, 100, 2);
    w.projects[2].tenant = 0;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, b)->action, SCH_DO_PLACE);
    sch_result_free(&r);
    /* the pool with the class's cards closed to the tenant, its project's class open to it:
     * the tenant is named, not the project's class (pool 0, open to the tenant, holds no
     * card the class may use) (issue 42, item 1) */
    w.nj = 1;
    unsigned char all[4] = {1, 1, 1, 1}, tok[4] = {1, 0, 1, 1};
    w.projects[0].pool_ok = all;
    w.tenants[0].pool_ok = tok;
    round_ok(&w, &r);
    assert_string_equal(dec(&r, a)->reason,
                        "no_allowed_pool: GPUs of class a100.1x exist only in pools tenant red "
                        "may not use");
    sch_result_free(&r);
}

static void priority_policy(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    prio_class p = {.name = "high", .value = 1000};
    p.project_classes = json_pack("[s]", "production");
    p.roles = json_pack("[s]", "project-admin");
    json_t *admin = json_pack("[s]", "project-admin"), *user = json_pack("[s]", "project-user");
    assert_int_equal(prio_allowed(&p, "production", admin, &err), GP_OK);
    assert_int_equal(prio_allowed(&p, "research", admin, &err), GP_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "not allowed for research projects"));
    assert_int_equal(prio_allowed(&p, "production", user, &err), GP_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "needs one of the roles"));
    json_decref(p.roles);
    p.roles = json_array(); /* anyone */
    assert_int_equal(prio_allowed(&p, "production", user, &err), GP_OK);
    prio_release(&p);
    json_decref(admin);
    json_decref(user);
}

static void gang_all_or_nothing(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 0);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.2x", SCH_WHOLE, 2, 1, 1, 0);
    int big = w_job(&w, 0, c, 3, 100, 1); /* needs 3 nodes of 2: only 2 exist */
    int two = w_job(&w, 0, c, 2, 100, 2); /* spans both nodes */
    round_ok(&w, &r);
    /* the gang of three gets nothing at all (no partial placement) */
    assert_int_equal(dec(&r, big)->action, SCH_DO_ADMIT);
    assert_null(dec(&r, big)->units);
    /* at equal priority the one that fits is placed, one unit per node */
    assert_int_equal(dec(&r, two)->action, SCH_DO_PLACE);
    int nodes_used[2] = {0, 0};
    for (int k = 0; k < 2; k++) nodes_used[w.gpus[dec(&r, two)->units[k].gpu[0]].node]++;
    assert_int_equal(nodes_used[0], 1);
    assert_int_equal(nodes_used[1], 1);
    sch_result_free(&r);
    /* a lower-priority job does not jump a waiting higher-priority one of its class */
    w.jobs[two].priority = 50;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, two)->action, SCH_DO_ADMIT);
    assert_non_null(strstr(dec(&r, two)->reason, "waiting_behind_higher_priority: job j0"));
    sch_result_free(&r);
}

static void preemption_choices(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0);
    int c1 = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    int c2 = w_class(&w, "a100.2x", SCH_WHOLE, 2, 1, 1, 0);
    /* four running 1-GPU jobs: priorities 10, 20, 20 (newer), and a non-preemptible 5 */
    int prios[4] = {10, 20, 20, 5};
    int v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = w_job(&w, 1, c1, 1, prios[i], i);
        w.jobs[v[i]].state = SCH_RUNNING;
        w.jobs[v[i]].start_us = 100 + i;
        w.places[v[i]][0].gpu[0] = i;
        w.places[v[i]][0].slice = -1;
    }
    w.jobs[v[3]].preemptible = 0;
    int hi = w_job(&w, 0, c2, 1, 100, 50);
    w.jobs[hi].may_preempt = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, hi)->action, SCH_DO_WAIT_PREEMPT);
    /* fewest and lowest: the priority-10 job and the newer of the two priority-20 jobs */
    assert_true(preempted(&r, v[0]));
    assert_true(preempted(&r, v[2]));
    assert_false(preempted(&r, v[1]));
    assert_false(preempted(&r, v[3])); /* never the non-preemptible */
    assert_int_equal(r.preempted, 2);
    sch_result_free(&r);
    /* a job that may not preempt just waits; equal priority is never a victim */
    w.jobs[hi].may_preempt = 0;
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 0);
    sch_result_free(&r);
    w.jobs[hi].may_preempt = 1;
    w.jobs[hi].priority = 20;
    round_ok(&w, &r);
    assert_false(preempted(&r, v[1]));
    assert_false(preempted(&r, v[2]));
    sch_result_free(&r);
    /* preemption never breaks the preemptor's own quota */
    w.jobs[hi].priority = 100;
    w.projects[0].quota.v[QD_GPU_MILLI] = 1000;
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 0);
    assert_non_null(strstr(dec(&r, hi)->reason, "quota_exceeded"));
    sch_result_free(&r);
}

static void no_preemption_loops(void **state) {
    (void)state;
    /* two may-preempt jobs of different priorities on one GPU: the order settles and stays */
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 1, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    int a = w_job(&w, 0, c, 1, 50, 1), b = w_job(&w, 1, c, 1, 60, 2);
    w.jobs[a].may_preempt = w.jobs[b].may_preempt = 1;
    int preemptions = 0;
    for (int round = 0; round < 20; round++) {
        round_ok(&w, &r);
        preemptions += r.preempted;
        w_apply(&w, &r);
        /* a job waiting for preemption runs next round (the victim is gone) */
        sch_result_free(&r);
    }
    assert_true(preemptions <= 1);
    assert_int_equal(w.jobs[b].state, SCH_RUNNING);
}

/*
 * A job that may preempt stops victims once, and what they release is its own: jobs ahead of
 * it in the queue that may not preempt (same priority and older, or higher priority) do not
 * take it in the next round, which would make it stop another victim every round (one per
 * such job).  Victims are requeued, as round.c commits a preemption (bindings ended at once).
 */
static void preemptor_keeps_what_its_victims_free(void **state) {
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        world w;
        sch_result r;
        w_init(&w);
        w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0);
        int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
        int v[4];
        for (int i = 0; i < 4; i++) {
            v[i] = w_job(&w, 1, c, 1, 10, i);
            w.jobs[v[i]].state = SCH_RUNNING;
            w.jobs[v[i]].start_us = 100 + i;
            w.places[v[i]][0].gpu[0] = i;
            w.places[v[i]][0].slice = -1;
        }
        /* ahead of the preemptor: three jobs that may not preempt - of its priority and
         * older (0), of a higher priority (1), or both kinds (2) */
        int ahead[3];
        for (int k = 0; k < 3; k++)
            ahead[k] = w_job(&w, 0, c, 1, variant == 1 || (variant == 2 && k == 1) ? 200 : 100,
                             10 + k);
        int p = w_job(&w, 0, c, 1, 100, 50);
        w.jobs[p].may_preempt = 1;
        int preemptions = 0;
        for (int round = 0; round < 8; round++) {
            round_ok(&w, &r);
            preemptions += r.preempted;
            if (round == 0) {
                assert_int_equal(r.preempted, 1);
                assert_int_equal(dec(&r, p)->action, SCH_DO_WAIT_PREEMPT);
            }
            w_apply(&w, &r);
            sch_result_free(&r);
        }
        if (preemptions != 1)
            fail_msg("variant %d: %d jobs preempted for one 1-GPU job", variant, preemptions);
        assert_int_equal(w.jobs[p].state, SCH_RUNNING);
        for (int k = 0; k < 3; k++) assert_int_not_equal(w.jobs[ahead[k]].state, SCH_RUNNING);
        int running = 0;
        for (int i = 0; i < 4; i++) running += w.jobs[v[i]].state == SCH_RUNNING;
        assert_int_equal(running, 3);
    }
}

static unsigned rnd(unsigned *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void property_random_clusters(void **state) {
    (void)state;
    unsigned seed = 0x9e3779b9u;
    for (int trial = 0; trial < 60; trial++) {
        world w;
        w_init(&w);
        w.nt = 3;
        w.np = 6;
        for (int p = 0; p < 6; p++) w.projects[p].tenant = p % 3;
        int nodes = 2 + (int)(rnd(&seed) % 10);
        for (int n = 0; n < nodes; n++) {
            int mode = (int)(rnd(&seed) % 3);
            w_node(&w, 1 + (int)(rnd(&seed) % 8), (int)(rnd(&seed) % 3), mode,
                   8 + (int)(rnd(&seed) % 64), 64 + (int)(rnd(&seed) % 512), (int)(rnd(&seed) % 2));
            if (rnd(&seed) % 5 == 0) w.gpus[w.ng - 1].allocatable = 0;
        }
        for (int m = 0; m < 3; m++) {
            w_class(&w, "whole", SCH_WHOLE, 1 + (int)(rnd(&seed) % 3), 2, 16, m);
            w_class(&w, "mig", SCH_MIG, 1, 2, 16, m);
        }
        w_class(&w, "shared", SCH_SHARED, 1, 1, 8, (int)(rnd(&seed) % 3));
        for (int t = 0; t < 3; t++)
            if (rnd(&seed) % 2) w.tenants[t].quota.v[QD_GPU_MILLI] = 1000 * (1 + rnd(&seed) % 10);
        for (int p = 0; p < 6; p++)
            if (rnd(&seed) % 2) w.projects[p].quota.v[QD_CPUS] = 4 * (1 + rnd(&seed) % 10);
        int jobs = 20 + (int)(rnd(&seed) % 100);
        for (int j = 0; j < jobs; j++) {
            int k = w_job(&w, (int)(rnd(&seed) % 6), (int)(rnd(&seed) % w.nc),
                          1 + (int)(rnd(&seed) % 3), (int)(rnd(&seed) % 4) * 10, j);
            w.jobs[k].may_preempt = rnd(&seed) % 3 == 0;
            w.jobs[k].preemptible = rnd(&seed) % 4 != 0;
        }
        for (int round = 0; round < 6; round++) {
            sch_result r;
            round_ok(&w, &r); /* sch_check: nothing over-committed, no quota exceeded */
            w_apply(&w, &r);
            sch_result_free(&r);
        }
    }
}

/* How many of tenant tn's jobs run. */
static int w_running(const world *w, int tn) {
    int n = 0;
    for (int i = 0; i < w->nj; i++)
        n += w->jobs[i].state == SCH_RUNNING && w->projects[w->jobs[i].project].tenant == tn;
    return n;
}

/*
 * Guarantees (sched.h, step 6): a tenant borrows what another leaves idle up to its ceiling;
 * the owner's job within its guarantee takes it back in the next round (the newest borrowed
 * job stops, whatever its priority and preemptible flag), the borrower keeps its guarantee
 * and may not borrow again what the owner uses; work above a guarantee never reclaims.
 */
static void guarantees_borrow_and_reclaim(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    for (int t = 0; t < 2; t++) {
        w.tenants[t].quota.v[QD_GPU_MILLI] = 8000;
        w.tenants[t].quota.guarantee = 4000;
    }
    int blue[8], red[6];
    for (int i = 0; i < 8; i++) {
        blue[i] = w_job(&w, 1, c, 1, 200, i);
        w.jobs[blue[i]].preemptible = 0; /* borrowed work is taken all the same */
    }
    round_ok(&w, &r);
    assert_int_equal(r.placed, 8); /* red is idle: blue borrows 4 up to its ceiling */
    w_apply(&w, &r);
    sch_result_free(&r);
    /* red (lower priority, may not preempt) asks for 2: within its guarantee, it reclaims */
    for (int i = 0; i < 2; i++) red[i] = w_job(&w, 0, c, 1, 10, 100 + i);
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dec(&r, red[i])->action, SCH_DO_WAIT_PREEMPT);
        assert_true(dec(&r, red[i])->reclaim);
        assert_non_null(strstr(dec(&r, red[i])->reason, "waiting_for_reclaim"));
    }
    for (int i = 0; i < 8; i++) /* the newest borrowed go: blue[6], blue[7] */
        assert_int_equal(preempted(&r, blue[i]), i >= 6);
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) {
            assert_true(r.d[i].reclaim && r.d[i].borrowed);
            assert_non_null(strstr(r.d[i].reason, "reclaimed"));
            assert_null(strstr(r.d[i].reason, "red")); /* the owner is not named */
        }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r); /* the next round: red runs, blue may not borrow back what red uses */
    assert_int_equal(dec(&r, red[0])->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, red[1])->action, SCH_DO_PLACE);
    assert_int_equal(r.preempted, 0);
    assert_non_null(strstr(dec(&r, blue[6])->reason, "borrow_limit"));
    w_apply(&w, &r);
    sch_result_free(&r);
    /* red wants 4 more: two are owned and reclaim, two above its guarantee wait; blue keeps 4 */
    for (int i = 2; i < 6; i++) red[i] = w_job(&w, 0, c, 1, 10, 200 + i);
    int stops = 0;
    for (int round = 0; round < 6; round++) {
        round_ok(&w, &r);
        stops += r.preempted;
        w_apply(&w, &r);
        sch_result_free(&r);
    }
    assert_int_equal(stops, 2);
    assert_int_equal(w_running(&w, 0), 4);
    assert_int_equal(w_running(&w, 1), 4);
    /* settled: a round changes nothing */
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0);
    sch_result_free(&r);
}

/* A kept part is never lent, even idle; a tenant without a guarantee borrows all it runs once
 * another has one (and is reclaimed first when it borrows most per weight). */
static void guarantees_kept_and_weight(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w.nt = 3;
    w.np = 3;
    w.projects[2].tenant = 2;
    w.projects[2].name = "green-p";
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    w.tenants[0].quota.guarantee = 4000;
    w.tenants[0].quota.kept = 2000; /* red runs nothing, but 2 of its 4 stay free */
    w.tenants[1].quota.guarantee = 2000;
    w.tenants[1].quota.weight = 4;
    int b[8];
    for (int i = 0; i < 8; i++) b[i] = w_job(&w, 1, c, 1, 100, i);
    round_ok(&w, &r);
    assert_int_equal(r.placed, 6);
    assert_non_null(strstr(dec(&r, b[6])->reason, "borrow_limit"));
    w_apply(&w, &r);
    sch_result_free(&r);
    /* green, no guarantee: all it would run is borrowed, and nothing is idle to lend */
    int g = w_job(&w, 2, c, 1, 100, 50);
    round_ok(&w, &r);
    assert_non_null(strstr(dec(&r, g)->reason, "borrow_limit"));
    sch_result_free(&r);
    /* blue gives two back; green borrows one, blue's queued borrowed work the other */
    w.jobs[b[4]].state = SCH_PENDING;
    w.jobs[b[5]].state = SCH_PENDING;
    w.jobs[b[4]].submit_us = w.jobs[b[5]].submit_us = 1000;
    round_ok(&w, &r);
    w_apply(&w, &r);
    sch_result_free(&r);
    assert_int_equal(w.jobs[g].state, SCH_RUNNING);
    /* red asks for 3: green borrows 1 per weight 1, blue 3 per weight 4 (0.75): green first */
    for (int i = 0; i < 3; i++) w_job(&w, 0, c, 1, 0, 2000 + i);
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 1); /* red's kept two are free: one more is needed */
    assert_true(preempted(&r, g));
    w_apply(&w, &r);
    sch_result_free(&r);
    for (int round = 0; round < 4; round++) {
        round_ok(&w, &r);
        w_apply(&w, &r);
        sch_result_free(&r);
    }
    assert_int_equal(w_running(&w, 0), 3);
    assert_true(w_running(&w, 1) >= 2); /* never below its guarantee */
}

/*
 * Fair use of idle capacity (sched.h, step 6a): owned work first, then the borrowers by their
 * borrow key - (recent borrowing + borrowed now x horizon) / weight - so that idle capacity
 * is shared by weight, and a tenant that borrowed a lot recently yields to those that did not.
 * The borrowers' jobs are all queued before the others' (blue's first): in queue order blue
 * alone would take every idle card.
 */
static void fair_use_world(world *w, int *cls) {
    w_init(w);
    w->nt = 4;
    w->np = 4;
    w->tenants[3].name = "gold";
    for (int p = 0; p < 4; p++) {
        w->projects[p].tenant = p;
        w->projects[p].name = p == 0 ? "red-p" : p == 1 ? "blue-p" : p == 2 ? "green-p" : "gold-p";
    }
    w_node(w, 8, 0, SCH_WHOLE, 64, 512, 0);
    w_node(w, 8, 0, SCH_WHOLE, 64, 512, 0);
    *cls = w_class(w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    w->tenants[0].quota.guarantee = 10000; /* red: idle, lends 10 */
    for (int t = 1; t < 4; t++) w->tenants[t].quota.guarantee = 2000;
    w->s.borrow_horizon_s = 3600;
}

static int fair_running(const world *w, const sch_result *r, int tn) {
    int n = 0;
    for (int i = 0; i < r->n; i++)
        n += r->d[i].action == SCH_DO_PLACE && w->projects[w->jobs[r->d[i].job].project].tenant == tn;
    return n;
}

static void fair_use_by_weight_and_recent(void **state) {
    (void)state;
    world w;
    sch_result r;
    int c;
    /* by weight: blue 1, green 1, gold 2 - each runs its 2 owned, then the 10 idle go about
     * 1 : 1 : 2 (ties in queue order) */
    fair_use_world(&w, &c);
    w.tenants[3].quota.weight = 2;
    for (int t = 1; t < 4; t++)
        for (int i = 0; i < 12; i++) w_job(&w, t, c, 1, 100, t * 100 + i);
    round_ok(&w, &r);
    assert_int_equal(r.placed, 16);
    int b = fair_running(&w, &r, 1), g = fair_running(&w, &r, 2), au = fair_running(&w, &r, 3);
    assert_int_equal(b + g + au, 16);
    assert_true(au >= 6 && b <= 5 && g <= 5);
    assert_true(b - g <= 1 && g - b <= 1);
    assert_non_null(r.borrowed);
    for (int t = 0; t < 4; t++) assert_int_equal(r.borrowed[t], 0); /* nothing ran before */
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r); /* settled: what runs is marked, nothing moves */
    assert_int_equal(r.placed + r.preempted, 0);
    assert_int_equal(r.borrowed[1] + r.borrowed[2] + r.borrowed[3], 10000);
    sch_result_free(&r);

    /* by recent borrowing: equal weights, blue borrowed 5 GPUs for an hour (the horizon):
     * green and gold take the idle cards until they weigh as much, blue gets none */
    fair_use_world(&w, &c);
    w.tenants[1].recent = 5000LL * 3600;
    for (int t = 1; t < 4; t++)
        for (int i = 0; i < 12; i++) w_job(&w, t, c, 1, 100, t * 100 + i);
    round_ok(&w, &r);
    assert_int_equal(fair_running(&w, &r, 1), 2); /* its guarantee only */
    assert_int_equal(fair_running(&w, &r, 2), 7);
    assert_int_equal(fair_running(&w, &r, 3), 7);
    for (int i = 0; i < r.n; i++) /* why blue's borrowed work waits */
        if (w.projects[w.jobs[r.d[i].job].project].tenant == 1 && r.d[i].action != SCH_DO_PLACE)
            assert_non_null(strstr(r.d[i].reason, "borrow_limit"));
    sch_result_free(&r);

    /* priority still comes first among borrowers: blue's high-priority job goes before the
     * others' borrowing even with its recent use */
    fair_use_world(&w, &c);
    w.tenants[1].recent = 5000LL * 3600;
    for (int t = 1; t < 4; t++)
        for (int i = 0; i < 12; i++) w_job(&w, t, c, 1, 100, t * 100 + i);
    int hi = w_job(&w, 1, c, 1, 500, 999);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, hi)->action, SCH_DO_PLACE);
    sch_result_free(&r);

    /* owned work first: a borrower's earlier job never takes what a later owner needs */
    fair_use_world(&w, &c);
    for (int i = 0; i < 16; i++) w_job(&w, 1, c, 1, 100, i);  /* blue: 2 owned, 14 would borrow */
    int own[10];
    for (int i = 0; i < 10; i++) own[i] = w_job(&w, 0, c, 1, 100, 1000 + i); /* red, owned */
    round_ok(&w, &r);
    for (int i = 0; i < 10; i++) assert_int_equal(dec(&r, own[i])->action, SCH_DO_PLACE);
    assert_int_equal(fair_running(&w, &r, 1), 6); /* its 2 and the 4 nobody is owed */
    sch_result_free(&r);
}

/*
 * The reclaim cap (sched.h, step 6): a borrowed job stopped reclaim_cap times within the
 * window (sch_job.stops, counted from the store) is never a reclaim victim; the owner waits
 * with "reclaim_capped" and nobody is stopped.  Below the cap, reclaim goes on as before and
 * skips only the capped jobs.  A capped job stays preemptible by priority only as its class
 * says.  No cap (0): as before.
 */
static void guarantees_reclaim_cap(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    for (int t = 0; t < 2; t++) {
        w.tenants[t].quota.v[QD_GPU_MILLI] = 8000;
        w.tenants[t].quota.guarantee = 4000;
    }
    w.s.reclaim_cap = 3;
    w.s.reclaim_window_s = 3600;
    int blue[8];
    for (int i = 0; i < 8; i++) {
        blue[i] = w_job(&w, 1, c, 1, 200, i);
        w.jobs[blue[i]].preemptible = 0;
    }
    round_ok(&w, &r);
    assert_int_equal(r.placed, 8);
    w_apply(&w, &r);
    sch_result_free(&r);
    for (int i = 0; i < 8; i++) w.jobs[blue[i]].start_us = 1000 + i; /* blue[7] newest */
    /* every borrowed job (blue[4..7]) was stopped 3 times within the window: capped */
    for (int i = 4; i < 8; i++) w.jobs[blue[i]].stops = 3;
    int red[2];
    for (int i = 0; i < 2; i++) red[i] = w_job(&w, 0, c, 1, 10, 100 + i);
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 0);
    for (int i = 0; i < 2; i++) {
        const sch_decision *d = dec(&r, red[i]);
        assert_int_equal(d->action, SCH_DO_ADMIT);
        assert_true(d->capped >= 1);
        if (!strstr(d->reason, "reclaim_capped: tenant red's guarantee is lent to") ||
            !strstr(d->reason, "preempted at least 3 times in the last 1h") || strstr(d->reason, "blue"))
            fail_msg("reason '%s'", d->reason);
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    /* settled: the next round stops nobody either */
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0);
    sch_result_free(&r);
    /* the newest (blue[7]) stays capped; blue[6] is below the cap: reclaim takes it, skipping
     * blue[7], and the second owner finds only capped work */
    w.jobs[blue[6]].stops = 2;
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 1);
    assert_true(preempted(&r, blue[6]));
    assert_false(preempted(&r, blue[7]));
    assert_int_equal(dec(&r, red[0])->action, SCH_DO_WAIT_PREEMPT);
    assert_int_equal(dec(&r, red[1])->capped, 1);
    assert_non_null(strstr(dec(&r, red[1])->reason, "reclaim_capped"));
    assert_non_null(strstr(dec(&r, red[1])->reason, "1 borrowed job preempted"));
    sch_result_free(&r);
    /* a higher-priority owner that may preempt: reclaim is capped, and priority preemption
     * takes a capped job only when its class makes it preemptible */
    w.jobs[blue[6]].stops = 3;
    w.jobs[red[1]].may_preempt = 1;
    w.jobs[red[1]].priority = 500;
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 0);
    sch_result_free(&r);
    w.jobs[blue[7]].preemptible = 1;
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 1);
    assert_true(preempted(&r, blue[7]));
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) assert_false(r.d[i].reclaim);
    sch_result_free(&r);
    w.jobs[blue[7]].preemptible = 0;
    w.jobs[red[1]].may_preempt = 0;
    w.jobs[red[1]].priority = 10;
    /* no cap: reclaim as before */
    w.s.reclaim_cap = 0;
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 2);
    assert_true(preempted(&r, blue[7]) && preempted(&r, blue[6]));
    for (int i = 0; i < 2; i++) assert_int_equal(dec(&r, red[i])->capped, 0);
    sch_result_free(&r);
}

/* A copy of a world whose pointers point into the copy. */
static void w_clone(world *dst, const world *src) {
    memcpy(dst, src, sizeof *dst);
    for (int i = 0; i < dst->nj; i++) {
        dst->jobs[i].id = dst->ids[i];
        dst->jobs[i].place = dst->places[i];
    }
    for (int t = 0; t < 4; t++) dst->tenants[t].pool_ok = dst->pool_ok[t];
    for (int c = 0; c < dst->nc; c++) dst->classes[c].model_ok = dst->model_ok[c];
}

/*
 * From the state a round leaves (applied), rounds with nothing arriving or ending reach a
 * fixpoint within a few rounds: one that places, admits and stops nothing, after which the
 * next one decides exactly the same (same actions, same reasons).
 */
static void settles(const world *w, int trial, int round) {
    world *x = malloc(sizeof *x);
    assert_non_null(x);
    w_clone(x, w);
    sch_result r;
    int quiet = -1;
    for (int k = 0; k < 6 && quiet < 0; k++) {
        round_ok(x, &r);
        int moves = r.placed + r.preempted;
        for (int i = 0; i < r.n; i++) moves += r.d[i].action == SCH_DO_ADMIT;
        w_apply(x, &r);
        sch_result_free(&r);
        if (!moves) quiet = k;
    }
    if (quiet < 0) fail_msg("trial %d round %d: no fixpoint within 6 quiet rounds", trial, round);
    sch_result a, b;
    round_ok(x, &a);
    round_ok(x, &b); /* (a's decisions move nothing: applying them changes no state) */
    assert_int_equal(a.n, b.n);
    for (int i = 0; i < a.n; i++) {
        assert_int_equal(a.d[i].job, b.d[i].job);
        assert_true(a.d[i].action == SCH_DO_NOTHING && b.d[i].action == SCH_DO_NOTHING);
        if (strcmp(a.d[i].reason, b.d[i].reason))
            fail_msg("trial %d round %d: job %s's reason moved: '%s' then '%s'", trial, round,
                     x->jobs[a.d[i].job].id, a.d[i].reason, b.d[i].reason);
    }
    sch_result_free(&a);
    sch_result_free(&b);
    free(x);
}

/*
 * No reclaim loops: random tenants with guarantees (some over-committed), ceilings, kept
 * parts and weights, random arrivals and ends, and the reclaim cap (none, or 1 to 3 stops
 * within a window of WINDOW rounds; some jobs arrive with stops in the window).  A job is
 * never reclaimed twice for the same capacity (between two reclaims of it some work arrived
 * or ended, or the window moved), never reclaimed once past the cap, so never more than the
 * cap within a window; a reclaim never leaves a victim's tenant below its guarantee (what it
 * runs, or has a place reserved for, once the round is applied) nor serves work that is
 * itself borrowed; its beneficiary is placed in the next round; every round ends in a state
 * from which rounds with no change reach a fixpoint, which the next round does not change
 * (settles()); and once arrivals, ends and the window stop moving the rounds settle: nothing
 * stopped, and a last round that changes nothing.
 */
/* The domain of a job's work in guarantees_property_no_loops (sched.h step 6c). */
static int gdom(const world *w, const sch_job *j) {
    int t = w->projects[j->project].tenant;
    const quota_set *q = &w->tenants[t].quota;
    return 2 * t + (q->ngclass && !strcmp(w->classes[j->cls].name, q->gclass_name[0]));
}

static void guarantees_property_no_loops(void **state) {
    (void)state;
    unsigned seed = 0x2545f491u;
    enum { WINDOW = 5, MAXSTOPS = 24 }; /* the reclaim window, in rounds */
    static int stops_at[MAXJ][MAXSTOPS], nstops[MAXJ], reclaim_at[MAXJ][MAXSTOPS], nreclaims[MAXJ];
    int reclaims = 0, held = 0; /* reclaims seen, owners the cap held back (both must occur) */
    int creclaims = 0;          /* reclaims of work under a class's guarantee (step 6c) */
    for (int trial = 0; trial < 400; trial++) {
        world w;
        w_init(&w);
        /* the reclaim cap: none in some trials (as before it), 1 to 3 stops in the others */
        w.s.reclaim_cap = (int)(rnd(&seed) % 4);
        w.s.reclaim_window_s = 60 * WINDOW;
        memset(nstops, 0, sizeof nstops);
        memset(nreclaims, 0, sizeof nreclaims);
        w.nt = 3;
        w.np = 4;
        w.projects[2].tenant = 2;
        w.projects[2].name = "green-p";
        w.projects[3].tenant = 0; /* red's second project: parts of red's guarantee (step 6b) */
        w.projects[3].name = "red-q";
        int ngpu = 0, nodes = 1 + (int)(rnd(&seed) % 4);
        for (int n = 0; n < nodes; n++) {
            int k = 2 + (int)(rnd(&seed) % 6);
            w_node(&w, k, 0, SCH_WHOLE, 64, 512, 0);
            ngpu += k;
        }
        int c1 = w_class(&w, "x1", SCH_WHOLE, 1, 1, 1, 0), c2 = w_class(&w, "x2", SCH_WHOLE, 2, 1, 1, 0);
        for (int t = 0; t < 3; t++) {
            quota_set *q = &w.tenants[t].quota;
            if (rnd(&seed) % 4) q->guarantee = 1000 * (int64_t)(rnd(&seed) % (unsigned)(ngpu / 2 + 1));
            if (q->guarantee > 0 && rnd(&seed) % 3 == 0) q->kept = q->guarantee / 2;
            if (rnd(&seed) % 2)
                q->v[QD_GPU_MILLI] = (q->guarantee > 0 ? q->guarantee : 0) + 1000 * (int64_t)(rnd(&seed) % 6);
            q->weight = 1 + (int64_t)(rnd(&seed) % 4);
        }
        int64_t rg = w.tenants[0].quota.guarantee;
        if (rg > 0 && rnd(&seed) % 2) { /* red's projects take parts of it, some of it or all */
            w.projects[0].quota.guarantee = 1000 * (int64_t)(rnd(&seed) % (unsigned)(rg / 1000 + 1));
            if (rnd(&seed) % 2) w.projects[3].quota.guarantee = rg - w.projects[0].quota.guarantee;
        }
        for (int t = 1; t < 3; t++) /* blue's or green's own guarantee of class x2 (step 6c) */
            if (rnd(&seed) % 3 == 0) {
                quota_set *q = &w.tenants[t].quota;
                q->ngclass = 1;
                snprintf(q->gclass_name[0], sizeof q->gclass_name[0], "x2");
                q->gclass_g[0] = 2000 * (int64_t)(rnd(&seed) % 3);
                if (rnd(&seed) % 2) q->gclass_kept[0] = q->gclass_g[0] / 2;
                if (q->v[QD_GPU_MILLI] != QUOTA_NONE) q->v[QD_GPU_MILLI] += q->gclass_g[0];
            }
        int epoch = 0, last[MAXJ], owed[MAXJ] = {0}, quiet_stops = 0, was_changed = 1,
            prev_changed = 1;
        for (int i = 0; i < MAXJ; i++) last[i] = -1;
        for (int round = 0; round < 24; round++) {
            int changed = 0;
            if (round < 14)
                for (int k = (int)(rnd(&seed) % 4); k > 0 && w.nj < MAXJ; k--, changed = 1) {
                    int j = w_job(&w, (int)(rnd(&seed) % 4), rnd(&seed) % 3 ? c1 : c2,
                                  1 + (int)(rnd(&seed) % 2), (int)(rnd(&seed) % 3) * 10, 100 * round + k);
                    w.jobs[j].preemptible = rnd(&seed) % 2;
                    w.jobs[j].may_preempt = rnd(&seed) % 4 == 0;
                    /* some arrive with stops already in the window (stopped before: the
                     * store remembers them), so the cap engages */
                    nstops[j] = nreclaims[j] = 0;
                    for (int m = rnd(&seed) % 3 == 0 ? 1 + (int)(rnd(&seed) % 3) : 0; m > 0; m--)
                        stops_at[j][nstops[j]++] = round;
                }
            if (round < 14)
                for (int i = w.nj - 1; i >= 0; i--) /* some work ends */
                    if (w.jobs[i].state == SCH_RUNNING && rnd(&seed) % 8 == 0) {
                        int n = --w.nj; /* the last job takes its index */
                        w.jobs[i] = w.jobs[n];
                        memcpy(w.places[i], w.places[n], sizeof w.places[i]);
                        memcpy(w.ids[i], w.ids[n], sizeof w.ids[i]);
                        w.jobs[i].id = w.ids[i];
                        w.jobs[i].place = w.places[i];
                        last[i] = last[n];
                        owed[i] = owed[n];
                        last[n] = -1;
                        owed[n] = 0;
                        memcpy(stops_at[i], stops_at[n], sizeof stops_at[i]);
                        memcpy(reclaim_at[i], reclaim_at[n], sizeof reclaim_at[i]);
                        nstops[i] = nstops[n];
                        nreclaims[i] = nreclaims[n];
                        nstops[n] = nreclaims[n] = 0;
                        changed = 1;
                    }
            /* each job's stops within the window, as round.c counts them from the store */
            for (int i = 0; i < w.nj; i++) {
                int in = 0;
                for (int k = 0; k < nstops[i]; k++) in += stops_at[i][k] > round - WINDOW;
                changed |= w.jobs[i].stops != in; /* the window moved: like an arrival */
                w.jobs[i].stops = in;
            }
            epoch += changed;
            if (round > 0) was_changed = prev_changed;
            prev_changed = changed;
            sch_result r;
            round_ok(&w, &r);
            /* per domain (step 6c): 2t, tenant t's own; 2t + 1, its guarantee of class x2 */
            int64_t use[6] = {0};
            for (int i = 0; i < w.nj; i++)
                if (w.jobs[i].state == SCH_RUNNING)
                    use[gdom(&w, &w.jobs[i])] += sch_demand(&w.s, &w.jobs[i], QD_GPU_MILLI);
            int lost[6] = {0};
            for (int i = 0; i < r.n; i++) { /* what each tenant runs once the round is applied,
                                               * or has a place reserved for (its own victims') */
                const sch_job *x = &w.jobs[r.d[i].job];
                int64_t dm = sch_demand(&w.s, x, QD_GPU_MILLI);
                if (r.d[i].action == SCH_DO_PLACE || r.d[i].action == SCH_DO_WAIT_PREEMPT)
                    use[gdom(&w, x)] += dm;
                if (r.d[i].action == SCH_DO_PREEMPT) use[gdom(&w, x)] -= dm;
            }
            for (int i = 0; i < w.nj; i++) /* reclaimed for last round: it runs now */
                if (owed[i] && !changed) assert_int_equal(dec(&r, i)->action, SCH_DO_PLACE);
            memset(owed, 0, sizeof owed);
            for (int i = 0; i < r.n; i++) {
                const sch_decision *d = &r.d[i];
                if (d->action == SCH_DO_WAIT_PREEMPT && d->reclaim) owed[d->job] = 1;
                if (d->capped) {
                    held++;
                    assert_true(w.s.reclaim_cap > 0);
                    assert_non_null(strstr(d->reason, "reclaim_capped"));
                }
                if (d->action != SCH_DO_PREEMPT) continue;
                /* once arrivals and ends stop, nothing is stopped but in a round the reclaim
                 * window moved in, or the one after it */
                quiet_stops += round >= 15 && !changed && !was_changed;
                if (nstops[d->job] < MAXSTOPS) stops_at[d->job][nstops[d->job]++] = round;
                if (!d->reclaim) continue;
                const sch_job *v = &w.jobs[d->job];
                /* never a victim past the cap; so never reclaimed more than the cap within a
                 * window */
                if (w.s.reclaim_cap > 0) {
                    assert_true(v->stops < w.s.reclaim_cap);
                    if (nreclaims[d->job] < MAXSTOPS) reclaim_at[d->job][nreclaims[d->job]++] = round;
                    int in = 0;
                    for (int k = 0; k < nreclaims[d->job]; k++) in += reclaim_at[d->job][k] > round - WINDOW;
                    if (in > w.s.reclaim_cap)
                        fail_msg("trial %d: job %s reclaimed %d times within %d rounds (cap %d)",
                                 trial, v->id, in, WINDOW, w.s.reclaim_cap);
                }
                int vt = w.projects[v->project].tenant;
                /* (a sibling project's reclaim may take the tenant below: its part is what
                 * the owner takes back) */
                if (w.projects[w.jobs[d->by].project].tenant != vt) lost[gdom(&w, v)] = 1;
                creclaims += gdom(&w, v) % 2;
                reclaims++;
                assert_true(d->borrowed);  /* only borrowed work is reclaimed */
                /* another tenant's, or (parts, step 6b) a sibling project's */
                const sch_job *by = &w.jobs[d->by];
                if (w.projects[by->project].tenant == vt) {
                    assert_int_equal(vt, 0);
                    assert_int_not_equal(by->project, v->project);
                    assert_true(w.projects[0].quota.guarantee > 0 || w.projects[3].quota.guarantee > 0);
                }
                if (last[d->job] == epoch)
                    fail_msg("trial %d: job %s reclaimed twice for the same capacity", trial,
                             v->id);
                last[d->job] = epoch;
            }
            for (int t = 0; t < 6; t++) { /* a domain another tenant reclaimed from keeps its
                                             * guarantee */
                const quota_set *q = &w.tenants[t / 2].quota;
                int64_t g = t % 2 ? q->gclass_g[0] : q->guarantee < 0 ? 0 : q->guarantee;
                if (lost[t] && use[t] < g)
                    fail_msg("trial %d round %d: domain %d reclaimed below its guarantee (%lld < "
                             "%lld)",
                             trial, round, t, (long long)use[t], (long long)g);
            }
            w_apply(&w, &r);
            sch_result_free(&r);
            settles(&w, trial, round); /* the state it left: a fixpoint is near, and holds */
        }
        assert_int_equal(quiet_stops, 0);
        sch_result r;
        round_ok(&w, &r);
        assert_int_equal(r.placed + r.preempted, 0); /* settled */
        sch_result_free(&r);
    }
    printf("guarantees: %d reclaims (%d of work under a class's guarantee), %d owners held back "
           "by the reclaim cap\n",
           reclaims, creclaims, held);
    assert_true(reclaims > 0 && held > 0 && creclaims > 0);
}

/* Compatibility rules as the snapshot carries them (sched.h: gpu_ok, derived classes, alts,
 * why_none): never a card the rules refuse, one vendor per job, the rule named when none. */
static void vendor_rules(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    /* node 0: 2 NVIDIA cards; node 1: 2 AMD cards (vendor 1); both model 0 */
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 0);
    w_node(&w, 2, 0, SCH_WHOLE, 64, 512, 0);
    for (int g = 2; g < 4; g++) w.gpus[g].vendor = 1;
    int c = w_class(&w, "any.1x", SCH_WHOLE, 1, 1, 1, 0);
    /* derived for a job stack only AMD cards offer (class 1, base 0) */
    int d = w_class(&w, "any.1x", SCH_WHOLE, 1, 1, 1, 0);
    unsigned char amd_only[4] = {0, 0, 1, 1}, nv_only[4] = {1, 1, 0, 0};
    w.classes[d].gpu_ok = amd_only;
    w.classes[d].base = c + 1;
    int a = w_job(&w, 0, d, 2, 100, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
    for (int k = 0; k < 2; k++) assert_int_equal(w.gpus[dec(&r, a)->units[k].gpu[0]].vendor, 1);
    sch_result_free(&r);
    /* a third unit: the AMD cards are all there is, the job waits (it never takes NVIDIA) */
    w.jobs[a].units = 3;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, a)->action, SCH_DO_ADMIT);
    assert_non_null(strstr(dec(&r, a)->reason, "no_capacity"));
    sch_result_free(&r);
    /* quota per class counts the derived class as its stored one: a running unit of the
     * stored class on NVIDIA plus 2 of the derived one exceed a ceiling of 2 */
    w.jobs[a].units = 2;
    int run = w_job(&w, 0, c, 1, 100, 0);
    w.jobs[run].state = SCH_RUNNING;
    w.places[run][0].gpu[0] = 0;
    w.places[run][0].slice = -1;
    w.projects[0].quota.class_units[0] = 2;
    snprintf(w.projects[0].quota.class_name[0], sizeof w.projects[0].quota.class_name[0], "%s",
             "any.1x");
    w.projects[0].quota.nclass = 1;
    round_ok(&w, &r);
    assert_int_not_equal(dec(&r, a)->action, SCH_DO_PLACE);
    assert_non_null(strstr(dec(&r, a)->reason, "gpus(class any.1x) 1/2"));
    sch_result_free(&r);
    quota_unlimited(&w.projects[0].quota);
    w.nj--; /* the running job goes */
    /* no card passes: the precomputed reason names the rule */
    unsigned char none[4] = {0, 0, 0, 0};
    w.classes[d].gpu_ok = none;
    w.classes[d].why_none = "no card offers rocm >= 9 (newest: 6.2.0 on amd)";
    round_ok(&w, &r);
    assert_string_equal(dec(&r, a)->reason,
                        "no_matching_gpu: no card offers rocm >= 9 (newest: 6.2.0 on amd) (class any.1x)");
    sch_result_free(&r);
    /* a class spanning vendors with single-vendor variants: 3 units, 1 NVIDIA + 2 AMD free,
     * never 2 + 1 across vendors */
    w.nj = 0;
    int va = w_class(&w, "any.1x", SCH_WHOLE, 1, 1, 1, 0), vb = w_class(&w, "any.1x", SCH_WHOLE, 1, 1, 1, 0);
    w.classes[va].gpu_ok = nv_only;
    w.classes[va].base = c + 1;
    w.classes[vb].gpu_ok = amd_only;
    w.classes[vb].base = c + 1;
    int alts[2] = {va, vb};
    w.classes[c].alts = alts;
    w.classes[c].nalts = 2;
    w.gpus[0].allocatable = 0; /* one NVIDIA card left */
    w.classes[va].alt_vendor = 1;
    w.classes[vb].alt_vendor = 2;
    int j3 = w_job(&w, 0, c, 3, 100, 1);
    round_ok(&w, &r);
    assert_int_not_equal(dec(&r, j3)->action, SCH_DO_PLACE);
    assert_string_equal(dec(&r, j3)->reason, "no_capacity: class any.1x needs 3 units, 2 free now"
                                             " on one vendor (amd; 3 on all, never mixed)");
    sch_result_free(&r);
    /* 2 units: both on AMD (the only vendor with two free) */
    w.jobs[j3].units = 2;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, j3)->action, SCH_DO_PLACE);
    for (int k = 0; k < 2; k++) assert_int_equal(w.gpus[dec(&r, j3)->units[k].gpu[0]].vendor, 1);
    sch_result_free(&r);
    /* 1 unit of the same class may go anywhere: the variants are for jobs of several cards */
    w.jobs[j3].units = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, j3)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, j3)->units[0].gpu[0], 1);
    sch_result_free(&r);
    /* sch_check refuses a placement that mixes vendors or takes a refused card */
    w.jobs[j3].units = 2;
    round_ok(&w, &r);
    sch_decision *dd = (sch_decision *)dec(&r, j3);
    dd->units[1].gpu[0] = 1; /* NVIDIA next to AMD */
    char why[200];
    assert_int_equal(sch_check(&w.s, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "mixes vendors"));
    sch_result_free(&r);
}

/* ---- advance reservations (sched.h step 7, reserve.h) ---- */

#define SEC 1000000LL

/* Job i has ended: the last job takes its slot (its place and id with it). */
static void w_end(world *w, int i) {
    int last = w->nj - 1;
    if (i != last) {
        w->jobs[i] = w->jobs[last];
        memcpy(w->places[i], w->places[last], sizeof w->places[i]);
        memcpy(w->ids[i], w->ids[last], sizeof w->ids[i]);
        w->jobs[i].place = w->places[i];
        w->jobs[i].id = w->ids[i];
    }
    w->nj--;
}

/* Does any unit of job i sit on node n? */
static int w_on(const world *w, int i, int n) {
    const sch_job *j = &w->jobs[i];
    for (int k = 0; k < j->units; k++)
        if (w->gpus[j->place[k].gpu[0]].node == n) return 1;
    return 0;
}

/*
 * Named nodes, in the round: before the window, work that would still run at its start (no
 * limit, or a limit past it) is kept off them and says why, short work goes there; a job naming
 * it waits for its start; in it, only the holder's work naming it runs there (a limit past
 * the end waits), a preempting job takes nothing there; after it, the nodes are anyone's.
 */
static void reservation_named_nodes(void **state) {
    (void)state;
    world w;
    sch_result r;
    const unsigned char in0[2] = {1, 0};
    w_init(&w);
    int n0 = w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0), n1 = w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0);
    (void)n1;
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    rsv rs[1] = {{.t1_us = 1100 * SEC, .t2_us = 1200 * SEC, .tenant = 0, .project = -1,
                  .node_in = in0, .pool = -1}};
    const char *names[1] = {"train-week"};
    w.s.rsvs = rs;
    w.s.nrsvs = 1;
    w.s.rsv_names = names;
    w.s.now_us = 1000 * SEC;
    int longs[5];
    for (int i = 0; i < 5; i++) longs[i] = w_job(&w, 1, c, 1, 100, i); /* blue, no limit */
    int shortj = w_job(&w, 1, c, 1, 100, 10);
    w.jobs[shortj].time_limit_s = 50; /* ends at 1050 s, before the window */
    int named = w_job(&w, 0, c, 2, 100, 11);
    w.jobs[named].reservation = 1;
    w.jobs[named].time_limit_s = 60;
    round_ok(&w, &r);
    for (int i = 0; i < 4; i++) assert_int_equal(dec(&r, longs[i])->action, SCH_DO_PLACE);
    const sch_decision *d = dec(&r, longs[4]);
    assert_int_not_equal(d->action, SCH_DO_PLACE);
    assert_int_equal(d->rsv, 1);
    assert_int_equal(d->rsv_code, RSV_BLOCKED);
    if (!strstr(d->reason, "reserved: a reservation of another tenant") ||
        !strstr(d->reason, "without a time limit"))
        fail_msg("reason: %s", d->reason);
    assert_int_equal(dec(&r, shortj)->action, SCH_DO_PLACE);
    d = dec(&r, named);
    assert_int_equal(d->rsv_code, RSV_NOT_YET);
    assert_non_null(strstr(d->reason, "reservation_not_started: reservation train-week"));
    w_apply(&w, &r);
    for (int i = 0; i < 4; i++) assert_false(w_on(&w, longs[i], n0));
    assert_true(w_on(&w, shortj, n0));
    sch_result_free(&r);
    /* the sweep is a full round: the delta hands it back */
    sch_delta *dl;
    assert_int_equal(sch_delta_new(w_snap(&w), &dl), 0);
    assert_int_equal(sch_delta_submit(dl, &w.s, longs[4], &r), 1);
    sch_delta_free(dl);
    /* the short job ended by the start; in the window the holder's job naming it runs there;
     * another of red's with a limit past the end, or not naming it, waits; so does blue's
     * preempting job (it stops its own lower work on n1 instead) */
    w_end(&w, shortj); /* (the last job, `named`, moves into its slot) */
    for (int i = 0; i < w.nj; i++)
        if (w.jobs[i].reservation) named = i;
    w.s.now_us = 1100 * SEC;
    int toolong = w_job(&w, 0, c, 1, 100, 20);
    w.jobs[toolong].reservation = 1;
    w.jobs[toolong].time_limit_s = 150;
    int redfree = w_job(&w, 0, c, 1, 100, 21);
    w.jobs[redfree].time_limit_s = 5;
    int pre = w_job(&w, 1, c, 1, 500, 22);
    w.jobs[pre].may_preempt = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, named)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, toolong)->rsv_code, RSV_TOO_LONG);
    assert_non_null(strstr(dec(&r, toolong)->reason, "reservation_too_long"));
    assert_int_equal(dec(&r, redfree)->rsv_code, RSV_BLOCKED);
    assert_non_null(strstr(dec(&r, redfree)->reason, "reservation train-week holds the cards it "
                                                      "could use until"));
    d = dec(&r, pre);
    assert_int_equal(d->action, SCH_DO_WAIT_PREEMPT);
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) assert_true(w_on(&w, r.d[i].job, 1));
    w_apply(&w, &r);
    assert_true(w_on(&w, named, n0));
    sch_result_free(&r);
    /* after the window: anyone's again */
    w.s.now_us = 1200 * SEC;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, redfree)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, toolong)->rsv_code, RSV_OVER);
    sch_result_free(&r);
}

/*
 * A count of a class's cards in a pool: before it, work that would run into it leaves the
 * count free; in it, the holder's jobs naming it take at most the count (more waits: full),
 * the rest of the pool keeps the other cards; a maintenance window admits nobody.
 */
static void reservation_count_and_maintenance(void **state) {
    (void)state;
    world w;
    sch_result r;
    unsigned char ok[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const unsigned char in1[2] = {0, 1};
    w_init(&w);
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0);
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    rsv rs[2] = {{.t1_us = 1100 * SEC, .t2_us = 1200 * SEC, .tenant = 0, .project = 0,
                  .pool = 0, .count = 3, .card_ok = ok},
                 {.t1_us = 5000 * SEC, .t2_us = 5100 * SEC, .tenant = -1, .project = -1,
                  .node_in = in1, .pool = -1}};
    const char *names[2] = {"three", "fans"};
    w.s.rsvs = rs;
    w.s.nrsvs = 2;
    w.s.rsv_names = names;
    w.s.now_us = 1000 * SEC;
    int blue[7];
    for (int i = 0; i < 7; i++) {
        blue[i] = w_job(&w, 1, c, 1, 100, i);
        w.jobs[blue[i]].time_limit_s = i < 6 ? 1000 : 5000; /* into the count's / both windows */
    }
    round_ok(&w, &r);
    int placed = 0;
    for (int i = 0; i < 7; i++) placed += dec(&r, blue[i])->action == SCH_DO_PLACE;
    /* 8 cards, 3 held from 1100 s: 5 of them; the one running into the maintenance window
     * keeps off its node (and is of them if it fits elsewhere) */
    assert_int_equal(placed, 5);
    if (dec(&r, blue[6])->action == SCH_DO_PLACE)
        assert_int_equal(w.gpus[dec(&r, blue[6])->units[0].gpu[0]].node, 0);
    w_apply(&w, &r);
    sch_result_free(&r);
    /* in the count's window: red's two jobs naming it take 2 + 1, the third is full; a job
     * of red's other project naming it is not its holder */
    w.s.now_us = 1100 * SEC;
    int a = w_job(&w, 0, c, 2, 100, 20), b = w_job(&w, 0, c, 1, 100, 21),
        full = w_job(&w, 0, c, 1, 100, 22);
    for (int j = a; j <= full; j++) {
        w.jobs[j].reservation = 1;
        w.jobs[j].time_limit_s = 60;
    }
    w.projects[2].tenant = 0;
    w.projects[2].name = "red-q";
    w.np = 3;
    int other = w_job(&w, 2, c, 1, 100, 23);
    w.jobs[other].reservation = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, a)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, b)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, full)->rsv_code, RSV_FULL);
    assert_non_null(strstr(dec(&r, full)->reason, "reservation_full: reservation three holds 3"));
    assert_int_equal(dec(&r, other)->rsv_code, RSV_NOT_HOLDER);
    w_apply(&w, &r);
    sch_result_free(&r);
    /* the maintenance window: nobody on its node, whoever asks */
    w.s.now_us = 5000 * SEC;
    for (int i = w.nj - 1; i >= 0; i--) w_end(&w, i);
    int anyone = w_job(&w, 0, c, 4, 100, 30), more = w_job(&w, 1, c, 1, 100, 31);
    w.jobs[more].time_limit_s = 1;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, anyone)->action, SCH_DO_PLACE);
    assert_false(w_on(&w, anyone, 1));
    const sch_decision *d = dec(&r, more);
    assert_int_equal(d->rsv_code, RSV_BLOCKED);
    assert_non_null(strstr(d->reason, "maintenance window fans"));
    sch_result_free(&r);
}

/*
 * The property the rules promise, through the round: random fleets, jobs with and without
 * limits (some naming a reservation), reservations of named nodes and counts (a tenant's or
 * maintenance), time moving on and jobs ending only by their limits - never stopped.  At every
 * step, in every window: on named nodes only the holder's jobs naming it; of a count, the
 * other work of its pool never holds more than the cards beyond it; jobs naming one run only
 * in its window, within its count.  So each window starts on time with nothing killed.
 */
static void reservation_property(void **state) {
    (void)state;
    unsigned seed = 0x5eed36u;
    for (int trial = 0; trial < 40; trial++) {
        world w;
        static unsigned char ok[MAXG], in[3][MAXN];
        memset(ok, 1, sizeof ok);
        memset(in, 0, sizeof in);
        w_init(&w);
        int nodes = 2 + (int)(rnd(&seed) % 5);
        for (int n = 0; n < nodes; n++) w_node(&w, 1 + (int)(rnd(&seed) % 4), 0, SCH_WHOLE, 64, 512, 0);
        int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
        rsv rs[3];
        int nr = 1 + (int)(rnd(&seed) % 3);
        for (int i = 0; i < nr; i++) {
            int64_t t1 = (int64_t)(10 + rnd(&seed) % 50) * SEC;
            rs[i] = (rsv){.t1_us = t1, .t2_us = t1 + (int64_t)(5 + rnd(&seed) % 30) * SEC,
                          .tenant = rnd(&seed) % 4 == 0 ? -1 : (int)(rnd(&seed) % 2),
                          .project = -1, .pool = -1};
            if (i == 0 && rnd(&seed) % 2) {
                rs[i].pool = 0;
                rs[i].count = 1 + (int)(rnd(&seed) % 2);
                rs[i].card_ok = ok;
            } else {
                /* a node of its own (named nodes of two reservations never overlap here) */
                int node = (int)((unsigned)i * 2 + rnd(&seed) % 2) % nodes;
                in[i][node] = 1;
                rs[i].node_in = in[i];
            }
        }
        w.s.rsvs = rs;
        w.s.nrsvs = nr;
        for (int step = 0; step < 90; step++) {
            int64_t now = (int64_t)step * SEC;
            w.s.now_us = now;
            /* jobs end by their limits only */
            for (int i = w.nj - 1; i >= 0; i--)
                if (w.jobs[i].state == SCH_RUNNING && w.jobs[i].time_limit_s &&
                    w.jobs[i].start_us + w.jobs[i].time_limit_s * SEC <= now)
                    w_end(&w, i);
            for (int a = (int)(rnd(&seed) % 3); a > 0 && w.nj < 60; a--) {
                int k = w_job(&w, (int)(rnd(&seed) % 2), c, 1, 100, now + a);
                w.jobs[k].time_limit_s = rnd(&seed) % 4 == 0 ? 0 : 1 + (int64_t)(rnd(&seed) % 20);
                if (rnd(&seed) % 4 == 0) {
                    w.jobs[k].reservation = 1 + (int)(rnd(&seed) % (unsigned)nr);
                    if (!w.jobs[k].time_limit_s) w.jobs[k].time_limit_s = 3;
                }
            }
            sch_result r;
            round_ok(&w, &r);
            for (int i = 0; i < r.n; i++)
                if (r.d[i].action == SCH_DO_PLACE) w.jobs[r.d[i].job].start_us = now;
            for (int i = 0; i < r.n; i++)
                if (r.d[i].action == SCH_DO_PLACE) {
                    sch_job *j = &w.jobs[r.d[i].job];
                    memcpy(w.places[r.d[i].job], r.d[i].units, sizeof(sch_unit) * (size_t)j->units);
                    j->state = SCH_RUNNING;
                }
                else if (r.d[i].action == SCH_DO_ADMIT) w.jobs[r.d[i].job].state = SCH_ADMITTED;
            sch_result_free(&r);
            for (int ri = 0; ri < nr; ri++) {
                const rsv *q = &rs[ri];
                if (now < q->t1_us || now >= q->t2_us) continue;
                int other = 0, own = 0, cards = 0;
                for (int g = 0; g < w.ng; g++) cards += q->count ? 1 : 0;
                for (int i = 0; i < w.nj; i++) {
                    const sch_job *j = &w.jobs[i];
                    if (j->state != SCH_RUNNING) continue;
                    int mine = j->reservation == ri + 1;
                    for (int k = 0; k < j->units; k++) {
                        int node = w.gpus[j->place[k].gpu[0]].node;
                        if (q->node_in && q->node_in[node] && !mine)
                            fail_msg("trial %d step %d: job %s on reservation %d's node", trial,
                                     step, j->id, ri);
                        if (!q->node_in && mine) own++;
                        else if (!q->node_in) other++;
                    }
                }
                if (!q->node_in && (other > cards - q->count || own > q->count))
                    fail_msg("trial %d step %d: count %d of %d: own %d, other %d", trial, step,
                             q->count, cards, own, other);
            }
            /* a job naming a reservation runs only in its window */
            for (int i = 0; i < w.nj; i++) {
                const sch_job *j = &w.jobs[i];
                if (j->state != SCH_RUNNING || !j->reservation) continue;
                const rsv *q = &rs[j->reservation - 1];
                assert_true(j->start_us >= q->t1_us && j->start_us < q->t2_us);
                assert_true(j->start_us + j->time_limit_s * SEC <= q->t2_us);
            }
        }
    }
}

/* A count of shared slices holds whole cards (reserve.h): other work packs its slices on the
 * card beyond the count, the reservation's own work fills every slice of the card it holds. */
static void reservation_count_of_slices(void **state) {
    (void)state;
    world w;
    sch_result r;
    unsigned char ok[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    w_init(&w);
    w_node(&w, 2, 0, SCH_SHARED, 64, 512, 0);
    int c = w_class(&w, "a100.q", SCH_SHARED, 1, 1, 1, 0); /* a quarter of a card */
    rsv rs[1] = {{.t1_us = 1100 * SEC, .t2_us = 1200 * SEC, .tenant = 0, .project = 0,
                  .pool = 0, .count = 1, .card_ok = ok}};
    const char *names[1] = {"one-card"};
    w.s.rsvs = rs;
    w.s.nrsvs = 1;
    w.s.rsv_names = names;
    w.s.now_us = 1100 * SEC;
    /* blue, in the window: four slices fit on the card beyond the count, a fifth does not */
    int blue[5];
    for (int i = 0; i < 5; i++) blue[i] = w_job(&w, 1, c, 1, 100, i);
    round_ok(&w, &r);
    int placed = 0, card = -1;
    for (int i = 0; i < 5; i++)
        if (dec(&r, blue[i])->action == SCH_DO_PLACE) {
            placed++;
            if (card < 0) card = dec(&r, blue[i])->units[0].gpu[0];
            assert_int_equal(dec(&r, blue[i])->units[0].gpu[0], card);
        }
    assert_int_equal(placed, 4);
    assert_int_equal(dec(&r, blue[4])->rsv_code, RSV_BLOCKED);
    w_apply(&w, &r);
    sch_result_free(&r);
    /* red's job naming it: four slices, all on the other card (one card of the count) */
    int red = w_job(&w, 0, c, 4, 100, 10);
    w.jobs[red].reservation = 1;
    w.jobs[red].time_limit_s = 60;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, red)->action, SCH_DO_PLACE);
    for (int k = 0; k < 4; k++) assert_int_equal(dec(&r, red)->units[k].gpu[0], 1 - card);
    w_apply(&w, &r);
    sch_result_free(&r);
    /* one more slice of red's: no card is left to the count (full) */
    int more = w_job(&w, 0, c, 1, 100, 11);
    w.jobs[more].reservation = 1;
    w.jobs[more].time_limit_s = 60;
    round_ok(&w, &r);
    assert_int_not_equal(dec(&r, more)->action, SCH_DO_PLACE);
    sch_result_free(&r);
}

/*
 * A tenant's reservation in force counts against its guarantee, not on top (sched.h, step
 * 7a): what it holds unused is the tenant's, so it is never lent (a borrower waits for it with
 * borrow_limit, not for a place it may not take), and the tenant's own work outside it is owned
 * only up to the guarantee less that; the work in it is owned even with no guarantee.
 */
static void reservation_counts_against_guarantee(void **state) {
    (void)state;
    world w;
    sch_result r;
    unsigned char ok[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    for (int t = 0; t < 2; t++) w.tenants[t].quota.v[QD_GPU_MILLI] = 8000;
    w.tenants[0].quota.guarantee = 4000; /* red: 4, of which its reservation holds 2 */
    w.tenants[0].quota.kept = 2000;
    rsv rs[1] = {{.t1_us = 1000 * SEC, .t2_us = 2000 * SEC, .tenant = 0, .project = 0,
                  .pool = 0, .count = 2, .card_ok = ok}};
    const char *names[1] = {"red-two"};
    w.s.rsvs = rs;
    w.s.nrsvs = 1;
    w.s.rsv_names = names;
    w.s.now_us = 1000 * SEC;
    int red[2], blue[6];
    for (int i = 0; i < 2; i++) red[i] = w_job(&w, 0, c, 1, 100, i);
    for (int i = 0; i < 6; i++) blue[i] = w_job(&w, 1, c, 1, 100, 10 + i);
    round_ok(&w, &r);
    /* red: 2 outside + 2 held unused = its guarantee, owned; blue borrows the 4 left */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dec(&r, red[i])->action, SCH_DO_PLACE);
        assert_false(dec(&r, red[i])->borrowed);
    }
    for (int i = 0; i < 6; i++) {
        const sch_decision *d = dec(&r, blue[i]);
        if (i < 4) {
            assert_int_equal(d->action, SCH_DO_PLACE);
            assert_true(d->borrowed);
        } else if (!strstr(d->reason, "borrow_limit") || !strstr(d->reason, "0 GPUs idle")) {
            fail_msg("blue[%d]: %s", i, d->reason);
        }
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    /* red's next outside job would borrow: nothing is idle, and its reason says why */
    int more = w_job(&w, 0, c, 1, 100, 20);
    round_ok(&w, &r);
    const sch_decision *d = dec(&r, more);
    assert_int_not_equal(d->action, SCH_DO_PLACE);
    if (!strstr(d->reason, "borrow_limit: tenant red above its guarantee of 4 GPUs (2 of it "
                           "held unused by its reservations)"))
        fail_msg("reason: %s", d->reason);
    sch_result_free(&r);
    /* its job naming the reservation runs there, owned (the one outside still waits) */
    int in = w_job(&w, 0, c, 2, 100, 21);
    w.jobs[in].reservation = 1;
    w.jobs[in].time_limit_s = 60;
    round_ok(&w, &r);
    assert_int_not_equal(dec(&r, more)->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, in)->action, SCH_DO_PLACE);
    assert_false(dec(&r, in)->borrowed);
    w_apply(&w, &r);
    sch_result_free(&r);
    /* the next round marks nothing of red's borrowed: 2 in its reservation + 2 outside */
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0);
    assert_int_equal(r.borrowed[0], 0);
    assert_int_equal(r.borrowed[1], 4000);
    sch_result_free(&r);
    /* after the window the guarantee is red's alone again: the job outside fits within it */
    w.s.now_us = 2000 * SEC;
    for (int i = 0; i < w.nj; i++)
        if (w.jobs[i].reservation) w_end(&w, i);
    round_ok(&w, &r);
    int found = 0;
    for (int i = 0; i < w.nj; i++)
        if (!strcmp(w.jobs[i].id, "j8")) {
            assert_int_equal(dec(&r, i)->action, SCH_DO_PLACE);
            found = 1;
        }
    assert_true(found);
    sch_result_free(&r);

    /* blue, with no guarantee, holds a reservation: its work there is owned, outside borrowed */
    w_init(&w);
    w_node(&w, 8, 0, SCH_WHOLE, 64, 512, 0);
    c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    w.tenants[0].quota.guarantee = 4000;
    rs[0].tenant = 1;
    rs[0].project = -1;
    w.s.rsvs = rs;
    w.s.nrsvs = 1;
    w.s.rsv_names = names;
    w.s.now_us = 1500 * SEC;
    int bin = w_job(&w, 1, c, 2, 100, 0), bout = w_job(&w, 1, c, 1, 100, 1);
    w.jobs[bin].reservation = 1;
    w.jobs[bin].time_limit_s = 60;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, bin)->action, SCH_DO_PLACE);
    assert_false(dec(&r, bin)->borrowed);
    assert_int_equal(dec(&r, bout)->action, SCH_DO_PLACE);
    assert_true(dec(&r, bout)->borrowed);
    sch_result_free(&r);
}

/*
 * A project's part of its tenant's guarantee (sched.h, step 6b): a sibling without a part
 * runs on the unassigned rest, and beyond it on the idle part (borrowed); the part's owner
 * takes it back by reclaim (the sibling's newest borrowed jobs stop, named as such), and the
 * round settles.
 */
static void project_parts(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0);
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    w.tenants[0].quota.v[QD_GPU_MILLI] = 8000;
    w.tenants[0].quota.guarantee = 4000;
    w.projects[0].quota.guarantee = 2000; /* red-p: 2 of red's 4 */
    w.projects[2].tenant = 0;
    w.projects[2].name = "red-q";
    w.np = 3;
    int q[4], a[2];
    for (int i = 0; i < 4; i++) q[i] = w_job(&w, 2, c, 1, 100, i);
    round_ok(&w, &r);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dec(&r, q[i])->action, SCH_DO_PLACE);
        assert_int_equal(dec(&r, q[i])->borrowed, i >= 2); /* beyond the unassigned 2 */
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(r.borrowed[0], 2000);
    sch_result_free(&r);
    for (int i = 0; i < 2; i++) a[i] = w_job(&w, 0, c, 1, 10, 10 + i);
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dec(&r, a[i])->action, SCH_DO_WAIT_PREEMPT);
        assert_true(dec(&r, a[i])->reclaim);
    }
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) {
            assert_true(r.d[i].job == q[2] || r.d[i].job == q[3]);
            if (!strstr(r.d[i].reason, "reclaimed: it ran above project red-q's part of tenant red"))
                fail_msg("reason: %s", r.d[i].reason);
        }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dec(&r, a[i])->action, SCH_DO_PLACE);
        assert_false(dec(&r, a[i])->borrowed);
        const sch_decision *d = dec(&r, q[2 + i]);
        if (!strstr(d->reason, "borrow_limit")) fail_msg("reason: %s", d->reason);
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r); /* settled */
    assert_int_equal(r.placed + r.preempted, 0);
    assert_int_equal(r.borrowed[0], 0);
    sch_result_free(&r);
    /* red-p above its part, nothing idle: it would borrow, and says its part is in use */
    int more = w_job(&w, 0, c, 1, 10, 20);
    round_ok(&w, &r);
    if (!strstr(dec(&r, more)->reason, "project red-p's part of it, 2 GPUs, in use"))
        fail_msg("reason: %s", dec(&r, more)->reason);
    sch_result_free(&r);
}

/* Step 6c: a tenant's guarantee of one class is a domain of its own (quota.h gclass_*): its
 * work of that class is owned against it alone and reclaims borrowed work; the kept part of
 * it is never lent; its work of other classes is borrowed (red has no other guarantee). */
static void class_guarantees(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0); /* 4 A100 */
    w_node(&w, 4, 1, SCH_WHOLE, 64, 512, 1); /* 4 H100, another pool */
    int ca = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    int ch = w_class(&w, "h100.1x", SCH_WHOLE, 1, 1, 1, 1);
    quota_set *red = &w.tenants[0].quota, *blue = &w.tenants[1].quota;
    red->v[QD_GPU_MILLI] = 8000;
    red->ngclass = 1;
    snprintf(red->gclass_name[0], 64, "h100.1x");
    red->gclass_g[0] = 4000;
    red->gclass_kept[0] = 2000;
    blue->v[QD_GPU_MILLI] = 8000;
    blue->guarantee = 4000;
    int ba[4], bh[4], rh[4];
    for (int i = 0; i < 4; i++) ba[i] = w_job(&w, 1, ca, 1, 100, i);
    for (int i = 0; i < 4; i++) bh[i] = w_job(&w, 1, ch, 1, 100, 10 + i);
    round_ok(&w, &r);
    /* blue's guarantee covers its four A100 jobs; it borrows two H100s, not red's kept two */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dec(&r, ba[i])->action, SCH_DO_PLACE);
        assert_false(dec(&r, ba[i])->borrowed);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(dec(&r, bh[i])->action, SCH_DO_PLACE);
        assert_true(dec(&r, bh[i])->borrowed);
    }
    for (int i = 2; i < 4; i++)
        if (!strstr(dec(&r, bh[i])->reason, "borrow_limit: tenant blue above its guarantee of 4"))
            fail_msg("reason: %s", dec(&r, bh[i])->reason);
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(r.borrowed[1], 2000);
    assert_int_equal(r.borrowed[0], 0);
    sch_result_free(&r);
    /* red's two H100 jobs take the kept two; two more (4, its class guarantee) reclaim */
    for (int i = 0; i < 4; i++) rh[i] = w_job(&w, 0, ch, 1, 10, 100 + i);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, rh[0])->action, SCH_DO_PLACE);
    assert_int_equal(dec(&r, rh[1])->action, SCH_DO_PLACE);
    assert_false(dec(&r, rh[0])->borrowed);
    assert_int_equal(r.preempted, 2);
    for (int i = 2; i < 4; i++) {
        assert_int_equal(dec(&r, rh[i])->action, SCH_DO_WAIT_PREEMPT);
        assert_true(dec(&r, rh[i])->reclaim);
    }
    for (int i = 0; i < 4; i++) assert_false(preempted(&r, ba[i])); /* blue's owned work */
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT &&
            !strstr(r.d[i].reason, "borrowed above tenant blue's guarantee of 4 GPUs"))
            fail_msg("reason: %s", r.d[i].reason);
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    for (int i = 2; i < 4; i++) {
        assert_int_equal(dec(&r, rh[i])->action, SCH_DO_PLACE);
        assert_false(dec(&r, rh[i])->borrowed);
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    /* red's A100 work counts against its own guarantee, none: it would borrow, and nothing
     * is idle, so it waits and stops nobody (borrowed work never reclaims) */
    int ra = w_job(&w, 0, ca, 1, 10, 200);
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 0);
    if (!strstr(dec(&r, ra)->reason, "borrow_limit: tenant red above its guarantee of 0"))
        fail_msg("reason: %s", dec(&r, ra)->reason);
    sch_result_free(&r);
    round_ok(&w, &r); /* settled */
    assert_int_equal(r.placed + r.preempted, 0);
    sch_result_free(&r);
    /* a class guarantee of red's for a class that does not exist holds nothing */
    snprintf(red->gclass_name[0], 64, "nope.1x");
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0);
    assert_int_equal(r.borrowed[0], 4000); /* its H100 work is now above its guarantee, 0 */
    sch_result_free(&r);
}

/* The pool of job ji's first card (it runs). */
static int pool_of(const world *w, int ji) {
    return w->nodes[w->gpus[w->jobs[ji].place[0].gpu[0]].node].pool;
}

/*
 * Guarantees per pool over a class that spans pools (sched.h step 6d): red is guaranteed 4
 * GPUs in pool east, blue 2 of its own.  Blue's work borrows anywhere; red's jobs are given
 * east at admission, run there and reclaim only blue's borrowed work there, never taking blue
 * below its guarantee; once east's guarantee is full, red's next job borrows (and stops
 * nobody); with a guarantee of its own too, it is given the pools without a guarantee of its
 * own (west) and reclaims there.  An admitted job keeps what it was given.
 */
static void pool_guarantees(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0); /* east */
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 1); /* west */
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0); /* spans both */
    quota_set *red = &w.tenants[0].quota, *blue = &w.tenants[1].quota;
    red->v[QD_GPU_MILLI] = 8000;
    red->ngpool = 1;
    snprintf(red->gpool_name[0], 64, "east");
    red->gpool_g[0] = 4000;
    blue->v[QD_GPU_MILLI] = 8000;
    blue->guarantee = 2000;
    int b[8], rj[6];
    for (int i = 0; i < 8; i++) b[i] = w_job(&w, 1, c, 1, 100, i);
    round_ok(&w, &r);
    int bplaced = 0;
    for (int i = 0; i < 8; i++) bplaced += dec(&r, b[i])->action == SCH_DO_PLACE;
    assert_int_equal(bplaced, 8); /* nothing else asks: blue borrows all that is idle */
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(r.borrowed[1], 6000);
    assert_int_equal(r.placed + r.preempted, 0);
    sch_result_free(&r);
    /* red's four east jobs: each given east, reclaiming only blue's borrowed work there */
    for (int i = 0; i < 4; i++) rj[i] = w_job(&w, 0, c, 1, 10, 100 + i);
    round_ok(&w, &r);
    int victims = 0;
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) {
            victims++; /* (any of blue's there: blue stays above its guarantee) */
            assert_int_equal(pool_of(&w, r.d[i].job), 0);
            if (!strstr(r.d[i].reason, "borrowed above tenant blue's guarantee of 2 GPUs"))
                fail_msg("reason: %s", r.d[i].reason);
        }
    assert_int_equal(victims, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dec(&r, rj[i])->action, SCH_DO_WAIT_PREEMPT);
        assert_true(dec(&r, rj[i])->reclaim);
        assert_int_equal(dec(&r, rj[i])->gpool, 1); /* east, kept while admitted */
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dec(&r, rj[i])->action, SCH_DO_PLACE);
        assert_false(dec(&r, rj[i])->borrowed);
        for (int k = 0; k < r.n; k++)
            if (r.d[k].job == rj[i] && r.d[k].action == SCH_DO_PLACE)
                assert_int_equal(w.nodes[w.gpus[r.d[k].units[0].gpu[0]].node].pool, 0);
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0); /* settled */
    assert_int_equal(r.borrowed[0], 0);          /* red's east work is owned */
    assert_int_equal(r.borrowed[1], 2000);       /* blue keeps its 2 and 2 more, in west */
    sch_result_free(&r);
    /* east's guarantee is full: red's fifth job borrows, so it stops nobody and waits */
    rj[4] = w_job(&w, 0, c, 1, 10, 200);
    round_ok(&w, &r);
    assert_int_equal(r.preempted, 0);
    assert_int_equal(dec(&r, rj[4])->gpool, 0);
    if (!strstr(dec(&r, rj[4])->reason, "borrow_limit: tenant red above its guarantee of 0 GPUs "
                                         "(and its guarantees in the pools open to it)"))
        fail_msg("reason: %s", dec(&r, rj[4])->reason);
    sch_result_free(&r);
    /* a guarantee of red's own covers the pools without a guarantee of its own: west, where
     * its job is owned and reclaims blue's borrowed work (never blue's owned two) */
    red->guarantee = 2000;
    round_ok(&w, &r);
    assert_int_equal(dec(&r, rj[4])->action, SCH_DO_WAIT_PREEMPT);
    assert_int_equal(dec(&r, rj[4])->gpool, SCH_GPOOL_REST);
    victims = 0;
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) {
            victims++;
            assert_true(r.d[i].borrowed);
            assert_int_equal(pool_of(&w, r.d[i].job), 1);
        }
    assert_int_equal(victims, 1);
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, rj[4])->action, SCH_DO_PLACE);
    assert_false(dec(&r, rj[4])->borrowed);
    w_apply(&w, &r);
    sch_result_free(&r);
    assert_int_equal(pool_of(&w, rj[4]), 1);
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0);
    assert_int_equal(r.borrowed[0], 0);
    assert_int_equal(r.borrowed[1], 1000); /* blue: its 2 guaranteed and 1 more, in west */
    sch_result_free(&r);
    /* an admitted job keeps what it was given: red's sixth, given east (full of its own
     * owned work: it waits there) while west frees a card */
    red->gpool_g[0] = 5000;
    rj[5] = w_job(&w, 0, c, 1, 10, 300);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, rj[5])->action, SCH_DO_ADMIT);
    assert_int_equal(dec(&r, rj[5])->gpool, 1);
    if (!strstr(dec(&r, rj[5])->reason, "(in pool east: its tenant's guarantee there)"))
        fail_msg("reason: %s", dec(&r, rj[5])->reason);
    w_apply(&w, &r);
    sch_result_free(&r);
    for (int i = 0; i < 8; i++) /* one of blue's west jobs ends (rj[5], last, takes its slot) */
        if (w.jobs[b[i]].state == SCH_RUNNING && pool_of(&w, b[i]) == 1) {
            assert_int_equal(rj[5], w.nj - 1);
            w_end(&w, b[i]);
            rj[5] = b[i];
            break;
        }
    assert_int_equal(w.jobs[rj[5]].gpool, 1);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, rj[5])->action, SCH_DO_NOTHING); /* still east's, waiting there */
    sch_result_free(&r);
}

/*
 * Property (sched.h step 6d): random fleets over two pools with one class on both; red is
 * guaranteed some GPUs in pool east (index 0), in half the trials split into its two
 * projects' parts, and maybe some of its own, blue and green some of their own; random
 * arrivals and ends.  Every round passes sch_check; a job given a pool
 * is placed only there; a reclaim's victim runs where its beneficiary may go and never takes
 * its domain below its guarantee, and no job is reclaimed twice for the same capacity; every
 * round leaves a state from which rounds with no change reach a fixpoint (settles()); and once
 * arrivals and ends stop the rounds settle.
 */
static int pdom_of(const world *w, const sch_job *j, int pool) {
    int t = w->projects[j->project].tenant;
    return 2 * t + (w->tenants[t].quota.ngpool && pool == 0);
}

static void pool_guarantees_property(void **state) {
    (void)state;
    unsigned seed = 0x5bd1e995u;
    int reclaims = 0, given = 0, parts = 0, sibling = 0;
    for (int trial = 0; trial < 300; trial++) {
        world w;
        w_init(&w);
        w.nt = 3;
        w.np = 4;
        w.projects[2].tenant = 2;
        w.projects[2].name = "green-p";
        w.projects[3].tenant = 0; /* red's second project: parts of east's guarantee */
        w.projects[3].name = "red-q";
        int nodes = 2 + (int)(rnd(&seed) % 3), ngpu = 0;
        for (int n = 0; n < nodes; n++) {
            int k = 2 + (int)(rnd(&seed) % 5);
            w_node(&w, k, 0, SCH_WHOLE, 64, 512, n == 0 ? 0 : n == 1 ? 1 : (int)(rnd(&seed) % 2));
            ngpu += k;
        }
        int c1 = w_class(&w, "x1", SCH_WHOLE, 1, 1, 1, 0), c2 = w_class(&w, "x2", SCH_WHOLE, 2, 1, 1, 0);
        for (int t = 0; t < 3; t++) {
            quota_set *q = &w.tenants[t].quota;
            if (rnd(&seed) % 3) q->guarantee = 1000 * (int64_t)(rnd(&seed) % (unsigned)(ngpu / 3 + 1));
            q->weight = 1 + (int64_t)(rnd(&seed) % 3);
        }
        quota_set *red = &w.tenants[0].quota;
        red->ngpool = 1;
        snprintf(red->gpool_name[0], 64, "east");
        red->gpool_g[0] = 1000 * (int64_t)(1 + rnd(&seed) % 4);
        if (rnd(&seed) % 3 == 0) red->gpool_kept[0] = red->gpool_g[0] / 2;
        if (rnd(&seed) % 2) { /* red's projects take parts of east's, some of it or all */
            quota_set *p0 = &w.projects[0].quota, *p3 = &w.projects[3].quota;
            p0->ngpool = p3->ngpool = 1;
            snprintf(p0->gpool_name[0], 64, "east");
            snprintf(p3->gpool_name[0], 64, "east");
            p0->gpool_g[0] = 1000 * (int64_t)(rnd(&seed) % (unsigned)(red->gpool_g[0] / 1000 + 1));
            p3->gpool_g[0] = rnd(&seed) % 2 ? red->gpool_g[0] - p0->gpool_g[0] : 0;
            parts++;
        }
        int last[MAXJ], epoch = 0;
        for (int i = 0; i < MAXJ; i++) last[i] = -1;
        for (int round = 0; round < 20; round++) {
            int changed = 0;
            if (round < 12)
                for (int k = (int)(rnd(&seed) % 4); k > 0 && w.nj < MAXJ; k--, changed = 1) {
                    int j = w_job(&w, (int)(rnd(&seed) % 4), rnd(&seed) % 3 ? c1 : c2,
                                  1 + (int)(rnd(&seed) % 2), (int)(rnd(&seed) % 2) * 10,
                                  100 * round + k);
                    w.jobs[j].preemptible = rnd(&seed) % 2;
                }
            if (round < 12)
                for (int i = w.nj - 1; i >= 0; i--)
                    if (w.jobs[i].state == SCH_RUNNING && rnd(&seed) % 7 == 0) {
                        int n = w.nj - 1;
                        w_end(&w, i);
                        last[i] = last[n];
                        last[n] = -1;
                        changed = 1;
                    }
            epoch += changed;
            sch_result r;
            round_ok(&w, &r);
            int64_t use[6] = {0};
            for (int i = 0; i < w.nj; i++)
                if (w.jobs[i].state == SCH_RUNNING)
                    use[pdom_of(&w, &w.jobs[i], pool_of(&w, i))] +=
                        sch_demand(&w.s, &w.jobs[i], QD_GPU_MILLI);
            int lost[6] = {0};
            for (int i = 0; i < r.n; i++) {
                const sch_decision *d = &r.d[i];
                const sch_job *x = &w.jobs[d->job];
                int64_t dm = sch_demand(&w.s, x, QD_GPU_MILLI);
                int gp = x->state == SCH_ADMITTED ? x->gpool : d->gpool;
                if (d->action == SCH_DO_PLACE) {
                    int pl = w.nodes[w.gpus[d->units[0].gpu[0]].node].pool;
                    if (x->state == SCH_ADMITTED && x->gpool > 0) {
                        given++;
                        for (int u = 0; u < x->units; u++) /* only where it was given */
                            assert_int_equal(w.nodes[w.gpus[d->units[u].gpu[0]].node].pool,
                                             x->gpool - 1);
                    }
                    use[pdom_of(&w, x, pl)] += dm;
                }
                if (d->action == SCH_DO_WAIT_PREEMPT && gp > 0) use[pdom_of(&w, x, gp - 1)] += dm;
                if (d->action != SCH_DO_PREEMPT) continue;
                use[pdom_of(&w, x, pool_of(&w, d->job))] -= dm;
                if (!d->reclaim) continue;
                reclaims++;
                const sch_decision *bd = dec(&r, d->by);
                const sch_job *by = &w.jobs[d->by];
                int bgp = by->state == SCH_ADMITTED ? by->gpool : bd->gpool;
                if (bgp > 0) { /* its victims run (some unit of them) where it may go */
                    int there = 0;
                    for (int u = 0; u < x->units; u++)
                        there |= w.nodes[w.gpus[x->place[u].gpu[0]].node].pool == bgp - 1;
                    if (!there)
                        fail_msg("trial %d round %d: job %s reclaimed for %s, given pool %d, "
                                 "runs in pool %d",
                                 trial, round, x->id, by->id, bgp - 1, pool_of(&w, d->job));
                }
                if (w.projects[by->project].tenant != w.projects[x->project].tenant)
                    lost[pdom_of(&w, x, pool_of(&w, d->job))] = 1;
                else /* a sibling's, in the same domain: only with parts of it */
                    sibling++, assert_int_not_equal(by->project, x->project);
                if (last[d->job] == epoch)
                    fail_msg("trial %d: job %s reclaimed twice for the same capacity", trial, x->id);
                last[d->job] = epoch;
            }
            for (int dm = 0; dm < 6; dm++) { /* a domain reclaimed from keeps its guarantee */
                const quota_set *q = &w.tenants[dm / 2].quota;
                int64_t g = dm % 2 ? q->gpool_g[0] : q->guarantee < 0 ? 0 : q->guarantee;
                if (lost[dm] && use[dm] < g)
                    fail_msg("trial %d round %d: domain %d reclaimed below its guarantee (%lld < "
                             "%lld)",
                             trial, round, dm, (long long)use[dm], (long long)g);
            }
            w_apply(&w, &r);
            sch_result_free(&r);
            settles(&w, trial, round);
        }
        sch_result r;
        round_ok(&w, &r);
        assert_int_equal(r.placed + r.preempted, 0); /* settled */
        sch_result_free(&r);
    }
    printf("pool guarantees: %d reclaims (%d of a sibling project's, %d trials with parts), %d "
           "jobs placed where admission gave them\n",
           reclaims, sibling, parts, given);
    assert_true(reclaims > 0);
    assert_true(given > 0);
}

/*
 * Projects' parts of a pool's guarantee (steps 6b, 6d): red is guaranteed 4 GPUs in east,
 * 3 of them project 0's part and 1 project 2's; blue (4 of its own) may not use east.
 * Project 0 runs 4 in east (the fourth borrowed, on its sibling's idle part: west is full of
 * blue's); project 2's job is given east, owned within its part, and takes that one back;
 * blue's work is not touched.
 */
static void pool_guarantee_parts(void **state) {
    (void)state;
    world w;
    sch_result r;
    w_init(&w);
    w.np = 3; /* project 2: red's second */
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 0); /* east */
    w_node(&w, 4, 0, SCH_WHOLE, 64, 512, 1); /* west */
    int c = w_class(&w, "a100.1x", SCH_WHOLE, 1, 1, 1, 0);
    quota_set *red = &w.tenants[0].quota, *blue = &w.tenants[1].quota;
    red->ngpool = 1;
    snprintf(red->gpool_name[0], 64, "east");
    red->gpool_g[0] = 4000;
    blue->guarantee = 4000;
    for (int p = 0; p <= 2; p += 2) {
        quota_set *pq = &w.projects[p].quota;
        pq->ngpool = 1;
        snprintf(pq->gpool_name[0], 64, "east");
        pq->gpool_g[0] = p == 0 ? 3000 : 1000;
    }
    w.pool_ok[1][0] = 0; /* blue may not use east: its 4 owned jobs fill west */
    int a[4], bj[4];
    for (int i = 0; i < 4; i++) a[i] = w_job(&w, 0, c, 1, 10, i);
    for (int i = 0; i < 4; i++) bj[i] = w_job(&w, 1, c, 1, 10, 10 + i);
    round_ok(&w, &r);
    for (int i = 0; i < 4; i++) { /* the fourth, borrowed, finds room in east only */
        assert_int_equal(dec(&r, a[i])->action, SCH_DO_PLACE);
        assert_int_equal(w.nodes[w.gpus[dec(&r, a[i])->units[0].gpu[0]].node].pool, 0);
        assert_int_equal(dec(&r, bj[i])->action, SCH_DO_PLACE);
    }
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(r.placed + r.preempted, 0);
    assert_int_equal(r.borrowed[0], 1000); /* project 0's fourth: above its part, on 2's */
    sch_result_free(&r);
    int q = w_job(&w, 2, c, 1, 10, 20);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, q)->action, SCH_DO_WAIT_PREEMPT);
    assert_true(dec(&r, q)->reclaim);
    assert_int_equal(dec(&r, q)->gpool, 1);
    int victims = 0;
    for (int i = 0; i < r.n; i++)
        if (r.d[i].action == SCH_DO_PREEMPT) {
            victims++;
            assert_int_equal(r.d[i].job, a[3]); /* the newest of project 0's, in east */
            if (!strstr(r.d[i].reason, "above project red-p's part"))
                fail_msg("reason: %s", r.d[i].reason);
        }
    assert_int_equal(victims, 1);
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(dec(&r, q)->action, SCH_DO_PLACE);
    assert_false(dec(&r, q)->borrowed);
    w_apply(&w, &r);
    sch_result_free(&r);
    round_ok(&w, &r);
    assert_int_equal(r.borrowed[0], 0); /* each within its part */
    assert_int_equal(r.placed + r.preempted, 0);
    sch_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admission_every_dimension),
        cmocka_unit_test(waiting_never_passes_quota),
        cmocka_unit_test(order_priority_fairshare_age),
        cmocka_unit_test(reason_names_cpu_memory),
        cmocka_unit_test(placement_constraints),
        cmocka_unit_test(gang_all_or_nothing),
        cmocka_unit_test(nvlink_groups),
        cmocka_unit_test(priority_policy),
        cmocka_unit_test(driver_and_project_class_rules),
        cmocka_unit_test(vendor_rules),
        cmocka_unit_test(preemption_choices),
        cmocka_unit_test(no_preemption_loops),
        cmocka_unit_test(preemptor_keeps_what_its_victims_free),
        cmocka_unit_test(property_random_clusters),
        cmocka_unit_test(guarantees_borrow_and_reclaim),
        cmocka_unit_test(guarantees_kept_and_weight),
        cmocka_unit_test(fair_use_by_weight_and_recent),
        cmocka_unit_test(guarantees_reclaim_cap),
        cmocka_unit_test(guarantees_property_no_loops),
        cmocka_unit_test(reservation_named_nodes),
        cmocka_unit_test(reservation_count_and_maintenance),
        cmocka_unit_test(reservation_property),
        cmocka_unit_test(reservation_count_of_slices),
        cmocka_unit_test(reservation_counts_against_guarantee),
        cmocka_unit_test(project_parts),
        cmocka_unit_test(class_guarantees),
        cmocka_unit_test(pool_guarantees),
        cmocka_unit_test(pool_guarantees_property),
        cmocka_unit_test(pool_guarantee_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
