// The async shell of tree navigation: `session.navigateTree(targetId, options)` (spec:
// compaction §7.5, hooks §8.8).
//
// The Rust core plans (which entries the branch left behind holds, what the summarizer gets,
// where the leaf lands) and commits; this module awaits the `session_before_tree` hooks and
// the summarizer (the callbacks, or the remote endpoint as `compact()` POSTs to it). The
// commit is the last step and the only one that writes: a cancel, an abort or a failure
// leaves the session as it was.

import type { Signal } from '../core/abort.js';
import { optionsJson } from '../core/args.js';
import { invalidArgument, messageOf, wrapError } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';
import type {
  JsonValue,
  NavigateTreeOptions,
  NavigationAnswer,
  NavigationCancelled,
  NavigationResult,
  SessionCore,
  Summarize,
} from '../core/session.js';
import { type Candidate, callHook, defined, handlers, memberOf, pick, summarizeOne } from './summarizer.js';

/** The options of a navigation as the runner reads them. */
export interface NavigateRunOptions extends Omit<NavigateTreeOptions, 'signal' | 'summarize'> {
  signal?: Signal | undefined;
  /** Checked here: a callback, an array of them, or nothing (`false` and `null` too). */
  summarize?: unknown;
}

/** A failure's message as the error says it. */
function wording(message: string): string {
  return `Branch summarization failed: ${message}`;
}

/** What a navigation may ask for its summary, checked: the callbacks and the endpoint's wiring. */
interface Summarizers {
  callbacks: Summarize[];
  headers: Record<string, string>;
}

/** The summarizers of `o`, validated (`E_INVALID_ARGUMENT`); the core orders them (`routes`). */
function summarizers(o: NavigateRunOptions): Summarizers {
  const { summarize } = o;
  const list: unknown[] =
    summarize === undefined || summarize === null || summarize === false ? [] : [summarize].flat();
  if (!list.every((f): f is Summarize => typeof f === 'function')) {
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
  return { callbacks: list, headers: o.headers ?? {} };
}

/** A summary route of the plan (`routesJson`), in the order the core lists them. */
type SummaryRoute = { route: 'endpoint'; url: string } | { route: 'callbacks' };

/**
 * The candidates of the plan's summary routes (spec: compaction §5.8, §7.5): the core lists
 * them in order (the remote endpoint first when one is set and remote is enabled, then the
 * callbacks); this builds each.
 */
function candidatesOf(routes: readonly SummaryRoute[], s: Summarizers, model: string | undefined): Candidate[] {
  return routes.flatMap((r): Candidate[] =>
    r.route === 'endpoint'
      ? [{ remote: { url: r.url, headers: s.headers, model } }]
      : s.callbacks.map((f) => ({ summarize: f })),
  );
}

/** A hook's `{summary: {summary, details}}` (or `{summary: "text"}`), as a commit answer. */
function hookSummary(answer: unknown): NavigationAnswer | undefined {
  const s = memberOf(answer, 'summary');
  if (typeof s === 'string') return { summary: s, fromExtension: true };
  const summary = memberOf(s, 'summary');
  if (s && typeof s === 'object' && typeof summary === 'string') {
    const details = (memberOf(s, 'details') ?? null) as JsonValue;
    return { summary, details, fromExtension: true };
  }
  return undefined;
}

/**
 * Runs a navigation of `session` to `targetId` (see `NavigateTreeOptions` in the types).
 * Resolves to the commit (`{cancelled: false, newLeafId, oldLeafId, summaryEntryId, …}`),
 * `{cancelled: true}` when a hook cancels, `{cancelled: true, aborted: true}` on abort;
 * rejects with a coded Error when the summarizer fails. Only a commit writes.
 */
export async function navigateSession(
  session: SessionCore,
  targetId: string,
  o: NavigateRunOptions,
): Promise<NavigationResult | NavigationCancelled> {
  // Validated first (E_SETTINGS names a bad field). `branchSummary.enabled` only says whether
  // a tree UI offers a summary (spec: compaction §7.5): a summarizer given here is used either
  // way.
  if (o.settings !== undefined) requireRaw().resolveSettingsJson(optionsJson(o.settings, 'settings'));
  const given = summarizers(o);
  const signal: Signal = o.signal ?? new AbortController().signal;
  // The core takes `reserveTokens` from the options, else the settings, and lists the summary
  // routes from what the host has (a route asks for the summary).
  const plan = session.planNavigation(targetId, {
    ...pick(o, ['customInstructions', 'replaceInstructions', 'label', 'contextWindow', 'maxTokens', 'reserveTokens']),
    ...(o.settings === undefined ? {} : { settings: o.settings }),
    summarizers: {
      ...(o.remoteEndpoint === undefined ? {} : { remoteEndpoint: o.remoteEndpoint }),
      callbacks: given.callbacks.length,
    },
  });
  try {
    const routes: SummaryRoute[] = JSON.parse(plan._raw().routesJson());
    const candidates = candidatesOf(routes, given, o.model);
    if (plan.isNoop) return session.commitNavigation(plan);
    if (signal.aborted) return { cancelled: true, aborted: true };
    let answer: NavigationAnswer | undefined;
    try {
      // session_before_tree: cancel, supply the summary, or change instructions and label.
      for (const f of handlers(o.hooks, 'session_before_tree')) {
        const preparation = plan.preparation;
        // A hook's summary counts only when a summary is wanted (the plan's answer, §7.5 step 4),
        // read before the hook could change its payload.
        const wanted = preparation.userWantsSummary;
        const reply = await callHook(f, { preparation, signal }, signal);
        if (reply?.cancel === true) return { cancelled: true };
        const changes = pick(reply ?? {}, ['customInstructions', 'replaceInstructions', 'label']);
        if (Object.keys(changes).length)
          plan.setInstructions({
            ...pick(preparation, ['customInstructions', 'replaceInstructions', 'label']),
            ...changes,
          });
        if (wanted && answer === undefined) answer = hookSummary(reply);
      }
      const request = plan.pending[0];
      if (answer === undefined && request !== undefined) {
        const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
        const callOptions = pick(o, ['initiator', 'sessionId', 'metadata']);
        const { text } = await summarizeOne(request, candidates, { signal, retryJson, callOptions, wording });
        if (text !== undefined) answer = { summary: text };
      }
    } catch (err) {
      if (memberOf(err, 'code') === 'E_ABORTED' || signal.aborted) return { cancelled: true, aborted: true };
      throw memberOf(err, 'code') ? err : wrapError('E_SUMMARIZER', wording(messageOf(err)), err);
    }
    if (signal.aborted) return { cancelled: true, aborted: true };
    const committed = session.commitNavigation(plan, answer);
    const event = {
      newLeafId: committed.newLeafId,
      oldLeafId: committed.oldLeafId,
      ...(committed.summaryEntryId
        ? defined({ summaryEntry: session.entry(committed.summaryEntryId), fromExtension: committed.fromExtension })
        : {}),
    };
    for (const f of handlers(o.hooks, 'session_tree')) await callHook(f, event, signal).catch(() => {});
    return committed;
  } finally {
    plan.free();
  }
}
