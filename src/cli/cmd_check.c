/*
 * cmd_check.c - `gpupool check`: run the store's invariant checks (like
 * fsck) on a data folder or store URL, read-only, with no server needed.
 *
 *   gpupool check [--data DIR | --store sqlite:PATH] [--public-key FILE]
 *                 [--checkpoints FILE] [-o json]
 *
 * Prints each check with ok/FAILED and its details; exit 0 when all hold,
 * 1 when one does not (or the store cannot be read), 2 on a usage error.
 * The checks themselves are src/check/check.h's.
 */
#include "cli.h"

#include "../check/check.h"
#include "../store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check_usage(FILE *f) {
    fputs("usage: gpupool check [--data DIR | --store sqlite:PATH|postgresql://...]\n"
          "                     [--public-key FILE] [--checkpoints FILE] [-o json]\n"
          "\n"
          "Run the store's invariant checks read-only (no server needed; safe while one runs):\n"
          "GPUs and slices bound once, jobs and their bindings, quotas, the audit chain (and its\n"
          "signed checkpoints), the token ledger, the hourly usage rollups, foreign keys and\n"
          "SQLite's integrity check.\n"
          "Exit code 0 when every check holds, 1 otherwise.\n"
          "\n"
          "  --data DIR      the server's data folder (default ./var): DIR/gpupool.db\n"
          "  --store URL     a store URL instead (sqlite:PATH, or a PostgreSQL URI)\n"
          "  --public-key FILE  check the audit chain against its signed checkpoints with\n"
          "                  this key (default: DIR/audit-signing.pub if present; with\n"
          "                  --store, only when --data DIR is given too)\n"
          "  --checkpoints FILE the checkpoint file too (default with --data:\n"
          "                  DIR/audit-checkpoints.jsonl if present)\n",
          f);
}

int cli_cmd_check(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"data", required_argument, 0, 'd'},
                                       {"store", required_argument, 0, 's'},
                                       {"public-key", required_argument, 0, 'k'},
                                       {"checkpoints", required_argument, 0, 'c'},
                                       {0, 0, 0, 0}};
    const char *data = "./var", *store = NULL, *pub = NULL, *cpfile = NULL;
    int data_given = 0;
    int c, rc = 0;
    if (cli_wants_help(argc, argv)) {
        check_usage(stdout);
        return CLI_OK;
    }
    optind = 1;
    while ((c = cli_getopt(argc, argv, lo, "check", &rc)) != -1) {
        switch (c) {
        case 'd': data = optarg, data_given = 1; break;
        case 's': store = optarg; break;
        case 'k': pub = optarg; break;
        case 'c': cpfile = optarg; break;
        default: return rc;
        }
    }
    if (optind < argc) return cli_error(CLI_USAGE, "check: unexpected argument '%s'", argv[optind]);
    char path[4096];
    const char *where = cli_store_location(data, store, path, sizeof path);
    gp_err err = GP_ERR_INIT;
    /* the signed audit checkpoints: the key and file given, or the data folder's own */
    char pub_def[4096], cp_def[4096], key_id[AUDIT_KEY_HEX];
    audit_trust trust = {key_id, cpfile, cpfile != NULL};
    if (!pub && (data_given || !store)) {
        snprintf(pub_def, sizeof pub_def, "%s/audit-signing.pub", data);
        if (access(pub_def, F_OK) == 0) pub = pub_def;
    }
    if (!cpfile && (data_given || !store)) {
        snprintf(cp_def, sizeof cp_def, "%s/audit-checkpoints.jsonl", data);
        trust.checkpoint_file = cp_def; /* read when it exists */
    }
    if (pub && audit_pubkey_read(pub, key_id, &err))
        return cli_error(CLI_FAIL, "check: %s", err.msg);
    store_t *st;
    rc = store_open_readonly(where, &st, &err);
    if (rc == GP_ENOTFOUND) return cli_error(CLI_FAIL, "check: no store at %s", where);
    if (rc) return cli_error(CLI_FAIL, "check: %s", err.msg);
    check_report rep;
    rc = check_run_trusted(st, pub ? &trust : NULL, &rep, &err);
    store_close(st);
    if (rc) return cli_error(CLI_FAIL, "check: %s", err.msg);
    if (ctx->json) {
        json_t *j = check_report_json(&rep);
        cli_print_json(ctx, j);
        json_decref(j);
    } else {
        for (int i = 0; i < rep.n; i++) {
            const check_result *r = &rep.r[i];
            printf("%-14s %-6s %s\n", r->name, r->ok ? "ok" : "FAILED", r->note);
            size_t k;
            json_t *v;
            json_array_foreach(r->problems, k, v) printf("    %s\n", json_string_value(v));
            if (r->nproblems > (int64_t)json_array_size(r->problems))
                printf("    ... and %lld more\n",
                       (long long)(r->nproblems - (int64_t)json_array_size(r->problems)));
        }
        printf("%s\n", rep.ok ? "all checks hold" : "some checks FAILED");
    }
    int ok = rep.ok;
    check_report_release(&rep);
    return ok ? CLI_OK : CLI_FAIL;
}
