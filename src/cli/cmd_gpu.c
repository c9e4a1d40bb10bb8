/*
 * cmd_gpu.c - `gpupool gpu list|show|history|cordon|uncordon|drain|reset|mode|move`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool gpu <command>\n"
    "\n"
    "  list [--node N] [--health healthy|degraded|failed]\n"
    "  show UUID            one GPU with its vendor, driver, stack, signals and slices\n"
    "  history UUID         health and admin transitions, newest first\n"
    "  cordon UUID | drain UUID | uncordon UUID     (ops-engineer)\n"
    "  reset UUID           clear a failed or degraded state after repair (ops-engineer)\n"
    "  mode UUID whole|mig|shared                   (ops-engineer)\n"
    "  move UUID --to NODE  give the card to another node, once its node is drained\n"
    "                       (ops-engineer, platform-admin)\n";

static int g_list(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"node", required_argument, 0, 'n'},
                                       {"health", required_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    static const char *const cols[] = {"node", "index", "uuid", "vendor", "model", "memory_gib",
                                       "mode", "driver_version", "stack", "health",
                                       "admin_state", "allocatable", NULL};
    const char *node = NULL, *health = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "gpu list", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 'n') node = optarg;
        else if (c == 'h') health = optarg;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "gpu list: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/gpus");
    char sep = '?';
    if (node) {
        sb_addf(&p, "%cnode=", sep);
        cli_add_escaped(&p, node);
        sep = '&';
    }
    if (health) {
        sb_addf(&p, "%chealth=", sep);
        cli_add_escaped(&p, health);
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static const char *const hist_cols[] = {"at", "kind", "from", "to", "cause", "actor", NULL};
static int g_show(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "gpu show", "GET", "/api/v1/gpus/", NULL, NULL);
}
static int g_history(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "gpu history", "GET", "/api/v1/gpus/", "/history", hist_cols);
}
static int g_cordon(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "gpu cordon", "POST", "/api/v1/gpus/", "/cordon", NULL);
}
static int g_uncordon(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "gpu uncordon", "POST", "/api/v1/gpus/", "/uncordon", NULL);
}
static int g_drain(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "gpu drain", "POST", "/api/v1/gpus/", "/drain", NULL);
}
static int g_reset(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "gpu reset", "POST", "/api/v1/gpus/", "/reset", NULL);
}
static int g_mode(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 3) return cli_error(CLI_USAGE, "gpu mode: expected UUID whole|mig|shared");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/gpus/");
    cli_add_escaped(&p, argv[1]);
    sb_adds(&p, "/mode");
    json_t *body = json_pack("{s:s}", "mode", argv[2]);
    int rc = cli_run_call(ctx, "PUT", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int g_move(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"to", required_argument, 0, 't'}, {0, 0, 0, 0}};
    const char *to = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "gpu move", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') to = optarg;
    }
    if (optind + 1 != argc || !to)
        return cli_error(CLI_USAGE, "gpu move: expected UUID --to NODE");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/gpus/");
    cli_add_escaped(&p, argv[optind]);
    sb_adds(&p, "/move");
    json_t *body = json_pack("{s:s}", "node", to);
    rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

int cli_cmd_gpu(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", g_list, "usage: gpupool gpu list [--node N] [--health STATE]\n"},
        {"show", g_show, "usage: gpupool gpu show UUID\n"},
        {"history", g_history, "usage: gpupool gpu history UUID\n"},
        {"cordon", g_cordon, "usage: gpupool gpu cordon UUID\n"},
        {"uncordon", g_uncordon, "usage: gpupool gpu uncordon UUID\n"},
        {"drain", g_drain, "usage: gpupool gpu drain UUID\n"},
        {"reset", g_reset, "usage: gpupool gpu reset UUID\n\nMark a repaired GPU healthy.\n"},
        {"mode", g_mode, "usage: gpupool gpu mode UUID whole|mig|shared\n\nmig needs MIG "
                         "instances made on the node; gpupool never changes MIG itself.\n"},
        {"move", g_move,
         "usage: gpupool gpu move UUID --to NODE\n\nGive a card's record (health, mode, "
         "history) to node NODE, where the card is now.\nAnother node's report of a card is "
         "refused until then. Allowed once the card's\nnode is drained (gpupool node drain) or "
         "lost, and no job holds the card.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
