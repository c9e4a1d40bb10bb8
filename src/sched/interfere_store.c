/*
 * interfere_store.c - interference on shared GPUs, store side (see jobs.h).
 *
 * For each shared card a heartbeat reports processes on, gather the jobs
 * whose open bindings hold slices of it, sum their processes' figures, and
 * let intf_eval() (inventory/health.h, pure) judge.  The strikes and which
 * alarms were already raised live in the `interference` table, one row per
 * card and job, so an ongoing breach raises one alarm, not one a heartbeat.
 */
#include "jobs_int.h"

#include "../core/jsonx.h"
#include "../core/strbuf.h"
#include "../inventory/inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_JOBS 32

typedef struct held {
    char job[RND_ID_LEN], tenant[64], project[64], recovery[16];
    json_t *bindings; /* binding ids on this card (owned) */
    int alarmed;      /* INTF_* bits already alarmed */
} held;

/* What the holders' read returns, by name (STORE_COLS / STORE_COL_ENUM: store.h). */
#define HOLDER_COLUMNS(X) \
    X(HD_JOB, "b.job_id") \
    X(HD_TENANT, "b.tenant") \
    X(HD_PROJECT, "b.project") \
    X(HD_RECOVERY, "j.recovery") \
    X(HD_BINDING, "b.id") \
    X(HD_MEM, "b.shared_mem_gib") \
    X(HD_PCT, "b.shared_pct") \
    X(HD_STRIKES, "COALESCE(i.strikes, 0)") \
    X(HD_ALARMED, "COALESCE(i.alarmed, 0)")
enum { HOLDER_COLUMNS(STORE_COL_ENUM) HD__N };

/* The jobs holding shared slices of `gpu` on `node`, with their slices summed. */
static int load_holders(store_tx *tx, const char *node, const char *gpu, held *h, intf_slice *sl,
                        int *n, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HOLDER_COLUMNS) " FROM bindings b JOIN jobs j ON j.id = b.job_id"
                         " LEFT JOIN interference i ON i.gpu_uuid = b.gpu_uuid AND i.job_id = b.job_id"
                         " WHERE b.end_us IS NULL AND b.node = ? AND b.gpu_uuid = ?"
                         " AND b.form LIKE 'shared:%' AND j.state = 'running' ORDER BY b.job_id, b.id",
                         "ss", node, gpu);
    if (rc) return rc;
    *n = 0;
    while ((rc = store_step(s, err)) > 0) {
        const char *job = store_text(s, HD_JOB);
        int k = *n - 1;
        if (k < 0 || strcmp(h[k].job, job)) {
            if (*n == MAX_JOBS) continue; /* more jobs than a card has slices: ignore the rest */
            k = (*n)++;
            memset(&h[k], 0, sizeof h[k]);
            snprintf(h[k].job, sizeof h[k].job, "%s", job);
            snprintf(h[k].tenant, sizeof h[k].tenant, "%s", store_text(s, HD_TENANT));
            snprintf(h[k].project, sizeof h[k].project, "%s", store_text(s, HD_PROJECT));
            snprintf(h[k].recovery, sizeof h[k].recovery, "%s", store_text(s, HD_RECOVERY));
            h[k].bindings = json_array();
            h[k].alarmed = (int)store_int(s, HD_ALARMED);
            memset(&sl[k], 0, sizeof sl[k]);
            sl[k].job = h[k].job;
            sl[k].used_mib = -1;
            sl[k].sm_pct = -1;
            sl[k].strikes = (int)store_int(s, HD_STRIKES);
        }
        json_array_append_new(h[k].bindings, json_string(store_text(s, HD_BINDING)));
        sl[k].limit_mib += store_int(s, HD_MEM) * 1024;
        sl[k].percent += (int)store_int(s, HD_PCT);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* Add the reported processes to their jobs; OUT: SM % of processes of no job here. */
static int add_processes(json_t *procs, held *h, intf_slice *sl, int n, int *unbound,
                         gp_err *err) {
    size_t i;
    json_t *p;
    if (!json_is_array(procs) || json_array_size(procs) > 4096)
        return gp_err_set(err, GP_EINVALID, "processes must be an array of at most 4096 entries");
    json_array_foreach(procs, i, p) {
        json_t *jm = json_object_get(p, "memory_mib"), *js = json_object_get(p, "sm_pct");
        if (!json_is_object(p) || (jm && !json_is_integer(jm)) || (js && !json_is_integer(js)))
            return gp_err_set(err, GP_EINVALID,
                              "a process is {pid, job, memory_mib, sm_pct} with integer figures");
        int64_t mem = jm ? json_integer_value(jm) : -1;
        int64_t sm = js ? json_integer_value(js) : -1;
        if (mem < -1 || mem > (1LL << 40) || sm < -1 || sm > 100)
            return gp_err_set(err, GP_EINVALID, "process figures out of range");
        const char *job = json_string_value(json_object_get(p, "job"));
        int k = -1;
        for (int x = 0; job && x < n; x++)
            if (!strcmp(h[x].job, job)) k = x;
        if (k < 0) {
            if (sm >= 0) *unbound = (*unbound < 0 ? 0 : *unbound) + (int)sm;
            continue;
        }
        if (mem >= 0) sl[k].used_mib = (sl[k].used_mib < 0 ? 0 : sl[k].used_mib) + mem;
        if (sm >= 0) sl[k].sm_pct = (sl[k].sm_pct < 0 ? 0 : sl[k].sm_pct) + (int)sm;
    }
    return GP_OK;
}

static json_t *who(const held *h) {
    return json_pack("{s:s,s:s,s:s,s:O}", "job", h->job, "tenant", h->tenant, "project",
                     h->project, "bindings", h->bindings);
}

/* Raise the alarm for one finding (and stop the offender when the policy says so). */
static int act(store_tx *tx, const char *node, const char *gpu, const health_policy *pol,
               held *h, const intf_finding *f, json_t *events, gp_err *err) {
    held *o = &h[f->offender];
    const char *kind = f->kind == INTF_MEMORY ? "memory" : "contention";
    int stop = pol->interference_action == INTF_STOP;
    json_t *affected = json_array(), *tenants = json_array();
    json_array_append_new(tenants, json_string(o->tenant));
    for (int v = 0; v < f->nvictims; v++) {
        held *x = &h[f->victims[v]];
        json_array_append_new(affected, who(x));
        int seen = 0;
        for (size_t t = 0; t < json_array_size(tenants); t++)
            if (!strcmp(json_string_value(json_array_get(tenants, t)), x->tenant)) seen = 1;
        if (!seen) json_array_append_new(tenants, json_string(x->tenant));
    }
    json_t *off = who(o);
    json_object_set_new(off, "detail", json_string(f->detail));
    json_t *detail = json_pack("{s:s,s:o,s:o,s:s}", "kind", kind, "offender", off, "affected",
                               affected, "action", stop ? "stopped" : "alerted");
    char msg[400];
    snprintf(msg, sizeof msg, "interference on shared GPU %s (node %s): %s; %d other job(s) affected%s",
             gpu, node,
             f->kind == INTF_MEMORY ? "a job uses more GPU memory than its slice holds"
                                    : "a job takes more than its compute share while others starve",
             f->nvictims, stop ? "; the offending job was stopped" : "");
    char subject[RND_ID_LEN + 32];
    snprintf(subject, sizeof subject, "job:%.32s:%.10s", o->job, kind);
    int rc = inv_alarm_raise(tx, "warning", "interference", node, gpu, subject, msg, tenants,
                             detail, err);
    json_decref(tenants);
    if (!rc && stop) {
        char why[260];
        const char *outcome;
        snprintf(why, sizeof why, "stopped for interference on GPU %s: it %s", gpu, f->detail);
        rc = jobs__stop(tx, o->job, "fail", "interference", why, &outcome, err);
    }
    if (!rc) {
        json_object_set_new(detail, "gpu", json_string(gpu));
        json_object_set_new(detail, "node", json_string(node));
        json_array_append(events, detail);
    }
    json_decref(detail);
    return rc;
}

/*
 * Resolve the card's open interference alarms whose breach is over: the job
 * no longer exceeds its slice, or no longer holds one (ended, stopped).
 * `h`/`f`: the n jobs holding slices now and this report's nf findings.
 */
static int resolve_ended(store_tx *tx, const char *node, const char *gpu, const held *h, int n,
                         const intf_finding *f, int nf, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT DISTINCT subject FROM alarms WHERE kind = 'interference'"
                         " AND node = ? AND gpu_uuid = ? AND resolved_at IS NULL AND subject <> ''",
                         "ss", node, gpu);
    if (rc) return rc;
    json_t *ended = json_array();
    while ((rc = store_step(s, err)) > 0) {
        const char *subj = store_text(s, 0);
        int ongoing = 0;
        for (int x = 0; x < nf && !ongoing; x++) {
            char cur[RND_ID_LEN + 32];
            snprintf(cur, sizeof cur, "job:%.32s:%s", h[f[x].offender].job,
                     f[x].kind == INTF_MEMORY ? "memory" : "contention");
            ongoing = strcmp(cur, subj) == 0;
        }
        if (!ongoing) json_array_append_new(ended, json_string(subj));
    }
    store_done(s);
    size_t i;
    json_t *v;
    json_array_foreach(ended, i, v) {
        if (rc < 0) break;
        const char *subj = json_string_value(v);
        char job[RND_ID_LEN] = "";
        sscanf(subj, "job:%32[0-9a-f]", job);
        int holds = 0;
        for (int k = 0; k < n && !holds; k++) holds = !strcmp(h[k].job, job);
        rc = inv_alarm_resolve(tx, "interference", node, gpu, subj,
                               holds ? "the job keeps within its slice again"
                                     : "the job no longer holds a slice of the card",
                               err);
    }
    json_decref(ended);
    return rc;
}

static int judge_gpu(store_tx *tx, const char *node, const char *gpu, json_t *procs,
                     const health_policy *pol, json_t *events, gp_err *err) {
    held h[MAX_JOBS];
    intf_slice sl[MAX_JOBS];
    intf_finding f[2 * MAX_JOBS];
    int n = 0;
    int rc = load_holders(tx, node, gpu, h, sl, &n, err);
    int unbound = -1;
    if (!rc) rc = add_processes(procs, h, sl, n, &unbound, err);
    int nf = rc ? 0 : intf_eval(pol, sl, n, unbound, f, 2 * MAX_JOBS);
    /* forget jobs that no longer hold a slice of this card */
    if (!rc)
        rc = store_exec(tx, NULL, err,
                        "DELETE FROM interference WHERE gpu_uuid = ? AND gpu_uuid IN (SELECT g.uuid"
                        " FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE n.name = ?)",
                        "ss", gpu, node);
    for (int k = 0; k < n && !rc; k++) {
        int now = 0;
        for (int x = 0; x < nf; x++)
            if (f[x].offender == k) now |= f[x].kind;
        /* a breach that lasts keeps its one alarm; one that ended may alarm again later */
        for (int x = 0; x < nf && !rc; x++)
            if (f[x].offender == k && !(h[k].alarmed & f[x].kind))
                rc = act(tx, node, gpu, pol, h, &f[x], events, err);
        if (!rc && (sl[k].strikes || now))
            rc = store_exec(tx, NULL, err,
                            "INSERT INTO interference (gpu_uuid, job_id, strikes, alarmed)"
                            " VALUES (?,?,?,?)",
                            "ssii", gpu, h[k].job, (int64_t)sl[k].strikes, (int64_t)now);
    }
    if (!rc) rc = resolve_ended(tx, node, gpu, h, n, f, nf, err);
    for (int k = 0; k < n; k++) json_decref(h[k].bindings);
    return rc;
}

int jobs_interference(store_tx *tx, const char *node, json_t *hb, const health_policy *pol,
                      json_t **events, gp_err *err) {
    json_t *out = json_array();
    size_t i;
    json_t *g;
    int rc = GP_OK;
    json_array_foreach(json_object_get(hb, "gpus"), i, g) {
        json_t *procs = json_object_get(g, "processes");
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        if (!procs || !uuid) continue;
        if ((rc = judge_gpu(tx, node, uuid, procs, pol, out, err))) break;
    }
    if (rc) {
        json_decref(out);
        return rc;
    }
    *events = out;
    return GP_OK;
}
