// Public API of the ctxfold package, shared by every runtime entry point.
// Values cross the wasm boundary as JSON text (see src/wasm/mod.rs); this module parses and
// stringifies, fills defaults (`now` = Date.now()), and checks argument types so that misuse
// fails with a coded Error instead of deep inside the engine.

import { Warnings } from '../formats/common.js';
import { formatOf, SYSTEM_ENTRY } from '../formats/index.js';
import { replayTarget } from '../providers/native-anthropic.js';
import { compactSession } from '../runner/compact.js';
import { navigateSession } from '../runner/navigate.js';
import { shakeSession } from '../runner/shake.js';
import {
  isObject,
  JsonlWriter,
  nonEmptyText,
  nowOf,
  object,
  optionalText,
  optionsJson,
  text,
  textOrBytes,
  toJson,
  toJsonBytes,
} from './args.js';
import { codedError, invalidArgument, live, release } from './errors.js';
import { committed, requireRaw } from './raw.js';

function idOptions(options) {
  const { ids, seed, start } = options ?? {};
  if (typeof ids === 'function') return [JSON.stringify({ seed, start }), ids];
  return [JSON.stringify({ ids, seed, start }), undefined];
}

/** The options of a new session for the core (`now`: the header's time), and the ids callback. */
function createOptions(options, now) {
  const [idJson, callback] = idOptions(options);
  const { id, cwd, parentSession } = options ?? {};
  return [JSON.stringify({ ...JSON.parse(idJson), id, cwd, parentSession, now }), callback];
}

/** Version of the ctxfold core (from Cargo.toml). */
export function version() {
  return requireRaw().version();
}

/** Bytes of WebAssembly memory in use by the module (it grows as needed and never shrinks). */
export function wasmMemoryBytes() {
  return requireRaw().wasmMemoryBytes();
}

/** Levels `copyJson` copies by recursion before it goes on with its own stack. */
const COPY_DEPTH = 64;

/**
 * A copy of a value `JSON.parse` made: new objects and arrays, the same strings. Recursive
 * down to `COPY_DEPTH` levels (a message is rarely deeper, and recursion is about twice as
 * fast as the loop, which every turn's `toLlmMessages` pays for each message); below that,
 * `copyDeep`.
 */
function copyJson(v, depth = 0) {
  if (typeof v !== 'object' || v === null) return v;
  if (depth === COPY_DEPTH) return copyDeep(v);
  if (Array.isArray(v)) {
    const n = v.length;
    const to = new Array(n);
    for (let i = 0; i < n; i++) to[i] = copyJson(v[i], depth + 1);
    return to;
  }
  const to = {};
  for (const k in v) {
    // An own `__proto__` member (JSON.parse makes one) must stay a member, not a prototype.
    if (k === '__proto__') {
      Object.defineProperty(to, k, {
        value: copyJson(v[k], depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      to[k] = copyJson(v[k], depth + 1);
    }
  }
  return to;
}

/**
 * `copyJson` as a loop with its own stack: `JSON.parse` reads any depth, and a message can
 * nest deeper than the call stack allows a recursive walk.
 */
function copyDeep(v) {
  if (typeof v !== 'object' || v === null) return v;
  const root = Array.isArray(v) ? [] : {};
  const todo = [v, root];
  while (todo.length > 0) {
    const to = todo.pop();
    const from = todo.pop();
    const copy = (x) => {
      if (typeof x !== 'object' || x === null) return x;
      const y = Array.isArray(x) ? [] : {};
      todo.push(x, y);
      return y;
    };
    if (Array.isArray(from)) {
      for (let i = 0; i < from.length; i++) to[i] = copy(from[i]);
      continue;
    }
    for (const k in from) {
      // An own `__proto__` member (JSON.parse makes one) must stay a member, not a prototype.
      if (k === '__proto__') {
        Object.defineProperty(to, k, { value: copy(from[k]), enumerable: true, writable: true, configurable: true });
      } else {
        to[k] = copy(from[k]);
      }
    }
  }
  return root;
}

/** What `plainCopy` returns for a value whose JSON text might not give it back as it is. */
const NOT_PLAIN = Symbol('not plain JSON');
/** What `plainCopy` returns for a value JSON.stringify leaves out of an object. */
const OMITTED = Symbol('omitted');
const wellFormed =
  typeof String.prototype.isWellFormed === 'function' ? (s) => s.isWellFormed() : (s) => !/[\uD800-\uDFFF]/.test(s);

/**
 * A copy of `v` equal to `JSON.parse(JSON.stringify(v))`, or NOT_PLAIN where that is not
 * certain: BigInts, strings with lone surrogates (UTF-8 has them as U+FFFD), objects with a
 * prototype of their own or a `toJSON`, nesting past 64 levels (the core parses up to 127).
 * As JSON.stringify does, members that are `undefined`, functions or symbols are left out
 * (null in arrays, as holes are), non-finite numbers are null and `-0` is 0. `size.chars`
 * grows by the characters of its strings and keys, about the length of its JSON text.
 */
function plainCopy(v, depth, size) {
  switch (typeof v) {
    case 'string':
      size.chars += v.length;
      return wellFormed(v) ? v : NOT_PLAIN;
    case 'number':
      return Number.isFinite(v) ? v + 0 : null;
    case 'boolean':
      return v;
    case 'object':
      break;
    case 'bigint':
      return NOT_PLAIN;
    default:
      return OMITTED;
  }
  if (v === null) return null;
  if (depth >= 64) return NOT_PLAIN;
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const c = plainCopy(v[i], depth + 1, size);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      out[i] = c === OMITTED ? null : c;
    }
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if ((proto !== Object.prototype && proto !== null) || typeof v.toJSON === 'function') return NOT_PLAIN;
  const out = {};
  for (const k of Object.keys(v)) {
    size.chars += k.length + 8;
    const c = plainCopy(v[k], depth + 1, size);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    if (c === OMITTED) continue;
    // An own `__proto__` member must stay a member, not set the copy's prototype.
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
    else out[k] = c;
  }
  return out;
}

/**
 * A prune report, `{"prunedCount":…,"tokensSaved":…,"pruned":[…]}` as the core writes it, with
 * `pruned` parsed when first read: a threshold prune of a large session lists thousands of
 * results that a host which only reads the counts never needs as objects.
 */
function lazyRows(text) {
  const at = text.indexOf(',"pruned":');
  if (at < 0 || text.charCodeAt(text.length - 1) !== 0x7d) return JSON.parse(text);
  const report = JSON.parse(`${text.slice(0, at)}}`);
  let rows;
  Object.defineProperty(report, 'pruned', {
    enumerable: true,
    configurable: true,
    get() {
      rows ??= JSON.parse(text.slice(at + 10, -1));
      return rows;
    },
    set(value) {
      rows = value;
    },
  });
  return report;
}

/**
 * A session file: a header and a tree of entries, with a leaf selecting the active path.
 * Unchanged lines are written back byte for byte.
 */
export class Session {
  /** The wasm session (read through `#inner`, which refuses it once freed). */
  #raw;
  /** The frame payloads of the compaction `toLlmMessages` referred to last: `{entry, data}`. */
  #frames = null;
  /** The last `llmMessageParts` call: its number and each part's parsed messages. */
  #parts = null;
  /**
   * The message formats: tool calls of the leaf's path as `{id, name, arguments}`, by id
   * (`byId`) and, for pi's Responses ids `call_id|item_id`, by `call_id` (`byCallId`); built on
   * first need.
   */
  #calls = null;
  /** The latest `ctxfold:system` entry's data (null: none; undefined: not looked up yet). */
  #system = undefined;
  /** What the reader of `fromMessages` could not carry. */
  #formatWarnings = [];
  /** The `searchHistory` index (built on the first search, kept current by the core). */
  #recall = null;

  constructor(inner) {
    if (inner === undefined || inner === null || typeof inner.toBytes !== 'function') {
      throw invalidArgument('use Session.fromJsonl(text | bytes) or Session.create() to make a session');
    }
    this.#raw = inner;
  }

  /** The wasm session; `E_FREED` after `free()`. */
  get #inner() {
    return live(this.#raw, 'session');
  }

  /** Loads a session file (a string or its UTF-8 bytes). Throws `E_NOT_A_SESSION`, `E_VERSION_TOO_NEW`. */
  static fromJsonl(input, options) {
    const bytes = textOrBytes(input, 'input');
    const [json, callback] = idOptions(options);
    const raw = requireRaw();
    return new Session(raw.WasmSession.fromBytes(bytes, json, callback));
  }

  /**
   * Loads a session file that `read(view)` writes straight into the module's memory: `view`
   * is a Uint8Array of `size` bytes there, and `read` returns how many it wrote (all when it
   * returns undefined). The file is never copied in JavaScript, so opening it needs its size
   * once plus the index, where `fromJsonl` of its bytes holds them twice. `read` must not call
   * ctxfold (the view would go stale: `E_INVALID_ARGUMENT`).
   */
  static fromReader(size, read, options) {
    if (!Number.isSafeInteger(size) || size < 0) throw invalidArgument('size must be a whole number of bytes');
    if (typeof read !== 'function') throw invalidArgument('read must be a function that fills the view');
    const [json, callback] = idOptions(options);
    const raw = requireRaw();
    const at = raw.sourceBuffer(size);
    const view = new Uint8Array(raw.sourceMemory().buffer, at, size);
    // The module's memory grew while `read` ran: the view is over the old memory.
    const stale = () => view.byteLength !== size || raw.sourceMemory().buffer !== view.buffer;
    const staleError = () => invalidArgument('read called ctxfold while it filled the view: the view went stale');
    let written;
    try {
      written = read(view);
    } catch (e) {
      raw.sourceBuffer(0);
      throw stale() ? staleError() : e;
    }
    written ??= size;
    if (stale()) {
      raw.sourceBuffer(0);
      throw staleError();
    }
    if (!Number.isSafeInteger(written) || written < 0 || written > size) {
      raw.sourceBuffer(0);
      throw invalidArgument('read must return the number of bytes it wrote (at most size)');
    }
    return new Session(raw.WasmSession.fromSource(written, json, callback));
  }

  /** A new empty session. */
  static create(options) {
    const [json, callback] = createOptions(options, options?.now);
    return new Session(requireRaw().WasmSession.create(json, callback));
  }

  /**
   * A session holding a message history of another format (spec of the mapping:
   * docs/guide/formats.md): a header, the system prompt when there is one (a `custom` entry
   * `ctxfold:system`), and a `message` entry per message. What the format's messages hold that
   * the session cannot is listed in `warnings`. Throws `E_INVALID_MESSAGE` (with `index` and
   * `field`) for a malformed message.
   */
  static fromMessages(messages, options) {
    if (options !== undefined && options !== null) object(options, 'options');
    const format = formatOf(options?.format);
    if (!Array.isArray(messages)) throw invalidArgument('messages must be an array');
    const warnings = new Warnings();
    // A system prompt given as an option makes the messages' own system messages history.
    const history = options?.system !== undefined && options?.system !== null;
    const none = () => undefined;
    const read = format.read(messages, {
      model: options?.model,
      warnings,
      history,
      toolCall: none,
      toolCallOfCallId: none,
    });
    const now = nowOf(options);
    const stored = systemOf(options, read, format);
    // The core checks every message, draws the ids as `create` and an append per entry
    // would, and writes the lines (src/session/batch.rs).
    const [json, callback] = createOptions(options, now);
    const session = withMessageLines(
      read.messages,
      messages.length === read.messages.length,
      (bytes) => new Session(requireRaw().WasmSession.fromMessages(bytes, json, callback, systemEntry(stored))),
    );
    session.#formatWarnings = warnings.list;
    // The system prompt is the one just written; toMessages need not look for it.
    session.#system = stored === null ? null : JSON.parse(toJson(stored));
    // The copies the first provider view is handed (`#adopt`); every message was written as
    // JSON above, so none holds a cycle.
    const size = { chars: 0 };
    session.#adopt(
      stored === null ? 0 : 1,
      read.messages.map((m) => plainCopy(m, 0, size)),
    );
    return session;
  }

  /**
   * Holds `held`, copies (`plainCopy`) of the messages entries `first`… were just written
   * from, as the parts of a first `llmMessageParts` call: the first `toLlmMessages` then gets
   * each by position instead of its JSON from wasm and a parse of it (a 10 MB history crossed
   * twice). Only plain JSON values are offered, and the core takes each one whose provider
   * message it can tell from the entry's facts: as it is, or with its `attribution` set.
   */
  #adopt(first, held) {
    const offered = Uint8Array.from(held, (m) => (m === null || typeof m !== 'object' ? 0 : 1));
    const codes = this.#inner.adoptLlmParts(first, offered);
    const parsed = held.map((m, k) => {
      const code = codes[k + 1];
      if (code === 0) return [];
      if (code !== 1) m.attribution = code === 2 ? 'user' : 'agent';
      return [m];
    });
    this.#parts = { serial: codes[0], parsed };
  }

  /** Problems found while loading (malformed lines, unknown parents, …) and migrations. */
  get warnings() {
    const found = JSON.parse(this.#inner.warningsJson());
    return this.#formatWarnings.length === 0 ? found : [...found, ...this.#formatWarnings];
  }

  /** The header line as an object. */
  get header() {
    return JSON.parse(this.#inner.headerJson());
  }

  /** Format version after loading (3), and the version found in the file. */
  get version() {
    const [current, onDisk] = this.#inner.versionInfo();
    return { current, onDisk };
  }

  /** Number of entries. */
  get size() {
    return this.#inner.size;
  }

  /** Id of the leaf entry, or null when there is none. */
  get leafId() {
    return this.#inner.leafId ?? null;
  }

  /** Every entry, in file order. */
  entries() {
    return JSON.parse(this.#inner.entriesJson());
  }

  /** The entry with `id`, or undefined. */
  entry(id) {
    const json = this.#inner.entryJson(nonEmptyText(id));
    return json === undefined ? undefined : JSON.parse(json);
  }

  /** The tree without bodies: `{id, parentId, type, role?, line}` per entry, in file order. */
  index() {
    return JSON.parse(this.#inner.indexJson());
  }

  /** Ids from the root to `id` (`getBranch`). Throws `E_UNKNOWN_ENTRY`. */
  pathTo(id) {
    return JSON.parse(this.#inner.pathTo(nonEmptyText(id)));
  }

  /** Ids of the children of `id`, or of the roots for `null`. Throws `E_UNKNOWN_ENTRY`. */
  children(id) {
    if (id === null || id === undefined) return JSON.parse(this.#inner.children(undefined));
    return JSON.parse(this.#inner.children(nonEmptyText(id)));
  }

  /** Moves the leaf to an existing entry. Throws `E_UNKNOWN_ENTRY`. */
  branch(id) {
    this.#inner.branch(nonEmptyText(id));
  }

  /** Clears the leaf: the next append starts a new root. */
  resetLeaf() {
    this.#inner.resetLeaf();
  }

  /** The context the model sees for a leaf (or the display transcript). */
  buildContext(options) {
    return JSON.parse(this.#inner.buildContextJson(optionsJson(options)).join(''));
  }

  /**
   * A page of the display transcript: messages `from` (negative: from the end) to
   * `from + count` (default: all) of the transcript of the leaf, with the total.
   */
  transcript(options) {
    return JSON.parse(this.#inner.transcriptJson(optionsJson(options)).join(''));
  }

  /** The provider messages (`convertToLlm`) of the built context. */
  toLlmMessages(options) {
    if (options !== undefined && options !== null) object(options, 'options');
    // A Messages API reader replays its provider's compaction blocks only where the model and
    // route have server compaction (spec: compaction §13).
    const o = options?.model !== undefined ? { ...options, model: replayTarget(options.model) } : options;
    // Snapcompact frames come as references to this session's copy of their payloads, which
    // crosses from wasm once per compaction rather than on every request.
    const messages = this.#llmMessages({ ...o, frameRefs: true });
    for (const m of messages) {
      if (!Array.isArray(m.content)) continue;
      for (const block of m.content) {
        if (block.type !== 'image' || block.data?.charCodeAt(0) !== 0) continue;
        block.data = this.#frame(block.data);
        // Not expected (the payloads come from the same entry): then the payloads inline.
        if (block.data === undefined) return this.#llmMessages({ ...o, frameRefs: false });
      }
    }
    return messages;
  }

  /** Frames the last `toLlmMessages` call left out of the compaction summary (its budgets). */
  lastFramesLeftOut() {
    return this.#inner.lastFramesLeftOut();
  }

  /** Internal (the Maintainer's image estimate): the last `toLlmMessages` call's context starts with a compaction summary. */
  _lastViewCompacted() {
    return this.#inner.lastViewCompacted();
  }

  /**
   * The provider messages from the parts of `llmMessageParts`: a message converted as in the
   * previous call comes as the position of its part in that call, whose parsed messages this
   * session keeps. The caller gets copies (strings shared, they cannot change), so what a
   * host does to them never reaches the next call; a copy walks the objects, where a parse
   * would read every byte of every tool output again.
   */
  #llmMessages(options) {
    const parts = this.#inner.llmMessageParts(JSON.stringify(options), this.#parts?.serial ?? 0);
    const serial = parts.pop();
    const held = this.#parts?.parsed;
    const parsed = parts.map((p) => (typeof p === 'number' ? held[p] : p === '' ? [] : JSON.parse(`[${p}]`)));
    this.#parts = { serial, parsed };
    const messages = [];
    for (const ms of parsed) for (const m of ms) messages.push(copyJson(m));
    return messages;
  }

  /** The payload a frame reference `\0<entry id>:<frame>:<length>` of `llmMessageParts` names. */
  #frame(ref) {
    const j = ref.lastIndexOf(':');
    const i = ref.lastIndexOf(':', j - 1);
    const [entry, frame, length] = [ref.slice(1, i), Number(ref.slice(i + 1, j)), Number(ref.slice(j + 1))];
    if (this.#frames?.entry !== entry || this.#frames.data[frame]?.length !== length) {
      this.#frames = { entry, data: JSON.parse(this.#inner.archiveFramesJson(entry) ?? '[]').map((f) => f?.data) };
    }
    const data = this.#frames.data[frame];
    return data?.length === length ? data : undefined;
  }

  /** Token figures of the built context: usage-based and locally estimated. */
  contextTokens(options) {
    return JSON.parse(this.#inner.contextTokensJson(optionsJson(options)));
  }

  /**
   * What the LLM context holds by the local estimate: `tokens`, `images`, and `byKind`
   * (`summary`, `user`, `assistant`, `toolResult`, `other`), the archive's frames at the flat
   * rate, without copying them.
   */
  contextStats(options) {
    return JSON.parse(this.#inner.contextStatsJson(optionsJson(options)));
  }

  /** Estimated tokens of the message an entry carries. Throws `E_UNKNOWN_ENTRY`. */
  entryTokens(id, options) {
    return this.#inner.entryTokens(nonEmptyText(id), Boolean(options?.excludeEncryptedReasoning));
  }

  /** Appends an entry of any type as a child of the leaf; returns its id. */
  append(type, fields, options) {
    nonEmptyText(type, 'the entry type');
    object(fields, 'entry fields');
    const json = toJsonBytes(fields, type === 'message' ? 'E_INVALID_MESSAGE' : 'E_INVALID_ARGUMENT');
    const id = this.#inner.append(type, json, nowOf(options));
    if (type === 'custom' && fields.customType === SYSTEM_ENTRY && isObject(fields.data)) this.#system = fields.data;
    if (type === 'message' && this.#calls !== null) this.#noteCalls(fields.message);
    return id;
  }

  /**
   * Appends messages of a format (a turn's new ones) as entries after the leaf: the system
   * prompt they carry as a `ctxfold:system` entry, then a `message` entry per message. Every
   * message is read before anything is written, so `E_INVALID_MESSAGE` leaves the session as
   * it was. Returns the new entry ids and what the session could not carry.
   */
  appendMessages(messages, options) {
    if (options !== undefined && options !== null) object(options, 'options');
    const format = formatOf(options?.format);
    if (!Array.isArray(messages)) throw invalidArgument('messages must be an array');
    const warnings = new Warnings();
    const history = (options?.system !== undefined && options?.system !== null) || this.#hasHistory();
    const ctx = {
      model: options?.model,
      warnings,
      history,
      toolCall: (id) => this.#toolCalls().byId.get(id),
      toolCallOfCallId: (callId) => this.#toolCalls().byCallId.get(callId),
    };
    const read = format.read(messages, ctx);
    const now = nowOf(options);
    const stored = systemOf(options, read, format);
    // All or nothing: the core checks every message before it writes the first.
    const ids = withMessageLines(read.messages, messages.length === read.messages.length, (bytes) =>
      JSON.parse(this.#inner.appendMessages(bytes, systemEntry(stored), now)),
    );
    if (stored !== null) this.#system = stored;
    if (this.#calls !== null) for (const m of read.messages) this.#noteCalls(m);
    return { ids, warnings: warnings.list };
  }

  /**
   * What to send, in a format: the LLM view of the leaf (`toLlmMessages` with the same
   * options) as that format's messages, the system prompt where the format keeps it, and what
   * the format could not carry.
   */
  toMessages(options) {
    object(options ?? {}, 'options');
    const { format: name, system: given, ...rest } = options ?? {};
    const format = formatOf(name);
    const warnings = new Warnings();
    const llm = this.toLlmMessages({ ...rest, maxImages: rest.maxImages ?? format.maxImages });
    const system =
      given === undefined || given === null
        ? this.#storedSystem()
        : { text: systemText(given), value: given, format: format.name };
    const out = format.write(llm, { model: rest.model, warnings, system, session: this, leafId: rest.leafId });
    const result = { messages: out.messages };
    if (out.system !== undefined) result.system = out.system;
    result.warnings = warnings.list;
    return result;
  }

  /**
   * Whether the leaf's path holds conversation (a message, compaction or summary entry): the
   * system messages of an append to it are later instructions, not the system prompt.
   */
  #hasHistory() {
    for (let id = this.leafId; id !== null && id !== undefined; ) {
      const e = this.entry(id);
      if (e === undefined || HISTORY_TYPES.has(e.type)) return e !== undefined;
      id = e.parentId;
    }
    return false;
  }

  /**
   * Tool calls of the leaf's path by id (those still waiting for their result too, which the
   * LLM view leaves out), kept up to date by this session's appends.
   */
  #toolCalls() {
    if (this.#calls === null) {
      this.#calls = { byId: new Map(), byCallId: new Map() };
      if (this.leafId !== null) {
        for (const m of this.buildContext({ transcript: true, keepDanglingToolCalls: true }).messages)
          this.#noteCalls(m);
      }
    }
    return this.#calls;
  }

  #noteCalls(message) {
    if (message?.role !== 'assistant' || !Array.isArray(message.content)) return;
    for (const b of message.content) {
      if (b?.type !== 'toolCall' || typeof b.id !== 'string') continue;
      const call = { id: b.id, name: b.name, arguments: b.arguments };
      this.#calls.byId.set(b.id, call);
      const bar = b.id.indexOf('|');
      if (bar > 0) this.#calls.byCallId.set(b.id.slice(0, bar), call);
    }
  }

  /** The data of the latest `ctxfold:system` entry in file order, or undefined. */
  #storedSystem() {
    if (this.#system === undefined) {
      this.#system = null;
      const customs = this.index().filter((e) => e.type === 'custom');
      for (let i = customs.length - 1; i >= 0; i--) {
        const e = this.entry(customs[i].id);
        if (e?.customType === SYSTEM_ENTRY && isObject(e.data)) {
          this.#system = e.data;
          break;
        }
      }
    }
    return this.#system ?? undefined;
  }

  /** Appends a `message` entry; returns its id. */
  appendMessage(message, options) {
    // The core checks the message (src/session/validate.rs): E_INVALID_MESSAGE naming the
    // field, with the session unchanged.
    return this.append('message', { message }, options);
  }

  /** Appends a `compaction` entry; returns its id. Throws `E_UNKNOWN_ENTRY` for a bad firstKeptEntryId. */
  appendCompaction(compaction, options) {
    return this.#inner.appendCompaction(toJson(object(compaction, 'a compaction')), nowOf(options));
  }

  /** Moves the leaf to `fromId` (null: the root) and appends a branch summary there. */
  branchWithSummary(fromId, summary, options) {
    text(summary, 'the summary');
    const from = fromId === null || fromId === undefined ? undefined : nonEmptyText(fromId, 'fromId');
    const details = options?.details === undefined ? undefined : toJson(options.details);
    return this.#inner.branchWithSummary(from, summary, details, Boolean(options?.fromExtension), nowOf(options));
  }

  /**
   * Whether a turn is under way at the leaf: its last message is a tool result, or an
   * assistant message that stopped for tool calls. An automatic handoff waits for the turn's end.
   */
  turnUnderWay() {
    return this.#inner.turnUnderWay();
  }

  /** Labels an entry (an empty or missing label clears it); returns the label entry's id. */
  appendLabel(targetId, label, options) {
    const target = nonEmptyText(targetId, 'targetId');
    return this.#inner.appendLabel(target, optionalText(label, 'a label'), nowOf(options));
  }

  /** The current label of every labelled entry: `{id: label}`. */
  labels() {
    return JSON.parse(this.#inner.labelsJson());
  }

  /** What a compaction would do now: cut, regions (entry ids), tokens, file operations. */
  prepareCompaction(settings, options) {
    return JSON.parse(this.#inner.prepareCompactionJson(optionsJson(settings), optionsJson(options)));
  }

  /**
   * Plans a compaction without changing anything (sans-IO): returns a plan whose `pending`
   * requests you answer (through any LLM), then `commitCompaction(plan)`.
   */
  planCompaction(settings, options) {
    return new CompactionPlan(this.#inner.planCompaction(optionsJson(settings), optionsJson(options)), this.#inner);
  }

  /** Appends the compaction entry of a complete plan. Throws `E_PLAN_INCOMPLETE`, `E_STALE_PLAN`. */
  commitCompaction(plan, options) {
    const snapcompact = options?.snapcompact === undefined ? undefined : toJson(options.snapcompact);
    return committed(this.#inner.commitCompaction(planOf(plan), nowOf(options), snapcompact), this.#inner);
  }

  /** Appends a compaction written elsewhere (e.g. by a hook) for a plan's preparation. */
  commitExtensionCompaction(plan, compaction, options) {
    if (!isObject(compaction) || typeof compaction.summary !== 'string') {
      throw invalidArgument('a compaction needs a string `summary`');
    }
    return committed(
      this.#inner.commitExtensionCompaction(planOf(plan), toJson(compaction), nowOf(options)),
      this.#inner,
    );
  }

  /**
   * Writes `warning` into the compaction entry `entryId` (the progress guard's note, spec:
   * compaction §8.5), keeping every other byte of its line. Throws `E_UNKNOWN_ENTRY`, or
   * `E_INVALID_ARGUMENT` for an entry that is not a compaction.
   */
  stampCompactionWarning(entryId, warning) {
    this.#inner.stampCompactionWarning(nonEmptyText(entryId, 'entryId'), text(warning, 'warning'));
  }

  /**
   * Undoes a compaction: the leaf returns to where it was before it (the entry's parent);
   * nothing is deleted. Returns the new leaf id (null when the compaction was a root). Throws
   * `E_UNDO_REFUSED` when the entry is not a compaction or the leaf is no longer on it.
   */
  undoCompaction(entryId) {
    return this.#inner.undoCompaction(nonEmptyText(entryId, 'entryId')) ?? null;
  }

  /** Commits a handoff plan: a new Session whose first entry holds the handoff document. */
  commitHandoff(plan, options) {
    const id = optionalText(options?.sessionId, '`sessionId`');
    return new Session(this.#inner.commitHandoff(planOf(plan), id, nowOf(options)));
  }

  /**
   * Plans a move of the leaf to `targetId` (spec: compaction §7.5) without changing anything:
   * with `summarize: true` the plan asks for a summary of the branch being left.
   */
  planNavigation(targetId, options) {
    const raw = this.#inner.planNavigation(nonEmptyText(targetId, 'targetId'), optionsJson(options));
    return new NavigationPlan(raw, this.#inner);
  }

  /**
   * Applies a navigation plan: `answer` is the summarizer's text (`{summary}`), a hook's
   * summary (`{summary, details, fromExtension: true}`) or nothing. Throws `E_STALE_PLAN`.
   */
  commitNavigation(plan, answer, options) {
    if (!(plan instanceof NavigationPlan)) {
      throw invalidArgument('expected a plan from session.planNavigation()');
    }
    if (answer !== undefined && answer !== null && (!isObject(answer) || typeof answer.summary !== 'string')) {
      throw invalidArgument('a navigation answer is `{summary: string}` (or nothing)');
    }
    const json = answer === undefined || answer === null ? undefined : toJson(answer);
    return JSON.parse(this.#inner.commitNavigation(plan._raw(), json, nowOf(options)));
  }

  /**
   * Moves the leaf to `targetId`, summarizing the branch left behind through `summarize`
   * when given (spec: compaction §7.5), with the `session_before_tree` / `session_tree`
   * hooks. Resolves `{cancelled: true}` when a hook cancels and `{cancelled: true, aborted:
   * true}` on abort, with the session unchanged.
   */
  navigateTree(targetId, options) {
    return navigateSession(this, targetId, options ?? {});
  }

  /**
   * Threshold pruning of old tool outputs (spec: compaction §6.6): protects the newest
   * `protectTokens` of tool output, prunes only when `minimumSavings` are reached, and
   * replaces each pruned result's content with a short notice (`prunedAt` set). With
   * `dryRun: true` nothing is written. `now` defaults to `Date.now()`.
   */
  prune(options) {
    return this.#prune('threshold', options);
  }

  /**
   * The per-turn stale pass (spec: compaction §6.5): results superseded by a newer read of
   * the same file (`supersedeKey: true`) and results flagged `useless`, pruned once they are
   * deep enough in the history (or the session is idle). `now` defaults to `Date.now()`.
   */
  pruneStale(options) {
    return this.#prune('stale', { supersedeKey: true, ...options });
  }

  /**
   * Searches every entry of every branch (compacted and abandoned ones too) and snapcompact
   * archives' source text: entries holding the query's exact identifiers first, then by a
   * BM25 score. Returns `[{entryId, role, timestamp, exact, score, snippet}]`. Throws
   * `E_INVALID_ARGUMENT` for an empty query or bad options.
   */
  searchHistory(query, options) {
    const q = text(query, 'query');
    const o = options === undefined || options === null ? {} : object(options, 'searchHistory options');
    this.#recall ??= new (requireRaw().WasmHistoryIndex)();
    return JSON.parse(this.#recall.searchJson(this.#inner, q, JSON.stringify(o)));
  }

  /**
   * What a committed plan left the model: `{lost, anchored}` — identifiers of the region it
   * dropped that nothing in this session's context shows, and those its anchor block holds.
   * Ask the session the model reads next (a handoff's new session for a handoff plan).
   */
  lossReport(plan) {
    return JSON.parse(this.#inner.lossReportJson(planOf(plan)));
  }

  #prune(pass, options) {
    const { dryRun, ...config } = options === undefined || options === null ? {} : object(options, 'prune options');
    if (config.now === undefined) config.now = Date.now();
    return lazyRows(this.#inner.pruneJson(pass, JSON.stringify(config), dryRun === true));
  }

  /**
   * The regions a shake would elide (spec: compaction §13 "Shake"), with the text of their
   * recovery artifact; nothing is written. `preset` `'aggressive'` (default: the manual
   * shake), `'default'` (automatic) or `'rescue'`, and overrides.
   */
  planShake(options) {
    const config = options === undefined || options === null ? {} : object(options, 'shake options');
    const plan = JSON.parse(this.#inner.shakeJson('plan', JSON.stringify(config), undefined, undefined, 0));
    return { ...plan, options: config };
  }

  /**
   * Writes the placeholders of a `planShake` plan, naming `artifactId` (the host's id of the
   * stored artifact text) when given; `now` (default `Date.now()`) becomes `prunedAt` of each
   * elided tool result. `E_STALE_PLAN` when the session changed since the plan; nothing is
   * written then.
   */
  applyShake(plan, options) {
    if (!isObject(plan) || typeof plan.fingerprint !== 'string') {
      throw invalidArgument('expected a plan from session.planShake()');
    }
    const artifactId = optionalText(options?.artifactId, 'artifactId');
    const now = nowOf(options);
    return JSON.parse(
      this.#inner.shakeJson('apply', JSON.stringify(plan.options ?? {}), plan.fingerprint, artifactId, now),
    );
  }

  /**
   * Drops every image attached to the branch to `leafId` (default: the active branch), in
   * place: the dead-end rescue's last tier (spec: compaction §8.3). A content left with no
   * block reads `[image removed]`. Returns `{removed, entries}` (the rewritten entries' ids);
   * nothing is written when no image is attached.
   */
  dropImages(options) {
    const o = options === undefined || options === null ? {} : object(options, 'dropImages options');
    return JSON.parse(this.#inner.dropImagesJson(optionalText(o.leafId, '`leafId`')));
  }

  /** `shake thinking`, synchronous: drops the reasoning blocks of old assistant messages. */
  dropThinking(options) {
    const config = options === undefined || options === null ? {} : object(options, 'shake options');
    return this.#shakeNow({ ...config, thinking: true }, 0);
  }

  /** Plans and applies a shake in one call, without an artifact. */
  #shakeNow(config, now) {
    return JSON.parse(this.#inner.shakeJson('run', JSON.stringify(config), undefined, undefined, nowOf({ now })));
  }

  /**
   * Shakes the active branch (spec: compaction §13 "Shake"): plans, stores the recovery
   * artifact through `saveArtifact` when given, and writes the placeholders. `mode:
   * 'thinking'` drops old reasoning blocks instead.
   */
  shake(options) {
    return shakeSession(this, options, (config, now) => this.#shakeNow(config, now));
  }

  /**
   * Runs a whole compaction: plans, calls `summarize` (or POSTs to `remoteEndpoint`) for every
   * request with retries, runs the hooks, and commits. On any failure or abort nothing is
   * appended and the promise rejects with a coded Error.
   */
  compact(options) {
    const o = options ?? {};
    if (!isObject(o)) return Promise.reject(invalidArgument('options must be an object'));
    const summarize = o.summarize;
    const okSummarize =
      summarize === undefined ||
      typeof summarize === 'function' ||
      (Array.isArray(summarize) && summarize.every((f) => typeof f === 'function'));
    if (!okSummarize) {
      return Promise.reject(invalidArgument('`summarize` must be a function or an array of functions'));
    }
    if (o.remoteEndpoint !== undefined && typeof o.remoteEndpoint !== 'string') {
      return Promise.reject(invalidArgument('`remoteEndpoint` must be a URL string'));
    }
    for (const k of ['credentials', 'fetch']) {
      if (o[k] !== undefined && typeof o[k] !== 'function') {
        return Promise.reject(invalidArgument(`\`${k}\` must be a function`));
      }
    }
    return compactSession(this, o);
  }

  /**
   * The frames of a snapcompact compaction entry (its archive, spec: snapcompact §9.1) as PNG
   * bytes with their grid, oldest first; `[]` for an entry without an archive. Frames stored
   * outside the entry (`blob:sha256:…` references) come back with `png: null`.
   */
  archiveFrames(entryId) {
    const frames = this.#inner.archiveFramesJson(nonEmptyText(entryId, 'entryId'));
    if (frames === undefined) throw codedError('E_UNKNOWN_ENTRY', `Entry ${entryId} not found`);
    return JSON.parse(frames).map((f) => ({
      png: typeof f?.data === 'string' && !f.data.startsWith('blob:') ? base64Bytes(f.data) : null,
      mimeType: f?.mimeType ?? 'image/png',
      cols: f?.cols ?? 0,
      rows: f?.rows ?? 0,
      chars: f?.chars ?? 0,
    }));
  }

  /** Rewrites the file's snapcompact frames to `inline` or `reference` storage (see the types). */
  migrateFrames(to) {
    return JSON.parse(this.#inner.migrateFramesJson(nonEmptyText(to, 'to')));
  }

  /** The session file as a string (bytes that were not UTF-8 become U+FFFD; see toBytes). */
  toJsonl() {
    // Decoded here from the bytes (the same U+FFFD replacement as in Rust), so wasm memory
    // holds no second copy of the file; `ignoreBOM` keeps a leading BOM as it was.
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.#inner.toBytes());
  }

  /** The session file as bytes: unchanged lines exactly as loaded. */
  toBytes() {
    return this.#inner.toBytes();
  }

  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free() {
    if (this.#recall !== null) release(this.#recall);
    this.#recall = null;
    release(this.#raw);
  }
}

/** Base64 → bytes with the `atob` every runtime we ship to has (Node.js, browsers, workerd). */
function base64Bytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function planOf(plan) {
  if (!(plan instanceof CompactionPlan)) {
    throw invalidArgument('expected a plan from session.planCompaction()');
  }
  return plan._raw();
}

/**
 * A plan object of the wasm core and the session it was made for (later requests are read
 * from it, and its preparation names that session's entries).
 */
class PlanHandle {
  #raw;
  #session;

  constructor(raw, session) {
    this.#raw = raw;
    this.#session = session;
  }

  /** @internal */
  _raw() {
    return live(this.#raw, 'plan');
  }

  /** @internal */
  _session() {
    return live(this.#session, 'session');
  }

  /** Releases the plan's WebAssembly memory now. */
  free() {
    release(this.#raw);
  }
}

/** A compaction waiting for its summaries (see `Session.planCompaction`). */
export class CompactionPlan extends PlanHandle {
  /** The requests that can be sent now: `{id, purpose, systemPrompt, prompt, maxTokens, window?}`. */
  get pending() {
    return JSON.parse(this._raw().pendingJson());
  }

  /** What the compaction will do: cut, regions (entry ids), tokens, file operations. */
  get preparation() {
    return JSON.parse(this._raw().preparationJson(this._session()));
  }

  /** True when every request is answered. */
  get isComplete() {
    return this._raw().isComplete;
  }

  /** `'context-full'` or `'handoff'`. */
  get strategy() {
    return this._raw().strategy;
  }

  /** Records the summary text answering a pending request. */
  answer(id, text) {
    if (typeof id !== 'string' || typeof text !== 'string') {
      throw invalidArgument('answer(id, text) takes two strings');
    }
    this._raw().answer(this._session(), id, text);
  }

  /** The summarizer's context overflowed on a history window: plan it at half the budget. */
  retrySmaller(id, tokensSent) {
    this._raw().retrySmaller(this._session(), nonEmptyText(id), tokensSent);
  }
}

/** A navigation waiting for its commit (see `Session.planNavigation`). */
export class NavigationPlan extends PlanHandle {
  /** The target is the current leaf: committing changes nothing. */
  get isNoop() {
    return this._raw().isNoop;
  }

  /** The summary request to answer: none, or one with purpose `branch-summary`. */
  get pending() {
    return JSON.parse(this._raw().pendingJson());
  }

  /** What the navigation does: target, old leaf, common ancestor, entries to summarize, … */
  get preparation() {
    return JSON.parse(this._raw().preparationJson(this._session()));
  }

  /** Changes the summarizer instructions (the request is written again) and the label. */
  setInstructions({ customInstructions, replaceInstructions, label } = {}) {
    this._raw().setInstructions(customInstructions ?? undefined, replaceInstructions ?? undefined, label ?? undefined);
  }
}

/**
 * `call(bytes)` with `messages` as JSON lines (one message per line, UTF-8), for the core's
 * batch calls. A refused message (`E_INVALID_MESSAGE`: one JSON cannot hold, such as a cycle,
 * or one the core refuses) keeps its `index` only when the positions are the caller's
 * (`sameIndex`: the format kept one message per input message).
 */
function withMessageLines(messages, sameIndex, call) {
  const lines = new JsonlWriter();
  try {
    messages.forEach((m, i) => {
      try {
        lines.add(toJson(m, 'E_INVALID_MESSAGE'));
      } catch (e) {
        if (e?.code === 'E_INVALID_MESSAGE') e.index = i;
        throw e;
      }
    });
    return call(lines.bytes());
  } catch (e) {
    if (!sameIndex && e !== null && typeof e === 'object') delete e.index;
    throw e;
  } finally {
    lines.release();
  }
}

/**
 * The system prompt of a batch as its `ctxfold:system` entry stores it (`{text, value,
 * format}`), or null: the `system` option, else the one the format's messages carried.
 */
function systemOf(options, read, format) {
  const system = options?.system ?? read.system?.value;
  if (system === undefined || system === null) return null;
  const text = options?.system !== undefined ? systemText(options.system) : read.system.text;
  return { text, value: system, format: format.name };
}

/** The fields of the `ctxfold:system` entry holding `stored` (null: none), as JSON. */
function systemEntry(stored) {
  return stored === null ? undefined : toJson({ customType: SYSTEM_ENTRY, data: stored });
}

/** Entry types that are conversation (see `#hasHistory`). */
const HISTORY_TYPES = new Set(['message', 'compaction', 'branch_summary', 'custom_message']);

/**
 * A system prompt given as an option as text: a string, or a format's form of it (text blocks,
 * system messages with `content`, a Gemini `systemInstruction` with `parts`), or a list of these.
 */
function systemText(system) {
  if (typeof system === 'string') return system;
  const blocks = Array.isArray(system) ? system : [system];
  return blocks
    .map((b) => {
      if (typeof b === 'string') return b;
      if (typeof b?.text === 'string') return b.text;
      if (typeof b?.content === 'string') return b.content;
      return textOfParts(Array.isArray(b?.content) ? b.content : b?.parts);
    })
    .filter((t) => t !== '')
    .join('\n\n');
}

function textOfParts(parts) {
  return Array.isArray(parts) ? parts.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';
}

/** The key under which newer reads supersede older ones (spec: compaction §6.2), or `undefined`. */
export function readToolSupersedeKey(toolName, args) {
  return requireRaw().readToolSupersedeKey(text(toolName, 'toolName'), toJson(args ?? null)) ?? undefined;
}

/** Estimated tokens of one agent message (spec: compaction §3.1). */
export function estimateTokens(message, options) {
  return requireRaw().estimateTokensJson(
    toJson(object(message, 'a message')),
    Boolean(options?.excludeEncryptedReasoning),
  );
}

/** Context tokens a usage record reports (spec: compaction §3.2). */
export function usageContextTokens(usage) {
  return requireRaw().usageContextTokens(JSON.stringify(usage ?? {}));
}

/** `{provider, id}` of a model for its `modelThresholds` rule, as JSON (undefined: no model). */
function modelKeyJson(model) {
  if (model === undefined || model === null) return undefined;
  if (!isObject(model) || typeof model.provider !== 'string' || typeof model.id !== 'string') {
    throw invalidArgument('`model` must be an object with string `provider` and `id`');
  }
  return JSON.stringify({ provider: model.provider, id: model.id });
}

/** The token count above which compaction runs (spec: compaction §3.3); the model's `modelThresholds` rule applies when given. */
export function thresholdTokens(contextWindow, settings, model) {
  return requireRaw().thresholdTokens(contextWindow, optionsJson(settings), modelKeyJson(model));
}

/** The reserve the threshold leaves below the window. */
export function reserveTokens(contextWindow, settings) {
  return requireRaw().reserveTokens(contextWindow, optionsJson(settings));
}

/** True when `contextTokens` is over the threshold (and compaction is enabled). */
export function shouldCompact(contextTokens, contextWindow, settings, model) {
  return requireRaw().shouldCompact(contextTokens, contextWindow, optionsJson(settings), modelKeyJson(model));
}

/** The `keepRecentTokens` adaptation (spec: compaction §3.4). */
export function adaptKeepRecentTokens(keepRecentTokens, promptTokens, estimatedTokens) {
  const [keep, ratio] = requireRaw().adaptKeepRecentTokens(keepRecentTokens, promptTokens, estimatedTokens);
  return { keepRecentTokens: keep, ratio };
}

/** Validates compaction settings and fills in the defaults. Throws `E_SETTINGS` naming the field. */
export function resolveSettings(settings) {
  return JSON.parse(requireRaw().resolveSettingsJson(optionsJson(settings)));
}

// Inline imaging: old tool results and system-prompt text sent as frames, request by request.
export { InlineImager } from '../runner/inline.js';
// The runner that carries the trigger decisions out around each provider request.
export { Maintainer } from '../runner/maintainer.js';
// snapcompact: shapes, billing, text pipeline and PNG frames.
export * from './snapcompact.js';
// The trigger state machine: when to compact, retry, promote, warn or continue.
export * from './triggers.js';
