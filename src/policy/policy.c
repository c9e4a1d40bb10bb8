/*
 * policy.c - security policy values and the approvals table (see policy.h).
 */
#include "policy.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const policy_operations[] = {
    "tenant.quota.raise", "member.grant_global", "member.grant", "vendor.create",
    "priority_class.change", "audit.export", "policy.change", "tenant.create", "user.create",
    NULL,
};

/* Sensitive whatever the policy lists: no single identity may take over an administrator
 * (docs/security.md "Who administers the administrators"). */
const char *const policy_always_sensitive[] = {"user.credentials", NULL};

static int known_op(const char *op) {
    for (const char *const *o = policy_operations; *o; o++)
        if (strcmp(*o, op) == 0) return 1;
    return 0;
}

/* A setting of the security policy (STORE_COLS). */
#define SETTING_COLUMNS(X) X(SP_KEY, "key") X(SP_VALUE, "value")
enum { SETTING_COLUMNS(STORE_COL_ENUM) SP__N };

int policy_load(store_tx *tx, policy *out, gp_err *err) {
    store_stmt *s;
    memset(out, 0, sizeof *out);
    out->login_token_ttl_s = 43200;
    out->max_token_ttl_s = 7776000;
    out->approval_ttl_s = 86400;
    int rc = store_query(tx, &s, err, "SELECT " STORE_COLS(SETTING_COLUMNS) " FROM security_policy",
                         "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        const char *k = store_text(s, SP_KEY), *v = store_text(s, SP_VALUE);
        if (strcmp(k, "sensitive_operations") == 0) {
            json_decref(out->sensitive);
            out->sensitive = json_loads(v, 0, NULL);
        } else if (strcmp(k, "login_token_ttl_seconds") == 0) {
            out->login_token_ttl_s = strtoll(v, NULL, 10);
        } else if (strcmp(k, "max_token_ttl_seconds") == 0) {
            out->max_token_ttl_s = strtoll(v, NULL, 10);
        } else if (strcmp(k, "approval_ttl_seconds") == 0) {
            out->approval_ttl_s = strtoll(v, NULL, 10);
        }
    }
    store_done(s);
    if (!json_is_array(out->sensitive)) {
        json_decref(out->sensitive);
        out->sensitive = json_array();
    }
    return rc < 0 ? rc : GP_OK;
}

void policy_release(policy *p) {
    if (!p) return;
    json_decref(p->sensitive);
    p->sensitive = NULL;
}

int policy_is_sensitive(const policy *p, const char *operation) {
    size_t i;
    json_t *v;
    for (const char *const *o = policy_always_sensitive; *o; o++)
        if (strcmp(*o, operation) == 0) return 1;
    json_array_foreach(p->sensitive, i, v) if (json_is_string(v) &&
                                               strcmp(json_string_value(v), operation) == 0) return 1;
    return 0;
}

static int set_kv(store_tx *tx, const char *k, const char *v, gp_err *err) {
    return store_exec(tx, NULL, err,
                      "INSERT INTO security_policy (key, value) VALUES (?, ?)"
                      " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                      "ss", k, v);
}

int policy_update(store_tx *tx, json_t *c, gp_err *err) {
    static const char *const fields[] = {"sensitive_operations", "login_token_ttl_seconds",
                                         "max_token_ttl_seconds", "approval_ttl_seconds", NULL};
    int rc = jx_only_fields(c, fields, err);
    if (rc) return rc;
    json_t *ops = json_object_get(c, "sensitive_operations");
    if (ops) {
        size_t i;
        json_t *v;
        if (!json_is_array(ops))
            return gp_err_set(err, GP_EINVALID, "sensitive_operations must be an array");
        json_array_foreach(ops, i, v) {
            if (!json_is_string(v) || !known_op(json_string_value(v)))
                return gp_err_set(err, GP_EINVALID,
                                  "unknown operation in sensitive_operations (known: "
                                  "tenant.quota.raise, member.grant_global, member.grant, "
                                  "vendor.create, priority_class.change, audit.export, "
                                  "policy.change, tenant.create, user.create)");
        }
        char *text = jx_dump(ops);
        rc = text ? set_kv(tx, "sensitive_operations", text, err) : gp_err_set(err, GP_ENOMEM, NULL);
        free(text);
        if (rc) return rc;
    }
    for (int f = 1; fields[f]; f++) {
        int64_t v;
        int present;
        if ((rc = jx_get_int(c, fields[f], 0, &v, &present, err))) return rc;
        if (!present) continue;
        if (v < 60 || v > 315360000)
            return gp_err_set(err, GP_EINVALID, "%s must be between 60 and 315360000", fields[f]);
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)v);
        if ((rc = set_kv(tx, fields[f], buf, err))) return rc;
    }
    return GP_OK;
}

json_t *policy_json(const policy *p) {
    json_t *always = json_array();
    for (const char *const *o = policy_always_sensitive; *o; o++)
        json_array_append_new(always, json_string(*o));
    return json_pack("{s:O,s:o,s:I,s:I,s:I}", "sensitive_operations", p->sensitive,
                     "always_sensitive", always, "login_token_ttl_seconds",
                     (json_int_t)p->login_token_ttl_s, "max_token_ttl_seconds",
                     (json_int_t)p->max_token_ttl_s, "approval_ttl_seconds",
                     (json_int_t)p->approval_ttl_s);
}

/* ---- approvals ---- */

/* An approval's row as approval_from_row reads it (STORE_COLS). */
#define APPROVAL_COLUMNS(X)                                                               \
    X(AC_ID, "a.id")                                                                      \
    X(AC_OPERATION, "a.operation")                                                        \
    X(AC_REQUESTER_ID, "a.requester_id")                                                  \
    X(AC_REQUESTER, "u.name")                                                             \
    X(AC_TENANT, "a.tenant")                                                              \
    X(AC_METHOD, "a.method")                                                              \
    X(AC_PATH, "a.path")                                                                  \
    X(AC_QUERY, "a.query")                                                                \
    X(AC_BODY, "a.body")                                                                  \
    X(AC_SUMMARY, "a.summary")                                                            \
    X(AC_STATE, "a.state")                                                                \
    X(AC_CREATED, "a.created_at")                                                         \
    X(AC_EXPIRES, "a.expires_at")                                                         \
    X(AC_DECIDED_BY, "COALESCE(d.name, '')")                                              \
    X(AC_DECIDED, "COALESCE(a.decided_at, 0)")                                            \
    X(AC_REASON, "a.reason")                                                              \
    X(AC_RESULT_STATUS, "COALESCE(a.result_status, 0)")                                   \
    X(AC_RESULT, "a.result")
enum { APPROVAL_COLUMNS(STORE_COL_ENUM) AC__N };
#define APPROVAL_COLS STORE_COLS(APPROVAL_COLUMNS)
#define APPROVAL_FROM                                                                         \
    " FROM approvals a JOIN users u ON u.id = a.requester_id"                                 \
    " LEFT JOIN users d ON d.id = a.decided_by"

static char *dup0(const char *s) { return strdup(s ? s : ""); }

static void approval_from_row(store_stmt *s, approval *a) {
    memset(a, 0, sizeof *a);
    snprintf(a->id, sizeof a->id, "%s", store_text(s, AC_ID));
    snprintf(a->operation, sizeof a->operation, "%s", store_text(s, AC_OPERATION));
    snprintf(a->requester_id, sizeof a->requester_id, "%s", store_text(s, AC_REQUESTER_ID));
    snprintf(a->requester, sizeof a->requester, "%s", store_text(s, AC_REQUESTER));
    snprintf(a->tenant, sizeof a->tenant, "%s", store_text(s, AC_TENANT));
    snprintf(a->method, sizeof a->method, "%s", store_text(s, AC_METHOD));
    a->path = dup0(store_text(s, AC_PATH));
    a->query = dup0(store_text(s, AC_QUERY));
    a->body = dup0(store_text(s, AC_BODY));
    a->summary = dup0(store_text(s, AC_SUMMARY));
    snprintf(a->state, sizeof a->state, "%s", store_text(s, AC_STATE));
    a->created_us = store_int(s, AC_CREATED);
    a->expires_us = store_int(s, AC_EXPIRES);
    snprintf(a->decided_by, sizeof a->decided_by, "%s", store_text(s, AC_DECIDED_BY));
    a->decided_us = store_int(s, AC_DECIDED);
    a->reason = dup0(store_text(s, AC_REASON));
    a->result_status = (int)store_int(s, AC_RESULT_STATUS);
    a->result = store_text(s, AC_RESULT) ? strdup(store_text(s, AC_RESULT)) : NULL;
    /* a pending request past its expiry is expired, whether or not anyone looked */
    if (strcmp(a->state, "pending") == 0 && a->expires_us <= gt_now_us())
        snprintf(a->state, sizeof a->state, "expired");
}

void approval_release(approval *a) {
    if (!a) return;
    free(a->path);
    free(a->query);
    free(a->body);
    free(a->summary);
    free(a->reason);
    free(a->result);
    a->path = a->query = a->body = a->summary = a->reason = a->result = NULL;
}

int approval_create(store_tx *tx, const char *operation, const char *requester_id,
                    const char *tenant, const char *method, const char *path, const char *query,
                    const char *body, const char *summary, int64_t ttl_s, char id[RND_ID_LEN],
                    gp_err *err) {
    int64_t now = gt_now_us();
    rnd_id(id);
    return store_exec(tx, NULL, err,
                      "INSERT INTO approvals (id, operation, requester_id, tenant, method, path,"
                      " query, body, summary, state, created_at, expires_at)"
                      " VALUES (?,?,?,?,?,?,?,?,?,'pending',?,?)",
                      "sssssssssii", id, operation, requester_id, tenant ? tenant : "", method,
                      path, query ? query : "[]", body ? body : "", summary ? summary : "{}", now,
                      now + ttl_s * 1000000);
}

int approval_get(store_tx *tx, const char *id, approval *out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " APPROVAL_COLS APPROVAL_FROM " WHERE a.id = ?", "s",
                         id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) approval_from_row(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "approval not found");
    return rc < 0 ? rc : GP_OK;
}

int approval_decide(store_tx *tx, const char *id, const char *state, const char *decider_id,
                    const char *reason, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE approvals SET state = ?, decided_by = ?, decided_at = ?,"
                        " reason = ? WHERE id = ? AND state = 'pending'",
                        "ssiss", state, decider_id, gt_now_us(), reason ? reason : "", id);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ECONFLICT, "approval is no longer pending");
}

int approval_set_result(store_tx *tx, const char *id, int status, const char *result,
                        gp_err *err) {
    return store_exec(tx, NULL, err,
                      "UPDATE approvals SET result_status = ?, result = ?,"
                      " state = CASE WHEN ? >= 400 THEN 'failed' ELSE state END WHERE id = ?",
                      "isis", (int64_t)status, result, (int64_t)status, id);
}

int approval_list(store_tx *tx, const char *requester_id, const char *state, json_t **items,
                  gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " APPROVAL_COLS APPROVAL_FROM
                         " WHERE (? IS NULL OR a.requester_id = ?) AND (? IS NULL OR"
                         " (CASE WHEN a.state = 'pending' AND a.expires_at <= ? THEN 'expired'"
                         "  ELSE a.state END) = ?)"
                         " ORDER BY a.created_at DESC, a.id LIMIT 1000",
                         "sssis", requester_id, requester_id, state, gt_now_us(), state);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        approval a;
        approval_from_row(s, &a);
        json_array_append_new(arr, approval_json(&a, 0));
        approval_release(&a);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

json_t *approval_json(const approval *a, int with_result) {
    char c[GT_RFC3339_LEN], e[GT_RFC3339_LEN], d[GT_RFC3339_LEN];
    gt_format_us(a->created_us, c, sizeof c);
    gt_format_us(a->expires_us, e, sizeof e);
    json_t *summary = json_loads(a->summary ? a->summary : "{}", 0, NULL);
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:{s:s,s:s},s:o,s:s,s:s}", "id", a->id, "operation",
                          a->operation, "requester", a->requester, "state", a->state, "request",
                          "method", a->method, "path", a->path ? a->path : "", "summary",
                          summary ? summary : json_object(), "created_at", c, "expires_at", e);
    if (a->tenant[0]) json_object_set_new(o, "tenant", json_string(a->tenant));
    if (a->decided_us) {
        gt_format_us(a->decided_us, d, sizeof d);
        json_object_set_new(o, "decided_by", json_string(a->decided_by));
        json_object_set_new(o, "decided_at", json_string(d));
        json_object_set_new(o, "reason", json_string(a->reason ? a->reason : ""));
    }
    if (a->result_status) json_object_set_new(o, "result_status", json_integer(a->result_status));
    if (with_result && a->result) {
        json_t *r = json_loads(a->result, JSON_DECODE_ANY, NULL);
        json_object_set_new(o, "result", r ? r : json_string(a->result));
    }
    return o;
}
