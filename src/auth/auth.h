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

#endif
