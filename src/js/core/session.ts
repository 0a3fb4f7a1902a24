// The sessions of the core: a thin wrapper over the wasm session (`WasmSession`) and its plans,
// with the package's plain functions over the core (version, token estimates, thresholds).
// Values cross the wasm boundary as JSON text (see src/wasm/mod.rs); this module parses and
// stringifies, fills defaults (`now` = Date.now()), and checks argument types so that misuse
// fails with a coded Error instead of deep inside the engine. Every call here is synchronous.
//
// The layers: `SessionCore` (here) holds every synchronous operation of a session. The public
// `Session` (runner/session.ts) extends it with what needs the layers above core/: the message
// formats (fromMessages, appendMessages, toMessages), the provider's replay target of
// toLlmMessages, and the runs that await (compact, navigateTree, shake). The members named
// `_…` here are that subclass's handles, `@internal` (stripped from the declarations).

import { type Signal, untilAbort } from './abort.js';
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
import type { WasmCompactionPlan, WasmHistoryIndex, WasmNavigationPlan, WasmSession } from './glue.js';
import { committed, requireRaw } from './raw.js';
import type {
  AgentMessage,
  AppendOptions,
  ArchiveFrame,
  AsyncRead,
  AsyncReaderOptions,
  ByteStreamReader,
  CacheForecast,
  CompactionCommit,
  CompactionMethod,
  CompactionPreparation,
  CompactionSettings,
  ContextOptions,
  ContextTokens,
  CreateOptions,
  DropImagesResult,
  EntryInfo,
  EstimateOptions,
  ExtensionCompaction,
  FileDetails,
  FrameMigration,
  JsonObject,
  JsonValue,
  LlmMessage,
  LoadOptions,
  LoadWarning,
  LossReport,
  NavigationAnswer,
  NavigationOptions,
  NavigationPreparation,
  NavigationResult,
  PlanOptions,
  PrefixChange,
  PrunedOriginal,
  PrunedResult,
  PruneOptions,
  PruneReport,
  ResolvedCompactionSettings,
  SavedArtifact,
  SearchHistoryHit,
  SearchHistoryOptions,
  SessionContext,
  SessionEntry,
  SessionHeader,
  ShakeOptions,
  ShakePlan,
  ShakeReport,
  SnapcompactArchiveOptions,
  SnapcompactFrames,
  StreamOptions,
  SummaryRequest,
  TranscriptOptions,
  TranscriptPage,
  Usage,
} from './types.js';

/** The ids callback of `LoadOptions.ids`, or the JSON of the id options for the core. */
function idOptions(options: LoadOptions | undefined): [string, (() => string) | undefined] {
  const { ids, seed, start } = options ?? {};
  if (typeof ids === 'function') return [JSON.stringify({ seed, start }), ids];
  return [JSON.stringify({ ids, seed, start }), undefined];
}

/**
 * The options of a new session for the core (`now`: the header's time), and the ids callback.
 * @internal
 */
export function createOptions(
  options: CreateOptions | undefined,
  now: number | undefined,
): [string, (() => string) | undefined] {
  const [idJson, callback] = idOptions(options);
  const { id, cwd, parentSession } = options ?? {};
  return [JSON.stringify({ ...JSON.parse(idJson), id, cwd, parentSession, now }), callback];
}

/**
 * A wasm session loaded from a session file (a string or its UTF-8 bytes).
 * @internal
 */
export function loadJsonl(input: unknown, options: LoadOptions | undefined): WasmSession {
  const bytes = textOrBytes(input, 'input');
  const [json, callback] = idOptions(options);
  const raw = requireRaw();
  return raw.WasmSession.fromBytes(bytes, json, callback);
}

/** The buffer of the module's memory, where the source buffers of the loads below live. */
function moduleBuffer(raw: ReturnType<typeof requireRaw>): ArrayBuffer {
  return (raw.sourceMemory() as { buffer: ArrayBuffer }).buffer;
}

/**
 * A wasm session loaded from a file that `read(view)` writes straight into the module's
 * memory (see `Session.fromReader`).
 * @internal
 */
export function loadReader(
  size: number,
  read: (view: Uint8Array) => number | undefined,
  options: LoadOptions | undefined,
): WasmSession {
  if (!Number.isSafeInteger(size) || size < 0) throw invalidArgument('size must be a whole number of bytes');
  if (typeof read !== 'function') throw invalidArgument('read must be a function that fills the view');
  const [json, callback] = idOptions(options);
  const raw = requireRaw();
  const handle = raw.sourceNew(size);
  const view = new Uint8Array(moduleBuffer(raw), raw.sourceRoom(handle, size), size);
  // The module's memory grew while `read` ran: the view is over the old memory.
  const stale = (): boolean => view.byteLength !== size || moduleBuffer(raw) !== view.buffer;
  const staleError = () => invalidArgument('read called ctxfold while it filled the view: the view went stale');
  let written: number | undefined;
  try {
    written = read(view);
  } catch (e) {
    raw.sourceDrop(handle);
    throw stale() ? staleError() : e;
  }
  written ??= size;
  if (stale()) {
    raw.sourceDrop(handle);
    throw staleError();
  }
  if (!Number.isSafeInteger(written) || written < 0 || written > size) {
    raw.sourceDrop(handle);
    throw invalidArgument('read must return the number of bytes it wrote (at most size)');
  }
  raw.sourceAdvance(handle, written);
  return raw.WasmSession.fromSource(handle, json, callback);
}

/** The error of a load whose signal aborted: nothing was loaded. */
function loadAborted(): Error {
  return codedError('E_ABORTED', 'the load was aborted: the signal was aborted; nothing was loaded');
}

/** The `signal` of a load's options, checked: undefined or something to listen to. */
function loadSignal(options: { signal?: unknown } | undefined): Signal | undefined {
  const signal = options?.signal;
  if (signal === undefined || signal === null) return undefined;
  if (!isObject(signal) || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw invalidArgument('signal must be an AbortSignal');
  }
  if (signal.aborted) throw loadAborted();
  return signal as unknown as Signal;
}

/** Bytes one call of `Session.fromAsyncReader`'s `read` fills unless told otherwise. */
const READ_CHUNK = 4 << 20;
/** Times a window is read again because the module's memory grew while it was read. */
const REREADS = 8;

/**
 * A wasm session loaded from a file that `read(view, position)` writes into the module's
 * memory a window at a time, the lines of each window read while the next one is fetched
 * (see `Session.fromAsyncReader`).
 * @internal
 */
export async function loadAsyncReader(
  size: number,
  read: AsyncRead,
  options: AsyncReaderOptions | undefined,
): Promise<WasmSession> {
  if (!Number.isSafeInteger(size) || size < 0) throw invalidArgument('size must be a whole number of bytes');
  if (typeof read !== 'function') throw invalidArgument('read must be a function that fills the view');
  const chunk = options?.chunkSize ?? READ_CHUNK;
  if (!Number.isSafeInteger(chunk) || chunk < 1) throw invalidArgument('chunkSize must be a whole number of bytes ≥ 1');
  const [json, callback] = idOptions(options);
  const signal = loadSignal(options);
  const raw = requireRaw();
  const handle = raw.sourceNew(size);
  const base = raw.sourceRoom(handle, size);
  // Reads the window at `position`; once more when the module's memory grew while it was
  // read (the view it was given is then a stale one, which a reader written in JavaScript
  // may have filled in vain, or failed to fill: a TypeError of a detached buffer). Nothing of
  // the load runs meanwhile.
  const readWindow = async (position: number): Promise<number> => {
    for (let attempt = 0; attempt <= REREADS; attempt++) {
      const n = Math.min(chunk, size - position);
      const buffer = moduleBuffer(raw);
      let got: number | undefined;
      try {
        got = await read(new Uint8Array(buffer, base + position, n), position);
      } catch (e) {
        if (moduleBuffer(raw) !== buffer) continue;
        throw e;
      }
      const written = got ?? n;
      if (!Number.isSafeInteger(written) || written < 0 || written > n) {
        throw invalidArgument('read must return the number of bytes it wrote (at most the view’s length)');
      }
      if (moduleBuffer(raw) === buffer) return written;
    }
    throw invalidArgument('the module’s memory grew during every read of one window: keep other ctxfold calls out');
  };
  let pending: Promise<number> | null = size > 0 ? readWindow(0) : null;
  try {
    let at = 0;
    while (pending !== null) {
      const n = signal === undefined ? await pending : await untilAbort(pending, signal, loadAborted);
      pending = null;
      if (n === 0) break;
      raw.sourceAdvance(handle, n);
      at += n;
      // The next window is fetched while the lines of this one are read.
      if (at < size) pending = readWindow(at);
      raw.sourceScan(handle);
    }
  } catch (e) {
    // A read still in flight (an abort does not wait for it) writes into the buffer: the
    // buffer is freed once that read ends.
    if (pending === null) raw.sourceDrop(handle);
    else void pending.catch(() => undefined).then(() => raw.sourceDrop(handle));
    throw e;
  }
  return raw.WasmSession.fromSource(handle, json, callback);
}

/** Bytes of a stream between two reads of its complete lines. */
const SCAN_STEP = 1 << 20;

/**
 * The chunks of what `Session.fromStream` reads, in order. An abort of `signal` cancels a
 * `ReadableStream`, which ends a read that waits (the load then stops on the abort).
 */
async function* chunksOf(source: unknown, signal: Signal | undefined): AsyncGenerator<unknown, void, undefined> {
  let stream: unknown = source;
  if (isObject(source) && 'body' in source && 'headers' in source && typeof source.getReader !== 'function') {
    // A fetch Response: its body (none: an empty file).
    if (source.body === null) return;
    stream = source.body;
  }
  if (isObject(stream) && typeof stream.getReader === 'function') {
    const reader = (stream.getReader as () => ByteStreamReader).call(stream);
    let finished = false;
    const onAbort = () => void reader.cancel().catch(() => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        yield value;
      }
      finished = true;
    } finally {
      signal?.removeEventListener?.('abort', onAbort);
      // A chunk refused or a load given up: the rest of the stream is not wanted.
      if (!finished) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
    return;
  }
  if (
    isObject(stream) &&
    typeof (stream as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function'
  ) {
    yield* stream as unknown as AsyncIterable<unknown>;
    return;
  }
  throw invalidArgument('source must be a ReadableStream, a Response or an async iterable of Uint8Array chunks');
}

/** The size a fetch Response announces for its body: its Content-Length when not encoded. */
function announcedSize(source: unknown): number | undefined {
  if (!isObject(source) || !('headers' in source) || !isObject(source.headers)) return undefined;
  const headers = source.headers as { get?: (name: string) => string | null };
  if (typeof headers.get !== 'function') return undefined;
  // A compressed body's length is not the decoded file's.
  if (headers.get.call(headers, 'content-encoding')) return undefined;
  const length = Number(headers.get.call(headers, 'content-length') ?? Number.NaN);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * A wasm session loaded from a stream of the file's bytes, each chunk written into a buffer
 * of the module (see `Session.fromStream`).
 * @internal
 */
export async function loadStream(source: unknown, options: StreamOptions | undefined): Promise<WasmSession> {
  const given = options?.size;
  if (given !== undefined && (!Number.isSafeInteger(given) || given < 0)) {
    throw invalidArgument('size must be a whole number of bytes');
  }
  const [json, callback] = idOptions(options);
  const signal = loadSignal(options);
  const raw = requireRaw();
  const chunks = chunksOf(source, signal);
  // The next chunk, or the abort error as soon as the signal aborts (a stream that waits is
  // not waited for).
  const nextChunk = () => (signal === undefined ? chunks.next() : untilAbort(chunks.next(), signal, loadAborted));
  // The first chunk is asked for before the buffer exists: a source that is not one throws
  // before anything is allocated.
  let next: IteratorResult<unknown, void>;
  try {
    next = await nextChunk();
  } catch (e) {
    void chunks.return(undefined).catch(() => undefined);
    throw e;
  }
  const handle = raw.sourceNew(given ?? announcedSize(source) ?? 0);
  // Bytes written since the complete lines were last read: they are read every SCAN_STEP
  // bytes, between the stream's chunks.
  let unread = 0;
  try {
    for (; !next.done; next = await nextChunk()) {
      const chunk = next.value;
      let bytes: Uint8Array;
      if (chunk instanceof Uint8Array) bytes = chunk;
      else if (ArrayBuffer.isView(chunk)) bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      else if (chunk instanceof ArrayBuffer) bytes = new Uint8Array(chunk);
      else throw invalidArgument(`the stream gave a ${typeof chunk} chunk: it must give bytes (Uint8Array)`);
      const n = bytes.byteLength;
      if (n === 0) continue;
      // No await between asking for the room and writing it: the view cannot go stale.
      const at = raw.sourceRoom(handle, n);
      new Uint8Array(moduleBuffer(raw), at, n).set(bytes);
      raw.sourceAdvance(handle, n);
      unread += n;
      if (unread >= SCAN_STEP) {
        raw.sourceScan(handle);
        unread = 0;
      }
    }
    // A stream cancelled by the abort ends as if complete: the abort decides.
    if (signal?.aborted) throw loadAborted();
  } catch (e) {
    raw.sourceDrop(handle);
    // After an abort the generator may still wait on its source: it stops when that ends.
    const stopped = chunks.return(undefined).catch(() => undefined);
    if (!signal?.aborted) await stopped;
    throw e;
  }
  return raw.WasmSession.fromSource(handle, json, callback);
}

/**
 * A new empty wasm session.
 * @internal
 */
export function createSession(options: CreateOptions | undefined): WasmSession {
  const [json, callback] = createOptions(options, options?.now);
  return requireRaw().WasmSession.create(json, callback);
}

/** Version of the ctxfold core (from Cargo.toml). */
export function version(): string {
  return requireRaw().version();
}

/** Bytes of WebAssembly memory the module holds (it grows as needed and never shrinks). */
export function wasmMemoryBytes(): number {
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
function copyJson<T>(v: T, depth = 0): T {
  if (typeof v !== 'object' || v === null) return v;
  if (depth === COPY_DEPTH) return copyDeep(v);
  if (Array.isArray(v)) {
    const n = v.length;
    const to: unknown[] = new Array(n);
    for (let i = 0; i < n; i++) to[i] = copyJson(v[i], depth + 1);
    return to as T;
  }
  const from = v as Record<string, unknown>;
  const to: Record<string, unknown> = {};
  for (const k in from) {
    // An own `__proto__` member (JSON.parse makes one) must stay a member, not a prototype.
    if (k === '__proto__') {
      Object.defineProperty(to, k, {
        value: copyJson(from[k], depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      to[k] = copyJson(from[k], depth + 1);
    }
  }
  return to as T;
}

/**
 * `copyJson` as a loop with its own stack: `JSON.parse` reads any depth, and a message can
 * nest deeper than the call stack allows a recursive walk.
 */
function copyDeep<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v;
  type Node = Record<string | number, unknown>;
  const root: Node = Array.isArray(v) ? ([] as unknown as Node) : {};
  const todo: Node[] = [v as Node, root];
  while (todo.length > 0) {
    const to = todo.pop() as Node;
    const from = todo.pop() as Node;
    const copy = (x: unknown): unknown => {
      if (typeof x !== 'object' || x === null) return x;
      const y: Node = Array.isArray(x) ? ([] as unknown as Node) : {};
      todo.push(x as Node, y);
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
  return root as T;
}

/** What `plainCopy` returns for a value whose JSON text might not give it back as it is. */
const NOT_PLAIN: unique symbol = Symbol('not plain JSON');
/** What `plainCopy` returns for a value JSON.stringify leaves out of an object. */
const OMITTED: unique symbol = Symbol('omitted');
/** `String.prototype.isWellFormed` (ES2024) where the runtime has it. */
type MaybeWellFormed = string & { isWellFormed?: () => boolean };
const wellFormed: (s: string) => boolean =
  typeof (String.prototype as MaybeWellFormed).isWellFormed === 'function'
    ? (s) => (s as MaybeWellFormed).isWellFormed?.() === true
    : (s) => !/[\uD800-\uDFFF]/.test(s);

/**
 * A copy of `v` equal to `JSON.parse(JSON.stringify(v))`, or NOT_PLAIN where that is not
 * certain: BigInts, strings with lone surrogates (UTF-8 has them as U+FFFD), objects with a
 * prototype of their own or a `toJSON`, nesting past 64 levels (the core parses up to 127).
 * As JSON.stringify does, members that are `undefined`, functions or symbols are left out
 * (null in arrays, as holes are), non-finite numbers are null and `-0` is 0. `size.chars`
 * grows by the characters of its strings and keys, about the length of its JSON text.
 * @internal
 */
export function plainCopy(
  v: unknown,
  depth: number,
  size: { chars: number },
): JsonValue | typeof NOT_PLAIN | typeof OMITTED {
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
    const out: JsonValue[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const c = plainCopy(v[i], depth + 1, size);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      out[i] = c === OMITTED ? null : c;
    }
    return out;
  }
  const o = v as Record<string, unknown>;
  const proto = Object.getPrototypeOf(o);
  if ((proto !== Object.prototype && proto !== null) || typeof o.toJSON === 'function') return NOT_PLAIN;
  const out: JsonObject = {};
  for (const k of Object.keys(o)) {
    size.chars += k.length + 8;
    const c = plainCopy(o[k], depth + 1, size);
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
function lazyRows(text: string): PruneReport {
  const at = text.indexOf(',"pruned":');
  if (at < 0 || text.charCodeAt(text.length - 1) !== 0x7d) return JSON.parse(text);
  const report: PruneReport = JSON.parse(`${text.slice(0, at)}}`);
  let rows: PrunedResult[] | undefined;
  Object.defineProperty(report, 'pruned', {
    enumerable: true,
    configurable: true,
    get() {
      rows ??= JSON.parse(text.slice(at + 10, -1));
      return rows;
    },
    set(value: PrunedResult[]) {
      rows = value;
    },
  });
  return report;
}

/** The parts of the last `llmMessageParts` call: its number and each part's parsed messages. */
interface LlmParts {
  serial: number;
  parsed: LlmMessage[][];
}

/**
 * A session file: a header and a tree of entries, with a leaf selecting the active path.
 * Unchanged lines are written back byte for byte. The synchronous part of the public
 * `Session`, which every session is (see the top of this file); not exported by the package.
 */
export class SessionCore {
  /** The wasm session (read through `_inner`, which refuses it once freed). */
  #raw: WasmSession;
  /** The frame payloads of the compaction `toLlmMessages` referred to last: `{entry, data}`. */
  #frames: { entry: string; data: Array<string | undefined> } | null = null;
  /** The last `llmMessageParts` call: its number and each part's parsed messages. */
  #parts: LlmParts | null = null;
  /** The `searchHistory` index (built on the first search, kept current by the core). */
  #recall: WasmHistoryIndex | null = null;

  /** @internal */
  protected constructor(inner: WasmSession) {
    const given: unknown = inner;
    if (!isObject(given) || typeof given.toBytes !== 'function') {
      throw invalidArgument('use Session.fromJsonl(text | bytes) or Session.create() to make a session');
    }
    this.#raw = inner;
  }

  /** The wasm session; `E_FREED` after `free()`. @internal */
  protected get _inner(): WasmSession {
    return live(this.#raw, 'session');
  }

  /**
   * A session of this one's class around another wasm session (a handoff's new session is a
   * public `Session` when this one is).
   */
  #sibling(inner: WasmSession): this {
    const make = this.constructor as new (inner: WasmSession) => this;
    return new make(inner);
  }

  /**
   * Holds `held`, copies (`plainCopy`) of the messages entries `first`… were just written
   * from, as the parts of a first `llmMessageParts` call: the first `toLlmMessages` then gets
   * each by position instead of its JSON from wasm and a parse of it (a 10 MB history crossed
   * twice). Only plain JSON values are offered, and the core takes each one whose provider
   * message it can tell from the entry's facts: as it is, or with its `attribution` set.
   * @internal
   */
  protected _adopt(first: number, held: unknown[]): void {
    const offered = Uint8Array.from(held, (m) => (m === null || typeof m !== 'object' ? 0 : 1));
    const codes = this._inner.adoptLlmParts(first, offered);
    const parsed = held.map((m, k): LlmMessage[] => {
      const code = codes[k + 1];
      if (code === 0) return [];
      const message = m as LlmMessage;
      if (code !== 1) (message as { attribution?: string }).attribution = code === 2 ? 'user' : 'agent';
      return [message];
    });
    this.#parts = { serial: codes[0] as number, parsed };
  }

  /** Problems found while loading (malformed lines, unknown parents, …) and migrations. @internal */
  protected _loadWarnings(): LoadWarning[] {
    return JSON.parse(this._inner.warningsJson());
  }

  /** The header line as an object. */
  get header(): SessionHeader {
    return JSON.parse(this._inner.headerJson());
  }

  /** Format version after loading (3), and the version found in the file. */
  get version(): { current: number; onDisk: number } {
    const [current, onDisk] = this._inner.versionInfo();
    return { current: current as number, onDisk: onDisk as number };
  }

  /** Number of entries. */
  get size(): number {
    return this._inner.size;
  }

  /** Id of the leaf entry, or null when there is none. */
  get leafId(): string | null {
    return this._inner.leafId ?? null;
  }

  /** Every entry, in file order. */
  entries(): SessionEntry[] {
    return JSON.parse(this._inner.entriesJson());
  }

  /** The entry with `id`, or undefined. */
  entry(id: string): SessionEntry | undefined {
    const json = this._inner.entryJson(nonEmptyText(id));
    return json === undefined ? undefined : JSON.parse(json);
  }

  /** The entries from the root to `leafId` (default: the leaf), root first. Throws `E_UNKNOWN_ENTRY`. */
  branchEntries(leafId?: string): SessionEntry[] {
    return JSON.parse(this._inner.branchJson(leafId === undefined ? undefined : nonEmptyText(leafId)));
  }

  /** The tree without bodies: `{id, parentId, type, role?, label?, line}` per entry, in file order. */
  index(): EntryInfo[] {
    return JSON.parse(this._inner.indexJson());
  }

  /** Ids from the root to `id` (`getBranch`). Throws `E_UNKNOWN_ENTRY`. */
  pathTo(id: string): string[] {
    return JSON.parse(this._inner.pathTo(nonEmptyText(id)));
  }

  /** Ids of the children of `id`, or of the roots for `null`. Throws `E_UNKNOWN_ENTRY`. */
  children(id: string | null): string[] {
    if (id === null || id === undefined) return JSON.parse(this._inner.children(undefined));
    return JSON.parse(this._inner.children(nonEmptyText(id)));
  }

  /** Moves the leaf to an existing entry. Throws `E_UNKNOWN_ENTRY`. */
  branch(id: string): void {
    this._inner.branch(nonEmptyText(id));
  }

  /** Clears the leaf: the next append starts a new root. */
  resetLeaf(): void {
    this._inner.resetLeaf();
  }

  /** The context the model sees for a leaf (or the display transcript). */
  buildContext(options?: ContextOptions): SessionContext {
    return JSON.parse(this._inner.buildContextJson(optionsJson(options)).join(''));
  }

  /**
   * A page of the display transcript, for a view of a long history: messages `from`
   * (negative: from the end) to `from + count` (default: all) of the transcript of the leaf,
   * with the total; `{from: -100, count: 100}` is the last hundred messages. Only the page's
   * messages are copied out of the session.
   */
  transcript(options?: TranscriptOptions): TranscriptPage {
    return JSON.parse(this._inner.transcriptJson(optionsJson(options)).join(''));
  }

  /**
   * The provider messages of the context (`convertToLlm`). Each call returns new objects the
   * caller may change freely; the session converts only the messages that changed since its
   * previous call, so calling this once per request costs about what the new messages cost.
   */
  toLlmMessages(options?: ContextOptions): LlmMessage[] {
    if (options !== undefined && options !== null) object(options, 'options');
    // Snapcompact frames come as references to this session's copy of their payloads, which
    // crosses from wasm once per compaction rather than on every request.
    const messages = this.#llmMessages({ ...options, frameRefs: true });
    for (const m of messages) {
      if (!Array.isArray(m.content)) continue;
      for (const block of m.content as Array<{ type: string; data?: unknown }>) {
        if (block.type !== 'image' || typeof block.data !== 'string' || block.data.charCodeAt(0) !== 0) continue;
        const data = this.#frame(block.data);
        // Not expected (the payloads come from the same entry): then the payloads inline.
        if (data === undefined) return this.#llmMessages({ ...options, frameRefs: false });
        block.data = data;
      }
    }
    return messages;
  }

  /**
   * How many snapcompact frames the last `toLlmMessages` call left out of the compaction
   * summary for its `maxFrameDataBytes` / `maxImages` budgets: the count the summary's "N
   * archived image frames could not be included" notice states. 0 before any call, when the
   * context holds no archive, or when every frame fit.
   */
  lastFramesLeftOut(): number {
    return this._inner.lastFramesLeftOut();
  }

  /** Internal (the Maintainer's image estimate): the last `toLlmMessages` call's context starts with a compaction summary. @internal */
  _lastViewCompacted(): boolean {
    return this._inner.lastViewCompacted();
  }

  /**
   * The provider messages from the parts of `llmMessageParts`: a message converted as in the
   * previous call comes as the position of its part in that call, whose parsed messages this
   * session keeps. The caller gets copies (strings shared, they cannot change), so what a
   * host does to them never reaches the next call; a copy walks the objects, where a parse
   * would read every byte of every tool output again.
   */
  #llmMessages(options: object): LlmMessage[] {
    const parts: Array<number | string> = this._inner.llmMessageParts(
      JSON.stringify(options),
      this.#parts?.serial ?? 0,
    );
    const serial = parts.pop() as number;
    const held = this.#parts?.parsed ?? [];
    const parsed = parts.map((p): LlmMessage[] =>
      typeof p === 'number' ? (held[p] ?? []) : p === '' ? [] : JSON.parse(`[${p}]`),
    );
    this.#parts = { serial, parsed };
    const messages: LlmMessage[] = [];
    for (const ms of parsed) for (const m of ms) messages.push(copyJson(m));
    return messages;
  }

  /** The payload a frame reference `\0<entry id>:<frame>:<length>` of `llmMessageParts` names. */
  #frame(ref: string): string | undefined {
    const j = ref.lastIndexOf(':');
    const i = ref.lastIndexOf(':', j - 1);
    const [entry, frame, length] = [ref.slice(1, i), Number(ref.slice(i + 1, j)), Number(ref.slice(j + 1))];
    if (this.#frames?.entry !== entry || this.#frames.data[frame]?.length !== length) {
      const frames: Array<{ data?: string } | null> = JSON.parse(this._inner.archiveFramesJson(entry) ?? '[]');
      this.#frames = { entry, data: frames.map((f) => f?.data) };
    }
    const data = this.#frames.data[frame];
    return data?.length === length ? data : undefined;
  }

  /**
   * Token figures of the context. Without `options.model`, a path whose latest compaction is an
   * OpenAI provider-native one counts as that provider reads it: the replayed history's items,
   * not the placeholder summary (the same for `contextStats`).
   */
  contextTokens(options?: ContextOptions): ContextTokens {
    return JSON.parse(this._inner.contextTokensJson(optionsJson(options)));
  }

  /**
   * What the LLM context holds by the local estimate: `tokens`, `images`, and `byKind`
   * (`summary`, `user`, `assistant`, `toolResult`, `other`), the archive's frames at the flat
   * rate, without copying them.
   */
  contextStats(options?: ContextOptions): {
    tokens: number;
    images: number;
    byKind: { summary: number; user: number; assistant: number; toolResult: number; other: number };
  } {
    return JSON.parse(this._inner.contextStatsJson(optionsJson(options)));
  }

  /** Estimated tokens of the message an entry carries. Throws `E_UNKNOWN_ENTRY`. */
  entryTokens(id: string, options?: EstimateOptions): number {
    return this._inner.entryTokens(nonEmptyText(id), Boolean(options?.excludeEncryptedReasoning));
  }

  /**
   * Appends an entry of any type as a child of the leaf; returns its id. `fields` is an
   * object of the entry's fields, or that object's JSON text (a string, or its UTF-8 bytes),
   * as a worker that already holds it can pass on without a second `JSON.stringify`. The core
   * reads the text as it reads an object and leaves the session unchanged when it throws:
   * text that is not JSON throws a `message` entry's `E_INVALID_MESSAGE` (another type's
   * `E_INVALID_ARGUMENT`), JSON that is not an object or bytes that are not UTF-8
   * `E_INVALID_ARGUMENT`.
   */
  append(type: string, fields: JsonObject | string | Uint8Array, options?: AppendOptions): string {
    nonEmptyText(type, 'the entry type');
    const code = type === 'message' ? 'E_INVALID_MESSAGE' : 'E_INVALID_ARGUMENT';
    if (typeof fields === 'string' || fields instanceof Uint8Array) {
      const json = typeof fields === 'string' ? new TextEncoder().encode(fields) : fields;
      const id = this._inner.append(type, json, nowOf(options));
      // The hook reads fields only for the types it tracks: parse them then, from the core.
      this._appended(type, () => this.#fieldsOf(id));
      return id;
    }
    object(fields, 'entry fields');
    const json = toJsonBytes(fields, code);
    const id = this._inner.append(type, json, nowOf(options));
    this._appended(type, () => fields);
    return id;
  }

  /** The fields of entry `id` as `append` takes them (without id, parentId, type, timestamp). */
  #fieldsOf(id: string): JsonObject {
    const {
      id: _id,
      parentId: _parent,
      type: _type,
      timestamp: _time,
      ...fields
    } = this.entry(id) as unknown as JsonObject;
    return fields;
  }

  /**
   * An entry was appended: the public Session keeps its format caches current. `fields` gives
   * the entry's fields (read only when needed: an append of JSON text parses them then). @internal
   */
  protected _appended(_type: string, _fields: () => JsonObject): void {}

  /**
   * Appends a `message` entry; returns its id. The core checks the message first (its role's
   * required fields and types, known block types, counts from 0 to 2^53 − 1): a message it
   * would not read back as written, or a provider's response, throws `E_INVALID_MESSAGE`
   * with the `field` and leaves the session unchanged. Unknown members are kept.
   */
  appendMessage(message: AgentMessage, options?: AppendOptions): string {
    // The core checks the message (src/session/validate.rs): E_INVALID_MESSAGE naming the
    // field, with the session unchanged.
    return this.append('message', { message: message as unknown as JsonValue }, options);
  }

  /** Appends a `compaction` entry; returns its id. Throws `E_UNKNOWN_ENTRY` for a bad firstKeptEntryId. */
  appendCompaction(
    compaction: {
      summary: string;
      firstKeptEntryId: string;
      tokensBefore: number;
      shortSummary?: string;
      tokensAfter?: number;
      method?: CompactionMethod;
      details?: FileDetails | JsonObject;
      preserveData?: JsonObject;
      fromExtension?: boolean;
    },
    options?: AppendOptions,
  ): string {
    return this._inner.appendCompaction(toJson(object(compaction, 'a compaction')), nowOf(options));
  }

  /** Moves the leaf to `fromId` (null: the root) and appends a branch summary there. */
  branchWithSummary(
    fromId: string | null,
    summary: string,
    options?: AppendOptions & { details?: FileDetails | JsonObject; fromExtension?: boolean },
  ): string {
    text(summary, 'the summary');
    const from = fromId === null || fromId === undefined ? undefined : nonEmptyText(fromId, 'fromId');
    const details = options?.details === undefined ? undefined : toJson(options.details);
    return this._inner.branchWithSummary(from, summary, details, Boolean(options?.fromExtension), nowOf(options));
  }

  /**
   * Whether a turn is under way at the leaf: its last message is a tool result, or an
   * assistant message that stopped for tool calls. An automatic handoff waits for the turn's end.
   */
  turnUnderWay(): boolean {
    return this._inner.turnUnderWay();
  }

  /** Labels an entry (an empty or missing label clears it); returns the label entry's id. */
  appendLabel(targetId: string, label: string | null | undefined, options?: AppendOptions): string {
    const target = nonEmptyText(targetId, 'targetId');
    return this._inner.appendLabel(target, optionalText(label, 'a label'), nowOf(options));
  }

  /** The current label of every labelled entry: `{id: label}`. */
  labels(): Record<string, string> {
    return JSON.parse(this._inner.labelsJson());
  }

  /** What a compaction would do now (spec: compaction §4.5): cut, regions (entry ids), tokens, file operations. Throws like `planCompaction`. */
  prepareCompaction(
    settings?: CompactionSettings,
    options?: Pick<PlanOptions, 'provider' | 'leafId'>,
  ): CompactionPreparation {
    return JSON.parse(this._inner.prepareCompactionJson(optionsJson(settings), optionsJson(options)));
  }

  /**
   * Plans a compaction without changing anything (sans-IO): returns a plan whose `pending`
   * requests you answer (through any LLM), then `commitCompaction(plan)`. Throws
   * `E_ALREADY_COMPACTED`, `E_NOTHING_TO_COMPACT`, `E_SETTINGS`.
   */
  planCompaction(settings?: CompactionSettings, options?: PlanOptions): CompactionPlan {
    return new CompactionPlan(
      this._inner.planCompaction(optionsJson(settings), optionsJson(options)),
      this._inner,
      planKey,
    );
  }

  /**
   * Appends the compaction entry of a complete plan. Throws `E_PLAN_INCOMPLETE`,
   * `E_STALE_PLAN`, and for a snapcompact plan `E_NO_REDUCTION`; the session is unchanged then.
   */
  commitCompaction(
    plan: CompactionPlan,
    options?: AppendOptions & { snapcompact?: SnapcompactArchiveOptions },
  ): CompactionCommit {
    const snapcompact = options?.snapcompact === undefined ? undefined : toJson(options.snapcompact);
    return committed(this._inner.commitCompaction(planOf(plan), nowOf(options), snapcompact), this._inner);
  }

  /**
   * The frames a `commitCompaction` of the snapcompact `plan` with these options draws, to draw
   * one at a time first (`render(k)` → frame k's PNG): to report "frames k of n" or to let
   * other work run between frames. The commit then takes the drawn frames and writes the very
   * bytes it writes alone. Throws as `commitCompaction` (`E_SETTINGS` for another strategy,
   * `E_STALE_PLAN`, `E_NOTHING_TO_COMPACT`, `E_INVALID_ARGUMENT`).
   */
  snapcompactFrames(plan: CompactionPlan, options?: { snapcompact?: SnapcompactArchiveOptions }): SnapcompactFrames {
    const snapcompact = options?.snapcompact === undefined ? undefined : toJson(options.snapcompact);
    const inner = this._inner.snapcompactFrames(planOf(plan), snapcompact);
    return {
      count: inner.count,
      render: (k: number) => {
        if (!Number.isInteger(k) || k < 0 || k >= inner.count) {
          throw invalidArgument(`frame ${k} of ${inner.count} frames`);
        }
        return new Uint8Array(inner.render(k));
      },
      free: () => inner.free(),
    };
  }

  /** Appends a compaction written elsewhere (e.g. by a hook) for a plan's preparation. */
  commitExtensionCompaction(
    plan: CompactionPlan,
    compaction: ExtensionCompaction,
    options?: AppendOptions,
  ): CompactionCommit {
    const given: unknown = compaction;
    if (!isObject(given) || typeof given.summary !== 'string') {
      throw invalidArgument('a compaction needs a string `summary`');
    }
    return committed(
      this._inner.commitExtensionCompaction(planOf(plan), toJson(compaction), nowOf(options)),
      this._inner,
    );
  }

  /**
   * Writes `warning` into the compaction entry `entryId` (the progress guard's note, spec:
   * compaction §8.5), keeping every other byte of its line. Throws `E_UNKNOWN_ENTRY`, or
   * `E_INVALID_ARGUMENT` for an entry that is not a compaction.
   */
  stampCompactionWarning(entryId: string, warning: string): void {
    this._inner.stampCompactionWarning(nonEmptyText(entryId, 'entryId'), text(warning, 'warning'));
  }

  /**
   * Undoes a compaction: the leaf returns to where it was before it (the compaction entry's
   * parent; `null` when the compaction was a root). Nothing is deleted: the compaction stays in
   * the tree as an abandoned branch, and the next append continues from the parent. Only the
   * latest step can be undone: throws `E_UNDO_REFUSED` when `entryId` is not a compaction or the
   * leaf is no longer that entry (the session moved on), `E_UNKNOWN_ENTRY` for an unknown id;
   * the session is unchanged then. A handoff left this session unchanged: nothing to undo.
   * Returns the new leaf id.
   */
  undoCompaction(entryId: string): string | null {
    return this._inner.undoCompaction(nonEmptyText(entryId, 'entryId')) ?? null;
  }

  /** Commits a handoff plan: a new session (of this one's class) whose first entry holds the handoff document; this one is unchanged. */
  commitHandoff(plan: CompactionPlan, options?: AppendOptions & { sessionId?: string }): this {
    const id = optionalText(options?.sessionId, '`sessionId`');
    return this.#sibling(this._inner.commitHandoff(planOf(plan), id, nowOf(options)));
  }

  /**
   * Plans a move of the leaf to `targetId` (spec: compaction §7.5) without changing anything:
   * with `summarize: true` the plan asks for a summary of the branch being left. Throws
   * `E_UNKNOWN_ENTRY`.
   */
  planNavigation(targetId: string, options?: NavigationOptions): NavigationPlan {
    const raw = this._inner.planNavigation(nonEmptyText(targetId, 'targetId'), optionsJson(options));
    return new NavigationPlan(raw, this._inner, planKey);
  }

  /**
   * Applies a navigation plan: `answer` is the summarizer's text (`{summary}`), a hook's
   * summary (`{summary, details, fromExtension: true}`) or nothing. Throws `E_STALE_PLAN`,
   * `E_INVALID_ARGUMENT`; the session is unchanged then.
   */
  commitNavigation(plan: NavigationPlan, answer?: NavigationAnswer | null, options?: AppendOptions): NavigationResult {
    if (!(plan instanceof NavigationPlan)) {
      throw invalidArgument('expected a plan from session.planNavigation()');
    }
    const given: unknown = answer;
    if (given !== undefined && given !== null && (!isObject(given) || typeof given.summary !== 'string')) {
      throw invalidArgument('a navigation answer is `{summary: string}` (or nothing)');
    }
    const json = answer === undefined || answer === null ? undefined : toJson(answer);
    return JSON.parse(this._inner.commitNavigation(plan._raw(), json, nowOf(options)));
  }

  /**
   * Threshold pruning of old tool outputs (spec: compaction §6.6): protects the newest
   * `protectTokens` of tool output, prunes only when `minimumSavings` are reached, and
   * replaces each pruned result's content with a short notice (`prunedAt` set). With
   * `dryRun: true` nothing is written. `now` defaults to `Date.now()`. Throws `E_SETTINGS`
   * naming a bad option.
   */
  prune(options?: PruneOptions): PruneReport {
    return this.#prune('threshold', options);
  }

  /**
   * The per-turn stale pass (spec: compaction §6.5): results superseded by a newer read of
   * the same file (`supersedeKey: true`) and results flagged `useless`, pruned once they are
   * deep enough in the history (or the session is idle). `now` defaults to `Date.now()`.
   */
  pruneStale(options?: PruneOptions): PruneReport {
    return this.#prune('stale', { supersedeKey: true, ...options });
  }

  /**
   * Searches every entry of every branch (compacted and abandoned ones too) and snapcompact
   * archives' source text: entries holding the query's exact identifiers first, then by a
   * BM25 score. The index is built on the first call and kept current after. Throws
   * `E_INVALID_ARGUMENT` for an empty query or bad options.
   */
  searchHistory(query: string, options?: SearchHistoryOptions): SearchHistoryHit[] {
    const q = text(query, 'query');
    const o = options === undefined || options === null ? {} : object(options, 'searchHistory options');
    this.#recall ??= new (requireRaw().WasmHistoryIndex)();
    return JSON.parse(this.#recall.searchJson(this._inner, q, JSON.stringify(o)));
  }

  /**
   * Hands `searchHistory` (and `recall_history`) artifacts the host saved, `[{name, text,
   * kind?, entryId?}]`: searched beside the entries from now on, their hits naming them
   * (`artifact`). Shake and prune with `saveArtifact` add theirs themselves; after reopening
   * a session, the host hands them back here. `E_INVALID_ARGUMENT` for a bad list (nothing
   * added).
   */
  addArtifacts(artifacts: SavedArtifact[]): void {
    let json: string;
    try {
      json = JSON.stringify(artifacts);
    } catch (err) {
      throw invalidArgument(`addArtifacts: the artifacts are not JSON (${String(err)})`);
    }
    this.#recall ??= new (requireRaw().WasmHistoryIndex)();
    this.#recall.addArtifactsJson(this._inner, json ?? 'null');
  }

  /**
   * Plans a pruning pass (`'threshold'` or `'stale'`) with the original text of each result
   * it would blank; nothing is written until `apply()` (`E_STALE_PLAN` when a result changed
   * meanwhile). `free()` releases the plan. @internal
   */
  _planPrune(
    pass: string,
    options: PruneOptions,
  ): { report: PruneReport & { artifacts: PrunedOriginal[] }; apply(): PruneReport; free(): void } {
    const config: Record<string, unknown> = { ...options };
    if (config.now === undefined) config.now = Date.now();
    const plan = this._inner.planPrune(pass, JSON.stringify(config));
    return {
      report: JSON.parse(plan.json()),
      apply: () => lazyRows(this._inner.applyPrunePlan(plan)),
      free: () => release(plan),
    };
  }

  /**
   * Where a maintenance action that rewrote or appended the entries `changed` (none: a new
   * session) changed the request, and what it costs the provider's prompt cache (issue 39),
   * measured on the session as it is now; null when no changed entry carries a message of the
   * context. @internal
   */
  _cacheForecast(
    changed: string[],
    freed: number,
    provider: string,
    api: string | undefined,
  ): { prefixChangedAt: PrefixChange; forecast: CacheForecast } | null {
    return JSON.parse(this._inner.cacheForecast(changed, freed, provider, api));
  }

  /**
   * Runs a context tool (`recall_history`, `context_status`) on this session with the
   * `searchHistory` index: runner/tools.ts maps the call, the core answers. @internal
   */
  _contextTool(name: string, args: string, settings: string | undefined, figures: string): string {
    this.#recall ??= new (requireRaw().WasmHistoryIndex)();
    return this.#recall.runContextTool(this._inner, name, args, settings, figures);
  }

  /**
   * What a committed plan left the model: `{lost, anchored}` — identifiers of the region it
   * dropped that nothing in this session's context shows, and those its anchor block holds.
   * Ask the session the model reads next (a handoff's new session for a handoff plan).
   */
  lossReport(plan: CompactionPlan): LossReport {
    return JSON.parse(this._inner.lossReportJson(planOf(plan)));
  }

  #prune(pass: string, options: PruneOptions | undefined): PruneReport {
    const given: unknown = options;
    const { dryRun, ...config } = given === undefined || given === null ? {} : object(given, 'prune options');
    if (config.now === undefined) config.now = Date.now();
    return lazyRows(this._inner.pruneJson(pass, JSON.stringify(config), dryRun === true));
  }

  /**
   * The regions a shake would elide (spec: compaction §13 "Shake"), with the text of their
   * recovery artifact; nothing is written. `preset` `'aggressive'` (default: the manual
   * shake), `'default'` (automatic) or `'rescue'`, and overrides. Throws `E_SETTINGS` naming a
   * bad option.
   */
  planShake(options?: ShakeOptions): ShakePlan {
    const config = options === undefined || options === null ? {} : object(options, 'shake options');
    const plan = JSON.parse(this._inner.shakeJson('plan', JSON.stringify(config), undefined, undefined, 0));
    return { ...plan, options: config };
  }

  /**
   * Writes the placeholders of a `planShake` plan, naming `artifactId` (the host's id of the
   * stored artifact text) when given; `now` (default `Date.now()`) becomes `prunedAt` of each
   * elided tool result. `E_STALE_PLAN` when the session changed since the plan; nothing is
   * written then.
   */
  applyShake(plan: ShakePlan, options?: { artifactId?: string; now?: number }): ShakeReport {
    const given: unknown = plan;
    if (!isObject(given) || typeof given.fingerprint !== 'string') {
      throw invalidArgument('expected a plan from session.planShake()');
    }
    const artifactId = optionalText(options?.artifactId, 'artifactId');
    const now = nowOf(options);
    return JSON.parse(
      this._inner.shakeJson('apply', JSON.stringify(given.options ?? {}), given.fingerprint, artifactId, now),
    );
  }

  /**
   * Drops every image attached to the branch to `leafId` (default: the active branch), in
   * place: the dead-end rescue's last tier (spec: compaction §8.3). Image blocks go from the
   * content of user, developer, custom and tool-result messages and custom message entries
   * (a content left empty reads `[image removed]`), and from tool results' `details.images`,
   * bash executions' `images` and file mentions. Every other byte of the file stays. Returns
   * `{removed, entries}` (the rewritten entries' ids); nothing is written when no image is
   * attached. Throws `E_UNKNOWN_ENTRY` for a `leafId` not in the session.
   */
  dropImages(options?: { leafId?: string }): DropImagesResult {
    const o = options === undefined || options === null ? {} : object(options, 'dropImages options');
    return JSON.parse(this._inner.dropImagesJson(optionalText(o.leafId, '`leafId`')));
  }

  /** `shake thinking`, synchronous: drops the reasoning blocks of assistant messages older than `protectTokens`. */
  dropThinking(options?: ShakeOptions): ShakeReport {
    const config = options === undefined || options === null ? {} : object(options, 'shake options');
    return this._shakeNow({ ...config, thinking: true }, 0);
  }

  /** Plans and applies a shake in one call, without an artifact. @internal */
  _shakeNow(config: object, now: number): ShakeReport {
    return JSON.parse(this._inner.shakeJson('run', JSON.stringify(config), undefined, undefined, nowOf({ now })));
  }

  /**
   * The frames of a snapcompact compaction entry (its archive, spec: snapcompact §9.1) as PNG
   * bytes with their grid, oldest first; `[]` for an entry without an archive. Frames stored
   * outside the entry (`blob:sha256:…` references) come back with `png: null`. Throws
   * `E_UNKNOWN_ENTRY`.
   */
  archiveFrames(entryId: string): ArchiveFrame[] {
    const frames = this._inner.archiveFramesJson(nonEmptyText(entryId, 'entryId'));
    if (frames === undefined) throw codedError('E_UNKNOWN_ENTRY', `Entry ${entryId} not found`);
    const stored: Array<{ data?: unknown; mimeType?: string; cols?: number; rows?: number; chars?: number } | null> =
      JSON.parse(frames);
    return stored.map((f) => ({
      png: typeof f?.data === 'string' && !f.data.startsWith('blob:') ? base64Bytes(f.data) : null,
      mimeType: f?.mimeType ?? 'image/png',
      cols: f?.cols ?? 0,
      rows: f?.rows ?? 0,
      chars: f?.chars ?? 0,
    }));
  }

  /**
   * Rewrites the file's snapcompact frames (`settings.snapcompact.frameStorage`): `reference`
   * stores each frame once (a later entry's copy becomes `dataRef: {entry, frame, bytes}` naming
   * the first entry that holds it; not readable by oh-my-pi), `inline` writes every reference
   * that resolves as its bytes again (the reference's format). Converting one way and back gives
   * the same bytes. Throws `E_INVALID_ARGUMENT` for another `to`.
   */
  migrateFrames(to: 'inline' | 'reference'): FrameMigration {
    return JSON.parse(this._inner.migrateFramesJson(nonEmptyText(to, 'to')));
  }

  /** The session file as a string (bytes that were not UTF-8 become U+FFFD; see toBytes). */
  toJsonl(): string {
    // Decoded here from the bytes (the same U+FFFD replacement as in Rust), so wasm memory
    // holds no second copy of the file; `ignoreBOM` keeps a leading BOM as it was.
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(this._inner.toBytes());
  }

  /** The session file as bytes: unchanged lines exactly as loaded. */
  toBytes(): Uint8Array<ArrayBuffer> {
    return this._inner.toBytes() as Uint8Array<ArrayBuffer>;
  }

  /** Releases the WebAssembly memory now instead of at garbage collection. */
  free(): void {
    if (this.#recall !== null) release(this.#recall);
    this.#recall = null;
    release(this.#raw);
  }
}

/** Base64 → bytes with the `atob` every runtime we ship to has (Node.js, browsers, workerd). */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function planOf(plan: CompactionPlan): WasmCompactionPlan {
  if (!(plan instanceof CompactionPlan)) {
    throw invalidArgument('expected a plan from session.planCompaction()');
  }
  return plan._raw();
}

/** What only this module holds: plans are made by sessions, not by `new`. */
const planKey: unique symbol = Symbol('plan');

/**
 * A plan object of the wasm core and the session it was made for (later requests are read
 * from it, and its preparation names that session's entries).
 */
class PlanHandle {
  #raw: WasmCompactionPlan | WasmNavigationPlan;
  #session: WasmSession;

  /** @internal */
  constructor(raw: WasmCompactionPlan | WasmNavigationPlan, session: WasmSession, key: typeof planKey) {
    if (key !== planKey) throw invalidArgument('plans are made by session.planCompaction() / planNavigation()');
    this.#raw = raw;
    this.#session = session;
  }

  /** @internal */
  _raw(): WasmCompactionPlan | WasmNavigationPlan {
    return live(this.#raw, 'plan');
  }

  /** @internal */
  _session(): WasmSession {
    return live(this.#session, 'session');
  }

  /** Releases the plan's WebAssembly memory now. */
  free(): void {
    release(this.#raw);
  }
}

/** A compaction waiting for its summaries (see `Session.planCompaction`). */
export class CompactionPlan extends PlanHandle {
  /** @internal */
  override _raw(): WasmCompactionPlan {
    return super._raw() as WasmCompactionPlan;
  }

  /** Requests to send now (they are independent of each other): `{id, purpose, systemPrompt, prompt, maxTokens, window?}`. */
  get pending(): SummaryRequest[] {
    return JSON.parse(this._raw().pendingJson());
  }

  /** What the compaction will do: cut, regions (entry ids), tokens, file operations. */
  get preparation(): CompactionPreparation {
    return JSON.parse(this._raw().preparationJson(this._session()));
  }

  /** True when every request is answered. */
  get isComplete(): boolean {
    return this._raw().isComplete;
  }

  /** `'context-full'`, `'handoff'` or `'snapcompact'`. */
  get strategy(): 'context-full' | 'handoff' | 'snapcompact' {
    return this._raw().strategy as 'context-full' | 'handoff' | 'snapcompact';
  }

  /**
   * Records the summary text answering a pending request; may write follow-up requests (the
   * next history window is read from the session then: `E_STALE_PLAN` if it changed).
   */
  answer(id: string, text: string): void {
    if (typeof id !== 'string' || typeof text !== 'string') {
      throw invalidArgument('answer(id, text) takes two strings');
    }
    this._raw().answer(this._session(), id, text);
  }

  /**
   * The summarizer's context overflowed on a history window: plan it at half the budget.
   * Throws `E_SUMMARIZER` at the floor.
   */
  retrySmaller(id: string, tokensSent?: number): void {
    this._raw().retrySmaller(this._session(), nonEmptyText(id), tokensSent);
  }
}

/** A navigation waiting for its commit (see `Session.planNavigation`). */
export class NavigationPlan extends PlanHandle {
  /** @internal */
  override _raw(): WasmNavigationPlan {
    return super._raw() as WasmNavigationPlan;
  }

  /** The target is the current leaf: committing changes nothing. */
  get isNoop(): boolean {
    return this._raw().isNoop;
  }

  /** The summary request to answer: none, or one with purpose `branch-summary`. */
  get pending(): SummaryRequest[] {
    return JSON.parse(this._raw().pendingJson());
  }

  /** What the navigation does: target, old leaf, common ancestor, entries to summarize, … */
  get preparation(): NavigationPreparation {
    return JSON.parse(this._raw().preparationJson(this._session()));
  }

  /** A hook's changes: the summarizer instructions (the request is written again) and the label. */
  setInstructions({
    customInstructions,
    replaceInstructions,
    label,
  }: {
    customInstructions?: string | null;
    replaceInstructions?: boolean | null;
    label?: string | null;
  } = {}): void {
    this._raw().setInstructions(customInstructions ?? undefined, replaceInstructions ?? undefined, label ?? undefined);
  }
}

/**
 * `call(bytes)` with `messages` as JSON lines (one message per line, UTF-8), for the core's
 * batch calls. A refused message (`E_INVALID_MESSAGE`: one JSON cannot hold, such as a cycle,
 * or one the core refuses) keeps its `index` only when the positions are the caller's
 * (`sameIndex`: the format kept one message per input message).
 * @internal
 */
export function withMessageLines<T>(messages: unknown[], sameIndex: boolean, call: (bytes: Uint8Array) => T): T {
  const lines = new JsonlWriter();
  try {
    messages.forEach((m, i) => {
      try {
        lines.add(toJson(m, 'E_INVALID_MESSAGE'));
      } catch (e) {
        if (isObject(e) && e.code === 'E_INVALID_MESSAGE') e.index = i;
        throw e;
      }
    });
    return call(lines.bytes());
  } catch (e) {
    if (!sameIndex && e !== null && typeof e === 'object') delete (e as { index?: number }).index;
    throw e;
  } finally {
    lines.release();
  }
}

/** The key under which newer reads supersede older ones (spec: compaction §6.2), or `undefined`. */
export function readToolSupersedeKey(toolName: string, args: JsonValue | undefined): string | undefined {
  return requireRaw().readToolSupersedeKey(text(toolName, 'toolName'), toJson(args ?? null)) ?? undefined;
}

/** Estimated tokens of one agent message (spec: compaction §3.1). */
export function estimateTokens(message: AgentMessage, options?: EstimateOptions): number {
  return requireRaw().estimateTokensJson(
    toJson(object(message, 'a message')),
    Boolean(options?.excludeEncryptedReasoning),
  );
}

/** Context tokens a usage record reports (spec: compaction §3.2). */
export function usageContextTokens(usage: Partial<Usage>): number {
  return requireRaw().usageContextTokens(JSON.stringify(usage ?? {}));
}

/** `{provider, id}` of a model for its `modelThresholds` rule, as JSON (undefined: no model). */
function modelKeyJson(model: unknown): string | undefined {
  if (model === undefined || model === null) return undefined;
  if (!isObject(model) || typeof model.provider !== 'string' || typeof model.id !== 'string') {
    throw invalidArgument('`model` must be an object with string `provider` and `id`');
  }
  return JSON.stringify({ provider: model.provider, id: model.id });
}

/** The token count above which compaction runs (spec: compaction §3.3); with `model`, its `modelThresholds` rule applies. */
export function thresholdTokens(
  contextWindow: number,
  settings?: CompactionSettings,
  model?: { provider: string; id: string },
): number {
  return requireRaw().thresholdTokens(contextWindow, optionsJson(settings), modelKeyJson(model));
}

/** The reserve the threshold leaves below the window. */
export function reserveTokens(contextWindow: number, settings?: CompactionSettings): number {
  return requireRaw().reserveTokens(contextWindow, optionsJson(settings));
}

/** True when `contextTokens` is over the (model's) threshold and compaction is enabled. */
export function shouldCompact(
  contextTokens: number,
  contextWindow: number,
  settings?: CompactionSettings,
  model?: { provider: string; id: string },
): boolean {
  return requireRaw().shouldCompact(contextTokens, contextWindow, optionsJson(settings), modelKeyJson(model));
}

/** The `keepRecentTokens` adaptation (spec: compaction §3.4). */
export function adaptKeepRecentTokens(
  keepRecentTokens: number,
  promptTokens: number,
  estimatedTokens: number,
): { keepRecentTokens: number; ratio: number } {
  const [keep, ratio] = requireRaw().adaptKeepRecentTokens(keepRecentTokens, promptTokens, estimatedTokens);
  return { keepRecentTokens: keep as number, ratio: ratio as number };
}

/** Validates compaction settings and fills in the defaults. Throws `E_SETTINGS` naming the field. */
export function resolveSettings(settings?: CompactionSettings): ResolvedCompactionSettings {
  return JSON.parse(requireRaw().resolveSettingsJson(optionsJson(settings)));
}

export type { CtxfoldError, ErrorCode } from './errors.js';
// The data types, for the modules that import them from here (the package exports them from
// entries/api.ts).
export type * from './types.js';
