// What both sides of `make bench-reference` share: the steps, their parameters, the messages a
// turn appends and the child protocol. ours-side.mjs (ctxfold, Node.js) and ref-side.mjs (the
// reference, Bun) each implement every step the same way with their own library; run.mjs starts
// one child per side, step and round. Plain JavaScript that both runtimes load.
import { readSync } from 'node:fs';

/**
 * The steps in the order run.mjs prints them; `session` is the file each one opens (`small`: the
 * real pi session of the conformance data, `nocomp` and `main`: the generated 50,000-entry
 * sessions without and with compactions, `huge`: the generated 200,000-entry one, `text`: the
 * snapcompact input; a step marked `optIn` runs only when named). No step opens its
 * session before the timed work: a `chain-*` step times, in one fresh process, the first call of
 * each operation after the first open, and `first` includes the import of the library.
 */
export const STEPS = [
  { id: 'first', session: 'small', what: 'import the library, open the session, plan a compaction (fresh process)' },
  { id: 'chain-small', session: 'small', what: 'open → estimate → prepare → prune → plan, each timed, and whole' },
  { id: 'chain-nocomp', session: 'nocomp', what: 'the same on the 50,000-entry session without compactions' },
  { id: 'chain-main', session: 'main', what: 'the same on the 50,000-entry session with 209 compactions' },
  { id: 'turn', session: 'main', what: 'agent turns after a compaction that keeps 199 messages' },
  { id: 'hot', session: 'main', what: 'repeated prepareCompaction / planCompaction' },
  { id: 'hot-nocomp', session: 'nocomp', what: 'the same on the session without compactions' },
  { id: 'frames', session: 'text', what: 'snapcompact 11on16-bw frames of 1 MB of text' },
  // Only when named (it generates and opens a 564 MB file): the peak memory of an open.
  {
    id: 'rss',
    session: 'huge',
    optIn: true,
    what: 'open the 200,000-entry session in a fresh process: the time and the peak RSS',
  },
];

/** The operations of a `chain-*` step, in order (each timed on its first call in the process). */
export const CHAIN = ['open', 'estimate', 'prepare', 'prune', 'plan'];

/** Row names of a chain step on `label`: `label: op` per operation, `label: chain` for the whole. */
export const chainRow = (label, op) => `${label}: ${op}`;

/** Agent turns timed one by one in `turn` (the first is also reported alone). */
export const TURNS = 10;
/** Timed repeats of each hot operation, after one untimed first call. */
export const HOT_REPEATS = 11;
/** Timed renders of the megabyte in `frames`, after one untimed render. */
export const RENDERS = 3;
/** Messages the compaction of `turn` keeps (about): with its summary the context holds 200. */
export const KEPT_MESSAGES = 199;
/** Fixed clock of the appended entries (ms since the epoch). */
export const NOW = 1_800_000_000_000;

/** Median of numbers (the mean of the two middle ones for an even count). */
/**
 * Reads the file `fd` (of `size` bytes) into `view` from its start with `readSync`, as the
 * guide's `Session.fromReader` example does: the bytes read.
 */
export function readWhole(fd, view, size) {
  let at = 0;
  while (at < size) {
    const n = readSync(fd, view, at, size - at, at);
    if (n === 0) break;
    at += n;
  }
  return at;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Runs `fn` once: `[milliseconds, its value]`. */
export function timed(fn) {
  const t0 = performance.now();
  const value = fn();
  return [performance.now() - t0, value];
}

/** The same for an async `fn`. */
export async function timedAsync(fn) {
  const t0 = performance.now();
  const value = await fn();
  return [performance.now() - t0, value];
}

/**
 * The id of the entry a compaction keeps from so that about `KEPT_MESSAGES` messages stay: the
 * `KEPT_MESSAGES`-th `message` entry counted back from the leaf, or the nearest user or
 * assistant message before it (a cut point never leaves a tool result without its call).
 * `path` is root → leaf, each item `{ id, type, role }`.
 */
export function keptEntryId(path) {
  let seen = 0;
  for (let i = path.length - 1; i >= 0; i--) {
    if (path[i].type !== 'message') continue;
    seen++;
    if (seen >= KEPT_MESSAGES && (path[i].role === 'user' || path[i].role === 'assistant')) return path[i].id;
  }
  throw new Error(`the active path holds fewer than ${KEPT_MESSAGES} messages`);
}

/** The two messages of agent turn `i`: a user prompt and the assistant's answer with usage. */
export function turnMessages(i) {
  const timestamp = NOW + i * 2_000;
  const user = {
    role: 'user',
    content: [{ type: 'text', text: `Turn ${i}: run the tests again and tell me which ones still fail.` }],
    timestamp,
  };
  const assistant = {
    role: 'assistant',
    content: [{ type: 'text', text: `Turn ${i}: all 412 tests pass now; the two flaky ones were fixed by the retry.` }],
    api: 'anthropic-messages',
    provider: 'anthropic',
    model: 'claude-opus-4-7',
    usage: {
      input: 1_000 + i,
      output: 40,
      cacheRead: 90_000,
      cacheWrite: 500,
      totalTokens: 91_540 + i,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: 'stop',
    timestamp: timestamp + 1_000,
  };
  return [user, assistant];
}

/** 1 MB of text for the frames step: `unit` repeated (as tests/bench/snapcompact.bench.mjs does). */
export function oneMegabyte(unit) {
  let text = '';
  while (text.length < 1_000_000) text += `${unit}\n`;
  return text;
}

/** `--step ID --small FILE --main FILE --nocomp FILE --text FILE` → `{ step, small, main, nocomp, text }`. */
export function childArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  if (!STEPS.some((s) => s.id === out.step)) throw new Error(`unknown step ${out.step}`);
  return out;
}

/**
 * What a child prints last, on a line of its own: the rows of its step, each
 * `{ name, ms, note? }` (`ms` one figure of this round; per frame for `frames`).
 */
export function emit(rows) {
  console.log(`\n${JSON.stringify(rows)}`);
}
