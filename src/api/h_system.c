/*
 * h_system.c - liveness, readiness, metrics, the OpenAPI document, whoami.
 */
#include "api_int.h"

#include "../sched/loop.h"

#include "../core/gtime.h"
#include "../core/log.h"
#include "../core/strbuf.h"
#include "../gateway/gateway.h"
#include "../meter/meter.h"

#include "../auth/auth.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdlib.h>

void h_healthz(api_req *r) { api_reply(r, 200, json_pack("{s:s}", "status", "ok")); }

void h_readyz(api_req *r) {
    gp_err err = GP_ERR_INIT;
    if (store_ping(r->store, &err)) {
        api_error(r, 503, "store_unavailable", "the store does not answer");
        return;
    }
    json_t *o = json_pack("{s:s,s:s}", "status", "ready", "store", store_backend(r->store));
    /* whether this server runs the scheduler among those sharing the store */
    if (r->leader >= 0) json_object_set_new(o, "leader", json_boolean(r->leader == 1));
    api_reply(r, 200, o);
}

/*
 * Request metrics for anyone; with a bearer token, platform gauges too:
 * GPUs by health and form for node readers (ops, platform, security), and
 * allocation, queues, card-hours and tokens by tenant for those who read
 * every tenant's usage (platform- and security-admins).
 */
void h_metrics(api_req *r) {
    char *text = api__metrics_render();
    if (!text) {
        api_error(r, 500, "out_of_memory", "out of memory");
        return;
    }
    strbuf sb = SB_INIT;
    sb_adds(&sb, text);
    free(text);
    if (r->gw) gw_rt_metrics(r->gw, &sb); /* gateway refusals and clipped usage (no tenant names) */
    sched_loop_stats ls;
    if (sched_loop_stats_get(r->store, &ls)) /* the scheduler thread (sched/loop.h) */
        sb_addf(&sb,
                "# HELP gpupool_sched_rounds_total Scheduling rounds run by this server.\n"
                "# TYPE gpupool_sched_rounds_total counter\n"
                "gpupool_sched_rounds_total %llu\n"
                "# HELP gpupool_sched_wakes_total Changes that woke the scheduler (coalesced "
                "into rounds).\n"
                "# TYPE gpupool_sched_wakes_total counter\n"
                "gpupool_sched_wakes_total %llu\n"
                "# HELP gpupool_sched_round_seconds How long the last round took.\n"
                "# TYPE gpupool_sched_round_seconds gauge\n"
                "gpupool_sched_round_seconds %.6f\n"
                "# HELP gpupool_agent_waits Agents waiting on a long poll now.\n"
                "# TYPE gpupool_agent_waits gauge\n"
                "gpupool_agent_waits %d\n",
                (unsigned long long)ls.rounds, (unsigned long long)ls.wakes,
                (double)ls.last_round_us / 1e6, ls.waiters);
    gp_err err = GP_ERR_INIT;
    if (r->authorization && !r->who && auth_authenticate(r->store, r->authorization, &r->who, &err)) {
        sb_release(&sb);
        api_error(r, 401, "unauthenticated", err.msg);
        return;
    }
    if (r->who) {
        authz_target g = {NULL, NULL};
        int64_t now = gt_now_us();
        int gpus = authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &g, now) == AUTHZ_ALLOW;
        int tenants = authz_check(r->who->bindings, r->who->nbindings, ACT_USAGE_READ, &g, now) == AUTHZ_ALLOW;
        store_tx *tx;
        if ((gpus || tenants) && !store_begin(r->store, STORE_READ, &tx, &err)) {
            if (meter_prometheus(tx, now, gpus, tenants, &sb, &err))
                log_kv(LOG_WARN, "platform gauges unavailable", "detail", err.msg, (char *)NULL);
            store_rollback(tx);
        }
    }
    if (!sb_ok(&sb)) {
        sb_release(&sb);
        api_error(r, 500, "out_of_memory", "out of memory");
        return;
    }
    api_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", sb.buf);
    sb_release(&sb);
}

void h_openapi(api_req *r) { api_reply_text(r, 200, "application/json", api_openapi_json()); }

void h_whoami(api_req *r) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *all;
    if (store_begin(r->store, STORE_READ, &tx, &err)) {
        api_fail(r, &err);
        return;
    }
    int rc = auth_member_list_user(tx, r->who->user_id, &all, &err);
    store_rollback(tx);
    if (rc) {
        api_fail(r, &err);
        return;
    }
    /* only the roles in force now */
    json_t *roles = json_array();
    int64_t now = gt_now_us();
    size_t i;
    json_t *b;
    json_array_foreach(all, i, b) {
        int64_t exp = 0;
        const char *e = json_string_value(json_object_get(b, "expires_at"));
        if (e && gt_parse_rfc3339(e, &exp) == 0 && exp <= now) continue;
        json_array_append(roles, b);
    }
    json_decref(all);
    api_reply(r, 200,
              json_pack("{s:s,s:s,s:s,s:o}", "id", r->who->user_id, "name", r->who->name, "kind",
                        r->who->kind, "roles", roles));
}
