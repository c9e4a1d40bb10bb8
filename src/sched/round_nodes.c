/*
 * round_nodes.c - the nodes, cards and slices of the cluster the scheduler's round reads
 * (round.c's rnd_read_cluster): read whole from the store, or patched from the leader's copy
 * with only the nodes stamped since it (issue 38 item 2, migration 34; docs/scheduling.md
 * "The cluster in memory").  A patched copy is what a whole read would make, index for index:
 * nodes in name order, each node's cards in index order, the model table in order of first
 * appearance, cards sorted by uuid, rack and switch ids dense-ranked over every node.  It
 * reads nothing but the store and the old copy (read-only: copies are shared by snapshots);
 * the round's consistency check compares a patched copy with a whole read.
 */
#include "round_int.h"

#include "../core/jsonx.h"
#include "../inventory/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GPU's uuid and index, sorted as a pair (no context: rounds and explains run at once). */
typedef struct uuid_pair {
    const char *uuid;
    int g;
} uuid_pair;

static int by_uuid(const void *a, const void *b) {
    return strcmp(((const uuid_pair *)a)->uuid, ((const uuid_pair *)b)->uuid);
}

static int model_index(snap *n, const char *model) {
    for (int i = 0; i < n->s.nmodels; i++)
        if (strcmp(n->models[i], model) == 0) return i;
    snprintf(n->models[n->s.nmodels], 96, "%s", model);
    return n->s.nmodels++;
}

/* The one count `sql` reads (with `since` bound when since >= 0). */
static int count_since(store_tx *tx, const char *sql, int64_t since, int *out, gp_err *err) {
    store_stmt *s;
    *out = 0;
    int rc = since >= 0 ? store_query(tx, &s, err, sql, "i", since) : store_query(tx, &s, err, sql, "");
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) *out = (int)store_int(s, 0);
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* Room for nn nodes and ng cards in n's arena (the counts stay 0). */
static int alloc_nodes(snap *n, int nn, int ng, gp_err *err) {
    if (!ALLOC(n->nodes, nn) || !ALLOC(n->node_names, nn) || !ALLOC(n->node_pool, nn) ||
        !ALLOC(n->node_ids, nn) || !ALLOC(n->node_rack, nn) || !ALLOC(n->node_sw, nn) ||
        !ALLOC(n->gpus, ng) || !ALLOC(n->gpu_uuids, ng) ||
        !(n->slice_uuids = rnd_alloc(n, (size_t)(ng + 1) * SCH_MAX_SLICES, sizeof *n->slice_uuids)) ||
        !(n->slice_prof = rnd_alloc(n, (size_t)(ng + 1) * SCH_MAX_SLICES, sizeof *n->slice_prof)) ||
        !ALLOC(n->gpu_ids, ng) || !ALLOC(n->models, ng) || !ALLOC(n->gpu_order, ng) ||
        !ALLOC(n->gpu_driver, ng) || !ALLOC(n->gpu_cc, ng) || !ALLOC(n->gpu_stack, ng))
        return gp_err_set(err, GP_ENOMEM, NULL);
    return GP_OK;
}

/* n's cards sorted by uuid, for lookups (gpu_order): a whole read sorts them. */
static int order_gpus(snap *n, gp_err *err) {
    uuid_pair *pairs = malloc(((size_t)n->s.ngpus + 1) * sizeof *pairs);
    if (!pairs) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int g = 0; g < n->s.ngpus; g++) pairs[g] = (uuid_pair){n->gpu_uuids[g], g};
    qsort(pairs, (size_t)n->s.ngpus, sizeof *pairs, by_uuid);
    for (int g = 0; g < n->s.ngpus; g++) n->gpu_order[g] = pairs[g].g;
    free(pairs);
    return GP_OK;
}

/*
 * The nodes (all, or those stamped after `since` when since >= 0), their cards and slices,
 * read into n (its pools and health policy already set).  A whole read takes each node's rack
 * and switch ids from the store (DENSE_RANK); a read of the stamped nodes leaves them 0 (the
 * patch ranks them over every node).
 */
static int read_rows(store_tx *tx, snap *n, int64_t since, gp_err *err) {
    store_stmt *s;
    int rc, nn, ng, delta = since >= 0;
    if ((rc = count_since(tx, delta ? "SELECT COUNT(*) FROM nodes WHERE chg > ?"
                                    : "SELECT COUNT(*) FROM nodes",
                          since, &nn, err)) ||
        (rc = count_since(tx, delta ? "SELECT COUNT(*) FROM gpus g JOIN nodes n"
                                      " ON n.id = g.node_id WHERE n.chg > ?"
                                    : "SELECT COUNT(*) FROM gpus",
                          since, &ng, err)) ||
        (rc = alloc_nodes(n, nn, ng, err)))
        return rc;
    sch_snapshot *S = &n->s;
    static const char node_sql[] =
        "SELECT name, cpus, memory_gib, pool, state, admin_state,"
        /* topology labels as ids (sched.h: sch_node.rack, .sw; 0 none) */
        " CASE WHEN topo_rack = '' THEN 0"
        "  ELSE DENSE_RANK() OVER (ORDER BY topo_rack) END,"
        " CASE WHEN topo_switch = '' THEN 0"
        "  ELSE DENSE_RANK() OVER (ORDER BY topo_switch) END,"
        " id, topo_rack, topo_switch FROM nodes ORDER BY name";
    static const char node_delta_sql[] =
        "SELECT name, cpus, memory_gib, pool, state, admin_state, 0, 0, id, topo_rack,"
        " topo_switch FROM nodes WHERE chg > ? ORDER BY name";
    if ((rc = delta ? store_query(tx, &s, err, node_delta_sql, "i", since)
                    : store_query(tx, &s, err, node_sql, "")))
        return rc;
    while ((rc = store_step(s, err)) > 0 && S->nnodes < nn) {
        int i = S->nnodes++;
        snprintf(n->node_names[i], 64, "%s", store_text(s, 0));
        n->nodes[i].cpus = (int)store_int(s, 1);
        n->nodes[i].mem_gib = (int)store_int(s, 2);
        snprintf(n->node_pool[i], 64, "%s", store_text(s, 3));
        n->nodes[i].pool = rnd_find_str(n->pools, sizeof *n->pools, S->npools, store_text(s, 3));
        if (n->nodes[i].pool < 0) n->nodes[i].pool = 0;
        n->nodes[i].rack = (int)store_int(s, 6);
        n->nodes[i].sw = (int)store_int(s, 7);
        snprintf(n->node_ids[i], RND_ID_LEN, "%s", store_text(s, 8));
        snprintf(n->node_rack[i], 64, "%s", store_text(s, 9));
        snprintf(n->node_sw[i], 64, "%s", store_text(s, 10));
        /* node usability folds into each GPU's allocatable flag below */
        n->nodes[i].gpu0 = strcmp(store_text(s, 4), "ready") == 0 &&
                           strcmp(store_text(s, 5), "none") == 0; /* temporarily: node usable */
    }
    store_done(s);
    if (rc < 0) return rc;
    int *usable = rnd_alloc(n, (size_t)S->nnodes + 1, sizeof *usable);
    if (!usable) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < S->nnodes; i++) usable[i] = n->nodes[i].gpu0;
    static const char gpu_sql[] =
        "SELECT n.name, g.uuid, g.model, g.memory_mib, g.mode, g.health,"
        " g.admin_state, g.numa, g.topology, g.id, g.driver_version,"
        " g.compute_cap, g.vendor, g.stack FROM gpus g"
        " JOIN nodes n ON n.id = g.node_id ORDER BY n.name, g.idx";
    static const char gpu_delta_sql[] =
        "SELECT n.name, g.uuid, g.model, g.memory_mib, g.mode, g.health,"
        " g.admin_state, g.numa, g.topology, g.id, g.driver_version,"
        " g.compute_cap, g.vendor, g.stack FROM gpus g"
        " JOIN nodes n ON n.id = g.node_id WHERE n.chg > ? ORDER BY n.name, g.idx";
    if ((rc = delta ? store_query(tx, &s, err, gpu_delta_sql, "i", since)
                    : store_query(tx, &s, err, gpu_sql, "")))
        return rc;
    int cur = -1;
    char last_stack[128] = "";
    cp_stack last_parsed;
    memset(&last_parsed, 0, sizeof last_parsed);
    while ((rc = store_step(s, err)) > 0 && S->ngpus < ng) {
        int node = rnd_find_str(n->node_names, sizeof *n->node_names, S->nnodes, store_text(s, 0));
        if (node < 0) continue;
        int g = S->ngpus++;
        if (node != cur) {
            n->nodes[node].gpu0 = g;
            n->nodes[node].ngpus = 0;
            cur = node;
        }
        n->nodes[node].ngpus++;
        sch_gpu *gp = &n->gpus[g];
        snprintf(n->gpu_uuids[g], 96, "%s", store_text(s, 1));
        snprintf(n->gpu_driver[g], 32, "%s", store_text(s, 10));
        snprintf(n->gpu_cc[g], 16, "%s", store_text(s, 11));
        int vendor = cp_vendor_parse(store_text(s, 12));
        gp->vendor = vendor < 0 ? CP_NVIDIA : vendor;
        /* the card's runtimes: cards in a row mostly share them, parsed once */
        const char *stk = store_text(s, 13);
        if (strcmp(stk, last_stack) != 0) {
            char why[160];
            json_t *sj = json_loads(stk, 0, NULL);
            if (cp_stack_parse(sj, &last_parsed, why, sizeof why))
                memset(&last_parsed, 0, sizeof last_parsed);
            json_decref(sj);
            /* (a text too long to keep is never taken for the next card's) */
            snprintf(last_stack, sizeof last_stack, "%s",
                     strlen(stk) < sizeof last_stack ? stk : "\x01");
        }
        n->gpu_stack[g] = last_parsed;
        gp->node = node;
        gp->model = model_index(n, store_text(s, 2));
        gp->mem_gib = (int)(store_int(s, 3) / 1024);
        const char *mode = store_text(s, 4);
        gp->mode = !strcmp(mode, "mig") ? SCH_MIG : !strcmp(mode, "shared") ? SCH_SHARED : SCH_WHOLE;
        gp->allocatable = usable[node] && strcmp(store_text(s, 6), "none") == 0 &&
                          health_allocatable(&n->pol, health_parse(store_text(s, 5)));
        gp->numa = (int)store_int(s, 7);
        gp->nvgroup = -1;
        json_t *topo = json_loads(store_text(s, 8), 0, NULL);
        /* NVLink group: the first earlier card on the node this one is linked to, else itself */
        if (json_object_size(topo)) {
            gp->nvgroup = g;
            for (int k = n->nodes[node].gpu0; k < g; k++) {
                json_t *lv = json_object_get(topo, n->gpu_uuids[k]);
                if (json_is_integer(lv) && json_integer_value(lv) <= 10) {
                    gp->nvgroup = n->gpus[k].nvgroup >= 0 ? n->gpus[k].nvgroup : k;
                    break;
                }
            }
        }
        json_decref(topo);
        snprintf(n->gpu_ids[g], RND_ID_LEN, "%s", store_text(s, 9));
    }
    store_done(s);
    /* slices: one query for all, each to its GPU by id (ids in order, then a search) */
    if (rc >= 0) {
        uuid_pair *ids = rnd_alloc(n, (size_t)S->ngpus + 1, sizeof *ids);
        if (!ids) return gp_err_set(err, GP_ENOMEM, NULL);
        for (int g = 0; g < S->ngpus; g++) ids[g] = (uuid_pair){n->gpu_ids[g], g};
        qsort(ids, (size_t)S->ngpus, sizeof *ids, by_uuid);
        if ((rc = delta ? store_query(tx, &s, err,
                                      "SELECT s.gpu_id, s.uuid, s.profile, s.memory_mib"
                                      " FROM slices s JOIN gpus g ON g.id = s.gpu_id"
                                      " JOIN nodes n ON n.id = g.node_id WHERE n.chg > ?"
                                      " ORDER BY s.gpu_id, s.idx",
                                      "i", since)
                        : store_query(tx, &s, err,
                                      "SELECT gpu_id, uuid, profile, memory_mib FROM slices"
                                      " ORDER BY gpu_id, idx",
                                      "")))
            return rc;
        while ((rc = store_step(s, err)) > 0) {
            uuid_pair key = {store_text(s, 0), -1};
            const uuid_pair *hit = bsearch(&key, ids, (size_t)S->ngpus, sizeof *ids, by_uuid);
            if (!hit) continue;
            sch_gpu *gp = &n->gpus[hit->g];
            if (gp->nslices >= SCH_MAX_SLICES) continue;
            int k = gp->nslices++;
            size_t at = (size_t)hit->g * SCH_MAX_SLICES + (size_t)k;
            snprintf(n->slice_uuids[at], 96, "%s", store_text(s, 1));
            snprintf(n->slice_prof[at], 24, "%s", store_text(s, 2));
            gp->slices[k].profile = n->slice_prof[at];
            gp->slices[k].mem_gib = (int)(store_int(s, 3) / 1024);
        }
        store_done(s);
    }
    for (int i = 0; i < S->nnodes; i++)
        if (!n->nodes[i].ngpus) n->nodes[i].gpu0 = 0;
    return rc < 0 ? rc : GP_OK;
}

/* Copy node si of src, with its cards and slices, to the end of n; map[src card] = its index
 * in n. */
static void copy_node(snap *n, const snap *src, int si, int *map) {
    sch_snapshot *S = &n->s;
    int j = S->nnodes++;
    const sch_node *sn = &src->nodes[si];
    n->nodes[j] = *sn;
    memcpy(n->node_names[j], src->node_names[si], sizeof n->node_names[j]);
    memcpy(n->node_pool[j], src->node_pool[si], sizeof n->node_pool[j]);
    memcpy(n->node_ids[j], src->node_ids[si], sizeof n->node_ids[j]);
    memcpy(n->node_rack[j], src->node_rack[si], sizeof n->node_rack[j]);
    memcpy(n->node_sw[j], src->node_sw[si], sizeof n->node_sw[j]);
    int g0 = S->ngpus;
    n->nodes[j].gpu0 = sn->ngpus ? g0 : 0;
    for (int t = 0; t < sn->ngpus; t++) {
        int sg = sn->gpu0 + t, g = S->ngpus++;
        map[sg] = g;
        sch_gpu *gp = &n->gpus[g];
        *gp = src->gpus[sg];
        gp->node = j;
        if (gp->nvgroup >= 0) gp->nvgroup = gp->nvgroup - sn->gpu0 + g0;
        gp->model = model_index(n, src->models[src->gpus[sg].model]);
        memcpy(n->gpu_uuids[g], src->gpu_uuids[sg], sizeof n->gpu_uuids[g]);
        memcpy(n->gpu_ids[g], src->gpu_ids[sg], sizeof n->gpu_ids[g]);
        memcpy(n->gpu_driver[g], src->gpu_driver[sg], sizeof n->gpu_driver[g]);
        memcpy(n->gpu_cc[g], src->gpu_cc[sg], sizeof n->gpu_cc[g]);
        n->gpu_stack[g] = src->gpu_stack[sg];
        for (int k = 0; k < gp->nslices; k++) {
            size_t at = (size_t)g * SCH_MAX_SLICES + (size_t)k,
                   sat = (size_t)sg * SCH_MAX_SLICES + (size_t)k;
            memcpy(n->slice_uuids[at], src->slice_uuids[sat], sizeof n->slice_uuids[at]);
            memcpy(n->slice_prof[at], src->slice_prof[sat], sizeof n->slice_prof[at]);
            gp->slices[k].profile = n->slice_prof[at];
        }
    }
}

/* n's cards sorted by uuid, for a patch: the old copy's order and the stamped nodes' merged
 * (omap, dmap: each card's index in n, -1 for the old copy's cards of stamped nodes). */
static void merge_order(snap *n, const snap *o, const int *omap, const snap *d, const int *dmap) {
    int i = 0, k = 0, out = 0;
    for (;;) {
        while (i < o->s.ngpus && omap[o->gpu_order[i]] < 0) i++;
        if (i == o->s.ngpus && k == d->s.ngpus) break;
        int a = i < o->s.ngpus ? omap[o->gpu_order[i]] : -1,
            b = k < d->s.ngpus ? dmap[d->gpu_order[k]] : -1;
        if (b < 0 || (a >= 0 && strcmp(n->gpu_uuids[a], n->gpu_uuids[b]) <= 0)) {
            n->gpu_order[out++] = a;
            i++;
        } else {
            n->gpu_order[out++] = b;
            k++;
        }
    }
}

static int by_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each node's id for its label (rack or switch, 64 bytes per node from `labels`): as the
 * whole read's DENSE_RANK() OVER (ORDER BY label) - the rank among the distinct labels,
 * '' included when some node has none - and 0 for ''. */
static int rank_labels(snap *n, name64 *labels, int is_rack, gp_err *err) {
    int nn = n->s.nnodes, any = 0;
    for (int i = 0; i < nn && !any; i++) any = labels[i][0] != 0;
    if (!any) {
        for (int i = 0; i < nn; i++) *(is_rack ? &n->nodes[i].rack : &n->nodes[i].sw) = 0;
        return GP_OK;
    }
    const char **v = malloc(((size_t)nn + 1) * sizeof *v);
    if (!v) return gp_err_set(err, GP_ENOMEM, NULL);
    for (int i = 0; i < nn; i++) v[i] = labels[i];
    qsort(v, (size_t)nn, sizeof *v, by_str);
    int nd = 0; /* distinct, in place */
    for (int i = 0; i < nn; i++)
        if (!nd || strcmp(v[nd - 1], v[i])) v[nd++] = v[i];
    for (int i = 0; i < nn; i++) {
        int r = 0;
        if (labels[i][0]) {
            const char *key = labels[i];
            const char **hit = bsearch(&key, v, (size_t)nd, sizeof *v, by_str);
            r = hit ? (int)(hit - v) + 1 : 0;
        }
        *(is_rack ? &n->nodes[i].rack : &n->nodes[i].sw) = r;
    }
    free(v);
    return GP_OK;
}

/* The index in d of the stamped node `id` (ids: d's node indices sorted by id), or -1. */
static int stamped(const snap *d, const int *ids, const char *id) {
    int lo = 0, hi = d->s.nnodes - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(d->node_ids[ids[mid]], id);
        if (!c) return ids[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Sort idx[0..k) by d's node ids (a merge sort; tmp: room for k). */
static void sort_ids(const snap *d, int *idx, int k, int *tmp) {
    if (k < 2) return;
    int h = k / 2;
    sort_ids(d, idx, h, tmp);
    sort_ids(d, idx + h, k - h, tmp);
    int i = 0, j = h, o = 0;
    while (i < h || j < k)
        tmp[o++] = j == k || (i < h && strcmp(d->node_ids[idx[i]], d->node_ids[idx[j]]) <= 0)
                       ? idx[i++]
                       : idx[j++];
    memcpy(idx, tmp, (size_t)k * sizeof *idx);
}

int rnd_read_nodes(store_tx *tx, snap *n, const snap *old, int64_t since, int *patched,
                   gp_err *err) {
    *patched = 0;
    if (!old || since < 0) {
        int rc = read_rows(tx, n, -1, err);
        return rc ? rc : order_gpus(n, err);
    }
    /* the nodes stamped since the copy, with their cards and slices, as the store has them */
    snap d;
    memset(&d, 0, sizeof d);
    d.pools = n->pools;
    d.s.npools = n->s.npools;
    d.pol = n->pol;
    int rc = read_rows(tx, &d, since, err);
    if (!rc) rc = order_gpus(&d, err);
    /* (a patch as large as the cluster is no cheaper than a whole read) */
    if (rc || d.s.nnodes > old->s.nnodes / 2 + 64) {
        rnd_snap_free(&d);
        return rc;
    }
    int *ids = malloc(((size_t)d.s.nnodes + 1) * 2 * sizeof *ids),
        *omap = malloc(((size_t)old->s.ngpus + 1) * sizeof *omap),
        *dmap = malloc(((size_t)d.s.ngpus + 1) * sizeof *dmap);
    if (!ids || !omap || !dmap) {
        free(ids);
        free(omap);
        free(dmap);
        rnd_snap_free(&d);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    for (int i = 0; i < d.s.nnodes; i++) ids[i] = i;
    for (int g = 0; g < old->s.ngpus; g++) omap[g] = -1;
    for (int g = 0; g < d.s.ngpus; g++) dmap[g] = -1;
    sort_ids(&d, ids, d.s.nnodes, ids + d.s.nnodes + 1);
    /* the copy's nodes that were not stamped, and the stamped ones, merged in name order */
    int nn = d.s.nnodes, ng = d.s.ngpus;
    for (int i = 0; i < old->s.nnodes; i++)
        if (stamped(&d, ids, old->node_ids[i]) < 0) {
            nn++;
            ng += old->nodes[i].ngpus;
        }
    if ((rc = alloc_nodes(n, nn, ng, err))) goto out;
    int i = 0, k = 0;
    while (i < old->s.nnodes || k < d.s.nnodes) {
        if (i < old->s.nnodes && stamped(&d, ids, old->node_ids[i]) >= 0) {
            i++;
            continue;
        }
        if (k == d.s.nnodes ||
            (i < old->s.nnodes && strcmp(old->node_names[i], d.node_names[k]) < 0))
            copy_node(n, old, i++, omap);
        else
            copy_node(n, &d, k++, dmap);
    }
    if ((rc = rank_labels(n, n->node_rack, 1, err)) || (rc = rank_labels(n, n->node_sw, 0, err)))
        goto out;
    merge_order(n, old, omap, &d, dmap);
    *patched = 1;
out:
    free(ids);
    free(omap);
    free(dmap);
    rnd_snap_free(&d);
    return rc;
}
