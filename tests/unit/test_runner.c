/*
 * test_runner.c - the agent's container launch, without a runtime: the
 * argument list runner_container_argv() builds for an assignment with an
 * image (devices by CDI name, the job's variables only, limits, the job
 * folder, image and command), what it refuses, and runner_set_runtime();
 * the jobs' own identity (runner_set_identity): the specs it takes, and, as
 * root, a real job that runs as its own uid and cannot read the node's
 * credential, the state folder or workloads.json (issue 18, finding 2);
 * the ports a workload listens on (ports.h, from a /proc tree made here)
 * and the server's bounded form of them (jobs_ports_text); the devices per
 * vendor (issue 24): the variables runner_device_env gives NVIDIA, AMD (GPUs
 * and compute partitions) and Intel Gaudi assignments, their CDI names in a
 * container, the agent's own numbers for them (runner_localize: ROCm's
 * order with partitions, Gaudi module ids), hostile assignments refused (unknown vendor, bad indexes,
 * devices and indexes of different lengths), and real jobs: the variables
 * reach the process, and a refused one starts nothing and exits 126 saying why.
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

/* The variables runner_device_env gives the assignment `js` (JSON), joined by '|'; NULL if refused
 * (OUT why). */
static char *device_env(const char *js, int container, char *why, size_t len) {
    json_t *a = json_loads(js, 0, NULL);
    assert_non_null(a);
    char **env = (char **)1;
    why[0] = '\0';
    int rc = runner_device_env(a, container, &env, why, len);
    json_decref(a);
    if (rc != 0) {
        assert_int_equal(rc, -1);
        assert_null(env);
        assert_true(why[0] != '\0');
        return NULL;
    }
    assert_non_null(env);
    char *s = joined(env);
    runner_argv_free(env);
    return s;
}

static void vendor_nvidia(void **state) {
    (void)state;
    char why[96], *s;
    /* an assignment of an older server (no vendor) is NVIDIA's, as it always was */
    s = device_env("{\"devices\":[\"GPU-a\",\"MIG-b\"]}", 0, why, sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=nvidia|CUDA_VISIBLE_DEVICES=GPU-a,MIG-b"
                           "|NVIDIA_VISIBLE_DEVICES=GPU-a,MIG-b");
    free(s);
    /* NVIDIA devices go by UUID: an index the server does not know (-1) does no harm */
    s = device_env("{\"vendor\":\"nvidia\",\"devices\":[\"GPU-a\"],\"indexes\":[-1]}", 0, why,
                   sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=nvidia|CUDA_VISIBLE_DEVICES=GPU-a|NVIDIA_VISIBLE_DEVICES=GPU-a");
    free(s);
    s = device_env("{\"vendor\":\"nvidia\",\"devices\":[\"GPU-s\"],\"indexes\":[3],"
                   "\"shared\":{\"percent\":25,\"memory_gib\":20}}",
                   1, why, sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=nvidia|CUDA_VISIBLE_DEVICES=GPU-s"
                           "|NVIDIA_VISIBLE_DEVICES=GPU-s|CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"
                           "|CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-s=20G");
    free(s);
}

static void vendor_amd(void **state) {
    (void)state;
    char why[96], *s;
    /* two whole cards: ROCr selects them by the node's numbers; HIP and ROCclr count from 0 in
     * what ROCr exposes */
    s = device_env("{\"vendor\":\"amd\",\"devices\":[\"GPU-x\",\"GPU-y\"],\"indexes\":[5,2]}", 0,
                   why, sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=amd|ROCR_VISIBLE_DEVICES=5,2|HIP_VISIBLE_DEVICES=0,1"
                           "|GPU_DEVICE_ORDINAL=0,1");
    assert_null(strstr(s, "CUDA_"));
    assert_null(strstr(s, "NVIDIA_"));
    free(s);
    /* in a container it sees only the devices CDI gave it, numbered from 0 */
    s = device_env("{\"vendor\":\"amd\",\"devices\":[\"GPU-x\",\"GPU-y\"],\"indexes\":[5,2]}", 1,
                   why, sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=amd|ROCR_VISIBLE_DEVICES=0,1|HIP_VISIBLE_DEVICES=0,1"
                           "|GPU_DEVICE_ORDINAL=0,1");
    free(s);
    /* two CPX partitions of card 1 (each a device of its own, by its slice index), and a
     * shared slice of card 4 named twice: distinct numbers, no MPS variable */
    s = device_env("{\"vendor\":\"amd\",\"devices\":[\"PART-a\",\"PART-b\",\"GPU-s\",\"GPU-s\"],"
                   "\"indexes\":[1,1,4,4],\"slice_indexes\":[9,10,null,null],"
                   "\"shared\":{\"percent\":50,\"memory_gib\":96}}",
                   0, why, sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=amd|ROCR_VISIBLE_DEVICES=9,10,4"
                           "|HIP_VISIBLE_DEVICES=0,1,2|GPU_DEVICE_ORDINAL=0,1,2");
    assert_null(strstr(s, "CUDA_"));
    free(s);
}

static void vendor_intel(void **state) {
    (void)state;
    char why[96], *s;
    s = device_env("{\"vendor\":\"intel\",\"devices\":[\"GAUDI-a\",\"GAUDI-b\"],\"indexes\":[6,0],"
                   "\"slice_indexes\":[null,null]}",
                   0, why, sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=intel|HABANA_VISIBLE_MODULES=6,0"
                           "|HABANA_VISIBLE_DEVICES=6,0");
    assert_null(strstr(s, "CUDA_"));
    assert_null(strstr(s, "NVIDIA_"));
    free(s);
    s = device_env("{\"vendor\":\"intel\",\"devices\":[\"GAUDI-a\"],\"indexes\":[7]}", 1, why,
                   sizeof why);
    assert_string_equal(s, "GPUPOOL_VENDOR=intel|HABANA_VISIBLE_MODULES=7|HABANA_VISIBLE_DEVICES=7");
    free(s);
}

static void vendor_cdi_names(void **state) {
    (void)state;
    char *const env[] = {"GPUPOOL_JOB_ID=j4", NULL};
    json_t *a = json_loads("{\"job\":\"j4\",\"image\":\"rocm/pytorch\",\"vendor\":\"amd\","
                           "\"devices\":[\"PART-a\",\"PART-b\",\"GPU-s\",\"GPU-s\"],"
                           "\"indexes\":[1,1,4,4],\"slice_indexes\":[9,10,null,null]}",
                           0, NULL);
    char **v = runner_container_argv("podman", a, "/w", env);
    assert_non_null(v);
    char *s = joined(v);
    assert_string_equal(s, "podman|run|--rm|--name|gpupool-j4|--device|amd.com/gpu=9"
                           "|--device|amd.com/gpu=10|--device|amd.com/gpu=4"
                           "|-e|GPUPOOL_JOB_ID=j4|--workdir|/work|-v|/w:/work|rocm/pytorch");
    free(s);
    runner_argv_free(v);
    json_decref(a);
    a = json_loads("{\"job\":\"j5\",\"image\":\"gaudi/pt\",\"vendor\":\"intel\","
                   "\"devices\":[\"GAUDI-a\",\"GAUDI-b\"],\"indexes\":[3,6]}",
                   0, NULL);
    v = runner_container_argv("docker", a, "/w", NULL);
    assert_non_null(v);
    s = joined(v);
    assert_string_equal(s, "docker|run|--rm|--name|gpupool-j5|--device|habana.ai/gaudi=3"
                           "|--device|habana.ai/gaudi=6|--workdir|/work|-v|/w:/work|gaudi/pt");
    assert_null(strstr(s, "nvidia.com"));
    free(s);
    runner_argv_free(v);
    json_decref(a);
}

/* The node's own report (as the agent's discovery makes it): an NVIDIA card, an AMD card in
 * SPX, an AMD card in CPX (two partitions shown; the second one's ROCm number reported), two
 * Gaudi cards whose module ids and library indexes are not their node indexes. */
static const char REPORT[] =
    "{\"gpus\":["
    "{\"uuid\":\"GPU-n\",\"index\":0,\"vendor\":\"nvidia\",\"slices\":[]},"
    "{\"uuid\":\"GPU-m0\",\"index\":1,\"vendor\":\"amd\",\"vendor_index\":0,\"slices\":[]},"
    "{\"uuid\":\"GPU-m1\",\"index\":2,\"vendor\":\"amd\",\"vendor_index\":1,\"slices\":["
    "{\"uuid\":\"PART-0\",\"profile\":\"cpx.24gb\"},{\"uuid\":\"PART-1\",\"profile\":\"cpx.24gb\","
    "\"device_index\":7}]},"
    "{\"uuid\":\"GPU-m2\",\"index\":3,\"vendor\":\"amd\",\"slices\":[]},"
    "{\"uuid\":\"GAUDI-0\",\"index\":4,\"vendor\":\"intel\",\"vendor_index\":0,\"module_id\":5},"
    "{\"uuid\":\"GAUDI-1\",\"index\":5,\"vendor\":\"intel\",\"vendor_index\":1,\"module_id\":2}]}";

/* Localize assignment `js` against REPORT; OUT: runner_device_env's variables, joined. */
static char *localized(const char *js) {
    json_t *rep = json_loads(REPORT, 0, NULL), *as = json_loads(js, 0, NULL);
    assert_non_null(rep);
    assert_non_null(as);
    runner_localize(as, rep);
    char why[96], **env = NULL, *s = NULL;
    if (runner_device_env(json_array_get(as, 0), 0, &env, why, sizeof why) == 0) s = joined(env);
    else fail_msg("refused: %s", why);
    runner_argv_free(env);
    json_decref(as);
    json_decref(rep);
    return s;
}

static void vendor_localize(void **state) {
    (void)state;
    char *s;
    /* AMD: the whole cards by their ROCm order (the CPX card's partitions come between), a
     * partition by the number discovery reported, else its card's first device plus its place */
    s = localized("[{\"vendor\":\"amd\",\"devices\":[\"GPU-m0\",\"GPU-m2\"],\"indexes\":[1,3]}]");
    assert_string_equal(s, "GPUPOOL_VENDOR=amd|ROCR_VISIBLE_DEVICES=0,3|HIP_VISIBLE_DEVICES=0,1"
                           "|GPU_DEVICE_ORDINAL=0,1");
    free(s);
    s = localized("[{\"vendor\":\"amd\",\"devices\":[\"PART-0\",\"PART-1\"],\"indexes\":[2,2],"
                  "\"slice_indexes\":[0,1]}]");
    assert_string_equal(s, "GPUPOOL_VENDOR=amd|ROCR_VISIBLE_DEVICES=1,7|HIP_VISIBLE_DEVICES=0,1"
                           "|GPU_DEVICE_ORDINAL=0,1");
    free(s);
    /* Gaudi: module ids for SynapseAI, the library's indexes for the container hook */
    s = localized("[{\"vendor\":\"intel\",\"devices\":[\"GAUDI-1\",\"GAUDI-0\"],\"indexes\":[5,4]}]");
    assert_string_equal(s, "GPUPOOL_VENDOR=intel|HABANA_VISIBLE_MODULES=2,5|HABANA_VISIBLE_DEVICES=1,0");
    free(s);
    /* a device the report lacks, or one of another vendor: the server's indexes stand */
    s = localized("[{\"vendor\":\"intel\",\"devices\":[\"GAUDI-0\",\"GAUDI-9\"],\"indexes\":[4,9]}]");
    assert_string_equal(s, "GPUPOOL_VENDOR=intel|HABANA_VISIBLE_MODULES=4,9|HABANA_VISIBLE_DEVICES=4,9");
    free(s);
    s = localized("[{\"vendor\":\"amd\",\"devices\":[\"GPU-n\"],\"indexes\":[0]}]");
    assert_string_equal(s, "GPUPOOL_VENDOR=amd|ROCR_VISIBLE_DEVICES=0|HIP_VISIBLE_DEVICES=0"
                           "|GPU_DEVICE_ORDINAL=0");
    free(s);
    /* NVIDIA assignments are left alone */
    json_t *rep = json_loads(REPORT, 0, NULL);
    json_t *as = json_loads("[{\"devices\":[\"GPU-n\"]},{\"vendor\":7}]", 0, NULL);
    runner_localize(as, rep);
    assert_null(json_object_get(json_array_get(as, 0), "numbers"));
    assert_null(json_object_get(json_array_get(as, 1), "numbers"));
    json_decref(as);
    json_decref(rep);
}

/* Assignments the runner must not run, with a word of the reason each gives. */
static const char *const HOSTILE[][2] = {
    {"{\"vendor\":\"qualcomm\",\"devices\":[\"X-1\"],\"indexes\":[0]}", "unknown accelerator vendor \"qualcomm\""},
    {"{\"vendor\":\"NVIDIA\",\"devices\":[\"GPU-a\"]}", "unknown accelerator vendor"},
    {"{\"vendor\":\"amd; rm -rf /\",\"devices\":[\"GPU-a\"],\"indexes\":[0]}", "unknown accelerator vendor"},
    {"{\"vendor\":7,\"devices\":[\"GPU-a\"],\"indexes\":[0]}", "unknown accelerator vendor"},
    {"{\"vendor\":\"\",\"devices\":[\"GPU-a\"],\"indexes\":[0]}", "unknown accelerator vendor"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[-1]}", "integer 0..1023"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[1024]}", "integer 0..1023"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[1.5]}", "integer 0..1023"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[\"0\"]}", "integer 0..1023"},
    {"{\"vendor\":\"intel\",\"devices\":[\"GPU-a\"],\"indexes\":[null]}", "integer 0..1023"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[99999999999]}", "integer 0..1023"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[0],\"slice_indexes\":[-3]}", "integer 0..1023"},
    {"{\"vendor\":\"nvidia\",\"devices\":[\"GPU-a\"],\"indexes\":[true]}", "integer 0..1023"},
    {"{\"vendor\":\"nvidia\",\"devices\":[\"GPU-a\"],\"indexes\":[-2]}", "integer 0..1023"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\",\"GPU-b\"],\"indexes\":[0]}", "differ in length"},
    {"{\"vendor\":\"intel\",\"devices\":[\"GPU-a\"],\"indexes\":[0,1]}", "differ in length"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[0],\"slice_indexes\":[]}", "differ in length"},
    {"{\"vendor\":\"nvidia\",\"devices\":[\"GPU-a\",\"GPU-b\"],\"indexes\":[0]}", "differ in length"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"]}", "without device indexes"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":{\"0\":1}}", "not a list"},
    {"{\"vendor\":\"amd\",\"devices\":[],\"indexes\":[]}", "without devices"},
    {"{\"vendor\":\"intel\",\"devices\":[\"GAUDI-a\"],\"indexes\":[0],\"slice_indexes\":[2]}", "Gaudi has none"},
    {"{\"vendor\":\"amd\",\"devices\":\"GPU-a\",\"indexes\":[0]}", "not a list"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a,GPU-b\"],\"indexes\":[0]}", "not one"},
    {"{\"devices\":[\"GPU-a\\nX=1\"]}", "not one"},
    {"{\"devices\":[\"\"]}", "not one"},
    {"{\"devices\":[3]}", "not one"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[0],\"numbers\":[-1]}", "integer 0..1023"},
    {"{\"vendor\":\"intel\",\"devices\":[\"GPU-a\"],\"indexes\":[0],\"modules\":[0,1]}", "differ in length"},
    {"{\"vendor\":\"amd\",\"devices\":[\"GPU-a\"],\"indexes\":[0],\"numbers\":3}", "differ in length"},
};

static void vendor_hostile(void **state) {
    (void)state;
    char why[96];
    for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++) {
        char *s = device_env(HOSTILE[i][0], 0, why, sizeof why);
        if (s) fail_msg("accepted %s: %s", HOSTILE[i][0], s);
        if (!strstr(why, HOSTILE[i][1]))
            fail_msg("%s: reason \"%s\" lacks \"%s\"", HOSTILE[i][0], why, HOSTILE[i][1]);
        assert_true(strlen(why) < 64); /* it fits the report's reason */
        /* no container either */
        json_t *a = json_loads(HOSTILE[i][0], 0, NULL);
        json_object_set_new(a, "job", json_string("j6"));
        json_object_set_new(a, "image", json_string("alpine"));
        assert_null(runner_container_argv("podman", a, "/w", NULL));
        json_decref(a);
    }
    /* too many devices */
    json_t *a = json_pack("{s:s,s:[],s:[]}", "vendor", "amd", "devices", "indexes");
    for (int i = 0; i <= RUNNER_DEVICES_MAX; i++) {
        json_array_append_new(json_object_get(a, "devices"), json_string("GPU-a"));
        json_array_append_new(json_object_get(a, "indexes"), json_integer(0));
    }
    char **env = NULL;
    assert_int_equal(runner_device_env(a, 0, &env, why, sizeof why), -1);
    assert_null(env);
    assert_non_null(strstr(why, "more than"));
    json_decref(a);
}

/* Apply assignment `a` (stolen) as the only one of node n1; OUT: its report entry once exited. */
static json_t *run_assignment(runner *r, json_t *a) {
    json_t *as = json_array();
    json_array_append_new(as, a);
    runner_apply(r, "n1", as);
    json_decref(as);
    for (int i = 0; i < 1000; i++) {
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
    fail_msg("the job did not exit within 10 s");
    return NULL;
}

static void vendor_jobs(void **state) {
    (void)state;
    char *dir = tu_mkdtemp(), path[700];
    runner *r = runner_new(dir, 1);
    assert_non_null(r);
    /* an AMD job sees its ROCm variables, and nothing of CUDA's */
    json_t *w = run_assignment(
        r, json_pack("{s:s,s:s,s:s,s:s,s:s,s:[s,s,s],s:[s,s],s:[i,i],s:[i,o]}", "job", "j7",
                     "placement", "p1", "tenant", "red", "project", "train", "vendor", "amd",
                     "command", "sh", "-c", "env | sort; echo end", "devices", "PART-a", "GPU-b",
                     "indexes", 0, 3, "slice_indexes", 6, json_null()));
    const char *log = json_string_value(json_object_get(w, "log"));
    assert_int_equal(json_integer_value(json_object_get(w, "exit_code")), 0);
    assert_non_null(strstr(log, "ROCR_VISIBLE_DEVICES=6,3\n"));
    assert_non_null(strstr(log, "HIP_VISIBLE_DEVICES=0,1\n"));
    assert_non_null(strstr(log, "GPU_DEVICE_ORDINAL=0,1\n"));
    assert_non_null(strstr(log, "GPUPOOL_VENDOR=amd\n"));
    assert_null(strstr(log, "CUDA_"));
    assert_null(strstr(log, "NVIDIA_"));
    assert_non_null(strstr(log, "end"));
    json_decref(w);
    runner_ack(r, "n1");
    /* a hostile one starts nothing: it exits 126 at once with the reason, no output, no folder */
    w = run_assignment(r, json_pack("{s:s,s:s,s:s,s:s,s:s,s:[s,s,s],s:[s],s:[i]}", "job", "j8",
                                    "placement", "p2", "tenant", "red", "project", "train",
                                    "vendor", "amd", "command", "sh", "-c", "touch ran",
                                    "devices", "GPU-a", "indexes", -4));
    assert_int_equal(json_integer_value(json_object_get(w, "exit_code")), 126);
    assert_non_null(strstr(json_string_value(json_object_get(w, "reason")), "integer 0..1023"));
    assert_string_equal(json_string_value(json_object_get(w, "log")), "");
    assert_int_equal(runner_pid_of_job(r, "n1", "j8"), 0);
    snprintf(path, sizeof path, "%s/work/j8", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    json_decref(w);
    runner_ack(r, "n1");
    assert_int_equal(runner_unreported(r, "n1"), 0);
    runner_free(r);
    tu_rmdir(dir);
}

/* Can a job uid cross every folder above the state folder (issue 33, item 7)? */
/* A job that spans nodes: what each node's process gets, and what is refused. */
static void gang_env(void **state) {
    (void)state;
    char why[128];
    json_t *a = json_loads("{\"job\":\"j\",\"gang\":{\"nodes\":2,\"rank\":1,"
                           "\"hosts\":[\"10.0.0.1\",\"gpu-b.example\"],"
                           "\"node_names\":[\"na\",\"nb\"],\"slots\":[4,2],\"master_port\":29511}}",
                           0, NULL);
    assert_non_null(a);
    char **env = NULL, *hf = NULL;
    size_t ne = 0;
    assert_int_equal(runner_gang_env(a, 29511, "/w/hostfile", &env, &ne, &hf, why, sizeof why), 0);
    char *s = joined(env);
    assert_string_equal(s, "MASTER_ADDR=10.0.0.1|MASTER_PORT=29511|WORLD_SIZE=6|NNODES=2|"
                           "NODE_RANK=1|GPUPOOL_NODES=10.0.0.1,gpu-b.example|"
                           "GPUPOOL_NODE_NAMES=na,nb|GPUPOOL_GPUS_PER_NODE=2|"
                           "GPUPOOL_HOSTFILE=/w/hostfile");
    assert_string_equal(hf, "10.0.0.1 slots=4\ngpu-b.example slots=2\n");
    free(s);
    free(hf);
    runner_argv_free(env);
    json_decref(a);
    /* refused: each a gang that is not one (a line break in an address would write another
     * line into the hostfile of another node's job) */
    static const char *const bad[] = {
        "{\"nodes\":2,\"rank\":2,\"hosts\":[\"a\",\"b\"],\"node_names\":[\"a\",\"b\"],\"slots\":[1,1]}",
        "{\"nodes\":2,\"rank\":0,\"hosts\":[\"a\"],\"node_names\":[\"a\",\"b\"],\"slots\":[1,1]}",
        "{\"nodes\":2,\"rank\":0,\"hosts\":[\"a\",\"b\\nevil slots=99\"],\"node_names\":[\"a\",\"b\"],\"slots\":[1,1]}",
        "{\"nodes\":2,\"rank\":0,\"hosts\":[\"a\",\"b c\"],\"node_names\":[\"a\",\"b\"],\"slots\":[1,1]}",
        "{\"nodes\":2,\"rank\":0,\"hosts\":[\"a\",\"\"],\"node_names\":[\"a\",\"b\"],\"slots\":[1,1]}",
        "{\"nodes\":2,\"rank\":0,\"hosts\":[\"a\",\"b\"],\"node_names\":[\"a\",\"b\"],\"slots\":[1,0]}",
        "{\"nodes\":0,\"rank\":0,\"hosts\":[],\"node_names\":[],\"slots\":[]}",
        "{\"nodes\":1,\"rank\":0,\"hosts\":[1],\"node_names\":[\"a\"],\"slots\":[1]}",
        "\"not an object\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char js[512];
        snprintf(js, sizeof js, "{\"job\":\"j\",\"gang\":%s}", bad[i]);
        a = json_loads(js, 0, NULL);
        if (!a) fail_msg("case %zu: bad test JSON", i);
        env = NULL;
        ne = 0;
        hf = NULL;
        why[0] = '\0';
        if (runner_gang_env(a, 29500, "/w/hostfile", &env, &ne, &hf, why, sizeof why) != -1)
            fail_msg("case %zu accepted", i);
        assert_null(hf);
        assert_true(why[0] != '\0');
        runner_argv_free(env);
        json_decref(a);
    }
    /* a port that is not one */
    a = json_loads("{\"gang\":{\"nodes\":1,\"rank\":0,\"hosts\":[\"a\"],\"node_names\":[\"a\"],"
                   "\"slots\":[1]}}", 0, NULL);
    env = NULL;
    ne = 0;
    assert_int_equal(runner_gang_env(a, 0, "/h", &env, &ne, &hf, why, sizeof why), -1);
    assert_int_equal(runner_gang_env(a, 65536, "/h", &env, &ne, &hf, why, sizeof why), -1);
    runner_argv_free(env);
    json_decref(a);
}

static int odd_only(int port) { return port % 2; }

/* The rendezvous port: in the range, not listening, not held, usable; from the seed on. */
static void ports_rendezvous(void **state) {
    (void)state;
    ports_sock l[3] = {{1, 0, 29500}, {2, 0, 29501}, {3, 0, 29503}};
    int held[1] = {29502};
    assert_int_equal(ports_pick(l, 3, held, 1, 29500, 29510, 0, NULL), 29504);
    assert_int_equal(ports_pick(l, 3, held, 1, 29500, 29510, 7, NULL), 29507);
    /* wraps around */
    assert_int_equal(ports_pick(l, 3, held, 1, 29500, 29510, 9, NULL), 29509);
    assert_int_equal(ports_pick(l, 3, held, 1, 29500, 29510, 10, NULL), 29504);
    assert_int_equal(ports_pick(l, 3, held, 1, 29500, 29510, 0, odd_only), 29505);
    /* none left */
    assert_int_equal(ports_pick(l, 3, held, 1, 29500, 29504, 0, NULL), -1);
    assert_int_equal(ports_pick(l, 0, NULL, 0, 10, 10, 0, NULL), -1);
    assert_int_equal(ports_pick(l, 0, NULL, 0, 0, 10, 0, NULL), -1);
    /* the real one: a port of the range nothing listens on */
    int p = ports_pick_free("/proc", NULL, 0, PORTS_RDV_LO, PORTS_RDV_HI, 12345);
    assert_true(p >= PORTS_RDV_LO && p < PORTS_RDV_HI);
}

static void chain_reach(void **state) {
    (void)state;
    runner_dir ok[] = {{"/", 0, 0, 040755}, {"/srv", 0, 0, 040711}, {"/srv/gp", 0, 0, 040711}};
    assert_int_equal(runner_chain_blocks(ok, 3, 200000, 200000), -1);
    runner_dir locked[] = {{"/", 0, 0, 040755}, {"/root", 0, 0, 040700}, {"/root/v", 0, 0, 040755}};
    assert_int_equal(runner_chain_blocks(locked, 3, 200000, 200000), 1);
    /* the owner's or the group's x bit counts for that owner or group only */
    runner_dir own[] = {{"/", 0, 0, 040755}, {"/home/u", 1000, 1000, 040700}};
    assert_int_equal(runner_chain_blocks(own, 2, 1000, 1000), -1);
    assert_int_equal(runner_chain_blocks(own, 2, 200000, 200000), 1);
    runner_dir grp[] = {{"/g", 0, 5000, 040710}};
    assert_int_equal(runner_chain_blocks(grp, 1, 1000, 5000), -1);
    assert_int_equal(runner_chain_blocks(grp, 1, 1000, 1000), 0);
    /* others' bit does not help the owner: no x for the owner blocks it */
    runner_dir odd[] = {{"/o", 1000, 0, 040601}};
    assert_int_equal(runner_chain_blocks(odd, 1, 1000, 1000), 0);
    assert_int_equal(runner_chain_blocks(odd, 1, 2000, 2000), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identity_specs),
        cmocka_unit_test(chain_reach),
        cmocka_unit_test(gang_env),
        cmocka_unit_test(ports_rendezvous),
        cmocka_unit_test(job_identity),
        cmocka_unit_test(full_argument_list),
        cmocka_unit_test(image_default_command_no_limits),
        cmocka_unit_test(refused),
        cmocka_unit_test(set_runtime),
        cmocka_unit_test(vendor_nvidia),
        cmocka_unit_test(vendor_amd),
        cmocka_unit_test(vendor_intel),
        cmocka_unit_test(vendor_cdi_names),
        cmocka_unit_test(vendor_localize),
        cmocka_unit_test(vendor_hostile),
        cmocka_unit_test(vendor_jobs),
        cmocka_unit_test(ports_parse),
        cmocka_unit_test(ports_list),
        cmocka_unit_test(ports_owners),
        cmocka_unit_test(ports_server_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
