/*
 * fuzz_inventory.c - libFuzzer target: the declared inventory file
 * (agent_inventory_reports_text, src/agent/agent.h) -> node reports.
 *
 * Input: the first byte picks `simulate` (1..4 copies of each node); the
 * rest is the file's text.  Invariants on success: an array of reports
 * whose names are valid object names, at most 64 GPUs each with distinct
 * UUIDs and indexes 0..n-1, memory > 0, MIG slices of MIG cards only and
 * within the card's memory; on failure, no reports and a message.
 */
#include "../../src/agent/agent.h"
#include "../../src/core/jsonx.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

static void check_report(json_t *rep) {
    assert(json_is_object(rep));
    const char *name = json_string_value(json_object_get(rep, "name"));
    assert(name && gp_name_valid(name));
    assert(json_is_string(json_object_get(rep, "hostname")));
    assert(json_is_object(json_object_get(rep, "labels")));
    json_t *gpus = json_object_get(rep, "gpus");
    assert(json_is_array(gpus) && json_array_size(gpus) <= 64);
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        assert(json_integer_value(json_object_get(g, "index")) == (json_int_t)i);
        json_int_t mem = json_integer_value(json_object_get(g, "memory_mib"));
        assert(mem > 0);
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        assert(uuid && strncmp(uuid, "GPU-", 4) == 0);
        for (size_t k = 0; k < i; k++)
            assert(strcmp(uuid, json_string_value(json_object_get(json_array_get(gpus, k),
                                                                  "uuid"))) != 0);
        json_t *slices = json_object_get(g, "slices");
        assert(json_is_array(slices) && json_array_size(slices) <= 7);
        if (json_array_size(slices))
            assert(json_is_true(json_object_get(g, "mig_capable")));
        size_t si;
        json_t *s;
        json_int_t used = 0;
        json_array_foreach(slices, si, s) {
            json_int_t smem = json_integer_value(json_object_get(s, "memory_mib"));
            assert(smem > 0);
            used += smem;
        }
        assert(used <= mem);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int simulate = 1 + data[0] % 4;
    json_t *reports = (json_t *)1;
    gp_err err = GP_ERR_INIT;
    int rc = agent_inventory_reports_text((const char *)data + 1, size - 1, simulate, &reports,
                                          &err);
    if (rc != GP_OK) {
        assert(reports == NULL && rc < 0 && err.msg[0]);
        return 0;
    }
    assert(json_is_array(reports) && json_array_size(reports) > 0);
    assert(json_array_size(reports) % (size_t)simulate == 0);
    size_t i;
    json_t *rep;
    json_array_foreach(reports, i, rep) check_report(rep);
    json_decref(reports);
    return 0;
}
