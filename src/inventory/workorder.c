/*
 * workorder.c - operations tickets on a node or a GPU (repair, replacement).
 *
 * Ids are short and human ("wo-17"), since vendor grants name them.  States:
 * open -> in_progress -> resolved (and back, when a repair did not hold).
 */
#include "inventory.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int state_ok(const char *s) {
    return s && (strcmp(s, "open") == 0 || strcmp(s, "in_progress") == 0 ||
                 strcmp(s, "resolved") == 0);
}

static int text_field(json_t *o, const char *k, size_t max, int required, const char **out,
                      gp_err *err) {
    int rc = jx_get_str(o, k, required, out, err);
    if (rc) return rc;
    if (*out && strlen(*out) > max)
        return gp_err_set(err, GP_EINVALID, "%s longer than %zu bytes", k, max);
    if (required && !**out) return gp_err_set(err, GP_EINVALID, "%s must not be empty", k);
    return GP_OK;
}

/* What inv_wo_create checks before it numbers a new order (STORE_COLS). */
#define WO_CHECK_COLUMNS(X)                                                               \
    X(WK_HAS_NODE, "(SELECT COUNT(*) FROM nodes WHERE name = ?)")                         \
    X(WK_HAS_GPU, "(SELECT COUNT(*) FROM gpus g JOIN nodes n ON n.id = g.node_id"         \
                  "  WHERE g.uuid = ? AND n.name = ?)")                                   \
    X(WK_HAS_USER, "(SELECT COUNT(*) FROM users WHERE name = ?)")                         \
    X(WK_LAST, "(SELECT COALESCE(MAX(CAST(substr(id, 4) AS INTEGER)), 0) FROM work_orders)")
enum { WO_CHECK_COLUMNS(STORE_COL_ENUM) WK__N };

/* Whether a user exists (STORE_COLS). */
#define WO_USER_COLUMNS(X) X(WU_COUNT, "COUNT(*)")
enum { WO_USER_COLUMNS(STORE_COL_ENUM) WU__N };

int inv_wo_create(store_tx *tx, json_t *spec, const char *created_by, char id[32], gp_err *err) {
    static const char *const fields[] = {"node", "gpu", "title", "description", "assignee", NULL};
    const char *node, *gpu, *title, *desc, *assignee;
    store_stmt *s;
    int rc;
    if ((rc = jx_only_fields(spec, fields, err)) ||
        (rc = text_field(spec, "node", 63, 1, &node, err)) ||
        (rc = text_field(spec, "gpu", 90, 0, &gpu, err)) ||
        (rc = text_field(spec, "title", 200, 1, &title, err)) ||
        (rc = text_field(spec, "description", 4000, 0, &desc, err)) ||
        (rc = text_field(spec, "assignee", 63, 0, &assignee, err)))
        return rc;
    /* the node (and GPU, if named) must exist */
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(WO_CHECK_COLUMNS),
                     "ssss", node, gpu ? gpu : "", node, assignee ? assignee : "");
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t has_node = store_int(s, WK_HAS_NODE), has_gpu = store_int(s, WK_HAS_GPU);
    int64_t has_user = store_int(s, WK_HAS_USER), last = store_int(s, WK_LAST);
    store_done(s);
    if (rc < 0) return rc;
    if (!has_node) return gp_err_set(err, GP_EINVALID, "node '%s' does not exist", node);
    if (gpu && *gpu && !has_gpu)
        return gp_err_set(err, GP_EINVALID, "GPU %s is not on node %s", gpu, node);
    if (assignee && *assignee && !has_user)
        return gp_err_set(err, GP_EINVALID, "assignee '%s' does not exist", assignee);
    snprintf(id, 32, "wo-%lld", (long long)last + 1);
    int64_t now = gt_now_us();
    return store_exec(tx, NULL, err,
                      "INSERT INTO work_orders (id, node, gpu_uuid, title, description, state,"
                      " assignee, created_by, created_at, updated_at)"
                      " VALUES (?,?,?,?,?,'open',?,?,?,?)",
                      "sssssssii", id, node, gpu ? gpu : "", title, desc ? desc : "",
                      assignee ? assignee : "", created_by, now, now);
}

int inv_wo_update(store_tx *tx, const char *id, json_t *c, int state_only, gp_err *err) {
    static const char *const all[] = {"state", "assignee", "title", "description", NULL};
    static const char *const only_state[] = {"state", NULL};
    const char *state, *assignee, *title, *desc;
    int rc;
    if ((rc = jx_only_fields(c, state_only ? only_state : all, err)) ||
        (rc = jx_get_str(c, "state", 0, &state, err)) ||
        (rc = text_field(c, "assignee", 63, 0, &assignee, err)) ||
        (rc = text_field(c, "title", 200, 0, &title, err)) ||
        (rc = text_field(c, "description", 4000, 0, &desc, err)))
        return rc;
    if (state && !state_ok(state))
        return gp_err_set(err, GP_EINVALID, "state must be open, in_progress or resolved");
    if (title && !*title) return gp_err_set(err, GP_EINVALID, "title must not be empty");
    if (assignee && *assignee) {
        store_stmt *s;
        if ((rc = store_query(tx, &s, err,
                              "SELECT " STORE_COLS(WO_USER_COLUMNS) " FROM users WHERE name = ?",
                              "s", assignee)))
            return rc;
        rc = store_step(s, err);
        int64_t n = rc > 0 ? store_int(s, WU_COUNT) : 0;
        store_done(s);
        if (rc < 0) return rc;
        if (!n) return gp_err_set(err, GP_EINVALID, "assignee '%s' does not exist", assignee);
    }
    int changes = 0;
    rc = store_exec(tx, &changes, err,
                    "UPDATE work_orders SET state = COALESCE(?, state),"
                    " assignee = COALESCE(?, assignee), title = COALESCE(?, title),"
                    " description = COALESCE(?, description), updated_at = ? WHERE id = ?",
                    "ssssis", state, assignee, title, desc, gt_now_us(), id);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
}

int inv_wo_comment(store_tx *tx, const char *id, const char *author, const char *body,
                   gp_err *err) {
    char cid[RND_ID_LEN];
    if (!body || !*body || strlen(body) > 4000)
        return gp_err_set(err, GP_EINVALID, "comment body must be 1..4000 bytes");
    rnd_id(cid);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO work_order_comments (id, work_order_id, author, body, at)"
                        " SELECT ?, id, ?, ?, ? FROM work_orders WHERE id = ?",
                        "sssis", cid, author, body, gt_now_us(), id);
    if (rc) return rc;
    return store_exec(tx, NULL, err, "UPDATE work_orders SET updated_at = ? WHERE id = ?", "is",
                      gt_now_us(), id);
}

/* A work order's row as wo_json reads it (STORE_COLS). */
#define WO_COLUMNS(X)                                                                     \
    X(WC_ID, "id")                                                                        \
    X(WC_NODE, "node")                                                                    \
    X(WC_GPU, "gpu_uuid")                                                                 \
    X(WC_TITLE, "title")                                                                  \
    X(WC_DESCRIPTION, "description")                                                      \
    X(WC_STATE, "state")                                                                  \
    X(WC_ASSIGNEE, "assignee")                                                            \
    X(WC_CREATED_BY, "created_by")                                                        \
    X(WC_CREATED, "created_at")                                                           \
    X(WC_UPDATED, "updated_at")
enum { WO_COLUMNS(STORE_COL_ENUM) WC__N };
#define WO_COLS STORE_COLS(WO_COLUMNS)

/* A comment's row as inv_wo_get reads it (STORE_COLS). */
#define WO_COMMENT_COLUMNS(X) X(WM_AUTHOR, "author") X(WM_BODY, "body") X(WM_AT, "at")
enum { WO_COMMENT_COLUMNS(STORE_COL_ENUM) WM__N };

static json_t *wo_json(store_stmt *s) {
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "id", store_text(s, WC_ID),
                     "node", store_text(s, WC_NODE), "gpu", store_text(s, WC_GPU), "title",
                     store_text(s, WC_TITLE), "description", store_text(s, WC_DESCRIPTION),
                     "state", store_text(s, WC_STATE), "assignee", store_text(s, WC_ASSIGNEE),
                     "created_by", store_text(s, WC_CREATED_BY), "created_at",
                     jx_time(store_int(s, WC_CREATED)), "updated_at",
                     jx_time(store_int(s, WC_UPDATED)));
}

static int listed(json_t *ids, const char *id) {
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) if (strcmp(json_string_value(v), id) == 0) return 1;
    return 0;
}

int inv_wo_list(store_tx *tx, json_t *ids, const char *assignee, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " WO_COLS " FROM work_orders ORDER BY created_at DESC, id", "");
    if (rc) return rc;
    json_t *arr = json_array();
    int restricted = ids || assignee;
    while ((rc = store_step(s, err)) > 0) {
        if (restricted && !(ids && listed(ids, store_text(s, WC_ID))) &&
            !(assignee && strcmp(assignee, store_text(s, WC_ASSIGNEE)) == 0))
            continue;
        json_array_append_new(arr, wo_json(s));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int inv_wo_get(store_tx *tx, const char *id, json_t **out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " WO_COLS " FROM work_orders WHERE id = ?", "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *o = rc > 0 ? wo_json(s) : NULL;
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    json_t *comments = json_array();
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(WO_COMMENT_COLUMNS) " FROM work_order_comments"
                          " WHERE work_order_id = ? ORDER BY at, id",
                          "s", id))) {
        json_decref(o);
        json_decref(comments);
        return rc;
    }
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(comments, json_pack("{s:s,s:s,s:o}", "author",
                                                  store_text(s, WM_AUTHOR), "body",
                                                  store_text(s, WM_BODY), "at",
                                                  jx_time(store_int(s, WM_AT))));
    store_done(s);
    json_object_set_new(o, "comments", comments);
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return GP_OK;
}
