/*
 * h_tenant.c - tenants and projects: create, list, show.
 *
 * The path's names are resolved and authorised against the resolved ids
 * before anything else (a missing object and an invisible one answer the
 * same 404), by dispatch: every route here is declared (routes.c).
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../tenancy/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* SC_TENANT, API_ACT_VISIBLE: dispatch answers 404 where the caller sees nothing of the
 * tenant; the list shows the projects it may read there. */
int h_project_list(api_ctx *c, gp_err *err) {
    tenancy_project *ps;
    int n;
    int64_t now = gt_now_us();
    api_target(c->r, "project", NULL, NULL, NULL);
    int rc = tenancy_project_list(c->tx, &c->sc.t, &ps, &n, err);
    if (rc) return rc;
    json_t *items = json_array();
    for (int i = 0; i < n; i++) {
        authz_target pt = {c->sc.t.id, ps[i].id};
        if (authz_check(c->who->bindings, c->who->nbindings, ACT_PROJECT_READ, &pt, now) ==
            AUTHZ_ALLOW)
            json_array_append_new(items, tenancy_project_json(&ps[i]));
    }
    free(ps);
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* Resolved and authorised by dispatch (SC_PROJECT, ACT_PROJECT_READ). */
int h_project_get(api_ctx *c, gp_err *err) {
    (void)err;
    api_target(c->r, "project", c->sc.p.name, NULL, NULL);
    api_reply(c->r, 200, tenancy_project_json(&c->sc.p));
    return GP_OK;
}
