/*
 * cmd_usage.c - `gpupool usage records`: the gateway's usage records (one
 * per request); `gpupool usage report`: card-hours, tokens and cost over a
 * window, grouped and bucketed (also behind `gpupool report cost`); `gpupool
 * usage serving-cost MODEL`: what a self-hosted model's serving jobs cost per
 * token they answered.
 */
#include "cli.h"

#include "../meter/meter.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool usage <command>\n"
    "\n"
    "  records --tenant T [--project P] [--key ID] [--limit N]\n"
    "          the gateway's usage records, newest first\n"
    "  report [--tenant T [--project P]] (--month YYYY-MM | --from TIME --to TIME)\n"
    "         [--group-by tenant,project,model,vendor,accelerator,key,user] [--bucket hour|day|month]\n"
    "         [--vendor nvidia|amd|intel] [--accelerator MODEL]\n"
    "          card-hours, tokens and their cost (-o csv for a spreadsheet)\n"
    "  serving-cost MODEL --tenant T [--month YYYY-MM | --from TIME --to TIME]\n"
    "          a self-hosted model: its serving jobs' card-hours and cost per million\n"
    "          tokens they answered (external endpoints' tokens apart)\n";

static int u_records(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"project", required_argument, 0, 'p'},
                                       {"key", required_argument, 0, 'k'},
                                       {"limit", required_argument, 0, 'l'},
                                       {0, 0, 0, 0}};
    static const char *const cols[] = {"at", "project", "app", "key_name", "model", "kind",
                                       "prompt_tokens", "completion_tokens", "estimated",
                                       "status", "latency_ms", NULL};
    const char *tenant = NULL, *project = NULL, *key = NULL, *limit = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "usage records", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') tenant = optarg;
        else if (c == 'p') project = optarg;
        else if (c == 'k') key = optarg;
        else if (c == 'l') limit = optarg;
    }
    if (!tenant) return cli_error(CLI_USAGE, "usage records: --tenant is required");
    if (optind < argc)
        return cli_error(CLI_USAGE, "usage records: unexpected argument '%s'", argv[optind]);
    if (limit) {
        char *end;
        long long v = strtoll(limit, &end, 10);
        if (!*limit || *end || v < 1 || v > 5000)
            return cli_error(CLI_USAGE, "usage records: --limit must be 1..5000, got '%s'", limit);
    }
    strbuf p = SB_INIT;
    cli_scope_path(&p, tenant, project);
    sb_adds(&p, "/usage-records");
    char sep = '?';
    if (key) {
        sb_addc(&p, sep);
        sb_adds(&p, "key=");
        cli_add_escaped(&p, key);
        sep = '&';
    }
    if (limit) {
        sb_addc(&p, sep);
        sb_adds(&p, "limit=");
        sb_adds(&p, limit);
    }
    rc = cli_run_call(ctx, "GET", p.buf, NULL, cols);
    sb_release(&p);
    return rc;
}

static void add_arg(strbuf *p, char *sep, const char *name, const char *v);

/* `usage serving-cost MODEL --tenant T [--month M | --from T --to T]` (h_usage.c). */
static int u_serving(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"month", required_argument, 0, 'm'},
                                       {"from", required_argument, 0, 'f'},
                                       {"to", required_argument, 0, 'T'},
                                       {0, 0, 0, 0}};
    const char *tenant = NULL, *month = NULL, *from = NULL, *to = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "usage serving-cost", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') tenant = optarg;
        else if (c == 'm') month = optarg;
        else if (c == 'f') from = optarg;
        else to = optarg;
    }
    if (!tenant) return cli_error(CLI_USAGE, "usage serving-cost: --tenant is required");
    if (argc - optind != 1) return cli_error(CLI_USAGE, "usage serving-cost: expected one MODEL");
    if (month && (from || to))
        return cli_error(CLI_USAGE, "usage serving-cost: give --month, or --from and --to");
    strbuf p = SB_INIT;
    cli_scope_path(&p, tenant, NULL);
    sb_adds(&p, "/models/");
    cli_add_escaped(&p, argv[optind]);
    sb_adds(&p, "/serving-cost");
    char sep = '?';
    add_arg(&p, &sep, "month", month);
    add_arg(&p, &sep, "from", from);
    add_arg(&p, &sep, "to", to);
    json_t *out;
    rc = cli_call(ctx, "GET", p.buf, NULL, &out);
    sb_release(&p);
    if (rc) return rc;
    if (ctx->json || ctx->csv) {
        cli_print_object(ctx, out);
    } else {
        char ch[32], cost[32], per[32];
        cli_human_number(json_number_value(json_object_get(out, "card_hours")), ch, sizeof ch);
        cli_human_number(json_number_value(json_object_get(out, "card_hour_cost")), cost, sizeof cost);
        json_t *pm = json_object_get(out, "cost_per_million_tokens");
        if (json_is_number(pm)) cli_human_number(json_number_value(pm), per, sizeof per);
        else snprintf(per, sizeof per, "-");
        const char *cur = json_string_value(json_object_get(out, "currency"));
        printf("model            %s\n", json_string_value(json_object_get(out, "model")));
        printf("serving jobs     %zu\n", json_array_size(json_object_get(out, "serving_jobs")));
        printf("card-hours       %s\n", ch);
        printf("cost             %s %s\n", cost, cur ? cur : "");
        printf("tokens served    %lld\n", (long long)json_integer_value(json_object_get(out, "tokens")));
        printf("per 1M tokens    %s %s\n", per, json_is_number(pm) && cur ? cur : "");
        printf("external tokens  %lld (its external endpoints: not in this cost)\n",
               (long long)json_integer_value(json_object_get(out, "external_tokens")));
        const char *who;
        json_t *v;
        json_object_foreach(json_object_get(out, "tokens_by_tenant"), who, v)
            printf("  %-14s %lld tokens, %lld requests\n", who,
                   (long long)(json_integer_value(json_object_get(v, "prompt_tokens")) +
                               json_integer_value(json_object_get(v, "completion_tokens"))),
                   (long long)json_integer_value(json_object_get(v, "requests")));
    }
    json_decref(out);
    return CLI_OK;
}

static void add_arg(strbuf *p, char *sep, const char *name, const char *v) {
    if (!v) return;
    sb_addc(p, *sep);
    sb_adds(p, name);
    sb_addc(p, '=');
    cli_add_escaped(p, v);
    *sep = '&';
}

int cli_usage_report(cli_ctx *ctx, int argc, char **argv, const char *verb,
                     const char *default_group, int month_required) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'}, {"project", required_argument, 0, 'p'},
        {"month", required_argument, 0, 'm'},  {"from", required_argument, 0, 'f'},
        {"to", required_argument, 0, 'T'},     {"group-by", required_argument, 0, 'g'},
        {"bucket", required_argument, 0, 'b'}, {"vendor", required_argument, 0, 'v'},
        {"accelerator", required_argument, 0, 'a'}, {0, 0, 0, 0}};
    const char *tenant = NULL, *project = NULL, *month = NULL, *from = NULL, *to = NULL;
    const char *group = default_group, *bucket = NULL, *vendor = NULL, *accel = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        switch (c) {
        case 't': tenant = optarg; break;
        case 'p': project = optarg; break;
        case 'm': month = optarg; break;
        case 'f': from = optarg; break;
        case 'T': to = optarg; break;
        case 'g': group = optarg; break;
        case 'b': bucket = optarg; break;
        case 'v': vendor = optarg; break;
        case 'a': accel = optarg; break;
        }
    }
    if (optind < argc) return cli_error(CLI_USAGE, "%s: unexpected argument '%s'", verb, argv[optind]);
    if (month_required && !month) return cli_error(CLI_USAGE, "%s: --month YYYY-MM is required", verb);
    if (month && (from || to)) return cli_error(CLI_USAGE, "%s: give --month, or --from and --to", verb);
    if (project && !tenant) return cli_error(CLI_USAGE, "%s: --project needs --tenant", verb);
    if (vendor && !meter_vendor_valid(vendor))
        return cli_error(CLI_USAGE, "%s: --vendor must be nvidia, amd or intel, got '%s'", verb, vendor);
    strbuf p = SB_INIT;
    char sep = '?';
    sb_adds(&p, "/api/v1/usage");
    add_arg(&p, &sep, "tenant", tenant);
    add_arg(&p, &sep, "project", project);
    add_arg(&p, &sep, "month", month);
    add_arg(&p, &sep, "from", from);
    add_arg(&p, &sep, "to", to);
    add_arg(&p, &sep, "group_by", group);
    add_arg(&p, &sep, "bucket", bucket);
    add_arg(&p, &sep, "vendor", vendor);
    add_arg(&p, &sep, "accelerator", accel);
    json_t *rep;
    rc = cli_call(ctx, "GET", p.buf, NULL, &rep);
    sb_release(&p);
    if (rc) return rc;
    if (ctx->json) {
        cli_print_json(ctx, rep);
    } else if (ctx->csv) {
        char *t = meter_report_csv(rep);
        if (t) fputs(t, stdout);
        free(t);
    } else {
        /* the same columns as the CSV, aligned */
        char *t = meter_report_csv(rep);
        json_t *items = json_array();
        const char *cols[32];
        int nc = 0;
        char *line = t ? strtok(t, "\r\n") : NULL;
        for (char *q = line; q && nc < 31;) {
            cols[nc++] = q;
            q = strchr(q, ',');
            if (q) *q++ = '\0';
        }
        cols[nc] = NULL;
        size_t i;
        json_t *r;
        json_t *billing = json_object_get(rep, "billing");
        json_array_foreach(json_object_get(rep, "rows"), i, r) {
            json_t *row = json_deep_copy(r);
            const char *tn = json_string_value(json_object_get(r, "tenant"));
            if (tn && json_object_get(billing, tn)) json_object_set(row, "billing", json_object_get(billing, tn));
            json_array_append_new(items, row);
        }
        json_t *list = json_pack("{s:o}", "items", items);
        cli_print_list(ctx, list, cols);
        json_decref(list);
        json_t *tot = json_object_get(rep, "totals");
        printf("total: %.3f card-hours, %lld tokens, cost %.2f %s (rate cards:",
               json_number_value(json_object_get(tot, "card_hours")),
               (long long)(json_integer_value(json_object_get(tot, "prompt_tokens")) +
                           json_integer_value(json_object_get(tot, "completion_tokens"))),
               json_number_value(json_object_get(tot, "cost")),
               json_string_value(json_object_get(rep, "currency")));
        json_t *v;
        json_array_foreach(json_object_get(rep, "rate_cards"), i, v)
            printf(" v%lld", (long long)json_integer_value(json_object_get(v, "version")));
        printf("%s)\n", json_array_size(json_object_get(rep, "rate_cards")) ? "" : " none");
        if (json_is_true(json_object_get(rep, "reserved")))
            printf("reserved but unused: %.3f card-hours, cost %.2f %s (charged to the holders, "
                   "in the cost above)\n",
                   json_number_value(json_object_get(tot, "reserved_unused_card_hours")),
                   json_number_value(json_object_get(tot, "reserved_unused_cost")),
                   json_string_value(json_object_get(rep, "currency")));
        json_t *cap = json_object_get(rep, "capacity");
        if (cap)
            printf("capacity: %.3f card-hours, allocated %.3f, idle %.3f (cost %.2f %s, the "
                   "platform's: not in the total)\n",
                   json_number_value(json_object_get(cap, "card_hours")),
                   json_number_value(json_object_get(cap, "allocated")),
                   json_number_value(json_object_get(cap, "idle")),
                   json_number_value(json_object_get(cap, "idle_cost")),
                   json_string_value(json_object_get(rep, "currency")));
        free(t);
    }
    json_decref(rep);
    return CLI_OK;
}

static int u_report(cli_ctx *ctx, int argc, char **argv) {
    return cli_usage_report(ctx, argc, argv, "usage report", NULL, 0);
}

int cli_cmd_usage(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"serving-cost", u_serving,
         "usage: gpupool usage serving-cost MODEL --tenant T [--month YYYY-MM | --from TIME --to TIME]\n"
         "\n"
         "A self-hosted model of tenant T: the card-hours its serving jobs (the jobs its\n"
         "endpoints name) held in the window (default: this month), their cost by the rate\n"
         "cards, the tokens those jobs answered by calling tenant, and the cost per million\n"
         "of them.  Tokens its external endpoints served are shown apart, not priced here.\n"},
        {"records", u_records,
         "usage: gpupool usage records --tenant T [--project P] [--key ID] [--limit N]\n"
         "\n"
         "The gateway's usage records, newest first (default 100, at most 5000): time,\n"
         "project, application, key, model, tokens, latency, status.  Without --project:\n"
         "the whole tenant (tenant-admins, tenant viewers); project members give --project.\n"},
        {"report", u_report,
         "usage: gpupool usage report [--tenant T [--project P]] (--month YYYY-MM | --from TIME --to TIME)\n"
         "                            [--group-by LIST] [--bucket hour|day|month]\n"
         "                            [--vendor nvidia|amd|intel] [--accelerator MODEL]\n"
         "\n"
         "Card-hours (from the binding timeline, weighted by slice size) and tokens (from the\n"
         "gateway) with their cost under the rate cards in force, grouped by any of tenant,\n"
         "project, model (the model service), vendor (the cards' vendor), accelerator (the\n"
         "card model and form), key, user.  --vendor and --accelerator keep only usage on\n"
         "those cards.  Without --tenant: everything (platform admins), with idle capacity\n"
         "as its own line.  Default window: this month.\n"
         "-o csv prints CSV, -o json the whole report.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
