// The reference's side of `make bench-reference`: one step (common.mjs) on the reference
// implementation (oh-my-pi 18.2.3, installed in tests/reference/node_modules), run by Bun, which
// it needs. run.mjs starts it once per step and round:
//
//   bun tests/reference/ref-side.mjs --step ID --small FILE --main FILE --nocomp FILE --text FILE
//
// A session is opened the way the coding agent resumes one (SessionManager.open: parse the
// JSONL, migrate, index), from an in-memory storage given the file's text, read from disk
// inside the timed open (ctxfold's side reads the file inside its timed open too). The
// in-memory storage, not the agent's file storage: that one may write the session back (a
// migrated v1 file) into the benchmark's inputs. One Tokenizer (no model: the byte estimate)
// serves each opened session, as the agent keeps one for its model.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  CHAIN,
  chainRow,
  childArgs,
  emit,
  HOT_REPEATS,
  keptEntryId,
  median,
  oneMegabyte,
  RENDERS,
  TURNS,
  timed,
  timedAsync,
  turnMessages,
} from './common.mjs';

// The reference's modules, imported by `load()`: before the step, except in `first`, which times
// the import itself.
let prepareCompaction;
let DEFAULT_COMPACTION_SETTINGS;
let defaultConvertToLlm;
let DEFAULT_PRUNE_CONFIG;
let pruneToolOutputs;
let estimateTranscriptTokens;
let serializeConversationForSummary;
let Tokenizer;
let convertToLlm;
let SessionManager;
let MemorySessionStorage;
async function load() {
  const [compaction, messages, pruning, transcript, utils, tokenizer, appMessages, manager, storage] =
    await Promise.all([
      import('@oh-my-pi/pi-agent-core/compaction/compaction'),
      import('@oh-my-pi/pi-agent-core/compaction/messages'),
      import('@oh-my-pi/pi-agent-core/compaction/pruning'),
      import('@oh-my-pi/pi-agent-core/compaction/transcript-tokens'),
      import('@oh-my-pi/pi-agent-core/compaction/utils'),
      import('@oh-my-pi/pi-agent-core/tokenizer'),
      import('@oh-my-pi/pi-coding-agent/session/messages'),
      import('@oh-my-pi/pi-coding-agent/session/session-manager'),
      import('@oh-my-pi/pi-coding-agent/session/session-storage'),
    ]);
  ({ prepareCompaction, DEFAULT_COMPACTION_SETTINGS } = compaction);
  ({ defaultConvertToLlm } = messages);
  ({ DEFAULT_PRUNE_CONFIG, pruneToolOutputs } = pruning);
  ({ estimateTranscriptTokens } = transcript);
  ({ serializeConversationForSummary } = utils);
  ({ Tokenizer } = tokenizer);
  ({ convertToLlm } = appMessages);
  ({ SessionManager } = manager);
  ({ MemorySessionStorage } = storage);
}

const args = childArgs(process.argv.slice(2));
const gc = () => Bun.gc(true);

/** A session file: an opener of fresh SessionManagers on it, each reading the file. */
function sessionFile(file) {
  // The session's own path inside the in-memory storage (its folder is the session dir).
  const where = path.join('/bench-reference', path.basename(file));
  return {
    open() {
      const text = readFileSync(file, 'utf8');
      const storage = new MemorySessionStorage();
      storage.writeTextSync(where, text);
      return SessionManager.open(where, path.dirname(where), storage, { suppressBreadcrumb: true });
    },
  };
}

/** The context-token figures ctxfold's `contextTokens` gives: anchored total and local estimate. */
function contextTokens(messages, tokenizer) {
  return {
    tokens: estimateTranscriptTokens(messages, tokenizer),
    estimated: tokenizer.countMessages(messages),
  };
}

const prepare = (sm, tokenizer) => prepareCompaction(sm.getBranch(), DEFAULT_COMPACTION_SETTINGS, undefined, tokenizer);

const prune = (sm, tokenizer) => pruneToolOutputs(sm.getBranch(), tokenizer, DEFAULT_PRUNE_CONFIG);

/**
 * What the reference computes for a compaction before its first summary request (it has no
 * separate plan step): the preparation, then the summarized messages converted and serialized
 * as `compact()` sends them.
 */
function planEquivalent(sm, tokenizer) {
  const prep = prepare(sm, tokenizer);
  let chars = 0;
  if (prep) {
    chars += serializeConversationForSummary(defaultConvertToLlm(prep.messagesToSummarize)).length;
    if (prep.isSplitTurn) chars += serializeConversationForSummary(defaultConvertToLlm(prep.turnPrefixMessages)).length;
  }
  return chars;
}

async function hot(file, label) {
  const session = sessionFile(file);
  const sm = await session.open();
  const tokenizer = new Tokenizer();
  const first = prepare(sm, tokenizer);
  const prepares = [];
  for (let i = 0; i < HOT_REPEATS; i++) prepares.push(timed(() => prepare(sm, tokenizer))[0]);
  const plans = [];
  let chars = 0;
  for (let i = 0; i < HOT_REPEATS; i++) {
    const [t, n] = timed(() => planEquivalent(sm, tokenizer));
    plans.push(t);
    chars = n;
  }
  return [
    {
      name: `${label}: prepareCompaction, repeated`,
      ms: median(prepares),
      note: `${first?.messagesToSummarize.length ?? 0} messages to summarize`,
    },
    {
      name: `${label}: planCompaction, repeated`,
      ms: median(plans),
      note: `prepare + serialize: ${chars} chars`,
    },
  ];
}

/** The reference's side of a `chain-*` step (ours-side.mjs has the same for ctxfold). */
async function chain(id, file) {
  const session = sessionFile(file);
  const times = {};
  const t0 = performance.now();
  let t = t0;
  const lap = (op) => {
    const now = performance.now();
    times[op] = now - t;
    t = now;
  };
  const sm = await session.open();
  lap('open');
  const tokenizer = new Tokenizer();
  const c = contextTokens(sm.buildSessionContext().messages, tokenizer);
  lap('estimate');
  const p = prepare(sm, tokenizer);
  lap('prepare');
  const r = prune(sm, tokenizer);
  lap('prune');
  const chars = planEquivalent(sm, tokenizer);
  lap('plan');
  const notes = {
    open: `${sm.getEntries().length} entries`,
    estimate: `${c.tokens} tokens`,
    prepare: `${p?.messagesToSummarize.length ?? 0} to summarize`,
    prune: `${r.prunedCount} results, ${r.tokensSaved} tokens saved`,
    plan: `prepare + serialize: ${chars} chars`,
  };
  return [
    ...CHAIN.map((op) => ({ name: chainRow(id, op), ms: times[op], note: notes[op] })),
    { name: chainRow(id, CHAIN.join(' → ')), ms: t - t0 },
  ];
}

const steps = {
  async first() {
    const session = sessionFile(args.small);
    const t0 = performance.now();
    await load();
    const t1 = performance.now();
    const sm = await session.open();
    const t2 = performance.now();
    const chars = planEquivalent(sm, new Tokenizer());
    const t3 = performance.now();
    return [
      { name: 'first: import', ms: t1 - t0 },
      { name: 'first: open', ms: t2 - t1 },
      { name: 'first: plan', ms: t3 - t2, note: `prepare + serialize: ${chars} chars` },
      { name: 'first: open → plan', ms: t3 - t1 },
      { name: 'first: import → open → plan', ms: t3 - t0 },
      { name: 'first: process start → plan', ms: t3 },
    ];
  },

  'chain-small': () => chain('chain-small', args.small),
  'chain-nocomp': () => chain('chain-nocomp', args.nocomp),
  'chain-main': () => chain('chain-main', args.main),

  async turn() {
    const sm = await sessionFile(args.main).open();
    const tokenizer = new Tokenizer();
    const kept = keptEntryId(sm.getBranch().map((e) => ({ id: e.id, type: e.type, role: e.message?.role })));
    sm.appendCompaction('Summary of the earlier work.', undefined, kept, 150_000);
    gc();
    const times = [];
    let size = 0;
    for (let i = 0; i < TURNS; i++) {
      const [user, assistant] = turnMessages(i);
      const [t] = timed(() => {
        sm.appendMessage(user);
        sm.appendMessage(assistant);
        const messages = sm.buildSessionContext().messages;
        contextTokens(messages, tokenizer);
        size = convertToLlm(messages).length;
      });
      times.push(t);
    }
    return [
      { name: 'first turn after the compaction', ms: times[0], note: `kept from ${kept}` },
      { name: `per turn (median of ${TURNS})`, ms: median(times), note: `${size} LLM messages at the end` },
    ];
  },

  async rss() {
    const [t, sm] = await timedAsync(() => sessionFile(args.huge).open());
    const note = `${sm.getEntries().length} entries`;
    // Peak resident memory of the process so far (KiB), the open included.
    const rss = process.resourceUsage().maxRSS / 1024;
    return [
      { name: 'rss: open', ms: t, note },
      { name: 'rss: peak RSS of the process (MiB)', ms: rss, note: 'the open included' },
    ];
  },

  hot: () => hot(args.main, 'bench session'),
  'hot-nocomp': () => hot(args.nocomp, 'no compactions'),

  async frames() {
    const { renderMany, resolveShape } = await import('@oh-my-pi/snapcompact');
    const text = oneMegabyte(readFileSync(args.text, 'utf8'));
    const shape = resolveShape(undefined, '11on16-bw');
    await renderMany(text, { shape });
    const perFrame = [];
    let frames = [];
    for (let i = 0; i < RENDERS; i++) {
      const [t, f] = await timedAsync(() => renderMany(text, { shape }));
      frames = f;
      perFrame.push(t / f.length);
    }
    const ms = median(perFrame);
    return [
      {
        name: `snapcompact 11on16-bw ${shape.frameSize} px, per frame`,
        ms,
        note: `${(1000 / ms).toFixed(0)} frames/s, ${frames.length} frames`,
      },
    ];
  },
};

if (args.step !== 'first') await load();
emit(await steps[args.step]());
