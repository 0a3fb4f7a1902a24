// The demo's snapcompact worker (issue 41): runs a snapcompact compaction — Compact's or the
// preview's — on a copy of the session in a Web Worker, so drawing the frames never holds the
// page's main thread. It loads the same package build as the page (`./pkg/entries/web.js`)
// and posts, for one request:
//
//   {id, progress}   each `compaction_progress` report (frames k of n) as it happens;
//   {id, done}       the result: the compaction entry's fields, the report's token figures
//                    and the archive's frames (PNG bytes, transferred);
//   {id, error}      the error's message and code (the session copy is dropped).
//
// A request is `{id, bytes, leafId, options, font}`: the session file, the leaf to compact
// at, the options of `session.compact()` (without the signal), and the fallback font's bytes
// when the history needs it. `{id, abort: true}` aborts the request `id`.
import { init, registerFallbackFont, Session } from './pkg/entries/web.js';

const ready = init();
let fontRegistered = false;
const controllers = new Map();

self.addEventListener('message', (event) => {
  const msg = event.data;
  if (msg?.abort) {
    controllers.get(msg.id)?.abort();
    return;
  }
  run(msg).catch(() => {});
});

async function run({ id, bytes, leafId, options, font }) {
  const controller = new AbortController();
  controllers.set(id, controller);
  let copy = null;
  try {
    await ready;
    if (font && !fontRegistered) {
      registerFallbackFont(font);
      fontRegistered = true;
    }
    copy = Session.fromJsonl(bytes);
    if (copy.leafId !== leafId) {
      if (leafId === null) copy.resetLeaf();
      else copy.branch(leafId);
    }
    const result = await copy.compact({
      ...options,
      signal: controller.signal,
      onProgress: (progress) => self.postMessage({ id, progress }),
    });
    const frames = copy.archiveFrames(result.entryId);
    const { id: _id, parentId: _parent, type: _type, timestamp, ...fields } = copy.entry(result.entryId);
    const done = {
      entry: { fields, now: Date.parse(timestamp) },
      tokensAfter: result.tokensAfter,
      report: { tokensBefore: result.report?.tokensBefore, tokensAfter: result.report?.tokensAfter },
      frames,
    };
    const transfer = frames.flatMap((f) => (f.png ? [f.png.buffer] : []));
    self.postMessage({ id, done }, transfer);
  } catch (err) {
    self.postMessage({ id, error: { message: err?.message ?? String(err), code: err?.code } });
  } finally {
    controllers.delete(id);
    copy?.free();
  }
}
