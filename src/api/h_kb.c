/*
 * h_kb.c - knowledge bases, their documents and queries, and the binding
 * of an application's model to KBs (retrieval-augmented answers).  The
 * logic is in src/kb (kb.h); these handlers resolve the path, authorise,
 * and wrap store calls in a transaction with the audit event.
 *
 *   GET|POST /tenants/{t}/kbs                           (filtered) | kb.manage
 *   GET|PATCH|DELETE /tenants/{t}/kbs/{kb}              kb.read | kb.manage
 *   GET|POST /tenants/{t}/kbs/{kb}/documents            kb.read | kb.write
 *   GET|DELETE /tenants/{t}/kbs/{kb}/documents/{doc}    kb.read | kb.write
 *   POST /tenants/{t}/kbs/{kb}/query                    kb.read
 *   the same under /ops/kbs                             kb.ops_read | kb.ops_write
 *   GET /tenants/{t}/projects/{p}/apps/{app}/rag        key.read
 *   PUT|DELETE …/apps/{app}/rag/{model}                 app.manage
 *
 * Who reads a KB: a tenant-wide KB, anyone holding kb.read on the tenant
 * (tenant-admin, tenant viewer) or on any of its projects (project-admin,
 * project-user, project viewer); a project KB, kb.read on that project.
 * An ops KB: kb.ops_read (platform-, security-admin, ops-engineer), or a
 * vendor holding one of the work orders the KB names (named by a live grant
 * or assigned to it).  A KB the caller cannot read answers 404 exactly like
 * a missing one; a readable one answers 403 to a change the role does not
 * allow.  Changes are audited with the KB (and document) as the target.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../inventory/inventory.h"
#include "../kb/kb.h"
#include "../tenancy/tenancy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NEED_READ, NEED_WRITE, NEED_MANAGE };

typedef struct kbscope {
    int ops;             /* /api/v1/ops/kbs… */
    tenancy_tenant t;    /* tenant routes */
    kb_info kb;          /* once loaded */
} kbscope;

static int is_ops(api_req *r) { return !strncmp(r->route->pattern, "/api/v1/ops/", 12); }

static int allowed(api_req *r, int action, const char *tid, const char *pid) {
    authz_target tg = {tid, pid};
    return authz_check(r->who->bindings, r->who->nbindings, (authz_action)action, &tg,
                       gt_now_us()) == AUTHZ_ALLOW;
}

/* Is the caller a vendor holding one of `wos` (by a live grant, or assigned)? */
static int vendor_holds(api_req *r, store_tx *tx, json_t *wos) {
    gp_err err = GP_ERR_INIT;
    if (!json_array_size(wos) ||
        !authz_holds(r->who->bindings, r->who->nbindings, ROLE_VENDOR, gt_now_us()))
        return 0;
    json_t *nodes = NULL, *ids = NULL, *held = NULL;
    int yes = 0;
    if (!auth_vendor_scope(tx, r->who->user_id, &nodes, &ids, &err) &&
        !inv_wo_list(tx, ids, r->who->name, &held, &err)) {
        size_t i, j;
        json_t *h, *w;
        json_array_foreach(held, i, h) json_array_foreach(wos, j, w) {
            if (json_equal(json_object_get(h, "id"), w)) yes = 1;
        }
    }
    json_decref(nodes);
    json_decref(ids);
    json_decref(held);
    return yes;
}

/* May the caller read `kb`?  (Sets no response.) */
static int may_read(api_req *r, store_tx *tx, const kbscope *sc, const kb_info *kb) {
    if (sc->ops) return allowed(r, ACT_KB_OPS_READ, NULL, NULL) || vendor_holds(r, tx, kb->work_orders);
    const char *tid = sc->t.id, *pid = kb->project_id[0] ? kb->project_id : NULL;
    if (pid) return allowed(r, ACT_KB_READ, tid, pid);
    /* a tenant-wide KB: members of any of the tenant's projects read it */
    return authz_tenant_wide(r->who->bindings, r->who->nbindings, ACT_KB_READ, tid, gt_now_us());
}

typedef struct keepcls {
    api_req *r;
    store_tx *tx;
    const kbscope *sc;
} keepcls;

static int keep_readable(void *cls, const kb_info *kb) {
    keepcls *k = cls;
    return may_read(k->r, k->tx, k->sc, kb);
}

/* Resolve {tenant} (tenant routes): 404 unless it exists and the caller can see it. */
static int load_tenant(api_req *r, store_tx *tx, kbscope *sc) {
    gp_err err = GP_ERR_INIT;
    memset(sc, 0, sizeof *sc);
    sc->ops = is_ops(r);
    if (sc->ops) return 0;
    const char *tn = api_param(r, "tenant");
    api_target(r, NULL, NULL, tn, NULL);
    int rc = tenancy_tenant_find(tx, tn, &sc->t, &err);
    authz_target tg = {sc->t.id, NULL};
    if (rc == GP_ENOTFOUND ||
        (!rc && !authz_visible(r->who->bindings, r->who->nbindings, &tg, gt_now_us()))) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    if (rc) {
        api_fail(r, &err);
        return -1;
    }
    return 0;
}

/* The project name of a project KB ("" otherwise), for the audit target. */
static void target_project(api_req *r, store_tx *tx, const kbscope *sc) {
    if (sc->ops || !sc->kb.project_id[0]) return;
    store_stmt *s;
    gp_err err = GP_ERR_INIT;
    if (store_query(tx, &s, &err, "SELECT name FROM projects WHERE id = ?", "s",
                    sc->kb.project_id))
        return;
    if (store_step(s, &err) > 0) api_target(r, NULL, NULL, NULL, store_text(s, 0));
    store_done(s);
}

/* Load {kb} and check `need` on it; on failure the response is set. */
static int load_kb(api_req *r, store_tx *tx, kbscope *sc, int need) {
    gp_err err = GP_ERR_INIT;
    if (load_tenant(r, tx, sc)) return -1;
    const char *name = api_param(r, "kb");
    if (!r->a_type) api_target(r, "kb", name, NULL, NULL);
    int rc = kb_find(tx, sc->ops ? NULL : sc->t.id, name, &sc->kb, &err);
    if (rc && rc != GP_ENOTFOUND) {
        api_fail(r, &err);
        return -1;
    }
    int readable = !rc && may_read(r, tx, sc, &sc->kb);
    if (!readable) {
        kb_info_release(&sc->kb);
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    target_project(r, tx, sc);
    if (need == NEED_READ) return 0;
    int ok = sc->ops ? allowed(r, ACT_KB_OPS_WRITE, NULL, NULL)
                     : allowed(r, need == NEED_WRITE ? ACT_KB_WRITE : ACT_KB_MANAGE, sc->t.id,
                               sc->kb.project_id[0] ? sc->kb.project_id : NULL);
    if (!ok) {
        kb_info_release(&sc->kb);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return -1;
    }
    return 0;
}

static int open_kb(api_req *r, int mode, int need, store_tx **tx, kbscope *sc) {
    if (api_begin(r, mode, tx)) return -1;
    if (load_kb(r, *tx, sc, need)) {
        store_rollback(*tx);
        return -1;
    }
    return 0;
}

static void close_kb(store_tx *tx, kbscope *sc) {
    store_rollback(tx);
    kb_info_release(&sc->kb);
}

/* ---- knowledge bases ---- */

void h_kb_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *items;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (load_tenant(r, tx, &sc)) {
        store_rollback(tx);
        return;
    }
    if (sc.ops && !allowed(r, ACT_KB_OPS_READ, NULL, NULL) &&
        !authz_holds(r->who->bindings, r->who->nbindings, ROLE_VENDOR, gt_now_us())) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    keepcls k = {r, tx, &sc};
    int rc = kb_list(tx, sc.ops ? NULL : sc.t.id, keep_readable, &k, &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_kb_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *out;
    if (open_kb(r, STORE_READ, NEED_READ, &tx, &sc)) return;
    int rc = kb_get_json(tx, &sc.kb, &out, &err);
    close_kb(tx, &sc);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, out);
}

void h_kb_create(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *body, *out = NULL;
    tenancy_project p;
    char id[RND_ID_LEN];
    api_target(r, "kb", NULL, NULL, NULL);
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (load_tenant(r, tx, &sc)) {
        store_rollback(tx);
        return;
    }
    /* authorise on the tenant first (a project named in the body narrows it below) */
    int can = sc.ops ? allowed(r, ACT_KB_OPS_WRITE, NULL, NULL)
                     : authz_visible(r->who->bindings, r->who->nbindings,
                                     &(authz_target){sc.t.id, NULL}, gt_now_us());
    if (!can) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    const char *name = json_string_value(json_object_get(body, "name"));
    const char *pn = json_string_value(json_object_get(body, "project"));
    if (name) api_target(r, NULL, name, NULL, NULL);
    int rc = GP_OK;
    if (!sc.ops && pn) {
        rc = tenancy_project_find(tx, &sc.t, pn, &p, &err);
        if (rc == GP_ENOTFOUND ||
            (!rc && !authz_visible(r->who->bindings, r->who->nbindings,
                                   &(authz_target){sc.t.id, p.id}, gt_now_us()))) {
            json_decref(body);
            store_rollback(tx);
            api_error(r, 404, "not_found", "project not found");
            return;
        }
        api_target(r, NULL, NULL, NULL, pn);
    } else if (!sc.ops && json_object_get(body, "project") &&
               !json_is_null(json_object_get(body, "project"))) {
        rc = gp_err_set(&err, GP_EINVALID, "project must be a project name");
    }
    if (!rc && !sc.ops &&
        !api_authorize(r, ACT_KB_MANAGE, sc.t.id, pn ? p.id : NULL)) {
        json_decref(body);
        store_rollback(tx);
        return;
    }
    if (!rc) rc = kb_create(tx, sc.ops ? NULL : sc.t.id, pn ? p.id : NULL, body, r->who->name, id, &err);
    if (!rc) rc = kb_find(tx, sc.ops ? NULL : sc.t.id, name, &sc.kb, &err);
    if (!rc) rc = kb_get_json(tx, &sc.kb, &out, &err);
    json_decref(body);
    kb_info_release(&sc.kb);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:O,s:O,s:O,s:O}", "name", json_object_get(out, "name"), "scope",
                            json_object_get(out, "scope"), "project",
                            json_object_get(out, "project"), "work_orders",
                            json_object_get(out, "work_orders"));
    if (api_finish(r, tx, 201, sum)) json_decref(out);
    else api_reply(r, 201, out);
}

void h_kb_update(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *body, *before = NULL, *after = NULL;
    if (open_kb(r, STORE_WRITE, NEED_MANAGE, &tx, &sc)) return;
    if (api_body(r, &body)) {
        close_kb(tx, &sc);
        return;
    }
    int rc = kb_get_json(tx, &sc.kb, &before, &err);
    if (!rc) rc = kb_update(tx, &sc.kb, body, &err);
    if (!rc) rc = kb_get_json(tx, &sc.kb, &after, &err);
    json_decref(body);
    kb_info_release(&sc.kb);
    if (rc) {
        json_decref(before);
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:{s:O,s:O},s:{s:O,s:O}}", "from", "description",
                            json_object_get(before, "description"), "work_orders",
                            json_object_get(before, "work_orders"), "to", "description",
                            json_object_get(after, "description"), "work_orders",
                            json_object_get(after, "work_orders"));
    json_decref(before);
    if (api_finish(r, tx, 200, sum)) json_decref(after);
    else api_reply(r, 200, after);
}

void h_kb_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    int64_t docs = 0;
    if (open_kb(r, STORE_WRITE, NEED_MANAGE, &tx, &sc)) return;
    char name[64], scope[8];
    snprintf(name, sizeof name, "%s", sc.kb.name);
    snprintf(scope, sizeof scope, "%s", sc.kb.scope);
    int rc = kb_delete(tx, &sc.kb, &docs, &err);
    kb_info_release(&sc.kb);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:s,s:s,s:I}", "name", name, "scope", scope, "documents",
                            (json_int_t)docs);
    if (!api_finish(r, tx, 200, sum))
        api_reply(r, 200, json_pack("{s:s,s:b,s:I}", "name", name, "deleted", 1, "documents",
                                    (json_int_t)docs));
}

/* ---- documents ---- */

void h_kb_doc_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *items;
    if (open_kb(r, STORE_READ, NEED_READ, &tx, &sc)) return;
    int rc = kb_doc_list(tx, &sc.kb, &items, &err);
    close_kb(tx, &sc);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_kb_doc_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *d;
    if (open_kb(r, STORE_READ, NEED_READ, &tx, &sc)) return;
    int rc = kb_doc_get(tx, &sc.kb, api_param(r, "doc"), 1, &d, &err);
    close_kb(tx, &sc);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, d);
}

void h_kb_doc_upload(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *body, *d = NULL;
    kb_doc_input in;
    char id[RND_ID_LEN], target[200];
    const char *kbname = api_param(r, "kb");
    api_target(r, "kb-document", kbname, NULL, NULL);
    /* authorise first, then extract (pdftotext may take a while) outside any write lock */
    if (open_kb(r, STORE_READ, NEED_WRITE, &tx, &sc)) return;
    close_kb(tx, &sc);
    if (api_body(r, &body)) return;
    int rc = kb_doc_prepare(body, &in, &err);
    json_decref(body);
    if (in.name[0]) {
        snprintf(target, sizeof target, "%s/%s", kbname, in.name);
        api_target(r, NULL, target, NULL, NULL);
    }
    if (rc) {
        kb_doc_input_release(&in);
        if (rc == GP_EUNSUPPORTED) api_error(r, 415, "unsupported_format", err.msg);
        else api_fail(r, &err);
        return;
    }
    if (open_kb(r, STORE_WRITE, NEED_WRITE, &tx, &sc)) {
        kb_doc_input_release(&in);
        return;
    }
    rc = kb_doc_add(tx, &sc.kb, &in, r->who->name, id, &err);
    if (!rc) rc = kb_doc_get(tx, &sc.kb, in.name, 0, &d, &err);
    kb_info_release(&sc.kb);
    if (rc) {
        kb_doc_input_release(&in);
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:s,s:s,s:s,s:I,s:I}", "kb", kbname, "document", in.name, "format",
                            in.format, "bytes", (json_int_t)in.bytes, "chunks",
                            (json_int_t)in.nspans);
    kb_doc_input_release(&in);
    if (api_finish(r, tx, 201, sum)) json_decref(d);
    else api_reply(r, 201, d);
}

void h_kb_doc_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    char target[200];
    const char *kbname = api_param(r, "kb"), *doc = api_param(r, "doc");
    snprintf(target, sizeof target, "%s/%s", kbname, doc);
    api_target(r, "kb-document", target, NULL, NULL);
    if (open_kb(r, STORE_WRITE, NEED_WRITE, &tx, &sc)) return;
    int rc = kb_doc_delete(tx, &sc.kb, doc, &err);
    kb_info_release(&sc.kb);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, json_pack("{s:s,s:s}", "kb", kbname, "document", doc)))
        api_reply(r, 200, json_pack("{s:s,s:s,s:b}", "kb", kbname, "document", doc, "deleted", 1));
}

/* POST …/query {"query","k","document"}: the best chunks, best first. */
void h_kb_query(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kbscope sc;
    json_t *body, *items = NULL;
    static const char *const fields[] = {"query", "k", "document", NULL};
    const char *q = NULL, *doc = NULL;
    int64_t k = KB_DEFAULT_K;
    int given;
    if (open_kb(r, STORE_READ, NEED_READ, &tx, &sc)) return;
    if (api_body(r, &body)) {
        close_kb(tx, &sc);
        return;
    }
    int rc = jx_only_fields(body, fields, &err);
    if (!rc) rc = jx_get_str(body, "query", 1, &q, &err);
    if (!rc) rc = jx_get_str(body, "document", 0, &doc, &err);
    if (!rc) rc = jx_get_int(body, "k", 0, &k, &given, &err);
    if (!rc && (k < 1 || k > KB_MAX_K))
        rc = gp_err_set(&err, GP_EINVALID, "k must be 1-%d", KB_MAX_K);
    if (!rc && doc) {
        json_t *d;
        rc = kb_doc_get(tx, &sc.kb, doc, 0, &d, &err);
        json_decref(rc ? NULL : d);
    }
    if (!rc) {
        json_t *ids = json_pack("[s]", sc.kb.id);
        rc = kb_query(tx, sc.ops ? NULL : sc.t.id, ids, doc, q, (int)k, &items, &err);
        json_decref(ids);
    }
    json_decref(body);
    close_kb(tx, &sc);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

/* ---- applications bound to KBs ---- */

typedef struct appscope {
    tenancy_tenant t;
    tenancy_project p;
} appscope;

static int open_app(api_req *r, int mode, int action, store_tx **tx, appscope *sc) {
    gp_err err = GP_ERR_INIT;
    const char *tn = api_param(r, "tenant"), *pn = api_param(r, "project");
    api_target(r, "app", api_param(r, "app"), tn, pn);
    if (api_begin(r, mode, tx)) return -1;
    int rc = tenancy_tenant_find(*tx, tn, &sc->t, &err);
    if (!rc) rc = tenancy_project_find(*tx, &sc->t, pn, &sc->p, &err);
    if (rc == GP_ENOTFOUND) api_error(r, 404, "not_found", "not found");
    else if (rc) api_fail(r, &err);
    if (rc || !api_authorize(r, action, sc->t.id, sc->p.id)) {
        store_rollback(*tx);
        return -1;
    }
    return 0;
}

void h_app_rag_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    appscope sc;
    json_t *items;
    if (open_app(r, STORE_READ, ACT_KEY_READ, &tx, &sc)) return;
    int rc = kb_rag_list(tx, sc.p.id, api_param(r, "app"), &items, &err);
    store_rollback(tx);
    if (rc) api_fail(r, &err);
    else api_reply(r, 200, api_list(items, NULL));
}

void h_app_rag_set(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    appscope sc;
    json_t *body, *out = NULL;
    const char *app = api_param(r, "app"), *model = api_param(r, "model");
    if (open_app(r, STORE_WRITE, ACT_APP_MANAGE, &tx, &sc)) return;
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    int rc = kb_rag_set(tx, sc.t.id, sc.p.id, app, model, body, &out, &err);
    json_decref(body);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *sum = json_pack("{s:s,s:s,s:O,s:O}", "app", app, "model", model, "kbs",
                            json_object_get(out, "kbs"), "k", json_object_get(out, "k"));
    if (api_finish(r, tx, 200, sum)) json_decref(out);
    else api_reply(r, 200, out);
}

void h_app_rag_delete(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    appscope sc;
    const char *app = api_param(r, "app"), *model = api_param(r, "model");
    if (open_app(r, STORE_WRITE, ACT_APP_MANAGE, &tx, &sc)) return;
    if (kb_rag_delete(tx, sc.p.id, app, model, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, json_pack("{s:s,s:s}", "app", app, "model", model)))
        api_reply(r, 200, json_pack("{s:s,s:s,s:b}", "app", app, "model", model, "deleted", 1));
}
