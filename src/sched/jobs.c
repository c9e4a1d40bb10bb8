/*
 * jobs.c - jobs and bindings in the store, and the scheduler round's
 * snapshot and commit (see jobs.h).
 */
#include "jobs_int.h"

#include "../compat/compat.h"
#include "reservations.h"
#include "share.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/strbuf.h"
#include "../inventory/inventory.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int jobs__event(store_tx *tx, const char *job, const char *kind, const char *msg, gp_err *err) {
    char id[RND_ID_LEN];
    rnd_id(id);
    return store_exec(tx, NULL, err,
                      "INSERT INTO job_events (id, job_id, at, kind, message) VALUES (?,?,?,?,?)",
                      "ssiss", id, job, gt_now_us(), kind, msg);
}

/* ---- submit ---- */

/*
 * An OCI image reference as the node's container runtime gets it, one argument
 * after its options: 1-255 printable ASCII characters without spaces, and no
 * leading '-' (the runtime would take it for an option).
 */
static int image_valid(const char *ref) {
    size_t n = strlen(ref);
    if (n < 1 || n > 255 || ref[0] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ref[i] <= 0x20 || (unsigned char)ref[i] >= 0x7f) return 0;
    return 1;
}

/* A class's form and cards per unit, as jobs_submit reads them (STORE_COLS). */
#define SUBMIT_CLASS_COLUMNS(X)                                                           \
    X(SC_FORM, "form")                                                                    \
    X(SC_GPUS, "gpus")
enum { SUBMIT_CLASS_COLUMNS(STORE_COL_ENUM) SC__N };

int jobs_submit(store_tx *tx, const job_submit *js, char id[RND_ID_LEN], gp_err *err) {
    static const char *const fields[] = {"name", "class", "units", "priority_class", "command",
                                         "image", "preemptible", "recovery", "time_limit_s",
                                         "stack", "after", "array", "reservation", "nodes",
                                         "units_per_node", NULL};
    json_t *b = js->spec;
    const char *name, *cls, *pcn, *recovery, *image, *stack, *array, *rsv_name;
    int64_t units = 1, tl = 0, nodes = 0, per = 0;
    int pre = 1, has_units, has_pre, has_tl, has_nodes, has_per;
    int rc;
    if ((rc = jx_only_fields(b, fields, err)) || (rc = jx_get_str(b, "name", 1, &name, err)) ||
        (rc = jx_get_str(b, "class", 1, &cls, err)) ||
        (rc = jx_get_int(b, "units", 0, &units, &has_units, err)) ||
        (rc = jx_get_int(b, "nodes", 0, &nodes, &has_nodes, err)) ||
        (rc = jx_get_int(b, "units_per_node", 0, &per, &has_per, err)) ||
        (rc = jx_get_str(b, "priority_class", 0, &pcn, err)) ||
        (rc = jx_get_bool(b, "preemptible", 0, &pre, &has_pre, err)) ||
        (rc = jx_get_str(b, "recovery", 0, &recovery, err)) ||
        (rc = jx_get_str(b, "image", 0, &image, err)) ||
        (rc = jx_get_int(b, "time_limit_s", 0, &tl, &has_tl, err)) ||
        (rc = jx_get_str(b, "stack", 0, &stack, err)) ||
        (rc = jx_get_str(b, "array", 0, &array, err)) ||
        (rc = jx_get_str(b, "reservation", 0, &rsv_name, err)))
        return rc;
    /* an array: one task per index (arrays.c) */
    jobs_array_spec arr = {0, 0, 0};
    if (array && (rc = jobs_array_parse(array, &arr, err))) return rc;
    /* the jobs it starts after (deps.c), checked against the store below */
    jobs_dep deps[JOBS_MAX_DEPS];
    int ndeps = 0;
    if ((rc = jobs_dep_parse(json_object_get(b, "after"), deps, &ndeps, err))) return rc;
    /* what the image needs: "" or "<runtime>>=<version>" (compat.h), kept canonical */
    cp_req req;
    char why[200], stack_c[CP_VER_MAX + 16];
    if (cp_req_parse(stack, &req, why, sizeof why)) return gp_err_set(err, GP_EINVALID, "%s", why);
    cp_req_format(&req, stack_c, sizeof stack_c);
    if (image && !image_valid(image))
        return gp_err_set(err, GP_EINVALID, "image must be an OCI image reference: 1-255 printable "
                                            "ASCII characters, no spaces, not starting with '-'");
    if (!gp_name_valid(name)) return gp_err_set(err, GP_EINVALID, "job name: [a-z0-9-], 1-63");
    /* units, and the nodes it spans all at once (gang.c; 0: its units go wherever each fits) */
    if ((rc = jobs_gang_shape(units, has_units, nodes, has_nodes, per, has_per, &units, &nodes,
                              err)))
        return rc;
    if (tl < 0 || tl > 365LL * 86400) return gp_err_set(err, GP_EINVALID, "time_limit_s out of range");
    if (!recovery) recovery = "requeue";
    if (strcmp(recovery, "requeue") && strcmp(recovery, "fail"))
        return gp_err_set(err, GP_EINVALID, "recovery must be requeue or fail");
    json_t *cmd = json_object_get(b, "command");
    if (cmd) {
        size_t i;
        json_t *a;
        if (!json_is_array(cmd) || json_array_size(cmd) > 256)
            return gp_err_set(err, GP_EINVALID, "command must be an array of strings");
        json_array_foreach(cmd, i, a) if (!json_is_string(a) || json_string_length(a) > 4096) return
            gp_err_set(err, GP_EINVALID, "command must be an array of strings");
    }
    /* the class must exist */
    store_stmt *s;
    if ((rc = store_query(tx, &s, err, "SELECT COUNT(*) FROM classes WHERE name = ?", "s", cls)))
        return rc;
    rc = store_step(s, err);
    int64_t known = rc > 0 ? store_int(s, 0) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if (!known) return gp_err_set(err, GP_EINVALID, "resource class '%.64s' does not exist", cls);
    /* the reservation it runs in (reservations.c): the tenant's, held by its project, within
     * its cards and its window */
    char rsv_id[RND_ID_LEN] = "";
    if (rsv_name) {
        /* the cards it takes at the least: whole cards, or its slices packed on as few cards
         * as they fit (a count holds whole cards: docs/scheduling.md, "Reservations") */
        int64_t per_unit = 1, per_card = 1;
        if ((rc = store_query(tx, &s, err,
                              "SELECT " STORE_COLS(SUBMIT_CLASS_COLUMNS)
                              " FROM classes WHERE name = ?",
                              "s", cls)))
            return rc;
        if ((rc = store_step(s, err)) > 0) {
            inv_form f;
            if (!strncmp(store_text(s, SC_FORM), "whole", 5)) per_unit = store_int(s, SC_GPUS);
            else if (!inv_form_parse(store_text(s, SC_FORM), &f, NULL))
                per_card = f.kind == FORM_MIG ? 7 : f.percent > 0 ? 100 / f.percent : 1;
        }
        store_done(s);
        if (rc < 0) return rc;
        if (per_card < 1) per_card = 1;
        if ((rc = rsv_for_job(tx, rsv_name, js->tenant_id, js->project_id, cls,
                              (units * per_unit + per_card - 1) / per_card, tl, gt_now_us(),
                              rsv_id, err)))
            return rc;
    }
    prio_class pc;
    if ((rc = prio_get(tx, pcn ? pcn : "normal", &pc, err))) {
        /* a bad name in the request is the request's fault: 400, not 404 */
        if (rc == GP_ENOTFOUND) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
            rc = gp_err_set(err, GP_EINVALID, "%s", msg);
        }
        return rc;
    }
    rc = prio_allowed(&pc, js->project_class, js->submitter_roles, err);
    /* out of preemption only where the class lets the submitter's role (issue 33 item 5) */
    int opted_out = has_pre && !pre;
    if (!rc && opted_out) rc = prio_may_opt_out(&pc, js->submitter_roles, err);
    if (rc) {
        prio_release(&pc);
        return rc;
    }
    char *command = cmd ? jx_dump(cmd) : strdup("[]");
    int64_t now = gt_now_us();
    rnd_id(id);
    if (array) rc = jobs_array_add(tx, id, js, name, &arr, err);
    /* a job is preemptible only if both it and its priority class are */
    int preemptible = pc.preemptible && !opted_out;
    char task[RND_ID_LEN];
    for (int64_t i = arr.first; !rc && i <= arr.last; i++) {
        if (array) rnd_id(task);
        const char *jid = array ? task : id;
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO jobs (id, tenant_id, project_id, name, class, units,"
                        " priority_class, priority, preemptible, may_preempt, recovery, command,"
                        " time_limit_s, submitter, state, reason, created_at, queued_at, image,"
                        " stack, opted_out, array_id, array_index, reservation_id, nodes)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,'queued',?,?,?,?,?,?,?,NULLIF(?, -1),"
                        " NULLIF(?, ''),?)",
                        "sssssisiiississiissisisi", jid, js->tenant_id, js->project_id, name, cls,
                        units, pc.name, (int64_t)pc.value, (int64_t)preemptible,
                        (int64_t)pc.may_preempt, recovery, command, tl, js->submitter,
                        ndeps ? "waiting for its dependencies (job explain lists them)"
                              : "waiting for the scheduler",
                        now, now, image ? image : "", stack_c, (int64_t)opted_out,
                        array ? id : NULL, array ? i : (int64_t)-1, rsv_id, nodes);
        if (!rc) rc = jobs_deps_add(tx, jid, js->project_id, deps, ndeps, err);
        if (!rc) rc = jobs__event(tx, jid, "submitted", array ? "queued (array task)" : "queued",
                                  err);
    }
    free(command);
    prio_release(&pc);
    return rc;
}

/* ---- reads ---- */

/* A job's row as every read of one takes it (STORE_COLS). */
#define JOB_COLUMNS(X)                                                                        \
    X(JC_ID, "j.id")                                                                          \
    X(JC_TENANT, "t.name")                                                                    \
    X(JC_PROJECT, "p.name")                                                                   \
    X(JC_NAME, "j.name")                                                                      \
    X(JC_CLASS, "j.class")                                                                    \
    X(JC_UNITS, "j.units")                                                                    \
    X(JC_PRIORITY_CLASS, "j.priority_class")                                                  \
    X(JC_PRIORITY, "j.priority")                                                              \
    X(JC_PREEMPTIBLE, "j.preemptible")                                                        \
    X(JC_MAY_PREEMPT, "j.may_preempt")                                                        \
    X(JC_RECOVERY, "j.recovery")                                                              \
    X(JC_COMMAND, "j.command")                                                                \
    X(JC_TIME_LIMIT, "j.time_limit_s")                                                        \
    X(JC_SUBMITTER, "j.submitter")                                                            \
    X(JC_STATE, "j.state")                                                                    \
    X(JC_REASON, "j.reason")                                                                  \
    X(JC_CREATED, "j.created_at")                                                             \
    X(JC_STARTED, "j.started_at")                                                             \
    X(JC_ENDED, "j.ended_at")                                                                 \
    X(JC_PREEMPTIONS, "j.preemptions")                                                        \
    X(JC_PROJECT_ID, "j.project_id")                                                          \
    X(JC_EXIT_CODE, "j.exit_code")                                                            \
    X(JC_IMAGE, "j.image")                                                                    \
    X(JC_STACK, "j.stack")                                                                    \
    X(JC_ARRAY_ID, "COALESCE(j.array_id, '')")                                                \
    X(JC_ARRAY_INDEX, "COALESCE(j.array_index, 0)")                                           \
    X(JC_RESERVATION,                                                                         \
      "COALESCE((SELECT r.name FROM reservations r WHERE r.id = j.reservation_id), '')")      \
    X(JC_NODES, "j.nodes")                                                                    \
    X(JC_GUARANTEE_POOL, "COALESCE(j.guarantee_pool, '')")
enum { JOB_COLUMNS(STORE_COL_ENUM) JC__N };
#define JOB_COLS STORE_COLS(JOB_COLUMNS)

static json_t *job_json(store_stmt *s) {
    json_t *cmd = json_loads(store_text(s, JC_COMMAND), 0, NULL);
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:I,s:b,s:b,s:s,s:o,s:I,s:s,s:s,s:s,s:o,s:o,s:o,s:I,s:o}",
        "id", store_text(s, JC_ID), "tenant", store_text(s, JC_TENANT), "project",
        store_text(s, JC_PROJECT), "name", store_text(s, JC_NAME), "class", store_text(s, JC_CLASS),
        "units", (json_int_t)store_int(s, JC_UNITS), "priority_class",
        store_text(s, JC_PRIORITY_CLASS), "priority", (json_int_t)store_int(s, JC_PRIORITY),
        "preemptible", (int)store_int(s, JC_PREEMPTIBLE), "may_preempt",
        (int)store_int(s, JC_MAY_PREEMPT), "recovery", store_text(s, JC_RECOVERY), "command",
        cmd ? cmd : json_array(), "time_limit_s", (json_int_t)store_int(s, JC_TIME_LIMIT),
        "submitter", store_text(s, JC_SUBMITTER), "state", store_text(s, JC_STATE), "reason",
        store_text(s, JC_REASON), "created_at", jx_time(store_int(s, JC_CREATED)), "started_at",
        jx_time(store_int(s, JC_STARTED)), "ended_at", jx_time(store_int(s, JC_ENDED)),
        "preemptions", (json_int_t)store_int(s, JC_PREEMPTIONS), "exit_code",
        store_isnull(s, JC_EXIT_CODE) ? json_null() : json_integer(store_int(s, JC_EXIT_CODE)));
    /* the OCI image it runs under the node's container runtime; null: a plain process */
    const char *image = store_text(s, JC_IMAGE), *rname = store_text(s, JC_RESERVATION);
    if (o) json_object_set_new(o, "image", image[0] ? json_string(image) : json_null());
    /* the software stack the image needs ("rocm>=6.1"; "" when it said nothing) */
    if (o) json_object_set_new(o, "stack", json_string(store_text(s, JC_STACK)));
    /* a task of an array (arrays.c): the array and its index; null for a job of its own */
    if (o)
        json_object_set_new(o, "array",
                            store_text(s, JC_ARRAY_ID)[0]
                                ? json_pack("{s:s,s:I}", "id", store_text(s, JC_ARRAY_ID), "index",
                                            (json_int_t)store_int(s, JC_ARRAY_INDEX))
                                : json_null());
    /* the reservation it runs in (reservations.c), null for none */
    if (o) json_object_set_new(o, "reservation", rname[0] ? json_string(rname) : json_null());
    /* a job that spans nodes (gang.c): how many, and its units on each; null for one whose
     * units go wherever each fits */
    if (o) {
        int64_t nodes = store_int(s, JC_NODES);
        json_object_set_new(o, "nodes", nodes > 0 ? json_integer(nodes) : json_null());
        json_object_set_new(o, "units_per_node",
                            nodes > 0 ? json_integer(store_int(s, JC_UNITS) / nodes) : json_null());
    }
    /* what admission gave a job that waits admitted (sched.h step 6d): a pool where its
     * tenant's guarantee holds it, "*" the pools without one (its tenant's own guarantee) */
    const char *gpool = store_text(s, JC_GUARANTEE_POOL);
    if (o)
        json_object_set_new(o, "guarantee_pool",
                            gpool[0] && !strcmp(store_text(s, JC_STATE), "admitted")
                                ? json_string(gpool)
                                : json_null());
    return o;
}

/* A job's event, as jobs_get reads it (STORE_COLS). */
#define EVENT_COLUMNS(X)                                                                  \
    X(EV_AT, "at")                                                                        \
    X(EV_KIND, "kind")                                                                    \
    X(EV_MESSAGE, "message")
enum { EVENT_COLUMNS(STORE_COL_ENUM) EV__N };

int jobs_get(store_tx *tx, const char *id, json_t **out, char project_id[RND_ID_LEN],
             char submitter[64], gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " JOB_COLS " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                         " JOIN projects p ON p.id = j.project_id WHERE j.id = ?",
                         "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *o = rc > 0 ? job_json(s) : NULL;
    if (rc > 0 && project_id) snprintf(project_id, RND_ID_LEN, "%s", store_text(s, JC_PROJECT_ID));
    if (rc > 0 && submitter) snprintf(submitter, 64, "%s", store_text(s, JC_SUBMITTER));
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    json_t *binds, *events = json_array();
    if ((rc = bind_list(tx, NULL, id, NULL, 0, &binds, err))) {
        json_decref(o);
        json_decref(events);
        return rc;
    }
    json_object_set_new(o, "bindings", binds);
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(EVENT_COLUMNS) " FROM job_events WHERE job_id = ?"
                          " ORDER BY at, id",
                          "s", id)) == GP_OK) {
        while ((rc = store_step(s, err)) > 0)
            json_array_append_new(events, json_pack("{s:o,s:s,s:s}", "at",
                                                    jx_time(store_int(s, EV_AT)), "kind",
                                                    store_text(s, EV_KIND), "message",
                                                    store_text(s, EV_MESSAGE)));
        store_done(s);
    }
    json_object_set_new(o, "events", events);
    json_t *after = NULL;
    if (rc >= 0) rc = jobs_deps_json(tx, id, &after, NULL, err);
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    json_object_set_new(o, "after", after); /* the jobs it starts after (deps.c) */
    *out = o;
    return GP_OK;
}

int jobs_list(store_tx *tx, const char *tenant_id, const char *project_id, const char *state,
              const char *array, const char *match, json_t **items, gp_err *err) {
    store_stmt *s;
    /* match: the jobs named so, and those whose id begins so (4 characters at least) */
    int64_t mlen = match ? (int64_t)strlen(match) : 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " JOB_COLS " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                         " JOIN projects p ON p.id = j.project_id WHERE j.tenant_id = ?"
                         " AND (? IS NULL OR j.project_id = ?) AND (? IS NULL OR j.state = ?)"
                         " AND (? IS NULL OR j.array_id = ?)"
                         " AND (? IS NULL OR j.name = ?"
                         " OR (? >= 4 AND substr(j.id, 1, CAST(? AS INTEGER)) = ?))"
                         " ORDER BY j.created_at DESC, j.array_index, j.id LIMIT 1000",
                         "sssssssssiis", tenant_id, project_id, project_id, state, state, array,
                         array, match, match, mlen, mlen, match);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) json_array_append_new(arr, job_json(s));
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

static int end_bindings(store_tx *tx, const char *job, const char *reason, gp_err *err) {
    return store_exec(tx, NULL, err,
                      "UPDATE bindings SET end_us = ?, end_reason = ? WHERE job_id = ?"
                      " AND end_us IS NULL",
                      "iss", gt_now_us(), reason, job);
}

int jobs_cancel(store_tx *tx, const char *id, const char *actor, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE jobs SET state = 'cancelled', reason = ?, ended_at = ?"
                        " WHERE id = ? AND state IN ('queued','admitted','running')",
                        "sis", "cancelled", gt_now_us(), id);
    if (rc) return rc;
    if (!changes) return gp_err_set(err, GP_ECONFLICT, "the job has already ended");
    char msg[120];
    snprintf(msg, sizeof msg, "cancelled by %s", actor);
    if ((rc = end_bindings(tx, id, "cancelled", err))) return rc;
    return jobs__event(tx, id, "cancelled", msg, err);
}

int jobs_set_priority(store_tx *tx, const char *id, const prio_class *p, int opt_out,
                      const char *actor, int *preemptible, gp_err *err) {
    int changes = 0;
    assert(opt_out == 0 || opt_out == 1);
    int pre = p->preemptible && !opt_out;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE jobs SET priority_class = ?, priority = ?, may_preempt = ?,"
                        " preemptible = ?, opted_out = ?"
                        " WHERE id = ? AND state IN ('queued','admitted','running')",
                        "siiiis", p->name, (int64_t)p->value, (int64_t)p->may_preempt,
                        (int64_t)pre, (int64_t)opt_out, id);
    if (rc) return rc;
    if (!changes) return gp_err_set(err, GP_ECONFLICT, "the job has already ended");
    if (preemptible) *preemptible = pre;
    char msg[200];
    snprintf(msg, sizeof msg, "priority class set to %s (%d), %s, by %s", p->name, p->value,
             pre ? "preemptible" : "not preemptible", actor);
    return jobs__event(tx, id, "priority", msg, err);
}

int jobs_opted_out(store_tx *tx, const char *id, int *opted_out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT opted_out FROM jobs WHERE id = ?", "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    *opted_out = rc > 0 ? (int)store_int(s, 0) : 0;
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    return rc < 0 ? rc : GP_OK;
}

/* ---- bindings ---- */

/* A binding's row as bind_rows reads it (STORE_COLS). */
#define BIND_COLUMNS(X)                             \
    X(BC_ID, "b.id")                                \
    X(BC_JOB, "b.job_id")                           \
    X(BC_UNIT, "b.unit")                            \
    X(BC_GPU, "b.gpu_uuid")                         \
    X(BC_SLICE, "b.slice_uuid")                     \
    X(BC_NODE, "b.node")                            \
    X(BC_MODEL, "b.model")                          \
    X(BC_FORM, "b.form")                            \
    X(BC_WEIGHT, "b.weight_milli")                  \
    X(BC_TENANT, "b.tenant")                        \
    X(BC_PROJECT, "b.project")                      \
    X(BC_START, "b.start_us")                       \
    X(BC_END, "COALESCE(b.end_us, 0)")              \
    X(BC_END_REASON, "COALESCE(b.end_reason, '')")  \
    X(BC_JOB_NAME, "j.name")                        \
    X(BC_VENDOR, "b.vendor")
enum { BIND_COLUMNS(STORE_COL_ENUM) BC__N };
#define BIND_COLS STORE_COLS(BIND_COLUMNS)

static int bind_rows(store_stmt *s, json_t **items, gp_err *err) {
    json_t *arr = json_array();
    int rc;
    while ((rc = store_step(s, err)) > 0) {
        json_t *o = json_pack(
            "{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:f,s:s,s:s,s:o,s:o}", "id", store_text(s, BC_ID),
            "job", store_text(s, BC_JOB), "job_name", store_text(s, BC_JOB_NAME), "unit",
            (json_int_t)store_int(s, BC_UNIT), "gpu", store_text(s, BC_GPU), "node",
            store_text(s, BC_NODE), "model", store_text(s, BC_MODEL), "form",
            store_text(s, BC_FORM), "share", (double)store_int(s, BC_WEIGHT) / 1000.0, "tenant",
            store_text(s, BC_TENANT), "project", store_text(s, BC_PROJECT), "start",
            jx_time(store_int(s, BC_START)), "end", jx_time(store_int(s, BC_END)));
        const char *slice = store_text(s, BC_SLICE), *why = store_text(s, BC_END_REASON);
        if (slice[0]) json_object_set_new(o, "slice", json_string(slice));
        json_object_set_new(o, "vendor", json_string(store_text(s, BC_VENDOR)));
        if (why[0]) json_object_set_new(o, "end_reason", json_string(why));
        json_array_append_new(arr, o);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

/* bind_rows, and each open binding's `borrowed`: whether its job runs above its tenant's
 * guarantee now (share_open_marks; read after the rows: one statement at a time) */
static int marked_rows(store_tx *tx, store_stmt *s, json_t **items, gp_err *err) {
    json_t *arr = NULL;
    int rc = bind_rows(s, &arr, err);
    if (rc) return rc;
    json_t *marks = NULL, *o;
    size_t i;
    if ((rc = share_open_marks(tx, &marks, err))) {
        json_decref(arr);
        return rc;
    }
    json_array_foreach(arr, i, o) {
        if (!json_is_null(json_object_get(o, "end"))) continue;
        const char *job = json_string_value(json_object_get(o, "job"));
        json_object_set_new(o, "borrowed", json_boolean(json_is_true(json_object_get(marks, job))));
    }
    json_decref(marks);
    *items = arr;
    return GP_OK;
}

int bind_list(store_tx *tx, const char *gpu, const char *job, const char *tenant_id,
              int64_t at, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " BIND_COLS " FROM bindings b JOIN jobs j ON j.id = b.job_id"
                         " WHERE (? IS NULL OR b.gpu_uuid = ? OR b.slice_uuid = ?)"
                         " AND (? IS NULL OR b.job_id = ?) AND (? IS NULL OR b.tenant_id = ?)"
                         " AND (? = 0 OR (b.start_us <= ? AND (b.end_us IS NULL OR b.end_us > ?)))"
                         " ORDER BY b.start_us DESC, b.unit, b.id LIMIT 5000",
                         "sssssssiii", gpu, gpu, gpu, job, job, tenant_id, tenant_id, at, at, at);
    if (rc) return rc;
    return marked_rows(tx, s, items, err);
}

int64_t jobs__month_start(int64_t now, char month[16]) {
    time_t t = (time_t)(now / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    if (month) snprintf(month, 16, "%04d-%02d", (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100);
    tm.tm_mday = 1;
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    return (int64_t)timegm(&tm) * 1000000;
}

int bind_card_hours(store_tx *tx, const char *tenant_id, const char *project_id, int64_t now,
                    int64_t *out, gp_err *err) {
    store_stmt *s;
    int64_t m0 = jobs__month_start(now, NULL);
    /* weight (milli-card) x seconds held this month / 3600 = milli card-hours */
    int rc = store_query(tx, &s, err,
                         "SELECT COALESCE(SUM(weight_milli * ((CASE WHEN COALESCE(end_us, ?1) < ?1"
                         " THEN COALESCE(end_us, ?1) ELSE ?1 END)"
                         " - (CASE WHEN start_us > ?2 THEN start_us ELSE ?2 END)) / 1000000), 0)"
                         " FROM bindings WHERE tenant_id = ?3 AND (?4 IS NULL OR project_id = ?4)"
                         " AND COALESCE(end_us, ?1) > ?2",
                         "iiss", now, m0, tenant_id, project_id);
    if (rc) return rc;
    rc = store_step(s, err);
    *out = rc > 0 ? store_int(s, 0) / 3600 : 0;
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/* ---- containment ---- */

static int add_job_nodes(store_tx *tx, const char *job, json_t *nodes, gp_err *err);

/* End every open binding of `job` and requeue or fail it. OUT: outcome text. */
int jobs__stop(store_tx *tx, const char *job, const char *recovery, const char *end_reason,
                    const char *why, const char **outcome, gp_err *err) {
    int64_t now = gt_now_us();
    int rc = store_exec(tx, NULL, err,
                        "UPDATE bindings SET end_us = ?, end_reason = ? WHERE job_id = ?"
                        " AND end_us IS NULL",
                        "iss", now, end_reason, job);
    if (rc) return rc;
    int requeue = !strcmp(recovery, "requeue");
    char reason[240];
    snprintf(reason, sizeof reason, "%s: %s", requeue ? "requeued" : "failed", why);
    rc = requeue ? store_exec(tx, NULL, err,
                              "UPDATE jobs SET state = 'queued', reason = ? WHERE id = ?"
                              " AND state = 'running'",
                              "ss", reason, job)
                 : store_exec(tx, NULL, err,
                              "UPDATE jobs SET state = 'failed', reason = ?, ended_at = ?"
                              " WHERE id = ? AND state = 'running'",
                              "sis", reason, now, job);
    *outcome = requeue ? "requeued" : "failed";
    return rc ? rc : jobs__event(tx, job, end_reason, reason, err);
}

/* A running job on a lost node or card, as jobs_contain reads it (STORE_COLS). */
#define CONTAIN_COLUMNS(X)                                                                \
    X(CT_JOB, "j.id")                                                                     \
    X(CT_RECOVERY, "j.recovery")                                                          \
    X(CT_TENANT, "b.tenant")                                                              \
    X(CT_PROJECT, "b.project")
enum { CONTAIN_COLUMNS(STORE_COL_ENUM) CT__N };

int jobs_contain(store_tx *tx, const char *node, const char *gpu, const char *reason,
                 json_t **affected, gp_err *err) {
    store_stmt *s;
    json_t *out = json_array();
    int rc = store_query(tx, &s, err,
                         "SELECT DISTINCT " STORE_COLS(CONTAIN_COLUMNS) " FROM bindings b"
                         " JOIN jobs j ON j.id = b.job_id WHERE b.end_us IS NULL"
                         " AND j.state = 'running' AND (? IS NULL OR b.node = ?)"
                         " AND (? IS NULL OR b.gpu_uuid = ?) ORDER BY j.id",
                         "ssss", node, node, gpu, gpu);
    if (rc) {
        json_decref(out);
        return rc;
    }
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s}", "job", store_text(s, CT_JOB),
                                             "recovery", store_text(s, CT_RECOVERY), "tenant",
                                             store_text(s, CT_TENANT), "project",
                                             store_text(s, CT_PROJECT)));
    store_done(s);
    char why[200];
    if (gpu) snprintf(why, sizeof why, "GPU %s failed under it", gpu);
    else snprintf(why, sizeof why, "node %s lost", node ? node : "?");
    size_t i;
    json_t *a;
    json_array_foreach(out, i, a) {
        if (rc < 0) break;
        const char *outcome = "";
        /* the nodes it held (a job that spans nodes: the others stop it too) */
        json_t *nodes = json_array();
        rc = add_job_nodes(tx, json_string_value(json_object_get(a, "job")), nodes, err);
        json_object_set_new(a, "nodes", nodes);
        if (rc < 0) break;
        rc = jobs__stop(tx, json_string_value(json_object_get(a, "job")),
                      json_string_value(json_object_get(a, "recovery")), reason, why, &outcome,
                      err);
        json_object_del(a, "recovery");
        json_object_set_new(a, "outcome", json_string(outcome));
    }
    if (rc < 0) {
        json_decref(out);
        return rc;
    }
    if (affected) *affected = out;
    else json_decref(out);
    return GP_OK;
}

/* A binding with its job's recovery, as jobs_release_binding reads it (STORE_COLS). */
#define RELEASE_COLUMNS(X)                                                                \
    X(RB_JOB, "b.job_id")                                                                 \
    X(RB_RECOVERY, "j.recovery")                                                          \
    X(RB_ENDED, "COALESCE(b.end_us, 0)")
enum { RELEASE_COLUMNS(STORE_COL_ENUM) RB__N };

int jobs_release_binding(store_tx *tx, const char *binding_id, const char *why, gp_err *err) {
    store_stmt *s;
    char job[RND_ID_LEN], recovery[16];
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(RELEASE_COLUMNS) " FROM bindings b"
                         " JOIN jobs j ON j.id = b.job_id WHERE b.id = ?",
                         "s", binding_id);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t ended = rc > 0 ? store_int(s, RB_ENDED) : 0;
    if (rc > 0) {
        snprintf(job, sizeof job, "%s", store_text(s, RB_JOB));
        snprintf(recovery, sizeof recovery, "%s", store_text(s, RB_RECOVERY));
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "binding not found");
    if (rc < 0) return rc;
    if (ended) return gp_err_set(err, GP_ECONFLICT, "the binding has already ended");
    char msg[240];
    snprintf(msg, sizeof msg, "binding released by ops: %s", why);
    const char *outcome;
    return jobs__stop(tx, job, recovery, "released", msg, &outcome, err);
}

int bind_list_node(store_tx *tx, const char *node, int64_t at, json_t **items, gp_err *err) {
    store_stmt *s;
    /* the same fields as bind_list (a binding is a binding, whichever view lists it) */
    int rc = store_query(tx, &s, err,
                         "SELECT " BIND_COLS " FROM bindings b JOIN jobs j ON j.id = b.job_id"
                         " WHERE b.node = ? AND (? = 0 OR (b.start_us <= ? AND (b.end_us IS NULL OR b.end_us > ?)))"
                         " ORDER BY b.tenant, b.project, b.job_id, b.unit LIMIT 5000",
                         "siii", node, at, at, at);
    if (rc) return rc;
    return marked_rows(tx, s, items, err);
}

/* ---- workloads on the nodes ---- */

/* A running job's open binding on a node, as jobs_node_assignments reads it (STORE_COLS). */
#define ASSIGN_COLUMNS(X)                                                                 \
    X(NA_JOB, "j.id")                                                                     \
    X(NA_TENANT, "t.name")                                                                \
    X(NA_PROJECT, "p.name")                                                               \
    X(NA_COMMAND, "j.command")                                                            \
    X(NA_TIME_LIMIT, "j.time_limit_s")                                                    \
    X(NA_STARTED, "COALESCE(j.started_at, 0)")                                            \
    X(NA_CPUS, "c.cpus")                                                                  \
    X(NA_MEMORY, "c.memory_gib")                                                          \
    X(NA_GPU, "b.gpu_uuid")                                                               \
    X(NA_SLICE, "b.slice_uuid")                                                           \
    X(NA_SHARED_MEM, "b.shared_mem_gib")                                                  \
    X(NA_SHARED_PCT, "b.shared_pct")                                                      \
    X(NA_UNITS, "j.units")                                                                \
    X(NA_BINDING, "b.id")                                                                 \
    X(NA_IMAGE, "j.image")                                                                \
    X(NA_VENDOR, "COALESCE(g.vendor, b.vendor)")                                          \
    X(NA_CARD_INDEX, "COALESCE(g.idx, -1)")                                               \
    X(NA_SLICE_INDEX, "COALESCE((SELECT sl.idx FROM slices sl WHERE sl.uuid = b.slice_uuid), -1)")\
    X(NA_ARRAY, "COALESCE(j.array_id, '')")                                               \
    X(NA_ARRAY_INDEX, "COALESCE(j.array_index, 0)")                                       \
    X(NA_NODES, "j.nodes")
enum { ASSIGN_COLUMNS(STORE_COL_ENUM) NA__N };

int jobs_node_assignments(store_tx *tx, const char *node, json_t **out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ASSIGN_COLUMNS)
                         " FROM bindings b JOIN jobs j ON j.id = b.job_id"
                         " LEFT JOIN gpus g ON g.uuid = b.gpu_uuid"
                         " JOIN tenants t ON t.id = j.tenant_id JOIN projects p ON p.id = j.project_id"
                         " LEFT JOIN classes c ON c.name = j.class"
                         " WHERE b.node = ? AND b.end_us IS NULL AND j.state = 'running'"
                         /* a rank of a job that spans nodes that ended (exit 0) before rank 0
                          * is not started again (gang.c) */
                         " AND b.rank_done_us IS NULL"
                         " ORDER BY j.id, b.unit, b.id",
                         "s", node);
    if (rc) return rc;
    json_t *arr = json_array(), *cur = NULL;
    char last[RND_ID_LEN] = "";
    while ((rc = store_step(s, err)) > 0) {
        if (strcmp(last, store_text(s, NA_JOB)) != 0) {
            snprintf(last, sizeof last, "%s", store_text(s, NA_JOB));
            json_t *cmd = json_loads(store_text(s, NA_COMMAND), 0, NULL);
            int64_t units = store_int(s, NA_UNITS);
            cur = json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:o,s:I,s:I,s:[]}", "job", last,
                            "placement", store_text(s, NA_BINDING), "tenant",
                            store_text(s, NA_TENANT), "project", store_text(s, NA_PROJECT),
                            "command", cmd ? cmd : json_array(), "time_limit_s",
                            (json_int_t)store_int(s, NA_TIME_LIMIT), "started_at",
                            jx_time(store_int(s, NA_STARTED)), "cpus",
                            (json_int_t)(store_int(s, NA_CPUS) * units), "memory_gib",
                            (json_int_t)(store_int(s, NA_MEMORY) * units), "devices");
            if (store_text(s, NA_IMAGE)[0]) /* run it in a container of this image */
                json_object_set_new(cur, "image", json_string(store_text(s, NA_IMAGE)));
            /* the vendor of all its devices (one per job), and each device's card index */
            json_object_set_new(cur, "vendor", json_string(store_text(s, NA_VENDOR)));
            json_object_set_new(cur, "indexes", json_array());
            if (store_text(s, NA_ARRAY)[0]) /* a task of an array: GPUPOOL_ARRAY_ID, _INDEX */
                json_object_set_new(cur, "array",
                                    json_pack("{s:s,s:I}", "id", store_text(s, NA_ARRAY), "index",
                                              (json_int_t)store_int(s, NA_ARRAY_INDEX)));
            if (store_int(s, NA_NODES) > 0) /* spans nodes: its rank and rendezvous, below */
                json_object_set_new(cur, "gang", json_true());
            json_array_append_new(arr, cur);
        }
        const char *dev =
            store_text(s, NA_SLICE)[0] ? store_text(s, NA_SLICE) : store_text(s, NA_GPU);
        json_array_append_new(json_object_get(cur, "devices"), json_string(dev));
        json_array_append_new(json_object_get(cur, "indexes"),
                              json_integer(store_int(s, NA_CARD_INDEX)));
        if (store_text(s, NA_SLICE)[0]) {
            /* a slice: its index on the card too, parallel to devices */
            json_t *si = json_object_get(cur, "slice_indexes");
            if (!si) json_object_set_new(cur, "slice_indexes", si = json_array());
            json_array_append_new(si, json_integer(store_int(s, NA_SLICE_INDEX)));
        }
        if (store_int(s, NA_SHARED_PCT) > 0 && !json_object_get(cur, "shared"))
            json_object_set_new(cur, "shared",
                                json_pack("{s:I,s:I}", "memory_gib",
                                          (json_int_t)store_int(s, NA_SHARED_MEM), "percent",
                                          (json_int_t)store_int(s, NA_SHARED_PCT)));
    }
    store_done(s);
    /* a job that spans nodes: where its ranks are and where they meet (gang.c) */
    size_t i;
    json_array_foreach(arr, i, cur) {
        if (rc < 0) break;
        if (!json_is_true(json_object_get(cur, "gang"))) continue;
        json_object_del(cur, "gang");
        rc = jobs_gang_assign(tx, node, cur, err);
    }
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return GP_OK;
}

/* Keep at most the last JOBS_LOG_MAX bytes of `log`, cut on a UTF-8 boundary. */
static const char *tail_of(const char *log) {
    size_t n = strlen(log);
    if (n <= JOBS_LOG_MAX) return log;
    const char *p = log + n - JOBS_LOG_MAX;
    while (*p && ((unsigned char)*p & 0xC0) == 0x80) p++;
    return p;
}

/* At most this many refused workload reports per heartbeat are audited (a flood is cut). */
#define REPORT_REFUSALS_MAX 16

/* A job's tenant, project and state, as report_standing reads them (STORE_COLS). */
#define STANDING_JOB_COLUMNS(X)                                                           \
    X(SJ_TENANT, "t.name")                                                                \
    X(SJ_PROJECT, "p.name")                                                               \
    X(SJ_STATE, "j.state")
enum { STANDING_JOB_COLUMNS(STORE_COL_ENUM) SJ__N };

/* Whether the run's binding is open, and how many of the job's bindings began after it, as
 * report_standing reads them (STORE_COLS). */
#define STANDING_BINDING_COLUMNS(X)                                                       \
    X(SB_OPEN, "CASE WHEN b.end_us IS NULL THEN 1 ELSE 0 END")                            \
    X(SB_LATER, "(SELECT COUNT(*) FROM bindings c WHERE c.job_id = b.job_id"             \
                "  AND c.start_us > b.start_us)")
enum { STANDING_BINDING_COLUMNS(STORE_COL_ENUM) SB__N };

/*
 * Whose report is this?  Classifies a workload report of node `node` about
 * job `job`, run `pl` (its placement: the binding id it was started for):
 * 2 = the node holds the job's current placement (`pl` an open binding of
 * the job on that node, the job running: exits count), 1 = the run is the
 * job's latest on that node but no longer open (a cancel's last output:
 * output counts, exits not), 0 = a run the job left behind (moved, placed
 * anew: ignored), -1 = the job was never placed on that node under `pl`, or
 * does not exist (refused and audited).  OUT: *standing, and the tenant and
 * project names of the job.  Returns a status.
 */
static int report_standing(store_tx *tx, const char *node, const char *job, const char *pl,
                           int *standing, char tenant[80], char project[80], gp_err *err) {
    store_stmt *s;
    tenant[0] = project[0] = '\0';
    *standing = -1;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(STANDING_JOB_COLUMNS)
                         " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                         " JOIN projects p ON p.id = j.project_id WHERE j.id = ?",
                         "s", job);
    if (rc) return rc;
    rc = store_step(s, err);
    int running = 0;
    if (rc > 0) {
        snprintf(tenant, 80, "%s", store_text(s, SJ_TENANT));
        snprintf(project, 80, "%s", store_text(s, SJ_PROJECT));
        running = !strcmp(store_text(s, SJ_STATE), "running");
    }
    store_done(s);
    if (rc <= 0) return rc < 0 ? rc : GP_OK; /* no such job: -1 */
    /* the run's binding: one of the job's on this node (without a placement, an old
     * agent: its open binding there, else its latest there) */
    int has_pl = pl && *pl;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(STANDING_BINDING_COLUMNS)
                     " FROM bindings b WHERE b.job_id = ? AND b.node = ? AND (? = 0 OR b.id = ?)"
                     " ORDER BY CASE WHEN b.end_us IS NULL THEN 0 ELSE 1 END, b.start_us DESC"
                     " LIMIT 1",
                     "ssis", job, node, (int64_t)has_pl, has_pl ? pl : "");
    if (rc) return rc;
    rc = store_step(s, err);
    int open = rc > 0 && store_int(s, SB_OPEN), later = rc > 0 ? (int)store_int(s, SB_LATER) : 0;
    int found = rc > 0;
    store_done(s);
    if (rc < 0) return rc;
    if (found) *standing = open && running ? 2 : later ? 0 : 1;
    return GP_OK;
}

int jobs_ports_text(json_t *ports, char *out, size_t len) {
    int seen[JOBS_PORTS_MAX], n = 0;
    size_t i;
    json_t *p;
    if (len) out[0] = '\0';
    if (!json_is_array(ports) || json_array_size(ports) > JOBS_PORTS_MAX) return -1;
    json_array_foreach(ports, i, p) {
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 65535) return -1;
        int v = (int)json_integer_value(p), k = 0;
        while (k < n && seen[k] < v) k++;
        if (k < n && seen[k] == v) continue;
        memmove(seen + k + 1, seen + k, (size_t)(n - k) * sizeof *seen);
        seen[k] = v;
        n++;
    }
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        int w = snprintf(out + at, len - at, "%s%d", k ? "," : "", seen[k]);
        if (w < 0 || (size_t)w >= len - at) return -1;
        at += (size_t)w;
    }
    return n;
}

/* A running job's listening ports, as its node reports them: stored when they change.  A
 * malformed list (hostile or broken agent) changes nothing. */
static int record_ports(store_tx *tx, const char *node, const char *job, json_t *ports,
                        gp_err *err) {
    char text[JOBS_PORTS_MAX * 6 + 1];
    if (!ports || jobs_ports_text(ports, text, sizeof text) < 0) return GP_OK;
    /* a job on several nodes serves endpoints from its first node (by name): that node's ports */
    return store_exec(tx, NULL, err,
                      "UPDATE jobs SET listen_ports = ? WHERE id = ? AND listen_ports <> ?"
                      " AND ? = (SELECT MIN(b.node) FROM bindings b WHERE b.job_id = ?"
                      " AND b.end_us IS NULL)",
                      "sssss", text, job, text, node, job);
}

/* Append to `nodes` (NULL: nothing) the nodes of job `job`'s open bindings not in it yet. */
static int add_job_nodes(store_tx *tx, const char *job, json_t *nodes, gp_err *err) {
    store_stmt *s;
    if (!nodes) return GP_OK;
    int rc = store_query(tx, &s, err,
                         "SELECT DISTINCT node FROM bindings WHERE job_id = ? AND end_us IS NULL",
                         "s", job);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        size_t k;
        json_t *v;
        int seen = 0;
        json_array_foreach(nodes, k, v) seen = seen || !strcmp(json_string_value(v), store_text(s, 0));
        if (!seen) json_array_append_new(nodes, json_string(store_text(s, 0)));
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int jobs_node_report(store_tx *tx, const char *node, json_t *workloads, int *ended,
                     json_t *touch, json_t **events, gp_err *err) {
    size_t i;
    json_t *w;
    int n = 0, refused = 0;
    if (ended) *ended = 0;
    if (events) *events = NULL;
    if (workloads && !json_is_array(workloads))
        return gp_err_set(err, GP_EINVALID, "workloads must be an array");
    json_t *ev = json_array();
    json_array_foreach(workloads, i, w) {
        const char *job = json_string_value(json_object_get(w, "job"));
        const char *state = json_string_value(json_object_get(w, "state"));
        const char *log = json_string_value(json_object_get(w, "log"));
        const char *why = json_string_value(json_object_get(w, "reason"));
        const char *pl = json_string_value(json_object_get(w, "placement"));
        if (!job || !state || strlen(job) >= RND_ID_LEN + 8) continue;
        char tenant[80], project[80];
        int st, rc = report_standing(tx, node, job, pl, &st, tenant, project, err);
        if (rc) {
            json_decref(ev);
            return rc;
        }
        if (st == -1) {
            /* a node speaking for a job it does not run: nothing changes, the attempt is kept */
            if (refused++ < REPORT_REFUSALS_MAX)
                json_array_append_new(
                    ev, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "action", "job.report",
                                  "result", "denied", "job", job, "node", node, "placement",
                                  pl ? pl : "", "tenant", tenant, "project", project));
            continue;
        }
        if (st == 0) continue; /* a run the job has left: its output and exit are history */
        /* reports carry the output written since the last one: append, keep the tail */
        if (log && *log &&
            (rc = store_exec(tx, NULL, err,
                             "UPDATE jobs SET log = CASE WHEN length(log || ?1) > ?2"
                             " THEN substr(log || ?1, CAST(length(log || ?1) - ?2 + 1 AS INTEGER))"
                             " ELSE log || ?1 END WHERE id = ?3", "sis",
                             tail_of(log), (int64_t)JOBS_LOG_MAX, job))) {
            json_decref(ev);
            return rc;
        }
        if (st == 2 && !strcmp(state, "running") &&
            (rc = record_ports(tx, node, job, json_object_get(w, "ports"), err))) {
            json_decref(ev);
            return rc;
        }
        /* rank 0 of a job that spans nodes says where its ranks meet (gang.c); only its own
         * node may, once per placement */
        json_t *mp = json_object_get(w, "master_port");
        if (st == 2 && mp && !strcmp(state, "running")) {
            int said;
            if ((rc = jobs_gang_rendezvous(tx, node, job, mp, &said, err))) {
                json_decref(ev);
                return rc;
            }
            if (said == 1) {
                /* its other ranks start now */
                if ((rc = add_job_nodes(tx, job, touch, err))) {
                    json_decref(ev);
                    return rc;
                }
                json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:O}", "action",
                                                    "job.rendezvous", "result", "ok", "job", job,
                                                    "node", node, "placement", pl ? pl : "",
                                                    "tenant", tenant, "project", project,
                                                    "master_port", mp));
            } else if (said < 0 && refused++ < REPORT_REFUSALS_MAX) {
                json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:O}", "action",
                                                    "job.rendezvous", "result", "denied", "job",
                                                    job, "node", node, "placement", pl ? pl : "",
                                                    "tenant", tenant, "project", project,
                                                    "master_port", mp));
            }
        }
        if (st != 2 || strcmp(state, "exited") != 0) continue;
        int64_t code = json_integer_value(json_object_get(w, "exit_code"));
        int timed_out = why && !strcmp(why, "time_limit");
        /* a job that spans nodes ends when rank 0 ends (its exit is the job's); a rank ending
         * 0 before it is done (not started again), any other end of a rank fails the job, and
         * its other ranks stop (gang.c) */
        int gnodes = 0, grank = -1;
        if ((rc = jobs_gang_rank(tx, job, node, &gnodes, &grank, err))) {
            json_decref(ev);
            return rc;
        }
        if (gnodes > 0 && grank > 0 && code == 0 && !timed_out) {
            int done = 0;
            char msg[160];
            snprintf(msg, sizeof msg, "rank %d on node %.64s exited 0; the job runs until rank 0 "
                                      "ends", grank, node);
            if ((rc = store_exec(tx, &done, err,
                                 "UPDATE bindings SET rank_done_us = ? WHERE job_id = ?"
                                 " AND node = ? AND end_us IS NULL AND rank_done_us IS NULL",
                                 "iss", gt_now_us(), job, node)) ||
                (done && (rc = jobs__event(tx, job, "rank_exited", msg, err)))) {
                json_decref(ev);
                return rc;
            }
            continue;
        }
        if (gnodes > 0 && (rc = add_job_nodes(tx, job, touch, err))) { /* its other ranks stop */
            json_decref(ev);
            return rc;
        }
        const char *end = timed_out ? "time_limit" : code == 0 ? "completed" : "failed";
        const char *jstate = code == 0 && !timed_out ? "succeeded" : "failed";
        char reason[160];
        if (timed_out) snprintf(reason, sizeof reason, "time limit reached; stopped");
        else if (code == 0) snprintf(reason, sizeof reason, "exited 0");
        else if (gnodes > 0 && grank > 0)
            snprintf(reason, sizeof reason, "rank %d on node %.40s exited %lld%s%.80s", grank,
                     node, (long long)code, why && *why ? ": " : "", why && *why ? why : "");
        else snprintf(reason, sizeof reason, "exited %lld%s%.100s", (long long)code,
                      why && *why ? ": " : "", why && *why ? why : "");
        int64_t now = gt_now_us();
        if ((rc = store_exec(tx, NULL, err,
                             "UPDATE bindings SET end_us = ?, end_reason = ? WHERE job_id = ?"
                             " AND end_us IS NULL",
                             "iss", now, end, job)) ||
            (rc = store_exec(tx, NULL, err,
                             "UPDATE jobs SET state = ?, reason = ?, exit_code = ?, ended_at = ?"
                             " WHERE id = ?",
                             "ssiis", jstate, reason, code, now, job)) ||
            (rc = jobs__event(tx, job, "exited", reason, err))) {
            json_decref(ev);
            return rc;
        }
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "action",
                                            "job.end", "result", "ok", "job", job, "node", node,
                                            "placement", pl ? pl : "", "tenant", tenant,
                                            "project", project, "exit_code", (json_int_t)code,
                                            "state", jstate, "reason", reason));
        n++;
    }
    if (refused > REPORT_REFUSALS_MAX)
        json_array_append_new(ev, json_pack("{s:s,s:s,s:s,s:s,s:I}", "action", "job.report",
                                            "result", "denied", "job", "", "node", node,
                                            "more_refused", (json_int_t)(refused - REPORT_REFUSALS_MAX)));
    if (ended) *ended = n;
    if (events) *events = ev;
    else json_decref(ev);
    return GP_OK;
}

/* A job's log, exit code and state, as jobs_logs reads them (STORE_COLS). */
#define LOG_COLUMNS(X)                                                                    \
    X(LG_LOG, "log")                                                                      \
    X(LG_EXIT_CODE, "exit_code")                                                          \
    X(LG_STATE, "state")
enum { LOG_COLUMNS(STORE_COL_ENUM) LG__N };

int jobs_logs(store_tx *tx, const char *id, json_t **out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " STORE_COLS(LOG_COLUMNS) " FROM jobs WHERE id = ?",
                         "s", id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        *out = json_pack("{s:s,s:s}", "log", store_text(s, LG_LOG), "state",
                         store_text(s, LG_STATE));
        json_object_set_new(*out, "exit_code",
                            store_isnull(s, LG_EXIT_CODE)
                                ? json_null()
                                : json_integer(store_int(s, LG_EXIT_CODE)));
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    return rc < 0 ? rc : GP_OK;
}
