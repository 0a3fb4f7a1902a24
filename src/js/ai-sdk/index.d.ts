// Types of `ctxfold/ai-sdk` (src/wasm/js/ai-sdk.js). They are structural, so the package does
// not depend on `ai`: the middleware is assignable to the AI SDK's `LanguageModelMiddleware`
// (specification v4), the step function to `prepareStep`.
import type { AbortSignalLike, CompactionSettings, Summarize } from '../core/session.js';
import type { Maintainer, MaintainerEvent, MaintainerOptions } from '../runner/maintainer.js';
import type { Session } from '../runner/session.js';

/** An AI SDK language model object (`specificationVersion` 'v4' or 'v3'); only `doGenerate` is called by a summarizer. */
export interface AiSdkLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: {
    prompt: unknown[];
    maxOutputTokens?: number;
    abortSignal?: AbortSignalLike;
  }): PromiseLike<unknown>;
}

export interface CtxfoldAiSdkOptions {
  /** The window of the wrapped model in tokens (or `model.contextWindow`). */
  contextWindow?: number;
  /**
   * The Maintainer's model; default: provider and id of the wrapped AI SDK model, `contextWindow`,
   * and `input: ['text', 'image']` (give `input: ['text']` for a model that takes no images: they
   * are then left out of the prompt and counted in the report's `imagesOmitted`).
   */
  model?: Partial<MaintainerOptions['model']>;
  /** The summarizer: an AI SDK model (a cheap one, called with `doGenerate`) or a callback. */
  summarize?: AiSdkLanguageModel | Summarize | Array<AiSdkLanguageModel | Summarize>;
  /** Compaction settings (spec: compaction §9.2). */
  settings?: CompactionSettings;
  /** Every event of each conversation's Maintainer. */
  onEvent?: (event: MaintainerEvent) => void;
  /** Counts a message's tokens instead of the core's estimate (see `MaintainerOptions.tokenCounter`). */
  tokenCounter?: MaintainerOptions['tokenCounter'];
  /** Further Maintainer options (calibration, hooks, fetch and credentials of the native lanes, the clock, …). */
  maintainer?: Omit<MaintainerOptions, 'model' | 'summarize' | 'settings' | 'onEvent' | 'tokenCounter'>;
  /** Conversations kept apart (matched by their prompts), newest first; default 16. */
  maxConversations?: number;
  /**
   * Middleware: retries of a call the provider refused as too long (by the core's
   * `isContextOverflow`), each after a compaction; default 2. A stream is retried when its call
   * throws or its first part is an `error`, before any output reached the app.
   */
  maxRetries?: number;
}

/** A conversation the integration keeps: the session mirroring the prompts, and its Maintainer. */
export interface AiSdkConversation {
  readonly session: Session | undefined;
  readonly maintainer: Maintainer | null;
}

/**
 * The middleware: `wrapLanguageModel({ model, middleware: ctxfoldMiddleware(options) })`. Its
 * methods are generic over the AI SDK's call options and results, so it is assignable to the
 * SDK's `LanguageModelMiddleware` (specification v4) without this package importing its types.
 */
export interface CtxfoldMiddleware {
  readonly specificationVersion: 'v4';
  transformParams<P extends { prompt: unknown[] }>(options: {
    type: 'generate' | 'stream';
    params: P;
    model: unknown;
  }): PromiseLike<P>;
  wrapGenerate<R>(options: {
    doGenerate: () => PromiseLike<R>;
    doStream: () => PromiseLike<unknown>;
    params: unknown;
    model: unknown;
  }): PromiseLike<R>;
  wrapStream<S>(options: {
    doGenerate: () => PromiseLike<unknown>;
    doStream: () => PromiseLike<S>;
    params: unknown;
    model: unknown;
  }): PromiseLike<S>;
  /** The conversations, newest first. */
  readonly conversations: AiSdkConversation[];
}

export function ctxfoldMiddleware(options: CtxfoldAiSdkOptions): CtxfoldMiddleware;

/** `prepareStep` for `generateText`, `streamText` and agents: the step's messages (ModelMessages), under the window. */
export interface CtxfoldPrepareStep {
  <M>(options: {
    messages: M[];
    steps: readonly unknown[];
    model: unknown;
    stepNumber?: number;
  }): Promise<{ messages: M[] }>;
  readonly conversations: AiSdkConversation[];
}

export function ctxfoldPrepareStep(options: CtxfoldAiSdkOptions): CtxfoldPrepareStep;

/** A summarizer that asks an AI SDK model (its `doGenerate`). */
export function summarizerFromModel(
  model: AiSdkLanguageModel,
  options?: { providerOptions?: Record<string, unknown> },
): Summarize;

/**
 * `init` of the runtime's entry, as `ctxfold` exports it: in a browser, await it (optionally
 * with the `.wasm`'s URL or bytes) before the first call; elsewhere it resolves at once.
 */
export function init(input?: unknown): Promise<void>;
