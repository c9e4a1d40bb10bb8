/*
 * h_system.c - liveness, readiness, metrics, the OpenAPI document, whoami.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdlib.h>

void h_healthz(api_req *r) { api_reply(r, 200, json_pack("{s:s}", "status", "ok")); }

void h_readyz(api_req *r) {
    gp_err err = GP_ERR_INIT;
    if (store_ping(r->store, &err)) {
        api_error(r, 503, "store_unavailable", "the store does not answer");
        return;
    }
    api_reply(r, 200, json_pack("{s:s,s:s}", "status", "ready", "store", store_backend(r->store)));
}

void h_metrics(api_req *r) {
    char *text = api__metrics_render();
    if (!text) {
        api_error(r, 500, "out_of_memory", "out of memory");
        return;
    }
    api_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text);
    free(text);
}

void h_openapi(api_req *r) { api_reply_text(r, 200, "application/json", api_openapi_json()); }

void h_whoami(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        api_fail(r, &err);
        return;
    }
    int rc = store_query(tx, &s, &err,
                         "SELECT b.role, b.scope, t.name, p.name, COALESCE(b.expires_at, 0)"
                         " FROM role_bindings b LEFT JOIN tenants t ON t.id = b.tenant_id"
                         " LEFT JOIN projects p ON p.id = b.project_id WHERE b.user_id = ?"
                         " AND (b.expires_at IS NULL OR b.expires_at > ?)"
                         " ORDER BY b.scope, t.name, p.name, b.role",
                         "si", r->who->user_id, gt_now_us());
    json_t *roles = json_array();
    if (rc == GP_OK) {
        while ((rc = store_step(s, &err)) > 0) {
            json_t *b = json_pack("{s:s,s:s}", "role", store_text(s, 0), "scope", store_text(s, 1));
            if (store_text(s, 2)) json_object_set_new(b, "tenant", json_string(store_text(s, 2)));
            if (store_text(s, 3)) json_object_set_new(b, "project", json_string(store_text(s, 3)));
            if (store_int(s, 4)) {
                char ts[GT_RFC3339_LEN];
                gt_format_us(store_int(s, 4), ts, sizeof ts);
                json_object_set_new(b, "expires_at", json_string(ts));
            }
            json_array_append_new(roles, b);
        }
        store_done(s);
    }
    store_rollback(tx);
    if (rc < 0) {
        json_decref(roles);
        api_fail(r, &err);
        return;
    }
    api_reply(r, 200,
              json_pack("{s:s,s:s,s:s,s:o}", "id", r->who->user_id, "name", r->who->name, "kind",
                        r->who->kind, "roles", roles));
}
