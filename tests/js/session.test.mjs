// The session API of the built package under Node.js: load, migrate, tree, context, tokens,
// appends, errors with codes, and lossless saves.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import {
  adaptKeepRecentTokens,
  estimateTokens,
  reserveTokens,
  resolveSettings,
  Session,
  shouldCompact,
  thresholdTokens,
  usageContextTokens,
} from 'ctxfold';
import { repoDir } from './support/project.mjs';
import { header } from './support/sessions.mjs';

const conformance = path.join(repoDir, '..', 'shared', 'conformance', 'large-session');

function conformanceFile(name) {
  const file = path.join(conformance, name);
  if (!existsSync(file)) {
    if (process.env.CI === 'true') throw new Error(`conformance data missing: ${file}`);
    return null;
  }
  return readFileSync(file);
}

const line = (obj) => JSON.stringify(obj);
const user = (id, parentId, text) =>
  line({
    type: 'message',
    id,
    parentId,
    timestamp: '2026-01-01T00:00:01.000Z',
    message: { role: 'user', content: text, timestamp: 1 },
  });
const assistant = (id, parentId, text) =>
  line({
    type: 'message',
    id,
    parentId,
    timestamp: '2026-01-01T00:00:02.000Z',
    message: {
      role: 'assistant',
      content: [{ type: 'text', text }],
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120 },
      stopReason: 'stop',
    },
  });

function expectCode(fn, code) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    assert.ok(err.message.length > 10, 'a message that says what to do');
    return true;
  });
}

test('conformance: the v1 fixture migrates to the reference ids, path and estimates', (t) => {
  const bytes = conformanceFile('session.jsonl');
  if (!bytes) return t.skip('conformance data not found');
  const prepare = JSON.parse(conformanceFile('prepare.json'));
  const s = Session.fromJsonl(new Uint8Array(bytes), { ids: 'deterministic' });
  assert.deepEqual(s.version, { current: 3, onDisk: 1 });
  assert.equal(s.size, prepare.session.entries);
  assert.equal(s.leafId, prepare.session.leafId);
  assert.deepEqual(
    s.warnings.map((w) => w.code),
    ['E_MIGRATED'],
  );
  const ids = s.pathTo(s.leafId);
  const index = new Map(s.index().map((e) => [e.id, e]));
  assert.deepEqual(
    ids.map((id) => ({ id, type: index.get(id).type, role: index.get(id).role })),
    prepare.perEntry.map((e) => ({ id: e.id, type: e.type, role: e.role })),
  );
  const estimates = readFileSync(path.join(conformance, 'estimate.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const byLine = new Map(s.index().map((e) => [e.line, e.id]));
  let checked = 0;
  for (const row of estimates) {
    if (row.tokens === null) continue;
    const id = byLine.get(row.line);
    assert.equal(s.entryTokens(id), row.tokens, `line ${row.line}`);
    assert.equal(
      s.entryTokens(id, { excludeEncryptedReasoning: true }),
      row.tokensExcludingEncryptedReasoning,
      `line ${row.line}`,
    );
    checked += 1;
  }
  assert.equal(checked, 914);
  // Migrated output is stable: save → load → save gives the same bytes.
  const once = s.toBytes();
  const again = Session.fromJsonl(once).toBytes();
  assert.deepEqual(Buffer.from(again), Buffer.from(once));
});

test('an unmigrated file is written back byte for byte, odd spacing and unknown fields included', () => {
  const text = [
    header,
    user('a', null, 'hi'),
    '{"type":"mystery","id":"b","parentId":"a","timestamp":"x","payload":{"keep":[1.50,2e3]}}',
    '  {"type":"message","id":"c","parentId":"b","zzz":true,"message":{"role":"user","content":"é\\u00e9"}}  ',
    '',
    assistant('d', 'c', 'ok'),
  ].join('\n');
  const s = Session.fromJsonl(text);
  assert.equal(s.toJsonl(), text, 'no trailing newline added when none was there');
  assert.deepEqual(Buffer.from(s.toBytes()), Buffer.from(text));
  assert.deepEqual(s.warnings, []);
  assert.equal(s.size, 4);
  assert.equal(s.entry('b').payload.keep[0], 1.5);
});

test('tree operations: path, children, branch, reset, labels', () => {
  const s = Session.fromJsonl(
    `${[
      header,
      user('1', null, 'start'),
      assistant('2', '1', 'r'),
      user('3', '2', 'left'),
      user('4', '2', 'right'),
    ].join('\n')}\n`,
  );
  assert.equal(s.leafId, '4');
  assert.deepEqual(s.pathTo('3'), ['1', '2', '3']);
  assert.deepEqual(s.children('2'), ['3', '4']);
  assert.deepEqual(s.children(null), ['1']);
  s.branch('3');
  assert.equal(s.leafId, '3');
  assert.deepEqual(
    s.buildContext().messages.map((m) => m.content[0]?.text ?? m.content),
    ['start', 'r', 'left'],
  );
  expectCode(() => s.branch('nope'), 'E_UNKNOWN_ENTRY');
  expectCode(() => s.pathTo('nope'), 'E_UNKNOWN_ENTRY');
  expectCode(() => s.children('nope'), 'E_UNKNOWN_ENTRY');
  expectCode(() => s.appendLabel('nope', 'x'), 'E_UNKNOWN_ENTRY');
  s.appendLabel('1', 'start here', { now: 1_800_000_000_000 });
  s.appendLabel('2', 'temp');
  s.appendLabel('2', '');
  assert.deepEqual(s.labels(), { 1: 'start here' });
  s.resetLeaf();
  assert.equal(s.leafId, null);
  const root = s.appendMessage({ role: 'user', content: 'new root' });
  assert.equal(s.entry(root).parentId, null);
  assert.deepEqual(s.pathTo(root), [root]);
});

test('appends: ids, timestamps, compaction and branch summaries', () => {
  const s = Session.create({ id: 'new', cwd: '/p', now: 0, ids: 'deterministic' });
  assert.deepEqual(s.header, {
    type: 'session',
    version: 3,
    id: 'new',
    timestamp: '1970-01-01T00:00:00.000Z',
    cwd: '/p',
  });
  const u = s.appendMessage({ role: 'user', content: 'hello' }, { now: 1_000 });
  assert.equal(u, '00000001');
  assert.equal(s.entry(u).timestamp, '1970-01-01T00:00:01.000Z');
  const a = s.appendMessage({ role: 'assistant', content: [{ type: 'text', text: 'hi' }], stopReason: 'stop' });
  const c = s.appendCompaction({ summary: 'S', firstKeptEntryId: a, tokensBefore: 1234 });
  assert.deepEqual(Object.keys(s.entry(c)), [
    'type',
    'id',
    'parentId',
    'timestamp',
    'summary',
    'firstKeptEntryId',
    'tokensBefore',
  ]);
  const ctx = s.buildContext();
  assert.equal(ctx.compactionId, c);
  assert.equal(ctx.firstKeptEntryId, a);
  assert.deepEqual(
    ctx.messages.map((m) => m.role),
    ['compactionSummary', 'assistant'],
  );
  expectCode(() => s.appendCompaction({ summary: 'S', firstKeptEntryId: 'zz', tokensBefore: 1 }), 'E_UNKNOWN_ENTRY');
  const b = s.branchWithSummary(u, 'went elsewhere', { details: { readFiles: ['a'], modifiedFiles: [] } });
  assert.equal(s.entry(b).parentId, u);
  assert.equal(s.entry(b).fromId, u);
  assert.equal(s.leafId, b);
  const r = s.branchWithSummary(null, 'from the top');
  assert.equal(s.entry(r).fromId, 'root');
  assert.equal(s.entry(r).parentId, null);
  // A custom id generator.
  let n = 0;
  const t = Session.create({ ids: () => `custom${++n}` });
  assert.equal(t.appendMessage({ role: 'user', content: 'x' }), 'custom1');
  // The saved file loads back to the same tree.
  const back = Session.fromJsonl(s.toJsonl());
  assert.deepEqual(back.index(), s.index());
  assert.deepEqual(back.warnings, []);
});

test('context, LLM messages and token figures', () => {
  const s = Session.fromJsonl(
    [
      header,
      user('1', null, 'q1'),
      assistant('2', '1', 'a1'),
      line({
        type: 'custom_message',
        id: '3',
        parentId: '2',
        timestamp: '2026-01-01T00:00:03.000Z',
        customType: 'note',
        content: 'fyi',
        display: true,
      }),
      user('4', '3', 'q2 with eight'),
    ].join('\n'),
  );
  const ctx = s.buildContext();
  assert.deepEqual(
    ctx.messages.map((m) => m.role),
    ['user', 'assistant', 'custom', 'user'],
  );
  assert.deepEqual(ctx.entryIds, ['1', '2', '3', '4']);
  assert.equal(ctx.models.default, 'anthropic/claude-sonnet-4-5');
  assert.equal(ctx.thinkingLevel, 'off');
  assert.equal(ctx.hasMessages, true);
  const llm = s.toLlmMessages();
  assert.deepEqual(
    llm.map((m) => m.role),
    ['user', 'assistant', 'developer', 'user'],
  );
  assert.equal(llm[2].content[0].text, 'fyi');
  const tokens = s.contextTokens();
  // Usage of the assistant (120) plus the estimates after it: "fyi" (1) and "q2 with eight" (4).
  assert.equal(tokens.tokens, 125);
  assert.equal(tokens.usageTokens, 120);
  assert.equal(tokens.lastUsageEntryId, '2');
  assert.equal(tokens.usageIsCurrent, true);
  assert.equal(tokens.estimatedTokens, 1 + 1 + 1 + 4);
  assert.deepEqual(s.buildContext({ leafId: null }).messages, []);
  expectCode(() => s.buildContext({ leafId: 5 }), 'E_INVALID_ARGUMENT');
  const transcript = s.buildContext({ transcript: true });
  assert.equal(transcript.cacheMissExplainedAt.length, 4);
});

test('contextTokens: a usage reported before the latest compaction is not the current one', () => {
  // spec: compaction §8.2 step 9. The compaction keeps everything from entry 1, so the kept
  // reply 2 is the last usage in the context, but it measured the history before the summary.
  const s = Session.fromJsonl(
    [
      header,
      user('1', null, 'q1'),
      assistant('2', '1', 'a1'),
      user('3', '2', 'q2'),
      line({
        type: 'compaction',
        id: 'c',
        parentId: '3',
        timestamp: '2026-01-01T00:00:04.000Z',
        summary: 'earlier work',
        firstKeptEntryId: '1',
        tokensBefore: 120,
      }),
      user('4', 'c', 'q3'),
    ].join('\n'),
  );
  assert.equal(s.contextTokens({ leafId: '3' }).usageIsCurrent, true);
  const before = s.contextTokens();
  assert.equal(before.lastUsageEntryId, '2');
  assert.equal(before.usageIsCurrent, false);
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'text', text: 'a3' }],
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    usage: { input: 50, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 60 },
    stopReason: 'stop',
    timestamp: 5,
  });
  const after = s.contextTokens();
  assert.equal(after.usageTokens, 60);
  assert.equal(after.usageIsCurrent, true);
  // Without any usage on the path there is nothing current.
  assert.equal(s.contextTokens({ leafId: '1' }).usageIsCurrent, false);
});

test('LLM messages turn after turn: what crosses again equals a fresh conversion', () => {
  const s = Session.fromJsonl(header);
  const fresh = () => Session.fromJsonl(s.toJsonl()).toLlmMessages();
  for (let turn = 0; turn < 6; turn++) {
    // A member named `__proto__` (JSON allows it) stays a member of every copy.
    s.appendMessage({ role: 'user', content: `q${turn}`, timestamp: turn, ['__proto__']: { turn } });
    s.appendMessage({
      role: 'assistant',
      content: [{ type: 'toolCall', id: `c${turn}`, name: 'read', arguments: { path: `f${turn}` } }],
      stopReason: 'toolUse',
      timestamp: turn,
    });
    s.appendMessage({
      role: 'toolResult',
      toolCallId: `c${turn}`,
      toolName: 'read',
      content: [{ type: 'text', text: `contents ${turn} `.repeat(2_000) }],
      timestamp: turn,
    });
    const llm = s.toLlmMessages();
    assert.deepEqual(llm, fresh(), `turn ${turn}`);
    assert.ok(llm.every((m) => Object.getPrototypeOf(m) === Object.prototype));
    assert.deepEqual(Object.getOwnPropertyDescriptor(llm.at(-3), '__proto__')?.value, { turn });
    // The host owns what it got: changing it changes nothing the next call returns.
    llm[0].content = 'changed by the host';
    llm.length = 1;
    if (turn === 3) {
      const r = s.prune({ now: 5, protectTokens: 1_000, minimumSavings: 0 });
      assert.ok(r.prunedCount > 0);
    }
  }
  assert.deepEqual(s.toLlmMessages(), fresh(), 'after a prune');
  assert.match(JSON.stringify(s.toLlmMessages()), /Output truncated/);
});

test('token accounting functions', () => {
  assert.equal(
    estimateTokens({
      role: 'user',
      content: [
        { type: 'text', text: 'hello' },
        { type: 'image', data: 'x', mimeType: 'image/png' },
      ],
    }),
    2 + 1200,
  );
  assert.equal(thresholdTokens(100_000, { reserveTokens: 10_000 }), 85_000);
  assert.equal(thresholdTokens(16_385), 13_928);
  assert.equal(thresholdTokens(16_385, { reserveTokens: 16_384 }), 1);
  assert.equal(reserveTokens(200_000), 30_000);
  assert.equal(shouldCompact(85_001, 100_000, { reserveTokens: 10_000 }), true);
  assert.equal(shouldCompact(85_000, 100_000, { reserveTokens: 10_000 }), false);
  assert.equal(usageContextTokens({ input: 1000, output: 500, cacheRead: 200, cacheWrite: 100 }), 1800);
  assert.deepEqual(adaptKeepRecentTokens(20_000, 200, 100), { keepRecentTokens: 10_000, ratio: 2 });
  assert.equal(resolveSettings().keepRecentTokens, 20_000);
  assert.equal(resolveSettings().reserveTokens, null);
  expectCode(() => resolveSettings({ keepRecentTokens: -5 }), 'E_SETTINGS');
  assert.throws(() => thresholdTokens(100, { thresholdPct: 5 }), /thresholdPct/);
});

test('bad input: each case has its documented result', () => {
  // Invalid JSON line: kept and reported with its line number.
  const text = `${[header, user('1', null, 'a'), '{"type":"message",', user('2', '1', 'b')].join('\n')}\n`;
  const s = Session.fromJsonl(text);
  assert.deepEqual(
    s.warnings.map((w) => [w.code, w.line]),
    [['E_JSONL_LINE', 3]],
  );
  assert.equal(s.size, 2);
  assert.equal(s.toJsonl(), text, 'the malformed line survives the save');
  // Not a session.
  expectCode(() => Session.fromJsonl(user('1', null, 'a')), 'E_NOT_A_SESSION');
  expectCode(() => Session.fromJsonl(''), 'E_NOT_A_SESSION');
  expectCode(() => Session.fromJsonl('not json\n'), 'E_NOT_A_SESSION');
  // Unknown parent, cycle, duplicate ids.
  const odd = Session.fromJsonl(
    [header, user('1', 'ghost', 'orphan'), user('2', '3', 'x'), user('3', '2', 'y'), user('1', null, 'dup')].join('\n'),
  );
  assert.deepEqual(odd.warnings.map((w) => w.code).sort(), ['E_DUPLICATE_ID', 'E_PARENT_CYCLE', 'E_UNKNOWN_PARENT']);
  assert.equal(odd.buildContext({ leafId: '2' }).messages.length, 2, 'the cycle is cut, not followed forever');
  // Too new.
  expectCode(() => Session.fromJsonl('{"type":"session","version":99,"id":"x"}\n'), 'E_VERSION_TOO_NEW');
  // Invalid UTF-8: reported, read with U+FFFD, bytes kept.
  const bytes = Buffer.concat([
    Buffer.from(`${header}\n{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"bad `),
    Buffer.from([0xff, 0xfe]),
    Buffer.from('"}}\n'),
  ]);
  const u = Session.fromJsonl(new Uint8Array(bytes));
  assert.deepEqual(
    u.warnings.map((w) => [w.code, w.line]),
    [['E_INVALID_UTF8', 2]],
  );
  assert.match(u.buildContext().messages[0].content, /bad \uFFFD/);
  assert.deepEqual(Buffer.from(u.toBytes()), bytes);
  assert.equal(u.toJsonl(), bytes.toString('latin1').replace('\xff\xfe', '\uFFFD\uFFFD'));
  // Wrong argument types.
  expectCode(() => Session.fromJsonl(42), 'E_INVALID_ARGUMENT');
  expectCode(() => s.appendMessage({ content: 'no role' }), 'E_INVALID_MESSAGE');
  expectCode(() => s.append('message', { message: { role: 5 } }), 'E_INVALID_MESSAGE');
  expectCode(() => s.appendMessage({ role: 'user', content: 'x' }, { now: NaN }), 'E_INVALID_ARGUMENT');
  expectCode(() => new Session({}), 'E_INVALID_ARGUMENT');
});

test('bad input: a 50 MB single line loads without hanging', () => {
  const big = 'x'.repeat(50 * 1024 * 1024);
  const text = `${header}\n{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"${big}"}}\n`;
  const started = performance.now();
  const s = Session.fromJsonl(text);
  assert.equal(s.size, 1);
  assert.equal(s.entryTokens('1'), (big.length + 3) >> 2);
  const truncated = Session.fromJsonl(text.slice(0, -3));
  assert.deepEqual(
    truncated.warnings.map((w) => w.code),
    ['E_JSONL_LINE'],
  );
  assert.ok(performance.now() - started < 20_000);
});
