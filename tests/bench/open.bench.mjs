// The path a host takes on a session it has just opened (issue 22): open, then the first
// `contextTokens`, the first `prepareCompaction` and a threshold prune, each on a freshly
// opened copy of the generated 50,000-entry session (the prune on its variant without
// compactions, where about 16,000 results are pruned); then the cost of one agent turn on a
// compacted session (two appends, `contextTokens`, the provider messages), and the display
// transcript of the ~200 MB session, whole and one page.
import { Session } from 'ctxfold';
import { largeSessionBytes } from '../js/support/large-workload.mjs';
import { generatedSession, median, timed, timesRow } from './lib.mjs';

const NOW = 1_800_000_000_000;

/** `count` fresh opens of `bytes`, each followed by `step(session)` timed. */
function afterOpen(name, bytes, step, { count = 3, note } = {}) {
  const times = [];
  let value;
  for (let i = 0; i < count; i++) {
    const session = Session.fromJsonl(bytes);
    const [t, v] = timed(() => step(session));
    times.push(t);
    value = v;
    session.free();
  }
  return timesRow(name, times, { note: note?.(value) });
}

/** The whole-path display transcript: `transcript()` where the build has it. */
function wholeTranscript(session) {
  if (typeof session.transcript === 'function') return session.transcript().messages;
  return session.buildContext({ transcript: true }).messages;
}

export default async function () {
  const bytes = generatedSession('bench-50k.jsonl', ['--preset', 'bench']);
  const noComp = generatedSession('bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']);
  const rows = [];

  const opens = [];
  for (let i = 0; i < 3; i++) {
    const [t, s] = timed(() => Session.fromJsonl(bytes));
    opens.push(t);
    s.free();
  }
  rows.push(timesRow('open (fromJsonl), 50,000 entries', opens, { note: `${(bytes.length / 1e6).toFixed(1)} MB` }));
  rows.push(
    afterOpen('first contextTokens after open', bytes, (s) => s.contextTokens(), {
      note: (t) => `${t.tokens} tokens, ${t.messages} messages`,
    }),
  );
  rows.push(
    afterOpen('first prepareCompaction after open', bytes, (s) => s.prepareCompaction(), {
      note: (p) => `${p.messagesToSummarize.length} to summarize`,
    }),
  );
  rows.push(
    afterOpen('threshold prune after open, applied (no compactions)', noComp, (s) => s.prune({ now: NOW }), {
      note: (r) => `${r.prunedCount} results pruned`,
    }),
  );
  rows.push(
    afterOpen(
      'open → contextTokens → prepareCompaction → prune, whole',
      noComp,
      (s) => {
        s.contextTokens();
        s.prepareCompaction();
        return s.prune({ now: NOW });
      },
      { note: (r) => `${r.prunedCount} results pruned (open not included)` },
    ),
  );

  // One agent turn on the compacted session: the user's message and the answer appended,
  // then what a host asks before the next request.
  const session = Session.fromJsonl(bytes);
  const turns = [];
  let contextSize = 0;
  for (let i = 0; i < 40; i++) {
    const [t] = timed(() => {
      session.appendMessage({ role: 'user', content: `question ${i}` }, { now: NOW + i });
      session.appendMessage(
        {
          role: 'assistant',
          content: [{ type: 'text', text: `answer ${i}` }],
          provider: 'anthropic',
          model: 'claude-opus-4-7',
          usage: { input: 1000 + i, output: 10 },
          stopReason: 'stop',
        },
        { now: NOW + i },
      );
      const tokens = session.contextTokens();
      contextSize = tokens.messages;
      return session.toLlmMessages().length;
    });
    turns.push(t);
  }
  session.free();
  rows.push(
    timesRow('per turn after compaction (2 appends + contextTokens + toLlmMessages)', turns.slice(5), {
      note: `context of ${contextSize} messages; median of ${turns.length - 5} turns ${median(turns.slice(5)).toFixed(2)} ms`,
    }),
  );

  const large = largeSessionBytes({ release: true });
  const big = Session.fromJsonl(large);
  const [whole, all] = timed(() => wholeTranscript(big));
  rows.push(timesRow('transcript, whole path (~200 MB session)', [whole], { note: `${all.length} messages` }));
  if (typeof big.transcript === 'function') {
    const pages = [];
    let page;
    for (let i = 0; i < 5; i++) {
      const [t, p] = timed(() => big.transcript({ from: -100, count: 100 }));
      pages.push(t);
      page = p;
    }
    rows.push(
      timesRow('transcript, last page of 100 (~200 MB session)', pages, {
        note: `${page.messages.length} of ${page.total} messages`,
      }),
    );
  }
  big.free();
  return rows;
}
