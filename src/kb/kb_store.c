/*
 * kb_store.c - knowledge bases, their documents and keyword search: the
 * store side (see kb.h for the model and the per-tenant FTS5 index; the
 * rules a KB's creation and change follow are kb.c's, checked first).
 *
 * Every change here runs inside the caller's write transaction, so a
 * document, its chunk rows and its index rows appear (and disappear)
 * together: a deleted document is gone from the very next query.
 *
 * On PostgreSQL the chunk rows are the index (text, tenant and tsvector in
 * kb_chunks, schema_pg.c migration 10): no FTS5 table is made, looked up or
 * written there, since a failed statement would abort the transaction.
 */
#include "kb.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FTS_NAME_LEN 48

/*
 * PostgreSQL: a chunk's search vector, from its text (a bound parameter,
 * given as the placeholder `P`).  ASCII punctuation becomes blanks first,
 * so the default parser sees words as FTS5's unicode61 tokenizer does (runs
 * of letters and digits: "pump.txt", "/var/log", "a@b.c" and "1.5" are
 * several words, not one file, host, e-mail or number token), and the
 * 'english' configuration stems them (Snowball's English stemmer, porter's
 * successor) and lower-cases them.  The 32 characters of PG_PUNCT map to
 * the 32 blanks of PG_BLANKS; the literal is E'' so its backslash means the
 * same whatever standard_conforming_strings says.
 */
#define PG_PUNCT "E'!\"#$%&''()*+,-./:;<=>?@[\\\\]^_`{|}~'"
#define PG_BLANKS "'                                '"
#define PG_TSV(P) "to_tsvector('english', translate(" P ", " PG_PUNCT ", " PG_BLANKS "))"

static int on_pg(const store_tx *tx) { return !strcmp(store_tx_backend(tx), "postgres"); }

/* The FTS5 table of a tenant ("" / NULL: the ops table). Ids are server-made hex. */
static int fts_name(const char *tenant_id, char out[FTS_NAME_LEN], gp_err *err) {
    if (!tenant_id || !*tenant_id) {
        snprintf(out, FTS_NAME_LEN, "kbfts_ops");
        return GP_OK;
    }
    size_t n = strlen(tenant_id);
    if (n > 32) return gp_err_set(err, GP_EINTERNAL, "bad tenant id");
    for (size_t i = 0; i < n; i++) {
        char c = tenant_id[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return gp_err_set(err, GP_EINTERNAL, "bad tenant id");
    }
    snprintf(out, FTS_NAME_LEN, "kbfts_%s", tenant_id);
    return GP_OK;
}

static int fts_exists(store_tx *tx, const char *table, int *yes, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?", "s",
                         table);
    if (rc) return rc;
    rc = store_step(s, err);
    *yes = rc > 0 && store_int(s, 0) > 0;
    store_done(s);
    return rc < 0 ? rc : GP_OK;
}

static int fts_ensure(store_tx *tx, const char *table, gp_err *err) {
    char sql[160];
    snprintf(sql, sizeof sql,
             "CREATE VIRTUAL TABLE IF NOT EXISTS %s USING fts5(text,"
             " tokenize = 'porter unicode61 remove_diacritics 2')",
             table);
    return store_exec(tx, NULL, err, sql, "");
}

/* Remove the index rows of every chunk of document `doc_id` (or of KB `kb_id` when doc_id is NULL). */
static int fts_forget(store_tx *tx, const char *tenant_id, const char *doc_id, const char *kb_id,
                      gp_err *err) {
    char table[FTS_NAME_LEN], sql[240];
    int yes;
    if (on_pg(tx)) return GP_OK; /* the chunk rows are the index: deleting them is enough */
    int rc = fts_name(tenant_id, table, err);
    if (!rc) rc = fts_exists(tx, table, &yes, err);
    if (rc || !yes) return rc;
    snprintf(sql, sizeof sql,
             "DELETE FROM %s WHERE rowid IN (SELECT id FROM kb_chunks WHERE %s = ?)", table,
             doc_id ? "doc_id" : "kb_id");
    return store_exec(tx, NULL, err, sql, "s", doc_id ? doc_id : kb_id);
}

/* ---- knowledge bases ---- */

int kb_create(store_tx *tx, const char *tenant_id, const char *project_id, json_t *spec,
              const char *created_by, char id[RND_ID_LEN], gp_err *err) {
    kb_new k;
    int rc = kb_new_check(tenant_id, project_id, spec, &k, err);
    if (rc) return rc;
    char *wtext = k.work_orders ? jx_dump(k.work_orders) : strdup("[]");
    if (!wtext) return gp_err_set(err, GP_ENOMEM, NULL);
    rnd_id(id);
    /* PostgreSQL: a taken name must not abort the caller's transaction (it may go on) */
#define KB_INSERT                                                                  \
    "INSERT INTO kbs (id, tenant_id, project_id, scope, name, description,"        \
    " work_orders, created_by, created_at) VALUES (?,?,?,?,?,?,?,?,?)"
    int pg = on_pg(tx), changes = 0;
    rc = store_exec(tx, pg ? &changes : NULL, err,
                    store_sql(tx, KB_INSERT, KB_INSERT " ON CONFLICT DO NOTHING"), "ssssssssi", id,
                    k.tenant_id ? k.tenant_id : "", k.project_id ? k.project_id : "", k.scope,
                    k.name, k.description, wtext, created_by, gt_now_us());
#undef KB_INSERT
    free(wtext);
    if (!rc && pg && !changes) rc = GP_ECONFLICT;
    if (rc == GP_ECONFLICT) return gp_err_set(err, GP_ECONFLICT, "KB '%s' already exists", k.name);
    return rc;
}

/* A KB's row as info_from reads it (STORE_COLS); kb_json reads the longer KB_COLUMNS, which
 * begins with the same. */
#define INFO_COLUMNS(X)                                                                   \
    X(KC_ID, "k.id")                                                                      \
    X(KC_TENANT_ID, "k.tenant_id")                                                        \
    X(KC_PROJECT_ID, "k.project_id")                                                      \
    X(KC_SCOPE, "k.scope")                                                                \
    X(KC_NAME, "k.name")                                                                  \
    X(KC_WORK_ORDERS, "k.work_orders")
#define KB_COLUMNS(X)                                                                     \
    INFO_COLUMNS(X)                                                                       \
    X(KC_DESCRIPTION, "k.description")                                                    \
    X(KC_CREATED_BY, "k.created_by")                                                      \
    X(KC_CREATED, "k.created_at")                                                         \
    X(KC_PROJECT, "COALESCE((SELECT name FROM projects WHERE id = k.project_id), '')")    \
    X(KC_DOCUMENTS, "(SELECT COUNT(*) FROM kb_documents WHERE kb_id = k.id)")             \
    X(KC_CHUNKS, "(SELECT COUNT(*) FROM kb_chunks WHERE kb_id = k.id)")
enum { KB_COLUMNS(STORE_COL_ENUM) KC__N };

static void info_from(store_stmt *s, kb_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "%s", store_text(s, KC_ID));
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", store_text(s, KC_TENANT_ID));
    snprintf(out->project_id, sizeof out->project_id, "%s", store_text(s, KC_PROJECT_ID));
    snprintf(out->scope, sizeof out->scope, "%s", store_text(s, KC_SCOPE));
    snprintf(out->name, sizeof out->name, "%s", store_text(s, KC_NAME));
    out->work_orders = json_loads(store_text(s, KC_WORK_ORDERS), 0, NULL);
    if (!json_is_array(out->work_orders)) {
        json_decref(out->work_orders);
        out->work_orders = json_array();
    }
}

#define INFO_COLS STORE_COLS(INFO_COLUMNS)

int kb_find(store_tx *tx, const char *tenant_id, const char *name, kb_info *out, gp_err *err) {
    store_stmt *s;
    memset(out, 0, sizeof *out);
    int rc = store_query(tx, &s, err,
                         "SELECT " INFO_COLS " FROM kbs k WHERE k.tenant_id = ? AND k.name = ?",
                         "ss", tenant_id ? tenant_id : "", name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) info_from(s, out);
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "KB not found");
    return rc < 0 ? rc : GP_OK;
}

#define JSON_COLS STORE_COLS(KB_COLUMNS)

static json_t *kb_json(store_stmt *s, const kb_info *kb) {
    const char *project = store_text(s, KC_PROJECT);
    return json_pack("{s:s,s:s,s:o,s:s,s:O,s:I,s:I,s:s,s:o}", "name", kb->name, "scope", kb->scope,
                     "project", *project ? json_string(project) : json_null(), "description",
                     store_text(s, KC_DESCRIPTION), "work_orders", kb->work_orders, "documents",
                     (json_int_t)store_int(s, KC_DOCUMENTS), "chunks",
                     (json_int_t)store_int(s, KC_CHUNKS), "created_by",
                     store_text(s, KC_CREATED_BY), "created_at",
                     jx_time(store_int(s, KC_CREATED)));
}

int kb_get_json(store_tx *tx, const kb_info *kb, json_t **out, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT " JSON_COLS " FROM kbs k WHERE k.id = ?", "s",
                         kb->id);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) {
        kb_info now; /* as stored now: the caller's copy may predate an update */
        info_from(s, &now);
        *out = kb_json(s, &now);
        kb_info_release(&now);
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "KB not found");
    return rc < 0 ? rc : GP_OK;
}

int kb_list(store_tx *tx, const char *tenant_id, int (*keep)(void *cls, const kb_info *kb),
            void *cls, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " JSON_COLS " FROM kbs k WHERE k.tenant_id = ? ORDER BY k.name",
                         "s", tenant_id ? tenant_id : "");
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        kb_info kb;
        info_from(s, &kb);
        if (!keep || keep(cls, &kb)) json_array_append_new(arr, kb_json(s, &kb));
        kb_info_release(&kb);
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int kb_update(store_tx *tx, const kb_info *kb, json_t *spec, gp_err *err) {
    kb_change ch;
    int rc = kb_change_check(kb, spec, &ch, err);
    if (rc) return rc;
    char *wtext = ch.work_orders ? jx_dump(ch.work_orders) : NULL;
    if (ch.work_orders && !wtext) return gp_err_set(err, GP_ENOMEM, NULL);
    rc = store_exec(tx, NULL, err,
                    "UPDATE kbs SET description = COALESCE(?, description),"
                    " work_orders = COALESCE(?, work_orders) WHERE id = ?",
                    "sss", ch.description, wtext, kb->id);
    free(wtext);
    return rc;
}

int kb_delete(store_tx *tx, const kb_info *kb, int64_t *docs, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err, "SELECT COUNT(*) FROM kb_documents WHERE kb_id = ?", "s",
                         kb->id);
    if (rc) return rc;
    rc = store_step(s, err);
    *docs = rc > 0 ? store_int(s, 0) : 0;
    store_done(s);
    if (rc < 0) return rc;
    if ((rc = fts_forget(tx, kb->tenant_id, NULL, kb->id, err)) ||
        (rc = store_exec(tx, NULL, err, "DELETE FROM kb_chunks WHERE kb_id = ?", "s", kb->id)) ||
        (rc = store_exec(tx, NULL, err, "DELETE FROM kb_documents WHERE kb_id = ?", "s", kb->id)) ||
        (rc = store_exec(tx, NULL, err, "DELETE FROM kb_app_rag WHERE kb_id = ?", "s", kb->id)))
        return rc;
    return store_exec(tx, NULL, err, "DELETE FROM kbs WHERE id = ?", "s", kb->id);
}

/* ---- documents ---- */

/* A copy of chunk `sp` of `in`'s text (heap, NUL-terminated), or NULL when out of memory. */
static char *chunk_text(const kb_doc_input *in, const kb_span *sp) {
    size_t n = sp->end - sp->start;
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, in->text.buf + sp->start, n);
    t[n] = '\0';
    return t;
}

/* PostgreSQL: the chunks of document `doc_id`, each with its text, tenant and search vector. */
static int doc_chunks_pg(store_tx *tx, const kb_info *kb, const char *doc_id,
                         const kb_doc_input *in, gp_err *err) {
    for (size_t i = 0; i < in->nspans; i++) {
        const kb_span *sp = &in->spans[i];
        char *t = chunk_text(in, sp);
        if (!t) return gp_err_set(err, GP_ENOMEM, NULL);
        int rc = store_exec(tx, NULL, err,
                            "INSERT INTO kb_chunks (doc_id, kb_id, seq, start_char, end_char,"
                            " tenant_id, text, tsv) VALUES (?,?,?,?,?,?,?7," PG_TSV("?7") ")",
                            "ssiiiss", doc_id, kb->id, (int64_t)i, sp->cstart, sp->cend,
                            kb->tenant_id, t);
        free(t);
        if (rc) return rc;
    }
    return GP_OK;
}

int kb_doc_add(store_tx *tx, const kb_info *kb, const kb_doc_input *in, const char *created_by,
               char id[RND_ID_LEN], gp_err *err) {
    char table[FTS_NAME_LEN], sql[160];
    int pg = on_pg(tx);
    int rc = fts_name(kb->tenant_id, table, err); /* also checks the tenant id */
    if (rc) return rc;
    int64_t chars = 0;
    for (size_t i = 0; i < in->text.len; i++)
        if (((unsigned char)in->text.buf[i] & 0xC0) != 0x80) chars++;
    rnd_id(id);
    /* PostgreSQL: a taken name must not abort the caller's transaction (it may go on) */
#define DOC_INSERT                                                                   \
    "INSERT INTO kb_documents (id, kb_id, name, format, bytes, chars, chunks, text,"  \
    " created_by, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
    int changes = 0;
    rc = store_exec(tx, pg ? &changes : NULL, err,
                    store_sql(tx, DOC_INSERT, DOC_INSERT " ON CONFLICT DO NOTHING"), "ssssiiissi",
                    id, kb->id, in->name, in->format, (int64_t)in->bytes, chars,
                    (int64_t)in->nspans, in->text.buf, created_by, gt_now_us());
#undef DOC_INSERT
    if (!rc && pg && !changes) rc = GP_ECONFLICT;
    if (rc == GP_ECONFLICT)
        return gp_err_set(err, GP_ECONFLICT, "document '%s' already exists in KB '%s'", in->name,
                          kb->name);
    if (rc) return rc;
    if (pg) return doc_chunks_pg(tx, kb, id, in, err);
    if ((rc = fts_ensure(tx, table, err))) return rc;
    snprintf(sql, sizeof sql, "INSERT INTO %s (rowid, text) VALUES (last_insert_rowid(), ?)",
             table);
    for (size_t i = 0; i < in->nspans; i++) {
        const kb_span *sp = &in->spans[i];
        rc = store_exec(tx, NULL, err,
                        "INSERT INTO kb_chunks (doc_id, kb_id, seq, start_char, end_char)"
                        " VALUES (?,?,?,?,?)",
                        "ssiii", id, kb->id, (int64_t)i, sp->cstart, sp->cend);
        if (rc) return rc;
        /* the chunk's text, bound as a copy of its slice */
        char *t = chunk_text(in, sp);
        if (!t) return gp_err_set(err, GP_ENOMEM, NULL);
        rc = store_exec(tx, NULL, err, sql, "s", t);
        free(t);
        if (rc) return rc;
    }
    return GP_OK;
}

/* A document's row as doc_json reads it (STORE_COLS); kb_doc_get reads its text too
 * (DOC_TEXT_COLUMNS, the same list and one more). */
#define DOC_COLUMNS(X)                                                                    \
    X(DC_NAME, "d.name")                                                                  \
    X(DC_FORMAT, "d.format")                                                              \
    X(DC_BYTES, "d.bytes")                                                                \
    X(DC_CHARS, "d.chars")                                                                \
    X(DC_CHUNKS, "d.chunks")                                                              \
    X(DC_CREATED_BY, "d.created_by")                                                      \
    X(DC_CREATED, "d.created_at")                                                         \
    X(DC_ID, "d.id")
#define DOC_TEXT_COLUMNS(X) DOC_COLUMNS(X) X(DC_TEXT, "d.text")
enum { DOC_TEXT_COLUMNS(STORE_COL_ENUM) DC__N };
#define DOC_COLS STORE_COLS(DOC_COLUMNS)

/* A chunk's span as kb_doc_get reads it (STORE_COLS). */
#define SPAN_COLUMNS(X) X(SC_SEQ, "seq") X(SC_START, "start_char") X(SC_END, "end_char")
enum { SPAN_COLUMNS(STORE_COL_ENUM) SC__N };

static json_t *doc_json(store_stmt *s) {
    return json_pack("{s:s,s:s,s:I,s:I,s:I,s:s,s:o}", "name", store_text(s, DC_NAME), "format",
                     store_text(s, DC_FORMAT), "bytes", (json_int_t)store_int(s, DC_BYTES),
                     "chars", (json_int_t)store_int(s, DC_CHARS), "chunks",
                     (json_int_t)store_int(s, DC_CHUNKS), "created_by",
                     store_text(s, DC_CREATED_BY), "created_at",
                     jx_time(store_int(s, DC_CREATED)));
}

int kb_doc_list(store_tx *tx, const kb_info *kb, json_t **items, gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " DOC_COLS " FROM kb_documents d WHERE d.kb_id = ? ORDER BY d.name",
                         "s", kb->id);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) json_array_append_new(arr, doc_json(s));
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int kb_doc_get(store_tx *tx, const kb_info *kb, const char *name, int full, json_t **out,
               gp_err *err) {
    store_stmt *s;
    int rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(DOC_TEXT_COLUMNS) " FROM kb_documents d"
                         " WHERE d.kb_id = ? AND d.name = ?",
                         "ss", kb->id, name);
    if (rc) return rc;
    rc = store_step(s, err);
    json_t *d = NULL;
    char id[RND_ID_LEN] = "";
    if (rc > 0) {
        d = doc_json(s);
        json_object_set_new(d, "kb", json_string(kb->name));
        snprintf(id, sizeof id, "%s", store_text(s, DC_ID));
        if (full) json_object_set_new(d, "text", json_string(store_text(s, DC_TEXT)));
    }
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "document not found");
    if (rc < 0) return rc;
    if (full) {
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(SPAN_COLUMNS) " FROM kb_chunks WHERE doc_id = ?"
                         " ORDER BY seq",
                         "s", id);
        if (rc) {
            json_decref(d);
            return rc;
        }
        json_t *chunks = json_array();
        while ((rc = store_step(s, err)) > 0)
            json_array_append_new(chunks, json_pack("{s:I,s:I,s:I}", "chunk",
                                                    (json_int_t)store_int(s, SC_SEQ), "start",
                                                    (json_int_t)store_int(s, SC_START), "end",
                                                    (json_int_t)store_int(s, SC_END)));
        store_done(s);
        json_object_set_new(d, "spans", chunks);
        if (rc < 0) {
            json_decref(d);
            return rc;
        }
    }
    *out = d;
    return GP_OK;
}

int kb_doc_delete(store_tx *tx, const kb_info *kb, const char *name, gp_err *err) {
    store_stmt *s;
    char id[RND_ID_LEN];
    int rc = store_query(tx, &s, err, "SELECT id FROM kb_documents WHERE kb_id = ? AND name = ?",
                         "ss", kb->id, name);
    if (rc) return rc;
    rc = store_step(s, err);
    if (rc > 0) snprintf(id, sizeof id, "%s", store_text(s, 0));
    store_done(s);
    if (rc == 0) return gp_err_set(err, GP_ENOTFOUND, "document not found");
    if (rc < 0) return rc;
    if ((rc = fts_forget(tx, kb->tenant_id, id, NULL, err)) ||
        (rc = store_exec(tx, NULL, err, "DELETE FROM kb_chunks WHERE doc_id = ?", "s", id)))
        return rc;
    return store_exec(tx, NULL, err, "DELETE FROM kb_documents WHERE id = ?", "s", id);
}

/* ---- search ---- */

/* A chunk found, as hit_json reads it (STORE_COLS): TEXT, its text; RANK, its raw score
 * (alias r), a REAL each store ranks its own way: query_pg's ts_rank (higher is better),
 * kb_query's bm25 over the tenant's FTS table, named by "%s" (lower is better). */
#define HIT_COLUMNS_(X, TEXT, RANK)                                                       \
    X(HT_KB, "k.name")                                                                    \
    X(HT_DOCUMENT, "d.name")                                                              \
    X(HT_SEQ, "c.seq")                                                                    \
    X(HT_START, "c.start_char")                                                           \
    X(HT_END, "c.end_char")                                                               \
    X(HT_TEXT, TEXT)                                                                      \
    X(HT_RANK, RANK)
#define HIT_PG_COLUMNS(X) HIT_COLUMNS_(X, "c.text", "ts_rank(c.tsv, q) AS r")
#define HIT_FTS_COLUMNS(X) HIT_COLUMNS_(X, "%s.text", "bm25(%s) AS r")
enum { HIT_PG_COLUMNS(STORE_COL_ENUM) HT__N };

/* One hit of a search, with its score (higher is better). */
static json_t *hit_json(store_stmt *s, double score) {
    return json_pack("{s:s,s:s,s:I,s:I,s:I,s:f,s:s}", "kb", store_text(s, HT_KB), "document",
                     store_text(s, HT_DOCUMENT), "chunk", (json_int_t)store_int(s, HT_SEQ),
                     "start", (json_int_t)store_int(s, HT_START), "end",
                     (json_int_t)store_int(s, HT_END), "score", score, "text",
                     store_text(s, HT_TEXT));
}

/*
 * PostgreSQL (see kb.h): the words of `query` as a bound tsquery text, over
 * the chunks of KBs `kb_ids` that also belong to the caller's tenant ('' for
 * ops), scored with ts_rank, best first, ties in chunk order.  ts_rank, like
 * bm25, sums what each query word adds, with diminishing returns for a word
 * repeated; it has no length normalisation here (chunks are at most
 * KB_CHUNK_CHARS long, and dividing by the log of the length, option 1, let
 * short chunks naming a word once outrank the chunk about it).
 */
static int query_pg(store_tx *tx, const char *tenant_id, json_t *kb_ids, const char *document,
                    const char *query, int k, json_t **items, gp_err *err) {
    strbuf tsq = SB_INIT;
    int rc = kb_ts_query(query, &tsq, err);
    if (!rc && !kb_utf8_valid(query, strlen(query))) /* PostgreSQL refuses such a parameter */
        rc = gp_err_set(err, GP_EINVALID, "the query is not UTF-8 text");
    if (rc) {
        sb_release(&tsq);
        return rc;
    }
    const char *tenant = tenant_id ? tenant_id : "";
    char *ids = jx_dump(kb_ids);
    store_stmt *s;
    if (!ids) rc = gp_err_set(err, GP_ENOMEM, NULL);
    else
        rc = store_query(tx, &s, err,
                         "SELECT " STORE_COLS(HIT_PG_COLUMNS)
                         " FROM to_tsquery('english', ?) AS q, kb_chunks c"
                         " JOIN kb_documents d ON d.id = c.doc_id JOIN kbs k ON k.id = c.kb_id"
                         " WHERE c.tsv @@ q"
                         " AND c.kb_id IN (SELECT jsonb_array_elements_text(?::jsonb))"
                         " AND c.tenant_id = ? AND k.tenant_id = ?"
                         " AND (? IS NULL OR d.name = ?) ORDER BY r DESC, c.id LIMIT ?",
                         "ssssssi", tsq.buf, ids, tenant, tenant, document, document,
                         (int64_t)k);
    free(ids);
    sb_release(&tsq);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        const char *r = store_text(s, HT_RANK); /* a real: store_int would truncate it */
        json_array_append_new(arr, hit_json(s, r ? strtod(r, NULL) : 0));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}

int kb_query(store_tx *tx, const char *tenant_id, json_t *kb_ids, const char *document,
             const char *query, int k, json_t **items, gp_err *err) {
    char table[FTS_NAME_LEN];
    int yes;
    strbuf match = SB_INIT;
    if (k < 1 || k > KB_MAX_K) return gp_err_set(err, GP_EINVALID, "k must be 1-%d", KB_MAX_K);
    if (on_pg(tx)) return query_pg(tx, tenant_id, kb_ids, document, query, k, items, err);
    int rc = kb_fts_query(query, &match, err);
    if (!rc) rc = fts_name(tenant_id, table, err);
    if (!rc) rc = fts_exists(tx, table, &yes, err);
    if (rc || !yes) {
        sb_release(&match);
        if (!rc) *items = json_array(); /* nothing indexed yet */
        return rc;
    }
    char *ids = jx_dump(kb_ids);
    strbuf sql = SB_INIT;
    sb_addf(&sql,
            "SELECT " STORE_COLS(HIT_FTS_COLUMNS) " FROM %s JOIN kb_chunks c ON c.id = %s.rowid"
            " JOIN kb_documents d ON d.id = c.doc_id JOIN kbs k ON k.id = c.kb_id"
            " WHERE %s MATCH ? AND c.kb_id IN (SELECT value FROM json_each(?))"
            " AND (? IS NULL OR d.name = ?) ORDER BY r, c.id LIMIT ?",
            table, table, table, table, table);
    store_stmt *s;
    if (!ids || !sb_ok(&sql)) rc = gp_err_set(err, GP_ENOMEM, NULL);
    else
        rc = store_query(tx, &s, err, sql.buf, "ssssi", match.buf, ids, document, document,
                         (int64_t)k);
    free(ids);
    sb_release(&sql);
    sb_release(&match);
    if (rc) return rc;
    json_t *arr = json_array();
    while ((rc = store_step(s, err)) > 0) {
        /* store_int truncates: read the score as text, it is a REAL */
        const char *r = store_text(s, HT_RANK);
        double score = r ? -strtod(r, NULL) : 0;
        json_array_append_new(arr, hit_json(s, score));
    }
    store_done(s);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *items = arr;
    return GP_OK;
}
