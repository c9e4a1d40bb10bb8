/*
 * runner.c - workload processes on a node (see runner.h).
 */
#define _GNU_SOURCE
#include "runner.h"
#include "ports.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "../core/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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
    long long uid;        /* the identity it runs as; -1: the agent's own */
    unsigned long long log_dev, log_ino; /* the output file the runner made (0: unknown) */
    int rfd;              /* that file, open for reading (-1: reopen it by path) */
    int nports;           /* the TCP ports its processes listen on (ports.h) */
    int ports[PORTS_MAX];
    int master_port;      /* rank 0 of a job that spans nodes: the port its ranks meet on */
} wl;

struct runner {
    char dir[400];        /* the state folder, absolute */
    char cgroot[400];     /* delegated cgroup v2 folder; "" for none */
    char runtime[400];    /* container runtime (absolute path); "" for none */
    int grace_s;
    int ident;            /* 1: plain jobs run as uids of [uid_lo, uid_hi], gid gid (or = uid) */
    uid_t uid_lo, uid_hi;
    gid_t gid;            /* a fixed user's group; (gid_t)-1: each job's gid is its uid */
    int ns;               /* 1: jobs get a private mount namespace hiding the state folder */
    wl *w;
    int n;
    int64_t ports_at_us;  /* when the workloads' ports were last read from /proc */
};

#define PORTS_EVERY_US 1000000 /* ports are read again at most once a second */

/* Refresh every running workload's listening ports (one pass over /proc, at most once a second). */
static void refresh_ports(runner *r) {
    int64_t now = gt_now_us();
    if (r->ports_at_us && now - r->ports_at_us < PORTS_EVERY_US) return;
    r->ports_at_us = now;
    ports_owner *o = calloc((size_t)(r->n ? r->n : 1), sizeof *o);
    int *idx = calloc((size_t)(r->n ? r->n : 1), sizeof *idx), n = 0;
    if (!o || !idx) {
        free(o);
        free(idx);
        return;
    }
    for (int i = 0; i < r->n; i++) {
        r->w[i].nports = 0;
        if (r->w[i].done || r->w[i].pid <= 0) continue;
        o[n].sid = r->w[i].pid; /* a session leader */
        o[n].uid = r->w[i].uid;
        idx[n++] = i;
    }
    ports_of_owners("/proc", o, n);
    for (int k = 0; k < n; k++) {
        r->w[idx[k]].nports = o[k].n;
        memcpy(r->w[idx[k]].ports, o[k].port, sizeof o[k].port);
    }
    free(o);
    free(idx);
}

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
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:s,s:i,s:I,s:I,s:s,s:I,s:s,s:s,s:I,s:I,s:I,s:i}", "node",
                           w->node, "job", w->job, "placement", w->placement, "pid", (int)w->pid,
                           "start", (json_int_t)w->proc_start, "deadline",
                           (json_int_t)w->deadline_us, "log", w->log, "log_sent",
                           (json_int_t)w->log_sent, "cgroup", w->cg, "container", w->ctr, "uid",
                           (json_int_t)w->uid, "log_dev", (json_int_t)w->log_dev, "log_ino",
                           (json_int_t)w->log_ino, "master_port", w->master_port));
    }
    snprintf(path, sizeof path, "%s/workloads.json", r->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* the agent's alone (0600): it names every job's pid and output */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
        int ok = json_dumpfd(arr, fd, JSON_COMPACT) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) unlink(tmp);
    }
    json_decref(arr);
}

static wl *add(runner *r) {
    wl *nw = realloc(r->w, sizeof *nw * (size_t)(r->n + 1));
    if (!nw) return NULL;
    r->w = nw;
    memset(&nw[r->n], 0, sizeof *nw);
    nw[r->n].uid = -1;
    nw[r->n].rfd = -1;
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
    /* absolute: a job's HOME and the paths kept in workloads.json must not depend on a cwd */
    char abs[PATH_MAX];
    const char *dir = realpath(state_dir, abs) && strlen(abs) < sizeof r->dir ? abs : state_dir;
    memcpy(r->dir, dir, strnlen(dir, sizeof r->dir - 1));
    r->grace_s = grace_s > 0 ? grace_s : 10;
    r->gid = (gid_t)-1;
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
        json_t *u = json_object_get(e, "uid");
        w->uid = json_is_integer(u) ? (long long)json_integer_value(u) : -1;
        w->log_dev = (unsigned long long)json_integer_value(json_object_get(e, "log_dev"));
        w->log_ino = (unsigned long long)json_integer_value(json_object_get(e, "log_ino"));
        w->master_port = (int)json_integer_value(json_object_get(e, "master_port"));
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

/* ---- the jobs' own identity ---- */

/*
 * In a child: a private mount namespace in which the state folder `dir` is
 * an empty tmpfs, but for `work` (a folder under it) bound back at its own
 * path.  0, or -1 (errno set).  With work NULL, only checks that it can be
 * done (the probe).
 */
static int private_view(const char *dir, const char *work) {
    if (unshare(CLONE_NEWNS) != 0) return -1;
    /* nothing mounted here propagates back to the node */
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0) return -1;
    /* opened in this namespace: a bind source must be one of its mounts */
    int fd = work ? open(work, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : -1;
    if (work && fd < 0) return -1;
    if (mount("gpupool-state", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0711,size=64k,nr_inodes=64") != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        errno = e;
        return -1;
    }
    if (!work) return 0;
    /* the folders between the tmpfs and the job's folder, then the folder itself */
    char path[PATH_MAX];
    size_t dl = strlen(dir);
    snprintf(path, sizeof path, "%s", work);
    for (char *p = path + dl + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0711) != 0 && errno != EEXIST) goto fail;
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) goto fail;
    char src[64];
    snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
    if (mount(src, work, "none", MS_BIND, NULL) != 0) goto fail;
    close(fd);
    return 0;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* 1 if a child can make private_view() of `dir` (the kernel and our privileges allow it). */
static int probe_private_view(const char *dir) {
    pid_t p = fork();
    if (p == 0) _exit(private_view(dir, NULL) == 0 ? 0 : 1);
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int runner_set_identity(runner *r, const char *spec) {
    int root = geteuid() == 0;
    r->ident = 0;
    r->ns = 0;
    r->gid = (gid_t)-1;
    if ((!spec || !*spec) && root) spec = RUNNER_JOB_UIDS;
    if (spec && *spec) {
        if (!root) return -2;
        char *end;
        unsigned long long lo, hi;
        errno = 0;
        lo = strtoull(spec, &end, 10);
        if (end != spec && *end == '-' && spec[0] != '-') {
            const char *h = end + 1;
            hi = strtoull(h, &end, 10);
            if (end == h || *end || errno || lo == 0 || hi < lo || hi > 0x7fffffffULL ||
                hi - lo >= RUNNER_JOB_UIDS_MAX)
                return -1;
        } else if (end != spec && !*end && spec[0] != '-') {
            if (errno || lo == 0 || lo > 0x7fffffffULL) return -1;
            hi = lo;
        } else {
            /* a user's name: every job runs as that user, in its primary group */
            struct passwd pw, *res = NULL;
            char buf[4096];
            if (getpwnam_r(spec, &pw, buf, sizeof buf, &res) != 0 || !res || pw.pw_uid == 0 ||
                pw.pw_gid == 0)
                return -1;
            lo = hi = pw.pw_uid;
            r->gid = pw.pw_gid;
        }
        r->uid_lo = (uid_t)lo;
        r->uid_hi = (uid_t)hi;
        r->ident = 1;
        r->ns = probe_private_view(r->dir);
    }
    /* the state folder: the agent's alone; jobs that must find their folder by path (no
     * private namespace) may cross it, never list it */
    char work[sizeof r->dir + 8];
    snprintf(work, sizeof work, "%s/work", r->dir);
    mode_t m = r->ident && !r->ns ? 0711 : 0700;
    if (mkdir(work, m) != 0 && errno != EEXIST) return -3;
    if (chmod(r->dir, m) != 0 || chmod(work, m) != 0) return -3;
    return 0;
}

static void stop(runner *r, wl *w, const char *why);

int runner_chain_blocks(const runner_dir *chain, int n, uid_t uid, gid_t gid) {
    for (int i = 0; i < n; i++) {
        const runner_dir *d = &chain[i];
        mode_t bit = d->uid == uid ? S_IXUSR : d->gid == gid ? S_IXGRP : S_IXOTH;
        if (!(d->mode & bit)) return i;
    }
    return -1;
}

int runner_check_reach(runner *r, char *why, size_t len) {
    if (!r->ident) return 0;
    /* every folder from "/" down to the state folder's parent (r->dir is absolute; the state
     * folder's own mode is runner_set_identity's) */
    char path[sizeof r->dir];
    runner_dir chain[64];
    char names[64][sizeof r->dir];
    int n = 0;
    snprintf(path, sizeof path, "%s", r->dir);
    char *slash = strrchr(path, '/');
    if (!slash) return 0;
    for (char *p = path;; p++) {
        if (*p != '/' && *p) continue;
        if (p > slash) break;
        char c = *p;
        *p = '\0';
        snprintf(names[n], sizeof names[n], "%s", p == path ? "/" : path);
        *p = c;
        struct stat st;
        if (stat(names[n], &st) != 0) {
            snprintf(why, len, "cannot read folder %s: %s", names[n], strerror(errno));
            return -1;
        }
        chain[n] = (runner_dir){names[n], st.st_uid, st.st_gid, st.st_mode};
        if (++n == 64 || !c) break;
    }
    /* a job's gid is its uid, or the fixed user's group */
    uid_t u = r->uid_lo;
    gid_t g = r->gid != (gid_t)-1 ? r->gid : (gid_t)u;
    int b = runner_chain_blocks(chain, n, u, g);
    if (b < 0 && r->uid_hi != r->uid_lo)
        b = runner_chain_blocks(chain, n, r->uid_hi, r->gid != (gid_t)-1 ? r->gid : r->uid_hi);
    if (b < 0) return 0;
    snprintf(why, len,
             "jobs run as uids %u-%u cannot cross folder %s (mode %04o) to reach their folders "
             "under %s: chmod o+x %s, or give --state-dir a folder they can reach",
             (unsigned)r->uid_lo, (unsigned)r->uid_hi, chain[b].path,
             (unsigned)(chain[b].mode & 07777), r->dir, chain[b].path);
    return -1;
}

int runner_stop_all(runner *r, const char *why) {
    int live = 0;
    for (int i = 0; i < r->n; i++)
        if (!r->w[i].done) {
            stop(r, &r->w[i], why);
            live++;
        }
    if (!live) return 0;
    int64_t until = gt_now_us() + ((int64_t)r->grace_s + 5) * 1000000;
    for (;;) {
        runner_tick(r); /* reaps exits, sends SIGKILL once a grace period is over */
        live = 0;
        for (int i = 0; i < r->n; i++) live += !r->w[i].done;
        if (!live || gt_now_us() >= until) break;
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (live) log_kv(LOG_WARN, "workloads still running after SIGKILL", "why", why, (char *)NULL);
    return live;
}

int runner_identity(runner *r, char *buf, size_t len) {
    if (!r->ident)
        snprintf(buf, len, "uid %d (the agent's own)", (int)geteuid());
    else if (r->uid_lo == r->uid_hi)
        snprintf(buf, len, "uid %u%s", (unsigned)r->uid_lo,
                 r->ns ? ", state folder hidden (private mount namespace)" : "");
    else
        snprintf(buf, len, "a uid of %u-%u of its own%s", (unsigned)r->uid_lo, (unsigned)r->uid_hi,
                 r->ns ? ", state folder hidden (private mount namespace)" : "");
    return r->ident;
}

/* FNV-1a of a job id: where its uid search starts, so a job placed again gets the same one. */
static unsigned long long fnv1a(const char *s) {
    unsigned long long h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* Note uid `u` as taken in the bitmap of the runner's uid range. */
static void mark_uid(const runner *r, unsigned char *busy, unsigned long long u) {
    if (u < r->uid_lo || u > r->uid_hi) return;
    u -= r->uid_lo;
    busy[u / 8] |= (unsigned char)(1u << (u % 8));
}

/*
 * Which tenant each uid of the range belongs to (the first whose job it ran),
 * from DIR/job-uids (lines "UID TENANT", 0600, appended): a uid that ran a
 * tenant's job may own files
 * it left in the node's shared folders (/tmp, /dev/shm), so it never runs
 * another tenant's job.  OUT: in `foreign`, the uids of other tenants than
 * `tenant`; in `mine`, those of `tenant`.  0, or -1 when the file cannot be
 * read (then no uid is safe to hand out).
 */
static int uid_owners(const runner *r, const char *tenant, unsigned char *foreign,
                      unsigned char *mine) {
    char path[sizeof r->dir + 16];
    snprintf(path, sizeof path, "%s/job-uids", r->dir);
    FILE *f = fopen(path, "re");
    if (!f) return errno == ENOENT ? 0 : -1;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *end;
        unsigned long long u = strtoull(line, &end, 10);
        if (end == line || *end != ' ') continue;
        char *t = end + 1;
        t[strcspn(t, "\n")] = '\0';
        mark_uid(r, strcmp(t, tenant) ? foreign : mine, u);
    }
    fclose(f);
    return 0;
}

/* Note that uid `u` now runs jobs of `tenant` (DIR/job-uids).  0, or -1. */
static int uid_claim(const runner *r, long long u, const char *tenant) {
    char path[sizeof r->dir + 16];
    snprintf(path, sizeof path, "%s/job-uids", r->dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    int ok = dprintf(fd, "%lld %s\n", u, tenant) > 0 && fsync(fd) == 0;
    close(fd);
    return ok ? 0 : -1;
}

/*
 * The uid job `job` of `tenant` runs as: a fixed user's, or one of the range
 * that no live workload of ours and no process of the host has (so two jobs
 * never share one while either runs), and that never ran another tenant's job
 * (one the tenant used before, else a fresh one, then kept for the tenant).
 * -1 when no such uid is free.
 */
static long long pick_uid(runner *r, const char *job, const char *tenant) {
    if (r->uid_lo == r->uid_hi) return (long long)r->uid_lo;
    unsigned long long span = (unsigned long long)r->uid_hi - r->uid_lo + 1;
    size_t bytes = (size_t)(span + 7) / 8;
    unsigned char *busy = calloc(bytes, 1), *mine = calloc(bytes, 1);
    if (!busy || !mine || uid_owners(r, tenant, busy, mine) != 0) {
        free(busy);
        free(mine);
        return -1;
    }
    for (int k = 0; k < r->n; k++)
        if (!r->w[k].done && r->w[k].uid >= 0) mark_uid(r, busy, (unsigned long long)r->w[k].uid);
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        if (fstatat(dirfd(d), e->d_name, &st, 0) == 0) mark_uid(r, busy, st.st_uid);
    }
    if (d) closedir(d);
    unsigned long long h = fnv1a(job) % span;
    long long out = -1;
    /* first a free uid the tenant already has, then a fresh one */
    for (int pass = 0; pass < 2 && out < 0; pass++)
        for (unsigned long long k = 0; k < span; k++) {
            unsigned long long i = (h + k) % span;
            int own = (mine[i / 8] >> (i % 8)) & 1;
            if (!(busy[i / 8] & (1u << (i % 8))) && own == !pass) {
                out = (long long)(r->uid_lo + i);
                break;
            }
        }
    int fresh = out >= 0 && !((mine[(out - r->uid_lo) / 8] >> ((out - r->uid_lo) % 8)) & 1);
    free(busy);
    free(mine);
    if (fresh && uid_claim(r, out, tenant) != 0) return -1;
    return out;
}

/*
 * Open the workload's output file for writing (append), made by the runner
 * (owned by it, mode 0600, one link): a job owns its folder and could have
 * left a link or another file in its place, which the runner must never read
 * back as output.  OUT: its device and inode.  The descriptor, or -1.
 */
static int open_output(wl *w) {
    struct stat st;
    int fd = open(w->log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
                    st.st_uid != geteuid())) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        if (unlink(w->log) != 0 && errno != ENOENT) return -1;
        fd = open(w->log, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || fstat(fd, &st) != 0) {
            if (fd >= 0) close(fd);
            return -1;
        }
    }
    w->log_dev = (unsigned long long)st.st_dev;
    w->log_ino = (unsigned long long)st.st_ino;
    /* and the same file for reading back, even once the job unlinks or replaces its name */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if (w->rfd >= 0) close(w->rfd);
    w->rfd = open(self, O_RDONLY | O_CLOEXEC);
    return fd;
}

/*
 * The job's TMPDIR, `work`/tmp: made if missing (0700), and given to the job's
 * uid (when it has one) without following a link the job may have left there.
 * 0, or -1 (errno set).
 */
static int job_tmp(const char *work, long long uid, gid_t gid) {
    int dfd = open(work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return -1;
    int rc = mkdirat(dfd, "tmp", 0700);
    if (rc != 0 && errno == EEXIST) rc = 0;
    if (rc == 0 && uid >= 0) rc = fchownat(dfd, "tmp", (uid_t)uid, gid, AT_SYMLINK_NOFOLLOW);
    int e = errno;
    close(dfd);
    errno = e;
    return rc;
}

/* In a child, after its own fds are in place: close every other descriptor. */
static void close_others(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = 3; fd < max; fd++) close(fd);
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

/* ---- the devices of an assignment, per vendor (see runner_device_env) ---- */

/* An assignment's devices, checked: what the variables and CDI names are made of. */
typedef struct devset {
    const char *vendor;                 /* "nvidia", "amd" or "intel" (static) */
    size_t n;                           /* devices */
    const char *dev[RUNNER_DEVICES_MAX];/* their UUIDs (borrowed from the assignment) */
    int num[RUNNER_DEVICES_MAX];        /* its number on the node: the agent's ("numbers"),
                                         * else a slice's index, else its card's; -1 where
                                         * unknown (NVIDIA, which goes by UUID) */
    size_t nu;                          /* distinct numbers, in order of first appearance */
    int uniq[RUNNER_DEVICES_MAX];
    int mod[RUNNER_DEVICES_MAX];        /* Intel Gaudi: each device's module id */
    size_t nm;                          /* distinct module ids, in order */
    int umod[RUNNER_DEVICES_MAX];
} devset;

/* Add v to the distinct list u of *n (v >= 0). */
static void uniq_add(int *u, size_t *n, int v) {
    for (size_t k = 0; k < *n; k++)
        if (u[k] == v) return;
    if (v >= 0) u[(*n)++] = v;
}

/* 1 if `s` may name a device: 1-128 characters of [A-Za-z0-9._:/-] (no ',' to split on). */
static int dev_name_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128) return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/-") == n;
}

/* 1 if `v` is an index: an integer 0..RUNNER_INDEX_MAX. */
static int index_ok(json_t *v) {
    return json_is_integer(v) && json_integer_value(v) >= 0 &&
           json_integer_value(v) <= RUNNER_INDEX_MAX;
}

/* Check assignment `a`'s vendor, devices, indexes and slice_indexes into *d: 0, or -1 with why. */
static int devset_parse(json_t *a, devset *d, char *why, size_t len) {
    static const char *const vendors[] = {"nvidia", "amd", "intel"};
    json_t *v = json_object_get(a, "vendor");
    memset(d, 0, sizeof *d);
    if (!v || json_is_null(v)) d->vendor = "nvidia"; /* an older server: NVIDIA, as always */
    else if (json_is_string(v))
        for (size_t k = 0; k < sizeof vendors / sizeof vendors[0]; k++)
            if (!strcmp(json_string_value(v), vendors[k])) d->vendor = vendors[k];
    if (!d->vendor) {
        const char *s = json_string_value(v);
        if (s && *s && strlen(s) <= 16 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s))
            snprintf(why, len, "unknown accelerator vendor \"%s\"", s);
        else snprintf(why, len, "unknown accelerator vendor");
        return -1;
    }
    int nv = !strcmp(d->vendor, "nvidia"), intel = !strcmp(d->vendor, "intel");
    json_t *devs = json_object_get(a, "devices");
    json_t *idx = json_object_get(a, "indexes");
    json_t *sl = json_object_get(a, "slice_indexes");
    if (devs && !json_is_array(devs)) {
        snprintf(why, len, "the assignment's devices are not a list");
        return -1;
    }
    d->n = json_array_size(devs);
    if (d->n > RUNNER_DEVICES_MAX) {
        snprintf(why, len, "the assignment names more than %d devices", RUNNER_DEVICES_MAX);
        return -1;
    }
    if (!nv && d->n == 0) {
        snprintf(why, len, "an %s assignment without devices", d->vendor);
        return -1;
    }
    if ((idx && !json_is_null(idx) && !json_is_array(idx)) ||
        (sl && !json_is_null(sl) && !json_is_array(sl))) {
        snprintf(why, len, "the assignment's indexes are not a list");
        return -1;
    }
    if (json_is_null(idx)) idx = NULL;
    if (json_is_null(sl)) sl = NULL;
    if (!nv && !idx) {
        snprintf(why, len, "an %s assignment without device indexes", d->vendor);
        return -1;
    }
    /* the agent's own numbers for this node's devices (runner_localize), where it has them */
    json_t *lnum = json_object_get(a, "numbers"), *lmod = json_object_get(a, "modules");
    if ((idx && json_array_size(idx) != d->n) || (sl && json_array_size(sl) != d->n) ||
        (lnum && (!json_is_array(lnum) || json_array_size(lnum) != d->n)) ||
        (lmod && (!json_is_array(lmod) || json_array_size(lmod) != d->n))) {
        snprintf(why, len, "the assignment's devices and indexes differ in length");
        return -1;
    }
    for (size_t i = 0; i < d->n; i++) {
        d->dev[i] = json_string_value(json_array_get(devs, i));
        if (!dev_name_ok(d->dev[i])) {
            snprintf(why, len, "the assignment names a device that is not one");
            return -1;
        }
        json_t *ci = idx ? json_array_get(idx, i) : NULL;
        json_t *si = sl ? json_array_get(sl, i) : NULL;
        /* NVIDIA devices go by UUID: an index the server does not know (-1) is no harm there */
        int unknown = nv && json_is_integer(ci) && json_integer_value(ci) == -1;
        int sunknown = nv && json_is_integer(si) && json_integer_value(si) == -1;
        if ((idx && !index_ok(ci) && !unknown) ||
            (si && !json_is_null(si) && !index_ok(si) && !sunknown)) {
            snprintf(why, len, "a device index that is not an integer 0..%d", RUNNER_INDEX_MAX);
            return -1;
        }
        if (intel && si && !json_is_null(si)) {
            snprintf(why, len, "a slice of an Intel Gaudi card (Gaudi has none)");
            return -1;
        }
        json_t *ln = lnum ? json_array_get(lnum, i) : NULL, *lm = lmod ? json_array_get(lmod, i) : NULL;
        if ((ln && !index_ok(ln)) || (lm && !index_ok(lm))) {
            snprintf(why, len, "a device index that is not an integer 0..%d", RUNNER_INDEX_MAX);
            return -1;
        }
        d->num[i] = ln                                    ? (int)json_integer_value(ln)
                    : si && !json_is_null(si) && !sunknown ? (int)json_integer_value(si)
                    : ci && !unknown                      ? (int)json_integer_value(ci)
                                                          : -1;
        d->mod[i] = lm ? (int)json_integer_value(lm) : ci && !unknown ? (int)json_integer_value(ci) : -1;
        uniq_add(d->uniq, &d->nu, d->num[i]);
        uniq_add(d->umod, &d->nm, d->mod[i]);
    }
    return 0;
}

/* The report entry of this node's card or slice `uuid`: OUT *card (its card), *slice (the
 * slice, NULL for a card), *pos (the slice's place on its card).  1 if found. */
static int find_device(json_t *gpus, const char *uuid, json_t **card, json_t **slice, size_t *pos) {
    size_t i, k;
    json_t *g, *sl;
    json_array_foreach(gpus, i, g) {
        const char *u = json_string_value(json_object_get(g, "uuid"));
        if (u && !strcmp(u, uuid)) {
            *card = g, *slice = NULL, *pos = 0;
            return 1;
        }
        json_array_foreach(json_object_get(g, "slices"), k, sl) {
            u = json_string_value(json_object_get(sl, "uuid"));
            if (u && !strcmp(u, uuid)) {
                *card = g, *slice = sl, *pos = k;
                return 1;
            }
        }
    }
    return 0;
}

/* The vendor of report card g ("nvidia" when it says none). */
static const char *card_vendor(json_t *g) {
    const char *v = json_string_value(json_object_get(g, "vendor"));
    return v && *v ? v : "nvidia";
}

/* The number ROCm gives report card g's first device: AMD cards in index order, one device
 * each, or one per partition where it is partitioned. */
static long long rocm_base(json_t *gpus, json_t *g) {
    long long idx = json_integer_value(json_object_get(g, "index")), n = 0;
    size_t i;
    json_t *o;
    json_array_foreach(gpus, i, o) {
        if (strcmp(card_vendor(o), "amd") || json_integer_value(json_object_get(o, "index")) >= idx)
            continue;
        size_t ns = json_array_size(json_object_get(o, "slices"));
        n += ns ? (long long)ns : 1;
    }
    return n;
}

void runner_localize(json_t *assignments, json_t *report) {
    json_t *gpus = json_object_get(report, "gpus"), *a;
    size_t i, k;
    json_array_foreach(assignments, i, a) {
        const char *vendor = json_string_value(json_object_get(a, "vendor"));
        if (!vendor || (strcmp(vendor, "amd") && strcmp(vendor, "intel"))) continue;
        int amd = !strcmp(vendor, "amd"), whole = 1;
        json_t *devs = json_object_get(a, "devices"), *d;
        json_t *num = json_array(), *mod = json_array();
        json_array_foreach(devs, k, d) {
            json_t *card, *slice;
            size_t pos;
            const char *u = json_string_value(d);
            if (!u || !find_device(gpus, u, &card, &slice, &pos) || strcmp(card_vendor(card), vendor)) {
                whole = 0; /* not this node's (or not that vendor's): the server's indexes stand */
                break;
            }
            json_t *vi = json_object_get(card, "vendor_index");
            long long idx = json_integer_value(json_object_get(card, "index"));
            if (amd) {
                json_t *di = slice ? json_object_get(slice, "device_index") : NULL;
                json_array_append_new(num, json_integer(json_is_integer(di) ? json_integer_value(di)
                                                        : rocm_base(gpus, card) + (long long)pos));
            } else {
                json_t *mi = json_object_get(card, "module_id");
                json_array_append_new(num, json_integer(json_is_integer(vi) ? json_integer_value(vi) : idx));
                json_array_append_new(mod, json_integer(json_is_integer(mi) ? json_integer_value(mi) : idx));
            }
        }
        if (whole && json_array_size(num) == json_array_size(devs)) {
            json_object_set(a, "numbers", num);
            if (!amd) json_object_set(a, "modules", mod);
        }
        json_decref(num);
        json_decref(mod);
    }
}

/* "VAR=" then the distinct numbers of d (or 0..n-1 when `ordinal`), comma-separated. */
static char *num_list(const char *var, const devset *d, int ordinal) {
    strbuf b = SB_INIT;
    sb_addf(&b, "%s=", var);
    for (size_t k = 0; k < d->nu; k++) sb_addf(&b, "%s%d", k ? "," : "", ordinal ? (int)k : d->uniq[k]);
    if (!sb_ok(&b)) {
        sb_release(&b);
        return NULL;
    }
    return sb_detach(&b);
}

/* "HABANA_VISIBLE_MODULES=" then the distinct module ids of d, comma-separated. */
static char *mod_list(const devset *d) {
    strbuf b = SB_INIT;
    sb_addf(&b, "HABANA_VISIBLE_MODULES=");
    for (size_t k = 0; k < d->nm; k++) sb_addf(&b, "%s%d", k ? "," : "", d->umod[k]);
    return sb_detach(&b);
}

/* Append `s` (on the heap, taken; NULL: out of memory) to the list *v of *n strings: 0 or -1. */
static int list_take(char ***v, size_t *n, char *s) {
    char **nv = s ? realloc(*v, sizeof *nv * (*n + 2)) : NULL;
    if (!nv) {
        free(s);
        return -1;
    }
    *v = nv;
    nv[(*n)++] = s;
    nv[*n] = NULL;
    return 0;
}

/* A node's address as a hostfile line and MASTER_ADDR may hold it: 1-253 of [A-Za-z0-9.:-]. */
static int host_ok(const char *h) {
    size_t n = h ? strlen(h) : 0;
    return n >= 1 && n <= 253 &&
           strspn(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:-") == n;
}

int runner_gang_env(json_t *a, int port, const char *hostfile_path, char ***env, size_t *ne,
                    char **hostfile, char *why, size_t len) {
    json_t *g = json_object_get(a, "gang");
    json_t *hosts = json_object_get(g, "hosts"), *names = json_object_get(g, "node_names");
    json_t *slots = json_object_get(g, "slots");
    json_int_t nodes = json_integer_value(json_object_get(g, "nodes"));
    json_int_t rank = json_integer_value(json_object_get(g, "rank"));
    *hostfile = NULL;
    if (!json_is_object(g) || nodes < 1 || nodes > 64 || !json_is_array(hosts) ||
        (json_int_t)json_array_size(hosts) != nodes || !json_is_array(names) ||
        (json_int_t)json_array_size(names) != nodes || !json_is_array(slots) ||
        (json_int_t)json_array_size(slots) != nodes || rank < 0 || rank >= nodes || port < 1 ||
        port > 65535) {
        snprintf(why, len, "its nodes (gang) are not a list of nodes it spans");
        return -1;
    }
    strbuf hf = SB_INIT, hl = SB_INIT, nl = SB_INIT, eb = SB_INIT;
    long long world = 0, mine = 0;
    for (json_int_t i = 0; i < nodes; i++) {
        const char *h = json_string_value(json_array_get(hosts, (size_t)i));
        const char *nm = json_string_value(json_array_get(names, (size_t)i));
        json_int_t sl = json_integer_value(json_array_get(slots, (size_t)i));
        if (!host_ok(h) || !host_ok(nm) || sl < 1 || sl > 1024) {
            snprintf(why, len, "a node of the job has an address that is not one");
            sb_release(&hf);
            sb_release(&hl);
            sb_release(&nl);
            return -1;
        }
        sb_addf(&hf, "%s slots=%lld\n", h, (long long)sl);
        sb_addf(&hl, "%s%s", i ? "," : "", h);
        sb_addf(&nl, "%s%s", i ? "," : "", nm);
        world += sl;
        if (i == rank) mine = sl;
    }
    int bad = !sb_ok(&hf) || !sb_ok(&hl) || !sb_ok(&nl);
    sb_addf(&eb, "MASTER_ADDR=%s", json_string_value(json_array_get(hosts, 0)));
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "MASTER_PORT=%d", port);
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "WORLD_SIZE=%lld", world);
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "NNODES=%lld", (long long)nodes);
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "NODE_RANK=%lld", (long long)rank);
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "GPUPOOL_NODES=%s", hl.buf ? hl.buf : "");
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "GPUPOOL_NODE_NAMES=%s", nl.buf ? nl.buf : "");
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "GPUPOOL_GPUS_PER_NODE=%lld", mine);
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_addf(&eb, "GPUPOOL_HOSTFILE=%s", hostfile_path);
    bad = bad || list_take(env, ne, sb_detach(&eb));
    sb_release(&hl);
    sb_release(&nl);
    if (bad) {
        sb_release(&hf);
        snprintf(why, len, "out of memory");
        return -1;
    }
    *hostfile = sb_detach(&hf);
    return 0;
}

/*
 * Write the hostfile `text` as `work`/hostfile, the runner's own new file (mode 0644): a name
 * the job left there (a link to the node's credential, a folder) is removed, never followed.
 * 0, or -1.
 */
static int write_hostfile(const char *work, const char *text) {
    int dfd = open(work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return -1;
    if (unlinkat(dfd, "hostfile", 0) != 0 && errno != ENOENT) {
        close(dfd);
        return -1;
    }
    int fd = openat(dfd, "hostfile", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    close(dfd);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n && fchmod(fd, 0644) == 0;
    return close(fd) == 0 && ok ? 0 : -1;
}

/* The rendezvous ports this runner's live workloads hold (rank 0s), for ports_pick_free. */
static int held_ports(const runner *r, int *out, int cap) {
    int n = 0;
    for (int i = 0; i < r->n && n < cap; i++)
        if (!r->w[i].done && r->w[i].master_port > 0) out[n++] = r->w[i].master_port;
    return n;
}

int runner_device_env(json_t *a, int container, char ***env, char *why, size_t len) {
    devset *d = malloc(sizeof *d);
    char **v = NULL;
    size_t n = 0;
    *env = NULL;
    if (!d) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    if (devset_parse(a, d, why, len) != 0) {
        free(d);
        return -1;
    }
    strbuf b = SB_INIT;
    sb_addf(&b, "GPUPOOL_VENDOR=%s", d->vendor);
    int bad = list_take(&v, &n, sb_detach(&b));
    if (!strcmp(d->vendor, "nvidia")) {
        /* CUDA and the NVIDIA container runtime: the devices' UUIDs (GPU-… or MIG-…) */
        strbuf devs = SB_INIT;
        for (size_t i = 0; i < d->n; i++) sb_addf(&devs, "%s%s", i ? "," : "", d->dev[i]);
        const char *list = devs.buf;
        sb_reset(&b);
        sb_addf(&b, "CUDA_VISIBLE_DEVICES=%s", list);
        bad = bad || list_take(&v, &n, sb_detach(&b));
        sb_reset(&b);
        sb_addf(&b, "NVIDIA_VISIBLE_DEVICES=%s", list);
        bad = bad || list_take(&v, &n, sb_detach(&b));
        json_t *sh = json_object_get(a, "shared");
        if (sh) {
            /* an MPS share of a card: its part of the SMs and of the memory */
            sb_reset(&b);
            sb_addf(&b, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%lld",
                    (long long)json_integer_value(json_object_get(sh, "percent")));
            bad = bad || list_take(&v, &n, sb_detach(&b));
            sb_reset(&b);
            sb_addf(&b, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s=%lldG", list,
                    (long long)json_integer_value(json_object_get(sh, "memory_gib")));
            bad = bad || list_take(&v, &n, sb_detach(&b));
        }
        bad = bad || !sb_ok(&devs);
        sb_release(&devs);
    } else if (!strcmp(d->vendor, "amd")) {
        /*
         * ROCm: ROCR_VISIBLE_DEVICES selects the devices for every runtime above ROCr, by the
         * node's numbering; HIP_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL are then applied to
         * what ROCr exposes (renumbered from 0), so they list 0..n-1, never the node's
         * numbers.  A container sees only the devices CDI gave it, numbered from 0.
         */
        bad = bad || list_take(&v, &n, num_list("ROCR_VISIBLE_DEVICES", d, container));
        bad = bad || list_take(&v, &n, num_list("HIP_VISIBLE_DEVICES", d, 1));
        bad = bad || list_take(&v, &n, num_list("GPU_DEVICE_ORDINAL", d, 1));
    } else {
        /*
         * Intel Gaudi: SynapseAI opens the modules HABANA_VISIBLE_MODULES lists; Habana's
         * container runtime (its OCI hook) mounts the devices HABANA_VISIBLE_DEVICES lists,
         * and all of them when it is unset, so it is always set.
         */
        bad = bad || list_take(&v, &n, mod_list(d));
        bad = bad || list_take(&v, &n, num_list("HABANA_VISIBLE_DEVICES", d, 0));
    }
    sb_release(&b);
    free(d);
    if (bad) {
        runner_argv_free(v);
        snprintf(why, len, "out of memory");
        return -1;
    }
    *env = v;
    return 0;
}

char **runner_container_argv(const char *runtime, json_t *a, const char *work, char *const env[]) {
    const char *image = json_string_value(json_object_get(a, "image"));
    const char *job = json_string_value(json_object_get(a, "job"));
    const char *pl = json_string_value(json_object_get(a, "placement"));
    if (!image || !*image || image[0] == '-' || !job || !runtime || !work) return NULL;
    /* devices the runner refuses (runner_device_env) start no container */
    char why[96];
    devset *ds = malloc(sizeof *ds);
    if (!ds || devset_parse(a, ds, why, sizeof why) != 0) {
        free(ds);
        return NULL;
    }
    char **v = NULL;
    size_t n = 0, i, k;
    json_t *c;
    int bad = argv_add(&v, &n, runtime) || argv_add(&v, &n, "run") || argv_add(&v, &n, "--rm") ||
              argv_add(&v, &n, "--name");
    strbuf b = SB_INIT;
    sb_addf(&b, "gpupool-%s%s%s", job, pl && *pl ? "-" : "", pl ? pl : "");
    bad = bad || !sb_ok(&b) || argv_add(&v, &n, b.buf);
    /* its devices by CDI name, each once (shared slices of one card name it twice) */
    if (!strcmp(ds->vendor, "nvidia")) {
        for (i = 0; i < ds->n; i++) {
            int seen = 0;
            for (k = 0; k < i && !seen; k++) seen = !strcmp(ds->dev[k], ds->dev[i]);
            if (seen) continue;
            sb_reset(&b);
            sb_addf(&b, "nvidia.com/gpu=%s", ds->dev[i]);
            bad = bad || !sb_ok(&b) || argv_add(&v, &n, "--device") || argv_add(&v, &n, b.buf);
        }
    } else {
        /* AMD's container toolkit (amd-ctk cdi generate) names each GPU, or each compute
         * partition, by its number on the node; Gaudi cards go by theirs */
        const char *kind = !strcmp(ds->vendor, "amd") ? "amd.com/gpu" : "habana.ai/gaudi";
        for (i = 0; i < ds->nu; i++) {
            sb_reset(&b);
            sb_addf(&b, "%s=%d", kind, ds->uniq[i]);
            bad = bad || !sb_ok(&b) || argv_add(&v, &n, "--device") || argv_add(&v, &n, b.buf);
        }
    }
    free(ds);
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
    for (int i = 0; i < r->n; i++)
        if (r->w[i].rfd >= 0) close(r->w[i].rfd);
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
 * The output written since `from`, oldest first, at most `cap` bytes (the
 * rest goes in later reports), as valid UTF-8.  A multibyte character cut
 * at the end is left for next time unless `final`.  OUT: *upto, the file
 * offset the returned text ends at.  The server keeps the last LOG_FINAL
 * bytes, so only output older than that is skipped: it loses nothing the
 * server would have kept, however fast a job writes between two reports.
 */
static char *new_output(const wl *w, long long from, long long cap, int final, long long *upto) {
    *upto = from;
    if (cap <= 0) return strdup("");
    /* only the file the runner made: never what a job put in its place (a link to the
     * node's credential, a FIFO) */
    struct stat st;
    int fd = w->rfd >= 0 ? fcntl(w->rfd, F_DUPFD_CLOEXEC, 0)
                        : open(w->log, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                    (w->log_ino && ((unsigned long long)st.st_ino != w->log_ino ||
                                    (unsigned long long)st.st_dev != w->log_dev)))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) return strdup("");
    off_t end = st.st_size;
    off_t start = end - from > LOG_FINAL ? end - LOG_FINAL : from;
    if (start > end) start = end;
    if (end - start > cap) end = start + cap;
    size_t want = (size_t)(end - start);
    char *buf = malloc(want + 1);
    ssize_t n = buf ? pread(fd, buf, want, start) : -1;
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
    refresh_ports(r);
    for (int i = 0; i < r->n; i++) {
        wl *w = &r->w[i];
        if (strcmp(w->node, node) != 0) continue;
        long long upto, cap = w->done ? LOG_FINAL : LOG_TAIL;
        w->reported = 0;
        if (cap > budget) {
            if (w->done) continue; /* its exit waits for a report with room for its output */
            cap = budget;
        }
        char *out = new_output(w, w->log_sent, cap, w->done, &upto);
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
        } else {
            json_t *ports = json_array();
            for (int k = 0; k < w->nports; k++) json_array_append_new(ports, json_integer(w->ports[k]));
            json_object_set_new(o, "ports", ports);
            /* rank 0 of a job that spans nodes: where its other ranks meet it */
            if (w->master_port > 0)
                json_object_set_new(o, "master_port", json_integer(w->master_port));
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
            if (r->w[i].rfd >= 0) close(r->w[i].rfd);
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
    /* the job's id names its folder: nothing but an id's characters (no "..", no '/') */
    size_t jl = strspn(job, "abcdefghijklmnopqrstuvwxyz0123456789-");
    if (!*job || job[jl] || jl > 40) {
        log_kv(LOG_ERROR, "an assignment names a job id that is not one", (char *)NULL);
        return;
    }
    /* a rank of a job that spans nodes starts once rank 0's node said where they meet */
    json_t *gang = json_object_get(a, "gang");
    int gport = (int)json_integer_value(json_object_get(gang, "master_port"));
    int grank = (int)json_integer_value(json_object_get(gang, "rank"));
    if (gang && grank != 0 && gport <= 0) return;
    char work[560];
    snprintf(work, sizeof work, "%s/work/%s", r->dir, job);
    /* (a job that spans nodes: a folder per node, for an agent that runs several of them) */
    if (gang) snprintf(work, sizeof work, "%s/work/%s-%.63s", r->dir, job, node);
    /* its devices as their vendor's software names them; devices the runner cannot make sense
     * of (an unknown vendor, a bad index) start nothing: the job exits 126, saying why */
    char dwhy[64];
    char **denv = NULL;
    int refused = runner_device_env(a, image != NULL, &denv, dwhy, sizeof dwhy) != 0;
    if (refused)
        log_kv(LOG_ERROR, "refusing an assignment's devices", "job", job, "detail", dwhy,
               (char *)NULL);
    else if (mkdir_p(work) != 0) {
        log_kv(LOG_ERROR, "cannot create the job's folder", "job", job, (char *)NULL);
        runner_argv_free(denv);
        return;
    }
    wl *w = add(r);
    if (!w) {
        runner_argv_free(denv);
        return;
    }
    snprintf(w->node, sizeof w->node, "%s", node);
    snprintf(w->job, sizeof w->job, "%s", job);
    snprintf(w->placement, sizeof w->placement, "%s",
             json_string_value(json_object_get(a, "placement")) ? json_string_value(json_object_get(a, "placement")) : "");
    snprintf(w->log, sizeof w->log, "%s/output.log", work);
    if (refused) {
        w->log[0] = '\0'; /* no output: nothing ran (an earlier run's output.log is not this one's) */
        snprintf(w->reason, sizeof w->reason, "%s", dwhy);
        w->done = 1;
        w->exit_code = 126;
        return;
    }
    if (image && !r->runtime[0]) {
        log_kv(LOG_ERROR, "the job has an image and this node no container runtime", "job", job,
               "image", image, (char *)NULL);
        snprintf(w->reason, sizeof w->reason,
                 "this node has no container runtime (gpupool agent --runtime)");
        runner_argv_free(denv);
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
            runner_argv_free(denv);
            w->done = 1;
            w->exit_code = 126;
            return;
        }
    }
    /* the environment says who the job is, which devices are its, and nothing else */
    char **env = NULL;
    size_t ne = 0, i;
    int bad = 0;
    strbuf eb = SB_INIT;
    sb_addf(&eb, "PATH=/usr/local/bin:/usr/bin:/bin");
    bad = bad || list_take(&env, &ne, sb_detach(&eb));
    sb_addf(&eb, "HOME=%s", work);
    bad = bad || list_take(&env, &ne, sb_detach(&eb));
    if (!image) {
        /* scratch files in the job's own folder, not in the node's shared /tmp */
        sb_addf(&eb, "TMPDIR=%s/tmp", work);
        bad = bad || list_take(&env, &ne, sb_detach(&eb));
    }
    sb_addf(&eb, "GPUPOOL_JOB_ID=%s", job);
    bad = bad || list_take(&env, &ne, sb_detach(&eb));
    sb_addf(&eb, "GPUPOOL_TENANT=%s", json_string_value(json_object_get(a, "tenant")));
    bad = bad || list_take(&env, &ne, sb_detach(&eb));
    sb_addf(&eb, "GPUPOOL_PROJECT=%s", json_string_value(json_object_get(a, "project")));
    bad = bad || list_take(&env, &ne, sb_detach(&eb));
    json_t *arr = json_object_get(a, "array");
    if (json_is_object(arr)) {
        /* a task of an array: which one (Slurm's SLURM_ARRAY_JOB_ID / _TASK_ID) */
        sb_addf(&eb, "GPUPOOL_ARRAY_ID=%s", json_string_value(json_object_get(arr, "id")));
        bad = bad || list_take(&env, &ne, sb_detach(&eb));
        sb_addf(&eb, "GPUPOOL_ARRAY_INDEX=%lld",
                (long long)json_integer_value(json_object_get(arr, "index")));
        bad = bad || list_take(&env, &ne, sb_detach(&eb));
    }
    for (size_t k = 0; denv[k]; k++) {
        if (!bad) bad = list_take(&env, &ne, denv[k]); /* taken (freed when it fails) */
        else free(denv[k]);
    }
    free(denv);
    const char *gwhy = NULL;
    char gwbuf[96];
    if (gang && !bad) {
        /* a job that spans nodes: its rank 0 reserves the port its ranks meet on (ports.h),
         * then each node's process learns where (MASTER_ADDR...) and gets the hostfile */
        if (gport <= 0) {
            int held[64];
            unsigned seed = (unsigned)gt_now_us() ^ (unsigned)getpid();
            for (const char *p = job; *p; p++) seed = seed * 31u + (unsigned char)*p;
            gport = ports_pick_free("/proc", held, held_ports(r, held, 64), PORTS_RDV_LO,
                                    PORTS_RDV_HI, seed);
        }
        char hpath[600], *hosts = NULL;
        snprintf(hpath, sizeof hpath, "%s/hostfile", image ? "/work" : work);
        if (gport <= 0)
            gwhy = "no free port for its ranks' rendezvous on this node";
        else if (runner_gang_env(a, gport, hpath, &env, &ne, &hosts, gwbuf, sizeof gwbuf) != 0)
            gwhy = gwbuf;
        else if (write_hostfile(work, hosts) != 0)
            gwhy = "cannot write its hostfile";
        else
            w->master_port = grank == 0 ? gport : 0;
        free(hosts);
    }
    char **argv = NULL, **renv = NULL;
    if (gwhy) {
        log_kv(LOG_ERROR, "cannot start the workload", "job", job, "detail", gwhy, (char *)NULL);
        snprintf(w->reason, sizeof w->reason, "%.63s", gwhy);
        runner_argv_free(env);
        if (w->cg[0]) rmdir(w->cg);
        w->cg[0] = '\0';
        w->done = 1;
        w->exit_code = 126;
        return;
    }
    if (bad) {
        argv = NULL; /* out of memory */
    } else if (image) {
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
        runner_argv_free(env);
        if (w->cg[0]) rmdir(w->cg);
        w->cg[0] = '\0';
        w->done = 1;
        w->exit_code = 126;
        return;
    }
    /* a plain job's identity: a uid of its own, owner of its folder and of nothing else */
    long long uid = -1;
    gid_t gid = (gid_t)-1;
    const char *why = NULL;
    if (r->ident && !image) {
        const char *tenant = json_string_value(json_object_get(a, "tenant"));
        uid = pick_uid(r, job, tenant ? tenant : "");
        gid = r->gid != (gid_t)-1 ? r->gid : (gid_t)uid;
        if (uid < 0) why = "no free uid of its tenant's in the agent's --job-uids range";
        else if (lchown(work, (uid_t)uid, gid) != 0 || chmod(work, 0700) != 0)
            why = "cannot give the job its folder";
    }
    if (!why && !image && job_tmp(work, uid, gid) != 0) why = "cannot give the job its TMPDIR";
    int out = why ? -1 : open_output(w);
    if (!why && out < 0) why = "cannot create its output file";
    if (why) {
        log_kv(LOG_ERROR, "cannot start the workload", "job", job, "detail", why, (char *)NULL);
        snprintf(w->reason, sizeof w->reason, "%s", why);
        if (image) runner_argv_free(argv);
        else free(argv);
        runner_argv_free(renv);
        runner_argv_free(env);
        if (w->cg[0]) rmdir(w->cg);
        w->cg[0] = '\0';
        w->done = 1;
        w->exit_code = 126;
        return;
    }
    w->uid = uid;
    int64_t tl = json_integer_value(json_object_get(a, "time_limit_s"));
    pid_t pid = fork();
    if (pid == 0) {
        /* the child: its own session (so the whole group can be stopped), its output captured */
        setsid();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(126);
        if (w->cg[0]) {
            char me[24];
            snprintf(me, sizeof me, "%d\n", (int)getpid());
            if (cg_write(w->cg, "cgroup.procs", me) != 0) {
                dprintf(2, "gpupool: cannot enter cgroup %s: %s\n", w->cg, strerror(errno));
                _exit(126);
            }
        }
        if (uid >= 0) {
            /* the node's state folder disappears but for the job's own folder ... */
            if (r->ns && private_view(r->dir, work) != 0) {
                dprintf(2, "gpupool: cannot hide the agent's state folder: %s\n", strerror(errno));
                _exit(126);
            }
            /* ... and the job becomes its own user: no supplementary group, no way back */
            if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid((uid_t)uid) != 0 ||
                getuid() != (uid_t)uid || geteuid() != (uid_t)uid || setuid(0) == 0) {
                dprintf(2, "gpupool: cannot run as uid %lld: %s\n", uid, strerror(errno));
                _exit(126);
            }
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        }
        if (chdir(work) != 0) {
            dprintf(2, "gpupool: cannot enter the job's folder: %s\n", strerror(errno));
            _exit(126);
        }
        /* what the job makes outside its folder (/tmp, /dev/shm) is its own, not every uid's */
        umask(077);
        close_others();
        if (image) execve(argv[0], argv, renv);
        else execvpe(argv[0], argv, env);
        dprintf(2, "gpupool: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out);
    if (image) runner_argv_free(argv);
    else free(argv);
    runner_argv_free(renv);
    runner_argv_free(env);
    if (pid < 0) {
        log_kv(LOG_ERROR, "cannot start the workload", "job", job, "detail", strerror(errno),
               (char *)NULL);
        if (w->cg[0]) rmdir(w->cg);
        if (w->rfd >= 0) close(w->rfd);
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

int runner_unreported(runner *r, const char *node) {
    for (int k = 0; k < r->n; k++)
        if (r->w[k].done && (!node || !strcmp(r->w[k].node, node))) return 1;
    return 0;
}

int runner_apply(runner *r, const char *node, json_t *assignments) {
    int started = 0;
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
        if (!known) {
            int before = r->n;
            launch(r, node, a);
            started += r->n > before;
        }
    }
    return started;
}
