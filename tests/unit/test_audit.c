/*
 * test_audit.c - the audit hash chain: the pure verifier on crafted records,
 * and append/verify/list through a real SQLite store with each kind of
 * tampering done in SQL behind the module's back; signed checkpoints: the
 * pure signature and chain checks with forged signatures, wrong keys,
 * truncated and rewritten-and-rehashed chains, and the signer and
 * audit_verify_signed() on a real store with its checkpoint file.
 */
#include "testutil.h"

#include "../../src/audit/audit.h"

#include <inttypes.h>
#include <sodium.h>
#include <sys/stat.h>

#define NREC 6

typedef struct {
    audit_record r[NREC];
    char ids[NREC][RND_ID_LEN];
    char summaries[NREC][32];
    char prev[NREC][RND_HASH_LEN];
    char hash[NREC][RND_HASH_LEN];
} chain_fixture;

static void build_chain(chain_fixture *f) {
    const char *prev = "";
    for (int i = 0; i < NREC; i++) {
        snprintf(f->ids[i], RND_ID_LEN, "id%d", i);
        snprintf(f->summaries[i], 32, "{\"n\":%d}", i);
        audit_record *r = &f->r[i];
        memset(r, 0, sizeof *r);
        r->seq = i + 1;
        r->id = f->ids[i];
        r->ts_us = 1000 + i;
        r->actor = "alice";
        r->action = "tenant.create";
        r->result = "ok";
        r->status = 201;
        r->summary = f->summaries[i];
        snprintf(f->prev[i], RND_HASH_LEN, "%s", prev);
        r->prev_hash = f->prev[i];
        audit_record_hash(r, prev, f->hash[i]);
        r->hash = f->hash[i];
        prev = f->hash[i];
    }
}

static int run_chain(const audit_record *rs, int n, int64_t head_seq, const char *head_hash,
                     audit_chain *c) {
    audit_chain_init(c);
    for (int i = 0; i < n; i++)
        if (audit_chain_feed(c, &rs[i]) < 0) return -1;
    return audit_chain_finish(c, head_seq, head_hash);
}

static void pure_intact(void **state) {
    (void)state;
    chain_fixture f;
    audit_chain c;
    build_chain(&f);
    assert_int_equal(run_chain(f.r, NREC, NREC, f.hash[NREC - 1], &c), 0);
    assert_false(c.broken);
}

static void pure_each_field_matters(void **state) {
    (void)state;
    chain_fixture f;
    build_chain(&f);
    char h[RND_HASH_LEN];
    audit_record r = f.r[2];
    const char **fields[] = {&r.id, &r.request_id, &r.actor, &r.on_behalf, &r.source,
                             &r.action, &r.target_type, &r.target_id, &r.tenant, &r.project,
                             &r.result, &r.summary};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const char *old = *fields[i];
        *fields[i] = "changed";
        audit_record_hash(&r, f.prev[2], h);
        assert_string_not_equal(h, f.hash[2]);
        *fields[i] = old;
    }
    r.ts_us++;
    audit_record_hash(&r, f.prev[2], h);
    assert_string_not_equal(h, f.hash[2]);
    r.ts_us--;
    r.status = 200;
    audit_record_hash(&r, f.prev[2], h);
    assert_string_not_equal(h, f.hash[2]);
    r.status = 201;
    /* moving bytes between adjacent fields changes the hash (length prefixes) */
    r.actor = "alicet";
    r.action = "enant.create";
    audit_record_hash(&r, f.prev[2], h);
    assert_string_not_equal(h, f.hash[2]);
}

static void pure_tampering(void **state) {
    (void)state;
    chain_fixture f;
    audit_chain c;
    audit_record rs[NREC];

    /* modified */
    build_chain(&f);
    memcpy(rs, f.r, sizeof rs);
    rs[3].summary = "{\"n\":99}";
    assert_int_equal(run_chain(rs, NREC, NREC, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, 4);
    assert_non_null(strstr(c.reason, "modified"));

    /* deleted from the middle */
    memcpy(rs, f.r, sizeof rs);
    memmove(&rs[2], &rs[3], sizeof rs[0] * (NREC - 3));
    assert_int_equal(run_chain(rs, NREC - 1, NREC, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, 3);
    assert_non_null(strstr(c.reason, "missing"));

    /* deleted and renumbered to hide the gap */
    for (int i = 2; i < NREC - 1; i++) rs[i].seq = i + 1;
    assert_int_equal(run_chain(rs, NREC - 1, NREC - 1, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, 3);

    /* two rows swapped (contents exchanged, seq kept) */
    memcpy(rs, f.r, sizeof rs);
    audit_record tmp = rs[1];
    rs[1] = rs[2];
    rs[2] = tmp;
    rs[1].seq = 2;
    rs[2].seq = 3;
    assert_int_equal(run_chain(rs, NREC, NREC, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, 2);

    /* out of order */
    memcpy(rs, f.r, sizeof rs);
    tmp = rs[1];
    rs[1] = rs[2];
    rs[2] = tmp;
    assert_int_equal(run_chain(rs, NREC, NREC, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, 2);

    /* truncated at the end: records fine, head disagrees */
    assert_int_equal(run_chain(f.r, NREC - 1, NREC, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, NREC);
    assert_non_null(strstr(c.reason, "head"));

    /* a forged record whose own hash is right but whose link is not */
    memcpy(rs, f.r, sizeof rs);
    static char forged[RND_HASH_LEN];
    rs[4].prev_hash = f.hash[0];
    audit_record_hash(&rs[4], f.hash[0], forged);
    rs[4].hash = forged;
    assert_int_equal(run_chain(rs, NREC, NREC, f.hash[NREC - 1], &c), -1);
    assert_int_equal(c.bad_seq, 5);

    /* once broken, stays broken */
    assert_int_equal(audit_chain_feed(&c, &f.r[0]), -1);
    assert_int_equal(c.bad_seq, 5);
}

/* ---- store-backed ---- */

typedef struct {
    char *dir;
    store_t *st;
} db_fixture;

static int db_setup(void **state) {
    db_fixture *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp();
    f->st = tu_store(f->dir, 2);
    gp_err err = GP_ERR_INIT;
    for (int i = 0; i < 5; i++) {
        store_tx *tx;
        char summary[32], target[16];
        snprintf(summary, sizeof summary, "{\"i\":%d}", i);
        snprintf(target, sizeof target, "t%d", i);
        assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
        audit_event ev = {.actor = "admin", .action = i % 2 ? "tenant.create" : "project.create",
                          .target_type = "tenant", .target_id = target,
                          .tenant = i < 3 ? "research" : "vision", .result = i == 4 ? "denied" : "ok",
                          .status = 201, .summary = summary};
        char id[RND_ID_LEN];
        assert_int_equal(audit_append(tx, &ev, id, &err), GP_OK);
        assert_int_equal(strlen(id), 32);
        assert_int_equal(store_commit(tx, &err), GP_OK);
    }
    *state = f;
    return 0;
}

static int db_teardown(void **state) {
    db_fixture *f = *state;
    store_close(f->st);
    tu_rmdir(f->dir);
    free(f);
    return 0;
}

static void tamper(db_fixture *f, const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
    int rc = store_exec(tx, NULL, &err, sql, "");
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

static audit_report verify(db_fixture *f) {
    audit_report rep;
    gp_err err = GP_ERR_INIT;
    assert_int_equal(audit_verify(f->st, &rep, &err), GP_OK);
    return rep;
}

static void db_intact(void **state) {
    db_fixture *f = *state;
    audit_report rep = verify(f);
    assert_true(rep.ok);
    assert_int_equal(rep.checked, 5);
    assert_int_equal(strlen(rep.head_hash), 64);
}

static void db_edit(void **state) {
    db_fixture *f = *state;
    tamper(f, "UPDATE audit SET actor = 'mallory' WHERE seq = 3");
    audit_report rep = verify(f);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 3);
}

static void db_delete(void **state) {
    db_fixture *f = *state;
    tamper(f, "DELETE FROM audit WHERE seq = 2");
    audit_report rep = verify(f);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 2);
}

static void db_swap(void **state) {
    db_fixture *f = *state;
    tamper(f, "UPDATE audit SET seq = -1 WHERE seq = 2;");
    tamper(f, "UPDATE audit SET seq = 2 WHERE seq = 3;");
    tamper(f, "UPDATE audit SET seq = 3 WHERE seq = -1;");
    audit_report rep = verify(f);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 2);
}

static void db_truncate(void **state) {
    db_fixture *f = *state;
    tamper(f, "DELETE FROM audit WHERE seq = 5");
    audit_report rep = verify(f);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 5);
}

static void db_truncate_and_fix_head(void **state) {
    /* an attacker who also rewinds the head to the previous row's hash is not
     * caught by the chain alone; here the head's hash is rewound but not the
     * seq, so it is caught */
    db_fixture *f = *state;
    tamper(f, "UPDATE audit_head SET hash = (SELECT hash FROM audit WHERE seq = 4)");
    audit_report rep = verify(f);
    assert_false(rep.ok);
}

static void db_list_filters(void **state) {
    db_fixture *f = *state;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    json_t *items;
    int64_t next;
    assert_int_equal(store_begin(f->st, STORE_READ, &tx, &err), GP_OK);
    audit_filter all = {0};
    assert_int_equal(audit_list(tx, &all, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 5);
    assert_int_equal(next, 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "seq")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(items, 0),
                                                                        "summary"), "i")), 0);
    json_decref(items);

    audit_filter page = {.limit = 2};
    assert_int_equal(audit_list(tx, &page, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 2);
    assert_int_equal(next, 2);
    json_decref(items);
    page.after_seq = next;
    assert_int_equal(audit_list(tx, &page, &items, &next, &err), GP_OK);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(items, 0), "seq")), 3);
    json_decref(items);

    audit_filter t = {.tenant = "vision"};
    assert_int_equal(audit_list(tx, &t, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 2);
    json_decref(items);

    audit_filter a = {.action = "tenant.create"};
    assert_int_equal(audit_list(tx, &a, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 2);
    json_decref(items);

    audit_filter prefix = {.action = "project."};
    assert_int_equal(audit_list(tx, &prefix, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 3);
    json_decref(items);

    audit_filter notprefix = {.action = "project"};
    assert_int_equal(audit_list(tx, &notprefix, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);

    audit_filter denied = {.result = "denied"};
    assert_int_equal(audit_list(tx, &denied, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 1);
    json_decref(items);

    /* a filter value is data, never SQL */
    audit_filter inj = {.tenant = "x' OR '1'='1"};
    assert_int_equal(audit_list(tx, &inj, &items, &next, &err), GP_OK);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
    store_rollback(tx);
}

/* ---- signed checkpoints: pure ---- */

typedef struct {
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    char key_id[AUDIT_KEY_HEX];
} test_key;

static void make_key(test_key *k, unsigned char seed_byte) {
    unsigned char seed[crypto_sign_SEEDBYTES], pk[crypto_sign_PUBLICKEYBYTES];
    memset(seed, seed_byte, sizeof seed);
    crypto_sign_seed_keypair(pk, k->sk, seed);
    sodium_bin2hex(k->key_id, sizeof k->key_id, pk, sizeof pk);
}

static audit_checkpoint make_cp(const test_key *k, int64_t seq, const char *head) {
    audit_checkpoint cp;
    memset(&cp, 0, sizeof cp);
    cp.seq = seq;
    cp.count = seq;
    cp.at_us = 1700000000000000 + seq;
    snprintf(cp.head, sizeof cp.head, "%s", head);
    audit_checkpoint_sign(&cp, k->sk);
    return cp;
}

static void cp_text_is_canonical(void **state) {
    (void)state;
    audit_checkpoint cp;
    memset(&cp, 0, sizeof cp);
    cp.seq = 42;
    cp.count = 42;
    cp.at_us = 1234567;
    memset(cp.head, 'a', 64);
    memset(cp.key_id, 'b', 64);
    char text[512], want[512];
    size_t n = audit_checkpoint_text(&cp, text, sizeof text);
    snprintf(want, sizeof want,
             "gpupool-audit-checkpoint-v1\nseq 42\ncount 42\nhead %s\nat 1234567\nkey %s\n",
             cp.head, cp.key_id);
    assert_string_equal(text, want);
    assert_int_equal(n, strlen(want));
}

static void cp_signatures(void **state) {
    (void)state;
    test_key a, b;
    make_key(&a, 1);
    make_key(&b, 2);
    chain_fixture f;
    build_chain(&f);
    char why[200];
    audit_checkpoint cp = make_cp(&a, 3, f.hash[2]);
    assert_string_equal(cp.key_id, a.key_id);
    assert_int_equal(strlen(cp.signature), 128);
    assert_int_equal(audit_checkpoint_check(&cp, a.key_id, why, sizeof why), 0);

    /* signed by another key: refused even though its own signature verifies */
    audit_checkpoint other = make_cp(&b, 3, f.hash[2]);
    assert_int_equal(audit_checkpoint_check(&other, a.key_id, why, sizeof why), -1);
    assert_non_null(strstr(why, "another key"));
    /* ... and claiming the trusted key_id does not help: the signature is b's */
    snprintf(other.key_id, sizeof other.key_id, "%s", a.key_id);
    assert_int_equal(audit_checkpoint_check(&other, a.key_id, why, sizeof why), -1);
    assert_non_null(strstr(why, "does not verify"));

    /* a forged signature: one hex digit changed */
    audit_checkpoint forged = cp;
    forged.signature[10] = forged.signature[10] == '0' ? '1' : '0';
    assert_int_equal(audit_checkpoint_check(&forged, a.key_id, why, sizeof why), -1);
    assert_non_null(strstr(why, "does not verify"));
    /* not hex, too short */
    forged = cp;
    forged.signature[0] = 'z';
    assert_int_equal(audit_checkpoint_check(&forged, a.key_id, why, sizeof why), -1);
    forged = cp;
    forged.signature[100] = '\0';
    assert_int_equal(audit_checkpoint_check(&forged, a.key_id, why, sizeof why), -1);

    /* every signed field matters */
    audit_checkpoint m = cp;
    m.seq++;
    assert_int_equal(audit_checkpoint_check(&m, a.key_id, why, sizeof why), -1);
    m = cp;
    m.count++;
    assert_int_equal(audit_checkpoint_check(&m, a.key_id, why, sizeof why), -1);
    m = cp;
    m.at_us++;
    assert_int_equal(audit_checkpoint_check(&m, a.key_id, why, sizeof why), -1);
    m = cp;
    snprintf(m.head, sizeof m.head, "%s", f.hash[3]);
    assert_int_equal(audit_checkpoint_check(&m, a.key_id, why, sizeof why), -1);

    /* no usable trusted key */
    assert_int_equal(audit_checkpoint_check(&cp, "nothex", why, sizeof why), -1);
    assert_int_equal(audit_checkpoint_check(&cp, NULL, why, sizeof why), -1);

    /* JSON round trip keeps it valid */
    json_t *j = audit_checkpoint_json(&cp);
    audit_checkpoint back;
    assert_int_equal(audit_checkpoint_from_json(j, &back), 0);
    assert_int_equal(audit_checkpoint_check(&back, a.key_id, why, sizeof why), 0);
    json_object_set_new(j, "seq", json_string("3"));
    assert_int_equal(audit_checkpoint_from_json(j, &back), -1);
    json_decref(j);
}

static void cp_prepare(void **state) {
    (void)state;
    test_key a, b;
    make_key(&a, 1);
    make_key(&b, 2);
    chain_fixture f;
    build_chain(&f);
    char why[200];
    int64_t bad;

    /* table rows and their file copies, out of order: de-duplicated and sorted */
    audit_checkpoint v[8] = {make_cp(&a, 6, f.hash[5]), make_cp(&a, 2, f.hash[1]),
                             make_cp(&a, 4, f.hash[3])};
    v[3] = v[1];
    v[4] = v[0];
    unsigned char file[8] = {0, 0, 0, 1, 1};
    int n = 5;
    assert_int_equal(audit_checkpoints_prepare(v, &n, file, a.key_id, &bad, why, sizeof why), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].seq, 2);
    assert_int_equal(v[1].seq, 4);
    assert_int_equal(v[2].seq, 6);

    /* a forged one and a foreign one are dropped and reported (lowest seq first) */
    audit_checkpoint w[4] = {make_cp(&a, 2, f.hash[1]), make_cp(&a, 4, f.hash[3]),
                             make_cp(&b, 5, f.hash[4])};
    w[1].count = 99; /* altered after signing */
    n = 3;
    assert_int_equal(audit_checkpoints_prepare(w, &n, NULL, a.key_id, &bad, why, sizeof why), -1);
    assert_int_equal(n, 1);
    assert_int_equal(w[0].seq, 2);
    assert_int_equal(bad, 4);
    assert_non_null(strstr(why, "does not verify"));

    /* two validly signed checkpoints disagreeing on one seq */
    audit_checkpoint x[2] = {make_cp(&a, 3, f.hash[2]), make_cp(&a, 3, f.hash[3])};
    n = 2;
    assert_int_equal(audit_checkpoints_prepare(x, &n, NULL, a.key_id, &bad, why, sizeof why), -1);
    assert_int_equal(n, 0);
    assert_int_equal(bad, 3);
    assert_non_null(strstr(why, "two different"));

    /* in the file but not in the table: deleted from the table (kept for the chain check) */
    audit_checkpoint y[3] = {make_cp(&a, 2, f.hash[1]), make_cp(&a, 5, f.hash[4])};
    y[2] = y[0];
    unsigned char yf[3] = {1, 1, 0};
    n = 3;
    assert_int_equal(audit_checkpoints_prepare(y, &n, yf, a.key_id, &bad, why, sizeof why), -1);
    assert_int_equal(n, 2);
    assert_int_equal(bad, 5);
    assert_non_null(strstr(why, "not in the store"));

    /* nothing at all is fine */
    n = 0;
    assert_int_equal(audit_checkpoints_prepare(y, &n, NULL, a.key_id, &bad, why, sizeof why), 0);
}

/* Rewrite record `seq` (index seq-1) of f and rehash every record from it, as a DBA would. */
static void rewrite_and_rehash(chain_fixture *f, int seq) {
    f->r[seq - 1].summary = "{\"n\":\"rewritten\"}";
    for (int i = seq - 1; i < NREC; i++) {
        const char *prev = i ? f->hash[i - 1] : "";
        snprintf(f->prev[i], RND_HASH_LEN, "%s", prev);
        audit_record_hash(&f->r[i], prev, f->hash[i]);
    }
}

static int run_signed(const chain_fixture *f, int n, int64_t head_seq, const char *head,
                      const audit_checkpoint *cps, int ncps, audit_chain *c) {
    audit_chain_init(c);
    audit_chain_expect(c, cps, ncps);
    for (int i = 0; i < n; i++)
        if (audit_chain_feed(c, &f->r[i]) < 0) return -1;
    return audit_chain_finish(c, head_seq, head);
}

static void cp_chain(void **state) {
    (void)state;
    test_key a;
    make_key(&a, 1);
    chain_fixture f;
    audit_chain c;
    build_chain(&f);
    audit_checkpoint cps[2] = {make_cp(&a, 3, f.hash[2]), make_cp(&a, 5, f.hash[4])};

    /* intact: agrees with both */
    assert_int_equal(run_signed(&f, NREC, NREC, f.hash[NREC - 1], cps, 2, &c), 0);
    assert_int_equal(c.next_cp, 2);

    /* rewritten and rehashed from record 2: the chain alone holds ... */
    chain_fixture g = f;
    for (int i = 0; i < NREC; i++) {
        g.r[i].prev_hash = g.prev[i];
        g.r[i].hash = g.hash[i];
    }
    rewrite_and_rehash(&g, 2);
    assert_int_equal(run_chain(g.r, NREC, NREC, g.hash[NREC - 1], &c), 0);
    /* ... but not against the checkpoint at 3 */
    assert_int_equal(run_signed(&g, NREC, NREC, g.hash[NREC - 1], cps, 2, &c), -1);
    assert_int_equal(c.bad_seq, 3);
    assert_non_null(strstr(c.reason, "rewritten"));
    /* rewritten after the last checkpoint: not detectable (the unsigned tail) */
    g = f;
    for (int i = 0; i < NREC; i++) {
        g.r[i].prev_hash = g.prev[i];
        g.r[i].hash = g.hash[i];
    }
    rewrite_and_rehash(&g, 6);
    assert_int_equal(run_signed(&g, NREC, NREC, g.hash[NREC - 1], cps, 2, &c), 0);

    /* truncated, head rewound to match: caught by the newest checkpoint */
    assert_int_equal(run_chain(f.r, 4, 4, f.hash[3], &c), 0);
    assert_int_equal(run_signed(&f, 4, 4, f.hash[3], cps, 2, &c), -1);
    assert_int_equal(c.bad_seq, 5);
    assert_non_null(strstr(c.reason, "deleted"));

    /* a checkpoint whose count disagrees with the chain */
    audit_checkpoint odd = cps[0];
    odd.count = 2;
    assert_int_equal(run_signed(&f, NREC, NREC, f.hash[NREC - 1], &odd, 1, &c), -1);
    assert_int_equal(c.bad_seq, 3);

    /* a chain edited without rehashing is reported at the record itself */
    chain_fixture h = f;
    h.r[1].summary = "{\"n\":\"edited\"}";
    assert_int_equal(run_signed(&h, NREC, NREC, f.hash[NREC - 1], cps, 2, &c), -1);
    assert_int_equal(c.bad_seq, 2);
    assert_non_null(strstr(c.reason, "modified"));

    /* resume after a checkpoint: records 4.. must extend it */
    audit_chain_resume(&c, 3, f.hash[2]);
    audit_chain_expect(&c, cps, 2);
    for (int i = 3; i < NREC; i++) assert_int_equal(audit_chain_feed(&c, &f.r[i]), 0);
    assert_int_equal(audit_chain_finish(&c, NREC, f.hash[NREC - 1]), 0);
    audit_chain_resume(&c, 3, f.hash[1]); /* a rewritten past does not extend it */
    assert_int_equal(audit_chain_feed(&c, &f.r[3]), -1);
    assert_int_equal(c.bad_seq, 4);
}

/* ---- signed checkpoints: the signer and verify on a real store ---- */

static void append_events(db_fixture *f, int n) {
    gp_err err = GP_ERR_INIT;
    for (int i = 0; i < n; i++) {
        store_tx *tx;
        assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
        audit_event ev = {.actor = "admin", .action = "tenant.update", .target_type = "tenant",
                          .target_id = "x", .result = "ok", .status = 200, .summary = "{}"};
        assert_int_equal(audit_append(tx, &ev, NULL, &err), GP_OK);
        assert_int_equal(store_commit(tx, &err), GP_OK);
    }
}

/* Rewrite event `seq`'s actor and recompute every later hash and the head, in C. */
static void db_rewrite_and_rehash(db_fixture *f, int64_t seq) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err, "UPDATE audit SET actor = 'mallory' WHERE seq = ?",
                                "i", seq),
                     GP_OK);
    char prev[RND_HASH_LEN] = "";
    assert_int_equal(store_query(tx, &s, &err,
                                 "SELECT seq, id, ts_us, request_id, actor, on_behalf, source, "
                                 "action, target_type, target_id, tenant, project, result, "
                                 "status, summary FROM audit ORDER BY seq",
                                 ""),
                     GP_OK);
    int64_t seqs[64];
    char hashes[64][RND_HASH_LEN], prevs[64][RND_HASH_LEN];
    int n = 0;
    while (store_step(s, &err) > 0 && n < 64) {
        audit_record r = {
            .seq = store_int(s, 0), .id = store_text(s, 1), .ts_us = store_int(s, 2),
            .request_id = store_text(s, 3), .actor = store_text(s, 4),
            .on_behalf = store_text(s, 5), .source = store_text(s, 6),
            .action = store_text(s, 7), .target_type = store_text(s, 8),
            .target_id = store_text(s, 9), .tenant = store_text(s, 10),
            .project = store_text(s, 11), .result = store_text(s, 12),
            .status = store_int(s, 13), .summary = store_text(s, 14),
        };
        seqs[n] = r.seq;
        snprintf(prevs[n], RND_HASH_LEN, "%s", prev);
        audit_record_hash(&r, prev, hashes[n]);
        memcpy(prev, hashes[n], RND_HASH_LEN);
        n++;
    }
    store_done(s);
    for (int i = 0; i < n; i++)
        assert_int_equal(store_exec(tx, NULL, &err,
                                    "UPDATE audit SET prev_hash = ?, hash = ? WHERE seq = ?",
                                    "ssi", prevs[i], hashes[i], seqs[i]),
                         GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err, "UPDATE audit_head SET seq = ?, hash = ?", "is",
                                seqs[n - 1], hashes[n - 1]),
                     GP_OK);
    assert_int_equal(store_commit(tx, &err), GP_OK);
}

typedef struct {
    char key[4096], pub[4096], file[4096];
} signer_paths;

static audit_signer *start_signer(db_fixture *f, signer_paths *p) {
    snprintf(p->key, sizeof p->key, "%s/audit-signing.key", f->dir);
    snprintf(p->pub, sizeof p->pub, "%s/audit-signing.pub", f->dir);
    snprintf(p->file, sizeof p->file, "%s/audit-checkpoints.jsonl", f->dir);
    audit_signer_config cfg = {p->key, p->pub, p->file, 3600, 0, 10};
    audit_signer *s;
    gp_err err = GP_ERR_INIT;
    int created = 0;
    int rc = audit_signer_start(f->st, &cfg, &s, &created, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    return s;
}

static audit_report verify_signed(db_fixture *f, const char *key_id, const char *file) {
    audit_report rep;
    gp_err err = GP_ERR_INIT;
    audit_trust t = {key_id, file, 0};
    int rc = audit_verify_signed(f->st, &t, &rep, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    return rep;
}

static int64_t count_rows(db_fixture *f, const char *sql) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    store_stmt *s;
    assert_int_equal(store_begin(f->st, STORE_READ, &tx, &err), GP_OK);
    assert_int_equal(store_query(tx, &s, &err, sql, ""), GP_OK);
    assert_int_equal(store_step(s, &err), 1);
    int64_t v = store_int(s, 0);
    store_done(s);
    store_rollback(tx);
    return v;
}

static int count_lines(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    int n = 0, ch;
    while ((ch = fgetc(fp)) != EOF) n += ch == '\n';
    fclose(fp);
    return n;
}

static void signer_signs_and_verify_checks(void **state) {
    db_fixture *f = *state;
    signer_paths p;
    gp_err err = GP_ERR_INIT;
    audit_signer *s = start_signer(f, &p);
    char key_id[AUDIT_KEY_HEX];
    snprintf(key_id, sizeof key_id, "%s", audit_signer_key_id(s));
    /* the key is private; the public key file says the key_id */
    struct stat sb;
    assert_int_equal(stat(p.key, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char pub[AUDIT_KEY_HEX];
    assert_int_equal(audit_pubkey_read(p.pub, pub, &err), GP_OK);
    assert_string_equal(pub, key_id);

    int made = 0;
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK);
    assert_int_equal(made, 1);
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK);
    assert_int_equal(made, 0); /* nothing new to sign */
    append_events(f, 3);
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK);
    assert_int_equal(made, 1);
    assert_int_equal(count_rows(f, "SELECT COUNT(*) FROM audit_checkpoints"), 2);
    assert_int_equal(count_rows(f, "SELECT MAX(seq) FROM audit_checkpoints"), 8);
    assert_int_equal(count_lines(p.file), 2);

    audit_report rep = verify_signed(f, key_id, p.file);
    assert_true(rep.ok);
    assert_int_equal(rep.checkpoints, 2);
    assert_int_equal(rep.table_checkpoints, 2);
    assert_int_equal(rep.file_checkpoints, 2);
    assert_int_equal(rep.signed_seq, 8);

    /* checked with another key: every checkpoint is foreign */
    test_key other;
    make_key(&other, 7);
    rep = verify_signed(f, other.key_id, p.file);
    assert_false(rep.ok);
    assert_non_null(strstr(rep.reason, "another key"));

    /* a checkpoint row whose signature was forged in the table */
    tamper(f, "UPDATE audit_checkpoints SET signature = replace(signature, substr(signature, 1, "
              "1), CASE substr(signature, 1, 1) WHEN '0' THEN '1' ELSE '0' END) WHERE seq = 5");
    rep = verify_signed(f, key_id, NULL);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 5);
    assert_non_null(strstr(rep.reason, "does not verify"));
    audit_signer_stop(s);
}

static void signer_rewritten_chain(void **state) {
    db_fixture *f = *state;
    signer_paths p;
    gp_err err = GP_ERR_INIT;
    audit_signer *s = start_signer(f, &p);
    char key_id[AUDIT_KEY_HEX];
    snprintf(key_id, sizeof key_id, "%s", audit_signer_key_id(s));
    int made = 0;
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK);
    append_events(f, 2);

    /* a DBA rewrites event 2 and recomputes every hash and the head */
    db_rewrite_and_rehash(f, 2);
    audit_report plain = verify(f);
    assert_true(plain.ok); /* the unkeyed chain alone is fooled */
    audit_report rep = verify_signed(f, key_id, p.file);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 5);
    assert_non_null(strstr(rep.reason, "rewritten"));
    /* and the signer refuses to bless the rewritten chain */
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_ETAMPERED);
    assert_int_equal(made, 0);
    assert_int_equal(count_rows(f, "SELECT COUNT(*) FROM audit_checkpoints"), 1);
    audit_signer_stop(s);
    assert_int_equal(count_rows(f, "SELECT COUNT(*) FROM audit_checkpoints"), 1);
}

static void signer_deleted_newest(void **state) {
    db_fixture *f = *state;
    signer_paths p;
    gp_err err = GP_ERR_INIT;
    audit_signer *s = start_signer(f, &p);
    char key_id[AUDIT_KEY_HEX];
    snprintf(key_id, sizeof key_id, "%s", audit_signer_key_id(s));
    int made = 0;
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK); /* at 5 */
    append_events(f, 3);
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK); /* at 8 */
    audit_signer_stop(s);

    /* the newest events and their checkpoint go, the head is rewound to match */
    tamper(f, "DELETE FROM audit WHERE seq > 6");
    tamper(f, "DELETE FROM audit_checkpoints WHERE seq > 6");
    tamper(f, "UPDATE audit_head SET seq = 6, hash = (SELECT hash FROM audit WHERE seq = 6)");
    assert_true(verify(f).ok);                     /* the chain alone: fooled */
    assert_true(verify_signed(f, key_id, NULL).ok); /* the table alone: fooled too */
    audit_report rep = verify_signed(f, key_id, p.file);
    assert_false(rep.ok);
    assert_int_equal(rep.bad_seq, 7);
    assert_non_null(strstr(rep.reason, "deleted"));
    assert_int_equal(rep.signed_seq, 8);

    /* a server restarted on it refuses to sign the shortened chain */
    s = start_signer(f, &p);
    append_events(f, 5);
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_ETAMPERED);
    audit_signer_stop(s);
}

static void checkpoint_file_lines(void **state) {
    db_fixture *f = *state;
    signer_paths p;
    gp_err err = GP_ERR_INIT;
    audit_signer *s = start_signer(f, &p);
    char key_id[AUDIT_KEY_HEX];
    snprintf(key_id, sizeof key_id, "%s", audit_signer_key_id(s));
    int made = 0;
    assert_int_equal(audit_signer_checkpoint(s, &made, &err), GP_OK);
    audit_signer_stop(s);
    /* a last line cut short by a crash is ignored */
    FILE *fp = fopen(p.file, "a");
    fputs("{\"seq\":9,\"cou", fp);
    fclose(fp);
    audit_report rep = verify_signed(f, key_id, p.file);
    assert_true(rep.ok);
    assert_int_equal(rep.file_checkpoints, 1);
    /* a complete line that is not a checkpoint is a finding */
    fp = fopen(p.file, "a");
    fputs("\nnot json\n", fp);
    fclose(fp);
    rep = verify_signed(f, key_id, p.file);
    assert_false(rep.ok);
    assert_non_null(strstr(rep.reason, "not a checkpoint"));
    /* a required file that is missing is an error */
    audit_trust t = {key_id, "/nonexistent/cp.jsonl", 1};
    assert_int_not_equal(audit_verify_signed(f->st, &t, &rep, &err), GP_OK);
}

static void key_files(void **state) {
    db_fixture *f = *state;
    gp_err err = GP_ERR_INIT;
    char path[4096], id1[AUDIT_KEY_HEX], id2[AUDIT_KEY_HEX];
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    int created = 0;
    snprintf(path, sizeof path, "%s/k.key", f->dir);
    assert_int_not_equal(audit_key_load(path, 0, sk, id1, &created, &err), GP_OK);
    assert_int_equal(audit_key_load(path, 1, sk, id1, &created, &err), GP_OK);
    assert_int_equal(created, 1);
    assert_int_equal(audit_key_load(path, 1, sk, id2, &created, &err), GP_OK);
    assert_int_equal(created, 0);
    assert_string_equal(id1, id2);
    chmod(path, 0644);
    assert_int_equal(audit_key_load(path, 1, sk, id2, &created, &err), GP_EINVALID);
    assert_non_null(strstr(err.msg, "readable by others"));
    /* public key files */
    snprintf(path, sizeof path, "%s/k.pub", f->dir);
    assert_int_equal(audit_pubkey_write(path, id1, &err), GP_OK);
    assert_int_equal(audit_pubkey_read(path, id2, &err), GP_OK);
    assert_string_equal(id1, id2);
    FILE *fp = fopen(path, "w");
    fputs("0123abc\n", fp);
    fclose(fp);
    assert_int_equal(audit_pubkey_read(path, id2, &err), GP_EINVALID);
    sodium_memzero(sk, sizeof sk);
}

int main(void) {
    assert_int_equal(rnd_init(), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pure_intact),
        cmocka_unit_test(pure_each_field_matters),
        cmocka_unit_test(pure_tampering),
        cmocka_unit_test_setup_teardown(db_intact, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(db_edit, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(db_delete, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(db_swap, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(db_truncate, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(db_truncate_and_fix_head, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(db_list_filters, db_setup, db_teardown),
        cmocka_unit_test(cp_text_is_canonical),
        cmocka_unit_test(cp_signatures),
        cmocka_unit_test(cp_prepare),
        cmocka_unit_test(cp_chain),
        cmocka_unit_test_setup_teardown(signer_signs_and_verify_checks, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(signer_rewritten_chain, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(signer_deleted_newest, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(checkpoint_file_lines, db_setup, db_teardown),
        cmocka_unit_test_setup_teardown(key_files, db_setup, db_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
