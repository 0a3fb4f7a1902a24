// Types of the Maintainer (src/wasm/js/maintainer.js). Spec: compaction §6, §8.
import type {
  AssistantMessage,
  CompactionHooks,
  CompactionReport,
  CompactionSettings,
  CompactOptions,
  JsonValue,
  LlmMessage,
  NativeCompactionModel,
  NativeCompactionOptions,
  ResolvedCompactionSettings,
  RetryOptions,
  Summarize,
} from '../core/session.js';
import type { ContextManagerState, PromotionRequest, TriggerEvent, TriggerModel } from '../core/triggers.js';
import type { InlineImagerOptions, InlineReport } from './inline.js';
import type { Session } from './session.js';

export interface MaintainerOptions {
  /**
   * The model requests go to: its window sets the thresholds, its `input` decides snapcompact,
   * its `api` / `remoteCompaction` the provider-native lanes of `remote` (and the replay).
   */
  model: TriggerModel & NativeCompactionModel;
  /** Provider-native lanes: the credentials of a request (see `CompactOptions.credentials`). */
  credentials?: CompactOptions['credentials'];
  /** Provider-native lanes: the `fetch` to use (default `globalThis.fetch`). */
  fetch?: CompactOptions['fetch'];
  /** Provider-native lanes: request extras and timing. */
  native?: NativeCompactionOptions;
  /** The summarizer (or candidates tried in order); needed by every method but snapcompact. */
  summarize?: Summarize | Summarize[];
  /** A remote summarizer endpoint (spec: compaction §5.8): the `remote` method. */
  remoteEndpoint?: string;
  /** Headers of remote-endpoint requests. */
  headers?: Record<string, string>;
  /** Compaction settings (spec: compaction §9.2); `methodOrder` picks the method, `strategy: 'off'` stops automatic compaction. */
  settings?: CompactionSettings;
  /** The provider whose image budget applies (default `model.provider`), e.g. `openrouter` (8 images). */
  provider?: string;
  /** `session_before_compact`, `session.compacting`, `session_compact` (and `onEvent`). */
  hooks?: CompactionHooks | CompactionHooks[];
  /** Every event of the maintainer, in order. */
  onEvent?: (event: MaintainerEvent) => void;
  /** Context promotion: resolve a larger-window model to switch to, or null to compact instead. */
  promote?: (request: PromotionRequest) => Promise<TriggerModel | null> | TriggerModel | null;
  /**
   * Stores an artifact: a handoff document when `settings.handoffSaveToDisk` is on, and a
   * shake's recovery text (resolve its id, which the placeholders link as `artifact://ID`).
   */
  saveArtifact?: (artifact: {
    name: string;
    text: string;
    kind: 'handoff' | 'shake';
  }) => string | void | Promise<string | void>;
  /** Summarizer retries. */
  retry?: RetryOptions;
  /** Inline imaging (`settings.snapcompact.toolResults` / `systemPrompt`): the provider's prompt-cache lifetime. */
  cacheTtlMs?: InlineImagerOptions['cacheTtlMs'];
  /** Inline imaging: text tokens for its savings gate (a real tokenizer). */
  countTextTokens?: InlineImagerOptions['countTextTokens'];
  /**
   * Counts a message's tokens (a real tokenizer, an API count) instead of the core's estimate
   * of about four characters a token: the request estimate the thresholds and the progress
   * guard read. It gets each LLM message (and `{ role: 'system', content }` for the system
   * prompt and the tool definitions); a message is counted once and remembered.
   *
   * The token windows that pick what maintenance keeps are then in these tokens too: the
   * Maintainer scales them into the core's estimate by the ratio of that estimate to your
   * count of the live context. That is `settings.keepRecentTokens` (unless the path has
   * provider-reported usage: the core then scales it by the usage, spec: compaction §3.4),
   * `settings.v2RetainedMessageBudget`, and the prunes' windows (the stale pass's 8,000-token
   * tail; the threshold prune's 40,000 protected tokens, 20,000 minimum savings and
   * 8,000-token cache-warm tail). Reports and `prune` events are in these tokens as well
   * (`tokenUnit: 'counted'`).
   */
  tokenCounter?: (message: LlmMessage | { role: 'system'; content: string }) => number;
  /** A message longer than this (its strings together) reaches `tokenCounter` cut to it; the count is scaled back up. Default 200,000. */
  maxCountChars?: number;
  /**
   * Calibrate the estimate from the usage providers report, text and images apart (providers
   * bill images by their pixels whatever their tokenizer): per model, over the last eight
   * answered requests, reported prompt tokens ≈ text estimate × `ratio` + image estimate ×
   * `imageRate` (see `Maintainer.calibration`), and later requests are counted so. With a
   * `tokenCounter` the count, images included, is all text. Default true.
   */
  calibrate?: boolean;
  /** The clock, in ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Schedules idle maintenance; returns a cancel function (default: an unref'd `setTimeout`). */
  setTimer?: (fn: () => void, ms: number) => () => void;
}

export interface BeforeRequestOptions {
  /** The system prompt of the request, as one text or as blocks: counted, kept by a handoff's cache prefix, and imaged when `snapcompact.systemPrompt` says so. */
  systemPrompt?: string | string[];
  /** The tool definitions of the request: counted, and kept by a handoff's cache prefix. */
  tools?: JsonValue[];
}

/**
 * A report of the Maintainer: a `CompactionReport` whose token figures are in `tokenUnit`.
 * `counted`: your `tokenCounter`'s tokens (uncalibrated), `tokensBefore` and `tokensAfter`
 * counted, `tokensByKind` and `shakeTokensFreed` scaled to them from the core's estimate;
 * `estimate`: the core's estimate (spec: compaction §3.1), as `session.compact()` reports.
 */
export interface MaintainerReport extends CompactionReport {
  tokenUnit: 'counted' | 'estimate';
}

export interface BeforeRequestResult {
  /** The messages to send now, within the provider's image and byte budgets. */
  messages: LlmMessage[];
  /**
   * Tokens of the request: messages, system prompt and tools (as text, before inline imaging),
   * counted by `tokenCounter` (else the core's estimate), calibrated: the text times the model's
   * calibration `ratio`, the core's estimate of the images (without a `tokenCounter`) times its
   * `imageRate`.
   */
  tokens: number;
  /** The system prompt to send, when one was given: a stub where inline imaging sent its text as frames. */
  systemPrompt?: string | string[];
  /** What inline imaging did, when it is on and the model reads images. */
  inline?: InlineReport;
  /** What this step's prune or compaction did. */
  report?: MaintainerReport;
}

export interface AfterResponseResult {
  /**
   * `retry`: send the request again (the failed turn is out of the context); `continue`: append
   * `continuePrompt` as a user message and send; `done`: run the reply's tool calls, if any.
   */
  next: 'done' | 'continue' | 'retry';
  /** The auto-continue prompt (for `continue`). */
  continuePrompt?: string;
  report?: MaintainerReport;
}

/** The event stream: triggers' events, warnings, prunes, promotions, handoffs, continuations. */
export type MaintainerEvent =
  | TriggerEvent
  | { type: 'compaction_warning'; message: string; method?: string }
  | { type: 'notice'; level: 'info' | 'warning' | 'error'; text: string }
  /** `tokensSaved` is `report.tokensBefore - report.tokensAfter`, in the report's `tokenUnit`. */
  | { type: 'prune'; pass: 'stale' | 'threshold'; prunedCount: number; tokensSaved: number; report: MaintainerReport }
  | { type: 'promotion'; reason: PromotionRequest['reason']; from: TriggerModel; to: TriggerModel }
  | { type: 'handoff'; session: Session; previous: Session; document: string }
  | { type: 'continue'; kind: 'retry' | 'auto-continue'; afterMs: number };

/**
 * Keeps one live session under its model's window: call `beforeRequest()` before each provider
 * request and `afterResponse()` with each reply. Calls run one at a time, in order.
 */
export class Maintainer {
  /**
   * Throws `E_INVALID_ARGUMENT` for a bad session, model (the window from 1 to 2^53 - 1) or
   * callback; `E_SETTINGS` naming a bad setting, or settings under which no compaction method
   * could ever run for the model with the summarizer and routes given (e.g. `methodOrder:
   * ['snapcompact']` for a text-only model and no `summarize`).
   */
  constructor(session: Session, options: MaintainerOptions);
  /** The live session (a handoff replaces it). */
  readonly session: Session;
  /** The model requests go to (a promotion replaces it). */
  readonly model: TriggerModel;
  readonly settings: ResolvedCompactionSettings;
  readonly state: ContextManagerState;
  /**
   * Per model (`provider/id`), the calibration in use: `ratio`, the provider's tokens per
   * estimated token of text (the median of (reported − images × imageRate) / text over the
   * requests with at least 1,000 tokens of text, 0.5–3); `imageRate`, per estimated token of
   * images (snapcompact frames at 5,024, other images at 1,200; the least-squares fit of the
   * requests when they mix text and images in different proportions, 0.2–4, else its last
   * value, 1 at first); `samples`, the answered requests they come from (at most 8).
   */
  readonly calibration: Record<string, { ratio: number; imageRate: number; samples: number }>;
  /** The stale pass, the pre-prompt or mid-run threshold check, then the messages to send. */
  beforeRequest(options?: BeforeRequestOptions): Promise<BeforeRequestResult>;
  /** Appends the reply, then recovery, threshold maintenance and the progress guard. */
  afterResponse(assistantMessage: AssistantMessage): Promise<AfterResponseResult>;
  /** A manual compaction with optional focus instructions. Rejects with the compaction's coded error. */
  compactNow(instructions?: string): Promise<AfterResponseResult>;
  /** Cancels every compaction, handoff and summarizer call in flight (they end `E_ABORTED`; the session is unchanged). */
  abort(): void;
  /** Stops the idle timer, aborts work in flight, frees the state machine. */
  dispose(): void;
}
