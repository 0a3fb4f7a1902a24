// Anthropic on-demand compaction (beta `compact-2026-09-04`, spec: compaction §13) against a
// local HTTP server on 127.0.0.1 that speaks the Messages API: the request (the beta header,
// `compaction: {type: "summarize", instructions}`, only the older part of the conversation: the
// kept tail stays verbatim after the block), the commit (the summary, the whole signed block
// under preserveData.anthropicCompaction with `beta`), the signature round trip (the block a
// later request carries is byte-identical to what the server sent), and the failures — an HTTP
// error, a stream cut mid-body, an answer without a summary, an aborted signal — after which the
// session's bytes are unchanged and the threshold lane, then the next method, take over.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { Session } from 'ctxfold';
import { header, line } from './support/sessions.mjs';

function sessionText() {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < 8; i++) {
    lines.push(line(`u${i}`, parent, { role: 'user', content: `question ${i} `.repeat(40), timestamp: 1 }));
    lines.push(
      line(`a${i}`, `u${i}`, {
        role: 'assistant',
        content: [{ type: 'text', text: `answer ${i} `.repeat(40) }],
        provider: 'anthropic',
        model: 'claude-opus-4-6',
        usage: { input: i === 7 ? 80_000 : 10, output: 5, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'stop',
      }),
    );
    parent = `a${i}`;
  }
  return `${lines.join('\n')}\n`;
}

const SUMMARY = 'The user asked eight questions; all were answered.';
// The block exactly as the server writes it (members in the server's order).
const BLOCK_TEXT = `{"type":"compaction","content":"${SUMMARY}","signature":"EuYBCkQYAiJA-opaque=="}`;
const ANSWER = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-6","content":[${BLOCK_TEXT}],"stop_reason":"compaction","usage":{"input_tokens":60000,"output_tokens":900}}`;
const THRESHOLD_ANSWER = JSON.stringify({
  type: 'message',
  role: 'assistant',
  content: [{ type: 'compaction', content: 'threshold summary', encrypted_content: 'E' }],
  stop_reason: 'compaction',
});

let reply;
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
      seen.push({ url: req.url, headers: req.headers, body: JSON.parse(body) });
      reply(req, res, JSON.parse(body));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

function send(res, status, text) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
}

const claude = () => ({
  id: 'claude-opus-4-6',
  provider: 'anthropic',
  api: 'anthropic-messages',
  baseUrl: base,
  contextWindow: 200_000,
  input: ['text'],
  remoteCompaction: { enabled: true },
});

const options = (extra = {}) => ({
  model: claude(),
  credentials: () => Promise.resolve({ 'x-api-key': 'sk-test' }),
  settings: { keepRecentTokens: 100, methodOrder: ['remote', 'soft'] },
  summarize: () => Promise.resolve('local summary'),
  retry: { maxRetries: 0, baseDelayMs: 1 },
  now: 1_800_000_000_000,
  ...extra,
});

test('on demand is chosen for a model that has it: the older part, the summarize parameter, the beta', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, ANSWER);
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact(options());
  assert.equal(result.method, 'remote');
  assert.equal(seen.length, 1);
  const [r] = seen;
  assert.equal(r.url, '/v1/messages');
  assert.equal(r.headers['anthropic-beta'], 'compact-2026-09-04');
  assert.equal(r.headers['x-api-key'], 'sk-test');
  assert.deepEqual(Object.keys(r.body), ['model', 'max_tokens', 'messages', 'compaction']);
  assert.equal(r.body.compaction.type, 'summarize');
  assert.match(r.body.compaction.instructions, /^SCOPE: The conversation above is the transcript to summarize/);
  assert.equal(r.body.context_management, undefined, 'never together with context_management');
  // Only the older part is sent: the kept tail (the last question and answer) is not.
  const texts = r.body.messages.flatMap((m) => m.content.map((b) => b.text));
  assert.ok(texts.includes(`question 0 `.repeat(40)));
  assert.ok(!texts.includes(`answer 7 `.repeat(40)));
  const kept = s.toLlmMessages({ model: claude() });
  assert.ok(
    kept.some((m) => JSON.stringify(m).includes('answer 7')),
    'the tail is kept verbatim',
  );
  const record = result.compactionEntry.preserveData.anthropicCompaction;
  assert.equal(record.beta, 'compact-2026-09-04');
  assert.equal(record.signature, 'EuYBCkQYAiJA-opaque==');
  assert.equal(JSON.stringify(record.block), BLOCK_TEXT);
});

test('the signed block round trips byte for byte: the next compaction request sends it unchanged', async () => {
  reply = (_req, res) => send(res, 200, ANSWER);
  const s = Session.fromJsonl(sessionText());
  const first = await s.compact(options());
  // The conversation goes on, then compacts again: the first block opens the request.
  let parent = first.entryId;
  for (let i = 8; i < 12; i++) {
    parent = s.appendMessage({ role: 'user', content: `question ${i} `.repeat(40), timestamp: 2 });
    parent = s.appendMessage({
      role: 'assistant',
      content: [{ type: 'text', text: `answer ${i} `.repeat(40) }],
      provider: 'anthropic',
      model: 'claude-opus-4-6',
      usage: { input: i === 11 ? 90_000 : 10, output: 5, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'stop',
      timestamp: 3,
    });
  }
  assert.ok(parent);
  seen.length = 0;
  await s.compact(options());
  assert.equal(seen.length, 1);
  const opening = seen[0].body.messages[0];
  assert.equal(opening.role, 'assistant');
  assert.equal(JSON.stringify(opening.content[0]), BLOCK_TEXT);
  // The host's own Anthropic request (toMessages) replays it the same way.
  const out = s.toMessages({ format: 'anthropic', model: claude() });
  const blocks = out.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  assert.ok(blocks.some((b) => b.type === 'compaction'));
});

for (const [name, answer] of [
  ['an HTTP error', (_req, res) => send(res, 400, '{"type":"error","error":{"message":"bad"}}')],
  [
    'a body cut mid-stream',
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(ANSWER.length) });
      res.write(ANSWER.slice(0, 40));
      setTimeout(() => res.destroy(), 5);
    },
  ],
  [
    'an answer without a summary',
    (_req, res) => send(res, 200, '{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}'),
  ],
]) {
  test(`${name} falls back to the threshold lane, the session unchanged until it commits`, async () => {
    seen.length = 0;
    reply = (req, res, body) => (body.compaction ? answer(req, res) : send(res, 200, THRESHOLD_ANSWER));
    const s = Session.fromJsonl(sessionText());
    const result = await s.compact(options());
    assert.equal(seen.length, 2);
    assert.equal(seen[0].headers['anthropic-beta'], 'compact-2026-09-04');
    assert.equal(seen[1].headers['anthropic-beta'], 'compact-2026-01-12');
    assert.equal(result.method, 'remote');
    assert.equal(result.compactionEntry.preserveData.anthropicCompaction.beta, undefined);
    assert.ok(result.compactionEntry.summary.startsWith('threshold summary'));
  });
}

test('when both lanes fail the next method runs', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 500, '{"type":"error","error":{"message":"down"}}');
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact(options());
  assert.equal(seen.length, 2);
  assert.equal(result.method, 'soft');
});

test('an abort during the request rejects with E_ABORTED and changes nothing', async () => {
  seen.length = 0;
  const controller = new AbortController();
  reply = () => controller.abort();
  const s = Session.fromJsonl(sessionText());
  const before = s.toJsonl();
  await assert.rejects(s.compact(options({ signal: controller.signal })), { code: 'E_ABORTED' });
  assert.equal(s.toJsonl(), before);
  assert.equal(seen.length, 1);
});

// The kept turns' thinking was written under the host request's system prompt and tools; the
// on-demand request carries them when the host gives them (`native.system`, `native.tools`),
// so the block may replay before that thinking; without them the summary goes as text.
function thinkingSessionText() {
  return sessionText().replace(
    '"content":[{"type":"text","text":"answer 7 ',
    '"content":[{"type":"thinking","thinking":"let me see","thinkingSignature":"sig7"},{"type":"text","text":"answer 7 ',
  );
}
const SYSTEM = [{ type: 'text', text: 'You are a careful coding agent.' }];
const TOOLS = [{ name: 'read', description: 'Reads a file', input_schema: { type: 'object', properties: {} } }];

test("the host request's system and tools go in the on-demand request as given", async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, ANSWER);
  const s = Session.fromJsonl(thinkingSessionText());
  assert.ok(s.toJsonl().includes('sig7'));
  const result = await s.compact(options({ native: { system: SYSTEM, tools: TOOLS } }));
  assert.equal(result.method, 'remote');
  const [r] = seen;
  assert.deepEqual(Object.keys(r.body), ['model', 'max_tokens', 'system', 'tools', 'messages', 'compaction']);
  assert.deepEqual(r.body.system, SYSTEM);
  assert.deepEqual(r.body.tools, TOOLS);
  // Which kept thinking stays valid is the core's (tests/it/native_ondemand.rs): here the tail
  // opens inside the last turn, with the thinking, so the summary goes as text all the same.
  assert.equal(result.compactionEntry.preserveData.anthropicCompaction.thinkingSafe, false);
  // A string system prompt goes as given.
  seen.length = 0;
  await Session.fromJsonl(thinkingSessionText()).compact(options({ native: { system: 'Be brief.', tools: [] } }));
  assert.equal(seen[0].body.system, 'Be brief.');
  assert.equal(seen[0].body.tools, undefined, 'no tools: none sent');
});

test('without the host request, the kept thinking falls back to the summary text', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, ANSWER);
  const s = Session.fromJsonl(thinkingSessionText());
  const result = await s.compact(options());
  assert.deepEqual(Object.keys(seen[0].body), ['model', 'max_tokens', 'messages', 'compaction']);
  assert.equal(result.compactionEntry.preserveData.anthropicCompaction.thinkingSafe, false);
  // Only one of the two is not the host's request: the same fallback.
  seen.length = 0;
  const half = await Session.fromJsonl(thinkingSessionText()).compact(options({ native: { tools: TOOLS } }));
  assert.equal(half.compactionEntry.preserveData.anthropicCompaction.thinkingSafe, false);
});

test('a malformed native.system is refused before any request', async () => {
  seen.length = 0;
  reply = (_req, res) => send(res, 200, ANSWER);
  const s = Session.fromJsonl(thinkingSessionText());
  const before = s.toJsonl();
  await assert.rejects(s.compact(options({ native: { system: 7, tools: [] } })), { code: 'E_INVALID_ARGUMENT' });
  assert.equal(seen.length, 0);
  assert.equal(s.toJsonl(), before);
});
