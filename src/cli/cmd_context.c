/*
 * cmd_context.c - `gpupool context show|set|clear`: the tenant and project
 * commands act in when the line names none, like kubectl's
 * `config set-context --current --namespace`.
 *
 * The context lives in the user's config file (main.c reads it) as
 * "tenant = T" and "project = P" lines; set and clear rewrite only those
 * lines, atomically (a temporary file renamed over it), keeping the others
 * (server, token) and their comments.  GPUPOOL_TENANT / GPUPOOL_PROJECT in
 * the environment override it for one shell.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: gpupool context <command>\n"
    "\n"
    "  show                          the tenant and project commands default to\n"
    "  set [--tenant T] [--project P]\n"
    "                                set them (in ~/.config/gpupool/config); a\n"
    "                                new tenant without --project clears the project\n"
    "  clear                         forget them\n"
    "\n"
    "Commands that act in a tenant or project (job, quota, project, model, endpoint,\n"
    "app, key, kb, billing, usage records) take them when the line has no --tenant;\n"
    "a --tenant on the line leaves the context's project out.  Lists that --tenant\n"
    "only filters (alarm, audit, binding) and member and user commands ignore it.\n"
    "GPUPOOL_TENANT and GPUPOOL_PROJECT override the file for one shell.\n";

/* The config file's path (XDG_CONFIG_HOME or ~/.config), and its folder. */
static int config_path(char *path, size_t n, char *dir, size_t dn) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(dir, dn, "%s/gpupool", xdg);
    else if (home && *home) snprintf(dir, dn, "%s/.config/gpupool", home);
    else return cli_error(CLI_USAGE, "context: neither XDG_CONFIG_HOME nor HOME is set");
    snprintf(path, n, "%s/config", dir);
    return CLI_OK;
}

/* Rewrite the config file with `tenant`/`project` (NULL: no such line), other lines kept. */
static int write_context(const char *tenant, const char *project) {
    char path[4096], dir[4000], tmp[4200];
    int rc = config_path(path, sizeof path, dir, sizeof dir);
    if (rc) return rc;
    /* the folder, as `mkdir -p` would, private to the user (the file may hold a token) */
    char part[4000];
    snprintf(part, sizeof part, "%s", dir);
    for (char *p = part + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(part, 0700);
            *p = '/';
        }
    if (mkdir(dir, 0700) && errno != EEXIST)
        return cli_error(CLI_FAIL, "context: cannot create %s: %s", dir, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *in = fopen(path, "r");
    if (!in && errno != ENOENT)
        return cli_error(CLI_FAIL, "context: cannot read %s: %s", path, strerror(errno));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        if (fd >= 0) close(fd);
        if (in) fclose(in);
        return cli_error(CLI_FAIL, "context: cannot write %s: %s", tmp, strerror(errno));
    }
    char line[1024];
    while (in && fgets(line, sizeof line, in)) {
        const char *k = line;
        while (*k == ' ' || *k == '\t') k++;
        size_t kl = strcspn(k, " \t=");
        int ours = k[0] != '#' && strchr(k, '=') &&
                   ((kl == 6 && !strncmp(k, "tenant", 6)) || (kl == 7 && !strncmp(k, "project", 7)));
        if (!ours) fputs(line, out);
        if (!ours && line[strlen(line) - 1] != '\n') fputc('\n', out);
    }
    if (in) fclose(in);
    if (tenant) fprintf(out, "tenant = %s\n", tenant);
    if (project) fprintf(out, "project = %s\n", project);
    int bad = ferror(out);
    if (fflush(out) || fsync(fileno(out))) bad = 1;
    if (fclose(out)) bad = 1;
    if (bad || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return cli_error(CLI_FAIL, "context: cannot write %s: %s", path, strerror(e));
    }
    return CLI_OK;
}

static int show(cli_ctx *ctx, const char *tenant, const char *project) {
    json_t *o = json_pack("{s:s?,s:s?}", "tenant", tenant, "project", project);
    if (ctx->json) {
        cli_print_object(ctx, o);
    } else if (tenant) {
        printf("tenant   %s\nproject  %s\n", tenant, project ? project : "-");
    } else {
        puts("no context: commands need --tenant (and --project); "
             "gpupool context set --tenant T [--project P]");
    }
    json_decref(o);
    return CLI_OK;
}

static int c_show(cli_ctx *ctx, int argc, char **argv) {
    (void)argv;
    if (argc > 1) return cli_error(CLI_USAGE, "context show: unexpected argument '%s'", argv[1]);
    return show(ctx, ctx->tenant, ctx->project);
}

static int c_set(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"tenant", required_argument, 0, 't'},
                                       {"project", required_argument, 0, 'p'},
                                       {0, 0, 0, 0}};
    const char *tenant = NULL, *project = NULL;
    int c, rc = 0, has_t = 0, has_p = 0;
    optind = 0;
    /* "context set" is not a scoped verb: the context never fills its own options in */
    while ((c = cli_getopt(argc, argv, lo, "context set", &rc)) != -1) {
        if (c == -2) return rc;
        if (c == 't') tenant = optarg, has_t = 1;
        else project = optarg, has_p = 1;
    }
    if (optind < argc) return cli_error(CLI_USAGE, "context set: unexpected argument '%s'", argv[optind]);
    if (!has_t && !has_p) return cli_error(CLI_USAGE, "context set: give --tenant T and/or --project P");
    if (has_t && !*tenant) return cli_error(CLI_USAGE, "context set: --tenant needs a name");
    if (has_p && !*project) return cli_error(CLI_USAGE, "context set: --project needs a name");
    if (!has_t) {
        if (!ctx->tenant) return cli_error(CLI_USAGE, "context set: --project needs a tenant: add --tenant T");
        tenant = ctx->tenant;
    }
    /* a new tenant without a project: the old project belonged to the old tenant */
    if (!has_p && ctx->tenant && !strcmp(tenant, ctx->tenant)) project = ctx->project;
    if ((rc = write_context(tenant, project))) return rc;
    return show(ctx, tenant, project);
}

static int c_clear(cli_ctx *ctx, int argc, char **argv) {
    if (argc > 1) return cli_error(CLI_USAGE, "context clear: unexpected argument '%s'", argv[1]);
    int rc = write_context(NULL, NULL);
    return rc ? rc : show(ctx, NULL, NULL);
}

int cli_cmd_context(cli_ctx *ctx, int argc, char **argv) {
    static const cli_verb verbs[] = {
        {"show", c_show, "usage: gpupool context show\n"},
        {"set", c_set, "usage: gpupool context set [--tenant T] [--project P]\n"},
        {"clear", c_clear, "usage: gpupool context clear\n"},
        {NULL, NULL, NULL}};
    return cli_dispatch(ctx, usage, verbs, argc, argv);
}
