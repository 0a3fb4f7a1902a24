// The trigger state machine (spec: compaction §8): a sans-IO ContextManager. The host reports
// what happened — a turn ended, a prompt is about to go out, the agent is idle, a promotion or
// compaction finished — and applies the Decision it gets back. Nothing here reads a clock
// except to default `now` to Date.now(). Values cross the wasm boundary as JSON text.
import { isObject, nowOf, optionalTime, optionalTokens, optionsJson, requiredTokens, toJson } from './args.js';
import { invalidArgument, messageOf } from './errors.js';
import type { WasmContextManager } from './glue.js';
import { onRaw, requireRaw } from './raw.js';
import type {
  AssistantMessage,
  CompactionAction,
  CompactionMethod,
  CompactionSettings,
  CompactReason,
  JsonValue,
  PruneOptions,
  ResolvedCompactionSettings,
  StopReason,
  Usage,
} from './types.js';

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
  /**
   * The next step of a request/response loop (the Maintainer's `next`): `retry` resends the
   * request, `continue` sends `prompt` as a new message, `done` leaves the next turn to the
   * host (queued messages are its own to deliver).
   */
  next: 'done' | 'continue' | 'retry';
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
  /** The method that ran (a walk may pass the request's first over): the end event names its `action`. */
  method?: CompactionMethod | null | undefined;
}

/**
 * A host's own count of the live context (a `tokenCounter`): the core's estimate of it, the
 * host's count, and the prompt tokens the provider reported for the path (0 without). The
 * prune windows of a step are brought into the core's estimate by it.
 */
export interface HostCount {
  estimated: number;
  counted: number;
  usage: number;
}

/**
 * A prune to run now (spec: compaction §6.5, §6.6): `stale` with `session.pruneStale`,
 * `threshold` with `session.prune`, `options` as given plus the host's `now`. Its windows are
 * in the core's estimate.
 */
export interface PruneStep {
  pass: 'stale' | 'threshold';
  options: PruneOptions;
}

/** The facts of a step of a request/response loop (`beforeRequest`, `afterReply`). */
export interface StepOptions extends TimeOptions {
  /** Local estimate of the live context with the request overhead, measured after the step's prune. */
  storedTokens?: number;
  latestCompactionAt?: TriggerTime;
  canPromote?: boolean;
  /** `afterReply`: the tokens the reply's threshold prune freed (they lower the trigger). */
  freedTokens?: number;
  /** `beforeRequest`: the live session's state (which session, its size, its leaf); the state last given to `settle` means nothing was appended since. */
  state?: string;
  /**
   * `beforeRequest`: the request carries the provider's compaction (spec: compaction §13: the
   * model opted in with `remoteCompaction.inline` and the request is a Responses one). The
   * threshold is then the server's first: the threshold compaction waits until a reply at or
   * over it comes back without a compaction (`serverCompacted` reports one).
   */
  serverCompaction?: boolean;
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
 * A host's model as the JSON the core's calls take, checked by the core (`hostModelJson`: the
 * one check of a model's `provider`, `id`, `contextWindow`, `maxTokens` and `input`, which
 * throws `E_INVALID_ARGUMENT` naming the field). `what` names the model in errors.
 * @internal
 */
export function modelJson(model: unknown, what = 'model'): string {
  return requireRaw().hostModelJson(model, what);
}

function assistantOf(message: unknown, what = 'the message'): Record<string, unknown> {
  if (!isObject(message) || (message.role !== undefined && message.role !== 'assistant')) {
    throw invalidArgument(`${what} must be an assistant message (role "assistant")`);
  }
  return message;
}

/** Consecutive no-progress `length` recoveries before giving up (spec §8.2; 3, the core's). */
export let INCOMPLETE_RECOVERY_MAX_RETRIES: number;
/** Delay before a retry or continuation starts, in ms (spec §8.3, §8.5; 100, the core's). */
export let CONTINUE_DELAY_MS: number;

onRaw((bindings) => {
  const c: { continueDelayMs: number; incompleteRecoveryMaxRetries: number } = JSON.parse(
    bindings.triggersConstantsJson(),
  );
  CONTINUE_DELAY_MS = c.continueDelayMs;
  INCOMPLETE_RECOVERY_MAX_RETRIES = c.incompleteRecoveryMaxRetries;
});

/**
 * The trigger state machine of one live session (spec: compaction §8). Apply a Decision in
 * this order: events and notices; dropFailedTurn / restoreFailedTurn; promote (then
 * afterPromotion); compact (emit compact's start event, run it, then afterCompaction);
 * continuation after `afterMs` unless blockAutoContinue.
 */
export class ContextManager {
  #inner: WasmContextManager;

  /**
   * Throws `E_SETTINGS` naming a bad field. `options.remote`: the host can run the `remote`
   * method without `settings.remoteEndpoint` (e.g. it passes its own endpoint to `compact()`).
   * With `options.model` the model is checked (`E_INVALID_ARGUMENT`), and so are the settings
   * against it and the host: `E_SETTINGS` when no compaction method could ever run
   * (`summarizer`: the host has a summarizer callback, default true; `endpoint`: its remote
   * route includes an endpoint, which stands in for a missing summarizer, default `remote`).
   */
  constructor(settings?: CompactionSettings, options?: ContextManagerOptions) {
    const o: unknown = options ?? {};
    if (!isObject(o)) throw invalidArgument('ContextManager options must be an object');
    const remote = Boolean(o.remote);
    const model = o.model === undefined ? undefined : modelJson(o.model, 'options.model');
    const inner = new (requireRaw().WasmContextManager)(optionsJson(settings, 'settings'), remote);
    if (model !== undefined) {
      const host = {
        summarizer: o.summarizer !== false,
        remoteEndpoint: o.endpoint === undefined ? remote : Boolean(o.endpoint),
        nativeLane: remote && o.endpoint !== undefined && !o.endpoint,
      };
      try {
        inner.checkMethods(model, JSON.stringify(host));
      } catch (err) {
        inner.free();
        throw err;
      }
    }
    this.#inner = inner;
  }

  /** The settings in use, with defaults filled in. */
  get settings(): ResolvedCompactionSettings {
    return JSON.parse(this.#inner.settingsJson());
  }

  /** Counters and flags (recoveries, episode, pause, idle), for inspection. */
  get state(): ContextManagerState {
    return JSON.parse(this.#inner.stateJson());
  }

  /** A compaction's `remote` method failed at `now` (ms): it is passed over for 10 minutes (upstream #13310). */
  noteRemoteFailure(now: number): void {
    this.#inner.noteRemoteFailure(nowOf({ now }));
  }

  /** Whether `remote` still waits out its cooldown at `now` (ms). */
  remoteBlocked(now: number): boolean {
    return this.#inner.remoteBlocked(nowOf({ now }));
  }

  /** An assistant turn ended (post-turn check, or a mid-run check with `midRun`). */
  afterTurn(assistantMessage: AssistantMessage, model: TriggerModel, options?: AfterTurnOptions): Decision {
    const o: AfterTurnOptions = options ?? {};
    const json = JSON.stringify({
      now: nowOf(o),
      storedTokens: optionalTokens(o.storedTokens, 'storedTokens'),
      latestCompactionAt: optionalTime(o.latestCompactionAt, 'latestCompactionAt'),
      canPromote: Boolean(o.canPromote),
      freedTokens: optionalTokens(o.freedTokens, 'freedTokens'),
      freedLowersTrigger: Boolean(o.freedLowersTrigger),
      midRun: Boolean(o.midRun),
    });
    const message = toJson(assistantOf(assistantMessage, 'afterTurn() takes an assistant message that'));
    return JSON.parse(this.#inner.afterTurn(message, modelJson(model), json));
  }

  // ----- a request/response loop (the Maintainer's policy) -----------------------------

  /**
   * The stale pass to run before a request (spec: compaction §6.5), or null when
   * `supersedeReads` and `dropUseless` are off. `count`: the host counts tokens itself.
   */
  stalePass(count?: HostCount): PruneStep | null {
    const c = hostCount(count);
    return JSON.parse(this.#inner.stalePass(c !== undefined, c?.estimated ?? 0, c?.counted ?? 0, c?.usage ?? 0));
  }

  /**
   * The rewrites of earlier history that waited for a break (`cacheAware`): the threshold prune
   * to run before a request once the provider's cache has gone cold at `now` (ms), or null.
   */
  breakPrune(now: number, count?: HostCount): PruneStep | null {
    const c = hostCount(count);
    return JSON.parse(this.#inner.breakPrune(c !== undefined, c?.estimated ?? 0, c?.counted ?? 0, c?.usage ?? 0, now));
  }

  /**
   * A reply the host appended. True: it asked for tools and is checked before the next request,
   * with their results counted (`beforeRequest`). False: run `replyPrune()`, then `afterReply`.
   */
  onReply(assistantMessage: AssistantMessage): boolean {
    return this.#inner.onReply(toJson(assistantOf(assistantMessage, 'onReply() takes an assistant message that')));
  }

  /** The reply `onReply` took carried the provider's compaction and the host committed it (spec: compaction §13). */
  serverCompacted(): void {
    this.#inner.serverCompacted();
  }

  /**
   * The threshold prune to run before the check of the reply `onReply` took (spec: compaction
   * §6.6), or null (compaction disabled, a failed or aborted turn, no reply waiting).
   */
  replyPrune(count?: HostCount): PruneStep | null {
    const c = hostCount(count);
    return JSON.parse(this.#inner.replyPrune(c !== undefined, c?.estimated ?? 0, c?.counted ?? 0, c?.usage ?? 0));
  }

  /** The check of the reply `onReply` took, `options.freedTokens` what its prune freed (spec: compaction §8.2). */
  afterReply(model: TriggerModel, options?: StepOptions): Decision {
    return JSON.parse(this.#inner.afterReply(modelJson(model), stepJson(options)));
  }

  /**
   * A request is about to be sent (after the stale pass): the mid-run check of a reply that
   * asked for tools, else the pre-prompt check; null when the session is in the state last
   * given to `settle` (a retry: nothing new to check).
   */
  beforeRequest(model: TriggerModel, options?: StepOptions): Decision | null {
    return JSON.parse(this.#inner.beforeRequest(modelJson(model), stepJson(options)));
  }

  /**
   * What a compaction run for `request` keeps, in the core's estimate: the request's
   * window-fitted `keepRecentTokens` (the settings' for a request without budgets) and
   * `v2RetainedMessageBudget`, scaled by `count` when the host counts tokens itself.
   */
  keepBudgets(
    request: CompactRequest | ManualCompactRequest,
    count?: HostCount,
  ): { keepRecentTokens: number; v2RetainedMessageBudget: number } {
    if (!isObject(request)) throw invalidArgument("request must be the decision's `compact` object");
    const c = hostCount(count);
    return JSON.parse(
      this.#inner.keepBudgets(
        JSON.stringify(request),
        c !== undefined,
        c?.estimated ?? 0,
        c?.counted ?? 0,
        c?.usage ?? 0,
      ),
    );
  }

  /**
   * Background compaction (spec: compaction §13), the Maintainer's: whether the host runs it,
   * the step the last `afterReply` / `beforeRequest` decided (with the threshold request a
   * start prepares), and what became of the background plan.
   * @internal
   */
  _setSpeculationHost(allowed: boolean): void {
    this.#inner.setSpeculationHost(allowed);
  }

  /** @internal */
  _speculation(model: TriggerModel): {
    step: 'none' | 'start' | 'refresh' | 'wait' | 'commit' | 'drop';
    state: 'idle' | 'running' | 'armed';
    request: CompactRequest | null;
  } {
    return JSON.parse(this.#inner.speculationJson(modelJson(model)));
  }

  /** @internal */
  _speculationReady(): void {
    this.#inner.speculationReady();
  }

  /** @internal */
  _speculationEnded(): void {
    this.#inner.speculationEnded();
  }

  /** The live session's state at the end of a step of the host's loop, as `beforeRequest` will name it. */
  settle(state: string): void {
    if (typeof state !== 'string') throw invalidArgument('settle() takes the session state as a string');
    this.#inner.settle(state);
  }

  /**
   * The once-only warnings about `model` as a decision with notices only: a model without a
   * `contextWindow` (only an overflow error would ever compact), a `keepRecentTokens` too large
   * for its window. Call it when the model is known (a later decision says them otherwise).
   */
  checkModel(model: TriggerModel): Decision {
    return JSON.parse(this.#inner.checkModel(modelJson(model)));
  }

  /** The host tried the promotion a decision asked for (`decision.promote`); `promoted` says whether it switched to a larger model. */
  afterPromotion(promoted: boolean): Decision {
    return JSON.parse(this.#inner.afterPromotion(Boolean(promoted)));
  }

  /**
   * A compaction ended. `request` is the decision's `compact` (or `{reason: 'manual', ...}`);
   * `outcome.result` (the compaction result) is put on the `auto_compaction_end` event. It never
   * asks for another compaction.
   */
  afterCompaction(
    request: CompactRequest | ManualCompactRequest,
    outcome: CompactionOutcome,
    options?: AfterCompactionOptions,
  ): Decision {
    const given: unknown = outcome;
    if (!isObject(request)) throw invalidArgument("request must be the decision's `compact` object");
    if (!isObject(given) || typeof given.status !== 'string') {
      throw invalidArgument('outcome must be an object with a string `status`');
    }
    let out: object;
    switch (outcome.status) {
      case 'compacted':
        out = {
          status: 'compacted',
          tokensAfter: requiredTokens(outcome.tokensAfter, 'tokensAfter'),
          storedTokens: optionalTokens(outcome.storedTokens, 'storedTokens'),
        };
        break;
      case 'failed':
        out = { status: 'failed', error: messageOf(outcome.error) };
        break;
      case 'nothing-to-compact':
      case 'aborted':
        out = { status: outcome.status };
        break;
      default:
        throw invalidArgument(
          `unknown outcome status "${given.status}": use "compacted", "nothing-to-compact", "aborted" or "failed"`,
        );
    }
    const o: AfterCompactionOptions = options ?? {};
    const json = JSON.stringify({
      queuedMessages: Boolean(o.queuedMessages),
      interruptedTurn: Boolean(o.interruptedTurn),
      suppressContinuation: Boolean(o.suppressContinuation),
      method: typeof o.method === 'string' ? o.method : undefined,
    });
    const decision: Decision = JSON.parse(
      this.#inner.afterCompaction(JSON.stringify(request), JSON.stringify(out), json),
    );
    if (outcome.status === 'compacted' && outcome.result !== undefined) {
      for (const e of decision.events) {
        if (e.type === 'auto_compaction_end') e.result = outcome.result;
      }
    }
    return decision;
  }

  /** A user prompt is about to be sent: resets per-prompt counters, may compact first. */
  beforePrompt(model: TriggerModel, options?: BeforePromptOptions): Decision {
    const o: BeforePromptOptions = options ?? {};
    const json = JSON.stringify({
      now: nowOf(o),
      lastAssistant:
        o.lastAssistant === undefined || o.lastAssistant === null
          ? undefined
          : assistantOf(o.lastAssistant, '`lastAssistant`'),
      storedTokens: optionalTokens(o.storedTokens, 'storedTokens'),
      latestCompactionAt: optionalTime(o.latestCompactionAt, 'latestCompactionAt'),
      canPromote: Boolean(o.canPromote),
    });
    return JSON.parse(this.#inner.beforePrompt(modelJson(model), json));
  }

  /** The user switches to `target`: compact first when the context is over its threshold. */
  beforeModelSwitch(target: TriggerModel, contextTokens: number, options?: TimeOptions): Decision {
    return JSON.parse(
      this.#inner.beforeModelSwitch(
        modelJson(target, 'target'),
        requiredTokens(contextTokens, 'contextTokens'),
        nowOf(options),
      ),
    );
  }

  /** Idle maintenance check; call it at the decision's `wakeAt`. */
  onIdle(model: TriggerModel, contextTokens: number, options?: TimeOptions): Decision {
    return JSON.parse(
      this.#inner.onIdle(modelJson(model), requiredTokens(contextTokens, 'contextTokens'), nowOf(options)),
    );
  }

  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free(): void {
    this.#inner.free();
  }
}

function hostCount(count: HostCount | undefined): HostCount | undefined {
  const given: unknown = count;
  if (given === undefined || given === null) return undefined;
  if (!isObject(given)) throw invalidArgument('count must be {estimated, counted, usage}');
  return {
    estimated: requiredTokens(given.estimated, 'count.estimated'),
    counted: requiredTokens(given.counted, 'count.counted'),
    usage: requiredTokens(given.usage, 'count.usage'),
  };
}

function stepJson(options: StepOptions | undefined): string {
  const o: StepOptions = options ?? {};
  if (o.state !== undefined && typeof o.state !== 'string') throw invalidArgument('`state` must be a string');
  return JSON.stringify({
    now: nowOf(o),
    storedTokens: optionalTokens(o.storedTokens, 'storedTokens'),
    latestCompactionAt: optionalTime(o.latestCompactionAt, 'latestCompactionAt'),
    canPromote: Boolean(o.canPromote),
    freedTokens: optionalTokens(o.freedTokens, 'freedTokens'),
    state: o.state,
    serverCompaction: o.serverCompaction === true,
  });
}

/**
 * How a compaction that threw `err` ended, as the core maps its error code (spec: compaction
 * §8.3): nothing to compact, aborted, or failed with its message.
 * @internal
 */
export function compactionOutcomeOf(err: unknown): CompactionOutcome {
  const code: unknown = isObject(err) ? err.code : undefined;
  return JSON.parse(requireRaw().compactionOutcomeOfError(typeof code === 'string' ? code : undefined, messageOf(err)));
}

/**
 * True when an assistant message reports a context overflow (spec §8.2): an `error` stop the
 * core's classifier reads as one (a provider's overflow wording, or the bare 400/413/429 status),
 * or a `stop` whose input + cacheRead exceed `contextWindow`. `classifyError` tells the rest.
 */
export function isContextOverflow(message: AssistantMessage, contextWindow?: number): boolean {
  const json = toJson(assistantOf(message));
  return requireRaw().isContextOverflowJson(json, optionalTokens(contextWindow, 'contextWindow'));
}

/**
 * What `classifyError` reads (spec: compaction §8.2, issue 39). Every field is optional: give
 * what the failed call or the turn has.
 */
export interface ClassifyErrorInput {
  /** The HTTP status (read from the text's start, `413 …`, when absent). */
  status?: number;
  /** The provider and API the call went to (informational: every provider's table is read). */
  provider?: string;
  api?: string;
  /** The error's message (an SDK error's `message`). */
  message?: string;
  /** The error body: its text, or the parsed JSON (read as its JSON text). */
  body?: unknown;
  /** The `Retry-After` header value: seconds, or an HTTP date read against `now`. */
  retryAfter?: string | number;
  /** When the error arrived (ms since the epoch; default now), for a `Retry-After` date. */
  now?: number;
  /** The turn's stop reason; absent reads as an error. */
  stopReason?: StopReason;
  /** The turn's reported usage: `input + cacheRead` against the window, `output` 0 = nothing delivered. */
  usage?: Partial<Pick<Usage, 'input' | 'output' | 'cacheRead'>>;
  /**
   * Whether the turn delivered any output (text or a tool call). Overrides `usage.output`, which
   * counts reasoning tokens too: a `length` stop whose budget went to reasoning is truncated.
   */
  delivered?: boolean;
  /** The model's context window, for the silent overflow. */
  contextWindow?: number;
}

/**
 * The class of a failure (spec: compaction §8.2): a context overflow (with the limit and the
 * requested size when the provider's text carries them), a payload refused for its bytes or an
 * attachment (not a token problem), a rate limit (with the wait when given), a transient fault
 * (5xx, overloaded, time-out, connection), an auth failure, another rejected request (4xx), a
 * silent overflow (a `stop` whose reported input exceeds the window), a truncated answer (a
 * `length` stop with no output), or none of these.
 */
export type ErrorClass =
  | { class: 'context_overflow'; limitTokens?: number; requestedTokens?: number }
  | { class: 'payload_too_large'; kind: 'bytes' | 'media' }
  | { class: 'rate_limit'; retryAfterMs?: number }
  | { class: 'transient' }
  | { class: 'auth' }
  | { class: 'invalid_request' }
  | { class: 'silent_overflow'; inputTokens: number; contextWindow: number }
  | { class: 'truncated' }
  | { class: 'other' };

/**
 * The class of an error or a turn, by the core's tables of every major provider's wordings,
 * codes and statuses (spec: compaction §8.2, issue 39). Throws `E_INVALID_ARGUMENT` for an
 * input that is not an object or a field of the wrong type.
 */
export function classifyError(input: ClassifyErrorInput): ErrorClass {
  const given: unknown = input;
  if (!isObject(given)) throw invalidArgument('classifyError() takes an object');
  const { message, body, status, retryAfter, stopReason, usage, contextWindow, delivered } = input;
  if (message !== undefined && typeof message !== 'string') throw invalidArgument('`message` must be a string');
  if (delivered !== undefined && typeof delivered !== 'boolean') throw invalidArgument('`delivered` must be a boolean');
  if (usage !== undefined && !isObject(usage)) throw invalidArgument('`usage` must be an object');
  // The body as text: a string as it is, anything else as its JSON.
  let bodyText: string | undefined;
  if (typeof body === 'string') bodyText = body;
  else if (body !== undefined && body !== null) bodyText = JSON.stringify(body);
  const text = [message, bodyText].filter((t) => t !== undefined && t !== '').join('\n');
  const prompt =
    usage === undefined
      ? undefined
      : (optionalTokens(usage.input, 'usage.input') ?? 0) + (optionalTokens(usage.cacheRead, 'usage.cacheRead') ?? 0);
  const json = JSON.stringify({
    text,
    status,
    retryAfter,
    now: nowOf({ now: input.now }),
    stopReason,
    promptTokens: prompt,
    outputTokens: usage?.output === undefined ? undefined : optionalTokens(usage.output, 'usage.output'),
    contextWindow: optionalTokens(contextWindow, 'contextWindow'),
    delivered,
  });
  return JSON.parse(requireRaw().classifyErrorJson(json));
}

/**
 * The methods of `settings.methodOrder` that can run for `reason` on `model`, in order (spec
 * §8.3, §8.6): the rule the ContextManager's requests follow, for a host walking the fallback
 * list itself. `remote` says the host has a remote route besides `settings.remoteEndpoint`;
 * `customInstructions` (a manual compaction with focus text) rules out snapcompact.
 */
export function compactionMethods(
  settings: CompactionSettings | undefined,
  options: CompactionMethodsOptions,
): CompactionMethod[] {
  const given: unknown = options;
  if (!isObject(given) || typeof given.reason !== 'string') {
    throw invalidArgument('compactionMethods() needs options with a string `reason`');
  }
  const { reason, model, payloadRejection, remote, customInstructions } = options;
  const json = JSON.stringify({
    payloadRejection: Boolean(payloadRejection),
    remote: Boolean(remote),
    customInstructions:
      typeof customInstructions === 'string' ? customInstructions.trim() !== '' : Boolean(customInstructions),
  });
  const raw = requireRaw().compactionMethodsJson(optionsJson(settings, 'settings'), reason, modelJson(model), json);
  return JSON.parse(raw);
}

/** The `auto_compaction_end` error text for a failed compaction (spec §8.3 prefixes). */
export function compactionErrorMessage(reason: CompactReason, message: string): string {
  const given: unknown = reason;
  if (typeof given !== 'string' || typeof message !== 'string') {
    throw invalidArgument('reason and message must be strings');
  }
  return requireRaw().compactionErrorMessage(reason, message);
}

/**
 * The budgets a compaction uses in a window (spec: compaction §3.3 with the small-window rules):
 * `keepRecentTokens`, the automatic shake's protection, the snapcompact archive's room. With
 * `model` (`{provider, id}`) its `modelThresholds` rule applies.
 */
export function windowBudgets(
  contextWindow: number,
  settings?: CompactionSettings,
  model?: { provider: string; id: string },
): WindowBudgets {
  const given: unknown = model;
  let key: string | undefined;
  if (given !== undefined && given !== null) {
    if (!isObject(given) || typeof given.provider !== 'string' || typeof given.id !== 'string') {
      throw invalidArgument('`model` must be an object with string `provider` and `id`');
    }
    key = JSON.stringify({ provider: given.provider, id: given.id });
  }
  const window = requiredTokens(contextWindow, 'contextWindow');
  return JSON.parse(requireRaw().windowBudgetsJson(window, optionsJson(settings, 'settings'), key));
}
