// The `openai-chat` format: OpenAI Chat Completions request `messages` (system, developer,
// user, assistant, tool and the legacy function role), read into AgentMessages and written back.
//
// - Leading system and developer messages are the system prompt: kept whole (the `value` of
//   the `ctxfold:system` entry) and written back first; their text is what other formats get.
//   A later one is a developer message (a system one marked so, and written back as `system`).
// - User content: text, `image_url` parts with a `data:` URL (pi's base64 images), and the parts
//   pi has no block for (an image by URL, `input_audio`, `file`) as a describing text that keeps
//   the part (W_CONVERTED when read: other formats get the text).
// - Assistant: the reasoning fields of OpenAI-compatible servers (`reasoning_content` of DeepSeek
//   and Kimi, `reasoning`, `reasoning_text`) as thinking signed with the field's name, as pi
//   keeps them; text (or `content: null`); `refusal`; `tool_calls` (function calls with their
//   JSON argument text, kept when re-stringifying would differ; custom tool calls; a Gemini
//   `extra_content` thought signature as the call's `thoughtSignature`); `name`, `audio`; the
//   legacy `function_call`.
// - Tool results pair with their call by `tool_call_id` (in the batch, then in the session); a
//   legacy `function` result with the latest `function_call` of its name.
// - What pi has no field for (member order, `name`, nulls, unknown members) stays under
//   `ctxfold`, so an uncompacted history is written back as the same JSON.
//
// Writing a history of another format: thinking signed by another provider (or unsigned) is sent
// as text, a tool result's images go in a user message after the run of tool results (the tool
// role takes text), and what has no Chat Completions form is reported (W_CONVERTED, W_DROPPED).
import {
  argumentsText,
  dataUrl,
  extrasOf as extrasOfFormat,
  hasKeys,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  type Loose,
  optionalString,
  parseArguments,
  parseDataUrl,
  putMember,
  quote,
  type ReadContext,
  type ReadMessage,
  type ReadResult,
  requireObject,
  requireString,
  type StoredSystem,
  stringifyArguments,
  systemPromptLength,
  type Warnings,
  type WriteContext,
  type WriteResult,
} from './common.js';

// ----- the messages --------------------------------------------------------------------------
//
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

// ----- the messages written ------------------------------------------------------------------
//
// What `write` returns (`toMessages`, `beforeRequest` with this format), typed as the request
// parameter of OpenAI's SDK takes it, so that the messages go to `chat.completions.create` with no
// cast: no `null` where the SDK has none, the audio formats it names, text parts only where the API
// takes text. A history read in this format is written back as it was read (its unknown members,
// nulls and parts included): the shapes below are those of what ctxfold writes itself.

/** A text part (user, system and tool content). */
export type OpenAIChatTextPartOut = {
  prompt_cache_breakpoint?: { mode: 'explicit' };
  type: 'text';
  text: string;
};
export type OpenAIChatAudioPartOut = {
  prompt_cache_breakpoint?: { mode: 'explicit' };
  type: 'input_audio';
  input_audio: { data: string; format: 'wav' | 'mp3' };
};
/** An image by URL or as a `data:<mime>;base64,…` URL. */
export type OpenAIChatImagePartOut = {
  prompt_cache_breakpoint?: { mode: 'explicit' };
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
};
export type OpenAIChatUserPartOut =
  | OpenAIChatTextPartOut
  | OpenAIChatImagePartOut
  | OpenAIChatAudioPartOut
  | OpenAIChatFilePart;
export type OpenAIChatSystemMessageOut = {
  prompt_cache_breakpoint?: { mode: 'explicit' };
  role: 'system' | 'developer';
  content: string | OpenAIChatTextPartOut[];
  name?: string;
};
export type OpenAIChatUserMessageOut = {
  prompt_cache_breakpoint?: { mode: 'explicit' };
  role: 'user';
  content: string | OpenAIChatUserPartOut[];
  name?: string;
};
export type OpenAIChatAssistantMessageOut = {
  role: 'assistant';
  content?: string | Array<OpenAIChatTextPartOut | OpenAIChatRefusalPart> | null;
  /** DeepSeek, Kimi (and other OpenAI-compatible servers): the reasoning to send back. */
  reasoning_content?: string | null;
  reasoning?: string | null;
  reasoning_text?: string | null;
  refusal?: string | null;
  name?: string;
  audio?: { id: string } | null;
  /** Written only when there are calls (never `null`). */
  tool_calls?: OpenAIChatToolCall[];
  function_call?: { name: string; arguments: string } | null;
};
export type OpenAIChatToolMessageOut = {
  role: 'tool';
  tool_call_id: string;
  /** Text (a tool result's images go in a user message after the tool results). */
  content: string | OpenAIChatTextPartOut[];
};
export type OpenAIChatFunctionMessageOut = {
  role: 'function';
  name: string;
  content: string | null;
};
/** A message `write` returns: assignable to the SDK's `ChatCompletionMessageParam`. */
export type OpenAIChatMessageOut =
  | OpenAIChatSystemMessageOut
  | OpenAIChatUserMessageOut
  | OpenAIChatAssistantMessageOut
  | OpenAIChatToolMessageOut
  | OpenAIChatFunctionMessageOut;

// ----- the module ----------------------------------------------------------------------------

export const name = 'openai-chat';
/**
 * OpenAI's images-and-vision guide: up to 500 images (and 50 MB of image bytes) per request,
 * whichever endpoint; the count is the budget `toLlmMessages` keeps snapcompact frames and kept
 * images within.
 */
export const maxImages = 500;

const extrasOf = (node: unknown): Loose | undefined => extrasOfFormat(node, name);
const keep = (node: Loose, members: Loose): Loose => keepExtras(node, name, members);

/** The fields OpenAI-compatible servers carry reasoning in; pi signs the thinking with the name. */
const REASONING_FIELDS: readonly string[] = ['reasoning_content', 'reasoning', 'reasoning_text'];
const isReasoningField = (k: unknown): k is string => typeof k === 'string' && REASONING_FIELDS.includes(k);
/** The members each role has, in the order the writer puts them; others are kept as `more`. */
const MEMBERS: Readonly<Record<string, readonly string[]>> = {
  system: ['role', 'content', 'name'],
  developer: ['role', 'content', 'name'],
  user: ['role', 'content', 'name'],
  assistant: [
    'role',
    'content',
    'reasoning_content',
    'reasoning',
    'reasoning_text',
    'refusal',
    'name',
    'audio',
    'tool_calls',
    'function_call',
  ],
  tool: ['role', 'tool_call_id', 'content'],
  function: ['role', 'name', 'content'],
};
const ROLES = Object.keys(MEMBERS);
const membersOf = (role: string): readonly string[] => MEMBERS[role] ?? [];
/** The text a tool result's images are sent after (the user message that carries them). */
const ATTACHED = 'Attached image(s) from tool result:';

/** The members of `m` its role does not map, in order, or undefined. */
function moreOf(m: Loose, known: readonly string[]): Loose | undefined {
  let out: Loose | undefined;
  for (const k in m) {
    if (known.includes(k)) continue;
    out ??= {};
    putMember(out, k, m[k]);
  }
  return out;
}

/**
 * The member order of `m` when the writer would not give it back: known members in the
 * writer's order, then the others.
 */
function orderOf(m: Loose, known: readonly string[]): string[] | undefined {
  let next = 0;
  let unknownSeen = false;
  for (const k in m) {
    const at = known.indexOf(k);
    if (at < 0) unknownSeen = true;
    else if (unknownSeen || at < next) return Object.keys(m);
    else next = at + 1;
  }
  return undefined;
}

// ----- checking ------------------------------------------------------------------------------
//
// The input is unknown: each message is checked member by member first (the first malformed
// field is E_INVALID_MESSAGE, named; a tool result's content once its call is found), and the
// check narrows it to the union below; the reader then switches on `role` and each part's `type`. The union is what the reader takes, a
// little wider than the API's types above: content may be null or absent (kept as given), a
// function call's `type` may be left out, a legacy `function` result may carry parts.

/** Content as the reader takes it: text, parts, or null / absent (written back as given). */
type CheckedContent = string | OpenAIChatUserPart[] | null | undefined;

/** A system, developer or user message as checked. */
interface CheckedUserLike {
  role: 'system' | 'developer' | 'user';
  content?: CheckedContent;
  name?: string;
  [member: string]: unknown;
}

/** A function tool call as checked: `type` may be left out. */
interface CheckedFunctionCall extends Omit<OpenAIChatFunctionToolCall, 'type'> {
  type?: 'function';
  [member: string]: unknown;
}
interface CheckedCustomCall extends OpenAIChatCustomToolCall {
  [member: string]: unknown;
}

/** An assistant message as checked (`OpenAIChatAssistantMessage`, a call's `type` optional). */
interface CheckedAssistant {
  role: 'assistant';
  content?: string | Array<OpenAIChatTextPart | OpenAIChatRefusalPart> | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  reasoning_text?: string | null;
  refusal?: string | null;
  name?: string;
  audio?: { id: string } | null;
  tool_calls?: Array<CheckedFunctionCall | CheckedCustomCall> | null;
  function_call?: { name: string; arguments: string } | null;
  [member: string]: unknown;
}

/** A tool result, or a legacy `function` result, as checked: its content is checked once its call is found. */
type CheckedResult =
  | { role: 'tool'; tool_call_id: string; [member: string]: unknown }
  | { role: 'function'; name: string; [member: string]: unknown };

/** A message of the `openai-chat` format as the reader checked it. */
type CheckedMessage = CheckedUserLike | CheckedAssistant | CheckedResult;

/** The roles the reader takes. */
const ROLE_SET: ReadonlySet<unknown> = new Set(ROLES);

/** A user, system, developer or tool content part: E_INVALID_MESSAGE at its first malformed field. */
function checkPart(part: unknown, index: number, field: string): asserts part is OpenAIChatUserPart {
  const p = requireObject(part, index, field);
  switch (p.type) {
    case 'text':
      requireString(p.text, index, `${field}.text`);
      return;
    case 'image_url':
      // `detail` is kept as given (any string), as the API's values are.
      if (typeof p.image_url !== 'string') {
        const image = requireObject(p.image_url, index, `${field}.image_url`);
        requireString(image.url, index, `${field}.image_url.url`);
        optionalString(image.detail, index, `${field}.image_url.detail`);
      }
      return;
    case 'input_audio': {
      const audio = requireObject(p.input_audio, index, `${field}.input_audio`);
      requireString(audio.data, index, `${field}.input_audio.data`);
      requireString(audio.format, index, `${field}.input_audio.format`);
      return;
    }
    case 'file': {
      const file = requireObject(p.file, index, `${field}.file`);
      for (const k of ['file_data', 'file_id', 'filename']) optionalString(file[k], index, `${field}.file.${k}`);
      return;
    }
    default:
      throw invalidMessage(
        index,
        `${field}.type`,
        `must be 'text', 'image_url', 'input_audio' or 'file', got ${quote(p.type)}`,
      );
  }
}

/** The content of a user-like or tool message: a string, parts, null or absent. */
function checkContent(content: unknown, index: number): asserts content is CheckedContent {
  if (typeof content === 'string' || content === null || content === undefined) return;
  if (!Array.isArray(content))
    throw invalidMessage(index, 'content', `must be a string, an array of parts or null, got ${kindOf(content)}`);
  // Indexed, not `forEach`: a sparse array's holes are malformed parts, not skipped ones.
  const parts: unknown[] = content;
  for (let k = 0; k < parts.length; k++) checkPart(parts[k], index, `content[${k}]`);
}

/** A tool call of an assistant's `tool_calls`. */
function checkToolCall(
  call: unknown,
  index: number,
  f: string,
): asserts call is CheckedFunctionCall | CheckedCustomCall {
  const c = requireObject(call, index, f);
  requireString(c.id, index, `${f}.id`);
  if (c.type === 'custom') {
    const custom = requireObject(c.custom, index, `${f}.custom`);
    requireString(custom.name, index, `${f}.custom.name`);
    requireString(custom.input, index, `${f}.custom.input`);
    return;
  }
  if (c.type !== undefined && c.type !== 'function')
    throw invalidMessage(index, `${f}.type`, `must be 'function' or 'custom', got ${quote(c.type)}`);
  const fn = requireObject(c.function, index, `${f}.function`);
  requireString(fn.name, index, `${f}.function.name`);
  requireString(fn.arguments, index, `${f}.function.arguments`);
}

/** An assistant message's members, in the order the reader reads them. */
function checkAssistant(m: Loose, index: number): asserts m is Loose & CheckedAssistant {
  for (const k in m) {
    const v = m[k];
    if (isReasoningField(k) && v !== null && v !== '') requireString(v, index, k);
  }
  if (Array.isArray(m.content)) {
    const parts: unknown[] = m.content;
    for (let k = 0; k < parts.length; k++) {
      const at = `content[${k}]`;
      const p = requireObject(parts[k], index, at);
      if (p.type === 'text') requireString(p.text, index, `${at}.text`);
      else if (p.type === 'refusal') requireString(p.refusal, index, `${at}.refusal`);
      else throw invalidMessage(index, `${at}.type`, `must be 'text' or 'refusal', got ${quote(p.type)}`);
    }
  } else if (typeof m.content !== 'string' && m.content !== null && m.content !== undefined)
    throw invalidMessage(index, 'content', `must be a string, an array of parts or null, got ${kindOf(m.content)}`);
  if (m.refusal !== null && m.refusal !== undefined) requireString(m.refusal, index, 'refusal');
  if (m.audio !== undefined && m.audio !== null)
    requireString(requireObject(m.audio, index, 'audio').id, index, 'audio.id');
  if (m.tool_calls !== null && m.tool_calls !== undefined) {
    if (!Array.isArray(m.tool_calls))
      throw invalidMessage(index, 'tool_calls', `must be an array, got ${kindOf(m.tool_calls)}`);
    const calls: unknown[] = m.tool_calls;
    for (let k = 0; k < calls.length; k++) checkToolCall(calls[k], index, `tool_calls[${k}]`);
  }
  if (m.function_call !== null && m.function_call !== undefined) {
    const fc = requireObject(m.function_call, index, 'function_call');
    requireString(fc.name, index, 'function_call.name');
    requireString(fc.arguments, index, 'function_call.arguments');
  }
}

/** Message `index`: an object with a role the reader takes and the members that role needs. */
function checkMessage(m: unknown, index: number): asserts m is Loose & CheckedMessage {
  if (!isObject(m)) throw invalidMessage(index, '', `must be an object, got ${kindOf(m)}`);
  if (!ROLE_SET.has(m.role))
    throw invalidMessage(index, 'role', `must be one of ${ROLES.join(', ')}, got ${quote(m.role)}`);
  if (m.name !== undefined && m.role !== 'tool') requireString(m.name, index, 'name');
  switch (m.role) {
    case 'assistant':
      checkAssistant(m, index);
      return;
    case 'tool':
      // The content is checked by `readToolResult`, after the call is looked up.
      requireString(m.tool_call_id, index, 'tool_call_id');
      return;
    case 'function':
      requireString(m.name, index, 'name');
      return;
  }
  checkContent(m.content, index);
}

// ----- reading -------------------------------------------------------------------------------

/** What other formats read for a part pi has no block for. */
function placeholder(p: OpenAIChatImagePart | OpenAIChatAudioPart | OpenAIChatFilePart): string {
  switch (p.type) {
    case 'image_url':
      return `[image: ${typeof p.image_url === 'string' ? p.image_url : p.image_url.url}]`;
    case 'input_audio':
      return `[audio: ${p.input_audio.format}]`;
    case 'file':
      return `[file: ${p.file.filename ?? p.file.file_id ?? 'inline data'}]`;
  }
}

/** A checked user, system, developer or tool content part as a pi block. */
function readPart(p: OpenAIChatUserPart, index: number, field: string, warnings: Warnings): Loose {
  switch (p.type) {
    case 'text':
      return hasKeys(p, ['type', 'text'])
        ? { type: 'text', text: p.text }
        : keep({ type: 'text', text: p.text }, { part: p });
    case 'image_url': {
      const form = typeof p.image_url === 'string' ? 'string' : undefined;
      const image = typeof p.image_url === 'string' ? undefined : p.image_url;
      const data = parseDataUrl(image === undefined ? p.image_url : image.url);
      if (data !== undefined) {
        const plain =
          hasKeys(p, ['type', 'image_url']) &&
          (image === undefined || hasKeys(image, image.detail === undefined ? ['url'] : ['url', 'detail']));
        const block = { type: 'image', data: data.data, mimeType: data.mimeType };
        // A part with members of its own is kept whole (its data twice: rare, and exact).
        return keep(block, plain ? { detail: image?.detail, form } : { part: p });
      }
      warnings.converted('an image by URL has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: placeholder(p) }, { part: p });
    }
    case 'input_audio':
      warnings.converted('an audio part has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: placeholder(p) }, { part: p });
    case 'file':
      warnings.converted('a file part has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: placeholder(p) }, { part: p });
  }
}

/** How a message's content was given, when not as a string: parts, null or absent. */
type ContentForm = 'parts' | 'null' | 'absent';

/** Checked content of a user-like message: a string, blocks, or null/absent (`form`). */
function readContent(
  content: CheckedContent,
  index: number,
  warnings: Warnings,
): { content: string | Loose[]; form?: ContentForm } {
  if (typeof content === 'string') return { content };
  if (content === null) return { content: '', form: 'null' };
  if (content === undefined) return { content: '', form: 'absent' };
  return { content: content.map((p, k) => readPart(p, index, `content[${k}]`, warnings)), form: 'parts' };
}

/** The text of a leading system/developer message (parts joined as the API joins them). */
function systemTextOf(content: CheckedContent): string {
  if (typeof content === 'string') return content;
  let text = '';
  for (const p of content ?? []) if (p.type === 'text') text += p.text;
  return text;
}

/** A Gemini thought signature of a tool call's `extra_content` (`{google|vertex: {thought_signature}}`). */
function geminiSignature(extra: unknown): string | undefined {
  if (!isObject(extra)) return undefined;
  const keys = Object.keys(extra);
  const [key] = keys;
  if (keys.length !== 1 || (key !== 'google' && key !== 'vertex')) return undefined;
  const signed = extra[key];
  if (!isObject(signed) || !hasKeys(signed, ['thought_signature']) || typeof signed.thought_signature !== 'string')
    return undefined;
  return signed.thought_signature === '' ? undefined : JSON.stringify(extra);
}

/** What the reader of one call keeps between messages. */
interface ReadState {
  ctx: ReadContext;
  api: string;
  provider: string;
  model: string;
  /** Tool call id → tool name, of this batch. */
  calls: Map<string, string>;
  /** Function name → the id of its latest legacy `function_call`, of this batch. */
  legacy: Map<string, string>;
}

function readToolCall(c: CheckedFunctionCall | CheckedCustomCall, index: number, f: string, st: ReadState): Loose {
  if (c.type === 'custom') {
    const { name: tool, input } = c.custom;
    st.calls.set(c.id, tool);
    const exact = hasKeys(c, ['id', 'type', 'custom']) && hasKeys(c.custom, ['name', 'input']);
    return keep(
      { type: 'toolCall', id: c.id, name: tool, arguments: { input } },
      { custom: true, call: exact ? undefined : c },
    );
  }
  const { name: tool, arguments: text } = c.function;
  const args = parseArguments(text, index, `${f}.function.arguments`);
  st.calls.set(c.id, tool);
  const block: Loose = { type: 'toolCall', id: c.id, name: tool, arguments: args };
  let keys = ['id', 'type', 'function'];
  if (c.extra_content !== undefined) {
    const signature = geminiSignature(c.extra_content);
    if (signature !== undefined) {
      block.thoughtSignature = signature;
      keys = [...keys, 'extra_content'];
    }
  }
  if (!hasKeys(c, keys) || !hasKeys(c.function, ['name', 'arguments'])) return keep(block, { call: c });
  return keep(block, { arguments: stringifyArguments(args) === text ? undefined : text });
}

/** The id of a legacy `function_call` (which has none): the first of its name not yet taken. */
function legacyId(tool: string, st: ReadState): string {
  for (let k = 0; ; k++) {
    const id = `function_call_${k}_${tool}`;
    if (!st.calls.has(id) && st.ctx.toolCall(id) === undefined) return id;
  }
}

/** The id of the latest legacy `function_call` of a name: in this batch, else in the session. */
function legacyCallOf(tool: string, st: ReadState): string | undefined {
  const here = st.legacy.get(tool);
  if (here !== undefined) return here;
  let found: string | undefined;
  for (let k = 0; ; k++) {
    const id = `function_call_${k}_${tool}`;
    if (st.ctx.toolCall(id) === undefined) return found;
    found = id;
  }
}

function readAssistant(m: Loose & CheckedAssistant, index: number, st: ReadState): ReadMessage {
  const blocks: Loose[] = [];
  /** Members given as null (or an empty reasoning string): written back as they were. */
  let fields: Loose | undefined;
  const field = (k: string, v: unknown) => {
    fields ??= {};
    fields[k] = v;
  };
  for (const k in m) {
    if (!isReasoningField(k)) continue;
    const v = m[k];
    if (v === null || v === '') field(k, v);
    else if (typeof v === 'string') blocks.push({ type: 'thinking', thinking: v, thinkingSignature: k });
  }
  let form: 'empty' | ContentForm | undefined;
  if (typeof m.content === 'string') {
    if (m.content === '') form = 'empty';
    else blocks.push({ type: 'text', text: m.content });
  } else if (m.content === null) form = 'null';
  else if (m.content === undefined) form = 'absent';
  else {
    form = 'parts';
    for (const p of m.content) {
      if (p.type === 'text')
        blocks.push(
          hasKeys(p, ['type', 'text'])
            ? { type: 'text', text: p.text }
            : keep({ type: 'text', text: p.text }, { part: p }),
        );
      else
        blocks.push(
          keep(
            { type: 'text', text: p.refusal },
            hasKeys(p, ['type', 'refusal']) ? { refusalPart: true } : { part: p },
          ),
        );
    }
  }
  if (m.refusal === null) field('refusal', null);
  else if (m.refusal !== undefined) blocks.push(keep({ type: 'text', text: m.refusal }, { refusal: true }));
  if (m.tool_calls === null) field('tool_calls', null);
  else if (m.tool_calls !== undefined)
    m.tool_calls.forEach((call, k) => {
      blocks.push(readToolCall(call, index, `tool_calls[${k}]`, st));
    });
  if (m.function_call === null) field('function_call', null);
  else if (m.function_call !== undefined) {
    const fc = m.function_call;
    const args = parseArguments(fc.arguments, index, 'function_call.arguments');
    const id = legacyId(fc.name, st);
    st.calls.set(id, fc.name);
    st.legacy.set(fc.name, id);
    const exact = hasKeys(fc, ['name', 'arguments']);
    blocks.push(
      keep(
        { type: 'toolCall', id, name: fc.name, arguments: args },
        exact
          ? { functionCall: true, arguments: stringifyArguments(args) === fc.arguments ? undefined : fc.arguments }
          : { functionCall: true, call: fc },
      ),
    );
  }
  const known = membersOf('assistant');
  return keep(
    {
      role: 'assistant',
      content: blocks,
      api: st.api,
      provider: st.provider,
      model: st.model,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
      stopReason: blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
    },
    { form, fields, name: m.name, audio: m.audio, more: moreOf(m, known), order: orderOf(m, known) },
  );
}

function readToolResult(m: Loose & CheckedResult, index: number, st: ReadState): ReadMessage {
  let id: string | undefined;
  let tool: string | undefined;
  if (m.role === 'tool') {
    id = m.tool_call_id;
    tool = st.calls.get(id) ?? st.ctx.toolCall(id)?.name;
    if (tool === undefined) throw invalidMessage(index, 'tool_call_id', `names no tool call before it: ${quote(id)}`);
  } else {
    tool = m.name;
    id = legacyCallOf(tool, st);
    if (id === undefined) throw invalidMessage(index, 'name', `names no function_call before it: ${quote(tool)}`);
  }
  const given = m.content;
  checkContent(given, index);
  const { content, form } = readContent(given, index, st.ctx.warnings);
  const known = membersOf(m.role);
  return keep(
    {
      role: 'toolResult',
      toolCallId: id,
      toolName: tool,
      content: typeof content === 'string' ? [{ type: 'text', text: content }] : content,
      isError: false,
    },
    {
      function: m.role === 'function' || undefined,
      form,
      more: moreOf(m, known),
      order: orderOf(m, known),
    },
  );
}

/** Chat Completions messages → AgentMessages, and the leading system/developer messages. */
export function read(messages: unknown[], ctx: ReadContext): ReadResult {
  const model: Loose = isObject(ctx.model) ? ctx.model : {};
  const st: ReadState = {
    ctx,
    api: typeof model.api === 'string' ? model.api : 'openai-completions',
    provider: typeof model.provider === 'string' ? model.provider : 'openai',
    model: typeof model.id === 'string' ? model.id : 'unknown',
    calls: new Map(),
    legacy: new Map(),
  };
  const out: ReadMessage[] = [];
  const leading: CheckedUserLike[] = [];
  const prompt = systemPromptLength(messages, (m) => m.role === 'system' || m.role === 'developer', ctx);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    checkMessage(m, i);
    switch (m.role) {
      case 'system':
      case 'developer':
      case 'user': {
        const { content, form } = readContent(m.content, i, ctx.warnings);
        if (i < prompt) {
          leading.push(m);
          break;
        }
        const known = membersOf(m.role);
        out.push(
          keep(
            { role: m.role === 'user' ? 'user' : 'developer', content },
            {
              role: m.role === 'system' ? 'system' : undefined,
              name: m.name,
              form: form === 'parts' ? undefined : form,
              more: moreOf(m, known),
              order: orderOf(m, known),
            },
          ),
        );
        break;
      }
      case 'assistant':
        out.push(readAssistant(m, i, st));
        break;
      default:
        out.push(readToolResult(m, i, st));
    }
  }
  if (leading.length === 0) return { messages: out };
  const text = leading
    .map((m) => systemTextOf(m.content))
    .filter((t) => t !== '')
    .join('\n\n');
  return { messages: out, system: { text, value: leading } };
}

// ----- writing -------------------------------------------------------------------------------

/** `node[key]` when `node` is an object, else undefined. */
const member = (node: unknown, key: string): unknown => (isObject(node) ? node[key] : undefined);

/** A provider message's blocks (`toLlmMessages` gives them as an array; a user text may stay a string). */
const blocksOf = (m: Loose): Loose[] => m.content as Loose[];

/** A kept part, when the block still holds what it was read from (pruning rewrites text). */
function keptPart(b: Loose, x: Loose | undefined): Loose | undefined {
  const p = x?.part;
  if (!isObject(p)) return undefined;
  if (b.type === 'image')
    return parseDataUrl(member(p.image_url, 'url') ?? p.image_url)?.data === b.data ? p : undefined;
  if (p.type === 'text' || p.type === 'refusal') return (p.text ?? p.refusal) === b.text ? p : undefined;
  // Kept parts come back from a session file: one that is not a part the reader takes is not used.
  const part: unknown = p;
  if (!isPart(part) || part.type === 'text') return undefined;
  return placeholder(part) === b.text ? p : undefined;
}

/** Whether `p` is a part `checkPart` takes. */
function isPart(p: unknown): p is OpenAIChatUserPart {
  try {
    checkPart(p, 0, '');
    return true;
  } catch {
    return false;
  }
}

/** A user-like block as a content part, or undefined (reported) for a block with none. */
function partOut(b: Loose, warnings: Warnings, index: number, path: string): Loose | undefined {
  const x = extrasOf(b);
  const kept = keptPart(b, x);
  if (kept !== undefined) return kept;
  if (b.type === 'text') return { type: 'text', text: b.text };
  if (b.type === 'image') {
    if (x?.form === 'string') return { type: 'image_url', image_url: dataUrl(b) };
    const image: Loose = { url: dataUrl(b) };
    if (typeof x?.detail === 'string') image.detail = x.detail;
    return { type: 'image_url', image_url: image };
  }
  warnings.dropped(`a ${b.type} block has no Chat Completions form`, index, path);
  return undefined;
}

function contentOut(content: unknown, warnings: Warnings, index: number): string | Loose[] {
  if (typeof content === 'string') return content;
  const parts: Loose[] = [];
  (content as Loose[]).forEach((b, k) => {
    const p = partOut(b, warnings, index, `content[${k}]`);
    if (p !== undefined) parts.push(p);
  });
  return parts;
}

/** `out` with the kept members after it, in the order they were read in. */
function finish(out: Loose, x: Loose | undefined): Loose {
  const more = x?.more;
  if (isObject(more)) for (const k of Object.keys(more)) putMember(out, k, more[k]);
  const order = x?.order;
  if (!Array.isArray(order)) return out;
  const ordered: Loose = {};
  // The member names the reader kept (`orderOf`).
  for (const k of order as string[]) if (Object.hasOwn(out, k)) putMember(ordered, k, out[k]);
  for (const k of Object.keys(out)) if (!Object.hasOwn(ordered, k)) putMember(ordered, k, out[k]);
  return ordered;
}

function userOut(m: Loose, warnings: Warnings, index: number): Loose {
  const x = extrasOf(m);
  const role = m.role === 'user' ? 'user' : x?.role === 'system' ? 'system' : 'developer';
  const out: Loose = { role };
  const empty = m.content === '' || (Array.isArray(m.content) && m.content.length === 0);
  if (x?.form === 'null' && empty) out.content = null;
  else if (x?.form !== 'absent' || !empty) out.content = contentOut(m.content, warnings, index);
  if (typeof x?.name === 'string') out.name = x.name;
  return finish(out, x);
}

function toolCallOut(b: Loose, m: Loose, warnings: Warnings, index: number, path: string): Loose {
  const x = extrasOf(b);
  const keptCall = x?.call;
  const kept = isObject(keptCall) ? keptCall : undefined;
  if (x?.custom) {
    const given = member(b.arguments, 'input');
    const input = typeof given === 'string' ? given : stringifyArguments(b.arguments);
    const custom = member(kept, 'custom');
    if (
      kept !== undefined &&
      kept.id === b.id &&
      member(custom, 'name') === b.name &&
      member(custom, 'input') === input
    )
      return kept;
    return { id: b.id, type: 'custom', custom: { name: b.name, input } };
  }
  const fn = member(kept, 'function');
  const keptText = member(fn, 'arguments');
  if (kept !== undefined && kept.id === b.id && member(fn, 'name') === b.name && typeof keptText === 'string') {
    if (argumentsText(b.arguments, keptText) === keptText) return kept;
  }
  const call: Loose = {
    id: b.id,
    type: 'function',
    function: { name: b.name, arguments: argumentsText(b.arguments, x?.arguments) },
  };
  if (typeof b.thoughtSignature === 'string' && b.thoughtSignature !== '') {
    let extra: unknown;
    try {
      extra = JSON.parse(b.thoughtSignature);
    } catch {
      extra = undefined;
    }
    if (geminiSignature(extra) !== undefined) call.extra_content = extra;
    else warnings.dropped(`a ${m.api ?? 'provider'} tool-call signature has no Chat Completions form`, index, path);
  }
  return call;
}

function functionCallOut(b: Loose, x: Loose | undefined): Loose {
  const call = x?.call;
  const kept = isObject(call) ? call : undefined;
  const text = argumentsText(b.arguments, kept?.arguments ?? x?.arguments);
  if (kept !== undefined && kept.name === b.name && kept.arguments === text) return kept;
  return { name: b.name, arguments: text };
}

function assistantOut(m: Loose, warnings: Warnings, index: number): Loose {
  const x = extrasOf(m);
  const kept = x?.fields;
  const fields: Loose = isObject(kept) ? kept : {};
  const reasoning: Loose = {};
  const texts: unknown[] = [];
  const parts: Loose[] = [];
  const calls: Loose[] = [];
  let refusal: unknown;
  let functionCall: Loose | undefined;
  let demoted = false;
  blocksOf(m).forEach((b, k) => {
    const path = `content[${k}]`;
    const bx = extrasOf(b);
    if (b.type === 'thinking') {
      const field = isReasoningField(b.thinkingSignature) ? b.thinkingSignature : undefined;
      if (field !== undefined)
        reasoning[field] = reasoning[field] === undefined ? b.thinking : `${reasoning[field]}\n${b.thinking}`;
      else if (typeof b.thinking === 'string' && b.thinking.trim() !== '') {
        warnings.converted('thinking without a Chat Completions reasoning field is sent as text', index, path);
        texts.push(b.thinking);
        parts.push({ type: 'text', text: b.thinking });
        demoted = true;
      } else if (b.thinkingSignature)
        warnings.dropped('signed thinking without text has no Chat Completions form', index, path);
    } else if (b.type === 'text') {
      if (bx?.refusal) refusal = b.text;
      else {
        if (demoted) texts[texts.length - 1] = `${texts[texts.length - 1]}\n`;
        demoted = false;
        texts.push(b.text);
        const kept = keptPart(b, bx);
        parts.push(kept ?? (bx?.refusalPart ? { type: 'refusal', refusal: b.text } : { type: 'text', text: b.text }));
      }
    } else if (b.type === 'toolCall') {
      if (bx?.functionCall) functionCall = functionCallOut(b, bx);
      else calls.push(toolCallOut(b, m, warnings, index, path));
    } else if (b.type === 'redactedThinking')
      warnings.dropped('redacted thinking has no Chat Completions form', index, path);
    else warnings.dropped(`an assistant ${b.type} block has no Chat Completions form`, index, path);
  });
  const out: Loose = { role: 'assistant' };
  const form = x?.form;
  if (form === 'parts') out.content = parts;
  else if (texts.length > 0) out.content = texts.join('');
  else if (form === 'null') out.content = null;
  else if (form !== 'absent') out.content = '';
  for (const f of REASONING_FIELDS) {
    if (reasoning[f] !== undefined) out[f] = reasoning[f];
    else if (Object.hasOwn(fields, f)) out[f] = fields[f];
  }
  if (refusal !== undefined) out.refusal = refusal;
  else if (Object.hasOwn(fields, 'refusal')) out.refusal = null;
  if (typeof x?.name === 'string') out.name = x.name;
  if (x?.audio !== undefined) out.audio = x.audio;
  if (calls.length > 0) out.tool_calls = calls;
  else if (Object.hasOwn(fields, 'tool_calls')) out.tool_calls = null;
  if (functionCall !== undefined) out.function_call = functionCall;
  else if (Object.hasOwn(fields, 'function_call')) out.function_call = null;
  return finish(out, x);
}

/** A tool result message, and its images when the tool role cannot carry them here. */
function toolResultOut(
  m: Loose,
  warnings: Warnings,
  index: number,
): { message: Loose; images: Array<Loose | undefined> } {
  const x = extrasOf(m);
  const images: Array<Loose | undefined> = [];
  const texts: unknown[] = [];
  const parts: Array<Loose | undefined> = [];
  const asParts = x?.form === 'parts';
  blocksOf(m).forEach((b, k) => {
    const path = `content[${k}]`;
    if (b.type === 'text') {
      texts.push(b.text);
      if (asParts) parts.push(partOut(b, warnings, index, path));
    } else if (b.type === 'image') {
      // Read from a tool message's parts: given back where it was; otherwise after the results.
      if (asParts) parts.push(partOut(b, warnings, index, path));
      else images.push(partOut(b, warnings, index, path));
    } else warnings.dropped(`a tool-result ${b.type} block has no Chat Completions form`, index, path);
  });
  let content: unknown;
  const text = texts.join('\n');
  if (asParts) content = parts;
  else if (text !== '') content = text;
  else if (images.length > 0) content = '(see attached image)';
  else if (x?.form === 'null') content = null;
  else if (x?.form !== 'absent') content = '';
  if (images.length > 0)
    warnings.converted("a tool result's images go in a user message after the tool results", index);
  if (m.isError === true)
    warnings.converted('the tool role has no error flag: a failed result is sent as its text', index);
  const out: Loose = x?.function
    ? { role: 'function', name: m.toolName }
    : { role: 'tool', tool_call_id: m.toolCallId };
  if (content !== undefined) out.content = content;
  return { message: finish(out, x), images };
}

/** The system prompt as the messages that open the request. */
function systemOut(system: StoredSystem | undefined | null): unknown[] {
  if (system === undefined || system === null) return [];
  if (system.format === name && Array.isArray(system.value)) return system.value;
  if (system.format === name && typeof system.value === 'string') return [{ role: 'system', content: system.value }];
  return typeof system.text === 'string' && system.text !== '' ? [{ role: 'system', content: system.text }] : [];
}

/** The LLM view → Chat Completions `messages` (the system prompt first). */
export function write(llm: readonly unknown[], ctx: WriteContext): WriteResult<OpenAIChatMessageOut> {
  const warnings = ctx.warnings;
  const out: unknown[] = [...systemOut(ctx.system)];
  let images: Array<Loose | undefined> = [];
  const flush = () => {
    if (images.length === 0) return;
    out.push({ role: 'user', content: [{ type: 'text', text: ATTACHED }, ...images] });
    images = [];
  };
  llm.forEach((message, index) => {
    const m: Loose = isObject(message) ? message : {};
    if (m.role !== 'toolResult') flush();
    if (m.providerPayload !== undefined)
      warnings.dropped(
        'a provider-native compaction payload has no Chat Completions form, and the kept messages it holds are ' +
          'not in this view: the summary is sent as text (write for a reading model without a Responses api)',
        index,
      );
    switch (m.role) {
      case 'user':
      case 'developer':
        out.push(userOut(m, warnings, index));
        break;
      case 'assistant':
        out.push(assistantOut(m, warnings, index));
        break;
      case 'toolResult': {
        const result = toolResultOut(m, warnings, index);
        out.push(result.message);
        images.push(...result.images);
        break;
      }
      default:
        warnings.dropped(`a ${m.role} message has no Chat Completions form`, index);
    }
  });
  flush();
  // Built member by member as the types above describe (kept members and order included).
  return { messages: out as OpenAIChatMessageOut[] };
}
