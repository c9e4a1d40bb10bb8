/*
 * catalog.c - resource classes and resource pools: what users ask for, and
 * where it may run.
 *
 * A class is a standard, user-facing spec (form x count + CPU + memory +
 * the GPU models that satisfy it).  Validation refuses a class that no GPU
 * could ever satisfy.  Capacity counts units on allocatable GPUs only.
 */
#include "inventory.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../compat/compat.h"
#include "../sched/share.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Models known from the research notes, with their vendor, memory and hardware partition
 * profiles (NVIDIA MIG; AMD Instinct compute partitions "<mode>.<GiB>gb"; Gaudi has none). */
static const struct {
    const char *model;
    int vendor; /* CP_* */
    int memory_gib;
    const char *const profiles[8];
} known[] = {
    {"A100-40GB", CP_NVIDIA, 40, {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", NULL}},
    {"A100-80GB", CP_NVIDIA, 80, {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", NULL}},
    {"H100-80GB", CP_NVIDIA, 80, {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", NULL}},
    {"H200-141GB", CP_NVIDIA, 141, {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb", NULL}},
    {"L40S", CP_NVIDIA, 48, {NULL}},
    {"L4", CP_NVIDIA, 24, {NULL}},
    {"A10", CP_NVIDIA, 24, {NULL}},
    {"T4", CP_NVIDIA, 16, {NULL}},
    {"MI300X", CP_AMD, 192, {"dpx.96gb", "qpx.48gb", "cpx.24gb", NULL}},
    {"MI325X", CP_AMD, 256, {"dpx.128gb", "qpx.64gb", "cpx.32gb", NULL}},
    {"MI250X", CP_AMD, 128, {NULL}},
    {"MI210", CP_AMD, 64, {NULL}},
    {"HL-225", CP_INTEL, 96, {NULL}},
    {"HL-325L", CP_INTEL, 128, {NULL}},
};

/* The vendor of a known model, or -1. */
static int known_vendor(const char *model) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (inv_model_matches(known[i].model, model) || inv_model_matches(model, known[i].model))
            return known[i].vendor;
    return -1;
}

int inv_model_matches(const char *cm, const char *gm) {
    char tok[64];
    const char *p = cm, *at = gm;
    if (strcasecmp(cm, gm) == 0) return 1;
    while (*p) {
        size_t n = strcspn(p, "-");
        if (n == 0 || n >= sizeof tok) return 0;
        memcpy(tok, p, n);
        tok[n] = '\0';
        /* find tok in `at`, case-insensitively, on a token boundary */
        const char *hit = NULL;
        for (const char *q = at; *q; q++) {
            if (strncasecmp(q, tok, n) == 0 && (q == gm || !isalnum((unsigned char)q[-1])) &&
                !isalnum((unsigned char)q[n])) {
                hit = q;
                break;
            }
        }
        if (!hit) return 0;
        at = hit + n;
        p += n;
        if (*p == '-') p++;
    }
    return 1;
}

const char *const *inv_model_mig_profiles(const char *model, int *memory_gib) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (inv_model_matches(known[i].model, model) || inv_model_matches(model, known[i].model)) {
            if (memory_gib) *memory_gib = known[i].memory_gib;
            return known[i].profiles;
        }
    return NULL;
}

int inv_form_parse(const char *s, inv_form *f, gp_err *err) {
    memset(f, 0, sizeof *f);
    if (!s) return gp_err_set(err, GP_EINVALID, "field 'form' is required");
    if (strcmp(s, "whole") == 0) {
        f->kind = FORM_WHOLE;
        return GP_OK;
    }
    /* "partition:<profile>" is the vendor-neutral spelling of "mig:<profile>" */
    if (strncmp(s, "mig:", 4) == 0 || strncmp(s, "partition:", 10) == 0) {
        const char *p = s + (s[0] == 'm' ? 4 : 10);
        size_t pl = strlen(p);
        /* NVIDIA MIG "3g.40gb", or an AMD compute partition "cpx.24gb" (spx/dpx/tpx/qpx/cpx) */
        int nv = pl >= 6 && p[0] >= '1' && p[0] <= '7' && p[1] == 'g' && p[2] == '.';
        int amd = pl >= 7 && strchr("sdtqc", p[0]) && p[0] && p[1] == 'p' && p[2] == 'x' &&
                  p[3] == '.';
        size_t d0 = nv ? 3 : 4, nd = 0;
        while (d0 + nd < pl && isdigit((unsigned char)p[d0 + nd])) nd++;
        if (pl >= sizeof f->profile || !(nv || amd) || nd < 1 || nd > 4 || d0 + nd + 2 != pl ||
            strcmp(p + pl - 2, "gb") != 0)
            return gp_err_set(err, GP_EINVALID,
                              "form mig:<profile> needs a profile like 3g.40gb (NVIDIA MIG) or"
                              " cpx.24gb (AMD compute partition)");
        f->kind = FORM_MIG;
        snprintf(f->profile, sizeof f->profile, "%s", p);
        return GP_OK;
    }
    if (strncmp(s, "shared:", 7) == 0) {
        int g, pc, n = 0;
        if (sscanf(s + 7, "%d/%d%n", &g, &pc, &n) != 2 || s[7 + n] || g < 1 || g > 1024 ||
            pc < 1 || pc > 100)
            return gp_err_set(err, GP_EINVALID,
                              "form shared:<GiB>/<percent> needs e.g. shared:12/25 (1-100 %%)");
        f->kind = FORM_SHARED;
        f->memory_gib = g;
        f->percent = pc;
        return GP_OK;
    }
    return gp_err_set(err, GP_EINVALID, "form must be whole, mig:<profile> or shared:<GiB>/<pct>");
}

/* A registered GPU as model_seen reads it (STORE_COLS). */
#define SEEN_COLUMNS(X)                                                                   \
    X(SN_MODEL, "g.model")                                                                \
    X(SN_MEMORY, "g.memory_mib")                                                          \
    X(SN_PROFILE, "(SELECT COUNT(*) FROM slices sl WHERE sl.gpu_id = g.id AND sl.profile = ?)") \
    X(SN_VENDOR, "g.vendor")
enum { SEEN_COLUMNS(STORE_COL_ENUM) SN__N };

/* Registered GPUs' models, memory (GiB), MIG profiles and vendors seen, for validation
 * (*vendors: bit per CP_* vendor of the matching cards). */
static int model_seen(store_tx *tx, const char *cm, int *max_mem_gib, const char *profile,
                      int *profile_seen, unsigned *vendors, gp_err *err) {
    store_stmt *s;
    int seen = 0;
    *profile_seen = 0;
    *max_mem_gib = 0;
    *vendors = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SEEN_COLUMNS) " FROM gpus g",
                         "s", profile ? profile : "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if (!inv_model_matches(cm, store_text(s, SN_MODEL))) continue;
        seen = 1;
        int v = cp_vendor_parse(store_text(s, SN_VENDOR));
        if (v >= 0) *vendors |= 1u << v;
        int mem = (int)(store_int(s, SN_MEMORY) / 1024);
        if (mem > *max_mem_gib) *max_mem_gib = mem;
        if (store_int(s, SN_PROFILE) > 0) *profile_seen = 1;
    }
    store_done(s);
    return rc < 0 ? rc : seen;
}

int inv_class_create(store_tx *tx, json_t *c, gp_err *err) {
    static const char *const fields[] = {"name", "form", "gpus", "cpus", "memory_gib",
                                         "gpu_models", "min_driver", "min_compute_cap",
                                         "topology", "pool", "vendors", "min_drivers",
                                         "stack", NULL};
    const char *name, *form_s, *min_drv, *min_cc, *topo, *pool;
    int64_t gpus = 1, cpus = 0, mem = 0;
    int present;
    inv_form form;
    int rc;
    if ((rc = jx_only_fields(c, fields, err)) || (rc = jx_get_str(c, "name", 1, &name, err)) ||
        (rc = jx_get_str(c, "form", 1, &form_s, err)) ||
        (rc = jx_get_int(c, "gpus", 0, &gpus, &present, err)) ||
        (rc = jx_get_int(c, "cpus", 1, &cpus, &present, err)) ||
        (rc = jx_get_int(c, "memory_gib", 1, &mem, &present, err)) ||
        (rc = jx_get_str(c, "min_driver", 0, &min_drv, err)) ||
        (rc = jx_get_str(c, "min_compute_cap", 0, &min_cc, err)) ||
        (rc = jx_get_str(c, "topology", 0, &topo, err)) ||
        (rc = jx_get_str(c, "pool", 0, &pool, err)))
        return rc;
    /* names like "a100-80g.1x" carry a dot */
    size_t nl = strlen(name);
    for (size_t i = 0; i < nl; i++)
        if (!(islower((unsigned char)name[i]) || isdigit((unsigned char)name[i]) ||
              name[i] == '-' || name[i] == '.'))
            return gp_err_set(err, GP_EINVALID,
                              "class name: lower-case letters, digits, '-' and '.'");
    if (nl == 0 || nl > 63) return gp_err_set(err, GP_EINVALID, "class name: 1-63 characters");
    if ((rc = inv_form_parse(form_s, &form, err))) return rc;
    if (gpus < 1 || gpus > 64) return gp_err_set(err, GP_EINVALID, "gpus must be 1..64");
    if (form.kind != FORM_WHOLE && gpus != 1)
        return gp_err_set(err, GP_EINVALID, "a %s class has exactly one slice per unit",
                          form.kind == FORM_MIG ? "MIG" : "shared");
    if (cpus < 0 || cpus > 4096 || mem < 0 || mem > 65536)
        return gp_err_set(err, GP_EINVALID, "cpus must be 0..4096 and memory_gib 0..65536");
    if (!topo) topo = "any";
    if (strcmp(topo, "any") && strcmp(topo, "nvlink") && strcmp(topo, "same-numa"))
        return gp_err_set(err, GP_EINVALID, "topology must be any, nvlink or same-numa");
    if (strcmp(topo, "any") != 0 && gpus < 2)
        return gp_err_set(err, GP_EINVALID, "topology constraints need gpus >= 2");
    if (min_drv && *min_drv && !cp_version_valid(min_drv))
        return gp_err_set(err, GP_EINVALID, "min_driver must be a dotted version like 535.104");
    /* compatibility rules: vendors, driver minimum per vendor, stack (compat.h) */
    cp_rules rules;
    char rwhy[200];
    json_t *md = json_object_get(c, "min_drivers");
    json_t *mdrv = md && json_is_object(md) ? json_deep_copy(md) : md ? json_incref(md) : json_object();
    if (min_drv && *min_drv && json_is_object(mdrv)) {
        json_t *nv = json_object_get(mdrv, "nvidia");
        if (nv && (!json_is_string(nv) || strcmp(json_string_value(nv), min_drv))) {
            json_decref(mdrv);
            return gp_err_set(err, GP_EINVALID,
                              "min_driver and min_drivers.nvidia disagree (min_driver is NVIDIA's)");
        }
        json_object_set_new(mdrv, "nvidia", json_string(min_drv));
    }
    if (cp_rules_parse(json_object_get(c, "vendors"), mdrv, json_object_get(c, "stack"), &rules,
                       rwhy, sizeof rwhy)) {
        json_decref(mdrv);
        return gp_err_set(err, GP_EINVALID, "%s", rwhy);
    }
    json_decref(mdrv);
    json_t *models = json_object_get(c, "gpu_models");
    if (!json_is_array(models) || json_array_size(models) == 0 || json_array_size(models) > 32)
        return gp_err_set(err, GP_EINVALID, "gpu_models must list 1..32 models");
    /* feasibility: at least one listed model can ever satisfy the form */
    size_t i;
    json_t *m;
    char why[200] = "";
    int feasible = 0;
    json_array_foreach(models, i, m) {
        const char *model = json_string_value(m);
        if (!model || !*model || strlen(model) > 60)
            return gp_err_set(err, GP_EINVALID, "gpu_models must hold model names");
        int known_mem = 0, seen_mem = 0, prof_seen = 0;
        unsigned seen_vendors = 0;
        const char *const *profiles = inv_model_mig_profiles(model, &known_mem);
        int seen = model_seen(tx, model, &seen_mem, form.kind == FORM_MIG ? form.profile : NULL,
                              &prof_seen, &seen_vendors, err);
        if (seen < 0) return seen;
        if (!profiles && !seen) {
            snprintf(why, sizeof why, "model %s is unknown and no registered GPU matches it",
                     model);
            continue;
        }
        /* the model's vendors (known table, registered cards): one the rules accept, whose
         * runtime the class's stack rule names when it has one */
        int kv = known_vendor(model);
        unsigned mv = seen_vendors | (kv >= 0 ? 1u << kv : 0), okv = 0;
        int any_stack = 0;
        for (int r = 0; r < CP_NRUNTIMES; r++) any_stack |= rules.stack.ver[r][0] != 0;
        for (int v = 0; v < CP_NVENDORS; v++)
            if ((mv & (1u << v)) && (!rules.vendors || (rules.vendors & (1u << v))) &&
                (!any_stack || rules.stack.ver[cp_vendor_runtime(v)][0]))
                okv |= 1u << v;
        if (mv && !okv) {
            char vs[32] = "";
            for (int v = 0; v < CP_NVENDORS; v++)
                if (mv & (1u << v))
                    snprintf(vs + strlen(vs), sizeof vs - strlen(vs), "%s%s", vs[0] ? "/" : "",
                             cp_vendor_name(v));
            snprintf(why, sizeof why, "model %s (%s) is excluded by the class's %s", model, vs,
                     rules.vendors && !(rules.vendors & mv) ? "vendors"
                                                            : "stack rule (no runtime of its vendor)");
            continue;
        }
        int mem_gib = seen_mem > known_mem ? seen_mem : known_mem;
        if (form.kind == FORM_MIG) {
            int ok = prof_seen;
            for (const char *const *p = profiles; p && *p && !ok; p++)
                ok = strcmp(*p, form.profile) == 0;
            if (!ok) {
                snprintf(why, sizeof why, "model %s offers no MIG profile %s", model, form.profile);
                continue;
            }
        } else if (form.kind == FORM_SHARED && form.memory_gib > mem_gib) {
            snprintf(why, sizeof why, "model %s has %d GiB, less than a %d GiB slice", model,
                     mem_gib, form.memory_gib);
            continue;
        }
        feasible = 1;
    }
    if (!feasible) return gp_err_set(err, GP_EINVALID, "no GPU could ever satisfy this class: %s", why);
    /* the rules, stored canonically: vendors in CP_* order, minimums and stack as parsed */
    json_t *vj = json_array(), *mj = json_object();
    for (int v = 0; v < CP_NVENDORS; v++) {
        if (rules.vendors & (1u << v)) json_array_append_new(vj, json_string(cp_vendor_name(v)));
        if (rules.min_driver[v][0])
            json_object_set_new(mj, cp_vendor_name(v), json_string(rules.min_driver[v]));
    }
    json_t *sj = cp_stack_json(&rules.stack);
    char *models_text = jx_dump(models), *vt = jx_dump(vj), *mt = jx_dump(mj), *st = jx_dump(sj);
    json_decref(vj);
    json_decref(mj);
    json_decref(sj);
    /* "partition:<profile>" is kept as "mig:<profile>", the one spelling the store knows */
    char form_c[40];
    snprintf(form_c, sizeof form_c, "%s", form_s);
    if (form.kind == FORM_MIG) snprintf(form_c, sizeof form_c, "mig:%s", form.profile);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO classes (name, form, gpus, cpus, memory_gib, gpu_models,"
                    " min_driver, min_compute_cap, topology, pool, created_at, vendors,"
                    " min_drivers, stack)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    "ssiiisssssisss", name, form_c, gpus, cpus, mem, models_text,
                    rules.min_driver[CP_NVIDIA], min_cc ? min_cc : "", topo, pool, gt_now_us(),
                    vt ? vt : "[]", mt ? mt : "{}", st ? st : "{}");
    free(models_text);
    free(vt);
    free(mt);
    free(st);
    if (rc == GP_ECONFLICT) return gp_err_set(err, rc, "class '%s' already exists", name);
    if (rc == GP_EINVALID) return gp_err_set(err, rc, "pool '%s' does not exist", pool ? pool : "");
    return rc;
}

/* How many live jobs use a class (STORE_COLS). */
#define CLASS_LIVE_COLUMNS(X) X(CL_LIVE, "COUNT(*)")
enum { CLASS_LIVE_COLUMNS(STORE_COL_ENUM) CL__N };

int inv_class_delete(store_tx *tx, const char *name, gp_err *err) {
    store_stmt *s;
    int rc0 = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(CLASS_LIVE_COLUMNS) " FROM jobs WHERE class = ?"
                          " AND state IN ('queued','admitted','running')",
                          "s", name);
    if (rc0) return rc0;
    rc0 = store_step(s, err);
    int64_t live = rc0 > 0 ? store_int(s, CL_LIVE) : 0;
    store_done(s);
    if (rc0 < 0) return rc0;
    if (live)
        return gp_err_set(err, GP_ECONFLICT, "class '%s' is used by %lld live jobs", name,
                          (long long)live);
    int changes = 0;
    int rc = store_exec(tx, &changes, err, "DELETE FROM classes WHERE name = ?", "s", name);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
}

int inv_version_at_least(const char *have, const char *min) {
    if (!min || !*min) return 1;
    if (!have || !*have) return 0;
    while (*min) {
        long a = strtol(have, (char **)&have, 10), b = strtol(min, (char **)&min, 10);
        if (a != b) return a > b;
        if (*have == '.') have++;
        if (*min == '.') min++;
        if (!*have && *min) return 0;
    }
    return 1;
}

/* A class's row as inv_class_list reads it (STORE_COLS). */
#define CLASS_COLUMNS(X)                                                                  \
    X(CC_NAME, "name")                                                                    \
    X(CC_FORM, "form")                                                                    \
    X(CC_GPUS, "gpus")                                                                    \
    X(CC_CPUS, "cpus")                                                                    \
    X(CC_MEMORY, "memory_gib")                                                            \
    X(CC_MODELS, "gpu_models")                                                            \
    X(CC_MIN_DRIVER, "min_driver")                                                        \
    X(CC_MIN_CC, "min_compute_cap")                                                       \
    X(CC_TOPOLOGY, "topology")                                                            \
    X(CC_POOL, "COALESCE(pool, '')")                                                      \
    X(CC_CREATED, "created_at")                                                           \
    X(CC_VENDORS, "vendors")                                                              \
    X(CC_MIN_DRIVERS, "min_drivers")                                                      \
    X(CC_STACK, "stack")
enum { CLASS_COLUMNS(STORE_COL_ENUM) CC__N };

/* A ready GPU as the class capacity count reads it, with what open bindings hold of it
 * (STORE_COLS).  Its parameters, in order: the MIG profile twice (CA_SLICES, CA_MIG_HELD). */
#define CAP_COLUMNS(X)                                                                    \
    X(CA_NODE, "n.name")                                                                  \
    X(CA_NODE_CPUS, "n.cpus")                                                             \
    X(CA_NODE_MEMORY, "n.memory_gib")                                                     \
    X(CA_DRIVER, "g.driver_version")                                                      \
    X(CA_MODEL, "g.model")                                                                \
    X(CA_MEMORY, "g.memory_mib")                                                          \
    X(CA_MODE, "g.mode")                                                                  \
    X(CA_HEALTH, "g.health")                                                              \
    X(CA_COMPUTE_CAP, "g.compute_cap")                                                    \
    X(CA_SLICES, "(SELECT COUNT(*) FROM slices sl WHERE sl.gpu_id = g.id"                 \
                 "  AND sl.profile = ?)")                                                 \
    X(CA_WHOLE_HELD, "(SELECT COUNT(*) FROM bindings b WHERE b.gpu_uuid = g.uuid"         \
                     "  AND b.end_us IS NULL AND b.form = 'whole')")                      \
    X(CA_MIG_HELD, "(SELECT COUNT(*) FROM bindings b JOIN slices sl ON sl.uuid = b.slice_uuid" \
                   "  WHERE sl.gpu_id = g.id AND sl.profile = ? AND b.end_us IS NULL)")   \
    X(CA_SHARED_MEM, "(SELECT COALESCE(SUM(b.shared_mem_gib), 0) FROM bindings b"         \
                     "  WHERE b.gpu_uuid = g.uuid AND b.end_us IS NULL)")                 \
    X(CA_SHARED_PCT, "(SELECT COALESCE(SUM(b.shared_pct), 0) FROM bindings b"             \
                     "  WHERE b.gpu_uuid = g.uuid AND b.end_us IS NULL)")                 \
    X(CA_VENDOR, "g.vendor")                                                              \
    X(CA_STACK, "g.stack")
enum { CAP_COLUMNS(STORE_COL_ENUM) CA__N };

int inv_class_list(store_tx *tx, const health_policy *pol, const char *only, json_t **items,
                   gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CLASS_COLUMNS) " FROM classes"
                         " WHERE (? IS NULL OR name = ?) ORDER BY name",
                         "ss", only, only);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *models = json_loads(store_text(s, CC_MODELS), 0, NULL);
        json_t *o = json_pack(
            "{s:s,s:s,s:I,s:I,s:I,s:o,s:s,s:s,s:s}", "name", store_text(s, CC_NAME), "form",
            store_text(s, CC_FORM), "gpus", (json_int_t)store_int(s, CC_GPUS), "cpus",
            (json_int_t)store_int(s, CC_CPUS), "memory_gib", (json_int_t)store_int(s, CC_MEMORY),
            "gpu_models", models ? models : json_array(), "min_driver",
            store_text(s, CC_MIN_DRIVER), "min_compute_cap", store_text(s, CC_MIN_CC), "topology",
            store_text(s, CC_TOPOLOGY));
        if (store_text(s, CC_POOL)[0])
            json_object_set_new(o, "pool", json_string(store_text(s, CC_POOL)));
        json_t *vj = json_loads(store_text(s, CC_VENDORS), 0, NULL),
               *mj = json_loads(store_text(s, CC_MIN_DRIVERS), 0, NULL),
               *sj = json_loads(store_text(s, CC_STACK), 0, NULL);
        json_object_set_new(o, "vendors", json_is_array(vj) ? vj : json_array());
        json_object_set_new(o, "min_drivers", json_is_object(mj) ? mj : json_object());
        json_object_set_new(o, "stack", json_is_object(sj) ? sj : json_object());
        if (!json_is_array(vj)) json_decref(vj);
        if (!json_is_object(mj)) json_decref(mj);
        if (!json_is_object(sj)) json_decref(sj);
        json_array_append_new(arr, o);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    /* capacity per class, from allocatable GPUs only */
    size_t i;
    json_t *cl;
    json_array_foreach(arr, i, cl) {
        inv_form form;
        inv_form_parse(json_string_value(json_object_get(cl, "form")), &form, NULL);
        json_int_t per_unit = json_integer_value(json_object_get(cl, "gpus"));
        json_int_t ccpu = json_integer_value(json_object_get(cl, "cpus"));
        json_int_t cmem = json_integer_value(json_object_get(cl, "memory_gib"));
        const char *pool = json_string_value(json_object_get(cl, "pool"));
        const char *min_cc = json_string_value(json_object_get(cl, "min_compute_cap"));
        cp_rules rules;
        char rwhy[160];
        if (cp_rules_parse(json_object_get(cl, "vendors"), json_object_get(cl, "min_drivers"),
                           json_object_get(cl, "stack"), &rules, rwhy, sizeof rwhy))
            memset(&rules, 0, sizeof rules);
        json_int_t total = 0;
        /* per node: count qualifying GPUs (or slices), then the units they make */
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CAP_COLUMNS)
                         " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE n.state = 'ready' AND n.admin_state = 'none'"
                         " AND g.admin_state = 'none' AND (? IS NULL OR n.pool = ?)"
                         " ORDER BY n.name",
                         "ssss", form.profile, form.profile, pool, pool);
        if (rc) break;
        char cur[64] = "";
        json_int_t node_units = 0, node_cpus = 0, node_mem = 0, node_free = 0, free_total = 0;
        for (;;) {
            int st = store_step(s, err);
            if (st < 0) {
                rc = st;
                break;
            }
            if (st == 0 || strcmp(cur, store_text(s, CA_NODE)) != 0) {
                /* close the previous node: limited by its CPUs and memory too */
                if (cur[0]) {
                    json_int_t units = form.kind == FORM_WHOLE ? node_units / per_unit : node_units;
                    json_int_t fr = form.kind == FORM_WHOLE ? node_free / per_unit : node_free;
                    if (ccpu > 0 && node_cpus / ccpu < units) units = node_cpus / ccpu;
                    if (cmem > 0 && node_mem / cmem < units) units = node_mem / cmem;
                    if (fr > units) fr = units;
                    total += units;
                    free_total += fr;
                }
                if (st == 0) break;
                snprintf(cur, sizeof cur, "%s", store_text(s, CA_NODE));
                node_units = 0;
                node_free = 0;
                node_cpus = store_int(s, CA_NODE_CPUS);
                node_mem = store_int(s, CA_NODE_MEMORY);
            }
            /* the compatibility rules, as the scheduler applies them (compat.h); the
             * compute capability minimum is NVIDIA's */
            cp_stack cst;
            json_t *gst = json_loads(store_text(s, CA_STACK), 0, NULL);
            if (cp_stack_parse(gst, &cst, rwhy, sizeof rwhy)) memset(&cst, 0, sizeof cst);
            json_decref(gst);
            int gv = cp_vendor_parse(store_text(s, CA_VENDOR));
            cp_card card = {gv < 0 ? CP_NVIDIA : gv, store_text(s, CA_DRIVER), &cst};
            int ok = health_allocatable(pol, health_parse(store_text(s, CA_HEALTH))) &&
                     cp_card_check(&rules, NULL, &card) == CP_OK &&
                     (card.vendor != CP_NVIDIA ||
                      inv_version_at_least(store_text(s, CA_COMPUTE_CAP), min_cc));
            size_t k;
            json_t *m;
            int model_ok = 0;
            json_array_foreach(json_object_get(cl, "gpu_models"), k, m) if (
                inv_model_matches(json_string_value(m), store_text(s, CA_MODEL))) model_ok = 1;
            if (!ok || !model_ok) continue;
            const char *mode = store_text(s, CA_MODE);
            if (form.kind == FORM_WHOLE && strcmp(mode, "whole") == 0) {
                node_units++;
                node_free += store_int(s, CA_WHOLE_HELD) == 0;
            } else if (form.kind == FORM_MIG && strcmp(mode, "mig") == 0) {
                node_units += store_int(s, CA_SLICES);
                node_free += store_int(s, CA_SLICES) - store_int(s, CA_MIG_HELD);
            } else if (form.kind == FORM_SHARED && strcmp(mode, "shared") == 0) {
                json_int_t mem = store_int(s, CA_MEMORY) / 1024;
                json_int_t by_mem = mem / form.memory_gib, by_pct = 100 / form.percent;
                node_units += by_mem < by_pct ? by_mem : by_pct;
                json_int_t fm = (mem - store_int(s, CA_SHARED_MEM)) / form.memory_gib;
                json_int_t fp = (100 - store_int(s, CA_SHARED_PCT)) / form.percent;
                node_free += fm < fp ? (fm > 0 ? fm : 0) : (fp > 0 ? fp : 0);
            }
        }
        store_done(s);
        if (rc < 0) break;
        rc = GP_OK;
        /* free: what open bindings leave (CPU and memory held by running jobs not counted) */
        json_object_set_new(cl, "capacity", json_pack("{s:I,s:I}", "total", total, "free", free_total));
    }
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

/* ---- pools ---- */

/* Validate an optional list of names; *out is its JSON text (free), or NULL when absent. */
static int names_array(json_t *v, const char *key, int classes, char **out, gp_err *err) {
    size_t i;
    json_t *e;
    *out = NULL;
    if (!v) return GP_OK;
    json_incref(v);
    if (!json_is_array(v) || json_array_size(v) > 256) {
        json_decref(v);
        return gp_err_set(err, GP_EINVALID, "%s must be an array of names", key);
    }
    json_array_foreach(v, i, e) {
        const char *n = json_string_value(e);
        int ok = n && (classes ? (strcmp(n, "production") == 0 || strcmp(n, "development") == 0 ||
                                  strcmp(n, "research") == 0)
                               : gp_name_valid(n));
        if (!ok) {
            json_decref(v);
            return gp_err_set(err, GP_EINVALID, "%s holds an invalid name", key);
        }
    }
    *out = jx_dump(v);
    json_decref(v);
    return GP_OK;
}

int inv_pool_put(store_tx *tx, const char *name, json_t *spec, int create, gp_err *err) {
    static const char *const fields[] = {"name", "description", "tenants", "project_classes",
                                         "borrow_half_life_seconds", NULL};
    const char *desc;
    char *tenants = NULL, *classes = NULL;
    int rc;
    if (!gp_name_valid(name)) return gp_err_set(err, GP_EINVALID, "pool name: [a-z0-9-]");
    if ((rc = jx_only_fields(spec, fields, err)) ||
        (rc = jx_get_str(spec, "description", 0, &desc, err)))
        return rc;
    /* fair use's half-life in this pool (share.h): null, the scheduler policy's */
    json_t *hl = json_object_get(spec, "borrow_half_life_seconds");
    if (hl && !json_is_null(hl) &&
        (!json_is_integer(hl) || json_integer_value(hl) < SHARE_HALF_LIFE_MIN ||
         json_integer_value(hl) > SHARE_HALF_LIFE_MAX))
        return gp_err_set(err, GP_EINVALID,
                          "borrow_half_life_seconds must be %d..%d (or null: the scheduler "
                          "policy's)",
                          SHARE_HALF_LIFE_MIN, SHARE_HALF_LIFE_MAX);
    int64_t hls = hl && !json_is_null(hl) ? json_integer_value(hl) : 0;
    if (desc && strlen(desc) > 200) return gp_err_set(err, GP_EINVALID, "description too long");
    if ((rc = names_array(json_object_get(spec, "tenants"), "tenants", 0, &tenants, err)) ||
        (rc = names_array(json_object_get(spec, "project_classes"), "project_classes", 1,
                          &classes, err)))
        goto out;
    if (create) {
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO pools (name, description, tenants, project_classes,"
                        " borrow_half_life_s, created_at) VALUES (?,?,?,?,NULLIF(?, 0),?)",
                        "ssssii", name, desc ? desc : "", tenants ? tenants : "[]",
                        classes ? classes : "[]", hls, gt_now_us());
        if (rc == GP_ECONFLICT) gp_err_set(err, rc, "pool '%s' already exists", name);
    } else {
        int changes = 0;
        rc = store_exec(tx, &changes, err,
                        /* omitted fields keep their value: an update never widens by accident */
                        "UPDATE pools SET description = COALESCE(?, description),"
                        " tenants = COALESCE(?, tenants),"
                        " project_classes = COALESCE(?, project_classes),"
                        " borrow_half_life_s = CASE WHEN ? = 0 THEN borrow_half_life_s"
                        " ELSE NULLIF(?, 0) END WHERE name = ?",
                        "sssiis", desc, tenants, classes, (int64_t)(hl != NULL), hls, name);
        if (!rc && !changes) rc = gp_err_set(err, GP_ENOTFOUND, "not found");
    }
out:
    free(tenants);
    free(classes);
    return rc;
}

/* How many nodes and classes a pool still holds (STORE_COLS). */
#define POOL_USE_COLUMNS(X)                                                               \
    X(PU_USERS, "(SELECT COUNT(*) FROM nodes WHERE pool = ?)"                             \
                " + (SELECT COUNT(*) FROM classes WHERE pool = ?)")
enum { POOL_USE_COLUMNS(STORE_COL_ENUM) PU__N };

/* A pool's row as inv_pool_list reads it (STORE_COLS). */
#define POOL_COLUMNS(X)                                                                   \
    X(PC_NAME, "p.name")                                                                  \
    X(PC_DESCRIPTION, "p.description")                                                    \
    X(PC_TENANTS, "p.tenants")                                                            \
    X(PC_CLASSES, "p.project_classes")                                                    \
    X(PC_HALF_LIFE, "p.borrow_half_life_s")                                               \
    X(PC_NODES, "(SELECT COUNT(*) FROM nodes n WHERE n.pool = p.name)")
enum { POOL_COLUMNS(STORE_COL_ENUM) PC__N };

int inv_pool_delete(store_tx *tx, const char *name, gp_err *err) {
    store_stmt *s;
    if (strcmp(name, "default") == 0)
        return gp_err_set(err, GP_ECONFLICT, "the default pool cannot be deleted");
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(POOL_USE_COLUMNS),
                         "ss", name, name);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t users = rc > 0 ? store_int(s, PU_USERS) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if (users) return gp_err_set(err, GP_ECONFLICT, "pool '%s' still holds nodes or classes", name);
    int changes = 0;
    rc = store_exec(tx, &changes, err, "DELETE FROM pools WHERE name = ?", "s", name);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
}

int inv_pool_list(store_tx *tx, const char *only, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(POOL_COLUMNS)
                         " FROM pools p WHERE (? IS NULL OR p.name = ?) ORDER BY p.name",
                         "ss", only, only);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *t = json_loads(store_text(s, PC_TENANTS), 0, NULL),
               *c = json_loads(store_text(s, PC_CLASSES), 0, NULL);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:o,s:o,s:I}", "name",
                                             store_text(s, PC_NAME), "description",
                                             store_text(s, PC_DESCRIPTION), "tenants",
                                             t ? t : json_array(), "project_classes",
                                             c ? c : json_array(), "borrow_half_life_seconds",
                                             store_isnull(s, PC_HALF_LIFE)
                                                 ? json_null()
                                                 : json_integer(store_int(s, PC_HALF_LIFE)),
                                             "nodes", (json_int_t)store_int(s, PC_NODES)));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}
