// ctxfold/ai-sdk with the real `ai` package (pinned in tests/package.json): a tool-loop agent on
// a scripted mock model (`ai/test`) whose outputs overflow a 32k window within a few steps,
// through `wrapLanguageModel` with the middleware and through `prepareStep`
// (support/ai-sdk-workload.mjs; the worker of workerd.test.mjs runs the same loop).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateText, stepCountIs, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import * as aiSdk from 'ctxfold/ai-sdk';
import { ctxfoldMiddleware, ctxfoldPrepareStep, summarizerFromModel } from 'ctxfold/ai-sdk';
import {
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
  assert.match(r.text, /^done after 24 tool messages/);
  // The app's own history holds every file; the model never got a prompt over its window.
  assert.ok(r.appTokens > 2 * WINDOW, `the app's history is ${r.appTokens} tokens`);
  assert.ok(r.largestPrompt <= WINDOW, `largest prompt ${r.largestPrompt} tokens`);
  assert.ok(r.methods.length >= 2, `compactions: ${r.methods}`);
  assert.deepEqual(r.lastPromptHead[0], { role: 'system', content: 'You are a careful engineer.' });
  assert.ok(r.sessionEntries > 48, 'the session mirrors the app history');
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
