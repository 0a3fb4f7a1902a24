// What a maintenance step did, measured with one ruler: the local estimate (spec: compaction
// §3.1) of the LLM context, before and after. Shared by `compact()` and the Maintainer.
import { requireRaw } from './raw.js';

/** Image parts of a message's content (user, developer and tool-result messages). */
function imagesOf(message) {
  if (!Array.isArray(message?.content) || message.role === 'assistant') return 0;
  let n = 0;
  for (const part of message.content) if (part?.type === 'image') n++;
  return n;
}

/** The kind a context message counts under in `tokensByKind`. */
function kindOf(message) {
  switch (message.role) {
    case 'compactionSummary':
    case 'branchSummary':
      return 'summary';
    case 'user':
    case 'developer':
      return 'user';
    case 'assistant':
      return 'assistant';
    case 'toolResult':
      return 'toolResult';
    default:
      return 'other';
  }
}

/**
 * The LLM context of `session` at its leaf: estimated tokens, images, and with `byKind`
 * the tokens per kind (`summary`, `user`, `assistant`, `toolResult`, `other`).
 */
export function contextSnapshot(session, { byKind = false } = {}) {
  const tokens = session.contextTokens().estimatedTokens;
  const { messages } = session.buildContext();
  let images = 0;
  for (const m of messages) images += imagesOf(m);
  const out = { tokens, images };
  if (byKind) {
    const kinds = { summary: 0, user: 0, assistant: 0, toolResult: 0, other: 0 };
    const raw = requireRaw();
    for (const m of messages) kinds[kindOf(m)] += raw.estimateTokensJson(JSON.stringify(m), false);
    out.byKind = kinds;
  }
  return out;
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
