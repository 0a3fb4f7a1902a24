// The trigger state machine through the built package under Node.js: scripted turn sequences
// driven by a small host loop that applies each Decision the way an agent would.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CONTINUE_DELAY_MS,
  ContextManager,
  compactionErrorMessage,
  compactionMethods,
  INCOMPLETE_RECOVERY_MAX_RETRIES,
  isContextOverflow,
  Maintainer,
  resolveSettings,
  Session,
  shouldCompact,
  thresholdTokens,
  windowBudgets,
} from 'ctxfold';

const model = {
  provider: 'anthropic',
  id: 'claude-sonnet-4-5',
  contextWindow: 200_000,
  maxTokens: 32_000,
  input: ['text', 'image'],
};

function usage(input, output, cacheRead = 0) {
  return { input, output, cacheRead, cacheWrite: 0, totalTokens: input + output + cacheRead };
}

function assistant(fields) {
  return {
    role: 'assistant',
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    content: [{ type: 'text', text: 'done' }],
    stopReason: 'stop',
    usage: usage(0, 0),
    timestamp: 1_000,
    ...fields,
  };
}

const toolTurn = (context) =>
  assistant({
    content: [{ type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'a.ts' } }],
    stopReason: 'toolUse',
    usage: usage(context - 100, 100),
  });
const answer = (context) => assistant({ usage: usage(context - 100, 100) });
const errorTurn = (errorMessage) => assistant({ content: [], stopReason: 'error', errorMessage });
const thinkingLengthStop = () =>
  assistant({
    content: [{ type: 'thinking', thinking: 'a long chain of thought' }],
    stopReason: 'length',
    usage: usage(28_000, 32_000),
  });

function codeOf(fn) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof Error);
    return err.code;
  }
  return 'no error';
}

/**
 * A scripted host: feeds turns, applies decisions, answers compactions with `compactions`
 * (one outcome per compaction, in order) and logs what it did.
 */
function runScript(cm, turns, compactions = []) {
  const log = [];
  const outcomes = [...compactions];
  const apply = (d) => {
    for (const e of d.events) {
      log.push(`${e.type}${e.errorMessage ? `: ${e.errorMessage}` : ''}${e.willRetry ? ' (retry)' : ''}`);
    }
    for (const n of d.notices) log.push(`${n.level}: ${n.text}`);
    if (d.compactionWarning) log.push('stamp warning');
    if (d.dropFailedTurn) log.push(d.dropFailedTurn.durable ? 'drop turn durably' : 'drop turn');
    if (d.restoreFailedTurn) log.push('restore turn');
    if (d.compact) {
      assert.equal(d.promote, null);
      log.push(`compact ${d.compact.reason}${d.compact.willRetry ? ' + retry' : ''}`);
      const outcome = outcomes.shift();
      assert.ok(outcome, 'the script has an outcome for every compaction');
      const next = cm.afterCompaction(d.compact, outcome);
      assert.equal(next.compact, null, 'never compaction → compaction');
      apply(next);
    }
    if (d.continuation) log.push(`continue: ${d.continuation.kind} after ${d.continuation.afterMs} ms`);
    if (d.blockAutoContinue) log.push('block auto-continue');
  };
  for (const [message, options] of turns) {
    log.push(`turn ${message.stopReason}`);
    apply(cm.afterTurn(message, model, options));
  }
  assert.deepEqual(outcomes, [], 'every scripted compaction happened');
  return log;
}

test('threshold: below, at, above, then auto-continue after a compaction with headroom', () => {
  const cm = new ContextManager();
  // W 200 000, reserve unset ⇒ threshold 170 000.
  const log = runScript(
    cm,
    [[toolTurn(169_000)], [toolTurn(170_000)], [toolTurn(170_001)], [answer(120_000)]],
    [{ status: 'compacted', tokensAfter: 30_000 }],
  );
  assert.deepEqual(log, [
    'turn toolUse',
    'turn toolUse',
    'turn toolUse',
    'compact threshold',
    'auto_compaction_end',
    `continue: auto-continue after ${CONTINUE_DELAY_MS} ms`,
    'turn stop',
  ]);
});

test('the auto-continue prompt and the compaction result travel with the decision', () => {
  const cm = new ContextManager();
  const d = cm.afterTurn(toolTurn(180_000), model, { now: 5_000 });
  assert.deepEqual(
    { reason: d.compact.reason, entry: d.compact.entry, willRetry: d.compact.willRetry, strategy: d.compact.strategy },
    { reason: 'threshold', entry: 'post-turn', willRetry: false, strategy: 'snapcompact' },
  );
  // remote needs an endpoint; the strategy is the first method's.
  assert.deepEqual(d.compact.methods, ['snapcompact', 'handoff', 'shake', 'soft']);
  assert.equal(d.compact.thresholdTokens, 170_000);
  const result = { summary: 'S', firstKeptEntryId: 'e7', tokensBefore: 180_000 };
  const next = cm.afterCompaction(d.compact, { status: 'compacted', tokensAfter: 30_000, result });
  assert.deepEqual(next.events, [
    { type: 'auto_compaction_end', action: 'snapcompact', aborted: false, willRetry: false, result },
  ]);
  assert.equal(next.continuation.kind, 'auto-continue');
  assert.equal(typeof next.continuation.prompt, 'string');
  assert.ok(next.continuation.prompt.length > 40);
});

test('stored estimate floors the trigger; a pre-compaction assistant counts 0', () => {
  const cm = new ContextManager({ reserveTokens: 10_000 });
  const small = { ...model, contextWindow: 100_000 };
  assert.equal(cm.afterTurn(answer(20_000), small).compact, null);
  assert.equal(cm.afterTurn(answer(20_000), small, { storedTokens: 95_000 }).compact.contextTokens, 95_000);
  // Timestamp 1 000 (1970) predates a compaction of 2026, given as an ISO string.
  const stale = cm.afterTurn(answer(95_000), small, { latestCompactionAt: '2026-01-01T00:00:00.000Z' });
  assert.equal(stale.compact, null);
});

test('overflow: each provider wording is detected; one compact-and-retry per episode', () => {
  for (const text of [
    'prompt is too long: 213462 tokens > 200000 maximum',
    "This model's maximum context length is 128000 tokens",
    'Your input exceeds the context window of this model',
    'context_length_exceeded',
    '413 status code (no body)',
  ]) {
    assert.equal(isContextOverflow(errorTurn(text)), true, text);
  }
  assert.equal(isContextOverflow(errorTurn('rate limit exceeded')), false);
  // Silent overflow needs the window.
  const silent = assistant({ usage: usage(190_000, 100, 20_000) });
  assert.equal(isContextOverflow(silent, 200_000), true);
  assert.equal(isContextOverflow(silent), false);

  const cm = new ContextManager();
  const overflow = errorTurn('prompt is too long: 213462 tokens > 200000 maximum');
  const log = runScript(
    cm,
    [[overflow], [overflow], [answer(50_000)], [overflow]],
    [
      { status: 'compacted', tokensAfter: 40_000 },
      { status: 'failed', error: new Error('503 overloaded') },
    ],
  );
  assert.deepEqual(log, [
    'turn error',
    'drop turn',
    'compact overflow + retry',
    'auto_compaction_end (retry)',
    'drop turn',
    'continue: retry after 100 ms',
    'turn error',
    'auto_compaction_end: Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.',
    'block auto-continue',
    'turn stop',
    'turn error',
    'drop turn',
    'compact overflow + retry',
    'auto_compaction_end: Context overflow recovery failed: 503 overloaded',
    'restore turn',
  ]);
});

test('length stops: an incomplete compaction and a retry each, three times, then give up', () => {
  const cm = new ContextManager();
  const stop = thinkingLengthStop();
  const d = cm.afterTurn(stop, model);
  assert.deepEqual(d.dropFailedTurn, { durable: false });
  assert.equal(d.continuation, null);
  assert.deepEqual(
    { reason: d.compact.reason, willRetry: d.compact.willRetry, entry: d.compact.entry },
    { reason: 'incomplete', willRetry: true, entry: 'post-turn' },
  );
  cm.afterTurn(toolTurn(60_000), model);
  assert.equal(cm.state.incompleteRecoveries, 0);
  const compacted = { status: 'compacted', tokensAfter: 20_000 };
  const log = runScript(cm, [[stop], [stop], [stop], [stop]], [compacted, compacted, compacted]);
  const recovery = [
    'turn length',
    'drop turn',
    'compact incomplete + retry',
    'auto_compaction_end (retry)',
    'drop turn',
    'continue: retry after 100 ms',
  ];
  assert.deepEqual(log, [
    ...Array.from({ length: INCOMPLETE_RECOVERY_MAX_RETRIES }, () => recovery).flat(),
    'turn length',
    'error: Length-stop recovery gave up after 4 consecutive `length` responses from anthropic/claude-sonnet-4-5. Ask for a shorter answer or switch to a model with a larger output limit.',
    'drop turn durably',
    'block auto-continue',
  ]);
});

test('a truncated answer with room left leaves the context and is retried after a compaction (18.2.3)', () => {
  const cm = new ContextManager();
  // 60 000 of a 200 000 window (threshold 170 000): room left, recovered all the same.
  const partial = assistant({ stopReason: 'length', usage: usage(28_000, 32_000) });
  const log = runScript(cm, [[partial]], [{ status: 'compacted', tokensAfter: 20_000 }]);
  assert.deepEqual(log, [
    'turn length',
    'drop turn',
    'compact incomplete + retry',
    'auto_compaction_end (retry)',
    'drop turn',
    'continue: retry after 100 ms',
  ]);
  // With nothing that could recover it, the answer stays, with a warning.
  const off = new ContextManager({ enabled: false });
  const d = off.afterTurn(partial, model);
  assert.equal(d.dropFailedTurn, null);
  assert.deepEqual(d.notices, [
    {
      level: 'warning',
      text: 'Response hit the anthropic/claude-sonnet-4-5 output limit (32000 tokens) and was truncated.',
    },
  ]);
});

test('a compaction that frees too little warns, blocks and pauses: no loop', () => {
  const cm = new ContextManager();
  // Threshold 170 000, recovery band 136 000.
  const log = runScript(
    cm,
    [[toolTurn(180_000)], [toolTurn(185_000)], [toolTurn(190_000)]],
    [{ status: 'compacted', tokensAfter: 150_000 }],
  );
  assert.equal(log.length, 8, log.join('\n'));
  assert.deepEqual(log.slice(0, 3), ['turn toolUse', 'compact threshold', 'auto_compaction_end']);
  assert.match(
    log[3],
    /^warning: Compaction freed too little context to make progress — pausing automatic maintenance \(150000 tokens remain; continuing needs at most 136000\)/,
  );
  assert.deepEqual(log.slice(4), ['stamp warning', 'block auto-continue', 'turn toolUse', 'turn toolUse']);
  assert.equal(cm.state.maintenancePaused, true);
  // A new prompt resumes maintenance.
  const d = cm.beforePrompt(model, { storedTokens: 180_000 });
  assert.equal(d.compact.entry, 'pre-prompt');
  assert.equal(cm.state.maintenancePaused, false);
});

test('idle maintenance: disabled, too early, under the threshold, due, once per period', () => {
  assert.equal(new ContextManager().onIdle(model, 250_000, { now: 10_000_000 }).compact, null);
  const cm = new ContextManager({ idleEnabled: true, idleThresholdTokens: 100_000, idleTimeoutSeconds: 300 });
  const d = cm.afterTurn(toolTurn(120_000), model, { now: 1_000 });
  assert.equal(d.wakeAt, 301_000);
  const early = cm.onIdle(model, 120_000, { now: 300_000 });
  assert.equal(early.compact, null);
  assert.equal(early.wakeAt, 301_000);
  assert.equal(cm.onIdle(model, 100_000, { now: 301_000 }).compact, null);
  const due = cm.onIdle(model, 120_000, { now: 301_000 });
  assert.deepEqual([due.compact.reason, due.compact.entry], ['idle', 'idle']);
  assert.equal(cm.onIdle(model, 120_000, { now: 400_000 }).compact, null);
  const after = cm.afterCompaction(due.compact, { status: 'compacted', tokensAfter: 110_000 });
  assert.equal(after.continuation, null);
  assert.equal(after.blockAutoContinue, false);
});

test('promotion is a question to the host', () => {
  const cm = new ContextManager();
  const d = cm.afterTurn(errorTurn('prompt is too long'), model, { canPromote: true, storedTokens: 210_000 });
  assert.deepEqual(d.promote, { reason: 'overflow', contextTokens: 210_000, contextWindow: 200_000 });
  assert.deepEqual(d.dropFailedTurn, { durable: false });
  assert.equal(d.compact, null);
  const promoted = cm.afterPromotion(true);
  assert.deepEqual(promoted.dropFailedTurn, { durable: true });
  assert.equal(promoted.continuation.kind, 'retry');
  cm.afterTurn(errorTurn('prompt is too long'), model, { canPromote: true });
  assert.equal(cm.afterPromotion(false).compact.reason, 'overflow');
});

test('manual compaction resumes an interrupted turn; error prefixes', () => {
  const cm = new ContextManager();
  const d = cm.afterCompaction(
    { reason: 'manual' },
    { status: 'compacted', tokensAfter: 10_000 },
    { interruptedTurn: true },
  );
  assert.equal(d.continuation.kind, 'auto-continue');
  assert.deepEqual(d.events, []);
  assert.equal(compactionErrorMessage('overflow', 'x'), 'Context overflow recovery failed: x');
  assert.equal(compactionErrorMessage('incomplete', 'x'), 'Incomplete response recovery failed: x');
  assert.equal(compactionErrorMessage('idle', 'x'), 'Auto-compaction failed: x');
});

test('disabled compaction, strategy off and aborted turns', () => {
  for (const settings of [{ enabled: false }, { strategy: 'off' }]) {
    const cm = new ContextManager(settings);
    assert.equal(cm.afterTurn(toolTurn(199_000), model).compact, null);
    const d = cm.afterTurn(errorTurn('prompt is too long'), model);
    assert.equal(d.compact, null);
    assert.equal(d.blockAutoContinue, true);
    assert.equal(d.notices[0].level, 'error');
  }
  const cm = new ContextManager();
  const aborted = assistant({ stopReason: 'aborted', usage: usage(199_000, 10) });
  const d = cm.afterTurn(aborted, model);
  assert.deepEqual(
    { ...d, wakeAt: null },
    {
      events: [],
      notices: [],
      compactionWarning: null,
      dropFailedTurn: null,
      restoreFailedTurn: false,
      promote: null,
      compact: null,
      continuation: null,
      blockAutoContinue: false,
      wakeAt: null,
    },
  );
});

test('bad input fails with a code', () => {
  assert.equal(
    codeOf(() => new ContextManager({ idleTimeoutSeconds: -1 })),
    'E_SETTINGS',
  );
  assert.equal(
    codeOf(() => new ContextManager('x')),
    'E_INVALID_ARGUMENT',
  );
  const cm = new ContextManager();
  assert.equal(
    codeOf(() => cm.afterTurn({ role: 'user', content: 'hi' }, model)),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterTurn(answer(10), { id: 'm' })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterTurn(answer(10), model, { storedTokens: -1 })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterTurn(answer(10), model, { now: NaN })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterTurn(answer(10), model, { latestCompactionAt: 'yesterday' })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterCompaction({ reason: 'threshold' }, { status: 'done' })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterCompaction({ reason: 'sometimes' }, { status: 'aborted' })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => cm.afterCompaction({ reason: 'threshold' }, { status: 'compacted' })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => compactionErrorMessage('later', 'x')),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => isContextOverflow(null)),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(cm.settings.autoContinue, true);
});

test('modelThresholds: the exact key wins over the wildcard, for the functions and the machine', () => {
  const settings = {
    reserveTokens: 10_000,
    modelThresholds: { 'anthropic/*': '50%', 'anthropic/claude-sonnet-4-5': '60k', 'openai/gpt-5.1': 30_000 },
  };
  assert.equal(thresholdTokens(100_000, settings), 85_000, 'no model: the settings');
  assert.equal(thresholdTokens(100_000, settings, model), 60_000);
  assert.equal(thresholdTokens(100_000, settings, { provider: 'anthropic', id: 'claude-opus-4-7' }), 50_000);
  assert.equal(thresholdTokens(100_000, settings, { provider: 'openai', id: 'gpt-5.1' }), 30_000);
  assert.equal(thresholdTokens(100_000, settings, { provider: 'google', id: 'g' }), 85_000);
  assert.equal(shouldCompact(60_001, 100_000, settings, model), true);
  assert.equal(shouldCompact(60_001, 100_000, settings), false);
  assert.equal(thresholdTokens(200_000), 170_000, 'the old two-argument call still works');
  assert.deepEqual(resolveSettings(settings).modelThresholds, settings.modelThresholds);
  assert.deepEqual(resolveSettings({}).branchSummary, { enabled: false, reserveTokens: 16_384 });

  const cm = new ContextManager(settings);
  const small = { ...model, contextWindow: 100_000 };
  assert.equal(cm.afterTurn(toolTurn(60_000), small).compact, null);
  const d = cm.afterTurn(toolTurn(60_001), small);
  assert.equal(d.compact.thresholdTokens, 60_000);
  // The progress guard measures against the model's point (0.8 · 60 000).
  const next = cm.afterCompaction(d.compact, { status: 'compacted', tokensAfter: 48_001 });
  assert.ok(next.compactionWarning?.startsWith('Compaction freed too little context'));

  for (const [bad, field] of [
    [{ modelThresholds: { 'gpt-5': 1000 } }, 'modelThresholds.gpt-5'],
    [{ modelThresholds: { 'openai/*': 'lots' } }, 'modelThresholds.openai/*'],
    [{ modelThresholds: { 'openai/*': '120%' } }, 'modelThresholds.openai/*'],
    [{ branchSummary: { reserveTokens: -1 } }, 'branchSummary.reserveTokens'],
  ]) {
    let err;
    try {
      new ContextManager(bad);
    } catch (e) {
      err = e;
    }
    assert.equal(err?.code, 'E_SETTINGS', JSON.stringify(bad));
    assert.ok(err.message.includes(`\`${field}\``), err.message);
  }
  assert.equal(
    codeOf(() => thresholdTokens(100_000, settings, { provider: 'x' })),
    'E_INVALID_ARGUMENT',
  );
});

test('compactionMethods follows the rule the machine requests with', () => {
  const text = { ...model, input: ['text'] };
  assert.deepEqual(compactionMethods(undefined, { reason: 'threshold', model }), [
    'snapcompact',
    'handoff',
    'shake',
    'soft',
  ]);
  assert.deepEqual(compactionMethods(undefined, { reason: 'overflow', model }), ['snapcompact', 'shake', 'soft']);
  assert.deepEqual(compactionMethods(undefined, { reason: 'overflow', model, payloadRejection: true }), [
    'shake',
    'soft',
  ]);
  assert.deepEqual(compactionMethods(undefined, { reason: 'threshold', model: text }), ['handoff', 'shake', 'soft']);
  assert.deepEqual(compactionMethods(undefined, { reason: 'threshold', model, remote: true }), [
    'remote',
    'snapcompact',
    'handoff',
    'shake',
    'soft',
  ]);
  assert.deepEqual(
    compactionMethods({ remoteEndpoint: 'https://s.example/c', remoteEnabled: false }, { reason: 'idle', model }),
    ['snapcompact', 'handoff', 'shake', 'soft'],
  );
  // Manual: remote, snapcompact (not with focus text) and soft only; `off` does not stop it.
  assert.deepEqual(compactionMethods({ strategy: 'off' }, { reason: 'manual', model }), ['snapcompact', 'soft']);
  assert.deepEqual(compactionMethods(undefined, { reason: 'manual', model, customInstructions: 'keep the API' }), [
    'soft',
  ]);
  assert.deepEqual(compactionMethods({ enabled: false }, { reason: 'threshold', model }), []);
  assert.deepEqual(compactionMethods({ methodOrder: ['shake'] }, { reason: 'threshold', model }), ['shake']);
  assert.deepEqual(compactionMethods({ methodOrder: ['shake'] }, { reason: 'manual', model }), []);

  // The machine's request carries the same list; action and strategy are the first method's.
  const cm = new ContextManager({ methodOrder: ['handoff', 'remote', 'soft'] });
  const d = cm.afterTurn(toolTurn(180_000), model);
  assert.deepEqual(
    d.compact.methods,
    compactionMethods({ methodOrder: ['handoff', 'remote', 'soft'] }, { reason: 'threshold', model }),
  );
  assert.deepEqual([d.compact.action, d.compact.strategy], ['handoff', 'handoff']);
  const o = cm.afterTurn(errorTurn('prompt is too long'), model);
  assert.deepEqual(
    [o.compact.methods, o.compact.action, o.compact.strategy],
    [['soft'], 'context-full', 'context-full'],
  );

  // A host with its own remote route says so; the machine then offers remote first.
  const remote = new ContextManager(undefined, { remote: true });
  const r = remote.afterTurn(toolTurn(180_000), model).compact;
  assert.deepEqual([r.methods[0], r.action, r.strategy], ['remote', 'remote', 'context-full']);

  assert.equal(
    codeOf(() => compactionMethods(undefined, { model })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => compactionMethods(undefined, { reason: 'later', model })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => compactionMethods(undefined, { reason: 'threshold' })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => compactionMethods({ methodOrder: 3 }, { reason: 'threshold', model })),
    'E_SETTINGS',
  );
});

test('small windows: budgets are shares of the threshold, defaults where they fit', () => {
  const small = windowBudgets(32_000);
  assert.deepEqual(small, {
    contextWindow: 32_000,
    thresholdTokens: 15_616,
    reserveTokens: 16_384,
    keepRecentTokens: 7_808,
    keepRecentClamped: false,
    shakeProtectTokens: 6_246,
    shakeMinSavings: 1_561,
    archiveBudgetTokens: 12_492,
  });
  const large = windowBudgets(200_000);
  assert.deepEqual(
    [large.keepRecentTokens, large.shakeProtectTokens, large.shakeMinSavings, large.archiveBudgetTokens],
    [20_000, 16_000, 4_000, 170_000],
  );
  // A user's value: kept when it fits, clamped (and flagged) when it could summarize nothing.
  assert.equal(windowBudgets(32_000, { keepRecentTokens: 10_000 }).keepRecentTokens, 10_000);
  assert.equal(windowBudgets(32_000, { keepRecentTokens: 30_000 }).keepRecentClamped, true);
  // The model's threshold rule applies.
  const rule = { modelThresholds: { 'local/*': 20_000 } };
  assert.equal(windowBudgets(200_000, rule, { provider: 'local', id: 'x' }).keepRecentTokens, 10_000);
  assert.equal(
    codeOf(() => windowBudgets(-1)),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => windowBudgets(32_000, { keepRecentTokens: 'x' })),
    'E_SETTINGS',
  );
  // A request in a small window carries them.
  const cm = new ContextManager();
  const d = cm.afterTurn(toolTurn(16_000), { ...model, contextWindow: 32_000 });
  assert.deepEqual(d.compact.budgets, small);
  assert.deepEqual(d.notices, []);
});

test('a model without a context window is reported once; a clamped keep once per window', () => {
  const cm = new ContextManager();
  const noWindow = { provider: 'local', id: 'llama' };
  const first = cm.checkModel(noWindow);
  assert.equal(first.notices.length, 1);
  assert.equal(first.notices[0].level, 'warning');
  assert.match(first.notices[0].text, /^The model local\/llama has no contextWindow/);
  assert.deepEqual(cm.afterTurn(toolTurn(16_000), noWindow).notices, []);
  // A fresh machine says it at its first decision.
  assert.equal(new ContextManager().beforePrompt(noWindow).notices.length, 1);
  const clamp = new ContextManager({ keepRecentTokens: 30_000 });
  const small = { ...model, contextWindow: 32_000 };
  assert.match(clamp.checkModel(small).notices[0].text, /^keepRecentTokens 30000 is at or above/);
  assert.deepEqual(clamp.afterTurn(toolTurn(16_000), small).notices, []);
});

test('Maintainer: a truncated reply with room left is retried with the reply out of the context', async () => {
  // 16 turns of ~200 tokens in a 32k window: far below its threshold (15,616).
  const small = { ...model, contextWindow: 32_000, input: ['text'] };
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  for (let i = 0; i < 16; i++) {
    s.appendMessage({ role: 'user', content: `q${i} ${'word '.repeat(160)}`, timestamp: 1000 + i }, { now: 1000 + i });
    s.appendMessage(assistant({ content: [{ type: 'text', text: `a${i} ${'word '.repeat(160)}` }] }), {
      now: 1000 + i,
    });
  }
  const events = [];
  const m = new Maintainer(s, {
    model: small,
    settings: { methodOrder: ['soft'], keepRecentTokens: 1000 },
    summarize: async (r) => `summary for ${r.purpose}`,
    onEvent: (e) => events.push(e),
  });
  s.appendMessage({ role: 'user', content: 'write it all out', timestamp: 5000 });
  await m.beforeRequest();
  const cut = assistant({
    content: [{ type: 'text', text: 'Here is the first half of' }],
    stopReason: 'length',
    usage: usage(7_000, 1_000),
    timestamp: 6000,
  });
  const out = await m.afterResponse(cut);
  assert.equal(out.next, 'retry');
  assert.equal(out.report.reason, 'incomplete');
  assert.ok(events.some((e) => e.type === 'auto_compaction_start' && e.reason === 'incomplete'));
  const again = await m.beforeRequest();
  assert.equal(again.messages.at(-1).role, 'user');
  assert.ok(!JSON.stringify(again.messages).includes('the first half of'), 'the truncated reply is out');
  m.dispose();
});

test('ContextManager checks a model once, in the core, and settings against it at construction', () => {
  // Every entry point reads a model through the one check: NaN, Infinity, 0 or a string
  // window is refused naming the field (JSON would have turned NaN into null: unknown).
  const cm = new ContextManager();
  for (const bad of [
    { contextWindow: Number.NaN },
    { contextWindow: 0 },
    { contextWindow: '8000' },
    { maxTokens: -1 },
  ]) {
    const m = { ...model, ...bad };
    for (const call of [
      () => cm.checkModel(m),
      () => cm.beforePrompt(m, { now: 1 }),
      () => cm.onIdle(m, 10, { now: 1 }),
      () => new ContextManager({}, { model: m }),
    ]) {
      assert.throws(call, (err) => {
        assert.equal(err.code, 'E_INVALID_ARGUMENT', err.message);
        assert.match(err.message, new RegExp(Object.keys(bad)[0]));
        return true;
      });
    }
  }
  cm.free();
  const text = { ...model, input: ['text'] };
  assert.throws(() => new ContextManager({ methodOrder: ['snapcompact'] }, { model: text, summarizer: false }), {
    code: 'E_SETTINGS',
  });
  // The host's summarizer (the default) recovers an overflow with soft.
  new ContextManager({ methodOrder: ['snapcompact'] }, { model: text }).free();
  // Without a model nothing is checked against one.
  new ContextManager({ methodOrder: ['snapcompact'] }, { summarizer: false }).free();
});

// ----- the request/response loop: the Maintainer's policy, decided by the core (issue 36) -----

const smallModel = { ...model, contextWindow: 100_000 };

test('a tool-use reply is kept by the core and checked mid-run before the next request', () => {
  // The reference's policy: the threshold prune on every reply (`cacheAware` holds it back
  // while the cache the last request wrote is warm: tests/js/cache.test.mjs).
  const cm = new ContextManager({ reserveTokens: 10_000, cacheAware: false });
  assert.equal(cm.onReply(toolTurn(90_000)), true, 'deferred');
  assert.equal(cm.replyPrune(), null, 'nothing waits for a check');
  const d = cm.beforeRequest(smallModel, { now: 10_000, storedTokens: 91_000, state: '0:3:a' });
  assert.equal(d.compact.entry, 'mid-run');
  assert.equal(d.compact.contextTokens, 91_000);
  // Used up: the next request is a prompt's.
  const next = cm.beforeRequest(smallModel, { now: 10_000, storedTokens: 91_000, state: '0:4:b' });
  assert.equal(next.compact.entry, 'pre-prompt');
  // A finished answer is checked now, after the threshold prune it asks for.
  assert.equal(cm.onReply(answer(1_000)), false);
  assert.equal(cm.replyPrune().pass, 'threshold');
  assert.equal(cm.afterReply(smallModel, { now: 10_000, freedTokens: 0 }).compact, null);
});

test('a request in the state the last step settled on is a retry: the core checks nothing', () => {
  const cm = new ContextManager({ reserveTokens: 10_000 });
  const over = (state) => cm.beforeRequest(smallModel, { now: 10_000, storedTokens: 95_000, state });
  cm.settle('0:5:x');
  assert.equal(over('0:5:x'), null);
  assert.equal(over('0:6:y').compact.entry, 'pre-prompt');
  assert.throws(() => cm.settle(5), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => over(7), { code: 'E_INVALID_ARGUMENT' });
});

test('the prune steps come from the core, their windows in its estimate', () => {
  const cm = new ContextManager();
  assert.deepEqual(cm.stalePass(), {
    pass: 'stale',
    options: { supersedeKey: true, pruneUseless: true, idleFlushMs: 5_400_000, suffixTokenLimit: 8_000 },
  });
  // A host counting twice the estimate: the windows halve.
  const count = { estimated: 10_000, counted: 20_000, usage: 0 };
  assert.equal(cm.stalePass(count).options.suffixTokenLimit, 4_000);
  assert.equal(new ContextManager({ supersedeReads: false, dropUseless: false }).stalePass(), null);
  cm.onReply(answer(1_000));
  assert.deepEqual(cm.replyPrune(count), {
    pass: 'threshold',
    options: { pruneUseless: true, protectTokens: 20_000, minimumSavings: 10_000, cacheWarmSuffixTokens: 4_000 },
  });
  cm.onReply(errorTurn('rate limited'));
  assert.equal(cm.replyPrune(), null, 'a failed turn is not pruned');
  const off = new ContextManager({ enabled: false });
  off.onReply(answer(1_000));
  assert.equal(off.replyPrune(), null);
  assert.throws(() => cm.stalePass({ estimated: -1, counted: 1, usage: 0 }), { code: 'E_INVALID_ARGUMENT' });
  // What the prune freed lowers the reply's trigger.
  const t = new ContextManager({ reserveTokens: 10_000 });
  t.onReply(answer(90_000));
  assert.equal(t.afterReply(smallModel, { now: 10_000, freedTokens: 10_000, storedTokens: 70_000 }).compact, null);
  t.onReply(answer(90_000));
  assert.equal(t.afterReply(smallModel, { now: 10_000, storedTokens: 70_000 }).compact.contextTokens, 90_000);
});

test('a continuation carries the next step of the loop', () => {
  const cm = new ContextManager({ reserveTokens: 10_000 });
  const d = cm.afterTurn(errorTurn('prompt is too long: 213462 tokens > 200000 maximum'), model, { now: 10_000 });
  const after = cm.afterCompaction(d.compact, { status: 'compacted', tokensAfter: 10_000 });
  assert.equal(after.continuation.next, 'retry');
  const queued = cm.afterCompaction(
    { ...d.compact, willRetry: false, reason: 'threshold', entry: 'post-turn' },
    { status: 'compacted', tokensAfter: 10_000 },
    { queuedMessages: true },
  );
  assert.equal(queued.continuation.kind, 'queued-messages');
  assert.equal(queued.continuation.next, 'done');
});

test('what a compaction keeps comes from the core, in its estimate', () => {
  const cm = new ContextManager();
  const d = cm.afterTurn(answer(31_000), { ...model, contextWindow: 32_000 }, { now: 10_000 });
  const fitted = d.compact.budgets.keepRecentTokens;
  assert.ok(fitted < 20_000);
  assert.deepEqual(cm.keepBudgets(d.compact), { keepRecentTokens: fitted, v2RetainedMessageBudget: 64_000 });
  const manual = { reason: 'manual', contextTokens: 10_000 };
  assert.deepEqual(cm.keepBudgets(manual, { estimated: 10_000, counted: 20_000, usage: 0 }), {
    keepRecentTokens: 10_000,
    v2RetainedMessageBudget: 32_000,
  });
  assert.throws(() => cm.keepBudgets(null), { code: 'E_INVALID_ARGUMENT' });
});

test('the end event names the action of the method that ran, given to afterCompaction', () => {
  const cm = new ContextManager({ reserveTokens: 10_000 });
  const d = cm.afterTurn(answer(190_000), model, { now: 10_000 });
  assert.equal(d.compact.action, 'snapcompact');
  const end = (x) => x.events.find((e) => e.type === 'auto_compaction_end');
  const ran = cm.afterCompaction(d.compact, { status: 'compacted', tokensAfter: 10_000 }, { method: 'soft' });
  assert.equal(end(ran).action, 'context-full');
  const unknown = cm.afterCompaction(d.compact, { status: 'compacted', tokensAfter: 10_000 }, { method: 'x' });
  assert.equal(end(unknown).action, 'snapcompact');
});
