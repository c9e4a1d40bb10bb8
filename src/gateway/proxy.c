/*
 * proxy.c - one request to an upstream model endpoint, read as it arrives
 * (see gateway.h, "calls").
 *
 * A call is a libcurl easy handle driven by its own multi handle, so the
 * caller can wait for the status line and headers (to answer with the
 * upstream's status), then pull the body piece by piece as the upstream
 * sends it - which is what streaming needs - all on the caller's thread.
 * Connections are kept in a cache shared by every call (CURLSH), so
 * consecutive requests to one upstream reuse their TCP connections; and
 * each thread keeps its last multi and easy handles for its next call
 * (a connection's thread serves its keep-alive requests one after another),
 * freed when the thread ends.
 */
#include "gateway.h"

#include "../core/strbuf.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gw_call {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    strbuf in;          /* body bytes received, not yet read */
    size_t off;         /* read position in `in` */
    int headers_done;   /* the final header block has ended */
    int done;           /* transfer finished */
    CURLcode result;
    long status;
    char content_type[128];
    char error[CURL_ERROR_SIZE];
};

/* CA file for https upstreams (--upstream-ca), or NULL: the system's store */
static char *upstream_ca;

void gw_set_upstream_ca(const char *path) {
    free(upstream_ca);
    upstream_ca = path ? strdup(path) : NULL;
}

/* ---- the shared connection cache ---- */

static CURLSH *share;
static pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
static pthread_once_t share_once = PTHREAD_ONCE_INIT;

static void lock_cb(CURL *h, curl_lock_data d, curl_lock_access a, void *u) {
    (void)h, (void)a, (void)u;
    pthread_mutex_lock(&share_mu[d]);
}
static void unlock_cb(CURL *h, curl_lock_data d, void *u) {
    (void)h, (void)u;
    pthread_mutex_unlock(&share_mu[d]);
}

/* ---- per-thread handles ---- */

typedef struct handles {
    CURLM *multi;
    CURL *easy;
} handles;

static pthread_key_t handles_key;

static void handles_free(void *p) {
    handles *h = p;
    if (!h) return;
    if (h->easy) curl_easy_cleanup(h->easy);
    if (h->multi) curl_multi_cleanup(h->multi);
    free(h);
}

static void share_init(void) {
    pthread_key_create(&handles_key, handles_free);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&share_mu[i], NULL);
    share = curl_share_init();
    if (!share) return;
    curl_share_setopt(share, CURLSHOPT_LOCKFUNC, lock_cb);
    curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, unlock_cb);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
}

/* ---- callbacks ---- */

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
    gw_call *c = ud;
    c->headers_done = 1;
    /* drop what the reader has consumed before growing */
    if (c->off && c->off == c->in.len) {
        sb_setlen(&c->in, 0);
        c->off = 0;
    }
    sb_add(&c->in, p, sz * n);
    return sb_ok(&c->in) ? sz * n : 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
    gw_call *c = ud;
    size_t len = sz * n;
    if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
        c->content_type[0] = '\0'; /* a new header block (after a 1xx) */
        return len;
    }
    if (len <= 2 && (p[0] == '\r' || p[0] == '\n')) {
        long code = 0;
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) c->headers_done = 1;
        return len;
    }
    if (len > 13 && !strncasecmp(p, "content-type:", 13)) {
        const char *v = p + 13;
        size_t vl = len - 13;
        while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
        if (vl >= sizeof c->content_type) vl = sizeof c->content_type - 1;
        memcpy(c->content_type, v, vl);
        c->content_type[vl] = '\0';
    }
    return len;
}

/* Drive the transfer once, waiting up to `wait_ms` for activity. */
static void pump(gw_call *c, int wait_ms) {
    int running = 0;
    curl_multi_perform(c->multi, &running);
    if (running && wait_ms > 0) {
        curl_multi_poll(c->multi, NULL, 0, wait_ms, NULL);
        curl_multi_perform(c->multi, &running);
    }
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left)))
        if (m->msg == CURLMSG_DONE) {
            c->done = 1;
            c->result = m->data.result;
        }
    if (!running) c->done = 1;
}

int gw_call_start(const gw_endpoint *ep, const char *path, const char *body, size_t len,
                  int timeout_s, gw_call **out, gp_err *err) {
    pthread_once(&share_once, share_init);
    *out = NULL;
    gw_call *c = calloc(1, sizeof *c);
    if (!c) return gp_err_set(err, GP_ENOMEM, NULL);
    sb_init(&c->in);
    handles *h = pthread_getspecific(handles_key);
    if (h && h->multi && h->easy) {
        /* this thread's handles from its previous call, options cleared */
        c->multi = h->multi;
        c->easy = h->easy;
        h->multi = NULL;
        h->easy = NULL;
        curl_easy_reset(c->easy);
    } else {
        c->multi = curl_multi_init();
        c->easy = curl_easy_init();
    }
    if (!c->multi || !c->easy) {
        gw_call_free(c);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    char url[768];
    snprintf(url, sizeof url, "%s%s", ep->base, path);
    c->hdrs = curl_slist_append(c->hdrs, body ? "Content-Type: application/json" : "Accept: */*");
    c->hdrs = curl_slist_append(c->hdrs, "Expect:");
    CURL *e = c->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->error);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)(timeout_s > 0 ? timeout_s : 300));
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    /* https upstreams are verified (peer and host name) against the system's store */
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (upstream_ca) curl_easy_setopt(e, CURLOPT_CAINFO, upstream_ca);
    if (share) curl_easy_setopt(e, CURLOPT_SHARE, share);
    curl_multi_add_handle(c->multi, e);
    while (!c->headers_done && !c->done) pump(c, 1000);
    if (c->done && !c->headers_done) {
        /* no answer at all: the caller may try another endpoint */
        int rc = gp_err_set(err, GP_EIO, "upstream %s: %s", ep->base,
                            c->error[0] ? c->error : curl_easy_strerror(c->result));
        gw_call_free(c);
        return rc;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &c->status);
    *out = c;
    return GP_OK;
}

long gw_call_status(const gw_call *c) { return c->status; }

const char *gw_call_content_type(const gw_call *c) {
    return c->content_type[0] ? c->content_type : "application/json";
}

long gw_call_read(gw_call *c, char *buf, size_t max) {
    while (c->off == c->in.len && !c->done) pump(c, 1000);
    if (c->off < c->in.len) {
        size_t n = c->in.len - c->off;
        if (n > max) n = max;
        memcpy(buf, c->in.buf + c->off, n);
        c->off += n;
        return (long)n;
    }
    return c->result == CURLE_OK ? 0 : -1;
}

int gw_call_body(gw_call *c, strbuf *out, size_t max, gp_err *err) {
    char buf[16384];
    long n;
    while ((n = gw_call_read(c, buf, sizeof buf)) > 0) {
        if (out->len + (size_t)n > max) return gp_err_set(err, GP_ETOOLARGE, "upstream answer too large");
        sb_add(out, buf, (size_t)n);
    }
    if (!sb_ok(out)) return gp_err_set(err, GP_ENOMEM, NULL);
    if (n < 0) return gp_err_set(err, GP_EIO, "upstream: %s", gw_call_error(c));
    return GP_OK;
}

const char *gw_call_error(const gw_call *c) {
    return c->error[0] ? c->error : curl_easy_strerror(c->result);
}

void gw_call_free(gw_call *c) {
    if (!c) return;
    if (c->multi && c->easy) curl_multi_remove_handle(c->multi, c->easy);
    /* keep the handles for this thread's next call */
    handles *h = pthread_getspecific(handles_key);
    if (!h && (h = calloc(1, sizeof *h)) && pthread_setspecific(handles_key, h) != 0) {
        free(h);
        h = NULL;
    }
    if (h && !h->multi && !h->easy && c->multi && c->easy) {
        /* the request's header list and error buffer go with the call */
        curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
        h->multi = c->multi;
        h->easy = c->easy;
        c->multi = NULL;
        c->easy = NULL;
    }
    if (c->easy) curl_easy_cleanup(c->easy);
    if (c->multi) curl_multi_cleanup(c->multi);
    curl_slist_free_all(c->hdrs);
    sb_release(&c->in);
    free(c);
}
