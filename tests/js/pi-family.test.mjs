// pi-family sessions (issue 40 items 4–5) through the built package: the contexts and LLM
// messages of every leaf of ../shared/conformance/pi-1.6 equal pi 1.6's own, labels show on
// tree rows, and the session_before_compact hook gets the branch's entries.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { repoDir } from './support/project.mjs';

const conformance = path.join(repoDir, '..', 'shared', 'conformance', 'pi-1.6');

/** Every evaluated leaf: its session text and pi's outputs. Fails when the data is missing. */
function leaves() {
  assert.ok(existsSync(conformance), `conformance data missing at ${conformance}`);
  const read = (rel) => readFileSync(path.join(conformance, rel), 'utf8');
  const index = JSON.parse(read('outputs/index.json'));
  const cases = JSON.parse(read('sessions/cases.json'));
  const out = [];
  for (const [name, files] of Object.entries(index.outputs)) {
    const text = read(cases[name].file);
    for (const f of files) out.push({ name: `${name}.${f}`, text, want: JSON.parse(read(f)) });
  }
  assert.equal(out.length, 11);
  return out;
}

test('pi 1.6: contexts and LLM messages of every leaf are pi’s own', () => {
  for (const { name, text, want } of leaves()) {
    const s = Session.fromJsonl(text);
    assert.equal(s.toJsonl(), text, `${name}: saved byte for byte`);
    const ctx = s.buildContext({ leafId: want.leafId });
    assert.deepEqual(ctx.messages, want.sessionContext.messages, `${name}: sessionContext`);
    assert.equal(ctx.thinkingLevel, want.sessionContext.thinkingLevel, name);
    assert.deepEqual(s.toLlmMessages({ leafId: want.leafId }), want.llmMessages, `${name}: llmMessages`);
  }
});

test('pi 1.6: the package counts tokens and prepares compactions as pi does on every leaf', () => {
  for (const { name, text, want } of leaves()) {
    const s = Session.fromJsonl(text);
    const leafId = want.leafId;
    const t = s.contextTokens({ leafId });
    const p = want.projectedTokens;
    assert.deepEqual(
      [t.tokens, t.usageTokens, t.trailingTokens, t.tokensBefore],
      [p.tokens, p.usageTokens, p.trailingTokens, p.tokens],
      `${name}: contextTokens = projectedTokens`,
    );
    for (const keep of ['2000', '20000']) {
      const expected = want.prepareCompaction[keep];
      const settings = { keepRecentTokens: Number(keep) };
      if (expected === null) {
        assert.throws(
          () => s.planCompaction(settings, { leafId }),
          (e) => e.code === 'E_NOTHING_TO_COMPACT' || e.code === 'E_ALREADY_COMPACTED',
          `${name} ${keep}: pi prepares nothing`,
        );
        continue;
      }
      for (const [how, prep] of [
        ['prepareCompaction', s.prepareCompaction(settings, { leafId })],
        ['planCompaction', s.planCompaction(settings, { leafId }).preparation],
      ]) {
        const got = {
          firstKeptEntryId: prep.firstKeptEntryId,
          isSplitTurn: prep.isSplitTurn,
          tokensBefore: prep.tokensBefore,
          previousSummary: prep.previousSummary ?? null,
          fileOps: prep.fileOps,
        };
        const wanted = {
          firstKeptEntryId: expected.firstKeptEntryId,
          isSplitTurn: expected.isSplitTurn,
          tokensBefore: expected.tokensBefore,
          previousSummary: expected.previousSummary ?? null,
          fileOps: expected.fileOps,
        };
        assert.deepEqual(got, wanted, `${name} ${keep}: ${how}`);
      }
    }
  }
});

test('tree rows carry the entry’s current label', () => {
  const { text } = leaves()[0];
  const rows = Session.fromJsonl(text).index();
  const labelled = rows.filter((r) => r.label !== undefined).map((r) => [r.id, r.label]);
  // 01-context-edit labels the first user message.
  assert.deepEqual(labelled, [['7130ed3c', 'verbose-flag']]);
});

test('session_before_compact gets branchEntries: the branch, root first', async () => {
  const line = (id, parentId, message) =>
    JSON.stringify({ type: 'message', id, parentId, timestamp: '2026-01-01T00:00:01.000Z', message });
  const lines = [
    JSON.stringify({ type: 'session', version: 3, id: 's', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/w' }),
  ];
  let parent = null;
  for (let i = 0; i < 5; i++) {
    lines.push(line(`u${i}`, parent, { role: 'user', content: `question ${i} `.repeat(40), timestamp: 1 }));
    lines.push(
      line(`a${i}`, `u${i}`, {
        role: 'assistant',
        content: [{ type: 'text', text: `answer ${i} `.repeat(40) }],
        provider: 'anthropic',
        model: 'm',
        usage: { input: 100, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 110 },
        stopReason: 'stop',
      }),
    );
    parent = `a${i}`;
  }
  // A sibling branch off u1 that the compaction of the leaf's branch must not see.
  lines.push(line('x1', 'u1', { role: 'user', content: 'elsewhere', timestamp: 1 }));
  lines.push(
    JSON.stringify({
      type: 'label',
      id: 'l1',
      parentId: 'a4',
      timestamp: '2026-01-01T00:00:02.000Z',
      targetId: 'u0',
      label: 'start',
    }),
  );
  const text = `${lines.join('\n')}\n`;
  const s = Session.fromJsonl(text);
  let seen;
  await assert.rejects(
    s.compact({
      settings: { keepRecentTokens: 10 },
      summarize: async () => 'x',
      hooks: {
        session_before_compact: (e) => {
          seen = e.branchEntries;
          return { cancel: true };
        },
      },
    }),
    (err) => err.code === 'E_CANCELLED',
  );
  assert.deepEqual(
    seen.map((e) => e.id),
    s.pathTo(s.leafId),
  );
  assert.equal(seen[0].id, 'u0');
  assert.ok(!seen.some((e) => e.id === 'x1'));
  assert.equal(s.toJsonl(), text);
});

test('createBranchedSession: a new session holding one path, labels re-created', () => {
  const { text } = leaves().find((l) => l.name.startsWith('05-branches-usage'));
  const s = Session.fromJsonl(text);
  const b = s.createBranchedSession('3193338b', {
    id: 'branched',
    now: Date.UTC(2026, 1, 1),
    parentSession: '/s/src.jsonl',
  });
  assert.deepEqual(
    b.entries().map((e) => e.id),
    s.pathTo('3193338b'),
  );
  const header = JSON.parse(b.toJsonl().split('\n')[0]);
  assert.equal(header.id, 'branched');
  assert.equal(header.parentSession, '/s/src.jsonl');
  assert.equal(header.cwd, '/repo/todo-app');
  assert.equal(header.timestamp, '2026-02-01T00:00:00.000Z');
  assert.equal(s.toJsonl(), text, 'the source is unchanged');
  assert.throws(
    () => s.createBranchedSession('nope'),
    (e) => e.code === 'E_UNKNOWN_ENTRY',
  );
  // Labels: the 01 case labels its first user message; the branched session keeps the label.
  const one = Session.fromJsonl(leaves()[0].text);
  const kept = one.createBranchedSession('73da0f2f');
  assert.equal(kept.index().find((r) => r.id === '7130ed3c').label, 'verbose-flag');
  assert.equal(kept.entries().at(-1).type, 'label');
});

/** The text of a request's `<conversation>` wrapper. */
function conversationOf(prompt) {
  const start = prompt.indexOf('<conversation>\n');
  const end = prompt.indexOf('\n</conversation>');
  assert.ok(start >= 0 && end > start, 'a conversation');
  return prompt.slice(start + '<conversation>\n'.length, end);
}

test('pi 1.6: planCompaction’s requests carry pi’s serialized history and turn prefix', () => {
  let compared = 0;
  for (const { name, text, want } of leaves()) {
    const s = Session.fromJsonl(text);
    for (const keep of ['2000', '20000']) {
      const expected = want.prepareCompaction[keep];
      if (expected === null) continue;
      const plan = s.planCompaction({ keepRecentTokens: Number(keep) }, { leafId: want.leafId });
      const conversation = (id) => {
        const r = plan.pending.find((p) => p.id === id);
        return r === undefined ? '' : conversationOf(r.prompt);
      };
      assert.equal(conversation('history-1'), expected.serializedHistory, `${name} ${keep}: history`);
      assert.equal(conversation('turn-prefix'), expected.serializedTurnPrefix ?? '', `${name} ${keep}: turn prefix`);
      compared += 1;
    }
  }
  assert.equal(compared, 8, 'every prepared leaf and budget');
});

test('pi 1.6: branch summaries read the branch as pi reads it', () => {
  const outputs = JSON.parse(readFileSync(path.join(repoDir, 'tests/fixtures/pi-branch/outputs.json'), 'utf8'));
  let asked = 0;
  for (const n of outputs.navigations) {
    const text = readFileSync(path.join(conformance, n.file), 'utf8');
    const s = Session.fromJsonl(text);
    s.branch(n.from);
    const want = n.prepared['0'];
    const plan = s.planNavigation(n.to, { summarize: true, contextWindow: 1 });
    assert.deepEqual(plan.preparation.entriesToSummarize, n.entries, `${n.case} ${n.from} → ${n.to}`);
    const [request] = plan.pending;
    if (want.roles.length === 0) {
      assert.equal(request, undefined);
      continue;
    }
    assert.equal(conversationOf(request.prompt), want.serialized, `${n.case} ${n.from} → ${n.to}`);
    assert.equal(plan.preparation.summarizedTokens, want.totalTokens);
    asked += 1;
  }
  assert.ok(asked >= 15);
});

test('pi 1.6: the reasoning hint is the session’s thinking level; summaries ask for the model’s output limit', () => {
  const all = leaves();
  const off = all.find((l) => l.want.case === '01-context-edit' && l.want.leaf === 'end');
  const high = all.find((l) => l.want.case === '04-thinking-split-turn');
  assert.equal(off.want.sessionContext.thinkingLevel, 'off');
  assert.equal(high.want.sessionContext.thinkingLevel, 'high');
  const settings = { keepRecentTokens: 2000 };
  for (const r of Session.fromJsonl(off.text).planCompaction(settings).pending) {
    assert.ok(!('reasoningEffort' in r), `${r.id}: off asks for none`);
  }
  const s = Session.fromJsonl(high.text);
  const sized = s.planCompaction(settings, { maxTokens: 64000, contextWindow: 200000 }).pending;
  assert.deepEqual(
    sized.map((r) => [r.id, r.reasoningEffort, r.maxTokens]),
    [
      ['history-1', 'high', 64000],
      ['turn-prefix', 'high', 64000],
    ],
  );
  // A window too small for the limit beside the input: what is left of it.
  for (const r of s.planCompaction(settings, { maxTokens: 64000, contextWindow: 40000 }).pending) {
    assert.ok(r.maxTokens > 0 && r.maxTokens < 40000, `${r.id}: ${r.maxTokens}`);
  }
  // Without the limit, ctxfold's budgets.
  assert.deepEqual(
    s.planCompaction(settings).pending.map((r) => r.maxTokens),
    [13107, 8192],
  );
  // The branch summary of a pi-family branch.
  const root = s.entries()[1].id;
  const [nav] = s.planNavigation(root, { summarize: true, maxTokens: 32000, contextWindow: 100000 }).pending;
  assert.deepEqual([nav.reasoningEffort, nav.maxTokens], ['high', 32000]);
  assert.equal(s.planNavigation(root, { summarize: true }).pending[0].maxTokens, 2048);
});

/** pi's own entries on these sessions (tests/fixtures/pi-branch/entries.json, generate-entries.mjs). */
function piEntries() {
  return JSON.parse(readFileSync(path.join(repoDir, 'tests', 'fixtures', 'pi-branch', 'entries.json'), 'utf8'));
}

function piSessionText(file) {
  return file.startsWith('sessions/')
    ? readFileSync(path.join(conformance, file), 'utf8')
    : readFileSync(path.join(repoDir, 'tests', 'fixtures', 'pi-branch', file), 'utf8');
}

/** The last line as pi's records keep it: no id, parentId, timestamp; the checkpoint's time marked. */
function recordedLast(s, now) {
  const lines = s.toJsonl().trimEnd().split('\n');
  const { id: _id, parentId: _parent, timestamp: _time, ...rest } = JSON.parse(lines[lines.length - 1]);
  if (rest.systemMessage?.timestamp === now) rest.systemMessage.timestamp = 'ENTRY_TIME';
  return rest;
}

/** The transcript of a request: inside `<conversation>`, or pi's split-turn `# Conversation`. */
function transcript(prompt) {
  if (prompt.startsWith('# Conversation\n')) return prompt.slice(15, prompt.indexOf('\n\n# Instructions\n'));
  return prompt.slice(prompt.indexOf('<conversation>\n') + 15, prompt.indexOf('\n</conversation>'));
}

test('pi 1.6: a committed compaction is the entry pi writes, after the requests pi makes', () => {
  const want = piEntries();
  const now = Date.UTC(2026, 11, 7, 12, 0, 0, 123);
  assert.ok(want.compactions.some((c) => c.case === 'tags'));
  for (const c of want.compactions) {
    const name = `${c.case} ${c.leaf} K=${c.keep}`;
    const s = Session.fromJsonl(piSessionText(c.file));
    const plan = s.planCompaction({ keepRecentTokens: c.keep }, { leafId: c.leaf, contextWindow: 128000 });
    const asked = [];
    while (!plan.isComplete) {
      for (const req of plan.pending) {
        asked.push(transcript(req.prompt));
        plan.answer(req.id, want.summary);
      }
    }
    // pi asks for the history and the turn prefix only (no short summary), tags left as written.
    assert.deepEqual(asked, c.prompts.map(transcript), `${name}: requests`);
    s.commitCompaction(plan, { now });
    assert.equal(JSON.stringify(recordedLast(s, now)), JSON.stringify(c.entry), `${name}: entry`);
    plan.free();
  }
});

test('pi 1.6: a committed branch summary is the entry pi writes', () => {
  const want = piEntries();
  const now = Date.UTC(2026, 11, 7, 12, 0, 0, 123);
  for (const b of want.branchSummaries) {
    const name = `${b.case} ${b.from} → ${b.to}`;
    const s = Session.fromJsonl(piSessionText(b.file));
    s.branch(b.from);
    const plan = s.planNavigation(b.to, { summarize: true, contextWindow: 128000, reserveTokens: 16384 });
    assert.deepEqual(
      plan.pending.map((r) => transcript(r.prompt)),
      b.prompts.map(transcript),
      `${name}: request`,
    );
    s.commitNavigation(plan, plan.pending.length > 0 ? { summary: want.summary } : null, { now });
    assert.equal(JSON.stringify(recordedLast(s, now)), JSON.stringify(b.entry), `${name}: entry`);
    plan.free();
  }
});
