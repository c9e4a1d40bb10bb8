/*
 * cmd_binding.c - `gpupool binding list [--gpu UUID] [--job ID] [--tenant T] [--at TIME]`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool binding list [--gpu UUID] [--job ID] [--tenant T] [--at TIME]\n"
    "\n"
    "Which job held which GPU (or slice), from when to when and why it ended.\n"
    "--at RFC3339: only what was held at that moment. Tenant members name their tenant.\n";

static int b_list(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"gpu", required_argument, 0, 0},
                                       {"job", required_argument, 0, 1},
                                       {"tenant", required_argument, 0, 2},
                                       {"at", required_argument, 0, 3},
                                       {0, 0, 0, 0}};
    static const char *const names[] = {"gpu", "job", "tenant", "at"};
    static const char *const cols[] = {"job_name", "unit", "gpu", "node", "form", "share",
                                       "tenant", "project", "start", "end", "end_reason", NULL};
    const char *vals[4] = {0};
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "binding list", &rc)) != -1) {
        if (c == -2) return rc;
        if (c >= 0 && c < 4) vals[c] = optarg;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "binding list: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/bindings");
    char sep = '?';
    for (int i = 0; i < 4; i++) {
        if (!vals[i]) continue;
        sb_addf(&p, "%c%s=", sep, names[i]);
        cli_add_escaped(&p, vals[i]);
        sep = '&';
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

int cli_cmd_binding(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {{"list", b_list, usage}, {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
