// Progress of long compaction work (issue 41 Deliver 5): `onProgress` reports the frames of a
// snapcompact commit k of n and each summarizer request started and answered; the Maintainer
// sends the same reports to its `onEvent` as `compaction_progress`; `snapcompactFrames` draws
// a commit's frames one at a time and the commit then writes the same bytes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const NOW = Date.UTC(2026, 0, 2);

/** A session of `turns` turns of a user message and an answer. */
function history(turns = 120) {
  const s = Session.create({ ids: 'deterministic', now: Date.UTC(2026, 0, 1) });
  for (let t = 1; t <= turns; t++) {
    s.appendMessage({ role: 'user', content: `Step ${t}: ${'tidy the parser. '.repeat(60)}` });
    s.appendMessage({
      role: 'assistant',
      content: [{ type: 'text', text: `Step ${t} done. ${'moved a helper. '.repeat(60)}` }],
      stopReason: 'stop',
    });
  }
  return s;
}

/** Two identical copies of a session (loaded alike: their new entries get the same ids). */
function twins(turns) {
  const bytes = history(turns).toBytes();
  return [Session.fromJsonl(bytes, { ids: 'deterministic' }), Session.fromJsonl(bytes, { ids: 'deterministic' })];
}

const SNAP = { strategy: 'snapcompact', model: 'claude-opus-4-7', settings: { keepRecentTokens: 2_000 }, now: NOW };

test('snapcompact: onProgress reports frames 0..n of n, n the frames written', async () => {
  const s = history();
  const seen = [];
  const r = await s.compact({ ...SNAP, onProgress: (p) => seen.push(p) });
  const n = s.archiveFrames(r.entryId).length;
  assert.ok(n > 1, `${n} frames`);
  assert.deepEqual(
    seen,
    Array.from({ length: n + 1 }, (_, done) => ({ phase: 'frames', done, total: n })),
  );
});

test('a throwing onProgress does not stop the compaction, nor change what it writes', async () => {
  const [a, b] = twins();
  await a.compact(SNAP);
  await b.compact({
    ...SNAP,
    onProgress: () => {
      throw new Error('observer');
    },
  });
  assert.equal(b.toJsonl(), a.toJsonl());
});

test('snapcompactFrames: frames drawn one at a time are the frames the commit writes, same bytes', () => {
  const [a, b] = twins();
  const settings = { strategy: 'snapcompact', keepRecentTokens: 2_000 };
  const model = { model: { id: 'claude-opus-4-7' } };
  a.commitCompaction(a.planCompaction(settings, model), { now: NOW });
  const plan = b.planCompaction(settings, model);
  const frames = b.snapcompactFrames(plan);
  assert.ok(frames.count > 1);
  const pngs = Array.from({ length: frames.count }, (_, k) => frames.render(k));
  for (const k of [-1, frames.count, 1.5, Number.NaN]) {
    assert.throws(
      () => frames.render(k),
      (e) => e.code === 'E_INVALID_ARGUMENT',
    );
  }
  frames.free();
  const c = b.commitCompaction(plan, { now: NOW });
  assert.equal(b.toJsonl(), a.toJsonl());
  assert.deepEqual(
    b.archiveFrames(c.entryId).map((f) => Buffer.from(f.png).toString('base64')),
    pngs.map((p) => Buffer.from(p).toString('base64')),
  );
  // Another strategy's plan has no frames.
  const ctx = history(30).planCompaction({ keepRecentTokens: 2_000 });
  assert.throws(
    () => b.snapcompactFrames(ctx),
    (e) => typeof e.code === 'string',
  );
});

test('summarizer requests: started then answered, with the request id, method, time and length', async () => {
  const s = history(40);
  const seen = [];
  const answer = 'Summary: the parser was tidied.';
  await s.compact({
    settings: { keepRecentTokens: 2_000, methodOrder: ['soft'] },
    summarize: async () => answer,
    now: NOW,
    onProgress: (p) => seen.push(p),
  });
  assert.ok(seen.length >= 2 && seen.length % 2 === 0, JSON.stringify(seen));
  const started = seen.filter((p) => p.state === 'started');
  const answered = seen.filter((p) => p.state === 'answered');
  assert.equal(started.length, answered.length);
  for (const p of started) assert.deepEqual(Object.keys(p).sort(), ['method', 'phase', 'requestId', 'state']);
  for (const [i, p] of answered.entries()) {
    assert.equal(p.phase, 'summarizer');
    assert.equal(p.requestId, started[i].requestId);
    assert.equal(p.method, started[i].method);
    assert.equal(p.chars, answer.length);
    assert.ok(Number.isFinite(p.durationMs) && p.durationMs >= 0);
  }
  assert.equal(seen[0].state, 'started');
});

test('the Maintainer sends the reports to onEvent as compaction_progress', async () => {
  const s = history(60);
  const model = { id: 'claude-opus-4-7', provider: 'anthropic', api: 'anthropic-messages', contextWindow: 16_000 };
  const events = [];
  const m = new Maintainer(s, {
    model,
    settings: { methodOrder: ['soft'], keepRecentTokens: 2_000 },
    summarize: async () => 'Summary: the parser was tidied.',
    onEvent: (e) => events.push(e),
  });
  await m.compactNow();
  const progress = events.filter((e) => e.type === 'compaction_progress');
  assert.ok(progress.length >= 2, JSON.stringify(events.map((e) => e.type)));
  assert.equal(progress[0].phase, 'summarizer');
  assert.equal(progress[0].state, 'started');
  assert.equal(progress.at(-1).state, 'answered');
});
