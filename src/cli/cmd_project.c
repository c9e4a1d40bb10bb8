/*
 * cmd_project.c - `gpupool project create|list|show|overview --tenant T`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool project <command> --tenant TENANT\n"
    "\n"
    "  create NAME --tenant T [--class C]   create a project (class: production,\n"
    "                                       development (default) or research)\n"
    "  list --tenant T                      projects you can see in a tenant\n"
    "  show NAME --tenant T                 one project\n"
    "  overview NAME --tenant T             quota (bounded by the tenant's), jobs, usage, alarms\n";

static const struct option lo[] = {
    {"tenant", required_argument, 0, 't'}, {"class", required_argument, 0, 'c'}, {0, 0, 0, 0}};

/* Parse --tenant/--class; returns 0 or an exit code. */
static int parse(int argc, char **argv, const char *verb, const char **tenant, const char **cls,
                 int nargs) {
    int c, rc = 0;
    optind = 0; /* 0: glibc re-initialises getopt (and permutes again) */
    *tenant = NULL;
    if (cls) *cls = NULL;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') *tenant = optarg;
        else if (c == 'c' && cls) *cls = optarg;
        else if (c == 'c') return cli_error(CLI_USAGE, "%s: --class is not an option here", verb);
    }
    if (!*tenant) return cli_error(CLI_USAGE, "%s: --tenant is required", verb);
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %s", verb, nargs ? "one NAME" : "no arguments");
    return 0;
}

static void base(strbuf *p, const char *tenant) {
    sb_adds(p, "/api/v1/tenants/");
    cli_add_escaped(p, tenant);
    sb_adds(p, "/projects");
}

static int p_create(cli_ctx *ctx, int argc, char **argv) {
    const char *tenant, *cls;
    int rc = parse(argc, argv, "project create", &tenant, &cls, 1);
    if (rc) return rc;
    json_t *body = json_pack("{s:s}", "name", argv[optind]), *out;
    if (cls) json_object_set_new(body, "class", json_string(cls));
    strbuf p = SB_INIT;
    base(&p, tenant);
    rc = cli_call(ctx, "POST", p.buf, body, &out);
    sb_release(&p);
    json_decref(body);
    if (rc) return rc;
    cli_print_object(ctx, out);
    json_decref(out);
    return CLI_OK;
}

static int p_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "class", "tenant", "created_at", NULL};
    const char *tenant;
    int rc = parse(argc, argv, "project list", &tenant, NULL, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    json_t *out;
    base(&p, tenant);
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    cli_print_list(ctx, out, cols);
    json_decref(out);
    return CLI_OK;
}

static int p_show(cli_ctx *ctx, int argc, char **argv) {
    const char *tenant;
    int rc = parse(argc, argv, "project show", &tenant, NULL, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    json_t *out;
    base(&p, tenant);
    sb_addc(&p, '/');
    cli_add_escaped(&p, argv[optind]);
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    cli_print_object(ctx, out);
    json_decref(out);
    return CLI_OK;
}

static int p_overview(cli_ctx *ctx, int argc, char **argv) {
    const char *tenant;
    int rc = parse(argc, argv, "project overview", &tenant, NULL, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    json_t *out;
    base(&p, tenant);
    sb_addc(&p, '/');
    cli_add_escaped(&p, argv[optind]);
    sb_adds(&p, "/overview");
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    cli_print_overview(ctx, out);
    json_decref(out);
    return CLI_OK;
}

int cli_cmd_project(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", p_create,
         "usage: gpupool project create NAME --tenant T [--class production|development|"
         "research]\n\nCreate a project in a tenant (platform-admin or that tenant's "
         "tenant-admin).\n"},
        {"list", p_list, "usage: gpupool project list --tenant T\n\nList projects you can see.\n"},
        {"show", p_show, "usage: gpupool project show NAME --tenant T\n\nShow one project.\n"},
        {"overview", p_overview,
         "usage: gpupool project overview NAME --tenant T\n\nThe project's quota and allocation "
         "(available bounded by the tenant's), live jobs, this month's usage and alarms.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
