/*
 * kb.h - knowledge bases: documents split into overlapping chunks, indexed
 * for keyword retrieval (SQLite FTS5 ranked with bm25, or PostgreSQL full
 * text search ranked with ts_rank), and the bindings
 * that let an application's chat requests be answered with them (RAG).
 *
 * A knowledge base (KB) has a scope:
 *   "tenant"   owned by a tenant, readable in all of it;
 *   "project"  owned by one project of a tenant;
 *   "ops"      operational documents, outside every tenant (ops-engineers;
 *              vendors through the work orders a KB names).
 * KB names are object names (gp_name_valid), unique per tenant (ops KBs:
 * unique among ops KBs).  Documents are named (1-128 of [A-Za-z0-9._-], not
 * starting with '.'), unique in their KB.
 *
 * The index, SQLite: ONE FTS5 table per tenant, "kbfts_<tenant id>", and
 * one for every ops KB together, "kbfts_ops", created on first use.  bm25's
 * statistics (document count, average length, term frequencies) span a
 * whole table, so one tenant's documents never shift another's scores or
 * results.  A chunk's row id in that table is its kb_chunks.id.  Table names
 * are built only from server-made ids (32 hex characters), never from user
 * text; every user value is bound.
 *
 * The index, PostgreSQL: kb_chunks itself holds each chunk's text, its
 * tenant ('' for ops) and tsv = to_tsvector('english', the text with ASCII
 * punctuation made blanks: words are runs of letters and digits, as for
 * FTS5), under a GIN index.  A search is the same words as on SQLite, OR-ed,
 * as a bound to_tsquery('english', …) text (kb_ts_query), always filtered by
 * the KB ids asked for AND the caller's tenant, ranked by ts_rank
 * descending, then by chunk id.  ts_rank reads one
 * chunk and the query only, so scores never depend on other documents, any
 * tenant's.  Scores differ from SQLite's (-bm25); higher is better on both.
 *
 * Layers: chunk.c is pure (chunking, HTML to text, query sanitising, the
 * RAG prompt); extract.c turns an uploaded document into text (PDF through
 * Debian's `pdftotext`, run without a shell); kb.c and rag.c are the store
 * side.  Nothing here authorises or audits: handlers do (src/api/h_kb.c).
 *
 * Ownership: json_t** OUT parameters get a new reference; strbuf OUT
 * parameters are appended to and owned by the caller; kb_doc_input and
 * kb_info hold heap data released by their _release() functions, which
 * accept a zeroed struct.
 */
#ifndef GP_KB_H
#define GP_KB_H

#include "../core/err.h"
#include "../core/rand.h"
#include "../core/strbuf.h"
#include "../store/store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Chunking: a chunk holds at most KB_CHUNK_CHARS characters (Unicode code
 * points), ends at a paragraph, sentence or word break when one lies in its
 * second half, and the next chunk starts about KB_CHUNK_OVERLAP characters
 * before the previous one ended (at the start of a word), so a passage cut
 * by a boundary is whole in one of the two.  Leading and trailing
 * whitespace is trimmed from every chunk.
 */
#define KB_CHUNK_CHARS 800
#define KB_CHUNK_OVERLAP 200
#define KB_DEFAULT_K 5     /* results of a query when k is not given */
#define KB_MAX_K 50
#define KB_MAX_QUERY_TERMS 32
#define KB_MAX_QUERY_LEN 2000 /* bytes of query text */
#define KB_DOC_NAME_MAX 128

/* ---- pure helpers (chunk.c) ---- */

/* One chunk: byte offsets into the text (for slicing) and character offsets (for clients). */
typedef struct kb_span {
    size_t start, end;       /* bytes, [start, end) */
    int64_t cstart, cend;    /* characters (code points), [cstart, cend) */
} kb_span;

/*
 * Split UTF-8 `text` (len bytes) into chunks of at most `size` characters
 * overlapping by about `overlap` (< size / 2; see above).  Whitespace-only
 * text gives no chunk.  OUT: *spans (heap array, free()) and *n.
 * GP_EINVALID for bad sizes, GP_ENOMEM.
 */
int kb_chunk(const char *text, size_t len, size_t size, size_t overlap, kb_span **spans,
             size_t *n, gp_err *err);

/*
 * The readable text of an HTML document: tags dropped, block elements
 * (p, div, br, li, h1-h6, tr, …) become line breaks, script/style/head
 * contents (except <title>) and comments dropped, character references
 * decoded (named: amp lt gt quot apos nbsp; numeric: decimal and hex),
 * runs of blanks collapsed.  Appends to `out`.
 */
void kb_html_to_text(const char *html, size_t len, strbuf *out);

/* 1 if `s` (len bytes) is valid UTF-8 without NUL bytes. */
int kb_utf8_valid(const char *s, size_t len);

/*
 * A safe FTS5 MATCH expression for free text: the words of `q` (runs of
 * letters and digits; any non-ASCII byte counts as a letter), each quoted
 * as a string, joined with OR; at most KB_MAX_QUERY_TERMS, duplicates
 * dropped.  No FTS5 syntax in `q` (quotes, AND/OR/NOT/NEAR, column
 * filters, *, ^, parentheses) survives.  GP_EINVALID when `q` has no word
 * or is longer than KB_MAX_QUERY_LEN.  Appends to `out`.
 */
int kb_fts_query(const char *q, strbuf *out, gp_err *err);

/*
 * The same words as kb_fts_query, for PostgreSQL's to_tsquery(): each
 * quoted as a tsquery string ('word': words hold no quote or backslash, so
 * nothing needs escaping and no tsquery operator, weight or prefix survives),
 * joined with " | " (OR).  The text is bound, never pasted into SQL.  A
 * quoted word the parser splits (non-ASCII punctuation) becomes a phrase,
 * as in FTS5.  Same errors.  Appends to `out`.
 */
int kb_ts_query(const char *q, strbuf *out, gp_err *err);

/*
 * The system message of a retrieval-augmented request: an instruction and
 * the hits (as kb_query returns them) numbered [1], [2], … with their KB and
 * document.  Appends to `out`.
 */
void kb_rag_prompt(json_t *hits, strbuf *out);

/* Valid document name (see above)? */
int kb_doc_name_valid(const char *s);

/* ---- documents into text (extract.c) ---- */

/* An uploaded document, extracted and chunked, ready to store (no store access). */
typedef struct kb_doc_input {
    char name[KB_DOC_NAME_MAX + 1];
    char format[16];       /* text | markdown | html | pdf */
    size_t bytes;          /* size of the uploaded content (decoded for pdf) */
    strbuf text;           /* the extracted text */
    kb_span *spans;        /* its chunks */
    size_t nspans;
} kb_doc_input;

/*
 * Validate and extract an upload {"name","format","content"}: content is
 * the document's text for text/markdown/html, and base64 (standard
 * alphabet, padding optional) of the file for pdf.  PDFs go through
 * `pdftotext` (poppler-utils), found on PATH; GP_EUNSUPPORTED when it is
 * not installed, GP_EINVALID for a file it cannot read, text that is not
 * UTF-8, or a document with no text at all.  OUT: *out (kb_doc_input_release).
 */
int kb_doc_prepare(json_t *spec, kb_doc_input *out, gp_err *err);
void kb_doc_input_release(kb_doc_input *in);

/* 1 if PDF extraction is available here (pdftotext on PATH). */
int kb_pdf_available(void);

/* ---- knowledge bases (rules: kb.c; rows: kb_store.c) ---- */

typedef struct kb_info {
    char id[RND_ID_LEN];
    char tenant_id[RND_ID_LEN];   /* "" for ops */
    char project_id[RND_ID_LEN];  /* "" unless scope is project */
    char scope[8];                /* tenant | project | ops */
    char name[64];
    json_t *work_orders;          /* ops: names of work orders (owned; [] otherwise) */
} kb_info;

void kb_info_release(kb_info *kb);

/* A KB to create, as kb_new_check() accepted it (strings borrowed from its spec). */
typedef struct kb_new {
    const char *tenant_id;   /* NULL: an ops KB */
    const char *project_id;  /* NULL unless a project KB */
    const char *scope;       /* tenant | project | ops */
    const char *name;
    const char *description; /* "" when none */
    json_t *work_orders;     /* borrowed; NULL: none */
} kb_new;

/*
 * The rules of kb_create(), pure: the spec's fields, name and description,
 * a "scope" that agrees with where it is made (tenant_id NULL: ops; with
 * project_id: project; else tenant), work orders on ops KBs only, no project
 * on an ops KB.  OUT: *out (borrows from spec).  GP_EINVALID with the reason.
 */
int kb_new_check(const char *tenant_id, const char *project_id, json_t *spec, kb_new *out,
                 gp_err *err);

/* A change to a KB, as kb_change_check() accepted it (borrowed; NULL: unchanged). */
typedef struct kb_change {
    const char *description;
    json_t *work_orders;
} kb_change;

/* The rules of kb_update(), pure: {"description","work_orders"}, work orders on ops KBs. */
int kb_change_check(const kb_info *kb, json_t *spec, kb_change *out, gp_err *err);

/*
 * Create a KB from {"name","description","scope","project"(name),
 * "work_orders"}: tenant_id NULL makes an ops KB (work_orders allowed,
 * project not); otherwise the scope is "project" when project_id is given
 * (the caller resolved "project"), else "tenant".  A "scope" given must
 * agree.  OUT: id.  GP_ECONFLICT for a taken name.
 */
int kb_create(store_tx *tx, const char *tenant_id, const char *project_id, json_t *spec,
              const char *created_by, char id[RND_ID_LEN], gp_err *err);

/* Find KB `name` of a tenant (NULL: an ops KB). OUT: *out. GP_ENOTFOUND. */
int kb_find(store_tx *tx, const char *tenant_id, const char *name, kb_info *out, gp_err *err);

/* A KB as JSON: name, scope, project (name or null), description, work_orders, counts, … */
int kb_get_json(store_tx *tx, const kb_info *kb, json_t **out, gp_err *err);

/*
 * The KBs of a tenant (NULL: the ops KBs) for which `keep(cls, kb)` returns
 * 1 (NULL keeps all), by name.  OUT: *items.
 */
int kb_list(store_tx *tx, const char *tenant_id, int (*keep)(void *cls, const kb_info *kb),
            void *cls, json_t **items, gp_err *err);

/* Change {"description","work_orders"} (work_orders: ops KBs only). */
int kb_update(store_tx *tx, const kb_info *kb, json_t *spec, gp_err *err);

/* Delete a KB, its documents, chunks, index rows and application bindings. OUT: counts. */
int kb_delete(store_tx *tx, const kb_info *kb, int64_t *docs, gp_err *err);

/* ---- documents (kb_store.c) ---- */

/* Store a prepared document in `kb` and index its chunks. OUT: id. GP_ECONFLICT: name taken. */
int kb_doc_add(store_tx *tx, const kb_info *kb, const kb_doc_input *in, const char *created_by,
               char id[RND_ID_LEN], gp_err *err);

/* Documents of a KB (without their text), by name. */
int kb_doc_list(store_tx *tx, const kb_info *kb, json_t **items, gp_err *err);

/*
 * One document: metadata, and with `full` its text and "spans"
 * [{chunk, start, end}] (character offsets).  GP_ENOTFOUND.
 */
int kb_doc_get(store_tx *tx, const kb_info *kb, const char *name, int full, json_t **out,
               gp_err *err);

/* Delete a document and its index rows: gone from results at once. GP_ENOTFOUND. */
int kb_doc_delete(store_tx *tx, const kb_info *kb, const char *name, gp_err *err);

/*
 * Keyword search over KBs `kb_ids` (JSON array of ids, all of tenant
 * `tenant_id`, NULL for ops), optionally one document by name: the best
 * `k` chunks, best first, as [{kb, document, chunk, start, end, score,
 * text}]; score = -bm25 on SQLite (higher is better; only comparable within
 * one tenant's index), ts_rank on PostgreSQL (higher is better; another
 * scale).  Only chunks of those KBs and of that tenant are read.  `query` is
 * free text (kb_fts_query; kb_ts_query on PostgreSQL, where text that is not
 * UTF-8 is GP_EINVALID).  OUT: *items.
 */
int kb_query(store_tx *tx, const char *tenant_id, json_t *kb_ids, const char *document,
             const char *query, int k, json_t **items, gp_err *err);

/* ---- applications bound to KBs (rag.c) ---- */

/*
 * Bind `model` for application `app` (name) of project `project_id` to KBs
 * {"kbs":[names],"k":N} of tenant `tenant_id`: each must be tenant-wide or
 * of that project (otherwise GP_EINVALID; a missing one GP_ENOTFOUND).
 * Replaces an earlier binding of the same model.  OUT (optional): *out, the
 * binding as JSON.
 */
int kb_rag_set(store_tx *tx, const char *tenant_id, const char *project_id, const char *app,
               const char *model, json_t *spec, json_t **out, gp_err *err);

/* The bindings of an application: [{model, kbs:[names], k, updated_at}]. GP_ENOTFOUND: no app. */
int kb_rag_list(store_tx *tx, const char *project_id, const char *app, json_t **items,
                gp_err *err);

/* Remove the binding of `model`.  GP_ENOTFOUND when there is none. */
int kb_rag_delete(store_tx *tx, const char *project_id, const char *app, const char *model,
                  gp_err *err);

/*
 * What a key of application `app` (name; "" none) in project `project_id`
 * of tenant `tenant_id` retrieves from for `model`: OUT *kb_ids (JSON array
 * of the ids of bound KBs still readable there: the tenant's, tenant-wide
 * or of that project) and *k.  GP_ENOTFOUND when no binding applies.
 */
int kb_rag_lookup(store_tx *tx, const char *tenant_id, const char *project_id, const char *app,
                  const char *model, json_t **kb_ids, int *k, gp_err *err);

#endif
