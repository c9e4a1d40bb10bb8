/*
 * cmd_model.c - `gpupool model create|list|show|update|delete --tenant T`:
 * a tenant's model services (their endpoints: cmd_endpoint.c).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool model <command> --tenant T\n"
    "\n"
    "  create NAME [--visibility private|public] [--description D]\n"
    "                         a model service of the tenant (public: platform-admin)\n"
    "  list                   the tenant's models\n"
    "  show NAME              one model with its endpoints\n"
    "  update NAME [--visibility V] [--description D]\n"
    "  delete NAME            the model and its endpoints\n"
    "\n"
    "Endpoints: gpupool endpoint --help.  Keys name the models they may use:\n"
    "gpupool key --help.\n";

typedef struct mopts {
    const char *tenant, *visibility, *description;
} mopts;

/* Parse options and check exactly `nargs` positional arguments; 0 or an exit code. */
static int parse(int argc, char **argv, const char *verb, mopts *o, int nargs, int fields) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"visibility", required_argument, 0, 'v'},
                                       {"description", required_argument, 0, 'd'},
                                       {0, 0, 0, 0}};
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if ((c == 'v' || c == 'd') && !fields)
            return cli_error(CLI_USAGE, "%s: --%s is not an option here", verb,
                             c == 'v' ? "visibility" : "description");
        if (c == 't') o->tenant = optarg;
        else if (c == 'v') o->visibility = optarg;
        else if (c == 'd') o->description = optarg;
    }
    if (!o->tenant) return cli_error(CLI_USAGE, "%s: --tenant is required", verb);
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %s", verb, nargs ? "one NAME" : "no arguments");
    return 0;
}

static void models_path(strbuf *p, const char *tenant, const char *name) {
    cli_scope_path(p, tenant, NULL);
    sb_adds(p, "/models");
    if (name) {
        sb_addc(p, '/');
        cli_add_escaped(p, name);
    }
}

/* {"visibility","description"} from the options (new reference). */
static json_t *fields_body(const mopts *o) {
    json_t *b = json_object();
    if (o->visibility) json_object_set_new(b, "visibility", json_string(o->visibility));
    if (o->description) json_object_set_new(b, "description", json_string(o->description));
    return b;
}

static int m_create(cli_ctx *ctx, int argc, char **argv) {
    mopts o;
    int rc = parse(argc, argv, "model create", &o, 1, 1);
    if (rc) return rc;
    json_t *body = fields_body(&o);
    json_object_set_new(body, "name", json_string(argv[optind]));
    strbuf p = SB_INIT;
    models_path(&p, o.tenant, NULL);
    rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    sb_release(&p);
    json_decref(body);
    return rc;
}

static int m_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "visibility", "description", "created_by",
                                       "created_at", NULL};
    mopts o;
    int rc = parse(argc, argv, "model list", &o, 0, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    models_path(&p, o.tenant, NULL);
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int m_show(cli_ctx *ctx, int argc, char **argv) {
    mopts o;
    int rc = parse(argc, argv, "model show", &o, 1, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    models_path(&p, o.tenant, argv[optind]);
    rc = cli_run_call(ctx, "GET", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

static int m_update(cli_ctx *ctx, int argc, char **argv) {
    mopts o;
    int rc = parse(argc, argv, "model update", &o, 1, 1);
    if (rc) return rc;
    if (!o.visibility && !o.description)
        return cli_error(CLI_USAGE,
                         "model update: nothing to change (--visibility, --description)");
    json_t *body = fields_body(&o);
    strbuf p = SB_INIT;
    models_path(&p, o.tenant, argv[optind]);
    rc = cli_run_call(ctx, "PATCH", p.buf, body, NULL);
    sb_release(&p);
    json_decref(body);
    return rc;
}

static int m_delete(cli_ctx *ctx, int argc, char **argv) {
    mopts o;
    int rc = parse(argc, argv, "model delete", &o, 1, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    models_path(&p, o.tenant, argv[optind]);
    rc = cli_run_call(ctx, "DELETE", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

int cli_cmd_model(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", m_create,
         "usage: gpupool model create NAME --tenant T [--visibility private|public]\n"
         "       [--description D]\n"
         "\n"
         "A model service of the tenant (model.manage: tenant-admin, platform-admin).\n"
         "Private models serve only the tenant's keys; public ones every tenant's, and\n"
         "only a platform-admin publishes (no two tenants publish the same name).\n"},
        {"list", m_list, "usage: gpupool model list --tenant T\n"},
        {"show", m_show, "usage: gpupool model show NAME --tenant T\n\nThe model with its "
                         "endpoints and their health.\n"},
        {"update", m_update,
         "usage: gpupool model update NAME --tenant T [--visibility private|public]\n"
         "       [--description D]\n"
         "\n"
         "Publishing and unpublishing need a platform-admin.\n"},
        {"delete", m_delete, "usage: gpupool model delete NAME --tenant T\n\nDelete the model "
                             "and its endpoints (usage records keep its name).\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
