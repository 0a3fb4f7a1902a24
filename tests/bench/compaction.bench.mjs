// Compaction preparation and planning on generated 50,000-entry sessions (issue: compaction
// engine, "Speed"): one without earlier compactions, one with about 250 of them.
import { Session } from 'ctxfold';
import { generatedSession as generated, timed, timesRow } from './lib.mjs';

function rows(label, session, settings) {
  const out = [];
  const [first, prep] = timed(() => session.prepareCompaction(settings));
  const times = [];
  for (let i = 0; i < 15; i++) times.push(timed(() => session.prepareCompaction(settings))[0]);
  const note = `${prep.messagesToSummarize.length} messages to summarize`;
  out.push({
    name: `${label}: prepareCompaction, first call`,
    median: first,
    unit: 'ms',
    samples: 1,
    note: 'estimates every entry once',
  });
  out.push(timesRow(`${label}: prepareCompaction`, times, { note }));
  const plans = [];
  for (let i = 0; i < 11; i++) {
    const [t, plan] = timed(() => session.planCompaction(settings));
    plans.push(t);
    plan.free();
  }
  out.push(timesRow(`${label}: planCompaction (prompts written)`, plans));
  return out;
}

export default async function () {
  const settings = {};
  const plain = Session.fromJsonl(generated('bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']));
  const many = Session.fromJsonl(
    generated('bench-50k-c125k.jsonl', ['--preset', 'bench', '--compaction-every', '125000']),
  );
  const compactions = many.index().filter((e) => e.type === 'compaction').length;
  return [
    ...rows('50,000 entries, no compactions', plain, settings),
    ...rows(`50,000 entries, ${compactions} compactions`, many, settings),
  ];
}
