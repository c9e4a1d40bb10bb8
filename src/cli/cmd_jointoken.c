/*
 * cmd_jointoken.c - `gpupool jointoken create|list|revoke` (ops-engineer).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] = "usage: gpupool jointoken <command>\n"
                            "\n"
                            "  create [--ttl SECONDS] [--node NAME | --uses N]\n"
                            "                           a token agents join with (shown once);\n"
                            "                           single-use unless --uses N\n"
                            "  list\n"
                            "  revoke ID\n";

static const char create_help[] =
    "usage: gpupool jointoken create [--ttl SECONDS] [--node NAME | --uses N]\n"
    "\n"
    "A join token registers nodes: one node by default (single-use), N nodes with --uses N\n"
    "(at most 10000; an agent with --simulate N or an inventory of N nodes needs N), or only\n"
    "the node named NAME with --node.  It expires after --ttl seconds (default 1 h, at most\n"
    "30 days).  A restarted agent needs no token: it keeps its node's credential.\n";

static int j_create(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"ttl", required_argument, 0, 't'},
                                       {"node", required_argument, 0, 'n'},
                                       {"uses", required_argument, 0, 'u'},
                                       {0, 0, 0, 0}};
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "jointoken create", &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 'n') {
            json_object_set_new(body, "node", json_string(optarg));
            continue;
        }
        char *end;
        long long v = strtoll(optarg, &end, 10);
        if (!*optarg || *end) {
            rc = cli_error(CLI_USAGE, "jointoken create: %s must be a number%s",
                           c == 't' ? "--ttl" : "--uses", c == 't' ? " of seconds" : "");
            goto out;
        }
        json_object_set_new(body, c == 't' ? "ttl_seconds" : "max_uses", json_integer(v));
    }
    if (optind < argc) rc = cli_error(CLI_USAGE, "jointoken create: unexpected argument");
    else if (json_object_get(body, "node") && json_object_get(body, "max_uses"))
        rc = cli_error(CLI_USAGE, "jointoken create: --node and --uses exclude each other");
    else rc = cli_run_call(ctx, "POST", "/api/v1/join-tokens", body, NULL);
out:
    json_decref(body);
    return rc;
}

static int j_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id",   "state",      "uses",       "max_uses",
                                       "node", "created_by", "expires_at", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "jointoken list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/join-tokens", NULL, cols);
}

static int j_revoke(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "jointoken revoke", "DELETE", "/api/v1/join-tokens/", NULL,
                         NULL);
}

int cli_cmd_jointoken(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", j_create, create_help},
        {"list", j_list, "usage: gpupool jointoken list\n"},
        {"revoke", j_revoke, "usage: gpupool jointoken revoke ID\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
