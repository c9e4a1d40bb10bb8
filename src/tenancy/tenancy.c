/*
 * tenancy.c - tenant and project records (see tenancy.h).
 */
#include "tenancy.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const classes[] = {"production", "development", "research"};

int tenancy_class_valid(const char *cls) {
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(cls, classes[i]) == 0) return 1;
    return 0;
}

static int check_name(const char *what, const char *name, gp_err *err) {
    if (!name || !gp_name_valid(name))
        return gp_err_set(err, GP_EINVALID,
                          "%s name must be 1-63 lower-case letters, digits or '-', not starting "
                          "or ending with '-'",
                          what);
    return GP_OK;
}

/* A tenant's row as tenant_from_row reads it (STORE_COLS). */
#define TENANT_COLUMNS(X)                                                                 \
    X(TC_ID, "id") X(TC_NAME, "name") X(TC_DISPLAY, "display_name") X(TC_CREATED, "created_at")
enum { TENANT_COLUMNS(STORE_COL_ENUM) TC__N };
#define TENANT_COLS STORE_COLS(TENANT_COLUMNS)

static void tenant_from_row(store_stmt *s, tenancy_tenant *t) {
    snprintf(t->id, sizeof t->id, "%s", store_text(s, TC_ID));
    snprintf(t->name, sizeof t->name, "%s", store_text(s, TC_NAME));
    snprintf(t->display_name, sizeof t->display_name, "%s",
             store_text(s, TC_DISPLAY) ? store_text(s, TC_DISPLAY) : "");
    t->created_us = store_int(s, TC_CREATED);
}

int tenancy_tenant_create(store_tx *tx, const char *name, const char *display, tenancy_tenant *out,
                          gp_err *err) {
    int rc = check_name("tenant", name, err);
    if (rc) return rc;
    if (!display) display = "";
    if (strlen(display) > TENANCY_DISPLAY_MAX)
        return gp_err_set(err, GP_EINVALID, "display_name longer than %d bytes",
                          TENANCY_DISPLAY_MAX);
    memset(out, 0, sizeof *out);
    rnd_id(out->id);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->display_name, sizeof out->display_name, "%s", display);
    out->created_us = gt_now_us();
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO tenants (id, name, display_name, created_at) VALUES (?,?,?,?)",
                    "sssi", out->id, out->name, out->display_name, out->created_us);
    if (rc == GP_ECONFLICT) return gp_err_set(err, rc, "tenant '%s' already exists", name);
    return rc;
}

int tenancy_tenant_find(store_tx *tx, const char *name, tenancy_tenant *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " TENANT_COLS " FROM tenants WHERE name = ?",
                         "s", name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) tenant_from_row(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "tenant not found");
    return rc < 0 ? rc : GP_OK;
}

int tenancy_tenant_get(store_tx *tx, const char *id, tenancy_tenant *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " TENANT_COLS " FROM tenants WHERE id = ?",
                         "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) tenant_from_row(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "tenant not found");
    return rc < 0 ? rc : GP_OK;
}

int tenancy_tenant_list(store_tx *tx, tenancy_tenant **items, int *n, gp_err *err) {
    store_stmt *s;
    *items = NULL;
    *n = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " TENANT_COLS " FROM tenants ORDER BY name",
                         "");
    if (rc) return rc;
    tenancy_tenant *arr = NULL;
    int cnt = 0;
    while ((rc = store_step(s, err)) > 0) {
        tenancy_tenant *na = realloc(arr, sizeof *na * (size_t)(cnt + 1));
        if (!na) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
        arr = na;
        tenant_from_row(s, &arr[cnt++]);
    }
    store_done(s);
    if (rc < 0) {
        free(arr);
        return rc;
    }
    *items = arr;
    *n = cnt;
    return GP_OK;
}

/* A project's row, with its tenant's name, as project_from_row reads it (STORE_COLS). */
#define PROJECT_COLUMNS(X)                                                                \
    X(PC_ID, "p.id")                                                                      \
    X(PC_TENANT_ID, "p.tenant_id")                                                        \
    X(PC_TENANT, "t.name")                                                                \
    X(PC_NAME, "p.name")                                                                  \
    X(PC_CLASS, "p.class")                                                                \
    X(PC_CREATED, "p.created_at")
enum { PROJECT_COLUMNS(STORE_COL_ENUM) PC__N };
#define PROJECT_COLS STORE_COLS(PROJECT_COLUMNS)

static void project_from_row(store_stmt *s, tenancy_project *p) {
    snprintf(p->id, sizeof p->id, "%s", store_text(s, PC_ID));
    snprintf(p->tenant_id, sizeof p->tenant_id, "%s", store_text(s, PC_TENANT_ID));
    snprintf(p->tenant, sizeof p->tenant, "%s", store_text(s, PC_TENANT));
    snprintf(p->name, sizeof p->name, "%s", store_text(s, PC_NAME));
    snprintf(p->cls, sizeof p->cls, "%s", store_text(s, PC_CLASS));
    p->created_us = store_int(s, PC_CREATED);
}

int tenancy_project_create(store_tx *tx, const tenancy_tenant *t, const char *name,
                           const char *cls, tenancy_project *out, gp_err *err) {
    int rc = check_name("project", name, err);
    if (rc) return rc;
    if (!cls) cls = "development";
    if (!tenancy_class_valid(cls))
        return gp_err_set(err, GP_EINVALID,
                          "class must be one of production, development, research");
    memset(out, 0, sizeof *out);
    rnd_id(out->id);
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", t->id);
    snprintf(out->tenant, sizeof out->tenant, "%s", t->name);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->cls, sizeof out->cls, "%s", cls);
    out->created_us = gt_now_us();
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO projects (id, tenant_id, name, class, created_at)"
                    " VALUES (?,?,?,?,?)",
                    "ssssi", out->id, out->tenant_id, out->name, out->cls, out->created_us);
    if (rc == GP_ECONFLICT)
        return gp_err_set(err, rc, "project '%s' already exists in tenant '%s'", name, t->name);
    return rc;
}

int tenancy_project_find(store_tx *tx, const tenancy_tenant *t, const char *name,
                         tenancy_project *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " PROJECT_COLS " FROM projects p JOIN tenants t"
                         " ON t.id = p.tenant_id WHERE p.tenant_id = ? AND p.name = ?",
                         "ss", t->id, name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) project_from_row(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "project not found");
    return rc < 0 ? rc : GP_OK;
}

int tenancy_project_list(store_tx *tx, const tenancy_tenant *t, tenancy_project **items, int *n,
                         gp_err *err) {
    store_stmt *s;
    *items = NULL;
    *n = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " PROJECT_COLS " FROM projects p JOIN tenants t"
                         " ON t.id = p.tenant_id WHERE p.tenant_id = ? ORDER BY p.name",
                         "s", t->id);
    if (rc) return rc;
    tenancy_project *arr = NULL;
    int cnt = 0;
    while ((rc = store_step(s, err)) > 0) {
        tenancy_project *na = realloc(arr, sizeof *na * (size_t)(cnt + 1));
        if (!na) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
        arr = na;
        project_from_row(s, &arr[cnt++]);
    }
    store_done(s);
    if (rc < 0) {
        free(arr);
        return rc;
    }
    *items = arr;
    *n = cnt;
    return GP_OK;
}

json_t *tenancy_tenant_json(const tenancy_tenant *t) {
    char ts[GT_RFC3339_LEN];
    gt_format_us(t->created_us, ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s}", "id", t->id, "name", t->name, "display_name",
                     t->display_name, "created_at", ts);
}

json_t *tenancy_project_json(const tenancy_project *p) {
    char ts[GT_RFC3339_LEN];
    gt_format_us(p->created_us, ts, sizeof ts);
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", p->id, "tenant", p->tenant, "name", p->name,
                     "class", p->cls, "created_at", ts);
}
