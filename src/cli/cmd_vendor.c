/*
 * cmd_vendor.c - `gpupool vendor grant|list|revoke`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool vendor <command>\n"
    "\n"
    "  grant USER --ttl SECONDS [--node N]... [--work-order W]...\n"
    "                     time-boxed access for a vendor-only account (ops-engineer;\n"
    "                     needs approval by default)\n"
    "  list               grants (ops-engineers: all; a vendor: its own)\n"
    "  revoke ID          end a grant at once\n";

static int v_grant(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"ttl", required_argument, 0, 't'},
                                       {"node", required_argument, 0, 'n'},
                                       {"work-order", required_argument, 0, 'w'},
                                       {0, 0, 0, 0}};
    json_t *nodes = json_array(), *wos = json_array();
    const char *ttl = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "vendor grant", &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 't') ttl = optarg;
        else if (c == 'n') json_array_append_new(nodes, json_string(optarg));
        else if (c == 'w') json_array_append_new(wos, json_string(optarg));
    }
    char *end = NULL;
    long long t = ttl ? strtoll(ttl, &end, 10) : 0;
    if (argc - optind != 1) rc = cli_error(CLI_USAGE, "vendor grant: expected one USER");
    else if (!ttl || !*ttl || *end)
        rc = cli_error(CLI_USAGE, "vendor grant: --ttl SECONDS is required");
    if (rc) goto out;
    json_t *body = json_pack("{s:s,s:O,s:O,s:I}", "user", argv[optind], "nodes", nodes,
                             "work_orders", wos, "ttl_seconds", (json_int_t)t);
    rc = cli_run_call(ctx, "POST", "/api/v1/vendor-access", body, NULL);
    json_decref(body);
out:
    json_decref(nodes);
    json_decref(wos);
    return rc;
}

static int v_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "user", "state", "nodes", "work_orders",
                                       "expires_at", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "vendor list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/vendor-access", NULL, cols);
}

static int v_revoke(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 2) return cli_error(CLI_USAGE, "vendor revoke: expected one ID");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/vendor-access/");
    cli_add_escaped(&p, argv[1]);
    int rc = cli_run_call(ctx, "DELETE", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

int cli_cmd_vendor(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"grant", v_grant,
         "usage: gpupool vendor grant USER --ttl SECONDS [--node N]... [--work-order W]...\n\n"
         "Give a vendor-only account access to named nodes and work orders until\nnow + "
         "SECONDS (at most 90 days).\n"},
        {"list", v_list, "usage: gpupool vendor list\n\nList vendor access grants.\n"},
        {"revoke", v_revoke, "usage: gpupool vendor revoke ID\n\nRevoke a grant; the vendor's "
                             "calls are refused at once.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
