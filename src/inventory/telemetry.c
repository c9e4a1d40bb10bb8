/*
 * telemetry.c - bounding the agents' GPU samples and exporting them with the
 * holder of each card (see telemetry.h).
 *
 * The export is two reads in the scrape's transaction: the GPUs of ready
 * nodes with their stored signals, and the open bindings (sorted here by
 * card, largest share first, so the holder is found by binary search).
 */
#include "telemetry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bounding (pure) ---- */

/* Clamp the integer o[k] into [lo, hi]; drop it when it is not an integer, or below lo and
 * drop_low is set. */
static void clamp(json_t *o, const char *k, json_int_t lo, json_int_t hi, int drop_low) {
    json_t *v = json_object_get(o, k);
    if (!v) return;
    if (!json_is_integer(v)) {
        json_object_del(o, k);
        return;
    }
    json_int_t x = json_integer_value(v);
    if (x < lo && drop_low) {
        json_object_del(o, k);
        return;
    }
    if (x < lo) json_integer_set(v, lo);
    else if (x > hi) json_integer_set(v, hi);
}

int telemetry_bound(json_t *gpus, int max_gpus, gp_err *err) {
    static const char *const ecc_keys[] = {"volatile_corrected", "volatile_uncorrected",
                                           "aggregate_corrected", "aggregate_uncorrected"};
    if (!json_is_array(gpus)) return GP_OK;
    if (max_gpus < 0) max_gpus = 0;
    if (json_array_size(gpus) > (size_t)max_gpus)
        return gp_err_set(err, GP_EINVALID,
                          "a heartbeat lists at most the node's %d GPUs (it listed %zu)", max_gpus,
                          json_array_size(gpus));
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        json_t *s = json_object_get(g, "signals");
        if (!json_is_object(s)) continue;
        json_t *ut = json_object_get(s, "utilization");
        if (json_is_object(ut)) {
            clamp(ut, "gpu", 0, 100, 0);
            clamp(ut, "memory", 0, 100, 0);
        }
        clamp(s, "temperature_c", TEL_TEMP_MIN_C, TEL_TEMP_MAX_C, 0);
        clamp(s, "slowdown_c", 0, TEL_TEMP_MAX_C, 0);
        clamp(s, "memory_used_mib", 0, TEL_MEMORY_MAX_MIB, 0);
        clamp(s, "power_mw", 0, TEL_POWER_MAX_MW, 0);
        clamp(s, "xid_total", 0, TEL_COUNT_MAX, 1);
        clamp(s, "retired_pages_pending", 0, TEL_COUNT_MAX, 1);
        json_t *ecc = json_object_get(s, "ecc");
        if (json_is_object(ecc))
            for (size_t k = 0; k < sizeof ecc_keys / sizeof *ecc_keys; k++)
                clamp(ecc, ecc_keys[k], 0, TEL_COUNT_MAX, 1);
    }
    return GP_OK;
}

/* Who a node's agent is and how many GPUs it has (STORE_COLS). */
#define TEL_NODE_COLUMNS(X)                                                               \
    X(TN_AGENT, "n.agent_user_id")                                                        \
    X(TN_GPUS, "(SELECT COUNT(*) FROM gpus g WHERE g.node_id = n.id)")
enum { TEL_NODE_COLUMNS(STORE_COL_ENUM) TN__N };

int telemetry_bound_node(store_tx *tx, const char *node, const char *agent_user_id,
                         json_t *gpus, gp_err *err) {
    if (!json_is_array(gpus)) return GP_OK;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(TEL_NODE_COLUMNS) " FROM nodes n WHERE n.name = ?",
                         "s", node);
    if (rc) return rc;
    rc = store_step(s, err);
    int mine = rc > 0 && agent_user_id && strcmp(store_text(s, TN_AGENT), agent_user_id) == 0;
    int64_t n = rc > 0 ? store_int(s, TN_GPUS) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if (!mine) return GP_OK;
    return telemetry_bound(gpus, n > 1 << 20 ? 1 << 20 : (int)n, err);
}

/* ---- export ---- */

typedef struct holder {
    char uuid[96], tenant[64], project[64], job[40];
    int64_t weight, start;
    int count; /* open bindings on the card (set on the first of its run) */
} holder;

typedef struct gpu_row {
    char node[64], uuid[96], model[96], form[16];
    int64_t memory_mib;
    json_t *sig; /* parsed signals, owned */
    const holder *h;
    int bindings;
} gpu_row;

static int holder_cmp(const void *a, const void *b) {
    const holder *x = a, *y = b;
    int c = strcmp(x->uuid, y->uuid);
    if (c) return c;
    if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return strcmp(x->job, y->job);
}

static int holder_key(const void *k, const void *e) { return strcmp(k, ((const holder *)e)->uuid); }

static void label(strbuf *sb, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') sb_addc(sb, '\\');
        if (*v == '\n') sb_adds(sb, "\\n");
        else sb_addc(sb, *v);
    }
}

static void labels(strbuf *sb, const gpu_row *g, int holders) {
    sb_adds(sb, "{node=\"");
    label(sb, g->node);
    sb_adds(sb, "\",gpu=\"");
    label(sb, g->uuid);
    sb_adds(sb, "\",model=\"");
    label(sb, g->model);
    sb_adds(sb, "\",form=\"");
    label(sb, g->form);
    if (holders) {
        sb_adds(sb, "\",tenant=\"");
        label(sb, g->h ? g->h->tenant : "");
        sb_adds(sb, "\",project=\"");
        label(sb, g->h ? g->h->project : "");
        sb_adds(sb, "\",job_id=\"");
        label(sb, g->h ? g->h->job : "");
    }
    sb_addc(sb, '"');
}

/* An integer field of the signals (dotted path of depth 1 or 2); 0 when absent or negative. */
static int field(json_t *sig, const char *obj, const char *k, int64_t *out) {
    json_t *o = obj ? json_object_get(sig, obj) : sig;
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
    *out = (int64_t)json_integer_value(v);
    return 1;
}

enum { F_UTIL, F_MEM_USED, F_MEM_TOTAL, F_TEMP, F_POWER, F_ECC, F_XID, F_BINDINGS, F_N };

static const struct {
    const char *name, *type, *help;
} families[F_N] = {
    {"gpupool_gpu_utilization_ratio", "gauge",
     "Fraction of the last sample period the GPU was busy (NVML utilization.gpu / 100)."},
    {"gpupool_gpu_memory_used_bytes", "gauge", "GPU framebuffer memory in use."},
    {"gpupool_gpu_memory_total_bytes", "gauge", "GPU framebuffer memory in all."},
    {"gpupool_gpu_temperature_celsius", "gauge", "GPU core temperature."},
    {"gpupool_gpu_power_watts", "gauge", "GPU board power draw."},
    {"gpupool_gpu_ecc_errors_total", "counter",
     "ECC memory errors over the card's life (aggregate; volatile when that is all it reports)."},
    {"gpupool_gpu_xid_errors_total", "counter", "Xid events the node's agent saw since it started."},
    {"gpupool_gpu_bindings", "gauge", "Open bindings (jobs' units) on the GPU now."},
};

/* Append one family: HELP, TYPE and a sample per GPU that has the figure. */
static void family(strbuf *out, int f, const gpu_row *rows, int n, int holders) {
    if (f == F_BINDINGS && !holders) return;
    sb_addf(out, "# HELP %s %s\n# TYPE %s %s\n", families[f].name, families[f].help,
            families[f].name, families[f].type);
    for (int i = 0; i < n; i++) {
        const gpu_row *g = &rows[i];
        int64_t v = 0, w = 0;
        switch (f) {
        case F_UTIL:
            if (!field(g->sig, "utilization", "gpu", &v)) continue;
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %.2f\n", (double)v / 100.0);
            break;
        case F_MEM_USED:
            if (!field(g->sig, NULL, "memory_used_mib", &v)) continue;
            if (g->memory_mib > 0 && v > g->memory_mib) v = g->memory_mib;
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %lld\n", (long long)v * 1048576LL);
            break;
        case F_MEM_TOTAL:
            if (g->memory_mib <= 0) continue;
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %lld\n", (long long)g->memory_mib * 1048576LL);
            break;
        case F_TEMP:
            if (!field(g->sig, NULL, "temperature_c", &v)) continue;
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %lld\n", (long long)v);
            break;
        case F_POWER:
            if (!field(g->sig, NULL, "power_mw", &v)) continue;
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %.3f\n", (double)v / 1000.0);
            break;
        case F_ECC:
            for (int k = 0; k < 2; k++) {
                const char *agg = k ? "aggregate_uncorrected" : "aggregate_corrected";
                const char *vol = k ? "volatile_uncorrected" : "volatile_corrected";
                if (!field(g->sig, "ecc", agg, &w) && !field(g->sig, "ecc", vol, &w)) continue;
                sb_adds(out, families[f].name);
                labels(out, g, holders);
                sb_addf(out, ",kind=\"%s\"} %lld\n", k ? "uncorrected" : "corrected", (long long)w);
            }
            break;
        case F_XID:
            if (!field(g->sig, NULL, "xid_total", &v)) continue;
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %lld\n", (long long)v);
            break;
        default:
            sb_adds(out, families[f].name);
            labels(out, g, holders);
            sb_addf(out, "} %d\n", g->bindings);
        }
    }
}

/* An open binding's row as load_holders reads it (STORE_COLS). */
#define TEL_HOLDER_COLUMNS(X)                                                             \
    X(TH_GPU, "gpu_uuid")                                                                 \
    X(TH_TENANT, "tenant")                                                                \
    X(TH_PROJECT, "project")                                                              \
    X(TH_JOB, "job_id")                                                                   \
    X(TH_WEIGHT, "weight_milli")                                                          \
    X(TH_START, "start_us")
enum { TEL_HOLDER_COLUMNS(STORE_COL_ENUM) TH__N };

/* The open bindings, sorted by card then share (largest first); each run's first has the count. */
static int load_holders(store_tx *tx, holder **out, int *n, gp_err *err) {
    *out = NULL;
    *n = 0;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(TEL_HOLDER_COLUMNS)
                         " FROM bindings WHERE end_us IS NULL",
                         "");
    if (rc) return rc;
    int cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (*n == cap) {
            int nc = cap ? cap * 2 : 64;
            holder *nh = realloc(*out, (size_t)nc * sizeof *nh);
            if (!nh) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            *out = nh;
            cap = nc;
        }
        holder *h = &(*out)[(*n)++];
        memset(h, 0, sizeof *h);
        snprintf(h->uuid, sizeof h->uuid, "%s", store_text(s, TH_GPU));
        snprintf(h->tenant, sizeof h->tenant, "%s", store_text(s, TH_TENANT));
        snprintf(h->project, sizeof h->project, "%s", store_text(s, TH_PROJECT));
        snprintf(h->job, sizeof h->job, "%s", store_text(s, TH_JOB));
        h->weight = store_int(s, TH_WEIGHT);
        h->start = store_int(s, TH_START);
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (*n) qsort(*out, (size_t)*n, sizeof **out, holder_cmp);
    for (int i = 0; i < *n;) {
        int j = i;
        while (j < *n && strcmp((*out)[j].uuid, (*out)[i].uuid) == 0) j++;
        (*out)[i].count = j - i;
        i = j;
    }
    return GP_OK;
}

/* A ready node's GPU as telemetry_prometheus reads it (STORE_COLS). */
#define TEL_GPU_COLUMNS(X)                                                                \
    X(TG_NODE, "n.name")                                                                  \
    X(TG_UUID, "g.uuid")                                                                  \
    X(TG_MODEL, "g.model")                                                                \
    X(TG_MODE, "g.mode")                                                                  \
    X(TG_MEMORY, "g.memory_mib")                                                          \
    X(TG_SIGNALS, "g.signals")
enum { TEL_GPU_COLUMNS(STORE_COL_ENUM) TG__N };

int telemetry_prometheus(store_tx *tx, int holders, strbuf *out, gp_err *err) {
    holder *hs = NULL;
    int nh = 0, rc;
    if (holders && (rc = load_holders(tx, &hs, &nh, err))) return rc;
    store_stmt *s;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(TEL_GPU_COLUMNS) " FROM gpus g"
                     " JOIN nodes n ON n.id = g.node_id WHERE n.state = 'ready'"
                     " ORDER BY n.name, g.idx, g.uuid",
                     "");
    if (rc) {
        free(hs);
        return rc;
    }
    gpu_row *rows = NULL;
    int n = 0, cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (n == cap) {
            int nc = cap ? cap * 2 : 64;
            gpu_row *nr = realloc(rows, (size_t)nc * sizeof *nr);
            if (!nr) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            rows = nr;
            cap = nc;
        }
        gpu_row *g = &rows[n++];
        memset(g, 0, sizeof *g);
        snprintf(g->node, sizeof g->node, "%s", store_text(s, TG_NODE));
        snprintf(g->uuid, sizeof g->uuid, "%s", store_text(s, TG_UUID));
        snprintf(g->model, sizeof g->model, "%s", store_text(s, TG_MODEL));
        snprintf(g->form, sizeof g->form, "%s", store_text(s, TG_MODE));
        g->memory_mib = store_int(s, TG_MEMORY);
        const char *sig = store_text(s, TG_SIGNALS);
        g->sig = json_loads(sig ? sig : "{}", 0, NULL);
        if (!json_is_object(g->sig)) {
            json_decref(g->sig);
            g->sig = json_object();
        }
        if (nh) {
            const holder *h = bsearch(g->uuid, hs, (size_t)nh, sizeof *hs, holder_key);
            /* bsearch may land inside the card's run: step back to its first (largest share) */
            while (h && h > hs && strcmp(h[-1].uuid, g->uuid) == 0) h--;
            g->h = h;
            g->bindings = h ? h->count : 0;
        }
    }
    store_done(s);
    if (rc >= 0)
        for (int f = 0; f < F_N; f++) family(out, f, rows, n, holders);
    for (int i = 0; i < n; i++) json_decref(rows[i].sig);
    free(rows);
    free(hs);
    return rc < 0 ? rc : GP_OK;
}
