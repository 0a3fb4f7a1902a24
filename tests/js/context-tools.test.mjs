// Issue 38 item 3 through the built package: the context tools `recall_history` and
// `context_status` declared in each message format (`contextTools`), run on a session
// (`runContextTool`), answered by the Maintainer (`contextTools: true`) with the reply read
// from and the result written back to each format, run by `generateText` through the AI SDK
// middleware (`aiSdkContextTools`), and the recall pointer a compaction writes (`recallTool`).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateText, jsonSchema, stepCountIs, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { contextTools, Maintainer, runContextTool, Session } from 'ctxfold';
import { aiSdkContextTools, ctxfoldMiddleware } from 'ctxfold/ai-sdk';
import { header, line, reply } from './support/sessions.mjs';

const MODEL = { provider: 'anthropic', id: 'claude-test', contextWindow: 100_000, maxTokens: 1000, input: ['text'] };
const SETTINGS = { keepRecentTokens: 200, reserveTokens: 4000 };

/** A session whose early turns hold exact identifiers, then turns of plain words. */
function sessionText() {
  const lines = [header];
  lines.push(line('u0', null, { role: 'user', content: 'Deploy to port 8443; the bug is #4512 in src/deploy/run.rs' }));
  lines.push(reply('a0', 'u0', 'Commit 3f9a2c1e broke it with E_STALE_PLAN.'));
  let parent = 'a0';
  for (let i = 1; i < 10; i++) {
    lines.push(
      line(`u${i}`, parent, { role: 'user', content: `please continue ${'with the plain work '.repeat(12)}` }),
    );
    lines.push(reply(`a${i}`, `u${i}`, `continuing ${'as asked before '.repeat(12)}`));
    parent = `a${i}`;
  }
  return `${lines.join('\n')}\n`;
}

async function compacted(settings = SETTINGS) {
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact({ settings, summarize: async () => 'Work went on.' });
  return { s, result };
}

test('contextTools declares both tools in each format', () => {
  const chat = contextTools({ format: 'openai-chat' });
  assert.deepEqual(
    chat.map((t) => [t.type, t.function.name]),
    [
      ['function', 'recall_history'],
      ['function', 'context_status'],
    ],
  );
  const params = chat[0].function.parameters;
  assert.equal(params.type, 'object');
  assert.deepEqual(params.required, ['query']);
  assert.equal(params.properties.query.type, 'string');
  assert.match(chat[0].function.description, /verbatim/);

  const responses = contextTools({ format: 'openai-responses' });
  assert.deepEqual(Object.keys(responses[0]).sort(), ['description', 'name', 'parameters', 'strict', 'type']);
  assert.equal(responses[0].strict, false);
  assert.deepEqual(responses[0].parameters, params);

  const anthropic = contextTools({ format: 'anthropic' });
  assert.deepEqual(Object.keys(anthropic[1]).sort(), ['description', 'input_schema', 'name']);
  assert.deepEqual(anthropic[0].input_schema, params);

  const gemini = contextTools({ format: 'gemini' });
  assert.equal(gemini.length, 1);
  const decl = gemini[0].functionDeclarations;
  assert.deepEqual(
    decl.map((d) => d.name),
    ['recall_history', 'context_status'],
  );
  assert.equal(decl[0].parameters.additionalProperties, undefined);
  assert.deepEqual(decl[0].parameters.properties, params.properties);

  const sdk = contextTools({ format: 'ai-sdk' });
  assert.deepEqual(Object.keys(sdk), ['recall_history', 'context_status']);
  // The schema object is the AI SDK's own kind (what its jsonSchema() makes).
  const theirs = jsonSchema(params);
  for (const sym of Object.getOwnPropertySymbols(theirs))
    assert.equal(sdk.recall_history.inputSchema[sym], theirs[sym]);
  assert.deepEqual(sdk.recall_history.inputSchema.jsonSchema, params);

  // Each call gets its own copies.
  chat[0].function.name = 'changed';
  assert.equal(contextTools({ format: 'openai-chat' })[0].function.name, 'recall_history');
  for (const bad of [{ format: 'pi' }, {}, null]) {
    assert.throws(() => contextTools(bad), { code: 'E_INVALID_ARGUMENT' });
  }
});

test('runContextTool answers recall_history and context_status; bad calls change nothing', async () => {
  const { s } = await compacted();
  const answer = runContextTool(s, 'recall_history', { query: 'E_STALE_PLAN' });
  const lines = answer.split('\n');
  assert.match(lines[0], /^\d+ stored entr(y|ies) match "E_STALE_PLAN", best first:$/);
  assert.match(lines[1], /^\[entry a0 · 2026-01-01T00:00:01\.000Z · assistant\] Commit 3f9a2c1e broke it/);
  // A provider's JSON text of arguments works too.
  assert.equal(runContextTool(s, 'recall_history', '{"query":"E_STALE_PLAN"}'), answer);
  assert.match(runContextTool(s, 'recall_history', { query: 'zyzzyva' }), /^No stored entry/);

  const status = JSON.parse(runContextTool(s, 'context_status', {}, { contextWindow: 50_000, settings: SETTINGS }));
  assert.equal(status.contextWindow, 50_000);
  assert.equal(status.remaining, 50_000 - status.tokensUsed);
  assert.equal(status.counted, 'estimate');
  assert.equal(status.lastCompaction.method, 'soft');
  assert.equal(status.lastCompaction.range.firstEntryId, 'u0');
  const host = JSON.parse(
    runContextTool(s, 'context_status', undefined, { contextWindow: 50_000, contextTokens: 777 }),
  );
  assert.equal(host.tokensUsed, 777);
  assert.equal(host.counted, 'host');

  const before = s.toJsonl();
  for (const [name, args, figures] of [
    ['recall_history', {}, undefined],
    ['recall_history', '{not json', undefined],
    ['recall_history', { query: 'x', limit: 0 }, undefined],
    ['context_status', {}, undefined],
    ['context_status', {}, { contextWindow: 0 }],
    ['read_file', {}, undefined],
  ]) {
    assert.throws(() => runContextTool(s, name, args, figures), { code: 'E_INVALID_ARGUMENT' }, name);
  }
  assert.throws(() => runContextTool({}, 'recall_history', { query: 'x' }), { code: 'E_INVALID_ARGUMENT' });
  assert.throws(() => runContextTool(s, 'context_status', {}, { contextWindow: 10, settings: { nope: 1 } }), {
    code: 'E_SETTINGS',
  });
  assert.equal(s.toJsonl(), before);
});

test('a compaction points the model at recall_history only when recallTool is on', async () => {
  const { result: off } = await compacted();
  assert.ok(!off.compactionEntry.summary.includes('<recall>'));
  const { result: on } = await compacted({ ...SETTINGS, recallTool: true });
  const pointer = on.compactionEntry.summary.split('\n').find((l) => l.startsWith('<recall>'));
  assert.ok(pointer, on.compactionEntry.summary);
  assert.match(pointer, /`recall_history`/);
  assert.match(pointer, /entries u0 to [ua]\d/);
  assert.ok(pointer.endsWith('</recall>'));
});

/**
 * A reply calling `recall_history` (and a host tool) as each provider writes it, with the
 * user turn before it, read by that format; and the form of a tool result in it.
 */
const FORMATS = {
  'openai-chat': {
    messages: [
      { role: 'user', content: 'what was the port?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'recall_history', arguments: '{"query":"8443"}' } },
          { id: 'c2', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } },
        ],
      },
    ],
    result: (out) => out.find((m) => m.role === 'tool' && m.tool_call_id === 'c1')?.content,
  },
  'openai-responses': {
    messages: [
      { role: 'user', content: 'what was the port?' },
      { type: 'function_call', call_id: 'c1', name: 'recall_history', arguments: '{"query":"8443"}' },
      { type: 'function_call', call_id: 'c2', name: 'read', arguments: '{"path":"a"}' },
    ],
    result: (out) => out.find((m) => m.type === 'function_call_output' && m.call_id === 'c1')?.output,
  },
  anthropic: {
    messages: [
      { role: 'user', content: 'what was the port?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'c1', name: 'recall_history', input: { query: '8443' } },
          { type: 'tool_use', id: 'c2', name: 'read', input: { path: 'a' } },
        ],
      },
    ],
    result: (out) =>
      out.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((b) => b.type === 'tool_result')?.content,
  },
  gemini: {
    messages: [
      { role: 'user', parts: [{ text: 'what was the port?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { id: 'c1', name: 'recall_history', args: { query: '8443' } } },
          { functionCall: { id: 'c2', name: 'read', args: { path: 'a' } } },
        ],
      },
    ],
    result: (out) =>
      out.flatMap((m) => m.parts ?? []).find((p) => p.functionResponse?.name === 'recall_history')?.functionResponse
        .response,
  },
};

/** Text of a tool result as a format writes it (a string, blocks, or a Gemini response). */
function textOf(v) {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(textOf).join('');
  if (v && typeof v === 'object') return textOf(v.text ?? v.output ?? v.content ?? '');
  return '';
}

for (const [format, fx] of Object.entries(FORMATS)) {
  test(`the Maintainer answers the context-tool calls of a ${format} reply`, async () => {
    const { s } = await compacted({ ...SETTINGS, recallTool: true });
    // The provider's reply in its format, as the AgentMessage the Maintainer takes.
    const read = Session.fromMessages(fx.messages, { format });
    const answerEntry = read.entries().at(-1);
    const message = { ...answerEntry.message, stopReason: 'toolUse' };
    assert.equal(message.role, 'assistant');
    const m = new Maintainer(s, { model: MODEL, settings: SETTINGS, contextTools: true });
    await m.beforeRequest();
    const size = s.size;
    const after = await m.afterResponse(message);
    assert.equal(after.next, 'done');
    const ids = message.content.filter((b) => b.type === 'toolCall').map((b) => b.id);
    assert.deepEqual(after.contextToolCalls, [ids[0]]);
    // The reply and one result: the host's own tool is left to the host.
    assert.equal(s.size, size + 2);
    const result = s.entry(s.leafId).message;
    assert.equal(result.role, 'toolResult');
    assert.equal(result.toolCallId, ids[0]);
    assert.equal(result.isError, false);
    assert.match(result.content[0].text, /\[entry u0 · [^\]]+ · user\] Deploy to port 8443/);
    // Written back in the format, the result answers its call.
    s.appendMessage({
      role: 'toolResult',
      toolCallId: ids[1],
      toolName: 'read',
      content: [{ type: 'text', text: 'file a' }],
      isError: false,
    });
    const out = s.toMessages({ format }).messages;
    assert.match(textOf(fx.result(out)), /Deploy to port 8443/, JSON.stringify(out.slice(-3)));
    m.dispose();
  });
}

test('the Maintainer leaves the calls alone without contextTools, and reports bad arguments as an error result', async () => {
  const call = (args) => ({
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'k1', name: 'recall_history', arguments: args }],
    provider: 'anthropic',
    model: 'claude-test',
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'toolUse',
  });
  const { s } = await compacted();
  const plain = new Maintainer(s, { model: MODEL, settings: SETTINGS });
  await plain.beforeRequest();
  const size = s.size;
  const r = await plain.afterResponse(call({ query: '8443' }));
  assert.equal(r.contextToolCalls, undefined);
  assert.equal(s.size, size + 1);
  plain.dispose();

  const { s: t } = await compacted();
  const m = new Maintainer(t, { model: MODEL, settings: SETTINGS, contextTools: true });
  await m.beforeRequest();
  const bad = await m.afterResponse(call({ limit: 2 }));
  assert.deepEqual(bad.contextToolCalls, ['k1']);
  const result = t.entry(t.leafId).message;
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /recall_history: `query` must be a non-empty string/);
  // context_status through the Maintainer: its window and calibrated tokens.
  const status = JSON.parse(m.runContextTool('context_status', {}));
  assert.equal(status.contextWindow, MODEL.contextWindow);
  assert.equal(status.counted, 'host');
  assert.ok(status.tokensUsed > 0);
  m.dispose();
});

test('generateText runs the context tools through the middleware on the conversation session', async () => {
  const calls = [];
  const model = new MockLanguageModelV4({
    provider: 'anthropic.messages',
    modelId: 'claude-test',
    doGenerate: async ({ prompt, tools }) => {
      calls.push({ prompt, tools });
      const usage = {
        inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 10, text: 10, reasoning: 0 },
      };
      if (calls.length === 1) {
        return {
          content: [
            {
              type: 'tool-call',
              toolCallId: 'r1',
              toolName: 'recall_history',
              input: '{"query":"launch code zebra42"}',
            },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_use' },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'text', text: 'found it' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      };
    },
  });
  const middleware = ctxfoldMiddleware({ contextWindow: 100_000, settings: { recallTool: true } });
  const wrapped = wrapLanguageModel({ model, middleware });
  const result = await generateText({
    model: wrapped,
    tools: aiSdkContextTools(middleware),
    stopWhen: stepCountIs(3),
    messages: [
      { role: 'user', content: 'remember: the launch code is zebra42' },
      { role: 'assistant', content: 'noted' },
      { role: 'user', content: 'what was the launch code?' },
    ],
  });
  assert.equal(result.text, 'found it');
  // The tools reached the provider as functions with the core's schema.
  const sent = calls[0].tools.map((t) => [t.type, t.name, t.inputSchema.required]);
  assert.deepEqual(sent, [
    ['function', 'recall_history', ['query']],
    ['function', 'context_status', undefined],
  ]);
  // The SDK ran recall_history on the conversation's session: its answer went back to the model.
  const output = calls[1].prompt.flatMap((m) => (m.role === 'tool' ? m.content : []))[0];
  assert.equal(output.toolCallId, 'r1');
  assert.match(JSON.stringify(output.output), /the launch code is zebra42/);
  const session = middleware.conversations[0].session;
  assert.ok(session.searchHistory('zebra42').length > 0);

  // A session directly, with the host's figures.
  const direct = aiSdkContextTools({ session, figures: { contextWindow: 100_000 } });
  const status = JSON.parse(await direct.context_status.execute({}, { toolCallId: 'x' }));
  assert.equal(status.contextWindow, 100_000);
  assert.throws(() => aiSdkContextTools(null), { code: 'E_INVALID_ARGUMENT' });
  await assert.rejects(
    aiSdkContextTools(ctxfoldMiddleware({ contextWindow: 1000 })).recall_history.execute({ query: 'x' }),
    {
      code: 'E_INVALID_ARGUMENT',
    },
  );
});
