#!/usr/bin/env node
// Per-turn cost against the length of the history (issue 42 item 4): on generated sessions of
// 2,000 / 10,000 / 50,000 / 200,000 entries, a compaction is appended that keeps about 199
// messages (as `make bench-reference`'s turn step does), then each agent turn appends the user's
// message and the answer and asks what a host asks before the next request: `contextTokens()`
// and `toLlmMessages()`. The context is the same size at every length, so a turn that only
// walks what changed costs the same at every length. Target: ≤ 0.5 ms at 200,000 entries.
// Then the same sessions through the Maintainer: `beforeRequest` + `afterResponse` per turn
// (its threshold prune included), the user's message appended by the host.
//
// The sessions are `gen-session --preset bench --entries N --scale 0.25` (a quarter of the
// bench preset's message sizes: the turn's cost depends on the number of entries on the path,
// not on their bytes; the 200,000-entry file is 291 MB).
//
//   node tests/bench/per-turn.mjs                      # this checkout's pkg/, printed
//   node tests/bench/ab.mjs PKG_A PKG_B tests/bench/per-turn.mjs --rounds 4   # A/B
//
// PER_TURN_SIZES=2000,10000 limits the sizes.
import { pathToFileURL } from 'node:url';
import { Maintainer, Session } from 'ctxfold';
import { keptEntryId, NOW, turnMessages } from '../reference/common.mjs';
import { generatedSession, timed, timesRow } from './lib.mjs';

const SIZES = (process.env.PER_TURN_SIZES ?? '2000,10000,50000,200000').split(',').map(Number);
/** Untimed turns first (the first after the compaction converts the kept messages). */
const WARM_TURNS = 5;
const TIMED_TURNS = 40;

/** The bytes of the generated session of `entries` entries (cached in tests/out/bench/). */
function sessionOf(entries) {
  return generatedSession(`per-turn-${entries}.jsonl`, [
    '--preset',
    'bench',
    '--entries',
    String(entries),
    '--scale',
    '0.25',
  ]);
}

/** The times of `TIMED_TURNS` turns on the session of `bytes`, after its compaction. */
function turns(bytes) {
  const s = Session.fromJsonl(bytes);
  try {
    const info = new Map(s.index().map((e) => [e.id, e]));
    const kept = keptEntryId(s.pathTo(s.leafId).map((id) => info.get(id)));
    s.appendCompaction(
      { summary: 'Summary of the earlier work.', firstKeptEntryId: kept, tokensBefore: 150_000 },
      { now: NOW },
    );
    const times = [];
    let size = 0;
    for (let i = 0; i < WARM_TURNS + TIMED_TURNS; i++) {
      const [user, assistant] = turnMessages(i);
      const [t] = timed(() => {
        s.appendMessage(user, { now: user.timestamp });
        s.appendMessage(assistant, { now: assistant.timestamp });
        s.contextTokens();
        size = s.toLlmMessages().length;
      });
      if (i >= WARM_TURNS) times.push(t);
    }
    return { times, size, entries: s.size };
  } finally {
    s.free();
  }
}

const MODEL = { provider: 'anthropic', id: 'claude-opus-4-7', contextWindow: 1_000_000, input: ['text'] };

/** The same after the compaction, a turn being `beforeRequest` + `afterResponse`. */
async function maintainerTurns(bytes) {
  const s = Session.fromJsonl(bytes);
  const info = new Map(s.index().map((e) => [e.id, e]));
  const kept = keptEntryId(s.pathTo(s.leafId).map((id) => info.get(id)));
  s.appendCompaction(
    { summary: 'Summary of the earlier work.', firstKeptEntryId: kept, tokensBefore: 150_000 },
    { now: NOW },
  );
  let now = NOW;
  const m = new Maintainer(s, {
    model: MODEL,
    summarize: async () => 'unused',
    settings: { methodOrder: ['soft'] },
    now: () => now,
  });
  const times = [];
  try {
    for (let i = 0; i < WARM_TURNS + TIMED_TURNS; i++) {
      const [user, assistant] = turnMessages(i);
      now = assistant.timestamp;
      s.appendMessage(user, { now: user.timestamp });
      const t0 = performance.now();
      await m.beforeRequest({ systemPrompt: 'You are a coding agent.' });
      await m.afterResponse(assistant);
      if (i >= WARM_TURNS) times.push(performance.now() - t0);
    }
  } finally {
    m.dispose();
    s.free();
  }
  return times;
}

export default async function perTurn() {
  const rows = [];
  for (const n of SIZES) {
    const { times, size, entries } = turns(sessionOf(n));
    rows.push(
      timesRow(`per turn at ${n.toLocaleString('en-US')} entries (2 appends + contextTokens + toLlmMessages)`, times, {
        note: `${entries} entries, ${size} LLM messages at the end; median of ${times.length} turns`,
      }),
    );
    const mt = await maintainerTurns(sessionOf(n));
    rows.push(
      timesRow(`Maintainer turn at ${n.toLocaleString('en-US')} entries (beforeRequest + afterResponse)`, mt, {
        note: `median of ${mt.length} turns`,
      }),
    );
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const r of await perTurn()) {
    console.log(
      `${r.name}: median ${r.median.toFixed(3)} ms (min ${r.min.toFixed(3)}, max ${r.max.toFixed(3)}) — ${r.note}`,
    );
  }
}
