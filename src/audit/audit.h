/*
 * audit.h - the tamper-evident audit trail.
 *
 * Every state-changing request, and every denied attempt, appends one event
 * in the same store transaction as the change it records.  Events form a
 * hash chain: each record's hash is BLAKE2b-256 over its own fields and the
 * previous record's hash, and a one-row head (audit_head) keeps the last
 * sequence number and hash, so editing, deleting, inserting, reordering or
 * truncating rows is detected by audit_verify().
 *
 * The chain alone is unkeyed, so checkpoints of its head are signed with an
 * Ed25519 key kept outside the store (audit_checkpoint_*, the signer), and
 * audit_verify_signed() checks the chain against them: a rewrite that
 * recomputes every hash, or a deletion of the newest rows, is caught by
 * anyone holding the public key (docs/audit.md).
 *
 * The pure part (audit_record_hash, audit_chain_*, audit_checkpoint_*,
 * audit_checkpoints_prepare) does no I/O and is what the unit tests drive
 * exhaustively; audit_append/list/verify wrap it with store calls, and the
 * signer (signer.c) with key files, the checkpoint file and a thread.
 * Summaries must never contain secrets; callers build them.
 *
 * Invariant: rows are only ever appended, inside a WRITE transaction (which
 * serialises appends, so seq is gap-free and each prev_hash is the head).
 */
#ifndef GP_AUDIT_H
#define GP_AUDIT_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdint.h>

/* What to record.  NULL strings are stored as "". `result` is "ok", "denied" or "error". */
typedef struct audit_event {
    const char *actor;      /* acting identity (user name), "anonymous" or "system" */
    const char *on_behalf;  /* identity acted for, if different */
    const char *source;     /* client address */
    const char *request_id; /* X-Request-Id of the request */
    const char *action;     /* "tenant.create" */
    const char *target_type;
    const char *target_id;
    const char *tenant; /* tenant name the event belongs to, if any */
    const char *project;
    const char *result;
    int status;          /* HTTP status returned, 0 when not an HTTP request */
    const char *summary; /* JSON text describing the change, secrets excluded */
} audit_event;

/* One stored record, as the chain sees it (strings owned by the record's user). */
typedef struct audit_record {
    int64_t seq;
    const char *id;
    int64_t ts_us;
    const char *request_id, *actor, *on_behalf, *source, *action, *target_type, *target_id;
    const char *tenant, *project, *result;
    int64_t status;
    const char *summary;
    const char *prev_hash;
    const char *hash;
} audit_record;

/* Compute a record's hash (hex, 64 chars) from its fields and `prev_hash`. Pure. */
void audit_record_hash(const audit_record *r, const char *prev_hash, char out[RND_HASH_LEN]);

/* ---- signed checkpoints (pure) ---- */

#define AUDIT_KEY_HEX 65  /* an Ed25519 public key (the key_id) in hex, + NUL */
#define AUDIT_SIG_HEX 129 /* an Ed25519 signature in hex, + NUL */

/*
 * A signed statement "the chain held `count` events and its event `seq` had
 * hash `head` at time `at_us`", signed with the audit signing key (Ed25519,
 * kept outside the store) over the canonical text of audit_checkpoint_text().
 * Stored in the audit_checkpoints table and, one JSON line each, in a file.
 */
typedef struct audit_checkpoint {
    int64_t seq;                   /* audit seq of the chain head signed (>= 1) */
    int64_t count;                 /* events in the chain up to it */
    int64_t at_us;                 /* when signed */
    char head[RND_HASH_LEN];       /* hash of event `seq` (hex) */
    char key_id[AUDIT_KEY_HEX];    /* the signing public key (hex) */
    char signature[AUDIT_SIG_HEX]; /* Ed25519 over the canonical text (hex) */
} audit_checkpoint;

/*
 * The canonical signed text, six lines each ending in "\n":
 *   gpupool-audit-checkpoint-v1 / seq N / count N / head HEX / at MICROS / key HEX
 * Writes it NUL-terminated into out (n >= 256 is always enough); returns its length.
 */
size_t audit_checkpoint_text(const audit_checkpoint *cp, char *out, size_t n);

/*
 * Sign `cp` (seq, count, at_us, head set) with the Ed25519 secret key `sk`
 * (crypto_sign_SECRETKEYBYTES): fills key_id and signature.  Pure.
 */
void audit_checkpoint_sign(audit_checkpoint *cp, const unsigned char *sk);

/*
 * Check one checkpoint against the trusted public key (hex): its key_id must
 * be that key and its signature must verify over the canonical text.  Returns
 * 0 when valid, -1 with the reason in why (n bytes) otherwise.  Pure.
 */
int audit_checkpoint_check(const audit_checkpoint *cp, const char *trusted_key_id, char *why,
                           size_t n);

/* {"seq","count","at_us","time","head","key_id","signature"} (new reference). */
json_t *audit_checkpoint_json(const audit_checkpoint *cp);

/* Parse audit_checkpoint_json()'s shape (time is ignored); 0, or -1 when malformed. */
int audit_checkpoint_from_json(const json_t *j, audit_checkpoint *cp);

/*
 * Turn the checkpoints gathered from the table and the file into the set a
 * chain is checked against.  `cps` (n of them, `from_file[i]` 1 for those read
 * from the file; from_file may be NULL) is sorted by seq in place and
 * de-duplicated; *n becomes the count kept.  Checkpoints whose key is not the
 * trusted one, whose signature does not verify, or that contradict another
 * validly signed one for the same seq are dropped, and so is nothing else; a
 * checkpoint present in the file but absent from the table counts as deleted
 * from the table.  Returns 0 when every checkpoint was good, else -1 with the
 * first problem (lowest seq) in *bad_seq and why.  Pure.
 */
int audit_checkpoints_prepare(audit_checkpoint *cps, int *n, const unsigned char *from_file,
                              const char *trusted_key_id, int64_t *bad_seq, char *why,
                              size_t whyn);

/* Incremental verifier state; init with audit_chain_init(). */
typedef struct audit_chain {
    int64_t next_seq;            /* sequence number expected next */
    char prev[RND_HASH_LEN];     /* hash of the last good record ("" at start) */
    int broken;                  /* set at the first bad link */
    int64_t bad_seq;             /* sequence number where the chain first broke */
    char reason[200];            /* what was wrong there */
    /* checkpoints the chain must agree with (audit_chain_expect), sorted by seq */
    const audit_checkpoint *cps;
    int ncps, next_cp;           /* next_cp: the first not yet reached */
    int64_t count;               /* records accepted so far (from the start) */
} audit_chain;

void audit_chain_init(audit_chain *c);

/*
 * Resume verification after a known-good point: the record `seq` had hash
 * `head` (a checkpoint).  The next record fed must be seq + 1.
 */
void audit_chain_resume(audit_chain *c, int64_t seq, const char *head);

/*
 * Also check the chain against signed checkpoints (borrowed; sorted by seq,
 * distinct, signatures already checked: audit_checkpoints_prepare()): the
 * record at each checkpoint's seq must have its hash and count, and the chain
 * must reach the newest one (audit_chain_finish).  Call before feeding.
 */
void audit_chain_expect(audit_chain *c, const audit_checkpoint *cps, int n);

/*
 * Feed the next record in stored order.  Returns 0 while the chain holds,
 * -1 once it is broken (later calls keep returning -1 and change nothing).
 */
int audit_chain_feed(audit_chain *c, const audit_record *r);

/*
 * Check the head row against the chain's end, and that the chain reached
 * every expected checkpoint; returns 0 or -1 (sets reason).
 */
int audit_chain_finish(audit_chain *c, int64_t head_seq, const char *head_hash);

/* Append one event inside `tx` (which must be a WRITE transaction). OUT (optional): id. */
int audit_append(store_tx *tx, const audit_event *ev, char out_id[RND_ID_LEN], gp_err *err);

/* Result of a full verification. */
typedef struct audit_report {
    int ok;
    int64_t checked;            /* records read */
    int64_t bad_seq;            /* first broken record (0 if ok) */
    char reason[200];
    char head_hash[RND_HASH_LEN];
    /* with a trusted key (audit_verify_signed) */
    int signed_checked;         /* 1 when checkpoints were checked */
    int64_t checkpoints;        /* distinct valid checkpoints the chain was checked against */
    int64_t table_checkpoints;  /* rows read from audit_checkpoints */
    int64_t file_checkpoints;   /* lines read from the checkpoint file (-1: no file) */
    int64_t signed_seq;         /* the newest valid checkpoint's seq (0: none) */
    char key_id[AUDIT_KEY_HEX]; /* the trusted key */
} audit_report;

/* Recompute the whole chain and compare with the head. */
int audit_verify(store_t *st, audit_report *out, gp_err *err);

/* What to trust when verifying against signed checkpoints. */
typedef struct audit_trust {
    const char *key_id;          /* the trusted public key, hex (required) */
    const char *checkpoint_file; /* the JSON Lines copy; NULL: the table only */
    int file_required;           /* 1: a missing file is an error (0: read it if it exists) */
} audit_trust;

/*
 * audit_verify(), and check the chain against every signed checkpoint in the
 * table and in the file (audit_checkpoints_prepare, audit_chain_expect).
 * `t` NULL (or t->key_id NULL) is plain audit_verify().  A file that exists
 * but cannot be read, or a line that is not a checkpoint, is an error (err),
 * except for a last line without its newline (a write cut short), which is
 * ignored.
 */
int audit_verify_signed(store_t *st, const audit_trust *t, audit_report *out, gp_err *err);

/*
 * The report as GET /api/v1/audit/verify answers it: {"ok","checked","head_hash"},
 * "first_bad_seq" and "reason" when broken, and with checkpoints checked
 * "checkpoints": {"key_id","checked","table","file" (null: no file),"signed_seq"}.
 */
json_t *audit_report_json(const audit_report *rep);

/* ---- signing (I/O: key files, the checkpoint file, the store) ---- */

/*
 * Load the Ed25519 signing key from `path` (one line: the 32-byte seed in
 * hex), or create it when it does not exist and `create` is set (mode 0600,
 * written whole and linked into place, so a crash never leaves half a key and
 * a concurrent creator's key wins).  A key file readable by group or others is refused.  OUT: sk
 * (crypto_sign_SECRETKEYBYTES, wipe it after use), key_id, *created.
 */
int audit_key_load(const char *path, int create, unsigned char *sk, char key_id[AUDIT_KEY_HEX],
                   int *created, gp_err *err);

/* Read a public key file (64 hex chars, surrounding white space allowed). OUT: key_id. */
int audit_pubkey_read(const char *path, char key_id[AUDIT_KEY_HEX], gp_err *err);

/* Write key_id + "\n" to `path` (mode 0644, replaced atomically). */
int audit_pubkey_write(const char *path, const char key_id[AUDIT_KEY_HEX], gp_err *err);

/*
 * List stored checkpoints in ascending seq order, seq > after_seq, at most
 * limit (1..1000).  OUT: *items (new array), *next_seq (cursor, 0 when no more).
 */
int audit_checkpoint_list(store_tx *tx, int64_t after_seq, int limit, json_t **items,
                          int64_t *next_seq, gp_err *err);

/* The background signer of a server (one per process). */
typedef struct audit_signer audit_signer;

typedef struct audit_signer_config {
    const char *key_path;  /* the secret key file (created 0600 when missing) */
    const char *pub_path;  /* write the public key here (NULL: do not) */
    const char *file_path; /* append checkpoints here, one fsync'd JSON line each (NULL: none) */
    int interval_s;        /* sign at least every interval_s while the chain grows (>= 1) */
    int every_events;      /* and as soon as this many events are unsigned (0: no bound) */
    int lead_timeout_s;    /* for store_lead(): only the leading server signs */
} audit_signer_config;

/*
 * Load (or create) the key, write the public key file, learn the newest
 * checkpoint already signed (table and file), and start the thread that
 * signs.  The store is borrowed and must outlive the signer.
 */
int audit_signer_start(store_t *st, const audit_signer_config *cfg, audit_signer **out,
                       int *key_created, gp_err *err);

/* The signer's public key, hex. */
const char *audit_signer_key_id(const audit_signer *s);

/*
 * Sign the chain head now if it moved past the last checkpoint, and this
 * server leads.  The head is signed only when the records since the last
 * checkpoint extend it (verified incrementally); otherwise nothing is signed
 * and GP_ETAMPERED comes back (the chain was rewritten behind the server).
 * OUT (optional): *made 1 when a checkpoint was written.
 */
int audit_signer_checkpoint(audit_signer *s, int *made, gp_err *err);

/* Stop the thread, sign a last checkpoint (clean shutdown), wipe the key, free. NULL: no-op. */
void audit_signer_stop(audit_signer *s);

/* Filters for audit_list(); NULL/0 fields do not filter. */
typedef struct audit_filter {
    const char *tenant; /* only events of this tenant name */
    const char *action; /* exact action, or prefix ending in '.' ("tenant.") */
    const char *result;
    const char *actor;   /* acting user name */
    const char *target;  /* target id */
    const char *project; /* project name */
    int64_t since_us;    /* events at or after (0: no bound) */
    int64_t until_us;    /* events before (0: no bound) */
    int64_t after_seq; /* cursor: events with seq > after_seq */
    int limit;         /* 1..1000, default 100 */
} audit_filter;

/*
 * List events in ascending seq order.  OUT: *items (new JSON array reference),
 * *next_seq (seq to pass as after_seq for the next page, 0 when no more).
 */
int audit_list(store_tx *tx, const audit_filter *f, json_t **items, int64_t *next_seq,
               gp_err *err);

#endif
