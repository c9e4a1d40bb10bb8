/*
 * strbuf.h - growable, always NUL-terminated byte buffers.
 *
 * Invariants: after sb_init() (or SB_INIT), `buf` is never NULL and
 * buf[len] == '\0'.  If an allocation fails, the buffer enters a sticky
 * out-of-memory state: `oom` is set, later appends are no-ops, and the caller
 * checks sb_ok() once after building the string instead of after every append.
 *
 * Ownership: the strbuf owns `buf`.  sb_release() frees it and re-initialises
 * the struct; sb_detach() hands the heap string to the caller (free() it) and
 * re-initialises the struct.  Release/detach of an initialised buffer that never
 * grew is harmless.
 */
#ifndef GP_STRBUF_H
#define GP_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
    char *buf;    /* contents, NUL-terminated; points at a static "" until it grows */
    size_t len;   /* bytes used, excluding the NUL */
    size_t alloc; /* bytes allocated; 0 while buf is the static empty string */
    int oom;      /* sticky: an allocation failed */
} strbuf;

extern char sb__empty[1];
#define SB_INIT {sb__empty, 0, 0, 0}

/* Initialise an empty buffer (no allocation). */
void sb_init(strbuf *sb);

/* Free the contents and leave `sb` initialised and empty. NULL is a no-op. */
void sb_release(strbuf *sb);

/*
 * Return the contents as a heap string the caller must free(), and leave
 * `sb` empty.  Returns NULL if the buffer is in the out-of-memory state.
 */
char *sb_detach(strbuf *sb);

/* Ensure room for `extra` more bytes; returns 0, or -1 (and sets oom). */
int sb_grow(strbuf *sb, size_t extra);

/* Append bytes / a C string / one char / printf-formatted text. */
void sb_add(strbuf *sb, const void *data, size_t n);
void sb_adds(strbuf *sb, const char *s);
void sb_addc(strbuf *sb, char c);
void sb_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vaddf(strbuf *sb, const char *fmt, va_list ap);

/* Truncate to `len` bytes (len <= sb->len). */
void sb_setlen(strbuf *sb, size_t len);

/* Empty the buffer but keep its allocation. */
void sb_reset(strbuf *sb);

/* 1 if no allocation has failed since init/release, else 0. */
int sb_ok(const strbuf *sb);

/* Append `n` bytes as lower-case hex. */
void sb_addhex(strbuf *sb, const unsigned char *data, size_t n);

/*
 * Copy the C string `src` into the fixed buffer dst[0..size), cut to fit and
 * always NUL-terminated (size > 0).  Returns 1 when it was cut, else 0.  For
 * fixed-size fields whose cut is intended (no format-truncation warning).
 */
int sb_copy(char *dst, size_t size, const char *src);

#endif
