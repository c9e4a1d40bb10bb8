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
};

const size_t api_nroutes = sizeof api_routes / sizeof api_routes[0];

size_t api_route_count(void) { return api_nroutes; }
const char *api_route_method(size_t i) { return i < api_nroutes ? api_routes[i].method : NULL; }
const char *api_route_pattern(size_t i) { return i < api_nroutes ? api_routes[i].pattern : NULL; }
