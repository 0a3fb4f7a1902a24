// The paged display transcript of the built package (issue 22): pages are slices of
// `buildContext({ transcript: true })`, negative `from` counts from the end, bad options fail
// with a code.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { generatedSession } from './support/generated.mjs';

test('pages of the transcript are slices of the whole transcript', () => {
  const s = Session.fromJsonl(generatedSession('transcript-2k.jsonl', ['--entries', '2000', '--seed', '9']));
  const whole = s.buildContext({ transcript: true });
  const total = whole.messages.length;
  assert.ok(total > 500, `${total} messages`);
  const all = s.transcript();
  assert.equal(all.total, total);
  assert.equal(all.from, 0);
  assert.deepEqual(all.messages, whole.messages);
  assert.deepEqual(all.entryIds, whole.entryIds);
  assert.deepEqual(all.cacheMissExplainedAt, whole.cacheMissExplainedAt);
  const page = s.transcript({ from: 100, count: 50 });
  assert.equal(page.from, 100);
  assert.deepEqual(page.messages, whole.messages.slice(100, 150));
  assert.deepEqual(page.entryIds, whole.entryIds.slice(100, 150));
  const last = s.transcript({ from: -10 });
  assert.equal(last.from, total - 10);
  assert.deepEqual(last.entryIds, whole.entryIds.slice(-10));
  assert.deepEqual(s.transcript({ from: total + 5, count: 3 }).messages, []);
  assert.deepEqual(s.transcript({ leafId: null }), {
    total: 0,
    from: 0,
    messages: [],
    entryIds: [],
    cacheMissExplainedAt: [],
  });
  s.free();
});

test('bad page options fail with E_INVALID_ARGUMENT', () => {
  const s = Session.create({ id: 's', now: 0 });
  for (const options of [{ from: 1.5 }, { from: 'x' }, { count: -1 }]) {
    assert.throws(() => s.transcript(options), { code: 'E_INVALID_ARGUMENT' }, JSON.stringify(options));
  }
  s.free();
});

test('provider messages after appends and edits are those of a fresh load', () => {
  const bytes = generatedSession('transcript-2k.jsonl', ['--entries', '2000', '--seed', '9']);
  const s = Session.fromJsonl(bytes);
  s.toLlmMessages();
  for (let i = 0; i < 3; i++) {
    s.appendMessage({ role: 'user', content: `question ${i}` }, { now: 1_800_000_000_000 + i });
    s.appendMessage(
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: `call${i}`, name: 'read', arguments: { path: 'a.ts' } }],
        stopReason: 'toolUse',
      },
      { now: 1_800_000_000_000 + i },
    );
    // The call has no result yet: it is dropped, then kept once its result is there.
    const fresh = Session.fromJsonl(s.toBytes());
    assert.deepEqual(s.toLlmMessages(), fresh.toLlmMessages());
    s.appendMessage(
      {
        role: 'toolResult',
        toolCallId: `call${i}`,
        toolName: 'read',
        content: [{ type: 'text', text: 'x'.repeat(400) }],
      },
      { now: 1_800_000_000_000 + i },
    );
    assert.deepEqual(s.toLlmMessages(), Session.fromJsonl(s.toBytes()).toLlmMessages());
    fresh.free();
  }
  s.prune({ now: 1_900_000_000_000, protectTokens: 0, minimumSavings: 0 });
  assert.deepEqual(s.toLlmMessages(), Session.fromJsonl(s.toBytes()).toLlmMessages());
  s.free();
});

test('text of every width comes out of the transcript and the context as it went in', () => {
  // The core hands JSON to JavaScript with non-ASCII characters as \u escapes (one-byte text
  // decodes several times faster): what JS gets must be the same strings.
  const texts = [
    'plain',
    'café ünïcode',
    '漢字かな',
    'emoji 😀 and 𝄞',

    '\u2028\u2029',
    'ÿ\u0100',
  ];
  const s = Session.create({ ids: 'deterministic' });
  for (const text of texts) s.appendMessage({ role: 'user', content: text, timestamp: 1 });
  s.append('custom', { customType: 'note', data: { label: 'étiquette 🏷' } });
  assert.deepEqual(
    s.transcript().messages.map((m) => m.content),
    texts,
  );
  assert.deepEqual(
    s.buildContext().messages.map((m) => m.content),
    texts,
  );
  assert.deepEqual(s.entry(s.leafId).data, { label: 'étiquette 🏷' });
  s.free();
});
