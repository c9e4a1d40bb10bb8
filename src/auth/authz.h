/*
 * authz.h - the role x scope x action check (pure: structs in, decision out).
 *
 * The permission matrix is data, in one table in authz.c (and printed in
 * docs/roles.md); authz_check() is the one function every handler calls
 * before it reads anything.  A decision has three outcomes, because the API
 * must never reveal objects outside the caller's scopes:
 *   AUTHZ_ALLOW   - go ahead;
 *   AUTHZ_DENY    - the caller can see the target but the role does not allow
 *                   the action (HTTP 403);
 *   AUTHZ_HIDDEN  - the target lies outside every scope the caller can see
 *                   (HTTP 404, exactly as if it did not exist).
 *
 * Scope rules: a global binding covers everything; a tenant binding covers
 * that tenant and its projects; a project binding covers that project, and
 * makes its tenant visible (not readable).  Expired bindings count for nothing.
 */
#ifndef GP_AUTHZ_H
#define GP_AUTHZ_H

#include <stdint.h>

/* Roles; keep in step with authz_role_names in authz.c. */
typedef enum authz_role {
    ROLE_PLATFORM_ADMIN,
    ROLE_SECURITY_ADMIN,
    ROLE_OPS_ENGINEER,
    ROLE_TENANT_ADMIN,
    ROLE_PROJECT_ADMIN,
    ROLE_PROJECT_USER,
    ROLE_VIEWER,
    ROLE_VENDOR,
    ROLE__COUNT
} authz_role;

typedef enum authz_scope { SCOPE_GLOBAL, SCOPE_TENANT, SCOPE_PROJECT, SCOPE_VENDOR } authz_scope;

/* Actions; keep in step with the matrix in authz.c. */
typedef enum authz_action {
    ACT_TENANT_CREATE,
    ACT_TENANT_READ,
    ACT_PROJECT_CREATE,
    ACT_PROJECT_READ,
    ACT_AUDIT_READ_ALL,    /* global audit */
    ACT_AUDIT_READ_TENANT, /* one tenant's events */
    ACT_AUDIT_VERIFY,
    ACT_AUDIT_EXPORT,
    ACT_MEMBER_READ,   /* list members at a scope */
    ACT_MEMBER_MANAGE, /* grant/revoke roles at a scope (plus authz_can_grant) */
    ACT_USER_CREATE,
    ACT_USER_READ_ALL,
    ACT_POLICY_READ,
    ACT_POLICY_CHANGE,
    ACT_APPROVAL_DECIDE,
    ACT_APPROVAL_READ_ALL,
    ACT_VENDOR_MANAGE,
    ACT_NODE_READ,       /* nodes, GPUs, health, history, alarms (all) */
    ACT_NODE_MANAGE,     /* join tokens, cordon/drain, modes, health policy, alarm acks */
    ACT_GPU_MOVE,        /* move a card's record to another node (after a drain) */
    ACT_POOL_MANAGE,     /* pools and node placement in pools */
    ACT_CLASS_MANAGE,    /* resource classes */
    ACT_WORKORDER_MANAGE,
    ACT_JOB_SUBMIT,
    ACT_JOB_READ,
    ACT_JOB_MANAGE,        /* cancel / re-prioritise anyone's job in scope */
    ACT_QUOTA_TENANT_SET,
    ACT_QUOTA_PROJECT_SET,
    ACT_PRIORITY_MANAGE,
    ACT_MODEL_READ,        /* a tenant's model services and endpoints */
    ACT_MODEL_MANAGE,      /* create/change/delete them, endpoints included */
    ACT_MODEL_PUBLISH,     /* make a model public (every tenant's keys may use it) */
    ACT_APP_MANAGE,        /* applications of a project */
    ACT_KEY_READ,          /* API keys of a project (project-users: their own) */
    ACT_KEY_MANAGE,        /* create / revoke keys (project-users: their own) */
    ACT_USAGE_READ,        /* the gateway's usage records, usage and cost reports */
    ACT_RATECARD_MANAGE,   /* rate cards and tenants' billing modes */
    ACT_KB_READ,           /* query a tenant's / project's knowledge bases (project members also
                            * read tenant-wide KBs: authz_tenant_wide) */
    ACT_KB_WRITE,          /* upload and delete documents of those KBs */
    ACT_KB_MANAGE,         /* create, change, delete those KBs; bind applications to them */
    ACT_KB_OPS_READ,       /* ops KBs (vendors: those naming their work orders, in h_kb.c) */
    ACT_KB_OPS_WRITE,      /* create, change, delete ops KBs and their documents */
    ACT_RESERVATION_MANAGE, /* reserve GPUs for a tenant or project (advance reservations) */
    ACT_MAINTENANCE_MANAGE, /* maintenance windows: reservations for nobody, which drain nodes */
    ACT__COUNT
} authz_action;

/* One role binding held by a principal. Ids are the objects' opaque ids. */
typedef struct authz_binding {
    authz_role role;
    authz_scope scope;
    const char *tenant_id;  /* SCOPE_TENANT / SCOPE_PROJECT */
    const char *project_id; /* SCOPE_PROJECT */
    int64_t expires_us;     /* 0 = never */
} authz_binding;

/* The target of a check: global (both NULL), a tenant, or a project in a tenant. */
typedef struct authz_target {
    const char *tenant_id;
    const char *project_id;
} authz_target;

typedef enum authz_decision { AUTHZ_ALLOW = 0, AUTHZ_DENY = 1, AUTHZ_HIDDEN = 2 } authz_decision;

/* Decide whether bindings[0..n) allow `action` on `target` at time `now_us`. */
authz_decision authz_check(const authz_binding *bindings, int n, authz_action action,
                           const authz_target *target, int64_t now_us);

/* 1 if the bindings can see `target` at all (used to filter lists). */
int authz_visible(const authz_binding *bindings, int n, const authz_target *target, int64_t now_us);

/* Role name <-> enum ("platform-admin"); parse returns -1 when unknown. */
const char *authz_role_name(authz_role r);
int authz_role_parse(const char *name);

/* Scope a role is granted at (platform-admin -> global, viewer -> tenant or project, ...). */
const char *authz_scope_name(authz_scope s);
int authz_scope_parse(const char *name);

/* Action name ("tenant.create") for docs and audit. */
const char *authz_action_name(authz_action a);

/* 1 if the matrix lets `role` perform `action` (at a scope covering the target). */
int authz_role_allows(authz_role role, authz_action action);

/* 1 if `role` may be held at `scope` (platform-admin only global, viewer tenant or project, ...). */
int authz_role_fits_scope(authz_role role, authz_scope scope);

/*
 * 1 if a holder of `holder` may grant or revoke `role` (at a scope the
 * holder's binding covers): platform-admin over every tenant/project role,
 * ops-engineer and platform-admin; security-admin over security-admin;
 * tenant-admin over tenant-admin and the project roles and viewer;
 * project-admin over project-admin, project-user and viewer.  Nobody else
 * grants anything; the vendor role is granted only through vendor access.
 */
int authz_role_dominates(authz_role holder, authz_role role);

/*
 * Escalation check: may these bindings grant (or revoke) `role` at the scope
 * `target` names (global when target->tenant_id is NULL)?  ALLOW needs a
 * live binding that both dominates `role` and covers the target; otherwise
 * DENY when the target is visible, HIDDEN when it is not.
 */
authz_decision authz_can_grant(const authz_binding *bindings, int n, authz_role role,
                               const authz_target *target, int64_t now_us);

/* 1 if any live binding holds `role` (at any scope). */
int authz_holds(const authz_binding *bindings, int n, authz_role role, int64_t now_us);

/*
 * The user a caller wants to administer, as authz_can_admin_user() sees it:
 * its live-or-not role bindings, its home (a tenant id, or NULL/"" for the
 * platform) and whether it is a node's agent account.
 */
typedef struct authz_user {
    const authz_binding *bindings;
    int nbindings;
    const char *home_tenant_id; /* NULL or "": homed on the platform */
    int node_account;           /* 1: agent-<node>, belongs to its node alone */
} authz_user;

/*
 * May the caller administer user `target` (disable it, reset its password,
 * manage its tokens)?  Pure.  The rules, in order:
 *   - a node account is administered by nobody through the user API (only
 *     its node acts for it): 0;
 *   - separation of duties: a security-admin is administered only by
 *     security-admins;
 *   - a live global platform-admin may;
 *   - a tenant-admin may when the target is homed in a tenant it
 *     administers (live binding) and holds no live global or vendor role.
 * Roles the target holds in other tenants never make their admins its
 * administrators, and never lock its home's admins out.
 */
int authz_can_admin_user(const authz_binding *caller, int nc, const authz_user *target,
                         int64_t now_us);

/*
 * Is this a privileged account: one holding live platform-admin or
 * security-admin?  Setting its password or minting a token for it by anyone
 * but itself is the always-sensitive operation "user.credentials"
 * (docs/security.md "Who administers the administrators").  Pure.
 */
int authz_privileged(const authz_binding *bindings, int n, int64_t now_us);

/*
 * The parties to an approval as authz_may_decide() sees them: user ids, and
 * who set each one's current password ("" itself or nobody).
 */
typedef struct authz_party {
    const char *user_id;
    const char *password_set_by;
} authz_party;

/*
 * May `approver` decide an approval `requester` filed?  Never the requester,
 * nor anyone acting as them: an approver whose current password the
 * requester set (it created the account or reset it), nor one who set the
 * requester's.  Every session of the requester's account is the requester,
 * whenever it was minted.  Roles are checked apart (ACT_APPROVAL_DECIDE).
 * Pure.
 */
int authz_may_decide(const authz_party *approver, const authz_party *requester);

/*
 * May the caller decide for users homed in `home_tenant_id` (NULL or "": the
 * platform) - accept or decline invitations of them, grant them roles
 * elsewhere directly?  A live global platform-admin always; a live
 * tenant-admin of that home tenant.  Pure.
 */
int authz_decides_home(const authz_binding *caller, int nc, const char *home_tenant_id,
                       int64_t now_us);

/*
 * Does granting a role at tenant `scope_tenant_id` (or one of its projects)
 * to a user homed in `home_tenant_id` need an invitation that the home
 * decides?  No when the user is homed in that very tenant, or when the caller
 * decides for the home (authz_decides_home); yes otherwise (another tenant's
 * user, or the platform's).  Pure; the caller checks authz_can_grant() first.
 */
int authz_grant_needs_invitation(const authz_binding *caller, int nc, const char *home_tenant_id,
                                 const char *scope_tenant_id, int64_t now_us);

/*
 * The roles of the live bindings of bindings[0..n) whose scope covers `target`
 * (global; target's tenant; target's project when it names one), in binding
 * order; at most `cap` are written to out.  Returns how many cover (which may
 * exceed cap).  Pure.  Used for rules that depend on the roles a caller holds
 * over a project (priority classes' allowed roles).
 */
int authz_roles_covering(const authz_binding *bindings, int n, const authz_target *target,
                         int64_t now_us, authz_role *out, int cap);

/*
 * May `caller` change an object `owner` owns (a job's submitter) in `target`?
 * The owner always (ALLOW); anyone else as authz_check(manage) decides (ALLOW,
 * DENY or HIDDEN).  Pure; NULL names are never an owner.
 */
authz_decision authz_owner_or(const authz_binding *bindings, int n, const char *caller,
                              const char *owner, authz_action manage,
                              const authz_target *target, int64_t now_us);

/*
 * May the bindings use `action` on an object of tenant `tenant_id` that
 * belongs to no project (a tenant-wide knowledge base)?  Yes when
 * authz_check allows it at the tenant, and also when a live project binding
 * inside that tenant allows `action` on its own project: members of any of a
 * tenant's projects share its tenant-wide objects.  Pure.
 */
int authz_tenant_wide(const authz_binding *bindings, int n, authz_action action,
                      const char *tenant_id, int64_t now_us);

#endif
