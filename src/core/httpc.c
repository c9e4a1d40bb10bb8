/*
 * httpc.c - JSON over HTTP with libcurl (see httpc.h).
 */
#include "httpc.h"

#include "strbuf.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

int httpc_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT) == 0 ? 0 : -1; }

static char *ca_file; /* --ca / GPUPOOL_CA, or NULL */

void httpc_global_cleanup(void) {
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

int httpc_json(const char *base, const char *path, const char *method, const char *token,
               json_t *body, long timeout_s, long *status, json_t **resp, gp_err *err) {
    strbuf url = SB_INIT, out = SB_INIT, auth = SB_INIT;
    char *payload = NULL;
    int rc = GP_OK;
    *resp = NULL;
    *status = 0;
    CURL *c = curl_easy_init();
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
    if (cc != CURLE_OK && tls_failure(cc)) {
        rc = gp_err_set(err, GP_EIO, "TLS with %s failed: %s (%s)", base,
                        ebuf[0] ? ebuf : curl_easy_strerror(cc),
                        ca_file ? "check the --ca file" : "trust its CA with --ca FILE or GPUPOOL_CA");
    } else if (cc != CURLE_OK) {
        rc = gp_err_set(err, GP_EIO, "cannot reach %s: %s", base,
                        ebuf[0] ? ebuf : curl_easy_strerror(cc));
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        json_t *j = out.len ? json_loadb(out.buf, out.len, JSON_DECODE_ANY, NULL) : json_null();
        if (!j && out.len) j = json_stringn(out.buf, out.len);
        *resp = j;
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    if (auth.len) memset(auth.buf, 0, auth.len);
    if (payload) memset(payload, 0, strlen(payload));
    sb_release(&auth);
    sb_release(&url);
    sb_release(&out);
    free(payload);
    return rc;
}
