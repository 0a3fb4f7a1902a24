// The `anthropic` format (issue 21): the `messages` and `system` of an Anthropic Messages API
// request, read into a session and written back. Fixtures (tests/fixtures/formats/anthropic/)
// follow the API's documented shapes; what a pi session writes is checked against the API's
// rules for a request (alternation aside, which the API joins).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { bare, bestRoundTrip, formatFixtures, mutateSeveral, random, STRICT, typeCheck } from './support/formats.mjs';

const FORMAT = { format: 'anthropic' };
const fixtures = formatFixtures('anthropic');
const histories = fixtures.filter((f) => Array.isArray(f.messages));
const fixture = (file) => histories.find((f) => f.file === file);

const codes = (warnings) => warnings.map((w) => w.code);

const OPUS = { provider: 'anthropic', api: 'anthropic-messages', id: 'claude-opus-4-6' };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const TOOL_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The API's rules for a request's messages that a writer must keep (Messages API reference,
 * tool-use guide): roles, no empty text, images of the types it reads, every tool_use answered
 * first thing in the next user turn (consecutive user messages are joined, as the API does),
 * tool uses after a turn's other blocks, tool-use ids of the allowed characters.
 */
function assertValidRequest(messages) {
  // The API joins consecutive turns of a role.
  const turns = [];
  for (const m of messages) {
    assert.ok(m.role === 'user' || m.role === 'assistant', `role ${m.role}`);
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (turns.at(-1)?.role === m.role) turns.at(-1).blocks.push(...blocks);
    else turns.push({ role: m.role, blocks: [...blocks] });
  }
  assert.equal(turns[0].role, 'user', 'the first turn is a user turn');
  turns.forEach((turn, t) => {
    assert.ok(turn.blocks.length > 0, `turn ${t} has content`);
    for (const b of turn.blocks) {
      if (b.type === 'text') assert.ok(b.text.trim() !== '', `turn ${t}: no blank text`);
      if (b.type === 'image') assert.match(b.source.media_type, /^image\/(jpeg|png|gif|webp)$/);
      if (b.type === 'tool_result') {
        for (const c of Array.isArray(b.content) ? b.content : []) {
          if (c.type === 'text') assert.ok(c.text.trim() !== '', `turn ${t}: no blank text in a tool result`);
        }
      }
    }
    if (turn.role !== 'assistant') return;
    const types = turn.blocks.map((b) => b.type);
    const firstUse = types.indexOf('tool_use');
    if (firstUse < 0) return;
    assert.ok(
      types.slice(firstUse).every((x) => x === 'tool_use'),
      `turn ${t}: tool uses last, got ${types.join(',')}`,
    );
    const ids = turn.blocks.filter((b) => b.type === 'tool_use').map((b) => b.id);
    for (const id of ids) assert.match(id, TOOL_ID);
    const next = turns[t + 1];
    assert.ok(next, `turn ${t}'s tool uses are answered`);
    const results = next.blocks.slice(0, ids.length);
    assert.deepEqual(
      results.map((b) => b.type === 'tool_result' && b.tool_use_id),
      ids,
      `turn ${t + 1} starts with the results`,
    );
  });
}

// ----- fixtures ---------------------------------------------------------------------------------

for (const fx of histories) {
  test(`anthropic ${fx.file}: messages → session → messages is the same JSON, system too`, () => {
    const session = Session.fromMessages(fx.messages, { ...FORMAT, system: fx.system });
    assert.deepEqual(
      session.warnings.filter((w) => w.code.startsWith('W_')),
      [],
    );
    const out = session.toMessages(FORMAT);
    assert.deepStrictEqual(out.messages, fx.messages);
    assert.equal(JSON.stringify(out.messages), JSON.stringify(fx.messages));
    assert.deepStrictEqual(out.system, fx.system);
    assert.deepEqual(out.warnings, []);
    // Written again from the session file, nothing changes.
    const reloaded = Session.fromJsonl(session.toJsonl());
    assert.deepStrictEqual(reloaded.toMessages(FORMAT).messages, fx.messages);
  });
}

for (const c of fixtures.find((f) => f.file === 'malformed.json').cases) {
  test(`anthropic malformed: ${c.name} → E_INVALID_MESSAGE at ${c.index} ${c.field || '(the message)'}`, () => {
    assert.throws(
      () => Session.fromMessages(c.messages, FORMAT),
      (err) => {
        assert.equal(err.code, 'E_INVALID_MESSAGE', err.message);
        assert.equal(err.index, c.index, err.message);
        assert.equal(err.field, c.field, err.message);
        return true;
      },
    );
  });
}

test('anthropic: a refused appendMessages leaves the session as it was', () => {
  const session = Session.fromMessages(fixture('parallel-tools.json').messages, FORMAT);
  const before = session.toJsonl();
  assert.throws(
    () =>
      session.appendMessages(
        [
          { role: 'user', content: 'fine' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n' }] },
        ],
        FORMAT,
      ),
    (err) => err.code === 'E_INVALID_MESSAGE' && err.index === 1 && err.field === 'content[0].input',
  );
  assert.equal(session.toJsonl(), before);
});

// ----- what pi sees -----------------------------------------------------------------------------

test('anthropic → pi: tool results as toolResult messages with their tool names, in block order', () => {
  const fx = fixture('parallel-tools.json');
  const llm = bare(Session.fromMessages(fx.messages, FORMAT).toLlmMessages());
  assert.deepEqual(
    llm.map((m) => m.role),
    ['user', 'assistant', 'toolResult', 'toolResult', 'toolResult', 'user', 'assistant', 'toolResult', 'assistant'],
  );
  const calls = llm[1].content.filter((b) => b.type === 'toolCall');
  assert.deepEqual(
    calls.map((b) => [b.id, b.name, b.arguments]),
    [
      ['toolu_01A09q90qw90lq917835lq9', 'get_weather', { location: 'San Francisco, CA' }],
      ['toolu_01B09q90qw90lq917835lq9', 'get_weather', { location: 'New York, NY' }],
      ['toolu_01C09q90qw90lq917835lq9', 'get_time', { timezone: 'America/Los_Angeles' }],
    ],
  );
  assert.deepEqual(
    llm.slice(2, 5).map((m) => [m.toolCallId, m.toolName, m.isError, m.content]),
    [
      ['toolu_01A09q90qw90lq917835lq9', 'get_weather', false, [{ type: 'text', text: 'San Francisco: 15°C, foggy' }]],
      ['toolu_01B09q90qw90lq917835lq9', 'get_weather', false, [{ type: 'text', text: 'New York: 22°C, sunny' }]],
      [
        'toolu_01C09q90qw90lq917835lq9',
        'get_time',
        true,
        [{ type: 'text', text: 'ConnectionError: the time service is not available' }],
      ],
    ],
  );
  assert.deepEqual(llm[5].content, [{ type: 'text', text: 'Never mind the time.' }]);
  assert.equal(llm[1].api, 'anthropic-messages');
  assert.equal(llm[1].provider, 'anthropic');
  assert.equal(llm[1].stopReason, 'toolUse');
  assert.equal(llm.at(-1).stopReason, 'stop');
  // The pi format writes the same view.
  assert.deepEqual(
    bare(Session.fromMessages(fx.messages, FORMAT).toMessages().messages).map((m) => m.role),
    llm.map((m) => m.role),
  );
});

test('anthropic → pi: a tool result in a later batch finds its call in the session', () => {
  const session = Session.fromMessages(
    [
      { role: 'user', content: 'ls' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_later', name: 'ls', input: { dir: '.' } }] },
    ],
    FORMAT,
  );
  session.appendMessages(
    [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_later', content: 'a.txt' }] }],
    FORMAT,
  );
  const result = session.toLlmMessages().at(-1);
  assert.equal(result.role, 'toolResult');
  assert.equal(result.toolName, 'ls');
  assert.deepEqual(session.toMessages(FORMAT).messages.at(-1), {
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: 'toolu_later', content: 'a.txt' }],
  });
});

test('anthropic → pi: signatures, redacted thinking and the model the reader was given', () => {
  const fx = fixture('thinking.json');
  const model = { provider: 'anthropic', api: 'anthropic-messages', id: 'claude-sonnet-4-5' };
  const llm = bare(Session.fromMessages(fx.messages, { ...FORMAT, model }).toLlmMessages());
  const first = llm[1];
  assert.equal(first.model, 'claude-sonnet-4-5');
  assert.deepEqual(first.content.slice(0, 2), [
    {
      type: 'thinking',
      thinking: fx.messages[1].content[0].thinking,
      thinkingSignature: fx.messages[1].content[0].signature,
    },
    { type: 'redactedThinking', data: fx.messages[1].content[1].data },
  ]);
  // Without a model: the format's defaults, no model id.
  const plain = Session.fromMessages(fx.messages, FORMAT).toLlmMessages()[1];
  assert.equal(plain.model, undefined);
});

test('anthropic → pi: documents, search results and URL images are text that says what they were', () => {
  const docs = bare(Session.fromMessages(fixture('documents.json').messages, FORMAT).toLlmMessages());
  const texts = docs[0].content.map((b) => b.text);
  assert.deepEqual(texts, [
    '[document: Q3 report]',
    '[document: My Document]\nThe grass is green. The sky is blue.',
    '[document: Chunks]\nFirst chunk\nSecond chunk',
    '[document: https://assets.anthropic.com/m/1cd9d098ac3e6467/original/Claude-3-Model-Card-October-Addendum.pdf]',
    '[document: file_011CNvxoj286tYUAZFiZMf1U]',
    'What color are the grass and the sky?',
  ]);
  const result = docs.find((m) => m.role === 'toolResult');
  assert.deepEqual(result.content, [
    {
      type: 'text',
      text: '[search result: Botany basics (https://docs.company.com/botany)]\nGrass is green because of chlorophyll.',
    },
  ]);
  const images = bare(Session.fromMessages(fixture('images.json').messages, FORMAT).toLlmMessages());
  assert.deepEqual(
    images[0].content.map((b) => (b.type === 'image' ? `${b.mimeType} image` : b.text)),
    [
      'image/jpeg image',
      '[image: https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg]',
      '[image: file_011CNha8iCJcU1wXNR6q4V8w]',
      'image/png image',
      'How are these images different?',
    ],
  );
});

test('anthropic → pi: server tools pass as anthropicServerTool blocks, the opening compaction as the payload', () => {
  const llm = bare(Session.fromMessages(fixture('server-tools.json').messages, FORMAT).toLlmMessages());
  assert.deepEqual(llm[0].providerPayload, {
    type: 'anthropicCompaction',
    provider: 'anthropic',
    content: 'Summary of the conversation so far: the user is planning a trip to Lisbon.',
    encryptedContent: 'Eo8BCkYICBgCKkBxKXPfRVK5Mz0t',
  });
  assert.deepEqual(llm[0].content, [{ type: 'text', text: 'Picking up where we left off.' }]);
  assert.deepEqual(
    llm[2].content.map((b) => (b.type === 'anthropicServerTool' ? b.block.type : b.type)),
    ['text', 'server_tool_use', 'web_search_tool_result', 'text'],
  );
  // A compaction block inside a turn stays a block.
  assert.deepEqual(
    llm[4].content.map((b) => (b.type === 'anthropicServerTool' ? b.block.type : b.type)),
    ['mcp_tool_use', 'mcp_tool_result', 'compaction', 'toolCall'],
  );
});

test('anthropic → pi: a mid-conversation system message is a developer message with its payload', () => {
  const llm = Session.fromMessages(fixture('system-messages.json').messages, FORMAT).toLlmMessages();
  const [addition, scoped] = llm.filter((m) => m.role === 'developer');
  assert.deepEqual(bare(addition.content), [{ type: 'text', text: 'The git tool is now available.' }]);
  assert.deepEqual(addition.providerPayload, {
    type: 'anthropicMessage',
    toolChanges: [{ type: 'tool_addition', name: 'git' }],
  });
  assert.deepEqual(scoped.providerPayload, { type: 'anthropicMessage', clearAt: 'next_user_message', effort: 'max' });
});

test('anthropic: blocks are checked in order, a tool_result naming no tool_use where it stands', () => {
  const bad = { type: 'text', text: 5 };
  const orphan = { type: 'tool_result', tool_use_id: 'toolu_none', content: 7 };
  for (const [content, field] of [
    [[orphan, bad], 'content[0].tool_use_id'],
    [[bad, orphan], 'content[0].text'],
    [[{ type: 'text', text: 'ok' }, orphan], 'content[1].tool_use_id'],
  ]) {
    assert.throws(
      () => Session.fromMessages([{ role: 'user', content }], { format: 'anthropic' }),
      (err) => err.code === 'E_INVALID_MESSAGE' && err.index === 0 && err.field === field,
      field,
    );
  }
});

test('anthropic: unknown members are kept as data, a __proto__ member too', () => {
  const block = JSON.parse('{"type":"text","text":"x","__proto__":{"polluted":true},"future_field":1}');
  const messages = [
    { role: 'user', content: [block], metadata: { id: 'm1' } },
    { role: 'assistant', content: 'ok', id: 'msg_01' },
  ];
  const out = Session.fromMessages(messages, FORMAT).toMessages(FORMAT).messages;
  assert.equal(JSON.stringify(out), JSON.stringify(messages));
  assert.equal({}.polluted, undefined);
  assert.equal(Object.getPrototypeOf(out[0].content[0]), Object.prototype);
});

// ----- writing other histories ------------------------------------------------------------------

/** A pi session of another provider: parallel calls with ids the API refuses, reasoning, images. */
function foreignSession() {
  const gpt = { api: 'openai-responses', provider: 'openai', model: 'gpt-5' };
  const s = Session.create({ now: 1 });
  s.appendMessage({ role: 'user', content: 'Look at the logo and list the files.', timestamp: 1 });
  s.appendMessage({
    role: 'assistant',
    ...gpt,
    stopReason: 'toolUse',
    content: [
      { type: 'thinking', thinking: 'Two tools at once.', thinkingSignature: '{"type":"reasoning","id":"rs_1"}' },
      { type: 'toolCall', id: 'call_1|fc_1', name: 'ls', arguments: { dir: '.' } },
      { type: 'text', text: 'Listing and reading.', textSignature: 'msg_1' },
      { type: 'toolCall', id: 'call_2|fc_2', name: 'read', arguments: { path: 'logo.png' } },
      { type: 'text', text: '' },
    ],
  });
  s.appendMessage({
    role: 'toolResult',
    toolCallId: 'call_1|fc_1',
    toolName: 'ls',
    content: [{ type: 'text', text: 'logo.png\nREADME.md' }],
    isError: false,
  });
  s.appendMessage({
    role: 'toolResult',
    toolCallId: 'call_2|fc_2',
    toolName: 'read',
    content: [
      { type: 'text', text: '' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ],
    isError: false,
  });
  s.appendMessage({ role: 'fileMention', files: [{ path: 'README.md', content: '# Demo' }], timestamp: 2 });
  s.appendMessage({
    role: 'user',
    content: [
      { type: 'text', text: 'And?' },
      { type: 'image', data: 'AAAA', mimeType: 'image/tiff' },
    ],
  });
  s.appendMessage({
    role: 'assistant',
    ...gpt,
    stopReason: 'stop',
    content: [
      { type: 'redactedThinking', data: 'opaque' },
      { type: 'text', text: 'A logo and a readme.' },
    ],
  });
  return s;
}

test('pi → anthropic: a session of another provider is a valid request; what changed is in warnings', () => {
  const out = foreignSession().toMessages({ ...FORMAT, model: OPUS });
  assertValidRequest(out.messages);
  const [, calls, results] = out.messages;
  // Another provider's reasoning as text, the calls last, their ids as the API takes them.
  assert.deepEqual(calls.content, [
    { type: 'text', text: 'Two tools at once.' },
    { type: 'text', text: 'Listing and reading.' },
    { type: 'tool_use', id: 'call_1_fc_1', name: 'ls', input: { dir: '.' } },
    { type: 'tool_use', id: 'call_2_fc_2', name: 'read', input: { path: 'logo.png' } },
  ]);
  // Both results in one user message, the image inside its result.
  assert.deepEqual(results.content, [
    { type: 'tool_result', tool_use_id: 'call_1_fc_1', content: [{ type: 'text', text: 'logo.png\nREADME.md' }] },
    {
      type: 'tool_result',
      tool_use_id: 'call_2_fc_2',
      content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }],
    },
  ]);
  assert.deepEqual(out.messages[3], {
    role: 'user',
    content: [{ type: 'text', text: '<file path="README.md">\n# Demo\n</file>' }],
  });
  assert.deepEqual(out.messages[4].content[1], { type: 'text', text: '[unsupported image: image/tiff]' });
  assert.deepEqual(out.messages[5], { role: 'assistant', content: [{ type: 'text', text: 'A logo and a readme.' }] });
  assert.deepEqual(
    out.warnings.map((w) => [w.code, w.index, w.path]),
    [
      ['W_CONVERTED', 1, 'content[0]'],
      ['W_CONVERTED', 1, undefined],
      ['W_CONVERTED', 1, undefined],
      ['W_CONVERTED', 2, undefined],
      ['W_CONVERTED', 2, undefined],
      ['W_CONVERTED', 3, undefined],
      ['W_CONVERTED', 4, 'content[1]'],
      ['W_DROPPED', 5, 'content[0]'],
    ],
  );
  assert.match(out.warnings[0].message, /another provider's thinking is sent as text/);
  assert.match(out.warnings[5].message, /developer message is sent as a user message/);
  assert.match(out.warnings[7].message, /redactedThinking block of another provider/);
  assert.equal(out.system, undefined);
});

test('pi → anthropic: the reading model decides whose signatures replay', () => {
  const fx = fixture('thinking.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  // The same provider: as read.
  assert.deepStrictEqual(session.toMessages({ ...FORMAT, model: OPUS }).messages, fx.messages);
  // Another provider (the same model on another route): thinking as text, no signatures.
  const other = session.toMessages({
    ...FORMAT,
    model: { provider: 'bedrock', api: 'anthropic-messages', id: 'claude-opus-4-6' },
  });
  const kinds = other.messages.flatMap((m) =>
    typeof m.content === 'string' ? ['text'] : m.content.map((b) => b.type),
  );
  assert.ok(!kinds.includes('thinking') && !kinds.includes('redacted_thinking'), kinds.join(','));
  assert.ok(!JSON.stringify(other.messages).includes(fx.messages[1].content[0].signature));
  assert.deepEqual(other.messages[1].content[0], { type: 'text', text: fx.messages[1].content[0].thinking });
  assert.ok(codes(other.warnings).includes('W_DROPPED'), 'the redacted thinking is reported');
  assertValidRequest(other.messages);
});

test('pi → anthropic: a compaction block in an assistant message replays only for a model that can', () => {
  const fx = fixture('server-tools.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  assert.deepEqual(session.toMessages({ ...FORMAT, model: OPUS }).messages[0].content[0], fx.messages[0].content[0]);
  const older = session.toMessages({ ...FORMAT, model: { ...OPUS, id: 'claude-sonnet-4-5' } });
  assert.deepEqual(older.messages[0], {
    role: 'assistant',
    content: [{ type: 'text', text: 'Picking up where we left off.' }],
  });
  assert.deepEqual(
    older.warnings.map((w) => [w.code, w.index]),
    [['W_DROPPED', 0]],
  );
});

test("anthropic: the system prompt — kept blocks, another format's as text, a given one", () => {
  const blocks = [{ type: 'text', text: 'Rules.', cache_control: { type: 'ephemeral' } }];
  const msgs = [{ role: 'user', content: 'hi' }];
  assert.deepEqual(Session.fromMessages(msgs, { ...FORMAT, system: blocks }).toMessages(FORMAT).system, blocks);
  assert.equal(Session.fromMessages(msgs, { ...FORMAT, system: 'Plain.' }).toMessages(FORMAT).system, 'Plain.');
  assert.equal(Session.fromMessages(msgs, FORMAT).toMessages(FORMAT).system, undefined);
  const pi = Session.fromMessages([{ role: 'user', content: 'hi' }], { system: 'From pi.' });
  assert.equal(pi.toMessages(FORMAT).system, 'From pi.');
  const given = pi.toMessages({ ...FORMAT, system: blocks });
  assert.deepEqual(given.system, blocks);
  assert.deepEqual(given.warnings, []);
});

// ----- compacted views --------------------------------------------------------------------------

/** `n` lines of code-like text. */
const code = (n, tag) =>
  Array.from({ length: n }, (_, i) => `const ${tag}${i} = compute(${i}, "${tag}"); // step ${i}`).join('\n');

/** An Anthropic tool loop of `n` rounds: a question, a call, its result (`lines` of code), an answer. */
function toolLoop(n, size = 40, lines = 0) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push({ role: 'user', content: `question ${i} ${'word '.repeat(size)}` });
    out.push({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: `plan ${i}`, signature: `sig${i}` },
        { type: 'tool_use', id: `toolu_${i}`, name: 'read', input: { path: `f${i}.ts` } },
      ],
    });
    const file = lines > 0 ? code(lines, `f${i}_`) : `file ${i} ${'x '.repeat(size)}`;
    out.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: file }] });
    out.push({ role: 'assistant', content: `answer ${i} ${'word '.repeat(size)}` });
  }
  return out;
}

test('anthropic compacted: the summary as the first user message, the kept messages as read, pairing intact', () => {
  const messages = toolLoop(12);
  const session = Session.fromMessages(messages, FORMAT);
  const { ids } = {
    ids: session
      .index()
      .filter((e) => e.type === 'message')
      .map((e) => e.id),
  };
  // Keep from the ninth question on.
  const kept = 8 * 4;
  session.appendCompaction({ summary: 'S', firstKeptEntryId: ids[kept], tokensBefore: 1000 });
  const out = session.toMessages(FORMAT);
  assert.equal(out.messages[0].role, 'user');
  assert.match(JSON.stringify(out.messages[0].content), /S/);
  assert.deepStrictEqual(out.messages.slice(1), messages.slice(kept));
  assert.deepEqual(out.warnings, []);
  assertValidRequest(out.messages);
});

test('anthropic compacted: the server compaction block replays for its provider on a model with server compaction', () => {
  const messages = toolLoop(6);
  const session = Session.fromMessages(messages, FORMAT);
  const ids = session
    .index()
    .filter((e) => e.type === 'message')
    .map((e) => e.id);
  const record = {
    provider: 'anthropic',
    content: 'NATIVE SUMMARY',
    encryptedContent: 'ENC',
    filesText: '<files>\na.ts\n</files>',
  };
  // Kept from an answer: the block opens that assistant turn, the file list follows it.
  session.appendCompaction({
    summary: 'text summary',
    firstKeptEntryId: ids[19],
    tokensBefore: 90_000,
    method: 'remote',
    preserveData: { anthropicCompaction: record },
  });
  const native = session.toMessages({ ...FORMAT, model: OPUS });
  assert.deepEqual(native.messages[0], {
    role: 'assistant',
    content: [
      { type: 'compaction', content: 'NATIVE SUMMARY', encrypted_content: 'ENC' },
      ...[{ type: 'text', text: messages[19].content }],
    ],
  });
  assert.deepEqual(native.messages[1], { role: 'user', content: '<files>\na.ts\n</files>' });
  assert.deepStrictEqual(native.messages.slice(2), messages.slice(20));
  // Other readers get the summary text.
  for (const model of [undefined, { ...OPUS, id: 'claude-sonnet-4-5' }, { ...OPUS, provider: 'bedrock' }]) {
    const text = session.toMessages({ ...FORMAT, model });
    assert.equal(text.messages[0].role, 'user', JSON.stringify(model));
    assert.match(JSON.stringify(text.messages[0].content), /text summary/);
    assert.ok(!JSON.stringify(text.messages).includes('NATIVE SUMMARY'));
  }
});

test('anthropic compacted: snapcompact frames are base64 PNG image blocks of the summary message', async () => {
  const messages = toolLoop(30, 20, 120);
  const session = Session.fromMessages(messages, FORMAT);
  const result = await session.compact({
    settings: { reserveTokens: 1000, keepRecentTokens: 2000 },
    strategy: 'snapcompact',
    model: 'claude-opus-4-7',
    now: 5000,
  });
  assert.equal(result.method, 'snapcompact');
  const out = session.toMessages(FORMAT);
  const [summary] = out.messages;
  assert.equal(summary.role, 'user');
  const images = summary.content.filter((b) => b.type === 'image');
  assert.ok(images.length > 0 && images.length <= 100, `${images.length} frames`);
  for (const img of images) {
    assert.equal(img.source.type, 'base64');
    assert.equal(img.source.media_type, 'image/png');
    assert.ok(Buffer.from(img.source.data, 'base64').subarray(1, 4).toString() === 'PNG');
  }
  assertValidRequest(out.messages);
});

// ----- property tests ---------------------------------------------------------------------------

const maybeCache = (r) =>
  r.int(5) === 0 ? { cache_control: r.pick([{ type: 'ephemeral' }, { type: 'ephemeral', ttl: '1h' }]) } : {};

function randomUserBlock(r) {
  switch (r.int(7)) {
    case 0:
      return {
        type: 'image',
        source: {
          type: 'base64',
          media_type: r.pick(['image/png', 'image/jpeg', 'image/gif', 'image/webp']),
          data: r.alnum(8),
        },
        ...maybeCache(r),
      };
    case 1:
      return { type: 'image', source: { type: 'url', url: `https://example.com/${r.alnum(5)}.png` } };
    case 2:
      return {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: r.text(30) },
        title: r.text(5),
      };
    default:
      return { type: 'text', text: r.text(), ...maybeCache(r) };
  }
}

function randomJson(r, depth = 0) {
  switch (depth > 2 ? r.int(4) : r.int(6)) {
    case 0:
      return r.text(6);
    case 1:
      return r.int(1000) - 500;
    case 2:
      return r.pick([true, false, null]);
    case 3:
      return r.next();
    case 4:
      return Array.from({ length: r.int(3) }, () => randomJson(r, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: r.int(3) }, () => [r.alnum(3), randomJson(r, depth + 1)]));
  }
}

/** A valid Anthropic history: user turns, assistant turns with thinking and parallel tool uses, their results. */
function randomHistory(r) {
  const out = [];
  const user = () => {
    const content = r.int(3) === 0 ? r.text() : Array.from({ length: 1 + r.int(3) }, () => randomUserBlock(r));
    out.push({ role: 'user', content });
    if (r.int(8) === 0)
      out.push({ role: 'system', content: r.text(), ...(r.int(2) ? { clear_at: 'next_user_message' } : {}) });
  };
  user();
  const turns = 1 + r.int(6);
  for (let t = 0; t < turns; t++) {
    const blocks = [];
    if (r.int(2)) blocks.push({ type: 'thinking', thinking: r.text(20), signature: `${r.alnum(20)}==` });
    if (r.int(6) === 0) blocks.push({ type: 'redacted_thinking', data: r.alnum(16) });
    if (r.int(3)) blocks.push({ type: 'text', text: r.text(), ...(r.int(6) === 0 ? { citations: null } : {}) });
    const calls = Array.from({ length: r.int(4) }, () => ({
      type: 'tool_use',
      id: `toolu_${r.alnum(12)}`,
      name: r.pick(['read', 'ls', 'grep']),
      input: Object.fromEntries(Array.from({ length: r.int(3) }, () => [r.alnum(4), randomJson(r)])),
      ...maybeCache(r),
    }));
    blocks.push(...calls);
    const string =
      blocks.length === 1 && blocks[0].type === 'text' && !blocks[0].citations && !blocks[0].cache_control && r.int(2);
    out.push({ role: 'assistant', content: string ? blocks[0].text : blocks });
    if (calls.length === 0) {
      user();
      continue;
    }
    const results = calls.map((c) => {
      const b = { type: 'tool_result', tool_use_id: c.id };
      const kind = r.int(4);
      if (kind === 0) b.content = r.text();
      else if (kind === 1)
        b.content = [{ type: 'text', text: r.text() }, ...(r.int(3) === 0 ? [randomUserBlock(r)] : [])];
      else if (kind === 2) b.content = [];
      if (r.int(3) === 0) b.is_error = r.int(2) === 0;
      return b;
    });
    // Results in one message, or split over several; a text after them at times.
    if (r.int(4) === 0) for (const b of results) out.push({ role: 'user', content: [b] });
    else out.push({ role: 'user', content: [...results, ...(r.int(2) ? [{ type: 'text', text: r.text() }] : [])] });
  }
  if (out.at(-1).role !== 'user') user();
  out.push({ role: 'assistant', content: r.int(2) ? r.text() : [{ type: 'text', text: r.text() }] });
  return out;
}

test('anthropic property: 300 random valid histories round-trip exactly', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const messages = randomHistory(random(seed));
    const out = Session.fromMessages(messages, FORMAT).toMessages(FORMAT);
    assert.deepStrictEqual(out.messages, messages, `seed ${seed}`);
    assert.deepEqual(out.warnings, [], `seed ${seed}`);
  }
});

/** What a mutation puts in place of a value (new objects each time): other types, and Anthropic's types and roles. */
const mutants = () => [null, 0, -1, '', 'x', [], {}, true, 'tool_result', 'tool_use', 'image', 'assistant', 'system'];
/** A copy of `messages` changed one to three times (`mutateSeveral`). */
const mutate = (r, messages) => mutateSeveral(r, messages, mutants());

test('anthropic property: 400 mutated histories throw nothing but E_INVALID_MESSAGE, with a usable index and field', () => {
  let accepted = 0;
  for (let seed = 1; seed <= 400; seed++) {
    const r = random(seed * 7919);
    const messages = mutate(r, randomHistory(r));
    let session;
    try {
      session = Session.fromMessages(messages, FORMAT);
    } catch (err) {
      assert.equal(err.code, 'E_INVALID_MESSAGE', `seed ${seed}: ${err.message}`);
      assert.ok(Number.isInteger(err.index) && err.index >= 0 && err.index < messages.length, `seed ${seed}`);
      assert.equal(typeof err.field, 'string');
      continue;
    }
    accepted++;
    // What was accepted writes in this format and in pi's.
    session.toMessages(FORMAT);
    session.toMessages();
  }
  assert.ok(accepted > 20 && accepted < 400, `${accepted} accepted`);
});

// ----- size and speed ---------------------------------------------------------------------------

test('anthropic: a 50 MB text and a 50 MB document go through in linear time', () => {
  const huge = 'a'.repeat(50 * 1024 * 1024);
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: huge } },
        { type: 'text', text: huge },
      ],
    },
    { role: 'assistant', content: 'ok' },
  ];
  const started = performance.now();
  const out = Session.fromMessages(messages, FORMAT).toMessages(FORMAT);
  const ms = performance.now() - started;
  assert.equal(out.messages[0].content[0].source.data.length, huge.length);
  assert.equal(out.messages[0].content[1].text.length, huge.length);
  assert.ok(ms < 20_000, `${ms} ms`);
});

test('anthropic: fromMessages + toMessages of a 2,000-message, 10 MB tool loop', () => {
  const messages = toolLoop(500, 1700);
  const bytes = JSON.stringify(messages).length;
  assert.ok(messages.length === 2000 && bytes > 10e6, `${bytes} B`);
  const best = bestRoundTrip(messages, FORMAT);
  // The target is 50 ms on a developer machine; CI machines vary, so this bounds it loosely.
  assert.ok(best < 500, `${best.toFixed(1)} ms`);
});

// ----- types ------------------------------------------------------------------------------------

test('anthropic: a strict TypeScript consumer of the format types type-checks', () => {
  typeCheck(
    'formats-anthropic',
    STRICT,
    `
    import { Session, type AnthropicMessage, type AnthropicSystem } from 'ctxfold';
    const system: AnthropicSystem = [{ type: 'text', text: 'Rules.', cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const messages: AnthropicMessage[] = [
      { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x/a.png' } }, { type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'toolu_1', name: 'ls', input: { dir: '.' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt', is_error: false }] },
      { role: 'system', content: 'Be brief.', clear_at: 'next_user_message' },
      { role: 'assistant', content: [{ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } }] },
    ];
    const session = Session.fromMessages<'anthropic'>(messages, { format: 'anthropic', system });
    const out = session.toMessages<'anthropic'>({ format: 'anthropic' });
    const first: AnthropicMessage | undefined = out.messages[0];
    const sys: AnthropicSystem | undefined = out.system;
    // @ts-expect-error a tool result is no assistant block
    const bad: AnthropicMessage = { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x' }] };
    export { first, sys, bad };
    `,
  );
});
