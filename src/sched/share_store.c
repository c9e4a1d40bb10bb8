/*
 * share_store.c - guarantees as the store holds them, for the views (share.h,
 * bottom): whether a running job is borrowed, and a tenant's guaranteed /
 * in use / borrowed / lent figures.  The scheduler decides the same rules on
 * its snapshot (sched.c, step 6); this reads them back the same way: a
 * tenant's open bindings summed per job in start order (started_at, then the
 * job id), each job borrowed once the sum with it exceeds the guarantee.
 * Also the reclaim cap's policy and the stops it counts (share.h).
 */
#include "share.h"

#include "reservations.h"

#include "../core/jsonx.h"
#include "../core/gtime.h"
#include "../quota/quota.h"

#include <stdlib.h>
#include <string.h>

/* A tenant's quota as stored, and its share figures. */
typedef struct tq {
    char id[64];
    quota_set q;
    int64_t used;
    int64_t cused[QUOTA_MAX_GCLASSES]; /* of it, the work of each class with a guarantee */
    int64_t pused[QUOTA_MAX_GCLASSES]; /* and of the rest, what runs in each pool with one */
} tq;

/* What this file reads, by name (STORE_COLS / STORE_COL_ENUM: store.h). */
#define TQUOTA_COLUMNS(X) \
    X(TQ_TENANT, "tenant_id") \
    X(TQ_SPEC, "spec")
enum { TQUOTA_COLUMNS(STORE_COL_ENUM) TQ__N };
#define PQUOTA_COLUMNS(X) \
    X(PQ_PROJECT, "project_id") \
    X(PQ_SPEC, "spec")
enum { PQUOTA_COLUMNS(STORE_COL_ENUM) PQ__N };
#define TJOB_COLUMNS(X) \
    X(TJ_ID, "j.id") \
    X(TJ_PROJECT, "j.project_id") \
    X(TJ_DEMAND, "SUM(b.weight_milli)") \
    X(TJ_RSV, "COALESCE(j.reservation_id, '')") \
    X(TJ_CLASS, "j.class") \
    X(TJ_POOL, "COALESCE((SELECT n.pool FROM bindings f JOIN nodes n ON n.name = f.node WHERE f.job_id = j.id AND f.end_us IS NULL ORDER BY f.unit, f.start_us, f.id LIMIT 1), '')")
enum { TJOB_COLUMNS(STORE_COL_ENUM) TJ__N };
#define JSTATE_COLUMNS(X) \
    X(JS_TENANT, "tenant_id") \
    X(JS_STATE, "state")
enum { JSTATE_COLUMNS(STORE_COL_ENUM) JS__N };
#define VUSE_COLUMNS(X) \
    X(VU_TENANT, "b.tenant_id") \
    X(VU_CLASS, "j.class") \
    X(VU_GPUS, "SUM(b.weight_milli)") \
    X(VU_POOL, "COALESCE(n.pool, '')") \
    X(VU_RSV, "COALESCE(j.reservation_id, '')")
enum { VUSE_COLUMNS(STORE_COL_ENUM) VU__N };
#define RECENT_COLUMNS(X) \
    X(RU_RECENT, "u.recent") \
    X(RU_BORROWED, "u.borrowed") \
    X(RU_AT, "u.at_us") \
    X(RU_HALF_LIFE, "p.borrow_half_life_s")
enum { RECENT_COLUMNS(STORE_COL_ENUM) RU__N };

/* Every tenant that has a stored ceiling: *out (caller frees), *n, *any (a guarantee set). */
static int load_quotas(store_tx *tx, tq **out, int *n, int *any, gp_err *err) {
    store_stmt *s;
    int cap = 0, rc;
    *out = NULL;
    *n = *any = 0;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(TQUOTA_COLUMNS) " FROM quotas WHERE project_id = '' ORDER BY tenant_id",
                          "")))
        return rc;
    while ((rc = store_step(s, err)) > 0) {
        json_t *j = json_loads(store_text(s, TQ_SPEC), 0, NULL);
        quota_set q;
        int bad = !j || quota_parse(j, &q, NULL) != GP_OK;
        json_decref(j);
        if (bad) continue; /* (gpupool check reports a spec that does not parse) */
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            tq *m = realloc(*out, sizeof *m * (size_t)cap);
            if (!m) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            *out = m;
        }
        tq *t = &(*out)[(*n)++];
        memset(t, 0, sizeof *t);
        snprintf(t->id, sizeof t->id, "%s", store_text(s, TQ_TENANT));
        t->q = q;
        *any |= q.guarantee != QUOTA_NONE || q.ngclass > 0 || q.ngpool > 0;
    }
    store_done(s);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    return GP_OK;
}

static int64_t gtee_of(const quota_set *q) { return q->guarantee == QUOTA_NONE ? 0 : q->guarantee; }

/* What a tenant's running work outside its reservations in force may use of its guarantee
 * before it borrows (sched.h, step 7a): a reservation counts against the guarantee, so what
 * they hold comes off it; their own work is never borrowed. */
static int64_t outside_gtee(int64_t g, const rsv_force *f) {
    if (!f) return g;
    return g > f->held ? g - f->held : 0;
}

static const quota_set *find_quota(const tq *ts, int n, const char *tenant_id) {
    for (int i = 0; i < n; i++)
        if (strcmp(ts[i].id, tenant_id) == 0) return &ts[i].q;
    return NULL;
}

/* One running job of a tenant, as the store's marks read it. */
typedef struct tjob {
    char id[64], project[64];
    int64_t demand; /* GPU milli of its open bindings */
    int dom;        /* the guarantee it counts against: k < ngclass the quota's gclass_*[k]
                       (sched.h step 6c), ngclass + k its gpool_*[k] (step 6d, by the pool of
                       its first card), -1: the tenant's own */
    unsigned char borrowed;
} tjob;

/*
 * Tenant tenant_id's running jobs (those with open bindings), in start order, each marked as
 * the scheduler marks them (sched.h, steps 6, 6b, 6c and 7a): the work of its reservations in
 * force (f) owned; the work of a class with a guarantee of its own (cq's gclass_*, cq NULL:
 * none) by share_mark over that guarantee; the rest by share_mark_parts over guarantee g less
 * what the reservations hold, with its projects' parts.  *out (caller frees), *n, *borrowed
 * (what the borrowed ones hold).
 */
static int tenant_marks(store_tx *tx, const char *tenant_id, int64_t g, const quota_set *cq,
                        const rsv_force *f, tjob **out, int *n, int64_t *borrowed, gp_err *err) {
    store_stmt *s;
    tjob *js = NULL;
    int nj = 0, cap = 0, np = 0, pcap = 0, rc;
    char(*pid)[64] = NULL;
    quota_set *pqs = NULL; /* each project's quota: its parts of each domain */
    int64_t *part = NULL, *dem = NULL, *used = NULL;
    int *proj = NULL;
    unsigned char *mk = NULL;
    *out = NULL;
    *n = 0;
    *borrowed = 0;
    /* the projects' parts (a project quota's guaranteed_gpus) */
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(PQUOTA_COLUMNS) " FROM quotas WHERE tenant_id = ?"
                          " AND project_id <> '' ORDER BY project_id",
                          "s", tenant_id)))
        return rc;
    while ((rc = store_step(s, err)) > 0) {
        json_t *j = json_loads(store_text(s, PQ_SPEC), 0, NULL);
        quota_set q;
        int ok = j && quota_parse(j, &q, NULL) == GP_OK;
        json_decref(j);
        if (!ok || ((q.guarantee == QUOTA_NONE || q.guarantee <= 0) && !q.ngclass && !q.ngpool))
            continue; /* no part of anything */
        if (np == pcap) {
            pcap = pcap ? pcap * 2 : 8;
            void *m1 = realloc(pid, sizeof *pid * (size_t)pcap);
            if (m1) pid = m1;
            void *m2 = realloc(part, sizeof *part * (size_t)(pcap + 1));
            if (m2) part = m2;
            void *m3 = realloc(pqs, sizeof *pqs * (size_t)pcap);
            if (m3) pqs = m3;
            if (!m1 || !m2 || !m3) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
        }
        snprintf(pid[np], sizeof pid[np], "%s", store_text(s, PQ_PROJECT));
        pqs[np++] = q;
    }
    store_done(s);
    if (rc < 0) goto done;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(TJOB_COLUMNS) " FROM bindings b"
                          " JOIN jobs j ON j.id = b.job_id"
                          " WHERE b.end_us IS NULL AND b.tenant_id = ?"
                          " GROUP BY j.id, j.project_id, j.started_at, j.reservation_id, j.class"
                          " ORDER BY COALESCE(j.started_at, 0), j.id",
                          "s", tenant_id)))
        goto done;
    int nr = 0; /* of js[0..nj): the reservations' first, marked owned, not counted */
    while ((rc = store_step(s, err)) > 0) {
        if (nj == cap) {
            cap = cap ? cap * 2 : 16;
            tjob *m = realloc(js, sizeof *m * (size_t)cap);
            if (!m) {
                rc = gp_err_set(err, GP_ENOMEM, NULL);
                break;
            }
            js = m;
        }
        tjob *t = &js[nj++];
        memset(t, 0, sizeof *t);
        snprintf(t->id, sizeof t->id, "%s", store_text(s, TJ_ID));
        snprintf(t->project, sizeof t->project, "%s", store_text(s, TJ_PROJECT));
        t->demand = store_int(s, TJ_DEMAND);
        int inrsv = rsv_force_has(f, store_text(s, TJ_RSV)), kc = -1, kp = -1;
        if (cq) {
            kc = quota_gclass(cq, store_text(s, TJ_CLASS));
            kp = quota_gpool(cq, store_text(s, TJ_POOL));
        }
        t->dom = share_domain(inrsv, kc, kp >= 0 ? cq->ngclass + kp : -1);
        if (inrsv) { /* keep start order among the rest */
            tjob keep = *t;
            memmove(&js[nr + 1], &js[nr], sizeof *js * (size_t)(nj - 1 - nr));
            js[nr++] = keep;
        }
    }
    store_done(s);
    if (rc < 0) goto done;
    int m = nj - nr;
    dem = malloc(sizeof *dem * (size_t)(m + 1));
    proj = malloc(sizeof *proj * (size_t)(m + 1));
    used = malloc(sizeof *used * (size_t)(np + 1));
    mk = malloc((size_t)m + 1);
    if (!dem || !proj || !used || !mk) {
        rc = gp_err_set(err, GP_ENOMEM, NULL);
        goto done;
    }
    /* each domain's jobs in start order: the tenant's own (-1), then each class guarantee,
     * then each pool's; its projects' parts of it (step 6b) */
    for (int dm = -1; dm < (cq ? cq->ngclass + cq->ngpool : 0); dm++) {
        int k = 0;
        for (int p = 0; p < np; p++) {
            int64_t x = QUOTA_NONE;
            int e;
            if (dm < 0) x = pqs[p].guarantee;
            else if (dm < cq->ngclass && (e = quota_gclass(&pqs[p], cq->gclass_name[dm])) >= 0)
                x = pqs[p].gclass_g[e];
            else if (dm >= cq->ngclass &&
                     (e = quota_gpool(&pqs[p], cq->gpool_name[dm - cq->ngclass])) >= 0)
                x = pqs[p].gpool_g[e];
            part[p] = x == QUOTA_NONE || x < 0 ? 0 : x;
        }
        for (int i = 0; i < m; i++) {
            const tjob *t = &js[nr + i];
            if (t->dom != dm) continue;
            dem[k] = t->demand;
            proj[k] = -1;
            for (int p = 0; p < np; p++)
                if (!strcmp(pid[p], t->project) && part[p] > 0) proj[k] = p;
            k++;
        }
        int64_t gd = dm < 0 ? outside_gtee(g, f)
                     : dm < cq->ngclass ? cq->gclass_g[dm] : cq->gpool_g[dm - cq->ngclass];
        *borrowed += share_mark_parts(gd, part, np, proj, dem, k, used, mk);
        for (int i = 0, x = 0; i < m; i++)
            if (js[nr + i].dom == dm) js[nr + i].borrowed = mk[x++];
    }
    *out = js;
    *n = nj;
    js = NULL;
    rc = GP_OK;
done:
    free(js);
    free(pid);
    free(pqs);
    free(part);
    free(dem);
    free(used);
    free(proj);
    free(mk);
    return rc < 0 ? rc : GP_OK;
}

int share_job_borrowed(store_tx *tx, const char *job_id, int *borrowed, gp_err *err) {
    store_stmt *s;
    char tenant[64] = "";
    int running = 0, rc;
    *borrowed = 0;
    if ((rc = store_query(tx, &s, err, "SELECT " STORE_COLS(JSTATE_COLUMNS) " FROM jobs WHERE id = ?", "s",
                          job_id)))
        return rc;
    if ((rc = store_step(s, err)) > 0) {
        snprintf(tenant, sizeof tenant, "%s", store_text(s, JS_TENANT));
        running = strcmp(store_text(s, JS_STATE), "running") == 0;
    }
    store_done(s);
    if (rc < 0 || !running) return rc < 0 ? rc : GP_OK;
    tq *ts;
    int n, any, nf = 0, nj = 0;
    if ((rc = load_quotas(tx, &ts, &n, &any, err))) return rc;
    const quota_set *q = find_quota(ts, n, tenant);
    int64_t g = q ? gtee_of(q) : 0, sum;
    quota_set cq;
    if (q) cq = *q;
    free(ts);
    if (!any) return GP_OK;
    rsv_force *fs = NULL;
    tjob *js = NULL;
    if ((rc = rsv_forces_load(tx, gt_now_us(), &fs, &nf, err))) return rc;
    rc = tenant_marks(tx, tenant, g, q ? &cq : NULL, rsv_force_of(fs, nf, tenant), &js, &nj, &sum,
                      err);
    for (int i = 0; !rc && i < nj; i++)
        if (!strcmp(js[i].id, job_id)) *borrowed = js[i].borrowed;
    free(js);
    rsv_forces_free(fs, nf);
    return rc;
}

int share_open_marks(store_tx *tx, json_t **out, gp_err *err) {
    store_stmt *s;
    tq *ts;
    int n, any, rc, nt = 0, tcap = 0, nf = 0;
    char(*tids)[64] = NULL;
    rsv_force *fs = NULL;
    *out = NULL;
    if ((rc = load_quotas(tx, &ts, &n, &any, err))) return rc;
    json_t *marks = json_object();
    if (!marks) {
        free(ts);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    if (!any) {
        free(ts);
        *out = marks;
        return GP_OK;
    }
    /* the tenants holding cards, then each one's marks (one statement at a time) */
    rc = store_query(tx, &s, err,
                     "SELECT DISTINCT tenant_id FROM bindings WHERE end_us IS NULL"
                     " ORDER BY tenant_id",
                     "");
    if (!rc) {
        while ((rc = store_step(s, err)) > 0) {
            if (nt == tcap) {
                tcap = tcap ? tcap * 2 : 16;
                void *m = realloc(tids, sizeof *tids * (size_t)tcap);
                if (!m) {
                    rc = gp_err_set(err, GP_ENOMEM, NULL);
                    break;
                }
                tids = m;
            }
            snprintf(tids[nt++], sizeof tids[0], "%s", store_text(s, 0));
        }
        store_done(s);
    }
    if (rc >= 0) rc = rsv_forces_load(tx, gt_now_us(), &fs, &nf, err);
    for (int i = 0; rc >= 0 && i < nt; i++) {
        const quota_set *q = find_quota(ts, n, tids[i]);
        tjob *js;
        int nj;
        int64_t sum;
        if ((rc = tenant_marks(tx, tids[i], q ? gtee_of(q) : 0, q, rsv_force_of(fs, nf, tids[i]),
                               &js, &nj, &sum, err)))
            break;
        for (int k = 0; k < nj; k++)
            json_object_set_new(marks, js[k].id, json_boolean(js[k].borrowed));
        free(js);
    }
    rsv_forces_free(fs, nf);
    free(tids);
    free(ts);
    if (rc < 0) {
        json_decref(marks);
        return rc;
    }
    *out = marks;
    return GP_OK;
}

/* What `tenant_id` borrows now (its marks' sum); project_id non-NULL: what that project's
 * jobs borrow, with *used what they hold.  cq (NULL: none): its class and pool guarantees,
 * and cborrowed[k] (NULL: not wanted) what the work of its k-th (tjob.dom) borrows. */
static int tenant_borrowed(store_tx *tx, const char *tenant_id, const char *project_id, int64_t g,
                           const quota_set *cq, const rsv_force *f, int64_t *out, int64_t *used,
                           int64_t *cborrowed, gp_err *err) {
    tjob *js;
    int nj;
    int64_t sum;
    int rc = tenant_marks(tx, tenant_id, g, cq, f, &js, &nj, &sum, err);
    if (rc) return rc;
    *out = project_id ? 0 : sum;
    if (used) *used = 0;
    for (int i = 0; project_id && i < nj; i++) {
        if (strcmp(js[i].project, project_id)) continue;
        if (js[i].borrowed) *out += js[i].demand;
        if (used) *used += js[i].demand;
    }
    for (int i = 0; cborrowed && i < nj; i++)
        if (js[i].dom >= 0 && js[i].borrowed) cborrowed[js[i].dom] += js[i].demand;
    free(js);
    return GP_OK;
}

static json_t *gpus(int64_t milli) { return json_real((double)milli / 1000.0); }

int share_tenant_view(store_tx *tx, const char *tenant_id, json_t **out, gp_err *err) {
    store_stmt *s;
    tq *ts;
    int n, any, rc, me = -1;
    int64_t capacity = 0, other_used = 0, reserved = 0;
    rsv_force *fs = NULL;
    int nf = 0;
    *out = NULL;
    if ((rc = load_quotas(tx, &ts, &n, &any, err))) return rc;
    if ((rc = rsv_forces_load(tx, gt_now_us(), &fs, &nf, err))) goto done;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(VUSE_COLUMNS) " FROM bindings b"
                          " JOIN jobs j ON j.id = b.job_id LEFT JOIN nodes n ON n.name = b.node"
                          " WHERE b.end_us IS NULL"
                          " GROUP BY b.tenant_id, j.class, n.pool, j.reservation_id",
                          "")))
        goto done;
    while ((rc = store_step(s, err)) > 0) {
        int found = 0;
        for (int i = 0; i < n && !found; i++)
            if (strcmp(ts[i].id, store_text(s, VU_TENANT)) == 0) {
                /* each domain's use, by the round's rule (share_domain): a reservation's work
                 * in force counts in the tenant's own */
                int kc = quota_gclass(&ts[i].q, store_text(s, VU_CLASS)),
                    kp = quota_gpool(&ts[i].q, store_text(s, VU_POOL)),
                    inrsv = rsv_force_has(rsv_force_of(fs, nf, ts[i].id), store_text(s, VU_RSV)),
                    k = share_domain(inrsv, kc, kp >= 0 ? QUOTA_MAX_GCLASSES + kp : -1);
                ts[i].used += store_int(s, VU_GPUS);
                if (k >= QUOTA_MAX_GCLASSES) ts[i].pused[k - QUOTA_MAX_GCLASSES] += store_int(s, VU_GPUS);
                else if (k >= 0) ts[i].cused[k] += store_int(s, VU_GPUS);
                found = 1;
            }
        if (!found) other_used += store_int(s, VU_GPUS); /* a tenant with no stored quota */
    }
    store_done(s);
    if (rc < 0) goto done;
    if ((rc = store_query(tx, &s, err,
                          "SELECT COUNT(*) FROM gpus g JOIN nodes n ON n.id = g.node_id"
                          " WHERE n.state = 'ready' AND n.admin_state = 'none'",
                          "")))
        goto done;
    if ((rc = store_step(s, err)) > 0) capacity = store_int(s, 0) * 1000;
    store_done(s);
    if (rc < 0) goto done;
    for (int i = 0; i < n; i++)
        if (strcmp(ts[i].id, tenant_id) == 0) me = i;
    const quota_set *q = me >= 0 ? &ts[me].q : NULL;
    int64_t used = me >= 0 ? ts[me].used : 0, borrowed = 0, lent = 0;
    int64_t clent[2 * QUOTA_MAX_GCLASSES] = {0}, cborrowed[2 * QUOTA_MAX_GCLASSES] = {0};
    if (me < 0) { /* no stored quota: its use is what its bindings hold */
        if ((rc = store_query(tx, &s, err,
                              "SELECT COALESCE(SUM(weight_milli), 0) FROM bindings"
                              " WHERE end_us IS NULL AND tenant_id = ?",
                              "s", tenant_id)))
            goto done;
        if ((rc = store_step(s, err)) > 0) used = store_int(s, 0);
        store_done(s);
        if (rc < 0) goto done;
    }
    if (any) {
        int64_t g = q ? gtee_of(q) : 0;
        const rsv_force *f = rsv_force_of(fs, nf, tenant_id);
        reserved = f ? f->held : 0;
        if ((rc = tenant_borrowed(tx, tenant_id, NULL, g, q, f, &borrowed, NULL, cborrowed, err)))
            goto done;
        /* lent: share_lent over every tenant's domains (those without a quota borrow all they
         * use): its own guarantee and each class guarantee (sched.h, step 6c); a tenant's
         * reservations in force count against its own, what they hold unused as used (7a) */
        size_t nd = (size_t)n + 1;
        for (int i = 0; i < n; i++) nd += (size_t)ts[i].q.ngclass + (size_t)ts[i].q.ngpool;
        share_tenant *st = calloc(nd + 1, sizeof *st);
        if (!st) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            goto done;
        }
        int k = 0, mine = -1;
        for (int i = 0; i < n; i++) {
            const quota_set *qi = &ts[i].q;
            const rsv_force *fi = rsv_force_of(fs, nf, ts[i].id);
            int64_t gi = gtee_of(qi), own = ts[i].used;
            for (int c = 0; c < qi->ngclass; c++) own -= ts[i].cused[c];
            for (int c = 0; c < qi->ngpool; c++) own -= ts[i].pused[c];
            if (fi && fi->held > gi) gi = fi->held;
            if (i == me) mine = k;
            st[k++] = (share_tenant){gi, gi, qi->guarantee == QUOTA_NONE ? 0 : qi->kept, 1,
                                     own + (fi ? fi->idle : 0), 0, 0};
            for (int c = 0; c < qi->ngclass; c++)
                st[k++] = (share_tenant){qi->gclass_g[c], qi->gclass_g[c], qi->gclass_kept[c], 1,
                                         ts[i].cused[c], 0, 0};
            for (int c = 0; c < qi->ngpool; c++)
                st[k++] = (share_tenant){qi->gpool_g[c], qi->gpool_g[c], qi->gpool_kept[c], 1,
                                         ts[i].pused[c], 0, 0};
        }
        st[k++] = (share_tenant){0, 0, 0, 1, other_used, 0, 0};
        if (mine >= 0) {
            lent = share_lent(st, k, mine, capacity);
            for (int c = 0; c < q->ngclass + q->ngpool; c++) {
                clent[c] = share_lent(st, k, mine + 1 + c, capacity);
                lent += clent[c];
            }
        }
        free(st);
    }
    share_policy pol;
    int64_t recent;
    if ((rc = share_policy_load(tx, &pol, err)) ||
        (rc = share_recent(tx, tenant_id, gt_now_us(), pol.half_life_s, &recent, err)))
        goto done;
    *out = json_pack("{s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:f,s:I,s:b}", "guaranteed_gpus",
                     q && q->guarantee != QUOTA_NONE ? gpus(q->guarantee) : json_null(),
                     "kept_gpus", gpus(q && q->guarantee != QUOTA_NONE ? q->kept : 0),
                     "borrow_weight", (json_int_t)(q ? q->weight : 1), "in_use_gpus", gpus(used),
                     "reserved_gpus", gpus(reserved),
                     "borrowed_gpus", gpus(borrowed), "lent_gpus", gpus(lent),
                     "recent_borrowed_gpu_hours", (double)(recent / 3600) / 1000.0,
                     "borrow_half_life_seconds", (json_int_t)pol.half_life_s, "applies", any);
    json_t *cls = json_array(); /* its class guarantees (sched.h step 6c), its own figures */
    for (int c = 0; *out && cls && q && c < q->ngclass; c++)
        json_array_append_new(
            cls, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "class", q->gclass_name[c],
                           "guaranteed_gpus", gpus(q->gclass_g[c]), "kept_gpus",
                           gpus(q->gclass_kept[c]), "in_use_gpus", gpus(ts[me].cused[c]),
                           "borrowed_gpus", gpus(cborrowed[c]), "lent_gpus", gpus(clent[c])));
    if (!*out || !cls || json_object_set_new(*out, "class_guarantees", cls)) {
        if (!*out) json_decref(cls);
        rc = gp_err_set(err, GP_ENOMEM, NULL);
    }
    json_t *pls = json_array(); /* its pool guarantees (step 6d), likewise */
    for (int c = 0; !rc && pls && q && c < q->ngpool; c++)
        json_array_append_new(
            pls, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "pool", q->gpool_name[c],
                           "guaranteed_gpus", gpus(q->gpool_g[c]), "kept_gpus",
                           gpus(q->gpool_kept[c]), "in_use_gpus", gpus(ts[me].pused[c]),
                           "borrowed_gpus", gpus(cborrowed[q->ngclass + c]), "lent_gpus",
                           gpus(clent[q->ngclass + c])));
    if (!rc && (!pls || json_object_set_new(*out, "pool_guarantees", pls)))
        rc = gp_err_set(err, GP_ENOMEM, NULL);
    else if (rc)
        json_decref(pls);
done:
    rsv_forces_free(fs, nf);
    free(ts);
    return rc < 0 ? rc : GP_OK;
}

/* ---- fair use: recent borrowing ---- */

int64_t share_usage_now(const share_usage *u, int64_t now_us, int64_t half_life_s) {
    if (u->at_us <= 0) return 0;
    return share_decay(u->recent, u->at_us, now_us, half_life_s, u->borrowed);
}

int share_recent(store_tx *tx, const char *tenant_id, int64_t now_us, int64_t policy_half_life_s,
                 int64_t *recent, gp_err *err) {
    store_stmt *s;
    *recent = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(RECENT_COLUMNS) " FROM share_usage u LEFT JOIN pools p ON p.name = u.pool"
                         " WHERE u.tenant_id = ?",
                         "s", tenant_id);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        share_usage u = {store_int(s, RU_RECENT), store_int(s, RU_BORROWED), store_int(s, RU_AT)};
        int64_t hl = store_isnull(s, RU_HALF_LIFE) ? policy_half_life_s : store_int(s, RU_HALF_LIFE);
        int64_t r = share_usage_now(&u, now_us, hl);
        *recent = r > INT64_MAX - *recent ? INT64_MAX : *recent + r;
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int share_usage_save(store_tx *tx, const char *tenant_id, const char *pool,
                     const share_usage *was, int64_t borrowed, int64_t now_us,
                     int64_t half_life_s, gp_err *err) {
    share_usage u = {share_usage_now(was, now_us, half_life_s), borrowed, now_us};
    if (was->at_us <= 0)
        return store_exec(tx, NULL, err,
                          "INSERT INTO share_usage (tenant_id, pool, recent, borrowed, at_us)"
                          " VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant_id, pool) DO NOTHING",
                          "ssiii", tenant_id, pool, u.recent, u.borrowed, u.at_us);
    /* (written as read: another writer since then wins, and the next round folds again) */
    return store_exec(tx, NULL, err,
                      "UPDATE share_usage SET recent = ?, borrowed = ?, at_us = ?"
                      " WHERE tenant_id = ? AND pool = ? AND at_us = ?",
                      "iiissi", u.recent, u.borrowed, u.at_us, tenant_id, pool, was->at_us);
}

/* ---- the reclaim cap ---- */

void share_policy_default(share_policy *p) {
    p->reclaim_cap = 3;
    p->reclaim_window_s = 3600;
    p->half_life_s = SHARE_HALF_LIFE_DEFAULT;
}

int share_policy_apply(json_t *j, share_policy *p, gp_err *err) {
    static const char *const fields[] = {"reclaim_cap", "reclaim_window_seconds",
                                         "borrow_half_life_seconds", NULL};
    share_policy n = *p;
    int64_t v;
    int rc, present;
    if (!json_is_object(j)) return gp_err_set(err, GP_EINVALID, "scheduler policy must be an object");
    if ((rc = jx_only_fields(j, fields, err))) return rc;
    if ((rc = jx_get_int(j, "reclaim_cap", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < 1 || v > SHARE_CAP_MAX)
            return gp_err_set(err, GP_EINVALID, "reclaim_cap must be 1..%d", SHARE_CAP_MAX);
        n.reclaim_cap = (int)v;
    }
    if ((rc = jx_get_int(j, "reclaim_window_seconds", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < SHARE_WINDOW_MIN || v > SHARE_WINDOW_MAX)
            return gp_err_set(err, GP_EINVALID, "reclaim_window_seconds must be %d..%d",
                              SHARE_WINDOW_MIN, SHARE_WINDOW_MAX);
        n.reclaim_window_s = v;
    }
    if ((rc = jx_get_int(j, "borrow_half_life_seconds", 0, &v, &present, err))) return rc;
    if (present) {
        if (v < SHARE_HALF_LIFE_MIN || v > SHARE_HALF_LIFE_MAX)
            return gp_err_set(err, GP_EINVALID, "borrow_half_life_seconds must be %d..%d",
                              SHARE_HALF_LIFE_MIN, SHARE_HALF_LIFE_MAX);
        n.half_life_s = v;
    }
    *p = n;
    return GP_OK;
}

json_t *share_policy_json(const share_policy *p) {
    return json_pack("{s:i,s:I,s:I}", "reclaim_cap", p->reclaim_cap, "reclaim_window_seconds",
                     (json_int_t)p->reclaim_window_s, "borrow_half_life_seconds",
                     (json_int_t)p->half_life_s);
}

int share_policy_load(store_tx *tx, share_policy *out, gp_err *err) {
    store_stmt *s;
    share_policy_default(out);
    int rc = store_query(tx, &s, err,
                         "SELECT value FROM security_policy WHERE key = 'scheduler_policy'", "");
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *j = rc > 0 && store_text(s, 0)[0] ? json_loads(store_text(s, 0), 0, NULL) : NULL;
    store_done(s);
    if (rc < 0) {
        json_decref(j);
        return rc;
    }
    if (j) {
        share_policy p = *out;
        if (share_policy_apply(j, &p, NULL) == GP_OK) *out = p;
        json_decref(j);
    }
    return GP_OK;
}

int share_policy_save(store_tx *tx, const share_policy *p, gp_err *err) {
    json_t *j = share_policy_json(p);
    char *text = j ? jx_dump(j) : NULL;
    json_decref(j);
    if (!text) return gp_err_set(err, GP_ENOMEM, NULL);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO security_policy (key, value) VALUES ('scheduler_policy', ?)"
                        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        "s", text);
    free(text);
    return rc;
}

int share_job_stops(store_tx *tx, const char *job_id, int64_t since_us, int *stops, gp_err *err) {
    store_stmt *s;
    *stops = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT COUNT(DISTINCT end_us) FROM bindings WHERE job_id = ?"
                         " AND end_reason = 'preempted' AND end_us >= ?",
                         "si", job_id, since_us);
    if (rc) return rc;
    if ((rc = store_step(s, err)) > 0) *stops = (int)store_int(s, 0);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int share_chain_max(store_tx *tx, int64_t since_us, int *max, gp_err *err) {
    store_stmt *s;
    *max = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT COALESCE(MAX(n), 0) FROM (SELECT b.job_id, COUNT(DISTINCT b.end_us)"
                         " AS n FROM bindings b JOIN jobs j ON j.id = b.job_id"
                         " WHERE b.end_reason = 'preempted' AND b.end_us >= ?"
                         " AND j.state IN ('queued','admitted','running') GROUP BY b.job_id) c",
                         "i", since_us);
    if (rc) return rc;
    if ((rc = store_step(s, err)) > 0) *max = (int)store_int(s, 0);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int share_project_view(store_tx *tx, const char *tenant_id, const char *project_id, json_t **out,
                       gp_err *err) {
    tq *ts;
    int n, any, nf = 0, rc;
    rsv_force *fs = NULL;
    quota_set pq;
    *out = NULL;
    if ((rc = quota_load(tx, tenant_id, project_id, &pq, err))) return rc;
    if ((rc = load_quotas(tx, &ts, &n, &any, err))) return rc;
    const quota_set *q = find_quota(ts, n, tenant_id);
    int64_t g = q ? gtee_of(q) : 0, borrowed = 0, used = 0;
    int has_t = q && q->guarantee != QUOTA_NONE;
    if ((rc = rsv_forces_load(tx, gt_now_us(), &fs, &nf, err))) goto done;
    if ((rc = tenant_borrowed(tx, tenant_id, project_id, any ? g : INT64_MAX / 4, any ? q : NULL,
                              rsv_force_of(fs, nf, tenant_id), &borrowed, &used, NULL, err)))
        goto done;
    if (!any) borrowed = 0;
    *out = json_pack("{s:o,s:o,s:o,s:o,s:b}", "guaranteed_gpus",
                     pq.guarantee != QUOTA_NONE ? gpus(pq.guarantee) : json_null(),
                     "tenant_guaranteed_gpus", has_t ? gpus(q->guarantee) : json_null(),
                     "in_use_gpus", gpus(used), "borrowed_gpus", gpus(borrowed), "applies", any);
    /* its parts of its tenant's guarantees of a class and in a pool (steps 6b-6d) */
    json_t *cls = json_array(), *pls = json_array();
    for (int c = 0; cls && c < pq.ngclass; c++) {
        int k = q ? quota_gclass(q, pq.gclass_name[c]) : -1;
        json_array_append_new(cls, json_pack("{s:s,s:o,s:o}", "class", pq.gclass_name[c],
                                             "guaranteed_gpus", gpus(pq.gclass_g[c]),
                                             "tenant_guaranteed_gpus",
                                             k >= 0 ? gpus(q->gclass_g[k]) : json_null()));
    }
    for (int c = 0; pls && c < pq.ngpool; c++) {
        int k = q ? quota_gpool(q, pq.gpool_name[c]) : -1;
        json_array_append_new(pls, json_pack("{s:s,s:o,s:o}", "pool", pq.gpool_name[c],
                                             "guaranteed_gpus", gpus(pq.gpool_g[c]),
                                             "tenant_guaranteed_gpus",
                                             k >= 0 ? gpus(q->gpool_g[k]) : json_null()));
    }
    if (*out) { /* (set_new takes each, added or not) */
        int bad = !cls || !pls;
        bad |= json_object_set_new(*out, "class_guarantees", cls) != 0;
        bad |= json_object_set_new(*out, "pool_guarantees", pls) != 0;
        if (bad) rc = gp_err_set(err, GP_ENOMEM, NULL);
    } else {
        json_decref(cls);
        json_decref(pls);
        rc = gp_err_set(err, GP_ENOMEM, NULL);
    }
done:
    rsv_forces_free(fs, nf);
    free(ts);
    return rc < 0 ? rc : GP_OK;
}
