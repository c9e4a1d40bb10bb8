/*
 * cmd_login.c - `gpupool login NAME`: password (first line of stdin) -> token.
 *
 * Prints the token alone on stdout so that it can be captured:
 *   export GPUPOOL_TOKEN=$(gpupool login alice < password-file)
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_cmd_login(cli_ctx *ctx, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        puts("usage: gpupool login NAME < password\n\nRead the password from the first line of "
             "standard input and print a new token\n(its lifetime is set by the security "
             "policy).");
        return CLI_OK;
    }
    if (argc != 2) return cli_error(CLI_USAGE, "login: expected one NAME");
    char *pw = cli_read_line();
    if (!pw) return cli_error(CLI_USAGE, "login: give the password on standard input");
    json_t *body = json_pack("{s:s,s:s}", "name", argv[1], "password", pw), *out;
    memset(pw, 0, strlen(pw));
    free(pw);
    ctx->token = NULL;
    int rc = cli_call(ctx, "POST", "/api/v1/login", body, &out);
    json_object_clear(body);
    json_decref(body);
    if (rc) return rc;
    if (ctx->json) cli_print_object(ctx, out);
    else {
        puts(json_string_value(json_object_get(out, "token")));
        fprintf(stderr, "token expires at %s\n",
                json_string_value(json_object_get(out, "expires_at")));
    }
    json_decref(out);
    return CLI_OK;
}
