// A provider SDK's reply as the assistant message `Maintainer.afterResponse()` takes, and an
// SDK's thrown API error as the failed reply the Maintainer classifies (issue 41).
//
// `fromResponse` reads the reply's message with the format's own reader (formats/<format>.ts:
// the same code that reads an assistant message of that format's history), then sets what
// only the response envelope says: the stop reason and the usage. `fromError` builds the reply
// of a failed request: no content, `stopReason: 'error'` and the provider's error text, which
// the core classifies (spec: compaction §8.2, overflow detection); nothing is decided here.
//
// The envelopes, as the SDKs return them (and as their streams accumulate them):
// - `openai-chat`: a Chat Completions `ChatCompletion` (`choices[0].message`,
//   `choices[0].finish_reason`, `usage.prompt_tokens_details.cached_tokens` inside
//   `prompt_tokens`);
// - `openai-responses`: a Responses `Response` (`output` items, `status`,
//   `incomplete_details.reason`, `usage.input_tokens_details.cached_tokens` inside
//   `input_tokens`);
// - `anthropic`: a Messages `Message` (`content`, `stop_reason`, `usage` with the cache reads
//   and writes apart from `input_tokens`);
// - `gemini`: a `GenerateContentResponse` (`candidates[0].content`, `finishReason`,
//   `usageMetadata.cachedContentTokenCount` inside `promptTokenCount`).
//
// Usage follows pi's convention: `input` is the prompt tokens not read from a cache,
// `cacheRead` the cached ones, `cacheWrite` those written to a cache, `output` every generated
// token (reasoning included).
import { codedError, invalidArgument } from '../core/errors.js';
import type { AssistantMessage, JsonObject, ResponseMessage, SessionCore, StopReason, Usage } from '../core/session.js';
import { classifyError, type ErrorClass } from '../core/triggers.js';
import { type FormatModel, isObject, type KnownToolCall, type Loose, Warnings } from './common.js';
import { formatOf } from './index.js';

/** The formats whose SDK responses `fromResponse` reads. */
export type ResponseFormat = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini';

/**
 * An OpenAI Chat Completions `ChatCompletion` (openai-node `client.chat.completions.create()`,
 * or `stream.finalChatCompletion()`): the members `fromResponse` reads.
 */
export interface OpenAIChatCompletionLike {
  choices: ReadonlyArray<{ message: object; finish_reason?: string | null }>;
  model?: string;
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    total_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number | null } | null;
  } | null;
}

/** An OpenAI Responses `Response` (`client.responses.create()`, or `stream.finalResponse()`). */
export interface OpenAIResponseLike {
  output: readonly object[];
  status?: string | null;
  incomplete_details?: { reason?: string | null } | null;
  error?: { code?: string | null; message?: string | null } | null;
  model?: string;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    total_tokens?: number;
    input_tokens_details?: { cached_tokens?: number | null } | null;
  } | null;
}

/** An Anthropic Messages `Message` (`client.messages.create()`, or `stream.finalMessage()`). */
export interface AnthropicMessageLike {
  role: 'assistant';
  content: readonly object[];
  stop_reason?: string | null;
  model?: string;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
  } | null;
}

/** A Gemini `GenerateContentResponse` (@google/genai `ai.models.generateContent()`). */
export interface GeminiResponseLike {
  candidates?: ReadonlyArray<{ content?: object; finishReason?: string; finishMessage?: string }>;
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
  modelVersion?: string;
  usageMetadata?: {
    promptTokenCount?: number;
    candidatesTokenCount?: number;
    thoughtsTokenCount?: number;
    cachedContentTokenCount?: number;
    totalTokenCount?: number;
  };
}

/** The SDK response each format's `fromResponse` reads. */
export interface SdkResponses {
  'openai-chat': OpenAIChatCompletionLike;
  'openai-responses': OpenAIResponseLike;
  anthropic: AnthropicMessageLike;
  /**
   * A `GenerateContentResponse`, or the chunks of `generateContentStream()` in the order they
   * came (the SDK does not accumulate them): their parts joined, adjacent texts as one.
   */
  gemini: GeminiResponseLike | readonly GeminiResponseLike[];
}

export interface FromResponseOptions<F extends ResponseFormat = ResponseFormat> {
  /** The SDK the response comes from. */
  format: F;
  /**
   * The model the request went to, e.g. the Maintainer's model (`{ provider, id, api? }`):
   * the reply is that model's, so its overflow and length stops are recovered and its
   * signatures go back to it. Without it the reply names no provider or model (the Maintainer
   * takes it as its own model's).
   */
  model?: FormatModel;
  /**
   * The session the reply goes to. Gemini may give its calls no id: the reply's calls then get
   * the ids reading the session's history would give them (`gemini_<k>_<name>`, the next `k` of
   * the name), so a `functionResponse` without an id appended in the `gemini` format answers
   * its call. Without it such a call gets an id of its own response
   * (`gemini_<responseId>_<k>_<name>`), unique too. Other formats' calls carry their ids.
   */
  session?: Pick<SessionCore, 'buildContext'>;
}

export interface FromErrorOptions {
  /** The SDK the error comes from (sets the reply's `api`); any format's error is read without it. */
  format?: ResponseFormat;
  /** The model the request went to (see `FromResponseOptions.model`). */
  model?: FormatModel;
}

/** What each format's envelope must hold, for the error of a value that is no such response. */
const ENVELOPES: Record<ResponseFormat, string> = {
  'openai-chat': 'an OpenAI Chat Completions `ChatCompletion` (`choices`)',
  'openai-responses': 'an OpenAI Responses `Response` (`output`)',
  anthropic: 'an Anthropic Messages `Message` (`role` "assistant", `content`)',
  gemini: 'a Gemini `GenerateContentResponse` (`candidates`)',
};

const HINT =
  'fromResponse() reads a ChatCompletion (format "openai-chat"), a Responses Response ("openai-responses"), ' +
  'an Anthropic Message ("anthropic") or a Gemini GenerateContentResponse ("gemini")';

/** The `api` of a reply of each format (the readers' defaults). */
const APIS: Record<ResponseFormat, string> = {
  'openai-chat': 'openai-completions',
  'openai-responses': 'openai-responses',
  anthropic: 'anthropic-messages',
  gemini: 'google-generative-ai',
};

/** E_INVALID_MESSAGE for a value that is not the format's response, with the hint. */
function notAResponse(format: ResponseFormat, detail: string): Error {
  return codedError('E_INVALID_MESSAGE', `fromResponse(): ${detail}: expected ${ENVELOPES[format]}. ${HINT}`);
}

function formatOption(value: unknown, fn: string, required: boolean): ResponseFormat | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value === 'string' && Object.hasOwn(APIS, value)) return value as ResponseFormat;
  throw invalidArgument(
    `${fn}: format must be one of ${Object.keys(APIS)
      .map((k) => `'${k}'`)
      .join(', ')}, got ${JSON.stringify(value)}`,
  );
}

function modelOption(value: unknown, fn: string): FormatModel | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value.provider !== 'string') {
    throw invalidArgument(`${fn}: model must be an object with a string \`provider\``);
  }
  if (value.id !== undefined && typeof value.id !== 'string') throw invalidArgument(`${fn}: model.id must be a string`);
  if (value.api !== undefined && typeof value.api !== 'string')
    throw invalidArgument(`${fn}: model.api must be a string`);
  return value as unknown as FormatModel;
}

/** A token count the response reported (a finite number ≥ 0, at most 2^53 - 1), else 0. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? Math.min(Math.floor(value), Number.MAX_SAFE_INTEGER)
    : 0;
}

/** pi's usage: prompt tokens apart from the cached ones, as the providers report them. */
function usageOf(prompt: number, cached: number, cacheWrite: number, output: number, total: unknown): Usage {
  const cacheRead = Math.min(cached, prompt);
  const input = prompt - cacheRead;
  // A count the session takes: no sum past 2^53 - 1.
  const sum = Math.min(input + cacheRead + cacheWrite + output, Number.MAX_SAFE_INTEGER);
  return { input, output, cacheRead, cacheWrite, totalTokens: count(total) || sum };
}

/** What the envelope says besides the message: how it stopped, why, and the usage. */
interface Envelope {
  /** The reply's message (or output items) in the format's history form; none: no content. */
  items: unknown[] | undefined;
  /** The stop reason; `undefined` keeps the reader's (`toolUse` with tool calls, else `stop`). */
  stopReason: StopReason | undefined;
  errorMessage?: string;
  usage: Usage | undefined;
}

function chatEnvelope(r: Loose): Envelope {
  const choice: unknown = Array.isArray(r.choices) ? r.choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice.message)) {
    throw notAResponse('openai-chat', Array.isArray(r.choices) ? 'no `choices[0].message`' : 'no `choices`');
  }
  // `annotations` (URL citations) is a member of the response only, `parsed` (and a call's
  // `parsed_arguments`) what openai-node's stream and parse helpers add: a request refuses them.
  const { annotations: _response, parsed: _parsed, ...message } = choice.message;
  message.role = 'assistant';
  if (Array.isArray(message.tool_calls)) {
    message.tool_calls = message.tool_calls.map((c: unknown) => {
      if (!isObject(c) || !isObject(c.function) || !Object.hasOwn(c.function, 'parsed_arguments')) return c;
      const { parsed_arguments: _args, ...fn } = c.function;
      return { ...c, function: fn };
    });
  }
  const env: Envelope = { items: [message], stopReason: undefined, usage: undefined };
  switch (choice.finish_reason) {
    case 'length':
      env.stopReason = 'length';
      break;
    case 'tool_calls':
    case 'function_call':
      env.stopReason = 'toolUse';
      break;
    case 'content_filter':
      env.stopReason = 'error';
      env.errorMessage = 'finish_reason: content_filter (the provider filtered the output)';
      break;
  }
  const u = r.usage;
  if (isObject(u)) {
    const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
    env.usage = usageOf(
      count(u.prompt_tokens),
      count(details.cached_tokens),
      0,
      count(u.completion_tokens),
      u.total_tokens,
    );
  }
  return env;
}

/**
 * A Responses output item without what openai-node's parse and stream helpers add (`parsed`
 * on an `output_text` part, `parsed_arguments` on a call): members of no request.
 */
function sdkFree(item: unknown): unknown {
  if (!isObject(item)) return item;
  if (item.type === 'function_call' && Object.hasOwn(item, 'parsed_arguments')) {
    const { parsed_arguments: _args, ...rest } = item;
    return rest;
  }
  if (item.type !== 'message' || !Array.isArray(item.content)) return item;
  if (!item.content.some((p: unknown) => isObject(p) && Object.hasOwn(p, 'parsed'))) return item;
  const content = item.content.map((p: unknown) => {
    if (!isObject(p) || !Object.hasOwn(p, 'parsed')) return p;
    const { parsed: _parsed, ...rest } = p;
    return rest;
  });
  return { ...item, content };
}

function responsesEnvelope(r: Loose): Envelope {
  if (!Array.isArray(r.output)) throw notAResponse('openai-responses', 'no `output` array');
  const env: Envelope = { items: r.output.map(sdkFree), stopReason: undefined, usage: undefined };
  const reason = isObject(r.incomplete_details) ? r.incomplete_details.reason : undefined;
  switch (r.status) {
    case 'incomplete':
      if (reason === 'content_filter') {
        env.stopReason = 'error';
        env.errorMessage = 'incomplete: content_filter (the provider filtered the output)';
      } else env.stopReason = 'length';
      break;
    case 'failed':
    case 'cancelled': {
      const error = isObject(r.error) ? r.error : {};
      env.stopReason = 'error';
      env.errorMessage =
        typeof error.message === 'string' && error.message !== '' ? error.message : `response ${r.status}`;
      break;
    }
  }
  const u = r.usage;
  if (isObject(u)) {
    const details = isObject(u.input_tokens_details) ? u.input_tokens_details : {};
    env.usage = usageOf(count(u.input_tokens), count(details.cached_tokens), 0, count(u.output_tokens), u.total_tokens);
  }
  return env;
}

function anthropicEnvelope(r: Loose): Envelope {
  if (r.role !== 'assistant' || !Array.isArray(r.content)) {
    throw notAResponse('anthropic', r.role !== 'assistant' ? 'no `role` "assistant"' : 'no `content` array');
  }
  const message = { role: 'assistant', content: r.content };
  const env: Envelope = { items: [message], stopReason: undefined, usage: undefined };
  switch (r.stop_reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      env.stopReason = 'length';
      break;
    case 'tool_use':
      env.stopReason = 'toolUse';
      break;
    case 'refusal':
      env.stopReason = 'error';
      env.errorMessage = 'stop_reason: refusal (the model declined to answer)';
      break;
    // end_turn, stop_sequence and pause_turn (send the turn again to let it go on) are stops.
  }
  const u = r.usage;
  if (isObject(u)) {
    // Anthropic reports the cache reads and writes apart from `input_tokens`.
    const cacheRead = count(u.cache_read_input_tokens);
    const input = count(u.input_tokens);
    const prompt = Math.min(input + cacheRead, Number.MAX_SAFE_INTEGER);
    env.usage = usageOf(prompt, cacheRead, count(u.cache_creation_input_tokens), count(u.output_tokens), 0);
  }
  return env;
}

function geminiEnvelope(r: Loose): Envelope {
  const candidates = r.candidates;
  const feedback = isObject(r.promptFeedback) ? r.promptFeedback : undefined;
  if (!Array.isArray(candidates) && feedback === undefined) throw notAResponse('gemini', 'no `candidates`');
  const candidate: unknown = Array.isArray(candidates) ? candidates[0] : undefined;
  const env: Envelope = { items: undefined, stopReason: undefined, usage: undefined };
  if (isObject(candidate)) {
    const content = candidate.content;
    if (isObject(content) && Array.isArray(content.parts)) env.items = [{ ...content, role: 'model' }];
    const finish = candidate.finishReason;
    if (finish === 'MAX_TOKENS') env.stopReason = 'length';
    else if (typeof finish === 'string' && finish !== 'STOP') {
      // SAFETY, RECITATION, MALFORMED_FUNCTION_CALL, …: the output was withheld or unusable.
      env.stopReason = 'error';
      const detail = typeof candidate.finishMessage === 'string' ? `: ${candidate.finishMessage}` : '';
      env.errorMessage = `finishReason: ${finish}${detail}`;
    }
  } else {
    // No candidate: the prompt itself was blocked.
    const reason = feedback?.blockReason;
    const detail = typeof feedback?.blockReasonMessage === 'string' ? `: ${feedback.blockReasonMessage}` : '';
    env.stopReason = 'error';
    env.errorMessage = `the prompt was blocked (blockReason: ${typeof reason === 'string' ? reason : 'unknown'})${detail}`;
  }
  const u = r.usageMetadata;
  if (isObject(u)) {
    const output = Math.min(count(u.candidatesTokenCount) + count(u.thoughtsTokenCount), Number.MAX_SAFE_INTEGER);
    env.usage = usageOf(count(u.promptTokenCount), count(u.cachedContentTokenCount), 0, output, u.totalTokenCount);
  }
  return env;
}

const ENVELOPE_READERS: Record<ResponseFormat, (r: Loose) => Envelope> = {
  'openai-chat': chatEnvelope,
  'openai-responses': responsesEnvelope,
  anthropic: anthropicEnvelope,
  gemini: geminiEnvelope,
};

/** The reply's provider, model and api: the given model's, else the format's api alone. */
function identify(message: Loose, format: ResponseFormat, model: FormatModel | undefined): void {
  delete message.provider;
  delete message.model;
  message.api = model?.api ?? APIS[format];
  if (model === undefined) return;
  message.provider = model.provider;
  if (model.id !== undefined) message.model = model.id;
}

/**
 * An SDK's response (an OpenAI `ChatCompletion` or Responses `Response`, an Anthropic
 * `Message`, a Gemini `GenerateContentResponse`; a stream's accumulated result is the same
 * object) as the assistant message `Maintainer.afterResponse()` takes: its content read by
 * the format's reader, its stop reason (`stop`, `length`, `toolUse`, `error`) and its usage
 * (cached prompt tokens as `cacheRead`); for `openai-responses`, the server compaction the
 * response carried as `serverCompaction` (see `ResponseMessage`). Throws `E_INVALID_MESSAGE` for a value that is not
 * such a response, or whose message the format's reader refuses; `E_INVALID_ARGUMENT` for
 * bad options.
 */
export function fromResponse<F extends ResponseFormat>(
  response: SdkResponses[F],
  options: FromResponseOptions<F>,
): ResponseMessage {
  if (!isObject(options)) throw invalidArgument('fromResponse(response, { format }) needs the options');
  const format = formatOption(options.format, 'fromResponse()', true) as ResponseFormat;
  const model = modelOption(options.model, 'fromResponse()');
  const session = sessionOption(options.session);
  let given: unknown = response;
  if (format === 'gemini' && Array.isArray(given)) given = joinedChunks(given);
  if (!isObject(given)) throw notAResponse(format, `got ${given === null ? 'null' : typeof given}`);
  const env = ENVELOPE_READERS[format](given);
  // A server compaction inside the request (spec: compaction §13): its `compaction` and
  // `configuration_update` output items are no part of the reply's message; they go, in their
  // order, as `serverCompaction`, which `Maintainer.afterResponse` hands to the core.
  let server: JsonObject[] = [];
  if (format === 'openai-responses' && env.items !== undefined) {
    const isServer = (i: unknown): i is JsonObject =>
      isObject(i) && (i.type === 'compaction' || i.type === 'configuration_update');
    server = env.items.filter(isServer);
    if (server.length > 0) env.items = env.items.filter((i) => !isServer(i));
  }
  let message: Loose = { role: 'assistant', content: [] };
  if (env.items !== undefined && env.items.length > 0) {
    // The reader of the format's histories reads the reply's message (or output items). The
    // calls it knows are the session's (Gemini's id-less calls are numbered after them), else
    // every `gemini_<k>_…` of an id-less call is taken up to this response's own number.
    const none = (): undefined => undefined;
    const known = session !== undefined ? sessionCalls(session) : undefined;
    const own = format === 'gemini' && known === undefined ? ownIdPrefix(given) : undefined;
    const read = formatOf(format).read(env.items, {
      model,
      warnings: new Warnings(),
      history: true,
      toolCall: known !== undefined ? (id) => known.get(id) : none,
      toolCallOfCallId: none,
    });
    if (own !== undefined) renameIdless(read.messages, own);
    const replies = read.messages.filter((m) => isObject(m) && m.role === 'assistant');
    if (read.messages.length !== replies.length || replies.length > 1) {
      throw notAResponse(format, 'its output reads as more than one assistant message');
    }
    if (replies.length === 1) message = replies[0] as Loose;
  }
  identify(message, format, model);
  if (server.some((i) => isObject(i) && i.type === 'compaction')) message.serverCompaction = server;
  const calls = Array.isArray(message.content) && message.content.some((b) => isObject(b) && b.type === 'toolCall');
  message.stopReason = env.stopReason ?? (calls ? 'toolUse' : 'stop');
  if (env.errorMessage !== undefined) message.errorMessage = env.errorMessage;
  // A response without usage (a stream asked without it) reports none, rather than zeros.
  if (env.usage !== undefined) message.usage = env.usage;
  else delete message.usage;
  return message as unknown as ResponseMessage;
}

function sessionOption(value: unknown): Pick<SessionCore, 'buildContext'> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value.buildContext !== 'function') {
    throw invalidArgument('fromResponse(): session must be the Session the reply goes to');
  }
  return value as unknown as Pick<SessionCore, 'buildContext'>;
}

/** The tool calls of the session's leaf path by id (those without a result too). */
function sessionCalls(session: Pick<SessionCore, 'buildContext'>): Map<string, KnownToolCall> {
  const calls = new Map<string, KnownToolCall>();
  const messages: readonly unknown[] = session.buildContext({ transcript: true, keepDanglingToolCalls: true }).messages;
  for (const m of messages) {
    if (!isObject(m) || m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (isObject(b) && b.type === 'toolCall' && typeof b.id === 'string') {
        calls.set(b.id, { id: b.id, name: b.name, arguments: b.arguments } as KnownToolCall);
      }
    }
  }
  return calls;
}

/**
 * The id prefix of this response's id-less Gemini calls when no session is given:
 * `gemini_<responseId>` (the response's own id, kept to `[A-Za-z0-9_-]`), else a random one.
 */
function ownIdPrefix(response: Loose): string {
  const rid = typeof response.responseId === 'string' ? response.responseId.replace(/[^A-Za-z0-9-]/g, '') : '';
  if (rid !== '') return `gemini_${rid.slice(0, 32)}`;
  const bytes = new Uint8Array(6);
  globalThis.crypto.getRandomValues(bytes);
  return `gemini_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The reader's ids of id-less calls (`gemini_<k>_<name>`) made this response's own (`<prefix>_<k>_<name>`). */
function renameIdless(messages: readonly object[], prefix: string): void {
  for (const m of messages) {
    const content = (m as Loose).content;
    if (!Array.isArray(content)) continue;
    for (const b of content) {
      if (!isObject(b) || b.type !== 'toolCall' || typeof b.id !== 'string') continue;
      const x = b.ctxfold;
      if (isObject(x) && x.noId === true && b.id.startsWith('gemini_')) b.id = `${prefix}_${b.id.slice(7)}`;
    }
  }
}

/**
 * The chunks of a Gemini stream as one response: the first candidate's parts in order, adjacent
 * texts of one kind (thought or not) joined with the last signature given, the last finish
 * reason, usage and prompt feedback, the first response id.
 */
function joinedChunks(chunks: readonly unknown[]): Loose {
  if (chunks.length === 0) throw notAResponse('gemini', 'an empty list of stream chunks');
  const parts: Loose[] = [];
  const out: Loose = {};
  const candidate: Loose = {};
  let role: unknown;
  chunks.forEach((chunk, k) => {
    if (!isObject(chunk))
      throw notAResponse('gemini', `stream chunk ${k} is ${chunk === null ? 'null' : typeof chunk}`);
    for (const key of ['responseId', 'modelVersion'])
      if (out[key] === undefined && chunk[key] !== undefined) out[key] = chunk[key];
    if (chunk.usageMetadata !== undefined) out.usageMetadata = chunk.usageMetadata;
    if (chunk.promptFeedback !== undefined) out.promptFeedback = chunk.promptFeedback;
    const first: unknown = Array.isArray(chunk.candidates) ? chunk.candidates[0] : undefined;
    if (!isObject(first)) return;
    for (const key of ['finishReason', 'finishMessage']) if (first[key] !== undefined) candidate[key] = first[key];
    const content = first.content;
    if (!isObject(content)) return;
    if (content.role !== undefined) role = content.role;
    if (!Array.isArray(content.parts)) return;
    for (const p of content.parts) {
      const last = parts.at(-1);
      if (isObject(p) && isObject(last) && joinable(last, p)) {
        last.text = `${last.text}${p.text}`;
        if (typeof p.thoughtSignature === 'string') last.thoughtSignature = p.thoughtSignature;
      } else parts.push(isObject(p) ? { ...p } : (p as Loose));
    }
  });
  if (role !== undefined || parts.length > 0) candidate.content = { role: role ?? 'model', parts };
  if (Object.keys(candidate).length > 0 || out.promptFeedback === undefined) out.candidates = [candidate];
  return out;
}

/** Two text parts a stream split: both text only (a signature may close either), of one kind. */
function joinable(a: Loose, b: Loose): boolean {
  const plain = (p: Loose) =>
    typeof p.text === 'string' &&
    Object.keys(p).every((k) => k === 'text' || k === 'thought' || k === 'thoughtSignature');
  return plain(a) && plain(b) && (a.thought === true) === (b.thought === true) && a.thoughtSignature === undefined;
}

/** A member of a thrown value (undefined for a primitive). */
function memberOf(value: unknown, key: string): unknown {
  return value !== null && (typeof value === 'object' || typeof value === 'function')
    ? (value as Loose)[key]
    : undefined;
}

/** The provider's own error text in a body: its `error.message`, its `message`, or the body as text. */
function bodyText(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() === '' ? undefined : body;
  if (!isObject(body) || typeof body.getReader === 'function') return undefined;
  const inner = body.error;
  const text = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';
  if (isObject(inner) && text(inner.message)) return inner.message;
  if (text(inner)) return inner;
  if (text(body.message)) return body.message;
  return JSON.stringify(body);
}

/**
 * An SDK's thrown API error (openai `APIError` `{ status, error, message }`, anthropic
 * `APIError` `{ status, error }`, Gemini `ApiError` `{ status, message }`), or a fetch
 * response read as `{ status, body }`, as the failed reply `Maintainer.afterResponse()` takes:
 * no content, `stopReason: 'error'` (`'aborted'` for an aborted request) and `errorMessage`
 * the provider's text, so the core tells a context overflow from other failures
 * (`isContextOverflow`, spec: compaction §8.2). The reply also carries the core's class of the
 * error (`errorClass`, see `classifyError`: read from the status, the whole body and a
 * `retry-after` header), a property that is not enumerable, so it is never written to the
 * session. Throws `E_INVALID_ARGUMENT` for a value that is not an object.
 */
export function fromError(error: unknown, options?: FromErrorOptions): FailedReply {
  if (options !== undefined && !isObject(options)) throw invalidArgument('fromError(): options must be an object');
  const format = formatOption(options?.format, 'fromError()', false);
  const model = modelOption(options?.model, 'fromError()');
  if (error === null || (typeof error !== 'object' && typeof error !== 'function')) {
    throw invalidArgument(
      `fromError() takes the thrown error (an object), got ${error === null ? 'null' : typeof error}`,
    );
  }
  const status = memberOf(error, 'status');
  const code = typeof status === 'number' && Number.isFinite(status) ? status : undefined;
  const own = memberOf(error, 'message');
  // openai keeps the body's `error` member in `error`, anthropic the whole body; a fetch
  // response read by the host has `body`.
  const provider = bodyText(memberOf(error, 'error')) ?? bodyText(memberOf(error, 'body'));
  let text: string | undefined;
  if (typeof own === 'string' && own !== '') {
    text = provider === undefined || own.includes(provider) ? own : `${own}: ${provider}`;
  } else if (provider !== undefined) text = code === undefined ? provider : `${code} ${provider}`;
  else if (code !== undefined) {
    const statusText = memberOf(error, 'statusText');
    // The wording of an SDK's error without a body, which the core knows (spec §8.2).
    text = `${code} status code (no body)${typeof statusText === 'string' && statusText !== '' ? ` ${statusText}` : ''}`;
  }
  const name = memberOf(error, 'name');
  // Nothing else: the error's name (never an empty text, which would read as no failure).
  if (text === undefined) text = typeof name === 'string' && name !== '' ? name : 'Error';
  const aborted = name === 'AbortError' || name === 'APIUserAbortError';
  const message: Loose = { role: 'assistant', content: [] };
  const api = model?.api ?? (format === undefined ? undefined : APIS[format]);
  if (api !== undefined) message.api = api;
  if (model !== undefined) message.provider = model.provider;
  if (model?.id !== undefined) message.model = model.id;
  message.usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
  message.stopReason = aborted ? 'aborted' : 'error';
  message.errorMessage = text;
  const raw = memberOf(error, 'error') ?? memberOf(error, 'body');
  const errorClass = classifyError({
    message: text,
    // The whole body too: its codes (`rate_limit_exceeded`, `request_too_large`) are evidence.
    body: isObject(raw) && typeof raw.getReader !== 'function' ? raw : undefined,
    ...(code === undefined || !Number.isInteger(code) || code < 100 || code > 599 ? {} : { status: code }),
    ...retryAfterOf(memberOf(error, 'headers')),
    stopReason: aborted ? 'aborted' : 'error',
  });
  Object.defineProperty(message, 'errorClass', { value: errorClass, enumerable: false });
  return message as unknown as FailedReply;
}

/** The failed reply `fromError` makes: an assistant message and the class of its error. */
export type FailedReply = AssistantMessage & {
  /** The core's class of the error (not enumerable: never persisted). */
  readonly errorClass: ErrorClass;
};

/** A `retry-after` header of an SDK error's headers (a `Headers` or a plain record). */
function retryAfterOf(headers: unknown): { retryAfter?: string } {
  let v: unknown;
  const get = memberOf(headers, 'get');
  if (typeof get === 'function') v = (get as (name: string) => unknown).call(headers, 'retry-after');
  else v = memberOf(headers, 'retry-after');
  return typeof v === 'string' && v !== '' ? { retryAfter: v } : {};
}
