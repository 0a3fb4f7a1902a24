// The async shell of Anthropic server compaction, the `remote` method's lane for Claude models
// (spec: compaction §13, §8.3). This module decides whether the lane applies to a model, writes
// the Messages API request of a plan — its messages (from the core's `nativeMessagesJson`) as
// Anthropic wire messages and the `compact_20260112` edit with the summarization instructions
// — and POSTs it with the shared transport of native-openai.js (the host's `fetch` and
// credentials, the time-out, the AbortSignal), waiting out a 429 as the core's `retryStep`
// decides. The core reads the answer (untrusted) in the commit; nothing is written before it,
// so every failure leaves the session as it was. The wire messages are the anthropic format's
// (`wireMessages` of formats/anthropic.js, its repairing form).
import { nowOf } from './args.js';
import { abortError, codedError, messageOf, statusOf } from './errors.js';
import { wireMessages } from './formats/anthropic.js';
import { post, sleep, trimSlashes } from './native-openai.js';
import { committed, requireRaw } from './raw.js';

const API = 'anthropic-messages';
const OFFICIAL_BASE_URL = 'https://api.anthropic.com';
const MESSAGES_PATH = '/v1/messages';
const HEADERS = {
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'compact-2026-01-12',
};
/** The API refuses a compaction trigger below this many input tokens. */
const MIN_TRIGGER_TOKENS = 50_000;
/**
 * The smallest context the lane compacts: the trigger sits at the API's floor, and the margin
 * absorbs the difference between the last reported context and the request's input.
 */
const MIN_CONTEXT_TOKENS = 55_000;
/** Time-out of one compaction request (the reference: five minutes). */
const TIMEOUT_MS = 300_000;

const str = (v) => (typeof v === 'string' && v.length > 0 ? v : undefined);
const textBlock = (text) => ({ type: 'text', text });

/** The model the lane reads, from `o.model` (an object) and `o.provider`; undefined for an id alone. */
function claudeModel(o) {
  const m = o?.model;
  if (m === null || typeof m !== 'object') return undefined;
  const enabled = m.remoteCompaction?.enabled;
  return {
    id: typeof m.id === 'string' ? m.id : '',
    provider: str(o.provider ?? m.provider),
    api: str(m.api),
    base: str(m.baseUrl),
    enabled: typeof enabled === 'boolean' ? enabled : undefined,
  };
}

/** Whether the model speaks the Messages API (a model without `api` does when its provider is `anthropic`). */
const speaksMessages = (m) => (m.api === undefined ? m.provider === 'anthropic' : m.api === API);

/**
 * Whether a model line has server compaction (the lines Anthropic documents it for: Opus and
 * Sonnet from 4.6, Mythos and Fable). Ids name the family, then the version: `claude-opus-4-6`,
 * `claude-sonnet-4.6-20260101`, `anthropic/claude-opus-4.7`; a date is no version number.
 */
export function hasServerCompaction(id) {
  const s = String(id).toLowerCase();
  if (s.includes('mythos') || s.includes('fable')) return true;
  const family = ['opus', 'sonnet'].find((f) => s.includes(f));
  if (family === undefined) return false;
  const parts = s.slice(s.indexOf(family) + family.length).split(/[-.@:]/);
  while (parts[0] === '') parts.shift();
  const version = (p) => (/^\d+$/.test(p ?? '') && Number(p) < 100 ? Number(p) : 0);
  const [major, minor] = /^\d+$/.test(parts[0] ?? '') ? [version(parts[0]), version(parts[1])] : [0, 0];
  return major > 4 || (major === 4 && minor >= 6);
}

/**
 * Whether requests reach an endpoint that speaks the compaction beta: the official API for the
 * first-party provider, or any route the host opted in (`remoteCompaction.enabled`).
 */
function endpointSupports(m) {
  if (m.enabled !== undefined) return m.enabled;
  const u = m.base === undefined ? undefined : trimSlashes(m.base).toLowerCase();
  const official = u === undefined || u === OFFICIAL_BASE_URL || u.startsWith(`${OFFICIAL_BASE_URL}/`);
  return m.provider === 'anthropic' && official;
}

function ineligibility(m, tokens) {
  if (m === undefined) return 'no model object';
  if (!speaksMessages(m)) return 'the model does not speak anthropic-messages';
  if (!hasServerCompaction(m.id) || m.enabled === false) return 'the model has no server-side compaction';
  if (!endpointSupports(m)) {
    return 'the endpoint is not the Anthropic API (model.remoteCompaction.enabled opts a route in)';
  }
  if (Number.isFinite(tokens) && tokens < MIN_CONTEXT_TOKENS) {
    return 'the context is below the 55,000 tokens server compaction needs';
  }
  return null;
}

/**
 * Why the lane does not apply to the options' model (`o.model`, `o.provider`) at `tokens`
 * context tokens (undefined: unknown), or null when it does.
 */
export function anthropicIneligibility(o, tokens) {
  return ineligibility(claudeModel(o), tokens);
}

/**
 * The `model` option of `toLlmMessages` as the core reads it: a Messages API model replays
 * the compaction blocks of its provider (`{provider, api: 'anthropic-messages'}`) only on a
 * model line and route with server compaction, and none otherwise (undefined); every other
 * model is passed on as it is.
 */
export function replayTarget(model) {
  const m = claudeModel({ model });
  if (m === undefined || !speaksMessages(m)) return model;
  return ineligibility(m, undefined) === null ? { provider: m.provider, api: API } : undefined;
}

// ----- the request ---------------------------------------------------------------------------

/**
 * The summarization instructions (the edit's `instructions`, which replace the API's own): the
 * scope (the kept tail, `[count, role of its first message]`, stays verbatim after the summary,
 * so it is not summarized), the host's extra context, the summary prompt with the caller's
 * focus, and no tool calls (a summarization that calls a tool yields no summary).
 */
export function instructions(prompt, focus, extraContext, tail) {
  let out;
  if (tail === undefined) {
    out =
      'SCOPE: The conversation above is the transcript to summarize. The API replaces everything ' +
      'before your summary with it, so nothing you leave out survives into the next context window.';
  } else {
    const [n, role] = tail;
    out =
      n === 1
        ? `SCOPE: The conversation's final ${role} message stays in context verbatim after your summary.`
        : `SCOPE: The conversation's final ${n} messages, starting with ${role === 'user' ? 'a' : 'an'} ${role} ` +
          'message, stay in context verbatim after your summary.';
    out +=
      ' Summarize ONLY the history before those messages. You MUST NOT restate anything from those ' +
      'final messages — the reader sees them right after the summary — and you MUST treat them as the ' +
      'most recent state when describing progress and next steps.';
  }
  out += '\n\n';
  if (extraContext.length > 0) {
    out += `<additional-context>\n${extraContext.map((l) => `- ${l}\n`).join('')}</additional-context>\n\n`;
  }
  out += prompt.trimEnd();
  if (str(focus)) out += `\n\nAdditional focus: ${focus}`;
  return `${out}\n\nYou MUST NOT call any tools while writing the summary; respond with the summary text only.`;
}

const endsAssistant = (messages) => messages.at(-1)?.role === 'assistant';

/**
 * The request of a `remote` plan for model `m` (spec: compaction §13): `{url, headers, body}`,
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
  const scope = tail.length === 0 ? undefined : [tail.length + (endsAssistant(tail) ? 1 : 0), tail[0].role];
  const wire = [...prefix, ...wireMessages(head), ...tail];
  if (endsAssistant(wire)) wire.push({ role: 'user', content: [textBlock('Continue.')] });
  const edit = {
    type: 'compact_20260112',
    trigger: { type: 'input_tokens', value: MIN_TRIGGER_TOKENS },
    pause_after_compaction: true,
    instructions: instructions(parts.prompt, parts.customInstructions, parts.extraContext, scope),
  };
  const body = {
    model: m.id,
    max_tokens: parts.maxTokens,
    system: [textBlock(parts.instructions)],
    messages: wire,
    context_management: { edits: [edit] },
  };
  const url = `${trimSlashes(m.base ?? OFFICIAL_BASE_URL)}${MESSAGES_PATH}`;
  return { url, headers: { ...HEADERS }, body: JSON.stringify(body) };
}

/**
 * Runs the lane on `plan` (a `remote` plan) and resolves the commit, or undefined when the lane
 * does not apply to `o.model` at the plan's `tokensBefore`. Rejects with `E_ABORTED` (never
 * retried), `E_SUMMARIZER` (with `status` for an HTTP failure; the response the core could not
 * use), or the commit's own code.
 */
export async function runAnthropic(plan, o, signal) {
  const m = claudeModel(o);
  if (ineligibility(m, plan.preparation.tokensBefore) !== null) return undefined;
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
