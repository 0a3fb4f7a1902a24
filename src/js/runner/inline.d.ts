// Types of inline imaging (src/wasm/js/inline.js). Spec: snapcompact §9.7.
import type { LlmMessage, SnapcompactSettings } from '../core/session.js';

export interface InlineImagerOptions extends Pick<SnapcompactSettings, 'systemPrompt' | 'toolResults' | 'shape'> {
  /**
   * How long the provider keeps a prompt prefix cached after a request, in ms (default 5 min,
   * Anthropic's default). Within it, what the previous request sent as text stays text and what
   * it sent as frames stays frames, so imaging never rewrites a cached prefix.
   */
  cacheTtlMs?: number;
  /**
   * Text tokens of a text for the savings gate (default: the core's estimate, about 4
   * characters a token, which undercounts code and so images only where the savings are sure).
   * Plug a real tokenizer here.
   */
  countTextTokens?: (text: string) => number;
}

/** The model that reads the request: its `input` must include `'image'` for any imaging. */
export interface InlineModel {
  id: string;
  provider?: string;
  api?: string;
  input?: ReadonlyArray<string>;
}

export interface InlineRequest {
  /** Provider messages (`session.toLlmMessages()`); never changed. */
  messages: LlmMessage[];
  model: InlineModel;
  /** The system prompt, as one text or as blocks. */
  systemPrompt?: string | string[];
  /** The provider whose image budget applies (default `model.provider`). */
  provider?: string;
  /** ms since the epoch (default `Date.now()`): how old the previous request's cache is. */
  now?: number;
}

export interface InlineSaving {
  textTokens: number;
  frames: number;
  /** Billed tokens of the frames for the reading model. */
  imageTokens: number;
  savedTokens: number;
}

export interface InlineReport {
  /** The tool results sent as frames, oldest first. */
  toolResults: Array<InlineSaving & { toolCallId: string }>;
  /** Set when the system prompt's text went as frames. */
  systemPrompt?: InlineSaving & { scope: 'all' | 'agents-md' };
  /** Candidates left as text only because a warm prompt cache holds them so. */
  keptForCache: number;
  savedTokens: number;
}

export interface InlineResult {
  /** The messages to send: new objects where frames replaced text, the given ones elsewhere. */
  messages: LlmMessage[];
  /** The system prompt to send (same form as given): a stub where its text went as frames. */
  systemPrompt?: string | string[];
  report: InlineReport;
}

/**
 * Sends large old tool results and system-prompt text as snapcompact frames when that costs
 * the reading model fewer tokens (frames at most 90 % of the text's tokens, results of at
 * least 3,000 tokens, never the newest result, an error or a result with images, within the provider's image budget,
 * at most 6 frames for the prompt). Keep one per conversation.
 */
export class InlineImager {
  /** Throws `E_SETTINGS` for a bad `systemPrompt` / `toolResults` / `shape`, `E_INVALID_ARGUMENT` otherwise. */
  constructor(options?: InlineImagerOptions);
  /** The request to send now. Throws `E_INVALID_ARGUMENT` for bad arguments. */
  transform(request: InlineRequest): InlineResult;
  /** Forgets what the previous request sent (a new conversation). */
  reset(): void;
}
