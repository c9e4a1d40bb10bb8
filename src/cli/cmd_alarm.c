/*
 * cmd_alarm.c - `gpupool alarm list [--tenant T] [--state S]|ack ID` and
 * `gpupool alarm policy [FILE]` (the health policy: show, or set from a JSON file).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] =
    "usage: gpupool alarm <command>\n"
    "\n"
    "  list [--tenant T] [--state open|acknowledged|resolved]\n"
    "                      alarms (ops: all; tenant members: those on their work); an alarm\n"
    "                      resolves itself when its condition clears (a node heard from, a\n"
    "                      card healthy, an interference over)\n"
    "  ack ID              acknowledge (ops-engineer)\n"
    "  policy [FILE]       show the health policy, or replace it from a JSON file (ops)\n";

static int a_list(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"state", required_argument, 0, 's'},
                                       {0, 0, 0, 0}};
    static const char *const cols[] = {"at", "severity", "state", "node", "gpu", "message",
                                       "acked_by", NULL};
    const char *tenant = NULL, *state = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "alarm list", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 's') state = optarg;
        else tenant = optarg;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "alarm list: unexpected argument");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/alarms");
    if (tenant) {
        sb_adds(&p, "?tenant=");
        cli_add_escaped(&p, tenant);
    }
    if (state) {
        sb_adds(&p, tenant ? "&state=" : "?state=");
        cli_add_escaped(&p, state);
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static int a_ack(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "alarm ack", "POST", "/api/v1/alarms/", "/ack", NULL);
}

static int a_policy(cli_ctx *ctx, int argc, char **argv) {
    if (argc == 1) return cli_run_call(ctx, "GET", "/api/v1/health-policy", NULL, NULL);
    if (argc != 2) return cli_error(CLI_USAGE, "alarm policy: expected at most one FILE");
    json_error_t je;
    json_t *body = json_load_file(argv[1], 0, &je);
    if (!body) return cli_error(CLI_USAGE, "alarm policy: %s: line %d: %s", argv[1], je.line, je.text);
    int rc = cli_run_call(ctx, "PUT", "/api/v1/health-policy", body, NULL);
    json_decref(body);
    return rc;
}

int cli_cmd_alarm(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", a_list, "usage: gpupool alarm list [--tenant T] [--state open|acknowledged|resolved]\n"},
        {"ack", a_ack, "usage: gpupool alarm ack ID\n"},
        {"policy", a_policy,
         "usage: gpupool alarm policy [FILE]\n\nShow the health policy, or replace it with the "
         "JSON in FILE:\n{\"fatal_xids\":[…],\"ignored_xids\":[…],\"corrected_ecc_rise\":100,\n"
         " \"temperature_margin_c\":0,\"allocatable\":[\"healthy\"],\n"
         " \"interference_action\":\"alert\",\"contention_samples\":3,\n"
         " \"contention_margin_pct\":10,\"contention_busy_pct\":90,\n"
         " \"vendors\":{\"nvidia\":{\"uncorrectable_ecc\":\"fatal\"},\n"
         "  \"amd\":{\"uncorrectable_ecc\":\"fatal\",\"deferred_ecc\":\"degraded\",\n"
         "   \"bad_pages_degraded\":64,\"bad_pages_fatal\":512},\n"
         "  \"intel\":{\"uncorrectable_ecc\":\"fatal\",\"critical_events\":\"fatal\"}}}\n"
         "Per vendor: fatal, degraded or ignored; Xid lists are NVIDIA's only.\n"
         "Fields left out take their defaults: edit what `gpupool -o json alarm policy` shows.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
