/*
 * h_tenant.c - tenants and projects: create, list, show.
 *
 * Each handler resolves the path's names, authorises against the resolved
 * ids (a missing object and an invisible one answer the same 404), and only
 * then reads the body or returns data.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../tenancy/tenancy.h"

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

void h_tenant_create(api_req *r) {
    static const char *const fields[] = {"name", "display_name", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    const char *name, *display;
    store_tx *tx;
    tenancy_tenant t;
    api_target(r, "tenant", NULL, NULL, NULL);
    if (!api_authorize(r, ACT_TENANT_CREATE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "name", 1, &name, &err) ||
        jx_get_str(body, "display_name", 0, &display, &err)) {
        api_fail(r, &err);
        json_decref(body);
        return;
    }
    api_target(r, NULL, name, name, NULL);
    json_t *change = json_pack("{s:s,s:s}", "name", name, "display_name", display ? display : "");
    int pending = api_needs_approval(r, "tenant.create", name, change);
    json_decref(change);
    if (pending) {
        json_decref(body);
        return;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    json_t *sum = json_pack("{s:s,s:s}", "name", name, "display_name", display ? display : "");
    char *summary = jx_dump(sum);
    json_decref(sum);
    int rc = tenancy_tenant_create(tx, name, display, &t, &err);
    if (!rc) rc = api_audit(r, tx, "ok", 201, summary, &err);
    free(summary);
    if (rc) {
        r->audited = 0;
        store_rollback(tx);
        api_fail(r, &err);
    } else if (!api_commit(r, tx)) {
        api_reply(r, 201, tenancy_tenant_json(&t));
    }
    json_decref(body);
}

void h_tenant_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant *ts;
    int n;
    int64_t now = gt_now_us();
    if (api_begin(r, STORE_READ, &tx)) return;
    int rc = tenancy_tenant_list(tx, &ts, &n, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    json_t *items = json_array();
    for (int i = 0; i < n; i++) {
        /* list exactly what GET /tenants/{t} would show */
        authz_target tg = {ts[i].id, NULL};
        if (authz_check(r->who->bindings, r->who->nbindings, ACT_TENANT_READ, &tg, now) ==
            AUTHZ_ALLOW)
            json_array_append_new(items, tenancy_tenant_json(&ts[i]));
    }
    free(ts);
    api_reply(r, 200, api_list(items, NULL));
}

void h_tenant_get(api_req *r) {
    store_tx *tx;
    tenancy_tenant t;
    api_target(r, "tenant", api_param(r, "tenant"), NULL, NULL);
    if (api_begin(r, STORE_READ, &tx)) return;
    int ok = !load_tenant(r, tx, &t);
    store_rollback(tx);
    if (!ok || !api_authorize(r, ACT_TENANT_READ, t.id, NULL)) return;
    api_reply(r, 200, tenancy_tenant_json(&t));
}

void h_project_create(api_req *r) {
    static const char *const fields[] = {"name", "class", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    const char *name, *cls;
    store_tx *tx;
    tenancy_tenant t;
    tenancy_project p;
    api_target(r, "project", NULL, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (load_tenant(r, tx, &t) || !api_authorize(r, ACT_PROJECT_CREATE, t.id, NULL)) {
        store_rollback(tx);
        return;
    }
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "name", 1, &name, &err) ||
        jx_get_str(body, "class", 0, &cls, &err)) {
        store_rollback(tx);
        api_fail(r, &err);
        json_decref(body);
        return;
    }
    api_target(r, NULL, name, NULL, name);
    int rc = tenancy_project_create(tx, &t, name, cls, &p, &err);
    if (!rc) {
        json_t *sum = json_pack("{s:s,s:s}", "name", p.name, "class", p.cls);
        char *summary = jx_dump(sum);
        json_decref(sum);
        rc = api_audit(r, tx, "ok", 201, summary, &err);
        free(summary);
    }
    json_decref(body);
    if (rc) {
        r->audited = 0;
        store_rollback(tx);
        api_fail(r, &err);
        return;
    }
    if (!api_commit(r, tx)) api_reply(r, 201, tenancy_project_json(&p));
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

void h_project_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    tenancy_tenant t;
    tenancy_project p;
    api_target(r, "project", api_param(r, "project"), NULL, api_param(r, "project"));
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_tenant(r, tx, &t)) {
        store_rollback(tx);
        return;
    }
    int rc = tenancy_project_find(tx, &t, api_param(r, "project"), &p, &err);
    store_rollback(tx);
    if (rc == GP_ENOTFOUND) {
        api_error(r, 404, "not_found", "not found");
        return;
    }
    if (rc) {
        api_fail(r, &err);
        return;
    }
    if (!api_authorize(r, ACT_PROJECT_READ, t.id, p.id)) return;
    api_reply(r, 200, tenancy_project_json(&p));
}
