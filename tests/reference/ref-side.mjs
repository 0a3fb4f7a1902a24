// The reference's side of `make bench-reference`: one step (common.mjs) on the reference
// implementation (oh-my-pi 18.2.3, installed in tests/reference/node_modules), run by Bun, which
// it needs. run.mjs starts it once per step and round:
//
//   bun tests/reference/ref-side.mjs --step ID --main FILE --nocomp FILE --text FILE
//
// A session is opened the way the coding agent resumes one (SessionManager.open: parse the
// JSONL, migrate, index), from an in-memory storage that holds the file's text, so no disk read
// is timed (ctxfold's side gets the bytes in memory too). One Tokenizer (no model: the byte
// estimate) serves each opened session, as the agent keeps one for its model.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_COMPACTION_SETTINGS, prepareCompaction } from '@oh-my-pi/pi-agent-core/compaction/compaction';
import { defaultConvertToLlm } from '@oh-my-pi/pi-agent-core/compaction/messages';
import { DEFAULT_PRUNE_CONFIG, pruneToolOutputs } from '@oh-my-pi/pi-agent-core/compaction/pruning';
import { estimateTranscriptTokens } from '@oh-my-pi/pi-agent-core/compaction/transcript-tokens';
import { serializeConversationForSummary } from '@oh-my-pi/pi-agent-core/compaction/utils';
import { Tokenizer } from '@oh-my-pi/pi-agent-core/tokenizer';
import { convertToLlm } from '@oh-my-pi/pi-coding-agent/session/messages';
import { SessionManager } from '@oh-my-pi/pi-coding-agent/session/session-manager';
import { MemorySessionStorage } from '@oh-my-pi/pi-coding-agent/session/session-storage';
import { renderMany, resolveShape } from '@oh-my-pi/snapcompact';
import {
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

const args = childArgs(process.argv.slice(2));
const gc = () => Bun.gc(true);

/** A loaded file: its path and text, and an opener of fresh SessionManagers on it. */
function sessionFile(file) {
  const text = readFileSync(file, 'utf8');
  // The session's own path inside the in-memory storage (its folder is the session dir).
  const where = path.join('/bench-reference', path.basename(file));
  return {
    text,
    open() {
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

const steps = {
  async open() {
    const session = sessionFile(args.main);
    let [first, sm] = await timedAsync(() => session.open());
    const entries = sm.getEntries().length;
    sm = null;
    gc();
    const [warm] = await timedAsync(() => session.open());
    return [
      { name: 'open, first in process', ms: first },
      { name: 'open', ms: warm, note: `${entries} entries` },
    ];
  },

  async estimate() {
    const sm = await sessionFile(args.main).open();
    gc();
    const tokenizer = new Tokenizer();
    const [t, c] = timed(() => contextTokens(sm.buildSessionContext().messages, tokenizer));
    return [{ name: 'first context-token estimate', ms: t, note: `${c.tokens} tokens, ${c.estimated} estimated` }];
  },

  async prepare() {
    const sm = await sessionFile(args.main).open();
    gc();
    const [t, p] = timed(() => prepare(sm, new Tokenizer()));
    return [
      {
        name: 'first prepareCompaction',
        ms: t,
        note: `${p?.messagesToSummarize.length ?? 0} to summarize, keep from ${p?.firstKeptEntryId}`,
      },
    ];
  },

  async prune() {
    const sm = await sessionFile(args.main).open();
    gc();
    const [t, r] = timed(() => prune(sm, new Tokenizer()));
    return [{ name: 'threshold prune', ms: t, note: `${r.prunedCount} results, ${r.tokensSaved} tokens saved` }];
  },

  async chain() {
    const session = sessionFile(args.main);
    await session.open(); // warm-up: the chain's open is a warm one, as in `open`
    gc();
    const [t, r] = await timedAsync(async () => {
      const sm = await session.open();
      const tokenizer = new Tokenizer();
      contextTokens(sm.buildSessionContext().messages, tokenizer);
      prepare(sm, tokenizer);
      return prune(sm, tokenizer);
    });
    return [{ name: 'open → estimate → prepare → prune', ms: t, note: `${r.prunedCount} results pruned` }];
  },

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

  hot: () => hot(args.main, 'bench session'),
  'hot-nocomp': () => hot(args.nocomp, 'no compactions'),

  async frames() {
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

emit(await steps[args.step]());
