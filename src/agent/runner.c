/*
 * runner.c - workload processes on a node (see runner.h).
 */
#define _GNU_SOURCE
#include "runner.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "../core/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOG_TAIL (16 * 1024)       /* most output of a running workload sent per heartbeat */
#define LOG_FINAL (64 * 1024)      /* ... of an exited one: all the server keeps */
#define LOG_BUDGET (384 * 1024)    /* most output in one report, well under the body limit */

typedef struct wl {
    char node[64], job[40];
    char placement[40];   /* the binding this run belongs to: a new placement is a new run */
    long long log_sent;   /* bytes of output the server has */
    long long log_pending;/* ... once it acknowledges the last report */
    pid_t pid;
    int child;            /* ours (waitpid works) or adopted after a restart */
    unsigned long long proc_start; /* /proc/<pid>/stat field 22, to tell pid reuse apart */
    int64_t deadline_us;  /* 0: no time limit */
    int64_t kill_at_us;   /* when stopping: SIGKILL after this */
    int stopping, timed_out;
    int done, exit_code;
    int reported;         /* its exit went out in the last report: forget it once acknowledged */
    char reason[64];
    char log[640];
    char cg[640];         /* its cgroup v2 folder, "" when the runner has no cgroup root */
    char ctr[128];        /* its container's name, "" for a plain process */
} wl;

struct runner {
    char dir[400];
    char cgroot[400];     /* delegated cgroup v2 folder; "" for none */
    char runtime[400];    /* container runtime (absolute path); "" for none */
    int grace_s;
    wl *w;
    int n;
};

/*
 * Read /proc/<pid>/stat: OUT *state (field 3: 'R', 'S', 'Z'...) and *start
 * (field 22, the start time, to tell pid reuse apart).  0, or -1 if there is
 * no such process.
 */
static int proc_stat(pid_t pid, char *state, unsigned long long *start) {
    char path[64], buf[1024];
    if (pid <= 0) return -1;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p || p[1] != ' ' || !p[2]) return -1;
    *state = p[2];
    *start = 0;
    for (int field = 2; *p; p++)
        if (*p == ' ' && ++field == 22) {
            *start = strtoull(p + 1, NULL, 10);
            break;
        }
    return 0;
}

/* 1 if the process we started at `start` still runs (not a zombie waiting to be reaped). */
static int proc_running(pid_t pid, unsigned long long start) {
    char state;
    unsigned long long st;
    return proc_stat(pid, &state, &st) == 0 && state != 'Z' && state != 'X' && st == start;
}

int runner_job_of_pid(runner *r, const char *node, pid_t pid, char job[40]) {
    if (pid <= 0) return 0;
    pid_t sid = getsid(pid);
    for (int k = 0; k < r->n; k++) {
        wl *w = &r->w[k];
        if (w->done || strcmp(w->node, node) || w->pid <= 0) continue;
        if (w->pid == pid || (sid > 0 && w->pid == sid)) {
            snprintf(job, 40, "%s", w->job);
            return 1;
        }
    }
    return 0;
}

pid_t runner_pid_of_job(runner *r, const char *node, const char *job) {
    for (int k = 0; k < r->n; k++) {
        wl *w = &r->w[k];
        if (!w->done && !strcmp(w->node, node) && !strcmp(w->job, job) && w->pid > 0)
            return w->pid;
    }
    return 0;
}

static void save(runner *r) {
    char path[512], tmp[520];
    json_t *arr = json_array();
    for (int i = 0; i < r->n; i++) {
        wl *w = &r->w[i];
        if (w->done) continue;
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:i,s:I,s:I,s:s,s:I,s:s,s:s}", "node",
                                             w->node, "job", w->job, "placement", w->placement,
                                             "pid", (int)w->pid, "start",
                                             (json_int_t)w->proc_start, "deadline",
                                             (json_int_t)w->deadline_us, "log", w->log, "log_sent",
                                             (json_int_t)w->log_sent, "cgroup", w->cg,
                                             "container", w->ctr));
    }
    snprintf(path, sizeof path, "%s/workloads.json", r->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(arr, tmp, JSON_COMPACT) == 0) rename(tmp, path);
    json_decref(arr);
}

static wl *add(runner *r) {
    wl *nw = realloc(r->w, sizeof *nw * (size_t)(r->n + 1));
    if (!nw) return NULL;
    r->w = nw;
    memset(&nw[r->n], 0, sizeof *nw);
    return &nw[r->n++];
}

/* Write `text` to cgroup file dir/name: 0 or -1. */
static int cg_write(const char *dir, const char *name, const char *text) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    return (close(fd) == 0 && ok) ? 0 : -1;
}

/* 1 if the cgroup's memory.events counts an OOM kill. */
static int cg_oom_killed(const char *dir) {
    char path[700], line[128];
    snprintf(path, sizeof path, "%s/memory.events", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long long n = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "oom_kill %lld", &n) == 1) break;
    fclose(f);
    return n > 0;
}

/* The workload ended: say if its memory limit killed it, and remove its cgroup. */
static void cg_finish(wl *w) {
    if (!w->cg[0]) return;
    if (cg_oom_killed(w->cg))
        snprintf(w->reason, sizeof w->reason, "out of memory (its memory limit)");
    if (rmdir(w->cg) != 0 && errno != ENOENT)
        log_kv(LOG_WARN, "cannot remove the workload's cgroup", "cgroup", w->cg, "detail",
               strerror(errno), (char *)NULL);
    w->cg[0] = '\0';
}

runner *runner_new(const char *state_dir, int grace_s) {
    runner *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->dir, sizeof r->dir, "%s", state_dir);
    r->grace_s = grace_s > 0 ? grace_s : 10;
    /* re-adopt what the previous agent started */
    char path[512];
    snprintf(path, sizeof path, "%s/workloads.json", state_dir);
    json_t *arr = json_load_file(path, 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        wl *w = add(r);
        if (!w) break;
        snprintf(w->node, sizeof w->node, "%s", json_string_value(json_object_get(e, "node")));
        snprintf(w->job, sizeof w->job, "%s", json_string_value(json_object_get(e, "job")));
        snprintf(w->log, sizeof w->log, "%s", json_string_value(json_object_get(e, "log")));
        w->pid = (pid_t)json_integer_value(json_object_get(e, "pid"));
        w->proc_start = (unsigned long long)json_integer_value(json_object_get(e, "start"));
        w->deadline_us = json_integer_value(json_object_get(e, "deadline"));
        snprintf(w->placement, sizeof w->placement, "%s",
                 json_string_value(json_object_get(e, "placement")) ? json_string_value(json_object_get(e, "placement")) : "");
        w->log_sent = w->log_pending = json_integer_value(json_object_get(e, "log_sent"));
        snprintf(w->cg, sizeof w->cg, "%s",
                 json_string_value(json_object_get(e, "cgroup")) ? json_string_value(json_object_get(e, "cgroup")) : "");
        snprintf(w->ctr, sizeof w->ctr, "%s",
                 json_string_value(json_object_get(e, "container")) ? json_string_value(json_object_get(e, "container")) : "");
        if (proc_running(w->pid, w->proc_start)) {
            log_kv(LOG_INFO, "workload re-adopted", "node", w->node, "job", w->job, (char *)NULL);
        } else {
            w->done = 1;
            w->exit_code = 255;
            snprintf(w->reason, sizeof w->reason, "lost while the agent was down");
            cg_finish(w);
        }
    }
    json_decref(arr);
    return r;
}

int runner_set_cgroup(runner *r, const char *dir) {
    struct stat st;
    if (!dir || !*dir) {
        r->cgroot[0] = '\0';
        return 0;
    }
    if (strlen(dir) >= sizeof r->cgroot - 120 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
        access(dir, W_OK) != 0)
        return -1;
    /* a real cgroup folder must hand the cpu and memory controllers to its children */
    char path[520], line[512] = "";
    snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
    if (access(path, F_OK) == 0) {
        snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir);
        FILE *f = fopen(path, "r");
        if (!f || !fgets(line, sizeof line, f)) line[0] = '\0';
        if (f) fclose(f);
        int cpu = 0, mem = 0;
        for (char *save = NULL, *t = strtok_r(line, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
            cpu |= !strcmp(t, "cpu");
            mem |= !strcmp(t, "memory");
        }
        if (!cpu || !mem) return -2;
    }
    snprintf(r->cgroot, sizeof r->cgroot, "%s", dir);
    return 0;
}

/* ---- containers ---- */

int runner_set_runtime(runner *r, const char *runtime) {
    struct stat st;
    char path[sizeof r->runtime];
    r->runtime[0] = '\0';
    if (!runtime || !*runtime) return 0;
    if (strlen(runtime) >= sizeof path) return -1;
    if (strchr(runtime, '/')) {
        if (!realpath(runtime, path)) return -1;
    } else {
        /* a name: the first executable of that name on the agent's PATH, now */
        const char *dirs = getenv("PATH");
        char list[4096];
        snprintf(list, sizeof list, "%s", dirs && *dirs ? dirs : "/usr/local/bin:/usr/bin:/bin");
        path[0] = '\0';
        for (char *save = NULL, *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            char cand[sizeof path];
            int len = snprintf(cand, sizeof cand, "%s/%s", d, runtime);
            if (len < 0 || len >= (int)sizeof cand) continue;
            if (d[0] == '/' && stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
                memcpy(path, cand, (size_t)len + 1);
                break;
            }
        }
        if (!path[0]) return -1;
    }
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK) != 0) return -1;
    snprintf(r->runtime, sizeof r->runtime, "%s", path);
    return 0;
}

void runner_argv_free(char **argv) {
    if (!argv) return;
    for (char **p = argv; *p; p++) free(*p);
    free(argv);
}

/* Append a copy of `s` to the NULL-terminated list *v of *n strings; -1 when out of memory. */
static int argv_add(char ***v, size_t *n, const char *s) {
    char **nv = realloc(*v, sizeof *nv * (*n + 2));
    if (!nv) return -1;
    *v = nv;
    nv[*n] = strdup(s ? s : "");
    nv[*n + 1] = NULL;
    return nv[(*n)++] ? 0 : -1;
}

char **runner_container_argv(const char *runtime, json_t *a, const char *work, char *const env[]) {
    const char *image = json_string_value(json_object_get(a, "image"));
    const char *job = json_string_value(json_object_get(a, "job"));
    const char *pl = json_string_value(json_object_get(a, "placement"));
    if (!image || !*image || image[0] == '-' || !job || !runtime || !work) return NULL;
    char **v = NULL;
    size_t n = 0, i, k;
    json_t *d, *c;
    int bad = argv_add(&v, &n, runtime) || argv_add(&v, &n, "run") || argv_add(&v, &n, "--rm") ||
              argv_add(&v, &n, "--name");
    strbuf b = SB_INIT;
    sb_addf(&b, "gpupool-%s%s%s", job, pl && *pl ? "-" : "", pl ? pl : "");
    bad = bad || !sb_ok(&b) || argv_add(&v, &n, b.buf);
    /* its devices by CDI name, each once (shared slices of one card name it twice) */
    json_t *devs = json_object_get(a, "devices");
    json_array_foreach(devs, i, d) {
        const char *dev = json_string_value(d);
        int seen = !dev || !*dev;
        for (k = 0; k < i && !seen; k++)
            seen = json_equal(json_array_get(devs, k), d);
        if (seen) continue;
        sb_reset(&b);
        sb_addf(&b, "nvidia.com/gpu=%s", dev);
        bad = bad || !sb_ok(&b) || argv_add(&v, &n, "--device") || argv_add(&v, &n, b.buf);
    }
    /* the job's variables, and nothing of the node's */
    for (k = 0; env && env[k]; k++) {
        if (!strncmp(env[k], "PATH=", 5) || !strncmp(env[k], "HOME=", 5)) continue;
        bad = bad || argv_add(&v, &n, "-e") || argv_add(&v, &n, env[k]);
    }
    long long cpus = json_integer_value(json_object_get(a, "cpus"));
    long long gib = json_integer_value(json_object_get(a, "memory_gib"));
    if (cpus > 0) {
        sb_reset(&b);
        sb_addf(&b, "%lld", cpus);
        bad = bad || !sb_ok(&b) || argv_add(&v, &n, "--cpus") || argv_add(&v, &n, b.buf);
    }
    if (gib > 0) {
        sb_reset(&b);
        sb_addf(&b, "%lldg", gib);
        bad = bad || !sb_ok(&b) || argv_add(&v, &n, "--memory") || argv_add(&v, &n, b.buf);
    }
    sb_reset(&b);
    sb_addf(&b, "%s:/work", work);
    bad = bad || !sb_ok(&b) || argv_add(&v, &n, "--workdir") || argv_add(&v, &n, "/work") ||
          argv_add(&v, &n, "-v") || argv_add(&v, &n, b.buf) || argv_add(&v, &n, image);
    json_array_foreach(json_object_get(a, "command"), i, c) {
        bad = bad || argv_add(&v, &n, json_string_value(c));
    }
    sb_release(&b);
    if (bad) {
        runner_argv_free(v);
        return NULL;
    }
    return v;
}

/*
 * The container runtime's own environment: what locates its service, storage
 * and configuration, taken from the agent's; nothing else of the agent's (its
 * tokens) reaches it.  NULL-terminated, on the heap (runner_argv_free).
 */
static char **runtime_env(void) {
    static const char *const keep[] = {
        "PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
        "XDG_DATA_HOME", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "DOCKER_CONFIG",
        "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "CONTAINER_HOST",
        "CONTAINER_CONNECTION", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF",
        "CONTAINERS_REGISTRIES_CONF", "REGISTRY_AUTH_FILE", NULL};
    char **v = NULL;
    size_t n = 0;
    strbuf b = SB_INIT;
    for (int i = 0; keep[i]; i++) {
        const char *val = getenv(keep[i]);
        if (!val && !strcmp(keep[i], "PATH")) val = "/usr/local/bin:/usr/bin:/bin";
        if (!val) continue;
        sb_reset(&b);
        sb_addf(&b, "%s=%s", keep[i], val);
        if (!sb_ok(&b) || argv_add(&v, &n, b.buf)) break;
    }
    sb_release(&b);
    if (!v) argv_add(&v, &n, "PATH=/usr/local/bin:/usr/bin:/bin");
    return v;
}

/*
 * Kill a workload's container through its runtime (`RUNTIME kill NAME`, which
 * sends SIGKILL): killing the runtime's client alone may leave the container
 * running.  The command runs detached (double fork), output discarded.
 */
static void ctr_kill(runner *r, const wl *w) {
    if (!w->ctr[0] || !r->runtime[0]) return;
    char **env = runtime_env();
    char *argv[] = {r->runtime, "kill", (char *)w->ctr, NULL};
    pid_t p = fork();
    if (p == 0) {
        if (fork() == 0) {
            setsid();
            int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0) _exit(126);
            execve(argv[0], argv, env ? env : (char *[]){NULL});
            _exit(127);
        }
        _exit(0);
    }
    if (p > 0) waitpid(p, NULL, 0);
    runner_argv_free(env);
    log_kv(LOG_INFO, "killing the workload's container", "job", w->job, "container", w->ctr,
           (char *)NULL);
}

void runner_free(runner *r) {
    if (!r) return;
    save(r);
    free(r->w);
    free(r);
}

static void stop(runner *r, wl *w, const char *why) {
    if (w->stopping || w->done) return;
    w->stopping = 1;
    w->kill_at_us = gt_now_us() + (int64_t)r->grace_s * 1000000;
    kill(-w->pid, SIGTERM);
    log_kv(LOG_INFO, "stopping workload", "job", w->job, "why", why, (char *)NULL);
}

void runner_tick(runner *r) {
    int64_t now = gt_now_us();
    int changed = 0;
    for (int i = 0; i < r->n; i++) {
        wl *w = &r->w[i];
        if (w->done) continue;
        if (w->child) {
            int st;
            pid_t p = waitpid(w->pid, &st, WNOHANG);
            if (p == w->pid) {
                w->done = 1;
                changed = 1;
                if (WIFEXITED(st)) w->exit_code = WEXITSTATUS(st);
                else {
                    w->exit_code = 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
                    if (!w->reason[0])
                        snprintf(w->reason, sizeof w->reason, "killed by signal %d",
                                 WIFSIGNALED(st) ? WTERMSIG(st) : 0);
                }
                cg_finish(w);
                if (w->timed_out) snprintf(w->reason, sizeof w->reason, "time_limit");
                continue;
            }
        } else if (!proc_running(w->pid, w->proc_start)) {
            w->done = 1;
            changed = 1;
            w->exit_code = 255;
            snprintf(w->reason, sizeof w->reason,
                     w->timed_out ? "time_limit" : "exit status unknown (adopted after a restart)");
            cg_finish(w);
            continue;
        }
        if (w->deadline_us && now >= w->deadline_us && !w->stopping) {
            w->timed_out = 1;
            stop(r, w, "time limit");
        }
        if (w->stopping && now >= w->kill_at_us) {
            ctr_kill(r, w);
            kill(-w->pid, SIGKILL);
            w->kill_at_us = now + 3600LL * 1000000; /* once */
        }
    }
    if (changed) save(r);
}

/* Replace bytes that are not valid UTF-8 with '?', in place (n bytes). */
static void utf8_clean(char *b, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)b[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        int ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
        for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)b[i + k] & 0xC0) == 0x80;
        if (!ok || c == 0) {
            b[i++] = '?';
            continue;
        }
        i += len;
    }
}

/*
 * The output written since `from` (at most `cap` bytes: the newest), as
 * valid UTF-8.  A multibyte character cut at the end is left for next time
 * unless `final`.  OUT: *upto, the file offset the returned text ends at.
 * The server keeps the last LOG_FINAL bytes, so skipping older output than
 * that loses nothing it would have kept.
 */
static char *new_output(const char *path, long long from, long long cap, int final, long long *upto) {
    *upto = from;
    if (cap <= 0) return strdup("");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return strdup("");
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end - from > cap ? end - cap : from;
    if (start > end) start = end;
    size_t want = (size_t)(end - start);
    char *buf = malloc(want + 1);
    ssize_t n = buf && lseek(fd, start, SEEK_SET) >= 0 ? read(fd, buf, want) : -1;
    close(fd);
    if (!buf || n < 0) {
        free(buf);
        return strdup("");
    }
    size_t len = (size_t)n;
    if (!final) {
        /* hold back an incomplete character at the end */
        size_t k = len, back = 0;
        while (k > 0 && back < 4 && ((unsigned char)buf[k - 1] & 0xC0) == 0x80) k--, back++;
        if (k > 0 && back < 4) {
            unsigned char c = (unsigned char)buf[k - 1];
            size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
            if (need > back + 1) len = k - 1;
        }
    }
    buf[len] = '\0';
    utf8_clean(buf, len);
    *upto = start + (long long)len;
    return buf;
}

json_t *runner_report(runner *r, const char *node) {
    json_t *arr = json_array();
    long long budget = LOG_BUDGET;
    for (int i = 0; i < r->n; i++) {
        wl *w = &r->w[i];
        if (strcmp(w->node, node) != 0) continue;
        long long upto, cap = w->done ? LOG_FINAL : LOG_TAIL;
        w->reported = 0;
        if (cap > budget) {
            if (w->done) continue; /* its exit waits for a report with room for its output */
            cap = budget;
        }
        char *out = new_output(w->log, w->log_sent, cap, w->done, &upto);
        w->log_pending = upto;
        budget -= upto - w->log_sent;
        json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "job", w->job, "placement", w->placement,
                              "state", w->done ? "exited" : "running", "log", out ? out : "");
        free(out);
        if (!o) continue; /* cannot happen with cleaned text; never drop an exit silently */
        if (w->done) {
            w->reported = 1;
            json_object_set_new(o, "exit_code", json_integer(w->exit_code));
            json_object_set_new(o, "reason", json_string(w->reason));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

void runner_ack(runner *r, const char *node) {
    int m = 0, changed = 0;
    for (int i = 0; i < r->n; i++) {
        if (!strcmp(r->w[i].node, node) && r->w[i].log_sent != r->w[i].log_pending) {
            r->w[i].log_sent = r->w[i].log_pending;
            changed = 1;
        }
        if (r->w[i].done && r->w[i].reported && !strcmp(r->w[i].node, node)) {
            changed = 1;
            continue;
        }
        r->w[m++] = r->w[i];
    }
    r->n = m;
    if (changed) save(r);
}

static int mkdir_p(const char *path) {
    char buf[600];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(buf, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

/* Start one assignment. */
static void launch(runner *r, const char *node, json_t *a) {
    json_t *cmd = json_object_get(a, "command");
    const char *job = json_string_value(json_object_get(a, "job"));
    const char *image = json_string_value(json_object_get(a, "image"));
    if (image && !*image) image = NULL;
    /* neither a command nor an image: the job just holds its GPUs */
    if (!job || (!json_array_size(cmd) && !image)) return;
    char work[560];
    snprintf(work, sizeof work, "%s/work/%.40s", r->dir, job);
    if (mkdir_p(work) != 0) {
        log_kv(LOG_ERROR, "cannot create the job's folder", "job", job, (char *)NULL);
        return;
    }
    wl *w = add(r);
    if (!w) return;
    snprintf(w->node, sizeof w->node, "%s", node);
    snprintf(w->job, sizeof w->job, "%s", job);
    snprintf(w->placement, sizeof w->placement, "%s",
             json_string_value(json_object_get(a, "placement")) ? json_string_value(json_object_get(a, "placement")) : "");
    snprintf(w->log, sizeof w->log, "%s/output.log", work);
    if (image && !r->runtime[0]) {
        log_kv(LOG_ERROR, "the job has an image and this node no container runtime", "job", job,
               "image", image, (char *)NULL);
        snprintf(w->reason, sizeof w->reason,
                 "this node has no container runtime (gpupool agent --runtime)");
        w->done = 1;
        w->exit_code = 126;
        return;
    }
    if (r->cgroot[0]) {
        /* its own cgroup: CPU bandwidth and memory as its resource class says */
        long long cpus = json_integer_value(json_object_get(a, "cpus"));
        long long gib = json_integer_value(json_object_get(a, "memory_gib"));
        char cpu_max[64], mem_max[64];
        snprintf(w->cg, sizeof w->cg, "%s/gpupool-%.40s-%.40s", r->cgroot, job, w->placement);
        if (cpus > 0) snprintf(cpu_max, sizeof cpu_max, "%lld 100000", cpus * 100000);
        else snprintf(cpu_max, sizeof cpu_max, "max 100000");
        if (gib > 0) snprintf(mem_max, sizeof mem_max, "%lld", gib * 1024 * 1024 * 1024);
        else snprintf(mem_max, sizeof mem_max, "max");
        if ((mkdir(w->cg, 0700) != 0 && errno != EEXIST) || cg_write(w->cg, "cpu.max", cpu_max) ||
            cg_write(w->cg, "memory.max", mem_max)) {
            int e = errno;
            log_kv(LOG_ERROR, "cannot set up the workload's cgroup", "job", job, "cgroup", w->cg,
                   "detail", strerror(e), (char *)NULL);
            snprintf(w->reason, sizeof w->reason, "cannot set up its cgroup: %.36s", strerror(e));
            rmdir(w->cg);
            w->cg[0] = '\0';
            w->done = 1;
            w->exit_code = 126;
            return;
        }
    }
    /* the environment says who the job is, which devices are its, and nothing else */
    strbuf devs = SB_INIT;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(a, "devices"), i, d) {
        if (devs.len) sb_addc(&devs, ',');
        sb_adds(&devs, json_string_value(d));
    }
    char *env[16];
    int ne = 0;
    strbuf e[16];
    for (int k = 0; k < 16; k++) sb_init(&e[k]);
    sb_addf(&e[ne], "PATH=/usr/local/bin:/usr/bin:/bin");
    env[ne] = e[ne].buf, ne++;
    sb_addf(&e[ne], "HOME=%s", work);
    env[ne] = e[ne].buf, ne++;
    sb_addf(&e[ne], "GPUPOOL_JOB_ID=%s", job);
    env[ne] = e[ne].buf, ne++;
    sb_addf(&e[ne], "GPUPOOL_TENANT=%s", json_string_value(json_object_get(a, "tenant")));
    env[ne] = e[ne].buf, ne++;
    sb_addf(&e[ne], "GPUPOOL_PROJECT=%s", json_string_value(json_object_get(a, "project")));
    env[ne] = e[ne].buf, ne++;
    sb_addf(&e[ne], "CUDA_VISIBLE_DEVICES=%s", devs.buf);
    env[ne] = e[ne].buf, ne++;
    sb_addf(&e[ne], "NVIDIA_VISIBLE_DEVICES=%s", devs.buf);
    env[ne] = e[ne].buf, ne++;
    json_t *sh = json_object_get(a, "shared");
    if (sh) {
        sb_addf(&e[ne], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%lld",
                (long long)json_integer_value(json_object_get(sh, "percent")));
        env[ne] = e[ne].buf, ne++;
        sb_addf(&e[ne], "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s=%lldG", devs.buf,
                (long long)json_integer_value(json_object_get(sh, "memory_gib")));
        env[ne] = e[ne].buf, ne++;
    }
    env[ne] = NULL;
    char **argv = NULL, **renv = NULL;
    if (image) {
        /* the runtime's `run` is the workload's process; the bind mount wants an absolute path */
        char abs[PATH_MAX];
        argv = runner_container_argv(r->runtime, a, realpath(work, abs) ? abs : work, env);
        renv = runtime_env();
        if (argv) snprintf(w->ctr, sizeof w->ctr, "%s", argv[4]); /* after run --rm --name */
    } else {
        size_t argc = json_array_size(cmd);
        argv = calloc(argc + 1, sizeof *argv);
        json_t *v;
        if (argv) json_array_foreach(cmd, i, v) argv[i] = (char *)json_string_value(v);
    }
    if (!argv) {
        log_kv(LOG_ERROR, "cannot start the workload", "job", job, "detail",
               image ? "invalid image reference, or out of memory" : "out of memory", (char *)NULL);
        snprintf(w->reason, sizeof w->reason, image ? "invalid image reference" : "out of memory");
        runner_argv_free(renv);
        for (int k = 0; k < 16; k++) sb_release(&e[k]);
        sb_release(&devs);
        if (w->cg[0]) rmdir(w->cg);
        w->cg[0] = '\0';
        w->done = 1;
        w->exit_code = 126;
        return;
    }
    int64_t tl = json_integer_value(json_object_get(a, "time_limit_s"));
    pid_t pid = fork();
    if (pid == 0) {
        /* the child: its own session (so the whole group can be stopped), its output captured */
        setsid();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int out = open(w->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (out < 0 || in < 0 || chdir(work) != 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
            dup2(out, 2) < 0)
            _exit(126);
        if (w->cg[0]) {
            char me[24];
            snprintf(me, sizeof me, "%d\n", (int)getpid());
            if (cg_write(w->cg, "cgroup.procs", me) != 0) {
                dprintf(2, "gpupool: cannot enter cgroup %s: %s\n", w->cg, strerror(errno));
                _exit(126);
            }
        }
        if (image) execve(argv[0], argv, renv);
        else execvpe(argv[0], argv, env);
        dprintf(2, "gpupool: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (image) runner_argv_free(argv);
    else free(argv);
    runner_argv_free(renv);
    for (int k = 0; k < 16; k++) sb_release(&e[k]);
    sb_release(&devs);
    if (pid < 0) {
        log_kv(LOG_ERROR, "cannot start the workload", "job", job, "detail", strerror(errno),
               (char *)NULL);
        if (w->cg[0]) rmdir(w->cg);
        r->n--;
        return;
    }
    w->pid = pid;
    w->child = 1;
    char state;
    if (proc_stat(pid, &state, &w->proc_start) != 0) w->proc_start = 0;
    w->deadline_us = tl > 0 ? gt_now_us() + tl * 1000000 : 0;
    save(r);
    char pids[16];
    snprintf(pids, sizeof pids, "%d", (int)pid);
    log_kv(LOG_INFO, "workload started", "node", node, "job", job, "pid", pids,
           w->ctr[0] ? "container" : NULL, w->ctr, (char *)NULL);
}

static int same_run(const wl *w, json_t *a) {
    const char *pl = json_string_value(json_object_get(a, "placement"));
    return !strcmp(w->job, json_string_value(json_object_get(a, "job"))) &&
           !strcmp(w->placement, pl ? pl : "");
}

void runner_apply(runner *r, const char *node, json_t *assignments) {
    size_t i;
    json_t *a;
    /* stop what is no longer ours to run (a job placed anew is a new run: the old one stops) */
    for (int k = 0; k < r->n; k++) {
        wl *w = &r->w[k];
        if (strcmp(w->node, node) || w->done) continue;
        int wanted = 0;
        json_array_foreach(assignments, i, a) if (same_run(w, a)) wanted = 1;
        if (!wanted) stop(r, w, "no longer assigned (cancelled, preempted or moved)");
    }
    /* start what is new */
    json_array_foreach(assignments, i, a) {
        int known = 0;
        for (int k = 0; k < r->n; k++)
            if (!strcmp(r->w[k].node, node) && same_run(&r->w[k], a)) known = 1;
        if (!known) launch(r, node, a);
    }
}
