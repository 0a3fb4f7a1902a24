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
// This module also holds the wire conversion of the `remote` compaction lane
// (native-anthropic.js): `wireMessages`, which repairs a history into a request the API
// accepts whatever its origin.
import { replayTarget } from '../providers/native-anthropic.js';
import {
  extrasOf,
  invalidMessage,
  isObject,
  kindOf,
  putMember,
  requireArray,
  requireObject,
  requireString,
} from './common.js';

export const name = 'anthropic';

/**
 * Anthropic's documented image limit per API request: 100 for models with a 200k-token context
 * window (600 for larger windows); the smaller one fits every model.
 */
export const maxImages = 100;

const API = 'anthropic-messages';
/** The image types the API reads (vision guide). */
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
/** User-side blocks pi has no type for: carried as a describing text block that keeps them. */
const OPAQUE_USER_BLOCKS = new Set(['document', 'search_result', 'container_upload']);
/** What a tool_result's content may hold. */
const RESULT_BLOCKS = new Set(['text', 'image', 'document', 'search_result']);
/** Assistant blocks of server-run tools, replayed as they are (pi's `anthropicServerTool`). */
const SERVER_BLOCKS = new Set([
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
const CLEAR_AT = new Set(['never', 'next_user_message']);

const blank = (t) => typeof t !== 'string' || t.trim() === '';
/** An input string as an error message quotes it: in single quotes (not common's JSON text), at most 40 characters. */
const quote = (t) => `'${t.length > 40 ? `${t.slice(0, 40)}…` : t}'`;
const str = (v) => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** The members of `node` other than `known` (undefined ones left out), or undefined for none. */
function restOf(node, known) {
  const rest = Object.entries(node).filter(([k, v]) => v !== undefined && !known.includes(k));
  return rest.length === 0 ? undefined : Object.fromEntries(rest);
}

/** `node.ctxfold` of this format, created when missing: a bare one marks a node "as read". */
function extras(node) {
  if (!isObject(node.ctxfold)) node.ctxfold = { format: name };
  return node.ctxfold;
}

/**
 * Copies kept wire members onto `target` as its own members (a `__proto__` member is data, as
 * JSON has it, never the prototype).
 */
function assignFields(target, fields) {
  if (isObject(fields)) {
    for (const [k, v] of Object.entries(fields)) putMember(target, k, v);
  }
  return target;
}

function setExtra(node, key, value) {
  if (value !== undefined) extras(node)[key] = value;
  return node;
}

// ----- reading ---------------------------------------------------------------------------------

/** Anthropic messages → AgentMessages. ctx: `{ model?, warnings, toolCall(id) }`. */
export function read(messages, ctx) {
  const model = ctx?.model;
  const st = {
    ctx,
    api: str(model?.api) ?? API,
    provider: str(model?.provider) ?? 'anthropic',
    model: str(model?.id),
    /** tool_use id → tool name, of this batch. */
    calls: new Map(),
    out: [],
  };
  messages.forEach((m, i) => {
    if (!isObject(m)) throw invalidMessage(i, '', `must be an object, got ${kindOf(m)}`);
    if (m.role === 'user') readUser(m, i, st);
    else if (m.role === 'assistant') st.out.push(readAssistant(m, i, st));
    else if (m.role === 'system') st.out.push(readSystemMessage(m, i));
    else {
      const got = typeof m.role === 'string' ? quote(m.role) : kindOf(m.role);
      throw invalidMessage(i, 'role', `must be 'user', 'assistant' or 'system', got ${got}`);
    }
  });
  return { messages: st.out };
}

/** Checks the member every block may carry: a prompt-caching breakpoint. */
function checkCommon(b, i, at) {
  if (b.cache_control !== undefined && b.cache_control !== null) {
    requireObject(b.cache_control, i, `${at}.cache_control`);
    requireString(b.cache_control.type, i, `${at}.cache_control.type`);
  }
}

function blockType(b, i, at) {
  requireObject(b, i, at);
  return requireString(b.type, i, `${at}.type`);
}

/** A user message: its text and image blocks as user messages, each tool_result as a tool result. */
function readUser(m, i, st) {
  const produced = [];
  const content = m.content;
  if (typeof content === 'string') {
    const msg = { role: 'user', content };
    if (blank(content)) extras(msg);
    produced.push(msg);
  } else if (Array.isArray(content)) {
    let parts = null;
    const flush = () => {
      if (parts !== null) produced.push({ role: 'user', content: parts });
      parts = null;
    };
    content.forEach((b, j) => {
      const at = `content[${j}]`;
      const type = blockType(b, i, at);
      if (type === 'tool_result') {
        flush();
        produced.push(readToolResult(b, i, at, st));
      } else if (type === 'text' || type === 'image' || OPAQUE_USER_BLOCKS.has(type)) {
        parts ??= [];
        parts.push(readUserBlock(b, type, i, at));
      } else {
        throw invalidMessage(i, `${at}.type`, `${quote(type)} is no user content block`);
      }
    });
    flush();
    if (produced.length === 0) {
      const empty = { role: 'user', content: [] };
      extras(empty);
      produced.push(empty);
    }
  } else {
    throw invalidMessage(i, 'content', `must be a string or an array, got ${kindOf(content)}`);
  }
  // The pi messages of one Anthropic message: the later ones continue it, and a first tool
  // result right after another message's tool result starts a message of its own.
  produced.forEach((p, k) => {
    if (k > 0) setExtra(p, 'join', true);
  });
  if (produced[0].role === 'toolResult' && st.out.at(-1)?.role === 'toolResult') setExtra(produced[0], 'split', true);
  setExtra(produced[0], 'fields', restOf(m, ['role', 'content']));
  st.out.push(...produced);
}

function readText(b, i, at) {
  const text = requireString(b.text, i, `${at}.text`);
  checkCommon(b, i, at);
  if (b.citations !== undefined && b.citations !== null) requireArray(b.citations, i, `${at}.citations`);
  const block = { type: 'text', text };
  setExtra(block, 'fields', restOf(b, ['type', 'text']));
  if (blank(text)) extras(block);
  return block;
}

/** A text, image, document, search result or container upload block of user-side content. */
function readUserBlock(b, type, i, at) {
  if (type === 'text') return readText(b, i, at);
  checkCommon(b, i, at);
  if (type === 'image') {
    const source = requireObject(b.source, i, `${at}.source`);
    const kind = requireString(source.type, i, `${at}.source.type`);
    if (kind === 'base64') {
      const mimeType = requireString(source.media_type, i, `${at}.source.media_type`);
      const data = requireString(source.data, i, `${at}.source.data`);
      if (restOf(source, ['type', 'media_type', 'data']) !== undefined) return opaque(b);
      const image = { type: 'image', data, mimeType };
      // An image the API does not read is kept as it is rather than sent as a note.
      if (!IMAGE_TYPES.has(mimeType)) extras(image);
      return setExtra(image, 'fields', restOf(b, ['type', 'source']));
    }
    if (kind === 'url') requireString(source.url, i, `${at}.source.url`);
    else if (kind === 'file') requireString(source.file_id, i, `${at}.source.file_id`);
    else throw invalidMessage(i, `${at}.source.type`, `must be 'base64', 'url' or 'file', got ${quote(kind)}`);
    return opaque(b);
  }
  if (type === 'document') checkDocument(b, i, at);
  else if (type === 'search_result') checkSearchResult(b, i, at);
  else requireString(b.file_id, i, `${at}.file_id`);
  return opaque(b);
}

function checkDocument(b, i, at) {
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
        const t = blockType(c, i, p);
        if (t === 'text') readText(c, i, p);
        else if (t === 'image') readUserBlock(c, t, i, p);
        else throw invalidMessage(i, `${p}.type`, `must be 'text' or 'image', got ${quote(t)}`);
      });
    }
  } else {
    throw invalidMessage(
      i,
      `${at}.source.type`,
      `must be 'base64', 'text', 'content', 'url' or 'file', got ${quote(kind)}`,
    );
  }
  for (const k of ['title', 'context']) {
    if (b[k] !== undefined && b[k] !== null) requireString(b[k], i, `${at}.${k}`);
  }
}

function checkSearchResult(b, i, at) {
  requireString(b.source, i, `${at}.source`);
  requireString(b.title, i, `${at}.title`);
  requireArray(b.content, i, `${at}.content`).forEach((c, k) => {
    const p = `${at}.content[${k}]`;
    const t = blockType(c, i, p);
    if (t !== 'text') throw invalidMessage(i, `${p}.type`, `must be 'text', got ${quote(t)}`);
    readText(c, i, p);
  });
}

/** A block pi has no type for, as a text block that describes it and keeps it whole. */
function opaque(b) {
  return { type: 'text', text: describe(b) ?? `[${b.type}]`, ctxfold: { format: name, block: b } };
}

const textsOf = (blocks) =>
  Array.isArray(blocks)
    ? blocks
        .filter((c) => c?.type === 'text' && typeof c.text === 'string')
        .map((c) => c.text)
        .join('\n')
    : '';

/**
 * What other formats read for a block pi has no type for: the text of a text document or a
 * search result, else what the block names (a URL, a file id, a title). Undefined for a block
 * of another shape (the writer then keeps the text it has).
 */
function describe(b) {
  if (!isObject(b)) return undefined;
  const source = isObject(b.source) ? b.source : {};
  const title = str(b.title);
  switch (b.type) {
    case 'image':
      return `[image: ${str(source.url) ?? str(source.file_id) ?? source.type}]`;
    case 'document': {
      const head = `[document${title ? `: ${title}` : ''}]`;
      if (source.type === 'text' && typeof source.data === 'string') return `${head}\n${source.data}`;
      if (source.type === 'content') {
        return `${head}\n${typeof source.content === 'string' ? source.content : textsOf(source.content)}`;
      }
      return `[document: ${title ?? str(source.url) ?? str(source.file_id) ?? source.media_type}]`;
    }
    case 'search_result':
      return `[search result: ${b.title} (${b.source})]\n${textsOf(b.content)}`;
    case 'container_upload':
      return `[container upload: ${b.file_id}]`;
    default:
      return undefined;
  }
}

function readToolResult(b, i, at, st) {
  const id = requireString(b.tool_use_id, i, `${at}.tool_use_id`);
  const toolName = st.calls.get(id) ?? st.ctx?.toolCall?.(id)?.name;
  if (typeof toolName !== 'string') {
    throw invalidMessage(i, `${at}.tool_use_id`, `answers no tool_use of an earlier message (${quote(id)})`);
  }
  checkCommon(b, i, at);
  const flags = {};
  let content;
  if (b.content === undefined) {
    content = [];
    flags.noContent = true;
  } else if (typeof b.content === 'string') {
    content = b.content === '' ? [] : [{ type: 'text', text: b.content }];
    flags.string = true;
  } else {
    content = requireArray(b.content, i, `${at}.content`).map((c, k) => {
      const p = `${at}.content[${k}]`;
      const t = blockType(c, i, p);
      if (!RESULT_BLOCKS.has(t)) throw invalidMessage(i, `${p}.type`, `${quote(t)} is no tool_result content block`);
      return readUserBlock(c, t, i, p);
    });
  }
  if (b.is_error !== undefined && typeof b.is_error !== 'boolean') {
    throw invalidMessage(i, `${at}.is_error`, `must be a boolean, got ${kindOf(b.is_error)}`);
  }
  if (b.is_error === false) flags.isErrorFalse = true;
  const msg = { role: 'toolResult', toolCallId: id, toolName, content, isError: b.is_error === true };
  if (Array.isArray(b.content) && b.content.length === 0) extras(msg);
  for (const [k, v] of Object.entries(flags)) setExtra(msg, k, v);
  return setExtra(msg, 'fields', restOf(b, ['type', 'tool_use_id', 'content', 'is_error']));
}

function readAssistant(m, i, st) {
  const msg = { role: 'assistant', content: [], api: st.api, provider: st.provider };
  if (st.model !== undefined) msg.model = st.model;
  const content = m.content;
  if (typeof content === 'string') {
    setExtra(msg, 'string', true);
    if (content !== '') msg.content.push(readText({ type: 'text', text: content }, i, 'content'));
  } else if (Array.isArray(content)) {
    content.forEach((b, j) => {
      const block = readAssistantBlock(b, i, `content[${j}]`, st, j === 0);
      if (block.type === 'anthropicCompaction') msg.providerPayload = block.payload;
      else msg.content.push(block);
    });
    if (content.length === 0) extras(msg);
  } else {
    throw invalidMessage(i, 'content', `must be a string or an array, got ${kindOf(content)}`);
  }
  msg.stopReason = msg.content.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop';
  return setExtra(msg, 'fields', restOf(m, ['role', 'content']));
}

function readAssistantBlock(b, i, at, st, first) {
  const type = blockType(b, i, at);
  if (type === 'text') return readText(b, i, at);
  checkCommon(b, i, at);
  if (type === 'thinking') {
    const block = { type: 'thinking', thinking: requireString(b.thinking, i, `${at}.thinking`) };
    if (b.signature === undefined) extras(block);
    else block.thinkingSignature = requireString(b.signature, i, `${at}.signature`);
    return setExtra(block, 'fields', restOf(b, ['type', 'thinking', 'signature']));
  }
  if (type === 'redacted_thinking') {
    const block = { type: 'redactedThinking', data: requireString(b.data, i, `${at}.data`) };
    return setExtra(block, 'fields', restOf(b, ['type', 'data']));
  }
  if (type === 'tool_use') {
    const id = requireString(b.id, i, `${at}.id`);
    const toolName = requireString(b.name, i, `${at}.name`);
    const input = requireObject(b.input, i, `${at}.input`);
    st.calls.set(id, toolName);
    const block = { type: 'toolCall', id, name: toolName, arguments: input };
    return setExtra(block, 'fields', restOf(b, ['type', 'id', 'name', 'input']));
  }
  if (type === 'compaction') {
    if (b.content !== null) requireString(b.content, i, `${at}.content`);
    const encrypted = b.encrypted_content;
    if (encrypted !== undefined && encrypted !== null) requireString(encrypted, i, `${at}.encrypted_content`);
    // The block opening a response is pi's payload of the message; any other is kept as it is.
    if (first && str(b.content) && (encrypted === undefined || str(encrypted))) {
      if (restOf(b, ['type', 'content', 'encrypted_content']) === undefined) {
        const payload = { type: 'anthropicCompaction', provider: st.provider, content: b.content };
        if (encrypted !== undefined) payload.encryptedContent = encrypted;
        return { type: 'anthropicCompaction', payload };
      }
    }
    return { type: 'anthropicServerTool', block: b };
  }
  if (SERVER_BLOCKS.has(type)) {
    if (type === 'server_tool_use' || type === 'mcp_tool_use') {
      requireString(b.id, i, `${at}.id`);
      requireString(b.name, i, `${at}.name`);
    } else if (type === 'container_upload') requireString(b.file_id, i, `${at}.file_id`);
    else requireString(b.tool_use_id, i, `${at}.tool_use_id`);
    return { type: 'anthropicServerTool', block: b };
  }
  throw invalidMessage(i, `${at}.type`, `${quote(type)} is no assistant content block`);
}

/** A mid-conversation `system` message: a developer message with an `anthropicMessage` payload. */
function readSystemMessage(m, i) {
  const payload = { type: 'anthropicMessage' };
  if (m.clear_at !== undefined) {
    if (!CLEAR_AT.has(m.clear_at)) throw invalidMessage(i, 'clear_at', "must be 'never' or 'next_user_message'");
    payload.clearAt = m.clear_at;
  }
  let fields = restOf(m, ['role', 'content', 'clear_at', 'output_config']);
  if (m.output_config !== undefined) {
    const config = requireObject(m.output_config, i, 'output_config');
    if (config.effort !== undefined) payload.effort = requireString(config.effort, i, 'output_config.effort');
    // A config with more than the effort is kept whole.
    if (restOf(config, ['effort']) !== undefined || config.effort === undefined) {
      fields = { ...fields, output_config: config };
    }
  }
  let content;
  const controls = [];
  const changes = [];
  if (typeof m.content === 'string') content = m.content;
  else {
    content = [];
    requireArray(m.content, i, 'content').forEach((b, j) => {
      const at = `content[${j}]`;
      const type = blockType(b, i, at);
      if (type === 'text') content.push(readText(b, i, at));
      else if (type === 'tool_addition' || type === 'tool_removal') {
        const tool = requireObject(b.tool, i, `${at}.tool`);
        changes.push({ type, name: requireString(tool.name, i, `${at}.tool.name`) });
        controls.push([j, b]);
      } else {
        throw invalidMessage(i, `${at}.type`, `${quote(type)} is no system message block`);
      }
    });
  }
  if (changes.length > 0) payload.toolChanges = changes;
  const msg = { role: 'developer', content, providerPayload: payload };
  if (typeof content === 'string' ? blank(content) : content.length === 0) extras(msg);
  if (controls.length > 0) setExtra(msg, 'controls', controls);
  return setExtra(msg, 'fields', fields);
}

// ----- writing ---------------------------------------------------------------------------------

/**
 * The provider messages of `toLlmMessages` → `{ messages, system? }` of a Messages API request.
 * ctx: `{ model?, warnings, system }`.
 */
export function write(llm, ctx) {
  const writer = new Writer(ctx);
  for (const m of llm) writer.add(m);
  writer.end();
  const result = { messages: writer.out };
  const system = systemOf(ctx.system, ctx.warnings);
  if (system !== undefined) result.system = system;
  return result;
}

/** The request's `system`: the stored Anthropic value, or the text of another format's. */
function systemOf(system, warnings) {
  if (!isObject(system)) return undefined;
  const value = system.value;
  if (typeof value === 'string') return value;
  const blocks =
    Array.isArray(value) && value.every((b) => isObject(b) && b.type === 'text' && typeof b.text === 'string');
  if (blocks && system.format === name) return value;
  if (typeof system.text !== 'string') return undefined;
  warnings.converted(`the system prompt (of the ${system.format ?? 'pi'} format) is sent as its text`);
  return system.text;
}

/** A tool-use id as the API accepts it (`[A-Za-z0-9_-]`, at most 64 characters). */
export function toolId(id) {
  const s = typeof id === 'string' ? id : '';
  if (/^[A-Za-z0-9_-]{1,64}$/.test(s)) return s;
  return [...s]
    .map((c) => (/^[A-Za-z0-9-]$/.test(c) ? c : '_'))
    .slice(0, 64)
    .join('');
}

const imageBlock = (b) => ({ type: 'image', source: { type: 'base64', media_type: b.mimeType, data: b.data } });
const isPlainText = (b) => b.type === 'text' && Object.keys(b).length === 2;

/** Writes one request's messages; see `write`. */
class Writer {
  out = [];
  #warnings;
  #model;
  /** The last user message that a tool result or a continuation read from Anthropic may join. */
  #open = null;
  /** The role of the previous provider message. */
  #prev;
  /** A replayed compaction block's own assistant message, waiting to open the next assistant turn. */
  #compaction = null;
  /** The harness's file lists of a replayed compaction, sent after the block. */
  #files = [];

  constructor(ctx) {
    this.#warnings = ctx.warnings;
    this.#model = isObject(ctx.model) ? ctx.model : undefined;
  }

  add(m) {
    const role = m?.role;
    if (role === 'toolResult') this.#toolResult(m);
    else if (role === 'user' || role === 'developer') this.#userSide(m);
    else if (role === 'assistant') this.#assistant(m);
    else this.#warnings.dropped(`a ${kindOf(role) === 'string' ? role : kindOf(role)} message has no Anthropic form`);
    this.#prev = role;
  }

  end() {
    this.#flushFiles();
  }

  #push(msg, open = null) {
    this.out.push(msg);
    this.#open = open;
    this.#compaction = null;
  }

  #flushFiles() {
    for (const text of this.#files.splice(0)) if (!blank(text)) this.#push({ role: 'user', content: text });
  }

  #userSide(m) {
    const x = extrasOf(m, name);
    const payload = isObject(m.providerPayload) ? m.providerPayload : undefined;
    if (payload?.type === 'anthropicCompaction' && str(payload.content)) {
      this.#replay(payload);
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
    const msg = assignFields({ role: 'user', content }, x?.fields);
    // Only the user's own messages continue into a tool result: never a summary.
    this.#push(msg, m.role === 'user' && m.attribution !== 'agent' ? msg : null);
  }

  /** The summary as the `compaction` block the API signed (spec: compaction §13). */
  #replay(payload) {
    this.#flushFiles();
    const block = { type: 'compaction', content: payload.content };
    if (str(payload.encryptedContent)) block.encrypted_content = payload.encryptedContent;
    this.#push({ role: 'assistant', content: [block] });
    this.#compaction = this.out.at(-1);
    if (str(payload.filesText)) this.#files.push(payload.filesText);
  }

  #systemMessage(m, payload, x) {
    this.#flushFiles();
    let content = this.#userContent(m.content, this.out.length, 'system', false);
    const controls = Array.isArray(x?.controls)
      ? x.controls.filter((c) => Array.isArray(c) && Number.isInteger(c[0]) && isObject(c[1]))
      : (Array.isArray(payload.toolChanges) ? payload.toolChanges : [])
          .filter((c) => isObject(c) && typeof c.name === 'string')
          .map((c) => [Number.MAX_SAFE_INTEGER, { type: c.type, tool: { type: 'tool_reference', name: c.name } }]);
    if (controls.length > 0) {
      if (typeof content === 'string') content = content === '' ? [] : [{ type: 'text', text: content }];
      for (const [j, block] of controls) content.splice(Math.min(j, content.length), 0, block);
    }
    const msg = { role: 'system', content };
    if (CLEAR_AT.has(payload.clearAt)) msg.clear_at = payload.clearAt;
    if (str(payload.effort)) msg.output_config = { effort: payload.effort };
    this.#push(assignFields(msg, x?.fields));
  }

  /**
   * User-side content as the API takes it: a string stays a string; text (a kept block in its
   * own form), images of the types the API reads, nothing else. `images`: false where the
   * target takes text only.
   */
  #userContent(content, at, where, images = true) {
    if (typeof content === 'string') return content;
    const out = [];
    (Array.isArray(content) ? content : []).forEach((b, k) => {
      const path = `content[${k}]`;
      const bx = extrasOf(b, name);
      if (b?.type === 'text' && typeof b.text === 'string') {
        if (isObject(bx?.block) && describe(bx.block) === b.text) out.push(bx.block);
        else if (bx || !blank(b.text)) out.push(assignFields({ type: 'text', text: b.text }, bx?.fields));
        else if (b.text !== '') this.#warnings.dropped(`whitespace-only text in a ${where} message`, at, path);
      } else if (b?.type === 'image' && images && (bx || IMAGE_TYPES.has(b.mimeType)) && typeof b.data === 'string') {
        out.push(assignFields(imageBlock(b), bx?.fields));
      } else if (b?.type === 'image' && images) {
        this.#warnings.converted(`an image of type ${b.mimeType} the API does not read is sent as a note`, at, path);
        out.push({ type: 'text', text: `[unsupported image: ${b.mimeType}]` });
      } else {
        this.#warnings.dropped(`a ${b?.type} block has no form in an Anthropic ${where} message`, at, path);
      }
    });
    return out;
  }

  #toolResult(m) {
    const x = extrasOf(m, name);
    const join = x?.join ? this.#open : this.#prev === 'toolResult' && !x?.split ? this.#open : null;
    const at = join === null ? this.out.length : this.out.length - 1;
    const id = this.#id(m.toolCallId, at);
    const block = { type: 'tool_result', tool_use_id: id };
    const parts = Array.isArray(m.content) ? m.content : [];
    if (x?.string && parts.length <= 1 && parts.every((b) => b?.type === 'text' && typeof b.text === 'string')) {
      block.content = parts[0]?.text ?? '';
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
      const msg = { role: 'user', content: [block] };
      this.#push(msg, msg);
    }
  }

  #id(id, at) {
    const wire = toolId(id);
    if (wire !== id) this.#warnings.converted(`tool-use id ${quote(String(id))} is sent as '${wire}'`, at);
    return wire;
  }

  /**
   * Whether an assistant message is the reading provider's own: its thinking signatures,
   * redacted thinking and server-tool blocks are replayed as they are. Others' thinking is sent
   * as text (the API verifies signatures), what has no Anthropic form is left out.
   */
  #native(m) {
    return m.api === API && (this.#model === undefined || this.#model.provider === m.provider);
  }

  #assistant(m) {
    if (this.#prev === 'toolResult') this.#flushFiles();
    const x = extrasOf(m, name);
    const native = this.#native(m);
    const at = this.out.length;
    const blocks = [];
    const payload = isObject(m.providerPayload) ? m.providerPayload : undefined;
    if (payload?.type === 'anthropicCompaction' && str(payload.content)) {
      const replays = native && (this.#model === undefined || replayTarget(this.#model)?.provider === payload.provider);
      if (replays) {
        const block = { type: 'compaction', content: payload.content };
        if (str(payload.encryptedContent)) block.encrypted_content = payload.encryptedContent;
        blocks.push(block);
      } else {
        this.#warnings.dropped('a compaction block the reading model cannot replay was left out', at);
      }
    }
    (Array.isArray(m.content) ? m.content : []).forEach((b, k) => {
      const block = this.#assistantBlock(b, native, at, `content[${k}]`);
      if (block !== undefined) blocks.push(block);
    });
    if (!native) {
      // The API takes a turn's tool uses after its other blocks.
      const calls = blocks.filter((b) => b.type === 'tool_use');
      if (calls.length > 0 && blocks.findLastIndex((b) => b.type !== 'tool_use') > blocks.indexOf(calls[0])) {
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
    let content = blocks;
    if (x?.string && blocks.length === 0) content = '';
    else if (x?.string && blocks.length === 1 && isPlainText(blocks[0])) content = blocks[0].text;
    this.#push(assignFields({ role: 'assistant', content }, x?.fields));
    if (!blocks.some((b) => b.type === 'tool_use')) this.#flushFiles();
  }

  #assistantBlock(b, native, at, path) {
    const bx = extrasOf(b, name);
    const type = b?.type;
    if (type === 'text' && typeof b.text === 'string') {
      if (bx || !blank(b.text)) return assignFields({ type: 'text', text: b.text }, bx?.fields);
      if (b.text !== '') this.#warnings.dropped('whitespace-only text in an assistant message', at, path);
      return undefined;
    }
    if (type === 'thinking' && typeof b.thinking === 'string') {
      const signed = typeof b.thinkingSignature === 'string';
      if (native && (signed || bx)) {
        const block = { type: 'thinking', thinking: b.thinking };
        if (signed) block.signature = b.thinkingSignature;
        return assignFields(block, bx?.fields);
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
      return assignFields({ type: 'redacted_thinking', data: b.data }, bx?.fields);
    }
    if (type === 'anthropicServerTool' && native && isObject(b.block)) return b.block;
    if (type === 'toolCall') {
      const input = isObject(b.arguments) ? b.arguments : {};
      const call = { type: 'tool_use', id: this.#id(b.id, at), name: String(b.name ?? ''), input };
      return assignFields(call, bx?.fields);
    }
    const what = native ? `a ${type} block` : `a ${type} block of another provider`;
    this.#warnings.dropped(`${what} has no form in an Anthropic assistant message`, at, path);
    return undefined;
  }
}

// ----- the remote compaction lane ---------------------------------------------------------------

const textBlock = (text) => ({ type: 'text', text });
const textOf = (v) => (typeof v === 'string' ? v : '');

/** Text and image blocks of user-side content (a string or an array of blocks). */
function laneUserBlocks(content) {
  if (typeof content === 'string') return blank(content) ? [] : [textBlock(content)];
  const out = [];
  for (const b of Array.isArray(content) ? content : []) {
    if (b?.type === 'text' && !blank(b.text)) out.push(textBlock(b.text));
    if (b?.type === 'image') out.push(imageBlock({ mimeType: textOf(b.mimeType), data: textOf(b.data) }));
  }
  return out;
}

/**
 * An assistant message's blocks: text, signed thinking (unsigned thinking as text), redacted
 * thinking, tool calls last (the API wants a turn's tool uses after its other blocks).
 */
function laneAssistantBlocks(content) {
  const out = [];
  const calls = [];
  for (const b of Array.isArray(content) ? content : []) {
    if (b?.type === 'text' && !blank(b.text)) out.push(textBlock(b.text));
    else if (b?.type === 'thinking' && !blank(b.thinkingSignature)) {
      out.push({ type: 'thinking', thinking: textOf(b.thinking), signature: b.thinkingSignature });
    } else if (b?.type === 'thinking' && !blank(b.thinking)) out.push(textBlock(b.thinking));
    else if (b?.type === 'redactedThinking' && str(b.data)) out.push({ type: 'redacted_thinking', data: b.data });
    else if (b?.type === 'toolCall') {
      calls.push({
        type: 'tool_use',
        id: toolId(b.id),
        name: textOf(b.name),
        input: isObject(b.arguments) ? b.arguments : {},
      });
    }
  }
  return [...out, ...calls];
}

const laneResult = (id, content, isError) => ({ type: 'tool_result', tool_use_id: id, content, is_error: isError });

/**
 * Provider messages (spec: compaction §2.6) → Anthropic wire messages for the `remote` lane,
 * repaired into a request the API accepts whatever the history's origin. Consecutive tool
 * results become one user message; each result answers a call of the assistant turn right
 * before it (a result without one is dropped, a call without one gets an error result, as the
 * API accepts no unpaired tool use); empty messages are dropped; two assistant turns in a row
 * get a `Continue.` user turn between them.
 */
export function wireMessages(messages) {
  const out = [];
  // Calls of the last assistant turn still waiting for their result (id → how many calls
  // carry it, in call order: a lookup per result, not a scan), and the results so far.
  let open = new Map();
  let results = [];
  const close = () => {
    for (const [id, n] of open)
      for (let k = 0; k < n; k++) results.push(laneResult(id, [textBlock('No result provided')], true));
    if (results.length > 0) out.push({ role: 'user', content: results });
    open = new Map();
    results = [];
  };
  for (const m of messages) {
    if (m?.role === 'toolResult') {
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
    const assistant = m?.role === 'assistant';
    if (!assistant && m?.role !== 'user' && m?.role !== 'developer') continue;
    const content = assistant ? laneAssistantBlocks(m.content) : laneUserBlocks(m.content);
    if (content.length === 0) continue;
    if (assistant) {
      if (out.at(-1)?.role === 'assistant') out.push({ role: 'user', content: [textBlock('Continue.')] });
      open = new Map();
      for (const b of content) if (b.type === 'tool_use') open.set(b.id, (open.get(b.id) ?? 0) + 1);
    }
    out.push({ role: assistant ? 'assistant' : 'user', content });
  }
  close();
  return out;
}
