/*
 * cmd_member.c - `gpupool member list|grant|revoke [--tenant T [--project P]]`.
 *
 * Without --tenant the scope is global; with --tenant, that tenant; with
 * --tenant and --project, that project.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool member <command> [--tenant T [--project P]]\n"
    "\n"
    "  list                       members at the scope\n"
    "  grant USER ROLE            grant ROLE (replaces the user's role at a tenant or project)\n"
    "  revoke USER [--role ROLE]  remove the user's role (global scope: --role is required)\n"
    "\n"
    "Scope: global without --tenant; a tenant with --tenant; a project with both.\n";

static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                   {"project", required_argument, 0, 'p'},
                                   {"role", required_argument, 0, 'r'},
                                   {0, 0, 0, 0}};

typedef struct mopts {
    const char *tenant, *project, *role;
} mopts;

static int parse(int argc, char **argv, const char *verb, mopts *o, int nargs, int role_ok) {
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') o->tenant = optarg;
        else if (c == 'p') o->project = optarg;
        else if (c == 'r' && role_ok) o->role = optarg;
        else if (c == 'r') return cli_error(CLI_USAGE, "%s: --role is not an option here", verb);
    }
    if (o->project && !o->tenant) return cli_error(CLI_USAGE, "%s: --project needs --tenant", verb);
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %d argument%s", verb, nargs, nargs == 1 ? "" : "s");
    return 0;
}

static void members_path(strbuf *p, const mopts *o, const char *user) {
    cli_scope_path(p, o->tenant, o->project);
    sb_adds(p, "/members");
    if (user) {
        sb_addc(p, '/');
        cli_add_escaped(p, user);
    }
}

static int m_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"user", "role", "scope", "tenant", "project", "granted_by",
                                       NULL};
    mopts o;
    int rc = parse(argc, argv, "member list", &o, 0, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    members_path(&p, &o, NULL);
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int m_grant(cli_ctx *ctx, int argc, char **argv) {
    mopts o;
    int rc = parse(argc, argv, "member grant", &o, 2, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    members_path(&p, &o, argv[optind]);
    json_t *body = json_pack("{s:s}", "role", argv[optind + 1]);
    rc = cli_run_call(ctx, "PUT", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int m_revoke(cli_ctx *ctx, int argc, char **argv) {
    mopts o;
    int rc = parse(argc, argv, "member revoke", &o, 1, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    members_path(&p, &o, argv[optind]);
    if (o.role) {
        sb_adds(&p, "?role=");
        cli_add_escaped(&p, o.role);
    }
    rc = cli_run_call(ctx, "DELETE", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

int cli_cmd_member(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", m_list, "usage: gpupool member list [--tenant T [--project P]]\n\nList members "
                         "and their roles at a scope.\n"},
        {"grant", m_grant,
         "usage: gpupool member grant USER ROLE [--tenant T [--project P]]\n\nGrant a role. "
         "Roles: platform-admin, security-admin, ops-engineer (global);\ntenant-admin, viewer "
         "(tenant); project-admin, project-user, viewer (project).\nNobody grants a role beyond "
         "their own; granting a global role needs approval.\n"},
        {"revoke", m_revoke,
         "usage: gpupool member revoke USER [--role ROLE] [--tenant T [--project P]]\n\nRemove "
         "a user's role at a scope.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
