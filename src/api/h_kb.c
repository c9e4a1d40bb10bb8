/*
 * h_kb.c - knowledge bases, their documents and queries, and the binding
 * of an application's model to KBs (retrieval-augmented answers).  The
 * logic is in src/kb (kb.h).  The routes are declared (routes.c): dispatch
 * opens the transaction, resolves {tenant} (SC_TENANT: 404 unless the
 * caller sees the tenant, and the transaction tied to it) or {project}
 * (SC_PROJECT, the app routes), parses the body and appends the audit
 * event; these handlers load the KB and decide on it.  The ops routes have
 * no tenant: who may act on an ops KB depends on the KB (a vendor holding
 * one of its work orders reads it), so they are SC_SIGNED_IN and decided
 * here, except create, which is kb.ops_write at global scope.  A document
 * upload has a `prepare` step: it extracts the text (pdftotext may take a
 * while) in dispatch's read pass, before the write transaction.
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

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NEED_READ, NEED_WRITE, NEED_MANAGE };

static int allowed(api_req *r, int action, const char *tid, const char *pid) {
    authz_target tg = {tid, pid};
    return authz_check(r->who->bindings, r->who->nbindings, (authz_action)action, &tg,
                       gt_now_us()) == AUTHZ_ALLOW;
}

/* The tenant a declared route acts in: NULL on the ops routes (no {tenant}). */
static const char *tenant_of(const api_ctx *c) { return c->sc.t.id[0] ? c->sc.t.id : NULL; }

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

/* May the caller read `kb`, of tenant `tid` (NULL: an ops KB)? */
static int may_read(api_req *r, store_tx *tx, const char *tid, const kb_info *kb) {
    if (!tid) return allowed(r, ACT_KB_OPS_READ, NULL, NULL) || vendor_holds(r, tx, kb->work_orders);
    const char *pid = kb->project_id[0] ? kb->project_id : NULL;
    if (pid) return allowed(r, ACT_KB_READ, tid, pid);
    /* a tenant-wide KB: members of any of the tenant's projects read it */
    return authz_tenant_wide(r->who->bindings, r->who->nbindings, ACT_KB_READ, tid, gt_now_us());
}

typedef struct keepcls {
    api_req *r;
    store_tx *tx;
    const char *tid;
} keepcls;

static int keep_readable(void *cls, const kb_info *kb) {
    keepcls *k = cls;
    return may_read(k->r, k->tx, k->tid, kb);
}

/* The project name of a project KB, for the audit target. */
static void target_project(api_req *r, store_tx *tx, const kb_info *kb) {
    if (!kb->project_id[0]) return;
    store_stmt *s;
    gp_err err = GP_ERR_INIT;
    if (store_query(tx, &s, &err, "SELECT name FROM projects WHERE id = ?", "s", kb->project_id))
        return;
    if (store_step(s, &err) > 0) api_target(r, NULL, NULL, NULL, store_text(s, 0));
    store_done(s);
}

/*
 * Load {kb} of tenant `tid` (NULL: the ops KBs) and check `need` on it:
 * GP_ENOTFOUND for a KB the caller cannot read, exactly as for a missing
 * one, GP_EFORBIDDEN for a change its role does not allow on a KB it reads.
 * Records the KB as the audit target unless the handler named one.
 * OUT: *kb (kb_info_release; released on failure).
 */
static int load_kb(api_req *r, store_tx *tx, const char *tid, int need, kb_info *kb,
                   gp_err *err) {
    const char *name = api_param(r, "kb");
    if (!r->a_type) api_target(r, "kb", name, NULL, NULL);
    int rc = kb_find(tx, tid, name, kb, err);
    if (rc && rc != GP_ENOTFOUND) return rc;
    if (rc || !may_read(r, tx, tid, kb)) {
        kb_info_release(kb);
        return gp_err_set(err, GP_ENOTFOUND, "not found");
    }
    if (tid) target_project(r, tx, kb);
    if (need == NEED_READ) return GP_OK;
    int ok = !tid ? allowed(r, ACT_KB_OPS_WRITE, NULL, NULL)
                  : allowed(r, need == NEED_WRITE ? ACT_KB_WRITE : ACT_KB_MANAGE, tid,
                            kb->project_id[0] ? kb->project_id : NULL);
    if (!ok) {
        kb_info_release(kb);
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    }
    return GP_OK;
}

/* ---- knowledge bases ---- */

/* The tenant's KBs the caller reads (SC_TENANT, visible), or the ops KBs (SC_SIGNED_IN:
 * kb.ops_read, or a vendor, who sees those of its work orders). */
int h_kb_list(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *tid = tenant_of(c);
    if (!tid && !allowed(c->r, ACT_KB_OPS_READ, NULL, NULL) &&
        !authz_holds(c->who->bindings, c->who->nbindings, ROLE_VENDOR, gt_now_us()))
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    keepcls k = {c->r, c->tx, tid};
    int rc = kb_list(c->tx, tid, keep_readable, &k, &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_kb_get(api_ctx *c, gp_err *err) {
    kb_info kb;
    json_t *out;
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_READ, &kb, err);
    if (rc) return rc;
    rc = kb_get_json(c->tx, &kb, &out, err);
    kb_info_release(&kb);
    if (rc) return rc;
    api_reply(c->r, 200, out);
    return GP_OK;
}

/* A tenant KB (SC_TENANT, visible: kb.manage is checked on the tenant, or on the project the
 * body names), or an ops KB (SC_GLOBAL, kb.ops_write). */
int h_kb_create(api_ctx *c, gp_err *err) {
    json_t *out = NULL;
    tenancy_project p;
    kb_info kb;
    char id[RND_ID_LEN];
    const char *tid = tenant_of(c);
    api_target(c->r, "kb", NULL, NULL, NULL);
    const char *name = json_string_value(json_object_get(c->body, "name"));
    const char *pn = json_string_value(json_object_get(c->body, "project"));
    json_t *pv = json_object_get(c->body, "project");
    if (name) api_target(c->r, NULL, name, NULL, NULL);
    int rc;
    if (tid && pn) {
        rc = tenancy_project_find(c->tx, &c->sc.t, pn, &p, err);
        if (rc && rc != GP_ENOTFOUND) return rc;
        if (rc || !authz_visible(c->who->bindings, c->who->nbindings,
                                 &(authz_target){tid, p.id}, gt_now_us()))
            return gp_err_set(err, GP_ENOTFOUND, "project not found");
        api_target(c->r, NULL, NULL, NULL, pn);
    } else if (tid && pv && !json_is_null(pv)) {
        return gp_err_set(err, GP_EINVALID, "project must be a project name");
    }
    if (tid && (rc = api_allow(c, ACT_KB_MANAGE, tid, pn ? p.id : NULL, err))) return rc;
    rc = kb_create(c->tx, tid, pn && tid ? p.id : NULL, c->body, c->who->name, id, err);
    if (!rc) rc = kb_find(c->tx, tid, name, &kb, err);
    if (rc) return rc;
    rc = kb_get_json(c->tx, &kb, &out, err);
    kb_info_release(&kb);
    if (rc) return rc;
    c->summary = json_pack("{s:O,s:O,s:O,s:O}", "name", json_object_get(out, "name"), "scope",
                           json_object_get(out, "scope"), "project",
                           json_object_get(out, "project"), "work_orders",
                           json_object_get(out, "work_orders"));
    api_reply(c->r, 201, out);
    return GP_OK;
}

int h_kb_update(api_ctx *c, gp_err *err) {
    kb_info kb;
    json_t *before = NULL, *after = NULL;
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_MANAGE, &kb, err);
    if (rc) return rc;
    rc = kb_get_json(c->tx, &kb, &before, err);
    if (!rc) rc = kb_update(c->tx, &kb, c->body, err);
    if (!rc) rc = kb_get_json(c->tx, &kb, &after, err);
    kb_info_release(&kb);
    if (rc) {
        json_decref(before);
        return rc;
    }
    c->summary = json_pack("{s:{s:O,s:O},s:{s:O,s:O}}", "from", "description",
                           json_object_get(before, "description"), "work_orders",
                           json_object_get(before, "work_orders"), "to", "description",
                           json_object_get(after, "description"), "work_orders",
                           json_object_get(after, "work_orders"));
    json_decref(before);
    api_reply(c->r, 200, after);
    return GP_OK;
}

int h_kb_delete(api_ctx *c, gp_err *err) {
    kb_info kb;
    int64_t docs = 0;
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_MANAGE, &kb, err);
    if (rc) return rc;
    char name[64], scope[8];
    snprintf(name, sizeof name, "%s", kb.name);
    snprintf(scope, sizeof scope, "%s", kb.scope);
    rc = kb_delete(c->tx, &kb, &docs, err);
    kb_info_release(&kb);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s,s:I}", "name", name, "scope", scope, "documents",
                           (json_int_t)docs);
    api_reply(c->r, 200, json_pack("{s:s,s:b,s:I}", "name", name, "deleted", 1, "documents",
                                   (json_int_t)docs));
    return GP_OK;
}

/* ---- documents ---- */

int h_kb_doc_list(api_ctx *c, gp_err *err) {
    kb_info kb;
    json_t *items;
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_READ, &kb, err);
    if (rc) return rc;
    rc = kb_doc_list(c->tx, &kb, &items, err);
    kb_info_release(&kb);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_kb_doc_get(api_ctx *c, gp_err *err) {
    kb_info kb;
    json_t *d;
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_READ, &kb, err);
    if (rc) return rc;
    rc = kb_doc_get(c->tx, &kb, api_param(c->r, "doc"), 1, &d, err);
    kb_info_release(&kb);
    if (rc) return rc;
    api_reply(c->r, 200, d);
    return GP_OK;
}

/*
 * A document's upload, in two steps (a route with a `prepare` step): the
 * first authorises in a read transaction and extracts the text (pdftotext
 * may take a while) with no write lock held; the second adds the document in
 * the write transaction, checking the KB again there.
 */
static void doc_input_free(void *p) {
    kb_doc_input_release(p);
    free(p);
}

/* Name the document in the audit target, "kb/doc". */
static void doc_target(api_req *r, const char *kbname, const kb_doc_input *in) {
    char target[200];
    api_target(r, "kb-document", kbname, NULL, NULL);
    if (!in->name[0]) return;
    snprintf(target, sizeof target, "%s/%s", kbname, in->name);
    api_target(r, NULL, target, NULL, NULL);
}

int h_kb_doc_upload_prepare(api_ctx *c, gp_err *err) {
    kb_info kb;
    const char *kbname = api_param(c->r, "kb");
    api_target(c->r, "kb-document", kbname, NULL, NULL);
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_WRITE, &kb, err);
    if (rc) return rc;
    kb_info_release(&kb);
    kb_doc_input *in = calloc(1, sizeof *in);
    if (!in) return gp_err_set(err, GP_ENOMEM, "out of memory");
    c->prep = in;
    c->prep_free = doc_input_free;
    rc = kb_doc_prepare(c->body, in, err);
    doc_target(c->r, kbname, in);
    if (rc == GP_EUNSUPPORTED) api_error(c->r, 415, "unsupported_format", err->msg);
    return rc;
}

int h_kb_doc_upload(api_ctx *c, gp_err *err) {
    kb_info kb;
    json_t *d = NULL;
    char id[RND_ID_LEN];
    const kb_doc_input *in = c->prep;
    const char *kbname = api_param(c->r, "kb");
    assert(in);
    doc_target(c->r, kbname, in);
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_WRITE, &kb, err);
    if (rc) return rc;
    rc = kb_doc_add(c->tx, &kb, in, c->r->who->name, id, err);
    if (!rc) rc = kb_doc_get(c->tx, &kb, in->name, 0, &d, err);
    kb_info_release(&kb);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s,s:s,s:I,s:I}", "kb", kbname, "document", in->name, "format",
                           in->format, "bytes", (json_int_t)in->bytes, "chunks",
                           (json_int_t)in->nspans);
    api_reply(c->r, 201, d);
    return GP_OK;
}

int h_kb_doc_delete(api_ctx *c, gp_err *err) {
    kb_info kb;
    char target[200];
    const char *kbname = api_param(c->r, "kb"), *doc = api_param(c->r, "doc");
    snprintf(target, sizeof target, "%s/%s", kbname, doc);
    api_target(c->r, "kb-document", target, NULL, NULL);
    int rc = load_kb(c->r, c->tx, tenant_of(c), NEED_WRITE, &kb, err);
    if (rc) return rc;
    rc = kb_doc_delete(c->tx, &kb, doc, err);
    kb_info_release(&kb);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s}", "kb", kbname, "document", doc);
    api_reply(c->r, 200, json_pack("{s:s,s:s,s:b}", "kb", kbname, "document", doc, "deleted", 1));
    return GP_OK;
}

/* POST …/query {"query","k","document"}: the best chunks, best first.  A read that takes a
 * body (ROUTE_BODY on a read transaction). */
int h_kb_query(api_ctx *c, gp_err *err) {
    kb_info kb;
    json_t *items = NULL;
    static const char *const fields[] = {"query", "k", "document", NULL};
    const char *q = NULL, *doc = NULL, *tid = tenant_of(c);
    int64_t k = KB_DEFAULT_K;
    int given;
    int rc = load_kb(c->r, c->tx, tid, NEED_READ, &kb, err);
    if (rc) return rc;
    rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "query", 1, &q, err);
    if (!rc) rc = jx_get_str(c->body, "document", 0, &doc, err);
    if (!rc) rc = jx_get_int(c->body, "k", 0, &k, &given, err);
    if (!rc && (k < 1 || k > KB_MAX_K))
        rc = gp_err_set(err, GP_EINVALID, "k must be 1-%d", KB_MAX_K);
    if (!rc && doc) {
        json_t *d;
        rc = kb_doc_get(c->tx, &kb, doc, 0, &d, err);
        json_decref(rc ? NULL : d);
    }
    if (!rc) {
        json_t *ids = json_pack("[s]", kb.id);
        rc = kb_query(c->tx, tid, ids, doc, q, (int)k, &items, err);
        json_decref(ids);
    }
    kb_info_release(&kb);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

/* ---- applications bound to KBs (SC_PROJECT: key.read to list, app.manage to change) ---- */

int h_app_rag_list(api_ctx *c, gp_err *err) {
    json_t *items;
    api_target(c->r, "app", api_param(c->r, "app"), NULL, NULL);
    int rc = kb_rag_list(c->tx, c->sc.p.id, api_param(c->r, "app"), &items, err);
    if (rc) return rc;
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_app_rag_set(api_ctx *c, gp_err *err) {
    json_t *out = NULL;
    const char *app = api_param(c->r, "app"), *model = api_param(c->r, "model");
    api_target(c->r, "app", app, NULL, NULL);
    int rc = kb_rag_set(c->tx, c->sc.t.id, c->sc.p.id, app, model, c->body, &out, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s,s:O,s:O}", "app", app, "model", model, "kbs",
                           json_object_get(out, "kbs"), "k", json_object_get(out, "k"));
    api_reply(c->r, 200, out);
    return GP_OK;
}

int h_app_rag_delete(api_ctx *c, gp_err *err) {
    const char *app = api_param(c->r, "app"), *model = api_param(c->r, "model");
    api_target(c->r, "app", app, NULL, NULL);
    int rc = kb_rag_delete(c->tx, c->sc.p.id, app, model, err);
    if (rc) return rc;
    c->summary = json_pack("{s:s,s:s}", "app", app, "model", model);
    api_reply(c->r, 200, json_pack("{s:s,s:s,s:b}", "app", app, "model", model, "deleted", 1));
    return GP_OK;
}
