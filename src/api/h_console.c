/*
 * h_console.c - the web console's static files, embedded in the binary at
 * build time from web/ (cmake/embed_dir.cmake generates api_console_file()).
 *
 *   GET /                  web/index.html
 *   GET /console/{file}    web/app.js, web/app.css (only the embedded names)
 *
 * Public: the page holds no data; it signs in and calls /api/v1 with the
 * caller's token like any other client.  Every answer carries a strict
 * Content-Security-Policy (same-origin scripts, styles and requests only; no
 * inline script or style, no framing), X-Frame-Options DENY and no referrer,
 * besides the nosniff and no-store every answer of the server carries.
 */
#include "api_int.h"

#include <string.h>

/* The generated table (console_data.c): bytes of web/<name>, or NULL. */
const char *api_console_file(const char *name, size_t *len);

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                          "base-uri 'none'; frame-ancestors 'none'";

static const char *type_of(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return "application/octet-stream";
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".js")) return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(dot, ".svg")) return "image/svg+xml";
    return "application/octet-stream";
}

static void serve(api_req *r, const char *name) {
    size_t len = 0;
    const char *data = api_console_file(name, &len);
    if (!data) {
        api_error(r, 404, "not_found", "no such file");
        return;
    }
    api_header(r, "Content-Security-Policy", csp);
    api_header(r, "X-Frame-Options", "DENY");
    api_header(r, "Referrer-Policy", "no-referrer");
    api_reply_text(r, 200, type_of(name), data);
}

int h_console_index(api_ctx *c, gp_err *err) {
    (void)err;
    serve(c->r, "index.html");
    return GP_OK;
}

int h_console_asset(api_ctx *c, gp_err *err) {
    (void)err;
    serve(c->r, api_param(c->r, "file"));
    return GP_OK;
}
