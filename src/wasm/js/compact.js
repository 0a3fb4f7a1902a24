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
import { abortError, codedError, invalidArgument, messageOf, wrapError } from './errors.js';
import { anthropicIneligibility, runAnthropic } from './native-anthropic.js';
import { openaiLanes, runOpenaiNative } from './native-openai.js';
import { requireRaw } from './raw.js';
import { contextSnapshot } from './report.js';
import { callHook, handlers, pick, summarizeOne } from './summarizer.js';

/** Sessions with a compaction in flight. */
const running = new WeakSet();

/** The engine strategy each method runs (spec: compaction §8.3). */
const STRATEGY_OF = {
  remote: 'context-full',
  soft: 'context-full',
  snapcompact: 'snapcompact',
  handoff: 'handoff',
  shake: 'shake',
};

/** The events' `action` of each method (spec: compaction §8.7). */
export const ACTION_OF = {
  remote: 'remote',
  soft: 'context-full',
  snapcompact: 'snapcompact',
  handoff: 'handoff',
  shake: 'shake',
};

/** The method an explicit `strategy` asks for first. */
const METHOD_OF = { 'context-full': 'soft', snapcompact: 'snapcompact', handoff: 'handoff', shake: 'shake' };

/** Errors that no other method can mend: stop the walk. */
const FINAL_CODES = new Set([
  'E_ABORTED',
  'E_CANCELLED',
  'E_NOTHING_TO_COMPACT',
  'E_ALREADY_COMPACTED',
  'E_BUSY',
  'E_INVALID_ARGUMENT',
  'E_SETTINGS',
  'E_UNKNOWN_ENTRY',
]);

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

function summarizers(o, settings, remote) {
  const out = [];
  const endpoint = o.remoteEndpoint ?? settings?.remoteEndpoint;
  if (remote && endpoint) out.push({ remote: { url: endpoint, headers: o.headers ?? {}, model: modelOf(o).id } });
  for (const f of [o.summarize].flat()) if (typeof f === 'function') out.push({ summarize: f });
  return out;
}

/**
 * The methods to try, in order (spec: compaction §8.3, §8.6), each only where it can run.
 * `o.methods` (a trigger's `CompactRequest.methods`) is the list; an explicit `strategy` runs
 * that method with the plain LLM summary behind it; otherwise `methodOrder` is walked as a
 * manual compaction walks it (no handoff). `skipped` lists the methods left out, with why.
 */
function methodList(o, settings) {
  const resolved = JSON.parse(requireRaw().resolveSettingsJson(JSON.stringify(settings ?? {})));
  const model = modelOf(o);
  // An unknown model reads images only when snapcompact is asked for by name.
  const image = Array.isArray(model.input) ? model.input.includes('image') : o.explicit === 'snapcompact';
  const endpoint = o.remoteEndpoint ?? resolved.remoteEndpoint;
  const listed = Array.isArray(o.methods);
  const why = (method) => {
    switch (method) {
      case 'remote':
        // A provider-native route (spec §8.3, §13) needs no endpoint: an OpenAI lane for a
        // Responses model, Anthropic server compaction for an eligible Claude model.
        if (!endpoint && openaiLanes(o, resolved).length === 0 && anthropicIneligibility(o, o.liveTokens) !== null) {
          return 'no remote endpoint';
        }
        if (resolved.remoteEnabled === false) return 'compaction.remoteEnabled is false';
        if (o.remoteBlocked) return 'it failed recently';
        return null;
      case 'snapcompact':
        if (!image) return 'snapcompact needs a model with image input';
        if (o.excludeSnapcompact) return 'a payload rejection rules out image frames';
        if (o.customInstructions) return 'focus instructions need an LLM summary';
        return null;
      case 'handoff':
        if ((o.reason ?? 'manual') === 'overflow') return 'a handoff cannot recover an overflow';
        // The request carries the live history: it must fit the window it is sent to.
        if (model.contextWindow > 0 && (o.liveTokens ?? 0) >= model.contextWindow) {
          return 'the handoff request would not fit the context window';
        }
        // A handoff replaces the session: only when asked for by name or by a trigger.
        if (!listed && o.explicit !== 'handoff') return "a handoff runs only when asked for (strategy 'handoff')";
        return null;
      case 'shake':
        // A manual compaction walks remote, snapcompact and soft (§8.6): a manual shake is
        // asked for by name.
        if (!listed && o.explicit !== 'shake') return "a shake runs only when asked for (strategy 'shake')";
        return null;
      case 'soft':
        return summarizers(o, resolved, false).length === 0 ? 'no summarizer' : null;
      case 'window':
        // The spec lists `window` among the allowed values without an engine, and the reference
        // has none: kept in a settings file, it is passed over.
        return "'window' has no compaction engine";
      default:
        return 'unknown method';
    }
  };
  let wanted;
  if (listed) wanted = o.methods;
  else if (o.explicit) wanted = [METHOD_OF[o.explicit], 'soft'];
  else wanted = resolved.methodOrder;
  const methods = [];
  const skipped = [];
  for (const m of wanted) {
    if (methods.includes(m)) continue;
    const reason = why(m);
    if (reason === null) methods.push(m);
    else skipped.push({ method: m, why: reason });
  }
  // A remote endpoint stands in for `soft` when no callback is given: the plain summary is
  // asked of the endpoint then.
  if (methods.length === 0 && endpoint && resolved.remoteEnabled !== false && !o.remoteBlocked) {
    methods.push('remote');
  }
  return { methods, skipped, resolved };
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

/** Answers every pending request of `work`, round by round (a round's requests in parallel). */
async function answerAll(work, candidates, calls, decorate = (r) => r) {
  const { signal, wording } = calls;
  while (!work.isComplete) {
    const pending = work.pending;
    if (pending.length === 0) throw codedError('E_SUMMARIZER', 'the plan is stuck without pending requests');
    const outcomes = await Promise.allSettled(pending.map((r) => summarizeOne(decorate(r), candidates, calls)));
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

/** A plan for `method`, with the hooks' additions `extra`. */
function planMethod(session, method, o, extra) {
  const methodSettings = { ...o.settings, strategy: STRATEGY_OF[method], remoteEnabled: method === 'remote' };
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
    method: method === 'remote' ? 'remote' : undefined,
  });
}

/** Runs one method and resolves its commit: on the first plan when it fits, else on a fresh one. */
async function runMethod(session, method, ctx) {
  const { o, settings, extra, signal, plans } = ctx;
  let work = ctx.unused;
  ctx.unused = undefined;
  if (work === undefined || Object.keys(extra).length > 0) {
    work = planMethod(session, method, o, extra);
    plans.push(work);
  }

  if (method === 'snapcompact') {
    // No summarizer: the commit prints the history onto frames (spec: snapcompact §9.2). The
    // plan carries the reading model, so a plain plan/commit archives the same; `snapcompact`
    // only overrides (and the request's own tokens narrow the frame cap).
    const archive = { ...o.snapcompact };
    // The core measures the kept tail with its estimate: what the provider counts above it
    // goes on the non-message tokens, so the frame cap and the fit test read the real window.
    const over = providerRatio(o) - 1;
    const undercount = over > 0 ? Math.ceil(over * work.preparation.estimatedTokens.recentMessages) : 0;
    if (o.nonMessageTokens !== undefined || undercount > 0) {
      archive.nonMessageTokens = (o.nonMessageTokens ?? 0) + undercount;
    }
    return session.commitCompaction(work, { snapcompact: archive, now: o.now });
  }
  if (method === 'remote') {
    // Provider-native lanes first (spec §5.7 step 1, §13): the OpenAI lanes for a Responses
    // model, else Anthropic server compaction for an eligible Claude model (from its token
    // floor). Their failure falls through to the remote endpoint when there is one, else
    // fails the method.
    let nativeError;
    try {
      const committed = (await runOpenaiNative(work, o, signal)) ?? (await runAnthropic(work, o, signal));
      if (committed !== undefined) return committed;
    } catch (err) {
      if (err?.code === 'E_ABORTED' || signal.aborted) throw err;
      nativeError = err;
    }
    if (!summarizers(o, settings, true).some((c) => c.remote)) {
      throw (
        nativeError ?? codedError('E_SUMMARIZER', 'remote compaction: nothing to send natively and no remote endpoint')
      );
    }
  }
  const candidates = summarizers(o, settings, method === 'remote');
  if (candidates.length === 0) {
    throw invalidArgument(
      'compact() needs `summarize` (a function returning a Promise of the summary text) or `remoteEndpoint`',
    );
  }
  const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
  // Passed through to every summarize call (initiator override, session id, metadata).
  const callOptions = pick(o, ['initiator', 'sessionId', 'metadata']);
  // A failure's message as the `auto_compaction_end` error text (spec §8.3 prefixes).
  const wording = (message) => requireRaw().compactionErrorMessage(o.reason ?? 'manual', message);
  const calls = { signal, retryJson, callOptions, wording };

  if (method === 'handoff') {
    await answerAll(
      work,
      candidates,
      { ...calls, callOptions: { initiator: 'agent', ...callOptions } },
      cachePrefixed(session, o),
    );
    // An empty document fails in summarizeOne, so the walk falls back to the next method.
    const next = session.commitHandoff(work, { sessionId: o.handoffSessionId, now: o.now });
    const document = next.entries()[0]?.content ?? '';
    if (o.saveArtifact && settings?.handoffSaveToDisk === true && (o.reason ?? 'manual') !== 'manual') {
      const name = `handoff-${new Date().toISOString().replace(/[:.]/g, '-')}.md`;
      await callHook(o.saveArtifact, { name, text: document, kind: 'handoff' }, signal);
    }
    return { entryId: null, handoff: true, session: next, document, fromExtension: false };
  }
  await answerAll(work, candidates, calls);
  return session.commitCompaction(work, { now: o.now });
}

async function run(session, o, signal) {
  const settings = o.settings;
  const { methods, skipped, resolved } = methodList(o, settings);
  if (methods.length === 0 && skipped.some((s) => s.method === 'soft' && s.why === 'no summarizer')) {
    throw invalidArgument(
      'compact() needs `summarize` (a function returning a Promise of the summary text) or `remoteEndpoint`',
    );
  }
  if (methods.length === 0) {
    const list = skipped.map((s) => `${s.method} (${s.why})`).join(', ');
    throw codedError('E_SETTINGS', `No compaction method can run: ${list || 'compaction.methodOrder is empty'}`);
  }
  const vision = skipped.find((s) => s.method === 'snapcompact' && o.explicit === 'snapcompact');
  if (vision) {
    emit(o.hooks, {
      type: 'compaction_warning',
      message: `snapcompact skipped (${vision.why}); compacting with an LLM summary (context-full) instead`,
    });
  }
  const plans = [];
  // A shake applied during the walk (it rewrites lines in place; a later method sees them).
  let shaken;
  try {
    // The preparation is the same for every summarizing method: the hooks see it once, from
    // the plan of the first such method, which that method then runs on (unless the hooks add
    // to it). A shake needs none, so the plan is made when the first other method runs.
    let ctx;
    const begin = async (method) => {
      const first = await firstPlan(session, method, o, signal, (r) => {
        shaken = r;
      });
      if (first === null) return { entryId: null, method: 'shake', shake: shaken, preparation: null };
      plans.push(first);
      const preparation = first.preparation;

      // session_before_compact: cancel, or supply the compaction.
      for (const f of handlers(o.hooks, 'session_before_compact')) {
        const answer = await callHook(f, { preparation, customInstructions: o.customInstructions, signal }, signal);
        if (answer?.cancel === true) {
          throw codedError('E_CANCELLED', 'Compaction cancelled by a session_before_compact hook');
        }
        if (answer?.compaction !== undefined && answer.compaction !== null) {
          return {
            ...session.commitExtensionCompaction(first, answer.compaction, { now: o.now }),
            method: null,
            preparation,
          };
        }
      }
      const extra = await hookExtras(session, o, preparation, signal);
      ctx = { o, settings, extra, signal, plans, unused: first, preparation };
      return null;
    };

    let last;
    for (let i = 0; i < methods.length; i++) {
      const method = methods[i];
      const more = i + 1 < methods.length;
      try {
        if (method === 'shake') {
          shaken = await shakeMethod(session, o, resolved, signal, (r) => {
            shaken = r;
          });
          return { entryId: null, method, shake: shaken, preparation: null };
        }
        if (ctx === undefined) {
          const done = await begin(method);
          // Object.assign, not a spread: a commit's `compactionEntry` is read only when asked.
          if (done !== null) return shaken ? Object.assign(done, { shake: shaken }) : done;
        }
        const committed = await runMethod(session, method, ctx);
        // A compaction that kept a tail too large to continue from (the progress guard's test,
        // with the request overhead): the rescue shake reaches into it (spec: compaction §8.5,
        // §8.3 dead-end rescue; the commit stands either way), also after an automatic shake,
        // whose preset protects the newest results.
        const left = liveAfter(o, committed.tokensAfter ?? 0);
        if (!shaken?.rescue && !committed.session && left > headroomLimit(o, resolved)) {
          const r = await rescueShake(session, o, signal);
          if (r !== undefined) shaken = shaken ? combinedShake(shaken, r) : r;
        }
        return Object.assign(committed, { method, preparation: ctx.preparation }, shaken ? { shake: shaken } : {});
      } catch (err) {
        if (DEAD_ENDS.has(err?.code) && !signal.aborted) {
          // The kept tail alone is too big to summarize around: after the rescue shake the
          // method runs again on the shaken branch; a second dead end leaves the shake as the
          // reduction.
          if (shaken?.rescue) return { entryId: null, method: 'shake', shake: shaken, preparation: null };
          const r = await rescueShake(session, o, signal);
          if (r !== undefined) {
            shaken = r;
            if (ctx) ctx.unused = undefined;
            i--;
            continue;
          }
        }
        if (FINAL_CODES.has(err?.code) || signal.aborted) throw err;
        last = err;
        o.onMethodFailed?.(method, err);
      }
      if (more) {
        emit(o.hooks, {
          type: 'compaction_warning',
          message: `${method} compaction failed: ${messageOf(last)}; trying the next preferred compaction method.`,
          method,
        });
      }
    }
    // A shake that ran stays applied (like a prune): the error says what it elided.
    if (shaken && last && typeof last === 'object') last.shake = shaken;
    throw last;
  } finally {
    for (const p of plans) p.free();
  }
}

/** The options of a shake the walk runs: the preset, and the host's `saveArtifact`, signal, clock and leaf. */
function shakeOptions(o, signal, preset) {
  return { preset, saveArtifact: o.saveArtifact, signal, now: o.now, leafId: o.leafId };
}

/**
 * The plan of the first summarizing method. An automatic compaction with nothing to
 * summarize (one recent turn holds it all) first tries the dead-end rescue (spec: compaction
 * §8.3): a shake with the rescue preset, which reaches into the recent tail, then plans
 * again. Resolves `null` when the rescue shook but there is still nothing to summarize: the
 * shake was the reduction.
 */
async function firstPlan(session, method, o, signal, onShake) {
  try {
    return planMethod(session, method, o, {});
  } catch (err) {
    if (!DEAD_ENDS.has(err?.code)) throw err;
    const r = await rescueShake(session, o, signal);
    if (r === undefined) throw err;
    onShake(r);
    try {
      return planMethod(session, method, o, {});
    } catch (again) {
      if (DEAD_ENDS.has(again?.code)) return null;
      throw again;
    }
  }
}

/** Nothing to summarize: no turn before the kept tail, or the path ends with a compaction. */
const DEAD_ENDS = new Set(['E_NOTHING_TO_COMPACT', 'E_ALREADY_COMPACTED']);

/**
 * The dead-end rescue's shake (spec: compaction §8.3): the rescue preset, automatic reasons
 * other than idle only. Resolves its report (`rescue: true`), or undefined when it elided nothing.
 */
async function rescueShake(session, o, signal) {
  const reason = o.reason ?? 'manual';
  if (reason === 'manual' || reason === 'idle') return undefined;
  const r = await session.shake(shakeOptions(o, signal, 'rescue'));
  return r.toolResultsDropped + r.blocksDropped === 0 ? undefined : { ...r, rescue: true };
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
 * The most context a compaction may leave for the agent to go on (the ContextManager's progress
 * guard, spec: compaction §8.5): an overflow retry needs the window minus the reserve, other
 * reasons 80 % of the threshold. Infinity without a known window or for a manual compaction.
 */
function headroomLimit(o, resolved) {
  const model = modelOf(o);
  const w = model.contextWindow;
  if (!(w > 0) || (o.reason ?? 'manual') === 'manual') return Number.POSITIVE_INFINITY;
  const settings = JSON.stringify(resolved);
  if (o.reason === 'overflow') return w - requireRaw().reserveTokens(w, settings);
  return recoveryBand(o, resolved);
}

/** 80 % of the reading model's compaction threshold (its `modelThresholds` rule applies). */
function recoveryBand(o, resolved) {
  const model = modelOf(o);
  const modelJson = model.id && model.provider ? JSON.stringify({ id: model.id, provider: model.provider }) : undefined;
  const threshold = requireRaw().thresholdTokens(model.contextWindow, JSON.stringify(resolved), modelJson);
  return Math.floor(threshold * RECOVERY_BAND);
}

/**
 * The provider's tokens per token of the core's estimate (`o.providerRatio`, the Maintainer's
 * calibration; 1 when unknown). Every test against the window below reads the estimate's
 * figures through it, as `liveTokens` and `nonMessageTokens` already are: a provider that
 * counts twice the estimate fills the window with half the estimated tokens.
 */
function providerRatio(o) {
  const r = o.providerRatio;
  return typeof r === 'number' && Number.isFinite(r) && r > 0 ? r : 1;
}

/**
 * The live context in the provider's tokens, request overhead included, after a commit whose
 * core figure is `coreTokens`: the Maintainer's own calibrated measure when it gives one
 * (`o.measureLive`: text and images at their own rates), else the core's figure through
 * `providerRatio` plus `nonMessageTokens`. Frames estimated at their flat charge but billed
 * lower would otherwise count at the text's rate.
 */
function liveAfter(o, coreTokens) {
  if (typeof o.measureLive === 'function') return o.measureLive();
  return providerRatio(o) * coreTokens + (o.nonMessageTokens ?? 0);
}

/** Context kept after an automatic shake: at most this share of the threshold (§13). */
const RECOVERY_BAND = 0.8;

/**
 * The `shake` method (spec: compaction §13 "Shake"): the manual preset when asked for by hand,
 * the automatic one otherwise. It hands over to the next method (`E_NO_REDUCTION`) when it
 * found nothing, or, automatically and not for idle, when the context stays above 80 % of the
 * threshold; what it elided stays elided then (`onShake` hears of it).
 */
async function shakeMethod(session, o, resolved, signal, onShake) {
  const reason = o.reason ?? 'manual';
  const before = o.liveTokens ?? contextSnapshot(session).tokens;
  const r = await session.shake(shakeOptions(o, signal, reason === 'manual' ? 'aggressive' : 'default'));
  if (r.toolResultsDropped + r.blocksDropped === 0) {
    throw codedError(
      'E_NO_REDUCTION',
      reason === 'manual' ? 'Nothing to shake' : 'Auto-shake found nothing eligible to drop',
    );
  }
  onShake(r);
  if (reason !== 'manual' && reason !== 'idle' && modelOf(o).contextWindow > 0) {
    const after = typeof o.measureLive === 'function' ? o.measureLive() : before - providerRatio(o) * r.tokensFreed;
    if (after > recoveryBand(o, resolved)) {
      throw codedError(
        'E_NO_REDUCTION',
        `Auto-shake reclaimed ~${r.tokensFreed} tokens but context is still above the threshold`,
      );
    }
  }
  return r;
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
    const { preparation } = result;
    delete result.preparation;
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
    const first = methodList({ ...o, explicit: strategy === 'off' ? undefined : strategy }, o.settings).methods[0];
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
