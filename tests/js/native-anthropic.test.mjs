// Anthropic server compaction (spec: compaction §13) against a local HTTP server on 127.0.0.1
// that speaks the Messages API: the request field by field (headers with the beta and
// anthropic-version, the body with the compaction edit), the commit (the summary text, the
// block with its signature under preserveData.anthropicCompaction), the replay for Claude
// and for other targets, and the failures — 4xx/5xx, 429 with retry-after, malformed JSON,
// no or two compaction blocks, an aborted signal, a hang past the timeout. After every
// failure the session's bytes are unchanged and compact() moves on to the next method.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { Session } from 'ctxfold';
import { header, line } from './support/sessions.mjs';

/** A session of 8 turns whose last assistant reports `contextTokens` of usage. */
function sessionText(contextTokens = 80_000) {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < 8; i++) {
    const last = i === 7;
    lines.push(line(`u${i}`, parent, { role: 'user', content: `question ${i} `.repeat(40), timestamp: 1 }));
    const content = [{ type: 'text', text: `answer ${i} `.repeat(40) }];
    if (i === 2) content.push({ type: 'toolCall', id: 'call|7', name: 'read', arguments: { path: 'a.txt' } });
    const used = last ? { input: contextTokens, output: 10, cacheRead: 0, cacheWrite: 0 } : undefined;
    lines.push(
      line(`a${i}`, `u${i}`, {
        role: 'assistant',
        content,
        provider: 'anthropic',
        model: 'claude-opus-4-6',
        usage: used ?? { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
        stopReason: i === 2 ? 'toolUse' : 'stop',
      }),
    );
    parent = `a${i}`;
    if (i === 2) {
      lines.push(
        line('t2', parent, {
          role: 'toolResult',
          toolCallId: 'call|7',
          toolName: 'read',
          content: [{ type: 'text', text: 'file text' }],
          isError: false,
        }),
      );
      parent = 't2';
    }
  }
  return `${lines.join('\n')}\n`;
}

const SUMMARY = 'The user asked eight questions; all were answered.';
const SIGNATURE = 'EuYBCkQYAiJA-opaque==';

/** What the server answers next (a function of the request), and the requests it saw. */
let reply;
const seen = [];
let server;
let base;

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

function compacted(blocks = [{ type: 'compaction', content: SUMMARY, encrypted_content: SIGNATURE }]) {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-opus-4-6',
    content: blocks,
    stop_reason: 'compaction',
    usage: { input_tokens: 81_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 900 },
  };
}

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      reply(req, res, body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

function claude(extra = {}) {
  return {
    id: 'claude-opus-4-6',
    provider: 'anthropic',
    api: 'anthropic-messages',
    baseUrl: base,
    contextWindow: 200_000,
    input: ['text'],
    // The local server stands in for the API: the route is opted in. This file tests the
    // threshold lane (`compact-2026-01-12`); native-ondemand.test.mjs the on-demand one.
    remoteCompaction: { enabled: true, onDemand: false },
    ...extra,
  };
}

const credentials = ({ provider, api }) => {
  assert.equal(provider, 'anthropic');
  assert.equal(api, 'anthropic-messages');
  return Promise.resolve({ 'x-api-key': 'sk-test' });
};

/** compact() with the Anthropic lane first and a local summarizer as the next method. */
function compactOptions(extra = {}) {
  return {
    model: claude(),
    credentials,
    settings: { keepRecentTokens: 100, methodOrder: ['remote', 'soft'] },
    summarize: () => Promise.resolve('local summary'),
    retry: { baseDelayMs: 1 },
    now: 1_800_000_000_000,
    ...extra,
  };
}

test('the request carries the beta, the version, credentials and the compaction edit', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, compacted());
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact(compactOptions());
  assert.equal(result.method, 'remote');
  assert.equal(seen.length, 1);
  const [r] = seen;
  assert.equal(r.method, 'POST');
  assert.equal(r.url, '/v1/messages');
  assert.equal(r.headers['anthropic-beta'], 'compact-2026-01-12');
  assert.equal(r.headers['anthropic-version'], '2023-06-01');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['x-api-key'], 'sk-test');
  const body = JSON.parse(r.body);
  assert.deepEqual(Object.keys(body), ['model', 'max_tokens', 'system', 'messages', 'context_management']);
  assert.equal(body.model, 'claude-opus-4-6');
  assert.equal(body.max_tokens, 13_107);
  assert.equal(body.system[0].type, 'text');
  assert.match(body.system[0].text, /summar/i);
  const [edit] = body.context_management.edits;
  assert.equal(body.context_management.edits.length, 1);
  assert.equal(edit.type, 'compact_20260112');
  assert.deepEqual(edit.trigger, { type: 'input_tokens', value: 50_000 });
  assert.equal(edit.pause_after_compaction, true);
  assert.match(edit.instructions, /^SCOPE: The conversation's final /);
  assert.match(edit.instructions, /You MUST NOT call any tools/);
  // The whole conversation, Anthropic wire format: alternating turns, the tool pair intact.
  const roles = body.messages.map((m) => m.role);
  assert.equal(roles[0], 'user');
  assert.equal(roles.at(-1), 'user', 'a trailing assistant turn gets a user turn after it');
  const use = body.messages.flatMap((m) => m.content).find((b) => b.type === 'tool_use');
  assert.deepEqual(use, { type: 'tool_use', id: 'call_7', name: 'read', input: { path: 'a.txt' } });
  const res = body.messages.flatMap((m) => m.content).find((b) => b.type === 'tool_result');
  assert.equal(res.tool_use_id, 'call_7');
  assert.deepEqual(res.content, [{ type: 'text', text: 'file text' }]);
  assert.equal(body.messages[0].content[0].text, `question 0 `.repeat(40));
});

test('the commit keeps the summary text and the signed block; replay for Claude, text for others', async () => {
  reply = (_req, res) => send(res, 200, compacted());
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact(compactOptions());
  const entry = result.compactionEntry;
  assert.equal(entry.method, 'remote');
  assert.equal(entry.shortSummary, 'Remote compaction');
  assert.ok(entry.summary.startsWith(SUMMARY));
  const record = entry.preserveData.anthropicCompaction;
  assert.equal(record.provider, 'anthropic');
  assert.equal(record.content, SUMMARY);
  assert.equal(record.encryptedContent, SIGNATURE);
  assert.equal(record.model, 'claude-opus-4-6');
  assert.equal(record.usedTokens, 81_000);

  const forClaude = s.toLlmMessages({ model: claude() });
  const summary = forClaude[0];
  assert.equal(summary.role, 'user');
  assert.match(summary.content[0].text, /The user asked eight questions/);
  assert.deepEqual(summary.providerPayload, {
    type: 'anthropicCompaction',
    provider: 'anthropic',
    content: SUMMARY,
    encryptedContent: SIGNATURE,
    // The harness's file lists, kept out of the signed block.
    filesText: '<files>\na.txt (Read)\n</files>',
  });
  assert.equal(record.filesText, summary.providerPayload.filesText);
  const forOpenAi = s.toLlmMessages({ model: { id: 'gpt-5', provider: 'openai', api: 'openai-responses' } });
  assert.equal(forOpenAi[0].providerPayload, undefined);
  assert.match(forOpenAi[0].content[0].text, /The user asked eight questions/);
  // A later compaction starts from the stored block, natively, for the same provider.
  seen.length = 0;
  const text = s.toJsonl();
  const more = Session.fromJsonl(
    `${text}${line('u9', result.entryId, { role: 'user', content: 'next '.repeat(200), timestamp: 1 })}\n${line(
      'a9',
      'u9',
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'ok '.repeat(200) }],
        provider: 'anthropic',
        model: 'claude-opus-4-6',
        usage: { input: 90_000, output: 10, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'stop',
      },
    )}\n`,
  );
  await more.compact(compactOptions());
  const body = JSON.parse(seen[0].body);
  assert.deepEqual(body.messages[0], {
    role: 'assistant',
    content: [{ type: 'compaction', content: SUMMARY, encrypted_content: SIGNATURE }],
  });
});

test('an ineligible model or a small context takes the next method without a request', async () => {
  for (const [model, tokens] of [
    [claude({ id: 'claude-sonnet-4-5' }), 80_000],
    [claude({ api: 'openai-responses' }), 80_000],
    [claude({ remoteCompaction: undefined }), 80_000],
    [claude(), 40_000],
  ]) {
    seen.length = 0;
    reply = (_req, res) => send(res, 200, compacted());
    const s = Session.fromJsonl(sessionText(tokens));
    const result = await s.compact(compactOptions({ model }));
    assert.equal(result.method, 'soft', JSON.stringify(model));
    assert.equal(seen.length, 0);
  }
});

const failures = [
  [
    'a 400',
    (_req, res) => send(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } }),
    400,
  ],
  ['a 500', (_req, res) => send(res, 500, { type: 'error', error: { message: 'boom' } }), 500],
  ['malformed JSON', (_req, res) => send(res, 200, '{"content": [{"type": "compaction"'), undefined],
  ['no compaction block', (_req, res) => send(res, 200, compacted([{ type: 'text', text: 'an answer' }])), undefined],
  [
    'two compaction blocks',
    (_req, res) =>
      send(
        res,
        200,
        compacted([
          { type: 'compaction', content: 'a' },
          { type: 'compaction', content: 'b' },
        ]),
      ),
    undefined,
  ],
  ['an empty summary', (_req, res) => send(res, 200, compacted([{ type: 'compaction', content: null }])), undefined],
];

for (const [what, answer, status] of failures) {
  test(`${what}: E_SUMMARIZER from the lane, the next method runs, nothing written before`, async () => {
    reply = answer;
    const text = sessionText();
    const s = Session.fromJsonl(text);
    const plan = s.planCompaction({ strategy: 'context-full', keepRecentTokens: 100 }, {});
    plan.free();
    // compact() with only the lane: the failure is coded and the session unchanged.
    await assert.rejects(
      s.compact(compactOptions({ summarize: undefined, settings: { keepRecentTokens: 100, methodOrder: ['remote'] } })),
      (err) => {
        assert.equal(err.code, 'E_SUMMARIZER', err.message);
        if (status !== undefined) assert.equal(err.status, status);
        return true;
      },
    );
    assert.equal(s.toJsonl(), text);
    // With a next method, the walk moves on.
    const result = await s.compact(compactOptions());
    assert.equal(result.method, 'soft');
    assert.ok(result.compactionEntry.summary.startsWith('local summary'));
  });
}

test('a 429 waits out retry-after, then succeeds', async () => {
  let calls = 0;
  seen.length = 0;
  reply = (_req, res) => {
    calls += 1;
    if (calls === 1) send(res, 429, { type: 'error', error: { message: 'rate limited' } }, { 'retry-after': '1' });
    else send(res, 200, compacted());
  };
  const s = Session.fromJsonl(sessionText());
  const started = Date.now();
  const result = await s.compact(compactOptions());
  assert.equal(result.method, 'remote');
  assert.equal(calls, 2);
  assert.ok(Date.now() - started >= 900, 'waited about a second');
});

test('an aborted signal stops the lane, is never retried and writes nothing', async () => {
  let calls = 0;
  reply = () => {
    calls += 1; // never answers
  };
  const text = sessionText();
  const s = Session.fromJsonl(text);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  await assert.rejects(s.compact(compactOptions({ signal: controller.signal })), (err) => {
    assert.equal(err.code, 'E_ABORTED');
    return true;
  });
  assert.equal(calls, 1);
  assert.equal(s.toJsonl(), text);
});

test('a hang past the timeout fails the lane without retry; the next method runs', async () => {
  let calls = 0;
  reply = () => {
    calls += 1; // never answers
  };
  const text = sessionText();
  const s = Session.fromJsonl(text);
  await assert.rejects(
    s.compact(
      compactOptions({ summarize: undefined, native: { timeoutMs: 150 }, settings: { methodOrder: ['remote'] } }),
    ),
    (err) => {
      assert.equal(err.code, 'E_SUMMARIZER');
      assert.match(err.message, /timed out/);
      return true;
    },
  );
  assert.equal(calls, 1);
  assert.equal(s.toJsonl(), text);
  const result = await s.compact(compactOptions({ native: { timeoutMs: 150 } }));
  assert.equal(result.method, 'soft');
});

test('a custom fetch and plain headers are used', async () => {
  const calls = [];
  const fetch = (url, init) => {
    calls.push({ url, init });
    return Promise.resolve(new Response(JSON.stringify(compacted()), { status: 200 }));
  };
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact(
    compactOptions({
      fetch,
      credentials: undefined,
      headers: { authorization: 'Bearer t' },
      model: claude({ baseUrl: 'https://proxy.example/' }),
    }),
  );
  assert.equal(result.method, 'remote');
  assert.equal(calls[0].url, 'https://proxy.example/v1/messages');
  assert.equal(calls[0].init.headers.authorization, 'Bearer t');
  assert.equal(calls[0].init.headers['anthropic-beta'], 'compact-2026-01-12');
});

test('the instructions scope the kept tail verbatim and carry the focus; no two assistant turns in a row', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, compacted());
  const s = Session.fromJsonl(sessionText());
  await s.compact(compactOptions({ customInstructions: 'the API' }));
  const body = JSON.parse(seen[0].body);
  const [edit] = body.context_management.edits;
  assert.ok(
    edit.instructions.endsWith(
      '\n\nAdditional focus: the API\n\nYou MUST NOT call any tools while writing the summary; respond with the summary text only.',
    ),
  );
  const scope = edit.instructions.match(
    /^SCOPE: The conversation's final (\d+) messages, starting with an? (user|assistant) message, stay in context verbatim after your summary\. Summarize ONLY the history before those messages\./,
  );
  assert.ok(scope, edit.instructions.slice(0, 200));
  const kept = Number(scope[1]);
  assert.ok(kept >= 2 && kept < body.messages.length);
  assert.equal(body.messages.at(-kept).role, scope[2]);
  // Starts with a user turn; never two assistant turns in a row (a tool result and the next
  // question are two user turns, which the API joins).
  assert.equal(body.messages[0].role, 'user');
  body.messages.forEach((m, i) => {
    if (i > 0 && m.role === 'assistant') assert.equal(body.messages[i - 1].role, 'user', `${i}`);
  });
  assert.deepEqual(body.messages.at(-1), { role: 'user', content: [{ type: 'text', text: 'Continue.' }] });
});

test('the model lines with server compaction', async () => {
  const eligible = [
    'claude-opus-4-6',
    'claude-sonnet-4-6',
    'claude-opus-4.7',
    'anthropic/claude-opus-4-7-20260301',
    'claude-sonnet-4.6-20260101',
    'claude-mythos-preview',
    'claude-fable',
    'claude-opus-5',
  ];
  const not = [
    'claude-opus-4-5',
    'claude-sonnet-4-20250514',
    'claude-3-5-sonnet-20241022',
    'claude-haiku-4-6',
    'gpt-5',
  ];
  reply = (_req, res) => send(res, 200, compacted());
  for (const id of [...eligible, ...not]) {
    const s = Session.fromJsonl(sessionText());
    const result = await s.compact(compactOptions({ model: claude({ id }) }));
    assert.equal(result.method, eligible.includes(id) ? 'remote' : 'soft', id);
    const body = eligible.includes(id) ? JSON.parse(seen.at(-1).body) : undefined;
    if (body) assert.equal(body.model, id);
  }
});

test('the route: the official API for provider anthropic, other routes only when opted in', async () => {
  const urls = [];
  const fetch = (url) => {
    urls.push(url);
    return Promise.resolve(new Response(JSON.stringify(compacted()), { status: 200 }));
  };
  // The threshold lane's routes (the on-demand lane has its own tests).
  const THRESHOLD = { onDemand: false };
  const cases = [
    [{ baseUrl: undefined, remoteCompaction: THRESHOLD }, 'https://api.anthropic.com/v1/messages'],
    [{ baseUrl: 'https://api.anthropic.com/', remoteCompaction: THRESHOLD }, 'https://api.anthropic.com/v1/messages'],
    [{ baseUrl: undefined, remoteCompaction: THRESHOLD, api: undefined }, 'https://api.anthropic.com/v1/messages'],
    [{ baseUrl: 'https://api.anthropic.com.evil.test', remoteCompaction: THRESHOLD }, undefined],
    [{ baseUrl: undefined, remoteCompaction: THRESHOLD, provider: 'zenmux' }, undefined],
    [{ baseUrl: undefined, remoteCompaction: { enabled: false, onDemand: false } }, undefined],
    [{ baseUrl: 'https://gw.example/anthropic//', provider: 'gw' }, 'https://gw.example/anthropic/v1/messages'],
  ];
  for (const [extra, url] of cases) {
    urls.length = 0;
    const s = Session.fromJsonl(sessionText());
    const result = await s.compact(compactOptions({ model: claude(extra), fetch, credentials: undefined }));
    assert.equal(result.method, url ? 'remote' : 'soft', JSON.stringify(extra));
    assert.deepEqual(urls, url ? [url] : []);
  }
});

test('the wire messages: signed thinking, ids, paired tool results, images, Continue between assistants', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, compacted());
  const lines = [header, line('u0', null, { role: 'user', content: 'hi '.repeat(300), timestamp: 1 })];
  const assistant = (id, parent, content, extra = {}) =>
    line(id, parent, {
      role: 'assistant',
      content,
      provider: 'anthropic',
      model: 'claude-opus-4-6',
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'toolUse',
      ...extra,
    });
  lines.push(
    assistant('a0', 'u0', [
      { type: 'thinking', thinking: 't', thinkingSignature: 'sig' },
      { type: 'thinking', thinking: 'plain' },
      { type: 'text', text: '' },
      { type: 'toolCall', id: 'call|1', name: 'read', arguments: { p: 1 } },
      { type: 'toolCall', id: 'c2', name: 'ls', arguments: {} },
    ]),
    line('t1', 'a0', {
      role: 'toolResult',
      toolCallId: 'call|1',
      toolName: 'read',
      content: [
        { type: 'text', text: 'out' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ],
      isError: false,
    }),
    assistant('a1', 't1', [{ type: 'text', text: 'done '.repeat(100) }], { stopReason: 'stop' }),
    assistant('a1b', 'a1', [{ type: 'text', text: 'again' }], { stopReason: 'stop' }),
    line('u1', 'a1b', { role: 'user', content: 'more '.repeat(100), timestamp: 1 }),
    assistant('a2', 'u1', [{ type: 'text', text: 'ok' }], {
      stopReason: 'stop',
      usage: { input: 80_000, output: 5, cacheRead: 0, cacheWrite: 0 },
    }),
  );
  const s = Session.fromJsonl(`${lines.join('\n')}\n`);
  const result = await s.compact(compactOptions({ settings: { keepRecentTokens: 10, methodOrder: ['remote'] } }));
  assert.equal(result.method, 'remote');
  const { messages } = JSON.parse(seen[0].body);
  const a0 = messages.find((m) => m.content.some((b) => b.type === 'thinking'));
  assert.deepEqual(a0.content, [
    { type: 'thinking', thinking: 't', signature: 'sig' },
    { type: 'text', text: 'plain' },
    { type: 'tool_use', id: 'call_1', name: 'read', input: { p: 1 } },
    { type: 'tool_use', id: 'c2', name: 'ls', input: {} },
  ]);
  const results = messages[messages.indexOf(a0) + 1];
  assert.equal(results.role, 'user');
  assert.deepEqual(results.content, [
    {
      type: 'tool_result',
      tool_use_id: 'call_1',
      content: [
        { type: 'text', text: 'out' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      ],
      is_error: false,
    },
    { type: 'tool_result', tool_use_id: 'c2', content: [{ type: 'text', text: 'No result provided' }], is_error: true },
  ]);
  const again = messages.findIndex((m) => m.content[0]?.text === 'again');
  assert.deepEqual(messages[again - 1], { role: 'user', content: [{ type: 'text', text: 'Continue.' }] });
  assert.equal(messages[again - 2].role, 'assistant');
});

test('the wire messages pair tool results in linear time: 200,000 calls of one turn, answered in reverse', async () => {
  // The lane's repairing writer itself (not exported by the package: its module in the build).
  const { wireMessages } = await import('../../pkg/formats/anthropic.js');
  const n = 200_000;
  const calls = Array.from({ length: n }, (_, i) => ({ type: 'toolCall', id: `c${i}`, name: 'ls', arguments: {} }));
  const messages = [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: calls },
  ];
  for (let i = n - 1; i > 0; i--) messages.push({ role: 'toolResult', toolCallId: `c${i}`, content: 'x' });
  const t0 = performance.now();
  const wire = wireMessages(messages);
  const ms = performance.now() - t0;
  const results = wire[2].content;
  assert.equal(results.length, n, 'every call has a result');
  assert.deepEqual(results.at(-1).content, [{ type: 'text', text: 'No result provided' }], 'c0 was never answered');
  // An index scan and a splice per result (the writer before) took minutes here.
  assert.ok(ms < 2_000, `pairing took ${Math.round(ms)} ms`);
});

test('a stored block replays only for its provider on a model with server compaction', async () => {
  reply = (_req, res) => send(res, 200, compacted());
  const s = Session.fromJsonl(sessionText());
  await s.compact(compactOptions());
  const payload = (model) => s.toLlmMessages({ model })[0].providerPayload;
  assert.equal(payload(claude()).type, 'anthropicCompaction');
  assert.equal(payload({ id: 'claude-opus-4-6', provider: 'anthropic' }).type, 'anthropicCompaction');
  assert.equal(payload(claude({ id: 'claude-sonnet-4-5' })), undefined);
  assert.equal(payload(claude({ provider: 'bedrock' })), undefined);
  assert.equal(payload(claude({ remoteCompaction: undefined })), undefined, 'a route without the beta');
  assert.equal(payload('claude-opus-4-6'), undefined);
  assert.equal(s.toLlmMessages()[0].providerPayload, undefined);
  // Another provider's next compaction reads the summary as text.
  seen.length = 0;
  const a9 = {
    role: 'assistant',
    content: [{ type: 'text', text: 'ok '.repeat(200) }],
    provider: 'bedrock',
    model: 'claude-opus-4-6',
    usage: { input: 90_000, output: 10, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
  };
  const u9 = { role: 'user', content: 'next '.repeat(200), timestamp: 1 };
  const more = Session.fromJsonl(`${s.toJsonl()}${line('u9', s.leafId, u9)}\n${line('a9', 'u9', a9)}\n`);
  await more.compact(compactOptions({ model: claude({ provider: 'bedrock' }), credentials: undefined }));
  const first = JSON.parse(seen[0].body).messages[0];
  assert.equal(first.role, 'user');
  assert.match(first.content[0].text, /The user asked eight questions/);
});

test('replayTarget is a wire fact of the anthropic format: formats/anthropic says which model a compaction block replays to', async () => {
  // The module in the build (not exported by the package): formats/ asks the core itself, so it
  // imports nothing from providers/ (issue 37: no import cycle).
  const { replayTarget } = await import('../../pkg/formats/anthropic.js');
  // A model of server compaction replays its provider's blocks...
  assert.deepEqual(replayTarget(claude()), { provider: 'anthropic', api: 'anthropic-messages' });
  assert.deepEqual(replayTarget(claude({ provider: 'proxy' })), { provider: 'proxy', api: 'anthropic-messages' });
  // ...a Messages API model without it replays none...
  assert.equal(replayTarget(claude({ id: 'claude-sonnet-4-5' })), undefined);
  assert.equal(replayTarget(claude({ remoteCompaction: undefined })), undefined);
  // ...and every other model (or no object) is passed on as it is.
  const openai = { id: 'gpt-5', provider: 'openai', api: 'openai-responses' };
  assert.equal(replayTarget(openai), openai);
  assert.equal(replayTarget(undefined), undefined);
  assert.equal(replayTarget('claude-opus-4-6'), 'claude-opus-4-6');
  // A model that is no JSON data replays nothing.
  const cyclic = claude();
  cyclic.self = cyclic;
  assert.equal(replayTarget(cyclic), undefined);
});
