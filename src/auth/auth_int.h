/*
 * auth_int.h - internals shared by src/auth/ files only.
 */
#ifndef GP_AUTH_INT_H
#define GP_AUTH_INT_H

#include "auth.h"

/* Append the user's role bindings (p->user_id) to p->bindings. */
int auth__load_bindings(store_tx *tx, auth_principal *p, gp_err *err);

#endif
