// The `ai-sdk-model` format (issue 21): the AI SDK's ModelMessages (ai 7) and the provider-level
// prompt a language-model middleware sees, read into a session and written back. Fixtures
// (tests/fixtures/formats/ai-sdk-model/) follow the ai 7 declarations; every fixture message and
// every written message is checked with the package's own `modelMessageSchema`, and written
// histories go through the real `generateText` (its prompt conversion refuses unpaired calls).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateText, modelMessageSchema } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Session } from 'ctxfold';
import { bare, bestRoundTrip, formatFixtures, mutateSeveral, random, STRICT, typeCheck } from './support/formats.mjs';

const FORMAT = { format: 'ai-sdk-model' };
const fixtures = formatFixtures('ai-sdk-model');
const histories = fixtures.filter((f) => Array.isArray(f.messages));
const fixture = (file) => histories.find((f) => f.file === file);

const formatWarnings = (session) =>
  session.warnings.filter((w) => w.code.startsWith('W_')).map(({ code, index, path: p }) => ({ code, index, path: p }));

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_BYTES = new Uint8Array(Buffer.from(PNG, 'base64'));
const OPUS = { provider: 'anthropic', api: 'anthropic-messages', id: 'claude-opus-4-6' };

/** Every message passes the ai package's own schema. */
function assertSchema(messages, what) {
  messages.forEach((m, i) => {
    const r = modelMessageSchema.safeParse(m);
    assert.ok(r.success, `${what}: message ${i} fails modelMessageSchema: ${JSON.stringify(r.error?.issues)}`);
  });
}

/** The prompts a mock model receives from generateText for `messages`. */
async function sentPrompt(messages) {
  const prompts = [];
  const model = new MockLanguageModelV4({
    provider: 'mock.provider',
    modelId: 'mock',
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      return {
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 1, text: 1, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
  // URLs stay URLs (no download): what is checked is the conversion, not the network.
  const download = async (files) => files.map(() => null);
  await generateText({ model, messages, allowSystemInMessages: true, experimental_download: download });
  return prompts[0];
}

// ----- fixtures ---------------------------------------------------------------------------------

for (const fx of histories) {
  test(`ai-sdk-model ${fx.file}: messages → session → messages is the same JSON, the system messages first`, async () => {
    assertSchema(fx.messages, 'fixture');
    const session = Session.fromMessages(fx.messages, FORMAT);
    assert.deepEqual(formatWarnings(session), []);
    const out = session.toMessages(FORMAT);
    assert.deepStrictEqual(out.messages, fx.messages);
    assert.equal(JSON.stringify(out.messages), JSON.stringify(fx.messages));
    assert.equal(out.system, undefined, 'system messages stay in messages');
    assert.deepEqual(out.warnings, []);
    assertSchema(out.messages, 'written');
    // Written again from the session file, nothing changes.
    const reloaded = Session.fromJsonl(session.toJsonl());
    assert.deepStrictEqual(reloaded.toMessages(FORMAT).messages, fx.messages);
    // A history whose calls all have results is one generateText takes.
    if (fx.file !== 'pending-approval.json') assert.ok((await sentPrompt(out.messages)).length > 0);
  });
}

for (const c of fixtures.find((f) => f.file === 'malformed.json').cases) {
  test(`ai-sdk-model malformed: ${c.name} → E_INVALID_MESSAGE at ${c.index} ${c.field || '(the message)'}`, () => {
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

test('ai-sdk-model malformed: what the reader refuses, the schema refuses too (bar two cases)', () => {
  // The schema checks no pairing, and reads tagged URL data with a string URL as a provider
  // reference (a record of strings), which the SDK's own conversion then takes for a URL object.
  const looser = ['a result whose call is nowhere', 'tagged url given as a string'];
  for (const c of fixtures.find((f) => f.file === 'malformed.json').cases) {
    if (looser.includes(c.name)) continue;
    const bad = c.messages[c.index];
    assert.equal(modelMessageSchema.safeParse(bad).success, false, c.name);
  }
});

test('ai-sdk-model: a refused appendMessages leaves the session as it was', () => {
  const session = Session.fromMessages(fixture('parallel-tools.json').messages, FORMAT);
  const before = session.toJsonl();
  assert.throws(
    () =>
      session.appendMessages(
        [
          { role: 'user', content: 'fine' },
          { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c' }] },
        ],
        FORMAT,
      ),
    (err) => err.code === 'E_INVALID_MESSAGE' && err.index === 1 && err.field === 'content[0].toolName',
  );
  assert.equal(session.toJsonl(), before);
});

// ----- what pi sees -----------------------------------------------------------------------------

test('ai-sdk-model → pi: a tool message is one toolResult per result, outputs as text, errors flagged', () => {
  const fx = fixture('parallel-tools.json');
  const llm = bare(Session.fromMessages(fx.messages, FORMAT).toLlmMessages());
  assert.deepEqual(
    llm.map((m) => m.role),
    ['user', 'assistant', 'toolResult', 'toolResult', 'toolResult', 'assistant', 'toolResult', 'toolResult'].concat([
      'toolResult',
      'toolResult',
      'assistant',
    ]),
  );
  assert.deepEqual(
    llm[1].content.map((b) => (b.type === 'toolCall' ? [b.id, b.name, b.arguments] : b.type)),
    [
      'text',
      ['call_a1', 'getWeather', { city: 'San Francisco' }],
      ['call_a2', 'getWeather', { city: 'New York' }],
      ['call_a3', 'getTime', { timezone: 'America/Los_Angeles' }],
    ],
  );
  assert.equal(llm[1].stopReason, 'toolUse');
  const results = llm.filter((m) => m.role === 'toolResult');
  assert.deepEqual(
    results.map((m) => [m.toolCallId, m.toolName, m.isError, m.content[0].text]),
    [
      ['call_a1', 'getWeather', false, '15°C, foggy'],
      ['call_a2', 'getWeather', false, '{"temperature":22,"unit":"C","conditions":["sunny","dry"],"wind":null}'],
      ['call_a3', 'getTime', true, 'ConnectionError: the time service is not available'],
      ['call_b1', 'deploy', true, '{"code":503,"message":"registry unavailable"}'],
      ['call_b2', 'deleteAll', true, 'The user refused to delete everything.'],
      ['call_b3', 'dropTable', true, 'Tool execution denied.'],
      ['call_b4', 'screenshot', false, 'Screenshot of https://example.com:'],
    ],
  );
  // A content output: text, inline images as image blocks, the rest as text that names it.
  assert.deepEqual(
    results.at(-1).content.map((b) => (b.type === 'image' ? `${b.mimeType} image` : b.text)),
    [
      'Screenshot of https://example.com:',
      'image/png image',
      'image/png image',
      '[image: https://example.com/full.png]',
      '[file: page.pdf, application/pdf]',
    ],
  );
  // The pi format writes the same view.
  assert.deepEqual(
    bare(Session.fromMessages(fx.messages, FORMAT).toMessages().messages).map((m) => m.role),
    llm.map((m) => m.role),
  );
});

test('ai-sdk-model → pi: inline images are image blocks, URLs and other files text that names them', () => {
  const llm = bare(Session.fromMessages(fixture('images.json').messages, FORMAT).toLlmMessages());
  const show = (b) => (b.type === 'image' ? `${b.mimeType} ${b.data === PNG ? 'png' : 'other'}` : b.text);
  assert.deepEqual(llm[0].content.map(show), [
    'How are these images different?',
    'image/png png',
    'image/png png',
    'image/png png',
    '[image: https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg]',
    'image/png png',
    'image/png png',
    'image/png png',
  ]);
  assert.deepEqual(llm[2].content.map(show), [
    '[file: report.pdf, application/pdf]',
    '[file: https://arxiv.org/pdf/1706.03762, application/pdf]',
    '[file: spec.pdf, application/pdf]',
    '[file: notes.txt, text/plain]\nThe grass is green. The sky is blue.',
    'Summarize these documents.',
  ]);
  assert.deepEqual(llm[3].content.map(show), ['Here is a diagram of the summary:', 'image/png png']);
});

test("ai-sdk-model → pi: each provider's reasoning metadata lands where pi keeps it", () => {
  const llm = bare(Session.fromMessages(fixture('reasoning-signatures.json').messages, FORMAT).toLlmMessages());
  const [anthropic, , , , openai, , openaiText, , gemini, , geminiText] = llm.slice(1);
  assert.deepEqual(anthropic.content.slice(0, 2), [
    {
      type: 'thinking',
      thinking: 'I should check divisibility by small primes, then use the tool.',
      thinkingSignature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
    },
    { type: 'redactedThinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
  ]);
  assert.equal(anthropic.api, 'anthropic-messages');
  assert.equal(anthropic.provider, 'anthropic');
  // OpenAI: the reasoning item whole (the Responses reader's convention), the call's item id.
  assert.deepEqual(JSON.parse(openai.content[0].thinkingSignature), {
    type: 'reasoning',
    id: 'rs_6808709f6fcc8191ad2e2fdd784017b3',
    summary: [{ type: 'summary_text', text: '**Checking primality**\n\nTrial division up to 1000.' }],
    encrypted_content: 'gAAAAABoCHCfxLW8v3bM5K0Z9jV2',
  });
  assert.equal(openai.content[1].thoughtSignature, 'fc_6808709fa6d08191b0bd5ec8bdc5a1a4');
  assert.equal(openai.api, 'openai-responses');
  assert.deepEqual(JSON.parse(openaiText.content[1].textSignature), {
    v: 1,
    id: 'msg_680870a2b9f48191',
    phase: 'final_answer',
  });
  assert.equal(gemini.content[0].thinkingSignature, 'CiQB0e2Kb7yZ1Q==');
  assert.equal(gemini.content[1].thoughtSignature, 'CiwB0e2Kb1kM3X==');
  assert.equal(geminiText.content[0].textSignature, 'CiAB0e2Kb0Qx==');
  assert.equal(gemini.api, 'google-generative-ai');
  // The model the reader is given wins over what the metadata says.
  const given = Session.fromMessages(fixture('reasoning-signatures.json').messages, { ...FORMAT, model: OPUS });
  const first = given.toLlmMessages()[1];
  assert.deepEqual([first.api, first.provider, first.model], ['anthropic-messages', 'anthropic', 'claude-opus-4-6']);
  const middleware = Session.fromMessages(fixture('text-chat.json').messages, {
    ...FORMAT,
    model: { provider: 'openai', id: 'gpt-5' },
  });
  const reply = middleware.toLlmMessages().find((m) => m.role === 'assistant');
  assert.deepEqual([reply.api, reply.provider, reply.model], ['openai-responses', 'openai', 'gpt-5']);
});

test('ai-sdk-model → pi: provider-executed tools, approvals and custom parts pass through; a later system message is a developer message', () => {
  const session = Session.fromMessages(fixture('provider-tools-and-approvals.json').messages, FORMAT);
  const llm = bare(session.toLlmMessages());
  assert.deepEqual(
    llm.map((m) => m.role),
    ['user', 'assistant', 'toolResult', 'developer', 'assistant', 'toolResult', 'assistant'],
  );
  assert.deepEqual(
    llm[1].content.map((b) => (b.type === 'aiSdkPart' ? `part:${b.part.type}` : b.type)),
    [
      'part:tool-call',
      'part:tool-result',
      'part:custom',
      'part:reasoning-file',
      'text',
      'toolCall',
      'part:tool-approval-request',
    ],
  );
  assert.equal(llm[3].content, 'The user is now in read-only mode.');
  assert.deepEqual([llm[5].isError, llm[5].content], [true, [{ type: 'text', text: 'read-only mode' }]]);
  // What the other formats cannot carry they report: the anthropic writer drops the parts.
  const anthropic = session.toMessages({ format: 'anthropic' });
  assert.ok(anthropic.warnings.some((w) => w.code === 'W_DROPPED' && /aiSdkPart/.test(w.message)));
});

test('ai-sdk-model: the system prompt — the leading messages, text given to toMessages, another format’s', () => {
  const fx = fixture('text-chat.json');
  const session = Session.fromMessages(fx.messages, FORMAT);
  // Other formats get its text.
  assert.equal(session.toMessages().system, 'You are a concise assistant.\n\nAnswer in English.');
  assert.equal(
    session.toMessages({ format: 'anthropic' }).system,
    'You are a concise assistant.\n\nAnswer in English.',
  );
  const given = session.toMessages({ ...FORMAT, system: 'Be brief.' });
  assert.deepEqual(given.messages[0], { role: 'system', content: 'Be brief.' });
  assert.equal(given.messages[1].role, 'user');
  assert.equal(given.system, undefined);
  const plain = Session.fromMessages([{ role: 'user', content: 'hi' }], { ...FORMAT, system: 'From options.' });
  assert.deepEqual(plain.toMessages(FORMAT).messages, [
    { role: 'system', content: 'From options.' },
    { role: 'user', content: 'hi' },
  ]);
  const blocks = [{ type: 'text', text: 'Rules.', cache_control: { type: 'ephemeral' } }];
  const fromAnthropic = Session.fromMessages([{ role: 'user', content: 'hi' }], {
    format: 'anthropic',
    system: blocks,
  });
  const out = fromAnthropic.toMessages(FORMAT);
  assert.deepEqual(out.messages[0], { role: 'system', content: 'Rules.' });
  assert.deepEqual(
    out.warnings.map((w) => w.code),
    ['W_CONVERTED'],
  );
  assert.equal(Session.fromMessages([{ role: 'user', content: 'hi' }], FORMAT).toMessages(FORMAT).messages.length, 1);
});

test('ai-sdk-model → pi: a tool result in a later batch finds its call in the session', () => {
  const session = Session.fromMessages(
    [
      { role: 'user', content: 'ls' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'call_later', toolName: 'ls', input: { dir: '.' } }],
      },
    ],
    FORMAT,
  );
  const tool = {
    role: 'tool',
    content: [
      { type: 'tool-result', toolCallId: 'call_later', toolName: 'ls', output: { type: 'text', value: 'a.txt' } },
    ],
  };
  const { warnings } = session.appendMessages([tool], FORMAT);
  assert.deepEqual(warnings, []);
  assert.equal(session.toLlmMessages().at(-1).toolName, 'ls');
  assert.deepEqual(session.toMessages(FORMAT).messages.at(-1), tool);
});

test('ai-sdk-model: a call still without a result is reported, and the view leaves it out until its result comes', () => {
  const messages = [
    { role: 'user', content: 'ls' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Listing.' },
        { type: 'tool-call', toolCallId: 'call_open', toolName: 'ls', input: {} },
      ],
    },
  ];
  const session = Session.fromMessages(messages, FORMAT);
  assert.deepEqual(formatWarnings(session), [{ code: 'W_CONVERTED', index: 1, path: undefined }]);
  assert.match(session.warnings.at(-1).message, /call_open.*no result/);
  assert.deepEqual(session.toMessages(FORMAT).messages[1], {
    role: 'assistant',
    content: [{ type: 'text', text: 'Listing.' }],
  });
  session.appendMessages(
    [
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'call_open', toolName: 'ls', output: { type: 'text', value: 'a' } },
        ],
      },
    ],
    FORMAT,
  );
  assert.deepStrictEqual(session.toMessages(FORMAT).messages.slice(0, 2), messages);
});

test('ai-sdk-model: approval responses appended on their own come back in place, the result after them', async () => {
  const fx = fixture('provider-tools-and-approvals.json');
  const session = Session.fromMessages(fx.messages.slice(0, 2), FORMAT);
  // Batch by batch, as an app appends: the approval alone, then the result and the rest.
  const alone = session.appendMessages([fx.messages[2]], FORMAT);
  assert.deepEqual(
    alone.warnings.map((w) => w.code),
    ['W_CONVERTED'],
  );
  session.appendMessages(fx.messages.slice(3), FORMAT);
  const out = session.toMessages(FORMAT);
  assert.deepStrictEqual(out.messages, fx.messages);
  // Other formats see no empty message between the call and its result.
  assert.deepEqual(
    bare(session.toMessages({ format: 'anthropic' }).messages)
      .slice(0, 3)
      .map((m) => m.role),
    ['user', 'assistant', 'user'],
  );
  assert.ok((await sentPrompt(out.messages)).length > 0);
});

// ----- bytes, URL objects and the provider-level prompt -------------------------------------------

test('ai-sdk-model: bytes are base64 in the session and bytes again when written; URL objects stay URL objects', () => {
  const url = new URL('https://example.com/cat.png');
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'image', image: PNG_BYTES, mediaType: 'image/png' },
        { type: 'image', image: PNG_BYTES.buffer.slice(0) },
        { type: 'image', image: url },
        { type: 'file', data: { type: 'data', data: PNG_BYTES }, mediaType: 'image' },
        {
          type: 'file',
          data: { type: 'url', url: new URL('s3://bucket/a b.pdf'), originalUrl: 's3://bucket/a b.pdf' },
          mediaType: 'application/pdf',
        },
        { type: 'file', data: Buffer.from('%PDF-1.4'), mediaType: 'application/pdf' },
        { type: 'text', text: 'What is this?' },
      ],
    },
    {
      role: 'assistant',
      content: [
        {
          type: 'reasoning-file',
          data: { type: 'url', url: new URL('https://example.com/r.png') },
          mediaType: 'image/png',
        },
      ],
    },
  ];
  assertSchema(messages, 'input');
  const session = Session.fromMessages(messages, FORMAT);
  assert.deepEqual(formatWarnings(session), []);
  const stored = session.toJsonl();
  assert.ok(stored.includes(PNG), 'the bytes are kept as base64');
  const pi = bare(session.toLlmMessages()[0].content);
  assert.deepEqual(
    pi.map((b) => (b.type === 'image' ? `${b.mimeType} ${b.data === PNG}` : b.text)),
    [
      'image/png true',
      'image/png true',
      '[image: https://example.com/cat.png]',
      'image/png true',
      '[file: s3://bucket/a%20b.pdf, application/pdf]',
      '[file: inline data, application/pdf]',
      'What is this?',
    ],
  );
  const out = Session.fromJsonl(stored).toMessages(FORMAT).messages;
  assertSchema(out, 'written');
  const [image, buffer, byUrl, tagged, s3, buf] = out[0].content;
  assert.ok(image.image instanceof Uint8Array);
  assert.deepEqual([...image.image], [...PNG_BYTES]);
  assert.ok(buffer.image instanceof ArrayBuffer);
  assert.ok(byUrl.image instanceof URL);
  assert.equal(byUrl.image.href, url.href);
  assert.ok(tagged.data.data instanceof Uint8Array);
  assert.ok(s3.data.url instanceof URL);
  assert.equal(s3.data.originalUrl, 's3://bucket/a b.pdf');
  assert.equal(Buffer.from(buf.data).toString(), '%PDF-1.4');
  assert.ok(out[1].content[0].data.url instanceof URL);
  // Equal to what was read, a Buffer coming back as the Uint8Array it is.
  const user = messages[0].content.map((p, k) => (k === 5 ? { ...p, data: new Uint8Array(p.data) } : p));
  const expected = [{ ...messages[0], content: user }, messages[1]];
  assert.equal(JSON.stringify(out), JSON.stringify(expected));
});

test('ai-sdk-model: the provider-level prompt a middleware sees (LanguageModelV4Prompt) reads, and writes back as it was', async () => {
  const fx = fixture('parallel-tools.json');
  const images = fixture('images.json');
  // What generateText hands the model for two fixtures: system first, user content as parts,
  // images as file parts with tagged data, members set to undefined.
  const prompt = await sentPrompt([
    { role: 'system', content: 'Rules.' },
    ...images.messages
      .slice(0, 2)
      .map((m) =>
        m.role === 'user'
          ? { ...m, content: m.content.filter((p) => typeof p.image !== 'string' || !p.image.startsWith('https:')) }
          : m,
      ),
    ...fx.messages,
  ]);
  assert.ok(
    prompt.some((m) => m.role === 'user' && m.content.some((p) => p.type === 'file' && p.data.type === 'data')),
  );
  assert.ok(JSON.stringify(Object.entries(prompt[1].content[0])).includes('providerOptions'), 'undefined members');
  const session = Session.fromMessages(prompt, FORMAT);
  assert.deepEqual(formatWarnings(session), []);
  const llm = bare(session.toLlmMessages());
  assert.equal(llm[0].content.filter((b) => b.type === 'image').length, 6);
  assert.equal(llm.filter((m) => m.role === 'toolResult').length, 7);
  const out = session.toMessages(FORMAT);
  assert.equal(JSON.stringify(out.messages), JSON.stringify(prompt));
  assertSchema(out.messages, 'written');
});

// ----- writing other histories ------------------------------------------------------------------

/** A pi session of other providers: reasoning of three kinds, parallel calls, images in results, a developer message. */
function foreignSession() {
  const s = Session.create({ now: 1 });
  s.appendMessage({ role: 'user', content: 'Look at the logo and list the files.', timestamp: 1 });
  s.appendMessage({
    role: 'assistant',
    api: 'openai-responses',
    provider: 'openai',
    model: 'gpt-5',
    stopReason: 'toolUse',
    content: [
      {
        type: 'thinking',
        thinking: 'Two tools at once.',
        thinkingSignature: JSON.stringify({ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'ENC' }),
      },
      { type: 'text', text: 'Listing and reading.', textSignature: JSON.stringify({ v: 1, id: 'msg_1' }) },
      { type: 'toolCall', id: 'call_1|fc_1', name: 'ls', arguments: { dir: '.' }, thoughtSignature: 'fc_1' },
      { type: 'toolCall', id: 'call_2|fc_2', name: 'read', arguments: { __raw: 'logo.png' } },
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
      { type: 'text', text: 'the logo:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ],
    isError: true,
  });
  s.appendMessage({ role: 'developer', content: [{ type: 'text', text: 'Be brief.' }], timestamp: 2 });
  s.appendMessage({ role: 'fileMention', files: [{ path: 'README.md', content: '# Demo' }], timestamp: 3 });
  s.appendMessage({
    role: 'assistant',
    api: 'anthropic-messages',
    provider: 'anthropic',
    stopReason: 'stop',
    content: [
      { type: 'thinking', thinking: 'A logo and a readme.', thinkingSignature: 'sig-anthropic' },
      { type: 'redactedThinking', data: 'opaque' },
      { type: 'anthropicServerTool', block: { type: 'server_tool_use', id: 'srv', name: 'web_search', input: {} } },
      { type: 'text', text: 'A logo and a readme.' },
    ],
  });
  s.appendMessage({ role: 'user', content: 'And Gemini?' });
  s.appendMessage({
    role: 'assistant',
    api: 'google-generative-ai',
    provider: 'google',
    stopReason: 'stop',
    content: [
      { type: 'thinking', thinking: 'hm', thinkingSignature: 'g-sig' },
      { type: 'thinking', thinking: 'unsigned' },
      { type: 'text', text: 'Same.' },
    ],
  });
  return s;
}

test('pi → ai-sdk-model: a session of other providers is valid ModelMessages generateText takes; what changed is in warnings', async () => {
  const out = foreignSession().toMessages(FORMAT);
  assertSchema(out.messages, 'written');
  assert.deepEqual(
    out.messages.map((m) => m.role),
    ['user', 'assistant', 'tool', 'system', 'system', 'assistant', 'user', 'assistant'],
  );
  assert.deepEqual(out.messages[1].content, [
    {
      type: 'reasoning',
      text: 'Two tools at once.',
      providerOptions: { openai: { itemId: 'rs_1', reasoningEncryptedContent: 'ENC' } },
    },
    { type: 'text', text: 'Listing and reading.', providerOptions: { openai: { itemId: 'msg_1' } } },
    {
      type: 'tool-call',
      toolCallId: 'call_1|fc_1',
      toolName: 'ls',
      input: { dir: '.' },
      providerOptions: { openai: { itemId: 'fc_1' } },
    },
    { type: 'tool-call', toolCallId: 'call_2|fc_2', toolName: 'read', input: 'logo.png' },
  ]);
  // Both results in one tool message; the image one as a content output.
  assert.deepEqual(out.messages[2].content, [
    {
      type: 'tool-result',
      toolCallId: 'call_1|fc_1',
      toolName: 'ls',
      output: { type: 'text', value: 'logo.png\nREADME.md' },
    },
    {
      type: 'tool-result',
      toolCallId: 'call_2|fc_2',
      toolName: 'read',
      output: {
        type: 'content',
        value: [
          { type: 'text', text: 'the logo:' },
          { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' },
        ],
      },
    },
  ]);
  assert.deepEqual(out.messages[3], { role: 'system', content: 'Be brief.' });
  // pi gives a file mention as a developer message: a system message here.
  assert.deepEqual(out.messages[4], { role: 'system', content: '<file path="README.md">\n# Demo\n</file>' });
  assert.deepEqual(out.messages[5].content, [
    { type: 'reasoning', text: 'A logo and a readme.', providerOptions: { anthropic: { signature: 'sig-anthropic' } } },
    { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: 'opaque' } } },
    { type: 'text', text: 'A logo and a readme.' },
  ]);
  assert.deepEqual(out.messages[7].content, [
    { type: 'reasoning', text: 'hm', providerOptions: { google: { thoughtSignature: 'g-sig' } } },
    { type: 'reasoning', text: 'unsigned' },
    { type: 'text', text: 'Same.' },
  ]);
  assert.deepEqual(
    out.warnings.map((w) => [w.code, w.index, w.path]),
    [
      ['W_CONVERTED', 2, undefined],
      ['W_DROPPED', 5, 'content[2]'],
    ],
  );
  assert.match(out.warnings[0].message, /error result with images/);
  assert.match(out.warnings[1].message, /anthropicServerTool/);
  const prompt = await sentPrompt(out.messages);
  assert.equal(prompt.filter((m) => m.role === 'tool').length, 1);
});

// ----- compacted views --------------------------------------------------------------------------

/** `n` lines of code-like text. */
const code = (n, tag) =>
  Array.from({ length: n }, (_, i) => `const ${tag}${i} = compute(${i}, "${tag}"); // step ${i}`).join('\n');

/** A tool loop of `n` rounds: a question, reasoning and a call, its result, an answer. */
function toolLoop(n, size = 40, lines = 0) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push({ role: 'user', content: `question ${i} ${'word '.repeat(size)}` });
    out.push({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: `plan ${i}`, providerOptions: { anthropic: { signature: `sig${i}` } } },
        { type: 'tool-call', toolCallId: `call_${i}`, toolName: 'read', input: { path: `f${i}.ts` } },
      ],
    });
    const file = lines > 0 ? code(lines, `f${i}_`) : `file ${i} ${'x '.repeat(size)}`;
    out.push({
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: `call_${i}`, toolName: 'read', output: { type: 'text', value: file } },
      ],
    });
    out.push({ role: 'assistant', content: `answer ${i} ${'word '.repeat(size)}` });
  }
  return out;
}

const messageIds = (session) =>
  session
    .index()
    .filter((e) => e.type === 'message')
    .map((e) => e.id);

test('ai-sdk-model compacted: the summary as the first user message, the kept messages as read, pairing intact', async () => {
  const messages = [{ role: 'system', content: 'Rules.' }, ...toolLoop(12)];
  const session = Session.fromMessages(messages, FORMAT);
  const kept = 8 * 4;
  session.appendCompaction({ summary: 'S', firstKeptEntryId: messageIds(session)[kept], tokensBefore: 1000 });
  const out = session.toMessages(FORMAT);
  assert.deepEqual(out.messages[0], { role: 'system', content: 'Rules.' });
  assert.equal(out.messages[1].role, 'user');
  assert.match(JSON.stringify(out.messages[1].content), /S/);
  assert.deepStrictEqual(out.messages.slice(2), messages.slice(1 + kept));
  assert.deepEqual(out.warnings, []);
  assertSchema(out.messages, 'written');
  await sentPrompt(out.messages);
});

test('ai-sdk-model compacted: snapcompact frames are image file parts of the summary message', async () => {
  const session = Session.fromMessages(toolLoop(30, 20, 120), FORMAT);
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
  const frames = summary.content.filter((p) => p.type === 'file');
  assert.ok(frames.length > 0, 'frames');
  for (const f of frames) {
    assert.equal(f.mediaType, 'image/png');
    assert.equal(Buffer.from(f.data, 'base64').subarray(1, 4).toString(), 'PNG');
  }
  assertSchema(out.messages, 'written');
  const prompt = await sentPrompt(out.messages);
  assert.equal(prompt[0].content.filter((p) => p.type === 'file').length, frames.length);
});

test("ai-sdk-model compacted: a native compaction record is reported, the summary's text goes", () => {
  const session = Session.fromMessages(toolLoop(6), FORMAT);
  session.appendCompaction({
    summary: 'text summary',
    firstKeptEntryId: messageIds(session)[12],
    tokensBefore: 90_000,
    method: 'remote',
    preserveData: { anthropicCompaction: { provider: 'anthropic', content: 'NATIVE', encryptedContent: 'ENC' } },
  });
  const plain = session.toMessages(FORMAT);
  assert.match(JSON.stringify(plain.messages[0].content), /text summary/);
  const native = session.toMessages({ ...FORMAT, model: OPUS });
  assert.match(JSON.stringify(native.messages[0].content), /text summary/);
  assert.ok(!JSON.stringify(native.messages).includes('NATIVE'));
  assert.deepEqual(
    native.warnings.map((w) => [w.code, w.index]),
    session.toLlmMessages({ model: OPUS })[0].providerPayload === undefined ? [] : [['W_DROPPED', 0]],
  );
});

// ----- property tests ---------------------------------------------------------------------------

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

const maybeOptions = (r) =>
  r.int(5) === 0
    ? {
        providerOptions: r.pick([{ anthropic: { cacheControl: { type: 'ephemeral' } } }, { openai: { store: false } }]),
      }
    : {};

function randomUserPart(r) {
  switch (r.int(8)) {
    case 0:
      return { type: 'image', image: PNG, ...(r.int(2) ? { mediaType: 'image/png' } : {}), ...maybeOptions(r) };
    case 1:
      return { type: 'image', image: `https://example.com/${r.alnum(5)}.png` };
    case 2:
      return { type: 'file', data: `data:image/png;base64,${PNG}`, mediaType: r.pick(['image/png', 'image']) };
    case 3:
      return {
        type: 'file',
        data: r.alnum(12),
        mediaType: 'application/pdf',
        ...(r.int(2) ? { filename: `${r.alnum(4)}.pdf` } : {}),
      };
    case 4:
      return { type: 'file', data: { type: 'text', text: r.text(30) }, mediaType: 'text/plain' };
    default:
      return { type: 'text', text: r.text(), ...maybeOptions(r) };
  }
}

function randomOutput(r) {
  switch (r.int(7)) {
    case 0:
      return { type: 'json', value: randomJson(r) };
    case 1:
      return { type: 'error-text', value: r.text() };
    case 2:
      return { type: 'error-json', value: randomJson(r) };
    case 3:
      return r.int(2) ? { type: 'execution-denied' } : { type: 'execution-denied', reason: r.text() };
    case 4:
      return {
        type: 'content',
        value: [
          { type: 'text', text: r.text() },
          ...(r.int(2) ? [{ type: 'image-data', data: PNG, mediaType: 'image/png' }] : []),
          ...(r.int(3) === 0 ? [{ type: 'file-url', url: 'https://example.com/a.pdf' }] : []),
        ],
      };
    default:
      return { type: 'text', value: r.text(), ...maybeOptions(r) };
  }
}

function randomReasoning(r) {
  switch (r.int(4)) {
    case 0:
      return { type: 'reasoning', text: r.text(20), providerOptions: { anthropic: { signature: `${r.alnum(20)}==` } } };
    case 1:
      return { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: r.alnum(16) } } };
    case 2:
      return {
        type: 'reasoning',
        text: r.text(20),
        providerOptions: {
          openai: { itemId: `rs_${r.alnum(8)}`, reasoningEncryptedContent: r.int(2) ? r.alnum(10) : null },
        },
      };
    default:
      return { type: 'reasoning', text: r.text(20) };
  }
}

/** A valid ModelMessage history: system messages, user turns, assistant turns with reasoning and parallel calls, their results. */
function randomHistory(r) {
  const out = [];
  for (let i = r.int(3); i > 0; i--) out.push({ role: 'system', content: r.text(), ...maybeOptions(r) });
  const user = () => {
    out.push({
      role: 'user',
      content: r.int(3) === 0 ? r.text() : Array.from({ length: 1 + r.int(3) }, () => randomUserPart(r)),
      ...maybeOptions(r),
    });
    if (r.int(8) === 0) out.push({ role: 'system', content: r.text() });
  };
  user();
  const turns = 1 + r.int(6);
  for (let t = 0; t < turns; t++) {
    const parts = [];
    if (r.int(2)) parts.push(randomReasoning(r));
    if (r.int(3)) parts.push({ type: 'text', text: r.text(), ...maybeOptions(r) });
    if (r.int(8) === 0) parts.push({ type: 'custom', kind: 'openai.thing', providerOptions: { openai: { x: 1 } } });
    const calls = Array.from({ length: r.int(4) }, () => ({
      type: 'tool-call',
      toolCallId: `call_${r.alnum(12)}`,
      toolName: r.pick(['read', 'ls', 'grep']),
      input:
        r.int(8) === 0
          ? r.text()
          : Object.fromEntries(Array.from({ length: r.int(3) }, () => [r.alnum(4), randomJson(r)])),
      ...maybeOptions(r),
    }));
    parts.push(...calls);
    const string = parts.length === 1 && parts[0].type === 'text' && !parts[0].providerOptions && r.int(2);
    out.push({ role: 'assistant', content: string ? parts[0].text : parts, ...maybeOptions(r) });
    if (calls.length === 0) {
      user();
      continue;
    }
    const results = calls.map((c) => ({
      type: 'tool-result',
      toolCallId: c.toolCallId,
      toolName: c.toolName,
      output: randomOutput(r),
    }));
    // Results in one tool message, or one each.
    if (r.int(4) === 0) for (const p of results) out.push({ role: 'tool', content: [p] });
    else out.push({ role: 'tool', content: results, ...maybeOptions(r) });
    if (r.int(2)) user();
  }
  out.push({ role: 'assistant', content: r.int(2) ? r.text() : [{ type: 'text', text: r.text() }] });
  return out;
}

test('ai-sdk-model property: 300 random valid histories pass the schema and round-trip exactly', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const messages = randomHistory(random(seed));
    for (const m of messages) assert.ok(modelMessageSchema.safeParse(m).success, `seed ${seed}: ${JSON.stringify(m)}`);
    const out = Session.fromMessages(messages, FORMAT).toMessages(FORMAT);
    assert.deepStrictEqual(out.messages, messages, `seed ${seed}`);
    assert.deepEqual(out.warnings, [], `seed ${seed}`);
  }
});

/** What a mutation puts in place of a value (new objects each time): other types, and the AI SDK's types and roles. */
const mutants = () => [
  null,
  0,
  -1,
  '',
  'x',
  [],
  {},
  true,
  'tool-result',
  'tool-call',
  'image',
  'assistant',
  'tool',
  'data',
];
/** A copy of `messages` changed one to three times (`mutateSeveral`). */
const mutate = (r, messages) => mutateSeveral(r, messages, mutants());

test('ai-sdk-model property: 400 mutated histories throw nothing but E_INVALID_MESSAGE; what is accepted writes valid messages', () => {
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
    const out = session.toMessages(FORMAT);
    for (const m of out.messages)
      assert.ok(modelMessageSchema.safeParse(m).success, `seed ${seed}: ${JSON.stringify(m)}`);
    session.toMessages();
    session.toMessages({ format: 'anthropic' });
  }
  assert.ok(accepted > 20 && accepted < 400, `${accepted} accepted`);
});

// ----- size and speed ---------------------------------------------------------------------------

test('ai-sdk-model: a 50 MB text, a 50 MB base64 file and 50 MB of bytes go through in linear time', () => {
  const huge = 'a'.repeat(50 * 1024 * 1024);
  const bytes = new Uint8Array(50 * 1024 * 1024);
  bytes.set(PNG_BYTES);
  const messages = [
    {
      role: 'user',
      content: [
        { type: 'file', data: huge, mediaType: 'application/pdf' },
        { type: 'image', image: bytes },
        { type: 'text', text: huge },
      ],
    },
    { role: 'assistant', content: 'ok' },
  ];
  const started = performance.now();
  const out = Session.fromMessages(messages, FORMAT).toMessages(FORMAT);
  const ms = performance.now() - started;
  assert.equal(out.messages[0].content[0].data.length, huge.length);
  assert.equal(out.messages[0].content[1].image.length, bytes.length);
  assert.equal(out.messages[0].content[2].text.length, huge.length);
  assert.ok(ms < 30_000, `${ms} ms`);
});

test('ai-sdk-model: fromMessages + toMessages of a 2,000-message, 10 MB tool loop', () => {
  const messages = toolLoop(500, 1700);
  const bytes = JSON.stringify(messages).length;
  assert.ok(messages.length === 2000 && bytes > 10e6, `${bytes} B`);
  const best = bestRoundTrip(messages, FORMAT);
  // The target is 50 ms on a developer machine; CI machines vary, so this bounds it loosely.
  assert.ok(best < 500, `${best.toFixed(1)} ms`);
});

// ----- types ------------------------------------------------------------------------------------

test('ai-sdk-model: a strict TypeScript consumer takes the ai package’s ModelMessage[] and gives them back', () => {
  typeCheck(
    'formats-ai-sdk-model',
    { ...STRICT, lib: ['es2022', 'dom'], skipLibCheck: true },
    `
    import type { ModelMessage } from 'ai';
    import type { LanguageModelV4Prompt } from '@ai-sdk/provider';
    import { Session, type AiSdkModelMessage, type AiSdkModelSystem } from 'ctxfold';
    declare const history: ModelMessage[];
    declare const prompt: LanguageModelV4Prompt;
    const mine: AiSdkModelMessage[] = [
      { role: 'system', content: 'Rules.', providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } },
      { role: 'user', content: [{ type: 'image', image: new URL('https://x/a.png') }, { type: 'file', data: new Uint8Array(1), mediaType: 'image/png' }] },
      { role: 'assistant', content: [{ type: 'reasoning', text: 't', providerOptions: { anthropic: { signature: 's' } } }, { type: 'tool-call', toolCallId: 'c', toolName: 'ls', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', toolName: 'ls', output: { type: 'json', value: { a: [1] } } }] },
    ];
    const session = Session.fromMessages<'ai-sdk-model'>(history, { format: 'ai-sdk-model', system: 'Be brief.' });
    session.appendMessages<'ai-sdk-model'>(prompt, { format: 'ai-sdk-model' });
    session.appendMessages<'ai-sdk-model'>(mine, { format: 'ai-sdk-model' });
    const out = session.toMessages<'ai-sdk-model'>({ format: 'ai-sdk-model' });
    const back: AiSdkModelMessage[] = out.messages;
    const sys: AiSdkModelSystem | undefined = out.system;
    // @ts-expect-error a tool-result is no user part
    const bad: AiSdkModelMessage = { role: 'user', content: [{ type: 'tool-result', toolCallId: 'x', toolName: 'y', output: { type: 'text', value: '' } }] };
    export { back, sys, bad };
    `,
  );
});
