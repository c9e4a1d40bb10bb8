/*
 * strbuf.c - growable string buffers (see strbuf.h for the contract).
 */
#include "strbuf.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char sb__empty[1];

void sb_init(strbuf *sb) {
    sb->buf = sb__empty;
    sb->len = 0;
    sb->alloc = 0;
    sb->oom = 0;
}

void sb_release(strbuf *sb) {
    if (!sb) return;
    if (sb->alloc) free(sb->buf);
    sb_init(sb);
}

char *sb_detach(strbuf *sb) {
    char *out;
    if (sb->oom) {
        sb_release(sb);
        return NULL;
    }
    if (sb->alloc) {
        out = sb->buf;
    } else {
        out = malloc(1);
        if (out) out[0] = '\0';
    }
    sb_init(sb);
    return out;
}

int sb_grow(strbuf *sb, size_t extra) {
    if (sb->oom) return -1;
    if (extra > ((size_t)-1) / 2 - sb->len - 1) {
        sb->oom = 1;
        return -1;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->alloc) return 0;
    size_t n = sb->alloc ? sb->alloc : 64;
    while (n < need) n *= 2;
    char *p = realloc(sb->alloc ? sb->buf : NULL, n);
    if (!p) {
        sb->oom = 1;
        return -1;
    }
    if (!sb->alloc) p[0] = '\0';
    sb->buf = p;
    sb->alloc = n;
    return 0;
}

void sb_add(strbuf *sb, const void *data, size_t n) {
    if (n == 0 || sb_grow(sb, n) < 0) return;
    memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sb_adds(strbuf *sb, const char *s) { sb_add(sb, s, strlen(s)); }

void sb_addc(strbuf *sb, char c) { sb_add(sb, &c, 1); }

void sb_vaddf(strbuf *sb, const char *fmt, va_list ap) {
    va_list cp;
    if (sb->oom) return;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0) {
        sb->oom = 1;
        return;
    }
    if (sb_grow(sb, (size_t)n) < 0) return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_addf(strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(sb, fmt, ap);
    va_end(ap);
}

void sb_setlen(strbuf *sb, size_t len) {
    assert(len <= sb->len);
    if (!sb->alloc) return;
    sb->len = len;
    sb->buf[len] = '\0';
}

void sb_reset(strbuf *sb) { sb_setlen(sb, 0); }

int sb_ok(const strbuf *sb) { return !sb->oom; }

void sb_addhex(strbuf *sb, const unsigned char *data, size_t n) {
    static const char hx[] = "0123456789abcdef";
    if (sb_grow(sb, n * 2) < 0) return;
    for (size_t i = 0; i < n; i++) {
        sb->buf[sb->len++] = hx[data[i] >> 4];
        sb->buf[sb->len++] = hx[data[i] & 15];
    }
    sb->buf[sb->len] = '\0';
}

int sb_copy(char *dst, size_t size, const char *src) {
    assert(size > 0);
    size_t n = strnlen(src, size);
    int cut = n == size;
    if (cut) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return cut;
}
