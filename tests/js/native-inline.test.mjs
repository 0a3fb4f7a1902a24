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
import { fromResponse, Maintainer, Session, thresholdTokens } from 'ctxfold';
import { header } from './support/sessions.mjs';

const ITEM = { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAB-opaque-state' };
const UPDATE = { type: 'configuration_update', id: 'cu_1' };
const REPLY = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'the reply' }] };

function response(output) {
  return {
    id: 'resp_1',
    object: 'response',
    status: 'completed',
    output,
    usage: { input_tokens: 30_000, output_tokens: 10, total_tokens: 30_010 },
  };
}

let mode = 'json';
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
      // The server compacts when the request carries the parameter and its input is long.
      // Codex's form: the trigger item, last in the input, asks for it explicitly.
      const triggered = parsed.input.at(-1)?.type === 'compaction_trigger';
      const compacts = triggered || (Array.isArray(parsed.context_management) && parsed.input.length > 4);
      const output = compacts ? [ITEM, UPDATE, REPLY] : [REPLY];
      if (mode === 'json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(response(output)));
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
