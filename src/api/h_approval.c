/*
 * h_approval.c - deciding sensitive operations, and executing approved ones.
 *
 *   GET  /api/v1/approvals[?state=pending]   security-admins: all; others: their own
 *   GET  /api/v1/approvals/{id}              the requester or a security-admin (with result)
 *   POST /api/v1/approvals/{id}/approve      a security-admin other than the requester
 *   POST /api/v1/approvals/{id}/reject       likewise; {"reason": "..."} optional
 *
 * Approving first moves the approval out of `pending` (a conditional update:
 * only one decision ever wins), then re-runs the stored request through the
 * same route and handler, as the requester with their current roles, and
 * records the outcome.  A crash between the two leaves it approved without a
 * result: never executed twice.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../policy/policy.h"

#include <stdlib.h>
#include <string.h>

void h_approval_list(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    const char *state = api_query(r, "state");
    static const char *const states[] = {"pending", "approved", "rejected", "expired", "failed"};
    int known = !state;
    for (size_t i = 0; state && i < sizeof states / sizeof states[0]; i++)
        known |= strcmp(state, states[i]) == 0;
    if (!known) {
        api_error(r, 400, "invalid_argument",
                  "state must be pending, approved, rejected, expired or failed");
        return;
    }
    authz_target g = {NULL, NULL};
    int all = authz_check(r->who->bindings, r->who->nbindings, ACT_APPROVAL_READ_ALL, &g,
                          gt_now_us()) == AUTHZ_ALLOW;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (approval_list(tx, all ? NULL : r->who->user_id, state, &items, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, api_list(items, NULL));
}

/* Load {id}; 404 unless the caller is its requester or may read all. */
static int load(api_req *r, store_tx *tx, approval *a, int *is_requester) {
    gp_err err = GP_ERR_INIT;
    const char *id = api_param(r, "id");
    api_target(r, "approval", id, NULL, NULL);
    int rc = approval_get(tx, id, a, &err);
    if (rc && rc != GP_ENOTFOUND) {
        api_fail(r, &err);
        return -1;
    }
    authz_target g = {NULL, NULL};
    int all = authz_check(r->who->bindings, r->who->nbindings, ACT_APPROVAL_READ_ALL, &g,
                          gt_now_us()) == AUTHZ_ALLOW;
    *is_requester = !rc && strcmp(a->requester_id, r->who->user_id) == 0;
    if (rc || (!all && !*is_requester)) {
        if (!rc) approval_release(a);
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    api_target(r, NULL, NULL, a->tenant, NULL);
    return 0;
}

void h_approval_get(api_req *r) {
    store_tx *tx;
    approval a;
    int mine;
    if (api_begin(r, STORE_READ, &tx)) return;
    int ok = !load(r, tx, &a, &mine);
    store_rollback(tx);
    if (!ok) return;
    api_reply(r, 200, approval_json(&a, 1));
    approval_release(&a);
}

/* Common to approve and reject: checks, then the decision in its own transaction. */
static int decide(api_req *r, const char *state, approval *a) {
    static const char *const fields[] = {"reason", NULL};
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body = NULL;
    const char *reason = NULL;
    int mine;
    if (api_begin(r, STORE_WRITE, &tx)) return -1;
    if (load(r, tx, a, &mine)) {
        store_rollback(tx);
        return -1;
    }
    if (!api_authorize(r, ACT_APPROVAL_DECIDE, NULL, NULL)) goto fail;
    if (mine) {
        api_error(r, 403, "forbidden", "nobody approves or rejects their own request");
        goto fail;
    }
    /* nor anyone acting as the requester: one whose password it set, or the reverse */
    auth_user ua, ur;
    int rc = auth_user_by_id(tx, r->who->user_id, &ua, &err);
    if (!rc) rc = auth_user_by_id(tx, a->requester_id, &ur, &err);
    if (rc == GP_ENOTFOUND) { /* a requester removed since: nobody acts for it */
        api_error(r, 409, "conflict", "the requester no longer exists");
        goto fail;
    }
    if (rc) {
        api_abort(r, tx, &err);
        goto out;
    }
    authz_party pa = {ua.id, ua.password_set_by}, pr = {ur.id, ur.password_set_by};
    if (!authz_may_decide(&pa, &pr)) {
        api_error(r, 403, "forbidden",
                  "nobody decides a request of a user whose password they set, or who set "
                  "theirs");
        goto fail;
    }
    if (r->body_len) {
        if (api_body(r, &body)) goto fail;
        if (jx_only_fields(body, fields, &err) || jx_get_str(body, "reason", 0, &reason, &err)) {
            api_fail(r, &err);
            goto fail;
        }
    }
    if (a->expires_us <= gt_now_us() && strcmp(a->state, "expired") == 0) {
        /* record the expiry (if nobody has yet), then refuse */
        if (approval_decide(tx, a->id, "expired", r->who->user_id, "expired", &err)) {
            api_abort(r, tx, &err);
            goto out;
        }
        if (api_finish(r, tx, 409, json_pack("{s:s}", "state", "expired"))) goto out;
        api_error(r, 409, "approval_expired", "approval expired before it was decided");
        goto out;
    }
    if (strcmp(a->state, "pending") != 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "approval is already %s", a->state);
        api_error(r, 409, "conflict", msg);
        goto fail;
    }
    if (approval_decide(tx, a->id, state, r->who->user_id, reason, &err)) {
        api_abort(r, tx, &err);
        goto out;
    }
    json_t *sum = json_pack("{s:s,s:s,s:s,s:s}", "approval", a->id, "operation", a->operation,
                            "requester", a->requester, "decision", state);
    if (api_finish(r, tx, 200, sum)) goto out;
    json_decref(body);
    return 0;
fail:
    store_rollback(tx);
out:
    json_decref(body);
    approval_release(a);
    return -1;
}

void h_approval_reject(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    approval a;
    if (decide(r, "rejected", &a)) return;
    approval_release(&a);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (approval_get(tx, api_param(r, "id"), &a, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, approval_json(&a, 1));
    approval_release(&a);
}

void h_approval_approve(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    approval a;
    if (decide(r, "approved", &a)) return;
    approval_release(&a);
    api__exec_approved(r->store, r->cfg, api_param(r, "id"), r->who->name, r->source,
                       r->request_id);
    if (api_begin(r, STORE_READ, &tx)) return;
    if (approval_get(tx, api_param(r, "id"), &a, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, approval_json(&a, 1));
    approval_release(&a);
}

void api__exec_approved(store_t *st, const api_config *cfg, const char *approval_id,
                        const char *approver, const char *source, const char *request_id) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    approval a;
    api_req x;
    memset(&x, 0, sizeof x);
    if (store_begin(st, STORE_READ, &tx, &err)) goto log;
    int rc = approval_get(tx, approval_id, &a, &err);
    store_rollback(tx);
    if (rc) goto log;
    x.store = st;
    x.cfg = cfg;
    x.method = a.method;
    x.path = strdup(a.path);
    x.body = a.body;
    x.body_len = strlen(a.body);
    x.approval_id = approval_id;
    x.start_us = gt_mono_us();
    snprintf(x.request_id, sizeof x.request_id, "%s", request_id);
    snprintf(x.source, sizeof x.source, "%s", source);
    json_t *q = json_loads(a.query, 0, NULL);
    size_t i;
    json_t *kv;
    json_array_foreach(q, i, kv) {
        api_kv *nq = realloc(x.query, sizeof *nq * (size_t)(x.nquery + 1));
        if (!nq) break;
        x.query = nq;
        nq[x.nquery].key = strdup(json_string_value(json_array_get(kv, 0)));
        nq[x.nquery].value = strdup(json_string_value(json_array_get(kv, 1)));
        x.nquery++;
    }
    json_decref(q);
    /* act as the requester, with the roles they hold now, on the approver's word */
    if (auth_principal_load(st, a.requester_id, &x.who, &err) == GP_OK) {
        snprintf(x.on_behalf, sizeof x.on_behalf, "%s", x.who->name);
        snprintf(x.who->name, sizeof x.who->name, "%s", approver);
        api__dispatch(&x);
    } else {
        api_error(&x, 403, "forbidden", "the requester can no longer act");
    }
    /* text results (an export) are stored as a JSON string, so they read back as one */
    json_t *as_text = x.resp ? NULL : json_string(x.resp_text ? x.resp_text : "");
    char *text = jx_dump(x.resp ? x.resp : as_text);
    json_decref(as_text);
    if (store_begin(st, STORE_WRITE, &tx, &err) == GP_OK) {
        if (approval_set_result(tx, approval_id, x.status, text, &err) == GP_OK)
            store_commit(tx, &err);
        else
            store_rollback(tx);
    }
    free(text);
    api__req_release(&x);
    approval_release(&a);
log:
    if (err.code) log_kv(LOG_ERROR, "approved request failed", "approval", approval_id, "detail",
                         err.msg, (char *)NULL);
}
