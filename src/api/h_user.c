/*
 * h_user.c - login, users and their tokens.
 *
 * POST /api/v1/login                         public; name + password -> token
 * POST /api/v1/users                         platform-admin, tenant-admins; the user is
 *                                            homed in "tenant" (a tenant-admin: one it
 *                                            administers; by default the only one), or by
 *                                            a platform-admin on the platform
 * GET  /api/v1/users                         all (platform/security-admin),
 *                                            else the users one may administer, and oneself
 * GET  /api/v1/users/{user}                  oneself or a user one may see as above
 * PATCH /api/v1/users/{user}                 disabled / password: administrators of that
 *                                            user; a user may change their own password
 * POST|GET /api/v1/users/{user}/tokens       oneself, or administrators (service accounts)
 * DELETE /api/v1/users/{user}/tokens/{id}    oneself, or administrators of that user
 *
 * A user another caller may not see answers 404, as if it did not exist.
 * Who administers whom is authz_can_admin_user(): the user's home tenant's
 * admins and platform-admins; a role in another tenant changes nothing.
 * Node accounts (agent-<node>) take no password, token or disabling through
 * this API from anyone.  Audit events on a user name its home tenant, so
 * that tenant sees who reset its user's password or minted a token for it.
 * A password set by an administrator revokes every token of the user; one's
 * own change revokes every other token but the one used for the change.
 *
 * Failed logins are throttled (auth/throttle.h): after cfg->login_fail_name
 * failures for one user name from one source address (then with a backoff
 * that doubles), or cfg->login_fail_addr from one source address over every
 * name, within a minute, further logins from that source are answered 429
 * too_many_attempts with Retry-After, before the password is looked at.
 * Never a name from every source: nobody locks another user out.  A success
 * resets the name's count from that source (not the address's).  The
 * failures are kept in the store, so every server on it counts the same
 * ones; gpupool_login_throttled_total{by} counts the refusals.
 */
#include "api_int.h"

#include "../auth/auth.h"
#include "../auth/throttle.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../policy/policy.h"

#include <assert.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGIN_WINDOW_US (60LL * 1000000)

struct api_login_guard {
    int per_name, per_addr; /* failures allowed per window; 0: no limit of that kind */
};

api_login_guard *api__login_guard_new(int per_name, int per_addr) {
    if (per_name <= 0 && per_addr <= 0) return NULL;
    api_login_guard *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->per_name = per_name > AUTH_THROTTLE_MAX ? AUTH_THROTTLE_MAX : per_name;
    g->per_addr = per_addr > AUTH_THROTTLE_MAX ? AUTH_THROTTLE_MAX : per_addr;
    return g;
}

void api__login_guard_free(api_login_guard *g) { free(g); }

/* Is one kind of key ('n' a name from a source, with backoff; 'a' an address) under its
 * limit?  OUT: *ok, *retry (max'd), *by (what refused it, for the metric). */
static int key_allowed(store_tx *tx, char kind, const char *key, int max, int64_t now, int *ok,
                       int64_t *retry, const char **by, gp_err *err) {
    if (max <= 0) return GP_OK;
    int64_t at[AUTH_THROTTLE_MAX], wait = 0;
    int n = 0;
    int rc = kind == 'n' ? auth_failures_recent(tx, kind, key, AUTH_THROTTLE_MAX,
                                                AUTH_BACKOFF_HORIZON_US, now, at, &n, err)
                         : auth_failures_recent(tx, kind, key, max, LOGIN_WINDOW_US, now, at, &n,
                                                err);
    if (rc) return rc;
    if (kind == 'n' ? !auth_throttle_backoff(at, n, max, LOGIN_WINDOW_US, now, &wait)
                    : !auth_throttle_judge(at, n, max, LOGIN_WINDOW_US, now, &wait)) {
        *ok = 0;
        *by = kind == 'n' ? "name_and_source" : "source";
        if (wait > *retry) *retry = wait;
    }
    return GP_OK;
}

/* May this name try from this address now, counting every server's failures?
 * OUT: *ok (1 yes, 0 refused with *retry seconds, *by what refused it). */
static int login_allowed(store_tx *tx, const api_login_guard *g, const char *name,
                         const char *addr, int64_t now, int *ok, int64_t *retry, const char **by,
                         gp_err *err) {
    *ok = 1;
    *retry = 0;
    if (!g) return GP_OK;
    char pair[512];
    auth_throttle_pair_key(name, addr, pair, sizeof pair);
    int rc = key_allowed(tx, 'n', pair, g->per_name, now, ok, retry, by, err);
    if (!rc) rc = key_allowed(tx, 'a', addr, g->per_addr, now, ok, retry, by, err);
    return rc;
}

/*
 * A login has a `prepare` step: the throttle and the password are checked
 * in a read transaction (the hash takes tens of milliseconds, for which a
 * write transaction would hold every other writer); the write pass then
 * records the outcome: a failure's count (for every server), or the token.
 */
typedef struct login_prep {
    int refused;   /* the password did not match */
    char why[256]; /* ... the refusal's message */
    auth_user u;   /* the user, when it matched */
} login_prep;

static int login_fields(api_ctx *c, const char **name, const char **password, gp_err *err) {
    static const char *const fields[] = {"name", "password", NULL};
    int rc = jx_only_fields(c->body, fields, err);
    if (!rc) rc = jx_get_str(c->body, "name", 1, name, err);
    if (!rc) rc = jx_get_str(c->body, "password", 1, password, err);
    return rc;
}

int h_login_prepare(api_ctx *c, gp_err *err) {
    api_req *r = c->r;
    const char *name, *password;
    api_target(r, "user", NULL, NULL, NULL);
    int rc = login_fields(c, &name, &password, err);
    if (rc) return rc;
    api_target(r, NULL, name, NULL, NULL);
    login_prep *p = calloc(1, sizeof *p);
    if (!p) return gp_err_set(err, GP_ENOMEM, "out of memory");
    c->prep = p;
    c->prep_free = free;
    int64_t retry = 0;
    int allowed = 1;
    const char *by = NULL;
    rc = login_allowed(c->tx, r->login_guard, name, r->source, gt_now_us(), &allowed, &retry, &by,
                       err);
    if (rc) return rc;
    if (!allowed) {
        char secs[24];
        snprintf(secs, sizeof secs, "%lld", (long long)retry);
        api_header(r, "Retry-After", secs);
        api__metrics_login_throttled(by ? by : "source");
        gp_err_set(err, GP_EBUSY, "too many failed logins; retry in %lld s", (long long)retry);
        api_error(r, 429, "too_many_attempts", err->msg); /* audited as a denial */
        return GP_EBUSY;
    }
    rc = auth_login_check(c->tx, name, password, &p->u, err);
    if (rc == GP_EUNAUTH) {
        p->refused = 1;
        snprintf(p->why, sizeof p->why, "%s", err->msg);
        gp_err_clear(err);
        return GP_OK; /* the write pass counts it */
    }
    return rc;
}

int h_login(api_ctx *c, gp_err *err) {
    api_req *r = c->r;
    const login_prep *p = c->prep;
    const char *name, *password;
    policy pol;
    int64_t now = gt_now_us();
    int rc = login_fields(c, &name, &password, err);
    if (rc) return rc;
    assert(p);
    if (p->refused) {
        /* counted for every server, then refused: the count commits with the refusal's
         * event */
        if (r->login_guard &&
            (rc = auth_failures_add(c->tx, name, r->source, now, LOGIN_WINDOW_US, err)))
            return rc;
        c->summary = json_pack("{s:s}", "error", "unauthenticated");
        api_error(r, 401, "unauthenticated", p->why);
        return GP_OK;
    }
    if (r->login_guard && (rc = auth_failures_clear(c->tx, p->u.name, r->source, err)))
        return rc;
    char token[RND_SECRET_LEN], tid[RND_ID_LEN];
    if ((rc = policy_load(c->tx, &pol, err))) return rc;
    int64_t ttl = pol.login_token_ttl_s;
    policy_release(&pol);
    if ((rc = auth_token_create(c->tx, p->u.id, "login", ttl, token, tid, err))) return rc;
    /* the login is audited under the user's own name, in the user's home tenant */
    if (p->u.home[0]) api_target(r, NULL, NULL, p->u.home, NULL);
    snprintf(r->actor, sizeof r->actor, "%s", p->u.name);
    c->summary = json_pack("{s:s,s:I}", "token_id", tid, "ttl_seconds", (json_int_t)ttl);
    char exp[GT_RFC3339_LEN];
    gt_format_us(now + ttl * 1000000, exp, sizeof exp);
    api_reply(r, 200,
              json_pack("{s:s,s:s,s:s,s:s}", "token", token, "token_id", tid, "expires_at", exp,
                        "user", p->u.name));
    sodium_memzero(token, sizeof token);
    return GP_OK;
}

/* Load the {user} of the path and decide what the caller may do with it. */
enum { SEE_NONE, SEE_SELF, SEE_READ, SEE_ADMIN };

static int user_access(api_req *r, store_tx *tx, const auth_user *u) {
    gp_err err = GP_ERR_INIT;
    authz_binding *tb;
    int nt, level = SEE_NONE;
    int64_t now = gt_now_us();
    if (auth_user_bindings(tx, u->id, &tb, &nt, &err)) return SEE_NONE;
    authz_user target = {tb, nt, u->home_tenant_id, u->node_account};
    if (authz_can_admin_user(r->who->bindings, r->who->nbindings, &target, now)) level = SEE_ADMIN;
    else if (strcmp(u->id, r->who->user_id) == 0) level = SEE_SELF;
    else {
        authz_target g = {NULL, NULL};
        if (authz_check(r->who->bindings, r->who->nbindings, ACT_USER_READ_ALL, &g, now) ==
            AUTHZ_ALLOW)
            level = SEE_READ;
    }
    auth_bindings_free(tb, nt);
    return level;
}

/* Resolve the {user} of the path in c's transaction; not found when missing or invisible.
 * OUT: *level. */
static int find_user(api_ctx *c, auth_user *u, int *level, gp_err *err) {
    const char *name = api_param(c->r, "user");
    api_target(c->r, "user", name, NULL, NULL);
    int rc = auth_user_find(c->tx, name, u, err);
    if (rc && rc != GP_ENOTFOUND) return rc;
    *level = rc ? SEE_NONE : user_access(c->r, c->tx, u);
    if (*level == SEE_NONE) return gp_err_set(err, GP_ENOTFOUND, "not found");
    /* the event belongs to the user's home tenant too: its admins read it there */
    if (u->home[0]) api_target(c->r, NULL, NULL, u->home, NULL);
    return GP_OK;
}

/* A node account belongs to its node: nobody manages it through the user API (403). */
static int node_account_refused(const auth_user *u, gp_err *err) {
    if (!u->node_account) return GP_OK;
    return gp_err_set(err, GP_EFORBIDDEN,
                      "a node account belongs to its node: only the node's registration manages "
                      "it");
}

/*
 * What a password's `prepare` step makes outside the write lock: its hash,
 * and (one's own change) that the current password was given right for the
 * user `user_id`.  Zeroed when freed.
 */
typedef struct pw_prep {
    char hash[AUTH_PWHASH_LEN];
    char user_id[RND_ID_LEN]; /* whose current password was checked ("" none) */
} pw_prep;

static void pw_prep_free(void *p) {
    sodium_memzero(p, sizeof(pw_prep));
    free(p);
}

static int pw_prep_new(api_ctx *c, pw_prep **out, gp_err *err) {
    if (!(*out = calloc(1, sizeof **out))) return gp_err_set(err, GP_ENOMEM, "out of memory");
    c->prep = *out;
    c->prep_free = pw_prep_free;
    return GP_OK;
}

/*
 * The home of a user the caller creates: "tenant" when given (the caller
 * needs user.create there: a platform-admin, or that tenant's admin), else
 * the platform for a platform-admin, else the one tenant the caller
 * administers.  OUT: *home (zeroed for the platform).
 */
static int resolve_home(api_ctx *c, const char *tenant, tenancy_tenant *home, gp_err *err) {
    const auth_principal *who = c->who;
    int64_t now = gt_now_us();
    memset(home, 0, sizeof *home);
    authz_target g = {NULL, NULL};
    int platform =
        authz_check(who->bindings, who->nbindings, ACT_USER_CREATE, &g, now) == AUTHZ_ALLOW;
    if (!tenant && platform) return GP_OK;
    if (tenant) {
        int rc = tenancy_tenant_find(c->tx, tenant, home, err);
        if (rc && rc != GP_ENOTFOUND) return rc;
        authz_target t = {home->id, NULL};
        authz_decision d =
            rc ? AUTHZ_HIDDEN : authz_check(who->bindings, who->nbindings, ACT_USER_CREATE, &t, now);
        if (d == AUTHZ_HIDDEN) return gp_err_set(err, GP_ENOTFOUND, "tenant not found");
        if (d != AUTHZ_ALLOW)
            return gp_err_set(err, GP_EFORBIDDEN,
                              "you may create users only in tenants you administer");
        return GP_OK;
    }
    const char *only = NULL;
    int several = 0;
    for (int i = 0; i < who->nbindings; i++) {
        const authz_binding *b = &who->bindings[i];
        if (b->role != ROLE_TENANT_ADMIN || b->scope != SCOPE_TENANT ||
            (b->expires_us && b->expires_us <= now))
            continue;
        if (only && strcmp(only, b->tenant_id) != 0) several = 1;
        only = b->tenant_id;
    }
    if (!only || several)
        return gp_err_set(err, GP_EINVALID,
                          "you administer several tenants: say which is the user's home with "
                          "\"tenant\"");
    return tenancy_tenant_get(c->tx, only, home, err);
}

/* A user's creation, as asked: the body, and the home it resolves to. */
typedef struct create_args {
    const char *name, *password, *pwhash, *kind, *tenant;
    tenancy_tenant home;
} create_args;

static int create_read(api_ctx *c, create_args *a, gp_err *err) {
    static const char *const fields[] = {"name", "password", "kind", "tenant", NULL};
    /* an approved request replays the body kept with the approval: its password is a hash */
    static const char *const replay_fields[] = {"name", "password_hash", "kind", "tenant", NULL};
    api_req *r = c->r;
    int64_t now = gt_now_us();
    memset(a, 0, sizeof *a);
    api_target(r, "user", NULL, NULL, NULL);
    /* platform-admins, and tenant-admins of any tenant, create accounts */
    authz_target g = {NULL, NULL};
    if (authz_check(c->who->bindings, c->who->nbindings, ACT_USER_CREATE, &g, now) !=
            AUTHZ_ALLOW &&
        !authz_holds(c->who->bindings, c->who->nbindings, ROLE_TENANT_ADMIN, now))
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    int rc = jx_only_fields(c->body, r->approval_id ? replay_fields : fields, err);
    if (!rc) rc = jx_get_str(c->body, "name", 1, &a->name, err);
    if (!rc)
        rc = r->approval_id ? jx_get_str(c->body, "password_hash", 0, &a->pwhash, err)
                            : jx_get_str(c->body, "password", 0, &a->password, err);
    if (!rc) rc = jx_get_str(c->body, "kind", 0, &a->kind, err);
    if (!rc) rc = jx_get_str(c->body, "tenant", 0, &a->tenant, err);
    if (rc) return rc;
    api_target(r, NULL, a->name, NULL, NULL);
    if ((rc = resolve_home(c, a->tenant, &a->home, err))) return rc;
    if (a->home.id[0]) api_target(r, NULL, NULL, a->home.name, NULL);
    return GP_OK;
}

/* prepare: may the caller create it?  Then hash its password, outside the write lock. */
int h_user_create_prepare(api_ctx *c, gp_err *err) {
    create_args a;
    pw_prep *p;
    int rc = create_read(c, &a, err);
    if (rc || !a.password) return rc;
    if ((rc = pw_prep_new(c, &p, err))) return rc;
    return auth_password_hash(a.password, p->hash, err);
}

/* Sensitive (user.create): an approval keeps the password only as its hash. */
int h_user_create(api_ctx *c, gp_err *err) {
    create_args a;
    auth_user u;
    const pw_prep *p = c->prep;
    int rc = create_read(c, &a, err);
    if (rc) return rc;
    assert(p || !a.password);
    const char *hash = a.password ? p->hash : a.pwhash;
    auth_user_spec spec = {a.name,      a.kind,      NULL, hash, a.home.id,
                           a.home.name, c->who->user_id};
    if ((rc = auth_user_create(c->tx, &spec, &u, err))) return rc;
    c->summary = json_pack("{s:s,s:s,s:o}", "name", a.name, "kind", a.kind ? a.kind : "user",
                           "home", a.home.id[0] ? json_string(a.home.name) : json_null());
    if (c->dry_run) {
        /* what an approval keeps: the home resolved, and the password only as its hash */
        json_t *kept = json_pack("{s:s}", "name", a.name);
        if (a.kind) json_object_set_new(kept, "kind", json_string(a.kind));
        if (a.home.id[0]) json_object_set_new(kept, "tenant", json_string(a.home.name));
        if (hash) json_object_set_new(kept, "password_hash", json_string(hash));
        c->approval_body = kept;
        if (a.home.id[0])
            snprintf(c->approval_tenant, sizeof c->approval_tenant, "%s", a.home.name);
    }
    api_reply(c->r, 201, auth_user_json(&u));
    return GP_OK;
}

/* SC_SIGNED_IN: every user one may see (user_access). */
int h_user_list(api_ctx *c, gp_err *err) {
    auth_user *us;
    int n;
    int rc = auth_user_list(c->tx, &us, &n, err);
    if (rc) return rc;
    json_t *items = json_array();
    for (int i = 0; i < n; i++)
        if (user_access(c->r, c->tx, &us[i]) != SEE_NONE)
            json_array_append_new(items, auth_user_json(&us[i]));
    free(us);
    api_reply(c->r, 200, api_list(items, NULL));
    return GP_OK;
}

int h_user_get(api_ctx *c, gp_err *err) {
    auth_user u;
    int level;
    int rc = find_user(c, &u, &level, err);
    if (rc) return rc;
    json_t *o = auth_user_json(&u), *roles;
    if (auth_member_list_user(c->tx, u.id, &roles, NULL) == GP_OK)
        json_object_set_new(o, "roles", roles);
    api_reply(c->r, 200, o);
    return GP_OK;
}

/* Does user `u` hold platform-admin or security-admin now?  OUT: *yes. */
static int privileged(store_tx *tx, const auth_user *u, int *yes, gp_err *err) {
    authz_binding *tb;
    int nt;
    int rc = auth_user_bindings(tx, u->id, &tb, &nt, err);
    if (rc) return rc;
    *yes = authz_privileged(tb, nt, gt_now_us());
    auth_bindings_free(tb, nt);
    return GP_OK;
}

/* A change to a user, as asked: the user, what the caller may do with it, and the body. */
typedef struct update_args {
    auth_user u;
    int level, self, disabled, has_disabled;
    const char *password, *pwhash, *current;
    int admin_target; /* a new password for an administrator, set by someone else */
} update_args;

/*
 * Read and check a change.  In the prepare pass (`prepare`, p the step's) one's own new
 * password needs the current one, checked there; the write pass then needs that check to
 * have been for this very user.
 */
static int update_read(api_ctx *c, int prepare, pw_prep *p, update_args *a, gp_err *err) {
    static const char *const fields[] = {"disabled", "password", "current_password", NULL};
    /* an approved request replays the body kept with the approval: its password is a hash */
    static const char *const replay_fields[] = {"disabled", "password_hash", NULL};
    api_req *r = c->r;
    memset(a, 0, sizeof *a);
    int rc = find_user(c, &a->u, &a->level, err);
    if (rc) return rc;
    if (a->level != SEE_SELF && a->level != SEE_ADMIN)
        return gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    if ((rc = node_account_refused(&a->u, err))) return rc;
    rc = jx_only_fields(c->body, r->approval_id ? replay_fields : fields, err);
    if (!rc) rc = jx_get_bool(c->body, "disabled", 0, &a->disabled, &a->has_disabled, err);
    if (!rc)
        rc = r->approval_id ? jx_get_str(c->body, "password_hash", 0, &a->pwhash, err)
                            : jx_get_str(c->body, "password", 0, &a->password, err);
    if (!rc) rc = jx_get_str(c->body, "current_password", 0, &a->current, err);
    if (rc) return rc;
    a->self = strcmp(a->u.id, c->who->user_id) == 0;
    if (a->has_disabled && a->level != SEE_ADMIN)
        return gp_err_set(err, GP_EFORBIDDEN, "only an administrator of this user may disable it");
    if (a->has_disabled && a->self) return gp_err_set(err, GP_EINVALID, "you cannot disable yourself");
    if (a->pwhash && a->level != SEE_ADMIN)
        return gp_err_set(err, GP_EFORBIDDEN, "only an administrator of this user may reset it");
    if (a->password && a->level != SEE_ADMIN) {
        /* changing one's own password needs the current one */
        auth_user check;
        int ok = prepare ? a->current && auth_login_check(c->tx, a->u.name, a->current, &check,
                                                          err) == GP_OK
                         : p && strcmp(p->user_id, a->u.id) == 0;
        if (!ok) return gp_err_set(err, GP_EFORBIDDEN, "current_password is wrong or missing");
        if (prepare) snprintf(p->user_id, sizeof p->user_id, "%s", a->u.id);
    }
    if ((a->password || a->pwhash) && strcmp(a->u.kind, "user") != 0)
        return gp_err_set(err, GP_EINVALID, "service accounts have no password");
    if (a->password && !a->self) return privileged(c->tx, &a->u, &a->admin_target, err);
    return GP_OK;
}

/* prepare: check the current password (one's own change) and hash the new one, outside
 * the write lock. */
int h_user_update_prepare(api_ctx *c, gp_err *err) {
    update_args a;
    pw_prep *p;
    int rc = pw_prep_new(c, &p, err);
    if (!rc) rc = update_read(c, 1, p, &a, err);
    if (!rc && a.password) rc = auth_password_hash(a.password, p->hash, err);
    return rc;
}

/*
 * Sensitive only for a new password for an administrator set by someone else: taking over
 * an administrator's account is user.credentials, which a second security-admin approves
 * whatever the policy lists; the approval keeps the password only as its hash.
 */
int h_user_update(api_ctx *c, gp_err *err) {
    update_args a;
    const pw_prep *p = c->prep;
    int revoked = 0;
    int rc = update_read(c, 0, c->prep, &a, err);
    if (rc) return rc;
    const char *hash = a.password ? p->hash : a.pwhash;
    if (c->dry_run) {
        c->not_sensitive = !a.admin_target;
        if (c->not_sensitive) return GP_OK; /* the real pass does it */
        json_t *kept = json_pack("{s:s}", "password_hash", hash);
        if (a.has_disabled) json_object_set_new(kept, "disabled", json_boolean(a.disabled));
        c->approval_body = kept;
        c->summary = json_pack("{s:s,s:s}", "user", a.u.name, "password", "reset");
        snprintf(c->approval_tenant, sizeof c->approval_tenant, "%s", a.u.home);
        return GP_OK;
    }
    if (hash) rc = auth_user_set_password(c->tx, a.u.id, NULL, hash, c->who->user_id, err);
    /* a new password ends the sessions of the old one (one's own change keeps the token
     * that made it, so the caller is not logged out by their own change) */
    if (!rc && hash)
        rc = auth_user_revoke_tokens(c->tx, a.u.id, a.self ? c->who->token_id : NULL, &revoked,
                                     err);
    if (!rc && a.has_disabled) rc = auth_user_set_disabled(c->tx, a.u.id, a.disabled, err);
    if (rc) return rc;
    c->summary = json_object();
    if (a.has_disabled) json_object_set_new(c->summary, "disabled", json_boolean(a.disabled));
    if (hash) {
        json_object_set_new(c->summary, "password", json_string("changed"));
        json_object_set_new(c->summary, "tokens_revoked", json_integer(revoked));
    }
    if (a.has_disabled) a.u.disabled = a.disabled;
    api_reply(c->r, 200, auth_user_json(&a.u));
    return GP_OK;
}

/* One's own tokens; an administrator makes tokens for service accounts only. */
int h_token_create(api_ctx *c, gp_err *err) {
    static const char *const fields[] = {"ttl_seconds", "label", NULL};
    auth_user u;
    policy pol;
    int level, present;
    int64_t ttl = 0;
    const char *label;
    int rc = find_user(c, &u, &level, err);
    if (!rc) rc = node_account_refused(&u, err);
    if (rc) return rc;
    int self = strcmp(u.id, c->who->user_id) == 0, admin_target = 0;
    if (!(level == SEE_SELF || (level == SEE_ADMIN && (self || strcmp(u.kind, "service") == 0))))
        return gp_err_set(err, GP_EFORBIDDEN, "you may create tokens only for yourself or for "
                                              "service accounts you administer");
    /* a service account granted an administrator role before that was refused: nobody but
     * itself mints its tokens (docs/security.md "Who administers the administrators") */
    if (!self && (rc = privileged(c->tx, &u, &admin_target, err))) return rc;
    if (admin_target)
        return gp_err_set(err, GP_EFORBIDDEN,
                          "tokens of an account holding platform-admin or security-admin are "
                          "made only by that account itself");
    if (jx_only_fields(c->body, fields, err) ||
        jx_get_int(c->body, "ttl_seconds", 0, &ttl, &present, err) ||
        jx_get_str(c->body, "label", 0, &label, err) || policy_load(c->tx, &pol, err))
        return err->code;
    int64_t max = pol.max_token_ttl_s;
    policy_release(&pol);
    if (!present) ttl = max;
    if (ttl < 60 || ttl > max)
        return gp_err_set(err, GP_EINVALID,
                          "ttl_seconds must be between 60 and %lld (security policy)",
                          (long long)max);
    if (label && strlen(label) > 100)
        return gp_err_set(err, GP_EINVALID, "label longer than 100 bytes");
    char token[RND_SECRET_LEN], tid[RND_ID_LEN];
    if ((rc = auth_token_create(c->tx, u.id, label ? label : "", ttl, token, tid, err))) return rc;
    c->summary = json_pack("{s:s,s:s,s:s,s:I}", "user", u.name, "token_id", tid, "label",
                           label ? label : "", "ttl_seconds", (json_int_t)ttl);
    char exp[GT_RFC3339_LEN];
    gt_format_us(gt_now_us() + ttl * 1000000, exp, sizeof exp);
    api_reply(c->r, 201, json_pack("{s:s,s:s,s:s,s:s}", "id", tid, "token", token, "expires_at",
                                   exp, "user", u.name));
    sodium_memzero(token, sizeof token);
    return GP_OK;
}

/* The user in the path, whose tokens the caller may see and revoke: oneself, or its admin. */
static int token_owner(api_ctx *c, auth_user *u, gp_err *err) {
    int level;
    int rc = find_user(c, u, &level, err);
    if (!rc && level != SEE_SELF && level != SEE_ADMIN)
        rc = gp_err_set(err, GP_EFORBIDDEN, "your role does not allow this action here");
    return rc;
}

int h_token_list(api_ctx *c, gp_err *err) {
    auth_user u;
    json_t *items;
    int rc = token_owner(c, &u, err);
    if (!rc) rc = auth_token_list(c->tx, u.id, &items, err);
    if (!rc) api_reply(c->r, 200, api_list(items, NULL));
    return rc;
}

int h_token_revoke(api_ctx *c, gp_err *err) {
    auth_user u;
    const char *id = api_param(c->r, "id");
    int rc = token_owner(c, &u, err);
    if (rc) return rc;
    api_target(c->r, "token", id, NULL, NULL);
    if ((rc = auth_token_revoke(c->tx, u.id, id, err))) return rc;
    c->summary = json_pack("{s:s,s:s}", "user", u.name, "token_id", id);
    api_reply(c->r, 200, json_pack("{s:s,s:s}", "id", id, "state", "revoked"));
    return GP_OK;
}
