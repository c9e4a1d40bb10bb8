/*
 * cmd_policy.c - `gpupool policy show|set`: the security policy.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool policy <command>\n"
    "\n"
    "  show\n"
    "  set [--sensitive OP,OP,...] [--login-ttl S] [--max-token-ttl S] [--approval-ttl S]\n"
    "       (security-admin; --sensitive '' needs no approval for anything)\n";

static int p_show(cli_ctx *ctx, int argc, char **argv) {
    if (argc > 1) return cli_error(CLI_USAGE, "policy show: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/security-policy", NULL, NULL);
}

static int p_set(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"sensitive", required_argument, 0, 's'},
                                       {"login-ttl", required_argument, 0, 'l'},
                                       {"max-token-ttl", required_argument, 0, 'm'},
                                       {"approval-ttl", required_argument, 0, 'a'},
                                       {0, 0, 0, 0}};
    static const char *const keys[] = {"login_token_ttl_seconds", "max_token_ttl_seconds",
                                       "approval_ttl_seconds"};
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "policy set", &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 's') {
            json_object_set_new(body, "sensitive_operations", cli_csv(optarg));
            continue;
        }
        char *end;
        long long v = strtoll(optarg, &end, 10);
        if (!*optarg || *end) {
            rc = cli_error(CLI_USAGE, "policy set: %s must be a number of seconds, got '%s'",
                           c == 'l' ? "--login-ttl" : c == 'm' ? "--max-token-ttl" : "--approval-ttl",
                           optarg);
            goto out;
        }
        json_object_set_new(body, keys[c == 'l' ? 0 : c == 'm' ? 1 : 2], json_integer(v));
    }
    if (optind < argc) rc = cli_error(CLI_USAGE, "policy set: unexpected argument '%s'", argv[optind]);
    else if (json_object_size(body) == 0) rc = cli_error(CLI_USAGE, "policy set: nothing to change");
    else rc = cli_run_call(ctx, "PUT", "/api/v1/security-policy", body, NULL);
out:
    json_decref(body);
    return rc;
}

int cli_cmd_policy(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"show", p_show, "usage: gpupool policy show\n\nShow the security policy.\n"},
        {"set", p_set,
         "usage: gpupool policy set [--sensitive OP,OP,...] [--login-ttl S]\n"
         "                          [--max-token-ttl S] [--approval-ttl S]\n\nChange the "
         "security policy (security-admin). Operations: tenant.quota.raise,\n"
         "member.grant_global, member.grant, vendor.create, priority_class.change,\n"
         "audit.export, tenant.create, user.create.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
