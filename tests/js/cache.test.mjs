// Cache-aware maintenance (issue 39 item 5): the Maintainer's prunes say where they changed the
// request and what that costs the provider's prompt cache, and with `cacheAware` (the default)
// rewrites of earlier history wait for the cache to go cold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const NOW = Date.UTC(2026, 11, 7);
const MINUTE = 60_000;
const MODEL = { provider: 'anthropic', id: 'claude-cache', contextWindow: 200_000, input: ['text'] };

/** user, a `logs` call with a useless result of `size` characters, then `tail` characters of user text. */
function session(size, tail) {
  const s = Session.create({ cwd: '/w', now: NOW });
  s.appendMessage({ role: 'user', content: 'List the logs.' }, { now: NOW });
  const call = { type: 'toolCall', id: 'big', name: 'logs', arguments: {} };
  s.appendMessage({ role: 'assistant', content: [call], stopReason: 'toolUse' }, { now: NOW });
  s.appendMessage(
    {
      role: 'toolResult',
      toolCallId: 'big',
      toolName: 'logs',
      content: [{ type: 'text', text: 'x'.repeat(size) }],
      isError: false,
      useless: true,
    },
    { now: NOW },
  );
  if (tail > 0) s.appendMessage({ role: 'user', content: 'y'.repeat(tail) }, { now: NOW });
  return s;
}

const answer = (text, timestamp) => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason: 'stop',
  timestamp,
});

function pruned(s) {
  return s
    .toLlmMessages()
    .filter((m) => m.role === 'toolResult' && m.content[0]?.text !== undefined && !m.content[0].text.startsWith('x'));
}

test("a prune's report and event name the first message it changed and forecast its cache cost", async () => {
  const s = session(100_000, 0);
  const resultId = s.entries().find((e) => e.message?.role === 'toolResult').id;
  const events = [];
  const m = new Maintainer(s, {
    model: MODEL,
    settings: { dropUseless: true },
    now: () => NOW,
    onEvent: (e) => events.push(e),
  });
  // No request sent yet: no warm cache to keep, the threshold prune runs.
  const { report } = await m.afterResponse(answer('Nothing there.', NOW));
  const [event] = events.filter((e) => e.type === 'prune');
  assert.ok(event, 'the useless result was pruned');
  assert.deepEqual(report.prefixChangedAt, { messageIndex: 2, entryId: resultId });
  assert.deepEqual(event.prefixChangedAt, report.prefixChangedAt);
  assert.deepEqual(event.forecast, report.forecast);
  const f = report.forecast;
  assert.equal(f.tokensFreed, report.tokensBefore - report.tokensAfter);
  assert.ok(f.rewrittenTokens > 0 && f.rewrittenTokens < f.tokensFreed, JSON.stringify(f));
  assert.equal(f.reasoningAtRisk, 0);
  // Anthropic's prices: reads at 0.1, writes at 1.25 of the input price.
  assert.equal(f.net, Math.round((f.rewrittenTokens + f.tokensFreed) * 0.1 - f.rewrittenTokens * 1.25));
});

for (const cacheAware of [true, false]) {
  test(`cacheAware ${cacheAware}: an old useless result is pruned ${cacheAware ? 'once the cache has gone cold' : 'only as the spec says'}`, async () => {
    // 25,000 estimated tokens, 10,000 after it: outside both passes' 8,000-token tails.
    const s = session(100_000, 40_000);
    let now = NOW;
    const events = [];
    const m = new Maintainer(s, {
      model: MODEL,
      settings: { dropUseless: true, cacheAware },
      now: () => now,
      onEvent: (e) => events.push(e),
    });
    await m.beforeRequest();
    await m.afterResponse(answer('Looking.', now + 1_000));
    now += 2 * MINUTE;
    m.session.appendMessage({ role: 'user', content: 'And now?' }, { now });
    await m.beforeRequest();
    assert.equal(pruned(m.session).length, 0, 'the cache is warm: nothing rewritten');
    await m.afterResponse(answer('Still looking.', now + 1_000));
    now += 10 * MINUTE;
    m.session.appendMessage({ role: 'user', content: 'Back.' }, { now });
    const { report } = await m.beforeRequest();
    const prunes = events.filter((e) => e.type === 'prune');
    if (!cacheAware) {
      assert.equal(prunes.length, 0);
      return;
    }
    assert.equal(pruned(m.session).length, 1, 'the break ran the rewrite that waited');
    assert.equal(prunes.length, 1);
    assert.equal(prunes[0].pass, 'threshold');
    assert.equal(report.prefixChangedAt.messageIndex, 2);
    assert.ok(report.forecast.tokensFreed >= 20_000);
  });
}
