// Token counting of the Maintainer (issue 21 point 3): a host's `tokenCounter`, the cap for huge
// messages, and the calibration from reported usage that keeps a tool loop whose provider
// counts 1.6× the local estimate from overflowing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const MODEL = { provider: 'anthropic', id: 'claude-gauge', contextWindow: 40_000, maxTokens: 2_000, input: ['text'] };

/** The characters a provider would read in a request (texts, thinking, tool arguments). */
function chars(messages) {
  let n = 0;
  for (const m of messages) {
    const c = m.content;
    if (typeof c === 'string') n += c.length;
    else
      for (const b of c ?? [])
        n += (b.text ?? b.thinking ?? '').length + (b.arguments ? JSON.stringify(b.arguments).length : 0);
  }
  return n;
}

/**
 * A tool loop of `steps` reads of ~2,500 estimated tokens each against a provider that counts
 * `factor` × chars/4 and refuses requests over the window. Returns what happened.
 */
async function toolLoop({ factor, steps = 30, ...options }) {
  const session = Session.create({ cwd: '/w', now: 1 });
  const maintainer = new Maintainer(session, {
    model: MODEL,
    summarize: async () => '## Goal\nRead the files.\n## Progress\nSome read.',
    // A small reserve: the threshold (36k) sits close to the window, so an estimate that lags the
    // provider's count by 1.6× crosses the window before the threshold.
    settings: { keepRecentTokens: 6_000, reserveTokens: 4_000 },
    now: () => 1_000_000,
    ...options,
  });
  maintainer.session.appendMessage({ role: 'user', content: 'Read the files one by one.' }, { now: 1 });
  let overflows = 0;
  let largest = 0;
  for (let step = 0; step < steps; step++) {
    for (let attempt = 0; ; attempt++) {
      const { messages } = await maintainer.beforeRequest({ systemPrompt: 'You are a test agent.' });
      const prompt = Math.ceil((factor * chars(messages)) / 4);
      const base = { role: 'assistant', provider: MODEL.provider, model: MODEL.id, timestamp: 1 };
      if (prompt > MODEL.contextWindow) {
        overflows++;
        const r = await maintainer.afterResponse({
          ...base,
          content: [],
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          stopReason: 'error',
          errorMessage: `prompt is too long: ${prompt} tokens > ${MODEL.contextWindow} maximum`,
        });
        if (r.next !== 'retry' || attempt >= 3)
          return { overflows, stuck: true, calibration: maintainer.calibration, maintainer };
        continue;
      }
      largest = Math.max(largest, prompt);
      const id = `c${step}`;
      await maintainer.afterResponse({
        ...base,
        content: [{ type: 'toolCall', id, name: 'read', arguments: { path: `f${step}.ts` } }],
        usage: { input: prompt, output: 20, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'toolUse',
      });
      const text = `// f${step}.ts\n${'const value = compute(input); // a line of code\n'.repeat(200)}`;
      maintainer.session.appendMessage(
        { role: 'toolResult', toolCallId: id, toolName: 'read', content: [{ type: 'text', text }], isError: false },
        { now: 1 },
      );
      break;
    }
  }
  return { overflows, stuck: false, largest, calibration: maintainer.calibration, maintainer };
}

test('calibration: a provider that counts 1.6× the estimate is learnt, and the loop never overflows', async () => {
  const off = await toolLoop({ factor: 1.6, calibrate: false });
  assert.ok(off.overflows >= 1, `without calibration the estimate lags the provider (${off.overflows} overflows)`);
  const on = await toolLoop({ factor: 1.6 });
  const { ratio, samples } = on.calibration[`${MODEL.provider}/${MODEL.id}`];
  assert.ok(Math.abs(ratio - 1.6) < 0.15, `ratio ${ratio}`);
  assert.ok(samples >= 3);
  assert.equal(on.overflows, 0, 'calibrated: compacted before the window, never past it');
  assert.equal(on.stuck, false);
  assert.ok(on.largest <= MODEL.contextWindow);
});

test('calibration: a provider that counts like the estimate keeps the ratio near 1', async () => {
  const r = await toolLoop({ factor: 1.0, steps: 12 });
  const { ratio } = r.calibration[`${MODEL.provider}/${MODEL.id}`];
  assert.ok(Math.abs(ratio - 1) < 0.15, `ratio ${ratio}`);
});

test('tokenCounter: the host counts the request, each message once', async () => {
  const seen = [];
  const tokenCounter = (m) => {
    seen.push(m.role);
    return Math.ceil((1.6 * chars([m])) / 4) + 4;
  };
  const r = await toolLoop({ factor: 1.6, steps: 30, tokenCounter, calibrate: false });
  assert.equal(r.overflows, 0, 'a counter that agrees with the provider prevents the overflow');
  // Each message counted once, however many requests counted it: the loop appended 60
  // messages and a few summaries (the system prompt is counted as text, not memoized apart).
  const counted = seen.filter((role) => role !== 'system').length;
  assert.ok(counted <= 70, `${counted} counts for 61 messages over 30 requests`);
  const { tokens } = await r.maintainer.beforeRequest({ systemPrompt: 'You are a test agent.' });
  const expected =
    r.maintainer.session.toLlmMessages().reduce((n, m) => n + tokenCounter(m), 0) +
    tokenCounter({ role: 'system', content: 'You are a test agent.' });
  assert.equal(tokens, expected);
});

test('tokenCounter: a huge message reaches the counter cut to maxCountChars, and its count is scaled back', async () => {
  const lengths = [];
  const tokenCounter = (m) => {
    lengths.push(chars([m]));
    return chars([m]) / 2;
  };
  const session = Session.create({ cwd: '/w', now: 1 });
  session.appendMessage({ role: 'user', content: 'x'.repeat(5_000_000) }, { now: 1 });
  const m = new Maintainer(session, {
    model: { ...MODEL, contextWindow: 10_000_000 },
    tokenCounter,
    maxCountChars: 100_000,
  });
  const { tokens } = await m.beforeRequest();
  assert.ok(Math.max(...lengths) <= 100_000, `the counter got ${Math.max(...lengths)} characters`);
  assert.ok(Math.abs(tokens - 2_500_000) < 1_000, `${tokens} tokens`);
});

test('tokenCounter: a bad counter or count is E_INVALID_ARGUMENT', async () => {
  assert.throws(() => new Maintainer(Session.create(), { model: MODEL, tokenCounter: 5 }), {
    code: 'E_INVALID_ARGUMENT',
  });
  const m = new Maintainer(Session.create(), { model: MODEL, tokenCounter: () => Number.NaN });
  m.session.appendMessage({ role: 'user', content: 'hello' });
  await assert.rejects(m.beforeRequest(), { code: 'E_INVALID_ARGUMENT' });
});
