/*
 * test_kb.c - knowledge bases: the pure parts (chunking with offsets and
 * overlap, HTML to text, query sanitising, the RAG prompt) and the store
 * (documents in and out of the index, per-tenant scores, filters, hostile
 * queries, application bindings).
 */
#include "testutil.h"

#include "../../src/core/rand.h"
#include "../../src/kb/kb.h"

#define TA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define TC "cccccccccccccccccccccccccccccccc"

/* ---- chunking ---- */

static void check_chunks(const char *text, size_t size, size_t overlap) {
    kb_span *sp;
    size_t n;
    gp_err err = GP_ERR_INIT;
    size_t len = strlen(text);
    assert_int_equal(kb_chunk(text, len, size, overlap, &sp, &n, &err), GP_OK);
    assert_true(n >= 1);
    int64_t chars = 0; /* up to the last non-blank */
    size_t tl = len;
    while (tl && (text[tl - 1] == ' ' || text[tl - 1] == '\n')) tl--;
    for (size_t i = 0; i < tl; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80) chars++;
    for (size_t i = 0; i < n; i++) {
        /* within bounds, at most `size` characters, trimmed, offsets agree */
        assert_true(sp[i].start < sp[i].end && sp[i].end <= len);
        assert_true(sp[i].cend - sp[i].cstart <= (int64_t)size);
        assert_false(text[sp[i].start] == ' ' || text[sp[i].start] == '\n');
        assert_false(text[sp[i].end - 1] == ' ' || text[sp[i].end - 1] == '\n');
        int64_t c = 0;
        for (size_t b = 0; b < sp[i].start; b++)
            if (((unsigned char)text[b] & 0xC0) != 0x80) c++;
        assert_int_equal(c, sp[i].cstart);
        if (i) {
            /* the next chunk starts before the previous ended (overlap), but not before
             * `overlap` characters back, and always moves forward */
            assert_true(sp[i].cstart > sp[i - 1].cstart);
            assert_true(sp[i].cstart < sp[i - 1].cend);
            assert_true(sp[i].cstart >= sp[i - 1].cend - (int64_t)overlap);
            /* at the start of a word */
            assert_true(text[sp[i].start - 1] == ' ' || text[sp[i].start - 1] == '\n');
        }
    }
    assert_int_equal(sp[0].cstart, 0);
    assert_int_equal(sp[n - 1].cend, chars);
    free(sp);
}

static void chunking(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    kb_span *sp;
    size_t n;
    /* short text: one chunk, trimmed */
    assert_int_equal(kb_chunk("  hello world \n", 15, 100, 20, &sp, &n, &err), GP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(sp[0].start, 2);
    assert_int_equal(sp[0].end, 13);
    free(sp);
    /* blank text: none */
    assert_int_equal(kb_chunk(" \n\t ", 4, 100, 20, &sp, &n, &err), GP_OK);
    assert_int_equal(n, 0);
    free(sp);
    /* bad sizes */
    assert_int_equal(kb_chunk("x", 1, 100, 50, &sp, &n, &err), GP_EINVALID);
    /* long text of words */
    char text[6000] = "";
    for (int i = 0; i < 300; i++) {
        char w[32];
        snprintf(w, sizeof w, "word%d%s", i, i % 17 == 16 ? ". " : " ");
        strcat(text, w);
    }
    check_chunks(text, 100, 30);
    check_chunks(text, KB_CHUNK_CHARS, KB_CHUNK_OVERLAP);
    /* multi-byte characters: character offsets differ from byte offsets */
    char utf[8000] = "";
    for (int i = 0; i < 200; i++) strcat(utf, "héllo wörld ");
    check_chunks(utf, 50, 10);
    /* a paragraph break in the second half wins over a later word break */
    char para[400];
    memset(para, 'a', sizeof para);
    for (int i = 0; i < 300; i += 10) para[i] = ' ';
    para[70] = '\n';
    para[71] = '\n';
    para[399] = '\0';
    assert_int_equal(kb_chunk(para, strlen(para), 100, 20, &sp, &n, &err), GP_OK);
    assert_true(n >= 2);
    assert_int_equal(sp[0].cend, 70);
    free(sp);
    /* one endless word: cut hard at the size */
    char blob[300];
    memset(blob, 'x', sizeof blob - 1);
    blob[299] = '\0';
    assert_int_equal(kb_chunk(blob, 299, 100, 20, &sp, &n, &err), GP_OK);
    assert_int_equal(sp[0].cend, 100);
    assert_true(n >= 3);
    free(sp);
}

/* ---- HTML ---- */

static void html_of(const char *html, const char *want) {
    strbuf sb = SB_INIT;
    kb_html_to_text(html, strlen(html), &sb);
    if (strcmp(sb.buf, want) != 0) fprintf(stderr, "html: got [%s] want [%s]\n", sb.buf, want);
    assert_string_equal(sb.buf, want);
    sb_release(&sb);
}

static void html(void **state) {
    (void)state;
    html_of("<p>Hello <b>world</b></p><p>Second</p>", "Hello world\n\nSecond");
    html_of("<html><head><title>T</title><style>p{x:1}</style><script>var a='<p>';</script>"
            "</head><body>A<br>B<br/>C</body></html>",
            "T\n\nA\nB\nC");
    html_of("a &amp; b &lt;c&gt; &quot;d&quot; &#65;&#x42; caf&eacute; x&nbsp;y", "a & b <c> \"d\" AB caf&eacute; x y");
    html_of("<!-- hidden --><ul><li>one</li><li>two</li></ul>", "one\ntwo");
    html_of("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc");
    html_of("x <y> 3 < 4 <", "x 3 < 4 <");
    html_of("<a href=\"x>y\">link</a>   text\n\n  more", "link text more");
    html_of("<SCRIPT>bad()</SCRIPT>ok", "ok");
    html_of("&#0;&#xD800;&#1114112;", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    html_of("", "");
    html_of("<p>unterminated <b", "unterminated");
}

/* ---- queries ---- */

static void query_of(const char *q, const char *want) {
    strbuf sb = SB_INIT;
    gp_err err = GP_ERR_INIT;
    int rc = kb_fts_query(q, &sb, &err);
    if (!want) {
        assert_int_equal(rc, GP_EINVALID);
    } else {
        assert_int_equal(rc, GP_OK);
        assert_string_equal(sb.buf, want);
    }
    sb_release(&sb);
}

/* kb_ts_query: the same words, quoted for PostgreSQL's to_tsquery and OR-ed */
static void tsquery_of(const char *q, const char *want) {
    strbuf sb = SB_INIT;
    gp_err err = GP_ERR_INIT;
    int rc = kb_ts_query(q, &sb, &err);
    if (!want) {
        assert_int_equal(rc, GP_EINVALID);
    } else {
        assert_int_equal(rc, GP_OK);
        assert_string_equal(sb.buf, want);
    }
    sb_release(&sb);
}

static void queries(void **state) {
    (void)state;
    tsquery_of("turbine blade", "'turbine' | 'blade'");
    tsquery_of("it's 'quoted' & !x:* | (y) <-> z\\", "'it' | 's' | 'quoted' | 'x' | 'y' | 'z'");
    tsquery_of("Dup dup DUP", "'dup'");
    tsquery_of("héllo", "'héllo'");
    tsquery_of("", NULL);
    tsquery_of("'' ** ( ) : ^ - & | ! <->", NULL);
    query_of("turbine blade", "\"turbine\" OR \"blade\"");
    query_of("\"quoted\" AND NOT x*", "\"quoted\" OR \"and\" OR \"not\" OR \"x\"");
    query_of("text:col NEAR(a b) ^start", "\"text\" OR \"col\" OR \"near\" OR \"a\" OR \"b\" OR \"start\"");
    query_of("Dup dup DUP", "\"dup\"");
    query_of("héllo", "\"héllo\"");
    query_of("", NULL);
    query_of("\"\" ** ( ) : ^ -", NULL);
    char big[KB_MAX_QUERY_LEN + 10];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    query_of(big, NULL);
    /* at most KB_MAX_QUERY_TERMS */
    strbuf q = SB_INIT, out = SB_INIT;
    for (int i = 0; i < 100; i++) sb_addf(&q, "w%d ", i);
    gp_err err = GP_ERR_INIT;
    assert_int_equal(kb_fts_query(q.buf, &out, &err), GP_OK);
    int terms = 0;
    for (const char *p = out.buf; (p = strstr(p, " OR ")); p++) terms++;
    assert_int_equal(terms + 1, KB_MAX_QUERY_TERMS);
    sb_release(&q);
    sb_release(&out);
    /* document names */
    assert_true(kb_doc_name_valid("a.txt"));
    assert_true(kb_doc_name_valid("Report_2024-v2.pdf"));
    assert_false(kb_doc_name_valid(".hidden"));
    assert_false(kb_doc_name_valid("a/b"));
    assert_false(kb_doc_name_valid(""));
    assert_true(kb_utf8_valid("héllo", strlen("héllo")));
    assert_false(kb_utf8_valid("\xC3", 1));
    assert_false(kb_utf8_valid("\xC0\x80", 2));
    assert_false(kb_utf8_valid("a\0b", 3));
}

static void rag_prompt(void **state) {
    (void)state;
    json_t *hits = json_pack("[{s:s,s:s,s:i,s:s},{s:s,s:s,s:i,s:s}]", "kb", "hb", "document",
                             "a.txt", "chunk", 0, "text", "first text", "kb", "hb", "document",
                             "b.md", "chunk", 3, "text", "second text");
    strbuf sb = SB_INIT;
    kb_rag_prompt(hits, &sb);
    assert_non_null(strstr(sb.buf, "[1] hb / a.txt (chunk 0):\nfirst text"));
    assert_non_null(strstr(sb.buf, "[2] hb / b.md (chunk 3):\nsecond text"));
    sb_release(&sb);
    json_decref(hits);
}

/* ---- the store ---- */

typedef struct fx {
    char *dir;
    store_t *st;
} fx;

static int setup(void **state) {
    fx *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp();
    f->st = tu_store(f->dir, 2);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    store_close(f->st);
    tu_rmdir(f->dir);
    free(f);
    return 0;
}

static void mk_kb(store_tx *tx, const char *tenant, const char *name, kb_info *kb) {
    gp_err err = GP_ERR_INIT;
    char id[RND_ID_LEN];
    json_t *spec = json_pack("{s:s}", "name", name);
    int rc = kb_create(tx, tenant, NULL, spec, "tester", id, &err);
    if (rc) fprintf(stderr, "kb_create: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    json_decref(spec);
    assert_int_equal(kb_find(tx, tenant, name, kb, &err), GP_OK);
}

static void add_doc(store_tx *tx, const kb_info *kb, const char *name, const char *format,
                    const char *content) {
    gp_err err = GP_ERR_INIT;
    kb_doc_input in;
    char id[RND_ID_LEN];
    json_t *spec = json_pack("{s:s,s:s,s:s}", "name", name, "format", format, "content", content);
    int rc = kb_doc_prepare(spec, &in, &err);
    if (rc) fprintf(stderr, "prepare: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(kb_doc_add(tx, kb, &in, "tester", id, &err), GP_OK);
    kb_doc_input_release(&in);
    json_decref(spec);
}

static json_t *search(store_tx *tx, const kb_info *kb, const char *doc, const char *q, int k) {
    gp_err err = GP_ERR_INIT;
    json_t *ids = json_pack("[s]", kb->id), *items = NULL;
    int rc = kb_query(tx, kb->tenant_id[0] ? kb->tenant_id : NULL, ids, doc, q, k, &items, &err);
    if (rc) fprintf(stderr, "kb_query: %s\n", err.msg);
    assert_int_equal(rc, GP_OK);
    json_decref(ids);
    return items;
}

static double score_of(json_t *items, const char *doc) {
    size_t i;
    json_t *h;
    json_array_foreach(items, i, h) if (!strcmp(json_string_value(json_object_get(h, "document")), doc))
        return json_real_value(json_object_get(h, "score"));
    fail_msg("document %s not in the results", doc);
    return 0;
}

static const char *const filler[] = {
    "Cats sleep most of the day and hunt at night.",
    "The library opens at nine and closes at five on weekdays.",
    "Bread needs flour, water, salt and yeast; knead it well.",
    "Rivers carry sediment downstream into the delta.",
};

static void store_and_search(void **state) {
    fx *f = *state;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kb_info a, b, c, a2;
    int pg = !strcmp(store_backend(f->st), "postgres");
    assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
    mk_kb(tx, TA, "hb", &a);
    mk_kb(tx, TA, "other", &a2);
    mk_kb(tx, TB, "hb", &b); /* the same name in another tenant is another KB */
    mk_kb(tx, TC, "hb", &c);
    char id[RND_ID_LEN];
    json_t *dup = json_pack("{s:s}", "name", "hb");
    assert_int_equal(kb_create(tx, TA, NULL, dup, "t", id, &err), GP_ECONFLICT);
    json_decref(dup);
    const char *about = "Wind turbines convert wind into power. A turbine blade is long.";
    /* tenant A: the word everywhere; B and C: the same single document plus filler */
    add_doc(tx, &a, "about.txt", "text", about);
    for (int i = 0; i < 6; i++) {
        char name[32], text[160];
        snprintf(name, sizeof name, "t%d.txt", i);
        snprintf(text, sizeof text, "Turbine maintenance note %d: check the turbine bearings.", i);
        add_doc(tx, &a, name, "text", text);
    }
    add_doc(tx, &a2, "about.txt", "text", about);
    for (int t = 0; t < 2; t++) {
        kb_info *kb = t ? &c : &b;
        add_doc(tx, kb, "about.txt", "text", about);
        for (int i = 0; i < 4; i++) {
            char name[16];
            snprintf(name, sizeof name, "f%d.md", i);
            add_doc(tx, kb, name, "markdown", filler[i]);
        }
    }
    add_doc(tx, &a2, "page.html", "html", "<h1>Bread</h1><p>Sourdough <b>starter</b> care</p>");
    add_doc(tx, &a2, "paths.txt", "text",
            "Logs are in /var/log/syslog; see pump.txt, mail ops@example.com, version 1.5.");
    /* a taken document name is refused, and the transaction goes on (both stores) */
    {
        kb_doc_input in;
        json_t *spec = json_pack("{s:s,s:s}", "name", "paths.txt", "content", "again");
        assert_int_equal(kb_doc_prepare(spec, &in, &err), GP_OK);
        assert_int_equal(kb_doc_add(tx, &a2, &in, "tester", id, &err), GP_ECONFLICT);
        kb_doc_input_release(&in);
        json_decref(spec);
    }
    assert_int_equal(store_commit(tx, &err), GP_OK);

    assert_int_equal(store_begin(f->st, STORE_READ, &tx, &err), GP_OK);
    /* ranking: the document about the query comes first */
    json_t *r = search(tx, &b, NULL, "wind turbine", 5);
    assert_int_equal(json_array_size(r), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "document")),
                        "about.txt");
    double sb = score_of(r, "about.txt");
    assert_true(sb > 0);
    json_decref(r);
    /* C holds exactly B's documents: equal scores, whatever A holds */
    r = search(tx, &c, NULL, "wind turbine", 5);
    assert_true(score_of(r, "about.txt") == sb);
    json_decref(r);
    /* A's index holds many turbine documents: the same text scores differently there under
     * bm25 (SQLite), which weighs words by the index they are in; PostgreSQL's ts_rank reads
     * the chunk and the query only, so the same text scores the same anywhere */
    r = search(tx, &a, NULL, "wind turbine", 10);
    double sa = score_of(r, "about.txt");
    assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "document")),
                        "about.txt");
    assert_int_equal(json_array_size(r), 7);
    /* best first; equal scores (t0-t5 differ by one digit only) in upload order */
    int ties = 0;
    for (size_t i = 1; i < json_array_size(r); i++) {
        json_t *p = json_array_get(r, i - 1), *h = json_array_get(r, i);
        double ps = json_real_value(json_object_get(p, "score"));
        double hs = json_real_value(json_object_get(h, "score"));
        assert_true(ps >= hs);
        if (ps == hs) {
            ties++;
            assert_true(strcmp(json_string_value(json_object_get(p, "document")),
                               json_string_value(json_object_get(h, "document"))) < 0);
        }
    }
    assert_int_equal(ties, 5);
    json_decref(r);
    if (pg) assert_true(sa == sb);
    else assert_true(sa != sb);
    /* only the KB asked: A's "other" KB has the same text but is not searched */
    r = search(tx, &a2, NULL, "turbine", 10);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);
    /* the document filter, and k */
    r = search(tx, &a, "t3.txt", "turbine", 10);
    assert_int_equal(json_array_size(r), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "document")),
                        "t3.txt");
    json_decref(r);
    r = search(tx, &a, NULL, "turbine", 2);
    assert_int_equal(json_array_size(r), 2);
    json_decref(r);
    /* stemming: "turbines" finds "turbine" */
    r = search(tx, &b, NULL, "TURBINES?", 5);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);
    /* HTML was indexed as text: markup is not searchable, the words are */
    r = search(tx, &a2, NULL, "sourdough", 5);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);
    r = search(tx, &a2, NULL, "h1 href", 5);
    assert_int_equal(json_array_size(r), 0);
    json_decref(r);
    /* words are runs of letters and digits on both stores: paths, file names, addresses and
     * dotted numbers are several words */
    static const char *const parts[] = {"syslog", "pump", "txt", "example", "ops", "5", NULL};
    for (const char *const *q = parts; *q; q++) {
        r = search(tx, &a2, NULL, *q, 5);
        if (json_array_size(r) != 1) fail_msg("'%s' does not find paths.txt", *q);
        assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "document")),
                            "paths.txt");
        json_decref(r);
    }
    /* the tenant is a second fence: A's KB asked for under tenant B finds nothing */
    {
        json_t *ids = json_pack("[s]", a2.id), *items = NULL;
        assert_int_equal(kb_query(tx, TB, ids, NULL, "sourdough", 5, &items, &err), GP_OK);
        assert_int_equal(json_array_size(items), 0);
        json_decref(items);
        json_decref(ids);
        /* and both of A's KBs at once: hits of both, each from its own KB */
        ids = json_pack("[s,s]", a.id, a2.id);
        assert_int_equal(kb_query(tx, TA, ids, NULL, "turbine", 20, &items, &err), GP_OK);
        assert_int_equal(json_array_size(items), 8);
        json_decref(items);
        json_decref(ids);
    }
    /* hostile queries neither fail nor inject */
    static const char *const hostile[] = {"\"", "turbine\" OR \"*", "NEAR(turbine wind, 1)",
                                          "text:turbine", "') ; DROP TABLE kbs; --", "a OR",
                                          "^turbine*", "{text}: x", "it's", "a & !b <-> c:*",
                                          "\\' | turbine", "turbine'); SELECT 1; --",
                                          "\xff\xfe turbine", NULL};
    for (const char *const *q = hostile; *q; q++) {
        json_t *ids = json_pack("[s]", b.id), *items = NULL;
        int rc = kb_query(tx, TB, ids, NULL, *q, 5, &items, &err);
        assert_true(rc == GP_OK || rc == GP_EINVALID);
        /* the transaction is intact: the next query works (PostgreSQL aborts on a failure) */
        json_t *again = search(tx, &b, NULL, "turbine", 5);
        assert_int_equal(json_array_size(again), 1);
        json_decref(again);
        json_decref(items);
        json_decref(ids);
    }
    /* bad k; a tenant with nothing indexed yet */
    json_t *ids = json_pack("[s]", b.id), *items = NULL;
    assert_int_equal(kb_query(tx, TB, ids, NULL, "x", 0, &items, &err), GP_EINVALID);
    assert_int_equal(kb_query(tx, TB, ids, NULL, "x", KB_MAX_K + 1, &items, &err), GP_EINVALID);
    assert_int_equal(kb_query(tx, "dddddddddddddddddddddddddddddddd", ids, NULL, "x", 3, &items, &err),
                     GP_OK);
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
    json_decref(ids);
    /* a document's text and spans agree */
    json_t *d;
    assert_int_equal(kb_doc_get(tx, &a2, "page.html", 1, &d, &err), GP_OK);
    assert_string_equal(json_string_value(json_object_get(d, "text")), "Bread\n\nSourdough starter care");
    assert_int_equal(json_array_size(json_object_get(d, "spans")), 1);
    json_decref(d);
    store_rollback(tx);

    /* deletion: gone from results at once */
    assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(kb_doc_delete(tx, &b, "about.txt", &err), GP_OK);
    assert_int_equal(kb_doc_delete(tx, &b, "about.txt", &err), GP_ENOTFOUND);
    r = search(tx, &b, NULL, "turbine", 5);
    assert_int_equal(json_array_size(r), 0);
    json_decref(r);
    /* C is untouched */
    r = search(tx, &c, NULL, "turbine", 5);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);
    int64_t docs;
    assert_int_equal(kb_delete(tx, &a, &docs, &err), GP_OK);
    assert_int_equal(docs, 7);
    {
        /* its chunks went with it */
        store_stmt *s;
        assert_int_equal(store_query(tx, &s, &err, "SELECT COUNT(*) FROM kb_chunks WHERE kb_id = ?",
                                     "s", a.id),
                         GP_OK);
        assert_int_equal(store_step(s, &err), 1);
        assert_int_equal(store_int(s, 0), 0);
        store_done(s);
    }
    r = search(tx, &a2, NULL, "turbine", 5);
    assert_int_equal(json_array_size(r), 1); /* the sibling KB keeps its own */
    json_decref(r);
    kb_info gone;
    assert_int_equal(kb_find(tx, TA, "hb", &gone, &err), GP_ENOTFOUND);
    assert_int_equal(store_commit(tx, &err), GP_OK);
    kb_info_release(&a);
    kb_info_release(&a2);
    kb_info_release(&b);
    kb_info_release(&c);
}

static void scores_per_tenant(void **state) {
    fx *f = *state;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kb_info x, y, z;
    /* X: one relevant and three other documents; Y: the same four; Z: the same four plus many
     * documents with the word in ANOTHER tenant's table must not matter -> Y == X exactly */
    assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
    mk_kb(tx, "0000000000000000000000000000000a", "kb", &x);
    mk_kb(tx, "0000000000000000000000000000000b", "kb", &y);
    mk_kb(tx, "0000000000000000000000000000000c", "kb", &z);
    for (int t = 0; t < 3; t++) {
        kb_info *kb = t == 0 ? &x : t == 1 ? &y : &z;
        add_doc(tx, kb, "guide.txt", "text", "The compressor valve must be sealed before startup.");
        for (int i = 0; i < 3; i++) {
            char name[16];
            snprintf(name, sizeof name, "f%d.txt", i);
            add_doc(tx, kb, name, "text", filler[i]);
        }
    }
    /* tenant z (another table) gets many more compressor documents */
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d.txt", i);
        add_doc(tx, &z, name, "text", "compressor compressor valve notes");
    }
    assert_int_equal(store_commit(tx, &err), GP_OK);
    assert_int_equal(store_begin(f->st, STORE_READ, &tx, &err), GP_OK);
    json_t *rx = search(tx, &x, NULL, "compressor valve", 5);
    json_t *ry = search(tx, &y, NULL, "compressor valve", 5);
    json_t *rz = search(tx, &z, NULL, "compressor valve", 30);
    assert_true(score_of(rx, "guide.txt") > 0);
    assert_true(score_of(rx, "guide.txt") == score_of(ry, "guide.txt"));
    assert_int_equal(json_array_size(rz), 21);
    /* SQLite: z's own table (bm25 statistics) holds the many compressor documents, so its
     * score differs; PostgreSQL: ts_rank depends on no other document at all */
    if (!strcmp(store_backend(f->st), "postgres"))
        assert_true(score_of(rz, "guide.txt") == score_of(rx, "guide.txt"));
    else
        assert_true(score_of(rz, "guide.txt") != score_of(rx, "guide.txt"));
    json_decref(rx);
    json_decref(ry);
    json_decref(rz);
    store_rollback(tx);
    kb_info_release(&x);
    kb_info_release(&y);
    kb_info_release(&z);
}

/* ---- the rules of creating and changing a KB (pure: no store) ---- */

static int new_check(const char *tid, const char *pid, const char *spec, kb_new *k) {
    json_t *j = json_loads(spec, 0, NULL);
    assert_non_null(j);
    gp_err err = GP_ERR_INIT;
    int rc = kb_new_check(tid, pid, j, k, &err);
    if (rc == GP_OK) {
        assert_string_equal(k->name, json_string_value(json_object_get(j, "name")));
    } else {
        assert_int_equal(rc, GP_EINVALID);
        assert_true(err.msg[0] != '\0');
    }
    json_decref(j);
    return rc;
}

static void kb_rules(void **state) {
    (void)state;
    kb_new k;
    assert_int_equal(new_check(TA, NULL, "{\"name\":\"docs\"}", &k), GP_OK);
    assert_string_equal(k.scope, "tenant");
    assert_string_equal(k.description, "");
    assert_null(k.work_orders);
    assert_int_equal(new_check(TA, "p1", "{\"name\":\"docs\",\"scope\":\"project\"}", &k),
                     GP_OK);
    assert_string_equal(k.scope, "project");
    assert_string_equal(k.project_id, "p1");
    assert_int_equal(new_check(NULL, NULL, "{\"name\":\"runbooks\",\"work_orders\":[\"wo-1\"]}", &k),
                     GP_OK);
    assert_string_equal(k.scope, "ops");
    assert_non_null(k.work_orders);
    /* refused */
    const char *bad_tenant[] = {
        "{}",                                       /* no name */
        "{\"name\":\"Docs\"}",                     /* not a name */
        "{\"name\":\"-docs\"}",
        "{\"name\":\"docs\",\"colour\":1}",          /* unknown field */
        "{\"name\":\"docs\",\"scope\":\"galaxy\"}",
        "{\"name\":\"docs\",\"scope\":\"project\"}", /* a project KB needs its project */
        "{\"name\":\"docs\",\"scope\":\"ops\"}",
        "{\"name\":\"docs\",\"work_orders\":[\"wo-1\"]}", /* only ops KBs */
        "{\"name\":\"docs\",\"description\":7}",
    };
    for (size_t i = 0; i < sizeof bad_tenant / sizeof *bad_tenant; i++)
        assert_int_equal(new_check(TA, NULL, bad_tenant[i], &k), GP_EINVALID);
    assert_int_equal(new_check(TA, "p1", "{\"name\":\"docs\",\"scope\":\"tenant\"}", &k),
                     GP_EINVALID);
    assert_int_equal(new_check(NULL, NULL, "{\"name\":\"r\",\"project\":\"p\"}", &k), GP_EINVALID);
    assert_int_equal(new_check(NULL, NULL, "{\"name\":\"r\",\"work_orders\":\"wo\"}", &k),
                     GP_EINVALID);
    assert_int_equal(new_check(NULL, NULL, "{\"name\":\"r\",\"work_orders\":[\"\"]}", &k),
                     GP_EINVALID);
    /* a description of 1000 characters is fine, 1001 is not; 65 work orders are too many */
    char big[1200];
    for (int n = 1000; n <= 1001; n++) {
        char d[1002];
        memset(d, 'x', (size_t)n);
        d[n] = '\0';
        snprintf(big, sizeof big, "{\"name\":\"docs\",\"description\":\"%s\"}", d);
        assert_int_equal(new_check(TA, NULL, big, &k), n == 1000 ? GP_OK : GP_EINVALID);
    }
    strbuf w = SB_INIT;
    sb_addf(&w, "{\"name\":\"r\",\"work_orders\":[");
    for (int i = 0; i < 65; i++) sb_addf(&w, "%s\"wo-%d\"", i ? "," : "", i);
    sb_addf(&w, "]}");
    assert_int_equal(new_check(NULL, NULL, w.buf, &k), GP_EINVALID);
    sb_release(&w);

    /* changes */
    kb_info tenant_kb = {.scope = "tenant"}, ops_kb = {.scope = "ops"};
    kb_change ch;
    gp_err err = GP_ERR_INIT;
    json_t *j = json_loads("{\"description\":\"new\"}", 0, NULL);
    assert_int_equal(kb_change_check(&tenant_kb, j, &ch, &err), GP_OK);
    assert_string_equal(ch.description, "new");
    assert_null(ch.work_orders);
    json_decref(j);
    j = json_loads("{\"work_orders\":[\"wo-2\"]}", 0, NULL);
    assert_int_equal(kb_change_check(&tenant_kb, j, &ch, &err), GP_EINVALID);
    assert_int_equal(kb_change_check(&ops_kb, j, &ch, &err), GP_OK);
    assert_non_null(ch.work_orders);
    json_decref(j);
    j = json_loads("{\"name\":\"renamed\"}", 0, NULL);
    assert_int_equal(kb_change_check(&ops_kb, j, &ch, &err), GP_EINVALID);
    json_decref(j);
}

static void uploads(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    kb_doc_input in;
    json_t *spec;
#define PREP(json, want)                                                          \
    do {                                                                          \
        spec = json_loads(json, 0, NULL);                                         \
        assert_non_null(spec);                                                    \
        int prc = kb_doc_prepare(spec, &in, &err);                                \
        if (prc != (want)) fprintf(stderr, "%s: %d %s\n", json, prc, err.msg);    \
        assert_int_equal(prc, want);                                              \
        kb_doc_input_release(&in);                                                \
        json_decref(spec);                                                        \
    } while (0)
    PREP("{\"name\":\"a.txt\",\"content\":\"hello\"}", GP_OK);
    PREP("{\"name\":\"a.md\",\"format\":\"markdown\",\"content\":\"# Title\\n\\ntext\"}", GP_OK);
    PREP("{\"name\":\"a.docx\",\"format\":\"docx\",\"content\":\"x\"}", GP_EUNSUPPORTED);
    PREP("{\"name\":\"../etc\",\"content\":\"x\"}", GP_EINVALID);
    PREP("{\"name\":\"a.txt\",\"content\":\"   \"}", GP_EINVALID);
    PREP("{\"name\":\"a.txt\",\"content\":\"x\",\"extra\":1}", GP_EINVALID);
    PREP("{\"name\":\"a.txt\"}", GP_EINVALID);
    PREP("{\"name\":\"a.html\",\"format\":\"html\",\"content\":\"<script>x</script>\"}", GP_EINVALID);
    PREP("{\"name\":\"a.pdf\",\"format\":\"pdf\",\"content\":\"not base64!\"}", GP_EINVALID);
    PREP("{\"name\":\"a.pdf\",\"format\":\"pdf\",\"content\":\"aGVsbG8=\"}", GP_EINVALID); /* "hello" */
    if (kb_pdf_available()) /* a header but no valid PDF: pdftotext refuses it */
        PREP("{\"name\":\"a.pdf\",\"format\":\"pdf\",\"content\":\"JVBERi0xLjQKZ2FyYmFnZQ==\"}",
             GP_EINVALID);
#undef PREP
}

static void rag_bindings(void **state) {
    fx *f = *state;
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    kb_info wide, mine, theirs, foreign;
    assert_int_equal(store_begin(f->st, STORE_WRITE, &tx, &err), GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO tenants (id, name, created_at) VALUES"
                                " ('eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'te', 0),"
                                " ('ffffffffffffffffffffffffffffffff', 'tf', 0)",
                                ""),
                     GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO projects (id, tenant_id, name, class, created_at) VALUES"
                                " ('p1', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'p1', 'research', 0),"
                                " ('p2', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'p2', 'research', 0)",
                                ""),
                     GP_OK);
    assert_int_equal(store_exec(tx, NULL, &err,
                                "INSERT INTO apps (id, project_id, name, created_at) VALUES"
                                " ('a1', 'p1', 'bot', 0)",
                                ""),
                     GP_OK);
    const char *te = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
    mk_kb(tx, te, "wide", &wide);
    char id[RND_ID_LEN];
    json_t *spec = json_pack("{s:s}", "name", "mine");
    assert_int_equal(kb_create(tx, te, "p1", spec, "t", id, &err), GP_OK);
    json_decref(spec);
    spec = json_pack("{s:s}", "name", "theirs");
    assert_int_equal(kb_create(tx, te, "p2", spec, "t", id, &err), GP_OK);
    json_decref(spec);
    assert_int_equal(kb_find(tx, te, "mine", &mine, &err), GP_OK);
    assert_int_equal(kb_find(tx, te, "theirs", &theirs, &err), GP_OK);
    assert_string_equal(mine.scope, "project");
    mk_kb(tx, "ffffffffffffffffffffffffffffffff", "foreign", &foreign);
    /* a KB of another project, or another tenant's, cannot be bound */
    spec = json_pack("{s:[s,s],s:i}", "kbs", "wide", "theirs", "k", 3);
    assert_int_equal(kb_rag_set(tx, te, "p1", "bot", "m", spec, NULL, &err), GP_EINVALID);
    json_decref(spec);
    spec = json_pack("{s:[s]}", "kbs", "foreign");
    assert_int_equal(kb_rag_set(tx, te, "p1", "bot", "m", spec, NULL, &err), GP_ENOTFOUND);
    json_decref(spec);
    /* a KB named twice is refused, and the transaction goes on (both stores) */
    spec = json_pack("{s:[s,s]}", "kbs", "wide", "wide");
    assert_int_equal(kb_rag_set(tx, te, "p1", "bot", "m", spec, NULL, &err), GP_EINVALID);
    json_decref(spec);
    spec = json_pack("{s:[s,s],s:i}", "kbs", "wide", "mine", "k", 3);
    json_t *out = NULL;
    assert_int_equal(kb_rag_set(tx, te, "p1", "nobot", "m", spec, NULL, &err), GP_ENOTFOUND);
    assert_int_equal(kb_rag_set(tx, te, "p1", "bot", "m", spec, &out, &err), GP_OK);
    json_decref(spec);
    assert_int_equal(json_integer_value(json_object_get(out, "k")), 3);
    assert_int_equal(json_array_size(json_object_get(out, "kbs")), 2);
    json_decref(out);
    /* lookups: only for that app and model, only from the key's own tenant and project */
    json_t *ids;
    int k;
    assert_int_equal(kb_rag_lookup(tx, te, "p1", "bot", "m", &ids, &k, &err), GP_OK);
    assert_int_equal(json_array_size(ids), 2);
    assert_int_equal(k, 3);
    json_decref(ids);
    assert_int_equal(kb_rag_lookup(tx, te, "p1", "bot", "other", &ids, &k, &err), GP_ENOTFOUND);
    assert_int_equal(kb_rag_lookup(tx, te, "p1", "", "m", &ids, &k, &err), GP_ENOTFOUND);
    assert_int_equal(kb_rag_lookup(tx, "ffffffffffffffffffffffffffffffff", "p1", "bot", "m", &ids,
                                   &k, &err),
                     GP_ENOTFOUND);
    json_t *items;
    assert_int_equal(kb_rag_list(tx, "p1", "bot", &items, &err), GP_OK);
    assert_int_equal(json_array_size(items), 1);
    json_decref(items);
    /* deleting a KB drops it from the binding */
    int64_t docs;
    assert_int_equal(kb_delete(tx, &mine, &docs, &err), GP_OK);
    assert_int_equal(kb_rag_lookup(tx, te, "p1", "bot", "m", &ids, &k, &err), GP_OK);
    assert_int_equal(json_array_size(ids), 1);
    json_decref(ids);
    assert_int_equal(kb_rag_delete(tx, "p1", "bot", "m", &err), GP_OK);
    assert_int_equal(kb_rag_delete(tx, "p1", "bot", "m", &err), GP_ENOTFOUND);
    /* scopes: ops KBs name work orders, tenant KBs do not */
    spec = json_pack("{s:s,s:[s]}", "name", "runbooks", "work_orders", "wo-1");
    assert_int_equal(kb_create(tx, NULL, NULL, spec, "t", id, &err), GP_OK);
    assert_int_equal(kb_create(tx, te, NULL, spec, "t", id, &err), GP_EINVALID);
    json_decref(spec);
    spec = json_pack("{s:s,s:s}", "name", "x", "scope", "ops");
    assert_int_equal(kb_create(tx, te, NULL, spec, "t", id, &err), GP_EINVALID);
    json_decref(spec);
    kb_info ops;
    assert_int_equal(kb_find(tx, NULL, "runbooks", &ops, &err), GP_OK);
    assert_string_equal(ops.scope, "ops");
    assert_int_equal(json_array_size(ops.work_orders), 1);
    kb_info_release(&ops);
    store_rollback(tx);
    kb_info_release(&wide);
    kb_info_release(&mine);
    kb_info_release(&theirs);
    kb_info_release(&foreign);
}

int main(void) {
    assert_int_equal(rnd_init(), 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunking),
        cmocka_unit_test(html),
        cmocka_unit_test(queries),
        cmocka_unit_test(rag_prompt),
        cmocka_unit_test(uploads),
        cmocka_unit_test(kb_rules),
        cmocka_unit_test_setup_teardown(store_and_search, setup, teardown),
        cmocka_unit_test_setup_teardown(scores_per_tenant, setup, teardown),
        cmocka_unit_test_setup_teardown(rag_bindings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
