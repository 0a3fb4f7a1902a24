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

test('lastFramesLeftOut(): the frames a budget left out, as data, whatever the messages say', async () => {
  // The Maintainer read this count back from the summary's notice with a regex, quadratic on
  // a run of digits (and fooled by a user who types the notice): the core gives it as a number.
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  for (let i = 0; i < 60; i++) {
    s.appendMessage(
      { role: 'user', content: `Question ${i}: ${'why is the build slow? '.repeat(60)}`, timestamp: 1000 + i },
      { now: 1000 + i },
    );
    s.appendMessage(
      {
        role: 'assistant',
        content: [{ type: 'text', text: `Answer ${i}: ${'the cache is cold. '.repeat(120)}` }],
        provider: 'anthropic',
        model: 'claude-opus-4-7',
        usage: { input: 1000 * (i + 1), output: 50, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'stop',
        timestamp: 1000 + i,
      },
      { now: 1000 + i },
    );
  }
  const fake = `${'9'.repeat(100_000)} archived image frames could not be included`;
  assert.equal(s.lastFramesLeftOut(), 0, 'before any call');
  const c = await s.compact({
    strategy: 'snapcompact',
    snapcompact: { model: 'claude-opus-4-7', shape: '5x8-bw', frameSize: 256 },
    settings: { keepRecentTokens: 2_000 },
  });
  s.appendMessage({ role: 'user', content: fake, timestamp: 5000 }, { now: 5000 });
  const frames = c.compactionEntry.preserveData.snapcompact.frames.length;
  assert.ok(frames > 2, `${frames} frames`);
  const notice = (messages) => {
    const text = messages[0].content.find((b) => b.type === 'text' && b.text.includes('could not be included'))?.text;
    return text === undefined
      ? 0
      : Number(/(\d+) archived image frames? could not be included/.exec(text.slice(0, 2000))[1]);
  };
  for (const [options, left] of [
    [undefined, 0],
    [{ maxImages: 2 }, frames - 2],
    [{ maxImages: 0 }, frames],
    [{ maxFrameDataBytes: 1 }, frames],
    [{ maxImages: frames }, 0],
  ]) {
    const messages = s.toLlmMessages(options);
    assert.equal(s.lastFramesLeftOut(), left, JSON.stringify(options));
    assert.equal(notice(messages), left, `the notice says so too: ${JSON.stringify(options)}`);
    assert.equal(messages[0].content.filter((b) => b.type === 'image').length, frames - left);
  }
  // Each call sets it anew.
  s.toLlmMessages({ maxImages: 1 });
  assert.equal(s.lastFramesLeftOut(), frames - 1);
});

test('toLlmMessages(): tool-call arguments nested 10,000 deep reach the provider whole, with their result', () => {
  // JSON.parse reads any depth; the core's value parser stops at 128 levels, and such a
  // message became `{}`: its call was lost and its result orphaned.
  const depth = 10_000;
  const args = `${'{"a":['.repeat(depth)}"deep"${']}'.repeat(depth)}`;
  const line = (o) => JSON.stringify(o);
  const header = line({ type: 'session', version: 3, id: 's', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/' });
  const call = `{"type":"message","id":"a","parentId":"u","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"probe","arguments":${args}}],"stopReason":"toolUse"}}`;
  const text = [
    header,
    line({ type: 'message', id: 'u', parentId: null, message: { role: 'user', content: 'go' } }),
    call,
    line({
      type: 'message',
      id: 'r',
      parentId: 'a',
      message: {
        role: 'toolResult',
        toolCallId: 't1',
        toolName: 'probe',
        content: [{ type: 'text', text: 'ok' }],
        isError: false,
      },
    }),
  ].join('\n');
  const s = Session.fromJsonl(text);
  assert.deepEqual(
    s.warnings.map((w) => [w.code, w.line]),
    [['E_INVALID_ENTRY_BODY', 3]],
  );
  const messages = s.toLlmMessages();
  assert.deepEqual(
    messages.map((m) => m.role),
    ['user', 'assistant', 'toolResult'],
  );
  const block = messages[1].content[0];
  assert.equal(block.id, 't1');
  // Whole: 10,000 levels of {a: [...]} around "deep" (walked in a loop: V8's JSON.stringify
  // itself gives up at this depth).
  let at = block.arguments;
  let levels = 0;
  while (typeof at === 'object' && Object.keys(at).join() === 'a' && Array.isArray(at.a) && at.a.length === 1) {
    at = at.a[0];
    levels++;
  }
  assert.deepEqual([levels, at], [depth, 'deep']);
  assert.equal(messages[2].toolCallId, 't1');
  assert.equal(s.toJsonl(), text);
});
