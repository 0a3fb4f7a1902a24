// The dead-end rescue's last tier (spec: compaction §8.3; issue 36) through the package:
// `session.dropImages()` strips the images of a branch in place, and compact() runs it when a
// kept tail of attached images leaves nothing to summarize and nothing to shake.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';

const MODEL = { provider: 'anthropic', id: 'claude-test', contextWindow: 40_000, maxTokens: 1000, input: ['text'] };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const image = () => ({ type: 'image', data: PNG, mimeType: 'image/png' });

function expectThrows(f, code) {
  assert.throws(f, (err) => {
    assert.equal(err.code, code, err.message);
    return true;
  });
}

/** A prompt with `n` screenshots, a read of an image, and a plain reply. */
function screenshots(n) {
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  s.appendMessage(
    { role: 'user', content: [{ type: 'text', text: 'compare these' }, ...Array.from({ length: n }, image)] },
    { now: 1 },
  );
  s.appendMessage(
    {
      role: 'assistant',
      content: [{ type: 'toolCall', id: 'c1', name: 'read', arguments: { path: '/w/a.png' } }],
      provider: MODEL.provider,
      model: MODEL.id,
      usage: { input: 0, output: 10, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'toolUse',
    },
    { now: 2 },
  );
  s.appendMessage(
    {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'read',
      content: [image()],
      details: { images: [image()], path: '/w/a.png' },
      isError: false,
      timestamp: 3,
    },
    { now: 3 },
  );
  return s;
}

test('dropImages strips every attached image in place and keeps every other line', () => {
  const s = screenshots(2);
  const before = s.toJsonl().split('\n');
  const ids = before.slice(1, -1).map((l) => JSON.parse(l).id);
  const r = s.dropImages();
  assert.deepEqual(r, { removed: 4, entries: [ids[0], ids[2]] });
  const after = s.toJsonl().split('\n');
  assert.equal(after.length, before.length);
  assert.equal(after[2], before[2], 'the assistant line is untouched');
  assert.doesNotMatch(s.toJsonl(), /"type":"image"/);
  const result = JSON.parse(after[3]).message;
  assert.deepEqual(result.content, [{ type: 'text', text: '[image removed]' }]);
  assert.deepEqual(result.details, { images: [], path: '/w/a.png' });
  assert.deepEqual(JSON.parse(after[1]).message.content, [{ type: 'text', text: 'compare these' }]);
  // The file loads again with every entry; a second drop writes nothing.
  assert.equal(Session.fromJsonl(s.toJsonl()).entries().length, s.entries().length);
  const done = s.toJsonl();
  assert.deepEqual(s.dropImages(), { removed: 0, entries: [] });
  assert.equal(s.toJsonl(), done);
});

test('dropImages refuses a bad leaf or bad options and changes nothing', () => {
  const s = screenshots(1);
  const before = s.toJsonl();
  expectThrows(() => s.dropImages({ leafId: 'nope' }), 'E_UNKNOWN_ENTRY');
  expectThrows(() => s.dropImages({ leafId: 7 }), 'E_INVALID_ARGUMENT');
  expectThrows(() => s.dropImages('x'), 'E_INVALID_ARGUMENT');
  assert.equal(s.toJsonl(), before);
  // A leaf names the branch: the first entry alone holds one image.
  const first = JSON.parse(before.split('\n')[1]).id;
  assert.equal(s.dropImages({ leafId: first }).removed, 1);
});

test('a dead end of attached images: compact() drops them and the context fits again', async () => {
  // Eighteen screenshots (the core charges 1,200 tokens each) and one text line: the kept
  // region holds everything, and the rescue shake finds no text to elide.
  const build = () => {
    const s = Session.create({ id: 's', cwd: '/w', now: 1 });
    s.appendMessage(
      { role: 'user', content: [{ type: 'text', text: 'why do these differ?' }, ...Array.from({ length: 18 }, image)] },
      { now: 1 },
    );
    return s;
  };
  const settings = { keepRecentTokens: 23_000 };
  const s = build();
  const entries = s.entries().length;
  const events = [];
  const r = await s.compact({
    reason: 'overflow',
    methods: ['soft'],
    model: MODEL,
    settings,
    summarize: async () => 'S',
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(r.method, 'shake');
  assert.equal(r.shake.rescue, true);
  assert.equal(r.imagesDropped.removed, 18);
  assert.equal(r.imagesDropped.entries.length, 1);
  assert.ok(r.report.tokensAfter < r.report.tokensBefore - 18 * 1000, JSON.stringify(r.report));
  assert.ok(
    events.some((e) => e.type === 'compaction_warning' && /dropped 18 attached images/.test(e.message)),
    JSON.stringify(events),
  );
  assert.equal(s.entries().length, entries, 'nothing appended');
  assert.doesNotMatch(s.toJsonl(), /"type":"image"/);
  assert.match(s.toJsonl(), /why do these differ\?/);
  // A manual compaction never rescues: the images stay.
  const m = build();
  const before = m.toJsonl();
  await assert.rejects(m.compact({ model: MODEL, settings, summarize: async () => 'S' }), (err) => {
    assert.equal(err.code, 'E_NOTHING_TO_COMPACT');
    return true;
  });
  assert.equal(m.toJsonl(), before);
});
