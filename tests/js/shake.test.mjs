// Shake through the public API (issue 20, point 1): planShake / applyShake / shake(), the
// recovery artifact, shake thinking, and the `shake` method of compact() and the Maintainer:
// manual, automatic with its fallback, the dead-end rescue. A failed shake leaves the
// session's bytes unchanged; a successful one rewrites only the lines it elides.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const MODEL = { provider: 'anthropic', id: 'claude-test', contextWindow: 40_000, maxTokens: 1000, input: ['text'] };

function expectRejects(promise, code) {
  return assert.rejects(promise, (err) => {
    assert.equal(err.code, code, err.message);
    return true;
  });
}

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

/** `turns` tool turns: a read call and a result of ~`tokens` estimated tokens each, then a reply. */
function toolSession(turns, tokens = 2000, images = true) {
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
        content: [
          { type: 'text', text: `${i}: ${big(tokens * 0.8)}` },
          ...(images ? [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] : []),
        ],
        isError: false,
        timestamp: 1001 + i,
      },
      { now: 1001 + i },
    );
  }
  s.appendMessage(assistant([{ type: 'text', text: 'done' }], { stopReason: 'stop' }), { now: 2000 });
  return s;
}

function lines(s) {
  return s.toJsonl().split('\n');
}

test('planShake: regions, tokens and the artifact text; nothing is written', () => {
  const s = toolSession(6);
  const bytes = s.toJsonl();
  const plan = s.planShake({ preset: 'aggressive' });
  assert.equal(s.toJsonl(), bytes);
  assert.ok(plan.regions.length >= 4, `${plan.regions.length} regions`);
  for (const [k, r] of plan.regions.entries()) {
    assert.equal(r.index, k + 1);
    assert.equal(r.kind, 'toolResult');
    assert.equal(r.label, 'read');
  }
  assert.equal(
    plan.tokens,
    plan.regions.reduce((a, r) => a + r.tokens, 0),
  );
  assert.match(plan.artifactText, /^### region 1 \(read, ~\d+ tok\)\n\n0: data /);
  // The default preset protects the newest 16,000 tokens: fewer regions.
  assert.ok(s.planShake({ preset: 'default' }).regions.length < plan.regions.length);
  assert.equal(s.planShake({ preset: 'rescue' }).regions.length, 6);
});

test('shake(): placeholders with the artifact link, images kept, only touched lines rewritten', async () => {
  const s = toolSession(6);
  const before = lines(s);
  const saved = [];
  const r = await s.shake({
    preset: 'aggressive',
    now: 5555,
    saveArtifact: async (a) => {
      saved.push(a);
      return 'A7';
    },
  });
  assert.equal(saved.length, 1);
  assert.equal(saved[0].kind, 'shake');
  assert.equal(r.mode, 'elide');
  assert.equal(r.artifactId, 'A7');
  assert.equal(r.blocksDropped, 0);
  assert.equal(r.toolResultsDropped, r.entries.length);
  assert.ok(r.tokensFreed > 4000, `${r.tokensFreed} tokens freed`);
  const after = lines(s);
  assert.equal(after.length, before.length);
  let changed = 0;
  for (let i = 0; i < before.length; i++) {
    if (before[i] === after[i]) continue;
    changed++;
    const e = JSON.parse(after[i]);
    assert.ok(r.entries.includes(e.id));
    assert.equal(e.message.prunedAt, 5555);
    assert.match(e.message.content[0].text, /^\[shaken ~\d+ tokens — recover: artifact:\/\/A7 \(region \d+\)\]$/);
    assert.deepEqual(e.message.content[1], { type: 'image', data: 'AAAA', mimeType: 'image/png' });
  }
  assert.equal(changed, r.entries.length);
  // A second shake finds nothing: shaken results are pruned.
  const again = await s.shake({ preset: 'aggressive' });
  assert.equal(again.toolResultsDropped, 0);
});

test('shake() without saveArtifact writes link-less placeholders; a failing saveArtifact too', async () => {
  const a = toolSession(4);
  await a.shake({ preset: 'rescue', now: 1 });
  assert.match(a.toJsonl(), /\[shaken ~\d+ tokens\]/);
  assert.doesNotMatch(a.toJsonl(), /artifact:\/\//);
  const b = toolSession(4);
  const r = await b.shake({
    preset: 'rescue',
    saveArtifact: () => {
      throw new Error('disk full');
    },
  });
  assert.equal(r.artifactId, null);
  assert.ok(r.toolResultsDropped > 0);
  // With requireArtifact the failure is an error and nothing changes.
  const c = toolSession(4);
  const bytes = c.toJsonl();
  await expectRejects(
    c.shake({ preset: 'rescue', requireArtifact: true, saveArtifact: async () => Promise.reject(new Error('no')) }),
    'E_SUMMARIZER',
  );
  assert.equal(c.toJsonl(), bytes);
});

test('shake(): an abort while the artifact is stored, a stale plan and bad options change nothing', async () => {
  const s = toolSession(4);
  const bytes = s.toJsonl();
  const controller = new AbortController();
  await expectRejects(
    s.shake({
      preset: 'rescue',
      signal: controller.signal,
      saveArtifact: () => {
        controller.abort();
        return 'A1';
      },
    }),
    'E_ABORTED',
  );
  assert.equal(s.toJsonl(), bytes);
  const plan = s.planShake({ preset: 'rescue' });
  s.appendMessage({ role: 'user', content: 'more', timestamp: 3000 }, { now: 3000 });
  const grownBytes = s.toJsonl();
  assert.throws(
    () => s.applyShake(plan),
    (e) => e.code === 'E_STALE_PLAN',
  );
  assert.equal(s.toJsonl(), grownBytes);
  assert.throws(
    () => s.planShake({ preset: 'gentle' }),
    (e) => e.code === 'E_SETTINGS',
  );
  assert.throws(
    () => s.planShake({ protectTokens: -1 }),
    (e) => e.code === 'E_SETTINGS',
  );
  assert.throws(
    () => s.planShake({ unknown: 1 }),
    (e) => e.code === 'E_SETTINGS',
  );
  assert.throws(
    () => s.applyShake({}),
    (e) => e.code === 'E_INVALID_ARGUMENT',
  );
  await expectRejects(s.shake({ mode: 'images' }), 'E_INVALID_ARGUMENT');
});

test('shake(): fenced and XML blocks of user and assistant text are elided in place', async () => {
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  const code = `\`\`\`ts\n${'let x = 1;\n'.repeat(300)}\`\`\``;
  const xml = `<notes>\n${big(500, 'note ')}\n</notes>`;
  s.appendMessage({ role: 'user', content: `Review this:\n${code}\nthanks`, timestamp: 1 }, { now: 1 });
  s.appendMessage(assistant([{ type: 'text', text: `Here:\n${xml}\nend` }], { stopReason: 'stop' }), { now: 2 });
  s.appendMessage({ role: 'user', content: big(5000, 'tail '), timestamp: 3 }, { now: 3 });
  const r = await s.shake({ preset: 'aggressive' });
  assert.equal(r.blocksDropped, 2);
  const [, user, reply] = s.toJsonl().trim().split('\n').map(JSON.parse);
  assert.match(user.message.content, /^Review this:\n\[shaken ~\d+ tokens\]\nthanks$/);
  assert.match(reply.message.content[0].text, /^Here:\n\[shaken ~\d+ tokens\]\nend$/);
  assert.equal(user.message.prunedAt, undefined);
});

test("shake({mode: 'thinking'}) drops old reasoning, keeps the recent turn's, reports tokens freed", async () => {
  const s = toolSession(6);
  const r = await s.shake({ mode: 'thinking', protectTokens: 4000 });
  assert.equal(r.mode, 'thinking');
  assert.ok(r.thinkingBlocksDropped >= 4 && r.thinkingBlocksDropped < 6, `${r.thinkingBlocksDropped} dropped`);
  assert.ok(r.tokensFreed > 0);
  const assistants = s
    .toJsonl()
    .trim()
    .split('\n')
    .map(JSON.parse)
    .filter((e) => e.message?.role === 'assistant');
  assert.equal(assistants.at(-2).message.content[0].type, 'thinking', 'the newest turn keeps its reasoning');
  assert.equal(assistants[0].message.content[0].type, 'toolCall', 'tool calls stay');
  const none = await s.shake({ mode: 'thinking', protectTokens: 4000 });
  assert.equal(none.thinkingBlocksDropped, 0);
});

test("compact({strategy: 'shake'}) shakes by hand; nothing to shake falls back to the summary", async () => {
  const s = toolSession(6);
  const r = await s.compact({ strategy: 'shake', model: MODEL });
  assert.equal(r.method, 'shake');
  assert.equal(r.entryId, null);
  assert.ok(r.shake.toolResultsDropped > 0);
  assert.equal(r.report.method, 'shake');
  assert.ok(r.report.tokensAfter < r.report.tokensBefore);

  const small = Session.create({ id: 't', cwd: '/w', now: 1 });
  for (let i = 0; i < 6; i++) {
    small.appendMessage({ role: 'user', content: `q${i} ${big(300)}`, timestamp: i }, { now: i });
    small.appendMessage(assistant([{ type: 'text', text: `a${i}` }], { stopReason: 'stop' }), { now: i });
  }
  const events = [];
  const summarized = await small.compact({
    strategy: 'shake',
    model: MODEL,
    settings: { keepRecentTokens: 500 },
    summarize: async () => 'S',
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(summarized.method, 'soft');
  assert.ok(
    events.some((e) => e.type === 'compaction_warning' && /shake compaction failed: Nothing to shake/.test(e.message)),
  );
  // A manual walk of methodOrder leaves shake out (spec: compaction §8.6).
  const t = toolSession(6);
  const walked = await t.compact({ model: MODEL, summarize: async () => 'S', settings: { keepRecentTokens: 2000 } });
  assert.equal(walked.method, 'soft');
  assert.doesNotMatch(t.toJsonl(), /\[shaken/);
});

test('automatic shake: enough reclaimed ends the walk; too little hands over to the next method', async () => {
  const s = toolSession(12, 3000, false);
  const r = await s.compact({
    reason: 'threshold',
    methods: ['shake', 'soft'],
    model: MODEL,
    liveTokens: 39_000,
    settings: { reserveTokens: 2000 },
    summarize: async () => 'S',
  });
  assert.equal(r.method, 'shake');

  // A window so small that the shaken context still sits above 80 % of the threshold.
  const tight = { ...MODEL, contextWindow: 12_000 };
  const t = toolSession(12);
  const events = [];
  const fallback = await t.compact({
    reason: 'threshold',
    methods: ['shake', 'soft'],
    model: tight,
    liveTokens: 60_000,
    settings: { keepRecentTokens: 1000, reserveTokens: 2000 },
    summarize: async () => 'S',
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(fallback.method, 'soft');
  assert.ok(fallback.shake.toolResultsDropped > 0, 'the shake stays applied');
  assert.ok(
    events.some((e) => /Auto-shake reclaimed ~\d+ tokens but context is still above the threshold/.test(e.message)),
  );
  assert.match(t.toJsonl(), /\[shaken/);
});

test('dead-end rescue: one huge recent tool result is shaken when nothing can be summarized', async () => {
  const s = Session.create({ id: 's', cwd: '/w', now: 1 });
  s.appendMessage({ role: 'user', content: 'read it', timestamp: 1 }, { now: 1 });
  s.appendMessage(assistant([{ type: 'toolCall', id: 'c1', name: 'read', arguments: { path: '/w/huge.log' } }]), {
    now: 2,
  });
  s.appendMessage(
    {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'read',
      content: [{ type: 'text', text: big(16_000) }],
      isError: false,
      timestamp: 3,
    },
    { now: 3 },
  );
  const manual = s.toJsonl();
  // Keeps all of it, and stays below the 40k window's threshold (23,616): a larger value
  // could summarize nothing in any case and would be clamped (small windows).
  const settings = { keepRecentTokens: 23_000 };
  await expectRejects(s.compact({ model: MODEL, settings, summarize: async () => 'S' }), 'E_NOTHING_TO_COMPACT');
  assert.equal(s.toJsonl(), manual, 'a manual compaction does not rescue');
  const r = await s.compact({
    reason: 'overflow',
    methods: ['soft'],
    model: MODEL,
    settings,
    summarize: async () => 'S',
  });
  assert.equal(r.method, 'shake');
  assert.equal(r.shake.rescue, true);
  assert.ok(r.shake.tokensFreed > 15_000);
});

test('an automatic shake that was not enough, then a summary keeping a too-large newest result: the rescue reaches into it', async () => {
  // Old results for the automatic shake, then one newest result its preset protects.
  const s = toolSession(6, 3000, false);
  s.appendMessage(assistant([{ type: 'toolCall', id: 'huge', name: 'read', arguments: { path: '/w/huge.log' } }]), {
    now: 2000,
  });
  s.appendMessage(
    {
      role: 'toolResult',
      toolCallId: 'huge',
      toolName: 'read',
      content: [{ type: 'text', text: big(26_000) }],
      isError: false,
      timestamp: 2001,
    },
    { now: 2001 },
  );
  const events = [];
  const r = await s.compact({
    reason: 'threshold',
    methods: ['shake', 'soft'],
    model: MODEL,
    liveTokens: 52_000,
    settings: { keepRecentTokens: 1000, reserveTokens: 2000 },
    summarize: async () => 'S',
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(r.method, 'soft');
  assert.ok(
    events.some((e) => /Auto-shake reclaimed/.test(e.message ?? '')),
    'the automatic shake handed over',
  );
  assert.equal(r.shake.rescue, true, 'the rescue ran after the summary');
  assert.ok(r.shake.entries.length >= 7, `both shakes' entries: ${r.shake.entries.length}`);
  assert.equal(r.report.shakeTokensFreed, r.shake.tokensFreed);
  const huge = s.entries().find((e) => e.message?.toolCallId === 'huge');
  assert.match(huge.message.content[0].text, /^\[shaken/);
  assert.ok(s.contextTokens().tokens < 0.8 * 38_000, 'the agent can go on');
});

test('Maintainer: an automatic compaction with shake in its method order', async () => {
  const s = toolSession(12, 3000, false);
  const events = [];
  const m = new Maintainer(s, {
    model: { ...MODEL, contextWindow: 40_000 },
    settings: { methodOrder: ['shake', 'soft'], reserveTokens: 2000 },
    summarize: async () => 'S',
    onEvent: (e) => events.push(e),
  });
  const { next, report } = await m.afterResponse(
    assistant([{ type: 'text', text: 'ok' }], {
      stopReason: 'stop',
      usage: { input: 39_000, output: 10, cacheRead: 0, cacheWrite: 0 },
    }),
  );
  assert.equal(next, 'done');
  assert.equal(report?.method, 'shake');
  const end = events.find((e) => e.type === 'auto_compaction_end');
  assert.equal(end?.action, 'shake');
  m.dispose();
});
