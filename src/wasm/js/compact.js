// The async shell of compaction: `session.compact(options)`.
//
// The Rust core plans and commits (sans-IO) and decides retries (`retryStep`, spec: compaction
// §8.3); this module only awaits: the hooks (§8.8), the summarizer callbacks or the remote
// endpoint (§5.8, with the runtime's `fetch`), timers and the AbortSignal. The commit is the
// last step and the only one that writes, so any failure leaves the session as it was.
import { abortError, codedError, invalidArgument, messageOf, wrapError } from './errors.js';
import { requireRaw } from './raw.js';
import { callHook, handlers, pick, summarizeOne } from './summarizer.js';

/** Sessions with a compaction in flight. */
const running = new WeakSet();

function emit(hooks, event) {
  for (const f of handlers(hooks, 'onEvent')) {
    try {
      f(event);
    } catch {
      // Observers cannot stop a compaction.
    }
  }
}

async function run(session, o, signal) {
  // `strategy` is a shorthand for `settings.strategy`.
  const settings = o.strategy === undefined ? o.settings : { ...o.settings, strategy: o.strategy };
  const snapcompact = settings?.strategy === 'snapcompact';
  const planOptions = pick(o, ['customInstructions', 'contextWindow', 'provider', 'leafId']);
  const plans = [];
  const plan = (extra) => {
    const p = session.planCompaction(settings, { ...planOptions, ...extra });
    plans.push(p);
    return p;
  };
  try {
    const first = plan({});
    const preparation = first.preparation;

    // session_before_compact: cancel, or supply the compaction.
    for (const f of handlers(o.hooks, 'session_before_compact')) {
      const answer = await callHook(f, { preparation, customInstructions: o.customInstructions, signal }, signal);
      if (answer?.cancel === true) {
        throw codedError('E_CANCELLED', 'Compaction cancelled by a session_before_compact hook');
      }
      if (answer?.compaction !== undefined && answer.compaction !== null) {
        return session.commitExtensionCompaction(first, answer.compaction);
      }
    }

    // session.compacting: context lines, a prompt override, preserveData.
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

    if (snapcompact) {
      // No summarizer: the commit prints the history onto frames (spec: snapcompact §9.2).
      const archive = o.snapcompact ?? (o.model === undefined ? {} : { model: o.model });
      const work = Object.keys(extra).length ? plan(extra) : first;
      return session.commitCompaction(work, { snapcompact: archive });
    }

    // The summarizers: the remote endpoint (when enabled), then the callbacks.
    const candidates = [];
    const endpoint = o.remoteEndpoint ?? settings?.remoteEndpoint;
    if (endpoint && settings?.remoteEnabled !== false) {
      candidates.push({ remote: { url: endpoint, headers: o.headers ?? {}, model: o.model } });
      extra.method = 'remote';
    }
    for (const f of [o.summarize].flat()) if (typeof f === 'function') candidates.push({ summarize: f });
    if (candidates.length === 0) {
      throw invalidArgument(
        'compact() needs `summarize` (a function returning a Promise of the summary text) or `remoteEndpoint`',
      );
    }
    const work = Object.keys(extra).length ? plan(extra) : first;
    const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
    // Passed through to every summarize call (initiator override, session id, metadata).
    const callOptions = pick(o, ['initiator', 'sessionId', 'metadata']);
    // A failure's message as the `auto_compaction_end` error text (spec §8.3 prefixes).
    const wording = (message) => requireRaw().compactionErrorMessage(o.reason ?? 'manual', message);
    const calls = { signal, retryJson, callOptions, wording };

    // Round by round; the requests of one round run in parallel.
    while (!work.isComplete) {
      const pending = work.pending;
      if (pending.length === 0) throw codedError('E_SUMMARIZER', 'the plan is stuck without pending requests');
      const outcomes = await Promise.allSettled(pending.map((r) => summarizeOne(r, candidates, calls)));
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
    return session.commitCompaction(work);
  } finally {
    for (const p of plans) p.free();
  }
}

/**
 * The options a compaction really runs with: snapcompact only for a model that reads images
 * (spec: compaction §8.3); otherwise the next method (an LLM summary) runs, and a warning
 * event says why.
 */
function effective(o) {
  const strategy = o.strategy ?? o.settings?.strategy;
  if (strategy !== 'snapcompact' || !Array.isArray(o.input) || o.input.includes('image')) return o;
  emit(o.hooks, {
    type: 'compaction_warning',
    message: 'snapcompact needs a model with image input; compacting with an LLM summary (context-full) instead',
  });
  return { ...o, strategy: 'context-full' };
}

/**
 * Runs a whole compaction of `session` (see `CompactOptions` in the types). Rejects with a
 * coded Error; nothing is appended then.
 */
export async function compactSession(session, options) {
  const o = effective(options ?? {});
  if (running.has(session)) throw codedError('E_BUSY', 'Compaction already in progress');
  running.add(session);
  const signal = o.signal ?? new AbortController().signal;
  const reason = o.reason ?? 'manual';
  const auto = reason !== 'manual';
  const action = (o.strategy ?? o.settings?.strategy) === 'snapcompact' ? 'snapcompact' : 'context-full';
  if (auto) emit(o.hooks, { type: 'auto_compaction_start', reason, action });
  try {
    if (signal.aborted) throw abortError();
    const committed = await run(session, o, signal);
    for (const f of handlers(o.hooks, 'session_compact')) await callHook(f, committed, signal).catch(() => {});
    if (auto) {
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action,
        aborted: false,
        willRetry: Boolean(o.willRetry),
        result: committed,
      });
    }
    return committed;
  } catch (caught) {
    const err = caught?.code === 'E_ABORTED' ? abortError('Compaction') : caught;
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
  } finally {
    running.delete(session);
  }
}
