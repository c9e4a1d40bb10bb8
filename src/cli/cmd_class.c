/*
 * cmd_class.c - `gpupool class create|list|show|delete`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool class <command>\n"
    "\n"
    "  create NAME --form F --models M[,M...] --cpus N --memory GIB [--gpus N]\n"
    "         [--vendors nvidia,amd,intel] [--min-driver [VENDOR:]V ...]\n"
    "         [--stack RUNTIME:V ...] [--min-cc V] [--topology any|nvlink|same-numa] [--pool P]\n"
    "         form: whole | mig:3g.40gb | partition:cpx.24gb | shared:12/25   (platform-admin)\n"
    "         --min-driver V alone is NVIDIA's; runtimes: cuda, rocm, synapse\n"
    "  list              classes with total and free units (healthy capacity)\n"
    "  show NAME\n"
    "  delete NAME\n";

static int c_create(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {
        {"form", required_argument, 0, 'f'},      {"models", required_argument, 0, 'm'},
        {"cpus", required_argument, 0, 'c'},      {"memory", required_argument, 0, 'M'},
        {"gpus", required_argument, 0, 'g'},      {"min-driver", required_argument, 0, 'd'},
        {"min-cc", required_argument, 0, 'C'},    {"topology", required_argument, 0, 't'},
        {"pool", required_argument, 0, 'p'},      {"vendors", required_argument, 0, 'v'},
        {"stack", required_argument, 0, 's'},     {0, 0, 0, 0}};
    json_t *body = json_object();
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, "class create", &rc)) != -1) {
        if (c == -2) goto out;
        const char *key = NULL;
        if (c == 'v') {
            json_object_set_new(body, "vendors", cli_csv(optarg));
            continue;
        }
        if (c == 'd' || c == 's') {
            /* --min-driver amd:6.8 (per vendor; plain V: NVIDIA's), --stack rocm:6.0 */
            const char *colon = strchr(optarg, ':');
            if (c == 'd' && !colon) {
                json_object_set_new(body, "min_driver", json_string(optarg));
                continue;
            }
            if (!colon || colon == optarg || !colon[1]) {
                rc = cli_error(CLI_USAGE, "class create: %s needs %s:VERSION, got '%s'",
                               c == 'd' ? "--min-driver" : "--stack",
                               c == 'd' ? "VENDOR" : "RUNTIME", optarg);
                goto out;
            }
            const char *field = c == 'd' ? "min_drivers" : "stack";
            json_t *obj = json_object_get(body, field);
            if (!obj) json_object_set_new(body, field, obj = json_object());
            char k[64];
            snprintf(k, sizeof k, "%.*s", (int)(colon - optarg), optarg);
            json_object_set_new(obj, k, json_string(colon + 1));
            continue;
        }
        switch (c) {
        case 'f': key = "form"; break;
        case 'C': key = "min_compute_cap"; break;
        case 't': key = "topology"; break;
        case 'p': key = "pool"; break;
        }
        if (key) {
            json_object_set_new(body, key, json_string(optarg));
            continue;
        }
        if (c == 'm') {
            json_object_set_new(body, "gpu_models", cli_csv(optarg));
            continue;
        }
        char *end;
        long long v = strtoll(optarg, &end, 10);
        if (!*optarg || *end) {
            rc = cli_error(CLI_USAGE, "class create: %s must be a number, got '%s'",
                           c == 'c' ? "--cpus" : c == 'M' ? "--memory" : "--gpus", optarg);
            goto out;
        }
        json_object_set_new(body, c == 'c' ? "cpus" : c == 'M' ? "memory_gib" : "gpus",
                            json_integer(v));
    }
    if (argc - optind != 1) {
        rc = cli_error(CLI_USAGE, "class create: expected one NAME");
        goto out;
    }
    json_object_set_new(body, "name", json_string(argv[optind]));
    rc = cli_run_call(ctx, "POST", "/api/v1/classes", body, NULL);
out:
    json_decref(body);
    return rc;
}

static int c_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "form", "gpus", "cpus", "memory_gib", "gpu_models",
                                       "vendors", "min_drivers", "stack", "capacity.total",
                                       "capacity.free", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "class list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/classes", NULL, cols);
}

static int c_show(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "class show", "GET", "/api/v1/classes/", NULL, NULL);
}
static int c_delete(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "class delete", "DELETE", "/api/v1/classes/", NULL, NULL);
}

int cli_cmd_class(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", c_create,
         "usage: gpupool class create NAME --form F --models M[,M...] --cpus N --memory GIB\n"
         "       [--gpus N] [--vendors V[,V...]] [--min-driver [VENDOR:]V ...]\n"
         "       [--stack RUNTIME:V ...] [--min-cc V] [--topology T] [--pool P]\n\n"
         "Vendors: nvidia, amd, intel (none given: any).  --min-driver is repeatable, one per\n"
         "vendor (amd:6.8); a plain version is NVIDIA's.  --stack is repeatable: a card\n"
         "qualifies when it offers one of the runtimes (cuda, rocm, synapse) at that version\n"
         "or newer.  A class no GPU could ever satisfy is refused with the reason.\n"},
        {"list", c_list, "usage: gpupool class list\n\nTotal and free units per class, counted "
                         "on allocatable GPUs only.\n"},
        {"show", c_show, "usage: gpupool class show NAME\n"},
        {"delete", c_delete, "usage: gpupool class delete NAME\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
