// The trigger state machine (spec: compaction §8): a sans-IO ContextManager. The host reports
// what happened — a turn ended, a prompt is about to go out, the agent is idle, a promotion or
// compaction finished — and applies the Decision it gets back. Nothing here reads a clock
// except to default `now` to Date.now(). Values cross the wasm boundary as JSON text.
import { isObject, nowOf, optionsJson, requiredTokens, time, toJson, tokens } from './args.js';
import { invalidArgument, messageOf } from './errors.js';
import { requireRaw } from './raw.js';

/**
 * A host's model as the JSON the core's calls take, checked by the core (`hostModelJson`: the
 * one check of a model's `provider`, `id`, `contextWindow`, `maxTokens` and `input`, which
 * throws `E_INVALID_ARGUMENT` naming the field). `what` names the model in errors.
 */
export function modelJson(model, what = 'model') {
  return requireRaw().hostModelJson(model, what);
}

function assistantOf(message, what = 'the message') {
  if (!isObject(message) || (message.role !== undefined && message.role !== 'assistant')) {
    throw invalidArgument(`${what} must be an assistant message (role "assistant")`);
  }
  return message;
}

/** Consecutive no-progress `length` recoveries before giving up (spec §8.2). */
export const INCOMPLETE_RECOVERY_MAX_RETRIES = 3;
/** Delay before a retry or continuation starts, in ms (spec §8.3, §8.5). */
export const CONTINUE_DELAY_MS = 100;

/**
 * The trigger state machine of one live session (spec: compaction §8). Apply a Decision in
 * this order: events and notices; dropFailedTurn / restoreFailedTurn; promote (then
 * afterPromotion); compact (emit compact's start event, run it, then afterCompaction);
 * continuation after `afterMs` unless blockAutoContinue.
 */
export class ContextManager {
  #inner;

  /**
   * Throws `E_SETTINGS` naming a bad field. `options.remote`: the host can run the `remote`
   * method without `settings.remoteEndpoint` (e.g. it passes its own endpoint to `compact()`).
   * With `options.model` the model is checked (`E_INVALID_ARGUMENT`), and so are the settings
   * against it and the host: `E_SETTINGS` when no compaction method could ever run
   * (`summarizer`: the host has a summarizer callback, default true; `endpoint`: its remote
   * route includes an endpoint, which stands in for a missing summarizer, default `remote`).
   */
  constructor(settings, options) {
    const o = options ?? {};
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
  get settings() {
    return JSON.parse(this.#inner.settingsJson());
  }

  /** Counters and flags (recoveries, episode, pause, idle), for inspection. */
  get state() {
    return JSON.parse(this.#inner.stateJson());
  }

  /** A compaction walk's `remote` method failed at `now` (ms): its cooldown starts (upstream #13310). */
  noteRemoteFailure(now) {
    this.#inner.noteRemoteFailure(nowOf({ now }));
  }

  /** Whether `remote` still waits out its cooldown at `now` (ms). */
  remoteBlocked(now) {
    return this.#inner.remoteBlocked(nowOf({ now }));
  }

  /** An assistant turn ended (post-turn check, or a mid-run check with `midRun`). */
  afterTurn(assistantMessage, model, options) {
    const o = options ?? {};
    const json = JSON.stringify({
      now: nowOf(o),
      storedTokens: tokens(o.storedTokens, 'storedTokens'),
      latestCompactionAt: time(o.latestCompactionAt, 'latestCompactionAt'),
      canPromote: Boolean(o.canPromote),
      freedTokens: tokens(o.freedTokens, 'freedTokens'),
      freedLowersTrigger: Boolean(o.freedLowersTrigger),
      midRun: Boolean(o.midRun),
    });
    const message = toJson(assistantOf(assistantMessage, 'afterTurn() takes an assistant message that'));
    return JSON.parse(this.#inner.afterTurn(message, modelJson(model), json));
  }

  /** The once-only warnings about `model` (no context window, a keep budget too large for it). */
  checkModel(model) {
    return JSON.parse(this.#inner.checkModel(modelJson(model)));
  }

  /** The host tried the promotion a decision asked for; `promoted` says whether it switched. */
  afterPromotion(promoted) {
    return JSON.parse(this.#inner.afterPromotion(Boolean(promoted)));
  }

  /**
   * A compaction ended. `request` is the decision's `compact` (or `{reason: 'manual', ...}`);
   * `outcome.result` (the compaction result) is put on the `auto_compaction_end` event.
   */
  afterCompaction(request, outcome, options) {
    if (!isObject(request)) throw invalidArgument("request must be the decision's `compact` object");
    if (!isObject(outcome) || typeof outcome.status !== 'string') {
      throw invalidArgument('outcome must be an object with a string `status`');
    }
    let out;
    switch (outcome.status) {
      case 'compacted':
        out = {
          status: 'compacted',
          tokensAfter: requiredTokens(outcome.tokensAfter, 'tokensAfter'),
          storedTokens: tokens(outcome.storedTokens, 'storedTokens'),
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
          `unknown outcome status "${outcome.status}": use "compacted", "nothing-to-compact", "aborted" or "failed"`,
        );
    }
    const o = options ?? {};
    const json = JSON.stringify({
      queuedMessages: Boolean(o.queuedMessages),
      interruptedTurn: Boolean(o.interruptedTurn),
      suppressContinuation: Boolean(o.suppressContinuation),
    });
    const decision = JSON.parse(this.#inner.afterCompaction(JSON.stringify(request), JSON.stringify(out), json));
    if (outcome.status === 'compacted' && outcome.result !== undefined) {
      for (const e of decision.events) {
        if (e.type === 'auto_compaction_end') e.result = outcome.result;
      }
    }
    return decision;
  }

  /** A user prompt is about to be sent: resets per-prompt counters, may compact first. */
  beforePrompt(model, options) {
    const o = options ?? {};
    const json = JSON.stringify({
      now: nowOf(o),
      lastAssistant:
        o.lastAssistant === undefined || o.lastAssistant === null
          ? undefined
          : assistantOf(o.lastAssistant, '`lastAssistant`'),
      storedTokens: tokens(o.storedTokens, 'storedTokens'),
      latestCompactionAt: time(o.latestCompactionAt, 'latestCompactionAt'),
      canPromote: Boolean(o.canPromote),
    });
    return JSON.parse(this.#inner.beforePrompt(modelJson(model), json));
  }

  /** The user switches to `target`: compact first when the context is over its threshold. */
  beforeModelSwitch(target, contextTokens, options) {
    return JSON.parse(
      this.#inner.beforeModelSwitch(
        modelJson(target, 'target'),
        requiredTokens(contextTokens, 'contextTokens'),
        nowOf(options),
      ),
    );
  }

  /** Idle maintenance check; call it at the decision's `wakeAt`. */
  onIdle(model, contextTokens, options) {
    return JSON.parse(
      this.#inner.onIdle(modelJson(model), requiredTokens(contextTokens, 'contextTokens'), nowOf(options)),
    );
  }

  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free() {
    this.#inner.free();
  }
}

/**
 * True when an assistant message reports a context overflow (spec §8.2): an `error` stop with a
 * provider's overflow wording, or a `stop` whose input + cacheRead exceed `contextWindow`.
 */
export function isContextOverflow(message, contextWindow) {
  const json = toJson(assistantOf(message));
  return requireRaw().isContextOverflowJson(json, tokens(contextWindow, 'contextWindow'));
}

/**
 * The methods of `settings.methodOrder` that can run for `reason` on `model`, in order (spec
 * §8.3, §8.6): the rule the ContextManager's requests follow, for a host walking the fallback
 * list itself. `remote` says the host has a remote route besides `settings.remoteEndpoint`;
 * `customInstructions` (a manual compaction with focus text) rules out snapcompact.
 */
export function compactionMethods(settings, options) {
  if (!isObject(options) || typeof options.reason !== 'string') {
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
export function compactionErrorMessage(reason, message) {
  if (typeof reason !== 'string' || typeof message !== 'string') {
    throw invalidArgument('reason and message must be strings');
  }
  return requireRaw().compactionErrorMessage(reason, message);
}

/**
 * The budgets a compaction uses in a window (spec: compaction §3.3 with the small-window rules):
 * `keepRecentTokens`, the automatic shake's protection, the snapcompact archive's room. With
 * `model` (`{provider, id}`) its `modelThresholds` rule applies.
 */
export function windowBudgets(contextWindow, settings, model) {
  let key;
  if (model !== undefined && model !== null) {
    if (!isObject(model) || typeof model.provider !== 'string' || typeof model.id !== 'string') {
      throw invalidArgument('`model` must be an object with string `provider` and `id`');
    }
    key = JSON.stringify({ provider: model.provider, id: model.id });
  }
  const window = requiredTokens(contextWindow, 'contextWindow');
  return JSON.parse(requireRaw().windowBudgetsJson(window, optionsJson(settings, 'settings'), key));
}
