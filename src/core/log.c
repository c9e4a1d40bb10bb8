/*
 * log.c - structured one-line logging (see log.h).
 */
#include "log.h"

#include "gtime.h"
#include "strbuf.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static int min_level = LOG_INFO;

static const char *level_names[] = {"debug", "info", "warn", "error", "off"};

void log_set_level(int level) { min_level = level; }

int log_level_parse(const char *s) {
    for (int i = 0; i <= LOG_OFF; i++)
        if (strcmp(s, level_names[i]) == 0) return i;
    return -1;
}

static void add_value(strbuf *sb, const char *v) {
    int quote = (*v == '\0') || strpbrk(v, " \"=\t\n\r\\") != NULL;
    if (!quote) {
        sb_adds(sb, v);
        return;
    }
    sb_addc(sb, '"');
    for (; *v; v++) {
        unsigned char c = (unsigned char)*v;
        if (c == '"' || c == '\\') {
            sb_addc(sb, '\\');
            sb_addc(sb, (char)c);
        } else if (c == '\n') {
            sb_adds(sb, "\\n");
        } else if (c < 0x20) {
            sb_addf(sb, "\\x%02x", c);
        } else {
            sb_addc(sb, (char)c);
        }
    }
    sb_addc(sb, '"');
}

static void emit(int level, const char *msg, va_list kv) {
    char ts[40];
    strbuf sb = SB_INIT;
    gt_format_us(gt_now_us(), ts, sizeof ts);
    sb_addf(&sb, "ts=%s level=%s msg=", ts, level_names[level]);
    add_value(&sb, msg);
    for (;;) {
        const char *k = va_arg(kv, const char *);
        if (!k) break;
        const char *v = va_arg(kv, const char *);
        if (!v) continue;
        sb_addc(&sb, ' ');
        sb_adds(&sb, k);
        sb_addc(&sb, '=');
        add_value(&sb, v);
    }
    sb_addc(&sb, '\n');
    if (sb_ok(&sb)) {
        ssize_t r = write(2, sb.buf, sb.len);
        (void)r;
    }
    sb_release(&sb);
}

void log_kv(int level, const char *msg, ...) {
    if (level < min_level || level >= LOG_OFF) return;
    va_list ap;
    va_start(ap, msg);
    emit(level, msg, ap);
    va_end(ap);
}

static void emit_none(int level, const char *msg, ...) {
    va_list ap;
    va_start(ap, msg);
    emit(level, msg, ap);
    va_end(ap);
}

void log_msg(int level, const char *fmt, ...) {
    if (level < min_level || level >= LOG_OFF) return;
    strbuf sb = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&sb, fmt, ap);
    va_end(ap);
    emit_none(level, sb_ok(&sb) ? sb.buf : "(out of memory)", (const char *)NULL);
    sb_release(&sb);
}
