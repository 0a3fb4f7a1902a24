// The wire facts of the OpenAI provider-native lanes of the `remote` method (spec: compaction
// §5.7 step 1, §13). The core decides which lanes a model takes and where they POST
// (`nativeLanesJson`), gives the plan's messages, fits the input to the window, picks V2's
// retained messages and reads the answers (untrusted: V1's JSON, V2's event stream) before it
// writes the entry; the input items are the openai-responses format's (`nativeInput`: its
// writer with the native lane's options). This module assembles the request bodies: V1 (`…/responses/compact`)
// and V2 (streaming Responses with a `compaction_trigger` item). Sending them — the host's
// `fetch` and `credentials`, the time-out, V2's stream retries and the AbortSignal — is the
// runner's (runner/native.ts).
import { codedError, messageOf } from '../core/errors.js';
import type { WasmCompactionPlan, WasmSession } from '../core/glue.js';
import { requireRaw } from '../core/raw.js';
import type { CompactionPreparation, JsonValue, LlmMessage, NativeCompactionOptions } from '../core/session.js';
import { type NativeTarget, nativeInput } from '../formats/openai-responses.js';

/** Time-out of one native request, body included (the reference: five minutes). */
export const NATIVE_TIMEOUT_MS = 300_000;

/** The lanes of the `remote` method: OpenAI's two and Anthropic's two (threshold, on demand). */
export type NativeLane = 'v1' | 'v2' | 'anthropic' | 'anthropic-ondemand';

/** The name of each lane in its errors. */
export const LANE_NAME: Readonly<Record<NativeLane, string>> = {
  v1: 'OpenAI remote compaction',
  v2: 'OpenAI V2 remote compaction',
  anthropic: 'Anthropic compaction',
  'anthropic-ondemand': 'Anthropic on-demand compaction',
};

/** What the OpenAI lanes send to, for a model (the core's `openai`). */
export interface OpenaiTarget {
  urls: { v1?: string; v2?: string };
  id: string;
  provider: string;
  api: string;
  /** The wire model id. */
  model: string;
  codex: boolean;
  contextWindow: number;
  images: boolean;
  retainedBudget: number;
}

/** What Anthropic server compaction sends to, for a model (the core's `claude`). */
export interface ClaudeTarget {
  id: string;
  provider?: string;
  url: string;
}

/** What the core says of the provider-native lanes for a model (`nativeLanesJson`). */
export interface NativeLanes {
  /** Some lane takes the model: the `remote` method has a provider-native route. */
  usable: boolean;
  /** The OpenAI lanes, in the order they are tried. */
  lanes: Array<'v1' | 'v2'>;
  openai: OpenaiTarget | null;
  /** Why Anthropic server compaction does not apply (null: it does). */
  anthropic: string | null;
  /** The Anthropic lanes that serve the model, in the order they are tried: on demand where the model has it, then threshold. */
  anthropicLanes: Array<'ondemand' | 'threshold'>;
  /** The model speaks the Messages API. */
  messagesApi: boolean;
  claude: ClaudeTarget | null;
}

/** The options the lanes read of a model: `{model, provider?, contextWindow?, settings?}`. */
export interface NativeModelOptions {
  model?: unknown;
  provider?: string | undefined;
  contextWindow?: number | undefined;
  settings?: unknown;
}

/**
 * What the lanes read of a compaction plan (`CompactionPlan`): the core's plan and the session
 * it was made for, its internal members.
 */
export interface NativePlan {
  _raw(): WasmCompactionPlan;
  _session(): WasmSession;
  readonly preparation: CompactionPreparation;
}

/** One request of a lane: where it POSTs, its headers (no credentials), its body as JSON text. */
export interface LaneRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** The `native` option as the OpenAI lanes read it (`instructions`: an undeclared override of the system prompt). */
export type NativeRequestOptions = NativeCompactionOptions & { instructions?: unknown };

/** The requests of a `remote` plan for the OpenAI lanes, and V2's retained messages. */
export interface OpenaiRequests {
  v1?: LaneRequest;
  v2?: LaneRequest;
  retained?: JsonValue;
}

/** JSON text of `v` (a BigInt is left out); E_INVALID_ARGUMENT for what has none (a cycle). */
function jsonOf(v: unknown, what: string): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? undefined : x));
  } catch (err) {
    throw codedError('E_INVALID_ARGUMENT', `${what} must be JSON data: ${messageOf(err)}`, { cause: err });
  }
}

/**
 * What the core says of the provider-native lanes for the model of `o` (`{model, provider?,
 * contextWindow?, settings?}`) at `tokens` live context tokens (undefined: unknown), spec:
 * compaction §8.3, §13: `{lanes: ['v2', 'v1'] | …, openai: {urls, id, provider, api, model,
 * codex, contextWindow, images, retainedBudget} | null, anthropic: null | 'why not',
 * messagesApi, claude: {id, provider?, url} | null}`. `planned`: for a planned `remote` method
 * (its lanes whatever `remoteEnabled` says). E_SETTINGS for bad settings.
 */
export function nativeLanes(o: NativeModelOptions, tokens?: number, planned = false): NativeLanes {
  const options = jsonOf({ model: o.model, provider: o.provider, contextWindow: o.contextWindow }, 'options.model');
  const t = typeof tokens === 'number' && Number.isFinite(tokens) ? tokens : undefined;
  const settings = o.settings === undefined ? undefined : jsonOf(o.settings, 'options.settings');
  return JSON.parse(requireRaw().nativeLanesJson(options, settings, t, planned));
}

/** The parts of a `remote` plan the OpenAI lanes send (`nativeMessagesJson`). */
interface OpenaiParts {
  messages: LlmMessage[];
  previous: { replacementHistory?: unknown } | null;
  instructions: string;
}

/**
 * The requests of a `remote` plan for the lanes `t` (the core's `openai`): `{v2?, v1?,
 * retained}`, each `{url, headers, body}` (body as JSON text); undefined when there is nothing
 * to send. The input items are the openai-responses format's, written for a native lane.
 */
export function openaiRequests(
  plan: NativePlan,
  t: OpenaiTarget,
  lanes: ReadonlyArray<'v1' | 'v2'>,
  n: NativeRequestOptions,
): OpenaiRequests | undefined {
  // The previous native record, when it is this provider's (the core's choice).
  const {
    messages,
    previous,
    instructions: system,
  }: OpenaiParts = JSON.parse(plan._session().nativeMessagesJson(plan._raw(), t.provider));
  const history = previous?.replacementHistory;
  const prior = Array.isArray(history) ? history : [];
  const native: NativeTarget = { id: t.id, provider: t.provider, api: t.api, images: t.images, previous: prior };
  const input = nativeInput(messages, native);
  if (input.length === 0) return undefined;
  const instructions = n.instructions ?? system;
  const tools = Array.isArray(n.tools) && n.tools.length > 0 ? n.tools : undefined;
  // The core fits the input to the window and picks V2's retained messages (spec §13).
  const fitted: { v1: JsonValue[]; v2: JsonValue[]; retained: JsonValue } = JSON.parse(
    requireRaw().nativeOpenaiInputsJson(
      JSON.stringify(input),
      typeof instructions === 'string' ? instructions : undefined,
      tools === undefined ? undefined : JSON.stringify(tools),
      t.contextWindow,
      t.retainedBudget,
    ),
  );
  const beta: Record<string, string> = t.codex ? { 'OpenAI-Beta': 'responses=experimental' } : {};
  const out: OpenaiRequests = {};
  if (lanes.includes('v1') && t.urls.v1 !== undefined) {
    const body = { model: t.model, input: fitted.v1, instructions };
    out.v1 = { url: t.urls.v1, headers: { 'content-type': 'application/json', ...beta }, body: JSON.stringify(body) };
  }
  if (lanes.includes('v2') && t.urls.v2 !== undefined) {
    const body: Record<string, unknown> = {
      model: t.model,
      input: [...fitted.v2, { type: 'compaction_trigger' }],
      instructions,
      stream: true,
      store: false,
    };
    if (n.reasoning !== null && typeof n.reasoning === 'object') {
      body.reasoning = n.reasoning;
      body.include = ['reasoning.encrypted_content'];
    }
    if (typeof n.promptCacheKey === 'string') body.prompt_cache_key = n.promptCacheKey;
    if (tools) Object.assign(body, { tools, tool_choice: 'auto' });
    const codex = t.codex ? { ...beta, 'x-codex-beta-features': 'remote_compaction_v2' } : {};
    out.v2 = { url: t.urls.v2, headers: { 'content-type': 'application/json', ...codex }, body: JSON.stringify(body) };
    out.retained = fitted.retained;
  }
  return out;
}

// ----- server compaction inside the host's own request -----------------------------------------

/** What the host's own Responses request carries of server compaction (one member or the other). */
export interface InlineRequestParts {
  /** The request's `context_management`: `[{type: 'compaction', compact_threshold}]`. */
  contextManagement?: JsonValue;
  /** The input item to append last (Codex's `{type: 'compaction_trigger'}`). */
  triggerItem?: { type: 'compaction_trigger' };
}

/**
 * What the host's own Responses request for the model of `o` (`{model, provider?,
 * contextWindow?, settings?}`) whose context is `tokens` carries of server compaction (spec:
 * compaction §13), as the core decides where the model opted in (its `remoteCompaction.inline:
 * true`, a Responses dialect, a known window): `contextManagement` (`[{type: 'compaction',
 * compact_threshold}]`), or with `remoteCompaction.compactionTrigger: true` the `triggerItem`
 * once the context reached the threshold; else undefined.
 */
export function inlineContextManagement(o: NativeModelOptions, tokens: number): InlineRequestParts | undefined {
  const options = jsonOf({ model: o.model, provider: o.provider, contextWindow: o.contextWindow }, 'options.model');
  const settings = o.settings === undefined ? undefined : jsonOf(o.settings, 'options.settings');
  const text = requireRaw().inlineContextManagementJson(options, settings, tokens);
  return text === undefined ? undefined : JSON.parse(text);
}
