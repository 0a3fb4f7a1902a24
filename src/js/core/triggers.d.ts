// Types of the trigger state machine (src/wasm/js/triggers.js). Spec: compaction §8.
import type {
  AssistantMessage,
  CompactionMethod,
  CompactionSettings,
  CompactReason,
  JsonValue,
  ResolvedCompactionSettings,
} from './session.js';

/** The model a turn runs on: pi-ai's `Model`, as far as the triggers read it. */
export interface TriggerModel {
  provider: string;
  id: string;
  /**
   * Context window in tokens: a number from 1 to 2^53 - 1; leave it out when unknown (0, `NaN`,
   * `Infinity` or a string are `E_INVALID_ARGUMENT`, one check in the core for every call).
   */
  contextWindow?: number;
  /** Maximum output tokens per response (0 to 2^53 - 1). */
  maxTokens?: number;
  /** Input modalities; `'image'` makes snapcompact usable. */
  input?: ReadonlyArray<'text' | 'image'>;
}

/** A time: ms since the epoch, a Date, or an ISO string (as compaction entries carry). */
export type TriggerTime = number | Date | string;

export interface TimeOptions {
  /** Milliseconds since the epoch; default `Date.now()`. */
  now?: number;
}

export interface AfterTurnOptions extends TimeOptions {
  /** Local estimate of the live context (system prompt, tools, messages), counted without encrypted reasoning: the compaction floor. */
  storedTokens?: number;
  /** Timestamp of the latest compaction on the branch: older turns report a context that no longer exists. */
  latestCompactionAt?: TriggerTime;
  /** `contextPromotion.enabled` and a larger-window model with credentials exists. */
  canPromote?: boolean;
  /** Tokens the host's threshold prune just freed (lowers `compact.contextTokens`, not the trigger). */
  freedTokens?: number;
  /** The prune ran before the comparison: `freedTokens` lowers the trigger as well (the Maintainer's rule). */
  freedLowersTrigger?: boolean;
  /** Between tool-loop provider calls: threshold only (if `midTurnEnabled`), never a continuation. */
  midRun?: boolean;
}

export interface BeforePromptOptions extends TimeOptions {
  /** The last assistant message of the live context (else the usage remembered from the last turn). */
  lastAssistant?: AssistantMessage;
  storedTokens?: number;
  latestCompactionAt?: TriggerTime;
  canPromote?: boolean;
}

/** Which entry point asked for a compaction; only `post-turn` passes continue on their own. */
export type CompactionEntryPoint = 'post-turn' | 'mid-run' | 'pre-prompt' | 'model-switch' | 'idle' | 'manual';

/** The `action` of automatic compaction events (spec §8.3). */
export type CompactionAction = 'context-full' | 'handoff' | 'snapcompact' | 'remote' | 'shake';

/** The engine strategy (`compaction.strategy` without `off`). */
export type CompactionStrategy = 'context-full' | 'handoff' | 'shake' | 'snapcompact';

/** A compaction to run now (spec §8.3). Pass it back to `afterCompaction` unchanged. */
export interface CompactRequest {
  reason: CompactReason;
  entry: CompactionEntryPoint;
  /** Retry the failed request afterwards (overflow and incomplete recovery). */
  willRetry: boolean;
  /** The first method's strategy (`remote`, `soft` and `window` run as `context-full`). */
  strategy: CompactionStrategy;
  /** Usable methods of `methodOrder`, in order, never empty (see `compactionMethods`). */
  methods: CompactionMethod[];
  /** The events' action: the first method's, so the events name the method that runs. */
  action: CompactionAction;
  excludeSnapcompact: boolean;
  /** The live context size that triggered (may stand in for `tokensBefore`). */
  contextTokens: number;
  /** The window the result must fit; 0 = unknown. */
  contextWindow: number;
  /** The model's compaction point (`modelThresholds` applied); null for an unknown window. */
  thresholdTokens: number | null;
  /** Recovery from a 413-like payload rejection. */
  payloadRejection: boolean;
  /** The budgets to compact with in this window (see `windowBudgets`); null for an unknown window. */
  budgets: WindowBudgets | null;
}

/**
 * The budgets of one context window (the small-window rules, docs/guide/maintainer.md "Small
 * windows"): from a threshold of 40,000 tokens up every value is the default's; below, each is
 * a share of the threshold `T`.
 */
export interface WindowBudgets {
  contextWindow: number;
  /** The compaction point (`thresholdTokens`); 0 for an unknown window. */
  thresholdTokens: number;
  /** The reserve below the window (`reserveTokens`, with the small-window rescue). */
  reserveTokens: number;
  /** `keepRecentTokens` to compact with: the default (20,000) becomes `min(20000, T/2)`; another value is kept unless it is at least `T`. */
  keepRecentTokens: number;
  /** The setting was at or above the threshold and was clamped to `T/2` (a warning says so once). */
  keepRecentClamped: boolean;
  /** The automatic shake's `protectTokens`: `min(16000, 2T/5)`. */
  shakeProtectTokens: number;
  /** The automatic shake's `minSavings`: `min(4000, T/10)`. */
  shakeMinSavings: number;
  /** The most context a snapcompact compaction may leave: the window minus the reserve; below a 40,000-token threshold, 80 % of it. */
  archiveBudgetTokens: number;
}

/** Describes a manual compaction (`/compact`) to `afterCompaction`; missing fields take defaults. */
export type ManualCompactRequest = Partial<CompactRequest> & { reason: 'manual' };

export interface AutoCompactionStartEvent {
  type: 'auto_compaction_start';
  reason: Exclude<CompactReason, 'manual'>;
  action?: CompactionAction;
}

export interface AutoCompactionEndEvent {
  type: 'auto_compaction_end';
  action?: CompactionAction;
  aborted: boolean;
  willRetry: boolean;
  /** Prefixed: `Context overflow recovery failed: `, `Incomplete response recovery failed: `, `Auto-compaction failed: `. */
  errorMessage?: string;
  /** Nothing could be compacted. */
  skipped?: boolean;
  /** `outcome.result` as passed to `afterCompaction`. */
  result?: JsonValue;
}

/** Automatic compaction events (spec §8.7). */
export type TriggerEvent = AutoCompactionStartEvent | AutoCompactionEndEvent;

export interface Notice {
  level: 'info' | 'warning' | 'error';
  text: string;
}

/** Ask the host to switch to a larger-window model, then call `afterPromotion`. */
export interface PromotionRequest {
  reason: 'threshold' | 'overflow' | 'incomplete';
  /** The live context size the new model must hold comfortably. */
  contextTokens: number;
  /** The current model's window. */
  contextWindow: number;
}

/** Start the next turn after `afterMs`. */
export interface Continuation {
  afterMs: number;
  /** `retry`: re-run the failed request; `queued-messages`: deliver the queued steer/follow-ups; `auto-continue`: send `prompt` as an agent-authored developer message. */
  kind: 'retry' | 'queued-messages' | 'auto-continue';
  /** The auto-continue prompt (for `auto-continue`). */
  prompt: string | null;
  /** Always null since length stops are recovered by compaction (18.2.3); kept for compatibility. */
}

/**
 * What the host must do. Apply in order: `events` and `notices` (write `compactionWarning`
 * into the latest compaction entry's `warning`); `dropFailedTurn` / `restoreFailedTurn`;
 * `promote` (then `afterPromotion`); `compact` (then `afterCompaction`); `continuation`.
 */
export interface Decision {
  events: TriggerEvent[];
  notices: Notice[];
  compactionWarning: string | null;
  /** Remove the assistant turn just reported from the live context (and from the session file when `durable`). */
  dropFailedTurn: { durable: boolean } | null;
  /** Put back the turn an earlier decision removed. */
  restoreFailedTurn: boolean;
  promote: PromotionRequest | null;
  compact: CompactRequest | null;
  continuation: Continuation | null;
  /** Do not start a turn on your own (a prompt the user sends is fine). */
  blockAutoContinue: boolean;
  /** When to call `onIdle` (idle maintenance enabled only). */
  wakeAt: number | null;
}

/** How a compaction ended. `failed.error` is the unprefixed error (or the Error). */
export type CompactionOutcome =
  | { status: 'compacted'; tokensAfter: number; storedTokens?: number; result?: JsonValue }
  | { status: 'nothing-to-compact' }
  | { status: 'aborted' }
  | { status: 'failed'; error: string | Error };

export interface AfterCompactionOptions {
  /** A steer or follow-up message is queued: it drives the next turn. */
  queuedMessages?: boolean;
  /** Manual compaction only: it interrupted a running turn, to be resumed. */
  interruptedTurn?: boolean;
  /** Manual compaction only: do not resume the interrupted turn. */
  suppressContinuation?: boolean;
}

/** Counters and flags of a ContextManager. */
export interface ContextManagerState {
  incompleteRecoveries: number;
  overflowRecoveryAttempted: boolean;
  maintenancePaused: boolean;
  awaitingPromotion: boolean;
  lastActivityAt: number | null;
  idleCompacted: boolean;
  lastUsageTokens: number | null;
}

/** Consecutive no-progress `length` recoveries before giving up. */
export const INCOMPLETE_RECOVERY_MAX_RETRIES: 3;
/** Delay before a retry or continuation starts, in ms. */
export const CONTINUE_DELAY_MS: 100;

/** What the host can compact with besides the settings. */
export interface ContextManagerOptions {
  /** A remote route besides `settings.remoteEndpoint`: an endpoint of the host's, or a provider-native lane. */
  remote?: boolean;
  /**
   * The model, to check at construction: settings under which no method could ever run for it
   * on this host (e.g. `methodOrder: ['snapcompact']` for a text-only model without a
   * summarizer) are refused with `E_SETTINGS`. Compaction switched off is accepted.
   */
  model?: TriggerModel;
  /** The host has a summarizer callback (`soft`, `handoff`, an overflow's fallback); default true. */
  summarizer?: boolean;
  /** The remote route includes an endpoint, which stands in for a missing summarizer; default `remote`. */
  endpoint?: boolean;
}

/** The trigger state machine of one live session (sans-IO: `now` is an input). */
export class ContextManager {
  /**
   * Throws `E_SETTINGS` naming a bad field. `remote`: the host can run the `remote` method
   * without `settings.remoteEndpoint` (its own endpoint, or a provider-native lane), so requests
   * offer it (as `compactionMethods` does with `remote: true`). With `model`, the model is
   * checked (`E_INVALID_ARGUMENT`) and so are the settings against it and the host:
   * `E_SETTINGS` naming why when no compaction method could ever run (see `ContextManagerOptions`).
   */
  constructor(settings?: CompactionSettings, options?: ContextManagerOptions);
  readonly settings: ResolvedCompactionSettings;
  readonly state: ContextManagerState;
  /** A compaction's `remote` method failed at `now` (ms): it is passed over for 10 minutes (upstream #13310). */
  noteRemoteFailure(now: number): void;
  /** Whether `remote` still waits out its cooldown at `now` (ms). */
  remoteBlocked(now: number): boolean;
  /** An assistant turn ended. */
  afterTurn(assistantMessage: AssistantMessage, model: TriggerModel, options?: AfterTurnOptions): Decision;
  /**
   * The once-only warnings about `model` as a decision with notices only: a model without a
   * `contextWindow` (only an overflow error would ever compact), a `keepRecentTokens` too large
   * for its window. Call it when the model is known (a later decision says them otherwise).
   */
  checkModel(model: TriggerModel): Decision;
  /** Answer to `decision.promote`: whether the host switched to a larger model. */
  afterPromotion(promoted: boolean): Decision;
  /** A compaction ended; never asks for another one. */
  afterCompaction(
    request: CompactRequest | ManualCompactRequest,
    outcome: CompactionOutcome,
    options?: AfterCompactionOptions,
  ): Decision;
  /** A user prompt is about to be sent. */
  beforePrompt(model: TriggerModel, options?: BeforePromptOptions): Decision;
  /** The user switches models. */
  beforeModelSwitch(target: TriggerModel, contextTokens: number, options?: TimeOptions): Decision;
  /** Idle maintenance check. */
  onIdle(model: TriggerModel, contextTokens: number, options?: TimeOptions): Decision;
  /** Releases the WebAssembly memory now. */
  free(): void;
}

/** An `error` stop with a provider's overflow wording, or a `stop` whose input + cacheRead exceed the window. */
export function isContextOverflow(message: AssistantMessage, contextWindow?: number): boolean;
export interface CompactionMethodsOptions {
  reason: CompactReason;
  /** The model whose context is compacted (snapcompact needs `input` with `'image'`). */
  model: TriggerModel;
  /** Recovery from a payload (bytes or media) rejection: no snapcompact. */
  payloadRejection?: boolean;
  /** The host has a remote route besides `settings.remoteEndpoint` (e.g. `compact({remoteEndpoint})`). */
  remote?: boolean;
  /** A manual compaction with focus text (it needs an LLM summary): no snapcompact. */
  customInstructions?: string | boolean;
}

/**
 * The methods of `settings.methodOrder` that can run, in order (spec: compaction §8.3, §8.6), by
 * the rule the ContextManager's requests follow: `remote` needs `remoteEnabled` and an endpoint,
 * `snapcompact` an image model (not after a payload rejection or with focus text), `handoff` is
 * not for an overflow; `shake` is not implemented yet and never listed. A manual compaction walks
 * `remote`, `snapcompact` and `soft` only, and ignores `enabled` and `strategy: 'off'`; for the
 * automatic reasons these give `[]`.
 */
export function compactionMethods(
  settings: CompactionSettings | undefined,
  options: CompactionMethodsOptions,
): CompactionMethod[];
/** The `auto_compaction_end` error text for a failed compaction. */
export function compactionErrorMessage(reason: CompactReason, message: string): string;
/**
 * The budgets a compaction uses in a window of `contextWindow` tokens under `settings` (the
 * small-window rules); with `model`, its `modelThresholds` rule applies.
 */
export function windowBudgets(
  contextWindow: number,
  settings?: CompactionSettings,
  model?: { provider: string; id: string },
): WindowBudgets;
