/*
 * openb.h - the openb trace's CSV files, parsed (bench/openb.c).
 *
 * Two CSV files describe a trace: nodes (cpu_milli,memory_mib,gpu,model,
 * ...) and tasks (cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec],...),
 * columns found by the header line's names.  The parsers are pure apart
 * from diagnostics, so `gpupool-bench openb` and the fuzzer
 * (tests/fuzz/fuzz_csv.c) run the same code.
 *
 * Ownership: an ob_trace owns its nodes and tasks arrays; release it with
 * ob_trace_release() (also after a failed parse).
 */
#ifndef GP_BENCH_OPENB_H
#define GP_BENCH_OPENB_H

#include "../src/sched/pack.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OB_MAX_FIELDS 32
#define OB_NAME_MAX 32

/* GPU model names seen in the files, index = model id. */
typedef struct ob_models {
    int n;
    char name[PACK_MAX_MODELS][OB_NAME_MAX];
} ob_models;

typedef struct ob_trace {
    pack_node *nodes;
    size_t nnodes;
    pack_task *tasks;
    size_t ntasks;
    int64_t capacity; /* milli-GPU of the cluster */
    ob_models models;
} ob_trace;

/*
 * Parse the node list in `text` (NUL-terminated; split in place, so it is
 * modified) into tr->nodes, adding to tr->capacity and tr->models.  `path`
 * names the file in diagnostics, written to `diag` (NULL: none).  Returns 0,
 * or -1 for a missing column, a malformed or unsupported row, no GPU node,
 * or no memory.  Start from a zeroed ob_trace.
 */
int ob_parse_nodes(ob_trace *tr, char *text, const char *path, FILE *diag);

/*
 * As ob_parse_nodes for the task list, into tr->tasks (rows a task cannot
 * be made of are skipped and counted in a diagnostic).  -1 also when no task
 * is left.  Model names in gpu_spec ("A|B") share tr->models with the nodes.
 */
int ob_parse_tasks(ob_trace *tr, char *text, const char *path, FILE *diag);

/* Free the trace's arrays and zero it. */
void ob_trace_release(ob_trace *tr);

#endif
