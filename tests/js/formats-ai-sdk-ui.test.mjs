// The `ai-sdk-ui` format (issue 21): the AI SDK's UIMessages as useChat holds them, read into a
// session and written back. Fixtures (tests/fixtures/formats/ai-sdk-ui/) follow the ai 7 type
// declarations; what is written is checked with the real `convertToModelMessages`.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { convertToModelMessages } from 'ai';
import { Session } from 'ctxfold';
// mulberry32, the scripted agents' generator.
import { seededRandom as rng } from './support/fake-agent.mjs';
import { bare, formatFixtures, STRICT, typeCheck } from './support/formats.mjs';

const FORMAT = { format: 'ai-sdk-ui' };
const fixtures = formatFixtures('ai-sdk-ui');
const histories = fixtures.filter((f) => Array.isArray(f.messages));

/** The format warnings of a session read from messages, as `{code, index, path}`. */
const formatWarnings = (session) =>
  session.warnings.filter((w) => w.code.startsWith('W_')).map(({ code, index, path }) => ({ code, index, path }));

/** A message without the `ctxfold` members the reader keeps (what another format would see). */

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

// ----- fixtures ---------------------------------------------------------------------------------

for (const fx of histories) {
  test(`ai-sdk-ui ${fx.file}: UIMessages → session → UIMessages is the same JSON; the warnings are the expected ones`, async () => {
    const session = Session.fromMessages(fx.messages, FORMAT);
    assert.deepEqual(formatWarnings(session), fx.warnings ?? []);
    const out = session.toMessages(FORMAT);
    assert.deepStrictEqual(out.messages, fx.messages);
    assert.equal(JSON.stringify(out.messages), JSON.stringify(fx.messages));
    assert.deepEqual(out.warnings, []);
    assert.equal(out.system, undefined, 'system UIMessages stay in messages');
    // What comes back converts for streamText / generateText.
    const model = await convertToModelMessages(out.messages);
    assert.ok(model.length > 0);
  });
}

test('ai-sdk-ui: one assistant UIMessage of three steps is three assistant messages, each followed by its results', () => {
  const fx = histories.find((f) => f.file === 'multi-step-tools.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  const llm = bare(session.toLlmMessages());
  assert.deepEqual(
    llm.map((m) => m.role),
    [
      'user',
      'assistant',
      'toolResult',
      'toolResult',
      'assistant',
      'toolResult',
      'toolResult',
      'assistant',
      'user',
      'assistant',
    ],
  );
  // Pairing: each step's results answer that step's calls, in order.
  assert.deepEqual(
    llm[1].content.filter((b) => b.type === 'toolCall').map((b) => b.id),
    [llm[2].toolCallId, llm[3].toolCallId],
  );
  assert.deepEqual(llm[1].content[0], {
    type: 'thinking',
    thinking: "I need both cities' weather.",
    thinkingSignature: 'EqQBCkYIBxgCKkD2sig',
  });
  assert.equal(llm[1].api, 'anthropic-messages');
  assert.equal(llm[2].content[0].text, '{"temperature":18,"unit":"C","sky":"clear"}');
  assert.equal(llm[3].content[0].text, '12 C, rain');
  assert.deepEqual(
    [llm[5].isError, llm[5].content[0].text],
    [true, "ENOENT: no such file or directory, open 'notes.md'"],
  );
  assert.equal(llm[6].toolName, 'mcp_search');
  // The source and data parts are the UI's: the model does not see them.
  assert.deepEqual(
    llm[7].content.map((b) => b.type),
    ['text'],
  );
  // Every entry keeps its UIMessage id and step group.
  const ids = session.buildContext().messages.map((m) => [m.ctxfold.id, m.ctxfold.g]);
  assert.deepEqual(ids.slice(1, 8), [
    ['a-1', 0],
    ['a-1', 0],
    ['a-1', 0],
    ['a-1', 1],
    ['a-1', 1],
    ['a-1', 1],
    ['a-1', 2],
  ]);
});

test('ai-sdk-ui: the written steps convert to the ModelMessages the AI SDK makes of the original', async () => {
  for (const fx of histories) {
    const out = Session.fromMessages(fx.messages, FORMAT).toMessages(FORMAT);
    assert.deepStrictEqual(
      await convertToModelMessages(out.messages),
      await convertToModelMessages(fx.messages),
      fx.file,
    );
  }
});

test("ai-sdk-ui: providers' reasoning metadata becomes pi's signatures (Anthropic, OpenAI Responses, Gemini)", () => {
  const fx = histories.find((f) => f.file === 'reasoning-signatures.json');
  const llm = bare(Session.fromMessages(fx.messages, FORMAT).toLlmMessages());
  const [anthropic, openai1, , openai2, google1, , google2] = llm.filter((m) => m.role !== 'user');
  assert.deepEqual(anthropic.content.slice(0, 2), [
    { type: 'thinking', thinking: 'Let me think.', thinkingSignature: 'ErUBCkYICxgCIkB' },
    { type: 'redactedThinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
  ]);
  assert.deepEqual(JSON.parse(openai1.content[0].thinkingSignature), {
    type: 'reasoning',
    id: 'rs_68c1',
    summary: [{ type: 'summary_text', text: '**Planning** the lookup.' }],
    encrypted_content: 'gAAAAABoxEnc',
  });
  assert.equal(openai1.content[1].thoughtSignature, 'fc_68c2');
  assert.deepEqual(JSON.parse(openai2.content[0].textSignature), { v: 1, id: 'msg_68c3', phase: 'final_answer' });
  assert.equal(openai2.api, 'openai-responses');
  assert.equal(google1.content[0].thinkingSignature, 'CiQB0e2Kb1');
  assert.equal(google1.content[1].thoughtSignature, 'CiQB0e2Kb2');
  assert.equal(google2.content[0].textSignature, 'CiQB0e2Kb3');
  assert.equal(google2.provider, 'google');
});

test('ai-sdk-ui: files the session has no block for are text for the other formats and come back whole', () => {
  const fx = histories.find((f) => f.file === 'images.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  const [user, assistant] = bare(session.toLlmMessages());
  assert.deepEqual(user.content[1], { type: 'image', data: PNG, mimeType: 'image/png' });
  assert.deepEqual(
    user.content.slice(2).map((b) => b.text),
    [
      '[file: https://images.example/cat.jpg, image/jpeg]',
      '[file: report.pdf, application/pdf]',
      '[file: https://files.example/f1.png, image/png]',
    ],
  );
  assert.equal(assistant.content[1].type, 'image');
  // As pi messages, the same history (the model sees the text stand-ins).
  const pi = session.toMessages({ format: 'pi' }).messages;
  assert.equal(pi[0].content.length, 5);
});

test('ai-sdk-ui: calls without output stay in the session, leave the LLM view, and come back in ai-sdk-ui', async () => {
  const fx = histories.find((f) => f.file === 'approvals-pending.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  const entries = session.entries().flatMap((e) => (e.type === 'message' ? [e.message] : []));
  const calls = entries.flatMap((m) => (m.role === 'assistant' ? m.content.filter((b) => b.type === 'toolCall') : []));
  assert.equal(calls.length, 7, 'the session keeps every call');
  const llm = bare(session.toLlmMessages());
  const viewCalls = llm.flatMap((m) => (m.role === 'assistant' ? m.content.filter((b) => b.type === 'toolCall') : []));
  assert.deepEqual(
    viewCalls.map((b) => b.id),
    ['call_del1', 'call_del2', 'call_ls1'],
  );
  // Denials are results the model sees as errors.
  const results = llm.filter((m) => m.role === 'toolResult');
  assert.deepEqual(
    results.map((r) => [r.toolCallId, r.isError, r.content[0].text]),
    [
      ['call_del1', true, 'Not in /tmp'],
      ['call_del2', true, 'Tool execution denied.'],
      ['call_ls1', false, '["a.txt","b.txt"]'],
    ],
  );
  // The approval the user gave reaches streamText through convertToModelMessages.
  const model = await convertToModelMessages(session.toMessages(FORMAT).messages);
  const responses = model.flatMap((m) =>
    m.role === 'tool' ? m.content.filter((p) => p.type === 'tool-approval-response') : [],
  );
  assert.ok(responses.some((p) => p.approvalId === 'appr-4' && p.approved === true));
});

test('ai-sdk-ui: a system UIMessage in the middle is a developer message and comes back a system UIMessage', () => {
  const fx = histories.find((f) => f.file === 'mid-system-and-data.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  const system = session.entries().find((e) => e.type === 'custom');
  assert.equal(system.customType, 'ctxfold:system');
  assert.equal(system.data.text, 'Be brief. Use tools.\n\nToday is Tuesday.');
  const llm = bare(session.toLlmMessages());
  const dev = llm.find((m) => m.role === 'developer');
  assert.deepEqual(dev.content, [{ type: 'text', text: 'The user is on a phone.' }]);
  // Inputs that are not objects: a string under pi's `__raw`, others as no arguments.
  const calls = llm.find((m) => m.role === 'assistant').content;
  assert.deepEqual(
    calls.map((b) => b.arguments),
    [{ __raw: 'hi' }, {}, {}],
  );
  // Written as pi, the system prompt's text.
  assert.equal(session.toMessages({ format: 'pi' }).system, 'Be brief. Use tools.\n\nToday is Tuesday.');
});

test('ai-sdk-ui: appendMessages turn by turn gives the history fromMessages gives', () => {
  const fx = histories.find((f) => f.file === 'multi-step-tools.json');
  const session = Session.fromMessages(fx.messages.slice(0, 2), FORMAT);
  const r = session.appendMessages(fx.messages.slice(2), FORMAT);
  assert.equal(r.ids.length, 2);
  assert.deepStrictEqual(session.toMessages(FORMAT).messages, fx.messages);
});

test('ai-sdk-ui: a system prompt given as text is written as a system UIMessage first', () => {
  const session = Session.fromMessages([{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] }], {
    ...FORMAT,
    system: 'Be brief.',
  });
  assert.deepEqual(session.toMessages(FORMAT).messages, [
    { id: 'system', role: 'system', parts: [{ type: 'text', text: 'Be brief.' }] },
    { id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] },
  ]);
  // Another given for the request wins over the kept one.
  assert.equal(session.toMessages({ ...FORMAT, system: 'Be long.' }).messages[0].parts[0].text, 'Be long.');
});

test('ai-sdk-ui: a pruned tool output comes back as the notice the model sees, in its tool part', async () => {
  const messages = toolLoop(3, 2);
  const session = Session.fromMessages(messages, FORMAT);
  const report = session.prune({ protectTokens: 500, minimumSavings: 0, now: 1 });
  assert.ok(report.prunedCount > 0);
  const notices = new Map(report.pruned.map((p) => [p.toolCallId, p.notice]));
  const out = session.toMessages(FORMAT).messages;
  const parts = out.flatMap((m) => m.parts).filter((p) => p.type === 'tool-read');
  assert.equal(parts.length, 12, 'every tool part is still there');
  const before = new Map(messages.flatMap((m) => m.parts).map((p) => [p.toolCallId, p.output]));
  for (const p of parts) {
    assert.equal(p.state, 'output-available');
    assert.equal(p.output, notices.get(p.toolCallId) ?? before.get(p.toolCallId), p.toolCallId);
  }
  await convertToModelMessages(out);
});

// ----- pi messages written as UIMessages ---------------------------------------------------------

test('ai-sdk-ui: a pi session (tool calls, thinking with signatures, images) is written as UIMessages the AI SDK converts', async () => {
  const session = Session.create();
  const anthropic = { api: 'anthropic-messages', provider: 'anthropic', model: 'claude-x' };
  const openai = { api: 'openai-responses', provider: 'openai', model: 'gpt-x' };
  const reasoning = { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'ENC' };
  for (const m of [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
      ],
    },
    {
      role: 'assistant',
      ...anthropic,
      content: [
        { type: 'thinking', thinking: 'hmm', thinkingSignature: 'SIG' },
        { type: 'redactedThinking', data: 'RED' },
        { type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'a' } },
        { type: 'toolCall', id: 't2', name: 'read', arguments: { path: 'b' } },
      ],
      stopReason: 'toolUse',
    },
    { role: 'toolResult', toolCallId: 't1', toolName: 'read', content: [{ type: 'text', text: 'A' }], isError: false },
    {
      role: 'toolResult',
      toolCallId: 't2',
      toolName: 'read',
      content: [
        { type: 'text', text: 'no such file' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
      ],
      isError: true,
    },
    {
      role: 'assistant',
      ...openai,
      content: [
        { type: 'thinking', thinking: '', thinkingSignature: JSON.stringify(reasoning) },
        { type: 'text', text: 'A, and b is missing', textSignature: JSON.stringify({ v: 1, id: 'msg_1' }) },
      ],
      stopReason: 'stop',
    },
    { role: 'developer', content: [{ type: 'text', text: 'be kind' }] },
  ]) {
    session.appendMessage(m);
  }
  const out = session.toMessages(FORMAT);
  const [user, assistant, developer] = out.messages;
  assert.deepEqual(user.parts, [
    { type: 'text', text: 'look' },
    { type: 'file', mediaType: 'image/png', url: `data:image/png;base64,${PNG}` },
  ]);
  assert.equal(assistant.role, 'assistant');
  assert.deepEqual(
    assistant.parts.map((p) => p.type),
    ['step-start', 'reasoning', 'reasoning', 'tool-read', 'tool-read', 'step-start', 'reasoning', 'text'],
  );
  assert.deepEqual(assistant.parts[1].providerMetadata, { anthropic: { signature: 'SIG' } });
  assert.deepEqual(assistant.parts[2].providerMetadata, { anthropic: { redactedData: 'RED' } });
  assert.deepEqual(assistant.parts[3], {
    type: 'tool-read',
    toolCallId: 't1',
    state: 'output-available',
    input: { path: 'a' },
    output: 'A',
  });
  assert.deepEqual(assistant.parts[4].errorText, 'no such file');
  assert.deepEqual(assistant.parts[6].providerMetadata, {
    openai: { itemId: 'rs_1', reasoningEncryptedContent: 'ENC' },
  });
  assert.deepEqual(assistant.parts[7].providerMetadata, { openai: { itemId: 'msg_1' } });
  assert.equal(developer.role, 'user');
  assert.deepEqual(
    out.warnings.map((w) => w.code),
    ['W_DROPPED', 'W_CONVERTED'],
    'the tool result image, the developer role',
  );
  const model = await convertToModelMessages(out.messages);
  assert.deepEqual(
    model.map((m) => m.role),
    ['user', 'assistant', 'tool', 'assistant', 'user'],
  );
  assert.deepEqual(model[1].content[0].providerOptions, { anthropic: { signature: 'SIG' } });
  assert.equal(new Set(out.messages.map((m) => m.id)).size, out.messages.length, 'ids are unique');
});

test('ai-sdk-ui: a UI history written as pi keeps the tool pairing, and as UIMessages again the same history', () => {
  const fx = histories.find((f) => f.file === 'multi-step-tools.json');
  const pi = Session.fromMessages(fx.messages, FORMAT).toMessages({ format: 'pi' }).messages;
  const again = Session.fromMessages(pi, { format: 'pi' }).toMessages(FORMAT).messages;
  assert.deepStrictEqual(again, fx.messages);
  // Without the kept members, a sensible history: one assistant UIMessage with its three steps.
  const plain = Session.fromMessages(bare(pi), { format: 'pi' }).toMessages(FORMAT).messages;
  assert.deepEqual(
    plain.map((m) => m.role),
    ['user', 'assistant', 'user', 'assistant'],
  );
  assert.deepEqual(plain[1].parts.filter((p) => p.type === 'step-start').length, 3);
  assert.ok(plain[1].parts.filter((p) => p.type.startsWith('tool-')).every((p) => p.state.startsWith('output-')));
});

// ----- compaction -------------------------------------------------------------------------------

const words = (n, tag) => `${tag}: ${'lorem ipsum dolor sit amet '.repeat(n)}`;

/** `turns` user prompts, each answered by one assistant UIMessage of `steps` steps with two parallel calls. */
function toolLoop(turns, steps) {
  const messages = [];
  for (let t = 0; t < turns; t++) {
    messages.push({ id: `u${t}`, role: 'user', parts: [{ type: 'text', text: words(20, `q${t}`) }] });
    const parts = [];
    for (let s = 0; s < steps; s++) {
      parts.push({ type: 'step-start' }, { type: 'text', text: words(5, `t${t}s${s}`) });
      for (let c = 0; c < 2; c++) {
        parts.push({
          type: 'tool-read',
          toolCallId: `c${t}-${s}-${c}`,
          state: 'output-available',
          input: { path: `f${t}${s}${c}` },
          output: words(30 + ((t * 7 + s * 3 + c) % 5) * 40, `out${t}${s}${c}`),
        });
      }
    }
    parts.push({ type: 'step-start' }, { type: 'text', text: `turn ${t} done` });
    messages.push({ id: `a${t}`, role: 'assistant', metadata: { turn: t }, parts });
  }
  return messages;
}

test('ai-sdk-ui: prepareCompaction cuts at an entry that begins a step, never at a tool result', () => {
  const session = Session.fromMessages(toolLoop(6, 3), FORMAT);
  const roles = new Map(session.index().map((e) => [e.id, e.role]));
  const seen = new Set();
  for (let keep = 50; keep <= 12_000; keep += 150) {
    const p = session.prepareCompaction({ keepRecentTokens: keep });
    const role = roles.get(p.firstKeptEntryId);
    assert.ok(role === 'user' || role === 'assistant', `keep ${keep}: cut at a ${role}`);
    const kept = session.entry(p.firstKeptEntryId).message;
    if (role === 'assistant') seen.add(kept.ctxfold.g);
    // The kept region holds every result of every call it holds.
    const calls = new Set();
    const results = new Set();
    for (const id of p.recentMessages) {
      const m = session.entry(id).message;
      if (m.role === 'assistant') for (const b of m.content) if (b.type === 'toolCall') calls.add(b.id);
      if (m.role === 'toolResult') results.add(m.toolCallId);
    }
    assert.deepEqual(
      [...results].filter((id) => !calls.has(id)),
      [],
      `keep ${keep}: a result without its call`,
    );
    assert.deepEqual(
      [...calls].filter((id) => !results.has(id)),
      [],
      `keep ${keep}: a call without its result`,
    );
  }
  assert.ok(seen.size >= 3, `cuts fell at several step starts inside UIMessages: ${[...seen]}`);
});

test('ai-sdk-ui: a compacted view is the data-compaction UIMessage, then the kept UIMessages from the step of the cut', async () => {
  const messages = toolLoop(4, 3);
  const session = Session.fromMessages(messages, FORMAT);
  // Keep from the third step (group 2) of the third turn's assistant UIMessage.
  const ctx = session.buildContext();
  const at = ctx.messages.findIndex((m) => m.ctxfold?.id === 'a2' && m.ctxfold.g === 2);
  const firstKeptEntryId = ctx.entryIds[at];
  const compactionId = session.appendCompaction({ summary: 'S', firstKeptEntryId, tokensBefore: 1000 });
  const out = session.toMessages(FORMAT);
  assert.deepEqual(out.warnings, []);
  const [marker, ...kept] = out.messages;
  assert.equal(marker.id, compactionId);
  assert.equal(marker.role, 'user');
  assert.deepEqual(marker.parts[0], {
    type: 'data-compaction',
    id: compactionId,
    data: { summary: 'S', tokensBefore: 1000, firstKeptMessageId: 'a2', frames: 0 },
  });
  assert.equal(marker.parts[1].type, 'text');
  assert.match(marker.parts[1].text, /<summary>\nS\n<\/summary>/);
  // The kept part of a2 starts at its third step; the turns after it are whole.
  const original = messages.find((m) => m.id === 'a2');
  const third = original.parts.map((p, j) => (p.type === 'step-start' ? j : -1)).filter((j) => j >= 0)[2];
  assert.deepStrictEqual(kept[0], { ...original, parts: original.parts.slice(third) });
  assert.deepStrictEqual(kept.slice(1), messages.slice(messages.indexOf(original) + 1));
  // Every call kept has its output; the AI SDK converts the view with each call answered.
  const model = await convertToModelMessages(out.messages);
  assert.equal(model[0].role, 'user');
  const calls = model.flatMap((m) => (m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool-call') : []));
  const results = model.flatMap((m) => (m.role === 'tool' ? m.content.map((p) => p.toolCallId) : []));
  assert.deepEqual(
    calls.map((c) => c.toolCallId),
    results,
  );
  // The compacted view read back (the UI keeps it as its history) is written the same.
  const again = Session.fromMessages(out.messages, FORMAT);
  assert.equal(again.buildContext().messages[0].attribution, 'agent');
  assert.deepStrictEqual(again.toMessages(FORMAT).messages, out.messages);
});

test('ai-sdk-ui: a snapcompact compaction sends its frames as file parts of the compaction UIMessage', async () => {
  const messages = [];
  for (let i = 0; i < 60; i++) {
    messages.push(
      {
        id: `u${i}`,
        role: 'user',
        parts: [{ type: 'text', text: `Question ${i}: ${'why is the build slow? '.repeat(60)}` }],
      },
      {
        id: `a${i}`,
        role: 'assistant',
        parts: [{ type: 'step-start' }, { type: 'text', text: `Answer ${i}: ${'the cache is cold. '.repeat(120)}` }],
      },
    );
  }
  const session = Session.fromMessages(messages, {
    ...FORMAT,
    model: { provider: 'anthropic', id: 'claude-opus-4-7' },
  });
  const r = await session.compact({
    strategy: 'snapcompact',
    model: 'claude-opus-4-7',
    settings: { keepRecentTokens: 2_000 },
  });
  assert.equal(r.compactionEntry.method, 'snapcompact');
  const out = session.toMessages(FORMAT);
  const [marker] = out.messages;
  const files = marker.parts.filter((p) => p.type === 'file');
  assert.ok(files.length >= 1);
  assert.equal(marker.parts[0].data.frames, files.length);
  assert.equal(marker.parts[0].data.method, 'snapcompact');
  assert.ok(files.every((f) => f.mediaType === 'image/png' && f.url.startsWith('data:image/png;base64,iVBOR')));
  assert.equal(marker.parts[0].data.firstKeptMessageId, out.messages[1].id);
  const model = await convertToModelMessages(out.messages);
  assert.equal(model[0].content.filter((p) => p.type === 'file').length, files.length);
});

// ----- malformed input --------------------------------------------------------------------------

const malformed = fixtures.find((f) => f.file === 'malformed.json');
for (const c of malformed.cases) {
  test(`ai-sdk-ui malformed: ${c.description} → E_INVALID_MESSAGE at ${c.index} ${c.field || '(message)'}`, () => {
    assert.throws(
      () => Session.fromMessages(c.messages, FORMAT),
      (err) => err.code === 'E_INVALID_MESSAGE' && err.index === c.index && err.field === c.field,
    );
    // appendMessages leaves the session as it was.
    const session = Session.fromMessages([{ id: 'x', role: 'user', parts: [{ type: 'text', text: 'x' }] }], FORMAT);
    const size = session.size;
    assert.throws(() => session.appendMessages(c.messages, FORMAT), { code: 'E_INVALID_MESSAGE' });
    assert.equal(session.size, size);
  });
}

test('ai-sdk-ui malformed: a tool output that is not JSON is E_INVALID_MESSAGE, not a crash', () => {
  const part = { type: 'tool-t', toolCallId: 'c', state: 'output-available', input: {}, output: { n: 1n } };
  assert.throws(
    () => Session.fromMessages([{ id: 'a', role: 'assistant', parts: [part] }], FORMAT),
    (err) => err.code === 'E_INVALID_MESSAGE' && err.index === 0 && err.field === 'parts[0].output',
  );
});

test('ai-sdk-ui: a 50 MB text and a 50 MB tool output go through, in time linear in their size', () => {
  const time = (n) => {
    const big = 'x'.repeat(n);
    const t0 = performance.now();
    const session = Session.fromMessages(
      [
        { id: 'u', role: 'user', parts: [{ type: 'text', text: big }] },
        {
          id: 'a',
          role: 'assistant',
          parts: [{ type: 'tool-t', toolCallId: 'c', state: 'output-available', input: {}, output: big }],
        },
      ],
      FORMAT,
    );
    const out = session.toMessages(FORMAT).messages;
    const ms = performance.now() - t0;
    assert.equal(out[0].parts[0].text.length, n);
    assert.equal(out[1].parts[0].output.length, n);
    return ms;
  };
  const small = time(5_000_000);
  const large = time(50_000_000);
  assert.ok(large < 30 * Math.max(small, 20), `50 MB took ${large.toFixed(0)} ms, 5 MB ${small.toFixed(0)} ms`);
});

// ----- properties -------------------------------------------------------------------------------

function generator(seed) {
  const r = rng(seed);
  const int = (n) => Math.floor(r() * n);
  const pick = (xs) => xs[int(xs.length)];
  const maybe = (p, f) => (r() < p ? f() : undefined);
  let ids = 0;
  const text = () => pick(['', 'a', 'hello world', 'ünïcødé ✓', '{"json":true}', 'line\nbreak', 'x'.repeat(int(200))]);
  const json = () => pick([null, 1, 'two', true, [1, 'a'], { a: { b: [null] } }, {}, '']);
  const meta = () =>
    pick([
      { anthropic: { signature: `sig${int(99)}` } },
      { openai: { itemId: `it_${int(99)}` } },
      { google: { thoughtSignature: `g${int(9)}` } },
      { custom: { x: 1 } },
    ]);
  const set = (o, k, v) => {
    if (v !== undefined) o[k] = v;
    return o;
  };
  const toolPart = () => {
    const state = pick([
      'input-streaming',
      'input-available',
      'approval-requested',
      'approval-responded',
      'output-available',
      'output-error',
      'output-denied',
    ]);
    const dynamic = r() < 0.3;
    const p = dynamic
      ? { type: 'dynamic-tool', toolName: pick(['mcp_a', 'b']), toolCallId: `call${ids++}` }
      : { type: `tool-${pick(['read', 'write', 'search'])}`, toolCallId: `call${ids++}` };
    p.state = state;
    if (state !== 'input-streaming' || r() < 0.5) p.input = r() < 0.7 ? { path: text() } : json();
    if (state === 'output-error' && r() < 0.3) delete p.input;
    if (state === 'output-available') p.output = r() < 0.5 ? text() : json();
    if (state === 'output-error') p.errorText = text();
    if (state === 'approval-requested') p.approval = { id: `ap${ids++}` };
    if (state === 'approval-responded') p.approval = { id: `ap${ids++}`, approved: r() < 0.5 };
    if (state === 'output-denied') p.approval = set({ id: `ap${ids++}`, approved: false }, 'reason', maybe(0.5, text));
    if (state === 'output-available' && r() < 0.2) p.approval = { id: `ap${ids++}`, approved: true };
    set(p, 'callProviderMetadata', maybe(0.3, meta));
    set(
      p,
      'providerExecuted',
      maybe(0.1, () => r() < 0.5),
    );
    set(p, 'title', maybe(0.1, text));
    set(
      p,
      'preliminary',
      maybe(0.05, () => true),
    );
    return p;
  };
  const file = () =>
    pick([
      { type: 'file', mediaType: 'image/png', url: `data:image/png;base64,${PNG}` },
      { type: 'file', mediaType: 'image/jpeg', filename: 'a.jpg', url: 'https://x.example/a.jpg' },
      { type: 'file', mediaType: 'application/pdf', url: 'data:application/pdf;base64,JVBERi0=' },
      { type: 'file', mediaType: 'image', url: `data:image/png;base64,${PNG}` },
    ]);
  const assistantPart = () => {
    switch (int(10)) {
      case 0:
      case 1:
        return set(
          set(
            { type: 'text', text: text() },
            'state',
            maybe(0.3, () => pick(['streaming', 'done'])),
          ),
          'providerMetadata',
          maybe(0.3, meta),
        );
      case 2:
        return set(
          set({ type: 'reasoning', text: text() }, 'providerMetadata', maybe(0.6, meta)),
          'id',
          maybe(0.2, () => `r${ids++}`),
        );
      case 3:
      case 4:
        return toolPart();
      case 5:
        return { type: 'step-start' };
      case 6:
        return file();
      case 7:
        return { type: 'source-url', sourceId: `s${ids++}`, url: 'https://src.example' };
      case 8:
        return set(
          { type: `data-${pick(['a', 'b'])}`, data: json() },
          'id',
          maybe(0.5, () => `d${ids++}`),
        );
      default:
        return { type: 'step-start' };
    }
  };
  const userPart = () =>
    r() < 0.7 ? { type: 'text', text: text() } : r() < 0.5 ? file() : { type: 'data-x', data: json() };
  const message = (role) => {
    const n = int(role === 'assistant' ? 12 : 4);
    const parts = [];
    for (let j = 0; j < n; j++)
      parts.push(
        role === 'assistant' ? assistantPart() : role === 'user' ? userPart() : { type: 'text', text: text() },
      );
    return set({ id: `m${ids++}`, role, parts }, 'metadata', maybe(0.2, json));
  };
  return () => {
    const out = [];
    if (r() < 0.3) out.push(message('system'));
    const n = 1 + int(8);
    for (let i = 0; i < n; i++) out.push(message(r() < 0.1 ? 'system' : i % 2 === 0 ? 'user' : 'assistant'));
    return out;
  };
}

test('ai-sdk-ui property: 400 random valid histories round-trip to the same JSON and convert with the AI SDK', async () => {
  const next = generator(2109);
  for (let c = 0; c < 400; c++) {
    const messages = next();
    const session = Session.fromMessages(messages, FORMAT);
    const out = session.toMessages(FORMAT);
    assert.deepStrictEqual(out.messages, messages, `case ${c}`);
    assert.deepEqual(out.warnings, [], `case ${c}`);
    // Other formats get a view with every call paired.
    const llm = session.toLlmMessages();
    const calls = new Set(
      llm.flatMap((m) =>
        m.role === 'assistant' ? m.content.filter((b) => b.type === 'toolCall').map((b) => b.id) : [],
      ),
    );
    for (const m of llm) if (m.role === 'toolResult') assert.ok(calls.has(m.toolCallId), `case ${c}: orphan result`);
    await convertToModelMessages(out.messages);
  }
});

test('ai-sdk-ui property: random mutations of valid histories throw nothing but E_INVALID_MESSAGE', () => {
  const next = generator(77);
  const r = rng(5);
  const wrong = [null, 0, -1, '', 'x', true, [], {}, [null], { type: 'text' }, 'tool-', 'data-', 'output-available'];
  /** Every [object, key] of a JSON value. */
  const slots = (v, acc = []) => {
    if (v !== null && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        acc.push([v, k]);
        slots(v[k], acc);
      }
    }
    return acc;
  };
  let invalid = 0;
  for (let c = 0; c < 400; c++) {
    const messages = next();
    const all = slots(messages);
    for (let n = 1 + Math.floor(r() * 3); n > 0 && all.length > 0; n--) {
      const [o, k] = all[Math.floor(r() * all.length)];
      if (r() < 0.2 && !Array.isArray(o)) delete o[k];
      else o[k] = wrong[Math.floor(r() * wrong.length)];
    }
    try {
      const session = Session.fromMessages(messages, FORMAT);
      session.toMessages(FORMAT);
      session.toMessages({ format: 'pi' });
    } catch (err) {
      assert.equal(err.code, 'E_INVALID_MESSAGE', `case ${c}: ${err.stack}`);
      assert.equal(typeof err.index, 'number');
      assert.equal(typeof err.field, 'string');
      invalid++;
    }
  }
  assert.ok(invalid > 100, `mutations found invalid: ${invalid}`);
});

// ----- types ------------------------------------------------------------------------------------

test('ai-sdk-ui types: a tsc --strict consumer of fromMessages / toMessages with UIMessages', () => {
  typeCheck(
    'formats-ai-sdk-ui',
    { ...STRICT, skipLibCheck: false },
    `
    import { Session, type AiSdkUiMessage, type AiSdkUiCompactionData, type AiSdkUiPart } from 'ctxfold';
    const history: AiSdkUiMessage[] = [
      { id: 's', role: 'system', parts: [{ type: 'text', text: 'Be brief.' }] },
      { id: 'u1', role: 'user', metadata: { at: 1 }, parts: [{ type: 'text', text: 'hi' }, { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,AA' }] },
      {
        id: 'a1',
        role: 'assistant',
        parts: [
          { type: 'step-start' },
          { type: 'reasoning', text: 'r', providerMetadata: { anthropic: { signature: 's' } } },
          { type: 'tool-read', toolCallId: 'c1', state: 'output-available', input: { path: 'a' }, output: 'A' },
          { type: 'dynamic-tool', toolName: 'x', toolCallId: 'c2', state: 'output-error', input: {}, errorText: 'e' },
          { type: 'tool-rm', toolCallId: 'c3', state: 'approval-requested', input: {}, approval: { id: 'ap' } },
          { type: 'source-url', sourceId: 's1', url: 'https://x' },
          { type: 'data-weather', data: { t: 1 } },
        ],
      },
    ];
    const session = Session.fromMessages<'ai-sdk-ui'>(history, { format: 'ai-sdk-ui', system: 'Be brief.' });
    const out = session.toMessages<'ai-sdk-ui'>({ format: 'ai-sdk-ui' });
    const first: AiSdkUiMessage | undefined = out.messages[0];
    const part: AiSdkUiPart | undefined = first?.parts[0];
    let frames = 0;
    if (part?.type === 'data-compaction') {
      const data = part.data as AiSdkUiCompactionData;
      const kept: string | undefined = data.firstKeptMessageId;
      frames = data.frames + (kept === undefined ? 0 : 1);
    }
    // @ts-expect-error a UIMessage has no tool role
    const bad: AiSdkUiMessage = { id: 'x', role: 'tool', parts: [] };
    // @ts-expect-error output-available needs an output
    const noOutput: AiSdkUiPart = { type: 'tool-read', toolCallId: 'c', state: 'output-available', input: {} };
    export { out, bad, noOutput, frames };
    `,
  );
});

test("ai-sdk-ui types: the ai package's UIMessage[] goes in as it is, and what comes out goes to convertToModelMessages", () => {
  // The SDK's own declarations need the DOM and Node.js globals: they are not checked here.
  typeCheck(
    'formats-ai-sdk-ui-with-ai',
    { ...STRICT, skipLibCheck: true, lib: ['es2022', 'dom'] },
    `
    import { convertToModelMessages, type UIMessage } from 'ai';
    import { Session } from 'ctxfold';
    type Tools = { weather: { input: { city: string }; output: { t: number } } };
    declare const plain: UIMessage[];
    declare const typed: Array<UIMessage<{ createdAt: number }, { weather: { t: number } }, Tools>>;
    const session = Session.fromMessages<'ai-sdk-ui'>(plain, { format: 'ai-sdk-ui' });
    session.appendMessages<'ai-sdk-ui'>(typed, { format: 'ai-sdk-ui' });
    const out = session.toMessages<'ai-sdk-ui'>({ format: 'ai-sdk-ui' });
    const model = await convertToModelMessages(out.messages);
    const back: UIMessage[] = out.messages;
    export { model, back };
    `,
  );
});
