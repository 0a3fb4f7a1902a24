// The `remote` method's OpenAI provider-native lanes against a local HTTP server that speaks
// the wire format: V1 `POST /v1/responses/compact` (one JSON answer) and V2 (the streaming
// Responses request with a trailing `compaction_trigger` item, answered as server-sent
// events). Requests are checked field by field; every failure gives a coded error or the next
// method, and the session's bytes stay as they were. Then the replay: the OpenAI reader gets
// the stored history as `providerPayload`, any other reader the summary and the kept messages.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { estimateTokens, Maintainer, Session } from 'ctxfold';
import { header, line, usage } from './support/sessions.mjs';

/** Six OpenAI turns; turn 2 calls a tool whose reasoning item is its thinking signature. */
function sessionText() {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < 6; i++) {
    const long = i < 5;
    lines.push(
      line(`u${i}`, parent, { role: 'user', content: long ? `question ${i} `.repeat(30) : 'last', timestamp: 1 }),
    );
    const content =
      i === 2
        ? [
            {
              type: 'thinking',
              thinking: 'hm',
              thinkingSignature: JSON.stringify({
                type: 'reasoning',
                id: 'rs_2',
                encrypted_content: 'R2',
                summary: [],
              }),
            },
            { type: 'toolCall', id: 'call_2|fc_2', name: 'read', arguments: { path: 'a.txt' } },
          ]
        : [{ type: 'text', text: long ? `answer ${i} `.repeat(30) : 'done' }];
    const assistant = {
      role: 'assistant',
      content,
      provider: 'openai',
      api: 'openai-responses',
      model: 'gpt-5',
      usage,
      stopReason: i === 2 ? 'toolUse' : 'stop',
    };
    lines.push(line(`a${i}`, `u${i}`, assistant, '2026-01-01T00:00:02.000Z'));
    parent = `a${i}`;
    if (i === 2) {
      const result = {
        role: 'toolResult',
        toolCallId: 'call_2|fc_2',
        toolName: 'read',
        content: [{ type: 'text', text: 'A' }],
      };
      lines.push(line('t2', 'a2', result));
      parent = 't2';
    }
  }
  return `${lines.join('\n')}\n`;
}

let server;
let base;
/** Requests the server got: `{url, headers, body}` (body parsed). */
let log = [];
/** Answers request n (0-based) of the test: `(req, res, body, n) => void`. */
let reply = () => {};

before(async () => {
  server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const n = log.length;
      log.push({ url: req.url, headers: req.headers, body: JSON.parse(text), at: Date.now() });
      reply(req, res, log[n].body, n);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

beforeEach(() => {
  log = [];
  reply = () => {};
});

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** Writes `events` as SSE in small pieces; `cut` ends the socket in the middle of the last one. */
function stream(res, events, { cut = false } = {}) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const text = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
  const end = cut ? text.length - 20 : text.length;
  for (let i = 0; i < end; i += 37) res.write(text.slice(i, Math.min(end, i + 37)));
  if (cut) res.socket.destroy();
  else res.end();
}

const compactionItem = { type: 'compaction', encrypted_content: 'ENC', id: 'cmp_1' };
const done = (item) => ({ type: 'response.output_item.done', item });
const completed = {
  type: 'response.completed',
  response: { usage: { input_tokens: 4321, output_tokens: 9, total_tokens: 4330 } },
};

function model(extra = {}) {
  return {
    id: 'gpt-5',
    provider: 'openai',
    api: 'openai-responses',
    baseUrl: `${base}/v1`,
    contextWindow: 200_000,
    input: ['text'],
    ...extra,
  };
}
const v2Model = () => model({ remoteCompaction: { v2StreamingEnabled: true } });

const credentialCalls = [];
function options(extra = {}) {
  return {
    model: model(),
    settings: { keepRecentTokens: 10, methodOrder: ['remote'] },
    credentials: (request) => {
      credentialCalls.push(request);
      return Promise.resolve({ authorization: 'Bearer sk-test' });
    },
    native: { retryBaseMs: 5 },
    now: 1_767_225_600_000,
    ...extra,
  };
}

async function expectUnchanged(promise, code, check = () => {}) {
  const s = Session.fromJsonl(sessionText());
  const bytes = s.toJsonl();
  await assert.rejects(promise(s), (err) => {
    assert.equal(err.code, code, err.message);
    check(err);
    return true;
  });
  assert.equal(s.toJsonl(), bytes, 'the session is byte-identical');
}

test('V1: the request, field by field, and the stored record', async () => {
  credentialCalls.length = 0;
  const output = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'dropped' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'kept question' }] },
    { type: 'reasoning', id: 'rs_x' },
    compactionItem,
  ];
  reply = (_req, res) => json(res, 200, { output });
  const s = Session.fromJsonl(sessionText());
  const plan = s.planCompaction({ keepRecentTokens: 10 });
  const system = plan.pending[0].systemPrompt;
  plan.free();
  const r = await s.compact(options());
  assert.equal(r.method, 'remote');
  assert.equal(log.length, 1);
  const { url, headers, body } = log[0];
  assert.equal(url, '/v1/responses/compact');
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers.authorization, 'Bearer sk-test');
  assert.deepEqual(credentialCalls, [
    { provider: 'openai', api: 'openai-responses', url: `${base}/v1/responses/compact` },
  ]);
  assert.deepEqual(Object.keys(body), ['model', 'input', 'instructions']);
  assert.equal(body.model, 'gpt-5');
  assert.equal(body.instructions, system, 'the summarization system prompt');
  // Every message: the history, the tool round with its reasoning item, the kept turn.
  assert.deepEqual(body.input[0], {
    type: 'message',
    role: 'user',
    content: [{ type: 'input_text', text: 'question 0 '.repeat(30) }],
  });
  assert.deepEqual(body.input[1], {
    type: 'message',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'answer 0 '.repeat(30), annotations: [] }],
    id: 'msg_1',
  });
  const types = body.input.map((i) => i.type);
  const call = types.indexOf('function_call');
  assert.deepEqual(types.slice(call - 1, call + 2), ['reasoning', 'function_call', 'function_call_output']);
  assert.deepEqual(body.input[call - 1], { type: 'reasoning', id: 'rs_2', encrypted_content: 'R2', summary: [] });
  assert.deepEqual(body.input[call], {
    type: 'function_call',
    id: 'fc_2',
    call_id: 'call_2',
    name: 'read',
    arguments: '{"path":"a.txt"}',
  });
  assert.deepEqual(body.input[call + 1], { type: 'function_call_output', call_id: 'call_2', output: 'A' });
  assert.deepEqual(body.input.at(-1).content, [{ type: 'output_text', text: 'done', annotations: [] }]);

  const entry = r.compactionEntry;
  assert.equal(entry.method, 'remote');
  assert.ok(entry.summary.startsWith('Remote compaction preserved provider-native history for this session.'));
  assert.equal(entry.shortSummary, 'Remote compaction');
  assert.equal(entry.firstKeptEntryId, 'u5');
  assert.deepEqual(entry.preserveData, {
    openaiRemoteCompaction: { provider: 'openai', replacementHistory: [output[1], compactionItem], compactionItem },
  });
});

test('replay: the OpenAI reader gets the history as providerPayload, another reader the summary and kept turns', async () => {
  const output = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'q' }] }, compactionItem];
  reply = (_req, res) => json(res, 200, { output });
  const s = Session.fromJsonl(sessionText());
  await s.compact(options());
  const openai = s.toLlmMessages({ model: { provider: 'openai', api: 'openai-responses' } });
  assert.equal(openai.length, 1, 'the kept turn is inside the replayed history');
  assert.deepEqual(openai[0].providerPayload, { type: 'openaiResponsesHistory', provider: 'openai', items: output });
  for (const other of [
    { provider: 'anthropic', api: 'anthropic-messages' },
    { provider: 'azure', api: 'openai-responses' },
    undefined,
  ]) {
    const messages = s.toLlmMessages(other === undefined ? undefined : { model: other });
    assert.equal(messages.length, 3, JSON.stringify(other));
    assert.equal(messages[0].providerPayload, undefined);
    assert.match(messages[0].content[0].text, /Remote compaction preserved/);
    assert.deepEqual(
      messages.slice(1).map((m) => m.role),
      ['user', 'assistant'],
    );
  }
  // buildContext takes the same reader.
  const ctx = s.buildContext({ model: { provider: 'openai', api: 'openai-codex-responses' } });
  assert.deepEqual(
    ctx.messages.map((m) => m.role),
    ['compactionSummary'],
  );
  assert.ok(ctx.messages[0].providerPayload);
});

test('V2: the streamed request with its trigger item, and the v2 record', async () => {
  reply = (_req, res) =>
    stream(res, [{ type: 'response.created' }, done({ type: 'reasoning', id: 'r' }), done(compactionItem), completed]);
  const s = Session.fromJsonl(sessionText());
  const r = await s.compact(
    options({ model: v2Model(), native: { reasoning: { effort: 'high', summary: 'auto' }, promptCacheKey: 'pk' } }),
  );
  assert.equal(log.length, 1, 'V1 is not asked');
  const { url, headers, body } = log[0];
  assert.equal(url, '/v1/responses');
  assert.equal(headers.authorization, 'Bearer sk-test');
  assert.deepEqual(Object.keys(body), [
    'model',
    'input',
    'instructions',
    'stream',
    'store',
    'reasoning',
    'include',
    'prompt_cache_key',
  ]);
  assert.equal(body.stream, true);
  assert.equal(body.store, false);
  assert.deepEqual(body.reasoning, { effort: 'high', summary: 'auto' });
  assert.deepEqual(body.include, ['reasoning.encrypted_content']);
  assert.equal(body.prompt_cache_key, 'pk');
  assert.deepEqual(body.input.at(-1), { type: 'compaction_trigger' });
  const users = body.input.filter((i) => i.type === 'message' && i.role === 'user');
  const record = r.compactionEntry.preserveData.openaiRemoteCompaction;
  assert.equal(record.version, 'v2');
  assert.equal(record.provider, 'openai');
  assert.equal(record.usedTokens, 4321);
  assert.deepEqual(record.usage, { inputTokens: 4321, outputTokens: 9, totalTokens: 4330 });
  assert.equal(record.retainedImageCount, 0);
  assert.deepEqual(record.replacementHistory, [...users, compactionItem]);
  assert.match(r.compactionEntry.summary, /Compaction processed 4321 input tokens\./);
});

/** Eight turns of long questions with short answers, the last turn a tool round with a large output. */
function longQuestionsText() {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < 8; i++) {
    lines.push(line(`u${i}`, parent, { role: 'user', content: `requirement ${i}: `.repeat(150), timestamp: 1 }));
    const tool = i === 7;
    const content = tool
      ? [{ type: 'toolCall', id: 'call_7|fc_7', name: 'read', arguments: { path: 'big.txt' } }]
      : [{ type: 'text', text: `noted ${i}` }];
    const assistant = {
      role: 'assistant',
      content,
      provider: 'openai',
      api: 'openai-responses',
      model: 'gpt-5',
      usage,
      stopReason: tool ? 'toolUse' : 'stop',
    };
    lines.push(line(`a${i}`, `u${i}`, assistant, '2026-01-01T00:00:02.000Z'));
    parent = `a${i}`;
  }
  const result = {
    role: 'toolResult',
    toolCallId: 'call_7|fc_7',
    toolName: 'read',
    content: [{ type: 'text', text: 'x'.repeat(60_000) }],
  };
  lines.push(line('t7', 'a7', result));
  return `${lines.join('\n')}\n`;
}

/** The local estimate of what the next request to OpenAI sends: each replayed item's text as a user message, the rest as converted. */
function sentTokens(s) {
  let total = 0;
  for (const m of s.toLlmMessages({ model: { provider: 'openai', api: 'openai-responses' } })) {
    const items = m.providerPayload?.items;
    if (items === undefined) {
      total += estimateTokens(m);
      continue;
    }
    for (const item of items) {
      if (item.type === 'compaction') total += Math.ceil((item.encrypted_content.length * 3) / 16);
      else
        total += estimateTokens({ role: 'user', content: item.content.map((p) => ({ type: 'text', text: p.text })) });
    }
  }
  return total;
}

test('V2 on long questions: the core fits the input and retains the questions; the report counts what the next request replays', async () => {
  reply = (_req, res) => stream(res, [done(compactionItem), completed]);
  const s = Session.fromJsonl(longQuestionsText());
  const r = await s.compact(
    options({ model: model({ contextWindow: 12_000, remoteCompaction: { v2StreamingEnabled: true } }) }),
  );
  const { body } = log[0];
  // The 60,000-character tool output alone pushed the request over the window: it went as the notice.
  const output = body.input.find((i) => i.type === 'function_call_output');
  assert.equal(output.output, 'Output: exceeded available model context → truncated.');
  const record = r.compactionEntry.preserveData.openaiRemoteCompaction;
  assert.equal(record.replacementHistory.length, 9, 'every question is retained, then the item');
  assert.equal(record.replacementHistory[0].content[0].text, 'requirement 0: '.repeat(150));
  const sent = sentTokens(s);
  assert.ok(sent > 4_000, `the next request replays ${sent} tokens`);
  const near = (t) => Math.abs(t - sent) <= sent / 10;
  assert.ok(near(r.report.tokensAfter), `report.tokensAfter ${r.report.tokensAfter} for ${sent} sent`);
  assert.ok(near(r.compactionEntry.tokensAfter), `entry tokensAfter ${r.compactionEntry.tokensAfter} for ${sent} sent`);
  assert.ok(
    near(s.contextTokens().estimatedTokens),
    `contextTokens ${s.contextTokens().estimatedTokens} for ${sent} sent`,
  );
  // A host that counts with its own tokenizer counts the replay too, not the summary it stands
  // for (before, the Maintainer counted the replayed questions as nothing).
  const m = new Maintainer(s, {
    model: model({ contextWindow: 400_000 }),
    summarize: async () => 'unused',
    tokenCounter: (message) => estimateTokens(message),
  });
  const { tokens } = await m.beforeRequest();
  assert.ok(near(tokens), `the Maintainer counts ${tokens} with a tokenCounter for ${sent} sent`);
  m.dispose();
  // A small retained budget keeps the newest questions, the oldest kept cut to what is left.
  log = [];
  const t = Session.fromJsonl(longQuestionsText());
  const small = await t.compact(
    options({
      model: model({ remoteCompaction: { v2StreamingEnabled: true } }),
      settings: { keepRecentTokens: 10, methodOrder: ['remote'], v2RetainedMessageBudget: 1_000 },
    }),
  );
  const kept = small.compactionEntry.preserveData.openaiRemoteCompaction.replacementHistory.slice(0, -1);
  assert.equal(kept.length, 2);
  assert.equal(kept[1].content[0].text, 'requirement 7: '.repeat(150));
  assert.match(kept[0].content[0].text, /^requirement 6: .*…\d+ tokens truncated….*requirement 6: $/);
});

test('V2 with zero compaction items falls back to V1 (no stream retry)', async () => {
  reply = (_req, res, _body, n) => {
    if (n === 0) stream(res, [done({ type: 'message', role: 'assistant' }), completed]);
    else json(res, 200, { output: [compactionItem] });
  };
  const s = Session.fromJsonl(sessionText());
  const r = await s.compact(options({ model: v2Model() }));
  assert.deepEqual(
    log.map((l) => l.url),
    ['/v1/responses', '/v1/responses/compact'],
  );
  assert.equal(r.compactionEntry.preserveData.openaiRemoteCompaction.version, undefined, 'the V1 record');
});

test('V2 cut mid-item is retried twice with backoff; then V1; both failing is E_SUMMARIZER', async () => {
  reply = (_req, res, _body, n) => {
    if (n < 3) stream(res, [done(compactionItem), completed], { cut: true });
    else json(res, 502, { error: 'bad gateway' });
  };
  await expectUnchanged(
    (s) => s.compact(options({ model: v2Model(), native: { retryBaseMs: 40 } })),
    'E_SUMMARIZER',
    (err) => {
      assert.equal(err.lane, 'v2');
      assert.match(err.message, /502/);
    },
  );
  assert.deepEqual(
    log.map((l) => l.url),
    ['/v1/responses', '/v1/responses', '/v1/responses', '/v1/responses/compact'],
  );
  assert.ok(log[1].at - log[0].at >= 35 && log[2].at - log[1].at >= 75, 'backoff 40 ms, then 80 ms');
});

test('V2 with two compaction items, V1 malformed JSON: coded error naming both', async () => {
  reply = (_req, res, _body, n) => {
    if (n === 0) stream(res, [done(compactionItem), done(compactionItem), completed]);
    else json(res, 200, '{"output": [');
  };
  await expectUnchanged(
    (s) => s.compact(options({ model: v2Model() })),
    'E_SUMMARIZER',
    (err) => {
      assert.match(err.message, /exactly one compaction output item, got 2/);
      assert.match(err.message, /invalid JSON/);
    },
  );
  assert.equal(log.length, 2);
});

test('every lane refusing the credentials reports the last refusal; an earlier other failure wins', async () => {
  // The reference keeps a non-auth failure over any later one and lets an auth failure give
  // way to the next: V2 401 then V1 403 reports V1's 403.
  reply = (_req, res, _body, n) => json(res, n === 0 ? 401 : 403, { error: { message: 'no' } });
  await expectUnchanged(
    (s) => s.compact(options({ model: v2Model() })),
    'E_SUMMARIZER',
    (err) => assert.deepEqual([err.lane, err.status], ['v1', 403]),
  );
  log = [];
  reply = (_req, res, _body, n) => json(res, n === 0 ? 400 : 401, { error: { message: 'no' } });
  await expectUnchanged(
    (s) => s.compact(options({ model: v2Model() })),
    'E_SUMMARIZER',
    (err) => assert.deepEqual([err.lane, err.status], ['v2', 400]),
  );
  log = [];
  reply = (_req, res, _body, n) => json(res, n === 0 ? 403 : 500, { error: { message: 'no' } });
  await expectUnchanged(
    (s) => s.compact(options({ model: v2Model() })),
    'E_SUMMARIZER',
    (err) => assert.deepEqual([err.lane, err.status], ['v1', 500]),
  );
});

test('V1 4xx and 5xx are coded errors with the status, not retried', async () => {
  for (const status of [400, 401, 500]) {
    log = [];
    reply = (_req, res) => json(res, status, { error: { message: 'no' } });
    await expectUnchanged(
      (s) => s.compact(options()),
      'E_SUMMARIZER',
      (err) => assert.equal(err.status, status),
    );
    assert.equal(log.length, 1);
  }
});

test('V1 429 with retry-after is waited for, then succeeds', async () => {
  reply = (_req, res, _body, n) => {
    if (n === 0) json(res, 429, { error: 'slow down' }, { 'retry-after': '1' });
    else json(res, 200, { output: [compactionItem] });
  };
  const s = Session.fromJsonl(sessionText());
  const r = await s.compact(options());
  assert.equal(r.method, 'remote');
  assert.equal(log.length, 2);
  assert.ok(log[1].at - log[0].at >= 900, `waited ${log[1].at - log[0].at} ms`);
});

test('V1 with a response missing its compaction item', async () => {
  reply = (_req, res) => json(res, 200, { output: [{ type: 'message', role: 'user', content: [] }] });
  await expectUnchanged(
    (s) => s.compact(options()),
    'E_SUMMARIZER',
    (err) => assert.match(err.message, /missing compaction item/),
  );
});

test('a failed native lane moves the walk to the next method', async () => {
  reply = (_req, res) => json(res, 503, { error: 'down' });
  const events = [];
  const s = Session.fromJsonl(sessionText());
  const r = await s.compact(
    options({
      settings: { keepRecentTokens: 10, methodOrder: ['remote', 'soft'] },
      summarize: async () => 'local summary',
      hooks: { onEvent: (e) => events.push(e) },
    }),
  );
  assert.equal(r.method, 'soft');
  assert.equal(r.compactionEntry.preserveData, undefined);
  assert.ok(events.some((e) => e.type === 'compaction_warning' && /remote compaction failed/.test(e.message)));
});

test('an aborted signal is E_ABORTED and never retried', async () => {
  reply = () => {}; // hangs
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  await expectUnchanged((s) => s.compact(options({ model: v2Model(), signal: controller.signal })), 'E_ABORTED');
  assert.equal(log.length, 1, 'neither a V2 retry nor V1');
});

test('a hang past the time-out is E_SUMMARIZER with status 408', async () => {
  reply = () => {}; // hangs
  const started = Date.now();
  await expectUnchanged(
    (s) => s.compact(options({ native: { timeoutMs: 150 } })),
    'E_SUMMARIZER',
    (err) => {
      assert.equal(err.status, 408);
      assert.match(err.message, /timed out after 150 ms/);
    },
  );
  assert.ok(Date.now() - started < 5000);
});

test('remote without an endpoint: usable with a native lane, skipped without one', async () => {
  reply = (_req, res) => json(res, 200, { output: [compactionItem] });
  const s = Session.fromJsonl(sessionText());
  const summarize = async () => 'local';
  const settings = { keepRecentTokens: 10, methodOrder: ['remote', 'soft'] };
  const anthropic = { id: 'claude', provider: 'anthropic', api: 'anthropic-messages' };
  const r = await s.compact(options({ model: anthropic, settings, summarize }));
  assert.equal(r.method, 'soft');
  assert.equal(log.length, 0);
  // remoteEnabled false switches the lane off.
  const t = Session.fromJsonl(sessionText());
  const off = await t.compact(options({ settings: { ...settings, remoteEnabled: false }, summarize }));
  assert.equal(off.method, 'soft');
  assert.equal(log.length, 0);
  // The host's fetch is used.
  const u = Session.fromJsonl(sessionText());
  const seen = [];
  const viaFetch = await u.compact(
    options({
      fetch: (url, init) => {
        seen.push(url);
        return fetch(url, init);
      },
    }),
  );
  assert.equal(viaFetch.method, 'remote');
  assert.deepEqual(seen, [`${base}/v1/responses/compact`]);
});

test('a second native compaction replays the first one`s history', async () => {
  reply = (_req, res, _body, n) => json(res, 200, { output: [{ ...compactionItem, encrypted_content: `ENC${n}` }] });
  const s = Session.fromJsonl(sessionText());
  await s.compact(options());
  s.appendMessage({ role: 'user', content: 'next '.repeat(40), timestamp: 2 });
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'text', text: 'ok '.repeat(40) }],
    provider: 'openai',
    api: 'openai-responses',
    model: 'gpt-5',
    usage,
    stopReason: 'stop',
  });
  s.appendMessage({ role: 'user', content: 'last', timestamp: 3 });
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'text', text: 'k' }],
    provider: 'openai',
    api: 'openai-responses',
    model: 'gpt-5',
    usage,
    stopReason: 'stop',
  });
  const r = await s.compact(options({ provider: 'openai' }));
  assert.equal(r.method, 'remote');
  assert.deepEqual(log[1].body.input[0], { type: 'compaction', encrypted_content: 'ENC0', id: 'cmp_1' });
});

/**
 * A session of every shape a native request meets: pi's `call|item` ids (one of them over 64
 * characters, one of a foreign prefix), a freeform call, a call of another model of the
 * provider, reasoning-signed and unsigned thinking, a signed text item of two parts, a text
 * signature of another provider, images in a user message and a tool result, an error turn and
 * a failed tool result, blank text.
 */
function variedSessionText() {
  const PNG = 'iVBORw0KGgo=';
  const reasoning = (id) => JSON.stringify({ type: 'reasoning', id, encrypted_content: `E-${id}`, summary: [] });
  const assistant = (content, extra = {}) => ({
    role: 'assistant',
    content,
    provider: 'openai',
    api: 'openai-responses',
    model: 'gpt-5',
    usage,
    stopReason: content.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
    ...extra,
  });
  const result = (toolCallId, content, isError = false) => ({
    role: 'toolResult',
    toolCallId,
    toolName: 'read',
    content,
    isError,
    timestamp: 1,
  });
  const long = `call_9|fc_${'x'.repeat(80)}`;
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look at this ' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'text', text: '  ' },
      ],
      timestamp: 1,
    },
    assistant([
      { type: 'thinking', thinking: 'plan', thinkingSignature: reasoning('rs_1') },
      { type: 'text', text: 'Reading.', textSignature: JSON.stringify({ v: 1, id: 'msg_a1', phase: 'commentary' }) },
      { type: 'toolCall', id: 'call_1|fc_1', name: 'read', arguments: { path: 'a.png' } },
      { type: 'toolCall', id: long, name: 'read', arguments: { path: 'b' } },
      { type: 'toolCall', id: 'call_2|item_2', name: 'read', arguments: { path: 'c' } },
      { type: 'text', text: 'Then the rest.' },
    ]),
    result('call_1|fc_1', [
      { type: 'text', text: 'the image' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ]),
    result(long, [{ type: 'text', text: 'no such file' }], true),
    result('call_2|item_2', [{ type: 'image', data: PNG, mimeType: 'image/png' }]),
    { role: 'user', content: 'patch it', timestamp: 1 },
    assistant([
      { type: 'thinking', thinking: 'unsigned thoughts' },
      {
        type: 'toolCall',
        id: 'call_3|ctc_3',
        name: 'apply_patch',
        arguments: { input: '*** Begin Patch' },
        customWireName: 'apply_patch',
      },
    ]),
    result('call_3|ctc_3', [{ type: 'text', text: 'patched' }]),
    assistant(
      [
        {
          type: 'text',
          text: 'Part one. ',
          textSignature: JSON.stringify({ v: 1, id: 'msg_two', phase: 'final_answer' }),
        },
        {
          type: 'text',
          text: 'Part two.',
          textSignature: JSON.stringify({ v: 1, id: 'msg_two', phase: 'final_answer' }),
        },
      ],
      { model: 'gpt-4.1' },
    ),
    { role: 'user', content: 'again', timestamp: 1 },
    assistant([{ type: 'toolCall', id: 'call_4|fc_4', name: 'read', arguments: { path: 'd' } }], { model: 'gpt-4.1' }),
    result('call_4|fc_4', [{ type: 'text', text: 'D' }]),
    assistant(
      [
        { type: 'thinking', thinking: 'cut', thinkingSignature: reasoning('rs_err') },
        { type: 'text', text: 'Half an ans' },
      ],
      {
        stopReason: 'error',
        errorMessage: 'overloaded',
      },
    ),
    { role: 'user', content: 'from claude now', timestamp: 1 },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'claude thinks', thinkingSignature: 'c2ln' },
        { type: 'text', text: 'Gemini-signed.', textSignature: 'CiQB0e2Kb3' },
        { type: 'toolCall', id: 'toolu_5', name: 'read', arguments: { path: 'e' } },
      ],
      provider: 'anthropic',
      api: 'anthropic-messages',
      model: 'claude-opus-4-6',
      usage,
      stopReason: 'toolUse',
    },
    result('toolu_5', [{ type: 'text', text: 'E' }]),
    { role: 'user', content: 'last', timestamp: 1 },
    assistant([{ type: 'text', text: 'done' }]),
  ];
  const lines = [header, ...messages.map((m, i) => line(`e${i}`, i === 0 ? null : `e${i - 1}`, m))];
  return `${lines.join('\n')}\n`;
}

test('one Responses writer: the native input is the openai-responses format writer`s output with the native options', async () => {
  const pkg = new URL('..', import.meta.resolve('ctxfold'));
  const { write } = await import(new URL('formats/openai-responses.js', pkg));
  const { Warnings } = await import(new URL('formats/common.js', pkg));
  reply = (_req, res) => json(res, 200, { output: [compactionItem] });
  const s = Session.fromJsonl(variedSessionText());
  // The provider messages a native request is written from: the plan's (an error turn too).
  const plan = s.planCompaction({ keepRecentTokens: 1 });
  const { messages: llm } = JSON.parse(plan._session().nativeMessagesJson(plan._raw()));
  plan.free();
  const r = await s.compact(options({ settings: { keepRecentTokens: 1, methodOrder: ['remote'] } }));
  assert.equal(r.method, 'remote');
  const sent = log[0].body.input;
  const native = { id: 'gpt-5', provider: 'openai', api: 'openai-responses', images: false, previous: [] };
  assert.deepEqual(sent, write(llm, { warnings: new Warnings(), native }).messages);

  // What the native options make of the session (the reference's native history).
  const byType = (type) => sent.filter((i) => i.type === type);
  assert.deepEqual(sent[0], {
    type: 'message',
    role: 'user',
    content: [
      { type: 'input_text', text: 'look at this ' },
      { type: 'input_image', detail: 'auto', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
    ],
  });
  assert.deepEqual(
    byType('reasoning').map((i) => i.id),
    ['rs_1'],
    'signed reasoning only, not from the error turn',
  );
  const calls = sent.filter((i) => i.type === 'function_call' || i.type === 'custom_tool_call');
  // pi's item ids are kept, a long or foreign one is minted (of the call's kind); another
  // model's are left out.
  assert.deepEqual(
    calls.map((c) => [c.type, c.call_id, c.id?.replace(/_[a-z0-9]+$/, '_#')]),
    [
      ['function_call', 'call_1', 'fc_#'],
      ['function_call', 'call_9', 'fc_#'],
      ['function_call', 'call_2', 'fc_#'],
      ['custom_tool_call', 'call_3', 'ctc_#'],
      ['function_call', 'call_4', undefined],
      ['function_call', 'toolu_5', 'fc_#'],
    ],
  );
  assert.equal(calls[0].id, 'fc_1');
  assert.equal(calls[3].id, 'ctc_3');
  for (const c of calls.filter((c) => c.id !== undefined)) assert.match(c.id, /^(fc|ctc)_[a-z0-9]+$/, c.id);
  assert.ok(calls.every((c) => c.id === undefined || c.id.length <= 64));
  assert.equal(calls.find((c) => c.call_id === 'call_3').input, '*** Begin Patch');
  // Every output follows its call, and the messages written after a batch's calls go before them.
  const outputs = sent.filter((i) => i.type.endsWith('_output'));
  assert.equal(outputs.length, 6);
  for (const o of outputs) {
    assert.ok(sent.findIndex((i) => i.call_id === o.call_id) < sent.indexOf(o), o.call_id);
  }
  assert.equal(byType('custom_tool_call_output')[0].call_id, 'call_3');
  const rest = sent.findIndex((i) => i.content?.[0]?.text === 'Then the rest.');
  assert.ok(rest < sent.findIndex((i) => i.call_id === 'call_1'), 'the text after the calls goes before them');
  // A text model gets a tool result's images as a note.
  assert.equal(outputs[0].output, 'the image\n[image omitted: model does not support vision]');
  assert.equal(outputs[2].output, '[image omitted: model does not support vision]');
  // Message ids: the signature's (two parts of one item stay one item), else msg_<n>; no
  // other provider's signature as an id; no output-only status.
  const texts = byType('message').filter((i) => i.role === 'assistant');
  for (const t of texts) assert.match(t.id, /^msg_/, JSON.stringify(t));
  const two = texts.find((t) => t.id === 'msg_two');
  assert.deepEqual(
    two.content.map((p) => p.text),
    ['Part one. ', 'Part two.'],
  );
  assert.equal(two.phase, 'final_answer');
  assert.ok(!sent.some((i) => Object.hasOwn(i, 'status')));
  assert.ok(!JSON.stringify(sent).includes('CiQB0e2Kb3'));
});

test('bad settings with a native model: E_SETTINGS from the walk, no request, the session unchanged', async () => {
  const s = Session.fromJsonl(sessionText());
  const bytes = s.toJsonl();
  await assert.rejects(
    s.compact(
      options({ settings: { keepRecentTokens: 10, methodOrder: ['remote'], remoteStreamingV2Enabled: 'yes' } }),
    ),
    (err) => err.code === 'E_SETTINGS',
  );
  assert.equal(s.toJsonl(), bytes);
  assert.equal(log.length, 0);
});
