/*
 * models.c - model services, their endpoints, applications, and resolving
 * a requested model name for a key (see gateway.h).
 */
#include "gateway.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQL: job j listens on endpoint e's port (jobs.listen_ports, "p1,p2,...", kept from its node's
 * reports by jobs_node_report): a job endpoint routes only there, so one tenant's endpoint never
 * reaches another tenant's job server on a shared node */
#define GW_PORT_OF_JOB "(',' || j.listen_ports || ',') LIKE ('%,' || CAST(e.port AS TEXT) || ',%')"

static int visibility_arg(json_t *spec, int may_publish, const char **out, gp_err *err) {
    int rc = jx_get_str(spec, "visibility", 0, out, err);
    if (rc) return rc;
    if (!*out) return GP_OK;
    if (strcmp(*out, "private") && strcmp(*out, "public"))
        return gp_err_set(err, GP_EINVALID, "visibility must be private or public");
    if (!strcmp(*out, "public") && !may_publish)
        return gp_err_set(err, GP_EFORBIDDEN, "only a platform-admin publishes a model");
    return GP_OK;
}

static int description_arg(json_t *spec, const char **out, gp_err *err) {
    int rc = jx_get_str(spec, "description", 0, out, err);
    if (!rc && *out && strlen(*out) > 1000)
        return gp_err_set(err, GP_EINVALID, "description is at most 1000 characters");
    return rc;
}

/* A public name must be unambiguous: no other tenant's public model may have it. */
static int public_name_free(store_tx *tx, const char *tenant_id, const char *name, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT COUNT(*) FROM models WHERE visibility = 'public' AND name = ?"
                         " AND tenant_id <> ?",
                         "ss", name, tenant_id);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t n = rc > 0 ? store_int(s, 0) : 0;
    store_done(s);
    if (rc < 0) return rc;
    return n ? gp_err_set(err, GP_ECONFLICT, "another tenant already publishes a model named '%s'",
                          name)
             : GP_OK;
}

int gw_model_create(store_tx *tx, const char *tenant_id, json_t *spec, const char *created_by,
                    int may_publish, char id[RND_ID_LEN], gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    static const char *const fields[] = {"name", "visibility", "description", NULL};
    const char *name, *vis = NULL, *desc = NULL;
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_str(spec, "name", 1, &name, err);
    if (!rc && !gp_name_valid(name))
        rc = gp_err_set(err, GP_EINVALID,
                        "name must be 1-63 lower-case letters, digits or '-' (not at the ends)");
    if (!rc) rc = visibility_arg(spec, may_publish, &vis, err);
    if (!rc) rc = description_arg(spec, &desc, err);
    if (!rc && vis && !strcmp(vis, "public")) rc = public_name_free(tx, tenant_id, name, err);
    if (rc) return rc;
    rnd_id(id);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO models (id, tenant_id, name, visibility, description, created_by,"
                    " created_at) VALUES (?,?,?,?,?,?,?)",
                    "ssssssi", id, tenant_id, name, vis ? vis : "private", desc ? desc : "",
                    created_by, gt_now_us());
    if (rc == GP_ECONFLICT) return gp_err_set(err, GP_ECONFLICT, "model '%s' already exists", name);
    return rc;
}

static int model_id(store_tx *tx, const char *tenant_id, const char *name, char id[RND_ID_LEN],
                    gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT id FROM models WHERE tenant_id = ? AND name = ?",
                         "ss", tenant_id, name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(id, RND_ID_LEN, "%s", store_text(s, 0));
    store_done(s);
    if (rc < 0) return rc;
    return rc ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "model not found");
}

int gw_model_update(store_tx *tx, const char *tenant_id, const char *name, json_t *spec,
                    int may_publish, gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    static const char *const fields[] = {"visibility", "description", NULL};
    const char *vis = NULL, *desc = NULL;
    char id[RND_ID_LEN];
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = model_id(tx, tenant_id, name, id, err);
    if (!rc) rc = visibility_arg(spec, may_publish, &vis, err);
    /* unpublishing is publishing's business too */
    if (!rc && vis && !strcmp(vis, "private") && !may_publish) {
        store_stmt *s;
        rc = store_query(tx, &s, err, "SELECT visibility FROM models WHERE id = ?", "s", id);
        if (!rc) {
            rc = store_step(s, err);
            int pub = rc > 0 && !strcmp(store_text(s, 0), "public");
            store_done(s);
            rc = rc < 0 ? rc
                 : pub  ? gp_err_set(err, GP_EFORBIDDEN, "only a platform-admin unpublishes a model")
                        : GP_OK;
        }
    }
    if (!rc) rc = description_arg(spec, &desc, err);
    if (!rc && vis && !strcmp(vis, "public")) rc = public_name_free(tx, tenant_id, name, err);
    if (!rc && vis)
        rc = store_exec(tx, NULL, err, "UPDATE models SET visibility = ? WHERE id = ?", "ss", vis, id);
    if (!rc && desc)
        rc = store_exec(tx, NULL, err, "UPDATE models SET description = ? WHERE id = ?", "ss", desc,
                        id);
    return rc;
}

/* A model's endpoint, as endpoints_of reads it (STORE_COLS). */
#define ENDPOINT_COLUMNS(X)                                                               \
    X(EC_ID, "id")                                                                        \
    X(EC_URL, "url")                                                                      \
    X(EC_JOB, "job_id")                                                                   \
    X(EC_PORT, "port")                                                                    \
    X(EC_ACCELERATOR, "accelerator")                                                      \
    X(EC_UPSTREAM_MODEL, "upstream_model")                                                \
    X(EC_HEALTH_PATH, "health_path")                                                      \
    X(EC_STATE, "state")                                                                  \
    X(EC_CHECKED, "checked_at")                                                           \
    X(EC_LAST_ERROR, "last_error")                                                        \
    X(EC_CREATED, "created_at")                                                           \
    X(EC_MAX_CONCURRENCY, "max_concurrency")                                              \
    X(EC_MAX_QUEUE, "max_queue")
enum { ENDPOINT_COLUMNS(STORE_COL_ENUM) EC__N };

static int endpoints_of(store_tx *tx, const char *model_id, json_t **out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ENDPOINT_COLUMNS) " FROM endpoints"
                         " WHERE model_id = ? ORDER BY created_at, id",
                         "s", model_id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "id", store_text(s, EC_ID),
                              "accelerator", store_text(s, EC_ACCELERATOR), "upstream_model",
                              store_text(s, EC_UPSTREAM_MODEL), "health_path",
                              store_text(s, EC_HEALTH_PATH), "state", store_text(s, EC_STATE),
                              "last_error", store_text(s, EC_LAST_ERROR), "created_at",
                              jx_time(store_int(s, EC_CREATED)));
        json_object_set_new(o, "max_concurrency", json_integer(store_int(s, EC_MAX_CONCURRENCY)));
        json_object_set_new(o, "max_queue", json_integer(store_int(s, EC_MAX_QUEUE)));
        if (*store_text(s, EC_JOB)) {
            json_object_set_new(o, "job", json_string(store_text(s, EC_JOB)));
            json_object_set_new(o, "port", json_integer(store_int(s, EC_PORT)));
        } else {
            json_object_set_new(o, "url", json_string(store_text(s, EC_URL)));
        }
        json_object_set_new(o, "checked_at",
                            store_int(s, EC_CHECKED) ? jx_time(store_int(s, EC_CHECKED))
                                                     : json_null());
        json_array_append_new(arr, o);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return GP_OK;
}

/* A model with its tenant's name, as models_query reads it (STORE_COLS). */
#define MODEL_COLUMNS(X)                                                                  \
    X(MC_ID, "m.id")                                                                      \
    X(MC_NAME, "m.name")                                                                  \
    X(MC_VISIBILITY, "m.visibility")                                                      \
    X(MC_DESCRIPTION, "m.description")                                                    \
    X(MC_CREATED_BY, "m.created_by")                                                      \
    X(MC_CREATED, "m.created_at")                                                         \
    X(MC_TENANT, "t.name")
enum { MODEL_COLUMNS(STORE_COL_ENUM) MC__N };

static int models_query(store_tx *tx, const char *tenant_id, const char *name, json_t **items,
                        gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MODEL_COLUMNS)
                         " FROM models m JOIN tenants t ON t.id = m.tenant_id"
                         " WHERE m.tenant_id = ? AND (? IS NULL OR m.name = ?)"
                         " ORDER BY m.name LIMIT 1000",
                         "sss", tenant_id, name, name);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "id", store_text(s, MC_ID), "name",
                           store_text(s, MC_NAME), "visibility", store_text(s, MC_VISIBILITY),
                           "description", store_text(s, MC_DESCRIPTION), "created_by",
                           store_text(s, MC_CREATED_BY), "tenant", store_text(s, MC_TENANT),
                           "created_at", jx_time(store_int(s, MC_CREATED))));
    store_done(s);
    size_t i;
    json_t *m;
    json_array_foreach(arr, i, m) {
        json_t *eps;
        if (rc < 0) break;
        rc = endpoints_of(tx, json_string_value(json_object_get(m, "id")), &eps, err);
        if (!rc) json_object_set_new(m, "endpoints", eps);
    }
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int gw_model_list(store_tx *tx, const char *tenant_id, json_t **items, gp_err *err) {
    return models_query(tx, tenant_id, NULL, items, err);
}

int gw_model_get(store_tx *tx, const char *tenant_id, const char *name, json_t **out,
                 char id[RND_ID_LEN], gp_err *err) {
    json_t *items;
    int rc = models_query(tx, tenant_id, name, &items, err);
    if (rc) return rc;
    json_t *m = json_array_get(items, 0);
    if (!m) {
        json_decref(items);
        return gp_err_set(err, GP_ENOTFOUND, "model not found");
    }
    if (id) snprintf(id, RND_ID_LEN, "%s", json_string_value(json_object_get(m, "id")));
    if (out) *out = json_incref(m);
    json_decref(items);
    return GP_OK;
}

int gw_model_delete(store_tx *tx, const char *tenant_id, const char *name, gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    char id[RND_ID_LEN];
    int rc = model_id(tx, tenant_id, name, id, err);
    if (!rc) rc = store_exec(tx, NULL, err, "DELETE FROM endpoints WHERE model_id = ?", "s", id);
    if (!rc) rc = store_exec(tx, NULL, err, "DELETE FROM models WHERE id = ?", "s", id);
    return rc;
}

/* An http(s) base URL without credentials, query or fragment; OUT: without a trailing '/'. */
static int url_ok(const char *u, char out[512], gp_err *err) {
    size_t n = strlen(u);
    if (n < 8 || n > 500 || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)))
        return gp_err_set(err, GP_EINVALID, "url must be an http:// or https:// base URL");
    const char *host = strstr(u, "://") + 3;
    const char *slash = strchr(host, '/');
    size_t hl = slash ? (size_t)(slash - host) : strlen(host);
    if (!hl || memchr(host, '@', hl))
        return gp_err_set(err, GP_EINVALID, "url must name a host and carry no credentials");
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#' || (unsigned char)*p >= 0x7f)
            return gp_err_set(err, GP_EINVALID, "url must not hold spaces, a query or a fragment");
    snprintf(out, 512, "%s", u);
    while (n > 0 && out[n - 1] == '/') out[--n] = '\0';
    return GP_OK;
}

static int path_ok(const char *p, gp_err *err) {
    if (!p) return GP_OK;
    if (*p != '/' || strlen(p) > 200)
        return gp_err_set(err, GP_EINVALID, "health_path must start with '/' (at most 200 characters)");
    for (; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '#')
            return gp_err_set(err, GP_EINVALID, "health_path must be a plain path");
    return GP_OK;
}

static int short_text(json_t *spec, const char *key, size_t max, const char **out, gp_err *err) {
    int rc = jx_get_str(spec, key, 0, out, err);
    if (rc) return rc;
    if (*out && strlen(*out) > max)
        return gp_err_set(err, GP_EINVALID, "%s is at most %zu characters", key, max);
    for (const char *p = *out; p && *p; p++)
        if ((unsigned char)*p < ' ')
            return gp_err_set(err, GP_EINVALID, "%s must not hold control characters", key);
    return GP_OK;
}

/* A model's and its tenant's endpoint counts, as gw_endpoint_add reads them (STORE_COLS; the
 * parameters: model, tenant). */
#define ENDPOINT_COUNT_COLUMNS(X)                                                         \
    X(NC_PER_MODEL, "(SELECT COUNT(*) FROM endpoints WHERE model_id = ?)")                \
    X(NC_PER_TENANT, "(SELECT COUNT(*) FROM endpoints e JOIN models m ON m.id = e.model_id" \
                     " WHERE m.tenant_id = ?)")
enum { ENDPOINT_COUNT_COLUMNS(STORE_COL_ENUM) NC__N };

int gw_endpoint_add(store_tx *tx, const char *tenant_id, const char *model_id, json_t *spec,
                    char id[RND_ID_LEN], gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    static const char *const fields[] = {"url", "job", "port", "accelerator", "upstream_model",
                                         "health_path", "max_concurrency", "max_queue", NULL};
    const char *url = NULL, *job = NULL, *acc = NULL, *um = NULL, *hp = NULL;
    int64_t port = 0, mc = 0, mq = GW_DEFAULT_QUEUE;
    int has_port = 0, has_mc = 0, has_mq = 0;
    char base[512] = "";
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_str(spec, "url", 0, &url, err);
    if (!rc) rc = jx_get_str(spec, "job", 0, &job, err);
    if (!rc) rc = jx_get_int(spec, "port", 0, &port, &has_port, err);
    if (!rc) rc = short_text(spec, "accelerator", 63, &acc, err);
    if (!rc) rc = short_text(spec, "upstream_model", 127, &um, err);
    if (!rc) rc = jx_get_str(spec, "health_path", 0, &hp, err);
    if (!rc) rc = path_ok(hp, err);
    if (!rc) rc = jx_get_int(spec, "max_concurrency", 0, &mc, &has_mc, err);
    if (!rc) rc = jx_get_int(spec, "max_queue", 0, &mq, &has_mq, err);
    if (rc) return rc;
    if (!has_mq) mq = GW_DEFAULT_QUEUE;
    if (mc < 0 || mc > GW_MAX_CONCURRENCY)
        return gp_err_set(err, GP_EINVALID, "max_concurrency must be 0 (no bound) .. %d",
                          GW_MAX_CONCURRENCY);
    if (mq < 0 || mq > GW_MAX_QUEUE)
        return gp_err_set(err, GP_EINVALID, "max_queue must be 0 .. %d", GW_MAX_QUEUE);
    if (has_mq && !mc)
        return gp_err_set(err, GP_EINVALID, "max_queue goes with max_concurrency");
    if (!url == !job)
        return gp_err_set(err, GP_EINVALID, "give either url, or job and port");
    if (url && (rc = url_ok(url, base, err))) return rc;
    if (url && (rc = gw_url_check(base, err))) return rc;
    if (url && has_port) return gp_err_set(err, GP_EINVALID, "port goes with job, not url");
    if (job) {
        if (!has_port || port < 1 || port > 65535)
            return gp_err_set(err, GP_EINVALID, "port must be 1..65535");
        store_stmt *s;
        /* the job must be one of this tenant's: another tenant's job is "not found" */
        rc = store_query(tx, &s, err, "SELECT COUNT(*) FROM jobs WHERE id = ? AND tenant_id = ?",
                         "ss", job, tenant_id);
        if (rc) return rc;
        rc = store_step(s, err);
        int64_t n = rc > 0 ? store_int(s, 0) : 0;
        store_done(s);
        if (rc < 0) return rc;
        if (!n) return gp_err_set(err, GP_EINVALID, "job '%.40s' is not a job of this tenant", job);
    }
    /* bounded: per model (what routing uses) and per tenant */
    store_stmt *s;
    rc = store_query(tx, &s, err, "SELECT " STORE_COLS(ENDPOINT_COUNT_COLUMNS), "ss", model_id,
                     tenant_id);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t per_model = rc > 0 ? store_int(s, NC_PER_MODEL) : 0,
            per_tenant = rc > 0 ? store_int(s, NC_PER_TENANT) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if (per_model >= GW_MAX_ENDPOINTS)
        return gp_err_set(err, GP_ECONFLICT, "a model has at most %d endpoints", GW_MAX_ENDPOINTS);
    if (per_tenant >= GW_MAX_TENANT_ENDPOINTS)
        return gp_err_set(err, GP_ECONFLICT, "a tenant has at most %d endpoints",
                          GW_MAX_TENANT_ENDPOINTS);
    rnd_id(id);
    return store_exec(tx, NULL, err,
                      "INSERT INTO endpoints (id, model_id, url, job_id, port, accelerator,"
                      " upstream_model, health_path, created_at, max_concurrency, max_queue)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                      "ssssisssiii", id, model_id, base, job ? job : "", port, acc ? acc : "",
                      um ? um : "", hp ? hp : "/models", gt_now_us(), mc, mq);
}

int gw_endpoint_remove(store_tx *tx, const char *model_id, const char *id, gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    int changes = 0;
    int rc = store_exec(tx, &changes, err, "DELETE FROM endpoints WHERE id = ? AND model_id = ?",
                        "ss", id, model_id);
    if (!rc && !changes) rc = gp_err_set(err, GP_ENOTFOUND, "endpoint not found");
    return rc;
}

/* ---- applications ---- */

int gw_app_create(store_tx *tx, const char *project_id, json_t *spec, char id[RND_ID_LEN],
                  gp_err *err) {
    static const char *const fields[] = {"name", "description", NULL};
    const char *name, *desc = NULL;
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_str(spec, "name", 1, &name, err);
    if (!rc && !gp_name_valid(name))
        rc = gp_err_set(err, GP_EINVALID,
                        "name must be 1-63 lower-case letters, digits or '-' (not at the ends)");
    if (!rc) rc = description_arg(spec, &desc, err);
    if (rc) return rc;
    rnd_id(id);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO apps (id, project_id, name, description, created_at)"
                    " VALUES (?,?,?,?,?)",
                    "ssssi", id, project_id, name, desc ? desc : "", gt_now_us());
    if (rc == GP_ECONFLICT) return gp_err_set(err, GP_ECONFLICT, "app '%s' already exists", name);
    return rc;
}

/* An app with its count of live keys, as gw_app_list and gw_app_delete read it (STORE_COLS). */
#define APP_COLUMNS(X)                                                                    \
    X(PC_ID, "a.id")                                                                      \
    X(PC_NAME, "a.name")                                                                  \
    X(PC_DESCRIPTION, "a.description")                                                    \
    X(PC_CREATED, "a.created_at")                                                         \
    X(PC_LIVE_KEYS, "(SELECT COUNT(*) FROM api_keys k WHERE k.app_id = a.id AND k.revoked_at = 0)")
enum { APP_COLUMNS(STORE_COL_ENUM) PC__N };

int gw_app_list(store_tx *tx, const char *project_id, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(APP_COLUMNS)
                         " FROM apps a WHERE a.project_id = ? ORDER BY a.name LIMIT 1000",
                         "s", project_id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:I}", "name", store_text(s, PC_NAME),
                                             "description", store_text(s, PC_DESCRIPTION),
                                             "created_at", jx_time(store_int(s, PC_CREATED)),
                                             "keys", (json_int_t)store_int(s, PC_LIVE_KEYS)));
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int gw_app_delete(store_tx *tx, const char *project_id, const char *name, gp_err *err) {
    gw_cache_changed(); /* the read caches of this process: refused at once */
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(APP_COLUMNS)
                         " FROM apps a WHERE a.project_id = ? AND a.name = ?",
                         "ss", project_id, name);
    if (rc) return rc;
    char id[RND_ID_LEN] = "";
    int64_t live = 0;
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(id, sizeof id, "%s", store_text(s, PC_ID));
        live = store_int(s, PC_LIVE_KEYS);
    }
    store_done(s);
    if (rc < 0) return rc;
    if (!rc) return gp_err_set(err, GP_ENOTFOUND, "app not found");
    if (live)
        return gp_err_set(err, GP_ECONFLICT, "app '%s' still has %lld live key(s): revoke them first",
                          name, (long long)live);
    /* its knowledge-base bindings (src/kb) go with it */
    rc = store_exec(tx, NULL, err, "DELETE FROM kb_app_rag WHERE app_id = ?", "s", id);
    return rc ? rc : store_exec(tx, NULL, err, "DELETE FROM apps WHERE id = ?", "s", id);
}

/* ---- routing ---- */

int gw_key_allows(const gw_key *k, const char *model) {
    if (!json_array_size(k->models)) return 1;
    size_t i;
    json_t *v;
    json_array_foreach(k->models, i, v) if (!strcmp(json_string_value(v), model)) return 1;
    return 0;
}

/* A usable endpoint of a model with its job's host, as gw_resolve reads it (STORE_COLS). */
#define ROUTE_COLUMNS(X)                                                                  \
    X(RC_ID, "e.id")                                                                      \
    X(RC_URL, "e.url")                                                                    \
    X(RC_PORT, "e.port")                                                                  \
    X(RC_ACCELERATOR, "e.accelerator")                                                    \
    X(RC_UPSTREAM_MODEL, "e.upstream_model")                                              \
    X(RC_HOSTNAME, "MIN(COALESCE(n.hostname, ''))")                                       \
    X(RC_NODE, "MIN(COALESCE(n.name, ''))")                                               \
    X(RC_STATE, "e.state")                                                                \
    X(RC_MAX_CONCURRENCY, "e.max_concurrency")                                            \
    X(RC_MAX_QUEUE, "e.max_queue")                                                        \
    X(RC_JOB, "e.job_id")
enum { ROUTE_COLUMNS(STORE_COL_ENUM) RC__N };

int gw_resolve(store_tx *tx, const gw_key *k, const char *model, gw_route *out, gp_err *err) {
    memset(out, 0, sizeof *out);
    if (!model || !gw_key_allows(k, model))
        return gp_err_set(err, GP_ENOTFOUND, "The model '%.100s' does not exist or you do not have "
                                             "access to it.", model ? model : "");
    store_stmt *s;
    /* the key's own tenant first, then a public model; a job endpoint counts while the job runs */
    int rc = store_query(
        tx, &s, err,
        "SELECT " STORE_COLS(MODEL_COLUMNS)
        " FROM models m JOIN tenants t ON t.id = m.tenant_id WHERE m.name = ?"
        " AND (m.tenant_id = ? OR m.visibility = 'public')"
        " ORDER BY (m.tenant_id = ?) DESC LIMIT 1",
        "sss", model, k->tenant_id, k->tenant_id);
    if (rc) return rc;
    char mid[RND_ID_LEN] = "";
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(mid, sizeof mid, "%s", store_text(s, MC_ID));
        snprintf(out->model_tenant, sizeof out->model_tenant, "%s", store_text(s, MC_TENANT));
    }
    store_done(s);
    if (rc < 0) return rc;
    if (!rc)
        return gp_err_set(err, GP_ENOTFOUND, "The model '%.100s' does not exist or you do not have "
                                             "access to it.", model);
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(ROUTE_COLUMNS) " FROM endpoints e"
                     " LEFT JOIN jobs j ON j.id = e.job_id AND j.state = 'running'"
                     /* only a port the job's own processes listen on (never another job's) */
                     " AND " GW_PORT_OF_JOB
                     " LEFT JOIN bindings b ON b.job_id = j.id AND b.end_us IS NULL"
                     " LEFT JOIN nodes n ON n.name = b.node"
                     " WHERE e.model_id = ?"
                     " AND (e.job_id = '' OR n.name IS NOT NULL)"
                     " GROUP BY e.id, e.state, e.max_concurrency, e.max_queue"
                     " ORDER BY e.created_at, e.id",
                     "s", mid);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0 && out->n < GW_MAX_ENDPOINTS) {
        gw_endpoint *e = &out->ep[out->n++];
        snprintf(e->id, sizeof e->id, "%s", store_text(s, RC_ID));
        if (*store_text(s, RC_URL)) {
            snprintf(e->base, sizeof e->base, "%s", store_text(s, RC_URL));
        } else {
            const char *host =
                *store_text(s, RC_HOSTNAME) ? store_text(s, RC_HOSTNAME) : store_text(s, RC_NODE);
            snprintf(e->base, sizeof e->base, "http://%s:%lld/v1", host,
                     (long long)store_int(s, RC_PORT));
            e->job = 1;
            /* what the per-request check compares with the port set (gw_cache_ports_check) */
            snprintf(e->job_id, sizeof e->job_id, "%s", store_text(s, RC_JOB));
            snprintf(e->node, sizeof e->node, "%s", store_text(s, RC_NODE));
            e->port = (int)store_int(s, RC_PORT);
        }
        snprintf(e->accelerator, sizeof e->accelerator, "%s", store_text(s, RC_ACCELERATOR));
        snprintf(e->upstream_model, sizeof e->upstream_model, "%s",
                 store_text(s, RC_UPSTREAM_MODEL));
        e->healthy = strcmp(store_text(s, RC_STATE), "unhealthy") != 0;
        e->max_concurrency = (int)store_int(s, RC_MAX_CONCURRENCY);
        e->max_queue = (int)store_int(s, RC_MAX_QUEUE);
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int gw_route_order(const gw_route *r, const int *usable, unsigned long rr,
                   int order[GW_MAX_ENDPOINTS], int *panic) {
    int n = r->n < 0 ? 0 : r->n > GW_MAX_ENDPOINTS ? GW_MAX_ENDPOINTS : r->n, k = 0;
    *panic = 0;
    if (!n) return 0;
    unsigned long start = rr % (unsigned long)n;
    for (int i = 0; i < n; i++) {
        int j = (int)((start + (unsigned long)i) % (unsigned long)n);
        if (!r->ep[j].closed && r->ep[j].healthy && (!usable || usable[j])) order[k++] = j;
    }
    if (k) return k;
    /* every endpoint down or ejected: try them all anyway - but never a job endpoint whose port
     * its job does not report open (it may be another tenant's server by now) */
    for (int i = 0; i < n; i++) {
        int j = (int)((start + (unsigned long)i) % (unsigned long)n);
        if (!r->ep[j].closed) order[k++] = j;
    }
    *panic = k > 0;
    return k;
}

int gw_port_listed(const char *list, int port) {
    if (!list || port < 1 || port > 65535) return 0;
    const char *p = list;
    while (*p) {
        long v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 6) {
            v = v * 10 + (*p++ - '0');
            digits++;
        }
        if (!digits) return 0;           /* malformed: nothing is listed */
        if (*p && *p != ',') return 0;
        if (v == port) return 1;
        if (*p == ',') p++;
    }
    return 0;
}

int gw_models_for_key(store_tx *tx, const gw_key *k, json_t **data, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MODEL_COLUMNS)
                         " FROM models m JOIN tenants t ON t.id = m.tenant_id"
                         " WHERE m.tenant_id = ? OR m.visibility = 'public'"
                         " ORDER BY m.name, (m.tenant_id = ?) DESC LIMIT 1000",
                         "ss", k->tenant_id, k->tenant_id);
    if (rc) return rc;
    json_t *arr = json_array();
    char last[128] = "";
    while ((rc = store_step(s, err)) > 0) {
        const char *name = store_text(s, MC_NAME);
        if (!strcmp(name, last) || !gw_key_allows(k, name)) continue; /* own model shadows a public one */
        snprintf(last, sizeof last, "%s", name);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:s}", "id", name, "object", "model",
                                             "created",
                                             (json_int_t)(store_int(s, MC_CREATED) / 1000000),
                                             "owned_by", store_text(s, MC_TENANT)));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *data = arr;
    return GP_OK;
}

/* An endpoint with its job's state, host and port check, as gw_endpoint_targets reads it
 * (STORE_COLS). */
#define TARGET_COLUMNS(X)                                                                 \
    X(TC_ID, "e.id")                                                                      \
    X(TC_URL, "e.url")                                                                    \
    X(TC_PORT, "e.port")                                                                  \
    X(TC_HEALTH_PATH, "e.health_path")                                                    \
    X(TC_JOB, "e.job_id")                                                                 \
    X(TC_JOB_STATE, "MIN(COALESCE(j.state, ''))")                                         \
    X(TC_HOSTNAME, "MIN(COALESCE(n.hostname, ''))")                                       \
    X(TC_NODE, "MIN(COALESCE(n.name, ''))")                                               \
    X(TC_PORT_OPEN, "MIN(CASE WHEN " GW_PORT_OF_JOB " THEN 1 ELSE 0 END)")
enum { TARGET_COLUMNS(STORE_COL_ENUM) TC__N };

int gw_endpoint_targets(store_tx *tx, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(TARGET_COLUMNS)
                         " FROM endpoints e LEFT JOIN jobs j ON j.id = e.job_id"
                         " LEFT JOIN bindings b ON b.job_id = j.id AND b.end_us IS NULL"
                         " LEFT JOIN nodes n ON n.name = b.node GROUP BY e.id ORDER BY e.id",
                         "");
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        char base[600], why[160] = "";
        const char *job = store_text(s, TC_JOB);
        if (*job) {
            const char *host =
                *store_text(s, TC_HOSTNAME) ? store_text(s, TC_HOSTNAME) : store_text(s, TC_NODE);
            if (strcmp(store_text(s, TC_JOB_STATE), "running") || !*host) {
                base[0] = '\0';
            } else if (!store_int(s, TC_PORT_OPEN)) {
                base[0] = '\0';
                snprintf(why, sizeof why, "job %.40s does not listen on port %lld (yet)", job,
                         (long long)store_int(s, TC_PORT));
            } else {
                snprintf(base, sizeof base, "http://%s:%lld/v1", host,
                         (long long)store_int(s, TC_PORT));
            }
        } else {
            snprintf(base, sizeof base, "%s", store_text(s, TC_URL));
        }
        json_t *t = json_pack("{s:s,s:s,s:s,s:s}", "id", store_text(s, TC_ID), "base", base,
                              "health_path", store_text(s, TC_HEALTH_PATH), "job", job);
        if (*why) json_object_set_new(t, "why", json_string(why));
        json_array_append_new(arr, t);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int gw_endpoint_set_state(store_tx *tx, const char *id, const char *state, const char *error,
                          const char *detail, gp_err *err) {
    return store_exec(tx, NULL, err,
                      "UPDATE endpoints SET state = ?, last_error = ?, last_error_detail = ?,"
                      " checked_at = ? WHERE id = ?",
                      "sssis", state, error ? error : "", detail ? detail : "", gt_now_us(), id);
}

int gw_model_error_details(store_tx *tx, json_t *model, gp_err *err) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(model, "endpoints"), i, e) {
        store_stmt *s;
        int rc = store_query(tx, &s, err, "SELECT last_error_detail FROM endpoints WHERE id = ?",
                             "s", json_string_value(json_object_get(e, "id")));
        if (rc) return rc;
        rc = store_step(s, err);
        if (rc > 0) json_object_set_new(e, "last_error_detail", json_string(store_text(s, 0)));
        store_done(s);
        if (rc < 0) return rc;
    }
    return GP_OK;
}

int gw_model_is_public(store_tx *tx, const char *model_id, int *pub, gp_err *err) {
    store_stmt *s;
    *pub = 0;
    int rc = store_query(tx, &s, err, "SELECT visibility FROM models WHERE id = ?", "s", model_id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) *pub = !strcmp(store_text(s, 0), "public");
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}
