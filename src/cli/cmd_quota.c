/*
 * cmd_quota.c - `gpupool quota show|set --tenant T [--project P]`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool quota <command> --tenant T [--project P]\n"
    "\n"
    "  show\n"
    "  set [--gpus N] [--gpu-memory GIB] [--cpus N] [--memory GIB] [--jobs N]\n"
    "      [--card-hours N] [--class NAME=UNITS]... [--guaranteed-gpus N]\n"
    "      [--kept-gpus N] [--borrow-weight W] [--replace]\n"
    "      set changes only the ceilings it is given (a value 'none' lifts one, e.g.\n"
    "      --gpus none or --class a100=none); the others stay.  --replace sets exactly\n"
    "      the given ceilings and lifts every other one.  Raising a tenant's ceilings\n"
    "      needs approval by default, and so does raising its guarantee.\n"
    "      --guaranteed-gpus: GPUs the tenant is entitled to (its work above them is\n"
    "      borrowed, preemptible, and reclaimed when an owner needs its share);\n"
    "      --kept-gpus: the part of it never lent; --borrow-weight 1..1000: its weight\n"
    "      among borrowers (docs/scheduling.md, Guarantees).\n";

static const struct option lo[] = {
    {"tenant", required_argument, 0, 't'},     {"project", required_argument, 0, 'p'},
    {"gpus", required_argument, 0, 'g'},       {"gpu-memory", required_argument, 0, 'G'},
    {"cpus", required_argument, 0, 'c'},       {"memory", required_argument, 0, 'm'},
    {"jobs", required_argument, 0, 'j'},       {"card-hours", required_argument, 0, 'h'},
    {"class", required_argument, 0, 'C'},      {"replace", no_argument, 0, 'R'},
    {"guaranteed-gpus", required_argument, 0, 'U'}, {"kept-gpus", required_argument, 0, 'K'},
    {"borrow-weight", required_argument, 0, 'W'},
    {0, 0, 0, 0}};

static int q_run(cli_ctx *ctx, int argc, char **argv, int set) {
    const char *verb = set ? "quota set" : "quota show", *tenant = NULL, *project = NULL;
    json_t *body = json_object(), *classes = json_object();
    int c, rc = 0, replace = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 't') {
            tenant = optarg;
            continue;
        }
        if (c == 'p') {
            project = optarg;
            continue;
        }
        if (!set) {
            rc = cli_error(CLI_USAGE, "quota show: only --tenant and --project");
            goto out;
        }
        if (c == 'R') {
            replace = 1;
            continue;
        }
        if (c == 'C') {
            char *eq = strchr(optarg, '=');
            char *end = NULL;
            int none = eq && !strcmp(eq + 1, "none"); /* lifts that class's ceiling */
            long long v = eq && !none ? strtoll(eq + 1, &end, 10) : none ? 0 : -1;
            if (!eq || eq == optarg || !eq[1] || (end && *end) || v < 0) {
                rc = cli_error(CLI_USAGE, "quota set: --class needs NAME=UNITS (or NAME=none), got '%s'",
                               optarg);
                goto out;
            }
            *eq = '\0';
            json_object_set_new(classes, optarg, none ? json_null() : json_integer(v));
            *eq = '=';
            continue;
        }
        const char *key = c == 'g' ? "gpus" : c == 'G' ? "gpu_memory_gib" : c == 'c' ? "cpus"
                          : c == 'm' ? "memory_gib" : c == 'j' ? "concurrent_jobs"
                          : c == 'U' ? "guaranteed_gpus" : c == 'K' ? "kept_gpus"
                          : c == 'W' ? "borrow_weight" : "card_hours_month";
        if (!strcmp(optarg, "none")) {
            json_object_set_new(body, key, json_null());
            continue;
        }
        char *end;
        double v = strtod(optarg, &end);
        if (!*optarg || *end || v < 0) {
            rc = cli_error(CLI_USAGE, "quota set: %s must be a number or none, got '%s'", key, optarg);
            goto out;
        }
        json_object_set_new(body, key, (c == 'g' || c == 'h' || c == 'U' || c == 'K')
                                           ? json_real(v) : json_integer((long long)v));
    }
    if (!tenant) {
        rc = cli_error(CLI_USAGE, "%s: --tenant is required", verb);
        goto out;
    }
    if (optind < argc) {
        rc = cli_error(CLI_USAGE, "%s: unexpected argument '%s'", verb, argv[optind]);
        goto out;
    }
    if (set && !replace && !json_object_size(body) && !json_object_size(classes)) {
        rc = cli_error(CLI_USAGE, "quota set: give at least one ceiling (or --replace to lift "
                                  "them all)");
        goto out;
    }
    /* a plain set is a PATCH: the server merges it over the ceilings of that moment */
    if (replace) { /* PUT: a class not given has no ceiling */
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(classes, tmp, k, v) if (json_is_null(v)) json_object_del(classes, k);
    }
    if (replace || json_object_size(classes)) json_object_set(body, "class_gpus", classes);
    strbuf p = SB_INIT;
    cli_scope_path(&p, tenant, project);
    sb_adds(&p, "/quota");
    rc = cli_run_call(ctx, !set ? "GET" : replace ? "PUT" : "PATCH", p.buf, set ? body : NULL, NULL);
    sb_release(&p);
out:
    json_decref(body);
    json_decref(classes);
    return rc;
}

static int q_show(cli_ctx *c, int a, char **v) { return q_run(c, a, v, 0); }
static int q_set(cli_ctx *c, int a, char **v) { return q_run(c, a, v, 1); }

int cli_cmd_quota(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {{"show", q_show, usage}, {"set", q_set, usage}, {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
