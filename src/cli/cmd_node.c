/*
 * cmd_node.c - `gpupool node list|show|history|cordon|uncordon|drain|pool|label`.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool node <command>\n"
    "\n"
    "  list                 nodes with state, pool, vendors and GPU count\n"
    "  show NAME            one node and its GPUs (vendor, driver, stack of each)\n"
    "  history NAME         its state transitions, newest first\n"
    "  cordon NAME          take no new work (ops-engineer)\n"
    "  drain NAME           finish running work, take no new work\n"
    "  uncordon NAME        back in service\n"
    "  pool NAME POOL       move the node to a resource pool (platform-admin)\n"
    "  label NAME KEY=VALUE... KEY-...\n"
    "                       set (or, KEY-, remove) labels: rack and switch place jobs that\n"
    "                       span nodes (ops-engineer)\n";

static const char *const hist_cols[] = {"at", "kind", "gpu", "from", "to", "cause", "actor", NULL};

static int n_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "state", "admin_state", "pool", "vendors",
                                       "gpu_count", "cpus", "memory_gib", "last_heartbeat",
                                       "next_maintenance.reservation",
                                       "next_maintenance.start", "next_maintenance.end",
                                       "next_reservation.reservation",
                                       "next_reservation.start", "next_reservation.end", NULL};
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

/* `node label NAME rack=r1 switch=s1 old-`: PATCH its labels (KEY- removes KEY). */
static int n_label(cli_ctx *ctx, int argc, char **argv) {
    if (argc < 3) return cli_error(CLI_USAGE, "node label: expected NAME KEY=VALUE... or KEY-");
    json_t *labels = json_object();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        size_t n = strlen(a);
        char key[128];
        if (eq && eq > a && (size_t)(eq - a) < sizeof key) {
            snprintf(key, sizeof key, "%.*s", (int)(eq - a), a);
            json_t *v = json_string(eq + 1);
            if (!v) {
                json_decref(labels);
                return cli_error(CLI_USAGE, "node label: '%s' is not valid UTF-8", a);
            }
            json_object_set_new(labels, key, v);
        } else if (!eq && n > 1 && n < sizeof key && a[n - 1] == '-') {
            snprintf(key, sizeof key, "%.*s", (int)(n - 1), a);
            json_object_set_new(labels, key, json_null());
        } else {
            json_decref(labels);
            return cli_error(CLI_USAGE, "node label: expected KEY=VALUE or KEY-, got '%s'", a);
        }
    }
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/nodes/");
    cli_add_escaped(&p, argv[1]);
    sb_adds(&p, "/labels");
    json_t *body = json_pack("{s:o}", "labels", labels);
    int rc = cli_run_call(ctx, "PATCH", p.buf, body, NULL);
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
        {"label", n_label,
         "usage: gpupool node label NAME KEY=VALUE... KEY-...\n\nSet labels on the node (KEY- "
         "removes one): rack and switch are the topology\njobs that span nodes are placed by "
         "(gpupool job submit --nodes).\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
