// The wire facts of Anthropic server compaction, the `remote` method's lane for Claude models
// (spec: compaction §13, §8.3). The core decides whether the lane applies to a model, its route
// and the live context, and where it POSTs (`nativeLanesJson`); this module writes the Messages
// API request of a plan — its messages (from the core's `nativeMessagesJson`) as Anthropic wire
// messages and the `compact_20260112` edit with the core's trigger and summarization
// instructions. The runner (runner/native.ts) POSTs it with the host's `fetch` and credentials,
// the time-out and the AbortSignal, waiting out a 429 as the core's `retryStep` decides; the
// core reads the answer (untrusted) in the commit. The wire messages are the anthropic format's
// (`wireMessages` of formats/anthropic.js, its repairing form).
import { isObject } from '../core/args.js';
import { invalidArgument } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';
import type { JsonObject, LlmMessage } from '../core/session.js';
import {
  type AnthropicCompactionBlock,
  type AnthropicMessage,
  type AnthropicTextBlock,
  wireMessages,
} from '../formats/anthropic.js';
import type { ClaudeTarget, LaneRequest, NativePlan } from './native-openai.js';

/** The `api` of the Messages API. */
export const ANTHROPIC_API = 'anthropic-messages';
const HEADERS = {
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'compact-2026-01-12',
};
/** Time-out of one compaction request (the reference: five minutes). */
export const ANTHROPIC_TIMEOUT_MS = 300_000;

const textBlock = (text: string): AnthropicTextBlock => ({ type: 'text', text });

// ----- the request ---------------------------------------------------------------------------

/** A message of the request: the anthropic format's (its repairing writer gives user and assistant ones). */
type WireMessage = AnthropicMessage;

const endsAssistant = (messages: readonly WireMessage[]) => messages.at(-1)?.role === 'assistant';

/** The parts of a `remote` plan the Anthropic lane sends (`nativeMessagesJson`). */
interface AnthropicParts {
  messages: LlmMessage[];
  /** How many of `messages` are the kept tail. */
  recent: number;
  /** The first message is the previous summary. */
  summary: boolean;
  /** The block the API signed that replaces the previous summary for this provider (the core's choice), else null; `block`: an on-demand block, sent back whole. */
  compaction: { content: string; encryptedContent?: string; block?: AnthropicCompactionBlock } | null;
  maxTokens: number;
  instructions: string;
}

/**
 * The request of a `remote` plan for model `m` (the core's `claude`: `{id, provider?, url}`;
 * spec: compaction §13): `{url, headers, body}`,
 * headers without credentials, body as JSON text. The body carries the whole conversation the
 * plan covers — the previous summary (as its native block when this provider wrote it), the
 * summarized region, the turn prefix and the kept tail — so the API reads the prefix the live
 * turn cached.
 */
export function anthropicRequest(plan: NativePlan, m: ClaudeTarget): LaneRequest {
  const parts: AnthropicParts = JSON.parse(plan._session().nativeMessagesJson(plan._raw(), m.provider));
  const { messages, recent, compaction: replayed } = parts;
  const split = messages.length - recent;
  let head = messages.slice(0, split);
  const prefix: WireMessage[] = [];
  if (replayed !== null) {
    // The previous summary as the block the API signed, in place of its context message.
    prefix.push({ role: 'assistant', content: [replayedBlock(replayed)] });
    head = head.slice(1);
  }
  const tail = wireMessages(messages.slice(split));
  // The kept tail (and the `Continue.` after an assistant one) stays verbatim: the core words
  // the instructions around it.
  const first = tail[0];
  const scope: [number | undefined, string | undefined] =
    first === undefined ? [undefined, undefined] : [tail.length + (endsAssistant(tail) ? 1 : 0), first.role];
  const wire: WireMessage[] = [...prefix, ...wireMessages(head), ...tail];
  if (endsAssistant(wire)) wire.push({ role: 'user', content: [textBlock('Continue.')] });
  const edit = {
    type: 'compact_20260112',
    trigger: { type: 'input_tokens', value: requireRaw().anthropicTriggerTokens() },
    pause_after_compaction: true,
    instructions: requireRaw().anthropicInstructions(plan._raw(), ...scope),
  };
  const body = {
    model: m.id,
    max_tokens: parts.maxTokens,
    system: [textBlock(parts.instructions)],
    messages: wire,
    context_management: { edits: [edit] },
  };
  return { url: m.url, headers: { ...HEADERS }, body: JSON.stringify(body) };
}

/** The previous summary's signed block: an on-demand block whole, else one made of the threshold lane's record. */
function replayedBlock(replayed: NonNullable<AnthropicParts['compaction']>): AnthropicCompactionBlock {
  if (replayed.block !== undefined) return { ...replayed.block };
  const block: AnthropicCompactionBlock = { type: 'compaction', content: replayed.content };
  if (replayed.encryptedContent !== undefined) block.encrypted_content = replayed.encryptedContent;
  return block;
}

// ----- on-demand compaction (`compact-2026-09-04`) ------------------------------------------

/** The host request's `system` and `tools` an on-demand request carries (`NativeCompactionOptions`). */
export interface OndemandLive {
  system: string | readonly JsonObject[];
  tools: readonly unknown[];
}

/** The host's `system` and `tools` when it gave both (`o.native`), else undefined. */
export function ondemandLive(n: { system?: unknown; tools?: unknown } | undefined): OndemandLive | undefined {
  if (n === undefined || n.system === undefined || !Array.isArray(n.tools)) return undefined;
  const s = n.system;
  const system = typeof s === 'string' ? s : Array.isArray(s) && s.every(isObject) ? (s as JsonObject[]) : undefined;
  if (system === undefined) throw invalidArgument('native.system must be a string or an array of text blocks');
  return { system, tools: n.tools };
}

/** The beta of on-demand compaction; the host's later requests that carry the block send it too. */
export const ANTHROPIC_ONDEMAND_BETA = 'compact-2026-09-04';

/**
 * The on-demand request of a `remote` plan for model `m` (spec: compaction §13): `{url,
 * headers, body}`. The API summarizes every message it is sent, so the body carries the
 * plan's older part only — the previous summary (its signed block when this provider wrote
 * it), the summarized region and the turn prefix — and `compaction: {type: "summarize",
 * instructions}`; the kept tail is left out and stays verbatim after the block (platform.claude.com
 * "Compaction that keeps recent turns"). `live`: the host request's `system` and `tools`, sent
 * as they are so the kept turns' thinking stays valid (they must match the request it was written
 * under); without them the request has neither (the documentation's example sends none when
 * the conversation has none) and the core replays the summary as text before such turns.
 */
export function anthropicOndemandRequest(
  plan: NativePlan,
  m: ClaudeTarget,
  live?: OndemandLive,
): LaneRequest | undefined {
  const parts: AnthropicParts = JSON.parse(plan._session().nativeMessagesJson(plan._raw(), m.provider));
  const { messages, recent, compaction: replayed } = parts;
  let head = messages.slice(0, messages.length - recent);
  const prefix: WireMessage[] = [];
  if (replayed !== null) {
    prefix.push({ role: 'assistant', content: [replayedBlock(replayed)] });
    head = head.slice(1);
  }
  const wire: WireMessage[] = [...prefix, ...wireMessages(head)];
  if (wire.length === 0) return undefined;
  const body: Record<string, unknown> = { model: m.id, max_tokens: parts.maxTokens };
  // An empty system prompt is none (the API refuses empty text blocks).
  if (live !== undefined && live.system !== '' && !(Array.isArray(live.system) && live.system.length === 0)) {
    body.system = live.system;
  }
  if (live !== undefined && live.tools.length > 0) body.tools = live.tools;
  body.messages = wire;
  body.compaction = { type: 'summarize', instructions: requireRaw().anthropicInstructions(plan._raw()) };
  const headers = { ...HEADERS, 'anthropic-beta': ANTHROPIC_ONDEMAND_BETA };
  return { url: m.url, headers, body: JSON.stringify(body) };
}
