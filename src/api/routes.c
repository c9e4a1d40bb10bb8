/*
 * routes.c - the API's route table: one row per endpoint.
 *
 * Adding an endpoint: write the handler (h_<noun>.c), add one row here, add
 * the path to docs/openapi.json (a unit test fails until you do), test it.
 */
#include "api_int.h"

const api_route api_routes[] = {
    {"GET", "/healthz", h_healthz, "system.healthz", ROUTE_PUBLIC},
    {"GET", "/readyz", h_readyz, "system.readyz", ROUTE_PUBLIC},
    {"GET", "/metrics", h_metrics, "system.metrics", ROUTE_PUBLIC},
    {"GET", "/api/v1/openapi.json", h_openapi, "system.openapi", ROUTE_PUBLIC},
    {"GET", "/api/v1/whoami", h_whoami, "user.whoami", 0},
    {"GET", "/api/v1/tenants", h_tenant_list, "tenant.list", 0},
    {"POST", "/api/v1/tenants", h_tenant_create, "tenant.create", ROUTE_MUTATES},
    {"GET", "/api/v1/tenants/{tenant}", h_tenant_get, "tenant.get", 0},
    {"GET", "/api/v1/tenants/{tenant}/projects", h_project_list, "project.list", 0},
    {"POST", "/api/v1/tenants/{tenant}/projects", h_project_create, "project.create",
     ROUTE_MUTATES},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}", h_project_get, "project.get", 0},
    {"GET", "/api/v1/audit", h_audit_list, "audit.list", 0},
    {"GET", "/api/v1/audit/verify", h_audit_verify, "audit.verify", 0},
    {"GET", "/api/v1/audit/export", h_audit_export, "audit.export", 0},
    {"POST", "/api/v1/login", h_login, "user.login", ROUTE_PUBLIC | ROUTE_MUTATES},
    {"GET", "/api/v1/users", h_user_list, "user.list", 0},
    {"POST", "/api/v1/users", h_user_create, "user.create", ROUTE_MUTATES},
    {"GET", "/api/v1/users/{user}", h_user_get, "user.get", 0},
    {"PATCH", "/api/v1/users/{user}", h_user_update, "user.update", ROUTE_MUTATES},
    {"GET", "/api/v1/users/{user}/tokens", h_token_list, "token.list", 0},
    {"POST", "/api/v1/users/{user}/tokens", h_token_create, "token.create", ROUTE_MUTATES},
    {"DELETE", "/api/v1/users/{user}/tokens/{id}", h_token_revoke, "token.revoke",
     ROUTE_MUTATES},
    {"GET", "/api/v1/members", h_member_global_list, "member.list", 0},
    {"PUT", "/api/v1/members/{user}", h_member_global_put, "member.grant", ROUTE_MUTATES},
    {"DELETE", "/api/v1/members/{user}", h_member_global_delete, "member.revoke", ROUTE_MUTATES},
    {"GET", "/api/v1/tenants/{tenant}/members", h_member_tenant_list, "member.list", 0},
    {"PUT", "/api/v1/tenants/{tenant}/members/{user}", h_member_tenant_put, "member.grant",
     ROUTE_MUTATES},
    {"DELETE", "/api/v1/tenants/{tenant}/members/{user}", h_member_tenant_delete,
     "member.revoke", ROUTE_MUTATES},
    {"GET", "/api/v1/tenants/{tenant}/projects/{project}/members", h_member_project_list,
     "member.list", 0},
    {"PUT", "/api/v1/tenants/{tenant}/projects/{project}/members/{user}", h_member_project_put,
     "member.grant", ROUTE_MUTATES},
    {"DELETE", "/api/v1/tenants/{tenant}/projects/{project}/members/{user}",
     h_member_project_delete, "member.revoke", ROUTE_MUTATES},
    {"GET", "/api/v1/security-policy", h_policy_get, "policy.get", 0},
    {"PUT", "/api/v1/security-policy", h_policy_put, "policy.change", ROUTE_MUTATES},
    {"GET", "/api/v1/approvals", h_approval_list, "approval.list", 0},
    {"GET", "/api/v1/approvals/{id}", h_approval_get, "approval.get", 0},
    {"POST", "/api/v1/approvals/{id}/approve", h_approval_approve, "approval.approve",
     ROUTE_MUTATES},
    {"POST", "/api/v1/approvals/{id}/reject", h_approval_reject, "approval.reject",
     ROUTE_MUTATES},
    {"GET", "/api/v1/vendor-access", h_vendor_list, "vendor.list", 0},
    {"POST", "/api/v1/vendor-access", h_vendor_create, "vendor.create", ROUTE_MUTATES},
    {"DELETE", "/api/v1/vendor-access/{id}", h_vendor_revoke, "vendor.revoke", ROUTE_MUTATES},
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];

size_t api_route_count(void) { return api_nroutes; }
const char *api_route_method(size_t i) { return i < api_nroutes ? api_routes[i].method : NULL; }
const char *api_route_pattern(size_t i) { return i < api_nroutes ? api_routes[i].pattern : NULL; }
