// Issue 41 items 1–2: the plain provider SDKs without glue. Each SDK's reply, shaped as the SDK
// returns it (openai-node `ChatCompletion` and `Response`, @anthropic-ai/sdk `Message`,
// @google/genai `GenerateContentResponse`), goes through `fromResponse` into
// `Maintainer.afterResponse`; each SDK's thrown API error through `fromError`; and
// `beforeRequest({ format })` hands out the request's messages in the SDK's format, which the
// format's reader takes back. The objects here are the SDKs' documented shapes, written out;
// sdk-real.test.mjs runs the real SDK packages against local servers.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fromError, fromResponse, isContextOverflow, Maintainer, Session } from 'ctxfold';
import { testsDir } from './support/project.mjs';

const SETTINGS = { reserveTokens: 1000, keepRecentTokens: 1000, methodOrder: ['soft'] };
const summarize = async (r) => `summary for ${r.purpose}`;
const USAGE0 = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

// ----- the SDKs' replies -----------------------------------------------------------------------

/** An openai-node `ChatCompletion` (client.chat.completions.create). */
function chatCompletion({ content = null, calls, finish = 'stop', prompt = 1200, cached = 0, usage = true } = {}) {
  const message = { role: 'assistant', content, refusal: null, annotations: [] };
  if (calls) {
    message.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.args) },
    }));
  }
  const r = {
    id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
    object: 'chat.completion',
    created: 1741569952,
    model: 'gpt-4.1-2025-04-14',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    service_tier: 'default',
    system_fingerprint: 'fp_a1b2c3',
  };
  if (usage) {
    r.usage = {
      prompt_tokens: prompt,
      completion_tokens: 30,
      total_tokens: prompt + 30,
      prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
  }
  return r;
}

/** An openai-node Responses `Response` (client.responses.create). */
function responsesResponse({
  text,
  calls,
  status = 'completed',
  reason,
  prompt = 1200,
  cached = 0,
  error = null,
} = {}) {
  const output = [{ type: 'reasoning', id: 'rs_67ccd2bf17f0819081ff3bb2cf6508e6', summary: [] }];
  if (text !== undefined) {
    output.push({
      type: 'message',
      id: 'msg_67ccd2bed1ec8190b14f964abc054267',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
    });
  }
  for (const c of calls ?? []) {
    output.push({
      type: 'function_call',
      id: `fc_${c.id}`,
      call_id: c.id,
      name: c.name,
      arguments: JSON.stringify(c.args),
      status: 'completed',
    });
  }
  return {
    id: 'resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b',
    object: 'response',
    created_at: 1741476542,
    status,
    error,
    incomplete_details: reason === undefined ? null : { reason },
    instructions: null,
    max_output_tokens: null,
    model: 'gpt-5-2025-08-07',
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: 'medium', summary: null },
    store: true,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: {
      input_tokens: prompt,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: 40,
      output_tokens_details: { reasoning_tokens: 12 },
      total_tokens: prompt + 40,
    },
    user: null,
    metadata: {},
  };
}

/** An @anthropic-ai/sdk `Message` (client.messages.create). */
function anthropicMessage({ text, calls, stop = 'end_turn', input = 200, cacheRead = 0, cacheWrite = 0 } = {}) {
  const content = [{ type: 'thinking', thinking: 'Let me look.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' }];
  if (text !== undefined) content.push({ type: 'text', text, citations: null });
  for (const c of calls ?? []) content.push({ type: 'tool_use', id: c.id, name: c.name, input: c.args });
  return {
    id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: {
      input_tokens: input,
      cache_creation_input_tokens: cacheWrite,
      cache_read_input_tokens: cacheRead,
      cache_creation: { ephemeral_5m_input_tokens: cacheWrite, ephemeral_1h_input_tokens: 0 },
      output_tokens: 50,
      server_tool_use: null,
      service_tier: 'standard',
    },
  };
}

/** An @google/genai `GenerateContentResponse` (ai.models.generateContent), as its JSON. */
function geminiResponse({ text, calls, finish = 'STOP', prompt = 1200, cached, candidates = true } = {}) {
  const parts = [];
  if (text !== undefined) parts.push({ text, thoughtSignature: 'CiIBVKhc7oDnQg==' });
  for (const c of calls ?? []) {
    const functionCall = { name: c.name, args: c.args };
    if (c.id !== undefined) functionCall.id = c.id;
    parts.push({ functionCall });
  }
  const usageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 15,
    totalTokenCount: prompt + 35,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
  if (cached !== undefined) usageMetadata.cachedContentTokenCount = cached;
  const r = {
    sdkHttpResponse: { headers: {} },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'mAitaLmkHPPlz7IPvtfUqQ4',
    usageMetadata,
  };
  if (!candidates) {
    r.promptFeedback = { blockReason: 'PROHIBITED_CONTENT' };
    return r;
  }
  const candidate = { finishReason: finish, index: 0 };
  if (parts.length > 0) candidate.content = { parts, role: 'model' };
  r.candidates = [candidate];
  return r;
}

// ----- the SDKs' thrown errors -----------------------------------------------------------------

/** openai-node's `APIError`: `status`, `error` (the body's `error` member), its message `<status> <text>`. */
function openaiError(status, body) {
  const err = new Error(body ? `${status} ${body.message}` : `${status} status code (no body)`);
  err.name = 'BadRequestError';
  return Object.assign(err, {
    status,
    headers: {},
    error: body,
    code: body?.code,
    param: body?.param,
    type: body?.type,
  });
}

/** @anthropic-ai/sdk's `APIError`: `error` is the whole body, the message its JSON. */
function anthropicError(status, message) {
  const body = { type: 'error', error: { type: 'invalid_request_error', message } };
  const err = new Error(`${status} ${JSON.stringify(body)}`);
  err.name = 'BadRequestError';
  return Object.assign(err, { status, headers: {}, error: body, requestID: 'req_011CSHoEeqs5C35K2UUqR7Fy' });
}

/** @google/genai's `ApiError`: `status` and the body's JSON in the message. */
function geminiError(status, message) {
  const body = { error: { code: status, message, status: 'INVALID_ARGUMENT' } };
  const err = new Error(JSON.stringify(body));
  err.name = 'ApiError';
  return Object.assign(err, { status });
}

const OVERFLOWS = {
  'openai-chat': () =>
    openaiError(400, {
      message:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130541 tokens. Please reduce the length of the messages.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    }),
  'openai-responses': () =>
    openaiError(400, {
      message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
      type: 'invalid_request_error',
      param: 'input',
      code: 'context_length_exceeded',
    }),
  anthropic: () => anthropicError(400, 'prompt is too long: 208310 tokens > 200000 maximum'),
  gemini: () =>
    geminiError(400, 'The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).'),
};

// ----- fromResponse ----------------------------------------------------------------------------

test('fromResponse: a ChatCompletion with tool calls and cached tokens', () => {
  const call = { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', name: 'read', args: { path: 'a.txt' } };
  const r = chatCompletion({ calls: [call], finish: 'tool_calls', prompt: 1200, cached: 1024 });
  const reply = fromResponse(r, { format: 'openai-chat', model: { provider: 'openai', id: 'gpt-4.1' } });
  assert.equal(reply.role, 'assistant');
  assert.deepEqual(
    reply.content.map((b) => [b.type, b.id, b.name, b.arguments]),
    [['toolCall', call.id, 'read', { path: 'a.txt' }]],
  );
  assert.equal(reply.stopReason, 'toolUse');
  // cached_tokens is inside prompt_tokens.
  assert.deepEqual(reply.usage, { input: 176, output: 30, cacheRead: 1024, cacheWrite: 0, totalTokens: 1230 });
  assert.equal(reply.provider, 'openai');
  assert.equal(reply.model, 'gpt-4.1');
  assert.equal(reply.api, 'openai-completions');
  // The response is not changed.
  assert.deepEqual(r, chatCompletion({ calls: [call], finish: 'tool_calls', prompt: 1200, cached: 1024 }));
});

test('fromResponse: Chat Completions finish reasons', () => {
  const of = (finish, content = 'x') => fromResponse(chatCompletion({ content, finish }), { format: 'openai-chat' });
  assert.equal(of('stop').stopReason, 'stop');
  assert.equal(of('length').stopReason, 'length');
  const filtered = of('content_filter', null);
  assert.equal(filtered.stopReason, 'error');
  assert.match(filtered.errorMessage, /content_filter/);
  assert.equal(of('stop').content[0].text, 'x');
  // Without a model the reply names none: the Maintainer takes it as its own model's.
  assert.equal(of('stop').provider, undefined);
  assert.equal(of('stop').model, undefined);
  // A stream asked without usage reports none, not zeros.
  assert.equal(
    fromResponse(chatCompletion({ content: 'x', usage: false }), { format: 'openai-chat' }).usage,
    undefined,
  );
});

test('fromResponse: a Responses Response: output items in one message, status and usage', () => {
  const call = { id: 'call_12345xyz', name: 'get_weather', args: { location: 'Paris' } };
  const reply = fromResponse(responsesResponse({ text: 'Checking.', calls: [call], prompt: 5000, cached: 4096 }), {
    format: 'openai-responses',
  });
  assert.deepEqual(
    reply.content.map((b) => b.type),
    ['thinking', 'text', 'toolCall'],
  );
  assert.equal(reply.content[1].text, 'Checking.');
  assert.equal(reply.content[2].name, 'get_weather');
  assert.equal(reply.stopReason, 'toolUse');
  assert.deepEqual(reply.usage, { input: 904, output: 40, cacheRead: 4096, cacheWrite: 0, totalTokens: 5040 });
  assert.equal(reply.api, 'openai-responses');
  const cut = fromResponse(responsesResponse({ text: 'Part', status: 'incomplete', reason: 'max_output_tokens' }), {
    format: 'openai-responses',
  });
  assert.equal(cut.stopReason, 'length');
  const filtered = fromResponse(responsesResponse({ status: 'incomplete', reason: 'content_filter' }), {
    format: 'openai-responses',
  });
  assert.equal(filtered.stopReason, 'error');
  const failed = fromResponse(
    responsesResponse({ status: 'failed', error: { code: 'server_error', message: 'The model failed.' } }),
    { format: 'openai-responses' },
  );
  assert.equal(failed.stopReason, 'error');
  assert.equal(failed.errorMessage, 'The model failed.');
});

test('fromResponse: an Anthropic Message: blocks, stop reasons, cache reads and writes', () => {
  const call = { id: 'toolu_01A09q90qw90lq917835lq9', name: 'read', args: { path: 'b.ts' } };
  const reply = fromResponse(
    anthropicMessage({
      text: 'Reading it.',
      calls: [call],
      stop: 'tool_use',
      input: 12,
      cacheRead: 3000,
      cacheWrite: 250,
    }),
    { format: 'anthropic', model: { provider: 'anthropic', id: 'claude-sonnet-4-5' } },
  );
  assert.deepEqual(
    reply.content.map((b) => b.type),
    ['thinking', 'text', 'toolCall'],
  );
  assert.equal(reply.content[0].thinkingSignature, 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h');
  assert.deepEqual(reply.content[2].arguments, { path: 'b.ts' });
  assert.equal(reply.stopReason, 'toolUse');
  // Anthropic's input_tokens leave the cache out.
  assert.deepEqual(reply.usage, { input: 12, output: 50, cacheRead: 3000, cacheWrite: 250, totalTokens: 3312 });
  const stops = { end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length', refusal: 'error' };
  for (const [stop, want] of Object.entries(stops)) {
    assert.equal(fromResponse(anthropicMessage({ text: 'x', stop }), { format: 'anthropic' }).stopReason, want, stop);
  }
});

test('fromResponse: a Gemini GenerateContentResponse: parts, finish reasons, cached content', () => {
  const reply = fromResponse(
    geminiResponse({ text: 'Looking.', calls: [{ name: 'read', args: { path: 'c' } }], prompt: 9000, cached: 8000 }),
    { format: 'gemini', model: { provider: 'google', id: 'gemini-2.5-flash' } },
  );
  assert.deepEqual(
    reply.content.map((b) => b.type),
    ['text', 'toolCall'],
  );
  assert.equal(reply.content[0].textSignature, 'CiIBVKhc7oDnQg==');
  // STOP with a call is a tool turn.
  assert.equal(reply.stopReason, 'toolUse');
  // cachedContentTokenCount is inside promptTokenCount; thoughts are output.
  assert.deepEqual(reply.usage, { input: 1000, output: 35, cacheRead: 8000, cacheWrite: 0, totalTokens: 9035 });
  assert.equal(
    fromResponse(geminiResponse({ text: 'x', finish: 'MAX_TOKENS' }), { format: 'gemini' }).stopReason,
    'length',
  );
  const unsafe = fromResponse(geminiResponse({ finish: 'SAFETY' }), { format: 'gemini' });
  assert.equal(unsafe.stopReason, 'error');
  assert.deepEqual(unsafe.content, []);
  assert.match(unsafe.errorMessage, /SAFETY/);
  const blocked = fromResponse(geminiResponse({ candidates: false }), { format: 'gemini' });
  assert.equal(blocked.stopReason, 'error');
  assert.match(blocked.errorMessage, /PROHIBITED_CONTENT/);
});

test('fromResponse: what is not such a response is refused with a hint naming the formats', () => {
  const cases = [
    [anthropicMessage({ text: 'x' }), 'openai-chat'],
    [chatCompletion({ content: 'x' }), 'anthropic'],
    [chatCompletion({ content: 'x' }), 'openai-responses'],
    [chatCompletion({ content: 'x' }), 'gemini'],
    [{ role: 'assistant', content: [{ type: 'text', text: 'pi message' }] }, 'openai-chat'],
    [null, 'gemini'],
    ['text', 'anthropic'],
  ];
  for (const [value, format] of cases) {
    assert.throws(
      () => fromResponse(value, { format }),
      (err) => {
        assert.equal(err.code, 'E_INVALID_MESSAGE', err.message);
        for (const name of ['openai-chat', 'openai-responses', 'anthropic', 'gemini']) {
          assert.ok(err.message.includes(`"${name}"`), err.message);
        }
        return true;
      },
      format,
    );
  }
  // A malformed message inside a response: the format's reader says where.
  const bad = chatCompletion({ content: 'x' });
  bad.choices[0].message.tool_calls = [{ id: 'c', type: 'function', function: { name: 'read' } }];
  assert.throws(
    () => fromResponse(bad, { format: 'openai-chat' }),
    (err) => err.code === 'E_INVALID_MESSAGE' && /tool_calls\[0\]\.function\.arguments/.test(err.message),
  );
  for (const options of [
    undefined,
    {},
    { format: 'pi' },
    { format: 'ai-sdk-model' },
    { format: 'anthropic', model: 'x' },
  ]) {
    assert.throws(
      () => fromResponse(anthropicMessage({ text: 'x' }), options),
      (err) => err.code === 'E_INVALID_ARGUMENT',
    );
  }
});

// ----- fromError -------------------------------------------------------------------------------

test("fromError: each provider's overflow error classifies as an overflow, other failures do not", () => {
  for (const [format, make] of Object.entries(OVERFLOWS)) {
    const reply = fromError(make(), { format });
    assert.equal(reply.stopReason, 'error', format);
    assert.deepEqual(reply.content, []);
    assert.ok(isContextOverflow(reply), `${format}: ${reply.errorMessage}`);
    // Read without the format too.
    assert.ok(isContextOverflow(fromError(make())), format);
  }
  // The provider's text is carried.
  assert.match(fromError(OVERFLOWS.anthropic()).errorMessage, /prompt is too long: 208310 tokens/);
  // A fetch response read as { status, body }: the body's error message, JSON or text.
  const fetched = fromError({
    status: 400,
    body: { type: 'error', error: { message: 'prompt is too long: 9 tokens' } },
  });
  assert.equal(fetched.errorMessage, '400 prompt is too long: 9 tokens');
  assert.ok(isContextOverflow(fetched));
  assert.ok(isContextOverflow(fromError({ status: 413, statusText: 'Payload Too Large' })));
  // Not overflows.
  const others = [
    openaiError(429, {
      message: 'Rate limit reached for gpt-4.1 on tokens per min (TPM).',
      code: 'rate_limit_exceeded',
    }),
    anthropicError(529, 'Overloaded'),
    geminiError(500, 'An internal error has occurred.'),
    { status: 500, body: 'upstream connect error' },
    new TypeError('fetch failed'),
  ];
  for (const e of others) {
    const reply = fromError(e);
    assert.equal(reply.stopReason, 'error');
    assert.equal(isContextOverflow(reply), false, reply.errorMessage);
    assert.ok(reply.errorMessage.length > 0);
  }
  assert.equal(fromError(others[3]).errorMessage, '500 upstream connect error');
  // An aborted request.
  const abort = new Error('Request was aborted.');
  abort.name = 'APIUserAbortError';
  assert.equal(fromError(abort).stopReason, 'aborted');
  // The model and api, when given.
  const named = fromError(OVERFLOWS.gemini(), {
    format: 'gemini',
    model: { provider: 'google', id: 'gemini-2.5-pro' },
  });
  assert.deepEqual([named.api, named.provider, named.model], ['google-generative-ai', 'google', 'gemini-2.5-pro']);
  for (const bad of [undefined, null, 'text', 400]) {
    assert.throws(
      () => fromError(bad),
      (err) => err.code === 'E_INVALID_ARGUMENT',
    );
  }
  assert.throws(
    () => fromError(new Error('x'), { format: 'pi' }),
    (err) => err.code === 'E_INVALID_ARGUMENT',
  );
});

// ----- beforeRequest({ format }) ---------------------------------------------------------------

/** A session with history enough to compact. */
function grown(turns, model) {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  for (let i = 0; i < turns; i++) {
    s.appendMessage({ role: 'user', content: `q${i} ${'word '.repeat(200)}`, timestamp: 1000 + i }, { now: 1000 + i });
    s.appendMessage(
      {
        role: 'assistant',
        content: [{ type: 'text', text: `a${i} ${'word '.repeat(200)}` }],
        provider: model.provider,
        model: model.id,
        usage: USAGE0,
        stopReason: 'stop',
      },
      { now: 1000 + i },
    );
  }
  return s;
}

test('beforeRequest(): without a format it returns pi messages, as before', async () => {
  const model = { provider: 'anthropic', id: 'claude-test', contextWindow: 200_000, input: ['text'] };
  const s = grown(2, model);
  const m = new Maintainer(s, { model, summarize, settings: SETTINGS });
  const plain = await m.beforeRequest({ systemPrompt: 'sys' });
  assert.deepEqual(plain.messages, s.toLlmMessages({ model }));
  assert.equal(plain.system, undefined);
  assert.equal(plain.warnings, undefined);
  // An unknown format is refused before anything runs.
  const bytes = s.toJsonl();
  await assert.rejects(m.beforeRequest({ format: 'openai' }), (err) => err.code === 'E_INVALID_ARGUMENT');
  assert.equal(s.toJsonl(), bytes);
  m.dispose();
});

test('beforeRequest({ format }): the messages and system prompt as toMessages writes them', async () => {
  const model = { provider: 'anthropic', id: 'claude-test', contextWindow: 200_000, input: ['text'] };
  const s = grown(2, model);
  const m = new Maintainer(s, { model, summarize, settings: SETTINGS });
  for (const format of ['openai-chat', 'openai-responses', 'anthropic', 'gemini', 'ai-sdk-model', 'pi']) {
    const out = await m.beforeRequest({ format, systemPrompt: 'You are terse.' });
    const want = s.toMessages({ format, system: 'You are terse.', model });
    assert.deepEqual(out.messages, want.messages, format);
    assert.deepEqual(out.system, want.system, format);
    assert.deepEqual(out.warnings, want.warnings, format);
  }
  // Where the system prompt goes: apart, or first among the messages.
  const claude = await m.beforeRequest({ format: 'anthropic', systemPrompt: ['one', 'two'] });
  assert.equal(claude.system, 'one\n\ntwo');
  const chat = await m.beforeRequest({ format: 'openai-chat', systemPrompt: 'sys' });
  assert.deepEqual(chat.messages[0], { role: 'system', content: 'sys' });
  assert.equal(chat.system, undefined);
  const gemini = await m.beforeRequest({ format: 'gemini', systemPrompt: 'sys' });
  assert.deepEqual(gemini.system, { parts: [{ text: 'sys' }] });
  // Without a systemPrompt, the one the session keeps.
  const kept = Session.fromMessages(
    [
      { role: 'system', content: 'kept prompt' },
      { role: 'user', content: 'hi' },
    ],
    { format: 'openai-chat' },
  );
  const mk = new Maintainer(kept, { model, summarize, settings: SETTINGS });
  assert.equal((await mk.beforeRequest({ format: 'anthropic' })).system, 'kept prompt');
  mk.dispose();
  m.dispose();
});

// ----- the SDKs' tool loops --------------------------------------------------------------------

/** Each SDK: its model, a tool-call reply, a text reply, from its canned shapes. */
const SDKS = {
  'openai-chat': {
    model: { provider: 'openai', id: 'gpt-4.1', api: 'openai-completions' },
    call: (id, prompt) =>
      chatCompletion({ calls: [{ id, name: 'read', args: { path: `${id}.txt` } }], finish: 'tool_calls', prompt }),
    text: (text, prompt) => chatCompletion({ content: text, prompt, cached: Math.floor(prompt / 2) }),
  },
  'openai-responses': {
    model: { provider: 'openai', id: 'gpt-5', api: 'openai-responses' },
    call: (id, prompt) => responsesResponse({ calls: [{ id, name: 'read', args: { path: `${id}.txt` } }], prompt }),
    text: (text, prompt) => responsesResponse({ text, prompt, cached: Math.floor(prompt / 2) }),
  },
  anthropic: {
    model: { provider: 'anthropic', id: 'claude-sonnet-4-5', api: 'anthropic-messages' },
    call: (id, prompt) =>
      anthropicMessage({ calls: [{ id, name: 'read', args: { path: `${id}.txt` } }], stop: 'tool_use', input: prompt }),
    text: (text, prompt) => anthropicMessage({ text, input: 100, cacheRead: prompt - 100 }),
  },
  gemini: {
    model: { provider: 'google', id: 'gemini-2.5-flash', api: 'google-generative-ai' },
    call: (id, prompt) => geminiResponse({ calls: [{ id, name: 'read', args: { path: `${id}.txt` } }], prompt }),
    text: (text, prompt) => geminiResponse({ text, prompt, cached: Math.floor(prompt / 2) }),
  },
};

for (const [format, sdk] of Object.entries(SDKS)) {
  test(`${format}: a tool loop through fromResponse, an overflow through fromError, then a retry`, async () => {
    const model = { ...sdk.model, contextWindow: 8000, maxTokens: 1000, input: ['text'] };
    const s = grown(8, model);
    const events = [];
    const m = new Maintainer(s, { model, summarize, settings: SETTINGS, onEvent: (e) => events.push(e) });
    const systemPrompt = 'You are a test agent.';
    /** The request, in the SDK's format; its reader takes it back (the round trip). */
    const request = async () => {
      const r = await m.beforeRequest({ format, systemPrompt });
      const back = Session.fromMessages(r.messages, { format, ...(r.system !== undefined && { system: r.system }) });
      assert.deepEqual(back.toMessages({ format, model }).messages, r.messages, `${format}: round trip`);
      back.free();
      return r;
    };
    let prompt = 3000;
    for (let turn = 0; turn < 2; turn++) {
      s.appendMessage({ role: 'user', content: `task ${turn}: read the file` });
      await request();
      const id = `call_${turn}`;
      const asked = fromResponse(sdk.call(id, prompt), { format, model });
      assert.equal(asked.stopReason, 'toolUse');
      const out = await m.afterResponse(asked);
      assert.equal(out.next, 'done');
      const toolCall = asked.content.find((b) => b.type === 'toolCall');
      assert.equal(toolCall.id, id);
      s.appendMessage({
        role: 'toolResult',
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        content: [{ type: 'text', text: `contents of ${toolCall.arguments.path}` }],
        isError: false,
      });
      const r = await request();
      // The SDK's request carries the call and its result.
      assert.ok(JSON.stringify(r.messages).includes(id), JSON.stringify(r.messages));
      prompt += 400;
      if (turn === 1) {
        // The provider refuses the request: the SDK throws, the error is the failed reply.
        const failed = fromError(OVERFLOWS[format](), { format, model });
        const after = await m.afterResponse(failed);
        assert.equal(after.next, 'retry', JSON.stringify(events.map((e) => e.type)));
        assert.equal(after.report.reason, 'overflow');
        const again = await request();
        assert.ok(again.tokens < model.contextWindow);
        assert.ok(!JSON.stringify(again.messages).includes('prompt is too long'));
      }
      const done = await m.afterResponse(fromResponse(sdk.text(`answer ${turn}`, prompt), { format, model }));
      assert.equal(done.next, 'done');
    }
    // Every reply is in the session, as read: the last one with its usage.
    const last = s.entry(s.leafId).message;
    assert.equal(last.role, 'assistant');
    assert.equal(last.provider, model.provider);
    assert.equal(last.usage.input + last.usage.cacheRead, prompt);
    m.dispose();
  });
}

test('afterResponse: a length stop read by fromResponse is recovered as an incomplete turn', async () => {
  const model = { provider: 'openai', id: 'gpt-4.1', contextWindow: 200_000, maxTokens: 1000, input: ['text'] };
  const s = grown(2, model);
  const m = new Maintainer(s, { model, summarize, settings: SETTINGS });
  s.appendMessage({ role: 'user', content: 'write a long essay' });
  await m.beforeRequest({ format: 'openai-chat' });
  const cut = fromResponse(chatCompletion({ content: 'The essay begins', finish: 'length', prompt: 900 }), {
    format: 'openai-chat',
    model,
  });
  const events = [];
  const out = await m.afterResponse(cut);
  // The core's incomplete-output recovery (spec: compaction §8): the cut turn leaves the
  // context and the request is sent again.
  assert.equal(out.next, 'retry');
  const path = s.pathTo(s.leafId).map((id) => s.entry(id));
  assert.ok(!path.some((e) => e.type === 'message' && e.message.stopReason === 'length'));
  // A `stop` is done.
  const done = await m.afterResponse(
    fromResponse(chatCompletion({ content: 'The essay.', prompt: 900 }), { format: 'openai-chat', model }),
  );
  assert.equal(done.next, 'done', JSON.stringify(events));
  m.dispose();
});

// ----- what the real SDKs return, and hostile values (issue 41; tests/fuzz/responses.mjs) --------

test("fromResponse: what openai-node's stream and parse helpers add is no member of the next request", () => {
  const streamed = chatCompletion({ content: 'x', calls: [{ id: 'c1', name: 'read', args: { path: 'a' } }] });
  streamed.choices[0].message.parsed = null;
  streamed.choices[0].message.tool_calls[0].function.parsed_arguments = { path: 'a' };
  const before = structuredClone(streamed);
  const reply = fromResponse(streamed, { format: 'openai-chat' });
  assert.deepEqual(streamed, before, 'the SDK object is left as it was');
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  s.appendMessage({ role: 'user', content: 'q' });
  s.appendMessage(reply);
  const sent = JSON.stringify(s.toMessages({ format: 'openai-chat' }).messages);
  assert.ok(!/parsed/.test(sent), sent);
  const final = responsesResponse({ text: 'hi', calls: [{ id: 'c2', name: 'read', args: { path: 'b' } }] });
  final.output[1].content[0].parsed = null;
  final.output[2].parsed_arguments = { path: 'b' };
  final.output_text = 'hi';
  s.appendMessage({ role: 'user', content: 'q2' });
  s.appendMessage(fromResponse(final, { format: 'openai-responses' }));
  const input = JSON.stringify(s.toMessages({ format: 'openai-responses' }).messages);
  assert.ok(!/parsed/.test(input), input);
  s.free();
});

test("fromResponse: a Gemini stream's chunks, in order, read as one response", () => {
  const chunks = [
    {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Let me ', thought: true }] }, index: 0 }],
      responseId: 'r1',
    },
    {
      candidates: [
        { content: { role: 'model', parts: [{ text: 'think.', thought: true, thoughtSignature: 'c2ln' }] } },
      ],
    },
    { candidates: [{ content: { role: 'model', parts: [{ text: 'Reading ' }] } }] },
    { candidates: [{ content: { role: 'model', parts: [{ text: 'it.' }] } }] },
    {
      candidates: [
        {
          content: { role: 'model', parts: [{ functionCall: { name: 'read', args: { path: 'a' } } }] },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        promptTokenCount: 500,
        cachedContentTokenCount: 100,
        candidatesTokenCount: 9,
        totalTokenCount: 509,
      },
    },
  ];
  const reply = fromResponse(chunks, { format: 'gemini' });
  assert.deepEqual(
    reply.content.map((b) => [b.type, b.thinking ?? b.text ?? b.name]),
    [
      ['thinking', 'Let me think.'],
      ['text', 'Reading it.'],
      ['toolCall', 'read'],
    ],
  );
  assert.equal(reply.content[0].thinkingSignature, 'c2ln');
  assert.equal(reply.stopReason, 'toolUse');
  assert.deepEqual(reply.usage, { input: 400, output: 9, cacheRead: 100, cacheWrite: 0, totalTokens: 509 });
  // A cut stream: the last finish reason wins.
  const cut = fromResponse(
    [chunks[2], { candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'MAX_TOKENS' }] }],
    {
      format: 'gemini',
    },
  );
  assert.equal(cut.stopReason, 'length');
  assert.equal(cut.content[0].text, 'Reading x');
  for (const bad of [[], [null], ['chunk']]) {
    assert.throws(
      () => fromResponse(bad, { format: 'gemini' }),
      (err) => err.code === 'E_INVALID_MESSAGE',
    );
  }
  // Only Gemini's responses come as chunk lists.
  assert.throws(
    () => fromResponse([chatCompletion({ content: 'x' })], { format: 'openai-chat' }),
    (err) => err.code === 'E_INVALID_MESSAGE',
  );
});

test("fromResponse: Gemini's id-less calls get ids no earlier call has, the session's numbering with `session`", () => {
  const call = (responseId) => {
    const r = geminiResponse({
      calls: [
        { name: 'read', args: { path: 'a' } },
        { name: 'read', args: { path: 'b' } },
      ],
    });
    if (responseId === undefined) delete r.responseId;
    else r.responseId = responseId;
    return r;
  };
  const ids = (reply) => reply.content.filter((b) => b.type === 'toolCall').map((b) => b.id);
  // Without a session: ids of the response's own (its responseId, else random).
  const one = ids(fromResponse(call('resp-1'), { format: 'gemini' }));
  const two = ids(fromResponse(call('resp-2'), { format: 'gemini' }));
  assert.deepEqual(one, ['gemini_resp-1_0_read', 'gemini_resp-1_1_read']);
  assert.equal(new Set([...one, ...two]).size, 4);
  const random = [ids(fromResponse(call(), { format: 'gemini' })), ids(fromResponse(call(), { format: 'gemini' }))];
  assert.equal(new Set(random.flat()).size, 4, JSON.stringify(random));
  // With the session: the ids reading the session's history gives, so an id-less function
  // response appended in the gemini format answers its call.
  const model = { provider: 'google', id: 'gemini-2.5-flash' };
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  for (let turn = 0; turn < 2; turn++) {
    s.appendMessages([{ role: 'user', parts: [{ text: `turn ${turn}` }] }], { format: 'gemini' });
    const reply = fromResponse(call('same-id'), { format: 'gemini', model, session: s });
    assert.deepEqual(ids(reply), [`gemini_${2 * turn}_read`, `gemini_${2 * turn + 1}_read`]);
    s.appendMessage(reply);
    s.appendMessages(
      [
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'read', response: { output: `a${turn}` } } },
            { functionResponse: { name: 'read', response: { output: `b${turn}` } } },
          ],
        },
      ],
      { format: 'gemini' },
    );
  }
  const results = s.toLlmMessages().filter((m) => m.role === 'toolResult');
  assert.deepEqual(
    results.map((m) => [m.toolCallId, m.content[0].text]),
    [
      ['gemini_0_read', 'a0'],
      ['gemini_1_read', 'b0'],
      ['gemini_2_read', 'a1'],
      ['gemini_3_read', 'b1'],
    ],
  );
  // The history read back from its own request gives the same ids.
  const sent = s.toMessages({ format: 'gemini', model }).messages;
  const back = Session.fromMessages(sent, { format: 'gemini', model });
  assert.deepEqual(
    back.toLlmMessages().map((m) => m.toolCallId ?? null),
    s.toLlmMessages().map((m) => m.toolCallId ?? null),
  );
  assert.throws(
    () => fromResponse(call(), { format: 'gemini', session: {} }),
    (err) => err.code === 'E_INVALID_ARGUMENT',
  );
  back.free();
  s.free();
});

test('fromResponse / fromError: counts past 2^53 and errors without text still give a reply the session takes', () => {
  const huge = chatCompletion({ content: 'x', prompt: 2 ** 60 });
  huge.usage.completion_tokens = 2 ** 60;
  const claude = anthropicMessage({ text: 'x', input: 2 ** 53, cacheRead: 2 ** 53 });
  const gemini = geminiResponse({ text: 'x', prompt: 2 ** 54 });
  gemini.usageMetadata.candidatesTokenCount = 2 ** 53;
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  for (const [value, format] of [
    [huge, 'openai-chat'],
    [claude, 'anthropic'],
    [gemini, 'gemini'],
  ]) {
    s.appendMessage({ role: 'user', content: 'q' });
    const reply = fromResponse(value, { format });
    for (const v of Object.values(reply.usage)) assert.ok(Number.isSafeInteger(v), JSON.stringify(reply.usage));
    s.appendMessage(reply);
  }
  for (const thrown of [{ name: [], message: {} }, { message: '', error: { message: '' } }, { name: '' }]) {
    const reply = fromError(thrown);
    assert.ok(reply.errorMessage.length > 0, JSON.stringify(thrown));
  }
  s.free();
});

test('fuzz target of fromResponse / fromError: 10 s from seed 1 find nothing', { timeout: 120_000 }, () => {
  const res = spawnSync(
    process.execPath,
    [path.join(testsDir, 'fuzz', 'responses.mjs'), '--seconds', '10', '--seed', '1'],
    {
      cwd: testsDir,
      encoding: 'utf8',
    },
  );
  assert.equal(res.status, 0, `${res.stdout}${res.stderr}`);
  assert.match(res.stdout, /no finding/);
  for (const line of res.stdout.split('\n').filter((l) => / runs, \d+ accepted/.test(l))) {
    const [, runs, accepted] = /: (\d+) runs, (\d+) accepted/.exec(line);
    assert.ok(Number(runs) > 100 && Number(accepted) > 0, line);
  }
});
