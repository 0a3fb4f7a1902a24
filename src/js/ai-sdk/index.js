// ctxfold for the AI SDK (`ctxfold/ai-sdk`): a language-model middleware for
// `wrapLanguageModel({ model, middleware })` and a `prepareStep` function for
// `generateText` / `streamText` / agents, both keeping the prompt under the model's window
// through a Maintainer. Neither imports the `ai` package: they speak its specification types
// (the provider-level prompt, `doGenerate` / `doStream` results), so any AI SDK version whose
// models implement `specificationVersion: 'v4'` (or 'v3') works.
//
// A conversation is a session that mirrors what the app sends: each call's prompt is compared
// with the messages the session already holds (its first and last), the new ones are appended,
// and the Maintainer's view of the session (pruned, compacted) is what goes to the model. The
// app keeps its whole history; the model gets what fits.
import { invalidArgument, messageOf } from '../core/errors.js';
import { isContextOverflow } from '../core/triggers.js';
import { Warnings } from '../formats/common.js';
import { formatOf } from '../formats/index.js';
import { Maintainer } from '../runner/maintainer.js';
import { Session } from '../runner/session.js';

const FORMAT = 'ai-sdk-model';

/**
 * A summarizer that asks an AI SDK language model (a cheap one): its `doGenerate` with the
 * summary request as system and user message. `options.providerOptions` go with each call.
 */
export function summarizerFromModel(model, options = {}) {
  if (typeof model?.doGenerate !== 'function') {
    throw invalidArgument('summarizerFromModel(model): model must be an AI SDK language model (with doGenerate)');
  }
  return async (request, { signal }) => {
    const result = await model.doGenerate({
      prompt: [
        { role: 'system', content: request.systemPrompt },
        { role: 'user', content: [{ type: 'text', text: request.prompt }] },
      ],
      maxOutputTokens: request.maxTokens,
      abortSignal: signal,
      ...(options.providerOptions && { providerOptions: options.providerOptions }),
    });
    const text = (result.content ?? [])
      .filter((p) => p.type === 'text')
      .map((p) => p.text)
      .join('');
    if (text.trim() === '') throw new Error('the summarizer model returned no text');
    return text;
  };
}

/** The summarize option: a callback, or an AI SDK model (`summarizerFromModel`). */
function summarizerOf(summarize) {
  if (summarize === undefined || typeof summarize === 'function') return summarize;
  if (Array.isArray(summarize)) return summarize.map(summarizerOf);
  return summarizerFromModel(summarize);
}

/** The Maintainer's model for an AI SDK model: `options.model` overrides what the SDK model says. */
function maintainerModel(options, sdkModel) {
  const given = options.model ?? {};
  const contextWindow = given.contextWindow ?? options.contextWindow;
  if (!Number.isFinite(contextWindow) || contextWindow <= 0) {
    throw invalidArgument('ctxfold/ai-sdk: contextWindow (the model window in tokens) must be a positive number');
  }
  return {
    provider: given.provider ?? String(sdkModel?.provider ?? 'unknown').split('.')[0],
    id: given.id ?? String(sdkModel?.modelId ?? 'unknown'),
    contextWindow,
    // The app sent what the model takes; images in its prompt are the model's to refuse.
    input: ['text', 'image'],
    ...given,
  };
}

/** What `JSON.stringify` makes of a prompt message, binary data as base64 (how it is compared). */
function keyOf(message) {
  return JSON.stringify(message, (_, v) => (v instanceof Uint8Array ? toBase64(v) : v instanceof URL ? v.href : v));
}

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// ----- the provider-level prompt ⇄ ModelMessage ---------------------------------------------

/** A prompt file part's data (`{type: 'data' | 'url' | 'text' | 'reference'}`) as ModelMessage data. */
function fileDataIn(data) {
  if (data?.type === 'data') return data.data;
  if (data?.type === 'url') return data.url instanceof URL ? data.url.href : String(data.url);
  if (data?.type === 'text') return `data:text/plain;base64,${toBase64(new TextEncoder().encode(data.text))}`;
  return data;
}

function partIn(p) {
  if (p?.type !== 'file') return p;
  const { data, mediaType, filename, providerOptions } = p;
  const value = fileDataIn(data);
  if (typeof mediaType === 'string' && mediaType.startsWith('image/')) {
    return { type: 'image', image: value, mediaType, ...(providerOptions && { providerOptions }) };
  }
  return {
    type: 'file',
    data: value,
    mediaType,
    ...(filename !== undefined && { filename }),
    ...(providerOptions && { providerOptions }),
  };
}

/** A provider-level prompt message as a ModelMessage (files as image/file parts with plain data). */
export function fromPromptMessage(m) {
  if (!Array.isArray(m?.content)) return m;
  return { ...m, content: m.content.map(partIn) };
}

/** File data in the prompt's tagged form; data already tagged (ai 7 allows it) is kept. */
function fileDataOut(value) {
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

const FILE_DATA_TAGS = new Set(['data', 'url', 'reference', 'text']);

function isTagged(value) {
  return (
    value !== null &&
    typeof value === 'object' &&
    !(value instanceof URL) &&
    !ArrayBuffer.isView(value) &&
    FILE_DATA_TAGS.has(value.type)
  );
}

function partOut(p) {
  if (p?.type === 'image') {
    const { image, mediaType, providerOptions } = p;
    return {
      type: 'file',
      data: fileDataOut(image),
      mediaType: mediaType ?? 'image/png',
      ...(providerOptions && { providerOptions }),
    };
  }
  if (p?.type === 'file') {
    const { data, mediaType, filename, providerOptions } = p;
    return {
      type: 'file',
      data: fileDataOut(data),
      mediaType,
      ...(filename !== undefined && { filename }),
      ...(providerOptions && { providerOptions }),
    };
  }
  return p;
}

/** A ModelMessage as a provider-level prompt message (user content always parts). */
export function toPromptMessage(m) {
  if (m.role === 'system') return m;
  const content = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
  return { ...m, content: content.map(partOut) };
}

// ----- the reply as an AgentMessage ----------------------------------------------------------

const STOP = { stop: 'stop', length: 'length', 'tool-calls': 'toolUse', error: 'error', 'content-filter': 'stop' };

/** A generate result (or the parts a stream gave) as the assistant message the session keeps. */
function replyMessage(content, finishReason, usage, model) {
  const blocks = [];
  for (const p of content) {
    if (p.type === 'text' && p.text !== '') blocks.push({ type: 'text', text: p.text });
    else if (p.type === 'reasoning') blocks.push({ type: 'thinking', thinking: p.text ?? '' });
    else if (p.type === 'tool-call') {
      let args = p.input;
      if (typeof args === 'string') {
        try {
          args = args.trim() === '' ? {} : JSON.parse(args);
        } catch {
          args = { __raw: p.input };
        }
      }
      blocks.push({ type: 'toolCall', id: p.toolCallId, name: p.toolName, arguments: args ?? {} });
    }
  }
  const input = usage?.inputTokens?.total ?? 0;
  const cacheRead = usage?.inputTokens?.cacheRead ?? 0;
  const cacheWrite = usage?.inputTokens?.cacheWrite ?? 0;
  const output = usage?.outputTokens?.total ?? 0;
  const unified = typeof finishReason === 'string' ? finishReason : finishReason?.unified;
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
    stopReason: STOP[unified] ?? 'stop',
  };
}

/** The text of a thrown value or of a stream's `error` part (which may be a plain object). */
function errorText(err) {
  if (err === null || typeof err !== 'object' || typeof err.message === 'string') return messageOf(err);
  try {
    return JSON.stringify(err) ?? messageOf(err);
  } catch {
    return messageOf(err);
  }
}

/** A failed call as the assistant message the Maintainer reads overflow errors from. */
function errorMessage(err, model) {
  return {
    role: 'assistant',
    content: [],
    provider: model.provider,
    model: model.id,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    stopReason: 'error',
    errorMessage: [errorText(err), typeof err?.responseBody === 'string' ? err.responseBody : '']
      .filter(Boolean)
      .join('\n'),
  };
}

// ----- the conversation ----------------------------------------------------------------------

/**
 * A prompt's history messages, their keys made when asked for: a call compares the first and
 * the last message a conversation holds, not the whole history.
 */
class History {
  #messages;
  #keys = new Map();

  constructor(messages) {
    this.#messages = messages;
  }

  get length() {
    return this.#messages.length;
  }

  key(i) {
    let k = this.#keys.get(i);
    if (k === undefined) {
      k = keyOf(this.#messages[i]);
      this.#keys.set(i, k);
    }
    return k;
  }
}

/** A prompt's leading system messages (the system prompt) and the history after them. */
function splitSystem(prompt) {
  let i = 0;
  while (i < prompt.length && prompt[i]?.role === 'system') i++;
  return { system: prompt.slice(0, i), rest: prompt.slice(i) };
}

/**
 * One conversation: a session mirroring the prompts the app sends, and its Maintainer. Calls
 * run one at a time, in order.
 */
class Conversation {
  #options;
  #model;
  #maintainer = null;
  /**
   * The history messages (after the system prompt) the session holds: how many, and the keys of
   * the first and the last (a prompt continues the conversation when it has both in place).
   */
  #seen = { count: 0, first: '', last: '' };
  /** The reply `afterResponse` appended, which the next prompt carries as an assistant message. */
  #replied = false;
  /** The last reply's `afterResponse` (a stream's ends after its reader saw the text). */
  #pending = Promise.resolve();

  constructor(options, model) {
    this.#options = options;
    this.#model = model;
  }

  get session() {
    return this.#maintainer?.session;
  }

  get maintainer() {
    return this.#maintainer;
  }

  /** Whether `history` (a prompt's messages after its system prompt) continues what this conversation holds. */
  continues(history) {
    const n = this.#seen.count;
    if (n === 0) return true;
    if (history.length < n) return false;
    return history.key(0) === this.#seen.first && history.key(n - 1) === this.#seen.last;
  }

  /** Notes the history messages `from` to `to` (exclusive) as held. */
  #hold(history, from, to) {
    if (to <= from) return;
    if (this.#seen.count === 0) this.#seen.first = history.key(0);
    this.#seen.count = to;
    this.#seen.last = history.key(to - 1);
  }

  /** The prompt to send instead of `prompt`: the Maintainer's view of the session, system first. */
  async prompt(prompt, tools) {
    await this.#pending;
    const { system, rest } = splitSystem(prompt);
    const history = new History(rest);
    if (this.#maintainer === null || !this.continues(history)) this.#start();
    let from = this.#seen.count;
    if (this.#replied && from < rest.length && rest[from]?.role === 'assistant') {
      // The reply appended after the last call, as the app sends it back.
      this.#hold(history, from, from + 1);
      from++;
    }
    this.#replied = false;
    if (from < rest.length) {
      this.session.appendMessages(rest.slice(from).map(fromPromptMessage), { format: FORMAT, model: this.#model });
      this.#hold(history, from, rest.length);
    }
    const systemPrompt = system.map((m) => m.content).filter((t) => typeof t === 'string' && t !== '');
    const before = await this.#maintainer.beforeRequest({
      ...(systemPrompt.length > 0 && { systemPrompt: systemPrompt.join('\n\n') }),
      ...(tools?.length && { tools }),
    });
    const written = formatOf(FORMAT).write(before.messages, {
      model: this.#model,
      warnings: new Warnings(),
      system: undefined,
      session: this.session,
      leafId: undefined,
    });
    const sentSystem =
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
  reply(message) {
    const after = this.#pending.then(async () => {
      const result = await this.#maintainer.afterResponse(message);
      this.#replied = message.stopReason !== 'error';
      return result;
    });
    this.#pending = after.catch(() => {});
    return after;
  }

  #start() {
    const session = Session.create({ ...(this.#options.sessionId && { id: this.#options.sessionId }) });
    this.#maintainer?.dispose();
    const { summarize, settings, onEvent, maintainer, tokenCounter } = this.#options;
    this.#maintainer = new Maintainer(session, {
      ...maintainer,
      ...(tokenCounter !== undefined && { tokenCounter }),
      model: this.#model,
      ...(summarize !== undefined && { summarize: summarizerOf(summarize) }),
      ...(settings && { settings }),
      ...(onEvent && { onEvent }),
    });
    this.#seen = { count: 0, first: '', last: '' };
    this.#replied = false;
  }

  dispose() {
    this.#maintainer?.dispose();
  }
}

/** The conversations of one middleware or prepareStep: the last few, matched by their prompts. */
class Conversations {
  #options;
  #list = [];
  #queue = Promise.resolve();

  constructor(options) {
    if (options === null || typeof options !== 'object')
      throw invalidArgument('ctxfold/ai-sdk: options must be an object');
    maintainerModel(options, undefined);
    this.#options = options;
  }

  /** Runs `fn(conversation)` after the calls before it, for the conversation `prompt` continues. */
  run(prompt, sdkModel, fn) {
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
  get list() {
    return [...this.#list];
  }
}

/**
 * After a call failed with `err`: when the core reads it as a context overflow (spec:
 * compaction §8.2), the failed turn goes to the conversation's Maintainer, and if that
 * compacted and says to retry, the prompt to send again. Otherwise undefined.
 */
async function retryPrompt(h, err, model) {
  const failed = errorMessage(err, model);
  if (!isContextOverflow(failed)) return undefined;
  const after = await h.c.reply(failed);
  if (after.next !== 'retry') return undefined;
  const { prompt } = await h.c.prompt(h.original.prompt, h.original.tools);
  return prompt;
}

/** Stream parts that come before any output: a refusal after them is a refusal of the call. */
const PREAMBLE = new Set(['stream-start', 'response-metadata', 'raw']);

/**
 * Reads a stream's parts up to its first output (or its end): `{head, reader, refusal?}`,
 * `head` the parts read, `refusal` the error of an `error` part met before any output. A
 * stream that fails before then rejects, as the call would have.
 */
async function openStream(stream) {
  const reader = stream.getReader();
  const head = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { head, reader };
    head.push(value);
    if (value?.type === 'error') return { head, reader, refusal: value.error };
    if (!PREAMBLE.has(value?.type)) return { head, reader };
  }
}

/** The parts of `head`, then the rest of `reader`, as one stream. */
function rejoin(head, reader) {
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
function tapped(stream, h, model) {
  const content = [];
  const texts = new Map();
  let finish = null;
  const tap = new TransformStream({
    transform(part, controller) {
      if (part.type === 'text-delta' || part.type === 'reasoning-delta') {
        const kind = part.type === 'text-delta' ? 'text' : 'reasoning';
        let block = texts.get(`${kind}:${part.id}`);
        if (block === undefined) {
          block = { type: kind, text: '' };
          texts.set(`${kind}:${part.id}`, block);
          content.push(block);
        }
        block.text += part.delta;
      } else if (part.type === 'tool-call') content.push(part);
      else if (part.type === 'finish') finish = part;
      controller.enqueue(part);
    },
    async flush() {
      if (finish !== null) await h.c.reply(replyMessage(content, finish.finishReason, finish.usage, model));
    },
  });
  return stream.pipeThrough(tap);
}

/**
 * The middleware for `wrapLanguageModel({ model, middleware: ctxfold({...}) })`: each call's
 * prompt goes through the conversation's Maintainer (prune, compaction, recovery); the reply
 * and its usage go back to it. An overflow the provider reports — a call that throws, or a
 * stream whose first part is an `error` — is compacted and retried.
 */
export function ctxfoldMiddleware(options) {
  const conversations = new Conversations(options);
  const maxRetries = options.maxRetries ?? 2;
  const held = new WeakMap();
  const middleware = {
    specificationVersion: 'v4',
    async transformParams({ params, model }) {
      return conversations.run(params.prompt, model, async (c) => {
        const { prompt } = await c.prompt(params.prompt, params.tools);
        const out = { ...params, prompt };
        held.set(out, { c, original: params });
        return out;
      });
    },
    async wrapGenerate({ doGenerate, params, model }) {
      const h = held.get(params);
      if (h === undefined) return doGenerate();
      const m = maintainerModel(options, model);
      let call = doGenerate;
      for (let attempt = 0; ; attempt++) {
        let result;
        try {
          result = await call();
        } catch (err) {
          const prompt = attempt < maxRetries ? await retryPrompt(h, err, m) : undefined;
          if (prompt === undefined) throw err;
          call = () => model.doGenerate({ ...params, prompt });
          continue;
        }
        await h.c.reply(replyMessage(result.content ?? [], result.finishReason, result.usage, m));
        return result;
      }
    },
    async wrapStream({ doStream, params, model }) {
      const h = held.get(params);
      if (h === undefined) return doStream();
      const m = maintainerModel(options, model);
      let call = doStream;
      for (let attempt = 0; ; attempt++) {
        let result;
        let opened;
        try {
          result = await call();
          opened = await openStream(result.stream);
        } catch (err) {
          const prompt = attempt < maxRetries ? await retryPrompt(h, err, m) : undefined;
          if (prompt === undefined) throw err;
          call = () => model.doStream({ ...params, prompt });
          continue;
        }
        if (opened.refusal !== undefined && attempt < maxRetries) {
          const prompt = await retryPrompt(h, opened.refusal, m);
          if (prompt !== undefined) {
            opened.reader.cancel().catch(() => {});
            call = () => model.doStream({ ...params, prompt });
            continue;
          }
        }
        return { ...result, stream: tapped(rejoin(opened.head, opened.reader), h, m) };
      }
    },
  };
  Object.defineProperty(middleware, 'conversations', { get: () => conversations.list });
  return middleware;
}

/**
 * A `prepareStep` for `generateText` / `streamText` / an agent: returns the step's `messages`
 * (ModelMessages) kept under the window. The step results' usage reaches the Maintainer.
 */
export function ctxfoldPrepareStep(options) {
  const conversations = new Conversations(options);
  const fn = async ({ messages, steps, model }) => {
    const prompt = messages;
    return conversations.run(prompt, model, async (c) => {
      const last = steps?.[steps.length - 1];
      if (last !== undefined && c.session !== undefined && c.maintainer !== null) {
        const m = maintainerModel(options, model);
        await c.reply(replyMessage(last.content ?? [], last.finishReason, modelUsage(last.usage), m));
      }
      const { prompt: sent } = await c.prompt(prompt.map(toPromptMessage), undefined);
      return { messages: sent.map(fromPromptMessage) };
    });
  };
  Object.defineProperty(fn, 'conversations', { get: () => conversations.list });
  return fn;
}

/** A step result's usage (`inputTokens` numbers) in the specification's form. */
function modelUsage(usage) {
  if (usage === undefined || typeof usage.inputTokens === 'object') return usage;
  return {
    inputTokens: {
      total: usage.inputTokens,
      cacheRead: usage.inputTokenDetails?.cacheReadTokens ?? usage.cachedInputTokens,
      cacheWrite: usage.inputTokenDetails?.cacheWriteTokens,
    },
    outputTokens: { total: usage.outputTokens },
  };
}
