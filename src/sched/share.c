/*
 * share.c - guaranteed shares, borrowing, reclaim and fair use of idle
 * capacity: the arithmetic of share.h (pure; the rules are written there).
 */
#include "share.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static void check_tenant(const share_tenant *t) {
    (void)t;
    assert(t->guarantee >= 0 && t->ceiling >= t->guarantee);
    assert(t->kept >= 0 && t->kept <= t->guarantee);
    assert(t->weight >= 1 && t->used >= 0 && t->recent >= 0);
    assert(t->waiting >= 0 && t->waiting <= (t->guarantee > t->used ? t->guarantee - t->used : 0));
}

int64_t share_owned(const share_tenant *t) { return min64(t->used, t->guarantee); }

int64_t share_borrowed(const share_tenant *t) { return max64(0, t->used - t->guarantee); }

int64_t share_idle(const share_tenant *ts, int n, int64_t capacity) {
    int64_t held = 0;
    for (int i = 0; i < n; i++) {
        check_tenant(&ts[i]);
        held += max64(ts[i].used + ts[i].waiting, ts[i].kept);
    }
    return max64(0, capacity - held);
}

int64_t share_free_for(const share_tenant *ts, int n, int i, int64_t capacity) {
    assert(i >= 0 && i < n);
    int64_t held = ts[i].used;
    for (int t = 0; t < n; t++)
        if (t != i) held += max64(ts[t].used, ts[t].kept);
    return max64(0, capacity - held);
}

int share_admit(const share_tenant *ts, int n, int i, int64_t capacity, int64_t demand) {
    assert(i >= 0 && i < n && demand >= 0);
    const share_tenant *t = &ts[i];
    int64_t after = t->used + demand;
    if (after <= t->guarantee) return SHARE_OWNED;
    if (after > t->ceiling) return SHARE_NO_ROOM;
    /* what the job adds to what the tenant holds (its idle kept part is held already)
     * must fit the idle capacity */
    int64_t base = t->used + t->waiting; /* its owned work waiting keeps its place */
    int64_t more = max64(base + demand, t->kept) - max64(base, t->kept);
    return more <= share_idle(ts, n, capacity) ? SHARE_BORROWED : SHARE_NO_ROOM;
}

int64_t share_borrow_key(const share_tenant *t, int64_t horizon_s) {
    check_tenant(t);
    double k = ((double)t->recent + (double)share_borrowed(t) * (double)horizon_s) * 1000.0 /
               (double)t->weight;
    return k >= 9.2e18 ? INT64_MAX : (int64_t)k;
}

void share_fair(const share_tenant *ts, int n, const int64_t *want, int64_t idle, int64_t *fair) {
    int64_t pool = max64(0, idle);
    int open = 0;
    for (int i = 0; i < n; i++) {
        fair[i] = 0;
        if (want[i] > 0) {
            pool += share_borrowed(&ts[i]);
            open++;
        }
    }
    /* water-filling by weight: each pass gives every open tenant its weighted part of what
     * is left, capped at its want; a tenant that is capped leaves the rest to the others */
    while (open > 0 && pool > 0) {
        int64_t wsum = 0;
        for (int i = 0; i < n; i++)
            if (want[i] > fair[i]) wsum += ts[i].weight;
        if (wsum == 0) break;
        int64_t given = 0;
        for (int i = 0; i < n; i++) {
            if (want[i] <= fair[i]) continue;
            int64_t part = (int64_t)((double)pool * (double)ts[i].weight / (double)wsum);
            int64_t g = min64(part, want[i] - fair[i]);
            fair[i] += g;
            given += g;
        }
        if (given == 0) {
            /* what is left is less than one milli per weight: the lowest index first */
            for (int i = 0; i < n && pool - given > 0; i++)
                if (want[i] > fair[i]) {
                    fair[i]++;
                    given++;
                }
        }
        pool -= given;
        open = 0;
        for (int i = 0; i < n; i++)
            if (want[i] > fair[i]) open++;
    }
}

int64_t share_mark(int64_t guarantee, const int64_t *demand, int n, unsigned char *borrowed) {
    int64_t sum = 0, out = 0;
    for (int i = 0; i < n; i++) {
        assert(demand[i] >= 0);
        sum += demand[i];
        borrowed[i] = sum > guarantee;
        if (borrowed[i]) out += demand[i];
    }
    return out;
}

int64_t share_unassigned(int64_t guarantee, int64_t parts) {
    assert(guarantee >= 0 && parts >= 0);
    return parts >= guarantee ? 0 : guarantee - parts;
}

int share_domain(int in_rsv, int cls, int pool) {
    if (in_rsv) return -1;
    return cls >= 0 ? cls : pool >= 0 ? pool : -1;
}

int64_t share_spill(int64_t part, int64_t used, int64_t demand) {
    int64_t room = part - used;
    if (room <= 0) return demand;
    return demand > room ? demand - room : 0;
}

int64_t share_mark_parts(int64_t guarantee, const int64_t *part, int np, const int *proj,
                         const int64_t *demand, int n, int64_t *used, unsigned char *borrowed) {
    int64_t parts = 0, spilled = 0, out = 0;
    for (int p = 0; p < np; p++) {
        assert(part[p] >= 0);
        parts += part[p];
        used[p] = 0;
    }
    int64_t free_part = share_unassigned(guarantee, parts);
    for (int i = 0; i < n; i++) {
        int p = proj[i];
        assert(demand[i] >= 0 && p < np);
        int64_t over = demand[i];
        if (p >= 0) {
            over = share_spill(part[p], used[p], demand[i]);
            used[p] += demand[i];
        }
        spilled += over;
        borrowed[i] = (p < 0 || over > 0) && spilled > free_part;
        if (borrowed[i]) out += demand[i];
    }
    return out;
}

typedef struct order_ctx {
    const share_tenant *ts;
    const share_victim *vs;
    const int64_t *fair;
} order_ctx;

static int64_t over_share(const order_ctx *c, int t) {
    return share_borrowed(&c->ts[t]) - (c->fair ? c->fair[t] : 0);
}

/* a before b? (most over its fair share, lowest priority, newest, lowest index) */
static int before(const order_ctx *c, int a, int b) {
    const share_victim *x = &c->vs[a], *y = &c->vs[b];
    int64_t ox = over_share(c, x->tenant), oy = over_share(c, y->tenant);
    if (ox != oy) return ox > oy;
    if (x->priority != y->priority) return x->priority < y->priority;
    if (x->start_us != y->start_us) return x->start_us > y->start_us;
    return a < b;
}

int share_reclaim(const share_tenant *ts, int n, int owner, int64_t need, const share_victim *vs,
                  int nv, const int64_t *fair, int *pick, int *npick, int *tmp) {
    (void)n;
    assert(owner >= 0 && owner < n);
    *npick = 0;
    if (need <= 0) return 1;
    order_ctx c = {ts, vs, fair};
    /* insertion sort of the candidates (victim lists are short: one pool's borrowed work) */
    int m = 0;
    for (int v = 0; v < nv; v++) {
        assert(vs[v].tenant >= 0 && vs[v].tenant < n);
        if (!vs[v].borrowed || vs[v].tenant == owner) continue;
        int k = m++;
        while (k > 0 && before(&c, v, tmp[k - 1])) {
            tmp[k] = tmp[k - 1];
            k--;
        }
        tmp[k] = v;
    }
    /* take in that order, never a borrower below its guarantee; what is taken from one
     * borrower lowers what may still be taken from it */
    int64_t freed = 0;
    int k = 0;
    for (int j = 0; j < m && freed < need; j++) {
        const share_victim *v = &vs[tmp[j]];
        int64_t taken = 0;
        for (int q = 0; q < k; q++)
            if (vs[pick[q]].tenant == v->tenant) taken += vs[pick[q]].demand;
        const share_tenant *b = &ts[v->tenant];
        if (b->used - taken - v->demand < b->guarantee) continue;
        pick[k++] = tmp[j];
        freed += v->demand;
    }
    if (freed < need) return 0;
    *npick = k;
    return 1;
}

int64_t share_decay(int64_t recent, int64_t last_us, int64_t now_us, int64_t half_life_s,
                    int64_t borrowed) {
    assert(recent >= 0 && borrowed >= 0);
    double dt = now_us > last_us ? (double)(now_us - last_us) / 1e6 : 0.0;
    double r = half_life_s > 0 ? (double)recent * exp2(-dt / (double)half_life_s) : 0.0;
    r += (double)borrowed * dt;
    return r >= 9.2e18 ? INT64_MAX : (int64_t)r;
}

int64_t share_lent(const share_tenant *ts, int n, int i, int64_t capacity) {
    assert(i >= 0 && i < n);
    int64_t guaranteed = 0, borrowed = 0, idle = 0;
    for (int t = 0; t < n; t++) {
        guaranteed += ts[t].guarantee;
        borrowed += share_borrowed(&ts[t]);
        idle += max64(0, ts[t].guarantee - max64(ts[t].used, ts[t].kept));
    }
    int64_t mine = max64(0, ts[i].guarantee - max64(ts[i].used, ts[i].kept));
    int64_t from_idle = max64(0, borrowed - max64(0, capacity - guaranteed));
    if (mine == 0 || from_idle == 0) return 0;
    if (from_idle >= idle) return mine;
    return min64(mine, (int64_t)((double)from_idle * (double)mine / (double)idle));
}
