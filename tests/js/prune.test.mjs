// Tool-output pruning from JavaScript (spec: compaction §6): the threshold pass, the stale
// pass, dry runs, option errors, supersede keys, and the three passes of the conformance data
// (prune.json) on the large session.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { readToolSupersedeKey, runContextTool, Session } from 'ctxfold';
import { repoDir } from './support/project.mjs';
import { header } from './support/sessions.mjs';

const conformance = path.join(repoDir, '..', 'shared', 'conformance', 'large-session');

/** Turns that read files (big outputs), one re-read of a.ts and one useless `ls`. */
function session() {
  const lines = [header];
  let parent = null;
  let n = 0;
  const push = (message) => {
    const id = `e${++n}`;
    lines.push(
      JSON.stringify({ type: 'message', id, parentId: parent, timestamp: '2026-01-01T00:00:00.000Z', message }),
    );
    parent = id;
    return id;
  };
  const ids = {};
  const files = ['a.ts', 'b.ts', 'c.ts', 'a.ts', 'd.ts'];
  files.forEach((file, i) => {
    push({ role: 'user', content: `look at ${file}`, timestamp: 1 });
    push({
      role: 'assistant',
      content: [{ type: 'toolCall', id: `c${i}`, name: 'read', arguments: { path: file } }],
      stopReason: 'toolUse',
      timestamp: 2,
    });
    ids[`read${i}`] = push({
      role: 'toolResult',
      toolCallId: `c${i}`,
      toolName: 'read',
      content: [{ type: 'text', text: `${file} line\n`.repeat(2_000) }],
      isError: false,
      timestamp: 3,
    });
  });
  push({
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'ls', name: 'bash', arguments: { command: 'ls' } }],
    stopReason: 'toolUse',
    timestamp: 4,
  });
  ids.useless = push({
    role: 'toolResult',
    toolCallId: 'ls',
    toolName: 'bash',
    content: [{ type: 'text', text: 'nothing new here '.repeat(50) }],
    isError: false,
    useless: true,
    timestamp: 5,
  });
  push({ role: 'assistant', content: [{ type: 'text', text: 'done' }], stopReason: 'stop', timestamp: 1_000 });
  return { text: `${lines.join('\n')}\n`, ids };
}

test('the stale pass prunes superseded reads and useless results; only those lines change', () => {
  const { text, ids } = session();
  const s = Session.fromJsonl(text);
  // Idle: the last message is older than idleFlushMs, so depth does not matter.
  const dry = s.pruneStale({ now: 10_000_000, idleFlushMs: 60_000, dryRun: true });
  assert.equal(s.toJsonl(), text, 'a dry run writes nothing');
  const report = s.pruneStale({ now: 10_000_000, idleFlushMs: 60_000 });
  assert.deepEqual(report, dry);
  assert.deepEqual(
    report.pruned.map((p) => [p.id, p.reason, p.notice]),
    [
      [ids.read0, 'superseded', '[Superseded by a newer read of this file]'],
      [ids.useless, 'useless', '[Uneventful result elided]'],
    ],
  );
  assert.equal(report.prunedCount, 2);
  // `pruned` is parsed when first read; it is an ordinary member to copies and JSON.
  assert.deepEqual(Object.keys(report), ['prunedCount', 'tokensSaved', 'pruned']);
  assert.equal(report.pruned, report.pruned, 'parsed once');
  assert.deepEqual(JSON.parse(JSON.stringify(report)), { ...report });
  assert.equal(structuredClone(report).pruned.length, 2);
  assert.equal(
    report.tokensSaved,
    report.pruned.reduce((a, p) => a + p.savings, 0),
  );
  const before = text.split('\n');
  const after = s.toJsonl().split('\n');
  const changed = after.map((l, i) => (l === before[i] ? null : JSON.parse(l).id)).filter(Boolean);
  assert.deepEqual(changed, [ids.read0, ids.useless]);
  const entry = s.entry(ids.read0);
  assert.equal(entry.message.prunedAt, 10_000_000);
  assert.deepEqual(entry.message.content, [{ type: 'text', text: '[Superseded by a newer read of this file]' }]);
  // Not idle and the results are deep: nothing more to do.
  assert.equal(s.pruneStale({ now: 10_000_000 }).prunedCount, 0);
});

test('the threshold pass protects the newest outputs and needs the minimum savings', () => {
  const { text, ids } = session();
  const s = Session.fromJsonl(text);
  assert.equal(s.prune({ now: 5 }).prunedCount, 0, 'under 40,000 tokens of tool output nothing is pruned');
  assert.equal(
    s.prune({ now: 5, protectTokens: 5_000, minimumSavings: 100_000 }).prunedCount,
    0,
    'savings below the minimum',
  );
  assert.equal(s.toJsonl(), text);
  // Converted once before the prune: what the session keeps of that conversion must not
  // outlive the rewritten lines.
  assert.doesNotMatch(JSON.stringify(s.toLlmMessages()), /Output truncated/);
  const r = s.prune({ now: 5, protectTokens: 5_000, minimumSavings: 1_000 });
  assert.ok(r.prunedCount >= 2, JSON.stringify(r));
  assert.ok(
    r.pruned.every((p) => p.id !== ids.read4),
    'the newest read is protected',
  );
  const age = r.pruned.find((p) => p.reason === 'age');
  assert.equal(age.notice, `[Output truncated - ${age.tokensBefore} tokens]`);
  // The LLM sees the notices.
  const texts = JSON.stringify(s.toLlmMessages());
  assert.match(texts, /Output truncated - \d+ tokens/);
  assert.equal(texts, JSON.stringify(Session.fromJsonl(s.toJsonl()).toLlmMessages()));
});

test('bad options name the field; supersede keys follow spec §6.2', () => {
  const s = Session.fromJsonl(session().text);
  assert.throws(
    () => s.prune({ protectTokens: -1 }),
    (e) => e.code === 'E_SETTINGS' && /protectTokens/.test(e.message),
  );
  assert.throws(
    () => s.prune({ protectTokns: 1 }),
    (e) => e.code === 'E_SETTINGS' && /protectTokns/.test(e.message),
  );
  assert.equal(readToolSupersedeKey('read', { path: 'src/foo.ts' }), 'src/foo.ts');
  assert.equal(readToolSupersedeKey('read', { path: 'src/foo.ts:50-200' }), 'src/foo.ts\u000050-200');
  assert.equal(readToolSupersedeKey('read', { path: 'src/foo.ts:2-4:raw' }), 'src/foo.ts\u00012-4:raw');
  assert.equal(readToolSupersedeKey('read', { path: 'skill://react' }), undefined);
  assert.equal(readToolSupersedeKey('bash', { path: 'x' }), undefined);
});

test('conformance: the three passes of prune.json on the large session', (t) => {
  const file = path.join(conformance, 'session.jsonl');
  if (!existsSync(file)) {
    if (process.env.CI === 'true') throw new Error(`conformance data missing: ${file}`);
    t.skip('conformance data not found (../shared/conformance)');
    return;
  }
  const want = JSON.parse(readFileSync(path.join(conformance, 'prune.json'), 'utf8'));
  const bytes = readFileSync(file);
  for (const [name, pass] of Object.entries(want.passes)) {
    const s = Session.fromJsonl(bytes, { ids: 'deterministic' });
    const { supersedeKey, ...config } = pass.config;
    const options = { now: 1_800_000_000_000, ...config };
    const report = supersedeKey ? s.pruneStale(options) : s.prune(options);
    assert.equal(report.prunedCount, pass.result.prunedCount, name);
    assert.equal(report.tokensSaved, pass.result.tokensSaved, name);
    assert.deepEqual(
      report.pruned.map((p) => [p.id, p.toolName, p.toolCallId, p.tokensBefore, p.notice]),
      pass.pruned.map((p) => [p.id, p.toolName, p.toolCallId, p.tokensBefore, p.notice]),
      name,
    );
  }
});

// ----- pruned originals kept through `saveArtifact` (issue 38 item 2) -----

/** `session()` with an identifier only the first read's output holds. */
function plantedSession() {
  const { text, ids } = session();
  const lines = text
    .trimEnd()
    .split('\n')
    .map((l) => {
      const e = JSON.parse(l);
      if (e.id !== ids.read0) return l;
      e.message.content[0].text = `okapi_4711 marks this output\n${e.message.content[0].text}`;
      return JSON.stringify(e);
    });
  return { text: `${lines.join('\n')}\n`, ids };
}

test('prune with saveArtifact stores each original before pruning; search finds them', async () => {
  const { text, ids } = plantedSession();
  const options = { now: 5, protectTokens: 5_000, minimumSavings: 1_000 };
  const plain = Session.fromJsonl(text);
  const expected = plain.prune(options);
  const s = Session.fromJsonl(text);
  assert.deepEqual(
    s.searchHistory('okapi_4711').map((h) => h.entryId),
    [ids.read0],
  );
  const stored = [];
  const pending = s.prune({
    ...options,
    saveArtifact: async (a) => {
      stored.push(a);
      assert.equal(s.toJsonl(), text, 'nothing is pruned before every original is stored');
      return `store/${stored.length}`;
    },
  });
  assert.ok(pending instanceof Promise);
  const report = await pending;
  assert.deepEqual({ ...report }, { ...expected });
  assert.equal(s.toJsonl(), plain.toJsonl(), 'the same file as a prune without saveArtifact');
  const original = (id) => JSON.parse(text.split('\n').find((l) => l.includes(`"id":"${id}"`))).message.content[0].text;
  assert.deepEqual(
    stored.map((a) => [a.name, a.kind, a.entryId, a.toolName]),
    expected.pruned.map((p) => [`pruned-${p.id}.txt`, 'prune', p.id, p.toolName]),
  );
  for (const a of stored) assert.equal(a.text, original(a.entryId));
  assert.ok(stored[0].toolCallId.length > 0);

  // The planted identifier is now only in an artifact: searchHistory and recall_history find it there.
  assert.ok(!s.toJsonl().includes('okapi_4711'));
  const at = stored.findIndex((a) => a.entryId === ids.read0);
  const hits = s.searchHistory('okapi_4711');
  assert.equal(hits.length, 1);
  assert.equal(hits[0].artifact, `store/${at + 1}`);
  assert.equal(hits[0].entryId, ids.read0);
  assert.equal(hits[0].role, 'artifact');
  assert.match(hits[0].snippet, /okapi_4711 marks this output/);
  const answer = runContextTool(s, 'recall_history', { query: 'okapi_4711' });
  assert.match(answer, new RegExp(`\\[artifact store/${at + 1} · entry ${ids.read0} · [^\\]]+\\] okapi_4711 marks`));

  // Reopened, the index starts without them; the host hands them back.
  const reopened = Session.fromJsonl(s.toJsonl());
  assert.deepEqual(reopened.searchHistory('okapi_4711'), []);
  reopened.addArtifacts(stored.map((a, i) => ({ name: `store/${i + 1}`, text: a.text, entryId: a.entryId })));
  assert.deepEqual(reopened.searchHistory('okapi_4711'), hits);
  assert.match(runContextTool(reopened, 'recall_history', { query: 'okapi_4711' }), /\[artifact store\//);
  for (const bad of [{}, [{ name: 'x' }], [{ name: '', text: 't' }], [{ name: 'x', text: 't', entryId: 4 }]]) {
    assert.throws(() => reopened.addArtifacts(bad), { code: 'E_INVALID_ARGUMENT' });
  }
  assert.deepEqual(reopened.searchHistory('okapi_4711'), hits, 'a bad list adds nothing');
});

test('pruneStale with saveArtifact; a dry run stores nothing', async () => {
  const { text, ids } = plantedSession();
  const s = Session.fromJsonl(text);
  const options = { now: 10_000_000, idleFlushMs: 60_000 };
  const stored = [];
  const dry = await s.pruneStale({ ...options, dryRun: true, saveArtifact: (a) => stored.push(a) });
  assert.deepEqual(stored, []);
  assert.equal(s.toJsonl(), text);
  const report = await s.pruneStale({ ...options, saveArtifact: (a) => void stored.push(a) });
  assert.deepEqual({ ...report }, { ...dry });
  assert.deepEqual(
    stored.map((a) => a.entryId),
    [ids.read0, ids.useless],
  );
  const hits = s.searchHistory('okapi_4711');
  assert.deepEqual(
    hits.map((h) => [h.artifact, h.entryId]),
    [[`pruned-${ids.read0}.txt`, ids.read0]],
  );
});

test('a failing saveArtifact rejects and leaves the session byte-identical', async () => {
  const { text } = plantedSession();
  const options = { now: 5, protectTokens: 5_000, minimumSavings: 1_000 };
  for (const fail of [
    () => {
      throw new Error('disk full');
    },
    async () => Promise.reject(new Error('disk full')),
  ]) {
    const s = Session.fromJsonl(text);
    let calls = 0;
    await assert.rejects(
      s.prune({ ...options, saveArtifact: (a) => (++calls === 2 ? fail(a) : 'ok') }),
      (err) =>
        err.code === 'E_SUMMARIZER' && /prune could not save/.test(err.message) && err.cause.message === 'disk full',
    );
    assert.equal(calls, 2);
    assert.equal(s.toJsonl(), text);
    assert.deepEqual(
      s.searchHistory('okapi_4711').map((h) => h.artifact),
      [undefined],
      'nothing added to the index',
    );
  }
  const s = Session.fromJsonl(text);
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(s.prune({ ...options, signal: controller.signal, saveArtifact: () => 'x' }), {
    code: 'E_ABORTED',
  });
  await assert.rejects(async () => s.prune({ ...options, saveArtifact: 'x' }), { code: 'E_INVALID_ARGUMENT' });
  assert.equal(s.toJsonl(), text);
});
