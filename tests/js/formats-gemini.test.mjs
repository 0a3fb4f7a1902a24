// The `gemini` format (issue 21): the `contents` of a Gemini API generateContent request (the
// system prompt is its `systemInstruction`), read into a session and written back. Fixtures
// (tests/fixtures/formats/gemini/) follow the `Content` and `Part` shapes of Google's API
// reference; what a pi session writes is checked against the API's rules for a request.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import {
  assertMutationsRefusedCleanly,
  assertRoundTrips,
  bare,
  formatFixtures,
  random,
  STRICT,
  typeCheck,
} from './support/formats.mjs';
import { repoDir } from './support/project.mjs';

const FORMAT = { format: 'gemini' };
const fixtures = formatFixtures('gemini');
const histories = fixtures.filter((f) => Array.isArray(f.messages));
const fixture = (file) => histories.find((f) => f.file === file);

const codes = (warnings) => warnings.map((w) => w.code);
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const KINDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
];

/**
 * The API's rules for a request's contents that a writer must keep (API reference, function
 * calling guide): roles `user` and `model`, parts of one kind of data each, function calls in
 * model contents only, and every call of a model content answered by a function response of
 * its name (and id, when the call has one) in the user content right after it.
 */
function assertValidRequest(contents) {
  let waiting = [];
  contents.forEach((c, i) => {
    const at = `contents[${i}] ${JSON.stringify(c).slice(0, 160)}`;
    assert.ok(c.role === 'user' || c.role === 'model', `${at}: role`);
    assert.ok(Array.isArray(c.parts) && c.parts.length > 0, `${at}: parts`);
    const responses = [];
    for (const p of c.parts) {
      const kinds = KINDS.filter((k) => p[k] !== undefined);
      assert.equal(kinds.length, 1, `${at}: one kind of data a part`);
      if (p.inlineData) assert.match(p.inlineData.data, /^[A-Za-z0-9+/]*={0,2}$/, `${at}: base64`);
      if (p.thoughtSignature !== undefined) assert.match(p.thoughtSignature, /^[A-Za-z0-9+/_-]+={0,2}$/, at);
      if (p.functionCall) {
        assert.equal(c.role, 'model', `${at}: a call is the model's`);
        assert.ok(p.functionCall.args === undefined || typeof p.functionCall.args === 'object', at);
      }
      if (p.functionResponse) {
        assert.equal(c.role, 'user', `${at}: a response is the user's`);
        assert.equal(typeof p.functionResponse.response, 'object', at);
        responses.push(p.functionResponse);
      }
    }
    for (const r of responses) {
      const k = waiting.findIndex((call) => call.name === r.name && (call.id === undefined || call.id === r.id));
      assert.ok(k >= 0, `${at}: ${r.name} answers a call of the model content before`);
      waiting.splice(k, 1);
    }
    if (responses.length > 0) assert.equal(waiting.length, 0, `${at}: every call answered`);
    else assert.equal(waiting.length, 0, `${at}: calls ${waiting.map((w) => w.name)} answered first`);
    waiting = c.role === 'model' ? c.parts.filter((p) => p.functionCall).map((p) => p.functionCall) : [];
  });
  assert.equal(waiting.length, 0, 'every call answered');
}

/** A Gemini tool loop: per turn a question, parallel id-less calls, their responses, an answer. */
function toolLoop(turns, outputChars = 40, width = 2) {
  const contents = [];
  for (let t = 0; t < turns; t++) {
    contents.push({ role: 'user', parts: [{ text: `Question ${t}: read the files.` }] });
    contents.push({
      role: 'model',
      parts: [
        { text: `Turn ${t} needs ${width} reads.`, thought: true, thoughtSignature: 'c2lnbmVk' },
        ...Array.from({ length: width }, (_, k) => ({ functionCall: { name: 'read', args: { path: `f${t}_${k}` } } })),
      ],
    });
    contents.push({
      role: 'user',
      parts: Array.from({ length: width }, (_, k) => ({
        functionResponse: { name: 'read', response: { output: `${t}.${k}: ${'x'.repeat(outputChars)}` } },
      })),
    });
    contents.push({ role: 'model', parts: [{ text: `Answer ${t}.` }] });
  }
  return contents;
}

const messageIds = (session) =>
  session
    .index()
    .filter((e) => e.type === 'message')
    .map((e) => e.id);

// ----- round trips -------------------------------------------------------------------------------

for (const fx of histories) {
  test(`gemini: ${fx.file} round-trips as the same JSON`, () => {
    const session = Session.fromMessages(fx.messages, { ...FORMAT, system: fx.system });
    assert.deepEqual(
      session.warnings.map((w) => [w.code, w.index, w.path]),
      fx.readWarnings ?? [],
    );
    const out = session.toMessages(FORMAT);
    assert.equal(JSON.stringify(out.messages), JSON.stringify(fx.messages));
    assert.deepStrictEqual(out.messages, fx.messages);
    assert.deepEqual(out.warnings, []);
    assert.deepStrictEqual(out.system, fx.system);
    const reloaded = Session.fromJsonl(session.toJsonl()).toMessages(FORMAT).messages;
    assert.equal(JSON.stringify(reloaded), JSON.stringify(fx.messages));
    // What pi sees pairs every tool result with a call of its name before it.
    const calls = new Map();
    for (const m of bare(session.toLlmMessages())) {
      if (m.role === 'assistant') for (const b of m.content) if (b.type === 'toolCall') calls.set(b.id, b.name);
      if (m.role === 'toolResult') assert.equal(calls.get(m.toolCallId), m.toolName, `${fx.file}: ${m.toolCallId}`);
    }
  });
}

test('gemini: appended turns round-trip with the history read before them', () => {
  for (const fx of histories) {
    // Cut before each content that starts a user turn of text, and before each run of responses.
    for (let cut = 1; cut < fx.messages.length; cut++) {
      const session = Session.fromMessages(fx.messages.slice(0, cut), FORMAT);
      session.appendMessages(fx.messages.slice(cut), FORMAT);
      assert.equal(
        JSON.stringify(session.toMessages(FORMAT).messages),
        JSON.stringify(fx.messages),
        `${fx.file} cut at ${cut}`,
      );
    }
  }
});

// ----- what pi sees ------------------------------------------------------------------------------

test('gemini → pi: parallel calls paired by id and, without ids, by name and order; responses as text', () => {
  const session = Session.fromMessages(fixture('tool-calls.json').messages, FORMAT);
  const llm = bare(session.toLlmMessages());
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
      'toolResult',
      'toolResult',
      'toolResult',
      'assistant',
    ],
  );
  assert.deepEqual(llm[1].content[0], {
    type: 'toolCall',
    id: 'fc_1',
    name: 'get_weather',
    arguments: { city: 'Paris' },
    thoughtSignature: 'c2lnbmF0dXJlLW9uZQ==',
  });
  assert.deepEqual(
    [llm[2], llm[3]].map((m) => [m.toolCallId, m.content[0].text, m.isError]),
    [
      ['fc_1', 'sunny, 24 C', false],
      ['fc_2', 'station offline', true],
    ],
  );
  assert.deepEqual(llm[4].content[0], {
    type: 'text',
    text: "Paris is sunny; Rome's station is offline.",
    textSignature: 'c2lnbmF0dXJlLXR3bw==',
  });
  const ids = llm[6].content.map((b) => b.id);
  assert.deepEqual(ids, ['gemini_0_ls', 'gemini_1_ls', 'gemini_0_now']);
  assert.deepEqual(
    llm.slice(7, 10).map((m) => [m.toolCallId, m.content[0].text]),
    [
      ['gemini_0_ls', '{"files":["x.ts","y.ts"],"count":2}'],
      ['gemini_1_ls', ''],
      ['gemini_0_now', '12:00'],
    ],
  );
  assert.equal(llm[6].api, 'google-generative-ai');
  assert.equal(llm[6].stopReason, 'toolUse');
});

test('gemini → pi: thought summaries as signed thinking; images as image blocks; other parts as text', () => {
  const thinking = bare(Session.fromMessages(fixture('thinking.json').messages, FORMAT).toLlmMessages());
  assert.deepEqual(thinking[1].content[0], {
    type: 'thinking',
    thinking: '**Checking Mersenne numbers**\nM61 is a known Mersenne prime.',
    thinkingSignature: 'Q2lRQlZLaGRBZ0p4c2lnbmF0dXJl',
  });
  assert.deepEqual(thinking[3].content[0], { type: 'thinking', thinking: 'Confirmed by the tool.' });
  const images = bare(Session.fromMessages(fixture('images.json').messages, FORMAT).toLlmMessages());
  assert.deepEqual(images[0].content[1], {
    type: 'image',
    data: fixture('images.json').messages[0].parts[1].inlineData.data,
    mimeType: 'image/png',
  });
  assert.equal(images[0].content[2].type, 'text');
  assert.match(images[0].content[2].text, /files\/abc123/);
  assert.match(images[0].content[3].text, /report\.pdf, application\/pdf/);
  assert.deepEqual(
    images[2].content.map((b) => b.type),
    ['text', 'image'],
  );
  const code = bare(Session.fromMessages(fixture('code-execution.json').messages, FORMAT).toLlmMessages());
  assert.match(code[1].content[1].text, /^```python\nimport sympy/);
  assert.match(code[1].content[2].text, /OUTCOME_OK.*\n5117/);
});

test('gemini: a response in a later batch finds its call, by id or by name; an unknown one leaves the session as it was', () => {
  const session = Session.fromMessages(
    [
      { role: 'user', parts: [{ text: 'go' }] },
      {
        role: 'model',
        parts: [{ functionCall: { name: 'ls', args: {} } }, { functionCall: { id: 'r1', name: 'read', args: {} } }],
      },
    ],
    FORMAT,
  );
  const before = session.toJsonl();
  assert.throws(
    () =>
      session.appendMessages([{ role: 'user', parts: [{ functionResponse: { name: 'cat', response: {} } }] }], FORMAT),
    (err) => err.code === 'E_INVALID_MESSAGE' && err.index === 0 && err.field === 'parts[0].functionResponse.name',
  );
  assert.throws(
    () =>
      session.appendMessages(
        [{ role: 'user', parts: [{ functionResponse: { id: 'r2', name: 'read', response: {} } }] }],
        FORMAT,
      ),
    { code: 'E_INVALID_MESSAGE' },
  );
  assert.equal(session.toJsonl(), before);
  const later = [
    {
      role: 'user',
      parts: [
        { functionResponse: { name: 'ls', response: { output: 'a' } } },
        { functionResponse: { id: 'r1', name: 'read', response: { output: 'b' } } },
      ],
    },
  ];
  session.appendMessages(later, FORMAT);
  const llm = bare(session.toLlmMessages());
  assert.deepEqual(
    llm.slice(2).map((m) => m.toolCallId),
    ['gemini_0_ls', 'r1'],
  );
  assertValidRequest(session.toMessages(FORMAT).messages);
});

test('gemini: every malformed fixture is E_INVALID_MESSAGE at its index and field, and appends nothing', () => {
  const session = Session.fromMessages([{ role: 'user', parts: [{ text: 'start' }] }], FORMAT);
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

test('gemini: checks in reading order; a response part is checked for its data only, an image part keeps its displayName unchecked', () => {
  const field = (contents) => {
    try {
      Session.fromMessages(contents, FORMAT);
    } catch (err) {
      assert.equal(err.code, 'E_INVALID_MESSAGE');
      return `${err.index} ${err.field}`;
    }
    return 'read';
  };
  const call = { role: 'model', parts: [{ functionCall: { id: 'c1', name: 'read' } }] };
  // A response naming no call is reported before its malformed parts, and before a later part.
  const unknown = { id: 'zz', name: 'read', response: {}, parts: [{ inlineData: 5 }] };
  assert.equal(
    field([call, { parts: [{ functionResponse: unknown }, { text: 5 }] }]),
    '1 parts[0].functionResponse.id',
  );
  const response = { id: 'c1', name: 'read', response: {}, parts: [{ inlineData: 5 }] };
  assert.equal(
    field([call, { parts: [{ functionResponse: response }] }]),
    '1 parts[0].functionResponse.parts[0].inlineData',
  );
  // A repeated call id after a malformed earlier part: the earlier part first.
  const twice = { role: 'model', parts: [{ text: 5 }, { functionCall: { id: 'c1', name: 'read' } }] };
  assert.equal(field([call, twice]), '1 parts[0].text');
  // A part's own members come before its data's (in a content), and are not checked in a response's parts.
  assert.equal(field([{ parts: [{ text: 5, thought: 'yes' }] }]), '0 parts[0].thought');
  const loose = {
    id: 'c1',
    name: 'read',
    response: {},
    parts: [{ inlineData: { mimeType: 'image/png', data: PNG }, thought: 'yes' }],
  };
  assert.equal(field([call, { parts: [{ functionResponse: loose }] }]), 'read');
  assert.equal(field([{ parts: [{ inlineData: { mimeType: 'image/png', data: PNG, displayName: 5 } }] }]), 'read');
  assert.equal(
    field([{ parts: [{ inlineData: { mimeType: 'application/pdf', data: PNG, displayName: 5 } }] }]),
    '0 parts[0].inlineData.displayName',
  );
});

test('gemini: an error quotes a huge input string by its first 40 characters', () => {
  const huge = 'r'.repeat(50 * 1024 * 1024);
  for (const [messages, field] of [
    [[{ role: huge, parts: [] }], 'role'],
    [
      [{ role: 'user', parts: [{ functionResponse: { id: huge, name: 'f', response: {} } }] }],
      'parts[0].functionResponse.id',
    ],
  ]) {
    assert.throws(
      () => Session.fromMessages(messages, FORMAT),
      (err) => err.code === 'E_INVALID_MESSAGE' && err.field === field && err.message.length < 300,
    );
  }
});

// ----- writing other providers' sessions ---------------------------------------------------------

test('pi → gemini: a session of another provider is a valid request; what changed is in warnings', () => {
  const session = Session.fromMessages([
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
        { type: 'toolCall', id: 'toolu_01', name: 'shot', arguments: { screen: 1 } },
        { type: 'toolCall', id: 'toolu_02', name: 'shot', arguments: { screen: 2 } },
      ],
      stopReason: 'toolUse',
    },
    {
      role: 'toolResult',
      toolCallId: 'toolu_01',
      toolName: 'shot',
      content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
      isError: false,
    },
    {
      role: 'toolResult',
      toolCallId: 'toolu_02',
      toolName: 'shot',
      content: [{ type: 'text', text: 'no screen 2' }],
      isError: true,
    },
    { role: 'developer', content: 'Be brief.' },
    {
      role: 'assistant',
      api: 'openai-responses',
      provider: 'openai',
      model: 'gpt-5.2',
      content: [{ type: 'text', text: 'One shot.', textSignature: '{"v":1,"id":"msg_1"}' }],
      stopReason: 'stop',
    },
  ]);
  // An earlier model: the tool result's image follows the run of results.
  const old = session.toMessages({ ...FORMAT, model: { provider: 'google', id: 'gemini-2.5-pro' } });
  assertValidRequest(old.messages);
  assert.deepEqual(old.messages[1].parts, [
    { text: 'Two screenshots.' },
    { text: 'Taking them.' },
    { functionCall: { name: 'shot', args: { screen: 1 } } },
    { functionCall: { name: 'shot', args: { screen: 2 } } },
  ]);
  assert.deepEqual(old.messages[2].parts, [
    { functionResponse: { name: 'shot', response: { output: '(see attached image)' } } },
    { functionResponse: { name: 'shot', response: { error: 'no screen 2' } } },
  ]);
  assert.deepEqual(old.messages[3].parts, [
    { text: 'Tool result image:' },
    { inlineData: { mimeType: 'image/png', data: PNG } },
  ]);
  assert.deepEqual(old.messages[4], { role: 'user', parts: [{ text: 'Be brief.' }] });
  assert.deepEqual(old.messages[5], { role: 'model', parts: [{ text: 'One shot.' }] });
  assert.deepEqual(
    old.warnings.map((w) => [w.code, w.index, w.path ?? null]),
    [
      ['W_CONVERTED', 1, 'content[0]'],
      ['W_DROPPED', 1, 'content[1]'],
      ['W_CONVERTED', 2, null],
      ['W_CONVERTED', 4, null],
    ],
  );
  // Gemini 3: ids on function parts, the bypass signature on calls without one, images in the response.
  const g3 = session.toMessages({ ...FORMAT, model: { provider: 'google', id: 'gemini-3-pro-preview' } });
  assertValidRequest(g3.messages);
  assert.deepEqual(g3.messages[1].parts[2], {
    functionCall: { id: 'toolu_01', name: 'shot', args: { screen: 1 } },
    thoughtSignature: 'skip_thought_signature_validator',
  });
  assert.deepEqual(g3.messages[2].parts[0], {
    functionResponse: {
      id: 'toolu_01',
      name: 'shot',
      response: { output: '(see attached image)' },
      parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }],
    },
  });
  assert.equal(g3.messages.length, 5);
});

test('pi → gemini: the fixtures of the other formats are valid requests, every change reported', () => {
  for (const format of ['openai-chat', 'anthropic', 'ai-sdk-model']) {
    for (const fx of formatFixtures(format).filter((f) => Array.isArray(f.messages))) {
      let session;
      try {
        session = Session.fromMessages(fx.messages, { format });
      } catch {
        continue; // a fixture of messages this format refuses on purpose
      }
      for (const model of [
        undefined,
        { provider: 'google', id: 'gemini-2.5-flash' },
        { provider: 'google', id: 'gemini-3-flash-preview' },
      ]) {
        const out = session.toMessages({ ...FORMAT, model });
        try {
          assertValidRequest(out.messages);
        } catch (err) {
          throw new Error(`${format}/${fx.file} for ${model?.id}: ${err.message}`);
        }
        for (const w of out.warnings)
          assert.ok(w.code === 'W_DROPPED' || w.code === 'W_CONVERTED', `${format}/${fx.file}`);
      }
      session.free();
    }
  }
});

test('pi → gemini: the conformance session is a valid request', (t) => {
  const file = path.join(repoDir, '..', 'shared', 'conformance', 'large-session', 'session.jsonl');
  if (!existsSync(file)) return t.skip('conformance data missing');
  const session = Session.fromJsonl(readFileSync(file, 'utf8'));
  const out = session.toMessages(FORMAT);
  assert.ok(out.messages.length > 0);
  for (const c of out.messages) assert.ok(c.role === 'user' || c.role === 'model');
  for (const w of out.warnings) assert.ok(w.code === 'W_DROPPED' || w.code === 'W_CONVERTED');
  // Each function response answers a call of the model content before it.
  out.messages.forEach((c, i) => {
    for (const p of c.parts ?? []) {
      if (!p.functionResponse) continue;
      const prev = out.messages[i - 1];
      assert.ok(
        prev?.parts.some((q) => q.functionCall?.name === p.functionResponse.name),
        `contents[${i}]`,
      );
    }
  });
});

test('pi → gemini: signatures go back only to the model that made them', () => {
  const messages = fixture('thinking.json').messages;
  const session = Session.fromMessages(bare(Session.fromMessages(messages, FORMAT).toLlmMessages()));
  const same = session.toMessages({ ...FORMAT, model: { provider: 'google', id: 'unknown' } });
  assert.equal(same.messages[1].parts[0].thoughtSignature, 'Q2lRQlZLaGRBZ0p4c2lnbmF0dXJl');
  assert.equal(same.messages[1].parts[0].thought, true);
  const other = session.toMessages({ ...FORMAT, model: { provider: 'google-vertex', id: 'gemini-2.5-pro' } });
  assert.deepEqual(other.messages[1].parts[0], {
    text: '**Checking Mersenne numbers**\nM61 is a known Mersenne prime.',
  });
  assert.ok(codes(other.warnings).includes('W_CONVERTED'));
  assertValidRequest(other.messages);
});

test('gemini: the system prompt — as read, a given string, another format’s as text', () => {
  const { messages, system } = fixture('system.json');
  const session = Session.fromMessages(messages, { ...FORMAT, system });
  assert.equal(session.toMessages().system, 'You are a terse assistant.Answer in English.');
  assert.deepStrictEqual(session.toMessages(FORMAT).system, system);
  assert.deepStrictEqual(session.toMessages({ ...FORMAT, system: 'Other.' }).system, { parts: [{ text: 'Other.' }] });
  const chat = Session.fromMessages(
    [
      { role: 'system', content: 'Rules.' },
      { role: 'user', content: 'hi' },
    ],
    { format: 'openai-chat' },
  );
  const out = chat.toMessages(FORMAT);
  assert.deepStrictEqual(out.system, { parts: [{ text: 'Rules.' }] });
  assert.deepEqual(out.messages, [{ role: 'user', parts: [{ text: 'hi' }] }]);
});

// ----- compacted views ---------------------------------------------------------------------------

test('gemini compacted: the summary as a user content, the kept contents as read, pairing intact', () => {
  const contents = toolLoop(12);
  const session = Session.fromMessages(contents, FORMAT);
  const ids = messageIds(session);
  // Keep from the ninth question on: 4 contents a turn, 5 pi messages a turn (2 results).
  const kept = 8 * 5;
  session.appendCompaction({ summary: 'S', firstKeptEntryId: ids[kept], tokensBefore: 1000 });
  const out = session.toMessages(FORMAT);
  assert.equal(out.messages[0].role, 'user');
  assert.match(JSON.stringify(out.messages[0].parts), /S/);
  assert.deepStrictEqual(out.messages.slice(1), contents.slice(8 * 4));
  assert.deepEqual(out.warnings, []);
  assertValidRequest(out.messages);
});

test('gemini compacted: a cut inside a run of results keeps every response with its call', () => {
  const contents = toolLoop(6, 40, 3);
  const session = Session.fromMessages(contents, FORMAT);
  const ids = messageIds(session);
  // Point the cut at the second result of turn 3: the kept view starts at a whole turn.
  session.appendCompaction({ summary: 'S', firstKeptEntryId: ids[3 * 6 + 3], tokensBefore: 1000 });
  const out = session.toMessages(FORMAT);
  assertValidRequest(out.messages);
});

test('gemini compacted: snapcompact frames are inlineData PNG parts of the summary content', async () => {
  const contents = toolLoop(30, 2000, 3);
  const session = Session.fromMessages(contents, FORMAT);
  const result = await session.compact({
    settings: { reserveTokens: 1000, keepRecentTokens: 2000 },
    strategy: 'snapcompact',
    model: 'gemini-2.5-pro',
    now: 5000,
  });
  assert.equal(result.method, 'snapcompact');
  const out = session.toMessages(FORMAT);
  const summary = out.messages[0];
  assert.equal(summary.role, 'user');
  const images = summary.parts.filter((p) => p.inlineData);
  assert.ok(images.length > 0 && images.length <= 3600, `${images.length} frames`);
  for (const p of images) {
    assert.equal(p.inlineData.mimeType, 'image/png');
    assert.equal(Buffer.from(p.inlineData.data, 'base64').subarray(1, 4).toString(), 'PNG');
  }
  assertValidRequest(out.messages);
});

// ----- properties ----------------------------------------------------------------------------------

/** Random valid contents (`random` of support/formats.mjs, reproducible from `seed`) and mutations of them. */
function generator(seed) {
  const { next: rand, int, pick } = random(seed);
  const text = () => pick(['', ' ', 'hi', 'ünïcödé ✓', 'line\nbreak', '{"json":1}', 'x'.repeat(int(200))]);
  const sig = () => pick(['c2ln', 'QUJDRA==', 'skip_thought_signature_validator']);
  let n = 0;
  const userPart = () =>
    pick([
      () => ({ text: text() }),
      () => ({ inlineData: { mimeType: pick(['image/png', 'image/jpeg']), data: PNG } }),
      () => ({ inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } }),
      () => ({ fileData: { fileUri: 'gs://b/v.mp4', mimeType: 'video/mp4' }, videoMetadata: { fps: 2 } }),
      () => ({ text: text(), 'x-extra': int(9) }),
    ])();
  const modelPart = () =>
    pick([
      () => ({ text: text() }),
      () => ({ text: text(), thoughtSignature: sig() }),
      () => ({ text: text(), thought: true }),
      () => ({ thought: true, text: text(), thoughtSignature: sig() }),
      () => ({ executableCode: { language: 'PYTHON', code: 'print(1)' } }),
      () => ({ codeExecutionResult: { outcome: 'OUTCOME_OK', output: '1' } }),
    ])();
  function history() {
    const contents = [];
    const turns = 1 + int(5);
    for (let t = 0; t < turns; t++) {
      contents.push({ role: 'user', parts: Array.from({ length: 1 + int(3) }, userPart) });
      const calls = Array.from({ length: int(4) }, () => {
        const name = pick(['ls', 'read', 'grep']);
        const fc = rand() < 0.5 ? { id: `c${n++}`, name, args: { n: int(9) } } : { name, args: { n: int(9) } };
        if (rand() < 0.2) delete fc.args;
        const part = { functionCall: fc };
        if (rand() < 0.5) part.thoughtSignature = sig();
        return part;
      });
      contents.push({ role: 'model', parts: [...Array.from({ length: int(3) }, modelPart), ...calls] });
      if (calls.length > 0) {
        const responses = calls.map(({ functionCall: fc }) => {
          const fr = { name: fc.name, response: pick([{ output: text() }, { error: 'boom' }, { a: [1, 2], b: null }]) };
          if (fc.id !== undefined) fr.id = fc.id;
          if (rand() < 0.2) fr.parts = [{ inlineData: { mimeType: 'image/png', data: PNG } }];
          return { functionResponse: fr };
        });
        contents.push({ role: 'user', parts: responses });
        contents.push({ role: 'model', parts: [modelPart()] });
      }
    }
    return contents;
  }
  function mutate(contents) {
    const bad = structuredClone(contents);
    const c = pick(bad);
    const target = rand() < 0.3 || !c.parts?.length ? c : pick(c.parts);
    const node = isPlain(target) && rand() < 0.5 ? (Object.values(target).find(isPlain) ?? target) : target;
    const keys = Object.keys(node);
    const key = keys.length > 0 && rand() < 0.8 ? pick(keys) : pick(['role', 'parts', 'text', 'id', 'name']);
    if (rand() < 0.3) delete node[key];
    else node[key] = pick([null, 7, 'str', [], {}, [null], { role: 'robot' }, 'system', true]);
    return bad;
  }
  return { history, mutate };
}
const isPlain = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

test('gemini property: 300 random valid histories round-trip as the same JSON, and as valid pi views', () => {
  assertRoundTrips(generator(0x5eed), FORMAT);
});

test('gemini property: 400 mutated histories throw nothing but E_INVALID_MESSAGE, with a usable index and field', () => {
  assertMutationsRefusedCleanly(generator(0xbad5eed), FORMAT, { alsoWrite: ['openai-chat', 'anthropic', 'pi'] });
});

// ----- size and speed ------------------------------------------------------------------------------

test('gemini: a 50 MB text, call argument and response go through', () => {
  const huge = 'x'.repeat(50 * 1024 * 1024);
  const contents = [
    { role: 'user', parts: [{ text: huge }] },
    { role: 'model', parts: [{ functionCall: { name: 'write', args: { text: huge } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'write', response: { output: huge } } }] },
  ];
  const out = Session.fromMessages(contents, FORMAT).toMessages(FORMAT);
  assert.equal(out.messages[0].parts[0].text.length, huge.length);
  assert.equal(out.messages[1].parts[0].functionCall.args.text.length, huge.length);
  assert.equal(out.messages[2].parts[0].functionResponse.response.output.length, huge.length);
});

test('gemini: fromMessages + toMessages of a 2,000-content tool loop', () => {
  const contents = toolLoop(500, 5000, 3);
  assert.equal(contents.length, 2000);
  const session = Session.fromMessages(contents, FORMAT);
  const out = session.toMessages(FORMAT);
  assert.equal(out.messages.length, contents.length);
  session.free();
});

// ----- types ---------------------------------------------------------------------------------------

test('gemini: a strict TypeScript consumer of the format types type-checks', () => {
  typeCheck(
    'formats-gemini',
    STRICT,
    `
    import { Session, type GeminiContent, type GeminiSystem, type GeminiPart } from 'ctxfold';
    const systemInstruction: GeminiSystem = { parts: [{ text: 'Rules.' }] };
    const contents: GeminiContent[] = [
      { role: 'user', parts: [{ text: 'Hi' }, { inlineData: { mimeType: 'image/png', data: 'AA==' } }, { fileData: { fileUri: 'gs://b/v.mp4' }, videoMetadata: { fps: 1 } }] },
      {
        role: 'model',
        parts: [
          { text: 'think', thought: true, thoughtSignature: 'c2ln' },
          { functionCall: { name: 'ls', args: { path: '.' } }, thoughtSignature: 'c2ln' },
          { executableCode: { language: 'PYTHON', code: 'print(1)' } },
          { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '1' } },
        ],
      },
      { role: 'user', parts: [{ functionResponse: { name: 'ls', response: { output: 'a.txt' } } }] },
    ];
    const session = Session.fromMessages<'gemini'>(contents, { format: 'gemini', system: systemInstruction });
    session.appendMessages<'gemini'>([{ role: 'user', parts: [{ text: 'More.' }] }], { format: 'gemini' });
    const out = session.toMessages<'gemini'>({ format: 'gemini' });
    const first: GeminiContent | undefined = out.messages[0];
    const sys: GeminiSystem | undefined = out.system;
    const part: GeminiPart | undefined = first?.parts?.[0];
    // @ts-expect-error roles are user and model
    const bad: GeminiContent = { role: 'assistant', parts: [] };
    // @ts-expect-error call arguments are an object
    const badCall: GeminiPart = { functionCall: { name: 'f', args: '{}' } };
    export { first, sys, part, bad, badCall };
    `,
  );
});
