/*
 * h_model.c - model services, their endpoints, applications, API keys and
 * the gateway's usage records: the management side (the /v1 gateway itself
 * is h_gateway.c).  The logic is in src/gateway (gateway.h); these handlers
 * resolve the path, authorise, and wrap one store call in a transaction.
 *
 *   GET|POST /tenants/{t}/models                        model.read | model.manage
 *   GET|PATCH|DELETE /tenants/{t}/models/{m}            model.read | model.manage
 *   POST /tenants/{t}/models/{m}/endpoints              model.manage
 *   DELETE /tenants/{t}/models/{m}/endpoints/{id}       model.manage
 *   GET|POST /tenants/{t}/projects/{p}/apps             key.read | app.manage
 *   DELETE …/apps/{app}                                 app.manage
 *   GET|POST /tenants/{t}/projects/{p}/keys             key.read | key.manage
 *   GET|DELETE …/keys/{id}                              key.read | key.manage (revoke)
 *   GET /tenants/{t}/projects/{p}/usage-records         usage.read
 *   GET /tenants/{t}/usage-records                      usage.read on the tenant
 *
 * Publishing (visibility "public"), unpublishing, deleting a public model,
 * and adding or removing an endpoint of a public model (where every
 * tenant's prompts go) need model.publish held globally (platform-admin): the
 * owner tenant's admin gets 403.  An endpoint's last_error is generic
 * ("unreachable", "bad status"); last_error_detail is shown only to ops
 * (node.read held globally).  A project-user
 * sees, creates and revokes only their own keys: another user's key answers
 * 404, as if it did not exist.  A key's secret appears only in the answer
 * to its creation: never in the audit summary, a list or a show.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../gateway/gateway.h"
#include "../tenancy/tenancy.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

/* Open a transaction and load the scope; on failure the response is set and nothing is open. */
static int open_scope(api_req *r, int mode, int action, store_tx **tx, api_scope *sc) {
    if (api_begin(r, mode, tx)) return -1;
    if (api_load_scope(r, *tx, sc, action)) {
        store_rollback(*tx);
        return -1;
    }
    return 0;
}

/* Open, load, and parse the body: as open_scope, plus *body (release it). */
static int open_with_body(api_req *r, int action, store_tx **tx, api_scope *sc, json_t **body) {
    if (open_scope(r, STORE_WRITE, action, tx, sc)) return -1;
    if (api_body(r, body)) {
        store_rollback(*tx);
        return -1;
    }
    return 0;
}

/* Does the caller hold model.publish globally?  (Sets no response.) */
static int may_publish(api_req *r) {
    authz_target global = {NULL, NULL};
    return authz_check(r->who->bindings, r->who->nbindings, ACT_MODEL_PUBLISH, &global,
                       gt_now_us()) == AUTHZ_ALLOW;
}

/* Does the caller hold node.read globally (ops: platform-admin, ops-engineer, ...)? */
static int is_ops(api_req *r) {
    authz_target global = {NULL, NULL};
    return authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &global,
                       gt_now_us()) == AUTHZ_ALLOW;
}

/* Changing where a public model's prompts go is the platform's business (403 otherwise). */
static int endpoints_changeable(api_req *r, store_tx *tx, const char *model_id, gp_err *err) {
    int pub = 0;
    int rc = gw_model_is_public(tx, model_id, &pub, err);
    if (!rc && pub && !may_publish(r))
        rc = gp_err_set(err, GP_EFORBIDDEN,
                        "only a platform-admin changes the endpoints of a published model");
    return rc;
}

/*
 * May the caller perform `action` here through a role other than
 * project-user (which acts on its own keys only)?  Sets no response.
 */
static int beyond_own(api_req *r, int action, const api_scope *sc) {
    int n = 0;
    authz_binding *b = malloc(((size_t)r->who->nbindings + 1) * sizeof *b);
    if (!b) return 0;
    for (int i = 0; i < r->who->nbindings; i++)
        if (r->who->bindings[i].role != ROLE_PROJECT_USER) b[n++] = r->who->bindings[i];
    authz_target t = {sc->t.id, sc->p.id[0] ? sc->p.id : NULL};
    int ok = authz_check(b, n, (authz_action)action, &t, gt_now_us()) == AUTHZ_ALLOW;
    free(b);
    return ok;
}

/* ---- models ---- */

void h_model_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *items;
    if (open_scope(r, STORE_READ, ACT_MODEL_READ, &tx, &sc)) return;
    int rc = gw_model_list(tx, sc.t.id, &items, &err);
    if (!rc && is_ops(r)) {
        size_t i;
        json_t *m;
        json_array_foreach(items, i, m) if (!rc) rc = gw_model_error_details(tx, m, &err);
        if (rc) json_decref(items);
    }
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_model_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *m;
    if (open_scope(r, STORE_READ, ACT_MODEL_READ, &tx, &sc)) return;
    int rc = gw_model_get(tx, sc.t.id, api_param(r, "model"), &m, NULL, &err);
    if (!rc && is_ops(r) && (rc = gw_model_error_details(tx, m, &err))) json_decref(m);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, m);
}

void h_model_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body, *m = NULL;
    char id[RND_ID_LEN];
    api_target(r, "model", NULL, NULL, NULL);
    if (open_with_body(r, ACT_MODEL_MANAGE, &tx, &sc, &body)) return;
    const char *name = json_string_value(json_object_get(body, "name"));
    if (name) api_target(r, NULL, name, NULL, NULL);
    int rc = gw_model_create(tx, sc.t.id, body, r->who->name, may_publish(r), id, &err);
    if (!rc) rc = gw_model_get(tx, sc.t.id, name, &m, NULL, &err);
    json_decref(body);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:O,s:O}", "name", json_object_get(m, "name"), "visibility",
                            json_object_get(m, "visibility"));
    if (api_finish(r, tx, 201, sum)) json_decref(m);
    else api_reply(r, 201, m);
}

void h_model_update(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body, *before = NULL, *m = NULL;
    const char *name = api_param(r, "model");
    api_target(r, "model", name, NULL, NULL);
    if (open_with_body(r, ACT_MODEL_MANAGE, &tx, &sc, &body)) return;
    int rc = gw_model_get(tx, sc.t.id, name, &before, NULL, &err);
    if (!rc) rc = gw_model_update(tx, sc.t.id, name, body, may_publish(r), &err);
    if (!rc) rc = gw_model_get(tx, sc.t.id, name, &m, NULL, &err);
    json_decref(body);
    if (rc) {
        json_decref(before);
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:{s:O,s:O},s:{s:O,s:O}}", "from", "visibility",
                            json_object_get(before, "visibility"), "description",
                            json_object_get(before, "description"), "to", "visibility",
                            json_object_get(m, "visibility"), "description",
                            json_object_get(m, "description"));
    json_decref(before);
    if (api_finish(r, tx, 200, sum)) json_decref(m);
    else api_reply(r, 200, m);
}

void h_model_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *m;
    const char *name = api_param(r, "model");
    api_target(r, "model", name, NULL, NULL);
    if (open_scope(r, STORE_WRITE, ACT_MODEL_MANAGE, &tx, &sc)) return;
    int rc = gw_model_get(tx, sc.t.id, name, &m, NULL, &err);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    /* taking a public model away from every tenant is unpublishing it */
    int pub = !strcmp(json_string_value(json_object_get(m, "visibility")), "public");
    size_t neps = json_array_size(json_object_get(m, "endpoints"));
    json_decref(m);
    if (pub && !may_publish(r)) {
        gp_err_set(&err, GP_EFORBIDDEN, "only a platform-admin deletes a published model");
        api_abort(r, tx, &err);
        return;
    }
    if (gw_model_delete(tx, sc.t.id, name, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:s,s:b,s:I}", "name", name, "public", pub, "endpoints",
                            (json_int_t)neps);
    if (!api_finish(r, tx, 200, sum))
        api_reply(r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
}

/* ---- endpoints ---- */

void h_endpoint_add(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body, *m = NULL;
    char mid[RND_ID_LEN], id[RND_ID_LEN];
    const char *model = api_param(r, "model");
    api_target(r, "endpoint", NULL, NULL, NULL);
    if (open_with_body(r, ACT_MODEL_MANAGE, &tx, &sc, &body)) return;
    int rc = gw_model_get(tx, sc.t.id, model, NULL, mid, &err);
    if (!rc) rc = endpoints_changeable(r, tx, mid, &err);
    if (!rc) rc = gw_endpoint_add(tx, sc.t.id, mid, body, id, &err);
    if (!rc) rc = gw_model_get(tx, sc.t.id, model, &m, NULL, &err);
    json_decref(body);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    api_target(r, NULL, id, NULL, NULL);
    json_t *ep = NULL, *e;
    size_t i;
    json_array_foreach(json_object_get(m, "endpoints"), i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "id")), id)) ep = json_incref(e);
    }
    json_decref(m);
    if (!ep) {
        gp_err_set(&err, GP_EINTERNAL, "the new endpoint was not found");
        api_abort(r, tx, &err);
        return;
    }
    json_object_set_new(ep, "model", json_string(model));
    json_t *sum = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?}", "model", model, "url",
                            json_object_get(ep, "url"), "job", json_object_get(ep, "job"), "port",
                            json_object_get(ep, "port"), "accelerator",
                            json_object_get(ep, "accelerator"));
    if (api_finish(r, tx, 201, sum)) json_decref(ep);
    else api_reply(r, 201, ep);
}

void h_endpoint_remove(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    char mid[RND_ID_LEN];
    const char *model = api_param(r, "model"), *id = api_param(r, "id");
    api_target(r, "endpoint", id, NULL, NULL);
    if (open_scope(r, STORE_WRITE, ACT_MODEL_MANAGE, &tx, &sc)) return;
    int rc = gw_model_get(tx, sc.t.id, model, NULL, mid, &err);
    /* an endpoint that is not the model's is 404 first; the change itself is the platform's */
    if (!rc) rc = gw_endpoint_remove(tx, mid, id, &err);
    if (!rc) rc = endpoints_changeable(r, tx, mid, &err);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, json_pack("{s:s}", "model", model)))
        api_reply(r, 200, json_pack("{s:s,s:s,s:b}", "id", id, "model", model, "deleted", 1));
}

/* ---- applications ---- */

void h_app_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *items;
    if (open_scope(r, STORE_READ, ACT_KEY_READ, &tx, &sc)) return;
    int rc = gw_app_list(tx, sc.p.id, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_app_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body, *items = NULL, *app = NULL, *a;
    char id[RND_ID_LEN];
    api_target(r, "app", NULL, NULL, NULL);
    if (open_with_body(r, ACT_APP_MANAGE, &tx, &sc, &body)) return;
    const char *name = json_string_value(json_object_get(body, "name"));
    if (name) api_target(r, NULL, name, NULL, NULL);
    int rc = gw_app_create(tx, sc.p.id, body, id, &err);
    if (!rc) rc = gw_app_list(tx, sc.p.id, &items, &err);
    size_t i;
    json_array_foreach(items, i, a) {
        if (!strcmp(json_string_value(json_object_get(a, "name")), name)) app = json_incref(a);
    }
    json_decref(items);
    json_t *sum = rc ? NULL : json_pack("{s:s}", "name", name);
    json_decref(body);
    if (rc) {
        json_decref(app);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 201, sum)) json_decref(app);
    else api_reply(r, 201, app ? app : json_object());
}

void h_app_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    const char *name = api_param(r, "app");
    api_target(r, "app", name, NULL, NULL);
    if (open_scope(r, STORE_WRITE, ACT_APP_MANAGE, &tx, &sc)) return;
    if (gw_app_delete(tx, sc.p.id, name, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, NULL))
        api_reply(r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
}

/* ---- keys ---- */

void h_key_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *items;
    if (open_scope(r, STORE_READ, ACT_KEY_READ, &tx, &sc)) return;
    const char *owner = beyond_own(r, ACT_KEY_READ, &sc) ? NULL : r->who->name;
    int rc = gw_key_list(tx, sc.p.id, owner, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

/*
 * Load key {id} of the project for `action`: 404 when it is missing, of
 * another project, or (for callers acting only on their own keys) another
 * user's.  OUT: *key.
 */
static int load_key(api_req *r, store_tx *tx, const api_scope *sc, int action, json_t **key) {
    gp_err err = GP_ERR_INIT;
    char owner[64];
    int rc = gw_key_get(tx, sc->p.id, api_param(r, "id"), key, owner, &err);
    if (!rc && strcmp(owner, r->who->name) != 0 && !beyond_own(r, action, sc)) {
        json_decref(*key);
        rc = gp_err_set(&err, GP_ENOTFOUND, "key not found");
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

void h_key_get(api_req *r) {
    store_tx *tx;
    api_scope sc;
    json_t *k;
    if (open_scope(r, STORE_READ, ACT_KEY_READ, &tx, &sc)) return;
    int rc = load_key(r, tx, &sc, ACT_KEY_READ, &k);
    store_rollback(tx);
    if (!rc) api_reply(r, 200, k);
}

void h_key_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *body, *k = NULL;
    char id[RND_ID_LEN], secret[RND_SECRET_LEN];
    api_target(r, "key", NULL, NULL, NULL);
    if (open_with_body(r, ACT_KEY_MANAGE, &tx, &sc, &body)) return;
    /* the caller owns the key it makes */
    int rc = gw_key_create(tx, sc.t.id, sc.p.id, r->who->name, body, id, secret, &err);
    json_decref(body);
    if (!rc) rc = gw_key_get(tx, sc.p.id, id, &k, NULL, &err);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    api_target(r, NULL, id, NULL, NULL);
    /* the audit summary: the key's settings, never its secret */
    static const char *const audited[] = {"name", "owner", "app", "models", "rpm", "tpm",
                                          "tokens_month", "expires_at", NULL};
    json_t *sum = json_object();
    for (const char *const *f = audited; *f; f++) json_object_set(sum, *f, json_object_get(k, *f));
    if (api_finish(r, tx, 201, sum)) {
        sodium_memzero(secret, sizeof secret);
        json_decref(k);
        return;
    }
    json_t *out = json_pack("{s:s,s:s}", "id", id, "key", secret);
    sodium_memzero(secret, sizeof secret);
    const char *f;
    json_t *v;
    json_object_foreach(k, f, v) if (strcmp(f, "id") != 0) json_object_set(out, f, v);
    json_decref(k);
    api_reply(r, 201, out);
}

void h_key_revoke(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *k;
    const char *id = api_param(r, "id");
    api_target(r, "key", id, NULL, NULL);
    if (open_scope(r, STORE_WRITE, ACT_KEY_MANAGE, &tx, &sc)) return;
    if (load_key(r, tx, &sc, ACT_KEY_MANAGE, &k)) {
        store_rollback(tx);
        return;
    }
    json_t *sum = json_pack("{s:O,s:O}", "name", json_object_get(k, "name"), "owner",
                            json_object_get(k, "owner"));
    json_decref(k);
    k = NULL;
    int rc = gw_key_revoke(tx, sc.p.id, id, &err);
    if (!rc) rc = gw_key_get(tx, sc.p.id, id, &k, NULL, &err);
    if (rc) {
        json_decref(sum);
        api_abort(r, tx, &err);
        return;
    }
    if (api_finish(r, tx, 200, sum)) json_decref(k);
    else api_reply(r, 200, k);
}

/* ---- usage records ---- */

/* GET …/usage-records[?key=ID][&limit=N]: the project's (or the whole tenant's) records. */
void h_usage_records(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    api_scope sc;
    json_t *items;
    int64_t limit = 100;
    const char *key = api_query(r, "key");
    if (open_scope(r, STORE_READ, ACT_USAGE_READ, &tx, &sc)) return;
    if (api_query_int(r, "limit", 1, 5000, &limit)) {
        store_rollback(tx);
        return;
    }
    int rc = gw_usage_list(tx, sc.t.id, sc.p.id[0] ? sc.p.id : NULL, key, (int)limit, &items,
                           &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}
