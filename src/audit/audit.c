/*
 * audit.c - hash-chained audit events: hashing, verification, append, list.
 *
 * Hash input: the previous hash, then every field as <8-byte little-endian
 * length><bytes>, numbers written in decimal.  Length prefixes make the
 * encoding unambiguous, so moving bytes between fields changes the hash.
 */
#include "audit.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

static void h_field(crypto_generichash_state *h, const char *s) {
    unsigned char len[8];
    uint64_t n = s ? strlen(s) : 0;
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
    crypto_generichash_update(h, len, 8);
    if (n) crypto_generichash_update(h, (const unsigned char *)s, n);
}

static void h_int(crypto_generichash_state *h, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    h_field(h, buf);
}

void audit_record_hash(const audit_record *r, const char *prev_hash, char out[RND_HASH_LEN]) {
    crypto_generichash_state h;
    unsigned char d[32];
    crypto_generichash_init(&h, NULL, 0, sizeof d);
    h_field(&h, "gpupool-audit-v1");
    h_field(&h, prev_hash);
    h_int(&h, r->seq);
    h_field(&h, r->id);
    h_int(&h, r->ts_us);
    h_field(&h, r->request_id);
    h_field(&h, r->actor);
    h_field(&h, r->on_behalf);
    h_field(&h, r->source);
    h_field(&h, r->action);
    h_field(&h, r->target_type);
    h_field(&h, r->target_id);
    h_field(&h, r->tenant);
    h_field(&h, r->project);
    h_field(&h, r->result);
    h_int(&h, r->status);
    h_field(&h, r->summary);
    crypto_generichash_final(&h, d, sizeof d);
    sodium_bin2hex(out, RND_HASH_LEN, d, sizeof d);
}

void audit_chain_init(audit_chain *c) {
    memset(c, 0, sizeof *c);
    c->next_seq = 1;
}

static int chain_break(audit_chain *c, int64_t seq, const char *why) {
    c->broken = 1;
    c->bad_seq = seq;
    snprintf(c->reason, sizeof c->reason, "%s", why);
    return -1;
}

int audit_chain_feed(audit_chain *c, const audit_record *r) {
    char want[RND_HASH_LEN];
    if (c->broken) return -1;
    if (r->seq != c->next_seq) {
        char why[160];
        if (r->seq > c->next_seq)
            snprintf(why, sizeof why, "record %" PRId64 " is missing (deleted)", c->next_seq);
        else
            snprintf(why, sizeof why, "record %" PRId64 " is out of order", r->seq);
        return chain_break(c, c->next_seq, why);
    }
    if (strcmp(r->prev_hash ? r->prev_hash : "", c->prev) != 0)
        return chain_break(c, r->seq,
                           "previous-hash link does not match (record inserted, removed or "
                           "reordered)");
    audit_record_hash(r, c->prev, want);
    if (!r->hash || !rnd_equal_ct(want, r->hash))
        return chain_break(c, r->seq, "record content does not match its hash (modified)");
    memcpy(c->prev, want, RND_HASH_LEN);
    c->next_seq++;
    return 0;
}

int audit_chain_finish(audit_chain *c, int64_t head_seq, const char *head_hash) {
    if (c->broken) return -1;
    if (head_seq != c->next_seq - 1 || strcmp(head_hash ? head_hash : "", c->prev) != 0)
        return chain_break(c, c->next_seq,
                           "chain head does not match the last record (records removed from "
                           "the end, or head altered)");
    return 0;
}

#define AUDIT_COLS                                                                          \
    "seq, id, ts_us, request_id, actor, on_behalf, source, action, target_type, target_id, " \
    "tenant, project, result, status, summary, prev_hash, hash"

static void record_from_row(store_stmt *s, audit_record *r) {
    r->seq = store_int(s, 0);
    r->id = store_text(s, 1);
    r->ts_us = store_int(s, 2);
    r->request_id = store_text(s, 3);
    r->actor = store_text(s, 4);
    r->on_behalf = store_text(s, 5);
    r->source = store_text(s, 6);
    r->action = store_text(s, 7);
    r->target_type = store_text(s, 8);
    r->target_id = store_text(s, 9);
    r->tenant = store_text(s, 10);
    r->project = store_text(s, 11);
    r->result = store_text(s, 12);
    r->status = store_int(s, 13);
    r->summary = store_text(s, 14);
    r->prev_hash = store_text(s, 15);
    r->hash = store_text(s, 16);
}

#define S(x) ((x) ? (x) : "")

int audit_append(store_tx *tx, const audit_event *ev, char out_id[RND_ID_LEN], gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT seq, hash FROM audit_head WHERE id = 1", "");
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc <= 0) {
        store_done(s);
        return rc < 0 ? rc : gp_err_set(err, GP_ESTORE, "audit head row is missing");
    }
    int64_t seq = store_int(s, 0) + 1;
    char prev[RND_HASH_LEN];
    snprintf(prev, sizeof prev, "%s", S(store_text(s, 1)));
    store_done(s);

    char id[RND_ID_LEN], hash[RND_HASH_LEN];
    rnd_id(id);
    audit_record r = {
        .seq = seq, .id = id, .ts_us = gt_now_us(), .request_id = S(ev->request_id),
        .actor = S(ev->actor), .on_behalf = S(ev->on_behalf), .source = S(ev->source),
        .action = S(ev->action), .target_type = S(ev->target_type),
        .target_id = S(ev->target_id), .tenant = S(ev->tenant), .project = S(ev->project),
        .result = S(ev->result), .status = ev->status,
        .summary = ev->summary ? ev->summary : "{}", .prev_hash = prev,
    };
    audit_record_hash(&r, prev, hash);
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO audit (" AUDIT_COLS ") VALUES "
                    "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    "isissssssssssisss", r.seq, r.id, r.ts_us, r.request_id, r.actor,
                    r.on_behalf, r.source, r.action, r.target_type, r.target_id, r.tenant,
                    r.project, r.result, r.status, r.summary, prev, hash);
    if (rc) return rc;
    rc = store_exec(tx, NULL, err, "UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1", "is",
                    seq, hash);
    if (rc) return rc;
    if (out_id) memcpy(out_id, id, RND_ID_LEN);
    return GP_OK;
}

int audit_verify(store_t *st, audit_report *out, gp_err *err) {
    store_tx *tx;
    store_stmt *s;
    audit_chain c;
    memset(out, 0, sizeof *out);
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    audit_chain_init(&c);
    rc = store_query(tx, &s, err, "SELECT " AUDIT_COLS " FROM audit ORDER BY seq", "");
    if (rc) goto done;
    while ((rc = store_step(s, err)) > 0) {
        audit_record r;
        record_from_row(s, &r);
        out->checked++;
        if (audit_chain_feed(&c, &r) < 0) break;
    }
    store_done(s);
    if (rc < 0) goto done;
    rc = store_query(tx, &s, err, "SELECT seq, hash FROM audit_head WHERE id = 1", "");
    if (rc) goto done;
    rc = store_step(s, err);
    if (rc > 0) audit_chain_finish(&c, store_int(s, 0), store_text(s, 1));
    else if (rc == 0 && !c.broken) {
        c.broken = 1;
        c.bad_seq = c.next_seq;
        snprintf(c.reason, sizeof c.reason, "chain head row is missing");
    }
    store_done(s);
    if (rc < 0) goto done;
    rc = GP_OK;
    out->ok = !c.broken;
    out->bad_seq = c.broken ? c.bad_seq : 0;
    snprintf(out->reason, sizeof out->reason, "%s", c.broken ? c.reason : "");
    memcpy(out->head_hash, c.prev, RND_HASH_LEN);
done:
    store_rollback(tx);
    return rc;
}

static json_t *record_json(const audit_record *r) {
    char ts[GT_RFC3339_LEN];
    gt_format_us(r->ts_us, ts, sizeof ts);
    json_t *summary = json_loads(S(r->summary), JSON_DECODE_ANY, NULL);
    if (!summary) summary = json_string(S(r->summary));
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s},s:s,s:s,s:s,s:I,s:o,s:s,s:s}",
                     "seq", (json_int_t)r->seq, "id", S(r->id), "time", ts, "request_id",
                     S(r->request_id), "actor", S(r->actor), "on_behalf", S(r->on_behalf),
                     "source", S(r->source), "action", S(r->action), "target", "type",
                     S(r->target_type), "id", S(r->target_id), "tenant", S(r->tenant), "project",
                     S(r->project), "result", S(r->result), "status", (json_int_t)r->status,
                     "summary", summary, "prev_hash", S(r->prev_hash), "hash", S(r->hash));
}

int audit_list(store_tx *tx, const audit_filter *f, json_t **items, int64_t *next_seq,
               gp_err *err) {
    int limit = f->limit > 0 && f->limit <= 1000 ? f->limit : 100;
    char like[80] = "";
    const char *act = f->action;
    int prefix = act && *act && act[strlen(act) - 1] == '.';
    if (act && strlen(act) > 60) return gp_err_set(err, GP_EINVALID, "action filter too long");
    if (prefix) snprintf(like, sizeof like, "%s", act);
    store_stmt *s;
    /* fixed SQL; every filter is a bound value, unused ones bind NULL */
    int rc = store_query(
        tx, &s, err,
        "SELECT " AUDIT_COLS " FROM audit WHERE seq > ?"
        " AND (? IS NULL OR tenant = ?)"
        " AND (? IS NULL OR action = ?)"
        " AND (? IS NULL OR substr(action, 1, length(?)) = ?)"
        " AND (? IS NULL OR result = ?)"
        " AND (? IS NULL OR actor = ?)"
        " AND (? IS NULL OR target_id = ?)"
        " AND (? IS NULL OR project = ?)"
        " AND (? = 0 OR ts_us >= ?)"
        " AND (? = 0 OR ts_us < ?)"
        " ORDER BY seq LIMIT ?",
        "isssssssssssssssiiiii", f->after_seq, f->tenant, f->tenant, prefix ? NULL : act,
        prefix ? NULL : act, prefix ? like : NULL, prefix ? like : NULL, prefix ? like : NULL,
        f->result, f->result, f->actor, f->actor, f->target, f->target, f->project, f->project,
        f->since_us, f->since_us, f->until_us, f->until_us, (int64_t)limit + 1);
    if (rc) return rc;
    json_t *arr = json_array();
    int n = 0;
    int64_t last = 0;
    *next_seq = 0;
    while ((rc = store_step(s, err)) > 0) {
        audit_record r;
        record_from_row(s, &r);
        if (n == limit) {
            *next_seq = last;
            break;
        }
        json_array_append_new(arr, record_json(&r));
        last = r.seq;
        n++;
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}
