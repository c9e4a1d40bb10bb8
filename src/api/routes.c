/*
 * routes.c - the API's route table: one row per endpoint.
 *
 * Adding an endpoint: write the handler (h_<noun>.c), add one DECLARED row
 * here, add the path to docs/openapi.json (a unit test fails until you do),
 * test it.  The row says where the route acts and what it needs; dispatch
 * does it (docs/request-path.md).  The few rows in the legacy shape say why.
 */
#include "api_int.h"

/*
 * A declared route (issue 34, ../shared/PIPELINE.md): the row says where it
 * acts and what it needs, and dispatch does it (api.c run_declared): the
 * transaction, the scope and its authorisation (the action, -1 for none at
 * SC_SIGNED_IN), the body, the audit event, the commit.  Every argument is
 * given: nothing is left to a default.
 */
#define DECLARED(method, pattern, run, name, flags, scope, act, tx)                              \
    { method, pattern, NULL, name, flags, run, act, scope, tx, NULL, NULL }
/* ... with a `prepare` step run first in a read transaction: work too slow to hold the
 * write lock through (a password's hash, a document's text) */
#define DECLARED_PREPARED(method, pattern, prepare, run, name, flags, scope, act, tx)             \
    { method, pattern, NULL, name, flags, run, act, scope, tx, NULL, prepare }
/* ... a change that is a sensitive operation `op` of the security policy: dispatch runs the
 * handler as a dry run first, then files the request for approval (docs/governance.md) */
#define DECLARED_SENSITIVE(method, pattern, run, name, flags, scope, act, op)                    \
    { method, pattern, NULL, name, flags, run, act, scope, API_TX_WRITE, op, NULL }
#define DECLARED_SENSITIVE_PREPARED(method, pattern, prepare, run, name, flags, scope, act, op)  \
    { method, pattern, NULL, name, flags, run, act, scope, API_TX_WRITE, op, prepare }

/* the prefixes of tenant and project routes */
#define T "/api/v1/tenants/{tenant}"
#define P "/api/v1/tenants/{tenant}/projects/{project}"

const api_route api_routes[] = {
    DECLARED("GET", "/healthz", h_healthz, "system.healthz", ROUTE_PUBLIC | ROUTE_GATEWAY,
             SC_PUBLIC, API_ACT_NONE, API_TX_NONE),
    DECLARED("GET", "/readyz", h_readyz, "system.readyz", ROUTE_PUBLIC | ROUTE_GATEWAY, SC_PUBLIC,
             API_ACT_NONE, API_TX_NONE),
    /* public; a bearer token adds the platform gauges its roles may read (h_system.c) */
    DECLARED("GET", "/metrics", h_metrics, "system.metrics", ROUTE_PUBLIC | ROUTE_GATEWAY,
             SC_PUBLIC, API_ACT_NONE, API_TX_NONE),
    DECLARED("GET", "/api/v1/openapi.json", h_openapi, "system.openapi", ROUTE_PUBLIC, SC_PUBLIC,
             API_ACT_NONE, API_TX_NONE),
    /* the web console's page and assets, embedded from web/ (h_console.c) */
    DECLARED("GET", "/", h_console_index, "console.index", ROUTE_PUBLIC, SC_PUBLIC, API_ACT_NONE,
             API_TX_NONE),
    DECLARED("GET", "/console/{file}", h_console_asset, "console.asset", ROUTE_PUBLIC, SC_PUBLIC,
             API_ACT_NONE, API_TX_NONE),
    DECLARED("GET", "/api/v1/whoami", h_whoami, "user.whoami", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("GET", "/api/v1/tenants", h_tenant_list, "tenant.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED_SENSITIVE("POST", "/api/v1/tenants", h_tenant_create, "tenant.create",
                       ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_TENANT_CREATE, "tenant.create"),
    DECLARED("GET", "/api/v1/tenants/{tenant}", h_tenant_get, "tenant.get", 0, SC_TENANT,
             ACT_TENANT_READ, API_TX_READ),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects", h_project_list, "project.list", 0,
             SC_TENANT, API_ACT_VISIBLE, API_TX_READ),
    DECLARED("POST", "/api/v1/tenants/{tenant}/projects", h_project_create, "project.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_PROJECT_CREATE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}", h_project_get, "project.get",
             0, SC_PROJECT, ACT_PROJECT_READ, API_TX_READ),
    DECLARED("GET", T "/overview", h_tenant_overview, "tenant.overview", 0, SC_TENANT,
             ACT_TENANT_READ, API_TX_READ),
    DECLARED("GET", P "/overview", h_project_overview, "project.overview", 0, SC_PROJECT,
             ACT_PROJECT_READ, API_TX_READ),
    /* model services, endpoints, apps, API keys, usage records (h_model.c): a tenant's models
     * at SC_TENANT; apps and keys at SC_PROJECT (a project-user's own keys only: the handler
     * answers 404 for another user's); usage records at either */
    DECLARED("GET", "/api/v1/tenants/{tenant}/models", h_model_list,
             "model.list", 0, SC_TENANT, ACT_MODEL_READ, API_TX_READ),
    DECLARED("POST", "/api/v1/tenants/{tenant}/models", h_model_create,
             "model.create", ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_MODEL_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/models/{model}", h_model_get,
             "model.get", 0, SC_TENANT, ACT_MODEL_READ, API_TX_READ),
    DECLARED("PATCH", "/api/v1/tenants/{tenant}/models/{model}", h_model_update,
             "model.update", ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_MODEL_MANAGE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/models/{model}", h_model_delete,
             "model.delete", ROUTE_MUTATES, SC_TENANT, ACT_MODEL_MANAGE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/tenants/{tenant}/models/{model}/endpoints", h_endpoint_add,
             "endpoint.add", ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_MODEL_MANAGE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/models/{model}/endpoints/{id}", h_endpoint_remove,
             "endpoint.remove", ROUTE_MUTATES, SC_TENANT, ACT_MODEL_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}/apps", h_app_list,
             "app.list", 0, SC_PROJECT, ACT_KEY_READ, API_TX_READ),
    DECLARED("POST", "/api/v1/tenants/{tenant}/projects/{project}/apps", h_app_create,
             "app.create", ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT, ACT_APP_MANAGE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/projects/{project}/apps/{app}", h_app_delete,
             "app.delete", ROUTE_MUTATES, SC_PROJECT, ACT_APP_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}/keys", h_key_list,
             "key.list", 0, SC_PROJECT, ACT_KEY_READ, API_TX_READ),
    DECLARED("POST", "/api/v1/tenants/{tenant}/projects/{project}/keys", h_key_create,
             "key.create", ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT, ACT_KEY_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}/keys/{id}", h_key_get,
             "key.get", 0, SC_PROJECT, ACT_KEY_READ, API_TX_READ),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/projects/{project}/keys/{id}", h_key_revoke,
             "key.revoke", ROUTE_MUTATES, SC_PROJECT, ACT_KEY_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}/usage-records", h_usage_records,
             "usage.records", 0, SC_PROJECT, ACT_USAGE_READ, API_TX_READ),
    DECLARED("GET", "/api/v1/tenants/{tenant}/usage-records", h_usage_records,
             "usage.records", 0, SC_TENANT, ACT_USAGE_READ, API_TX_READ),
    /* knowledge bases (tenant and ops), documents, queries; apps bound to KBs (h_kb.c).  A
     * tenant's KBs at SC_TENANT, the tenant visible (the handler decides on the KB itself, 404
     * for one the caller cannot read); the ops KBs at SC_SIGNED_IN (a vendor reads those of its
     * work orders), created with kb.ops_write; a query is a read that takes a body; a document
     * upload extracts its text in a `prepare` step, outside the write lock */
    DECLARED("GET", "/api/v1/tenants/{tenant}/kbs", h_kb_list,
             "kb.list", 0, SC_TENANT, API_ACT_VISIBLE, API_TX_READ),
    DECLARED("POST", "/api/v1/tenants/{tenant}/kbs", h_kb_create,
             "kb.create", ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, API_ACT_VISIBLE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/kbs/{kb}", h_kb_get,
             "kb.get", 0, SC_TENANT, API_ACT_VISIBLE, API_TX_READ),
    DECLARED("PATCH", "/api/v1/tenants/{tenant}/kbs/{kb}", h_kb_update,
             "kb.update", ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, API_ACT_VISIBLE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/kbs/{kb}", h_kb_delete,
             "kb.delete", ROUTE_MUTATES, SC_TENANT, API_ACT_VISIBLE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/kbs/{kb}/documents", h_kb_doc_list,
             "kb.document.list", 0, SC_TENANT, API_ACT_VISIBLE, API_TX_READ),
    DECLARED_PREPARED("POST", "/api/v1/tenants/{tenant}/kbs/{kb}/documents",
                      h_kb_doc_upload_prepare, h_kb_doc_upload, "kb.document.upload",
                      ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, API_ACT_VISIBLE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/kbs/{kb}/documents/{doc}", h_kb_doc_get,
             "kb.document.get", 0, SC_TENANT, API_ACT_VISIBLE, API_TX_READ),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/kbs/{kb}/documents/{doc}", h_kb_doc_delete,
             "kb.document.delete", ROUTE_MUTATES, SC_TENANT, API_ACT_VISIBLE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/tenants/{tenant}/kbs/{kb}/query", h_kb_query,
             "kb.query", ROUTE_BODY, SC_TENANT, API_ACT_VISIBLE, API_TX_READ),
    DECLARED("GET", "/api/v1/ops/kbs", h_kb_list,
             "kb.list", 0, SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/ops/kbs", h_kb_create,
             "kb.create", ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_KB_OPS_WRITE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/ops/kbs/{kb}", h_kb_get,
             "kb.get", 0, SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("PATCH", "/api/v1/ops/kbs/{kb}", h_kb_update,
             "kb.update", ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/ops/kbs/{kb}", h_kb_delete,
             "kb.delete", ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/ops/kbs/{kb}/documents", h_kb_doc_list,
             "kb.document.list", 0, SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED_PREPARED("POST", "/api/v1/ops/kbs/{kb}/documents", h_kb_doc_upload_prepare,
                      h_kb_doc_upload, "kb.document.upload", ROUTE_MUTATES | ROUTE_BODY,
                      SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/ops/kbs/{kb}/documents/{doc}", h_kb_doc_get,
             "kb.document.get", 0, SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("DELETE", "/api/v1/ops/kbs/{kb}/documents/{doc}", h_kb_doc_delete,
             "kb.document.delete", ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/ops/kbs/{kb}/query", h_kb_query,
             "kb.query", ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}/apps/{app}/rag", h_app_rag_list,
             "app.rag.list", 0, SC_PROJECT, ACT_KEY_READ, API_TX_READ),
    DECLARED("PUT", "/api/v1/tenants/{tenant}/projects/{project}/apps/{app}/rag/{model}",
             h_app_rag_set, "app.rag.set", ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT, ACT_APP_MANAGE,
             API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/projects/{project}/apps/{app}/rag/{model}",
             h_app_rag_delete, "app.rag.delete", ROUTE_MUTATES, SC_PROJECT, ACT_APP_MANAGE,
             API_TX_WRITE),
    /* the audit: the whole for its readers, a tenant's (?tenant=) for its admins (h_audit.c);
     * an export is recorded (a change to the trail) and is sensitive (audit.export) */
    DECLARED("GET", "/api/v1/audit", h_audit_list, "audit.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("GET", "/api/v1/audit/verify", h_audit_verify, "audit.verify", 0, SC_GLOBAL,
             ACT_AUDIT_VERIFY, API_TX_NONE),
    DECLARED("GET", "/api/v1/audit/checkpoints", h_audit_checkpoints, "audit.checkpoints", 0,
             SC_GLOBAL, ACT_AUDIT_READ_ALL, API_TX_READ),
    DECLARED_SENSITIVE("GET", "/api/v1/audit/export", h_audit_export, "audit.export",
                       ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, "audit.export"),
    /* a login checks the password (tens of ms) in its `prepare` step, outside the write lock,
     * and then records the token, or the failure's count (h_user.c) */
    DECLARED_PREPARED("POST", "/api/v1/login", h_login_prepare, h_login, "user.login",
                      ROUTE_PUBLIC | ROUTE_MUTATES | ROUTE_BODY, SC_PUBLIC, API_ACT_NONE,
                      API_TX_WRITE),
    /* users and their tokens (h_user.c): who sees and administers whom the handler decides
     * (authz_can_admin_user).  A user's creation and a password change hash the password in
     * a `prepare` step; the creation is the sensitive operation user.create, and a new
     * password for an administrator set by someone else user.credentials */
    DECLARED("GET", "/api/v1/users", h_user_list, "user.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED_SENSITIVE_PREPARED("POST", "/api/v1/users", h_user_create_prepare, h_user_create,
                                "user.create", ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN,
                                API_ACT_NONE, "user.create"),
    DECLARED("GET", "/api/v1/users/{user}", h_user_get, "user.get", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED_SENSITIVE_PREPARED("PATCH", "/api/v1/users/{user}", h_user_update_prepare,
                                h_user_update, "user.update", ROUTE_MUTATES | ROUTE_BODY,
                                SC_SIGNED_IN, API_ACT_NONE, "user.credentials"),
    DECLARED("GET", "/api/v1/users/{user}/tokens", h_token_list, "token.list", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/users/{user}/tokens", h_token_create, "token.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/users/{user}/tokens/{id}", h_token_revoke, "token.revoke",
             ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    /* role grants (h_member.c): a global grant is the sensitive operation member.grant_global,
     * a tenant or project one member.grant */
    DECLARED("GET", "/api/v1/members", h_member_global_list, "member.list", 0, SC_GLOBAL,
             ACT_MEMBER_READ, API_TX_READ),
    DECLARED_SENSITIVE("PUT", "/api/v1/members/{user}", h_member_global_put, "member.grant",
                       ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_MEMBER_MANAGE,
                       "member.grant_global"),
    DECLARED("DELETE", "/api/v1/members/{user}", h_member_global_delete, "member.revoke",
             ROUTE_MUTATES, SC_GLOBAL, ACT_MEMBER_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/members", h_member_tenant_list, "member.list", 0,
             SC_TENANT, ACT_MEMBER_READ, API_TX_READ),
    DECLARED_SENSITIVE("PUT", "/api/v1/tenants/{tenant}/members/{user}", h_member_tenant_put,
                       "member.grant", ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_MEMBER_MANAGE,
                       "member.grant"),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/members/{user}", h_member_tenant_delete,
             "member.revoke", ROUTE_MUTATES, SC_TENANT, ACT_MEMBER_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/projects/{project}/members", h_member_project_list,
             "member.list", 0, SC_PROJECT, ACT_MEMBER_READ, API_TX_READ),
    DECLARED_SENSITIVE("PUT", "/api/v1/tenants/{tenant}/projects/{project}/members/{user}",
                       h_member_project_put, "member.grant", ROUTE_MUTATES | ROUTE_BODY,
                       SC_PROJECT, ACT_MEMBER_MANAGE, "member.grant"),
    DECLARED("DELETE", "/api/v1/tenants/{tenant}/projects/{project}/members/{user}",
             h_member_project_delete, "member.revoke", ROUTE_MUTATES, SC_PROJECT,
             ACT_MEMBER_MANAGE, API_TX_WRITE),
    /* invitations into another tenant, decided by the user's home (h_member.c): their rows
     * are two tenants' by design (SC_TENANT_SPAN: tied to the path's tenant, no visibility
     * required); a step authorises per invitation (its home's admin decides, its inviter
     * withdraws) */
    DECLARED("GET", T "/invitations", h_invitation_tenant_list, "invitation.list", 0,
             SC_TENANT_SPAN, ACT_MEMBER_READ, API_TX_READ),
    DECLARED("POST", T "/invitations/{id}/accept", h_invitation_tenant_accept,
             "invitation.accept", ROUTE_MUTATES, SC_TENANT_SPAN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", T "/invitations/{id}/decline", h_invitation_tenant_decline,
             "invitation.decline", ROUTE_MUTATES, SC_TENANT_SPAN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("DELETE", T "/invitations/{id}", h_invitation_tenant_withdraw,
             "invitation.withdraw", ROUTE_MUTATES, SC_TENANT_SPAN, API_ACT_NONE, API_TX_WRITE),
    /* the platform's users' invitations: a platform-admin decides (the handler answers 404
     * to anyone else) */
    DECLARED("GET", "/api/v1/invitations", h_invitation_global_list, "invitation.list", 0,
             SC_GLOBAL, ACT_USER_READ_ALL, API_TX_READ),
    DECLARED("POST", "/api/v1/invitations/{id}/accept", h_invitation_global_accept,
             "invitation.accept", ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/invitations/{id}/decline", h_invitation_global_decline,
             "invitation.decline", ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/invitations/{id}", h_invitation_global_withdraw,
             "invitation.withdraw", ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/security-policy", h_policy_get, "policy.get", 0, SC_GLOBAL,
             ACT_POLICY_READ, API_TX_READ),
    DECLARED_SENSITIVE("PUT", "/api/v1/security-policy", h_policy_put, "policy.change",
                       ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_POLICY_CHANGE, "policy.change"),
    /* approvals: security-admins see all and decide (never their own, nor for a user whose
     * password they set); a requester sees its own (h_approval.c) */
    DECLARED("GET", "/api/v1/approvals", h_approval_list, "approval.list", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("GET", "/api/v1/approvals/{id}", h_approval_get, "approval.get", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/approvals/{id}/approve", h_approval_approve, "approval.approve",
             ROUTE_MUTATES | ROUTE_BODY | ROUTE_BODY_OPTIONAL, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_WRITE),
    DECLARED("POST", "/api/v1/approvals/{id}/reject", h_approval_reject, "approval.reject",
             ROUTE_MUTATES | ROUTE_BODY | ROUTE_BODY_OPTIONAL, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_WRITE),
    /* time-boxed vendor access: ops grant (sensitive) and revoke; a vendor reads its own */
    DECLARED("GET", "/api/v1/vendor-access", h_vendor_list, "vendor.list", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED_SENSITIVE("POST", "/api/v1/vendor-access", h_vendor_create, "vendor.create",
                       ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_VENDOR_MANAGE, "vendor.create"),
    DECLARED("DELETE", "/api/v1/vendor-access/{id}", h_vendor_revoke, "vendor.revoke",
             ROUTE_MUTATES, SC_GLOBAL, ACT_VENDOR_MANAGE, API_TX_WRITE),
    /* join tokens, the agent's calls, nodes, GPUs, health policy, alarms (h_node.c): who reads
     * a node or card the handler decides (ops all, a vendor its grants', tenants none), then
     * the change's action */
    DECLARED("GET", "/api/v1/join-tokens", h_join_list, "jointoken.list", 0, SC_GLOBAL,
             ACT_NODE_MANAGE, API_TX_READ),
    DECLARED("POST", "/api/v1/join-tokens", h_join_create, "jointoken.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_NODE_MANAGE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/join-tokens/{id}", h_join_revoke, "jointoken.revoke",
             ROUTE_MUTATES, SC_GLOBAL, ACT_NODE_MANAGE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/agent/register", h_agent_register, "node.register",
             ROUTE_PUBLIC | ROUTE_MUTATES | ROUTE_BODY, SC_PUBLIC, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/agent/heartbeat", h_agent_heartbeat, "node.heartbeat", ROUTE_BODY,
             SC_AGENT, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/agent/wait", h_agent_wait, "node.wait", ROUTE_BODY, SC_AGENT,
             API_ACT_NONE, API_TX_READ),
    DECLARED("GET", "/api/v1/nodes", h_node_list, "node.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("GET", "/api/v1/nodes/{node}", h_node_get, "node.get", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("GET", "/api/v1/nodes/{node}/history", h_node_history, "node.history", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/nodes/{node}/cordon", h_node_cordon, "node.cordon", ROUTE_MUTATES,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/nodes/{node}/uncordon", h_node_uncordon, "node.uncordon",
             ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/nodes/{node}/drain", h_node_drain, "node.drain", ROUTE_MUTATES,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("PUT", "/api/v1/nodes/{node}/pool", h_node_pool, "node.pool",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    /* labels ops set on a node: `rack` and `switch` place jobs that span nodes (sched.h) */
    DECLARED("PATCH", "/api/v1/nodes/{node}/labels", h_node_label, "node.label",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/gpus", h_gpu_list, "gpu.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("GET", "/api/v1/gpus/{uuid}", h_gpu_get, "gpu.get", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("GET", "/api/v1/gpus/{uuid}/history", h_gpu_history, "gpu.history", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/gpus/{uuid}/cordon", h_gpu_cordon, "gpu.cordon", ROUTE_MUTATES,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/gpus/{uuid}/uncordon", h_gpu_uncordon, "gpu.uncordon",
             ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/gpus/{uuid}/drain", h_gpu_drain, "gpu.drain", ROUTE_MUTATES,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/gpus/{uuid}/reset", h_gpu_reset, "gpu.reset", ROUTE_MUTATES,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("PUT", "/api/v1/gpus/{uuid}/mode", h_gpu_mode, "gpu.mode",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/gpus/{uuid}/move", h_gpu_move, "gpu.move",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/health-policy", h_health_policy_get, "healthpolicy.get", 0,
             SC_GLOBAL, ACT_NODE_READ, API_TX_READ),
    DECLARED("PUT", "/api/v1/health-policy", h_health_policy_put, "healthpolicy.change",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_NODE_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/alarms", h_alarm_list, "alarm.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("POST", "/api/v1/alarms/{id}/ack", h_alarm_ack, "alarm.ack", ROUTE_MUTATES,
             SC_GLOBAL, ACT_NODE_MANAGE, API_TX_WRITE),
    /* declared: any signed-in user reads classes; platform-admins change them (h_catalog.c) */
    DECLARED("GET", "/api/v1/classes", h_class_list, "class.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("POST", "/api/v1/classes", h_class_create, "class.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_CLASS_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/classes/{name}", h_class_get, "class.get", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("DELETE", "/api/v1/classes/{name}", h_class_delete, "class.delete", ROUTE_MUTATES,
             SC_GLOBAL, ACT_CLASS_MANAGE, API_TX_WRITE),
    /* pools name the tenants that may use them: ops and admins read, platform-admins change */
    DECLARED("GET", "/api/v1/pools", h_pool_list, "pool.list", 0, SC_GLOBAL, ACT_NODE_READ,
             API_TX_READ),
    DECLARED("POST", "/api/v1/pools", h_pool_create, "pool.create", ROUTE_MUTATES | ROUTE_BODY,
             SC_GLOBAL, ACT_POOL_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/pools/{name}", h_pool_get, "pool.get", 0, SC_GLOBAL, ACT_NODE_READ,
             API_TX_READ),
    DECLARED("PUT", "/api/v1/pools/{name}", h_pool_put, "pool.change", ROUTE_MUTATES | ROUTE_BODY,
             SC_GLOBAL, ACT_POOL_MANAGE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/pools/{name}", h_pool_delete, "pool.delete", ROUTE_MUTATES,
             SC_GLOBAL, ACT_POOL_MANAGE, API_TX_WRITE),
    /* work orders: ops open them; a vendor sees and moves along those its grants name or that
     * are assigned to it (the handler decides); everyone else 403 on the list, 404 on one */
    DECLARED("GET", "/api/v1/work-orders", h_wo_list, "workorder.list", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/work-orders", h_wo_create, "workorder.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_WORKORDER_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/work-orders/{id}", h_wo_get, "workorder.get", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("PATCH", "/api/v1/work-orders/{id}", h_wo_update, "workorder.change",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("POST", "/api/v1/work-orders/{id}/comments", h_wo_comment, "workorder.comment",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    /* jobs, quotas, priority classes, bindings (h_job.c) */
    DECLARED("GET", P "/jobs", h_job_list, "job.list", 0, SC_PROJECT, ACT_JOB_READ, API_TX_READ),
    DECLARED("POST", P "/jobs", h_job_submit, "job.submit", ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT,
             ACT_JOB_SUBMIT, API_TX_WRITE),
    DECLARED("GET", P "/jobs/{id}", h_job_get, "job.get", 0, SC_PROJECT, ACT_JOB_READ,
             API_TX_READ),
    DECLARED("GET", P "/jobs/{id}/explain", h_job_explain, "job.explain", 0, SC_PROJECT,
             ACT_JOB_READ, API_TX_READ),
    /* a job array (job submit "array"): its tasks by state; cancel its unfinished tasks (the
     * submitter, or who manages the project's jobs) */
    DECLARED("GET", P "/arrays/{id}", h_array_get, "job.array.get", 0, SC_PROJECT, ACT_JOB_READ,
             API_TX_READ),
    DECLARED("POST", P "/arrays/{id}/cancel", h_array_cancel, "job.array.cancel", ROUTE_MUTATES,
             SC_PROJECT, ACT_JOB_READ, API_TX_WRITE),
    DECLARED("GET", P "/jobs/{id}/logs", h_job_logs, "job.logs", 0, SC_PROJECT, ACT_JOB_READ,
             API_TX_READ),
    /* the submitter, or who manages the project's jobs (the handler checks the job's owner) */
    DECLARED("POST", P "/jobs/{id}/cancel", h_job_cancel, "job.cancel", ROUTE_MUTATES, SC_PROJECT,
             ACT_JOB_READ, API_TX_WRITE),
    DECLARED("PUT", P "/jobs/{id}/priority", h_job_priority, "job.priority",
             ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT, ACT_JOB_READ, API_TX_WRITE),
    DECLARED("GET", T "/quota", h_quota_get, "quota.get", 0, SC_TENANT, ACT_TENANT_READ,
             API_TX_READ),
    /* raising a tenant's ceiling is sensitive; lowering one is not (the handler says which) */
    DECLARED_SENSITIVE("PUT", T "/quota", h_quota_put, "quota.tenant.change",
                       ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_QUOTA_TENANT_SET,
                       "tenant.quota.raise"),
    DECLARED_SENSITIVE("PATCH", T "/quota", h_quota_patch, "quota.tenant.change",
                       ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_QUOTA_TENANT_SET,
                       "tenant.quota.raise"),
    /* guaranteed shares (h_share.c): the guarantee fields of the tenant's quota, with what it
     * uses, borrows and lends; raising one is sensitive as raising a ceiling is */
    DECLARED("GET", "/api/v1/shares", h_share_list, "share.list", 0, SC_SIGNED_IN, API_ACT_NONE,
             API_TX_READ),
    DECLARED("GET", T "/shares", h_share_get, "share.get", 0, SC_TENANT, ACT_TENANT_READ,
             API_TX_READ),
    DECLARED_SENSITIVE("PATCH", T "/shares", h_share_patch, "share.change",
                       ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_QUOTA_TENANT_SET,
                       "tenant.quota.raise"),
    /* a project's part of its tenant's guarantee: set by those who set its quota */
    DECLARED("GET", P "/shares", h_share_project_get, "share.project.get", 0, SC_PROJECT,
             ACT_PROJECT_READ, API_TX_READ),
    DECLARED("PATCH", P "/shares", h_share_project_patch, "share.project.change",
             ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT, ACT_QUOTA_PROJECT_SET, API_TX_WRITE),
    DECLARED("GET", P "/quota", h_quota_get, "quota.get", 0, SC_PROJECT, ACT_PROJECT_READ,
             API_TX_READ),
    DECLARED("PUT", P "/quota", h_quota_put, "quota.project.change", ROUTE_MUTATES | ROUTE_BODY,
             SC_PROJECT, ACT_QUOTA_PROJECT_SET, API_TX_WRITE),
    DECLARED("PATCH", P "/quota", h_quota_patch, "quota.project.change",
             ROUTE_MUTATES | ROUTE_BODY, SC_PROJECT, ACT_QUOTA_PROJECT_SET, API_TX_WRITE),
    DECLARED("GET", "/api/v1/priority-classes", h_prio_list, "priority_class.list", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED_SENSITIVE("POST", "/api/v1/priority-classes", h_prio_create, "priority_class.create",
                       ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_PRIORITY_MANAGE,
                       "priority_class.change"),
    DECLARED("GET", "/api/v1/priority-classes/{name}", h_prio_get, "priority_class.get", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED_SENSITIVE("PUT", "/api/v1/priority-classes/{name}", h_prio_put,
                       "priority_class.change", ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL,
                       ACT_PRIORITY_MANAGE, "priority_class.change"),
    DECLARED_SENSITIVE("DELETE", "/api/v1/priority-classes/{name}", h_prio_delete,
                       "priority_class.delete", ROUTE_MUTATES, SC_GLOBAL, ACT_PRIORITY_MANAGE,
                       "priority_class.change"),
    /* the reclaim cap (docs/scheduling.md, Guarantees): read by anyone signed in (job
     * explain quotes it), changed by who manages priority classes */
    DECLARED("GET", "/api/v1/scheduler-policy", h_sched_policy_get, "scheduler_policy.get", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("PUT", "/api/v1/scheduler-policy", h_sched_policy_put, "scheduler_policy.change",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_PRIORITY_MANAGE, API_TX_WRITE),
    /* advance reservations and maintenance windows (h_reservation.c): the handler decides
     * who sees which (a tenant's, its members and the platform roles; maintenance, who reads
     * the inventory) and who changes them (reservation.manage for a tenant's,
     * maintenance.manage for maintenance), from the reservation's holder */
    DECLARED("GET", "/api/v1/reservations", h_reservation_list, "reservation.list", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/reservations", h_reservation_create, "reservation.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/reservations/{name}", h_reservation_get, "reservation.get", 0,
             SC_SIGNED_IN, API_ACT_NONE, API_TX_READ),
    DECLARED("PATCH", "/api/v1/reservations/{name}", h_reservation_update, "reservation.update",
             ROUTE_MUTATES | ROUTE_BODY, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    DECLARED("DELETE", "/api/v1/reservations/{name}", h_reservation_delete, "reservation.delete",
             ROUTE_MUTATES, SC_SIGNED_IN, API_ACT_NONE, API_TX_WRITE),
    /* ops and admins see all bindings; a tenant's readers name theirs (?tenant=) */
    DECLARED("GET", "/api/v1/bindings", h_binding_list, "binding.list", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/bindings/{id}/release", h_binding_release, "binding.release",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_NODE_MANAGE, API_TX_WRITE),
    /* metering: usage and cost reports, rate cards, billing modes (h_usage.c) */
    DECLARED("GET", "/api/v1/usage", h_usage_report, "usage.report", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("GET", "/api/v1/rate-cards", h_ratecard_list, "ratecard.list", 0, SC_SIGNED_IN,
             API_ACT_NONE, API_TX_READ),
    DECLARED("POST", "/api/v1/rate-cards", h_ratecard_create, "ratecard.create",
             ROUTE_MUTATES | ROUTE_BODY, SC_GLOBAL, ACT_RATECARD_MANAGE, API_TX_WRITE),
    DECLARED("GET", "/api/v1/tenants/{tenant}/billing", h_billing_get, "billing.get", 0,
             SC_TENANT, ACT_USAGE_READ, API_TX_READ),
    DECLARED("PUT", "/api/v1/tenants/{tenant}/billing", h_billing_put, "billing.set",
             ROUTE_MUTATES | ROUTE_BODY, SC_TENANT, ACT_RATECARD_MANAGE, API_TX_WRITE),
    /* legacy: it counts other tenants' calls of the model (h_usage.c) */
    /* the model's tenant checked in its tied transaction; its callers' figures read after */
    DECLARED("GET", T "/models/{model}/serving-cost", h_serving_cost, "model.serving_cost", 0,
             SC_TENANT, ACT_MODEL_READ, API_TX_READ),
    /* the OpenAI-compatible gateway: API keys, not user tokens (h_gateway.c); legacy: its
     * pipeline (key, limits, lease, stream) is its own, in src/gateway/request.c
     * (gw_request_run), and h_gateway.c only renders its answer */
    {"POST", "/v1/chat/completions", h_gw_chat, "gateway.chat", ROUTE_PUBLIC | ROUTE_GATEWAY},
    {"POST", "/v1/completions", h_gw_completions, "gateway.completions", ROUTE_PUBLIC | ROUTE_GATEWAY},
    {"POST", "/v1/embeddings", h_gw_embeddings, "gateway.embeddings", ROUTE_PUBLIC | ROUTE_GATEWAY},
    {"GET", "/v1/models", h_gw_models, "gateway.models", ROUTE_PUBLIC | ROUTE_GATEWAY},
    {"GET", "/v1/models/{model}", h_gw_model, "gateway.model", ROUTE_PUBLIC | ROUTE_GATEWAY},
    {"POST", "/v1/responses", h_gw_responses, "gateway.responses", ROUTE_PUBLIC | ROUTE_GATEWAY},
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];

size_t api_route_count(void) { return api_nroutes; }
const char *api_route_method(size_t i) { return i < api_nroutes ? api_routes[i].method : NULL; }
const char *api_route_pattern(size_t i) { return i < api_nroutes ? api_routes[i].pattern : NULL; }
