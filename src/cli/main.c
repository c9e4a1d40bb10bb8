/*
 * main.c - the gpupool binary: global options, then a role (server) or a
 * CLI noun from the table below.
 *
 * Adding a noun: write cli/cmd_<noun>.c exporting cli_cmd_<noun>(), add one
 * row here (with NEEDS_CLIENT if it talks to the API), document it in
 * docs/cli.md and test it in tests/e2e/.
 *
 * --ca FILE (or GPUPOOL_CA) makes https calls trust that CA bundle.
 *
 * Client settings, first found wins: --server/--token flags, the
 * GPUPOOL_SERVER / GPUPOOL_TOKEN (or GPUPOOL_TOKEN_FILE) environment, then
 * the config file $XDG_CONFIG_HOME/gpupool/config (~/.config/gpupool/config)
 * with "server = URL", "token = T" or "token_file = PATH" lines, and the
 * context: "tenant = T", "project = P" (`gpupool context`; GPUPOOL_TENANT and
 * GPUPOOL_PROJECT override it).  The server
 * may be a comma-separated list of servers sharing one store; commands that
 * talk to the API get it parsed (ctx.servers) and fail over between them.
 */
#include "cli.h"

#include "../core/httpc.h"
#include "../core/rand.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GPUPOOL_VERSION /* from CMake: project(gpupool VERSION ...) */
#define GPUPOOL_VERSION "unknown"
#endif

enum { NEEDS_CLIENT = 1, HAS_VERBS = 2 /* dispatches with cli_dispatch(): `noun verb` */ };

static int cmd_completion(cli_ctx *ctx, int argc, char **argv);

static const struct {
    const char *name;
    int (*run)(cli_ctx *, int, char **);
    int flags;
    const char *help;
} commands[] = {
    {"server", cli_cmd_server, 0, "run the control plane (API, gateway, scheduler loops)"},
    {"check", cli_cmd_check, 0, "check a store's invariants read-only, like fsck (no server)"},
    {"migrate", cli_cmd_migrate, 0, "bring a store's schema up to date; grant the servers' role"},
    {"backup", cli_cmd_backup, 0, "back up a data folder online into one file (SQLite)"},
    {"restore", cli_cmd_restore, 0, "restore a backup file into a new data folder"},
    {"gateway", cli_cmd_gateway, 0, "run the OpenAI-compatible gateway (/v1) alone"},
    {"report", cli_cmd_report, NEEDS_CLIENT | HAS_VERBS, "cost reports (a month by tenant and project)"},
    {"ratecard", cli_cmd_ratecard, NEEDS_CLIENT | HAS_VERBS, "versioned prices per card-hour and per token"},
    {"billing", cli_cmd_billing, NEEDS_CLIENT | HAS_VERBS, "a tenant's billing mode (showback or chargeback)"},
    {"agent", cli_cmd_agent, NEEDS_CLIENT, "run the node agent (NVML, inventory or simulated)"},
    {"whoami", cli_cmd_whoami, NEEDS_CLIENT, "show the calling identity and its roles"},
    {"context", cli_cmd_context, HAS_VERBS, "the tenant and project commands default to"},
    {"tenant", cli_cmd_tenant, NEEDS_CLIENT | HAS_VERBS, "create, list and show tenants"},
    {"project", cli_cmd_project, NEEDS_CLIENT | HAS_VERBS, "create, list and show projects"},
    {"audit", cli_cmd_audit, NEEDS_CLIENT | HAS_VERBS, "list, export and verify the audit trail"},
    {"login", cli_cmd_login, NEEDS_CLIENT, "exchange a name and password for a token"},
    {"user", cli_cmd_user, NEEDS_CLIENT | HAS_VERBS, "create, list, show, disable users; passwords"},
    {"token", cli_cmd_token, NEEDS_CLIENT | HAS_VERBS, "create, list and revoke tokens"},
    {"member", cli_cmd_member, NEEDS_CLIENT | HAS_VERBS, "grant, revoke and list roles at a scope"},
    {"approval", cli_cmd_approval, NEEDS_CLIENT | HAS_VERBS, "list, approve and reject sensitive operations"},
    {"vendor", cli_cmd_vendor, NEEDS_CLIENT | HAS_VERBS, "grant, list and revoke vendor access"},
    {"policy", cli_cmd_policy, NEEDS_CLIENT | HAS_VERBS, "show and change the security policy"},
    {"node", cli_cmd_node, NEEDS_CLIENT | HAS_VERBS, "nodes: list, show, cordon, drain, pools, history"},
    {"gpu", cli_cmd_gpu, NEEDS_CLIENT | HAS_VERBS, "GPUs: list, show, cordon, drain, reset, mode, history"},
    {"jointoken", cli_cmd_jointoken, NEEDS_CLIENT | HAS_VERBS, "tokens node agents join with"},
    {"class", cli_cmd_class, NEEDS_CLIENT | HAS_VERBS, "resource classes and their free capacity"},
    {"pool", cli_cmd_pool, NEEDS_CLIENT | HAS_VERBS, "resource pools and who may use them"},
    {"workorder", cli_cmd_workorder, NEEDS_CLIENT | HAS_VERBS, "operations tickets on nodes and GPUs"},
    {"alarm", cli_cmd_alarm, NEEDS_CLIENT | HAS_VERBS, "alarms and the health policy"},
    {"job", cli_cmd_job, NEEDS_CLIENT | HAS_VERBS, "submit, list, show, explain, cancel, re-prioritise jobs"},
    {"reservation", cli_cmd_reservation, NEEDS_CLIENT | HAS_VERBS, "advance reservations and maintenance windows"},
    {"binding", cli_cmd_binding, NEEDS_CLIENT | HAS_VERBS, "which job held which GPU, and when"},
    {"quota", cli_cmd_quota, NEEDS_CLIENT | HAS_VERBS, "tenant and project ceilings"},
    {"share", cli_cmd_share, NEEDS_CLIENT | HAS_VERBS, "guaranteed shares: guarantee, borrowing, lending"},
    {"priority", cli_cmd_priority, NEEDS_CLIENT | HAS_VERBS, "priority classes and who may use them"},
    {"model", cli_cmd_model, NEEDS_CLIENT | HAS_VERBS, "a tenant's model services"},
    {"endpoint", cli_cmd_endpoint, NEEDS_CLIENT | HAS_VERBS, "where a model service is served"},
    {"app", cli_cmd_app, NEEDS_CLIENT | HAS_VERBS, "applications of a project (they own API keys)"},
    {"kb", cli_cmd_kb, NEEDS_CLIENT | HAS_VERBS, "knowledge bases: documents, keyword queries"},
    {"key", cli_cmd_key, NEEDS_CLIENT | HAS_VERBS, "API keys (sk-...) for the /v1 gateway"},
    {"usage", cli_cmd_usage, NEEDS_CLIENT | HAS_VERBS, "the gateway's usage records"},
    {"completion", cmd_completion, 0, "print a bash completion script (source <(gpupool completion bash))"},
};

/*
 * `gpupool completion bash`: a bash completion script generated from the
 * table above (the commands, and each one's verbs from its cli_dispatch()
 * table through the hidden CLI_LIST_VERBS verb).  Options are read when
 * completing, from `gpupool CMD [VERB] --help` (help talks to no server).
 */
static int cmd_completion(cli_ctx *ctx, int argc, char **argv) {
    if (cli_wants_help(argc, argv) || argc != 2 || strcmp(argv[1], "bash") != 0) {
        fputs("usage: gpupool completion bash\n\n"
              "Print a bash completion script for the commands, their verbs and options:\n"
              "  source <(gpupool completion bash)      # this shell\n"
              "  gpupool completion bash > /etc/bash_completion.d/gpupool\n",
              argc == 2 && strcmp(argv[1], "bash") != 0 ? stderr : stdout);
        return cli_wants_help(argc, argv) ? CLI_OK : CLI_USAGE;
    }
    const size_t n = sizeof commands / sizeof commands[0];
    fputs("# bash completion for gpupool (generated by `gpupool completion bash`)\n"
          "_gpupool() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} i w noun='' verb='' skip=0 n=0\n"
          "    local globals='--server --token --token-file --ca -o --output --help --version'\n"
          "    local nouns='",
          stdout);
    for (size_t i = 0; i < n; i++) printf("%s%s", i ? " " : "", commands[i].name);
    fputs("'\n"
          "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
          "        w=${COMP_WORDS[i]}\n"
          "        if ((skip)); then skip=0; continue; fi\n"
          "        case $w in\n"
          "        --) return 0 ;;\n"
          "        --server | --token | --token-file | --ca | -o | --output) skip=1; continue ;;\n"
          "        -*) continue ;;\n"
          "        esac\n"
          "        n=$((n + 1))\n"
          "        if ((n == 1)); then noun=$w; elif ((n == 2)); then verb=$w; fi\n"
          "    done\n"
          "    case ${COMP_WORDS[COMP_CWORD - 1]} in\n"
          "    -o | --output) COMPREPLY=($(compgen -W 'table json csv' -- \"$cur\")); return 0 ;;\n"
          "    --token-file | --ca) COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n"
          "    esac\n"
          "    if [[ -z $noun ]]; then\n"
          "        if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$globals\" -- \"$cur\"));\n"
          "        else COMPREPLY=($(compgen -W \"$nouns\" -- \"$cur\")); fi\n"
          "        return 0\n"
          "    fi\n"
          "    local verbs=''\n"
          "    case $noun in\n",
          stdout);
    for (size_t i = 0; i < n; i++) {
        if (!(commands[i].flags & HAS_VERBS)) continue;
        printf("    %s) verbs='", commands[i].name);
        fflush(stdout);
        char *av[] = {(char *)commands[i].name, CLI_LIST_VERBS, NULL};
        commands[i].run(ctx, 2, av);
        fputs("' ;;\n", stdout);
    }
    fputs("    esac\n"
          "    if [[ -n $verbs && -z $verb && $cur != -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$verbs\" -- \"$cur\"))\n"
          "        return 0\n"
          "    fi\n"
          "    if [[ $cur == -* ]]; then\n"
          "        local opts\n"
          "        opts=$(\"${COMP_WORDS[0]}\" $noun ${verbs:+$verb} --help 2>/dev/null |\n"
          "            grep -o -- '--[a-z][a-z-]*' | sort -u)\n"
          "        COMPREPLY=($(compgen -W \"$opts $globals\" -- \"$cur\"))\n"
          "        return 0\n"
          "    fi\n"
          "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "}\n"
          "complete -F _gpupool gpupool\n",
          stdout);
    return CLI_OK;
}

static void usage(FILE *f) {
    fputs("usage: gpupool [--server URL[,URL...]] [--token T] [-o table|json] <command> [args]\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fputs("\n"
          "options:\n"
          "  --server URL[,URL...]\n"
          "                    API address (env GPUPOOL_SERVER; default http://127.0.0.1:7070);\n"
          "                    several servers sharing one store, comma-separated: a request\n"
          "                    that cannot reach one goes on with the next\n"
          "  --token T         bearer token (env GPUPOOL_TOKEN, or GPUPOOL_TOKEN_FILE)\n"
          "  --token-file F    read the token from a file\n"
          "  --ca FILE         trust these PEM CAs for an https server (env GPUPOOL_CA)\n"
          "  -o, --output FMT  table (default), json, yaml, or csv (lists and reports)\n"
          "  -w, --watch       a list or show: print it again whenever it changes (every\n"
          "                    2 s) until interrupted\n"
          "  --version         print the version\n"
          "  -h, --help        this help; `gpupool <command> --help` for a command\n"
          "\n"
          "These options may also come after the command, anywhere before a \"--\".\n"
          "Settings may also live in ~/.config/gpupool/config (server = URL, token = T,\n"
          "token_file = PATH; tenant = T, project = P: see gpupool context --help).\n"
          "Bash completion: source <(gpupool completion bash).\n",
          f);
}

/* Read the first line of a file into a heap string (free), or NULL. */
static char *read_line_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char buf[512];
    char *out = NULL;
    if (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = '\0';
        out = strdup(buf);
    }
    fclose(f);
    return out;
}

/* Fill unset server/token and the context from the user's config file. Strings are heap
 * (free). */
static void read_user_config(char **server, char **token, char **tenant, char **project) {
    char path[4096];
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(path, sizeof path, "%s/gpupool/config", xdg);
    else if (home) snprintf(path, sizeof path, "%s/.config/gpupool/config", home);
    else return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq) continue;
        *eq = '\0';
        char *k = line, *v = eq + 1;
        while (*k == ' ') k++;
        for (char *e = eq - 1; e >= k && *e == ' '; e--) *e = '\0';
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\r\n")] = '\0';
        for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t');) *--e = '\0';
        if (strcmp(k, "server") == 0 && !*server) *server = strdup(v);
        else if (strcmp(k, "token") == 0 && !*token) *token = strdup(v);
        else if (strcmp(k, "tenant") == 0 && !*tenant && *v) *tenant = strdup(v);
        else if (strcmp(k, "project") == 0 && !*project && *v) *project = strdup(v);
        else if (strcmp(k, "token_file") == 0 && !*token && !(*token = read_line_file(v)))
            cli_error(0, "warning: cannot read token_file %s from %s", v, path);
    }
    fclose(f);
}

/*
 * Global options may come anywhere on the line ("gpupool job list -o json",
 * "gpupool agent --server URL"): lift --server, --token, --token-file, --ca
 * and -o/--output (as "--opt V", "--opt=V", "-o V" or "-oV") out of the
 * command's arguments, before the first "--", so that argv becomes
 * "gpupool <globals...> <command> <its args...>".  No command defines an
 * option of the same name, but for `agent --ca` (its own, same meaning: it is
 * left to the agent).  Returns argc.
 */
static int hoist_globals(int argc, char **argv) {
    static const char *const names[] = {"--server", "--token", "--token-file", "--ca", "--output",
                                        "-o", NULL};
    int first = 1; /* the command: the first argument that is not a global option */
    while (first < argc && argv[first][0] == '-' && strcmp(argv[first], "--") != 0) {
        int takes = 0;
        for (int k = 0; names[k]; k++)
            if (strcmp(argv[first], names[k]) == 0) takes = 1;
        first += 1 + takes;
    }
    /* --watch (-w), a flag without a value, is lifted as it is */
    if (first >= argc) return argc;
    char **globals = calloc((size_t)argc, sizeof *globals), **rest = calloc((size_t)argc, sizeof *rest);
    if (!globals || !rest) {
        free(globals);
        free(rest);
        return argc;
    }
    int ng = 0, nr = 0, i = first + 1, agent = strcmp(argv[first], "agent") == 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        int match = 0; /* 1: the value is the next argument; 2: it is attached */
        if (strcmp(a, "--watch") == 0 || strcmp(a, "-w") == 0) {
            globals[ng++] = argv[i];
            continue;
        }
        for (int k = 0; names[k] && !match; k++) {
            if (agent && k == 3) continue;
            size_t n = strlen(names[k]);
            if (strcmp(a, names[k]) == 0) match = 1;
            else if (strncmp(a, names[k], n) == 0 && a[n] == '=' && names[k][1] == '-') match = 2;
            else if (k == 5 && strncmp(a, "-o", 2) == 0 && a[2]) match = 2;
        }
        if (!match || (match == 1 && i + 1 >= argc)) {
            rest[nr++] = argv[i];
            continue;
        }
        globals[ng++] = argv[i];
        if (match == 1) globals[ng++] = argv[++i];
    }
    for (; i < argc; i++) rest[nr++] = argv[i];
    if (ng) {
        /* argv[1..first-1] globals already first, then the lifted ones, the command, the rest */
        char *cmd = argv[first];
        int o = first;
        for (int k = 0; k < ng; k++) argv[o++] = globals[k];
        argv[o++] = cmd;
        for (int k = 0; k < nr; k++) argv[o++] = rest[k];
    }
    free(globals);
    free(rest);
    return argc;
}

int main(int argc, char **argv) {
    static const struct option lo[] = {{"server", required_argument, 0, 's'},
                                       {"token", required_argument, 0, 't'},
                                       {"token-file", required_argument, 0, 'T'},
                                       {"ca", required_argument, 0, 'C'},
                                       {"output", required_argument, 0, 'o'},
                                       {"version", no_argument, 0, 'V'},
                                       {"watch", no_argument, 0, 'w'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    char *server = NULL, *token = NULL, *tenant = NULL, *project = NULL;
    const char *output = "table", *ca = NULL, *server_from = "--server";
    httpc_servers servers = HTTPC_SERVERS_INIT;
    int c, rc = CLI_OK;
    opterr = 0;
    argc = hoist_globals(argc, argv);
    int watch = 0;
    while ((c = getopt_long(argc, argv, "+:o:hw", lo, NULL)) != -1) {
        switch (c) {
        case 's': free(server); server = strdup(optarg); break;
        case 't': free(token); token = strdup(optarg); break;
        case 'T':
            free(token);
            if (!(token = read_line_file(optarg))) {
                rc = cli_error(CLI_USAGE, "cannot read token file %s: %s", optarg, strerror(errno));
                goto out;
            }
            break;
        case 'o': output = optarg[0] == '=' ? optarg + 1 : optarg; break; /* -o=json */
        case 'C': ca = optarg; break;
        case 'w': watch = 1; break;
        case 'V': puts("gpupool " GPUPOOL_VERSION); goto out;
        case 'h': usage(stdout); goto out;
        case ':': rc = cli_error(CLI_USAGE, "option %s needs a value", argv[optind - 1]); goto out;
        default: rc = cli_error(CLI_USAGE, "unknown option %s (see gpupool --help)", argv[optind - 1]); goto out;
        }
    }
    if (strcmp(output, "table") != 0 && strcmp(output, "json") != 0 && strcmp(output, "csv") != 0 &&
        strcmp(output, "yaml") != 0) {
        rc = cli_error(CLI_USAGE, "-o must be table, json, yaml or csv, got '%s'", output);
        goto out;
    }
    if (optind >= argc) {
        usage(stderr);
        rc = CLI_USAGE;
        goto out;
    }
    if (!server && getenv("GPUPOOL_SERVER")) {
        server = strdup(getenv("GPUPOOL_SERVER"));
        server_from = "GPUPOOL_SERVER";
    }
    if (!token && getenv("GPUPOOL_TOKEN")) token = strdup(getenv("GPUPOOL_TOKEN"));
    if (!token && getenv("GPUPOOL_TOKEN_FILE") &&
        !(token = read_line_file(getenv("GPUPOOL_TOKEN_FILE")))) {
        rc = cli_error(CLI_USAGE, "cannot read GPUPOOL_TOKEN_FILE %s: %s",
                       getenv("GPUPOOL_TOKEN_FILE"), strerror(errno));
        goto out;
    }
    if (!server) server_from = "server in the config file";
    if (getenv("GPUPOOL_TENANT") && *getenv("GPUPOOL_TENANT")) {
        tenant = strdup(getenv("GPUPOOL_TENANT"));
        if (getenv("GPUPOOL_PROJECT") && *getenv("GPUPOOL_PROJECT"))
            project = strdup(getenv("GPUPOOL_PROJECT"));
        else
            project = strdup(""); /* the environment's tenant: not the file's project */
    }
    read_user_config(&server, &token, &tenant, &project);
    if (project && !*project) {
        free(project);
        project = NULL;
    }
    if (!tenant) { /* a project alone is no context */
        free(project);
        project = NULL;
    }
    cli_set_context(tenant, project);
    if (!ca && getenv("GPUPOOL_CA") && *getenv("GPUPOOL_CA")) ca = getenv("GPUPOOL_CA");
    if (ca && access(ca, R_OK) != 0) {
        rc = cli_error(CLI_USAGE, "cannot read CA file %s: %s", ca, strerror(errno));
        goto out;
    }
    if (rnd_init() != 0) {
        rc = cli_error(CLI_FAIL, "cannot initialise libsodium");
        goto out;
    }
    cli_ctx ctx = {.server = server ? server : "http://127.0.0.1:7070", .token = token,
                   .json = strcmp(output, "json") == 0 || strcmp(output, "yaml") == 0,
                   .yaml = strcmp(output, "yaml") == 0, .csv = strcmp(output, "csv") == 0,
                   .tenant = tenant, .project = project, .watch = watch};
    int first = optind;
    const char *noun = argv[first];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, noun) != 0) continue;
        if (commands[i].flags & NEEDS_CLIENT) {
            gp_err err = GP_ERR_INIT;
            /* --help talks to no server: it works whatever the setting says */
            if (!cli_wants_help(argc - first, argv + first) &&
                httpc_servers_parse(ctx.server, &servers, &err)) {
                rc = cli_error(CLI_USAGE, "%s: %s", server_from, err.msg);
                goto out;
            }
            ctx.servers = &servers;
        }
        /* every command: the server's gateway and checks use libcurl from many threads,
         * so it is set up here, before any */
        if (httpc_global_init()) {
            rc = cli_error(CLI_FAIL, "cannot initialise the HTTP client (libcurl)");
            goto out;
        }
        if ((commands[i].flags & NEEDS_CLIENT) && ca) httpc_set_ca(ca);
        optind = 0;
        rc = commands[i].run(&ctx, argc - first, argv + first);
        httpc_global_cleanup();
        goto out;
    }
    {
        const char *names[sizeof commands / sizeof commands[0] + 1];
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) names[i] = commands[i].name;
        names[sizeof commands / sizeof commands[0]] = NULL;
        const char *near = cli_nearest(noun, names);
        if (near)
            rc = cli_error(CLI_USAGE, "unknown command '%s'; did you mean '%s'? (see gpupool --help)",
                           noun, near);
        else
            rc = cli_error(CLI_USAGE, "unknown command '%s' (see gpupool --help)", noun);
    }
out:
    httpc_servers_release(&servers);
    free(server);
    free(token);
    free(tenant);
    free(project);
    return rc;
}
