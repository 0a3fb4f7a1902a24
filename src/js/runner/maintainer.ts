// The Maintainer: the trigger state machine (`ContextManager`, spec: compaction §8) with the
// host's side of every decision carried out, so an agent loop needs two calls per request:
// `beforeRequest()` for the messages to send, `afterResponse()` with the reply.
//
// It owns the awaits, the idle timer and the AbortController; the rules stay in the core:
// when to compact, retry, promote, continue or give up, when to prune and with what windows,
// when a reply is checked and when a request is a retry (ContextManager), how to compact
// (`runCompaction`, which walks `methodOrder`), what to prune (`prune` / `pruneStale`).
import { isObject } from '../core/args.js';
import { codedError, invalidArgument, messageOf } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';
import type {
  AssistantMessage,
  CacheForecast,
  CompactionCommit,
  CompactionHooks,
  CompactionPlan,
  CompactionProgress,
  CompactionProgressEvent,
  CompactionReport,
  CompactionSettings,
  CompactOptions,
  CompactOutcome,
  JsonValue,
  LlmMessage,
  NativeCompactionModel,
  NativeCompactionOptions,
  PrefixChange,
  PruneReport,
  ResolvedCompactionSettings,
  ResponseMessage,
  RetryOptions,
  Summarize,
} from '../core/session.js';
import { FRAME_DATA_BYTES_BUDGET } from '../core/snapcompact.js';
import { type CountedMessage, type TokenCounter, TokenGauge } from '../core/tokens.js';
import type {
  CompactionOutcome,
  CompactRequest,
  ContextManagerState,
  Decision,
  HostCount,
  ManualCompactRequest,
  PromotionRequest,
  PruneStep,
  TriggerEvent,
  TriggerModel,
} from '../core/triggers.js';
import { ContextManager, compactionOutcomeOf, modelJson } from '../core/triggers.js';
import type { FormatWarning } from '../formats/common.js';
import { formatOf } from '../formats/index.js';
import type { FormatMessages, MessageFormat } from '../formats/types.js';
import { inlineContextManagement } from '../providers/native-openai.js';
import { nativeLane, runCompaction } from './compact.js';
import { InlineImager, type InlineImagerOptions, type InlineReport } from './inline.js';
import { cacheForecast, contextSnapshot, requestImages, scaleReport, textTokens } from './report.js';
import type { Session } from './session.js';
import {
  type Candidate,
  callHook,
  defined,
  handlers,
  memberOf,
  type SummarizeCalls,
  summarizeOne,
} from './summarizer.js';
import { answerContextToolCalls, type ContextToolFigures, runContextTool } from './tools.js';

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
    // biome-ignore lint/suspicious/noConfusingVoidType: a callback that returns nothing fits
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
  /**
   * The Maintainer answers the model's calls of the context tools (`contextTools({format})`:
   * `recall_history`, `context_status`): `afterResponse` appends their results and lists the
   * calls in `contextToolCalls`. Give `settings.recallTool: true` too, so compactions point the
   * model at `recall_history`. Default false.
   */
  contextTools?: boolean;
  /**
   * Background compaction (spec: compaction §13): as the context nears the threshold, the
   * compaction it will need is prepared off the critical path (its summarizer requests are not
   * awaited by `afterResponse` / `beforeRequest`); at the threshold the prepared result is
   * committed at once when it still fits the session, else dropped as stale and the compaction
   * runs inline. Needs a `summarize` callback and `soft` as the threshold's first usable
   * method; off while a `session_before_compact` hook is registered. Default: the settings'
   * `asyncEnabled` (true).
   */
  background?: boolean;
  /** The clock, in ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Schedules idle maintenance; returns a cancel function (default: an unref'd `setTimeout`). */
  setTimer?: (fn: () => void, ms: number) => () => void;
}

export interface BeforeRequestOptions<F extends MessageFormat = MessageFormat> {
  /**
   * The message format of `messages` (and `system`), as `session.toMessages({ format })` writes
   * it (docs/guide/formats.md). Default: pi's provider messages (`LlmMessage`), no `system`.
   */
  format?: F;
  /** The system prompt of the request, as one text or as blocks: counted, kept by a handoff's cache prefix, and imaged when `snapcompact.systemPrompt` says so. */
  systemPrompt?: string | string[];
  /** The tool definitions of the request: counted, and kept by a handoff's cache prefix. */
  tools?: readonly unknown[];
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

export interface BeforeRequestResult<F extends MessageFormat = 'pi'> {
  /** The messages to send now, within the provider's image and byte budgets (in `format`, when given). */
  messages: Array<FormatMessages[F]['out']>;
  /**
   * With `format`: the system prompt where the format keeps it apart from the messages (the
   * request's `systemPrompt` as sent, else the one the session keeps).
   */
  system?: FormatMessages[F]['systemOut'];
  /** With `format`: what the format could not carry. */
  warnings?: FormatWarning[];
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
  report?: MaintainerReport | undefined;
  /**
   * With `format: 'openai-responses'`, when the model opted in (`remoteCompaction.inline`): the
   * request's `context_management` (server compaction inside the request, spec: compaction §13).
   * With `remoteCompaction.compactionTrigger: true` there is none: `messages` ends with Codex's
   * `{type: 'compaction_trigger'}` item instead, once the context reached the threshold.
   */
  contextManagement?: JsonValue;
}

export interface AfterResponseResult {
  /**
   * `retry`: send the request again (the failed turn is out of the context); `continue`: append
   * `continuePrompt` as a user message and send; `done`: run the reply's tool calls, if any.
   */
  next: 'done' | 'continue' | 'retry';
  /** With `contextTools`: the ids of the reply's tool calls the Maintainer answered (their results are appended); run the others. */
  contextToolCalls?: string[];
  /** The auto-continue prompt (for `continue`). */
  continuePrompt?: string;
  report?: MaintainerReport | undefined;
}

/** The event stream: triggers' events, warnings, prunes, promotions, handoffs, continuations. */
export type MaintainerEvent =
  | TriggerEvent
  | { type: 'compaction_warning'; message: string; method?: string }
  /** Progress of a compaction's long steps: frames drawn k of n, summarizer requests (issue 41). */
  | CompactionProgressEvent
  | { type: 'notice'; level: 'info' | 'warning' | 'error'; text: string }
  /** `tokensSaved` is `report.tokensBefore - report.tokensAfter`, in the report's `tokenUnit`. */
  | {
      type: 'prune';
      pass: 'stale' | 'threshold';
      prunedCount: number;
      tokensSaved: number;
      report: MaintainerReport;
      /** The first message of the request the prune changed (`report.prefixChangedAt`). */
      prefixChangedAt?: PrefixChange | undefined;
      /** What it costs the provider's prompt cache (`report.forecast`). */
      forecast?: CacheForecast | undefined;
    }
  | { type: 'promotion'; reason: PromotionRequest['reason']; from: TriggerModel; to: TriggerModel }
  | { type: 'handoff'; session: Session; previous: Session; document: string }
  | { type: 'continue'; kind: 'retry' | 'auto-continue'; afterMs: number }
  | ServerCompactionEvent
  | SpeculationEvent;

/**
 * The provider compacted inside the host's own request (OpenAI `context_management` or the
 * `compaction_trigger` item; spec: compaction §13) and the Maintainer committed its item after
 * the reply: the compaction entry, the context before and after in the report's `tokenUnit`
 * (`report`, method `remote`, reason `threshold`), where the request changed and what that
 * costs the provider's prompt cache. `providerTokensBefore` is the input the provider reported
 * for the request it compacted (input + cache reads), when the reply carried usage.
 */
export interface ServerCompactionEvent {
  type: 'server_compaction';
  entryId: string;
  tokensBefore: number;
  tokensAfter: number;
  providerTokensBefore?: number;
  report: MaintainerReport;
  /** The first message of the next request the compaction changed (`report.prefixChangedAt`). */
  prefixChangedAt?: PrefixChange | undefined;
  /** What it costs the provider's prompt cache (`report.forecast`). */
  forecast?: CacheForecast | undefined;
}

/**
 * Background compaction (spec: compaction §13): a preparation started (`tokens`: the context
 * then), is ready to commit, was found stale (`reason`), was committed instead of an inline
 * compaction, or was cancelled (`reason`: `abort`, `dispose`, `refresh`, `superseded` by
 * another compaction, `failed` with the summarizer's `message`).
 */
export type SpeculationEvent =
  | { type: 'speculation_start'; tokens: number; entriesSummarized: number }
  | { type: 'speculation_ready' }
  | { type: 'speculation_stale'; reason: string }
  | { type: 'speculation_commit'; entryId: string; tokensBefore: number; tokensAfter: number }
  | {
      type: 'speculation_abort';
      reason: 'abort' | 'dispose' | 'refresh' | 'superseded' | 'failed';
      message?: string;
    };

/** The counts of background compactions (`Maintainer.backgroundStats`). */
export interface BackgroundStats {
  /** `idle`, `running` (summarizer requests in flight) or `armed` (ready to commit). */
  state: 'idle' | 'running' | 'armed';
  started: number;
  ready: number;
  committed: number;
  stale: number;
  aborted: number;
  failed: number;
}

/** A background compaction: its plan, its own AbortController, and whether it is armed. */
interface BackgroundRun {
  plan: CompactionPlan;
  session: Session;
  controller: AbortController;
  ready: boolean;
  /** The messages its summary covers (the preparation's). */
  entries: number;
  /** Settles when its requests are answered, failed or aborted (never rejects). */
  done: Promise<void>;
}

/** A step of maintenance: what it pruned, its report, the turn a decision may drop, the method that ran. */
interface Step {
  pruned: number;
  report: MaintainerReport | undefined;
  failedId?: string;
  method?: CompactOutcome['method'];
}

/** The live context measured once per session state (see `#measure`). */
interface Measure {
  session: Session;
  key: string;
  value: number;
  images: number;
  estimated: number;
  usage: number;
}

/** A compaction request of a decision, or a manual one. */
type AnyCompactRequest = CompactRequest | (ManualCompactRequest & { willRetry?: boolean });

/** A timer that never keeps a Node.js process alive. */
function defaultTimer(fn: () => void, ms: number): () => void {
  const t: ReturnType<typeof setTimeout> & { unref?: () => void } = setTimeout(fn, ms);
  t?.unref?.();
  return () => clearTimeout(t);
}

/**
 * Keeps one live session under its model's window: call `beforeRequest()` before each provider
 * request and `afterResponse()` with each reply. Calls run one at a time, in the order they
 * were made.
 */
export class Maintainer {
  #session: Session;
  #model: TriggerModel & NativeCompactionModel;
  #o: MaintainerOptions;
  #cm: ContextManager;
  #settings: ResolvedCompactionSettings;
  #now: () => number;
  #setTimer: (fn: () => void, ms: number) => () => void;
  #controller = new AbortController();
  #queue: Promise<unknown> = Promise.resolve();
  #cancelIdle: (() => void) | null = null;
  #disposed = false;
  /** The last `beforeRequest` argument (a handoff keeps its cache prefix) and its tokens. */
  #request: BeforeRequestOptions = {};
  #overhead = 0;
  #latestCompactionAt: string | number | undefined;
  /** The compaction the live context starts from (the progress guard stamps its warning there). */
  #latestCompactionId: string | null;
  /** Counts the sessions a handoff started: the live session's part of its state (`#state`). */
  #sessions = 0;
  /** The failed assistant entry a decision took out of the context. */
  #dropped: string | null = null;
  /** `#measure`'s memo of the live context (null: measure again). */
  #tokens: Measure | null = null;
  /** The host's token counter and the calibration from reported usage. */
  #gauge: TokenGauge;
  /** Inline imaging (`snapcompact.systemPrompt` / `snapcompact.toolResults`), when either is on. */
  #imager: InlineImager | null = null;
  /** The image budget of the model (`#imageBudget`), kept while the model and route stay. */
  #budget: { model: TriggerModel; provider: string; images: number } | null = null;
  /** The frames the last view left out of the compaction summary (its budgets). */
  #framesLeftOut = 0;
  /** Background compaction (spec: compaction §13): the run, whether this step may commit it, the counts. */
  #bg: BackgroundRun | null = null;
  #bgCommit = false;
  #bgStats: Omit<BackgroundStats, 'state'> = { started: 0, ready: 0, committed: 0, stale: 0, aborted: 0, failed: 0 };

  /**
   * Throws `E_INVALID_ARGUMENT` for a bad session, model (the window from 1 to 2^53 - 1) or
   * callback; `E_SETTINGS` naming a bad setting, or settings under which no compaction method
   * could ever run for the model with the summarizer and routes given (e.g. `methodOrder:
   * ['snapcompact']` for a text-only model and no `summarize`).
   */
  constructor(session: Session, options: MaintainerOptions) {
    if (typeof memberOf(session, 'planCompaction') !== 'function') {
      throw invalidArgument('new Maintainer() takes a Session');
    }
    // A JavaScript caller may pass nothing: the core refuses the missing model.
    const o = (options ?? {}) as MaintainerOptions;
    if (!isObject(o)) throw invalidArgument('Maintainer options must be an object');
    for (const k of ['promote', 'onEvent', 'now', 'setTimer', 'saveArtifact'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'function') throw invalidArgument(`options.${k} must be a function`);
    }
    if (o.remoteEndpoint !== undefined && typeof o.remoteEndpoint !== 'string') {
      throw invalidArgument('options.remoteEndpoint must be a URL string');
    }
    this.#o = o;
    this.#session = session;
    this.#model = o.model;
    // An endpoint of the Maintainer's own is a remote route the settings do not name; so is
    // a provider-native lane of the model (spec: compaction §8.3, §13). The core checks the
    // model, and refuses settings under which no method could ever run on this host.
    const endpoint = typeof o.remoteEndpoint === 'string' && o.remoteEndpoint !== '';
    const native = isObject(o.model) && nativeLane({ model: o.model, provider: o.provider, settings: o.settings });
    const summarizers: unknown[] = [o.summarize].flat();
    if (o.background !== undefined && typeof o.background !== 'boolean') {
      throw invalidArgument('options.background must be a boolean');
    }
    const cmSettings = o.background === undefined ? o.settings : { ...o.settings, asyncEnabled: o.background };
    this.#cm = new ContextManager(cmSettings, {
      remote: endpoint || native,
      endpoint,
      summarizer: summarizers.some((f) => typeof f === 'function'),
      model: o.model,
    });
    this.#settings = this.#cm.settings;
    this.#initBackground(summarizers);
    const sc = this.#settings.snapcompact;
    if (sc.systemPrompt !== 'none' || sc.toolResults) {
      const { systemPrompt, toolResults, shape } = sc;
      const { cacheTtlMs, countTextTokens } = o;
      this.#imager = new InlineImager(defined({ systemPrompt, toolResults, shape, cacheTtlMs, countTextTokens }));
    }
    const { maxCountChars, calibrate } = o;
    // The gauge hands the counter LLM messages and `{role: 'system', content}`, as declared.
    const tokenCounter = o.tokenCounter as TokenCounter | undefined;
    this.#gauge = new TokenGauge(defined({ tokenCounter, maxCountChars, calibrate }));
    this.#now = o.now ?? Date.now;
    this.#setTimer = o.setTimer ?? defaultTimer;
    this.#latestCompactionId = session.buildContext().compactionId ?? null;
    const latest = this.#latestCompactionId === null ? undefined : session.entry(this.#latestCompactionId);
    this.#latestCompactionAt = latest?.timestamp;
  }

  /** The live session: a handoff replaces it with the new session. */
  get session(): Session {
    return this.#session;
  }

  /** The model requests go to (a promotion changes it). */
  get model(): TriggerModel {
    return this.#model;
  }

  /** The compaction settings in use, defaults filled in. */
  get settings(): ResolvedCompactionSettings {
    return this.#settings;
  }

  /** The trigger state (recovery counters, pause, idle), for inspection. */
  get state(): ContextManagerState {
    return this.#cm.state;
  }

  /**
   * Per model (`provider/id`), the calibration in use: `ratio`, the provider's tokens per
   * estimated token of text (the median of (reported − images × imageRate) / text over the
   * requests with at least 1,000 tokens of text, 0.5–3); `imageRate`, per estimated token of
   * images (snapcompact frames at 5,024, other images at 1,200; the least-squares fit of the
   * requests when they mix text and images in different proportions, 0.2–4, else its last
   * value, 1 at first); `samples`, the answered requests they come from (at most 8).
   */
  get calibration(): Record<string, { ratio: number; imageRate: number; samples: number }> {
    return this.#gauge.snapshot() as Record<string, { ratio: number; imageRate: number; samples: number }>;
  }

  /**
   * Before each provider request: the per-turn stale pass, the pre-prompt (or mid-run)
   * threshold check with any compaction it asks for, then the LLM messages to send, within
   * the provider's image and byte budgets.
   */
  beforeRequest<F extends MessageFormat = 'pi'>(request?: BeforeRequestOptions<F>): Promise<BeforeRequestResult<F>> {
    return this.#serial(async () => {
      const given: unknown = request ?? {};
      if (!isObject(given)) throw invalidArgument('beforeRequest() takes `{systemPrompt?, tools?, format?}`');
      const r = given as BeforeRequestOptions;
      // An unknown format is refused before anything runs.
      const format = r.format === undefined ? undefined : formatOf(r.format).name;
      const p: unknown = r.systemPrompt;
      if (p !== undefined && typeof p !== 'string' && !(Array.isArray(p) && p.every((b) => typeof b === 'string'))) {
        throw invalidArgument('beforeRequest(): systemPrompt must be a string or an array of strings');
      }
      this.#overhead =
        this.#textTokens(r.systemPrompt) + (r.tools === undefined ? 0 : this.#textTokens(JSON.stringify(r.tools)));
      this.#request = r;
      const step: Step = { pruned: 0, report: undefined };
      // The rewrites that waited for the provider's cache to go cold (`cacheAware`), then the stale pass.
      this.#prune(this.#cm.breakPrune(this.#now(), this.#hostCount()), step);
      this.#prune(this.#cm.stalePass(this.#hostCount()), step);
      // The core's check: none for a retry (the state the last call left), the mid-run check
      // after a turn that asked for tools, else the pre-prompt check.
      // A request that carries the provider's compaction (the core's choice for the model,
      // spec §13) leaves the threshold to the server (the core's rule).
      const serverCompaction =
        format === 'openai-responses' &&
        inlineContextManagement({ model: this.#model, settings: this.#o.settings }, 0) !== undefined;
      const d = this.#cm.beforeRequest(this.#model, { ...this.#turnOptions(), state: this.#state(), serverCompaction });
      if (d !== null) await this.#applyWithBackground(d, step);
      const { messages, systemPrompt, inline, imagesOmitted, framesLeftOut, images: sent } = this.#messages();
      if (step.report) {
        step.report.imagesOmitted += imagesOmitted;
        step.report.framesOmitted += framesLeftOut;
      }
      const result: BeforeRequestResult<MessageFormat> = {
        messages,
        tokens: this.#storedTokens(),
        report: step.report,
      };
      // Images count as sent (budgets may leave some out); what the reply calibrates (nothing
      // after inline imaging saved tokens, text only with a tokenCounter) is the core's.
      const { text } = this.#rawSplit();
      this.#gauge.sent(this.#model, { text, images: sent }, inline?.savedTokens ?? 0);
      if (systemPrompt !== undefined) result.systemPrompt = systemPrompt;
      if (inline !== undefined) result.inline = inline;
      if (format !== undefined) {
        // The messages just built, written as `toMessages` writes the format (issue 41).
        const prompt = Array.isArray(systemPrompt) ? systemPrompt.join('\n\n') : systemPrompt;
        const model = this.#viewOptions().model;
        const out = this.#session._writeMessages(messages, format, prompt, model, this.#session.leafId);
        result.messages = out.messages;
        if (out.system !== undefined) result.system = out.system;
        result.warnings = out.warnings;
        // Server compaction inside this request where the core says the model takes it (spec §13).
        if (format === 'openai-responses') {
          const cm = inlineContextManagement({ model: this.#model, settings: this.#o.settings }, result.tokens);
          if (cm?.contextManagement !== undefined) result.contextManagement = cm.contextManagement;
          // Codex's explicit trigger: the final input item (`remoteCompaction.compactionTrigger`).
          if (cm?.triggerItem !== undefined) (result.messages as unknown[]).push(cm.triggerItem);
        }
      }
      return result as BeforeRequestResult<F>;
    });
  }

  /**
   * After each provider response: appends `assistantMessage`, then overflow and
   * incomplete-output recovery, threshold maintenance and the progress guard. `next` says
   * what to do: `'retry'` the request (the failed turn is out of the context), `'continue'`
   * with `continuePrompt` as a new user message, or `'done'` (run the tool calls, if any).
   */
  afterResponse(assistantMessage: AssistantMessage | ResponseMessage): Promise<AfterResponseResult> {
    return this.#serial(async () => {
      const a: unknown = assistantMessage;
      const role = memberOf(a, 'role');
      if (!isObject(a) || (role !== undefined && role !== 'assistant')) {
        throw invalidArgument('afterResponse() takes the assistant message (role "assistant")');
      }
      const given: ResponseMessage =
        role === undefined ? { ...(a as Omit<ResponseMessage, 'role'>), role: 'assistant' } : assistantMessage;
      const now = this.#now();
      // A server compaction the reply carried (`fromResponse`'s `serverCompaction`) is the core's
      // to commit after the reply, which is stored without it (spec §13). The core checks it
      // first: a malformed one refuses the reply before anything is appended.
      const { serverCompaction: server, ...message } = given;
      if (server !== undefined) {
        if (!Array.isArray(server) || !server.every(isObject)) {
          throw codedError('E_INVALID_MESSAGE', 'serverCompaction must be an array of output items');
        }
        requireRaw().checkServerCompaction(JSON.stringify(server));
      }
      // Appended (and so checked by the core) before anything of it is observed: a refused
      // reply changes nothing.
      const id = this.#session.appendMessage(message, { now: message.timestamp ?? now });
      const provider = this.#model.provider;
      let serverCompacted = false;
      let serverReport: MaintainerReport | undefined;
      if (server !== undefined && typeof provider === 'string' && provider !== '') {
        try {
          const before = this.#countedTokens();
          const summarized = this.#session.toLlmMessages().length - 1;
          const commit = this.#session._commitServerCompaction(provider, id, JSON.stringify(server), now);
          if (commit !== undefined) {
            serverCompacted = true;
            this.#latestCompactionAt = commit.timestamp;
            this.#latestCompactionId = commit.entryId;
            this.#tokens = null;
            serverReport = this.#serverCompactionReport(commit, before, Math.max(0, summarized));
            const { tokensBefore, tokensAfter, prefixChangedAt, forecast } = serverReport;
            this.#emit({
              type: 'server_compaction',
              entryId: commit.entryId,
              tokensBefore,
              tokensAfter,
              ...(commit.providerTokensBefore === undefined
                ? {}
                : { providerTokensBefore: commit.providerTokensBefore }),
              report: serverReport,
              prefixChangedAt,
              forecast,
            });
          }
        } catch (err) {
          // An unusable item (E_SUMMARIZER) is not replayed: the next request sends the whole
          // history, which the server compacts again. The reply stays.
          if (memberOf(err, 'code') !== 'E_SUMMARIZER') throw err;
        }
      }
      // A reply to the last request: its reported prompt tokens calibrate its model (the core
      // decides whether it answered that request).
      this.#gauge.observe(message);
      // A turn that asked for tools is checked before the next request (the core keeps it);
      // the context tools' calls among them are answered now when the host opted in.
      const deferred = this.#cm.onReply(message);
      if (serverCompacted) this.#cm.serverCompacted();
      if (deferred) {
        const done: AfterResponseResult =
          serverReport === undefined ? { next: 'done' } : { next: 'done', report: serverReport };
        if (this.#o.contextTools !== true) return done;
        const answered = answerContextToolCalls(this.#session, message, this.#toolFigures(), now);
        return answered.length > 0 ? { ...done, contextToolCalls: answered } : done;
      }
      const step: Step = { pruned: 0, report: serverReport, failedId: id };
      // The threshold prune, if the core asks for it, runs first and lowers what the turn is
      // measured by (issue 19).
      const freedTokens = this.#prune(this.#cm.replyPrune(this.#hostCount()), step);
      const d = this.#cm.afterReply(this.#model, { ...this.#turnOptions(), freedTokens });
      const continuation = await this.#applyWithBackground(d, step);
      return this.#next(continuation, d, step);
    });
  }

  /**
   * Runs a context tool (`recall_history`, `context_status`) on the live session with the
   * Maintainer's figures: the model's window, the calibrated request tokens, the settings.
   * Throws `E_INVALID_ARGUMENT` for another name or bad arguments.
   */
  runContextTool(name: string, args: JsonValue | string | undefined): string {
    return runContextTool(this.#session, name, args, this.#toolFigures());
  }

  #toolFigures(): ContextToolFigures {
    const { provider, id, contextWindow } = this.#model;
    const f: ContextToolFigures = { contextTokens: this.#storedTokens(), model: { provider, id } };
    if (contextWindow !== undefined) f.contextWindow = contextWindow;
    if (this.#o.settings !== undefined) f.settings = this.#o.settings;
    return f;
  }

  /** A manual compaction (`/compact [instructions]`) with optional focus instructions, then what to do next. Rejects with the compaction's coded error. */
  compactNow(instructions?: string): Promise<AfterResponseResult> {
    return this.#serial(async () => {
      if (instructions !== undefined && typeof instructions !== 'string') {
        throw invalidArgument('compactNow() takes the focus instructions as a string');
      }
      const step: Step = { pruned: 0, report: undefined };
      const request: ManualCompactRequest = { reason: 'manual', contextTokens: this.#storedTokens() };
      const outcome = await this.#compact(request, step, { customInstructions: instructions, rethrow: true });
      const d = this.#cm.afterCompaction(request, outcome, {});
      const continuation = await this.#apply(d, step);
      return this.#next(continuation, d, step);
    });
  }

  /**
   * Cancels every compaction, handoff and summarizer call in flight; they reject with
   * `E_ABORTED` and the session is left as it was.
   */
  abort(): void {
    this.#controller.abort();
    this.#controller = new AbortController();
    this.#cancelBackground('abort');
  }

  /** Stops the idle timer, aborts work in flight and frees the state machine. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#cancelIdle?.();
    this.#cancelIdle = null;
    this.#cancelBackground('dispose');
    this.abort();
    // The calibration stays readable (`calibration`); the collector frees it.
    this.#queue.finally(() => this.#cm.free());
  }

  // ----- steps ---------------------------------------------------------------------------

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#disposed) return Promise.reject(codedError('E_INVALID_ARGUMENT', 'this Maintainer was disposed'));
    this.#cancelIdle?.();
    this.#cancelIdle = null;
    const run = this.#queue.then(fn).finally(() => {
      // What the host appends before the next request shows as a change of this state.
      if (!this.#disposed) this.#cm.settle(this.#state());
    });
    this.#queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** The live session's state: which session, its size and its leaf. */
  #state(): string {
    return `${this.#sessions}:${this.#session.size}:${this.#session.leafId}`;
  }

  #emit(event: MaintainerEvent): void {
    const listeners: unknown[] = [this.#o.onEvent, ...handlers(this.#o.hooks, 'onEvent')];
    for (const f of listeners) {
      if (typeof f !== 'function') continue;
      try {
        (f as (e: MaintainerEvent) => void)(event);
      } catch {
        // Observers cannot stop maintenance.
      }
    }
  }

  /**
   * The local estimate of the live context plus the request overhead. Remembered per session
   * state (size and leaf); the maintainer's own prunes, which change neither, forget it.
   */
  #storedTokens(): number {
    const { text, images } = this.#rawSplit();
    return Math.round(this.#gauge.calibrated(this.#model, text, images));
  }

  /**
   * The estimate before calibration as text (with the request overhead) and images: the core's
   * estimate of the context's images (spec: compaction §3.1), which providers bill by their
   * pixels whatever their tokenizer. With a `tokenCounter`, everything is text: the host's
   * counter prices the images. So it is for a model without image input, which is sent none.
   */
  #rawSplit(): { text: number; images: number } {
    const { value, images } = this.#measure();
    return { text: value - images + this.#overhead, images };
  }

  /**
   * The live context, measured once per session state (`#tokens`): `value`, its messages as the
   * gauge counts them; `images`, the core's estimate of their images (0 with a `tokenCounter`);
   * `estimated`, the core's estimate of the messages; `usage`, the tokens the provider reported
   * for the path (0 without usage).
   */
  #measure(): Measure {
    const key = `${this.#session.size}:${this.#session.leafId}`;
    if (this.#tokens === null || this.#tokens.session !== this.#session || this.#tokens.key !== key) {
      const { estimatedTokens, tokensBefore } = this.#session.contextTokens();
      let value = estimatedTokens;
      let images = 0;
      if (this.#gauge.counting) {
        value = this.#gauge.count(this.#countable(this.#session.toLlmMessages({ model: this.#viewOptions().model })));
      } else {
        const total = this.#readsImages() ? this.#session.contextStats().images : 0;
        // The core's estimate of the context's images, read from the view #messages() builds
        // next (its conversion is remembered): every frame and image, no provider budget.
        if (total > 0)
          images = Math.min(value, this.#viewImages(this.#session.toLlmMessages(this.#viewOptions())).context);
      }
      this.#tokens = { session: this.#session, key, value, images, estimated: estimatedTokens, usage: tokensBefore };
    }
    return this.#tokens;
  }

  /** LLM messages as the gauge counts them (it reads their role, content, ids and payload). */
  #countable(messages: LlmMessage[]): CountedMessage[] {
    return messages as unknown as CountedMessage[];
  }

  /** Text (the system prompt, the tool definitions) counted as the gauge counts. */
  #textTokens(text: string | string[] | undefined): number {
    if (!this.#gauge.counting) return textTokens(text);
    const t = Array.isArray(text) ? text.join('\n\n') : text;
    return typeof t === 'string' && t !== '' ? this.#gauge.count([{ role: 'system', content: t }]) : 0;
  }

  /** The live context's messages as the host counts them (without a `tokenCounter`: the core's estimate). */
  #countedTokens(): number {
    return this.#measure().value;
  }

  /**
   * The provider's tokens per token of the core's estimate of text: the calibration's text
   * ratio, times the host's count over the core's estimate of the live context when a
   * `tokenCounter` counts; undefined before either measured it (the core's rule).
   */
  #providerRatio(): number | undefined {
    const { estimated, value: counted } = this.#measure();
    return this.#gauge.providerRatio(this.#model, { estimated, counted });
  }

  /**
   * A report in the host's tokens when it counts (`tokenUnit: 'counted'`): `tokensBefore` is
   * `before`, `tokensAfter` the live context counted now, and the per-kind split and the shake's
   * share are scaled from the core's estimate by the same ratio. Else `tokenUnit: 'estimate'`.
   */
  #inCountedTokens(report: CompactionReport, before: number): MaintainerReport {
    const out: MaintainerReport = Object.assign(report, {
      tokenUnit: this.#gauge.counting ? ('counted' as const) : ('estimate' as const),
    });
    if (!this.#gauge.counting) return out;
    const after = this.#countedTokens();
    scaleReport(out, after);
    out.tokensBefore = before;
    out.tokensAfter = after;
    return out;
  }

  #turnOptions() {
    return defined({
      now: this.#now(),
      storedTokens: this.#storedTokens(),
      latestCompactionAt: this.#latestCompactionAt,
      canPromote: typeof this.#o.promote === 'function',
    });
  }

  /**
   * The report of a server compaction just committed (`commit`): `before` the live context in
   * the report's unit before it, `summarized` the messages the provider's item now carries; the
   * cache figures are the core's for the compaction entry (spec: compaction §13).
   */
  #serverCompactionReport(commit: CompactionCommit, before: number, summarized: number): MaintainerReport {
    const after = contextSnapshot(this.#session, { byKind: true });
    const estimatedBefore = commit.compactionEntry.tokensBefore;
    const report: CompactionReport = {
      method: 'remote',
      reason: 'threshold',
      tokensBefore: estimatedBefore,
      tokensAfter: after.tokens,
      entriesSummarized: summarized,
      tokensByKind: after.byKind,
      imagesOmitted: 0,
      framesOmitted: 0,
      pruned: 0,
      shakeTokensFreed: 0,
      lost: [],
      anchored: [],
    };
    const freed = Math.max(0, estimatedBefore - after.tokens);
    const cache = cacheForecast(this.#session, [commit.entryId], freed, this.#model);
    if (cache !== null) Object.assign(report, cache);
    return this.#inCountedTokens(report, before);
  }

  #pruneReport(pass: 'stale' | 'threshold', r: PruneReport, before: number): MaintainerReport {
    const after = contextSnapshot(this.#session, { byKind: true });
    const report: CompactionReport = {
      method: 'prune',
      reason: pass,
      // The savings are measured with the same estimate as the context.
      tokensBefore: after.tokens + r.tokensSaved,
      tokensAfter: after.tokens,
      entriesSummarized: 0,
      tokensByKind: after.byKind,
      imagesOmitted: 0,
      framesOmitted: 0,
      pruned: r.prunedCount,
      shakeTokensFreed: 0,
      lost: [],
      anchored: [],
    };
    // Where the request changed and what that costs the provider's cache (the core's figures).
    const ids = r.pruned.map((p) => p.id);
    const cache = ids.length === 0 ? null : cacheForecast(this.#session, ids, r.tokensSaved, this.#model);
    if (cache !== null) Object.assign(report, cache);
    return this.#inCountedTokens(report, before);
  }

  /**
   * The host's count of the live context when it counts (a `tokenCounter`): the core brings the
   * windows of its prunes and compactions from the host's tokens into its estimate by it
   * (spec: compaction §3.1, §4.3, §6). Undefined without a `tokenCounter` (no measure then).
   */
  #hostCount(): HostCount | undefined {
    if (!this.#gauge.counting) return undefined;
    const { estimated, value: counted, usage } = this.#measure();
    return { estimated, counted, usage };
  }

  /** Runs the prune pass the core asked for, if any; returns the tokens it freed, in the report's unit. */
  #prune(p: PruneStep | null, step: Step): number {
    if (p === null) return 0;
    const { pass } = p;
    const before = this.#countedTokens();
    const config = { ...p.options, now: this.#now() };
    const r = pass === 'stale' ? this.#session.pruneStale(config) : this.#session.prune(config);
    if (r.prunedCount === 0) return 0;
    this.#tokens = null;
    step.pruned += r.prunedCount;
    const report = this.#pruneReport(pass, r, before);
    step.report = report;
    const tokensSaved = report.tokensBefore - report.tokensAfter;
    const { prefixChangedAt, forecast } = report;
    this.#emit({ type: 'prune', pass, prunedCount: r.prunedCount, tokensSaved, report, prefixChangedAt, forecast });
    return tokensSaved;
  }

  /**
   * The LLM messages (and system prompt) to send now: inline imaging when it is on, within the
   * provider's image and byte budgets.
   */
  #messages() {
    const view = this.#viewOptions();
    const images = this.#readsImages();
    const provider = view.model.provider;
    const limit = view.maxImages;
    let raw: LlmMessage[] = this.#session.toLlmMessages(view);
    let systemPrompt = this.#request.systemPrompt;
    let inline: InlineReport | undefined;
    if (this.#imager !== null && images) {
      const r = this.#imager.transform(
        defined({ messages: raw, systemPrompt, model: this.#model, provider, now: this.#now() }),
      );
      raw = r.messages;
      systemPrompt = r.systemPrompt;
      inline = r.report;
    }
    // What the provider's budget leaves out and what the images sent cost are the core's.
    const { messages, omitted, sent } = this.#viewImages(raw, limit);
    return { messages, systemPrompt, inline, imagesOmitted: omitted, framesLeftOut: this.#framesLeftOut, images: sent };
  }

  /**
   * The images of `messages`, built from the view `toLlmMessages` gave last (inline imaging
   * keeps its order), by the core (`requestImages`): within the image budget `limit` (none:
   * all), the estimate of those sent and of the context's.
   */
  #viewImages(messages: LlmMessage[], limit = -1) {
    this.#framesLeftOut = this.#session.lastFramesLeftOut();
    const summaryFirst = this.#session._lastViewCompacted();
    return requestImages(messages, { summaryFirst, framesLeftOut: this.#framesLeftOut, limit });
  }

  /** Whether the model takes images (`'image'` in its `input`): else requests carry none. */
  #readsImages(): boolean {
    return this.#imageBudget() > 0;
  }

  /** The images a request to the model carries at most (the core's; none for a model that reads none), kept per model. */
  #imageBudget(): number {
    const provider = this.#o.provider ?? this.#model.provider;
    const c = this.#budget;
    if (c?.model === this.#model && c.provider === provider) return c.images;
    const images = requireRaw().requestImageBudget(modelJson(this.#model), provider);
    this.#budget = { model: this.#model, provider, images };
    return images;
  }

  /**
   * The options of the LLM view sent to the model: its provider's image budget (none for a
   * model without image input), the frame byte budget, and the model, which replays a native
   * compaction of its own provider (spec: compaction §2.3).
   */
  #viewOptions() {
    const provider = this.#o.provider ?? this.#model.provider;
    return {
      maxImages: this.#imageBudget(),
      maxFrameDataBytes: FRAME_DATA_BYTES_BUDGET,
      model: { ...this.#model, provider },
    };
  }

  /** Carries out a decision (spec: compaction §8); resolves its continuation, if any. */
  async #apply(d: Decision, step: Step): Promise<Decision['continuation']> {
    for (const e of d.events) this.#emit(e);
    for (const n of d.notices) this.#emit({ type: 'notice', level: n.level, text: n.text });
    if (d.compactionWarning) {
      if (this.#latestCompactionId !== null) {
        this.#session.stampCompactionWarning(this.#latestCompactionId, d.compactionWarning);
      }
      this.#emit({ type: 'compaction_warning', message: d.compactionWarning });
    }
    if (d.dropFailedTurn && step.failedId !== undefined) {
      const failed = this.#session.entry(step.failedId);
      if (failed !== undefined && this.#session.leafId === step.failedId) {
        // Out of the context, not out of the file: the leaf moves back to the turn's parent.
        if (failed.parentId === null) this.#session.resetLeaf();
        else this.#session.branch(failed.parentId);
        this.#dropped = step.failedId;
      }
    }
    if (d.restoreFailedTurn && this.#dropped !== null && this.#session.entry(this.#dropped) !== undefined) {
      this.#session.branch(this.#dropped);
      this.#dropped = null;
    }
    if (d.promote) {
      const promoted = await this.#promote(d.promote);
      return this.#apply(this.#cm.afterPromotion(promoted), step);
    }
    if (d.compact) {
      const outcome = await this.#compact(d.compact, step, { willRetry: d.compact.willRetry });
      // The end event names the method that ran and carries the result (the core's wrapper).
      const after = this.#cm.afterCompaction(d.compact, outcome, { method: step.method });
      return this.#apply(after, step);
    }
    return d.continuation;
  }

  async #promote(request: PromotionRequest): Promise<boolean> {
    let model: TriggerModel | null = null;
    try {
      model = (await this.#o.promote?.(request)) ?? null;
    } catch (err) {
      this.#emit({ type: 'notice', level: 'warning', text: `context promotion failed: ${messageOf(err)}` });
    }
    if (model !== null) {
      modelJson(model, 'the model promote() resolved');
      const from = this.#model;
      this.#model = model;
      this.#emit({ type: 'promotion', reason: request.reason, from, to: model });
    }
    return model !== null;
  }

  /** Runs the compaction a decision asks for; resolves the outcome for `afterCompaction`. */
  async #compact(
    request: AnyCompactRequest,
    step: Step,
    extra: { customInstructions?: string | undefined; rethrow?: boolean; willRetry?: boolean | undefined },
  ): Promise<CompactionOutcome> {
    const o = this.#o;
    const auto = request.reason !== 'manual';
    if (request.reason !== 'manual') {
      const { reason, action } = request;
      this.#emit({ type: 'auto_compaction_start', reason, ...(action === undefined ? {} : { action }) });
    }
    // A prepared result the core said to commit goes in instead; any other run supersedes it.
    const armed = await this.#claimBackground(request, step);
    if (armed !== null) return armed;
    const given: CompactionHooks[] = Array.isArray(o.hooks) ? o.hooks : o.hooks ? [o.hooks] : [];
    const hooks: CompactionHooks[] = given.map((h) => {
      const { onEvent: _own, ...rest } = h;
      return rest;
    });
    // runCompaction emits `compaction_warning` only (the start and end are the Maintainer's).
    hooks.push({ onEvent: (e) => this.#emit(e as MaintainerEvent) });
    // The walk passes `remote` over while the core's cooldown runs (upstream #13310).
    const remoteBlocked = this.#cm.remoteBlocked(this.#now());
    const before = this.#countedTokens();
    // What the compaction keeps, in the core's estimate: the core's (the request's budget).
    const { keepRecentTokens, v2RetainedMessageBudget } = this.#cm.keepBudgets(request, this.#hostCount());
    try {
      const { strategy: _strategy, ...settings } = o.settings ?? {};
      const result = await runCompaction(
        this.#session,
        defined({
          reason: request.reason,
          now: this.#now(),
          methods: auto ? request.methods : undefined,
          remoteBlocked,
          excludeSnapcompact: request.excludeSnapcompact,
          // The Maintainer compacts by method order (spec: compaction §8.6); `strategy` is the
          // state machine's business (`off`, the automatic strategy).
          settings: { ...settings, keepRecentTokens, v2RetainedMessageBudget },
          // The window tests of the walk compare with the provider's tokens: the live context
          // and the request overhead calibrated, and the factor for the core's estimates.
          liveTokens: this.#storedTokens(),
          nonMessageTokens: Math.round(this.#gauge.calibrated(this.#model, this.#overhead)),
          providerRatio: this.#providerRatio(),
          // Frames and other images at the rate the provider bills them (the calibration's).
          imageRatio: this.#gauge.calibration(this.#model).imageRate,
          // The same figure after a commit or a shake (which rewrites lines in place: no memo).
          measureLive: () => {
            this.#tokens = null;
            return this.#storedTokens();
          },
          summarize: o.summarize,
          remoteEndpoint: o.remoteEndpoint,
          headers: o.headers,
          credentials: o.credentials,
          fetch: o.fetch,
          native: o.native,
          model: this.#model,
          provider: o.provider ?? this.#model.provider,
          hooks,
          retry: o.retry,
          signal: this.#controller.signal,
          // The summarizer takes one text: blocks are joined as the provider would read them.
          systemPrompt: Array.isArray(this.#request.systemPrompt)
            ? this.#request.systemPrompt.join('\n\n')
            : this.#request.systemPrompt,
          tools: this.#request.tools,
          customInstructions: extra.customInstructions,
          saveArtifact: o.saveArtifact,
          willRetry: extra.willRetry,
          // The walk's `remote` failed: the core starts its cooldown.
          onRemoteFailed: () => this.#cm.noteRemoteFailure(this.#now()),
          // Frames drawn, summarizer requests: the `compaction_progress` event (issue 41).
          onProgress: (p: CompactionProgress) => this.#emit({ type: 'compaction_progress', ...p }),
        }),
      );
      // A shake rewrites lines in place: neither the size nor the leaf tells.
      this.#tokens = null;
      if ('skipped' in result) return { status: 'nothing-to-compact' };
      step.method = result.method;
      result.report.pruned = step.pruned;
      const report: MaintainerReport = Object.assign(result.report, { tokenUnit: 'estimate' as const });
      step.report = report;
      if ('session' in result && result.session) {
        const previous = this.#session;
        this.#session = result.session;
        this.#sessions += 1;
        this.#dropped = null;
        this.#latestCompactionAt = this.#now();
        this.#latestCompactionId = null;
        this.#emit({ type: 'handoff', session: result.session, previous, document: result.document });
      } else {
        this.#latestCompactionAt = ('timestamp' in result ? result.timestamp : undefined) ?? this.#now();
        this.#latestCompactionId = result.entryId;
      }
      this.#inCountedTokens(report, before);
      return {
        status: 'compacted',
        tokensAfter: report.tokensAfter,
        storedTokens: this.#storedTokens(),
        // The result as it is (a handoff's holds its session): the state machine passes it on.
        result: result as unknown as JsonValue,
      };
    } catch (err) {
      this.#tokens = null; // a shake may have run before the failure
      // The core maps the error's code; a manual compaction rejects unless nothing was to do.
      const outcome = compactionOutcomeOf(err);
      if (extra.rethrow && outcome.status !== 'nothing-to-compact') throw err;
      return outcome;
    }
  }

  /** The `afterResponse` / `compactNow` answer for a continuation. */
  #next(continuation: Decision['continuation'], d: Decision, step: Step): AfterResponseResult {
    this.#armIdle(d);
    const out: AfterResponseResult = { next: 'done', report: step.report };
    // The core says what the continuation means for the loop (`next`).
    if (!continuation || continuation.next === 'done') return out;
    if (continuation.next === 'retry') {
      this.#emit({ type: 'continue', kind: 'retry', afterMs: continuation.afterMs });
      return { ...out, next: 'retry' };
    }
    this.#emit({ type: 'continue', kind: 'auto-continue', afterMs: continuation.afterMs });
    return { ...out, next: 'continue', continuePrompt: continuation.prompt ?? '' };
  }

  // ----- background compaction (spec: compaction §13) -------------------------------------

  /** The background compactions so far and the state of the current one. */
  get backgroundStats(): BackgroundStats {
    const run = this.#bg;
    const state = run === null ? 'idle' : run.ready ? 'armed' : 'running';
    return { state, ...this.#bgStats };
  }

  /**
   * Tells the core whether this host runs background compaction: a summarizer callback, and no
   * `session_before_compact` handler (a prepared result would bypass its veto, spec §8.8).
   */
  #initBackground(summarizers: unknown[]): void {
    const summarizer = summarizers.some((f) => typeof f === 'function');
    const vetoed = handlers(this.#o.hooks, 'session_before_compact').length > 0;
    this.#cm._setSpeculationHost(summarizer && !vetoed);
  }

  /**
   * Carries out a decision with the background step the core decided with it: a drop or refresh
   * cancels the run, a commit lets the decision's compaction take the armed result, a start
   * (or refresh) begins a run once the decision is applied. Nothing here awaits a summarizer.
   */
  async #applyWithBackground(d: Decision, step: Step): Promise<Decision['continuation']> {
    const s = this.#cm._speculation(this.#model);
    // The core already counts a dropped run as ended, and a refreshed one as the next run.
    if (s.step === 'drop') this.#cancelBackground('superseded', false);
    if (s.step === 'refresh') this.#cancelBackground('refresh', false);
    this.#bgCommit = s.step === 'commit';
    try {
      const continuation = await this.#apply(d, step);
      if ((s.step === 'start' || s.step === 'refresh') && s.request !== null) this.#startBackground(s.request);
      return continuation;
    } finally {
      this.#bgCommit = false;
    }
  }

  /** Starts a background run for the core's threshold `request`: plans, then answers off the critical path. */
  #startBackground(request: CompactRequest): void {
    if (this.#bg !== null) this.#cancelBackground('refresh', false);
    const o = this.#o;
    let plan: CompactionPlan;
    try {
      // The keep budgets of the compaction it stands in for, in the core's estimate.
      const { keepRecentTokens } = this.#cm.keepBudgets(request, this.#hostCount());
      const { strategy: _strategy, ...settings } = o.settings ?? {};
      const { provider, id, api, contextWindow, maxTokens } = this.#model as TriggerModel & { api?: string };
      plan = this.#session.planCompaction(
        { ...settings, keepRecentTokens, strategy: 'context-full' },
        defined({
          speculative: true,
          provider: o.provider ?? provider,
          contextWindow,
          maxTokens,
          model: defined({ id, api }),
          // The commit's size check compares as the thresholds do: calibrated, with the overhead.
          providerRatio: this.#providerRatio(),
          nonMessageTokens: Math.round(this.#gauge.calibrated(this.#model, this.#overhead)),
        }),
      );
    } catch (err) {
      // Nothing to summarize yet (or settings the plan refuses): no run, and the core knows.
      this.#cm._speculationEnded();
      this.#bgStats.failed += 1;
      this.#emit({ type: 'speculation_abort', reason: 'failed', message: messageOf(err) });
      return;
    }
    const preparation = plan.preparation;
    const run: BackgroundRun = {
      plan,
      session: this.#session,
      controller: new AbortController(),
      ready: false,
      entries: preparation.messagesToSummarize.length + preparation.turnPrefixMessages.length,
      done: Promise.resolve(),
    };
    this.#bg = run;
    this.#bgStats.started += 1;
    this.#emit({ type: 'speculation_start', tokens: request.contextTokens, entriesSummarized: run.entries });
    run.done = this.#answerBackground(run).catch((err: unknown) => this.#failBackground(run, err));
  }

  /** Answers the run's requests round by round, as `compact()` does, with the run's own signal. */
  async #answerBackground(run: BackgroundRun): Promise<void> {
    const o = this.#o;
    const candidates: Candidate[] = [o.summarize]
      .flat()
      .filter((f): f is Summarize => typeof f === 'function')
      .map((summarize) => ({ summarize }));
    const calls: SummarizeCalls = {
      signal: run.controller.signal,
      retryJson: o.retry === undefined ? undefined : JSON.stringify(o.retry),
      callOptions: {},
      wording: (message) => requireRaw().compactionErrorMessage('threshold', message),
    };
    const { plan } = run;
    while (!plan.isComplete) {
      const pending = plan.pending;
      if (pending.length === 0) throw codedError('E_SUMMARIZER', 'the plan is stuck without pending requests');
      const answers = await Promise.all(pending.map((r) => summarizeOne(r, candidates, calls)));
      // A cancelled run writes nothing more into its plan.
      if (run.controller.signal.aborted || this.#bg !== run) return;
      pending.forEach((r, i) => {
        const a = answers[i];
        if (a === undefined) return;
        if (a.shrink) plan.retrySmaller(r.id);
        else plan.answer(r.id, a.text);
      });
    }
    run.ready = true;
    this.#bgStats.ready += 1;
    this.#cm._speculationReady();
    this.#emit({ type: 'speculation_ready' });
  }

  /** A run that failed: stale (the prefix it summarizes changed) or a summarizer failure. */
  #failBackground(run: BackgroundRun, err: unknown): void {
    if (this.#bg !== run) return; // cancelled: already counted
    this.#bg = null;
    run.plan.free();
    this.#cm._speculationEnded();
    if (memberOf(err, 'code') === 'E_STALE_PLAN') {
      this.#bgStats.stale += 1;
      this.#emit({ type: 'speculation_stale', reason: messageOf(err) });
      return;
    }
    this.#bgStats.failed += 1;
    this.#emit({ type: 'speculation_abort', reason: 'failed', message: messageOf(err) });
  }

  /**
   * Cancels the run, if any: its summarizer calls see the abort, its plan is freed. `tellCore`:
   * the core has not decided this itself (an abort, a compaction it did not ask to take it).
   */
  #cancelBackground(reason: 'abort' | 'dispose' | 'refresh' | 'superseded', tellCore = true): void {
    const run = this.#bg;
    if (run === null) return;
    this.#bg = null;
    run.controller.abort();
    run.plan.free();
    if (tellCore && (!this.#disposed || reason === 'dispose')) this.#cm._speculationEnded();
    this.#bgStats.aborted += 1;
    this.#emit({ type: 'speculation_abort', reason });
  }

  /**
   * Before a compaction runs: when the core said to commit and the run is armed, commits its
   * plan (the core's check: a plan that no longer fits is stale, dropped, and the compaction
   * runs inline); any other run is cancelled, superseded by this compaction. Resolves the
   * outcome of a commit, else null.
   */
  async #claimBackground(request: AnyCompactRequest, step: Step): Promise<CompactionOutcome | null> {
    const run = this.#bg;
    if (run === null) return null;
    if (!this.#bgCommit || !run.ready || run.session !== this.#session) {
      this.#cancelBackground('superseded');
      return null;
    }
    this.#bg = null;
    this.#cm._speculationEnded();
    const before = contextSnapshot(this.#session);
    const counted = this.#countedTokens();
    let commit: CompactionCommit;
    try {
      commit = this.#session.commitCompaction(run.plan, { now: this.#now() });
    } catch (err) {
      // Stale (the core's reason) or refused: nothing was written; the compaction runs inline.
      this.#bgStats.stale += 1;
      this.#emit({ type: 'speculation_stale', reason: messageOf(err) });
      return null;
    } finally {
      run.plan.free();
    }
    this.#tokens = null;
    this.#bgStats.committed += 1;
    this.#latestCompactionAt = commit.timestamp;
    this.#latestCompactionId = commit.entryId;
    step.method = 'soft';
    const after = contextSnapshot(this.#session, { byKind: true });
    const report: MaintainerReport = {
      method: 'soft',
      reason: request.reason,
      tokensBefore: before.tokens,
      tokensAfter: after.tokens,
      entriesSummarized: run.entries,
      tokensByKind: after.byKind,
      imagesOmitted: Math.max(0, before.images - after.images),
      framesOmitted: 0,
      pruned: step.pruned,
      shakeTokensFreed: 0,
      lost: [],
      anchored: [],
      tokenUnit: 'estimate',
    };
    const freed = Math.max(0, before.tokens - after.tokens);
    const cache = cacheForecast(this.#session, [commit.entryId], freed, this.#model);
    if (cache !== null) Object.assign(report, cache);
    this.#inCountedTokens(report, counted);
    step.report = report;
    this.#emit({
      type: 'speculation_commit',
      entryId: commit.entryId,
      tokensBefore: report.tokensBefore,
      tokensAfter: report.tokensAfter,
    });
    const result = Object.assign(commit, { method: 'soft' as const, report });
    const onCompact = handlers(this.#o.hooks, 'session_compact') as Array<(event: typeof result) => unknown>;
    for (const f of onCompact) await callHook(f, result, this.#controller.signal).catch(() => {});
    return {
      status: 'compacted',
      tokensAfter: report.tokensAfter,
      storedTokens: this.#storedTokens(),
      result: result as unknown as JsonValue,
    };
  }

  /** Idle maintenance (spec: compaction §8.1) at the decision's `wakeAt`, on its own timer. */
  #armIdle(d: Decision): void {
    // The core sets `wakeAt` only with idle maintenance enabled.
    if (d.wakeAt === null || d.wakeAt === undefined) return;
    const wakeAt = d.wakeAt;
    this.#cancelIdle?.();
    this.#cancelIdle = this.#setTimer(
      () => {
        this.#cancelIdle = null;
        this.#serial(async () => {
          const next = this.#cm.onIdle(this.#model, this.#storedTokens(), { now: this.#now() });
          await this.#apply(next, { pruned: 0, report: undefined });
          this.#armIdle(next);
        }).catch((err: unknown) =>
          this.#emit({ type: 'notice', level: 'error', text: `idle maintenance failed: ${messageOf(err)}` }),
        );
      },
      Math.max(0, wakeAt - this.#now()),
    );
  }
}
