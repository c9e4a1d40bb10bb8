/*
 * cmd_binding.c - `gpupool binding list [--gpu UUID] [--job ID] [--tenant T] [--at TIME]`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool binding <command>\n"
    "\n"
    "  list [--gpu UUID] [--job ID] [--tenant T] [--node N] [--at TIME]\n"
    "        which job held which GPU (or slice), from when to when and why it ended;\n"
    "        --at RFC3339: only what was held at that moment; tenant members name their\n"
    "        tenant; --node (ops): the incident view of a node\n"
    "  release ID --reason TEXT   end a binding by hand (ops-engineer; the job is requeued\n"
    "        or failed per its recovery policy)\n";

static int b_list(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"gpu", required_argument, 0, 0},
                                       {"job", required_argument, 0, 1},
                                       {"tenant", required_argument, 0, 2},
                                       {"at", required_argument, 0, 3},
                                       {"node", required_argument, 0, 4},
                                       {0, 0, 0, 0}};
    static const char *const names[] = {"gpu", "job", "tenant", "at", "node"};
    static const char *const cols[] = {"job_name", "unit", "gpu", "node", "form", "share",
                                       "tenant", "project", "start", "end", "end_reason", "borrowed", NULL};
    const char *vals[5] = {0};
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "binding list", &rc)) != -1) {
        if (c == -2) return rc;
        if (c >= 0 && c < 5) vals[c] = optarg;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "binding list: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/bindings");
    char sep = '?';
    for (int i = 0; i < 5; i++) {
        if (!vals[i]) continue;
        sb_addf(&p, "%c%s=", sep, names[i]);
        cli_add_escaped(&p, vals[i]);
        sep = '&';
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int b_release(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"reason", required_argument, 0, 'r'}, {0, 0, 0, 0}};
    const char *reason = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "binding release", &rc)) != -1) {
        if (c == -2) return rc;
        reason = optarg;
    }
    if (argc - optind != 1) return cli_error(CLI_USAGE, "binding release: expected one ID");
    if (!reason) return cli_error(CLI_USAGE, "binding release: --reason is required");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/bindings/");
    cli_add_escaped(&p, argv[optind]);
    sb_adds(&p, "/release");
    json_t *body = json_pack("{s:s}", "reason", reason);
    rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

int cli_cmd_binding(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {{"list", b_list, usage}, {"release", b_release, usage},
                                     {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
