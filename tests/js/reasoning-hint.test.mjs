// The reasoning-effort hint on summary requests (issue 40 item 5; spec: compaction §5.6): the
// core's requests carry `reasoningEffort: 'high'` (oh-my-pi 18.2.3 asks reasoning models for high
// effort), and each ready summarizer maps it to its provider's parameter when its model reasons,
// sending nothing otherwise.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anthropicSummarizer, geminiSummarizer, openAISummarizer, Session } from 'ctxfold';

/** A session with enough turns that a small keep budget leaves history to summarize. */
function session() {
  const s = Session.create({ cwd: '/w' });
  for (let i = 0; i < 6; i++) {
    s.appendMessage({ role: 'user', content: `question ${i} `.repeat(60), timestamp: 1 });
    s.appendMessage({
      role: 'assistant',
      content: [{ type: 'text', text: `answer ${i} `.repeat(60) }],
      api: 'openai-completions',
      provider: 'openai',
      model: 'gpt-x',
      usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 20 },
      stopReason: 'stop',
      timestamp: 1,
    });
  }
  return s;
}

test('compaction summary requests carry the high reasoning-effort hint', () => {
  const plan = session().planCompaction({ keepRecentTokens: 200 });
  assert.ok(plan.pending.length > 0);
  for (const r of plan.pending) assert.equal(r.reasoningEffort, 'high', r.id);
});

/** Fake SDK clients that record the body they are sent and answer with a fixed text. */
function clients() {
  const sent = [];
  const openai = {
    chat: {
      completions: {
        create: async (body) => {
          sent.push(body);
          return {
            id: 'c',
            object: 'chat.completion',
            created: 1,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'S' }, finish_reason: 'stop' }],
          };
        },
      },
    },
    responses: {
      create: async (body) => {
        sent.push(body);
        return {
          id: 'r',
          object: 'response',
          status: 'completed',
          model: body.model,
          output: [
            {
              type: 'message',
              id: 'm',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: 'S' }],
            },
          ],
        };
      },
    },
  };
  const anthropic = {
    messages: {
      create: async (body) => {
        sent.push(body);
        return {
          id: 'msg',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [{ type: 'text', text: 'S' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 1, output_tokens: 1 },
        };
      },
    },
  };
  const gemini = {
    models: {
      generateContent: async (params) => {
        sent.push(params.config);
        return { candidates: [{ content: { role: 'model', parts: [{ text: 'S' }] }, finishReason: 'STOP' }] };
      },
    },
  };
  return { sent, openai, anthropic, gemini };
}

test('ready summarizers map the hint to each provider’s parameter when the model reasons', async () => {
  const request = session().planCompaction({ keepRecentTokens: 200 }).pending[0];
  const signal = new AbortController().signal;
  const c = clients();
  const ask = async (summarize) => {
    assert.equal(await summarize(request, { signal }), 'S');
    return c.sent.at(-1);
  };
  const budget = 16384;
  const chat = await ask(openAISummarizer(c.openai, { model: 'o4', reasoning: true }));
  assert.equal(chat.reasoning_effort, 'high');
  const responses = await ask(openAISummarizer(c.openai, { model: 'o4', api: 'responses', reasoning: true }));
  assert.deepEqual(responses.reasoning, { effort: 'high' });
  const claude = await ask(anthropicSummarizer(c.anthropic, { model: 'claude', reasoning: true }));
  assert.deepEqual(claude.thinking, { type: 'enabled', budget_tokens: budget });
  assert.equal(claude.max_tokens, request.maxTokens + budget, 'the summary keeps its own budget');
  const gem = await ask(geminiSummarizer(c.gemini, { model: 'gemini', reasoning: true }));
  assert.deepEqual(gem.thinkingConfig, { thinkingBudget: budget });
  assert.equal(gem.maxOutputTokens, request.maxTokens + budget);

  // A model that does not reason (the default) is sent no reasoning parameter.
  const plain = [
    await ask(openAISummarizer(c.openai, { model: 'gpt-4.1' })),
    await ask(openAISummarizer(c.openai, { model: 'gpt-4.1', api: 'responses' })),
    await ask(anthropicSummarizer(c.anthropic, { model: 'claude' })),
    await ask(geminiSummarizer(c.gemini, { model: 'gemini' })),
  ];
  assert.equal(plain[0].reasoning_effort, undefined);
  assert.equal(plain[1].reasoning, undefined);
  assert.equal(plain[2].thinking, undefined);
  assert.equal(plain[2].max_tokens, request.maxTokens);
  assert.equal(plain[3].thinkingConfig, undefined);
});
