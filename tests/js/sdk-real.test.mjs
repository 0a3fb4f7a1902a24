// Issue 41: the real provider SDKs (openai, @anthropic-ai/sdk, @google/genai, pinned in
// tests/package.json) against local node:http servers that speak each provider's wire format,
// JSON and SSE. A multi-turn tool loop is driven by the Maintainer with `beforeRequest({ format })`,
// the SDK's own client call (streamed or not), `fromResponse` on what the SDK returns (a
// stream's accumulated result) and `fromError` on what it throws (the provider's real overflow
// status and body); the summarizer is the SDK's ready summarizer, against the same server.

import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import {
  anthropicSummarizer,
  fromError,
  fromResponse,
  geminiSummarizer,
  Maintainer,
  openAISummarizer,
  Session,
} from 'ctxfold';
import OpenAI from 'openai';

// ----- a local server ------------------------------------------------------------------------

/**
 * A node:http server on a free port: each request is recorded (method, url, JSON body) and
 * answered by `handler(request)` with `{ status?, json }` or `{ status?, sse: events }` (an event
 * is `{ event?, data }`, or a raw string).
 */
async function serve(handler) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const request = { method: req.method, url: req.url, body: text ? JSON.parse(text) : undefined };
    requests.push(request);
    let out;
    try {
      out = await handler(request);
    } catch (err) {
      out = { status: 500, json: { error: { message: `test server: ${err.stack}` } } };
    }
    if (out.sse !== undefined) {
      res.writeHead(out.status ?? 200, { 'content-type': 'text/event-stream' });
      for (const e of out.sse) {
        res.write(
          typeof e === 'string' ? e : `${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`,
        );
      }
      res.end();
    } else {
      res.writeHead(out.status ?? 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out.json));
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((ok) => server.close(ok)),
  };
}

// ----- each provider's wire format -------------------------------------------------------------
//
// An answer is `{ text?, call?: { id, name, args }, stop: 'stop' | 'tool' | 'length', prompt,
// cached }`; each wire writes it as its provider does, non-streamed (`json`) and streamed (`sse`),
// and its overflow error as the provider answers it.

const OUTPUT_TOKENS = 20;

const WIRES = {
  'openai-chat': {
    path: /^\/v1\/chat\/completions$/,
    streamed: (body) => body.stream === true,
    overflow: {
      status: 400,
      json: {
        error: {
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      },
    },
    json(a) {
      const message = { role: 'assistant', content: a.text ?? null, refusal: null, annotations: [] };
      if (a.call) message.tool_calls = [chatCall(a.call)];
      return {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1741569952,
        model: 'gpt-4.1-2025-04-14',
        choices: [{ index: 0, message, logprobs: null, finish_reason: CHAT_FINISH[a.stop] }],
        usage: chatUsage(a),
        service_tier: 'default',
        system_fingerprint: 'fp_1',
      };
    },
    sse(a) {
      const chunk = (choices, extra) => ({
        data: { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4.1', choices, ...extra },
      });
      const out = [chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])];
      if (a.text) {
        const half = Math.ceil(a.text.length / 2);
        for (const part of [a.text.slice(0, half), a.text.slice(half)]) {
          out.push(chunk([{ index: 0, delta: { content: part }, finish_reason: null }]));
        }
      }
      if (a.call) {
        const { id, name } = a.call;
        const args = JSON.stringify(a.call.args);
        out.push(
          chunk([
            {
              index: 0,
              delta: {
                tool_calls: [{ index: 0, id, type: 'function', function: { name, arguments: args.slice(0, 5) } }],
              },
              finish_reason: null,
            },
          ]),
          chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(5) } }] } }]),
        );
      }
      out.push(chunk([{ index: 0, delta: {}, finish_reason: CHAT_FINISH[a.stop] }]));
      out.push(chunk([], { usage: chatUsage(a) }), 'data: [DONE]\n\n');
      return out;
    },
  },
  'openai-responses': {
    path: /^\/v1\/responses$/,
    streamed: (body) => body.stream === true,
    overflow: {
      status: 400,
      json: {
        error: {
          message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      },
    },
    json: (a) => responsesResponse(a, responsesOutput(a)),
    sse(a) {
      const items = responsesOutput(a);
      let seq = 0;
      const ev = (type, data) => ({ event: type, data: { type, sequence_number: seq++, ...data } });
      const out = [ev('response.created', { response: { ...responsesResponse(a, []), status: 'in_progress' } })];
      items.forEach((item, index) => {
        out.push(ev('response.output_item.added', { output_index: index, item }));
        out.push(ev('response.output_item.done', { output_index: index, item }));
      });
      out.push(
        ev(a.stop === 'length' ? 'response.incomplete' : 'response.completed', {
          response: responsesResponse(a, items),
        }),
      );
      return out;
    },
  },
  anthropic: {
    path: /^\/v1\/messages$/,
    streamed: (body) => body.stream === true,
    overflow: {
      status: 400,
      json: {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 208310 tokens > 200000 maximum' },
      },
    },
    json: (a) => anthropicMessage(a, anthropicContent(a)),
    sse(a) {
      const ev = (type, data) => ({ event: type, data: { type, ...data } });
      const start = anthropicMessage(a, []);
      const out = [
        ev('message_start', {
          message: { ...start, stop_reason: null, usage: { ...start.usage, output_tokens: 1 } },
        }),
      ];
      anthropicContent(a).forEach((block, index) => {
        if (block.type === 'text') {
          out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
          out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } }));
        } else {
          out.push(ev('content_block_start', { index, content_block: { ...block, input: {} } }));
          const json = JSON.stringify(block.input);
          for (const part of [json.slice(0, 4), json.slice(4)]) {
            out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }));
          }
        }
        out.push(ev('content_block_stop', { index }));
      });
      out.push(
        ev('message_delta', {
          delta: { stop_reason: ANTHROPIC_STOP[a.stop], stop_sequence: null },
          usage: { output_tokens: OUTPUT_TOKENS },
        }),
        ev('message_stop', {}),
      );
      return out;
    },
  },
  gemini: {
    path: /^\/v1(beta)?\/models\/[^/:]+:(generateContent|streamGenerateContent)$/,
    streamed: (_body, url) => url.includes(':streamGenerateContent'),
    overflow: {
      status: 400,
      json: {
        error: {
          code: 400,
          message: 'The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).',
          status: 'INVALID_ARGUMENT',
        },
      },
    },
    json: (a) => geminiResponse(a, geminiParts(a), true),
    sse(a) {
      // Text in two chunks, the call in the last one with the finish reason and the usage.
      const parts = geminiParts(a);
      const text = parts.find((p) => p.text !== undefined);
      const rest = parts.filter((p) => p !== text);
      const out = [];
      if (text) {
        const half = Math.ceil(text.text.length / 2);
        out.push({ data: geminiResponse(a, [{ text: text.text.slice(0, half) }], false) });
        out.push({ data: geminiResponse(a, [{ text: text.text.slice(half) }], rest.length === 0) });
      }
      if (rest.length > 0 || !text) out.push({ data: geminiResponse(a, rest, true) });
      return out;
    },
  },
};

const CHAT_FINISH = { stop: 'stop', tool: 'tool_calls', length: 'length' };
const ANTHROPIC_STOP = { stop: 'end_turn', tool: 'tool_use', length: 'max_tokens' };
const GEMINI_FINISH = { stop: 'STOP', tool: 'STOP', length: 'MAX_TOKENS' };

function chatCall({ id, name, args }) {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

function chatUsage(a) {
  return {
    prompt_tokens: a.prompt,
    completion_tokens: OUTPUT_TOKENS,
    total_tokens: a.prompt + OUTPUT_TOKENS,
    prompt_tokens_details: { cached_tokens: a.cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
  };
}

function responsesOutput(a) {
  const out = [{ type: 'reasoning', id: 'rs_1', summary: [] }];
  if (a.text) {
    out.push({
      type: 'message',
      id: `msg_${a.n}`,
      status: a.stop === 'length' ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: a.text, annotations: [], logprobs: [] }],
    });
  }
  if (a.call) {
    out.push({
      type: 'function_call',
      id: `fc_${a.n}`,
      call_id: a.call.id,
      name: a.call.name,
      arguments: JSON.stringify(a.call.args),
      status: 'completed',
    });
  }
  return out;
}

function responsesResponse(a, output) {
  return {
    id: `resp_${a.n}`,
    object: 'response',
    created_at: 1741476542,
    status: a.stop === 'length' ? 'incomplete' : 'completed',
    error: null,
    incomplete_details: a.stop === 'length' ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    max_output_tokens: null,
    model: 'gpt-5-2025-08-07',
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: 'medium', summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: {
      input_tokens: a.prompt,
      input_tokens_details: { cached_tokens: a.cached },
      output_tokens: OUTPUT_TOKENS,
      output_tokens_details: { reasoning_tokens: 5 },
      total_tokens: a.prompt + OUTPUT_TOKENS,
    },
    user: null,
    metadata: {},
  };
}

function anthropicContent(a) {
  const content = [];
  if (a.text) content.push({ type: 'text', text: a.text });
  if (a.call) content.push({ type: 'tool_use', id: a.call.id, name: a.call.name, input: a.call.args });
  return content;
}

function anthropicMessage(a, content) {
  return {
    id: `msg_${a.n}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content,
    stop_reason: ANTHROPIC_STOP[a.stop],
    stop_sequence: null,
    usage: {
      input_tokens: a.prompt - a.cached,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: a.cached,
      output_tokens: OUTPUT_TOKENS,
      service_tier: 'standard',
    },
  };
}

function geminiParts(a) {
  const parts = [];
  if (a.text) parts.push({ text: a.text });
  // Gemini 2.5 gives its calls no id.
  if (a.call) parts.push({ functionCall: { name: a.call.name, args: a.call.args } });
  return parts;
}

function geminiResponse(a, parts, last) {
  const candidate = { content: { role: 'model', parts }, index: 0 };
  if (last) candidate.finishReason = GEMINI_FINISH[a.stop];
  const r = { candidates: [candidate], modelVersion: 'gemini-2.5-flash', responseId: `r${a.n}` };
  if (last) {
    r.usageMetadata = {
      promptTokenCount: a.prompt,
      cachedContentTokenCount: a.cached,
      candidatesTokenCount: OUTPUT_TOKENS,
      totalTokenCount: a.prompt + OUTPUT_TOKENS,
    };
  }
  return r;
}

// ----- the SDKs, as a host uses them ----------------------------------------------------------

const PARAMETERS = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
const DESCRIPTION = 'Reads a file.';

/**
 * Each SDK: the model it talks to, its client against a server, one request as the host sends
 * it (`r` is what `beforeRequest({ format })` returned; streamed through the SDK's stream helper,
 * whose accumulated result is returned), a user turn and a tool result in its format, and its
 * ready summarizer.
 */
const SDKS = {
  'openai-chat': {
    model: { provider: 'openai', id: 'gpt-4.1', api: 'openai-completions' },
    client: (url) => new OpenAI({ apiKey: 'test', baseURL: `${url}/v1`, maxRetries: 0 }),
    async send(client, r, stream) {
      const body = {
        model: 'gpt-4.1',
        messages: r.messages,
        tools: [{ type: 'function', function: { name: 'read', description: DESCRIPTION, parameters: PARAMETERS } }],
      };
      if (!stream) return client.chat.completions.create(body);
      return client.chat.completions.stream({ ...body, stream_options: { include_usage: true } }).finalChatCompletion();
    },
    user: (text) => ({ role: 'user', content: text }),
    result: (call, text) => ({ role: 'tool', tool_call_id: call.id, content: text }),
    summarizer: (client, model = 'summarizer') => openAISummarizer(client, { model }),
  },
  'openai-responses': {
    model: { provider: 'openai', id: 'gpt-5', api: 'openai-responses' },
    client: (url) => new OpenAI({ apiKey: 'test', baseURL: `${url}/v1`, maxRetries: 0 }),
    async send(client, r, stream) {
      const body = {
        model: 'gpt-5',
        input: r.messages,
        store: false,
        tools: [{ type: 'function', name: 'read', description: DESCRIPTION, parameters: PARAMETERS, strict: false }],
      };
      if (!stream) return client.responses.create(body);
      return client.responses.stream(body).finalResponse();
    },
    user: (text) => ({ role: 'user', content: text }),
    result: (call, text) => ({ type: 'function_call_output', call_id: call.id.split('|')[0], output: text }),
    summarizer: (client, model = 'summarizer') => openAISummarizer(client, { model, api: 'responses' }),
  },
  anthropic: {
    model: { provider: 'anthropic', id: 'claude-sonnet-4-5', api: 'anthropic-messages' },
    client: (url) => new Anthropic({ apiKey: 'test', baseURL: url, maxRetries: 0 }),
    async send(client, r, stream) {
      const body = {
        model: 'claude-sonnet-4-5',
        max_tokens: 1000,
        messages: r.messages,
        tools: [{ name: 'read', description: DESCRIPTION, input_schema: PARAMETERS }],
      };
      if (r.system !== undefined) body.system = r.system;
      if (!stream) return client.messages.create(body);
      return client.messages.stream(body).finalMessage();
    },
    user: (text) => ({ role: 'user', content: text }),
    result: (call, text) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: text }] }),
    summarizer: (client, model = 'summarizer') => anthropicSummarizer(client, { model }),
  },
  gemini: {
    model: { provider: 'google', id: 'gemini-2.5-flash', api: 'google-generative-ai' },
    client: (url) => new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: url } }),
    async send(client, r, stream) {
      const params = {
        model: 'gemini-2.5-flash',
        contents: r.messages,
        config: {
          tools: [{ functionDeclarations: [{ name: 'read', description: DESCRIPTION, parameters: PARAMETERS }] }],
        },
      };
      if (r.system !== undefined) params.config.systemInstruction = r.system;
      if (!stream) return client.models.generateContent(params);
      // The stream's chunks, as the host collects them: fromResponse reads the list.
      const chunks = [];
      for await (const chunk of await client.models.generateContentStream(params)) chunks.push(chunk);
      return chunks;
    },
    user: (text) => ({ role: 'user', parts: [{ text }] }),
    // Gemini 2.5 gives its calls no id: the response names the function only.
    result: (call, text) => ({
      role: 'user',
      parts: [{ functionResponse: { name: call.name, response: { output: text } } }],
    }),
    summarizer: (client, model = 'summarizer') => geminiSummarizer(client, { model }),
  },
};

/** Whether a request's last message is a tool result, per format. */
const LAST_IS_RESULT = {
  'openai-chat': (b) => b.messages.at(-1)?.role === 'tool',
  'openai-responses': (b) => b.input.at(-1)?.type === 'function_call_output',
  anthropic: (b) =>
    Array.isArray(b.messages.at(-1)?.content) && b.messages.at(-1).content.some((c) => c.type === 'tool_result'),
  gemini: (b) => (b.contents.at(-1)?.parts ?? []).some((p) => p.functionResponse !== undefined),
};

/** The `task N` markers a request's text holds. */
function tasksIn(value) {
  return new Set((JSON.stringify(value).match(/task \d+/g) ?? []).map((t) => Number(t.slice(5))));
}

/** The request's conversation in tokens, as the test server bills it (4 characters a token). */
function billed(body) {
  return Math.ceil(JSON.stringify(body).length / 4);
}

/**
 * The model behind the server: a summarizer request (model `summarizer`) is answered with a
 * summary naming every task it read; the agent calls `read` after a user turn, answers after a
 * tool result, and at the request numbers of `script` answers as told (`overflow`: the
 * provider's overflow error; `length`: a reply cut at its output limit).
 */
function agentServer(format, script) {
  const wire = WIRES[format];
  let n = 0;
  let calls = 0;
  const log = [];
  const handler = (req) => {
    if (!wire.path.test(req.url.split('?')[0]))
      return { status: 404, json: { error: { message: `no route ${req.url}` } } };
    const body = req.body;
    const model = body.model ?? /models\/([^:]+):/.exec(req.url)?.[1];
    const stream = wire.streamed(body, req.url);
    const prompt = billed(body);
    if (model === 'summarizer') {
      const tasks = [...tasksIn(body)].sort((a, b) => a - b);
      const a = {
        n: `s${n}`,
        text: `Summary: the user asked ${tasks.map((t) => `task ${t}`).join(', ')}.`,
        stop: 'stop',
        prompt,
        cached: 0,
      };
      log.push({ kind: 'summary', tasks });
      return stream ? { sse: wire.sse(a) } : { json: wire.json(a) };
    }
    // What the SDKs add to the objects they return is no member of a request: the APIs refuse it.
    const stray = JSON.stringify(body).match(/"(parsed|parsed_arguments|parsed_output|_request_id|sdkHttpResponse)":/);
    if (stray !== null) {
      log.push({ kind: 'refused', member: stray[1] });
      return {
        status: 400,
        json: {
          error: { message: `Unrecognized request argument supplied: ${stray[1]}`, type: 'invalid_request_error' },
        },
      };
    }
    const k = n++;
    const told = script[k];
    log.push({ kind: told ?? 'agent', n: k, stream, prompt, tasks: tasksIn(body), body });
    if (told === 'overflow') return wire.overflow;
    // The last message of the request: a tool result asks for the answer, a user turn for a call.
    const lastIsResult = LAST_IS_RESULT[format](body);
    const a = { n: k, prompt, cached: Math.floor(prompt / 2) };
    if (told === 'length') Object.assign(a, { text: 'The answer beg', stop: 'length' });
    else if (lastIsResult) Object.assign(a, { text: `Done with request ${k}.`, stop: 'stop' });
    else
      Object.assign(a, { call: { id: `call_${calls++}`, name: 'read', args: { path: `file${k}.txt` } }, stop: 'tool' });
    return stream ? { sse: wire.sse(a) } : { json: wire.json(a) };
  };
  return { handler, log };
}

// ----- the tool loop ----------------------------------------------------------------------------

const WINDOW = 12_000;
const SETTINGS = { reserveTokens: 2000, keepRecentTokens: 2000, methodOrder: ['soft'] };
const FILE = 'x'.repeat(6000);

/**
 * Drives `turns` user turns of the SDK's agent through the Maintainer: each request from
 * `beforeRequest({ format })` sent by the SDK, its answer through `fromResponse` (or its thrown
 * error through `fromError`) into `afterResponse`, tool results and user turns appended in the
 * SDK's format. Returns what happened for the assertions.
 */
async function runLoop(format, { stream, script, turns = 6 }) {
  const sdk = SDKS[format];
  const { handler, log } = agentServer(format, script);
  const server = await serve(handler);
  const client = sdk.client(server.url);
  const model = { ...sdk.model, contextWindow: WINDOW, maxTokens: 1000, input: ['text'] };
  const s = Session.create({ id: `real-${format}`, cwd: '/w', now: 1000 });
  const events = [];
  const m = new Maintainer(s, {
    model,
    summarize: sdk.summarizer(client),
    settings: SETTINGS,
    onEvent: (e) => events.push(e),
  });
  const outcomes = [];
  const sent = [];
  try {
    for (let turn = 0; turn < turns; turn++) {
      s.appendMessages([sdk.user(`task ${turn}: read the file`)], { format });
      for (let step = 0; step < 8; step++) {
        const r = await m.beforeRequest({ format, systemPrompt: 'You are a test agent.' });
        sent.push({ turn, tokens: r.tokens, tasks: tasksIn(r.messages) });
        let reply;
        try {
          const response = await sdk.send(client, r, stream);
          reply = fromResponse(response, { format, model, session: s });
        } catch (err) {
          if (err?.code?.startsWith?.('E_')) throw err;
          reply = fromError(err, { format, model });
        }
        const out = await m.afterResponse(reply);
        outcomes.push({ turn, stop: reply.stopReason, next: out.next, reason: out.report?.reason });
        if (out.next === 'retry') continue;
        if (out.next === 'continue') {
          s.appendMessage({ role: 'user', content: out.continuePrompt });
          continue;
        }
        const calls = reply.content.filter((b) => b.type === 'toolCall');
        if (calls.length === 0) break;
        s.appendMessages(
          calls.map((c) => sdk.result(c, `contents of ${c.arguments.path}: ${FILE}`)),
          { format },
        );
      }
    }
  } finally {
    m.dispose();
    await server.close();
  }
  return { s, log, outcomes, sent, events, model };
}

for (const format of Object.keys(SDKS)) {
  for (const stream of [false, true]) {
    test(`${format}${stream ? ' (streamed)' : ''}: the real SDK's tool loop, overflows and length stops recovered`, async () => {
      const { s, log, outcomes, sent, events } = await runLoop(format, {
        stream,
        script: { 3: 'overflow', 6: 'length', 13: 'overflow' },
      });
      const agent = log.filter((l) => l.kind !== 'summary' && l.kind !== 'refused');
      assert.deepEqual(
        log.filter((l) => l.kind === 'refused'),
        [],
        'no request carried what only a response has',
      );
      // The SDK really streamed (or not).
      assert.ok(agent.every((l) => l.stream === stream));
      // Each overflow the SDK threw was recovered by a retry of a smaller request.
      for (const k of [3, 13]) {
        const i = agent.findIndex((l) => l.n === k);
        assert.ok(i >= 0 && i + 1 < agent.length, `request ${k} was sent and followed`);
        assert.equal(agent[i].kind, 'overflow');
        assert.ok(agent[i + 1].prompt < agent[i].prompt, `the retry of request ${k} is smaller`);
      }
      const failed = outcomes.filter((o) => o.stop === 'error');
      assert.equal(failed.length, 2, JSON.stringify(outcomes));
      for (const o of failed) assert.deepEqual([o.next, o.reason], ['retry', 'overflow'], JSON.stringify(o));
      // The cut reply was recovered too (sent again).
      const cut = outcomes.filter((o) => o.stop === 'length');
      assert.equal(cut.length, 1, JSON.stringify(outcomes));
      assert.equal(cut[0].next, 'retry');
      // Every request the provider answered was within the window, by the server's count.
      for (const l of agent.filter((l) => l.kind !== 'overflow')) {
        assert.ok(l.prompt <= WINDOW, `request ${l.n}: ${l.prompt} tokens`);
      }
      // No user turn was lost: each request holds every task so far, verbatim or in a summary.
      for (const l of agent) {
        const last = Math.max(...l.tasks);
        for (let t = 0; t <= last; t++) assert.ok(l.tasks.has(t), `request ${l.n} lost task ${t}`);
      }
      assert.ok(
        log.some((l) => l.kind === 'summary'),
        'a compaction ran through the summarizer',
      );
      // Tool-call ids are unique in the session, and each result answers the call before it.
      const path = s
        .pathTo(s.leafId)
        .map((id) => s.entry(id))
        .filter((e) => e.type === 'message');
      const ids = path.flatMap((e) =>
        (e.message.role === 'assistant' ? e.message.content : []).filter((b) => b.type === 'toolCall').map((b) => b.id),
      );
      assert.equal(new Set(ids).size, ids.length, `tool-call ids repeat: ${ids}`);
      path.forEach((e, i) => {
        if (e.message.role !== 'toolResult') return;
        const call = path[i - 1].message.content.find((b) => b.type === 'toolCall');
        assert.equal(e.message.toolCallId, call.id);
      });
      assert.ok(events.some((e) => e.type === 'auto_compaction_end' && !e.errorMessage));
      // All six turns were answered, and the session ends on the last answer.
      const leaf = s.entry(s.leafId).message;
      assert.equal(leaf.role, 'assistant');
      assert.equal(leaf.stopReason, 'stop');
      assert.ok(sent.at(-1).tasks.has(5));
      s.free();
    });
  }
}

// ----- the ready summarizers --------------------------------------------------------------------

const REQUEST = {
  id: 'history-1',
  purpose: 'history',
  systemPrompt: 'You summarize conversations.',
  prompt: '<conversation>task 0, task 1</conversation>',
  maxTokens: 512,
};
const CONTEXT = () => ({ signal: new AbortController().signal, telemetryTag: 'compaction_summary' });

/** Where each SDK's request keeps the system prompt, the prompt and the output limit. */
const SENT = {
  'openai-chat': (b) => [b.messages[0].content, b.messages[1].content, b.max_completion_tokens],
  'openai-responses': (b) => [b.instructions, b.input[0].content, b.max_output_tokens, b.store],
  anthropic: (b) => [b.system, b.messages[0].content, b.max_tokens],
  gemini: (b) => [b.systemInstruction.parts[0].text, b.contents[0].parts[0].text, b.generationConfig.maxOutputTokens],
};

for (const format of Object.keys(SDKS)) {
  test(`${format}: the ready summarizer sends the request through the real client and reads the answer`, async () => {
    const sdk = SDKS[format];
    const { handler } = agentServer(format, {});
    const server = await serve(handler);
    try {
      const summarize = sdk.summarizer(sdk.client(server.url));
      const summary = await summarize(REQUEST, CONTEXT());
      assert.equal(summary, 'Summary: the user asked task 0, task 1.');
      const [req] = server.requests;
      const sent = SENT[format](req.body);
      const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
      assert.equal(sent[0], REQUEST.systemPrompt);
      assert.ok(text(sent[1]).includes(REQUEST.prompt), text(sent[1]));
      assert.equal(sent[2], REQUEST.maxTokens);
      if (format === 'openai-responses') assert.equal(sent[3], false);
      assert.ok(!/stream/.test(req.url) && req.body.stream !== true, 'not streamed');
    } finally {
      await server.close();
    }
  });
}

test('the ready summarizers: an SDK error reaches the retry decision with its status; the abort signal reaches the SDK', async () => {
  for (const format of Object.keys(SDKS)) {
    const sdk = SDKS[format];
    let calls = 0;
    let hang;
    const server = await serve((req) => {
      calls++;
      if (req.body?.model === 'hang' || req.url.includes('/hang:')) return new Promise((ok) => (hang = ok));
      if (calls === 1)
        return { status: 429, json: { error: { message: 'Rate limit reached, try again.', type: 'rate_limit' } } };
      return agentServer(format, {}).handler(req);
    });
    try {
      const client = sdk.client(server.url);
      const summarize = sdk.summarizer(client);
      // The SDK's error as it threw it: its HTTP status is what the core's retry reads.
      await assert.rejects(summarize(REQUEST, CONTEXT()), (err) => err.status === 429);
      // Through compact(): the 429 is retried, the next answer is the summary.
      const s = Session.create({ id: 'sum', cwd: '/w', now: 1 });
      for (let i = 0; i < 4; i++) {
        s.appendMessage({ role: 'user', content: `task ${i}: ${'word '.repeat(300)}` });
        s.appendMessage({ role: 'assistant', content: [{ type: 'text', text: `done ${i}` }], stopReason: 'stop' });
      }
      calls = 0;
      const result = await s.compact({
        summarize,
        retry: { baseDelayMs: 1 },
        settings: { keepRecentTokens: 100, methodOrder: ['soft'] },
      });
      assert.equal(result.method, 'soft', format);
      assert.match(s.entry(result.entryId).summary, /task 0/);
      assert.ok(calls >= 2, `${format}: the 429, then the answers (${calls} calls)`);
      // An abort while the SDK's request is in flight: the SDK sees the signal and gives up.
      const controller = new AbortController();
      const call = sdk.summarizer(client, 'hang')(REQUEST, {
        signal: controller.signal,
        telemetryTag: 'compaction_summary',
      });
      await new Promise((ok) => setTimeout(ok, 50));
      controller.abort();
      await assert.rejects(call, (err) => /abort/i.test(`${err.name} ${err.message}`), format);
      hang?.({ status: 500, json: {} });
      s.free();
    } finally {
      await server.close();
    }
  }
});

test('the ready summarizers refuse what is no client or no model name', () => {
  const openai = new OpenAI({ apiKey: 'test' });
  for (const make of [
    () => openAISummarizer(openai, {}),
    () => openAISummarizer(openai, { model: '' }),
    () => openAISummarizer(openai, { model: 'm', api: 'completions' }),
    () => openAISummarizer({}, { model: 'm' }),
    () => openAISummarizer({ chat: { completions: {} } }, { model: 'm', api: 'responses' }),
    () => anthropicSummarizer(openai, { model: 'm' }),
    () => geminiSummarizer(null, { model: 'm' }),
  ]) {
    assert.throws(make, (err) => err.code === 'E_INVALID_ARGUMENT');
  }
});
