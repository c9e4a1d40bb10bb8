/*
 * chquota.c - what happens to running jobs when a tenant or project has used
 * its month's card-hours (see jobs.h, jobs_card_hours_enforce).
 *
 * Admission already queues new jobs at the ceiling.  With the quota's
 * card_hours_policy "stop", the first pass that finds the ceiling reached
 * raises a warning alarm for the tenant (running jobs stop after the grace
 * period) and records it in quota_warnings; a pass after the grace period
 * stops the scope's running jobs: their bindings end card_hours_exhausted
 * and they are requeued, where admission holds them until the quota is
 * raised or the month ends.  Both steps are audited.
 */
#include "jobs_int.h"

#include "../audit/audit.h"
#include "../core/jsonx.h"
#include "../inventory/inventory.h"
#include "../quota/quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scope {
    char tenant_id[RND_ID_LEN], project_id[RND_ID_LEN]; /* project "" = the tenant's ceiling */
    char tenant[64], project[64];
    quota_set q;
} scope;


static int audit_sys(store_tx *tx, const char *action, const scope *sc, json_t *sum, gp_err *err) {
    char *text = jx_dump(sum);
    audit_event ev = {.actor = "system",
                      .action = action,
                      .target_type = sc->project_id[0] ? "project" : "tenant",
                      .target_id = sc->project_id[0] ? sc->project : sc->tenant,
                      .tenant = sc->tenant,
                      .project = sc->project_id[0] ? sc->project : NULL,
                      .result = "ok",
                      .summary = text};
    int rc = audit_append(tx, &ev, NULL, err);
    free(text);
    return rc;
}

/* What the enforcement reads, by name (STORE_COLS / STORE_COL_ENUM: store.h). */
#define WARN_COLUMNS(X) \
    X(QW_WARNED, "warned_at") \
    X(QW_STOPPED, "stopped_at")
enum { WARN_COLUMNS(STORE_COL_ENUM) QW__N };
#define SCOPE_COLUMNS(X) \
    X(SQ_TENANT_ID, "q.tenant_id") \
    X(SQ_PROJECT_ID, "q.project_id") \
    X(SQ_SPEC, "q.spec") \
    X(SQ_TENANT, "t.name") \
    X(SQ_PROJECT, "COALESCE(p.name, '')")
enum { SCOPE_COLUMNS(STORE_COL_ENUM) SQ__N };

/* One scope at its ceiling: warn, or stop its running jobs once the grace is over. */
static int enforce(store_tx *tx, const scope *sc, int64_t used, int64_t now, const char *month,
                   int *stopped, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(WARN_COLUMNS) " FROM quota_warnings WHERE tenant_id = ?"
                         " AND project_id = ? AND month = ?",
                         "sss", sc->tenant_id, sc->project_id, month);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t warned = rc > 0 ? store_int(s, QW_WARNED) : 0, was_stopped = rc > 0 ? store_int(s, QW_STOPPED) : 0;
    store_done(s);
    if (rc < 0) return rc;
    char who[160], lim[32], use[32];
    if (sc->project_id[0]) snprintf(who, sizeof who, "project %s/%s", sc->tenant, sc->project);
    else snprintf(who, sizeof who, "tenant %s", sc->tenant);
    snprintf(lim, sizeof lim, "%g", (double)sc->q.v[QD_CARD_HOURS] / 1000.0);
    snprintf(use, sizeof use, "%g", (double)used / 1000.0);
    if (!warned) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "%s has used its %s card-hours for %s: its running jobs stop in %lld s"
                 " (card_hours_policy stop); raise the quota to keep them running",
                 who, lim, month, (long long)sc->q.card_hours_grace_s);
        json_t *tenants = json_pack("[s]", sc->tenant);
        rc = inv_alarm_raise(tx, "warning", "quota", "", "", "", msg, tenants, NULL, err);
        json_decref(tenants);
        if (!rc)
            rc = store_exec(tx, NULL, err,
                            "INSERT INTO quota_warnings (tenant_id, project_id, month, warned_at)"
                            " VALUES (?,?,?,?)",
                            "sssi", sc->tenant_id, sc->project_id, month, now);
        if (!rc) {
            json_t *sum = json_pack("{s:s,s:s,s:I}", "used", use, "card_hours_month", lim,
                                    "grace_seconds", (json_int_t)sc->q.card_hours_grace_s);
            rc = audit_sys(tx, "quota.card_hours_warning", sc, sum, err);
            json_decref(sum);
        }
        return rc;
    }
    if (now < warned + sc->q.card_hours_grace_s * 1000000) return GP_OK;
    /* the grace is over: stop what still runs (and anything started since, e.g. placed
     * before the warning) */
    rc = store_query(tx, &s, err,
                     "SELECT id FROM jobs WHERE state = 'running' AND tenant_id = ?"
                     " AND (? = '' OR project_id = ?) ORDER BY id LIMIT 1000",
                     "sss", sc->tenant_id, sc->project_id, sc->project_id);
    if (rc) return rc;
    json_t *ids = json_array();
    while ((rc = store_step(s, err)) > 0) json_array_append_new(ids, json_string(store_text(s, 0)));
    store_done(s);
    if (rc < 0 || !json_array_size(ids)) {
        json_decref(ids);
        return rc < 0 ? rc : GP_OK;
    }
    char why[400];
    snprintf(why, sizeof why, "card_hours_exhausted: %s used %s of %s card-hours for %s", who, use,
             lim, month);
    size_t i;
    json_t *id;
    rc = GP_OK;
    json_array_foreach(ids, i, id) {
        const char *outcome;
        if ((rc = jobs__stop(tx, json_string_value(id), "requeue", "card_hours_exhausted", why,
                             &outcome, err)))
            break;
        (*stopped)++;
    }
    if (!rc && !was_stopped)
        rc = store_exec(tx, NULL, err,
                        "UPDATE quota_warnings SET stopped_at = ? WHERE tenant_id = ? AND"
                        " project_id = ? AND month = ?",
                        "isss", now, sc->tenant_id, sc->project_id, month);
    if (!rc) {
        json_t *sum = json_pack("{s:s,s:s,s:O}", "used", use, "card_hours_month", lim, "jobs", ids);
        rc = audit_sys(tx, "quota.card_hours_stop", sc, sum, err);
        json_decref(sum);
    }
    json_decref(ids);
    return rc;
}

int jobs_card_hours_enforce(store_tx *tx, int64_t now, int *stopped, gp_err *err) {
    store_stmt *s;
    *stopped = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SCOPE_COLUMNS) " FROM quotas q JOIN tenants t ON t.id = q.tenant_id"
                         " LEFT JOIN projects p ON p.id = q.project_id",
                         "");
    if (rc) return rc;
    scope *sc = NULL;
    int n = 0, cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        json_t *spec = json_loads(store_text(s, SQ_SPEC), 0, NULL);
        quota_set q;
        gp_err e2 = GP_ERR_INIT;
        int ok = spec && quota_parse(spec, &q, &e2) == GP_OK && q.card_hours_stop &&
                 q.v[QD_CARD_HOURS] != QUOTA_NONE;
        json_decref(spec);
        if (!ok) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            scope *ns = realloc(sc, (size_t)cap * sizeof *ns);
            if (!ns) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            sc = ns;
        }
        scope *x = &sc[n++];
        memset(x, 0, sizeof *x);
        snprintf(x->tenant_id, sizeof x->tenant_id, "%s", store_text(s, SQ_TENANT_ID));
        snprintf(x->project_id, sizeof x->project_id, "%s", store_text(s, SQ_PROJECT_ID));
        snprintf(x->tenant, sizeof x->tenant, "%s", store_text(s, SQ_TENANT));
        snprintf(x->project, sizeof x->project, "%s", store_text(s, SQ_PROJECT));
        x->q = q;
    }
    store_done(s);
    char month[16];
    jobs__month_start(now, month);
    for (int i = 0; i < n && rc >= 0; i++) {
        int64_t used;
        rc = bind_card_hours(tx, sc[i].tenant_id, sc[i].project_id[0] ? sc[i].project_id : NULL,
                             now, &used, err);
        if (!rc && used >= sc[i].q.v[QD_CARD_HOURS])
            rc = enforce(tx, &sc[i], used, now, month, stopped, err);
    }
    free(sc);
    return rc < 0 ? rc : GP_OK;
}
