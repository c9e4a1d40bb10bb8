/*
 * api_int.h - internals shared by the API's files: the request context,
 * response helpers and the route table type.  Include only from src/api/.
 *
 * Two shapes of route (routes.c).  A declared route (issue 34,
 * docs/request-path.md) says its scope, action, transaction and whether it
 * takes a body, and dispatch does all of it (api.c run_declared): its
 * handler, int h_x(api_ctx *, gp_err *), only calls the domain and sets the
 * reply; work too slow to hold the write lock through is the row's `prepare`
 * step, run first in a read transaction.  Handlers never open, commit or
 * roll back a transaction (tests/api_pipeline_check.sh fails the build's
 * tests if one does).  The gateway's /v1 rows
 * alone keep the legacy shape, void h_x(api_req *): their pipeline (an API
 * key, limits, a lease, a stream) is the gateway's own (src/gateway/); they
 * receive an api_req already routed.  The dispatcher audits every outcome of
 * a mutating route, and every denial (401/403/404) of a protected route.
 *
 * Ownership: the request owns everything it points to; the response JSON
 * set with api_reply() is stolen.
 */
#ifndef GP_API_INT_H
#define GP_API_INT_H

#include "../auth/auth.h"
#include "../core/err.h"
#include "../core/rand.h"
#include "../quota/quota.h"
#include "../store/store.h"
#include "api.h"
#include "router.h"
#include "../tenancy/tenancy.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

typedef struct api_req api_req;
typedef void (*api_handler)(api_req *r);

enum {
    ROUTE_PUBLIC = 1,
    ROUTE_MUTATES = 2,
    ROUTE_GATEWAY = 4, /* served by `gpupool gateway` too */
    ROUTE_BODY = 8,    /* declared routes: the body is a JSON object, parsed by dispatch */
    ROUTE_BODY_OPTIONAL = 16 /* ... or may be left out (c->body NULL then) */
};

/*
 * Where a declared route acts (issue 34, ../shared/PIPELINE.md): dispatch
 * resolves it and authorises the route's action there before the handler
 * runs.  SC_PUBLIC, SC_AGENT: below.  SC_SIGNED_IN: any authenticated
 * caller, no action checked (the handler decides per object).
 * SC_GLOBAL: the action at global scope.  SC_TENANT / SC_PROJECT: the
 * path's {tenant} (and {project}) resolved (404 when unseen), the action
 * checked there, and the transaction tied to the tenant (PostgreSQL's row
 * fence, store_set_tenant).
 */
typedef enum {
    SC_NONE = 0,
    SC_PUBLIC,    /* no credential (a ROUTE_PUBLIC row): a node's registration with its join
                   * token, which the handler proves */
    SC_AGENT,     /* a node's agent account: signed in, and the domain answers 404 for any node
                   * but the caller's own (inv_heartbeat, the long poll's check) */
    SC_SIGNED_IN,
    SC_GLOBAL,
    SC_TENANT,
    SC_PROJECT,
    /* rows that span two tenants (an invitation: the user's home and the inviting tenant):
     * the path's {tenant} resolved (404 when missing), the action, if any, checked there, and
     * the transaction tied to it like SC_TENANT's (the invitation carries what it needs of
     * the other tenant: its project's name); with API_ACT_NONE no visibility is required,
     * the handler authorises per object (an inviter on the home's path: 403, not 404) */
    SC_TENANT_SPAN
} api_scope_kind;
enum { API_TX_NONE = 0, API_TX_READ, API_TX_WRITE };
/* a row's `act` where it checks no one action: at SC_SIGNED_IN none at all; at SC_TENANT /
 * SC_PROJECT the scope need only be visible to the caller (the handler filters what it shows) */
enum { API_ACT_NONE = -1, API_ACT_VISIBLE = -2 };

/* A {tenant}[/{project}] path, resolved by dispatch (SC_TENANT, SC_PROJECT, SC_TENANT_SPAN). */
typedef struct api_scope {
    tenancy_tenant t;
    tenancy_project p;
    int has_project;
} api_scope;

/*
 * What a declared route's handler gets: nothing it must set up itself.  The
 * transaction is open (the route's mode), the scope resolved and authorised,
 * the body parsed (ROUTE_BODY).  The handler calls the domain and sets the
 * reply; for a mutating route it may set `summary` (stolen) for the audit
 * event, which dispatch appends in the same transaction before it commits.
 */
typedef struct api_ctx {
    api_req *r;
    store_tx *tx;               /* NULL for API_TX_NONE */
    const auth_principal *who;  /* NULL on a public route */
    api_scope sc;               /* SC_TENANT / SC_PROJECT */
    json_t *body;               /* ROUTE_BODY: a JSON object, borrowed */
    json_t *summary;            /* the audit event's summary (owned; NULL: {}); on a failure,
                                 * the refusal's event says it (a join token refused) */
    void (*on_commit)(api_req *r); /* run once the change has committed */
    /* a sensitive route (API_ROUTE's `sensitive`): the handler first runs as a dry run, in a
     * transaction dispatch always rolls back, so that an approval is only ever filed for a
     * change that would go through; `summary` then describes the change for the approval,
     * and `approval_tenant` (a name, "" none) the tenant whose admins see it */
    int dry_run;
    char approval_tenant[64];
    /* set in the dry run of a route only some of whose changes are the sensitive operation
     * (raising a tenant's quota, not lowering it): this one goes ahead without approval */
    int not_sensitive;
    /* run once the transaction has ended (committed, or a read's closed), before the reply
     * is final: work that must read the store outside the request's tenant-tied transaction
     * (a job's explanation simulates the whole cluster's round).  Its failure is answered. */
    int (*after)(struct api_ctx *c, gp_err *err);
    json_t *after_arg; /* the handler's, for `after` (owned: dispatch releases it) */
    /* a route with a `prepare` step (API_ROUTE's): what that step made outside the write
     * transaction (a password's hash, a document's extracted text), set by it and lent to
     * the route's handler in the later passes; dispatch frees it with prep_free */
    void *prep;
    void (*prep_free)(void *prep);
    /* a sensitive route's dry run: what the approval keeps instead of the request's body
     * (owned; NULL: the body as sent), e.g. a password only as its hash */
    json_t *approval_body;
} api_ctx;

/* A declared route's handler: GP_OK commits; anything else rolls back, and
 * dispatch answers `err` unless the handler set an error reply itself. */
typedef int (*api_run)(api_ctx *c, gp_err *err);

typedef struct api_route {
    const char *method;
    const char *pattern;
    api_handler handler; /* a legacy route: it does every step itself; NULL when declared */
    const char *action;  /* audit/metrics name, "tenant.create" */
    int flags;
    /* a declared route (API_ROUTE in routes.c): dispatch does the pipeline */
    api_run run;
    int act;              /* the authz_action, checked at `scope` (SC_GLOBAL and below) */
    api_scope_kind scope;
    int tx;               /* API_TX_* */
    const char *sensitive; /* the policy operation this change is ("policy.change"), or NULL */
    /* work too slow to hold the write lock through (hashing a password, extracting a
     * document's text): dispatch first runs it in a read transaction, with the scope
     * resolved and authorised and the body parsed as for `run`, and hands what it sets in
     * c->prep to `run`, which re-checks what it reads (NULL: none) */
    api_run prepare;
} api_route;

typedef struct api_kv {
    char *key, *value;
} api_kv;

struct api_req {
    /* input */
    store_t *store;
    const api_config *cfg;
    int leader; /* 1 while this server leads (store_lead), 0 not, -1 a gateway alone */
    const api_route *route;
    router_match match;
    const char *method;
    char *path;
    char *authorization;
    api_kv *query;
    int nquery;
    const char *body;
    size_t body_len;
    char request_id[RND_ID_LEN];
    char source[64];
    auth_principal *who;
    int64_t start_us;
    /* what the handler is acting on, for audit (set with api_target()) */
    const char *a_type;
    char a_tenant[64], a_project[64], a_id[128];
    int audited;
    /* set while executing an approved sensitive request (h_approval.c) */
    const char *approval_id;
    char on_behalf[64]; /* audit: the requester the approver acted for */
    char actor[64];     /* audit: the actor of a request without a principal (a login's user) */
    char approval_note[64]; /* audit: why a sensitive operation went ahead unapproved */
    char *fail_summary; /* audit: a declared handler's summary of its refusal (owned) */
    /* the tenant the request's transaction was tied to (dispatch, for every tenant route:
     * PostgreSQL's row fence), "" none: what the isolation test reads back for each of them */
    char tied_tenant[RND_ID_LEN];
    /* output */
    int status;
    json_t *resp;     /* JSON response (owned) */
    char *resp_text;  /* or a text response (owned) */
    const char *content_type;
    const char *allow; /* Allow header for 405 */
    char allow_buf[48];
    api_kv headers[4];  /* extra response headers (api_header) */
    int nheaders;
    /* a streamed response (api_stream): pulled by the server after the handler returns */
    long (*stream_read)(void *cls, char *buf, size_t max); /* > 0 bytes, 0 end, < 0 abort */
    void (*stream_free)(void *cls);
    void *stream_cls;
    /* a deferred answer (api_defer): the HTTP layer's hook to send it once made, NULL where
     * requests are dispatched without one (unit tests): handlers then wait in place */
    void (*resume)(api_req *r);
    int deferred;
    /* the gateway's run-time state, NULL when this server does not serve /v1 */
    struct gw_runtime *gw;
    /* failed-login throttling, NULL: none (h_user.c) */
    struct api_login_guard *login_guard;
};

/*
 * Failed-login throttling (h_user.c): the limits per user name and per
 * source address; the failures themselves are in the store, shared by every
 * server (auth/throttle.h).  api__login_guard_new() returns NULL when both
 * limits are 0 (or out of memory); free with api__login_guard_free()
 * (NULL-safe).
 */
typedef struct api_login_guard api_login_guard;
api_login_guard *api__login_guard_new(int per_name, int per_addr);
void api__login_guard_free(api_login_guard *g);

/* Add a response header (copied; at most 4). */
void api_header(api_req *r, const char *name, const char *value);

/*
 * Answer `status` with a body produced as it comes: `read` fills buf with
 * the next bytes (returns how many, 0 at the end, < 0 to cut the
 * connection); `release` is called once when the response is done or the
 * client went away.  Both run on the worker thread that ran the handler,
 * one after the other (the HTTP layer sends what `read` made meanwhile).
 */
void api_stream(api_req *r, int status, const char *content_type,
                long (*read)(void *cls, char *buf, size_t max), void (*release)(void *cls),
                void *cls);

/* The route table (routes.c). */
extern const api_route api_routes[];
extern const size_t api_nroutes;

/*
 * Deferred answers.  A handler that would wait for an event (an agent's long
 * poll) calls api_defer(r) and returns without a reply; later, on any
 * thread, it sets the reply (api_reply...) and calls api_resume(r) exactly
 * once.  No thread waits meanwhile.  Only where r->resume is set (the HTTP
 * server); api_defer() returns 0 where it is not, and the handler then waits
 * in place.  api_defer() returns 1 once the request is deferred.
 */
int api_defer(api_req *r);
void api_resume(api_req *r);

/* Route, authenticate, run the handler and audit; fills r's output. */
void api__dispatch(api_req *r);

/* Release everything the request owns (not the struct itself). */
void api__req_release(api_req *r);

/*
 * Worker pool (workers.c): the threads that run handlers, so that the HTTP
 * layer's few event threads never block and a waiting connection holds no
 * thread.  At least `min` workers, at most `max` (started as tasks find
 * none idle; those beyond `min` end after 10 s idle); `stack` bytes of stack
 * each (0: the default).  api__pool_submit() queues fn(arg): 0, or -1 (out
 * of memory, or stopping).  api__pool_free() lets queued tasks run, waits
 * for every worker to end, and frees the pool (NULL-safe).
 */
typedef struct api_pool api_pool;
api_pool *api__pool_new(int min, int max, size_t stack);
int api__pool_submit(api_pool *p, void (*fn)(void *), void *arg);
void api__pool_free(api_pool *p);

/* Path parameter by name (never NULL for names in the route's pattern). */
const char *api_param(api_req *r, const char *name);

/* Query argument by name, or NULL. */
const char *api_query(api_req *r, const char *name);

/* Parse the body as a JSON object within the configured limits. OUT: *out (borrowed? no: new ref). */
int api_body(api_req *r, json_t **out);

/*
 * Request bodies against docs/openapi.json (schema.c): a route's body schema is
 * its operation's requestBody there.  api_schema_route_check: GP_OK when `rt`
 * has none or `body` satisfies it, else GP_EINVALID naming the field (dispatch
 * answers 400 before the handler runs).  api_schema_check: the same check of
 * `v` against `schema`, $refs resolved in `doc` (pure).  api_schema_body_of:
 * the body schema of an operation of `doc`, or NULL.  api_schema_keywords_ok:
 * 1 when `schema` uses only keywords the check knows; else 0 with the first
 * other one in bad_kw.
 */
int api_schema_route_check(const api_route *rt, const json_t *body, gp_err *err);
int api_schema_check(const json_t *doc, const json_t *schema, const json_t *v, gp_err *err);
const json_t *api_schema_body_of(const json_t *doc, const char *method, const char *pattern);
int api_schema_keywords_ok(const json_t *doc, const json_t *schema, char *bad_kw, size_t n);

/* Set a JSON response (steals `body`). */
void api_reply(api_req *r, int status, json_t *body);

/* Set a text response (copies `text`). */
void api_reply_text(api_req *r, int status, const char *content_type, const char *text);
/* The same, taking `text` (malloc'd; NULL: "") over instead of copying it. */
void api_reply_text_take(api_req *r, int status, const char *content_type, char *text);

/* Set an error response {"error":{"code","message"}}. */
void api_error(api_req *r, int status, const char *code, const char *message);

/* Set the error response that matches `err` (status from the code). */
void api_fail(api_req *r, const gp_err *err);

/* HTTP status for a gp error code. */
int api_status_for(int code);

/*
 * In a declared handler: may the caller do `action` at (tenant_id, project_id)?  GP_OK, or
 * GP_EFORBIDDEN (403) / GP_ENOTFOUND (404, the object is not the caller's to see) set in
 * `err`, answered and audited as a denial by dispatch.  api_decided() does the same for a
 * decision already made (authz_owner_or and the like).
 */
int api_allow(api_ctx *c, int action, const char *tenant_id, const char *project_id,
              gp_err *err);
int api_decided(int decision, gp_err *err);

/*
 * Record what the request acts on, for its audit event: object type, id,
 * tenant and project names (NULL leaves a field as it is).  Values are copied.
 */
void api_target(api_req *r, const char *type, const char *id, const char *tenant,
                const char *project);

/* Append an audit event for this request inside `tx` and mark it audited. */
int api_audit(api_req *r, store_tx *tx, const char *result, int status, const char *summary,
              gp_err *err);

/*
 * Arm approvals for good once two or more live security-admins exist (the
 * bootstrap rule, docs/governance.md); called when a sensitive operation is
 * asked and whenever security-admin is granted.  OUT: *armed.
 */
int api__approvals_arm(store_tx *tx, int *armed, gp_err *err);

/* Parse an optional integer query argument in [lo, hi]; -1 with a 400 set. */
int api_query_int(api_req *r, const char *name, int64_t lo, int64_t hi, int64_t *out);

/* Build {"items":[...],"next":cursor-or-null} (steals items). */
json_t *api_list(json_t *items, const char *next);

/* Metrics (metrics.c). */
void api__metrics_init(void);
void api__metrics_observe(const char *method, const char *route, int status, int64_t dur_us);
char *api__metrics_render(void); /* heap text (free) */
void api__metrics_free(void);
/* A request refused 401 without a valid credential, by reason ("missing", "malformed",
 * "invalid", "credentials"): gpupool_auth_refusals_total{reason}. */
void api__metrics_auth_refusal(const char *reason);
/* A connection cut for its deadline ("headers", "body"; "pressure": headers, early, with
 * the connections three quarters full): gpupool_http_connections_dropped_total{reason}. */
void api__metrics_conn_dropped(const char *reason);
/* A request refused 400 for its framing or target: gpupool_http_malformed_total. */
void api__metrics_malformed(void);
/* A login refused 429 by its throttle, `by` "name_and_source" or "source":
 * gpupool_login_throttled_total{by}. */
void api__metrics_login_throttled(const char *by);
/* Open connections now (+1 accepted, -1 closed): gpupool_http_connections_open. */
void api__metrics_conn_open(int delta);
/* Handler threads started/ended (dall) and busy/free (dbusy): gpupool_http_workers. */
void api__metrics_workers(int dall, int dbusy);

/*
 * A log limiter: at most `per_sec` lines a second from one source of noise.
 * api__ratelog_take() says whether to log this line (1) or not (0, counted as
 * suppressed); both it and api__ratelog_flush() set *report to the number of
 * lines suppressed in an earlier window, once, for a "suppressed N" line (0:
 * nothing to report).  The window is a second (API_RATELOG_INIT) or `us`
 * microseconds (API_RATELOG_INIT_WINDOW; `per_sec` is then per window), and
 * starts with the first line after the previous window ended.
 * Thread-safe; `now_us` from a monotonic clock.
 */
typedef struct api_ratelog {
    pthread_mutex_t mu;
    int64_t window;  /* when the window being counted started (now_us's clock) */
    int used;        /* lines logged in it */
    long suppressed; /* lines not logged since the last report */
    int64_t window_us; /* 0: one second */
} api_ratelog;
#define API_RATELOG_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0}
#define API_RATELOG_INIT_WINDOW(us) {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, (us)}
int api__ratelog_take(api_ratelog *rl, int per_sec, int64_t now_us, long *report);
void api__ratelog_flush(api_ratelog *rl, int64_t now_us, long *report);

/* Run an approved request as its requester (approved.c), and record its outcome; OUT:
 * *result, the approval as it then stands (with the result).  A failure of the execution is
 * its result; the return says whether the approval could be read back. */
int api__exec_approved(store_t *st, const api_config *cfg, const char *approval_id,
                       const char *approver, const char *source, const char *request_id,
                       json_t **result, gp_err *err);

/* Handlers. */
int h_healthz(api_ctx *c, gp_err *err);
int h_readyz(api_ctx *c, gp_err *err);
int h_metrics(api_ctx *c, gp_err *err);
int h_openapi(api_ctx *c, gp_err *err);
int h_whoami(api_ctx *c, gp_err *err);
int h_tenant_create(api_ctx *c, gp_err *err);
int h_tenant_list(api_ctx *c, gp_err *err);
int h_tenant_get(api_ctx *c, gp_err *err);
int h_project_create(api_ctx *c, gp_err *err);
int h_project_list(api_ctx *c, gp_err *err);
int h_project_get(api_ctx *c, gp_err *err);
/* tenant and project overviews (h_overview.c) */
int h_tenant_overview(api_ctx *c, gp_err *err);
int h_project_overview(api_ctx *c, gp_err *err);
/* the web console's static files (h_console.c) */
int h_console_index(api_ctx *c, gp_err *err);
int h_console_asset(api_ctx *c, gp_err *err);
int h_audit_list(api_ctx *c, gp_err *err);
int h_audit_verify(api_ctx *c, gp_err *err);
int h_audit_checkpoints(api_ctx *c, gp_err *err);
int h_audit_export(api_ctx *c, gp_err *err);
int h_login_prepare(api_ctx *c, gp_err *err);
int h_login(api_ctx *c, gp_err *err);
int h_user_create_prepare(api_ctx *c, gp_err *err);
int h_user_create(api_ctx *c, gp_err *err);
int h_user_list(api_ctx *c, gp_err *err);
int h_user_get(api_ctx *c, gp_err *err);
int h_user_update_prepare(api_ctx *c, gp_err *err);
int h_user_update(api_ctx *c, gp_err *err);
int h_token_create(api_ctx *c, gp_err *err);
int h_token_list(api_ctx *c, gp_err *err);
int h_token_revoke(api_ctx *c, gp_err *err);
int h_member_global_list(api_ctx *c, gp_err *err);
int h_member_global_put(api_ctx *c, gp_err *err);
int h_member_global_delete(api_ctx *c, gp_err *err);
int h_member_tenant_list(api_ctx *c, gp_err *err);
int h_member_tenant_put(api_ctx *c, gp_err *err);
int h_member_tenant_delete(api_ctx *c, gp_err *err);
int h_member_project_list(api_ctx *c, gp_err *err);
int h_member_project_put(api_ctx *c, gp_err *err);
int h_member_project_delete(api_ctx *c, gp_err *err);
/* invitations into another tenant (h_member.c) */
int h_invitation_tenant_list(api_ctx *c, gp_err *err);
int h_invitation_tenant_accept(api_ctx *c, gp_err *err);
int h_invitation_tenant_decline(api_ctx *c, gp_err *err);
int h_invitation_tenant_withdraw(api_ctx *c, gp_err *err);
int h_invitation_global_list(api_ctx *c, gp_err *err);
int h_invitation_global_accept(api_ctx *c, gp_err *err);
int h_invitation_global_decline(api_ctx *c, gp_err *err);
int h_invitation_global_withdraw(api_ctx *c, gp_err *err);
int h_policy_get(api_ctx *c, gp_err *err);
int h_policy_put(api_ctx *c, gp_err *err);
int h_approval_list(api_ctx *c, gp_err *err);
int h_approval_get(api_ctx *c, gp_err *err);
int h_approval_approve(api_ctx *c, gp_err *err);
int h_approval_reject(api_ctx *c, gp_err *err);
int h_vendor_create(api_ctx *c, gp_err *err);
int h_vendor_list(api_ctx *c, gp_err *err);
int h_vendor_revoke(api_ctx *c, gp_err *err);
int h_join_create(api_ctx *c, gp_err *err);
int h_join_list(api_ctx *c, gp_err *err);
int h_join_revoke(api_ctx *c, gp_err *err);
int h_agent_register(api_ctx *c, gp_err *err);
int h_agent_heartbeat(api_ctx *c, gp_err *err);
int h_agent_wait(api_ctx *c, gp_err *err); /* the agent's long poll (sched/loop.h) */
int h_node_list(api_ctx *c, gp_err *err);
int h_node_get(api_ctx *c, gp_err *err);
int h_node_history(api_ctx *c, gp_err *err);
int h_node_cordon(api_ctx *c, gp_err *err);
int h_node_uncordon(api_ctx *c, gp_err *err);
int h_node_drain(api_ctx *c, gp_err *err);
int h_node_pool(api_ctx *c, gp_err *err);
/* PATCH …/nodes/{node}/labels: labels ops set (rack, switch: topology for jobs that span nodes) */
int h_node_label(api_ctx *c, gp_err *err);
int h_gpu_list(api_ctx *c, gp_err *err);
int h_gpu_get(api_ctx *c, gp_err *err);
int h_gpu_history(api_ctx *c, gp_err *err);
int h_gpu_cordon(api_ctx *c, gp_err *err);
int h_gpu_uncordon(api_ctx *c, gp_err *err);
int h_gpu_drain(api_ctx *c, gp_err *err);
int h_gpu_reset(api_ctx *c, gp_err *err);
int h_gpu_mode(api_ctx *c, gp_err *err);
int h_gpu_move(api_ctx *c, gp_err *err);
int h_health_policy_get(api_ctx *c, gp_err *err);
int h_health_policy_put(api_ctx *c, gp_err *err);
int h_alarm_list(api_ctx *c, gp_err *err);
int h_alarm_ack(api_ctx *c, gp_err *err);
int h_class_create(api_ctx *c, gp_err *err);
int h_class_list(api_ctx *c, gp_err *err);
int h_class_get(api_ctx *c, gp_err *err);
int h_class_delete(api_ctx *c, gp_err *err);
int h_pool_create(api_ctx *c, gp_err *err);
int h_pool_list(api_ctx *c, gp_err *err);
int h_pool_get(api_ctx *c, gp_err *err);
int h_pool_put(api_ctx *c, gp_err *err);
int h_pool_delete(api_ctx *c, gp_err *err);
int h_wo_create(api_ctx *c, gp_err *err);
int h_wo_list(api_ctx *c, gp_err *err);
int h_wo_get(api_ctx *c, gp_err *err);
int h_wo_update(api_ctx *c, gp_err *err);
int h_wo_comment(api_ctx *c, gp_err *err);
int h_job_submit(api_ctx *c, gp_err *err);
int h_job_list(api_ctx *c, gp_err *err);
int h_job_get(api_ctx *c, gp_err *err);
int h_job_cancel(api_ctx *c, gp_err *err);
int h_job_priority(api_ctx *c, gp_err *err);
int h_job_explain(api_ctx *c, gp_err *err);
int h_job_logs(api_ctx *c, gp_err *err);
/* job arrays (h_job.c) */
int h_array_get(api_ctx *c, gp_err *err);
int h_array_cancel(api_ctx *c, gp_err *err);
int h_quota_get(api_ctx *c, gp_err *err);
int h_quota_put(api_ctx *c, gp_err *err);
/* PATCH …/quota: change only the ceilings the body names (null lifts one). */
int h_quota_patch(api_ctx *c, gp_err *err);
/*
 * The change of the request's tenant or project quota (h_job.c): `body` parsed whole (PUT)
 * or merged over the stored quota (`patch`), checked against the tenant's other ceilings,
 * saved; OUT: *next.  Sets the dry run's not_sensitive (only a raise of a tenant's waits for
 * approval), the audit summary (from, to) and the scheduler's wake on commit; the caller
 * replies (not on a dry run).
 */
int api_quota_change(api_ctx *c, json_t *body, int patch, quota_set *next, gp_err *err);
/* guaranteed shares (h_share.c) */
int h_share_get(api_ctx *c, gp_err *err);
int h_share_patch(api_ctx *c, gp_err *err);
int h_share_list(api_ctx *c, gp_err *err);
int h_share_project_get(api_ctx *c, gp_err *err);
int h_share_project_patch(api_ctx *c, gp_err *err);
int h_prio_list(api_ctx *c, gp_err *err);
int h_prio_get(api_ctx *c, gp_err *err);
int h_prio_create(api_ctx *c, gp_err *err);
int h_prio_put(api_ctx *c, gp_err *err);
int h_prio_delete(api_ctx *c, gp_err *err);
/* GET|PUT /api/v1/scheduler-policy: the reclaim cap and its window (share.h) */
int h_sched_policy_get(api_ctx *c, gp_err *err);
int h_sched_policy_put(api_ctx *c, gp_err *err);
/* advance reservations and maintenance windows (h_reservation.c) */
int h_reservation_list(api_ctx *c, gp_err *err);
int h_reservation_create(api_ctx *c, gp_err *err);
int h_reservation_get(api_ctx *c, gp_err *err);
int h_reservation_update(api_ctx *c, gp_err *err);
int h_reservation_delete(api_ctx *c, gp_err *err);
int h_binding_list(api_ctx *c, gp_err *err);
int h_binding_release(api_ctx *c, gp_err *err);
/* model services, endpoints, apps, API keys, usage records (h_model.c) */
int h_model_list(api_ctx *c, gp_err *err);
int h_model_create(api_ctx *c, gp_err *err);
int h_model_get(api_ctx *c, gp_err *err);
int h_model_update(api_ctx *c, gp_err *err);
int h_model_delete(api_ctx *c, gp_err *err);
int h_endpoint_add(api_ctx *c, gp_err *err);
int h_endpoint_remove(api_ctx *c, gp_err *err);
int h_app_list(api_ctx *c, gp_err *err);
int h_app_create(api_ctx *c, gp_err *err);
int h_app_delete(api_ctx *c, gp_err *err);
int h_key_list(api_ctx *c, gp_err *err);
int h_key_create(api_ctx *c, gp_err *err);
int h_key_get(api_ctx *c, gp_err *err);
int h_key_revoke(api_ctx *c, gp_err *err);
int h_usage_records(api_ctx *c, gp_err *err);
/* knowledge bases, documents, queries; applications bound to KBs (h_kb.c) */
int h_kb_list(api_ctx *c, gp_err *err);
int h_kb_create(api_ctx *c, gp_err *err);
int h_kb_get(api_ctx *c, gp_err *err);
int h_kb_update(api_ctx *c, gp_err *err);
int h_kb_delete(api_ctx *c, gp_err *err);
int h_kb_doc_list(api_ctx *c, gp_err *err);
int h_kb_doc_upload_prepare(api_ctx *c, gp_err *err); /* extracts outside the write lock */
int h_kb_doc_upload(api_ctx *c, gp_err *err);
int h_kb_doc_get(api_ctx *c, gp_err *err);
int h_kb_doc_delete(api_ctx *c, gp_err *err);
int h_kb_query(api_ctx *c, gp_err *err);
int h_app_rag_list(api_ctx *c, gp_err *err);
int h_app_rag_set(api_ctx *c, gp_err *err);
int h_app_rag_delete(api_ctx *c, gp_err *err);

/* Wake the scheduler thread for a round (sched/loop.h); called by the leader only (its
 * once-a-second tick, a leader's handler).  Never runs the round itself.  Returns GP_OK. */
int api__sched_round(store_t *st, gp_err *err);
/* Apply the card-hour ceilings' policy to running jobs (jobs_card_hours_enforce). */
int api__card_hours_enforce(store_t *st, gp_err *err);
/* The reservations' tick (rsv_tick): ends of windows, maintenance nodes; wakes what moved. */
int api__reservations_tick(store_t *st, gp_err *err);

/* A stall of the server, for node liveness: a quarter of the node timeout, 2 s at least. */
#define API_STALL_US(timeout_us) ((timeout_us) / 4 > 2000000 ? (timeout_us) / 4 : 2000000)

/* A node's state transitions, audited and contained (a lost node's or failed card's jobs
 * end), in `tx`; `r` names the actor and request (zeroed: the system's); `touch` (a JSON
 * array, may be NULL) gains the other nodes those jobs held, to wake once it commits
 * (h_node.c). */
struct inv_transition;
int api__node_transitions(api_req *r, store_tx *tx, const struct inv_transition *t, int n,
                          json_t *touch, gp_err *err);

/* Mark silent nodes unreachable and audit it (the server's reachability loop; inv_sweep has
 * the rules: observed_since_us, mass silences, *held).  A sweep that waited more than
 * API_STALL_US for the store's write lock judges nothing (heartbeats waited as long) and
 * sets *stalled (optional): the caller then starts watching afresh. */
int api__sweep_nodes(store_t *st, int64_t timeout_us, int64_t observed_since_us, int *held,
                     int *stalled, gp_err *err);

/* Metering (h_usage.c). */
int h_usage_report(api_ctx *c, gp_err *err);
int h_ratecard_list(api_ctx *c, gp_err *err);
int h_ratecard_create(api_ctx *c, gp_err *err);
int h_billing_get(api_ctx *c, gp_err *err);
int h_billing_put(api_ctx *c, gp_err *err);
int h_serving_cost(api_ctx *c, gp_err *err);

/* The gateway (h_gateway.c). */
void h_gw_chat(api_req *r);
void h_gw_completions(api_req *r);
void h_gw_embeddings(api_req *r);
void h_gw_models(api_req *r);
void h_gw_model(api_req *r);
void h_gw_responses(api_req *r);

#endif
