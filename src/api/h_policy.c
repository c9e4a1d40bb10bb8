/*
 * h_policy.c - the security policy: GET (security/platform-admin), PUT
 * (security-admin).  See policy.h for the fields.
 */
#include "api_int.h"

#include "../policy/policy.h"

void h_policy_get(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    policy p;
    api_target(r, "policy", "security", NULL, NULL);
    if (!api_authorize(r, ACT_POLICY_READ, NULL, NULL)) return;
    if (api_begin(r, STORE_READ, &tx)) return;
    if (policy_load(tx, &p, &err)) {
        api_abort(r, tx, &err);
        return;
    }
    store_rollback(tx);
    api_reply(r, 200, policy_json(&p));
    policy_release(&p);
}

void h_policy_put(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *body;
    policy p;
    api_target(r, "policy", "security", NULL, NULL);
    if (!api_authorize(r, ACT_POLICY_CHANGE, NULL, NULL)) return;
    if (api_body(r, &body)) return;
    /* validate first (a dry run), so an approval is only ever for a valid change */
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    int bad = policy_update(tx, body, &err);
    store_rollback(tx);
    if (bad) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    int pending = api_needs_approval(r, "policy.change", NULL, body);
    if (pending) {
        json_decref(body);
        return;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (policy_update(tx, body, &err) || policy_load(tx, &p, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 200, body)) api_reply(r, 200, policy_json(&p));
    policy_release(&p);
}
