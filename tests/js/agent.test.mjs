// The scripted agent (issue 19, "Tests"): 1,000 model requests per case through the Maintainer,
// against a fake model with a hard context window (support/fake-agent.mjs), for every strategy
// on 200,000- and 32,000-token windows; `remote` both through the remote-summarizer endpoint
// and through OpenAI's provider-native V1 lane (issue 20), each on a local 127.0.0.1 server. A
// "turn" here is one model request: beforeRequest → the fake model → afterResponse.
// Invariants: no request over the window goes unrecovered (an overflow is answered by a retry
// whose request fits; never two overflows in a row), no compaction loop (at most 2 compactions
// per user turn), the number of entries only grows (per session for handoff), tokensAfter <
// tokensBefore in every compaction report, at most the provider's image budget of images per
// request; for the native lane also that it was called as the lane sends, that every `remote`
// compaction is its, and that the requests after it replay the stored Responses history. How
// long it takes (issue 19 asks for the whole file in under 60 s) is a speed target: `make
// bench` measures it (tests/bench/agent.bench.mjs); this file prints its times but asserts none.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, test } from 'node:test';
import * as ctxfold from 'ctxfold';
import {
  FakeClock,
  FakeModel,
  fakeResponsesCompactor,
  fakeSummarizer,
  imageTokens,
  OVERFLOW_WORDINGS,
  PromptMeter,
  pngSize,
  runScriptedAgent,
  seededRandom,
  structureProblem,
  TextSource,
} from './support/fake-agent.mjs';

const { Session, isContextOverflow, providerImageByteBudget, renderFrame } = ctxfold;
const { Maintainer } = ctxfold;
const fileStart = performance.now();

// AGENT_REQUESTS=n runs n requests per case instead (while debugging).
const REQUESTS = Number(process.env.AGENT_REQUESTS ?? 1_000);
/**
 * Images per request the provider takes (spec: snapcompact §2 table for Anthropic; OpenRouter
 * silently drops images past the 8th, snapcompact §9 and issue 19).
 */
const IMAGE_BUDGET = { anthropic: 90, openrouter: 8 };
const IDLE_TIMEOUT_SECONDS = 300;

// ----- the fake itself -------------------------------------------------------------------------

test('fake model: every overflow wording is one the package recognises, and fitting prompts are answered', () => {
  for (const wording of OVERFLOW_WORDINGS) {
    const message = {
      role: 'assistant',
      content: [],
      stopReason: 'error',
      errorMessage: wording(210_000, 200_000),
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    };
    assert.ok(isContextOverflow(message, 200_000), message.errorMessage);
  }
  const clock = new FakeClock();
  const meter = new PromptMeter();
  const model = {
    provider: 'anthropic',
    id: 'claude-sonnet-4-5',
    api: 'anthropic-messages',
    contextWindow: 1_000,
    maxTokens: 100,
  };
  const fake = new FakeModel({ model, seed: 7, meter, clock, toolTokens: [10, 20] });
  const big = { role: 'user', content: 'x'.repeat(4_004), timestamp: 1 };
  const over = fake.respond({ messages: [big] });
  assert.equal(over.stopReason, 'error');
  assert.equal(over.usage.input, 0);
  assert.ok(isContextOverflow(over, 1_000));
  assert.equal(fake.requests[0].promptTokens, 1_001);
  fake.beginTask(1, 100);
  const small = { role: 'user', content: 'x'.repeat(400), timestamp: 1 };
  const call = fake.respond({ messages: [small] });
  assert.equal(call.stopReason, 'toolUse');
  assert.equal(call.usage.input, 100);
  assert.equal(isContextOverflow(call, 1_000), false);
  const results = fake.toolResults();
  assert.ok(results.length >= 1);
  const calls = call.content.filter((b) => b.type === 'toolCall').map((b) => b.id);
  assert.deepEqual(
    results.map((r) => r.toolCallId),
    calls,
  );
  assert.equal(structureProblem([small, call, ...results]), null);
  assert.match(structureProblem([call, ...results]), /first message/);
  assert.match(structureProblem([small, { ...results[0], toolCallId: 'nope' }]), /answers no call/);
  const answer = fake.respond({ messages: [small, call, ...results] });
  assert.ok(answer.stopReason === 'stop' || answer.stopReason === 'length');
});

test('fake model: text costs what the package estimates (tokenRatio 1), images what the provider bills', () => {
  const meter = new PromptMeter();
  const text = new TextSource(seededRandom(3));
  const messages = [
    { role: 'user', content: text.take(1_234), timestamp: 1 },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: text.take(50) },
        { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'src/a.ts' } },
      ],
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      stopReason: 'toolUse',
      timestamp: 2,
    },
    {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'read',
      content: [{ type: 'text', text: text.take(900) }],
      isError: false,
    },
  ];
  for (const message of messages) {
    assert.equal(meter.request({ messages: [message] }).tokens, ctxfold.estimateTokens(message));
  }
  // A real snapcompact frame: its PNG header gives the size the provider bills.
  const frame = renderFrame('hello frame '.repeat(200), { model: 'claude-sonnet-4-5' });
  const base64 = Buffer.from(frame.png).toString('base64');
  const size = pngSize(base64);
  assert.ok(size && size.width > 0 && size.height > 0);
  const tokens = imageTokens('anthropic', size.width, size.height);
  assert.ok(tokens > 0 && tokens <= ctxfold.FRAME_TOKEN_ESTIMATE, `${tokens} tokens for ${size.width}×${size.height}`);
  const withImage = meter.request({
    messages: [{ role: 'user', content: [{ type: 'image', data: base64, mimeType: 'image/png' }] }],
  });
  assert.equal(withImage.images, 1);
  assert.equal(withImage.tokens, tokens);
  // A provider whose tokenizer counts text twice bills the image the same: by its pixels.
  const dense = new PromptMeter({ tokenRatio: 2 });
  const image = { role: 'user', content: [{ type: 'image', data: base64, mimeType: 'image/png' }] };
  assert.equal(dense.request({ messages: [image] }).tokens, tokens);
});

test('fake clock: timers fire in order as time passes, cancelled ones never', async () => {
  const clock = new FakeClock(0);
  const fired = [];
  clock.setTimer(() => fired.push('b'), 2_000);
  const cancel = clock.setTimer(() => fired.push('x'), 1_500);
  clock.setTimer(async () => {
    await null;
    fired.push('a');
  }, 1_000);
  cancel();
  await clock.advance(1_200);
  assert.deepEqual(fired, ['a']);
  assert.equal(clock.now(), 1_200);
  await clock.advance(10_000);
  assert.deepEqual(fired, ['a', 'b']);
  assert.equal(clock.pending, 0);
});

// ----- the cases ---------------------------------------------------------------------------------

function modelFor(provider, window, input) {
  const maxTokens = window >= 100_000 ? 16_384 : 4_096;
  if (provider === 'openai') {
    return { provider, id: 'gpt-5.1-codex', api: 'openai-responses', contextWindow: window, maxTokens, input };
  }
  if (provider === 'openrouter') {
    return {
      provider,
      id: 'anthropic/claude-sonnet-4.5',
      api: 'openai-completions',
      contextWindow: window,
      maxTokens,
      input,
    };
  }
  return { provider, id: 'claude-sonnet-4-5', api: 'anthropic-messages', contextWindow: window, maxTokens, input };
}

const METHOD_ORDER = {
  'context-full': ['soft'],
  handoff: ['handoff', 'soft'],
  snapcompact: ['snapcompact', 'soft'],
  shake: ['shake', 'soft'],
  remote: ['remote', 'soft'],
};

/** The workload of one window size: tool outputs, the per-task budget, settings. */
function workload(window) {
  if (window >= 100_000) {
    return {
      toolTokens: [2_000, 20_000],
      // At most half the threshold per user task, so a correct maintainer needs ≤ 2 compactions.
      taskBudget: 85_000,
      settings: { idleThresholdTokens: 60_000 },
    };
  }
  return {
    toolTokens: [500, 4_000],
    // Half the window at once, 1 call in 60: more than the headroom above the threshold.
    huge: { rate: 1 / 60, tokens: 16_000 },
    taskBudget: 7_500,
    // The default keepRecentTokens (20,000) is above this window's threshold (15,616).
    settings: { keepRecentTokens: 6_000, idleThresholdTokens: 8_000 },
  };
}

const CASES = [];
for (const strategy of ['context-full', 'handoff', 'snapcompact']) {
  for (const window of [200_000, 32_000]) {
    CASES.push({ strategy, window, provider: 'anthropic', seed: CASES.length + 1 });
  }
}
CASES.push({ strategy: 'snapcompact', window: 200_000, provider: 'openrouter', seed: 101 });

CASES.push({ strategy: 'context-full', window: 200_000, provider: 'anthropic', seed: 102, tokenRatio: 1.2 });
for (const strategy of ['shake', 'remote']) {
  for (const window of [200_000, 32_000])
    CASES.push({ strategy, window, provider: 'anthropic', seed: CASES.length + 1 });
}
// The `remote` method's provider-native lane (issue 20): OpenAI's V1 remote compaction of a
// Responses model, which applies at any window (spec: compaction §13), against a local server.
for (const window of [200_000, 32_000]) {
  CASES.push({ strategy: 'remote', window, provider: 'openai', native: 'V1', seed: CASES.length + 1 });
}

// Inline imaging of old tool results (snapcompact.toolResults), its savings gate counting text
// with the provider's own tokenizer (×1.3 of the core's estimate). Each imaged result is
// rendered once (a few ms a frame): 250 requests keep the case short.
// (Pushed last: the seeds of the cases above count their position.)
CASES.push({
  strategy: 'context-full',
  window: 200_000,
  provider: 'anthropic',
  seed: 103,
  tokenRatio: 1.3,
  inline: true,
  requests: 250,
});

// A provider whose tokenizer counts a factor of the core's estimate (code and non-English text
// run denser than 4 characters a token; plain English lighter), doing the same work in its own
// tokens: the tool outputs, answers and task budgets are the provider's tokens, so the text is
// shorter (×2) or longer (×0.6), and the workload's premises (a task is at most half the
// threshold) still hold. Every window test must read calibrated figures here: the overflow
// recovery's rescue check, the shake's hand-over test and snapcompact's frame cap compare the
// core's estimates with the real window. 32k windows, where one turn fills the window.
for (const [strategy, seed] of [
  ['context-full', 104],
  ['handoff', 105],
  ['snapcompact', 111],
  ['shake', 112],
  ['remote', 108],
]) {
  CASES.push({ strategy, window: 32_000, provider: 'anthropic', seed, tokenRatio: 2, providerSized: true });
}
for (const [strategy, seed] of [
  ['context-full', 109],
  ['snapcompact', 110],
]) {
  CASES.push({ strategy, window: 32_000, provider: 'anthropic', seed, tokenRatio: 0.6, providerSized: true });
}

// Frames beside dense text: snapcompact on 200k with a provider counting text twice the estimate,
// the work sized in the estimate's tokens (the seed of the 200k snapcompact case above). Frames
// bill their pixels (about 3,000 tokens for 5,024 estimated), whatever the text ratio: one
// calibration ratio over the whole request came out near 1.05, the text tail after a compaction
// was undercounted, and request 514 overflowed twice in a row. The text ratio is learnt apart.
// The work sized in the estimate's tokens costs the provider twice as much, so a task may fill
// the whole threshold: three compactions in a user turn are the workload here, not a loop.
CASES.push({
  strategy: 'snapcompact',
  window: 200_000,
  provider: 'anthropic',
  seed: 5,
  tokenRatio: 2,
  maxCompactionsPerUserTurn: 3,
});

/** A local remote-summarizer endpoint (spec: compaction §5.8) answering with the fake summarizer. */
async function startRemote(summarizer) {
  let hits = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', async () => {
      hits++;
      try {
        const request = JSON.parse(body);
        const summary = await summarizer.summarize({ id: 'remote', purpose: 'remote', ...request });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ summary }));
      } catch (err) {
        res.writeHead(err.status ?? 500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: String(err.message) }));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const { port } = server.address();
  return {
    summarizer,
    url: `http://127.0.0.1:${port}/summarize`,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The bearer token the local native endpoint takes. */
const NATIVE_KEY = 'sk-local-agent-test';
/** The share of native requests the local endpoint answers 503 (overloaded). */
const NATIVE_FAIL_RATE = 1 / 25;

/**
 * The fake compactor of a window: the user messages it retains, the summary size range; now and
 * then it is overloaded (`failRate`), so the walk falls back to `soft`.
 */
function compactorFor(window, meter, seed, failRate = 0) {
  const small = window < 100_000;
  return fakeResponsesCompactor({
    window,
    meter,
    seed,
    retainedTokens: small ? 1_500 : 4_000,
    summaryTokens: small ? [300, 1_000] : [800, 2_000],
    failRate,
  });
}

/**
 * A local OpenAI endpoint for the V1 lane of the `remote` method (spec: compaction §13):
 * `POST /v1/responses/compact` answered by the fake compactor. A request that is not what the
 * lane sends (another path, no bearer token, another model, no input or instructions) is
 * answered 400 and listed in `bad`.
 */
async function startNative(compactor, modelId) {
  let hits = 0;
  const bad = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      hits++;
      let request;
      try {
        request = JSON.parse(body);
      } catch {
        request = undefined;
      }
      let problem = null;
      if (req.method !== 'POST' || req.url !== '/v1/responses/compact') problem = `${req.method} ${req.url}`;
      else if (req.headers.authorization !== `Bearer ${NATIVE_KEY}`) problem = 'no bearer token';
      else if (request?.model !== modelId) problem = `model ${request?.model}`;
      else if (!Array.isArray(request.input) || typeof request.instructions !== 'string') {
        problem = 'no input or instructions';
      }
      if (problem !== null) bad.push(problem);
      const answer =
        problem === null ? compactor.compact(request) : { status: 400, json: { error: { message: problem } } };
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.json));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    compactor,
    origin,
    baseUrl: `${origin}/v1`,
    hits: () => hits,
    bad,
    /** Native requests the host's `fetch` refused: any URL off the local server. */
    strays: [],
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

/**
 * The Maintainer options of a native lane: the model's `baseUrl` on the local server, the
 * credentials the server checks, and a `fetch` that only reaches that server.
 */
function nativeOptions(native) {
  return {
    credentials: () => ({ authorization: `Bearer ${NATIVE_KEY}` }),
    fetch: (url, init) => {
      if (!String(url).startsWith(`${native.origin}/`)) {
        native.strays.push(String(url));
        return Promise.reject(new Error(`a native request off the local server: ${url}`));
      }
      return fetch(url, init);
    },
    native: { timeoutMs: 10_000 },
  };
}

/** `servers`: `remote`, the remote-summarizer endpoint; `native`, the local native endpoint. */
function makeCase(c, servers = {}) {
  const { remote, native } = servers;
  const work = workload(c.window);
  const input = c.strategy === 'snapcompact' || c.inline ? ['text', 'image'] : ['text'];
  const model = modelFor(c.provider, c.window, input);
  if (native) model.baseUrl = native.baseUrl;
  const family = c.provider === 'openai' ? 'openai' : 'anthropic';
  const meter = new PromptMeter({ tokenRatio: c.tokenRatio ?? 1, family });
  const clock = new FakeClock();
  const summarizer = fakeSummarizer({ window: c.window, meter, seed: c.seed });
  const settings = {
    // remote is a method of the default strategy, walked through methodOrder.
    ...(c.strategy === 'remote' ? {} : { strategy: c.strategy }),
    methodOrder: METHOD_ORDER[c.strategy],
    idleEnabled: true,
    idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
    ...work.settings,
  };
  if (remote) settings.remoteEndpoint = remote.url;
  if (c.inline) settings.snapcompact = { toolResults: true };
  const session = Session.create({ ids: 'deterministic', id: `agent-${c.seed}`, cwd: '/w', now: clock.now() });
  const events = [];
  const options = {
    model,
    summarize: summarizer.summarize,
    settings,
    provider: c.provider,
    onEvent: (event) => events.push(event),
    now: clock.now,
    setTimer: clock.setTimer,
  };
  if (remote) options.remoteEndpoint = remote.url;
  if (native) Object.assign(options, nativeOptions(native));
  if (c.inline) options.countTextTokens = (text) => meter.text(text);
  const maintainer = new Maintainer(session, options);
  const fake = new FakeModel({
    model,
    seed: c.seed,
    meter,
    clock,
    toolTokens: work.toolTokens,
    huge: work.huge,
    providerSized: c.providerSized,
  });
  return { model, clock, summarizer, maintainer, fake, events, work, settings };
}

/** The compaction entries of a native lane among `entries`: those with OpenAI's stored record. */
function nativeEntries(entries) {
  return entries.filter(
    (e) => e.type === 'compaction' && e.method === 'remote' && e.preserveData?.openaiRemoteCompaction !== undefined,
  );
}

/**
 * Whether the case's strategy exists: one manual compaction of a small session must report it
 * as the method that ran (through the native lane for a native case). Returns a skip message,
 * or false when it runs.
 */
async function missing(c) {
  const { strategy } = c;
  if (typeof Maintainer !== 'function') return 'Maintainer is not exported by the package yet';
  if (strategy !== 'shake' && strategy !== 'remote') return false;
  // A manual compaction does not walk shake (spec: compaction §8.6): ask the session.
  if (strategy === 'shake') return typeof Session.prototype.shake === 'function' ? false : 'no session.shake()';
  const servers = {};
  try {
    const probe = { strategy, window: 200_000, provider: c.provider, native: c.native, seed: 999 };
    if (c.native) {
      const meter = new PromptMeter({ family: 'openai' });
      const id = modelFor(c.provider, probe.window, ['text']).id;
      servers.native = await startNative(compactorFor(probe.window, meter, 999), id);
    } else {
      servers.remote = await startRemote(fakeSummarizer({ window: 200_000, meter: new PromptMeter() }));
    }
    const run = makeCase(probe, servers);
    const text = new TextSource(seededRandom(5));
    const s = run.maintainer.session;
    for (let i = 0; i < 8; i++) {
      s.appendMessage({ role: 'user', content: text.take(3_000), timestamp: run.clock.now() });
      s.appendMessage({
        role: 'assistant',
        content: [{ type: 'text', text: text.take(3_000) }],
        api: run.model.api,
        provider: run.model.provider,
        model: run.model.id,
        usage: { input: 6_000 * (i + 1), output: 100, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'stop',
        timestamp: run.clock.now(),
      });
    }
    const result = await run.maintainer.compactNow();
    const method = result?.report?.method ?? result?.method;
    const lanes = nativeEntries(run.maintainer.session.entries()).length;
    run.maintainer.dispose();
    const expected = strategy === 'remote' ? 'remote' : 'shake';
    if (method !== expected) return `the ${strategy} method does not run yet (a manual compaction ran ${method})`;
    if (servers.remote && servers.remote.hits() === 0) return 'the remote endpoint was never called';
    if (servers.native && (servers.native.hits() === 0 || lanes === 0))
      return `the native ${c.native} lane does not run`;
    return false;
  } catch (err) {
    return `the ${strategy} method does not run yet (${err?.code ?? ''} ${err?.message ?? err})`;
  } finally {
    await servers.remote?.close();
    await servers.native?.close();
  }
}

const timings = [];
// AGENT_CASES=snapcompact (a substring of the case name) runs only the matching cases.
const only = process.env.AGENT_CASES;

for (const c of CASES) {
  const name =
    `${c.strategy}, ${c.window / 1_000}k window, ${c.provider}` +
    `${c.native ? `, native ${c.native} lane` : ''}${c.tokenRatio ? `, provider tokenizer ×${c.tokenRatio}` : ''}` +
    `${c.providerSized ? ' (work sized in its tokens)' : ''}` +
    `${c.inline ? ', inline imaging' : ''}`;
  if (only && !name.includes(only)) continue;
  const requests = Math.min(c.requests ?? REQUESTS, REQUESTS);
  test(`scripted agent: ${requests} requests, ${name}`, async (t) => {
    const skip = await missing(c);
    if (skip) {
      t.skip(skip);
      return;
    }
    const remote =
      c.strategy === 'remote' && !c.native
        ? await startRemote(fakeSummarizer({ window: c.window, meter: new PromptMeter() }))
        : undefined;
    const native = c.native
      ? await startNative(
          compactorFor(c.window, new PromptMeter({ family: 'openai' }), c.seed, NATIVE_FAIL_RATE),
          modelFor(c.provider, c.window, ['text']).id,
        )
      : undefined;
    const run = makeCase(c, { remote, native });
    const images = c.strategy === 'snapcompact' || c.inline;
    const imageBudget = images ? IMAGE_BUDGET[c.provider] : 0;
    const imageByteBudget = images ? providerImageByteBudget(c.provider) : undefined;
    const t0 = performance.now();
    let outcome;
    try {
      outcome = await runScriptedAgent({
        maintainer: run.maintainer,
        model: run.fake,
        clock: run.clock,
        requests,
        seed: c.seed,
        imageBudget,
        imageByteBudget,
        idleTimeoutSeconds: IDLE_TIMEOUT_SECONDS,
        taskBudget: run.work.taskBudget,
        events: run.events,
        maxCompactionsPerUserTurn: c.maxCompactionsPerUserTurn,
      });
    } finally {
      run.maintainer.dispose();
      await remote?.close();
      await native?.close();
    }
    const ms = performance.now() - t0;
    const { stats, violations, reports } = outcome;
    const methods = {};
    for (const r of reports) methods[r.method] = (methods[r.method] ?? 0) + 1;
    // Compactions the dead-end rescue shook beside (the recent tail elided too).
    const shookBeside = reports.filter((r) => r.method !== 'shake' && r.shakeTokensFreed > 0);
    const calls = [...run.summarizer.calls, ...(remote?.summarizer.calls ?? [])];
    const rejected = calls
      .filter((call) => call.rejected)
      .map((call) => `${call.purpose} ${call.tokens}`)
      .join(', ');
    // A native case: what the lane did (its compactions are in the one session: no handoff).
    const entries = native ? run.maintainer.session.entries() : [];
    const lane = nativeEntries(entries).length;
    const remoteEntries = entries.filter((e) => e.type === 'compaction' && e.method === 'remote').length;
    const replayed = run.fake.requests.filter((r) => r.replays > 0).length;
    const compactorCalls = native?.compactor.calls ?? [];
    const nativeLine = native
      ? `; native ${c.native}: ${native.hits()} hits, ${lane} compactions, ` +
        `${compactorCalls.filter((call) => call.carried).length} replaying an earlier one, ` +
        `over its window ${compactorCalls.filter((call) => call.rejected).length}, ` +
        `overloaded ${compactorCalls.filter((call) => call.failed).length}, ` +
        `requests replaying the stored history ${replayed}`
      : '';
    const line =
      `${name}: ${ms.toFixed(0)} ms, ${stats.requests} requests, ${stats.userTurns} user turns, ` +
      `maintainer ${(stats.maintainerMs / stats.requests).toFixed(2)} ms/request ` +
      `(fake model ${(stats.fakeMs / stats.requests).toFixed(2)}); ` +
      `reports ${JSON.stringify(methods)} (with a shake beside: ${shookBeside.length}), overflows ${stats.overflows} (recovered ${stats.recoveredOverflows}), ` +
      `retries ${stats.retries}, continues ${stats.continues}, length stops ${stats.lengthStops}, ` +
      `idle periods ${stats.idlePeriods} (idle compactions ${stats.idleCompactions}), manual compactions ${stats.manualCompactions}, handoffs ${stats.handoffs}, max compactions/user turn ` +
      `${stats.maxCompactionsPerUserTurn}, max prompt ${stats.maxPromptTokens}, max images ${stats.maxImages}` +
      `${imageBudget ? ` (budget ${imageBudget})` : ''}` +
      `${c.inline ? `, inline: ${stats.inlineResults} results in ${stats.inlineRequests} requests, ${stats.inlineSavedTokens} tokens saved` : ''}` +
      `, summarizer calls ${calls.length} (over its window: ${rejected || 'none'})${nativeLine}`;
    timings.push(line);
    t.diagnostic(line);
    assert.deepEqual(violations, [], `${name}:\n${violations.join('\n')}`);
    if (c.strategy === 'snapcompact' && c.window === 200_000 && !c.tokenRatio) {
      // A frame archive leaves a 200k window room to go on: the rescue shake, which elides the
      // recent tail, has nothing to do beside it (frames counted at the text's rate made it run
      // after 55 of 124 compactions).
      assert.equal(
        shookBeside.length,
        0,
        `${name}: a rescue shake beside ${shookBeside.length} snapcompact compactions`,
      );
    }
    assert.ok(
      stats.requests >= requests,
      `${name}: only ${stats.requests} of ${requests} requests in ${(ms / 1_000).toFixed(1)} s ` +
        `(maintainer ${(stats.maintainerMs / stats.requests).toFixed(1)} ms/request)`,
    );
    assert.ok(reports.length > 0, `${name}: no compaction ever ran`);
    const expected = {
      'context-full': null,
      handoff: 'handoff',
      snapcompact: 'snapcompact',
      shake: 'shake',
      remote: 'remote',
    }[c.strategy];
    // A shake that was not enough on its own hands over to the next method: its tokens show in
    // that method's report.
    const shaken = reports.reduce((n, r) => n + (r.shakeTokensFreed ?? 0), 0);
    if (expected)
      assert.ok(
        methods[expected] > 0 || (expected === 'shake' && shaken > 0),
        `${name}: the ${expected} method never ran (${JSON.stringify(methods)}, shaken ${shaken})`,
      );
    if (c.inline) {
      assert.ok(stats.inlineResults > 0, `${name}: no tool result was ever sent as frames`);
      assert.ok(stats.inlineSavedTokens > 0, `${name}: inline imaging saved nothing`);
    }
    if (native) {
      assert.ok(native.hits() > 0, `${name}: the native endpoint was never called`);
      assert.deepEqual(native.bad, [], `${name}: requests the ${c.native} lane does not send`);
      assert.deepEqual(native.strays, [], `${name}: native requests off the local server`);
      assert.ok(lane > 0, `${name}: no compaction went through the native ${c.native} lane`);
      // No remote endpoint here: every `remote` compaction is the native lane's.
      assert.equal(
        lane,
        remoteEntries,
        `${name}: ${remoteEntries - lane} remote compactions without the lane's record`,
      );
      const ends = run.events.filter(
        (e) => e.type === 'auto_compaction_end' && e.action === 'remote' && !e.errorMessage && !e.skipped && !e.aborted,
      );
      assert.ok(
        ends.length > 0 && ends.every((e) => e.result?.compactionEntry?.preserveData?.openaiRemoteCompaction),
        `${name}: the automatic remote compactions do not carry the native record`,
      );
      assert.ok(replayed > 0, `${name}: no request replayed the stored Responses history`);
      // A failed lane hands the compaction to `soft` (and blocks `remote` for a while).
      if (compactorCalls.some((call) => call.failed || call.rejected)) {
        assert.ok(methods.soft > 0, `${name}: the lane failed, yet soft never ran (${JSON.stringify(methods)})`);
      }
    }
  });
}

// The times, for the log and for tests/bench/agent.bench.mjs (which reads these lines).
after(() => {
  const seconds = (performance.now() - fileStart) / 1_000;
  console.log(`scripted agent: whole file ${seconds.toFixed(1)} s\n  ${timings.join('\n  ')}`);
});
