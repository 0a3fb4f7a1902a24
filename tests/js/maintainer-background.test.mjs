// Background (speculative) compaction of the Maintainer (spec: compaction §13): a compaction
// prepared off the critical path as the context nears the threshold, committed at the
// threshold without awaiting a summarizer when it still fits the session, dropped as stale (and
// run inline) when the prefix it summarizes changed, cancelled by abort() and dispose(), one at
// a time. The reported usage drives the context's size; the session's own text stays small.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const MODEL = { provider: 'anthropic', id: 'claude-test', contextWindow: 100_000, maxTokens: 4000, input: ['text'] };
// threshold 40,000; lead 8,192: the preparation starts from 31,808; grace band up to 48,192.
const SETTINGS = { methodOrder: ['soft'], thresholdTokens: 40_000, keepRecentTokens: 2000 };

function assistant(text, promptTokens, timestamp) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: promptTokens, output: 0, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
    timestamp,
  };
}

/** Lets the background run's promise chains settle. */
async function flush(rounds = 20) {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/** A Maintainer over a fresh session with a recording summarizer; `answer(request)` answers each call. */
function setup({ answer = async (r) => `summary of ${r.purpose}`, settings = SETTINGS, ...options } = {}) {
  const session = Session.create({ id: 's', cwd: '/w', now: 1000 });
  const events = [];
  const calls = [];
  let clock = 10_000;
  const m = new Maintainer(session, {
    model: MODEL,
    settings,
    calibrate: false,
    now: () => clock,
    summarize: (request, ctx) => {
      calls.push({ request, signal: ctx.signal });
      return answer(request, ctx);
    },
    onEvent: (e) => events.push(e),
    ...options,
  });
  /** One turn: the user's prompt, the request, the reply reporting `promptTokens`. */
  const turn = async (promptTokens) => {
    clock += 1000;
    m.session.appendMessage(
      { role: 'user', content: `question ${'word '.repeat(300)}`, timestamp: clock },
      { now: clock },
    );
    await m.beforeRequest();
    return m.afterResponse(assistant(`answer ${'word '.repeat(300)}`, promptTokens, clock));
  };
  const types = (prefix = 'speculation_') => events.filter((e) => e.type.startsWith(prefix)).map((e) => e.type);
  return { m, events, calls, turn, types };
}

/** A summarizer that answers when released (or never), recording its signals. */
function gate() {
  const waiting = [];
  const answer = (r, ctx) =>
    new Promise((resolve, reject) => {
      waiting.push(() => resolve(`late summary of ${r.purpose}`));
      ctx.signal.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
    });
  const release = () => {
    for (const f of waiting.splice(0)) f();
  };
  return { answer, release, waiting };
}

test('a fast summarizer: prepared in the band, committed at the threshold without a summarizer call', async () => {
  const { m, calls, turn, types, events } = setup();
  await turn(20_000);
  assert.deepEqual(types(), []);
  await turn(33_000);
  assert.deepEqual(types(), ['speculation_start']);
  await flush();
  assert.deepEqual(types(), ['speculation_start', 'speculation_ready']);
  assert.equal(m.backgroundStats.state, 'armed');
  const asked = calls.length;
  assert.ok(asked >= 1);
  const out = await turn(41_000);
  // The threshold compaction took the prepared result: no summarizer call in this turn.
  assert.equal(calls.length, asked);
  assert.deepEqual(types(), ['speculation_start', 'speculation_ready', 'speculation_commit']);
  assert.equal(out.report?.method, 'soft');
  assert.deepEqual(
    events.filter((e) => e.type.startsWith('auto_compaction')).map((e) => e.type),
    ['auto_compaction_start', 'auto_compaction_end'],
  );
  const ctx = m.session.buildContext();
  assert.equal(ctx.messages[0].role, 'compactionSummary');
  assert.match(ctx.messages[0].summary, /summary of history/);
  // The turn appended after the preparation is kept after the summary.
  const last = ctx.messages.at(-1);
  assert.equal(last.role, 'assistant');
  assert.equal(last.usage.input, 41_000);
  assert.deepEqual(m.backgroundStats, {
    state: 'idle',
    started: 1,
    ready: 1,
    committed: 1,
    stale: 0,
    aborted: 0,
    failed: 0,
  });
});

test('a late summarizer: the threshold waits in the grace band, then commits what arrived', async () => {
  const g = gate();
  const { m, calls, turn, types, events } = setup({ answer: g.answer });
  await turn(20_000);
  await turn(33_000);
  assert.deepEqual(types(), ['speculation_start']);
  // Over the threshold, inside the grace band: no inline compaction, no await.
  const out = await turn(42_000);
  assert.equal(out.report, undefined);
  assert.equal(m.session.buildContext().compactionId ?? null, null);
  assert.equal(m.backgroundStats.started, 1, 'at most one in flight');
  const inFlight = calls.length;
  g.release();
  await flush();
  g.release();
  await flush();
  assert.equal(m.backgroundStats.state, 'armed');
  const asked = calls.length;
  assert.ok(asked >= inFlight);
  // The next request's check (the last reply said 42,000) takes the armed result; the reply
  // to the compacted request reports a small context.
  await turn(12_000);
  assert.equal(
    calls.length,
    asked,
    `committed without a summarizer call: ${JSON.stringify(types())} ${JSON.stringify(events.filter((e) => e.type === 'speculation_stale'))}`,
  );
  assert.deepEqual(types(), ['speculation_start', 'speculation_ready', 'speculation_commit']);
  assert.match(m.session.buildContext().messages[0].summary, /late summary of history/);
});

test('past the grace band a running preparation is dropped and the compaction runs inline', async () => {
  let late = true;
  const g = gate();
  const { m, calls, turn, types } = setup({ answer: (r, ctx) => (late ? g.answer(r, ctx) : `inline ${r.purpose}`) });
  await turn(33_000);
  const background = calls.slice();
  late = false;
  const out = await turn(50_000);
  assert.deepEqual(types(), ['speculation_start', 'speculation_abort']);
  assert.ok(
    background.every((c) => c.signal.aborted),
    'the background calls see the abort',
  );
  assert.equal(out.report?.method, 'soft');
  assert.match(m.session.buildContext().messages[0].summary, /inline history/);
  assert.equal(m.backgroundStats.aborted, 1);
});

test('a summarizer that never answers: abort() and dispose() cancel it', async () => {
  const g = gate();
  const { m, calls, turn, types, events } = setup({ answer: g.answer });
  await turn(33_000);
  assert.equal(m.backgroundStats.state, 'running');
  const bytes = m.session.toJsonl();
  m.abort();
  await flush();
  assert.ok(calls.every((c) => c.signal.aborted));
  assert.deepEqual(types(), ['speculation_start', 'speculation_abort']);
  assert.equal(events.find((e) => e.type === 'speculation_abort').reason, 'abort');
  assert.equal(m.session.toJsonl(), bytes, 'nothing written');
  assert.equal(m.backgroundStats.state, 'idle');
  // The next turn in the band starts again; dispose() cancels that one.
  await turn(34_000);
  assert.equal(m.backgroundStats.started, 2);
  m.dispose();
  await flush();
  assert.ok(calls.every((c) => c.signal.aborted));
  assert.equal(events.at(-1).type, 'speculation_abort');
  assert.equal(events.at(-1).reason, 'dispose');
});

test('the prefix changed (the leaf moved off the branch): the prepared result is stale, the compaction runs inline', async () => {
  const { m, calls, turn, types, events } = setup();
  await turn(20_000);
  const early = m.session.leafId;
  await turn(33_000);
  await flush();
  assert.equal(m.backgroundStats.state, 'armed');
  // The host moves the leaf back to an earlier reply and goes on from there.
  m.session.branch(early);
  const asked = calls.length;
  const out = await turn(41_000);
  assert.deepEqual(types(), ['speculation_start', 'speculation_ready', 'speculation_stale']);
  assert.match(events.find((e) => e.type === 'speculation_stale').reason, /no longer on the current branch/);
  assert.ok(calls.length > asked, 'the inline compaction asked the summarizer');
  assert.equal(out.report?.method, 'soft');
  assert.equal(m.backgroundStats.stale, 1);
  assert.equal(m.backgroundStats.committed, 0);
});

test('a prune of the summarized prefix while the requests were out: stale, never committed', async () => {
  const g = gate();
  const { m, turn, types, events } = setup({ answer: g.answer });
  await turn(20_000);
  // A tool call whose large result the preparation will summarize.
  const call = {
    ...assistant('', 0, 20_500),
    content: [{ type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'a.ts' } }],
    stopReason: 'toolUse',
  };
  m.session.appendMessage(call, { now: 20_500 });
  m.session.appendMessage(
    {
      role: 'toolResult',
      toolCallId: 't1',
      toolName: 'read',
      content: [{ type: 'text', text: 'line '.repeat(2000) }],
      isError: false,
      timestamp: 20_600,
    },
    { now: 20_600 },
  );
  await turn(33_000);
  assert.equal(m.backgroundStats.state, 'running');
  const bytes = m.session.toJsonl();
  const pruned = m.session.prune({
    protectTokens: 0,
    minimumSavings: 0,
    cacheWarmSuffixTokens: 1e9,
    keepBoundaryId: false,
    now: 30_000,
  });
  assert.equal(pruned.prunedCount, 1);
  const afterPrune = m.session.toJsonl();
  assert.notEqual(afterPrune, bytes);
  g.release();
  await flush();
  g.release();
  await flush();
  assert.deepEqual(types(), ['speculation_start', 'speculation_stale']);
  assert.match(events.find((e) => e.type === 'speculation_stale').reason, /rewritten/);
  assert.equal(m.backgroundStats.state, 'idle');
  assert.equal(m.session.toJsonl(), afterPrune, 'nothing committed');
});

test('a prepared result the context outgrew is prepared again, then committed', async () => {
  // threshold 80,000: lead 10,000 (the band from 70,000); refreshed past 8,192 tokens of growth.
  const { m, calls, turn, types } = setup({ settings: { ...SETTINGS, thresholdTokens: 80_000 } });
  await turn(20_000);
  await turn(70_500);
  await flush();
  assert.deepEqual(types(), ['speculation_start', 'speculation_ready']);
  await turn(75_000);
  assert.deepEqual(types().length, 2, 'growth within the budget keeps it');
  await turn(79_000);
  assert.deepEqual(types().slice(2), ['speculation_abort', 'speculation_start']);
  await flush();
  assert.equal(m.backgroundStats.state, 'armed');
  const asked = calls.length;
  await turn(81_000);
  assert.equal(calls.length, asked);
  assert.deepEqual(types().slice(4), ['speculation_ready', 'speculation_commit']);
  assert.equal(m.backgroundStats.started, 2);
  assert.equal(m.backgroundStats.committed, 1);
});

test('background: false prepares nothing; a session_before_compact hook turns it off too', async () => {
  for (const options of [{ background: false }, { hooks: { session_before_compact: () => undefined } }]) {
    const { calls, turn, types } = setup(options);
    await turn(33_000);
    await flush();
    assert.deepEqual(types(), []);
    assert.equal(calls.length, 0);
    await turn(41_000);
    assert.ok(calls.length > 0, 'the threshold compaction ran inline');
  }
  assert.throws(
    () => new Maintainer(Session.create({ id: 's', cwd: '/w' }), { model: MODEL, background: 'yes' }),
    (e) => e.code === 'E_INVALID_ARGUMENT',
  );
});
