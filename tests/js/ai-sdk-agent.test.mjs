// The scripted agent of the Maintainer tests (support/fake-agent.mjs) as an app on the AI SDK
// would run it (issue 21, "Done when"): the app keeps every ModelMessage and sends its whole
// history with `generateText` each user turn, tools executed by the SDK, through one
// `wrapLanguageModel({ model, middleware: ctxfoldMiddleware(...) })`. The model behind it is the
// fake model with a hard context window: it measures the prompt the middleware lets through,
// answers tool calls and texts, and refuses a prompt over its window with a provider's overflow
// error. Invariants: no overflow goes unrecovered (the call never rejects; the retry after one
// fits), no tool result without its call, one conversation throughout (the middleware follows
// the app's history across compactions), at most two compactions per user turn, and the app's
// history far over the window. Times are printed, not asserted (`make bench` owns speed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APICallError, generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { ctxfoldMiddleware } from 'ctxfold/ai-sdk';
import { piRequest as simRequest } from './support/agent-sim.mjs';
import {
  FAKE_SYSTEM_PROMPT,
  FAKE_TOOLS,
  FakeClock,
  FakeModel,
  fakeSummarizer,
  PromptMeter,
  seededRandom,
  structureProblem,
  TextSource,
} from './support/fake-agent.mjs';

// AGENT_REQUESTS=n runs n model requests per case instead (while debugging).
const REQUESTS = Number(process.env.AGENT_REQUESTS ?? 1_000);

const between = (random, lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

/** A prompt as the fake model reads it (agent-sim.mjs's reading), with the app's tools. */
function piRequest(prompt) {
  return { ...simRequest(prompt), tools: FAKE_TOOLS };
}

const FINISH = { toolUse: 'tool-calls', stop: 'stop', length: 'length' };

/**
 * The fake model as an AI SDK model: each call is one request of the fake model; an overflow is
 * thrown as the provider's 400. `results` holds the tool outputs of the last answer by call id,
 * for the app's tools to return.
 */
function sdkModel(fake, stats) {
  const results = new Map();
  let previousOverflow = false;
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: fake.model.id,
    doGenerate: async ({ prompt }) => {
      const request = piRequest(prompt);
      const problem = structureProblem(request.messages);
      if (problem) stats.violations.push(`request ${fake.requests.length}: malformed prompt: ${problem}`);
      const reply = fake.respond(request);
      const record = fake.requests.at(-1);
      stats.maxPromptTokens = Math.max(stats.maxPromptTokens, record.promptTokens);
      if (record.overflow) {
        stats.overflows++;
        if (previousOverflow)
          stats.violations.push(`request ${record.index}: a second overflow in a row (${record.promptTokens} tokens)`);
        previousOverflow = true;
        throw new APICallError({
          message: reply.errorMessage,
          url: 'http://127.0.0.1/v1/messages',
          requestBodyValues: {},
          statusCode: 400,
          isRetryable: false,
        });
      }
      if (previousOverflow) stats.recovered++;
      previousOverflow = false;
      for (const r of fake.toolResults()) results.set(r.toolCallId, r.content[0].text);
      return {
        content: reply.content.map((b) =>
          b.type === 'toolCall'
            ? { type: 'tool-call', toolCallId: b.id, toolName: b.name, input: JSON.stringify(b.arguments) }
            : { type: 'text', text: b.text },
        ),
        finishReason: { unified: FINISH[reply.stopReason] ?? 'other', raw: reply.stopReason },
        usage: {
          inputTokens: { total: reply.usage.input, noCache: reply.usage.input, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: reply.usage.output, text: reply.usage.output, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
  return { model, results };
}

/** The app's tools: what the fake model's call gets back (by call id). */
function appTools(results) {
  const tools = {};
  for (const t of FAKE_TOOLS) {
    tools[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema(t.parameters),
      execute: async (_input, { toolCallId }) => results.get(toolCallId) ?? '',
    });
  }
  return tools;
}

const CASES = [
  {
    window: 32_000,
    seed: 41,
    toolTokens: [500, 4_000],
    huge: { rate: 1 / 60, tokens: 16_000 },
    taskBudget: 7_500,
    settings: { methodOrder: ['soft'], keepRecentTokens: 6_000 },
  },
  {
    window: 200_000,
    seed: 42,
    toolTokens: [2_000, 20_000],
    taskBudget: 85_000,
    settings: { methodOrder: ['soft'] },
  },
  // The provider counts 2.2 × the core's estimate and calibration is off: the usage each reply
  // reports still keeps the prompts under the window.
  {
    window: 32_000,
    seed: 43,
    tokenRatio: 2.2,
    calibrate: false,
    toolTokens: [500, 4_000],
    taskBudget: 7_500,
    settings: { methodOrder: ['soft'], keepRecentTokens: 6_000 },
  },
];

for (const c of CASES) {
  const requests = Math.min(c.requests ?? REQUESTS, REQUESTS);
  const ratio = c.tokenRatio ? `, provider tokenizer ×${c.tokenRatio}` : '';
  test(`ai-sdk scripted agent: ${requests} requests through wrapLanguageModel, ${c.window / 1_000}k window${ratio}`, async (t) => {
    const clock = new FakeClock();
    const meter = new PromptMeter({ tokenRatio: c.tokenRatio ?? 1 });
    const model = {
      provider: 'anthropic',
      id: 'claude-sonnet-4-5',
      api: 'anthropic-messages',
      contextWindow: c.window,
      maxTokens: c.window >= 100_000 ? 16_384 : 4_096,
      input: ['text'],
    };
    const fake = new FakeModel({ model, seed: c.seed, meter, clock, toolTokens: c.toolTokens, huge: c.huge });
    const stats = { violations: [], overflows: 0, recovered: 0, maxPromptTokens: 0, turns: 0, compactions: 0 };
    const { model: agentModel, results } = sdkModel(fake, stats);
    const summarizer = fakeSummarizer({ window: c.window, meter, seed: c.seed });
    const events = [];
    const middleware = ctxfoldMiddleware({
      model,
      summarize: summarizer.summarize,
      settings: c.settings,
      onEvent: (e) => events.push(e),
      maintainer: { now: clock.now, setTimer: clock.setTimer, calibrate: c.calibrate ?? true },
    });
    const wrapped = wrapLanguageModel({ model: agentModel, middleware });
    const tools = appTools(results);
    const random = seededRandom(c.seed ^ 0x9e3779b9);
    const text = new TextSource(seededRandom(c.seed ^ 0x1234567));
    const history = [];
    let maxPerTurn = 0;
    const t0 = performance.now();
    while (fake.requests.length < requests) {
      stats.turns++;
      fake.beginTask(between(random, 0, 5), c.taskBudget);
      await clock.advance(between(random, 5, 90) * 1000);
      history.push({ role: 'user', content: text.take(between(random, 20, 400)) });
      const eventsAtStart = events.length;
      let result;
      try {
        result = await generateText({
          model: wrapped,
          system: FAKE_SYSTEM_PROMPT,
          messages: history,
          tools,
          stopWhen: stepCountIs(40),
          maxRetries: 0,
        });
      } catch (err) {
        stats.violations.push(`user turn ${stats.turns}: generateText rejected: ${err?.message ?? err}`);
        break;
      }
      // ai 7's `responseMessages`, ai 6's `response.messages` (ai-sdk-6.test.mjs runs this with ai 6).
      history.push(...(result.responseMessages ?? result.response.messages));
      const compactions = events
        .slice(eventsAtStart)
        .filter((e) => e.type === 'auto_compaction_end' && !e.aborted && !e.errorMessage && !e.skipped).length;
      stats.compactions += compactions;
      maxPerTurn = Math.max(maxPerTurn, compactions);
      if (compactions > 2) stats.violations.push(`user turn ${stats.turns}: ${compactions} compactions`);
    }
    const ms = performance.now() - t0;
    const appTokens = meter.request(piRequest(history)).tokens;
    const line =
      `${c.window / 1_000}k: ${ms.toFixed(0)} ms, ${fake.requests.length} requests, ${stats.turns} user turns, ` +
      `compactions ${stats.compactions} (max ${maxPerTurn}/turn), overflows ${stats.overflows} ` +
      `(recovered ${stats.recovered}), max prompt ${stats.maxPromptTokens}, the app's history ${appTokens} tokens, ` +
      `summarizer calls ${summarizer.calls.length}`;
    t.diagnostic(line);
    assert.deepEqual(stats.violations, [], line);
    assert.ok(fake.requests.length >= requests, line);
    assert.ok(appTokens > 5 * c.window, `the app's history (${appTokens} tokens) is far over the window`);
    assert.ok(stats.compactions > 0, 'compactions ran');
    assert.equal(middleware.conversations.length, 1, 'one conversation followed the whole history');
    const fit = fake.requests.filter((r) => !r.overflow);
    assert.ok(
      fit.every((r) => r.promptTokens <= c.window),
      'every request the model answered fit its window',
    );
    middleware.conversations[0].maintainer.dispose();
  });
}
