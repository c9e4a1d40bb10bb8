/*
 * inventory.c - nodes, GPUs, slices, join tokens, transitions and alarms
 * (see inventory.h).
 */
#include "inventory.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/strbuf.h"
#include "../compat/compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- join tokens ---- */

int inv_join_create(store_tx *tx, const char *created_by_id, int64_t ttl_s, const char *node_name,
                    int64_t max_uses, char token[RND_SECRET_LEN], char id[RND_ID_LEN],
                    gp_err *err) {
    char hash[RND_HASH_LEN];
    int64_t now = gt_now_us();
    if (!node_name) node_name = "";
    if (*node_name && !gp_name_valid(node_name))
        return gp_err_set(err, GP_EINVALID, "node must be lower-case letters, digits, '-'");
    if (max_uses < 1 || max_uses > INV_JOIN_MAX_USES)
        return gp_err_set(err, GP_EINVALID, "max_uses must be between 1 and %d",
                          INV_JOIN_MAX_USES);
    if (*node_name && max_uses != 1)
        return gp_err_set(err, GP_EINVALID, "a join token bound to a node is for one use");
    rnd_secret(INV_JOIN_PREFIX, token);
    rnd_hash_secret(token, hash);
    rnd_id(id);
    return store_exec(tx, NULL, err,
                      "INSERT INTO join_tokens (id, hash, created_by, created_at, expires_at,"
                      " node_name, max_uses) VALUES (?,?,?,?,?,?,?)",
                      "sssiisi", id, hash, created_by_id, now, now + ttl_s * 1000000, node_name,
                      max_uses);
}

const char *inv_join_refusal(int64_t now, int64_t expires_at, int revoked, int64_t uses,
                             int64_t max_uses, const char *bound_to, const char *node) {
    if (revoked) return "join token revoked";
    if (expires_at <= now) return "join token expired";
    if (bound_to && *bound_to && (!node || strcmp(bound_to, node) != 0))
        return "join token is bound to another node name";
    if (uses >= max_uses)
        return max_uses == 1 ? "join token already used (it is single-use: make a new one, with"
                               " --uses N for an agent of N nodes)"
                             : "join token used up (all its uses are spent; make a new one)";
    return NULL;
}

/* A join token's row as inv_join_use reads it (STORE_COLS). */
#define JOIN_USE_COLUMNS(X)                                                               \
    X(JU_ID, "id")                                                                        \
    X(JU_EXPIRES, "expires_at")                                                           \
    X(JU_REVOKED, "CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END")                       \
    X(JU_USES, "uses")                                                                    \
    X(JU_MAX_USES, "max_uses")                                                            \
    X(JU_NODE, "node_name")
enum { JOIN_USE_COLUMNS(STORE_COL_ENUM) JU__N };

/* How many rows match, for the one-number existence checks (STORE_COLS). */
#define COUNT_COLUMNS(X) X(CN_COUNT, "COUNT(*)")
enum { COUNT_COLUMNS(STORE_COL_ENUM) CN__N };
#define COUNT_COLS STORE_COLS(COUNT_COLUMNS)

int inv_join_use(store_tx *tx, const char *token, const char *node, char id[RND_ID_LEN],
                 gp_err *err) {
    char hash[RND_HASH_LEN], bound[80] = "";
    store_stmt *s;
    id[0] = '\0';
    if (!token || strncmp(token, INV_JOIN_PREFIX, strlen(INV_JOIN_PREFIX)) != 0)
        return gp_err_set(err, GP_EUNAUTH, "invalid join token");
    rnd_hash_secret(token, hash);
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(JOIN_USE_COLUMNS) " FROM join_tokens WHERE hash = ?",
                         "s", hash);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc <= 0) {
        store_done(s);
        return rc < 0 ? rc : gp_err_set(err, GP_EUNAUTH, "invalid, expired or revoked join token");
    }
    snprintf(id, RND_ID_LEN, "%s", store_text(s, JU_ID));
    int64_t exp = store_int(s, JU_EXPIRES), uses = store_int(s, JU_USES);
    int64_t max = store_int(s, JU_MAX_USES);
    int revoked = (int)store_int(s, JU_REVOKED);
    snprintf(bound, sizeof bound, "%s", store_text(s, JU_NODE));
    store_done(s);
    const char *why = inv_join_refusal(gt_now_us(), exp, revoked, uses, max, bound, node);
    if (why) return gp_err_set(err, GP_EUNAUTH, "%s", why);
    /* taking over a registered node's identity (and with it the workloads placed there, other
     * tenants' among them) is ops' decision for that node: a token bound to its name */
    if (!bound[0]) {
        rc = store_query(tx, &s, err, "SELECT " COUNT_COLS " FROM nodes WHERE name = ?", "s",
                         node ? node : "");
        if (!rc) {
            rc = store_step(s, err);
            int exists = rc > 0 && store_int(s, CN_COUNT) > 0;
            store_done(s);
            rc = rc < 0 ? rc : exists ? GP_EUNAUTH : GP_OK;
        }
        if (rc) {
            return rc == GP_EUNAUTH
                       ? gp_err_set(err, rc,
                                    "node %.63s is registered: joining it again needs a join "
                                    "token bound to it (jointoken create --node %.63s)",
                                    node, node)
                       : rc;
        }
    }
    /* the node's name as a JSON string, appended to used_by by the statement: the list is
     * never read back here (an agent of 10,000 nodes made each join parse and rewrite a
     * list that long - most of a join's cost by the end) */
    json_t *nj = json_string(node ? node : "");
    char *text = nj ? jx_dump(nj) : NULL;
    json_decref(nj);
    int changes = 0;
    /* `uses < max_uses` in the statement: two registrations cannot both take the last use */
    rc = text ? store_exec(tx, &changes, err,
                           "UPDATE join_tokens SET uses = uses + 1,"
                           " used_by = CASE WHEN used_by = '[]' THEN '[' || CAST(? AS TEXT) || ']'"
                           " ELSE substr(used_by, 1, length(used_by) - 1) || ',' ||"
                           " CAST(? AS TEXT) || ']' END"
                           " WHERE id = ? AND uses < max_uses AND revoked_at IS NULL",
                           "sss", text, text, id)
              : gp_err_set(err, GP_ENOMEM, NULL);
    free(text);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_EUNAUTH, "join token used up (make a new one)");
}

/* A join token's row as inv_join_list reads it (STORE_COLS). */
#define JOIN_COLUMNS(X)                                                                   \
    X(JL_ID, "j.id")                                                                      \
    X(JL_CREATED_BY, "u.name")                                                            \
    X(JL_CREATED, "j.created_at")                                                         \
    X(JL_EXPIRES, "j.expires_at")                                                         \
    X(JL_REVOKED, "COALESCE(j.revoked_at, 0)")                                            \
    X(JL_USES, "j.uses")                                                                  \
    X(JL_MAX_USES, "j.max_uses")                                                          \
    X(JL_NODE, "j.node_name")                                                             \
    X(JL_USED_BY, "j.used_by")
enum { JOIN_COLUMNS(STORE_COL_ENUM) JL__N };

int inv_join_list(store_tx *tx, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(JOIN_COLUMNS) " FROM join_tokens j"
                         " JOIN users u ON u.id = j.created_by ORDER BY j.created_at DESC",
                         "");
    if (rc) return rc;
    json_t *arr = json_array();
    int64_t now = gt_now_us();
    while ((rc = store_step(s, err)) > 0) {
        const char *state = store_int(s, JL_REVOKED)                           ? "revoked"
                            : store_int(s, JL_EXPIRES) <= now                   ? "expired"
                            : store_int(s, JL_USES) >= store_int(s, JL_MAX_USES) ? "used"
                                                                               : "active";
        json_t *used = json_loads(store_text(s, JL_USED_BY), 0, NULL);
        if (!json_is_array(used)) {
            json_decref(used);
            used = json_array();
        }
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:o,s:o,s:s,s:I,s:I,s:s,s:o}", "id", store_text(s, JL_ID),
                           "created_by", store_text(s, JL_CREATED_BY), "created_at",
                           jx_time(store_int(s, JL_CREATED)), "expires_at",
                           jx_time(store_int(s, JL_EXPIRES)), "state", state, "uses",
                           (json_int_t)store_int(s, JL_USES), "max_uses",
                           (json_int_t)store_int(s, JL_MAX_USES), "node", store_text(s, JL_NODE),
                           "used_by", used));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int inv_join_revoke(store_tx *tx, const char *id, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE join_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?",
                        "is", gt_now_us(), id);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "join token not found");
}

/* ---- registration ---- */

static void tr_set(inv_transition *t, const char *node, const char *uuid, const char *kind,
                   const char *from, const char *to, const char *cause);
static int record(store_tx *tx, const inv_transition *t, const char *actor, gp_err *err);

static const char *jstr(json_t *o, const char *k, const char *def) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : def;
}

static int64_t jint(json_t *o, const char *k, int64_t def) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

static int text_ok(const char *s, size_t max) { return s && strlen(s) <= max; }

/* Validate the agent's report before touching anything. */
static int check_report(json_t *r, gp_err *err) {
    const char *name = jstr(r, "name", NULL);
    if (!name || !gp_name_valid(name))
        return gp_err_set(err, GP_EINVALID, "node name must be lower-case letters, digits, '-'");
    if (!text_ok(jstr(r, "hostname", ""), 253) || !text_ok(jstr(r, "driver_version", ""), 80))
        return gp_err_set(err, GP_EINVALID, "hostname or driver_version too long");
    /* where the report comes from: a vendor's library, or a declared inventory */
    const char *src = jstr(r, "source", "nvml");
    if (strcmp(src, "nvml") && strcmp(src, "amdsmi") && strcmp(src, "hlml") &&
        strcmp(src, "inventory"))
        return gp_err_set(err, GP_EINVALID, "source must be nvml, amdsmi, hlml or inventory");
    json_t *labels = json_object_get(r, "labels");
    if (labels && (!json_is_object(labels) || json_object_size(labels) > 64))
        return gp_err_set(err, GP_EINVALID, "labels must be an object of at most 64 entries");
    json_t *gpus = json_object_get(r, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) > 64)
        return gp_err_set(err, GP_EINVALID, "gpus must be an array of at most 64 GPUs");
    size_t i, k;
    json_t *g, *sl;
    json_array_foreach(gpus, i, g) {
        const char *uuid = jstr(g, "uuid", NULL), *model = jstr(g, "model", NULL);
        if (!uuid || !*uuid || strlen(uuid) > 90 || !model || !*model || strlen(model) > 60)
            return gp_err_set(err, GP_EINVALID, "gpu %zu: uuid and model are required", i);
        if (jint(g, "memory_mib", 0) <= 0)
            return gp_err_set(err, GP_EINVALID, "gpu %s: memory_mib must be positive", uuid);
        /* the card's vendor, driver and runtimes (absent: an NVIDIA card, the node's driver) */
        json_t *vj = json_object_get(g, "vendor"), *dj = json_object_get(g, "driver_version");
        if (vj && (!json_is_string(vj) || cp_vendor_parse(json_string_value(vj)) < 0))
            return gp_err_set(err, GP_EINVALID, "gpu %s: vendor must be nvidia, amd or intel",
                              uuid);
        if (dj && (!json_is_string(dj) || !cp_version_valid(json_string_value(dj))))
            return gp_err_set(err, GP_EINVALID,
                              "gpu %s: driver_version must be a dotted version like 550.54.15",
                              uuid);
        cp_stack st;
        char why[160];
        if (cp_stack_parse(json_object_get(g, "stack"), &st, why, sizeof why))
            return gp_err_set(err, GP_EINVALID, "gpu %s: %s", uuid, why);
        /* hardware partitions: NVIDIA MIG 7 at most, AMD compute partitions 8 (CPX) */
        json_t *slices = json_object_get(g, "slices");
        size_t max_slices = vj && !strcmp(json_string_value(vj), "amd") ? 8 : 7;
        if (slices && (!json_is_array(slices) || json_array_size(slices) > max_slices))
            return gp_err_set(err, GP_EINVALID, "gpu %s: at most %zu hardware partitions (slices)",
                              uuid, max_slices);
        json_array_foreach(slices, k, sl) {
            const char *su = jstr(sl, "uuid", NULL), *pr = jstr(sl, "profile", NULL);
            if (!su || !*su || strlen(su) > 90 || !pr || !*pr || strlen(pr) > 20)
                return gp_err_set(err, GP_EINVALID, "gpu %s: slice uuid and profile required",
                                  uuid);
        }
    }
    return GP_OK;
}

/* An account as agent_account checks it (STORE_COLS). */
#define ACCOUNT_COLUMNS(X)                                                                \
    X(AC_ID, "id")                                                                        \
    X(AC_KIND, "kind")                                                                    \
    X(AC_ROLES, "(SELECT COUNT(*) FROM role_bindings b WHERE b.user_id = users.id)")      \
    X(AC_NODE_ACCOUNT, "node_account")
enum { ACCOUNT_COLUMNS(STORE_COL_ENUM) AC__N };

/* Find or create the node's agent account; revoke its earlier tokens. */
static int agent_account(store_tx *tx, const char *node, char uid[RND_ID_LEN], gp_err *err) {
    char uname[80];
    store_stmt *s;
    snprintf(uname, sizeof uname, "agent-%s", node);
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ACCOUNT_COLUMNS) " FROM users WHERE name = ?",
                         "s", uname);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        /* only an account made for the node (node_account = 1) is the node's */
        int bad = strcmp(store_text(s, AC_KIND), "service") != 0 || store_int(s, AC_ROLES) > 0 ||
                  store_int(s, AC_NODE_ACCOUNT) != 1;
        snprintf(uid, RND_ID_LEN, "%s", store_text(s, AC_ID));
        store_done(s);
        if (bad)
            return gp_err_set(err, GP_ECONFLICT, "account %s exists and is not an agent account",
                              uname);
        return store_exec(tx, NULL, err,
                          "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE user_id = ?",
                          "is", gt_now_us(), uid);
    }
    store_done(s);
    if (rc < 0) return rc;
    rnd_id(uid);
    return store_exec(tx, NULL, err,
                      "INSERT INTO users (id, name, kind, created_at, node_account)"
                      " VALUES (?,?,'service',?,1)",
                      "ssi", uid, uname, gt_now_us());
}

/* The node holding a card or slice, as foreign_holder reads it (STORE_COLS). */
#define HOLDER_COLUMNS(X) X(HO_NAME, "n.name") X(HO_ID, "n.id")
enum { HOLDER_COLUMNS(STORE_COL_ENUM) HO__N };

/*
 * Which other node holds the reported card `g` (its UUID, or the UUID of one
 * of its slices)?  1 with `holder` set to that node's name, 0 when none does
 * (the card is new, or already `node_id`'s), < 0 on a store error.
 */
static int foreign_holder(store_tx *tx, json_t *g, const char *node_id, char holder[64],
                          gp_err *err) {
    store_stmt *s;
    size_t k;
    json_t *sl;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HOLDER_COLUMNS)
                         " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE g.uuid = ?",
                         "s", jstr(g, "uuid", ""));
    if (rc) return rc;
    rc = store_step(s, err);
    int other = rc > 0 && inv_claim_refused(store_text(s, HO_ID), node_id);
    if (other) snprintf(holder, 64, "%s", store_text(s, HO_NAME));
    store_done(s);
    if (rc < 0 || other) return rc < 0 ? rc : 1;
    json_array_foreach(json_object_get(g, "slices"), k, sl) {
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HOLDER_COLUMNS)
                         " FROM slices x JOIN gpus g ON g.id = x.gpu_id"
                         " JOIN nodes n ON n.id = g.node_id WHERE x.uuid = ?",
                         "s", jstr(sl, "uuid", ""));
        if (rc) return rc;
        rc = store_step(s, err);
        other = rc > 0 && inv_claim_refused(store_text(s, HO_ID), node_id);
        if (other) snprintf(holder, 64, "%s", store_text(s, HO_NAME));
        store_done(s);
        if (rc < 0 || other) return rc < 0 ? rc : 1;
    }
    return 0;
}

/* A refused card: an alarm for ops, and {gpu, held_by} for the caller's audit. */
static int refuse_card(store_tx *tx, const char *node, const char *uuid, const char *holder,
                       json_t *refused, gp_err *err) {
    char msg[400];
    snprintf(msg, sizeof msg,
             "node %s reported GPU %.90s, which node %s holds: refused (a card changes node only "
             "by `gpupool gpu move` after its node is drained)",
             node, uuid, holder);
    /* one open alarm per node and card: a node that keeps reporting it raises no more */
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " COUNT_COLS " FROM alarms WHERE kind = 'identity' AND node = ?"
                         " AND gpu_uuid = ? AND acked_at IS NULL",
                         "ss", node, uuid);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t open = rc > 0 ? store_int(s, CN_COUNT) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if (!open) {
        json_t *detail = json_pack("{s:s,s:s,s:s}", "reported_by", node, "gpu", uuid, "held_by",
                                   holder);
        rc = inv_alarm_raise(tx, "critical", "identity", node, uuid, "", msg, NULL, detail, err);
        json_decref(detail);
        if (rc) return rc;
    }
    if (refused)
        json_array_append_new(refused,
                              json_pack("{s:s,s:s}", "gpu", uuid, "held_by", holder));
    return GP_OK;
}

int inv_claim_refused(const char *holder_node_id, const char *reporting_node_id) {
    return holder_node_id && *holder_node_id && strcmp(holder_node_id, reporting_node_id) != 0;
}

/*
 * Upsert the report's GPUs and MIG slices for node `node_id`; with
 * `mark_stale`, cards of the node missing from the report become failed.
 * A card another node holds is skipped (refuse_card), never moved.
 */
/* A card left out of its node's report, as apply_gpus reads it (STORE_COLS). */
#define STALE_COLUMNS(X) X(SC_UUID, "uuid") X(SC_HEALTH, "health")
enum { STALE_COLUMNS(STORE_COL_ENUM) SC__N };

static int apply_gpus(store_tx *tx, json_t *r, const char *node_id, const char *name, int64_t now,
                      int mark_stale, json_t *refused, gp_err *err) {
    int rc = GP_OK;
    if (mark_stale &&
        (rc = store_exec(tx, NULL, err, "UPDATE gpus SET updated_at = -1 WHERE node_id = ?", "s",
                         node_id)))
        return rc;
    size_t i, k;
    json_t *g, *sl;
    json_array_foreach(json_object_get(r, "gpus"), i, g) {
        const char *uuid = jstr(g, "uuid", "");
        /* a card (or one of its slices) another node holds is not this report's to move */
        char holder[64];
        if ((rc = foreign_holder(tx, g, node_id, holder, err)) < 0) goto out;
        if (rc > 0) {
            if ((rc = refuse_card(tx, name, uuid, holder, refused, err))) goto out;
            continue;
        }
        json_t *tj = json_object_get(g, "topology");
        char gid[RND_ID_LEN], *topo = tj ? jx_dump(tj) : strdup("{}");
        const char *mode = strcmp(jstr(g, "mig_mode", ""), "enabled") == 0 ? "mig" : NULL;
        /* a declared inventory may start a card in shared mode; ops change it later */
        const char *first = mode ? mode
                            : strcmp(jstr(g, "declared_mode", ""), "shared") == 0 ? "shared"
                                                                                  : NULL;
        rnd_id(gid);
        /* vendor, driver and stack (check_report validated them; canonical JSON stored) */
        cp_stack st;
        char why[160];
        cp_stack_parse(json_object_get(g, "stack"), &st, why, sizeof why);
        json_t *stj = cp_stack_json(&st);
        char *stack = jx_dump(stj);
        json_decref(stj);
        const char *vendor = jstr(g, "vendor", "nvidia");
        const char *driver = jstr(g, "driver_version", jstr(r, "driver_version", ""));
        /* a card moved between nodes keeps its record; its mode stays the operator's */
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO gpus (id, uuid, node_id, idx, model, memory_mib, pci_bus,"
                        " numa, compute_cap, mig_capable, mode, topology, updated_at, vendor,"
                        " driver_version, stack)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,COALESCE(?, 'whole'),?,?,?,?,?)"
                        " ON CONFLICT (uuid) DO UPDATE SET node_id = excluded.node_id,"
                        " idx = excluded.idx, model = excluded.model,"
                        " memory_mib = excluded.memory_mib, pci_bus = excluded.pci_bus,"
                        " numa = excluded.numa, compute_cap = excluded.compute_cap,"
                        " mig_capable = excluded.mig_capable, topology = excluded.topology,"
                        " mode = CASE WHEN ? IS NOT NULL THEN 'mig' WHEN gpus.mode = 'mig'"
                        " THEN 'whole' ELSE gpus.mode END, updated_at = excluded.updated_at,"
                        " vendor = excluded.vendor, driver_version = excluded.driver_version,"
                        " stack = excluded.stack",
                        "sssisisisississss", gid, uuid, node_id, jint(g, "index", (int64_t)i),
                        jstr(g, "model", ""), jint(g, "memory_mib", 0), jstr(g, "pci_bus", ""),
                        jint(g, "numa", -1), jstr(g, "compute_cap", ""),
                        (int64_t)json_is_true(json_object_get(g, "mig_capable")), first, topo,
                        now, vendor, driver, stack ? stack : "{}", mode);
        free(topo);
        free(stack);
        if (rc) goto out;
        rc = store_exec(tx, NULL, err,
                        "DELETE FROM slices WHERE gpu_id = (SELECT id FROM gpus WHERE uuid = ?)",
                        "s", uuid);
        if (rc) goto out;
        json_array_foreach(json_object_get(g, "slices"), k, sl) {
            rc = store_exec(tx, NULL, err,
                            "INSERT INTO slices (uuid, gpu_id, profile, memory_mib, idx)"
                            " SELECT ?, id, ?, ?, ? FROM gpus WHERE uuid = ?"
                            " ON CONFLICT (uuid) DO UPDATE SET gpu_id = excluded.gpu_id,"
                            " profile = excluded.profile, memory_mib = excluded.memory_mib,"
                            " idx = excluded.idx",
                            "ssiis", jstr(sl, "uuid", ""), jstr(sl, "profile", ""),
                            jint(sl, "memory_mib", 0), (int64_t)k, uuid);
            if (rc) goto out;
        }
    }
    if (mark_stale) {
        /* a card that vanished from the node's report is failed, with the reason */
        store_stmt *q;
        if ((rc = store_query(tx, &q, err,
                              "SELECT " STORE_COLS(STALE_COLUMNS)
                              " FROM gpus WHERE node_id = ? AND updated_at = -1",
                              "s", node_id)))
            goto out;
        inv_transition t;
        char uuids[64][96];
        char from[64][16];
        int nm = 0;
        while ((rc = store_step(q, err)) > 0 && nm < 64) {
            snprintf(uuids[nm], sizeof uuids[nm], "%s", store_text(q, SC_UUID));
            snprintf(from[nm], sizeof from[nm], "%s", store_text(q, SC_HEALTH));
            nm++;
        }
        store_done(q);
        if (rc < 0) goto out;
        for (int m = 0; m < nm; m++) {
            rc = store_exec(tx, NULL, err,
                            "UPDATE gpus SET health = 'failed', updated_at = ?,"
                            " health_cause = 'not reported by the node when it joined again'"
                            " WHERE uuid = ?",
                            "is", now, uuids[m]);
            if (rc) goto out;
            if (strcmp(from[m], "failed") != 0) {
                tr_set(&t, name, uuids[m], "health", from[m], "failed",
                       "not reported by the node when it joined again");
                if ((rc = record(tx, &t, "system", err))) goto out;
            }
        }
        rc = GP_OK;
    }
out:
    return rc;
}

/* ---- labels and topology ---- */

/* The labels a node shows and the round groups it by: the agent's, ops' over them. */
static json_t *labels_merged(const char *agent, const char *ops) {
    json_t *m = json_loads(agent, 0, NULL), *o = json_loads(ops, 0, NULL);
    if (!json_is_object(m)) {
        json_decref(m);
        m = json_object();
    }
    if (json_is_object(o)) json_object_update(m, o);
    json_decref(o);
    return m;
}

/* A node's labels, the agent's and ops' (STORE_COLS). */
#define LABEL_COLUMNS(X) X(LB_AGENT, "labels") X(LB_OPS, "ops_labels")
enum { LABEL_COLUMNS(STORE_COL_ENUM) LB__N };
#define OPS_LABEL_COLUMNS(X) X(OL_OPS, "ops_labels")
enum { OPS_LABEL_COLUMNS(STORE_COL_ENUM) OL__N };

/* A node's own columns read one at a time (STORE_COLS). */
#define NODE_ID_COLUMNS(X) X(NI_ID, "id")
enum { NODE_ID_COLUMNS(STORE_COL_ENUM) NI__N };
#define NODE_STATE_COLUMNS(X) X(NS_STATE, "state")
enum { NODE_STATE_COLUMNS(STORE_COL_ENUM) NS__N };

/* Node `name`'s topology columns (topo_rack, topo_switch) from its labels as they are now. */
static int topo_refresh(store_tx *tx, const char *name, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(LABEL_COLUMNS) " FROM nodes WHERE name = ?", "s",
                         name);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *m = rc > 0 ? labels_merged(store_text(s, LB_AGENT), store_text(s, LB_OPS)) : NULL;
    store_done(s);
    if (rc <= 0) return rc < 0 ? rc : GP_OK;
    const char *rack = json_string_value(json_object_get(m, "rack"));
    const char *sw = json_string_value(json_object_get(m, "switch"));
    rc = store_exec(tx, NULL, err,
                    "UPDATE nodes SET topo_rack = ?, topo_switch = ? WHERE name = ?"
                    " AND (topo_rack <> ? OR topo_switch <> ?)",
                    "sssss", rack ? rack : "", sw ? sw : "", name, rack ? rack : "", sw ? sw : "");
    json_decref(m);
    return rc;
}

/* A label's key: 1-63 of [a-z0-9._/-], starting with a letter or digit. */
static int label_key_ok(const char *k) {
    size_t n = strlen(k);
    if (n < 1 || n > 63 || !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= '0' && k[0] <= '9')))
        return 0;
    return strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789._/-") == n;
}

/* A label's value: 1-63 of [A-Za-z0-9._-]. */
static int label_value_ok(const char *v) {
    size_t n = strlen(v);
    return n >= 1 && n <= 63 &&
           strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int inv_node_label(store_tx *tx, const char *node, json_t *changes, gp_err *err) {
    const char *k;
    json_t *v;
    if (!json_is_object(changes) || json_object_size(changes) < 1 ||
        json_object_size(changes) > INV_MAX_LABELS)
        return gp_err_set(err, GP_EINVALID, "labels must be an object of 1-%d entries",
                          INV_MAX_LABELS);
    json_object_foreach(changes, k, v) {
        if (!label_key_ok(k))
            return gp_err_set(err, GP_EINVALID,
                              "label key '%.64s': 1-63 of a-z, 0-9, '.', '_', '/', '-', "
                              "starting with a letter or digit",
                              k);
        if (!json_is_null(v) && (!json_is_string(v) || !label_value_ok(json_string_value(v))))
            return gp_err_set(err, GP_EINVALID,
                              "label %.64s: its value is 1-63 of A-Z, a-z, 0-9, '.', '_', '-' "
                              "(null removes it)",
                              k);
    }
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(OPS_LABEL_COLUMNS) " FROM nodes WHERE name = ?", "s",
                         node);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *ops = rc > 0 ? json_loads(store_text(s, OL_OPS), 0, NULL) : NULL;
    store_done(s);
    if (rc < 0) return rc;
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (!json_is_object(ops)) {
        json_decref(ops);
        ops = json_object();
    }
    json_object_foreach(changes, k, v) {
        if (json_is_null(v)) json_object_del(ops, k);
        else json_object_set(ops, k, v);
    }
    if (json_object_size(ops) > INV_MAX_LABELS) {
        json_decref(ops);
        return gp_err_set(err, GP_EINVALID, "a node holds at most %d labels set by ops",
                          INV_MAX_LABELS);
    }
    char *text = jx_dump(ops);
    json_decref(ops);
    rc = store_exec(tx, NULL, err, "UPDATE nodes SET ops_labels = ? WHERE name = ?", "ss", text,
                    node);
    free(text);
    return rc ? rc : topo_refresh(tx, node, err);
}

int inv_node_register(store_tx *tx, json_t *r, char node_id[RND_ID_LEN],
                      char agent_user_id[RND_ID_LEN], int *rereg, json_t *refused, gp_err *err) {
    int rc = check_report(r, err);
    if (rc) return rc;
    const char *name = jstr(r, "name", "");
    int64_t now = gt_now_us();
    json_t *lj = json_object_get(r, "labels");
    char *labels = lj ? jx_dump(lj) : strdup("{}");
    if ((rc = agent_account(tx, name, agent_user_id, err))) goto out;
    store_stmt *s;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(NODE_ID_COLUMNS) " FROM nodes WHERE name = ?", "s",
                          name)))
        goto out;
    rc = store_step(s, err);
    *rereg = rc > 0;
    if (rc > 0) snprintf(node_id, RND_ID_LEN, "%s", store_text(s, NI_ID));
    store_done(s);
    if (rc < 0) goto out;
    if (*rereg) {
        /* taking over a node's identity is only for a node whose agent is gone */
        if ((rc = store_query(tx, &s, err,
                              "SELECT " STORE_COLS(NODE_STATE_COLUMNS) " FROM nodes WHERE id = ?",
                              "s", node_id)))
            goto out;
        rc = store_step(s, err);
        int alive = rc > 0 && strcmp(store_text(s, NS_STATE), "ready") == 0;
        store_done(s);
        if (rc < 0) goto out;
        if (alive) {
            rc = gp_err_set(err, GP_ECONFLICT,
                            "node %s is registered and its agent is alive; stop that agent (the "
                            "node turns unreachable) before joining again",
                            name);
            goto out;
        }
        rc = store_exec(tx, NULL, err,
                        "UPDATE nodes SET hostname = ?, cpus = ?, memory_gib = ?, labels = ?,"
                        " driver_version = ?, source = ?, agent_user_id = ?, state = 'ready',"
                        " last_heartbeat = ? WHERE id = ?",
                        "siissssis", jstr(r, "hostname", ""), jint(r, "cpus", 0),
                        jint(r, "memory_gib", 0), labels, jstr(r, "driver_version", ""),
                        jstr(r, "source", "nvml"), agent_user_id, now, node_id);
    } else {
        rnd_id(node_id);
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO nodes (id, name, hostname, cpus, memory_gib, labels,"
                        " driver_version, source, agent_user_id, registered_at, last_heartbeat)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        "sssiissssii", node_id, name, jstr(r, "hostname", ""), jint(r, "cpus", 0),
                        jint(r, "memory_gib", 0), labels, jstr(r, "driver_version", ""),
                        jstr(r, "source", "nvml"), agent_user_id, now, now);
    }
    if (!rc) rc = topo_refresh(tx, name, err);
    if (rc) goto out;
    rc = apply_gpus(tx, r, node_id, name, now, *rereg, refused, err);
out:
    free(labels);
    return rc;
}

/* A node's id and agent account (STORE_COLS). */
#define NODE_AGENT_COLUMNS(X) X(NA_ID, "id") X(NA_AGENT, "agent_user_id")
enum { NODE_AGENT_COLUMNS(STORE_COL_ENUM) NA__N };

int inv_node_report(store_tx *tx, const char *node, const char *agent_user_id, json_t *r,
                    json_t *refused, gp_err *err) {
    store_stmt *s;
    char nid[RND_ID_LEN];
    int rc = check_report(r, err);
    if (rc) return rc;
    if (strcmp(jstr(r, "name", ""), node) != 0)
        return gp_err_set(err, GP_EINVALID, "the report names another node");
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(NODE_AGENT_COLUMNS) " FROM nodes WHERE name = ?",
                          "s", node)))
        return rc;
    rc = store_step(s, err);
    int mine = rc > 0 && strcmp(store_text(s, NA_AGENT), agent_user_id) == 0;
    if (rc > 0) snprintf(nid, sizeof nid, "%s", store_text(s, NA_ID));
    store_done(s);
    if (rc < 0) return rc;
    if (!mine) return gp_err_set(err, GP_EFORBIDDEN, "an agent acts only for its own node");
    json_t *lj = json_object_get(r, "labels");
    char *labels = lj ? jx_dump(lj) : strdup("{}");
    int64_t now = gt_now_us();
    rc = store_exec(tx, NULL, err,
                    "UPDATE nodes SET hostname = ?, cpus = ?, memory_gib = ?, labels = ?,"
                    " driver_version = ?, source = ? WHERE id = ?",
                    "siissss", jstr(r, "hostname", ""), jint(r, "cpus", 0),
                    jint(r, "memory_gib", 0), labels, jstr(r, "driver_version", ""),
                    jstr(r, "source", "nvml"), nid);
    free(labels);
    if (!rc) rc = topo_refresh(tx, node, err);
    return rc ? rc : apply_gpus(tx, r, nid, node, now, 1, refused, err);
}

/* ---- transitions ---- */

static void tr_set(inv_transition *t, const char *node, const char *uuid, const char *kind,
                   const char *from, const char *to, const char *cause) {
    memset(t, 0, sizeof *t);
    sb_copy(t->node, sizeof t->node, node);
    sb_copy(t->gpu_uuid, sizeof t->gpu_uuid, uuid ? uuid : "");
    sb_copy(t->kind, sizeof t->kind, kind);
    sb_copy(t->from, sizeof t->from, from);
    sb_copy(t->to, sizeof t->to, to);
    sb_copy(t->cause, sizeof t->cause, cause);
}

/* Record the transition in the history and, when it is bad news, raise an alarm. */
/* The tenants holding a GPU or node, as record reads them (STORE_COLS). */
#define HOLDING_TENANT_COLUMNS(X) X(HT_TENANT, "tenant")
enum { HOLDING_TENANT_COLUMNS(STORE_COL_ENUM) HT__N };

static int record(store_tx *tx, const inv_transition *t, const char *actor, gp_err *err) {
    char id[RND_ID_LEN];
    int64_t now = gt_now_us();
    rnd_id(id);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO health_events (id, at, node, gpu_uuid, kind, from_state,"
                        " to_state, cause, actor) VALUES (?,?,?,?,?,?,?,?,?)",
                        "sisssssss", id, now, t->node, t->gpu_uuid, t->kind, t->from, t->to,
                        t->cause, actor);
    if (rc) return rc;
    /* good news closes the alarms of the bad news before it: a node heard from again, a card
     * healthy again (a person acknowledges only what does not clear by itself) */
    if ((strcmp(t->kind, "node") == 0 && strcmp(t->to, "ready") == 0) ||
        (strcmp(t->kind, "health") == 0 && strcmp(t->to, "healthy") == 0)) {
        char why[300];
        snprintf(why, sizeof why, "%s %s: %s", t->gpu_uuid[0] ? "GPU" : "node", t->to, t->cause);
        return inv_alarm_resolve(tx, t->kind, t->node, t->gpu_uuid, NULL, why, err);
    }
    const char *sev = NULL;
    if (strcmp(t->to, "failed") == 0 || strcmp(t->to, "unreachable") == 0) sev = "critical";
    else if (strcmp(t->to, "degraded") == 0) sev = "warning";
    if (!sev) return GP_OK;
    char msg[400];
    if (t->gpu_uuid[0])
        snprintf(msg, sizeof msg, "GPU %s on node %s is %s: %s", t->gpu_uuid, t->node, t->to,
                 t->cause);
    else
        snprintf(msg, sizeof msg, "node %s is %s: %s", t->node, t->to, t->cause);
    /* the tenants whose work holds that GPU (or any GPU of that node) see the alarm too */
    store_stmt *q;
    json_t *tenants = json_array();
    rc = store_query(tx, &q, err,
                         "SELECT DISTINCT " STORE_COLS(HOLDING_TENANT_COLUMNS)
                         " FROM bindings WHERE end_us IS NULL"
                         " AND ((? <> '' AND gpu_uuid = ?) OR (? = '' AND node = ?))"
                         " ORDER BY tenant",
                         "ssss", t->gpu_uuid, t->gpu_uuid, t->gpu_uuid, t->node);
    if (rc) {
        json_decref(tenants);
        return rc;
    }
    while ((rc = store_step(q, err)) > 0)
        json_array_append_new(tenants, json_string(store_text(q, HT_TENANT)));
    store_done(q);
    if (rc == 0)
        rc = inv_alarm_raise(tx, sev, t->kind, t->node, t->gpu_uuid, "", msg, tenants, NULL, err);
    json_decref(tenants);
    return rc < 0 ? rc : GP_OK;
}

int inv_alarm_raise(store_tx *tx, const char *severity, const char *kind, const char *node,
                    const char *gpu, const char *subject, const char *message, json_t *tenants,
                    json_t *detail, gp_err *err) {
    char id[RND_ID_LEN];
    rnd_id(id);
    char *tj = tenants ? jx_dump(tenants) : NULL;
    char *dj = detail ? jx_dump(detail) : NULL;
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO alarms (id, at, severity, kind, node, gpu_uuid, subject,"
                        " message, tenants, detail) VALUES (?,?,?,?,?,?,?,?,?,?)",
                        "sissssssss", id, gt_now_us(), severity, kind, node ? node : "",
                        gpu ? gpu : "", subject ? subject : "", message, tj ? tj : "[]",
                        dj ? dj : "{}");
    free(tj);
    free(dj);
    return rc;
}

/* An open alarm as inv_alarm_resolve reads it (STORE_COLS). */
#define OPEN_ALARM_COLUMNS(X) X(OA_ID, "id") X(OA_SEVERITY, "severity") X(OA_MESSAGE, "message")
enum { OPEN_ALARM_COLUMNS(STORE_COL_ENUM) OA__N };

int inv_alarm_resolve(store_tx *tx, const char *kind, const char *node, const char *gpu,
                      const char *subject, const char *why, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(OPEN_ALARM_COLUMNS)
                         " FROM alarms WHERE kind = ? AND node = ?"
                         " AND gpu_uuid = ? AND (? = 1 OR subject = ?) AND resolved_at IS NULL"
                         " ORDER BY at, id",
                         "sssis", kind, node ? node : "", gpu ? gpu : "", (int64_t)(subject == NULL),
                         subject ? subject : "");
    if (rc) return rc;
    json_t *ids = json_array();
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(ids, json_pack("{s:s,s:s,s:s}", "id", store_text(s, OA_ID),
                                             "severity", store_text(s, OA_SEVERITY), "message",
                                             store_text(s, OA_MESSAGE)));
    store_done(s);
    int64_t now = gt_now_us();
    size_t i;
    json_t *a;
    json_array_foreach(ids, i, a) {
        if (rc < 0) break;
        const char *id = json_string_value(json_object_get(a, "id"));
        rc = store_exec(tx, NULL, err,
                        "UPDATE alarms SET resolved_at = ?, resolution = ? WHERE id = ?"
                        " AND resolved_at IS NULL",
                        "iss", now, why, id);
        if (rc) break;
        /* kept in the history, and in the audit trail: who closed it (the system) and why */
        json_object_set_new(a, "resolution", json_string(why));
        char *text = jx_dump(a);
        audit_event ev = {.actor = "system",
                          .action = "alarm.resolve",
                          .target_type = "alarm",
                          .target_id = id,
                          .result = "ok",
                          .summary = text};
        rc = audit_append(tx, &ev, NULL, err);
        free(text);
    }
    json_decref(ids);
    return rc;
}

static int push(inv_transition **arr, int *n, const inv_transition *t) {
    inv_transition *na = realloc(*arr, sizeof *na * (size_t)(*n + 1));
    if (!na) return -1;
    na[(*n)++] = *t;
    *arr = na;
    return 0;
}

/* A node as inv_heartbeat reads it (STORE_COLS). */
#define HB_NODE_COLUMNS(X) X(HN_ID, "id") X(HN_AGENT, "agent_user_id") X(HN_STATE, "state")
enum { HB_NODE_COLUMNS(STORE_COL_ENUM) HN__N };

/* A reported GPU as inv_heartbeat reads it (STORE_COLS). */
#define HB_GPU_COLUMNS(X)                                                                 \
    X(HG_HEALTH, "health")                                                                \
    X(HG_SIGNALS, "signals")                                                              \
    X(HG_VENDOR, "vendor")                                                                \
    X(HG_UPDATED, "updated_at")
enum { HB_GPU_COLUMNS(STORE_COL_ENUM) HG__N };

int inv_heartbeat(store_tx *tx, const char *node, const char *agent_user_id, json_t *hb,
                  const health_policy *pol, inv_transition **tr, int *ntr, gp_err *err) {
    store_stmt *s;
    char nid[RND_ID_LEN], state[16];
    *tr = NULL;
    *ntr = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HB_NODE_COLUMNS) " FROM nodes WHERE name = ?", "s",
                         node);
    if (rc) return rc;
    rc = store_step(s, err);
    int mine = rc > 0 && strcmp(store_text(s, HN_AGENT), agent_user_id) == 0;
    if (rc > 0) {
        snprintf(nid, sizeof nid, "%s", store_text(s, HN_ID));
        snprintf(state, sizeof state, "%s", store_text(s, HN_STATE));
    }
    store_done(s);
    if (rc < 0) return rc;
    if (!mine) return gp_err_set(err, GP_EFORBIDDEN, "an agent acts only for its own node");
    int64_t now = gt_now_us();
    inv_transition t;
    if (strcmp(state, "unreachable") == 0) {
        tr_set(&t, node, NULL, "node", "unreachable", "ready", "heartbeats resumed");
        if ((rc = record(tx, &t, "system", err))) goto fail;
        if (push(tr, ntr, &t)) goto oom;
    }
    rc = store_exec(tx, NULL, err,
                    "UPDATE nodes SET state = 'ready', last_heartbeat = ? WHERE id = ?", "is", now,
                    nid);
    if (rc) goto fail;
    json_t *gpus = json_object_get(hb, "gpus");
    if (gpus && !json_is_array(gpus)) {
        rc = gp_err_set(err, GP_EINVALID, "gpus must be an array");
        goto fail;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        const char *uuid = jstr(g, "uuid", "");
        gpu_signals now_s, prev_s;
        if ((rc = health_signals_parse(json_object_get(g, "signals"), &now_s, err))) goto fail;
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HB_GPU_COLUMNS) " FROM gpus"
                         " WHERE uuid = ? AND node_id = ?",
                         "ss",
                         uuid, nid);
        if (rc) goto fail;
        rc = store_step(s, err);
        if (rc <= 0) {
            store_done(s);
            if (rc == 0) rc = gp_err_set(err, GP_EINVALID, "GPU %.90s is not on node %s", uuid, node);
            goto fail;
        }
        int cur = health_parse(store_text(s, HG_HEALTH));
        json_t *pj = json_loads(store_text(s, HG_SIGNALS), 0, NULL);
        int have_prev = pj && json_object_size(pj) > 0 &&
                        health_signals_parse(pj, &prev_s, NULL) == GP_OK;
        /* the signals mean what they mean for the card's vendor (health.h) */
        int vendor = cp_vendor_parse(store_text(s, HG_VENDOR));
        now_s.vendor = prev_s.vendor = vendor < 0 ? CP_NVIDIA : vendor;
        int64_t stored_at = store_int(s, HG_UPDATED);
        json_decref(pj);
        store_done(s);
        char cause[200];
        int next = health_eval(pol, &now_s, have_prev ? &prev_s : NULL, cur, cause, sizeof cause);
        /* the same verdict on the same counters, stored less than INV_SIGNALS_REFRESH_US ago:
         * the row stays (the figures that vary on every report - temperature, utilisation,
         * power, memory in use - are refreshed that often; the verdict never waits) */
        if (have_prev && next == cur && health_signals_same(&now_s, &prev_s) && stored_at >= 0 &&
            now - stored_at < INV_SIGNALS_REFRESH_US)
            continue;
        /* keep the counters, not the one-off Xid list, as the "previous" report */
        json_t *sj = json_object_get(g, "signals");
        json_t *keep = sj ? json_deep_copy(sj) : json_object();
        json_object_del(keep, "xids");
        json_object_del(keep, "critical_events");
        char *sig = jx_dump(keep);
        json_decref(keep);
        /* a failed card keeps the cause it failed with until an operator resets it */
        int keep_cause = next == HEALTH_FAILED && cur == HEALTH_FAILED;
        rc = store_exec(tx, NULL, err,
                        "UPDATE gpus SET signals = ?, health = ?,"
                        " health_cause = CASE WHEN ? <> 0 THEN health_cause ELSE ? END,"
                        " updated_at = ? WHERE uuid = ?",
                        "ssisis", sig ? sig : "{}", health_name(next), (int64_t)keep_cause, cause,
                        now, uuid);
        free(sig);
        if (rc) goto fail;
        if (next != cur) {
            tr_set(&t, node, uuid, "health", health_name(cur), health_name(next),
                   next == HEALTH_HEALTHY ? "signals back to normal" : cause);
            if ((rc = record(tx, &t, "system", err))) goto fail;
            if (push(tr, ntr, &t)) goto oom;
        }
    }
    return GP_OK;
oom:
    rc = gp_err_set(err, GP_ENOMEM, NULL);
fail:
    free(*tr);
    *tr = NULL;
    *ntr = 0;
    return rc;
}

int inv_mass_silence(int ready, int due) {
    return due >= INV_MASS_MIN && due * 2 > ready;
}

/* The ready nodes, how many are due and how many quiet, as inv_sweep counts them
 * (STORE_COLS).  Its parameters: the due limit, then the quiet limit. */
#define SWEEP_COUNT_COLUMNS(X)                                                            \
    X(SW_READY, "COUNT(*)")                                                               \
    X(SW_DUE, "COALESCE(SUM(CASE WHEN last_heartbeat < ? THEN 1 ELSE 0 END), 0)")         \
    X(SW_QUIET, "COALESCE(SUM(CASE WHEN last_heartbeat < ? THEN 1 ELSE 0 END), 0)")
enum { SWEEP_COUNT_COLUMNS(STORE_COL_ENUM) SW__N };

/* A silent node as inv_sweep reads it (STORE_COLS). */
#define SILENT_COLUMNS(X) X(SI_NAME, "name") X(SI_LAST, "last_heartbeat")
enum { SILENT_COLUMNS(STORE_COL_ENUM) SI__N };

int inv_sweep(store_tx *tx, int64_t timeout_us, int64_t observed_since_us, inv_transition **tr,
              int *ntr, int *held, gp_err *err) {
    store_stmt *s;
    int64_t now = gt_now_us();
    *tr = NULL;
    *ntr = 0;
    if (held) *held = 0;
    /* not watched for a whole timeout yet: no node can be judged */
    if (now - observed_since_us < timeout_us) return GP_OK;
    int ready = 0, due = 0, quiet = 0;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SWEEP_COUNT_COLUMNS)
                         " FROM nodes WHERE state = 'ready'",
                         "ii", now - timeout_us, now - timeout_us / 2);
    if (rc) return rc;
    if ((rc = store_step(s, err)) > 0) {
        ready = (int)store_int(s, SW_READY);
        due = (int)store_int(s, SW_DUE);
        quiet = (int)store_int(s, SW_QUIET);
    }
    store_done(s);
    if (rc < 0) return rc;
    if (!due) return GP_OK;
    /* in a mass silence, only the long silent; the nodes that fell silent "at once" are those
     * silent for half a timeout or more, so a silence that reaches the nodes one after another
     * (an agent's pass over its nodes, a switch failing port by port) is still one silence and
     * its first few are not marked before the rest are even due */
    int mass = inv_mass_silence(ready, quiet);
    int64_t limit = mass ? timeout_us * INV_MASS_HOLD : timeout_us;
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(SILENT_COLUMNS) " FROM nodes WHERE state = 'ready'"
                     " AND last_heartbeat < ?",
                     "i", now - limit);
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        inv_transition t;
        char cause[160];
        snprintf(cause, sizeof cause, "no heartbeat for %lld s (timeout %lld s%s)",
                 (long long)((now - store_int(s, SI_LAST)) / 1000000),
                 (long long)(timeout_us / 1000000),
                 mass ? "; held while most nodes fell silent at once" : "");
        tr_set(&t, store_text(s, SI_NAME), NULL, "node", "ready", "unreachable", cause);
        if (push(tr, ntr, &t)) {
            rc = gp_err_set(err, GP_ENOMEM, NULL);
            break;
        }
    }
    store_done(s);
    if (held && rc >= 0) *held = due - *ntr;
    for (int i = 0; rc >= 0 && i < *ntr; i++) {
        rc = store_exec(tx, NULL, err, "UPDATE nodes SET state = 'unreachable' WHERE name = ?",
                        "s", (*tr)[i].node);
        if (!rc) rc = record(tx, &(*tr)[i], "system", err);
    }
    if (rc < 0) {
        free(*tr);
        *tr = NULL;
        *ntr = 0;
        return rc;
    }
    return GP_OK;
}

static int admin_state_ok(const char *s) {
    return s && (strcmp(s, "none") == 0 || strcmp(s, "cordoned") == 0 ||
                 strcmp(s, "draining") == 0);
}

/* A node's or GPU's admin state and node name, as set_admin reads them (STORE_COLS);
 * the GPU's list reads in the node's order. */
#define NODE_ADMIN_COLUMNS(X) X(AD_STATE, "admin_state") X(AD_NODE, "name")
enum { NODE_ADMIN_COLUMNS(STORE_COL_ENUM) AD__N };
#define GPU_ADMIN_COLUMNS(X) X(AG_STATE, "g.admin_state") X(AG_NODE, "n.name")
enum { GPU_ADMIN_COLUMNS(STORE_COL_ENUM) AG__N };
_Static_assert((int)AG_STATE == (int)AD_STATE && (int)AG_NODE == (int)AD_NODE,
               "set_admin reads both lists alike");

static int set_admin(store_tx *tx, const char *table_sql_get, const char *table_sql_set,
                     const char *key, const char *node_for_event, const char *uuid,
                     const char *state, const char *actor, inv_transition *tr, gp_err *err) {
    store_stmt *s;
    char from[16], node[64];
    if (!admin_state_ok(state)) return gp_err_set(err, GP_EINVALID, "unknown admin state");
    int rc = store_query(tx, &s, err, table_sql_get, "s", key);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(from, sizeof from, "%s", store_text(s, AD_STATE));
        snprintf(node, sizeof node, "%s", node_for_event ? node_for_event : store_text(s, AD_NODE));
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    if ((rc = store_exec(tx, NULL, err, table_sql_set, "ss", state, key))) return rc;
    tr_set(tr, node, uuid, "admin", from, state, "set by an operator");
    return strcmp(from, state) == 0 ? GP_OK : record(tx, tr, actor, err);
}

int inv_node_admin(store_tx *tx, const char *node, const char *state, const char *actor,
                   inv_transition *tr, gp_err *err) {
    /* an operator's state is the operator's: a maintenance window no longer gives it back */
    return set_admin(tx, "SELECT " STORE_COLS(NODE_ADMIN_COLUMNS) " FROM nodes WHERE name = ?",
                     "UPDATE nodes SET admin_state = ?, maint_reservation = '' WHERE name = ?",
                     node, node, NULL, state, actor, tr, err);
}

/* A node's admin state and the window that set it (STORE_COLS). */
#define MAINT_COLUMNS(X) X(MT_STATE, "admin_state") X(MT_MARK, "maint_reservation")
enum { MAINT_COLUMNS(STORE_COL_ENUM) MT__N };

int inv_node_maintenance(store_tx *tx, const char *node, const char *state, const char *mark,
                         const char *cause, const char *actor, int *changed, gp_err *err) {
    store_stmt *s;
    char from[16] = "", had[RND_ID_LEN + 8] = "";
    *changed = 0;
    if (!admin_state_ok(state)) return gp_err_set(err, GP_EINVALID, "unknown admin state");
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MAINT_COLUMNS) " FROM nodes WHERE name = ?", "s",
                         node);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(from, sizeof from, "%s", store_text(s, MT_STATE));
        snprintf(had, sizeof had, "%s", store_text(s, MT_MARK));
    }
    store_done(s);
    if (rc <= 0) return rc < 0 ? rc : GP_OK; /* gone: nothing to do */
    /* a window touches a node in service, or one a window (this or another) set */
    if (!had[0] && strcmp(from, "none") != 0) return GP_OK;
    if (!strcmp(from, state) && !strcmp(had, mark)) return GP_OK;
    int n = 0;
    if ((rc = store_exec(tx, &n, err,
                         "UPDATE nodes SET admin_state = ?, maint_reservation = ? WHERE name = ?"
                         " AND admin_state = ? AND maint_reservation = ?",
                         "sssss", state, mark, node, from, had)))
        return rc;
    if (!n) return GP_OK;
    *changed = 1;
    if (!strcmp(from, state)) return GP_OK; /* the same state, another window's mark */
    inv_transition tr;
    tr_set(&tr, node, NULL, "admin", from, state, cause);
    return record(tx, &tr, actor, err);
}

int inv_gpu_admin(store_tx *tx, const char *uuid, const char *state, const char *actor,
                  inv_transition *tr, gp_err *err) {
    return set_admin(tx,
                     "SELECT " STORE_COLS(GPU_ADMIN_COLUMNS)
                     " FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?",
                     "UPDATE gpus SET admin_state = ? WHERE uuid = ?", uuid, NULL, uuid, state,
                     actor, tr, err);
}

/* A GPU's health and node (STORE_COLS). */
#define RESET_COLUMNS(X) X(RS_HEALTH, "g.health") X(RS_NODE, "n.name")
enum { RESET_COLUMNS(STORE_COL_ENUM) RS__N };

int inv_gpu_reset(store_tx *tx, const char *uuid, const char *actor, inv_transition *tr,
                  gp_err *err) {
    store_stmt *s;
    char from[16], node[64];
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(RESET_COLUMNS)
                         " FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?",
                         "s", uuid);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(from, sizeof from, "%s", store_text(s, RS_HEALTH));
        snprintf(node, sizeof node, "%s", store_text(s, RS_NODE));
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    rc = store_exec(tx, NULL, err,
                    "UPDATE gpus SET health = 'healthy', health_cause = '', signals = '{}'"
                    " WHERE uuid = ?",
                    "s", uuid);
    if (rc) return rc;
    tr_set(tr, node, uuid, "health", from, "healthy", "reset by an operator");
    return strcmp(from, "healthy") == 0 ? GP_OK : record(tx, tr, actor, err);
}

/* How many MIG slices a GPU has (STORE_COLS). */
#define MODE_COLUMNS(X) X(MD_SLICES, "(SELECT COUNT(*) FROM slices WHERE gpu_id = g.id)")
enum { MODE_COLUMNS(STORE_COL_ENUM) MD__N };

int inv_gpu_mode(store_tx *tx, const char *uuid, const char *mode, gp_err *err) {
    store_stmt *s;
    if (!mode || (strcmp(mode, "whole") && strcmp(mode, "mig") && strcmp(mode, "shared")))
        return gp_err_set(err, GP_EINVALID, "mode must be whole, mig or shared");
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MODE_COLUMNS) " FROM gpus g WHERE g.uuid = ?",
                         "s", uuid);
    if (rc) return rc;
    rc = store_step(s, err);
    int64_t slices = rc > 0 ? store_int(s, MD_SLICES) : 0;
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    if (strcmp(mode, "mig") == 0 && slices == 0)
        return gp_err_set(err, GP_EINVALID,
                          "the agent reports no MIG instances on this GPU: enable MIG and create "
                          "instances on the node first (gpupool never changes MIG itself)");
    if (strcmp(mode, "mig") != 0 && slices > 0)
        return gp_err_set(err, GP_EINVALID,
                          "this GPU has MIG instances; it can only be used in mig mode");
    return store_exec(tx, NULL, err, "UPDATE gpus SET mode = ? WHERE uuid = ?", "ss", mode, uuid);
}

/* ---- GPU identity ---- */

const char *inv_gpu_move_refusal(const inv_move_facts *f) {
    if (f->same_node) return "the GPU is already on that node";
    if (!f->from_lost && !f->from_draining)
        return "the GPU's node is in service: drain it first (gpupool node drain NODE), or move "
               "the card once the node is lost";
    if (f->open_bindings > 0)
        return "jobs still hold the GPU: wait until the drain ends them (gpupool binding list "
               "--gpu UUID)";
    return NULL;
}

/* A GPU's node and what holds the GPU, as inv_gpu_move reads them (STORE_COLS). */
#define MOVE_COLUMNS(X)                                                                   \
    X(MV_NODE, "n.name")                                                                  \
    X(MV_STATE, "n.state")                                                                \
    X(MV_ADMIN, "n.admin_state")                                                          \
    X(MV_NODE_ID, "n.id")                                                                 \
    X(MV_OPEN, "(SELECT COUNT(*) FROM bindings b WHERE b.end_us IS NULL"                  \
               "  AND b.gpu_uuid = g.uuid)")
enum { MOVE_COLUMNS(STORE_COL_ENUM) MV__N };

int inv_gpu_move(store_tx *tx, const char *uuid, const char *to_node, char from_node[64],
                 gp_err *err) {
    store_stmt *s;
    char to_id[RND_ID_LEN];
    inv_move_facts f = {0};
    from_node[0] = '\0';
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(MOVE_COLUMNS)
                         " FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?",
                         "s", uuid);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        snprintf(from_node, 64, "%s", store_text(s, MV_NODE));
        f.from_lost = strcmp(store_text(s, MV_STATE), "unreachable") == 0;
        f.from_draining = strcmp(store_text(s, MV_ADMIN), "draining") == 0;
        f.same_node = strcmp(store_text(s, MV_NODE), to_node) == 0;
        f.open_bindings = store_int(s, MV_OPEN);
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    if ((rc = store_query(tx, &s, err,
                          "SELECT " STORE_COLS(NODE_ID_COLUMNS) " FROM nodes WHERE name = ?", "s",
                          to_node)))
        return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(to_id, sizeof to_id, "%s", store_text(s, NI_ID));
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_EINVALID, "node '%.63s' does not exist", to_node);
    if (rc < 0) return rc;
    const char *why = inv_gpu_move_refusal(&f);
    if (why) return gp_err_set(err, GP_ECONFLICT, "%s", why);
    /* the card keeps its record (health, mode, admin state, history); the new node's next
     * report fills in its index, bus and topology there */
    return store_exec(tx, NULL, err, "UPDATE gpus SET node_id = ?, updated_at = ? WHERE uuid = ?",
                      "sis", to_id, gt_now_us(), uuid);
}

/* A GPU's node name (STORE_COLS). */
#define GPU_NODE_COLUMNS(X) X(GN_NODE, "n.name")
enum { GPU_NODE_COLUMNS(STORE_COL_ENUM) GN__N };

int inv_drop_foreign(store_tx *tx, const char *node, json_t *gpus, gp_err *err) {
    if (!json_is_array(gpus)) return GP_OK;
    for (size_t i = 0; i < json_array_size(gpus);) {
        const char *uuid = jstr(json_array_get(gpus, i), "uuid", "");
        store_stmt *s;
        int rc = store_query(tx, &s, err,
                             "SELECT " STORE_COLS(GPU_NODE_COLUMNS)
                             " FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?",
                             "s", uuid);
        if (rc) return rc;
        rc = store_step(s, err);
        int other = rc > 0 && strcmp(store_text(s, GN_NODE), node) != 0;
        store_done(s);
        if (rc < 0) return rc;
        if (other) json_array_remove(gpus, i);
        else i++;
    }
    return GP_OK;
}

int inv_node_pool(store_tx *tx, const char *node, const char *pool, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err, "UPDATE nodes SET pool = ? WHERE name = ?", "ss", pool,
                        node);
    if (rc == GP_EINVALID) return gp_err_set(err, rc, "pool '%s' does not exist", pool);
    if (rc) return rc;
    return changes ? GP_OK : gp_err_set(err, GP_ENOTFOUND, "not found");
}

/* ---- views ---- */

static int allocatable(const health_policy *pol, const char *node_state, const char *node_admin,
                       const char *gpu_admin, const char *health) {
    return strcmp(node_state, "ready") == 0 && strcmp(node_admin, "none") == 0 &&
           strcmp(gpu_admin, "none") == 0 && health_allocatable(pol, health_parse(health));
}

/* A GPU's row as gpu_json reads it (STORE_COLS). */
#define GPU_COLUMNS(X)                                                                    \
    X(GC_UUID, "g.uuid")                                                                  \
    X(GC_NODE, "n.name")                                                                  \
    X(GC_INDEX, "g.idx")                                                                  \
    X(GC_MODEL, "g.model")                                                                \
    X(GC_MEMORY, "g.memory_mib")                                                          \
    X(GC_PCI_BUS, "g.pci_bus")                                                            \
    X(GC_NUMA, "g.numa")                                                                  \
    X(GC_COMPUTE_CAP, "g.compute_cap")                                                    \
    X(GC_MODE, "g.mode")                                                                  \
    X(GC_HEALTH, "g.health")                                                              \
    X(GC_HEALTH_CAUSE, "g.health_cause")                                                  \
    X(GC_ADMIN, "g.admin_state")                                                          \
    X(GC_SIGNALS, "g.signals")                                                            \
    X(GC_TOPOLOGY, "g.topology")                                                          \
    X(GC_UPDATED, "g.updated_at")                                                         \
    X(GC_NODE_STATE, "n.state")                                                           \
    X(GC_NODE_ADMIN, "n.admin_state")                                                     \
    X(GC_ID, "g.id")                                                                      \
    X(GC_MIG_CAPABLE, "g.mig_capable")                                                    \
    X(GC_VENDOR, "g.vendor")                                                              \
    X(GC_DRIVER, "g.driver_version")                                                      \
    X(GC_STACK, "g.stack")
enum { GPU_COLUMNS(STORE_COL_ENUM) GC__N };
#define GPU_COLS STORE_COLS(GPU_COLUMNS)

/* A MIG slice as gpu_json reads it (STORE_COLS). */
#define SLICE_COLUMNS(X) X(SL_UUID, "uuid") X(SL_PROFILE, "profile") X(SL_MEMORY, "memory_mib")
enum { SLICE_COLUMNS(STORE_COL_ENUM) SL__N };

static json_t *gpu_json(store_tx *tx, store_stmt *s, const health_policy *pol) {
    json_t *sig = json_loads(store_text(s, GC_SIGNALS), 0, NULL);
    json_t *topo = json_loads(store_text(s, GC_TOPOLOGY), 0, NULL);
    json_t *o = json_pack(
        "{s:s,s:s,s:I,s:s,s:f,s:I,s:s,s:I,s:s,s:s,s:s,s:s,s:s,s:b,s:b,s:o,s:o,s:o}", "uuid",
        store_text(s, GC_UUID), "node", store_text(s, GC_NODE), "index",
        (json_int_t)store_int(s, GC_INDEX), "model", store_text(s, GC_MODEL), "memory_gib",
        (double)store_int(s, GC_MEMORY) / 1024.0, "memory_mib", (json_int_t)store_int(s, GC_MEMORY),
        "pci_bus", store_text(s, GC_PCI_BUS), "numa", (json_int_t)store_int(s, GC_NUMA),
        "compute_cap", store_text(s, GC_COMPUTE_CAP), "mode", store_text(s, GC_MODE), "health",
        store_text(s, GC_HEALTH), "health_cause", store_text(s, GC_HEALTH_CAUSE), "admin_state",
        store_text(s, GC_ADMIN), "mig_capable", (int)store_int(s, GC_MIG_CAPABLE), "allocatable",
        allocatable(pol, store_text(s, GC_NODE_STATE), store_text(s, GC_NODE_ADMIN),
                    store_text(s, GC_ADMIN), store_text(s, GC_HEALTH)),
        "signals", sig ? sig : json_object(), "topology", topo ? topo : json_object(),
        "updated_at", jx_time(store_int(s, GC_UPDATED)));
    /* MIG slices */
    store_stmt *q;
    gp_err err = GP_ERR_INIT;
    json_t *slices = json_array();
    if (store_query(tx, &q, &err,
                    "SELECT " STORE_COLS(SLICE_COLUMNS)
                    " FROM slices WHERE gpu_id = ? ORDER BY idx",
                    "s", store_text(s, GC_ID)) == GP_OK) {
        while (store_step(q, &err) > 0)
            json_array_append_new(slices, json_pack("{s:s,s:s,s:I}", "uuid",
                                                    store_text(q, SL_UUID), "profile",
                                                    store_text(q, SL_PROFILE), "memory_mib",
                                                    (json_int_t)store_int(q, SL_MEMORY)));
        store_done(q);
    }
    json_object_set_new(o, "slices", slices);
    json_t *stack = json_loads(store_text(s, GC_STACK), 0, NULL);
    json_object_set_new(o, "vendor", json_string(store_text(s, GC_VENDOR)));
    json_object_set_new(o, "driver_version", json_string(store_text(s, GC_DRIVER)));
    json_object_set_new(o, "stack", json_is_object(stack) ? stack : json_object());
    if (!json_is_object(stack)) json_decref(stack);
    return o;
}

static int name_in(json_t *names, const char *n) {
    size_t i;
    json_t *v;
    if (!names) return 1;
    json_array_foreach(names, i, v) if (json_is_string(v) &&
                                        strcmp(json_string_value(v), n) == 0) return 1;
    return 0;
}

int inv_gpu_list(store_tx *tx, const health_policy *pol, json_t *nodes, const char *node,
                 const char *health, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " GPU_COLS " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE (? IS NULL OR n.name = ?) AND (? IS NULL OR g.health = ?)"
                         " ORDER BY n.name, g.idx",
                         "ssss", node, node, health, health);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0)
        if (name_in(nodes, store_text(s, GC_NODE)))
            json_array_append_new(arr, gpu_json(tx, s, pol));
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int inv_gpu_get(store_tx *tx, const health_policy *pol, const char *uuid, json_t **out,
                gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " GPU_COLS " FROM gpus g JOIN nodes n ON n.id = g.node_id"
                         " WHERE g.uuid = ?",
                         "s", uuid);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) *out = gpu_json(tx, s, pol);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    return rc < 0 ? rc : GP_OK;
}

int inv_node_exists(store_tx *tx, const char *name) {
    store_stmt *s;
    gp_err err = GP_ERR_INIT;
    if (store_query(tx, &s, &err, "SELECT " COUNT_COLS " FROM nodes WHERE name = ?", "s", name))
        return -1;
    int rc = store_step(s, &err);
    int n = rc > 0 ? (int)store_int(s, CN_COUNT) : -1;
    store_done(s);
    return n > 0 ? 1 : n;
}

int inv_gpu_node(store_tx *tx, const char *uuid, char node[64], gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(GPU_NODE_COLUMNS)
                         " FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?",
                         "s", uuid);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(node, 64, "%s", store_text(s, GN_NODE));
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    return rc < 0 ? rc : GP_OK;
}

/* A node's row as node_json reads it (STORE_COLS). */
#define NODE_COLUMNS(X)                                                                   \
    X(NC_NAME, "n.name")                                                                  \
    X(NC_HOSTNAME, "n.hostname")                                                          \
    X(NC_CPUS, "n.cpus")                                                                  \
    X(NC_MEMORY, "n.memory_gib")                                                          \
    X(NC_LABELS, "n.labels")                                                              \
    X(NC_POOL, "n.pool")                                                                  \
    X(NC_DRIVER, "n.driver_version")                                                      \
    X(NC_SOURCE, "n.source")                                                              \
    X(NC_STATE, "n.state")                                                                \
    X(NC_ADMIN, "n.admin_state")                                                          \
    X(NC_REGISTERED, "n.registered_at")                                                   \
    X(NC_HEARTBEAT, "n.last_heartbeat")                                                   \
    X(NC_GPUS, "(SELECT COUNT(*) FROM gpus g WHERE g.node_id = n.id)")                    \
    X(NC_OPS_LABELS, "n.ops_labels")
enum { NODE_COLUMNS(STORE_COL_ENUM) NC__N };
#define NODE_COLS STORE_COLS(NODE_COLUMNS)

/* A node's card vendors, as add_vendors reads them (STORE_COLS). */
#define NODE_VENDOR_COLUMNS(X) X(NV_NODE, "n.name") X(NV_VENDOR, "g.vendor")
enum { NODE_VENDOR_COLUMNS(STORE_COL_ENUM) NV__N };

static json_t *node_json(store_stmt *s) {
    /* its labels: the agent's with ops' over them (and those ops set, apart) */
    json_t *labels = labels_merged(store_text(s, NC_LABELS), store_text(s, NC_OPS_LABELS));
    json_t *ops = json_loads(store_text(s, NC_OPS_LABELS), 0, NULL);
    return json_pack("{s:s,s:s,s:I,s:I,s:o,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:o}", "name",
                     store_text(s, NC_NAME), "hostname", store_text(s, NC_HOSTNAME), "cpus",
                     (json_int_t)store_int(s, NC_CPUS), "memory_gib",
                     (json_int_t)store_int(s, NC_MEMORY), "labels",
                     labels ? labels : json_object(), "pool", store_text(s, NC_POOL),
                     "driver_version", store_text(s, NC_DRIVER), "source",
                     store_text(s, NC_SOURCE), "state", store_text(s, NC_STATE), "admin_state",
                     store_text(s, NC_ADMIN), "registered_at",
                     jx_time(store_int(s, NC_REGISTERED)), "last_heartbeat",
                     jx_time(store_int(s, NC_HEARTBEAT)), "gpu_count",
                     (json_int_t)store_int(s, NC_GPUS), "ops_labels",
                     json_is_object(ops) ? ops : (json_decref(ops), json_object()));
}

/* Each node object of `arr` gains "vendors": the vendors of its cards, in name order. */
static int add_vendors(store_tx *tx, json_t *arr, const char *only, gp_err *err) {
    store_stmt *s;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) json_object_set_new(o, "vendors", json_array());
    int rc = store_query(tx, &s, err,
                         "SELECT DISTINCT " STORE_COLS(NODE_VENDOR_COLUMNS)
                         " FROM gpus g JOIN nodes n"
                         " ON n.id = g.node_id WHERE (? IS NULL OR n.name = ?)"
                         " ORDER BY n.name, g.vendor",
                         "ss", only, only);
    if (rc) return rc;
    size_t at = 0;
    while ((rc = store_step(s, err)) > 0) {
        /* both in name order: walk the nodes along */
        while (at < json_array_size(arr) &&
               strcmp(json_string_value(json_object_get(json_array_get(arr, at), "name")),
                      store_text(s, NV_NODE)) < 0)
            at++;
        json_t *n = json_array_get(arr, at);
        if (n && !strcmp(json_string_value(json_object_get(n, "name")), store_text(s, NV_NODE)))
            json_array_append_new(json_object_get(n, "vendors"),
                                  json_string(store_text(s, NV_VENDOR)));
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

int inv_node_list(store_tx *tx, const health_policy *pol, json_t *nodes, json_t **items,
                  gp_err *err) {
    (void)pol;
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " NODE_COLS " FROM nodes n ORDER BY n.name", "");
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0)
        if (name_in(nodes, store_text(s, NC_NAME))) json_array_append_new(arr, node_json(s));
    store_done(s);
    if (rc >= 0) rc = add_vendors(tx, arr, NULL, err);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int inv_node_get(store_tx *tx, const health_policy *pol, const char *name, json_t **out,
                 gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " NODE_COLS " FROM nodes n WHERE n.name = ?", "s",
                         name);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *o = rc > 0 ? node_json(s) : NULL;
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "not found");
    if (rc < 0) return rc;
    json_t *gpus;
    if ((rc = inv_gpu_list(tx, pol, NULL, name, NULL, &gpus, err))) {
        json_decref(o);
        return rc;
    }
    json_object_set_new(o, "gpus", gpus);
    json_t *one = json_array();
    json_array_append(one, o);
    rc = add_vendors(tx, one, name, err);
    json_decref(one);
    if (rc < 0) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return GP_OK;
}

/* A health event as inv_history reads it (STORE_COLS). */
#define EVENT_COLUMNS(X)                                                                  \
    X(EV_AT, "at")                                                                        \
    X(EV_NODE, "node")                                                                    \
    X(EV_GPU, "gpu_uuid")                                                                 \
    X(EV_KIND, "kind")                                                                    \
    X(EV_FROM, "from_state")                                                              \
    X(EV_TO, "to_state")                                                                  \
    X(EV_CAUSE, "cause")                                                                  \
    X(EV_ACTOR, "actor")
enum { EVENT_COLUMNS(STORE_COL_ENUM) EV__N };

int inv_history(store_tx *tx, const char *node, const char *uuid, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(EVENT_COLUMNS)
                         " FROM health_events WHERE (? IS NULL OR node = ?)"
                         " AND (? IS NULL OR gpu_uuid = ?) ORDER BY at DESC, id LIMIT 1000",
                         "ssss", node, node, uuid, uuid);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0)
        json_array_append_new(
            arr, json_pack("{s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "at",
                           jx_time(store_int(s, EV_AT)), "node", store_text(s, EV_NODE), "gpu",
                           store_text(s, EV_GPU), "kind", store_text(s, EV_KIND), "from",
                           store_text(s, EV_FROM), "to", store_text(s, EV_TO), "cause",
                           store_text(s, EV_CAUSE), "actor", store_text(s, EV_ACTOR)));
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

/*
 * What a tenant may see of an alarm's detail: the bindings of its own work
 * (offender and affected), never another tenant's.
 */
static json_t *detail_for(json_t *detail, const char *tenant) {
    json_t *out = json_deep_copy(detail);
    json_t *off = json_object_get(out, "offender");
    const char *ot = json_string_value(json_object_get(off, "tenant"));
    if (off && (!ot || strcmp(ot, tenant))) json_object_del(out, "offender");
    json_t *aff = json_object_get(out, "affected");
    if (json_is_array(aff)) {
        json_t *mine = json_array();
        size_t i;
        json_t *a;
        json_array_foreach(aff, i, a) {
            const char *at = json_string_value(json_object_get(a, "tenant"));
            if (at && !strcmp(at, tenant)) json_array_append(mine, a);
        }
        json_object_set_new(out, "affected", mine);
    }
    return out;
}

/* An alarm's row as inv_alarm_list reads it (STORE_COLS). */
#define ALARM_COLUMNS(X)                                                                  \
    X(AL_ID, "id")                                                                        \
    X(AL_AT, "at")                                                                        \
    X(AL_SEVERITY, "severity")                                                            \
    X(AL_KIND, "kind")                                                                    \
    X(AL_NODE, "node")                                                                    \
    X(AL_GPU, "gpu_uuid")                                                                 \
    X(AL_MESSAGE, "message")                                                              \
    X(AL_TENANTS, "tenants")                                                              \
    X(AL_ACKED_BY, "COALESCE(acked_by, '')")                                              \
    X(AL_ACKED_AT, "COALESCE(acked_at, 0)")                                               \
    X(AL_DETAIL, "detail")                                                                \
    X(AL_RESOLVED_AT, "COALESCE(resolved_at, 0)")                                         \
    X(AL_RESOLUTION, "resolution")
enum { ALARM_COLUMNS(STORE_COL_ENUM) AL__N };

int inv_alarm_list(store_tx *tx, const char *tenant, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(ALARM_COLUMNS) " FROM alarms"
                         " ORDER BY at DESC, id LIMIT 1000",
                         "");
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        json_t *tenants = json_loads(store_text(s, AL_TENANTS), 0, NULL);
        if (!tenants) tenants = json_array();
        if (tenant && !name_in(tenants, tenant)) {
            json_decref(tenants);
            continue;
        }
        json_t *o = json_pack("{s:s,s:o,s:s,s:s,s:s,s:s,s:s}", "id", store_text(s, AL_ID), "at",
                              jx_time(store_int(s, AL_AT)), "severity",
                              store_text(s, AL_SEVERITY), "kind", store_text(s, AL_KIND), "node",
                              store_text(s, AL_NODE), "gpu", store_text(s, AL_GPU), "message",
                              store_text(s, AL_MESSAGE));
        /* tenants only see that it concerns them, not which other tenants it concerns */
        if (!tenant) json_object_set_new(o, "tenants", tenants);
        else json_decref(tenants);
        json_t *detail = json_loads(store_text(s, AL_DETAIL), 0, NULL);
        if (json_is_object(detail) && json_object_size(detail))
            json_object_set_new(o, "detail", tenant ? detail_for(detail, tenant) : json_incref(detail));
        json_decref(detail);
        if (store_int(s, AL_ACKED_AT)) {
            json_object_set_new(o, "acked_by", json_string(store_text(s, AL_ACKED_BY)));
            json_object_set_new(o, "acked_at", jx_time(store_int(s, AL_ACKED_AT)));
        }
        if (store_int(s, AL_RESOLVED_AT)) {
            json_object_set_new(o, "resolved_at", jx_time(store_int(s, AL_RESOLVED_AT)));
            json_object_set_new(o, "resolution", json_string(store_text(s, AL_RESOLUTION)));
        }
        /* open until its condition clears (resolved) or a person acknowledges it */
        json_object_set_new(o, "state", json_string(store_int(s, AL_RESOLVED_AT) ? "resolved"
                                                    : store_int(s, AL_ACKED_AT)  ? "acknowledged"
                                                                                 : "open"));
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

int inv_alarm_ack(store_tx *tx, const char *id, const char *actor, gp_err *err) {
    int changes = 0;
    int rc = store_exec(tx, &changes, err,
                        "UPDATE alarms SET acked_by = ?, acked_at = ? WHERE id = ?"
                        " AND acked_at IS NULL",
                        "sis", actor, gt_now_us(), id);
    if (rc || changes) return rc;
    store_stmt *s;
    if ((rc = store_query(tx, &s, err, "SELECT " COUNT_COLS " FROM alarms WHERE id = ?", "s", id)))
        return rc;
    rc = store_step(s, err);
    int64_t exists = rc > 0 ? store_int(s, CN_COUNT) : 0;
    store_done(s);
    if (rc < 0) return rc;
    return exists ? gp_err_set(err, GP_ECONFLICT, "alarm already acknowledged")
                  : gp_err_set(err, GP_ENOTFOUND, "alarm not found");
}

/* The stored health policy (STORE_COLS). */
#define POLICY_COLUMNS(X) X(PO_VALUE, "value")
enum { POLICY_COLUMNS(STORE_COL_ENUM) PO__N };

int inv_health_policy_load(store_tx *tx, health_policy *out, gp_err *err) {
    store_stmt *s;
    health_policy_default(out);
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(POLICY_COLUMNS)
                         " FROM security_policy WHERE key = 'health_policy'",
                         "");
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *j = rc > 0 && store_text(s, PO_VALUE)[0]
                    ? json_loads(store_text(s, PO_VALUE), 0, NULL)
                    : NULL;
    store_done(s);
    if (rc < 0) {
        json_decref(j);
        return rc;
    }
    if (j) {
        health_policy p;
        if (health_policy_parse(j, &p, NULL) == GP_OK) *out = p;
        json_decref(j);
    }
    return GP_OK;
}

int inv_health_policy_save(store_tx *tx, const health_policy *p, gp_err *err) {
    json_t *j = health_policy_json(p);
    char *text = jx_dump(j);
    json_decref(j);
    int rc = store_exec(tx, NULL, err,
                        "INSERT INTO security_policy (key, value) VALUES ('health_policy', ?)"
                        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        "s", text ? text : "{}");
    free(text);
    return rc;
}
