// OpenAI server compaction inside the host's own Responses request (spec: compaction §13)
// against a local HTTP server on 127.0.0.1 that speaks the Responses API, streamed (SSE) and
// not: beforeRequest({format: 'openai-responses'}) adds `context_management` with the core's
// threshold for a model that opted in (`remoteCompaction.inline`); the server compacts and
// answers with an encrypted `compaction` item (and a `configuration_update` after it);
// fromResponse + afterResponse commit it: the next request opens with the item and the update,
// then the reply, and none of the items before. A stream cut mid-body or a failed response
// commits nothing; a model that did not opt in gets no parameter.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { fromError, fromResponse, Maintainer, Session, thresholdTokens } from 'ctxfold';
import { header } from './support/sessions.mjs';

const ITEM = { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAB-opaque-state' };
const UPDATE = { type: 'configuration_update', id: 'cu_1' };
const REPLY = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'the reply' }] };
// OpenAI's overflow body (tests/fixtures/errors/openai.json).
const OVERFLOW = {
  error: {
    message:
      "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  },
};

/** The input tokens the server reports (a fixed 30,000 unless a test counts them). */
let inputTokens = () => 30_000;

function response(output, input = inputTokens()) {
  return {
    id: 'resp_1',
    object: 'response',
    status: 'completed',
    output,
    usage: { input_tokens: input, output_tokens: 10, total_tokens: input + 10 },
  };
}

let mode = 'json';
/** The server never compacts (`context_management` or not). */
let declines = false;
/** The server answers an overflow error (HTTP 400, OpenAI's body). */
let overflows = false;
const seen = [];
let server;
let base;

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const parsed = JSON.parse(body);
      seen.push(parsed);
      if (overflows) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify(OVERFLOW));
        return;
      }
      // The server compacts when the request carries the parameter and its input is long.
      // Codex's form: the trigger item, last in the input, asks for it explicitly.
      const triggered = parsed.input.at(-1)?.type === 'compaction_trigger';
      const compacts =
        !declines && (triggered || (Array.isArray(parsed.context_management) && parsed.input.length > 4));
      const output = compacts ? [ITEM, UPDATE, REPLY] : [REPLY];
      if (mode === 'json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(response(output, inputTokens(parsed))));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const item of output) {
        res.write(
          `event: response.output_item.done\ndata: ${JSON.stringify({ type: 'response.output_item.done', item })}\n\n`,
        );
      }
      if (mode === 'cut') {
        setTimeout(() => res.destroy(), 5);
        return;
      }
      const done = { type: 'response.completed', response: response(output) };
      res.end(`event: response.completed\ndata: ${JSON.stringify(done)}\n\n`);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const model = (inline = true) => ({
  id: 'gpt-5',
  provider: 'openai',
  api: 'openai-responses',
  contextWindow: 200_000,
  input: ['text'],
  remoteCompaction: { inline },
});

/** The host's request: POST the Responses body, read JSON or the SSE stream's completed response. */
async function send(body) {
  const res = await fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (mode === 'json') return JSON.parse(text);
  const events = text
    .split('\n\n')
    .map((e) => e.split('\n').find((l) => l.startsWith('data: ')))
    .filter(Boolean)
    .map((l) => JSON.parse(l.slice(6)));
  const completed = events.find((e) => e.type === 'response.completed');
  if (completed === undefined) throw Object.assign(new Error('stream ended early'), { code: 'E_CUT' });
  return completed.response;
}

function session() {
  const s = Session.fromJsonl(`${header}\n`);
  for (let i = 0; i < 4; i++) {
    s.appendMessage({ role: 'user', content: `question ${i}`, timestamp: 1 });
    s.appendMessage({
      role: 'assistant',
      content: [{ type: 'text', text: `answer ${i}` }],
      provider: 'openai',
      model: 'gpt-5',
      api: 'openai-responses',
      usage: { input: 100, output: 5, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'stop',
      timestamp: 2,
    });
  }
  s.appendMessage({ role: 'user', content: 'question 4', timestamp: 3 });
  return s;
}

async function turn(m) {
  const before = await m.beforeRequest({ format: 'openai-responses' });
  const body = { model: 'gpt-5', input: before.messages, store: false };
  if (before.contextManagement !== undefined) body.context_management = before.contextManagement;
  const r = await send(body);
  const message = fromResponse(r, { format: 'openai-responses', model: model() });
  return { before, after: await m.afterResponse(message) };
}

for (const streamed of [false, true]) {
  test(`the compaction item is committed and replayed (${streamed ? 'SSE' : 'JSON'})`, async () => {
    mode = streamed ? 'sse' : 'json';
    seen.length = 0;
    const m = new Maintainer(session(), { model: model(), now: () => 1_800_000_000_000 });
    const { before } = await turn(m);
    const threshold = thresholdTokens(200_000);
    assert.deepEqual(before.contextManagement, [{ type: 'compaction', compact_threshold: threshold }]);
    assert.deepEqual(seen[0].context_management, before.contextManagement);
    const entries = m.session.entries();
    const last = entries.at(-1);
    assert.equal(last.type, 'compaction');
    assert.equal(last.method, 'remote');
    const record = last.preserveData.openaiRemoteCompaction;
    assert.equal(record.version, 'inline');
    assert.deepEqual(record.compactionItem, ITEM);
    // The reply is stored without the server items and kept after the compaction.
    const reply = entries.at(-2);
    assert.equal(reply.message.serverCompaction, undefined);
    assert.equal(last.firstKeptEntryId, reply.id);
    // The next request opens with the item and the update, then the reply; nothing before.
    m.session.appendMessage({ role: 'user', content: 'question 5', timestamp: 4 });
    await turn(m);
    const input = seen[1].input;
    assert.deepEqual(input[0], ITEM);
    assert.deepEqual(input[1], UPDATE);
    assert.ok(!JSON.stringify(input).includes('question 0'));
    assert.ok(JSON.stringify(input).includes('the reply'));
    assert.ok(JSON.stringify(input).includes('question 5'));
  });
}

test('a stream cut mid-body commits nothing', async () => {
  mode = 'cut';
  const m = new Maintainer(session(), { model: model(), now: () => 1_800_000_000_000 });
  const before = m.session.toJsonl();
  // The host's read of the cut body fails: no reply reaches afterResponse, nothing is written.
  await assert.rejects(turn(m));
  assert.equal(m.session.toJsonl(), before);
});

test('a model that did not opt in gets no parameter, and a reply without an item commits nothing', async () => {
  mode = 'json';
  seen.length = 0;
  const m = new Maintainer(session(), { model: model(false), now: () => 1_800_000_000_000 });
  const { before } = await turn(m);
  assert.equal(before.contextManagement, undefined);
  assert.equal(seen[0].context_management, undefined);
  assert.ok(!m.session.entries().some((e) => e.type === 'compaction'));
});

test('fromResponse takes the server items off the reply (JSON and a stream accumulated alike)', () => {
  const message = fromResponse(response([ITEM, UPDATE, REPLY]), { format: 'openai-responses' });
  assert.deepEqual(message.serverCompaction, [ITEM, UPDATE]);
  assert.ok(!JSON.stringify(message.content).includes('compaction'));
  const plain = fromResponse(response([REPLY]), { format: 'openai-responses' });
  assert.equal(plain.serverCompaction, undefined);
});

for (const [name, copy] of [
  ['structuredClone', (m) => structuredClone(m)],
  ['a JSON round trip', (m) => JSON.parse(JSON.stringify(m))],
  ['a re-created message', (m) => ({ ...m, content: [...m.content] })],
]) {
  test(`a reply copied by ${name} still commits its server compaction`, async () => {
    const m = new Maintainer(session(), { model: model(), now: () => 1_800_000_000_000 });
    await m.beforeRequest({ format: 'openai-responses' });
    const message = fromResponse(response([ITEM, UPDATE, REPLY]), { format: 'openai-responses', model: model() });
    await m.afterResponse(copy(message));
    const last = m.session.entries().at(-1);
    assert.equal(last.type, 'compaction');
    assert.deepEqual(last.preserveData.openaiRemoteCompaction.replacementHistory, [ITEM, UPDATE]);
  });
}

test('a malformed serverCompaction refuses the reply with E_INVALID_MESSAGE and changes nothing', async () => {
  for (const bad of [
    [{ type: 'compaction', encrypted_content: '' }],
    [{ type: 'compaction' }],
    [UPDATE],
    [],
    { output: [ITEM] },
    'gAAAAB',
    [ITEM, 7],
  ]) {
    const m = new Maintainer(session(), { model: model(), now: () => 1_800_000_000_000 });
    await m.beforeRequest({ format: 'openai-responses' });
    const before = m.session.toJsonl();
    const message = fromResponse(response([REPLY]), { format: 'openai-responses', model: model() });
    message.serverCompaction = bad;
    await assert.rejects(m.afterResponse(message), { code: 'E_INVALID_MESSAGE' }, JSON.stringify(bad));
    assert.equal(m.session.toJsonl(), before, JSON.stringify(bad));
  }
});

// Codex's explicit trigger (`remoteCompaction.compactionTrigger`): no `context_management`; once
// the context reached the core's threshold, the request's input ends with the trigger item.
test('compactionTrigger: the trigger item ends the input at the threshold, and its compaction commits', async () => {
  mode = 'json';
  const trigger = { ...model(), remoteCompaction: { inline: true, compactionTrigger: true } };
  // The Maintainer's own compaction is off: the server compacts (`remoteEnabled` stays on).
  const under = new Maintainer(session(), {
    model: trigger,
    settings: { enabled: false, thresholdTokens: 100_000 },
    now: () => 1_800_000_000_000,
  });
  const quiet = await under.beforeRequest({ format: 'openai-responses' });
  assert.equal(quiet.contextManagement, undefined);
  assert.ok(!quiet.messages.some((i) => i.type === 'compaction_trigger'));
  seen.length = 0;
  const m = new Maintainer(session(), {
    model: trigger,
    settings: { enabled: false, thresholdTokens: 20 },
    now: () => 1_800_000_000_000,
  });
  const before = await m.beforeRequest({ format: 'openai-responses' });
  assert.ok(before.tokens >= 20);
  assert.equal(before.contextManagement, undefined);
  assert.deepEqual(before.messages.at(-1), { type: 'compaction_trigger' });
  assert.equal(before.messages.filter((i) => i.type === 'compaction_trigger').length, 1);
  const r = await send({ model: 'gpt-5', input: before.messages, store: false });
  assert.deepEqual(seen[0].input.at(-1), { type: 'compaction_trigger' });
  assert.equal(seen[0].context_management, undefined);
  await m.afterResponse(fromResponse(r, { format: 'openai-responses', model: trigger }));
  const last = m.session.entries().at(-1);
  assert.equal(last.type, 'compaction');
  assert.deepEqual(last.preserveData.openaiRemoteCompaction.compactionItem, ITEM);
});

// ----- through the Maintainer with its own compaction on (issue 39: the threshold is the server's first) -----

/** A session over a small threshold: five turns of about 500 tokens each. */
function longSession() {
  const s = Session.fromJsonl(`${header}\n`);
  const text = (i) => `${i} ${'lorem ipsum dolor '.repeat(110)}`;
  for (let i = 0; i < 4; i++) {
    s.appendMessage({ role: 'user', content: `question ${text(i)}`, timestamp: 1 });
    s.appendMessage({
      role: 'assistant',
      content: [{ type: 'text', text: `answer ${text(i)}` }],
      provider: 'openai',
      model: 'gpt-5',
      api: 'openai-responses',
      stopReason: 'stop',
      timestamp: 2,
    });
  }
  s.appendMessage({ role: 'user', content: 'question 4', timestamp: 3 });
  return s;
}

/** A Maintainer over `longSession()` with a 3,000-token threshold, soft compaction and a counting summarizer. */
function maintained() {
  const summaries = [];
  const m = new Maintainer(longSession(), {
    model: model(),
    settings: { thresholdTokens: 3_000, methodOrder: ['soft'], asyncEnabled: false },
    summarize: async (request) => {
      summaries.push(request.purpose);
      return 'Summary: the questions so far.';
    },
    now: () => 1_800_000_000_000,
  });
  return { m, summaries };
}

/** The server reports the input's size as about a token per 4 characters. */
const counted = (parsed) => Math.ceil(JSON.stringify(parsed.input).length / 4);

test('over the threshold, the server compacts inside the request and the Maintainer does not compact first', async () => {
  mode = 'json';
  declines = false;
  overflows = false;
  inputTokens = counted;
  seen.length = 0;
  const { m, summaries } = maintained();
  const { before } = await turn(m);
  assert.ok(before.tokens > 3_000, `${before.tokens}`);
  assert.deepEqual(before.contextManagement, [{ type: 'compaction', compact_threshold: 3_000 }]);
  // The whole history went to the server, which compacted it; no summary of ours.
  assert.ok(JSON.stringify(seen[0].input).includes('question 0'));
  assert.deepEqual(summaries, []);
  const last = m.session.entries().at(-1);
  assert.equal(last.type, 'compaction');
  assert.equal(last.preserveData.openaiRemoteCompaction.version, 'inline');
  // Kept and replayed: the next request opens with the item; still none of ours.
  m.session.appendMessage({ role: 'user', content: 'question 5', timestamp: 4 });
  const next = await turn(m);
  assert.deepEqual(seen[1].input[0], ITEM);
  assert.ok(!JSON.stringify(seen[1].input).includes('question 0'));
  assert.ok(next.before.tokens < 3_000, `${next.before.tokens}`);
  assert.deepEqual(summaries, []);
  assert.equal(m.session.entries().filter((e) => e.type === 'compaction').length, 1);
  inputTokens = () => 30_000;
});

test('when the server does not compact a request over the threshold, the Maintainer compacts after its reply', async () => {
  mode = 'json';
  declines = true;
  overflows = false;
  inputTokens = counted;
  seen.length = 0;
  const { m, summaries } = maintained();
  const before = await m.beforeRequest({ format: 'openai-responses' });
  // The request went out whole, with the parameter: the server's chance first.
  assert.deepEqual(summaries, []);
  assert.ok(before.contextManagement !== undefined);
  const r = await send({
    model: 'gpt-5',
    input: before.messages,
    store: false,
    context_management: before.contextManagement,
  });
  assert.ok(r.usage.input_tokens >= 3_000, `${r.usage.input_tokens}`);
  await m.afterResponse(fromResponse(r, { format: 'openai-responses', model: model() }));
  // It declined: our threshold compaction ran after the reply.
  assert.ok(summaries.includes('history'), `${summaries}`);
  const last = m.session.entries().at(-1);
  assert.equal(last.type, 'compaction');
  assert.equal(last.preserveData?.openaiRemoteCompaction, undefined);
  assert.match(last.summary, /Summary: the questions so far\./);
  // The next request is small, and still carries the parameter for the server.
  m.session.appendMessage({ role: 'user', content: 'question 5', timestamp: 4 });
  const next = await m.beforeRequest({ format: 'openai-responses' });
  assert.ok(next.tokens < 3_000, `${next.tokens}`);
  assert.ok(next.contextManagement !== undefined);
  declines = false;
  inputTokens = () => 30_000;
});

test('an overflow of a request that carried the parameter is recovered by the Maintainer', async () => {
  mode = 'json';
  declines = false;
  overflows = true;
  seen.length = 0;
  const { m, summaries } = maintained();
  const before = await m.beforeRequest({ format: 'openai-responses' });
  assert.deepEqual(summaries, []);
  const res = await fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-5', input: before.messages, context_management: before.contextManagement }),
  });
  assert.equal(res.status, 400);
  const error = Object.assign(new Error('400 context_length_exceeded'), {
    status: 400,
    error: (await res.json()).error,
  });
  const after = await m.afterResponse(fromError(error, { format: 'openai-responses', model: model() }));
  assert.equal(after.next, 'retry');
  assert.ok(summaries.includes('history'), `${summaries}`);
  assert.equal(m.session.entries().at(-1).type, 'compaction');
  overflows = false;
});

test('a committed server compaction is reported: an event and the reply report, with tokens and the cache forecast', async () => {
  mode = 'json';
  declines = false;
  overflows = false;
  inputTokens = counted;
  seen.length = 0;
  const events = [];
  const summaries = [];
  const m = new Maintainer(longSession(), {
    model: model(),
    settings: { thresholdTokens: 3_000, methodOrder: ['soft'], asyncEnabled: false },
    summarize: async (request) => {
      summaries.push(request.purpose);
      return 'Summary.';
    },
    onEvent: (e) => events.push(e),
    now: () => 1_800_000_000_000,
  });
  const { before, after } = await turn(m);
  const reported = counted(seen[0]);
  const server = events.filter((e) => e.type === 'server_compaction');
  assert.equal(server.length, 1, JSON.stringify(events.map((e) => e.type)));
  const [e] = server;
  const entry = m.session.entries().at(-1);
  assert.equal(e.entryId, entry.id);
  assert.equal(entry.type, 'compaction');
  // Tokens before: the context the server compacted (the core's estimate, as the entry records
  // it); after: the item and the reply only, far less.
  assert.equal(e.tokensBefore, entry.tokensBefore);
  assert.ok(e.tokensBefore > 3_000, `${e.tokensBefore}`);
  assert.ok(e.tokensAfter < e.tokensBefore / 4, `${e.tokensAfter} of ${e.tokensBefore}`);
  assert.equal(e.providerTokensBefore, reported);
  assert.ok(before.tokens > 3_000);
  // The report is the reply's, like a compaction of the Maintainer's own.
  assert.equal(after.report, e.report);
  assert.equal(e.report.method, 'remote');
  assert.equal(e.report.reason, 'threshold');
  assert.equal(e.report.tokenUnit, 'estimate');
  assert.ok(e.report.entriesSummarized >= 8, `${e.report.entriesSummarized}`);
  // The request now opens with the server's item: the cache breaks at the first message.
  assert.equal(e.prefixChangedAt.messageIndex, 0);
  assert.equal(e.prefixChangedAt.entryId, entry.id);
  assert.deepEqual(e.forecast, e.report.forecast);
  assert.equal(typeof e.forecast, 'object');
  // Nothing of the Maintainer's own ran, and no auto_compaction event claims it.
  assert.deepEqual(summaries, []);
  assert.ok(!events.some((x) => x.type === 'auto_compaction_start'));
  // A reply without an item reports nothing.
  m.session.appendMessage({ role: 'user', content: 'question 5', timestamp: 4 });
  await turn(m);
  assert.equal(events.filter((x) => x.type === 'server_compaction').length, 1);
  inputTokens = () => 30_000;
});
