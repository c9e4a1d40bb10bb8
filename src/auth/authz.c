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
    [ACT_AUDIT_EXPORT] = {"audit.export", R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN)},
    [ACT_MEMBER_READ] = {"member.read",
                         R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                             R(ROLE_PROJECT_ADMIN) | R(ROLE_VIEWER)},
    [ACT_MEMBER_MANAGE] = {"member.manage",
                           R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                               R(ROLE_PROJECT_ADMIN)},
    [ACT_USER_CREATE] = {"user.create", R(ROLE_PLATFORM_ADMIN) | R(ROLE_TENANT_ADMIN)},
    [ACT_USER_READ_ALL] = {"user.read_all", R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN)},
    [ACT_POLICY_READ] = {"policy.read", R(ROLE_SECURITY_ADMIN) | R(ROLE_PLATFORM_ADMIN)},
    [ACT_POLICY_CHANGE] = {"policy.change", R(ROLE_SECURITY_ADMIN)},
    [ACT_APPROVAL_DECIDE] = {"approval.decide", R(ROLE_SECURITY_ADMIN)},
    [ACT_APPROVAL_READ_ALL] = {"approval.read_all", R(ROLE_SECURITY_ADMIN)},
    [ACT_VENDOR_MANAGE] = {"vendor.manage", R(ROLE_OPS_ENGINEER)},
    [ACT_NODE_READ] = {"node.read",
                       R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_OPS_ENGINEER)},
    [ACT_NODE_MANAGE] = {"node.manage", R(ROLE_OPS_ENGINEER)},
    [ACT_GPU_MOVE] = {"gpu.move", R(ROLE_OPS_ENGINEER) | R(ROLE_PLATFORM_ADMIN)},
    [ACT_POOL_MANAGE] = {"pool.manage", R(ROLE_PLATFORM_ADMIN)},
    [ACT_CLASS_MANAGE] = {"class.manage", R(ROLE_PLATFORM_ADMIN)},
    [ACT_WORKORDER_MANAGE] = {"workorder.manage", R(ROLE_OPS_ENGINEER)},
    [ACT_JOB_SUBMIT] = {"job.submit",
                        R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER)},
    [ACT_JOB_READ] = {"job.read",
                      R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                          R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) | R(ROLE_VIEWER)},
    [ACT_JOB_MANAGE] = {"job.manage", R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN)},
    [ACT_QUOTA_TENANT_SET] = {"quota.tenant_set", R(ROLE_PLATFORM_ADMIN)},
    [ACT_QUOTA_PROJECT_SET] = {"quota.project_set", R(ROLE_PLATFORM_ADMIN) | R(ROLE_TENANT_ADMIN)},
    [ACT_PRIORITY_MANAGE] = {"priority.manage", R(ROLE_PLATFORM_ADMIN)},
    [ACT_MODEL_READ] = {"model.read", R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) |
                                          R(ROLE_TENANT_ADMIN) | R(ROLE_VIEWER)},
    [ACT_MODEL_MANAGE] = {"model.manage", R(ROLE_PLATFORM_ADMIN) | R(ROLE_TENANT_ADMIN)},
    [ACT_MODEL_PUBLISH] = {"model.publish", R(ROLE_PLATFORM_ADMIN)},
    [ACT_APP_MANAGE] = {"app.manage", R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN)},
    [ACT_KEY_READ] = {"key.read",
                      R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                          R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) | R(ROLE_VIEWER)},
    [ACT_KEY_MANAGE] = {"key.manage",
                        R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER)},
    [ACT_USAGE_READ] = {"usage.read",
                        R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_TENANT_ADMIN) |
                            R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) | R(ROLE_VIEWER)},
    [ACT_RATECARD_MANAGE] = {"ratecard.manage", R(ROLE_PLATFORM_ADMIN)},
    [ACT_KB_READ] = {"kb.read", R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN) |
                                    R(ROLE_PROJECT_USER) | R(ROLE_VIEWER)},
    [ACT_KB_WRITE] = {"kb.write", R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN)},
    [ACT_KB_MANAGE] = {"kb.manage", R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN)},
    [ACT_KB_OPS_READ] = {"kb.ops_read",
                         R(ROLE_PLATFORM_ADMIN) | R(ROLE_SECURITY_ADMIN) | R(ROLE_OPS_ENGINEER)},
    [ACT_KB_OPS_WRITE] = {"kb.ops_write", R(ROLE_OPS_ENGINEER)},
    [ACT_RESERVATION_MANAGE] = {"reservation.manage", R(ROLE_PLATFORM_ADMIN)},
    [ACT_MAINTENANCE_MANAGE] = {"maintenance.manage", R(ROLE_PLATFORM_ADMIN) | R(ROLE_OPS_ENGINEER)},
};

/* Which roles each role may grant or revoke (escalation prevention). */
static const unsigned dominance[ROLE__COUNT] = {
    [ROLE_PLATFORM_ADMIN] = R(ROLE_PLATFORM_ADMIN) | R(ROLE_OPS_ENGINEER) | R(ROLE_TENANT_ADMIN) |
                            R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) | R(ROLE_VIEWER),
    [ROLE_SECURITY_ADMIN] = R(ROLE_SECURITY_ADMIN),
    [ROLE_TENANT_ADMIN] = R(ROLE_TENANT_ADMIN) | R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) |
                          R(ROLE_VIEWER),
    [ROLE_PROJECT_ADMIN] = R(ROLE_PROJECT_ADMIN) | R(ROLE_PROJECT_USER) | R(ROLE_VIEWER),
};

/* Scopes each role may be held at. */
static const unsigned role_scopes[ROLE__COUNT] = {
    [ROLE_PLATFORM_ADMIN] = R(SCOPE_GLOBAL),  [ROLE_SECURITY_ADMIN] = R(SCOPE_GLOBAL),
    [ROLE_OPS_ENGINEER] = R(SCOPE_GLOBAL),    [ROLE_TENANT_ADMIN] = R(SCOPE_TENANT),
    [ROLE_PROJECT_ADMIN] = R(SCOPE_PROJECT),  [ROLE_PROJECT_USER] = R(SCOPE_PROJECT),
    [ROLE_VIEWER] = R(SCOPE_TENANT) | R(SCOPE_PROJECT), [ROLE_VENDOR] = R(SCOPE_VENDOR),
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

int authz_role_fits_scope(authz_role role, authz_scope scope) {
    return role >= 0 && role < ROLE__COUNT && (role_scopes[role] & R(scope)) != 0;
}

int authz_role_dominates(authz_role holder, authz_role role) {
    return holder >= 0 && holder < ROLE__COUNT && (dominance[holder] & R(role)) != 0;
}

authz_decision authz_can_grant(const authz_binding *bs, int n, authz_role role,
                               const authz_target *t, int64_t now) {
    for (int i = 0; i < n; i++) {
        const authz_binding *b = &bs[i];
        if (live(b, now) && authz_role_dominates(b->role, role) && covers(b, t)) return AUTHZ_ALLOW;
    }
    return authz_visible(bs, n, t, now) ? AUTHZ_DENY : AUTHZ_HIDDEN;
}

int authz_holds(const authz_binding *bs, int n, authz_role role, int64_t now) {
    for (int i = 0; i < n; i++)
        if (bs[i].role == role && live(&bs[i], now)) return 1;
    return 0;
}

/* Does the caller hold tenant-admin (live) over tenant `tid`? */
static int admins_tenant(const authz_binding *bs, int n, const char *tid, int64_t now) {
    for (int i = 0; i < n; i++)
        if (bs[i].role == ROLE_TENANT_ADMIN && bs[i].scope == SCOPE_TENANT && live(&bs[i], now) &&
            str_eq(bs[i].tenant_id, tid))
            return 1;
    return 0;
}

int authz_can_admin_user(const authz_binding *caller, int nc, const authz_user *target,
                         int64_t now) {
    if (!target || target->node_account) return 0;
    /* separation of duties: only security-admins administer security-admins */
    if (authz_holds(target->bindings, target->nbindings, ROLE_SECURITY_ADMIN, now))
        return authz_holds(caller, nc, ROLE_SECURITY_ADMIN, now);
    for (int i = 0; i < nc; i++)
        if (caller[i].role == ROLE_PLATFORM_ADMIN && caller[i].scope == SCOPE_GLOBAL &&
            live(&caller[i], now))
            return 1;
    const char *home = target->home_tenant_id;
    if (!home || !*home) return 0; /* platform-homed: platform-admins only */
    /* a holder of a global (or vendor) role is the platform's to administer */
    for (int i = 0; i < target->nbindings; i++) {
        const authz_binding *b = &target->bindings[i];
        if (live(b, now) && b->scope != SCOPE_TENANT && b->scope != SCOPE_PROJECT) return 0;
    }
    return admins_tenant(caller, nc, home, now);
}

int authz_privileged(const authz_binding *bs, int n, int64_t now) {
    for (int i = 0; i < n; i++)
        if ((bs[i].role == ROLE_PLATFORM_ADMIN || bs[i].role == ROLE_SECURITY_ADMIN) &&
            live(&bs[i], now))
            return 1;
    return 0;
}

int authz_may_decide(const authz_party *approver, const authz_party *requester) {
    assert(approver && requester && approver->user_id && requester->user_id);
    if (str_eq(approver->user_id, requester->user_id)) return 0;
    if (approver->password_set_by && str_eq(approver->password_set_by, requester->user_id))
        return 0;
    if (requester->password_set_by && str_eq(requester->password_set_by, approver->user_id))
        return 0;
    return 1;
}

int authz_decides_home(const authz_binding *caller, int nc, const char *home, int64_t now) {
    for (int i = 0; i < nc; i++)
        if (caller[i].role == ROLE_PLATFORM_ADMIN && caller[i].scope == SCOPE_GLOBAL &&
            live(&caller[i], now))
            return 1;
    return home && *home && admins_tenant(caller, nc, home, now);
}

int authz_grant_needs_invitation(const authz_binding *caller, int nc, const char *home,
                                 const char *scope_tenant, int64_t now) {
    if (home && *home && str_eq(home, scope_tenant)) return 0;
    return !authz_decides_home(caller, nc, home, now);
}

int authz_roles_covering(const authz_binding *bs, int n, const authz_target *t, int64_t now,
                         authz_role *out, int cap) {
    assert(!t->project_id || t->tenant_id);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!live(&bs[i], now) || !covers(&bs[i], t)) continue;
        if (k < cap) out[k] = bs[i].role;
        k++;
    }
    return k;
}

authz_decision authz_owner_or(const authz_binding *bs, int n, const char *caller,
                              const char *owner, authz_action manage, const authz_target *t,
                              int64_t now) {
    if (str_eq(caller, owner)) return AUTHZ_ALLOW;
    return authz_check(bs, n, manage, t, now);
}

int authz_tenant_wide(const authz_binding *bs, int n, authz_action action,
                      const char *tenant_id, int64_t now) {
    if (!tenant_id) return 0;
    authz_target tt = {tenant_id, NULL};
    if (authz_check(bs, n, action, &tt, now) == AUTHZ_ALLOW) return 1;
    for (int i = 0; i < n; i++) {
        const authz_binding *b = &bs[i];
        if (b->scope != SCOPE_PROJECT || !str_eq(b->tenant_id, tenant_id) || !b->project_id)
            continue;
        authz_target pt = {tenant_id, b->project_id};
        if (authz_check(b, 1, action, &pt, now) == AUTHZ_ALLOW) return 1;
    }
    return 0;
}
