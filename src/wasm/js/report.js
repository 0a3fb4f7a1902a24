// What a maintenance step did, measured with one ruler: the local estimate (spec: compaction
// §3.1) of the LLM context, before and after. Shared by `compact()` and the Maintainer.
import { requireRaw } from './raw.js';

/** Estimated tokens of a text (or of blocks joined as one), by the core's estimator (spec: compaction §3.1). */
export function textTokens(text) {
  const t = Array.isArray(text) ? text.join('\n\n') : text;
  if (typeof t !== 'string' || t === '') return 0;
  return requireRaw().estimateTokensJson(JSON.stringify({ role: 'user', content: t }), false);
}

/** Image parts of a message's content (user, developer and tool-result messages). */
function imagesOf(message) {
  if (!Array.isArray(message?.content) || message.role === 'assistant') return 0;
  let n = 0;
  for (const part of message.content) if (part?.type === 'image') n++;
  return n;
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

/**
 * Keeps at most `limit` images in the provider messages, leaving out the oldest ones (user,
 * developer and tool-result parts; a tool result left empty gets a notice). Returns the
 * messages (copied where changed) and how many images were left out.
 */
export function clampImages(messages, limit) {
  let total = 0;
  for (const m of messages) total += imagesOf(m);
  let drops = Math.max(0, total - limit);
  if (drops === 0) return { messages, omitted: 0 };
  const omitted = drops;
  const out = messages.map((m) => {
    if (drops === 0 || imagesOf(m) === 0) return m;
    const content = [];
    for (const part of m.content) {
      if (part?.type === 'image' && drops > 0) {
        drops--;
        continue;
      }
      content.push(part);
    }
    if (content.length === 0 && m.role === 'toolResult') content.push(IMAGE_OMITTED);
    return { ...m, content };
  });
  return { messages: out, omitted };
}
