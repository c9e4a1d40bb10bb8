/*
 * cmd_ratecard.c - `gpupool ratecard list|create FILE` (versioned prices, per
 * model, vendor or default) and
 * `gpupool billing show|set --tenant T` (showback or chargeback).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char rc_usage[] =
    "usage: gpupool ratecard <command>\n"
    "\n"
    "  list          every version, oldest first\n"
    "  create FILE [--cpu-hour P] [--memory-gib-hour P]\n"
    "                a new version from a JSON file (platform-admin)\n";

static int rc_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"version", "effective_from", "currency", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "ratecard list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/rate-cards", NULL, cols);
}

static int rc_create(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"cpu-hour", required_argument, 0, 'c'},
                                       {"memory-gib-hour", required_argument, 0, 'm'},
                                       {0, 0, 0, 0}};
    const char *cpu = NULL, *mem = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "ratecard create", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 'c') cpu = optarg;
        else mem = optarg;
    }
    if (optind + 1 != argc) return cli_error(CLI_USAGE, "ratecard create: expected one FILE");
    const char *file = argv[optind];
    json_error_t je;
    json_t *body = json_load_file(file, 0, &je);
    if (!body) return cli_error(CLI_USAGE, "ratecard create: %s: line %d: %s", file, je.line, je.text);
    /* the flags set (or override) the file's host prices; the server checks their range */
    const char *val[2] = {cpu, mem}, *key[2] = {"cpu_hour", "memory_gib_hour"};
    for (int i = 0; i < 2; i++) {
        if (!val[i]) continue;
        char *end;
        double v = strtod(val[i], &end);
        if (!*val[i] || *end) {
            json_decref(body);
            return cli_error(CLI_USAGE, "ratecard create: --%s must be a number, got '%s'",
                             i ? "memory-gib-hour" : "cpu-hour", val[i]);
        }
        if (json_is_object(body)) json_object_set_new(body, key[i], json_real(v));
    }
    rc = cli_run_call(ctx, "POST", "/api/v1/rate-cards", body, NULL);
    json_decref(body);
    return rc;
}

int cli_cmd_ratecard(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", rc_list, "usage: gpupool ratecard list\n"},
        {"create", rc_create,
         "usage: gpupool ratecard create FILE [--cpu-hour P] [--memory-gib-hour P]\n"
         "\n"
         "A new version, in force from its effective_from until the next version's:\n"
         "{\"effective_from\":\"2026-12-01T00:00:00Z\",\"currency\":\"EUR\",\n"
         " \"card_hour\":[{\"model\":\"A100-80GB\",\"form\":\"whole\",\"price\":2.5},\n"
         "              {\"model\":\"L40S\",\"form\":\"shared\",\"price\":0.9},\n"
         "              {\"model\":\"MI300X\",\"vendor\":\"amd\",\"price\":2.8},\n"
         "              {\"vendor\":\"intel\",\"price\":1.6},{\"price\":1}],\n"
         " \"tokens\":[{\"model\":\"llama-8b\",\"input\":0.2,\"output\":0.6}],\n"
         " \"cpu_hour\":0.03,\"memory_gib_hour\":0.004}\n"
         "card_hour prices are per card-hour; each may name a model, a vendor (nvidia,\n"
         "amd, intel) and a form (whole, mig, shared or *); the most specific that\n"
         "matches a card wins: model, then vendor, then the default (neither named).\n"
         "Prices are numbers from 0 to 1000000.  tokens prices are per million (model *\n"
         "for any).  cpu_hour and memory_gib_hour (or --cpu-hour / --memory-gib-hour,\n"
         "which override the file's) price the CPUs and memory a job's class asks for\n"
         "per unit, times its run time (absent: 0).  Idle cards are priced at their\n"
         "whole-card rate in the usage report's (idle) row, the platform's own.  effective_from must be after the latest version's; every version\n"
         "is in the same currency.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, rc_usage, verbs, argc, argv);
}

static const char b_usage[] =
    "usage: gpupool billing <command>\n"
    "\n"
    "  show --tenant T               showback (figures only) or chargeback (invoiced)\n"
    "  set --tenant T MODE           MODE: showback | chargeback (platform-admin)\n";

static int b_cmd(cli_ctx *ctx, int argc, char **argv, int set) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'}, {0, 0, 0, 0}};
    const char *tenant = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, set ? "billing set" : "billing show", &rc)) != -1) {
        if (c == -2) return rc;
        tenant = optarg;
    }
    if (!tenant) return cli_error(CLI_USAGE, "billing: --tenant is required");
    if (set ? optind + 1 != argc : optind != argc)
        return cli_error(CLI_USAGE, set ? "billing set: expected one MODE (showback or chargeback)"
                                        : "billing show: unexpected argument");
    strbuf p = SB_INIT;
    cli_scope_path(&p, tenant, NULL);
    sb_adds(&p, "/billing");
    json_t *body = set ? json_pack("{s:s}", "mode", argv[optind]) : NULL;
    rc = cli_run_call(ctx, set ? "PUT" : "GET", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int b_show(cli_ctx *ctx, int argc, char **argv) { return b_cmd(ctx, argc, argv, 0); }
static int b_set(cli_ctx *ctx, int argc, char **argv) { return b_cmd(ctx, argc, argv, 1); }

int cli_cmd_billing(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"show", b_show, "usage: gpupool billing show --tenant T\n"},
        {"set", b_set,
         "usage: gpupool billing set --tenant T showback|chargeback\n"
         "\n"
         "Reports say, per tenant, whether its figures are only shown or invoiced.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, b_usage, verbs, argc, argv);
}
