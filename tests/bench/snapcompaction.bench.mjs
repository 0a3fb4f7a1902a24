// A snapcompact compaction (spec: snapcompact §9.2: prepare, serialize, normalize, render the
// frames, build the archive and the entry) of the conformance session for claude-opus-4-7,
// 13 frames of 1932 px. The reference needs about 1.7 s here.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'ctxfold';
import { timed, timesRow } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const file = path.join(here, '../../../shared/conformance/large-session/session.jsonl');

export default async function () {
  if (!existsSync(file))
    return [{ name: 'snapcompact compaction: conformance data not found', median: 0, unit: 'ms', samples: 0 }];
  const bytes = readFileSync(file);
  const times = [];
  let frames = 0;
  for (let i = 0; i < 6; i++) {
    const s = Session.fromJsonl(bytes, { ids: 'deterministic' });
    s.prepareCompaction(); // token estimates, as a running session has them
    const [t, r] = timed(() => {
      // The provider decides the frame cap (without one the floor is 5 frames).
      const plan = s.planCompaction({ strategy: 'snapcompact' }, { model: 'claude-opus-4-7', provider: 'anthropic' });
      try {
        return s.commitCompaction(plan);
      } finally {
        plan.free();
      }
    });
    frames = r.compactionEntry.preserveData.snapcompact.frames.length;
    if (i > 0) times.push(t); // the first run warms the module up
    s.free();
  }
  return [
    timesRow('snapcompact compaction of the conformance session, claude-opus-4-7', times, {
      note: `${frames} frames; plan + commit, estimates memoized`,
    }),
  ];
}
