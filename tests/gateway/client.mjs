// client.mjs - drives one request scenario with the official `openai` npm
// client (unchanged; only baseURL and apiKey set, retries off) and prints one
// JSON object, so shell/C tests can check what a real SDK user would see.
//
//   node client.mjs BASE_URL API_KEY SCENARIO [JSON-ARGS]
//
// BASE_URL ends in /v1 (e.g. http://127.0.0.1:7070/v1).  Prints
//   {"ok":true, ...result}                           on success
//   {"ok":false,"status":N,"type","code","message","class","headers":{"retry-after"}, ...}
// on an error (status is null for errors raised inside a stream or for
// connection failures).  Exits 0 whenever it printed an object; 2 on bad usage.
//
// Scenarios and their JSON-ARGS (all optional; model defaults to "up-model"):
//   models                                        -> {ids}
//   chat          {model,content,max_tokens}      -> {id,model,content,finish_reason,usage}
//   chat-stream   {model,content,max_tokens,include_usage}
//                 -> {content,chunks,usage,empty_choices_chunk,usage_null_chunks,finish_reason}
//   completion    {model,prompt,max_tokens}       -> {id,text,finish_reason,usage}
//   completion-stream {model,prompt,max_tokens,include_usage} -> like chat-stream
//   embed-float   {model,input}                   -> {count,length,first,vectors,usage}
//   embed-base64  {model,input}  (SDK default: asks base64, decodes) -> same as embed-float
//   concurrent    {model,content,max_tokens,n}    -> {outcomes:{ok,429,...},total_tokens,...}
//   chat-sources  {model,content,max_tokens}      -> like chat, plus {sources} (the gateway's extra
//                 field for retrieval-augmented applications; null when absent)
//   chat-stream-sources {model,content}           -> {content,chunks,first_sources,chunks_with_sources}
//   model         {model}                         -> {id,object,owned_by} (GET /v1/models/{id})
//   response      {model,input,instructions,max_output_tokens}
//                 -> {id,model,status,output_text,usage,sources} (client.responses.create)
//   response-stream {model,input,instructions,max_output_tokens}
//                 -> {text,events,types,usage,status,first_sources,events_with_sources}
//   concurrent-responses {model,input,max_output_tokens,n} -> like concurrent
// Any scenario also takes timeout_ms (default 30000).
import OpenAI from 'openai';

const [baseURL, apiKey, scenario, rawArgs] = process.argv.slice(2);
if (!baseURL || apiKey === undefined || !scenario) {
  console.error('usage: node client.mjs BASE_URL API_KEY SCENARIO [JSON-ARGS]');
  process.exit(2);
}
const args = rawArgs ? JSON.parse(rawArgs) : {};
const model = args.model ?? 'up-model';
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: args.timeout_ms ?? 30000 });

function errorResult(err) {
  if (!(err instanceof OpenAI.APIError)) // e.g. TypeError "terminated": connection cut mid-stream
    return { ok: false, status: null, type: null, code: null, message: String(err?.message ?? err),
             class: err?.constructor?.name ?? typeof err, headers: { 'retry-after': null } };
  return {
    ok: false,
    status: err.status ?? null,
    type: err.type ?? null,
    code: err.code ?? null,
    message: err.error?.message ?? err.message,
    class: err.constructor.name,
    headers: { 'retry-after': err.headers?.get?.('retry-after') ?? null },
  };
}

const responseBody = (a) => ({
  model: a.model ?? model,
  input: a.input ?? 'hello',
  ...(a.instructions !== undefined && { instructions: a.instructions }),
  ...(a.max_output_tokens !== undefined && { max_output_tokens: a.max_output_tokens }),
});

// Tally of settled promises: {ok, n, outcomes, total_tokens, ...}; tokens(v) reads a success's.
function tally(settled, tokens) {
  const r = { ok: true, n: settled.length, outcomes: {}, errors: {}, total_tokens: 0, prompt_tokens: 0, completion_tokens: 0, retry_after: [] };
  for (const s of settled) {
    const key = s.status === 'fulfilled' ? 'ok' : String(s.reason?.status ?? s.reason?.constructor?.name ?? 'error');
    r.outcomes[key] = (r.outcomes[key] ?? 0) + 1;
    if (s.status !== 'fulfilled' && key !== '429') { // what a failure other than a limit said, by its code
      const why = `${key} ${s.reason?.code ?? ''}: ${s.reason?.error?.message ?? s.reason?.message ?? ''}`;
      r.errors[why] = (r.errors[why] ?? 0) + 1;
    }
    if (s.status === 'fulfilled') {
      const t = tokens(s.value);
      r.total_tokens += t.total;
      r.prompt_tokens += t.prompt;
      r.completion_tokens += t.completion;
    } else if (s.reason?.headers?.get?.('retry-after')) {
      r.retry_after.push(s.reason.headers.get('retry-after'));
    }
  }
  return r;
}

const chatBody = (a) => ({
  model: a.model ?? model,
  messages: [{ role: 'user', content: a.content ?? 'hello' }],
  ...(a.max_tokens !== undefined && { max_tokens: a.max_tokens }),
});

// Reads a stream; text(chunk) gives a chunk's text.  A failure mid-stream is
// reported as an error result that also carries what arrived before it.
async function readStream(stream, text) {
  const r = { content: '', chunks: 0, usage: null, empty_choices_chunk: false, usage_null_chunks: 0, finish_reason: null };
  try {
    for await (const chunk of stream) {
      r.chunks++;
      if (chunk.usage) r.usage = chunk.usage;
      else if ('usage' in chunk && chunk.usage === null) r.usage_null_chunks++;
      if (Array.isArray(chunk.choices) && chunk.choices.length === 0) r.empty_choices_chunk = true;
      for (const c of chunk.choices ?? []) {
        r.content += text(c) ?? '';
        if (c.finish_reason) r.finish_reason = c.finish_reason;
      }
    }
  } catch (err) {
    return { ...errorResult(err), partial: r };
  }
  return { ok: true, ...r };
}

function embedResult(res) {
  const vectors = res.data.map((d) => Array.from(d.embedding));
  return { ok: true, count: vectors.length, length: vectors[0]?.length ?? 0, first: vectors[0]?.slice(0, 3) ?? [], vectors, usage: res.usage ?? null };
}

const scenarios = {
  async models() {
    const page = await client.models.list();
    return { ok: true, ids: page.data.map((m) => m.id) };
  },
  async chat(a) {
    const r = await client.chat.completions.create(chatBody(a));
    return { ok: true, id: r.id, model: r.model, content: r.choices[0]?.message?.content ?? null, finish_reason: r.choices[0]?.finish_reason ?? null, usage: r.usage ?? null };
  },
  async 'chat-stream'(a) {
    const stream = await client.chat.completions.create({
      ...chatBody(a), stream: true,
      ...(a.include_usage !== undefined && { stream_options: { include_usage: a.include_usage } }),
    });
    return readStream(stream, (c) => c.delta?.content);
  },
  async completion(a) {
    const r = await client.completions.create({ model: a.model ?? model, prompt: a.prompt ?? 'hello', ...(a.max_tokens !== undefined && { max_tokens: a.max_tokens }) });
    return { ok: true, id: r.id, text: r.choices[0]?.text ?? null, finish_reason: r.choices[0]?.finish_reason ?? null, usage: r.usage ?? null };
  },
  async 'completion-stream'(a) {
    const stream = await client.completions.create({
      model: a.model ?? model, prompt: a.prompt ?? 'hello', stream: true,
      ...(a.max_tokens !== undefined && { max_tokens: a.max_tokens }),
      ...(a.include_usage !== undefined && { stream_options: { include_usage: a.include_usage } }),
    });
    return readStream(stream, (c) => c.text);
  },
  async 'embed-float'(a) {
    return embedResult(await client.embeddings.create({ model: a.model ?? model, input: a.input ?? 'hello', encoding_format: 'float' }));
  },
  async 'embed-base64'(a) {
    // No encoding_format: the SDK asks for base64 and decodes float32 itself.
    return embedResult(await client.embeddings.create({ model: a.model ?? model, input: a.input ?? 'hello' }));
  },
  async 'chat-sources'(a) {
    const r = await client.chat.completions.create(chatBody(a));
    return { ok: true, id: r.id, content: r.choices[0]?.message?.content ?? null, usage: r.usage ?? null, sources: r.sources ?? null };
  },
  async 'chat-stream-sources'(a) {
    const stream = await client.chat.completions.create({ ...chatBody(a), stream: true });
    const r = { ok: true, content: '', chunks: 0, first_sources: null, chunks_with_sources: 0 };
    for await (const chunk of stream) {
      if (r.chunks === 0) r.first_sources = chunk.sources ?? null;
      if (chunk.sources) r.chunks_with_sources++;
      r.chunks++;
      for (const c of chunk.choices ?? []) r.content += c.delta?.content ?? '';
    }
    return r;
  },
  async model(a) {
    const m = await client.models.retrieve(a.model ?? model);
    return { ok: true, id: m.id, object: m.object, owned_by: m.owned_by };
  },
  async response(a) {
    const r = await client.responses.create(responseBody(a));
    return { ok: true, id: r.id, model: r.model, status: r.status, output_text: r.output_text, usage: r.usage ?? null, sources: r.sources ?? null };
  },
  async 'response-stream'(a) {
    const stream = await client.responses.create({ ...responseBody(a), stream: true });
    const r = { text: '', events: 0, types: [], usage: null, status: null, first_sources: null, events_with_sources: 0 };
    try {
      for await (const ev of stream) {
        if (r.events === 0) r.first_sources = ev.sources ?? null;
        if (ev.sources) r.events_with_sources++;
        r.events++;
        if (!r.types.includes(ev.type)) r.types.push(ev.type);
        if (ev.type === 'response.output_text.delta') r.text += ev.delta;
        if (ev.type === 'response.completed' || ev.type === 'response.incomplete') {
          r.usage = ev.response?.usage ?? null;
          r.status = ev.response?.status ?? null;
        }
        if (ev.type === 'error') throw Object.assign(new Error(ev.message), { code: ev.code });
      }
    } catch (err) {
      return { ...errorResult(err), code: err?.code ?? errorResult(err).code, partial: r };
    }
    return { ok: true, ...r };
  },
  async 'concurrent-responses'(a) {
    const n = a.n ?? 10;
    const settled = await Promise.allSettled(Array.from({ length: n }, () => client.responses.create(responseBody(a))));
    return tally(settled, (v) => ({ total: v.usage?.total_tokens ?? 0, prompt: v.usage?.input_tokens ?? 0, completion: v.usage?.output_tokens ?? 0 }));
  },
  async concurrent(a) {
    const n = a.n ?? 10;
    const settled = await Promise.allSettled(Array.from({ length: n }, () => client.chat.completions.create(chatBody(a))));
    return tally(settled, (v) => ({ total: v.usage?.total_tokens ?? 0, prompt: v.usage?.prompt_tokens ?? 0, completion: v.usage?.completion_tokens ?? 0 }));
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`client: unknown scenario ${scenario}; one of: ${Object.keys(scenarios).join(' ')}`);
  process.exit(2);
}
let out;
try {
  out = await run(args);
} catch (err) {
  out = errorResult(err);
}
process.stdout.write(JSON.stringify(out) + '\n');
