/*
 * cmd_user.c - `gpupool user create|list|show|disable|enable|passwd`.
 *
 * Passwords are read from standard input, never taken as flags (they would
 * show in the process list and shell history).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool user <command>\n"
    "\n"
    "  create NAME [--service] [--tenant T]\n"
    "                            create a user (password: first line of stdin) or a\n"
    "                            service account (tokens only), homed in tenant T (by\n"
    "                            default: the one you administer, or the platform)\n"
    "  list                      users you may see\n"
    "  show NAME                 one user and its roles\n"
    "  disable NAME | enable NAME\n"
    "                            a disabled user's tokens stop working at once\n"
    "  passwd NAME               new password on stdin line 1; changing your own also\n"
    "                            needs the current one on line 2\n";

static void user_path(strbuf *p, const char *name) {
    sb_adds(p, "/api/v1/users/");
    cli_add_escaped(p, name);
}

static int u_create(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"service", no_argument, 0, 's'},
                                       {"tenant", required_argument, 0, 't'},
                                       {0, 0, 0, 0}};
    int c, rc = 0, service = 0;
    const char *tenant = NULL;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "user create", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 's') service = 1;
        else if (c == 't') tenant = optarg;
    }
    if (argc - optind != 1) return cli_error(CLI_USAGE, "user create: expected one NAME");
    json_t *body = json_pack("{s:s,s:s}", "name", argv[optind], "kind",
                             service ? "service" : "user");
    if (tenant) json_object_set_new(body, "tenant", json_string(tenant));
    if (!service) {
        char *pw = cli_read_line();
        if (!pw || !*pw) {
            free(pw);
            json_decref(body);
            return cli_error(CLI_USAGE, "user create: give the password on standard input");
        }
        json_object_set_new(body, "password", json_string(pw));
        memset(pw, 0, strlen(pw));
        free(pw);
    }
    rc = cli_run_call(ctx, "POST", "/api/v1/users", body, NULL);
    json_decref(body);
    return rc;
}

static int u_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "kind", "disabled", "created_at", "home", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "user list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/users", NULL, cols);
}

static int u_show(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 2) return cli_error(CLI_USAGE, "user show: expected one NAME");
    strbuf p = SB_INIT;
    user_path(&p, argv[1]);
    int rc = cli_run_call(ctx, "GET", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

static int set_disabled(cli_ctx *ctx, int argc, char **argv, int disabled) {
    if (argc != 2) return cli_error(CLI_USAGE, "user %s: expected one NAME", argv[0]);
    strbuf p = SB_INIT;
    user_path(&p, argv[1]);
    json_t *body = json_pack("{s:b}", "disabled", disabled);
    int rc = cli_run_call(ctx, "PATCH", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int u_disable(cli_ctx *ctx, int argc, char **argv) { return set_disabled(ctx, argc, argv, 1); }
static int u_enable(cli_ctx *ctx, int argc, char **argv) { return set_disabled(ctx, argc, argv, 0); }

static int u_passwd(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 2) return cli_error(CLI_USAGE, "user passwd: expected one NAME");
    char *pw = cli_read_line(), *cur = pw ? cli_read_line() : NULL;
    if (!pw || !*pw) {
        free(pw);
        free(cur);
        return cli_error(CLI_USAGE, "user passwd: give the new password on standard input");
    }
    json_t *body = json_pack("{s:s}", "password", pw);
    if (cur && *cur) json_object_set_new(body, "current_password", json_string(cur));
    memset(pw, 0, strlen(pw));
    if (cur) memset(cur, 0, strlen(cur));
    free(pw);
    free(cur);
    strbuf p = SB_INIT;
    user_path(&p, argv[1]);
    json_t *out;
    int rc = cli_call(ctx, "PATCH", p.buf, body, &out);
    json_object_clear(body);
    json_decref(body);
    sb_release(&p);
    if (rc) return rc;
    json_decref(out);
    if (!ctx->json) printf("password of %s changed\n", argv[1]);
    return CLI_OK;
}

int cli_cmd_user(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", u_create,
         "usage: gpupool user create NAME [--service] [--tenant T] < password\n\nCreate a user "
         "(its password is the first line of standard input), or with\n--service a service "
         "account that authenticates with tokens only.\nThe user's home is tenant T (default: "
         "the one tenant you administer; for a\nplatform-admin, the platform): only the home's "
         "admins administer it.\n"},
        {"list", u_list, "usage: gpupool user list\n\nList the users you may see.\n"},
        {"show", u_show, "usage: gpupool user show NAME\n\nShow a user and the roles it holds.\n"},
        {"disable", u_disable, "usage: gpupool user disable NAME\n\nDisable a user: its tokens "
                               "stop working at once.\n"},
        {"enable", u_enable, "usage: gpupool user enable NAME\n\nEnable a disabled user.\n"},
        {"passwd", u_passwd,
         "usage: gpupool user passwd NAME < lines\n\nSet a password: the new one on the first "
         "line of standard input; when\nchanging your own, your current one on the second.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
