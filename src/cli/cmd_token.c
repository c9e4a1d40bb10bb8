/*
 * cmd_token.c - `gpupool token create|list|revoke [--user U]`.
 *
 * Without --user these act on the caller's own tokens (found with whoami).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool token <command> [--user U]\n"
    "\n"
    "  create [--ttl SECONDS] [--label TEXT]   a new token (shown once)\n"
    "  list                                    tokens (never their secrets)\n"
    "  revoke ID                               revoke a token at once\n"
    "\n"
    "--user U acts on another user's tokens (administrators; create: service accounts).\n";

static const struct option lo[] = {{"user", required_argument, 0, 'u'},
                                   {"ttl", required_argument, 0, 't'},
                                   {"label", required_argument, 0, 'l'},
                                   {0, 0, 0, 0}};

typedef struct topts {
    const char *user, *ttl, *label;
} topts;

static int parse(int argc, char **argv, const char *verb, topts *o, int nargs) {
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 'u') o->user = optarg;
        else if (c == 't') o->ttl = optarg;
        else if (c == 'l') o->label = optarg;
    }
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %s", verb, nargs ? "one ID" : "no arguments");
    return 0;
}

/* "/api/v1/users/<user>/tokens", the user defaulting to the caller. */
static int tokens_path(cli_ctx *ctx, const char *user, strbuf *p) {
    json_t *me = NULL;
    if (!user) {
        int rc = cli_call(ctx, "GET", "/api/v1/whoami", NULL, &me);
        if (rc) return rc;
        user = json_string_value(json_object_get(me, "name"));
    }
    sb_adds(p, "/api/v1/users/");
    cli_add_escaped(p, user ? user : "");
    sb_adds(p, "/tokens");
    json_decref(me);
    return 0;
}

static int t_create(cli_ctx *ctx, int argc, char **argv) {
    topts o;
    int rc = parse(argc, argv, "token create", &o, 0);
    if (rc) return rc;
    json_t *body = json_object();
    if (o.ttl) {
        char *end;
        long long v = strtoll(o.ttl, &end, 10);
        if (!*o.ttl || *end) {
            json_decref(body);
            return cli_error(CLI_USAGE, "token create: --ttl must be a number of seconds");
        }
        json_object_set_new(body, "ttl_seconds", json_integer(v));
    }
    if (o.label) json_object_set_new(body, "label", json_string(o.label));
    strbuf p = SB_INIT;
    if (!(rc = tokens_path(ctx, o.user, &p))) rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int t_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "label", "state", "created_at", "expires_at", NULL};
    topts o;
    int rc = parse(argc, argv, "token list", &o, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    if (!(rc = tokens_path(ctx, o.user, &p))) rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int t_revoke(cli_ctx *ctx, int argc, char **argv) {
    topts o;
    int rc = parse(argc, argv, "token revoke", &o, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    if (!(rc = tokens_path(ctx, o.user, &p))) {
        sb_addc(&p, '/');
        cli_add_escaped(&p, argv[optind]);
        rc = cli_run_call(ctx, "DELETE", p.buf, NULL, NULL);
    }
    sb_release(&p);
    return rc;
}

int cli_cmd_token(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", t_create,
         "usage: gpupool token create [--user U] [--ttl SECONDS] [--label TEXT]\n\nCreate a "
         "token; it is printed once. The lifetime is capped by the security policy.\n"},
        {"list", t_list, "usage: gpupool token list [--user U]\n\nList tokens (ids, labels, "
                         "states; never the secrets).\n"},
        {"revoke", t_revoke, "usage: gpupool token revoke ID [--user U]\n\nRevoke a token; it "
                             "stops working at once.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
