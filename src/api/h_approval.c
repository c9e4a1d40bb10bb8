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
#include "../policy/policy.h"

#include <stdlib.h>
#include <string.h>

/* SC_SIGNED_IN: security-admins see every approval, anyone else their own requests. */
int h_approval_list(api_ctx *c, gp_err *err) {
    json_t *items;
    const char *state = api_query(c->r, "state");
    static const char *const states[] = {"pending", "approved", "rejected", "expired", "failed"};
    int known = !state;
    for (size_t i = 0; state && i < sizeof states / sizeof states[0]; i++)
        known |= strcmp(state, states[i]) == 0;
    if (!known)
        return gp_err_set(err, GP_EINVALID,
                          "state must be pending, approved, rejected, expired or failed");
    authz_target g = {NULL, NULL};
    int all = authz_check(c->who->bindings, c->who->nbindings, ACT_APPROVAL_READ_ALL, &g,
                          gt_now_us()) == AUTHZ_ALLOW;
    int rc = approval_list(c->tx, all ? NULL : c->who->user_id, state, &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

/* {id}; not found unless the caller is its requester or may read all. */
static int load(api_ctx *c, approval *a, int *is_requester, gp_err *err) {
    const char *id = api_param(c->r, "id");
    api_target(c->r, "approval", id, NULL, NULL);
    int rc = approval_get(c->tx, id, a, err);
    if (rc && rc != GP_ENOTFOUND) return rc;
    authz_target g = {NULL, NULL};
    int all = authz_check(c->who->bindings, c->who->nbindings, ACT_APPROVAL_READ_ALL, &g,
                          gt_now_us()) == AUTHZ_ALLOW;
    *is_requester = !rc && strcmp(a->requester_id, c->who->user_id) == 0;
    if (rc || (!all && !*is_requester)) {
        if (!rc) approval_release(a);
        return gp_err_set(err, GP_ENOTFOUND, "not found");
    }
    api_target(c->r, NULL, NULL, a->tenant, NULL);
    return GP_OK;
}

int h_approval_get(api_ctx *c, gp_err *err) {
    approval a;
    int mine;
    int rc = load(c, &a, &mine, err);
    if (rc) return rc;
    api_reply(c->r, 200, approval_json(&a, 1));
    approval_release(&a);
    return GP_OK;
}

/* May the caller decide `a`: a security-admin (403), never its requester, nor one whose
 * password the requester set or the reverse (403); a requester removed since: 409. */
static int may_decide(api_ctx *c, const approval *a, int mine, gp_err *err) {
    auth_user ua, ur;
    int rc = api_allow(c, ACT_APPROVAL_DECIDE, NULL, NULL, err);
    if (rc) return rc;
    if (mine)
        return gp_err_set(err, GP_EFORBIDDEN, "nobody approves or rejects their own request");
    rc = auth_user_by_id(c->tx, c->who->user_id, &ua, err);
    if (!rc) rc = auth_user_by_id(c->tx, a->requester_id, &ur, err);
    if (rc == GP_ENOTFOUND) /* a requester removed since: nobody acts for it */
        return gp_err_set(err, GP_ECONFLICT, "the requester no longer exists");
    if (rc) return rc;
    authz_party pa = {ua.id, ua.password_set_by}, pr = {ur.id, ur.password_set_by};
    if (!authz_may_decide(&pa, &pr))
        return gp_err_set(err, GP_EFORBIDDEN,
                          "nobody decides a request of a user whose password they set, or who "
                          "set theirs");
    return GP_OK;
}

/* Common to approve and reject: the checks, then the decision (a conditional update: only
 * one decision ever wins).  GP_OK with *decided 0: the approval had expired, which is
 * recorded and answered 409 (approval_expired) in the committing transaction. */
static int decide(api_ctx *c, const char *state, int *decided, gp_err *err) {
    static const char *const fields[] = {"reason", NULL};
    const char *reason = NULL;
    approval a;
    int mine;
    *decided = 0;
    int rc = load(c, &a, &mine, err);
    if (rc) return rc;
    rc = may_decide(c, &a, mine, err);
    if (!rc && c->body) {
        rc = jx_only_fields(c->body, fields, err);
        if (!rc) rc = jx_get_str(c->body, "reason", 0, &reason, err);
    }
    if (rc) goto out;
    if (a.expires_us <= gt_now_us() && strcmp(a.state, "expired") == 0) {
        /* record the expiry (if nobody has yet), then refuse */
        rc = approval_decide(c->tx, a.id, "expired", c->who->user_id, "expired", err);
        if (rc) goto out;
        c->summary = json_pack("{s:s}", "state", "expired");
        api_error(c->r, 409, "approval_expired", "approval expired before it was decided");
        goto out;
    }
    if (strcmp(a.state, "pending") != 0) {
        rc = gp_err_set(err, GP_ECONFLICT, "approval is already %s", a.state);
        goto out;
    }
    rc = approval_decide(c->tx, a.id, state, c->who->user_id, reason, err);
    if (rc) goto out;
    c->summary = json_pack("{s:s,s:s,s:s,s:s}", "approval", a.id, "operation", a.operation,
                           "requester", a.requester, "decision", state);
    *decided = 1;
out:
    approval_release(&a);
    return rc;
}

int h_approval_reject(api_ctx *c, gp_err *err) {
    approval a;
    int decided;
    int rc = decide(c, "rejected", &decided, err);
    if (rc || !decided) return rc;
    if ((rc = approval_get(c->tx, api_param(c->r, "id"), &a, err))) return rc;
    api_reply(c->r, 200, approval_json(&a, 1));
    approval_release(&a);
    return GP_OK;
}

/* Once the decision has committed: run the request as its requester, through dispatch, and
 * answer the approval with its result. */
static int approve_after(api_ctx *c, gp_err *err) {
    api_req *r = c->r;
    json_t *out;
    int rc = api__exec_approved(r->store, r->cfg, api_param(r, "id"), r->who->name, r->source,
                                r->request_id, &out, err);
    if (!rc) api_reply(r, 200, out);
    return rc;
}

int h_approval_approve(api_ctx *c, gp_err *err) {
    int decided;
    int rc = decide(c, "approved", &decided, err);
    if (rc || !decided) return rc;
    /* the decision's answer, for its audit event; the execution's follows (approve_after) */
    api_reply(c->r, 200, json_object());
    c->after = approve_after;
    return GP_OK;
}
