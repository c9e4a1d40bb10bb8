/*
 * cmd_audit.c - `gpupool audit list|verify`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool audit <command>\n"
    "\n"
    "  list [filters] [--limit N] [--after CURSOR]\n"
    "                 audit events, oldest first (security-admin; tenant-admins with --tenant)\n"
    "  export [filters] > events.jsonl\n"
    "                 JSON Lines; a sensitive operation (approval first, by default)\n"
    "  filters: --tenant T --project P --actor U --action A|prefix. --target ID\n"
    "           --result ok|denied|error --since TIME --until TIME (RFC 3339)\n"
    "  verify         recompute the hash chain; exit 1 if it is broken (security-admin)\n";

#define NFILTERS 10
static const char *const names[NFILTERS] = {"tenant", "action", "result", "limit", "after",
                                            "project", "actor", "target", "since", "until"};

/* Parse the filter flags into "?k=v&..." appended to p; returns 0 or an exit code. */
static int filters(int argc, char **argv, const char *verb, strbuf *p) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 0},  {"action", required_argument, 0, 1},
        {"result", required_argument, 0, 2},  {"limit", required_argument, 0, 3},
        {"after", required_argument, 0, 4},   {"project", required_argument, 0, 5},
        {"actor", required_argument, 0, 6},   {"target", required_argument, 0, 7},
        {"since", required_argument, 0, 8},   {"until", required_argument, 0, 9},
        {0, 0, 0, 0}};
    const char *vals[NFILTERS] = {0};
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c >= 0 && c < NFILTERS) vals[c] = optarg;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "%s: unexpected argument '%s'", verb, argv[optind]);
    char sep = '?';
    for (int i = 0; i < NFILTERS; i++) {
        if (!vals[i]) continue;
        sb_addf(p, "%c%s=", sep, names[i]);
        cli_add_escaped(p, vals[i]);
        sep = '&';
    }
    return 0;
}

static int a_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"seq", "time", "actor", "action", "result", "status",
                                       "tenant", "target.type", "target.id", NULL};
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/audit");
    int rc = filters(argc, argv, "audit list", &p);
    if (rc) {
        sb_release(&p);
        return rc;
    }
    json_t *out;
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    cli_print_list(ctx, out, cols);
    json_decref(out);
    return CLI_OK;
}

static int a_export(cli_ctx *ctx, int argc, char **argv) {
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/audit/export");
    int rc = filters(argc, argv, "audit export", &p);
    json_t *out = NULL;
    if (!rc) rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    if (ctx->status == 202) cli_print_pending(ctx, out);
    else if (json_is_string(out)) fputs(json_string_value(out), stdout);
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
         "usage: gpupool audit list [--tenant T] [--project P] [--actor U] [--action A|prefix.]\n"
         "                          [--target ID] [--result ok|denied|error] [--since TIME]\n"
         "                          [--until TIME] [--limit N] [--after CURSOR]\n\nList audit "
         "events, oldest first.\n"},
        {"export", a_export,
         "usage: gpupool audit export [filters] > events.jsonl\n\nExport matching events as "
         "JSON Lines. Exporting is a sensitive operation: by\ndefault it prints a pending "
         "approval; once approved, `gpupool approval show ID`\nholds the export.\n"},
        {"verify", a_verify,
         "usage: gpupool audit verify\n\nRecompute the audit hash chain and report the first "
         "broken link.\nExit status 1 when the chain is broken.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
