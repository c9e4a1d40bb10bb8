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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOG_TAIL (16 * 1024)

typedef struct wl {
    char node[64], job[40];
    pid_t pid;
    int child;            /* ours (waitpid works) or adopted after a restart */
    unsigned long long proc_start; /* /proc/<pid>/stat field 22, to tell pid reuse apart */
    int64_t deadline_us;  /* 0: no time limit */
    int64_t kill_at_us;   /* when stopping: SIGKILL after this */
    int stopping, timed_out;
    int done, exit_code;
    char reason[64];
    char log[640];
} wl;

struct runner {
    char dir[400];
    int grace_s;
    wl *w;
    int n;
};

static unsigned long long proc_start(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long v = 0;
    for (int field = 2; p && *p; p++)
        if (*p == ' ' && ++field == 22) {
            v = strtoull(p + 1, NULL, 10);
            break;
        }
    return v;
}

static void save(runner *r) {
    char path[512], tmp[520];
    json_t *arr = json_array();
    for (int i = 0; i < r->n; i++) {
        wl *w = &r->w[i];
        if (w->done) continue;
        json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:I,s:I,s:s}", "node", w->node, "job",
                                             w->job, "pid", (int)w->pid, "start",
                                             (json_int_t)w->proc_start, "deadline",
                                             (json_int_t)w->deadline_us, "log", w->log));
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
        if (w->pid > 0 && kill(w->pid, 0) == 0 && proc_start(w->pid) == w->proc_start) {
            log_kv(LOG_INFO, "workload re-adopted", "node", w->node, "job", w->job, (char *)NULL);
        } else {
            w->done = 1;
            w->exit_code = 255;
            snprintf(w->reason, sizeof w->reason, "lost while the agent was down");
        }
    }
    json_decref(arr);
    return r;
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
                if (w->timed_out) snprintf(w->reason, sizeof w->reason, "time_limit");
                continue;
            }
        } else if (kill(w->pid, 0) != 0 || proc_start(w->pid) != w->proc_start) {
            w->done = 1;
            changed = 1;
            w->exit_code = 255;
            snprintf(w->reason, sizeof w->reason,
                     w->timed_out ? "time_limit" : "exit status unknown (adopted after a restart)");
            continue;
        }
        if (w->deadline_us && now >= w->deadline_us && !w->stopping) {
            w->timed_out = 1;
            stop(r, w, "time limit");
        }
        if (w->stopping && now >= w->kill_at_us) {
            kill(-w->pid, SIGKILL);
            w->kill_at_us = now + 3600LL * 1000000; /* once */
        }
    }
    if (changed) save(r);
}

static char *tail(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return strdup("");
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > LOG_TAIL ? end - LOG_TAIL : 0;
    char *buf = malloc(LOG_TAIL + 1);
    ssize_t n = buf && lseek(fd, from, SEEK_SET) >= 0 ? read(fd, buf, LOG_TAIL) : -1;
    close(fd);
    if (!buf) return strdup("");
    buf[n > 0 ? n : 0] = '\0';
    /* no invalid UTF-8 across the cut, no NUL inside */
    for (ssize_t i = 0; i < n; i++)
        if (!buf[i]) buf[i] = ' ';
    char *p = buf;
    while (*p && ((unsigned char)*p & 0xC0) == 0x80) p++;
    char *out = strdup(p);
    free(buf);
    return out;
}

json_t *runner_report(runner *r, const char *node) {
    json_t *arr = json_array();
    for (int i = 0; i < r->n; i++) {
        wl *w = &r->w[i];
        if (strcmp(w->node, node) != 0) continue;
        char *log = tail(w->log);
        json_t *o = json_pack("{s:s,s:s,s:s}", "job", w->job, "state", w->done ? "exited" : "running",
                              "log", log);
        free(log);
        if (!json_is_string(json_object_get(o, "log"))) json_object_set_new(o, "log", json_string(""));
        if (w->done) {
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
        if (r->w[i].done && !strcmp(r->w[i].node, node)) {
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
    if (!job || !json_array_size(cmd)) return; /* no command: the job just holds its GPUs */
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
    snprintf(w->log, sizeof w->log, "%s/output.log", work);
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
    size_t argc = json_array_size(cmd);
    char **argv = calloc(argc + 1, sizeof *argv);
    json_t *v;
    json_array_foreach(cmd, i, v) argv[i] = (char *)json_string_value(v);
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
        execvpe(argv[0], argv, env);
        dprintf(2, "gpupool: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(argv);
    for (int k = 0; k < 16; k++) sb_release(&e[k]);
    sb_release(&devs);
    if (pid < 0) {
        log_kv(LOG_ERROR, "cannot start the workload", "job", job, "detail", strerror(errno),
               (char *)NULL);
        r->n--;
        return;
    }
    w->pid = pid;
    w->child = 1;
    w->proc_start = proc_start(pid);
    w->deadline_us = tl > 0 ? gt_now_us() + tl * 1000000 : 0;
    save(r);
    char pids[16];
    snprintf(pids, sizeof pids, "%d", (int)pid);
    log_kv(LOG_INFO, "workload started", "node", node, "job", job, "pid", pids, (char *)NULL);
}

void runner_apply(runner *r, const char *node, json_t *assignments) {
    size_t i;
    json_t *a;
    /* stop what is no longer ours to run */
    for (int k = 0; k < r->n; k++) {
        wl *w = &r->w[k];
        if (strcmp(w->node, node) || w->done) continue;
        int wanted = 0;
        json_array_foreach(assignments, i, a) if (!strcmp(json_string_value(json_object_get(a, "job")), w->job)) wanted = 1;
        if (!wanted) stop(r, w, "no longer assigned (cancelled, preempted or moved)");
    }
    /* start what is new */
    json_array_foreach(assignments, i, a) {
        const char *job = json_string_value(json_object_get(a, "job"));
        int known = 0;
        for (int k = 0; k < r->n; k++)
            if (!strcmp(r->w[k].node, node) && !strcmp(r->w[k].job, job)) known = 1;
        if (!known) launch(r, node, a);
    }
}
