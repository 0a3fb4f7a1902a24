// Every input is checked where it enters (issue 36 items 8 and 11): a message the core would
// not read back as written, a provider's response handed to an append, an empty summary,
// out-of-range counts and times, arguments of the wrong type, freed objects and a throwing
// tokenCounter all fail with a coded Error, and a failed call leaves the session's bytes as
// they were. Each test has a time bound, and the large inputs show the checks are linear.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { billingFamily, frameTokens, Maintainer, providerFrameBudget, providerImageBudget, Session } from 'ctxfold';

const BOUND = { timeout: 20_000 };
const MODEL = { provider: 'anthropic', id: 'claude-test', contextWindow: 8000, maxTokens: 1000, input: ['text'] };

function expectCode(fn, code, check) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    check?.(err);
    return true;
  });
}

async function expectRejects(promise, code, check) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    check?.(err);
    return true;
  });
}

function assistant(text, extra = {}) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
    timestamp: 5,
    ...extra,
  };
}

/** A session of a few turns. */
function small() {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000, ids: 'deterministic' });
  for (let i = 0; i < 4; i++) {
    s.appendMessage({ role: 'user', content: `question ${i} ${'word '.repeat(200)}`, timestamp: i }, { now: 1000 + i });
    s.appendMessage(assistant(`answer ${i} ${'word '.repeat(200)}`), { now: 1000 + i });
  }
  return s;
}

/** Every read of the session works (what an accepted append must keep true). */
function readsWork(s) {
  s.buildContext();
  s.toLlmMessages();
  for (const format of ['pi', 'openai-chat', 'anthropic', 'openai-responses', 'gemini']) s.toMessages({ format });
}

/** `fn(session)` throws `code` and the session's bytes and reads are as they were. */
function refusedUnchanged(fn, code, check) {
  const s = small();
  const before = s.toJsonl();
  expectCode(() => fn(s), code, check);
  assert.equal(s.toJsonl(), before, 'the session is byte-identical');
  readsWork(s);
}

const CHAT_COMPLETION = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-4o',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
};
const CHAT_MESSAGE = {
  role: 'assistant',
  content: 'Let me look.',
  tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } }],
};
const ANTHROPIC_RESPONSE = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-test',
  content: [{ type: 'text', text: 'Hi' }],
  stop_reason: 'end_turn',
  usage: { input_tokens: 10, output_tokens: 2 },
};

test('appendMessage refuses malformed messages, naming the field; the session is unchanged', BOUND, () => {
  const cases = [
    [{ role: 'user', content: 42 }, 'content'],
    [{ role: 'user', content: null }, 'content'],
    [{ role: 'user' }, 'content'],
    [{ role: 'robot' }, 'role'],
    [{ content: 'no role' }, 'role'],
    [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text' }] }, 'content[1].text'],
    [{ role: 'user', content: [null] }, 'content[0]'],
    [{ role: 'assistant', content: 'text' }, 'content'],
    [{ role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'n', input: {} }] }, 'content[0].type'],
    [
      { role: 'assistant', content: [{ type: 'toolCall', id: 'x', name: 'n', arguments: '{}' }] },
      'content[0].arguments',
    ],
    [{ role: 'toolResult', content: 'out' }, 'toolCallId'],
    [{ role: 'user', content: 'x', timestamp: 'yesterday' }, 'timestamp'],
    [null, ''],
    ['text', ''],
  ];
  for (const [message, field] of cases) {
    refusedUnchanged(
      (s) => s.appendMessage(message),
      'E_INVALID_MESSAGE',
      (err) => {
        assert.equal(err.field, field, `${JSON.stringify(message)}: ${err.message}`);
        if (field !== '') assert.ok(err.message.includes(`${field}:`), err.message);
      },
    );
  }
  // `append` of a message entry is checked the same way.
  refusedUnchanged((s) => s.append('message', { message: { role: 'user', content: 42 } }), 'E_INVALID_MESSAGE');
});

test('appendMessage accepts what every read reads back as written, unknown members included', BOUND, () => {
  const s = small();
  const message = {
    role: 'user',
    content: [{ type: 'text', text: 'hi', extra: [1, { deep: null }] }],
    timestamp: 7,
    steering: true,
    somethingOfAnotherApp: { kept: 'as is' },
  };
  const id = s.appendMessage(message, { now: 2000 });
  assert.deepEqual(s.entry(id).message, message);
  readsWork(s);
  const last = s.toMessages().messages.at(-1);
  assert.deepEqual(last.content, message.content);
});

test('provider responses are refused with a hint naming the format reader', BOUND, () => {
  for (const [response, hint] of [
    [CHAT_COMPLETION, /ChatCompletion.*format: 'openai-chat'/],
    [CHAT_MESSAGE, /format: 'openai-chat'/],
    [ANTHROPIC_RESPONSE, /Anthropic.*format: 'anthropic'/],
    [
      { id: 'resp_1', object: 'response', output: [{ type: 'message', role: 'assistant', content: [] }] },
      /openai-responses/,
    ],
  ]) {
    refusedUnchanged(
      (s) => s.appendMessage(response),
      'E_INVALID_MESSAGE',
      (err) => assert.match(err.message, hint),
    );
  }
});

test('Maintainer.afterResponse refuses what is not an assistant message; nothing changes', BOUND, async () => {
  for (const [reply, hint] of [
    [{ foo: 1 }, /content/],
    [CHAT_COMPLETION, /openai-chat/],
    [CHAT_MESSAGE, /openai-chat/],
    [ANTHROPIC_RESPONSE, /anthropic/],
    // Usage far beyond any count (it would be appended, then refused), and one that wraps.
    [assistant('big', { usage: { input: 1e20, output: 0, cacheRead: 0, cacheWrite: 0 } }), /usage\.input/],
    [assistant('wrap', { usage: { input: 2 ** 64 - 1, output: 4, cacheRead: 0, cacheWrite: 0 } }), /usage\.input/],
    [assistant('negative', { usage: { input: -5, output: 0 } }), /usage\.input/],
  ]) {
    const s = small();
    const m = new Maintainer(s, { model: MODEL, summarize: async () => 'summary', now: () => 5000 });
    const before = s.toJsonl();
    const tokensBefore = s.contextTokens();
    await expectRejects(m.afterResponse(reply), 'E_INVALID_MESSAGE', (err) => assert.match(err.message, hint));
    assert.equal(s.toJsonl(), before);
    assert.deepEqual(s.contextTokens(), tokensBefore);
    // The Maintainer goes on as if the call had not been made.
    const r = await m.afterResponse(assistant('fine'));
    assert.equal(r.next, 'done');
  }
});

test('appendMessages and fromMessages are all or nothing, with the index of the bad message', BOUND, () => {
  const good = { role: 'user', content: 'fine' };
  const s = small();
  const before = s.toJsonl();
  expectCode(
    () => s.appendMessages([good, good, { role: 'user', content: 42 }]),
    'E_INVALID_MESSAGE',
    (err) => {
      assert.equal(err.index, 2);
      assert.equal(err.field, 'content');
    },
  );
  assert.equal(s.toJsonl(), before);
  expectCode(
    () => Session.fromMessages([good, { role: 'robot', content: 'beep' }]),
    'E_INVALID_MESSAGE',
    (err) => assert.equal(err.index, 1),
  );
  // A cycle is a malformed message too, not a TypeError.
  const circular = { role: 'user', content: 'x' };
  circular.self = circular;
  expectCode(() => s.appendMessages([good, circular]), 'E_INVALID_MESSAGE');
  expectCode(() => s.appendMessage(circular), 'E_INVALID_MESSAGE');
  expectCode(() => Session.fromMessages([circular]), 'E_INVALID_MESSAGE');
  assert.equal(s.toJsonl(), before);
});

test('an empty summary is refused by plan.answer and commitNavigation', BOUND, () => {
  const s = small();
  const before = s.toJsonl();
  const plan = s.planCompaction({ keepRecentTokens: 300, reserveTokens: 100 });
  const [req] = plan.pending;
  for (const empty of ['', '   \n']) expectCode(() => plan.answer(req.id, empty), 'E_SUMMARIZER');
  assert.equal(plan.isComplete, false);
  assert.equal(s.toJsonl(), before);

  const ids = s.index().map((e) => e.id);
  const nav = s.planNavigation(ids[1], { summarize: true });
  assert.equal(nav.pending.length, 1);
  expectCode(() => s.commitNavigation(nav, { summary: '' }), 'E_SUMMARIZER');
  assert.equal(s.toJsonl(), before);
  // The same plan still commits with a real summary.
  s.commitNavigation(nav, { summary: 'We tried something else.' });
  assert.notEqual(s.toJsonl(), before);
});

test('a number where an optional string goes is E_INVALID_ARGUMENT, not a wasm trap', BOUND, () => {
  expectCode(() => billingFamily(5), 'E_INVALID_ARGUMENT');
  expectCode(() => billingFamily({}), 'E_INVALID_ARGUMENT');
  expectCode(() => frameTokens(5, 1024), 'E_INVALID_ARGUMENT');
  expectCode(() => providerImageBudget('openai', 5), 'E_INVALID_ARGUMENT');
  expectCode(() => providerFrameBudget('openai', 5), 'E_INVALID_ARGUMENT');
  const s = small();
  const ids = s.index().map((e) => e.id);
  const nav = s.planNavigation(ids[1], { summarize: true });
  expectCode(() => nav.setInstructions({ customInstructions: 5 }), 'E_INVALID_ARGUMENT');
  expectCode(() => nav.setInstructions({ label: 5 }), 'E_INVALID_ARGUMENT');
  // The module still works after each refusal.
  assert.equal(billingFamily('anthropic-messages'), 'anthropic');
  assert.equal(typeof frameTokens(undefined, 1024), 'number');
  nav.setInstructions({ customInstructions: 'Only the files.', label: 'x' });
  assert.match(nav.pending[0].prompt, /Only the files\./);
});

test('freed sessions and plans throw E_FREED', BOUND, () => {
  const s = small();
  const plan = s.planCompaction({ keepRecentTokens: 300, reserveTokens: 100 });
  plan.free();
  expectCode(() => plan.pending, 'E_FREED');
  expectCode(() => plan.answer('x', 'y'), 'E_FREED');
  plan.free(); // a second free is harmless

  const t = small();
  const ids = t.index().map((e) => e.id);
  const nav = t.planNavigation(ids[1]);
  t.free();
  expectCode(() => t.size, 'E_FREED');
  expectCode(() => t.appendMessage({ role: 'user', content: 'x' }), 'E_FREED');
  expectCode(() => t.toJsonl(), 'E_FREED');
  expectCode(() => nav.preparation, 'E_FREED');
  t.free();
});

test('a throwing tokenCounter gives E_TOKEN_COUNTER with the cause', BOUND, async () => {
  const s = small();
  const boom = new Error('tokenizer crashed');
  const m = new Maintainer(s, {
    model: MODEL,
    summarize: async () => 'summary',
    tokenCounter: () => {
      throw boom;
    },
  });
  await expectRejects(m.beforeRequest({ systemPrompt: 'sys' }), 'E_TOKEN_COUNTER', (err) => {
    assert.equal(err.cause, boom);
    assert.match(err.message, /tokenizer crashed/);
  });
});

test('new Maintainer refuses a contextWindow or maxTokens that is not a count', BOUND, () => {
  const s = small();
  for (const bad of [
    { contextWindow: Number.NaN },
    { contextWindow: -1 },
    { contextWindow: Number.POSITIVE_INFINITY },
    { contextWindow: 0 },
    { contextWindow: '8000' },
    { maxTokens: Number.NaN },
    { maxTokens: -5 },
    { maxTokens: Number.POSITIVE_INFINITY },
  ]) {
    expectCode(
      () => new Maintainer(s, { model: { ...MODEL, ...bad }, summarize: async () => '' }),
      'E_INVALID_ARGUMENT',
      (err) => assert.match(err.message, new RegExp(Object.keys(bad)[0])),
    );
  }
});

test('`now` outside the Date range is refused; at its ends the timestamps read back', BOUND, () => {
  for (const now of [8.64e15 + 1, -8.64e15 - 1, 1e300]) {
    refusedUnchanged((s) => s.appendMessage({ role: 'user', content: 'x' }, { now }), 'E_INVALID_ARGUMENT');
    expectCode(() => Session.create({ now }), 'E_INVALID_ARGUMENT');
  }
  for (const now of [8.64e15, -8.64e15, 253_402_300_800_000, -62_198_755_200_000]) {
    const s = Session.create({ now });
    assert.equal(Date.parse(s.header.timestamp), now, s.header.timestamp);
    const id = s.appendMessage({ role: 'user', content: 'x' }, { now });
    assert.equal(Date.parse(s.entry(id).timestamp), now, s.entry(id).timestamp);
  }
});

test('the checks are linear: a large message is accepted or refused in bounded time', BOUND, () => {
  const n = 200_000;
  const blocks = Array.from({ length: n }, (_, i) => ({ type: 'text', text: `b${i}` }));
  const s = Session.create({ now: 1 });
  const start = performance.now();
  s.appendMessage({ role: 'user', content: blocks });
  blocks.push({ type: 'text', text: 5 });
  const before = s.toJsonl();
  expectCode(
    () => s.appendMessage({ role: 'user', content: blocks }),
    'E_INVALID_MESSAGE',
    (err) => assert.equal(err.field, `content[${n}].text`),
  );
  assert.equal(s.toJsonl(), before);
  // Nesting in a member the core does not read is kept as it is; nesting beyond what the
  // session's reader takes is a malformed message.
  const nest = (depth) => {
    let v = {};
    for (let i = 0; i < depth; i++) v = { d: v };
    return v;
  };
  const id = s.appendMessage({ role: 'user', content: 'deep', extra: nest(100) });
  assert.deepEqual(s.entry(id).message.extra, nest(100));
  const kept = s.toJsonl();
  expectCode(() => s.appendMessage({ role: 'user', content: 'deep', extra: nest(100_000) }), 'E_INVALID_MESSAGE');
  assert.equal(s.toJsonl(), kept);
  // Generous: each step is a few tens of milliseconds.
  assert.ok(performance.now() - start < 10_000, `took ${performance.now() - start} ms`);
});
