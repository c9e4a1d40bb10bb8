/*
 * proxy.c - one request to an upstream model endpoint, read as it arrives
 * (see gateway.h, "calls").
 *
 * A call is a libcurl easy handle driven by its own multi handle, so the
 * caller can wait for the status line and headers (to answer with the
 * upstream's status), then pull the body piece by piece as the upstream
 * sends it - which is what streaming needs - all on the caller's thread.
 * Every socket is checked against the address rules once resolved
 * (open_socket), no redirect is followed and no proxy used.
 * Each thread keeps its last multi and easy handles for its next call, and
 * with them the multi handle's connection cache, so consecutive requests a
 * worker thread makes to one upstream reuse their TCP connections; freed
 * when the thread ends.  A kept easy handle keeps its options too: a call
 * sets only what is its own (URL, body, timeout, its callbacks' data), not
 * every option again after a curl_easy_reset, and the two header lists are
 * made once for the process (docs/gateway.md, "Where a request's time goes").  Job endpoints and URL endpoints have handles of
 * their own (see "where endpoints may point").  Only the DNS cache is
 * shared between threads (CURLSH): libcurl 7.x cannot share a connection
 * cache between concurrent threads safely (its documented known bug; a
 * gateway bench crashed in curl_multi_perform with one shared).
 */
#include "gateway.h"

#include "../core/gtime.h"
#include "../core/strbuf.h"
#include "gw_metrics.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct gw_call {
    CURLM *multi;
    CURL *easy;
    strbuf in;          /* body bytes received, not yet read */
    size_t off;         /* read position in `in` */
    int headers_done;   /* the final header block has ended */
    int done;           /* transfer finished */
    CURLcode result;
    long status;
    char content_type[128];
    char error[CURL_ERROR_SIZE];
    int job;             /* a job's endpoint (gateway.h, "where endpoints may point"): the
                          * thread's handles of that kind, never the other's connections */
    char refused[200];   /* why a connection was refused by the address rules */
    int64_t first_mono;  /* monotonic time of the first body byte (0: none yet), gw_metrics.h */
};

/* CA file for https upstreams (--upstream-ca), or NULL: the system's store */
static char *upstream_ca;

void gw_set_upstream_ca(const char *path) {
    free(upstream_ca);
    upstream_ca = path ? strdup(path) : NULL;
}

/* ---- where endpoints may point ---- */

/* An address as 16 bytes (IPv4 as ::ffff:a.b.c.d), and a CIDR of that form. */
typedef struct cidr {
    unsigned char a[16];
    int bits;
} cidr;

#define MAX_ALLOW 64
static cidr allow[MAX_ALLOW];
static int nallow;
static unsigned char self_addr[16];
static int self_set, self_any, self_port;
/* the allow-list and the own address are set at start (the own port once the server
 * listens) while requests may already check endpoints: read and written under this lock */
static pthread_rwlock_t addr_lock = PTHREAD_RWLOCK_INITIALIZER;

static void v4_mapped(const unsigned char v4[4], unsigned char out[16]) {
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    memcpy(out + 12, v4, 4);
}

/* Parse a numeric address (IPv4 in any form inet_aton takes, IPv6, "[v6]"). 0 ok. */
static int parse_addr(const char *text, unsigned char out[16]) {
    char buf[80];
    size_t n = strlen(text);
    if (n >= sizeof buf || !n) return -1;
    if (text[0] == '[' && text[n - 1] == ']') {
        memcpy(buf, text + 1, n - 2);
        buf[n - 2] = '\0';
    } else {
        memcpy(buf, text, n + 1);
    }
    struct in6_addr a6;
    struct in_addr a4;
    if (inet_pton(AF_INET6, buf, &a6) == 1) {
        memcpy(out, &a6, 16);
        return 0;
    }
    if (inet_aton(buf, &a4)) {
        v4_mapped((const unsigned char *)&a4, out);
        return 0;
    }
    return -1;
}

static int in_cidr(const unsigned char a[16], const unsigned char net[16], int bits) {
    int full = bits / 8, rest = bits % 8;
    if (memcmp(a, net, (size_t)full)) return 0;
    if (!rest) return 1;
    unsigned char m = (unsigned char)(0xff << (8 - rest));
    return (a[full] & m) == (net[full] & m);
}

static int is_v4(const unsigned char a[16]) {
    static const unsigned char pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(a, pre, 12);
}

/* Which refused class an address is in, or NULL. */
static const char *refused_class(const unsigned char a[16]) {
    static const unsigned char zero[16] = {0};
    if (is_v4(a)) {
        const unsigned char *v = a + 12;
        if (v[0] == 127) return "a loopback address";
        if (v[0] == 0) return "an unspecified address";
        if (v[0] == 169 && v[1] == 254) return "a link-local address (cloud metadata among them)";
        if (v[0] >= 224) return "a multicast or broadcast address";
        if ((v[0] == 100 && v[1] == 100 && v[2] == 100 && v[3] == 200) ||
            (v[0] == 168 && v[1] == 63 && v[2] == 129 && v[3] == 16))
            return "a cloud metadata address";
        return NULL;
    }
    if (!memcmp(a, zero, 15) && a[15] == 1) return "a loopback address";
    if (!memcmp(a, zero, 16)) return "an unspecified address";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return "a link-local address";
    if (a[0] == 0xff) return "a multicast address";
    /* fd00:ec2::254 (AWS's metadata over IPv6) */
    static const unsigned char aws6[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
    if (!memcmp(a, aws6, 16)) return "a cloud metadata address";
    /* IPv4 compatible (::a.b.c.d) and NAT64 (64:ff9b::/96) forms of an IPv4 address */
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (!memcmp(a, zero, 12) || !memcmp(a, nat64, 12)) {
        unsigned char m[16];
        v4_mapped(a + 12, m);
        return refused_class(m);
    }
    return NULL;
}

int gw_set_endpoint_allow(const char *cidrs, gp_err *err) {
    cidr tmp[MAX_ALLOW];
    int n = 0;
    const char *p = cidrs ? cidrs : "";
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[96];
        const char *b = p, *e = p + len;
        while (b < e && (*b == ' ' || *b == '\t')) b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t')) e--;
        p += len + (p[len] == ',');
        if (b == e) continue;
        if ((size_t)(e - b) >= sizeof item || n == MAX_ALLOW)
            return gp_err_set(err, GP_EINVALID, "--endpoint-allow: too long (at most %d CIDRs)",
                              MAX_ALLOW);
        memcpy(item, b, (size_t)(e - b));
        item[e - b] = '\0';
        char *slash = strchr(item, '/');
        long bits = -1;
        if (slash) {
            char *end;
            *slash = '\0';
            bits = strtol(slash + 1, &end, 10);
            if (!slash[1] || *end) bits = -2;
        }
        unsigned char a[16];
        struct in6_addr a6;
        struct in_addr a4;
        int v6 = inet_pton(AF_INET6, item, &a6) == 1, v4 = !v6 && inet_pton(AF_INET, item, &a4) == 1;
        if (v6) memcpy(a, &a6, 16);
        else if (v4) v4_mapped((const unsigned char *)&a4, a);
        if ((!v4 && !v6) || bits == -2 || bits > (v4 ? 32 : 128))
            return gp_err_set(err, GP_EINVALID,
                              "--endpoint-allow: '%s%s%s' is not an address or CIDR (10.0.0.0/8, ::1/128)",
                              item, slash ? "/" : "", slash ? slash + 1 : "");
        tmp[n].bits = bits < 0 ? 128 : (int)bits + (v4 ? 96 : 0);
        memcpy(tmp[n].a, a, 16);
        n++;
    }
    pthread_rwlock_wrlock(&addr_lock);
    memcpy(allow, tmp, sizeof tmp);
    nallow = n;
    pthread_rwlock_unlock(&addr_lock);
    return GP_OK;
}

static void set_self_locked(const char *host, int port) {
    self_set = 0;
    if (!host) return;
    self_port = port;
    self_any = !*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "[::]") ||
               !strcmp(host, "*");
    if (self_any || parse_addr(host, self_addr) == 0) self_set = 1;
    else if (!strcasecmp(host, "localhost")) {
        unsigned char lo[4] = {127, 0, 0, 1};
        v4_mapped(lo, self_addr);
        self_set = 1;
    }
}

void gw_set_self_address(const char *host, int port) {
    pthread_rwlock_wrlock(&addr_lock);
    set_self_locked(host, port);
    pthread_rwlock_unlock(&addr_lock);
}

/* Is `a` the control plane's own listen address (port included)?  Under addr_lock. */
static int is_self(const unsigned char a[16], int port) {
    if (!self_set || port != self_port) return 0;
    if (!memcmp(a, self_addr, 16)) return 1;
    if (!self_any) return 0;
    /* a server listening on every address: any address of this host */
    if (refused_class(a)) return 1;
    struct ifaddrs *ifs = NULL;
    int found = 0;
    if (getifaddrs(&ifs) != 0) return 1; /* cannot tell: refuse */
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        unsigned char b[16];
        if (!i->ifa_addr) continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            v4_mapped((const unsigned char *)&((const struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, b);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            memcpy(b, &((const struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, 16);
        } else {
            continue;
        }
        found = !memcmp(a, b, 16);
    }
    freeifaddrs(ifs);
    return found;
}

static int check_bytes_locked(const unsigned char a[16], const char *shown, int port, int job,
                              char *why, size_t whylen) {
    if (is_self(a, port)) {
        snprintf(why, whylen, "%s port %d is the control plane's own address", shown, port);
        return -1;
    }
    if (job) return 0;
    const char *cls = refused_class(a);
    if (!cls) return 0;
    for (int i = 0; i < nallow; i++)
        if (in_cidr(a, allow[i].a, allow[i].bits)) return 0;
    snprintf(why, whylen,
             "%s is %s, where model endpoints may not point (ops may allow it with --endpoint-allow)",
             shown, cls);
    return -1;
}

static int check_bytes(const unsigned char a[16], const char *shown, int port, int job, char *why,
                       size_t whylen) {
    pthread_rwlock_rdlock(&addr_lock);
    int rc = check_bytes_locked(a, shown, port, job, why, whylen);
    pthread_rwlock_unlock(&addr_lock);
    return rc;
}

int gw_addr_check(const char *addr, int port, int job, gp_err *err) {
    unsigned char a[16];
    char why[200];
    if (!addr || parse_addr(addr, a))
        return gp_err_set(err, GP_EINVALID, "'%.80s' is not a numeric address", addr ? addr : "");
    if (check_bytes(a, addr, port, job, why, sizeof why))
        return gp_err_set(err, GP_EINVALID, "%s", why);
    return GP_OK;
}

int gw_url_check(const char *url, gp_err *err) {
    const char *host = strstr(url, "://");
    if (!host) return gp_err_set(err, GP_EINVALID, "url must be an http:// or https:// base URL");
    int https = !strncasecmp(url, "https", 5);
    host += 3;
    size_t hl = strcspn(host, "/");
    char h[300];
    if (hl >= sizeof h) return gp_err_set(err, GP_EINVALID, "url: host too long");
    memcpy(h, host, hl);
    h[hl] = '\0';
    int port = https ? 443 : 80;
    char *colon = h[0] == '[' ? strstr(h, "]:") : strrchr(h, ':');
    if (colon && (h[0] != '[' || colon[0] == ']')) {
        char *pp = colon[0] == ']' ? colon + 2 : colon + 1;
        char *end;
        long v = strtol(pp, &end, 10);
        if (!*pp || *end || v < 1 || v > 65535)
            return gp_err_set(err, GP_EINVALID, "url: the port must be 1..65535");
        port = (int)v;
        colon[colon[0] == ']' ? 1 : 0] = '\0';
    }
    size_t n = strlen(h);
    while (n && h[n - 1] == '.') h[--n] = '\0'; /* "localhost." */
    unsigned char a[16];
    char why[200];
    if (parse_addr(h, a) == 0) {
        if (check_bytes(a, h, port, 0, why, sizeof why)) return gp_err_set(err, GP_EINVALID, "%s", why);
        return GP_OK;
    }
    if (!strcasecmp(h, "localhost") || (n > 10 && !strcasecmp(h + n - 10, ".localhost"))) {
        unsigned char lo[4] = {127, 0, 0, 1};
        v4_mapped(lo, a);
        if (check_bytes(a, h, port, 0, why, sizeof why)) return gp_err_set(err, GP_EINVALID, "%s", why);
    }
    return GP_OK; /* a name: checked after resolution, on every connection */
}

/* libcurl opens each socket here: the resolved address is checked first. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *sa) {
    gw_call *c = ud;
    (void)purpose;
    unsigned char a[16];
    int port = 0;
    char shown[INET6_ADDRSTRLEN] = "?";
    if (sa->family == AF_INET && sa->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&sa->addr;
        v4_mapped((const unsigned char *)&in->sin_addr, a);
        port = ntohs(in->sin_port);
        inet_ntop(AF_INET, &in->sin_addr, shown, sizeof shown);
    } else if (sa->family == AF_INET6 && sa->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa->addr;
        memcpy(a, &in6->sin6_addr, 16);
        port = ntohs(in6->sin6_port);
        inet_ntop(AF_INET6, &in6->sin6_addr, shown, sizeof shown);
    } else {
        snprintf(c->refused, sizeof c->refused, "an address of an unknown family");
        return CURL_SOCKET_BAD;
    }
    if (check_bytes(a, shown, port, c->job, c->refused, sizeof c->refused)) return CURL_SOCKET_BAD;
    return socket(sa->family, sa->socktype, sa->protocol);
}

/* ---- the shared connection cache ---- */

/* the DNS cache, [0] for URL endpoints, [1] for job endpoints */
static CURLSH *shares[2];
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

/* [0] URL endpoints, [1] job endpoints: a connection the address rules let a job's endpoint
 * open (its node may be this host) is never reused for a tenant's URL to the same name */
typedef struct handles {
    CURLM *multi[2];
    CURL *easy[2];
} handles;

/* the request headers of a call with a body and of one without (made once, never changed) */
static struct curl_slist *hdrs_post, *hdrs_get;

static pthread_key_t handles_key;

static void handles_free(void *p) {
    handles *h = p;
    if (!h) return;
    for (int i = 0; i < 2; i++) {
        if (h->easy[i]) curl_easy_cleanup(h->easy[i]);
        if (h->multi[i]) curl_multi_cleanup(h->multi[i]);
    }
    free(h);
}

static void share_init(void) {
    pthread_key_create(&handles_key, handles_free);
    hdrs_post = curl_slist_append(curl_slist_append(NULL, "Content-Type: application/json"), "Expect:");
    hdrs_get = curl_slist_append(curl_slist_append(NULL, "Accept: */*"), "Expect:");
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&share_mu[i], NULL);
    for (int i = 0; i < 2; i++) {
        CURLSH *share = shares[i] = curl_share_init();
        if (!share) continue;
        curl_share_setopt(share, CURLSHOPT_LOCKFUNC, lock_cb);
        curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, unlock_cb);
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    }
}

/* ---- callbacks ---- */

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
    gw_call *c = ud;
    c->headers_done = 1;
    if (!c->first_mono && sz && n) c->first_mono = gt_mono_us();
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
    c->job = ep->job;
    int k = ep->job ? 1 : 0;
    handles *h = pthread_getspecific(handles_key);
    int kept = 0;
    if (h && h->multi[k] && h->easy[k]) {
        /* this thread's handles from its previous call of this kind, their options set */
        c->multi = h->multi[k];
        c->easy = h->easy[k];
        h->multi[k] = NULL;
        h->easy[k] = NULL;
        kept = 1;
    } else {
        c->multi = curl_multi_init();
        c->easy = curl_easy_init();
    }
    if (!c->multi || !c->easy) {
        gw_call_free(c);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    if (!hdrs_post || !hdrs_get) {
        gw_call_free(c);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    char url[768];
    snprintf(url, sizeof url, "%s%s", ep->base, path);
    CURL *e = c->easy;
    /* the call's own options (every call sets each of them) */
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, body ? hdrs_post : hdrs_get);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L); /* a kept handle's last call may have posted */
    }
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->error);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)(timeout_s > 0 ? timeout_s : 300));
    if (!kept) { /* the same for every call: set once per handle */
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        /* never follow a redirect (a 3xx is the caller's to refuse), never through a proxy
         * (the address checked must be the upstream's), every socket checked once resolved */
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_PROXY, "");
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        /* https upstreams are verified (peer and host name) against the system's store */
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
        if (upstream_ca) curl_easy_setopt(e, CURLOPT_CAINFO, upstream_ca);
        if (shares[k]) curl_easy_setopt(e, CURLOPT_SHARE, shares[k]);
    }
    curl_multi_add_handle(c->multi, e);
    while (!c->headers_done && !c->done) pump(c, 1000);
    if (c->done && !c->headers_done) {
        /* no answer at all: the caller may try another endpoint */
        int rc = c->refused[0]
                     ? gp_err_set(err, GP_EIO, "upstream %s: refused: %s", ep->base, c->refused)
                     : gp_err_set(err, GP_EIO, "upstream %s: %s", ep->base,
                                  c->error[0] ? c->error : curl_easy_strerror(c->result));
        gw_call_free(c);
        return rc;
    }
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &c->status);
    *out = c;
    return GP_OK;
}

long gw_call_status(const gw_call *c) { return c->status; }

int64_t gw_call_first_byte_mono(const gw_call *c) { return c ? c->first_mono : 0; }

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
    int k = c->job ? 1 : 0;
    if (h && !h->multi[k] && !h->easy[k] && c->multi && c->easy) {
        /* the call's error buffer and data go with it (the next call sets its own) */
        curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
        curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, NULL);
        h->multi[k] = c->multi;
        h->easy[k] = c->easy;
        c->multi = NULL;
        c->easy = NULL;
    }
    if (c->easy) curl_easy_cleanup(c->easy);
    if (c->multi) curl_multi_cleanup(c->multi);
    sb_release(&c->in);
    free(c);
}
