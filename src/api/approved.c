/*
 * approved.c - executing an approved sensitive request: the stored request
 * re-enters dispatch as its requester, with the roles they hold now, on the
 * approver's word (docs/governance.md), and its outcome is recorded with the
 * approval.  Approving moved the approval out of `pending` first (h_approval.c),
 * so a crash between the two leaves it approved without a result: never
 * executed twice.
 */
#include "api_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"
#include "../policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int api__exec_approved(store_t *st, const api_config *cfg, const char *approval_id,
                       const char *approver, const char *source, const char *request_id,
                       json_t **result, gp_err *out_err) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    *result = NULL;
    approval a;
    api_req x;
    memset(&x, 0, sizeof x);
    int rc = store_begin(st, STORE_READ, &tx, &err);
    if (rc) goto log;
    rc = approval_get(tx, approval_id, &a, &err);
    store_rollback(tx);
    if (rc) goto log;
    x.store = st;
    x.cfg = cfg;
    x.method = a.method;
    x.path = strdup(a.path);
    x.body = a.body;
    x.body_len = strlen(a.body);
    x.approval_id = approval_id;
    x.start_us = gt_mono_us();
    snprintf(x.request_id, sizeof x.request_id, "%s", request_id);
    snprintf(x.source, sizeof x.source, "%s", source);
    json_t *q = json_loads(a.query, 0, NULL);
    size_t i;
    json_t *kv;
    json_array_foreach(q, i, kv) {
        api_kv *nq = realloc(x.query, sizeof *nq * (size_t)(x.nquery + 1));
        if (!nq) break;
        x.query = nq;
        nq[x.nquery].key = strdup(json_string_value(json_array_get(kv, 0)));
        nq[x.nquery].value = strdup(json_string_value(json_array_get(kv, 1)));
        x.nquery++;
    }
    json_decref(q);
    /* act as the requester, with the roles they hold now, on the approver's word */
    if (auth_principal_load(st, a.requester_id, &x.who, &err) == GP_OK) {
        snprintf(x.on_behalf, sizeof x.on_behalf, "%s", x.who->name);
        snprintf(x.who->name, sizeof x.who->name, "%s", approver);
        api__dispatch(&x);
    } else {
        api_error(&x, 403, "forbidden", "the requester can no longer act");
    }
    /* text results (an export) are stored as a JSON string, so they read back as one */
    json_t *as_text = x.resp ? NULL : json_string(x.resp_text ? x.resp_text : "");
    char *text = jx_dump(x.resp ? x.resp : as_text);
    json_decref(as_text);
    if (store_begin(st, STORE_WRITE, &tx, &err) == GP_OK) {
        if (approval_set_result(tx, approval_id, x.status, text, &err) == GP_OK)
            store_commit(tx, &err);
        else
            store_rollback(tx);
    }
    free(text);
    api__req_release(&x);
    approval_release(&a);
log:
    if (err.code) log_kv(LOG_ERROR, "approved request failed", "approval", approval_id, "detail",
                         err.msg, (char *)NULL);
    /* the approval as it now stands, with the execution's result */
    rc = store_begin(st, STORE_READ, &tx, out_err);
    if (rc) return rc;
    rc = approval_get(tx, approval_id, &a, out_err);
    store_rollback(tx);
    if (rc) return rc;
    *result = approval_json(&a, 1);
    approval_release(&a);
    return GP_OK;
}
