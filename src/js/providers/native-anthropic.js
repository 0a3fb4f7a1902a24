// The async shell of Anthropic server compaction, the `remote` method's lane for Claude models
// (spec: compaction §13, §8.3). The core decides whether the lane applies to a model, its route
// and the live context, and where it POSTs (`nativeLanesJson`); this module writes the Messages
// API request of a plan — its messages (from the core's `nativeMessagesJson`) as Anthropic wire
// messages and the `compact_20260112` edit with the core's trigger and summarization
// instructions — and POSTs it with the shared transport of native-openai.js (the host's `fetch`
// and credentials, the time-out, the AbortSignal), waiting out a 429 as the core's `retryStep`
// decides. The core reads the answer (untrusted) in the commit; nothing is written before it,
// so every failure leaves the session as it was. The wire messages are the anthropic format's
// (`wireMessages` of formats/anthropic.js, its repairing form).
import { nowOf } from '../core/args.js';
import { abortError, codedError, messageOf, statusOf } from '../core/errors.js';
import { committed, requireRaw } from '../core/raw.js';
import { wireMessages } from '../formats/anthropic.js';
import { nativeLanes, post, sleep } from './native-openai.js';

const API = 'anthropic-messages';
const HEADERS = {
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'compact-2026-01-12',
};
/** Time-out of one compaction request (the reference: five minutes). */
const TIMEOUT_MS = 300_000;

const str = (v) => (typeof v === 'string' && v.length > 0 ? v : undefined);
const textBlock = (text) => ({ type: 'text', text });

/**
 * The `model` option of `toLlmMessages` as the core reads it: a Messages API model replays
 * the compaction blocks of its provider (`{provider, api: 'anthropic-messages'}`) only on a
 * model line and route with server compaction (the core's rule, `nativeLanesJson`), and none
 * otherwise (undefined); every other model is passed on as it is.
 */
export function replayTarget(model) {
  if (model === null || typeof model !== 'object') return model;
  let lanes;
  try {
    lanes = nativeLanes({ model });
  } catch {
    // A model that is no JSON data replays nothing.
    return undefined;
  }
  if (!lanes.messagesApi) return model;
  return lanes.anthropic === null ? { provider: lanes.claude.provider, api: API } : undefined;
}

// ----- the request ---------------------------------------------------------------------------

const endsAssistant = (messages) => messages.at(-1)?.role === 'assistant';

/**
 * The request of a `remote` plan for model `m` (the core's `claude`: `{id, provider?, url}`;
 * spec: compaction §13): `{url, headers, body}`,
 * headers without credentials, body as JSON text. The body carries the whole conversation the
 * plan covers — the previous summary (as its native block when this provider wrote it), the
 * summarized region, the turn prefix and the kept tail — so the API reads the prefix the live
 * turn cached.
 */
export function anthropicRequest(plan, m) {
  const parts = JSON.parse(plan._session().nativeMessagesJson(plan._raw()));
  const { messages, recent, anthropic: record } = parts;
  const split = messages.length - recent;
  let head = messages.slice(0, split);
  const prefix = [];
  if (parts.summary && str(m.provider) && record?.provider === m.provider && str(record.content)) {
    // The previous summary as the block the API signed.
    const block = { type: 'compaction', content: record.content };
    if (str(record.encryptedContent)) block.encrypted_content = record.encryptedContent;
    prefix.push({ role: 'assistant', content: [block] });
    head = head.slice(1);
  }
  const tail = wireMessages(messages.slice(split));
  // The kept tail (and the `Continue.` after an assistant one) stays verbatim: the core words
  // the instructions around it.
  const scope =
    tail.length === 0 ? [undefined, undefined] : [tail.length + (endsAssistant(tail) ? 1 : 0), tail[0].role];
  const wire = [...prefix, ...wireMessages(head), ...tail];
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

/**
 * Runs the lane on `plan` (a `remote` plan) and resolves the commit, or undefined when the lane
 * does not apply to `o.model` at the plan's `tokensBefore`. Rejects with `E_ABORTED` (never
 * retried), `E_SUMMARIZER` (with `status` for an HTTP failure; the response the core could not
 * use), or the commit's own code.
 */
export async function runAnthropic(plan, o, signal) {
  const lanes = nativeLanes(o, plan.preparation.tokensBefore);
  if (lanes.anthropic !== null) return undefined;
  const m = lanes.claude;
  const request = anthropicRequest(plan, m);
  const ctx = {
    o,
    model: { provider: m.provider ?? '', api: API },
    signal,
    timeoutMs: o.native?.timeoutMs ?? TIMEOUT_MS,
  };
  const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) throw abortError();
    let text;
    try {
      text = await post(request, 'anthropic', ctx);
    } catch (err) {
      if (signal.aborted || err?.code === 'E_ABORTED') throw abortError();
      const status = statusOf(err) ?? -1;
      const ra = Number.isFinite(err?.retryAfterMs) ? err.retryAfterMs : -1;
      const step = JSON.parse(requireRaw().retryStep(attempt, messageOf(err), status, ra, false, retryJson));
      if (step.action === 'wait') {
        await sleep(step.ms, signal);
        continue;
      }
      throw codedError('E_SUMMARIZER', messageOf(err), { cause: err, status: status >= 0 ? status : undefined });
    }
    const raw = plan._session();
    return committed(
      raw.commitNative(plan._raw(), 'anthropic', m.provider ?? '', m.id, text, undefined, nowOf(o)),
      raw,
    );
  }
}
