/*
 * cmd_audit.c - `gpupool audit list|verify`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool audit <command>\n"
    "\n"
    "  list [--tenant T] [--action A] [--result R] [--limit N] [--after CURSOR]\n"
    "                 audit events, oldest first (security-admin; tenant-admins with --tenant)\n"
    "  verify         recompute the hash chain; exit 1 if it is broken (security-admin)\n";

static int a_list(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'}, {"action", required_argument, 0, 'a'},
        {"result", required_argument, 0, 'r'}, {"limit", required_argument, 0, 'l'},
        {"after", required_argument, 0, 'A'},  {0, 0, 0, 0}};
    static const char *const cols[] = {"seq", "time", "actor", "action", "result", "status",
                                       "tenant", "target.type", "target.id", NULL};
    static const char *const names[] = {"tenant", "action", "result", "limit", "after"};
    const char *vals[5] = {0};
    int c, rc = 0;
    optind = 1;
    while ((c = cli_getopt(argc, argv, lo, "audit list", &rc)) != -1) {
        if (c == -2) return rc;
        switch (c) {
        case 't': vals[0] = optarg; break;
        case 'a': vals[1] = optarg; break;
        case 'r': vals[2] = optarg; break;
        case 'l': vals[3] = optarg; break;
        case 'A': vals[4] = optarg; break;
        }
    }
    if (optind < argc) return cli_error(CLI_USAGE, "audit list: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/audit");
    char sep = '?';
    for (int i = 0; i < 5; i++) {
        if (!vals[i]) continue;
        sb_addf(&p, "%c%s=", sep, names[i]);
        cli_add_escaped(&p, vals[i]);
        sep = '&';
    }
    json_t *out;
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    cli_print_list(ctx, out, cols);
    json_decref(out);
    return CLI_OK;
}

static int a_verify(cli_ctx *ctx, int argc, char **argv) {
    if (argc > 1) return cli_error(CLI_USAGE, "audit verify: unexpected argument '%s'", argv[1]);
    json_t *out;
    int rc = cli_call(ctx, "GET", "/api/v1/audit/verify", NULL, &out);
    if (rc) return rc;
    int ok = json_is_true(json_object_get(out, "ok"));
    if (ctx->json) {
        cli_print_object(ctx, out);
    } else if (ok) {
        printf("audit chain OK: %lld records, head %s\n",
               (long long)json_integer_value(json_object_get(out, "checked")),
               json_string_value(json_object_get(out, "head_hash")));
    } else {
        printf("audit chain BROKEN at record %lld: %s\n",
               (long long)json_integer_value(json_object_get(out, "first_bad_seq")),
               json_string_value(json_object_get(out, "reason")));
    }
    json_decref(out);
    if (!ok) return cli_error(CLI_FAIL, "audit chain verification failed");
    return CLI_OK;
}

int cli_cmd_audit(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", a_list,
         "usage: gpupool audit list [--tenant T] [--action A|prefix.] [--result ok|denied|error]\n"
         "                          [--limit N] [--after CURSOR]\n\nList audit events, oldest "
         "first.\n"},
        {"verify", a_verify,
         "usage: gpupool audit verify\n\nRecompute the audit hash chain and report the first "
         "broken link.\nExit status 1 when the chain is broken.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
