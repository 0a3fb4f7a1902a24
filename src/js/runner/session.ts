// The public `Session` of the package: the core's session (`SessionCore`, core/session.ts, every
// synchronous operation over the wasm session) and what needs the layers above core/ — the
// message formats (`fromMessages`, `appendMessages`, `toMessages`, formats/), the replay target
// of a Messages API reader (`toLlmMessages`, providers/), and the operations that await
// (`compact`, `navigateTree`, `shake`, runner/). It lives in runner/ because it calls the
// runner; the entries export it (entries/api.ts). Every way of making a session gives this
// class: its static constructors, `commitHandoff` (a session of the same class) and
// `compact()`'s handoff.

import { isObject, nowOf, object, toJson } from '../core/args.js';
import { invalidArgument } from '../core/errors.js';
import type { WasmSession } from '../core/glue.js';
import { committed, requireRaw } from '../core/raw.js';
import {
  createOptions,
  createSession,
  loadAsyncReader,
  loadJsonl,
  loadReader,
  loadStream,
  plainCopy,
  SessionCore,
  withMessageLines,
} from '../core/session.js';
import type {
  AsyncRead,
  AsyncReaderOptions,
  ByteSource,
  CompactionCommit,
  CompactOptions,
  CompactOutcome,
  ContextOptions,
  CreateOptions,
  JsonObject,
  LlmMessage,
  LoadOptions,
  LoadWarning,
  NavigateTreeOptions,
  NavigationCancelled,
  NavigationResult,
  PruneOptions,
  PruneReport,
  PruneRunOptions,
  ShakeResult,
  ShakeRunOptions,
  StreamOptions,
} from '../core/types.js';
import { replayTarget } from '../formats/anthropic.js';
import { Warnings } from '../formats/common.js';
import { formatOf, SYSTEM_ENTRY } from '../formats/index.js';
import type {
  AppendMessagesOptions,
  AppendMessagesResult,
  FormatMessages,
  FormatWarning,
  FromMessagesOptions,
  MessageFormat,
  ToMessagesOptions,
  ToMessagesResult,
} from '../formats/types.js';
import type { ChangeMark, SessionChanges } from '../storage/types.js';
import { compactSession } from './compact.js';
import { navigateSession } from './navigate.js';
import { pruneWithArtifacts } from './prune.js';
import { shakeSession } from './shake.js';

// `HandoffResult.session` (core/types.ts) is this class.
declare module '../core/types.js' {
  interface SessionClasses {
    session: Session;
  }
}

/** A system prompt as the `ctxfold:system` entry stores it. */
interface StoredSystem {
  text: string;
  value: unknown;
  format: string;
}

/** A tool call of the leaf's path, as the format readers look it up. */
interface KnownCall {
  id: string;
  name: unknown;
  arguments: unknown;
}

/**
 * A format module of formats/ as this class calls it (see formats/index): the narrowest type
 * of what is used here, while the format modules' own declarations do not declare their
 * `name`, `read` and `write`.
 */
interface FormatModule {
  name: string;
  maxImages?: number;
  read(messages: unknown[], ctx: object): { messages: unknown[]; system?: { text: string; value: unknown } };
  write(llm: LlmMessage[], ctx: object): { messages: unknown[]; system?: unknown };
}

/** A session file: a header and a tree of entries, with a leaf selecting the active path. */
export class Session extends SessionCore {
  /**
   * The core's commit of the server compaction a reply carried (spec: compaction §13,
   * `openai_inline`): `items` the reply's `compaction` / `configuration_update` output items as
   * JSON, `replyId` the reply's entry (the leaf). The commit (with the prompt tokens the reply
   * reported, `providerTokensBefore`, when it did), or undefined when there is none.
   * @internal
   */
  _commitServerCompaction(
    provider: string,
    replyId: string,
    items: string,
    now: number,
  ): (CompactionCommit & { providerTokensBefore?: number }) | undefined {
    const raw = this._inner;
    const json = raw.commitInlineCompaction(provider, replyId, items, now);
    return json === undefined ? undefined : committed<CompactionCommit & { providerTokensBefore?: number }>(json, raw);
  }

  /**
   * The message formats: tool calls of the leaf's path as `{id, name, arguments}`, by id
   * (`byId`) and, for pi's Responses ids `call_id|item_id`, by `call_id` (`byCallId`); built on
   * first need.
   */
  #calls: { byId: Map<string, KnownCall>; byCallId: Map<string, KnownCall> } | null = null;
  /** The latest `ctxfold:system` entry's data (null: none; undefined: not looked up yet). */
  #system: StoredSystem | null | undefined = undefined;
  /** What the reader of `fromMessages` could not carry. */
  #formatWarnings: FormatWarning[] = [];

  private constructor(inner: WasmSession) {
    super(inner);
  }

  /** Loads a session (text or UTF-8 bytes); migrates v1/v2 files. Throws `E_NOT_A_SESSION`, `E_VERSION_TOO_NEW`. */
  static fromJsonl(input: string | Uint8Array | ArrayBuffer | ArrayBufferView, options?: LoadOptions): Session {
    return new Session(loadJsonl(input, options));
  }

  /**
   * `createBranchedSession(leafId)`: a new session holding only the path from the root to
   * `leafId`, with the labels of its entries written again at the end (pi's and oh-my-pi's
   * SessionManager). Options: `id`, `now`, `parentSession` (the source's file), `ids` (as for
   * `Session.create`); the cwd is this session's. This session is unchanged. Throws
   * `E_UNKNOWN_ENTRY`.
   */
  createBranchedSession(leafId: string, options?: Omit<CreateOptions, 'cwd'>): Session {
    const [json, callback] = createOptions(options, options?.now);
    return new Session(this._inner.createBranched(leafId, json, callback));
  }

  /**
   * Loads a session file that `read(view)` writes straight into the module's memory (`view`:
   * `size` bytes there; return how many were written, all when undefined), with no copy of it
   * in JavaScript: opening needs the file's size once plus the index, where `fromJsonl` of its
   * bytes holds them twice. `read` must not call ctxfold (the view would go stale:
   * `E_INVALID_ARGUMENT`). Throws as `fromJsonl`, and `E_INVALID_ARGUMENT` for a bad size or count.
   */
  static fromReader(size: number, read: (view: Uint8Array) => number | undefined, options?: LoadOptions): Session {
    return new Session(loadReader(size, read, options));
  }

  /**
   * Loads a session file that `read(view, position)` writes straight into the module's
   * memory a window at a time (`view`: at most `options.chunkSize` bytes, 4 MiB by default,
   * for the file's bytes from `position` on), awaiting each read: while one window is read,
   * the lines of the one before are scanned, so the file's read and the load's scan overlap
   * (a Node.js `FileHandle.read` runs on another thread). `read` resolves to how many bytes
   * it wrote (the whole view when undefined; 0: the file ends there); the file is at most
   * `size` bytes. If the module's memory grows while a window is read (another ctxfold call
   * meanwhile), the window is read again into a fresh view. `options.signal` stops it:
   * `E_ABORTED` at once, no more reads, the buffer freed when the read in flight ends. Rejects
   * as `fromJsonl`, with the read's own error, and with `E_INVALID_ARGUMENT` for a bad size,
   * count, chunk size or signal.
   */
  static async fromAsyncReader(size: number, read: AsyncRead, options?: AsyncReaderOptions): Promise<Session> {
    return new Session(await loadAsyncReader(size, read, options));
  }

  /**
   * Loads a session file from a stream of its bytes — a `ReadableStream`, a fetch `Response`
   * (its body), or an async iterable of `Uint8Array` chunks such as a Node.js `fs.ReadStream`
   * — writing each chunk into a buffer of the module as it arrives, so the file is never held
   * whole in JavaScript as well. With `options.size` (or a `Response`'s `Content-Length`) the
   * buffer is allocated once; without, it grows geometrically. Other ctxfold calls may run
   * while it awaits; the lines that have arrived are read while the rest is awaited.
   * `options.signal` stops it: `E_ABORTED` at once, and a `ReadableStream` is cancelled.
   * Rejects as `fromJsonl`, with the stream's own error, and with `E_INVALID_ARGUMENT` for a
   * source that is none of those, a chunk that is not bytes, a bad size or signal; the stream
   * is cancelled when the load gives up.
   */
  static async fromStream(source: ByteSource, options?: StreamOptions): Promise<Session> {
    return new Session(await loadStream(source, options));
  }

  /** A new empty session (format version 3). */
  static create(options?: CreateOptions): Session {
    return new Session(createSession(options));
  }

  /**
   * A session holding a message history of another format (spec of the mapping:
   * docs/guide/formats.md): a header, the system prompt when there is one (a `custom` entry
   * `ctxfold:system`), and a `message` entry per message. What the format's messages hold that
   * the session cannot is listed in `warnings`. Throws `E_INVALID_MESSAGE` (with `index` and
   * `field`) for a malformed message.
   */
  static fromMessages<F extends MessageFormat = 'pi'>(
    messages: ReadonlyArray<FormatMessages[F]['in']>,
    options?: FromMessagesOptions<F>,
  ): Session {
    if (options !== undefined && options !== null) object(options, 'options');
    const format = formatOf(options?.format) as unknown as FormatModule;
    if (!Array.isArray(messages)) throw invalidArgument('messages must be an array');
    const warnings = new Warnings();
    // A system prompt given as an option makes the messages' own system messages history.
    const history = options?.system !== undefined && options?.system !== null;
    const none = (): undefined => undefined;
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
    // The copies the first provider view is handed (`_adopt`); every message was written as
    // JSON above, so none holds a cycle.
    const size = { chars: 0 };
    session._adopt(
      stored === null ? 0 : 1,
      read.messages.map((m) => plainCopy(m, 0, size)),
    );
    return session;
  }

  /**
   * What changed in the session file since `since` (a `mark` an earlier call returned): the
   * lines rewritten in place and the lines appended, and the mark to pass next once they are
   * stored (spec: compaction §1, §6.7). Applied to the file as stored at `since` they give
   * `toBytes()` (line model: docs/guide/storage.md). Costs the size of the change, not of the
   * file. Without a mark, or with one of another session object or older than what the
   * session tracks, the changes are a `reset`: the whole file. Throws `E_INVALID_ARGUMENT`
   * when `since` is neither a string nor null.
   */
  changes(since?: ChangeMark | null): SessionChanges {
    if (since !== undefined && since !== null && typeof since !== 'string') {
      throw invalidArgument('changes(since): since must be a mark from an earlier changes() call, or null');
    }
    const [from, mark, reset, lineCount, indices, texts] = this._inner.changes(since ?? undefined) as [
      string | undefined,
      string,
      boolean,
      number,
      Uint32Array,
      string[],
    ];
    const rewritten = Array.from(indices, (index, k) => ({ index, text: texts[k] ?? '' }));
    return {
      since: from ?? null,
      mark,
      reset,
      rewritten,
      appended: indices.length === 0 ? texts : texts.slice(indices.length),
      lineCount,
    };
  }

  /**
   * The mark of the bytes this session was loaded from, for a store that holds exactly them:
   * pass it to the first `changes()` so that the first save writes only the turn. `null` for a
   * created session, or when loading rewrote lines (a migration): then save from `null`.
   */
  get loadMark(): ChangeMark | null {
    return this._inner.loadMark() ?? null;
  }

  /** Problems found while loading, and migrations (and what `fromMessages` could not carry). */
  get warnings(): Array<LoadWarning | FormatWarning> {
    const found = this._loadWarnings();
    return this.#formatWarnings.length === 0 ? found : [...found, ...this.#formatWarnings];
  }

  /**
   * The provider messages of the context (`convertToLlm`). Each call returns new objects the
   * caller may change freely; the session converts only the messages that changed since its
   * previous call, so calling this once per request costs about what the new messages cost.
   */
  override toLlmMessages(options?: ContextOptions): LlmMessage[] {
    if (options !== undefined && options !== null) object(options, 'options');
    // A Messages API reader replays its provider's compaction blocks only where the model and
    // route have server compaction (spec: compaction §13). (A target without a provider, or
    // none, reads as absent in the core.)
    return super.toLlmMessages(
      options?.model !== undefined ? ({ ...options, model: replayTarget(options.model) } as ContextOptions) : options,
    );
  }

  /** @internal */
  protected override _appended(type: string, fieldsOf: () => JsonObject): void {
    const fields = type === 'custom' || (type === 'message' && this.#calls !== null) ? fieldsOf() : {};
    if (type === 'custom' && fields.customType === SYSTEM_ENTRY && isObject(fields.data)) {
      this.#system = fields.data as unknown as StoredSystem;
    }
    if (type === 'message' && this.#calls !== null) this.#noteCalls(fields.message);
  }

  /**
   * Appends messages of a format (a turn's new ones) as entries after the leaf: the system
   * prompt they carry as a `ctxfold:system` entry, then a `message` entry per message. Every
   * message is read before anything is written, so `E_INVALID_MESSAGE` leaves the session as
   * it was. Returns the new entry ids and what the session could not carry.
   */
  appendMessages<F extends MessageFormat = 'pi'>(
    messages: ReadonlyArray<FormatMessages[F]['in']>,
    options?: AppendMessagesOptions<F>,
  ): AppendMessagesResult {
    if (options !== undefined && options !== null) object(options, 'options');
    const format = formatOf(options?.format) as unknown as FormatModule;
    if (!Array.isArray(messages)) throw invalidArgument('messages must be an array');
    const warnings = new Warnings();
    // Before any conversation the system messages are the system prompt, after it later
    // instructions: the core says whether the leaf's path holds conversation.
    const history = (options?.system !== undefined && options?.system !== null) || this._inner.holdsConversation();
    const ctx = {
      model: options?.model,
      warnings,
      history,
      toolCall: (id: string) => this.#toolCalls().byId.get(id),
      toolCallOfCallId: (callId: string) => this.#toolCalls().byCallId.get(callId),
    };
    const read = format.read(messages, ctx);
    const now = nowOf(options);
    const stored = systemOf(options, read, format);
    // All or nothing: the core checks every message before it writes the first.
    const ids: string[] = withMessageLines(read.messages, messages.length === read.messages.length, (bytes) =>
      JSON.parse(this._inner.appendMessages(bytes, systemEntry(stored), now)),
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
  toMessages<F extends MessageFormat = 'pi'>(options?: ToMessagesOptions<F>): ToMessagesResult<F> {
    object(options ?? {}, 'options');
    const { format: name, system: given, ...rest } = options ?? {};
    const format = formatOf(name) as unknown as FormatModule;
    const llm = this.toLlmMessages({ ...rest, maxImages: rest.maxImages ?? format.maxImages } as ContextOptions);
    return this._writeMessages(llm, name, given, rest.model, rest.leafId);
  }

  /**
   * `llm`, a view of this session, as the messages and system prompt (the stored one unless
   * `given`) of the format called `name`: what `toMessages` returns, for
   * `Maintainer.beforeRequest({ format })`.
   * @internal
   */
  _writeMessages<F extends MessageFormat>(
    llm: LlmMessage[],
    name: unknown,
    given: unknown,
    model: unknown,
    leafId: string | null | undefined,
  ): ToMessagesResult<F> {
    const format = formatOf(name) as unknown as FormatModule;
    const warnings = new Warnings();
    const system =
      given === undefined || given === null
        ? this.#storedSystem()
        : { text: systemText(given), value: given, format: format.name };
    const out = format.write(llm, { model, warnings, system, session: this, leafId });
    const result: { messages: unknown[]; system?: unknown; warnings?: FormatWarning[] } = {
      messages: out.messages,
    };
    if (out.system !== undefined) result.system = out.system;
    result.warnings = warnings.list;
    return result as ToMessagesResult<F>;
  }

  /**
   * Tool calls of the leaf's path by id (those still waiting for their result too, which the
   * LLM view leaves out), kept up to date by this session's appends.
   */
  #toolCalls(): { byId: Map<string, KnownCall>; byCallId: Map<string, KnownCall> } {
    if (this.#calls === null) {
      this.#calls = { byId: new Map(), byCallId: new Map() };
      if (this.leafId !== null) {
        for (const m of this.buildContext({ transcript: true, keepDanglingToolCalls: true }).messages)
          this.#noteCalls(m);
      }
    }
    return this.#calls;
  }

  #noteCalls(message: unknown): void {
    const calls = this.#calls;
    if (calls === null || !isObject(message) || message.role !== 'assistant' || !Array.isArray(message.content)) {
      return;
    }
    for (const b of message.content as unknown[]) {
      if (!isObject(b) || b.type !== 'toolCall' || typeof b.id !== 'string') continue;
      const call = { id: b.id, name: b.name, arguments: b.arguments };
      calls.byId.set(b.id, call);
      const bar = b.id.indexOf('|');
      if (bar > 0) calls.byCallId.set(b.id.slice(0, bar), call);
    }
  }

  /** The data of the latest `ctxfold:system` entry in file order, or undefined. */
  #storedSystem(): StoredSystem | undefined {
    if (this.#system === undefined) {
      this.#system = null;
      const customs = this.index().filter((e) => e.type === 'custom');
      for (let i = customs.length - 1; i >= 0; i--) {
        const e: unknown = this.entry((customs[i] as { id: string }).id);
        if (isObject(e) && e.customType === SYSTEM_ENTRY && isObject(e.data)) {
          this.#system = e.data as unknown as StoredSystem;
          break;
        }
      }
    }
    return this.#system ?? undefined;
  }

  /**
   * The threshold prune (spec: compaction §6.6), as `SessionCore.prune`. With `saveArtifact`
   * (issue 38 item 2) it returns a Promise: each pruned result's original is stored first,
   * then searchable (`searchHistory`, `recall_history`); a failing save rejects with
   * `E_SUMMARIZER` and nothing is pruned.
   */
  override prune(options: PruneRunOptions): Promise<PruneReport>;
  override prune(options?: PruneOptions): PruneReport;
  override prune(options?: PruneOptions | PruneRunOptions): PruneReport | Promise<PruneReport> {
    if (
      options !== null &&
      typeof options === 'object' &&
      'saveArtifact' in options &&
      options.saveArtifact !== undefined
    ) {
      return pruneWithArtifacts(this, 'threshold', options as PruneRunOptions);
    }
    return super.prune(options);
  }

  /** The stale pass (spec: compaction §6.5), as `SessionCore.pruneStale`; `saveArtifact` as in `prune`. */
  override pruneStale(options: PruneRunOptions): Promise<PruneReport>;
  override pruneStale(options?: PruneOptions): PruneReport;
  override pruneStale(options?: PruneOptions | PruneRunOptions): PruneReport | Promise<PruneReport> {
    if (
      options !== null &&
      typeof options === 'object' &&
      'saveArtifact' in options &&
      options.saveArtifact !== undefined
    ) {
      return pruneWithArtifacts(this, 'stale', { supersedeKey: true, ...(options as PruneRunOptions) });
    }
    return super.pruneStale(options);
  }

  /**
   * Shakes the active branch (spec: compaction §13 "Shake"): plans, stores the recovery
   * artifact through `saveArtifact` when given, and writes the placeholders (`mode:
   * 'thinking'` drops old reasoning blocks instead). Rejects with `E_ABORTED`, `E_SETTINGS`,
   * `E_INVALID_ARGUMENT`, `E_SUMMARIZER` (`requireArtifact` and the artifact could not be
   * stored); the session is unchanged then.
   */
  shake(options?: ShakeRunOptions): Promise<ShakeResult> {
    return shakeSession(this, options, (config: object, now: number) => this._shakeNow(config, now));
  }

  /**
   * Runs a whole compaction: plans, calls `summarize` (or POSTs to `remoteEndpoint`) for every
   * request with retries, runs the hooks, and commits. On any failure or abort nothing is
   * appended and the promise rejects with a coded Error: `E_SUMMARIZER`, `E_ABORTED`,
   * `E_CANCELLED`, `E_BUSY`, `E_ALREADY_COMPACTED`, `E_NOTHING_TO_COMPACT`, `E_STALE_PLAN`.
   * `'skipped' in result` tells a skipped compaction apart, then `method` the other kinds.
   */
  compact(options: CompactOptions): Promise<CompactOutcome> {
    const o: unknown = options ?? {};
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
   * Moves the leaf to `targetId`, summarizing the branch left behind through `summarize`
   * when given (spec: compaction §7.5), with the `session_before_tree` / `session_tree`
   * hooks. Resolves `{cancelled: true}` when a hook cancels and `{cancelled: true, aborted:
   * true}` on abort, with the session unchanged; rejects with `E_SUMMARIZER` when the
   * summarizer fails, `E_UNKNOWN_ENTRY`.
   */
  navigateTree(targetId: string, options?: NavigateTreeOptions): Promise<NavigationResult | NavigationCancelled> {
    return navigateSession(this, targetId, options ?? {});
  }
}

/**
 * The system prompt of a batch as its `ctxfold:system` entry stores it (`{text, value,
 * format}`), or null: the `system` option, else the one the format's messages carried.
 */
function systemOf(
  options: { system?: unknown } | undefined,
  read: { system?: { text: string; value: unknown } },
  format: FormatModule,
): StoredSystem | null {
  const system = options?.system ?? read.system?.value;
  if (system === undefined || system === null) return null;
  const text = options?.system !== undefined ? systemText(options.system) : (read.system?.text as string);
  return { text, value: system, format: format.name };
}

/** The fields of the `ctxfold:system` entry holding `stored` (null: none), as JSON. */
function systemEntry(stored: StoredSystem | null): string | undefined {
  return stored === null ? undefined : toJson({ customType: SYSTEM_ENTRY, data: stored });
}

/**
 * A system prompt given as an option as text: a string, or a format's form of it (text blocks,
 * system messages with `content`, a Gemini `systemInstruction` with `parts`), or a list of these.
 */
function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  const blocks: unknown[] = Array.isArray(system) ? system : [system];
  return blocks
    .map((b) => {
      if (typeof b === 'string') return b;
      const o: Record<string, unknown> = isObject(b) ? b : {};
      if (typeof o.text === 'string') return o.text;
      if (typeof o.content === 'string') return o.content;
      return textOfParts(Array.isArray(o.content) ? o.content : o.parts);
    })
    .filter((t) => t !== '')
    .join('\n\n');
}

function textOfParts(parts: unknown): string {
  return Array.isArray(parts)
    ? parts.map((p: unknown) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('')
    : '';
}
