/*
 * cmd_job.c - `gpupool job submit|list|show|cancel|priority|explain --tenant T --project P`.
 */
#include "cli.h"

#include "../core/jsonx.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: gpupool job <command> --tenant T --project P\n"
    "\n"
    "  submit NAME --class C [--units N] [--nodes N [--units-per-node K]]\n"
    "         [--priority-class PC] [--no-preempt]\n"
    "         [--recovery requeue|fail] [--time-limit S] [--image REF] [--stack RT>=V]\n"
    "         [--after JOB[:ok|:any|:notok]]... [--array FIRST-LAST[%MAX]] [--wait]\n"
    "         [--reservation NAME]   run in that reservation (its cards, its window)\n"
    "         [-- COMMAND ARGS...]\n"
    "  list [--state queued|admitted|running|succeeded|failed|cancelled|preempted]\n"
    "       [--array ID]     an array's tasks\n"
    "  array show|cancel ID  a job array: its tasks by state; cancel its unfinished tasks\n"
    "  show JOB            state, reason, bindings and events\n"
    "  explain JOB         what would start it, and the smallest change that would\n"
    "  logs JOB [--follow] its captured output (--follow: as it comes, until it ends)\n"
    "  cancel JOB\n"
    "  priority JOB PRIORITY_CLASS [--no-preempt|--preemptible]\n"
    "\n"
    "JOB (here and in --after): the job's id, its first 4 or more characters, or its\n"
    "name; a name several jobs share means the one of them not ended.\n"
    "--tenant/--project: from `gpupool context` when not given.\n";

typedef struct jopts {
    const char *tenant, *project, *cls, *units, *pc, *recovery, *tl, *state, *image, *stack;
    const char *nodes, *per; /* submit: a job that spans nodes (--nodes, --units-per-node) */
    const char *array; /* submit: the range; list: an array's id */
    const char *reservation; /* submit: the reservation it runs in */
    int no_preempt, preempt, follow, wait;
    const char *after[64]; /* --after, each once (the server checks the jobs) */
    int nafter;
} jopts;

static int parse(int argc, char **argv, const char *verb, jopts *o) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'},     {"project", required_argument, 0, 'p'},
        {"class", required_argument, 0, 'c'},      {"units", required_argument, 0, 'u'},
        {"priority-class", required_argument, 0, 'P'}, {"recovery", required_argument, 0, 'r'},
        {"time-limit", required_argument, 0, 'l'}, {"state", required_argument, 0, 's'},
        {"no-preempt", no_argument, 0, 'n'},       {"image", required_argument, 0, 'i'},
        {"follow", no_argument, 0, 'f'},           {"wait", no_argument, 0, 'w'},
        {"stack", required_argument, 0, 'S'},      {"preemptible", no_argument, 0, 'e'},
        {"after", required_argument, 0, 'a'},      {"array", required_argument, 0, 'A'},
        {"reservation", required_argument, 0, 'R'},
        {"nodes", required_argument, 0, 'N'},      {"units-per-node", required_argument, 0, 'K'},
        {0, 0, 0, 0}};
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        switch (c) {
        case 't': o->tenant = optarg; break;
        case 'p': o->project = optarg; break;
        case 'c': o->cls = optarg; break;
        case 'u': o->units = optarg; break;
        case 'P': o->pc = optarg; break;
        case 'r': o->recovery = optarg; break;
        case 'l': o->tl = optarg; break;
        case 's': o->state = optarg; break;
        case 'n': o->no_preempt = 1; break;
        case 'e': o->preempt = 1; break;
        case 'i': o->image = optarg; break;
        case 'S': o->stack = optarg; break;
        case 'f': o->follow = 1; break;
        case 'w': o->wait = 1; break;
        case 'A': o->array = optarg; break;
        case 'R': o->reservation = optarg; break;
        case 'N': o->nodes = optarg; break;
        case 'K': o->per = optarg; break;
        case 'a':
            if (o->nafter == (int)(sizeof o->after / sizeof o->after[0]))
                return cli_error(CLI_USAGE, "%s: at most 64 --after", verb);
            o->after[o->nafter++] = optarg;
            break;
        }
    }
    if (o->follow && strcmp(verb, "job logs") != 0)
        return cli_error(CLI_USAGE, "%s: --follow is for job logs", verb);
    if (o->wait && strcmp(verb, "job submit") != 0)
        return cli_error(CLI_USAGE, "%s: --wait is for job submit", verb);
    if (o->reservation && strcmp(verb, "job submit") != 0)
        return cli_error(CLI_USAGE, "%s: --reservation is for job submit", verb);
    if (o->nafter && strcmp(verb, "job submit") != 0)
        return cli_error(CLI_USAGE, "%s: --after is for job submit", verb);
    if (o->array && strcmp(verb, "job submit") != 0 && strcmp(verb, "job list") != 0)
        return cli_error(CLI_USAGE, "%s: --array is for job submit and job list", verb);
    if (o->array && o->wait) return cli_error(CLI_USAGE, "%s: --wait is for one job, not an array", verb);
    if ((o->nodes || o->per) && strcmp(verb, "job submit") != 0)
        return cli_error(CLI_USAGE, "%s: --nodes and --units-per-node are for job submit", verb);
    if (o->per && !o->nodes)
        return cli_error(CLI_USAGE, "%s: --units-per-node needs --nodes (one node: --nodes 1)",
                         verb);
    if (o->preempt && strcmp(verb, "job priority") != 0)
        return cli_error(CLI_USAGE, "%s: --preemptible is for job priority", verb);
    if (o->no_preempt && o->preempt)
        return cli_error(CLI_USAGE, "%s: --no-preempt or --preemptible, not both", verb);
    if (!o->tenant || !o->project)
        return cli_error(CLI_USAGE, "%s: --tenant and --project are required", verb);
    return 0;
}

static void jobs_path(strbuf *p, const jopts *o, const char *id, const char *suffix) {
    cli_scope_path(p, o->tenant, o->project);
    sb_adds(p, "/jobs");
    if (id) {
        sb_addc(p, '/');
        cli_add_escaped(p, id);
    }
    if (suffix) sb_adds(p, suffix);
}

static int job_ended(const char *state);

/* A full job id: 32 lower-case hex digits. */
static int full_id(const char *s) {
    size_t n = strspn(s, "0123456789abcdef");
    return n == 32 && !s[n];
}

/*
 * The job `arg` names in the project, into id: a full id as it is; else the jobs of that
 * name or whose id begins so (GET …/jobs?match=): one is it; of several, the one not ended
 * if only one is (a name reused by reruns); otherwise a usage error listing them; none: `arg`
 * as given, for the server to answer (404).
 */
enum { JOB_ARG_MAX = 128 };
static int resolve_job(cli_ctx *ctx, const jopts *o, const char *verb, const char *arg,
                       char id[JOB_ARG_MAX]) {
    if (full_id(arg) || strlen(arg) >= JOB_ARG_MAX) {
        snprintf(id, JOB_ARG_MAX, "%s", arg);
        return CLI_OK;
    }
    strbuf p = SB_INIT;
    jobs_path(&p, o, NULL, "?match=");
    cli_add_escaped(&p, arg);
    json_t *out;
    int rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    json_t *items = json_object_get(out, "items"), *j, *live = NULL;
    size_t i, nlive = 0, n = json_array_size(items);
    json_array_foreach(items, i, j) if (!job_ended(json_string_value(json_object_get(j, "state")))) {
        live = j;
        nlive++;
    }
    json_t *pick = n == 1 ? json_array_get(items, 0) : nlive == 1 ? live : NULL;
    if (pick) {
        snprintf(id, JOB_ARG_MAX, "%s", json_string_value(json_object_get(pick, "id")));
        json_decref(out);
        return CLI_OK;
    }
    if (!n) { /* as given: the server's answer (404) says it is not there */
        json_decref(out);
        snprintf(id, JOB_ARG_MAX, "%s", arg);
        return CLI_OK;
    }
    strbuf l = SB_INIT;
    json_array_foreach(items, i, j) {
        if (i == 5) {
            sb_addf(&l, ", ...");
            break;
        }
        sb_addf(&l, "%s%.12s (%s, %s)", i ? ", " : "", json_string_value(json_object_get(j, "id")),
                json_string_value(json_object_get(j, "name")),
                json_string_value(json_object_get(j, "state")));
    }
    rc = cli_error(CLI_USAGE, "%s: '%s' names %zu jobs: %s; give a longer id prefix", verb, arg, n,
                   l.buf ? l.buf : "");
    sb_release(&l);
    json_decref(out);
    return rc;
}

static int number(const char *s, const char *flag, long long *out) {
    char *end;
    *out = strtoll(s, &end, 10);
    if (!*s || *end) return cli_error(CLI_USAGE, "job submit: %s must be a number, got '%s'", flag, s);
    return 0;
}

/* A job in one of these states never runs again. */
static int job_ended(const char *state) {
    return state && (!strcmp(state, "succeeded") || !strcmp(state, "failed") ||
                     !strcmp(state, "cancelled") || !strcmp(state, "preempted"));
}

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/*
 * `submit --wait`: poll the job (every 0.2 s, then every second) until it
 * has ended; *job is replaced by its last state.  Returns the exit code: 0
 * when it succeeded, 1 otherwise (one line saying how it ended).
 */
static int wait_ended(cli_ctx *ctx, const jopts *o, const char *id, json_t **job) {
    for (int i = 0; !job_ended(json_string_value(json_object_get(*job, "state"))); i++) {
        pause_ms(i < 25 ? 200 : 1000);
        strbuf q = SB_INIT;
        jobs_path(&q, o, id, NULL);
        json_t *again;
        int bad = cli_call(ctx, "GET", q.buf, NULL, &again);
        sb_release(&q);
        if (bad) return bad;
        json_decref(*job);
        *job = again;
    }
    return CLI_OK;
}

static int j_submit(cli_ctx *ctx, int argc, char **argv) {
    jopts o;
    int rc = parse(argc, argv, "job submit", &o);
    if (rc) return rc;
    if (optind >= argc) return cli_error(CLI_USAGE, "job submit: expected a NAME");
    if (!o.cls) return cli_error(CLI_USAGE, "job submit: --class is required");
    const char *name = argv[optind++];
    json_t *body = json_pack("{s:s,s:s}", "name", name, "class", o.cls), *cmd = json_array();
    long long v;
    if (o.units) {
        if ((rc = number(o.units, "--units", &v))) goto out;
        json_object_set_new(body, "units", json_integer(v));
    }
    if (o.nodes) {
        if ((rc = number(o.nodes, "--nodes", &v))) goto out;
        json_object_set_new(body, "nodes", json_integer(v));
    }
    if (o.per) {
        if ((rc = number(o.per, "--units-per-node", &v))) goto out;
        json_object_set_new(body, "units_per_node", json_integer(v));
    }
    if (o.tl) {
        if ((rc = number(o.tl, "--time-limit", &v))) goto out;
        json_object_set_new(body, "time_limit_s", json_integer(v));
    }
    if (o.pc) json_object_set_new(body, "priority_class", json_string(o.pc));
    if (o.recovery) json_object_set_new(body, "recovery", json_string(o.recovery));
    if (o.no_preempt) json_object_set_new(body, "preemptible", json_false());
    if (o.image) {
        json_t *img = json_string(o.image);
        if (!img) {
            rc = cli_error(CLI_USAGE, "job submit: --image is not valid UTF-8");
            goto out;
        }
        json_object_set_new(body, "image", img);
    }
    if (o.stack) json_object_set_new(body, "stack", json_string(o.stack));
    if (o.array) json_object_set_new(body, "array", json_string(o.array));
    if (o.reservation) json_object_set_new(body, "reservation", json_string(o.reservation));
    if (o.nafter) {
        /* JOB may be a name or an id's start, as everywhere a job is named */
        json_t *after = json_array();
        json_object_set_new(body, "after", after);
        for (int i = 0; i < o.nafter; i++) {
            char job[64], id[JOB_ARG_MAX];
            size_t n = strcspn(o.after[i], ":");
            snprintf(job, sizeof job, "%.*s", (int)(n < 63 ? n : 63), o.after[i]);
            if (!full_id(job) && gp_name_valid(job)) {
                if ((rc = resolve_job(ctx, &o, "job submit --after", job, id))) goto out;
                char full[JOB_ARG_MAX + 16];
                snprintf(full, sizeof full, "%s%s", id, o.after[i] + n);
                json_array_append_new(after, json_string(full));
            } else {
                json_array_append_new(after, json_string(o.after[i]));
            }
        }
    }
    for (; optind < argc; optind++) json_array_append_new(cmd, json_string(argv[optind]));
    json_object_set(body, "command", cmd);
    strbuf p = SB_INIT;
    jobs_path(&p, &o, NULL, NULL);
    json_t *job;
    rc = cli_call(ctx, "POST", p.buf, body, &job);
    sb_release(&p);
    if (rc) goto out;
    if (ctx->status == 202) {
        cli_print_pending(ctx, job);
        json_decref(job);
        goto out;
    }
    if (o.array) { /* the array, its tasks queued */
        cli_print_object(ctx, job);
        json_decref(job);
        goto out;
    }
    /* The server answers before its scheduler looked at the job (the round runs on the
     * leader's scheduler thread, not in the request): show the job's first reason, waiting
     * for it 5 s at most. */
    const char *id = json_string_value(json_object_get(job, "id"));
    char jid[64];
    snprintf(jid, sizeof jid, "%s", id ? id : "");
    for (int i = 0; jid[0] && i < 250; i++) {
        const char *reason = json_string_value(json_object_get(job, "reason"));
        if (!reason || strcmp(reason, "waiting for the scheduler") != 0) break;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        strbuf q = SB_INIT;
        jobs_path(&q, &o, jid, NULL);
        json_t *again;
        int bad = cli_call(ctx, "GET", q.buf, NULL, &again);
        sb_release(&q);
        if (bad) break;
        json_decref(job);
        job = again;
    }
    if (o.wait && jid[0]) {
        if ((rc = wait_ended(ctx, &o, jid, &job))) {
            json_decref(job);
            goto out;
        }
        cli_print_object(ctx, job);
        const char *st = json_string_value(json_object_get(job, "state"));
        if (strcmp(st, "succeeded") != 0) {
            const char *why = json_string_value(json_object_get(job, "reason"));
            rc = cli_error(CLI_FAIL, "job %s %s%s%s", jid, st, why && *why ? ": " : "",
                           why ? why : "");
        }
        json_decref(job);
        goto out;
    }
    cli_print_object(ctx, job);
    json_decref(job);
out:
    json_decref(cmd);
    json_decref(body);
    return rc;
}

static int j_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "name", "state", "class", "units", "nodes",
                                       "priority_class", "submitter", "reason", NULL};
    jopts o;
    int rc = parse(argc, argv, "job list", &o);
    if (rc) return rc;
    if (optind < argc) return cli_error(CLI_USAGE, "job list: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    jobs_path(&p, &o, NULL, NULL);
    if (o.state) {
        sb_adds(&p, "?state=");
        cli_add_escaped(&p, o.state);
    }
    if (o.array) {
        sb_adds(&p, o.state ? "&array=" : "?array=");
        cli_add_escaped(&p, o.array);
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

/* VERB ID: one positional id, a method and a suffix. */
static int by_id(cli_ctx *ctx, int argc, char **argv, const char *verb, const char *method,
                 const char *suffix, json_t *body, int nargs) {
    jopts o;
    int rc = parse(argc, argv, verb, &o);
    if (rc) return rc;
    if (argc - optind != nargs) return cli_error(CLI_USAGE, "%s: expected %s", verb, nargs == 1 ? "an ID" : "ID PRIORITY_CLASS");
    char id[JOB_ARG_MAX];
    if ((rc = resolve_job(ctx, &o, verb, argv[optind], id))) return rc;
    strbuf p = SB_INIT;
    jobs_path(&p, &o, id, suffix);
    if (nargs == 2) {
        body = json_pack("{s:s}", "priority_class", argv[optind + 1]);
        if (o.no_preempt || o.preempt)
            json_object_set_new(body, "preemptible", json_boolean(o.preempt));
    }
    rc = cli_run_call(ctx, method, p.buf, body, NULL);
    if (nargs == 2) json_decref(body);
    sb_release(&p);
    return rc;
}

static int j_show(cli_ctx *c, int a, char **v) { return by_id(c, a, v, "job show", "GET", NULL, NULL, 1); }

/* `job array show|cancel ID`: a job array (h_job.c). */
static int j_array(cli_ctx *ctx, int argc, char **argv) {
    jopts o;
    int rc = parse(argc, argv, "job array", &o);
    if (rc) return rc;
    if (argc - optind != 2 || (strcmp(argv[optind], "show") && strcmp(argv[optind], "cancel")))
        return cli_error(CLI_USAGE, "job array: expected show ID or cancel ID");
    int cancel = !strcmp(argv[optind], "cancel");
    strbuf p = SB_INIT;
    cli_scope_path(&p, o.tenant, o.project);
    sb_adds(&p, "/arrays/");
    cli_add_escaped(&p, argv[optind + 1]);
    if (cancel) sb_adds(&p, "/cancel");
    rc = cli_run_call(ctx, cancel ? "POST" : "GET", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}
static int j_cancel(cli_ctx *c, int a, char **v) {
    return by_id(c, a, v, "job cancel", "POST", "/cancel", NULL, 1);
}
static int j_priority(cli_ctx *c, int a, char **v) {
    return by_id(c, a, v, "job priority", "PUT", "/priority", NULL, 2);
}

/*
 * How much of `cur` (the server's last 64 KiB of the log) is new after `prev`
 * (what was printed from the previous answer): the offset in `cur` to print
 * from.  The window only grows, or slides when more than 64 KiB were written
 * in all: then prev[d:] is a prefix of cur for the smallest such d.  -1 when
 * nothing of prev is left (more than the window arrived between two polls).
 */
static long new_from(const char *prev, size_t np, const char *cur, size_t nc) {
    if (np <= nc && memcmp(prev, cur, np) == 0) return (long)np;
    for (size_t d = 1, tries = 0; d < np && tries < 4096; d++) {
        size_t k = np - d;
        if (k > nc || prev[d] != cur[0]) continue;
        tries++;
        if (memcmp(prev + d, cur, k) == 0) return (long)k;
    }
    return -1;
}

/* `job logs --follow`: print the output as it comes (a poll a second) until the job ends. */
static int follow_logs(cli_ctx *ctx, const char *path) {
    char *prev = NULL;
    size_t np = 0;
    int rc = CLI_OK;
    for (;;) {
        json_t *out;
        if ((rc = cli_call(ctx, "GET", path, NULL, &out))) break;
        const char *log = json_string_value(json_object_get(out, "log"));
        size_t nc = log ? strlen(log) : 0;
        long from = new_from(prev ? prev : "", np, log ? log : "", nc);
        if (from < 0) {
            fputs("\n[... output skipped: more than the server keeps arrived meanwhile ...]\n",
                  stdout);
            from = 0;
        }
        fwrite(log + from, 1, nc - (size_t)from, stdout);
        fflush(stdout);
        free(prev);
        prev = log ? strdup(log) : NULL;
        np = prev ? nc : 0;
        int ended = job_ended(json_string_value(json_object_get(out, "state")));
        json_decref(out);
        if (ended) break; /* its last words came with the exit: this answer has them */
        pause_ms(1000);
    }
    free(prev);
    return rc;
}

static int j_logs(cli_ctx *ctx, int argc, char **argv) {
    jopts o;
    int rc = parse(argc, argv, "job logs", &o);
    if (rc) return rc;
    if (argc - optind != 1) return cli_error(CLI_USAGE, "job logs: expected an ID");
    if (o.follow && ctx->json)
        return cli_error(CLI_USAGE, "job logs: --follow prints text, not -o json");
    char id[JOB_ARG_MAX];
    if ((rc = resolve_job(ctx, &o, "job logs", argv[optind], id))) return rc;
    if (o.follow) {
        strbuf fp = SB_INIT;
        jobs_path(&fp, &o, id, "/logs");
        rc = follow_logs(ctx, fp.buf);
        sb_release(&fp);
        return rc;
    }
    strbuf p = SB_INIT;
    jobs_path(&p, &o, id, "/logs");
    json_t *out;
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    if (ctx->json) cli_print_object(ctx, out);
    else fputs(json_string_value(json_object_get(out, "log")), stdout);
    json_decref(out);
    return CLI_OK;
}

static int j_explain(cli_ctx *ctx, int argc, char **argv) {
    jopts o;
    int rc = parse(argc, argv, "job explain", &o);
    if (rc) return rc;
    if (argc - optind != 1) return cli_error(CLI_USAGE, "job explain: expected an ID");
    char id[JOB_ARG_MAX];
    if ((rc = resolve_job(ctx, &o, "job explain", argv[optind], id))) return rc;
    strbuf p = SB_INIT;
    jobs_path(&p, &o, id, "/explain");
    json_t *out;
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    if (ctx->json) {
        cli_print_object(ctx, out);
        json_decref(out);
        return CLI_OK;
    }
    const char *reason = json_string_value(json_object_get(out, "reason"));
    printf("job %s", json_string_value(json_object_get(out, "job")));
    if (json_object_get(out, "queue_position"))
        printf(" is number %lld in the queue",
               (long long)json_integer_value(json_object_get(out, "queue_position")));
    printf("\nblocked by: %s\n", reason ? reason : json_string_value(json_object_get(out, "explanation")));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(out, "notes"), i, s) printf("note: %s\n", json_string_value(s));
    json_array_foreach(json_object_get(out, "suggestions"), i, s) {
        const char *what = json_string_value(json_object_get(s, "change"));
        if (!strcmp(what, "raise_quota"))
            printf("would start with: raise %s %s's %s ceiling by %g\n",
                   json_string_value(json_object_get(s, "level")),
                   json_string_value(json_object_get(s, "name")),
                   json_string_value(json_object_get(s, "dimension")),
                   json_number_value(json_object_get(s, "by")));
        else if (!strcmp(what, "free_capacity"))
            printf("would start with: %lld more free unit(s) of class %s (%lld GPUs)\n",
                   (long long)json_integer_value(json_object_get(s, "units")),
                   json_string_value(json_object_get(s, "class")),
                   (long long)json_integer_value(json_object_get(s, "gpus")));
        else if (json_is_string(json_object_get(s, "text")))
            printf("would start with: %s\n", json_string_value(json_object_get(s, "text")));
        else if (!strcmp(what, "priority_class"))
            printf("would start with: priority class %s (value %lld), which you may use\n",
                   json_string_value(json_object_get(s, "name")),
                   (long long)json_integer_value(json_object_get(s, "value")));
    }
    json_decref(out);
    return CLI_OK;
}

int cli_cmd_job(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"submit", j_submit,
         "usage: gpupool job submit NAME --tenant T --project P --class C [--units N]\n"
         "       [--priority-class PC] [--no-preempt] [--recovery requeue|fail]\n"
         "       [--time-limit S] [--image REF] [--stack RUNTIME>=V]\n"
         "       [--after JOB[:ok|:any|:notok]]... [--array FIRST-LAST[%MAX]] [--wait]\n"
         "       [--reservation NAME] [-- COMMAND ARGS...]\n"
         "\n"
         "  --reservation NAME  run in the tenant's reservation NAME: only in its windows, on\n"
         "                  what it holds (a count: within it, of its class), ending by the\n"
         "                  window's end (--time-limit; without one it is stopped then)\n"
         "  --array FIRST-LAST[%MAX]  one task per index (or a count N: 0..N-1), at most\n"
         "                  10,000, each with GPUPOOL_ARRAY_ID and GPUPOOL_ARRAY_INDEX; %MAX:\n"
         "                  at most MAX of them hold cards at once.  Prints the array\n"
         "  --after JOB[:K] start only after job JOB (of this project) has ended: ok (the\n"
         "                  default) once it succeeded, any however it ended, notok once it\n"
         "                  ended without succeeding; repeat for several.  A dependency that\n"
         "                  can no longer be met cancels the job, with the reason\n"
         "  --stack RT>=V   what the image needs, e.g. rocm>=6.1 or cuda>=12.2 (runtimes:\n"
         "                  cuda, rocm, synapse): it runs only on cards offering that\n"
         "                  runtime at that version or newer\n"
         "  --image REF     run it in a container of this OCI image (e.g.\n"
         "                  nvcr.io/nvidia/pytorch:24.05-py3) under the node's container\n"
         "                  runtime (gpupool agent --runtime); COMMAND, if given, replaces\n"
         "                  the image's default command.  Without --image, COMMAND runs as a\n"
         "                  process on the node; with neither, the job just holds its GPUs.\n"
         "  --wait          wait until the job has ended and print it: exit 0 when it\n"
         "                  succeeded, 1 when it failed, was cancelled or preempted\n"},
        {"list", j_list, "usage: gpupool job list --tenant T --project P [--state S] [--array ID]\n"},
        {"array", j_array,
         "usage: gpupool job array show|cancel ID --tenant T --project P\n\nA job array (job "
         "submit --array): its range, cap, tasks by state and the card-seconds\nthey held; "
         "cancel ends every task that has not ended.  Its tasks are jobs: job list\n--array "
         "ID lists them, and show, explain, cancel and logs take a task's id.\n"},
        {"show", j_show, "usage: gpupool job show ID --tenant T --project P\n"},
        {"explain", j_explain, "usage: gpupool job explain ID --tenant T --project P\n\nIts place "
                               "in the queue, what blocks it and by how much, and the smallest\n"
                               "change that would start it.\n"},
        {"cancel", j_cancel, "usage: gpupool job cancel ID --tenant T --project P\n"},
        {"logs", j_logs, "usage: gpupool job logs ID --tenant T --project P [--follow]\n\nThe job's "
                         "captured output (the last 64 KiB), as its node reported it.\n"
                         "--follow prints it as it comes (polling every second) until the job\n"
                         "has ended.\n"},
        {"priority", j_priority,
         "usage: gpupool job priority ID PRIORITY_CLASS --tenant T --project P\n"
         "       [--no-preempt|--preemptible]\n\nChange the job's priority class. --no-preempt\n"
         "keeps preemption from stopping it, where the class lets your role (its\n"
         "non_preemptible_roles); without either flag an earlier opt-out stays only if\n"
         "you could make it under the new class.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
