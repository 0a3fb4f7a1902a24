// The demo's snapcompact worker (issue 41): runs a snapcompact compaction — Compact's or the
// preview's — on a copy of the session in a Web Worker, so drawing the frames never holds the
// page's main thread. It loads the same package build as the page (`./pkg/entries/web.js`)
// and posts, for one request:
//
//   {id, progress}   each `compaction_progress` report (frames k of n) as it happens;
//   {id, done}       the result: the compaction entry's fields (Compact) or the archive's
//                    frames (the preview: PNG bytes, transferred), the report's token figures;
//   {id, error}      the error's message and code (the session copy is dropped).
//
// A request is `{id, bytes, leafId, options, preview}`: the session file, the leaf to compact
// at, the options of `session.compact()` (without the signal), and whether it is the preview
// (which gets the frames; Compact gets the entry's fields). The worker registers the Unifont
// fallback (fetched once, reported as `{id, font: 'loading'}`) when the history it images has
// characters the built-in fonts lack. `{id, abort: true}` aborts the request `id`.
import {
  init,
  registerFallbackFont,
  Session,
  scanRenderability,
  serializeConversation,
  shapeFor,
} from './pkg/entries/web.js';

const ready = init();
let fallbackFont = null; // Promise of the registration, once a history needed it
const controllers = new Map();

self.addEventListener('message', (event) => {
  const msg = event.data;
  if (msg?.abort) {
    controllers.get(msg.id)?.abort();
    return;
  }
  run(msg).catch(() => {});
});

async function run({ id, bytes, leafId, options, preview }) {
  const controller = new AbortController();
  controllers.set(id, controller);
  let copy = null;
  try {
    await ready;
    copy = Session.fromJsonl(bytes);
    if (copy.leafId !== leafId) {
      if (leafId === null) copy.resetLeaf();
      else copy.branch(leafId);
    }
    const prep = copy.prepareCompaction(options.settings, { leafId: copy.leafId });
    await fallbackFontFor(copy, prep, options, id);
    const result = await copy.compact({
      ...options,
      signal: controller.signal,
      onProgress: (progress) => self.postMessage({ id, progress }),
    });
    // What the page needs, and no more (each member is copied onto the main thread): the
    // preview shows the frames, Compact appends the entry.
    const frames = preview ? copy.archiveFrames(result.entryId) : [];
    const entry = preview ? null : copy.entry(result.entryId);
    const done = {
      prep: {
        messages: prep.messagesToSummarize.length + prep.turnPrefixMessages.length,
        textTokens: prep.estimatedTokens.messagesToSummarize + prep.estimatedTokens.turnPrefixMessages,
      },
      entry: entry && entryFields(entry),
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

/** The fields of an entry `session.append(type, fields, {now})` writes again as they are. */
function entryFields({ id: _id, parentId: _parent, type: _type, timestamp, ...fields }) {
  return { fields, now: Date.parse(timestamp) };
}

/** An entry as the archive serializer reads it (spec: snapcompact §6.1). */
function archiveMessage(entry) {
  switch (entry?.type) {
    case 'message':
      return entry.message;
    case 'custom_message':
      return { role: 'user', content: entry.content };
    case 'branch_summary':
      return { role: 'user', content: `[Branch summary]\n${entry.summary}` };
    case 'compaction':
      return { role: 'user', content: `[Summary of earlier history]\n${entry.summary}` };
    default:
      return null;
  }
}

/**
 * Registers the Unifont fallback before the compaction when the history it would image has
 * characters the built-in fonts lack (the preview and Compact both do: their frames are the same).
 */
async function fallbackFontFor(copy, prep, options, id) {
  if (fallbackFont) return fallbackFont;
  const messages = [];
  for (const entryId of [...prep.messagesToSummarize, ...prep.turnPrefixMessages]) {
    const m = archiveMessage(copy.entry(entryId));
    if (m) messages.push(m);
  }
  const text = serializeConversation(messages);
  const shape = shapeFor(text, { model: options.snapcompact?.model });
  if (scanRenderability(text, shape).unrenderableRatio === 0) return;
  self.postMessage({ id, font: 'loading' });
  fallbackFont = (async () => {
    const res = await fetch(new URL('./pkg/unifont.cxfb', import.meta.url));
    if (!res.ok) throw new Error(`fallback font: HTTP ${res.status}`);
    registerFallbackFont(new Uint8Array(await res.arrayBuffer()));
  })().catch((err) => {
    fallbackFont = null;
    throw err;
  });
  return fallbackFont;
}
