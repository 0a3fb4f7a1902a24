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

/** Replaces `fetch` for one test: records each call and answers with `respond(call)`. */
async function withFetch(respond, run) {
  const calls = [];
  const real = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    const call = { url: String(url), headers: init.headers, body: JSON.parse(init.body) };
    calls.push(call);
    const { status = 200, body } = respond(call);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  try {
    await run(calls);
  } finally {
    globalThis.fetch = real;
  }
}

test('navigateTree POSTs the branch summary request to remoteEndpoint, as compact() does', async () => {
  await withFetch(
    () => ({ body: { summary: 'Remote: the refactor of src/x.ts.' } }),
    async (calls) => {
      const s = load();
      const r = await s.navigateTree('a9', {
        remoteEndpoint: 'http://127.0.0.1:9/summarize',
        headers: { authorization: 'Bearer k' },
      });
      assert.equal(calls.length, 1);
      const [{ url, headers, body }] = calls;
      assert.equal(url, 'http://127.0.0.1:9/summarize');
      assert.equal(headers.authorization, 'Bearer k');
      assert.equal(headers['content-type'], 'application/json');
      assert.deepEqual(Object.keys(body).sort(), ['maxTokens', 'prompt', 'systemPrompt']);
      assert.equal(body.maxTokens, 2048);
      assert.match(body.prompt, /^<conversation>\n/);
      assert.match(body.prompt, /try the refactor/);
      assert.doesNotMatch(body.prompt, /another idea/);
      const entry = s.entry(r.summaryEntryId);
      assert.equal(entry.parentId, 'a9');
      assert.match(entry.summary, /Remote: the refactor of src\/x\.ts\./);
      assert.deepEqual(entry.details.readFiles, ['src/x.ts']);
    },
  );

  // An OpenAI-compatible endpoint gets the chat shape with the model id.
  await withFetch(
    () => ({ body: { choices: [{ message: { content: 'Chat summary.' } }] } }),
    async (calls) => {
      const s = load();
      const r = await s.navigateTree('a9', {
        remoteEndpoint: 'http://127.0.0.1:9/v1/chat/completions',
        model: 'small-1',
      });
      assert.equal(calls[0].body.model, 'small-1');
      assert.deepEqual(
        calls[0].body.messages.map((m) => m.role),
        ['system', 'user'],
      );
      assert.match(s.entry(r.summaryEntryId).summary, /Chat summary\./);
    },
  );
});

test('a failing endpoint falls back to summarize, or fails with the session unchanged', async () => {
  await withFetch(
    () => ({ status: 400, body: { error: 'no' } }),
    async (calls) => {
      const s = load();
      const r = await s.navigateTree('a9', {
        remoteEndpoint: 'http://127.0.0.1:9/summarize',
        summarize: async () => 'From the callback.',
        retry: { enabled: false },
      });
      assert.equal(calls.length, 1, 'the endpoint first');
      assert.match(s.entry(r.summaryEntryId).summary, /From the callback\./);

      const t = load();
      const before = t.toJsonl();
      await assert.rejects(
        t.navigateTree('a9', { remoteEndpoint: 'http://127.0.0.1:9/summarize', retry: { enabled: false } }),
        (err) => err.code === 'E_SUMMARIZER' && err.status === 400 && /Branch summarization failed/.test(err.message),
      );
      assert.equal(t.toJsonl(), before);
      assert.equal(t.leafId, 'a3');
    },
  );
});

// Issue 36 (one engine): the core lists the summary routes (plan.routesJson); the shell only
// builds and asks them. These pin the order and the cases the routes answer.
test('the summary routes: the option endpoint before the settings one and the callbacks; none without remote', async () => {
  await withFetch(
    () => ({ body: { summary: 'Remote.' } }),
    async (calls) => {
      const s = load();
      const r = await s.navigateTree('a9', {
        remoteEndpoint: 'http://127.0.0.1:9/option',
        settings: { remoteEndpoint: 'http://127.0.0.1:9/settings' },
        summarize: async () => 'Callback.',
      });
      assert.deepEqual(
        calls.map((c) => c.url),
        ['http://127.0.0.1:9/option'],
      );
      assert.match(s.entry(r.summaryEntryId).summary, /Remote\./);

      // remoteEnabled: false turns off the option's endpoint too: no route, no summary, and
      // a hook's summary is not taken (none was wanted).
      const t = load();
      const seen = [];
      const plain = await t.navigateTree('a9', {
        remoteEndpoint: 'http://127.0.0.1:9/option',
        settings: { remoteEnabled: false },
        hooks: {
          session_before_tree: ({ preparation }) => {
            seen.push(preparation.userWantsSummary);
            return { summary: { summary: 'From a hook.' } };
          },
        },
      });
      assert.equal(calls.length, 1, 'no POST');
      assert.deepEqual(seen, [false]);
      assert.equal(plain.summaryEntryId ?? null, null);
      assert.equal(t.leafId, 'a9');
    },
  );
});

test('a branch summary that overflows its summarizer gives up at once (it has no window to shrink)', async () => {
  const s = load();
  const before = s.toJsonl();
  const called = [];
  await assert.rejects(
    s.navigateTree('a9', {
      summarize: [
        async () => {
          called.push('first');
          throw new Error('prompt is too long: 300000 tokens > 200000 maximum');
        },
        async () => {
          called.push('second');
          return 'never';
        },
      ],
    }),
    (err) => err.code === 'E_SUMMARIZER' && /Branch summarization failed: prompt is too long/.test(err.message),
  );
  assert.deepEqual(called, ['first']);
  assert.equal(s.toJsonl(), before);
});

test('settings: remoteEndpoint and branchSummary.reserveTokens; branchSummary.enabled is a UI flag', async () => {
  await withFetch(
    () => ({ body: { summary: 'From settings.' } }),
    async (calls) => {
      const s = load();
      let budget;
      const hooks = {
        session_before_tree: ({ preparation }) => {
          budget = preparation.tokenBudget;
        },
      };
      const settings = {
        remoteEndpoint: 'http://127.0.0.1:9/s',
        branchSummary: { reserveTokens: 100_000, enabled: false },
      };
      const r = await s.navigateTree('a9', { settings, contextWindow: 128_000, hooks });
      assert.equal(calls.length, 1, 'summarized although branchSummary.enabled is false');
      assert.equal(budget, 28_000, 'window − branchSummary.reserveTokens');
      assert.match(s.entry(r.summaryEntryId).summary, /From settings\./);

      // An explicit reserveTokens wins; remoteEnabled: false leaves the endpoint out.
      const t = load();
      const called = [];
      await t.navigateTree('a9', {
        settings: { ...settings, remoteEnabled: false },
        reserveTokens: 8_000,
        contextWindow: 128_000,
        summarize: async () => {
          called.push(1);
          return 'Callback.';
        },
        hooks,
      });
      assert.equal(calls.length, 1, 'no second POST');
      assert.equal(called.length, 1);
      assert.equal(budget, 120_000);
    },
  );
  const s = load();
  const before = s.toJsonl();
  await assert.rejects(s.navigateTree('a9', { remoteEndpoint: 'ftp://x' }), (e) => e.code === 'E_INVALID_ARGUMENT');
  await assert.rejects(s.navigateTree('a9', { remoteEndpoint: 42 }), (e) => e.code === 'E_INVALID_ARGUMENT');
  await assert.rejects(
    s.navigateTree('a9', { settings: { branchSummary: { reserveTokens: 'lots' } } }),
    (e) => e.code === 'E_SETTINGS' && /branchSummary\.reserveTokens/.test(e.message),
  );
  assert.equal(s.toJsonl(), before);
});

test('undoCompaction returns the leaf to before the compaction and keeps the entry', () => {
  const s = load();
  const id = s.appendCompaction({ summary: 'S', firstKeptEntryId: 'r2', tokensBefore: 100 });
  const bytes = s.toJsonl();
  assert.equal(s.undoCompaction(id), 'a3');
  assert.equal(s.leafId, 'a3');
  assert.equal(s.toJsonl(), bytes, 'nothing is deleted');
  assert.equal(s.entry(id).type, 'compaction');
  // Undone already: the leaf is no longer on it.
  assert.throws(
    () => s.undoCompaction(id),
    (e) => e.code === 'E_UNDO_REFUSED' && /moved on/.test(e.message),
  );
  // Moved on: a message after the compaction.
  s.branch(id);
  s.appendMessage({ role: 'user', content: 'next', timestamp: 9 });
  assert.throws(
    () => s.undoCompaction(id),
    (e) => e.code === 'E_UNDO_REFUSED',
  );
  assert.throws(
    () => s.undoCompaction('a3'),
    (e) => e.code === 'E_UNDO_REFUSED' && /not a compaction/.test(e.message),
  );
  assert.throws(
    () => s.undoCompaction('nope'),
    (e) => e.code === 'E_UNKNOWN_ENTRY',
  );
  assert.throws(
    () => s.undoCompaction(''),
    (e) => e.code === 'E_INVALID_ARGUMENT',
  );
  // The next append after an undo continues from the parent.
  const t = load();
  const c = t.appendCompaction({ summary: 'S', firstKeptEntryId: 'r2', tokensBefore: 100 });
  t.undoCompaction(c);
  const next = t.appendMessage({ role: 'user', content: 'again', timestamp: 10 });
  assert.equal(t.entry(next).parentId, 'a3');
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
    import {
      Session, compactionMethods, thresholdTokens, type CompactionMethod, type NavigationResult,
      type NavigationCancelled,
    } from 'ctxfold';
    const methods: CompactionMethod[] = compactionMethods({ methodOrder: ['soft'] }, {
      reason: 'overflow', model: { provider: 'p', id: 'm', input: ['text', 'image'] }, payloadRejection: true,
    });
    const point: number = thresholdTokens(200_000, { modelThresholds: { 'p/m': '1.5M', 'p/*': 90_000 } }, { provider: 'p', id: 'm' });
    void methods; void point;
    const s = Session.create();
    const plan = s.planNavigation('x', { summarize: true, contextWindow: 200_000 });
    const id: string | null = plan.preparation.newLeafId;
    const r: NavigationResult = s.commitNavigation(plan, { summary: 'text' });
    const out: NavigationResult | NavigationCancelled = await s.navigateTree('x', {
      summarize: async (req, ctx) => req.prompt + ctx.telemetryTag,
      hooks: { session_before_tree: ({ preparation }) => (preparation.userWantsSummary ? { cancel: true } : undefined) },
    });
    if (out.cancelled) { const a: true | undefined = out.aborted; void a; } else { const e: string | null = out.summaryEntryId; void e; }
    await s.navigateTree('x', {
      remoteEndpoint: 'https://s.example/c',
      headers: { authorization: 'k' },
      model: 'm',
      settings: { branchSummary: { enabled: true, reserveTokens: 8000 }, modelThresholds: { 'openai/*': '80%' } },
    });
    const leaf: string | null = s.undoCompaction('c1');
    void leaf;
    // @ts-expect-error the answer needs a summary
    s.commitNavigation(plan, { details: {} });
    export { id, r };
    `,
  );
  const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
  const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});
