/*
 * cmd_app.c - `gpupool app create|list|delete|bind|unbind|rag --tenant T --project P`:
 * applications (named consumers of a project that own API keys), and the
 * binding of an application's model to knowledge bases (docs/kb.md).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool app <command> --tenant T --project P\n"
    "\n"
    "  create NAME [--description D]   an application of the project\n"
    "  list                            the project's applications (with live key counts)\n"
    "  delete NAME                     delete one (its keys must be revoked first)\n"
    "  bind NAME --model M --kbs K1,K2 [--k N]\n"
    "                                  answer chat for model M from these knowledge bases\n"
    "  unbind NAME --model M           stop doing that\n"
    "  rag NAME                        the application's model-to-KB bindings\n";

typedef struct aopts {
    const char *tenant, *project, *description;
} aopts;

static int parse(int argc, char **argv, const char *verb, aopts *o, int nargs) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"project", required_argument, 0, 'p'},
                                       {"description", required_argument, 0, 'd'},
                                       {0, 0, 0, 0}};
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') o->tenant = optarg;
        else if (c == 'p') o->project = optarg;
        else if (c == 'd') o->description = optarg;
    }
    if (!o->tenant || !o->project)
        return cli_error(CLI_USAGE, "%s: --tenant and --project are required", verb);
    if (o->description && strcmp(verb, "app create") != 0)
        return cli_error(CLI_USAGE, "%s: --description is not an option here", verb);
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %s", verb, nargs ? "one NAME" : "no arguments");
    return 0;
}

static void apps_path(strbuf *p, const aopts *o, const char *name) {
    cli_scope_path(p, o->tenant, o->project);
    sb_adds(p, "/apps");
    if (name) {
        sb_addc(p, '/');
        cli_add_escaped(p, name);
    }
}

static int a_create(cli_ctx *ctx, int argc, char **argv) {
    aopts o;
    int rc = parse(argc, argv, "app create", &o, 1);
    if (rc) return rc;
    json_t *body = json_pack("{s:s}", "name", argv[optind]);
    if (o.description) json_object_set_new(body, "description", json_string(o.description));
    strbuf p = SB_INIT;
    apps_path(&p, &o, NULL);
    rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    sb_release(&p);
    json_decref(body);
    return rc;
}

static int a_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "keys", "description", "created_at", NULL};
    aopts o;
    int rc = parse(argc, argv, "app list", &o, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    apps_path(&p, &o, NULL);
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int a_delete(cli_ctx *ctx, int argc, char **argv) {
    aopts o;
    int rc = parse(argc, argv, "app delete", &o, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    apps_path(&p, &o, argv[optind]);
    rc = cli_run_call(ctx, "DELETE", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

/* bind / unbind / rag: --tenant, --project, and --model/--kbs/--k where `with` allows. */
static int rag_verb(cli_ctx *ctx, int argc, char **argv, const char *verb, int with) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"project", required_argument, 0, 'p'},
                                       {"model", required_argument, 0, 'm'},
                                       {"kbs", required_argument, 0, 'b'},
                                       {"k", required_argument, 0, 'k'},
                                       {0, 0, 0, 0}};
    aopts o;
    const char *model = NULL, *kbs = NULL, *k = NULL;
    int c, rc = 0;
    memset(&o, 0, sizeof o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') o.tenant = optarg;
        else if (c == 'p') o.project = optarg;
        else if (c == 'm' && with >= 1) model = optarg;
        else if (c == 'b' && with == 2) kbs = optarg;
        else if (c == 'k' && with == 2) k = optarg;
        else return cli_error(CLI_USAGE, "%s: %s is not an option here", verb, argv[optind - 1]);
    }
    if (!o.tenant || !o.project)
        return cli_error(CLI_USAGE, "%s: --tenant and --project are required", verb);
    if (with >= 1 && !model) return cli_error(CLI_USAGE, "%s: --model is required", verb);
    if (with == 2 && !kbs) return cli_error(CLI_USAGE, "%s: --kbs is required", verb);
    if (argc - optind != 1) return cli_error(CLI_USAGE, "%s: expected one NAME", verb);
    strbuf p = SB_INIT;
    apps_path(&p, &o, argv[optind]);
    sb_adds(&p, "/rag");
    if (model) {
        sb_addc(&p, '/');
        cli_add_escaped(&p, model);
    }
    json_t *body = NULL;
    if (with == 2) {
        body = json_pack("{s:o}", "kbs", cli_csv(kbs));
        if (k) {
            char *end;
            long n = strtol(k, &end, 10);
            if (*end || n < 1) {
                json_decref(body);
                sb_release(&p);
                return cli_error(CLI_USAGE, "%s: --k must be a positive number", verb);
            }
            json_object_set_new(body, "k", json_integer(n));
        }
    }
    static const char *const cols[] = {"model", "kbs", "k", "updated_at", NULL};
    rc = cli_run_call(ctx, with == 2 ? "PUT" : with == 1 ? "DELETE" : "GET", p.buf, body,
                      with == 0 ? cols : NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int a_bind(cli_ctx *ctx, int argc, char **argv) { return rag_verb(ctx, argc, argv, "app bind", 2); }
static int a_unbind(cli_ctx *ctx, int argc, char **argv) {
    return rag_verb(ctx, argc, argv, "app unbind", 1);
}
static int a_rag(cli_ctx *ctx, int argc, char **argv) { return rag_verb(ctx, argc, argv, "app rag", 0); }

int cli_cmd_app(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", a_create,
         "usage: gpupool app create NAME --tenant T --project P [--description D]\n"
         "\n"
         "An application of the project (app.manage: project-admin, tenant-admin).\n"
         "Keys may belong to it: gpupool key create NAME --app APP ...\n"},
        {"list", a_list, "usage: gpupool app list --tenant T --project P\n"},
        {"delete", a_delete, "usage: gpupool app delete NAME --tenant T --project P\n\nRefused "
                             "(conflict) while it has live keys: revoke them first.\n"},
        {"bind", a_bind,
         "usage: gpupool app bind NAME --tenant T --project P --model M --kbs K1,K2 [--k N]\n"
         "\n"
         "Chat requests of the application's keys for model M get the N (default 5) best chunks\n"
         "of these knowledge bases for the last user message, as a system message with numbered\n"
         "sources, and the answer carries \"sources\".  KBs must be tenant-wide or of project P.\n"
         "Replaces an earlier binding of M (app.manage: project-admin, tenant-admin).\n"},
        {"unbind", a_unbind, "usage: gpupool app unbind NAME --tenant T --project P --model M\n"},
        {"rag", a_rag, "usage: gpupool app rag NAME --tenant T --project P\n\nThe application's "
                       "model-to-KB bindings.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
