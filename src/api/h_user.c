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

void h_login(api_req *r) {
    static const char *const fields[] = {"name", "password", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    const char *name, *password;
    store_tx *tx;
    auth_user u;
    policy pol;
    api_target(r, "user", NULL, NULL, NULL);
    if (api_body(r, &body)) return;
    if (jx_only_fields(body, fields, &err) || jx_get_str(body, "name", 1, &name, &err) ||
        jx_get_str(body, "password", 1, &password, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    api_target(r, NULL, name, NULL, NULL);
    /* the throttle and the password in a read transaction: the hash takes tens of
     * milliseconds, for which a write transaction would hold every other writer */
    if (api_begin(r, STORE_READ, &tx)) {
        json_decref(body);
        return;
    }
    int64_t now = gt_now_us(), retry = 0;
    int allowed = 1;
    const char *by = NULL;
    int rc = login_allowed(tx, r->login_guard, name, r->source, now, &allowed, &retry, &by, &err);
    if (!rc && allowed) rc = auth_login_check(tx, name, password, &u, &err);
    store_rollback(tx);
    if (rc && rc != GP_EUNAUTH) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    if (!allowed) {
        json_decref(body);
        char secs[24], msg[128];
        snprintf(secs, sizeof secs, "%lld", (long long)retry);
        snprintf(msg, sizeof msg, "too many failed logins; retry in %lld s", (long long)retry);
        api_header(r, "Retry-After", secs);
        api_error(r, 429, "too_many_attempts", msg);
        api__metrics_login_throttled(by ? by : "source");
        return; /* the dispatcher audits the refusal (denied) */
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        json_decref(body);
        return;
    }
    if (rc == GP_EUNAUTH) { /* counted for every server, then refused */
        gp_err e2 = GP_ERR_INIT;
        int rc2 = r->login_guard ? auth_failures_add(tx, name, r->source, now, LOGIN_WINDOW_US, &e2)
                                 : GP_OK;
        json_decref(body);
        if (rc2) {
            api_abort(r, tx, &e2);
            return;
        }
        if (store_commit(tx, &e2)) {
            api_fail(r, &e2);
            return;
        }
        api_error(r, 401, "unauthenticated", err.msg);
        return; /* the dispatcher audits the refusal */
    }
    json_decref(body);
    if (r->login_guard && (rc = auth_failures_clear(tx, u.name, r->source, &err))) {
        api_abort(r, tx, &err);
        return;
    }
    char token[RND_SECRET_LEN], tid[RND_ID_LEN];
    rc = policy_load(tx, &pol, &err);
    int64_t ttl = pol.login_token_ttl_s;
    policy_release(&pol);
    if (rc || (rc = auth_token_create(tx, u.id, "login", ttl, token, tid, &err))) {
        api_abort(r, tx, &err);
        return;
    }
    /* the login is audited under the user's own name, in the user's home tenant */
    if (u.home[0]) api_target(r, NULL, NULL, u.home, NULL);
    snprintf(r->on_behalf, sizeof r->on_behalf, "%s", "");
    auth_principal self = {0};
    snprintf(self.name, sizeof self.name, "%s", u.name);
    r->who = &self;
    rc = api_finish(r, tx, 200, json_pack("{s:s,s:I}", "token_id", tid, "ttl_seconds",
                                          (json_int_t)ttl));
    r->who = NULL;
    if (rc) return;
    char exp[GT_RFC3339_LEN];
    gt_format_us(gt_now_us() + ttl * 1000000, exp, sizeof exp);
    api_reply(r, 200,
              json_pack("{s:s,s:s,s:s,s:s}", "token", token, "token_id", tid, "expires_at", exp,
                        "user", u.name));
    memset(token, 0, sizeof token);
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

/* Resolve {user}; 404 when missing or invisible. OUT: *level. */
static int load_user(api_req *r, store_tx *tx, auth_user *u, int *level) {
    gp_err err = GP_ERR_INIT;
    const char *name = api_param(r, "user");
    api_target(r, "user", name, NULL, NULL);
    int rc = auth_user_find(tx, name, u, &err);
    if (rc && rc != GP_ENOTFOUND) {
        api_fail(r, &err);
        return -1;
    }
    *level = rc ? SEE_NONE : user_access(r, tx, u);
    if (*level == SEE_NONE) {
        api_error(r, 404, "not_found", "not found");
        return -1;
    }
    /* the event belongs to the user's home tenant too: its admins read it there */
    if (u->home[0]) api_target(r, NULL, NULL, u->home, NULL);
    return 0;
}

/* The same, for a declared handler: the {user} in c's transaction; not found when missing
 * or invisible.  OUT: *level. */
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

/* Refuse (403) acting on a node account through the user API; 1 when refused. */
static int node_refused(api_req *r, store_tx *tx, const auth_user *u) {
    if (!u->node_account) return 0;
    if (tx) store_rollback(tx);
    api_error(r, 403, "forbidden",
              "a node account belongs to its node: only the node's registration manages it");
    return 1;
}

/*
 * The home of a user the caller creates: "tenant" when given (the caller
 * needs user.create there: a platform-admin, or that tenant's admin), else
 * the platform for a platform-admin, else the one tenant the caller
 * administers.  OUT: *home (zeroed for the platform).  0, or -1 with the
 * response set.
 */
static int resolve_home(api_req *r, const char *tenant, tenancy_tenant *home) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    int64_t now = gt_now_us();
    memset(home, 0, sizeof *home);
    authz_target g = {NULL, NULL};
    int platform = authz_check(r->who->bindings, r->who->nbindings, ACT_USER_CREATE, &g, now) ==
                   AUTHZ_ALLOW;
    if (!tenant && platform) return 0;
    if (api_begin(r, STORE_READ, &tx)) return -1;
    int rc;
    if (tenant) {
        rc = tenancy_tenant_find(tx, tenant, home, &err);
        authz_target t = {home->id, NULL};
        authz_decision d = rc ? AUTHZ_HIDDEN
                              : authz_check(r->who->bindings, r->who->nbindings, ACT_USER_CREATE,
                                            &t, now);
        if (rc && rc != GP_ENOTFOUND) return api_abort(r, tx, &err);
        store_rollback(tx);
        if (d == AUTHZ_HIDDEN) {
            api_error(r, 404, "not_found", "tenant not found");
            return -1;
        }
        if (d != AUTHZ_ALLOW) {
            api_error(r, 403, "forbidden", "you may create users only in tenants you administer");
            return -1;
        }
        return 0;
    }
    const char *only = NULL;
    int several = 0;
    for (int i = 0; i < r->who->nbindings; i++) {
        const authz_binding *b = &r->who->bindings[i];
        if (b->role != ROLE_TENANT_ADMIN || b->scope != SCOPE_TENANT ||
            (b->expires_us && b->expires_us <= now))
            continue;
        if (only && strcmp(only, b->tenant_id) != 0) several = 1;
        only = b->tenant_id;
    }
    if (!only || several) {
        store_rollback(tx);
        api_error(r, 400, "invalid_argument",
                  "you administer several tenants: say which is the user's home with \"tenant\"");
        return -1;
    }
    rc = tenancy_tenant_get(tx, only, home, &err);
    if (rc) return api_abort(r, tx, &err);
    store_rollback(tx);
    return 0;
}


void h_user_create(api_req *r) {
    static const char *const fields[] = {"name", "password", "kind", "tenant", NULL};
    /* an approved request replays the body kept with the approval: its password is a hash */
    static const char *const replay_fields[] = {"name", "password_hash", "kind", "tenant", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    const char *name, *password = NULL, *pwhash = NULL, *kind, *tenant;
    store_tx *tx;
    auth_user u;
    tenancy_tenant home;
    int64_t now = gt_now_us();
    api_target(r, "user", NULL, NULL, NULL);
    /* platform-admins, and tenant-admins of any tenant, create accounts */
    authz_target g = {NULL, NULL};
    if (authz_check(r->who->bindings, r->who->nbindings, ACT_USER_CREATE, &g, now) !=
            AUTHZ_ALLOW &&
        !authz_holds(r->who->bindings, r->who->nbindings, ROLE_TENANT_ADMIN, now)) {
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    if (api_body(r, &body)) return;
    if (jx_only_fields(body, r->approval_id ? replay_fields : fields, &err) ||
        jx_get_str(body, "name", 1, &name, &err) ||
        (r->approval_id ? jx_get_str(body, "password_hash", 0, &pwhash, &err)
                        : jx_get_str(body, "password", 0, &password, &err)) ||
        jx_get_str(body, "kind", 0, &kind, &err) || jx_get_str(body, "tenant", 0, &tenant, &err)) {
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    api_target(r, NULL, name, NULL, NULL);
    if (resolve_home(r, tenant, &home)) {
        json_decref(body);
        return;
    }
    if (home.id[0]) api_target(r, NULL, NULL, home.name, NULL);
    json_t *change = json_pack("{s:s,s:s,s:o}", "name", name, "kind", kind ? kind : "user",
                               "home", home.id[0] ? json_string(home.name) : json_null());
    /* what an approval keeps: the home resolved, and the password only as its hash */
    char hash[AUTH_PWHASH_LEN] = "";
    if (password && !r->approval_id && auth_password_hash(password, hash, &err)) {
        json_decref(change);
        json_decref(body);
        api_fail(r, &err);
        return;
    }
    json_t *kept = json_pack("{s:s}", "name", name);
    if (kind) json_object_set_new(kept, "kind", json_string(kind));
    if (home.id[0]) json_object_set_new(kept, "tenant", json_string(home.name));
    if (hash[0]) json_object_set_new(kept, "password_hash", json_string(hash));
    else if (pwhash) json_object_set_new(kept, "password_hash", json_string(pwhash));
    char *kept_text = jx_dump(kept);
    json_decref(kept);
    const char *body_text = r->body;
    size_t body_len = r->body_len;
    r->body = kept_text;
    r->body_len = kept_text ? strlen(kept_text) : 0;
    int pending = kept_text ? api_needs_approval(r, "user.create", home.id[0] ? home.name : NULL,
                                                 change)
                            : -1;
    r->body = body_text;
    r->body_len = body_len;
    free(kept_text);
    if (pending < 0 && !r->status) api_error(r, 500, "internal", "out of memory");
    if (pending) {
        sodium_memzero(hash, sizeof hash);
        json_decref(change);
        json_decref(body);
        return;
    }
    if (api_begin(r, STORE_WRITE, &tx)) {
        sodium_memzero(hash, sizeof hash);
        json_decref(change);
        json_decref(body);
        return;
    }
    auth_user_spec spec = {name, kind, hash[0] ? NULL : password, hash[0] ? hash : pwhash,
                           home.id, home.name, r->who->user_id};
    int rc = auth_user_create(tx, &spec, &u, &err);
    sodium_memzero(hash, sizeof hash);
    json_decref(body);
    if (rc) {
        json_decref(change);
        api_abort(r, tx, &err);
        return;
    }
    if (!api_finish(r, tx, 201, change)) api_reply(r, 201, auth_user_json(&u));
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

/*
 * A new password for an administrator set by someone else: the sensitive
 * operation user.credentials, whatever the policy lists.  Files the approval
 * (the request kept with the password only as its hash, `hash` filled) and
 * answers 202: returns 1.  0: approvals are not armed yet (the bootstrap
 * rule), go ahead with `hash`.  -1: answered with an error.
 */
static int credentials_approval(api_req *r, const auth_user *u, const char *password,
                                const int *disabled, char hash[AUTH_PWHASH_LEN]) {
    gp_err err = GP_ERR_INIT;
    if (auth_password_hash(password, hash, &err)) {
        api_fail(r, &err);
        return -1;
    }
    json_t *kept = json_pack("{s:s}", "password_hash", hash);
    if (disabled) json_object_set_new(kept, "disabled", json_boolean(*disabled));
    char *kept_text = jx_dump(kept);
    json_decref(kept);
    json_t *change = json_pack("{s:s,s:s}", "user", u->name, "password", "reset");
    const char *body_text = r->body;
    size_t body_len = r->body_len;
    r->body = kept_text;
    r->body_len = kept_text ? strlen(kept_text) : 0;
    int pending = kept_text ? api_needs_approval(r, "user.credentials", u->home[0] ? u->home : NULL,
                                                 change)
                            : -1;
    r->body = body_text;
    r->body_len = body_len;
    free(kept_text);
    json_decref(change);
    if (pending < 0 && !r->status) api_error(r, 500, "internal", "out of memory");
    return pending;
}

void h_user_update(api_req *r) {
    static const char *const fields[] = {"disabled", "password", "current_password", NULL};
    /* an approved request replays the body kept with the approval: its password is a hash */
    static const char *const replay_fields[] = {"disabled", "password_hash", NULL};
    gp_err err = GP_ERR_INIT;
    json_t *body;
    store_tx *tx;
    auth_user u, check;
    int level, disabled = 0, has_disabled = 0, admin_target = 0;
    const char *password = NULL, *pwhash = NULL, *current = NULL;
    char hash[AUTH_PWHASH_LEN] = "";
    if (api_begin(r, STORE_WRITE, &tx)) return;
    if (load_user(r, tx, &u, &level)) {
        store_rollback(tx);
        return;
    }
    if (level < SEE_SELF || (level == SEE_READ)) {
        store_rollback(tx);
        api_error(r, 403, "forbidden", "your role does not allow this action here");
        return;
    }
    if (node_refused(r, tx, &u)) return;
    if (api_body(r, &body)) {
        store_rollback(tx);
        return;
    }
    if (jx_only_fields(body, r->approval_id ? replay_fields : fields, &err) ||
        jx_get_bool(body, "disabled", 0, &disabled, &has_disabled, &err) ||
        (r->approval_id ? jx_get_str(body, "password_hash", 0, &pwhash, &err)
                        : jx_get_str(body, "password", 0, &password, &err)) ||
        jx_get_str(body, "current_password", 0, &current, &err)) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    int self = strcmp(u.id, r->who->user_id) == 0;
    int rc = GP_OK;
    if (has_disabled && level != SEE_ADMIN) {
        rc = gp_err_set(&err, GP_EFORBIDDEN, "only an administrator of this user may disable it");
    } else if (has_disabled && self) {
        rc = gp_err_set(&err, GP_EINVALID, "you cannot disable yourself");
    } else if (pwhash && level != SEE_ADMIN) {
        rc = gp_err_set(&err, GP_EFORBIDDEN, "only an administrator of this user may reset it");
    } else if (password && level != SEE_ADMIN) {
        /* changing one's own password needs the current one */
        if (!current || auth_login_check(tx, u.name, current, &check, &err) != GP_OK)
            rc = gp_err_set(&err, GP_EFORBIDDEN, "current_password is wrong or missing");
    }
    if (!rc && (password || pwhash) && strcmp(u.kind, "user") != 0)
        rc = gp_err_set(&err, GP_EINVALID, "service accounts have no password");
    if (!rc && password && !self) rc = privileged(tx, &u, &admin_target, &err);
    if (rc) {
        json_decref(body);
        api_abort(r, tx, &err);
        return;
    }
    if (admin_target && !r->approval_id) {
        /* taking over an administrator's account: a second security-admin approves it */
        store_rollback(tx);
        int pending = credentials_approval(r, &u, password, has_disabled ? &disabled : NULL, hash);
        json_decref(body);
        body = NULL;
        if (pending || api_begin(r, STORE_WRITE, &tx)) {
            sodium_memzero(hash, sizeof hash);
            return;
        }
        password = NULL; /* waived (approvals not armed yet): go ahead with the hash */
        pwhash = hash;
    }
    if (password || pwhash)
        rc = auth_user_set_password(tx, u.id, password, pwhash, r->who->user_id, &err);
    sodium_memzero(hash, sizeof hash);
    int revoked = 0;
    /* a new password ends the sessions of the old one (one's own change keeps the token
     * that made it, so the caller is not logged out by their own change) */
    if (!rc && (password || pwhash))
        rc = auth_user_revoke_tokens(tx, u.id, self ? r->who->token_id : NULL, &revoked, &err);
    if (!rc && has_disabled) rc = auth_user_set_disabled(tx, u.id, disabled, &err);
    int changed_password = password || pwhash;
    json_decref(body);
    if (rc) {
        api_abort(r, tx, &err);
        return;
    }
    json_t *change = json_object();
    if (has_disabled) json_object_set_new(change, "disabled", json_boolean(disabled));
    if (changed_password) {
        json_object_set_new(change, "password", json_string("changed"));
        json_object_set_new(change, "tokens_revoked", json_integer(revoked));
    }
    if (api_finish(r, tx, 200, change)) return;
    u.disabled = has_disabled ? disabled : u.disabled;
    api_reply(r, 200, auth_user_json(&u));
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
