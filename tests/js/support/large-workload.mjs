// Every public operation on the generated ~200 MB session (issue: hardening, "deep and large
// inputs"), shared by the test (tests/js/large.test.mjs: each finishes, gives the right kind of
// answer and stays within memory) and the benchmark (tests/bench/large.bench.mjs: times).
import { generatedSession } from './generated.mjs';

const NOW = 1_800_000_000_000;

/** Whether a saved Uint8Array has the bytes of the file (compared without a copy). */
const identical = (saved, bytes) =>
  Buffer.compare(Buffer.from(saved.buffer, saved.byteOffset, saved.length), bytes) === 0;

/** The session: 70,000 entries, compactions every 150,000 tokens, branches, images. */
export function largeSessionBytes(options) {
  return generatedSession('large-70k.jsonl', ['--preset', 'bench', '--entries', '70000'], options);
}

/**
 * The operations, in order, on one session: `{ name, run(session), check(value, bytes,
 * session), note(value, bytes) }`; `check` returns true or throws. The first step (`load`) has
 * no `run`: its value is the session the caller made from the bytes.
 */
export function largeSessionSteps() {
  let target;
  return [
    {
      name: 'load (fromJsonl)',
      load: true,
      check: (s) => s.size === 70_000 && s.warnings.length === 0,
      note: (s, bytes) => `${(bytes.length / 1e6).toFixed(1)} MB, ${s.size} entries`,
    },
    {
      name: 'buildContext (LLM)',
      run: (s) => s.buildContext(),
      check: (c) => c.messages.length > 0 && c.compactionId !== undefined,
      note: (c) => `${c.messages.length} messages`,
    },
    {
      name: 'buildContext (transcript)',
      run: (s) => s.buildContext({ transcript: true }),
      check: (c, _bytes, s) => c.messages.length > 50_000 && c.entryIds.at(-1) === s.leafId,
      note: (c) => `${c.messages.length} messages`,
    },
    {
      name: 'contextTokens (transcript)',
      run: (s) => s.contextTokens({ transcript: true }),
      check: (t) => t.tokens > 0 && t.lastUsageEntryId !== null,
      note: (t) => `${t.tokens} tokens`,
    },
    {
      name: 'toLlmMessages',
      run: (s) => s.toLlmMessages(),
      check: (m) => m.length > 0,
      note: (m) => `${m.length} provider messages`,
    },
    {
      name: 'toBytes (save)',
      run: (s) => s.toBytes(),
      check: (b, bytes) => identical(b, bytes),
      note: (b, bytes) => `${(b.length / 1e6).toFixed(1)} MB, identical: ${identical(b, bytes)}`,
    },
    {
      name: 'toJsonl',
      run: (s) => s.toJsonl(),
      check: (t, bytes) => t.length === bytes.toString('utf8').length,
      note: (t) => `${(t.length / 1e6).toFixed(1)} M chars`,
    },
    {
      name: 'prepareCompaction (first: estimates every entry)',
      run: (s) => s.prepareCompaction(),
      check: (p) => p !== undefined,
    },
    {
      name: 'prune (dry run)',
      run: (s) => s.prune({ now: NOW, dryRun: true }),
      check: (r) => r.prunedCount >= 0,
      note: (r) => `${r.prunedCount} results`,
    },
    {
      name: 'pruneStale (dry run)',
      run: (s) => s.pruneStale({ now: NOW, dryRun: true }),
      check: (r) => r.prunedCount > 0,
      note: (r) => `${r.prunedCount} results`,
    },
    {
      name: 'planNavigation with a summary, 10,000 entries up',
      run: (s) => {
        const path = s.pathTo(s.leafId);
        target = path[path.length - 1 - 10_000];
        const plan = s.planNavigation(target, { summarize: true });
        try {
          return plan.pending.map((r) => r.prompt.length);
        } finally {
          plan.free();
        }
      },
      check: (prompts) => prompts.length === 1 && prompts[0] > 0,
      note: (prompts) => `a prompt of ${prompts[0]} chars`,
    },
    {
      name: 'summarized compaction planned, every request answered (not committed)',
      run: (s) => {
        const plan = s.planCompaction({ strategy: 'context-full' });
        try {
          let requests = 0;
          while (!plan.isComplete) {
            for (const r of plan.pending) {
              plan.answer(r.id, `summary of ${r.id}`);
              requests++;
            }
          }
          return requests;
        } finally {
          plan.free();
        }
      },
      check: (n) => n > 0,
      note: (n) => `${n} requests`,
    },
    {
      name: 'snapcompact compaction (plan + commit, claude-opus-4-7)',
      run: (s) => {
        const plan = s.planCompaction({ strategy: 'snapcompact' });
        try {
          return s.commitCompaction(plan, { snapcompact: { model: 'claude-opus-4-7' } });
        } finally {
          plan.free();
        }
      },
      check: (r) =>
        r.compactionEntry.preserveData.snapcompact.frames.length > 0 && r.tokensAfter < r.compactionEntry.tokensBefore,
      note: (r) => `${r.compactionEntry.preserveData.snapcompact.frames.length} frames, tokensAfter ${r.tokensAfter}`,
    },
    {
      name: 'buildContext after it',
      run: (s) => s.buildContext(),
      check: (c) => c.messages[0].role === 'compactionSummary',
      note: (c) => `${c.messages.length} messages`,
    },
    {
      name: 'branch (navigate 10,000 entries up) and back',
      run: (s) => {
        const leaf = s.leafId;
        s.branch(target);
        const up = s.buildContext().messages.length;
        s.branch(leaf);
        return up;
      },
      check: (n) => n > 0,
    },
    {
      name: 'prune (applied)',
      run: (s) => s.prune({ now: NOW }),
      check: (r) => r.prunedCount >= 0,
      note: (r) => `${r.prunedCount} results rewritten`,
    },
  ];
}
