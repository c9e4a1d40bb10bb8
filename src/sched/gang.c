/*
 * gang.c - jobs that span nodes (issue 37 items 1-2; see jobs.h and sched.h
 * step 4a): the submit's shape, each node's rank and the rendezvous its
 * workload gets (MASTER_ADDR, MASTER_PORT, NODE_RANK...), and how a rank's
 * exit ends the job.
 */
#include "jobs_int.h"

#include <stdio.h>
#include <string.h>

int jobs_gang_shape(int64_t units, int has_units, int64_t nodes, int has_nodes, int64_t per,
                    int has_per, int64_t *out_units, int64_t *out_nodes, gp_err *err) {
    if (has_nodes && (nodes < 1 || nodes > JOBS_MAX_NODES))
        return gp_err_set(err, GP_EINVALID, "nodes must be 1..%d", JOBS_MAX_NODES);
    if (has_per && (per < 1 || per > JOBS_MAX_UNITS))
        return gp_err_set(err, GP_EINVALID, "units_per_node must be 1..%d", JOBS_MAX_UNITS);
    if (has_per && !has_nodes)
        return gp_err_set(err, GP_EINVALID,
                          "units_per_node needs nodes (a job on one node: nodes 1)");
    if (!has_nodes) {
        if (has_units && (units < 1 || units > JOBS_MAX_UNITS))
            return gp_err_set(err, GP_EINVALID, "units must be 1..%d", JOBS_MAX_UNITS);
        *out_units = has_units ? units : 1;
        *out_nodes = 0;
        return GP_OK;
    }
    if (has_units && (units < 1 || units > JOBS_MAX_UNITS))
        return gp_err_set(err, GP_EINVALID, "units must be 1..%d", JOBS_MAX_UNITS);
    if (!has_per) {
        if (has_units && units % nodes != 0)
            return gp_err_set(err, GP_EINVALID,
                              "units (%lld) does not split evenly over %lld nodes: give "
                              "units_per_node",
                              (long long)units, (long long)nodes);
        per = has_units ? units / nodes : 1;
    }
    if (has_units && units != nodes * per)
        return gp_err_set(err, GP_EINVALID,
                          "units (%lld) must be nodes x units_per_node (%lld x %lld = %lld)",
                          (long long)units, (long long)nodes, (long long)per,
                          (long long)(nodes * per));
    if (nodes * per > JOBS_MAX_UNITS)
        return gp_err_set(err, GP_EINVALID,
                          "units must be 1..%d in all (nodes x units_per_node = %lld)",
                          JOBS_MAX_UNITS, (long long)(nodes * per));
    *out_units = nodes * per;
    *out_nodes = nodes;
    return GP_OK;
}

/* What the ranks read, by name (STORE_COLS / STORE_COL_ENUM: store.h). */
#define RANK_COLUMNS(X) \
    X(RK_NODES, "j.nodes") \
    X(RK_UNITS, "j.units") \
    X(RK_UNIT, "(SELECT MIN(b.unit) FROM bindings b WHERE b.job_id = j.id AND b.node = ? AND b.end_us IS NULL)")
enum { RANK_COLUMNS(STORE_COL_ENUM) RK__N };
#define GANG_COLUMNS(X) \
    X(GJ_NODES, "nodes") \
    X(GJ_UNITS, "units") \
    X(GJ_PORT, "COALESCE(master_port, 0)")
enum { GANG_COLUMNS(STORE_COL_ENUM) GJ__N };
#define RANKS_COLUMNS(X) \
    X(RN_NODE, "b.node") \
    X(RN_UNIT, "MIN(b.unit)") \
    X(RN_SLOTS, "COUNT(*)") \
    X(RN_HOST, "MIN(n.hostname)")
enum { RANKS_COLUMNS(STORE_COL_ENUM) RN__N };

/* ---- ranks ---- */

int jobs_gang_rank(store_tx *tx, const char *job, const char *node, int *nodes, int *rank,
                   gp_err *err) {
    store_stmt *s;
    *nodes = 0;
    *rank = -1;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(RANK_COLUMNS) " FROM jobs j WHERE j.id = ?",
                         "ss", node, job);
    if (rc) return rc;
    if ((rc = store_step(s, err)) > 0) {
        int64_t n = store_int(s, RK_NODES), units = store_int(s, RK_UNITS);
        if (n > 0 && units % n == 0) {
            *nodes = (int)n;
            if (!store_isnull(s, RK_UNIT)) *rank = (int)(store_int(s, RK_UNIT) / (units / n));
        }
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int jobs_gang_assign(store_tx *tx, const char *node, json_t *a, gp_err *err) {
    const char *job = json_string_value(json_object_get(a, "job"));
    store_stmt *s;
    int64_t nodes = 0, port = 0, units = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(GANG_COLUMNS) " FROM jobs WHERE id = ?",
                         "s", job ? job : "");
    if (rc) return rc;
    if ((rc = store_step(s, err)) > 0) {
        nodes = store_int(s, GJ_NODES);
        units = store_int(s, GJ_UNITS);
        port = store_int(s, GJ_PORT);
    }
    store_done(s);
    if (rc < 0) return rc;
    if (nodes <= 0 || units % nodes) return GP_OK;
    /* its nodes in rank order: the rank of a node is its lowest unit / K; a node's slots are
     * its devices (one binding each) */
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(RANKS_COLUMNS) " FROM bindings b"
                          " LEFT JOIN nodes n ON n.name = b.node WHERE b.job_id = ?"
                          " AND b.end_us IS NULL GROUP BY b.node ORDER BY MIN(b.unit)",
                          "s", job)))
        return rc;
    json_t *hosts = json_array(), *names = json_array(), *slots = json_array();
    int rank = -1, n = 0;
    while ((rc = store_step(s, err)) > 0) {
        const char *h = store_text(s, RN_HOST);
        json_array_append_new(names, json_string(store_text(s, RN_NODE)));
        json_array_append_new(hosts, json_string(h && *h ? h : store_text(s, RN_NODE)));
        json_array_append_new(slots, json_integer(store_int(s, RN_SLOTS)));
        if (!strcmp(store_text(s, RN_NODE), node)) rank = n;
        n++;
    }
    store_done(s);
    if (rc < 0 || rank < 0 || n != nodes) {
        /* (a job not whole cannot run: cannot happen, the round places all of it) */
        json_decref(hosts);
        json_decref(names);
        json_decref(slots);
        return rc < 0 ? rc : GP_OK;
    }
    json_t *g = json_pack("{s:I,s:i,s:o,s:o,s:o}", "nodes", (json_int_t)nodes, "rank", rank,
                          "hosts", hosts, "node_names", names, "slots", slots);
    if (g && port > 0) json_object_set_new(g, "master_port", json_integer(port));
    if (g) json_object_set_new(a, "gang", g);
    return GP_OK;
}

int jobs_gang_rendezvous(store_tx *tx, const char *node, const char *job, json_t *port,
                         int *outcome, gp_err *err) {
    int nodes, rank, changes = 0;
    *outcome = -1;
    if (!json_is_integer(port) || json_integer_value(port) < 1 ||
        json_integer_value(port) > 65535)
        return GP_OK;
    int rc = jobs_gang_rank(tx, job, node, &nodes, &rank, err);
    if (rc || nodes <= 0 || rank != 0) return rc; /* only rank 0's node speaks for it */
    int64_t p = (int64_t)json_integer_value(port);
    rc = store_exec(tx, &changes, err,
                    "UPDATE jobs SET master_port = ? WHERE id = ? AND state = 'running'"
                    " AND master_port IS NULL",
                    "is", p, job);
    if (rc) return rc;
    if (changes) {
        char msg[120];
        snprintf(msg, sizeof msg, "rank 0 on node %.64s listens for its ranks on port %lld", node,
                 (long long)p);
        *outcome = 1;
        return jobs__event(tx, job, "rendezvous", msg, err);
    }
    /* already known: the same port again is rank 0 repeating itself; another is refused */
    store_stmt *s;
    if ((rc = store_query(tx, &s, err, "SELECT COALESCE(master_port, 0) FROM jobs WHERE id = ?",
                          "s", job)))
        return rc;
    if ((rc = store_step(s, err)) > 0 && store_int(s, 0) == p) *outcome = 0;
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}
