/*
 * cmd_overview.c - `gpupool tenant overview T` and `gpupool project overview
 * P --tenant T` print GET …/overview (src/api/h_overview.c): quota and
 * allocation per dimension, live jobs with their queue reasons, this
 * month's usage (and its card-hours by vendor), what is held now by vendor,
 * model and form, model services and alarms.  -o json prints the answer as is.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void num(char *buf, size_t n, json_t *v) {
    if (!v || json_is_null(v)) snprintf(buf, n, "-");
    else if (json_is_integer(v)) snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else cli_human_number(json_number_value(v), buf, n);
}

static const char *str(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void dim_row(const char *name, json_t *d) {
    char l[32], u[32], a[32];
    num(l, sizeof l, json_object_get(d, "limit"));
    num(u, sizeof u, json_object_get(d, "used"));
    num(a, sizeof a, json_object_get(d, "available"));
    printf("  %-22s %12s %12s %12s%s\n", name, l, u, a,
           json_object_get(d, "bounded_by") ? "  (tenant's)" : "");
}

void cli_print_overview(cli_ctx *ctx, json_t *o) {
    if (ctx->json || ctx->csv) {
        cli_print_object(ctx, o);
        return;
    }
    static const char *const dims[] = {"gpus", "gpu_memory_gib", "cpus", "memory_gib",
                                       "concurrent_jobs", "card_hours_month", NULL};
    printf("tenant %s", str(o, "tenant"));
    if (json_object_get(o, "project")) printf(", project %s (%s)", str(o, "project"), str(o, "class"));
    printf("  as of %s\n\n", str(o, "as_of"));
    json_t *q = json_object_get(o, "quota");
    printf("  %-22s %12s %12s %12s\n", "quota", "ceiling", "in use", "available");
    for (int i = 0; dims[i]; i++) dim_row(dims[i], json_object_get(q, dims[i]));
    const char *cls;
    json_t *d;
    json_object_foreach(json_object_get(q, "class_gpus"), cls, d) {
        char name[96];
        snprintf(name, sizeof name, "class %s", cls);
        dim_row(name, d);
    }
    size_t i;
    json_t *x, *j = json_object_get(o, "jobs");
    json_t *acc = json_object_get(o, "accelerators");
    if (json_array_size(acc)) {
        printf("\nheld now, by vendor:\n");
        json_array_foreach(acc, i, x) {
            char g[32];
            num(g, sizeof g, json_object_get(x, "gpus"));
            printf("  %-8s %-28s %-7s %8s GPUs on %lld cards\n", str(x, "vendor"), str(x, "model"),
                   str(x, "form"), g, (long long)json_integer_value(json_object_get(x, "cards")));
        }
    }
    if (j) {
        printf("\njobs: %lld running, %lld admitted, %lld queued\n",
               (long long)json_integer_value(json_object_get(j, "running")),
               (long long)json_integer_value(json_object_get(j, "admitted")),
               (long long)json_integer_value(json_object_get(j, "queued")));
        json_array_foreach(json_object_get(j, "items"), i, x)
            printf("  %-20s %-16s %s x%lld  %-8s %s\n", str(x, "name"), str(x, "project"),
                   str(x, "class"), (long long)json_integer_value(json_object_get(x, "units")),
                   str(x, "state"), str(x, "reason"));
    }
    json_t *u = json_object_get(o, "usage");
    if (u) {
        char ch[32], cost[32];
        num(ch, sizeof ch, json_object_get(u, "card_hours"));
        num(cost, sizeof cost, json_object_get(u, "cost"));
        printf("\nthis month: %s card-hours, %lld tokens, cost %s %s\n", ch,
               (long long)json_integer_value(json_object_get(u, "tokens")), cost,
               str(u, "currency"));
        json_array_foreach(json_object_get(u, "by_vendor"), i, x) {
            num(ch, sizeof ch, json_object_get(x, "card_hours"));
            num(cost, sizeof cost, json_object_get(x, "card_hour_cost"));
            printf("  %-8s %s card-hours, cost %s %s\n", str(x, "vendor"), ch, cost, str(u, "currency"));
        }
    }
    json_t *m = json_object_get(o, "models");
    if (m) {
        printf("\nmodels: %zu\n", json_array_size(m));
        json_array_foreach(m, i, x)
            printf("  %-24s %-8s %lld/%lld endpoints healthy\n", str(x, "name"), str(x, "visibility"),
                   (long long)json_integer_value(json_object_get(x, "healthy")),
                   (long long)json_integer_value(json_object_get(x, "endpoints")));
    }
    json_t *rv = json_object_get(o, "reservations");
    if (json_array_size(rv)) {
        printf("\nreservations: %zu\n", json_array_size(rv));
        json_array_foreach(rv, i, x) {
            json_t *cur = json_object_get(x, "current");
            char what[96];
            if (json_array_size(json_object_get(x, "nodes")))
                snprintf(what, sizeof what, "%zu node%s", json_array_size(json_object_get(x, "nodes")),
                         json_array_size(json_object_get(x, "nodes")) == 1 ? "" : "s");
            else
                snprintf(what, sizeof what, "%lld x %s in %s",
                         (long long)json_integer_value(json_object_get(x, "count")), str(x, "class"),
                         str(x, "pool"));
            printf("  %-20s %-9s %-24s %s .. %s%s%s\n", str(x, "name"), str(x, "state"), what,
                   json_is_object(cur) ? str(cur, "start") : "-",
                   json_is_object(cur) ? str(cur, "end") : "-",
                   strcmp(str(x, "recurrence"), "none") ? "  " : "",
                   strcmp(str(x, "recurrence"), "none") ? str(x, "recurrence") : "");
        }
    }
    json_t *a = json_object_get(o, "alarms");
    if (a) {
        printf("\nalarms: %lld open\n", (long long)json_integer_value(json_object_get(a, "open")));
        json_array_foreach(json_object_get(a, "items"), i, x)
            printf("  %s %-8s %-12s %s %s\n", str(x, "at"), str(x, "severity"), str(x, "kind"),
                   str(x, "node"), str(x, "message"));
    }
}
