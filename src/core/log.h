/*
 * log.h - structured one-line logging to stderr.
 *
 * Each line is `ts=<RFC3339> level=<lvl> msg=<text> key=value ...`; values
 * with spaces, quotes or '=' are quoted.  Thread-safe (one write() per line).
 * Never pass secrets (tokens, passwords, API keys) to these functions.
 */
#ifndef GP_LOG_H
#define GP_LOG_H

enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3, LOG_OFF = 4 };

/* Set the minimum level printed (default LOG_INFO). */
void log_set_level(int level);

/* Parse "debug|info|warn|error|off"; returns -1 if unknown. */
int log_level_parse(const char *s);

/*
 * Log `msg` with key/value pairs given as a NULL-terminated list of
 * (const char *key, const char *value) pairs.  NULL values are skipped.
 */
void log_kv(int level, const char *msg, ...);

/* printf-style convenience: the formatted text becomes msg. */
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
