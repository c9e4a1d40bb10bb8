/*
 * health.c - health policy and evaluation (see health.h).  Pure.
 */
#include "health.h"

#include "../core/jsonx.h"

#include <stdio.h>
#include <string.h>

static const char *const names[] = {"healthy", "degraded", "failed"};

const char *health_name(int s) { return s >= 0 && s <= 2 ? names[s] : "unknown"; }

int health_parse(const char *name) {
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

/* Xids whose documented action is a GPU reset or reboot (NVIDIA's catalog). */
static const int default_fatal[] = {46,  48,  62,  64,  74,  79,  95,  109, 110, 119, 120,
                                    136, 140, 143, 144, 145, 146, 147, 148, 149, 150};
/* Application-caused or informational Xids. */
static const int default_ignored[] = {13, 31, 43, 45, 63, 68, 92, 94};

void health_policy_default(health_policy *p) {
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < sizeof default_fatal / sizeof *default_fatal; i++)
        p->fatal_xids[p->nfatal++] = default_fatal[i];
    for (size_t i = 0; i < sizeof default_ignored / sizeof *default_ignored; i++)
        p->ignored_xids[p->nignored++] = default_ignored[i];
    p->corrected_ecc_rise = 100;
    p->temperature_margin_c = 0;
    p->allocatable = 1u << HEALTH_HEALTHY;
    p->interference_action = INTF_ALERT;
    p->contention_samples = 3;
    p->contention_margin_pct = 10;
    p->contention_busy_pct = 90;
    for (int v = 0; v < HEALTH_NV; v++) p->vendor[v].uncorrectable = HEALTH_ACT_FATAL;
    p->vendor[HEALTH_V_AMD].deferred = HEALTH_ACT_DEGRADED;
    p->vendor[HEALTH_V_AMD].bad_pages_degraded = 64;
    p->vendor[HEALTH_V_AMD].bad_pages_fatal = 512;
    p->vendor[HEALTH_V_INTEL].critical = HEALTH_ACT_FATAL;
}

static const char *const vendor_keys[HEALTH_NV] = {"nvidia", "amd", "intel"};
static const char *const act_names[] = {"ignored", "degraded", "fatal"};

static int act_parse(json_t *v, const char *vendor, const char *key, int *out, gp_err *err) {
    for (int i = 0; v && json_is_string(v) && i < 3; i++)
        if (!strcmp(json_string_value(v), act_names[i])) {
            *out = i;
            return GP_OK;
        }
    return gp_err_set(err, GP_EINVALID, "vendors.%s.%s must be fatal, degraded or ignored",
                      vendor, key);
}

/* "vendors": {"amd": {"uncorrectable_ecc": "fatal", ...}}: only the keys a vendor has. */
static int vendors_parse(json_t *j, health_policy *p, gp_err *err) {
    static const char *const nv_fields[] = {"uncorrectable_ecc", NULL};
    static const char *const amd_fields[] = {"uncorrectable_ecc", "deferred_ecc",
                                             "bad_pages_degraded", "bad_pages_fatal", NULL};
    static const char *const intel_fields[] = {"uncorrectable_ecc", "critical_events", NULL};
    static const char *const *const fields[HEALTH_NV] = {nv_fields, amd_fields, intel_fields};
    if (!json_is_object(j))
        return gp_err_set(err, GP_EINVALID, "vendors must be an object: nvidia, amd, intel");
    const char *k;
    json_t *o;
    json_object_foreach(j, k, o) {
        int v = -1;
        for (int i = 0; i < HEALTH_NV; i++)
            if (!strcmp(k, vendor_keys[i])) v = i;
        if (v < 0)
            return gp_err_set(err, GP_EINVALID, "vendors: unknown vendor '%.32s' (nvidia, amd, intel)", k);
        if (!json_is_object(o)) return gp_err_set(err, GP_EINVALID, "vendors.%s must be an object", k);
        int rc;
        if ((rc = jx_only_fields(o, fields[v], err))) return rc;
        health_vendor *hv = &p->vendor[v];
        json_t *a;
        if ((a = json_object_get(o, "uncorrectable_ecc")) &&
            (rc = act_parse(a, k, "uncorrectable_ecc", &hv->uncorrectable, err)))
            return rc;
        if ((a = json_object_get(o, "deferred_ecc")) &&
            (rc = act_parse(a, k, "deferred_ecc", &hv->deferred, err)))
            return rc;
        if ((a = json_object_get(o, "critical_events")) &&
            (rc = act_parse(a, k, "critical_events", &hv->critical, err)))
            return rc;
        int64_t x;
        int present;
        if ((rc = jx_get_int(o, "bad_pages_degraded", 0, &x, &present, err))) return rc;
        if (present) {
            if (x < 0 || x > 1000000)
                return gp_err_set(err, GP_EINVALID, "vendors.amd.bad_pages_degraded must be 0..1000000");
            hv->bad_pages_degraded = x;
        }
        if ((rc = jx_get_int(o, "bad_pages_fatal", 0, &x, &present, err))) return rc;
        if (present) {
            if (x < 0 || x > 1000000)
                return gp_err_set(err, GP_EINVALID, "vendors.amd.bad_pages_fatal must be 0..1000000");
            hv->bad_pages_fatal = x;
        }
    }
    const health_vendor *a = &p->vendor[HEALTH_V_AMD];
    if (a->bad_pages_degraded && a->bad_pages_fatal && a->bad_pages_degraded > a->bad_pages_fatal)
        return gp_err_set(err, GP_EINVALID,
                          "vendors.amd.bad_pages_degraded must not exceed bad_pages_fatal");
    return GP_OK;
}

static json_t *vendors_json(const health_policy *p) {
    const health_vendor *n = &p->vendor[HEALTH_V_NVIDIA], *a = &p->vendor[HEALTH_V_AMD],
                        *i = &p->vendor[HEALTH_V_INTEL];
    return json_pack("{s:{s:s},s:{s:s,s:s,s:I,s:I},s:{s:s,s:s}}", "nvidia", "uncorrectable_ecc",
                     act_names[n->uncorrectable], "amd", "uncorrectable_ecc",
                     act_names[a->uncorrectable], "deferred_ecc", act_names[a->deferred],
                     "bad_pages_degraded", (json_int_t)a->bad_pages_degraded, "bad_pages_fatal",
                     (json_int_t)a->bad_pages_fatal, "intel", "uncorrectable_ecc",
                     act_names[i->uncorrectable], "critical_events", act_names[i->critical]);
}

static int read_ints(json_t *arr, const char *key, int *out, int *n, gp_err *err) {
    size_t i;
    json_t *v;
    if (!json_is_array(arr) || json_array_size(arr) > 64)
        return gp_err_set(err, GP_EINVALID, "%s must be an array of at most 64 integers", key);
    *n = 0;
    json_array_foreach(arr, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000)
            return gp_err_set(err, GP_EINVALID, "%s must hold Xid numbers", key);
        out[(*n)++] = (int)json_integer_value(v);
    }
    return GP_OK;
}

int health_policy_parse(json_t *j, health_policy *out, gp_err *err) {
    static const char *const fields[] = {"fatal_xids", "ignored_xids", "corrected_ecc_rise",
                                         "temperature_margin_c", "allocatable",
                                         "interference_action", "contention_samples",
                                         "contention_margin_pct", "contention_busy_pct",
                                         "vendors", NULL};
    health_policy p;
    int rc, present;
    int64_t v;
    health_policy_default(&p);
    if (!json_is_object(j)) return gp_err_set(err, GP_EINVALID, "health policy must be an object");
    if ((rc = jx_only_fields(j, fields, err))) return rc;
    json_t *a;
    if ((a = json_object_get(j, "fatal_xids")) &&
        (rc = read_ints(a, "fatal_xids", p.fatal_xids, &p.nfatal, err)))
        return rc;
    if ((a = json_object_get(j, "ignored_xids")) &&
        (rc = read_ints(a, "ignored_xids", p.ignored_xids, &p.nignored, err)))
        return rc;
    if ((rc = jx_get_int(j, "corrected_ecc_rise", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < 1) return gp_err_set(err, GP_EINVALID, "corrected_ecc_rise must be >= 1");
        p.corrected_ecc_rise = v;
    }
    if ((rc = jx_get_int(j, "temperature_margin_c", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < 0 || v > 50)
            return gp_err_set(err, GP_EINVALID, "temperature_margin_c must be 0..50");
        p.temperature_margin_c = (int)v;
    }
    if ((a = json_object_get(j, "interference_action"))) {
        int act = json_is_string(a) ? intf_action_parse(json_string_value(a)) : -1;
        if (act < 0) return gp_err_set(err, GP_EINVALID, "interference_action must be alert or stop");
        p.interference_action = act;
    }
    if ((rc = jx_get_int(j, "contention_samples", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < 1 || v > 1000)
            return gp_err_set(err, GP_EINVALID, "contention_samples must be 1..1000");
        p.contention_samples = (int)v;
    }
    if ((rc = jx_get_int(j, "contention_margin_pct", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < 0 || v > 100)
            return gp_err_set(err, GP_EINVALID, "contention_margin_pct must be 0..100");
        p.contention_margin_pct = (int)v;
    }
    if ((rc = jx_get_int(j, "contention_busy_pct", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < 1 || v > 100)
            return gp_err_set(err, GP_EINVALID, "contention_busy_pct must be 1..100");
        p.contention_busy_pct = (int)v;
    }
    if ((a = json_object_get(j, "allocatable"))) {
        size_t i;
        json_t *s;
        if (!json_is_array(a)) return gp_err_set(err, GP_EINVALID, "allocatable must be an array");
        p.allocatable = 0;
        json_array_foreach(a, i, s) {
            int st = json_is_string(s) ? health_parse(json_string_value(s)) : -1;
            if (st < 0 || st == HEALTH_FAILED)
                return gp_err_set(err, GP_EINVALID,
                                  "allocatable may hold healthy and degraded (never failed)");
            p.allocatable |= 1u << st;
        }
    }
    if ((a = json_object_get(j, "vendors")) && (rc = vendors_parse(a, &p, err))) return rc;
    for (int i = 0; i < p.nfatal; i++)
        for (int k = 0; k < p.nignored; k++)
            if (p.fatal_xids[i] == p.ignored_xids[k])
                return gp_err_set(err, GP_EINVALID, "Xid %d is both fatal and ignored",
                                  p.fatal_xids[i]);
    *out = p;
    return GP_OK;
}

json_t *health_policy_json(const health_policy *p) {
    json_t *fatal = json_array(), *ignored = json_array(), *alloc = json_array();
    for (int i = 0; i < p->nfatal; i++) json_array_append_new(fatal, json_integer(p->fatal_xids[i]));
    for (int i = 0; i < p->nignored; i++)
        json_array_append_new(ignored, json_integer(p->ignored_xids[i]));
    for (int s = 0; s < 2; s++)
        if (p->allocatable & (1u << s)) json_array_append_new(alloc, json_string(names[s]));
    return json_pack("{s:o,s:o,s:I,s:i,s:o,s:s,s:i,s:i,s:i,s:o}", "fatal_xids", fatal,
                     "ignored_xids", ignored, "corrected_ecc_rise",
                     (json_int_t)p->corrected_ecc_rise, "temperature_margin_c",
                     p->temperature_margin_c, "allocatable", alloc, "interference_action",
                     intf_action_name(p->interference_action), "contention_samples",
                     p->contention_samples, "contention_margin_pct", p->contention_margin_pct,
                     "contention_busy_pct", p->contention_busy_pct, "vendors", vendors_json(p));
}

static int64_t num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

int health_signals_same(const gpu_signals *a, const gpu_signals *b) {
    return a->ecc_volatile_sbe == b->ecc_volatile_sbe && a->ecc_volatile_dbe == b->ecc_volatile_dbe &&
           a->ecc_aggregate_sbe == b->ecc_aggregate_sbe &&
           a->ecc_aggregate_dbe == b->ecc_aggregate_dbe &&
           a->remapped_correctable == b->remapped_correctable &&
           a->remapped_uncorrectable == b->remapped_uncorrectable &&
           a->remap_pending == b->remap_pending && a->remap_failure == b->remap_failure &&
           a->retired_pages_pending == b->retired_pages_pending && a->slowdown_c == b->slowdown_c &&
           a->lost == b->lost && a->ecc_deferred == b->ecc_deferred &&
           a->bad_pages == b->bad_pages && a->nxids == 0 && b->nxids == 0 &&
           a->ncritical == 0 && b->ncritical == 0;
}

int health_signals_parse(json_t *j, gpu_signals *s, gp_err *err) {
    memset(s, 0, sizeof *s);
    if (!j) return GP_OK;
    if (!json_is_object(j)) return gp_err_set(err, GP_EINVALID, "signals must be an object");
    json_t *ecc = json_object_get(j, "ecc"), *rr = json_object_get(j, "remapped_rows");
    json_t *ut = json_object_get(j, "utilization"), *xids = json_object_get(j, "xids");
    s->ecc_volatile_sbe = num(ecc, "volatile_corrected");
    s->ecc_volatile_dbe = num(ecc, "volatile_uncorrected");
    s->ecc_aggregate_sbe = num(ecc, "aggregate_corrected");
    s->ecc_aggregate_dbe = num(ecc, "aggregate_uncorrected");
    s->remapped_correctable = num(rr, "correctable");
    s->remapped_uncorrectable = num(rr, "uncorrectable");
    s->remap_pending = json_is_true(json_object_get(rr, "pending"));
    s->remap_failure = json_is_true(json_object_get(rr, "failure"));
    s->retired_pages_pending = num(j, "retired_pages_pending");
    s->temperature_c = (int)num(j, "temperature_c");
    s->slowdown_c = (int)num(j, "slowdown_c");
    s->util_gpu = (int)num(ut, "gpu");
    s->util_memory = (int)num(ut, "memory");
    s->lost = json_is_true(json_object_get(j, "lost"));
    s->ecc_deferred = num(ecc, "deferred");
    s->bad_pages = num(j, "bad_pages");
    json_t *crit = json_object_get(j, "critical_events");
    if (crit) {
        size_t i;
        json_t *x;
        if (!json_is_array(crit)) return gp_err_set(err, GP_EINVALID, "critical_events must be an array");
        json_array_foreach(crit, i, x) {
            if (!json_is_integer(x))
                return gp_err_set(err, GP_EINVALID, "critical_events must be integers");
            if (s->ncritical < HEALTH_MAX_XIDS) s->critical[s->ncritical++] = (int)json_integer_value(x);
        }
    }
    if (xids) {
        size_t i;
        json_t *x;
        if (!json_is_array(xids)) return gp_err_set(err, GP_EINVALID, "xids must be an array");
        json_array_foreach(xids, i, x) {
            if (!json_is_integer(x)) return gp_err_set(err, GP_EINVALID, "xids must be integers");
            if (s->nxids < HEALTH_MAX_XIDS) s->xids[s->nxids++] = (int)json_integer_value(x);
        }
    }
    return GP_OK;
}

static int in(const int *a, int n, int x) {
    for (int i = 0; i < n; i++)
        if (a[i] == x) return 1;
    return 0;
}

/* A vendor signal's action: fatal -> failed, degraded -> degraded; 1 when it decided. */
static int act(int action, int want, const char *text, char *cause, size_t n) {
    if (action != want) return 0;
    snprintf(cause, n, "%s", text);
    return 1;
}

/* An uncorrectable ECC error on this card by its vendor's signals (see health.h). */
static int uncorrectable(const gpu_signals *s, const gpu_signals *prev, char *text, size_t n) {
    if (s->ecc_volatile_dbe > 0) {
        snprintf(text, n, "%lld uncorrectable %sECC errors since the last reset",
                 (long long)s->ecc_volatile_dbe, s->vendor == HEALTH_V_NVIDIA ? "(double-bit) " : "");
        return 1;
    }
    if (s->vendor != HEALTH_V_NVIDIA && prev && s->ecc_aggregate_dbe > prev->ecc_aggregate_dbe) {
        snprintf(text, n, "uncorrectable ECC errors rising: +%lld since the last heartbeat",
                 (long long)(s->ecc_aggregate_dbe - prev->ecc_aggregate_dbe));
        return 1;
    }
    return 0;
}

int health_eval(const health_policy *p, const gpu_signals *s, const gpu_signals *prev,
                int current, char *cause, size_t n) {
    cause[0] = '\0';
    int v = s->vendor >= 0 && s->vendor < HEALTH_NV ? s->vendor : HEALTH_V_NVIDIA;
    const health_vendor *hv = &p->vendor[v];
    char ue[160] = "", crit[160] = "", def[160] = "";
    int has_ue = uncorrectable(s, prev, ue, sizeof ue);
    int has_crit = v == HEALTH_V_INTEL && s->ncritical > 0;
    if (has_crit)
        snprintf(crit, sizeof crit, "critical event %d (%d since the last heartbeat)",
                 s->critical[0], s->ncritical);
    int has_def = v == HEALTH_V_AMD && s->ecc_deferred > 0;
    if (has_def)
        snprintf(def, sizeof def, "%lld deferred ECC errors (poisoned memory)",
                 (long long)s->ecc_deferred);
    /* failures first: the most serious cause wins */
    if (s->lost) {
        snprintf(cause, n, "GPU unavailable (fallen off the bus or lost)");
        return HEALTH_FAILED;
    }
    if (v == HEALTH_V_NVIDIA)
        for (int i = 0; i < s->nxids; i++)
            if (in(p->fatal_xids, p->nfatal, s->xids[i])) {
                snprintf(cause, n, "Xid %d (fatal by policy: reset or reboot the GPU)", s->xids[i]);
                return HEALTH_FAILED;
            }
    if (has_ue && act(hv->uncorrectable, HEALTH_ACT_FATAL, ue, cause, n)) return HEALTH_FAILED;
    if (has_crit && act(hv->critical, HEALTH_ACT_FATAL, crit, cause, n)) return HEALTH_FAILED;
    if (has_def && act(hv->deferred, HEALTH_ACT_FATAL, def, cause, n)) return HEALTH_FAILED;
    if (v == HEALTH_V_AMD && hv->bad_pages_fatal > 0 && s->bad_pages >= hv->bad_pages_fatal) {
        snprintf(cause, n, "%lld bad pages (fatal at %lld by policy: replace the card)",
                 (long long)s->bad_pages, (long long)hv->bad_pages_fatal);
        return HEALTH_FAILED;
    }
    if (v == HEALTH_V_NVIDIA && s->remap_failure) {
        snprintf(cause, n, "row remapping failed: the card needs field diagnostics");
        return HEALTH_FAILED;
    }
    if (current == HEALTH_FAILED) {
        snprintf(cause, n, "failed earlier; an operator must reset its health");
        return HEALTH_FAILED;
    }
    if (has_ue && act(hv->uncorrectable, HEALTH_ACT_DEGRADED, ue, cause, n)) return HEALTH_DEGRADED;
    if (has_crit && act(hv->critical, HEALTH_ACT_DEGRADED, crit, cause, n)) return HEALTH_DEGRADED;
    if (has_def && act(hv->deferred, HEALTH_ACT_DEGRADED, def, cause, n)) return HEALTH_DEGRADED;
    if (v == HEALTH_V_AMD && hv->bad_pages_degraded > 0 && s->bad_pages >= hv->bad_pages_degraded) {
        snprintf(cause, n, "%lld bad pages (degraded at %lld by policy)", (long long)s->bad_pages,
                 (long long)hv->bad_pages_degraded);
        return HEALTH_DEGRADED;
    }
    if (v == HEALTH_V_NVIDIA) {
        if (s->remap_pending) {
            snprintf(cause, n, "row remap pending: reset the GPU to apply it");
            return HEALTH_DEGRADED;
        }
        if (s->retired_pages_pending > 0) {
            snprintf(cause, n, "%lld retired pages pending", (long long)s->retired_pages_pending);
            return HEALTH_DEGRADED;
        }
        for (int i = 0; i < s->nxids; i++)
            if (!in(p->ignored_xids, p->nignored, s->xids[i])) {
                snprintf(cause, n, "Xid %d (not known to be harmless)", s->xids[i]);
                return HEALTH_DEGRADED;
            }
    }
    if (prev && s->ecc_aggregate_sbe - prev->ecc_aggregate_sbe >= p->corrected_ecc_rise) {
        snprintf(cause, n, "corrected ECC errors rising: +%lld since the last heartbeat",
                 (long long)(s->ecc_aggregate_sbe - prev->ecc_aggregate_sbe));
        return HEALTH_DEGRADED;
    }
    if (s->slowdown_c > 0 && s->temperature_c >= s->slowdown_c - p->temperature_margin_c) {
        snprintf(cause, n, "temperature %d C at or above the card's slowdown threshold %d C",
                 s->temperature_c, s->slowdown_c);
        return HEALTH_DEGRADED;
    }
    return HEALTH_HEALTHY;
}

int health_allocatable(const health_policy *p, int state) {
    return state >= 0 && state < 3 && (p->allocatable & (1u << state)) != 0;
}
