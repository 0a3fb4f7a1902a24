// The `ai-sdk-ui` format: the AI SDK's `UIMessage`s as `useChat` holds them (ai 7: `id`, `role`,
// `metadata`, `parts`), read into AgentMessages and written back from the LLM view.
//
// A user or system UIMessage is one message. An assistant UIMessage holds a whole tool loop:
// its `step-start` parts divide it into steps, and a tool part holds a call and its output
// together. Each step becomes an assistant message (text, reasoning, tool calls, images) and
// then the tool results of its outputs, so the core's cut points (never a tool result) fall at
// step starts and never between a call and its output. What pi's model has no field for is
// kept under `ctxfold` (common.js): on every message the UIMessage `id`, its step group `g`,
// `metadata`, and a `layout` (the step's parts in order: a number names the modelled part with
// that `k`, an object is a part kept as it was: step-start, sources, data parts, tool parts
// still waiting for their output); on every block the part's other fields (`rest`). The
// writer regroups consecutive entries of one id into the UIMessage, so an uncompacted history
// comes back equal.
//
// A compacted view starts with a user UIMessage (id: the compaction entry's) holding a
// `data-compaction` part for the UI, the summary as text and the snapcompact frames as file
// parts for the model: pi sends summaries as user messages, and only user content takes images.
import type {
  AgentMessage,
  AssistantContent,
  AssistantMessage,
  DeveloperMessage,
  ImageContent,
  JsonObject,
  LlmMessage,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolResultMessage,
  UserMessage,
} from '../core/session.js';
import {
  type Carrying,
  dataUrl,
  extrasOf as extrasOfFormat,
  invalidMessage,
  isObject,
  keepExtras,
  kindOf,
  type Loose,
  parseDataUrl,
  RAW_ARGUMENTS,
  type ReadContext,
  requireString,
  systemPromptLength,
  type Warnings,
  type WriteContext,
} from './common.js';

// ----- the messages of this format ---------------------------------------------------------
// The AI SDK's `UIMessage` (ai 7) as `useChat` holds it. Written from the SDK's declarations
// and wide enough that its `UIMessage[]` is accepted as it is (tool inputs and outputs, data
// and metadata are `unknown` here).

/** A JSON value as the AI SDK types it (object members may be undefined). */
export type AiSdkUiJsonValue =
  | null
  | string
  | number
  | boolean
  | Readonly<AiSdkUiJsonObject>
  | readonly AiSdkUiJsonValue[];
export type AiSdkUiJsonObject = { [key: string]: AiSdkUiJsonValue | undefined };

/** A source a text part cites (the SDK's citation). */
export interface AiSdkUiCitation {
  source:
    | {
        type: 'source';
        sourceType: 'url';
        id: string;
        url: string;
        title?: string;
        providerMetadata?: AiSdkUiProviderMetadata;
      }
    | {
        type: 'source';
        sourceType: 'document';
        id: string;
        mediaType: string;
        title: string;
        filename?: string;
        providerMetadata?: AiSdkUiProviderMetadata;
      };
  startIndex?: number;
  endIndex?: number;
  citedText?: string;
}

/** A provider's metadata on a part (`{ anthropic: { signature } }`, `{ openai: { itemId } }`, …). */
export type AiSdkUiProviderMetadata = Record<string, AiSdkUiJsonObject>;

export interface AiSdkUiTextPart {
  type: 'text';
  text: string;
  state?: 'streaming' | 'done';
  citations?: AiSdkUiCitation[];
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiReasoningPart {
  type: 'reasoning';
  id?: string;
  text: string;
  state?: 'streaming' | 'done';
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiFilePart {
  type: 'file';
  /** `image/png`, `application/pdf`, … (or a top-level type such as `image`). */
  mediaType: string;
  filename?: string;
  /** A hosted file's URL or a `data:` URL. */
  url: string;
  /** Provider file ids of an uploaded file (`{ openai: 'file-…' }`); used instead of `url`. */
  providerReference?: Record<string, string>;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiReasoningFilePart {
  type: 'reasoning-file';
  mediaType: string;
  url: string;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiSourceUrlPart {
  type: 'source-url';
  sourceId: string;
  url: string;
  title?: string;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiSourceDocumentPart {
  type: 'source-document';
  sourceId: string;
  mediaType: string;
  title: string;
  filename?: string;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiCustomPart {
  type: 'custom';
  kind: `${string}.${string}`;
  providerMetadata?: AiSdkUiProviderMetadata;
}
export interface AiSdkUiSteeringPart {
  type: 'steering-message';
  id: string;
  parts: Array<AiSdkUiTextPart | AiSdkUiFilePart>;
}
export interface AiSdkUiStepStartPart {
  type: 'step-start';
}
/** A `data-<name>` part: the app's own data, for the UI only (the model does not see it). */
export interface AiSdkUiDataPart {
  type: `data-${string}`;
  id?: string;
  data: unknown;
}

/** What the writer puts in the `data-compaction` part of a compacted view's first UIMessage. */
export interface AiSdkUiCompactionData {
  /** The compaction entry's summary (the text part of the same UIMessage is what the model reads). */
  summary: string;
  method?: 'window' | 'remote' | 'snapcompact' | 'handoff' | 'soft' | 'shake';
  tokensBefore?: number;
  tokensAfter?: number;
  /** The UIMessage id of the first kept entry: the first UIMessage after this one. */
  firstKeptMessageId?: string;
  /** snapcompact frames attached to this UIMessage as file parts (0 for a text summary). */
  frames: number;
}
export interface AiSdkUiCompactionPart {
  type: 'data-compaction';
  /** The compaction entry's id (the UIMessage's too). */
  id?: string;
  data: AiSdkUiCompactionData;
}

/** A tool approval: asked for (`approved` unset), then answered. */
export interface AiSdkUiApproval {
  id: string;
  descriptor?: unknown;
  requestReason?: string;
  isAutomatic?: boolean;
  signature?: string;
  inputSchemaInput?: unknown;
}
/** An approval the user answered (`reason` is theirs). */
export type AiSdkUiAnsweredApproval<A extends boolean> = AiSdkUiApproval & { approved: A; reason?: string };

interface AiSdkUiToolBase {
  toolCallId: string;
  title?: string;
  toolMetadata?: AiSdkUiJsonObject;
  providerExecuted?: boolean;
  callProviderMetadata?: AiSdkUiProviderMetadata;
}
/** A tool part's call and, once there is one, its output: one state of the SDK's seven. */
export type AiSdkUiToolState = AiSdkUiToolBase &
  (
    | {
        state: 'input-streaming';
        input?: unknown;
        rawInput?: string;
        inputEncoding?: 'json' | 'text';
        approval?: never;
      }
    | { state: 'input-available'; input: unknown; approval?: never }
    | { state: 'approval-requested'; input: unknown; approval: AiSdkUiApproval & { approved?: never; reason?: never } }
    | { state: 'approval-responded'; input: unknown; approval: AiSdkUiAnsweredApproval<boolean> }
    | {
        state: 'output-available';
        input: unknown;
        output: unknown;
        resultProviderMetadata?: AiSdkUiProviderMetadata;
        preliminary?: boolean;
        approval?: AiSdkUiAnsweredApproval<true>;
      }
    | {
        state: 'output-error';
        /** Required by the SDK's type, may be undefined (and absent in JSON). */
        input: unknown;
        rawInput?: unknown;
        errorText: string;
        resultProviderMetadata?: AiSdkUiProviderMetadata;
        approval?: AiSdkUiAnsweredApproval<true>;
      }
    | { state: 'output-denied'; input: unknown; approval: AiSdkUiAnsweredApproval<false> }
  );
/** A static tool's part: `tool-<name>`. */
export type AiSdkUiToolPart = { type: `tool-${string}` } & AiSdkUiToolState;
/** A tool known only at run time (MCP, …). */
export type AiSdkUiDynamicToolPart = { type: 'dynamic-tool'; toolName: string; dynamic?: false } & AiSdkUiToolState;

export type AiSdkUiPart =
  | AiSdkUiTextPart
  | AiSdkUiReasoningPart
  | AiSdkUiFilePart
  | AiSdkUiReasoningFilePart
  | AiSdkUiSourceUrlPart
  | AiSdkUiSourceDocumentPart
  | AiSdkUiCustomPart
  | AiSdkUiSteeringPart
  | AiSdkUiStepStartPart
  | AiSdkUiToolPart
  | AiSdkUiDynamicToolPart
  | AiSdkUiCompactionPart
  | AiSdkUiDataPart;

/** A UIMessage: what `useChat` holds and sends. */
export interface AiSdkUiMessage {
  id: string;
  role: 'system' | 'user' | 'assistant';
  metadata?: unknown;
  parts: AiSdkUiPart[];
}

/**
 * The system prompt: the leading system UIMessages a history starts with (written back first
 * in `messages`), or text (`fromMessages(…, { system })`), written as one system UIMessage.
 */
export type AiSdkUiSystem = AiSdkUiMessage[];

// ----- what this module is given -----------------------------------------------------------

/** An array (of values not checked yet). */
const isArray = (v: unknown): v is readonly unknown[] => Array.isArray(v);

/** The caller's `model` option (`FormatModel`), not checked: its members are read as given. */
interface ModelOption {
  provider?: string;
  api?: string;
  id?: string;
}

/** The session methods the writer asks about a compaction (core/session). */
interface SessionView {
  readonly leafId: string | null;
  readonly size: number;
  buildContext(options?: { leafId: string | null }): { compactionId?: string; firstKeptEntryId?: string };
  entry(id: string): unknown;
}

/** What `write` is given: `session` the session written from (its compaction entry is read). */
interface UiWriteContext extends WriteContext {
  session?: SessionView | undefined;
}

/** A tool part, static or dynamic. */
type ToolPart = AiSdkUiToolPart | AiSdkUiDynamicToolPart;

export const name = 'ai-sdk-ui';

const ROLES = new Set<unknown>(['system', 'user', 'assistant']);
const TOOL_STATES = new Set<unknown>([
  'input-streaming',
  'input-available',
  'approval-requested',
  'approval-responded',
  'output-available',
  'output-error',
  'output-denied',
]);
/** A UIMessage's own members; any other (an older SDK's `createdAt`, …) is kept as `more`. */
const MESSAGE_KEYS = ['id', 'role', 'metadata', 'parts'];
const DENIED = 'Tool call execution denied.';
const EXECUTION_DENIED = 'Tool execution denied.';

/** A member of any object, as JavaScript reads it. */
const member = (node: object, key: string): unknown => Reflect.get(node, key);

// ----- checks ---------------------------------------------------------------------------------

function optStr(part: Loose, key: string, index: number, path: string): void {
  if (part[key] !== undefined) requireString(part[key], index, `${path}.${key}`);
}

function optObj(part: Loose, key: string, index: number, path: string): void {
  const v = part[key];
  if (v !== undefined && !isObject(v)) {
    throw invalidMessage(index, `${path}.${key}`, `must be an object, got ${kindOf(v)}`);
  }
}

function optBool(part: Loose, key: string, index: number, path: string): void {
  const v = part[key];
  if (v !== undefined && typeof v !== 'boolean') {
    throw invalidMessage(index, `${path}.${key}`, `must be a boolean, got ${kindOf(v)}`);
  }
}

function textState(part: Loose, index: number, path: string): void {
  const s = part.state;
  if (s !== undefined && s !== 'streaming' && s !== 'done') {
    throw invalidMessage(index, `${path}.state`, `must be 'streaming' or 'done', got ${JSON.stringify(s)}`);
  }
}

/** A tool part's `approval`, as its state requires. */
function checkApproval(part: Loose, index: number, path: string): void {
  const { state, approval } = part;
  const needed = state === 'approval-requested' || state === 'approval-responded' || state === 'output-denied';
  if (approval === undefined) {
    if (needed) throw invalidMessage(index, `${path}.approval`, `is required in state ${state}`);
    return;
  }
  if (!isObject(approval))
    throw invalidMessage(index, `${path}.approval`, `must be an object, got ${kindOf(approval)}`);
  if (state === 'input-streaming' || state === 'input-available') {
    throw invalidMessage(index, `${path}.approval`, `is not allowed in state ${state}`);
  }
  requireString(approval.id, index, `${path}.approval.id`);
  const a = approval.approved;
  const want =
    state === 'approval-requested'
      ? a === undefined
      : state === 'approval-responded'
        ? typeof a === 'boolean'
        : state === 'output-denied'
          ? a === false
          : a === true;
  if (!want) {
    throw invalidMessage(index, `${path}.approval.approved`, `does not fit state ${state}: ${JSON.stringify(a)}`);
  }
  optStr(approval, 'reason', index, `${path}.approval`);
  optStr(approval, 'requestReason', index, `${path}.approval`);
  optStr(approval, 'signature', index, `${path}.approval`);
  optBool(approval, 'isAutomatic', index, `${path}.approval`);
}

function checkTool(part: Loose, type: string, index: number, path: string): void {
  requireString(part.toolCallId, index, `${path}.toolCallId`);
  if (type === 'dynamic-tool') {
    requireString(part.toolName, index, `${path}.toolName`);
    if (part.dynamic !== undefined && part.dynamic !== false) {
      throw invalidMessage(index, `${path}.dynamic`, 'must be false when present');
    }
  } else if (type.length === 5) {
    throw invalidMessage(index, `${path}.type`, "names no tool ('tool-<name>')");
  }
  const { state } = part;
  if (!TOOL_STATES.has(state)) {
    throw invalidMessage(index, `${path}.state`, `must be a tool state, got ${JSON.stringify(state)}`);
  }
  if (state !== 'input-streaming' && state !== 'output-error' && !('input' in part)) {
    throw invalidMessage(index, `${path}.input`, `is required in state ${state}`);
  }
  if (state === 'output-available') {
    if (!('output' in part)) throw invalidMessage(index, `${path}.output`, 'is required in state output-available');
  } else if (part.output !== undefined) {
    throw invalidMessage(index, `${path}.output`, `is not allowed in state ${state}`);
  }
  if (state === 'output-error') requireString(part.errorText, index, `${path}.errorText`);
  else if (part.errorText !== undefined)
    throw invalidMessage(index, `${path}.errorText`, `is not allowed in state ${state}`);
  checkApproval(part, index, path);
  optStr(part, 'title', index, path);
  optObj(part, 'toolMetadata', index, path);
  optBool(part, 'providerExecuted', index, path);
  optBool(part, 'preliminary', index, path);
  optObj(part, 'callProviderMetadata', index, path);
  optObj(part, 'resultProviderMetadata', index, path);
  if (part.inputEncoding !== undefined && part.inputEncoding !== 'json' && part.inputEncoding !== 'text') {
    throw invalidMessage(index, `${path}.inputEncoding`, "must be 'json' or 'text'");
  }
}

function checkFile(part: Loose, index: number, path: string): void {
  requireString(part.mediaType, index, `${path}.mediaType`);
  requireString(part.url, index, `${path}.url`);
  optStr(part, 'filename', index, path);
  optObj(part, 'providerReference', index, path);
}

/**
 * Throws E_INVALID_MESSAGE unless `part` is a UIMessage part of ai 7. What is not checked
 * (tool inputs and outputs, data, metadata) is `unknown` in the part types too.
 */
function checkPart(part: unknown, index: number, path: string): asserts part is AiSdkUiPart {
  if (!isObject(part)) throw invalidMessage(index, path, `must be an object, got ${kindOf(part)}`);
  const { type } = part;
  if (typeof type !== 'string') throw invalidMessage(index, `${path}.type`, `must be a string, got ${kindOf(type)}`);
  optObj(part, 'providerMetadata', index, path);
  switch (type) {
    case 'text':
      requireString(part.text, index, `${path}.text`);
      textState(part, index, path);
      if (part.citations !== undefined && !isArray(part.citations)) {
        throw invalidMessage(index, `${path}.citations`, `must be an array, got ${kindOf(part.citations)}`);
      }
      return;
    case 'reasoning':
      requireString(part.text, index, `${path}.text`);
      textState(part, index, path);
      optStr(part, 'id', index, path);
      return;
    case 'file':
      checkFile(part, index, path);
      return;
    case 'reasoning-file':
      requireString(part.mediaType, index, `${path}.mediaType`);
      requireString(part.url, index, `${path}.url`);
      return;
    case 'source-url':
      requireString(part.sourceId, index, `${path}.sourceId`);
      requireString(part.url, index, `${path}.url`);
      optStr(part, 'title', index, path);
      return;
    case 'source-document':
      requireString(part.sourceId, index, `${path}.sourceId`);
      requireString(part.mediaType, index, `${path}.mediaType`);
      requireString(part.title, index, `${path}.title`);
      optStr(part, 'filename', index, path);
      return;
    case 'step-start':
      return;
    case 'custom':
      requireString(part.kind, index, `${path}.kind`);
      return;
    case 'steering-message': {
      requireString(part.id, index, `${path}.id`);
      if (!isArray(part.parts)) {
        throw invalidMessage(index, `${path}.parts`, `must be an array, got ${kindOf(part.parts)}`);
      }
      part.parts.forEach((p, j) => {
        const at = `${path}.parts[${j}]`;
        checkPart(p, index, at);
        if (p.type !== 'text' && p.type !== 'file') throw invalidMessage(index, `${at}.type`, 'must be text or file');
      });
      return;
    }
    default:
      if (type === 'dynamic-tool' || type.startsWith('tool-')) {
        checkTool(part, type, index, path);
        return;
      }
      if (type.startsWith('data-') && type.length > 5) {
        if (!('data' in part)) throw invalidMessage(index, `${path}.data`, 'is required');
        optStr(part, 'id', index, path);
        return;
      }
      throw invalidMessage(index, `${path}.type`, `unknown part type ${JSON.stringify(type)}`);
  }
}

function checkMessage(m: unknown, index: number): asserts m is AiSdkUiMessage {
  if (!isObject(m)) throw invalidMessage(index, '', `must be an object, got ${kindOf(m)}`);
  requireString(m.id, index, 'id');
  if (!ROLES.has(m.role)) {
    throw invalidMessage(index, 'role', `must be 'system', 'user' or 'assistant', got ${JSON.stringify(m.role)}`);
  }
  if (!isArray(m.parts)) throw invalidMessage(index, 'parts', `must be an array, got ${kindOf(m.parts)}`);
  for (let j = 0; j < m.parts.length; j++) checkPart(m.parts[j], index, `parts[${j}]`);
}

// ----- reading --------------------------------------------------------------------------------

/** The members of `part` other than `skip`, or undefined when there are none. */
function restOf(part: object, skip: readonly string[]): Loose | undefined {
  let rest: Loose | undefined;
  for (const key of Object.keys(part)) {
    if (skip.includes(key)) continue;
    rest ??= {};
    rest[key] = member(part, key);
  }
  return rest;
}

/**
 * The keys of `node` when the writer would not rebuild them in that order (`rebuilt`), so that
 * the JSON comes back the same, not only equal; undefined when it would.
 */
function orderOf(node: object, rebuilt: readonly string[]): string[] | undefined {
  const keys = Object.keys(node);
  if (keys.length === rebuilt.length && keys.every((k, j) => k === rebuilt[j])) return undefined;
  return keys;
}

const keysOf = (rest: Loose | undefined): string[] => (rest === undefined ? [] : Object.keys(rest));

const isImage = (mediaType: string): boolean => mediaType === 'image' || mediaType.startsWith('image/');

/** What a provider's metadata on a part says in pi's signature fields. */
interface Signatures {
  anthropic?: Loose | undefined;
  openai?: Loose | undefined;
  google?: string | undefined;
}

/** What a provider's metadata on a part says in pi's signature fields (the reference's conventions). */
function signatures(meta: unknown): Signatures {
  if (!isObject(meta)) return {};
  const google = isObject(meta.google) ? meta.google : isObject(meta.vertex) ? meta.vertex : undefined;
  return {
    anthropic: isObject(meta.anthropic) ? meta.anthropic : undefined,
    openai: isObject(meta.openai) ? meta.openai : undefined,
    google: typeof google?.thoughtSignature === 'string' ? google.thoughtSignature : undefined,
  };
}

/** The provider whose metadata a part carries, as a pi model (api, provider). */
function providerOf(meta: unknown): ModelOption | undefined {
  if (!isObject(meta)) return undefined;
  if (isObject(meta.anthropic)) return { api: 'anthropic-messages', provider: 'anthropic' };
  if (isObject(meta.openai)) return { api: 'openai-responses', provider: 'openai' };
  if (isObject(meta.google)) return { api: 'google-generative-ai', provider: 'google' };
  if (isObject(meta.vertex)) return { api: 'google-vertex', provider: 'google-vertex' };
  return undefined;
}

function textBlock(part: AiSdkUiTextPart): TextContent & Carrying {
  const block: TextContent = { type: 'text', text: part.text };
  const sig = signatures(part.providerMetadata);
  if (typeof sig.openai?.itemId === 'string') {
    const s: { v: number; id: string; phase?: string } = { v: 1, id: sig.openai.itemId };
    if (sig.openai.phase === 'commentary' || sig.openai.phase === 'final_answer') s.phase = sig.openai.phase;
    block.textSignature = JSON.stringify(s);
  } else if (sig.google !== undefined) {
    block.textSignature = sig.google;
  }
  const rest = restOf(part, ['type', 'text']);
  return keepExtras(block, name, { rest, order: orderOf(part, ['type', 'text', ...keysOf(rest)]) });
}

function reasoningBlock(part: AiSdkUiReasoningPart): AssistantContent & Carrying {
  const sig = signatures(part.providerMetadata);
  if (typeof sig.anthropic?.redactedData === 'string') {
    return keepExtras({ type: 'redactedThinking', data: sig.anthropic.redactedData }, name, {
      rest: restOf(part, ['type']),
    });
  }
  const block: ThinkingContent = { type: 'thinking', thinking: part.text };
  if (typeof sig.anthropic?.signature === 'string') block.thinkingSignature = sig.anthropic.signature;
  else if (typeof sig.openai?.itemId === 'string') {
    const item: Loose = {
      type: 'reasoning',
      id: sig.openai.itemId,
      summary: part.text === '' ? [] : [{ type: 'summary_text', text: part.text }],
    };
    if (typeof sig.openai.reasoningEncryptedContent === 'string') {
      item.encrypted_content = sig.openai.reasoningEncryptedContent;
    }
    block.thinkingSignature = JSON.stringify(item);
  } else if (sig.google !== undefined) block.thinkingSignature = sig.google;
  const rest = restOf(part, ['type', 'text']);
  return keepExtras(block, name, { rest, order: orderOf(part, ['type', 'text', ...keysOf(rest)]) });
}

/**
 * A file part: an image in a base64 `data:` URL is an image block; any other file (an image by
 * URL, a PDF, …) is a text block naming it for the other formats, with the part kept whole.
 */
function fileBlock(
  part: AiSdkUiFilePart,
  index: number,
  path: string,
  warnings: Warnings,
): (ImageContent | TextContent) & Carrying {
  const data = isImage(part.mediaType) ? parseDataUrl(part.url) : undefined;
  if (data?.mimeType.startsWith('image/')) {
    const skip = data.mimeType === part.mediaType ? ['type', 'url', 'mediaType'] : ['type', 'url'];
    const rest = restOf(part, skip);
    const rebuilt = ['type', 'mediaType', ...keysOf(rest).filter((k) => k !== 'mediaType'), 'url'];
    return keepExtras<ImageContent>({ type: 'image', data: data.data, mimeType: data.mimeType }, name, {
      rest,
      order: orderOf(part, rebuilt),
    });
  }
  const where = part.url.startsWith('data:') ? 'inline data' : part.url;
  const label = `${part.filename ?? where}, ${part.mediaType}`;
  warnings.converted(
    `a file part (${part.mediaType}) is kept as the text "[file: …]" for the other formats; ai-sdk-ui writes it back as it was`,
    index,
    path,
  );
  return keepExtras<TextContent>({ type: 'text', text: `[file: ${label}]` }, name, { part });
}

/** The JSON text of a tool output that is not a string. */
function outputText(output: unknown, index: number, path: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(output);
  } catch (err) {
    throw invalidMessage(index, path, `is not JSON: ${(err as Error | null)?.message ?? err}`);
  }
  if (typeof text !== 'string') throw invalidMessage(index, path, `is not JSON (${kindOf(output)})`);
  return text;
}

/** The tool result a tool part's output gives the model, or undefined while it waits for one. */
function toolResult(
  part: ToolPart,
  id: string,
  g: number,
  index: number,
  path: string,
): (ToolResultMessage & Carrying) | undefined {
  let text: string;
  let isError = true;
  let json: true | undefined;
  if (part.state === 'output-available') {
    isError = false;
    if (typeof part.output === 'string') text = part.output;
    else {
      text = outputText(part.output, index, `${path}.output`);
      json = true;
    }
  } else if (part.state === 'output-error') text = part.errorText;
  else if (part.state === 'output-denied') text = part.approval.reason ?? DENIED;
  else if (part.state === 'approval-responded' && part.approval.approved === false) {
    text = part.approval.reason ?? EXECUTION_DENIED;
  } else return undefined;
  const toolName = part.type === 'dynamic-tool' ? part.toolName : part.type.slice(5);
  const result: ToolResultMessage = {
    role: 'toolResult',
    toolCallId: part.toolCallId,
    toolName,
    content: [{ type: 'text', text }],
    isError,
  };
  return keepExtras(result, name, { id, g, json });
}

function toolCallBlock(part: ToolPart, pending: boolean): ToolCall & Carrying {
  const dynamic = part.type === 'dynamic-tool';
  const input = part.input;
  const plain = isObject(input);
  const block: ToolCall = {
    type: 'toolCall',
    id: part.toolCallId,
    name: part.type === 'dynamic-tool' ? part.toolName : part.type.slice(5),
    // The input as the SDK gave it: a JSON object of the call's arguments.
    arguments: plain ? (input as JsonObject) : typeof input === 'string' ? { [RAW_ARGUMENTS]: input } : {},
  };
  const sig = signatures(part.callProviderMetadata);
  if (typeof sig.openai?.itemId === 'string') block.thoughtSignature = sig.openai.itemId;
  else if (sig.google !== undefined) block.thoughtSignature = sig.google;
  const skip = ['type', 'toolCallId', 'output', 'errorText'];
  if (dynamic) skip.push('toolName');
  if (plain) skip.push('input');
  const rest = restOf(part, skip);
  const rebuilt = dynamic ? ['type', 'toolName', 'toolCallId'] : ['type', 'toolCallId'];
  rebuilt.push(...keysOf(rest));
  if (plain) rebuilt.push('input');
  if (part.state === 'output-available') rebuilt.push('output');
  else if (part.state === 'output-error') rebuilt.push('errorText');
  return keepExtras(block, name, {
    rest,
    dynamic: dynamic || undefined,
    noInput: 'input' in part ? undefined : true,
    pending: pending || undefined,
    order: pending ? undefined : orderOf(part, rebuilt),
  });
}

/** Whether a tool part has an output (or a denial) the model sees as a tool result. */
function hasResult(part: ToolPart): boolean {
  const s = part.state;
  return (
    s === 'output-available' ||
    s === 'output-error' ||
    s === 'output-denied' ||
    (part.state === 'approval-responded' && part.approval.approved === false)
  );
}

const isTool = (part: AiSdkUiPart): part is ToolPart => part.type === 'dynamic-tool' || part.type.startsWith('tool-');

/** Whether parts `from…to` hold a part the LLM view keeps: text, reasoning, a file, a tool output. */
function hasSolid(parts: readonly AiSdkUiPart[], from: number, to: number): boolean {
  for (const p of parts.slice(from, to)) {
    if (p.type === 'text' || p.type === 'file' || p.type === 'reasoning') return true;
    if (isTool(p) && hasResult(p)) return true;
  }
  return false;
}

/** Sets `block.ctxfold.k` (the block's place in the layout). */
function numbered(block: Carrying, k: number): void {
  // The reader's own extras (an object it made), or new ones.
  const x: Loose = isObject(block.ctxfold) ? block.ctxfold : { format: name };
  x.k = k;
  block.ctxfold = x;
}

/** The key order of a UIMessage when the writer would not rebuild it (id, role, metadata, parts, more). */
function messageOrder(m: AiSdkUiMessage): string[] | undefined {
  const rebuilt = ['id', 'role'];
  if ('metadata' in m) rebuilt.push('metadata');
  rebuilt.push('parts', ...keysOf(restOf(m, MESSAGE_KEYS)));
  return orderOf(m, rebuilt);
}

/** A layout entry: the modelled part `k`, or a part kept as it was. */
type LayoutItem = number | AiSdkUiPart;

/** Whether `layout` is 0…n-1 (every part modelled, in order), so it need not be kept. */
function trivial(layout: readonly LayoutItem[]): boolean {
  for (let j = 0; j < layout.length; j++) if (layout[j] !== j) return false;
  return true;
}

/** A block read from a part. */
type ReadBlock = AssistantContent & Carrying;

/** A block a user message holds: text or an image. */
const isUserBlock = (b: ReadBlock): b is (TextContent | ImageContent) & Carrying =>
  b.type === 'text' || b.type === 'image';

/**
 * The blocks and layout of a run of parts. `blocks[k]` is the modelled part `k`; a layout
 * entry is `k` or a part kept as it was.
 */
function contentOf(
  parts: readonly AiSdkUiPart[],
  from: number,
  to: number,
  role: 'user' | 'assistant',
  index: number,
  ctx: ReadContext,
  results: Array<ToolResultMessage & Carrying>,
  g: number,
  id: string,
): { blocks: ReadBlock[]; layout: LayoutItem[] } {
  const blocks: ReadBlock[] = [];
  const layout: LayoutItem[] = [];
  // The core drops an assistant message left empty when it strips calls without results, so
  // such calls become blocks only beside a part that stays.
  const solid = role === 'assistant' && hasSolid(parts, from, to);
  parts.slice(from, to).forEach((part, at) => {
    const path = `parts[${from + at}]`;
    let block: ReadBlock;
    if (part.type === 'text') block = textBlock(part);
    else if (part.type === 'file') block = fileBlock(part, index, path, ctx.warnings);
    else if (role === 'assistant' && part.type === 'reasoning') block = reasoningBlock(part);
    else if (role === 'assistant' && isTool(part)) {
      const done = hasResult(part);
      block = toolCallBlock(part, !done);
      if (done) {
        const result = toolResult(part, id, g, index, path);
        // `hasResult` holds: there is one.
        if (result !== undefined) results.push(result);
      } else {
        ctx.warnings.converted(
          `a tool part in state ${part.state} has no output: a call without a result, which the LLM view (every other format) leaves out; ai-sdk-ui writes the part back as it was`,
          index,
          path,
        );
        // Kept whole in the layout: the LLM view drops a call without a result.
        layout.push(part);
        if (solid) blocks.push(block);
        return;
      }
    } else {
      const { type } = part;
      if (type === 'steering-message' || type === 'custom' || type === 'reasoning-file') {
        ctx.warnings.converted(
          `a ${type} part is not carried by pi's messages: ai-sdk-ui writes it back, the other formats leave it out`,
          index,
          path,
        );
      }
      layout.push(part);
      return;
    }
    layout.push(blocks.length);
    blocks.push(block);
  });
  return { blocks, layout };
}

/** Numbers the blocks and returns the layout to keep, or undefined when it is 0…n-1. */
function finish(blocks: readonly ReadBlock[], layout: LayoutItem[]): LayoutItem[] | undefined {
  if (trivial(layout) && layout.length === blocks.length) return undefined;
  blocks.forEach((b, k) => {
    if (!(isObject(b.ctxfold) && b.ctxfold.pending === true)) numbered(b, k);
  });
  return layout;
}

function userMessage(
  m: AiSdkUiMessage,
  index: number,
  ctx: ReadContext,
  role: 'user' | 'developer',
): (UserMessage | DeveloperMessage) & Carrying {
  const { blocks, layout } = contentOf(m.parts, 0, m.parts.length, 'user', index, ctx, [], 0, m.id);
  // A user run reads text and file parts only: text and image blocks (all of `blocks`).
  const content = blocks.filter(isUserBlock);
  const message: UserMessage | DeveloperMessage = role === 'user' ? { role, content } : { role, content };
  if (message.role === 'user' && m.parts.some((p) => p.type === 'data-compaction')) message.attribution = 'agent';
  return keepExtras(message, name, {
    id: m.id,
    role: role === 'developer' ? 'system' : undefined,
    metadata: m.metadata,
    more: restOf(m, MESSAGE_KEYS),
    order: messageOrder(m),
    layout: finish(blocks, layout),
  });
}

/**
 * An assistant UIMessage: a message per step group (a step with modelled parts, with any
 * steps before or after it that have none), each followed by the tool results of its outputs.
 */
function assistantMessages(m: AiSdkUiMessage, index: number, ctx: ReadContext, out: AgentMessage[]): void {
  const { parts } = m;
  // Step boundaries: a step starts at each step-start part (and at the first part).
  const starts = [0];
  parts.forEach((p, j) => {
    if (p.type === 'step-start' && j > 0) starts.push(j);
  });
  const modelled = (from: number, to: number) => hasSolid(parts, from, to);
  // Step groups: [from, to) ranges, each with at most one step that has modelled parts.
  const groups: Array<{ from: number; to: number; has: boolean }> = [];
  let cur: { from: number; to: number; has: boolean } | null = null;
  starts.forEach((from, s) => {
    const to = starts[s + 1] ?? parts.length;
    const has = modelled(from, to);
    if (cur === null || (has && cur.has)) {
      cur = { from, to, has };
      groups.push(cur);
    } else {
      cur.to = to;
      cur.has ||= has;
    }
  });
  // The model that wrote the message, as the provider metadata of its parts tells.
  let model = ctx.model as ModelOption | undefined;
  for (const p of parts) {
    if (model !== undefined) break;
    model = providerOf(member(p, 'providerMetadata')) ?? providerOf(member(p, 'callProviderMetadata'));
  }
  groups.forEach((grp, g) => {
    const results: Array<ToolResultMessage & Carrying> = [];
    const { blocks, layout } = contentOf(parts, grp.from, grp.to, 'assistant', index, ctx, results, g, m.id);
    const message: AssistantMessage = { role: 'assistant', content: blocks };
    if (model?.api !== undefined) message.api = model.api;
    if (model?.provider !== undefined) message.provider = model.provider;
    if (model?.id !== undefined) message.model = model.id;
    message.stopReason = blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop';
    out.push(
      keepExtras(message, name, {
        id: m.id,
        g,
        metadata: m.metadata,
        more: restOf(m, MESSAGE_KEYS),
        order: messageOrder(m),
        layout: finish(blocks, layout),
      }),
    );
    for (const r of results) out.push(r);
  });
}

/**
 * UIMessages → AgentMessages. Leading system UIMessages are the system prompt (kept as they
 * were); a later one is a developer message.
 */
export function read(
  messages: readonly unknown[],
  ctx: ReadContext,
): { messages: AgentMessage[]; system?: { text: string; value: AiSdkUiMessage[] } } {
  const out: AgentMessage[] = [];
  let i = 0;
  const leading: AiSdkUiMessage[] = [];
  for (const n = systemPromptLength(messages, (m: Loose) => m.role === 'system', ctx); i < n; i++) {
    const m = messages[i];
    checkMessage(m, i);
    leading.push(m);
  }
  for (; i < messages.length; i++) {
    const m = messages[i];
    checkMessage(m, i);
    if (m.role === 'assistant') assistantMessages(m, i, ctx, out);
    else out.push(userMessage(m, i, ctx, m.role === 'system' ? 'developer' : 'user'));
  }
  if (leading.length === 0) return { messages: out };
  const text = leading
    .map((m) =>
      m.parts
        .filter((p) => p.type === 'text')
        .map((p) => p.text)
        .join(''),
    )
    .join('\n\n');
  return { messages: out, system: { text, value: leading } };
}

// ----- writing --------------------------------------------------------------------------------

/** A part being written: one the writer makes in the SDK's shapes, or one kept as it was read. */
type WrittenPart = Loose;
/** A UIMessage being written (its `parts` filled as the view is walked). */
interface WrittenMessage {
  id: unknown;
  role: string;
  metadata?: unknown;
  parts: WrittenPart[];
}

/** The provider whose metadata a foreign block's signatures go in. */
type Dialect = 'anthropic' | 'openai' | 'google' | 'vertex' | undefined;

/** Provider metadata of a foreign block, from pi's signature fields and the message's api. */
function dialectOf(message: AssistantMessage): Dialect {
  const api = String(message?.api ?? '');
  const provider = String(message?.provider ?? '');
  if (api === 'anthropic-messages' || provider === 'anthropic') return 'anthropic';
  if (api.includes('responses')) return 'openai';
  if (api.startsWith('google') || provider.startsWith('google')) return api === 'google-vertex' ? 'vertex' : 'google';
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A block of the LLM view as the writer meets it. */
type WrittenBlock = AssistantContent;

/** The UI part of a block read by another format (or written by the host), or undefined. */
function foreignPart(
  block: WrittenBlock,
  dialect: Dialect,
  warnings: Warnings,
  index: number,
  path: string,
): WrittenPart | undefined {
  const sigDropped = (what: string) =>
    warnings.dropped(`a ${what} the AI SDK cannot replay for this model was left out`, index, path);
  switch (block.type) {
    case 'text': {
      const part: WrittenPart = { type: 'text', text: block.text };
      if (typeof block.textSignature === 'string' && block.textSignature !== '') {
        if (dialect === 'openai') {
          const s = parseJson(block.textSignature);
          if (isObject(s) && typeof s.id === 'string') {
            part.providerMetadata = { openai: { itemId: s.id, ...(s.phase !== undefined && { phase: s.phase }) } };
          } else part.providerMetadata = { openai: { itemId: block.textSignature } };
        } else if (dialect === 'google' || dialect === 'vertex') {
          part.providerMetadata = { [dialect]: { thoughtSignature: block.textSignature } };
        }
      }
      return part;
    }
    case 'thinking': {
      const part: WrittenPart = { type: 'reasoning', text: block.thinking };
      const sig = block.thinkingSignature;
      if (typeof sig === 'string' && sig !== '') {
        if (dialect === 'anthropic') part.providerMetadata = { anthropic: { signature: sig } };
        else if (dialect === 'openai') {
          const item = parseJson(sig);
          if (isObject(item) && typeof item.id === 'string') {
            part.providerMetadata = {
              openai: { itemId: item.id, reasoningEncryptedContent: item.encrypted_content ?? null },
            };
          } else sigDropped('reasoning signature');
        } else if (dialect === 'google' || dialect === 'vertex') {
          part.providerMetadata = { [dialect]: { thoughtSignature: sig } };
        } else sigDropped('reasoning signature');
      }
      return part;
    }
    case 'redactedThinking':
      return { type: 'reasoning', text: '', providerMetadata: { anthropic: { redactedData: block.data } } };
    case 'image':
      // An image block of the view (`{ type: 'image', data, mimeType }`).
      return { type: 'file', mediaType: block.mimeType, url: dataUrl(block as ImageContent) };
    default:
      warnings.dropped(`a ${block.type} block has no UIMessage part`, index, path);
      return undefined;
  }
}

/** Puts the members of `node` in the order of `keys` (the reader's `order`: member names as read). */
function reorder(node: object, keys: unknown): void {
  for (const k of keys as Iterable<PropertyKey>) {
    if (!(k in node)) continue;
    const v: unknown = Reflect.get(node, k);
    Reflect.deleteProperty(node, k);
    Reflect.set(node, k, v);
  }
}

/** The UI part of one of our blocks (a toolCall is handled by the caller). */
function ownPart(block: WrittenBlock, x: Loose): WrittenPart | undefined {
  // Kept by this format's reader: a part as it was read.
  if (x.part !== undefined) return x.part as WrittenPart;
  // The reader's `rest`: the part's other members (an object), spread as JavaScript spreads.
  const rest = (x.rest ?? {}) as Loose;
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text, ...rest };
    case 'thinking':
      return { type: 'reasoning', text: block.thinking, ...rest };
    case 'redactedThinking':
      return { type: 'reasoning', ...rest };
    case 'image':
      return { type: 'file', mediaType: block.mimeType, ...rest, url: dataUrl(block as ImageContent) };
    default:
      return undefined;
  }
}

function toolPart(block: ToolCall, x: Loose | undefined, dialect: Dialect): WrittenPart {
  if (x !== undefined) {
    const part: WrittenPart = x.dynamic
      ? { type: 'dynamic-tool', toolName: block.name, toolCallId: block.id }
      : { type: `tool-${block.name}`, toolCallId: block.id };
    Object.assign(part, x.rest);
    if (!x.noInput && !('input' in part)) part.input = block.arguments;
    return part;
  }
  const args: JsonObject = block.arguments ?? {};
  const keys = Object.keys(args);
  const input = keys.length === 1 && keys[0] === RAW_ARGUMENTS ? args[RAW_ARGUMENTS] : args;
  const part: WrittenPart = { type: `tool-${block.name}`, toolCallId: block.id, state: 'input-available', input };
  if (typeof block.thoughtSignature === 'string' && block.thoughtSignature !== '') {
    if (dialect === 'openai') part.callProviderMetadata = { openai: { itemId: block.thoughtSignature } };
    else if (dialect === 'google' || dialect === 'vertex') {
      part.callProviderMetadata = { [dialect]: { thoughtSignature: block.thoughtSignature } };
    }
  }
  return part;
}

/** Fills a tool part with the result the model saw. */
function settle(part: WrittenPart, result: ToolResultMessage, own: boolean, warnings: Warnings, index: number): void {
  const texts: unknown[] = [];
  let images = 0;
  const blocks: ReadonlyArray<TextContent | ImageContent | null | undefined> = Array.isArray(result.content)
    ? result.content
    : [];
  for (const b of blocks) {
    if (b?.type === 'text') texts.push(b.text);
    else images++;
  }
  if (images > 0) {
    warnings.dropped(`${images} image(s) of a tool result: a UIMessage tool output holds no images`, index, 'content');
  }
  const text = texts.join('\n');
  const x = extrasOf(result);
  const state = own ? part.state : result.isError ? 'output-error' : 'output-available';
  part.state = state;
  if (state === 'output-available') {
    const value = x?.json ? parseJson(text) : undefined;
    part.output = value === undefined ? text : value;
  } else if (state === 'output-error') part.errorText = text;
}

/** What this format's reader kept on a message or block. */
const extrasOf = (node: unknown): Loose | undefined => extrasOfFormat(node, name);

/** What the compaction the view of a leaf starts from says. */
interface CompactionInfo {
  id: string;
  summary: string;
  method: unknown;
  tokensBefore: unknown;
  tokensAfter: unknown;
  firstKeptMessageId: string | undefined;
}

/** Where the writer keeps what one session's compactions say (entry fields, looked up once per leaf). */
const compactions = new WeakMap<SessionView, { leaf: string | null; size: number; info: CompactionInfo | null }>();

/** `{ id, entry, firstKeptMessageId }` of the compaction the view of the leaf starts from, or null. */
function compactionOf(session: SessionView, leafId: string | null | undefined): CompactionInfo | null {
  const leaf = leafId === undefined ? session.leafId : leafId;
  const held = compactions.get(session);
  if (held !== undefined && held.leaf === leaf && held.size === session.size) return held.info;
  let info: CompactionInfo | null = null;
  const built = session.buildContext(leafId === undefined ? undefined : { leafId });
  if (typeof built.compactionId === 'string') {
    const entry = session.entry(built.compactionId);
    const kept = built.firstKeptEntryId === undefined ? undefined : session.entry(built.firstKeptEntryId);
    const keptId = extrasOf(isObject(kept) ? kept.message : undefined)?.id;
    const fields: Loose = isObject(entry) ? entry : {};
    info = {
      id: built.compactionId,
      summary: typeof fields.summary === 'string' ? fields.summary : '',
      method: fields.method,
      tokensBefore: fields.tokensBefore,
      tokensAfter: fields.tokensAfter,
      firstKeptMessageId: typeof keptId === 'string' ? keptId : undefined,
    };
  }
  compactions.set(session, { leaf, size: session.size, info });
  return info;
}

/** A user-side message of the view (a compaction's summary is one). */
type UserSide = Extract<LlmMessage, { role: 'user' | 'developer' }>;

/** The user UIMessage that stands for a compaction: the UI's marker, the summary and frames. */
function compactionMessage(
  summary: UserSide,
  info: CompactionInfo,
  warnings: Warnings,
): WrittenMessage & { parts: [{ type: 'data-compaction'; id: string; data: Loose }, ...WrittenPart[]] } {
  const text: unknown[] = [];
  const frames: WrittenPart[] = [];
  const blocks: ReadonlyArray<TextContent | ImageContent | null | undefined> = Array.isArray(summary.content)
    ? summary.content
    : [{ type: 'text', text: summary.content }];
  for (const b of blocks) {
    if (b?.type === 'text') text.push(b.text);
    else if (b?.type === 'image') frames.push({ type: 'file', mediaType: b.mimeType, url: dataUrl(b) });
  }
  if ('providerPayload' in summary && summary.providerPayload !== undefined) {
    warnings.dropped(
      "the compaction's provider-native replay items: UIMessages cannot carry them (the summary text goes instead)",
      0,
    );
  }
  const data: Loose = { summary: info.summary };
  if (info.method !== undefined) data.method = info.method;
  if (info.tokensBefore !== undefined) data.tokensBefore = info.tokensBefore;
  if (info.tokensAfter !== undefined) data.tokensAfter = info.tokensAfter;
  data.firstKeptMessageId = info.firstKeptMessageId;
  data.frames = frames.length;
  return {
    id: info.id,
    role: 'user',
    parts: [{ type: 'data-compaction', id: info.id, data }, { type: 'text', text: text.join('\n') }, ...frames],
  };
}

/** The parts of a layout: `k` entries from `made`, kept parts as they are, then unplaced parts. */
function placed(layout: unknown, made: Map<unknown, WrittenPart>, extra: readonly WrittenPart[]): WrittenPart[] {
  if (layout === undefined) return [...made.values(), ...extra];
  const parts: WrittenPart[] = [];
  // The reader's layout: an array of numbers and kept parts.
  for (const item of layout as Iterable<unknown>) {
    if (typeof item === 'number') {
      const p = made.get(item);
      if (p !== undefined) parts.push(p);
      made.delete(item);
    } else parts.push(item as WrittenPart);
  }
  for (const p of made.values()) parts.push(p);
  for (const p of extra) parts.push(p);
  return parts;
}

/** The user (or mid-history system) UIMessage of a user or developer message. */
function userUiMessage(m: UserSide, i: number, warnings: Warnings, orders: Array<[object, unknown]>): WrittenMessage {
  const x = extrasOf(m);
  const content: readonly WrittenBlock[] =
    typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content ?? []);
  const made = new Map<unknown, WrittenPart>();
  const extra: WrittenPart[] = [];
  content.forEach((b, j) => {
    const bx = extrasOf(b);
    const part = bx !== undefined ? ownPart(b, bx) : foreignPart(b, undefined, warnings, i, `content[${j}]`);
    if (part === undefined) return;
    if (bx?.order !== undefined) orders.push([part, bx.order]);
    if (bx?.k !== undefined) made.set(bx.k, part);
    else if (x?.layout === undefined) made.set(made.size, part);
    else extra.push(part);
  });
  let role = 'user';
  if (x?.role === 'system') role = 'system';
  else if (m.role === 'developer') {
    warnings.converted('a developer message is written as a user UIMessage', i);
  }
  const ui: Omit<WrittenMessage, 'parts'> & { parts?: WrittenPart[] } = { id: x?.id ?? `ctxfold-${i}`, role };
  if (x?.metadata !== undefined) ui.metadata = x.metadata;
  const done: WrittenMessage = Object.assign(ui, { parts: placed(x?.layout, made, extra) });
  if (x?.order !== undefined) orders.push([done, x.order]);
  return x?.more === undefined ? done : Object.assign(done, x.more);
}

/**
 * The LLM view → UIMessages: the system prompt first (as a system UIMessage), the compaction
 * as a user UIMessage with a `data-compaction` part, then the messages, consecutive entries of
 * one UIMessage regrouped.
 */
export function write(llm: readonly LlmMessage[], ctx: UiWriteContext): { messages: AiSdkUiMessage[] } {
  const { warnings } = ctx;
  const out: unknown[] = [];
  // Parts and messages whose members go back in the order they were read in, once complete.
  const orders: Array<[object, unknown]> = [];
  const system = ctx.system;
  if (system !== undefined) {
    if (system.format === name && isArray(system.value)) out.push(...system.value);
    else if (system.text !== '') {
      out.push({ id: 'system', role: 'system', parts: [{ type: 'text', text: system.text }] });
    }
  }
  let start = 0;
  let marker: ReturnType<typeof compactionMessage> | undefined;
  const first = llm[0];
  if (first?.role === 'user' && first.attribution === 'agent' && extrasOf(first) === undefined && ctx.session) {
    const info = compactionOf(ctx.session, ctx.leafId);
    if (info !== null) {
      marker = compactionMessage(first, info, warnings);
      out.push(marker);
      start = 1;
    }
  }
  // The assistant UIMessage being built: its id, the tool parts waiting for results.
  let current: { ui: WrittenMessage; foreign: boolean } | null = null;
  let calls = new Map<unknown, { part: WrittenPart; own: boolean }>();
  llm.forEach((m, i) => {
    if (i < start) return;
    const x = extrasOf(m);
    if (m.role === 'assistant') {
      const continues =
        current !== null &&
        (x === undefined ? current.foreign : !current.foreign && current.ui.id === x.id && x.g !== 0);
      if (current === null || !continues) {
        const ui: Omit<WrittenMessage, 'parts'> & { parts?: WrittenPart[] } = {
          id: x?.id ?? `ctxfold-${i}`,
          role: 'assistant',
        };
        if (x?.metadata !== undefined) ui.metadata = x.metadata;
        const made: WrittenMessage = Object.assign(ui, { parts: [] });
        if (x?.more !== undefined) Object.assign(made, x.more);
        if (x?.order !== undefined) orders.push([made, x.order]);
        current = { ui: made, foreign: x === undefined };
        calls = new Map();
        out.push(made);
      }
      const open = current;
      const dialect = dialectOf(m);
      const made = new Map<unknown, WrittenPart>();
      const extra: WrittenPart[] = x === undefined ? [{ type: 'step-start' }] : [];
      (m.content ?? []).forEach((b, j) => {
        const bx = extrasOf(b);
        if (bx?.pending) return;
        let part: WrittenPart | undefined;
        if (b.type === 'toolCall') {
          // A toolCall block of the core's view: a ToolCall.
          part = toolPart(b as ToolCall, bx, dialect);
          calls.set(b.id, { part, own: bx !== undefined });
        } else part = bx !== undefined ? ownPart(b, bx) : foreignPart(b, dialect, warnings, i, `content[${j}]`);
        if (part === undefined) return;
        if (bx?.order !== undefined) orders.push([part, bx.order]);
        if (bx?.k !== undefined) made.set(bx.k, part);
        else if (x?.layout === undefined) made.set(made.size, part);
        else extra.push(part);
      });
      if (x === undefined) open.ui.parts.push(...extra, ...made.values());
      else open.ui.parts.push(...placed(x.layout, made, extra));
    } else if (m.role === 'toolResult') {
      const call = calls.get(m.toolCallId);
      if (call === undefined) {
        warnings.dropped(`the result of tool call ${m.toolCallId}, whose call is not in the view`, i);
        return;
      }
      settle(call.part, m, call.own, warnings, i);
    } else {
      current = null;
      out.push(userUiMessage(m, i, warnings, orders));
    }
  });
  if (marker !== undefined && marker.parts[0].data.firstKeptMessageId === undefined) {
    const next = out[out.indexOf(marker) + 1];
    if (next !== undefined) marker.parts[0].data.firstKeptMessageId = (next as WrittenMessage).id;
    else delete marker.parts[0].data.firstKeptMessageId;
  }
  for (const [node, keys] of orders) reorder(node, keys);
  // Parts kept as they were read and parts made here in the SDK's shapes: UIMessages.
  return { messages: out as AiSdkUiMessage[] };
}
