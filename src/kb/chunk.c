/*
 * chunk.c - the pure parts of knowledge bases (see kb.h): splitting text
 * into overlapping chunks, HTML to text, turning free text into a safe
 * FTS5 query, and the system message of a retrieval-augmented request.
 * No I/O, no store; every function is a loop over bytes.
 */
#include "kb.h"

#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ---- */

int kb_utf8_valid(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        unsigned cp;
        if (c == 0) return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) n = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) n = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) n = 3, cp = c & 0x07;
        else return 0;
        if (len - i <= n) return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n + 1;
    }
    return 1;
}

static void put_utf8(strbuf *out, unsigned cp) {
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    char b[4];
    if (cp < 0x80) {
        b[0] = (char)cp;
        sb_add(out, b, 1);
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        sb_add(out, b, 2);
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        sb_add(out, b, 3);
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        sb_add(out, b, 4);
    }
}

/* ---- chunking ---- */

static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int kb_chunk(const char *text, size_t len, size_t size, size_t overlap, kb_span **spans,
             size_t *n, gp_err *err) {
    *spans = NULL;
    *n = 0;
    if (size < 8 || overlap >= size / 2)
        return gp_err_set(err, GP_EINVALID, "chunk size must be >= 8 and overlap < size / 2");
    /* byte offset of every character, plus len */
    size_t nc = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80) nc++;
    size_t *off = malloc((nc + 1) * sizeof *off);
    if (!off) return gp_err_set(err, GP_ENOMEM, NULL);
    for (size_t i = 0, c = 0; i < len; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80) off[c++] = i;
    off[nc] = len;
#define CH(ci) (text[off[ci]])
#define SP(ci) blank(CH(ci))
    size_t cap = 0, cnt = 0;
    kb_span *out = NULL;
    size_t start = 0;
    for (;;) {
        while (start < nc && SP(start)) start++;
        if (start >= nc) break;
        size_t end;
        int last = nc - start <= size;
        if (last) {
            end = nc;
        } else {
            size_t limit = start + size, lo = start + size / 2;
            size_t para = 0, sent = 0, word = 0;
            /* a break at e: the chunk is [start, e) and character e is a blank */
            for (size_t e = limit; e >= lo && e > start; e--) {
                if (!SP(e)) continue;
                if (!para && CH(e) == '\n' && e + 1 < nc && CH(e + 1) == '\n') para = e;
                if (!sent && strchr(".!?", CH(e - 1))) sent = e;
                if (!word) word = e;
                if (para) break;
            }
            end = para ? para : sent ? sent : word ? word : limit;
        }
        while (end > start && SP(end - 1)) end--;
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            kb_span *g = realloc(out, cap * sizeof *g);
            if (!g) {
                free(out);
                free(off);
                return gp_err_set(err, GP_ENOMEM, NULL);
            }
            out = g;
        }
        out[cnt++] = (kb_span){off[start], off[end], (int64_t)start, (int64_t)end};
        if (last) break;
        /* the next chunk starts about `overlap` characters back, at the start of a word */
        size_t next = end > overlap ? end - overlap : 0;
        if (next <= start) next = end;
        while (next < end && !(SP(next - 1) && !SP(next))) next++;
        start = next;
    }
#undef CH
#undef SP
    free(off);
    *spans = out;
    *n = cnt;
    return GP_OK;
}

/* ---- HTML ---- */

typedef struct textout {
    strbuf *sb;
    size_t base; /* where this document's text begins in sb */
    int pending; /* 0 none, 1 a space, 2 a line break, 3 a paragraph break */
} textout;

static void want(textout *t, int brk) {
    if (brk > t->pending) t->pending = brk;
}

static void emit(textout *t, const char *s, size_t n) {
    if (!n) return;
    if (t->sb->len > t->base && t->pending) {
        if (t->pending == 1) sb_addc(t->sb, ' ');
        else sb_adds(t->sb, t->pending == 2 ? "\n" : "\n\n");
    }
    t->pending = 0;
    sb_add(t->sb, s, n);
}

/* Text with runs of blanks collapsed. */
static void emit_text(textout *t, const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (blank(s[i])) {
            want(t, 1);
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !blank(s[j])) j++;
        emit(t, s + i, j - i);
        i = j;
    }
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int name_is(const char *name, size_t n, const char *const *list) {
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(*list, name, n)) return 1;
    return 0;
}

/* Decode the character reference at s (s[0] == '&'); returns bytes used, 0 if none. */
static size_t entity(const char *s, size_t n, strbuf *out) {
    static const struct {
        const char *name;
        unsigned cp;
    } named[] = {{"amp", '&'}, {"lt", '<'},     {"gt", '>'},     {"quot", '"'},
                 {"apos", '\''}, {"nbsp", 0xA0}, {"copy", 0xA9}, {"mdash", 0x2014},
                 {"ndash", 0x2013}, {"hellip", 0x2026}};
    size_t i = 1;
    if (i < n && s[i] == '#') {
        int hex = 0;
        unsigned long cp = 0;
        i++;
        if (i < n && (s[i] == 'x' || s[i] == 'X')) hex = 1, i++;
        size_t d0 = i;
        while (i < n && i - d0 < 8) {
            int c = lower((unsigned char)s[i]), v;
            if (c >= '0' && c <= '9') v = c - '0';
            else if (hex && c >= 'a' && c <= 'f') v = c - 'a' + 10;
            else break;
            cp = cp * (hex ? 16 : 10) + (unsigned long)v;
            i++;
        }
        if (i == d0) return 0;
        if (i < n && s[i] == ';') i++;
        put_utf8(out, cp > 0x10FFFF ? 0xFFFD : (unsigned)cp);
        return i;
    }
    size_t b = i;
    while (i < n && i - b < 10 && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
        i++;
    if (i >= n || s[i] != ';') return 0;
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
        if (strlen(named[k].name) == i - b && !memcmp(named[k].name, s + b, i - b)) {
            put_utf8(out, named[k].cp);
            return i + 1;
        }
    return 0;
}

/* Find `needle` (lower-case) in s[from..n) ignoring case; n when absent. */
static size_t find_ci(const char *s, size_t n, size_t from, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = from; i + m <= n; i++) {
        size_t k = 0;
        while (k < m && lower((unsigned char)s[i + k]) == needle[k]) k++;
        if (k == m) return i;
    }
    return n;
}

void kb_html_to_text(const char *h, size_t n, strbuf *out) {
    static const char *const para[] = {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6",
                                       "section", "article", "blockquote", "pre", "table",
                                       "ul", "ol", "dl", "title", "header", "footer", "main",
                                       "aside", "nav", "figure", "form", "body", "html", NULL};
    static const char *const line[] = {"br", "li", "tr", "dt", "dd", "hr", "figcaption",
                                       "caption", "option", NULL};
    static const char *const cell[] = {"td", "th", NULL};
    static const char *const skip[] = {"script", "style", "noscript", "template", "svg", NULL};
    textout t = {out, out->len, 0};
    strbuf tmp = SB_INIT;
    size_t i = 0;
    while (i < n) {
        char c = h[i];
        if (c == '<') {
            if (i + 3 < n && !memcmp(h + i, "<!--", 4)) {
                size_t e = find_ci(h, n, i + 4, "-->");
                i = e < n ? e + 3 : n;
                continue;
            }
            size_t j = i + 1;
            int closing = 0;
            if (j < n && h[j] == '/') closing = 1, j++;
            if (j < n && (h[j] == '!' || h[j] == '?')) {
                while (j < n && h[j] != '>') j++;
                i = j < n ? j + 1 : n;
                continue;
            }
            char name[16];
            size_t nl = 0;
            while (j < n && ((h[j] >= 'a' && h[j] <= 'z') || (h[j] >= 'A' && h[j] <= 'Z') ||
                             (h[j] >= '0' && h[j] <= '9'))) {
                if (nl < sizeof name) name[nl] = (char)lower((unsigned char)h[j]);
                nl++, j++;
            }
            if (nl == 0 || nl > sizeof name) {
                if (nl == 0) { /* a lone '<' is text */
                    emit_text(&t, "<", 1);
                    i++;
                    continue;
                }
                nl = 0; /* an unknown, overlong tag name: drop the tag */
            }
            /* to the end of the tag, quotes respected */
            char q = 0;
            int selfclose = 0;
            while (j < n) {
                if (q) {
                    if (h[j] == q) q = 0;
                } else if (h[j] == '"' || h[j] == '\'') {
                    q = h[j];
                } else if (h[j] == '>') {
                    selfclose = j > i && h[j - 1] == '/';
                    break;
                }
                j++;
            }
            i = j < n ? j + 1 : n;
            if (name_is(name, nl, para)) want(&t, 3);
            else if (name_is(name, nl, line)) want(&t, 2);
            else if (name_is(name, nl, cell)) want(&t, 1);
            if (!closing && !selfclose && name_is(name, nl, skip)) {
                char end[20] = "</";
                memcpy(end + 2, name, nl);
                end[2 + nl] = '\0';
                size_t e = find_ci(h, n, i, end);
                while (e < n && h[e] != '>') e++;
                i = e < n ? e + 1 : n;
            }
            continue;
        }
        if (c == '&') {
            sb_setlen(&tmp, 0);
            size_t used = entity(h + i, n - i, &tmp);
            if (used) {
                /* a no-break space is a blank for collapsing */
                if (tmp.len == 2 && (unsigned char)tmp.buf[0] == 0xC2 &&
                    (unsigned char)tmp.buf[1] == 0xA0)
                    want(&t, 1);
                else
                    emit(&t, tmp.buf, tmp.len);
                i += used;
                continue;
            }
        }
        size_t j = i + 1;
        while (j < n && h[j] != '<' && h[j] != '&') j++;
        emit_text(&t, h + i, j - i);
        i = j;
    }
    sb_release(&tmp);
}

/* ---- queries ---- */

static int wordbyte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

/*
 * The words of `q` (see kb_fts_query), lower-cased, at most KB_MAX_QUERY_TERMS,
 * duplicates dropped, each appended to `out` between `quote` characters and
 * separated by `sep`.  Words hold only ASCII letters and digits and
 * non-ASCII bytes, never a quote, so quoting them needs no escapes.
 */
static int query_words(const char *q, char quote, const char *sep, strbuf *out, gp_err *err) {
    size_t len = strlen(q);
    if (len > KB_MAX_QUERY_LEN)
        return gp_err_set(err, GP_EINVALID, "query is longer than %d bytes", KB_MAX_QUERY_LEN);
    /* words taken so far, lower-cased, as consecutive "word\0" entries */
    strbuf seen = SB_INIT;
    int terms = 0;
    size_t i = 0;
    while (i < len && terms < KB_MAX_QUERY_TERMS) {
        while (i < len && !wordbyte((unsigned char)q[i])) i++;
        size_t b = i;
        while (i < len && wordbyte((unsigned char)q[i])) i++;
        size_t wl = i - b;
        if (!wl || wl > 128) continue;
        char w[130];
        for (size_t k = 0; k < wl; k++) w[k] = (char)lower((unsigned char)q[b + k]);
        w[wl] = '\0';
        int dup = 0;
        for (size_t p = 0; p < seen.len && !dup; p += strlen(seen.buf + p) + 1)
            dup = !strcmp(seen.buf + p, w);
        if (dup) continue;
        sb_add(&seen, w, wl + 1);
        if (terms++) sb_adds(out, sep);
        sb_addc(out, quote);
        sb_add(out, w, wl);
        sb_addc(out, quote);
    }
    int ok = sb_ok(&seen);
    sb_release(&seen);
    if (!ok || !sb_ok(out)) return gp_err_set(err, GP_ENOMEM, NULL);
    if (!terms) return gp_err_set(err, GP_EINVALID, "the query has no words to search for");
    return GP_OK;
}

int kb_fts_query(const char *q, strbuf *out, gp_err *err) {
    return query_words(q, '"', " OR ", out, err);
}

int kb_ts_query(const char *q, strbuf *out, gp_err *err) {
    return query_words(q, '\'', " | ", out, err);
}

/* ---- RAG ---- */

void kb_rag_prompt(json_t *hits, strbuf *out) {
    size_t i;
    json_t *h;
    sb_adds(out, "Answer using the numbered sources below when they are relevant, and cite "
                 "them by number, like [1]. If they do not contain the answer, say so.\n\n"
                 "Sources:\n");
    json_array_foreach(hits, i, h) {
        sb_addf(out, "\n[%zu] %s / %s (chunk %lld):\n%s\n", i + 1,
                json_string_value(json_object_get(h, "kb")),
                json_string_value(json_object_get(h, "document")),
                (long long)json_integer_value(json_object_get(h, "chunk")),
                json_string_value(json_object_get(h, "text")));
    }
}

int kb_doc_name_valid(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > KB_DOC_NAME_MAX || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}
