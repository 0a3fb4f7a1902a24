// The snapcompact no-reduction guard through the built package (spec: compaction §8.3): an
// archive that would not make the context smaller is refused with E_NO_REDUCTION before
// anything is written, and compact() moves on to the LLM summary with a warning.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { header, line, usage } from './support/sessions.mjs';

const MODEL = 'claude-opus-4-7';

function answer(text) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: 'anthropic',
    api: 'anthropic-messages',
    model: MODEL,
    usage,
    stopReason: 'stop',
  };
}

/** `count` turns whose messages are one short line each: the reading guide alone outweighs them. */
function shortTurnsText(count) {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < count; i++) {
    lines.push(line(`u${i}`, parent, { role: 'user', content: `ok ${i}`, timestamp: 1 }));
    lines.push(line(`a${i}`, `u${i}`, answer(`done ${i}`), '2026-01-01T00:00:02.000Z'));
    parent = `a${i}`;
  }
  return `${lines.join('\n')}\n`;
}

/** `count` turns of a few hundred tokens each: small frames (5,024 tokens each) outweigh them. */
function longTurnsText(count) {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < count; i++) {
    const question = { role: 'user', content: `Question ${i}: ${'why is the build slow? '.repeat(40)}`, timestamp: 1 };
    lines.push(line(`u${i}`, parent, question));
    lines.push(line(`a${i}`, `u${i}`, answer(`Answer ${i}: ${'the cache is cold. '.repeat(60)}`)));
    parent = `a${i}`;
  }
  return `${lines.join('\n')}\n`;
}

function rejectsWith(fn, code) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    return true;
  });
}

test('a snapcompact commit that would not shrink the context is refused and changes nothing', () => {
  const text = shortTurnsText(30);
  const s = Session.fromJsonl(text);
  const before = s.contextTokens();
  const plan = s.planCompaction({ strategy: 'snapcompact', keepRecentTokens: 10 }, { model: MODEL });
  try {
    assert.equal(plan.isComplete, true, 'snapcompact asks no summarizer');
    rejectsWith(() => s.commitCompaction(plan), 'E_NO_REDUCTION');
  } finally {
    plan.free();
  }
  assert.equal(s.toJsonl(), text, 'byte-identical');
  assert.deepEqual(s.contextTokens(), before);
});

test('compact({strategy: "snapcompact"}) falls back to the LLM summary with a warning when the archive would not shrink the context', async () => {
  const text = shortTurnsText(30);
  const s = Session.fromJsonl(text);
  const events = [];
  const purposes = [];
  const r = await s.compact({
    strategy: 'snapcompact',
    model: MODEL,
    settings: { keepRecentTokens: 10 },
    summarize: async (req) => {
      purposes.push(req.purpose);
      return 'Short turns only.';
    },
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(r.method, 'soft');
  assert.notEqual(r.compactionEntry.method, 'snapcompact');
  assert.equal(r.compactionEntry.preserveData?.snapcompact, undefined, 'no archive stored');
  assert.ok(purposes.includes('history'), 'the summarizer was asked');
  const warning = events.find((e) => e.type === 'compaction_warning');
  assert.ok(warning, 'a compaction_warning');
  assert.equal(warning.method, 'snapcompact');
  assert.match(warning.message, /would not reduce the context/);
  assert.match(warning.message, /trying the next preferred compaction method/);
  // One compaction entry: the refused archive wrote nothing.
  assert.equal(s.index().filter((e) => e.type === 'compaction').length, 1);
});

test('frames heavier than the turns they print: refused on commit, the LLM summary through compact()', async () => {
  const text = longTurnsText(30);
  const snapcompact = { shape: '5x8-bw', frameSize: 256 };
  const s = Session.fromJsonl(text);
  const plan = s.planCompaction({ strategy: 'snapcompact', keepRecentTokens: 2_000 }, { model: MODEL });
  try {
    rejectsWith(() => s.commitCompaction(plan, { snapcompact }), 'E_NO_REDUCTION');
  } finally {
    plan.free();
  }
  assert.equal(s.toJsonl(), text);

  const before = s.contextTokens().estimatedTokens;
  const events = [];
  const r = await s.compact({
    strategy: 'snapcompact',
    model: MODEL,
    snapcompact,
    settings: { keepRecentTokens: 2_000 },
    summarize: async () => 'The build is slow because the cache is cold.',
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(r.method, 'soft');
  assert.ok(r.tokensAfter < before, `${r.tokensAfter} < ${before}`);
  assert.ok(events.some((e) => e.type === 'compaction_warning' && e.method === 'snapcompact'));
});
