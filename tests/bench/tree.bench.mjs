// Tree navigation (spec: compaction §7): planning a navigation with a branch summary that
// collects 10,000 entries (the target is 10,000 entries up the active path of the generated
// 50,000-entry session), with the default budget (128,000 − 16,384 tokens) and without one.
// The reference needs about 5 ms per 1,000 collected entries.
import { Session } from 'ctxfold';
import { generatedSession, timed, timesRow } from './lib.mjs';

export default async function () {
  const session = Session.fromJsonl(
    generatedSession('bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']),
  );
  const path = session.pathTo(session.leafId);
  const target = path[path.length - 1 - 10_000];
  const rows = [];
  for (const [label, options] of [
    ['default budget', { summarize: true }],
    ['no budget (every entry chosen)', { summarize: true, contextWindow: 1e12 }],
  ]) {
    const [first, plan] = timed(() => session.planNavigation(target, options));
    const prep = plan.preparation;
    const note = `${prep.entriesToSummarize.length} entries collected, ${prep.summarizedTokens} tokens chosen`;
    plan.free();
    const times = [];
    for (let i = 0; i < 7; i++) {
      const [t, p] = timed(() => session.planNavigation(target, options));
      times.push(t);
      p.free();
    }
    rows.push({
      name: `planNavigation, 10,000 entries, ${label}, first call`,
      median: first,
      unit: 'ms',
      samples: 1,
      note,
    });
    rows.push(timesRow(`planNavigation, 10,000 entries, ${label}`, times, { note }));
  }
  return rows;
}
