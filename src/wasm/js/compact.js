// The async shell of compaction: `session.compact(options)`.
//
// The Rust core plans and commits (sans-IO) and decides retries (`retryStep`, spec: compaction
// §8.3); this module only awaits: the hooks (§8.8), the summarizer callbacks or the remote
// endpoint (§5.8, with the runtime's `fetch`), timers and the AbortSignal. The commit is the
// last step and the only one that writes, so any failure leaves the session as it was.
//
// A compaction walks a list of methods (`compaction.methodOrder`, §8.3, §8.6): a method that
// cannot run here is skipped, one that fails hands over to the next, and the result names the
// method that ran.
import { abortError, codedError, messageOf, statusOf, wrapError } from './errors.js';
import { runAnthropic } from './native-anthropic.js';
import { nativeLanes, runOpenaiNative } from './native-openai.js';
import { requireRaw } from './raw.js';
import { contextSnapshot } from './report.js';
import { callHook, handlers, pick, summarizeOne } from './summarizer.js';

/** Sessions with a compaction in flight. */
const running = new WeakSet();

/** The events' `action` of each method (spec: compaction §8.7). */
export const ACTION_OF = {
  remote: 'remote',
  soft: 'context-full',
  snapcompact: 'snapcompact',
  handoff: 'handoff',
  shake: 'shake',
};

function emit(hooks, event) {
  for (const f of handlers(hooks, 'onEvent')) {
    try {
      f(event);
    } catch {
      // Observers cannot stop a compaction.
    }
  }
}

/** The reading model's id, provider, window and input, from `model` (id or object) and the options. */
function modelOf(o) {
  const m = o.model;
  const object = m !== null && typeof m === 'object';
  return {
    id: object ? m.id : m,
    provider: o.provider ?? (object ? m.provider : undefined),
    contextWindow: o.contextWindow ?? (object ? m.contextWindow : undefined),
    input: o.input ?? (object ? m.input : undefined),
  };
}

/** The summarizer callbacks of `o`, as summarizeOne's candidates. */
function callbacks(o) {
  return [o.summarize]
    .flat()
    .filter((f) => typeof f === 'function')
    .map((f) => ({ summarize: f }));
}

/** The remote endpoint (the host's, else the settings'), as summarizeOne's only candidate. */
function endpointOf(o) {
  const url = o.remoteEndpoint ?? o.settings?.remoteEndpoint;
  return typeof url === 'string' && url !== ''
    ? [{ remote: { url, headers: o.headers ?? {}, model: modelOf(o).id } }]
    : [];
}

/**
 * Whether a provider-native lane may serve `remote` for the model of `o` (`{model, provider,
 * settings}`): an OpenAI Responses lane, or Anthropic server compaction for an eligible Claude
 * model from `liveTokens` (spec: compaction §8.3, §13), as the core decides (`nativeLanes`).
 */
export function nativeLane(o, liveTokens) {
  try {
    return nativeLanes(o, liveTokens).usable;
  } catch {
    // Bad settings surface from the walk or the ContextManager with their own error.
    return false;
  }
}

/** A count for the walk: a finite non-negative number, else left out. */
function count(v) {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/**
 * The core's method walk of this compaction (spec: compaction §8.3, §8.6): which methods run,
 * in which order, what ends the walk. This module only reports what the host has: callbacks,
 * routes, the model, the live size in the provider's tokens.
 */
function newWalk(session, o) {
  const model = modelOf(o);
  const estimated = contextSnapshot(session).tokens;
  const input = {
    reason: o.reason ?? 'manual',
    methods: Array.isArray(o.methods) ? o.methods.filter((m) => typeof m === 'string') : undefined,
    explicit: typeof o.explicit === 'string' ? o.explicit : undefined,
    model: {
      provider: typeof model.provider === 'string' ? model.provider : '',
      id: typeof model.id === 'string' ? model.id : '',
      contextWindow: count(model.contextWindow),
      input: Array.isArray(model.input) ? model.input.filter((i) => typeof i === 'string') : undefined,
    },
    summarizer: callbacks(o).length > 0,
    remoteEndpoint: typeof o.remoteEndpoint === 'string' && o.remoteEndpoint !== '',
    nativeLane: nativeLane(o, o.liveTokens),
    remoteBlocked: Boolean(o.remoteBlocked),
    excludeSnapcompact: Boolean(o.excludeSnapcompact),
    customInstructions: typeof o.customInstructions === 'string' && o.customInstructions !== '',
    // An automatic handoff waits for the end of a turn (the core's rule; it asks the session).
    midTurn: session.turnUnderWay(),
    // The live context in the provider's tokens: the host's figure, else the core's estimate.
    liveTokens: count(o.liveTokens) ?? estimated,
    // The core's own estimate beside it: how far the host's figure runs above it.
    estimatedTokens: estimated,
    overheadTokens: count(o.nonMessageTokens),
    providerRatio: providerRatio(o),
    imageRatio: positiveRatio(o.imageRatio),
  };
  return new (requireRaw().WasmWalk)(JSON.stringify(input), JSON.stringify(o.settings ?? {}));
}

/** The session.compacting hooks' additions (context lines, prompt override, preserveData). */
async function hookExtras(session, o, preparation, signal) {
  const extra = {};
  const context = [];
  for (const f of handlers(o.hooks, 'session.compacting')) {
    const answer = await callHook(f, { sessionId: session.header.id, preparation }, signal);
    if (Array.isArray(answer?.context)) context.push(...answer.context.filter((l) => typeof l === 'string'));
    if (typeof answer?.prompt === 'string') extra.promptOverride = answer.prompt;
    if (answer?.preserveData && typeof answer.preserveData === 'object') {
      extra.preserveData = { ...extra.preserveData, ...answer.preserveData };
    }
  }
  if (context.length) extra.extraContext = context;
  return extra;
}

/**
 * Answers every pending request of `work`, round by round: a round's requests in parallel, or
 * one after the other with `calls.sequential` (the remote endpoint: its first failure ends the
 * method, so a failing endpoint sees no more POSTs than one request's retry policy allows).
 */
async function answerAll(work, candidates, calls, decorate = (r) => r) {
  const { signal, wording, sequential } = calls;
  while (!work.isComplete) {
    const pending = work.pending;
    if (pending.length === 0) throw codedError('E_SUMMARIZER', 'the plan is stuck without pending requests');
    let outcomes;
    if (sequential) {
      outcomes = [];
      for (const r of pending) {
        try {
          outcomes.push({ status: 'fulfilled', value: await summarizeOne(decorate(r), candidates, calls) });
        } catch (reason) {
          outcomes.push({ status: 'rejected', reason });
          break;
        }
      }
    } else {
      outcomes = await Promise.allSettled(pending.map((r) => summarizeOne(decorate(r), candidates, calls)));
    }
    if (signal.aborted) throw abortError();
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'rejected') {
        const err = outcome.reason;
        throw err?.code ? err : wrapError('E_SUMMARIZER', wording(messageOf(err)), err);
      }
      if (!outcome.value.shrink) {
        work.answer(pending[i].id, outcome.value.text);
        return;
      }
      try {
        work.retrySmaller(pending[i].id);
      } catch (err) {
        throw wrapError('E_SUMMARIZER', wording(messageOf(err)), err);
      }
    });
  }
}

/**
 * The handoff request as the live turn would send it (spec: compaction §5.9): the host's
 * system prompt and tools, the real history, then one agent-attributed user message with the
 * instruction, and no tool calls — so the provider's prompt cache of the live turn is read.
 */
function cachePrefixed(session, o) {
  if (o.systemPrompt === undefined && o.tools === undefined) return (r) => r;
  const history = session.toLlmMessages();
  const instruction = requireRaw().handoffPrompt(o.customInstructions);
  const user = { role: 'user', content: [{ type: 'text', text: instruction }], attribution: 'agent' };
  return (r) => ({
    ...r,
    systemPrompt: o.systemPrompt ?? r.systemPrompt,
    tools: o.tools ?? [],
    toolChoice: 'none',
    messages: [...history, user],
  });
}

/** A plan for the walk's `plan` step, with the hooks' additions `extra`. */
function planMethod(session, step, o, extra) {
  const methodSettings = { ...o.settings, strategy: step.strategy, remoteEnabled: step.remoteEnabled };
  const planOptions = pick(o, ['customInstructions', 'leafId']);
  const model = modelOf(o);
  if (model.provider !== undefined) planOptions.provider = model.provider;
  if (model.contextWindow !== undefined) planOptions.contextWindow = model.contextWindow;
  // The reading model: a snapcompact commit resolves its archive from the plan.
  if (o.model !== undefined)
    planOptions.model = typeof o.model === 'string' ? o.model : { id: o.model.id, api: o.model.api };
  return session.planCompaction(methodSettings, {
    ...planOptions,
    ...extra,
    method: step.method === 'remote' ? 'remote' : undefined,
  });
}

/** The summarize-call plumbing of one method: signal, retry settings, call options, wording. */
function callsOf(o, signal) {
  return {
    signal,
    retryJson: o.retry === undefined ? undefined : JSON.stringify(o.retry),
    // Passed through to every summarize call (initiator override, session id, metadata).
    callOptions: pick(o, ['initiator', 'sessionId', 'metadata']),
    // A failure's message as the `auto_compaction_end` error text (spec §8.3 prefixes).
    wording: (message) => requireRaw().compactionErrorMessage(o.reason ?? 'manual', message),
  };
}

/** The walk's `summarize` step on the plan `work` (a native lane commits: its result, else undefined). */
async function summarize(session, step, work, o, signal) {
  const calls = callsOf(o, signal);
  switch (step.route) {
    case 'native': {
      // Provider-native lanes (spec §5.7 step 1, §13): the OpenAI lanes for a Responses model,
      // else Anthropic server compaction; `null` when neither applies to this plan.
      return (await runOpenaiNative(work, o, signal)) ?? (await runAnthropic(work, o, signal)) ?? null;
    }
    case 'endpoint':
      await answerAll(work, endpointOf(o), { ...calls, sequential: true });
      return undefined;
    default:
      if (step.method === 'handoff') {
        const handoffCalls = { ...calls, callOptions: { initiator: 'agent', ...calls.callOptions } };
        await answerAll(work, callbacks(o), handoffCalls, cachePrefixed(session, o));
      } else {
        await answerAll(work, callbacks(o), calls);
      }
      return undefined;
  }
}

/** The walk's `commit` step: snapcompact prints its frames, a handoff starts the new session. */
async function commit(session, walk, step, work, o, signal) {
  if (step.method === 'snapcompact') {
    // No summarizer: the commit prints the history onto frames (spec: snapcompact §9.2). The
    // plan carries the reading model, so a plain plan/commit archives the same; `snapcompact`
    // only overrides (and the request's own tokens narrow the frame cap).
    return session.commitCompaction(work, { snapcompact: archiveOptions(walk, work, o), now: o.now });
  }
  if (step.method === 'handoff') {
    // An empty document fails in summarizeOne, so the walk falls back to the next method.
    const next = session.commitHandoff(work, { sessionId: o.handoffSessionId, now: o.now });
    const document = next.entries()[0]?.content ?? '';
    if (o.saveArtifact && o.settings?.handoffSaveToDisk === true && (o.reason ?? 'manual') !== 'manual') {
      const name = `handoff-${new Date().toISOString().replace(/[:.]/g, '-')}.md`;
      await callHook(o.saveArtifact, { name, text: document, kind: 'handoff' }, signal);
    }
    return { entryId: null, handoff: true, session: next, document, fromExtension: false };
  }
  return session.commitCompaction(work, { now: o.now });
}

/**
 * The snapcompact options of a commit of `work`: the host's, with the request overhead, what
 * the provider counts above the core's estimate of the kept tail, and its text and image rates
 * (the walk works them out), so that the frame cap, the fit and the reduction tests read the
 * real window.
 */
function archiveOptions(walk, work, o) {
  const fit = JSON.parse(walk.archiveFitJson(work.preparation.estimatedTokens.recentMessages));
  if (o.nonMessageTokens === undefined && fit.nonMessageTokens === 0) delete fit.nonMessageTokens;
  return { ...o.snapcompact, ...fit };
}

/**
 * The walk's `rebuild` step (the dead-end rescue's first tier, spec: compaction §8.3): the
 * core plans the rebuild of the latest snapcompact archive and commits it with fewer frames,
 * under the walk's limit. The commit, or undefined when the core refused (nothing to rebuild,
 * no smaller archive).
 */
function rebuildArchive(session, walk, step, o) {
  let work;
  try {
    work = planMethod(session, { strategy: 'snapcompact', method: 'snapcompact' }, o, { rebuildArchive: true });
    const archive = archiveOptions(walk, work, o);
    if (typeof step.limitTokens === 'number') archive.limitTokens = step.limitTokens;
    return session.commitCompaction(work, { snapcompact: archive, now: o.now });
  } catch {
    // The core's refusal: the walk goes on with the shake.
    return undefined;
  } finally {
    work?.free();
  }
}

/** The host's measure of the live context after a commit or a shake, if it has one. */
function measured(o) {
  return typeof o.measureLive === 'function' ? o.measureLive() : undefined;
}

/** The stable code of a thrown value (E_SUMMARIZER for a plain Error). */
function codeOf(err) {
  return typeof err?.code === 'string' ? err.code : 'E_SUMMARIZER';
}

/**
 * Runs the core's walk (spec: compaction §8.3): poll a step, do it, report the outcome. The
 * walk decides which method runs, which comes next, what ends the walk, when to shake.
 */
async function run(session, o, signal) {
  const walk = newWalk(session, o);
  const plans = [];
  // Shakes applied during the walk (they rewrite lines in place; a later method sees them).
  let shaken;
  // The images the dead-end rescue's last tier dropped (in place too): `{removed, entries}`.
  let imagesDropped;
  // The hooks' additions, and the preparation the hooks saw (the first plan's).
  let extra;
  let preparation = null;
  let work;
  let committed;
  let last;
  const fail = (err) => {
    last = err;
    return [codeOf(err), messageOf(err)];
  };
  try {
    for (;;) {
      if (signal.aborted) throw abortError();
      const step = JSON.parse(walk.poll());
      switch (step.step) {
        case 'warn':
          emit(o.hooks, {
            type: 'compaction_warning',
            message: step.message,
            ...(step.method ? { method: step.method } : {}),
          });
          break;
        case 'plan': {
          try {
            work = planMethod(session, step, o, extra ?? {});
          } catch (err) {
            if (signal.aborted) throw abortError();
            walk.planFailed(...fail(err));
            break;
          }
          plans.push(work);
          if (extra === undefined) {
            // The preparation is the same for every summarizing method: the hooks see it once.
            preparation = work.preparation;
            extra = {};
            for (const f of handlers(o.hooks, 'session_before_compact')) {
              const answer = await callHook(
                f,
                { preparation, customInstructions: o.customInstructions, signal },
                signal,
              );
              if (answer?.cancel === true) {
                throw codedError('E_CANCELLED', 'Compaction cancelled by a session_before_compact hook');
              }
              if (answer?.compaction !== undefined && answer.compaction !== null) {
                committed = {
                  ...session.commitExtensionCompaction(work, answer.compaction, { now: o.now }),
                  method: null,
                };
                break;
              }
            }
            if (committed !== undefined) {
              walk.planned();
              walk.extensionCommitted();
              break;
            }
            extra = await hookExtras(session, o, preparation, signal);
            if (Object.keys(extra).length > 0) {
              work = planMethod(session, step, o, extra);
              plans.push(work);
            }
          }
          walk.planned();
          break;
        }
        case 'shake': {
          const r = await session.shake(shakeOptions(o, signal, step.preset, walk.thresholdTokens()));
          const dropped = r.toolResultsDropped + r.blocksDropped;
          if (dropped > 0) {
            const report = step.preset === 'rescue' ? { ...r, rescue: true } : r;
            shaken = shaken ? combinedShake(shaken, report) : report;
          }
          walk.shaken(dropped, r.tokensFreed ?? 0, measured(o));
          break;
        }
        case 'dropImages': {
          // The dead-end rescue's last tier (spec: compaction §8.3): the core strips the
          // images of the branch; the walk re-tests progress.
          const r = session.dropImages({ leafId: o.leafId });
          if (r.removed > 0) imagesDropped = r;
          walk.imagesDropped(r.removed, measured(o));
          break;
        }
        case 'rebuild': {
          const rebuilt = rebuildArchive(session, walk, step, o);
          if (rebuilt === undefined) walk.rebuildFailed();
          else {
            committed = rebuilt;
            walk.rebuilt(rebuilt.tokensAfter ?? 0, measured(o));
          }
          break;
        }
        case 'summarize': {
          try {
            const native = await summarize(session, step, work, o, signal);
            if (native === null) walk.nativeUnavailable();
            else if (native !== undefined) {
              committed = native;
              walk.committed(native.tokensAfter ?? 0, measured(o));
            } else walk.summarized();
          } catch (err) {
            if (err?.code === 'E_ABORTED') throw err;
            if (signal.aborted) throw abortError();
            walk.methodFailed(...fail(err), statusOf(err) ?? statusOf(err?.cause));
          }
          break;
        }
        case 'commit': {
          try {
            committed = await commit(session, walk, step, work, o, signal);
          } catch (err) {
            if (err?.code === 'E_ABORTED') throw err;
            if (signal.aborted) throw abortError();
            walk.methodFailed(...fail(err), undefined);
            break;
          }
          walk.committed(committed.tokensAfter ?? 0, committed.session ? undefined : measured(o));
          break;
        }
        case 'done': {
          const flags = step.remoteFailed ? { remoteFailed: true } : {};
          if (step.remoteFailed) o.onRemoteFailed?.();
          const images = imagesDropped ? { imagesDropped } : {};
          if (committed === undefined) {
            return {
              entryId: null,
              method: 'shake',
              shake: shaken ?? noShake(),
              preparation: null,
              ...images,
              ...flags,
            };
          }
          // What the commit left the model (issue 38 item 4), from the plan it committed.
          const loss = work ? (committed.session ?? session).lossReport(work) : undefined;
          // Object.assign, not a spread: a commit's `compactionEntry` is read only when asked.
          return Object.assign(
            committed,
            { method: step.method, preparation, loss },
            shaken ? { shake: shaken } : {},
            images,
            flags,
          );
        }
        default: {
          if (step.remoteFailed) o.onRemoteFailed?.();
          // The thrown value itself when it carries the code (its cause and status stay with it).
          const err = last?.code === step.code ? last : wrapError(step.code, step.message, last);
          // A shake that ran stays applied (like a prune): the error says what it elided.
          if (shaken && typeof err === 'object') err.shake = shaken;
          if (imagesDropped && typeof err === 'object') err.imagesDropped = imagesDropped;
          if (step.remoteFailed && typeof err === 'object') err.remoteFailed = true;
          throw err;
        }
      }
    }
  } finally {
    for (const p of plans) p.free();
    walk.free();
  }
}

/** The options of a shake the walk runs: the preset, the model's threshold (the automatic preset scales to it), and the host's `saveArtifact`, signal, clock and leaf. */
function shakeOptions(o, signal, preset, thresholdTokens) {
  return { preset, thresholdTokens, saveArtifact: o.saveArtifact, signal, now: o.now, leafId: o.leafId };
}

/** The report of a rescue that elided nothing (its image drop was the reduction). */
function noShake() {
  return {
    mode: 'elide',
    toolResultsDropped: 0,
    blocksDropped: 0,
    thinkingBlocksDropped: 0,
    tokensFreed: 0,
    artifactId: null,
    entries: [],
    rescue: true,
  };
}

/** Two shakes of one walk as one report: counts added, entries joined, the later one's artifact and flags. */
function combinedShake(a, b) {
  const sum = { entries: [...new Set([...(a.entries ?? []), ...(b.entries ?? [])])] };
  for (const k of ['toolResultsDropped', 'blocksDropped', 'thinkingBlocksDropped', 'tokensFreed']) {
    sum[k] = (a[k] ?? 0) + (b[k] ?? 0);
  }
  return { ...a, ...b, ...sum };
}

/**
 * The provider's tokens per token of the core's estimate (`o.providerRatio`, the Maintainer's
 * calibration; undefined when unknown, which the core reads as any rate a provider may count).
 * The walk reads the core's figures through it, as `liveTokens` and `nonMessageTokens` already are.
 */
function providerRatio(o) {
  return typeof o.providerRatio === 'number' ? o.providerRatio : undefined;
}

/** A ratio the caller passed, or 1 when it is not a positive number. */
function positiveRatio(r) {
  return typeof r === 'number' && Number.isFinite(r) && r > 0 ? r : 1;
}

/**
 * Runs a compaction without its start/end events and returns the commit with its `report`
 * (the Maintainer words the events itself). `o.reason` other than `manual` with strategy
 * `off` (or `enabled: false`) resolves `{skipped}` and changes nothing.
 */
export async function runCompaction(session, options) {
  const o = { ...options };
  if (o.strategy !== undefined) o.settings = { ...o.settings, strategy: o.strategy };
  const strategy = o.settings?.strategy;
  const reason = o.reason ?? 'manual';
  if (reason !== 'manual' && (strategy === 'off' || o.settings?.enabled === false)) {
    return { skipped: strategy === 'off' ? 'off' : 'disabled', method: null, reason };
  }
  // `off` only stops automatic compaction (spec: compaction §9.2); a manual one walks methodOrder.
  if (strategy !== undefined && strategy !== 'off' && o.methods === undefined) o.explicit = strategy;
  if (o.settings?.strategy === 'off') o.settings = { ...o.settings, strategy: undefined };
  if (running.has(session)) throw codedError('E_BUSY', 'Compaction already in progress');
  running.add(session);
  const signal = o.signal ?? new AbortController().signal;
  try {
    if (signal.aborted) throw abortError();
    const before = contextSnapshot(session);
    const result = await run(session, o, signal);
    const after = contextSnapshot(result.session ?? session, { byKind: true });
    // Taken off in place, not by a rest spread: `compactionEntry` stays unread until asked for.
    const { preparation, loss } = result;
    delete result.preparation;
    delete result.loss;
    result.report = {
      method: result.method,
      reason,
      tokensBefore: before.tokens,
      tokensAfter: after.tokens,
      entriesSummarized: preparation
        ? preparation.messagesToSummarize.length + preparation.turnPrefixMessages.length
        : 0,
      tokensByKind: after.byKind,
      imagesOmitted: Math.max(0, before.images - after.images),
      framesOmitted: result.framesOmitted ?? 0,
      pruned: 0,
      shakeTokensFreed: result.shake?.tokensFreed ?? 0,
      lost: loss?.lost ?? [],
      anchored: loss?.anchored ?? [],
    };
    for (const f of handlers(o.hooks, 'session_compact')) await callHook(f, result, signal).catch(() => {});
    return result;
  } catch (caught) {
    throw caught?.code === 'E_ABORTED' ? abortError('Compaction') : caught;
  } finally {
    running.delete(session);
  }
}

/**
 * Runs a whole compaction of `session` (see `CompactOptions` in the types). Rejects with a
 * coded Error; nothing is appended then. Automatic reasons emit `auto_compaction_start` and
 * `auto_compaction_end` through `hooks.onEvent`, naming the method that ran.
 */
export async function compactSession(session, options) {
  const o = options ?? {};
  const reason = o.reason ?? 'manual';
  const auto = reason !== 'manual';
  const strategy = o.strategy ?? o.settings?.strategy;
  let action = 'context-full';
  try {
    const w = newWalk(session, {
      ...o,
      explicit: strategy === 'off' || o.methods !== undefined ? undefined : strategy,
    });
    const first = JSON.parse(w.methodsJson())[0];
    w.free();
    if (first) action = ACTION_OF[first];
  } catch {
    // Bad settings surface from runCompaction with their own error.
  }
  if (auto) emit(o.hooks, { type: 'auto_compaction_start', reason, action });
  try {
    const result = await runCompaction(session, o);
    if (auto) {
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action: result.method ? ACTION_OF[result.method] : action,
        aborted: false,
        willRetry: Boolean(o.willRetry),
        skipped: result.skipped !== undefined,
        result,
      });
    }
    return result;
  } catch (err) {
    if (auto) {
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action,
        aborted: err?.code === 'E_ABORTED' || err?.code === 'E_CANCELLED',
        willRetry: false,
        errorMessage: err?.message,
      });
    }
    throw err;
  }
}
