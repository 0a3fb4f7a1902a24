// `Session.fromMessages` hands the messages it wrote to the first `toLlmMessages` as objects
// (issue 21, "Speed": the 10 MB history no longer crosses from wasm and through JSON.parse
// again). What it hands over must be exactly what the conversion of the lines gives: every
// call here is compared with the same session loaded from its own JSONL, which has no
// adopted messages.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { testsDir } from './support/project.mjs';

const formatsDir = path.join(testsDir, 'fixtures', 'formats');
const NOW = { now: Date.UTC(2026, 11, 6), ids: 'deterministic' };

/** The provider view of `session` and of a fresh load of its bytes (no adopted messages). */
function bothViews(session, options) {
  const reloaded = Session.fromJsonl(session.toJsonl());
  try {
    return [session.toLlmMessages(options), reloaded.toLlmMessages(options)];
  } finally {
    reloaded.free();
  }
}

test('every fixture of every format: the first provider view equals the one of a fresh load', () => {
  let compared = 0;
  for (const format of readdirSync(formatsDir)) {
    for (const file of readdirSync(path.join(formatsDir, format)).filter((f) => f.endsWith('.json'))) {
      const fixture = JSON.parse(readFileSync(path.join(formatsDir, format, file), 'utf8'));
      if (!Array.isArray(fixture.messages)) continue;
      const session = Session.fromMessages(fixture.messages, { format, system: fixture.system, ...NOW });
      const [adopted, fresh] = bothViews(session);
      assert.deepStrictEqual(adopted, fresh, `${format}/${file}`);
      const out = session.toMessages({ format });
      const again = Session.fromJsonl(session.toJsonl());
      assert.deepStrictEqual(out, again.toMessages({ format }), `${format}/${file}: toMessages`);
      again.free();
      session.free();
      compared++;
    }
  }
  assert.ok(compared >= 30, `${compared} fixtures`);
});

const user = (content, more) => ({ role: 'user', content, timestamp: 1, ...more });
const call = (id) => ({ type: 'toolCall', id, name: 'read', arguments: { path: `${id}.ts` } });
const assistant = (content, more) => ({
  role: 'assistant',
  content,
  api: 'openai-completions',
  provider: 'openai',
  model: 'gpt-test',
  usage: { input: 10, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 12 },
  stopReason: 'toolUse',
  timestamp: 2,
  ...more,
});
const result = (id, text, more) => ({
  role: 'toolResult',
  toolCallId: id,
  toolName: 'read',
  content: [{ type: 'text', text }],
  isError: false,
  timestamp: 3,
  ...more,
});

/** `values` with its second slot made a hole. */
function withHole(values) {
  delete values[1];
  return values;
}

test('pi messages the conversion rewrites, and values JSON would change, come out as a fresh load gives them', () => {
  const weird = {
    undef: undefined,
    fn: () => 1,
    nan: Number.NaN,
    inf: -Number.POSITIVE_INFINITY,
    negZero: -0,
    holes: withHole([1, 'hole', undefined, () => 2]),
    date: new Date(0),
    pair: 'smile \ud83d\ude00',
    big: 12345678901234567000,
    small: 5e-324,
    ['__proto__']: { polluted: true },
  };
  let deep = { leaf: true };
  for (let i = 0; i < 90; i++) deep = { deep };
  const messages = [
    user('plain'),
    user([{ type: 'text', text: 'with its own attribution' }], { attribution: 'agent' }),
    user('with odd values', { extra: weird }),
    user('nested 90 levels', { extra: deep }),
    user('a lone \ud800 surrogate'),
    { role: 'developer', content: 'a later instruction', timestamp: 1 },
    assistant([{ type: 'text', text: 'reading' }, call('a'), { ...call('b'), contextOmitted: true }]),
    result('a', 'output a '.repeat(3000), { attribution: 'user' }),
    result('b', 'output b', { contextOmitted: true }),
    assistant([call('c'), call('d')]),
    result('c', 'pruned text', { prunedAt: 5 }),
    result('d', 'kept '.repeat(4000)),
    assistant([{ type: 'thinking', thinking: 'unsigned trailing thought' }], { stopReason: 'aborted' }),
    { role: 'custom', customType: 'interrupted-thinking', content: 'interrupted', display: false, timestamp: 4 },
    { role: 'bashExecution', command: 'ls', output: 'a\nb', exitCode: 0, timestamp: 5 },
    user('last'),
  ];
  const session = Session.fromMessages(messages, { format: 'pi', ...NOW });
  const [adopted, fresh] = bothViews(session);
  assert.deepStrictEqual(adopted, fresh);
  // The cases are real: the conversion changed these messages.
  const roles = fresh.map((m) => m.role);
  assert.equal(roles.filter((r) => r === 'toolResult').length, 3, 'the omitted result is left out');
  assert.equal(fresh[0].attribution, 'user');
  assert.equal(fresh[1].attribution, 'agent');
  // A lone surrogate (JSON.stringify writes it as an escape) reads as U+FFFD, as UTF-8 has it.
  assert.equal(fresh[4].content, 'a lone \ufffd surrogate');
  assert.equal(fresh.find((m) => m.toolCallId === 'a').attribution, 'agent');
  assert.deepStrictEqual(fresh.find((m) => m.role === 'assistant').content.length, 2, 'the omitted call is removed');
  assert.equal(Object.is(fresh[2].extra.negZero, 0), true);
  assert.equal(fresh[2].extra.nan, null);
  assert.deepStrictEqual(fresh[2].extra.holes, [1, null, null, null]);
  assert.equal(fresh[2].extra.date, new Date(0).toJSON());
  assert.ok(Object.hasOwn(fresh[2].extra, '__proto__'));
  // The same again after a later turn and after a prune rewrote lines.
  session.appendMessage(user('next turn'));
  let [a2, f2] = bothViews(session);
  assert.deepStrictEqual(a2, f2);
  const pruned = session.prune({ keepBoundaryId: false, protectTokens: 0, minimumSavings: 0 });
  assert.ok(pruned.prunedCount > 0, 'the prune rewrote lines');
  [a2, f2] = bothViews(session);
  assert.deepStrictEqual(a2, f2);
  session.free();
});

test('what the host does to its messages, or to what it was given, never reaches a later view', () => {
  const messages = [user('first'), assistant([{ type: 'text', text: 'answer' }], { stopReason: 'stop' })];
  const session = Session.fromMessages(messages, { format: 'pi', ...NOW });
  messages[0].content = 'changed by the host';
  messages[1].content[0].text = 'changed too';
  const view = session.toLlmMessages();
  assert.equal(view[0].content, 'first');
  assert.equal(view[1].content[0].text, 'answer');
  view[0].content = 'changed in the view';
  assert.equal(session.toLlmMessages()[0].content, 'first');
  session.free();
});

test('fromMessages writes text of any width: the file holds every message as given', () => {
  // Three bytes per UTF-16 unit (CJK), four per pair (emoji), two (Latin-1), one (ASCII):
  // the encoder's first guess of the file's size is too small and must grow, mid-line too.
  const texts = ['漢字かな'.repeat(30_000), '😀'.repeat(20_000), 'é'.repeat(50_000), 'a'.repeat(10), ''];
  const messages = texts.map((text, i) => user(text, { timestamp: i }));
  const session = Session.fromMessages(messages, { format: 'pi', ...NOW });
  assert.equal(session.warnings.length, 0);
  const text = session.toJsonl();
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, texts.length + 1);
  assert.deepStrictEqual(
    lines.slice(1).map((l) => JSON.parse(l).message.content),
    texts,
  );
  assert.deepStrictEqual(
    session.toLlmMessages().map((m) => m.content),
    texts,
  );
  session.free();
});

test('a lone surrogate in an appended message or a loaded line reaches the provider as U+FFFD', () => {
  const session = Session.create(NOW);
  try {
    session.appendMessage({ role: 'user', content: 'half \ud83d of a pair', timestamp: 1 }, NOW);
    const line = JSON.stringify({
      type: 'message',
      id: 'b1',
      parentId: session.leafId,
      timestamp: '2026-12-06T00:00:00.000Z',
      message: { role: 'user', content: [{ type: 'text', text: 'low \udc00 alone' }], timestamp: 2 },
    });
    const text = `${session.toJsonl()}${line}\n`;
    const loaded = Session.fromJsonl(text);
    try {
      assert.deepEqual(loaded.warnings, []);
      const texts = loaded.toLlmMessages().map((m) => (typeof m.content === 'string' ? m.content : m.content[0].text));
      assert.deepEqual(texts, ['half \ufffd of a pair', 'low \ufffd alone']);
      assert.equal(loaded.toJsonl(), text, 'the file is written back as it was');
    } finally {
      loaded.free();
    }
  } finally {
    session.free();
  }
});
