// Every maintenance report carries its cache cost (issue 39 item 5): a compaction (soft,
// snapcompact), a shake, the dead-end rescue's image drop and a handoff say where they changed
// the request (`prefixChangedAt`) and what that costs the provider's prompt cache (`forecast`),
// as a prune's report does; the figures are the core's, measured on the request sent next.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const MODEL = {
  provider: 'openai',
  id: 'gpt-cache',
  api: 'openai-responses',
  contextWindow: 40_000,
  maxTokens: 1000,
  input: ['text'],
};
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const big = (n, word = 'data ') => word.repeat(n);

function assistant(content, extra = {}) {
  return {
    role: 'assistant',
    content,
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: 0, output: 10, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'toolUse',
    ...extra,
  };
}

/** `turns` tool turns (reasoning, a read call, a result of ~2,000 tokens), then a reply and a question. */
function toolSession(turns) {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  s.appendMessage({ role: 'user', content: 'look at the files', timestamp: 1000 }, { now: 1000 });
  for (let i = 0; i < turns; i++) {
    const id = `call-${i}`;
    s.appendMessage(
      assistant([
        { type: 'thinking', thinking: `plan ${i} ${big(50)}`, thinkingSignature: `sig${i}` },
        { type: 'toolCall', id, name: 'read', arguments: { path: `/w/f${i}.ts` } },
      ]),
      { now: 1001 + i },
    );
    s.appendMessage(
      {
        role: 'toolResult',
        toolCallId: id,
        toolName: 'read',
        content: [{ type: 'text', text: `${i}: ${big(1600)}` }],
        isError: false,
        timestamp: 1001 + i,
      },
      { now: 1001 + i },
    );
  }
  s.appendMessage(assistant([{ type: 'text', text: 'read them all' }], { stopReason: 'stop' }), { now: 1100 });
  s.appendMessage({ role: 'user', content: 'now fix the bug', timestamp: 1101 }, { now: 1101 });
  return s;
}

/** The report's cache figures are consistent with the action: freed tokens, a write of the suffix. */
function checkForecast(report) {
  const f = report.forecast;
  assert.ok(f, `no forecast in ${JSON.stringify(report)}`);
  assert.equal(f.tokensFreed, Math.max(0, report.tokensBefore - report.tokensAfter));
  assert.ok(f.rewrittenTokens > 0 && f.rewrittenTokens <= report.tokensAfter, JSON.stringify(report));
  // OpenAI prices: reads at 0.1, writes at 1 (the core's table).
  assert.equal(f.net, Math.round((f.rewrittenTokens + f.tokensFreed) * 0.1 - f.rewrittenTokens));
}

test('a soft compaction changes the request from its summary on: message 0, the compaction entry', async () => {
  const s = toolSession(6);
  const r = await s.compact({
    methods: ['soft'],
    model: MODEL,
    settings: { keepRecentTokens: 3_000 },
    summarize: async () => 'Summary of the reads.',
  });
  assert.equal(r.method, 'soft');
  assert.deepEqual(r.report.prefixChangedAt, { messageIndex: 0, entryId: r.entryId });
  checkForecast(r.report);
  // The kept reasoning is at risk on OpenAI's Responses API (dropped after a change before it).
  const kept = s.toLlmMessages().filter((m) => m.role === 'assistant');
  const thinking = kept.flatMap((m) => m.content).filter((b) => b.type === 'thinking').length;
  assert.equal(r.report.forecast.reasoningAtRisk, thinking);
});

test("a shake's report names its first rewritten message", async () => {
  const s = toolSession(6);
  const r = await s.compact({ strategy: 'shake', model: MODEL });
  assert.equal(r.method, 'shake');
  assert.ok(r.shake.entries.length > 0);
  const ids = new Set(r.shake.entries);
  const path = s.entries().filter((e) => ids.has(e.id));
  const first = path[0].id;
  assert.equal(r.report.prefixChangedAt.entryId, first);
  // Its index among the messages of the request: the first message converted from that entry.
  const messages = s.toLlmMessages();
  const index = messages.findIndex((m) => m.role === 'toolResult' && /shaken/.test(JSON.stringify(m.content)));
  assert.equal(r.report.prefixChangedAt.messageIndex, index);
  checkForecast(r.report);
});

test('a snapcompact compaction and a handoff rewrite the whole request', async () => {
  const vision = { ...MODEL, id: 'gpt-vision', input: ['text', 'image'] };
  const s = toolSession(6);
  const frames = await s.compact({ strategy: 'snapcompact', model: vision, settings: { keepRecentTokens: 3_000 } });
  assert.equal(frames.method, 'snapcompact');
  assert.deepEqual(frames.report.prefixChangedAt, { messageIndex: 0, entryId: frames.entryId });
  checkForecast(frames.report);

  const h = toolSession(6);
  const r = await h.compact({
    methods: ['handoff'],
    model: MODEL,
    summarize: async () => 'Handoff: the reads are done, fix the bug next.',
  });
  assert.equal(r.method, 'handoff');
  const next = r.session;
  assert.equal(r.report.prefixChangedAt.messageIndex, 0);
  assert.ok(
    next.entries().some((e) => e.id === r.report.prefixChangedAt.entryId),
    'an entry of the new session',
  );
  assert.ok(r.report.forecast.rewrittenTokens > 0);
});

test("the dead-end rescue's image drop names the message it stripped", async () => {
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  const image = { type: 'image', data: PNG, mimeType: 'image/png' };
  s.appendMessage(
    {
      role: 'user',
      content: [{ type: 'text', text: 'why do these differ?' }, ...Array.from({ length: 18 }, () => image)],
    },
    { now: 1 },
  );
  const r = await s.compact({
    reason: 'overflow',
    methods: ['soft'],
    model: MODEL,
    settings: { keepRecentTokens: 23_000 },
    summarize: async () => 'S',
  });
  assert.equal(r.imagesDropped.removed, 18);
  assert.deepEqual(r.report.prefixChangedAt, { messageIndex: 0, entryId: r.imagesDropped.entries[0] });
  checkForecast(r.report);
});

test("the Maintainer's compaction report carries the forecast", async () => {
  const s = toolSession(8);
  const m = new Maintainer(s, {
    model: MODEL,
    settings: { methodOrder: ['soft'], thresholdTokens: 10_000, keepRecentTokens: 3_000, asyncEnabled: false },
    summarize: async () => 'Summary of the reads.',
    now: () => 2_000,
  });
  const { report } = await m.beforeRequest();
  assert.equal(report?.method, 'soft', JSON.stringify(report));
  const latest = m.session.entries().findLast((e) => e.type === 'compaction');
  assert.deepEqual(report.prefixChangedAt, { messageIndex: 0, entryId: latest.id });
  assert.ok(report.forecast.rewrittenTokens > 0);
});
