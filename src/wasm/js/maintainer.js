// The Maintainer: the trigger state machine (`ContextManager`, spec: compaction §8) with the
// host's side of every decision carried out, so an agent loop needs two calls per request:
// `beforeRequest()` for the messages to send, `afterResponse()` with the reply.
//
// It owns the awaits, the idle timer and the AbortController; the rules stay in the core:
// when to compact, retry, promote, continue or give up (ContextManager), how to compact
// (`runCompaction`, which walks `methodOrder`), what to prune (`prune` / `pruneStale`).
import { isObject } from './args.js';
import { ACTION_OF, nativeLane, runCompaction } from './compact.js';
import { codedError, invalidArgument, messageOf } from './errors.js';
import { InlineImager } from './inline.js';
import { requireRaw } from './raw.js';
import { contextSnapshot, requestImages, scaleReport, textTokens } from './report.js';
import { FRAME_DATA_BYTES_BUDGET, providerImageBudget } from './snapcompact.js';
import { handlers } from './summarizer.js';
import { TokenGauge } from './tokens.js';
import { ContextManager, modelJson } from './triggers.js';

let pruneWindows;

/**
 * The windows of the Maintainer's prune passes, the core's (spec: compaction §6.1, §6.5, §6.6):
 * `stale` (`idleFlushMs`, `suffixTokenLimit`) and `threshold` (`protectTokens`,
 * `minimumSavings`, `cacheWarmSuffixTokens`).
 */
function windows() {
  pruneWindows ??= JSON.parse(requireRaw().pruneWindowsJson());
  return pruneWindows;
}

/** A timer that never keeps a Node.js process alive. */
function defaultTimer(fn, ms) {
  const t = setTimeout(fn, ms);
  t?.unref?.();
  return () => clearTimeout(t);
}

/**
 * Keeps one live session under its model's context window (see `MaintainerOptions` in the
 * types). Calls on one Maintainer run one at a time, in the order they were made.
 */
export class Maintainer {
  #session;
  #model;
  #o;
  #cm;
  #settings;
  #now;
  #setTimer;
  #controller = new AbortController();
  #queue = Promise.resolve();
  #cancelIdle = null;
  #disposed = false;
  /** The last `beforeRequest` argument (a handoff keeps its cache prefix) and its tokens. */
  #request = {};
  #overhead = 0;
  #latestCompactionAt;
  /** The compaction the live context starts from (the progress guard stamps its warning there). */
  #latestCompactionId;
  /** An assistant turn that asked for tools: checked mid-run before the next request. */
  #midRun = null;
  /** The session state (`size:leaf`) the last call left: what the host appended since shows as a change. */
  #seen = null;
  /** The failed assistant entry a decision took out of the context. */
  #dropped = null;
  /** `#measure`'s memo of the live context (null: measure again). */
  #tokens = null;
  /** The host's token counter and the calibration from reported usage. */
  #gauge;
  /** Inline imaging (`snapcompact.systemPrompt` / `snapcompact.toolResults`), when either is on. */
  #imager = null;
  /** The frames the last view left out of the compaction summary (its budgets). */
  #framesLeftOut = 0;

  /** Throws `E_INVALID_ARGUMENT` for a bad session, model or callback, `E_SETTINGS` naming a bad setting. */
  constructor(session, options) {
    if (typeof session?.planCompaction !== 'function') throw invalidArgument('new Maintainer() takes a Session');
    const o = options ?? {};
    if (!isObject(o)) throw invalidArgument('Maintainer options must be an object');
    for (const k of ['promote', 'onEvent', 'now', 'setTimer', 'saveArtifact']) {
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
    this.#cm = new ContextManager(o.settings, {
      remote: endpoint || native,
      endpoint,
      summarizer: [o.summarize].flat().some((f) => typeof f === 'function'),
      model: o.model,
    });
    this.#settings = this.#cm.settings;
    const sc = this.#settings.snapcompact;
    if (sc.systemPrompt !== 'none' || sc.toolResults) {
      const { systemPrompt, toolResults, shape } = sc;
      const { cacheTtlMs, countTextTokens } = o;
      this.#imager = new InlineImager({ systemPrompt, toolResults, shape, cacheTtlMs, countTextTokens });
    }
    this.#gauge = new TokenGauge({
      tokenCounter: o.tokenCounter,
      maxCountChars: o.maxCountChars,
      calibrate: o.calibrate,
    });
    this.#now = o.now ?? Date.now;
    this.#setTimer = o.setTimer ?? defaultTimer;
    this.#latestCompactionId = session.buildContext().compactionId ?? null;
    const latest = this.#latestCompactionId === null ? undefined : session.entry(this.#latestCompactionId);
    this.#latestCompactionAt = latest?.timestamp;
  }

  /** The live session: a handoff replaces it with the new session. */
  get session() {
    return this.#session;
  }

  /** The model requests go to (a promotion changes it). */
  get model() {
    return this.#model;
  }

  /** The compaction settings in use, defaults filled in. */
  get settings() {
    return this.#settings;
  }

  /** The trigger state (recovery counters, pause, idle), for inspection. */
  get state() {
    return this.#cm.state;
  }

  /**
   * Per model (`provider/id`): the provider's tokens per estimated token of text (`ratio`) and
   * of images (`imageRate`), and the answered requests they come from.
   */
  get calibration() {
    return this.#gauge.snapshot();
  }

  /**
   * Before each provider request: the per-turn stale pass, the pre-prompt (or mid-run)
   * threshold check with any compaction it asks for, then the LLM messages to send, within
   * the provider's image and byte budgets.
   */
  beforeRequest(request) {
    return this.#serial(async () => {
      const r = request ?? {};
      if (!isObject(r)) throw invalidArgument('beforeRequest() takes `{systemPrompt?, tools?}`');
      const p = r.systemPrompt;
      if (p !== undefined && typeof p !== 'string' && !(Array.isArray(p) && p.every((b) => typeof b === 'string'))) {
        throw invalidArgument('beforeRequest(): systemPrompt must be a string or an array of strings');
      }
      this.#overhead =
        this.#textTokens(r.systemPrompt) + (r.tools === undefined ? 0 : this.#textTokens(JSON.stringify(r.tools)));
      this.#request = r;
      const step = { pruned: 0, report: undefined };
      this.#stalePass(step);
      // Nothing appended since the last call (a retry): nothing new to check. After a turn
      // that asked for tools, the host appended its results: the mid-run check; otherwise a
      // prompt: the pre-prompt check.
      if (!this.#unchanged()) {
        const assistant = this.#midRun;
        this.#midRun = null;
        const d =
          assistant === null
            ? this.#cm.beforePrompt(this.#model, this.#turnOptions())
            : this.#cm.afterTurn(assistant, this.#model, { ...this.#turnOptions(), midRun: true });
        await this.#apply(d, step);
      }
      const { messages, systemPrompt, inline, imagesOmitted, framesLeftOut, images: sent } = this.#messages();
      if (step.report) {
        step.report.imagesOmitted += imagesOmitted;
        step.report.framesOmitted += framesLeftOut;
      }
      const result = { messages, tokens: this.#storedTokens(), report: step.report };
      // Inline imaging sends fewer tokens than the text estimate counts: no calibration then.
      // Images count as sent (budgets may leave some out); a tokenCounter prices them itself.
      const { text } = this.#rawSplit();
      const images = this.#gauge.counting ? 0 : sent;
      this.#gauge.sent(this.#model, { text, images }, inline?.savedTokens ?? 0);
      if (systemPrompt !== undefined) result.systemPrompt = systemPrompt;
      if (inline !== undefined) result.inline = inline;
      return result;
    });
  }

  /**
   * After each provider response: appends `assistantMessage`, then overflow and
   * incomplete-output recovery, threshold maintenance and the progress guard. `next` says
   * what to do: `'retry'` the request (the failed turn is out of the context), `'continue'`
   * with `continuePrompt` as a new user message, or `'done'` (run the tool calls, if any).
   */
  afterResponse(assistantMessage) {
    return this.#serial(async () => {
      const a = assistantMessage;
      if (!isObject(a) || (a.role !== undefined && a.role !== 'assistant')) {
        throw invalidArgument('afterResponse() takes the assistant message (role "assistant")');
      }
      const message = a.role === undefined ? { ...a, role: 'assistant' } : a;
      const now = this.#now();
      // Appended (and so checked by the core) before anything of it is observed: a refused
      // reply changes nothing.
      const id = this.#session.appendMessage(message, { now: message.timestamp ?? now });
      // A reply to the last request: its reported prompt tokens calibrate its model (the core
      // decides whether it answered that request).
      this.#gauge.observe(message);
      if (message.stopReason === 'toolUse') {
        // Between tool-loop calls: checked before the next request, with the results counted.
        this.#midRun = message;
        return { next: 'done' };
      }
      this.#midRun = null;
      const step = { pruned: 0, report: undefined, failedId: id };
      const ok = message.stopReason !== 'error' && message.stopReason !== 'aborted';
      // The threshold prune runs first and lowers what the turn is measured by (issue 19).
      const freedTokens = ok && this.#settings.enabled ? this.#thresholdPrune(step) : 0;
      const d = this.#cm.afterTurn(message, this.#model, {
        ...this.#turnOptions(),
        freedTokens,
        freedLowersTrigger: true,
      });
      const continuation = await this.#apply(d, step);
      return this.#next(continuation, d, step);
    });
  }

  /** A manual compaction (`/compact [instructions]`), then what to do next. */
  compactNow(instructions) {
    return this.#serial(async () => {
      if (instructions !== undefined && typeof instructions !== 'string') {
        throw invalidArgument('compactNow() takes the focus instructions as a string');
      }
      const step = { pruned: 0, report: undefined };
      const request = { reason: 'manual', contextTokens: this.#storedTokens() };
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
  abort() {
    this.#controller.abort();
    this.#controller = new AbortController();
  }

  /** Stops the idle timer, aborts work in flight and frees the state machine. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#cancelIdle?.();
    this.#cancelIdle = null;
    this.abort();
    // The calibration stays readable (`calibration`); the collector frees it.
    this.#queue.finally(() => this.#cm.free());
  }

  // ----- steps ---------------------------------------------------------------------------

  #serial(fn) {
    if (this.#disposed) return Promise.reject(codedError('E_INVALID_ARGUMENT', 'this Maintainer was disposed'));
    this.#cancelIdle?.();
    this.#cancelIdle = null;
    const run = this.#queue.then(fn).finally(() => {
      this.#seen = this.#state();
    });
    this.#queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** The live session's state: which session, its size and its leaf. */
  #state() {
    return { session: this.#session, key: `${this.#session.size}:${this.#session.leafId}` };
  }

  #unchanged() {
    const now = this.#state();
    return this.#seen !== null && this.#seen.session === now.session && this.#seen.key === now.key;
  }

  #emit(event) {
    for (const f of [this.#o.onEvent, ...handlers(this.#o.hooks, 'onEvent')]) {
      if (typeof f !== 'function') continue;
      try {
        f(event);
      } catch {
        // Observers cannot stop maintenance.
      }
    }
  }

  /**
   * The local estimate of the live context plus the request overhead. Remembered per session
   * state (size and leaf); the maintainer's own prunes, which change neither, forget it.
   */
  #storedTokens() {
    const { text, images } = this.#rawSplit();
    return Math.round(this.#gauge.calibrated(this.#model, text, images));
  }

  /**
   * The estimate before calibration as text (with the request overhead) and images: the core's
   * estimate of the context's images (spec: compaction §3.1), which providers bill by their
   * pixels whatever their tokenizer. With a `tokenCounter`, everything is text: the host's
   * counter prices the images. So it is for a model without image input, which is sent none.
   */
  #rawSplit() {
    const { value, images } = this.#measure();
    return { text: value - images + this.#overhead, images };
  }

  /**
   * The live context, measured once per session state (`#tokens`): `value`, its messages as the
   * gauge counts them; `images`, the core's estimate of their images (0 with a `tokenCounter`);
   * `estimated`, the core's estimate of the messages; `usage`, the tokens the provider reported
   * for the path (0 without usage).
   */
  #measure() {
    const key = `${this.#session.size}:${this.#session.leafId}`;
    if (this.#tokens?.session !== this.#session || this.#tokens.key !== key) {
      const { estimatedTokens, tokensBefore } = this.#session.contextTokens();
      let value = estimatedTokens;
      let images = 0;
      if (this.#gauge.counting) {
        value = this.#gauge.count(this.#session.toLlmMessages({ model: this.#viewOptions().model }));
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

  /** Text (the system prompt, the tool definitions) counted as the gauge counts. */
  #textTokens(text) {
    if (!this.#gauge.counting) return textTokens(text);
    const t = Array.isArray(text) ? text.join('\n\n') : text;
    return typeof t === 'string' && t !== '' ? this.#gauge.count([{ role: 'system', content: t }]) : 0;
  }

  /** The live context's messages as the host counts them (without a `tokenCounter`: the core's estimate). */
  #countedTokens() {
    return this.#measure().value;
  }

  /**
   * `windows` (named token counts) from the host's tokens into the core's estimate, the unit in
   * which the core picks what a compaction keeps and what a prune spares (spec: compaction §3.1,
   * §4.3, §6): scaled by the core's estimate of the live context over the host's count of it.
   * Unchanged without a `tokenCounter`. `keepRecentTokens` also stays unchanged when the path has
   * provider-reported usage: the core scales it by that usage itself (spec: compaction §3.4).
   */
  #inEstimate(windows) {
    if (!this.#gauge.counting) return windows;
    const { estimated, value: counted, usage } = this.#measure();
    return this.#gauge.inEstimate(windows, { estimated, counted, usage });
  }

  /**
   * The provider's tokens per token of the core's estimate of text: the calibration's text
   * ratio, times the host's count over the core's estimate of the live context when a
   * `tokenCounter` counts; undefined before either measured it (the core's rule).
   */
  #providerRatio() {
    const { estimated, value: counted } = this.#measure();
    return this.#gauge.providerRatio(this.#model, { estimated, counted });
  }

  /**
   * A report in the host's tokens when it counts (`tokenUnit: 'counted'`): `tokensBefore` is
   * `before`, `tokensAfter` the live context counted now, and the per-kind split and the shake's
   * share are scaled from the core's estimate by the same ratio. Else `tokenUnit: 'estimate'`.
   */
  #inCountedTokens(report, before) {
    report.tokenUnit = this.#gauge.counting ? 'counted' : 'estimate';
    if (!this.#gauge.counting) return report;
    const after = this.#countedTokens();
    scaleReport(report, after);
    report.tokensBefore = before;
    report.tokensAfter = after;
    return report;
  }

  #turnOptions() {
    return {
      now: this.#now(),
      storedTokens: this.#storedTokens(),
      latestCompactionAt: this.#latestCompactionAt,
      canPromote: typeof this.#o.promote === 'function',
    };
  }

  #pruneReport(pass, r, before) {
    const after = contextSnapshot(this.#session, { byKind: true });
    const report = {
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
    return this.#inCountedTokens(report, before);
  }

  /** A prune pass with `windows` in the host's tokens; returns the tokens it freed, in the report's unit. */
  #prune(pass, options, windows, step) {
    const before = this.#countedTokens();
    const config = { ...options, ...this.#inEstimate(windows), now: this.#now() };
    const r = pass === 'stale' ? this.#session.pruneStale(config) : this.#session.prune(config);
    if (r.prunedCount === 0) return 0;
    this.#tokens = null;
    step.pruned += r.prunedCount;
    step.report = this.#pruneReport(pass, r, before);
    const tokensSaved = step.report.tokensBefore - step.report.tokensAfter;
    this.#emit({ type: 'prune', pass, prunedCount: r.prunedCount, tokensSaved, report: step.report });
    return tokensSaved;
  }

  /** The per-turn stale pass (spec: compaction §6.5): superseded reads, useless results. */
  #stalePass(step) {
    const s = this.#settings;
    if (!s.supersedeReads && !s.dropUseless) return;
    const { idleFlushMs, suffixTokenLimit } = windows().stale;
    const options = { supersedeKey: s.supersedeReads, pruneUseless: s.dropUseless, idleFlushMs };
    this.#prune('stale', options, { suffixTokenLimit }, step);
  }

  /** The threshold prune (spec: compaction §6.6), before the threshold decision. */
  #thresholdPrune(step) {
    return this.#prune('threshold', { pruneUseless: this.#settings.dropUseless }, windows().threshold, step);
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
    let raw = this.#session.toLlmMessages(view);
    let systemPrompt = this.#request.systemPrompt;
    let inline;
    if (this.#imager !== null && images) {
      const r = this.#imager.transform({ messages: raw, systemPrompt, model: this.#model, provider, now: this.#now() });
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
  #viewImages(messages, limit = -1) {
    this.#framesLeftOut = this.#session.lastFramesLeftOut();
    const summaryFirst = this.#session._lastViewCompacted();
    return requestImages(messages, { summaryFirst, framesLeftOut: this.#framesLeftOut, limit });
  }

  /** Whether the model takes images (`'image'` in its `input`): else requests carry none. */
  #readsImages() {
    return Array.isArray(this.#model.input) && this.#model.input.includes('image');
  }

  /**
   * The options of the LLM view sent to the model: its provider's image budget (none for a
   * model without image input), the frame byte budget, and the model, which replays a native
   * compaction of its own provider (spec: compaction §2.3).
   */
  #viewOptions() {
    const provider = this.#o.provider ?? this.#model.provider;
    return {
      maxImages: this.#readsImages() ? providerImageBudget(provider) : 0,
      maxFrameDataBytes: FRAME_DATA_BYTES_BUDGET,
      model: { ...this.#model, provider },
    };
  }

  /** Carries out a decision (spec: compaction §8); resolves its continuation, if any. */
  async #apply(d, step) {
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
      const after = this.#cm.afterCompaction(d.compact, outcome, {});
      for (const e of after.events) {
        if (e.type === 'auto_compaction_end' && step.method) e.action = ACTION_OF[step.method];
        if (e.type === 'auto_compaction_end' && outcome.result) e.result = outcome.result;
      }
      return this.#apply(after, step);
    }
    return d.continuation;
  }

  async #promote(request) {
    let model = null;
    try {
      model = (await this.#o.promote(request)) ?? null;
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
  async #compact(request, step, extra) {
    const o = this.#o;
    const auto = request.reason !== 'manual';
    if (auto) {
      this.#emit({ type: 'auto_compaction_start', reason: request.reason, action: request.action });
    }
    const hooks = [...(Array.isArray(o.hooks) ? o.hooks : o.hooks ? [o.hooks] : [])].map((h) => ({
      ...h,
      onEvent: undefined,
    }));
    hooks.push({ onEvent: (e) => this.#emit(e) });
    // The walk passes `remote` over while the core's cooldown runs (upstream #13310).
    const remoteBlocked = this.#cm.remoteBlocked(this.#now());
    const before = this.#countedTokens();
    const { keepRecentTokens, v2RetainedMessageBudget } = this.#inEstimate({
      // The request's keep budget: the settings' value fitted to the model's window.
      keepRecentTokens: request.budgets?.keepRecentTokens ?? this.#settings.keepRecentTokens,
      v2RetainedMessageBudget: this.#settings.v2RetainedMessageBudget,
    });
    try {
      const result = await runCompaction(this.#session, {
        reason: request.reason,
        now: this.#now(),
        methods: auto ? request.methods : undefined,
        remoteBlocked,
        excludeSnapcompact: request.excludeSnapcompact,
        // The Maintainer compacts by method order (spec: compaction §8.6); `strategy` is the
        // state machine's business (`off`, the automatic strategy).
        settings: { ...o.settings, strategy: undefined, keepRecentTokens, v2RetainedMessageBudget },
        // The window tests of the walk compare with the provider's tokens: the live context
        // and the request overhead calibrated, and the factor for the core's estimates.
        liveTokens: this.#storedTokens(),
        nonMessageTokens: Math.round(this.#overhead * this.#gauge.ratio(this.#model)),
        providerRatio: this.#providerRatio(),
        // Frames and other images at the rate the provider bills them (the calibration's).
        imageRatio: this.#gauge.counting ? 1 : this.#gauge.calibration(this.#model).imageRate,
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
      });
      // A shake rewrites lines in place: neither the size nor the leaf tells.
      this.#tokens = null;
      if (result.skipped !== undefined) return { status: 'nothing-to-compact' };
      step.method = result.method;
      result.report.pruned = step.pruned;
      step.report = result.report;
      if (result.session) {
        const previous = this.#session;
        this.#session = result.session;
        this.#dropped = null;
        this.#latestCompactionAt = this.#now();
        this.#latestCompactionId = null;
        this.#emit({ type: 'handoff', session: result.session, previous, document: result.document });
      } else {
        this.#latestCompactionAt = result.timestamp ?? this.#now();
        this.#latestCompactionId = result.entryId;
      }
      this.#inCountedTokens(result.report, before);
      return {
        status: 'compacted',
        tokensAfter: result.report.tokensAfter,
        storedTokens: this.#storedTokens(),
        result,
      };
    } catch (err) {
      this.#tokens = null; // a shake may have run before the failure
      if (extra.rethrow && err?.code !== 'E_NOTHING_TO_COMPACT' && err?.code !== 'E_ALREADY_COMPACTED') throw err;
      switch (err?.code) {
        case 'E_NOTHING_TO_COMPACT':
        case 'E_ALREADY_COMPACTED':
          return { status: 'nothing-to-compact' };
        case 'E_ABORTED':
        case 'E_CANCELLED':
          return { status: 'aborted' };
        default:
          return { status: 'failed', error: messageOf(err) };
      }
    }
  }

  /** The `afterResponse` / `compactNow` answer for a continuation. */
  #next(continuation, d, step) {
    this.#armIdle(d);
    const out = { next: 'done', report: step.report };
    if (!continuation) return out;
    if (continuation.kind === 'retry') {
      this.#emit({ type: 'continue', kind: 'retry', afterMs: continuation.afterMs });
      return { ...out, next: 'retry' };
    }
    if (continuation.kind === 'auto-continue' && continuation.prompt) {
      this.#emit({ type: 'continue', kind: 'auto-continue', afterMs: continuation.afterMs });
      return { ...out, next: 'continue', continuePrompt: continuation.prompt };
    }
    return out;
  }

  /** Idle maintenance (spec: compaction §8.1) at the decision's `wakeAt`, on its own timer. */
  #armIdle(d) {
    if (!this.#settings.idleEnabled || d.wakeAt === null || d.wakeAt === undefined) return;
    const wakeAt = d.wakeAt;
    this.#cancelIdle?.();
    this.#cancelIdle = this.#setTimer(
      () => {
        this.#cancelIdle = null;
        this.#serial(async () => {
          const next = this.#cm.onIdle(this.#model, this.#storedTokens(), { now: this.#now() });
          await this.#apply(next, { pruned: 0, report: undefined });
          this.#armIdle(next);
        }).catch((err) =>
          this.#emit({ type: 'notice', level: 'error', text: `idle maintenance failed: ${messageOf(err)}` }),
        );
      },
      Math.max(0, wakeAt - this.#now()),
    );
  }
}
