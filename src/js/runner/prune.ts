// The async shell of a prune that keeps the originals (issue 38 item 2, opt-in): plan in the
// core with the original text of each result it blanks, store each through the host's
// `saveArtifact`, then apply. A save that fails rejects and writes nothing (as shake with
// `requireArtifact`); the apply refuses a result that changed meanwhile (`E_STALE_PLAN`).

import { type Signal, untilAbort } from '../core/abort.js';
import { object } from '../core/args.js';
import { abortError, codedError, invalidArgument } from '../core/errors.js';
import type { SessionCore } from '../core/session.js';
import type { PrunedOriginal, PruneReport, PruneRunOptions, SavedArtifact } from '../core/types.js';

/**
 * Runs pruning pass `pass` (`'threshold'`, `'stale'`) of `session` with `options.saveArtifact`:
 * every original is stored before any notice is written, then handed to the session's search
 * index (named by the host's id when `saveArtifact` returns one). A `dryRun` stores nothing.
 */
export async function pruneWithArtifacts(
  session: SessionCore,
  pass: 'threshold' | 'stale',
  options: PruneRunOptions,
): Promise<PruneReport> {
  const { saveArtifact, signal, dryRun, ...config } = object(options, 'prune options') as unknown as PruneRunOptions;
  if (typeof saveArtifact !== 'function') throw invalidArgument('`saveArtifact` must be a function');
  if (signal?.aborted) throw abortError();
  const plan = session._planPrune(pass, config);
  try {
    const { artifacts, ...report } = plan.report;
    if (dryRun === true || artifacts.length === 0) return report;
    const until: Signal = (signal as Signal | undefined) ?? new AbortController().signal;
    const saved: SavedArtifact[] = [];
    for (const original of artifacts) {
      let id: unknown;
      try {
        id = await untilAbort(
          Promise.resolve().then(() => saveArtifact({ ...original } as PrunedOriginal)),
          until,
        );
      } catch (err) {
        if (until.aborted) throw abortError();
        throw codedError('E_SUMMARIZER', `prune could not save the original of entry ${original.entryId}`, {
          cause: err,
        });
      }
      const name = typeof id === 'string' && id !== '' ? id : original.name;
      saved.push({ name, kind: original.kind, text: original.text, entryId: original.entryId });
    }
    if (signal?.aborted) throw abortError();
    const done = plan.apply();
    session.addArtifacts(saved);
    return done;
  } finally {
    plan.free();
  }
}
