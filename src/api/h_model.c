/*
 * h_model.c - model services, their endpoints, applications, API keys and
 * the gateway's usage records: the management side (the /v1 gateway itself
 * is h_gateway.c).  The logic is in src/gateway (gateway.h).  The routes are
 * declared (routes.c): dispatch resolves {tenant} (SC_TENANT, the models)
 * or {project} (SC_PROJECT, apps and keys), authorises the row's action
 * there, ties the transaction to the tenant, parses the body and appends the
 * audit event; these handlers call the domain, decide what depends on the
 * object (a public model, another user's key), and set the reply.
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

/* ---- models (SC_TENANT: model.read to read, model.manage to change) ---- */

int h_model_list(api_ctx *c, gp_err *err) {
    json_t *items;
    int rc = gw_model_list(c->tx, c->sc.t.id, &items, err);
    if (!rc && is_ops(c->r)) {
        size_t i;
        json_t *m;
        json_array_foreach(items, i, m) if (!rc) rc = gw_model_error_details(c->tx, m, err);
        if (rc) json_decref(items);
    }
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_model_get(api_ctx *c, gp_err *err) {
    json_t *m;
    int rc = gw_model_get(c->tx, c->sc.t.id, api_param(c->r, "model"), &m, NULL, err);
    if (!rc && is_ops(c->r) && (rc = gw_model_error_details(c->tx, m, err))) json_decref(m);
    if (rc) return rc;
    api_reply(c->r, 200, m);
    return GP_OK;
}

int h_model_create(api_ctx *c, gp_err *err) {
    json_t *m = NULL;
    char id[RND_ID_LEN];
    api_target(c->r, "model", NULL, NULL, NULL);
    const char *name = json_string_value(json_object_get(c->body, "name"));
    if (name) api_target(c->r, NULL, name, NULL, NULL);
    int rc = gw_model_create(c->tx, c->sc.t.id, c->body, c->who->name, may_publish(c->r), id, err);
    if (!rc) rc = gw_model_get(c->tx, c->sc.t.id, name, &m, NULL, err);
    if (rc) return rc;
    c->summary = json_pack("{s:O,s:O}", "name", json_object_get(m, "name"), "visibility",
                           json_object_get(m, "visibility"));
    api_reply(c->r, 201, m);
    return GP_OK;
}

int h_model_update(api_ctx *c, gp_err *err) {
    json_t *before = NULL, *m = NULL;
    const char *name = api_param(c->r, "model");
    api_target(c->r, "model", name, NULL, NULL);
    int rc = gw_model_get(c->tx, c->sc.t.id, name, &before, NULL, err);
    if (!rc) rc = gw_model_update(c->tx, c->sc.t.id, name, c->body, may_publish(c->r), err);
    if (!rc) rc = gw_model_get(c->tx, c->sc.t.id, name, &m, NULL, err);
    if (rc) {
        json_decref(before);
        return rc;
    }
    c->summary = json_pack("{s:{s:O,s:O},s:{s:O,s:O}}", "from", "visibility",
                           json_object_get(before, "visibility"), "description",
                           json_object_get(before, "description"), "to", "visibility",
                           json_object_get(m, "visibility"), "description",
                           json_object_get(m, "description"));
    json_decref(before);
    api_reply(c->r, 200, m);
    return GP_OK;
}

int h_model_delete(api_ctx *c, gp_err *err) {
    json_t *m;
    const char *name = api_param(c->r, "model");
    api_target(c->r, "model", name, NULL, NULL);
    int rc = gw_model_get(c->tx, c->sc.t.id, name, &m, NULL, err);
    if (rc) return rc;
    /* taking a public model away from every tenant is unpublishing it */
    int pub = !strcmp(json_string_value(json_object_get(m, "visibility")), "public");
    size_t neps = json_array_size(json_object_get(m, "endpoints"));
    json_decref(m);
    if (pub && !may_publish(c->r))
        return gp_err_set(err, GP_EFORBIDDEN, "only a platform-admin deletes a published model");
    if ((rc = gw_model_delete(c->tx, c->sc.t.id, name, err))) return rc;
    c->summary = json_pack("{s:s,s:b,s:I}", "name", name, "public", pub, "endpoints",
                           (json_int_t)neps);
    api_reply(c->r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    return GP_OK;
}

/* ---- endpoints (SC_TENANT, model.manage; a public model's are the platform's) ---- */

int h_endpoint_add(api_ctx *c, gp_err *err) {
    json_t *m = NULL;
    char mid[RND_ID_LEN], id[RND_ID_LEN];
    const char *model = api_param(c->r, "model");
    api_target(c->r, "endpoint", NULL, NULL, NULL);
    int rc = gw_model_get(c->tx, c->sc.t.id, model, NULL, mid, err);
    if (!rc) rc = endpoints_changeable(c->r, c->tx, mid, err);
    if (!rc) rc = gw_endpoint_add(c->tx, c->sc.t.id, mid, c->body, id, err);
    if (!rc) rc = gw_model_get(c->tx, c->sc.t.id, model, &m, NULL, err);
    if (rc) return rc;
    api_target(c->r, NULL, id, NULL, NULL);
    json_t *ep = NULL, *e;
    size_t i;
    json_array_foreach(json_object_get(m, "endpoints"), i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "id")), id)) ep = json_incref(e);
    }
    json_decref(m);
    if (!ep) return gp_err_set(err, GP_EINTERNAL, "the new endpoint was not found");
    json_object_set_new(ep, "model", json_string(model));
    c->summary = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?}", "model", model, "url",
                           json_object_get(ep, "url"), "job", json_object_get(ep, "job"), "port",
                           json_object_get(ep, "port"), "accelerator",
                           json_object_get(ep, "accelerator"));
    api_reply(c->r, 201, ep);
    return GP_OK;
}

int h_endpoint_remove(api_ctx *c, gp_err *err) {
    char mid[RND_ID_LEN];
    const char *model = api_param(c->r, "model"), *id = api_param(c->r, "id");
    api_target(c->r, "endpoint", id, NULL, NULL);
    int rc = gw_model_get(c->tx, c->sc.t.id, model, NULL, mid, err);
    /* an endpoint that is not the model's is 404 first; the change itself is the platform's */
    if (!rc) rc = gw_endpoint_remove(c->tx, mid, id, err);
    if (!rc) rc = endpoints_changeable(c->r, c->tx, mid, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s}", "model", model);
    api_reply(c->r, 200, json_pack("{s:s,s:s,s:b}", "id", id, "model", model, "deleted", 1));
    return GP_OK;
}

/* ---- applications (SC_PROJECT: key.read to list, app.manage to change) ---- */

int h_app_list(api_ctx *c, gp_err *err) {
    json_t *items;
    int rc = gw_app_list(c->tx, c->sc.p.id, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_app_create(api_ctx *c, gp_err *err) {
    json_t *items = NULL, *app = NULL, *a;
    char id[RND_ID_LEN];
    api_target(c->r, "app", NULL, NULL, NULL);
    const char *name = json_string_value(json_object_get(c->body, "name"));
    if (name) api_target(c->r, NULL, name, NULL, NULL);
    int rc = gw_app_create(c->tx, c->sc.p.id, c->body, id, err);
    if (!rc) rc = gw_app_list(c->tx, c->sc.p.id, &items, err);
    if (rc) return rc;
    size_t i;
    json_array_foreach(items, i, a) {
        if (!strcmp(json_string_value(json_object_get(a, "name")), name)) app = json_incref(a);
    }
    json_decref(items);
    c->summary = json_pack("{s:s}", "name", name);
    api_reply(c->r, 201, app ? app : json_object());
    return GP_OK;
}

int h_app_delete(api_ctx *c, gp_err *err) {
    const char *name = api_param(c->r, "app");
    api_target(c->r, "app", name, NULL, NULL);
    int rc = gw_app_delete(c->tx, c->sc.p.id, name, err);
    if (rc) return rc;
    api_reply(c->r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    return GP_OK;
}

/* ---- keys (SC_PROJECT: key.read to read, key.manage to change) ---- */

int h_key_list(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *owner = beyond_own(c->r, ACT_KEY_READ, &c->sc) ? NULL : c->who->name;
    int rc = gw_key_list(c->tx, c->sc.p.id, owner, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/*
 * Load key {id} of the project for `action`: GP_ENOTFOUND when it is
 * missing, of another project, or (for callers acting only on their own
 * keys) another user's.  OUT: *key.
 */
static int load_key(api_ctx *c, int action, json_t **key, gp_err *err) {
    char owner[64];
    int rc = gw_key_get(c->tx, c->sc.p.id, api_param(c->r, "id"), key, owner, err);
    if (!rc && strcmp(owner, c->who->name) != 0 && !beyond_own(c->r, action, &c->sc)) {
        json_decref(*key);
        rc = gp_err_set(err, GP_ENOTFOUND, "key not found");
    }
    return rc;
}

int h_key_get(api_ctx *c, gp_err *err) {
    json_t *k;
    int rc = load_key(c, ACT_KEY_READ, &k, err);
    if (rc) return rc;
    api_reply(c->r, 200, k);
    return GP_OK;
}

int h_key_create(api_ctx *c, gp_err *err) {
    json_t *k = NULL;
    char id[RND_ID_LEN], secret[RND_SECRET_LEN];
    api_target(c->r, "key", NULL, NULL, NULL);
    /* the caller owns the key it makes */
    int rc = gw_key_create(c->tx, c->sc.t.id, c->sc.p.id, c->who->name, c->body, id, secret, err);
    if (!rc) rc = gw_key_get(c->tx, c->sc.p.id, id, &k, NULL, err);
    if (rc) {
        sodium_memzero(secret, sizeof secret);
        return rc;
    }
    api_target(c->r, NULL, id, NULL, NULL);
    /* the audit summary: the key's settings, never its secret */
    static const char *const audited[] = {"name", "owner", "app", "models", "rpm", "tpm",
                                          "tokens_month", "expires_at", NULL};
    c->summary = json_object();
    for (const char *const *f = audited; *f; f++)
        json_object_set(c->summary, *f, json_object_get(k, *f));
    json_t *out = json_pack("{s:s,s:s}", "id", id, "key", secret);
    sodium_memzero(secret, sizeof secret);
    const char *f;
    json_t *v;
    json_object_foreach(k, f, v) if (strcmp(f, "id") != 0) json_object_set(out, f, v);
    json_decref(k);
    api_reply(c->r, 201, out);
    return GP_OK;
}

int h_key_revoke(api_ctx *c, gp_err *err) {
    json_t *k;
    const char *id = api_param(c->r, "id");
    api_target(c->r, "key", id, NULL, NULL);
    int rc = load_key(c, ACT_KEY_MANAGE, &k, err);
    if (rc) return rc;
    c->summary = json_pack("{s:O,s:O}", "name", json_object_get(k, "name"), "owner",
                           json_object_get(k, "owner"));
    json_decref(k);
    k = NULL;
    rc = gw_key_revoke(c->tx, c->sc.p.id, id, err);
    if (!rc) rc = gw_key_get(c->tx, c->sc.p.id, id, &k, NULL, err);
    if (rc) return rc;
    api_reply(c->r, 200, k);
    return GP_OK;
}

/* ---- usage records ---- */

/* GET …/usage-records[?key=ID][&limit=N]: the project's (SC_PROJECT) or the whole tenant's
 * (SC_TENANT) records; usage.read there. */
int h_usage_records(api_ctx *c, gp_err *err) {
    json_t *items;
    int64_t limit = 100;
    const char *key = api_query(c->r, "key");
    if (api_query_int(c->r, "limit", 1, 5000, &limit))
        return gp_err_set(err, GP_EINVALID, "bad limit"); /* the 400 is set */
    int rc = gw_usage_list(c->tx, c->sc.t.id, c->sc.has_project ? c->sc.p.id : NULL, key,
                           (int)limit, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}
