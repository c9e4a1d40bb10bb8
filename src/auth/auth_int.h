/*
 * auth_int.h - internals shared by src/auth/ files only.
 */
#ifndef GP_AUTH_INT_H
#define GP_AUTH_INT_H

#include "auth.h"

/* Append the user's role bindings (p->user_id) to p->bindings. */
int auth__load_bindings(store_tx *tx, auth_principal *p, gp_err *err);

/*
 * A user's vendor grants, how many and how many still live, as signing in and logging in
 * read them (STORE_COLS; the parameter: now):
 *   "SELECT " STORE_COLS(GRANT_LIVE_COLUMNS) " FROM vendor_grants WHERE user_id = ?"
 * A vendor account lives only as long as one of its grants.
 */
#define GRANT_LIVE_COLUMNS(X)                                                             \
    X(GL_GRANTS, "COUNT(*)")                                                              \
    X(GL_LIVE, "COALESCE(SUM(CASE WHEN revoked_at IS NULL AND expires_at > ?"             \
               " THEN 1 ELSE 0 END), 0)")
enum { GRANT_LIVE_COLUMNS(STORE_COL_ENUM) GL__N };

#endif
