// The async shell of tree navigation: `session.navigateTree(targetId, options)` (spec:
// compaction §7.5, hooks §8.8).
//
// The Rust core plans (which entries the branch left behind holds, what the summarizer gets,
// where the leaf lands) and commits; this module awaits the `session_before_tree` hooks and
// the summarizer (the callbacks, or the remote endpoint as `compact()` POSTs to it). The
// commit is the last step and the only one that writes: a cancel, an abort or a failure
// leaves the session as it was.
import { optionsJson } from '../core/args.js';
import { invalidArgument, messageOf, wrapError } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';
import { callHook, handlers, pick, summarizeOne } from './summarizer.js';

/** A failure's message as the error says it. */
function wording(message) {
  return `Branch summarization failed: ${message}`;
}

/**
 * The summarizers in the order `compact()` tries them: the remote endpoint (`remoteEndpoint`,
 * else `settings.remoteEndpoint` unless `settings.remoteEnabled` is false), then the callbacks.
 */
function summarizers(o, settings) {
  const { summarize } = o;
  const list = summarize === undefined || summarize === null || summarize === false ? [] : [summarize].flat();
  if (!list.every((f) => typeof f === 'function')) {
    throw invalidArgument('`summarize` must be a function or an array of functions');
  }
  if (
    o.remoteEndpoint !== undefined &&
    (typeof o.remoteEndpoint !== 'string' || !/^https?:\/\//.test(o.remoteEndpoint))
  ) {
    throw invalidArgument('`remoteEndpoint` must be an http(s) URL string');
  }
  if (o.headers !== undefined && (o.headers === null || typeof o.headers !== 'object')) {
    throw invalidArgument('`headers` must be an object of header names and values');
  }
  const candidates = [];
  const endpoint = o.remoteEndpoint ?? settings?.remoteEndpoint;
  if (endpoint && settings?.remoteEnabled !== false) {
    candidates.push({ remote: { url: endpoint, headers: o.headers ?? {}, model: o.model } });
  }
  for (const f of list) candidates.push({ summarize: f });
  return candidates;
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
  // Validated with defaults filled in (E_SETTINGS names a bad field). `branchSummary.enabled`
  // only says whether a tree UI offers a summary (spec: compaction §7.5): a summarizer given
  // here is used either way.
  const settings =
    o.settings === undefined
      ? undefined
      : JSON.parse(requireRaw().resolveSettingsJson(optionsJson(o.settings, 'settings')));
  const candidates = summarizers(o, settings);
  const signal = o.signal ?? new AbortController().signal;
  const reserveTokens = o.reserveTokens ?? settings?.branchSummary?.reserveTokens;
  const plan = session.planNavigation(targetId, {
    ...pick(o, ['customInstructions', 'replaceInstructions', 'label', 'contextWindow']),
    ...(reserveTokens === undefined ? {} : { reserveTokens }),
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
