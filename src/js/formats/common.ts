// What every message format reader and writer shares: the coded error for a malformed message,
// warnings for what a format cannot carry, and small converters (data URLs, tool arguments).
//
// A reader turns a format's messages into AgentMessages; a writer turns the provider messages
// of `toLlmMessages` into the format's messages. What the target cannot hold is reported in
// `warnings`, never dropped silently. What the AgentMessage model has no field for but the
// format's own writer needs back (a chat `name`, a Gemini part's metadata, a UIMessage id) is
// kept on the message or block under `ctxfold`: `{ format, …members }`. The core passes user,
// developer, assistant and tool-result messages to the provider view as written, so those
// members come back to the writer; the writers of other formats ignore them.
//
// The contract of a format module (`FormatModule`: its read and write contexts and results) is
// typed here for the modules and their callers; the package's entries do not export it.
import { isObject as isPlainObject } from '../core/args.js';
import { codedError } from '../core/errors.js';
import type { LlmMessage } from '../core/session.js';

/** What a format could not carry: `W_DROPPED` left out, `W_CONVERTED` carried in another form. */
export interface FormatWarning {
  code: 'W_DROPPED' | 'W_CONVERTED';
  message: string;
  /** The message of the input (reading) or of the output (writing). */
  index?: number;
  /** Where in that message, e.g. `content[2]`. */
  path?: string;
}

/** The model that wrote the assistant messages being read (their `api`, `provider`, `model`). */
export interface FormatModel {
  provider: string;
  api?: string;
  id?: string;
}

/**
 * `isObject` of core/args (the one definition), for the format modules (a constant, not a
 * re-export: core/args is internal and stripped from the declarations).
 */
export const isObject: (value: unknown) => value is Loose = isPlainObject;

/** An object of the caller's input whose members are not checked yet. */
export type Loose = Record<string, unknown>;

/** A message or block with what a reader kept under `ctxfold` (`keepExtras`). */
export interface Carrying {
  ctxfold?: unknown;
}

/**
 * A message a reader produced: an `AgentMessage` as the reader built it, with what it keeps
 * under `ctxfold`; the core checks it before anything is written.
 */
export type ReadMessage = Loose;

/** A tool call of an earlier entry, as `ReadContext.toolCall` finds it. */
export interface KnownToolCall {
  id: string;
  name: string;
  arguments?: unknown;
}

/** What a reader is given besides the messages (formats/index.ts). */
export interface ReadContext {
  /** The model that wrote the assistant messages (the caller's option, unchecked). */
  model?: unknown;
  warnings: Warnings;
  /** The messages continue a history: leading system messages are later instructions. */
  history: boolean;
  /** A call of an earlier entry by its id. */
  toolCall(id: string): KnownToolCall | undefined;
  /** A call whose id is pi's Responses form `call_id|item_id`, by its `call_id`. */
  toolCallOfCallId(callId: string): KnownToolCall | undefined;
}

/** A system prompt as a reader found it: its text, and the format's own form. */
export interface ReadSystem {
  text: string;
  value: unknown;
}

/** What a reader returns. */
export interface ReadResult {
  /** What the reader built: `ReadMessage`s, or a reader's own typed `AgentMessage`s. */
  messages: readonly object[];
  system?: ReadSystem;
}

/** The system prompt a session keeps (`ctxfold:system`): text, the format's form, the format. */
export interface StoredSystem extends ReadSystem {
  format: string;
}

/** What a writer is given besides the provider messages (formats/index.ts). */
export interface WriteContext {
  model?: unknown;
  warnings: Warnings;
  system: StoredSystem | undefined;
  /** The session written from (the ai-sdk-ui writer reads its compaction entry). */
  session?: unknown;
  leafId?: string | undefined;
}

/** What a writer returns: the format's messages and, where it keeps one apart, the system prompt. */
export interface WriteResult<M = unknown, S = unknown> {
  messages: M[];
  system?: S | undefined;
}

/** A message format module (formats/index.ts). */
export interface FormatModule {
  readonly name: string;
  /** The most images one request of the format's API takes. */
  readonly maxImages?: number;
  read(messages: readonly unknown[], ctx: ReadContext): ReadResult;
  write(llm: LlmMessage[], ctx: WriteContext): WriteResult;
}

/** An Error of a malformed message: `E_INVALID_MESSAGE` with where it is. */
export type InvalidMessageError = Error & { index: number; field: string };

/**
 * `E_INVALID_MESSAGE`: message `index` of the input is malformed at `field` (a path such as
 * `content[2].type`, or '' for the message itself). The error carries `index` and `field`.
 */
export function invalidMessage(index: number, field: string, detail: string): InvalidMessageError {
  const at = field ? `messages[${index}].${field}` : `messages[${index}]`;
  return Object.assign(codedError('E_INVALID_MESSAGE', `${at}: ${detail}`), { index, field });
}

/**
 * How many messages open `messages` as its system prompt: the leading ones `isSystem` holds
 * for. None when `ctx.history` is set: the messages continue a history (an append after
 * messages, or a system prompt given as an option), so a system message among them is a later
 * instruction, read where it stands as a developer message.
 */
export function systemPromptLength(
  messages: readonly unknown[],
  isSystem: (message: Loose) => boolean,
  ctx: Pick<ReadContext, 'history'>,
): number {
  if (ctx.history) return 0;
  let n = 0;
  while (n < messages.length) {
    const m = messages[n];
    if (!isObject(m) || !isSystem(m)) break;
    n++;
  }
  return n;
}

/**
 * Collects warnings. `dropped`: the target format cannot carry something and it was left out;
 * `converted`: it was carried in another form (a role the format lacks, an image as a URL).
 */
export class Warnings {
  list: FormatWarning[] = [];
  dropped(message: string, index?: number, path?: string): void {
    this.#push('W_DROPPED', message, index, path);
  }
  converted(message: string, index?: number, path?: string): void {
    this.#push('W_CONVERTED', message, index, path);
  }
  #push(code: FormatWarning['code'], message: string, index: number | undefined, path: string | undefined): void {
    const w: FormatWarning = { code, message };
    if (index !== undefined) w.index = index;
    if (path !== undefined) w.path = path;
    this.list.push(w);
  }
}

/** A string field, or E_INVALID_MESSAGE. */
export function requireString(value: unknown, index: number, field: string): string {
  if (typeof value !== 'string') throw invalidMessage(index, field, `must be a string, got ${kindOf(value)}`);
  return value;
}

/** An array field, or E_INVALID_MESSAGE. */
export function requireArray(value: unknown, index: number, field: string): unknown[] {
  if (!Array.isArray(value)) throw invalidMessage(index, field, `must be an array, got ${kindOf(value)}`);
  return value;
}

/** An object field, or E_INVALID_MESSAGE. */
export function requireObject(value: unknown, index: number, field: string): Loose {
  if (!isObject(value)) throw invalidMessage(index, field, `must be an object, got ${kindOf(value)}`);
  return value;
}

/** A string field when given (undefined stays undefined), or E_INVALID_MESSAGE. */
export function optionalString(value: unknown, index: number, field: string): string | undefined {
  return value === undefined ? undefined : requireString(value, index, field);
}

/** A string or null field when given (undefined and null stay as they are), or E_INVALID_MESSAGE. */
export function nullableString(value: unknown, index: number, field: string): string | null | undefined {
  if (value === undefined || value === null) return value;
  return requireString(value, index, field);
}

/**
 * `value` when it is a non-empty string, else undefined (never throws): for members of data
 * already checked, or written by the core, where anything else means "none".
 */
export function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** Whether `value` is no string, or only whitespace: text a request need not carry. */
export function isBlank(value: unknown): boolean {
  return typeof value !== 'string' || value.trim() === '';
}

/** Whether `value` is a string with more than whitespace: text a request carries. */
export function hasText(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** An input string as an error message quotes it (JSON text, at most 40 characters); else its kind. */
export function quote(value: unknown): string {
  if (typeof value !== 'string') return kindOf(value);
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

/** How an error message names the type of a value. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** `data:<mime>;base64,<data>` as `{ mimeType, data }`, or undefined for any other URL. */
export function parseDataUrl(url: unknown): { mimeType: string; data: string } | undefined {
  if (typeof url !== 'string' || !url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  const head = url.slice(5, comma);
  if (comma < 0 || !head.endsWith(';base64')) return undefined;
  return { mimeType: head.slice(0, -7) || 'application/octet-stream', data: url.slice(comma + 1) };
}

/** An image block's data as a `data:` URL. */
export function dataUrl(image: { mimeType?: unknown; data?: unknown }): string {
  return `data:${image.mimeType};base64,${image.data}`;
}

/**
 * Tool-call arguments given as JSON text (OpenAI's wire form) as an object. Text that is not a
 * JSON object is kept whole under the key the reference uses for unparsable arguments.
 */
export function parseArguments(json: unknown, index: number, field: string): Loose {
  const text = requireString(json, index, field);
  if (text.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(text);
    if (isObject(v)) return v;
  } catch {
    // kept as text below
  }
  return { [RAW_ARGUMENTS]: text };
}

/** Where `parseArguments` keeps arguments that are not a JSON object. */
export const RAW_ARGUMENTS = '__raw';

/** Arguments back as JSON text: the text they were read from when kept whole. */
export function stringifyArguments(args: unknown): string {
  const keys = Object.keys(args ?? {});
  if (keys.length === 1 && keys[0] === RAW_ARGUMENTS && isObject(args)) {
    const raw = args[RAW_ARGUMENTS];
    if (typeof raw === 'string') return raw;
  }
  return JSON.stringify(args ?? {});
}

/**
 * Tool-call arguments as JSON text for a writer: `kept`, the text they were read from, when it
 * still parses to them (its spacing and member order come back), else `stringifyArguments`.
 */
export function argumentsText(args: unknown, kept?: unknown): string {
  const json = stringifyArguments(args);
  if (typeof kept !== 'string' || json === kept) return json;
  return stringifyArguments(parseArguments(kept, 0, '')) === json ? kept : json;
}

/** The `ctxfold` extras a reader of `format` kept on a message or block, or undefined. */
export function extrasOf(node: unknown, format: string): Loose | undefined {
  const x = isObject(node) ? node.ctxfold : undefined;
  return isObject(x) && x.format === format ? x : undefined;
}

/**
 * Sets `node.ctxfold` to `{ format, …members }` when any member is defined (undefined members
 * are left out). `kept`, when given, is the extras the members are added to and what is set
 * even when none is defined: a node's own extras, or a bare `{ format }` that marks a node.
 *
 * A `for…in` loop, not `Object.entries` and a spread: it runs for every message and block a
 * reader reads, and was a reader's largest cost on a 2,000-message history.
 */
export function keepExtras<N extends object>(
  node: N,
  format: string,
  members: Loose,
  kept: Loose | undefined = undefined,
): N {
  for (const k in members) {
    const v = members[k];
    if (v === undefined) continue;
    kept ??= { format };
    kept[k] = v;
  }
  if (kept !== undefined) (node as Loose).ctxfold = kept;
  return node;
}

/** Whether `node`'s members are exactly `keys`, in that order. */
export function hasKeys(node: object, keys: readonly string[]): boolean {
  let i = 0;
  for (const k in node) {
    if (k !== keys[i]) return false;
    i++;
  }
  return i === keys.length;
}

/** Sets a member as data, a `__proto__` one too (an assignment would set the prototype). */
export function putMember(node: object, key: string, value: unknown): void {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The text of a user/developer/tool content (a string or blocks): its text blocks joined. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const b of content as unknown[]) {
    if (isObject(b) && b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
  }
  return texts.join('\n');
}
