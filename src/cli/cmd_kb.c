/*
 * cmd_kb.c - `gpupool kb create|list|show|update|rm|upload|docs|doc|rm-doc|query`:
 * knowledge bases of a tenant (--tenant T) or of operations (--ops), their
 * documents and keyword queries (docs/kb.md).
 */
#include "cli.h"

#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage[] =
    "usage: gpupool kb <command> (--tenant T | --ops)\n"
    "\n"
    "  create NAME [--project P] [--description D] [--work-order ID]...\n"
    "                            a knowledge base of the tenant (of project P), or an\n"
    "                            operations KB (--ops; --work-order: whose vendors read it)\n"
    "  list                      the KBs you may read\n"
    "  show NAME                 one KB with its document and chunk counts\n"
    "  update NAME [--description D] [--work-order ID]...\n"
    "  rm NAME                   delete a KB with its documents\n"
    "  upload KB FILE [--name DOC] [--format text|markdown|html|pdf]\n"
    "                            add a document (format from the file's extension)\n"
    "  docs KB                   the KB's documents\n"
    "  doc KB DOC                one document with its text and chunk offsets\n"
    "  rm-doc KB DOC             delete a document (gone from results at once)\n"
    "  query KB TEXT... [--k N] [--document DOC]\n"
    "                            the best chunks for TEXT, best first\n"
    "\n"
    "Applications answer from KBs: gpupool app bind --help.\n";

#define MAX_WO 64

typedef struct kopts {
    const char *tenant, *project, *description, *name, *format, *document, *k;
    const char *wo[MAX_WO];
    int nwo, ops;
} kopts;

enum { O_PROJECT = 1, O_DESC = 2, O_WO = 4, O_NAME = 8, O_FORMAT = 16, O_K = 32, O_DOC = 64 };

/*
 * Parse options (`allowed` of the O_* flags besides --tenant/--ops) and
 * check `nargs` positional arguments (-1: at least 2).  0 or an exit code.
 */
static int parse(int argc, char **argv, const char *verb, kopts *o, int allowed, int nargs) {
    static const struct option lo[] = {
        {"tenant", required_argument, 0, 't'},      {"ops", no_argument, 0, 'o'},
        {"project", required_argument, 0, 'p'},     {"description", required_argument, 0, 'd'},
        {"work-order", required_argument, 0, 'w'},  {"name", required_argument, 0, 'n'},
        {"format", required_argument, 0, 'f'},      {"k", required_argument, 0, 'k'},
        {"document", required_argument, 0, 'D'},    {0, 0, 0, 0}};
    static const struct {
        int c, flag;
        const char *name;
    } flags[] = {{'p', O_PROJECT, "project"}, {'d', O_DESC, "description"},
                 {'w', O_WO, "work-order"},   {'n', O_NAME, "name"},
                 {'f', O_FORMAT, "format"},   {'k', O_K, "k"},
                 {'D', O_DOC, "document"}};
    int c, rc = 0;
    memset(o, 0, sizeof *o);
    optind = 0;
    while ((c = cli_getopt(argc, argv, lo, verb, &rc)) != -1) {
        if (c == -2) return rc;
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
            if (flags[i].c == c && !(allowed & flags[i].flag))
                return cli_error(CLI_USAGE, "%s: --%s is not an option here", verb, flags[i].name);
        switch (c) {
        case 't': o->tenant = optarg; break;
        case 'o': o->ops = 1; break;
        case 'p': o->project = optarg; break;
        case 'd': o->description = optarg; break;
        case 'n': o->name = optarg; break;
        case 'f': o->format = optarg; break;
        case 'k': o->k = optarg; break;
        case 'D': o->document = optarg; break;
        case 'w':
            if (o->nwo == MAX_WO) return cli_error(CLI_USAGE, "%s: too many --work-order", verb);
            o->wo[o->nwo++] = optarg;
            break;
        }
    }
    if (!o->tenant == !o->ops)
        return cli_error(CLI_USAGE, "%s: give exactly one of --tenant T and --ops", verb);
    if (o->ops && o->project)
        return cli_error(CLI_USAGE, "%s: an operations KB belongs to no project", verb);
    if (o->tenant && o->nwo)
        return cli_error(CLI_USAGE, "%s: only operations KBs (--ops) name work orders", verb);
    int have = argc - optind;
    if (nargs >= 0 && have != nargs)
        return cli_error(CLI_USAGE, "%s: expected %d argument%s (see --help)", verb, nargs,
                         nargs == 1 ? "" : "s");
    if (nargs < 0 && have < 2)
        return cli_error(CLI_USAGE, "%s: expected KB and TEXT (see --help)", verb);
    return 0;
}

/* /api/v1/tenants/T/kbs or /api/v1/ops/kbs, then /KB and `rest` when given. */
static void kb_path(strbuf *p, const kopts *o, const char *kb, const char *rest) {
    if (o->ops) sb_adds(p, "/api/v1/ops");
    else cli_scope_path(p, o->tenant, NULL);
    sb_adds(p, "/kbs");
    if (kb) {
        sb_addc(p, '/');
        cli_add_escaped(p, kb);
    }
    if (rest) sb_adds(p, rest);
}

static int call_path(cli_ctx *ctx, const char *method, const kopts *o, const char *kb,
                     const char *rest, json_t *body, const char *const *cols) {
    strbuf p = SB_INIT;
    kb_path(&p, o, kb, rest);
    int rc = cli_run_call(ctx, method, p.buf, body, cols);
    sb_release(&p);
    return rc;
}

static json_t *wo_array(const kopts *o) {
    json_t *a = json_array();
    for (int i = 0; i < o->nwo; i++) json_array_append_new(a, json_string(o->wo[i]));
    return a;
}

static int k_create(cli_ctx *ctx, int argc, char **argv) {
    kopts o;
    int rc = parse(argc, argv, "kb create", &o, O_PROJECT | O_DESC | O_WO, 1);
    if (rc) return rc;
    json_t *body = json_pack("{s:s}", "name", argv[optind]);
    if (o.project) json_object_set_new(body, "project", json_string(o.project));
    if (o.description) json_object_set_new(body, "description", json_string(o.description));
    if (o.nwo) json_object_set_new(body, "work_orders", wo_array(&o));
    rc = call_path(ctx, "POST", &o, NULL, NULL, body, NULL);
    json_decref(body);
    return rc;
}

static int k_list(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "scope", "project", "documents", "chunks",
                                       "description", NULL};
    kopts o;
    int rc = parse(argc, argv, "kb list", &o, 0, 0);
    return rc ? rc : call_path(ctx, "GET", &o, NULL, NULL, NULL, cols);
}

static int k_show(cli_ctx *ctx, int argc, char **argv) {
    kopts o;
    int rc = parse(argc, argv, "kb show", &o, 0, 1);
    return rc ? rc : call_path(ctx, "GET", &o, argv[optind], NULL, NULL, NULL);
}

static int k_update(cli_ctx *ctx, int argc, char **argv) {
    kopts o;
    int rc = parse(argc, argv, "kb update", &o, O_DESC | O_WO, 1);
    if (rc) return rc;
    json_t *body = json_object();
    if (o.description) json_object_set_new(body, "description", json_string(o.description));
    if (o.nwo) json_object_set_new(body, "work_orders", wo_array(&o));
    rc = call_path(ctx, "PATCH", &o, argv[optind], NULL, body, NULL);
    json_decref(body);
    return rc;
}

static int k_rm(cli_ctx *ctx, int argc, char **argv) {
    kopts o;
    int rc = parse(argc, argv, "kb rm", &o, 0, 1);
    return rc ? rc : call_path(ctx, "DELETE", &o, argv[optind], NULL, NULL, NULL);
}

/* The whole file into a heap buffer; NULL on failure (message printed). */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error(CLI_FAIL, "cannot open %s", path);
        return NULL;
    }
    strbuf sb = SB_INIT;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_add(&sb, buf, n);
    int bad = ferror(f) || !sb_ok(&sb);
    fclose(f);
    if (bad) {
        sb_release(&sb);
        cli_error(CLI_FAIL, "cannot read %s", path);
        return NULL;
    }
    *len = sb.len;
    return sb_detach(&sb);
}

static const char *format_of(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot) return "text";
    if (!strcasecmp(dot, ".md") || !strcasecmp(dot, ".markdown")) return "markdown";
    if (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm")) return "html";
    if (!strcasecmp(dot, ".pdf")) return "pdf";
    return "text";
}

static int k_upload(cli_ctx *ctx, int argc, char **argv) {
    kopts o;
    int rc = parse(argc, argv, "kb upload", &o, O_NAME | O_FORMAT, 2);
    if (rc) return rc;
    const char *kb = argv[optind], *file = argv[optind + 1];
    const char *format = o.format ? o.format : format_of(file);
    const char *name = o.name;
    if (!name) {
        const char *slash = strrchr(file, '/');
        name = slash ? slash + 1 : file;
    }
    size_t len;
    char *data = slurp(file, &len);
    if (!data) return CLI_FAIL;
    json_t *content;
    if (!strcmp(format, "pdf")) {
        size_t bl = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
        char *b64 = malloc(bl);
        if (!b64) {
            free(data);
            return cli_error(CLI_FAIL, "out of memory");
        }
        sodium_bin2base64(b64, bl, (const unsigned char *)data, len, sodium_base64_VARIANT_ORIGINAL);
        content = json_string(b64);
        free(b64);
    } else {
        content = json_stringn(data, len);
        if (!content) {
            free(data);
            return cli_error(CLI_FAIL, "%s is not UTF-8 text", file);
        }
    }
    free(data);
    json_t *body = json_pack("{s:s,s:s,s:o}", "name", name, "format", format, "content", content);
    rc = call_path(ctx, "POST", &o, kb, "/documents", body, NULL);
    json_decref(body);
    return rc;
}

static int k_docs(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"name", "format", "bytes", "chars", "chunks",
                                       "created_at", NULL};
    kopts o;
    int rc = parse(argc, argv, "kb docs", &o, 0, 1);
    return rc ? rc : call_path(ctx, "GET", &o, argv[optind], "/documents", NULL, cols);
}

static int doc_call(cli_ctx *ctx, int argc, char **argv, const char *verb, const char *method) {
    kopts o;
    int rc = parse(argc, argv, verb, &o, 0, 2);
    if (rc) return rc;
    strbuf rest = SB_INIT;
    sb_adds(&rest, "/documents/");
    cli_add_escaped(&rest, argv[optind + 1]);
    rc = call_path(ctx, method, &o, argv[optind], rest.buf, NULL, NULL);
    sb_release(&rest);
    return rc;
}

static int k_doc(cli_ctx *ctx, int argc, char **argv) {
    return doc_call(ctx, argc, argv, "kb doc", "GET");
}

static int k_rmdoc(cli_ctx *ctx, int argc, char **argv) {
    return doc_call(ctx, argc, argv, "kb rm-doc", "DELETE");
}

static int k_query(cli_ctx *ctx, int argc, char **argv) {
    static const char *const cols[] = {"score", "document", "chunk", "start", "end", "text", NULL};
    kopts o;
    int rc = parse(argc, argv, "kb query", &o, O_K | O_DOC, -1);
    if (rc) return rc;
    strbuf q = SB_INIT;
    for (int i = optind + 1; i < argc; i++) {
        if (i > optind + 1) sb_addc(&q, ' ');
        sb_adds(&q, argv[i]);
    }
    json_t *body = json_pack("{s:s}", "query", q.buf);
    sb_release(&q);
    if (o.k) {
        char *end;
        long k = strtol(o.k, &end, 10);
        if (*end || k < 1) {
            json_decref(body);
            return cli_error(CLI_USAGE, "kb query: --k must be a positive number");
        }
        json_object_set_new(body, "k", json_integer(k));
    }
    if (o.document) json_object_set_new(body, "document", json_string(o.document));
    rc = call_path(ctx, "POST", &o, argv[optind], "/query", body, cols);
    json_decref(body);
    return rc;
}

int cli_cmd_kb(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"create", k_create,
         "usage: gpupool kb create NAME (--tenant T [--project P] | --ops [--work-order ID]...)\n"
         "                        [--description D]\n"
         "\n"
         "A knowledge base of the tenant (kb.manage: tenant-admin), of one project (tenant-admin,\n"
         "project-admin), or of operations (--ops; kb.ops_write: ops-engineer).  Vendors read an\n"
         "operations KB while they hold one of the work orders it names.\n"},
        {"list", k_list, "usage: gpupool kb list (--tenant T | --ops)\n\nThe KBs you may read.\n"},
        {"show", k_show, "usage: gpupool kb show NAME (--tenant T | --ops)\n"},
        {"update", k_update,
         "usage: gpupool kb update NAME (--tenant T | --ops) [--description D] [--work-order ID]...\n"
         "\n"
         "--work-order (operations KBs) replaces the list of work orders.\n"},
        {"rm", k_rm,
         "usage: gpupool kb rm NAME (--tenant T | --ops)\n\nDeletes the KB, its documents and the "
         "application bindings naming it.\n"},
        {"upload", k_upload,
         "usage: gpupool kb upload KB FILE (--tenant T | --ops) [--name DOC]\n"
         "                        [--format text|markdown|html|pdf]\n"
         "\n"
         "Adds FILE as document DOC (default: the file's name).  The format defaults from the\n"
         "extension (.md markdown, .html/.htm html, .pdf pdf, else text).  PDFs are sent as\n"
         "base64 and read by the server's pdftotext.  The request is limited by the server's\n"
         "--max-body (1 MiB by default).\n"},
        {"docs", k_docs, "usage: gpupool kb docs KB (--tenant T | --ops)\n"},
        {"doc", k_doc,
         "usage: gpupool kb doc KB DOC (--tenant T | --ops)\n\nThe document, its extracted text "
         "and each chunk's character offsets.\n"},
        {"rm-doc", k_rmdoc, "usage: gpupool kb rm-doc KB DOC (--tenant T | --ops)\n"},
        {"query", k_query,
         "usage: gpupool kb query KB TEXT... (--tenant T | --ops) [--k N] [--document DOC]\n"
         "\n"
         "The N (default 5, at most 50) best chunks for the words of TEXT, best first; score\n"
         "is -bm25 over the tenant's own index (higher is better).\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
