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
 * The pure part (audit_record_hash, audit_chain_*) does no I/O and is what
 * the unit tests drive exhaustively; audit_append/list/verify wrap it with
 * store calls.  Summaries must never contain secrets; callers build them.
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

/* Incremental verifier state; init with audit_chain_init(). */
typedef struct audit_chain {
    int64_t next_seq;            /* sequence number expected next */
    char prev[RND_HASH_LEN];     /* hash of the last good record ("" at start) */
    int broken;                  /* set at the first bad link */
    int64_t bad_seq;             /* sequence number where the chain first broke */
    char reason[160];            /* what was wrong there */
} audit_chain;

void audit_chain_init(audit_chain *c);

/*
 * Feed the next record in stored order.  Returns 0 while the chain holds,
 * -1 once it is broken (later calls keep returning -1 and change nothing).
 */
int audit_chain_feed(audit_chain *c, const audit_record *r);

/* Check the head row against the chain's end; returns 0 or -1 (sets reason). */
int audit_chain_finish(audit_chain *c, int64_t head_seq, const char *head_hash);

/* Append one event inside `tx` (which must be a WRITE transaction). OUT (optional): id. */
int audit_append(store_tx *tx, const audit_event *ev, char out_id[RND_ID_LEN], gp_err *err);

/* Result of a full verification. */
typedef struct audit_report {
    int ok;
    int64_t checked;            /* records read */
    int64_t bad_seq;            /* first broken record (0 if ok) */
    char reason[160];
    char head_hash[RND_HASH_LEN];
} audit_report;

/* Recompute the whole chain and compare with the head. */
int audit_verify(store_t *st, audit_report *out, gp_err *err);

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
