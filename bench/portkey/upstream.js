// upstream.js - the model server of bench/gateway_vs_portkey.sh: an OpenAI-style
// POST /v1/chat/completions that answers at once (no model behind it) with a fixed
// completion and a usage block (12 prompt + 9 completion tokens), the shape of
// the issue-22 measurement (a Node upstream that answers at once).  Every
// gateway under test and the direct run hit this one process.
//
//   node bench/portkey/upstream.js [--port N]     (default 0: a free loopback port)
//   prints "listening PORT" on stdout once it accepts connections
//
// GET .../models lists the one model "bench" (what gpupool's endpoint health check
// reads).  GET /_stats answers {"chat": N, "bad": M}: chat completions answered since the
// start, and requests it refused (anything else, or a body that is not a chat
// request), so the bench can check what reached the upstream against what the
// client counted and what gpupool metered.  Requests are counted when answered.
'use strict';
const http = require('http');

let port = 0;
for (let i = 2; i < process.argv.length; i++) {
    if (process.argv[i] === '--port' && i + 1 < process.argv.length) port = Number(process.argv[++i]);
}

const PROMPT_TOKENS = 12;
const COMPLETION_TOKENS = 9;
let chat = 0;
let bad = 0;

function answer(model) {
    return JSON.stringify({
        id: 'chatcmpl-bench',
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: {
            prompt_tokens: PROMPT_TOKENS,
            completion_tokens: COMPLETION_TOKENS,
            total_tokens: PROMPT_TOKENS + COMPLETION_TOKENS,
        },
    });
}

function send(res, status, body) {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
}

const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/_stats') {
        send(res, 200, JSON.stringify({ chat, bad }));
        return;
    }
    if (req.method === 'GET' && req.url.endsWith('/models')) {
        // gpupool's health check of the endpoint (not counted)
        req.resume();
        send(res, 200, JSON.stringify({ object: 'list', data: [{ id: 'bench', object: 'model', owned_by: 'bench' }] }));
        return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
        if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
            bad++;
            send(res, 404, JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
            return;
        }
        let body;
        try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch (e) {
            body = null;
        }
        if (!body || typeof body.model !== 'string' || !Array.isArray(body.messages)) {
            bad++;
            send(res, 400, JSON.stringify({ error: { message: 'not a chat completion request' } }));
            return;
        }
        chat++;
        send(res, 200, answer(body.model));
    });
});
server.keepAliveTimeout = 60000;
server.listen(port, '127.0.0.1', () => {
    process.stdout.write(`listening ${server.address().port}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
