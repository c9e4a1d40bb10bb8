/*
 * cmd_migrate.c - `gpupool migrate`: bring a store's schema to this
 * binary's version without starting a server, and (PostgreSQL) give the
 * servers' own database role the rights it needs and no more.
 *
 *   gpupool migrate [--data DIR | --store URL] [--to N] [--grant ROLE] [-o json]
 *
 * --to N stops at schema version N (a staged upgrade; the upgrade test's
 * store of the previous release); migrations are never undone.
 *
 * Run it as the role that owns the tables (the one that created them);
 * servers then connect as ROLE, which owns nothing and so cannot switch
 * row-level security off (docs/postgres.md).  Exit 0 when done, 1 when the
 * store refuses, 2 on a usage error.
 */
#include "cli.h"

#include "../store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void migrate_usage(FILE *f) {
    fputs("usage: gpupool migrate [--data DIR | --store sqlite:PATH|postgresql://...] "
          "[--to N] [--grant ROLE] [-o json]\n"
          "\n"
          "Apply the schema migrations this gpupool knows to a store (a server also does this\n"
          "when it starts, if its database role may), then report the schema version.\n"
          "\n"
          "  --data DIR      the server's data folder (default ./var): DIR/gpupool.db\n"
          "  --store URL     a store URL instead (sqlite:PATH, or a PostgreSQL URI)\n"
          "  --to N          stop at schema version N (default: this gpupool's latest); a\n"
          "                  store already past N is refused: migrations are never undone\n"
          "  --grant ROLE    PostgreSQL: let database role ROLE read and write every table\n"
          "                  (servers connect as ROLE; it owns nothing, so it cannot turn\n"
          "                  row-level security off). Run as the role that owns the tables.\n",
          f);
}

int cli_cmd_migrate(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"data", required_argument, 0, 'd'},
                                       {"store", required_argument, 0, 's'},
                                       {"grant", required_argument, 0, 'g'},
                                       {"to", required_argument, 0, 't'},
                                       {0, 0, 0, 0}};
    const char *data = "./var", *store = NULL, *grant = NULL, *to = NULL;
    int c, rc = 0, target = 0;
    if (cli_wants_help(argc, argv)) {
        migrate_usage(stdout);
        return CLI_OK;
    }
    optind = 1;
    while ((c = cli_getopt(argc, argv, lo, "migrate", &rc)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 's': store = optarg; break;
        case 'g': grant = optarg; break;
        case 't': to = optarg; break;
        default: return rc;
        }
    }
    if (optind < argc)
        return cli_error(CLI_USAGE, "migrate: unexpected argument '%s'", argv[optind]);
    if (to) {
        char *end;
        long n = strtol(to, &end, 10);
        if (!*to || *end || n < 1 || n > store_schema_known())
            return cli_error(CLI_USAGE, "migrate: --to needs a schema version from 1 to %d",
                             store_schema_known());
        target = (int)n;
    }
    if (grant && !*grant) return cli_error(CLI_USAGE, "migrate: --grant needs a role name");
    if (grant && !(store && store_url_is_pg(store)))
        return cli_error(CLI_USAGE, "migrate: --grant is for a PostgreSQL store (--store postgresql://...)");
    char path[4096];
    gp_err err = GP_ERR_INIT;
    store_t *st;
    if (store_open_to(cli_store_location(data, store, path, sizeof path), 1, target, &st, &err))
        return cli_error(CLI_FAIL, "migrate: %s", err.msg);
    int version = 0;
    rc = store_schema_version(st, &version, &err);
    if (!rc && grant) rc = store_grant(st, grant, &err);
    const char *backend = store_backend(st);
    store_close(st);
    if (rc) return cli_error(CLI_FAIL, "migrate: %s", err.msg);
    if (ctx->json) {
        json_t *j = json_pack("{s:s, s:i, s:s?}", "backend", backend, "schema_version", version,
                              "granted", grant);
        if (j) cli_print_json(ctx, j);
        json_decref(j);
    } else {
        printf("%s store at schema version %d\n", backend, version);
        if (grant) printf("role %s may now read and write every table\n", grant);
    }
    return CLI_OK;
}
