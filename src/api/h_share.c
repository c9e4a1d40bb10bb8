/*
 * h_share.c - guaranteed shares (docs/scheduling.md, "Guarantees"): a tenant's guarantee,
 * the part of it kept from lending, its weight among borrowers and its GPU ceiling, with what
 * it uses, borrows, lends and borrowed recently.
 *
 *   GET   /api/v1/shares                    every tenant's share the caller may read
 *   GET   /api/v1/tenants/{tenant}/shares   one tenant's (its readers)
 *   PATCH /api/v1/tenants/{tenant}/shares   change the fields it names (platform-admin;
 *                                           raising is tenant.quota.raise, as for the quota)
 *   GET   /api/v1/tenants/{tenant}/projects/{project}/shares   a project's part of its
 *                                           tenant's guarantee (the project's readers)
 *   PATCH .../projects/{project}/shares     its part and its ceiling (tenant-admins, as its
 *                                           quota: the parts add up to the guarantee at most)
 *
 * The fields live on the tenant's quota (quota.h: guarantee, kept, weight, the class
 * guarantees, the gpus ceiling),
 * so `quota set` and this route change the same thing, checked the same way
 * (api_quota_change); a share names only its own tenant's figures, never who borrows from it.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../sched/share.h"

#include <stdlib.h>
#include <string.h>

/* A share view `o` (the caller's until this returns) as its readers see it: the tenant's
 * name, the project's (NULL: a tenant's share) and the GPU ceiling of quota q (null: none). */
static int named_share(json_t *o, const quota_set *q, const char *tenant, const char *project,
                       json_t **out, gp_err *err) {
    json_t *qj = quota_json(q);
    json_t *ceiling = qj ? json_object_get(qj, "gpus") : NULL;
    if (!qj || json_object_set_new(o, "tenant", json_string(tenant)) ||
        (project && json_object_set_new(o, "project", json_string(project))) ||
        json_object_set(o, "ceiling_gpus", ceiling ? ceiling : json_null())) {
        json_decref(qj);
        json_decref(o);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    json_decref(qj);
    *out = o;
    return GP_OK;
}

/* The share of tenant (id, name): share_tenant_view's figures, named.  *out is the caller's. */
static int share_json(store_tx *tx, const char *id, const char *name, json_t **out,
                      gp_err *err) {
    quota_set q;
    json_t *o = NULL;
    int rc = quota_load(tx, id, NULL, &q, err);
    if (!rc) rc = share_tenant_view(tx, id, &o, err);
    return rc ? rc : named_share(o, &q, name, NULL, out, err);
}

int h_share_get(api_ctx *c, gp_err *err) {
    json_t *o;
    api_target(c->r, "share", c->sc.t.name, NULL, NULL);
    int rc = share_json(c->tx, c->sc.t.id, c->sc.t.name, &o, err);
    if (rc) return rc;
    api_reply(c->r, 200, o);
    return GP_OK;
}

int h_share_list(api_ctx *c, gp_err *err) {
    tenancy_tenant *ts;
    int n;
    int64_t now = gt_now_us();
    int rc = tenancy_tenant_list(c->tx, &ts, &n, err);
    if (rc) return rc;
    json_t *items = json_array();
    for (int i = 0; i < n && !rc; i++) {
        authz_target tg = {ts[i].id, NULL};
        if (authz_check(c->who->bindings, c->who->nbindings, ACT_TENANT_READ, &tg, now) !=
            AUTHZ_ALLOW)
            continue; /* exactly the tenants GET /tenants/{t}/shares would answer */
        json_t *o;
        if (!(rc = share_json(c->tx, ts[i].id, ts[i].name, &o, err)))
            json_array_append_new(items, o);
    }
    free(ts);
    if (rc) {
        json_decref(items);
        return rc;
    }
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* The body's share fields in the quota's names (ceiling_gpus is the quota's gpus); the
 * schema (docs/openapi.json, ShareUpdate) refused any other field. */
static json_t *as_quota_patch(json_t *body) {
    static const char *const same[] = {"guaranteed_gpus", "kept_gpus", "borrow_weight",
                                       "class_guarantees", "pool_guarantees", NULL};
    json_t *p = json_object();
    for (int i = 0; p && same[i]; i++) {
        json_t *v = json_object_get(body, same[i]);
        if (v) json_object_set(p, same[i], v);
    }
    json_t *ceiling = json_object_get(body, "ceiling_gpus");
    if (p && ceiling) json_object_set(p, "gpus", ceiling);
    return p;
}

int h_share_patch(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"guaranteed_gpus", "kept_gpus", "borrow_weight",
                                         "ceiling_gpus", "class_guarantees",
                                         "pool_guarantees", NULL};
    quota_set next;
    api_target(c->r, "share", c->sc.t.name, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (rc) return rc;
    if (json_object_size(c->body) == 0)
        return gp_err_set(err, GP_EINVALID,
                          "name at least one of guaranteed_gpus, kept_gpus, borrow_weight, "
                          "ceiling_gpus, class_guarantees, pool_guarantees");
    json_t *patch = as_quota_patch(c->body);
    if (!patch) return gp_err_set(err, GP_ENOMEM, NULL);
    rc = api_quota_change(c, patch, 1, &next, err);
    json_decref(patch);
    if (rc || c->dry_run) return rc;
    json_t *o;
    if ((rc = share_json(c->tx, c->sc.t.id, c->sc.t.name, &o, err))) return rc;
    api_reply(c->r, 200, o);
    return GP_OK;
}

/* ---- a project's part of its tenant's guarantee (docs/scheduling.md, "A project's part of
 * the guarantee") ---- */

static int project_share_json(api_ctx *c, json_t **out, gp_err *err) {
    quota_set q;
    json_t *o = NULL;
    int rc = quota_load(c->tx, c->sc.t.id, c->sc.p.id, &q, err);
    if (!rc) rc = share_project_view(c->tx, c->sc.t.id, c->sc.p.id, &o, err);
    return rc ? rc : named_share(o, &q, c->sc.t.name, c->sc.p.name, out, err);
}

int h_share_project_get(api_ctx *c, gp_err *err) {
    json_t *o;
    api_target(c->r, "share", c->sc.p.name, NULL, NULL);
    int rc = project_share_json(c, &o, err);
    if (rc) return rc;
    api_reply(c->r, 200, o);
    return GP_OK;
}

int h_share_project_patch(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"guaranteed_gpus", "ceiling_gpus", "class_guarantees",
                                         "pool_guarantees", NULL};
    quota_set next;
    api_target(c->r, "share", c->sc.p.name, NULL, NULL);
    int rc = jx_only_fields(c->body, fields, err);
    if (rc) return rc;
    if (json_object_size(c->body) == 0)
        return gp_err_set(err, GP_EINVALID,
                          "name at least one of guaranteed_gpus, ceiling_gpus, class_guarantees, "
                          "pool_guarantees");
    json_t *patch = as_quota_patch(c->body);
    if (!patch) return gp_err_set(err, GP_ENOMEM, NULL);
    rc = api_quota_change(c, patch, 1, &next, err);
    json_decref(patch);
    if (rc || c->dry_run) return rc;
    json_t *o;
    if ((rc = project_share_json(c, &o, err))) return rc;
    api_reply(c->r, 200, o);
    return GP_OK;
}
