// Token counting of the Maintainer (issue 21 point 3): a host's `tokenCounter`, the cap for huge
// messages, the calibration from reported usage that keeps a tool loop whose provider counts
// 1.6× the local estimate from overflowing, and the windows the core measures (what a
// compaction keeps, what the prunes spare) in the host's tokens.
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

// ----- text and images apart -------------------------------------------------------------------

const VISION = { ...MODEL, id: 'claude-vision', contextWindow: 400_000, input: ['text', 'image'] };
const PIXELS = { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' };

/** A provider whose tokenizer counts `factor` × chars/4 of text and that bills `perImage` tokens an image, whatever the factor. */
function billed(messages, factor, perImage) {
  let images = 0;
  for (const m of messages) if (Array.isArray(m.content)) for (const b of m.content) if (b.type === 'image') images++;
  return Math.ceil((factor * chars(messages)) / 4) + images * perImage;
}

/** A reply to the last request, reported as `input` prompt tokens. */
const reply = (input, extra = {}) => ({
  role: 'assistant',
  content: [{ type: 'text', text: 'Seen.' }],
  provider: VISION.provider,
  model: VISION.id,
  usage: { input, output: 5, cacheRead: 0, cacheWrite: 0 },
  stopReason: 'stop',
  timestamp: 1,
  ...extra,
});

test('calibration: a context of 20 images under growing text at a 2× provider learns 2 for the text, and the images at their own rate', async () => {
  const session = Session.create({ cwd: '/w', now: 1 });
  session.appendMessage({
    role: 'user',
    content: [{ type: 'text', text: 'Compare these.' }, ...Array(20).fill(PIXELS)],
  });
  // 24,000 estimated tokens of images (1,200 each) that the provider bills 1,600 each, and
  // text it counts twice: one ratio over the request would come out between 1.3 and 1.7.
  const m = new Maintainer(session, { model: VISION, settings: { strategy: 'off' }, now: () => 1_000_000 });
  let predicted;
  let actual;
  for (let step = 0; step < 8; step++) {
    m.session.appendMessage({
      role: 'user',
      content: `step ${step} ${'const a = b + c; // code\n'.repeat(80 * (step + 1))}`,
    });
    const { messages, tokens } = await m.beforeRequest();
    predicted = tokens;
    actual = billed(messages, 2, 1_600);
    await m.afterResponse(reply(actual));
  }
  const { ratio, imageRate, samples } = m.calibration[`${VISION.provider}/${VISION.id}`];
  assert.ok(Math.abs(ratio - 2) < 0.02, `text ratio ${ratio}`);
  assert.ok(Math.abs(imageRate - 1_600 / 1_200) < 0.05, `image rate ${imageRate}`);
  assert.equal(samples, 8);
  // The calibrated figure of a request follows what the provider bills for it.
  assert.ok(Math.abs(predicted - actual) < 0.02 * actual, `predicted ${predicted}, billed ${actual}`);
  m.session.appendMessage({ role: 'user', content: 'x'.repeat(40_000) });
  const { messages, tokens } = await m.beforeRequest();
  const next = billed(messages, 2, 1_600);
  assert.ok(Math.abs(tokens - next) < 0.02 * next, `predicted ${tokens}, billed ${next}`);
});

test('calibration: without a compaction the first message’s image is an image, whoever wrote it, not a frame', async () => {
  // The core tells the frames of a view (its compaction summary's images) from other images;
  // an agent-attributed first message is not a summary. 2,000 tokens of text billed twice and
  // an image billed at its estimate teach a text ratio of 2.
  for (const attribution of ['user', 'agent']) {
    const session = Session.create({ cwd: '/w', now: 1 });
    session.appendMessage({
      role: 'user',
      attribution,
      content: [{ type: 'text', text: 'let x = 1;\n'.repeat(800) }, PIXELS],
    });
    const m = new Maintainer(session, { model: VISION, settings: { strategy: 'off' }, now: () => 1_000_000 });
    const { messages } = await m.beforeRequest();
    await m.afterResponse(reply(billed(messages, 2, 1_200)));
    const { ratio } = m.calibration[`${VISION.provider}/${VISION.id}`];
    assert.ok(Math.abs(ratio - 2) < 0.02, `${attribution}: text ratio ${ratio}`);
  }
});

test('calibration: a request that is nearly all images, billed below their estimate, teaches no text ratio', async () => {
  const session = Session.create({ cwd: '/w', now: 1 });
  session.appendMessage({
    role: 'user',
    content: [{ type: 'text', text: 'Read the frames.' }, ...Array(40).fill(PIXELS)],
  });
  const m = new Maintainer(session, { model: VISION, settings: { strategy: 'off' }, now: () => 1_000_000 });
  // 48,000 estimated tokens of images billed 400 each: 16,000, a third of their estimate.
  const first = await m.beforeRequest();
  await m.afterResponse(reply(billed(first.messages, 2, 400)));
  const key = `${VISION.provider}/${VISION.id}`;
  assert.deepEqual(m.calibration[key], { ratio: 1, imageRate: 1, samples: 1 });
  // With text beside the same images, the two are told apart.
  m.session.appendMessage({ role: 'user', content: 'let x = 1;\n'.repeat(1_200) });
  const second = await m.beforeRequest();
  await m.afterResponse(reply(billed(second.messages, 2, 400)));
  const { ratio, imageRate } = m.calibration[key];
  assert.ok(Math.abs(ratio - 2) < 0.02, `text ratio ${ratio}`);
  assert.ok(Math.abs(imageRate - 400 / 1_200) < 0.02, `image rate ${imageRate}`);
});

test('tokenCounter: the host counts the request, each message once', async () => {
  const seen = [];
  const tokenCounter = (m) => {
    if (m.role !== 'system') seen.push(JSON.stringify(m));
    return Math.ceil((1.6 * chars([m])) / 4) + 4;
  };
  const r = await toolLoop({ factor: 1.6, steps: 30, tokenCounter, calibrate: false });
  assert.equal(r.overflows, 0, 'a counter that agrees with the provider prevents the overflow');
  // Each message counted once, however many requests counted it: the loop appended 61
  // messages; a shake or a compaction makes new ones (a shaken result, a summary), each
  // counted once too (the system prompt is counted as text, not memoized apart).
  const distinct = new Set(seen).size;
  assert.equal(seen.length, distinct, `${seen.length} counts for ${distinct} distinct messages over 30 requests`);
  assert.ok(distinct >= 61, `${distinct} distinct messages counted`);
  const { tokens } = await r.maintainer.beforeRequest({ systemPrompt: 'You are a test agent.' });
  const expected =
    r.maintainer.session.toLlmMessages().reduce((n, m) => n + tokenCounter(m), 0) +
    tokenCounter({ role: 'system', content: 'You are a test agent.' });
  assert.equal(tokens, expected);
});

test('tokenCounter: two messages alike in role, length and every sampled character are counted apart', async () => {
  // 1,280 characters: a sample every 10th. The two differ only at position 5, and in an image.
  const plain = 'a'.repeat(1_280);
  const marked = `${plain.slice(0, 5)}Z${plain.slice(6)}`;
  const tokenCounter = (m) => {
    const text = typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('');
    const images = Array.isArray(m.content) ? m.content.filter((b) => b.type === 'image').length : 0;
    return 10 + 1_000 * text.split('Z').length - 1_000 + 7_000 * images;
  };
  const session = Session.create({ cwd: '/w', now: 1 });
  session.appendMessage({ role: 'user', content: plain }, { now: 1 });
  session.appendMessage({ role: 'user', content: marked }, { now: 2 });
  const m = new Maintainer(session, { model: MODEL, tokenCounter, calibrate: false });
  const { tokens } = await m.beforeRequest();
  assert.equal(tokens, 10 + 1_010);
  // The same text with an image: the counter is asked again, not answered from the memo.
  const image = { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' };
  m.session.appendMessage({ role: 'user', content: [{ type: 'text', text: plain }, image] }, { now: 3 });
  const vision = new Maintainer(m.session, { model: { ...MODEL, input: ['text', 'image'] }, tokenCounter });
  await vision.beforeRequest();
  const again = await vision.beforeRequest();
  assert.equal(again.tokens, 10 + 1_010 + 7_010);
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

test('calibration: only a reply that answered the request teaches its model (the core decides)', async () => {
  for (const bad of [Number.NaN, 999, '5000', null]) {
    assert.throws(() => new Maintainer(Session.create(), { model: MODEL, maxCountChars: bad }), {
      code: 'E_INVALID_ARGUMENT',
    });
  }
  const m = new Maintainer(Session.create({ cwd: '/w', now: 1 }), { model: MODEL });
  const reply = (tokens, extra) => ({
    role: 'assistant',
    content: [{ type: 'text', text: 'ok' }],
    provider: MODEL.provider,
    model: MODEL.id,
    usage: { input: tokens, output: 5, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'stop',
    ...extra,
  });
  const turn = async (extra) => {
    m.session.appendMessage({ role: 'user', content: 'word '.repeat(4_000) });
    const { tokens } = await m.beforeRequest();
    await m.afterResponse(reply(Math.round(tokens * 1.5), extra));
  };
  // Another model's reply, a failed one, a reply without usage: nothing learnt.
  await turn({ model: 'someone-else' });
  await turn({ stopReason: 'error', errorMessage: 'boom' });
  await turn({ usage: undefined });
  assert.deepEqual(m.calibration, {});
  await turn({});
  const c = m.calibration[`${MODEL.provider}/${MODEL.id}`];
  assert.equal(c.samples, 1);
  assert.ok(Math.abs(c.ratio - 1.5) < 0.01, JSON.stringify(c));
  // A reply twice to one request teaches once.
  await m.afterResponse(reply(50_000, {}));
  assert.equal(m.calibration[`${MODEL.provider}/${MODEL.id}`].samples, 1);
  m.dispose();
});

// ----- the windows the core measures, in the host's tokens ------------------------------------

/** A tokenizer that counts two tokens where the core estimates one (characters / 2 of what it reads). */
const doubled = (m) => Math.ceil(chars([m]) / 2);
const counted = (messages) => messages.reduce((n, m) => n + doubled(m), 0);
const BIG = { provider: 'openai', id: 'gpt-windows', contextWindow: 1_000_000, input: ['text'] };
const NOW = Date.UTC(2026, 11, 6);

/**
 * A history without usage, as OpenAI chat messages bring it: `turns` user/assistant pairs of
 * 800 characters each (200 estimated tokens, 400 counted).
 */
function chatHistory(turns) {
  const text = (tag, i) => `${tag}${String(i).padStart(3, '0')}${'word'.repeat(199)}`;
  const messages = [];
  for (let i = 0; i < turns; i++)
    messages.push({ role: 'user', content: text('q', i) }, { role: 'assistant', content: text('a', i) });
  return Session.fromMessages(messages, { format: 'openai-chat', now: NOW });
}

/** The kept messages after a compaction (what follows the summary), counted by `doubled`. */
function keptCount(session) {
  const kept = session.toLlmMessages().slice(1);
  return { total: counted(kept), largest: Math.max(...kept.map(doubled)) };
}

test("tokenCounter: a compaction keeps keepRecentTokens of the host's tokens when the path has no usage", async () => {
  const keepRecentTokens = 4_000;
  const m = new Maintainer(chatHistory(20), {
    model: BIG,
    settings: { keepRecentTokens },
    summarize: async () => 'Summary.',
    tokenCounter: doubled,
  });
  const { report } = await m.compactNow();
  const { total, largest } = keptCount(m.session);
  // The kept region is the newest run of turns that fits the budget (spec: compaction §4.3).
  assert.ok(total <= keepRecentTokens && total > keepRecentTokens - largest, `kept ${total} counted tokens`);
  assert.equal(report.tokenUnit, 'counted');
  assert.equal(report.tokensAfter, counted(m.session.toLlmMessages()));
  // Without a counter the same budget is the core's estimate: twice the counted tokens.
  const plain = new Maintainer(chatHistory(20), {
    model: BIG,
    settings: { keepRecentTokens },
    summarize: async () => 'Summary.',
  });
  const estimated = await plain.compactNow();
  assert.equal(estimated.report.tokenUnit, 'estimate');
  assert.ok(keptCount(plain.session).total > 1.8 * keepRecentTokens);
});

test('tokenCounter: with usage on the path the core scales keepRecentTokens by it, and the counter does not scale it again', async () => {
  const keepRecentTokens = 3_000;
  const run = async (options) => {
    const session = Session.create({ cwd: '/w', now: 1, ids: 'deterministic' });
    for (let i = 0; i < 20; i++) {
      session.appendMessage({ role: 'user', content: `q${i} ${'word '.repeat(160)}` }, { now: 1 });
      // The provider counted 1.5× the estimate of the request (about 200 tokens a message).
      session.appendMessage(
        {
          role: 'assistant',
          content: [{ type: 'text', text: `a${i} ${'word '.repeat(160)}` }],
          provider: BIG.provider,
          model: BIG.id,
          usage: { input: Math.round(1.5 * 205 * (2 * i + 1)), output: 200, cacheRead: 0, cacheWrite: 0 },
          stopReason: 'stop',
        },
        { now: 1 },
      );
    }
    let prepared;
    const m = new Maintainer(session, {
      model: BIG,
      settings: { keepRecentTokens },
      summarize: async () => 'Summary.',
      hooks: {
        session_before_compact: ({ preparation }) => {
          prepared = preparation;
        },
      },
      ...options,
    });
    await m.compactNow();
    return { keep: prepared.keepRecentTokens, firstKept: prepared.firstKeptEntryId };
  };
  const plain = await run({});
  const withCounter = await run({ tokenCounter: doubled });
  assert.ok(plain.keep < keepRecentTokens * 0.75, `the core adapted the budget to usage (${plain.keep})`);
  assert.deepEqual(withCounter, plain);
});

/** Appends a tool round without usage: the call `id` of `name` with `args`, and its result `text` (with `extra` fields). */
function appendToolRound(session, id, name, args, text, extra = {}) {
  const call = { type: 'toolCall', id, name, arguments: args };
  session.appendMessage({ role: 'assistant', content: [call], stopReason: 'toolUse' }, { now: NOW });
  session.appendMessage(
    { role: 'toolResult', toolCallId: id, toolName: name, content: [{ type: 'text', text }], isError: false, ...extra },
    { now: NOW },
  );
}

/** The model's closing answer (without usage). */
const answer = (text) => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  provider: BIG.provider,
  model: BIG.id,
  stopReason: 'stop',
});

/** A tool loop of `rounds` reads of one file: each read supersedes the one before. */
function rereads(rounds, size) {
  const session = Session.create({ cwd: '/w', now: NOW });
  session.appendMessage({ role: 'user', content: 'Read a.ts, again.' }, { now: NOW });
  for (let i = 0; i < rounds; i++) {
    appendToolRound(session, `c${i}`, 'read', { path: 'a.ts' }, `${String(i).padStart(4, '0')}${'x'.repeat(size - 4)}`);
  }
  return session;
}

/** Counted tokens of the messages after each tool result, by call id. */
function suffixes(session) {
  const messages = session.toLlmMessages();
  const out = new Map();
  let after = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'toolResult') out.set(messages[i].toolCallId, after);
    after += doubled(messages[i]);
  }
  return out;
}

/** Call ids of the tool results a prune replaced by a notice. */
const prunedIds = (session) =>
  session
    .toLlmMessages()
    .filter((m) => m.role === 'toolResult' && /^\[(Superseded|Uneventful)/.test(m.content[0].text))
    .map((m) => m.toolCallId);

test("tokenCounter: the stale pass prunes superseded reads within its 8,000-token tail of the host's tokens", async () => {
  const session = rereads(20, 2_000);
  const suffix = suffixes(session);
  const m = new Maintainer(session, {
    model: BIG,
    settings: { supersedeReads: true },
    tokenCounter: doubled,
    now: () => NOW,
  });
  await m.beforeRequest();
  const pruned = prunedIds(m.session);
  const expected = [...suffix].filter(([id, after]) => id !== 'c19' && after <= 8_000).map(([id]) => id);
  assert.ok(expected.length >= 3);
  assert.deepEqual(pruned.sort(), expected.sort(), 'pruned: the reads followed by at most 8,000 counted tokens');
});

/**
 * A useless tool result of `size` characters followed by `tail` characters of conversation,
 * then a reply: what the threshold prune (run by afterResponse) leaves of it.
 */
async function thresholdPrune(size, tail) {
  const session = Session.create({ cwd: '/w', now: NOW });
  session.appendMessage({ role: 'user', content: 'List the logs.' }, { now: NOW });
  appendToolRound(session, 'big', 'logs', {}, 'x'.repeat(size), { useless: true });
  if (tail > 0) session.appendMessage({ role: 'user', content: 'y'.repeat(tail) }, { now: NOW });
  const events = [];
  const m = new Maintainer(session, {
    model: BIG,
    settings: { dropUseless: true },
    tokenCounter: doubled,
    now: () => NOW,
    onEvent: (e) => events.push(e),
  });
  const reply = answer('Nothing there.');
  const before = counted([...m.session.toLlmMessages(), reply]);
  const { report } = await m.afterResponse(reply);
  return { pruned: prunedIds(m.session).length > 0, report, events, before, after: counted(m.session.toLlmMessages()) };
}

test("tokenCounter: the threshold prune's cache-warm tail and minimum savings are the host's tokens", async () => {
  // 50,000 counted tokens followed by 12,000: in the warm cache prefix (more than 8,000 after it).
  assert.equal((await thresholdPrune(100_000, 24_000)).pruned, false);
  // 24,000 counted tokens at the end: above the 20,000 minimum savings.
  const r = await thresholdPrune(48_000, 0);
  assert.equal(r.pruned, true);
  // 16,000 counted tokens: below it.
  assert.equal((await thresholdPrune(32_000, 0)).pruned, false);
  // The report and the event say what was freed in counted tokens.
  const [event] = r.events.filter((e) => e.type === 'prune');
  assert.equal(r.report.tokenUnit, 'counted');
  assert.deepEqual([r.report.tokensBefore, r.report.tokensAfter], [r.before, r.after]);
  assert.equal(event.tokensSaved, r.report.tokensBefore - r.report.tokensAfter);
});

test('a shake the Maintainer runs shows in its report and in the next request, with or without a counter', async () => {
  for (const tokenCounter of [undefined, doubled]) {
    const scale = tokenCounter ? 2 : 1;
    const session = Session.create({ cwd: '/w', now: NOW });
    session.appendMessage({ role: 'user', content: 'Read every log.' }, { now: NOW });
    for (let i = 0; i < 10; i++) appendToolRound(session, `c${i}`, 'logs', { i }, `${i} ${'log line '.repeat(4_444)}`);
    // About 100,000 estimated tokens (200,000 counted) over a threshold of 85 % of the window.
    const m = new Maintainer(session, {
      model: { ...BIG, contextWindow: 100_000 * scale },
      settings: { methodOrder: ['shake'] },
      tokenCounter,
      now: () => NOW,
    });
    const { report } = await m.afterResponse(answer('Read.'));
    assert.equal(report?.method, 'shake');
    assert.ok(report.tokensAfter < report.tokensBefore / 2, `${report.tokensBefore} → ${report.tokensAfter}`);
    const { tokens } = await m.beforeRequest();
    assert.ok(tokens < report.tokensBefore / 2, `the next request counts ${tokens} tokens`);
  }
});
