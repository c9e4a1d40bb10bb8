/*
 * cli.c - HTTP client, output formatting and errors shared by all CLI verbs.
 */
#include "cli.h"

#include "../core/gtime.h"
#include "../core/httpc.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_error(int code, const char *fmt, ...) {
    va_list ap;
    fputs("gpupool: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
    }
    return 0;
}

void cli_add_escaped(strbuf *sb, const char *s) {
    static const char hx[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            sb_addc(sb, (char)c);
        } else {
            sb_addc(sb, '%');
            sb_addc(sb, hx[c >> 4]);
            sb_addc(sb, hx[c & 15]);
        }
    }
}

int cli_call(cli_ctx *ctx, const char *method, const char *path, json_t *body, json_t **out) {
    gp_err err = GP_ERR_INIT;
    json_t *j;
    long status;
    *out = NULL;
    if (httpc_json_failover(ctx->servers, path, method, ctx->token, body, 120, &status, &j, &err))
        return cli_error(CLI_FAIL, "%s", err.msg);
    ctx->status = status;
    if (status >= 200 && status < 300) {
        *out = j;
        return CLI_OK;
    }
    json_t *e = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *code = json_string_value(json_object_get(e, "code"));
    if (msg)
        cli_error(CLI_FAIL, "%s (%s, HTTP %ld)", msg, code ? code : "error", status);
    else
        cli_error(CLI_FAIL, "request failed with HTTP %ld", status);
    json_decref(j);
    return CLI_FAIL;
}

/* Read "a.b" from obj; returns a borrowed value or NULL. */
static json_t *path_get(json_t *obj, const char *path) {
    char key[64];
    while (obj && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof key) return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        obj = json_object_get(obj, key);
        path += n + (dot ? 1 : 0);
    }
    return obj;
}

void cli_human_number(double x, char *buf, size_t n) {
    double a = x < 0 ? -x : x;
    if (x == 0) {
        snprintf(buf, n, "0");
        return;
    }
    if (a < 1e15 && x == (double)(long long)x) { /* a whole number stays one: "4" */
        snprintf(buf, n, "%lld", (long long)x);
        return;
    }
    if (a >= 0.01 || a < 1e-12) {
        snprintf(buf, n, "%.2f", a < 1e-12 ? 0.0 : x);
        return;
    }
    /* a small price (0.000002 per token): three significant digits, no exponent */
    int decimals = 2;
    for (double t = a; t < 0.1 && decimals < 14; t *= 10) decimals++;
    snprintf(buf, n, "%.*f", decimals, x);
    char *e = buf + strlen(buf);
    while (e > buf && e[-1] == '0') *--e = '\0';
    if (e > buf && e[-1] == '.') *--e = '\0';
}

/* A value as text: `human` rounds fractional numbers for a table (json and csv keep them). */
static char *cell_as(json_t *v, int human) {
    if (!v || json_is_null(v) || (json_is_string(v) && !*json_string_value(v))) return strdup("-");
    if (json_is_string(v)) return strdup(json_string_value(v));
    if (human && json_is_real(v)) {
        char buf[64];
        cli_human_number(json_real_value(v), buf, sizeof buf);
        return strdup(buf);
    }
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static char *cell(json_t *v) { return cell_as(v, 0); }

static void print_json(cli_ctx *ctx, json_t *v) {
    if (ctx->yaml) {
        cli_yaml_print(stdout, v);
        return;
    }
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    if (s) puts(s);
    free(s);
}

void cli_print_json(cli_ctx *ctx, json_t *v) { print_json(ctx, v); }

/* One CSV field (RFC 4180 quoting when needed). */
static void csv_put(const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_csv_list(json_t *items, const char *const *cols) {
    for (size_t c = 0; cols[c]; c++) {
        if (c) putchar(',');
        csv_put(cols[c]);
    }
    fputs("\r\n", stdout);
    size_t r;
    json_t *it;
    json_array_foreach(items, r, it) {
        for (size_t c = 0; cols[c]; c++) {
            json_t *v = path_get(it, cols[c]);
            char *s = (!v || json_is_null(v)) ? strdup("") : cell(v);
            if (c) putchar(',');
            csv_put(s ? s : "");
            free(s);
        }
        fputs("\r\n", stdout);
    }
}

void cli_print_list(cli_ctx *ctx, json_t *resp, const char *const *cols) {
    if (ctx->json) {
        print_json(ctx, resp);
        return;
    }
    if (ctx->csv) {
        print_csv_list(json_object_get(resp, "items"), cols);
        return;
    }
    json_t *items = json_object_get(resp, "items");
    size_t ncol = 0, nrow = json_array_size(items);
    while (cols[ncol]) ncol++;
    size_t width[32] = {0};
    if (ncol > 32) ncol = 32;
    char **cells = calloc((nrow + 1) * ncol, sizeof *cells);
    if (!cells) return;
    for (size_t c = 0; c < ncol; c++) {
        cells[c] = strdup(cols[c]);
        for (char *p = cells[c]; p && *p; p++)
            if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
            else if (*p == '.' || *p == '_') *p = '_';
    }
    for (size_t r = 0; r < nrow; r++)
        for (size_t c = 0; c < ncol; c++)
            cells[(r + 1) * ncol + c] = cell_as(path_get(json_array_get(items, r), cols[c]), 1);
    for (size_t i = 0; i < (nrow + 1) * ncol; i++) {
        size_t l = cells[i] ? strlen(cells[i]) : 0;
        if (l > width[i % ncol]) width[i % ncol] = l;
    }
    for (size_t r = 0; r <= nrow; r++) {
        for (size_t c = 0; c < ncol; c++) {
            const char *s = cells[r * ncol + c] ? cells[r * ncol + c] : "";
            if (c + 1 < ncol) printf("%-*s  ", (int)width[c], s);
            else printf("%s\n", s);
        }
    }
    for (size_t i = 0; i < (nrow + 1) * ncol; i++) free(cells[i]);
    free(cells);
    json_t *next = json_object_get(resp, "next");
    if (next && json_is_string(next))
        fprintf(stderr, "(more: pass --after %s)\n", json_string_value(next));
}

void cli_print_object(cli_ctx *ctx, json_t *obj) {
    if (ctx->json || !json_is_object(obj)) {
        print_json(ctx, obj);
        return;
    }
    if (ctx->csv) {
        const char *k;
        json_t *v;
        fputs("field,value\r\n", stdout);
        json_object_foreach(obj, k, v) {
            char *s = (!v || json_is_null(v)) ? strdup("") : cell(v);
            csv_put(k);
            putchar(',');
            csv_put(s ? s : "");
            fputs("\r\n", stdout);
            free(s);
        }
        return;
    }
    const char *k;
    json_t *v;
    size_t w = 0;
    json_object_foreach(obj, k, v) if (strlen(k) > w) w = strlen(k);
    json_object_foreach(obj, k, v) {
        char *s = cell_as(v, 1);
        printf("%-*s  %s\n", (int)w + 1, k, s ? s : "");
        free(s);
    }
}

int cli_dispatch(cli_ctx *ctx, const char *noun_usage, const cli_verb *verbs, int argc,
                 char **argv) {
    if (argc == 2 && strcmp(argv[1], CLI_LIST_VERBS) == 0) { /* for `gpupool completion` */
        for (const cli_verb *v = verbs; v->name; v++) printf("%s%s", v == verbs ? "" : " ", v->name);
        return CLI_OK;
    }
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(noun_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    for (const cli_verb *v = verbs; v->name; v++) {
        if (strcmp(v->name, argv[1]) != 0) continue;
        if (cli_wants_help(argc - 1, argv + 1)) {
            fputs(v->usage, stdout);
            return CLI_OK;
        }
        return v->run(ctx, argc - 1, argv + 1);
    }
    const char *names[64];
    size_t n = 0;
    for (const cli_verb *v = verbs; v->name && n + 1 < sizeof names / sizeof names[0]; v++)
        names[n++] = v->name;
    names[n] = NULL;
    const char *near = cli_nearest(argv[1], names);
    if (near)
        return cli_error(CLI_USAGE, "%s: unknown command '%s'; did you mean '%s'? (see gpupool %s --help)",
                         argv[0], argv[1], near, argv[0]);
    return cli_error(CLI_USAGE, "%s: unknown command '%s' (see gpupool %s --help)", argv[0],
                     argv[1], argv[0]);
}

/* Edit distance of a and b, a swap of two neighbours counting as one edit (optimal string
 * alignment: "jbo" is one from "job"); short words: the CLI's commands and options. */
static size_t edits(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 62 || lb > 62) return 64;
    unsigned char d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1u < best) best = d[i - 1][j] + 1u;
            if (d[i][j - 1] + 1u < best) best = d[i][j - 1] + 1u;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1u < best)
                best = d[i - 2][j - 2] + 1u;
            d[i][j] = (unsigned char)best;
        }
    return d[la][lb];
}

const char *cli_nearest(const char *word, const char *const *cands) {
    const char *best = NULL;
    size_t bd = 3, len = strlen(word);
    for (const char *const *c = cands; *c; c++) {
        size_t d = edits(word, *c);
        /* a typo: at most 2 edits, fewer than half the word; a word that begins another
         * (an abbreviation, "--ten" for "--tenant") counts as one edit */
        if (len >= 3 && strncmp(*c, word, len) == 0 && d > 1) d = 1;
        if (d < bd && d * 2 < len) {
            best = *c;
            bd = d;
        }
    }
    return best;
}

/* ---- the context: default --tenant/--project (main.c reads it; `gpupool context`) ---- */

static const char *ctx_tenant, *ctx_project;

void cli_set_context(const char *tenant, const char *project) {
    ctx_tenant = tenant && *tenant ? tenant : NULL;
    ctx_project = project && *project ? project : NULL;
}

/* The nouns whose --tenant (and --project) say where the command acts: the context fills
 * them in.  Elsewhere --tenant filters (alarm, audit, binding lists) or names another
 * tenant's side (member, user), and the context never changes what is shown or granted. */
static int scoped_verb(const char *verb) {
    static const char *const nouns[] = {"app ", "endpoint ", "job ", "kb ", "key ", "model ",
                                        "project ", "quota ", "share show", "share set", "usage records",
                                        "usage serving-cost", "billing ", NULL};
    for (const char *const *n = nouns; *n; n++)
        if (strncmp(verb, *n, strlen(*n)) == 0) return 1;
    return 0;
}

static struct {
    int seen_tenant, seen_project, gave_tenant, done;
} parse_state;

/* The val of the long option `name` in `lo`, or 0 when the table has none. */
static int opt_val(const struct option *lo, const char *name) {
    for (; lo->name; lo++)
        if (strcmp(lo->name, name) == 0 && !lo->flag) return lo->val;
    return 0;
}

int cli_getopt(int argc, char **argv, const struct option *longopts, const char *verb, int *rc) {
    opterr = 0;
    if (optind == 0) memset(&parse_state, 0, sizeof parse_state); /* a new parse */
    int tv = opt_val(longopts, "tenant"), pv = opt_val(longopts, "project");
    int c = getopt_long(argc, argv, ":", longopts, NULL);
    if (c == ':') {
        *rc = cli_error(CLI_USAGE, "%s: option %s needs a value", verb, argv[optind - 1]);
        return -2;
    }
    if (c == '?') {
        /* a long option near one this command has: say which */
        const char *bad = argv[optind - 1], *names[96];
        char buf[96][40];
        size_t n = 0;
        for (const struct option *o = longopts; o->name && n + 1 < 96; o++, n++) {
            snprintf(buf[n], sizeof buf[n], "--%s", o->name);
            names[n] = buf[n];
        }
        names[n] = NULL;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)strcspn(bad, "="), bad);
        const char *near = strncmp(word, "--", 2) == 0 ? cli_nearest(word, names) : NULL;
        if (near)
            *rc = cli_error(CLI_USAGE, "%s: unknown option %s; did you mean %s? (see --help)", verb,
                            bad, near);
        else
            *rc = cli_error(CLI_USAGE, "%s: unknown option %s (see --help)", verb, bad);
        return -2;
    }
    if (c == tv && tv) parse_state.seen_tenant = parse_state.gave_tenant = 1;
    if (c == pv && pv) parse_state.seen_project = 1;
    if (c != -1 || parse_state.done || !scoped_verb(verb)) return c;
    /* the line is read: fill in what the context gives and the line does not */
    if (tv && !parse_state.seen_tenant && ctx_tenant) {
        parse_state.seen_tenant = 1;
        optarg = (char *)ctx_tenant;
        return tv;
    }
    if (pv && !parse_state.seen_project && !parse_state.gave_tenant && ctx_project && ctx_tenant) {
        parse_state.seen_project = 1;
        optarg = (char *)ctx_project;
        return pv;
    }
    parse_state.done = 1;
    return -1;
}

const char *cli_store_location(const char *data, const char *store, char *buf, size_t n) {
    if (store) return store;
    snprintf(buf, n, "%s/gpupool.db", data);
    return buf;
}

void cli_print_pending(cli_ctx *ctx, json_t *a) {
    if (ctx->json) {
        cli_print_object(ctx, a);
        return;
    }
    printf("pending approval %s (%s): this operation needs a second person's approval\n",
           json_string_value(json_object_get(a, "id")),
           json_string_value(json_object_get(a, "operation")));
    printf("a security-admin other than you runs: gpupool approval approve %s\n",
           json_string_value(json_object_get(a, "id")));
}

int cli_write_named(cli_ctx *ctx, const char *collection, const char *name, json_t *body,
                    int create) {
    strbuf p = SB_INIT;
    sb_adds(&p, collection);
    if (create) {
        json_object_set_new(body, "name", json_string(name));
    } else {
        sb_addc(&p, '/');
        cli_add_escaped(&p, name);
    }
    int rc = cli_run_call(ctx, create ? "POST" : "PUT", p.buf, body, NULL);
    sb_release(&p);
    return rc;
}

/* --watch: GET `path` every CLI_WATCH_MS and print it again each time it changed (kubectl's
 * get -w shows the changes; a table here is short enough to show whole), until interrupted
 * or the call fails. */
#define CLI_WATCH_MS 2000

static int watch_call(cli_ctx *ctx, const char *path, const char *const *columns) {
    char *last = NULL;
    for (int first = 1;; first = 0) {
        json_t *out;
        int rc = cli_call(ctx, "GET", path, NULL, &out);
        if (rc) {
            free(last);
            return rc;
        }
        char *now = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        if (!last || !now || strcmp(now, last) != 0) {
            if (!first && !ctx->json && !ctx->csv) {
                char ts[GT_RFC3339_LEN];
                gt_format_us(gt_now_us(), ts, sizeof ts);
                printf("\n-- %s\n", ts);
            }
            if (ctx->yaml && !first) fputs("---\n", stdout); /* one YAML document a change */
            if (columns) cli_print_list(ctx, out, columns);
            else cli_print_object(ctx, out);
            fflush(stdout);
        }
        free(last);
        last = now;
        json_decref(out);
        struct timespec ts = {CLI_WATCH_MS / 1000, (CLI_WATCH_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int cli_run_call(cli_ctx *ctx, const char *method, const char *path, json_t *body,
                 const char *const *columns) {
    if (ctx->watch) {
        if (strcmp(method, "GET") != 0)
            return cli_error(CLI_USAGE, "--watch is for lists and show, not for a change");
        return watch_call(ctx, path, columns);
    }
    json_t *out;
    int rc = cli_call(ctx, method, path, body, &out);
    if (rc) return rc;
    if (ctx->status == 202) cli_print_pending(ctx, out);
    else if (columns) cli_print_list(ctx, out, columns);
    else cli_print_object(ctx, out);
    json_decref(out);
    return CLI_OK;
}

char *cli_read_line(void) {
    char buf[1024];
    if (!fgets(buf, sizeof buf, stdin)) return NULL;
    buf[strcspn(buf, "\r\n")] = '\0';
    return strdup(buf);
}

void cli_scope_path(strbuf *sb, const char *tenant, const char *project) {
    sb_adds(sb, "/api/v1");
    if (!tenant) return;
    sb_adds(sb, "/tenants/");
    cli_add_escaped(sb, tenant);
    if (!project) return;
    sb_adds(sb, "/projects/");
    cli_add_escaped(sb, project);
}

int cli_name_call(cli_ctx *ctx, int argc, char **argv, const char *verb, const char *method,
                  const char *prefix, const char *suffix, const char *const *columns) {
    if (argc != 2) return cli_error(CLI_USAGE, "%s: expected one argument", verb);
    strbuf p = SB_INIT;
    sb_adds(&p, prefix);
    cli_add_escaped(&p, argv[1]);
    if (suffix) sb_adds(&p, suffix);
    int rc = cli_run_call(ctx, method, p.buf, NULL, columns);
    sb_release(&p);
    return rc;
}

json_t *cli_csv(const char *s) {
    json_t *a = json_array();
    char *copy = strdup(s), *save = NULL;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(t));
    free(copy);
    return a;
}
