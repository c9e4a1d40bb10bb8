/*
 * kb.c - knowledge bases: the rules a KB's creation and change follow,
 * pure (structs in, decisions out; no store).  The rows they become are
 * written by kb_store.c; chunking (chunk.c), text extraction (extract.c)
 * and the retrieval prompt (rag.c) are pure too.
 */
#include "kb.h"

#include "../core/jsonx.h"

#include <string.h>

void kb_info_release(kb_info *kb) {
    if (!kb) return;
    json_decref(kb->work_orders);
    kb->work_orders = NULL;
}

/* Validate a work-order list: an array of at most 64 short strings. OUT: *out (borrowed) or NULL. */
static int wo_arg(json_t *spec, json_t **out, gp_err *err) {
    json_t *v = json_object_get(spec, "work_orders");
    *out = NULL;
    if (!v || json_is_null(v)) return GP_OK;
    if (!json_is_array(v) || json_array_size(v) > 64)
        return gp_err_set(err, GP_EINVALID, "work_orders must be an array of at most 64 ids");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        const char *s = json_string_value(e);
        if (!s || !*s || strlen(s) > 63)
            return gp_err_set(err, GP_EINVALID, "work_orders must hold work order ids");
    }
    *out = v;
    return GP_OK;
}

static int desc_arg(json_t *spec, const char **out, gp_err *err) {
    int rc = jx_get_str(spec, "description", 0, out, err);
    if (!rc && *out && strlen(*out) > 1000)
        return gp_err_set(err, GP_EINVALID, "description is at most 1000 characters");
    return rc;
}

int kb_new_check(const char *tenant_id, const char *project_id, json_t *spec, kb_new *out,
                 gp_err *err) {
    static const char *const fields[] = {"name", "description", "scope", "project", "work_orders",
                                         NULL};
    const char *name, *desc = NULL, *scope = NULL;
    json_t *wos = NULL;
    memset(out, 0, sizeof *out);
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_str(spec, "name", 1, &name, err);
    if (!rc && !gp_name_valid(name))
        rc = gp_err_set(err, GP_EINVALID,
                        "name must be 1-63 lower-case letters, digits or '-' (not at the ends)");
    if (!rc) rc = desc_arg(spec, &desc, err);
    if (!rc) rc = jx_get_str(spec, "scope", 0, &scope, err);
    if (!rc) rc = wo_arg(spec, &wos, err);
    if (rc) return rc;
    const char *want = !tenant_id ? "ops" : project_id ? "project" : "tenant";
    if (scope && strcmp(scope, want) != 0) {
        if (strcmp(scope, "tenant") && strcmp(scope, "project") && strcmp(scope, "ops"))
            return gp_err_set(err, GP_EINVALID, "scope must be tenant, project or ops");
        if (!strcmp(scope, "project"))
            return gp_err_set(err, GP_EINVALID, "a project KB needs \"project\"");
        if (!strcmp(scope, "ops"))
            return gp_err_set(err, GP_EINVALID, "ops KBs are made under /api/v1/ops/kbs");
        return gp_err_set(err, GP_EINVALID, "scope '%s' does not fit here (this one is %s)", scope,
                          want);
    }
    if (wos && tenant_id)
        return gp_err_set(err, GP_EINVALID, "only ops KBs name work orders");
    if (!tenant_id && json_object_get(spec, "project"))
        return gp_err_set(err, GP_EINVALID, "an ops KB belongs to no project");
    out->tenant_id = tenant_id;
    out->project_id = project_id;
    out->scope = want;
    out->name = name;
    out->description = desc ? desc : "";
    out->work_orders = wos;
    return GP_OK;
}

int kb_change_check(const kb_info *kb, json_t *spec, kb_change *out, gp_err *err) {
    static const char *const fields[] = {"description", "work_orders", NULL};
    memset(out, 0, sizeof *out);
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = desc_arg(spec, &out->description, err);
    if (!rc) rc = wo_arg(spec, &out->work_orders, err);
    if (rc) return rc;
    if (out->work_orders && strcmp(kb->scope, "ops") != 0)
        return gp_err_set(err, GP_EINVALID, "only ops KBs name work orders");
    return GP_OK;
}
