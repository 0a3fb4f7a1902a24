// Types of `ctxfold/ai-sdk` (src/wasm/js/ai-sdk.js). They are structural, so the package does
// not depend on `ai`: the middleware is assignable to the AI SDK's `LanguageModelMiddleware`
// (specification v4), the step function to `prepareStep`.
import type { CompactionSettings, Maintainer, Session, Summarize } from './index.js';
import type { MaintainerEvent, MaintainerOptions } from './maintainer.js';

/** A value of an AI SDK type this package does not import (call options, results, messages). */
// biome-ignore lint/suspicious/noExplicitAny: the AI SDK's own types, which this package does not depend on
type AiSdkValue = any;

/** An AI SDK language model object (`specificationVersion` 'v4' or 'v3'); only `doGenerate` is called by a summarizer. */
export interface AiSdkLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: AiSdkValue): PromiseLike<AiSdkValue>;
}

export interface CtxfoldAiSdkOptions {
  /** The window of the wrapped model in tokens (or `model.contextWindow`). */
  contextWindow?: number;
  /** The Maintainer's model; default: provider and id of the wrapped AI SDK model, `contextWindow`. */
  model?: Partial<MaintainerOptions['model']>;
  /** The summarizer: an AI SDK model (a cheap one, called with `doGenerate`) or a callback. */
  summarize?: AiSdkLanguageModel | Summarize | Array<AiSdkLanguageModel | Summarize>;
  /** Compaction settings (spec: compaction §9.2). */
  settings?: CompactionSettings;
  /** Every event of each conversation's Maintainer. */
  onEvent?: (event: MaintainerEvent) => void;
  /** Further Maintainer options (hooks, fetch and credentials of the native lanes, the clock, …). */
  maintainer?: Omit<MaintainerOptions, 'model' | 'summarize' | 'settings' | 'onEvent'>;
  /** Conversations kept apart (matched by their prompts), newest first; default 16. */
  maxConversations?: number;
  /** Middleware: retries of a call the provider refused as too long, each after a compaction; default 2. */
  maxRetries?: number;
}

/** A conversation the integration keeps: the session mirroring the prompts, and its Maintainer. */
export interface AiSdkConversation {
  readonly session: Session | undefined;
  readonly maintainer: Maintainer | null;
}

/** The middleware: `wrapLanguageModel({ model, middleware: ctxfoldMiddleware(options) })`. */
export interface CtxfoldMiddleware {
  readonly specificationVersion: 'v4';
  transformParams(options: {
    type: 'generate' | 'stream';
    params: AiSdkValue;
    model: AiSdkValue;
  }): PromiseLike<AiSdkValue>;
  wrapGenerate(options: {
    doGenerate: () => PromiseLike<AiSdkValue>;
    doStream: () => PromiseLike<AiSdkValue>;
    params: AiSdkValue;
    model: AiSdkValue;
  }): PromiseLike<AiSdkValue>;
  wrapStream(options: {
    doGenerate: () => PromiseLike<AiSdkValue>;
    doStream: () => PromiseLike<AiSdkValue>;
    params: AiSdkValue;
    model: AiSdkValue;
  }): PromiseLike<AiSdkValue>;
  /** The conversations, newest first. */
  readonly conversations: AiSdkConversation[];
}

export function ctxfoldMiddleware(options: CtxfoldAiSdkOptions): CtxfoldMiddleware;

/** `prepareStep` for `generateText`, `streamText` and agents: the step's messages, under the window. */
export interface CtxfoldPrepareStep {
  (options: {
    messages: AiSdkValue[];
    steps: AiSdkValue[];
    model: AiSdkValue;
    stepNumber?: number;
  }): Promise<{ messages: AiSdkValue[] }>;
  readonly conversations: AiSdkConversation[];
}

export function ctxfoldPrepareStep(options: CtxfoldAiSdkOptions): CtxfoldPrepareStep;

/** A summarizer that asks an AI SDK model (its `doGenerate`). */
export function summarizerFromModel(
  model: AiSdkLanguageModel,
  options?: { providerOptions?: Record<string, unknown> },
): Summarize;
