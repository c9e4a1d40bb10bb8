/*
 * test_runner.c - the agent's container launch, without a runtime: the
 * argument list runner_container_argv() builds for an assignment with an
 * image (devices by CDI name, the job's variables only, limits, the job
 * folder, image and command), what it refuses, and runner_set_runtime();
 * the jobs' own identity (runner_set_identity): the specs it takes, and, as
 * root, a real job that runs as its own uid and cannot read the node's
 * credential, the state folder or workloads.json (issue 18, finding 2);
 * the ports a workload listens on (ports.h, from a /proc tree made here)
 * and the server's bounded form of them (jobs_ports_text).
 */
#include "testutil.h"

#include "../../src/agent/ports.h"
#include "../../src/agent/runner.h"
#include "../../src/sched/jobs.h"

#include "../../src/core/strbuf.h"

#include <jansson.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char *const ENV[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                            "HOME=/state/work/j1",
                            "GPUPOOL_JOB_ID=j1",
                            "GPUPOOL_TENANT=red",
                            "GPUPOOL_PROJECT=train",
                            "CUDA_VISIBLE_DEVICES=GPU-a,MIG-b",
                            "NVIDIA_VISIBLE_DEVICES=GPU-a,MIG-b",
                            NULL};

/* argv as one string, arguments separated by '|' */
static char *joined(char **argv) {
    strbuf b = SB_INIT;
    for (char **p = argv; *p; p++) {
        if (p != argv) sb_addc(&b, '|');
        sb_adds(&b, *p);
    }
    return sb_detach(&b);
}

static void full_argument_list(void **state) {
    (void)state;
    json_t *a = json_loads("{\"job\":\"j1\",\"placement\":\"b7\",\"image\":\"nvcr.io/nv/pt:24.05\","
                           "\"devices\":[\"GPU-a\",\"MIG-b\"],\"cpus\":8,\"memory_gib\":64,"
                           "\"command\":[\"python\",\"train.py\",\"--lr\",\"1e-4\"]}",
                           0, NULL);
    assert_non_null(a);
    char **v = runner_container_argv("/usr/bin/podman", a, "/state/work/j1", ENV);
    assert_non_null(v);
    char *s = joined(v);
    assert_string_equal(s, "/usr/bin/podman|run|--rm|--name|gpupool-j1-b7"
                           "|--device|nvidia.com/gpu=GPU-a|--device|nvidia.com/gpu=MIG-b"
                           "|-e|GPUPOOL_JOB_ID=j1|-e|GPUPOOL_TENANT=red|-e|GPUPOOL_PROJECT=train"
                           "|-e|CUDA_VISIBLE_DEVICES=GPU-a,MIG-b|-e|NVIDIA_VISIBLE_DEVICES=GPU-a,MIG-b"
                           "|--cpus|8|--memory|64g|--workdir|/work|-v|/state/work/j1:/work"
                           "|nvcr.io/nv/pt:24.05|python|train.py|--lr|1e-4");
    free(s);
    runner_argv_free(v);
    json_decref(a);
}

static void image_default_command_no_limits(void **state) {
    (void)state;
    /* no command (the image's own), no class limits, one card named twice (two shared
     * slices of it): one --device, no --cpus/--memory */
    json_t *a = json_loads("{\"job\":\"j2\",\"image\":\"busybox\",\"devices\":[\"GPU-s\",\"GPU-s\"],"
                           "\"cpus\":0,\"memory_gib\":0,\"command\":[]}",
                           0, NULL);
    char *const env[] = {"HOME=/x", "GPUPOOL_JOB_ID=j2", NULL};
    char **v = runner_container_argv("docker", a, "/w", env);
    assert_non_null(v);
    char *s = joined(v);
    assert_string_equal(s, "docker|run|--rm|--name|gpupool-j2|--device|nvidia.com/gpu=GPU-s"
                           "|-e|GPUPOOL_JOB_ID=j2|--workdir|/work|-v|/w:/work|busybox");
    free(s);
    runner_argv_free(v);
    json_decref(a);
}

static void refused(void **state) {
    (void)state;
    json_t *a = json_loads("{\"job\":\"j3\",\"devices\":[],\"command\":[\"true\"]}", 0, NULL);
    assert_null(runner_container_argv("podman", a, "/w", ENV)); /* no image */
    json_object_set_new(a, "image", json_string(""));
    assert_null(runner_container_argv("podman", a, "/w", ENV)); /* empty image */
    json_object_set_new(a, "image", json_string("--privileged"));
    assert_null(runner_container_argv("podman", a, "/w", ENV)); /* would be read as an option */
    json_object_set_new(a, "image", json_string("alpine"));
    assert_null(runner_container_argv(NULL, a, "/w", ENV));      /* no runtime */
    char **v = runner_container_argv("podman", a, "/w", NULL); /* no variables at all */
    assert_non_null(v);
    char *s = joined(v);
    assert_string_equal(s, "podman|run|--rm|--name|gpupool-j3|--workdir|/work|-v|/w:/work|alpine|true");
    free(s);
    runner_argv_free(v);
    runner_argv_free(NULL);
    json_decref(a);
}

static void set_runtime(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    runner *r = runner_new(dir, 1);
    assert_non_null(r);
    assert_int_equal(runner_set_runtime(r, NULL), 0);
    assert_int_equal(runner_set_runtime(r, ""), 0);
    assert_int_equal(runner_set_runtime(r, "sh"), 0); /* a name on PATH */
    assert_int_equal(runner_set_runtime(r, "no-such-runtime-gpupool"), -1);
    assert_int_equal(runner_set_runtime(r, "/nonexistent/podman"), -1);
    assert_int_equal(runner_set_runtime(r, dir), -1); /* a folder */
    char path[600];
    snprintf(path, sizeof path, "%s/not-executable", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    assert_int_equal(runner_set_runtime(r, path), -1);
    assert_int_equal(chmod(path, 0700), 0);
    assert_int_equal(runner_set_runtime(r, path), 0);
    runner_free(r);
    tu_rmdir(dir);
}

static void identity_specs(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    runner *r = runner_new(dir, 1);
    assert_non_null(r);
    char who[160];
    if (geteuid() != 0) {
        /* an agent that is not root cannot switch: jobs run as it, and it says so */
        assert_int_equal(runner_set_identity(r, "200000-200010"), -2);
        assert_int_equal(runner_set_identity(r, NULL), 0);
        assert_int_equal(runner_identity(r, who, sizeof who), 0);
        assert_non_null(strstr(who, "the agent's own"));
    } else {
        static const char *const bad[] = {"0", "0-10", "10-5", "-5", "1-2-3", "12x", "root",
                                          "no-such-user-gpupool", "99999999999", "1-2000000", NULL};
        for (int i = 0; bad[i]; i++) assert_int_equal(runner_set_identity(r, bad[i]), -1);
        assert_int_equal(runner_set_identity(r, "300000"), 0);
        assert_int_equal(runner_identity(r, who, sizeof who), 1);
        assert_non_null(strstr(who, "uid 300000"));
        assert_int_equal(runner_set_identity(r, "200000-200010"), 0);
        assert_int_equal(runner_set_identity(r, NULL), 0); /* the default range */
        assert_int_equal(runner_identity(r, who, sizeof who), 1);
        assert_non_null(strstr(who, RUNNER_JOB_UIDS));
    }
    /* the state folder is the agent's: never listable by others */
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0744, 0700);
    runner_free(r);
    tu_rmdir(dir);
}

/* Run `script` as job j1 on node n1 of a runner in `dir`; OUT: its final report entry. */
static json_t *run_job(runner *r, const char *script) {
    json_t *as = json_pack("[{s:s,s:s,s:s,s:s,s:[s,s,s],s:[s]}]", "job", "j1", "placement",
                           "p1", "tenant", "red", "project", "train", "command", "sh", "-c",
                           script, "devices", "GPU-a");
    runner_apply(r, "n1", as);
    json_decref(as);
    for (int i = 0; i < 500; i++) {
        runner_tick(r);
        json_t *rep = runner_report(r, "n1");
        json_t *w = json_array_get(rep, 0);
        if (w && !strcmp(json_string_value(json_object_get(w, "state")), "exited")) {
            json_incref(w);
            json_decref(rep);
            return w;
        }
        json_decref(rep);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("the job did not exit within 5 s");
    return NULL;
}

static void job_identity(void **state) {
    (void)state;
    if (geteuid() != 0) skip(); /* only root can give a job another uid */
    char *dir = tu_mkdtemp(), path[700];
    snprintf(path, sizeof path, "%s/n1.token", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("gpt_the-node-credential\n", f);
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
    runner *r = runner_new(dir, 1);
    assert_non_null(r);
    assert_int_equal(runner_set_identity(r, NULL), 0);
    json_t *w = run_job(r,
                        "echo uid=$(id -u) groups=$(id -G); echo HOME=$HOME; cat ../../n1.token;"
                        " cat $HOME/../../n1.token; ls ../..; cat ../../workloads.json;"
                        " rm -f output.log; ln -s ../../n1.token output.log; echo end");
    const char *log = json_string_value(json_object_get(w, "log"));
    assert_non_null(log);
    assert_null(strstr(log, "uid=0 "));
    assert_non_null(strstr(log, "uid=2"));
    assert_null(strstr(log, "gpt_the-node-credential"));
    assert_null(strstr(log, "n1.token\n"));  /* `ls ../..` lists nothing */
    assert_null(strstr(log, "\"job\":")); /* nor is workloads.json read */
    assert_non_null(strstr(log, "end"));
    char home[800];
    snprintf(home, sizeof home, "HOME=%s/work/j1\n", dir);
    assert_non_null(strstr(log, home));
    /* the job's folder is its own */
    struct stat st;
    snprintf(path, sizeof path, "%s/work/j1", dir);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_not_equal(st.st_uid, 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    json_decref(w);
    runner_ack(r, "n1");
    runner_free(r);
    tu_rmdir(dir);
}

static const char TCP[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0\n"
    "   1: 00000000:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000  2000        0 222 1 0 100 0 0 10 0\n"
    "   2: 0100007F:1F90 0100007F:A000 01 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 100 0 0 10 0\n"
    "   3: garbage line\n"
    "   4: 0100007F:0000 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 444 1\n";
static const char TCP6[] =
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  3000        0 555 1 0 100 0 0 10 0";

static void ports_parse(void **state) {
    (void)state;
    ports_sock s[8];
    int n = 0;
    /* listening sockets only; a connected one, a port 0 and a broken line are skipped */
    assert_int_equal(ports_parse_listen(TCP, s, &n, 8), 2);
    assert_int_equal(s[0].port, 8080);
    assert_int_equal(s[0].uid, 1000);
    assert_true(s[0].inode == 111);
    assert_int_equal(s[1].port, 9090);
    assert_int_equal(ports_parse_listen(TCP6, s, &n, 8), 1);
    assert_int_equal(n, 3);
    assert_int_equal(s[2].port, 8081);
    assert_true(s[2].inode == 555);
    /* the capacity holds */
    n = 0;
    assert_int_equal(ports_parse_listen(TCP, s, &n, 1), 1);
    assert_int_equal(ports_parse_listen("", s, &n, 8), 0);
}

static void ports_list(void **state) {
    (void)state;
    int p[PORTS_MAX], n = 0;
    ports_add(p, &n, 9000);
    ports_add(p, &n, 80);
    ports_add(p, &n, 9000);
    ports_add(p, &n, 443);
    assert_int_equal(n, 3);
    assert_int_equal(p[0], 80);
    assert_int_equal(p[1], 443);
    assert_int_equal(p[2], 9000);
    for (int i = 0; i < 40; i++) ports_add(p, &n, 20000 - i);
    assert_int_equal(n, PORTS_MAX); /* full: the lowest are kept */
    assert_int_equal(p[0], 80);
    assert_int_equal(p[PORTS_MAX - 1], 20000 - 40 + PORTS_MAX - 3);
    ports_add(p, &n, 30000); /* higher than all kept: dropped */
    assert_int_equal(p[PORTS_MAX - 1], 20000 - 40 + PORTS_MAX - 3);
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void ports_owners(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[600];
    snprintf(path, sizeof path, "%s/net", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/net/tcp", dir);
    put(path, TCP);
    snprintf(path, sizeof path, "%s/net/tcp6", dir);
    put(path, TCP6);
    /* process 42 leads session 42 and holds socket 111 (8080); 43 is in session 99 with 222 */
    const char *procs[][3] = {{"42", "42 (my (job) x) S 1 42 42 0", "socket:[111]"},
                              {"43", "43 (other) S 1 43 99 0", "socket:[222]"},
                              {"44", "44 (sh) S 42 42 42 0", "pipe:[9]"}};
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, procs[i][0]);
        assert_int_equal(mkdir(path, 0700), 0);
        snprintf(path, sizeof path, "%s/%s/stat", dir, procs[i][0]);
        put(path, procs[i][1]);
        snprintf(path, sizeof path, "%s/%s/fd", dir, procs[i][0]);
        assert_int_equal(mkdir(path, 0700), 0);
        snprintf(path, sizeof path, "%s/%s/fd/3", dir, procs[i][0]);
        assert_int_equal(symlink(procs[i][2], path), 0);
    }
    ports_owner o[3] = {{.sid = 42, .uid = -1}, {.sid = 7, .uid = 3000}, {.sid = 5, .uid = -1}};
    ports_of_owners(dir, o, 3);
    assert_int_equal(o[0].n, 1); /* by session: 8080, never session 99's 9090 */
    assert_int_equal(o[0].port[0], 8080);
    assert_int_equal(o[1].n, 1); /* by its own uid: 8081 */
    assert_int_equal(o[1].port[0], 8081);
    assert_int_equal(o[2].n, 0);
    /* no /proc: nothing */
    o[0].n = 5;
    ports_of_owners("/nonexistent-proc", o, 1);
    assert_int_equal(o[0].n, 0);
    tu_rmdir(dir);
}

static void ports_server_side(void **state) {
    (void)state;
    char t[128];
    json_t *a = json_loads("[9000, 80, 9000, 443]", 0, NULL);
    assert_int_equal(jobs_ports_text(a, t, sizeof t), 3);
    assert_string_equal(t, "80,443,9000");
    json_decref(a);
    /* hostile lists change nothing */
    const char *bad[] = {"[0]", "[65536]", "[\"80\"]", "[1.5]", "{}", "[-1]",
                         "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        assert_non_null(a);
        assert_int_equal(jobs_ports_text(a, t, sizeof t), -1);
        json_decref(a);
    }
    a = json_array();
    assert_int_equal(jobs_ports_text(a, t, sizeof t), 0);
    assert_string_equal(t, "");
    json_decref(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identity_specs),
        cmocka_unit_test(job_identity),
        cmocka_unit_test(full_argument_list),
        cmocka_unit_test(image_default_command_no_limits),
        cmocka_unit_test(refused),
        cmocka_unit_test(set_runtime),
        cmocka_unit_test(ports_parse),
        cmocka_unit_test(ports_list),
        cmocka_unit_test(ports_owners),
        cmocka_unit_test(ports_server_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
