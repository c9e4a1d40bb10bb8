/*
 * ledger.c - monthly token quotas (reserve before forwarding, settle after)
 * and the gateway's usage records (see gateway.h).
 *
 * token_ledger keeps, per scope (key, project, tenant) and month, the
 * tokens used and those reserved by requests in flight; token_holds keeps
 * each open reservation so it can be settled exactly once, or released if
 * the gateway died mid-request.
 *
 * Invariant: for every scope and month, reserved = the sum of the amounts
 * of the open holds that name it.
 *
 * A gateway's leases are holds too (gw_hold_grow / gw_hold_release, sized in
 * lease.c, kept in runtime.c): one per key and month and process, grown in
 * one write transaction when its requests need more, consumed by the usage
 * batches that record what they used.
 *
 * Row locks (issue 39: the gateway's writes run STORE_WRITE_ROWS, store.h; on
 * PostgreSQL servers sharing the database write side by side): nothing here
 * decides from a figure it read unless the read locked its row (hold_lock,
 * ledger_lock; plain increments need no read).  Every writer takes its locks
 * in one order, so none waits crosswise for another:
 *   1. token_holds rows, by id;
 *   2. token_ledger rows, by scope (key, project, tenant), id, month: a
 *      transaction gathers its ledger changes in an lset and applies them
 *      last, sorted (lset_apply);
 *   3. usage_hourly rows, in by_hour's order.
 * (rate_counts rows belong to one process each: runtime.c.)
 */
#include "gateway.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../quota/quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gw_month(int64_t now_us, char out[8]) {
    time_t t = (time_t)(now_us / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    unsigned y = (unsigned)(tm.tm_year + 1900) % 10000u, m = (unsigned)(tm.tm_mon + 1) % 100u;
    snprintf(out, 8, "%04u-%02u", y, m);
}

/* A ledger row's counts, as ledger_row reads them (STORE_COLS). */
#define LEDGER_COLUMNS(X) X(LC_USED, "used") X(LC_RESERVED, "reserved")
enum { LEDGER_COLUMNS(STORE_COL_ENUM) LC__N };

static int ledger_row(store_tx *tx, const char *scope, const char *id, const char *month,
                      int64_t *used, int64_t *reserved, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(LEDGER_COLUMNS)
                         " FROM token_ledger WHERE scope = ? AND id = ?"
                         " AND month = ?",
                         "sss", scope, id, month);
    if (rc) return rc;
    *used = *reserved = 0;
    rc = store_step(s, err);
    if (rc > 0) {
        *used = store_int(s, LC_USED);
        *reserved = store_int(s, LC_RESERVED);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/*
 * ledger_row for a write transaction: the row is locked until the transaction ends
 * (PostgreSQL: made when missing, with zeros, so that there is a row to lock: two
 * servers' first grants of a month must not both find nothing and both grant).
 */
static int ledger_lock(store_tx *tx, const char *scope, const char *id, const char *month,
                       int64_t *used, int64_t *reserved, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         store_sql(tx,
                                   "SELECT " STORE_COLS(LEDGER_COLUMNS) " FROM token_ledger"
                                   " WHERE scope = ? AND id = ? AND month = ?",
                                   "INSERT INTO token_ledger (scope, id, month, used, reserved)"
                                   " VALUES (?,?,?,0,0) ON CONFLICT (scope, id, month) DO UPDATE"
                                   " SET used = token_ledger.used RETURNING "
                                   STORE_COLS(LEDGER_COLUMNS)),
                         "sss", scope, id, month);
    if (rc) return rc;
    *used = *reserved = 0;
    rc = store_step(s, err);
    if (rc > 0) {
        *used = store_int(s, LC_USED);
        *reserved = store_int(s, LC_RESERVED);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int gw_ledger_get(store_tx *tx, const char *scope, const char *id, int64_t now_us, int64_t *used,
                  int64_t *reserved, gp_err *err) {
    char month[8];
    gw_month(now_us, month);
    return ledger_row(tx, scope, id, month, used, reserved, err);
}

/* the three scopes a hold counts in, in the order of its ids */
static const char *const hold_scopes[3] = {"key", "project", "tenant"};

/*
 * Add `used` and `reserved` (either may be negative) to a ledger row,
 * saturating within [0, GW_TOKENS_MAX]: the deltas are clamped to
 * [-GW_TOKENS_MAX, GW_TOKENS_MAX] first, so the SQL sum of a stored figure and
 * a delta never overflows a 64-bit integer, and the result is cut to the range.
 */
static int ledger_add(store_tx *tx, const char *scope, const char *id, const char *month,
                      int64_t used, int64_t reserved, gp_err *err) {
    used = used < -GW_TOKENS_MAX ? -GW_TOKENS_MAX : used > GW_TOKENS_MAX ? GW_TOKENS_MAX : used;
    reserved = reserved < -GW_TOKENS_MAX   ? -GW_TOKENS_MAX
               : reserved > GW_TOKENS_MAX ? GW_TOKENS_MAX
                                          : reserved;
    int64_t M = GW_TOKENS_MAX, u0 = used < 0 ? 0 : used, r0 = reserved < 0 ? 0 : reserved;
    return store_exec(tx, NULL, err,
                      "INSERT INTO token_ledger (scope, id, month, used, reserved) VALUES (?,?,?,?,?)"
                      " ON CONFLICT (scope, id, month) DO UPDATE SET"
                      " used = CASE WHEN token_ledger.used + ? > ? THEN ?"
                      " WHEN token_ledger.used + ? < 0 THEN 0 ELSE token_ledger.used + ? END,"
                      " reserved = CASE WHEN token_ledger.reserved + ? > ? THEN ?"
                      " WHEN token_ledger.reserved + ? < 0 THEN 0 ELSE token_ledger.reserved + ? END",
                      "sssiiiiiiiiiiii", scope, id, month, u0, r0, used, M, M, used, used, reserved,
                      M, M, reserved, reserved);
}

/* A transaction's changes to ledger rows, applied last in the rows' order (see the top). */
typedef struct ldelta {
    int rank; /* of hold_scopes */
    char id[RND_ID_LEN], month[8];
    int64_t used, reserved;
} ldelta;
typedef struct lset {
    ldelta *d;
    size_t n, cap;
} lset;
#define LSET_INIT {NULL, 0, 0}

static void lset_release(lset *s) {
    free(s->d);
    s->d = NULL;
    s->n = s->cap = 0;
}

/* Add used/reserved to scope `rank`'s row (id, month), once applied. */
static int lset_add(lset *s, int rank, const char *id, const char *month, int64_t used,
                    int64_t reserved, gp_err *err) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        ldelta *nd = realloc(s->d, nc * sizeof *nd);
        if (!nd) return gp_err_set(err, GP_ENOMEM, NULL);
        s->d = nd;
        s->cap = nc;
    }
    ldelta *d = &s->d[s->n++];
    d->rank = rank;
    snprintf(d->id, sizeof d->id, "%s", id);
    snprintf(d->month, sizeof d->month, "%s", month);
    d->used = used;
    d->reserved = reserved;
    return GP_OK;
}

/* The same change to a hold's three rows (key, project, tenant). */
static int lset_add3(lset *s, const char *const ids[3], const char *month, int64_t used,
                     int64_t reserved, gp_err *err) {
    int rc = GP_OK;
    for (int i = 0; i < 3 && !rc; i++) rc = lset_add(s, i, ids[i], month, used, reserved, err);
    return rc;
}

static int by_row(const void *a, const void *b) {
    const ldelta *x = a, *y = b;
    int c = (x->rank > y->rank) - (x->rank < y->rank);
    if (!c) c = strcmp(x->id, y->id);
    if (!c) c = strcmp(x->month, y->month);
    return c;
}

static int64_t delta_add(int64_t a, int64_t b) {
    int64_t v = gw_sat_add(a, b);
    return v < -GW_TOKENS_MAX ? -GW_TOKENS_MAX : v > GW_TOKENS_MAX ? GW_TOKENS_MAX : v;
}

/*
 * Apply the changes, one statement per row, in the rows' order.  A row's changes are
 * summed first: within one transaction they all have one sign per figure (growths add to
 * reserved; settling takes from it and adds to used), so the sum saturates as the changes
 * one by one would.  The set is emptied.
 */
static int lset_apply(store_tx *tx, lset *s, gp_err *err) {
    int rc = GP_OK;
    if (s->n) qsort(s->d, s->n, sizeof *s->d, by_row);
    for (size_t i = 0; i < s->n && !rc;) {
        size_t j = i + 1;
        int64_t used = s->d[i].used, reserved = s->d[i].reserved;
        for (; j < s->n && !by_row(&s->d[i], &s->d[j]); j++) {
            used = delta_add(used, s->d[j].used);
            reserved = delta_add(reserved, s->d[j].reserved);
        }
        if (used || reserved)
            rc = ledger_add(tx, hold_scopes[s->d[i].rank], s->d[i].id, s->d[i].month, used,
                            reserved, err);
        i = j;
    }
    s->n = 0;
    return rc;
}

int gw_reserve(store_tx *tx, const gw_key *k, int64_t amount, int64_t now_us,
               char hold[RND_ID_LEN], gp_err *err) {
    amount = gw_tokens_clamp(amount);
    char month[8];
    gw_month(now_us, month);
    struct {
        const char *scope, *id, *what;
        int64_t quota;
    } lv[3] = {{"key", k->id, "this key's", k->tokens_month ? k->tokens_month : QUOTA_NONE},
               {"project", k->project_id, "the project's", k->project_tokens_month},
               {"tenant", k->tenant_id, "the tenant's", k->tenant_tokens_month}};
    for (int i = 0; i < 3; i++) { /* each row locked, in the rows' order, quota or not */
        int64_t used, reserved;
        int rc = ledger_lock(tx, lv[i].scope, lv[i].id, month, &used, &reserved, err);
        if (rc) return rc;
        if (lv[i].quota == QUOTA_NONE) continue;
        if (!gw_quota_fits(used, reserved, amount, lv[i].quota))
            return gp_err_set(err, GP_EFORBIDDEN,
                              "You exceeded %s monthly token quota of %lld tokens: %lld are used "
                              "this month and %lld are held for requests being served, so the "
                              "%lld this request needs do not fit.",
                              lv[i].what, (long long)lv[i].quota, (long long)used,
                              (long long)reserved, (long long)amount);
    }
    rnd_id(hold);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO token_holds (id, key_id, project_id, tenant_id, month, amount,"
                        " at) VALUES (?,?,?,?,?,?,?)",
                        "sssssii", hold, k->id, k->project_id, k->tenant_id, month, amount, now_us);
    for (int i = 0; i < 3 && !rc; i++) rc = ledger_add(tx, lv[i].scope, lv[i].id, month, 0, amount, err);
    return rc;
}

/* A token hold, locked (hold_lock) for its amount alone. */
static int hold_lock_amount(store_tx *tx, const char *hold, gp_err *err);

int gw_quota_room(store_tx *tx, const gw_key *k, const char *hold, int64_t now_us, gw_room *out,
                  gp_err *err) {
    char month[8];
    gw_month(now_us, month);
    if (hold) { /* the hold first (the rows' order: see the top) */
        int rc = hold_lock_amount(tx, hold, err);
        if (rc) return rc;
    }
    struct {
        const char *scope, *id, *what;
        int64_t quota;
    } lv[3] = {{"key", k->id, "this key's", k->tokens_month ? k->tokens_month : QUOTA_NONE},
               {"project", k->project_id, "the project's", k->project_tokens_month},
               {"tenant", k->tenant_id, "the tenant's", k->tenant_tokens_month}};
    memset(out, 0, sizeof *out);
    out->room = GW_TOKENS_MAX;
    for (int i = 0; i < 3; i++) { /* each row locked, in the rows' order, quota or not */
        int64_t used, reserved;
        int rc = ledger_lock(tx, lv[i].scope, lv[i].id, month, &used, &reserved, err);
        if (rc) return rc;
        if (lv[i].quota == QUOTA_NONE) continue;
        int64_t q = gw_tokens_clamp(lv[i].quota);
        int64_t taken = gw_tokens_clamp(gw_sat_add(gw_tokens_clamp(used), gw_tokens_clamp(reserved)));
        int64_t room = q > taken ? q - taken : 0;
        if (!out->what || room < out->room) {
            out->room = room;
            out->what = lv[i].what;
            out->used = used;
            out->reserved = reserved;
            out->quota = lv[i].quota;
        }
    }
    return GP_OK;
}

int gw_hold_grow(store_tx *tx, const gw_key *k, const char *hold, int64_t amount, int64_t now_us,
                 gp_err *err) {
    amount = gw_tokens_clamp(amount);
    char month[8];
    gw_month(now_us, month);
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE token_holds SET amount = CASE WHEN amount + ? > ? THEN ?"
                        " ELSE amount + ? END, at = ? WHERE id = ?",
                        "iiiiis", amount, (int64_t)GW_TOKENS_MAX, (int64_t)GW_TOKENS_MAX, amount,
                        now_us, hold);
    if (!rc && !changes)
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO token_holds (id, key_id, project_id, tenant_id, month, amount,"
                        " at) VALUES (?,?,?,?,?,?,?)",
                        "sssssii", hold, k->id, k->project_id, k->tenant_id, month, amount, now_us);
    /* the ledger rows after the hold, key, project, tenant: the rows' order */
    const char *ids[3] = {k->id, k->project_id, k->tenant_id};
    for (int i = 0; i < 3 && !rc; i++) rc = ledger_add(tx, hold_scopes[i], ids[i], month, 0, amount, err);
    return rc;
}

/* A hold's row: its key, project and tenant ids, month and amount.  OUT: *found, 0 when the
 * hold is gone (settled already, or released as stale). */
typedef struct hold_row {
    char ids[3][RND_ID_LEN]; /* key, project, tenant */
    char month[8];
    int64_t amount;
} hold_row;

/* A token hold, as hold_read reads it (STORE_COLS). */
#define HOLD_COLUMNS(X)                                                                   \
    X(HC_KEY, "key_id")                                                                   \
    X(HC_PROJECT, "project_id")                                                           \
    X(HC_TENANT, "tenant_id")                                                             \
    X(HC_MONTH, "month")                                                                  \
    X(HC_AMOUNT, "amount")
enum { HOLD_COLUMNS(STORE_COL_ENUM) HC__N };

/* Read hold `hold`, locking its row until the transaction ends. */
static int hold_lock(store_tx *tx, const char *hold, hold_row *h, int *found, gp_err *err) {
    *found = 0;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         STORE_FOR_UPDATE(tx, "SELECT " STORE_COLS(HOLD_COLUMNS)
                                              " FROM token_holds WHERE id = ?"),
                         "s", hold);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        *found = 1;
        static const int col[3] = {HC_KEY, HC_PROJECT, HC_TENANT}; /* the order of h->ids */
        for (int i = 0; i < 3; i++) snprintf(h->ids[i], RND_ID_LEN, "%s", store_text(s, col[i]));
        snprintf(h->month, sizeof h->month, "%s", store_text(s, HC_MONTH));
        h->amount = gw_tokens_clamp(store_int(s, HC_AMOUNT));
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int hold_lock_amount(store_tx *tx, const char *hold, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         STORE_FOR_UPDATE(tx, "SELECT amount FROM token_holds WHERE id = ?"), "s",
                         hold);
    if (rc) return rc;
    rc = store_step(s, err);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/*
 * A lease's usage: `used` into the month's use of its key, project and
 * tenant; as much of it as the lease still holds out of `reserved` and the
 * lease.  OUT: *found, 0 when the lease was gone (released as stale).
 */
static int lease_consume(store_tx *tx, const char *hold, int64_t used, int64_t now_us, int *found,
                         lset *ls, gp_err *err) {
    hold_row h;
    int rc = hold_lock(tx, hold, &h, found, err);
    if (rc || !*found) return rc;
    used = gw_tokens_clamp(used);
    int64_t take = used < h.amount ? used : h.amount;
    const char *ids[3] = {h.ids[0], h.ids[1], h.ids[2]};
    rc = lset_add3(ls, ids, h.month, used, -take, err);
    if (!rc)
        rc = store_exec(tx, NULL, err, "UPDATE token_holds SET amount = ?, at = ? WHERE id = ?",
                        "iis", h.amount - take, now_us, hold);
    return rc;
}

/*
 * Move a hold's amount out of `reserved`, `used` into used (into `ls`, to
 * apply), and drop the hold.  OUT (optional): *found, 0 when the hold was gone
 * (settled already, or released as stale).
 */
static int settle(store_tx *tx, const char *hold, int64_t used, int count_used, int *found,
                  lset *ls, gp_err *err) {
    int have;
    hold_row h;
    int rc = hold_lock(tx, hold, &h, &have, err);
    if (found) *found = have;
    if (rc || !have) return rc;
    used = gw_tokens_clamp(used);
    const char *ids[3] = {h.ids[0], h.ids[1], h.ids[2]};
    rc = lset_add3(ls, ids, h.month, count_used ? used : 0, -h.amount, err);
    if (!rc) rc = store_exec(tx, NULL, err, "DELETE FROM token_holds WHERE id = ?", "s", hold);
    return rc;
}

int gw_settle(store_tx *tx, const char *hold, int64_t used, gp_err *err) {
    lset ls = LSET_INIT;
    int rc = settle(tx, hold, gw_tokens_clamp(used), 1, NULL, &ls, err);
    if (!rc) rc = lset_apply(tx, &ls, err);
    lset_release(&ls);
    return rc;
}

int gw_hold_release(store_tx *tx, const char *hold, gp_err *err) {
    return gw_holds_release(tx, &hold, 1, err);
}

static int by_id(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int gw_holds_release(store_tx *tx, const char *const *holds, size_t n, gp_err *err) {
    if (!n) return GP_OK;
    const char **sorted = malloc(n * sizeof *sorted);
    if (!sorted) return gp_err_set(err, GP_ENOMEM, NULL);
    memcpy(sorted, holds, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_id); /* the holds' order (see the top) */
    lset ls = LSET_INIT;
    int rc = GP_OK;
    for (size_t i = 0; i < n && !rc; i++) rc = settle(tx, sorted[i], 0, 0, NULL, &ls, err);
    if (!rc) rc = lset_apply(tx, &ls, err);
    lset_release(&ls);
    free(sorted);
    return rc;
}

int gw_expire_holds(store_tx *tx, int64_t older_than_us, int *count, gp_err *err) {
    store_stmt *s;
    *count = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT id FROM token_holds WHERE at < ? ORDER BY id LIMIT 64", "i",
                         older_than_us);
    if (rc) return rc;
    char ids[64][RND_ID_LEN];
    int n = 0;
    while ((rc = store_step(s, err)) > 0 && n < 64) snprintf(ids[n++], RND_ID_LEN, "%s", store_text(s, 0));
    store_done(s);
    if (rc < 0) return rc;
    lset ls = LSET_INIT;
    int found = 0;
    for (int i = 0; i < n && !rc; i++) {
        /* gone meanwhile (its process settled it): not counted */
        if (!(rc = settle(tx, ids[i], 0, 0, &found, &ls, err)) && found) (*count)++;
    }
    if (!rc) rc = lset_apply(tx, &ls, err);
    lset_release(&ls);
    return rc;
}

/* A record's figures, clamped: never negative or overflowing, whoever filled it. */
typedef struct rec_fig {
    const gw_usage *u;
    int64_t pt, ct, used;
    int clipped;
} rec_fig;

static rec_fig figures(const gw_usage *u) {
    rec_fig f = {u, gw_tokens_clamp(u->prompt_tokens), gw_tokens_clamp(u->completion_tokens), 0, 0};
    f.clipped = u->clipped || f.pt != u->prompt_tokens || f.ct != u->completion_tokens;
    f.used = gw_tokens_clamp(gw_sat_add(f.pt, f.ct));
    return f;
}

static int record_insert(store_tx *tx, const rec_fig *f, gp_err *err) {
    const gw_usage *u = f->u;
    char id[RND_ID_LEN];
    rnd_id(id);
    return store_exec(tx, NULL, err,
                      "INSERT INTO usage_records (id, at, tenant_id, project_id, tenant, project,"
                      " app, key_id, model, model_tenant, endpoint_id, accelerator, kind, stream,"
                      " prompt_tokens, completion_tokens, estimated, latency_us, status, clipped)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                      "sisssssssssssiiiiiii", id, u->at_us, u->tenant_id, u->project_id, u->tenant,
                      u->project, u->app, u->key_id, u->model, u->model_tenant, u->endpoint_id,
                      u->accelerator, u->kind, (int64_t)u->stream, f->pt, f->ct,
                      (int64_t)u->estimated, u->latency_us, (int64_t)u->status, (int64_t)f->clipped);
}

/* `requests` records of u's hour, key, model and accelerator into the hourly rollup (meter.h). */
static int hourly_add(store_tx *tx, const gw_usage *u, int64_t requests, int64_t pt, int64_t ct,
                      int64_t clipped, gp_err *err) {
    return store_exec(tx, NULL, err,
                      "INSERT INTO usage_hourly (hour, tenant_id, project_id, tenant, project,"
                      " key_id, model, accelerator, requests, prompt_tokens, completion_tokens, clipped)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (hour, tenant_id, project_id,"
                      " key_id, model, accelerator) DO UPDATE SET"
                      " requests = usage_hourly.requests + excluded.requests,"
                      " prompt_tokens = CASE WHEN usage_hourly.prompt_tokens"
                      " + excluded.prompt_tokens > ? THEN ? ELSE usage_hourly.prompt_tokens"
                      " + excluded.prompt_tokens END,"
                      " completion_tokens = CASE WHEN usage_hourly.completion_tokens"
                      " + excluded.completion_tokens > ? THEN ? ELSE usage_hourly.completion_tokens"
                      " + excluded.completion_tokens END,"
                      " clipped = usage_hourly.clipped + excluded.clipped",
                      "isssssssiiiiiiii", u->at_us - u->at_us % 3600000000LL, u->tenant_id,
                      u->project_id, u->tenant, u->project, u->key_id, u->model, u->accelerator,
                      requests, pt, ct, clipped, (int64_t)GW_TOKENS_MAX, (int64_t)GW_TOKENS_MAX,
                      (int64_t)GW_TOKENS_MAX, (int64_t)GW_TOKENS_MAX);
}

/* `used` into the month of `at_us` of a key, its project and tenant (no hold held them). */
static int account_plain(lset *ls, const gw_usage *u, int64_t used, gp_err *err) {
    if (used <= 0) return GP_OK;
    char month[8];
    gw_month(u->at_us, month);
    const char *ids[3] = {u->key_id, u->project_id, u->tenant_id};
    return lset_add3(ls, ids, month, used, 0, err);
}

int gw_usage_write(store_tx *tx, const gw_usage *u, gp_err *err) {
    return gw_usage_write_many(tx, u, 1, err);
}

/* Orders of a batch's records: by rollup row; by hold; by the month of a key. */
static int by_hour(const void *a, const void *b) {
    const gw_usage *x = ((const rec_fig *)a)->u, *y = ((const rec_fig *)b)->u;
    int64_t hx = x->at_us - x->at_us % 3600000000LL, hy = y->at_us - y->at_us % 3600000000LL;
    int c = hx < hy ? -1 : hx > hy;
    if (!c) c = strcmp(x->tenant_id, y->tenant_id);
    if (!c) c = strcmp(x->project_id, y->project_id);
    if (!c) c = strcmp(x->key_id, y->key_id);
    if (!c) c = strcmp(x->model, y->model);
    if (!c) c = strcmp(x->accelerator, y->accelerator);
    return c;
}

static int by_hold(const void *a, const void *b) {
    return strcmp(((const rec_fig *)a)->u->hold, ((const rec_fig *)b)->u->hold);
}

static int by_month(const void *a, const void *b) {
    const gw_usage *x = ((const rec_fig *)a)->u, *y = ((const rec_fig *)b)->u;
    char mx[8], my[8];
    gw_month(x->at_us, mx);
    gw_month(y->at_us, my);
    int c = strcmp(mx, my);
    if (!c) c = strcmp(x->key_id, y->key_id);
    if (!c) c = strcmp(x->project_id, y->project_id);
    if (!c) c = strcmp(x->tenant_id, y->tenant_id);
    return c;
}

int gw_usage_write_many(store_tx *tx, const gw_usage *u, size_t n, gp_err *err) {
    if (!n) return GP_OK;
    rec_fig *all = malloc(n * sizeof *all);
    rec_fig *held = malloc(n * sizeof *held), *plain = malloc(n * sizeof *plain);
    size_t nh = 0, np = 0;
    lset ls = LSET_INIT;
    int rc = all && held && plain ? GP_OK : gp_err_set(err, GP_ENOMEM, NULL);
    /* each record; then its hold: a request's own (settled), a lease (consumed), or none */
    for (size_t i = 0; i < n && !rc; i++) {
        all[i] = figures(&u[i]);
        rc = record_insert(tx, &all[i], err);
        if (rc) break;
        if (u[i].hold[0]) held[nh++] = all[i];
        else if (all[i].used > 0) plain[np++] = all[i];
    }
    /* the holds in the rows' order (see the top); each lease consumed once for all its
     * records (the same as one by one) */
    if (!rc && nh) qsort(held, nh, sizeof *held, by_hold);
    int64_t now = gt_now_us();
    for (size_t i = 0; i < nh && !rc;) {
        size_t j = i;
        int64_t total = 0;
        for (; j < nh && !by_hold(&held[i], &held[j]); j++)
            total = gw_tokens_clamp(gw_sat_add(total, held[j].used));
        int found = 0;
        if (held[i].u->lease) {
            rc = lease_consume(tx, held[i].u->hold, total, now, &found, &ls, err);
            for (size_t k = i; k < j && !rc && !found; k++) plain[np++] = held[k]; /* released */
        } else {
            for (size_t k = i; k < j && !rc; k++) {
                rc = settle(tx, held[k].u->hold, held[k].used, 1, &found, &ls, err);
                /* released as stale while the request ran: the month's use still counts */
                if (!rc && !found && held[k].used > 0) plain[np++] = held[k];
            }
        }
        i = j;
    }
    /* the rest into the month's use of each key, project and tenant, once per key */
    if (!rc && np) qsort(plain, np, sizeof *plain, by_month);
    for (size_t i = 0; i < np && !rc;) {
        size_t j = i;
        int64_t total = 0;
        for (; j < np && !by_month(&plain[i], &plain[j]); j++)
            total = gw_tokens_clamp(gw_sat_add(total, plain[j].used));
        rc = account_plain(&ls, plain[i].u, total, err);
        i = j;
    }
    if (!rc) rc = lset_apply(tx, &ls, err);
    /* the hourly rollup: one row change per hour, key, model and accelerator */
    if (!rc) qsort(all, n, sizeof *all, by_hour);
    for (size_t i = 0; i < n && !rc;) {
        size_t j = i;
        int64_t pt = 0, ct = 0, clipped = 0;
        for (; j < n && !by_hour(&all[i], &all[j]); j++) {
            pt = gw_tokens_clamp(gw_sat_add(pt, all[j].pt));
            ct = gw_tokens_clamp(gw_sat_add(ct, all[j].ct));
            clipped += all[j].clipped;
        }
        rc = hourly_add(tx, all[i].u, (int64_t)(j - i), pt, ct, clipped, err);
        i = j;
    }
    lset_release(&ls);
    free(all);
    free(held);
    free(plain);
    return rc;
}

/* A usage record with its key's name, as gw_usage_list reads it (STORE_COLS). */
#define USAGE_COLUMNS(X)                                                                  \
    X(UC_ID, "u.id")                                                                      \
    X(UC_AT, "u.at")                                                                      \
    X(UC_TENANT, "u.tenant")                                                              \
    X(UC_PROJECT, "u.project")                                                            \
    X(UC_APP, "u.app")                                                                    \
    X(UC_KEY, "u.key_id")                                                                 \
    X(UC_MODEL, "u.model")                                                                \
    X(UC_MODEL_TENANT, "u.model_tenant")                                                  \
    X(UC_ENDPOINT, "u.endpoint_id")                                                       \
    X(UC_ACCELERATOR, "u.accelerator")                                                    \
    X(UC_KIND, "u.kind")                                                                  \
    X(UC_STREAM, "u.stream")                                                              \
    X(UC_PROMPT_TOKENS, "u.prompt_tokens")                                                \
    X(UC_COMPLETION_TOKENS, "u.completion_tokens")                                        \
    X(UC_ESTIMATED, "u.estimated")                                                        \
    X(UC_LATENCY, "u.latency_us")                                                         \
    X(UC_STATUS, "u.status")                                                              \
    X(UC_KEY_NAME, "COALESCE(k.name, '')")                                                \
    X(UC_CLIPPED, "u.clipped")
enum { USAGE_COLUMNS(STORE_COL_ENUM) UC__N };

int gw_usage_list(store_tx *tx, const char *tenant_id, const char *project_id,
                  const char *key_id, int limit, json_t **items, gp_err *err) {
    store_stmt *s;
    if (limit <= 0 || limit > 5000) limit = 100;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(USAGE_COLUMNS) " FROM usage_records u"
                         " LEFT JOIN api_keys k ON k.id = u.key_id WHERE u.tenant_id = ?"
                         " AND (? IS NULL OR u.project_id = ?) AND (? IS NULL OR u.key_id = ?)"
                         " ORDER BY u.at DESC, u.id LIMIT ?",
                         "sssssi", tenant_id, project_id, project_id, key_id, key_id,
                         (int64_t)limit);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *o = json_pack(
            "{s:s,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:I,s:I,s:I,s:b,s:f,s:I}", "id",
            store_text(s, UC_ID), "at", jx_time(store_int(s, UC_AT)), "tenant",
            store_text(s, UC_TENANT), "project", store_text(s, UC_PROJECT), "app",
            store_text(s, UC_APP), "key", store_text(s, UC_KEY), "key_name",
            store_text(s, UC_KEY_NAME), "model", store_text(s, UC_MODEL), "model_tenant",
            store_text(s, UC_MODEL_TENANT), "endpoint", store_text(s, UC_ENDPOINT), "accelerator",
            store_text(s, UC_ACCELERATOR), "stream", (int)store_int(s, UC_STREAM), "prompt_tokens",
            (json_int_t)store_int(s, UC_PROMPT_TOKENS), "completion_tokens",
            (json_int_t)store_int(s, UC_COMPLETION_TOKENS), "total_tokens",
            (json_int_t)gw_sat_add(store_int(s, UC_PROMPT_TOKENS),
                                   store_int(s, UC_COMPLETION_TOKENS)),
            "estimated", (int)store_int(s, UC_ESTIMATED), "latency_ms",
            (double)store_int(s, UC_LATENCY) / 1000.0, "status",
            (json_int_t)store_int(s, UC_STATUS));
        json_object_set_new(o, "kind", json_string(store_text(s, UC_KIND)));
        json_object_set_new(o, "clipped", json_boolean(store_int(s, UC_CLIPPED) != 0));
        json_array_append_new(arr, o);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}
