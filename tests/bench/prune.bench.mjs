// Tool-output pruning (spec: compaction §6) on the generated 50,000-entry session (the one the
// load bench uses, with its 209 compactions: pruning stops at the latest compaction's keep
// boundary): the threshold pass with the engine defaults and the stale pass (superseded reads,
// useless results) as the coding agent runs it each turn. Repeated runs are dry runs (a real
// run finds nothing left to prune the second time); one real run is timed after them. The same
// passes on the session without compactions show the worst case: every result is a candidate.
// Shake's plan and apply are timed on the same sessions.
import { Session } from 'ctxfold';
import { generatedSession, timed, timesRow } from './lib.mjs';

const NOW = 1_800_000_000_000;

function passes(bytes, title) {
  const rows = [];
  for (const [label, pass, options] of [
    [`${title}: threshold prune (engine defaults)`, 'prune', { now: NOW }],
    [
      `${title}: stale pass (supersede + useless, 90 min idle flush)`,
      'pruneStale',
      { now: NOW, idleFlushMs: 5_400_000 },
    ],
  ]) {
    const session = Session.fromJsonl(bytes);
    const [first, report] = timed(() => session[pass]({ ...options, dryRun: true }));
    const times = [];
    for (let i = 0; i < 11; i++) times.push(timed(() => session[pass]({ ...options, dryRun: true }))[0]);
    const [real, applied] = timed(() => session[pass](options));
    const note = `${report.prunedCount} results, ${report.tokensSaved} tokens saved`;
    rows.push({
      name: `${label}, first call`,
      median: first,
      unit: 'ms',
      samples: 1,
      note: 'estimates every entry once',
    });
    rows.push(timesRow(label, times, { note: `dry run; ${note}` }));
    rows.push({
      name: `${label}, applied`,
      median: real,
      unit: 'ms',
      samples: 1,
      note: `${applied.prunedCount} results rewritten`,
    });
  }
  // Shake (issue 20): planning with the automatic preset (dry: nothing written), then one
  // aggressive plan + apply.
  const session = Session.fromJsonl(bytes);
  const [first, plan] = timed(() => session.planShake({ preset: 'default' }));
  const times = [];
  for (let i = 0; i < 11; i++) times.push(timed(() => session.planShake({ preset: 'default' }))[0]);
  rows.push({
    name: `${title}: shake plan (automatic preset), first call`,
    median: first,
    unit: 'ms',
    samples: 1,
    note: 'estimates every entry once',
  });
  rows.push(
    timesRow(`${title}: shake plan (automatic preset)`, times, {
      note: `${plan.regions.length} regions, ${plan.tokens} tokens`,
    }),
  );
  const [applied, report] = timed(() => {
    const p = session.planShake({ preset: 'aggressive' });
    return session.applyShake(p, { artifactId: 'A1', now: NOW });
  });
  rows.push({
    name: `${title}: shake plan + apply (manual preset)`,
    median: applied,
    unit: 'ms',
    samples: 1,
    note: `${report.toolResultsDropped} results, ${report.blocksDropped} blocks, ${report.tokensFreed} tokens freed`,
  });
  return rows;
}

export default async function () {
  return [
    ...passes(generatedSession('bench-50k.jsonl', ['--preset', 'bench']), '50,000 entries, 209 compactions'),
    ...passes(
      generatedSession('bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']),
      '50,000 entries, no compactions',
    ),
  ];
}
