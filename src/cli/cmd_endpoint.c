/*
 * cmd_endpoint.c - `gpupool endpoint add|list|remove --tenant T --model M`:
 * where a model service is served (an external URL, or a job of the tenant
 * serving on a port).
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool endpoint <command> --tenant T --model M\n"
    "\n"
    "  add (--url URL | --job ID --port N) [--accelerator A] [--upstream-model NAME]\n"
    "      [--health-path P] [--max-concurrency N [--max-queue Q]]\n"
    "                             serve the model from a base URL or a running job; at most N\n"
    "                             requests in flight to it per gateway process, Q more waiting\n"
    "  list                       the model's endpoints and their health\n"
    "  remove ID                  stop routing to an endpoint\n";

typedef struct eopts {
    const char *tenant, *model, *url, *job, *port, *acc, *um, *hp, *mc, *mq;
} eopts;

static int parse(int argc, char **argv, const char *verb, eopts *o, int nargs) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'},      {"model", required_argument, 0, 'm'},
        {"url", required_argument, 0, 'u'},         {"job", required_argument, 0, 'j'},
        {"port", required_argument, 0, 'p'},        {"accelerator", required_argument, 0, 'a'},
        {"upstream-model", required_argument, 0, 'U'}, {"health-path", required_argument, 0, 'h'},
        {"max-concurrency", required_argument, 0, 'C'}, {"max-queue", required_argument, 0, 'Q'},
        {0, 0, 0, 0}};
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        switch (c) {
        case 't': o->tenant = optarg; break;
        case 'm': o->model = optarg; break;
        case 'u': o->url = optarg; break;
        case 'j': o->job = optarg; break;
        case 'p': o->port = optarg; break;
        case 'a': o->acc = optarg; break;
        case 'U': o->um = optarg; break;
        case 'h': o->hp = optarg; break;
        case 'C': o->mc = optarg; break;
        case 'Q': o->mq = optarg; break;
        }
    }
    if (!o->tenant || !o->model)
        return cli_error(CLI_USAGE, "%s: --tenant and --model are required", verb);
    if (argc - optind != nargs)
        return cli_error(CLI_USAGE, "%s: expected %s", verb, nargs ? "one ID" : "no arguments");
    if (nargs == 0 && strcmp(verb, "endpoint add") != 0 &&
        (o->url || o->job || o->port || o->acc || o->um || o->hp || o->mc || o->mq))
        return cli_error(CLI_USAGE, "%s: only --tenant and --model apply here", verb);
    return 0;
}

static void model_path(strbuf *p, const eopts *o) {
    cli_scope_path(p, o->tenant, NULL);
    sb_adds(p, "/models/");
    cli_add_escaped(p, o->model);
}

static int e_add(cli_ctx *ctx, int argc, char **argv) {
    eopts o;
    int rc = parse(argc, argv, "endpoint add", &o, 0);
    if (rc) return rc;
    if (!o.url == !o.job)
        return cli_error(CLI_USAGE, "endpoint add: give either --url, or --job and --port");
    if (o.url && o.port) return cli_error(CLI_USAGE, "endpoint add: --port goes with --job");
    if (o.job && !o.port) return cli_error(CLI_USAGE, "endpoint add: --job needs --port");
    json_t *body = json_object();
    if (o.url) json_object_set_new(body, "url", json_string(o.url));
    if (o.job) {
        char *end;
        long long port = strtoll(o.port, &end, 10);
        if (!*o.port || *end) {
            json_decref(body);
            return cli_error(CLI_USAGE, "endpoint add: --port must be a number, got '%s'", o.port);
        }
        json_object_set_new(body, "job", json_string(o.job));
        json_object_set_new(body, "port", json_integer(port));
    }
    if (o.acc) json_object_set_new(body, "accelerator", json_string(o.acc));
    if (o.um) json_object_set_new(body, "upstream_model", json_string(o.um));
    if (o.hp) json_object_set_new(body, "health_path", json_string(o.hp));
    const char *nums[2][2] = {{"max_concurrency", o.mc}, {"max_queue", o.mq}};
    for (int i = 0; i < 2; i++) {
        if (!nums[i][1]) continue;
        char *end;
        long long v = strtoll(nums[i][1], &end, 10);
        if (!*nums[i][1] || *end) {
            json_decref(body);
            return cli_error(CLI_USAGE, "endpoint add: --%s must be a number, got '%s'",
                             i ? "max-queue" : "max-concurrency", nums[i][1]);
        }
        json_object_set_new(body, nums[i][0], json_integer(v));
    }
    strbuf p = SB_INIT;
    model_path(&p, &o);
    sb_adds(&p, "/endpoints");
    rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    sb_release(&p);
    json_decref(body);
    return rc;
}

static int e_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "url", "job", "port", "accelerator", "upstream_model",
                                       "max_concurrency", "state", "checked_at", "last_error",
                                       NULL};
    eopts o;
    int rc = parse(argc, argv, "endpoint list", &o, 0);
    if (rc) return rc;
    strbuf p = SB_INIT;
    json_t *m;
    model_path(&p, &o);
    rc = cli_call(ctx, "GET", p.buf, NULL, &m);
    sb_release(&p);
    if (rc) return rc;
    json_t *eps = json_object_get(m, "endpoints");
    json_t *list = json_pack("{s:O,s:n}", "items", eps ? eps : json_array(), "next");
    cli_print_list(ctx, list, cols);
    json_decref(list);
    json_decref(m);
    return CLI_OK;
}

static int e_remove(cli_ctx *ctx, int argc, char **argv) {
    eopts o;
    int rc = parse(argc, argv, "endpoint remove", &o, 1);
    if (rc) return rc;
    strbuf p = SB_INIT;
    model_path(&p, &o);
    sb_adds(&p, "/endpoints/");
    cli_add_escaped(&p, argv[optind]);
    rc = cli_run_call(ctx, "DELETE", p.buf, NULL, NULL);
    sb_release(&p);
    return rc;
}

int cli_cmd_endpoint(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"add", e_add,
         "usage: gpupool endpoint add --tenant T --model M (--url URL | --job ID --port N)\n"
         "       [--accelerator A] [--upstream-model NAME] [--health-path P]\n"
         "\n"
         "  --url URL              an OpenAI-compatible base URL (http://host:8000/v1)\n"
         "  --job ID --port N      a job of the tenant serving on port N of its node\n"
         "                         (healthy only while the job runs)\n"
         "  --accelerator A        the accelerator type it runs on (usage records)\n"
         "  --upstream-model NAME  the model's name upstream (default: the model's name)\n"
         "  --health-path P        what the health check asks for (default /models)\n"},
        {"list", e_list, "usage: gpupool endpoint list --tenant T --model M\n"},
        {"remove", e_remove, "usage: gpupool endpoint remove ID --tenant T --model M\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
