/*
 * cmd_usage.c - `gpupool usage records --tenant T [--project P]`: the
 * gateway's usage records (one per request).  Reports come later.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool usage <command>\n"
    "\n"
    "  records --tenant T [--project P] [--key ID] [--limit N]\n"
    "          the gateway's usage records, newest first\n";

static int u_records(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"project", required_argument, 0, 'p'},
                                       {"key", required_argument, 0, 'k'},
                                       {"limit", required_argument, 0, 'l'},
                                       {0, 0, 0, 0}};
    static const char *const cols[] = {"at", "project", "app", "key_name", "model", "kind",
                                       "prompt_tokens", "completion_tokens", "estimated",
                                       "status", "latency_ms", NULL};
    const char *tenant = NULL, *project = NULL, *key = NULL, *limit = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "usage records", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') tenant = optarg;
        else if (c == 'p') project = optarg;
        else if (c == 'k') key = optarg;
        else if (c == 'l') limit = optarg;
    }
    if (!tenant) return cli_error(CLI_USAGE, "usage records: --tenant is required");
    if (optind < argc)
        return cli_error(CLI_USAGE, "usage records: unexpected argument '%s'", argv[optind]);
    if (limit) {
        char *end;
        long long v = strtoll(limit, &end, 10);
        if (!*limit || *end || v < 1 || v > 5000)
            return cli_error(CLI_USAGE, "usage records: --limit must be 1..5000, got '%s'", limit);
    }
    strbuf p = SB_INIT;
    cli_scope_path(&p, tenant, project);
    sb_adds(&p, "/usage-records");
    char sep = '?';
    if (key) {
        sb_addc(&p, sep);
        sb_adds(&p, "key=");
        cli_add_escaped(&p, key);
        sep = '&';
    }
    if (limit) {
        sb_addc(&p, sep);
        sb_adds(&p, "limit=");
        sb_adds(&p, limit);
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

int cli_cmd_usage(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"records", u_records,
         "usage: gpupool usage records --tenant T [--project P] [--key ID] [--limit N]\n"
         "\n"
         "The gateway's usage records, newest first (default 100, at most 5000): time,\n"
         "project, application, key, model, tokens, latency, status.  Without --project:\n"
         "the whole tenant (tenant-admins, tenant viewers); project members give --project.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
