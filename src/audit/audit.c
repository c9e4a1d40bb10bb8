/*
 * audit.c - hash-chained audit events: hashing, verification, append, list.
 *
 * Hash input: the previous hash, then every field as <8-byte little-endian
 * length><bytes>, numbers written in decimal.  Length prefixes make the
 * encoding unambiguous, so moving bytes between fields changes the hash.
 */
#include "audit.h"
#include "audit_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
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

void audit_chain_resume(audit_chain *c, int64_t seq, const char *head) {
    audit_chain_init(c);
    c->next_seq = seq + 1;
    c->count = seq; /* the chain is gap-free from 1 */
    snprintf(c->prev, sizeof c->prev, "%s", head ? head : "");
}

void audit_chain_expect(audit_chain *c, const audit_checkpoint *cps, int n) {
    c->cps = cps;
    c->ncps = n;
    c->next_cp = 0;
    /* checkpoints before a resume point were checked when they were reached */
    while (c->next_cp < n && cps[c->next_cp].seq < c->next_seq) c->next_cp++;
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
    c->count++;
    for (; c->next_cp < c->ncps && c->cps[c->next_cp].seq == r->seq; c->next_cp++) {
        const audit_checkpoint *cp = &c->cps[c->next_cp];
        char why[200];
        if (strcmp(cp->head, want) != 0 || cp->count != c->count) {
            int64_t after = c->next_cp > 0 ? c->cps[c->next_cp - 1].seq : 0;
            snprintf(why, sizeof why,
                     "record %" PRId64 " does not match the signed checkpoint (history rewritten "
                     "and rehashed between records %" PRId64 " and %" PRId64 ")",
                     r->seq, after + 1, r->seq);
            return chain_break(c, r->seq, why);
        }
    }
    return 0;
}

int audit_chain_finish(audit_chain *c, int64_t head_seq, const char *head_hash) {
    if (c->broken) return -1;
    if (head_seq != c->next_seq - 1 || strcmp(head_hash ? head_hash : "", c->prev) != 0)
        return chain_break(c, c->next_seq,
                           "chain head does not match the last record (records removed from "
                           "the end, or head altered)");
    if (c->next_cp < c->ncps) {
        char why[200];
        snprintf(why, sizeof why,
                 "the chain ends at record %" PRId64 " but record %" PRId64
                 " was signed in a checkpoint (newest records deleted)",
                 c->next_seq - 1, c->cps[c->ncps - 1].seq);
        return chain_break(c, c->next_seq, why);
    }
    return 0;
}

/* ---- signed checkpoints ---- */

size_t audit_checkpoint_text(const audit_checkpoint *cp, char *out, size_t n) {
    int len = snprintf(out, n,
                       "gpupool-audit-checkpoint-v1\nseq %" PRId64 "\ncount %" PRId64
                       "\nhead %s\nat %" PRId64 "\nkey %s\n",
                       cp->seq, cp->count, cp->head, cp->at_us, cp->key_id);
    if (len < 0) return 0;
    return (size_t)len < n ? (size_t)len : n - 1;
}

void audit_checkpoint_sign(audit_checkpoint *cp, const unsigned char *sk) {
    unsigned char pk[crypto_sign_PUBLICKEYBYTES], sig[crypto_sign_BYTES];
    char text[512];
    crypto_sign_ed25519_sk_to_pk(pk, sk);
    sodium_bin2hex(cp->key_id, sizeof cp->key_id, pk, sizeof pk);
    size_t len = audit_checkpoint_text(cp, text, sizeof text);
    crypto_sign_detached(sig, NULL, (const unsigned char *)text, len, sk);
    sodium_bin2hex(cp->signature, sizeof cp->signature, sig, sizeof sig);
}

/* Decode exactly `n` bytes of lower- or upper-case hex; 0 or -1. */
static int unhex(const char *hex, unsigned char *out, size_t n) {
    size_t got = 0;
    const char *end = NULL;
    if (!hex || strlen(hex) != 2 * n) return -1;
    if (sodium_hex2bin(out, n, hex, 2 * n, NULL, &got, &end) != 0 || got != n || *end) return -1;
    return 0;
}

int audit_checkpoint_check(const audit_checkpoint *cp, const char *trusted_key_id, char *why,
                           size_t n) {
    unsigned char pk[crypto_sign_PUBLICKEYBYTES], sig[crypto_sign_BYTES];
    char text[512];
    if (!trusted_key_id || unhex(trusted_key_id, pk, sizeof pk) != 0) {
        snprintf(why, n, "no valid trusted public key to check checkpoints with");
        return -1;
    }
    if (strcmp(cp->key_id, trusted_key_id) != 0) {
        snprintf(why, n, "checkpoint at record %" PRId64 " is signed by another key (%.16s...)",
                 cp->seq, cp->key_id);
        return -1;
    }
    if (cp->seq < 1 || cp->count < 1 || strlen(cp->head) != RND_HASH_LEN - 1) {
        snprintf(why, n, "checkpoint at record %" PRId64 " is malformed", cp->seq);
        return -1;
    }
    size_t len = audit_checkpoint_text(cp, text, sizeof text);
    if (unhex(cp->signature, sig, sizeof sig) != 0 ||
        crypto_sign_verify_detached(sig, (const unsigned char *)text, len, pk) != 0) {
        snprintf(why, n,
                 "checkpoint at record %" PRId64 " has a signature that does not verify (forged "
                 "or altered)",
                 cp->seq);
        return -1;
    }
    return 0;
}

json_t *audit_checkpoint_json(const audit_checkpoint *cp) {
    char ts[GT_RFC3339_LEN];
    gt_format_us(cp->at_us, ts, sizeof ts);
    return json_pack("{s:I,s:I,s:I,s:s,s:s,s:s,s:s}", "seq", (json_int_t)cp->seq, "count",
                     (json_int_t)cp->count, "at_us", (json_int_t)cp->at_us, "time", ts, "head",
                     cp->head, "key_id", cp->key_id, "signature", cp->signature);
}

static int copy_str(const json_t *j, const char *key, char *out, size_t n) {
    const json_t *v = json_object_get(j, key);
    if (!json_is_string(v) || strlen(json_string_value(v)) >= n) return -1;
    memcpy(out, json_string_value(v), strlen(json_string_value(v)) + 1);
    return 0;
}

int audit_checkpoint_from_json(const json_t *j, audit_checkpoint *cp) {
    memset(cp, 0, sizeof *cp);
    const json_t *seq = json_object_get(j, "seq"), *count = json_object_get(j, "count"),
                 *at = json_object_get(j, "at_us");
    if (!json_is_object(j) || !json_is_integer(seq) || !json_is_integer(count) ||
        !json_is_integer(at))
        return -1;
    cp->seq = json_integer_value(seq);
    cp->count = json_integer_value(count);
    cp->at_us = json_integer_value(at);
    if (copy_str(j, "head", cp->head, sizeof cp->head) ||
        copy_str(j, "key_id", cp->key_id, sizeof cp->key_id) ||
        copy_str(j, "signature", cp->signature, sizeof cp->signature))
        return -1;
    return 0;
}

typedef struct cp_sorted {
    audit_checkpoint cp;
    unsigned char from_file;
    int valid;
} cp_sorted;

static int cp_cmp(const void *a, const void *b) {
    const cp_sorted *x = a, *y = b;
    if (x->cp.seq != y->cp.seq) return x->cp.seq < y->cp.seq ? -1 : 1;
    /* table rows first, so that a file line meets its row */
    return (int)x->from_file - (int)y->from_file;
}

static int same_statement(const audit_checkpoint *a, const audit_checkpoint *b) {
    return a->seq == b->seq && a->count == b->count && a->at_us == b->at_us &&
           !strcmp(a->head, b->head) && !strcmp(a->key_id, b->key_id);
}

int audit_checkpoints_prepare(audit_checkpoint *cps, int *n, const unsigned char *from_file,
                              const char *trusted_key_id, int64_t *bad_seq, char *why,
                              size_t whyn) {
    int total = *n, kept = 0, bad = 0;
    *bad_seq = 0;
    if (whyn) why[0] = '\0';
    if (total <= 0) {
        *n = 0;
        return 0;
    }
    cp_sorted *v = calloc((size_t)total, sizeof *v);
    if (!v) { /* out of memory: keep nothing, and say so */
        *n = 0;
        *bad_seq = 1;
        snprintf(why, whyn, "out of memory checking checkpoints");
        return -1;
    }
    for (int i = 0; i < total; i++) {
        v[i].cp = cps[i];
        v[i].from_file = from_file ? from_file[i] : 0;
    }
    qsort(v, (size_t)total, sizeof *v, cp_cmp);
#define CP_PROBLEM(seq_, ...)                                   \
    do {                                                        \
        if (!bad || (seq_) < *bad_seq) {                        \
            *bad_seq = (seq_);                                  \
            snprintf(why, whyn, __VA_ARGS__);                   \
        }                                                       \
        bad = 1;                                                \
    } while (0)
    char w[200];
    for (int i = 0; i < total; i++) {
        if (audit_checkpoint_check(&v[i].cp, trusted_key_id, w, sizeof w) == 0) v[i].valid = 1;
        else CP_PROBLEM(v[i].cp.seq, "%s", w);
    }
    for (int i = 0; i < total;) {
        int j = i, in_table = 0, in_file = 0, conflict = 0;
        const audit_checkpoint *first = NULL;
        for (; j < total && v[j].cp.seq == v[i].cp.seq; j++) {
            if (v[j].from_file) in_file = 1;
            else in_table = 1;
            if (!v[j].valid) continue;
            if (!first) first = &v[j].cp;
            else if (!same_statement(first, &v[j].cp)) conflict = 1;
        }
        if (conflict)
            CP_PROBLEM(v[i].cp.seq,
                       "two different signed checkpoints for record %" PRId64
                       " (the chain forked, or the key signed a rewritten chain)",
                       v[i].cp.seq);
        else if (first)
            cps[kept++] = *first;
        if (from_file && in_file && !in_table)
            CP_PROBLEM(v[i].cp.seq,
                       "checkpoint at record %" PRId64
                       " is in the checkpoint file but not in the store (deleted from "
                       "audit_checkpoints)",
                       v[i].cp.seq);
        i = j;
    }
#undef CP_PROBLEM
    free(v);
    *n = kept;
    return bad ? -1 : 0;
}

/* What audit_append writes, in AUDIT_COLUMNS' order (an INSERT's list takes no trailing
 * NULL, so it is not STORE_COLS'). */
#define AUDIT_INSERT_COLS                                                                   \
    "seq, id, ts_us, request_id, actor, on_behalf, source, action, target_type, target_id, " \
    "tenant, project, result, status, summary, prev_hash, hash"
#define AUDIT_COLS STORE_COLS(AUDIT_COLUMNS)

static void record_from_row(store_stmt *s, audit_record *r) {
    r->seq = store_int(s, AU_SEQ);
    r->id = store_text(s, AU_ID);
    r->ts_us = store_int(s, AU_TS);
    r->request_id = store_text(s, AU_REQUEST_ID);
    r->actor = store_text(s, AU_ACTOR);
    r->on_behalf = store_text(s, AU_ON_BEHALF);
    r->source = store_text(s, AU_SOURCE);
    r->action = store_text(s, AU_ACTION);
    r->target_type = store_text(s, AU_TARGET_TYPE);
    r->target_id = store_text(s, AU_TARGET_ID);
    r->tenant = store_text(s, AU_TENANT);
    r->project = store_text(s, AU_PROJECT);
    r->result = store_text(s, AU_RESULT);
    r->status = store_int(s, AU_STATUS);
    r->summary = store_text(s, AU_SUMMARY);
    r->prev_hash = store_text(s, AU_PREV_HASH);
    r->hash = store_text(s, AU_HASH);
}

#define S(x) ((x) ? (x) : "")

int audit_append(store_tx *tx, const audit_event *ev, char out_id[RND_ID_LEN], gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HEAD_COLUMNS) " FROM audit_head WHERE id = 1", "");
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc <= 0) {
        store_done(s);
        return rc < 0 ? rc : gp_err_set(err, GP_ESTORE, "audit head row is missing");
    }
    int64_t seq = store_int(s, AH_SEQ) + 1;
    char prev[RND_HASH_LEN];
    snprintf(prev, sizeof prev, "%s", S(store_text(s, AH_HASH)));
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
                    "INSERT INTO audit (" AUDIT_INSERT_COLS ") VALUES "
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

/* A growing array of checkpoints, with where each came from. */
typedef struct cp_vec {
    audit_checkpoint *v;
    unsigned char *from_file;
    int n, cap;
} cp_vec;

static int cp_push(cp_vec *a, const audit_checkpoint *cp, int from_file, gp_err *err) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 64;
        audit_checkpoint *nv = realloc(a->v, sizeof *nv * (size_t)cap);
        if (!nv) return gp_err_set(err, GP_ENOMEM, NULL);
        a->v = nv;
        unsigned char *nf = realloc(a->from_file, (size_t)cap);
        if (!nf) return gp_err_set(err, GP_ENOMEM, NULL);
        a->from_file = nf;
        a->cap = cap;
    }
    a->v[a->n] = *cp;
    a->from_file[a->n] = (unsigned char)from_file;
    a->n++;
    return GP_OK;
}

static void cp_free(cp_vec *a) {
    free(a->v);
    free(a->from_file);
    memset(a, 0, sizeof *a);
}

static void checkpoint_from_row(store_stmt *s, audit_checkpoint *cp) {
    memset(cp, 0, sizeof *cp);
    cp->seq = store_int(s, CK_SEQ);
    snprintf(cp->head, sizeof cp->head, "%s", S(store_text(s, CK_HEAD)));
    cp->count = store_int(s, CK_COUNT);
    cp->at_us = store_int(s, CK_AT);
    snprintf(cp->key_id, sizeof cp->key_id, "%s", S(store_text(s, CK_KEY_ID)));
    snprintf(cp->signature, sizeof cp->signature, "%s", S(store_text(s, CK_SIGNATURE)));
}

#define CP_COLS STORE_COLS(CHECKPOINT_COLUMNS)

/* Append every row of audit_checkpoints to `a`; OUT: *rows. */
static int load_table_checkpoints(store_tx *tx, cp_vec *a, int64_t *rows, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " CP_COLS " FROM audit_checkpoints ORDER BY seq", "");
    if (rc) return rc;
    while ((rc = store_step(s, err)) > 0) {
        audit_checkpoint cp;
        checkpoint_from_row(s, &cp);
        if ((rc = cp_push(a, &cp, 0, err))) break;
        (*rows)++;
    }
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

/*
 * Append the checkpoints of the JSON Lines file at `path` to `a`.  OUT: *lines
 * (-1 when the file does not exist and is not required).  A last line without
 * its newline (a write cut short) is ignored.
 */
static int load_file_checkpoints(const char *path, int required, cp_vec *a, int64_t *lines,
                                 gp_err *err) {
    FILE *f = fopen(path, "r");
    *lines = -1;
    if (!f) {
        if (errno == ENOENT && !required) return GP_OK;
        return gp_err_set(err, GP_EIO, "cannot read checkpoint file %s: %s", path,
                          strerror(errno));
    }
    *lines = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = GP_OK;
    int64_t lineno = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        int complete = line[len - 1] == '\n';
        json_t *j = json_loadb(line, (size_t)len, JSON_DISABLE_EOF_CHECK, NULL);
        audit_checkpoint cp;
        int bad = !j || audit_checkpoint_from_json(j, &cp) != 0;
        json_decref(j);
        if (bad) {
            if (!complete) break; /* torn last line */
            if (len == 1) continue; /* an empty line */
            rc = gp_err_set(err, GP_ETAMPERED,
                            "checkpoint file %s: line %" PRId64 " is not a checkpoint", path,
                            lineno);
            break;
        }
        if ((rc = cp_push(a, &cp, 1, err))) break;
        (*lines)++;
    }
    if (!rc && ferror(f))
        rc = gp_err_set(err, GP_EIO, "cannot read checkpoint file %s: %s", path, strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

int audit_verify(store_t *st, audit_report *out, gp_err *err) {
    return audit_verify_signed(st, NULL, out, err);
}

int audit_verify_signed(store_t *st, const audit_trust *t, audit_report *out, gp_err *err) {
    store_tx *tx;
    store_stmt *s;
    audit_chain c;
    cp_vec cps = {0};
    int64_t cp_bad = 0;
    char cp_why[200] = "";
    int signed_check = t && t->key_id;
    memset(out, 0, sizeof *out);
    out->file_checkpoints = -1;
    int rc = store_begin(st, STORE_READ, &tx, err);
    if (rc) return rc;
    audit_chain_init(&c);
    if (signed_check) {
        out->signed_checked = 1;
        snprintf(out->key_id, sizeof out->key_id, "%s", t->key_id);
        if ((rc = load_table_checkpoints(tx, &cps, &out->table_checkpoints, err))) goto done;
        gp_err ferr = GP_ERR_INIT;
        char file_why[200] = "";
        if (t->checkpoint_file &&
            (rc = load_file_checkpoints(t->checkpoint_file, t->file_required, &cps,
                                        &out->file_checkpoints, &ferr))) {
            if (rc != GP_ETAMPERED) {
                if (err) *err = ferr;
                goto done;
            }
            /* a damaged file is a finding, not a failure to verify */
            snprintf(file_why, sizeof file_why, "%.190s", ferr.msg);
            rc = GP_OK;
        }
        int n = cps.n;
        audit_checkpoints_prepare(cps.v, &n, t->checkpoint_file ? cps.from_file : NULL,
                                  t->key_id, &cp_bad, cp_why, sizeof cp_why);
        if (file_why[0]) {
            cp_bad = 0;
            snprintf(cp_why, sizeof cp_why, "%s", file_why);
        }
        cps.n = n;
        out->checkpoints = n;
        out->signed_seq = n ? cps.v[n - 1].seq : 0;
        audit_chain_expect(&c, cps.v, n);
    }
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
    rc = store_query(tx, &s, err,
                     "SELECT " STORE_COLS(HEAD_COLUMNS) " FROM audit_head WHERE id = 1", "");
    if (rc) goto done;
    rc = store_step(s, err);
    if (rc > 0) audit_chain_finish(&c, store_int(s, AH_SEQ), store_text(s, AH_HASH));
    else if (rc == 0 && !c.broken) {
        c.broken = 1;
        c.bad_seq = c.next_seq;
        snprintf(c.reason, sizeof c.reason, "chain head row is missing");
    }
    store_done(s);
    if (rc < 0) goto done;
    rc = GP_OK;
    /* a broken chain is reported first (it names the record); then a bad checkpoint */
    if (!c.broken && cp_why[0]) {
        c.broken = 1;
        c.bad_seq = cp_bad;
        snprintf(c.reason, sizeof c.reason, "%s", cp_why);
    }
    out->ok = !c.broken;
    out->bad_seq = c.broken ? c.bad_seq : 0;
    snprintf(out->reason, sizeof out->reason, "%s", c.broken ? c.reason : "");
    memcpy(out->head_hash, c.prev, RND_HASH_LEN);
done:
    store_rollback(tx);
    cp_free(&cps);
    return rc;
}

json_t *audit_report_json(const audit_report *rep) {
    json_t *o = json_pack("{s:b,s:I,s:s}", "ok", rep->ok, "checked", (json_int_t)rep->checked,
                          "head_hash", rep->head_hash);
    if (!o) return NULL;
    if (!rep->ok) {
        json_object_set_new(o, "first_bad_seq", json_integer(rep->bad_seq));
        json_object_set_new(o, "reason", json_string(rep->reason));
    }
    if (rep->signed_checked)
        json_object_set_new(
            o, "checkpoints",
            json_pack("{s:s,s:I,s:I,s:o,s:I}", "key_id", rep->key_id, "checked",
                      (json_int_t)rep->checkpoints, "table", (json_int_t)rep->table_checkpoints,
                      "file",
                      rep->file_checkpoints >= 0 ? json_integer(rep->file_checkpoints)
                                                 : json_null(),
                      "signed_seq", (json_int_t)rep->signed_seq));
    return o;
}

/*
 * One page of a "seq > after ... ORDER BY seq LIMIT limit + 1" query: the
 * first `limit` rows, each made JSON by row() (which also gives its seq), into
 * *items; *next_seq is the page's last seq when a further row exists, else 0.
 * Reads at most limit + 1 rows of s and finishes it (store_done).  RET: GP_OK, or the
 * store's error (nothing in *items).
 */
static int page_rows(store_stmt *s, int limit, json_t *(*row)(store_stmt *s, int64_t *seq),
                     json_t **items, int64_t *next_seq, gp_err *err) {
    json_t *arr = json_array();
    int n = 0, rc;
    int64_t last = 0;
    *next_seq = 0;
    while ((rc = store_step(s, err)) > 0) {
        if (n == limit) {
            *next_seq = last;
            break;
        }
        json_array_append_new(arr, row(s, &last));
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

static json_t *checkpoint_row_json(store_stmt *s, int64_t *seq) {
    audit_checkpoint cp;
    checkpoint_from_row(s, &cp);
    *seq = cp.seq;
    return audit_checkpoint_json(&cp);
}

int audit_checkpoint_list(store_tx *tx, int64_t after_seq, int limit, json_t **items,
                          int64_t *next_seq, gp_err *err) {
    if (limit < 1 || limit > 1000) limit = 100;
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " CP_COLS " FROM audit_checkpoints WHERE seq > ? ORDER BY seq "
                         "LIMIT ?",
                         "ii", after_seq, (int64_t)limit + 1);
    if (rc) return rc;
    return page_rows(s, limit, checkpoint_row_json, items, next_seq, err);
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

static json_t *record_row_json(store_stmt *s, int64_t *seq) {
    audit_record r;
    record_from_row(s, &r);
    *seq = r.seq;
    return record_json(&r);
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
    return page_rows(s, limit, record_row_json, items, next_seq, err);
}
