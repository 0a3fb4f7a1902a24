// ctxfold/ai-sdk with the real `ai` package (pinned in tests/package.json): a tool-loop agent on
// a scripted mock model (`ai/test`) whose outputs overflow a 32k window within a few steps,
// through `wrapLanguageModel` with the middleware and through `prepareStep`
// (support/ai-sdk-workload.mjs; the worker of workerd.test.mjs runs the same loop).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { APICallError, generateText, stepCountIs, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import * as aiSdk from 'ctxfold/ai-sdk';
import { ctxfoldMiddleware, ctxfoldPrepareStep, summarizerFromModel } from 'ctxfold/ai-sdk';
import {
  body,
  readTool,
  scriptedAgent,
  summarizerModel,
  tokensOf,
  toolLoop,
  usage,
  WINDOW,
} from './support/ai-sdk-workload.mjs';

test('middleware: a tool loop over a 32k window stays under it (default method order)', async () => {
  const r = await toolLoop(aiSdk, 24);
  // Every read done; what the last prompt still holds depends on the compactions, which in a
  // 32k window summarize with the window's keep budget (small windows), not only shake.
  assert.match(r.text, /^done after \d+ tool messages/);
  // The app's own history holds every file; the model never got a prompt over its window.
  assert.ok(r.appTokens > 2 * WINDOW, `the app's history is ${r.appTokens} tokens`);
  assert.ok(r.largestPrompt <= WINDOW, `largest prompt ${r.largestPrompt} tokens`);
  assert.ok(r.methods.length >= 2, `compactions: ${r.methods}`);
  assert.deepEqual(r.lastPromptHead[0], { role: 'system', content: 'You are a careful engineer.' });
  // The session mirrors the app history (a handoff, which the method walk may reach when a
  // snapcompact archive cannot help, starts a new one from its document).
  assert.ok(r.sessionEntries > 48 || r.methods.includes('handoff'), 'the session mirrors the app history');
});

test('middleware: with the summarizing method, the prompt opens with the summary', async () => {
  const r = await toolLoop(aiSdk, 24, { methodOrder: ['soft'], keepRecentTokens: 4000 });
  assert.match(r.text, /^done after/);
  assert.ok(r.largestPrompt <= WINDOW, `largest prompt ${r.largestPrompt} tokens`);
  assert.ok(r.summarizerCalls >= 1, 'the summarizer model was asked');
  assert.ok(r.methods.includes('soft'), `compactions: ${r.methods}`);
  assert.deepEqual(r.lastPromptHead[0], { role: 'system', content: 'You are a careful engineer.' });
  assert.match(JSON.stringify(r.lastPromptHead[1]), /Read \d+ files so far/);
});

test('middleware: streamText goes through the same conversation and reports usage', async () => {
  let calls = 0;
  const model = new MockLanguageModelV4({
    provider: 'openai.responses',
    modelId: 'gpt-5',
    doStream: async ({ prompt }) => {
      calls++;
      const parts = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: `seen ${prompt.length} messages` },
        { type: 'text-end', id: 't' },
        { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(tokensOf(prompt)) },
      ];
      const stream = new ReadableStream({
        start(controller) {
          for (const p of parts) controller.enqueue(p);
          controller.close();
        },
      });
      return { stream };
    },
  });
  const middleware = ctxfoldMiddleware({ contextWindow: 128_000 });
  const wrapped = wrapLanguageModel({ model, middleware });
  const first = streamText({ model: wrapped, prompt: 'Hello' });
  assert.equal(await first.text, 'seen 1 messages');
  const history = [
    { role: 'user', content: 'Hello' },
    ...(await first.response).messages,
    { role: 'user', content: 'Again' },
  ];
  const second = streamText({ model: wrapped, messages: history });
  assert.equal(await second.text, 'seen 3 messages');
  assert.equal(calls, 2);
  const [c] = middleware.conversations;
  assert.equal(middleware.conversations.length, 1, 'the second call continued the first conversation');
  // Each reply once: appended with its usage when its stream ended, recognised in the next prompt.
  const held = c.session.buildContext().messages;
  assert.deepEqual(
    held.map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  assert.ok(held[1].usage.input > 0, 'the streamed usage reached the session');
});

test('prepareStep: the step messages are kept under the window', async () => {
  const agent = scriptedAgent(20);
  const summarizer = summarizerModel();
  const prepareStep = ctxfoldPrepareStep({
    contextWindow: WINDOW,
    summarize: summarizer.model,
    settings: { methodOrder: ['soft'], keepRecentTokens: 4000 },
  });
  const result = await generateText({
    model: agent.model,
    tools: { read: readTool },
    stopWhen: stepCountIs(60),
    prepareStep,
    prompt: 'Read every file of src/, one at a time, then say done.',
  });
  assert.match(result.text, /^done after/);
  assert.ok(Math.max(...agent.seen.map((s) => s.tokens)) <= WINDOW);
  assert.ok(summarizer.calls.length >= 1);
});

test('summarizerFromModel rejects what is not a model', () => {
  assert.throws(() => summarizerFromModel({}), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => ctxfoldMiddleware({}), { code: 'E_INVALID_ARGUMENT' });
});

test('middleware: a later system message stays where it was, and tagged file data is sent as given', {
  // ai 6 has no tagged file data: ai-sdk-6.test.mjs checks its form.
  skip: globalThis.ctxfoldAiMajor === 6 && 'ai 7 only (tagged file data)',
}, async () => {
  const prompts = [];
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-sonnet-4-5',
    supportedUrls: { 'application/pdf': [/^https:/] },
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      return {
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: usage(tokensOf(prompt)),
        warnings: [],
      };
    },
  });
  const middleware = ctxfoldMiddleware({ contextWindow: 128_000 });
  const wrapped = wrapLanguageModel({ model, middleware });
  const bytes = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
  );
  const messages = [
    { role: 'system', content: 'You are terse.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: bytes } },
        {
          type: 'file',
          mediaType: 'application/pdf',
          data: { type: 'url', url: new URL('https://example.com/a.pdf') },
        },
      ],
    },
    { role: 'assistant', content: 'A picture and a paper.' },
    { role: 'system', content: 'From now on, answer in French.' },
    { role: 'user', content: 'And now?' },
  ];
  await generateText({ model: wrapped, messages, allowSystemInMessages: true });
  const [sent] = prompts;
  assert.deepEqual(
    sent.map((m) => m.role),
    ['system', 'user', 'assistant', 'system', 'user'],
  );
  assert.deepEqual(sent[3], { role: 'system', content: 'From now on, answer in French.' });
  const files = sent[1].content.filter((p) => p.type === 'file');
  assert.equal(files.length, 2);
  assert.equal(files[0].data.type, 'data', JSON.stringify(files[0].data));
  const sentBytes = files[0].data.data;
  assert.equal(
    typeof sentBytes === 'string' ? sentBytes : Buffer.from(sentBytes).toString('base64'),
    Buffer.from(bytes).toString('base64'),
  );
  assert.equal(files[1].data.type, 'url');
  assert.equal(String(files[1].data.url), 'https://example.com/a.pdf');
  // The same history again with a new turn continues the conversation (the later system message
  // is part of the history, not of the system prompt).
  await generateText({
    model: wrapped,
    messages: [...messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'Merci.' }],
    allowSystemInMessages: true,
  });
  assert.equal(middleware.conversations.length, 1, 'the second call continued the first conversation');
  assert.deepEqual(
    prompts[1].map((m) => m.role),
    ['system', 'user', 'assistant', 'system', 'user', 'assistant', 'user'],
  );
});

test('middleware: a prompt the provider refuses as too long is compacted and sent again', async () => {
  // The provider's real limit is far below the window the app configured.
  const limit = 8_000;
  const seen = [];
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-sonnet-4-5',
    doGenerate: async ({ prompt }) => {
      const tokens = tokensOf(prompt);
      seen.push(tokens);
      if (tokens > limit) {
        throw new APICallError({
          message: `prompt is too long: ${tokens} tokens > ${limit} maximum`,
          url: 'http://127.0.0.1/v1/messages',
          requestBodyValues: {},
          statusCode: 400,
          isRetryable: false,
        });
      }
      return {
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage: usage(tokens),
        warnings: [],
      };
    },
  });
  const summarizer = summarizerModel();
  const events = [];
  const middleware = ctxfoldMiddleware({
    contextWindow: 200_000,
    summarize: summarizer.model,
    settings: { methodOrder: ['soft'], keepRecentTokens: 2_000 },
    onEvent: (e) => events.push(e),
  });
  const messages = [];
  for (let i = 0; i < 10; i++) {
    messages.push({ role: 'user', content: `Explain src/file${i}.ts` });
    messages.push({ role: 'assistant', content: body(`src/file${i}.ts`) });
  }
  messages.push({ role: 'user', content: 'Which file computes the most?' });
  const r = await generateText({ model: wrapLanguageModel({ model, middleware }), messages, maxRetries: 0 });
  assert.equal(r.text, 'ok');
  assert.ok(seen[0] > limit, `the first prompt (${seen[0]} tokens) was refused`);
  assert.ok(seen.at(-1) <= limit, `the retry (${seen.at(-1)} tokens) fit`);
  assert.ok(summarizer.calls.length >= 1, 'a summary was asked for');
  assert.ok(
    events.some((e) => e.type === 'auto_compaction_start' && e.reason === 'overflow'),
    'an overflow compaction ran',
  );
});

/** A provider refusal as Anthropic words it, for a prompt of `tokens` over `limit`. */
const tooLong = (tokens, limit) =>
  new APICallError({
    message: `prompt is too long: ${tokens} tokens > ${limit} maximum`,
    url: 'http://127.0.0.1/v1/messages',
    requestBodyValues: {},
    statusCode: 400,
    isRetryable: false,
  });

const streamOf = (parts) =>
  new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(p);
      controller.close();
    },
  });

/** Ten long turns and a question, and a middleware whose provider refuses prompts over `limit`. */
function refusingStream(limit, refuse) {
  const seen = [];
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-sonnet-4-5',
    doStream: async ({ prompt }) => {
      const tokens = tokensOf(prompt);
      seen.push(tokens);
      if (tokens > limit) return refuse(tokens);
      return {
        stream: streamOf([
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'ok' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage: usage(tokens) },
        ]),
      };
    },
  });
  const summarizer = summarizerModel();
  const events = [];
  const middleware = ctxfoldMiddleware({
    contextWindow: 200_000,
    summarize: summarizer.model,
    settings: { methodOrder: ['soft'], keepRecentTokens: 2_000 },
    onEvent: (e) => events.push(e),
  });
  const messages = [];
  for (let i = 0; i < 10; i++) {
    messages.push({ role: 'user', content: `Explain src/file${i}.ts` });
    messages.push({ role: 'assistant', content: body(`src/file${i}.ts`) });
  }
  messages.push({ role: 'user', content: 'Which file computes the most?' });
  return { model: wrapLanguageModel({ model, middleware }), messages, seen, summarizer, events, middleware };
}

for (const [name, refuse] of [
  [
    'the stream call throws',
    async (tokens) => {
      throw tooLong(tokens, 8_000);
    },
  ],
  [
    "the stream's first part is an error",
    async (tokens) => ({
      stream: streamOf([
        { type: 'stream-start', warnings: [] },
        { type: 'error', error: tooLong(tokens, 8_000) },
      ]),
    }),
  ],
]) {
  test(`middleware: streamText recovers from an overflow before the first chunk (${name})`, async () => {
    const limit = 8_000;
    const r = refusingStream(limit, refuse);
    const errors = [];
    const result = streamText({
      model: r.model,
      messages: r.messages,
      maxRetries: 0,
      onError: ({ error }) => errors.push(error),
    });
    assert.equal(await result.text, 'ok');
    assert.deepEqual(errors, [], 'the app saw no error');
    assert.ok(r.seen[0] > limit, `the first prompt (${r.seen[0]} tokens) was refused`);
    assert.ok(r.seen.at(-1) <= limit, `the retry (${r.seen.at(-1)} tokens) fit`);
    assert.ok(r.summarizer.calls.length >= 1, 'a summary was asked for');
    assert.ok(
      r.events.some((e) => e.type === 'auto_compaction_start' && e.reason === 'overflow'),
      'an overflow compaction ran',
    );
    // The reply reached the conversation once, after the compaction.
    const held = r.middleware.conversations[0].session.buildContext().messages;
    assert.equal(held.at(-1).role, 'assistant');
    assert.equal(held.filter((m) => m.role === 'compactionSummary').length, 1);
  });
}

test('middleware: a stream error after the first chunk is the app’s, not a retry', async () => {
  const r = refusingStream(8_000, async (tokens) => ({
    stream: streamOf([
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'partial' },
      { type: 'error', error: tooLong(tokens, 8_000) },
    ]),
  }));
  const errors = [];
  const result = streamText({
    model: r.model,
    messages: r.messages,
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  await result.consumeStream();
  assert.equal(r.seen.length, 1, 'the model was called once');
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /prompt is too long/);
});

/** A middleware whose model always fails with `error`; how many calls it took, and the conversation. */
async function failingCall(error) {
  let calls = 0;
  const model = new MockLanguageModelV4({
    provider: 'openai.responses',
    modelId: 'gpt-5',
    doGenerate: async () => {
      calls++;
      throw error;
    },
  });
  const middleware = ctxfoldMiddleware({ contextWindow: 128_000 });
  const started = performance.now();
  await assert.rejects(
    generateText({ model: wrapLanguageModel({ model, middleware }), prompt: 'Hello', maxRetries: 0 }),
    (e) => e === error || e?.lastError === error || e?.cause === error || e?.message === error.message,
  );
  return { calls, ms: performance.now() - started, session: middleware.conversations[0].session };
}

test('middleware: a time-out naming a context is not taken for an overflow (the core decides)', async () => {
  const r = await failingCall(
    new APICallError({
      message: 'context deadline exceeded',
      url: 'http://127.0.0.1/v1/responses',
      requestBodyValues: {},
      statusCode: 504,
      isRetryable: false,
    }),
  );
  assert.equal(r.calls, 1);
  // Not handed to the Maintainer as an overflow turn: the session holds the prompt alone.
  assert.deepEqual(
    r.session.entries().map((e) => e.message?.role),
    ['user'],
  );
});

test('middleware: a 1 MB error text is classified in well under a second', async () => {
  // Repeated heads of overflow wordings, none complete: a backtracking matcher is quadratic here.
  const text = 'maximum input token count '.repeat(40_000);
  assert.ok(text.length >= 1_000_000);
  const r = await failingCall(new Error(text));
  assert.equal(r.calls, 1);
  assert.ok(r.ms < 1_000, `the failed call took ${Math.round(r.ms)} ms`);
});
