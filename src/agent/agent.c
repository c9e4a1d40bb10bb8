/*
 * agent.c - the node agent's loop: join, heartbeat, re-join (see agent.h).
 *
 * Each node is an independent identity: its own report, credential file and
 * injected faults.  Nodes join and heartbeat one after another; a pass of the
 * loop spends at most half an --interval on joins, so the nodes of a large
 * --simulate that joined keep heartbeating while the rest join.  Simulated nodes report healthy signals (in their cards'
 * vendor's keys) plus whatever was injected; a discovered node reports what
 * each vendor library in use says (accel.h: NVML, AMD SMI, HLML).  On a 401/404 answer
 * (credential revoked, node record gone) the node joins again with the join
 * token, if one was given.
 *
 * Several servers (cfg->server "URL1,URL2", sharing one store): every call
 * goes to the one that answered last and moves on to the next one when it
 * cannot be reached, or did not answer within CALL_TIMEOUT_S (a hung server:
 * that call is lost, the next goes elsewhere; httpc_json_failover()); a
 * switch is logged once.  Exits
 * are reported until a heartbeat is answered 200 (runner_ack), whichever
 * server answers it, so a failover loses none.
 *
 * Events (docs/workloads.md, "The event flow"): each node heartbeats every
 * --interval for health and liveness, and also AT ONCE when one of its
 * workloads started or exited (SIGCHLD wakes the loop) or when the server
 * says its assignments changed: a waiter thread per node (up to
 * WAIT_MAX_NODES nodes) keeps a long poll open (POST /api/v1/agent/wait),
 * which the server answers the moment a commit touches the node; the
 * waiter then wakes the loop (SIGUSR1) and the loop heartbeats that node,
 * which fetches the assignments.  The runner is the loop's alone; waiters
 * only read the node's credential (under tok_mu).  With more nodes than
 * WAIT_MAX_NODES (a large --simulate), or a server without the notifier,
 * assignments come with the interval's heartbeats.
 *
 * Signals: the caller blocks SIGTERM/SIGINT; agent_run() also blocks
 * SIGUSR1 and SIGCHLD and waits for all four with sigtimedwait, so a stop
 * is prompt and an event is handled at once.
 */
#define _GNU_SOURCE
#include "agent.h"

#include "../core/gtime.h"
#include "../core/httpc.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../core/rand.h"
#include "../core/strbuf.h"
#include "accel.h"
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

typedef struct anode {
    json_t *report;    /* registration report (owned) */
    char name[64];
    char *token;       /* credential (heap) or NULL */
    json_t *overrides; /* simulated: index -> signal overrides (owned) */
    json_t *pending_xids; /* simulated: index -> [xids] to send next */
    json_t *procs;     /* simulated: index -> [{job|pid, memory_mib, sm_pct}] on that GPU */
    json_t *xid_totals; /* simulated: index -> Xid events injected since the agent started */
    json_t *pending_crit; /* simulated Gaudi: index -> [event types] to send next */
    json_t *crit_totals;  /* simulated Gaudi: index -> critical events injected since start */
    unsigned beats;    /* simulated: heartbeats built, the phase of the varying samples */
    int reported;      /* the server has this run's hardware report */
    /* events (see the top) */
    int64_t next_beat_us;  /* monotonic: the interval's next heartbeat */
    int64_t exit_retry_us; /* an unacknowledged exit is sent again from then */
    int dirty;             /* a workload started: report it at once */
    int64_t event_at_us;   /* a start or exit to report: the heartbeat goes then (0: none) */
    atomic_int woke;       /* the waiter saw the node's assignments change */
} anode;

/* A node's long poll (see the top). */
typedef struct waiter {
    struct agent *a;
    anode *nd;
    pthread_t th;
    int running;
    httpc_servers servers; /* its own list: httpc_servers is not shared between threads */
} waiter;

/* One vendor library in use (discovery mode): its cards come first-come in the node's indexes. */
typedef struct backend {
    const accel_ops *ops;
    void *h;
    accel_gpu *gpus;
    int n;
    int base;        /* node-wide index of its first card */
    char driver[80]; /* the driver version its discovery reported */
} backend;

typedef struct agent {
    const agent_config *cfg;
    httpc_servers *servers; /* cfg->server parsed; servers->cur answered last */
    runner *run; /* workload processes of every node */
    anode *nodes;
    int n;
    backend back[3]; /* discovery mode: one per vendor with cards (accel.h) */
    int nback;
    pthread_mutex_t tok_mu; /* nodes' tokens: the loop writes them, waiters read them */
    pthread_cond_t tok_cv;  /* broadcast when a token is set and at the stop (under tok_mu) */
    pthread_t main_th;      /* woken with SIGUSR1 */
    atomic_int stopping;
    waiter *waiters;
    int nwaiters;
} agent;

#define WAIT_MAX_NODES 16 /* long polls at most: each holds a connection, and the server caps them per
                          * address (--max-connections-per-ip, 128 by default) */
#define WAIT_S 3          /* one long poll's length: an agent stop waits for it at most */
/* a start or exit is reported this long after it is seen, so that the exits of workloads
 * started together (and a start with a quick exit) go in one heartbeat */
#define EVENT_BATCH_US 5000

static int mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(buf, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

/*
 * Make the state folder (0700; runner_set_identity sets its final mode) and
 * the folders above it that do not exist yet, those 0711 whatever the umask:
 * jobs that run as uids of their own cross them to reach their folders (and
 * cannot list them).  A folder that exists already is left as it is
 * (runner_check_reach says so when jobs cannot cross it).
 */
static int make_state_dir(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0711) == 0) {
            if (chmod(buf, 0711) != 0) return -1;
        } else if (errno != EEXIST) {
            return -1;
        }
        *p = '/';
    }
    return (mkdir(buf, 0700) != 0 && errno != EEXIST) ? -1 : 0;
}

static char *read_token(const char *dir, const char *node) {
    char path[4096], buf[256];
    snprintf(path, sizeof path, "%s/%s.token", dir, node);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *out = NULL;
    if (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = '\0';
        if (*buf) out = strdup(buf);
    }
    fclose(f);
    return out;
}

static int write_token(const char *dir, const char *node, const char *token) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s.token", dir, node);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    size_t n = strlen(token);
    int ok = write(fd, token, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---- NVML nodes ---- */

static void host_node_name(const agent_config *cfg, char out[64]) {
    char host[256] = "node";
    if (cfg->node_name) {
        snprintf(out, 64, "%s", cfg->node_name);
        return;
    }
    gethostname(host, sizeof host);
    size_t j = 0;
    for (size_t i = 0; host[i] && j < 50; i++) {
        char c = host[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out[j++] = c;
        else if (j && out[j - 1] != '-') out[j++] = '-';
    }
    while (j && out[j - 1] == '-') j--;
    out[j] = '\0';
    if (!j) snprintf(out, 64, "node");
}

/* The report entry of one discovered card; node-wide index `idx`. */
static json_t *card_report(const backend *b, int k, int idx) {
    const accel_gpu *g = &b->gpus[k];
    json_t *slices = json_array(), *topo = json_object(), *stack = json_object();
    for (int j = 0; j < g->nslices && j < ACCEL_MAX_SLICES; j++) {
        json_t *sl = json_pack("{s:s,s:s,s:I}", "uuid", g->slices[j].uuid, "profile",
                               g->slices[j].profile, "memory_mib",
                               (json_int_t)(g->slices[j].memory_bytes >> 20));
        if (g->slices[j].index >= 0)
            json_object_set_new(sl, "device_index", json_integer(g->slices[j].index));
        json_array_append_new(slices, sl);
    }
    for (int j = 0; j < b->n && j < ACCEL_MAX_GPUS; j++)
        if (j != k && g->topology[j] >= 0)
            json_object_set_new(topo, b->gpus[j].uuid, json_integer(g->topology[j]));
    if (g->runtime[0] && g->runtime_version[0])
        json_object_set_new(stack, g->runtime, json_string(g->runtime_version));
    json_t *e = json_pack("{s:s,s:i,s:s,s:I,s:s,s:i,s:s,s:b,s:s,s:o,s:o,s:s,s:s,s:o}", "uuid",
                          g->uuid, "index", idx, "model", g->name[0] ? g->name : "unknown",
                          "memory_mib", (json_int_t)(g->memory_bytes >> 20), "pci_bus", g->pci_bus,
                          "numa", g->numa, "compute_cap", g->compute_cap, "mig_capable",
                          g->mig_capable, "mig_mode", g->mig_enabled ? "enabled" : "disabled",
                          "slices", slices, "topology", topo, "vendor", b->ops->vendor,
                          "driver_version", g->driver_version, "stack", stack);
    if (g->module_id >= 0) json_object_set_new(e, "module_id", json_integer(g->module_id));
    if (idx != (int)g->index) json_object_set_new(e, "vendor_index", json_integer((int)g->index));
    return e;
}

/* The node's report from every vendor in use (source and driver: the first vendor's). */
static json_t *hw_report(agent *a, const char *name) {
    struct sysinfo si;
    long long mem_gib = sysinfo(&si) == 0 ? (long long)si.totalram * si.mem_unit >> 30 : 0;
    char host[256] = "";
    gethostname(host, sizeof host);
    json_t *gpus = json_array();
    for (int v = 0; v < a->nback; v++)
        for (int k = 0; k < a->back[v].n; k++)
            if (a->back[v].gpus[k].uuid[0]) /* lost before it told its UUID: not reported */
                json_array_append_new(gpus, card_report(&a->back[v], k, a->back[v].base + k));
    return json_pack("{s:s,s:s,s:I,s:I,s:{},s:s,s:s,s:o}", "name", name, "hostname", host, "cpus",
                     (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "memory_gib",
                     (json_int_t)mem_gib, "labels", "driver_version",
                     a->nback ? a->back[0].driver : "", "source",
                     a->nback ? a->back[0].ops->source : "nvml", "gpus", gpus);
}

static json_t *num_or_skip(long long v) { return v < 0 ? NULL : json_integer(v); }

static json_t *nvml_signals(const accel_gpu *g) {
    json_t *s = json_object(), *ecc = json_object(), *rr = json_object(), *ut = json_object();
    json_t *v;
    if ((v = num_or_skip(g->ecc_volatile_corrected))) json_object_set_new(ecc, "volatile_corrected", v);
    if ((v = num_or_skip(g->ecc_volatile_uncorrected))) json_object_set_new(ecc, "volatile_uncorrected", v);
    if ((v = num_or_skip(g->ecc_aggregate_corrected))) json_object_set_new(ecc, "aggregate_corrected", v);
    if ((v = num_or_skip(g->ecc_aggregate_uncorrected))) json_object_set_new(ecc, "aggregate_uncorrected", v);
    if ((v = num_or_skip(g->remapped_correctable))) json_object_set_new(rr, "correctable", v);
    if ((v = num_or_skip(g->remapped_uncorrectable))) json_object_set_new(rr, "uncorrectable", v);
    json_object_set_new(rr, "pending", json_boolean(g->remap_pending > 0));
    json_object_set_new(rr, "failure", json_boolean(g->remap_failure > 0));
    if (g->util_gpu >= 0) json_object_set_new(ut, "gpu", json_integer(g->util_gpu));
    if (g->util_memory >= 0) json_object_set_new(ut, "memory", json_integer(g->util_memory));
    json_object_set_new(s, "ecc", ecc);
    json_object_set_new(s, "remapped_rows", rr);
    json_object_set_new(s, "utilization", ut);
    if (g->retired_pages_pending >= 0)
        json_object_set_new(s, "retired_pages_pending", json_integer(g->retired_pages_pending));
    json_object_set_new(s, "temperature_c", json_integer(g->temperature_c));
    json_object_set_new(s, "slowdown_c", json_integer(g->slowdown_c));
    json_t *x = json_array();
    for (int i = 0; i < g->nxids; i++) json_array_append_new(x, json_integer(g->xids[i]));
    json_object_set_new(s, "xids", x);
    json_object_set_new(s, "lost", json_boolean(g->lost));
    /* telemetry (inventory/telemetry.h) */
    if (g->memory_used_bytes >= 0)
        json_object_set_new(s, "memory_used_mib", json_integer(g->memory_used_bytes / 1048576));
    if (g->power_mw >= 0) json_object_set_new(s, "power_mw", json_integer(g->power_mw));
    json_object_set_new(s, "xid_total", json_integer(g->xid_total));
    return s;
}

/* AMD: ECC totals, deferred errors and bad pages from AMD SMI (VENDORS.md). */
static json_t *amd_signals(const accel_gpu *g) {
    json_t *s = json_object(), *ecc = json_object(), *ut = json_object(), *v;
    if ((v = num_or_skip(g->ecc_aggregate_corrected))) json_object_set_new(ecc, "aggregate_corrected", v);
    if ((v = num_or_skip(g->ecc_aggregate_uncorrected))) json_object_set_new(ecc, "aggregate_uncorrected", v);
    if ((v = num_or_skip(g->ecc_deferred))) json_object_set_new(ecc, "deferred", v);
    if (g->util_gpu >= 0) json_object_set_new(ut, "gpu", json_integer(g->util_gpu));
    if (g->util_memory >= 0) json_object_set_new(ut, "memory", json_integer(g->util_memory));
    json_object_set_new(s, "ecc", ecc);
    json_object_set_new(s, "utilization", ut);
    if ((v = num_or_skip(g->bad_pages))) json_object_set_new(s, "bad_pages", v);
    json_t *ras = json_object();
    for (int b = 0; b < ACCEL_RAS_BLOCKS; b++)
        if ((v = num_or_skip(g->ras_uncorrectable[b])))
            json_object_set_new(ras, accel_ras_blocks[b].name, v);
    if (json_object_size(ras)) json_object_set_new(s, "ras", ras);
    else json_decref(ras);
    json_object_set_new(s, "temperature_c", json_integer(g->temperature_c));
    json_object_set_new(s, "slowdown_c", json_integer(g->slowdown_c));
    json_object_set_new(s, "lost", json_boolean(g->lost));
    if (g->memory_used_bytes >= 0)
        json_object_set_new(s, "memory_used_mib", json_integer(g->memory_used_bytes / 1048576));
    if (g->power_mw >= 0) json_object_set_new(s, "power_mw", json_integer(g->power_mw));
    return s;
}

/* Intel Gaudi: ECC from HLML, critical events of this refresh and their running total. */
static json_t *intel_signals(const accel_gpu *g) {
    json_t *s = json_object(), *ecc = json_object(), *ut = json_object(), *v;
    if ((v = num_or_skip(g->ecc_volatile_corrected))) json_object_set_new(ecc, "volatile_corrected", v);
    if ((v = num_or_skip(g->ecc_volatile_uncorrected))) json_object_set_new(ecc, "volatile_uncorrected", v);
    if ((v = num_or_skip(g->ecc_aggregate_corrected))) json_object_set_new(ecc, "aggregate_corrected", v);
    if ((v = num_or_skip(g->ecc_aggregate_uncorrected))) json_object_set_new(ecc, "aggregate_uncorrected", v);
    if (g->util_gpu >= 0) json_object_set_new(ut, "gpu", json_integer(g->util_gpu));
    json_object_set_new(s, "ecc", ecc);
    json_object_set_new(s, "utilization", ut);
    json_object_set_new(s, "temperature_c", json_integer(g->temperature_c));
    json_object_set_new(s, "slowdown_c", json_integer(g->slowdown_c));
    json_t *c = json_array();
    for (int i = 0; i < g->ncritical && i < ACCEL_MAX_EVENTS; i++)
        json_array_append_new(c, json_integer(g->critical[i]));
    json_object_set_new(s, "critical_events", c);
    json_object_set_new(s, "critical_total", json_integer(g->critical_total));
    json_object_set_new(s, "lost", json_boolean(g->lost));
    if (g->memory_used_bytes >= 0)
        json_object_set_new(s, "memory_used_mib", json_integer(g->memory_used_bytes / 1048576));
    if (g->power_mw >= 0) json_object_set_new(s, "power_mw", json_integer(g->power_mw));
    return s;
}

/* A discovered card's heartbeat signals, in its vendor's keys. */
static json_t *card_signals(const char *vendor, const accel_gpu *g) {
    if (strcmp(vendor, "amd") == 0) return amd_signals(g);
    if (strcmp(vendor, "intel") == 0) return intel_signals(g);
    return nvml_signals(g);
}

/* ---- simulated signals and injected faults ---- */

/*
 * Simulated telemetry: deterministic but varying with the node, the GPU and the heartbeat
 * (utilisation 20-80 %, memory in use in step with it, 40-55 C, 60-300 W); an injected
 * "set" overrides any of it.
 */
static void sim_telemetry(anode *nd, const char *idx, json_t *s) {
    unsigned h = 2166136261u;
    for (const char *p = nd->name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    unsigned k = (unsigned)strtoul(idx, NULL, 10);
    unsigned util = 20 + (h % 13 + 17 * k + 7 * nd->beats) % 61;
    json_int_t mem = 0;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(nd->report, "gpus"), i, g)
        if ((unsigned)json_integer_value(json_object_get(g, "index")) == k)
            mem = json_integer_value(json_object_get(g, "memory_mib"));
    json_object_set_new(json_object_get(s, "utilization"), "gpu", json_integer(util));
    json_object_set_new(json_object_get(s, "utilization"), "memory", json_integer(util / 2));
    json_object_set_new(s, "temperature_c", json_integer(40 + util / 5));
    json_object_set_new(s, "memory_used_mib", json_integer(mem * util / 100));
    json_object_set_new(s, "power_mw", json_integer(60000 + util * 3000));
}

/* The vendor of simulated GPU `idx` (its index as text) from the node's report; "nvidia". */
static const char *sim_vendor(anode *nd, const char *idx) {
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(nd->report, "gpus"), i, g) {
        char buf[16];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(json_object_get(g, "index")));
        const char *v = json_string_value(json_object_get(g, "vendor"));
        if (strcmp(buf, idx) == 0) return v ? v : "nvidia";
    }
    return "nvidia";
}

/*
 * A simulated GPU's healthy signals in its vendor's keys (VENDORS.md), the
 * varying telemetry, then the injected overrides; events (Xids, Gaudi
 * critical events) pending since the last answered heartbeat.
 */
static json_t *sim_signals(anode *nd, const char *idx) {
    const char *vendor = sim_vendor(nd, idx);
    json_t *s;
    if (strcmp(vendor, "amd") == 0) {
        s = json_pack("{s:{s:i,s:i,s:i},s:i,s:i,s:i,s:{s:i,s:i},s:b}", "ecc",
                      "aggregate_corrected", 0, "aggregate_uncorrected", 0, "deferred", 0,
                      "bad_pages", 0, "temperature_c", 40, "slowdown_c", 100, "utilization",
                      "gpu", 0, "memory", 0, "lost", 0);
    } else if (strcmp(vendor, "intel") == 0) {
        s = json_pack("{s:{s:i,s:i,s:i},s:i,s:i,s:{s:i},s:b}", "ecc", "volatile_uncorrected", 0,
                      "aggregate_uncorrected", 0, "aggregate_corrected", 0, "temperature_c", 40,
                      "slowdown_c", 95, "utilization", "gpu", 0, "lost", 0);
    } else {
        s = json_pack("{s:{s:i,s:i,s:i,s:i},s:{s:i,s:i,s:b,s:b},s:i,s:i,s:i,s:{s:i,s:i},s:b}",
                      "ecc", "volatile_corrected", 0, "volatile_uncorrected", 0,
                      "aggregate_corrected", 0, "aggregate_uncorrected", 0, "remapped_rows",
                      "correctable", 0, "uncorrectable", 0, "pending", 0, "failure", 0,
                      "retired_pages_pending", 0, "temperature_c", 40, "slowdown_c", 90,
                      "utilization", "gpu", 0, "memory", 0, "lost", 0);
    }
    sim_telemetry(nd, idx, s);
    if (strcmp(vendor, "intel") == 0) json_object_del(json_object_get(s, "utilization"), "memory");
    json_t *ov = json_object_get(nd->overrides, idx);
    const char *k;
    json_t *v;
    json_object_foreach(ov, k, v) {
        json_t *cur = json_object_get(s, k);
        if (json_is_object(cur) && json_is_object(v)) json_object_update(cur, v);
        else json_object_set(s, k, v);
    }
    if (strcmp(vendor, "nvidia") == 0) {
        json_t *x = json_object_get(nd->pending_xids, idx), *t = json_object_get(nd->xid_totals, idx);
        json_object_set_new(s, "xids", x ? json_deep_copy(x) : json_array());
        json_object_set_new(s, "xid_total", json_integer(t ? json_integer_value(t) : 0));
    } else if (strcmp(vendor, "intel") == 0) {
        json_t *c = json_object_get(nd->pending_crit, idx), *t = json_object_get(nd->crit_totals, idx);
        json_object_set_new(s, "critical_events", c ? json_deep_copy(c) : json_array());
        json_object_set_new(s, "critical_total", json_integer(t ? json_integer_value(t) : 0));
    }
    return s;
}

/*
 * A process as the server wants it: {pid, job (null: none of ours),
 * memory_mib, sm_pct}, the job found from the pid the way a real card's
 * processes are (runner_job_of_pid).
 */
static json_t *process_entry(agent *a, const char *node, pid_t pid, long long mem, int sm) {
    char job[40];
    json_t *p = json_pack("{s:i}", "pid", (int)pid);
    json_object_set_new(p, "job", runner_job_of_pid(a->run, node, pid, job) ? json_string(job)
                                                                              : json_null());
    if (mem >= 0) json_object_set_new(p, "memory_mib", json_integer(mem));
    if (sm >= 0) json_object_set_new(p, "sm_pct", json_integer(sm));
    return p;
}

/* Injected figures: an entry names a pid, or a job whose workload's pid stands for it. */
static json_t *sim_processes(agent *a, anode *nd, json_t *injected) {
    json_t *out = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(injected, i, p) {
        const char *job = json_string_value(json_object_get(p, "job"));
        pid_t pid = job ? runner_pid_of_job(a->run, nd->name, job)
                        : (pid_t)json_integer_value(json_object_get(p, "pid"));
        if (job && !pid) continue; /* that job does not run here (yet, or any more) */
        json_t *m = json_object_get(p, "memory_mib"), *u = json_object_get(p, "sm_pct");
        json_array_append_new(out, process_entry(a, nd->name, pid,
                                                 m ? (long long)json_integer_value(m) : -1,
                                                 u ? (int)json_integer_value(u) : -1));
    }
    return out;
}

/* Index (as text) of GPU `gpu` (uuid or index) in a report; NULL if unknown. */
static const char *gpu_index(anode *nd, const char *gpu, char buf[16]) {
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(nd->report, "gpus"), i, g) {
        snprintf(buf, 16, "%lld", (long long)json_integer_value(json_object_get(g, "index")));
        if (strcmp(gpu, buf) == 0 || strcmp(gpu, json_string_value(json_object_get(g, "uuid"))) == 0)
            return buf;
    }
    return NULL;
}

const char *agent_fault_misfit(const char *vendor, json_t *fault) {
    int nv = vendor && strcmp(vendor, "nvidia") == 0, amd = vendor && strcmp(vendor, "amd") == 0,
        intel = vendor && strcmp(vendor, "intel") == 0;
    json_t *set = json_object_get(fault, "set"), *x = json_object_get(fault, "xids");
    if (!nv && json_array_size(x)) return "--xid";
    if (!nv && json_object_get(set, "remapped_rows")) return "--remap-pending/--remap-failure";
    if (!nv && json_object_get(set, "retired_pages_pending")) return "--retired-pending";
    if (!amd && json_object_get(set, "bad_pages")) return "--bad-pages";
    if (!intel && json_object_get(fault, "critical")) return "--critical";
    return NULL;
}

/* <state>/cards/<node>.json: the simulated node's cards, so `agent inject` can check a fault. */
static void write_cards(const char *state_dir, anode *nd) {
    char dir[4096], path[4200], tmp[4300];
    snprintf(dir, sizeof dir, "%s/cards", state_dir);
    if (mkdir_p(dir) != 0) return;
    snprintf(path, sizeof path, "%s/%s.json", dir, nd->name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *list = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(nd->report, "gpus"), i, g) {
        const char *v = json_string_value(json_object_get(g, "vendor"));
        json_array_append_new(list, json_pack("{s:O,s:O,s:s}", "index", json_object_get(g, "index"),
                                              "uuid", json_object_get(g, "uuid"), "vendor",
                                              v ? v : "nvidia"));
    }
    json_t *doc = json_pack("{s:o}", "gpus", list);
    if (json_dump_file(doc, tmp, JSON_COMPACT) != 0 || rename(tmp, path) != 0) unlink(tmp);
    json_decref(doc);
}

/* Consume the .json files of <state>/inject/<node>/ in name order. */
static void consume_faults(agent *a, anode *nd) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/inject/%s", a->cfg->state_dir, nd->name);
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        char path[8192], buf[16];
        const char *fn = list[i]->d_name;
        size_t len = strlen(fn);
        if (len > 5 && strcmp(fn + len - 5, ".json") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, fn);
            json_t *f = json_load_file(path, 0, NULL);
            unlink(path);
            const char *gpu = json_string_value(json_object_get(f, "gpu"));
            const char *idx = gpu ? gpu_index(nd, gpu, buf) : NULL;
            const char *vendor = idx ? sim_vendor(nd, idx) : "nvidia";
            const char *misfit = f && idx ? agent_fault_misfit(vendor, f) : NULL;
            if (misfit) {
                log_kv(LOG_WARN, "injected fault does not fit the card's vendor; dropped", "node",
                       nd->name, "gpu", gpu, "vendor", vendor, "option", misfit, (char *)NULL);
            } else if (f && idx) {
                if (json_is_true(json_object_get(f, "clear"))) {
                    json_object_del(nd->overrides, idx);
                    /* the GPU keeps reporting, now without processes, so strikes reset */
                    if (json_object_get(nd->procs, idx))
                        json_object_set_new(nd->procs, idx, json_array());
                }
                json_t *pr = json_object_get(f, "processes");
                if (json_is_array(pr)) json_object_set(nd->procs, idx, pr);
                json_t *set = json_object_get(f, "set");
                if (json_is_object(set)) {
                    json_t *cur = json_object_get(nd->overrides, idx);
                    if (!cur) json_object_set_new(nd->overrides, idx, cur = json_object());
                    json_t *ecc = json_object_get(set, "ecc"), *vu;
                    /* AMD SMI counts only totals: a double-bit error lands there */
                    if (strcmp(vendor, "amd") == 0 && json_is_object(ecc) &&
                        (vu = json_object_get(ecc, "volatile_uncorrected"))) {
                        json_object_set(ecc, "aggregate_uncorrected", vu);
                        json_object_del(ecc, "volatile_uncorrected");
                    }
                    json_object_update(cur, set);
                }
                json_t *crit = json_object_get(f, "critical");
                if (json_is_integer(crit) && json_integer_value(crit) > 0) {
                    json_int_t nc = json_integer_value(crit);
                    json_t *cur = json_object_get(nd->pending_crit, idx);
                    if (!cur) json_object_set_new(nd->pending_crit, idx, cur = json_array());
                    for (json_int_t c = 0; c < nc && json_array_size(cur) < 16; c++)
                        json_array_append_new(cur, json_integer(2)); /* HLML_EVENT_CRITICAL_ERR */
                    json_t *t = json_object_get(nd->crit_totals, idx);
                    json_object_set_new(nd->crit_totals, idx,
                                        json_integer((t ? json_integer_value(t) : 0) + nc));
                }
                json_t *x = json_object_get(f, "xids");
                if (json_is_array(x) && json_array_size(x)) {
                    json_t *cur = json_object_get(nd->pending_xids, idx);
                    if (!cur) json_object_set_new(nd->pending_xids, idx, cur = json_array());
                    json_array_extend(cur, x);
                    json_t *t = json_object_get(nd->xid_totals, idx);
                    json_object_set_new(nd->xid_totals, idx,
                                        json_integer((t ? json_integer_value(t) : 0) +
                                                     (json_int_t)json_array_size(x)));
                }
                log_kv(LOG_INFO, "fault injected", "node", nd->name, "gpu", gpu, (char *)NULL);
            } else if (f) {
                log_kv(LOG_WARN, "injected fault names an unknown GPU", "node", nd->name, "gpu",
                       gpu ? gpu : "-", (char *)NULL);
            }
            json_decref(f);
        }
        free(list[i]);
    }
    if (n >= 0) free(list);
}

int agent_inject(const char *state_dir, const char *node, const char *gpu, json_t *fault,
                 gp_err *err) {
    char dir[4096], tmp[8192], path[8192], id[RND_ID_LEN];
    /* the card's vendor, where a simulating agent recorded its cards (write_cards) */
    snprintf(dir, sizeof dir, "%s/cards/%s.json", state_dir, node);
    json_t *cards = json_load_file(dir, 0, NULL);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cards, "gpus"), i, c) {
        char ix[32];
        snprintf(ix, sizeof ix, "%lld", (long long)json_integer_value(json_object_get(c, "index")));
        const char *uuid = json_string_value(json_object_get(c, "uuid"));
        if (strcmp(gpu, ix) != 0 && !(uuid && strcmp(gpu, uuid) == 0)) continue;
        const char *vendor = json_string_value(json_object_get(c, "vendor"));
        const char *misfit = agent_fault_misfit(vendor, fault);
        if (misfit) {
            int r = gp_err_set(err, GP_EINVALID,
                               "gpu %s of node %s is %s %s card: %s does not apply to it", gpu,
                               node, vendor && strcmp(vendor, "amd") == 0 ? "an" : "a",
                               vendor && strcmp(vendor, "amd") == 0     ? "AMD"
                               : vendor && strcmp(vendor, "intel") == 0 ? "Intel Gaudi"
                                                                        : "NVIDIA",
                               misfit);
            json_decref(cards);
            return r;
        }
        break;
    }
    json_decref(cards);
    snprintf(dir, sizeof dir, "%s/inject/%s", state_dir, node);
    if (mkdir_p(dir) != 0)
        return gp_err_set(err, GP_EIO, "cannot create %s: %s", dir, strerror(errno));
    rnd_id(id);
    /* time first so the agent applies faults in the order they were injected */
    snprintf(path, sizeof path, "%s/%016lld-%s.json", dir, (long long)gt_now_us(), id);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, id);
    json_t *f = json_deep_copy(fault);
    json_object_set_new(f, "gpu", json_string(gpu));
    int rc = json_dump_file(f, tmp, JSON_COMPACT);
    json_decref(f);
    if (rc != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return gp_err_set(err, GP_EIO, "cannot write %s", path);
    }
    return GP_OK;
}

/* ---- talking to the server ---- */

/*
 * How long one call may wait for its answer.  Well below the server's
 * --node-timeout (default 30 s): a server that hangs costs one call, then
 * the next goes to another server (httpc_json_failover), before the node
 * could be taken for lost.
 */
#define CALL_TIMEOUT_S 10

/* httpc_json_failover() on the agent's servers; logs a switch to another server. */
static int call(agent *a, const char *path, const char *token, json_t *body, long *status,
                json_t **resp, gp_err *err) {
    size_t before = a->servers->cur;
    int rc = httpc_json_failover(a->servers, path, "POST", token, body, CALL_TIMEOUT_S, status,
                                 resp, err);
    if (a->servers->cur != before)
        log_kv(LOG_WARN, "switched to another server", "from", a->servers->urls[before], "to",
               a->servers->urls[a->servers->cur], (char *)NULL);
    return rc;
}

static int join(agent *a, anode *nd) {
    gp_err err = GP_ERR_INIT;
    json_t *resp;
    long status;
    if (!a->cfg->join_token) {
        log_kv(LOG_ERROR, "node has no credential and no join token was given", "node", nd->name,
               (char *)NULL);
        return -1;
    }
    json_t *body = json_pack("{s:s,s:O}", "join_token", a->cfg->join_token, "node", nd->report);
    int rc = call(a, "/api/v1/agent/register", NULL, body, &status, &resp, &err);
    json_decref(body);
    if (rc) {
        log_kv(LOG_WARN, "join failed", "node", nd->name, "detail", err.msg, (char *)NULL);
        return -1;
    }
    const char *tok = json_string_value(json_object_get(resp, "token"));
    if (status != 201 || !tok) {
        const char *msg =
            json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
        char st[16];
        snprintf(st, sizeof st, "%ld", status);
        log_kv(LOG_ERROR, "join refused", "node", nd->name, "status", st, "detail",
               msg ? msg : "-", (char *)NULL);
        json_decref(resp);
        return -1;
    }
    pthread_mutex_lock(&a->tok_mu);
    free(nd->token);
    nd->token = strdup(tok);
    pthread_cond_broadcast(&a->tok_cv); /* its waiter starts its long poll now */
    pthread_mutex_unlock(&a->tok_mu);
    nd->reported = 1; /* joining carried the report */
    json_decref(resp);
    if (write_token(a->cfg->state_dir, nd->name, nd->token) != 0)
        log_kv(LOG_WARN, "cannot store the node credential", "node", nd->name, (char *)NULL);
    log_kv(LOG_INFO, "node joined", "node", nd->name, (char *)NULL);
    return 0;
}

static int heartbeat(agent *a, anode *nd) {
    gp_err err = GP_ERR_INIT;
    json_t *resp, *gpus = json_array();
    long status;
    size_t i;
    json_t *g;
    if (a->nback) {
        for (int v = 0; v < a->nback; v++) {
            backend *b = &a->back[v];
            b->ops->health(b->h, b->gpus, b->n, &err);
            for (int k = 0; k < b->n; k++) {
                if (!b->gpus[k].uuid[0]) continue; /* not in the report (hw_report) */
                json_t *e = json_pack("{s:s,s:o}", "uuid", b->gpus[k].uuid, "signals",
                                      card_signals(b->ops->vendor, &b->gpus[k]));
                /* who uses the card, for the server's interference judgement */
                accel_proc *pr = NULL;
                int np = 0;
                if (b->ops->processes(b->h, &b->gpus[k], &pr, &np, &err) == GP_OK) {
                    json_t *list = json_array();
                    for (int p = 0; p < np; p++)
                        json_array_append_new(list, process_entry(a, nd->name, (pid_t)pr[p].pid,
                                                                  pr[p].memory_mib, pr[p].sm_pct));
                    json_object_set_new(e, "processes", list);
                }
                free(pr);
                json_array_append_new(gpus, e);
            }
        }
    } else {
        consume_faults(a, nd);
        nd->beats++;
        json_array_foreach(json_object_get(nd->report, "gpus"), i, g) {
            char idx[16];
            snprintf(idx, sizeof idx, "%lld", (long long)json_integer_value(json_object_get(g, "index")));
            json_t *e = json_pack("{s:O,s:o}", "uuid", json_object_get(g, "uuid"), "signals",
                                  sim_signals(nd, idx));
            json_t *pr = json_object_get(nd->procs, idx);
            if (pr) json_object_set_new(e, "processes", sim_processes(a, nd, pr));
            json_array_append_new(gpus, e);
        }
    }
    runner_tick(a->run);
    json_t *body = json_pack("{s:s,s:o,s:o}", "node", nd->name, "gpus", gpus, "workloads",
                             runner_report(a->run, nd->name));
    if (!nd->reported) json_object_set(body, "report", nd->report);
    int rc = call(a, "/api/v1/agent/heartbeat", nd->token, body, &status, &resp, &err);
    json_decref(body);
    if (rc) {
        log_kv(LOG_WARN, "heartbeat failed", "node", nd->name, "detail", err.msg, (char *)NULL);
        return -1;
    }
    if (status == 200) {
        /* the server has our exits; run what it assigns, stop what it no longer does */
        runner_ack(a->run, nd->name);
        json_t *as = json_object_get(resp, "assignments");
        if (json_is_array(as)) runner_localize(as, nd->report); /* its devices' numbers here */
        if (json_is_array(as) && runner_apply(a->run, nd->name, as) > 0)
            nd->dirty = 1; /* report the start at once */
    }
    if (status != 200) {
        const char *msg =
            json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
        char st[16];
        snprintf(st, sizeof st, "%ld", status);
        log_kv(LOG_WARN, "heartbeat refused", "node", nd->name, "status", st, "detail",
               msg ? msg : "-", (char *)NULL);
    }
    json_decref(resp);
    if (status == 401 || status == 404) {
        /* credential revoked or node forgotten: join again next round */
        log_kv(LOG_WARN, "credential refused; will join again", "node", nd->name, (char *)NULL);
        pthread_mutex_lock(&a->tok_mu);
        free(nd->token);
        nd->token = NULL;
        pthread_mutex_unlock(&a->tok_mu);
        return -1;
    }
    if (status != 200) return -1;
    nd->reported = 1;
    /* Xids and critical events are events: sent once */
    json_object_clear(nd->pending_xids);
    json_object_clear(nd->pending_crit);
    return 0;
}

static void event_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGCHLD);
}

/* Wait up to `us` for a stop (returns 1) or an event (SIGUSR1, SIGCHLD: returns 0). */
static int wait_or_stop(int64_t us) {
    sigset_t set;
    event_signals(&set);
    if (us < 0) us = 0;
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    int sig = sigtimedwait(&set, NULL, &ts);
    return sig == SIGTERM || sig == SIGINT;
}

/* Sleep up to `seconds`, in steps, until the agent stops. */
static void waiter_pause(agent *a, int seconds) {
    for (int i = 0; i < seconds * 10 && !atomic_load(&a->stopping); i++) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* A node's long poll: on a change, flag the node and wake the loop. */
static void *waiter_main(void *arg) {
    waiter *w = arg;
    agent *a = w->a;
    json_int_t seen = -1; /* the first answer comes at once: the loop heartbeats */
    while (!atomic_load(&a->stopping)) {
        char *tok = NULL;
        pthread_mutex_lock(&a->tok_mu);
        if (!w->nd->token && !atomic_load(&a->stopping)) {
            /* not joined yet: the join wakes us (a 1 s bound all the same) */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&a->tok_cv, &a->tok_mu, &ts);
        }
        if (w->nd->token) tok = strdup(w->nd->token);
        pthread_mutex_unlock(&a->tok_mu);
        if (!tok) continue;
        gp_err err = GP_ERR_INIT;
        long status = 0;
        json_t *resp = NULL;
        json_t *body = json_pack("{s:s,s:I,s:i}", "node", w->nd->name, "seen", seen, "timeout_s",
                                 WAIT_S);
        int rc = httpc_json_failover(&w->servers, "/api/v1/agent/wait", "POST", tok, body,
                                     WAIT_S + CALL_TIMEOUT_S, &status, &resp, &err);
        json_decref(body);
        free(tok);
        if (rc || status != 200 || !json_is_true(json_object_get(resp, "events"))) {
            /* unreachable, refused, or a server without the notifier: the heartbeats carry
             * the assignments meanwhile */
            json_decref(resp);
            seen = -1;
            waiter_pause(a, a->cfg->interval_s > 0 ? a->cfg->interval_s : 5);
            continue;
        }
        seen = json_integer_value(json_object_get(resp, "version"));
        int changed = json_is_true(json_object_get(resp, "changed"));
        json_decref(resp);
        if (changed) {
            atomic_store(&w->nd->woke, 1);
            pthread_kill(a->main_th, SIGUSR1);
        }
    }
    return NULL;
}

/* Close every vendor library in use and free its cards. */
static void close_all(agent *a) {
    for (int v = 0; v < a->nback; v++) {
        free(a->back[v].gpus);
        a->back[v].ops->close(a->back[v].h);
    }
    a->nback = 0;
}

/*
 * Open the vendor libraries cfg->vendor names ("auto": NVML, AMD SMI, HLML in
 * turn, keeping each that finds cards; a vendor's own name: that one alone,
 * its failure an error) and discover their cards into a->back.
 */
static int discover_all(const agent_config *cfg, agent *a, gp_err *err) {
    static const accel_ops *const order[] = {&accel_nvml_ops, &accel_amdsmi_ops, &accel_hlml_ops};
    const char *want = cfg->vendor && *cfg->vendor ? cfg->vendor : "auto";
    int any = strcmp(want, "auto") == 0;
    int first_rc = GP_OK, opened_empty = -1;
    for (int v = 0; v < 3; v++) {
        const accel_ops *ops = order[v];
        if (!any && strcmp(want, ops->vendor) != 0) continue;
        const char *path = v == 0 ? cfg->nvml_path : v == 1 ? cfg->amdsmi_path : cfg->hlml_path;
        gp_err e = GP_ERR_INIT;
        void *h = NULL;
        int rc = ops->open(path, &h, &e);
        if (rc == GP_OK) {
            backend *b = &a->back[a->nback];
            memset(b, 0, sizeof *b);
            b->ops = ops;
            b->h = h;
            rc = ops->discover(h, &b->gpus, &b->n, b->driver, &e);
            if (rc == GP_OK && (b->n > 0 || !any)) {
                b->base = a->nback ? a->back[a->nback - 1].base + a->back[a->nback - 1].n : 0;
                a->nback++;
                continue;
            }
            if (rc == GP_OK && opened_empty < 0) {
                opened_empty = v; /* kept only if no vendor finds a card (as before: 0 GPUs) */
                ops->close(h);
                continue;
            }
            ops->close(h);
            if (rc == GP_OK) continue;
            free(b->gpus);
            b->gpus = NULL;
        }
        if (!any) {
            close_all(a);
            return gp_err_set(err, rc, "%.150s; on a machine without %s cards declare them "
                                       "with --inventory FILE (or simulate with --simulate N)",
                              e.msg, v == 0 ? "NVIDIA" : v == 1 ? "AMD" : "Intel Gaudi");
        }
        log_kv(LOG_DEBUG, "accelerator library not usable", "library", ops->label, "detail",
               e.msg, (char *)NULL);
        if (!first_rc) first_rc = rc;
    }
    if (a->nback) return GP_OK;
    if (opened_empty >= 0) { /* a library answered but found no card: report none, as before */
        backend *b = &a->back[0];
        memset(b, 0, sizeof *b);
        b->ops = order[opened_empty];
        const char *path = opened_empty == 0 ? cfg->nvml_path
                           : opened_empty == 1 ? cfg->amdsmi_path : cfg->hlml_path;
        int rc = b->ops->open(path, &b->h, err);
        if (rc == GP_OK) rc = b->ops->discover(b->h, &b->gpus, &b->n, b->driver, err);
        if (rc != GP_OK) {
            if (b->h) b->ops->close(b->h);
            return rc;
        }
        a->nback = 1;
        return GP_OK;
    }
    /* each library's reason was logged at debug level */
    return gp_err_set(err, first_rc ? first_rc : GP_EUNSUPPORTED,
                      "no NVIDIA (NVML), AMD (AMD SMI) or Intel Gaudi (HLML) library could be "
                      "loaded (--log-level debug says why); on a machine without such cards "
                      "declare them with --inventory FILE (or simulate with --simulate N)");
}

static int run(const agent_config *cfg, httpc_servers *servers, gp_err *err) {
    agent a;
    memset(&a, 0, sizeof a);
    a.cfg = cfg;
    a.servers = servers;
    json_t *reports = NULL;
    int rc;
    /* no process of our user (a job, where jobs run as the agent) reads our memory or
     * /proc/<pid>/environ, where a join token may be */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (!cfg->print_report && make_state_dir(cfg->state_dir) != 0)
        return gp_err_set(err, GP_EIO, "cannot create state folder %s: %s", cfg->state_dir,
                          strerror(errno));
    if (cfg->inventory || cfg->simulate > 0) {
        if ((rc = agent_inventory_reports(cfg->inventory, cfg->simulate, &reports, err))) return rc;
    } else {
        char name[64];
        if ((rc = discover_all(cfg, &a, err))) return rc;
        host_node_name(cfg, name);
        reports = json_array();
        json_array_append_new(reports, hw_report(&a, name));
    }
    if (cfg->print_report) { /* what would be registered, and nothing else */
        json_dumpf(reports, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        fputc('\n', stdout);
        fflush(stdout);
        json_decref(reports);
        close_all(&a);
        return GP_OK;
    }
    a.run = runner_new(cfg->state_dir, cfg->grace_s);
    int cg = a.run ? runner_set_cgroup(a.run, cfg->cgroup_root) : 0;
    if (a.run && cg == 0 && runner_set_runtime(a.run, cfg->runtime) != 0) {
        runner_free(a.run);
        json_decref(reports);
        close_all(&a);
        return gp_err_set(err, GP_EINVALID,
                          "--runtime %s: no executable file of that name (on PATH, or that path)",
                          cfg->runtime);
    }
    int id = a.run && cg == 0 ? runner_set_identity(a.run, cfg->job_uids) : 0;
    if (id != 0) {
        runner_free(a.run);
        json_decref(reports);
        close_all(&a);
        return id == -2   ? gp_err_set(err, GP_EINVALID,
                                       "--job-uids %s: only an agent running as root can run jobs "
                                       "as other users",
                                       cfg->job_uids)
               : id == -1 ? gp_err_set(err, GP_EINVALID,
                                       "--job-uids %s: want LO-HI, a uid or a user name (not root)",
                                       cfg->job_uids)
                          : gp_err_set(err, GP_EIO, "cannot set the mode of the state folder %s: %s",
                                       cfg->state_dir, strerror(errno));
    }
    char why[1200];
    if (a.run && runner_check_reach(a.run, why, sizeof why) != 0) {
        runner_free(a.run);
        json_decref(reports);
        close_all(&a);
        return gp_err_set(err, GP_EINVALID, "%s", why);
    }
    if (!a.run || cg != 0) {
        runner_free(a.run);
        json_decref(reports);
        close_all(&a);
        if (!a.run) return gp_err_set(err, GP_ENOMEM, NULL);
        return cg == -1 ? gp_err_set(err, GP_EINVALID, "--cgroup %s is not a writable folder",
                                     cfg->cgroup_root)
                        : gp_err_set(err, GP_EINVALID,
                                     "--cgroup %s does not enable the cpu and memory controllers "
                                     "for its children (cgroup.subtree_control)",
                                     cfg->cgroup_root);
    }
    a.n = (int)json_array_size(reports);
    a.nodes = calloc((size_t)a.n, sizeof *a.nodes);
    for (int i = 0; i < a.n; i++) {
        anode *nd = &a.nodes[i];
        nd->report = json_incref(json_array_get(reports, (size_t)i));
        snprintf(nd->name, sizeof nd->name, "%s",
                 json_string_value(json_object_get(nd->report, "name")));
        nd->token = read_token(cfg->state_dir, nd->name);
        nd->overrides = json_object();
        nd->pending_xids = json_object();
        nd->procs = json_object();
        nd->xid_totals = json_object();
        nd->pending_crit = json_object();
        nd->crit_totals = json_object();
        if (!a.nback) write_cards(cfg->state_dir, nd);
    }
    json_decref(reports);
    char count[16];
    snprintf(count, sizeof count, "%d", a.n);
    log_kv(LOG_INFO, "agent started", "nodes", count, "server", cfg->server, "source",
           a.nback ? a.back[0].ops->source : "inventory", (char *)NULL);
    for (int v = 0; v < a.nback; v++) {
        char nc[16];
        snprintf(nc, sizeof nc, "%d", a.back[v].n);
        log_kv(LOG_INFO, "accelerators discovered", "vendor", a.back[v].ops->vendor, "library",
               a.back[v].ops->label, "cards", nc, "driver", a.back[v].driver, (char *)NULL);
        for (int k = 0; k < a.back[v].n; k++) {
            if (a.back[v].gpus[k].uuid[0]) continue;
            char ix[16];
            snprintf(ix, sizeof ix, "%d", a.back[v].base + k);
            log_kv(LOG_WARN, "card lost before it gave its UUID: not reported", "vendor",
                   a.back[v].ops->vendor, "index", ix, (char *)NULL);
        }
    }
    if (cfg->cgroup_root && *cfg->cgroup_root)
        log_kv(LOG_INFO, "workloads get CPU and memory limits", "cgroup", cfg->cgroup_root,
               (char *)NULL);
    else
        log_kv(LOG_WARN, "workloads run without CPU or memory limits (no --cgroup folder)",
               (char *)NULL);
    if (cfg->runtime && *cfg->runtime)
        log_kv(LOG_INFO, "jobs with an image run in containers", "runtime", cfg->runtime,
               (char *)NULL);
    if (cfg->token_in_argv)
        log_kv(LOG_WARN,
               "--join-token is visible to every local user (ps) while the agent starts; use "
               "--join-token-file FILE or GPUPOOL_JOIN_TOKEN",
               (char *)NULL);
    char who[160];
    if (runner_identity(a.run, who, sizeof who))
        log_kv(LOG_INFO, "jobs run as identities of their own", "as", who, (char *)NULL);
    else
        log_kv(LOG_WARN,
               "the agent is not root: jobs run as its own user and can read its state folder "
               "(the node's credentials); run the agent as root to give each job a uid of its own",
               "as", who, (char *)NULL);
    /* events: SIGUSR1 (a waiter) and SIGCHLD (a workload exited) wake the loop */
    sigset_t evs;
    event_signals(&evs);
    pthread_sigmask(SIG_BLOCK, &evs, NULL);
    pthread_mutex_init(&a.tok_mu, NULL);
    pthread_cond_init(&a.tok_cv, NULL);
    a.main_th = pthread_self();
    atomic_init(&a.stopping, 0);
    if (!cfg->once && a.n <= WAIT_MAX_NODES && (a.waiters = calloc((size_t)a.n, sizeof *a.waiters))) {
        for (int i = 0; i < a.n; i++) {
            waiter *w = &a.waiters[i];
            w->a = &a;
            w->nd = &a.nodes[i];
            if (httpc_servers_parse(cfg->server, &w->servers, NULL) == GP_OK)
                w->running = pthread_create(&w->th, NULL, waiter_main, w) == 0;
        }
        a.nwaiters = a.n;
    }
    const int64_t interval_us = (int64_t)(cfg->interval_s > 0 ? cfg->interval_s : 5) * 1000000;
    int stop = 0, failures = 0;
    while (!stop) {
        failures = 0;
        int64_t now = gt_mono_us(), next = now + interval_us;
        int any_exit = runner_unreported(a.run, NULL); /* once, not once per node */
        for (int i = 0; i < a.n; i++) {
            anode *nd = &a.nodes[i];
            int exited = any_exit && now >= nd->exit_retry_us && runner_unreported(a.run, nd->name);
            if ((exited || nd->dirty) && !nd->event_at_us) nd->event_at_us = now + EVENT_BATCH_US;
            if (!nd->token && !cfg->once && gt_mono_us() - now > interval_us / 2) {
                /* this pass spent half an interval already (joins of a large --simulate, one
                 * after another): the nodes that joined get their heartbeats before the
                 * next joins, or they would fall silent for the server while the rest join */
                next = now;
                continue;
            }
            int woke = atomic_exchange(&nd->woke, 0);
            if (now >= nd->next_beat_us || woke || (nd->event_at_us && now >= nd->event_at_us)) {
                nd->dirty = 0;
                nd->event_at_us = 0;
                nd->next_beat_us = now + interval_us;
                if (!nd->token && join(&a, nd) != 0) failures++;
                else if (heartbeat(&a, nd) != 0) failures++;
                /* an exit the server did not take is sent again, once a second at most */
                if (any_exit && runner_unreported(a.run, nd->name)) nd->exit_retry_us = now + 1000000;
            }
            if (nd->next_beat_us < next) next = nd->next_beat_us;
            if (nd->dirty && !nd->event_at_us) nd->event_at_us = now + EVENT_BATCH_US;
            if (nd->event_at_us && nd->event_at_us < next) next = nd->event_at_us;
        }
        if (cfg->once) break;
        /* at most 200 ms between ticks: deadlines, stops and adopted workloads' exits */
        int64_t wait_us = next - gt_mono_us();
        stop = wait_or_stop(wait_us < 200000 ? wait_us : 200000);
        runner_tick(a.run);
    }
    atomic_store(&a.stopping, 1);
    pthread_mutex_lock(&a.tok_mu);
    pthread_cond_broadcast(&a.tok_cv);
    pthread_mutex_unlock(&a.tok_mu);
    for (int i = 0; i < a.nwaiters; i++) {
        if (a.waiters[i].running) pthread_join(a.waiters[i].th, NULL);
        httpc_servers_release(&a.waiters[i].servers);
    }
    free(a.waiters);
    pthread_cond_destroy(&a.tok_cv);
    pthread_mutex_destroy(&a.tok_mu);
    for (int i = 0; i < a.n; i++) {
        json_decref(a.nodes[i].report);
        json_decref(a.nodes[i].overrides);
        json_decref(a.nodes[i].pending_xids);
        json_decref(a.nodes[i].procs);
        json_decref(a.nodes[i].xid_totals);
        json_decref(a.nodes[i].pending_crit);
        json_decref(a.nodes[i].crit_totals);
        free(a.nodes[i].token);
    }
    free(a.nodes);
    close_all(&a);
    /* by default workloads keep running and a restarted agent re-adopts them */
    if (cfg->stop_workloads) runner_stop_all(a.run, "the agent stops (--stop-workloads-on-exit)");
    runner_free(a.run);
    if (cfg->once && failures)
        return gp_err_set(err, GP_EIO, "%d of %d nodes could not join or report", failures, a.n);
    return GP_OK;
}

int agent_run(const agent_config *cfg, gp_err *err) {
    httpc_servers servers = HTTPC_SERVERS_INIT;
    if (cfg->print_report) return run(cfg, &servers, err); /* no server is called */
    int rc = httpc_servers_parse(cfg->server, &servers, err);
    if (rc) return rc;
    rc = run(cfg, &servers, err);
    httpc_servers_release(&servers);
    return rc;
}
