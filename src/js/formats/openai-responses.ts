// The `openai-responses` format: the `input` items of an OpenAI Responses API request
// (`POST /v1/responses`), read into AgentMessages and written back. The request's
// `instructions` string is the system prompt, kept apart (the `system` of `toMessages`).
//
// - Leading `system` / `developer` message items are the system prompt too: kept whole (the
//   `value` of the `ctxfold:system` entry) and written back first; their text is what other
//   formats get. A later one is a developer message (a system one marked so).
// - User content: `input_text`, `input_image` with a `data:` URL (pi's base64 images), and the
//   parts pi has no block for (an image by URL or `file_id`, `input_file`) as a describing text
//   that keeps the part (W_CONVERTED when read: other formats get the text).
// - Consecutive assistant-side items make one AssistantMessage, as pi's Responses provider keeps
//   them: a `reasoning` item is thinking (its summary text) signed with the item itself as JSON;
//   an assistant `message` item's `output_text` / `refusal` parts are text signed with the
//   item's id and phase (`{v:1,id,phase}`); a `function_call` / `custom_tool_call` is a tool
//   call with the `call_id` as its id. The other items a model's output holds (hosted tool
//   calls and their outputs, `item_reference`, `compaction`) are a describing text that keeps the
//   item whole (W_CONVERTED).
// - `function_call_output` / `custom_tool_call_output` items are tool results, paired with their
//   call by `call_id` (in the batch, then in the session); output text or content parts.
// - What pi has no field for (member order, item ids and status, annotations, unknown members)
//   stays under `ctxfold` as the item or part with its content left out (a "shell"), so an
//   uncompacted history is written back as the same JSON.
//
// Writing a history of another format: thinking signed by another provider (or unsigned) is
// sent as assistant text, tool call ids are split into `call_id` and item id as pi's provider
// splits them, a provider-native compaction of OpenAI is replayed as its items, and what has no
// Responses form is reported (W_CONVERTED, W_DROPPED).
//
// The same writer writes the input of the provider-native OpenAI lanes (providers/native-openai,
// spec: compaction §13) with `ctx.native` (`nativeInput`); what such a request needs beyond a
// plain input is listed at `NativeTarget` below.
import {
  argumentsText,
  isBlank as blank,
  dataUrl,
  extrasOf as extrasOfFormat,
  hasKeys,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  type Loose,
  nullableString,
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
  Warnings,
  type WriteContext,
  type WriteResult,
} from './common.js';

// ----- the items ------------------------------------------------------------------------------
//
// Items of the `openai-responses` format: the `input` array of an OpenAI Responses API request
// (`POST /v1/responses`), as the API reference documents its input items. Members an item or
// part carries beyond these are kept and written back as they were; the hosted-tool items are
// typed loosely (their type and id) and kept whole.

export interface ResponsesInputText {
  type: 'input_text';
  text: string;
}
/** An image as a URL (a `data:<mime>;base64,…` URL is a base64 image for pi) or an uploaded file's id. */
export interface ResponsesInputImage {
  type: 'input_image';
  detail?: 'auto' | 'low' | 'high' | 'original' | null;
  image_url?: string | null;
  file_id?: string | null;
}
export interface ResponsesInputFile {
  type: 'input_file';
  file_data?: string | null;
  file_id?: string | null;
  file_url?: string | null;
  filename?: string | null;
}
export type ResponsesInputPart = ResponsesInputText | ResponsesInputImage | ResponsesInputFile;

export interface ResponsesOutputText {
  type: 'output_text';
  text: string;
  annotations?: Array<Record<string, unknown>>;
  logprobs?: Array<Record<string, unknown>>;
}
export interface ResponsesRefusal {
  type: 'refusal';
  refusal: string;
}

/** A user, system or developer message (`type` may be left out: the easy-input form). */
export interface ResponsesInputMessage {
  type?: 'message';
  role: 'user' | 'system' | 'developer';
  content: string | ResponsesInputPart[];
  id?: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
/** A message of the model: its output text and refusals (or a string, in the easy-input form). */
export interface ResponsesOutputMessage {
  type?: 'message';
  role: 'assistant';
  content: string | Array<ResponsesOutputText | ResponsesRefusal>;
  id?: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  phase?: 'commentary' | 'final_answer' | null;
  [member: string]: unknown;
}
/** Reasoning to send back: its summary, and its `encrypted_content` when the request is stateless. */
export interface ResponsesReasoningItem {
  type: 'reasoning';
  id?: string;
  summary?: Array<{ type: 'summary_text'; text: string }>;
  content?: Array<{ type: 'reasoning_text'; text: string }>;
  encrypted_content?: string | null;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
export interface ResponsesFunctionCall {
  type: 'function_call';
  id?: string;
  call_id: string;
  name: string;
  /** JSON text, kept as it was when it does not re-stringify the same. */
  arguments: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
export interface ResponsesFunctionCallOutput {
  type: 'function_call_output';
  id?: string;
  call_id: string;
  output: string | ResponsesInputPart[];
  status?: 'in_progress' | 'completed' | 'incomplete';
  [member: string]: unknown;
}
export interface ResponsesCustomToolCall {
  type: 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  input: string;
  [member: string]: unknown;
}
export interface ResponsesCustomToolCallOutput {
  type: 'custom_tool_call_output';
  id?: string;
  call_id: string;
  output: string | ResponsesInputPart[];
  [member: string]: unknown;
}
/** An item stored by the API, by its id. */
export interface ResponsesItemReference {
  type: 'item_reference';
  id: string;
}
/** The opaque item `/responses/compact` returns in place of the history it compacted. */
export interface ResponsesCompactionItem {
  type: 'compaction';
  id?: string;
  encrypted_content: string;
  [member: string]: unknown;
}
/** Hosted tools' calls and outputs: kept whole (pi has no message for them). */
export interface ResponsesHostedToolItem {
  type:
    | 'web_search_call'
    | 'file_search_call'
    | 'computer_call'
    | 'computer_call_output'
    | 'image_generation_call'
    | 'code_interpreter_call'
    | 'local_shell_call'
    | 'local_shell_call_output'
    | 'shell_call'
    | 'shell_call_output'
    | 'apply_patch_call'
    | 'apply_patch_call_output'
    | 'mcp_list_tools'
    | 'mcp_approval_request'
    | 'mcp_approval_response'
    | 'mcp_call'
    | 'tool_search_call'
    | 'tool_search_output';
  id?: string | null;
  call_id?: string;
  [member: string]: unknown;
}

export type ResponsesInputItem =
  | ResponsesInputMessage
  | ResponsesOutputMessage
  | ResponsesReasoningItem
  | ResponsesFunctionCall
  | ResponsesFunctionCallOutput
  | ResponsesCustomToolCall
  | ResponsesCustomToolCallOutput
  | ResponsesItemReference
  | ResponsesCompactionItem
  | ResponsesHostedToolItem;

// ----- the items written -----------------------------------------------------------------------
//
// What `write` returns (`toMessages`, `beforeRequest` with this format), typed as precisely as
// ctxfold writes it: no `null` where OpenAI's SDK has none, an image's `detail` always given. An
// input read in this format is written back as it was read (its unknown members, nulls and hosted
// tools' items included): the shapes below are those of what ctxfold writes itself.
//
// One gap remains with the `openai` SDK (7.60.0): it types an assistant `message` item as a
// `ResponseOutputMessage`, whose `id` and `status` are required, while the API takes (and
// ctxfold writes) the item without them (`status` is output-only: the API refuses it in an
// input). So `ResponsesInputItemOut[]` is not assignable to the SDK's `ResponseInput` when it
// holds an assistant message; every other item is.

export type ResponsesInputImageOut = {
  type: 'input_image';
  detail: 'auto' | 'low' | 'high' | 'original';
  image_url?: string;
  file_id?: string;
};
export type ResponsesInputFileOut = {
  type: 'input_file';
  file_data?: string;
  file_id?: string;
  file_url?: string;
  filename?: string;
};
export type ResponsesInputPartOut = ResponsesInputText | ResponsesInputImageOut | ResponsesInputFileOut;
/** A user, system or developer message (`type` may be left out: the easy-input form). */
export type ResponsesInputMessageOut = {
  type?: 'message';
  role: 'user' | 'system' | 'developer';
  content: string | ResponsesInputPartOut[];
};
export type ResponsesOutputTextOut = {
  type: 'output_text';
  text: string;
  /** Empty for text ctxfold writes (a message read in this format keeps its own, undeclared). */
  annotations: [];
};
/** A message of the model, without `id` and `status` (see above). */
export type ResponsesOutputMessageOut = {
  type?: 'message';
  role: 'assistant';
  content: string | Array<ResponsesOutputTextOut | ResponsesRefusal>;
  id?: string;
  phase?: 'commentary' | 'final_answer' | null;
};
export type ResponsesFunctionCallOutputOut = {
  type: 'function_call_output';
  id?: string;
  call_id: string;
  output: string | ResponsesInputPartOut[];
};
export type ResponsesCustomToolCallOutputOut = {
  type: 'custom_tool_call_output';
  id?: string;
  call_id: string;
  output: string | ResponsesInputPartOut[];
};
export type ResponsesFunctionCallOut = {
  type: 'function_call';
  id?: string;
  call_id: string;
  name: string;
  arguments: string;
};
export type ResponsesCustomToolCallOut = {
  type: 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  input: string;
};
export type ResponsesCompactionItemOut = {
  type: 'compaction';
  id?: string;
  encrypted_content: string;
};
/** Reasoning sent back as the API returned it (with its `id` and `summary`). */
export type ResponsesReasoningItemOut = {
  type: 'reasoning';
  id: string;
  summary: Array<{ type: 'summary_text'; text: string }>;
  content?: Array<{ type: 'reasoning_text'; text: string }>;
  encrypted_content?: string | null;
};
/** An item of the `input` written. */
export type ResponsesInputItemOut =
  | ResponsesInputMessageOut
  | ResponsesOutputMessageOut
  | ResponsesReasoningItemOut
  | ResponsesFunctionCallOut
  | ResponsesFunctionCallOutputOut
  | ResponsesCustomToolCallOut
  | ResponsesCustomToolCallOutputOut
  | ResponsesItemReference
  | ResponsesCompactionItemOut;

/**
 * The request's `instructions`: the system prompt given as an option, and what `toMessages`
 * returns as `system`. (Leading system and developer items of an input are the system prompt
 * too: they are kept and written back first, as they were.)
 */
export type ResponsesSystem = string;

// ----- the module ----------------------------------------------------------------------------

export const name = 'openai-responses';
/**
 * OpenAI's images-and-vision guide: up to 500 images per request, whichever endpoint; the
 * budget `toLlmMessages` keeps snapcompact frames and kept images within.
 */
export const maxImages = 500;

const extrasOf = (node: unknown): Loose | undefined => extrasOfFormat(node, name);
const keep = (node: Loose, members: Loose): Loose => keepExtras(node, name, members);

const MESSAGE_ROLES: readonly unknown[] = ['user', 'system', 'developer', 'assistant'];
/** Item types of a model's output (and their outputs) pi has no message for: kept whole. */
const OPAQUE_ITEMS = [
  'web_search_call',
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'image_generation_call',
  'code_interpreter_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'tool_search_call',
  'tool_search_output',
  'item_reference',
  'compaction',
] as const;
const ITEM_TYPES: readonly unknown[] = [
  'message',
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  ...OPAQUE_ITEMS,
];
const INPUT_PARTS = ['input_text', 'input_image', 'input_file'];
const RESPONSES_APIS: readonly unknown[] = ['openai-responses', 'azure-openai-responses', 'openai-codex-responses'];

/** `node[key]` when `node` is an object, else undefined. */
const member = (node: unknown, key: string): unknown => (isObject(node) ? node[key] : undefined);

/** `node` with `key` set to null: the members, in order, that the writer fills `key` into. */
function shellOf(node: Loose, key: string): Loose {
  const out: Loose = {};
  for (const k in node) putMember(out, k, k === key ? null : node[k]);
  return out;
}

/** A copy of a kept shell with `key` filled in (appended when the shell lacks it). */
function fill(shell: Loose, key: string, value: unknown): Loose {
  const out: Loose = {};
  for (const k in shell) putMember(out, k, k === key ? value : shell[k]);
  if (!Object.hasOwn(out, key)) putMember(out, key, value);
  return out;
}

/** A stable short hash for ids the provider limits to 64 characters (FNV-1a, base 36). */
function shortHash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(36);
}

/**
 * A tool call id as `[call_id, item id]`, as pi's Responses provider splits `call|item`: an
 * item of another prefix than `fc`/`fcr` (`ctc` for a freeform call), or none, is minted from
 * a hash, one over 64 characters is shortened.
 */
function splitCallId(id: string, prefix = 'fc'): [string, string] {
  const sep = id.search(/[\n|]/);
  if (sep <= 0) return [id, `${prefix}_${shortHash(id)}`];
  const item = id.slice(sep + 1);
  const own = item.match(/^([a-zA-Z][a-zA-Z0-9]*)_/)?.[1];
  const allowed = prefix === 'ctc' ? own === 'ctc' : own === 'fc' || own === 'fcr';
  if (!allowed) return [id.slice(0, sep), `${prefix}_${shortHash(item)}`];
  return [id.slice(0, sep), item.length > 64 ? `${own}_${shortHash(item)}` : item];
}

/** A message item's id and phase, as a text signature gives them. */
interface TextSignature {
  id?: string;
  phase?: unknown;
}

/** A text signature of pi's Responses provider (`{v:1,id,phase}` JSON, or a plain id) as `{ id?, phase? }`. */
function textSignature(sig: unknown): TextSignature {
  if (typeof sig !== 'string' || sig === '') return {};
  if (sig.startsWith('{')) {
    try {
      const v: unknown = JSON.parse(sig);
      if (isObject(v) && v.v === 1 && typeof v.id === 'string') {
        return { id: v.id, phase: v.phase === 'commentary' || v.phase === 'final_answer' ? v.phase : undefined };
      }
    } catch {
      // A plain id.
    }
  }
  return { id: sig };
}

/** Whether `m` is a message item (typed, or the easy-input form with a role only). */
const isMessage = (m: Loose): boolean => m.type === 'message' || (m.type === undefined && m.role !== undefined);

// ----- checking ------------------------------------------------------------------------------
//
// The input is unknown: each item is checked before it is read (the first malformed field is
// E_INVALID_MESSAGE, named), which narrows it to the union below, on `type` (a message item may
// leave it out: the easy-input form) and a message's `role`; the reader then switches on them.
// A call's input and an output's content are checked after the call is looked up, as the
// reader always reported a repeated or unknown call first. The union is what the reader takes:
// the API's items, with nullable members and the members it keeps as they are.

interface CheckedInputText {
  type: 'input_text';
  text: string;
  [member: string]: unknown;
}
interface CheckedInputImage {
  type: 'input_image';
  image_url?: string | null;
  file_id?: string | null;
  detail?: string | null;
  [member: string]: unknown;
}
interface CheckedInputFile {
  type: 'input_file';
  file_data?: string | null;
  file_id?: string | null;
  file_url?: string | null;
  filename?: string | null;
  [member: string]: unknown;
}
type CheckedInputPart = CheckedInputText | CheckedInputImage | CheckedInputFile;

interface CheckedInputMessage {
  type?: 'message';
  role: 'user' | 'system' | 'developer';
  id?: string;
  content: string | CheckedInputPart[];
  [member: string]: unknown;
}
type CheckedOutputPart =
  | { type: 'output_text'; text: string; annotations?: unknown[]; logprobs?: unknown[]; [member: string]: unknown }
  | { type: 'refusal'; refusal: string; [member: string]: unknown };
interface CheckedOutputMessage {
  type?: 'message';
  role: 'assistant';
  id?: string;
  content: string | CheckedOutputPart[];
  [member: string]: unknown;
}
interface CheckedReasoning {
  type: 'reasoning';
  id?: string;
  encrypted_content?: string | null;
  summary?: Array<{ type: 'summary_text'; text: string }>;
  content?: Array<{ type: 'reasoning_text'; text: string }>;
  [member: string]: unknown;
}
/** A call before it is looked up: its `input` or `arguments` is checked once it is not a repeat. */
interface CheckedCallHead {
  type: 'function_call' | 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  [member: string]: unknown;
}
/** A call's output before its call is found: its `output` is checked once it is. */
interface CheckedOutputHead {
  type: 'function_call_output' | 'custom_tool_call_output';
  id?: string;
  call_id: string;
  [member: string]: unknown;
}
/** An item pi has no message for (kept whole). */
interface CheckedOpaqueItem {
  type: (typeof OPAQUE_ITEMS)[number];
  id?: string | null;
  call_id?: string;
  [member: string]: unknown;
}
/** An input item as checked. */
type CheckedItem =
  | CheckedInputMessage
  | CheckedOutputMessage
  | CheckedReasoning
  | CheckedCallHead
  | CheckedOutputHead
  | CheckedOpaqueItem;

function optionalArray(value: unknown, index: number, field: string): unknown[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalidMessage(index, field, `must be an array, got ${kindOf(value)}`);
  return value;
}

/** An input content part (of a message or a tool output). */
function checkInputPart(part: unknown, index: number, field: string): asserts part is Loose & CheckedInputPart {
  const p = requireObject(part, index, field);
  switch (p.type) {
    case 'input_text':
      requireString(p.text, index, `${field}.text`);
      return;
    case 'input_image': {
      const url = nullableString(p.image_url, index, `${field}.image_url`);
      const file = nullableString(p.file_id, index, `${field}.file_id`);
      nullableString(p.detail, index, `${field}.detail`);
      if (typeof url !== 'string' && typeof file !== 'string')
        throw invalidMessage(index, `${field}.image_url`, 'an input_image needs an image_url or a file_id');
      return;
    }
    case 'input_file':
      for (const k of ['file_data', 'file_id', 'file_url', 'filename']) nullableString(p[k], index, `${field}.${k}`);
      return;
    default:
      throw invalidMessage(index, `${field}.type`, `must be ${INPUT_PARTS.join(', ')}, got ${quote(p.type)}`);
  }
}

/** Input content: a string, or parts (indexed, so a sparse array's holes are malformed parts). */
function checkInputContent(
  content: unknown,
  index: number,
  field: string,
): asserts content is string | CheckedInputPart[] {
  if (typeof content === 'string') return;
  if (!Array.isArray(content))
    throw invalidMessage(index, field, `must be a string or an array of parts, got ${kindOf(content)}`);
  const parts: unknown[] = content;
  for (let k = 0; k < parts.length; k++) checkInputPart(parts[k], index, `${field}[${k}]`);
}

function checkAssistantMessage(m: Loose, index: number): void {
  optionalString(m.id, index, 'id');
  const content = m.content;
  if (typeof content === 'string') return;
  if (!Array.isArray(content))
    throw invalidMessage(index, 'content', `must be a string or an array of parts, got ${kindOf(content)}`);
  const parts: unknown[] = content;
  for (let k = 0; k < parts.length; k++) {
    const p = requireObject(parts[k], index, `content[${k}]`);
    const at = `content[${k}]`;
    if (p.type === 'output_text') {
      requireString(p.text, index, `${at}.text`);
      optionalArray(p.annotations, index, `${at}.annotations`);
      optionalArray(p.logprobs, index, `${at}.logprobs`);
    } else if (p.type === 'refusal') requireString(p.refusal, index, `${at}.refusal`);
    else throw invalidMessage(index, `${at}.type`, `must be 'output_text' or 'refusal', got ${quote(p.type)}`);
  }
}

function checkReasoning(m: Loose, index: number): void {
  optionalString(m.id, index, 'id');
  nullableString(m.encrypted_content, index, 'encrypted_content');
  for (const key of ['summary', 'content']) {
    const list = optionalArray(m[key], index, key);
    if (list === undefined) continue;
    const kind = key === 'summary' ? 'summary_text' : 'reasoning_text';
    for (let k = 0; k < list.length; k++) {
      const p = requireObject(list[k], index, `${key}[${k}]`);
      if (p.type !== kind) throw invalidMessage(index, `${key}[${k}].type`, `must be '${kind}', got ${quote(p.type)}`);
      requireString(p.text, index, `${key}[${k}].text`);
    }
  }
}

/** Item `i`: an object of an item type the reader takes, with the members its type needs. */
function checkItem(m: unknown, i: number): asserts m is Loose & CheckedItem {
  if (!isObject(m)) throw invalidMessage(i, '', `must be an object, got ${kindOf(m)}`);
  if (m.type !== undefined && !ITEM_TYPES.includes(m.type))
    throw invalidMessage(i, 'type', `is not an input item type: ${quote(m.type)}`);
  if (m.type === undefined && m.role === undefined)
    throw invalidMessage(i, 'type', 'an item needs a type (or a role, for a message)');
  if (isMessage(m)) {
    if (!MESSAGE_ROLES.includes(m.role))
      throw invalidMessage(i, 'role', `must be one of ${MESSAGE_ROLES.join(', ')}, got ${quote(m.role)}`);
    if (m.role === 'assistant') return checkAssistantMessage(m, i);
    optionalString(m.id, i, 'id');
    return checkInputContent(m.content, i, 'content');
  }
  switch (m.type) {
    case 'reasoning':
      return checkReasoning(m, i);
    case 'function_call':
    case 'custom_tool_call':
      optionalString(m.id, i, 'id');
      requireString(m.call_id, i, 'call_id');
      requireString(m.name, i, 'name');
      return;
    case 'function_call_output':
    case 'custom_tool_call_output':
      optionalString(m.id, i, 'id');
      requireString(m.call_id, i, 'call_id');
      return;
    default:
      if (m.type === 'item_reference') requireString(m.id, i, 'id');
      else nullableString(m.id, i, 'id');
      optionalString(m.call_id, i, 'call_id');
      if (m.type === 'compaction') requireString(m.encrypted_content, i, 'encrypted_content');
  }
}

// ----- reading -------------------------------------------------------------------------------

/** What other formats read for a part pi has no block for (a kept part too: not assumed checked). */
function partPlaceholder(p: Loose): string {
  if (p.type === 'input_image') return `[image: ${p.image_url ?? p.file_id}]`;
  return `[file: ${p.filename ?? p.file_id ?? p.file_url ?? 'inline data'}]`;
}

/** What other formats read for an item pi has no message for (a kept item too: not assumed checked). */
function itemPlaceholder(item: Loose): string {
  const hint = member(item.action, 'query') ?? item.name ?? item.call_id ?? item.id;
  return typeof hint === 'string' ? `[${item.type}: ${hint}]` : `[${item.type}]`;
}

/** A checked input content part (of a message or a tool output) as a pi block. */
function readInputPart(p: Loose & CheckedInputPart, index: number, field: string, warnings: Warnings): Loose {
  switch (p.type) {
    case 'input_text':
      return hasKeys(p, ['type', 'text'])
        ? { type: 'text', text: p.text }
        : keep({ type: 'text', text: p.text }, { shell: shellOf(p, 'text') });
    case 'input_image': {
      const data = parseDataUrl(p.image_url);
      if (data !== undefined) {
        const block = { type: 'image', data: data.data, mimeType: data.mimeType };
        const plain = hasKeys(p, ['type', 'detail', 'image_url']) && p.detail === 'auto';
        return plain ? block : keep(block, { shell: shellOf(p, 'image_url') });
      }
      warnings.converted('an image by URL or file id has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: partPlaceholder(p) }, { part: p });
    }
    case 'input_file':
      warnings.converted('a file part has no pi form: other formats read it as text', index, field);
      return keep({ type: 'text', text: partPlaceholder(p) }, { part: p });
  }
}

/** Checked input content: a string, or its parts as pi blocks. */
function readInputContent(
  content: string | CheckedInputPart[],
  index: number,
  field: string,
  warnings: Warnings,
): string | Loose[] {
  if (typeof content === 'string') return content;
  return content.map((p, k) => readInputPart(p, index, `${field}[${k}]`, warnings));
}

/** The text of a leading system/developer item (parts joined as the API joins them). */
function systemTextOf(content: string | Loose[]): string {
  if (typeof content === 'string') return content;
  let text = '';
  for (const b of content) if (b.type === 'text' && member(b.ctxfold, 'part') === undefined) text += b.text;
  return text;
}

/** The pi text signature of an assistant message item: `{v:1,id,phase}` as pi's provider writes it. */
function signatureOf(item: Loose): string | undefined {
  if (typeof item.id !== 'string' || item.id === '') return undefined;
  const sig: Loose = { v: 1, id: item.id };
  if (item.phase === 'commentary' || item.phase === 'final_answer') sig.phase = item.phase;
  return JSON.stringify(sig);
}

/** A checked assistant `message` item's parts as text blocks; the first keeps the item's shell. */
function readAssistantMessage(m: Loose & CheckedOutputMessage, blocks: Loose[]): void {
  const textSignature = signatureOf(m);
  const shell = shellOf(m, 'content');
  const text = (t: string, x: Loose) => {
    const b: Loose = { type: 'text', text: t };
    if (textSignature !== undefined) b.textSignature = textSignature;
    return keep(b, x);
  };
  const content = m.content;
  if (typeof content === 'string') {
    blocks.push(text(content, { item: shell, form: 'string' }));
    return;
  }
  if (content.length === 0) {
    blocks.push(text('', { item: shell, empty: true }));
    return;
  }
  content.forEach((p, k) => {
    const first = k === 0 ? shell : undefined;
    const t = p.type === 'output_text' ? p.text : p.refusal;
    const key = p.type === 'output_text' ? 'text' : 'refusal';
    blocks.push(text(t, { item: first, cont: first ? undefined : true, part: shellOf(p, key) }));
  });
}

/** A checked reasoning item as pi keeps it: its summary as thinking, the item as JSON the signature. */
function readReasoning(m: Loose & CheckedReasoning): Loose {
  const texts: string[] = [];
  for (const list of [m.summary, m.content]) {
    if (list !== undefined && texts.length === 0) texts.push(...list.map((p) => p.text));
  }
  return { type: 'thinking', thinking: texts.join('\n\n'), thinkingSignature: JSON.stringify(m) };
}

/** What the reader of one call keeps between items. */
interface ReadState {
  ctx: ReadContext;
  /** Call id → tool name, of this batch. */
  calls: Map<string, string>;
}

function readCall(m: Loose & CheckedCallHead, index: number, st: ReadState): Loose {
  const { call_id: callId, name: tool } = m;
  if (st.calls.has(callId)) throw invalidMessage(index, 'call_id', `repeats a call before it: ${quote(callId)}`);
  let block: Loose;
  if (m.type === 'custom_tool_call') {
    const input = requireString(m.input, index, 'input');
    // `customWireName` marks a freeform call as pi's Responses provider marks it.
    block = keep(
      { type: 'toolCall', id: callId, name: tool, arguments: { input }, customWireName: tool },
      { item: shellOf(m, 'input') },
    );
  } else {
    const text = requireString(m.arguments, index, 'arguments');
    const args = parseArguments(text, index, 'arguments');
    block = keep(
      { type: 'toolCall', id: callId, name: tool, arguments: args },
      { item: shellOf(m, 'arguments'), arguments: stringifyArguments(args) === text ? undefined : text },
    );
  }
  st.calls.set(callId, tool);
  return block;
}

/** A checked item of a model's output pi has no message for: a describing text that keeps it. */
function readOpaque(m: Loose & CheckedOpaqueItem, index: number, warnings: Warnings): Loose {
  warnings.converted(`a ${m.type} item has no pi form: other formats read it as text`, index);
  return keep({ type: 'text', text: itemPlaceholder(m) }, { other: m });
}

function readOutput(m: Loose & CheckedOutputHead, index: number, st: ReadState): ReadMessage {
  const callId = m.call_id;
  // A call of an earlier entry may carry pi's `call_id|item_id`: the result names it whole.
  const earlier = st.calls.has(callId) ? undefined : (st.ctx.toolCall(callId) ?? st.ctx.toolCallOfCallId(callId));
  const tool = st.calls.get(callId) ?? earlier?.name;
  if (tool === undefined) throw invalidMessage(index, 'call_id', `names no tool call before it: ${quote(callId)}`);
  const toolCallId = earlier?.id ?? callId;
  const output = m.output;
  let content: string | Loose[];
  if (typeof output === 'string') content = [{ type: 'text', text: output }];
  else if (Array.isArray(output)) {
    checkInputContent(output, index, 'output');
    content = readInputContent(output, index, 'output', st.ctx.warnings);
  } else throw invalidMessage(index, 'output', `must be a string or an array of parts, got ${kindOf(output)}`);
  return keep(
    { role: 'toolResult', toolCallId, toolName: tool, content, isError: false },
    { shell: shellOf(m, 'output'), form: typeof output === 'string' ? 'string' : 'parts' },
  );
}

/** Responses input items → AgentMessages, and the leading system/developer items. */
export function read(messages: unknown[], ctx: ReadContext): ReadResult {
  const model: Loose = isObject(ctx.model) ? ctx.model : {};
  const st: ReadState = { ctx, calls: new Map() };
  const api = typeof model.api === 'string' ? model.api : 'openai-responses';
  const provider = typeof model.provider === 'string' ? model.provider : 'openai';
  const modelId = typeof model.id === 'string' ? model.id : 'unknown';
  const out: ReadMessage[] = [];
  const leading: CheckedInputMessage[] = [];
  const leadingText: string[] = [];
  let blocks: Loose[] | undefined;
  const flush = () => {
    if (blocks === undefined) return;
    out.push({
      role: 'assistant',
      content: blocks,
      api,
      provider,
      model: modelId,
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
      stopReason: blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop',
    });
    blocks = undefined;
  };
  const prompt = systemPromptLength(
    messages,
    (m) => isMessage(m) && (m.role === 'system' || m.role === 'developer'),
    ctx,
  );
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    checkItem(m, i);
    switch (m.type) {
      case undefined:
      case 'message': {
        if (m.role === 'assistant') {
          blocks ??= [];
          readAssistantMessage(m, blocks);
          break;
        }
        flush();
        const content = readInputContent(m.content, i, 'content', ctx.warnings);
        if (i < prompt) {
          leading.push(m);
          leadingText.push(systemTextOf(content));
          break;
        }
        const plain = hasKeys(m, ['role', 'content']);
        out.push(
          keep(
            { role: m.role === 'user' ? 'user' : 'developer', content },
            { role: m.role === 'system' ? 'system' : undefined, shell: plain ? undefined : shellOf(m, 'content') },
          ),
        );
        break;
      }
      case 'reasoning':
        blocks ??= [];
        blocks.push(readReasoning(m));
        break;
      case 'function_call':
      case 'custom_tool_call':
        blocks ??= [];
        blocks.push(readCall(m, i, st));
        break;
      case 'function_call_output':
      case 'custom_tool_call_output':
        flush();
        out.push(readOutput(m, i, st));
        break;
      default:
        blocks ??= [];
        blocks.push(readOpaque(m, i, ctx.warnings));
    }
  }
  flush();
  if (leading.length === 0) return { messages: out };
  const text = leadingText.filter((t) => t !== '').join('\n\n');
  return { messages: out, system: { text, value: leading } };
}

// ----- writing -------------------------------------------------------------------------------
//
// `ctx.native` (`NativeTarget`: `{ id, provider, api, images, previous }`, the lane's model as
// the core's `nativeLanesJson` describes it, and the replacement history of the previous native
// compaction of this provider) makes the input of a provider-native OpenAI lane (spec:
// compaction §13), as the reference's native history has it:
// - the previous history comes first; a message's Responses history replays only when it is
//   this provider's, and an assistant's own history without `dt` replaces what came before;
// - the messages are pi's own (`ctxfold` extras of this format are not read back); user and
//   developer messages are typed `message` items without blank text parts (an empty one is
//   left out): V2's retained messages are picked from them;
// - every assistant message item has an id (its signature's, else `msg_<n>`, n the message's
//   index) and a tool call its item id (pi's `call|item`, else minted), except another model's
//   of the same provider and api; thinking without a reasoning item is left out;
// - a tool result goes only after its call, its images only to a model that reads them (a note
//   in the text otherwise);
// - assistant messages between a call batch and its outputs go before the calls, and
//   output-only `status` fields are dropped.

/**
 * What a provider-native OpenAI lane's input is written for (spec: compaction §13): the lane's
 * model as the core's `nativeLanesJson` describes it, and the replacement history of this
 * provider's previous native compaction (`previous`, replayed first).
 */
export interface NativeTarget {
  id: string;
  provider: string;
  api: string;
  /** Whether the model reads images (else a tool output's images become a note). */
  images: boolean;
  previous: unknown[];
}

/** The write context of this format: a native lane's target besides the common members. */
export interface ResponsesWriteContext extends WriteContext {
  native?: NativeTarget | undefined;
}

/** What the writer of one call keeps between messages. */
interface WriteState {
  out: unknown[];
  warnings: Warnings;
  native: Loose | undefined;
  /** Call ids written so far (their outputs may follow). */
  known: Set<unknown>;
  /** Call ids of freeform calls (their outputs are `custom_tool_call_output`). */
  custom: Set<unknown>;
}

const NO_VISION = '[image omitted: model does not support vision]';

/** A text or image block as an input part of pi's own shape. */
function plainPart(b: Loose): Loose {
  if (b.type === 'text') return { type: 'input_text', text: b.text };
  return { type: 'input_image', detail: 'auto', image_url: dataUrl(b) };
}

/** A user or tool-output block as an input part, or undefined (reported) for a block with none. */
function partOut(b: Loose, warnings: Warnings, index: number, path: string): Loose | undefined {
  const x = extrasOf(b);
  const part = x?.part;
  const shell = x?.shell;
  if (b.type === 'text') {
    if (isObject(part) && partPlaceholder(part) === b.text) return part;
    if (isObject(shell) && shell.type === 'input_text') return fill(shell, 'text', b.text);
    return plainPart(b);
  }
  if (b.type === 'image') {
    if (isObject(shell) && shell.type === 'input_image') return fill(shell, 'image_url', dataUrl(b));
    return plainPart(b);
  }
  warnings.dropped(`a ${b.type} block has no Responses input form`, index, path);
  return undefined;
}

function contentOut(content: unknown, warnings: Warnings, index: number): string | Loose[] {
  if (typeof content === 'string') return content;
  const parts: Loose[] = [];
  // The blocks of a provider message (objects).
  (Array.isArray(content) ? (content as Loose[]) : []).forEach((b, k) => {
    const p = partOut(b, warnings, index, `content[${k}]`);
    if (p !== undefined) parts.push(p);
  });
  return parts;
}

function userOut(m: Loose, w: WriteState, index: number): Loose | undefined {
  if (w.native) {
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const content = (Array.isArray(blocks) ? (blocks as unknown[]) : [])
      .filter((b): b is Loose => isObject(b) && ((b.type === 'text' && !blank(b.text)) || b.type === 'image'))
      .map(plainPart);
    return content.length === 0 ? undefined : { type: 'message', role: m.role, content };
  }
  const x = extrasOf(m);
  const content = contentOut(m.content, w.warnings, index);
  const shell = x?.shell;
  if (isObject(shell)) return fill(shell, 'content', content);
  const role = m.role === 'user' ? 'user' : x?.role === 'system' ? 'system' : 'developer';
  return { role, content };
}

/** An output_text or refusal part of a text block. */
function outputPart(b: Loose, bx: Loose | undefined): Loose {
  const part = bx?.part;
  const shell = isObject(part) ? part : undefined;
  if (shell?.type === 'refusal') return fill(shell, 'refusal', b.text);
  if (shell?.type === 'output_text') return fill(shell, 'text', b.text);
  return { type: 'output_text', text: b.text, annotations: [] };
}

/**
 * The id and phase a text block's signature gives its message item, when it is a Responses
 * one; a native input names every item (`msg_<n>` for the n-th message) and shortens a long id.
 */
function messageIdOf(b: Loose, m: Loose, w: WriteState, index: number, path: string): TextSignature {
  const sig = textSignature(b.textSignature);
  if (sig.id?.startsWith('msg_')) {
    if (sig.id.length <= 64) return sig;
    if (w.native) return { id: `msg_${shortHash(sig.id)}`, phase: sig.phase };
  }
  if (sig.id !== undefined && !w.native)
    w.warnings.dropped(`a text signature of ${m.api ?? 'another provider'} is not a Responses message id`, index, path);
  return w.native ? { id: `msg_${index}` } : {};
}

function toolCallOut(b: Loose, m: Loose, x: Loose | undefined, w: WriteState, index: number, path: string): Loose {
  const item = x?.item;
  const shell = isObject(item) ? item : undefined;
  const given = member(b.arguments, 'input');
  if (shell?.type === 'custom_tool_call') {
    const input = typeof given === 'string' ? given : stringifyArguments(b.arguments);
    return fill(fill(fill(shell, 'call_id', b.id), 'name', b.name), 'input', input);
  }
  if (shell?.type === 'function_call') {
    const text = argumentsText(b.arguments, x?.arguments);
    return fill(fill(fill(shell, 'call_id', b.id), 'name', b.name), 'arguments', text);
  }
  // pi's Responses provider keeps `call_id|item_id`; other providers' ids are a call id only.
  const id = String(b.id ?? '');
  const custom = typeof b.customWireName === 'string';
  const [callId, minted] = splitCallId(id, custom ? 'ctc' : 'fc');
  let itemId: string | undefined;
  const native = w.native;
  if (native) {
    // Another model's item ids are not replayable.
    const otherModel = m.model !== native.id && m.provider === native.provider && m.api === native.api;
    itemId = otherModel ? undefined : minted;
  } else {
    const sep = id.search(/[\n|]/);
    const own = sep > 0 && RESPONSES_APIS.includes(m.api) ? id.slice(sep + 1) : undefined;
    if (own !== undefined && own.length <= 64 && (custom ? own.startsWith('ctc_') : /^fcr?_/.test(own))) itemId = own;
    if (typeof b.thoughtSignature === 'string' && b.thoughtSignature !== '' && !RESPONSES_APIS.includes(m.api))
      w.warnings.dropped(`a ${m.api ?? 'provider'} tool-call signature has no Responses form`, index, path);
  }
  if (custom) {
    const input = typeof given === 'string' ? given : '';
    const call: Loose = { type: 'custom_tool_call', call_id: callId, name: b.customWireName, input };
    if (itemId !== undefined) call.id = itemId;
    return call;
  }
  const call: Loose = { type: 'function_call', call_id: callId, name: b.name, arguments: argumentsText(b.arguments) };
  if (itemId !== undefined) call.id = itemId;
  return call;
}

/** A reasoning item a thinking signature holds (pi's Responses provider signs with the item), or undefined. */
function reasoningItemOf(signature: unknown): Loose | undefined {
  if (typeof signature !== 'string' || signature.charCodeAt(0) !== 0x7b) return undefined;
  try {
    const v: unknown = JSON.parse(signature);
    return isObject(v) && v.type === 'reasoning' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The message item text blocks may continue. */
interface OpenItem {
  content: Loose[];
  signature?: unknown;
  foreign: boolean;
}

function assistantOut(m: Loose, w: WriteState, index: number): void {
  const { out, warnings, native } = w;
  /** The message item blocks may continue: `{ content, signature?, foreign }`, or undefined. */
  let open: OpenItem | undefined;
  const push = (item: unknown) => {
    out.push(item);
    open = undefined;
  };
  const textItem = (t: unknown): Loose & { content: Loose[] } => ({
    type: 'message',
    role: 'assistant',
    content: [{ type: 'output_text', text: t, annotations: [] }],
  });
  const content: unknown[] = Array.isArray(m.content) ? m.content : [];
  content.forEach((c, k) => {
    const path = `content[${k}]`;
    const b: Loose = isObject(c) ? c : {};
    // A native input is written from pi's own shapes.
    const bx = native ? undefined : extrasOf(b);
    if (b.type === 'thinking') {
      const item = reasoningItemOf(b.thinkingSignature);
      if (item !== undefined && m.stopReason !== 'error') push(item);
      else if (native) return;
      else if (typeof b.thinking === 'string' && b.thinking.trim() !== '') {
        warnings.converted('thinking without a Responses reasoning item is sent as text', index, path);
        push(textItem(b.thinking));
      } else if (b.thinkingSignature)
        warnings.dropped('signed thinking without text has no Responses form', index, path);
    } else if (b.type === 'text') {
      if (native && blank(b.text)) return;
      const other = bx?.other;
      if (isObject(other)) {
        push(itemPlaceholder(other) === b.text ? other : textItem(b.text));
        return;
      }
      const continued = open;
      if (bx?.cont && continued !== undefined && !continued.foreign) {
        continued.content.push(outputPart(b, bx));
        return;
      }
      const kept = bx?.item;
      if (isObject(kept)) {
        let c: unknown;
        if (bx?.form === 'string') c = b.text;
        else if (bx?.empty && b.text === '') c = [];
        else c = [outputPart(b, bx)];
        push(fill(kept, 'content', c));
        if (Array.isArray(c)) open = { content: c, foreign: false };
        return;
      }
      // Another format's text: consecutive blocks of one signature are one message item.
      if (continued?.foreign && continued.signature === b.textSignature) {
        continued.content.push(outputPart(b, bx));
        return;
      }
      const item = textItem(b.text);
      const { id, phase } = messageIdOf(b, m, w, index, path);
      if (id !== undefined) item.id = id;
      if (phase !== undefined) item.phase = phase;
      push(item);
      open = { content: item.content, signature: b.textSignature, foreign: true };
    } else if (b.type === 'toolCall') push(toolCallOut(b, m, bx, w, index, path));
    else if (native) return;
    else if (b.type === 'redactedThinking') warnings.dropped('redacted thinking has no Responses form', index, path);
    else warnings.dropped(`an assistant ${b.type} block has no Responses form`, index, path);
  });
}

/** A native tool output: the text, with the images for a model that reads them (else a note). */
function nativeOutput(blocks: readonly unknown[], images: unknown): string | Loose[] {
  const parts = blocks.filter(isObject);
  const text = parts
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
  if (!parts.some((b) => b.type === 'image')) return text;
  if (images) return parts.filter((b) => b.type === 'image' || b.type === 'text').map(plainPart);
  return text === '' ? NO_VISION : `${text}\n${NO_VISION}`;
}

function toolResultOut(m: Loose, w: WriteState, index: number): Loose | undefined {
  const { warnings, native } = w;
  const blocks: unknown[] = Array.isArray(m.content) ? m.content : [];
  const [callId] = splitCallId(String(m.toolCallId ?? ''));
  const type = w.custom.has(callId) ? 'custom_tool_call_output' : 'function_call_output';
  if (native)
    return w.known.has(callId) ? { type, call_id: callId, output: nativeOutput(blocks, native.images) } : undefined;
  const x = extrasOf(m);
  let output: string | Loose[];
  if (x?.form === 'parts' || (x?.form !== 'string' && blocks.some((b) => member(b, 'type') === 'image'))) {
    output = contentOut(blocks, warnings, index);
  } else {
    const texts: unknown[] = [];
    blocks.forEach((b, k) => {
      if (member(b, 'type') === 'text') texts.push(member(b, 'text'));
      else
        warnings.dropped(`a tool-result ${member(b, 'type')} block has no Responses form here`, index, `content[${k}]`);
    });
    output = texts.join('\n');
  }
  if (m.isError === true && x === undefined)
    warnings.converted('a function_call_output has no error flag: a failed result is sent as its text', index);
  const shell = x?.shell;
  if (isObject(shell)) {
    // Read from this format: the item's own call_id, also where the result names a call of
    // pi's `call_id|item_id` form.
    const own = shell.call_id;
    const wire = typeof own === 'string' && String(m.toolCallId).startsWith(`${own}|`) ? own : m.toolCallId;
    return fill(fill(shell, 'call_id', wire), 'output', output);
  }
  return { type, call_id: callId, output };
}

/**
 * The replayable Responses history a message carries (a native compaction, or a provider's
 * own history): `{ items, extends }`, or undefined. (A native lane's messages come from the
 * core with only its provider's histories: `nativeMessagesJson`.)
 */
function replayOf(m: Loose): { items: Loose[]; extends: boolean } | undefined {
  const p = m.providerPayload;
  if (!isObject(p) || p.type !== 'openaiResponsesHistory' || !Array.isArray(p.items)) return undefined;
  const items: unknown[] = p.items;
  return { items: items.filter(isObject), extends: p.dt === true };
}

/** The system prompt: `{ items }` to open the input, or `{ instructions }`. */
function systemOut(
  system: StoredSystem | undefined,
  warnings: Warnings,
): { items?: readonly unknown[]; instructions?: string } {
  if (!isObject(system)) return {};
  const value = system.value;
  if (system.format === name && Array.isArray(value)) return { items: value };
  if (system.format === name && typeof value === 'string') return { instructions: value };
  if (typeof system.text !== 'string' || system.text === '') return {};
  if (typeof value !== 'string')
    warnings.converted(`the system prompt (of the ${system.format ?? 'pi'} format) is sent as its text`);
  return { instructions: system.text };
}

/** Notes the calls among `items` (their outputs may follow; a freeform call's is `custom_tool_call_output`). */
function noteCalls(w: WriteState, items: readonly unknown[]): void {
  for (const i of items) {
    if (!isObject(i) || (i.type !== 'function_call' && i.type !== 'custom_tool_call')) continue;
    w.known.add(i.call_id);
    if (i.type === 'custom_tool_call') w.custom.add(i.call_id);
  }
}

const CALLS: readonly unknown[] = ['function_call', 'custom_tool_call'];
const OUTPUTS: readonly unknown[] = ['function_call_output', 'custom_tool_call_output'];
const batchKind = (i: unknown): 'call' | 'output' | 'message' | 'other' => {
  const type = member(i, 'type');
  if (CALLS.includes(type)) return 'call';
  if (OUTPUTS.includes(type)) return 'output';
  return type === 'message' && member(i, 'role') === 'assistant' ? 'message' : 'other';
};

/** `items` with the assistant messages between a call batch and its outputs moved before the calls. */
function hoistBatchMessages(items: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  let run: unknown[] = [];
  let calls = false;
  const flush = (hoist: boolean) => {
    if (hoist)
      out.push(...run.filter((i) => batchKind(i) === 'message'), ...run.filter((i) => batchKind(i) === 'call'));
    else out.push(...run);
    run = [];
    calls = false;
  };
  for (const item of items) {
    const kind = batchKind(item);
    if (kind === 'call' || kind === 'message') {
      run.push(item);
      calls ||= kind === 'call';
      continue;
    }
    flush(kind === 'output' && calls);
    out.push(item);
  }
  flush(false);
  return out;
}

/** Output-only `status` fields, which an input refuses, dropped. */
const STATUSLESS: readonly unknown[] = [
  'message',
  'function_call',
  'custom_tool_call',
  'compaction',
  'compaction_summary',
];
function withoutStatuses(items: readonly unknown[]): unknown[] {
  return items.map((i) => {
    if (!isObject(i) || !STATUSLESS.includes(i.type) || !Object.hasOwn(i, 'status')) return i;
    const { status: _status, ...rest } = i;
    return rest;
  });
}

/** The LLM view → `{ messages: input items, system?: instructions }` (`ctx.native`: a native lane's input, above). */
export function write(
  llm: readonly unknown[],
  ctx: ResponsesWriteContext,
): WriteResult<ResponsesInputItemOut, ResponsesSystem> {
  const warnings = ctx.warnings;
  const native = isObject(ctx.native) ? ctx.native : undefined;
  const system = native ? {} : systemOut(ctx.system, warnings);
  const previous: readonly unknown[] = native && Array.isArray(native.previous) ? native.previous : [];
  const w: WriteState = {
    out: [...(system.items ?? []), ...previous],
    warnings,
    native,
    known: new Set(),
    custom: new Set(),
  };
  noteCalls(w, w.out);
  llm.forEach((message, index) => {
    const m: Loose = isObject(message) ? message : {};
    const replay = replayOf(m);
    if (replay !== undefined) {
      if (native && m.role === 'assistant' && !replay.extends) {
        // The provider's own history of everything so far.
        w.out.length = 0;
        w.known.clear();
        w.custom.clear();
      }
      w.out.push(...replay.items);
      noteCalls(w, replay.items);
      return;
    }
    if (m.providerPayload !== undefined && !native)
      warnings.dropped(
        'a provider-native compaction of another provider has no Responses form: the summary is sent as text',
        index,
      );
    let item: Loose | undefined;
    switch (m.role) {
      case 'user':
      case 'developer':
        item = userOut(m, w, index);
        break;
      case 'assistant': {
        const from = w.out.length;
        assistantOut(m, w, index);
        noteCalls(w, w.out.slice(from));
        break;
      }
      case 'toolResult':
        item = toolResultOut(m, w, index);
        break;
      default:
        if (!native) warnings.dropped(`a ${m.role} message has no Responses form`, index);
    }
    if (item !== undefined) w.out.push(item);
  });
  // Items built member by member as the types above describe (kept members and order included).
  const items = (native ? withoutStatuses(hoistBatchMessages(w.out)) : w.out) as ResponsesInputItemOut[];
  const result: WriteResult<ResponsesInputItemOut, ResponsesSystem> = { messages: items };
  if (system.instructions !== undefined) result.system = system.instructions;
  return result;
}

/**
 * The input items of a provider-native OpenAI lane (spec: compaction §13): the provider
 * messages of a `remote` plan written for `native` (the one Responses writer, `write` with
 * `ctx.native`). What cannot be carried is left out as the native history leaves it out.
 */
export function nativeInput(llm: readonly unknown[], native: NativeTarget): ResponsesInputItemOut[] {
  return write(llm, { warnings: new Warnings(), system: undefined, native }).messages;
}
