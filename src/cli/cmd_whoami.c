/*
 * cmd_whoami.c - `gpupool whoami`: the caller's identity and roles.
 */
#include "cli.h"

#include <stdio.h>

int cli_cmd_whoami(cli_ctx *ctx, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        puts("usage: gpupool whoami\n\nShow who the token belongs to, the roles it holds, and the "
             "context\n(`gpupool context`) commands default to.");
        return CLI_OK;
    }
    if (argc > 1) return cli_error(CLI_USAGE, "whoami: unexpected argument '%s'", argv[1]);
    json_t *out;
    int rc = cli_call(ctx, "GET", "/api/v1/whoami", NULL, &out);
    if (rc) return rc;
    if (ctx->tenant) /* the client's own setting, beside what the server says */
        json_object_set_new(out, "context",
                            json_pack("{s:s,s:s?}", "tenant", ctx->tenant, "project", ctx->project));
    if (ctx->json) {
        cli_print_object(ctx, out);
    } else {
        printf("%s (%s)\n", json_string_value(json_object_get(out, "name")),
               json_string_value(json_object_get(out, "kind")));
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(out, "roles"), i, b) {
            const char *t = json_string_value(json_object_get(b, "tenant"));
            const char *p = json_string_value(json_object_get(b, "project"));
            printf("  %-15s %s%s%s%s%s\n", json_string_value(json_object_get(b, "role")),
                   json_string_value(json_object_get(b, "scope")), t ? " " : "", t ? t : "",
                   p ? "/" : "", p ? p : "");
        }
        if (ctx->tenant)
            printf("context: --tenant %s%s%s\n", ctx->tenant, ctx->project ? " --project " : "",
                   ctx->project ? ctx->project : "");
    }
    json_decref(out);
    return CLI_OK;
}
