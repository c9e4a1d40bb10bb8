/*
 * tenancy.h - tenants and the projects inside them.
 *
 * A tenant is the isolation and ownership boundary; a project is the
 * working and accounting unit inside exactly one tenant.  Both are named by
 * immutable `name`s ([a-z0-9-], unique in their parent) and carry opaque ids.
 * This module validates and stores them; it does not authorise (callers run
 * authz_check() first) and does not audit (callers append the event in the
 * same transaction).
 *
 * Ownership: results fill caller-owned structs; lists are heap arrays the
 * caller free()s.
 */
#ifndef GP_TENANCY_H
#define GP_TENANCY_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdint.h>

#define TENANCY_DISPLAY_MAX 200

typedef struct tenancy_tenant {
    char id[RND_ID_LEN];
    char name[64];
    char display_name[TENANCY_DISPLAY_MAX + 1];
    int64_t created_us;
} tenancy_tenant;

typedef struct tenancy_project {
    char id[RND_ID_LEN];
    char tenant_id[RND_ID_LEN];
    char tenant[64];
    char name[64];
    char cls[16]; /* production | development | research */
    int64_t created_us;
} tenancy_project;

/* 1 if `cls` is a known project class. */
int tenancy_class_valid(const char *cls);

/* Create a tenant (validates name/display). GP_ECONFLICT when the name is taken. OUT: *out. */
int tenancy_tenant_create(store_tx *tx, const char *name, const char *display_name,
                          tenancy_tenant *out, gp_err *err);

/* Find a tenant by name; GP_ENOTFOUND when absent. */
int tenancy_tenant_find(store_tx *tx, const char *name, tenancy_tenant *out, gp_err *err);

/* Find a tenant by id; GP_ENOTFOUND when absent. */
int tenancy_tenant_get(store_tx *tx, const char *id, tenancy_tenant *out, gp_err *err);

/* All tenants ordered by name. OUT: *items (free()), *n. */
int tenancy_tenant_list(store_tx *tx, tenancy_tenant **items, int *n, gp_err *err);

/* Create a project in tenant `t`. GP_ECONFLICT when the name is taken in that tenant. */
int tenancy_project_create(store_tx *tx, const tenancy_tenant *t, const char *name,
                           const char *cls, tenancy_project *out, gp_err *err);

/* Find project `name` of tenant `t`; GP_ENOTFOUND when absent. */
int tenancy_project_find(store_tx *tx, const tenancy_tenant *t, const char *name,
                         tenancy_project *out, gp_err *err);

/* Projects of tenant `t` ordered by name. OUT: *items (free()), *n. */
int tenancy_project_list(store_tx *tx, const tenancy_tenant *t, tenancy_project **items, int *n,
                         gp_err *err);

/* JSON views (new references). */
json_t *tenancy_tenant_json(const tenancy_tenant *t);
json_t *tenancy_project_json(const tenancy_project *p);

#endif
