/*
 * cmd_workorder.c - `gpupool workorder open|list|show|set|comment`.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: gpupool workorder <command>\n"
    "\n"
    "  open --node N [--gpu UUID] --title T [--description D] [--assignee USER]   (ops)\n"
    "  list | show ID\n"
    "  set ID [--state open|in_progress|resolved] [--assignee U] [--title T] [--description D]\n"
    "             (a vendor may change only the state of its work orders)\n"
    "  comment ID TEXT\n";

static const struct option lo[] = {
    {"node", required_argument, 0, 'n'},        {"gpu", required_argument, 0, 'g'},
    {"title", required_argument, 0, 't'},       {"description", required_argument, 0, 'd'},
    {"assignee", required_argument, 0, 'a'},    {"state", required_argument, 0, 's'},
    {0, 0, 0, 0}};

static const char *key_of(int c) {
    switch (c) {
    case 'n': return "node";
    case 'g': return "gpu";
    case 't': return "title";
    case 'd': return "description";
    case 'a': return "assignee";
    case 's': return "state";
    }
    return NULL;
}

static int fields(int argc, char **argv, const char *verb, json_t *body) {
    int c, rc = 0;
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        if (key_of(c)) json_object_set_new(body, key_of(c), json_string(optarg));
    }
    return 0;
}

static int w_open(cli_ctx *ctx, int argc, char **argv) {
    json_t *body = json_object();
    int rc = fields(argc, argv, "workorder open", body);
    if (!rc && optind < argc) rc = cli_error(CLI_USAGE, "workorder open: unexpected argument");
    if (!rc) rc = cli_run_call(ctx, "POST", "/api/v1/work-orders", body, NULL);
    json_decref(body);
    return rc;
}

static int w_set(cli_ctx *ctx, int argc, char **argv) {
    json_t *body = json_object();
    int rc = fields(argc, argv, "workorder set", body);
    if (!rc && argc - optind != 1) rc = cli_error(CLI_USAGE, "workorder set: expected one ID");
    if (!rc && json_object_size(body) == 0) rc = cli_error(CLI_USAGE, "workorder set: nothing to change");
    if (!rc) {
        strbuf p = SB_INIT;
        sb_adds(&p, "/api/v1/work-orders/");
        cli_add_escaped(&p, argv[optind]);
        rc = cli_run_call(ctx, "PATCH", p.buf, body, NULL);
        sb_release(&p);
    }
    json_decref(body);
    return rc;
}

static int w_comment(cli_ctx *ctx, int argc, char **argv) {
    if (argc != 3) return cli_error(CLI_USAGE, "workorder comment: expected ID TEXT");
    strbuf p = SB_INIT;
    sb_adds(&p, "/api/v1/work-orders/");
    cli_add_escaped(&p, argv[1]);
    sb_adds(&p, "/comments");
    json_t *body = json_pack("{s:s}", "body", argv[2]);
    int rc = cli_run_call(ctx, "POST", p.buf, body, NULL);
    json_decref(body);
    sb_release(&p);
    return rc;
}

static int w_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"id", "state", "node", "gpu", "assignee", "title", NULL};
    if (argc > 1) return cli_error(CLI_USAGE, "workorder list: unexpected argument '%s'", argv[1]);
    return cli_run_call(ctx, "GET", "/api/v1/work-orders", NULL, cols);
}

static int w_show(cli_ctx *c, int a, char **v) {
    return cli_name_call(c, a, v, "workorder show", "GET", "/api/v1/work-orders/", NULL, NULL);
}

int cli_cmd_workorder(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"open", w_open, "usage: gpupool workorder open --node N [--gpu UUID] --title T "
                         "[--description D] [--assignee USER]\n"},
        {"list", w_list, "usage: gpupool workorder list\n"},
        {"show", w_show, "usage: gpupool workorder show ID\n"},
        {"set", w_set, "usage: gpupool workorder set ID [--state S] [--assignee U] [--title T] "
                       "[--description D]\n"},
        {"comment", w_comment, "usage: gpupool workorder comment ID TEXT\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
