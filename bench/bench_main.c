/*
 * bench_main.c - gpupool-bench: the benchmarks' one binary, a table of
 * subcommands (like gpupool's noun table).  Each subcommand lives in its own
 * bench/<name>.c exporting `int bench_<name>(int argc, char **argv)` (argv[0]
 * is the subcommand's name) that returns the process exit status.
 *
 * To add one: write bench/<name>.c, declare it below, add a row to
 * bench_cmds[], and add the file to the gpupool-bench target in CMakeLists.txt.
 */
#include <stdio.h>
#include <string.h>

/* Subcommands (defined in bench/<name>.c). */
int bench_openb(int argc, char **argv);
int bench_sched(int argc, char **argv);
int bench_gateway(int argc, char **argv);
int bench_drive(int argc, char **argv);
int bench_revoke(int argc, char **argv);
int bench_usage(int argc, char **argv);
int bench_load(int argc, char **argv);
int bench_shares(int argc, char **argv);
int bench_round(int argc, char **argv);

typedef struct bench_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} bench_cmd;

static const bench_cmd bench_cmds[] = {
    {"openb", bench_openb,
     "replay the Alibaba openb GPU-sharing trace (FGD paper protocol) under packing policies"},
    {"sched", bench_sched,
     "one scheduling round on a synthetic cluster (default 5,000 nodes x 8 GPUs, 50,000 jobs)"},
    {"gateway", bench_gateway,
     "latency and throughput the /v1 gateway adds, against the same upstream reached directly"},
    {"drive", bench_drive,
     "drive gateways running elsewhere at once (req/s each and in all; bench/gateway_scaleout.sh)"},
    {"revoke", bench_revoke,
     "revoke a key through the API and time until every gateway named refuses it"},
    {"load", bench_load,
     "many clients on loopback mixing API and gateway calls: errors and latency percentiles"},
    {"shares", bench_shares,
     "guarantees + borrowing against hard ceilings: the openb tasks among 4-8 tenants, replayed"},
    {"round", bench_round,
     "the live round against the store at scale (default 5,000 nodes): cluster from memory vs read"},
    {"usage", bench_usage,
     "a month's usage and cost report over 10 million usage records and 1 million bindings"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: gpupool-bench <command> [options]   (gpupool-bench <command> --help)\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof bench_cmds / sizeof bench_cmds[0]; i++)
        fprintf(f, "  %-10s %s\n", bench_cmds[i].name, bench_cmds[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof bench_cmds / sizeof bench_cmds[0]; i++)
        if (strcmp(argv[1], bench_cmds[i].name) == 0) return bench_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "gpupool-bench: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
