/*
 * cmd_audit.c - `gpupool audit list|export|verify|checkpoints`.
 *
 * verify asks the server (GET /api/v1/audit/verify), or, given --data,
 * --store, --public-key or --checkpoints, reads the store itself read-only
 * (as `gpupool check` does) and checks the chain against the signed
 * checkpoints with the public key it is given.
 */
#include "cli.h"

#include "../audit/audit.h"
#include "../store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: gpupool audit <command>\n"
    "\n"
    "  list [filters] [--limit N] [--after CURSOR]\n"
    "                 audit events, oldest first (security-admin; tenant-admins with --tenant)\n"
    "  export [filters] > events.jsonl\n"
    "                 JSON Lines; a sensitive operation (approval first, by default)\n"
    "  filters: --tenant T --project P --actor U --action A|prefix. --target ID\n"
    "           --result ok|denied|error --since TIME --until TIME (RFC 3339)\n"
    "  verify [--data DIR | --store URL] [--public-key FILE] [--checkpoints FILE]\n"
    "                 recompute the hash chain and check it against the signed checkpoints;\n"
    "                 exit 1 if it is broken (security-admin; offline with the flags)\n"
    "  checkpoints [--limit N] [--after CURSOR]\n"
    "                 the signed checkpoints of the chain head, and the signing public key\n";

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

/* Print a verification report (the API's JSON shape); returns the exit code. */
static int print_verify(cli_ctx *ctx, json_t *out) {
    int ok = json_is_true(json_object_get(out, "ok"));
    json_t *cp = json_object_get(out, "checkpoints");
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
    if (!ctx->json && json_is_object(cp) && !json_integer_value(json_object_get(cp, "checked"))) {
        printf("signed checkpoints: none yet (key %s)\n",
               json_string_value(json_object_get(cp, "key_id")));
    } else if (!ctx->json && json_is_object(cp)) {
        json_t *file = json_object_get(cp, "file");
        char files[48] = "no file";
        if (json_is_integer(file))
            snprintf(files, sizeof files, "%lld in the file",
                     (long long)json_integer_value(file));
        printf("signed checkpoints: %lld checked (%lld in the store, %s), newest at record "
               "%lld, key %s\n",
               (long long)json_integer_value(json_object_get(cp, "checked")),
               (long long)json_integer_value(json_object_get(cp, "table")), files,
               (long long)json_integer_value(json_object_get(cp, "signed_seq")),
               json_string_value(json_object_get(cp, "key_id")));
    }
    if (!ok) return cli_error(CLI_FAIL, "audit chain verification failed");
    return CLI_OK;
}

/* verify against the store itself: the key and checkpoint file given, or DIR's own */
static int verify_offline(cli_ctx *ctx, const char *data, const char *store, const char *pub,
                          const char *cpfile) {
    char loc[4096], pub_def[4096], cp_def[4096], key_id[AUDIT_KEY_HEX];
    gp_err err = GP_ERR_INIT;
    audit_trust trust = {key_id, cpfile, cpfile != NULL};
    /* the data folder's own key and file, unless given: with --data, or with no --store */
    int own = data || !store;
    if (!data) data = "./var";
    if (!pub && own) {
        snprintf(pub_def, sizeof pub_def, "%s/audit-signing.pub", data);
        if (access(pub_def, F_OK) == 0) pub = pub_def;
    }
    if (!pub)
        return cli_error(CLI_USAGE, "audit verify: give --public-key FILE (the server's "
                                    "audit-signing.pub) to check the signed checkpoints");
    if (audit_pubkey_read(pub, key_id, &err))
        return cli_error(CLI_FAIL, "audit verify: %s", err.msg);
    if (!cpfile && own) {
        snprintf(cp_def, sizeof cp_def, "%s/audit-checkpoints.jsonl", data);
        trust.checkpoint_file = cp_def; /* read when it exists */
    }
    const char *where = cli_store_location(data, store, loc, sizeof loc);
    store_t *st;
    int rc = store_open_readonly(where, &st, &err);
    if (rc == GP_ENOTFOUND) return cli_error(CLI_FAIL, "audit verify: no store at %s", where);
    if (rc) return cli_error(CLI_FAIL, "audit verify: %s", err.msg);
    audit_report rep;
    rc = audit_verify_signed(st, &trust, &rep, &err);
    store_close(st);
    if (rc) return cli_error(CLI_FAIL, "audit verify: %s", err.msg);
    json_t *out = audit_report_json(&rep);
    if (!out) return cli_error(CLI_FAIL, "audit verify: out of memory");
    rc = print_verify(ctx, out);
    json_decref(out);
    return rc;
}

static int a_verify(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"data", required_argument, 0, 'd'},
                                       {"store", required_argument, 0, 's'},
                                       {"public-key", required_argument, 0, 'k'},
                                       {"checkpoints", required_argument, 0, 'c'},
                                       {0, 0, 0, 0}};
    const char *data = NULL, *store = NULL, *pub = NULL, *cpfile = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "audit verify", &rc)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 's': store = optarg; break;
        case 'k': pub = optarg; break;
        case 'c': cpfile = optarg; break;
        default: return rc;
        }
    }
    if (optind < argc)
        return cli_error(CLI_USAGE, "audit verify: unexpected argument '%s'", argv[optind]);
    if (data || store || pub || cpfile) return verify_offline(ctx, data, store, pub, cpfile);
    json_t *out;
    rc = cli_call(ctx, "GET", "/api/v1/audit/verify", NULL, &out);
    if (rc) return rc;
    rc = print_verify(ctx, out);
    json_decref(out);
    return rc;
}

static int a_checkpoints(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"seq", "count", "time", "head", NULL};
    static const struct option lo[] = {{"limit", required_argument, 0, 'l'},
                                       {"after", required_argument, 0, 'a'},
                                       {0, 0, 0, 0}};
    const char *limit = NULL, *after = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "audit checkpoints", &rc)) != -1) {
        switch (c) {
        case 'l': limit = optarg; break;
        case 'a': after = optarg; break;
        default: return rc;
        }
    }
    if (optind < argc)
        return cli_error(CLI_USAGE, "audit checkpoints: unexpected argument '%s'", argv[optind]);
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/audit/checkpoints");
    char sep = '?';
    if (limit) {
        sb_addf(&p, "%climit=", sep);
        cli_add_escaped(&p, limit);
        sep = '&';
    }
    if (after) {
        sb_addf(&p, "%cafter=", sep);
        cli_add_escaped(&p, after);
    }
    json_t *out;
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    if (!ctx->json) {
        json_t *k = json_object_get(out, "key_id");
        printf("signing key: %s\n", json_is_string(k) ? json_string_value(k) : "(none)");
    }
    cli_print_list(ctx, out, cols);
    json_decref(out);
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
         "usage: gpupool audit verify [--data DIR | --store URL] [--public-key FILE]\n"
         "                            [--checkpoints FILE]\n\n"
         "Recompute the audit hash chain, check it against the signed checkpoints, and\n"
         "report the first broken link. Exit status 1 when the chain is broken.\n\n"
         "Without flags the server verifies (with its own key and checkpoint file). With\n"
         "them the store is read here, read-only (no server needed):\n"
         "  --data DIR          the server's data folder (default ./var): DIR/gpupool.db,\n"
         "                      and DIR/audit-signing.pub, DIR/audit-checkpoints.jsonl\n"
         "                      unless given\n"
         "  --store URL         the store's URL instead (sqlite:PATH, or a PostgreSQL URI);\n"
         "                      the key and file then come from --data DIR if given\n"
         "  --public-key FILE   the trusted public key (a copy of audit-signing.pub)\n"
         "  --checkpoints FILE  the checkpoint file (a copy of audit-checkpoints.jsonl)\n"},
        {"checkpoints", a_checkpoints,
         "usage: gpupool audit checkpoints [--limit N] [--after CURSOR]\n\n"
         "List the signed checkpoints of the audit chain head, oldest first, and the\n"
         "public key that signs them.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
