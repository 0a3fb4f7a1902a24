// Messages of the `openai-chat` format: the `messages` of an OpenAI Chat Completions request, as
// the API reference documents them, with the members OpenAI-compatible servers add (the
// reasoning fields of DeepSeek, Kimi, OpenRouter and llama.cpp; Gemini's `extra_content`). The
// reader also takes the legacy `function` role and `function_call`. Members a message or part
// carries beyond these are kept and written back as they were.

/** OpenAI's explicit prompt-cache breakpoint, on a message or a part. */
export interface OpenAIChatCacheBreakpoint {
  prompt_cache_breakpoint?: { mode: 'explicit' };
}

export interface OpenAIChatTextPart extends OpenAIChatCacheBreakpoint {
  type: 'text';
  text: string;
}
/** An image by URL or as a `data:<mime>;base64,…` URL (pi keeps the latter as a base64 image). */
export interface OpenAIChatImagePart extends OpenAIChatCacheBreakpoint {
  type: 'image_url';
  image_url: string | { url: string; detail?: 'auto' | 'low' | 'high' };
}
export interface OpenAIChatAudioPart extends OpenAIChatCacheBreakpoint {
  type: 'input_audio';
  input_audio: { data: string; format: 'wav' | 'mp3' | (string & {}) };
}
export interface OpenAIChatFilePart extends OpenAIChatCacheBreakpoint {
  type: 'file';
  file: { file_data?: string; file_id?: string; filename?: string };
}
export interface OpenAIChatRefusalPart extends OpenAIChatCacheBreakpoint {
  type: 'refusal';
  refusal: string;
}
export type OpenAIChatUserPart = OpenAIChatTextPart | OpenAIChatImagePart | OpenAIChatAudioPart | OpenAIChatFilePart;

export interface OpenAIChatFunctionToolCall {
  id: string;
  type: 'function';
  /** `arguments` is JSON text, kept as it was when it does not re-stringify the same. */
  function: { name: string; arguments: string };
  /** Gemini's OpenAI compatibility: the call's thought signature, to send back. */
  extra_content?: { google?: { thought_signature: string }; vertex?: { thought_signature: string } };
}
export interface OpenAIChatCustomToolCall {
  id: string;
  type: 'custom';
  custom: { name: string; input: string };
}
export type OpenAIChatToolCall = OpenAIChatFunctionToolCall | OpenAIChatCustomToolCall;

export interface OpenAIChatSystemMessage extends OpenAIChatCacheBreakpoint {
  role: 'system' | 'developer';
  /** The API takes text parts here; the reader takes any user part. */
  content: string | OpenAIChatUserPart[];
  name?: string;
  [member: string]: unknown;
}
export interface OpenAIChatUserMessage extends OpenAIChatCacheBreakpoint {
  role: 'user';
  content: string | OpenAIChatUserPart[];
  name?: string;
  [member: string]: unknown;
}
export interface OpenAIChatAssistantMessage {
  role: 'assistant';
  /** Required unless `tool_calls` or `function_call` is given. */
  content?: string | Array<OpenAIChatTextPart | OpenAIChatRefusalPart> | null;
  /** DeepSeek, Kimi (and other OpenAI-compatible servers): the reasoning to send back. */
  reasoning_content?: string | null;
  /** OpenRouter, some llama.cpp builds. */
  reasoning?: string | null;
  reasoning_text?: string | null;
  refusal?: string | null;
  name?: string;
  /** A previous audio response of the model. */
  audio?: { id: string } | null;
  tool_calls?: OpenAIChatToolCall[] | null;
  /** Deprecated by OpenAI (replaced by `tool_calls`). */
  function_call?: { name: string; arguments: string } | null;
  [member: string]: unknown;
}
export interface OpenAIChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  /** The API takes text parts here; images read here are written back here. */
  content: string | OpenAIChatUserPart[];
  [member: string]: unknown;
}
/** Deprecated by OpenAI: the result of a `function_call`, by the function's name. */
export interface OpenAIChatFunctionMessage {
  role: 'function';
  name: string;
  content: string | null;
  [member: string]: unknown;
}

export type OpenAIChatMessage =
  | OpenAIChatSystemMessage
  | OpenAIChatUserMessage
  | OpenAIChatAssistantMessage
  | OpenAIChatToolMessage
  | OpenAIChatFunctionMessage;

/**
 * The system prompt given as an option: its text, sent as a leading `system` message. (The
 * leading system and developer messages of a history are the system prompt too: they are kept
 * and written back first, as they were.)
 */
export type OpenAIChatSystem = string;
