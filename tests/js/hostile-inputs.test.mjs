// Inputs built to make the package do super-linear work (issue 43 item 3): each must cost
// about what an ordinary input of its size costs. The bounds are generous (ten times and more
// above the time the linear code takes on this machine), never tight timers.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Maintainer, Session } from 'ctxfold';

const summarize = async () => 'summary';

function session() {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  s.appendMessage({ role: 'user', content: 'hi', timestamp: 1000 }, { now: 1000 });
  return s;
}

/** Milliseconds `f` takes. */
function timed(f) {
  const t = performance.now();
  f();
  return performance.now() - t;
}

test('new Maintainer(): a baseUrl of 100,000 slashes costs no more than a short one', () => {
  // The trailing-slash regex tried every slash as a start and ran to the end: 7 s or more.
  const hostile = `https://example.test${'/'.repeat(100_000)}x`;
  const models = [
    { provider: 'openai', api: 'openai-responses', id: 'gpt-test', contextWindow: 100_000 },
    { provider: 'openai', api: 'azure-openai-responses', id: 'gpt-test', contextWindow: 100_000 },
    { provider: 'openai-codex', api: 'openai-codex-responses', id: 'gpt-test', contextWindow: 100_000 },
    { provider: 'anthropic', api: 'anthropic-messages', id: 'claude-opus-4-6', contextWindow: 100_000 },
  ];
  for (const model of models) {
    const s = session();
    const ms = timed(() => new Maintainer(s, { model: { ...model, baseUrl: hostile }, summarize }));
    assert.ok(ms < 1000, `${model.api}: ${ms.toFixed(0)} ms`);
    // The lanes still read the URL: trailing slashes go, the rest stays.
    const trailing = timed(
      () =>
        new Maintainer(s, { model: { ...model, baseUrl: `https://example.test/v1${'/'.repeat(100_000)}` }, summarize }),
    );
    assert.ok(trailing < 1000, `${model.api} (trailing): ${trailing.toFixed(0)} ms`);
  }
});
