/*
 * h_gateway.c - the OpenAI-compatible gateway under /v1: the HTTP glue.
 *
 *   POST /v1/chat/completions   (streaming and not)
 *   POST /v1/completions        (streaming and not)
 *   POST /v1/embeddings         (float and base64: passed through)
 *   POST /v1/responses          (the Responses API; streaming and not)
 *   GET  /v1/models             (what the key may use)
 *   GET  /v1/models/{model}     (one of those)
 *
 * What every call does (the API key, the model's route, every limit,
 * retrieval, the upstream, the usage record, the audit of a refusal) is
 * src/gateway/request.c (gw_request_run, gateway.h): every store
 * transaction of the gateway's path is there, none here.  This file fills
 * its gw_in from the api_req and sends its gw_out: an error in OpenAI's
 * shape {"error":{message,type,param,code}}, the Retry-After header, a JSON
 * or text answer, or the stream (api_stream).
 */
#include "api_int.h"

#include "../gateway/gateway.h"

#include <jansson.h>
#include <stdio.h>

/* OpenAI's error shape, from a gw_out that holds an error. */
static void oai_error(api_req *r, const gw_out *o) {
    json_t *e = json_pack("{s:s,s:s,s:n,s:s?}", "message", o->message, "type", o->type, "param",
                          "code", o->code);
    /* the request field at fault, when one is ("param"; null otherwise) */
    if (o->param[0]) json_object_set_new(e, "param", json_string(o->param));
    api_reply(r, o->status, json_pack("{s:o}", "error", e));
}

/*
 * Serve one /v1 request of `kind` (gw_in): forwarded to `path` upstream, or
 * the models ("models", "model": `model`), and answer what gw_request_run
 * returns: its error, or its stream or JSON (handed on) or text (copied).
 */
static void serve(api_req *r, const char *kind, const char *path, const char *model) {
    gw_in in = {
        .kind = kind,
        .path = path,
        .model = model,
        .authorization = r->authorization,
        .body = r->body,
        .body_len = r->body_len,
        .max_depth = r->cfg->max_depth,
        .request_id = r->request_id,
        .source = r->source,
        .action = r->route ? r->route->action : NULL,
    };
    gw_out o;
    int rc = gw_request_run(r->gw, r->store, &in, &o);
    if (o.retry_after[0]) api_header(r, "Retry-After", o.retry_after);
    if (rc) {
        if (!o.type) { /* every failure says what it was: this would be a bug */
            o.status = 500;
            o.type = "server_error";
            o.code = "internal_error";
            snprintf(o.message, sizeof o.message, "%s", gp_err_default_msg(rc));
        }
        oai_error(r, &o);
    } else if (o.read) {
        api_stream(r, o.status, o.content_type, o.read, o.release, o.cls);
        o.read = NULL; /* the server releases it now */
        o.release = NULL;
        o.cls = NULL;
    } else if (o.content_type) {
        api_reply_text_take(r, o.status, o.content_type, o.text); /* handed on, not copied */
        o.text = NULL;
    } else {
        api_reply(r, o.status, o.json);
        o.json = NULL;
    }
    gw_out_release(&o);
}

void h_gw_chat(api_req *r) { serve(r, "chat", "/chat/completions", NULL); }
void h_gw_completions(api_req *r) { serve(r, "completion", "/completions", NULL); }
void h_gw_embeddings(api_req *r) { serve(r, "embedding", "/embeddings", NULL); }
void h_gw_responses(api_req *r) { serve(r, "response", "/responses", NULL); }
void h_gw_models(api_req *r) { serve(r, "models", NULL, NULL); }
/* GET /v1/models/{model}: one model this key may use, or 404 model_not_found. */
void h_gw_model(api_req *r) { serve(r, "model", NULL, api_param(r, "model")); }
