/*
 * test_runner.c - the agent's container launch, without a runtime: the
 * argument list runner_container_argv() builds for an assignment with an
 * image (devices by CDI name, the job's variables only, limits, the job
 * folder, image and command), what it refuses, and runner_set_runtime();
 * the jobs' own identity (runner_set_identity): the specs it takes, and, as
 * root, a real job that runs as its own uid and cannot read the node's
 * credential, the state folder or workloads.json (issue 18, finding 2).
 */
#include "testutil.h"

#include "../../src/agent/runner.h"

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identity_specs),
        cmocka_unit_test(job_identity),
        cmocka_unit_test(full_argument_list),
        cmocka_unit_test(image_default_command_no_limits),
        cmocka_unit_test(refused),
        cmocka_unit_test(set_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
