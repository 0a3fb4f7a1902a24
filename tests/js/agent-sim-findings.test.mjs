// What the scripted agent of agent-sim.test.mjs found through the package, each minimised to
// the few calls that show it (issue 36, "Tests"). Each was marked `todo` while it failed;
// the `todo` goes with the fix.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Maintainer, Session } from 'ctxfold';
import { ctxfoldMiddleware } from 'ctxfold/ai-sdk';
import { deadEndpoint, randomScenario, runScenario } from './support/agent-sim.mjs';
import { PromptMeter, seededRandom, TextSource } from './support/fake-agent.mjs';

const WINDOW = 16_000; // threshold 13,600 tokens
const PROMPT = 'THE NEW QUESTION';
const HANDOFF = '# Handoff\n## Goal\nKeep going.';
const model = {
  provider: 'anthropic',
  id: 'claude-sonnet-4-5',
  api: 'anthropic-messages',
  contextWindow: WINDOW,
  maxTokens: 2_000,
  input: ['text'],
};

/** Twelve questions of about 1,250 tokens and their short answers: over the threshold. */
function history() {
  const out = [];
  for (let i = 0; i < 12; i++) {
    out.push({ role: 'user', content: `question ${i} ${'word '.repeat(1_000)}` });
    out.push({ role: 'assistant', content: `answer ${i}` });
  }
  return out;
}

test('a pre-prompt threshold handoff sends the prompt that triggered it (the reference hands off before the prompt joins the session)', async () => {
  let now = 1_000;
  const session = Session.create({ now });
  for (const m of history()) {
    const message =
      m.role === 'user'
        ? { ...m, timestamp: ++now }
        : {
            role: 'assistant',
            content: [{ type: 'text', text: m.content }],
            api: model.api,
            provider: model.provider,
            model: model.id,
            stopReason: 'stop',
            usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
            timestamp: ++now,
          };
    session.appendMessage(message, { now });
  }
  const m = new Maintainer(session, {
    model,
    settings: { methodOrder: ['handoff'] },
    summarize: async () => HANDOFF,
    now: () => now,
    setTimer: () => () => {},
  });
  m.session.appendMessage({ role: 'user', content: PROMPT, timestamp: ++now }, { now });
  const before = await m.beforeRequest();
  assert.notEqual(m.session, session, 'the pre-prompt check handed off');
  const sent = JSON.stringify(before.messages);
  assert.ok(sent.includes(HANDOFF.slice(0, 9)), 'the handoff document is sent');
  assert.ok(
    before.messages.some((x) => x.role === 'user' && JSON.stringify(x.content).includes(PROMPT)),
    `the prompt is sent as the user wrote it; sent: ${sent.slice(0, 300)}`,
  );
  assert.ok(m.session.toJsonl().includes(PROMPT), 'the new session holds the prompt');
  m.dispose();
});

test('ctxfoldMiddleware after a handoff: the prompt has a user message, and no assistant message comes first', async () => {
  const prompts = [];
  const sdk = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: model.id,
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      return {
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage: {
          inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 1, text: 1, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
  const middleware = ctxfoldMiddleware({
    contextWindow: WINDOW,
    settings: { methodOrder: ['handoff'] },
    summarize: async () => HANDOFF,
  });
  const wrapped = wrapLanguageModel({ model: sdk, middleware });
  const messages = [...history(), { role: 'user', content: PROMPT }];
  const first = await generateText({ model: wrapped, system: 'You are terse.', messages, maxRetries: 0 });
  messages.push(...first.responseMessages, { role: 'user', content: 'AND ANOTHER' });
  await generateText({ model: wrapped, system: 'You are terse.', messages, maxRetries: 0 });
  assert.ok(JSON.stringify(prompts[0]).includes(HANDOFF.slice(0, 9)), 'the first call came after a handoff');
  for (const [i, prompt] of prompts.entries()) {
    const rest = prompt.filter((x) => x.role !== 'system');
    // Today: [system, system(handoff)], then [system, system(handoff), assistant, user].
    assert.equal(
      rest[0]?.role,
      'user',
      `call ${i + 1} sends ${JSON.stringify(prompt.map((x) => x.role))}: providers want a user message first`,
    );
  }
  for (const c of middleware.conversations) c.maintainer?.dispose();
});

test('a snapcompact archive that fills the window is rebuilt with fewer frames, and an overflow right after it is recovered, not answered done', async () => {
  const W = 200_000;
  const vision = { ...model, provider: 'google', id: 'gemini-2.5-pro', api: 'google-generative-ai', contextWindow: W };
  vision.input = ['text', 'image'];
  const meter = new PromptMeter({ tokenRatio: 2 });
  const source = new TextSource(seededRandom(7));
  const text = (tokens) => source.take(Math.round(tokens));
  let now = 1_750_000_000_000;
  const session = Session.create({ now });
  const reply = (content, stopReason, input = 0) => ({
    role: 'assistant',
    content,
    api: vision.api,
    provider: vision.provider,
    model: vision.id,
    stopReason,
    usage: { input, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: input },
    timestamp: ++now,
  });
  // The agent simulator's turns: a prompt (window/6 every fifth, else window/40), a read of
  // window/30 tokens, an answer.
  for (let i = 0; i < 40; i++) {
    session.appendMessage({ role: 'user', content: text(i % 5 === 0 ? W / 6 : W / 40), timestamp: ++now }, { now });
    const call = { type: 'toolCall', id: `c${i}`, name: 'read', arguments: { path: 'a' } };
    session.appendMessage(reply([{ type: 'text', text: text(200) }, call], 'toolUse'), { now });
    const result = [{ type: 'text', text: text(W / 30) }];
    session.appendMessage(
      { role: 'toolResult', toolCallId: `c${i}`, toolName: 'read', content: result, isError: false, timestamp: ++now },
      { now },
    );
    session.appendMessage(reply([{ type: 'text', text: text(200) }], 'stop'), { now });
  }
  session.appendMessage({ role: 'user', content: text(W / 6), timestamp: ++now }, { now });
  const m = new Maintainer(session, {
    model: vision,
    summarize: async () => '## Goal\nKeep going.',
    now: () => now,
    setTimer: () => () => {},
  });
  const before = await m.beforeRequest({ systemPrompt: 'You are a coding agent.' });
  const tokens = meter.request({ systemPrompt: 'You are a coding agent.', messages: before.messages }).tokens;
  // The threshold snapcompact left more than the progress guard allows (155,007 estimated
  // tokens): the walk rebuilt its archive with fewer frames (the dead-end rescue's first
  // tier) before the request. It used to go out over the window.
  assert.ok(tokens <= W, `the request after the snapcompact fits the window (${tokens} provider tokens)`);
  // The provider refuses it all the same (it counts more than it says): the overflow
  // compaction finds nothing to summarize after the archive, and rebuilds it smaller again.
  const refused = reply([], 'error');
  const count = Math.max(tokens, W + 1);
  refused.errorMessage = `The input token count (${count}) exceeds the maximum number of tokens allowed (${W}).`;
  // It used to answer `done`, the overflow compaction skipped.
  const after = await m.afterResponse(refused);
  assert.equal(after.next, 'retry', 'the overflow is recovered and retried');
  const retry = await m.beforeRequest({ systemPrompt: 'You are a coding agent.' });
  const again = meter.request({ systemPrompt: 'You are a coding agent.', messages: retry.messages }).tokens;
  assert.ok(again <= W, `the retry fits (${again} provider tokens)`);
  m.dispose();
});

test('seed 175 through the Maintainer: every snapcompact lowers the request the provider bills', async () => {
  const endpoint = await deadEndpoint();
  try {
    const { violations } = await runScenario(randomScenario(175), 'maintainer', { endpoint });
    assert.deepEqual(violations, []);
  } finally {
    await endpoint.close();
  }
});
