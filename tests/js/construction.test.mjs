// Every way of building a session gives the same entries (issue 36, Tests: "ids equal through
// every construction path"): `Session.fromMessages` writes what `Session.create` and
// `appendMessages` write, ids included, for every id generator; and any batch of values either
// goes in as given or is refused at the first bad message with the session unchanged.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { seededRandom as rng } from './support/fake-agent.mjs';

const pick = (r, xs) => xs[Math.floor(r() * xs.length)];

/** A message, valid most of the time; now and then one the core refuses. */
function message(r, i) {
  const text = pick(r, ['hi', 'read "a.ts"', 'ünïcödé\u2028', '', 'x'.repeat(300), '{"json":1}']);
  const good = [
    () => ({ role: 'user', content: text, timestamp: i }),
    () => ({ role: 'user', content: [{ type: 'text', text }] }),
    () => ({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: text, thinkingSignature: 's' },
        { type: 'toolCall', id: `c${i}`, name: 'read', arguments: { path: text } },
      ],
      stopReason: 'toolUse',
      usage: { input: i, output: 1.5, totalTokens: i + 2 },
      extra: { kept: [1, null, true] },
    }),
    () => ({ role: 'toolResult', toolCallId: `c${i}`, toolName: 'read', content: text, isError: r() < 0.5 }),
    () => ({ role: 'custom', customType: 'note', content: text, display: false }),
  ];
  const bad = [
    () => ({ role: 'user', content: 42 }),
    () => ({ role: 'robot', content: 'x' }),
    () => ({ role: 'assistant', content: [], usage: { input: 1e20 } }),
    () => ({ role: 'user', content: [{ type: 'text' }] }),
  ];
  return r() < 0.1 ? pick(r, bad)() : pick(r, good)();
}

const IDS = [
  { ids: 'random', seed: 7 },
  { ids: 'random', seed: 123456789 },
  { ids: 'deterministic' },
  { ids: 'deterministic', start: 0x3fa },
];

test('fromMessages writes what create + appendMessages write, ids included, for every id generator', () => {
  const r = rng(36);
  let compared = 0;
  let refused = 0;
  for (let run = 0; run < 200; run++) {
    const messages = Array.from({ length: Math.floor(r() * 8) }, (_, i) => message(r, i));
    const ids = pick(r, IDS);
    const system = r() < 0.5 ? 'be brief' : undefined;
    const options = { ...ids, id: 'sess', cwd: '/w', now: 1_700_000_000_000, system };
    const firstBad = messages.findIndex((m) => {
      const probe = Session.create();
      try {
        probe.appendMessage(m);
        return false;
      } catch {
        return true;
      } finally {
        probe.free();
      }
    });
    const stepwise = Session.create(options);
    const before = stepwise.toJsonl();
    let batch;
    try {
      batch = Session.fromMessages(messages, options);
    } catch (e) {
      assert.equal(e.code, 'E_INVALID_MESSAGE', e.message);
      assert.equal(e.index, firstBad, `run ${run}: refused at ${e.index}, the appends refuse ${firstBad}`);
      assert.throws(
        () => stepwise.appendMessages(messages, { system, now: options.now }),
        (err) => err.code === 'E_INVALID_MESSAGE' && err.index === firstBad,
      );
      assert.equal(stepwise.toJsonl(), before, 'a refused appendMessages changed the session');
      refused++;
      stepwise.free();
      continue;
    }
    assert.equal(firstBad, -1, `run ${run}: fromMessages took a message appendMessage refuses`);
    stepwise.appendMessages(messages, { system, now: options.now });
    assert.equal(batch.toJsonl(), stepwise.toJsonl(), `run ${run} (${JSON.stringify(ids)})`);
    // The next id drawn is the same too.
    assert.equal(
      batch.appendMessage({ role: 'user', content: 'next' }),
      stepwise.appendMessage({ role: 'user', content: 'next' }),
    );
    // And one append per message writes the same entries.
    const single = Session.create(options);
    if (system !== undefined)
      single.append('custom', { customType: 'ctxfold:system', data: batch.entries()[0].data }, { now: options.now });
    for (const m of messages) single.appendMessage(m, { now: options.now });
    single.appendMessage({ role: 'user', content: 'next' });
    assert.deepEqual(
      single.entries().map((e) => e.id),
      batch.entries().map((e) => e.id),
    );
    compared++;
    for (const s of [batch, stepwise, single]) s.free();
  }
  assert.ok(compared > 50 && refused > 10, `compared ${compared}, refused ${refused}`);
});

test('a circular message is refused with its index, before anything is written', () => {
  const loop = { role: 'user', content: 'x' };
  loop.self = loop;
  const s = Session.create({ now: 1 });
  const before = s.toJsonl();
  for (const call of [
    () => Session.fromMessages([{ role: 'user', content: 'a' }, loop]),
    () => s.appendMessages([{ role: 'user', content: 'a' }, loop]),
  ]) {
    assert.throws(call, (e) => e.code === 'E_INVALID_MESSAGE' && e.index === 1);
  }
  assert.equal(s.toJsonl(), before);
});
