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
import { codedError } from '../core/errors.js';

/** A non-null object that is not an array. */
export function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * `E_INVALID_MESSAGE`: message `index` of the input is malformed at `field` (a path such as
 * `content[2].type`, or '' for the message itself). The error carries `index` and `field`.
 */
export function invalidMessage(index, field, detail) {
  const at = field ? `messages[${index}].${field}` : `messages[${index}]`;
  const err = codedError('E_INVALID_MESSAGE', `${at}: ${detail}`);
  err.index = index;
  err.field = field;
  return err;
}

/**
 * How many messages open `messages` as its system prompt: the leading ones `isSystem` holds
 * for. None when `ctx.history` is set: the messages continue a history (an append after
 * messages, or a system prompt given as an option), so a system message among them is a later
 * instruction, read where it stands as a developer message.
 */
export function systemPromptLength(messages, isSystem, ctx) {
  if (ctx.history) return 0;
  let n = 0;
  while (n < messages.length && isObject(messages[n]) && isSystem(messages[n])) n++;
  return n;
}

/**
 * Collects warnings. `dropped`: the target format cannot carry something and it was left out;
 * `converted`: it was carried in another form (a role the format lacks, an image as a URL).
 */
export class Warnings {
  list = [];
  dropped(message, index, path) {
    this.#push('W_DROPPED', message, index, path);
  }
  converted(message, index, path) {
    this.#push('W_CONVERTED', message, index, path);
  }
  #push(code, message, index, path) {
    const w = { code, message };
    if (index !== undefined) w.index = index;
    if (path !== undefined) w.path = path;
    this.list.push(w);
  }
}

/** A string field, or E_INVALID_MESSAGE. */
export function requireString(value, index, field) {
  if (typeof value !== 'string') throw invalidMessage(index, field, `must be a string, got ${kindOf(value)}`);
  return value;
}

/** An array field, or E_INVALID_MESSAGE. */
export function requireArray(value, index, field) {
  if (!Array.isArray(value)) throw invalidMessage(index, field, `must be an array, got ${kindOf(value)}`);
  return value;
}

/** An object field, or E_INVALID_MESSAGE. */
export function requireObject(value, index, field) {
  if (!isObject(value)) throw invalidMessage(index, field, `must be an object, got ${kindOf(value)}`);
  return value;
}

/** A string field when given (undefined stays undefined), or E_INVALID_MESSAGE. */
export function optionalString(value, index, field) {
  return value === undefined ? undefined : requireString(value, index, field);
}

/** A string or null field when given (undefined and null stay as they are), or E_INVALID_MESSAGE. */
export function nullableString(value, index, field) {
  if (value === undefined || value === null) return value;
  return requireString(value, index, field);
}

/** An input string as an error message quotes it (JSON text, at most 40 characters); else its kind. */
export function quote(value) {
  if (typeof value !== 'string') return kindOf(value);
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

/** How an error message names the type of a value. */
export function kindOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** `data:<mime>;base64,<data>` as `{ mimeType, data }`, or undefined for any other URL. */
export function parseDataUrl(url) {
  if (typeof url !== 'string' || !url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  const head = url.slice(5, comma);
  if (comma < 0 || !head.endsWith(';base64')) return undefined;
  return { mimeType: head.slice(0, -7) || 'application/octet-stream', data: url.slice(comma + 1) };
}

/** An image block's data as a `data:` URL. */
export function dataUrl(image) {
  return `data:${image.mimeType};base64,${image.data}`;
}

/**
 * Tool-call arguments given as JSON text (OpenAI's wire form) as an object. Text that is not a
 * JSON object is kept whole under the key the reference uses for unparsable arguments.
 */
export function parseArguments(json, index, field) {
  requireString(json, index, field);
  if (json.trim() === '') return {};
  try {
    const v = JSON.parse(json);
    if (isObject(v)) return v;
  } catch {
    // kept as text below
  }
  return { [RAW_ARGUMENTS]: json };
}

/** Where `parseArguments` keeps arguments that are not a JSON object. */
export const RAW_ARGUMENTS = '__raw';

/** Arguments back as JSON text: the text they were read from when kept whole. */
export function stringifyArguments(args) {
  const keys = Object.keys(args ?? {});
  if (keys.length === 1 && keys[0] === RAW_ARGUMENTS && typeof args[RAW_ARGUMENTS] === 'string') {
    return args[RAW_ARGUMENTS];
  }
  return JSON.stringify(args ?? {});
}

/**
 * Tool-call arguments as JSON text for a writer: `kept`, the text they were read from, when it
 * still parses to them (its spacing and member order come back), else `stringifyArguments`.
 */
export function argumentsText(args, kept) {
  const json = stringifyArguments(args);
  if (typeof kept !== 'string' || json === kept) return json;
  return stringifyArguments(parseArguments(kept, 0, '')) === json ? kept : json;
}

/** The `ctxfold` extras a reader of `format` kept on a message or block, or undefined. */
export function extrasOf(node, format) {
  const x = node?.ctxfold;
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
export function keepExtras(node, format, members, kept = undefined) {
  for (const k in members) {
    const v = members[k];
    if (v === undefined) continue;
    kept ??= { format };
    kept[k] = v;
  }
  if (kept !== undefined) node.ctxfold = kept;
  return node;
}

/** Whether `node`'s members are exactly `keys`, in that order. */
export function hasKeys(node, keys) {
  let i = 0;
  for (const k in node) {
    if (k !== keys[i]) return false;
    i++;
  }
  return i === keys.length;
}

/** Sets a member as data, a `__proto__` one too (an assignment would set the prototype). */
export function putMember(node, key, value) {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The text of a user/developer/tool content (a string or blocks): its text blocks joined. */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b) => b?.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('\n');
}
