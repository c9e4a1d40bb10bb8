/*
 * cmd_pool.c - `gpupool pool create|set|list|show|delete`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool pool <command>\n"
    "\n"
    "  create NAME [--description T] [--tenants A,B] [--project-classes C,D]\n"
    "              [--borrow-half-life S]\n"
    "  set NAME [--description T] [--tenants A,B] [--project-classes C,D]\n"
    "           [--borrow-half-life S|default]\n"
    "             (empty lists: every tenant / every project class may use it;\n"
    "             --borrow-half-life: fair use's half-life of recent borrowing in the\n"
    "             pool, 60 .. 7776000 s; default: the scheduler policy's)\n"
    "  list | show NAME | delete NAME\n";

static int write_pool(cli_ctx *ctx, int argc, char **argv, int create) {
    static const struct option lo[] = {{"description", required_argument, 0, 'd'},
                                       {"tenants", required_argument, 0, 't'},
                                       {"project-classes", required_argument, 0, 'c'},
                                       {"borrow-half-life", required_argument, 0, 'L'},
                                       {0, 0, 0, 0}};
    const char *verb = create ? "pool create" : "pool set";
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 'd') json_object_set_new(body, "description", json_string(optarg));
        else if (c == 't') json_object_set_new(body, "tenants", cli_csv(optarg));
        else if (c == 'c') json_object_set_new(body, "project_classes", cli_csv(optarg));
        else if (c == 'L' && !strcmp(optarg, "default"))
            json_object_set_new(body, "borrow_half_life_seconds", json_null());
        else if (c == 'L') {
            char *end;
            long long v = strtoll(optarg, &end, 10);
            if (!*optarg || *end || v < 0) {
                rc = cli_error(CLI_USAGE, "%s: --borrow-half-life must be seconds or default, got "
                                          "'%s'",
                               verb, optarg);
                goto out;
            }
            json_object_set_new(body, "borrow_half_life_seconds", json_integer(v));
        }
    }
    if (argc - optind != 1) {
        rc = cli_error(CLI_USAGE, "%s: expected one NAME", verb);
        goto out;
    }
    rc = cli_write_named(ctx, "/api/v1/pools", argv[optind], body, create);
out:
    json_decref(body);
    return rc;
}

static int p_create(cli_ctx *c, int a, char **v) { return write_pool(c, a, v, 1); }
static int p_set(cli_ctx *c, int a, char **v) { return write_pool(c, a, v, 0); }
static int p_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "nodes", "tenants", "project_classes",
                                       "borrow_half_life_seconds", "description", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "pool list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/pools", NULL, cols);
}
static int p_show(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "pool show", "GET", "/api/v1/pools/", NULL, NULL);
}
static int p_delete(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "pool delete", "DELETE", "/api/v1/pools/", NULL, NULL);
}

int cli_cmd_pool(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", p_create, "usage: gpupool pool create NAME [--description T] [--tenants A,B] "
                             "[--project-classes C,D] [--borrow-half-life S]\n"},
        {"set", p_set, "usage: gpupool pool set NAME [--description T] [--tenants A,B] "
                       "[--project-classes C,D] [--borrow-half-life S|default]\n"},
        {"list", p_list, "usage: gpupool pool list\n"},
        {"show", p_show, "usage: gpupool pool show NAME\n"},
        {"delete", p_delete, "usage: gpupool pool delete NAME\n\nOnly an empty pool (no nodes, "
                             "no classes) can be deleted.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
