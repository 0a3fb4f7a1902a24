// Every public operation on a generated ~200 MB session (issue: hardening, "deep and large
// inputs"): each finishes, and the wasm linear memory it leaves behind is reported against the
// file's size (wasm memory only grows, so each figure is the peak so far).
//
// The session comes from the crate's generator (`gen-session --preset bench --entries 70000`,
// compactions every 150,000 tokens, images) and is cached in tests/out/bench/.
import { Session, wasmMemoryBytes } from 'ctxfold';
import { generatedSession, timed } from './lib.mjs';

const NOW = 1_800_000_000_000;

export default async function () {
  const bytes = generatedSession('large-70k.jsonl', ['--preset', 'bench', '--entries', '70000']);
  const mb = bytes.length / 1e6;
  const rows = [];
  const step = (name, fn, note) => {
    const [t, value] = timed(fn);
    const memory = wasmMemoryBytes() / 1e6;
    rows.push({
      name,
      median: t,
      unit: 'ms',
      samples: 1,
      note: `${note ? `${note(value)}; ` : ''}wasm memory ${memory.toFixed(0)} MB = ${(memory / mb).toFixed(2)} × the file`,
    });
    return value;
  };

  const session = step('load (fromJsonl)', () => Session.fromJsonl(bytes), (s) => `${mb.toFixed(1)} MB, ${s.size} entries`);
  step('buildContext (LLM)', () => session.buildContext(), (c) => `${c.messages.length} messages`);
  step('buildContext (transcript)', () => session.buildContext({ transcript: true }), (c) => `${c.messages.length} messages`);
  step('toBytes (save)', () => session.toBytes(), (b) => `${(b.length / 1e6).toFixed(1)} MB, identical: ${Buffer.compare(Buffer.from(b), bytes) === 0}`);
  step('prepareCompaction (first: estimates every entry)', () => session.prepareCompaction());
  step('prune (dry run)', () => session.prune({ now: NOW, dryRun: true }), (r) => `${r.prunedCount} results`);
  step('pruneStale (dry run)', () => session.pruneStale({ now: NOW, dryRun: true }), (r) => `${r.prunedCount} results`);
  const path = session.pathTo(session.leafId);
  const target = path[path.length - 1 - 10_000];
  step('planNavigation with a summary, 10,000 entries up', () => {
    const plan = session.planNavigation(target, { summarize: true });
    plan.free();
  });
  step('snapcompact compaction (plan + commit, claude-opus-4-7)', () => {
    const plan = session.planCompaction({ strategy: 'snapcompact' });
    try {
      return session.commitCompaction(plan, { snapcompact: { model: 'claude-opus-4-7' } });
    } finally {
      plan.free();
    }
  }, (r) => `${r.compactionEntry.preserveData.snapcompact.frames.length} frames, tokensAfter ${r.tokensAfter}`);
  step('buildContext after it', () => session.buildContext(), (c) => `${c.messages.length} messages`);
  step('prune (applied)', () => session.prune({ now: NOW }), (r) => `${r.prunedCount} results rewritten`);
  session.free();
  return rows;
}
