/*
 * h_reservation.c - advance reservations and maintenance windows
 * (docs/scheduling.md, "Reservations"; the store side is
 * src/sched/reservations.c, the rules src/sched/reserve.h).
 *
 *   GET    /api/v1/reservations          the ones the caller may see
 *   POST   /api/v1/reservations          platform-admins (reservation.manage) for a tenant;
 *                                        ops-engineers and platform-admins
 *                                        (maintenance.manage) for maintenance
 *   GET    /api/v1/reservations/{name}   one the caller may see (else 404)
 *   PATCH  /api/v1/reservations/{name}   who may create its kind (a JSON merge patch)
 *   DELETE /api/v1/reservations/{name}   who may create its kind
 *
 * Who sees one: a tenant's reservation, its tenant's members (a project's, that project's
 * and the tenant-wide roles) and the platform roles that see every tenant; a maintenance
 * window, who reads the inventory (platform, security and ops).  Anyone else is answered
 * 404, as for one that does not exist.  Creating one and widening one (earlier, later, more
 * cards or nodes) are audited as such (summary "widened").
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../sched/loop.h"
#include "../sched/reservations.h"

#include <stdlib.h>
#include <string.h>

/* The scheduler decides on reservations: a change wakes it (sched/loop.h). */
static void kick(api_req *r) { sched_wake(r->store, r->leader == 1); }

/* May the caller see a reservation held as `h`? */
static int visible(const api_ctx *c, const rsv_holder *h) {
    int64_t now = gt_now_us();
    if (h->maintenance) {
        authz_target g = {NULL, NULL};
        return authz_check(c->who->bindings, c->who->nbindings, ACT_NODE_READ, &g, now) ==
                   AUTHZ_ALLOW ||
               authz_check(c->who->bindings, c->who->nbindings, ACT_MAINTENANCE_MANAGE, &g,
                           now) == AUTHZ_ALLOW;
    }
    authz_target t = {h->tenant_id, h->project_id[0] ? h->project_id : NULL};
    return authz_visible(c->who->bindings, c->who->nbindings, &t, now);
}

/*
 * A reservation refused for holding what another holds at the same time (rsv_put's
 * GP_ECONFLICT with a clash): 409 with the error's "conflict" naming the other one and the
 * first time they meet - by name only to a caller who may see it (a tenant's reservation to
 * an ops-engineer planning maintenance is "a tenant's reservation", its times and what it
 * holds only).  Returns rc (the transaction is rolled back: nothing changes).
 */
static int clash_reply(api_ctx *c, const rsv_clash *k, int rc, const gp_err *err) {
    if (rc != GP_ECONFLICT || !k->name[0]) return rc;
    int seen = visible(c, &k->holder);
    const char *what = k->holder.maintenance ? "maintenance window" : "reservation";
    char t1[32], t2[32], msg[512];
    rsv_fmt_time(k->start_us, t1, sizeof t1);
    rsv_fmt_time(k->end_us, t2, sizeof t2);
    char who[128];
    if (seen) snprintf(who, sizeof who, "%s '%.64s'", what, k->name);
    else snprintf(who, sizeof who, "a reservation of a tenant");
    if (k->by_count)
        snprintf(msg, sizeof msg,
                 "%s (with the others in force then) holds %d of the %d cards of class %.64s in "
                 "pool %.64s from %s to %s: %d more would be too many",
                 who, k->taken, k->cards, k->cls, k->pool, t1, t2, k->wanted);
    else
        snprintf(msg, sizeof msg, "%s holds node %.64s from %s to %s too: the windows overlap",
                 who, k->node, t1, t2);
    json_t *cf = json_pack("{s:o,s:s,s:o,s:o}", "reservation",
                           seen ? json_string(k->name) : json_null(), "kind",
                           k->holder.maintenance ? "maintenance" : "tenant", "start",
                           jx_time(k->start_us), "end", jx_time(k->end_us));
    if (k->by_count) {
        json_object_set_new(cf, "pool", json_string(k->pool));
        json_object_set_new(cf, "class", json_string(k->cls));
        json_object_set_new(cf, "cards", json_integer(k->cards));
        json_object_set_new(cf, "taken", json_integer(k->taken));
        json_object_set_new(cf, "wanted", json_integer(k->wanted));
    } else {
        json_object_set_new(cf, "node", json_string(k->node));
    }
    (void)err;
    api_reply(c->r, 409,
              json_pack("{s:{s:s,s:s,s:o}}", "error", "code", "conflict", "message", msg,
                        "conflict", cf));
    return rc;
}

/* The action that manages a reservation of this kind (maintenance or a tenant's). */
static int manage_act(int maintenance) {
    return maintenance ? ACT_MAINTENANCE_MANAGE : ACT_RESERVATION_MANAGE;
}

int h_reservation_list(api_ctx *c, gp_err *err) {
    json_t *items, *out = json_array();
    rsv_holder *who;
    int rc = rsv_list(c->tx, gt_now_us(), &items, &who, err);
    if (rc) {
        json_decref(out);
        return rc;
    }
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o) if (visible(c, &who[i])) json_array_append(out, o);
    json_decref(items);
    free(who);
    api_reply(c->r, 200, api_list(out, NULL));
    return GP_OK;
}

/* The reservation in the path, if the caller may see it (else not found); its holder in *h. */
static int find(api_ctx *c, json_t **out, rsv_holder *h, gp_err *err) {
    const char *name = api_param(c->r, "name");
    api_target(c->r, "reservation", name, NULL, NULL);
    int rc = rsv_get(c->tx, name, gt_now_us(), out, h, err);
    if (rc) return rc;
    if (!visible(c, h)) {
        json_decref(*out);
        *out = NULL;
        return gp_err_set(err, GP_ENOTFOUND, "reservation not found");
    }
    api_target(c->r, NULL, NULL, json_string_value(json_object_get(*out, "tenant")),
               json_string_value(json_object_get(*out, "project")));
    return GP_OK;
}

int h_reservation_get(api_ctx *c, gp_err *err) {
    json_t *o;
    rsv_holder h;
    int rc = find(c, &o, &h, err);
    if (!rc) api_reply(c->r, 200, o);
    return rc;
}

/*
 * A new reservation.  The caller's authority comes first, read from the body's holder
 * alone ("tenant": reservation.manage, else maintenance.manage), so that a caller who may
 * not reserve learns nothing of the store from the answer (a tenant that exists or not).
 */
int h_reservation_create(api_ctx *c, gp_err *err) {
    const char *name = json_string_value(json_object_get(c->body, "name"));
    json_t *tenant = json_object_get(c->body, "tenant");
    int for_tenant = tenant && !json_is_null(tenant);
    api_target(c->r, "reservation", name, for_tenant ? json_string_value(tenant) : NULL, NULL);
    int rc = api_allow(c, manage_act(!for_tenant), NULL, NULL, err);
    if (rc) return rc;
    json_t *o;
    rsv_clash k;
    if ((rc = rsv_put(c->tx, NULL, c->body, c->who->name, gt_now_us(), &o, NULL, NULL, &k, err)))
        return clash_reply(c, &k, rc, err);
    c->summary = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:b}", "kind",
                           json_object_get(o, "kind"), "tenant", json_object_get(o, "tenant"),
                           "project", json_object_get(o, "project"), "nodes",
                           json_object_get(o, "nodes"), "count", json_object_get(o, "count"),
                           "start", json_object_get(o, "start"), "end",
                           json_object_get(o, "end"), "recurrence",
                           json_object_get(o, "recurrence"), "until", json_object_get(o, "until"),
                           "widened", 1);
    c->on_commit = kick;
    api_reply(c->r, 201, o);
    return GP_OK;
}

int h_reservation_update(api_ctx *c, gp_err *err) {
    json_t *o, *changes = NULL;
    rsv_holder h;
    int widened = 0;
    int rc = find(c, &o, &h, err);
    if (rc) return rc;
    json_decref(o);
    if ((rc = api_allow(c, manage_act(h.maintenance), NULL, NULL, err))) return rc;
    rsv_clash k;
    if ((rc = rsv_put(c->tx, api_param(c->r, "name"), c->body, c->who->name, gt_now_us(), &o,
                      &widened, &changes, &k, err)))
        return clash_reply(c, &k, rc, err);
    c->summary = json_pack("{s:o,s:b,s:O,s:O,s:O,s:O}", "changes", changes, "widened", widened,
                           "start", json_object_get(o, "start"), "end", json_object_get(o, "end"),
                           "count", json_object_get(o, "count"), "nodes",
                           json_object_get(o, "nodes"));
    c->on_commit = kick;
    api_reply(c->r, 200, o);
    return GP_OK;
}

int h_reservation_delete(api_ctx *c, gp_err *err) {
    json_t *o;
    rsv_holder h;
    const char *name = api_param(c->r, "name");
    int rc = find(c, &o, &h, err);
    if (rc) return rc;
    json_decref(o);
    if ((rc = api_allow(c, manage_act(h.maintenance), NULL, NULL, err))) return rc;
    if ((rc = rsv_delete(c->tx, name, gt_now_us(), err))) return rc;
    c->on_commit = kick;
    api_reply(c->r, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
    return GP_OK;
}
