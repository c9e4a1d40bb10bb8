/*
 * reservations.c - advance reservations and maintenance windows in the store
 * (see reservations.h; the rules are reserve.c's).
 */
#include "reservations.h"

#include "jobs_int.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../inventory/inventory.h"
#include "../tenancy/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const wd_names[7] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

int rsv_rule_from(const char *recurrence, int64_t start_us, int64_t end_us, int64_t weekdays,
                  int64_t every_s, int64_t until_us, rsv_rule *out) {
    static const char *const kinds[] = {"none", "daily", "weekly", "weekdays", "every"};
    memset(out, 0, sizeof *out);
    out->t1_us = start_us;
    out->t2_us = end_us;
    out->kind = -1;
    for (int k = 0; k < 5; k++)
        if (recurrence && !strcmp(recurrence, kinds[k])) out->kind = k;
    out->weekdays = (unsigned)weekdays & 0x7fu;
    out->every_s = every_s;
    out->until_us = out->kind == RSV_ONCE ? 0 : until_us;
    return out->kind < 0 ? -1 : 0;
}

/* ---- reading ---- */

/* A reservation's row as row_json reads it (STORE_COLS). */
#define RSV_COLUMNS(X)                              \
    X(RC_ID, "r.id")                                \
    X(RC_NAME, "r.name")                            \
    X(RC_TENANT, "COALESCE(t.name, '')")            \
    X(RC_PROJECT, "COALESCE(p.name, '')")           \
    X(RC_POOL, "r.pool")                            \
    X(RC_CLASS, "r.class")                          \
    X(RC_COUNT, "r.count")                          \
    X(RC_NODES, "r.nodes")                          \
    X(RC_START, "r.start_us")                       \
    X(RC_END, "r.end_us")                           \
    X(RC_RECURRENCE, "r.recurrence")                \
    X(RC_WEEKDAYS, "r.weekdays")                    \
    X(RC_EVERY, "r.every_s")                        \
    X(RC_UNTIL, "r.until_us")                       \
    X(RC_END_POLICY, "r.end_policy")                \
    X(RC_DRAIN, "r.drain_before_s")                 \
    X(RC_WORK_ORDERS, "r.work_orders")              \
    X(RC_DESCRIPTION, "r.description")              \
    X(RC_CREATED_BY, "r.created_by")                \
    X(RC_CREATED, "r.created_at")                   \
    X(RC_UPDATED, "r.updated_at")                   \
    X(RC_TENANT_ID, "COALESCE(r.tenant_id, '')")    \
    X(RC_PROJECT_ID, "COALESCE(r.project_id, '')")
enum { RSV_COLUMNS(STORE_COL_ENUM) RC__N };
#define RSV_COLS STORE_COLS(RSV_COLUMNS)
#define RSV_FROM                                                                              \
    " FROM reservations r LEFT JOIN tenants t ON t.id = r.tenant_id"                         \
    " LEFT JOIN projects p ON p.id = r.project_id"

static json_t *times_of(const rsv_span *s) {
    return json_pack("{s:o,s:o}", "start", jx_time(s->t1_us), "end", jx_time(s->t2_us));
}

/* A row of RSV_COLS as the API shows it, at now_us: its state (upcoming, active, over), the
 * occurrence in force or next, and the next few. */
static json_t *row_json(store_stmt *s, int64_t now, rsv_holder *who) {
    rsv_rule rule;
    rsv_rule_from(store_text(s, RC_RECURRENCE), store_int(s, RC_START), store_int(s, RC_END),
                  store_int(s, RC_WEEKDAYS), store_int(s, RC_EVERY), store_int(s, RC_UNTIL),
                  &rule);
    int maint = !store_text(s, RC_TENANT_ID)[0];
    json_t *nodes = json_loads(store_text(s, RC_NODES), 0, NULL),
           *wos = json_loads(store_text(s, RC_WORK_ORDERS), 0, NULL);
    const char *project = store_text(s, RC_PROJECT), *pool = store_text(s, RC_POOL),
               *cls = store_text(s, RC_CLASS);
    int64_t count = store_int(s, RC_COUNT);
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:s,s:s,s:o,s:o}", "id",
        store_text(s, RC_ID), "name", store_text(s, RC_NAME), "kind",
        maint ? "maintenance" : "tenant", "tenant",
        maint ? json_null() : json_string(store_text(s, RC_TENANT)), "project",
        project[0] ? json_string(project) : json_null(), "nodes", nodes ? nodes : json_array(),
        "pool", pool[0] ? json_string(pool) : json_null(), "class",
        cls[0] ? json_string(cls) : json_null(), "count",
        count ? json_integer(count) : json_null(), "start", jx_time(store_int(s, RC_START)),
        "end", jx_time(store_int(s, RC_END)), "recurrence", store_text(s, RC_RECURRENCE),
        "end_policy", store_text(s, RC_END_POLICY), "created_by", store_text(s, RC_CREATED_BY),
        "created_at", jx_time(store_int(s, RC_CREATED)), "updated_at",
        jx_time(store_int(s, RC_UPDATED)));
    if (!o) return NULL;
    json_t *wd = json_array();
    for (int d = 0; d < 7; d++)
        if (rule.kind == RSV_WEEKDAYS && (rule.weekdays >> d & 1u)) json_array_append_new(wd, json_string(wd_names[d]));
    json_object_set_new(o, "weekdays", wd);
    json_object_set_new(o, "every_seconds",
                        rule.kind == RSV_EVERY ? json_integer(rule.every_s) : json_null());
    json_object_set_new(o, "until", rule.kind == RSV_ONCE ? json_null() : jx_time(rule.until_us));
    json_object_set_new(o, "drain_before_seconds", json_integer(store_int(s, RC_DRAIN)));
    json_object_set_new(o, "work_orders", wos ? wos : json_array());
    json_object_set_new(o, "description", json_string(store_text(s, RC_DESCRIPTION)));
    rsv_span cur, next[4];
    const char *state = "over";
    if (rsv_current(&rule, now, &cur)) {
        state = cur.t1_us <= now ? "active" : "upcoming";
        json_object_set_new(o, "current", times_of(&cur));
    } else {
        json_object_set_new(o, "current", json_null());
    }
    json_object_set_new(o, "state", json_string(state));
    json_t *up = json_array();
    int nn = rsv_occurrences(&rule, now, INT64_MAX, next, 4);
    for (int i = 0; i < nn && i < 4; i++) json_array_append_new(up, times_of(&next[i]));
    json_object_set_new(o, "occurrences", up); /* the next few, the one in force first */
    if (who) {
        memset(who, 0, sizeof *who);
        snprintf(who->id, sizeof who->id, "%s", store_text(s, RC_ID));
        who->maintenance = maint;
        snprintf(who->tenant_id, sizeof who->tenant_id, "%s", store_text(s, RC_TENANT_ID));
        snprintf(who->project_id, sizeof who->project_id, "%s", store_text(s, RC_PROJECT_ID));
    }
    return o;
}

int rsv_get(store_tx *tx, const char *name, int64_t now, json_t **out, rsv_holder *who,
            gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " RSV_COLS RSV_FROM " WHERE r.name = ? AND r.deleted_at = 0",
                         "s", name);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *o = rc > 0 ? row_json(s, now, who) : NULL;
    store_done(s);
    if (rc < 0) return rc;
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "reservation not found");
    if (!o) return gp_err_set(err, GP_ENOMEM, NULL);
    *out = o;
    return GP_OK;
}

static int list_where(store_tx *tx, const char *tenant_id, int64_t now, json_t **items,
                      rsv_holder **who, gp_err *err) {
    store_stmt *s;
    *items = NULL;
    if (who) *who = NULL;
    int rc = store_query(tx, &s, err,
                         "SELECT " RSV_COLS RSV_FROM " WHERE r.deleted_at = 0"
                         " AND (? IS NULL OR r.tenant_id = ?) ORDER BY r.start_us, r.name",
                         "ss", tenant_id, tenant_id);
    if (rc) return rc;
    json_t *arr = json_array();
    rsv_holder *hs = NULL;
    size_t cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        size_t i = json_array_size(arr);
        if (who && i == cap) {
            cap = cap ? cap * 2 : 16;
            rsv_holder *nh = realloc(hs, cap * sizeof *nh);
            if (!nh) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            hs = nh;
        }
        json_t *o = row_json(s, now, who ? &hs[i] : NULL);
        if (!o) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
        json_array_append_new(arr, o);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        free(hs);
        return rc;
    }
    *items = arr;
    if (who) *who = hs;
    else free(hs);
    return GP_OK;
}

int rsv_list(store_tx *tx, int64_t now, json_t **items, rsv_holder **who, gp_err *err) {
    return list_where(tx, NULL, now, items, who, err);
}

int rsv_list_tenant(store_tx *tx, const char *tenant_id, int64_t now, json_t **items,
                    gp_err *err) {
    return list_where(tx, tenant_id, now, items, NULL, err);
}

int rsv_delete(store_tx *tx, const char *name, int64_t now, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE reservations SET deleted_at = ?, updated_at = ?"
                        " WHERE name = ? AND deleted_at = 0",
                        "iis", now, now, name);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "reservation not found");
}

/* ---- checking a spec ---- */

typedef struct spec {
    const char *name;
    int maintenance;
    char tenant_id[RND_ID_LEN], project_id[RND_ID_LEN];
    const char *pool, *cls;
    int64_t count;
    json_t *nodes; /* borrowed */
    rsv_rule rule;
    const char *recurrence, *end_policy, *description;
    int64_t drain_before_s;
    json_t *work_orders; /* borrowed */
} spec;

static int one(store_tx *tx, const char *sql, const char *arg, int64_t *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, sql, "s", arg);
    if (rc) return rc;
    rc = store_step(s, err);
    *out = rc > 0 ? store_int(s, 0) : 0;
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int get_time(json_t *o, const char *key, int required, int64_t *out, gp_err *err) {
    const char *v;
    int rc = jx_get_str(o, key, required, &v, err);
    *out = 0;
    if (rc || !v) return rc;
    if (gt_parse_rfc3339(v, out))
        return gp_err_set(err, GP_EINVALID, "%s must be an RFC 3339 time (2026-12-01T10:00:00Z)",
                          key);
    return GP_OK;
}

/* Is `name` one of the strings of array `names`? */
static int names_has(json_t *names, const char *name) {
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), name))
        return 1;
    return 0;
}

/* A class's form and card models, as class_cards_of reads them (STORE_COLS). */
#define CLASS_FORM_COLUMNS(X)                                                             \
    X(CF_FORM, "form")                                                                    \
    X(CF_MODELS, "gpu_models")
enum { CLASS_FORM_COLUMNS(STORE_COL_ENUM) CF__N };

/* A card of a pool with its node, as class_cards_of reads it (STORE_COLS). */
#define POOL_CARD_COLUMNS(X)                                                              \
    X(CC_MODEL, "g.model")                                                                \
    X(CC_MODE, "g.mode")                                                                  \
    X(CC_NODE, "n.name")
enum { POOL_CARD_COLUMNS(STORE_COL_ENUM) CC__N };

/* How many cards of class `cls` (its models, its form) the nodes of pool `pool` have (only:
 * of those nodes named in `only`, when not NULL). */
static int class_cards_of(store_tx *tx, const char *pool, const char *cls, json_t *only,
                          int64_t *cards, gp_err *err) {
    store_stmt *s;
    *cards = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(CLASS_FORM_COLUMNS) " FROM classes WHERE name = ?",
                         "s", cls);
    if (rc) return rc;
    rc = store_step(s, err);
    char form[64] = "";
    json_t *models = NULL;
    if (rc > 0) {
        snprintf(form, sizeof form, "%s", store_text(s, CF_FORM));
        models = json_loads(store_text(s, CF_MODELS), 0, NULL);
    }
    store_done(s);
    if (rc <= 0) return rc < 0 ? rc : GP_OK;
    inv_form f;
    const char *mode = inv_form_parse(form, &f, NULL) ? "whole"
                       : f.kind == FORM_MIG            ? "mig"
                       : f.kind == FORM_SHARED         ? "shared"
                                                       : "whole";
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(POOL_CARD_COLUMNS)
                     " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                     " WHERE n.pool = ?",
                     "s", pool);
    if (rc) {
        json_decref(models);
        return rc;
    }
    while ((rc = store_step(s, err)) > 0) {
        if (strcmp(store_text(s, CC_MODE), mode)) continue;
        if (only && !names_has(only, store_text(s, CC_NODE))) continue;
        size_t i;
        json_t *m;
        json_array_foreach(models, i, m) {
            if (inv_model_matches(json_string_value(m), store_text(s, CC_MODEL))) {
                (*cards)++;
                break;
            }
        }
    }
    store_done(s);
    json_decref(models);
    return rc < 0 ? rc : GP_OK;
}

static int class_cards(store_tx *tx, const char *pool, const char *cls, int64_t *cards,
                       gp_err *err) {
    return class_cards_of(tx, pool, cls, NULL, cards, err);
}

/* Check spec `o` (a create's body, or a patch merged over the stored spec) whole. */
static int check_spec(store_tx *tx, json_t *o, int64_t now, spec *p, gp_err *err) {
    static const char *const fields[] = {
        "name",       "tenant",      "project",   "maintenance", "pool",  "class",
        "count",      "nodes",       "start",     "end",         "recurrence", "weekdays",
        "every_seconds", "until",    "end_policy", "drain_before_seconds", "work_orders",
        "description", NULL};
    const char *tenant, *project;
    int maint = 0, has_maint, has_count, has_every, has_drain;
    int64_t start, end, until, every = 0;
    int rc;
    memset(p, 0, sizeof *p);
    if ((rc = jx_only_fields(o, fields, err)) || (rc = jx_get_str(o, "name", 1, &p->name, err)) ||
        (rc = jx_get_str(o, "tenant", 0, &tenant, err)) ||
        (rc = jx_get_str(o, "project", 0, &project, err)) ||
        (rc = jx_get_bool(o, "maintenance", 0, &maint, &has_maint, err)) ||
        (rc = jx_get_str(o, "pool", 0, &p->pool, err)) ||
        (rc = jx_get_str(o, "class", 0, &p->cls, err)) ||
        (rc = jx_get_int(o, "count", 0, &p->count, &has_count, err)) ||
        (rc = get_time(o, "start", 1, &start, err)) || (rc = get_time(o, "end", 1, &end, err)) ||
        (rc = get_time(o, "until", 0, &until, err)) ||
        (rc = jx_get_str(o, "recurrence", 0, &p->recurrence, err)) ||
        (rc = jx_get_int(o, "every_seconds", 0, &every, &has_every, err)) ||
        (rc = jx_get_str(o, "end_policy", 0, &p->end_policy, err)) ||
        (rc = jx_get_int(o, "drain_before_seconds", 0, &p->drain_before_s, &has_drain, err)) ||
        (rc = jx_get_str(o, "description", 0, &p->description, err)))
        return rc;
    if (!gp_name_valid(p->name))
        return gp_err_set(err, GP_EINVALID, "reservation name: [a-z0-9-], 1-63");
    /* the holder: a tenant (maybe one of its projects), or nobody (maintenance) */
    p->maintenance = maint;
    if (maint == !!tenant)
        return gp_err_set(err, GP_EINVALID,
                          "a reservation is for a tenant (\"tenant\") or a maintenance window "
                          "(\"maintenance\": true), one of them");
    if (project && !tenant)
        return gp_err_set(err, GP_EINVALID, "a project's reservation names its tenant too");
    if (tenant) {
        tenancy_tenant t;
        tenancy_project pj;
        gp_err e2 = GP_ERR_INIT;
        if (tenancy_tenant_find(tx, tenant, &t, &e2))
            return e2.code == GP_ENOTFOUND
                       ? gp_err_set(err, GP_EINVALID, "tenant '%.64s' does not exist", tenant)
                       : gp_err_set(err, e2.code, "%s", e2.msg);
        snprintf(p->tenant_id, sizeof p->tenant_id, "%s", t.id);
        if (project) {
            if (tenancy_project_find(tx, &t, project, &pj, &e2))
                return e2.code == GP_ENOTFOUND
                           ? gp_err_set(err, GP_EINVALID,
                                        "project '%.64s' of tenant '%.64s' does not exist",
                                        project, tenant)
                           : gp_err_set(err, e2.code, "%s", e2.msg);
            snprintf(p->project_id, sizeof p->project_id, "%s", pj.id);
        }
    }
    /* what it holds: named nodes, or a count of a class's cards in a pool */
    p->nodes = json_object_get(o, "nodes");
    if (json_is_null(p->nodes)) p->nodes = NULL;
    int by_count = p->pool || p->cls || has_count;
    if (!!p->nodes == by_count)
        return gp_err_set(err, GP_EINVALID,
                          "a reservation holds named nodes (\"nodes\") or a count of a class's "
                          "cards in a pool (\"pool\", \"class\", \"count\"), one of them");
    int64_t n = 0;
    if (p->nodes) {
        size_t i, k;
        json_t *v, *w;
        if (!json_is_array(p->nodes) || json_array_size(p->nodes) < 1 ||
            json_array_size(p->nodes) > RSV_MAX_NAMED)
            return gp_err_set(err, GP_EINVALID, "nodes must be a list of 1 to %d node names",
                              RSV_MAX_NAMED);
        json_array_foreach(p->nodes, i, v) {
            if (!json_is_string(v)) return gp_err_set(err, GP_EINVALID, "nodes must be node names");
            json_array_foreach(p->nodes, k, w) if (k < i && json_equal(v, w)) return gp_err_set(
                err, GP_EINVALID, "node '%.64s' is named twice", json_string_value(v));
            if ((rc = one(tx, "SELECT COUNT(*) FROM nodes WHERE name = ?", json_string_value(v),
                          &n, err)))
                return rc;
            if (!n)
                return gp_err_set(err, GP_EINVALID, "node '%.64s' does not exist",
                                  json_string_value(v));
        }
    } else {
        if (!p->pool || !p->cls || !has_count)
            return gp_err_set(err, GP_EINVALID, "a count needs \"pool\", \"class\" and \"count\"");
        if (p->count < 1) return gp_err_set(err, GP_EINVALID, "count must be at least 1");
        if ((rc = one(tx, "SELECT COUNT(*) FROM pools WHERE name = ?", p->pool, &n, err)))
            return rc;
        if (!n) return gp_err_set(err, GP_EINVALID, "pool '%.64s' does not exist", p->pool);
        if ((rc = one(tx, "SELECT COUNT(*) FROM classes WHERE name = ?", p->cls, &n, err)))
            return rc;
        if (!n)
            return gp_err_set(err, GP_EINVALID, "resource class '%.64s' does not exist", p->cls);
        if ((rc = class_cards(tx, p->pool, p->cls, &n, err))) return rc;
        if (p->count > n)
            return gp_err_set(err, GP_EINVALID,
                              "count %lld is more than the %lld cards of class %.64s in pool %.64s",
                              (long long)p->count, (long long)n, p->cls, p->pool);
    }
    /* when: the first window, its recurrence up to the horizon */
    if (!p->recurrence) p->recurrence = "none";
    json_t *wds = json_object_get(o, "weekdays");
    if (json_is_null(wds)) wds = NULL;
    unsigned mask = 0;
    if (wds) {
        size_t i;
        json_t *v;
        if (!json_is_array(wds)) return gp_err_set(err, GP_EINVALID, "weekdays must be a list");
        json_array_foreach(wds, i, v) {
            int d = -1;
            for (int k = 0; k < 7; k++)
                if (json_is_string(v) && !strcmp(json_string_value(v), wd_names[k])) d = k;
            if (d < 0)
                return gp_err_set(err, GP_EINVALID,
                                  "weekdays are mon, tue, wed, thu, fri, sat, sun");
            mask |= 1u << d;
        }
    }
    if (rsv_rule_from(p->recurrence, start, end, mask, every, until, &p->rule))
        return gp_err_set(err, GP_EINVALID,
                          "recurrence must be none, daily, weekly, weekdays or every");
    if ((wds && json_array_size(wds) && p->rule.kind != RSV_WEEKDAYS) ||
        (p->rule.kind == RSV_WEEKDAYS && !wds))
        return gp_err_set(err, GP_EINVALID, "weekdays go with recurrence weekdays (and it needs them)");
    if ((has_every && p->rule.kind != RSV_EVERY) || (p->rule.kind == RSV_EVERY && !has_every))
        return gp_err_set(err, GP_EINVALID,
                          "every_seconds goes with recurrence every (and it needs it)");
    if (p->rule.kind == RSV_ONCE && until)
        return gp_err_set(err, GP_EINVALID, "until is the horizon of a recurring reservation");
    const char *why = rsv_rule_check(&p->rule);
    if (why) return gp_err_set(err, GP_EINVALID, "%s", why);
    rsv_span cur;
    if (!rsv_current(&p->rule, now, &cur))
        return gp_err_set(err, GP_EINVALID, "the reservation would be over already (every "
                                            "window ends in the past)");
    /* the end: stop what still runs in it (with the grace period), or let it run */
    if (!p->end_policy) p->end_policy = "stop";
    if (strcmp(p->end_policy, "stop") && strcmp(p->end_policy, "run"))
        return gp_err_set(err, GP_EINVALID, "end_policy must be stop or run");
    /* a maintenance window: how long before it its nodes drain; the work orders it serves */
    if (!has_drain) p->drain_before_s = maint && p->nodes ? 3600 : 0;
    if (p->drain_before_s < 0 || p->drain_before_s > 7 * 86400)
        return gp_err_set(err, GP_EINVALID, "drain_before_seconds must be 0 .. 604800");
    if (p->drain_before_s && !(maint && p->nodes))
        return gp_err_set(err, GP_EINVALID,
                          "drain_before_seconds is a maintenance window's on named nodes");
    p->work_orders = json_object_get(o, "work_orders");
    if (json_is_null(p->work_orders)) p->work_orders = NULL;
    if (p->work_orders) {
        size_t i;
        json_t *v;
        if (!maint) return gp_err_set(err, GP_EINVALID, "work_orders are a maintenance window's");
        if (!json_is_array(p->work_orders) || json_array_size(p->work_orders) > 64)
            return gp_err_set(err, GP_EINVALID, "work_orders must be a list of up to 64 ids");
        json_array_foreach(p->work_orders, i, v) {
            if (!json_is_string(v)) return gp_err_set(err, GP_EINVALID, "work_orders are ids");
            if ((rc = one(tx, "SELECT COUNT(*) FROM work_orders WHERE id = ?",
                          json_string_value(v), &n, err)))
                return rc;
            if (!n)
                return gp_err_set(err, GP_EINVALID, "work order '%.64s' does not exist",
                                  json_string_value(v));
        }
    }
    if (!p->description) p->description = "";
    if (strlen(p->description) > 500)
        return gp_err_set(err, GP_EINVALID, "description: at most 500 characters");
    return GP_OK;
}

/* ---- overlaps: no two reservations on the same cards at the same time ---- */

/* Another stored reservation, as the overlap check reads it. */
typedef struct other_rsv {
    char name[64], pool[64], cls[64];
    rsv_holder holder;
    rsv_rule rule;
    int64_t count;
    json_t *nodes; /* owned; NULL or [] for a count */
} other_rsv;

static void others_free(other_rsv *o, int n) {
    for (int i = 0; i < n; i++) json_decref(o[i].nodes);
    free(o);
}

/* Another reservation, as others_load reads it (STORE_COLS). */
#define OTHER_COLUMNS(X)                                                                  \
    X(OR_ID, "id")                                                                        \
    X(OR_NAME, "name")                                                                    \
    X(OR_TENANT_ID, "COALESCE(tenant_id, '')")                                            \
    X(OR_PROJECT_ID, "COALESCE(project_id, '')")                                          \
    X(OR_POOL, "pool")                                                                    \
    X(OR_CLASS, "class")                                                                  \
    X(OR_COUNT, "count")                                                                  \
    X(OR_NODES, "nodes")                                                                  \
    X(OR_START, "start_us")                                                               \
    X(OR_END, "end_us")                                                                   \
    X(OR_RECURRENCE, "recurrence")                                                        \
    X(OR_WEEKDAYS, "weekdays")                                                            \
    X(OR_EVERY, "every_s")                                                                \
    X(OR_UNTIL, "until_us")
enum { OTHER_COLUMNS(STORE_COL_ENUM) OR__N };

/* Every reservation not deleted but `self_id` ("" none) whose occurrences are not all over. */
static int others_load(store_tx *tx, const char *self_id, int64_t now, other_rsv **out, int *nout,
                       gp_err *err) {
    store_stmt *s;
    *out = NULL;
    *nout = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(OTHER_COLUMNS)
                         " FROM reservations WHERE deleted_at = 0 AND id <> ?"
                         " ORDER BY start_us, name",
                         "s", self_id);
    if (rc) return rc;
    other_rsv *v = NULL;
    int n = 0, cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        rsv_rule rule;
        rsv_span cur;
        rsv_rule_from(store_text(s, OR_RECURRENCE), store_int(s, OR_START), store_int(s, OR_END),
                      store_int(s, OR_WEEKDAYS), store_int(s, OR_EVERY), store_int(s, OR_UNTIL),
                      &rule);
        if (rule.kind < 0 || !rsv_current(&rule, now, &cur)) continue; /* over: holds nothing */
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            other_rsv *nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            v = nv;
        }
        other_rsv *o = &v[n++];
        memset(o, 0, sizeof *o);
        snprintf(o->holder.id, sizeof o->holder.id, "%s", store_text(s, OR_ID));
        snprintf(o->name, sizeof o->name, "%s", store_text(s, OR_NAME));
        snprintf(o->holder.tenant_id, sizeof o->holder.tenant_id, "%s",
                 store_text(s, OR_TENANT_ID));
        snprintf(o->holder.project_id, sizeof o->holder.project_id, "%s",
                 store_text(s, OR_PROJECT_ID));
        o->holder.maintenance = !store_text(s, OR_TENANT_ID)[0];
        snprintf(o->pool, sizeof o->pool, "%s", store_text(s, OR_POOL));
        snprintf(o->cls, sizeof o->cls, "%s", store_text(s, OR_CLASS));
        o->count = store_int(s, OR_COUNT);
        o->nodes = json_loads(store_text(s, OR_NODES), 0, NULL);
        o->rule = rule;
    }
    store_done(s);
    if (rc < 0) {
        others_free(v, n);
        return rc;
    }
    *out = v;
    *nout = n;
    return GP_OK;
}

/* The first node named by both lists, or NULL. */
static const char *shared_node(json_t *a, json_t *b) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (json_is_string(v) && names_has(b, json_string_value(v)))
        return json_string_value(v);
    return NULL;
}

static int too_dense(gp_err *err) {
    return gp_err_set(err, GP_EINVALID,
                      "too many occurrences to check against the other reservations (more than "
                      "%d moments): use a longer period or a nearer horizon",
                      RSV_WALK_MAX);
}

/*
 * The group of pool `pool`'s cards of class `cls`: do mine_cards of them in p's occurrences,
 * with what the others take of them at the same time, add up to more than the pool has?
 * GP_ECONFLICT with *clash.
 */
static int group_check(store_tx *tx, const spec *p, int64_t mine_cards, const char *pool,
                       const char *cls, other_rsv *o, int n, int64_t now, rsv_clash *clash,
                       gp_err *err) {
    int64_t cards = 0;
    int rc = class_cards(tx, pool, cls, &cards, err);
    if (rc || mine_cards <= 0) return rc;
    rsv_load *ld = calloc((size_t)n + 1, sizeof *ld);
    if (!ld) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < n && !rc; i++) {
        int64_t take = 0;
        if (o[i].count) {
            if (!strcmp(o[i].pool, pool) && !strcmp(o[i].cls, cls)) take = o[i].count;
        } else if (json_array_size(o[i].nodes)) {
            rc = class_cards_of(tx, pool, cls, o[i].nodes, &take, err);
        }
        ld[i] = (rsv_load){o[i].rule, (int)(take > 1000000 ? 1000000 : take)};
    }
    int who = -1, load = 0, hit = 0;
    rsv_span at = {0, 0};
    if (!rc)
        hit = rsv_peak_over(&p->rule, (int)(mine_cards > 1000000 ? 1000000 : mine_cards), ld, n,
                            (int)(cards > 1000000 ? 1000000 : cards), now, &who, &at, &load);
    free(ld);
    if (rc) return rc;
    if (hit < 0) return too_dense(err);
    if (!hit) return GP_OK;
    memset(clash, 0, sizeof *clash);
    snprintf(clash->name, sizeof clash->name, "%s", o[who].name);
    clash->holder = o[who].holder;
    clash->start_us = at.t1_us;
    clash->end_us = at.t2_us;
    clash->by_count = 1;
    snprintf(clash->pool, sizeof clash->pool, "%s", pool);
    snprintf(clash->cls, sizeof clash->cls, "%s", cls);
    clash->cards = (int)cards;
    clash->taken = load;
    clash->wanted = (int)mine_cards;
    char t1[32], t2[32];
    rsv_fmt_time(at.t1_us, t1, sizeof t1);
    rsv_fmt_time(at.t2_us, t2, sizeof t2);
    return gp_err_set(err, GP_ECONFLICT,
                      "reservation '%.64s' (with the others in force then) holds %d of the %lld "
                      "cards of class %.64s in pool %.64s from %s to %s: %lld more would be too "
                      "many",
                      o[who].name, load, (long long)cards, cls, pool, t1, t2,
                      (long long)mine_cards);
}

/*
 * Does spec p (self_id: the reservation it updates, "" a new one) hold what another holds at
 * the same time, from now on?  Named nodes: another naming one of them, its occurrences
 * overlapping.  Cards of a class in a pool: p's count (or the cards of that class on its
 * nodes, for each pool and class another's count holds) with the counts of that class in
 * that pool and the other named nodes' cards of that class in force at the same moment, more
 * than the pool has.  Counts of another class, whose cards may be others, are not added up.
 */
static int overlap_check(store_tx *tx, const spec *p, const char *self_id, int64_t now,
                         rsv_clash *clash, gp_err *err) {
    other_rsv *o;
    int n, rc = others_load(tx, self_id, now, &o, &n, err);
    if (rc) return rc;
    rsv_load *ld = calloc((size_t)n + 1, sizeof *ld);
    if (!ld) rc = gp_err_set(err, GP_ENOMEM, NULL);
    /* named nodes: a node named by both is a group of one card each takes whole */
    if (!rc && p->nodes) {
        for (int i = 0; i < n; i++)
            ld[i] = (rsv_load){o[i].rule,
                               o[i].nodes && shared_node(p->nodes, o[i].nodes) ? 1 : 0};
        int who = -1, load = 0;
        rsv_span at = {0, 0};
        int hit = rsv_peak_over(&p->rule, 1, ld, n, 1, now, &who, &at, &load);
        if (hit < 0) {
            rc = too_dense(err);
        } else if (hit) {
            memset(clash, 0, sizeof *clash);
            snprintf(clash->name, sizeof clash->name, "%s", o[who].name);
            clash->holder = o[who].holder;
            clash->start_us = at.t1_us;
            clash->end_us = at.t2_us;
            snprintf(clash->node, sizeof clash->node, "%s", shared_node(p->nodes, o[who].nodes));
            clash->cards = 1;
            clash->taken = 1;
            clash->wanted = 1;
            char t1[32], t2[32];
            rsv_fmt_time(at.t1_us, t1, sizeof t1);
            rsv_fmt_time(at.t2_us, t2, sizeof t2);
            rc = gp_err_set(err, GP_ECONFLICT,
                            "reservation '%.64s' holds node %.64s from %s to %s too: the windows "
                            "overlap",
                            o[who].name, clash->node, t1, t2);
        }
    }
    free(ld);
    /* the cards of a class in a pool */
    if (!rc && !p->nodes) {
        rc = group_check(tx, p, p->count, p->pool, p->cls, o, n, now, clash, err);
    } else if (!rc) {
        for (int i = 0; i < n && !rc; i++) {
            if (!o[i].count) continue;
            int seen = 0; /* each pool and class once */
            for (int k = 0; k < i && !seen; k++)
                seen = o[k].count && !strcmp(o[k].pool, o[i].pool) && !strcmp(o[k].cls, o[i].cls);
            if (seen) continue;
            int64_t mine = 0;
            rc = class_cards_of(tx, o[i].pool, o[i].cls, p->nodes, &mine, err);
            if (!rc && mine)
                rc = group_check(tx, p, mine, o[i].pool, o[i].cls, o, n, now, clash, err);
        }
    }
    others_free(o, n);
    return rc;
}

/* The stored reservation `name` as a spec (the fields a create takes), for a patch. */
static int stored_spec(store_tx *tx, const char *name, json_t **out, rsv_holder *who,
                       gp_err *err) {
    json_t *o;
    int rc = rsv_get(tx, name, gt_now_us(), &o, who, err);
    if (rc) return rc;
    static const char *const keep[] = {"name", "tenant", "project", "pool", "class", "count",
                                       "nodes", "start", "end", "recurrence", "weekdays",
                                       "every_seconds", "until", "end_policy",
                                       "drain_before_seconds", "work_orders", "description",
                                       NULL};
    json_t *sp = json_object();
    for (int i = 0; keep[i]; i++) {
        json_t *v = json_object_get(o, keep[i]);
        if (!v || json_is_null(v)) continue;
        if (json_is_array(v) && !json_array_size(v)) continue;
        json_object_set(sp, keep[i], v);
    }
    if (who->maintenance) json_object_set_new(sp, "maintenance", json_true());
    json_decref(o);
    *out = sp;
    return GP_OK;
}

/* What a stored spec holds, read as it is (it was checked when written; its window may be over
 * since): its rule, count, nodes and project. */
static void loose_spec(json_t *o, spec *p) {
    int64_t t1 = 0, t2 = 0, until = 0, mask = 0;
    memset(p, 0, sizeof *p);
    gt_parse_rfc3339(json_string_value(json_object_get(o, "start")) ? json_string_value(json_object_get(o, "start")) : "", &t1);
    gt_parse_rfc3339(json_string_value(json_object_get(o, "end")) ? json_string_value(json_object_get(o, "end")) : "", &t2);
    if (json_string_value(json_object_get(o, "until")))
        gt_parse_rfc3339(json_string_value(json_object_get(o, "until")), &until);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(o, "weekdays"), i, v) {
        for (int k = 0; k < 7; k++)
            if (json_is_string(v) && !strcmp(json_string_value(v), wd_names[k])) mask |= 1 << k;
    }
    const char *rec = json_string_value(json_object_get(o, "recurrence"));
    rsv_rule_from(rec ? rec : "none", t1, t2, mask,
                  json_integer_value(json_object_get(o, "every_seconds")), until, &p->rule);
    p->count = json_integer_value(json_object_get(o, "count"));
    p->nodes = json_object_get(o, "nodes");
    if (json_object_get(o, "project")) snprintf(p->project_id, sizeof p->project_id, "%s", "p");
}

/* Does node list `b` name a node `a` does not? */
static int adds_nodes(json_t *a, json_t *b) {
    size_t i, k;
    json_t *v, *w;
    json_array_foreach(b, i, v) {
        int seen = 0;
        json_array_foreach(a, k, w) seen |= json_equal(v, w);
        if (!seen) return 1;
    }
    return 0;
}

int rsv_put(store_tx *tx, const char *name, json_t *body, const char *actor, int64_t now,
            json_t **out, int *widened, json_t **changes, rsv_clash *clash, gp_err *err) {
    rsv_clash scratch;
    json_t *merged, *old = NULL;
    rsv_holder oldh;
    spec p, op;
    int rc;
    *out = NULL;
    if (widened) *widened = 0;
    if (changes) *changes = NULL;
    if (!clash) clash = &scratch;
    memset(clash, 0, sizeof *clash);
    if (!json_is_object(body)) return gp_err_set(err, GP_EINVALID, "the body must be an object");
    if (name) {
        if ((rc = stored_spec(tx, name, &old, &oldh, err))) return rc;
        json_t *nm = json_object_get(body, "name");
        if (nm && !(json_is_string(nm) && !strcmp(json_string_value(nm), name))) {
            json_decref(old);
            return gp_err_set(err, GP_EINVALID, "a reservation's name does not change");
        }
        merged = json_deep_copy(old);
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v) {
            if (json_is_null(v)) json_object_del(merged, k);
            else json_object_set(merged, k, v);
        }
    } else {
        merged = json_deep_copy(body);
    }
    if (!merged) {
        json_decref(old);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    rc = check_spec(tx, merged, now, &p, err);
    if (!rc && name &&
        (p.maintenance != oldh.maintenance || strcmp(p.tenant_id, oldh.tenant_id) != 0))
        rc = gp_err_set(err, GP_EINVALID, "a reservation's holder does not change: delete it and "
                                          "create another");
    if (!rc && !name) {
        int64_t taken = 0;
        rc = one(tx, "SELECT COUNT(*) FROM reservations WHERE name = ? AND deleted_at = 0",
                 p.name, &taken, err);
        if (!rc && taken)
            rc = gp_err_set(err, GP_ECONFLICT, "a reservation named '%.64s' exists", p.name);
    }
    /* nothing another holds at the same time */
    if (!rc) rc = overlap_check(tx, &p, name ? oldh.id : "", now, clash, err);
    char *nodes = NULL, *wos = NULL;
    if (!rc) {
        nodes = p.nodes ? jx_dump(p.nodes) : strdup("[]");
        wos = p.work_orders ? jx_dump(p.work_orders) : strdup("[]");
        if (!nodes || !wos) rc = gp_err_set(err, GP_ENOMEM, NULL);
    }
    if (!rc && !name) {
        char id[RND_ID_LEN];
        rnd_id(id);
        if (!rc)
            rc = store_exec(tx, NULL, err,
                            "INSERT INTO reservations (id, name, tenant_id, project_id, pool,"
                            " class, count, nodes, start_us, end_us, recurrence, weekdays,"
                            " every_s, until_us, end_policy, drain_before_s, work_orders,"
                            " description, created_by, created_at, updated_at)"
                            " VALUES (?,?,NULLIF(?, ''),NULLIF(?, ''),?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            "ssssssisiisiiisisssii", id, p.name, p.tenant_id, p.project_id,
                            p.pool ? p.pool : "", p.cls ? p.cls : "", p.count, nodes,
                            p.rule.t1_us, p.rule.t2_us, p.recurrence, (int64_t)p.rule.weekdays,
                            p.rule.every_s, p.rule.until_us, p.end_policy, p.drain_before_s, wos,
                            p.description, actor, now, now);
    } else if (!rc) {
        rc = store_exec(tx, NULL, err,
                        "UPDATE reservations SET project_id = NULLIF(?, ''), pool = ?, class = ?,"
                        " count = ?, nodes = ?, start_us = ?, end_us = ?, recurrence = ?,"
                        " weekdays = ?, every_s = ?, until_us = ?, end_policy = ?,"
                        " drain_before_s = ?, work_orders = ?, description = ?, updated_at = ?"
                        " WHERE id = ?",
                        "sssisiisiiisissis", p.project_id, p.pool ? p.pool : "",
                        p.cls ? p.cls : "", p.count, nodes, p.rule.t1_us, p.rule.t2_us,
                        p.recurrence, (int64_t)p.rule.weekdays, p.rule.every_s, p.rule.until_us,
                        p.end_policy, p.drain_before_s, wos, p.description, now, oldh.id);
    }
    free(nodes);
    free(wos);
    /* a patch: what it changed, and whether the reservation holds more than before */
    if (!rc && name) {
        loose_spec(old, &op);
        json_t *ch = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v) {
            json_t *was = json_object_get(old, k);
            if (!(was ? json_equal(was, v) : json_is_null(v))) json_array_append_new(ch, json_string(k));
        }
        int w = p.rule.t1_us < op.rule.t1_us || p.rule.t2_us > op.rule.t2_us ||
                (p.rule.t2_us - p.rule.t1_us) > (op.rule.t2_us - op.rule.t1_us) ||
                p.count > op.count || (p.nodes && (!op.nodes || adds_nodes(op.nodes, p.nodes))) ||
                (!op.nodes && p.nodes) || p.rule.until_us > op.rule.until_us ||
                p.rule.kind != op.rule.kind || p.rule.weekdays != op.rule.weekdays ||
                p.rule.every_s != op.rule.every_s || (op.project_id[0] && !p.project_id[0]);
        if (widened) *widened = w;
        if (changes) *changes = ch;
        else json_decref(ch);
    }
    if (!rc) rc = rsv_get(tx, p.name, now, out, NULL, err);
    json_decref(merged);
    json_decref(old);
    return rc;
}

/* ---- a job's reservation ---- */

/* The reservation a job names, as rsv_for_job reads it (STORE_COLS). */
#define FOR_JOB_COLUMNS(X)                                                                \
    X(FJ_ID, "id")                                                                        \
    X(FJ_PROJECT_ID, "COALESCE(project_id, '')")                                          \
    X(FJ_CLASS, "class")                                                                  \
    X(FJ_COUNT, "count")                                                                  \
    X(FJ_NODES, "nodes")                                                                  \
    X(FJ_START, "start_us")                                                               \
    X(FJ_END, "end_us")                                                                   \
    X(FJ_RECURRENCE, "recurrence")                                                        \
    X(FJ_WEEKDAYS, "weekdays")                                                            \
    X(FJ_EVERY, "every_s")                                                                \
    X(FJ_UNTIL, "until_us")
enum { FOR_JOB_COLUMNS(STORE_COL_ENUM) FJ__N };

int rsv_for_job(store_tx *tx, const char *name, const char *tenant_id, const char *project_id,
                const char *cls, int64_t cards, int64_t time_limit_s, int64_t now,
                char id[RND_ID_LEN], gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(FOR_JOB_COLUMNS) " FROM reservations"
                         " WHERE name = ? AND deleted_at = 0 AND tenant_id = ?",
                         "ss", name, tenant_id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc <= 0) {
        store_done(s);
        return rc < 0 ? rc
                      : gp_err_set(err, GP_EINVALID,
                                   "reservation '%.64s' does not exist for this tenant", name);
    }
    char proj[RND_ID_LEN], rcls[64];
    snprintf(id, RND_ID_LEN, "%s", store_text(s, FJ_ID));
    snprintf(proj, sizeof proj, "%s", store_text(s, FJ_PROJECT_ID));
    snprintf(rcls, sizeof rcls, "%s", store_text(s, FJ_CLASS));
    int64_t count = store_int(s, FJ_COUNT);
    json_t *nodes = json_loads(store_text(s, FJ_NODES), 0, NULL);
    rsv_rule rule;
    rsv_rule_from(store_text(s, FJ_RECURRENCE), store_int(s, FJ_START), store_int(s, FJ_END),
                  store_int(s, FJ_WEEKDAYS), store_int(s, FJ_EVERY), store_int(s, FJ_UNTIL),
                  &rule);
    store_done(s);
    rsv_span cur;
    int64_t held = count;
    if (!count) {
        /* named nodes: every card of them */
        size_t i;
        json_t *v;
        json_array_foreach(nodes, i, v) {
            int64_t n = 0;
            if ((rc = one(tx,
                          "SELECT COUNT(*) FROM gpus g JOIN nodes n ON n.id = g.node_id"
                          " WHERE n.name = ?",
                          json_string_value(v), &n, err))) {
                json_decref(nodes);
                return rc;
            }
            held += n;
        }
    }
    json_decref(nodes);
    if (proj[0] && strcmp(proj, project_id))
        return gp_err_set(err, GP_EINVALID,
                          "reservation '%.64s' is held by another project of the tenant", name);
    if (count && strcmp(rcls, cls))
        return gp_err_set(err, GP_EINVALID,
                          "reservation '%.64s' holds cards of class %s: submit the job with "
                          "--class %s",
                          name, rcls, rcls);
    if (cards > held)
        return gp_err_set(err, GP_EINVALID,
                          "the job takes %lld cards and reservation '%.64s' holds %lld",
                          (long long)cards, name, (long long)held);
    if (time_limit_s > 0 && time_limit_s > (rule.t2_us - rule.t1_us) / 1000000)
        return gp_err_set(err, GP_EINVALID,
                          "its time limit (%llds) is longer than reservation '%.64s''s window "
                          "(%llds): it could never end by the window's end",
                          (long long)time_limit_s, name,
                          (long long)((rule.t2_us - rule.t1_us) / 1000000));
    if (!rsv_current(&rule, now, &cur))
        return gp_err_set(err, GP_ECONFLICT, "reservation '%.64s' is over", name);
    return GP_OK;
}

/* ---- the leader's tick: the ends of windows ---- */

typedef struct due {
    char job[RND_ID_LEN], tenant[64], project[64], rsv[64];
    int stop; /* 1: stop it (running past its window's end); 0: cancel it (waiting for none) */
    int64_t at;
} due;

static int audit_sched(store_tx *tx, const due *d, const char *action, json_t *sum, gp_err *err) {
    char *text = jx_dump(sum);
    json_decref(sum);
    audit_event ev = {.actor = "scheduler", .action = action, .target_type = "job",
                      .target_id = d->job, .tenant = d->tenant, .project = d->project,
                      .result = "ok", .summary = text};
    int rc = audit_append(tx, &ev, NULL, err);
    free(text);
    return rc;
}

/* Jobs whose reservation says they end now: running past the end of the occurrence they run
 * in (end policy stop), or waiting for a reservation deleted or over. */
/* A job held by a reservation, with the reservation's rule, as jobs_due reads it (STORE_COLS). */
#define DUE_COLUMNS(X)                                                                    \
    X(JD_JOB, "j.id")                                                                     \
    X(JD_STATE, "j.state")                                                                \
    X(JD_STARTED, "COALESCE(j.started_at, 0)")                                            \
    X(JD_NAME, "r.name")                                                                  \
    X(JD_END_POLICY, "r.end_policy")                                                      \
    X(JD_DELETED, "r.deleted_at")                                                         \
    X(JD_START, "r.start_us")                                                             \
    X(JD_END, "r.end_us")                                                                 \
    X(JD_RECURRENCE, "r.recurrence")                                                      \
    X(JD_WEEKDAYS, "r.weekdays")                                                          \
    X(JD_EVERY, "r.every_s")                                                              \
    X(JD_UNTIL, "r.until_us")                                                             \
    X(JD_TENANT, "t.name")                                                                \
    X(JD_PROJECT, "p.name")
enum { DUE_COLUMNS(STORE_COL_ENUM) JD__N };

static int jobs_due(store_tx *tx, int64_t now, due **out, int *nout, gp_err *err) {
    store_stmt *s;
    *out = NULL;
    *nout = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(DUE_COLUMNS) " FROM jobs j"
                         " JOIN reservations r ON r.id = j.reservation_id"
                         " JOIN tenants t ON t.id = j.tenant_id JOIN projects p ON p.id = j.project_id"
                         " WHERE j.reservation_id IS NOT NULL"
                         " AND j.state IN ('queued','admitted','running') ORDER BY j.id",
                         "");
    if (rc) return rc;
    int cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        rsv_rule rule;
        rsv_span sp;
        rsv_rule_from(store_text(s, JD_RECURRENCE), store_int(s, JD_START), store_int(s, JD_END),
                      store_int(s, JD_WEEKDAYS), store_int(s, JD_EVERY), store_int(s, JD_UNTIL),
                      &rule);
        int running = !strcmp(store_text(s, JD_STATE), "running"),
            deleted = store_int(s, JD_DELETED) != 0;
        int64_t at = 0;
        int act = -1;
        if (running) {
            if (deleted || strcmp(store_text(s, JD_END_POLICY), "stop")) continue;
            int64_t started = store_int(s, JD_STARTED);
            /* the occurrence it runs in (or, moved since, the next one from its start) */
            if (!rsv_occurrence_at(&rule, started, &sp) && !rsv_current(&rule, started, &sp))
                sp = (rsv_span){0, 0};
            if (now < sp.t2_us) continue;
            act = 1;
            at = sp.t2_us;
        } else if (deleted || !rsv_current(&rule, now, &sp)) {
            act = 0;
            if (!deleted && rsv_last(&rule, now, &sp)) at = sp.t2_us;
        } else {
            continue;
        }
        if (*nout == cap) {
            cap = cap ? cap * 2 : 8;
            due *nd = realloc(*out, (size_t)cap * sizeof *nd);
            if (!nd) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            *out = nd;
        }
        due *d = &(*out)[(*nout)++];
        memset(d, 0, sizeof *d);
        snprintf(d->job, sizeof d->job, "%s", store_text(s, JD_JOB));
        snprintf(d->rsv, sizeof d->rsv, "%s", store_text(s, JD_NAME));
        snprintf(d->tenant, sizeof d->tenant, "%s", store_text(s, JD_TENANT));
        snprintf(d->project, sizeof d->project, "%s", store_text(s, JD_PROJECT));
        d->stop = act;
        d->at = at;
        if (deleted) d->at = -1;
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *nout = 0;
        return rc;
    }
    return GP_OK;
}

static int settle_jobs(store_tx *tx, int64_t now, int *stopped, int *cancelled, gp_err *err) {
    due *ds;
    int nd, rc = jobs_due(tx, now, &ds, &nd, err);
    if (rc) return rc;
    for (int i = 0; i < nd && !rc; i++) {
        const due *d = &ds[i];
        char reason[240], at[32] = "";
        int changes = 0;
        if (d->at > 0) rsv_fmt_time(d->at, at, sizeof at);
        if (d->stop) {
            snprintf(reason, sizeof reason,
                     "reservation_end: reservation %s ended at %s; stopped (its end policy)",
                     d->rsv, at);
            rc = store_exec(tx, &changes, err,
                            "UPDATE jobs SET state = 'failed', reason = ?, ended_at = ?"
                            " WHERE id = ? AND state = 'running'",
                            "sis", reason, now, d->job);
            if (!rc && changes)
                rc = store_exec(tx, NULL, err,
                                "UPDATE bindings SET end_us = ?, end_reason = 'reservation_end'"
                                " WHERE job_id = ? AND end_us IS NULL",
                                "is", now, d->job);
            if (!rc && changes) rc = jobs__event(tx, d->job, "stopped", reason, err);
            if (!rc && changes)
                rc = audit_sched(tx, d, "job.stop",
                                 json_pack("{s:s,s:s,s:s}", "reservation", d->rsv, "ended_at", at,
                                           "why", "reservation_end"),
                                 err);
            if (!rc && changes) (*stopped)++;
        } else {
            if (d->at < 0)
                snprintf(reason, sizeof reason, "reservation %s was deleted; cancelled", d->rsv);
            else
                snprintf(reason, sizeof reason, "reservation %s is over%s%s%s; cancelled", d->rsv,
                         at[0] ? " (its last window ended at " : "", at, at[0] ? ")" : "");
            rc = store_exec(tx, &changes, err,
                            "UPDATE jobs SET state = 'cancelled', reason = ?, ended_at = ?"
                            " WHERE id = ? AND state IN ('queued','admitted')",
                            "sis", reason, now, d->job);
            if (!rc && changes) rc = jobs__event(tx, d->job, "cancelled", reason, err);
            if (!rc && changes)
                rc = audit_sched(tx, d, "job.cancel",
                                 json_pack("{s:s,s:s}", "reservation", d->rsv, "why", reason),
                                 err);
            if (!rc && changes) (*cancelled)++;
        }
    }
    free(ds);
    return rc;
}

/* ---- maintenance windows on named nodes ---- */

/* A maintenance window's node as it should be now: "cordoned" in an occurrence, "draining"
 * within drain_before of the next one's start, else NULL (given back). */
typedef struct mwant {
    char node[64], rsv_id[RND_ID_LEN], rname[64];
    const char *state;
    char cause[240];
} mwant;

/* What every maintenance window wants of its nodes now (one entry per node: a cordon wins). */
/* A maintenance window, as maint_wants reads it (STORE_COLS). */
#define MAINT_COLUMNS(X)                                                                  \
    X(MW_ID, "id")                                                                        \
    X(MW_NAME, "name")                                                                    \
    X(MW_NODES, "nodes")                                                                  \
    X(MW_START, "start_us")                                                               \
    X(MW_END, "end_us")                                                                   \
    X(MW_RECURRENCE, "recurrence")                                                        \
    X(MW_WEEKDAYS, "weekdays")                                                            \
    X(MW_EVERY, "every_s")                                                                \
    X(MW_UNTIL, "until_us")                                                               \
    X(MW_DRAIN, "drain_before_s")                                                         \
    X(MW_WORK_ORDERS, "work_orders")
enum { MAINT_COLUMNS(STORE_COL_ENUM) MW__N };

static int maint_wants(store_tx *tx, int64_t now, mwant **out, int *nout, gp_err *err) {
    store_stmt *s;
    *out = NULL;
    *nout = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MAINT_COLUMNS) " FROM reservations"
                         " WHERE tenant_id IS NULL AND deleted_at = 0 AND nodes <> '[]'"
                         " ORDER BY start_us, id",
                         "");
    if (rc) return rc;
    int cap = 0;
    while ((rc = store_step(s, err)) > 0) {
        rsv_rule rule;
        rsv_span sp;
        rsv_rule_from(store_text(s, MW_RECURRENCE), store_int(s, MW_START), store_int(s, MW_END),
                      store_int(s, MW_WEEKDAYS), store_int(s, MW_EVERY), store_int(s, MW_UNTIL),
                      &rule);
        if (!rsv_current(&rule, now, &sp)) continue;
        const char *want = now >= sp.t1_us                                  ? "cordoned"
                           : now >= sp.t1_us - store_int(s, MW_DRAIN) * 1000000LL ? "draining"
                                                                                  : NULL;
        if (!want) continue;
        char t1[32], t2[32];
        rsv_fmt_time(sp.t1_us, t1, sizeof t1);
        rsv_fmt_time(sp.t2_us, t2, sizeof t2);
        json_t *nodes = json_loads(store_text(s, MW_NODES), 0, NULL);
        size_t i;
        json_t *v;
        json_array_foreach(nodes, i, v) {
            const char *node = json_string_value(v);
            if (!node) continue;
            int at = -1;
            for (int k = 0; k < *nout; k++)
                if (!strcmp((*out)[k].node, node)) at = k;
            if (at >= 0 && !strcmp((*out)[at].state, "cordoned")) continue;
            if (at < 0) {
                if (*nout == cap) {
                    cap = cap ? cap * 2 : 8;
                    mwant *nw = realloc(*out, (size_t)cap * sizeof *nw);
                    if (!nw) {
                        json_decref(nodes);
                        store_done(s);
                        free(*out);
                        *out = NULL;
                        *nout = 0;
                        return gp_err_set(err, GP_ENOMEM, NULL);
                    }
                    *out = nw;
                }
                at = (*nout)++;
            }
            mwant *w = &(*out)[at];
            memset(w, 0, sizeof *w);
            snprintf(w->node, sizeof w->node, "%s", node);
            snprintf(w->rsv_id, sizeof w->rsv_id, "%s", store_text(s, MW_ID));
            snprintf(w->rname, sizeof w->rname, "%s", store_text(s, MW_NAME));
            w->state = want;
            const char *wos = store_text(s, MW_WORK_ORDERS);
            snprintf(w->cause, sizeof w->cause, "maintenance window %.63s (%s to %s)%s%.80s",
                     store_text(s, MW_NAME), t1, t2, strcmp(wos, "[]") ? ", work orders " : "",
                     strcmp(wos, "[]") ? wos : "");
        }
        json_decref(nodes);
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *nout = 0;
        return rc;
    }
    return GP_OK;
}

static int audit_node(store_tx *tx, const char *node, const char *rname, const char *to,
                      gp_err *err) {
    json_t *sum = json_pack("{s:s,s:s}", "reservation", rname, "admin_state", to);
    char *text = jx_dump(sum);
    json_decref(sum);
    audit_event ev = {.actor = "scheduler", .action = "node.maintenance", .target_type = "node",
                      .target_id = node, .result = "ok", .summary = text};
    int rc = audit_append(tx, &ev, NULL, err);
    free(text);
    return rc;
}

/* Drain and cordon what the windows want now; give back what a window set and no longer
 * wants (over, deleted, moved). */
/* A node held for maintenance with its window's name, as settle_nodes reads it (STORE_COLS). */
#define MAINT_NODE_COLUMNS(X)                                                             \
    X(MN_NODE, "n.name")                                                                  \
    X(MN_RESERVATION, "COALESCE(r.name, n.maint_reservation)")
enum { MAINT_NODE_COLUMNS(STORE_COL_ENUM) MN__N };

static int settle_nodes(store_tx *tx, int64_t now, int *changed, gp_err *err) {
    mwant *ws;
    int nw, rc = maint_wants(tx, now, &ws, &nw, err);
    if (rc) return rc;
    for (int i = 0; i < nw && !rc; i++) {
        int ch = 0;
        rc = inv_node_maintenance(tx, ws[i].node, ws[i].state, ws[i].rsv_id, ws[i].cause,
                                  "scheduler", &ch, err);
        if (!rc && ch) rc = audit_node(tx, ws[i].node, ws[i].rname, ws[i].state, err);
        if (ch) *changed = 1;
    }
    /* the nodes a window set that no window wants now */
    store_stmt *s = NULL;
    char (*back)[64] = NULL;
    char (*from)[64] = NULL;
    int nb = 0, cap = 0;
    if (!rc)
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MAINT_NODE_COLUMNS) " FROM nodes n"
                         " LEFT JOIN reservations r ON r.id = n.maint_reservation"
                         " WHERE n.maint_reservation <> '' ORDER BY n.name",
                         "");
    while (s && (rc = store_step(s, err)) > 0) {
        int wanted = 0;
        for (int k = 0; k < nw; k++) wanted |= !strcmp(ws[k].node, store_text(s, MN_NODE));
        if (wanted) continue;
        if (nb == cap) {
            cap = cap ? cap * 2 : 8;
            void *nb1 = realloc(back, (size_t)cap * sizeof *back), *nb2;
            if (nb1) back = nb1;
            nb2 = nb1 ? realloc(from, (size_t)cap * sizeof *from) : NULL;
            if (nb2) from = nb2;
            if (!nb1 || !nb2) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
        }
        snprintf(back[nb], 64, "%s", store_text(s, MN_NODE));
        snprintf(from[nb], 64, "%s", store_text(s, MN_RESERVATION));
        nb++;
    }
    store_done(s);
    if (rc > 0) rc = GP_OK;
    for (int i = 0; i < nb && !rc; i++) {
        int ch = 0;
        char cause[160];
        snprintf(cause, sizeof cause, "maintenance window %.63s over: back in service", from[i]);
        rc = inv_node_maintenance(tx, back[i], "none", "", cause, "scheduler", &ch, err);
        if (!rc && ch) rc = audit_node(tx, back[i], from[i], "none", err);
        if (ch) *changed = 1;
    }
    free(back);
    free(from);
    free(ws);
    return rc;
}

int rsv_tick(store_tx *tx, int64_t now, int *stopped, int *changed, gp_err *err) {
    int cancelled = 0;
    *stopped = *changed = 0;
    int rc = settle_jobs(tx, now, stopped, &cancelled, err);
    if (!rc && cancelled) *changed = 1;
    if (!rc) rc = settle_nodes(tx, now, changed, err);
    return rc;
}

/* ---- the nodes' upcoming windows ---- */

/* Set o[key] to win when o[key] is null or starts later. */
static void keep_earliest(json_t *o, const char *key, json_t *win) {
    json_t *next = json_object_get(o, key);
    const char *cur = json_is_null(next) ? NULL : json_string_value(json_object_get(next, "start"));
    const char *mine = json_string_value(json_object_get(win, "start"));
    if (!cur || (mine && strcmp(mine, cur) < 0)) json_object_set(o, key, win);
}

/* A reservation on named nodes, as rsv_node_windows reads it (STORE_COLS, RSV_FROM). */
#define WINDOW_COLUMNS(X)                                                                 \
    X(NW_NAME, "r.name")                                                                  \
    X(NW_NODES, "r.nodes")                                                                \
    X(NW_START, "r.start_us")                                                             \
    X(NW_END, "r.end_us")                                                                 \
    X(NW_RECURRENCE, "r.recurrence")                                                      \
    X(NW_WEEKDAYS, "r.weekdays")                                                          \
    X(NW_EVERY, "r.every_s")                                                              \
    X(NW_UNTIL, "r.until_us")                                                             \
    X(NW_DRAIN, "r.drain_before_s")                                                       \
    X(NW_WORK_ORDERS, "r.work_orders")                                                    \
    X(NW_ID, "r.id")                                                                      \
    X(NW_TENANT_ID, "COALESCE(r.tenant_id, '')")                                          \
    X(NW_PROJECT_ID, "COALESCE(r.project_id, '')")                                        \
    X(NW_TENANT, "COALESCE(t.name, '')")                                                  \
    X(NW_PROJECT, "COALESCE(p.name, '')")
enum { WINDOW_COLUMNS(STORE_COL_ENUM) NW__N };

int rsv_node_windows(store_tx *tx, int64_t now, json_t *nodes, rsv_seen_fn seen, void *arg,
                     gp_err *err) {
    store_stmt *s;
    size_t i;
    json_t *o;
    json_array_foreach(nodes, i, o) {
        json_object_set_new(o, "maintenance", json_array());
        json_object_set_new(o, "next_maintenance", json_null());
        json_object_set_new(o, "reservations", json_array());
        json_object_set_new(o, "next_reservation", json_null());
    }
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(WINDOW_COLUMNS) RSV_FROM
                         " WHERE r.deleted_at = 0 AND r.nodes <> '[]' ORDER BY r.start_us, r.name",
                         "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        rsv_rule rule;
        rsv_span sp;
        rsv_rule_from(store_text(s, NW_RECURRENCE), store_int(s, NW_START), store_int(s, NW_END),
                      store_int(s, NW_WEEKDAYS), store_int(s, NW_EVERY), store_int(s, NW_UNTIL),
                      &rule);
        if (!rsv_current(&rule, now, &sp)) continue;
        int maint = !store_text(s, NW_TENANT_ID)[0];
        const char *st = now >= sp.t1_us ? "active"
                         : maint && now >= sp.t1_us - store_int(s, NW_DRAIN) * 1000000LL
                             ? "draining"
                             : "upcoming";
        json_t *names = json_loads(store_text(s, NW_NODES), 0, NULL),
               *wos = json_loads(store_text(s, NW_WORK_ORDERS), 0, NULL);
        json_t *win;
        if (maint) {
            win = json_pack("{s:s,s:o,s:o,s:s,s:O}", "reservation", store_text(s, NW_NAME), "start",
                            jx_time(sp.t1_us), "end", jx_time(sp.t2_us), "state", st,
                            "work_orders", wos ? wos : json_null());
        } else {
            rsv_holder hd;
            memset(&hd, 0, sizeof hd);
            snprintf(hd.id, sizeof hd.id, "%s", store_text(s, NW_ID));
            snprintf(hd.tenant_id, sizeof hd.tenant_id, "%s", store_text(s, NW_TENANT_ID));
            snprintf(hd.project_id, sizeof hd.project_id, "%s", store_text(s, NW_PROJECT_ID));
            int may = !seen || seen(arg, &hd);
            win = json_pack("{s:o,s:o,s:o,s:o,s:o,s:s}", "reservation",
                            may ? json_string(store_text(s, NW_NAME)) : json_null(), "tenant",
                            may ? json_string(store_text(s, NW_TENANT)) : json_null(), "project",
                            may && store_text(s, NW_PROJECT)[0]
                                ? json_string(store_text(s, NW_PROJECT))
                                : json_null(),
                            "start", jx_time(sp.t1_us), "end", jx_time(sp.t2_us), "state", st);
        }
        size_t k;
        json_t *v;
        json_array_foreach(nodes, i, o) {
            const char *nm = json_string_value(json_object_get(o, "name"));
            int named = 0;
            json_array_foreach(names, k, v) named |= nm && json_is_string(v) &&
                                                     !strcmp(json_string_value(v), nm);
            if (!named || !win) continue;
            keep_earliest(o, maint ? "next_maintenance" : "next_reservation", win);
            json_array_append(json_object_get(o, maint ? "maintenance" : "reservations"), win);
        }
        json_decref(win);
        json_decref(names);
        json_decref(wos);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* ---- guarantees: a tenant's reservations in force (sched.h, step 7a) ---- */

typedef struct force_row {
    char id[RND_ID_LEN], tenant[RND_ID_LEN];
    int64_t count;
    json_t *nodes;
} force_row;

/* Add reservation row r's figures to its tenant's entry of f[0..*n) (made if new). */
static int force_add(store_tx *tx, const force_row *r, rsv_force **f, int *n, int *cap,
                     gp_err *err) {
    int64_t held = 0, own = 0, c;
    int rc;
    if (json_array_size(r->nodes)) {
        size_t i;
        json_t *v;
        json_array_foreach(r->nodes, i, v) {
            if (!json_is_string(v)) continue;
            if ((rc = one(tx,
                              "SELECT COUNT(*) FROM gpus g JOIN nodes n ON n.id = g.node_id"
                              " WHERE n.name = ?",
                              json_string_value(v), &c, err)))
                return rc;
            held += c * 1000;
        }
    } else {
        held = r->count * 1000;
    }
    if ((rc = one(tx,
                      "SELECT COALESCE(SUM(b.weight_milli), 0) FROM bindings b"
                      " JOIN jobs j ON j.id = b.job_id"
                      " WHERE b.end_us IS NULL AND j.reservation_id = ?",
                      r->id, &own, err)))
        return rc;
    rsv_force *e = (rsv_force *)rsv_force_of(*f, *n, r->tenant);
    if (!e) {
        if (*n == *cap) {
            int nc = *cap ? *cap * 2 : 4;
            rsv_force *m = realloc(*f, sizeof *m * (size_t)nc);
            if (!m) return gp_err_set(err, GP_ENOMEM, NULL);
            *f = m;
            *cap = nc;
        }
        e = &(*f)[(*n)++];
        memset(e, 0, sizeof *e);
        snprintf(e->tenant_id, sizeof e->tenant_id, "%s", r->tenant);
    }
    char(*ids)[RND_ID_LEN] = realloc(e->ids, sizeof *ids * (size_t)(e->n + 1));
    if (!ids) return gp_err_set(err, GP_ENOMEM, NULL);
    e->ids = ids;
    snprintf(e->ids[e->n++], RND_ID_LEN, "%s", r->id);
    e->held += held;
    e->idle += held > own ? held - own : 0;
    return GP_OK;
}

/* A tenant's reservation, as rsv_forces_load reads it (STORE_COLS). */
#define FORCE_COLUMNS(X)                                                                  \
    X(FR_ID, "id")                                                                        \
    X(FR_TENANT_ID, "tenant_id")                                                          \
    X(FR_COUNT, "count")                                                                  \
    X(FR_NODES, "nodes")                                                                  \
    X(FR_START, "start_us")                                                               \
    X(FR_END, "end_us")                                                                   \
    X(FR_RECURRENCE, "recurrence")                                                        \
    X(FR_WEEKDAYS, "weekdays")                                                            \
    X(FR_EVERY, "every_s")                                                                \
    X(FR_UNTIL, "until_us")
enum { FORCE_COLUMNS(STORE_COL_ENUM) FR__N };

int rsv_forces_load(store_tx *tx, int64_t now, rsv_force **out, int *nout, gp_err *err) {
    store_stmt *s;
    force_row *rows = NULL;
    int nr = 0, cap = 0, fcap = 0;
    *out = NULL;
    *nout = 0;
    /* the rows first, then what each holds (one statement at a time) */
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(FORCE_COLUMNS) " FROM reservations"
                         " WHERE deleted_at = 0 AND COALESCE(tenant_id, '') <> ''"
                         " ORDER BY tenant_id, name",
                         "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        rsv_rule rule;
        rsv_span cur;
        rsv_rule_from(store_text(s, FR_RECURRENCE), store_int(s, FR_START), store_int(s, FR_END),
                      store_int(s, FR_WEEKDAYS), store_int(s, FR_EVERY), store_int(s, FR_UNTIL),
                      &rule);
        if (rule.kind < 0 || !rsv_occurrence_at(&rule, now, &cur)) continue;
        if (nr == cap) {
            cap = cap ? cap * 2 : 8;
            force_row *m = realloc(rows, sizeof *m * (size_t)cap);
            if (!m) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            rows = m;
        }
        force_row *r = &rows[nr++];
        snprintf(r->id, sizeof r->id, "%s", store_text(s, FR_ID));
        snprintf(r->tenant, sizeof r->tenant, "%s", store_text(s, FR_TENANT_ID));
        r->count = store_int(s, FR_COUNT);
        r->nodes = json_loads(store_text(s, FR_NODES), 0, NULL);
    }
    store_done(s);
    for (int i = 0; rc >= 0 && i < nr; i++)
        if ((rc = force_add(tx, &rows[i], out, nout, &fcap, err))) break;
    for (int i = 0; i < nr; i++) json_decref(rows[i].nodes);
    free(rows);
    if (rc < 0) {
        rsv_forces_free(*out, *nout);
        *out = NULL;
        *nout = 0;
        return rc;
    }
    return GP_OK;
}

void rsv_forces_free(rsv_force *f, int n) {
    for (int i = 0; f && i < n; i++) free(f[i].ids);
    free(f);
}

const rsv_force *rsv_force_of(const rsv_force *f, int n, const char *tenant_id) {
    for (int i = 0; i < n; i++)
        if (strcmp(f[i].tenant_id, tenant_id) == 0) return &f[i];
    return NULL;
}

int rsv_force_has(const rsv_force *f, const char *reservation_id) {
    if (!f || !reservation_id || !reservation_id[0]) return 0;
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->ids[i], reservation_id) == 0) return 1;
    return 0;
}
