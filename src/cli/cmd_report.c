/*
 * cmd_report.c - `gpupool report cost --month YYYY-MM`: a month's cost by
 * tenant and project (a `usage report` with the month required and that
 * grouping by default); -o csv for the invoice run.
 */
#include "cli.h"

static const char usage[] =
    "usage: gpupool report <command>\n"
    "\n"
    "  cost --month YYYY-MM [--tenant T [--project P]] [--group-by LIST] [--bucket B]\n"
    "       [--vendor V] [--accelerator MODEL]\n"
    "       a month's card-hours, tokens and cost (default grouping: tenant,project)\n";

static int r_cost(cli_ctx *ctx, int argc, char **argv) {
    return cli_usage_report(ctx, argc, argv, "report cost", "tenant,project", 1);
}

int cli_cmd_report(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"cost", r_cost,
         "usage: gpupool report cost --month YYYY-MM [--tenant T [--project P]]\n"
         "                           [--group-by LIST] [--bucket day|month]\n"
         "                           [--vendor nvidia|amd|intel] [--accelerator MODEL]\n"
         "\n"
         "The month's card-hours and tokens with their cost, by tenant and project unless\n"
         "--group-by says otherwise (e.g. tenant,vendor or vendor,accelerator), only on\n"
         "the --vendor's or --accelerator's cards when given, under the rate card versions\n"
         "in force (listed), and\n"
         "each tenant's billing mode (showback or chargeback).  -o csv for a spreadsheet.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
