/*
 * test_authz.c - the role x scope x action check.
 *
 * Rather than restating the matrix, these tests check the properties the
 * design promises: nothing crosses a tenant boundary, expired bindings grant
 * nothing, hidden and forbidden are told apart exactly as the API needs, and
 * each role reaches what DESIGN.md's table says and no more.
 */
#include "testutil.h"

#include "../../src/auth/authz.h"

#define NOW 1000000000LL

static authz_binding global(authz_role r) {
    return (authz_binding){r, SCOPE_GLOBAL, NULL, NULL, 0};
}
static authz_binding tenant(authz_role r, const char *t) {
    return (authz_binding){r, SCOPE_TENANT, t, NULL, 0};
}
static authz_binding project(authz_role r, const char *t, const char *p) {
    return (authz_binding){r, SCOPE_PROJECT, t, p, 0};
}

static authz_decision chk(authz_binding b, authz_action a, const char *t, const char *p) {
    authz_target tg = {t, p};
    return authz_check(&b, 1, a, &tg, NOW);
}

static void no_tenant_crossing(void **state) {
    (void)state;
    /* every tenant- or project-scoped role, every action, on another tenant: hidden */
    for (int r = 0; r < ROLE__COUNT; r++) {
        for (int a = 0; a < ACT__COUNT; a++) {
            assert_int_equal(chk(tenant((authz_role)r, "A"), (authz_action)a, "B", NULL),
                             AUTHZ_HIDDEN);
            assert_int_equal(chk(tenant((authz_role)r, "A"), (authz_action)a, "B", "pb"),
                             AUTHZ_HIDDEN);
            assert_int_equal(chk(project((authz_role)r, "A", "pa"), (authz_action)a, "B", "pb"),
                             AUTHZ_HIDDEN);
            /* a project binding never reaches a sibling project */
            authz_decision d = chk(project((authz_role)r, "A", "pa"), (authz_action)a, "A", "pz");
            assert_int_not_equal(d, AUTHZ_ALLOW);
        }
    }
}

static void expiry(void **state) {
    (void)state;
    authz_binding b = global(ROLE_PLATFORM_ADMIN);
    authz_target g = {NULL, NULL};
    b.expires_us = NOW + 1;
    assert_int_equal(authz_check(&b, 1, ACT_TENANT_CREATE, &g, NOW), AUTHZ_ALLOW);
    b.expires_us = NOW;
    assert_int_equal(authz_check(&b, 1, ACT_TENANT_CREATE, &g, NOW), AUTHZ_DENY);
    authz_binding t = tenant(ROLE_TENANT_ADMIN, "A");
    authz_target ta = {"A", NULL};
    t.expires_us = NOW - 5;
    assert_int_equal(authz_check(&t, 1, ACT_PROJECT_CREATE, &ta, NOW), AUTHZ_HIDDEN);
}

static void platform_admin(void **state) {
    (void)state;
    authz_binding b = global(ROLE_PLATFORM_ADMIN);
    assert_int_equal(chk(b, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_TENANT_READ, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    /* audit belongs to security-admins */
    assert_int_equal(chk(b, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(b, ACT_AUDIT_VERIFY, NULL, NULL), AUTHZ_DENY);
}

static void security_admin(void **state) {
    (void)state;
    authz_binding b = global(ROLE_SECURITY_ADMIN);
    assert_int_equal(chk(b, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_AUDIT_VERIFY, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_AUDIT_READ_TENANT, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(b, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(b, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
}

static void ops_engineer_sees_no_tenant_data(void **state) {
    (void)state;
    authz_binding b = global(ROLE_OPS_ENGINEER);
    assert_int_equal(chk(b, ACT_TENANT_READ, "A", NULL), AUTHZ_HIDDEN);
    assert_int_equal(chk(b, ACT_PROJECT_READ, "A", "p"), AUTHZ_HIDDEN);
    assert_int_equal(chk(b, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(b, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_DENY);
}

static void tenant_roles(void **state) {
    (void)state;
    authz_binding ta = tenant(ROLE_TENANT_ADMIN, "A");
    assert_int_equal(chk(ta, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_TENANT_READ, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_PROJECT_READ, "A", "any"), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_AUDIT_READ_TENANT, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(ta, ACT_AUDIT_READ_ALL, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(ta, ACT_TENANT_CREATE, NULL, NULL), AUTHZ_DENY);

    authz_binding v = tenant(ROLE_VIEWER, "A");
    assert_int_equal(chk(v, ACT_TENANT_READ, "A", NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(v, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    assert_int_equal(chk(v, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
    assert_int_equal(chk(v, ACT_AUDIT_READ_TENANT, "A", NULL), AUTHZ_DENY);
}

static void project_roles(void **state) {
    (void)state;
    authz_binding pu = project(ROLE_PROJECT_USER, "A", "p");
    assert_int_equal(chk(pu, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    /* its tenant is visible (403, not 404) but not readable or changeable */
    assert_int_equal(chk(pu, ACT_TENANT_READ, "A", NULL), AUTHZ_DENY);
    assert_int_equal(chk(pu, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
    /* a sibling project is invisible */
    assert_int_equal(chk(pu, ACT_PROJECT_READ, "A", "q"), AUTHZ_HIDDEN);
    authz_binding pa = project(ROLE_PROJECT_ADMIN, "A", "p");
    assert_int_equal(chk(pa, ACT_PROJECT_READ, "A", "p"), AUTHZ_ALLOW);
    assert_int_equal(chk(pa, ACT_PROJECT_CREATE, "A", NULL), AUTHZ_DENY);
}

static void knowledge_bases(void **state) {
    (void)state;
    /* tenant KBs are tenant data: global roles do not read them */
    assert_int_equal(chk(global(ROLE_OPS_ENGINEER), ACT_KB_READ, "A", NULL), AUTHZ_HIDDEN);
    assert_int_equal(chk(global(ROLE_PLATFORM_ADMIN), ACT_KB_READ, "A", "p"), AUTHZ_DENY);
    assert_int_equal(chk(global(ROLE_SECURITY_ADMIN), ACT_KB_WRITE, "A", NULL), AUTHZ_DENY);
    /* operations KBs: ops-engineers write, platform- and security-admins read */
    assert_int_equal(chk(global(ROLE_OPS_ENGINEER), ACT_KB_OPS_WRITE, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(global(ROLE_PLATFORM_ADMIN), ACT_KB_OPS_READ, NULL, NULL), AUTHZ_ALLOW);
    assert_int_equal(chk(global(ROLE_PLATFORM_ADMIN), ACT_KB_OPS_WRITE, NULL, NULL), AUTHZ_DENY);
    assert_int_equal(chk(tenant(ROLE_TENANT_ADMIN, "A"), ACT_KB_OPS_READ, NULL, NULL), AUTHZ_DENY);
    /* vendors reach ops KBs only through their work orders (h_kb.c), never the matrix */
    authz_binding v = {ROLE_VENDOR, SCOPE_VENDOR, NULL, NULL, 0};
    assert_int_equal(chk(v, ACT_KB_OPS_READ, NULL, NULL), AUTHZ_DENY);
    /* project roles: their project's KBs; a tenant-wide KB is decided in h_kb.c */
    authz_binding pu = project(ROLE_PROJECT_USER, "A", "p"), pa = project(ROLE_PROJECT_ADMIN, "A", "p");
    assert_int_equal(chk(pu, ACT_KB_READ, "A", "p"), AUTHZ_ALLOW);
    assert_int_equal(chk(pu, ACT_KB_WRITE, "A", "p"), AUTHZ_DENY);
    assert_int_equal(chk(pu, ACT_KB_READ, "A", "q"), AUTHZ_HIDDEN);
    assert_int_equal(chk(pa, ACT_KB_MANAGE, "A", "p"), AUTHZ_ALLOW);
    assert_int_equal(chk(pa, ACT_KB_MANAGE, "A", NULL), AUTHZ_DENY);
    assert_int_equal(chk(tenant(ROLE_TENANT_ADMIN, "A"), ACT_KB_MANAGE, "A", "q"), AUTHZ_ALLOW);
    assert_int_equal(chk(tenant(ROLE_VIEWER, "A"), ACT_KB_READ, "A", "q"), AUTHZ_ALLOW);
    assert_int_equal(chk(tenant(ROLE_VIEWER, "A"), ACT_KB_WRITE, "A", NULL), AUTHZ_DENY);
}

static void nothing_without_bindings(void **state) {
    (void)state;
    authz_target g = {NULL, NULL}, t = {"A", NULL}, p = {"A", "p"};
    for (int a = 0; a < ACT__COUNT; a++) {
        assert_int_equal(authz_check(NULL, 0, (authz_action)a, &g, NOW), AUTHZ_DENY);
        assert_int_equal(authz_check(NULL, 0, (authz_action)a, &t, NOW), AUTHZ_HIDDEN);
        assert_int_equal(authz_check(NULL, 0, (authz_action)a, &p, NOW), AUTHZ_HIDDEN);
    }
}

static void several_bindings_add_up(void **state) {
    (void)state;
    authz_binding bs[2] = {project(ROLE_PROJECT_USER, "A", "p"), tenant(ROLE_VIEWER, "B")};
    authz_target pa = {"A", "p"}, tb = {"B", NULL}, tc = {"C", NULL};
    assert_int_equal(authz_check(bs, 2, ACT_PROJECT_READ, &pa, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_check(bs, 2, ACT_TENANT_READ, &tb, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_check(bs, 2, ACT_PROJECT_CREATE, &tb, NOW), AUTHZ_DENY);
    assert_int_equal(authz_check(bs, 2, ACT_TENANT_READ, &tc, NOW), AUTHZ_HIDDEN);
}

static void names_roundtrip(void **state) {
    (void)state;
    for (int r = 0; r < ROLE__COUNT; r++)
        assert_int_equal(authz_role_parse(authz_role_name((authz_role)r)), r);
    assert_int_equal(authz_role_parse("root"), -1);
    assert_int_equal(authz_scope_parse("tenant"), SCOPE_TENANT);
    assert_int_equal(authz_scope_parse("galaxy"), -1);
    for (int a = 0; a < ACT__COUNT; a++)
        assert_string_not_equal(authz_action_name((authz_action)a), "unknown");
}

/*
 * Every role x scope x action x target, against the contract written out
 * independently here (the table in docs/roles.md): which roles may do what,
 * and the scope rules of authz.h.  A change to the matrix must change both.
 */
static const char *const contract[ACT__COUNT] = {
    /* one letter per role: P S O T A U V D (platform, security, ops, tenant-admin,
     * project-admin, project-user, viewer, vendor) */
    [ACT_TENANT_CREATE] = "P",       [ACT_TENANT_READ] = "PSTV",
    [ACT_PROJECT_CREATE] = "PT",     [ACT_PROJECT_READ] = "PSTAUV",
    [ACT_AUDIT_READ_ALL] = "S",      [ACT_AUDIT_READ_TENANT] = "ST",
    [ACT_AUDIT_VERIFY] = "S",        [ACT_AUDIT_EXPORT] = "ST",
    [ACT_MEMBER_READ] = "PSTAV",     [ACT_MEMBER_MANAGE] = "PSTA",
    [ACT_USER_CREATE] = "PT",        [ACT_USER_READ_ALL] = "PS",
    [ACT_POLICY_READ] = "PS",        [ACT_POLICY_CHANGE] = "S",
    [ACT_APPROVAL_DECIDE] = "S",     [ACT_APPROVAL_READ_ALL] = "S",
    [ACT_VENDOR_MANAGE] = "O",
    [ACT_NODE_READ] = "PSO",         [ACT_NODE_MANAGE] = "O",
    [ACT_GPU_MOVE] = "PO",
    [ACT_POOL_MANAGE] = "P",         [ACT_CLASS_MANAGE] = "P",
    [ACT_WORKORDER_MANAGE] = "O",
    [ACT_JOB_SUBMIT] = "TAU",        [ACT_JOB_READ] = "PSTAUV",
    [ACT_JOB_MANAGE] = "TA",         [ACT_QUOTA_TENANT_SET] = "P",
    [ACT_QUOTA_PROJECT_SET] = "PT",  [ACT_PRIORITY_MANAGE] = "P",
    [ACT_MODEL_READ] = "PSTV",       [ACT_MODEL_MANAGE] = "PT",
    [ACT_MODEL_PUBLISH] = "P",       [ACT_APP_MANAGE] = "TA",
    [ACT_KEY_READ] = "PSTAUV",       [ACT_KEY_MANAGE] = "TAU",
    [ACT_USAGE_READ] = "PSTAUV",
    [ACT_RATECARD_MANAGE] = "P",
    [ACT_KB_READ] = "TAUV",          [ACT_KB_WRITE] = "TA",
    [ACT_KB_MANAGE] = "TA",          [ACT_KB_OPS_READ] = "PSO",
    [ACT_KB_OPS_WRITE] = "O",
    [ACT_RESERVATION_MANAGE] = "P",  [ACT_MAINTENANCE_MANAGE] = "PO",
};

static int contract_allows(authz_role r, authz_action a) {
    static const char letters[ROLE__COUNT] = {'P', 'S', 'O', 'T', 'A', 'U', 'V', 'D'};
    return contract[a] && strchr(contract[a], letters[r]) != NULL;
}

static void exhaustive_matrix(void **state) {
    (void)state;
    /* bindings at every scope, targets everywhere */
    const authz_binding bindings_for[4][1] = {
        {{0, SCOPE_GLOBAL, NULL, NULL, 0}},
        {{0, SCOPE_TENANT, "A", NULL, 0}},
        {{0, SCOPE_PROJECT, "A", "p", 0}},
        {{0, SCOPE_VENDOR, NULL, NULL, 0}},
    };
    const authz_target targets[] = {
        {NULL, NULL}, {"A", NULL}, {"A", "p"}, {"A", "q"}, {"B", NULL}, {"B", "r"},
    };
    int checked = 0;
    for (int r = 0; r < ROLE__COUNT; r++)
        for (int s = 0; s < 4; s++)
            for (int a = 0; a < ACT__COUNT; a++)
                for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
                    authz_binding b = bindings_for[s][0];
                    b.role = (authz_role)r;
                    const authz_target *tg = &targets[t];
                    /* scope coverage per authz.h */
                    int covers = s == 0 ||
                                 (s == 1 && tg->tenant_id && strcmp(tg->tenant_id, "A") == 0) ||
                                 (s == 2 && tg->project_id && strcmp(tg->tenant_id, "A") == 0 &&
                                  strcmp(tg->project_id, "p") == 0);
                    int visible = !tg->tenant_id ||
                                  (s == 0 && (r == ROLE_PLATFORM_ADMIN || r == ROLE_SECURITY_ADMIN)) ||
                                  (s == 1 && strcmp(tg->tenant_id, "A") == 0) ||
                                  (s == 2 && strcmp(tg->tenant_id, "A") == 0 &&
                                   (!tg->project_id || strcmp(tg->project_id, "p") == 0));
                    authz_decision want = contract_allows((authz_role)r, (authz_action)a) && covers
                                              ? AUTHZ_ALLOW
                                              : visible ? AUTHZ_DENY : AUTHZ_HIDDEN;
                    authz_decision got = authz_check(&b, 1, (authz_action)a, tg, NOW);
                    if (got != want)
                        fprintf(stderr, "role %s scope %d action %s target %s/%s: got %d want %d\n",
                                authz_role_name((authz_role)r), s,
                                authz_action_name((authz_action)a),
                                tg->tenant_id ? tg->tenant_id : "-",
                                tg->project_id ? tg->project_id : "-", got, want);
                    assert_int_equal(got, want);
                    checked++;
                }
    assert_int_equal(checked, ROLE__COUNT * 4 * ACT__COUNT * 6);
}

static void grants_and_user_admin(void **state) {
    (void)state;
    authz_target g = {NULL, NULL}, ta = {"A", NULL}, tb = {"B", NULL}, pa = {"A", "p"};
    authz_binding plat = global(ROLE_PLATFORM_ADMIN), sec = global(ROLE_SECURITY_ADMIN);
    authz_binding tadm = tenant(ROLE_TENANT_ADMIN, "A"), padm = project(ROLE_PROJECT_ADMIN, "A", "p");
    /* dominance */
    assert_int_equal(authz_can_grant(&plat, 1, ROLE_OPS_ENGINEER, &g, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_can_grant(&plat, 1, ROLE_SECURITY_ADMIN, &g, NOW), AUTHZ_DENY);
    assert_int_equal(authz_can_grant(&sec, 1, ROLE_SECURITY_ADMIN, &g, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_can_grant(&sec, 1, ROLE_TENANT_ADMIN, &ta, NOW), AUTHZ_DENY);
    assert_int_equal(authz_can_grant(&tadm, 1, ROLE_TENANT_ADMIN, &ta, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_can_grant(&tadm, 1, ROLE_PROJECT_USER, &pa, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_can_grant(&tadm, 1, ROLE_TENANT_ADMIN, &tb, NOW), AUTHZ_HIDDEN);
    assert_int_equal(authz_can_grant(&tadm, 1, ROLE_PLATFORM_ADMIN, &g, NOW), AUTHZ_DENY);
    assert_int_equal(authz_can_grant(&tadm, 1, ROLE_SECURITY_ADMIN, &g, NOW), AUTHZ_DENY);
    assert_int_equal(authz_can_grant(&padm, 1, ROLE_PROJECT_ADMIN, &pa, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_can_grant(&padm, 1, ROLE_TENANT_ADMIN, &ta, NOW), AUTHZ_DENY);
    for (int r = 0; r < ROLE__COUNT; r++) {
        /* nobody grants vendor roles through membership, and nobody outranks itself */
        assert_false(authz_role_dominates((authz_role)r, ROLE_VENDOR));
        assert_false(authz_role_dominates(ROLE_PROJECT_USER, (authz_role)r));
        assert_false(authz_role_dominates(ROLE_VIEWER, (authz_role)r));
        assert_false(authz_role_dominates(ROLE_OPS_ENGINEER, (authz_role)r));
    }
    /* scopes */
    assert_true(authz_role_fits_scope(ROLE_VIEWER, SCOPE_TENANT));
    assert_true(authz_role_fits_scope(ROLE_VIEWER, SCOPE_PROJECT));
    assert_false(authz_role_fits_scope(ROLE_VIEWER, SCOPE_GLOBAL));
    assert_false(authz_role_fits_scope(ROLE_PLATFORM_ADMIN, SCOPE_TENANT));
    assert_false(authz_role_fits_scope(ROLE_TENANT_ADMIN, SCOPE_PROJECT));
    /* administering users: see user_ownership below */
}

static int admin_of(const authz_binding *caller, int nc, const authz_binding *tb, int nt,
                    const char *home, int node) {
    authz_user u = {tb, nt, home, node};
    return authz_can_admin_user(caller, nc, &u, NOW);
}

/* The ownership model, exhaustively: every caller role at every scope, against users homed
 * on the platform, in A or in B, with bindings in their home, in another tenant, globally. */
static void user_ownership(void **state) {
    (void)state;
    const char *homes[] = {NULL, "", "A", "B"};
    authz_binding shapes[][2] = {
        {tenant(ROLE_VIEWER, "A"), project(ROLE_PROJECT_USER, "A", "p")}, /* all in A */
        {tenant(ROLE_VIEWER, "A"), tenant(ROLE_VIEWER, "B")},             /* A and B */
        {tenant(ROLE_VIEWER, "B"), project(ROLE_PROJECT_ADMIN, "B", "q")}, /* all in B */
        {global(ROLE_OPS_ENGINEER), tenant(ROLE_VIEWER, "A")},            /* a global role */
        {global(ROLE_SECURITY_ADMIN), tenant(ROLE_VIEWER, "A")},          /* security-admin */
        {global(ROLE_PLATFORM_ADMIN), global(ROLE_PLATFORM_ADMIN)},
        {{ROLE_VENDOR, SCOPE_VENDOR, NULL, NULL, 0}, tenant(ROLE_VIEWER, "A")},
    };
    int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int r = 0; r < ROLE__COUNT; r++) {
        for (int sc = SCOPE_GLOBAL; sc <= SCOPE_VENDOR; sc++) {
            if (!authz_role_fits_scope((authz_role)r, (authz_scope)sc)) continue;
            authz_binding c = {(authz_role)r, (authz_scope)sc, sc == SCOPE_TENANT || sc == SCOPE_PROJECT ? "A" : NULL,
                               sc == SCOPE_PROJECT ? "p" : NULL, 0};
            for (size_t h = 0; h < sizeof homes / sizeof homes[0]; h++) {
                for (int k = 0; k <= nshapes; k++) {
                    const authz_binding *tb = k < nshapes ? shapes[k] : NULL;
                    int nt = k < nshapes ? 2 : 0;
                    int sec_target = k == 4;
                    int global_target = k == 3 || k == 4 || k == 5 || k == 6;
                    int expect;
                    if (sec_target) expect = r == ROLE_SECURITY_ADMIN;
                    else if (r == ROLE_PLATFORM_ADMIN) expect = 1;
                    else if (r == ROLE_TENANT_ADMIN)
                        expect = homes[h] && strcmp(homes[h], "A") == 0 && !global_target;
                    else expect = 0;
                    int got = admin_of(&c, 1, tb, nt, homes[h], 0);
                    if (got != expect)
                        fail_msg("role %s at %s, home %s, shape %d: got %d, want %d",
                                 authz_role_name((authz_role)r), authz_scope_name((authz_scope)sc),
                                 homes[h] ? homes[h] : "(null)", k, got, expect);
                    /* a node account: nobody, whoever asks */
                    assert_false(admin_of(&c, 1, tb, nt, homes[h], 1));
                }
            }
        }
    }
    /* the attack of issue 18: B's admin granted a role in B to A's (or the platform's) user */
    authz_binding tadm_b = tenant(ROLE_TENANT_ADMIN, "B"), tadm_a = tenant(ROLE_TENANT_ADMIN, "A");
    authz_binding only_b[1] = {tenant(ROLE_VIEWER, "B")};
    assert_false(admin_of(&tadm_b, 1, only_b, 1, "A", 0));
    assert_false(admin_of(&tadm_b, 1, only_b, 1, "", 0));
    assert_false(admin_of(&tadm_b, 1, NULL, 0, "A", 0)); /* role-less user of A */
    /* ... and A's admin is not locked out of its own user */
    assert_true(admin_of(&tadm_a, 1, only_b, 1, "A", 0));
    /* expired roles count for nothing, on either side */
    authz_binding old_a = tadm_a, old_plat = global(ROLE_PLATFORM_ADMIN);
    old_a.expires_us = NOW;
    old_plat.expires_us = NOW - 1;
    assert_false(admin_of(&old_a, 1, NULL, 0, "A", 0));
    assert_false(admin_of(&old_plat, 1, NULL, 0, "", 0));
    authz_binding old_ops = global(ROLE_OPS_ENGINEER);
    old_ops.expires_us = NOW;
    assert_true(admin_of(&tadm_a, 1, &old_ops, 1, "A", 0));
    authz_binding old_sec = global(ROLE_SECURITY_ADMIN);
    old_sec.expires_us = NOW;
    assert_true(admin_of(&tadm_a, 1, &old_sec, 1, "A", 0));
    /* several caller bindings add up: admin of B and of A administers A's user */
    authz_binding both[2] = {tadm_b, tadm_a};
    assert_true(admin_of(both, 2, only_b, 1, "A", 0));
    /* no target at all */
    assert_false(authz_can_admin_user(&tadm_a, 1, NULL, NOW));
}

/* Who decides for a home, and which grants need an invitation. */
static void homes_and_invitations(void **state) {
    (void)state;
    const char *homes[] = {NULL, "", "A", "B"};
    for (int r = 0; r < ROLE__COUNT; r++) {
        for (int sc = SCOPE_GLOBAL; sc <= SCOPE_VENDOR; sc++) {
            if (!authz_role_fits_scope((authz_role)r, (authz_scope)sc)) continue;
            authz_binding c = {(authz_role)r, (authz_scope)sc,
                               sc == SCOPE_TENANT || sc == SCOPE_PROJECT ? "A" : NULL,
                               sc == SCOPE_PROJECT ? "p" : NULL, 0};
            for (size_t h = 0; h < sizeof homes / sizeof homes[0]; h++) {
                int platform = r == ROLE_PLATFORM_ADMIN;
                int home_a = homes[h] && strcmp(homes[h], "A") == 0;
                int decides = platform || (r == ROLE_TENANT_ADMIN && home_a);
                assert_int_equal(authz_decides_home(&c, 1, homes[h], NOW), decides);
                /* a grant in A: direct for A's own users, else only for who decides */
                assert_int_equal(authz_grant_needs_invitation(&c, 1, homes[h], "A", NOW),
                                 !(home_a || decides));
                /* a grant in B: B's own users need none */
                int home_b = homes[h] && strcmp(homes[h], "B") == 0;
                assert_int_equal(authz_grant_needs_invitation(&c, 1, homes[h], "B", NOW),
                                 !(home_b || decides));
                c.expires_us = NOW; /* expired: decides nothing */
                assert_false(authz_decides_home(&c, 1, homes[h], NOW));
                c.expires_us = 0;
            }
        }
    }
    /* a platform user is decided by platform-admins only */
    authz_binding tadm = tenant(ROLE_TENANT_ADMIN, "A");
    assert_false(authz_decides_home(&tadm, 1, "", NOW));
    assert_true(authz_grant_needs_invitation(&tadm, 1, "", "A", NOW));
    assert_false(authz_decides_home(NULL, 0, "A", NOW));
}

/* Owner rules (issue 20): the roles over a project, the owner-or-manager rule, tenant-wide
 * objects shared with the tenant's project members. */
static void owner_rules(void **state) {
    (void)state;
    authz_binding bs[] = {
        global(ROLE_OPS_ENGINEER),
        tenant(ROLE_TENANT_ADMIN, "A"),
        project(ROLE_PROJECT_USER, "A", "pa"),
        project(ROLE_PROJECT_ADMIN, "A", "pb"),
        project(ROLE_PROJECT_USER, "B", "pc"),
        {ROLE_PROJECT_ADMIN, SCOPE_PROJECT, "A", "pa", NOW}, /* expired at NOW */
        {ROLE_VENDOR, SCOPE_VENDOR, NULL, NULL, 0},
    };
    int n = (int)(sizeof bs / sizeof *bs);
    authz_role out[8];
    authz_target pa = {"A", "pa"};
    assert_int_equal(authz_roles_covering(bs, n, &pa, NOW, out, 8), 3);
    assert_int_equal(out[0], ROLE_OPS_ENGINEER);
    assert_int_equal(out[1], ROLE_TENANT_ADMIN);
    assert_int_equal(out[2], ROLE_PROJECT_USER);
    /* counted past cap, written up to it */
    out[1] = ROLE__COUNT;
    assert_int_equal(authz_roles_covering(bs, n, &pa, NOW, out, 1), 3);
    assert_int_equal(out[1], ROLE__COUNT);
    /* before the expiry the expired binding counts too */
    assert_int_equal(authz_roles_covering(bs, n, &pa, NOW - 1, out, 8), 4);
    /* another tenant's project: the global role and that project's own */
    authz_target pc = {"B", "pc"};
    assert_int_equal(authz_roles_covering(bs, n, &pc, NOW, out, 8), 2);
    assert_int_equal(out[1], ROLE_PROJECT_USER);
    authz_target pz = {"C", "pz"};
    assert_int_equal(authz_roles_covering(bs, n, &pz, NOW, out, 8), 1);
    assert_int_equal(authz_roles_covering(NULL, 0, &pz, NOW, out, 8), 0);

    /* owner or manager */
    authz_binding user = project(ROLE_PROJECT_USER, "A", "pa");
    assert_int_equal(authz_owner_or(&user, 1, "u", "u", ACT_JOB_MANAGE, &pa, NOW), AUTHZ_ALLOW);
    assert_int_equal(authz_owner_or(&user, 1, "u", "v", ACT_JOB_MANAGE, &pa, NOW), AUTHZ_DENY);
    assert_int_equal(authz_owner_or(&user, 1, NULL, NULL, ACT_JOB_MANAGE, &pa, NOW), AUTHZ_DENY);
    assert_int_equal(authz_owner_or(&user, 1, "u", "v", ACT_JOB_MANAGE, &pz, NOW), AUTHZ_HIDDEN);
    authz_binding padm = project(ROLE_PROJECT_ADMIN, "A", "pa");
    assert_int_equal(authz_owner_or(&padm, 1, "a", "v", ACT_JOB_MANAGE, &pa, NOW), AUTHZ_ALLOW);
    authz_target pb = {"A", "pb"};
    assert_int_equal(authz_owner_or(&padm, 1, "a", "v", ACT_JOB_MANAGE, &pb, NOW),
                     authz_check(&padm, 1, ACT_JOB_MANAGE, &pb, NOW));
    /* the owner rule is exactly authz_check for anyone not the owner, every action */
    for (int a = 0; a < ACT__COUNT; a++)
        for (int i = 0; i < n; i++)
            assert_int_equal(authz_owner_or(&bs[i], 1, "x", "y", (authz_action)a, &pa, NOW),
                             authz_check(&bs[i], 1, (authz_action)a, &pa, NOW));

    /* tenant-wide objects */
    assert_true(authz_tenant_wide(&user, 1, ACT_KB_READ, "A", NOW));   /* a member of pa */
    assert_false(authz_tenant_wide(&user, 1, ACT_KB_READ, "B", NOW));  /* not B's */
    assert_false(authz_tenant_wide(&user, 1, ACT_KB_READ, NULL, NOW));
    authz_binding gone = {ROLE_PROJECT_USER, SCOPE_PROJECT, "A", "pa", NOW};
    assert_false(authz_tenant_wide(&gone, 1, ACT_KB_READ, "A", NOW));  /* expired */
    assert_true(authz_tenant_wide(&gone, 1, ACT_KB_READ, "A", NOW - 1));
    authz_binding ta = tenant(ROLE_TENANT_ADMIN, "A");
    assert_true(authz_tenant_wide(&ta, 1, ACT_KB_MANAGE, "A", NOW));
    authz_binding ops = global(ROLE_OPS_ENGINEER);
    assert_int_equal(authz_tenant_wide(&ops, 1, ACT_KB_READ, "A", NOW),
                     authz_check(&ops, 1, ACT_KB_READ, &(authz_target){"A", NULL}, NOW) ==
                         AUTHZ_ALLOW);
    /* a project binding grants on the tenant-wide object exactly what it grants on its own
     * project, for every role and action */
    for (int r = 0; r < ROLE__COUNT; r++)
        for (int a = 0; a < ACT__COUNT; a++) {
            authz_binding b = project((authz_role)r, "A", "pq");
            int own = authz_check(&b, 1, (authz_action)a, &(authz_target){"A", "pq"}, NOW) ==
                      AUTHZ_ALLOW;
            assert_int_equal(authz_tenant_wide(&b, 1, (authz_action)a, "A", NOW), own);
            assert_false(authz_tenant_wide(&b, 1, (authz_action)a, "B", NOW));
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_tenant_crossing),
        cmocka_unit_test(expiry),
        cmocka_unit_test(platform_admin),
        cmocka_unit_test(security_admin),
        cmocka_unit_test(ops_engineer_sees_no_tenant_data),
        cmocka_unit_test(tenant_roles),
        cmocka_unit_test(project_roles),
        cmocka_unit_test(knowledge_bases),
        cmocka_unit_test(nothing_without_bindings),
        cmocka_unit_test(several_bindings_add_up),
        cmocka_unit_test(names_roundtrip),
        cmocka_unit_test(user_ownership),
        cmocka_unit_test(homes_and_invitations),
        cmocka_unit_test(exhaustive_matrix),
        cmocka_unit_test(grants_and_user_admin),
        cmocka_unit_test(owner_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
