/*
 * h_overview.c - one answer with what a tenant or a project has and uses
 * now: the web console's landing page and `gpupool tenant|project overview`.
 *
 *   GET /tenants/{t}/overview                 tenant readers (tenant.read)
 *   GET /tenants/{t}/projects/{p}/overview    project readers (project.read)
 *
 * Thin: it reuses the store functions of the features it shows (quota_load,
 * jobs_list, bind_card_hours, gw_model_list, meter_report, inv_alarm_list)
 * and reads everything in one read transaction.  Each part is included only
 * when the caller's role reads it on its own endpoint (jobs: job.read;
 * usage: usage.read; models: model.read, tenant level only); a part left
 * out is named in "omitted".  Foreign tenants and projects answer 404.
 *
 * Allocation ("used" per quota dimension) is what the scope's admitted and
 * running jobs reserve: GPU-equivalents and GPU memory from their open
 * bindings (as placed; an admitted job not yet placed counts by its class,
 * on the class's card, as admission counts it: sch_unit_demand and
 * sch_class_card_gib, src/sched/sched.h), CPUs, memory and class units from the
 * class x units, concurrent jobs by count; card-hours are this calendar
 * month's (UTC), like admission counts them.  "available" is the ceiling
 * minus the use, and for a project also bounded by what its tenant has left
 * (then "bounded_by":"tenant"); null when nothing bounds it.
 *
 * Accelerators: what the scope holds now split by the cards' vendor, model and
 * form ("accelerators", with the quota: GPU-equivalents of open bindings), and
 * this month's card-hours and their cost by vendor ("usage"."by_vendor").
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../gateway/gateway.h"
#include "../inventory/inventory.h"
#include "../meter/meter.h"
#include "../quota/quota.h"
#include "../sched/jobs.h"
#include "../sched/reservations.h"
#include "../sched/sched.h"
#include "../sched/share.h"
#include "../tenancy/tenancy.h"

#include <stdlib.h>
#include <string.h>

#define OV_MAX_CLASSES 64
#define OV_MAX_JOBS 200  /* live jobs listed (counts cover them all) */
#define OV_MAX_ALARMS 20 /* newest alarms listed */

/* What a scope's admitted and running jobs hold (milli for GPUs and card-hours). */
typedef struct ov_use {
    int64_t v[QD__N];
    int nclass;
    char cls[OV_MAX_CLASSES][64];
    int64_t units[OV_MAX_CLASSES];
} ov_use;

static int caller_may(const api_ctx *c, int action, const char *tenant_id,
                      const char *project_id) {
    authz_target t = {tenant_id, project_id};
    return authz_check(c->who->bindings, c->who->nbindings, action, &t, gt_now_us()) ==
           AUTHZ_ALLOW;
}

/* A unit of form text `form` ("whole", "mig:3g.40gb", "shared:24/10") on a card of `card_gib`:
 * GPU-equivalents (milli) and GPU memory by the demand formula.  -1 when unparsable. */
static int form_demand(const char *form, int gpus, int card_gib, int64_t *milli, int64_t *gib) {
    inv_form f;
    if (inv_form_parse(form, &f, NULL)) return -1;
    sch_unit_demand(f.kind == FORM_MIG ? SCH_MIG : f.kind == FORM_SHARED ? SCH_SHARED : SCH_WHOLE,
                    gpus, f.profile, f.memory_gib, f.percent, card_gib, milli, gib);
    return 0;
}

/* Each GPU model and its largest card (GiB), for the card a class is counted on. */
typedef struct ov_cards {
    int n;
    char (*model)[96];
    const char **names;
    int *gib;
} ov_cards;

static void cards_free(ov_cards *c) {
    free(c->model);
    free(c->names);
    free(c->gib);
}

/* A card model and its largest memory, as cards_load reads them (STORE_COLS). */
#define CARD_COLUMNS(X) X(CM_MODEL, "model") X(CM_MEMORY, "MAX(memory_mib)")
enum { CARD_COLUMNS(STORE_COL_ENUM) CM__N };

static int cards_load(store_tx *tx, ov_cards *c, gp_err *err) {
    store_stmt *s;
    int cap = 0;
    memset(c, 0, sizeof *c);
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CARD_COLUMNS) " FROM gpus GROUP BY model ORDER BY model",
                         "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        if (c->n == cap) {
            int nc = cap ? cap * 2 : 16;
            void *a = realloc(c->model, sizeof *c->model * (size_t)nc);
            if (a) c->model = a;
            void *b = realloc(c->gib, sizeof *c->gib * (size_t)nc);
            if (b) c->gib = b;
            if (!a || !b) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            cap = nc;
        }
        snprintf(c->model[c->n], sizeof c->model[0], "%s", store_text(s, CM_MODEL));
        c->gib[c->n++] = (int)(store_int(s, CM_MEMORY) / 1024);
    }
    store_done(s);
    if (rc < 0) return rc;
    c->names = calloc((size_t)c->n + 1, sizeof *c->names);
    if (!c->names) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < c->n; i++) c->names[i] = c->model[i];
    return GP_OK;
}

static void add_class(ov_use *u, const char *cls, int64_t units) {
    for (int i = 0; i < u->nclass; i++)
        if (!strcmp(u->cls[i], cls)) {
            u->units[i] += units;
            return;
        }
    if (u->nclass >= OV_MAX_CLASSES) return;
    snprintf(u->cls[u->nclass], sizeof u->cls[0], "%s", cls);
    u->units[u->nclass++] = units;
}

/* An admitted or running job with its class's demand, as load_use reads it (STORE_COLS). */
#define USE_JOB_COLUMNS(X)                                                                \
    X(UJ_CLASS, "j.class")                                                                \
    X(UJ_UNITS, "j.units")                                                                \
    X(UJ_STATE, "j.state")                                                                \
    X(UJ_FORM, "COALESCE(c.form, 'whole')")                                               \
    X(UJ_GPUS, "COALESCE(c.gpus, 0)")                                                     \
    X(UJ_CPUS, "COALESCE(c.cpus, 0)")                                                     \
    X(UJ_MEMORY, "COALESCE(c.memory_gib, 0)")                                             \
    X(UJ_MODELS, "COALESCE(c.gpu_models, '[]')")
enum { USE_JOB_COLUMNS(STORE_COL_ENUM) UJ__N };

/* An open binding with its card's memory, as load_use reads it (STORE_COLS). */
#define USE_BINDING_COLUMNS(X)                                                            \
    X(UB_WEIGHT, "b.weight_milli")                                                        \
    X(UB_FORM, "b.form")                                                                  \
    X(UB_SHARED_MEM, "b.shared_mem_gib")                                                  \
    X(UB_CARD_MEMORY, "COALESCE(g.memory_mib, 0)")
enum { USE_BINDING_COLUMNS(STORE_COL_ENUM) UB__N };

/* Allocation of a tenant (project_id NULL) or a project; see the file comment. */
static int load_use(store_tx *tx, const char *tenant_id, const char *project_id, int64_t now,
                    ov_use *u, gp_err *err) {
    store_stmt *s;
    ov_cards cards;
    memset(u, 0, sizeof *u);
    int rc = cards_load(tx, &cards, err);
    if (rc) {
        cards_free(&cards);
        return rc;
    }
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(USE_JOB_COLUMNS) " FROM jobs j LEFT JOIN classes c ON c.name = j.class"
                     " WHERE j.tenant_id = ? AND (? IS NULL OR j.project_id = ?)"
                     " AND j.state IN ('admitted', 'running')",
                     "sss", tenant_id, project_id, project_id);
    if (rc) {
        cards_free(&cards);
        return rc;
    }
    while ((rc = store_step(s, err)) > 0) {
        int64_t units = store_int(s, UJ_UNITS), milli, gib;
        u->v[QD_CPUS] += store_int(s, UJ_CPUS) * units;
        u->v[QD_MEM] += store_int(s, UJ_MEMORY) * units;
        u->v[QD_JOBS] += 1;
        add_class(u, store_text(s, UJ_CLASS), units);
        if (strcmp(store_text(s, UJ_STATE), "admitted") != 0)
            continue; /* running: its bindings below */
        /* not placed yet: on the class's card, as admission counted it */
        json_t *models = json_loads(store_text(s, UJ_MODELS), 0, NULL);
        int card = sch_class_card_gib(models, cards.names, cards.gib, cards.n);
        json_decref(models);
        if (form_demand(store_text(s, UJ_FORM), (int)store_int(s, UJ_GPUS), card, &milli, &gib))
            continue;
        u->v[QD_GPU_MILLI] += milli * units;
        u->v[QD_GPU_MEM] += gib * units;
    }
    store_done(s);
    cards_free(&cards);
    if (rc < 0) return rc;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(USE_BINDING_COLUMNS) " FROM bindings b LEFT JOIN gpus g ON g.uuid = b.gpu_uuid"
                     " WHERE b.end_us IS NULL AND b.tenant_id = ?"
                     " AND (? IS NULL OR b.project_id = ?)",
                     "sss", tenant_id, project_id, project_id);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        /* as placed: the weight metering charges, the memory on its own card */
        int64_t milli, gib, card = store_int(s, UB_CARD_MEMORY) / 1024;
        const char *form = store_text(s, UB_FORM);
        u->v[QD_GPU_MILLI] += store_int(s, UB_WEIGHT);
        if ((card > 0 || strncmp(form, "whole", 5) != 0) &&
            !form_demand(form, 1, (int)card, &milli, &gib))
            u->v[QD_GPU_MEM] += gib; /* (a whole card no longer listed: unknown, 0) */
    }
    store_done(s);
    if (rc < 0) return rc;
    return bind_card_hours(tx, tenant_id, project_id, now, &u->v[QD_CARD_HOURS], err);
}

static int scaled(int d) { return d == QD_GPU_MILLI || d == QD_CARD_HOURS; }

static json_t *amount(int d, int64_t v) {
    return scaled(d) ? json_real((double)v / 1000.0) : json_integer(v);
}

/* Left under a ceiling (never below 0), or -1 without one. */
static int64_t left(int64_t limit, int64_t used) {
    if (limit == QUOTA_NONE) return -1;
    return limit > used ? limit - used : 0;
}

/*
 * {dimension:{limit, used, available[, bounded_by]}, class_gpus:{…}} for the
 * scope's ceilings `q` and use `u`; `tq`/`tu` (may be NULL) bound a project
 * by its tenant.
 */
static json_t *quota_view(const quota_set *q, const ov_use *u, const quota_set *tq,
                          const ov_use *tu) {
    json_t *o = json_object();
    for (int d = 0; d < QD__N; d++) {
        int64_t avail = left(q->v[d], u->v[d]);
        int by_tenant = 0;
        if (tq) {
            int64_t ta = left(tq->v[d], tu->v[d]);
            if (ta >= 0 && (avail < 0 || ta < avail)) {
                avail = ta;
                by_tenant = 1;
            }
        }
        json_t *dim = json_pack("{s:o,s:o,s:o}", "limit",
                                q->v[d] == QUOTA_NONE ? json_null() : amount(d, q->v[d]), "used",
                                amount(d, u->v[d]), "available",
                                avail < 0 ? json_null() : amount(d, avail));
        if (by_tenant) json_object_set_new(dim, "bounded_by", json_string("tenant"));
        json_object_set_new(o, quota_dim_name(d), dim);
    }
    /* per class: every class with a ceiling or in use */
    json_t *cg = json_object();
    for (int i = 0; i < q->nclass; i++) {
        int64_t used = 0;
        for (int k = 0; k < u->nclass; k++)
            if (!strcmp(u->cls[k], q->class_name[i])) used = u->units[k];
        json_object_set_new(cg, q->class_name[i],
                            json_pack("{s:I,s:I,s:I}", "limit", (json_int_t)q->class_units[i],
                                      "used", (json_int_t)used, "available",
                                      (json_int_t)left(q->class_units[i], used)));
    }
    for (int k = 0; k < u->nclass; k++)
        if (!json_object_get(cg, u->cls[k]))
            json_object_set_new(cg, u->cls[k],
                                json_pack("{s:n,s:I,s:n}", "limit", "used",
                                          (json_int_t)u->units[k], "available"));
    json_object_set_new(o, "class_gpus", cg);
    return o;
}

/* What a scope's open bindings hold, by vendor, model and kind of form, as accel_view reads
 * it (STORE_COLS). */
#define ACCEL_COLUMNS(X)                                                                  \
    X(AV_VENDOR, "vendor")                                                                \
    X(AV_MODEL, "model")                                                                  \
    X(AV_FORM, "CASE WHEN form LIKE 'mig:%' THEN 'mig'"                                   \
               " WHEN form LIKE 'shared:%' THEN 'shared' ELSE form END")                  \
    X(AV_WEIGHT, "SUM(weight_milli)")                                                     \
    X(AV_CARDS, "COUNT(DISTINCT gpu_uuid)")
enum { ACCEL_COLUMNS(STORE_COL_ENUM) AV__N };

/* What the scope holds now: [{vendor, model, form, gpus, cards}] from its open bindings. */
static int accel_view(store_tx *tx, const char *tenant_id, const char *project_id, json_t **out,
                      gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ACCEL_COLUMNS) " FROM bindings"
                         " WHERE end_us IS NULL AND tenant_id = ? AND (? IS NULL OR project_id = ?)"
                         " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                         "sss", tenant_id, project_id, project_id);
    if (rc) return rc;
    json_t *items = json_array();
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(items, json_pack("{s:s,s:s,s:s,s:f,s:I}", "vendor",
                                               *store_text(s, AV_VENDOR) ? store_text(s, AV_VENDOR)
                                                                         : "nvidia",
                                               "model", store_text(s, AV_MODEL), "form",
                                               store_text(s, AV_FORM), "gpus",
                                               (double)store_int(s, AV_WEIGHT) / 1000.0, "cards",
                                               (json_int_t)store_int(s, AV_CARDS)));
    store_done(s);
    if (rc < 0) {
        json_decref(items);
        return rc;
    }
    *out = items;
    return GP_OK;
}

/* Live jobs (queued, admitted, running) with their reasons, and counts by state. */
static int jobs_view(store_tx *tx, const char *tenant_id, const char *project_id, json_t **out,
                     gp_err *err) {
    json_t *all;
    int rc = jobs_list(tx, tenant_id, project_id, NULL, NULL, NULL, &all, err);
    if (rc) return rc;
    json_t *items = json_array();
    int64_t queued = 0, admitted = 0, running = 0;
    size_t i;
    json_t *j;
    json_array_foreach(all, i, j) {
        const char *st = json_string_value(json_object_get(j, "state"));
        if (!st) continue;
        if (!strcmp(st, "queued")) queued++;
        else if (!strcmp(st, "admitted")) admitted++;
        else if (!strcmp(st, "running")) running++;
        else continue;
        if (json_array_size(items) >= OV_MAX_JOBS) continue;
        json_array_append_new(
            items, json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "id",
                             json_object_get(j, "id"), "name", json_object_get(j, "name"),
                             "project", json_object_get(j, "project"), "class",
                             json_object_get(j, "class"), "units", json_object_get(j, "units"),
                             "priority_class", json_object_get(j, "priority_class"), "state",
                             json_object_get(j, "state"), "reason", json_object_get(j, "reason"),
                             "submitter", json_object_get(j, "submitter"), "created_at",
                             json_object_get(j, "created_at"), "started_at",
                             json_object_get(j, "started_at")));
    }
    json_decref(all);
    *out = json_pack("{s:I,s:I,s:I,s:o}", "running", (json_int_t)running, "admitted",
                     (json_int_t)admitted, "queued", (json_int_t)queued, "items", items);
    return GP_OK;
}

/* This month's card-hours, tokens and cost of the scope. */
static int usage_view(store_tx *tx, const char *tenant_id, const char *project_id, int64_t now,
                      json_t **out, gp_err *err) {
    meter_query q;
    memset(&q, 0, sizeof q);
    q.now_us = now;
    q.from_us = meter_bucket_start(now, METER_BUCKET_MONTH);
    q.to_us = meter_bucket_next(q.from_us, METER_BUCKET_MONTH);
    q.bucket = METER_BUCKET_NONE;
    q.tenant_id = tenant_id;
    q.project_id = project_id;
    q.group_by = METER_BY_VENDOR;
    json_t *rep;
    int rc = meter_report(tx, &q, &rep, err);
    if (rc) return rc;
    /* card-hours by the cards' vendor (rows of tokens served off the inventory have none) */
    json_t *byv = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(rep, "rows"), i, row) {
        const char *v = json_string_value(json_object_get(row, "vendor"));
        if (!v || !*v || json_number_value(json_object_get(row, "card_hours")) <= 0) continue;
        json_array_append_new(byv, json_pack("{s:s,s:O,s:O}", "vendor", v, "card_hours",
                                             json_object_get(row, "card_hours"), "card_hour_cost",
                                             json_object_get(row, "card_hour_cost")));
    }
    json_t *t = json_object_get(rep, "totals");
    json_int_t pt = json_integer_value(json_object_get(t, "prompt_tokens"));
    json_int_t ct = json_integer_value(json_object_get(t, "completion_tokens"));
    *out = json_pack("{s:O,s:O,s:O,s:O,s:I,s:I,s:I,s:O,s:O,s:O,s:O}", "from",
                     json_object_get(rep, "from"), "to", json_object_get(rep, "to"), "card_hours",
                     json_object_get(t, "card_hours"), "requests", json_object_get(t, "requests"),
                     "prompt_tokens", pt, "completion_tokens", ct, "tokens", pt + ct,
                     "card_hour_cost", json_object_get(t, "card_hour_cost"), "token_cost",
                     json_object_get(t, "token_cost"), "cost", json_object_get(t, "cost"),
                     "currency", json_object_get(rep, "currency"));
    json_decref(rep);
    if (*out) json_object_set_new(*out, "by_vendor", byv);
    else json_decref(byv);
    return *out ? GP_OK : gp_err_set(err, GP_ENOMEM, NULL);
}

/* The tenant's model services: name, visibility and how many endpoints are up. */
static int models_view(store_tx *tx, const char *tenant_id, json_t **out, gp_err *err) {
    json_t *all;
    int rc = gw_model_list(tx, tenant_id, &all, err);
    if (rc) return rc;
    json_t *items = json_array();
    size_t i, k;
    json_t *m, *e;
    json_array_foreach(all, i, m) {
        json_t *eps = json_object_get(m, "endpoints");
        json_int_t up = 0;
        json_array_foreach(eps, k, e) {
            const char *st = json_string_value(json_object_get(e, "state"));
            if (st && (!strcmp(st, "healthy") || !strcmp(st, "up") || !strcmp(st, "ready"))) up++;
        }
        json_array_append_new(items, json_pack("{s:O,s:O,s:I,s:I}", "name",
                                               json_object_get(m, "name"), "visibility",
                                               json_object_get(m, "visibility"), "endpoints",
                                               (json_int_t)json_array_size(eps), "healthy", up));
    }
    json_decref(all);
    *out = items;
    return GP_OK;
}

/* Alarms naming the tenant (only its part of each): the open ones' count (neither resolved
 * nor acknowledged) and the newest. */
static int alarms_view(store_tx *tx, const char *tenant, json_t **out, gp_err *err) {
    json_t *all;
    int rc = inv_alarm_list(tx, tenant, &all, err);
    if (rc) return rc;
    json_t *items = json_array();
    json_int_t open = 0;
    size_t i;
    json_t *a;
    json_array_foreach(all, i, a) {
        if (!strcmp(json_string_value(json_object_get(a, "state")), "open")) open++;
        if (json_array_size(items) < OV_MAX_ALARMS) json_array_append(items, a);
    }
    json_int_t total = (json_int_t)json_array_size(all);
    json_decref(all);
    *out = json_pack("{s:I,s:I,s:o}", "open", open, "total", total, "items", items);
    return GP_OK;
}

/* Per project of the tenant: class, live jobs and GPU-equivalents held. */
static int projects_view(store_tx *tx, const tenancy_tenant *t, json_t **out, gp_err *err) {
    tenancy_project *ps;
    int n;
    int rc = tenancy_project_list(tx, t, &ps, &n, err);
    if (rc) return rc;
    json_t *items = json_array();
    for (int i = 0; !rc && i < n; i++) {
        ov_use u;
        rc = load_use(tx, t->id, ps[i].id, gt_now_us(), &u, err);
        if (!rc)
            json_array_append_new(items, json_pack("{s:s,s:s,s:I,s:f,s:f}", "name", ps[i].name,
                                                   "class", ps[i].cls, "jobs",
                                                   (json_int_t)u.v[QD_JOBS], "gpus",
                                                   (double)u.v[QD_GPU_MILLI] / 1000.0,
                                                   "card_hours_month",
                                                   (double)u.v[QD_CARD_HOURS] / 1000.0));
    }
    free(ps);
    if (rc) json_decref(items);
    else *out = items;
    return rc;
}

/* SC_TENANT, ACT_TENANT_READ or SC_PROJECT, ACT_PROJECT_READ (routes.c): every part as
 * its own endpoint would allow, read in the one transaction (tied to the tenant). */
static int overview(api_ctx *c, gp_err *err) {
    const tenancy_tenant *t = &c->sc.t;
    const tenancy_project *p = &c->sc.p;
    store_tx *tx = c->tx;
    int pn = c->sc.has_project, rc = GP_OK;
    api_target(c->r, pn ? "project" : "tenant", pn ? p->name : t->name, NULL, NULL);
    const char *pid = pn ? p->id : NULL;
    int64_t now = gt_now_us();
    json_t *o = json_pack("{s:s,s:s,s:o}", "tenant", t->name, "display_name", t->display_name,
                          "as_of", jx_time(now));
    json_t *omitted = json_array(), *part = NULL;
    if (pn) {
        json_object_set_new(o, "project", json_string(p->name));
        json_object_set_new(o, "class", json_string(p->cls));
    }
    /* quota and allocation */
    quota_set q, tq;
    ov_use u, tu;
    rc = quota_load(tx, t->id, pid, &q, err);
    if (!rc) rc = load_use(tx, t->id, pid, now, &u, err);
    if (!rc && pn) rc = quota_load(tx, t->id, NULL, &tq, err);
    if (!rc && pn) rc = load_use(tx, t->id, NULL, now, &tu, err);
    if (!rc) json_object_set_new(o, "quota", quota_view(&q, &u, pn ? &tq : NULL, pn ? &tu : NULL));
    if (!rc) {
        rc = accel_view(tx, t->id, pid, &part, err);
        if (!rc) json_object_set_new(o, "accelerators", part);
    }
    /* its guaranteed share: guaranteed / in use / borrowed / lent, its own figures only */
    if (!rc && !pn) {
        rc = share_tenant_view(tx, t->id, &part, err);
        if (!rc) json_object_set_new(o, "share", part);
    }
    /* the other parts, each as its own endpoint would allow */
    if (!rc && !pn) {
        rc = projects_view(tx, t, &part, err);
        if (!rc) json_object_set_new(o, "projects", part);
    }
    if (!rc && caller_may(c, ACT_JOB_READ, t->id, pid)) {
        rc = jobs_view(tx, t->id, pid, &part, err);
        if (!rc) json_object_set_new(o, "jobs", part);
    } else if (!rc) {
        json_array_append_new(omitted, json_string("jobs"));
    }
    if (!rc && caller_may(c, ACT_USAGE_READ, t->id, pid)) {
        rc = usage_view(tx, t->id, pid, now, &part, err);
        if (!rc) json_object_set_new(o, "usage", part);
    } else if (!rc) {
        json_array_append_new(omitted, json_string("usage"));
    }
    if (!rc && !pn && caller_may(c, ACT_MODEL_READ, t->id, NULL)) {
        rc = models_view(tx, t->id, &part, err);
        if (!rc) json_object_set_new(o, "models", part);
    } else if (!rc && !pn) {
        json_array_append_new(omitted, json_string("models"));
    }
    /* its reservations (docs/scheduling.md, "Reservations"): a project's, those it may run in
     * (held by the whole tenant or by it) */
    if (!rc) {
        rc = rsv_list_tenant(tx, t->id, now, &part, err);
        if (!rc && pn) {
            json_t *mine = json_array();
            size_t i;
            json_t *r;
            json_array_foreach(part, i, r) {
                const char *rp = json_string_value(json_object_get(r, "project"));
                if (!rp || !strcmp(rp, p->name)) json_array_append(mine, r);
            }
            json_decref(part);
            part = mine;
        }
        if (!rc) json_object_set_new(o, "reservations", part);
    }
    if (!rc) {
        rc = alarms_view(tx, t->name, &part, err);
        if (!rc) json_object_set_new(o, "alarms", part);
    }
    if (rc) {
        json_decref(o);
        json_decref(omitted);
        return rc;
    }
    json_object_set_new(o, "omitted", omitted);
    api_reply(c->r, 200, o);
    return GP_OK;
}

int h_tenant_overview(api_ctx *c, gp_err *err) { return overview(c, err); }
int h_project_overview(api_ctx *c, gp_err *err) { return overview(c, err); }
