/*
 * h_tenant.c - tenants and projects: create, list, show.
 *
 * The path's names are resolved and authorised against the resolved ids
 * before anything else (a missing object and an invisible one answer the
 * same 404): by dispatch for the declared routes (routes.c), by the handler
 * for the two legacy ones (a tenant's create is a sensitive operation,
 * decided before any transaction; the project list shows a member what it
 * may see in a tenant it only partly reads).
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../tenancy/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Resolve the {tenant} path parameter; 404 when absent. */
static int load_tenant(api_req *r, store_tx *tx, tenancy_tenant *t) {
    gp_err err = GP_ERR_INIT;
    api_target(r, NULL, NULL, api_param(r, "tenant"), NULL);
    int rc = tenancy_tenant_find(tx, api_param(r, "tenant"), t, &err);
    if (rc == GP_ENOTFOUND) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

/* A sensitive route (tenant.create when the policy lists it): dispatch runs this as a dry
 * run first, so an approval is only filed for a create that would go through. */
int h_tenant_create(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"name", "display_name", NULL};
    const char *name, *display;
    tenancy_tenant t;
    api_target(c->r, "tenant", NULL, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "name", 1, &name, err);
    if (!rc) rc = jx_get_str(c->body, "display_name", 0, &display, err);
    if (rc) return rc;
    api_target(c->r, NULL, name, name, NULL);
    snprintf(c->approval_tenant, sizeof c->approval_tenant, "%s", name);
    if ((rc = tenancy_tenant_create(c->tx, name, display, &t, err))) return rc;
    c->summary = json_pack("{s:s,s:s}", "name", name, "display_name", display ? display : "");
    api_reply(c->r, 201, tenancy_tenant_json(&t));
    return GP_OK;
}

int h_tenant_list(api_ctx *c, gp_err *err) {
    tenancy_tenant *ts;
    int n;
    int64_t now = gt_now_us();
    int rc = tenancy_tenant_list(c->tx, &ts, &n, err);
    if (rc) return rc;
    json_t *items = json_array();
    for (int i = 0; i < n; i++) {
        /* list exactly what GET /tenants/{t} would show */
        authz_target tg = {ts[i].id, NULL};
        if (authz_check(c->who->bindings, c->who->nbindings, ACT_TENANT_READ, &tg, now) ==
            AUTHZ_ALLOW)
            json_array_append_new(items, tenancy_tenant_json(&ts[i]));
    }
    free(ts);
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* Resolved and authorised by dispatch (SC_TENANT, ACT_TENANT_READ). */
int h_tenant_get(api_ctx *c, gp_err *err) {
    (void)err;
    api_target(c->r, "tenant", c->sc.t.name, NULL, NULL);
    api_reply(c->r, 200, tenancy_tenant_json(&c->sc.t));
    return GP_OK;
}

/* Dispatch resolved the tenant and authorised ACT_PROJECT_CREATE there (SC_TENANT). */
int h_project_create(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"name", "class", NULL};
    const char *name, *cls;
    tenancy_project p;
    api_target(c->r, "project", NULL, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "name", 1, &name, err);
    if (!rc) rc = jx_get_str(c->body, "class", 0, &cls, err);
    if (rc) return rc;
    api_target(c->r, NULL, name, NULL, name);
    if ((rc = tenancy_project_create(c->tx, &c->sc.t, name, cls, &p, err))) return rc;
    c->summary = json_pack("{s:s,s:s}", "name", p.name, "class", p.cls);
    api_reply(c->r, 201, tenancy_project_json(&p));
    return GP_OK;
}

void h_project_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    tenancy_project *ps;
    int n;
    api_target(r, "project", NULL, NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_tenant(r, tx, &t)) {
        store_rollback(tx);
        return;
    }
    authz_target tg = {t.id, NULL};
    if (!authz_visible(r->who->bindings, r->who->nbindings, &tg, gt_now_us())) {
        store_rollback(tx);
        api_error(r, 404, "not_found", "not found");
        return;
    }
    int rc = tenancy_project_list(tx, &t, &ps, &n, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    json_t *items = json_array();
    for (int i = 0; i < n; i++) {
        authz_target pt = {t.id, ps[i].id};
        if (authz_check(r->who->bindings, r->who->nbindings, ACT_PROJECT_READ, &pt,
                        gt_now_us()) == AUTHZ_ALLOW)
            json_array_append_new(items, tenancy_project_json(&ps[i]));
    }
    free(ps);
    api_reply(r, 200, api_list(items, NULL));
}

/* Resolved and authorised by dispatch (SC_PROJECT, ACT_PROJECT_READ). */
int h_project_get(api_ctx *c, gp_err *err) {
    (void)err;
    api_target(c->r, "project", c->sc.p.name, NULL, NULL);
    api_reply(c->r, 200, tenancy_project_json(&c->sc.p));
    return GP_OK;
}
