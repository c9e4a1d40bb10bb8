/*
 * cmd_approval.c - `gpupool approval list|show|approve|reject`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool approval <command>\n"
    "\n"
    "  list [--state pending|approved|rejected|expired|failed]\n"
    "  show ID                     one request, with its outcome once executed\n"
    "  approve ID [--reason TEXT]  approve (a security-admin other than the requester);\n"
    "                              the requested change is then carried out\n"
    "  reject ID [--reason TEXT]\n";

static int a_list(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"state", required_argument, 0, 's'}, {0, 0, 0, 0}};
    static const char *const cols[] = {"id", "operation", "requester", "state", "tenant",
                                       "created_at", "expires_at", NULL};
    const char *state = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "approval list", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 's') state = optarg;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "approval list: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/approvals");
    if (state) {
        sb_adds(&p, "?state=");
        cli_add_escaped(&p, state);
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int a_show(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 2) return cli_error(CLI_USAGE, "approval show: expected one ID");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/approvals/");
    cli_add_escaped(&p, argv[1]);
    int rc = cli_run_call(ctx, "GET", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

static int decide(cli_ctx *ctx, int argc, char **argv, const char *verb) {
    static const struct option lo[] = {{"reason", required_argument, 0, 'r'}, {0, 0, 0, 0}};
    const char *reason = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 'r') reason = optarg;
    }
    if (argc - optind != 1) return cli_error(CLI_USAGE, "%s: expected one ID", verb);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/approvals/");
    cli_add_escaped(&p, argv[optind]);
    sb_adds(&p, strcmp(verb, "approval approve") == 0 ? "/approve" : "/reject");
    json_t *body = reason ? json_pack("{s:s}", "reason", reason) : NULL, *out;
    rc = cli_call(ctx, "POST", p.buf, body, &out);
    json_decref(body);
    sb_release(&p);
    if (rc) return rc;
    cli_print_object(ctx, out);
    const char *state = json_string_value(json_object_get(out, "state"));
    int failed = state && strcmp(state, "failed") == 0;
    json_decref(out);
    if (failed) return cli_error(CLI_FAIL, "approved, but the requested change failed (see result)");
    return CLI_OK;
}

static int a_approve(cli_ctx *ctx, int argc, char **argv) {
    return decide(ctx, argc, argv, "approval approve");
}
static int a_reject(cli_ctx *ctx, int argc, char **argv) {
    return decide(ctx, argc, argv, "approval reject");
}

int cli_cmd_approval(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", a_list, "usage: gpupool approval list [--state STATE]\n\nApproval requests: "
                         "all for security-admins, your own otherwise.\n"},
        {"show", a_show, "usage: gpupool approval show ID\n\nOne request and its outcome.\n"},
        {"approve", a_approve,
         "usage: gpupool approval approve ID [--reason TEXT]\n\nApprove a pending request; the "
         "exact requested change is then carried out\nonce. Exit 1 if that change failed.\n"},
        {"reject", a_reject, "usage: gpupool approval reject ID [--reason TEXT]\n\nReject a "
                             "pending request.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
