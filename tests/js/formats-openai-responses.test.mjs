// The `openai-responses` format (issue 21): the `input` items of an OpenAI Responses API
// request, read into a session and written back. Fixtures (tests/fixtures/formats/
// openai-responses/) follow the API reference's input item shapes; what a session of another
// format writes is checked against the API's rules for an input.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import {
  assertMutationsRefusedCleanly,
  assertRoundTrips,
  bare,
  bestRoundTrip,
  formatFixtures,
  mutateOne,
  random,
  STRICT,
  typeCheck,
} from './support/formats.mjs';

const FORMAT = { format: 'openai-responses' };
const RESPONSES_MODEL = { provider: 'openai', api: 'openai-responses', id: 'gpt-5.2' };
const fixtures = formatFixtures('openai-responses');
const histories = fixtures.filter((f) => Array.isArray(f.messages));
const fixture = (file) => histories.find((f) => f.file === file);

const codes = (warnings) => warnings.map((w) => w.code);
const readWarnings = (warnings) =>
  warnings.filter((w) => w.code.startsWith('W_')).map((w) => [w.code, w.index, w.path ?? null]);
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/**
 * The API's rules for an input that a writer must keep (Responses API reference, function
 * calling guide): known item types and part types; message content a string or parts of its
 * role's kinds; every function_call answered by one function_call_output after it, and no
 * output without its call; call ids unique; item ids, when given, of the API's prefixes.
 */
function assertValidInput(items) {
  const inputParts = ['input_text', 'input_image', 'input_file'];
  const calls = new Map();
  items.forEach((item, i) => {
    const at = `input[${i}] ${JSON.stringify(item).slice(0, 120)}`;
    const type = item.type ?? 'message';
    switch (type) {
      case 'message': {
        assert.ok(['user', 'assistant', 'system', 'developer'].includes(item.role), at);
        if (typeof item.content === 'string') break;
        assert.ok(Array.isArray(item.content), at);
        for (const p of item.content) {
          if (item.role === 'assistant') assert.ok(p.type === 'output_text' || p.type === 'refusal', at);
          else assert.ok(inputParts.includes(p.type), `${at}: part ${p.type}`);
          if (p.type === 'input_image')
            assert.match(p.image_url, /^(data:image\/[a-z]+;base64,|https:)/, `${at}: image_url`);
        }
        if (item.id !== undefined) assert.match(item.id, /^msg_/, at);
        break;
      }
      case 'reasoning':
        assert.equal(typeof item.id, 'string', `${at}: a reasoning item has its id`);
        assert.ok(Array.isArray(item.summary), at);
        break;
      case 'function_call':
      case 'custom_tool_call':
        assert.equal(typeof item.call_id, 'string', at);
        assert.ok(!calls.has(item.call_id), `${at}: call ids are unique`);
        calls.set(item.call_id, false);
        if (item.id !== undefined) assert.match(item.id, /^(fc|fcr|ctc)_/, at);
        if (type === 'function_call') {
          const args = JSON.parse(item.arguments || '{}');
          assert.ok(args !== null && typeof args === 'object' && !Array.isArray(args), at);
        }
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        assert.equal(calls.get(item.call_id), false, `${at}: answers a call before it, once`);
        calls.set(item.call_id, true);
        assert.ok(
          typeof item.output === 'string' || item.output.every((p) => inputParts.includes(p.type)),
          `${at}: output`,
        );
        break;
      default:
        assert.fail(`${at}: type ${type}`);
    }
  });
  for (const [id, answered] of calls) assert.ok(answered, `call ${id} answered`);
}

/** A Responses tool loop: per turn a question, reasoning, parallel calls, their outputs, an answer. */
function toolLoop(turns, outputChars = 40, width = 2) {
  const items = [{ role: 'developer', content: 'You are a coding agent.' }];
  for (let t = 0; t < turns; t++) {
    items.push({ role: 'user', content: `Question ${t}: read the files.` });
    items.push({
      type: 'reasoning',
      id: `rs_${t}`,
      summary: [{ type: 'summary_text', text: `Turn ${t} needs ${width} reads.` }],
      encrypted_content: `ENC${t}`,
    });
    const ids = Array.from({ length: width }, (_, k) => `call_${t}_${k}`);
    ids.forEach((id, k) => {
      items.push({
        type: 'function_call',
        id: `fc_${t}_${k}`,
        call_id: id,
        name: 'read',
        arguments: JSON.stringify({ path: `src/f${t}_${k}.ts` }),
      });
    });
    for (const id of ids)
      items.push({ type: 'function_call_output', call_id: id, output: `${id}: ${'x'.repeat(outputChars)}` });
    items.push({
      type: 'message',
      role: 'assistant',
      id: `msg_${t}`,
      content: [{ type: 'output_text', text: `Answer ${t}.`, annotations: [] }],
    });
  }
  return items;
}

const messageIds = (session) =>
  session
    .index()
    .filter((e) => e.type === 'message')
    .map((e) => e.id);

// ----- round trips -------------------------------------------------------------------------------

for (const fx of histories) {
  test(`openai-responses: ${fx.file} round-trips as the same JSON`, () => {
    const session = Session.fromMessages(fx.messages, FORMAT);
    assert.deepEqual(readWarnings(session.warnings), fx.readWarnings ?? []);
    const out = session.toMessages(FORMAT);
    assert.equal(JSON.stringify(out.messages), JSON.stringify(fx.messages));
    assert.deepStrictEqual(out.messages, fx.messages);
    assert.deepEqual(out.warnings, []);
    assert.equal(out.system, undefined, 'no instructions: the system prompt is in the input');
    // And after the session file is written and read back.
    const reloaded = Session.fromJsonl(session.toJsonl()).toMessages(FORMAT).messages;
    assert.equal(JSON.stringify(reloaded), JSON.stringify(fx.messages));
    // What pi sees pairs every tool result with a call of its name before it.
    const calls = new Map();
    for (const m of bare(session.toLlmMessages())) {
      if (m.role === 'assistant') for (const b of m.content) if (b.type === 'toolCall') calls.set(b.id, b.name);
      if (m.role === 'toolResult') assert.equal(calls.get(m.toolCallId), m.toolName, `${fx.file}: ${m.toolCallId}`);
    }
    // Read by a Responses model, the view is the same.
    const native = session.toMessages({ ...FORMAT, model: RESPONSES_MODEL });
    assert.equal(JSON.stringify(native.messages), JSON.stringify(fx.messages));
  });
}

test('openai-responses: appended turns round-trip with the history read before them', () => {
  let checked = 0;
  for (const fx of histories) {
    const cut = fx.messages.findIndex((m, i) => i > 0 && m.role === 'user');
    if (cut < 0) continue;
    const session = Session.fromMessages(fx.messages.slice(0, cut), FORMAT);
    const { warnings } = session.appendMessages(fx.messages.slice(cut), FORMAT);
    assert.deepEqual(
      [...readWarnings(session.warnings), ...readWarnings(warnings)].map(([code, , p]) => [code, p]),
      (fx.readWarnings ?? []).map(([code, , p]) => [code, p]),
      fx.file,
    );
    assert.equal(JSON.stringify(session.toMessages(FORMAT).messages), JSON.stringify(fx.messages), fx.file);
    checked++;
  }
  assert.ok(checked >= 6, `${checked} fixtures cut`);
});

test('openai-responses: outputs appended after their calls find them; an unknown one leaves the session as it was', () => {
  const items = toolLoop(2);
  // The calls of turn 0 (with their reasoning) in one batch, their outputs in the next.
  const firstOutput = items.findIndex((m) => m.type === 'function_call_output');
  const session = Session.fromMessages(items.slice(0, firstOutput), FORMAT);
  const before = session.toJsonl();
  assert.throws(
    () => session.appendMessages([{ type: 'function_call_output', call_id: 'call_9_9', output: 'x' }], FORMAT),
    (err) => err.code === 'E_INVALID_MESSAGE' && err.index === 0 && err.field === 'call_id',
  );
  assert.equal(session.toJsonl(), before);
  session.appendMessages(items.slice(firstOutput), FORMAT);
  assert.deepStrictEqual(session.toMessages(FORMAT).messages, items);
  const results = bare(session.toLlmMessages()).filter((m) => m.role === 'toolResult');
  assert.deepEqual(
    results.map((m) => [m.toolCallId, m.toolName]),
    [
      ['call_0_0', 'read'],
      ['call_0_1', 'read'],
      ['call_1_0', 'read'],
      ['call_1_1', 'read'],
    ],
  );
});

test("openai-responses: an output appended to a pi session finds its call by pi's call_id|item_id", () => {
  const session = Session.fromMessages(
    [
      { role: 'user', content: 'Read a.ts', timestamp: 1 },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'call_7|fc_7', name: 'read', arguments: { path: 'a.ts' } }],
        api: 'openai-responses',
        provider: 'openai',
        model: 'gpt-5',
        usage: { input: 10, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 12 },
        stopReason: 'toolUse',
        timestamp: 2,
      },
    ],
    { format: 'pi' },
  );
  session.appendMessages([{ type: 'function_call_output', call_id: 'call_7', output: 'export {}' }], FORMAT);
  const result = session.toLlmMessages().at(-1);
  assert.deepEqual([result.role, result.toolCallId, result.toolName], ['toolResult', 'call_7|fc_7', 'read']);
  const out = session.toMessages(FORMAT).messages;
  assert.deepStrictEqual(out.slice(-2), [
    { type: 'function_call', id: 'fc_7', call_id: 'call_7', name: 'read', arguments: '{"path":"a.ts"}' },
    { type: 'function_call_output', call_id: 'call_7', output: 'export {}' },
  ]);
});

test("openai-chat: a tool message does not pair with a call of pi's call_id|item_id form by its call_id", () => {
  // Only the Responses reader knows that form; the chat reader would keep the short id, and the
  // result would then answer no call.
  const session = Session.fromMessages(
    [
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'call_8|fc_8', name: 'read', arguments: {} }],
        api: 'openai-responses',
        provider: 'openai',
        model: 'gpt-5',
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
        stopReason: 'toolUse',
        timestamp: 1,
      },
    ],
    { format: 'pi' },
  );
  assert.throws(
    () => session.appendMessages([{ role: 'tool', tool_call_id: 'call_8', content: 'x' }], { format: 'openai-chat' }),
    (err) => err.code === 'E_INVALID_MESSAGE' && err.field === 'tool_call_id',
  );
});

// ----- what pi sees ------------------------------------------------------------------------------

test('openai-responses → pi: one assistant message per run of output items, reasoning signed with its item', () => {
  const { messages } = fixture('tool-calls.json');
  const session = Session.fromMessages(messages, FORMAT);
  const llm = bare(session.toLlmMessages());
  assert.deepEqual(
    llm.map((m) => m.role),
    ['user', 'assistant', 'toolResult', 'toolResult', 'toolResult', 'assistant', 'user', 'assistant'].concat([
      'toolResult',
      'toolResult',
      'assistant',
    ]),
  );
  const [thinking, ...calls] = llm[1].content;
  assert.equal(thinking.type, 'thinking');
  assert.equal(thinking.thinking, 'Three lookups, all independent.');
  assert.deepEqual(JSON.parse(thinking.thinkingSignature), messages[1], 'the signature is the item itself');
  assert.deepEqual(
    calls.map((b) => [b.type, b.id, b.name, b.arguments]),
    [
      ['toolCall', 'call_oslo', 'get_weather', { city: 'Oslo' }],
      ['toolCall', 'call_bergen', 'get_weather', { city: 'Bergen' }],
      ['toolCall', 'call_time', 'get_time', { tz: 'Europe/Oslo' }],
    ],
  );
  assert.deepEqual([llm[1].api, llm[1].provider, llm[1].stopReason], ['openai-responses', 'openai', 'toolUse']);
  assert.deepEqual(
    llm.slice(2, 5).map((m) => [m.toolCallId, m.toolName, m.content.map((b) => b.text)]),
    [
      ['call_bergen', 'get_weather', ['{"temp":4,"sky":"rain"}']],
      ['call_oslo', 'get_weather', ['-3°C', 'snow']],
      ['call_time', 'get_time', ['Error: time service unavailable']],
    ],
  );
  // An assistant message item's text is signed with its id, as pi's Responses provider signs it.
  assert.deepEqual(llm[5].content[0].textSignature, JSON.stringify({ v: 1, id: 'msg_68af4033c2d48193' }));
  assert.deepEqual(llm[7].content[1].arguments, {}, 'empty argument text is no arguments');
});

test('openai-responses → pi: reasoning summaries joined, reasoning_text content, phases in the text signature', () => {
  const session = Session.fromMessages(fixture('reasoning.json').messages, FORMAT);
  const thinking = bare(session.toLlmMessages())
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.content.filter((b) => b.type === 'thinking'));
  assert.deepEqual(
    thinking.map((b) => b.thinking),
    [
      '**Factoring 391**\n\nTry small primes.\n\n17 × 23 = 391.',
      '',
      'sqrt(397) < 20; no prime up to 19 divides it.',
      'Second thought, same turn.',
    ],
  );
  assert.equal(JSON.parse(thinking[0].thinkingSignature).encrypted_content, 'gAAAAABo-ENCRYPTED-0001');
  const chat = Session.fromMessages(fixture('text-chat.json').messages, FORMAT);
  const signed = bare(chat.toLlmMessages())
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.content.map((b) => b.textSignature && JSON.parse(b.textSignature)));
  assert.deepEqual(signed, [
    undefined,
    { v: 1, id: 'msg_67ccd3acc8d48190a77525dc6de64b4104becb25c5e2a5a9' },
    { v: 1, id: 'msg_0a1b2c3d4e5f', phase: 'commentary' },
    { v: 1, id: 'msg_0a1b2c3d4e60', phase: 'final_answer' },
    { v: 1, id: 'msg_0a1b2c3d4e60', phase: 'final_answer' },
    undefined,
  ]);
});

test('openai-responses → pi: data: images as base64, URLs and files as text that says what they were', () => {
  const session = Session.fromMessages(fixture('images.json').messages, FORMAT);
  const llm = bare(session.toLlmMessages());
  assert.deepEqual(
    llm[0].content.map((b) => (b.type === 'image' ? `image ${b.mimeType}` : b.text)),
    [
      'What is in these?',
      'image image/png',
      'image image/jpeg',
      'image image/webp',
      '[image: https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg]',
      '[image: file-6F2ksmvXxt4VdoqmHRw6kL]',
      '[file: file-6F2ksmvXxt4VdoqmHRw6kM]',
      '[file: draconomicon.pdf]',
    ],
  );
  assert.equal(llm[0].content[2].data, '/9j/4AAQSkZJRg==');
  const result = llm.find((m) => m.role === 'toolResult');
  assert.deepEqual(
    result.content.map((b) => b.type),
    ['text', 'image'],
  );
  // Another format reads the describing text.
  const chat = session.toMessages({ format: 'openai-chat' }).messages;
  assert.match(JSON.stringify(chat[0]), /\[image: https:\/\/upload\.wikimedia\.org/);
});

test('openai-responses → pi: hosted-tool items, references and compaction items as describing text', () => {
  const session = Session.fromMessages(fixture('hosted-tools.json').messages, FORMAT);
  const texts = bare(session.toLlmMessages())
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.content.map((b) => b.text));
  assert.ok(texts.includes('[web_search_call: OpenAI news]'), texts.join('|'));
  assert.ok(texts.includes('[item_reference: msg_stored_123]'));
  assert.ok(texts.includes('[compaction: cmp_1]'));
  assert.ok(!JSON.stringify(bare(session.toLlmMessages())).includes('COMPACTED-HISTORY'));
});

test('openai-responses: every malformed fixture is E_INVALID_MESSAGE at its index and field, and appends nothing', () => {
  const session = Session.fromMessages([{ role: 'user', content: 'start' }], FORMAT);
  const before = session.toJsonl();
  const { cases } = fixtures.find((f) => f.file === 'malformed.json');
  assert.ok(cases.length >= 30);
  for (const c of cases) {
    assert.throws(
      () => Session.fromMessages(c.messages, FORMAT),
      (err) => err.code === 'E_INVALID_MESSAGE' && err.index === c.index && err.field === c.field,
      JSON.stringify(c),
    );
    assert.throws(() => session.appendMessages(c.messages, FORMAT), { code: 'E_INVALID_MESSAGE' });
    assert.equal(session.toJsonl(), before);
  }
});

test('openai-responses: an error quotes a huge input string by its first 40 characters', () => {
  const huge = 'r'.repeat(50 * 1024 * 1024);
  for (const [messages, field] of [
    [[{ role: huge, content: 'x' }], 'role'],
    [[{ type: huge }], 'type'],
    [[{ type: 'function_call_output', call_id: huge, output: 'x' }], 'call_id'],
  ]) {
    assert.throws(
      () => Session.fromMessages(messages, FORMAT),
      (err) => err.code === 'E_INVALID_MESSAGE' && err.field === field && err.message.length < 200,
    );
  }
});

// ----- writing another history ---------------------------------------------------------------------

test('pi → openai-responses: a session of another provider is a valid input; what changed is in warnings', () => {
  const pi = Session.fromMessages(
    [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Screenshots of both?' },
          { type: 'image', data: PNG, mimeType: 'image/png' },
        ],
      },
      {
        role: 'assistant',
        api: 'anthropic-messages',
        provider: 'anthropic',
        model: 'claude-opus-4-6',
        content: [
          { type: 'thinking', thinking: 'Two screenshots.', thinkingSignature: 'EqQBCkYIARgC' },
          { type: 'redactedThinking', data: 'opaque' },
          { type: 'text', text: 'Taking them.' },
          { type: 'toolCall', id: 'toolu_1', name: 'shot', arguments: { screen: 1 } },
          { type: 'toolCall', id: 'toolu_2', name: 'shot', arguments: { screen: 2 } },
        ],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'toolu_1',
        toolName: 'shot',
        content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
        isError: false,
      },
      {
        role: 'toolResult',
        toolCallId: 'toolu_2',
        toolName: 'shot',
        content: [
          { type: 'text', text: 'screen 2 is off' },
          { type: 'text', text: 'retry later' },
        ],
        isError: true,
      },
      { role: 'developer', content: 'The user is on a phone.' },
      {
        role: 'assistant',
        api: 'openai-responses',
        provider: 'openai',
        model: 'gpt-5.2',
        content: [
          {
            type: 'thinking',
            thinking: 'Retry.',
            thinkingSignature: JSON.stringify({ type: 'reasoning', id: 'rs_9', summary: [], encrypted_content: 'E9' }),
          },
          { type: 'toolCall', id: 'call_r|fc_r', name: 'shot', arguments: { screen: 2 } },
        ],
        stopReason: 'toolUse',
      },
      { role: 'toolResult', toolCallId: 'call_r|fc_r', toolName: 'shot', content: [], isError: false },
      {
        role: 'assistant',
        api: 'openai-responses',
        provider: 'openai',
        model: 'gpt-5.2',
        content: [
          {
            type: 'text',
            text: 'One worked',
            textSignature: JSON.stringify({ v: 1, id: 'msg_9', phase: 'final_answer' }),
          },
          { type: 'text', text: '.', textSignature: JSON.stringify({ v: 1, id: 'msg_9', phase: 'final_answer' }) },
        ],
        stopReason: 'stop',
      },
    ],
    { system: 'Be brief.' },
  );
  const out = pi.toMessages(FORMAT);
  assertValidInput(out.messages);
  assert.equal(out.system, 'Be brief.', 'the system prompt is the instructions');
  const image = { type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${PNG}` };
  const text = (t) => ({ type: 'output_text', text: t, annotations: [] });
  assert.deepStrictEqual(out.messages, [
    { role: 'user', content: [{ type: 'input_text', text: 'Screenshots of both?' }, image] },
    { type: 'message', role: 'assistant', content: [text('Two screenshots.')] },
    { type: 'message', role: 'assistant', content: [text('Taking them.')] },
    { type: 'function_call', call_id: 'toolu_1', name: 'shot', arguments: '{"screen":1}' },
    { type: 'function_call', call_id: 'toolu_2', name: 'shot', arguments: '{"screen":2}' },
    { type: 'function_call_output', call_id: 'toolu_1', output: [image] },
    { type: 'function_call_output', call_id: 'toolu_2', output: 'screen 2 is off\nretry later' },
    { role: 'developer', content: 'The user is on a phone.' },
    { type: 'reasoning', id: 'rs_9', summary: [], encrypted_content: 'E9' },
    { type: 'function_call', call_id: 'call_r', name: 'shot', arguments: '{"screen":2}', id: 'fc_r' },
    { type: 'function_call_output', call_id: 'call_r', output: '' },
    {
      type: 'message',
      role: 'assistant',
      content: [text('One worked'), text('.')],
      id: 'msg_9',
      phase: 'final_answer',
    },
  ]);
  assert.deepEqual(
    out.warnings.map((w) => [w.code, w.index, w.path]),
    [
      ['W_CONVERTED', 1, 'content[0]'],
      ['W_DROPPED', 1, 'content[1]'],
      ['W_CONVERTED', 3, undefined],
    ],
  );
});

test('pi → openai-responses: blocks and signatures without a Responses form are reported, never sent silently', () => {
  const pi = Session.fromMessages([
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      api: 'google-generative-ai',
      provider: 'google',
      model: 'gemini-3-pro',
      content: [
        { type: 'thinking', thinking: '', thinkingSignature: 'c2lnbmF0dXJl' },
        { type: 'anthropicServerTool', name: 'web_search', id: 'srvtoolu_1' },
        { type: 'text', text: 'done', textSignature: 'Q2lnbmF0dXJl' },
      ],
      stopReason: 'stop',
    },
  ]);
  const out = pi.toMessages(FORMAT);
  assert.deepStrictEqual(out.messages.at(-1), {
    type: 'message',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'done', annotations: [] }],
  });
  assert.deepEqual(
    out.warnings.map((w) => [w.code, w.path]),
    [
      ['W_DROPPED', 'content[0]'],
      ['W_DROPPED', 'content[1]'],
      ['W_DROPPED', 'content[2]'],
    ],
  );
  assertValidInput(out.messages);
});

test("pi → openai-responses: pi's freeform calls (customWireName) are custom_tool_call items, answered in kind", () => {
  const pi = Session.fromMessages([
    { role: 'user', content: 'patch it' },
    {
      role: 'assistant',
      api: 'openai-responses',
      provider: 'openai',
      model: 'gpt-5.2',
      content: [
        {
          type: 'toolCall',
          id: 'call_p|ctc_p',
          name: 'apply_patch',
          arguments: { input: '*** Begin Patch' },
          customWireName: 'apply_patch',
        },
        { type: 'toolCall', id: 'call_q|fc_q', name: 'ls', arguments: {}, thoughtSignature: 'fc_q' },
      ],
      stopReason: 'toolUse',
    },
    {
      role: 'toolResult',
      toolCallId: 'call_p|ctc_p',
      toolName: 'apply_patch',
      content: [{ type: 'text', text: 'ok' }],
      isError: false,
    },
    {
      role: 'toolResult',
      toolCallId: 'call_q|fc_q',
      toolName: 'ls',
      content: [{ type: 'text', text: 'a.txt' }],
      isError: false,
    },
  ]);
  const out = pi.toMessages(FORMAT);
  assertValidInput(out.messages);
  assert.deepStrictEqual(out.messages.slice(1), [
    { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch', id: 'ctc_p' },
    { type: 'function_call', call_id: 'call_q', name: 'ls', arguments: '{}', id: 'fc_q' },
    { type: 'custom_tool_call_output', call_id: 'call_p', output: 'ok' },
    { type: 'function_call_output', call_id: 'call_q', output: 'a.txt' },
  ]);
  assert.deepEqual(out.warnings, []);
  // And a freeform call read here is marked as pi's provider marks it.
  const read = Session.fromMessages(fixture('custom-tools.json').messages, FORMAT);
  const patch = bare(read.toLlmMessages())[1].content.find((b) => b.name === 'apply_patch');
  assert.deepEqual(
    [patch.id, patch.arguments.input.slice(0, 15), patch.customWireName],
    ['call_patch', '*** Begin Patch', 'apply_patch'],
  );
});

test('openai-responses → other formats: a history read here is a valid Chat Completions request', () => {
  const session = Session.fromMessages(fixture('tool-calls.json').messages, FORMAT);
  const chat = session.toMessages({ format: 'openai-chat' }).messages;
  const calls = chat.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []);
  assert.deepEqual(
    calls.map((c) => c.id),
    ['call_oslo', 'call_bergen', 'call_time', 'call_time_2', 'call_reminders'],
  );
  assert.deepEqual(
    chat.filter((m) => m.role === 'tool').map((m) => m.tool_call_id),
    ['call_bergen', 'call_oslo', 'call_time', 'call_time_2', 'call_reminders'],
  );
});

test('openai-responses: the system prompt — leading items as read, instructions given, another format’s as text', () => {
  const { messages } = fixture('system-messages.json');
  const session = Session.fromMessages(messages, FORMAT);
  assert.equal(session.toMessages().system, 'You are a support agent for Acme.\n\nAnswer in English. Cite the manual.');
  // Instructions given to toMessages replace the leading items and come back as `system`.
  const given = session.toMessages({ ...FORMAT, system: 'Other rules.' });
  assert.equal(given.system, 'Other rules.');
  assert.deepStrictEqual(given.messages, messages.slice(2));
  // fromMessages' system option (the request's instructions) is kept and sent as instructions.
  const opt = Session.fromMessages(messages.slice(2), { ...FORMAT, system: 'Given.' });
  assert.equal(opt.toMessages(FORMAT).system, 'Given.');
  assert.deepStrictEqual(opt.toMessages(FORMAT).messages, messages.slice(2));
  // A system prompt kept by another format is sent as its text, and the warning says so.
  const anthropic = Session.fromMessages([{ role: 'user', content: 'Hi' }], {
    format: 'anthropic',
    system: [{ type: 'text', text: 'Anthropic rules.', cache_control: { type: 'ephemeral' } }],
  });
  const out = anthropic.toMessages(FORMAT);
  assert.equal(out.system, 'Anthropic rules.');
  assert.deepStrictEqual(out.messages, [{ role: 'user', content: 'Hi' }]);
  assert.deepEqual(codes(out.warnings), ['W_CONVERTED']);
  // No system prompt: no instructions.
  assert.equal(Session.fromMessages([{ role: 'user', content: 'Hi' }], FORMAT).toMessages(FORMAT).system, undefined);
  // Later system items stay where they were, as developer messages for pi.
  const llm = bare(session.toLlmMessages());
  assert.deepEqual(
    llm.filter((m) => m.role === 'developer').map((m) => m.content),
    ['The customer is a premium subscriber.', [{ type: 'text', text: 'Offer a callback.' }]],
  );
});

// ----- compacted views ---------------------------------------------------------------------------

test('openai-responses compacted: the summary after the system prompt, the kept items as read, pairing intact', () => {
  const items = toolLoop(12);
  const session = Session.fromMessages(items, FORMAT);
  const ids = messageIds(session);
  // Keep from the ninth question on: 1 system item, then 7 items a turn (user, reasoning, 2 calls,
  // 2 outputs, answer), which are 5 messages (user, assistant, 2 results, assistant).
  const keptItem = 1 + 8 * 7;
  assert.equal(items[keptItem].content, 'Question 8: read the files.');
  session.appendCompaction({ summary: 'SUMMARY-TEXT', firstKeptEntryId: ids[8 * 5], tokensBefore: 1000 });
  const out = session.toMessages(FORMAT);
  assert.deepStrictEqual(out.messages[0], items[0]);
  assert.equal(out.messages[1].role, 'user');
  assert.match(JSON.stringify(out.messages[1].content), /SUMMARY-TEXT/);
  assert.deepStrictEqual(out.messages.slice(2), items.slice(keptItem));
  assert.deepEqual(out.warnings, []);
  assertValidInput(out.messages);
});

test('openai-responses compacted: snapcompact frames are data: PNG input_image parts of the summary message', async () => {
  const items = toolLoop(30, 2000, 3);
  const session = Session.fromMessages(items, FORMAT);
  const result = await session.compact({
    settings: { reserveTokens: 1000, keepRecentTokens: 2000 },
    strategy: 'snapcompact',
    model: 'gpt-5.2',
    now: 5000,
  });
  assert.equal(result.method, 'snapcompact');
  const out = session.toMessages(FORMAT);
  assert.equal(out.messages[0].role, 'developer');
  const summary = out.messages[1];
  assert.equal(summary.role, 'user');
  const images = summary.content.filter((p) => p.type === 'input_image');
  assert.ok(images.length > 0 && images.length <= 500, `${images.length} frames`);
  for (const p of images) {
    const [head, data] = p.image_url.split(',');
    assert.equal(head, 'data:image/png;base64');
    assert.equal(Buffer.from(data, 'base64').subarray(1, 4).toString(), 'PNG');
  }
  assertValidInput(out.messages);
  assert.deepEqual(out.warnings, []);
});

test('openai-responses compacted: an OpenAI-native compaction is replayed as its items for a Responses model', () => {
  const items = toolLoop(4);
  const session = Session.fromMessages(items, FORMAT);
  const ids = messageIds(session);
  const replacement = [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Question 0: read the files.' }] },
    { type: 'compaction', id: 'cmp_1', encrypted_content: 'ENC-NATIVE' },
  ];
  session.appendCompaction({
    summary: 'text summary',
    firstKeptEntryId: ids[10],
    tokensBefore: 90_000,
    method: 'remote',
    preserveData: {
      openaiRemoteCompaction: { provider: 'openai', replacementHistory: replacement, compactionItem: replacement[1] },
    },
  });
  const native = session.toMessages({ ...FORMAT, model: RESPONSES_MODEL });
  assert.deepEqual(native.warnings, []);
  assert.deepStrictEqual(native.messages.slice(0, 3), [items[0], ...replacement]);
  assert.ok(!JSON.stringify(native.messages).includes('text summary'));
  // Another reader (no Responses model) gets the summary text and the kept items.
  const plain = session.toMessages(FORMAT);
  assert.deepEqual(plain.warnings, []);
  assert.match(JSON.stringify(plain.messages[1]), /text summary/);
  assert.ok(!JSON.stringify(plain.messages).includes('ENC-NATIVE'));
  assertValidInput(plain.messages);
});

// ----- property tests ----------------------------------------------------------------------------

/** Random valid histories (`random` of support/formats.mjs, reproducible from `seed`) and mutations of them. */
function generator(seed) {
  const { int, chance, pick, text, shuffled } = random(seed);
  const inputPart = () =>
    pick([
      () => ({ type: 'input_text', text: text() }),
      () => ({ type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${PNG}` }),
      () => ({ type: 'input_image', image_url: `data:image/jpeg;base64,${PNG}`, detail: pick(['low', 'high']) }),
      () => ({ type: 'input_image', image_url: `data:image/webp;base64,${PNG}` }),
      () => ({ type: 'input_image', image_url: `https://example.com/${int(99)}.png`, detail: 'auto' }),
      () => ({ type: 'input_image', file_id: `file-${int(9)}` }),
      () =>
        shuffled({
          type: 'input_file',
          ...pick([
            { file_id: `file-${int(9)}` },
            { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBE' },
          ]),
        }),
    ])();
  const inputContent = () => (chance(0.4) ? text() : Array.from({ length: int(4) }, inputPart));
  const outputPart = () =>
    chance(0.8)
      ? shuffled({
          type: 'output_text',
          text: text(),
          annotations: chance(0.9) ? [] : [{ type: 'file_citation', index: 0 }],
        })
      : { type: 'refusal', refusal: text() };
  const args = () =>
    pick([
      () => JSON.stringify({ n: int(100), s: text(6) }),
      () => `{ "spaced": ${int(9)} }`,
      () => '',
      () => '{"unterminated": ',
      () => '[1,2]',
    ])();
  const opaque = () =>
    pick([
      () => ({
        type: 'web_search_call',
        id: `ws_${int(99)}`,
        status: 'completed',
        action: { type: 'search', query: text() },
      }),
      () => ({ type: 'item_reference', id: `msg_${int(99)}` }),
      () => ({ type: 'compaction', id: `cmp_${int(9)}`, encrypted_content: text() || 'E' }),
      () => ({ type: 'image_generation_call', id: `ig_${int(9)}`, status: 'completed', result: PNG }),
    ])();
  let ids = 0;
  function history() {
    const items = [];
    if (chance(0.5)) items.push(shuffled({ role: pick(['system', 'developer']), content: text() || 'sys' }));
    const turns = 1 + int(5);
    for (let t = 0; t < turns; t++) {
      const user = { role: 'user', content: inputContent() };
      if (chance(0.3)) user.type = 'message';
      if (chance(0.1)) user.id = `msg_u${int(99)}`;
      items.push(shuffled(user));
      if (chance(0.15)) items.push({ role: pick(['system', 'developer']), content: text() });
      const steps = int(3);
      for (let k = 0; k <= steps; k++) {
        if (chance(0.4)) {
          const r = {
            type: 'reasoning',
            id: `rs_${ids++}`,
            summary: Array.from({ length: int(3) }, () => ({ type: 'summary_text', text: text() })),
          };
          if (chance(0.7)) r.encrypted_content = pick([text() || 'E', null]);
          items.push(shuffled(r));
        }
        if (chance(0.1)) items.push(opaque());
        const last = k === steps;
        if (last || chance(0.3)) {
          const m = {
            type: 'message',
            role: 'assistant',
            content: chance(0.2) ? text() : Array.from({ length: int(3) }, outputPart),
          };
          if (chance(0.6)) m.id = `msg_${ids++}`;
          if (chance(0.3)) m.status = 'completed';
          if (chance(0.2)) m.phase = pick(['commentary', 'final_answer']);
          if (chance(0.2)) delete m.type;
          items.push(shuffled(m));
        }
        if (last) continue;
        const outputs = [];
        for (let c = 0; c < 1 + int(3); c++) {
          const call_id = `call_${ids++}`;
          const custom = chance(0.15);
          const call = custom
            ? { type: 'custom_tool_call', call_id, name: 'apply_patch', input: text() }
            : { type: 'function_call', call_id, name: pick(['read', 'ls']), arguments: args() };
          if (chance(0.6)) call.id = `${custom ? 'ctc' : 'fc'}_${ids}`;
          if (chance(0.3)) call.status = 'completed';
          items.push(shuffled(call));
          outputs.push(
            shuffled({
              type: custom ? 'custom_tool_call_output' : 'function_call_output',
              call_id,
              output: chance(0.6) ? text() : Array.from({ length: int(3) }, inputPart),
            }),
          );
        }
        if (chance(0.3)) outputs.reverse();
        items.push(...outputs);
      }
    }
    return items;
  }
  /** A copy of `items` with one member somewhere replaced, removed, or given an unknown type. */
  const mutate = (items) =>
    mutateOne({ int, pick }, items, [
      { type: 'video' },
      [null],
      { role: 'robot' },
      'function_call_output',
      'reasoning',
    ]);
  return { history, mutate };
}

test('openai-responses property: 300 random valid histories round-trip as the same JSON, and as valid pi views', () => {
  assertRoundTrips(generator(0x5eed), FORMAT);
});

test('openai-responses property: 400 mutated histories throw nothing but E_INVALID_MESSAGE, with a usable index and field', () => {
  assertMutationsRefusedCleanly(generator(0xbad5eed), FORMAT, { alsoWrite: ['anthropic'] });
});

// ----- size and speed ------------------------------------------------------------------------------

test('openai-responses: a 50 MB tool output and 50 MB of arguments go through in linear time', () => {
  const huge = 'x'.repeat(50 * 1024 * 1024);
  const items = [
    { role: 'user', content: huge },
    { type: 'function_call', call_id: 'c', name: 'write', arguments: JSON.stringify({ text: huge }) },
    { type: 'function_call_output', call_id: 'c', output: huge },
  ];
  const started = performance.now();
  const out = Session.fromMessages(items, FORMAT).toMessages(FORMAT);
  const ms = performance.now() - started;
  assert.equal(out.messages[0].content.length, huge.length);
  assert.equal(out.messages[1].arguments.length, huge.length + 11);
  assert.equal(out.messages[2].output.length, huge.length);
  assert.ok(ms < 30_000, `${ms} ms`);
});

test('openai-responses: fromMessages + toMessages of a 2,000-item, 10 MB tool loop', () => {
  const items = toolLoop(300, 15_000, 3).slice(0, 2000);
  while (items.at(-1).type !== 'message') items.pop();
  const bytes = JSON.stringify(items).length;
  assert.ok(items.length > 1990 && bytes > 10e6, `${items.length} items, ${bytes} B`);
  const best = bestRoundTrip(items, FORMAT);
  // Machines vary: this bounds it loosely (the openai-chat figure is in docs/performance.md).
  assert.ok(best < 1000, `${best.toFixed(1)} ms`);
});

// ----- types ---------------------------------------------------------------------------------------

test('openai-responses: a strict TypeScript consumer of the format types type-checks', () => {
  typeCheck(
    'formats-openai-responses',
    STRICT,
    `
    import { Session, type ResponsesInputItem, type ResponsesSystem, type MessageFormat } from 'ctxfold';
    const format: MessageFormat = 'openai-responses';
    const instructions: ResponsesSystem = 'Rules.';
    const input: ResponsesInputItem[] = [
      { role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      { role: 'user', content: [{ type: 'input_text', text: 'Hi' }, { type: 'input_image', detail: 'low', image_url: 'https://x/a.png' }] },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'think' }], encrypted_content: 'E' },
      { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'ls', arguments: '{}' },
      { type: 'custom_tool_call', call_id: 'c2', name: 'patch', input: '***' },
      { type: 'function_call_output', call_id: 'c1', output: 'a.txt' },
      { type: 'custom_tool_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'ok' }] },
      { type: 'message', role: 'assistant', id: 'msg_1', phase: 'final_answer', content: [{ type: 'output_text', text: 'Done.', annotations: [] }, { type: 'refusal', refusal: 'no' }] },
      { type: 'web_search_call', id: 'ws_1', status: 'completed' },
      { type: 'item_reference', id: 'msg_0' },
      { type: 'compaction', encrypted_content: 'C' },
    ];
    const session = Session.fromMessages<'openai-responses'>(input, { format: 'openai-responses', system: instructions });
    session.appendMessages<'openai-responses'>([{ role: 'user', content: 'More.' }], { format: 'openai-responses' });
    const out = session.toMessages<'openai-responses'>({ format: 'openai-responses' });
    const first: ResponsesInputItem | undefined = out.messages[0];
    const system: string | undefined = out.system;
    // @ts-expect-error a function_call_output needs its call_id
    const bad: ResponsesInputItem = { type: 'function_call_output', output: 'x' };
    // @ts-expect-error function-call arguments are JSON text
    const badCall: ResponsesInputItem = { type: 'function_call', call_id: 'c', name: 'f', arguments: {} };
    export { format, first, system, bad, badCall };
    `,
  );
});

test('openai-responses: nativeInput is the one Responses writer with a native target (what the native OpenAI lane sends)', async () => {
  // The modules in the build (not exported by the package).
  const pkg = new URL('..', import.meta.resolve('ctxfold'));
  const { nativeInput, write } = await import(new URL('formats/openai-responses.js', pkg));
  const { Warnings } = await import(new URL('formats/common.js', pkg));
  const session = Session.fromMessages(fixture('tool-calls.json').messages, FORMAT);
  const llm = session.toLlmMessages();
  session.free();
  for (const images of [true, false]) {
    const native = { id: 'gpt-5.2', provider: 'openai', api: 'openai-responses', images, previous: [] };
    const items = nativeInput(llm, native);
    assert.ok(items.length > 0);
    assert.deepEqual(items, write(llm, { warnings: new Warnings(), system: undefined, native }).messages);
    // A native input: every message item typed, no output-only status.
    for (const item of items) {
      assert.ok(typeof item.type === 'string', JSON.stringify(item));
      if (item.type === 'message' || item.type === 'function_call') assert.ok(!Object.hasOwn(item, 'status'));
    }
  }
});
