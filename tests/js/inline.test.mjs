// Inline imaging (spec: snapcompact §9.7; issue 20 point 5): InlineImager and the Maintainer's
// `snapcompact.toolResults` / `snapcompact.systemPrompt`. Frames stand in for large old tool
// results and system-prompt text only when they cost the reading model fewer tokens, within the
// provider's image budget, and never rewrite what a warm prompt cache holds.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { frameCount, InlineImager, Maintainer, providerImageBudget, Session } from 'ctxfold';

const GEMINI = { provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', input: ['text', 'image'] };
const CLAUDE = { provider: 'anthropic', id: 'claude-sonnet-4-5', api: 'anthropic-messages', input: ['text', 'image'] };
const NOW = Date.UTC(2026, 11, 3);
const TTL = 5 * 60 * 1000;

/** `n` lines of code-like text: about 11 tokens a line by the core's estimate. */
const code = (n, tag = 'x') =>
  Array.from({ length: n }, (_, i) => `const ${tag}${i} = compute(${i}, "${tag}"); // step ${i}`).join('\n');

const PNG = 'iVBORw0KGgo';
const IMAGE = { type: 'image', data: `${PNG}AAAA`, mimeType: 'image/png' };

function call(id) {
  return {
    role: 'assistant',
    content: [{ type: 'toolCall', id, name: 'read', arguments: { path: `${id}.ts` } }],
    stopReason: 'toolUse',
  };
}

function result(id, text, extra = {}) {
  return {
    role: 'toolResult',
    toolCallId: id,
    toolName: 'read',
    content: [{ type: 'text', text }],
    isError: false,
    ...extra,
  };
}

/** A user prompt, then `results` (tool call id → result message) each after its call. */
function conversation(results) {
  const out = [{ role: 'user', content: 'Read the files and fix the bug.', attribution: 'user' }];
  for (const r of results) out.push(call(r.toolCallId), r);
  return out;
}

const imagedIds = (messages) =>
  messages
    .filter(
      (m) =>
        m.role === 'toolResult' &&
        m.content.some((p) => p.type === 'image' && p.data.startsWith(PNG) && p.data.length > 100),
    )
    .map((m) => m.toolCallId);

test('old large tool results become frames; the newest, errors and small ones stay text; the input is untouched', () => {
  const big = code(800);
  const messages = conversation([
    result('a', big),
    result('b', code(100)), // ~1,100 tokens: under the 3,000-token floor
    result('c', big, { isError: true }),
    result('d', code(800, 'y')),
    result('e', big), // the newest
  ]);
  const before = structuredClone(messages);
  const imager = new InlineImager({ toolResults: true });
  const out = imager.transform({ messages, model: GEMINI, now: NOW });
  assert.deepEqual(messages, before, 'the given messages are not changed');
  assert.deepEqual(imagedIds(out.messages), ['a', 'd']);
  const a = out.messages[2];
  assert.equal(a.content[0].type, 'text');
  assert.match(a.content[0].text, /printed word for word on the image frame/);
  const frames = a.content.slice(1);
  assert.equal(frames.length, frameCount(big, { model: GEMINI }));
  for (const f of frames) {
    assert.equal(f.mimeType, 'image/png');
    assert.ok(Buffer.from(f.data, 'base64').subarray(1, 4).toString() === 'PNG');
  }
  assert.equal(out.messages[4], messages[4], 'unchanged messages are passed through');
  assert.equal(out.report.toolResults.length, 2);
  for (const r of out.report.toolResults) {
    assert.ok(r.imageTokens <= 0.9 * r.textTokens, JSON.stringify(r));
    assert.equal(r.savedTokens, r.textTokens - r.imageTokens);
  }
  assert.equal(
    out.report.savedTokens,
    out.report.toolResults.reduce((n, r) => n + r.savedTokens, 0),
  );
  // The same request again gets the same bytes (the frames are kept per tool call).
  const again = imager.transform({ messages, model: GEMINI, now: NOW + 1000 });
  assert.deepEqual(again.messages, out.messages);
});

test('a result that carries images stays text (spec: snapcompact §9.7)', () => {
  const messages = conversation([
    result('a', '', { content: [{ type: 'text', text: code(800) }, IMAGE] }),
    result('b', code(800, 'b')),
    result('c', 'newest'),
  ]);
  const out = new InlineImager({ toolResults: true }).transform({ messages, model: GEMINI, now: NOW });
  assert.equal(out.messages[2], messages[2]);
  assert.deepEqual(imagedIds(out.messages), ['b']);
});

test('nothing changes for a text-only model, without budget, or when frames would not save', () => {
  const messages = conversation([result('a', code(800)), result('b', 'newest')]);
  const imager = new InlineImager({ toolResults: true });
  const textOnly = imager.transform({ messages, model: { ...GEMINI, input: ['text'] }, now: NOW });
  assert.equal(textOnly.messages, messages);
  // The budget is spent by the images the request already holds.
  const full = [...messages];
  full[0] = { ...full[0], content: [{ type: 'text', text: 'look' }, ...Array(200).fill(IMAGE)] };
  assert.equal(imager.transform({ messages: full, model: GEMINI, now: NOW }).messages, full);
  // Claude's frames cost more than the core's (low) estimate of code: text stays text.
  const claude = new InlineImager({ toolResults: true }).transform({ messages, model: CLAUDE, now: NOW });
  assert.equal(claude.messages, messages);
  assert.deepEqual(claude.report.toolResults, []);
  // A real tokenizer's count (here ×1.5) shows the savings.
  const counted = new InlineImager({ toolResults: true, countTextTokens: (t) => Math.ceil(t.length / 2.6) });
  assert.deepEqual(imagedIds(counted.transform({ messages, model: CLAUDE, now: NOW }).messages), ['a']);
});

test('the savings are priced for the reading model, not the gateway that carries the request', () => {
  const text = code(800);
  const messages = conversation([result('a', text), result('b', 'newest')]);
  const frames = frameCount(text, { model: { id: 'anthropic/claude-sonnet-4.5', api: 'openai-completions' } });
  // Tokens between the gateway's price (2,882 a frame, OpenAI's) and Claude's (3,293) / 0.9.
  const tokens = frames * 3400;
  const imager = () => new InlineImager({ toolResults: true, countTextTokens: (t) => (t === text ? tokens : 1) });
  const viaRouter = {
    provider: 'openrouter',
    id: 'anthropic/claude-sonnet-4.5',
    api: 'openai-completions',
    input: ['text', 'image'],
  };
  assert.ok(frames * 2882 <= 0.9 * tokens && frames * 3293 > 0.9 * tokens);
  assert.deepEqual(imager().transform({ messages, model: viaRouter, now: NOW }).report.toolResults, []);
  const gpt = { ...viaRouter, id: 'openai/gpt-5.1' };
  assert.deepEqual(imagedIds(imager().transform({ messages, model: gpt, now: NOW }).messages), ['a']);
});

test('the provider’s image budget holds: oldest results first, a too-large one passed over', () => {
  const results = [result('r0', code(5000))]; // more frames than the budget
  for (let i = 1; i < 12; i++) results.push(result(`r${i}`, code(800, `t${i}`)));
  const messages = conversation(results);
  const router = { ...GEMINI, provider: 'openrouter', api: 'openai-completions' };
  const budget = providerImageBudget('openrouter', router.api);
  assert.equal(budget, 8);
  const out = new InlineImager({ toolResults: true }).transform({ messages, model: router, now: NOW });
  const images = out.messages
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((p) => p.type === 'image');
  assert.ok(frameCount(code(5000), { model: router }) > budget);
  assert.equal(images.length, budget, 'the budget filled');
  assert.deepEqual(imagedIds(out.messages), ['r1', 'r2', 'r3', 'r4'], 'r0 passed over, then the oldest first');
});

test('system prompt: `all` sends it as frames at the first user message; `agents-md` only its context-file sections', () => {
  const rules = `<repo-rules>\n${code(700, 'rule')}\n</repo-rules>`;
  const prompt = `You are a coding agent.\n\n${rules}\n\nBe brief.`;
  const messages = conversation([result('a', 'small'), result('b', 'newest')]);
  const all = new InlineImager({ systemPrompt: 'all' }).transform({
    messages,
    systemPrompt: prompt,
    model: GEMINI,
    now: NOW,
  });
  assert.match(all.systemPrompt, /operating instructions are printed on the image frame/);
  const first = all.messages[0].content;
  assert.match(first[0].text, /Your system prompt, printed/);
  assert.equal(first.at(-1).text, messages[0].content, 'the user’s text follows the frames');
  assert.equal(all.report.systemPrompt.scope, 'all');
  assert.equal(first.length - 2, all.report.systemPrompt.frames);

  const blocks = [
    'You are a coding agent.',
    `## Context\n<instructions>\n${code(700, 'agents')}\n</instructions>`,
    rules,
  ];
  const md = new InlineImager({ systemPrompt: 'agents-md' }).transform({
    messages,
    systemPrompt: blocks,
    model: GEMINI,
    now: NOW,
  });
  assert.equal(md.systemPrompt.length, 3, 'blocks stay blocks');
  assert.equal(md.systemPrompt[0], blocks[0]);
  for (const b of md.systemPrompt.slice(1)) assert.match(b, /^\[The context-file instructions that belong here/);
  assert.equal(md.report.systemPrompt.scope, 'agents-md');
  // No context-file section: nothing to image.
  const none = new InlineImager({ systemPrompt: 'agents-md' }).transform({
    messages,
    systemPrompt: 'Just a prompt.',
    model: GEMINI,
    now: NOW,
  });
  assert.equal(none.systemPrompt, 'Just a prompt.');
  assert.equal(none.messages, messages);
  // No user message to carry the frames: the prompt stays text.
  const noUser = new InlineImager({ systemPrompt: 'all' }).transform({
    messages: messages.slice(1),
    systemPrompt: prompt,
    model: GEMINI,
    now: NOW,
  });
  assert.equal(noUser.systemPrompt, prompt);
});

test('a warm prompt cache keeps what it holds: text stays text until the cache is cold; frames stay frames', () => {
  const imager = new InlineImager({ toolResults: true, systemPrompt: 'all' });
  const prompt = `You are a coding agent. ${code(700, 'sys')}`;
  // Request 1 has a small budget: OpenRouter's 8 images, 6 taken by the user's images.
  const user = { role: 'user', content: [{ type: 'text', text: 'Look at these.' }, ...Array(6).fill(IMAGE)] };
  const router = { ...GEMINI, provider: 'openrouter', api: 'openai-completions' };
  const m1 = [
    user,
    call('a'),
    result('a', code(800, 'a')),
    call('b'),
    result('b', code(800, 'b')),
    call('c'),
    result('c', 'newest'),
  ];
  const r1 = imager.transform({ messages: m1, systemPrompt: prompt, model: router, now: NOW });
  assert.deepEqual(imagedIds(r1.messages), ['a'], 'two frames left: the oldest result');
  assert.equal(r1.report.toolResults[0].frames, 2);
  assert.equal(r1.systemPrompt, prompt);
  // Request 2, a minute later, without the user's images (the host dropped them): the budget
  // would fit `b` and the prompt, but both were sent as text into the cached prefix.
  const m2 = [
    { role: 'user', content: [{ type: 'text', text: 'Look at these.' }] },
    ...m1.slice(1),
    call('d'),
    result('d', 'newest'),
  ];
  const r2 = imager.transform({ messages: m2, systemPrompt: prompt, model: router, now: NOW + 60_000 });
  assert.deepEqual(imagedIds(r2.messages), ['a'], '`a` keeps its frames, `b` its text; `c` was small');
  assert.equal(r2.systemPrompt, prompt);
  assert.equal(r2.report.keptForCache, 2, 'b and the prompt stayed text for the cache');
  assert.deepEqual(r2.messages[2], r1.messages[2], 'the same frames, byte for byte');
  // Past the cache's lifetime everything is chosen afresh.
  const r3 = imager.transform({ messages: m2, systemPrompt: prompt, model: router, now: NOW + 60_000 + TTL });
  assert.deepEqual(imagedIds(r3.messages), ['a', 'b']);
  assert.notEqual(r3.systemPrompt, prompt);
  assert.equal(r3.report.keptForCache, 0);
});

test('a request sent all as text (no budget left) is what the next one’s cache holds', () => {
  const imager = new InlineImager({ toolResults: true });
  const m1 = conversation([result('a', code(800, 'a')), result('b', 'newest')]);
  assert.deepEqual(imagedIds(imager.transform({ messages: m1, model: GEMINI, now: NOW }).messages), ['a']);
  // The host's own images fill the budget: `a` goes as text this time.
  const crowded = [
    { ...m1[0], content: [{ type: 'text', text: m1[0].content }, ...Array(200).fill(IMAGE)] },
    ...m1.slice(1),
  ];
  const full = imager.transform({ messages: crowded, model: GEMINI, now: NOW + 1000 });
  assert.deepEqual(imagedIds(full.messages), []);
  // Warm again with room: the cache holds `a` as text, so text it stays.
  const m3 = [
    { ...m1[0], content: [{ type: 'text', text: m1[0].content }] },
    ...m1.slice(1),
    call('c'),
    result('c', 'x'),
  ];
  const warmAgain = imager.transform({ messages: m3, model: GEMINI, now: NOW + 2000 });
  assert.deepEqual(imagedIds(warmAgain.messages), []);
  assert.equal(warmAgain.report.keptForCache, 1);
});

test('the newest result of the previous request may change form: it sits at the end of the cached prefix', () => {
  const imager = new InlineImager({ toolResults: true });
  const m1 = conversation([result('a', code(800, 'a'))]);
  assert.deepEqual(imagedIds(imager.transform({ messages: m1, model: GEMINI, now: NOW }).messages), []);
  const m2 = [...m1, call('b'), result('b', 'newest')];
  const r2 = imager.transform({ messages: m2, model: GEMINI, now: NOW + 1000 });
  assert.deepEqual(imagedIds(r2.messages), ['a']);
  assert.equal(r2.report.keptForCache, 0);
  // A compaction (a new first message) makes the whole prefix new.
  const compacted = [{ role: 'user', content: [{ type: 'text', text: 'Summary…' }] }, ...m2.slice(1)];
  assert.deepEqual(imagedIds(imager.transform({ messages: compacted, model: GEMINI, now: NOW + 2000 }).messages), [
    'a',
  ]);
});

test('a clock that is not a date is E_INVALID_ARGUMENT', () => {
  const imager = new InlineImager({ toolResults: true });
  for (const now of [Number.NaN, Number.POSITIVE_INFINITY, 9e15]) {
    assert.throws(
      () => imager.transform({ messages: [], model: { id: 'claude-sonnet-4-5', input: ['text', 'image'] }, now }),
      {
        code: 'E_INVALID_ARGUMENT',
      },
    );
  }
});

test('bad options and arguments are coded errors', () => {
  const code_ = (fn) => {
    try {
      fn();
    } catch (err) {
      return err.code;
    }
    return 'no error';
  };
  assert.equal(
    code_(() => new InlineImager({ systemPrompt: 'agents' })),
    'E_SETTINGS',
  );
  assert.equal(
    code_(() => new InlineImager({ toolResults: 'yes' })),
    'E_SETTINGS',
  );
  assert.equal(
    code_(() => new InlineImager({ cacheTtlMs: -1 })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    code_(() => new InlineImager({ countTextTokens: 3 })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    code_(() => new InlineImager(5)),
    'E_INVALID_ARGUMENT',
  );
  const imager = new InlineImager({ toolResults: true, countTextTokens: () => Number.NaN });
  const messages = conversation([result('a', code(800)), result('b', 'x')]);
  assert.equal(
    code_(() => imager.transform({ messages, model: GEMINI })),
    'E_INVALID_ARGUMENT',
  );
  const ok = new InlineImager({ toolResults: true });
  assert.equal(
    code_(() => ok.transform({ messages: 'no', model: GEMINI })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    code_(() => ok.transform({ messages, model: {} })),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    code_(() => ok.transform({ messages, model: GEMINI, systemPrompt: 5 })),
    'E_INVALID_ARGUMENT',
  );
});

test('Maintainer: snapcompact.toolResults and systemPrompt image the request; the session keeps its text', async () => {
  const session = Session.create({ ids: 'deterministic', now: NOW });
  session.appendMessage({ role: 'user', content: 'Read the files.' }, { now: NOW });
  for (const id of ['a', 'b']) {
    session.appendMessage({ ...call(id), provider: 'google', model: GEMINI.id }, { now: NOW });
    session.appendMessage(result(id, code(800, id)), { now: NOW });
  }
  const bytes = session.toJsonl();
  const maintainer = new Maintainer(session, {
    model: { ...GEMINI, contextWindow: 1_000_000, maxTokens: 8000 },
    settings: { snapcompact: { toolResults: true, systemPrompt: 'all' } },
    now: () => NOW,
  });
  const prompt = `You are a coding agent. ${code(700, 'sys')}`;
  const r = await maintainer.beforeRequest({ systemPrompt: prompt });
  assert.deepEqual(imagedIds(r.messages), ['a']);
  assert.match(r.systemPrompt, /operating instructions are printed/);
  assert.equal(r.inline.toolResults[0].toolCallId, 'a');
  assert.ok(r.inline.savedTokens > 0);
  assert.equal(session.toJsonl(), bytes, 'imaging is per request: the session file is unchanged');
  // Off by default: the request is the session's text.
  const plain = new Maintainer(session, { model: { ...GEMINI, contextWindow: 1_000_000, maxTokens: 8000 } });
  const p = await plain.beforeRequest({ systemPrompt: prompt });
  assert.deepEqual(imagedIds(p.messages), []);
  assert.equal(p.systemPrompt, prompt);
  assert.equal(p.inline, undefined);
  maintainer.dispose();
  plain.dispose();
});
