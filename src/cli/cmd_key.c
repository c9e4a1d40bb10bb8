/*
 * cmd_key.c - `gpupool key create|list|show|revoke --tenant T --project P`:
 * API keys (sk-…) for the OpenAI-compatible gateway.  The secret is printed
 * once, by create; the server keeps only its hash.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool key <command> --tenant T --project P\n"
    "\n"
    "  create NAME [--app A] [--models m1,m2] [--rpm N] [--tpm N] [--tokens-month N]\n"
    "         [--max-parallel N] [--ttl SECONDS | --expires-at RFC3339]\n"
    "                 a key owned by you; the secret is shown once\n"
    "  list           keys of the project (project-users: their own), never secrets\n"
    "  show ID        one key\n"
    "  revoke ID      revoke a key at once\n";

typedef struct kopts {
    const char *tenant, *project, *app, *models, *rpm, *tpm, *tokens, *ttl, *expires, *parallel;
} kopts;

static int parse(int argc, char **argv, const char *verb, kopts *o, int nargs) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'},       {"project", required_argument, 0, 'p'},
        {"app", required_argument, 0, 'a'},          {"models", required_argument, 0, 'm'},
        {"rpm", required_argument, 0, 'r'},          {"tpm", required_argument, 0, 'T'},
        {"tokens-month", required_argument, 0, 'k'}, {"ttl", required_argument, 0, 'l'},
        {"expires-at", required_argument, 0, 'e'},   {"max-parallel", required_argument, 0, 'P'},
        {0, 0, 0, 0}};
    int c, rc = 0, extra = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        extra |= c != 't' && c != 'p';
        switch (c) {
        case 't': o->tenant = optarg; break;
        case 'p': o->project = optarg; break;
        case 'a': o->app = optarg; break;
        case 'm': o->models = optarg; break;
        case 'r': o->rpm = optarg; break;
        case 'T': o->tpm = optarg; break;
        case 'k': o->tokens = optarg; break;
        case 'l': o->ttl = optarg; break;
        case 'e': o->expires = optarg; break;
        case 'P': o->parallel = optarg; break;
        }
    }
    if (!o->tenant || !o->project)
        return cli_error(CLI_USAGE, "%s: --tenant and --project are required", verb);
    if (extra && strcmp(verb, "key create") != 0)
        return cli_error(CLI_USAGE, "%s: only --tenant and --project apply here", verb);
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %s", verb,
                         !nargs                         ? "no arguments"
                         : strcmp(verb, "key create")   ? "one ID"
                                                        : "one NAME");
    return 0;
}

static void keys_path(strbuf *p, const kopts *o, const char *id) {
    cli_scope_path(p, o->tenant, o->project);
    sb_adds(p, "/keys");
    if (id) {
        sb_addc(p, '/');
        cli_add_escaped(p, id);
    }
}

/* Set body[field] to the integer in `s`; a usage error when it is not one. */
static int set_int(json_t *body, const char *field, const char *flag, const char *s) {
    char *end;
    if (!s) return 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end)
        return cli_error(CLI_USAGE, "key create: %s must be a whole number, got '%s'", flag, s);
    json_object_set_new(body, field, json_integer(v));
    return 0;
}

static int k_create(cli_ctx *ctx, int argc, char **argv) {
    kopts o;
    int rc = parse(argc, argv, "key create", &o, 1);
    if (rc) return rc;
    if (o.ttl && o.expires)
        return cli_error(CLI_USAGE, "key create: give --ttl or --expires-at, not both");
    json_t *body = json_pack("{s:s}", "name", argv[optind]), *out;
    if ((rc = set_int(body, "rpm", "--rpm", o.rpm)) ||
        (rc = set_int(body, "tpm", "--tpm", o.tpm)) ||
        (rc = set_int(body, "tokens_month", "--tokens-month", o.tokens)) ||
        (rc = set_int(body, "max_parallel", "--max-parallel", o.parallel)) ||
        (rc = set_int(body, "ttl_seconds", "--ttl", o.ttl))) {
        json_decref(body);
        return rc;
    }
    if (o.app) json_object_set_new(body, "app", json_string(o.app));
    if (o.models) json_object_set_new(body, "models", cli_csv(o.models));
    if (o.expires) json_object_set_new(body, "expires_at", json_string(o.expires));
    strbuf p = SB_INIT;
    keys_path(&p, &o, NULL);
    rc = cli_call(ctx, "POST", p.buf, body, &out);
    sb_release(&p);
    json_decref(body);
    if (rc) return rc;
    cli_print_object(ctx, out);
    if (!ctx->json)
        printf("\nThis is the only time the key is shown: store it now. It cannot be shown "
               "again.\n");
    json_decref(out);
    return CLI_OK;
}

static int k_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "name", "owner", "app", "prefix", "state",
                                       "models", "expires_at", NULL};
    kopts o;
    int rc = parse(argc, argv, "key list", &o, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    keys_path(&p, &o, NULL);
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int by_id(cli_ctx *ctx, int argc, char **argv, const char *verb, const char *method) {
    kopts o;
    int rc = parse(argc, argv, verb, &o, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    keys_path(&p, &o, argv[optind]);
    rc = cli_run_call(ctx, method, p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

static int k_show(cli_ctx *c, int a, char **v) { return by_id(c, a, v, "key show", "GET"); }
static int k_revoke(cli_ctx *c, int a, char **v) { return by_id(c, a, v, "key revoke", "DELETE"); }

int cli_cmd_key(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", k_create,
         "usage: gpupool key create NAME --tenant T --project P [--app A] [--models m1,m2]\n"
         "       [--rpm N] [--tpm N] [--tokens-month N] [--max-parallel N]\n"
         "       [--ttl SECONDS | --expires-at RFC3339]\n"
         "\n"
         "  --app A            the project's application the key belongs to\n"
         "  --models m1,m2     the models it may use (default: every model it can see)\n"
         "  --rpm N, --tpm N   requests / tokens per minute (0: no limit)\n"
         "  --tokens-month N   tokens per calendar month (UTC; 0: no limit)\n"
         "  --max-parallel N   requests in flight at once (0: no limit)\n"
         "  --ttl SECONDS      expires after this long; --expires-at: at this time\n"
         "\n"
         "The key (sk-...) is printed once; only its hash is kept.\n"},
        {"list", k_list, "usage: gpupool key list --tenant T --project P\n\nProject-users see "
                         "their own keys; admins and viewers all of the project's.\n"},
        {"show", k_show, "usage: gpupool key show ID --tenant T --project P\n"},
        {"revoke", k_revoke, "usage: gpupool key revoke ID --tenant T --project P\n\nThe key "
                             "stops working at once; revoking it again is a conflict.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
