/*
 * fuzz_csv.c - libFuzzer target: the openb trace's CSV importer
 * (ob_parse_nodes / ob_parse_tasks, bench/openb.h), and the typical-shape
 * workload built from the tasks (pack_workload_from_tasks).
 *
 * Input: a node list and a task list separated by the first NUL byte (no
 * NUL: the same bytes serve as both).  Invariants on success: every node
 * passes pack_node_valid, the capacity is the sum of the nodes' GPUs, every
 * task passes pack_task_check, model ids are below the table's size; the
 * first tasks, placed by pack_choose, apply and keep the nodes valid.
 */
#include "../../bench/openb.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t nlen = nul ? (size_t)(nul - data) : size;
    const uint8_t *tdata = nul ? nul + 1 : data;
    size_t tlen = nul ? size - nlen - 1 : size;
    char *ntext = malloc(nlen + 1), *ttext = malloc(tlen + 1);
    assert(ntext && ttext);
    memcpy(ntext, data, nlen);
    ntext[nlen] = 0;
    memcpy(ttext, tdata, tlen);
    ttext[tlen] = 0;

    ob_trace tr;
    memset(&tr, 0, sizeof tr);
    int rn = ob_parse_nodes(&tr, ntext, "nodes.csv", NULL);
    if (rn == 0) {
        int64_t cap = 0;
        assert(tr.nnodes > 0);
        for (size_t i = 0; i < tr.nnodes; i++) {
            assert(pack_node_valid(&tr.nodes[i]));
            cap += (int64_t)tr.nodes[i].ngpu * PACK_MILLI;
        }
        assert(cap == tr.capacity && cap > 0);
    }
    int rt = ob_parse_tasks(&tr, ttext, "tasks.csv", NULL);
    assert(tr.models.n >= 0 && tr.models.n <= PACK_MAX_MODELS);
    for (int i = 0; i < tr.models.n; i++) assert(strlen(tr.models.name[i]) < OB_NAME_MAX);
    if (rt == 0) {
        assert(tr.ntasks > 0);
        for (size_t i = 0; i < tr.ntasks; i++) assert(pack_task_check(&tr.tasks[i]) == PACK_OK);
        pack_workload *w = NULL;
        if (pack_workload_from_tasks(tr.tasks, tr.ntasks, 1.0, &w) == PACK_OK)
            assert(w != NULL);
        /* place the first tasks on the imported nodes, as the replay does */
        if (rn == 0 && tr.nnodes <= 64) {
            pack_node *nodes = malloc(tr.nnodes * sizeof *nodes);
            assert(nodes);
            memcpy(nodes, tr.nodes, tr.nnodes * sizeof *nodes);
            for (size_t k = 0; k < tr.ntasks && k < 16; k++) {
                pack_policy pol = w ? (pack_policy)(k % PACK_NPOLICIES) : PACK_BESTFIT;
                size_t ni;
                int gpus[PACK_MAX_GPUS];
                int rc = pack_choose(pol, nodes, tr.nnodes, &tr.tasks[k], w, &ni, gpus);
                assert(rc == PACK_OK || rc == PACK_NOFIT);
                if (rc == PACK_OK) {
                    assert(ni < tr.nnodes);
                    assert(pack_apply(&nodes[ni], &tr.tasks[k], gpus) == PACK_OK);
                    assert(pack_node_valid(&nodes[ni]));
                }
            }
            free(nodes);
        }
        pack_workload_free(w);
    }
    ob_trace_release(&tr);
    free(ntext);
    free(ttext);
    return 0;
}
