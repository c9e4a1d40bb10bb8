/*
 * gtime.c - clocks and RFC 3339 conversions (see gtime.h).
 */
#define _GNU_SOURCE
#include "gtime.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t gt_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t gt_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void gt_format_us(int64_t us, char *buf, size_t size) {
    int64_t sec = us / 1000000, frac = us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        sec -= 1;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
}

static int digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)**p)) return -1;
        v = v * 10 + (**p - '0');
        (*p)++;
    }
    *out = v;
    return 0;
}

int gt_parse_rfc3339(const char *s, int64_t *out_us) {
    int Y, M, D, h, m, sec;
    const char *p = s;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
        digits(&p, 2, &D))
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
        digits(&p, 2, &sec))
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return -1;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (isdigit((unsigned char)*p)) {
            if (nd < 6) frac = frac * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0) return -1;
        for (; nd < 6; nd++) frac *= 10;
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om)) return -1;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p) return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *out_us = ((int64_t)t - off) * 1000000 + frac;
    return 0;
}
