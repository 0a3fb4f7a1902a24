// The Maintainer and the method walk of compact(): every strategy through compact(), the
// reports, overflow and length recovery, promotion, idle maintenance, abort. After every
// failure or abort the session's bytes are unchanged.

import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const MODEL = { provider: 'anthropic', id: 'claude-test', contextWindow: 8000, maxTokens: 1000, input: ['text'] };
const SETTINGS = { reserveTokens: 1000, keepRecentTokens: 1000 };

function expectRejects(promise, code) {
  return assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    return true;
  });
}

function assistant(text, promptTokens, extra = {}) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: promptTokens, output: 50, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
    ...extra,
  };
}

function overflow(promptTokens) {
  return assistant('', 0, {
    content: [],
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'error',
    errorMessage: `prompt is too long: ${promptTokens} tokens > ${MODEL.contextWindow} maximum`,
  });
}

/** A session of `turns` user/assistant turns of ~`size` tokens each. */
function grown(turns, size = 200) {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  for (let i = 0; i < turns; i++) {
    s.appendMessage({ role: 'user', content: `q${i} ${'word '.repeat(size)}`, timestamp: 1000 + i }, { now: 1000 + i });
    s.appendMessage(assistant(`a${i} ${'word '.repeat(size)}`, 0), { now: 1000 + i });
  }
  return s;
}

const summarize = async (r) => `summary for ${r.purpose}`;

test('compact(): handoff resolves a new session; the old one is unchanged', async () => {
  const s = grown(8);
  const bytes = s.toJsonl();
  const requests = [];
  const r = await s.compact({
    strategy: 'handoff',
    settings: SETTINGS,
    summarize: async (req, ctx) => {
      requests.push({ req, ctx });
      return 'the handoff document';
    },
    systemPrompt: 'You are a test agent.',
    tools: [{ name: 'read', description: 'read a file', parameters: {} }],
  });
  assert.equal(r.method, 'handoff');
  assert.ok(r.session instanceof Session);
  assert.equal(s.toJsonl(), bytes);
  const [first] = r.session.entries();
  assert.equal(first.type, 'custom_message');
  assert.equal(first.customType, 'handoff');
  assert.ok(first.content.startsWith('the handoff document'));
  assert.equal(r.session.header.parentSession, 's');
  // The live cache prefix: system prompt, tools, the real history, one agent-attributed prompt.
  const { req, ctx } = requests[0];
  assert.equal(req.systemPrompt, 'You are a test agent.');
  assert.equal(req.toolChoice, 'none');
  assert.equal(req.tools.length, 1);
  assert.equal(req.messages.length, 17);
  assert.equal(req.messages.at(-1).attribution, 'agent');
  assert.equal(ctx.initiator, 'agent');
  assert.ok(r.report.tokensAfter < r.report.tokensBefore, JSON.stringify(r.report));
});

test('compact(): a handoff that fails falls back to the LLM summary, with a warning', async () => {
  const s = grown(8);
  const events = [];
  const r = await s.compact({
    strategy: 'handoff',
    settings: SETTINGS,
    retry: { enabled: false },
    summarize: async (req) => (req.purpose === 'handoff' ? '   ' : 'a summary'),
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(r.method, 'soft');
  assert.ok(r.compactionEntry);
  assert.ok(
    events.some((e) => e.type === 'compaction_warning' && e.method === 'handoff'),
    JSON.stringify(events),
  );
});

test("compact(): strategy 'off' skips automatic reasons, a manual compaction still runs", async () => {
  const s = grown(8);
  const bytes = s.toJsonl();
  const skipped = await s.compact({ settings: { ...SETTINGS, strategy: 'off' }, reason: 'threshold', summarize });
  assert.deepEqual(skipped, { skipped: 'off', method: null, reason: 'threshold' });
  assert.equal(s.toJsonl(), bytes);
  const manual = await s.compact({ settings: { ...SETTINGS, strategy: 'off' }, summarize });
  assert.equal(manual.method, 'soft');
  assert.equal(manual.report.reason, 'manual');
});

test('compact(): methodOrder is walked; a failing method hands over to the next', async () => {
  const s = grown(8);
  const events = [];
  const r = await s.compact({
    settings: { ...SETTINGS, methodOrder: ['remote', 'soft'], remoteEndpoint: 'http://127.0.0.1:9/never' },
    retry: { enabled: false },
    summarize,
    hooks: { onEvent: (e) => events.push(e) },
    // Without summarize the remote method would fall back inside its own candidates: make it fail alone.
    methods: ['remote', 'soft'],
    reason: 'threshold',
  });
  assert.ok(['remote', 'soft'].includes(r.method));
  const end = events.find((e) => e.type === 'auto_compaction_end');
  assert.equal(end.action, r.method === 'remote' ? 'remote' : 'context-full');
  // The report measures both sides with the same estimate.
  assert.equal(r.report.tokensBefore, grown(8).contextTokens().estimatedTokens);
  assert.equal(r.report.tokensAfter, s.contextTokens().estimatedTokens);
  assert.ok(r.report.entriesSummarized > 0);
  assert.equal(typeof r.report.tokensByKind.summary, 'number');
});

test('compact(): no usable method is a clear error; nothing changes', async () => {
  const s = grown(8);
  const bytes = s.toJsonl();
  await expectRejects(s.compact({ settings: SETTINGS, methods: [], reason: 'overflow', summarize }), 'E_SETTINGS');
  await expectRejects(s.compact({ settings: SETTINGS }), 'E_INVALID_ARGUMENT');
  assert.equal(s.toJsonl(), bytes);
  // `window`, allowed in methodOrder by the settings but without an engine, is passed over.
  await assert.rejects(s.compact({ settings: { ...SETTINGS, methodOrder: ['window'] }, summarize }), {
    code: 'E_SETTINGS',
    message: /window \('window' has no compaction engine\)/,
  });
  assert.equal(s.toJsonl(), bytes);
  const r = await s.compact({ settings: { ...SETTINGS, methodOrder: ['window', 'soft'] }, summarize });
  assert.equal(r.method, 'soft');
});

test('Maintainer: threshold maintenance keeps the requests under the window', async () => {
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  let now = 10_000;
  const events = [];
  const m = new Maintainer(s, {
    model: MODEL,
    summarize,
    settings: { ...SETTINGS, methodOrder: ['soft'] },
    now: () => now,
    onEvent: (e) => events.push(e),
  });
  const reports = [];
  for (let i = 0; i < 60; i++) {
    now += 1000;
    m.session.appendMessage({ role: 'user', content: `question ${i} ${'x'.repeat(900)}`, timestamp: now });
    const before = await m.beforeRequest({ systemPrompt: 'sys' });
    assert.ok(before.tokens < MODEL.contextWindow, `request ${i}: ${before.tokens} tokens`);
    if (before.report) reports.push(before.report);
    const out = await m.afterResponse(assistant('answer '.repeat(120), before.tokens, { timestamp: now }));
    if (out.report) reports.push(out.report);
  }
  assert.ok(reports.length >= 2, 'compacted more than once');
  for (const r of reports) {
    assert.equal(r.method, 'soft');
    assert.ok(r.reason === 'threshold', r.reason);
    assert.ok(r.tokensAfter < r.tokensBefore);
  }
  const starts = events.filter((e) => e.type === 'auto_compaction_start');
  const ends = events.filter((e) => e.type === 'auto_compaction_end');
  assert.equal(starts.length, reports.length);
  assert.ok(
    ends.every((e) => e.action === 'context-full' && !e.errorMessage),
    JSON.stringify(ends),
  );
  m.dispose();
});

test('Maintainer: an overflow drops the failed turn, compacts and asks for a retry', async () => {
  // Under the threshold before the prompt: the overflow is the first sign.
  const s = grown(11);
  const size = s.size;
  const m = new Maintainer(s, { model: MODEL, summarize, settings: { ...SETTINGS, methodOrder: ['soft'] } });
  s.appendMessage({ role: 'user', content: 'one more question', timestamp: 5000 });
  await m.beforeRequest();
  const out = await m.afterResponse(overflow(9000));
  assert.equal(out.next, 'retry');
  assert.equal(out.report.reason, 'overflow');
  // The failed reply stays in the file, off the active path.
  assert.ok(s.size > size + 1);
  const path = s.pathTo(s.leafId).map((id) => s.entry(id));
  assert.ok(!path.some((e) => e.type === 'message' && e.message.stopReason === 'error'));
  const again = await m.beforeRequest();
  assert.ok(again.tokens < MODEL.contextWindow);
  assert.equal(again.messages.at(-1).role, 'user');
  m.dispose();
});

test('Maintainer: promotion first, then no compaction', async () => {
  const s = grown(11);
  const big = { ...MODEL, id: 'claude-big', contextWindow: 200_000 };
  const events = [];
  const m = new Maintainer(s, {
    model: MODEL,
    summarize: async () => assert.fail('no summary when the promotion succeeds'),
    settings: { ...SETTINGS, methodOrder: ['soft'] },
    promote: async () => big,
    onEvent: (e) => events.push(e),
  });
  s.appendMessage({ role: 'user', content: 'go on', timestamp: 5000 });
  await m.beforeRequest();
  const out = await m.afterResponse(overflow(9000));
  assert.equal(out.next, 'retry');
  assert.equal(m.model.id, 'claude-big');
  assert.ok(events.some((e) => e.type === 'promotion' && e.to.id === 'claude-big'));
  m.dispose();
});

test('Maintainer: abort() cancels a compaction in flight; the session is byte-identical', async () => {
  const s = grown(14);
  const bytes = s.toJsonl();
  let started;
  const inFlight = new Promise((r) => (started = r));
  const m = new Maintainer(s, {
    model: MODEL,
    summarize: (_req, { signal }) => {
      started();
      return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
    },
    settings: { ...SETTINGS, methodOrder: ['soft'] },
  });
  const pending = m.compactNow('focus on the parser');
  await inFlight;
  m.abort();
  await expectRejects(pending, 'E_ABORTED');
  assert.equal(s.toJsonl(), bytes);
  m.dispose();
});

test('Maintainer: idle maintenance runs on its own timer', async () => {
  // Under the threshold (7,000), over the idle threshold (1,000).
  const s = grown(11);
  let now = 100_000;
  const timers = [];
  const m = new Maintainer(s, {
    model: MODEL,
    summarize,
    settings: {
      ...SETTINGS,
      thresholdTokens: 7000,
      methodOrder: ['soft'],
      idleEnabled: true,
      idleThresholdTokens: 1000,
      idleTimeoutSeconds: 60,
    },
    now: () => now,
    setTimer: (fn, ms) => {
      const t = { fn, ms, cancelled: false };
      timers.push(t);
      return () => (t.cancelled = true);
    },
  });
  s.appendMessage({ role: 'user', content: 'small', timestamp: now });
  const before = await m.beforeRequest();
  await m.afterResponse(assistant('ok', before.tokens, { timestamp: now }));
  const timer = timers.at(-1);
  assert.ok(timer && !timer.cancelled, 'an idle timer is set');
  assert.ok(timer.ms >= 60_000 - 1, `wakes after the idle timeout (${timer.ms} ms)`);
  const entries = s.size;
  now += timer.ms;
  timer.fn();
  await m.beforeRequest(); // queued behind the idle run
  assert.ok(s.size > entries, 'the idle pass compacted');
  assert.ok(s.entries().some((e) => e.type === 'compaction'));
  m.dispose();
});

test('Maintainer: bad arguments are coded errors', () => {
  const s = grown(1);
  assert.throws(() => new Maintainer({}, { model: MODEL }), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => new Maintainer(s, { model: { id: 'x' } }), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => new Maintainer(s, { model: MODEL, settings: { keepRecentTokens: -5 } }), { code: 'E_SETTINGS' });
  const m = new Maintainer(s, { model: MODEL, summarize });
  return expectRejects(m.afterResponse({ role: 'user', content: 'x' }), 'E_INVALID_ARGUMENT');
});

test('Maintainer: a compaction that cannot make room stamps its warning and pauses', async () => {
  const s = grown(11);
  const events = [];
  // Keeping 6,000 recent tokens cannot get under 80 % of the 7,000-token threshold.
  const m = new Maintainer(s, {
    model: MODEL,
    summarize,
    settings: { reserveTokens: 1000, keepRecentTokens: 6000, methodOrder: ['soft'] },
    onEvent: (e) => events.push(e),
  });
  s.appendMessage({ role: 'user', content: `more ${'word '.repeat(2500)}`, timestamp: 6000 });
  await m.beforeRequest();
  const compaction = s.entries().findLast((e) => e.type === 'compaction');
  assert.ok(compaction, 'a compaction ran');
  assert.match(compaction.warning ?? '', /freed too little context/);
  assert.ok(events.some((e) => e.type === 'compaction_warning'));
  assert.equal(m.state.maintenancePaused, true);
  m.dispose();
});

test('snapcompact: plan/commit and compact() give the same archive for the same model', async () => {
  const base = grown(160, 300);
  const text = base.toJsonl();
  const settings = { ...SETTINGS, keepRecentTokens: 2000 };
  for (const model of ['claude-opus-4-7', 'gpt-5.1']) {
    const a = Session.fromJsonl(text);
    const plan = a.planCompaction({ ...settings, strategy: 'snapcompact' }, { model });
    const planned = a.commitCompaction(plan, { now: 5000 });
    plan.free();
    const b = Session.fromJsonl(text);
    const compacted = await b.compact({ settings, strategy: 'snapcompact', model, now: 5000 });
    assert.equal(compacted.method, 'snapcompact');
    const framesA = a.archiveFrames(planned.entryId);
    const framesB = b.archiveFrames(compacted.entryId);
    assert.ok(framesA.length > 0, model);
    assert.deepEqual(
      framesB.map((f) => Buffer.from(f.png).toString('base64')),
      framesA.map((f) => Buffer.from(f.png).toString('base64')),
      model,
    );
    assert.deepEqual(b.entry(compacted.entryId).preserveData, a.entry(planned.entryId).preserveData, model);
  }
});

test('contextStats: the same estimate as contextTokens, split by kind, with the images counted', () => {
  const s = grown(6);
  s.appendMessage(
    assistant('', 0, {
      content: [{ type: 'toolCall', id: 't1', name: 'screenshot', arguments: {} }],
      stopReason: 'toolUse',
    }),
  );
  s.appendMessage({
    role: 'toolResult',
    toolCallId: 't1',
    toolName: 'screenshot',
    content: [
      { type: 'text', text: 'the page' },
      { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
    ],
    isError: false,
  });
  const stats = s.contextStats();
  assert.equal(stats.tokens, s.contextTokens().estimatedTokens);
  const kinds = stats.byKind;
  assert.equal(kinds.summary + kinds.user + kinds.assistant + kinds.toolResult + kinds.other, stats.tokens);
  assert.ok(kinds.user > 0 && kinds.assistant > 0 && kinds.toolResult > 1200, JSON.stringify(stats));
  assert.equal(stats.images, 1);
});

test('Maintainer: a threshold handoff replaces the session, saves the document, keeps the cache prefix', async () => {
  const s = grown(11);
  const bytes = s.toJsonl();
  const events = [];
  const saved = [];
  const requests = [];
  // A handoff sends the live history: the window must hold it (8,000 would not).
  const m = new Maintainer(s, {
    model: { ...MODEL, contextWindow: 12_000 },
    summarize: async (request) => {
      requests.push(request);
      return request.purpose === 'handoff' ? '# Handoff\nNext: the parser.' : 'a summary';
    },
    settings: { ...SETTINGS, reserveTokens: 5000, methodOrder: ['handoff', 'soft'], handoffSaveToDisk: true },
    saveArtifact: (artifact) => saved.push(artifact),
    onEvent: (e) => events.push(e),
  });
  s.appendMessage({ role: 'user', content: `more ${'word '.repeat(2500)}`, timestamp: 6000 });
  const { messages, report } = await m.beforeRequest({
    systemPrompt: 'You are a test agent.',
    tools: [{ name: 'read' }],
  });
  assert.equal(report.method, 'handoff');
  assert.notEqual(m.session, s, 'the Maintainer moved to the new session');
  assert.equal(m.session.entries()[0].customType, 'handoff');
  assert.equal(s.toJsonl().startsWith(bytes), true, 'the old session only grew by the prompt');
  assert.ok(events.some((e) => e.type === 'handoff' && e.previous === s));
  assert.equal(saved.length, 1);
  assert.match(saved[0].name, /^handoff-.*\.md$/);
  assert.ok(saved[0].text.startsWith('# Handoff'));
  const handoff = requests.find((r) => r.purpose === 'handoff');
  assert.equal(handoff.toolChoice, 'none');
  assert.equal(handoff.systemPrompt, 'You are a test agent.');
  assert.ok(messages.length <= 2, 'the new context is the handoff message (and what followed)');
  m.dispose();
});

test('Maintainer: the mid-run check counts the tool results of the turn that asked for them', async () => {
  const s = grown(11);
  const m = new Maintainer(s, { model: MODEL, summarize, settings: { ...SETTINGS, methodOrder: ['soft'] } });
  s.appendMessage({ role: 'user', content: 'read the big file', timestamp: 6000 });
  const first = await m.beforeRequest();
  assert.equal(first.report, undefined, 'under the threshold before the tool ran');
  const call = assistant('', first.tokens, {
    content: [{ type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'big.txt' } }],
    stopReason: 'toolUse',
  });
  assert.equal((await m.afterResponse(call)).next, 'done');
  s.appendMessage({
    role: 'toolResult',
    toolCallId: 'c1',
    toolName: 'read',
    content: [{ type: 'text', text: 'line '.repeat(3000) }],
    isError: false,
    timestamp: 6001,
  });
  const second = await m.beforeRequest();
  assert.equal(second.report?.method, 'soft', 'the results pushed the context over the threshold');
  assert.ok(second.tokens < MODEL.contextWindow);
  assert.equal(second.messages.at(-1).role, 'toolResult', 'the tool round is kept');
  m.dispose();
});

test('issue 43: a one-method methodOrder falls back to soft for an overflow, and retries', async () => {
  for (const method of ['handoff', 'shake', 'snapcompact']) {
    const s = grown(11);
    const events = [];
    const m = new Maintainer(s, {
      model: MODEL,
      summarize,
      settings: { ...SETTINGS, methodOrder: [method] },
      onEvent: (e) => events.push(e),
    });
    s.appendMessage({ role: 'user', content: 'one more question', timestamp: 5000 });
    await m.beforeRequest();
    const out = await m.afterResponse(overflow(9000));
    assert.equal(out.next, 'retry', `${method}: ${JSON.stringify(events)}`);
    assert.equal(out.report?.method, 'soft', method);
    assert.ok(!events.some((e) => e.type === 'notice' && /automatic compaction is off/.test(e.text)), method);
    const again = await m.beforeRequest();
    assert.ok(again.tokens < MODEL.contextWindow, `${method}: ${again.tokens}`);
    m.dispose();
  }
});

test('issue 36: a compaction with "snapcompact, soft" on a 32k window compacts; overflows are recovered', async () => {
  const model = { provider: 'anthropic', id: 'claude-sonnet-4-5', contextWindow: 32_000, input: ['text', 'image'] };
  const s = grown(40, 1000);
  const events = [];
  const m = new Maintainer(s, {
    model,
    summarize,
    settings: { methodOrder: ['snapcompact', 'soft'] },
    onEvent: (e) => events.push(e),
  });
  s.appendMessage({ role: 'user', content: 'go on', timestamp: 9000 });
  const before = await m.beforeRequest();
  assert.equal(before.report?.method, 'soft', JSON.stringify(events.filter((e) => e.type !== 'prune')));
  assert.ok(before.tokens < model.contextWindow, `${before.tokens} tokens`);
  assert.ok(!events.some((e) => e.type === 'auto_compaction_end' && e.skipped));
  m.dispose();
});

test('issue 36: an overflow compacted under the window retries the turn, without full headroom', async () => {
  // ~6,500 kept tokens and a ~700-token summary land over the window minus the reserve (6,800)
  // and under 8,000 (a keep at or above the threshold, 6,800, would be clamped to half of it).
  const s = grown(30);
  const events = [];
  const m = new Maintainer(s, {
    model: MODEL,
    summarize: async () => 'The work so far, in detail. '.repeat(100),
    settings: { reserveTokens: 1000, keepRecentTokens: 6500, methodOrder: ['soft'] },
    onEvent: (e) => events.push(e),
  });
  const out = await m.afterResponse(overflow(16_000));
  assert.equal(out.report?.reason, 'overflow');
  assert.ok(out.report.tokensAfter > 6800 && out.report.tokensAfter < 8000, JSON.stringify(out.report));
  assert.equal(out.next, 'retry', JSON.stringify(events));
  assert.ok(
    events.some((e) => e.type === 'compaction_warning'),
    'the guard still warns',
  );
  m.dispose();
});

test('issue 36: a failing remote method starts a 10-minute cooldown', async () => {
  let posts = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      posts++;
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    let now = 100_000;
    const events = [];
    const m = new Maintainer(grown(4), {
      model: MODEL,
      summarize,
      remoteEndpoint: `http://127.0.0.1:${server.address().port}/compact`,
      settings: { ...SETTINGS, methodOrder: ['remote', 'soft'] },
      retry: { enabled: false },
      now: () => now,
      onEvent: (e) => events.push(e),
    });
    const compactions = [];
    for (let i = 0; i < 40 && compactions.length < 3; i++) {
      // The third compaction comes after the cooldown.
      now += compactions.length === 2 ? 11 * 60_000 : 1000;
      m.session.appendMessage({ role: 'user', content: `q ${'word '.repeat(800)}`, timestamp: now });
      const r = await m.beforeRequest();
      if (r.report) compactions.push({ method: r.report.method, posts });
      await m.afterResponse(assistant('ok', r.tokens, { timestamp: now }));
    }
    assert.equal(compactions.length, 3, JSON.stringify(compactions));
    assert.deepEqual(
      compactions.map((c) => c.method),
      ['soft', 'soft', 'soft'],
    );
    assert.equal(compactions[0].posts, 1, 'the first compaction asked the endpoint once');
    assert.equal(compactions[1].posts, 1, 'the second one, within 10 minutes, did not');
    assert.equal(compactions[2].posts, 2, 'after the cooldown it asks again');
    assert.ok(events.some((e) => e.type === 'compaction_warning' && /^remote compaction failed/.test(e.message)));
    m.dispose();
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('new Maintainer refuses settings under which no compaction method could ever run (E_SETTINGS)', () => {
  const s = grown(1);
  const text = MODEL; // input: ['text']
  const vision = { ...MODEL, input: ['text', 'image'] };
  const refused = [
    // A text-only model cannot read frames, and no summarizer writes the overflow's fallback.
    [{ methodOrder: ['snapcompact'] }, {}, /snapcompact needs a model with image input/],
    // No endpoint and no provider-native lane for this model.
    [{ methodOrder: ['remote'] }, {}, /remote \(no remote endpoint\)/],
    [{ methodOrder: ['soft'] }, {}, /soft \(no summarizer\)/],
  ];
  for (const [settings, extra, why] of refused) {
    assert.throws(
      () => new Maintainer(s, { model: text, settings, ...extra }),
      (err) => {
        assert.equal(err.code, 'E_SETTINGS', err.message);
        assert.match(err.message, /methodOrder/);
        assert.match(err.message, why);
        return true;
      },
      JSON.stringify(settings),
    );
  }
  // A fallback recovers: an overflow ends with soft when a summarizer writes it; an endpoint of
  // the host's own runs remote and stands in for the summary; a vision model reads frames; a
  // shake needs nothing; compaction switched off is what it says.
  for (const [model, settings, extra] of [
    [text, { methodOrder: ['snapcompact'] }, { summarize }],
    [text, { methodOrder: ['remote'] }, { summarize }],
    [text, { methodOrder: ['remote'] }, { remoteEndpoint: 'http://127.0.0.1:9/compact' }],
    [text, { methodOrder: ['snapcompact'] }, { remoteEndpoint: 'http://127.0.0.1:9/compact' }],
    [vision, { methodOrder: ['snapcompact'] }, {}],
    [text, { methodOrder: ['shake'] }, {}],
    [text, {}, {}],
    [text, { methodOrder: [] }, {}],
    [text, { methodOrder: ['snapcompact'], enabled: false }, {}],
  ]) {
    new Maintainer(s, { model, settings, ...extra }).dispose();
  }
});

test('a model that reads no images is sent none; a vision model is sent them (the core decides the budget)', async () => {
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
  const images = (messages) =>
    messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'image').length;
  for (const [input, expected] of [
    [['text'], 0],
    [['text', 'image'], 1],
  ]) {
    const s = Session.create();
    s.appendMessage({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', data: png, mimeType: 'image/png' },
      ],
    });
    const m = new Maintainer(s, { model: { ...MODEL, input }, settings: SETTINGS, summarize });
    const { messages } = await m.beforeRequest();
    assert.equal(images(messages), expected, JSON.stringify(input));
    m.dispose();
  }
});
