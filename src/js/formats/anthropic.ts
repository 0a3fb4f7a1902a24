// The `anthropic` format: the `messages` of an Anthropic Messages API request (the system
// prompt is the request's `system`, kept apart). Reading: a user message becomes a user message
// and one tool-result message per `tool_result` block, in block order; an assistant message an
// AssistantMessage (text, thinking with its signature, redacted thinking, tool calls, server
// tool blocks as `anthropicServerTool`, a leading `compaction` block as the message's
// `providerPayload`); a mid-conversation `system` message a developer message with an
// `anthropicMessage` payload. Blocks pi has no type for (documents, search results, images by
// URL or file id, container uploads) become a text block that describes them and keeps the
// block itself. Writing does the inverse, so a history read here comes back as it was; what pi
// has and the API takes in no form is reported in `warnings`.
//
// This module also holds the wire facts of the `remote` compaction lane (native-anthropic):
// `wireMessages`, which repairs a history into a request the API accepts whatever its origin,
// and `replayTarget`, which model a history's compaction blocks are replayed to.
//
// The messages are typed from Anthropic's documented shapes (the types below, exported from
// `ctxfold`); docs/guide/formats.md says what maps to what. The reader checks the caller's
// messages member by member (they are untrusted), so it reads them as unchecked objects; the
// writer builds the typed messages.
import { requireRaw } from '../core/raw.js';
import type { JsonObject, JsonValue } from '../core/session.js';
import {
  isBlank as blank,
  extrasOf,
  hasText,
  invalidMessage,
  isObject,
  kindOf,
  type Loose,
  nonEmptyString,
  putMember,
  type ReadContext,
  type ReadMessage,
  type ReadResult,
  requireArray,
  requireObject,
  requireString,
  type StoredSystem,
  type Warnings,
  type WriteContext,
  type WriteResult,
} from './common.js';

// ----- the messages ----------------------------------------------------------------------------

/** A prompt-caching breakpoint. */
export interface AnthropicCacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

/** What every block may carry. */
interface AnthropicBlockBase {
  cache_control?: AnthropicCacheControl | null;
}

export interface AnthropicTextBlock extends AnthropicBlockBase {
  type: 'text';
  text: string;
  /** Citations of documents or search results (kept as they are). */
  citations?: JsonObject[] | null;
}

export type AnthropicImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };

export interface AnthropicImageBlock extends AnthropicBlockBase {
  type: 'image';
  source: AnthropicImageSource;
}

export interface AnthropicDocumentBlock extends AnthropicBlockBase {
  type: 'document';
  source:
    | { type: 'base64'; media_type: string; data: string }
    | { type: 'text'; media_type: string; data: string }
    | { type: 'content'; content: string | Array<AnthropicTextBlock | AnthropicImageBlock> }
    | { type: 'url'; url: string }
    | { type: 'file'; file_id: string };
  title?: string | null;
  context?: string | null;
  citations?: { enabled?: boolean } | null;
}

export interface AnthropicSearchResultBlock extends AnthropicBlockBase {
  type: 'search_result';
  source: string;
  title: string;
  content: AnthropicTextBlock[];
  citations?: { enabled?: boolean };
}

export interface AnthropicContainerUploadBlock extends AnthropicBlockBase {
  type: 'container_upload';
  file_id: string;
}

export interface AnthropicToolResultBlock extends AnthropicBlockBase {
  type: 'tool_result';
  tool_use_id: string;
  content?:
    | string
    | Array<AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock | AnthropicSearchResultBlock>;
  is_error?: boolean;
}

export type AnthropicUserBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicSearchResultBlock
  | AnthropicContainerUploadBlock
  | AnthropicToolResultBlock;

export interface AnthropicThinkingBlock extends AnthropicBlockBase {
  type: 'thinking';
  thinking: string;
  /** Opaque; replayed byte for byte. */
  signature: string;
}

export interface AnthropicRedactedThinkingBlock extends AnthropicBlockBase {
  type: 'redacted_thinking';
  data: string;
}

export interface AnthropicToolUseBlock extends AnthropicBlockBase {
  type: 'tool_use';
  id: string;
  name: string;
  input: JsonObject;
}

/** A server-side compaction summary (`compact-2026-01-12` beta). */
export interface AnthropicCompactionBlock extends AnthropicBlockBase {
  type: 'compaction';
  content: string | null;
  encrypted_content?: string | null;
}

/** Blocks of server-run tools (web search and fetch, code execution, tool search, MCP). */
export interface AnthropicServerToolBlock {
  type:
    | 'server_tool_use'
    | 'web_search_tool_result'
    | 'web_fetch_tool_result'
    | 'code_execution_tool_result'
    | 'bash_code_execution_tool_result'
    | 'text_editor_code_execution_tool_result'
    | 'tool_search_tool_result'
    | 'mcp_tool_use'
    | 'mcp_tool_result'
    | 'container_upload';
  id?: string;
  tool_use_id?: string;
  name?: string;
  [key: string]: JsonValue | undefined;
}

export type AnthropicAssistantBlock =
  | AnthropicTextBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock
  | AnthropicCompactionBlock
  | AnthropicServerToolBlock;

export interface AnthropicUserMessage {
  role: 'user';
  content: string | AnthropicUserBlock[];
}

export interface AnthropicAssistantMessage {
  role: 'assistant';
  content: string | AnthropicAssistantBlock[];
}

/** A change of the tool set inside a mid-conversation system message. */
export interface AnthropicToolChangeBlock {
  type: 'tool_addition' | 'tool_removal';
  tool: { type: 'tool_reference'; name: string };
}

/** A mid-conversation system message (read as a developer message). */
export interface AnthropicSystemMessage {
  role: 'system';
  content: string | Array<AnthropicTextBlock | AnthropicToolChangeBlock>;
  clear_at?: 'never' | 'next_user_message';
  output_config?: { effort?: 'low' | 'medium' | 'high' | 'xhigh' | 'max' };
}

/** An element of the request's `messages`. */
export type AnthropicMessage = AnthropicUserMessage | AnthropicAssistantMessage | AnthropicSystemMessage;

/** The request's `system`: text, or text blocks (with cache breakpoints). */
export type AnthropicSystem = string | AnthropicTextBlock[];

// ----- the messages written ----------------------------------------------------------------------
//
// What `write` returns (`toMessages`, `beforeRequest` with this format), typed as the request
// parameters of Anthropic's SDK take them, so that `messages` and `system` go to
// `messages.create` (and `beta.messages.create`) with no cast: the media types the API names,
// text blocks without the citations ctxfold keeps opaque. A history read in this format is
// written back as it was read: its citations, server-tool blocks and tool-change blocks are sent
// as they came, and are not declared here. Nor is the `compaction` block (the
// `compact-2026-01-12` beta) written when a server compaction is replayed to a model with server
// compaction (`replayTarget`): the SDK's `MessageParam` has no such block, its `BetaMessageParam`
// has; a host of that lane calls `beta.messages.create`.

/** A text block written (the `citations` of one read are written back, undeclared). */
export type AnthropicTextBlockOut = AnthropicBlockBase & {
  type: 'text';
  text: string;
};
export type AnthropicImageSourceOut =
  | { type: 'base64'; media_type: 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp'; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };
export type AnthropicImageBlockOut = AnthropicBlockBase & {
  type: 'image';
  source: AnthropicImageSourceOut;
};
export type AnthropicDocumentBlockOut = AnthropicBlockBase & {
  type: 'document';
  source:
    | { type: 'base64'; media_type: 'application/pdf'; data: string }
    | { type: 'text'; media_type: 'text/plain'; data: string }
    | { type: 'content'; content: string | Array<AnthropicTextBlockOut | AnthropicImageBlockOut> }
    | { type: 'url'; url: string }
    | { type: 'file'; file_id: string };
  title?: string | null;
  context?: string | null;
  citations?: { enabled?: boolean } | null;
};
export type AnthropicSearchResultBlockOut = AnthropicBlockBase & {
  type: 'search_result';
  source: string;
  title: string;
  content: AnthropicTextBlockOut[];
  citations?: { enabled?: boolean };
};
export type AnthropicToolResultBlockOut = AnthropicBlockBase & {
  type: 'tool_result';
  tool_use_id: string;
  content?:
    | string
    | Array<AnthropicTextBlockOut | AnthropicImageBlockOut | AnthropicDocumentBlockOut | AnthropicSearchResultBlockOut>;
  is_error?: boolean;
};
export type AnthropicUserBlockOut =
  | AnthropicTextBlockOut
  | AnthropicImageBlockOut
  | AnthropicDocumentBlockOut
  | AnthropicSearchResultBlockOut
  | AnthropicContainerUploadBlock
  | AnthropicToolResultBlockOut;
export type AnthropicAssistantBlockOut =
  | AnthropicTextBlockOut
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock
  | AnthropicToolUseBlock;
export type AnthropicUserMessageOut = {
  role: 'user';
  content: string | AnthropicUserBlockOut[];
};
export type AnthropicAssistantMessageOut = {
  role: 'assistant';
  content: string | AnthropicAssistantBlockOut[];
};
/** A mid-conversation system message (its `clear_at` and `output_config` written, undeclared). */
export type AnthropicSystemMessageOut = {
  role: 'system';
  content: string | AnthropicTextBlockOut[];
};
/** An element of the `messages` written: assignable to the SDK's `MessageParam`. */
export type AnthropicMessageOut = AnthropicUserMessageOut | AnthropicAssistantMessageOut | AnthropicSystemMessageOut;
/** The request's `system` written: assignable to the SDK's `MessageCreateParams['system']`. */
export type AnthropicSystemOut = string | AnthropicTextBlockOut[];

// ----- the module ------------------------------------------------------------------------------

export const name = 'anthropic';

/**
 * Anthropic's documented image limit per API request: 100 for models with a 200k-token context
 * window (600 for larger windows); the smaller one fits every model.
 */
export const maxImages = 100;

const API = 'anthropic-messages';
/** The image types the API reads (vision guide). */
const IMAGE_TYPES: ReadonlySet<unknown> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
/** User-side blocks pi has no type for: carried as a describing text block that keeps them. */
const OPAQUE_USER_BLOCKS: ReadonlySet<string> = new Set(['document', 'search_result', 'container_upload']);
/** What a tool_result's content may hold. */
const RESULT_BLOCKS: ReadonlySet<string> = new Set(['text', 'image', 'document', 'search_result']);
/** Assistant blocks of server-run tools, replayed as they are (pi's `anthropicServerTool`). */
const SERVER_BLOCKS: ReadonlySet<string> = new Set<AnthropicServerToolBlock['type']>([
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'mcp_tool_use',
  'mcp_tool_result',
  'container_upload',
]);
type ClearAt = NonNullable<AnthropicSystemMessage['clear_at']>;
const CLEAR_AT: ReadonlySet<unknown> = new Set<ClearAt>(['never', 'next_user_message']);
const isClearAt = (v: unknown): v is ClearAt => CLEAR_AT.has(v);

/** An input string as an error message quotes it: in single quotes (not common's JSON text), at most 40 characters. */
const quoteName = (t: string): string => `'${t.length > 40 ? `${t.slice(0, 40)}…` : t}'`;

/** The members of `node` other than `known` (undefined ones left out), or undefined for none. */
function restOf(node: object, known: readonly string[]): Loose | undefined {
  const rest = Object.entries(node).filter(([k, v]) => v !== undefined && !known.includes(k));
  return rest.length === 0 ? undefined : Object.fromEntries(rest);
}

/** `node.ctxfold` of this format, created when missing: a bare one marks a node "as read". */
function extras(node: Loose): Loose {
  const kept = node.ctxfold;
  if (isObject(kept)) return kept;
  const made: Loose = { format: name };
  node.ctxfold = made;
  return made;
}

/**
 * Copies kept wire members onto `target` as its own members (a `__proto__` member is data, as
 * JSON has it, never the prototype).
 */
function assignFields<T extends object>(target: T, fields: unknown): T {
  if (isObject(fields)) {
    for (const [k, v] of Object.entries(fields)) putMember(target, k, v);
  }
  return target;
}

function setExtra(node: Loose, key: string, value: unknown): Loose {
  if (value !== undefined) extras(node)[key] = value;
  return node;
}

// ----- checking --------------------------------------------------------------------------------
//
// The input is unknown: each block is checked before it is read (the first malformed field is
// E_INVALID_MESSAGE, named), and the check narrows it to the unions below, on `role` and on
// `type`; the reader then switches on them. A block is checked and read in turn, so that a
// tool_result naming no earlier tool_use is reported where it stands, before later blocks. The
// unions are what the reader takes: the API's blocks, with the members it keeps as they are
// (unknown members, any `cache_control.type`, a thinking block without its signature).

/** What every checked block may carry, and the members kept as they are. */
interface Checked {
  cache_control?: { type: string; [member: string]: unknown } | null;
  [member: string]: unknown;
}
interface CheckedText extends Checked {
  type: 'text';
  text: string;
  citations?: unknown[] | null;
}
type CheckedImageSource =
  | { type: 'base64'; media_type: string; data: string; [member: string]: unknown }
  | { type: 'url'; url: string; [member: string]: unknown }
  | { type: 'file'; file_id: string; [member: string]: unknown };
interface CheckedImage extends Checked {
  type: 'image';
  source: CheckedImageSource;
}
/** Documents, search results and container uploads: pi has no type for them (kept whole). */
interface CheckedOpaque extends Checked {
  type: 'document' | 'search_result' | 'container_upload';
}
/** A tool_result before its call is found: the rest is checked once it is. */
interface CheckedToolResultHead {
  type: 'tool_result';
  tool_use_id: string;
  [member: string]: unknown;
}
interface CheckedToolResult extends Checked {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<CheckedText | CheckedImage | CheckedOpaque>;
  is_error?: boolean;
}
/** A block of a user message's content, as checked. */
type CheckedUserBlock = CheckedText | CheckedImage | CheckedOpaque | CheckedToolResultHead;

interface CheckedThinking extends Checked {
  type: 'thinking';
  thinking: string;
  signature?: string;
}
interface CheckedRedactedThinking extends Checked {
  type: 'redacted_thinking';
  data: string;
}
interface CheckedToolUse extends Checked {
  type: 'tool_use';
  id: string;
  name: string;
  input: Loose;
}
interface CheckedCompaction extends Checked {
  type: 'compaction';
  content: string | null;
  encrypted_content?: string | null;
}
interface CheckedServerBlock extends Checked {
  type: AnthropicServerToolBlock['type'];
}
/** A block of an assistant message's content, as checked. */
type CheckedAssistantBlock =
  | CheckedText
  | CheckedThinking
  | CheckedRedactedThinking
  | CheckedToolUse
  | CheckedCompaction
  | CheckedServerBlock;

interface CheckedToolChange {
  type: 'tool_addition' | 'tool_removal';
  tool: { name: string; [member: string]: unknown };
  [member: string]: unknown;
}
/** A block of a mid-conversation system message, as checked. */
type CheckedSystemBlock = CheckedText | CheckedToolChange;

/** A message as checked: its role; the content of a user or an assistant message is checked block by block. */
type CheckedMessage =
  | { role: 'user' | 'assistant'; content: string | unknown[]; [member: string]: unknown }
  | {
      role: 'system';
      content: string | CheckedSystemBlock[];
      clear_at?: ClearAt;
      output_config?: { effort?: string; [member: string]: unknown };
      [member: string]: unknown;
    };

/** Checks the member every block may carry: a prompt-caching breakpoint. */
function checkCommon(b: Loose, i: number, at: string): asserts b is Loose & Checked {
  if (b.cache_control !== undefined && b.cache_control !== null) {
    const control = requireObject(b.cache_control, i, `${at}.cache_control`);
    requireString(control.type, i, `${at}.cache_control.type`);
  }
}

/** A block: an object with a string `type`. */
function blockType(b: unknown, i: number, at: string): [Loose, string] {
  const block = requireObject(b, i, at);
  return [block, requireString(block.type, i, `${at}.type`)];
}

function checkText(b: Loose, i: number, at: string): asserts b is Loose & CheckedText {
  requireString(b.text, i, `${at}.text`);
  checkCommon(b, i, at);
  if (b.citations !== undefined && b.citations !== null) requireArray(b.citations, i, `${at}.citations`);
}

/** A text, image, document, search result or container upload block of user-side content. */
function checkUserContentBlock(
  b: Loose,
  type: string,
  i: number,
  at: string,
): asserts b is Loose & (CheckedText | CheckedImage | CheckedOpaque) {
  if (type === 'text') return checkText(b, i, at);
  checkCommon(b, i, at);
  if (type === 'image') {
    const source = requireObject(b.source, i, `${at}.source`);
    const kind = requireString(source.type, i, `${at}.source.type`);
    if (kind === 'base64') {
      requireString(source.media_type, i, `${at}.source.media_type`);
      requireString(source.data, i, `${at}.source.data`);
    } else if (kind === 'url') requireString(source.url, i, `${at}.source.url`);
    else if (kind === 'file') requireString(source.file_id, i, `${at}.source.file_id`);
    else throw invalidMessage(i, `${at}.source.type`, `must be 'base64', 'url' or 'file', got ${quoteName(kind)}`);
  } else if (type === 'document') checkDocument(b, i, at);
  else if (type === 'search_result') checkSearchResult(b, i, at);
  else requireString(b.file_id, i, `${at}.file_id`);
}

function checkDocument(b: Loose, i: number, at: string): void {
  const source = requireObject(b.source, i, `${at}.source`);
  const kind = requireString(source.type, i, `${at}.source.type`);
  if (kind === 'base64' || kind === 'text') {
    requireString(source.media_type, i, `${at}.source.media_type`);
    requireString(source.data, i, `${at}.source.data`);
  } else if (kind === 'url') requireString(source.url, i, `${at}.source.url`);
  else if (kind === 'file') requireString(source.file_id, i, `${at}.source.file_id`);
  else if (kind === 'content') {
    if (typeof source.content !== 'string') {
      requireArray(source.content, i, `${at}.source.content`).forEach((c, k) => {
        const p = `${at}.source.content[${k}]`;
        const [block, t] = blockType(c, i, p);
        if (t === 'text' || t === 'image') checkUserContentBlock(block, t, i, p);
        else throw invalidMessage(i, `${p}.type`, `must be 'text' or 'image', got ${quoteName(t)}`);
      });
    }
  } else {
    throw invalidMessage(
      i,
      `${at}.source.type`,
      `must be 'base64', 'text', 'content', 'url' or 'file', got ${quoteName(kind)}`,
    );
  }
  for (const k of ['title', 'context']) {
    if (b[k] !== undefined && b[k] !== null) requireString(b[k], i, `${at}.${k}`);
  }
}

function checkSearchResult(b: Loose, i: number, at: string): void {
  requireString(b.source, i, `${at}.source`);
  requireString(b.title, i, `${at}.title`);
  requireArray(b.content, i, `${at}.content`).forEach((c, k) => {
    const p = `${at}.content[${k}]`;
    const [block, t] = blockType(c, i, p);
    if (t !== 'text') throw invalidMessage(i, `${p}.type`, `must be 'text', got ${quoteName(t)}`);
    checkText(block, i, p);
  });
}

/** A block of a user message: a tool_result is checked up to its `tool_use_id` (`checkToolResult` does the rest). */
function checkUserBlock(c: unknown, i: number, at: string): asserts c is Loose & CheckedUserBlock {
  const [b, type] = blockType(c, i, at);
  if (type === 'tool_result') requireString(b.tool_use_id, i, `${at}.tool_use_id`);
  else if (type === 'text' || type === 'image' || OPAQUE_USER_BLOCKS.has(type)) checkUserContentBlock(b, type, i, at);
  else throw invalidMessage(i, `${at}.type`, `${quoteName(type)} is no user content block`);
}

/** The rest of a tool_result, once its call is found. */
function checkToolResult(
  b: Loose & CheckedToolResultHead,
  i: number,
  at: string,
): asserts b is Loose & CheckedToolResult {
  checkCommon(b, i, at);
  if (b.content !== undefined && typeof b.content !== 'string') {
    requireArray(b.content, i, `${at}.content`).forEach((c, k) => {
      const p = `${at}.content[${k}]`;
      const [block, t] = blockType(c, i, p);
      if (!RESULT_BLOCKS.has(t))
        throw invalidMessage(i, `${p}.type`, `${quoteName(t)} is no tool_result content block`);
      checkUserContentBlock(block, t, i, p);
    });
  }
  if (b.is_error !== undefined && typeof b.is_error !== 'boolean') {
    throw invalidMessage(i, `${at}.is_error`, `must be a boolean, got ${kindOf(b.is_error)}`);
  }
}

function checkAssistantBlock(c: unknown, i: number, at: string): asserts c is Loose & CheckedAssistantBlock {
  const [b, type] = blockType(c, i, at);
  if (type === 'text') return checkText(b, i, at);
  checkCommon(b, i, at);
  if (type === 'thinking') {
    requireString(b.thinking, i, `${at}.thinking`);
    if (b.signature !== undefined) requireString(b.signature, i, `${at}.signature`);
  } else if (type === 'redacted_thinking') requireString(b.data, i, `${at}.data`);
  else if (type === 'tool_use') {
    requireString(b.id, i, `${at}.id`);
    requireString(b.name, i, `${at}.name`);
    requireObject(b.input, i, `${at}.input`);
  } else if (type === 'compaction') {
    if (b.content !== null) requireString(b.content, i, `${at}.content`);
    const encrypted = b.encrypted_content;
    if (encrypted !== undefined && encrypted !== null) requireString(encrypted, i, `${at}.encrypted_content`);
  } else if (SERVER_BLOCKS.has(type)) {
    if (type === 'server_tool_use' || type === 'mcp_tool_use') {
      requireString(b.id, i, `${at}.id`);
      requireString(b.name, i, `${at}.name`);
    } else if (type === 'container_upload') requireString(b.file_id, i, `${at}.file_id`);
    else requireString(b.tool_use_id, i, `${at}.tool_use_id`);
  } else throw invalidMessage(i, `${at}.type`, `${quoteName(type)} is no assistant content block`);
}

function checkSystemMessage(m: Loose, i: number): void {
  if (m.clear_at !== undefined && !CLEAR_AT.has(m.clear_at))
    throw invalidMessage(i, 'clear_at', "must be 'never' or 'next_user_message'");
  if (m.output_config !== undefined) {
    const config = requireObject(m.output_config, i, 'output_config');
    if (config.effort !== undefined) requireString(config.effort, i, 'output_config.effort');
  }
  if (typeof m.content === 'string') return;
  requireArray(m.content, i, 'content').forEach((c, j) => {
    const at = `content[${j}]`;
    const [b, type] = blockType(c, i, at);
    if (type === 'text') checkText(b, i, at);
    else if (type === 'tool_addition' || type === 'tool_removal')
      requireString(requireObject(b.tool, i, `${at}.tool`).name, i, `${at}.tool.name`);
    else throw invalidMessage(i, `${at}.type`, `${quoteName(type)} is no system message block`);
  });
}

/** Message `i`: an object with a role the reader takes (the blocks of a user or assistant one are checked as they are read). */
function checkMessage(m: unknown, i: number): asserts m is Loose & CheckedMessage {
  if (!isObject(m)) throw invalidMessage(i, '', `must be an object, got ${kindOf(m)}`);
  if (m.role === 'system') return checkSystemMessage(m, i);
  if (m.role !== 'user' && m.role !== 'assistant') {
    const got = typeof m.role === 'string' ? quoteName(m.role) : kindOf(m.role);
    throw invalidMessage(i, 'role', `must be 'user', 'assistant' or 'system', got ${got}`);
  }
  if (typeof m.content !== 'string' && !Array.isArray(m.content))
    throw invalidMessage(i, 'content', `must be a string or an array, got ${kindOf(m.content)}`);
}

// ----- reading ---------------------------------------------------------------------------------

/** What the reader of one call keeps between messages. */
interface ReadState {
  ctx: ReadContext;
  api: string;
  provider: string;
  model: string | undefined;
  /** tool_use id → tool name, of this batch. */
  calls: Map<string, string>;
  out: ReadMessage[];
}

/** Anthropic messages → AgentMessages. ctx: `{ model?, warnings, toolCall(id) }`. */
export function read(messages: unknown[], ctx: ReadContext): ReadResult {
  const model: Loose = isObject(ctx?.model) ? ctx.model : {};
  const st: ReadState = {
    ctx,
    api: nonEmptyString(model.api) ?? API,
    provider: nonEmptyString(model.provider) ?? 'anthropic',
    model: nonEmptyString(model.id),
    calls: new Map(),
    out: [],
  };
  messages.forEach((m, i) => {
    checkMessage(m, i);
    switch (m.role) {
      case 'user':
        readUser(m.content, m, i, st);
        break;
      case 'assistant':
        st.out.push(readAssistant(m.content, m, i, st));
        break;
      case 'system':
        st.out.push(readSystemMessage(m));
    }
  });
  return { messages: st.out };
}

/** A user message: its text and image blocks as user messages, each tool_result as a tool result. */
function readUser(content: string | unknown[], m: Loose, i: number, st: ReadState): void {
  const produced: Loose[] = [];
  if (typeof content === 'string') {
    const msg: Loose = { role: 'user', content };
    if (blank(content)) extras(msg);
    produced.push(msg);
  } else {
    let parts: Loose[] | null = null;
    const flush = () => {
      if (parts !== null) produced.push({ role: 'user', content: parts });
      parts = null;
    };
    content.forEach((b: unknown, j) => {
      const at = `content[${j}]`;
      checkUserBlock(b, i, at);
      if (b.type === 'tool_result') {
        flush();
        produced.push(readToolResult(b, i, at, st));
      } else {
        parts ??= [];
        parts.push(readUserBlock(b));
      }
    });
    flush();
  }
  let head = produced[0];
  if (head === undefined) {
    head = { role: 'user', content: [] };
    extras(head);
    produced.push(head);
  }
  // The pi messages of one Anthropic message: the later ones continue it, and a first tool
  // result right after another message's tool result starts a message of its own.
  produced.forEach((p, k) => {
    if (k > 0) setExtra(p, 'join', true);
  });
  if (head.role === 'toolResult' && st.out.at(-1)?.role === 'toolResult') setExtra(head, 'split', true);
  setExtra(head, 'fields', restOf(m, ['role', 'content']));
  st.out.push(...produced);
}

function readText(b: CheckedText): Loose {
  const block: Loose = { type: 'text', text: b.text };
  setExtra(block, 'fields', restOf(b, ['type', 'text']));
  if (blank(b.text)) extras(block);
  return block;
}

/** A checked text, image, document, search result or container upload block of user-side content. */
function readUserBlock(b: CheckedText | CheckedImage | CheckedOpaque): Loose {
  switch (b.type) {
    case 'text':
      return readText(b);
    case 'image': {
      const source = b.source;
      if (source.type !== 'base64' || restOf(source, ['type', 'media_type', 'data']) !== undefined) return opaque(b);
      const image: Loose = { type: 'image', data: source.data, mimeType: source.media_type };
      // An image the API does not read is kept as it is rather than sent as a note.
      if (!IMAGE_TYPES.has(source.media_type)) extras(image);
      return setExtra(image, 'fields', restOf(b, ['type', 'source']));
    }
    default:
      return opaque(b);
  }
}

/** A block pi has no type for, as a text block that describes it and keeps it whole. */
function opaque(b: { type: string }): Loose {
  return { type: 'text', text: describe(b) ?? `[${b.type}]`, ctxfold: { format: name, block: b } };
}

const textsOf = (blocks: unknown): string => {
  if (!Array.isArray(blocks)) return '';
  const texts: string[] = [];
  for (const c of blocks as unknown[]) {
    if (isObject(c) && c.type === 'text' && typeof c.text === 'string') texts.push(c.text);
  }
  return texts.join('\n');
};

/**
 * What other formats read for a block pi has no type for: the text of a text document or a
 * search result, else what the block names (a URL, a file id, a title). Undefined for a block
 * of another shape (the writer then keeps the text it has). Kept blocks come back from session
 * files, so the block is not assumed checked.
 */
function describe(b: unknown): string | undefined {
  if (!isObject(b)) return undefined;
  const source: Loose = isObject(b.source) ? b.source : {};
  const title = nonEmptyString(b.title);
  switch (b.type) {
    case 'image':
      return `[image: ${nonEmptyString(source.url) ?? nonEmptyString(source.file_id) ?? source.type}]`;
    case 'document': {
      const head = `[document${title ? `: ${title}` : ''}]`;
      if (source.type === 'text' && typeof source.data === 'string') return `${head}\n${source.data}`;
      if (source.type === 'content') {
        return `${head}\n${typeof source.content === 'string' ? source.content : textsOf(source.content)}`;
      }
      return `[document: ${title ?? nonEmptyString(source.url) ?? nonEmptyString(source.file_id) ?? source.media_type}]`;
    }
    case 'search_result':
      return `[search result: ${b.title} (${b.source})]\n${textsOf(b.content)}`;
    case 'container_upload':
      return `[container upload: ${b.file_id}]`;
    default:
      return undefined;
  }
}

function readToolResult(b: Loose & CheckedToolResultHead, i: number, at: string, st: ReadState): Loose {
  const id = b.tool_use_id;
  const toolName = st.calls.get(id) ?? st.ctx?.toolCall?.(id)?.name;
  if (typeof toolName !== 'string') {
    throw invalidMessage(i, `${at}.tool_use_id`, `answers no tool_use of an earlier message (${quoteName(id)})`);
  }
  checkToolResult(b, i, at);
  const flags: Loose = {};
  let content: Loose[];
  if (b.content === undefined) {
    content = [];
    flags.noContent = true;
  } else if (typeof b.content === 'string') {
    content = b.content === '' ? [] : [{ type: 'text', text: b.content }];
    flags.string = true;
  } else content = b.content.map(readUserBlock);
  if (b.is_error === false) flags.isErrorFalse = true;
  const msg: Loose = { role: 'toolResult', toolCallId: id, toolName, content, isError: b.is_error === true };
  if (Array.isArray(b.content) && b.content.length === 0) extras(msg);
  for (const [k, v] of Object.entries(flags)) setExtra(msg, k, v);
  return setExtra(msg, 'fields', restOf(b, ['type', 'tool_use_id', 'content', 'is_error']));
}

/** A pi assistant block read, or the payload a leading compaction block makes of its message. */
type AssistantRead = Loose | { type: 'anthropicCompaction'; payload: Loose };

function readAssistant(content: string | unknown[], m: Loose, i: number, st: ReadState): ReadMessage {
  const blocks: Loose[] = [];
  const msg: Loose = { role: 'assistant', content: blocks, api: st.api, provider: st.provider };
  if (st.model !== undefined) msg.model = st.model;
  if (typeof content === 'string') {
    setExtra(msg, 'string', true);
    if (content !== '') blocks.push(readText({ type: 'text', text: content }));
  } else {
    content.forEach((b: unknown, j) => {
      checkAssistantBlock(b, i, `content[${j}]`);
      const block = readAssistantBlock(b, st, j === 0);
      if (block.type === 'anthropicCompaction') msg.providerPayload = block.payload;
      else blocks.push(block);
    });
    if (content.length === 0) extras(msg);
  }
  msg.stopReason = blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop';
  return setExtra(msg, 'fields', restOf(m, ['role', 'content']));
}

function readAssistantBlock(b: Loose & CheckedAssistantBlock, st: ReadState, first: boolean): AssistantRead {
  switch (b.type) {
    case 'text':
      return readText(b);
    case 'thinking': {
      const block: Loose = { type: 'thinking', thinking: b.thinking };
      if (b.signature === undefined) extras(block);
      else block.thinkingSignature = b.signature;
      return setExtra(block, 'fields', restOf(b, ['type', 'thinking', 'signature']));
    }
    case 'redacted_thinking':
      return setExtra({ type: 'redactedThinking', data: b.data }, 'fields', restOf(b, ['type', 'data']));
    case 'tool_use': {
      st.calls.set(b.id, b.name);
      const block: Loose = { type: 'toolCall', id: b.id, name: b.name, arguments: b.input };
      return setExtra(block, 'fields', restOf(b, ['type', 'id', 'name', 'input']));
    }
    case 'compaction': {
      const encrypted = b.encrypted_content;
      // The block opening a response is pi's payload of the message; any other is kept as it is.
      if (first && nonEmptyString(b.content) && (encrypted === undefined || nonEmptyString(encrypted))) {
        if (restOf(b, ['type', 'content', 'encrypted_content']) === undefined) {
          const payload: Loose = { type: 'anthropicCompaction', provider: st.provider, content: b.content };
          if (encrypted !== undefined) payload.encryptedContent = encrypted;
          return { type: 'anthropicCompaction', payload };
        }
      }
      return { type: 'anthropicServerTool', block: b };
    }
    default:
      return { type: 'anthropicServerTool', block: b };
  }
}

/** A mid-conversation `system` message: a developer message with an `anthropicMessage` payload. */
function readSystemMessage(m: Loose & CheckedMessage & { role: 'system' }): ReadMessage {
  const payload: Loose = { type: 'anthropicMessage' };
  if (m.clear_at !== undefined) payload.clearAt = m.clear_at;
  let fields = restOf(m, ['role', 'content', 'clear_at', 'output_config']);
  const config = m.output_config;
  if (config !== undefined) {
    if (config.effort !== undefined) payload.effort = config.effort;
    // A config with more than the effort is kept whole.
    if (restOf(config, ['effort']) !== undefined || config.effort === undefined) {
      fields = { ...fields, output_config: config };
    }
  }
  let content: string | Loose[];
  const controls: Array<[number, Loose]> = [];
  const changes: Loose[] = [];
  if (typeof m.content === 'string') content = m.content;
  else {
    const blocks: Loose[] = [];
    content = blocks;
    m.content.forEach((b, j) => {
      if (b.type === 'text') blocks.push(readText(b));
      else {
        changes.push({ type: b.type, name: b.tool.name });
        controls.push([j, b]);
      }
    });
  }
  if (changes.length > 0) payload.toolChanges = changes;
  const msg: Loose = { role: 'developer', content, providerPayload: payload };
  if (typeof content === 'string' ? blank(content) : content.length === 0) extras(msg);
  if (controls.length > 0) setExtra(msg, 'controls', controls);
  return setExtra(msg, 'fields', fields);
}

// ----- writing ---------------------------------------------------------------------------------

/**
 * The provider messages of `toLlmMessages` → `{ messages, system? }` of a Messages API request.
 * ctx: `{ model?, warnings, system }`.
 */
export function write(
  llm: readonly unknown[],
  ctx: WriteContext,
): WriteResult<AnthropicMessageOut, AnthropicSystemOut> {
  const writer = new Writer(ctx);
  for (const m of llm) writer.add(m);
  writer.end();
  // Built block by block as the types above describe (what was read is written back as read).
  const result: WriteResult<AnthropicMessageOut, AnthropicSystemOut> = {
    messages: writer.out as AnthropicMessageOut[],
  };
  const system = systemOf(ctx.system, ctx.warnings);
  if (system !== undefined) result.system = system;
  return result;
}

const isTextBlocks = (value: unknown): value is AnthropicTextBlock[] =>
  Array.isArray(value) &&
  (value as unknown[]).every((b) => isObject(b) && b.type === 'text' && typeof b.text === 'string');

/** The request's `system`: the stored Anthropic value, or the text of another format's. */
function systemOf(system: StoredSystem | undefined, warnings: Warnings): AnthropicSystem | undefined {
  if (!isObject(system)) return undefined;
  const value = system.value;
  if (typeof value === 'string') return value;
  if (isTextBlocks(value) && system.format === name) return value;
  if (typeof system.text !== 'string') return undefined;
  warnings.converted(`the system prompt (of the ${system.format ?? 'pi'} format) is sent as its text`);
  return system.text;
}

/** A tool-use id as the API accepts it (`[A-Za-z0-9_-]`, at most 64 characters). */
export function toolId(id: unknown): string {
  const s = typeof id === 'string' ? id : '';
  if (/^[A-Za-z0-9_-]{1,64}$/.test(s)) return s;
  return [...s]
    .map((c) => (/^[A-Za-z0-9-]$/.test(c) ? c : '_'))
    .slice(0, 64)
    .join('');
}

/** pi's image block as the API's (its type as pi has it: a kept image's type is the one read). */
const imageBlock = (b: { mimeType: unknown; data: string }): AnthropicImageBlock => ({
  type: 'image',
  source: { type: 'base64', media_type: b.mimeType as string, data: b.data },
});
const isPlainText = (b: AnthropicAssistantBlock): b is AnthropicTextBlock =>
  b.type === 'text' && Object.keys(b).length === 2;

/** A block the reader kept whole (`ctxfold.block`): checked when it was read, so of the type it was read as. */
const asRead = <T>(block: object): T => block as T;

/** What user-side content may hold: text, images, and the blocks a reader kept whole. */
type ContentBlock = AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock | AnthropicSearchResultBlock;

/** A replayed compaction's own assistant message (its blocks open the next assistant turn). */
type ReplayMessage = AnthropicAssistantMessage & { content: AnthropicAssistantBlock[] };

/** A kept tool change of a system message (`[index, block]`), or one made from pi's payload. */
function toolChangeOf(c: unknown): [number, AnthropicToolChangeBlock] | undefined {
  if (!isObject(c) || typeof c.name !== 'string') return undefined;
  // The change's type as pi's payload has it (written by this reader).
  const type = c.type as AnthropicToolChangeBlock['type'];
  return [Number.MAX_SAFE_INTEGER, { type, tool: { type: 'tool_reference', name: c.name } }];
}

/**
 * The signed block of an `anthropicCompaction` payload (spec: compaction §13): an on-demand
 * block (`compact-2026-09-04`) is sent back whole, as the API returned it (its signature covers
 * it); a threshold-lane one is made of the summary and its `encrypted_content`.
 */
function compactionBlockOf(payload: Loose, summary: string): AnthropicCompactionBlock {
  const whole = payload.block;
  if (isObject(whole) && whole.type === 'compaction') return { ...(whole as unknown as AnthropicCompactionBlock) };
  const block: AnthropicCompactionBlock = { type: 'compaction', content: summary };
  const encrypted = nonEmptyString(payload.encryptedContent);
  if (encrypted) block.encrypted_content = encrypted;
  return block;
}

/** Writes one request's messages; see `write`. */
class Writer {
  out: AnthropicMessage[] = [];
  #warnings: Warnings;
  #model: Loose | undefined;
  /** The last user message that a tool result or a continuation read from Anthropic may join. */
  #open: AnthropicUserMessage | null = null;
  /** The role of the previous provider message. */
  #prev: unknown;
  /** A replayed compaction block's own assistant message, waiting to open the next assistant turn. */
  #compaction: ReplayMessage | null = null;
  /** The harness's file lists of a replayed compaction, sent after the block. */
  #files: string[] = [];

  constructor(ctx: WriteContext) {
    this.#warnings = ctx.warnings;
    this.#model = isObject(ctx.model) ? ctx.model : undefined;
  }

  add(message: unknown): void {
    const m: Loose = isObject(message) ? message : {};
    const role = m.role;
    if (role === 'toolResult') this.#toolResult(m);
    else if (role === 'user' || role === 'developer') this.#userSide(m);
    else if (role === 'assistant') this.#assistant(m);
    else this.#warnings.dropped(`a ${kindOf(role) === 'string' ? role : kindOf(role)} message has no Anthropic form`);
    this.#prev = role;
  }

  end(): void {
    this.#flushFiles();
  }

  #push(msg: AnthropicMessage, open: AnthropicUserMessage | null = null): void {
    this.out.push(msg);
    this.#open = open;
    this.#compaction = null;
  }

  #flushFiles(): void {
    for (const text of this.#files.splice(0)) if (!blank(text)) this.#push({ role: 'user', content: text });
  }

  #userSide(m: Loose): void {
    const x = extrasOf(m, name);
    const payload = isObject(m.providerPayload) ? m.providerPayload : undefined;
    const summary = nonEmptyString(payload?.content);
    if (payload?.type === 'anthropicCompaction' && summary) {
      this.#replay(payload, summary);
      return;
    }
    const at = this.out.length;
    if (m.role === 'developer' && payload?.type === 'anthropicMessage') {
      this.#systemMessage(m, payload, x);
      return;
    }
    let content = this.#userContent(m.content, at, m.role === 'developer' ? 'developer' : 'user');
    if (!x && (typeof content === 'string' ? blank(content) : content.length === 0)) {
      // An empty text carries nothing; dropped blocks were reported one by one.
      if (typeof content === 'string' && content !== '') {
        this.#warnings.dropped(`a whitespace-only ${m.role} message was left out`, at);
      }
      return;
    }
    if (x?.join && this.#open !== null) {
      const into = this.#open;
      if (typeof into.content === 'string') into.content = [{ type: 'text', text: into.content }];
      if (typeof content === 'string') content = [{ type: 'text', text: content }];
      into.content.push(...content);
      return;
    }
    if (m.role === 'developer') this.#warnings.converted('a developer message is sent as a user message', at);
    this.#flushFiles();
    const msg = assignFields<AnthropicUserMessage>({ role: 'user', content }, x?.fields);
    // Only the user's own messages continue into a tool result: never a summary.
    this.#push(msg, m.role === 'user' && m.attribution !== 'agent' ? msg : null);
  }

  /** The summary as the `compaction` block the API signed (spec: compaction §13). */
  #replay(payload: Loose, summary: string): void {
    this.#flushFiles();
    const msg: ReplayMessage = { role: 'assistant', content: [compactionBlockOf(payload, summary)] };
    this.#push(msg);
    this.#compaction = msg;
    const files = nonEmptyString(payload.filesText);
    if (files) this.#files.push(files);
  }

  #systemMessage(m: Loose, payload: Loose, x: Loose | undefined): void {
    this.#flushFiles();
    // Text only (no images): text blocks, and the text blocks a reader kept whole.
    let content = this.#userContent(m.content, this.out.length, 'system', false) as AnthropicSystemMessage['content'];
    const kept = x?.controls;
    const controls: Array<[number, AnthropicToolChangeBlock]> = [];
    if (Array.isArray(kept)) {
      for (const c of kept as unknown[]) {
        // The reader's own `[index, block]` pairs, blocks as they were read.
        if (Array.isArray(c) && Number.isInteger(c[0]) && isObject(c[1])) {
          controls.push(c as [number, AnthropicToolChangeBlock]);
        }
      }
    } else {
      for (const c of Array.isArray(payload.toolChanges) ? (payload.toolChanges as unknown[]) : []) {
        const change = toolChangeOf(c);
        if (change !== undefined) controls.push(change);
      }
    }
    if (controls.length > 0) {
      if (typeof content === 'string') content = content === '' ? [] : [{ type: 'text', text: content }];
      for (const [j, block] of controls) content.splice(Math.min(j, content.length), 0, block);
    }
    const msg: AnthropicSystemMessage = { role: 'system', content };
    if (isClearAt(payload.clearAt)) msg.clear_at = payload.clearAt;
    const effort = nonEmptyString(payload.effort);
    // The effort as pi's payload has it (written by this reader).
    if (effort) msg.output_config = { effort: effort as Effort };
    this.#push(assignFields(msg, x?.fields));
  }

  /**
   * User-side content as the API takes it: a string stays a string; text (a kept block in its
   * own form), images of the types the API reads, nothing else. `images`: false where the
   * target takes text only.
   */
  #userContent(content: unknown, at: number, where: string, images = true): string | ContentBlock[] {
    if (typeof content === 'string') return content;
    const out: ContentBlock[] = [];
    (Array.isArray(content) ? (content as unknown[]) : []).forEach((c, k) => {
      const path = `content[${k}]`;
      const bx = extrasOf(c, name);
      const b: Loose = isObject(c) ? c : {};
      if (b.type === 'text' && typeof b.text === 'string') {
        const kept = bx?.block;
        // A block the reader kept whole, as it was read.
        if (isObject(kept) && describe(kept) === b.text) out.push(asRead<ContentBlock>(kept));
        else if (bx || !blank(b.text))
          out.push(assignFields<AnthropicTextBlock>({ type: 'text', text: b.text }, bx?.fields));
        else if (b.text !== '') this.#warnings.dropped(`whitespace-only text in a ${where} message`, at, path);
      } else if (b.type === 'image' && images && (bx || IMAGE_TYPES.has(b.mimeType)) && typeof b.data === 'string') {
        out.push(assignFields(imageBlock({ mimeType: b.mimeType, data: b.data }), bx?.fields));
      } else if (b.type === 'image' && images) {
        this.#warnings.converted(`an image of type ${b.mimeType} the API does not read is sent as a note`, at, path);
        out.push({ type: 'text', text: `[unsupported image: ${b.mimeType}]` });
      } else {
        this.#warnings.dropped(`a ${b.type} block has no form in an Anthropic ${where} message`, at, path);
      }
    });
    return out;
  }

  #toolResult(m: Loose): void {
    const x = extrasOf(m, name);
    const join = x?.join ? this.#open : this.#prev === 'toolResult' && !x?.split ? this.#open : null;
    const at = join === null ? this.out.length : this.out.length - 1;
    const id = this.#id(m.toolCallId, at);
    const block: AnthropicToolResultBlock = { type: 'tool_result', tool_use_id: id };
    const parts: unknown[] = Array.isArray(m.content) ? m.content : [];
    if (
      x?.string &&
      parts.length <= 1 &&
      parts.every((b) => isObject(b) && b.type === 'text' && typeof b.text === 'string')
    ) {
      const [first] = parts;
      block.content = isObject(first) && typeof first.text === 'string' ? first.text : '';
    } else {
      const content = this.#userContent(parts, at, 'tool result');
      if (content.length > 0 || (x && !x.noContent)) block.content = content;
    }
    if (m.isError === true) block.is_error = true;
    else if (x?.isErrorFalse) block.is_error = false;
    assignFields(block, x?.fields);
    if (join !== null) {
      if (typeof join.content === 'string') join.content = [{ type: 'text', text: join.content }];
      join.content.push(block);
    } else {
      if (this.#prev !== 'toolResult') this.#flushFiles();
      const msg: AnthropicUserMessage = { role: 'user', content: [block] };
      this.#push(msg, msg);
    }
  }

  #id(id: unknown, at: number): string {
    const wire = toolId(id);
    if (wire !== id) this.#warnings.converted(`tool-use id ${quoteName(String(id))} is sent as '${wire}'`, at);
    return wire;
  }

  /**
   * Whether an assistant message is the reading provider's own: its thinking signatures,
   * redacted thinking and server-tool blocks are replayed as they are. Others' thinking is sent
   * as text (the API verifies signatures), what has no Anthropic form is left out.
   */
  #native(m: Loose): boolean {
    return m.api === API && (this.#model === undefined || this.#model.provider === m.provider);
  }

  #assistant(m: Loose): void {
    if (this.#prev === 'toolResult') this.#flushFiles();
    const x = extrasOf(m, name);
    const native = this.#native(m);
    const at = this.out.length;
    const blocks: AnthropicAssistantBlock[] = [];
    const payload = isObject(m.providerPayload) ? m.providerPayload : undefined;
    const summary = nonEmptyString(payload?.content);
    if (payload?.type === 'anthropicCompaction' && summary) {
      const replays = native && (this.#model === undefined || replayTarget(this.#model)?.provider === payload.provider);
      if (replays) {
        blocks.push(compactionBlockOf(payload, summary));
      } else {
        this.#warnings.dropped('a compaction block the reading model cannot replay was left out', at);
      }
    }
    (Array.isArray(m.content) ? (m.content as unknown[]) : []).forEach((b, k) => {
      const block = this.#assistantBlock(b, native, at, `content[${k}]`);
      if (block !== undefined) blocks.push(block);
    });
    if (!native) {
      // The API takes a turn's tool uses after its other blocks.
      const calls = blocks.filter((b) => b.type === 'tool_use');
      const [firstCall] = calls;
      const from = firstCall === undefined ? -1 : blocks.indexOf(firstCall);
      if (from >= 0 && blocks.some((b, k) => k > from && b.type !== 'tool_use')) {
        blocks.splice(0, blocks.length, ...blocks.filter((b) => b.type !== 'tool_use'), ...calls);
      }
    }
    if (blocks.length === 0 && !x) {
      if (Array.isArray(m.content) && m.content.length > 0) {
        this.#warnings.dropped('an assistant message with no content the API takes was left out', at);
      }
      return;
    }
    if (this.#compaction !== null && this.#compaction === this.out.at(-1)) {
      // The replayed block opens the turn it was produced in.
      this.out.pop();
      blocks.unshift(...this.#compaction.content);
    }
    let content: string | AnthropicAssistantBlock[] = blocks;
    const [only] = blocks;
    if (x?.string && blocks.length === 0) content = '';
    else if (x?.string && blocks.length === 1 && only !== undefined && isPlainText(only)) content = only.text;
    this.#push(assignFields<AnthropicAssistantMessage>({ role: 'assistant', content }, x?.fields));
    if (!blocks.some((b) => b.type === 'tool_use')) this.#flushFiles();
  }

  #assistantBlock(c: unknown, native: boolean, at: number, path: string): AnthropicAssistantBlock | undefined {
    const bx = extrasOf(c, name);
    const b: Loose = isObject(c) ? c : {};
    const type = b.type;
    if (type === 'text' && typeof b.text === 'string') {
      if (bx || !blank(b.text)) return assignFields<AnthropicTextBlock>({ type: 'text', text: b.text }, bx?.fields);
      if (b.text !== '') this.#warnings.dropped('whitespace-only text in an assistant message', at, path);
      return undefined;
    }
    if (type === 'thinking' && typeof b.thinking === 'string') {
      const signature = b.thinkingSignature;
      const signed = typeof signature === 'string';
      if (native && (signed || bx)) {
        const block: Omit<AnthropicThinkingBlock, 'signature'> & { signature?: string } = {
          type: 'thinking',
          thinking: b.thinking,
        };
        if (signed) block.signature = signature;
        // A thinking block read without its signature goes back without one.
        return assignFields(block as AnthropicThinkingBlock, bx?.fields);
      }
      if (blank(b.thinking)) {
        if (signed || b.thinking !== '') this.#warnings.dropped('blank unverifiable thinking', at, path);
        return undefined;
      }
      this.#warnings.converted(
        native ? 'unsigned thinking is sent as text' : "another provider's thinking is sent as text",
        at,
        path,
      );
      return { type: 'text', text: b.thinking };
    }
    if (type === 'redactedThinking' && native && typeof b.data === 'string') {
      return assignFields<AnthropicRedactedThinkingBlock>({ type: 'redacted_thinking', data: b.data }, bx?.fields);
    }
    if (type === 'anthropicServerTool' && native && isObject(b.block)) return asRead<AnthropicAssistantBlock>(b.block);
    if (type === 'toolCall') {
      // pi's arguments: JSON data.
      const input = (isObject(b.arguments) ? b.arguments : {}) as JsonObject;
      const call: AnthropicToolUseBlock = {
        type: 'tool_use',
        id: this.#id(b.id, at),
        name: String(b.name ?? ''),
        input,
      };
      return assignFields(call, bx?.fields);
    }
    const what = native ? `a ${type} block` : `a ${type} block of another provider`;
    this.#warnings.dropped(`${what} has no form in an Anthropic assistant message`, at, path);
    return undefined;
  }
}

type Effort = NonNullable<NonNullable<AnthropicSystemMessage['output_config']>['effort']>;

// ----- the remote compaction lane ---------------------------------------------------------------

/** The model a history's compaction blocks are replayed to: a Messages API one with server compaction. */
export interface ReplayModel {
  provider: string | undefined;
  api: typeof API;
}

/** The wasm export `replayTarget` asks (the glue's `nativeLanesJson`). */
interface LanesExport {
  nativeLanesJson(options: string, settings: string | undefined, tokens: number | undefined, planned: boolean): string;
}

/**
 * The `model` option of `toLlmMessages` as the core reads it: a Messages API model replays
 * the compaction blocks of its provider (`{provider, api: 'anthropic-messages'}`) only on a
 * model line and route with server compaction (the core's rule, `nativeLanesJson`), and none
 * otherwise (undefined); every other model is passed on as it is.
 */
export function replayTarget<M>(model: M): M | ReplayModel | undefined {
  if (model === null || typeof model !== 'object') return model;
  let lanes: unknown;
  try {
    // The core's lanes for this model alone (a BigInt member is left out of its JSON).
    const options = JSON.stringify({ model }, (_k, x) => (typeof x === 'bigint' ? undefined : x));
    const raw: LanesExport = requireRaw();
    lanes = JSON.parse(raw.nativeLanesJson(options, undefined, undefined, false));
  } catch {
    // A model that is no JSON data replays nothing.
    return undefined;
  }
  if (!isObject(lanes) || !lanes.messagesApi) return model;
  if (lanes.anthropic !== null) return undefined;
  const claude = isObject(lanes.claude) ? lanes.claude : {};
  return { provider: typeof claude.provider === 'string' ? claude.provider : undefined, api: API };
}

const textBlock = (text: string): AnthropicTextBlock => ({ type: 'text', text });
const stringOrEmpty = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Text and image blocks of user-side content (a string or an array of blocks). */
function laneUserBlocks(content: unknown): Array<AnthropicTextBlock | AnthropicImageBlock> {
  if (typeof content === 'string') return blank(content) ? [] : [textBlock(content)];
  const out: Array<AnthropicTextBlock | AnthropicImageBlock> = [];
  for (const c of Array.isArray(content) ? (content as unknown[]) : []) {
    const b: Loose = isObject(c) ? c : {};
    if (b.type === 'text' && hasText(b.text)) out.push(textBlock(b.text));
    if (b.type === 'image') out.push(imageBlock({ mimeType: stringOrEmpty(b.mimeType), data: stringOrEmpty(b.data) }));
  }
  return out;
}

/**
 * An assistant message's blocks: text, signed thinking (unsigned thinking as text), redacted
 * thinking, tool calls last (the API wants a turn's tool uses after its other blocks).
 */
function laneAssistantBlocks(content: unknown): AnthropicAssistantBlock[] {
  const out: AnthropicAssistantBlock[] = [];
  const calls: AnthropicToolUseBlock[] = [];
  for (const c of Array.isArray(content) ? (content as unknown[]) : []) {
    const b: Loose = isObject(c) ? c : {};
    const data = nonEmptyString(b.data);
    if (b.type === 'text' && hasText(b.text)) out.push(textBlock(b.text));
    else if (b.type === 'thinking' && hasText(b.thinkingSignature)) {
      out.push({ type: 'thinking', thinking: stringOrEmpty(b.thinking), signature: b.thinkingSignature });
    } else if (b.type === 'thinking' && hasText(b.thinking)) out.push(textBlock(b.thinking));
    else if (b.type === 'redactedThinking' && data) out.push({ type: 'redacted_thinking', data });
    else if (b.type === 'toolCall') {
      calls.push({
        type: 'tool_use',
        id: toolId(b.id),
        name: stringOrEmpty(b.name),
        // pi's arguments: JSON data.
        input: (isObject(b.arguments) ? b.arguments : {}) as JsonObject,
      });
    }
  }
  return [...out, ...calls];
}

const laneResult = (
  id: string,
  content: Array<AnthropicTextBlock | AnthropicImageBlock>,
  isError: boolean,
): AnthropicToolResultBlock => ({ type: 'tool_result', tool_use_id: id, content, is_error: isError });

/**
 * Provider messages (spec: compaction §2.6) → Anthropic wire messages for the `remote` lane,
 * repaired into a request the API accepts whatever the history's origin. Consecutive tool
 * results become one user message; each result answers a call of the assistant turn right
 * before it (a result without one is dropped, a call without one gets an error result, as the
 * API accepts no unpaired tool use); empty messages are dropped; two assistant turns in a row
 * get a `Continue.` user turn between them.
 */
export function wireMessages(messages: readonly unknown[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  // Calls of the last assistant turn still waiting for their result (id → how many calls
  // carry it, in call order: a lookup per result, not a scan), and the results so far.
  let open = new Map<string, number>();
  let results: AnthropicToolResultBlock[] = [];
  const close = () => {
    for (const [id, n] of open)
      for (let k = 0; k < n; k++) results.push(laneResult(id, [textBlock('No result provided')], true));
    if (results.length > 0) out.push({ role: 'user', content: results });
    open = new Map();
    results = [];
  };
  for (const message of messages) {
    const m: Loose = isObject(message) ? message : {};
    if (m.role === 'toolResult') {
      const id = toolId(m.toolCallId);
      const n = open.get(id) ?? 0;
      if (n > 0) {
        if (n === 1) open.delete(id);
        else open.set(id, n - 1);
        results.push(laneResult(id, laneUserBlocks(m.content), m.isError === true));
      }
      continue;
    }
    close();
    if (m.role === 'assistant') {
      const content = laneAssistantBlocks(m.content);
      if (content.length === 0) continue;
      if (out.at(-1)?.role === 'assistant') out.push({ role: 'user', content: [textBlock('Continue.')] });
      open = new Map();
      for (const b of content) if (b.type === 'tool_use') open.set(b.id, (open.get(b.id) ?? 0) + 1);
      out.push({ role: 'assistant', content });
    } else if (m.role === 'user' || m.role === 'developer') {
      const content = laneUserBlocks(m.content);
      if (content.length === 0) continue;
      out.push({ role: 'user', content });
    }
  }
  close();
  return out;
}
