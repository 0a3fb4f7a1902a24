// ctxfold for the AI SDK (`ctxfold/ai-sdk`): a language-model middleware for
// `wrapLanguageModel({ model, middleware })` and a `prepareStep` function for
// `generateText` / `streamText` / agents, both keeping the prompt under the model's window
// through a Maintainer. Neither imports the `ai` package: they speak its specification types
// (the provider-level prompt, `doGenerate` / `doStream` results), so any AI SDK version whose
// models implement `specificationVersion: 'v4'` (or 'v3') works. The types are structural for
// the same reason: the middleware is assignable to the AI SDK's `LanguageModelMiddleware`
// (specification v4), the step function to `prepareStep`.
//
// A conversation is a session that mirrors what the app sends: each call's prompt is compared
// with the messages the session already holds (its first and last), the new ones are appended,
// and the Maintainer's view of the session (pruned, compacted) is what goes to the model. The
// app keeps its whole history; the model gets what fits.
import { isObject } from '../core/args.js';
import { invalidArgument, messageOf } from '../core/errors.js';
import type {
  AbortSignalLike,
  AssistantContent,
  AssistantMessage,
  CompactionSettings,
  JsonObject,
  JsonValue,
  StopReason,
  Summarize,
} from '../core/session.js';
import { classifyError } from '../core/triggers.js';
import { type AiSdkModelMessage, write as writeModelMessages } from '../formats/ai-sdk-model.js';
import { Warnings } from '../formats/common.js';
import { Maintainer, type MaintainerEvent, type MaintainerOptions } from '../runner/maintainer.js';
import { Session } from '../runner/session.js';
import { memberOf } from '../runner/summarizer.js';

// The context tools as AI SDK tools with `execute` (issue 38 item 3).
export { type AiSdkContextToolTarget, type AiSdkExecutableContextTool, aiSdkContextTools } from './tools.js';

const FORMAT = 'ai-sdk-model';

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
   * Middleware: retries of a call the provider refused as too long (the core's `classifyError`:
   * a context overflow, or a payload rejection the Maintainer compacts), each after a
   * compaction; default 2. A stream is retried when its call
   * throws or its first part is an `error`, before any output reached the app.
   */
  maxRetries?: number;
  /** @internal The id of each conversation's session (tests). */
  sessionId?: string;
}

/** A conversation the integration keeps: the session mirroring the prompts, and its Maintainer. */
export interface AiSdkConversation {
  readonly session: Session | undefined;
  readonly maintainer: Maintainer | null;
}

/** The AI SDK specifications the middleware speaks: `v4` (ai 7), `v3` (ai 6). */
export type AiSdkSpecificationVersion = 'v3' | 'v4';

/**
 * The middleware: `wrapLanguageModel({ model, middleware: ctxfoldMiddleware(options) })`. Its
 * methods are generic over the AI SDK's call options and results, so it is assignable to the
 * SDK's `LanguageModelMiddleware` without this package importing its types: ai 7's
 * (`LanguageModelV4Middleware`, `specificationVersion: 'v4'`) and ai 6's
 * (`LanguageModelV3Middleware`, `'v3'`). `V` is the version where the middleware goes
 * (TypeScript infers it from there); the AI SDK does not read it at run time.
 */
export interface CtxfoldMiddleware<V extends AiSdkSpecificationVersion = 'v4'> {
  readonly specificationVersion: V;
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

/** The Maintainer's model of a conversation. */
type ConversationModel = MaintainerOptions['model'];

/** A part of a prompt or of a result, read by its `type` (the SDK's parts are open objects). */
type Part = { type?: unknown; [key: string]: unknown };

/** A summarize request as `summarizerFromModel`'s callback reads it. */
type SummaryCall = Parameters<Summarize>;

/**
 * A summarizer that asks an AI SDK language model (a cheap one): its `doGenerate` with the
 * summary request as system and user message. `options.providerOptions` go with each call.
 */
export function summarizerFromModel(
  model: AiSdkLanguageModel,
  options: { providerOptions?: Record<string, unknown> } = {},
): Summarize {
  if (typeof memberOf(model, 'doGenerate') !== 'function') {
    throw invalidArgument('summarizerFromModel(model): model must be an AI SDK language model (with doGenerate)');
  }
  return async (request: SummaryCall[0], { signal }: SummaryCall[1]) => {
    const result = await model.doGenerate({
      prompt: [
        { role: 'system', content: request.systemPrompt },
        { role: 'user', content: [{ type: 'text', text: request.prompt }] },
      ],
      maxOutputTokens: request.maxTokens,
      abortSignal: signal,
      ...(options.providerOptions && { providerOptions: options.providerOptions }),
    });
    const content = memberOf(result, 'content') ?? [];
    const text = (Array.isArray(content) ? content : [])
      .filter((p: unknown) => memberOf(p, 'type') === 'text')
      .map((p: unknown) => memberOf(p, 'text'))
      .join('');
    if (text.trim() === '') throw new Error('the summarizer model returned no text');
    return text;
  };
}

/** The summarize option: a callback, or an AI SDK model (`summarizerFromModel`). */
function summarizerOf(summarize: CtxfoldAiSdkOptions['summarize']): Summarize | Summarize[] | undefined {
  if (summarize === undefined || typeof summarize === 'function') return summarize;
  if (Array.isArray(summarize)) return summarize.map((s) => (typeof s === 'function' ? s : summarizerFromModel(s)));
  return summarizerFromModel(summarize);
}

/** The Maintainer's model for an AI SDK model: `options.model` overrides what the SDK model says. */
function maintainerModel(options: CtxfoldAiSdkOptions, sdkModel: unknown): ConversationModel {
  const given = options.model ?? {};
  const contextWindow = given.contextWindow ?? options.contextWindow;
  if (contextWindow === undefined || !Number.isFinite(contextWindow) || contextWindow <= 0) {
    throw invalidArgument('ctxfold/ai-sdk: contextWindow (the model window in tokens) must be a positive number');
  }
  return {
    provider: given.provider ?? String(memberOf(sdkModel, 'provider') ?? 'unknown').split('.')[0] ?? 'unknown',
    id: given.id ?? String(memberOf(sdkModel, 'modelId') ?? 'unknown'),
    contextWindow,
    // The app sent what the model takes; images in its prompt are the model's to refuse.
    input: ['text', 'image'],
    ...given,
  };
}

/** What `JSON.stringify` makes of a prompt message, binary data as base64 (how it is compared). */
function keyOf(message: unknown): string {
  return JSON.stringify(message, (_, v: unknown) =>
    v instanceof Uint8Array ? toBase64(v) : v instanceof URL ? v.href : v,
  );
}

function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// ----- the provider-level prompt ⇄ ModelMessage ---------------------------------------------

/** A prompt file part's data (`{type: 'data' | 'url' | 'text' | 'reference'}`) as ModelMessage data. */
function fileDataIn(data: unknown): unknown {
  const type = memberOf(data, 'type');
  if (type === 'data') return memberOf(data, 'data');
  if (type === 'url') {
    const url = memberOf(data, 'url');
    return url instanceof URL ? url.href : String(url);
  }
  if (type === 'text') {
    const text = String(memberOf(data, 'text'));
    return `data:text/plain;base64,${toBase64(new TextEncoder().encode(text))}`;
  }
  return data;
}

function partIn(p: unknown): unknown {
  if (!isObject(p) || p.type !== 'file') return p;
  const { data, mediaType, filename, providerOptions } = p;
  const value = fileDataIn(data);
  if (typeof mediaType === 'string' && mediaType.startsWith('image/')) {
    return { type: 'image', image: value, mediaType, ...(providerOptions ? { providerOptions } : {}) };
  }
  return {
    type: 'file',
    data: value,
    mediaType,
    ...(filename !== undefined && { filename }),
    ...(providerOptions ? { providerOptions } : {}),
  };
}

/**
 * A provider-level prompt message (`LanguageModelV4Prompt`, file data tagged) as a ModelMessage:
 * files as image and file parts with plain data. The inverse of `toPromptMessage`.
 */
export function fromPromptMessage(message: AiSdkModelMessage): AiSdkModelMessage {
  const content: unknown = memberOf(message, 'content');
  if (!Array.isArray(content)) return message;
  return { ...message, content: content.map(partIn) } as AiSdkModelMessage;
}

/** File data in the prompt's tagged form; data already tagged (ai 7 allows it) is kept. */
function fileDataOut(value: unknown): unknown {
  if (isTagged(value)) return value;
  if (typeof value === 'string' && /^(https?|data):/.test(value)) {
    try {
      return { type: 'url', url: new URL(value) };
    } catch {
      // not a URL after all: data
    }
  }
  if (value instanceof URL) return { type: 'url', url: value };
  // The bare shorthand of a provider reference (`{ [provider]: id }`).
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value) && !(value instanceof ArrayBuffer))
    return { type: 'reference', reference: value };
  return { type: 'data', data: value };
}

const FILE_DATA_TAGS: ReadonlySet<unknown> = new Set(['data', 'url', 'reference', 'text']);

function isTagged(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === 'object' &&
    !(value instanceof URL) &&
    !ArrayBuffer.isView(value) &&
    FILE_DATA_TAGS.has(memberOf(value, 'type'))
  );
}

function partOut(p: unknown): unknown {
  if (!isObject(p)) return p;
  if (p.type === 'image') {
    const { image, mediaType, providerOptions } = p;
    return {
      type: 'file',
      data: fileDataOut(image),
      mediaType: mediaType ?? 'image/png',
      ...(providerOptions ? { providerOptions } : {}),
    };
  }
  if (p.type === 'file') {
    const { data, mediaType, filename, providerOptions } = p;
    return {
      type: 'file',
      data: fileDataOut(data),
      mediaType,
      ...(filename !== undefined && { filename }),
      ...(providerOptions ? { providerOptions } : {}),
    };
  }
  return p;
}

/**
 * A ModelMessage as a provider-level prompt message (`LanguageModelV4Prompt`): user content
 * always parts, files and images as file parts with tagged data. The inverse of `fromPromptMessage`.
 */
export function toPromptMessage(message: AiSdkModelMessage): AiSdkModelMessage {
  if (message.role === 'system') return message;
  const content: unknown[] =
    typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
  return { ...message, content: content.map(partOut) } as AiSdkModelMessage;
}

// ----- the reply as an AgentMessage ----------------------------------------------------------

const STOP: Readonly<Record<string, StopReason>> = {
  stop: 'stop',
  length: 'length',
  'tool-calls': 'toolUse',
  error: 'error',
  'content-filter': 'stop',
};

/** A number of a usage record, else undefined. */
function usageFigure(usage: unknown, group: string, key: string): number | undefined {
  const v = memberOf(memberOf(usage, group), key);
  return typeof v === 'number' ? v : undefined;
}

/** A generate result (or the parts a stream gave) as the assistant message the session keeps. */
function replyMessage(
  content: readonly unknown[],
  finishReason: unknown,
  usage: unknown,
  model: ConversationModel,
): AssistantMessage {
  const blocks: AssistantContent[] = [];
  for (const part of content) {
    const p: Part = isObject(part) ? part : {};
    if (p.type === 'text' && p.text !== '') blocks.push({ type: 'text', text: p.text as string });
    else if (p.type === 'reasoning') blocks.push({ type: 'thinking', thinking: (p.text as string | undefined) ?? '' });
    else if (p.type === 'tool-call') {
      let args: unknown = p.input;
      if (typeof args === 'string') {
        try {
          args = args.trim() === '' ? {} : JSON.parse(args);
        } catch {
          args = { __raw: p.input };
        }
      }
      blocks.push({
        type: 'toolCall',
        id: p.toolCallId as string,
        name: p.toolName as string,
        arguments: (args ?? {}) as JsonObject,
      });
    }
  }
  const input = usageFigure(usage, 'inputTokens', 'total') ?? 0;
  const cacheRead = usageFigure(usage, 'inputTokens', 'cacheRead') ?? 0;
  const cacheWrite = usageFigure(usage, 'inputTokens', 'cacheWrite') ?? 0;
  const output = usageFigure(usage, 'outputTokens', 'total') ?? 0;
  const unified = typeof finishReason === 'string' ? finishReason : memberOf(finishReason, 'unified');
  return {
    role: 'assistant',
    content: blocks,
    provider: model.provider,
    model: model.id,
    usage: {
      input: Math.max(0, input - cacheRead - cacheWrite),
      output,
      cacheRead,
      cacheWrite,
      totalTokens: input + output,
    },
    stopReason: (typeof unified === 'string' ? STOP[unified] : undefined) ?? 'stop',
  };
}

/** The text of a thrown value or of a stream's `error` part (which may be a plain object). */
function errorText(err: unknown): string {
  if (err === null || typeof err !== 'object' || typeof memberOf(err, 'message') === 'string') return messageOf(err);
  try {
    return JSON.stringify(err) ?? messageOf(err);
  } catch {
    return messageOf(err);
  }
}

/** A failed call as the assistant message the Maintainer reads overflow errors from. */
function errorMessage(err: unknown, model: ConversationModel): AssistantMessage {
  const body = memberOf(err, 'responseBody');
  return {
    role: 'assistant',
    content: [],
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'error',
    errorMessage: [errorText(err), typeof body === 'string' ? body : ''].filter(Boolean).join('\n'),
  };
}

// ----- the conversation ----------------------------------------------------------------------

/** A message of the prompt a call sends (the provider-level prompt, or a step's ModelMessages). */
type PromptMessage = AiSdkModelMessage;

/**
 * A prompt's history messages, their keys made when asked for: a call compares the first and
 * the last message a conversation holds, not the whole history.
 */
class History {
  #messages: readonly PromptMessage[];
  #keys = new Map<number, string>();

  constructor(messages: readonly PromptMessage[]) {
    this.#messages = messages;
  }

  get length(): number {
    return this.#messages.length;
  }

  key(i: number): string {
    let k = this.#keys.get(i);
    if (k === undefined) {
      k = keyOf(this.#messages[i]);
      this.#keys.set(i, k);
    }
    return k;
  }
}

/** A prompt's leading system messages (the system prompt) and the history after them. */
function splitSystem(prompt: readonly PromptMessage[]): { system: PromptMessage[]; rest: PromptMessage[] } {
  let i = 0;
  while (i < prompt.length && prompt[i]?.role === 'system') i++;
  return { system: prompt.slice(0, i), rest: prompt.slice(i) };
}

/** What a Maintainer answered after a reply. */
type AfterReply = Awaited<ReturnType<Maintainer['afterResponse']>>;

/**
 * One conversation: a session mirroring the prompts the app sends, and its Maintainer. Calls
 * run one at a time, in order.
 */
class Conversation implements AiSdkConversation {
  #options: CtxfoldAiSdkOptions;
  #model: ConversationModel;
  #maintainer: Maintainer | null = null;
  /**
   * The history messages (after the system prompt) the session holds: how many, and the keys of
   * the first and the last (a prompt continues the conversation when it has both in place).
   */
  #seen = { count: 0, first: '', last: '' };
  /** The reply `afterResponse` appended, which the next prompt carries as an assistant message. */
  #replied = false;
  /** The last reply's `afterResponse` (a stream's ends after its reader saw the text). */
  #pending: Promise<unknown> = Promise.resolve();

  constructor(options: CtxfoldAiSdkOptions, model: ConversationModel) {
    this.#options = options;
    this.#model = model;
  }

  get session(): Session | undefined {
    return this.#maintainer?.session;
  }

  get maintainer(): Maintainer | null {
    return this.#maintainer;
  }

  /** Whether `history` (a prompt's messages after its system prompt) continues what this conversation holds. */
  continues(history: History): boolean {
    const n = this.#seen.count;
    if (n === 0) return true;
    if (history.length < n) return false;
    return history.key(0) === this.#seen.first && history.key(n - 1) === this.#seen.last;
  }

  /** Notes the history messages `from` to `to` (exclusive) as held. */
  #hold(history: History, from: number, to: number): void {
    if (to <= from) return;
    if (this.#seen.count === 0) this.#seen.first = history.key(0);
    this.#seen.count = to;
    this.#seen.last = history.key(to - 1);
  }

  /** The prompt to send instead of `prompt`: the Maintainer's view of the session, system first. */
  async prompt(
    prompt: readonly PromptMessage[],
    tools: readonly unknown[] | undefined,
  ): Promise<{ prompt: PromptMessage[]; report: AfterReply['report'] }> {
    await this.#pending;
    const { system, rest } = splitSystem(prompt);
    const history = new History(rest);
    const maintainer = this.#maintainer === null || !this.continues(history) ? this.#start() : this.#maintainer;
    let from = this.#seen.count;
    if (this.#replied && from < rest.length && rest[from]?.role === 'assistant') {
      // The reply appended after the last call, as the app sends it back.
      this.#hold(history, from, from + 1);
      from++;
    }
    this.#replied = false;
    if (from < rest.length) {
      maintainer.session.appendMessages(rest.slice(from).map(fromPromptMessage), {
        format: FORMAT,
        model: this.#model,
      });
      this.#hold(history, from, rest.length);
    }
    const systemPrompt = system.map((m) => m.content).filter((t): t is string => typeof t === 'string' && t !== '');
    const before = await maintainer.beforeRequest({
      ...(systemPrompt.length > 0 && { systemPrompt: systemPrompt.join('\n\n') }),
      ...(tools?.length && { tools: tools as JsonValue[] }),
    });
    // The format's writer: ModelMessages (the format reads and writes them).
    const written = writeModelMessages(before.messages, {
      model: this.#model,
      warnings: new Warnings(),
      system: undefined,
      session: maintainer.session,
      leafId: undefined,
    });
    const sentSystem: PromptMessage[] =
      typeof before.systemPrompt === 'string' && before.systemPrompt !== systemPrompt.join('\n\n')
        ? [{ role: 'system', content: before.systemPrompt }]
        : system;
    return {
      // The writer had no system prompt to write: a system message it gives is a later one of the
      // history (read as a developer message), sent where it was.
      prompt: [...sentSystem, ...written.messages.map(toPromptMessage)],
      report: before.report,
    };
  }

  /** The reply (or the error) of the call: the Maintainer's `afterResponse`. */
  reply(message: AssistantMessage): Promise<AfterReply> {
    const after = this.#pending.then(async () => {
      if (this.#maintainer === null) throw invalidArgument('ctxfold/ai-sdk: a reply before any prompt');
      const result = await this.#maintainer.afterResponse(message);
      this.#replied = message.stopReason !== 'error';
      return result;
    });
    this.#pending = after.catch(() => {});
    return after;
  }

  #start(): Maintainer {
    const session = Session.create({ ...(this.#options.sessionId && { id: this.#options.sessionId }) });
    this.#maintainer?.dispose();
    const { summarize, settings, onEvent, maintainer, tokenCounter } = this.#options;
    const summarizer = summarizerOf(summarize);
    const m = new Maintainer(session, {
      ...maintainer,
      ...(tokenCounter !== undefined && { tokenCounter }),
      model: this.#model,
      ...(summarizer !== undefined && { summarize: summarizer }),
      ...(settings && { settings }),
      ...(onEvent && { onEvent }),
    });
    this.#maintainer = m;
    this.#seen = { count: 0, first: '', last: '' };
    this.#replied = false;
    return m;
  }

  dispose(): void {
    this.#maintainer?.dispose();
  }
}

/** The conversations of one middleware or prepareStep: the last few, matched by their prompts. */
class Conversations {
  #options: CtxfoldAiSdkOptions;
  #list: Conversation[] = [];
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: CtxfoldAiSdkOptions) {
    if (options === null || typeof options !== 'object')
      throw invalidArgument('ctxfold/ai-sdk: options must be an object');
    maintainerModel(options, undefined);
    this.#options = options;
  }

  /** Runs `fn(conversation)` after the calls before it, for the conversation `prompt` continues. */
  run<T>(prompt: readonly PromptMessage[], sdkModel: unknown, fn: (c: Conversation) => Promise<T>): Promise<T> {
    const step = this.#queue.then(() => {
      const history = new History(splitSystem(prompt).rest);
      let c = this.#list.find((x) => x.continues(history) && x.session !== undefined);
      if (c === undefined) {
        c = new Conversation(this.#options, maintainerModel(this.#options, sdkModel));
        this.#list.unshift(c);
        const max = this.#options.maxConversations ?? 16;
        for (const old of this.#list.splice(max)) old.dispose();
      }
      return fn(c);
    });
    this.#queue = step.catch(() => {});
    return step;
  }

  /** The conversations, newest first (tests, a host that wants the sessions). */
  get list(): AiSdkConversation[] {
    return [...this.#list];
  }
}

/** A call whose prompt the middleware replaced: its conversation and the app's own parameters. */
interface Held {
  c: Conversation;
  original: { prompt: PromptMessage[]; tools?: unknown[] };
  /** The wrapped model speaks specification v3 (ai 6): its prompt's file data is untagged. */
  v3: boolean;
}

/**
 * A prompt for a model of specification v3 (ai 6, `LanguageModelV3Prompt`), whose file parts
 * take the data itself (bytes, base64 or a URL), from the v4 prompt the writer makes (tagged
 * `{ type: 'data' | 'url', … }`). Other tags (v4 only) are left as they are.
 */
function v3Prompt(prompt: PromptMessage[]): PromptMessage[] {
  return prompt.map((m) => {
    const content: unknown = memberOf(m, 'content');
    if (!Array.isArray(content) || !content.some((p) => isObject(p) && p.type === 'file' && isTagged(p.data))) return m;
    const parts = content.map((p: unknown) => {
      if (!isObject(p) || p.type !== 'file' || !isObject(p.data)) return p;
      if (p.data.type === 'data') return { ...p, data: p.data.data };
      if (p.data.type === 'url') return { ...p, data: p.data.url };
      return p;
    });
    return { ...m, content: parts } as PromptMessage;
  });
}

/** Whether the model the SDK gave the middleware is of specification v3 (ai 6). */
function isV3(model: unknown): boolean {
  return memberOf(model, 'specificationVersion') === 'v3';
}

/**
 * After a call failed with `err`: when the core classes it as a context overflow or a payload
 * rejection (spec: compaction §8.2; `classifyError`), the failed turn goes to the
 * conversation's Maintainer (which compacts an overflow, and blocks on a payload that is not a
 * token problem), and if that compacted and says to retry, the prompt to send again. A rate
 * limit, a transient or an auth failure is the caller's to retry: undefined.
 */
async function retryPrompt(h: Held, err: unknown, model: ConversationModel): Promise<PromptMessage[] | undefined> {
  const failed = errorMessage(err, model);
  const status = memberOf(err, 'statusCode');
  const { class: kind } = classifyError({
    message: failed.errorMessage ?? '',
    ...(typeof status === 'number' && Number.isInteger(status) && status >= 100 && status < 600 ? { status } : {}),
  });
  if (kind !== 'context_overflow' && kind !== 'payload_too_large') return undefined;
  const after = await h.c.reply(failed);
  if (after.next !== 'retry') return undefined;
  const { prompt } = await h.c.prompt(h.original.prompt, h.original.tools);
  return h.v3 ? v3Prompt(prompt) : prompt;
}

/** Stream parts that come before any output: a refusal after them is a refusal of the call. */
const PREAMBLE: ReadonlySet<unknown> = new Set(['stream-start', 'response-metadata', 'raw']);

/** A stream's first parts, read up to its first output. */
interface Opened {
  head: unknown[];
  reader: ReadableStreamDefaultReader<unknown>;
  refusal?: unknown;
}

/**
 * Reads a stream's parts up to its first output (or its end): `{head, reader, refusal?}`,
 * `head` the parts read, `refusal` the error of an `error` part met before any output. A
 * stream that fails before then rejects, as the call would have.
 */
async function openStream(stream: ReadableStream<unknown>): Promise<Opened> {
  const reader = stream.getReader();
  const head: unknown[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { head, reader };
    head.push(value);
    const type = memberOf(value, 'type');
    if (type === 'error') return { head, reader, refusal: memberOf(value, 'error') };
    if (!PREAMBLE.has(type)) return { head, reader };
  }
}

/** The parts of `head`, then the rest of `reader`, as one stream. */
function rejoin(head: unknown[], reader: ReadableStreamDefaultReader<unknown>): ReadableStream<unknown> {
  let i = 0;
  return new ReadableStream({
    async pull(controller) {
      if (i < head.length) {
        controller.enqueue(head[i++]);
        return;
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** `stream` as it goes to the app, the reply it carries handed to the conversation when it ends. */
function tapped(stream: ReadableStream<unknown>, h: Held, model: ConversationModel): ReadableStream<unknown> {
  const content: Part[] = [];
  const texts = new Map<string, { type: string; text: string }>();
  let finish: Part | null = null;
  const tap = new TransformStream<unknown, unknown>({
    transform(chunk, controller) {
      const part: Part = isObject(chunk) ? chunk : {};
      if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
        const kind = part.type === 'text-delta' ? 'text' : 'reasoning';
        let block = texts.get(`${kind}:${String(part.id)}`);
        if (block === undefined) {
          block = { type: kind, text: '' };
          texts.set(`${kind}:${String(part.id)}`, block);
          content.push(block);
        }
        block.text += String(part.delta);
      } else if (part.type === 'tool-call') content.push(part);
      else if (part.type === 'finish') finish = part;
      controller.enqueue(chunk);
    },
    async flush() {
      const end: Part | null = finish;
      if (end !== null) await h.c.reply(replyMessage(content, end.finishReason, end.usage, model));
    },
  });
  return stream.pipeThrough(tap);
}

/** The call options the middleware reads: the prompt, the tools. */
interface CallParams {
  prompt: PromptMessage[];
  tools?: unknown[];
}

/** What the middleware calls of the wrapped model on a retry. */
interface WrappedModel {
  doGenerate(params: unknown): PromiseLike<unknown>;
  doStream(params: unknown): PromiseLike<unknown>;
}

/** Whether the `model` the SDK gave the middleware can be called again (a retry). */
function isWrappedModel(model: unknown): model is WrappedModel {
  return typeof memberOf(model, 'doGenerate') === 'function' && typeof memberOf(model, 'doStream') === 'function';
}

/** Whether a stream result's `stream` reads as a ReadableStream (any implementation of it). */
function isReadable(stream: unknown): stream is ReadableStream<unknown> {
  return typeof memberOf(stream, 'getReader') === 'function';
}

/**
 * The middleware for `wrapLanguageModel({ model, middleware: ctxfold({...}) })`: each call's
 * prompt goes through the conversation's Maintainer (prune, compaction, recovery); the reply
 * and its usage go back to it. An overflow the provider reports — a call that throws, or a
 * stream whose first part is an `error` — is compacted and retried. `specificationVersion`
 * (default `'v4'`) is the value the middleware object carries; its type follows where the
 * middleware goes (ai 6 or ai 7) either way.
 */
export function ctxfoldMiddleware<V extends AiSdkSpecificationVersion = 'v4'>(
  options: CtxfoldAiSdkOptions & { specificationVersion?: V },
): CtxfoldMiddleware<V> {
  const conversations = new Conversations(options);
  const maxRetries = options.maxRetries ?? 2;
  const held = new WeakMap<object, Held>();
  const version = options.specificationVersion ?? 'v4';
  if (version !== 'v4' && version !== 'v3') {
    throw invalidArgument(
      `ctxfoldMiddleware(): specificationVersion must be 'v4' or 'v3', got ${JSON.stringify(version)}`,
    );
  }
  const middleware = {
    specificationVersion: version as V,
    async transformParams<P extends { prompt: unknown[] }>({ params, model }: { params: P; model: unknown }) {
      const call = params as P & CallParams;
      return conversations.run(call.prompt, model, async (c) => {
        const { prompt } = await c.prompt(call.prompt, call.tools);
        const v3 = isV3(model);
        const out = { ...params, prompt: v3 ? v3Prompt(prompt) : prompt };
        held.set(out, { c, original: call, v3 });
        return out;
      });
    },
    async wrapGenerate<R>({
      doGenerate,
      params,
      model,
    }: {
      doGenerate: () => PromiseLike<R>;
      params: unknown;
      model: unknown;
    }) {
      if (!isObject(params)) return doGenerate();
      const h = held.get(params);
      if (h === undefined) return doGenerate();
      const m = maintainerModel(options, model);
      let call = doGenerate;
      for (let attempt = 0; ; attempt++) {
        let result: R;
        try {
          result = await call();
        } catch (err) {
          const prompt = attempt < maxRetries ? await retryPrompt(h, err, m) : undefined;
          if (prompt === undefined || !isWrappedModel(model)) throw err;
          // The SDK's result type is the caller's (R); the wrapped model's own call returns it.
          call = () => model.doGenerate({ ...params, prompt }) as PromiseLike<R>;
          continue;
        }
        const content = memberOf(result, 'content');
        await h.c.reply(
          replyMessage(
            Array.isArray(content) ? content : [],
            memberOf(result, 'finishReason'),
            memberOf(result, 'usage'),
            m,
          ),
        );
        return result;
      }
    },
    async wrapStream<S>({
      doStream,
      params,
      model,
    }: {
      doStream: () => PromiseLike<S>;
      params: unknown;
      model: unknown;
    }) {
      if (!isObject(params)) return doStream();
      const h = held.get(params);
      if (h === undefined) return doStream();
      const m = maintainerModel(options, model);
      let call = doStream;
      for (let attempt = 0; ; attempt++) {
        let result: S;
        let opened: Opened;
        try {
          result = await call();
          const stream = memberOf(result, 'stream');
          if (!isReadable(stream)) throw new TypeError('the stream result has no ReadableStream `stream`');
          opened = await openStream(stream);
        } catch (err) {
          const prompt = attempt < maxRetries ? await retryPrompt(h, err, m) : undefined;
          if (prompt === undefined || !isWrappedModel(model)) throw err;
          call = () => model.doStream({ ...params, prompt }) as PromiseLike<S>;
          continue;
        }
        if (opened.refusal !== undefined && attempt < maxRetries) {
          const prompt = await retryPrompt(h, opened.refusal, m);
          if (prompt !== undefined && isWrappedModel(model)) {
            opened.reader.cancel().catch(() => {});
            call = () => model.doStream({ ...params, prompt }) as PromiseLike<S>;
            continue;
          }
        }
        return { ...result, stream: tapped(rejoin(opened.head, opened.reader), h, m) };
      }
    },
  };
  Object.defineProperty(middleware, 'conversations', { get: () => conversations.list });
  return middleware as typeof middleware & { readonly conversations: AiSdkConversation[] };
}

/**
 * A `prepareStep` for `generateText` / `streamText` / an agent: returns the step's `messages`
 * (ModelMessages) kept under the window. The step results' usage reaches the Maintainer.
 */
export function ctxfoldPrepareStep(options: CtxfoldAiSdkOptions): CtxfoldPrepareStep {
  const conversations = new Conversations(options);
  const fn = async <M>({ messages, steps, model }: { messages: M[]; steps: readonly unknown[]; model: unknown }) => {
    const prompt = messages as unknown as PromptMessage[];
    return conversations.run(prompt, model, async (c) => {
      const last = steps?.[steps.length - 1];
      if (last !== undefined && c.session !== undefined && c.maintainer !== null) {
        const m = maintainerModel(options, model);
        const content = memberOf(last, 'content') ?? [];
        await c.reply(
          replyMessage(
            Array.isArray(content) ? content : [],
            memberOf(last, 'finishReason'),
            modelUsage(memberOf(last, 'usage')),
            m,
          ),
        );
      }
      const { prompt: sent } = await c.prompt(prompt.map(toPromptMessage), undefined);
      return { messages: sent.map(fromPromptMessage) as unknown as M[] };
    });
  };
  Object.defineProperty(fn, 'conversations', { get: () => conversations.list });
  return fn as typeof fn & { readonly conversations: AiSdkConversation[] };
}

/** A step result's usage (`inputTokens` numbers) in the specification's form. */
function modelUsage(usage: unknown): unknown {
  if (usage === undefined || typeof memberOf(usage, 'inputTokens') === 'object') return usage;
  const details = memberOf(usage, 'inputTokenDetails');
  return {
    inputTokens: {
      total: memberOf(usage, 'inputTokens'),
      cacheRead: memberOf(details, 'cacheReadTokens') ?? memberOf(usage, 'cachedInputTokens'),
      cacheWrite: memberOf(details, 'cacheWriteTokens'),
    },
    outputTokens: { total: memberOf(usage, 'outputTokens') },
  };
}
