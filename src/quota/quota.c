/*
 * quota.c - ceilings: parsing, comparison, storage (see quota.h).
 */
#include "quota.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dim_names[QD__N] = {"gpus", "gpu_memory_gib", "cpus", "memory_gib",
                                             "concurrent_jobs", "card_hours_month"};

static const char *const gw_names[QG__N] = {"tokens_month", "requests_per_minute",
                                            "tokens_per_minute"};

const char *quota_dim_name(int d) { return d >= 0 && d < QD__N ? dim_names[d] : "?"; }

void quota_unlimited(quota_set *q) {
    memset(q, 0, sizeof *q);
    for (int d = 0; d < QD__N; d++) q->v[d] = QUOTA_NONE;
    for (int d = 0; d < QG__N; d++) q->g[d] = QUOTA_NONE;
    q->card_hours_grace_s = 600;
    q->guarantee = QUOTA_NONE;
    q->kept = 0;
    q->weight = 1;
}

int quota_gclass(const quota_set *q, const char *name) {
    for (int i = 0; i < q->ngclass; i++)
        if (strcmp(q->gclass_name[i], name) == 0) return i;
    return -1;
}

int quota_gpool(const quota_set *q, const char *name) {
    for (int i = 0; i < q->ngpool; i++)
        if (strcmp(q->gpool_name[i], name) == 0) return i;
    return -1;
}

int64_t quota_guarantee_total(const quota_set *q) {
    int64_t g = q->guarantee == QUOTA_NONE ? 0 : q->guarantee;
    for (int i = 0; i < q->ngclass; i++) g += q->gclass_g[i];
    for (int i = 0; i < q->ngpool; i++) g += q->gpool_g[i];
    return g;
}

int64_t quota_class_limit(const quota_set *q, const char *name) {
    for (int i = 0; i < q->nclass; i++)
        if (strcmp(q->class_name[i], name) == 0) return q->class_units[i];
    return QUOTA_NONE;
}

/* GPUs and card-hours are kept in thousandths. */
static int scaled(int d) { return d == QD_GPU_MILLI || d == QD_CARD_HOURS; }

/* GPUs in milli from a non-negative number (at most 1e12), or GP_EINVALID naming `what`. */
static int gpus_milli(json_t *v, const char *what, int64_t *out, gp_err *err) {
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e12)
        return gp_err_set(err, GP_EINVALID, "%s must be a non-negative number of GPUs (or null)",
                          what);
    *out = (int64_t)llround(json_number_value(v) * 1000.0);
    return GP_OK;
}

/* `field` ("class_guarantees", "pool_guarantees"): {"name": {"guaranteed_gpus": g,
 * "kept_gpus": k}} into the *n entries of name/g/kept (null or absent: none). */
static int parse_guarantees(json_t *cg, const char *field, int *n,
                            char (*name)[64], int64_t *g_out, int64_t *kept, gp_err *err) {
    static const char *const fields[] = {"guaranteed_gpus", "kept_gpus", NULL};
    const char *k;
    json_t *v;
    char what[64];
    if (!cg || json_is_null(cg)) return GP_OK;
    if (!json_is_object(cg) || json_object_size(cg) > QUOTA_MAX_GCLASSES)
        return gp_err_set(err, GP_EINVALID,
                          "%s must map at most %d %s names to "
                          "{\"guaranteed_gpus\": g, \"kept_gpus\": k}",
                          field, QUOTA_MAX_GCLASSES, field[0] == 'c' ? "class" : "pool");
    json_object_foreach(cg, k, v) {
        int i = *n, rc;
        json_t *g = json_object_get(v, "guaranteed_gpus"), *kp = json_object_get(v, "kept_gpus");
        if (!k[0] || strlen(k) >= 64 || !json_is_object(v) || !g || json_is_null(g))
            return gp_err_set(err, GP_EINVALID,
                              "%s: '%.40s' needs {\"guaranteed_gpus\": g} (and "
                              "kept_gpus, optional)",
                              field, k);
        if ((rc = jx_only_fields(v, fields, err))) return rc;
        kept[i] = 0;
        snprintf(what, sizeof what, "%s guaranteed_gpus", field);
        if ((rc = gpus_milli(g, what, &g_out[i], err))) return rc;
        snprintf(what, sizeof what, "%s kept_gpus", field);
        if (kp && !json_is_null(kp) && (rc = gpus_milli(kp, what, &kept[i], err))) return rc;
        if (kept[i] > g_out[i])
            return gp_err_set(err, GP_EINVALID,
                              "%s: '%.40s' keeps %g GPUs, more than its "
                              "guaranteed_gpus %g",
                              field, k, (double)kept[i] / 1000.0, (double)g_out[i] / 1000.0);
        snprintf(name[i], 64, "%s", k);
        (*n)++;
    }
    return GP_OK;
}

/* guaranteed_gpus, kept_gpus, borrow_weight, class_guarantees into q (its gpus ceiling
 * already read). */
static int parse_share(json_t *j, quota_set *q, gp_err *err) {
    json_t *g = json_object_get(j, "guaranteed_gpus"), *k = json_object_get(j, "kept_gpus"),
           *w = json_object_get(j, "borrow_weight");
    int rc;
    if (g && !json_is_null(g) && (rc = gpus_milli(g, "guaranteed_gpus", &q->guarantee, err)))
        return rc;
    if (k && !json_is_null(k) && (rc = gpus_milli(k, "kept_gpus", &q->kept, err))) return rc;
    if (w && !json_is_null(w)) {
        if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 1000)
            return gp_err_set(err, GP_EINVALID, "borrow_weight must be an integer 1..1000");
        q->weight = json_integer_value(w);
    }
    if ((rc = parse_guarantees(json_object_get(j, "class_guarantees"), "class_guarantees",
                               &q->ngclass, q->gclass_name, q->gclass_g, q->gclass_kept, err)) ||
        (rc = parse_guarantees(json_object_get(j, "pool_guarantees"), "pool_guarantees",
                               &q->ngpool, q->gpool_name, q->gpool_g, q->gpool_kept, err)))
        return rc;
    if (q->guarantee != QUOTA_NONE && q->v[QD_GPU_MILLI] != QUOTA_NONE &&
        q->guarantee > q->v[QD_GPU_MILLI])
        return gp_err_set(err, GP_EINVALID, "guaranteed_gpus %g exceeds the gpus ceiling %g",
                          (double)q->guarantee / 1000.0, (double)q->v[QD_GPU_MILLI] / 1000.0);
    if ((q->ngclass || q->ngpool) && q->v[QD_GPU_MILLI] != QUOTA_NONE &&
        quota_guarantee_total(q) > q->v[QD_GPU_MILLI])
        return gp_err_set(err, GP_EINVALID,
                          "guaranteed_gpus, class_guarantees and pool_guarantees add up to %g, "
                          "above the gpus ceiling %g",
                          (double)quota_guarantee_total(q) / 1000.0,
                          (double)q->v[QD_GPU_MILLI] / 1000.0);
    if (q->kept > (q->guarantee == QUOTA_NONE ? 0 : q->guarantee))
        return gp_err_set(err, GP_EINVALID, "kept_gpus %g exceeds guaranteed_gpus %g",
                          (double)q->kept / 1000.0,
                          q->guarantee == QUOTA_NONE ? 0.0 : (double)q->guarantee / 1000.0);
    return GP_OK;
}

int quota_parse(json_t *j, quota_set *out, gp_err *err) {
    static const char *const fields[] = {"gpus", "gpu_memory_gib", "cpus", "memory_gib",
                                         "concurrent_jobs", "card_hours_month", "class_gpus",
                                         "tokens_month", "requests_per_minute",
                                         "tokens_per_minute", "card_hours_policy",
                                         "card_hours_grace_seconds", "guaranteed_gpus",
                                         "kept_gpus", "borrow_weight", "class_guarantees",
                                         "pool_guarantees", NULL};
    quota_set q;
    quota_unlimited(&q);
    if (!json_is_object(j)) return gp_err_set(err, GP_EINVALID, "quota must be an object");
    int rc = jx_only_fields(j, fields, err);
    if (rc) return rc;
    for (int d = 0; d < QD__N; d++) {
        json_t *v = json_object_get(j, dim_names[d]);
        if (!v || json_is_null(v)) continue;
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e12 ||
            (!scaled(d) && !json_is_integer(v)))
            return gp_err_set(err, GP_EINVALID, "%s must be a non-negative %s (or null: no "
                                                "ceiling)",
                              dim_names[d], scaled(d) ? "number" : "integer");
        double x = json_number_value(v);
        q.v[d] = scaled(d) ? (int64_t)llround(x * 1000.0) : (int64_t)x;
    }
    for (int d = 0; d < QG__N; d++) {
        json_t *v = json_object_get(j, gw_names[d]);
        if (!v || json_is_null(v)) continue;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1LL << 50))
            return gp_err_set(err, GP_EINVALID,
                              "%s must be a non-negative integer (or null: no ceiling)", gw_names[d]);
        q.g[d] = json_integer_value(v);
    }
    json_t *pol = json_object_get(j, "card_hours_policy");
    if (pol && !json_is_null(pol)) {
        const char *ps = json_string_value(pol);
        if (!ps || (strcmp(ps, "finish") && strcmp(ps, "stop")))
            return gp_err_set(err, GP_EINVALID, "card_hours_policy must be finish or stop");
        q.card_hours_stop = !strcmp(ps, "stop");
    }
    json_t *gr = json_object_get(j, "card_hours_grace_seconds");
    if (gr && !json_is_null(gr)) {
        if (!json_is_integer(gr) || json_integer_value(gr) < 0 || json_integer_value(gr) > 30 * 86400)
            return gp_err_set(err, GP_EINVALID, "card_hours_grace_seconds must be 0..2592000");
        q.card_hours_grace_s = json_integer_value(gr);
    }
    rc = parse_share(j, &q, err);
    if (rc) return rc;
    json_t *cg = json_object_get(j, "class_gpus");
    if (cg && !json_is_null(cg)) {
        const char *k;
        json_t *v;
        if (!json_is_object(cg) || json_object_size(cg) > QUOTA_MAX_CLASSES)
            return gp_err_set(err, GP_EINVALID, "class_gpus must map at most %d class names to "
                                                "unit ceilings",
                              QUOTA_MAX_CLASSES);
        json_object_foreach(cg, k, v) {
            if (strlen(k) >= 64 || !json_is_integer(v) || json_integer_value(v) < 0)
                return gp_err_set(err, GP_EINVALID, "class_gpus: '%.40s' needs a non-negative "
                                                    "integer",
                                  k);
            snprintf(q.class_name[q.nclass], 64, "%s", k);
            q.class_units[q.nclass++] = json_integer_value(v);
        }
    }
    *out = q;
    return GP_OK;
}

json_t *quota_json(const quota_set *q) {
    json_t *o = json_object(), *cg = json_object();
    for (int d = 0; d < QD__N; d++) {
        json_t *v;
        if (q->v[d] == QUOTA_NONE) v = json_null();
        else if (scaled(d)) v = json_real((double)q->v[d] / 1000.0);
        else v = json_integer(q->v[d]);
        json_object_set_new(o, dim_names[d], v);
    }
    for (int i = 0; i < q->nclass; i++)
        json_object_set_new(cg, q->class_name[i], json_integer(q->class_units[i]));
    json_object_set_new(o, "class_gpus", cg);
    for (int d = 0; d < QG__N; d++)
        json_object_set_new(o, gw_names[d], q->g[d] == QUOTA_NONE ? json_null() : json_integer(q->g[d]));
    json_object_set_new(o, "card_hours_policy", json_string(q->card_hours_stop ? "stop" : "finish"));
    json_object_set_new(o, "card_hours_grace_seconds", json_integer(q->card_hours_grace_s));
    json_object_set_new(o, "guaranteed_gpus", q->guarantee == QUOTA_NONE
                                                  ? json_null()
                                                  : json_real((double)q->guarantee / 1000.0));
    json_object_set_new(o, "kept_gpus", json_real((double)q->kept / 1000.0));
    json_object_set_new(o, "borrow_weight", json_integer(q->weight));
    json_t *gc = json_object();
    for (int i = 0; i < q->ngclass; i++)
        json_object_set_new(gc, q->gclass_name[i],
                            json_pack("{s:f,s:f}", "guaranteed_gpus",
                                      (double)q->gclass_g[i] / 1000.0, "kept_gpus",
                                      (double)q->gclass_kept[i] / 1000.0));
    json_object_set_new(o, "class_guarantees", gc);
    json_t *gp = json_object();
    for (int i = 0; i < q->ngpool; i++)
        json_object_set_new(gp, q->gpool_name[i],
                            json_pack("{s:f,s:f}", "guaranteed_gpus",
                                      (double)q->gpool_g[i] / 1000.0, "kept_gpus",
                                      (double)q->gpool_kept[i] / 1000.0));
    json_object_set_new(o, "pool_guarantees", gp);
    return o;
}

int quota_patch(const quota_set *cur, json_t *patch, quota_set *out, gp_err *err) {
    if (!json_is_object(patch)) return gp_err_set(err, GP_EINVALID, "quota must be an object");
    json_t *merged = quota_json(cur), *pcg = json_object_get(patch, "class_gpus"),
           *pgc = json_object_get(patch, "class_guarantees"),
           *ppg = json_object_get(patch, "pool_guarantees");
    if (pcg && !json_is_null(pcg) && !json_is_object(pcg)) {
        json_decref(merged);
        return gp_err_set(err, GP_EINVALID, "class_gpus must be an object (or null)");
    }
    if (pgc && !json_is_null(pgc) && !json_is_object(pgc)) {
        json_decref(merged);
        return gp_err_set(err, GP_EINVALID, "class_guarantees must be an object (or null)");
    }
    if (ppg && !json_is_null(ppg) && !json_is_object(ppg)) {
        json_decref(merged);
        return gp_err_set(err, GP_EINVALID, "pool_guarantees must be an object (or null)");
    }
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v) {
        if ((strcmp(k, "class_gpus") == 0 || strcmp(k, "class_guarantees") == 0 ||
             strcmp(k, "pool_guarantees") == 0) &&
            json_is_object(v)) {
            /* per class: null lifts it, a value replaces it */
            json_t *cg = json_object_get(merged, k);
            const char *ck;
            json_t *cv;
            json_object_foreach(v, ck, cv) {
                if (json_is_null(cv)) json_object_del(cg, ck);
                else json_object_set(cg, ck, cv);
            }
        } else if (json_is_null(v) && (strcmp(k, "card_hours_policy") == 0 ||
                                       strcmp(k, "card_hours_grace_seconds") == 0 ||
                                       strcmp(k, "kept_gpus") == 0 ||
                                       strcmp(k, "borrow_weight") == 0)) {
            json_object_del(merged, k); /* back to the default */
        } else {
            json_object_set(merged, k, v); /* unknown members fail in quota_parse */
        }
    }
    /* lifting the guarantee lifts its kept part too, unless the patch names one */
    json_t *pg = json_object_get(patch, "guaranteed_gpus");
    if (pg && json_is_null(pg) && !json_object_get(patch, "kept_gpus"))
        json_object_del(merged, "kept_gpus");
    int rc = quota_parse(merged, out, err);
    json_decref(merged);
    return rc;
}

static void fmt(int d, int64_t v, char *buf, size_t n) {
    if (v == QUOTA_NONE) snprintf(buf, n, "none");
    else if (scaled(d)) snprintf(buf, n, "%g", (double)v / 1000.0);
    else snprintf(buf, n, "%lld", (long long)v);
}

json_t *quota_inherited_json(const quota_set *p, const quota_set *t) {
    json_t *o = json_object(), *cg = json_object();
    for (int d = 0; d < QD__N; d++)
        if (p->v[d] == QUOTA_NONE && t->v[d] != QUOTA_NONE)
            json_object_set_new(o, dim_names[d], scaled(d) ? json_real((double)t->v[d] / 1000.0)
                                                           : json_integer(t->v[d]));
    for (int i = 0; i < t->nclass; i++)
        if (quota_class_limit(p, t->class_name[i]) == QUOTA_NONE)
            json_object_set_new(cg, t->class_name[i], json_integer(t->class_units[i]));
    if (json_object_size(cg)) json_object_set_new(o, "class_gpus", cg);
    else json_decref(cg);
    for (int d = 0; d < QG__N; d++)
        if (p->g[d] == QUOTA_NONE && t->g[d] != QUOTA_NONE)
            json_object_set_new(o, gw_names[d], json_integer(t->g[d]));
    return o;
}

int quota_within(const quota_set *p, const quota_set *t, gp_err *err) {
    char a[32], b[32];
    for (int d = 0; d < QD__N; d++) {
        /* a dimension the project leaves open inherits the tenant's ceiling (admission
         * checks both): only a ceiling of its own can exceed the tenant's */
        if (t->v[d] == QUOTA_NONE || p->v[d] == QUOTA_NONE) continue;
        if (p->v[d] > t->v[d]) {
            fmt(d, p->v[d], a, sizeof a);
            fmt(d, t->v[d], b, sizeof b);
            return gp_err_set(err, GP_EINVALID,
                              "project %s ceiling %s exceeds the tenant's %s", dim_names[d], a, b);
        }
    }
    for (int d = 0; d < QG__N; d++) {
        if (t->g[d] == QUOTA_NONE || p->g[d] == QUOTA_NONE) continue;
        if (p->g[d] > t->g[d]) {
            fmt(QD_JOBS, p->g[d], a, sizeof a);
            fmt(QD_JOBS, t->g[d], b, sizeof b);
            return gp_err_set(err, GP_EINVALID,
                              "project %s ceiling %s exceeds the tenant's %s", gw_names[d], a, b);
        }
    }
    for (int i = 0; i < t->nclass; i++) {
        int64_t pl = quota_class_limit(p, t->class_name[i]);
        if (pl != QUOTA_NONE && pl > t->class_units[i])
            return gp_err_set(err, GP_EINVALID,
                              "project class_gpus(%s) ceiling exceeds the tenant's %lld",
                              t->class_name[i], (long long)t->class_units[i]);
    }
    return GP_OK;
}

static int raised(int64_t cur, int64_t next) {
    if (cur == QUOTA_NONE) return 0;
    return next == QUOTA_NONE || next > cur;
}

int quota_raises(const quota_set *cur, const quota_set *next) {
    for (int d = 0; d < QD__N; d++)
        if (raised(cur->v[d], next->v[d])) return 1;
    for (int d = 0; d < QG__N; d++)
        if (raised(cur->g[d], next->g[d])) return 1;
    for (int i = 0; i < cur->nclass; i++)
        if (raised(cur->class_units[i], quota_class_limit(next, cur->class_name[i]))) return 1;
    if (next->guarantee != QUOTA_NONE &&
        (cur->guarantee == QUOTA_NONE || next->guarantee > cur->guarantee))
        return 1;
    for (int i = 0; i < next->ngclass; i++) {
        int c = quota_gclass(cur, next->gclass_name[i]);
        if (c < 0 || next->gclass_g[i] > cur->gclass_g[c] ||
            next->gclass_kept[i] > cur->gclass_kept[c])
            return 1; /* a class guarantee where there was none, or more of one */
    }
    for (int i = 0; i < next->ngpool; i++) {
        int c = quota_gpool(cur, next->gpool_name[i]);
        if (c < 0 || next->gpool_g[i] > cur->gpool_g[c] || next->gpool_kept[i] > cur->gpool_kept[c])
            return 1; /* likewise a pool's */
    }
    return next->kept > cur->kept || next->weight > cur->weight;
}

int quota_load(store_tx *tx, const char *tenant_id, const char *project_id, quota_set *out,
               gp_err *err) {
    store_stmt *s;
    quota_unlimited(out);
    int rc = store_query(tx, &s, err,
                         "SELECT spec FROM quotas WHERE tenant_id = ? AND project_id = ?", "ss",
                         tenant_id, project_id ? project_id : "");
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *j = rc > 0 ? json_loads(store_text(s, 0), 0, NULL) : NULL;
    store_done(s);
    if (rc < 0) {
        json_decref(j);
        return rc;
    }
    if (j) {
        rc = quota_parse(j, out, err);
        json_decref(j);
    }
    return rc < 0 ? rc : GP_OK;
}

int quota_save(store_tx *tx, const char *tenant_id, const char *project_id, const quota_set *q,
               gp_err *err) {
    json_t *j = quota_json(q);
    char *text = jx_dump(j);
    json_decref(j);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO quotas (tenant_id, project_id, spec, updated_at)"
                        " VALUES (?,?,?,?) ON CONFLICT (tenant_id, project_id) DO UPDATE SET"
                        " spec = excluded.spec, updated_at = excluded.updated_at",
                        "sssi", tenant_id, project_id ? project_id : "", text ? text : "{}",
                        gt_now_us());
    free(text);
    return rc;
}
