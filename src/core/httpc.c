/*
 * httpc.c - JSON over HTTP with libcurl (see httpc.h).
 */
#include "httpc.h"

#include "strbuf.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int httpc_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT) == 0 ? 0 : -1; }

static char *ca_file; /* --ca / GPUPOOL_CA, or NULL */

/*
 * Connections are kept: each thread has one libcurl handle, reset (curl_easy_reset keeps
 * its open connections) before each request, so a thread that calls the same server again
 * and again (an agent's loop heartbeating its nodes, a waiter's long polls) reuses one
 * keep-alive connection instead of a TCP connect and close per call - on both sides.  A
 * kept connection the server closed meanwhile is opened again by libcurl.  Freed when the
 * thread ends (the key's destructor) or at httpc_global_cleanup (the calling thread's).
 */
static pthread_key_t handle_key;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;

static void handle_free(void *h) { curl_easy_cleanup(h); }

static void handle_key_make(void) { (void)pthread_key_create(&handle_key, handle_free); }

/* This thread's handle, reset for a new request; NULL when out of memory. */
static CURL *handle(void) {
    pthread_once(&handle_once, handle_key_make);
    CURL *c = pthread_getspecific(handle_key);
    if (c) {
        curl_easy_reset(c);
        return c;
    }
    if (!(c = curl_easy_init())) return NULL;
    if (pthread_setspecific(handle_key, c) != 0) {
        curl_easy_cleanup(c);
        return NULL;
    }
    return c;
}

void httpc_global_cleanup(void) {
    pthread_once(&handle_once, handle_key_make);
    CURL *c = pthread_getspecific(handle_key);
    if (c) {
        pthread_setspecific(handle_key, NULL);
        curl_easy_cleanup(c);
    }
    curl_global_cleanup();
    httpc_set_ca(NULL);
}

void httpc_set_ca(const char *path) {
    free(ca_file);
    ca_file = path ? strdup(path) : NULL;
}

static int tls_failure(CURLcode cc) {
    return cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
           cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_SSL_CERTPROBLEM;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    strbuf *sb = ud;
    sb_add(sb, p, sz * n);
    return sb_ok(sb) ? sz * n : 0;
}

/* How a request ended, for httpc_json_failover(). */
enum {
    SENT_ANSWERED, /* an HTTP answer (any status) */
    SENT_UNSENT,   /* never sent: safe to repeat elsewhere, any method */
    SENT_NOANSWER, /* the connection broke before any answer: repeat only GET/HEAD */
    SENT_SILENT,   /* sent, and no answer in time (a hung server): repeat only GET/HEAD */
    SENT_FATAL     /* anything else: report, do not repeat */
};

static int transport_kind(CURL *c, CURLcode cc) {
    curl_off_t pre = 0;
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT: return SENT_UNSENT;
    case CURLE_OPERATION_TIMEDOUT:
        /* pre-transfer time stays 0 until connect (and TLS) completed */
        if (curl_easy_getinfo(c, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK && pre == 0)
            return SENT_UNSENT;
        return SENT_SILENT;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR: return SENT_NOANSWER;
    default: return SENT_FATAL;
    }
}

/*
 * One request to `base` (see httpc_json()).  *kind says how it ended; on a
 * transport failure `why` gets libcurl's reason and `err` the full message.
 */
static int request(const char *base, const char *path, const char *method, const char *token,
                   json_t *body, long timeout_s, long *status, json_t **resp, int *kind,
                   char why[CURL_ERROR_SIZE], gp_err *err) {
    strbuf url = SB_INIT, out = SB_INIT, auth = SB_INIT;
    char *payload = NULL;
    int rc = GP_OK;
    *resp = NULL;
    *status = 0;
    *kind = SENT_FATAL;
    why[0] = '\0';
    CURL *c = handle();
    if (!c) return gp_err_set(err, GP_ENOMEM, "cannot initialise the HTTP client");
    sb_adds(&url, base);
    while (url.len && url.buf[url.len - 1] == '/') sb_setlen(&url, url.len - 1);
    sb_adds(&url, path);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    if (token) {
        sb_addf(&auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(hdrs, auth.buf);
    }
    curl_easy_setopt(c, CURLOPT_URL, url.buf);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s : 120L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gpupool");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    if (body) {
        payload = json_dumps(body, JSON_COMPACT);
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload ? payload : "");
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(why, CURL_ERROR_SIZE, "%s", ebuf[0] ? ebuf : curl_easy_strerror(cc));
        *kind = tls_failure(cc) ? SENT_FATAL : transport_kind(c, cc);
    }
    if (cc != CURLE_OK && tls_failure(cc)) {
        rc = gp_err_set(err, GP_EIO, "TLS with %s failed: %s (%s)", base, why,
                        ca_file ? "check the --ca file" : "trust its CA with --ca FILE or GPUPOOL_CA");
    } else if (cc != CURLE_OK) {
        rc = gp_err_set(err, GP_EIO, "cannot reach %s: %s", base, why);
    } else {
        *kind = SENT_ANSWERED;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        json_t *j = out.len ? json_loadb(out.buf, out.len, JSON_DECODE_ANY, NULL) : json_null();
        if (!j && out.len) j = json_stringn(out.buf, out.len);
        *resp = j;
    }
    /* the handle keeps no pointer into what is freed here past the next reset */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, NULL);
    curl_slist_free_all(hdrs);
    if (auth.len) memset(auth.buf, 0, auth.len);
    if (payload) memset(payload, 0, strlen(payload));
    sb_release(&auth);
    sb_release(&url);
    sb_release(&out);
    free(payload);
    return rc;
}

int httpc_json(const char *base, const char *path, const char *method, const char *token,
               json_t *body, long timeout_s, long *status, json_t **resp, gp_err *err) {
    int kind;
    char why[CURL_ERROR_SIZE];
    return request(base, path, method, token, body, timeout_s, status, resp, &kind, why, err);
}

/* ---- several servers ---- */

void httpc_servers_release(httpc_servers *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->urls[i]);
    free(s->urls);
    s->urls = NULL;
    s->n = s->cur = 0;
}

/* 1 if [p, p+n) is "http://HOST…" or "https://HOST…" (scheme in any case). */
static int is_http_url(const char *p, size_t n) {
    size_t k = n >= 7 && strncasecmp(p, "http://", 7) == 0    ? 7
               : n >= 8 && strncasecmp(p, "https://", 8) == 0 ? 8
                                                              : 0;
    return k && k < n && p[k] != '/';
}

int httpc_servers_parse(const char *list, httpc_servers *out, gp_err *err) {
    httpc_servers_release(out);
    if (!list) return gp_err_set(err, GP_EINVALID, "no server address");
    size_t count = 1;
    for (const char *p = list; *p; p++) count += *p == ',';
    out->urls = calloc(count, sizeof *out->urls);
    if (!out->urls) return gp_err_set(err, GP_ENOMEM, NULL);
    const char *p = list;
    for (size_t i = 0; i < count; i++) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *b = p, *e = end;
        while (b < e && (*b == ' ' || *b == '\t')) b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t')) e--;
        size_t n = (size_t)(e - b);
        int rc = GP_OK;
        if (n == 0)
            rc = count == 1 ? gp_err_set(err, GP_EINVALID, "the server address is empty")
                            : gp_err_set(err, GP_EINVALID,
                                         "address %zu of the server list '%.120s' is empty",
                                         i + 1, list);
        else if (!is_http_url(b, n) || memchr(b, ' ', n) || memchr(b, '\t', n))
            rc = gp_err_set(err, GP_EINVALID,
                            "server address '%.*s' is not an http:// or https:// URL",
                            (int)(n > 120 ? 120 : n), b);
        else if (!(out->urls[i] = strndup(b, n)))
            rc = gp_err_set(err, GP_ENOMEM, NULL);
        if (rc) {
            out->n = i + 1; /* frees what was copied */
            httpc_servers_release(out);
            return rc;
        }
        p = end + 1;
    }
    out->n = count;
    return GP_OK;
}

static int idempotent(const char *method) {
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

int httpc_json_failover(httpc_servers *s, const char *path, const char *method,
                        const char *token, json_t *body, long timeout_s, long *status,
                        json_t **resp, gp_err *err) {
    *resp = NULL;
    *status = 0;
    if (!s || !s->n) return gp_err_set(err, GP_EINVALID, "no server address");
    strbuf tried = SB_INIT;
    gp_err e = GP_ERR_INIT;
    char why[CURL_ERROR_SIZE] = "";
    int rc = GP_EIO, kind = SENT_FATAL;
    size_t k;
    for (k = 0; k < s->n; k++) {
        size_t i = (s->cur + k) % s->n;
        rc = request(s->urls[i], path, method, token, body, timeout_s, status, resp, &kind, why,
                     &e);
        if (kind == SENT_ANSWERED) {
            s->cur = i;
            break;
        }
        if (k) sb_adds(&tried, ", ");
        sb_adds(&tried, s->urls[i]);
        int unanswered = kind == SENT_NOANSWER || kind == SENT_SILENT;
        if (kind == SENT_UNSENT || (unanswered && idempotent(method))) continue;
        if (unanswered && s->n > 1) {
            /* the server may have applied it: never send it twice; but a server that
             * hung or broke off is not asked first next time */
            char first[sizeof e.msg];
            memcpy(first, e.msg, sizeof first);
            rc = gp_err_set(&e, rc, "%.180s (%s not repeated on another server)", first, method);
            s->cur = (i + 1) % s->n;
        }
        break;
    }
    if (k == s->n && s->n > 1)
        rc = gp_err_set(&e, GP_EIO, "cannot reach any server (tried %s): %s", tried.buf, why);
    sb_release(&tried);
    if (rc && err) *err = e;
    return rc;
}
