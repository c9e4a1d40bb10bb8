/*
 * cli.h - the command line client's shared library: context, HTTP calls to
 * the API, output (table or JSON) and one-line errors.
 *
 * Each noun lives in cmd_<noun>.c and exports cli_cmd_<noun>(ctx, argc, argv)
 * where argv[0] is the noun.  Commands parse their options, call the API
 * through cli_call(), print with cli_print_*(), and return the exit code:
 *   0 success, 1 the operation failed (API error, broken chain, I/O),
 *   2 usage error (bad flags or arguments).
 * Errors are printed as one line on stderr: "gpupool: <message>".
 */
#ifndef GP_CLI_H
#define GP_CLI_H

#include "../core/httpc.h"
#include "../core/strbuf.h"

#include <jansson.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct cli_ctx {
    const char *server; /* base URL(s) as given, "http://127.0.0.1:7070[,URL…]" */
    httpc_servers *servers; /* parsed `server` for commands that talk to the API */
    const char *token;  /* bearer token, may be NULL */
    int json;           /* -o json */
    long status;        /* HTTP status of the last cli_call() */
    int csv;            /* -o csv: lists (and reports) as CSV, objects as field,value */
    int yaml;           /* -o yaml: what -o json prints, as YAML (json is set too) */
    int watch;          /* -w/--watch: cli_run_call() of a GET prints it again as it changes */
    const char *tenant, *project; /* the context (`gpupool context`), NULL: none */
} cli_ctx;

/* Print a JSON value as -o json does (indented), or as YAML under -o yaml. */
void cli_print_json(cli_ctx *ctx, json_t *v);

/* A JSON value as block YAML (yaml.c). */
void cli_yaml_print(FILE *f, const json_t *v);

/*
 * The candidate nearest to `word` by edit distance when it is near enough to
 * be a typo (at most 2 edits, and fewer than half its letters), else NULL:
 * "did you mean ...?".  `cands` is NULL-terminated; a leading "--" on both
 * is compared as given.
 */
const char *cli_nearest(const char *word, const char *const *cands);

/*
 * The context: default --tenant and --project for the commands whose --tenant
 * names where they act (cli_getopt() supplies them when the command line has
 * none; a --tenant given on the line other than the context's drops the
 * context's project).  Set once, from main().
 */
void cli_set_context(const char *tenant, const char *project);

/* Print "gpupool: <message>" to stderr and return `code`. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Call the API: `method` on server + `path` (already escaped) with an
 * optional JSON body (borrowed).  With several servers the call goes to the
 * one that answered last and moves on when it cannot be reached
 * (httpc_json_failover()).  On HTTP 2xx returns CLI_OK with *out (new
 * reference, may be JSON null).  Otherwise prints the server's error message
 * and returns CLI_FAIL.
 */
int cli_call(cli_ctx *ctx, const char *method, const char *path, json_t *body, json_t **out);

/*
 * Call and print: on success prints the response (a list with `columns`, or
 * one object when columns is NULL); a 202 (sensitive operation) prints the
 * pending approval instead.  Returns the exit code.  `body` is borrowed.
 */
int cli_run_call(cli_ctx *ctx, const char *method, const char *path, json_t *body,
                 const char *const *columns);

/*
 * The common verb shape "VERB NAME": exactly one positional argument, the
 * request `method` prefix+NAME+suffix (NAME escaped), no body; prints an
 * object, or a list with `columns`.
 */
int cli_name_call(cli_ctx *ctx, int argc, char **argv, const char *verb, const char *method,
                  const char *prefix, const char *suffix, const char *const *columns);

/*
 * The create/set verb shape: with `create`, POST `collection` with "name" set
 * to NAME in `body`; otherwise PUT collection/NAME (escaped) with `body`.
 * Prints the object.  Returns the exit code.  `body` is borrowed.
 */
int cli_write_named(cli_ctx *ctx, const char *collection, const char *name, json_t *body,
                    int create);

/* Print a 202 approval response: "pending approval <id> (<operation>)...". */
void cli_print_pending(cli_ctx *ctx, json_t *approval);

/*
 * Read one line from stdin into a heap string (trailing newline removed),
 * or NULL at EOF.  For passwords: never echo them, never take them as flags.
 */
char *cli_read_line(void);

/* Append "/api/v1[/tenants/T[/projects/P]]" for optional tenant/project. */
void cli_scope_path(strbuf *sb, const char *tenant, const char *project);

/* Split "a,b,c" into a JSON array of strings (new reference); empty items are skipped. */
json_t *cli_csv(const char *s);

/* Append `s` URL-path-escaped to `sb`. */
void cli_add_escaped(strbuf *sb, const char *s);

/*
 * Print a list response {"items":[...]} as a table of the given columns
 * (NULL-terminated; "a.b" reads nested members; fractions rounded with
 * cli_human_number()), or as JSON with -o json.
 */
void cli_print_list(cli_ctx *ctx, json_t *resp, const char *const *columns);

/*
 * A fractional number for people (tables, object lines, overviews): two
 * decimals ("1.30" for 1.3041849999999999), three significant digits
 * without an exponent below 0.01 ("0.000002"), a whole number as one ("4").  -o json and -o csv keep full
 * precision.  Writes into buf (n bytes).
 */
void cli_human_number(double x, char *buf, size_t n);

/* Print one object as "key: value" lines (fractions rounded), or as JSON with -o json. */
void cli_print_object(cli_ctx *ctx, json_t *obj);

/* Print a tenant or project overview (GET …/overview) as text, or as JSON with -o json. */
void cli_print_overview(cli_ctx *ctx, json_t *overview);

/* 1 if argv has -h/--help before any "--". */
int cli_wants_help(int argc, char **argv);

/* One verb of a noun: `run` gets argv with argv[0] = the verb. */
typedef struct cli_verb {
    const char *name;
    int (*run)(cli_ctx *ctx, int argc, char **argv);
    const char *usage; /* full usage text, printed for --help */
} cli_verb;

/* The hidden verb that makes cli_dispatch() print its verb names (`gpupool completion`). */
#define CLI_LIST_VERBS "__verbs"

/*
 * Dispatch argv (argv[0] = noun, argv[1] = verb) to one of `verbs`
 * (terminated by a {NULL} row).  Prints `noun_usage` for a missing verb or
 * --help, a verb's usage for "<verb> --help", and a usage error for an
 * unknown verb.  "NOUN __verbs" (CLI_LIST_VERBS) prints the verb names,
 * space-separated, and returns CLI_OK: nothing else runs.
 */
int cli_dispatch(cli_ctx *ctx, const char *noun_usage, const cli_verb *verbs, int argc,
                 char **argv);

/*
 * Parse verb options with getopt_long; on an unknown option or a missing
 * value prints a one-line usage error and returns -1; returns the option
 * character otherwise (-1 at the end, like getopt_long).  `*rc` is set to
 * CLI_USAGE on error.
 */
struct option;
int cli_getopt(int argc, char **argv, const struct option *longopts, const char *verb, int *rc);

/*
 * The store a local command (check, migrate) opens: STORE when given (a URL),
 * else DATA/gpupool.db written into BUF (N bytes).  Returns STORE or BUF.
 */
const char *cli_store_location(const char *data, const char *store, char *buf, size_t n);

/* Commands. */
/*
 * `usage report` and `report cost`: GET /api/v1/usage with the options
 * --tenant --project --month --from --to --group-by --bucket, printed as a
 * table, JSON or CSV.  `default_group` applies when --group-by is not given.
 */
int cli_usage_report(cli_ctx *ctx, int argc, char **argv, const char *verb,
                     const char *default_group, int month_required);

int cli_cmd_server(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_gateway(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_report(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_ratecard(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_billing(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_whoami(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_context(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_tenant(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_project(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_audit(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_login(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_user(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_token(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_member(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_approval(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_vendor(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_policy(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_agent(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_node(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_gpu(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_jointoken(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_class(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_pool(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_workorder(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_alarm(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_job(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_reservation(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_binding(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_quota(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_share(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_priority(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_model(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_endpoint(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_app(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_key(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_usage(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_kb(cli_ctx *ctx, int argc, char **argv);
int cli_cmd_check(cli_ctx *ctx, int argc, char **argv);
/* `gpupool migrate`: apply schema migrations; --grant the servers' database role. */
int cli_cmd_migrate(cli_ctx *ctx, int argc, char **argv);
/* `gpupool backup --data DIR --to FILE`: an online backup of an SQLite data folder
 * (the store, the audit key and checkpoints) into one tar file (cmd_backup.c). */
int cli_cmd_backup(cli_ctx *ctx, int argc, char **argv);
/* `gpupool restore --from FILE --data DIR`: a backup into a new, empty data folder. */
int cli_cmd_restore(cli_ctx *ctx, int argc, char **argv);

#endif
