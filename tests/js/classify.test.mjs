// classifyError (issue 39 item 4; spec: compaction §8.2): the core's class of a failed call
// through the package — the fixtures of tests/fixtures/errors/ as a host hands them over
// (status, parsed body), bad input, fromError's `errorClass`, and the Maintainer, which does
// not compact for a rate limit nor for a media rejection (it blocks continuation with a notice).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { classifyError, fromError, isContextOverflow, Maintainer, Session } from 'ctxfold';

const FIXTURES = new URL('../fixtures/errors/', import.meta.url);

test('classifyError: every fixture of every provider gets its class', () => {
  let n = 0;
  for (const file of readdirSync(FIXTURES).filter((f) => f.endsWith('.json'))) {
    const f = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8'));
    for (const c of f.cases) {
      // The parsed body (an object) or its text: the same class.
      // A turn (stop reason, usage, window, delivered) as the host's reply reports it.
      const got =
        c.turn !== undefined
          ? classifyError(c.turn)
          : classifyError({ ...(c.status !== undefined && { status: c.status }), body: c.body });
      assert.deepEqual(got, c.expected, `${file}: ${c.source}`);
      n++;
    }
  }
  assert.ok(n >= 40, `${n} fixtures`);
});

test('classifyError: usage, stop reasons, retry-after and bad input', () => {
  assert.deepEqual(
    classifyError({
      stopReason: 'stop',
      usage: { input: 150_000, cacheRead: 60_000, output: 10 },
      contextWindow: 200_000,
    }),
    { class: 'silent_overflow', inputTokens: 210_000, contextWindow: 200_000 },
  );
  assert.deepEqual(classifyError({ stopReason: 'stop', usage: { input: 1000 }, contextWindow: 200_000 }), {
    class: 'other',
  });
  assert.deepEqual(classifyError({ stopReason: 'length', usage: { input: 1000, output: 0 } }), { class: 'truncated' });
  assert.deepEqual(classifyError({ stopReason: 'length', usage: { input: 1000, output: 50 } }), { class: 'other' });
  assert.deepEqual(classifyError({ status: 429, message: 'Too Many Requests', retryAfter: 2 }), {
    class: 'rate_limit',
    retryAfterMs: 2000,
  });
  // An HTTP date against `now`.
  assert.deepEqual(
    classifyError({ status: 429, retryAfter: 'Sun, 06 Nov 1994 08:49:37 GMT', now: Date.UTC(1994, 10, 6, 8, 49, 30) }),
    { class: 'rate_limit', retryAfterMs: 7000 },
  );
  assert.deepEqual(classifyError({ status: 503 }), { class: 'transient' });
  assert.deepEqual(classifyError({ message: 'fetch failed' }), { class: 'transient' });
  assert.deepEqual(classifyError({ status: 401, body: { error: { type: 'authentication_error' } } }), {
    class: 'auth',
  });
  assert.deepEqual(classifyError({}), { class: 'other' });
  for (const bad of [null, 'text', 42]) {
    assert.throws(() => classifyError(bad), { code: 'E_INVALID_ARGUMENT' });
  }
  assert.throws(() => classifyError({ status: 99 }), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => classifyError({ message: 42 }), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => classifyError({ usage: { input: -1 } }), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => classifyError({ stopReason: 'length', delivered: 'no' }), { code: 'E_INVALID_ARGUMENT' });
  // `delivered` wins over output tokens that were all reasoning.
  assert.deepEqual(classifyError({ stopReason: 'length', usage: { output: 199 }, delivered: false }), {
    class: 'truncated',
  });
  assert.deepEqual(classifyError({ stopReason: 'length', usage: { output: 0 }, delivered: true }), { class: 'other' });
  assert.throws(() => classifyError({ contextWindow: Number.NaN }), { code: 'E_INVALID_ARGUMENT' });
});

test('fromError: the reply carries the class, which is not persisted', () => {
  // openai's APIError for Groq's tokens-per-minute 413: a rate limit, with its retry-after.
  const tpm = Object.assign(
    new Error(
      '413 Request too large for model `llama-3.1-8b-instant` on tokens per minute (TPM): Limit 6000, Requested 12328',
    ),
    {
      status: 413,
      error: {
        message:
          'Request too large for model `llama-3.1-8b-instant` on tokens per minute (TPM): Limit 6000, Requested 12328',
        type: 'tokens',
        code: 'rate_limit_exceeded',
      },
      headers: new Headers({ 'retry-after': '7' }),
    },
  );
  const reply = fromError(tpm);
  assert.deepEqual(reply.errorClass, { class: 'rate_limit', retryAfterMs: 7000 });
  assert.equal(isContextOverflow(reply), false);
  assert.ok(!Object.keys(reply).includes('errorClass'));
  assert.ok(!JSON.stringify(reply).includes('errorClass'));
  // anthropic's APIError: the whole body.
  const over = fromError({
    status: 400,
    error: {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long: 208310 tokens > 200000 maximum' },
    },
  });
  assert.deepEqual(over.errorClass, { class: 'context_overflow', limitTokens: 200_000, requestedTokens: 208_310 });
  const aborted = Object.assign(new Error('Request was aborted.'), { name: 'APIUserAbortError' });
  assert.deepEqual(fromError(aborted).errorClass, { class: 'other' });
});

// ----- the Maintainer ---------------------------------------------------------------------------

const USAGE0 = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
const summarize = async (r) => `summary for ${r.purpose}`;

/** A session of `turns` question-and-answer pairs, the last answer reporting `prompt` tokens. */
function grown(turns, model, prompt) {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  for (let i = 0; i < turns; i++) {
    s.appendMessage({ role: 'user', content: `q${i} ${'word '.repeat(200)}`, timestamp: 1000 + i }, { now: 1000 + i });
    s.appendMessage(
      {
        role: 'assistant',
        content: [{ type: 'text', text: `a${i} ${'word '.repeat(200)}` }],
        provider: model.provider,
        model: model.id,
        usage: i === turns - 1 ? { ...USAGE0, input: prompt, totalTokens: prompt } : USAGE0,
        stopReason: 'stop',
        timestamp: 1000 + i,
      },
      { now: 1000 + i },
    );
  }
  return s;
}

test('Maintainer: a 429 is not compacted, even above the threshold of the last successful turn', async () => {
  const model = {
    provider: 'anthropic',
    id: 'claude-sonnet-4-5',
    contextWindow: 8000,
    maxTokens: 1000,
    input: ['text'],
  };
  const s = grown(6, model, 500);
  const events = [];
  const settings = { reserveTokens: 1000, keepRecentTokens: 1000, methodOrder: ['soft'], midTurnEnabled: false };
  // (Background compaction prepares in the band meanwhile: its events are left out; a commit
  // would show as auto_compaction_* events.)
  const onEvent = (e) => e.type.startsWith('speculation_') || events.push(e);
  const m = new Maintainer(s, { model, summarize, settings, onEvent });
  s.appendMessage({ role: 'user', content: 'next' });
  await m.beforeRequest();
  // A tool call whose usage is over the threshold (8000 - 1000): with mid-turn maintenance off,
  // the tool loop goes on; the next request is refused with a rate limit. Other failures
  // compact on that last successful usage (pi-mono's rule); a rate limit is waited out.
  await m.afterResponse({
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'a' } }],
    provider: model.provider,
    model: model.id,
    stopReason: 'toolUse',
    usage: { input: 7500, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 7510 },
  });
  s.appendMessage({
    role: 'toolResult',
    toolCallId: 'c1',
    toolName: 'read',
    content: [{ type: 'text', text: 'x' }],
    isError: false,
  });
  await m.beforeRequest();
  assert.deepEqual(events, []);
  const limited = fromError(
    {
      status: 429,
      error: {
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: "This request would exceed your account's rate limit. Please try again later.",
        },
      },
    },
    { format: 'anthropic', model },
  );
  assert.equal(limited.errorClass.class, 'rate_limit');
  const out = await m.afterResponse(limited);
  assert.equal(out.next, 'done');
  assert.deepEqual(
    events.map((e) => e.type),
    [],
  );
  m.dispose();
});

test("Maintainer: a media rejection (413, or Anthropic's 400 image limit) blocks continuation with a notice, no compaction", async () => {
  const model = {
    provider: 'anthropic',
    id: 'claude-sonnet-4-5',
    contextWindow: 200_000,
    maxTokens: 1000,
    input: ['text', 'image'],
  };
  const errors = [
    { status: 413, body: 'Payload Too Large: the image attachment is over the limit' },
    {
      status: 400,
      error: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'messages.0.content.2.image.source.base64: image exceeds 5 MB maximum: 15908784 bytes > 5242880 bytes',
        },
      },
    },
  ];
  for (const error of errors) {
    const s = grown(2, model, 900);
    const events = [];
    const m = new Maintainer(s, {
      model,
      summarize,
      settings: { methodOrder: ['soft'] },
      onEvent: (e) => events.push(e),
    });
    s.appendMessage({ role: 'user', content: 'look at this picture' });
    await m.beforeRequest();
    const failed = fromError(error, { format: 'anthropic', model });
    assert.deepEqual(failed.errorClass, { class: 'payload_too_large', kind: 'media' });
    const out = await m.afterResponse(failed);
    assert.equal(out.next, 'done');
    assert.ok(!events.some((e) => e.type === 'auto_compaction_start'), JSON.stringify(events));
    const notice = events.find((e) => e.type === 'notice');
    assert.ok(notice, `${error.status}: ${JSON.stringify(events)}`);
    assert.match(notice.text, /too large/);
    m.dispose();
  }
});
