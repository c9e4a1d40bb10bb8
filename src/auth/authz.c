/*
 * authz.c - the permission matrix and the pure check (see authz.h).
 */
#include "authz.h"

#include <assert.h>
#include <string.h>

#define R(x) (1u << (x))

static const char *const role_names[ROLE__COUNT] = {
    "platform-admin", "security-admin", "ops-engineer", "tenant-admin",
    "project-admin",  "project-user",   "viewer",       "vendor",
};

static const char *const scope_names[] = {"global", "tenant", "project", "vendor"};

/* The matrix: which roles may perform each action (scope coverage checked separately). */
static const struct {
    const char *name;
    unsigned roles;
} matrix[ACT__COUNT] = {
    [ACT_TENANT_CREATE] = {"tenant.create", R(ROLE_PLATFORM_ADMIN)},
    [ACT_TENANT_READ] = {"tenant.read",
                         R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                             R(ROLE_VIEWER)},
    [ACT_PROJECT_CREATE] = {"project.create", R(ROLE_PLATFORM_ADMIN) | R(ROLE_TENANT_ADMIN)},
    [ACT_PROJECT_READ] = {"project.read",
                          R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                              R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) | R(ROLE_VIEWER)},
    [ACT_AUDIT_READ_ALL] = {"audit.read", R(ROLE_SECURITY_ADMIN)},
    [ACT_AUDIT_READ_TENANT] = {"audit.read_tenant", R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN)},
    [ACT_AUDIT_VERIFY] = {"audit.verify", R(ROLE_SECURITY_ADMIN)},
};

/* Global roles whose scope includes seeing tenant data. */
static const unsigned global_sees_tenants = R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN);

static int str_eq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static int live(const authz_binding *b, int64_t now) {
    return b->expires_us == 0 || b->expires_us > now;
}

/* Does binding b cover target t for the purpose of acting? */
static int covers(const authz_binding *b, const authz_target *t) {
    switch (b->scope) {
    case SCOPE_GLOBAL:
        return 1;
    case SCOPE_TENANT:
        return t->tenant_id && str_eq(b->tenant_id, t->tenant_id);
    case SCOPE_PROJECT:
        return t->project_id && str_eq(b->project_id, t->project_id) &&
               str_eq(b->tenant_id, t->tenant_id);
    case SCOPE_VENDOR:
        return 0;
    }
    return 0;
}

int authz_visible(const authz_binding *bs, int n, const authz_target *t, int64_t now) {
    if (!t->tenant_id) return 1; /* global targets: existence is not secret */
    for (int i = 0; i < n; i++) {
        const authz_binding *b = &bs[i];
        if (!live(b, now)) continue;
        if (b->scope == SCOPE_GLOBAL && (R(b->role) & global_sees_tenants)) return 1;
        if (b->scope == SCOPE_TENANT && str_eq(b->tenant_id, t->tenant_id)) return 1;
        if (b->scope == SCOPE_PROJECT && str_eq(b->tenant_id, t->tenant_id) &&
            (!t->project_id || str_eq(b->project_id, t->project_id)))
            return 1;
    }
    return 0;
}

authz_decision authz_check(const authz_binding *bs, int n, authz_action action,
                           const authz_target *t, int64_t now) {
    assert(action >= 0 && action < ACT__COUNT);
    assert(!t->project_id || t->tenant_id);
    for (int i = 0; i < n; i++) {
        const authz_binding *b = &bs[i];
        if (!live(b, now)) continue;
        if ((matrix[action].roles & R(b->role)) && covers(b, t)) return AUTHZ_ALLOW;
    }
    return authz_visible(bs, n, t, now) ? AUTHZ_DENY : AUTHZ_HIDDEN;
}

const char *authz_role_name(authz_role r) {
    return (r >= 0 && r < ROLE__COUNT) ? role_names[r] : "unknown";
}

int authz_role_parse(const char *name) {
    for (int i = 0; i < ROLE__COUNT; i++)
        if (strcmp(name, role_names[i]) == 0) return i;
    return -1;
}

const char *authz_scope_name(authz_scope s) {
    return (s >= SCOPE_GLOBAL && s <= SCOPE_VENDOR) ? scope_names[s] : "unknown";
}

int authz_scope_parse(const char *name) {
    for (int i = 0; i <= SCOPE_VENDOR; i++)
        if (strcmp(name, scope_names[i]) == 0) return i;
    return -1;
}

const char *authz_action_name(authz_action a) {
    return (a >= 0 && a < ACT__COUNT) ? matrix[a].name : "unknown";
}

int authz_role_allows(authz_role role, authz_action action) {
    return (matrix[action].roles & R(role)) != 0;
}
