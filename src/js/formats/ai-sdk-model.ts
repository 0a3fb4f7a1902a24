// The `ai-sdk-model` format: the AI SDK's `ModelMessage[]` (ai 7: the `messages` of
// `generateText` / `streamText`, what `response.messages` and `convertToModelMessages` give),
// read into AgentMessages and written back from the LLM view. The reader also takes the
// provider-level prompt a language-model middleware sees (`LanguageModelV4Prompt`): the same
// roles, user content always parts, file data always tagged (`{ type: 'data' | 'url' |
// 'reference' | 'text' }`), members that are `undefined` (read as absent).
//
// Reading: leading system messages are the system prompt (kept as they were); a later one is a
// developer message. A user message is a user message: text, images given inline (base64, a
// `data:` URL, bytes) as image blocks, anything else (an image by URL, a PDF, a provider file
// reference, inline text) as a text block that names it. An assistant message is one
// AssistantMessage: text, reasoning (the provider's signature in pi's field, Anthropic's redacted
// reasoning as redactedThinking), tool calls, inline images; the parts pi has no type for
// (provider-executed tool calls and results, approval requests, custom and reasoning-file parts)
// pass through as `aiSdkPart` blocks. Each tool-result of a tool message is a toolResult
// message (its output as text, JSON as its text, error outputs with `isError`, content outputs
// as text and image blocks).
//
// What pi's model has no field for is kept under `ctxfold` (common.js): on a node the reader
// modelled, its `shape`, the node's JSON copy with the modelled members set to null, which the
// writer fills from the block, so members, their order and `providerOptions` come back exactly;
// binary data (Uint8Array, ArrayBuffer) is base64 in the session and `marks` say where to make
// bytes of it again (and where a URL object was). Approval responses, which the model never
// reads, ride on the nearest modelled message.
import type {
  AgentMessage,
  AiSdkPartContent,
  AssistantContent,
  AssistantMessage,
  DeveloperMessage,
  ImageContent,
  JsonObject,
  JsonValue,
  LlmMessage,
  RedactedThinkingContent,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolResultMessage,
  UserMessage,
} from '../core/session.js';
import {
  type Carrying,
  extrasOf as extrasOfFormat,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  type Loose,
  nonEmptyString,
  parseDataUrl,
  putMember,
  RAW_ARGUMENTS,
  type ReadContext,
  requireString,
  systemPromptLength,
  type Warnings,
  type WriteContext,
} from './common.js';

// ----- the messages of this format ---------------------------------------------------------
// The AI SDK's `ModelMessage` (ai 7, from the declarations of @ai-sdk/provider-utils), wide
// enough that its `ModelMessage[]` goes in as it is, and the provider-level prompt of a
// language-model middleware (`LanguageModelV4Prompt` of @ai-sdk/provider: the same roles, file
// data tagged, members that may be `undefined`).

/** A JSON value as the AI SDK types it (object members may be undefined). */
export type AiSdkModelJsonValue =
  | null
  | string
  | number
  | boolean
  | Readonly<AiSdkModelJsonObject>
  | readonly AiSdkModelJsonValue[];
export type AiSdkModelJsonObject = { [key: string]: AiSdkModelJsonValue | undefined };

/** Options for a provider, by its name (`{ anthropic: { cacheControl } }`, `{ openai: { itemId } }`, …). */
export type AiSdkModelProviderOptions = Record<string, AiSdkModelJsonObject>;

/**
 * A URL object (the global `URL`), typed by what the reader uses so that consumers without the
 * DOM or Node types compile.
 */
export interface AiSdkModelUrl {
  readonly href: string;
  toString(): string;
}

/** Inline data: base64 text, bytes (a Node `Buffer` is one) or an ArrayBuffer. */
export type AiSdkModelDataContent = string | Uint8Array | ArrayBuffer;
/** Provider file ids of an uploaded file (`{ openai: 'file-…' }`). */
export type AiSdkModelProviderReference = Record<string, string>;

/** File data as a tagged union (ai 7; always this form in a provider-level prompt). */
export type AiSdkModelFileData =
  | { type: 'data'; data: AiSdkModelDataContent }
  | { type: 'url'; url: AiSdkModelUrl; originalUrl?: string | undefined }
  | { type: 'reference'; reference: AiSdkModelProviderReference }
  | { type: 'text'; text: string };

interface PartBase {
  providerOptions?: AiSdkModelProviderOptions | undefined;
}

export interface AiSdkModelTextPart extends PartBase {
  type: 'text';
  text: string;
}
/** An image (deprecated in ai 7 for a file part with an `image` media type; still accepted). */
export interface AiSdkModelImagePart extends PartBase {
  type: 'image';
  /** Base64 data, a `data:` URL or another URL as text, bytes, a URL object, a provider reference. */
  image: AiSdkModelDataContent | AiSdkModelUrl | AiSdkModelProviderReference;
  mediaType?: string | undefined;
}
export interface AiSdkModelFilePart extends PartBase {
  type: 'file';
  data: AiSdkModelFileData | AiSdkModelDataContent | AiSdkModelUrl | AiSdkModelProviderReference;
  filename?: string | undefined;
  /** `image/png`, `application/pdf`, … or a top-level type such as `image`. */
  mediaType: string;
}
export interface AiSdkModelReasoningPart extends PartBase {
  type: 'reasoning';
  text: string;
}
export interface AiSdkModelReasoningFilePart extends PartBase {
  type: 'reasoning-file';
  data:
    | { type: 'data'; data: AiSdkModelDataContent }
    | { type: 'url'; url: AiSdkModelUrl; originalUrl?: string | undefined }
    | AiSdkModelDataContent
    | AiSdkModelUrl;
  mediaType: string;
}
export interface AiSdkModelCustomPart extends PartBase {
  type: 'custom';
  /** `{provider}.{provider-type}`. */
  kind: string;
}
export interface AiSdkModelToolCallPart extends PartBase {
  type: 'tool-call';
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerExecuted?: boolean | undefined;
}

/** What a tool output's `content` holds (the deprecated item types included). */
export type AiSdkModelToolContentItem = PartBase &
  (
    | { type: 'text'; text: string }
    | { type: 'file'; data: AiSdkModelFileData; mediaType: string; filename?: string | undefined }
    | { type: 'file-data'; data: string; mediaType: string; filename?: string | undefined }
    | { type: 'file-url'; url: string; mediaType?: string | undefined }
    | { type: 'file-id'; fileId: string | Record<string, string> }
    | { type: 'file-reference'; providerReference: AiSdkModelProviderReference }
    | { type: 'image-data'; data: string; mediaType: string }
    | { type: 'image-url'; url: string }
    | { type: 'image-file-id'; fileId: string | Record<string, string> }
    | { type: 'image-file-reference'; providerReference: AiSdkModelProviderReference }
    | { type: 'custom' }
  );

/** A tool's output (`ToolResultOutput`). */
export type AiSdkModelToolResultOutput = PartBase &
  (
    | { type: 'text' | 'error-text'; value: string }
    | { type: 'json' | 'error-json'; value: AiSdkModelJsonValue }
    | { type: 'execution-denied'; reason?: string | undefined }
    | { type: 'content'; value: AiSdkModelToolContentItem[] }
  );

export interface AiSdkModelToolResultPart extends PartBase {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: AiSdkModelToolResultOutput;
}
export interface AiSdkModelToolApprovalRequest {
  type: 'tool-approval-request';
  approvalId: string;
  toolCallId: string;
  reason?: string | undefined;
  isAutomatic?: boolean | undefined;
  signature?: string | undefined;
  inputSchemaInput?: unknown;
}
export interface AiSdkModelToolApprovalResponse extends PartBase {
  type: 'tool-approval-response';
  approvalId: string;
  approved: boolean;
  reason?: string | undefined;
  providerExecuted?: boolean | undefined;
}

export interface AiSdkModelSystemMessage {
  role: 'system';
  content: string;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}
export interface AiSdkModelUserMessage {
  role: 'user';
  content: string | Array<AiSdkModelTextPart | AiSdkModelImagePart | AiSdkModelFilePart>;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}
export interface AiSdkModelAssistantMessage {
  role: 'assistant';
  content:
    | string
    | Array<
        | AiSdkModelTextPart
        | AiSdkModelCustomPart
        | AiSdkModelFilePart
        | AiSdkModelReasoningPart
        | AiSdkModelReasoningFilePart
        | AiSdkModelToolCallPart
        | AiSdkModelToolResultPart
        | AiSdkModelToolApprovalRequest
      >;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}
export interface AiSdkModelToolMessage {
  role: 'tool';
  content: Array<AiSdkModelToolResultPart | AiSdkModelToolApprovalResponse>;
  providerOptions?: AiSdkModelProviderOptions | undefined;
}

/**
 * A ModelMessage. Leading system messages are the system prompt; `toMessages` writes them first
 * in `messages` (ai 7's generateText takes them there with `allowSystemInMessages: true`, or as
 * `instructions`).
 */
export type AiSdkModelMessage =
  | AiSdkModelSystemMessage
  | AiSdkModelUserMessage
  | AiSdkModelAssistantMessage
  | AiSdkModelToolMessage;

/** The system prompt: text, or the system messages it was read as. */
export type AiSdkModelSystem = string | AiSdkModelSystemMessage | AiSdkModelSystemMessage[];

// ----- what this module is given -----------------------------------------------------------

/** The caller's `model` option (`FormatModel`), not checked: its members are read as given. */
interface ModelOption {
  provider?: string;
  api?: string;
  id?: string;
}

/** A part of user-side content: a user message's, or an item of a tool output's `content`. */
type UserSidePart = Exclude<AiSdkModelUserMessage['content'], string>[number] | AiSdkModelToolContentItem;

/** Which member holds what: `[path, 'bytes' | 'buffer' | 'url']` of a JSON copy (`jsonCopy`). */
type Mark = [Array<string | number>, 'bytes' | 'buffer' | 'url'];

/** What the reader keeps of a node: its JSON copy, and the marks of its binary data. */
interface Shape {
  shape: unknown;
  marks?: Mark[];
}

export const name = 'ai-sdk-model';

/** The pass-through block of a part pi has no type for: `{ type, part }` (the part as JSON). */
export const PART_BLOCK: AiSdkPartContent['type'] = 'aiSdkPart';

const ROLES = "'system', 'user', 'assistant' or 'tool'";
const OUTPUT_TYPES = new Set<unknown>(['text', 'json', 'error-text', 'error-json', 'execution-denied', 'content']);
/** What the providers of the AI SDK send for a denied call without a reason. */
const DENIED = 'Tool execution denied.';

// ----- small helpers -------------------------------------------------------------------------

/** An input string as an error message quotes it: in single quotes (not common's JSON text), at most 40 characters. */
const quote = (t: string): string => `'${t.length > 40 ? `${t.slice(0, 40)}…` : t}'`;
const shown = (v: unknown): string => (typeof v === 'string' ? quote(v) : kindOf(v));

const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
const isBuffer = (v: unknown): v is ArrayBuffer => v instanceof ArrayBuffer;
const isUrl = (v: unknown): v is URL => typeof URL === 'function' && v instanceof URL;
const isArray = (v: unknown): v is readonly unknown[] => Array.isArray(v);

/** A member of any object, as JavaScript reads it. */
const member = (node: object, key: PropertyKey): unknown => Reflect.get(node, key);

/** Node.js's Buffer, where there is one (the browser has atob/btoa only). */
interface BufferClass {
  from(data: ArrayBufferLike | string, offsetOrEncoding?: number | string, length?: number): NodeBufferBytes;
}
/** A Node.js Buffer: bytes that write themselves as base64. */
interface NodeBufferBytes extends Uint8Array {
  toString(encoding?: string): string;
}
const nodeBuffer = (): BufferClass | undefined => {
  const b: unknown = Reflect.get(globalThis, 'Buffer');
  return typeof b === 'function' ? (b as unknown as BufferClass) : undefined;
};

function base64Of(bytes: Uint8Array): string {
  const buffer = nodeBuffer();
  if (buffer !== undefined) {
    return buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  }
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function bytesOf(base64: string): Uint8Array<ArrayBuffer> {
  const buffer = nodeBuffer();
  if (buffer !== undefined) return new Uint8Array(buffer.from(base64, 'base64'));
  const s = atob(base64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/**
 * A JSON copy of `value`: bytes as base64, URL objects as their text, `undefined` members left
 * out; `marks` gets `[path, 'bytes' | 'buffer' | 'url']` for each. A member whose dotted path is
 * in `nulls` is copied as null (the writer fills it from the block).
 */
function jsonCopy(
  value: unknown,
  path: Array<string | number>,
  marks: Mark[],
  nulls: ReadonlySet<string> | undefined,
): unknown {
  if (nulls?.has(path.join('.'))) {
    if (isBytes(value)) marks.push([path, 'bytes']);
    else if (isBuffer(value)) marks.push([path, 'buffer']);
    return null;
  }
  if (isBytes(value)) {
    marks.push([path, 'bytes']);
    return base64Of(value);
  }
  if (isBuffer(value)) {
    marks.push([path, 'buffer']);
    return base64Of(new Uint8Array(value));
  }
  if (isUrl(value)) {
    marks.push([path, 'url']);
    return value.href;
  }
  if (isArray(value)) return value.map((v, i) => jsonCopy(v, [...path, i], marks, nulls));
  if (value !== null && typeof value === 'object') {
    const o = {};
    for (const k of Object.keys(value)) {
      if (member(value, k) !== undefined) putMember(o, k, jsonCopy(member(value, k), [...path, k], marks, nulls));
    }
    return o;
  }
  return value;
}

/** Kept extras `{ shape, marks? }` of a node, its modelled members (dotted paths) nulled. */
function shapeOf(node: object, modelled: readonly string[]): Shape {
  const marks: Mark[] = [];
  const shape = jsonCopy(node, [], marks, new Set(modelled));
  return marks.length === 0 ? { shape } : { shape, marks };
}

/** Whether `node`'s members are `keys`, in that order (what a writer rebuilds without a shape). */
function exactly(node: object, keys: readonly string[]): boolean {
  const own = Object.keys(node);
  return own.length === keys.length && own.every((k, j) => k === keys[j] && member(node, k) !== undefined);
}

/** Makes bytes and URL objects again where `marks` say they were (in place); returns `node`. */
function thaw<T>(node: T, marks: unknown): T {
  if (!isArray(marks)) return node;
  // The reader's marks: `[path, kind]` pairs.
  for (const [path, kind] of marks as Iterable<[unknown, unknown]>) {
    if (!isArray(path) || path.length === 0) continue;
    let parent: unknown = node;
    for (let i = 0; i < path.length - 1 && parent !== null && typeof parent === 'object'; i++)
      parent = member(parent, path[i] as PropertyKey);
    const key = path.at(-1) as PropertyKey;
    const v = parent === null || parent === undefined ? undefined : member(Object(parent), key);
    if (typeof v !== 'string') continue;
    // `v` was read from it: an object.
    const holder = parent as object;
    if (kind === 'bytes') Reflect.set(holder, key, bytesOf(v));
    else if (kind === 'buffer') Reflect.set(holder, key, bytesOf(v).buffer);
    else if (kind === 'url') {
      try {
        Reflect.set(holder, key, new URL(v));
      } catch {
        // kept as its text
      }
    }
  }
  return node;
}

/**
 * `keepExtras` of this format, added to the extras `node` already has (a message gathers
 * `lead`, `trail`, … over several calls).
 */
const keep = <T extends object>(node: T, members: Loose): T & Carrying => {
  // `ctxfold` of a node this reader made: its own extras, or none yet.
  const kept = member(node, 'ctxfold');
  return keepExtras(node, name, members, isObject(kept) ? kept : undefined);
};

// ----- checks --------------------------------------------------------------------------------

function need(cond: boolean, index: number, field: string, detail: string): asserts cond {
  if (!cond) throw invalidMessage(index, field, detail);
}

function optString(node: Loose, key: string, index: number, at: string): void {
  if (node[key] !== undefined) requireString(node[key], index, `${at}${key}`);
}

function optBoolean(node: Loose, key: string, index: number, at: string): void {
  const v = node[key];
  need(v === undefined || typeof v === 'boolean', index, `${at}${key}`, `must be a boolean, got ${kindOf(v)}`);
}

/** `requireObject` of common.js that also refuses bytes, an ArrayBuffer and a URL object. */
function requireRecord(v: unknown, index: number, field: string): Loose {
  need(isObject(v) && !isBytes(v) && !isBuffer(v) && !isUrl(v), index, field, `must be an object, got ${kindOf(v)}`);
  return v;
}

/** `providerOptions`: provider name → an object of options. */
function checkProviderOptions(node: Loose, index: number, at: string): void {
  const v = node.providerOptions;
  if (v === undefined) return;
  const options = requireRecord(v, index, `${at}providerOptions`);
  for (const [k, o] of Object.entries(options)) {
    if (o !== undefined) requireRecord(o, index, `${at}providerOptions.${k}`);
  }
}

function checkReference(v: unknown, index: number, field: string): void {
  const ref = requireRecord(v, index, field);
  for (const [k, x] of Object.entries(ref)) requireString(x, index, `${field}.${k}`);
}

/** Inline data: a base64 string, bytes or an ArrayBuffer. */
const isInline = (v: unknown): v is string | Uint8Array | ArrayBuffer =>
  typeof v === 'string' || isBytes(v) || isBuffer(v);

/** The tags of tagged file data. */
type Tag = 'data' | 'url' | 'reference' | 'text';

/** Tagged file data (`{ type: 'data' | 'url' | 'reference' | 'text' }`); `kinds` limits the tags. */
function checkTagged(v: Loose, index: number, field: string, kinds: readonly unknown[]): void {
  const type = v.type;
  need(
    kinds.includes(type),
    index,
    `${field}.type`,
    `must be ${kinds.map((k) => `'${k}'`).join(', ')}, got ${shown(type)}`,
  );
  if (type === 'data')
    need(isInline(v.data), index, `${field}.data`, `must be base64 text or bytes, got ${kindOf(v.data)}`);
  else if (type === 'url') {
    need(isUrl(v.url), index, `${field}.url`, `must be a URL object, got ${kindOf(v.url)}`);
    optString(v, 'originalUrl', index, `${field}.`);
  } else if (type === 'reference') checkReference(v.reference, index, `${field}.reference`);
  else requireString(v.text, index, `${field}.text`);
}

const TAGS: readonly Tag[] = ['data', 'url', 'reference', 'text'];
const isTag = (v: unknown): boolean => (TAGS as readonly unknown[]).includes(v);

/** A file part's `data` (or an image part's `image`): tagged or a bare shorthand. */
function checkData(v: unknown, index: number, field: string, kinds: readonly Tag[] = TAGS): void {
  if (isInline(v) || isUrl(v)) return;
  need(isObject(v), index, field, `must be file data, got ${kindOf(v)}`);
  if (isTag(v.type)) checkTagged(v, index, field, kinds);
  else if (kinds.includes('reference')) checkReference(v, index, field);
  else throw invalidMessage(index, `${field}.type`, `must be ${kinds.map((k) => `'${k}'`).join(' or ')}`);
}

/** A part's object, checked, and its `type`. */
function checkPartHead(p: unknown, index: number, at: string): [Loose, string] {
  const part = requireRecord(p, index, at);
  const type = requireString(part.type, index, `${at}.type`);
  checkProviderOptions(part, index, `${at}.`);
  return [part, type];
}

function checkFile(p: Loose, index: number, at: string, kinds: readonly Tag[]): void {
  need('data' in p && p.data !== undefined, index, `${at}.data`, 'is required');
  checkData(p.data, index, `${at}.data`, kinds);
  requireString(p.mediaType, index, `${at}.mediaType`);
  optString(p, 'filename', index, `${at}.`);
}

/** A tool output (`ToolResultOutput`). */
function checkOutput(v: unknown, index: number, at: string): void {
  const o = requireRecord(v, index, at);
  const type = o.type;
  need(OUTPUT_TYPES.has(type), index, `${at}.type`, `must be a tool output type, got ${shown(type)}`);
  checkProviderOptions(o, index, `${at}.`);
  if (type === 'text' || type === 'error-text') requireString(o.value, index, `${at}.value`);
  else if (type === 'json' || type === 'error-json') need('value' in o, index, `${at}.value`, 'is required');
  else if (type === 'execution-denied') optString(o, 'reason', index, `${at}.`);
  else {
    const items = o.value;
    need(isArray(items), index, `${at}.value`, `must be an array, got ${kindOf(items)}`);
    items.forEach((c, k) => {
      checkOutputItem(c, index, `${at}.value[${k}]`);
    });
  }
}

function checkOutputItem(item: unknown, index: number, at: string): void {
  const [c, type] = checkPartHead(item, index, at);
  switch (type) {
    case 'text':
      requireString(c.text, index, `${at}.text`);
      return;
    case 'file':
      need(isObject(c.data), index, `${at}.data`, `must be tagged file data, got ${kindOf(c.data)}`);
      checkTagged(c.data, index, `${at}.data`, TAGS);
      requireString(c.mediaType, index, `${at}.mediaType`);
      optString(c, 'filename', index, `${at}.`);
      return;
    case 'file-data':
    case 'image-data':
      requireString(c.data, index, `${at}.data`);
      requireString(c.mediaType, index, `${at}.mediaType`);
      optString(c, 'filename', index, `${at}.`);
      return;
    case 'file-url':
      requireString(c.url, index, `${at}.url`);
      optString(c, 'mediaType', index, `${at}.`);
      return;
    case 'image-url':
      requireString(c.url, index, `${at}.url`);
      return;
    case 'file-id':
    case 'image-file-id':
      if (typeof c.fileId !== 'string') checkReference(c.fileId, index, `${at}.fileId`);
      return;
    case 'file-reference':
    case 'image-file-reference':
      checkReference(c.providerReference, index, `${at}.providerReference`);
      return;
    case 'custom':
      return;
    default:
      throw invalidMessage(index, `${at}.type`, `${quote(type)} is no tool output content`);
  }
}

function checkToolCall(p: Loose, index: number, at: string): void {
  requireString(p.toolCallId, index, `${at}.toolCallId`);
  requireString(p.toolName, index, `${at}.toolName`);
  need('input' in p, index, `${at}.input`, 'is required');
  optBoolean(p, 'providerExecuted', index, `${at}.`);
}

function checkToolResult(p: Loose, index: number, at: string): void {
  requireString(p.toolCallId, index, `${at}.toolCallId`);
  requireString(p.toolName, index, `${at}.toolName`);
  checkOutput(p.output, index, `${at}.output`);
}

function checkApprovalRequest(p: Loose, index: number, at: string): void {
  requireString(p.approvalId, index, `${at}.approvalId`);
  requireString(p.toolCallId, index, `${at}.toolCallId`);
  optString(p, 'reason', index, `${at}.`);
  optBoolean(p, 'isAutomatic', index, `${at}.`);
  optString(p, 'signature', index, `${at}.`);
}

function checkApprovalResponse(p: Loose, index: number, at: string): void {
  requireString(p.approvalId, index, `${at}.approvalId`);
  need(typeof p.approved === 'boolean', index, `${at}.approved`, `must be a boolean, got ${kindOf(p.approved)}`);
  optString(p, 'reason', index, `${at}.`);
  optBoolean(p, 'providerExecuted', index, `${at}.`);
}

/** Throws E_INVALID_MESSAGE unless `p` is a part of a `role` message. */
function checkPart(part: unknown, role: string, index: number, at: string): void {
  const [p, type] = checkPartHead(part, index, at);
  if (type === 'text' && role !== 'tool') {
    requireString(p.text, index, `${at}.text`);
    return;
  }
  if (role === 'user' && type === 'image') {
    need(p.image !== undefined, index, `${at}.image`, 'is required');
    if (!isInline(p.image) && !isUrl(p.image)) checkReference(p.image, index, `${at}.image`);
    optString(p, 'mediaType', index, `${at}.`);
    return;
  }
  if (type === 'file' && role !== 'tool') {
    checkFile(p, index, at, TAGS);
    return;
  }
  if (role === 'assistant') {
    switch (type) {
      case 'reasoning':
        requireString(p.text, index, `${at}.text`);
        return;
      case 'reasoning-file':
        checkFile(p, index, at, ['data', 'url']);
        return;
      case 'custom':
        requireString(p.kind, index, `${at}.kind`);
        return;
      case 'tool-call':
        checkToolCall(p, index, at);
        return;
      case 'tool-result':
        checkToolResult(p, index, at);
        return;
      case 'tool-approval-request':
        checkApprovalRequest(p, index, at);
        return;
      default:
    }
  }
  if (role === 'tool') {
    if (type === 'tool-result') {
      checkToolResult(p, index, at);
      return;
    }
    if (type === 'tool-approval-response') {
      checkApprovalResponse(p, index, at);
      return;
    }
  }
  throw invalidMessage(index, `${at}.type`, `${quote(type)} is no ${role} message part`);
}

/**
 * Throws E_INVALID_MESSAGE unless `m` is a ModelMessage (or a message of a provider-level
 * prompt): its role, and each part as that role takes it. What is not checked (tool inputs,
 * JSON outputs, custom parts' data) is `unknown` in the message types too.
 */
function checkMessage(v: unknown, index: number): asserts v is AiSdkModelMessage {
  const m = requireRecord(v, index, '');
  const { role } = m;
  need(
    role === 'system' || role === 'user' || role === 'assistant' || role === 'tool',
    index,
    'role',
    `must be ${ROLES}, got ${shown(role)}`,
  );
  checkProviderOptions(m, index, '');
  const c = m.content;
  if (role === 'system') {
    requireString(c, index, 'content');
    return;
  }
  if (typeof c === 'string' && role !== 'tool') return;
  need(
    isArray(c),
    index,
    'content',
    `must be ${role === 'tool' ? 'an array' : 'a string or an array'}, got ${kindOf(c)}`,
  );
  for (let j = 0; j < c.length; j++) checkPart(c[j], role, index, `content[${j}]`);
}

// ----- reading: data --------------------------------------------------------------------------

/** Byte signatures of the image types the providers read (the SDK detects the same). */
const IMAGE_SIGNATURES: ReadonlyArray<readonly [string, readonly number[]]> = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
  ['image/bmp', [0x42, 0x4d]],
  ['image/tiff', [0x49, 0x49, 0x2a, 0x00]],
  ['image/tiff', [0x4d, 0x4d, 0x00, 0x2a]],
];

/** The image type base64 data starts with, or undefined. */
function detectImage(base64: string): string | undefined {
  let head: string;
  try {
    head = atob(base64.slice(0, 16));
  } catch {
    return undefined;
  }
  const at = (i: number) => head.charCodeAt(i);
  if (head.startsWith('RIFF') && head.slice(8, 12) === 'WEBP') return 'image/webp';
  for (const [type, sig] of IMAGE_SIGNATURES) if (sig.every((b, i) => at(i) === b)) return type;
  return undefined;
}

const fullImageType = (t: unknown): t is string => typeof t === 'string' && t.startsWith('image/') && t !== 'image/*';

/** Whether a string is a URL as the SDK reads one (it tries `new URL(text)`), without parsing 50 MB. */
function looksLikeUrl(s: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(s.slice(0, 64))) return false;
  if (s.startsWith('data:')) return true;
  try {
    new URL(s);
    return true;
  } catch {
    return false;
  }
}

/** An inline image a part holds (`inlineImage`). */
interface InlineImage {
  data: string;
  mimeType: string;
  /** The member (under the part) that holds the payload, as a dotted path. */
  path: string;
  /** A data URL's own type. */
  dataUrl?: string | undefined;
}

/**
 * The inline image `value` holds (a file part's `data`, an image part's `image`), as
 * `{ data, mimeType, path, dataUrl? }`: `path` the member (under the part) that holds the payload,
 * or undefined for what is not an inline image (a URL, a reference, inline text, a non-image).
 */
function inlineImage(value: unknown, key: string, mediaType: string | undefined): InlineImage | undefined {
  let payload = value;
  const path = [key];
  if (isObject(value) && !isBytes(value) && !isBuffer(value) && !isUrl(value)) {
    if (value.type !== 'data') return undefined;
    payload = value.data;
    path.push('data');
  }
  let data: string;
  let fromUrl: string | undefined;
  if (isBytes(payload)) data = base64Of(payload);
  else if (isBuffer(payload)) data = base64Of(new Uint8Array(payload));
  else if (typeof payload === 'string') {
    if (path.length === 1 && looksLikeUrl(payload)) {
      const parsed = parseDataUrl(payload);
      if (parsed === undefined) return undefined;
      data = parsed.data;
      fromUrl = parsed.mimeType;
    } else data = payload;
  } else return undefined;
  const top = mediaType === undefined || mediaType === 'image' || mediaType === 'image/*';
  if (!top && !fullImageType(mediaType)) return undefined;
  const mimeType = fullImageType(mediaType) ? mediaType : fullImageType(fromUrl) ? fromUrl : detectImage(data);
  if (mimeType === undefined) return undefined;
  return { data, mimeType, path: path.join('.'), dataUrl: fromUrl === undefined ? undefined : fromUrl };
}

/** An image block of an inline image part, keeping the part's shape when it is not `{type, image|data, mediaType}` as written. */
function imageBlock(part: object, img: InlineImage): ImageContent & Carrying {
  const block: ImageContent = { type: 'image', data: img.data, mimeType: img.mimeType };
  const kept = shapeOf(part, [img.path]);
  // A data URL's own type, when it is not the block's.
  return keep(block, { ...kept, dataUrl: img.dataUrl === undefined ? undefined : img.dataUrl });
}

/** The text of the place a file is at: its URL, its provider ids, or "inline data". */
function whereOf(data: unknown): string {
  if (typeof data === 'string') return looksLikeUrl(data) && !data.startsWith('data:') ? data : 'inline data';
  if (!isObject(data)) return 'inline data';
  switch (data.type) {
    case 'url':
      return typeof data.url === 'string' ? data.url : 'a URL';
    case 'reference':
      return refText(data.reference);
    case 'text':
    case 'data':
      return 'inline data';
    default:
      return refText(data);
  }
}

const refText = (ref: unknown): string =>
  isObject(ref)
    ? Object.entries(ref)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')
    : 'a provider file';

/**
 * What other formats read for a part pi has no block for (from its JSON shape): what it is and
 * where it is, and the text of inline text.
 */
function describe(p: unknown): string {
  if (!isObject(p)) return '[file]';
  switch (p.type) {
    case 'image':
      return `[image: ${whereOf(p.image)}${p.mediaType === undefined ? '' : `, ${p.mediaType}`}]`;
    case 'file': {
      const head = `[file: ${p.filename ?? whereOf(p.data)}, ${p.mediaType}]`;
      return isObject(p.data) && p.data.type === 'text' && typeof p.data.text === 'string'
        ? `${head}\n${p.data.text}`
        : head;
    }
    case 'file-url':
      return `[file: ${p.url}${p.mediaType === undefined ? '' : `, ${p.mediaType}`}]`;
    case 'image-url':
      return `[image: ${p.url}]`;
    case 'file-data':
      return `[file: ${p.filename ?? 'inline data'}, ${p.mediaType}]`;
    case 'image-data':
      return `[image: inline data, ${p.mediaType}]`;
    case 'file-id':
    case 'image-file-id':
      return `[${p.type === 'file-id' ? 'file' : 'image'}: ${typeof p.fileId === 'string' ? p.fileId : refText(p.fileId)}]`;
    case 'file-reference':
    case 'image-file-reference':
      return `[${p.type === 'file-reference' ? 'file' : 'image'}: ${refText(p.providerReference)}]`;
    case 'custom':
      return '[custom content]';
    default:
      return `[${p.type}]`;
  }
}

/** A part pi has no block for, as a text block that describes it and keeps it whole. */
function described(part: object): TextContent & Carrying {
  const kept = shapeOf(part, []);
  return keep<TextContent>({ type: 'text', text: describe(kept.shape) }, { ...kept, described: true });
}

function textBlock(part: { type: 'text'; text: string }, signature?: string): TextContent & Carrying {
  const block: TextContent = { type: 'text', text: part.text };
  if (signature !== undefined) block.textSignature = signature;
  if (exactly(part, ['type', 'text'])) return block;
  return keep(block, { ...shapeOf(part, ['text']) });
}

/** A user-side part (user message, tool output content) as a text or image block. */
function userBlock(part: UserSidePart): (TextContent | ImageContent) & Carrying {
  if (part.type === 'text') return textBlock(part);
  if (part.type === 'image' || part.type === 'file') {
    const img =
      part.type === 'image'
        ? inlineImage(part.image, 'image', part.mediaType)
        : inlineImage(part.data, 'data', part.mediaType);
    return img === undefined ? described(part) : imageBlock(part, img);
  }
  if (part.type === 'image-data' || (part.type === 'file-data' && fullImageType(part.mediaType))) {
    return imageBlock(part, { data: part.data, mimeType: part.mediaType, path: 'data' });
  }
  return described(part);
}

// ----- reading: provider metadata --------------------------------------------------------------

/** The provider a part's options speak for, as a pi model (api, provider). */
function providerOf(options: unknown): { api: string; provider: string } | undefined {
  if (!isObject(options)) return undefined;
  if (isObject(options.anthropic)) return { api: 'anthropic-messages', provider: 'anthropic' };
  if (isObject(options.openai)) return { api: 'openai-responses', provider: 'openai' };
  if (isObject(options.google)) return { api: 'google-generative-ai', provider: 'google' };
  if (isObject(options.vertex)) return { api: 'google-vertex', provider: 'google-vertex' };
  return undefined;
}

/** The pi-ai api a provider name speaks by default in the AI SDK. */
const API_OF: Readonly<Record<string, string>> = {
  anthropic: 'anthropic-messages',
  openai: 'openai-responses',
  google: 'google-generative-ai',
  'google-vertex': 'google-vertex',
  vertex: 'google-vertex',
};

const googleSignature = (o: unknown): string | undefined => {
  const options = isObject(o) ? o : undefined;
  const g = isObject(options?.google) ? options.google : isObject(options?.vertex) ? options.vertex : undefined;
  return typeof g?.thoughtSignature === 'string' ? g.thoughtSignature : undefined;
};

/** pi's text signature of a text part: an OpenAI message item id (`{v, id, phase}`), a Gemini thought signature. */
function textSignatureOf(options: unknown): string | undefined {
  const openai = isObject(options) && isObject(options.openai) ? options.openai : undefined;
  if (typeof openai?.itemId === 'string') {
    const s: { v: number; id: string; phase?: string } = { v: 1, id: openai.itemId };
    if (openai.phase === 'commentary' || openai.phase === 'final_answer') s.phase = openai.phase;
    return JSON.stringify(s);
  }
  return googleSignature(options);
}

function reasoningBlock(part: AiSdkModelReasoningPart): AssistantContent & Carrying {
  const o: unknown = part.providerOptions;
  const options = isObject(o) ? o : undefined;
  const anthropic = isObject(options?.anthropic) ? options.anthropic : undefined;
  if (typeof anthropic?.redactedData === 'string') {
    return keep<RedactedThinkingContent>(
      { type: 'redactedThinking', data: anthropic.redactedData },
      { ...shapeOf(part, []) },
    );
  }
  const block: ThinkingContent = { type: 'thinking', thinking: part.text };
  const openai = isObject(options?.openai) ? options.openai : undefined;
  if (typeof anthropic?.signature === 'string') block.thinkingSignature = anthropic.signature;
  else if (typeof openai?.itemId === 'string') {
    // pi keeps an OpenAI reasoning item whole as the signature (the Responses reader's convention).
    const item: Loose = {
      type: 'reasoning',
      id: openai.itemId,
      summary: part.text === '' ? [] : [{ type: 'summary_text', text: part.text }],
    };
    if (typeof openai.reasoningEncryptedContent === 'string') item.encrypted_content = openai.reasoningEncryptedContent;
    block.thinkingSignature = JSON.stringify(item);
  } else {
    const google = googleSignature(o);
    if (google !== undefined) block.thinkingSignature = google;
  }
  if (exactly(part, ['type', 'text'])) return block;
  return keep(block, { ...shapeOf(part, ['text']) });
}

function toolCallBlock(part: AiSdkModelToolCallPart): ToolCall & Carrying {
  const { input } = part;
  const plain = isObject(input) && !isBytes(input) && !isUrl(input);
  const block: ToolCall = {
    type: 'toolCall',
    id: part.toolCallId,
    name: part.toolName,
    // The input as the SDK gave it: a JSON object of the call's arguments.
    arguments: plain ? (input as JsonObject) : typeof input === 'string' ? { [RAW_ARGUMENTS]: input } : {},
  };
  const o: unknown = part.providerOptions;
  const openai = isObject(o) && isObject(o.openai) ? o.openai : undefined;
  if (typeof openai?.itemId === 'string') block.thoughtSignature = openai.itemId;
  else {
    const google = googleSignature(o);
    if (google !== undefined) block.thoughtSignature = google;
  }
  const modelled = ['toolCallId', 'toolName'];
  if (plain || typeof input === 'string') modelled.push('input');
  if (plain && exactly(part, ['type', 'toolCallId', 'toolName', 'input'])) return block;
  return keep(block, { ...shapeOf(part, modelled), input: typeof input === 'string' ? 'text' : undefined });
}

/** A part pi has no block for, passed through as it is (JSON). */
function passThrough(part: object): AiSdkPartContent & Carrying {
  const kept = shapeOf(part, []);
  // `shape` is the JSON copy of the part.
  return keep<AiSdkPartContent>({ type: PART_BLOCK, part: kept.shape as JsonValue }, { marks: kept.marks });
}

// ----- reading: messages ----------------------------------------------------------------------

/** A message the reader writes. */
type ReadMessage = AgentMessage & Carrying;

/** A tool message the model reads nothing of, waiting to ride on a modelled message. */
interface Waiting extends Shape {
  parts: Array<[number, Shape]>;
}

/** The state of one read: the calls of this batch, the output, the kept parts waiting for a message. */
class Reader {
  out: ReadMessage[] = [];
  /** Tool-call id → name, of this batch's modelled calls. */
  calls = new Map<string, string>();
  /** This batch's calls still without a result: id → the index of their message. */
  open = new Map<string, number>();
  /** Ids of provider-executed calls of this batch. */
  executed = new Set<string>();
  /** Tool messages with no modelled result, waiting to ride on the next message. */
  waiting: Waiting[] = [];
  ctx: ReadContext;
  api: string | undefined;
  provider: string | undefined;
  modelId: string | undefined;

  constructor(ctx: ReadContext) {
    this.ctx = ctx;
    const m = ctx?.model as ModelOption | undefined;
    const provider = m?.provider ?? '';
    this.api = nonEmptyString(m?.api) ?? (Object.hasOwn(API_OF, provider) ? API_OF[provider] : undefined);
    this.provider = nonEmptyString(m?.provider);
    this.modelId = nonEmptyString(m?.id);
  }

  push(msg: ReadMessage): void {
    if (this.waiting.length > 0) {
      const x = msg.ctxfold;
      const lead = isObject(x) && isArray(x.lead) ? x.lead : [];
      keep(msg, { lead: [...this.waiting, ...lead] });
      this.waiting = [];
    }
    this.out.push(msg);
  }

  /** The end of the batch: tool messages still waiting ride on the last message (or on an empty one). */
  finish(): void {
    if (this.waiting.length === 0) return;
    let last = this.out.at(-1);
    if (last === undefined) {
      last = keep<AssistantMessage>({ role: 'assistant', content: [], stopReason: 'stop' }, { carrier: true });
      this.ctx.warnings.converted(
        'tool messages with approval responses only are kept on an empty assistant message (the model reads no such responses)',
        0,
      );
      this.out.push(last);
    }
    const x = last.ctxfold;
    const trail = isObject(x) && isArray(x.trail) ? x.trail : [];
    keep(last, { trail: [...trail, ...this.waiting] });
    this.waiting = [];
  }

  system(m: AiSdkModelSystemMessage): void {
    const msg: DeveloperMessage = { role: 'developer', content: m.content };
    keep(msg, exactly(m, ['role', 'content']) ? { read: true } : { ...shapeOf(m, ['content']) });
    this.push(msg);
  }

  user(m: AiSdkModelUserMessage): void {
    const content = typeof m.content === 'string' ? m.content : m.content.map(userBlock);
    const msg: UserMessage = { role: 'user', content };
    // Marked as read here: the writer keeps it even when empty.
    keep(msg, exactly(m, ['role', 'content']) ? { read: true } : { ...shapeOf(m, ['content']) });
    this.push(msg);
  }

  assistant(m: AiSdkModelAssistantMessage, index: number): void {
    const msg: AssistantMessage = { role: 'assistant', content: [] };
    let model: { api: string; provider: string } | undefined;
    const pending: Array<[number, string, Shape]> = [];
    const approvals = new Set<string>();
    if (typeof m.content === 'string') {
      if (m.content !== '') msg.content.push({ type: 'text', text: m.content });
    } else {
      for (const p of m.content) if (p.type === 'tool-approval-request') approvals.add(p.toolCallId);
      m.content.forEach((p, j) => {
        model ??= providerOf(member(p, 'providerOptions'));
        let block: AssistantContent & Carrying;
        if (p.type === 'text') block = textBlock(p, textSignatureOf(p.providerOptions));
        else if (p.type === 'reasoning') block = reasoningBlock(p);
        else if (p.type === 'file') {
          const img = inlineImage(p.data, 'data', p.mediaType);
          block = img === undefined ? described(p) : imageBlock(p, img);
        } else if (p.type === 'tool-call' && p.providerExecuted !== true) {
          block = toolCallBlock(p);
          this.calls.set(p.toolCallId, p.toolName);
          this.open.set(p.toolCallId, index);
          // A call waiting for its approval is kept whole too: the LLM view leaves out a call
          // without a result, and this one has none yet.
          if (approvals.has(p.toolCallId)) pending.push([j, p.toolCallId, shapeOf(p, [])]);
        } else {
          if (p.type === 'tool-call') this.executed.add(p.toolCallId);
          block = passThrough(p);
        }
        msg.content.push(block);
      });
    }
    model ??= providerOf(m.providerOptions);
    const api = this.api ?? (this.provider === undefined ? model?.api : undefined);
    const provider = this.provider ?? model?.provider;
    if (api !== undefined) msg.api = api;
    if (provider !== undefined) msg.provider = provider;
    if (this.modelId !== undefined) msg.model = this.modelId;
    msg.stopReason = msg.content.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop';
    keep(msg, {
      ...(exactly(m, ['role', 'content']) ? { read: true } : shapeOf(m, ['content'])),
      string: typeof m.content === 'string' ? true : undefined,
      pending: pending.length > 0 ? pending.map(([j, id, s]) => ({ at: j, id, ...s })) : undefined,
    });
    this.push(msg);
  }

  tool(m: AiSdkModelToolMessage, index: number): void {
    const results: Array<ToolResultMessage & Carrying> = [];
    const kept: Array<[number, Shape]> = [];
    m.content.forEach((p, j) => {
      if (p.type !== 'tool-result' || this.executed.has(p.toolCallId)) {
        kept.push([j, shapeOf(p, [])]);
        return;
      }
      const name = this.calls.get(p.toolCallId) ?? this.ctx?.toolCall?.(p.toolCallId)?.name;
      if (typeof name !== 'string') {
        throw invalidMessage(
          index,
          `content[${j}].toolCallId`,
          `answers no tool call of an earlier message (${quote(p.toolCallId)})`,
        );
      }
      this.open.delete(p.toolCallId);
      results.push(toolResult(p));
    });
    const whole = exactly(m, ['role', 'content']) ? undefined : shapeOf(m, ['content']);
    const [first, ...more] = results;
    if (first === undefined) {
      // Approval responses (and results of provider-executed calls) only: nothing the model reads.
      this.waiting.push({ ...(whole ?? { shape: { role: 'tool', content: null } }), parts: kept });
      return;
    }
    keep(first, {
      message: whole,
      kept: kept.length > 0 ? kept.map(([j, s]) => ({ at: j, ...s })) : undefined,
      split: this.out.at(-1)?.role === 'toolResult' && this.waiting.length === 0 ? true : undefined,
    });
    this.push(first);
    for (const r of more) this.push(keep(r, { join: true }));
  }
}

/** The text a tool output gives the model, and whether it is an error. */
function toolResult(p: AiSdkModelToolResultPart): ToolResultMessage & Carrying {
  const o = p.output;
  let content: Array<TextContent | ImageContent>;
  let isError = false;
  const nulls = ['toolCallId', 'toolName'];
  switch (o.type) {
    case 'text':
    case 'error-text':
      content = [{ type: 'text', text: o.value }];
      isError = o.type === 'error-text';
      nulls.push('output.value');
      break;
    case 'json':
    case 'error-json': {
      let text: string | undefined;
      try {
        text = JSON.stringify(o.value);
      } catch {
        text = undefined;
      }
      if (typeof text !== 'string') text = String(o.value);
      content = [{ type: 'text', text }];
      isError = o.type === 'error-json';
      nulls.push('output.value');
      break;
    }
    case 'execution-denied':
      content = [{ type: 'text', text: o.reason ?? DENIED }];
      isError = true;
      if (o.reason !== undefined) nulls.push('output.reason');
      break;
    default:
      content = o.value.map(userBlock);
      nulls.push('output.value');
  }
  const msg: ToolResultMessage = {
    role: 'toolResult',
    toolCallId: p.toolCallId,
    toolName: p.toolName,
    content,
    isError,
  };
  const canonical = exactly(p, ['type', 'toolCallId', 'toolName', 'output']) && exactly(o, ['type', 'value']);
  const shape = canonical && (o.type === 'text' || o.type === 'error-text') ? undefined : shapeOf(p, nulls);
  return keep(msg, { ...(shape ?? {}) });
}

/**
 * ModelMessages (or a provider-level prompt) → AgentMessages. Leading system messages are the
 * system prompt (kept as they were); a later one is a developer message.
 */
export function read(
  messages: readonly unknown[],
  ctx: ReadContext,
): { messages: AgentMessage[]; system?: { text: string; value: unknown[] } } {
  const r = new Reader(ctx);
  let i = 0;
  const leading: AiSdkModelMessage[] = [];
  for (const n = systemPromptLength(messages, (m: Loose) => m.role === 'system', ctx); i < n; i++) {
    const m = messages[i];
    checkMessage(m, i);
    leading.push(m);
  }
  for (; i < messages.length; i++) {
    const m = messages[i];
    checkMessage(m, i);
    if (m.role === 'system') r.system(m);
    else if (m.role === 'user') r.user(m);
    else if (m.role === 'assistant') r.assistant(m, i);
    else r.tool(m, i);
  }
  r.finish();
  for (const [id, index] of r.open) {
    const pending = r.out.some((msg) => {
      const x = msg.ctxfold;
      return isObject(x) && isArray(x.pending) && x.pending.some((p) => isObject(p) && p.id === id);
    });
    if (!pending) {
      ctx.warnings.converted(
        `tool call ${quote(id)} has no result in these messages: the LLM view (and toMessages) leaves it out until its result is appended`,
        index,
      );
    }
  }
  if (leading.length === 0) return { messages: r.out };
  const value = leading.map((m) => jsonCopy(m, [], [], undefined));
  const text = leading
    .map((m) => m.content)
    .filter((t) => t !== '')
    .join('\n\n');
  return { messages: r.out, system: { text, value } };
}

// ----- writing --------------------------------------------------------------------------------

/** What this format's reader kept on a message or block. */
const extrasOf = (node: unknown): Loose | undefined => extrasOfFormat(node, name);

/** A part or message being written: one made here in the SDK's shapes, or a kept shape filled. */
type Written = Loose;

/** A kept shape filled: `fill(node)` sets the modelled members, then bytes and URLs come back. */
function filled(x: Loose & { shape: Loose }, fill: (node: Written) => void): Written {
  // A copy of the kept shape to fill (the session gives fresh copies; the system value is not).
  const node: Written = { ...x.shape };
  fill(node);
  return thaw(node, x.marks);
}

/** Sets `key` on `node` only where the shape has it (so absent members stay absent). */
function set(node: Written, key: string, value: unknown): void {
  if (key in node) node[key] = value;
}

/** The dialect of a foreign assistant message: whose provider options its signatures are. */
type Dialect = 'anthropic' | 'openai' | 'google' | 'vertex' | undefined;

/** The dialect of a foreign assistant message: whose provider options its signatures are. */
function dialectOf(m: AssistantMessage): Dialect {
  const api = String(m?.api ?? '');
  const provider = String(m?.provider ?? '');
  if (api === 'anthropic-messages' || provider === 'anthropic') return 'anthropic';
  if (api.includes('responses') || provider === 'openai') return 'openai';
  if (api === 'google-vertex' || provider === 'google-vertex') return 'vertex';
  if (api.startsWith('google') || provider.startsWith('google')) return 'google';
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const textOf = (blocks: unknown): string =>
  (isArray(blocks) ? blocks : [])
    .filter((b): b is { type: 'text'; text: string } => isObject(b) && b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('\n');

/** The base64 payload (or data URL) an image block writes at its shape's nulled member. */
function payloadOf(block: ImageContent, x: Loose): string {
  return typeof x.dataUrl === 'string' ? `data:${x.dataUrl};base64,${block.data}` : block.data;
}

/** Fills an image shape: the payload at the member the reader nulled. */
function fillImage(node: Written, block: ImageContent, x: Loose): void {
  const value = payloadOf(block, x);
  if (node.type === 'image') set(node, 'image', value);
  else if (isObject(node.data) && node.data.type === 'data') node.data = { ...node.data, data: value };
  else set(node, 'data', value);
}

/** A block of the LLM view as the writer meets it. */
type WrittenBlock = AssistantContent | null | undefined;

/** Extras with a kept `shape` (an object): what `filled` takes. */
const hasShape = (x: unknown): x is Loose & { shape: Loose } => isObject(x) && isObject(x.shape);

/** Writes one request's messages; see `write`. Warnings name the output message. */
class Writer {
  out: Written[] = [];
  /** The tool message the next tool result may join, and its kept parts. */
  #open: { msg: Written & { content: Written[] }; kept: Array<Loose & { shape: Loose }> } | null = null;
  #prev: unknown;
  warnings: Warnings;

  constructor(warnings: Warnings) {
    this.warnings = warnings;
  }

  #close(): void {
    if (this.#open === null) return;
    const { msg, kept } = this.#open;
    for (const k of kept)
      msg.content.splice(
        Math.min(Number(k.at), msg.content.length),
        0,
        filled(k, () => {}),
      );
    this.#open = null;
  }

  /** Tool messages the model reads nothing of (approval responses), kept on a neighbour. */
  #emitKept(list: unknown): void {
    if (!isArray(list)) return;
    this.#close();
    for (const t of list) {
      if (!hasShape(t)) continue;
      const content: Written[] = [];
      const msg = filled(t, (n) => {
        n.content = content;
      });
      for (const p of isArray(t.parts) ? t.parts : []) {
        if (!isArray(p) || !hasShape(p[1])) continue;
        content.splice(
          Math.min(Number(p[0]), content.length),
          0,
          filled(p[1], () => {}),
        );
      }
      this.out.push(msg);
    }
  }

  add(m: LlmMessage): void {
    const x = extrasOf(m);
    this.#emitKept(x?.lead);
    const role: unknown = m?.role;
    if (m?.role === 'toolResult') this.#toolResult(m, x);
    else {
      this.#close();
      if (m?.role === 'assistant') this.#assistant(m, x);
      else if (m?.role === 'developer') this.#system(m, x);
      else if (m?.role === 'user') this.#user(m, x);
      else {
        const what = typeof role === 'string' ? quote(role) : kindOf(role);
        this.warnings.dropped(`a ${what} message has no ModelMessage form`, this.out.length);
      }
    }
    this.#emitKept(x?.trail);
    this.#prev = role;
  }

  end(): void {
    this.#close();
  }

  /** A user-side block as a part: a kept part as it was, an image as a file part. */
  #userPart(b: WrittenBlock, at: number, path: string, where: string): Written | undefined {
    const bx = extrasOf(b);
    if (b?.type === 'text' && typeof b.text === 'string') {
      const text = b.text;
      if (bx?.described && hasShape(bx) && describe(bx.shape) === text) return filled(bx, () => {});
      if (hasShape(bx) && !bx.described) return filled(bx, (n) => set(n, 'text', text));
      return { type: 'text', text };
    }
    if (isImage(b)) {
      if (hasShape(bx)) return filled(bx, (n) => fillImage(n, b, bx));
      if (where === 'tool') return { type: 'file', data: { type: 'data', data: b.data }, mediaType: b.mimeType };
      return { type: 'file', data: b.data, mediaType: b.mimeType };
    }
    this.warnings.dropped(`a ${b?.type} block has no form in a ModelMessage ${where} message`, at, path);
    return undefined;
  }

  #parts(content: unknown, at: number, where: string): Written[] {
    const out: Written[] = [];
    // The view's blocks (content arrays of the core's messages).
    const blocks = (isArray(content) ? content : []) as readonly WrittenBlock[];
    blocks.forEach((b, k) => {
      const part = this.#userPart(b, at, `content[${k}]`, where);
      if (part !== undefined) out.push(part);
    });
    return out;
  }

  #message(x: Loose | undefined, role: string, content: unknown): Written {
    if (hasShape(x)) return filled(x, (n) => set(n, 'content', content));
    return { role, content };
  }

  #user(m: Extract<LlmMessage, { role: 'user' | 'developer' }>, x: Loose | undefined): void {
    const at = this.out.length;
    const content = typeof m.content === 'string' ? m.content : this.#parts(m.content, at, 'user');
    if ('providerPayload' in m && m.providerPayload !== undefined) {
      this.warnings.dropped(
        "the compaction's provider-native replay items: a ModelMessage cannot carry them (the summary text goes instead)",
        at,
      );
    }
    // Another format's empty message carries nothing (and providers refuse empty user turns).
    if (x === undefined && content.length === 0) return;
    this.out.push(this.#message(x, 'user', content));
  }

  /** A developer message: a system message (as it was, when it was one). */
  #system(m: Extract<LlmMessage, { role: 'user' | 'developer' }>, x: Loose | undefined): void {
    const at = this.out.length;
    let content: unknown = m.content;
    if (typeof content !== 'string') {
      const blocks: readonly unknown[] = isArray(content) ? content : [];
      const images = blocks.filter((b) => isObject(b) && b.type === 'image').length;
      if (images > 0)
        this.warnings.dropped(`${images} image(s) of a developer message: a system message holds text only`, at);
      content = textOf(blocks);
    }
    if (x === undefined && content === '') return;
    this.out.push(this.#message(x, 'system', content));
  }

  #assistant(m: AssistantMessage, x: Loose | undefined): void {
    const at = this.out.length;
    const dialect = dialectOf(m);
    const parts: Written[] = [];
    const written = new Set<unknown>();
    const blocks: readonly WrittenBlock[] = isArray(m.content) ? m.content : [];
    blocks.forEach((b, k) => {
      const part = this.#assistantPart(b, dialect, at, `content[${k}]`);
      if (part === undefined) return;
      if (part.type === 'tool-call') written.add(part.toolCallId);
      parts.push(part);
    });
    // Calls waiting for approval, which the LLM view leaves out (they have no result yet).
    for (const p of isArray(x?.pending) ? x.pending : []) {
      if (!isObject(p) || written.has(p.id) || !hasShape(p)) continue;
      parts.splice(
        Math.min(Number(p.at), parts.length),
        0,
        filled(p, () => {}),
      );
    }
    if (x?.carrier) return;
    if (parts.length === 0 && x === undefined) {
      if (blocks.length > 0)
        this.warnings.dropped('an assistant message with no content a ModelMessage takes was left out', at);
      return;
    }
    let content: unknown = parts;
    const only = parts[0];
    if (x?.string && parts.length === 0) content = '';
    else if (x?.string && parts.length === 1 && only?.type === 'text' && Object.keys(only).length === 2) {
      content = only.text;
    }
    this.out.push(this.#message(x, 'assistant', content));
  }

  #assistantPart(b: WrittenBlock, dialect: Dialect, at: number, path: string): Written | undefined {
    const bx = extrasOf(b);
    const type = b?.type;
    if (b?.type === 'text' && typeof b.text === 'string') {
      if (bx !== undefined) return this.#userPart(b, at, path, 'assistant');
      const part: Written = { type: 'text', text: b.text };
      const options = textOptions(b.textSignature, dialect);
      if (options !== undefined) part.providerOptions = options;
      return part;
    }
    if (b?.type === 'thinking' && typeof b.thinking === 'string') {
      const thinking = b.thinking;
      if (hasShape(bx)) return filled(bx, (n) => set(n, 'text', thinking));
      const part: Written = { type: 'reasoning', text: thinking };
      const sig = b.thinkingSignature;
      if (typeof sig === 'string' && sig !== '') {
        const options = reasoningOptions(sig, dialect);
        if (options !== undefined) part.providerOptions = options;
        else
          this.warnings.dropped('a reasoning signature the AI SDK cannot replay for this model was left out', at, path);
      }
      return part;
    }
    if (b?.type === 'redactedThinking' && typeof b.data === 'string') {
      if (hasShape(bx)) return filled(bx, () => {});
      return { type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: b.data } } };
    }
    // A toolCall block of the core's view: a ToolCall.
    if (b?.type === 'toolCall') return toolCallPart(b as ToolCall, bx, dialect);
    if (isImage(b)) {
      if (hasShape(bx)) return filled(bx, (n) => fillImage(n, b, bx));
      return { type: 'file', data: b.data, mediaType: b.mimeType };
    }
    if (b?.type === PART_BLOCK && isObject(b.part)) return thaw({ ...b.part }, bx?.marks);
    this.warnings.dropped(`a ${type} block has no form in a ModelMessage assistant message`, at, path);
    return undefined;
  }

  #toolResult(m: ToolResultMessage, x: Loose | undefined): void {
    const join = x?.join || (this.#prev === 'toolResult' && !x?.split);
    let open = this.#open;
    if (!join || open === null) {
      this.#close();
      const message = x?.message;
      const content: Written[] = [];
      const msg = hasShape(message)
        ? filled(message, (n) => {
            n.content = content;
          })
        : { role: 'tool', content };
      this.out.push(msg);
      open = { msg: Object.assign(msg, { content }), kept: [] };
      this.#open = open;
    }
    if (isArray(x?.kept)) open.kept.push(...x.kept.filter(hasShape));
    open.msg.content.push(this.#resultPart(m, x, this.out.length - 1));
  }

  /** A tool result's part: its output as it was read (the text the view holds now), or from the text and images. */
  #resultPart(m: ToolResultMessage, x: Loose | undefined, at: number): Written {
    const blocks: readonly WrittenBlock[] = isArray(m.content) ? m.content : [];
    const onlyText = blocks.every((b) => b?.type === 'text');
    const text = textOf(blocks);
    const own = hasShape(x) ? x : undefined;
    const kind = isObject(own?.shape.output) ? own.shape.output.type : undefined;
    let output: Loose;
    if (kind === 'text' || kind === 'error-text') output = { type: kind, value: text };
    else if (kind === 'json' || kind === 'error-json') {
      // A pruned output is its notice, no longer JSON: sent as text.
      const value = onlyText ? parseJson(text) : undefined;
      output =
        value === undefined ? { type: kind === 'json' ? 'text' : 'error-text', value: text } : { type: kind, value };
    } else if (kind === 'execution-denied') output = { type: kind, reason: text };
    else if (kind === 'content') output = { type: 'content', value: this.#parts(blocks, at, 'tool') };
    else if (onlyText) output = { type: m.isError ? 'error-text' : 'text', value: text };
    else {
      if (m.isError)
        this.warnings.converted('an error result with images is sent as a content output (not marked as an error)', at);
      output = { type: 'content', value: this.#parts(blocks, at, 'tool') };
    }
    if (own === undefined) {
      return {
        type: 'tool-result',
        toolCallId: String(m.toolCallId ?? ''),
        toolName: String(m.toolName ?? ''),
        output,
      };
    }
    return filled(own, (n) => {
      set(n, 'toolCallId', m.toolCallId);
      set(n, 'toolName', m.toolName);
      const was = isObject(n.output) ? n.output : {};
      if (was.type === output.type) {
        const o = { ...was };
        if (output.type !== 'execution-denied') o.value = output.value;
        else if ('reason' in o) o.reason = output.reason;
        n.output = o;
      } else {
        n.output = isObject(was.providerOptions) ? { ...output, providerOptions: was.providerOptions } : output;
      }
    });
  }
}

/** An image block as the writer sends one: its base64 `data` a string. */
const isImage = (b: WrittenBlock): b is ImageContent => b?.type === 'image' && typeof b.data === 'string';

/** A tool call's part: as it was read, or from pi's block (its signature as provider options). */
function toolCallPart(b: ToolCall, bx: Loose | undefined, dialect: Dialect): Written {
  const args: JsonObject = isObject(b.arguments) ? b.arguments : {};
  const keys = Object.keys(args);
  const raw = keys.length === 1 && keys[0] === RAW_ARGUMENTS && typeof args[RAW_ARGUMENTS] === 'string';
  if (hasShape(bx)) {
    return filled(bx, (n) => {
      set(n, 'toolCallId', b.id);
      set(n, 'toolName', b.name);
      if (bx.input === 'text') set(n, 'input', raw ? args[RAW_ARGUMENTS] : JSON.stringify(args));
      else set(n, 'input', args);
    });
  }
  const part: Written = {
    type: 'tool-call',
    toolCallId: String(b.id ?? ''),
    toolName: String(b.name ?? ''),
    input: raw ? args[RAW_ARGUMENTS] : args,
  };
  const sig = b.thoughtSignature;
  if (typeof sig === 'string' && sig !== '') {
    if (dialect === 'openai') part.providerOptions = { openai: { itemId: sig } };
    else if (dialect === 'google' || dialect === 'vertex')
      part.providerOptions = { [dialect]: { thoughtSignature: sig } };
  }
  return part;
}

/** A foreign text block's signature as provider options. */
function textOptions(sig: unknown, dialect: Dialect): Loose | undefined {
  if (typeof sig !== 'string' || sig === '') return undefined;
  if (dialect === 'openai') {
    const s = parseJson(sig);
    if (isObject(s) && typeof s.id === 'string') {
      return { openai: { itemId: s.id, ...(typeof s.phase === 'string' && { phase: s.phase }) } };
    }
    return { openai: { itemId: sig } };
  }
  if (dialect === 'google' || dialect === 'vertex') return { [dialect]: { thoughtSignature: sig } };
  return undefined;
}

/** A foreign thinking block's signature as provider options, or undefined where none replays. */
function reasoningOptions(sig: string, dialect: Dialect): Loose | undefined {
  if (dialect === 'anthropic') return { anthropic: { signature: sig } };
  if (dialect === 'openai') {
    const item = parseJson(sig);
    if (isObject(item) && typeof item.id === 'string') {
      return { openai: { itemId: item.id, reasoningEncryptedContent: item.encrypted_content ?? null } };
    }
    return undefined;
  }
  if (dialect === 'google' || dialect === 'vertex') return { [dialect]: { thoughtSignature: sig } };
  return undefined;
}

/** The system messages to put first: the ones read (this format), else the prompt's text. */
function systemMessages(system: unknown, warnings: Warnings): Written[] {
  if (!isObject(system)) return [];
  const v = system.value;
  const list = isArray(v) ? v : isObject(v) ? [v] : undefined;
  const ours = list?.every((m) => isObject(m) && m.role === 'system' && typeof m.content === 'string');
  if (ours && list !== undefined && list.length > 0) return list.filter(isObject).map((m) => ({ ...m }));
  if (typeof v === 'string') return v === '' ? [] : [{ role: 'system', content: v }];
  if (typeof system.text !== 'string' || system.text === '') return [];
  warnings.converted(`the system prompt (of the ${system.format ?? 'pi'} format) is sent as its text`);
  return [{ role: 'system', content: system.text }];
}

/**
 * The LLM view → ModelMessages: the system prompt first (as system messages), the compaction
 * summary as a user message (its snapcompact frames as image file parts), then the messages, a
 * tool message per run of tool results.
 */
export function write(llm: readonly LlmMessage[], ctx: WriteContext): { messages: AiSdkModelMessage[] } {
  const writer = new Writer(ctx.warnings);
  writer.out.push(...systemMessages(ctx.system, ctx.warnings));
  for (const m of llm) writer.add(m);
  writer.end();
  // Shapes read from ModelMessages filled, and messages made here in their form.
  return { messages: writer.out as unknown as AiSdkModelMessage[] };
}
