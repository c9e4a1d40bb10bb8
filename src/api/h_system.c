/*
 * h_system.c - liveness, readiness, metrics, the OpenAPI document, whoami.
 */
#include "api_int.h"

#include "../auth/auth.h"

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
    json_t *all;
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        api_fail(r, &err);
        return;
    }
    int rc = auth_member_list_user(tx, r->who->user_id, &all, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    /* only the roles in force now */
    json_t *roles = json_array();
    int64_t now = gt_now_us();
    size_t i;
    json_t *b;
    json_array_foreach(all, i, b) {
        int64_t exp = 0;
        const char *e = json_string_value(json_object_get(b, "expires_at"));
        if (e && gt_parse_rfc3339(e, &exp) == 0 && exp <= now) continue;
        json_array_append(roles, b);
    }
    json_decref(all);
    api_reply(r, 200,
              json_pack("{s:s,s:s,s:s,s:o}", "id", r->who->user_id, "name", r->who->name, "kind",
                        r->who->kind, "roles", roles));
}
