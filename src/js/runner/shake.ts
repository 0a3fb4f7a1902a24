// The async shell of shake (spec: compaction §13 "Shake"): plan in the core, store the
// recovery artifact through the host's `saveArtifact`, then apply. The apply is the only
// write; a plan the session outgrew meanwhile is refused (`E_STALE_PLAN`), unchanged.

import { type Signal, untilAbort } from '../core/abort.js';
import { nowOf } from '../core/args.js';
import { abortError, codedError, invalidArgument } from '../core/errors.js';
import type { SessionCore, ShakeOptions, ShakeReport, ShakeResult, ShakeRunOptions } from '../core/session.js';
import { defined } from './summarizer.js';

const NOTHING = { toolResultsDropped: 0, blocksDropped: 0, thinkingBlocksDropped: 0, tokensFreed: 0, artifactId: null };

/** The options of a shake as the runner reads them (`mode` checked here). */
export interface ShakeRunnerOptions extends Omit<ShakeRunOptions, 'signal' | 'mode' | 'saveArtifact'> {
  mode?: unknown;
  signal?: Signal | undefined;
  /** Checked here: a function or nothing. */
  saveArtifact?: unknown;
}

/** The core's shake in one call (no artifact to await): plan and apply, `thinking` for the thinking mode, at `now`. */
export type ShakeNow = (config: ShakeOptions & { thinking: boolean }, now: number) => ShakeReport;

/**
 * Runs a shake of `session` (see `ShakeRunOptions` in the types): `mode` `'elide'` (default)
 * or `'thinking'`. Resolves the report `{mode, toolResultsDropped, blocksDropped,
 * thinkingBlocksDropped, tokensFreed, artifactId, entries}`. Without `saveArtifact` there is
 * nothing to await: `shakeNow(config, now)` plans and applies in one call of the core.
 */
export async function shakeSession(
  session: SessionCore,
  options: ShakeRunnerOptions | undefined,
  shakeNow: ShakeNow,
): Promise<ShakeResult> {
  const { mode = 'elide', saveArtifact, signal, now, requireArtifact, ...config } = options ?? {};
  if (saveArtifact !== undefined && typeof saveArtifact !== 'function') {
    throw invalidArgument('`saveArtifact` must be a function');
  }
  if (signal?.aborted) throw abortError();
  if (mode !== 'elide' && mode !== 'thinking') {
    throw invalidArgument(`unknown shake mode "${String(mode)}" (expected 'elide' or 'thinking')`);
  }
  if (mode === 'thinking' || (!saveArtifact && !requireArtifact)) {
    return { mode, ...shakeNow({ ...config, thinking: mode === 'thinking' }, nowOf({ now })) };
  }
  const plan = session.planShake(config);
  if (plan.regions.length === 0) return { mode, ...NOTHING, entries: [] };
  let artifactId: string | undefined;
  let saved = false;
  if (saveArtifact) {
    const until: Signal = signal ?? new AbortController().signal;
    try {
      const artifact = { name: 'shake.md', text: plan.artifactText, kind: 'shake' };
      const id: unknown = await untilAbort(
        Promise.resolve().then(() => (saveArtifact as (a: typeof artifact) => unknown)(artifact)),
        until,
      );
      if (typeof id === 'string' && id !== '') artifactId = id;
      saved = true;
    } catch (err) {
      if (until.aborted) throw abortError();
      // Without a stored artifact the placeholders carry no link (the text is gone then).
      if (requireArtifact) throw codedError('E_SUMMARIZER', 'shake could not save a recovery artifact', { cause: err });
    }
  }
  if (signal?.aborted) throw abortError();
  if (requireArtifact && artifactId === undefined) {
    throw codedError('E_SUMMARIZER', 'shake could not save a recovery artifact');
  }
  const report = session.applyShake(plan, defined({ artifactId, now }));
  // What was stored becomes searchable (issue 38 item 2), under the host's id when it gave one.
  if (saved) {
    session.addArtifacts([
      { name: artifactId ?? `shake-${plan.fingerprint}.md`, kind: 'shake', text: plan.artifactText },
    ]);
  }
  return { mode, ...report };
}
