/*
 * prio.c - priority classes: value, preemptible, may-preempt, and who may
 * use them (project classes, roles).
 */
#include "jobs.h"

#include "../auth/authz.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prio_release(prio_class *p) {
    if (!p) return;
    json_decref(p->project_classes);
    json_decref(p->roles);
    json_decref(p->opt_out_roles);
    p->project_classes = p->roles = p->opt_out_roles = NULL;
}

/* A priority class, as prio_get and prio_list read it (STORE_COLS). */
#define PRIO_COLUMNS(X)                                                                   \
    X(PC_NAME, "name")                                                                    \
    X(PC_VALUE, "value")                                                                  \
    X(PC_PREEMPTIBLE, "preemptible")                                                      \
    X(PC_MAY_PREEMPT, "may_preempt")                                                      \
    X(PC_PROJECT_CLASSES, "allowed_project_classes")                                      \
    X(PC_ROLES, "allowed_roles")                                                          \
    X(PC_DESCRIPTION, "description")                                                      \
    X(PC_OPT_OUT_ROLES, "non_preemptible_roles")
enum { PRIO_COLUMNS(STORE_COL_ENUM) PC__N };

int prio_get(store_tx *tx, const char *name, prio_class *out, gp_err *err) {
    store_stmt *s;
    memset(out, 0, sizeof *out);
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(PRIO_COLUMNS) " FROM priority_classes WHERE name = ?",
                         "s", name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(out->name, sizeof out->name, "%s", store_text(s, PC_NAME));
        out->value = (int)store_int(s, PC_VALUE);
        out->preemptible = (int)store_int(s, PC_PREEMPTIBLE);
        out->may_preempt = (int)store_int(s, PC_MAY_PREEMPT);
        out->project_classes = json_loads(store_text(s, PC_PROJECT_CLASSES), 0, NULL);
        out->roles = json_loads(store_text(s, PC_ROLES), 0, NULL);
        out->opt_out_roles = json_loads(store_text(s, PC_OPT_OUT_ROLES), 0, NULL);
        if (!out->project_classes) out->project_classes = json_array();
        if (!out->roles) out->roles = json_array();
        if (!out->opt_out_roles) out->opt_out_roles = json_array();
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "priority class '%s' does not exist", name);
    return rc < 0 ? rc : GP_OK;
}

static int listed(json_t *arr, const char *s) {
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_string(v) && strcmp(json_string_value(v), s) == 0) return 1;
    return 0;
}

int prio_allowed(const prio_class *p, const char *pclass, json_t *roles, gp_err *err) {
    if (json_array_size(p->project_classes) && !listed(p->project_classes, pclass))
        return gp_err_set(err, GP_EFORBIDDEN,
                          "priority class %s is not allowed for %s projects", p->name, pclass);
    if (json_array_size(p->roles)) {
        size_t i;
        json_t *v;
        json_array_foreach(roles, i, v) if (listed(p->roles, json_string_value(v))) return GP_OK;
        char *need = jx_dump(p->roles);
        gp_err_set(err, GP_EFORBIDDEN, "priority class %s needs one of the roles %s", p->name,
                   need ? need : "");
        free(need);
        return GP_EFORBIDDEN;
    }
    return GP_OK;
}

int prio_may_opt_out(const prio_class *p, json_t *roles, gp_err *err) {
    if (!p->preemptible) return GP_OK;
    size_t i;
    json_t *v;
    json_array_foreach(roles, i, v) if (listed(p->opt_out_roles, json_string_value(v))) return GP_OK;
    char *need = jx_dump(p->opt_out_roles);
    gp_err_set(err, GP_EFORBIDDEN,
               "priority class %s lets only the roles %s run jobs that preemption may not stop",
               p->name, need ? need : "[]");
    free(need);
    return GP_EFORBIDDEN;
}

static int str_array(json_t *v, const char *key, int classes, char **out, gp_err *err) {
    size_t i;
    json_t *e;
    *out = NULL;
    if (!v) return GP_OK;
    if (!json_is_array(v)) return gp_err_set(err, GP_EINVALID, "%s must be an array", key);
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        int ok = s && (classes ? (!strcmp(s, "production") || !strcmp(s, "development") ||
                                  !strcmp(s, "research"))
                               : authz_role_parse(s) >= 0);
        if (!ok) return gp_err_set(err, GP_EINVALID, "%s holds an invalid entry", key);
    }
    *out = jx_dump(v);
    return GP_OK;
}

int prio_put(store_tx *tx, json_t *c, int create, const char *name, gp_err *err) {
    static const char *const fields[] = {"name", "value", "preemptible", "may_preempt",
                                         "allowed_project_classes", "allowed_roles",
                                         "non_preemptible_roles", "description", NULL};
    int64_t value = 0;
    int pre = 1, may = 0, has_v, has_p, has_m;
    const char *desc, *nm;
    char *pcs = NULL, *roles = NULL, *opt = NULL;
    int rc;
    if ((rc = jx_only_fields(c, fields, err)) || (rc = jx_get_str(c, "name", create, &nm, err)) ||
        (rc = jx_get_int(c, "value", create, &value, &has_v, err)) ||
        (rc = jx_get_bool(c, "preemptible", 0, &pre, &has_p, err)) ||
        (rc = jx_get_bool(c, "may_preempt", 0, &may, &has_m, err)) ||
        (rc = jx_get_str(c, "description", 0, &desc, err)))
        return rc;
    if (create) name = nm;
    if (!name || !gp_name_valid(name)) return gp_err_set(err, GP_EINVALID, "name: [a-z0-9-]");
    if (has_v && (value < -100000 || value > 100000))
        return gp_err_set(err, GP_EINVALID, "value must be -100000..100000");
    if ((rc = str_array(json_object_get(c, "allowed_project_classes"), "allowed_project_classes",
                        1, &pcs, err)) ||
        (rc = str_array(json_object_get(c, "allowed_roles"), "allowed_roles", 0, &roles, err)) ||
        (rc = str_array(json_object_get(c, "non_preemptible_roles"), "non_preemptible_roles", 0,
                        &opt, err)))
        goto out;
    if (create) {
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO priority_classes (name, value, preemptible, may_preempt,"
                        " allowed_project_classes, allowed_roles, non_preemptible_roles,"
                        " description, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                        "siiissssi", name, value, (int64_t)(has_p ? pre : 1),
                        (int64_t)(has_m ? may : 0), pcs ? pcs : "[]", roles ? roles : "[]",
                        opt ? opt : "[\"tenant-admin\"]", desc ? desc : "", gt_now_us());
        if (rc == GP_ECONFLICT) gp_err_set(err, rc, "priority class '%s' already exists", name);
    } else {
        int changes = 0;
        rc = store_exec(tx, &changes, err,
                        "UPDATE priority_classes SET value = CASE WHEN ? <> 0 THEN ? ELSE value END,"
                        " preemptible = CASE WHEN ? <> 0 THEN ? ELSE preemptible END,"
                        " may_preempt = CASE WHEN ? <> 0 THEN ? ELSE may_preempt END,"
                        " allowed_project_classes = COALESCE(?, allowed_project_classes),"
                        " allowed_roles = COALESCE(?, allowed_roles),"
                        " non_preemptible_roles = COALESCE(?, non_preemptible_roles),"
                        " description = COALESCE(?, description) WHERE name = ?",
                        "iiiiiisssss", (int64_t)has_v, value, (int64_t)has_p, (int64_t)pre,
                        (int64_t)has_m, (int64_t)may, pcs, roles, opt, desc, name);
        if (!rc && !changes) rc = gp_err_set(err, GP_ENOTFOUND, "not found");
    }
out:
    free(pcs);
    free(roles);
    free(opt);
    return rc;
}

int prio_delete(store_tx *tx, const char *name, gp_err *err) {
    store_stmt *s;
    if (!strcmp(name, "normal"))
        return gp_err_set(err, GP_ECONFLICT, "the built-in class 'normal' is every job's default");
    int rc = store_query(tx, &s, err,
                         "SELECT COUNT(*) FROM jobs WHERE priority_class = ?"
                         " AND state IN ('queued','admitted','running')",
                         "s", name);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t used = rc > 0 ? store_int(s, 0) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if (used) return gp_err_set(err, GP_ECONFLICT, "priority class '%s' is used by %lld live jobs",
                                name, (long long)used);
    int changes = 0;
    rc = store_exec(tx, &changes, err, "DELETE FROM priority_classes WHERE name = ?", "s", name);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
}

int prio_list(store_tx *tx, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(PRIO_COLUMNS)
                         " FROM priority_classes ORDER BY value DESC, name",
                         "");
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *pc = json_loads(store_text(s, PC_PROJECT_CLASSES), 0, NULL),
               *ro = json_loads(store_text(s, PC_ROLES), 0, NULL);
        json_t *op = json_loads(store_text(s, PC_OPT_OUT_ROLES), 0, NULL);
        json_array_append_new(arr, json_pack("{s:s,s:I,s:b,s:b,s:o,s:o,s:o,s:s}", "name",
                                             store_text(s, PC_NAME), "value",
                                             (json_int_t)store_int(s, PC_VALUE), "preemptible",
                                             (int)store_int(s, PC_PREEMPTIBLE), "may_preempt",
                                             (int)store_int(s, PC_MAY_PREEMPT),
                                             "allowed_project_classes", pc ? pc : json_array(),
                                             "allowed_roles", ro ? ro : json_array(),
                                             "non_preemptible_roles", op ? op : json_array(),
                                             "description", store_text(s, PC_DESCRIPTION)));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}
