/*
 * h_policy.c - the security policy: GET (security/platform-admin), PUT
 * (security-admin; the sensitive operation policy.change).  See policy.h for
 * the fields.  Declared routes (routes.c): dispatch authorises and audits.
 */
#include "api_int.h"

#include "../policy/policy.h"

int h_policy_get(api_ctx *c, gp_err *err) {
    policy p;
    api_target(c->r, "policy", "security", NULL, NULL);
    int rc = policy_load(c->tx, &p, err);
    if (rc) return rc;
    api_reply(c->r, 200, policy_json(&p));
    policy_release(&p);
    return GP_OK;
}

/* A sensitive route: dispatch runs this first as a dry run (validation, the approval's
 * summary), then files the approval or runs it for real. */
int h_policy_put(api_ctx *c, gp_err *err) {
    policy p;
    api_target(c->r, "policy", "security", NULL, NULL);
    int rc = policy_update(c->tx, c->body, err);
    if (!rc) rc = policy_load(c->tx, &p, err);
    if (rc) return rc;
    c->summary = json_incref(c->body);
    api_reply(c->r, 200, policy_json(&p));
    policy_release(&p);
    return GP_OK;
}
