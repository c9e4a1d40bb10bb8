/*
 * gtime.h - wall-clock time in microseconds and RFC 3339 (UTC) text.
 *
 * All stored times are int64 microseconds since the Unix epoch, UTC.
 * Formatting always yields "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (27 chars + NUL).
 */
#ifndef GP_GTIME_H
#define GP_GTIME_H

#include <stddef.h>
#include <stdint.h>

#define GT_RFC3339_LEN 32 /* buffer size that always fits gt_format_us() output */

/* Current wall-clock time, microseconds since the epoch. */
int64_t gt_now_us(void);

/* Monotonic clock in microseconds (for durations). */
int64_t gt_mono_us(void);

/* Format `us` as RFC 3339 UTC with microseconds into buf (size >= GT_RFC3339_LEN). */
void gt_format_us(int64_t us, char *buf, size_t size);

/*
 * Parse RFC 3339 ("2026-12-01T10:00:00Z", optional fraction, "Z" or ±HH:MM
 * offset) into microseconds.  Returns 0 on success, -1 on malformed input.
 */
int gt_parse_rfc3339(const char *s, int64_t *out_us);

#endif
