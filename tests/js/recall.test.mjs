// Issue 38 through the built package: the `<anchors>` block a compaction writes, the loss
// report of `compact()`, and `session.searchHistory` over every entry of every branch.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runContextTool, Session } from 'ctxfold';
import { header, line, reply } from './support/sessions.mjs';

const settings = { keepRecentTokens: 200, reserveTokens: 4000 };

/** A session whose early turns hold exact identifiers, then turns of plain words. */
function sessionText() {
  const lines = [header];
  lines.push(line('u0', null, { role: 'user', content: 'Deploy to port 8443; the bug is #4512 in src/deploy/run.rs' }));
  lines.push(reply('a0', 'u0', 'Commit 3f9a2c1e broke it with E_STALE_PLAN.'));
  // An abandoned branch from u0.
  lines.push(reply('b0', 'u0', 'On this branch the culprit was okapi77.'));
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

test('compact() appends the anchors block and reports what it kept and lost', async () => {
  const s = Session.fromJsonl(sessionText());
  const result = await s.compact({ settings, summarize: async () => 'Work went on.' });
  const summary = result.compactionEntry.summary;
  assert.match(summary, /<anchors>\n/);
  for (const id of ['8443', '#4512', 'src/deploy/run.rs', '3f9a2c1e', 'E_STALE_PLAN']) {
    assert.ok(summary.includes(`: ${id}\n`), `${id} in ${summary}`);
    assert.ok(result.report.anchored.includes(id), `${id} anchored`);
    assert.ok(!result.report.lost.includes(id), `${id} not lost`);
  }
  assert.ok(Array.isArray(result.compactionEntry.details.anchors));

  // Without the block the same identifiers are reported lost.
  const t = Session.fromJsonl(sessionText());
  const bare = await t.compact({ settings: { ...settings, anchorTokens: 0 }, summarize: async () => 'Work went on.' });
  assert.ok(!bare.compactionEntry.summary.includes('<anchors>'));
  assert.deepEqual(bare.report.anchored, []);
  assert.deepEqual(bare.report.lost, []);

  // The plan/commit cycle: lossReport of the committed plan.
  const u = Session.fromJsonl(sessionText());
  const plan = u.planCompaction({ ...settings, anchorTokens: 72 });
  for (const r of plan.pending) plan.answer(r.id, 'Work went on.');
  for (const r of plan.pending) plan.answer(r.id, 'Work went on.');
  u.commitCompaction(plan);
  const loss = u.lossReport(plan);
  assert.ok(loss.anchored.length > 0 && loss.lost.length > 0, JSON.stringify(loss));

  // A handoff plan's loss report reads the plan its commit harvested: before the commit
  // there is none to read in a new session (issue 42: the plan leaves the harvest to it).
  const h = Session.fromJsonl(sessionText());
  const handoff = h.planCompaction({ ...settings, strategy: 'handoff' });
  assert.throws(
    () => Session.fromJsonl(`${header}\n`).lossReport(handoff),
    (e) => e.code === 'E_INVALID_ARGUMENT' && /commit it first/.test(e.message),
  );
});

test('searchHistory finds compacted and abandoned entries, exact identifiers first', async () => {
  const s = Session.fromJsonl(sessionText());
  await s.compact({ settings, summarize: async () => 'Work went on.' });
  const hits = s.searchHistory('3f9a2c1e');
  assert.equal(hits[0].entryId, 'a0');
  assert.equal(hits[0].exact, true);
  assert.equal(hits[0].role, 'assistant');
  assert.match(hits[0].snippet, /3f9a2c1e/);
  assert.equal(typeof hits[0].timestamp, 'number');
  assert.equal(s.searchHistory('okapi77')[0].entryId, 'b0');
  const users = s.searchHistory('plain work', { roles: ['user'], limit: 3 });
  assert.equal(users.length, 3);
  assert.ok(users.every((h) => h.role === 'user' && !h.exact));
  // Kept current: an appended message is found by the next search.
  s.appendMessage({ role: 'user', content: 'now zebra42 shows up' });
  assert.equal(s.searchHistory('zebra42')[0].entryId, s.leafId);
  assert.deepEqual(s.searchHistory('plain', { since: Date.parse('2030-01-01') }), []);
  for (const [q, o] of [
    ['', undefined],
    ['x', { limit: 0 }],
    ['x', { roles: 'user' }],
    ['x', { other: 1 }],
  ]) {
    assert.throws(
      () => s.searchHistory(q, o),
      (e) => e.code === 'E_INVALID_ARGUMENT',
    );
  }
  s.free();
});

// ----- saved artifacts (issue 38 item 2): shake's recovery text -----

/** Tool turns whose big outputs each hold one planted identifier (`wombat_K`), then a reply. */
function shakeable() {
  const s = Session.create({ id: 's', cwd: '/w', now: 1000 });
  s.appendMessage({ role: 'user', content: 'look at the files', timestamp: 1000 }, { now: 1000 });
  for (let i = 0; i < 6; i++) {
    const id = `call-${i}`;
    s.appendMessage(
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id, name: 'read', arguments: { path: `/w/f${i}.ts` } }],
        usage: { input: 0, output: 10, cacheRead: 0, cacheWrite: 0 },
        stopReason: 'toolUse',
        timestamp: 1001 + i,
      },
      { now: 1001 + i },
    );
    s.appendMessage(
      {
        role: 'toolResult',
        toolCallId: id,
        toolName: 'read',
        content: [{ type: 'text', text: `wombat_${i} ${'data '.repeat(1600)}` }],
        isError: false,
        timestamp: 1001 + i,
      },
      { now: 1001 + i },
    );
  }
  s.appendMessage({ role: 'assistant', content: [{ type: 'text', text: 'done' }], stopReason: 'stop' }, { now: 2000 });
  return s;
}

test('shake(): what saveArtifact stored is searched (searchHistory, recall_history), and again after addArtifacts', async () => {
  const s = shakeable();
  const saved = [];
  const r = await s.shake({ preset: 'aggressive', now: 5555, saveArtifact: (a) => saved.push(a) && 'A7' });
  assert.ok(r.toolResultsDropped > 0);
  const gone = [0, 1, 2, 3, 4, 5].map((i) => `wombat_${i}`).filter((w) => !s.toJsonl().includes(w));
  assert.ok(gone.length > 0, 'the shake elided some planted identifiers');
  for (const w of gone) {
    assert.ok(saved[0].text.includes(w));
    const hits = s.searchHistory(w);
    assert.equal(hits.length, 1, w);
    assert.deepEqual([hits[0].artifact, hits[0].entryId, hits[0].role], ['A7', null, 'artifact']);
    assert.ok(hits[0].snippet.includes(w));
    assert.match(
      runContextTool(s, 'recall_history', { query: w }),
      new RegExp(`\\[artifact A7 · unknown time\\] .*${w}`),
    );
  }
  // A shake whose host returned no id: the artifact is named after the plan.
  const t = shakeable();
  await t.shake({ preset: 'aggressive', saveArtifact: () => {} });
  assert.match(t.searchHistory(gone[0])[0].artifact, /^shake-.+\.md$/);
  // Reopened: not found until the host hands the artifact back.
  const reopened = Session.fromJsonl(s.toJsonl());
  assert.deepEqual(reopened.searchHistory(gone[0]), []);
  reopened.addArtifacts([{ name: 'A7', kind: 'shake', text: saved[0].text }]);
  assert.equal(reopened.searchHistory(gone[0])[0].artifact, 'A7');
});
