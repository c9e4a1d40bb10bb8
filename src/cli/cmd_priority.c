/*
 * cmd_priority.c - `gpupool priority list|show|create|set|delete` (priority classes) and
 * `gpupool priority policy` (the scheduler policy: the reclaim cap).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool priority <command>\n"
    "\n"
    "  list | show NAME\n"
    "  create NAME --value N [--preemptible yes|no] [--may-preempt yes|no]\n"
    "         [--project-classes A,B] [--roles R,S] [--non-preemptible-roles R,S|none]\n"
    "         [--description T]   (platform-admin)\n"
    "  set NAME [same options]\n"
    "  delete NAME\n"
    "  policy [--reclaim-cap N] [--reclaim-window S] [--borrow-half-life S]\n"
    "         show the scheduler policy, or change it (platform-admin): a job preempted\n"
    "         or reclaimed N times within S seconds is no longer a reclaim victim\n"
    "         (defaults 3 and 3600; docs/scheduling.md, Guarantees)\n"
    "Changing priority classes needs approval by default.\n";

static int write_pc(cli_ctx *ctx, int argc, char **argv, int create) {
    static const struct option lo[] = {{"value", required_argument, 0, 'v'},
                                       {"preemptible", required_argument, 0, 'p'},
                                       {"may-preempt", required_argument, 0, 'm'},
                                       {"project-classes", required_argument, 0, 'c'},
                                       {"roles", required_argument, 0, 'r'},
                                       {"non-preemptible-roles", required_argument, 0, 'o'},
                                       {"description", required_argument, 0, 'd'},
                                       {0, 0, 0, 0}};
    const char *verb = create ? "priority create" : "priority set";
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 'v') {
            char *end;
            long long v = strtoll(optarg, &end, 10);
            if (!*optarg || *end) {
                rc = cli_error(CLI_USAGE, "%s: --value must be a number, got '%s'", verb, optarg);
                goto out;
            }
            json_object_set_new(body, "value", json_integer(v));
        } else if (c == 'p' || c == 'm') {
            int yes = !strcmp(optarg, "yes") || !strcmp(optarg, "true");
            if (!yes && strcmp(optarg, "no") && strcmp(optarg, "false")) {
                rc = cli_error(CLI_USAGE, "%s: %s takes yes or no", verb,
                               c == 'p' ? "--preemptible" : "--may-preempt");
                goto out;
            }
            json_object_set_new(body, c == 'p' ? "preemptible" : "may_preempt", json_boolean(yes));
        } else if (c == 'c') {
            json_object_set_new(body, "allowed_project_classes", cli_csv(optarg));
        } else if (c == 'r') {
            json_object_set_new(body, "allowed_roles", cli_csv(optarg));
        } else if (c == 'o') {
            json_object_set_new(body, "non_preemptible_roles",
                                strcmp(optarg, "none") ? cli_csv(optarg) : json_array());
        } else if (c == 'd') {
            json_object_set_new(body, "description", json_string(optarg));
        }
    }
    if (argc - optind != 1) {
        rc = cli_error(CLI_USAGE, "%s: expected one NAME", verb);
        goto out;
    }
    rc = cli_write_named(ctx, "/api/v1/priority-classes", argv[optind], body, create);
out:
    json_decref(body);
    return rc;
}

static int pc_create(cli_ctx *c, int a, char **v) { return write_pc(c, a, v, 1); }
static int pc_set(cli_ctx *c, int a, char **v) { return write_pc(c, a, v, 0); }
static int pc_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "value", "preemptible", "may_preempt",
                                       "allowed_project_classes", "allowed_roles",
                                       "non_preemptible_roles", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "priority list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/priority-classes", NULL, cols);
}
static int pc_show(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "priority show", "GET", "/api/v1/priority-classes/", NULL, NULL);
}
static int pc_delete(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "priority delete", "DELETE", "/api/v1/priority-classes/", NULL,
                         NULL);
}

static int pc_policy(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"reclaim-cap", required_argument, 0, 'c'},
                                       {"reclaim-window", required_argument, 0, 'w'},
                                       {"borrow-half-life", required_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    static const char *const flag[] = {['c'] = "--reclaim-cap", ['w'] = "--reclaim-window",
                                       ['h'] = "--borrow-half-life"};
    static const char *const field[] = {['c'] = "reclaim_cap", ['w'] = "reclaim_window_seconds",
                                        ['h'] = "borrow_half_life_seconds"};
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "priority policy", &rc)) != -1) {
        if (c == -2) goto out;
        char *end;
        long long v = strtoll(optarg, &end, 10);
        if (!*optarg || *end) {
            rc = cli_error(CLI_USAGE, "priority policy: %s must be a number, got '%s'", flag[c],
                           optarg);
            goto out;
        }
        json_object_set_new(body, field[c], json_integer(v));
    }
    if (optind < argc)
        rc = cli_error(CLI_USAGE, "priority policy: unexpected argument '%s'", argv[optind]);
    else if (json_object_size(body) == 0)
        rc = cli_run_call(ctx, "GET", "/api/v1/scheduler-policy", NULL, NULL);
    else
        rc = cli_run_call(ctx, "PUT", "/api/v1/scheduler-policy", body, NULL);
out:
    json_decref(body);
    return rc;
}

int cli_cmd_priority(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", pc_list, usage}, {"show", pc_show, usage}, {"create", pc_create, usage},
        {"set", pc_set, usage},   {"delete", pc_delete, usage}, {"policy", pc_policy, usage},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
