/*
 * auth.h - identities and bearer tokens: who is calling.
 *
 * Tokens are 256-bit random secrets ("gpt_..."), stored only as BLAKE2b
 * digests and compared in constant time.  auth_authenticate() turns an
 * Authorization header into a principal with its role bindings, ready for
 * authz_check().  A revoked or expired token, or a disabled user, fails.
 *
 * Ownership: auth_authenticate() returns a principal the caller frees with
 * auth_principal_free() (NULL-safe).
 */
#ifndef GP_AUTH_H
#define GP_AUTH_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"
#include "authz.h"

#include <jansson.h>

#define AUTH_TOKEN_PREFIX "gpt_"

typedef struct auth_principal {
    char user_id[RND_ID_LEN];
    char name[64];
    char kind[16];           /* "user" or "service" */
    char token_id[RND_ID_LEN];
    int nbindings;
    authz_binding *bindings; /* tenant_id/project_id strings owned by the principal */
} auth_principal;

/*
 * Authenticate an Authorization header value ("Bearer <token>").  Returns
 * GP_EUNAUTH for a missing, malformed, unknown, revoked or expired token, or
 * a disabled user.  OUT: *out.
 */
int auth_authenticate(store_t *st, const char *authorization, auth_principal **out, gp_err *err);

/*
 * Load the principal of user `user_id` without a token (to execute an
 * approved request as its requester).  GP_EUNAUTH if the user is disabled.
 */
int auth_principal_load(store_t *st, const char *user_id, auth_principal **out, gp_err *err);

/* Free a principal and its bindings. NULL is a no-op. */
void auth_principal_free(auth_principal *p);

/*
 * Extract the token from "Bearer <token>" (scheme case-insensitive, one or
 * more spaces).  Returns a pointer into `header`, or NULL when malformed.
 */
const char *auth_bearer(const char *header);

/*
 * Create a token for `user_id` inside `tx`.  ttl_seconds 0 = no expiry.
 * OUT: token (the secret, shown once) and id.
 */
int auth_token_create(store_tx *tx, const char *user_id, const char *label, int64_t ttl_seconds,
                      char token[RND_SECRET_LEN], char id[RND_ID_LEN], gp_err *err);

/*
 * On an empty store, create the platform administrator "admin" (roles
 * platform-admin and security-admin, global) and a token for it, write the
 * token to `token_path` with mode 0600, and audit it.  *created tells whether
 * anything was done (0 when users already exist).
 */
int auth_bootstrap(store_t *st, const char *token_path, int *created, gp_err *err);

/* ---- users (users.c) ---- */

#define AUTH_PASSWORD_MIN 10
#define AUTH_PASSWORD_MAX 256
#define AUTH_PWHASH_LEN 128       /* an argon2id hash string with its NUL */
#define AUTH_NODE_PREFIX "agent-" /* names of nodes' accounts; nobody else may take one */

/*
 * A user.  Every user has a home: a tenant (home_tenant_id, its name in
 * `home`) or the platform (both ""), fixed at creation; only the home's
 * admins and platform-admins administer it (authz_can_admin_user).  A node
 * account (agent-<node>) belongs to its node alone.
 */
typedef struct auth_user {
    char id[RND_ID_LEN];
    char name[64];
    char kind[16]; /* "user" | "service" */
    int disabled;
    int has_password;
    int64_t created_us;
    char home_tenant_id[RND_ID_LEN]; /* "" = the platform */
    char home[64];                   /* the home tenant's name, "" = the platform */
    int node_account;                /* 1: a node's agent account */
    char password_set_by[RND_ID_LEN]; /* who set its current password; "" itself or nobody */
} auth_user;

/* What auth_user_create() makes. */
typedef struct auth_user_spec {
    const char *name;
    const char *kind;           /* "user" (default) or "service" */
    const char *password;       /* kind "user": the password, or ... */
    const char *password_hash;  /* ... its hash from auth_password_hash() (approvals) */
    const char *home_tenant_id; /* NULL or "": the platform */
    const char *home_name;      /* the home tenant's name (for *out only) */
    const char *created_by;     /* the user id of its creator (NULL: the bootstrap): it knows
                                 * the first password (password_set_by) */
} auth_user_spec;

/*
 * Create a user (kind "user" needs a password or its hash; "service" must
 * not have one).  Validates the name (names starting "agent-" are the nodes'
 * and refused), the password's length or the hash's form; hashes with
 * argon2id.  GP_ECONFLICT when the name is taken.
 */
int auth_user_create(store_tx *tx, const auth_user_spec *spec, auth_user *out, gp_err *err);

/*
 * Check a password's length and hash it (argon2id) into `out`, so that a
 * request kept for later (an approval) holds no password in clear.
 */
int auth_password_hash(const char *password, char out[AUTH_PWHASH_LEN], gp_err *err);

/* 1 if `hash` is an argon2id hash string of the form auth_password_hash() makes. */
int auth_password_hash_valid(const char *hash);

/*
 * Revoke every live token of a user except `keep_token_id` (NULL: keep
 * none).  OUT (optional): *revoked, how many.
 */
int auth_user_revoke_tokens(store_tx *tx, const char *user_id, const char *keep_token_id,
                            int *revoked, gp_err *err);

/* Find a user by id; GP_ENOTFOUND when absent. */
int auth_user_by_id(store_tx *tx, const char *id, auth_user *out, gp_err *err);

/* Find a user by name; GP_ENOTFOUND when absent. */
int auth_user_find(store_tx *tx, const char *name, auth_user *out, gp_err *err);

/* All users ordered by name. OUT: *items (free()), *n. */
int auth_user_list(store_tx *tx, auth_user **items, int *n, gp_err *err);

/* Enable or disable a user (a disabled user's tokens stop working at once). */
int auth_user_set_disabled(store_tx *tx, const char *user_id, int disabled, gp_err *err);

/*
 * Set a new password (argon2id): `password` in clear, or `hash` from
 * auth_password_hash() (an approved request kept only the hash).  `set_by`:
 * the user id of whoever set it, NULL or `user_id` itself for one's own
 * change; recorded as password_set_by, which approvals look at.
 */
int auth_user_set_password(store_tx *tx, const char *user_id, const char *password,
                           const char *hash, const char *set_by, gp_err *err);

/*
 * Check a name and password.  Returns GP_OK with *out filled, or
 * GP_EUNAUTH for an unknown user, a wrong password, a service account or a
 * disabled user (one message for all, and similar timing).
 */
int auth_login_check(store_tx *tx, const char *name, const char *password, auth_user *out,
                     gp_err *err);

/* Live role bindings of a user. OUT: *out (free with auth_bindings_free), *n. */
int auth_user_bindings(store_tx *tx, const char *user_id, authz_binding **out, int *n,
                       gp_err *err);
void auth_bindings_free(authz_binding *b, int n);

/* JSON view of a user (new reference). */
json_t *auth_user_json(const auth_user *u);

/* Tokens of a user, never their secrets: [{id,label,created_at,expires_at,revoked_at}]. */
int auth_token_list(store_tx *tx, const char *user_id, json_t **items, gp_err *err);

/* Revoke token `token_id` of `user_id`; GP_ENOTFOUND if it is not that user's. */
int auth_token_revoke(store_tx *tx, const char *user_id, const char *token_id, gp_err *err);

/* ---- role bindings (members.c) ---- */

/*
 * Grant `role` at a scope.  Tenant and project scopes hold one role per user
 * (a grant replaces the previous one); global scope may hold several.
 * Callers check authz_can_grant() first.  OUT (optional): *replaced, the
 * role that was replaced ("" when none; buffer of 32).
 */
int auth_member_set(store_tx *tx, const char *user_id, authz_role role, authz_scope scope,
                    const char *tenant_id, const char *project_id, const char *granted_by,
                    char replaced[32], gp_err *err);

/*
 * Remove a user's role at a scope (`role` -1: whatever role it holds there).
 * GP_ENOTFOUND when there was none.  OUT (optional): the removed role's name.
 */
int auth_member_remove(store_tx *tx, const char *user_id, int role, authz_scope scope,
                       const char *tenant_id, const char *project_id, char removed[32],
                       gp_err *err);

/* Role held by a user at exactly this scope (-1 when none; global: first one). */
int auth_member_role_at(store_tx *tx, const char *user_id, authz_scope scope,
                        const char *tenant_id, const char *project_id, int *role, gp_err *err);

/* Members at a scope: [{user, role, scope, tenant?, project?, granted_by, created_at}]. */
int auth_member_list(store_tx *tx, authz_scope scope, const char *tenant_id,
                     const char *project_id, json_t **items, gp_err *err);

/* ---- invitations (members.c) ---- */

/*
 * An invitation: a tenant (or one of its projects) asks for a role for a
 * user whose home is elsewhere; the home's admin (a platform-admin for a
 * platform-homed user) accepts or declines it, and accepting makes the
 * binding.  States: pending, accepted, declined, withdrawn, expired; a
 * pending one past expires_us reads as expired.
 */
#define AUTH_INVITATION_TTL_S (7LL * 86400)

typedef struct auth_invitation {
    char id[RND_ID_LEN];
    char tenant_id[RND_ID_LEN], project_id[RND_ID_LEN]; /* project_id "": a tenant role */
    char user_id[RND_ID_LEN], home_tenant_id[RND_ID_LEN]; /* home "": the platform */
    char tenant[64], project[64], user[64], home[64];     /* their names */
    char role[32], invited_by[64], state[16], decided_by[64];
    int64_t created_us, expires_us, decided_us;
} auth_invitation;

/*
 * Invite `user_id` (homed in `home_tenant_id`) to `role` in a tenant or
 * project; an earlier pending invitation for the same user and scope is
 * withdrawn.  ttl_s <= 0: AUTH_INVITATION_TTL_S.  OUT (optional): *out.
 */
int auth_invitation_create(store_tx *tx, const char *tenant_id, const char *project_id,
                           const char *user_id, const char *home_tenant_id, authz_role role,
                           const char *invited_by, int64_t ttl_s, auth_invitation *out,
                           gp_err *err);

/* One invitation; GP_ENOTFOUND. */
int auth_invitation_get(store_tx *tx, const char *id, auth_invitation *out, gp_err *err);

/* Invitations from or to tenant `tenant_id` (NULL: all), newest first. OUT: *items. */
int auth_invitation_list(store_tx *tx, const char *tenant_id, json_t **items, gp_err *err);

/*
 * Move a pending invitation to `state` (accepted, declined, withdrawn: only
 * before its expiry; expired: only after).  GP_ECONFLICT when it is not so.
 */
int auth_invitation_decide(store_tx *tx, const char *id, const char *state,
                           const char *decided_by, gp_err *err);

/* JSON view of an invitation (new reference). */
json_t *auth_invitation_json(const auth_invitation *v);

/* ---- vendor access (vendor.c) ---- */

/*
 * Grant vendor access to `user_id` for the named nodes and work orders (JSON
 * arrays of strings) until now + ttl.  Adds a vendor-scope role binding with
 * the same expiry.  OUT: id.
 */
int auth_vendor_grant(store_tx *tx, const char *user_id, const char *nodes,
                      const char *work_orders, int64_t ttl_s, const char *created_by_id,
                      char id[RND_ID_LEN], gp_err *err);

/* Revoke a grant (and the vendor role when no live grant is left). GP_ENOTFOUND if absent. */
int auth_vendor_revoke(store_tx *tx, const char *id, gp_err *err);

/* Grants, newest first; `user_id` NULL = all. */
int auth_vendor_list(store_tx *tx, const char *user_id, json_t **items, gp_err *err);

/*
 * The nodes and work orders a vendor may reach: the union over its live
 * grants.  OUT: *nodes, *work_orders (new JSON arrays of names).
 */
int auth_vendor_scope(store_tx *tx, const char *user_id, json_t **nodes, json_t **work_orders,
                      gp_err *err);

/* Count the user's role bindings other than vendor ones, and their vendor grants. */
int auth_user_role_counts(store_tx *tx, const char *user_id, int *other_roles, int *vendor_grants,
                          gp_err *err);

/* Every binding of a user: [{role, scope, tenant?, project?, expires_at?}]. */
int auth_member_list_user(store_tx *tx, const char *user_id, json_t **items, gp_err *err);

#endif
