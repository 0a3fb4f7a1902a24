// Tree navigation with branch summaries from JavaScript (spec: compaction §7.5): the sans-IO
// plan/commit cycle and `navigateTree()` with a summarize callback, hooks, cancel, abort and
// failures. Whatever does not commit leaves the session byte-identical.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { outDir, testsDir } from './support/project.mjs';
import { header, line, reply, usage } from './support/sessions.mjs';

/**
 * u1 → a1 → u2 → a2 (read src/x.ts) → r2 → a3   (old branch, leaf a3)
 *         ↘ u9 → a9                              (other branch)
 */
function tree() {
  return `${[
    header,
    line('u1', null, { role: 'user', content: 'start here', timestamp: 1 }),
    reply('a1', 'u1', 'ok', 2),
    line('u2', 'a1', { role: 'user', content: 'try the refactor', timestamp: 3 }),
    line('a2', 'u2', {
      role: 'assistant',
      content: [{ type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'src/x.ts' } }],
      provider: 'anthropic',
      model: 'm',
      usage,
      stopReason: 'toolUse',
      timestamp: 4,
    }),
    line('r2', 'a2', {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'read',
      content: [{ type: 'text', text: 'export const x = 1;' }],
      isError: false,
      timestamp: 5,
    }),
    reply('a3', 'r2', 'refactor done', 6),
    line('u9', 'a1', { role: 'user', content: 'another idea', timestamp: 7 }),
    reply('a9', 'u9', 'sure', 8),
  ].join('\n')}\n`;
}

function load() {
  const s = Session.fromJsonl(tree());
  s.branch('a3');
  return s;
}

test('navigateTree summarizes the branch left behind through a summarize callback', async () => {
  const s = load();
  const calls = [];
  const events = [];
  const result = await s.navigateTree('a9', {
    summarize: async (request, context) => {
      calls.push({ request, context });
      return 'We tried a refactor of src/x.ts.';
    },
    hooks: { session_tree: (e) => events.push(e) },
  });
  assert.equal(calls.length, 1);
  const [{ request, context }] = calls;
  assert.equal(request.purpose, 'branch-summary');
  assert.equal(context.telemetryTag, 'branch_summary');
  assert.equal(request.maxTokens, 2048);
  assert.match(request.prompt, /^<conversation>\n/);
  assert.match(request.prompt, /try the refactor/);
  assert.match(request.prompt, /refactor done/);
  assert.doesNotMatch(request.prompt, /another idea/, 'the target branch is not summarized');
  assert.equal(result.cancelled, false);
  assert.equal(result.oldLeafId, 'a3');
  assert.equal(s.leafId, result.newLeafId);
  const entry = s.entry(result.summaryEntryId);
  assert.equal(entry.type, 'branch_summary');
  assert.equal(entry.parentId, 'a9', 'the summary hangs at the navigation target');
  assert.match(entry.summary, /We tried a refactor of src\/x\.ts\./);
  assert.match(entry.summary, /<files>/);
  assert.deepEqual(entry.details.readFiles, ['src/x.ts']);
  assert.equal(entry.fromExtension ?? false, false);
  assert.equal(events.length, 1);
  assert.equal(events[0].summaryEntry.id, result.summaryEntryId);
  // The LLM context of the new leaf carries the summary.
  const roles = s.buildContext().messages.map((m) => m.role);
  assert.ok(roles.includes('branchSummary'), roles.join());
});

test('a hook cancels, or supplies the summary; abort and failure change nothing', async () => {
  const s = load();
  const before = s.toJsonl();
  let called = 0;
  const summarize = async () => {
    called++;
    return 'never';
  };
  assert.deepEqual(
    await s.navigateTree('a9', { summarize, hooks: { session_before_tree: () => ({ cancel: true }) } }),
    { cancelled: true },
  );
  assert.equal(called, 0);
  assert.equal(s.toJsonl(), before);

  // Abort while the summarizer runs.
  const controller = new AbortController();
  const aborted = await s.navigateTree('a9', {
    signal: controller.signal,
    summarize: () => {
      controller.abort();
      return new Promise(() => {});
    },
  });
  assert.deepEqual(aborted, { cancelled: true, aborted: true });
  assert.equal(s.toJsonl(), before);

  // A summarizer that keeps failing.
  await assert.rejects(
    s.navigateTree('a9', {
      summarize: async () => {
        throw new Error('bad request');
      },
    }),
    (err) => err.code === 'E_SUMMARIZER' && /bad request/.test(err.message),
  );
  assert.equal(s.toJsonl(), before);
  assert.equal(s.leafId, 'a3');

  // A hook's summary is written as given, fromExtension.
  const r = await s.navigateTree('a9', {
    summarize,
    hooks: {
      session_before_tree: ({ preparation }) => ({
        summary: { summary: `left ${preparation.entriesToSummarize.length} entries`, details: { by: 'hook' } },
      }),
    },
  });
  assert.equal(called, 0);
  const entry = s.entry(r.summaryEntryId);
  assert.equal(entry.summary, 'left 4 entries');
  assert.equal(entry.fromExtension, true);
  assert.deepEqual(entry.details, { by: 'hook' });
  assert.equal(r.fromExtension, true);
});

test('sans-IO: plan, answer, commit; a user-message target goes to the editor; stale plans', () => {
  const s = load();
  const plan = s.planNavigation('u9', { summarize: true, label: 'detour' });
  const prep = plan.preparation;
  assert.equal(prep.targetId, 'u9');
  assert.equal(prep.oldLeafId, 'a3');
  assert.equal(prep.commonAncestorId, 'a1');
  assert.deepEqual(prep.entriesToSummarize, ['u2', 'a2', 'r2', 'a3']);
  assert.equal(prep.newLeafId, 'a1', 'a user message target: the leaf lands on its parent');
  assert.equal(prep.editorText, 'another idea');
  assert.deepEqual(prep.readFiles, ['src/x.ts']);
  assert.equal(plan.pending.length, 1);
  plan.setInstructions({ customInstructions: 'Only list the files.' });
  assert.match(plan.pending[0].prompt, /Only list the files\./);
  const before = s.toJsonl();
  const r = s.commitNavigation(plan, { summary: 'summary text' });
  assert.equal(r.editorText, 'another idea');
  assert.equal(s.entry(r.summaryEntryId).parentId, 'a1');
  assert.ok(r.labelEntryId, 'the label is written');
  assert.equal(s.labels()[r.summaryEntryId], 'detour');
  assert.notEqual(s.toJsonl(), before);
  // The plan no longer fits: refused, nothing written.
  const after = s.toJsonl();
  assert.throws(
    () => s.commitNavigation(plan, { summary: 'again' }),
    (e) => e.code === 'E_STALE_PLAN',
  );
  assert.equal(s.toJsonl(), after);
  plan.free();

  // Without a summary the leaf just moves; to the current leaf nothing happens.
  const t = load();
  const move = t.planNavigation('a9');
  assert.equal(move.pending.length, 0);
  assert.equal(t.commitNavigation(move).newLeafId, 'a9');
  assert.equal(t.leafId, 'a9');
  const noop = t.planNavigation('a9');
  assert.equal(noop.isNoop, true);
  const bytes = t.toJsonl();
  t.commitNavigation(noop);
  assert.equal(t.toJsonl(), bytes);
  assert.throws(
    () => t.planNavigation('nope'),
    (e) => e.code === 'E_UNKNOWN_ENTRY',
  );
});

test('the navigation types compile for a strict TypeScript consumer', () => {
  const dir = path.join(outDir, 'types', 'navigate');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        lib: ['es2022'],
        types: [],
        exactOptionalPropertyTypes: true,
      },
      files: ['main.mts'],
    }),
  );
  writeFileSync(
    path.join(dir, 'main.mts'),
    `
    import { Session, type NavigationResult, type NavigationCancelled } from 'ctxfold';
    const s = Session.create();
    const plan = s.planNavigation('x', { summarize: true, contextWindow: 200_000 });
    const id: string | null = plan.preparation.newLeafId;
    const r: NavigationResult = s.commitNavigation(plan, { summary: 'text' });
    const out: NavigationResult | NavigationCancelled = await s.navigateTree('x', {
      summarize: async (req, ctx) => req.prompt + ctx.telemetryTag,
      hooks: { session_before_tree: ({ preparation }) => (preparation.userWantsSummary ? { cancel: true } : undefined) },
    });
    if (out.cancelled) { const a: true | undefined = out.aborted; void a; } else { const e: string | null = out.summaryEntryId; void e; }
    // @ts-expect-error the answer needs a summary
    s.commitNavigation(plan, { details: {} });
    export { id, r };
    `,
  );
  const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
  const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});
