/*
 * audit_int.h - internals shared by src/audit/ files only: the rows the audit log and its
 * signer read back, each SELECT list declared once (STORE_COLS, issue 40).
 */
#ifndef GP_AUDIT_INT_H
#define GP_AUDIT_INT_H

#include "../store/store.h"

/* A record of the audit table, in the order audit_append writes it (AUDIT_INSERT_COLS). */
#define AUDIT_COLUMNS(X)                                                                  \
    X(AU_SEQ, "seq")                                                                      \
    X(AU_ID, "id")                                                                        \
    X(AU_TS, "ts_us")                                                                     \
    X(AU_REQUEST_ID, "request_id")                                                        \
    X(AU_ACTOR, "actor")                                                                  \
    X(AU_ON_BEHALF, "on_behalf")                                                          \
    X(AU_SOURCE, "source")                                                                \
    X(AU_ACTION, "action")                                                                \
    X(AU_TARGET_TYPE, "target_type")                                                      \
    X(AU_TARGET_ID, "target_id")                                                          \
    X(AU_TENANT, "tenant")                                                                \
    X(AU_PROJECT, "project")                                                              \
    X(AU_RESULT, "result")                                                                \
    X(AU_STATUS, "status")                                                                \
    X(AU_SUMMARY, "summary")                                                              \
    X(AU_PREV_HASH, "prev_hash")                                                          \
    X(AU_HASH, "hash")
enum { AUDIT_COLUMNS(STORE_COL_ENUM) AU__N };

/* A row of audit_checkpoints. */
#define CHECKPOINT_COLUMNS(X)                                                             \
    X(CK_SEQ, "seq")                                                                      \
    X(CK_HEAD, "head")                                                                    \
    X(CK_COUNT, "count")                                                                  \
    X(CK_AT, "at")                                                                        \
    X(CK_KEY_ID, "key_id")                                                                \
    X(CK_SIGNATURE, "signature")
enum { CHECKPOINT_COLUMNS(STORE_COL_ENUM) CK__N };

/* The chain's head (audit_head, its one row id = 1). */
#define HEAD_COLUMNS(X) X(AH_SEQ, "seq") X(AH_HASH, "hash")
enum { HEAD_COLUMNS(STORE_COL_ENUM) AH__N };

#endif
