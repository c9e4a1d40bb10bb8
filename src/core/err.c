/*
 * err.c - names and messages for gpupool status codes (see err.h).
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *gp_err_name(int code) {
    switch (code) {
#define GP_X_NAME(name, val, c, msg) case val: return c;
        GP_ERROR_TABLE(GP_X_NAME)
#undef GP_X_NAME
    }
    return "internal";
}

const char *gp_err_default_msg(int code) {
    switch (code) {
#define GP_X_MSG(name, val, c, msg) case val: return msg;
        GP_ERROR_TABLE(GP_X_MSG)
#undef GP_X_MSG
    }
    return "internal error";
}

int gp_err_set(gp_err *err, int code, const char *fmt, ...) {
    if (!err) return code;
    err->code = code;
    if (!fmt) {
        snprintf(err->msg, sizeof err->msg, "%s", gp_err_default_msg(code));
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void gp_err_clear(gp_err *err) {
    if (!err) return;
    err->code = GP_OK;
    err->msg[0] = '\0';
}
