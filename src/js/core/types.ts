// The data types of the ctxfold API: messages, entries, options, settings, plans' requests and
// results, as JSON crosses the wasm boundary. Field names follow the oh-my-pi / pi session
// format (spec: compaction §1). Only types: this module is the bottom of core/ (every other
// module may import it; it imports only the types of snapcompact and errors).
//
// One type refers upward: a handoff's result holds the new session, an instance of the public
// `Session` (runner/session.ts, above core/). `SessionClasses` is the hook for it: runner/session.ts
// registers its class there by declaration merging, so `HandoffResult['session']` is that class
// without core/ importing runner/.

import type { ImageBudgetOverrides, ModelTarget, RenderOptions, ShapeVariantName } from './snapcompact.js';
/** A JSON value as it appears in session files. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

// ----- content and messages (spec: compaction §1.7) ---------------------------------------

export interface TextContent {
  type: 'text';
  text: string;
  textSignature?: string;
}
export interface ImageContent {
  type: 'image';
  /** Base64 data. */
  data: string;
  mimeType: string;
}
export interface ThinkingContent {
  type: 'thinking';
  thinking: string;
  /** Opaque provider reasoning id or blob. */
  thinkingSignature?: string;
}
export interface RedactedThinkingContent {
  type: 'redactedThinking';
  data: string;
}
export interface ToolCall {
  type: 'toolCall';
  id: string;
  name: string;
  arguments: JsonObject;
  thoughtSignature?: string;
  /** Hidden from the model (kept in the journal). */
  contextOmitted?: boolean;
}
/** A block of a server-run Anthropic tool, replayed as it is (the `anthropic` format reads it). */
export interface AnthropicServerToolContent {
  type: 'anthropicServerTool';
  /** The Messages API block (`server_tool_use`, `web_search_tool_result`, …). */
  block: JsonObject;
}
/** A part of an AI SDK message pi has no block for, kept as it is (the `ai-sdk-model` format reads it). */
export interface AiSdkPartContent {
  type: 'aiSdkPart';
  part: JsonValue;
}
/**
 * Blocks of other types, which this library passes through without interpreting them. Not a
 * member of `AssistantContent`: a catch-all `type: string` there would keep `block.type ===
 * 'text'` from narrowing the union.
 */
export interface OtherContent {
  type: string;
  [key: string]: JsonValue | undefined;
}
export type UserContent = string | Array<TextContent | ImageContent>;
/**
 * The blocks of an assistant message, a union on `type`. A session file may hold blocks of other
 * types (`OtherContent`): they are kept and given back as they are.
 */
export type AssistantContent =
  | TextContent
  | ThinkingContent
  | RedactedThinkingContent
  | ToolCall
  | ImageContent
  | AnthropicServerToolContent
  | AiSdkPartContent;

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens?: number;
  cost?: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  /** Provider-reported context occupancy. */
  contextTokens?: number;
  /** Billable provider-side tokens that are never replayed. */
  orchestration?: { input?: number; output?: number; cacheRead?: number };
  premiumRequests?: number;
}

export type StopReason = 'stop' | 'length' | 'toolUse' | 'error' | 'aborted';
export type Attribution = 'user' | 'agent';

export interface UserMessage {
  role: 'user';
  content: UserContent;
  timestamp?: number;
  attribution?: Attribution;
}
export interface DeveloperMessage {
  role: 'developer';
  content: UserContent;
  timestamp?: number;
  attribution?: Attribution;
}
export interface AssistantMessage {
  role: 'assistant';
  content: AssistantContent[];
  api?: string;
  provider?: string;
  model?: string;
  usage?: Usage;
  stopReason?: StopReason;
  errorMessage?: string;
  timestamp?: number;
}
/**
 * The reply `fromResponse` reads: the assistant message, and the server compaction the
 * response carried when the request had OpenAI compact its context (`remoteCompaction.inline`,
 * spec: compaction §13). Plain JSON: it survives `structuredClone` and a JSON round trip, and
 * `Maintainer.afterResponse` commits it after appending the message (stored without it).
 */
export interface ResponseMessage extends AssistantMessage {
  /**
   * The response's `compaction` output item and the `configuration_update` items around it,
   * in their order, as the server sent them (opaque: replayed, never edited). A malformed one
   * makes `afterResponse` refuse the reply (`E_INVALID_MESSAGE`).
   */
  serverCompaction?: JsonObject[];
}
export interface ToolResultMessage {
  role: 'toolResult';
  toolCallId: string;
  toolName: string;
  content: Array<TextContent | ImageContent>;
  details?: JsonValue;
  isError: boolean;
  timestamp?: number;
  /** Set when pruning replaced the content (ms). */
  prunedAt?: number;
  /** Flagged as an uneventful result (never with `isError`). */
  useless?: boolean;
  contextOmitted?: boolean;
}
export interface BashExecutionMessage {
  role: 'bashExecution';
  command: string;
  output: string;
  exitCode?: number;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
  excludeFromContext?: boolean;
  images?: ImageContent[];
  /** How the app cut the output; its notice is appended to the text the model sees. */
  meta?: OutputMeta;
  timestamp?: number;
}
export interface PythonExecutionMessage {
  role: 'pythonExecution';
  code: string;
  output: string;
  exitCode?: number;
  cancelled: boolean;
  excludeFromContext?: boolean;
  meta?: OutputMeta;
  timestamp?: number;
}
/** Line ranges are 1-based and inclusive. */
export interface OutputMeta {
  truncation?: {
    direction: 'head' | 'tail' | 'middle';
    truncatedBy: 'lines' | 'bytes' | 'middle';
    totalLines: number;
    totalBytes: number;
    outputLines: number;
    outputBytes: number;
    maxBytes?: number;
    shownRange?: { start: number; end: number };
    headRange?: { start: number; end: number };
    tailRange?: { start: number; end: number };
    elidedBytes?: number;
    elidedLines?: number;
    artifactId?: string;
    nextOffset?: number;
    partialLine?: boolean;
  };
  artifactError?: string;
  source?: { type: 'path' | 'url' | 'internal' | 'report'; value: string };
  diagnostics?: { summary: string; messages: string[] };
  limits?: {
    matchLimit?: { reached: number; suggestion: number };
    resultLimit?: { reached: number; suggestion: number };
    headLimit?: { reached: number; suggestion: number };
    columnTruncated?: { maxColumn: number; unit?: 'bytes' | 'chars'; artifactId?: string };
  };
}
export interface FileMentionMessage {
  role: 'fileMention';
  files: Array<{ path: string; content: string; lineCount?: number; image?: ImageContent }>;
  timestamp?: number;
}
export interface CustomMessage {
  /** `hookMessage` in v2 files (migrated on load). */
  role: 'custom';
  customType: string;
  content: UserContent;
  display: boolean;
  details?: JsonValue;
  attribution?: Attribution;
  timestamp?: number | null;
}
export interface BranchSummaryMessage {
  role: 'branchSummary';
  summary: string;
  fromId: string;
  timestamp?: number | null;
}
export interface CompactionSummaryMessage {
  role: 'compactionSummary';
  summary: string;
  tokensBefore: number;
  shortSummary?: string;
  tokensAfter?: number;
  method?: CompactionMethod;
  warning?: string;
  timestamp?: number | null;
}
/** A message of the agent's history (spec: compaction §1.7). */
export type AgentMessage =
  | UserMessage
  | DeveloperMessage
  | AssistantMessage
  | ToolResultMessage
  | BashExecutionMessage
  | PythonExecutionMessage
  | FileMentionMessage
  | CustomMessage
  | BranchSummaryMessage
  | CompactionSummaryMessage;

/** A message as sent to a provider (`convertToLlm`, spec: compaction §2.6). */
export type LlmMessage =
  | (UserMessage & { attribution: Attribution })
  | {
      role: 'user' | 'developer';
      content: Array<TextContent | ImageContent>;
      attribution: Attribution;
      timestamp?: number;
      /** Branch and compaction summaries: the time history was rewritten. */
      historyRewriteAt?: number;
      providerPayload?: JsonValue;
    }
  | AssistantMessage
  | (ToolResultMessage & { attribution: 'agent' });

// ----- entries (spec: compaction §1.5, §1.6) -----------------------------------------------

export type CompactionMethod = 'window' | 'remote' | 'snapcompact' | 'handoff' | 'soft' | 'shake';

interface EntryBase {
  id: string;
  parentId: string | null;
  /** ISO 8601. */
  timestamp: string;
}
export interface FileDetails {
  readFiles: string[];
  modifiedFiles: string[];
}
export interface MessageEntry extends EntryBase {
  type: 'message';
  message: AgentMessage;
}
export interface ThinkingLevelChangeEntry extends EntryBase {
  type: 'thinking_level_change';
  thinkingLevel: string | null;
  configured?: string;
}
export interface ModelChangeEntry extends EntryBase {
  type: 'model_change';
  /** `provider/modelId`. */
  model: string;
  role?: string;
}
export interface CompactionEntry extends EntryBase {
  type: 'compaction';
  summary: string;
  shortSummary?: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  tokensAfter?: number;
  method?: CompactionMethod;
  details?: FileDetails | JsonObject;
  preserveData?: JsonObject;
  fromExtension?: boolean;
  warning?: string;
}
export interface BranchSummaryEntry extends EntryBase {
  type: 'branch_summary';
  /** The branch point, or `"root"`. */
  fromId: string;
  summary: string;
  details?: FileDetails | JsonObject;
  fromExtension?: boolean;
}
export interface CustomMessageEntry extends EntryBase {
  type: 'custom_message';
  customType: string;
  content: UserContent;
  details?: JsonValue;
  display: boolean;
  attribution?: Attribution;
}
export interface CustomEntry extends EntryBase {
  type: 'custom';
  customType: string;
  data?: JsonValue;
}
export interface LabelEntry extends EntryBase {
  type: 'label';
  targetId: string;
  label?: string;
}
/**
 * Entries of other types, which this library keeps without interpreting them. Not a member of
 * `SessionEntry`: a catch-all `type: string` there would keep `entry.type === 'message'` from
 * narrowing the union.
 */
export interface OtherEntry extends EntryBase {
  type: string;
  [key: string]: JsonValue | undefined;
}
/**
 * An entry of the session, a union on `type`. A session file may hold entries of other types
 * (`OtherEntry`): they are kept, and given back as they are.
 */
export type SessionEntry =
  | MessageEntry
  | ThinkingLevelChangeEntry
  | ModelChangeEntry
  | CompactionEntry
  | BranchSummaryEntry
  | CustomMessageEntry
  | CustomEntry
  | LabelEntry;

/** The header line (spec: compaction §1.2). */
export interface SessionHeader {
  type: 'session';
  id: string;
  version?: number;
  timestamp?: string;
  cwd?: string;
  parentSession?: string;
  [key: string]: JsonValue | undefined;
}

/** One row of `Session.index()`: the tree without bodies. */
export interface EntryInfo {
  id: string;
  /** Resolved parent (null for roots and for unknown parents). */
  parentId: string | null;
  type: string;
  /** Role of a `message` entry's message. */
  role?: AgentMessage['role'] | null;
  /** The entry's current label (the newest `label` entry targeting it), when it has one. */
  label?: string;
  /** 1-based line in the file as it would be written now. */
  line: number;
}

/** Something found while loading that did not stop the load. */
export interface LoadWarning {
  code:
    | 'E_JSONL_LINE'
    | 'E_INVALID_UTF8'
    | 'E_INVALID_ENTRY'
    | 'E_UNKNOWN_PARENT'
    | 'E_DUPLICATE_ID'
    | 'E_PARENT_CYCLE'
    | 'E_MIGRATED';
  /** 1-based line number in the loaded file. */
  line: number;
  message: string;
}

// ----- options and results ----------------------------------------------------------------

/** How new entry ids are made: random 8-hex ids (default), `%08x(n)`, or your function. */
export type IdGenerator = 'random' | 'deterministic' | (() => string);

export interface LoadOptions {
  ids?: IdGenerator;
  /** Seed of the random generator (tests). */
  seed?: number;
  /** First n of the deterministic generator (default 1). */
  start?: number;
}

/** Options of `Session.fromStream`. */
export interface StreamOptions extends LoadOptions {
  /**
   * The file's size in bytes when the host knows it (a file's stat, a `Content-Length`): the
   * module's buffer is allocated once at that size. Without it a `Response`'s `Content-Length`
   * is used when its body is not encoded, else the buffer grows geometrically. A hint only:
   * the file is every byte the stream gives.
   */
  size?: number;
  /** Stops the load: it rejects with `E_ABORTED` at once and cancels the stream. */
  signal?: AbortSignalLike;
}

/** Options of `Session.fromAsyncReader`. */
export interface AsyncReaderOptions extends LoadOptions {
  /**
   * The most bytes one call of `read` is given to fill (default 4 MiB): the lines of one
   * piece are read while the next one is fetched.
   */
  chunkSize?: number;
  /**
   * Stops the load: it rejects with `E_ABORTED` at once, asks for no more reads, and frees its
   * buffer once the read in flight ends.
   */
  signal?: AbortSignalLike;
}

/**
 * What `Session.fromAsyncReader` calls to fill `view` (a window of the module's memory) with
 * the file's bytes from `position` on: resolves to how many bytes it wrote (the whole view
 * when undefined; 0: the file ends there).
 */
export type AsyncRead = (view: Uint8Array, position: number) => Promise<number | undefined> | number | undefined;

/** A stream's reader, as `ReadableStream.getReader()` returns it (what `Session.fromStream` calls). */
export interface ByteStreamReader {
  read(): Promise<{ done: boolean; value?: unknown }>;
  cancel(reason?: unknown): Promise<void>;
  releaseLock(): void;
}

/** A stream of bytes (a WHATWG `ReadableStream<Uint8Array>`, described by what is used of it). */
export interface ByteStream {
  getReader(): ByteStreamReader;
}

/** A fetch `Response` (what is used of it: its body and headers). */
export interface ByteResponse {
  readonly body: ByteStream | null;
  readonly headers: { get(name: string): string | null };
}

/**
 * What `Session.fromStream` reads a session file from: a `ReadableStream` of bytes, a fetch
 * `Response`, or any async iterable of `Uint8Array` chunks (a Node.js `fs.ReadStream`).
 */
export type ByteSource = ByteStream | ByteResponse | AsyncIterable<Uint8Array>;

export interface CreateOptions extends LoadOptions {
  /** Session id (default: random). */
  id?: string;
  cwd?: string;
  parentSession?: string;
  /** Creation time in ms (default: Date.now()). */
  now?: number;
}

export interface AppendOptions {
  /** Entry timestamp in ms (default: Date.now()). */
  now?: number;
}

export interface ContextOptions {
  /** An entry id, `null` for an empty context; default: the session's leaf. */
  leafId?: string | null;
  /** The display transcript instead of the LLM view. */
  transcript?: boolean;
  /** Transcript only: LLM selection, summary at its chronological place. */
  collapseCompactedHistory?: boolean;
  /** Transcript only: keep tool calls that have no result. */
  keepDanglingToolCalls?: boolean;
  /**
   * snapcompact archives: attach at most this many frames as images (the provider's image
   * budget); the newest frames win and a notice says what was left out (spec: snapcompact §9.6).
   */
  maxImages?: number;
  /** snapcompact archives: at most this many base64 bytes of frame data. */
  maxFrameDataBytes?: number;
  /**
   * The reading model. When its `api` is a Responses dialect (`openai-responses`,
   * `azure-openai-responses`, `openai-codex-responses`), a provider-native compaction of the same
   * `provider` is replayed: the summary message carries the stored replacement history as
   * `providerPayload` and the kept messages it holds are left out. `toLlmMessages` also replays
   * for a Messages API model (`api: 'anthropic-messages'`, or provider `anthropic` without
   * `api`) on a model line and route with server compaction (see `NativeCompactionModel`): the
   * summary message carries the stored Anthropic `compaction` block of its provider as
   * `providerPayload` (type `anthropicCompaction`), the kept messages stay. Other readers get
   * the summary text and the kept messages.
   */
  model?: { provider: string; api?: string; id?: string } & Pick<NativeCompactionModel, 'baseUrl' | 'remoteCompaction'>;
}

/** The built context (spec: compaction §2). */
export interface SessionContext {
  messages: AgentMessage[];
  /** Id of the entry each message came from (parallel to `messages`). */
  entryIds: string[];
  thinkingLevel: string;
  configuredThinkingLevel?: string;
  /** Role → `provider/modelId`. */
  models: Record<string, string>;
  injectedTtsrRules: string[];
  serviceTier?: JsonValue;
  mode: string;
  modeData?: JsonValue;
  hasMessages: boolean;
  /** Transcript mode: per message, whether a prompt-cache miss is explained. */
  cacheMissExplainedAt?: boolean[];
  /** Transcript mode: tool calls stripped per message (present when any were). */
  strippedToolCalls?: number[];
  /** The compaction the LLM context starts from. */
  compactionId?: string;
  firstKeptEntryId?: string;
}

/** Options of `Session.transcript()`: which leaf, which page. */
export interface TranscriptOptions {
  /** An entry id, `null` for an empty transcript; default: the session's leaf. */
  leafId?: string | null;
  /** LLM selection, with the summary at its chronological place. */
  collapseCompactedHistory?: boolean;
  /** Keep tool calls that have no result. */
  keepDanglingToolCalls?: boolean;
  /** First message of the page; negative counts from the end (`-100`: the last 100). Default 0. */
  from?: number;
  /** Messages in the page; default: all from `from` on. */
  count?: number;
}

/** One page of the display transcript (spec: compaction §2.5). */
export interface TranscriptPage {
  /** Messages in the whole transcript. */
  total: number;
  /** Position of the page's first message in the whole transcript. */
  from: number;
  messages: AgentMessage[];
  /** Id of the entry each message came from (parallel to `messages`). */
  entryIds: string[];
  /** Per message, whether a prompt-cache miss is explained. */
  cacheMissExplainedAt: boolean[];
  /** Tool calls stripped per message (present when any message of the page had some). */
  strippedToolCalls?: number[];
}

export interface ContextTokens {
  /** Last valid usage plus estimates of the messages after it (`estimateContextTokens`). */
  tokens: number;
  usageTokens: number;
  trailingTokens: number;
  /** Sum of local estimates of every context message. */
  estimatedTokens: number;
  lastUsageEntryId: string | null;
  /**
   * Whether the usage at `lastUsageEntryId` measures the current context: false when there is
   * none, or when it was reported before the latest compaction on the path (a kept reply that
   * measured the history the compaction replaced; spec: compaction §8.2 step 9). A view showing
   * one figure per state shows `usageTokens` only when this is true.
   */
  usageIsCurrent: boolean;
  /** `tokensBefore` of a compaction here: context tokens of the last valid usage on the path. */
  tokensBefore: number;
  messages: number;
}

export interface EstimateOptions {
  /** Leave out thinking signatures and encrypted reasoning. */
  excludeEncryptedReasoning?: boolean;
}

/**
 * A `modelThresholds` value: a number of tokens (`90000`), a string with an optional `k` or `M`
 * suffix, any case, decimals allowed (`'90k'`, `'1.5M'`), or a percentage of the window
 * (`'80%'`, above 0 and at most 100; clamped to 1–99 like `thresholdPercent`).
 */
export type ModelThreshold = number | `${number}${'' | 'k' | 'K' | 'm' | 'M' | '%'}`;

/** The `branchSummary` settings group (spec: compaction §7.5, §9.2). */
export interface BranchSummarySettings {
  /** Whether a tree UI offers to summarize the branch it leaves (default false); `navigateTree` itself summarizes whenever it has a summarizer. */
  enabled?: boolean;
  /** Budget of the summary input = window − reserve (default 16,384); `navigateTree` uses it when `reserveTokens` is not given. */
  reserveTokens?: number;
}

/**
 * Compaction settings (spec: compaction §9.2): the `compaction` group of the reference's
 * settings, with the `branchSummary` group nested; every field optional. A wrong field throws
 * `E_SETTINGS` naming it (`branchSummary.reserveTokens`, `modelThresholds.openai/*`).
 */
export interface CompactionSettings {
  enabled?: boolean;
  /**
   * The engine strategy of a direct `compact()`. Automatic maintenance walks `methodOrder`
   * instead (its requests carry the first usable method's strategy); `off` disables it.
   */
  strategy?: 'context-full' | 'handoff' | 'shake' | 'snapcompact' | 'off';
  /** ≤ 0: threshold from the reserve; else a percentage (1–99). */
  thresholdPercent?: number;
  /** > 0 wins over the percentage. */
  thresholdTokens?: number;
  /** Unset and an explicit 16384 behave differently on small windows. */
  reserveTokens?: number | null;
  /**
   * The recent tail a compaction keeps (default 20,000). With a known window the default
   * becomes `min(20000, threshold/2)`; another value is kept unless it is at or above the
   * threshold, where it is clamped to `threshold/2` with a warning (see `windowBudgets`).
   */
  keepRecentTokens?: number;
  autoContinue?: boolean;
  remoteEnabled?: boolean;
  remoteEndpoint?: string | null;
  idleEnabled?: boolean;
  idleThresholdTokens?: number;
  idleTimeoutSeconds?: number;
  supersedeReads?: boolean;
  dropUseless?: boolean;
  /**
   * Cache-aware maintenance (default `true`): the threshold prune of a reply runs only when the
   * turn is over the compaction point or the provider's prompt cache has gone cold; the
   * rewrites it holds back run together before the first request after the cache's lifetime,
   * when they free at least a tenth of the window (and the prune's own minimum). `false`: the
   * threshold prune runs on every reply (the reference's policy). The stale pass runs as the
   * spec says either way. See docs/decisions/cache-aware-maintenance.md.
   */
  cacheAware?: boolean;
  midTurnEnabled?: boolean;
  asyncEnabled?: boolean;
  handoffSaveToDisk?: boolean;
  remoteStreamingV2Enabled?: boolean;
  v2RetainedMessageBudget?: number;
  v2TimeoutMs?: number;
  /**
   * Budget in estimated tokens of the `<anchors>` block every compaction appends: the exact
   * identifiers (paths, URLs, ids, issue numbers, versions, error codes and lines, symbols,
   * what the user quoted) of the region it drops, carried from compaction to compaction in
   * `details.anchors`. Default 1000; 0 writes none.
   */
  anchorTokens?: number;
  /**
   * The host offers the model the context tools (`contextTools`): every compaction that writes
   * anchors (not a handoff, whose new session does not hold the compacted entries) then adds a
   * one-line `<recall>` pointer naming `recall_history` and the compacted range. Default false.
   */
  recallTool?: boolean;
  /**
   * Ordered fallback list; unknown and duplicate names are dropped. A manual compaction skips
   * `shake`. `window` is accepted (settings files may name it) but has no engine: it is passed
   * over, and an order of `window` alone fails with `E_SETTINGS` saying so.
   */
  methodOrder?: Array<'remote' | 'snapcompact' | 'handoff' | 'shake' | 'soft' | 'window'>;
  experimentalContextManagement?: boolean;
  branchSummary?: BranchSummarySettings;
  /**
   * Per-model compaction points, keyed `provider/model-id` or `provider/*` (the exact key wins
   * over the wildcard); a match replaces `thresholdTokens` and `thresholdPercent` for that model.
   * Example: `{'anthropic/claude-opus-4-7': '150k', 'openai/*': '80%'}`.
   */
  modelThresholds?: Record<string, ModelThreshold>;
  /** How a `snapcompact` compaction prints the history (spec: compaction §9.2, snapcompact §6.1). */
  snapcompact?: SnapcompactSettings;
}

/**
 * `snapcompact.*` settings. Caps are UTF-16 units; `'Infinity'` (JSON has no Infinity) is no
 * cap. `includeThinking` unset follows the reading model: thinking is left out for models
 * that speak the Anthropic dialect (Claude), kept for the others.
 */
export interface SnapcompactSettings {
  /** A catalogue name, or `auto` (default): chosen for the reading model and the text. */
  shape?: ShapeVariantName | 'auto';
  /** Cap per tool result (default 2000). */
  toolResultMaxChars?: number | 'Infinity';
  /** Cap per JSON-encoded argument value (default 500). */
  toolArgMaxChars?: number | 'Infinity';
  /** Cap per call's argument list (default 2000). */
  toolCallMaxChars?: number | 'Infinity';
  /** Share of a cap kept from the head, clamped to [0, 1] (default 0.6). */
  truncateHeadRatio?: number;
  /** Wrap tool output in the dim toggles (default true). */
  dimToolResults?: boolean;
  /** Keep thinking as `¶think:` (default: false for Anthropic-dialect readers, else true). */
  includeThinking?: boolean | null;
  /**
   * Inline imaging (the Maintainer, `InlineImager`): which system-prompt text a request may send
   * as frames: `none` (default), `agents-md` (its `<repo-rules>…</repo-rules>` and
   * `## Context\n<instructions>…</instructions>` sections), or `all`.
   */
  systemPrompt?: 'none' | 'agents-md' | 'all';
  /** Inline imaging: large old tool results may be sent as frames (default false). */
  toolResults?: boolean;
  /**
   * How a snapcompact compaction stores its frames: `inline` (default, the reference's format:
   * every entry holds its frames' base64) or `reference` (a frame an earlier compaction entry
   * already stores is written as `dataRef: {entry, frame, bytes}`, so each frame is stored
   * once; such files are not readable by oh-my-pi). `Session.migrateFrames` converts a file.
   */
  frameStorage?: 'inline' | 'reference';
}
export type ResolvedCompactionSettings = Required<Omit<CompactionSettings, 'branchSummary'>> & {
  branchSummary: Required<BranchSummarySettings>;
};

// ----- compaction ---------------------------------------------------------------------------

/** What ctxfold needs of an `AbortSignal` (the DOM / Node.js class fits). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void): void;
}

/**
 * The signal ctxfold hands to a `summarize` callback: the runtime's `AbortSignal` where its lib
 * declares one (DOM, Node.js, workerd), so that it goes to `fetch` as it is; else
 * `AbortSignalLike`. A real `AbortSignal` at run time, following the one given to `compact()`.
 */
export type RuntimeAbortSignal = typeof globalThis extends { AbortSignal: { prototype: infer S } }
  ? S
  : AbortSignalLike;

/** One summarizer call, ready to send (spec: compaction §5.3). */
export interface SummaryRequest {
  /** Unique within the plan: `history-1`, `turn-prefix`, `short-summary`, `handoff`. */
  id: string;
  purpose: 'history' | 'turn-prefix' | 'short-summary' | 'handoff' | 'branch-summary';
  systemPrompt: string;
  /** The whole user message: conversation, previous summary, context lines, instructions. */
  prompt: string;
  maxTokens: number;
  /**
   * The reasoning effort to ask of a model that reasons (spec: compaction §5.6): `high`, or on
   * a pi-family session the session's thinking level, as pi does (absent when it is `off`).
   * The ready summarizers send it when their `reasoning` option is on.
   */
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';
  /**
   * History windows of a large conversation: 1-based index, and whether it is the last.
   * Windows are planned as the fold reaches them, so the count is known only at the end.
   */
  window?: { index: number; last: boolean };
}

/** What a compaction will do (spec: compaction §4.5); message lists are entry ids. */
export interface CompactionPreparation {
  firstKeptEntryId: string;
  isSplitTurn: boolean;
  turnStartEntryId: string | null;
  messagesToSummarize: string[];
  turnPrefixMessages: string[];
  recentMessages: string[];
  tokensBefore: number;
  /** keepRecentTokens after the usage/estimate calibration. */
  keepRecentTokens: number;
  estimatedTokens: { messagesToSummarize: number; turnPrefixMessages: number; recentMessages: number };
  previousSummary: string | null;
  previousCompactionId: string | null;
  fileOps: { read: string[]; written: string[]; edited: string[] };
  readFiles: string[];
  modifiedFiles: string[];
}

export interface PlanOptions {
  /** `/compact <instructions>`: appended as "Additional focus". */
  customInstructions?: string;
  /** Lines for `<additional-context>`. */
  extraContext?: string[];
  /** Replaces the base summary prompt. */
  promptOverride?: string;
  /** Merged into the entry's `preserveData`. */
  preserveData?: JsonObject;
  /** Context window of the summarizer model (default 200,000). */
  contextWindow?: number;
  /**
   * Output limit of the summarizer model (its `maxTokens`). On a pi-family session the history
   * and turn-prefix requests ask for it, fitted to `contextWindow` beside their input, as pi
   * does; unset (and on other sessions) ctxfold's budgets apply.
   */
  maxTokens?: number;
  /** Provider of the model that will read the context. */
  provider?: string;
  /** Compact the path to this entry instead of the leaf. */
  leafId?: string;
  /** The entry's `method` (default `soft`). */
  method?: CompactionMethod;
  /**
   * The model that reads the compacted context. A `snapcompact` commit takes its shape,
   * thinking rule and image budget from it (with `provider` and `contextWindow`), so a plain
   * plan/commit archives what `compact()` does for the same model. Its `id` also picks the
   * summarizer requests' transcript (the model's dialect: Claude's leaves thinking out, every
   * dialect keeps developer messages such as a handoff document); without one the requests
   * carry the plain `[User]:` transcript, which leaves developer messages out.
   */
  model?: ModelTarget;
  /**
   * Plan the dead-end rescue's rebuild of the branch's latest snapcompact archive instead of a
   * compaction (spec: compaction §8.3): nothing new is archived; the commit (with
   * `snapcompact.limitTokens`) prints the archive's own text again on fewer frames, oldest text
   * first to go, and keeps its `firstKeptEntryId`. `E_NOTHING_TO_COMPACT` when the latest
   * compaction is not a snapcompact archive of more than one frame. `compact()` and the
   * `Maintainer` do this themselves when a compaction finds nothing to summarize.
   */
  rebuildArchive?: boolean;
  /**
   * A plan prepared in the background (spec: compaction §13): its answers and its commit accept
   * a branch that grew past the plan's leaf while the prefix it summarizes is untouched, and
   * the commit keeps the entries appended since after the summary. The commit is refused with
   * `E_STALE_PLAN` (the reason in the message) when an entry it summarizes was rewritten (a
   * prune, a shake), the leaf left its branch, a compaction followed it, or, the branch having
   * grown, the compacted context would not stay under 0.8 · threshold (and below the band where
   * the next background preparation starts) and below the context now. `context-full` plans only.
   */
  speculative?: boolean;
  /**
   * A `speculative` plan's size check in your tokens: the provider's tokens per token of the
   * core's estimate (default 1) and the request's tokens beside the messages (system prompt,
   * tools; default 0), as the thresholds compare them.
   */
  providerRatio?: number;
  nonMessageTokens?: number;
}

/** The result of a commit. */
export interface CompactionCommit {
  entryId: string;
  /** Estimated tokens of the rebuilt context. */
  tokensAfter: number;
  fromExtension: boolean;
  /** When the entry was written (ISO 8601, its `timestamp`). */
  timestamp: string;
  /**
   * The entry written, read from the session when first asked for (with a snapcompact
   * archive it holds megabytes of frames, which a host that does not look never copies).
   */
  readonly compactionEntry: CompactionEntry;
}

/**
 * What one compaction or prune did, measured with one ruler: the local estimate of the LLM
 * context (spec: compaction §3.1) before and after.
 */
export interface CompactionReport {
  /** The method that ran (`prune` for a prune; `null` for a hook's compaction). */
  method: CompactionMethod | 'prune' | null;
  /** `manual`, `threshold`, `overflow`, `incomplete`, `idle`; for a prune its pass, `stale` or `threshold`. */
  reason: CompactReason | 'stale';
  tokensBefore: number;
  tokensAfter: number;
  /** Messages folded into the summary (history and split-turn prefix). */
  entriesSummarized: number;
  /** Estimated tokens of the context after, per kind of message. */
  tokensByKind: { summary: number; user: number; assistant: number; toolResult: number; other: number };
  /** Images of the context that the compaction left out (or the request budget dropped). */
  imagesOmitted: number;
  /** snapcompact frames left out by the provider's image or byte budget. */
  framesOmitted: number;
  /** Tool results pruned in the same maintenance step. */
  pruned: number;
  /** Estimated tokens a shake of the same walk freed (the `shake` method, or one that came before the method that ran, or the dead-end rescue); it stays applied. */
  shakeTokensFreed: number;
  /** Identifiers of the region the compaction dropped that nothing the model still sees shows (summary, anchors, kept messages, archive text). Empty for a prune or a shake. */
  lost: string[];
  /** Identifiers the compaction's `<anchors>` block holds. */
  anchored: string[];
  /**
   * The first message of the request the action changed, where the provider's prompt cache
   * stops matching: a prune's or a shake's first rewritten result, an image drop's first
   * changed message; the summary (index 0) for a compaction (snapcompact, remote, soft); the
   * new session's first message for a handoff. Absent when nothing of the context changed.
   */
  prefixChangedAt?: PrefixChange | undefined;
  /** What the action costs the provider's prompt cache on the next request (the core's estimate), with `prefixChangedAt`. */
  forecast?: CacheForecast | undefined;
}

/** The first message of the projected request a rewrite of earlier history changes (issue 39). */
export interface PrefixChange {
  /** Its index among the LLM messages of the context (`toLlmMessages`). */
  messageIndex: number;
  /** The entry it comes from. */
  entryId: string;
}

/**
 * What a rewrite of earlier history costs the provider's prompt cache on the next request, with
 * the provider's cache prices (reads and writes as multiples of its input price). Tokens are the
 * core's estimate (spec: compaction §3.1), whatever the report's `tokenUnit`.
 */
export interface CacheForecast {
  /** Tokens of the request from the changed message on, written to the cache again instead of read. */
  rewrittenTokens: number;
  /** Reasoning blocks after the change the provider drops (OpenAI's reasoning models; 0 elsewhere). */
  reasoningAtRisk: number;
  /** Tokens the rewrite freed. */
  tokensFreed: number;
  /**
   * The next request's input cost without the rewrite minus with it, in input tokens at the base
   * price: positive when the rewrite pays for itself at once; each later request saves
   * `tokensFreed` × the read price.
   */
  net: number;
}

/** Options of `Session.searchHistory`. */
export interface SearchHistoryOptions {
  /** At most this many hits (default 10, at most 200). */
  limit?: number;
  /** Only entries of these roles (`user`, `assistant`, `toolResult`, `bashExecution`, `custom`, `branchSummary`, `compactionSummary`, …). */
  roles?: string[];
  /** Only entries stamped at or after this time (milliseconds since the epoch). */
  since?: number;
}

/** One hit of `Session.searchHistory`. */
export interface SearchHistoryHit {
  /** The entry; for a hit in a saved artifact the entry it came from, null when not known. */
  entryId: string | null;
  /** For a hit in a saved artifact (role `'artifact'`): its name. */
  artifact?: string;
  /** The message role, or the entry type for an entry without a message. */
  role: string;
  /** Milliseconds since the epoch, or null when the entry has no timestamp. */
  timestamp: number | null;
  /** The entry holds one of the query's identifiers verbatim. */
  exact: boolean;
  score: number;
  /** The text around the first hit. */
  snippet: string;
}

// ----- saved artifacts in search, pruned originals (issue 38 item 2) -----

/** A text the host saved beside the session (shake's recovery artifact, a pruned result's original), handed to `Session.addArtifacts`. */
export interface SavedArtifact {
  /** The host's name for it (one of a name already held replaces it). */
  name: string;
  text: string;
  /** `'shake'`, `'prune'`, … Default `'artifact'`. */
  kind?: string;
  /** The entry it came from, when known. */
  entryId?: string;
}

/** What `prune` / `pruneStale` with `saveArtifact` store: the original of one pruned tool result. */
export interface PrunedOriginal {
  /** `pruned-ENTRYID.txt`. */
  name: string;
  kind: 'prune';
  entryId: string;
  toolName: string;
  toolCallId: string;
  /** The result's text blocks, concatenated. */
  text: string;
}

/** `prune` / `pruneStale` options that store each pruned result's original first (the call returns a Promise then). */
export interface PruneRunOptions extends PruneOptions {
  /** Stores one original; may return the host's id for it (its name in search hits). A failure rejects with `E_SUMMARIZER`, nothing pruned. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a host callback may return nothing
  saveArtifact: (artifact: PrunedOriginal) => string | void | Promise<string | void>;
  signal?: AbortSignalLike;
}

/** What a committed compaction plan left the model (`Session.lossReport`). */
export interface LossReport {
  lost: string[];
  anchored: string[];
}

/** What `compact()` resolves: a compaction entry appended to the session. */
export interface CompactResult extends CompactionCommit {
  /** The method that ran (`null` when a `session_before_compact` hook supplied the compaction). */
  method: Exclude<CompactionMethod, 'handoff' | 'shake'> | null;
  report: CompactionReport;
  /** A shake that ran earlier in the walk and was not enough on its own (it stays applied). */
  shake?: ShakeResult;
  /** The images the dead-end rescue's last tier dropped after the commit left too much (they stay dropped). */
  imagesDropped?: DropImagesResult;
  /** The `remote` method ran and failed before the method that ran (start its cooldown: `ContextManager.noteRemoteFailure(now)`). */
  remoteFailed?: boolean;
}

/** What `session.dropImages()` did: images removed, and the ids of the entries rewritten. */
export interface DropImagesResult {
  removed: number;
  entries: string[];
}

/**
 * What `compact()` resolves when the `shake` method did the reduction: no entry is appended,
 * the heavy lines were rewritten in place (spec: compaction §13 "Shake"). `shake.rescue` is
 * true for the dead-end rescue (nothing could be summarized; the rescue preset elided the
 * recent tail's heavy results).
 */
export interface ShakeCompactResult {
  method: 'shake';
  entryId: null;
  shake: ShakeResult & { rescue?: true };
  /** The images the dead-end rescue's last tier dropped (spec: compaction §8.3), when it ran and removed some. */
  imagesDropped?: DropImagesResult;
  report: CompactionReport;
}

/** What `compact()` resolves for a handoff: a new session; the old one is unchanged. */
export interface HandoffResult {
  method: 'handoff';
  handoff: true;
  entryId: null;
  /** The new session: its first entry is a `custom_message` of type `handoff` with the document. */
  session: HandoffSession;
  document: string;
  fromExtension: false;
  report: CompactionReport;
}

/** What `compact()` resolves for an automatic reason while `strategy` is `off` or `enabled` is false: nothing changed. */
export interface CompactSkipped {
  skipped: 'off' | 'disabled';
  method: null;
  reason: CompactReason;
}

/**
 * What `compact()` resolves. `'skipped' in result` tells a skipped compaction apart; then
 * `method` narrows the rest (`'handoff'`, `'shake'`, else a compaction entry was appended).
 */
export type CompactOutcome = CompactResult | HandoffResult | ShakeCompactResult | CompactSkipped;

/** A summary written elsewhere (e.g. by a hook), committed with `fromExtension: true`. */
export interface ExtensionCompaction {
  summary: string;
  shortSummary?: string;
  firstKeptEntryId?: string;
  tokensBefore?: number;
  details?: FileDetails | JsonObject;
  preserveData?: JsonObject;
}

/**
 * Request options of `compact()` and `navigateTree()`, passed on to every `summarize` call in its
 * context for the host's LLM client, e.g. an initiator override `'agent'` (spec: compaction §5.3).
 */
export interface SummarizeCallOptions {
  initiator?: string;
  sessionId?: string;
  metadata?: Record<string, string>;
}

/** How `compact()` and `navigateTree()` retry a summarizer's transient failures. */
export interface RetryOptions {
  enabled?: boolean;
  maxRetries?: number;
  baseDelayMs?: number;
  maxWaitMs?: number;
}

/** What a summarize call gets besides the request. */
export interface SummarizeContext extends SummarizeCallOptions {
  /** Aborts when the compaction or navigation is aborted; pass it to `fetch`. */
  signal: RuntimeAbortSignal;
  /** `compaction_summary`, `compaction_turn_prefix`, `compaction_short_summary` or `handoff`. */
  telemetryTag:
    | 'compaction_summary'
    | 'compaction_turn_prefix'
    | 'compaction_short_summary'
    | 'handoff'
    | 'branch_summary';
}

/** A summarizer: gets a request, returns the summary text (or `{summary}`). Throw an Error with `status` and optionally `retryAfter` (seconds) to get retries for transient failures. */
export type Summarize = (
  request: SummaryRequest,
  context: SummarizeContext,
) => Promise<string | { summary: string }> | string;

export type CompactionEvent =
  | { type: 'compaction_warning'; message: string; method?: CompactionMethod }
  | { type: 'auto_compaction_start'; reason: CompactReason; action: CompactionAction }
  | {
      type: 'auto_compaction_end';
      /** The method that ran (on failure: the first one tried). */
      action: CompactionAction;
      skipped?: boolean;
      aborted: boolean;
      willRetry: boolean;
      result?: CompactResult | HandoffResult;
      errorMessage?: string;
    };

/**
 * Progress of a compaction's long steps (issue 41), as `onProgress` receives it:
 *
 * - `frames`: a snapcompact commit (or preview) drew frame `done` of `total` (sent once with
 *   `done: 0` before the first, then after each frame). An archive the commit must shrink
 *   draws its fewer frames in the commit, without further events.
 * - `summarizer`: a request of the plan was sent (`started`) or answered (`answered`, with the
 *   time it took and the length of the answer). A request asked again smaller starts again.
 */
export type CompactionProgress =
  | { phase: 'frames'; done: number; total: number }
  | {
      phase: 'summarizer';
      state: 'started';
      /** The plan's request id (`SummaryRequest.id`). */
      requestId: string;
      /** The method whose plan asked. */
      method: CompactionMethod;
    }
  | {
      phase: 'summarizer';
      state: 'answered';
      requestId: string;
      method: CompactionMethod;
      /** Milliseconds from `started`. */
      durationMs: number;
      /** Characters of the answer. */
      chars: number;
    };

/** A `CompactionProgress` as an event of the Maintainer's `onEvent`. */
export type CompactionProgressEvent = { type: 'compaction_progress' } & CompactionProgress;

/** The `action` of automatic compaction events (spec: compaction §8.3). */
export type CompactionAction = 'context-full' | 'handoff' | 'snapcompact' | 'remote' | 'shake';

export type CompactReason = 'manual' | 'threshold' | 'overflow' | 'incomplete' | 'idle';

/** Hooks (spec: compaction §8.8). A handler that throws is ignored. */
export interface CompactionHooks {
  /** Cancel the compaction, or supply it. */
  session_before_compact?: (event: {
    preparation: CompactionPreparation;
    /** The entries of the branch being compacted, root first (read when first asked for). */
    readonly branchEntries: SessionEntry[];
    customInstructions?: string;
    signal: AbortSignalLike;
  }) =>
    | void
    | { cancel?: boolean; compaction?: ExtensionCompaction }
    // biome-ignore lint/suspicious/noConfusingVoidType: a host callback may return nothing
    | Promise<void | { cancel?: boolean; compaction?: ExtensionCompaction }>;
  /** Extra context lines, a prompt override, preserveData. */
  'session.compacting'?: (event: { sessionId: string; preparation: CompactionPreparation }) =>
    | void
    | { context?: string[]; prompt?: string; preserveData?: JsonObject }
    // biome-ignore lint/suspicious/noConfusingVoidType: a host callback may return nothing
    | Promise<void | { context?: string[]; prompt?: string; preserveData?: JsonObject }>;
  /** After the entry is saved. */
  session_compact?: (event: CompactResult | HandoffResult) => void | Promise<void>;
  /**
   * Start/end events of automatic compactions (reason other than `manual`). A `ContextManager`
   * decision carries the same events in `decision.events`: show them from one place.
   */
  onEvent?: (event: CompactionEvent) => void;
}

/** The frames of a snapcompact commit, drawn one at a time (`Session.snapcompactFrames`). */
export interface SnapcompactFrames {
  /** How many frames the commit draws. */
  readonly count: number;
  /** Draws frame `k` (0-based) and returns its PNG; the next commit on this thread takes it. */
  render(k: number): Uint8Array<ArrayBuffer>;
  /** Releases the list (the drawn frames stay for the commit). */
  free(): void;
}

/** A frame of a snapcompact archive. */
export interface ArchiveFrame {
  /**
   * The PNG bytes (of the entry a `dataRef` names, for a frame stored by reference), or null for
   * a frame stored outside the file (`blob:sha256:…`) or a reference the file does not resolve.
   */
  png: Uint8Array<ArrayBuffer> | null;
  mimeType: string;
  cols: number;
  rows: number;
  /** Characters printed on the frame. */
  chars: number;
}

/** What `Session.migrateFrames` did. */
export interface FrameMigration {
  /** Compaction entries rewritten. */
  entries: number;
  /** Frames converted. */
  frames: number;
  /** References left as they are because the file does not hold what they name (to `inline`). */
  missing: number;
  /** The file's size in bytes before and after. */
  bytesBefore: number;
  bytesAfter: number;
}

/**
 * What a shake may elide (spec: compaction §13 "Shake"). The presets: `aggressive` (the
 * default here: the manual shake, protect 4,000, no savings floor), `default` (what automatic
 * compaction runs: protect 16,000, savings ≥ 4,000, artifact recovery reads protected),
 * `rescue` (the dead-end rescue: protect 0, no floor, artifact reads protected).
 */
export interface ShakeOptions {
  preset?: 'aggressive' | 'default' | 'rescue';
  /** The newest context tokens left intact. */
  protectTokens?: number;
  /** A plan that would save fewer estimated tokens is empty. */
  minSavings?: number;
  /**
   * The compaction threshold of the reading model: below 40,000 tokens the `default` preset
   * protects `min(16000, 2T/5)` and needs savings of `min(4000, T/10)` (small windows; see
   * `windowBudgets`). Explicit `protectTokens` / `minSavings` still win.
   */
  thresholdTokens?: number;
  /** The smallest fenced / XML block elided, in estimated tokens. Default 400. */
  fenceMinTokens?: number;
  /**
   * Tool names whose results stay (replacing the preset's list); `'isSkillReadToolResult'`
   * and `'isArtifactRecoveryToolResult'` stand for the `skill://` and `artifact://` read protections.
   */
  protectedTools?: string[];
  /** A file whose reads stay (the active plan file). */
  protectedPath?: string;
  /** Nothing before this entry is touched: default the latest compaction's first kept entry; `false` = the start. */
  keepBoundaryId?: string | false;
  /** Elide tool results only, no blocks. */
  toolResultsOnly?: boolean;
  /** Shake the path to this entry instead of the active path. */
  leafId?: string;
}

/** `session.shake()` options. */
export interface ShakeRunOptions extends ShakeOptions {
  /** `'elide'` (default): placeholders over heavy content; `'thinking'`: drop old reasoning blocks. */
  mode?: 'elide' | 'thinking';
  /**
   * Stores the recovery artifact (every elided text under a `### region k` heading) and
   * resolves its id; the placeholders then read `[shaken ~N tokens — recover: artifact://ID
   * (region k)]`. Without it (or when it fails) they read `[shaken ~N tokens]` and the text is gone.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a host callback may return nothing
  saveArtifact?: (artifact: { name: string; text: string; kind: 'shake' }) => string | void | Promise<string | void>;
  /** Fail (`E_SUMMARIZER`, nothing written) instead of eliding without a stored artifact. */
  requireArtifact?: boolean;
  signal?: AbortSignalLike;
  /** `prunedAt` of elided tool results. Default `Date.now()`. */
  now?: number;
}

/** One region of a shake plan. `start`/`end` are UTF-16 offsets into the text (blocks only); `blockIndex` -1 is string content. */
export interface ShakeRegion {
  /** 1-based, the `region k` of the placeholder. */
  index: number;
  kind: 'toolResult' | 'block';
  entryId: string;
  /** Estimated tokens of the elided text. */
  tokens: number;
  /** The tool name, the role, or the custom message type. */
  label: string;
  blockIndex?: number;
  start?: number;
  end?: number;
}

/** What `planShake` returns. */
export interface ShakePlan {
  fingerprint: string;
  tokens: number;
  regions: ShakeRegion[];
  artifactText: string;
  options: ShakeOptions;
}

/** What a shake did. */
export interface ShakeReport {
  toolResultsDropped: number;
  blocksDropped: number;
  thinkingBlocksDropped: number;
  /** Estimated context tokens freed (elided text minus placeholders). */
  tokensFreed: number;
  artifactId: string | null;
  /** Ids of the rewritten entries. */
  entries: string[];
}

/** What `session.shake()` resolves. */
export interface ShakeResult extends ShakeReport {
  mode: 'elide' | 'thinking';
}

/** Options of `prune` / `pruneStale` (spec: compaction §6.1); unset fields take the engine defaults. */
export interface PruneOptions {
  /** Newest tool-output tokens left untouched (threshold pass). Default 40,000. */
  protectTokens?: number;
  /** A threshold pass that would save less does nothing. Default 20,000. */
  minimumSavings?: number;
  /** Tool names never pruned; `'isSkillReadToolResult'` protects `read` of `skill://` paths. Default `['skill', 'isSkillReadToolResult']`. */
  protectedTools?: string[];
  /** A file whose reads are never pruned (the active plan file). */
  protectedPath?: string;
  /** Also prune results flagged `useless` (never errors). Default true. */
  pruneUseless?: boolean;
  /** Prune reads superseded by a newer read of the same file (`pruneStale` sets it). */
  supersedeKey?: boolean | 'readToolSupersedeKey';
  /** Leave results alone while more than this many message tokens follow them (cache-warm prefix). */
  cacheWarmSuffixTokens?: number;
  /** Nothing before this entry is pruned: default the latest compaction's first kept entry; `false` = the start. */
  keepBoundaryId?: string | false;
  /** Stale pass: prune everything once the last message is this old (default 30 min; the coding agent uses 90 min). */
  idleFlushMs?: number;
  /** Stale pass when not idle: only results with at most this many message tokens after them. Default 8,000. */
  suffixTokenLimit?: number;
  /** Milliseconds since the epoch, for `prunedAt` and the idle rule. Default `Date.now()`. */
  now?: number;
  /** Prune the path to this entry instead of the active path. */
  leafId?: string;
  /** Report what would be pruned without writing. */
  dryRun?: boolean;
}

export interface PrunedResult {
  /** Position of the entry in the file. */
  index: number;
  id: string;
  toolName: string;
  toolCallId: string;
  /** Estimated tokens of the result before pruning. */
  tokensBefore: number;
  reason: 'superseded' | 'useless' | 'age';
  /** The text that replaced the content. */
  notice: string;
  savings: number;
}

export interface PruneReport {
  prunedCount: number;
  tokensSaved: number;
  pruned: PrunedResult[];
}

/** Options of `planNavigation` (spec: compaction §7.4–§7.5). */
export interface NavigationOptions {
  /** Ask for a summary of the branch being left. */
  summarize?: boolean;
  customInstructions?: string;
  /** pi-mono: `true` custom instructions replace the prompt, `false` add a focus; unset: they replace it (oh-my-pi), or add a focus on a pi-family branch (pi). */
  replaceInstructions?: boolean;
  /** Label for the summary entry, or for the target when no summary is written. */
  label?: string;
  /** Context window of the summarizer model (default 128,000). */
  contextWindow?: number;
  /**
   * Output limit of the summarizer model (its `maxTokens`): a pi-family branch's summary asks
   * for it, fitted to `contextWindow`, as pi does; unset (and on other sessions) 2,048.
   */
  maxTokens?: number;
  /** `branchSummary.reserveTokens` (default 16,384): budget = window − reserve. */
  reserveTokens?: number;
  /**
   * Compaction settings: `branchSummary.reserveTokens` when `reserveTokens` is unset, and the
   * remote endpoint for `summarizers`.
   * @internal
   */
  settings?: CompactionSettings;
  /**
   * What the host can ask for the summary (`navigateTree`): the plan lists the routes in order.
   * @internal
   */
  summarizers?: { remoteEndpoint?: string; callbacks: number };
}

/** What a navigation does (the reference's `TreePreparation`, the `session_before_tree` payload). */
export interface NavigationPreparation {
  targetId: string;
  oldLeafId: string | null;
  commonAncestorId: string | null;
  /** Entries of the branch being left, oldest first. */
  entriesToSummarize: string[];
  userWantsSummary: boolean;
  customInstructions: string | null;
  replaceInstructions: boolean | null;
  label: string | null;
  /** Where the leaf lands: the target's parent for a user message or custom message (null: before the first root), else the target. */
  newLeafId: string | null;
  /** The text of a user-message target, for the editor. */
  editorText: string | null;
  tokenBudget: number;
  /** Estimated tokens of the messages chosen for the summary. */
  summarizedTokens: number;
  readFiles: string[];
  modifiedFiles: string[];
  /** A summary was wanted but nothing could be chosen: "No content to summarize" is written. */
  noContent: boolean;
}

/** The summarizer's text, or a summary supplied by a hook (`fromExtension: true`). */
export type NavigationAnswer = { summary: string } | { summary: string; details?: JsonValue; fromExtension: true };

export interface NavigationResult {
  cancelled: false;
  newLeafId: string | null;
  oldLeafId: string | null;
  summaryEntryId: string | null;
  /** The label entry, when a label was written (the leaf ends on it). */
  labelEntryId: string | null;
  editorText: string | null;
  fromExtension: boolean | null;
}

export interface NavigationCancelled {
  cancelled: true;
  aborted?: true;
}

export interface NavigationHooks {
  /** Cancel, supply the summary, or change instructions and label. */
  session_before_tree?: (event: { preparation: NavigationPreparation; signal: AbortSignalLike }) =>
    | void
    | {
        cancel?: boolean;
        summary?: string | { summary: string; details?: JsonValue };
        customInstructions?: string;
        replaceInstructions?: boolean;
        label?: string;
      }
    // biome-ignore lint/suspicious/noConfusingVoidType: a host callback may return nothing
    | Promise<void | {
        cancel?: boolean;
        summary?: string | { summary: string; details?: JsonValue };
        customInstructions?: string;
        replaceInstructions?: boolean;
        label?: string;
      }>;
  /** After the move. */
  session_tree?: (event: {
    newLeafId: string | null;
    oldLeafId: string | null;
    summaryEntry?: SessionEntry;
    fromExtension?: boolean | null;
  }) => void | Promise<void>;
}

export interface NavigateTreeOptions extends Omit<NavigationOptions, 'summarize'>, SummarizeCallOptions {
  /** Summarize the branch being left with this summarizer (or candidates tried in order). */
  summarize?: Summarize | Summarize[];
  /**
   * Summarize through the remote endpoint, as `compact()` does: POST `{systemPrompt, prompt,
   * maxTokens}` → `{summary}`, or an OpenAI-compatible `…/chat/completions` URL. Tried before
   * `summarize` (which then is the fallback). Default: `settings.remoteEndpoint` unless
   * `settings.remoteEnabled` is false.
   */
  remoteEndpoint?: string;
  /** Headers of remote-endpoint requests (e.g. `authorization`). */
  headers?: Record<string, string>;
  /** Model id sent to a `/chat/completions` endpoint. */
  model?: string;
  /**
   * Settings: `branchSummary.reserveTokens` is the default of `reserveTokens`, and
   * `remoteEndpoint`/`remoteEnabled` as above. `branchSummary.enabled` only tells a tree UI
   * whether to offer a summary (spec: compaction §7.5); a summarizer given here is used either way.
   */
  settings?: CompactionSettings;
  signal?: AbortSignalLike;
  hooks?: NavigationHooks | NavigationHooks[];
  retry?: RetryOptions;
}

/**
 * Overrides of how a `snapcompact` commit prints the history (spec: snapcompact §9.2); what is
 * not given comes from the plan (`PlanOptions.model`, `provider`, `contextWindow`) and the
 * `snapcompact` settings. The reader model decides the shape and frame size unless given. The
 * archive holds at most `min(maxFrames, the provider's image budget, the request byte budget
 * / 170,000, what the context window leaves)` frames; frames heavier than estimated are
 * rendered again with fewer frames. User turns of history the archive has to drop are kept
 * verbatim as text beside the frames (up to 64,000 tokens, a quarter of the frame tokens when
 * the window is known).
 */
export type SnapcompactArchiveOptions = Pick<
  RenderOptions,
  'shape' | 'model' | 'frameSize' | 'maxFrames' | 'minHeight' | 'compression'
> &
  Omit<SnapcompactSettings, 'shape'> & {
    /** Per-provider image and byte budgets overriding the built-in tables. */
    imageBudgets?: ImageBudgetOverrides;
    /** Tokens the request carries beside the messages (system prompt, tools), for the frame cap. */
    nonMessageTokens?: number;
    /**
     * The provider's tokens per token of ctxfold's estimate of text (default 1): the fit test
     * weighs the archive's verbatim text by it (frames keep their flat charge).
     */
    textRatio?: number;
    /**
     * The provider's tokens per token of the flat frame charge (default 1), for the same test.
     * The reduction test also weighs each frame by its pixels the way the reader's provider
     * bills images (a short last frame costs less than a full one): an archive must be smaller
     * both ways.
     */
    imageRatio?: number;
    /**
     * The most the compacted context may take with `nonMessageTokens`, in the provider's
     * tokens, when it must land lower than what the context window allows (the dead-end
     * rescue's rebuild aims at the progress guard's limit); fewer frames are rendered until it
     * fits, else `E_NO_REDUCTION`.
     */
    limitTokens?: number;
  };

/**
 * What the `remote` method's OpenAI provider-native lanes read of a model (spec: compaction §13).
 * V1 (`POST …/responses/compact`) applies to a Responses `api` of provider `openai`, of
 * `openai-codex` with `remoteCompaction.endpoint`, or of any provider with
 * `remoteCompaction.enabled: true` (Azure also needs `baseUrl`); V2 (the streaming Responses
 * request with a `compaction_trigger` item) to a Responses `api` with
 * `remoteCompaction.v2StreamingEnabled: true` while `settings.remoteStreamingV2Enabled` allows it.
 * Anthropic server compaction (`POST baseUrl/v1/messages` with the `compact-2026-01-12` beta)
 * applies to Claude Opus/Sonnet 4.6+ (and Mythos, Fable) with `api: 'anthropic-messages'` (or
 * provider `anthropic` without `api`), on the official API or a route opted in with
 * `remoteCompaction.enabled: true`, from 55,000 context tokens (`tokensBefore`).
 */
export interface NativeCompactionModel {
  api?: string;
  /**
   * Default `https://api.openai.com/v1` (Codex: `https://chatgpt.com/backend-api`; Anthropic:
   * `https://api.anthropic.com`).
   */
  baseUrl?: string;
  /** The wire model id (default `id`). */
  requestModelId?: string;
  remoteCompaction?: {
    /**
     * `false` turns the lanes off; `true` opts in a provider other than `openai` (Anthropic: a
     * route other than the official API).
     */
    enabled?: boolean;
    /** The V1 URL. */
    endpoint?: string;
    /** The V2 URL. */
    v2Endpoint?: string;
    v2StreamingEnabled?: boolean;
    /** The wire model id of compaction requests. */
    model?: string;
    /**
     * `true`: the host's own Responses requests carry server compaction
     * (`beforeRequest({ format: 'openai-responses' })` returns `contextManagement`).
     */
    inline?: boolean;
    /**
     * With `inline`: `true` asks as Codex does, with an explicit `{type: 'compaction_trigger'}`
     * input item appended last to `beforeRequest`'s `messages` once the context reached the
     * compaction threshold, instead of `contextManagement`'s `compact_threshold`.
     */
    compactionTrigger?: boolean;
    /** `false` keeps a Claude model on the threshold lane (`compact-2026-01-12`) instead of on-demand compaction. */
    onDemand?: boolean;
  };
}

/**
 * The `fetch` of the provider-native lanes: the runtime's own type where its lib declares one
 * (DOM, workerd), else the part the lanes use.
 */
export type NativeFetch = typeof globalThis extends { fetch: infer F } ? F : NativeFetchLike;

/** The part of `fetch` the provider-native lanes use. */
export type NativeFetchLike = (
  url: string,
  init: { method: 'POST'; headers: Record<string, string>; body: string; signal: AbortSignalLike },
) => Promise<{
  ok: boolean;
  status: number;
  statusText: string;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}>;

/** Extras and timing of the provider-native lanes. */
export interface NativeCompactionOptions {
  /**
   * V2: the live turn's Responses tool definitions (sent with `tool_choice: 'auto'`).
   * Anthropic on-demand: the host request's Messages API `tools` (`[]` for none), sent with
   * `system`; see there.
   */
  tools?: readonly unknown[];
  /**
   * Anthropic on-demand: the host request's `system` (a string or its text blocks; `''` for
   * none). Given with `tools`, the compaction request carries both, as the kept turns' thinking
   * was written under them, and that thinking stays valid after the block (Anthropic requires
   * them to match); without them the kept turns that carry thinking follow the summary as text.
   */
  system?: string | readonly JsonObject[];
  /** V2: the Responses `reasoning` object, e.g. `{effort: 'high', summary: 'auto'}`. */
  reasoning?: { [key: string]: JsonValue };
  /** V2: `prompt_cache_key`. */
  promptCacheKey?: string;
  /** Every lane: time-out of one request, body included (default 300 000 ms). */
  timeoutMs?: number;
  /** V2: the first retry waits this long, the second twice as long (default 1 000 ms). */
  retryBaseMs?: number;
}

export interface CompactOptions extends SummarizeCallOptions {
  /**
   * Shorthand for `settings.strategy`: run this method, with the plain LLM summary as its
   * fallback (`snapcompact` needs no summarizer; `handoff` resolves a `HandoffResult`). Unset:
   * the usable methods of `settings.methodOrder` are tried in order (a manual compaction takes
   * `remote`, `snapcompact` and `soft`; spec: compaction §8.6). `off` stops automatic reasons only.
   */
  strategy?: 'context-full' | 'handoff' | 'snapcompact' | 'off';
  /** Methods to try, in order, instead of the list the strategy or `methodOrder` gives (a trigger's `CompactRequest.methods`). */
  methods?: CompactionMethod[];
  /** `remote` failed recently (`ContextManager.remoteBlocked(now)`): the walk passes it over. */
  remoteBlocked?: boolean;
  /** Handoff: the live system prompt; with `tools`, the request keeps the live turn's cache prefix (history as messages, `toolChoice: 'none'`). */
  systemPrompt?: string;
  /** Handoff: the live tool definitions (sent with `toolChoice: 'none'`). */
  tools?: readonly unknown[];
  /** Timestamp of the new entries, in ms (default `Date.now()`). */
  now?: number;
  /** Handoff: tokens of the live request (history, system prompt, tools); a handoff whose request would not fit `contextWindow` is skipped. */
  liveTokens?: number;
  /** snapcompact: tokens the request carries beside the messages (system prompt, tools), for the frame cap. */
  nonMessageTokens?: number;
  /** Handoff: the new session's id (default: random). */
  handoffSessionId?: string;
  /**
   * Stores an artifact: an automatic handoff's document with `settings.handoffSaveToDisk` (e.g.
   * `handoff-<ISO>.md` in the artifact folder), and a shake's recovery text, whose id it resolves
   * (the placeholders link `artifact://ID`).
   */
  saveArtifact?: (artifact: {
    name: string;
    text: string;
    kind: 'handoff' | 'shake';
    // biome-ignore lint/suspicious/noConfusingVoidType: a host callback may return nothing
  }) => string | void | Promise<string | void>;
  /** Overrides of a `snapcompact` commit (the plan already has `model`, `provider`, `contextWindow`). */
  snapcompact?: SnapcompactArchiveOptions;
  /**
   * What the reading model accepts. Without `'image'`, a `snapcompact` compaction runs as
   * `context-full` (so it needs `summarize` or `remoteEndpoint`) and `onEvent` gets a
   * `compaction_warning` saying why (spec: compaction §8.3).
   */
  input?: ReadonlyArray<'text' | 'image'>;
  /**
   * Progress of the long steps (frames drawn k of n, summarizer requests started and
   * answered); a Maintainer sends them to its `onEvent` as `compaction_progress` events. A
   * handler that throws is ignored. With a handler, a snapcompact commit draws its frames one
   * task at a time.
   */
  onProgress?: (progress: CompactionProgress) => void;
  /** One summarizer, or candidates tried in order. */
  summarize?: Summarize | Summarize[];
  /** POST `{systemPrompt, prompt, maxTokens}` → `{summary}`, or an OpenAI-compatible `…/chat/completions` URL. */
  remoteEndpoint?: string;
  /** Headers of remote-endpoint requests (e.g. `authorization`). */
  headers?: Record<string, string>;
  /**
   * The reading model: its id (sent to a `/chat/completions` endpoint; the snapcompact reader),
   * or the model object, whose `provider`, `contextWindow` and `input` fill in those options.
   */
  model?:
    | string
    | ({
        id: string;
        provider?: string;
        contextWindow?: number;
        /** Output limit: a pi-family session's summaries ask for it (`PlanOptions.maxTokens`). */
        maxTokens?: number;
        input?: ReadonlyArray<'text' | 'image'>;
      } & NativeCompactionModel);
  /**
   * The `remote` method's provider-native lanes: headers with the credentials of a request
   * (e.g. `{authorization: 'Bearer …'}`, Azure's `{'api-key': …}`, Anthropic's `{'x-api-key': …}`),
   * asked before each request; merged over `headers`. `provider` is `''` for a model without one.
   */
  credentials?: (request: {
    provider: string;
    api: string;
    url: string;
  }) => Record<string, string> | Promise<Record<string, string>>;
  /** The `fetch` of native-lane requests (default `globalThis.fetch`). */
  fetch?: NativeFetch;
  /** The provider-native lanes' request extras (OpenAI V2) and timing (every lane). */
  native?: NativeCompactionOptions;
  signal?: AbortSignalLike;
  settings?: CompactionSettings;
  customInstructions?: string;
  contextWindow?: number;
  provider?: string;
  leafId?: string;
  /** Why the compaction runs (error prefixes and events follow it). Default `manual`. */
  reason?: CompactReason;
  willRetry?: boolean;
  hooks?: CompactionHooks | CompactionHooks[];
  retry?: RetryOptions;
  // The Maintainer's knobs (runner/maintainer: its walk inside the trigger machine), read by
  // the compaction runner; not for hosts.
  /**
   * The compaction's `strategy` as the host gave it, when it picks the method (the runner sets
   * it from `strategy`).
   * @internal
   */
  explicit?: string;
  /** Leave snapcompact out of the walk (the trigger machine's request says so). @internal */
  excludeSnapcompact?: boolean;
  /** Provider tokens per token of the core's estimate (the Maintainer's calibration; 1 when unknown). @internal */
  providerRatio?: number;
  /** Provider tokens per estimated token of images (the Maintainer's calibration; 1 when unknown). @internal */
  imageRatio?: number;
  /** The host's measure of the live context after a commit or a shake, in provider tokens. @internal */
  measureLive?: () => number | undefined;
}
/**
 * The classes of the layers above core/ that core's types name, registered by declaration
 * merging (`declare module`): runner/session.ts adds `session: Session`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging from runner/session.ts
export interface SessionClasses {}

/** The public `Session` class as registered in `SessionClasses`. */
export type HandoffSession = SessionClasses extends { session: infer S } ? S : never;
