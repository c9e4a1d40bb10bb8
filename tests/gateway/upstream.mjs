// upstream.mjs - a small, deterministic OpenAI-compatible model server that the
// gateway tests put behind gpupool's /v1 gateway (and that client.mjs can also
// talk to directly).  Only Node's http module; no dependencies.
//
//   node upstream.mjs --port 0 [--host 127.0.0.1] [--name NAME] [--model ID]... [--no-log]
//
// Prints "listening PORT" on stdout once ready.  Answers:
//   GET  /v1/models            the --model ids (default "up-model")
//   POST /v1/chat/completions  content "echo:" + last user message, stream or not
//   POST /v1/completions       text "echo:" + prompt, stream or not
//   POST /v1/embeddings        8-dim vectors derived from the text; float or base64
//   POST /v1/responses         the Responses API: output_text "echo:" + the input (a
//                              string, or its last user item), stream (`event:` +
//                              `data:` response.* events, no [DONE]) or not; usage
//                              {input_tokens, output_tokens}
//   GET  /_log                 every request so far: [{method,path,headers,body}]
//   DELETE /_log               clears it
// Token counts (Responses: input_tokens = ceil(characters of instructions and
// every input item's content / 4), output_tokens = words; max_output_tokens caps):
// prompt_tokens = ceil(characters of all message contents / 4),
// at least 1; completion_tokens = words (whitespace-separated) of the reply;
// max_tokens (or max_completion_tokens) caps the reply to that many words.
// Switches, written as [[tag]] anywhere in the messages/prompt/input or in the
// model name:
//   [[no-usage]]      no usage in the response, nor in the stream
//   [[error-NNN]]     answer status NNN with an OpenAI-shaped error
//                     ([[error-400]] gives code "bad_upstream")
//   [[slow-MS]]       wait MS milliseconds before answering
//   [[cut]]           stream: role chunk, two content chunks, then the socket
//                     is destroyed (no finish, no usage, no [DONE])
//   [[stream-error]]  stream: two content chunks, then `data: {"error":…}`, end
// Hostile switches (tests/security/test_gateway.sh):
//   [[usage-negative]] usage says prompt_tokens -1000000 (and a negative total)
//   [[usage-huge]]     usage says 10^15 prompt and completion tokens
//   [[redirect]]       answer 302 to http://169.254.169.254/… with a body that must not leak
//   [[ramble-N]]       chat, completions, responses: max_tokens is ignored and the reply
//                      goes on for N more words (" w"), usage counting them all
//   [[pad-N]]          chat: N bytes of padding in the answer (an SSE comment in a stream,
//                      a long system_fingerprint otherwise) that carry no generated text
// Each response id carries --name (e.g. chatcmpl-NAME-3), so tests can tell
// which upstream answered.
import http from 'node:http';

const opts = { port: 0, host: '127.0.0.1', name: 'upstream', models: [], log: true };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--port') opts.port = Number(argv[++i]);
  else if (a === '--host') opts.host = argv[++i];
  else if (a === '--name') opts.name = argv[++i];
  else if (a === '--model') opts.models.push(argv[++i]);
  else if (a === '--no-log') opts.log = false;
  else { console.error(`upstream: unknown argument ${a}`); process.exit(2); }
}
if (opts.models.length === 0) opts.models.push('up-model');

const started = Math.floor(Date.now() / 1000);
let log = [];
let seq = 0;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const words = (s) => s.split(/\s+/).filter(Boolean);
const countTokens = (chars) => Math.max(1, Math.ceil(chars / 4));

// Text of a message content: a string, or an array of {type:"text",text} parts.
function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('');
  return '';
}

// [[tag]] switches found in the given strings.
function switches(strings) {
  const s = { noUsage: false, error: 0, slow: 0, cut: false, streamError: false,
    usageNegative: false, usageHuge: false, redirect: false, pad: 0, ramble: 0 };
  for (const m of strings.join('\n').matchAll(/\[\[([a-z0-9-]+)\]\]/g)) {
    const t = m[1];
    if (t === 'no-usage') s.noUsage = true;
    else if (t === 'cut') s.cut = true;
    else if (t === 'stream-error') s.streamError = true;
    else if (t === 'usage-negative') s.usageNegative = true;
    else if (t === 'usage-huge') s.usageHuge = true;
    else if (t === 'redirect') s.redirect = true;
    else if (/^error-\d{3}$/.test(t)) s.error = Number(t.slice(6));
    else if (/^slow-\d+$/.test(t)) s.slow = Number(t.slice(5));
    else if (/^pad-\d+$/.test(t)) s.pad = Number(t.slice(4));
    else if (/^ramble-\d+$/.test(t)) s.ramble = Number(t.slice(7));
  }
  return s;
}

function sendJson(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'X-Upstream': opts.name,
    ...headers,
  });
  res.end(body);
}

function sendError(res, status, message, type, code) {
  sendJson(res, status, { error: { message, type, param: null, code } });
}

// The usage a hostile upstream would report instead of the real one.
function hostile(sw, usage) {
  if (sw.usageNegative) {
    usage.prompt_tokens = -1000000;
    usage.total_tokens = usage.prompt_tokens + (usage.completion_tokens ?? 0);
  }
  if (sw.usageHuge) {
    usage.prompt_tokens = 1e15;
    if ('completion_tokens' in usage) usage.completion_tokens = 1e15;
    usage.total_tokens = 2e15;
  }
  return usage;
}

function redirect(res) {
  const body = JSON.stringify({ secret: 'redirect-body-must-not-leak' });
  res.writeHead(302, {
    Location: 'http://169.254.169.254/latest/meta-data/',
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'X-Upstream': opts.name,
  });
  res.end(body);
}

function upstreamError(res, status) {
  if (status === 400)
    return sendError(res, 400, 'bad request from upstream', 'invalid_request_error', 'bad_upstream');
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  sendError(res, status, `upstream error ${status}`, type, `upstream_${status}`);
}

// Reply text capped to max words; returns {text, finish_reason, n}.
function reply(prefixAndText, max) {
  let w = words(prefixAndText);
  let finish = 'stop';
  if (Number.isInteger(max) && max >= 0 && w.length > max) { w = w.slice(0, max); finish = 'length'; }
  return { text: w.join(' '), finish_reason: finish, n: w.length };
}

// The reply of an upstream that ignores max tokens ([[ramble-N]]): N words more, all counted.
function replyFor(sw, prefixAndText, max) {
  if (!sw.ramble) return reply(prefixAndText, max);
  const w = words(prefixAndText);
  for (let i = 0; i < sw.ramble; i++) w.push('w');
  return { text: w.join(' '), finish_reason: 'stop', n: w.length };
}

// Streams the pieces as SSE.  mk(delta piece or null, finish) builds one
// chunk object; usage is added per stream_options.include_usage.
async function stream(res, body, sw, pieces, finish, usage, mk) {
  const wantUsage = body.stream_options?.include_usage === true && !sw.noUsage;
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    'X-Upstream': opts.name,
  });
  const send = (obj) => {
    if (wantUsage && !('usage' in obj)) obj.usage = null;
    res.write(`data: ${JSON.stringify(obj)}\n\n`);
  };
  let content = 0; // chunks with text sent so far
  for (const p of pieces) {
    if ((sw.cut || sw.streamError) && content === 2) break;
    send(mk(p, null));
    if (p.content || p.text) content++;
  }
  if (sw.cut) { await sleep(20); res.socket.destroy(); return; }
  if (sw.streamError) {
    res.write(`data: ${JSON.stringify({ error: { message: 'upstream failed mid-stream', type: 'server_error', param: null, code: 'stream_error' } })}\n\n`);
    res.end();
    return;
  }
  if (sw.pad) res.write(`: ${' '.repeat(sw.pad)}\n\n`);
  send(mk(null, finish));
  if (wantUsage) send({ ...mk(null, null), choices: [], usage });
  res.write('data: [DONE]\n\n');
  res.end();
}

async function chat(req, res, body) {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  const texts = msgs.map((m) => textOf(m.content));
  const sw = switches([String(body.model ?? ''), ...texts]);
  if (sw.slow) await sleep(sw.slow);
  if (sw.error) return upstreamError(res, sw.error);
  if (sw.redirect) return redirect(res);
  const lastUser = [...msgs].reverse().find((m) => m.role === 'user');
  const r = replyFor(sw, 'echo:' + textOf(lastUser?.content), body.max_tokens ?? body.max_completion_tokens);
  const prompt = countTokens(texts.reduce((n, t) => n + t.length, 0));
  const usage = hostile(sw, { prompt_tokens: prompt, completion_tokens: r.n, total_tokens: prompt + r.n });
  const id = `chatcmpl-${opts.name}-${++seq}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model;
  if (!body.stream) {
    const out = {
      id, object: 'chat.completion', created, model,
      choices: [{ index: 0, message: { role: 'assistant', content: r.text }, logprobs: null, finish_reason: r.finish_reason }],
    };
    if (!sw.noUsage) out.usage = usage;
    if (sw.pad) out.system_fingerprint = ' '.repeat(sw.pad);
    return sendJson(res, 200, out);
  }
  const w = words(r.text);
  const pieces = [{ role: 'assistant', content: '' }, ...w.map((x, i) => ({ content: (i ? ' ' : '') + x }))];
  await stream(res, body, sw, pieces, r.finish_reason, usage, (delta, finish) => ({
    id, object: 'chat.completion.chunk', created, model,
    choices: [{ index: 0, delta: delta ?? {}, logprobs: null, finish_reason: finish }],
  }));
}

async function completions(req, res, body) {
  let prompts = body.prompt ?? '';
  if (!Array.isArray(prompts)) prompts = [String(prompts)];
  else if (!prompts.every((p) => typeof p === 'string')) prompts = [prompts.flat().join(' ')];
  const sw = switches([String(body.model ?? ''), ...prompts]);
  if (sw.slow) await sleep(sw.slow);
  if (sw.error) return upstreamError(res, sw.error);
  if (sw.redirect) return redirect(res);
  const rs = prompts.map((p) => replyFor(sw, 'echo:' + p, body.max_tokens));
  const prompt = prompts.reduce((n, p) => n + countTokens(p.length), 0);
  const completion = rs.reduce((n, r) => n + r.n, 0);
  const usage = hostile(sw, { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
  const id = `cmpl-${opts.name}-${++seq}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model;
  if (!body.stream) {
    const out = {
      id, object: 'text_completion', created, model,
      choices: rs.map((r, index) => ({ index, text: r.text, logprobs: null, finish_reason: r.finish_reason })),
    };
    if (!sw.noUsage) out.usage = usage;
    return sendJson(res, 200, out);
  }
  // One choice streamed word by word (several prompts: choice after choice).
  const pieces = rs.flatMap((r, index) => words(r.text).map((x, i) => ({ index, text: (i ? ' ' : '') + x })));
  let last = 0;
  await stream(res, body, sw, pieces, rs[0]?.finish_reason ?? 'stop', usage, (p, finish) => {
    if (p) last = p.index;
    return {
      id, object: 'text_completion', created, model,
      choices: [{ index: p ? p.index : last, text: p ? p.text : '', logprobs: null, finish_reason: finish }],
    };
  });
}

// 8 values (or body.dimensions), each k/256 with k in [-256,255], so float32
// holds them exactly and the float and base64 encodings decode to equal numbers.
function vector(text, dim) {
  const v = new Array(dim).fill(0);
  for (let j = 0; j < text.length; j++) v[j % dim] += text.charCodeAt(j) * (j + 1);
  return v.map((x, i) => (((x + 31 * i) % 512) - 256) / 256);
}

async function embeddings(req, res, body) {
  let inputs = body.input ?? '';
  if (!Array.isArray(inputs)) inputs = [String(inputs)];
  else if (!inputs.every((p) => typeof p === 'string')) inputs = inputs.map((x) => (Array.isArray(x) ? x.join(' ') : String(x)));
  const sw = switches([String(body.model ?? ''), ...inputs]);
  if (sw.slow) await sleep(sw.slow);
  if (sw.error) return upstreamError(res, sw.error);
  const fmt = body.encoding_format ?? 'float';
  if (fmt !== 'float' && fmt !== 'base64')
    return sendError(res, 400, `unknown encoding_format ${fmt}`, 'invalid_request_error', 'invalid_encoding_format');
  const dim = Number.isInteger(body.dimensions) && body.dimensions > 0 ? body.dimensions : 8;
  const data = inputs.map((t, index) => {
    const v = vector(t, dim);
    const embedding = fmt === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
    return { object: 'embedding', index, embedding };
  });
  const prompt = inputs.reduce((n, t) => n + countTokens(t.length), 0);
  const out = { object: 'list', data, model: body.model };
  if (!sw.noUsage) out.usage = hostile(sw, { prompt_tokens: prompt, total_tokens: prompt });
  sendJson(res, 200, out);
}

// The Responses API.  A response object; `text` its output, `usage` or null.
function responseObject(body, id, status, text, usage) {
  const out = {
    id, object: 'response', created_at: Math.floor(Date.now() / 1000), status,
    model: body.model, instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null, error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    output: text === null ? [] : [{
      type: 'message', id: `msg_${id}`, status: 'completed', role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    }],
    usage,
  };
  return out;
}

async function responses(req, res, body) {
  const items = typeof body.input === 'string' ? [{ role: 'user', content: body.input }]
    : Array.isArray(body.input) ? body.input : [];
  const texts = [String(body.instructions ?? ''), ...items.map((m) => textOf(m.content))];
  const sw = switches([String(body.model ?? ''), ...texts]);
  if (sw.slow) await sleep(sw.slow);
  if (sw.error) return upstreamError(res, sw.error);
  if (sw.redirect) return redirect(res);
  const lastUser = [...items].reverse().find((m) => (m.role ?? 'user') === 'user');
  const r = replyFor(sw, 'echo:' + textOf(lastUser?.content), body.max_output_tokens);
  const input = countTokens(texts.reduce((n, t) => n + t.length, 0));
  const u = { prompt_tokens: input, completion_tokens: r.n };
  hostile(sw, u);
  const usage = sw.noUsage ? null : {
    input_tokens: u.prompt_tokens, input_tokens_details: { cached_tokens: 0 },
    output_tokens: u.completion_tokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.prompt_tokens + u.completion_tokens,
  };
  const id = `resp_${opts.name}_${++seq}`;
  const status = r.finish_reason === 'length' ? 'incomplete' : 'completed';
  if (!body.stream) return sendJson(res, 200, responseObject(body, id, status, r.text, usage));
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Upstream': opts.name });
  let n = 0;
  const ev = (type, fields) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...fields })}\n\n`);
  const item = `msg_${id}`;
  ev('response.created', { response: responseObject(body, id, 'in_progress', null, null) });
  ev('response.in_progress', { response: responseObject(body, id, 'in_progress', null, null) });
  ev('response.output_item.added', { output_index: 0, item: { type: 'message', id: item, status: 'in_progress', role: 'assistant', content: [] } });
  ev('response.content_part.added', { item_id: item, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
  const w = words(r.text);
  for (let i = 0; i < w.length; i++) {
    if ((sw.cut || sw.streamError) && i === 2) break;
    ev('response.output_text.delta', { item_id: item, output_index: 0, content_index: 0, delta: (i ? ' ' : '') + w[i], logprobs: [] });
  }
  if (sw.cut) { await sleep(20); res.socket.destroy(); return; }
  if (sw.streamError) {
    ev('error', { code: 'stream_error', message: 'upstream failed mid-stream', param: null });
    return res.end();
  }
  ev('response.output_text.done', { item_id: item, output_index: 0, content_index: 0, text: r.text, logprobs: [] });
  ev('response.content_part.done', { item_id: item, output_index: 0, content_index: 0, part: { type: 'output_text', text: r.text, annotations: [] } });
  ev('response.output_item.done', { output_index: 0, item: responseObject(body, id, status, r.text, null).output[0] });
  ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: responseObject(body, id, status, r.text, usage) });
  res.end();
}

function models(req, res) {
  sendJson(res, 200, {
    object: 'list',
    data: opts.models.map((id) => ({ id, object: 'model', created: started, owned_by: 'upstream' })),
  });
}

const routes = {
  'GET /v1/models': models,
  'POST /v1/chat/completions': chat,
  'POST /v1/completions': completions,
  'POST /v1/embeddings': embeddings,
  'POST /v1/responses': responses,
};

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = req.url.split('?')[0];
    if (path === '/_log') {
      if (req.method === 'DELETE') { log = []; return sendJson(res, 200, { ok: true }); }
      return sendJson(res, 200, log);
    }
    let body = raw === '' ? null : raw;
    try { if (raw) body = JSON.parse(raw); } catch { /* keep raw text */ }
    if (opts.log) log.push({ method: req.method, path: req.url, headers: req.headers, body });
    const route = routes[`${req.method} ${path}`];
    if (!route) return sendError(res, 404, `no route ${req.method} ${path}`, 'invalid_request_error', 'not_found');
    if (req.method === 'POST' && (typeof body !== 'object' || body === null))
      return sendError(res, 400, 'request body is not a JSON object', 'invalid_request_error', 'invalid_json');
    try {
      await route(req, res, body);
    } catch (e) {
      if (!res.headersSent) sendError(res, 500, String(e?.message ?? e), 'server_error', 'upstream_crash');
      else res.destroy();
    }
  });
});

server.listen(opts.port, opts.host, () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
