/*
 * cmd_jointoken.c - `gpupool jointoken create|list|revoke` (ops-engineer).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] = "usage: gpupool jointoken <command>\n"
                            "\n"
                            "  create [--ttl SECONDS]   a token agents join with (shown once)\n"
                            "  list\n"
                            "  revoke ID\n";

static int j_create(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"ttl", required_argument, 0, 't'}, {0, 0, 0, 0}};
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "jointoken create", &rc)) != -1) {
        if (c == -2) goto out;
        char *end;
        long long v = strtoll(optarg, &end, 10);
        if (!*optarg || *end) {
            rc = cli_error(CLI_USAGE, "jointoken create: --ttl must be a number of seconds");
            goto out;
        }
        json_object_set_new(body, "ttl_seconds", json_integer(v));
    }
    if (optind < argc) rc = cli_error(CLI_USAGE, "jointoken create: unexpected argument");
    else rc = cli_run_call(ctx, "POST", "/api/v1/join-tokens", body, NULL);
out:
    json_decref(body);
    return rc;
}

static int j_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "state", "uses", "created_by", "expires_at", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "jointoken list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/join-tokens", NULL, cols);
}

static int j_revoke(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "jointoken revoke", "DELETE", "/api/v1/join-tokens/", NULL,
                         NULL);
}

int cli_cmd_jointoken(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", j_create, "usage: gpupool jointoken create [--ttl SECONDS]\n\nDefault 1 h, "
                             "at most 30 days.\n"},
        {"list", j_list, "usage: gpupool jointoken list\n"},
        {"revoke", j_revoke, "usage: gpupool jointoken revoke ID\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
