// The async shell of tree navigation: `session.navigateTree(targetId, options)` (spec:
// compaction §7.5, hooks §8.8).
//
// The Rust core plans (which entries the branch left behind holds, what the summarizer gets,
// where the leaf lands) and commits; this module awaits the `session_before_tree` hooks and
// the summarizer. The commit is the last step and the only one that writes: a cancel, an
// abort or a failure leaves the session as it was.
import { invalidArgument, messageOf, wrapError } from './errors.js';
import { callHook, handlers, pick, summarizeOne } from './summarizer.js';

/** A failure's message as the error says it. */
function wording(message) {
  return `Branch summarization failed: ${message}`;
}

function summarizers(summarize) {
  if (summarize === undefined || summarize === null || summarize === false) return [];
  const list = [summarize].flat();
  if (!list.every((f) => typeof f === 'function')) {
    throw invalidArgument('`summarize` must be a function or an array of functions');
  }
  return list.map((f) => ({ summarize: f }));
}

/** A hook's `{summary: {summary, details}}` (or `{summary: "text"}`), as a commit answer. */
function hookSummary(answer) {
  const s = answer?.summary;
  if (typeof s === 'string') return { summary: s, fromExtension: true };
  if (s && typeof s === 'object' && typeof s.summary === 'string') {
    return { summary: s.summary, details: s.details ?? null, fromExtension: true };
  }
  return undefined;
}

/**
 * Runs a navigation of `session` to `targetId` (see `NavigateOptions` in the types).
 * Resolves to the commit (`{cancelled: false, newLeafId, oldLeafId, summaryEntryId, …}`),
 * `{cancelled: true}` when a hook cancels, `{cancelled: true, aborted: true}` on abort;
 * rejects with a coded Error when the summarizer fails. Only a commit writes.
 */
export async function navigateSession(session, targetId, o) {
  const candidates = summarizers(o.summarize);
  const signal = o.signal ?? new AbortController().signal;
  const plan = session.planNavigation(targetId, {
    ...pick(o, ['customInstructions', 'replaceInstructions', 'label', 'contextWindow', 'reserveTokens']),
    summarize: candidates.length > 0,
  });
  try {
    if (plan.isNoop) return session.commitNavigation(plan);
    if (signal.aborted) return { cancelled: true, aborted: true };
    let answer;
    try {
      // session_before_tree: cancel, supply the summary, or change instructions and label.
      for (const f of handlers(o.hooks, 'session_before_tree')) {
        const preparation = plan.preparation;
        const reply = await callHook(f, { preparation, signal }, signal);
        if (reply?.cancel === true) return { cancelled: true };
        const changes = pick(reply ?? {}, ['customInstructions', 'replaceInstructions', 'label']);
        if (Object.keys(changes).length)
          plan.setInstructions({
            ...pick(preparation, ['customInstructions', 'replaceInstructions', 'label']),
            ...changes,
          });
        if (candidates.length > 0 && answer === undefined) answer = hookSummary(reply);
      }
      const request = plan.pending[0];
      if (answer === undefined && request !== undefined) {
        const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
        const callOptions = pick(o, ['initiator', 'sessionId', 'metadata']);
        const { text } = await summarizeOne(request, candidates, { signal, retryJson, callOptions, wording });
        answer = { summary: text };
      }
    } catch (err) {
      if (err?.code === 'E_ABORTED' || signal.aborted) return { cancelled: true, aborted: true };
      throw err?.code ? err : wrapError('E_SUMMARIZER', wording(messageOf(err)), err);
    }
    if (signal.aborted) return { cancelled: true, aborted: true };
    const committed = session.commitNavigation(plan, answer);
    const event = {
      newLeafId: committed.newLeafId,
      oldLeafId: committed.oldLeafId,
      ...(committed.summaryEntryId
        ? { summaryEntry: session.entry(committed.summaryEntryId), fromExtension: committed.fromExtension }
        : {}),
    };
    for (const f of handlers(o.hooks, 'session_tree')) await callHook(f, event, signal).catch(() => {});
    return committed;
  } finally {
    plan.free();
  }
}
