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

int h_healthz(api_ctx *c, gp_err *err) {
    (void)err;
    api_reply(c->r, 200, json_pack("{s:s}", "status", "ok"));
    return GP_OK;
}

int h_readyz(api_ctx *c, gp_err *err) {
    api_req *r = c->r;
    if (store_ping(r->store, err)) {
        api_error(r, 503, "store_unavailable", "the store does not answer");
        return err->code ? err->code : GP_EBUSY;
    }
    json_t *o = json_pack("{s:s,s:s}", "status", "ready", "store", store_backend(r->store));
    /* whether this server runs the scheduler among those sharing the store */
    if (r->leader >= 0) json_object_set_new(o, "leader", json_boolean(r->leader == 1));
    api_reply(r, 200, o);
    return GP_OK;
}

/*
 * Request metrics for anyone; with a bearer token, platform gauges too:
 * GPUs by health and form for node readers (ops, platform, security), and
 * allocation, queues, card-hours and tokens by tenant for those who read
 * every tenant's usage (platform- and security-admins).
 */
int h_metrics(api_ctx *c, gp_err *err) {
    api_req *r = c->r;
    char *text = api__metrics_render();
    if (!text) return gp_err_set(err, GP_ENOMEM, "out of memory");
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
    /* public, but a bearer token shows more: checked here, not by dispatch */
    if (r->authorization && !r->who && auth_authenticate(r->store, r->authorization, &r->who, err)) {
        sb_release(&sb);
        err->code = GP_EUNAUTH; /* whatever failed, the credential was not taken: 401 */
        return GP_EUNAUTH;
    }
    if (r->who) {
        authz_target g = {NULL, NULL};
        int64_t now = gt_now_us();
        int gpus = authz_check(r->who->bindings, r->who->nbindings, ACT_NODE_READ, &g, now) == AUTHZ_ALLOW;
        int tenants = authz_check(r->who->bindings, r->who->nbindings, ACT_USAGE_READ, &g, now) == AUTHZ_ALLOW;
        gp_err why = GP_ERR_INIT;
        if ((gpus || tenants) && meter_prometheus_read(r->store, now, gpus, tenants, &sb, &why))
            log_kv(LOG_WARN, "platform gauges unavailable", "detail", why.msg, (char *)NULL);
    }
    if (!sb_ok(&sb)) {
        sb_release(&sb);
        return gp_err_set(err, GP_ENOMEM, "out of memory");
    }
    api_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", sb.buf);
    sb_release(&sb);
    return GP_OK;
}

int h_openapi(api_ctx *c, gp_err *err) {
    (void)err;
    api_reply_text(c->r, 200, "application/json", api_openapi_json());
    return GP_OK;
}

/* SC_SIGNED_IN: who the caller is, and the roles in force now. */
int h_whoami(api_ctx *c, gp_err *err) {
    json_t *all;
    int rc = auth_member_list_user(c->tx, c->who->user_id, &all, err);
    if (rc) return rc;
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
    api_reply(c->r, 200,
              json_pack("{s:s,s:s,s:s,s:o}", "id", c->who->user_id, "name", c->who->name, "kind",
                        c->who->kind, "roles", roles));
    return GP_OK;
}
