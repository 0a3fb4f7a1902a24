// The `openai-chat` format (src/wasm/js/formats/openai-chat.js): Chat Completions messages in
// and out. Fixtures in tests/fixtures/formats/openai-chat/ from the documented shapes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { testsDir } from './support/project.mjs';

const FORMAT = { format: 'openai-chat' };
const fixture = (name) =>
  JSON.parse(readFileSync(path.join(testsDir, 'fixtures', 'formats', 'openai-chat', name), 'utf8'));

for (const name of ['tool-loop.json', 'images.json', 'legacy-function.json']) {
  test(`openai-chat: ${name} round-trips`, () => {
    const { messages } = fixture(name);
    const session = Session.fromMessages(messages, FORMAT);
    assert.deepEqual(session.toMessages(FORMAT).messages, messages);
    // And again after the session file is written and read back.
    assert.deepEqual(Session.fromJsonl(session.toJsonl()).toMessages(FORMAT).messages, messages);
  });
}

test('openai-chat → pi: roles, pairing, reasoning and the system prompt', () => {
  const { messages } = fixture('tool-loop.json');
  const session = Session.fromMessages(messages, FORMAT);
  const llm = session.toLlmMessages();
  assert.deepEqual(
    llm.map((m) => m.role),
    [
      'user',
      'assistant',
      'toolResult',
      'toolResult',
      'assistant',
      'user',
      'assistant',
      'developer',
      'user',
      'assistant',
      'toolResult',
    ],
  );
  assert.deepEqual(llm[1].content[0], {
    type: 'thinking',
    thinking: 'Two files to read first.',
    thinkingSignature: 'reasoning_content',
  });
  assert.deepEqual(llm[1].content[2].arguments, { path: 'src/b.ts' });
  assert.equal(llm[2].toolName, 'read');
  assert.equal(llm[3].toolCallId, 'call_b');
  assert.equal(llm[1].api, 'openai-completions');
  assert.equal(session.toMessages().system, 'You are a coding agent.');
  assert.deepEqual(session.warnings, []);
});

test('openai-chat: images by URL, audio and files are kept and reported; other formats read text', () => {
  const { messages } = fixture('images.json');
  const session = Session.fromMessages(messages, FORMAT);
  assert.deepEqual(
    session.warnings.map((w) => [w.code, w.path]),
    [
      ['W_CONVERTED', 'content[2]'],
      ['W_CONVERTED', 'content[4]'],
      ['W_CONVERTED', 'content[5]'],
    ],
  );
  const blocks = session.toLlmMessages()[0].content;
  assert.deepEqual(
    blocks.map((b) => b.type),
    ['text', 'image', 'text', 'image', 'text', 'text'],
  );
  assert.equal(blocks[1].mimeType, 'image/png');
  assert.equal(blocks[2].text, '[image: https://example.com/cat.jpg]');
});

test('openai-chat: every malformed fixture is E_INVALID_MESSAGE at its index and field, and appends nothing', () => {
  const session = Session.fromMessages([{ role: 'user', content: 'start' }], FORMAT);
  const before = session.toJsonl();
  for (const c of fixture('malformed.json').cases) {
    assert.throws(
      () => Session.fromMessages(c.messages, FORMAT),
      (err) => err.code === 'E_INVALID_MESSAGE' && err.index === c.index && err.field === c.field,
      JSON.stringify(c),
    );
    assert.throws(() => session.appendMessages(c.messages, FORMAT), { code: 'E_INVALID_MESSAGE' });
    assert.equal(session.toJsonl(), before);
  }
});

test('openai-chat: a turn appended later finds its calls; a pi session is written as a valid request', () => {
  const session = Session.fromMessages(fixture('tool-loop.json').messages.slice(0, 3), FORMAT);
  session.appendMessages(
    [
      { role: 'tool', tool_call_id: 'call_a', content: 'A' },
      { role: 'tool', tool_call_id: 'call_b', content: 'B' },
    ],
    FORMAT,
  );
  const out = session.toMessages(FORMAT).messages;
  assert.deepEqual(out.slice(-2), [
    { role: 'tool', tool_call_id: 'call_a', content: 'A' },
    { role: 'tool', tool_call_id: 'call_b', content: 'B' },
  ]);
  // A pi history with an image in a tool result: the image goes in a user message after it.
  const pi = Session.fromMessages([
    { role: 'user', content: 'Screenshot?' },
    {
      role: 'assistant',
      content: [{ type: 'toolCall', id: 't1', name: 'shot', arguments: {} }],
      stopReason: 'toolUse',
    },
    {
      role: 'toolResult',
      toolCallId: 't1',
      toolName: 'shot',
      content: [
        { type: 'text', text: 'here' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ],
      isError: false,
    },
  ]);
  const written = pi.toMessages(FORMAT);
  assert.deepEqual(written.messages.slice(1), [
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 't1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 't1', content: 'here' },
    { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
  ]);
  assert.deepEqual(
    written.warnings.map((w) => w.code),
    ['W_CONVERTED'],
  );
});

test('openai-chat: a compacted view opens with the summary, the kept messages paired after it', () => {
  const { messages } = fixture('tool-loop.json');
  const session = Session.fromMessages(messages, FORMAT);
  const { entryIds, messages: context } = session.buildContext();
  const firstKept =
    entryIds[context.findIndex((m) => m.role === 'user' && m.content === 'Then delete the repository.')];
  session.appendCompaction({
    summary: 'Read a.ts and b.ts; the test expects 3.',
    firstKeptEntryId: firstKept,
    tokensBefore: 1000,
  });
  const out = session.toMessages(FORMAT).messages;
  assert.equal(out[0].role, 'system');
  assert.equal(out[1].role, 'user');
  assert.match(JSON.stringify(out[1].content), /the test expects 3/);
  assert.deepEqual(out.slice(2), messages.slice(6));
});

test('openai-chat: random histories round-trip; mutations throw only E_INVALID_MESSAGE', () => {
  let seed = 7;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  for (let round = 0; round < 300; round++) {
    const messages = [];
    if (rand() < 0.5) messages.push({ role: 'system', content: `sys ${round}` });
    let calls = 0;
    const n = 1 + Math.floor(rand() * 10);
    for (let i = 0; i < n; i++) {
      messages.push({ role: 'user', content: rand() < 0.5 ? `u${i}` : [{ type: 'text', text: `u${i} ✓` }] });
      const k = Math.floor(rand() * 3);
      const ids = Array.from({ length: k }, () => `c${calls++}`);
      const assistant = { role: 'assistant', content: k > 0 && rand() < 0.5 ? null : `a${i}` };
      if (k > 0)
        assistant.tool_calls = ids.map((id) => ({
          id,
          type: 'function',
          function: { name: pick(['read', 'ls']), arguments: JSON.stringify({ n: i }) },
        }));
      messages.push(assistant);
      for (const id of ids) messages.push({ role: 'tool', tool_call_id: id, content: `out ${id}` });
    }
    const session = Session.fromMessages(messages, FORMAT);
    assert.deepEqual(session.toMessages(FORMAT).messages, messages);
    session.free();
    // A mutation: a member replaced by another kind of value.
    const bad = structuredClone(messages);
    const m = pick(bad);
    const key = pick(Object.keys(m));
    m[key] = pick([null, 5, {}, [], 'x', true]);
    try {
      Session.fromMessages(bad, FORMAT).free();
    } catch (err) {
      assert.equal(err.code, 'E_INVALID_MESSAGE', `${err.message} for ${JSON.stringify(m)}`);
    }
  }
});

test('openai-chat: a 50 MB tool output goes through', () => {
  const big = 'x'.repeat(50 * 1024 * 1024);
  const messages = [
    { role: 'user', content: 'dump' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c', type: 'function', function: { name: 'dump', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'c', content: big },
  ];
  const session = Session.fromMessages(messages, FORMAT);
  assert.equal(session.toMessages(FORMAT).messages[2].content.length, big.length);
});
