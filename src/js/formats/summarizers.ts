// Ready summarizers built from a provider SDK's client and a model name (issue 41): the
// `summarize` callback `compact()`, `navigateTree()` and the Maintainer take. The request (the
// core's system prompt and prompt, spec: compaction §5.3) is written with the format's own
// writer, sent with the SDK's call (non-streamed, with the AbortSignal of the compaction), and
// the SDK's answer read by `fromResponse`: its text is the summary. A failed call throws what
// the SDK threw (its `APIError` carries the HTTP `status`, which the core's retry decision reads,
// spec: compaction §8.3); an answer the provider refused (`stopReason: 'error'`) throws its text.
//
// The clients are typed by the members called (no SDK is imported): openai-node's `OpenAI`,
// @anthropic-ai/sdk's `Anthropic` and @google/genai's `GoogleGenAI` fit, as does any object with
// those members. Set the client's own retries off (`maxRetries: 0`) to leave retries to ctxfold.
import { invalidArgument } from '../core/errors.js';
import type { AssistantMessage, LlmMessage, RuntimeAbortSignal, Summarize, SummaryRequest } from '../core/session.js';
import { isObject, Warnings } from './common.js';
import { formatOf } from './index.js';
import { fromResponse, type ResponseFormat } from './responses.js';

/** The request options each SDK call takes second (openai, anthropic): the abort signal. */
export interface SdkRequestOptions {
  signal?: RuntimeAbortSignal;
}

/**
 * An openai-node client (`new OpenAI(…)`): the calls the OpenAI summarizer makes, with the
 * request body it builds (`{ model, messages, max_completion_tokens }` for Chat Completions,
 * `{ model, input, instructions, max_output_tokens, store: false }` for Responses) and the
 * request options `{ signal }`.
 */
export interface OpenAIClientLike {
  chat: { completions: { create(body: object, options?: SdkRequestOptions): PromiseLike<object> } };
  responses?: { create(body: object, options?: SdkRequestOptions): PromiseLike<object> };
}

/**
 * An @anthropic-ai/sdk client (`new Anthropic(…)`): the call the Anthropic summarizer makes
 * (`{ model, max_tokens, system, messages }`, request options `{ signal }`).
 */
export interface AnthropicClientLike {
  messages: { create(body: object, options?: SdkRequestOptions): PromiseLike<object> };
}

/**
 * An @google/genai client (`new GoogleGenAI(…)`): the call the Gemini summarizer makes
 * (`{ model, contents, config: { systemInstruction, maxOutputTokens, abortSignal } }`).
 */
export interface GeminiClientLike {
  models: { generateContent(params: object): PromiseLike<object> };
}

export interface OpenAISummarizerOptions extends SdkSummarizerOptions {
  /** Chat Completions (`client.chat.completions.create`, default) or Responses (`client.responses.create`). */
  api?: 'chat' | 'responses';
}

export interface SdkSummarizerOptions {
  /** The model that writes the summaries. */
  model: string;
  /**
   * The model reasons: the request's `reasoningEffort` hint (spec: compaction §5.6) is sent as
   * the provider's parameter (OpenAI `reasoning_effort` / Responses `reasoning.effort`,
   * Anthropic `thinking` with a budget, Gemini `thinkingConfig`). Default `false`: a model
   * that does not reason is sent none (providers refuse the parameter).
   */
  reasoning?: boolean;
}

/** Thinking budgets per effort (Anthropic `budget_tokens`, Gemini `thinkingBudget`); the summary's `maxTokens` is added on top so thinking does not eat it. */
const THINKING_BUDGETS: Record<string, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
  max: 32768,
};

/** The request's effort hint when the options say the model reasons. */
function effortOf(options: SdkSummarizerOptions, request: SummaryRequest): string | undefined {
  return options.reasoning === true ? request.reasoningEffort : undefined;
}

/** The thinking budget of the request's effort hint, when the options say the model reasons. */
function thinkingBudget(options: SdkSummarizerOptions, request: SummaryRequest): number | undefined {
  const effort = effortOf(options, request);
  return effort === undefined ? undefined : THINKING_BUDGETS[effort];
}

/** The options' model name, or E_INVALID_ARGUMENT. */
function modelName(options: unknown, fn: string): string {
  const model = isObject(options) ? options.model : undefined;
  if (typeof model !== 'string' || model === '') {
    throw invalidArgument(`${fn}(client, { model }): model must be the summarizer model's name (a string)`);
  }
  return model;
}

/** The client, or E_INVALID_ARGUMENT naming the member `fn` calls. */
function clientWith(client: unknown, path: readonly string[], fn: string): void {
  let at: unknown = client;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  if (typeof at !== 'function') {
    throw invalidArgument(`${fn}(client, …): the client has no \`${path.join('.')}()\` (pass the SDK's client)`);
  }
}

/** The request as the format's messages (and system prompt where the format keeps it apart). */
function written(
  format: ResponseFormat,
  request: SummaryRequest,
  withSystem = true,
): { messages: object[]; system: unknown } {
  const user: LlmMessage = {
    role: 'user',
    content: [{ type: 'text', text: request.prompt }],
    attribution: 'agent',
    timestamp: 0,
  };
  const text = request.systemPrompt;
  const system = withSystem ? { text, value: text, format } : undefined;
  const out = formatOf(format).write([user], { warnings: new Warnings(), system });
  return { messages: out.messages as object[], system: out.system };
}

/** The summary in the SDK's answer: its text blocks; a refused or failed answer throws. */
function summaryOf(response: object, format: ResponseFormat): string {
  const reply: AssistantMessage = fromResponse(response as never, { format });
  if (reply.stopReason === 'error' || reply.stopReason === 'aborted') {
    throw new Error(`the summarizer model's answer failed: ${reply.errorMessage ?? reply.stopReason}`);
  }
  return reply.content
    .map((b) => (b.type === 'text' ? b.text : ''))
    .join('')
    .trim();
}

/**
 * A summarizer that asks an OpenAI model through an openai-node client: Chat Completions
 * (`api: 'chat'`, default; the system prompt is the first message) or Responses
 * (`api: 'responses'`; the system prompt as `instructions`, `store: false`).
 */
export function openAISummarizer(client: OpenAIClientLike, options: OpenAISummarizerOptions): Summarize {
  const model = modelName(options, 'openAISummarizer');
  const api = options.api ?? 'chat';
  if (api !== 'chat' && api !== 'responses') {
    throw invalidArgument(`openAISummarizer(): api must be 'chat' or 'responses', got ${JSON.stringify(api)}`);
  }
  if (api === 'chat') {
    clientWith(client, ['chat', 'completions', 'create'], 'openAISummarizer');
    return async (request, { signal }) => {
      const { messages } = written('openai-chat', request);
      const body: { model: string; messages: object[]; max_completion_tokens: number; reasoning_effort?: string } = {
        model,
        messages,
        max_completion_tokens: request.maxTokens,
      };
      const effort = effortOf(options, request);
      if (effort !== undefined) body.reasoning_effort = effort;
      return summaryOf(await client.chat.completions.create(body, { signal }), 'openai-chat');
    };
  }
  clientWith(client, ['responses', 'create'], 'openAISummarizer');
  const responses = client.responses as NonNullable<OpenAIClientLike['responses']>;
  return async (request, { signal }) => {
    // The system prompt goes as `instructions` (the writer would put it first among the items).
    const { messages: input } = written('openai-responses', request, false);
    const body: {
      model: string;
      input: object[];
      instructions: string;
      max_output_tokens: number;
      store: boolean;
      reasoning?: { effort: string };
    } = {
      model,
      input,
      instructions: request.systemPrompt,
      max_output_tokens: request.maxTokens,
      store: false,
    };
    const effort = effortOf(options, request);
    if (effort !== undefined) body.reasoning = { effort };
    return summaryOf(await responses.create(body, { signal }), 'openai-responses');
  };
}

/** A summarizer that asks a Claude model through an @anthropic-ai/sdk client (`client.messages.create`). */
export function anthropicSummarizer(client: AnthropicClientLike, options: SdkSummarizerOptions): Summarize {
  const model = modelName(options, 'anthropicSummarizer');
  clientWith(client, ['messages', 'create'], 'anthropicSummarizer');
  return async (request, { signal }) => {
    const { messages, system } = written('anthropic', request);
    const body: {
      model: string;
      max_tokens: number;
      system?: string;
      messages: object[];
      thinking?: { type: 'enabled'; budget_tokens: number };
    } = {
      model,
      max_tokens: request.maxTokens,
      messages,
    };
    if (typeof system === 'string') body.system = system;
    const budget = thinkingBudget(options, request);
    if (budget !== undefined) {
      body.thinking = { type: 'enabled', budget_tokens: budget };
      body.max_tokens += budget;
    }
    return summaryOf(await client.messages.create(body, { signal }), 'anthropic');
  };
}

/** A summarizer that asks a Gemini model through an @google/genai client (`client.models.generateContent`). */
export function geminiSummarizer(client: GeminiClientLike, options: SdkSummarizerOptions): Summarize {
  const model = modelName(options, 'geminiSummarizer');
  clientWith(client, ['models', 'generateContent'], 'geminiSummarizer');
  return async (request, { signal }) => {
    const { messages, system } = written('gemini', request);
    const config: {
      systemInstruction?: object;
      maxOutputTokens: number;
      abortSignal: RuntimeAbortSignal;
      thinkingConfig?: { thinkingBudget: number };
    } = {
      maxOutputTokens: request.maxTokens,
      abortSignal: signal,
    };
    if (isObject(system)) config.systemInstruction = system;
    const budget = thinkingBudget(options, request);
    if (budget !== undefined) {
      config.thinkingConfig = { thinkingBudget: budget };
      config.maxOutputTokens += budget;
    }
    return summaryOf(await client.models.generateContent({ model, contents: messages, config }), 'gemini');
  };
}
