// Issue 38's speed targets on the generated 50,000-entry session without compactions: the
// anchor index a plan harvests from the region it drops (nearly the whole session: ≤ 20 ms),
// read as the difference between `planCompaction` with the anchors and with `anchorTokens: 0`;
// and `searchHistory` over every entry (the first query builds the index; the next ones
// ≤ 50 ms), with the `recall_history` tool's answer beside it.
import { runContextTool, Session } from 'ctxfold';
import { generatedSession as generated, timed, timesRow } from './lib.mjs';

/** Median-of-11 plans of `session` under `settings` (each plan freed). */
function plans(session, settings) {
  const times = [];
  for (let i = 0; i < 11; i++) {
    const [t, plan] = timed(() => session.planCompaction(settings));
    times.push(t);
    plan.free();
  }
  return times;
}

export default async function () {
  const session = Session.fromJsonl(generated('bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']));
  const dropped = session.prepareCompaction({}).messagesToSummarize.length;
  const withAnchors = plans(session, {});
  const without = plans(session, { anchorTokens: 0 });
  const [first] = timed(() => session.searchHistory('error'));
  const queries = ['src/mod_7.ts', 'value frame', 'E_SETTINGS', 'parse_json', 'timeout 30', 'const_9668'];
  const searches = [];
  for (let i = 0; i < 18; i++) searches.push(timed(() => session.searchHistory(queries[i % queries.length]))[0]);
  const tools = [];
  for (let i = 0; i < 6; i++) {
    tools.push(timed(() => runContextTool(session, 'recall_history', { query: queries[i] }))[0]);
  }
  return [
    timesRow('50,000 entries: planCompaction with the anchor index', withAnchors, {
      note: `${dropped} messages dropped`,
    }),
    timesRow('50,000 entries: planCompaction with anchorTokens: 0', without),
    {
      name: '50,000 entries: searchHistory, first query (builds the index)',
      median: first,
      unit: 'ms',
      samples: 1,
    },
    timesRow('50,000 entries: searchHistory, later queries', searches),
    timesRow("50,000 entries: runContextTool('recall_history')", tools),
  ];
}
