// ctxfold's side of `make bench-reference`: one step (common.mjs) on the built package under
// Node.js. run.mjs starts it once per step and round:
//
//   node --expose-gc tests/reference/ours-side.mjs --step ID --small FILE --main FILE --nocomp FILE --text FILE
//
// The package is `ctxfold` as tests/ resolves it (tests/node_modules/ctxfold -> pkg/), or the
// module CTXFOLD_PKG names (run.mjs sets it from PKG=). A session is opened from its file the
// way docs/guide/compaction.md tells a Node.js host to: `Session.fromAsyncReader` with
// `FileHandle.read` writing the file straight into the module's memory, the read inside the
// timed open (the reference's side reads the file inside its timed open too).
//
// The default export runs every step once and returns tests/bench rows, so that
// tests/bench/ab.mjs can alternate two builds on these steps in one process:
//   node tests/bench/ab.mjs PKG_A PKG_B tests/reference/ours-side.mjs
import { closeSync, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { open as fsOpen } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CHAIN,
  chainRow,
  childArgs,
  emit,
  HOT_REPEATS,
  keptEntryId,
  median,
  NOW,
  oneMegabyte,
  RENDERS,
  readWhole,
  STEPS,
  TURNS,
  timed,
  turnMessages,
} from './common.mjs';

// The package, imported by `load()`: before the step in child mode, except in `first`, which
// times the import itself.
let api;
let Session;
async function load() {
  api ??= await import(process.env.CTXFOLD_PKG || 'ctxfold');
  Session = api.Session;
}
const gc = () => globalThis.gc?.();

// The reference's core default (no keep boundary): the whole active path is pruned.
const PRUNE = { keepBoundaryId: false };

/**
 * Opens the session file at `file` (a path) as a Node.js host does (`fromAsyncReader` with
 * `FileHandle.read`: the file read on libuv's thread into the module's memory while the lines
 * read so far are scanned; a build without it: `fromReader` + `readSync`), or from bytes
 * already in memory (`fromJsonl`).
 */
async function open(file) {
  if (typeof file !== 'string') return Session.fromJsonl(file);
  if (typeof Session.fromAsyncReader !== 'function') return openWithReadSync(file);
  const handle = await fsOpen(file, 'r');
  try {
    const { size } = await handle.stat();
    return await Session.fromAsyncReader(size, (view, position) =>
      handle.read(view, 0, view.byteLength, position).then((r) => r.bytesRead),
    );
  } finally {
    await handle.close();
  }
}

/** `open` for a build without `fromAsyncReader`. */
function openWithReadSync(file) {
  const fd = openSync(file, 'r');
  try {
    const { size } = fstatSync(fd);
    return Session.fromReader(size, (view) => readWhole(fd, view, size));
  } finally {
    closeSync(fd);
  }
}

async function hot(bytes, label) {
  const s = await open(bytes);
  try {
    const first = s.prepareCompaction();
    const prepares = [];
    for (let i = 0; i < HOT_REPEATS; i++) prepares.push(timed(() => s.prepareCompaction())[0]);
    const plans = [];
    let chars = 0;
    for (let i = 0; i < HOT_REPEATS; i++) {
      const [t, plan] = timed(() => s.planCompaction());
      plans.push(t);
      chars = plan.pending.reduce((n, r) => n + r.prompt.length, 0);
      plan.free();
    }
    return [
      {
        name: `${label}: prepareCompaction, repeated`,
        ms: median(prepares),
        note: `${first.messagesToSummarize.length} messages to summarize`,
      },
      { name: `${label}: planCompaction, repeated`, ms: median(plans), note: `prompts written: ${chars} chars` },
    ];
  } finally {
    s.free();
  }
}

/**
 * open → estimate → prepare → prune → plan on `bytes`, each operation timed on its first call
 * after the open (nothing opened before it in the process): a row per operation and the whole.
 */
async function chain(id, bytes) {
  const times = {};
  const t0 = performance.now();
  let t = t0;
  const lap = (op) => {
    const now = performance.now();
    times[op] = now - t;
    t = now;
  };
  const s = await open(bytes);
  lap('open');
  const c = s.contextTokens();
  lap('estimate');
  const p = s.prepareCompaction();
  lap('prepare');
  const r = s.prune(PRUNE);
  lap('prune');
  const plan = s.planCompaction();
  lap('plan');
  const whole = t - t0;
  const notes = {
    open: `${s.size} entries`,
    estimate: `${c.tokens} tokens`,
    prepare: `${p.messagesToSummarize.length} to summarize`,
    prune: `${r.prunedCount} results, ${r.tokensSaved} tokens saved`,
    plan: `prompts written: ${plan.pending.reduce((n, q) => n + q.prompt.length, 0)} chars`,
  };
  plan.free();
  s.free();
  return [
    ...CHAIN.map((op) => ({ name: chainRow(id, op), ms: times[op], note: notes[op] })),
    { name: chainRow(id, CHAIN.join(' → ')), ms: whole },
  ];
}

/** Each step: `(files) => rows`; `files` holds the bytes (or text) the step reads. */
const steps = {
  async first({ small }) {
    const t0 = performance.now();
    await load();
    const t1 = performance.now();
    const s = await open(small);
    const t2 = performance.now();
    const plan = s.planCompaction();
    const t3 = performance.now();
    const note = `${plan.pending.length} summary requests`;
    plan.free();
    s.free();
    return [
      { name: 'first: import', ms: t1 - t0 },
      { name: 'first: open', ms: t2 - t1 },
      { name: 'first: plan', ms: t3 - t2, note },
      { name: 'first: open → plan', ms: t3 - t1 },
      { name: 'first: import → open → plan', ms: t3 - t0 },
      // performance.now() counts from the start of the process in Node.js and in Bun.
      { name: 'first: process start → plan', ms: t3 },
    ];
  },

  'chain-small': ({ small }) => chain('chain-small', small),
  'chain-nocomp': ({ nocomp }) => chain('chain-nocomp', nocomp),
  'chain-main': ({ main }) => chain('chain-main', main),

  async turn({ main }) {
    const s = await open(main);
    try {
      const info = new Map(s.index().map((e) => [e.id, e]));
      const kept = keptEntryId(s.pathTo(s.leafId).map((id) => info.get(id)));
      s.appendCompaction(
        { summary: 'Summary of the earlier work.', firstKeptEntryId: kept, tokensBefore: 150_000 },
        {
          now: NOW,
        },
      );
      gc();
      const times = [];
      let size = 0;
      for (let i = 0; i < TURNS; i++) {
        const [user, assistant] = turnMessages(i);
        const [t] = timed(() => {
          s.appendMessage(user, { now: user.timestamp });
          s.appendMessage(assistant, { now: assistant.timestamp });
          s.contextTokens();
          size = s.toLlmMessages().length;
        });
        times.push(t);
      }
      return [
        { name: 'first turn after the compaction', ms: times[0], note: `kept from ${kept}` },
        { name: `per turn (median of ${TURNS})`, ms: median(times), note: `${size} LLM messages at the end` },
      ];
    } finally {
      s.free();
    }
  },

  async rss({ huge }) {
    const t0 = performance.now();
    const s = await open(huge);
    const t = performance.now() - t0;
    const note = `${s.size} entries`;
    // Peak resident memory of the process so far (KiB), the open included.
    const rss = process.resourceUsage().maxRSS / 1024;
    s.free();
    return [
      { name: 'rss: open', ms: t, note },
      { name: 'rss: peak RSS of the process (MiB)', ms: rss, note: 'the open included' },
    ];
  },

  hot: ({ main }) => hot(main, 'bench session'),
  'hot-nocomp': ({ nocomp }) => hot(nocomp, 'no compactions'),

  frames({ text }) {
    const options = { shape: '11on16-bw' };
    api.renderFrames(text, options);
    const perFrame = [];
    let frames = [];
    for (let i = 0; i < RENDERS; i++) {
      const [t, f] = timed(() => api.renderFrames(text, options));
      frames = f;
      perFrame.push(t / f.length);
    }
    const ms = median(perFrame);
    return [
      {
        name: `snapcompact 11on16-bw ${frames[0].width} px, per frame`,
        ms,
        note: `${(1000 / ms).toFixed(0)} frames/s, ${frames.length} frames`,
      },
    ];
  },
};

/** What a step reads: the session file's path (opened in the step), or the megabyte of text. */
function inputs(step, files) {
  if (step.session === 'text') return { text: oneMegabyte(readFileSync(files.text, 'utf8')) };
  return { [step.session]: files[step.session] };
}

/** The real pi session of the conformance data beside the checkout (null when it is missing). */
export const SMALL_SESSION = fileURLToPath(
  new URL('../../../shared/conformance/large-session/session.jsonl', import.meta.url),
);

/**
 * Every step once, as rows of a tests/bench file (for tests/bench/ab.mjs): the sessions are the
 * bench's own (tests/out/bench/, generated when missing), the text the conformance input. In one
 * process: only the first round's `first` and chain rows are first calls.
 */
export default async function () {
  await load();
  const { generatedSession } = await import('../js/support/generated.mjs');
  const { outDir } = await import('../js/support/project.mjs');
  generatedSession('bench-50k.jsonl', ['--preset', 'bench'], { release: true });
  generatedSession('bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions'], { release: true });
  const files = {
    main: path.join(outDir, 'bench', 'bench-50k.jsonl'),
    nocomp: path.join(outDir, 'bench', 'bench-50k-nocomp.jsonl'),
  };
  if (existsSync(SMALL_SESSION)) files.small = SMALL_SESSION;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const input = path.join(here, '../../../shared/conformance/snapcompact/input.txt');
  const rows = [];
  for (const step of STEPS) {
    if (step.optIn || (step.session === 'small' && !files.small)) continue;
    if (step.session === 'text') {
      let unit;
      try {
        unit = readFileSync(input, 'utf8');
      } catch {
        continue; // no conformance data beside the checkout: no frames row
      }
      files.text = oneMegabyte(unit);
    }
    for (const row of await steps[step.id](files)) {
      if (row.name === 'first: process start → plan') continue; // one process holds every round here
      const name = row.name.startsWith(`${step.id}:`) ? row.name : `${step.id}: ${row.name}`;
      rows.push({ name, median: row.ms, unit: 'ms', samples: 1, note: row.note });
    }
  }
  return rows;
}

// Child mode (run.mjs): one step, its rows on the last line.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = childArgs(process.argv.slice(2));
  const step = STEPS.find((s) => s.id === args.step);
  const files = inputs(step, args);
  if (step.id !== 'first') await load();
  emit(await steps[step.id](files));
}
