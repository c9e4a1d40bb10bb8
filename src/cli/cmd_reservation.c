/*
 * cmd_reservation.c - `gpupool reservation create|list|show|update|delete`:
 * advance reservations and maintenance windows (docs/scheduling.md,
 * "Reservations").
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: gpupool reservation <command>\n"
    "\n"
    "  create NAME (--tenant T [--project P] | --maintenance)\n"
    "         (--nodes A,B | --pool P --class C --count N) --start TIME --end TIME\n"
    "         [--recurrence none|daily|weekly|weekdays:mon,wed,..|every:SECONDS]\n"
    "         [--until TIME] [--end-policy stop|run] [--drain-before S]\n"
    "         [--work-orders ID,..] [--description TEXT]\n"
    "  list | show NAME | delete NAME\n"
    "  update NAME [any option of create but the holder; --project, --until,\n"
    "         --description none lift them]\n"
    "\n"
    "TIME is RFC 3339 (2026-12-01T10:00:00Z) or from now: +90s, +15m, +2h, +1d.\n";

/* TIME: RFC 3339 as given, or "+N[smhd]" from now, as RFC 3339 (UTC) in buf. */
static int when(const char *s, const char *flag, char *buf, size_t n) {
    if (s[0] != '+') {
        snprintf(buf, n, "%s", s);
        return 0;
    }
    char *end;
    long long v = strtoll(s + 1, &end, 10), mul = 1;
    if (end == s + 1 || v < 0) goto bad;
    if (*end == 'm') mul = 60;
    else if (*end == 'h') mul = 3600;
    else if (*end == 'd') mul = 86400;
    else if (*end && *end != 's') goto bad;
    if (*end && end[1]) goto bad;
    time_t t = time(NULL) + (time_t)(v * mul);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return 0;
bad:
    return cli_error(CLI_USAGE, "reservation: %s: a time is RFC 3339 or +N[s|m|h|d], got '%s'",
                     flag, s);
}

/* "none" lifts an optional field in an update (JSON null). */
static json_t *str_or_null(const char *s, int update) {
    return update && !strcmp(s, "none") ? json_null() : json_string(s);
}

static int write_rsv(cli_ctx *ctx, int argc, char **argv, int create) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'},       {"project", required_argument, 0, 'p'},
        {"maintenance", no_argument, 0, 'M'},         {"nodes", required_argument, 0, 'n'},
        {"pool", required_argument, 0, 'P'},          {"class", required_argument, 0, 'c'},
        {"count", required_argument, 0, 'k'},         {"start", required_argument, 0, 's'},
        {"end", required_argument, 0, 'e'},           {"recurrence", required_argument, 0, 'r'},
        {"until", required_argument, 0, 'u'},         {"end-policy", required_argument, 0, 'E'},
        {"drain-before", required_argument, 0, 'D'},  {"work-orders", required_argument, 0, 'w'},
        {"description", required_argument, 0, 'd'},   {0, 0, 0, 0}};
    const char *verb = create ? "reservation create" : "reservation update";
    json_t *body = json_object();
    int c, rc = 0, update = !create;
    char t[64];
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) goto out;
        char *end;
        long long v;
        switch (c) {
        case 't':
            if (update) {
                rc = cli_error(CLI_USAGE, "%s: the holder does not change (delete and create)", verb);
                goto out;
            }
            json_object_set_new(body, "tenant", json_string(optarg));
            break;
        case 'M':
            if (update) {
                rc = cli_error(CLI_USAGE, "%s: the holder does not change (delete and create)", verb);
                goto out;
            }
            json_object_set_new(body, "maintenance", json_true());
            break;
        case 'p': json_object_set_new(body, "project", str_or_null(optarg, update)); break;
        case 'n':
            json_object_set_new(body, "nodes", cli_csv(optarg));
            if (update) { /* from a count to named nodes */
                json_object_set_new(body, "pool", json_null());
                json_object_set_new(body, "class", json_null());
                json_object_set_new(body, "count", json_null());
            }
            break;
        case 'P': json_object_set_new(body, "pool", json_string(optarg)); break;
        case 'c': json_object_set_new(body, "class", json_string(optarg)); break;
        case 'k':
        case 'D':
            v = strtoll(optarg, &end, 10);
            if (!*optarg || *end) {
                rc = cli_error(CLI_USAGE, "%s: --%s must be a number, got '%s'", verb,
                               c == 'k' ? "count" : "drain-before", optarg);
                goto out;
            }
            json_object_set_new(body, c == 'k' ? "count" : "drain_before_seconds", json_integer(v));
            break;
        case 's':
        case 'e':
            if ((rc = when(optarg, c == 's' ? "--start" : "--end", t, sizeof t))) goto out;
            json_object_set_new(body, c == 's' ? "start" : "end", json_string(t));
            break;
        case 'u':
            if (update && !strcmp(optarg, "none")) {
                json_object_set_new(body, "until", json_null());
                break;
            }
            if ((rc = when(optarg, "--until", t, sizeof t))) goto out;
            json_object_set_new(body, "until", json_string(t));
            break;
        case 'r':
            if (!strncmp(optarg, "weekdays:", 9)) {
                json_object_set_new(body, "recurrence", json_string("weekdays"));
                json_object_set_new(body, "weekdays", cli_csv(optarg + 9));
                if (update) json_object_set_new(body, "every_seconds", json_null());
            } else if (!strncmp(optarg, "every:", 6)) {
                v = strtoll(optarg + 6, &end, 10);
                if (!optarg[6] || *end) {
                    rc = cli_error(CLI_USAGE, "%s: --recurrence every:SECONDS, got '%s'", verb,
                                   optarg);
                    goto out;
                }
                json_object_set_new(body, "recurrence", json_string("every"));
                json_object_set_new(body, "every_seconds", json_integer(v));
                if (update) json_object_set_new(body, "weekdays", json_null());
            } else {
                json_object_set_new(body, "recurrence", json_string(optarg));
                if (update) {
                    json_object_set_new(body, "weekdays", json_null());
                    json_object_set_new(body, "every_seconds", json_null());
                    if (!strcmp(optarg, "none")) json_object_set_new(body, "until", json_null());
                }
            }
            break;
        case 'E': json_object_set_new(body, "end_policy", json_string(optarg)); break;
        case 'w': json_object_set_new(body, "work_orders", cli_csv(optarg)); break;
        case 'd':
            json_object_set_new(body, "description",
                                update && !strcmp(optarg, "none") ? json_null() : json_string(optarg));
            break;
        }
    }
    if (update && (json_object_get(body, "pool") && !json_is_null(json_object_get(body, "pool"))))
        json_object_set_new(body, "nodes", json_null()); /* from named nodes to a count */
    if (argc - optind != 1) {
        rc = cli_error(CLI_USAGE, "%s: expected one NAME", verb);
        goto out;
    }
    if (create) {
        rc = cli_write_named(ctx, "/api/v1/reservations", argv[optind], body, 1);
    } else {
        strbuf p = SB_INIT;
        sb_adds(&p, "/api/v1/reservations/");
        cli_add_escaped(&p, argv[optind]);
        rc = cli_run_call(ctx, "PATCH", p.buf, body, NULL);
        sb_release(&p);
    }
out:
    json_decref(body);
    return rc;
}

static int r_create(cli_ctx *c, int a, char **v) { return write_rsv(c, a, v, 1); }
static int r_update(cli_ctx *c, int a, char **v) { return write_rsv(c, a, v, 0); }
static int r_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name",  "kind",          "tenant",      "project",
                                       "nodes", "pool",          "class",       "count",
                                       "state", "current.start", "current.end", "recurrence",
                                       NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "reservation list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/reservations", NULL, cols);
}
static int r_show(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "reservation show", "GET", "/api/v1/reservations/", NULL, NULL);
}
static int r_delete(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "reservation delete", "DELETE", "/api/v1/reservations/", NULL,
                         NULL);
}

int cli_cmd_reservation(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", r_create,
         "usage: gpupool reservation create NAME (--tenant T [--project P] | --maintenance)\n"
         "       (--nodes A,B | --pool P --class C --count N) --start TIME --end TIME\n"
         "       [--recurrence none|daily|weekly|weekdays:mon,wed,..|every:SECONDS]\n"
         "       [--until TIME] [--end-policy stop|run] [--drain-before S]\n"
         "       [--work-orders ID,..] [--description TEXT]\n"
         "\n"
         "Reserve named nodes (every card of them) or COUNT cards of class C in pool P from\n"
         "--start to --end, for a tenant (its jobs naming the reservation run there: job\n"
         "submit --reservation NAME) or for maintenance (nothing runs there; named nodes are\n"
         "drained --drain-before seconds before, default 3600, cordoned in the window and\n"
         "returned after it).  Recurring: the window again every day, week, on the weekdays\n"
         "named (UTC) or every SECONDS, while it starts before --until.  --end-policy: what\n"
         "still runs in it at the end is stopped (default) or let run.  A tenant's\n"
         "reservation needs platform-admin, a maintenance window ops-engineer or\n"
         "platform-admin.  TIME is RFC 3339 or +N[s|m|h|d] from now.\n"},
        {"list", r_list, "usage: gpupool reservation list\n\nThe reservations you may see.\n"},
        {"show", r_show, "usage: gpupool reservation show NAME\n"},
        {"update", r_update,
         "usage: gpupool reservation update NAME [options of create but the holder]\n"
         "\n"
         "Change only what is given (--project, --until, --description none lift them;\n"
         "--nodes replaces a count and --pool/--class/--count named nodes).\n"},
        {"delete", r_delete,
         "usage: gpupool reservation delete NAME\n\nQueued jobs naming it are cancelled; "
         "running ones go on.\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
