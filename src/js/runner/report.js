// What a maintenance step did, measured with one ruler: the local estimate (spec: compaction
// §3.1) of the LLM context, before and after. Shared by `compact()` and the Maintainer.
import { requireRaw } from '../core/raw.js';

/** Estimated tokens of a text (or of blocks joined as one), by the core's estimator (spec: compaction §3.1). */
export function textTokens(text) {
  const t = Array.isArray(text) ? text.join('\n\n') : text;
  if (typeof t !== 'string' || t === '') return 0;
  return requireRaw().estimateTokensJson(JSON.stringify({ role: 'user', content: t }), false);
}

/**
 * The LLM context of `session` at its leaf: estimated tokens, images, and with `byKind`
 * the tokens per kind (`summary`, `user`, `assistant`, `toolResult`, `other`). Measured in the
 * core, without copying the archive's frames.
 */
export function contextSnapshot(session, { byKind = false } = {}) {
  const stats = session.contextStats();
  return byKind ? stats : { tokens: stats.tokens, images: stats.images };
}

/** The text part that stands in for a tool result's images left out by the provider budget. */
const IMAGE_OMITTED = { type: 'text', text: '[image omitted: provider image limit]' };

/** Image parts of a message's content (user, developer and tool-result messages). */
function imagesOf(message) {
  if (!Array.isArray(message?.content) || message.role === 'assistant') return 0;
  let n = 0;
  for (const part of message.content) if (part?.type === 'image') n++;
  return n;
}

/**
 * The images of provider `messages` as the core reads them (`WasmCalibration.requestImages`):
 * `summaryFirst`, the first message is the compaction summary (its images are the archive's
 * frames); `framesLeftOut`, the frames the view's budgets left out; `limit`, the provider's
 * image budget. Returns the messages with the images the core leaves out removed (copied where
 * changed; a tool result left empty gets a notice), how many it left out, and the estimate of
 * the images sent (`sent`) and of the context's images (`context`, every frame and image).
 */
export function requestImages(messages, { summaryFirst, framesLeftOut, limit }) {
  // A plain loop: `Uint32Array.from` with a map function is ten times slower per message.
  const counts = new Uint32Array(messages.length);
  for (let i = 0; i < messages.length; i++) counts[i] = imagesOf(messages[i]);
  const [omitted, sent, context, ...drops] = requireRaw().WasmCalibration.requestImages(
    counts,
    summaryFirst,
    framesLeftOut,
    limit,
  );
  if (omitted === 0) return { messages, omitted, sent, context };
  const out = messages.map((m, i) => {
    let left = drops[i];
    if (left === 0) return m;
    const content = [];
    for (const part of m.content) {
      if (part?.type === 'image' && left > 0) {
        left--;
        continue;
      }
      content.push(part);
    }
    if (content.length === 0 && m.role === 'toolResult') content.push(IMAGE_OMITTED);
    return { ...m, content };
  });
  return { messages: out, omitted, sent, context };
}

/**
 * A report in the host's tokens: its per-kind split and the shake's share, measured by the
 * core's estimate of a context it puts at `report.tokensAfter`, scaled to the host's count of
 * that context, `counted` (the core's rule, `WasmCalibration.inCounted`).
 */
export function scaleReport(report, counted) {
  const kinds = Object.keys(report.tokensByKind);
  const figures = Float64Array.from([...kinds.map((k) => report.tokensByKind[k]), report.shakeTokensFreed]);
  const scaled = requireRaw().WasmCalibration.inCounted(figures, report.tokensAfter, counted);
  kinds.forEach((k, i) => {
    report.tokensByKind[k] = scaled[i];
  });
  report.shakeTokensFreed = scaled[kinds.length];
}
