/*
 * cmd_agent.c - `gpupool agent` (run the node agent) and
 * `gpupool agent inject` (queue a fault for a simulated GPU).
 */
#include "cli.h"

#include "../agent/agent.h"
#include "../core/httpc.h"
#include "../core/log.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: gpupool agent [--join-token-file FILE] [options]\n"
    "       gpupool agent inject --node N --gpu UUID|INDEX [fault options]\n"
    "\n"
    "Run the node agent against --server (or GPUPOOL_SERVER).  Several servers sharing one\n"
    "store may be given, comma-separated (--server URL1,URL2): the agent stays with the one\n"
    "that answers and moves on to the next when it cannot be reached.\n"
    "\n"
    "  --join-token-file FILE  the join token from `gpupool jointoken create` (first line),\n"
    "                      or env GPUPOOL_JOIN_TOKEN; not needed once the node's credential\n"
    "                      is stored (a restarted agent keeps its nodes' credentials).  A token\n"
    "                      is single-use unless made with --uses N: N nodes (--simulate N)\n"
    "                      need N uses\n"
    "  --join-token T      the same on the command line: every local user sees it in ps\n"
    "                      (the agent warns); prefer the file or the environment\n"
    "  --inventory FILE    declare GPUs instead of discovering them (any vendor: a gpus entry\n"
    "                      may name \"vendor\": nvidia|amd|intel, \"driver_version\", \"stack\")\n"
    "  --simulate N        simulate N copies of each declared node (default node: 8x A100)\n"
    "  --state-dir DIR     credentials and injected faults (default ./var/agent)\n"
    "  --ca FILE           verify an https server against these PEM CAs (also the global\n"
    "                      --ca / GPUPOOL_CA); the agent never talks to an unverified server\n"
    "  --interval S        seconds between heartbeats (default 5)\n"
    "  --vendor V          auto|nvidia|amd|intel: which management libraries discover the\n"
    "                      cards (default auto: NVML, then AMD SMI, then HLML, using every\n"
    "                      one that finds cards; a vendor's name: that library only)\n"
    "  --node-name NAME    discovery mode: this node's name (default: host name)\n"
    "  --nvml-library P    NVIDIA NVML library (default $GPUPOOL_NVML_LIBRARY, else\n"
    "                      libnvidia-ml.so.1)\n"
    "  --amdsmi-library P  AMD SMI library (default $GPUPOOL_AMDSMI_LIBRARY, else\n"
    "                      libamd_smi.so)\n"
    "  --hlml-library P    Intel Gaudi HLML library (default $GPUPOOL_HLML_LIBRARY, else\n"
    "                      libhlml.so)\n"
    "  --grace S           seconds a stopped workload gets between SIGTERM and SIGKILL (10)\n"
    "  --cgroup DIR        run each workload in a child of this delegated cgroup v2 folder,\n"
    "                      with cpu.max and memory.max from its resource class (default: none)\n"
    "  --runtime R         container runtime for jobs with an image (--image): podman, docker\n"
    "                      (found on PATH at start) or the path of a compatible command; each\n"
    "                      such job runs `R run --rm --name gpupool-<job>-<placement>\n"
    "                      --device nvidia.com/gpu=<GPU or MIG UUID>... -e VAR=value...\n"
    "                      [--cpus N --memory Ng] --workdir /work -v <job folder>:/work IMAGE\n"
    "                      [COMMAND...]` (CDI device names: the node needs a CDI spec with UUID\n"
    "                      names, e.g. nvidia-ctk cdi generate --device-name-strategy=uuid;\n"
    "                      AMD cards go by amd.com/gpu=<number> (amd-ctk cdi generate),\n"
    "                      Gaudi cards by habana.ai/gaudi=<number>; docs/workloads.md).\n"
    "                      Without it, a job with an image fails on this node (exit 126)\n"
    "  --job-uids SPEC     who plain jobs run as when the agent is root: LO-HI (a uid of its\n"
    "                      own for each job, gid the same; default 200000-265535), a uid, or\n"
    "                      a user name; never root.  Each job gets its own folder (HOME,\n"
    "                      mode 0700), a clean environment, and a private mount namespace\n"
    "                      hiding the state folder.  An agent that is not root cannot\n"
    "                      switch: its jobs run as its user (it warns at start).  The\n"
    "                      folders above --state-dir must let those uids cross them (o+x):\n"
    "                      the agent makes missing ones 0711 and refuses to start otherwise\n"
    "  --stop-workloads-on-exit\n"
    "                      when the agent stops (SIGTERM, SIGINT, --once), end its workloads:\n"
    "                      SIGTERM to each one's process group, --grace, SIGKILL.  Default:\n"
    "                      they keep running and a restarted agent re-adopts them\n"
    "  --once              join, send one heartbeat, exit (non-zero if a node failed)\n"
    "  --print-report      print the node report(s) discovery or the inventory makes (JSON)\n"
    "                      and exit, without calling a server\n"
    "  --log-level LEVEL   error|warn|info|debug (default info)\n"
    "\n"
    "Fault options for inject (simulated nodes; applied at the next heartbeat):\n"
    "  every vendor:   --dbe N  --sbe N  --temperature C  --lost  --clear (back to healthy)\n"
    "  NVIDIA only:    --xid N (repeatable)  --remap-pending  --remap-failure\n"
    "                  --retired-pending N\n"
    "  AMD only:       --bad-pages N (retired pages)\n"
    "  Intel Gaudi:    --critical N (N critical events)\n"
    "  A flag that does not fit the card's vendor is refused (once the simulating agent has\n"
    "  recorded its cards in the state folder)\n"
    "  --process JOB|PID:MEMORY_MIB:SM_PCT (repeatable) the processes on that GPU from now on,\n"
    "                      as per-process figures (a job stands for its workload's process;\n"
    "                      '-' for an unknown figure); --clear empties the list\n";

/* A figure of --process: digits, or "-" for unknown (-1); -2 when malformed. */
static long long figure(const char *s, long long max) {
    if (!strcmp(s, "-")) return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    return (!*s || *end || v < 0 || v > max) ? -2 : v;
}

/* "JOB|PID:MEMORY_MIB:SM_PCT" -> {job|pid, memory_mib?, sm_pct?}, or NULL. */
static json_t *parse_process(const char *arg) {
    char buf[160], *f[3];
    if (strlen(arg) >= sizeof buf) return NULL;
    snprintf(buf, sizeof buf, "%s", arg);
    char *p = buf;
    for (int i = 0; i < 3; i++) {
        f[i] = p;
        p = strchr(p, ':');
        if ((i < 2) != (p != NULL)) return NULL;
        if (p) *p++ = '\0';
    }
    if (!*f[0]) return NULL;
    long long mem = figure(f[1], 1LL << 40), sm = figure(f[2], 100);
    if (mem == -2 || sm == -2) return NULL;
    json_t *o = json_object();
    long long pid = figure(f[0], 1LL << 31);
    if (pid > 0) json_object_set_new(o, "pid", json_integer(pid));
    else json_object_set_new(o, "job", json_string(f[0]));
    if (mem >= 0) json_object_set_new(o, "memory_mib", json_integer(mem));
    if (sm >= 0) json_object_set_new(o, "sm_pct", json_integer(sm));
    return o;
}

static int inject(int argc, char **argv, const char *state_dir) {
    static const struct option lo[] = {
        {"state-dir", required_argument, 0, 'S'}, {"node", required_argument, 0, 'n'},
        {"gpu", required_argument, 0, 'g'},       {"xid", required_argument, 0, 'x'},
        {"dbe", required_argument, 0, 'd'},       {"sbe", required_argument, 0, 's'},
        {"remap-pending", no_argument, 0, 'p'},   {"remap-failure", no_argument, 0, 'f'},
        {"retired-pending", required_argument, 0, 'r'}, {"temperature", required_argument, 0, 't'},
        {"lost", no_argument, 0, 'l'},            {"clear", no_argument, 0, 'c'},
        {"process", required_argument, 0, 'P'},   {"bad-pages", required_argument, 0, 'B'},
        {"critical", required_argument, 0, 'K'},  {0, 0, 0, 0}};
    const char *node = NULL, *gpu = NULL;
    json_t *fault = json_object(), *set = json_object(), *xids = json_array();
    json_t *procs = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "agent inject", &rc)) != -1) {
        if (c == -2) goto out;
        char *end = NULL;
        long long v = optarg ? strtoll(optarg, &end, 10) : 0;
        if (c == 'P') {
            json_t *p = parse_process(optarg);
            if (!p) {
                rc = cli_error(CLI_USAGE,
                               "agent inject: --process wants JOB|PID:MEMORY_MIB:SM_PCT (figures"
                               " may be '-'), got '%s'",
                               optarg);
                goto out;
            }
            if (!procs) procs = json_array();
            json_array_append_new(procs, p);
            continue;
        }
        if (optarg && c != 'S' && c != 'n' && c != 'g' && (!*optarg || *end || v < 0)) {
            const char *opt = c == 'x' ? "--xid" : c == 'd' ? "--dbe" : c == 's' ? "--sbe"
                              : c == 'r' ? "--retired-pending" : c == 'B' ? "--bad-pages"
                              : c == 'K' ? "--critical" : "--temperature";
            rc = cli_error(CLI_USAGE, "agent inject: %s needs a non-negative number, got '%s'",
                           opt, optarg);
            goto out;
        }
        switch (c) {
        case 'S': state_dir = optarg; break;
        case 'n': node = optarg; break;
        case 'g': gpu = optarg; break;
        case 'x': json_array_append_new(xids, json_integer(v)); break;
        case 'd': json_object_set_new(set, "ecc", json_pack("{s:I}", "volatile_uncorrected", v)); break;
        case 's': json_object_set_new(set, "ecc", json_pack("{s:I}", "aggregate_corrected", v)); break;
        case 'p': json_object_set_new(set, "remapped_rows", json_pack("{s:b}", "pending", 1)); break;
        case 'f': json_object_set_new(set, "remapped_rows", json_pack("{s:b}", "failure", 1)); break;
        case 'r': json_object_set_new(set, "retired_pages_pending", json_integer(v)); break;
        case 't': json_object_set_new(set, "temperature_c", json_integer(v)); break;
        case 'l': json_object_set_new(set, "lost", json_true()); break;
        case 'B': json_object_set_new(set, "bad_pages", json_integer(v)); break;
        case 'K':
            if (v < 1 || v > 16) {
                rc = cli_error(CLI_USAGE, "agent inject: --critical wants 1..16 events, got '%s'",
                               optarg);
                goto out;
            }
            json_object_set_new(fault, "critical", json_integer(v));
            break;
        case 'c': json_object_set_new(fault, "clear", json_true()); break;
        }
    }
    if (!node || !gpu) {
        rc = cli_error(CLI_USAGE, "agent inject: --node and --gpu are required");
        goto out;
    }
    if (optind < argc) {
        rc = cli_error(CLI_USAGE, "agent inject: unexpected argument '%s'", argv[optind]);
        goto out;
    }
    if (json_object_size(set)) json_object_set(fault, "set", set);
    if (json_array_size(xids)) json_object_set(fault, "xids", xids);
    if (procs) json_object_set(fault, "processes", procs);
    if (json_object_size(fault) == 0) {
        rc = cli_error(CLI_USAGE, "agent inject: name a fault (see gpupool agent --help)");
        goto out;
    }
    gp_err err = GP_ERR_INIT;
    if (agent_inject(state_dir, node, gpu, fault, &err)) rc = cli_error(CLI_FAIL, "%s", err.msg);
out:
    json_decref(fault);
    json_decref(set);
    json_decref(xids);
    json_decref(procs);
    return rc;
}

/* The join token in FILE (its first line, trimmed), on the heap; NULL with *rc set. */
static char *read_token_file(const char *path, int *rc) {
    char buf[512];
    FILE *f = fopen(path, "re");
    if (!f) {
        *rc = cli_error(CLI_USAGE, "agent: cannot read --join-token-file %s: %s", path,
                        strerror(errno));
        return NULL;
    }
    int got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (got) buf[strcspn(buf, "\r\n")] = '\0';
    char *t = buf;
    while (got && (*t == ' ' || *t == '\t')) t++;
    size_t n = got ? strlen(t) : 0;
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) t[--n] = '\0';
    if (!n) {
        *rc = cli_error(CLI_USAGE, "agent: --join-token-file %s holds no token", path);
        return NULL;
    }
    char *out = strdup(t);
    if (!out) *rc = cli_error(CLI_FAIL, "agent: out of memory");
    return out;
}

int cli_cmd_agent(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {
        {"join-token", required_argument, 0, 'j'}, {"inventory", required_argument, 0, 'i'},
        {"simulate", required_argument, 0, 's'},   {"state-dir", required_argument, 0, 'S'},
        {"interval", required_argument, 0, 'I'},   {"node-name", required_argument, 0, 'n'},
        {"nvml-library", required_argument, 0, 'L'}, {"once", no_argument, 0, 'o'},
        {"grace", required_argument, 0, 'G'},     {"cgroup", required_argument, 0, 'C'},
        {"runtime", required_argument, 0, 'R'},   {"ca", required_argument, 0, 'A'},
        {"join-token-file", required_argument, 0, 'F'}, {"job-uids", required_argument, 0, 'U'},
        {"log-level", required_argument, 0, 'V'}, {"vendor", required_argument, 0, 'D'},
        {"amdsmi-library", required_argument, 0, 'M'}, {"hlml-library", required_argument, 0, 'H'},
        {"print-report", no_argument, 0, 'P'},
        {"stop-workloads-on-exit", no_argument, 0, 'W'},
        {0, 0, 0, 0}};
    if (cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (argc > 1 && strcmp(argv[1], "inject") == 0) {
        const char *sd = getenv("GPUPOOL_AGENT_STATE") ? getenv("GPUPOOL_AGENT_STATE")
                                                       : "./var/agent";
        return inject(argc - 1, argv + 1, sd);
    }
    agent_config cfg = {.server = ctx->server, .join_token = getenv("GPUPOOL_JOIN_TOKEN"),
                        .state_dir = "./var/agent", .interval_s = 5, .grace_s = 10};
    int c, rc = 0;
    char *token = NULL; /* a copy: the command line's is wiped */
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "agent", &rc)) != -1) {
        if (c == -2) {
            free(token);
            return rc;
        }
        char *end;
        long v;
        switch (c) {
        case 'j':
            cfg.token_in_argv = 1; /* warned about once the agent runs */
            free(token);
            token = strdup(optarg);
            memset(optarg, 'x', strlen(optarg)); /* out of /proc/<pid>/cmdline from now on */
            cfg.join_token = token;
            break;
        case 'F': {
            free(token);
            token = read_token_file(optarg, &rc);
            if (!token) return rc;
            cfg.join_token = token;
            cfg.token_in_argv = 0;
            break;
        }
        case 'U': cfg.job_uids = optarg; break;
        case 'V': {
            int lvl = log_level_parse(optarg);
            if (lvl < 0 || lvl == LOG_OFF) {
                free(token);
                return cli_error(CLI_USAGE, "agent: --log-level must be error, warn, info or "
                                            "debug, got '%s'",
                                 optarg);
            }
            log_set_level(lvl);
            break;
        }
        case 'i': cfg.inventory = optarg; break;
        case 'S': cfg.state_dir = optarg; break;
        case 'n': cfg.node_name = optarg; break;
        case 'L': cfg.nvml_path = optarg; break;
        case 'M': cfg.amdsmi_path = optarg; break;
        case 'H': cfg.hlml_path = optarg; break;
        case 'D':
            if (strcmp(optarg, "auto") && strcmp(optarg, "nvidia") && strcmp(optarg, "amd") &&
                strcmp(optarg, "intel")) {
                free(token);
                return cli_error(CLI_USAGE, "agent: --vendor must be auto, nvidia, amd or intel, "
                                            "got '%s'",
                                 optarg);
            }
            cfg.vendor = optarg;
            break;
        case 'C': cfg.cgroup_root = optarg; break;
        case 'R': cfg.runtime = optarg; break;
        case 'A':
            if (access(optarg, R_OK) != 0) {
                free(token);
                return cli_error(CLI_USAGE, "agent: cannot read --ca %s: %s", optarg,
                                 strerror(errno));
            }
            httpc_set_ca(optarg);
            break;
        case 'o': cfg.once = 1; break;
        case 'P': cfg.print_report = 1; break;
        case 'W': cfg.stop_workloads = 1; break;
        case 's':
        case 'I':
        case 'G':
            v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > (c == 's' ? 1000 : 3600)) {
                free(token);
                return cli_error(CLI_USAGE, "agent: %s must be a positive number (at most %d), "
                                            "got '%s'",
                                 c == 's' ? "--simulate" : c == 'G' ? "--grace" : "--interval",
                                 c == 's' ? 1000 : 3600, optarg);
            }
            if (c == 's') cfg.simulate = (int)v;
            else if (c == 'G') cfg.grace_s = (int)v;
            else cfg.interval_s = (int)v;
            break;
        }
    }
    if (optind < argc) {
        free(token);
        return cli_error(CLI_USAGE, "agent: unexpected argument '%s'", argv[optind]);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    gp_err err = GP_ERR_INIT;
    int bad = agent_run(&cfg, &err);
    free(token);
    if (bad) return cli_error(CLI_FAIL, "agent: %s", err.msg);
    return CLI_OK;
}
