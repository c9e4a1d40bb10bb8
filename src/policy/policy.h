/*
 * policy.h - the security policy and approvals of sensitive operations.
 *
 * The security policy (kept by security-admins) names the operations that
 * need a second person's approval and the token lifetimes.  A sensitive
 * request is stored as an approval: the exact method, path, query and body,
 * who asked, and an expiry.  A different security-admin approves or rejects
 * it; on approval the stored request is executed once, as the requester, and
 * its outcome recorded on the approval.  An approval leaves `pending` exactly
 * once (a conditional update), so it can never be used twice.
 *
 * This module stores and validates; the API layer (h_approval.c) executes.
 * Ownership: policy_load() fills a struct released with policy_release();
 * approval strings are copied into caller structs or returned as JSON.
 */
#ifndef GP_POLICY_H
#define GP_POLICY_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdint.h>

typedef struct policy {
    json_t *sensitive;             /* array of operation names (owned) */
    int64_t login_token_ttl_s;     /* lifetime of tokens returned by login */
    int64_t max_token_ttl_s;       /* upper bound for any token a user creates */
    int64_t approval_ttl_s;        /* how long a request waits for a decision */
} policy;

/* Operation names a policy may list (the sensitive operations handlers check). */
extern const char *const policy_operations[];

/* Operations that are sensitive whatever the policy lists ("user.credentials":
 * setting the password of, or minting a token for, a holder of platform-admin or
 * security-admin by anyone but itself).  NULL-terminated. */
extern const char *const policy_always_sensitive[];

/* Read the policy. OUT: *out, released with policy_release(). */
int policy_load(store_tx *tx, policy *out, gp_err *err);
void policy_release(policy *p);

/* 1 if `operation` is listed as sensitive, or is always sensitive. */
int policy_is_sensitive(const policy *p, const char *operation);

/*
 * Apply changes from a JSON object with any of: sensitive_operations (array
 * of known names), login_token_ttl_seconds, max_token_ttl_seconds,
 * approval_ttl_seconds (60 .. 10 years).  All-or-nothing.
 */
int policy_update(store_tx *tx, json_t *changes, gp_err *err);

/* JSON view (new reference). */
json_t *policy_json(const policy *p);

/* An approval as stored. */
typedef struct approval {
    char id[RND_ID_LEN];
    char operation[64];
    char requester_id[RND_ID_LEN];
    char requester[64];
    char tenant[64];
    char method[8];
    char *path, *query, *body, *summary, *reason, *result; /* heap (approval_release) */
    char state[12];
    int64_t created_us, expires_us, decided_us;
    char decided_by[64];
    int result_status;
} approval;

void approval_release(approval *a);

/* Store a new pending approval. OUT: id. `query` is a JSON array of [key,value]. */
int approval_create(store_tx *tx, const char *operation, const char *requester_id,
                    const char *tenant, const char *method, const char *path, const char *query,
                    const char *body, const char *summary, int64_t ttl_s, char id[RND_ID_LEN],
                    gp_err *err);

/* Load one approval; GP_ENOTFOUND when absent. */
int approval_get(store_tx *tx, const char *id, approval *out, gp_err *err);

/*
 * Move a pending approval to `state` ("approved", "rejected" or "expired")
 * decided by `decider_id`.  GP_ECONFLICT if it is no longer pending.
 */
int approval_decide(store_tx *tx, const char *id, const char *state, const char *decider_id,
                    const char *reason, gp_err *err);

/* Record the outcome of executing an approved request (state becomes "failed" on status >= 400). */
int approval_set_result(store_tx *tx, const char *id, int status, const char *result,
                        gp_err *err);

/* List approvals, newest first; `requester_id` / `state` NULL = any. */
int approval_list(store_tx *tx, const char *requester_id, const char *state, json_t **items,
                  gp_err *err);

/* JSON view (new reference); the result is included only when `with_result`. */
json_t *approval_json(const approval *a, int with_result);

#endif
