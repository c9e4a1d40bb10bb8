/*
 * cmd_tenant.c - `gpupool tenant create|list|show|overview`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "usage: gpupool tenant <command>\n"
                            "\n"
                            "  create NAME [--display-name TEXT]   create a tenant (platform-admin)\n"
                            "  list                                tenants you can see\n"
                            "  show NAME                           one tenant\n"
                            "  overview NAME                       quota, allocation, jobs, usage, models, alarms\n";

static int t_create(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"display-name", required_argument, 0, 'n'}, {0, 0, 0, 0}};
    const char *display = NULL;
    int c, rc = 0;
    optind = 0; /* 0: glibc re-initialises getopt (and permutes again) */
    while ((c = cli_getopt(argc, argv, lo, "tenant create", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 'n') display = optarg;
    }
    if (argc - optind != 1) return cli_error(CLI_USAGE, "tenant create: expected one NAME");
    json_t *body = json_pack("{s:s}", "name", argv[optind]), *out;
    if (display) json_object_set_new(body, "display_name", json_string(display));
    rc = cli_call(ctx, "POST", "/api/v1/tenants", body, &out);
    json_decref(body);
    if (rc) return rc;
    cli_print_object(ctx, out);
    json_decref(out);
    return CLI_OK;
}

static int t_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "display_name", "created_at", NULL};
    (void)argv;
    if (argc > 1) return cli_error(CLI_USAGE, "tenant list: unexpected argument '%s'", argv[1]);
    json_t *out;
    int rc = cli_call(ctx, "GET", "/api/v1/tenants", NULL, &out);
    if (rc) return rc;
    cli_print_list(ctx, out, cols);
    json_decref(out);
    return CLI_OK;
}

static int t_show(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 2) return cli_error(CLI_USAGE, "tenant show: expected one NAME");
    strbuf path = SB_INIT;
    json_t *out;
    sb_adds(&path, "/api/v1/tenants/");
    cli_add_escaped(&path, argv[1]);
    int rc = cli_call(ctx, "GET", path.buf, NULL, &out);
    sb_release(&path);
    if (rc) return rc;
    cli_print_object(ctx, out);
    json_decref(out);
    return CLI_OK;
}

static int t_overview(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 2) return cli_error(CLI_USAGE, "tenant overview: expected one NAME");
    strbuf path = SB_INIT;
    json_t *out;
    sb_adds(&path, "/api/v1/tenants/");
    cli_add_escaped(&path, argv[1]);
    sb_adds(&path, "/overview");
    int rc = cli_call(ctx, "GET", path.buf, NULL, &out);
    sb_release(&path);
    if (rc) return rc;
    cli_print_overview(ctx, out);
    json_decref(out);
    return CLI_OK;
}

int cli_cmd_tenant(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", t_create,
         "usage: gpupool tenant create NAME [--display-name TEXT]\n\nCreate a tenant. NAME: "
         "lower-case letters, digits and '-'.\n"},
        {"list", t_list, "usage: gpupool tenant list\n\nList the tenants you can see.\n"},
        {"show", t_show, "usage: gpupool tenant show NAME\n\nShow one tenant.\n"},
        {"overview", t_overview,
         "usage: gpupool tenant overview NAME\n\nThe tenant's quota and allocation, live jobs "
         "with their reasons, this month's usage, model services and alarms (tenant readers).\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
