/*
 * cmd_share.c - `gpupool share list|show|set`: guaranteed shares (docs/scheduling.md,
 * "Guarantees"; GET /api/v1/shares, GET|PATCH /api/v1/tenants/{t}[/projects/{p}]/shares).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool share <command>\n"
    "\n"
    "  list                        every tenant's share you may read\n"
    "  show --tenant T [--project P]\n"
    "                              one tenant's: guarantee, kept part, weight, ceiling,\n"
    "                              in use, reserved (its reservations in force: part\n"
    "                              of the guarantee), borrowed, lent, recent borrowing;\n"
    "                              with --project: its part, in use, borrowed\n"
    "  set --tenant T [--guaranteed-gpus N] [--kept-gpus N] [--borrow-weight W]\n"
    "      [--ceiling-gpus N]      change what it names ('none' lifts one); raising any\n"
    "                              needs approval by default (tenant.quota.raise)\n"
    "  set --tenant T --class C --guaranteed-gpus N|none [--kept-gpus N]\n"
    "                              the tenant's guarantee of one resource class: its work\n"
    "                              of class C counts against it alone (none lifts it)\n"
    "  set --tenant T --pool P --guaranteed-gpus N|none [--kept-gpus N]\n"
    "                              the tenant's guarantee in one pool, over every class\n"
    "                              without one of its own: admission gives a job of a\n"
    "                              class that spans pools the pool where it is owned\n"
    "  set --tenant T --project P [--guaranteed-gpus N] [--ceiling-gpus N]\n"
    "                              a project's part of its tenant's guarantee (the parts\n"
    "                              add up to it at most) and its ceiling (tenant-admins)\n"
    "  set --tenant T --project P --class C|--pool P --guaranteed-gpus N|none\n"
    "                              its part of its tenant's guarantee of class C / in pool P\n"
    "      --guaranteed-gpus: GPUs the tenant is entitled to (work above them is borrowed:\n"
    "      preemptible, and reclaimed when an owner needs its share); --kept-gpus: the part\n"
    "      of it never lent; --borrow-weight 1..1000: its weight among borrowers of idle\n"
    "      capacity; --ceiling-gpus: what it may use at most (the quota's --gpus).\n";

static int s_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"tenant",        "guaranteed_gpus", "kept_gpus",
                                       "borrow_weight", "ceiling_gpus",    "in_use_gpus",
                                       "reserved_gpus", "borrowed_gpus",   "lent_gpus",
                                       "recent_borrowed_gpu_hours",        NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "share list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/shares", NULL, cols);
}

static int s_run(cli_ctx *ctx, int argc, char **argv, int set) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"project", required_argument, 0, 'p'},
                                       {"guaranteed-gpus", required_argument, 0, 'U'},
                                       {"kept-gpus", required_argument, 0, 'K'},
                                       {"borrow-weight", required_argument, 0, 'W'},
                                       {"ceiling-gpus", required_argument, 0, 'g'},
                                       {"class", required_argument, 0, 'c'},
                                       {"pool", required_argument, 0, 'P'},
                                       {0, 0, 0, 0}};
    const char *verb = set ? "share set" : "share show", *tenant = NULL, *project = NULL,
               *cls = NULL, *pool = NULL;
    json_t *body = json_object();
    const char *kept_or_weight = NULL;
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) goto out;
        if (c == 't') {
            tenant = optarg;
            continue;
        }
        if (c == 'p') {
            project = optarg;
            continue;
        }
        if (!set) {
            rc = cli_error(CLI_USAGE, "share show: only --tenant and --project");
            goto out;
        }
        if (c == 'c' || c == 'P') {
            if (c == 'c') cls = optarg;
            else pool = optarg;
            continue;
        }
        if (c == 'K' || c == 'W') kept_or_weight = c == 'K' ? "--kept-gpus" : "--borrow-weight";
        const char *key = c == 'U' ? "guaranteed_gpus" : c == 'K' ? "kept_gpus"
                          : c == 'W' ? "borrow_weight" : "ceiling_gpus";
        if (!strcmp(optarg, "none")) {
            json_object_set_new(body, key, json_null());
            continue;
        }
        char *end;
        double v = strtod(optarg, &end);
        if (!*optarg || *end || v < 0) {
            rc = cli_error(CLI_USAGE, "share set: %s must be a number or none, got '%s'", key,
                           optarg);
            goto out;
        }
        json_object_set_new(body, key, c == 'W' ? json_integer((long long)v) : json_real(v));
    }
    if (!tenant) {
        rc = cli_error(CLI_USAGE, "%s: --tenant is required", verb);
        goto out;
    }
    if (optind < argc) {
        rc = cli_error(CLI_USAGE, "%s: unexpected argument '%s'", verb, argv[optind]);
        goto out;
    }
    if (set && !json_object_size(body)) {
        rc = cli_error(CLI_USAGE, "share set: give at least one of --guaranteed-gpus, "
                                  "--kept-gpus, --borrow-weight, --ceiling-gpus");
        goto out;
    }
    if (cls && pool) {
        rc = cli_error(CLI_USAGE, "share set: --class or --pool, not both");
        goto out;
    }
    if (cls || pool) { /* one class's or pool's guarantee, set whole: {"class_guarantees":
                        * {C: {...} | null}}, or pool_guarantees */
        const char *opt = cls ? "--class" : "--pool", *name = cls ? cls : pool;
        json_t *g = json_object_get(body, "guaranteed_gpus"), *k = json_object_get(body, "kept_gpus");
        if (!*name || !g || (json_is_null(g) && k)) {
            rc = cli_error(CLI_USAGE,
                           "share set %s: give --guaranteed-gpus N [--kept-gpus N], or "
                           "--guaranteed-gpus none to lift it",
                           opt);
            goto out;
        }
        json_t *entry = json_is_null(g) ? json_null()
                        : json_pack("{s:O,s:o}", "guaranteed_gpus", g, "kept_gpus",
                                    k && !json_is_null(k) ? json_incref(k) : json_integer(0));
        json_object_set_new(body, cls ? "class_guarantees" : "pool_guarantees",
                            json_pack("{s:o}", name, entry));
        json_object_del(body, "guaranteed_gpus");
        json_object_del(body, "kept_gpus");
    }
    if (project && kept_or_weight) {
        rc = cli_error(CLI_USAGE, "share set: %s is a tenant's; a project has a part of the "
                                  "guarantee (--guaranteed-gpus) and a ceiling (--ceiling-gpus)",
                       kept_or_weight);
        goto out;
    }
    strbuf p = SB_INIT;
    cli_scope_path(&p, tenant, project);
    sb_adds(&p, "/shares");
    rc = cli_run_call(ctx, set ? "PATCH" : "GET", p.buf, set ? body : NULL, NULL);
    sb_release(&p);
out:
    json_decref(body);
    return rc;
}

static int s_show(cli_ctx *c, int a, char **v) { return s_run(c, a, v, 0); }
static int s_set(cli_ctx *c, int a, char **v) { return s_run(c, a, v, 1); }

int cli_cmd_share(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"list", s_list, usage}, {"show", s_show, usage}, {"set", s_set, usage}, {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
