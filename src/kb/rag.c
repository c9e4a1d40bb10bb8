/*
 * rag.c - applications bound to knowledge bases (see kb.h): which KBs a
 * key of an application retrieves from, per model, and how many chunks.
 *
 * A binding is rows of kb_app_rag (app, model, kb, position, k).  Only KBs
 * of the application's tenant that are tenant-wide or of the application's
 * own project may be bound, and kb_rag_lookup() checks that again when it
 * is used, so a binding never reaches beyond what the application may read.
 */
#include "kb.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <string.h>

static int app_id(store_tx *tx, const char *project_id, const char *app, char id[RND_ID_LEN],
                  gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT id FROM apps WHERE project_id = ? AND name = ?", "ss",
                         project_id, app);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(id, RND_ID_LEN, "%s", store_text(s, 0));
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "app not found");
    return rc < 0 ? rc : GP_OK;
}

/* A KB bound to an app for a model, as binding_json reads it (STORE_COLS). */
#define BOUND_COLUMNS(X) X(BD_KB, "k.name") X(BD_K, "r.k") X(BD_UPDATED, "r.updated_at")
enum { BOUND_COLUMNS(STORE_COL_ENUM) BD__N };

/* One binding of an app as JSON (NULL when there is none). */
static int binding_json(store_tx *tx, const char *aid, const char *model, json_t **out,
                        gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(BOUND_COLUMNS) " FROM kb_app_rag r JOIN kbs k"
                         " ON k.id = r.kb_id WHERE r.app_id = ? AND r.model = ? ORDER BY r.pos",
                         "ss", aid, model);
    if (rc) return rc;
    json_t *kbs = json_array();
    int64_t k = 0, at = 0;
    while ((rc = store_step(s, err)) > 0) {
        json_array_append_new(kbs, json_string(store_text(s, BD_KB)));
        k = store_int(s, BD_K);
        at = store_int(s, BD_UPDATED);
    }
    store_done(s);
    if (rc < 0 || !json_array_size(kbs)) {
        json_decref(kbs);
        *out = NULL;
        return rc < 0 ? rc : GP_OK;
    }
    *out = json_pack("{s:s,s:o,s:I,s:o}", "model", model, "kbs", kbs, "k", (json_int_t)k,
                     "updated_at", jx_time(at));
    return GP_OK;
}

int kb_rag_set(store_tx *tx, const char *tenant_id, const char *project_id, const char *app,
               const char *model, json_t *spec, json_t **out, gp_err *err) {
    static const char *const fields[] = {"kbs", "k", NULL};
    char aid[RND_ID_LEN];
    int64_t k = KB_DEFAULT_K;
    int given;
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_int(spec, "k", 0, &k, &given, err);
    if (rc) return rc;
    if (k < 1 || k > KB_MAX_K) return gp_err_set(err, GP_EINVALID, "k must be 1-%d", KB_MAX_K);
    if (!model || !*model || strlen(model) > 127)
        return gp_err_set(err, GP_EINVALID, "model must be a model name");
    json_t *kbs = json_object_get(spec, "kbs");
    if (!json_is_array(kbs) || !json_array_size(kbs) || json_array_size(kbs) > 16)
        return gp_err_set(err, GP_EINVALID, "kbs must name 1-16 knowledge bases");
    if ((rc = app_id(tx, project_id, app, aid, err))) return rc;
    if ((rc = store_exec(tx, NULL, err, "DELETE FROM kb_app_rag WHERE app_id = ? AND model = ?",
                         "ss", aid, model)))
        return rc;
    int64_t now = gt_now_us();
    size_t i;
    json_t *v;
    json_array_foreach(kbs, i, v) {
        const char *name = json_string_value(v);
        if (!name) return gp_err_set(err, GP_EINVALID, "kbs must be names");
        kb_info kb;
        if ((rc = kb_find(tx, tenant_id, name, &kb, err))) {
            if (rc == GP_ENOTFOUND) gp_err_set(err, GP_ENOTFOUND, "KB '%s' not found", name);
            return rc;
        }
        int ok = !kb.project_id[0] || !strcmp(kb.project_id, project_id);
        char kid[RND_ID_LEN];
        snprintf(kid, sizeof kid, "%s", kb.id);
        kb_info_release(&kb);
        if (!ok)
            return gp_err_set(err, GP_EINVALID,
                              "KB '%s' belongs to another project: an application reads only "
                              "tenant-wide KBs and its own project's",
                              name);
        /* PostgreSQL: a KB named twice must not abort the caller's transaction */
#define RAG_INSERT                                                                 \
    "INSERT INTO kb_app_rag (app_id, model, kb_id, pos, k, updated_at)"            \
    " VALUES (?,?,?,?,?,?)"
        int pg = !strcmp(store_tx_backend(tx), "postgres"), changes = 0;
        rc = store_exec(tx, pg ? &changes : NULL, err,
                        store_sql(tx, RAG_INSERT, RAG_INSERT " ON CONFLICT DO NOTHING"), "sssiii",
                        aid, model, kid, (int64_t)i, k, now);
#undef RAG_INSERT
        if (!rc && pg && !changes) rc = GP_ECONFLICT;
        if (rc == GP_ECONFLICT) return gp_err_set(err, GP_EINVALID, "KB '%s' is named twice", name);
        if (rc) return rc;
    }
    if (out) return binding_json(tx, aid, model, out, err);
    return GP_OK;
}

int kb_rag_list(store_tx *tx, const char *project_id, const char *app, json_t **items,
                gp_err *err) {
    char aid[RND_ID_LEN];
    store_stmt *s;
    int rc = app_id(tx, project_id, app, aid, err);
    if (!rc)
        rc = store_query(tx, &s, err,
                         "SELECT DISTINCT model FROM kb_app_rag WHERE app_id = ? ORDER BY model",
                         "s", aid);
    if (rc) return rc;
    json_t *models = json_array();
    while ((rc = store_step(s, err)) > 0) json_array_append_new(models, json_string(store_text(s, 0)));
    store_done(s);
    json_t *arr = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) {
        json_t *b = NULL;
        if (rc >= 0) rc = binding_json(tx, aid, json_string_value(m), &b, err);
        if (b) json_array_append_new(arr, b);
    }
    json_decref(models);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int kb_rag_delete(store_tx *tx, const char *project_id, const char *app, const char *model,
                  gp_err *err) {
    char aid[RND_ID_LEN];
    int n = 0;
    int rc = app_id(tx, project_id, app, aid, err);
    if (!rc)
        rc = store_exec(tx, &n, err, "DELETE FROM kb_app_rag WHERE app_id = ? AND model = ?", "ss",
                        aid, model);
    if (!rc && !n) return gp_err_set(err, GP_ENOTFOUND, "no binding for model '%s'", model);
    return rc;
}

/* A KB a request's app and model search, as kb_rag_lookup reads it (STORE_COLS). */
#define LOOKUP_COLUMNS(X) X(LK_KB_ID, "r.kb_id") X(LK_K, "r.k")
enum { LOOKUP_COLUMNS(STORE_COL_ENUM) LK__N };

int kb_rag_lookup(store_tx *tx, const char *tenant_id, const char *project_id, const char *app,
                  const char *model, json_t **kb_ids, int *k, gp_err *err) {
    store_stmt *s;
    if (!app || !*app) return gp_err_set(err, GP_ENOTFOUND, "no application");
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(LOOKUP_COLUMNS)
                         " FROM kb_app_rag r JOIN apps a ON a.id = r.app_id"
                         " JOIN kbs k ON k.id = r.kb_id"
                         " WHERE a.project_id = ? AND a.name = ? AND r.model = ?"
                         " AND k.tenant_id = ? AND (k.project_id = '' OR k.project_id = ?)"
                         " ORDER BY r.pos",
                         "sssss", project_id, app, model, tenant_id, project_id);
    if (rc) return rc;
    json_t *ids = json_array();
    int64_t kk = KB_DEFAULT_K;
    while ((rc = store_step(s, err)) > 0) {
        json_array_append_new(ids, json_string(store_text(s, LK_KB_ID)));
        kk = store_int(s, LK_K);
    }
    store_done(s);
    if (rc < 0 || !json_array_size(ids)) {
        json_decref(ids);
        return rc < 0 ? rc : gp_err_set(err, GP_ENOTFOUND, "no binding");
    }
    *kb_ids = ids;
    *k = (int)kk;
    return GP_OK;
}
