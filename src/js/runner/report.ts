// What a maintenance step did, measured with one ruler: the local estimate (spec: compaction
// §3.1) of the LLM context, before and after. Shared by `compact()` and the Maintainer.
import { onRaw, requireRaw } from '../core/raw.js';
import type {
  CacheForecast,
  CompactionReport,
  LlmMessage,
  PrefixChange,
  SessionCore,
  TextContent,
} from '../core/session.js';

/** Tokens per kind of message of a context (`CompactionReport.tokensByKind`). */
export type TokensByKind = CompactionReport['tokensByKind'];

/** The context of a session by the local estimate: tokens, images, and per kind when asked. */
export interface ContextSnapshot {
  tokens: number;
  images: number;
  byKind?: TokensByKind;
}

/** Estimated tokens of a text (or of blocks joined as one), by the core's estimator (spec: compaction §3.1). */
export function textTokens(text: string | readonly string[] | undefined): number {
  const t = Array.isArray(text) ? text.join('\n\n') : text;
  if (typeof t !== 'string' || t === '') return 0;
  return requireRaw().estimateTokensJson(JSON.stringify({ role: 'user', content: t }), false);
}

/**
 * The LLM context of `session` at its leaf: estimated tokens, images, and with `byKind`
 * the tokens per kind (`summary`, `user`, `assistant`, `toolResult`, `other`). Measured in the
 * core, without copying the archive's frames.
 */
export function contextSnapshot(session: SessionCore, options: { byKind: true }): Required<ContextSnapshot>;
export function contextSnapshot(session: SessionCore, options?: { byKind?: boolean }): ContextSnapshot;
export function contextSnapshot(session: SessionCore, { byKind = false }: { byKind?: boolean } = {}): ContextSnapshot {
  const stats = session.contextStats();
  return byKind ? stats : { tokens: stats.tokens, images: stats.images };
}

/** The text part that stands in for a tool result's images left out by the provider budget (the core's wording). */
const IMAGE_OMITTED: TextContent = { type: 'text', text: '' };
onRaw((bindings: ReturnType<typeof requireRaw>) => {
  const c: { imageOmittedNotice: string } = JSON.parse(bindings.snapcompactConstants());
  IMAGE_OMITTED.text = c.imageOmittedNotice;
});

/** Image parts of a message's content (user, developer and tool-result messages). */
function imagesOf(message: LlmMessage | undefined): number {
  if (!Array.isArray(message?.content) || message.role === 'assistant') return 0;
  let n = 0;
  for (const part of message.content) if (part?.type === 'image') n++;
  return n;
}

/** What the core makes of the images of a request (`requestImages`). */
export interface RequestImages {
  messages: LlmMessage[];
  omitted: number;
  sent: number;
  context: number;
}

/**
 * The images of provider `messages` as the core reads them (`WasmCalibration.requestImages`):
 * `summaryFirst`, the first message is the compaction summary (its images are the archive's
 * frames); `framesLeftOut`, the frames the view's budgets left out; `limit`, the provider's
 * image budget. Returns the messages with the images the core leaves out removed (copied where
 * changed; a tool result left empty gets a notice), how many it left out, and the estimate of
 * the images sent (`sent`) and of the context's images (`context`, every frame and image).
 */
export function requestImages(
  messages: LlmMessage[],
  { summaryFirst, framesLeftOut, limit }: { summaryFirst: boolean; framesLeftOut: number; limit: number },
): RequestImages {
  // A plain loop: `Uint32Array.from` with a map function is ten times slower per message.
  const counts = new Uint32Array(messages.length);
  for (let i = 0; i < messages.length; i++) counts[i] = imagesOf(messages[i]);
  const figures = requireRaw().WasmCalibration.requestImages(counts, summaryFirst, framesLeftOut, limit);
  const omitted = figures[0] ?? 0;
  const sent = figures[1] ?? 0;
  const context = figures[2] ?? 0;
  if (omitted === 0) return { messages, omitted, sent, context };
  const out = messages.map((m, i): LlmMessage => {
    let left = figures[3 + i] ?? 0;
    if (left === 0 || !Array.isArray(m.content)) return m;
    const content: Array<(typeof m.content)[number]> = [];
    for (const part of m.content) {
      if (part?.type === 'image' && left > 0) {
        left--;
        continue;
      }
      content.push(part);
    }
    if (content.length === 0 && m.role === 'toolResult') content.push(IMAGE_OMITTED);
    // The same message with fewer parts of its own kinds.
    return { ...m, content } as LlmMessage;
  });
  return { messages: out, omitted, sent, context };
}

/** The figures of a report `scaleReport` rescales. */
export interface ScalableReport {
  tokensAfter: number;
  tokensByKind: TokensByKind;
  shakeTokensFreed: number;
}

/**
 * A report in the host's tokens: its per-kind split and the shake's share, measured by the
 * core's estimate of a context it puts at `report.tokensAfter`, scaled to the host's count of
 * that context, `counted` (the core's rule, `WasmCalibration.inCounted`).
 */
export function scaleReport(report: ScalableReport, counted: number): void {
  const byKind = report.tokensByKind;
  const kinds = Object.keys(byKind) as Array<keyof TokensByKind>;
  const figures = Float64Array.from([...kinds.map((k) => byKind[k]), report.shakeTokensFreed]);
  const scaled = requireRaw().WasmCalibration.inCounted(figures, report.tokensAfter, counted);
  kinds.forEach((k, i) => {
    byKind[k] = scaled[i] ?? byKind[k];
  });
  report.shakeTokensFreed = scaled[kinds.length] ?? report.shakeTokensFreed;
}

/**
 * Where a maintenance action that rewrote or appended the entries `changed` (a prune's or a
 * shake's results, an image drop's messages, a compaction's entry; none for a handoff's new
 * session) changed the request, and what it costs the provider's prompt cache priced for
 * `model` (the core's rule and table, `triggers::cache`): the figures a report carries, or null.
 */
export function cacheForecast(
  session: SessionCore,
  changed: string[],
  freed: number,
  model: { provider?: string | undefined; api?: string | undefined } | undefined,
): { prefixChangedAt: PrefixChange; forecast: CacheForecast } | null {
  return session._cacheForecast(changed, freed, model?.provider ?? '', model?.api);
}
