/*
 * cmd_node.c - `gpupool node list|show|history|cordon|uncordon|drain|pool`.
 */
#include "cli.h"

#include <stdio.h>

static const char usage[] =
    "usage: gpupool node <command>\n"
    "\n"
    "  list                 nodes with state, pool, vendors and GPU count\n"
    "  show NAME            one node and its GPUs (vendor, driver, stack of each)\n"
    "  history NAME         its state transitions, newest first\n"
    "  cordon NAME          take no new work (ops-engineer)\n"
    "  drain NAME           finish running work, take no new work\n"
    "  uncordon NAME        back in service\n"
    "  pool NAME POOL       move the node to a resource pool (platform-admin)\n";

static const char *const hist_cols[] = {"at", "kind", "gpu", "from", "to", "cause", "actor", NULL};

static int n_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "state", "admin_state", "pool", "vendors",
                                       "gpu_count", "cpus", "memory_gib", "last_heartbeat",
                                       "next_maintenance.reservation",
                                       "next_maintenance.start", "next_maintenance.end", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "node list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/nodes", NULL, cols);
}
static int n_show(cli_ctx *c, int argc, char **argv) {
    return cli_name_call(c, argc, argv, "node show", "GET", "/api/v1/nodes/", NULL, NULL);
}
static int n_history(cli_ctx *c, int argc, char **argv) {
    return cli_name_call(c, argc, argv, "node history", "GET", "/api/v1/nodes/", "/history",
                         hist_cols);
}
static int n_cordon(cli_ctx *c, int argc, char **argv) {
    return cli_name_call(c, argc, argv, "node cordon", "POST", "/api/v1/nodes/", "/cordon", NULL);
}
static int n_uncordon(cli_ctx *c, int argc, char **argv) {
    return cli_name_call(c, argc, argv, "node uncordon", "POST", "/api/v1/nodes/", "/uncordon",
                         NULL);
}
static int n_drain(cli_ctx *c, int argc, char **argv) {
    return cli_name_call(c, argc, argv, "node drain", "POST", "/api/v1/nodes/", "/drain", NULL);
}
static int n_pool(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 3) return cli_error(CLI_USAGE, "node pool: expected NAME POOL");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/nodes/");
    cli_add_escaped(&p, argv[1]);
    sb_adds(&p, "/pool");
    json_t *body = json_pack("{s:s}", "pool", argv[2]);
    int rc = cli_run_call(ctx, "PUT", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

int cli_cmd_node(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", n_list, "usage: gpupool node list\n"},
        {"show", n_show, "usage: gpupool node show NAME\n"},
        {"history", n_history, "usage: gpupool node history NAME\n"},
        {"cordon", n_cordon, "usage: gpupool node cordon NAME\n\nTake no new work.\n"},
        {"uncordon", n_uncordon, "usage: gpupool node uncordon NAME\n"},
        {"drain", n_drain, "usage: gpupool node drain NAME\n\nLet running work finish; take no "
                           "new work.\n"},
        {"pool", n_pool, "usage: gpupool node pool NAME POOL\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
