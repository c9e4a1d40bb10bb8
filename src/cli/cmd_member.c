/*
 * cmd_member.c - `gpupool member list|grant|revoke [--tenant T [--project P]]`.
 *
 * Without --tenant the scope is global; with --tenant, that tenant; with
 * --tenant and --project, that project.
 *
 * `member invitations|accept|decline|withdraw [--tenant T]`: a grant to a
 * user homed in another tenant (or on the platform) is an invitation that the
 * user's home decides; without --tenant these use the platform's routes.
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
    "  invitations                invitations from or to the tenant (--tenant), or all\n"
    "  accept ID | decline ID     decide an invitation for a user homed in --tenant\n"
    "                             (without --tenant: a platform user's, as platform-admin)\n"
    "  withdraw ID                withdraw an invitation the tenant (--tenant) made\n"
    "\n"
    "Scope: global without --tenant; a tenant with --tenant; a project with both.\n"
    "A grant to a user homed in another tenant becomes an invitation its home decides.\n";

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
    json_t *out = NULL;
    rc = cli_call(ctx, "PUT", p.buf, body, &out);
    json_decref(body);
    sb_release(&p);
    if (rc) return rc;
    json_t *inv = json_object_get(out, "invitation");
    if (ctx->status == 202 && json_is_object(inv) && !ctx->json) {
        const char *id = json_string_value(json_object_get(inv, "id"));
        const char *home = json_string_value(json_object_get(inv, "home"));
        printf("invitation %s pending: %s decides it\n", id,
               home ? "the user's home tenant" : "a platform-admin");
        if (home) printf("an admin of %s runs: gpupool member accept %s --tenant %s\n", home, id, home);
        else printf("a platform-admin runs: gpupool member accept %s\n", id);
    } else if (ctx->status == 202 && !json_is_object(inv)) {
        cli_print_pending(ctx, out);
    } else {
        cli_print_object(ctx, out);
    }
    json_decref(out);
    return CLI_OK;
}

static void invitations_path(strbuf *p, const mopts *o, const char *id, const char *action) {
    cli_scope_path(p, o->tenant, NULL);
    sb_adds(p, "/invitations");
    if (id) {
        sb_addc(p, '/');
        cli_add_escaped(p, id);
    }
    if (action) sb_adds(p, action);
}

static int m_invitations(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id",   "user",  "role",       "tenant",  "project",
                                       "home", "state", "invited_by", "expires_at", NULL};
    mopts o;
    int rc = parse(argc, argv, "member invitations", &o, 0, 0);
    if (rc) return rc;
    if (o.project) return cli_error(CLI_USAGE, "member invitations: --project is not an option here");
    strbuf p = SB_INIT;
    invitations_path(&p, &o, NULL, NULL);
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int inv_act(cli_ctx *ctx, int argc, char **argv, const char *verb, const char *method,
                   const char *action) {
    mopts o;
    int rc = parse(argc, argv, verb, &o, 1, 0);
    if (rc) return rc;
    if (o.project) return cli_error(CLI_USAGE, "%s: --project is not an option here", verb);
    strbuf p = SB_INIT;
    invitations_path(&p, &o, argv[optind], action);
    rc = cli_run_call(ctx, method, p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

static int m_accept(cli_ctx *ctx, int argc, char **argv) {
    return inv_act(ctx, argc, argv, "member accept", "POST", "/accept");
}
static int m_decline(cli_ctx *ctx, int argc, char **argv) {
    return inv_act(ctx, argc, argv, "member decline", "POST", "/decline");
}
static int m_withdraw(cli_ctx *ctx, int argc, char **argv) {
    return inv_act(ctx, argc, argv, "member withdraw", "DELETE", NULL);
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
         "their own; granting a global role needs approval.\nA tenant or project role for a "
         "user homed elsewhere becomes an invitation\nthat the user's home decides (see "
         "member accept).\n"},
        {"revoke", m_revoke,
         "usage: gpupool member revoke USER [--role ROLE] [--tenant T [--project P]]\n\nRemove "
         "a user's role at a scope.\n"},
        {"invitations", m_invitations,
         "usage: gpupool member invitations [--tenant T]\n\nInvitations made by tenant T or "
         "for users homed in it (without --tenant:\nall, for platform- and security-admins).\n"},
        {"accept", m_accept,
         "usage: gpupool member accept ID [--tenant HOME]\n\nAccept an invitation for a user "
         "homed in HOME (its tenant-admin); without\n--tenant, one for a platform user "
         "(platform-admin). Accepting grants the role.\n"},
        {"decline", m_decline,
         "usage: gpupool member decline ID [--tenant HOME]\n\nDecline an invitation for a "
         "user homed in HOME.\n"},
        {"withdraw", m_withdraw,
         "usage: gpupool member withdraw ID [--tenant T]\n\nWithdraw an invitation tenant T "
         "made.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
