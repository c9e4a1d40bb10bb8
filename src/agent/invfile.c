/*
 * invfile.c - the declared inventory (for machines without NVIDIA GPUs, and
 * for simulated fleets): {"nodes":[{"name","cpus","memory_gib","labels",
 * "gpus":[{"model","memory_gib","count","mode":"whole|mig|shared",
 * "mig":["3g.40gb",…], "vendor":"nvidia|amd|intel", "driver_version":"6.8.5",
 * "stack":{"rocm":"6.2.0"}}]}]} -> the same node reports discovery makes.
 *
 * Vendors: without "vendor" a card is NVIDIA.  An AMD card's "mig" lists its
 * compute partitions ("cpx.24gb", at most 8: SPX/DPX/TPX/QPX/CPX modes, the
 * profiles AMD SMI discovery reports); Intel Gaudi cards have no partitions.
 * "stack" names only its vendor's runtime (cuda, rocm, synapse); versions
 * are dotted numbers.
 *
 * UUIDs are derived from the node name and GPU index (BLAKE2b), so a
 * restarted agent reports the same cards.
 */
#include "agent.h"

#include "../core/jsonx.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from (prefix, node, a, b). */
static void make_uuid(const char *prefix, const char *node, int a, int b, char out[64]) {
    char in[160];
    unsigned char h[16];
    char hex[33];
    snprintf(in, sizeof in, "%s/%s/%d/%d", prefix, node, a, b);
    crypto_generichash(h, sizeof h, (const unsigned char *)in, strlen(in), NULL, 0);
    sodium_bin2hex(hex, sizeof hex, h, sizeof h);
    snprintf(out, 64, "%s-%.8s-%.4s-%.4s-%.4s-%.12s", prefix, hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
}

/* The most memory a declared GPU (or MIG instance) may have, in GiB: keeps MiB sums in range. */
#define INV_MAX_GIB (1LL << 20)

/* A dotted number "12.4", "6.2.0" (at most 31 characters, 4 parts). */
static int dotted_ok(const char *v) {
    if (!v || !*v || strlen(v) > 31) return 0;
    int digits = 0, parts = 1;
    for (const char *p = v; *p; p++) {
        if (*p >= '0' && *p <= '9') digits++;
        else if (*p == '.' && digits && p[1]) digits = 0, parts++;
        else return 0;
    }
    return digits > 0 && parts <= 4;
}

/* The runtime a vendor's cards offer. */
static const char *vendor_runtime(const char *vendor) {
    return strcmp(vendor, "amd") == 0 ? "rocm" : strcmp(vendor, "intel") == 0 ? "synapse" : "cuda";
}

/* Memory of an AMD compute partition "cpx.24gb" in MiB; 0 if malformed. */
static long long amd_profile_mib(const char *p) {
    static const char *const modes[] = {"spx.", "dpx.", "tpx.", "qpx.", "cpx."};
    int ok = 0;
    for (int i = 0; i < 5; i++) ok |= strncmp(p, modes[i], 4) == 0;
    if (!ok) return 0;
    char *end;
    long long gb = strtoll(p + 4, &end, 10);
    if (p[4] < '1' || p[4] > '9' || gb <= 0 || gb > INV_MAX_GIB || strcmp(end, "gb") != 0) return 0;
    return gb * 1024;
}

/* Memory of a MIG profile "3g.40gb" in MiB; 0 if malformed or over INV_MAX_GIB. */
static long long profile_mib(const char *p) {
    const char *dot = strchr(p, '.');
    if (!dot || p[0] < '1' || p[0] > '7' || p[1] != 'g') return 0;
    char *end;
    long long gb = strtoll(dot + 1, &end, 10);
    if (gb <= 0 || gb > INV_MAX_GIB || strcmp(end, "gb") != 0) return 0;
    return gb * 1024;
}

static int build_node(json_t *decl, const char *name, json_t **out, gp_err *err) {
    json_t *gpus = json_array();
    json_t *groups = json_object_get(decl, "gpus");
    size_t gi;
    json_t *g;
    int idx = 0;
    if (!json_is_array(groups)) {
        json_decref(gpus);
        return gp_err_set(err, GP_EINVALID, "node %s: gpus must be an array", name);
    }
    json_array_foreach(groups, gi, g) {
        const char *model = json_string_value(json_object_get(g, "model"));
        const char *mode = json_string_value(json_object_get(g, "mode"));
        json_int_t mem = json_integer_value(json_object_get(g, "memory_gib"));
        json_t *cnt = json_object_get(g, "count");
        json_int_t count = cnt ? json_integer_value(cnt) : 1;
        json_t *mig = json_object_get(g, "mig");
        json_t *jv = json_object_get(g, "vendor"), *jd = json_object_get(g, "driver_version");
        json_t *jstack = json_object_get(g, "stack");
        const char *vendor = jv ? json_string_value(jv) : "nvidia";
        if (!vendor || (strcmp(vendor, "nvidia") && strcmp(vendor, "amd") && strcmp(vendor, "intel"))) {
            json_decref(gpus);
            return gp_err_set(err, GP_EINVALID,
                              "node %s, gpus[%zu]: vendor must be nvidia, amd or intel", name, gi);
        }
        if (jd && !dotted_ok(json_string_value(jd))) {
            json_decref(gpus);
            return gp_err_set(err, GP_EINVALID,
                              "node %s, gpus[%zu]: driver_version must be a dotted number like "
                              "\"550.54.15\"",
                              name, gi);
        }
        if (jstack) {
            const char *rt;
            json_t *ver;
            int bad = !json_is_object(jstack) || json_object_size(jstack) > 1;
            json_object_foreach(jstack, rt, ver) {
                if (strcmp(rt, vendor_runtime(vendor)) != 0 || !dotted_ok(json_string_value(ver)))
                    bad = 1;
            }
            if (bad) {
                json_decref(gpus);
                return gp_err_set(err, GP_EINVALID,
                                  "node %s, gpus[%zu]: stack must be {\"%s\": \"<version>\"} for "
                                  "%s cards (a dotted version)",
                                  name, gi, vendor_runtime(vendor), vendor);
            }
        }
        int amd = strcmp(vendor, "amd") == 0;
        if (!mode) mode = "whole";
        if (!model || mem <= 0 || mem > INV_MAX_GIB || count < 1 || count > 16 ||
            (strcmp(mode, "whole") && strcmp(mode, "mig") && strcmp(mode, "shared")) ||
            (strcmp(mode, "mig") == 0 && (!json_is_array(mig) || json_array_size(mig) == 0)) ||
            (strcmp(mode, "mig") == 0 && strcmp(vendor, "intel") == 0) || idx + count > 64) {
            json_decref(gpus);
            return gp_err_set(err, GP_EINVALID,
                              "node %s, gpus[%zu]: need model, memory_gib 1..1048576, count 1..16, "
                              "mode whole|mig|shared (mig needs a \"mig\" profile list; Intel "
                              "Gaudi cards have no partitions)",
                              name, gi);
        }
        for (json_int_t c = 0; c < count; c++, idx++) {
            char uuid[64], pci[32];
            make_uuid("GPU", name, idx, 0, uuid);
            snprintf(pci, sizeof pci, "00000000:%02X:00.0", 0x10 + idx);
            json_t *slices = json_array();
            if (strcmp(mode, "mig") == 0) {
                size_t si;
                json_t *p;
                long long used = 0;
                json_array_foreach(mig, si, p) {
                    const char *prof = json_string_value(p);
                    long long mib = prof ? (amd ? amd_profile_mib(prof) : profile_mib(prof)) : 0;
                    if (!mib || si >= (amd ? 8u : 7u)) {
                        json_decref(slices);
                        json_decref(gpus);
                        return amd ? gp_err_set(err, GP_EINVALID,
                                                "node %s: bad AMD partition profile (like "
                                                "cpx.24gb), at most 8",
                                                name)
                                   : gp_err_set(err, GP_EINVALID,
                                                "node %s: bad MIG profile (like 3g.40gb), at most 7",
                                                name);
                    }
                    used += mib;
                    char su[64];
                    make_uuid("MIG", name, idx, (int)si, su);
                    json_array_append_new(slices, json_pack("{s:s,s:s,s:I}", "uuid", su,
                                                            "profile", prof, "memory_mib",
                                                            (json_int_t)mib));
                }
                if (used > (long long)mem * 1024) {
                    json_decref(slices);
                    json_decref(gpus);
                    return gp_err_set(err, GP_EINVALID,
                                      "node %s: MIG instances need more memory than the card has",
                                      name);
                }
            }
            json_t *card = json_pack("{s:s,s:i,s:s,s:I,s:s,s:i,s:s,s:b,s:s,s:s,s:o}", "uuid",
                                     uuid, "index", idx, "model", model, "memory_mib",
                                     (json_int_t)mem * 1024, "pci_bus", pci, "numa",
                                     idx < 4 ? 0 : 1, "compute_cap", "", "mig_capable",
                                     strcmp(mode, "mig") == 0, "mig_mode",
                                     strcmp(mode, "mig") == 0 ? "enabled" : "disabled",
                                     "declared_mode", mode, "slices", slices);
            /* said only when declared: an old declaration's report stays as it was */
            if (jv) json_object_set_new(card, "vendor", json_string(vendor));
            if (jd) json_object_set(card, "driver_version", jd);
            if (jstack) json_object_set_new(card, "stack", json_deep_copy(jstack));
            json_array_append_new(gpus, card);
        }
    }
    json_t *labels = json_object_get(decl, "labels");
    labels = json_is_object(labels) ? json_deep_copy(labels) : json_object();
    /* where its workloads are reached (a job serving a model): "address", else the name */
    const char *addr = json_string_value(json_object_get(decl, "address"));
    if (addr && (!*addr || strlen(addr) > 253 || strpbrk(addr, " /@?#"))) {
        json_decref(gpus);
        json_decref(labels);
        return gp_err_set(err, GP_EINVALID, "node %s: address must be a host name or IP address",
                          name);
    }
    *out = json_pack("{s:s,s:s,s:I,s:I,s:o,s:s,s:s,s:o}", "name", name, "hostname", addr ? addr : name, "cpus",
                     json_integer_value(json_object_get(decl, "cpus")), "memory_gib",
                     json_integer_value(json_object_get(decl, "memory_gib")), "labels", labels,
                     "driver_version", "simulated", "source", "inventory", "gpus", gpus);
    return GP_OK;
}

/* Reports from a parsed declaration `doc` (stolen: always released). */
static int reports_from_doc(json_t *doc, int simulate, json_t **reports, gp_err *err) {
    json_t *nodes = json_object_get(doc, "nodes"), *out = json_array();
    if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
        json_decref(doc);
        json_decref(out);
        return gp_err_set(err, GP_EINVALID, "inventory: \"nodes\" must be a non-empty array");
    }
    int copies = simulate > 1 ? simulate : 1;
    size_t i;
    json_t *n;
    int rc = GP_OK;
    json_array_foreach(nodes, i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!name || !gp_name_valid(name) || strlen(name) > 50) {
            rc = gp_err_set(err, GP_EINVALID, "inventory: nodes[%zu]: name must be lower-case "
                                              "letters, digits and '-'", i);
            break;
        }
        for (int c = 0; c < copies && !rc; c++) {
            char nm[64];
            if (copies > 1) snprintf(nm, sizeof nm, "%s-%d", name, c);
            else snprintf(nm, sizeof nm, "%s", name);
            json_t *rep = NULL;
            if (!(rc = build_node(n, nm, &rep, err))) json_array_append_new(out, rep);
        }
        if (rc) break;
    }
    json_decref(doc);
    if (rc) {
        json_decref(out);
        return rc;
    }
    *reports = out;
    return GP_OK;
}

int agent_inventory_reports(const char *path, int simulate, json_t **reports, gp_err *err) {
    json_error_t je;
    json_t *doc;
    *reports = NULL;
    if (path) {
        doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
            return gp_err_set(err, GP_EINVALID, "inventory %s: line %d: %s", path, je.line,
                              je.text);
    } else {
        doc = json_loads("{\"nodes\":[{\"name\":\"sim\",\"cpus\":64,\"memory_gib\":512,"
                         "\"gpus\":[{\"model\":\"A100-80GB\",\"memory_gib\":80,\"count\":8}]}]}",
                         0, NULL);
    }
    return reports_from_doc(doc, simulate, reports, err);
}

int agent_inventory_reports_text(const char *text, size_t len, int simulate, json_t **reports,
                                 gp_err *err) {
    json_error_t je;
    *reports = NULL;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return gp_err_set(err, GP_EINVALID, "inventory: line %d: %s", je.line, je.text);
    return reports_from_doc(doc, simulate, reports, err);
}
